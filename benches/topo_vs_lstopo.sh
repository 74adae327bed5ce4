#!/bin/sh
# `smtlab topo --json` against `lstopo-no-graphics --of xml` on one topology dump, as whole
# processes (hyperfine, median of many runs). Issue 2's goal: ours takes at most half.
#   benches/topo_vs_lstopo.sh [DUMP.tar.bz2]   (default: the largest, 256ia64-64n2s2c)
# Needs: hyperfine, hwloc (lstopo-no-graphics), a release build (cargo build --release).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dump=${1:-$here/../shared/fixtures/topology/hwloc/256ia64-64n2s2c.tar.bz2}
# Unpack into RAM when possible so both tools read the same page-cached tmpfs tree.
base=/dev/shm; [ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/smtlab-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -xf "$dump" -C "$tmp"
root=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -d "$root/fsroot" ] && root=$root/fsroot
hyperfine -N --warmup 10 --runs 80 --export-json "$tmp/hf.json" \
  "$here/target/release/smtlab topo --json --sysfs-root $root" \
  "env HWLOC_FSROOT=$root HWLOC_COMPONENTS=linux,stop lstopo-no-graphics --of xml"
python3 - "$tmp/hf.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
for x in r:
    print(f"median {x['median'] * 1000:6.1f} ms  {x['command'].split()[0]}")
print(f"ratio of medians (smtlab / lstopo): {r[0]['median'] / r[1]['median']:.2f}  (goal <= 0.50)")
PY
