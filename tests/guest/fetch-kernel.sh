#!/usr/bin/env bash
# Unpacks Debian's kernel (the package linux-image-amd64 depends on) into
# target/smt-guest/kernel/, for the SMT guest tests (tests/smt_guests.rs). Nothing is
# installed and nothing downloaded is committed: target/ is git-ignored.
# The kernel has CONFIG_HOTPLUG_SMT and CONFIG_SCHED_SMT, so a QEMU guest shows real SMT
# siblings and a working /sys/devices/system/cpu/smt/control.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=target/smt-guest/kernel
if compgen -G "$dest/boot/vmlinuz-*" >/dev/null; then
  exit 0
fi
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
  echo "fetch-kernel: apt-cache knows no linux-image-amd64; run apt-get update first" >&2
  exit 1
fi
mkdir -p "$dest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt-get download writes into the current directory; _apt may not read it, hence the chmod.
chmod 0777 "$work"
(cd "$work" && apt-get download -qq "$pkg")
dpkg-deb --fsys-tarfile "$work"/"$pkg"_*.deb | tar -x -C "$dest" --wildcards './boot/vmlinuz-*'
ls "$dest"/boot/vmlinuz-*
