//! Conformance: every real-machine topology dump against hwloc's reading of it.
//!
//! For each `NAME.tar.bz2|NAME.tar.gz` under `$SMTLAB_TOPOLOGY_DUMPS` (default
//! `../shared/fixtures/topology`, subfolders `hwloc/` and `util-linux/`), the dump is
//! unpacked with the `tar` CLI, read with [`smtlab::topology::discover`] and compared with
//! `NAME.oracle.json` (hwloc 2.9's `lstopo` on the same dump, see `oracle.py` there).
//!
//! How the two are compared (the divergences hwloc's and lscpu's docs explain):
//! - Partitions of OS CPU numbers per level (`cores`, `l2_caches`, `l3_caches`, `packages`,
//!   `numa_nodes`, `dies`, `cpu_kinds`), never labels.
//! - hwloc's `online_cpus` is its top cpuset, online ∩ allowed, and hwloc drops disallowed
//!   PUs from every object, so our partitions are restricted to that set first.
//! - One oracle kind holding every CPU means "all alike", which we report as no kinds.
//! - hwloc also drops NUMA nodes outside the cgroup's `cpuset.mems`; our `numa_nodes` is
//!   CPU locality and keeps them, so nodes outside `process.cgroup_mems` are left out of
//!   the comparison (16amd64-8n2c-cpusets, 4fake-4gr1nu1pu).
//! - Where hwloc's reading differs and ours follows sysfs, the case is a named entry of
//!   [`EXCEPTIONS`] saying why, with its own check of what we report instead.
//!
//! No dumps: the test prints why it skipped and passes, unless `SMTLAB_REQUIRE_DUMPS=1`.

use serde_json::Value;
use smtlab::cpuset::CpuSet;
use smtlab::topology::{Partitions, Topology, discover};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The partition levels compared, by their key in the oracle and in `topo --json`.
const LEVELS: [&str; 7] = [
    "cores",
    "l2_caches",
    "l3_caches",
    "packages",
    "numa_nodes",
    "dies",
    "cpu_kinds",
];

/// A dump where hwloc's reading of one field differs from ours, and ours is what sysfs says.
struct Exception {
    dump: &'static str,
    field: &'static str,
    why: &'static str,
    /// What we report instead; `Err` says how it is wrong.
    check: fn(&Case) -> Result<(), String>,
}

const EXCEPTIONS: &[Exception] = &[
    Exception {
        dump: "vmware_fpe",
        field: "cores",
        why: "AMD family 21 (Opteron 6328) CMT modules: the kernel lists both integer cores of \
              a module as thread_siblings. hwloc 2.9 splits them into one Core per PU when the \
              dump names its architecture (the is_amd_with_CU quirk: it does so on \
              64amd64-4s2n4ca2co and 64amd64-4p2n4ca2co, which we match) but keeps them \
              paired here; we count every CPU of a family 15h module as a core everywhere \
              and name the pairs as CMT modules",
        check: cmt_modules,
    },
    Exception {
        dump: "4fake-4gr1nu1pu",
        field: "cores",
        why: "the fake dump has no thread_siblings/core_cpus at all, so hwloc creates no Core \
              objects (0 cores); every logical CPU runs on some core, and with no sibling \
              information each is its own core (no SMT visible)",
        check: |c| {
            if c.ours.cores.iter().all(|s| s.len() == 1) && !c.ours.cores.is_empty() {
                Ok(())
            } else {
                Err(format!("expected one core per CPU, got {:?}", c.ours.cores))
            }
        },
    },
    Exception {
        dump: "2arm-2c",
        field: "cpu_kinds",
        why: "only cpu0 has cpufreq/ (cpuinfo_max_freq 800 MHz), cpu1 has none; hwloc makes a \
              kind of cpu0 alone from the maximum frequency. A frequency known for one CPU \
              says nothing about kinds, and max frequency is never a kind source for us \
              (an i7-1370P reports 5000 and 5200 MHz P-cores)",
        check: |c| {
            if c.ours.cpu_kinds.is_empty() {
                Ok(())
            } else {
                Err(format!("expected no kinds, got {:?}", c.ours.cpu_kinds))
            }
        },
    },
    Exception {
        dump: "fakeheterocpunuma",
        field: "numa_nodes",
        why: "memory-only NUMA nodes (empty cpumap): hwloc attaches them to the CPUs of their \
              HMAT initiators or nearest node by distance; the kernel lists no CPUs for them, \
              and our numa_nodes partition is the CPUs each node holds",
        check: memory_only_nodes,
    },
    Exception {
        dump: "fakeheteromemtiers",
        field: "numa_nodes",
        why: "memory-only NUMA nodes (memory tiers), as fakeheterocpunuma",
        check: memory_only_nodes,
    },
    Exception {
        dump: "fakememinitiators-1np2c+1npp+gi",
        field: "numa_nodes",
        why: "memory-only NUMA nodes with generic initiators, as fakeheterocpunuma",
        check: memory_only_nodes,
    },
    Exception {
        dump: "nvidiagpunumanodes",
        field: "online_cpus",
        why: "cgroup v1: cpuset.cpus says 0-175 but cpuset.effective_cpus says 0-87. hwloc \
              reads the requested cpuset.cpus; we read effective_cpus, what the kernel \
              enforces (as cgroup v2's cpuset.cpus.effective), so CPUs 88-103 are online \
              but not usable by the process",
        check: |c| {
            let want = CpuSet::parse_list("0-15").unwrap();
            let src = c.topo.process.cgroup_source.clone().unwrap_or_default();
            if c.ours.allowed_cpus == want
                && src.ends_with("cpuset.effective_cpus")
                && c.ours.online_cpus == set(&c.oracle["online_cpus"])
            {
                Ok(())
            } else {
                Err(format!(
                    "expected online = oracle's, allowed 0-15 from effective_cpus; got online \
                     {}, allowed {} from {src}",
                    c.ours.online_cpus, c.ours.allowed_cpus
                ))
            }
        },
    },
    Exception {
        dump: "nvidiagpunumanodes",
        field: "allowed_cpus",
        why: "cgroup v1 effective_cpus vs cpuset.cpus, see online_cpus",
        check: |_| Ok(()),
    },
    Exception {
        dump: "nvidiagpunumanodes",
        field: "numa_nodes",
        why: "cgroup v1 again: cpuset.mems says 0,8,250-255, cpuset.effective_mems says 0. \
              hwloc keeps node 8 (CPUs 88-103) from the requested mems; we take the \
              effective mems, so node 8 is outside what the process may allocate on",
        check: |c| {
            let all = sorted(
                c.ours
                    .numa_nodes
                    .iter()
                    .map(|s| s.intersection(&c.top))
                    .collect(),
            );
            let mems = c.topo.process.cgroup_mems.clone().unwrap_or_default();
            if all == sorted(sets(&c.oracle["numa_nodes"])) && mems == one(0) {
                Ok(())
            } else {
                Err(format!("nodes {all:?}, cgroup mems {mems}"))
            }
        },
    },
];

/// Bulldozer modules: each of hwloc's cores is one of our CMT modules, two CPUs with
/// distinct `core_id`s on an AMD family 21 CPU, and each of its CPUs is one of our cores.
fn cmt_modules(c: &Case) -> Result<(), String> {
    let m = &c.topo.machine;
    if m.vendor.as_deref() != Some("AuthenticAMD") || m.family != Some(21) {
        return Err(format!("not AMD family 21: {:?} {:?}", m.vendor, m.family));
    }
    let theirs: Vec<CpuSet> = sorted(sets(&c.oracle["cores"]));
    let modules = sorted(c.topo.cmt_modules());
    if modules != theirs {
        return Err(format!("CMT modules {modules:?}, hwloc's cores {theirs:?}"));
    }
    for module in &modules {
        let ids: Vec<Option<u32>> = module
            .iter()
            .map(|x| c.topo.cpu(x).and_then(|x| x.core_id))
            .collect();
        let distinct = ids.iter().collect::<std::collections::BTreeSet<_>>().len();
        if module.len() != 2 || distinct != 2 {
            return Err(format!(
                "module {module} is not two cores (core ids {ids:?})"
            ));
        }
    }
    if c.ours.cores.iter().any(|core| core.len() != 1) {
        return Err(format!("cores {:?} are not single CPUs", c.ours.cores));
    }
    let line = smtlab::topology::view::smt_summary(&c.topo).sentence;
    if !line.contains("CMT modules") || !line.starts_with("no SMT") {
        return Err(format!("the SMT line does not name CMT modules: {line}"));
    }
    Ok(())
}

/// Each of our nodes is one of hwloc's; hwloc's other sets are the localities it gave
/// memory-only nodes, so there are at most as many as we see memory-only nodes, and each
/// is a union of our nodes (its initiators).
fn memory_only_nodes(c: &Case) -> Result<(), String> {
    let mut extra: Vec<CpuSet> = sets(&c.oracle["numa_nodes"])
        .into_iter()
        .map(|s| s.intersection(&c.top))
        .collect();
    for ours in &c.ours.numa_nodes {
        let Some(i) = extra.iter().position(|s| s == ours) else {
            return Err(format!("our node {ours} is not among hwloc's"));
        };
        extra.remove(i);
    }
    let cpuless = c
        .topo
        .numa_nodes
        .iter()
        .filter(|n| n.cpus.is_empty())
        .count();
    if extra.len() > cpuless {
        return Err(format!(
            "hwloc has {} more nodes ({extra:?}) but we see only {cpuless} memory-only nodes",
            extra.len()
        ));
    }
    for e in &extra {
        let covered = c
            .ours
            .numa_nodes
            .iter()
            .filter(|n| n.is_subset(e))
            .fold(CpuSet::new(), |a, n| a.union(n));
        if covered != *e {
            return Err(format!("hwloc's node {e} is not a union of CPU nodes"));
        }
    }
    Ok(())
}

/// One dump being compared.
struct Case {
    name: String,
    topo: Topology,
    ours: Partitions,
    oracle: Value,
    /// hwloc's top cpuset (online ∩ allowed).
    top: CpuSet,
}

fn one(c: u32) -> CpuSet {
    CpuSet::from_cpus([c])
}

fn set(v: &Value) -> CpuSet {
    v.as_array()
        .expect("a list of CPUs")
        .iter()
        .map(|x| x.as_u64().expect("a CPU number") as u32)
        .collect()
}

fn sets(v: &Value) -> Vec<CpuSet> {
    v.as_array()
        .expect("a list of CPU lists")
        .iter()
        .map(set)
        .collect()
}

fn sorted(mut v: Vec<CpuSet>) -> Vec<CpuSet> {
    v.retain(|s| !s.is_empty());
    v.sort_by(|a, b| a.iter().cmp(b.iter()));
    v
}

fn dumps_dir() -> PathBuf {
    match std::env::var_os("SMTLAB_TOPOLOGY_DUMPS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/topology"),
    }
}

/// `(name, tarball, oracle)` for every dump under `dir` and its subfolders.
fn find_dumps(dir: &Path) -> Vec<(String, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            let fname = e.file_name().to_string_lossy().into_owned();
            let Some(name) = fname
                .strip_suffix(".tar.bz2")
                .or_else(|| fname.strip_suffix(".tar.gz"))
            else {
                continue;
            };
            out.push((
                name.to_string(),
                p.clone(),
                d.join(format!("{name}.oracle.json")),
            ));
        }
    }
    out.sort();
    out
}

/// A temporary directory, in RAM when possible: the 53 dumps hold ~100k small files, which
/// take minutes to create and delete on a loaded disk and seconds on tmpfs.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(t) = tempfile::Builder::new()
            .prefix("smtlab-dump")
            .tempdir_in(shm)
    {
        return t;
    }
    tempfile::tempdir().unwrap()
}

/// Unpacks with the `tar` CLI; the root is the single top folder, or its `fsroot/`.
fn unpack(tarball: &Path, into: &Path) -> PathBuf {
    let st = Command::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(into)
        .status()
        .expect("the `tar` command runs");
    assert!(st.success(), "tar failed on {}", tarball.display());
    let tops: Vec<PathBuf> = std::fs::read_dir(into)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    let root = if tops.len() == 1 && tops[0].is_dir() {
        tops[0].clone()
    } else {
        into.to_path_buf()
    };
    if root.join("fsroot").is_dir() {
        root.join("fsroot")
    } else {
        root
    }
}

/// Compares one dump; returns the mismatches (field, message) and the exceptions used.
fn run_case(case: &Case) -> (Vec<String>, Vec<&'static Exception>) {
    let mut bad = Vec::new();
    let mut used = Vec::new();
    let exception = |field: &str| {
        EXCEPTIONS
            .iter()
            .find(|e| e.dump == case.name && e.field == field)
    };
    let mut check = |field: &'static str, equal: bool, detail: String| {
        if let Some(e) = exception(field) {
            used.push(e);
            if let Err(msg) = (e.check)(case) {
                bad.push(format!("{field} (exception: {}): {msg}", e.why));
            }
        } else if !equal {
            bad.push(format!("{field}: {detail}"));
        }
    };

    let ours_top = case.ours.online_cpus.intersection(&case.ours.allowed_cpus);
    check(
        "online_cpus",
        ours_top == case.top,
        format!("ours online∩allowed {ours_top}, hwloc {}", case.top),
    );
    let their_allowed = set(&case.oracle["allowed_cpus"]);
    check(
        "allowed_cpus",
        case.ours.allowed_cpus == their_allowed,
        format!("ours {}, hwloc {their_allowed}", case.ours.allowed_cpus),
    );
    let mems = case.topo.process.cgroup_mems.clone();
    for level in LEVELS {
        let ours_raw: &Vec<CpuSet> = match level {
            "cores" => &case.ours.cores,
            "l2_caches" => &case.ours.l2_caches,
            "l3_caches" => &case.ours.l3_caches,
            "packages" => &case.ours.packages,
            "numa_nodes" => &case.ours.numa_nodes,
            "dies" => &case.ours.dies,
            "cpu_kinds" => &case.ours.cpu_kinds,
            _ => unreachable!(),
        };
        let mut ours_sets = ours_raw.clone();
        if level == "numa_nodes"
            && let Some(m) = &mems
        {
            ours_sets = case
                .topo
                .numa_nodes
                .iter()
                .filter(|n| m.contains(n.node))
                .map(|n| n.cpus.clone())
                .collect();
        }
        let ours = sorted(
            ours_sets
                .iter()
                .map(|s| s.intersection(&case.top))
                .collect(),
        );
        let mut theirs = sorted(sets(&case.oracle[level]));
        if level == "cpu_kinds" && theirs.len() == 1 && case.top.is_subset(&theirs[0]) {
            theirs.clear();
        }
        check(
            level,
            ours == theirs,
            format!("ours {ours:?}\n      hwloc {theirs:?}"),
        );
    }
    (bad, used)
}

#[test]
fn every_dump_matches_its_oracle() {
    let dir = dumps_dir();
    let dumps = find_dumps(&dir);
    if dumps.is_empty() {
        crate::common::skip(crate::common::Need::Dumps, &crate::common::no_dumps(&dir));
        return;
    }
    let mut failures = BTreeMap::new();
    let mut used_exceptions = Vec::new();
    for (name, tarball, oracle_path) in &dumps {
        let tmp = scratch();
        let root = unpack(tarball, tmp.path());
        let oracle: Value = match std::fs::read_to_string(oracle_path) {
            Ok(t) => serde_json::from_str(&t).expect("oracle JSON parses"),
            Err(e) => {
                failures.insert(name.clone(), vec![format!("no oracle: {e}")]);
                continue;
            }
        };
        let topo = match discover(&root) {
            Ok(t) => t,
            Err(e) => {
                failures.insert(name.clone(), vec![format!("discover failed: {e}")]);
                continue;
            }
        };
        let case = Case {
            name: name.clone(),
            ours: topo.partitions(),
            top: set(&oracle["online_cpus"]),
            topo,
            oracle,
        };
        let (bad, used) = run_case(&case);
        used_exceptions.extend(used.iter().map(|e| (e.dump, e.field)));
        if !bad.is_empty() {
            failures.insert(name.clone(), bad);
        }
    }
    // Every exception must still be needed and named after a real dump.
    for e in EXCEPTIONS {
        if !used_exceptions.contains(&(e.dump, e.field)) {
            failures
                .entry(e.dump.to_string())
                .or_insert_with(Vec::new)
                .push(format!("exception for `{}` was not used", e.field));
        }
    }
    eprintln!(
        "{} dumps compared, {} exceptions applied",
        dumps.len(),
        used_exceptions.len()
    );
    if !failures.is_empty() {
        let mut msg = format!("{} of {} dumps disagree:\n", failures.len(), dumps.len());
        for (name, bad) in &failures {
            msg.push_str(&format!("== {name}\n"));
            for b in bad {
                msg.push_str(&format!("   {b}\n"));
            }
        }
        panic!("{msg}");
    }
}

/// The binary's `topo --json` has the oracle's keys in the oracle's shape (lists of OS CPU
/// numbers, or lists of such lists) and the same partitions as the library.
#[test]
fn topo_json_has_the_oracle_shape() {
    let dir = dumps_dir();
    let dumps = find_dumps(&dir);
    let picks = [
        "16em64t-4s2c2t",
        "20em64t-hybrid-1p6c2t+2ca4co1t",
        "x86_64-64cpu",
        "32amd64-4s2n4c-cgroup2",
    ];
    let chosen: Vec<_> = dumps
        .iter()
        .filter(|(n, _, _)| picks.contains(&n.as_str()))
        .collect();
    if chosen.is_empty() {
        crate::common::skip(crate::common::Need::Dumps, &crate::common::no_dumps(&dir));
        return;
    }
    for (name, tarball, oracle_path) in chosen {
        let tmp = scratch();
        let root = unpack(tarball, tmp.path());
        let out = assert_cmd::Command::cargo_bin("smtlab")
            .unwrap()
            .args(["topo", "--json", "--sysfs-root"])
            .arg(&root)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let ours: Value = serde_json::from_slice(&out).expect("topo --json is JSON");
        assert!(ours["schema_version"].is_u64(), "{name}: schema_version");
        let oracle: Value =
            serde_json::from_str(&std::fs::read_to_string(oracle_path).unwrap()).unwrap();
        let lib = discover(&root).unwrap().partitions();
        for (key, v) in oracle.as_object().unwrap() {
            if matches!(key.as_str(), "oracle" | "complete_cpus" | "pus") {
                continue; // hwloc's own bookkeeping, not partitions
            }
            let got = &ours[key];
            let is_list = |x: &Value| x.as_array().is_some_and(|a| a.iter().all(|n| n.is_u64()));
            if is_list(v) {
                assert!(
                    is_list(got),
                    "{name}: `{key}` should be a CPU list, is {got}"
                );
            } else {
                assert!(
                    got.as_array().is_some_and(|a| a.iter().all(is_list)),
                    "{name}: `{key}` should be a list of CPU lists, is {got}"
                );
            }
        }
        assert_eq!(sets(&ours["cores"]), lib.cores, "{name}: cores");
        assert_eq!(sets(&ours["numa_nodes"]), lib.numa_nodes, "{name}: numa");
        assert_eq!(set(&ours["allowed_cpus"]), lib.allowed_cpus, "{name}");
    }
}
