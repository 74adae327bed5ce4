//! Synthetic sysfs trees, written by the tests, for the cases no public dump
//! has: interleaved 0/8 siblings on 2 packages, Intel hybrid PMU sets, SMT switched
//! off, mask-only old kernels, and a cgroup v2 restriction. Each checks discovery, the `topo`
//! text and the planner.

use smtlab::cpuset::CpuSet;
use smtlab::placement::{PlanError, Request, plan, spread_cores};
use smtlab::topology::{Restriction, Topology, discover, view};
use std::path::Path;

/// A sysfs/procfs root in a temporary directory.
struct Tree(tempfile::TempDir);

impl Tree {
    fn new() -> Self {
        Tree(tempfile::tempdir().unwrap())
    }

    fn write(&self, rel: &str, content: &str) -> &Self {
        let p = self.0.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{content}\n")).unwrap();
        self
    }

    fn mkdir(&self, rel: &str) -> &Self {
        std::fs::create_dir_all(self.0.path().join(rel)).unwrap();
        self
    }

    fn root(&self) -> &Path {
        self.0.path()
    }

    fn topo(&self) -> Topology {
        discover(self.root()).expect("synthetic tree reads")
    }

    /// One CPU's topology files, in the modern list form.
    fn cpu(&self, cpu: u32, pkg: u32, core_id: u32, siblings: &str, package: &str) -> &Self {
        let t = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        self.write(&format!("{t}/physical_package_id"), &pkg.to_string())
            .write(&format!("{t}/core_id"), &core_id.to_string())
            .write(&format!("{t}/core_cpus_list"), siblings)
            .write(&format!("{t}/thread_siblings_list"), siblings)
            .write(&format!("{t}/package_cpus_list"), package)
            .write(&format!("{t}/core_siblings_list"), package)
    }

    /// One cache of `cpu`.
    fn cache(&self, cpu: u32, index: u32, level: u32, ty: &str, size: &str, shared: &str) -> &Self {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/cache/index{index}");
        self.write(&format!("{d}/level"), &level.to_string())
            .write(&format!("{d}/type"), ty)
            .write(&format!("{d}/size"), size)
            .write(&format!("{d}/coherency_line_size"), "64")
            .write(&format!("{d}/shared_cpu_list"), shared)
    }
}

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn sets(v: &[&str]) -> Vec<CpuSet> {
    v.iter().map(|s| set(s)).collect()
}

/// The CPUs of each thread of a plan, as lists.
fn placed(topo: &Topology, req: &str, threads: usize) -> Result<Vec<String>, PlanError> {
    let p = plan(topo, &Request::parse(req).unwrap(), threads)?;
    Ok(p.threads.iter().map(|t| t.cpus.to_string()).collect())
}

fn placed_within(
    topo: &Topology,
    req: &str,
    threads: usize,
    scope: &str,
) -> Result<Vec<String>, PlanError> {
    let p = smtlab::placement::plan_within(
        topo,
        &Request::parse(req).unwrap(),
        threads,
        scope.parse().unwrap(),
    )?;
    Ok(p.threads.iter().map(|t| t.cpus.to_string()).collect())
}

/// 2 packages × 4 cores × 2 threads; CPU i and i+8 are siblings (the server numbering).
fn two_socket() -> Tree {
    let t = Tree::new();
    t.write("sys/devices/system/cpu/online", "0-15")
        .write("sys/devices/system/cpu/possible", "0-15")
        .write("sys/devices/system/cpu/present", "0-15")
        .write("sys/devices/system/cpu/smt/control", "on")
        .write("sys/devices/system/cpu/smt/active", "1")
        .write(
            "proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Test Xeon\nflags\t\t: fpu sse2 ht\n",
        )
        .write("sys/devices/system/node/node0/cpulist", "0-3,8-11")
        .write("sys/devices/system/node/node1/cpulist", "4-7,12-15");
    for cpu in 0..16u32 {
        let core = cpu % 8;
        let pkg = core / 4;
        let sib = format!("{core},{}", core + 8);
        let pkg_set = if pkg == 0 { "0-3,8-11" } else { "4-7,12-15" };
        // core_id per package with a gap (0,1,2,4), as on real parts.
        let core_id = [0, 1, 2, 4][(core % 4) as usize];
        t.cpu(cpu, pkg, core_id, &sib, pkg_set)
            .cache(cpu, 0, 1, "Data", "48K", &sib)
            .cache(cpu, 1, 1, "Instruction", "32K", &sib)
            .cache(cpu, 2, 2, "Unified", "2048K", &sib)
            .cache(cpu, 3, 3, "Unified", "30M", pkg_set);
    }
    t
}

#[test]
fn two_sockets_interleaved_siblings() {
    let t = two_socket();
    let topo = t.topo();
    assert_eq!(
        topo.cores(),
        sets(&["0,8", "1,9", "2,10", "3,11", "4,12", "5,13", "6,14", "7,15"])
    );
    assert_eq!(topo.online(), set("0-15"));
    assert_eq!(topo.allowed(), set("0-15"));
    assert_eq!(topo.packages(), sets(&["0-3,8-11", "4-7,12-15"]));
    assert_eq!(topo.llc_groups(), sets(&["0-3,8-11", "4-7,12-15"]));
    assert!(topo.kinds.is_empty());
    let p = topo.partitions();
    assert_eq!(p.numa_nodes, sets(&["0-3,8-11", "4-7,12-15"]));
    assert!(p.dies.is_empty());
    let smt = view::smt_summary(&topo);
    assert_eq!(smt.sentence, "SMT: 2 threads per core, control=on");
    let text = view::tree(&topo);
    assert!(
        text.contains("16 CPUs online, 8 cores, 2 packages"),
        "{text}"
    );
    assert!(
        text.contains("core    4: CPUs 3,11"),
        "core_id gap kept as label:\n{text}"
    );
    assert!(!text.contains("virtual machine"), "{text}");

    use smtlab::topology::Proximity::*;
    assert_eq!(topo.proximity(0, 8), SmtSibling);
    assert_eq!(topo.proximity(0, 9), SameL3);
    assert_eq!(topo.proximity(0, 4), OtherPackage);
    assert_eq!(topo.proximity(3, 3), SameCpu);

    // Spread order: package 0's first core, package 1's first core, then the next ones.
    let order: Vec<String> = spread_cores(&topo).iter().map(|c| c.to_string()).collect();
    assert_eq!(
        order,
        ["0,8", "4,12", "1,9", "5,13", "2,10", "6,14", "3,11", "7,15"]
    );
    // The comparison layouts stay in one package by default (mixing sockets into an SMT comparison
    // measures the socket too) ...
    assert_eq!(placed(&topo, "pairs", 4).unwrap(), ["0", "8", "1", "9"]);
    assert_eq!(
        placed(&topo, "pairs", 6).unwrap(),
        ["0", "8", "1", "9", "2", "10"]
    );
    assert_eq!(placed(&topo, "one-per-core", 3).unwrap(), ["0", "1", "2"]);
    assert_eq!(
        placed(&topo, "all", 2).unwrap(),
        ["0", "8", "1", "9"],
        "all = every sibling of the cores one-per-core uses"
    );
    let spread = placed(&topo, "spread", 10).unwrap();
    assert_eq!(
        spread,
        ["0", "1", "2", "3", "8", "9", "10", "11", "0", "1"],
        "spread wraps inside package 0"
    );
    let e = placed(&topo, "one-per-core", 5).unwrap_err();
    assert!(matches!(e, PlanError::NotEnough { have: 4, .. }), "{e}");
    assert!(
        e.to_string().contains("package 0") && e.to_string().contains("--within machine"),
        "{e}"
    );
    // ... and spread over packages first with --within machine.
    assert_eq!(
        placed_within(&topo, "pairs", 4, "machine").unwrap(),
        ["0", "8", "4", "12"]
    );
    assert_eq!(
        placed_within(&topo, "one-per-core", 3, "machine").unwrap(),
        ["0", "4", "1"]
    );
    let all = placed_within(&topo, "spread", 16, "machine").unwrap();
    assert_eq!(&all[..4], ["0", "4", "1", "5"]);
    assert_eq!(&all[8..10], ["8", "12"]);
    assert_eq!(
        placed_within(&topo, "one-per-core", 2, "node").unwrap(),
        ["0", "1"]
    );
    assert_eq!(placed(&topo, "same-core", 2).unwrap(), ["0", "8"]);
    // siblings-of: the other threads of the listed CPUs' cores, never the listed CPUs.
    assert_eq!(placed(&topo, "siblings-of:3", 1).unwrap(), ["11"]);
    assert_eq!(placed(&topo, "siblings-of:3,12", 2).unwrap(), ["11", "4"]);
    assert_eq!(placed(&topo, "siblings-of:0,1", 2).unwrap(), ["8", "9"]);
    let e = placed(&topo, "siblings-of:0,8", 1).unwrap_err();
    assert!(matches!(e, PlanError::NoFreeSibling { .. }), "{e}");
    assert!(e.to_string().contains("0,8"), "{e}");
    assert_eq!(placed(&topo, "other-package", 2).unwrap(), ["0", "4"]);
    assert_eq!(placed(&topo, "other-l3", 2).unwrap(), ["0", "4"]);
    assert_eq!(placed(&topo, "same-l3", 3).unwrap(), ["0", "1", "2"]);
    assert!(matches!(
        placed(&topo, "other-package", 3),
        Err(PlanError::NotEnough { have: 2, .. })
    ));
    assert!(matches!(
        placed(&topo, "same-core", 3),
        Err(PlanError::NotEnough { .. })
    ));
    let e = placed(&topo, "cpus:99", 1).unwrap_err();
    assert!(
        e.to_string().contains("99") && e.to_string().contains("0-15 only"),
        "{e}"
    );
}

/// 6 P-cores with HT (CPUs 0-11, siblings 2k,2k+1) + 8 E-cores (12-19), as Alder/Raptor Lake.
fn hybrid(with_pmu: bool) -> Tree {
    let t = Tree::new();
    t.write("sys/devices/system/cpu/online", "0-19")
        .write("sys/devices/system/cpu/smt/control", "on")
        .write("sys/devices/system/cpu/smt/active", "1");
    if with_pmu {
        t.write("sys/devices/cpu_core/cpus", "0-11")
            .write("sys/devices/cpu_atom/cpus", "12-19");
    }
    for cpu in 0..20u32 {
        let base = "sys/devices/system/cpu";
        if cpu < 12 {
            let c = cpu / 2;
            t.cpu(cpu, 0, c * 4, &format!("{},{}", 2 * c, 2 * c + 1), "0-19")
                .cache(
                    cpu,
                    2,
                    2,
                    "Unified",
                    "1280K",
                    &format!("{},{}", 2 * c, 2 * c + 1),
                );
            // Turbo Boost Max 3.0: two favoured cores report a higher maximum.
            let max = if c < 2 { "5200000" } else { "5000000" };
            t.write(&format!("{base}/cpu{cpu}/cpufreq/cpuinfo_max_freq"), max)
                .write(
                    &format!("{base}/cpu{cpu}/cpufreq/base_frequency"),
                    "1900000",
                );
        } else {
            let quad = if cpu < 16 { "12-15" } else { "16-19" };
            t.cpu(cpu, 0, 24 + (cpu - 12), &cpu.to_string(), "0-19")
                .cache(cpu, 2, 2, "Unified", "2048K", quad)
                .write(
                    &format!("{base}/cpu{cpu}/cpufreq/cpuinfo_max_freq"),
                    "3900000",
                )
                .write(
                    &format!("{base}/cpu{cpu}/cpufreq/base_frequency"),
                    "1400000",
                );
        }
        t.cache(cpu, 3, 3, "Unified", "24M", "0-19");
    }
    t
}

#[test]
fn hybrid_p_and_e_cores() {
    let topo = hybrid(true).topo();
    assert_eq!(topo.cores().len(), 14);
    let kinds: Vec<(String, String)> = topo
        .kinds
        .iter()
        .map(|k| (k.name.clone(), k.cpus.to_string()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("E-core".to_string(), "12-19".to_string()),
            ("P-core".to_string(), "0-11".to_string())
        ]
    );
    assert_eq!(topo.partitions().cpu_kinds, sets(&["0-11", "12-19"]));
    assert_eq!(topo.partitions().l2_caches.len(), 6 + 2);
    let smt = view::smt_summary(&topo);
    assert_eq!(
        smt.sentence,
        "SMT: up to 2 threads per core (6 of 14 cores have siblings), control=on"
    );
    let text = view::tree(&topo);
    assert!(text.contains("CPUs 0,1  [P-core]"), "{text}");
    assert!(text.contains("CPU  12  [E-core]"), "{text}");
    // Pairs only on cores with two siblings: the P-cores.
    assert_eq!(
        placed(&topo, "pairs", 4).unwrap(),
        ["0", "1", "2", "3"],
        "pairs never land on single-thread E-cores"
    );
    assert!(matches!(
        placed(&topo, "pairs", 14),
        Err(PlanError::NotEnough { have: 6, .. })
    ));
    // The comparison layouts stay on one core kind: the P-cores, whatever the request.
    assert_eq!(
        placed(&topo, "one-per-core", 6).unwrap(),
        ["0", "2", "4", "6", "8", "10"]
    );
    let e = placed(&topo, "one-per-core", 8).unwrap_err().to_string();
    assert!(
        e.contains("P-core") && e.contains("--within machine"),
        "{e}"
    );
    let mixed = placed_within(&topo, "one-per-core", 8, "machine").unwrap();
    assert!(
        mixed.iter().any(|c| c.parse::<u32>().unwrap() >= 12),
        "{mixed:?}"
    );
}

#[test]
fn hybrid_without_pmu_files_uses_base_frequency_not_max() {
    // Two turbo maxima on the P-cores (5.0 and 5.2 GHz) must not make three kinds.
    let topo = hybrid(false).topo();
    assert_eq!(topo.partitions().cpu_kinds, sets(&["0-11", "12-19"]));
    assert_eq!(topo.kinds[0].cpus, set("12-19"), "efficient kind first");
    assert_eq!(topo.kinds[0].source, "base_frequency");
}

/// 4 cores whose SMT siblings (4-7) were switched off: `smt/control=off`.
fn smt_off() -> Tree {
    let t = Tree::new();
    t.write("sys/devices/system/cpu/online", "0-3")
        .write("sys/devices/system/cpu/offline", "4-7")
        .write("sys/devices/system/cpu/possible", "0-7")
        .write("sys/devices/system/cpu/present", "0-7")
        .write("sys/devices/system/cpu/smt/control", "off")
        .write("sys/devices/system/cpu/smt/active", "0");
    for cpu in 0..4u32 {
        // Some kernels still list the offline sibling; it must not count.
        t.cpu(cpu, 0, cpu, &format!("{cpu},{}", cpu + 4), "0-7")
            .cache(cpu, 3, 3, "Unified", "16M", "0-7");
    }
    for cpu in 4..8u32 {
        // Offline CPUs have no topology/ directory.
        t.write(&format!("sys/devices/system/cpu/cpu{cpu}/online"), "0");
    }
    t
}

#[test]
fn smt_switched_off() {
    let topo = smt_off().topo();
    assert_eq!(topo.online(), set("0-3"));
    let offline: Vec<u32> = topo
        .cpus
        .iter()
        .filter(|c| !c.online)
        .map(|c| c.cpu)
        .collect();
    assert_eq!(offline, [4, 5, 6, 7]);
    assert_eq!(topo.cores(), sets(&["0", "1", "2", "3"]));
    assert_eq!(topo.machine.smt_active, Some(false));
    let s = view::smt_summary(&topo).sentence;
    assert!(
        s.starts_with("no SMT siblings visible: 1 thread per core") && s.contains("switched off"),
        "{s}"
    );
    let text = view::tree(&topo);
    assert!(text.contains("Offline CPUs: 4-7"), "{text}");
    assert!(matches!(
        placed(&topo, "pairs", 2),
        Err(PlanError::NoSmt { .. })
    ));
    assert!(matches!(
        placed(&topo, "siblings-of:0", 1),
        Err(PlanError::NoSmt { .. })
    ));
    let e = placed(&topo, "pairs", 2).unwrap_err().to_string();
    assert!(
        e.contains("needs SMT siblings") && e.contains("one-per-core"),
        "{e}"
    );
    assert_eq!(
        placed(&topo, "one-per-core", 4).unwrap(),
        ["0", "1", "2", "3"]
    );
    let e = placed(&topo, "cpus:5", 1).unwrap_err().to_string();
    assert!(e.contains("offline"), "{e}");
}

/// An old kernel: only `thread_siblings`/`core_siblings` hex masks, no `*_list`, no
/// top-level `online`; cpu0 has no `online` file (it cannot be offlined).
#[test]
fn mask_only_old_kernel() {
    let t = Tree::new();
    // 2 packages × 2 cores × 2 threads; siblings (i, i+4); packages {0,1,4,5}, {2,3,6,7}.
    for cpu in 0..8u32 {
        let c = cpu % 4;
        let pkg = c / 2;
        let sib_mask = (1u32 << c) | (1 << (c + 4));
        let pkg_mask: u32 = if pkg == 0 { 0x33 } else { 0xcc };
        let d = format!("sys/devices/system/cpu/cpu{cpu}");
        t.write(
            &format!("{d}/topology/thread_siblings"),
            &format!("00000000,{sib_mask:08x}"),
        )
        .write(
            &format!("{d}/topology/core_siblings"),
            &format!("00000000,{pkg_mask:08x}"),
        )
        .write(&format!("{d}/topology/core_id"), &(c % 2 * 8).to_string())
        .write(
            &format!("{d}/topology/physical_package_id"),
            &pkg.to_string(),
        )
        .write(&format!("{d}/cache/index0/level"), "2")
        .write(&format!("{d}/cache/index0/type"), "Unified")
        .write(&format!("{d}/cache/index0/size"), "4096K")
        .write(
            &format!("{d}/cache/index0/shared_cpu_map"),
            &format!("00000000,{pkg_mask:08x}"),
        );
        if cpu > 0 {
            t.write(&format!("{d}/online"), "1");
        }
    }
    let topo = t.topo();
    assert_eq!(topo.online(), set("0-7"));
    assert_eq!(topo.cores(), sets(&["0,4", "1,5", "2,6", "3,7"]));
    assert_eq!(topo.packages(), sets(&["0-1,4-5", "2-3,6-7"]));
    assert_eq!(topo.partitions().l2_caches, sets(&["0-1,4-5", "2-3,6-7"]));
    assert_eq!(topo.threads_per_core(), 2);
    assert_eq!(
        view::smt_summary(&topo).sentence,
        "SMT: 2 threads per core, no smt/control file"
    );
    assert_eq!(placed(&topo, "pairs", 2).unwrap(), ["0", "4"]);
    assert_eq!(placed(&topo, "other-l3", 2).unwrap(), ["0", "2"]);
}

/// A cgroup v2 job restricted to CPUs 1-2 of 4, with a 1.5-CPU quota.
#[test]
fn cgroup_restricted() {
    let t = Tree::new();
    t.write("sys/devices/system/cpu/online", "0-3")
        .write("proc/self/cgroup", "0::/job")
        .write(
            "proc/mounts",
            "sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0",
        )
        .write("sys/fs/cgroup/job/cpuset.cpus.effective", "1-2")
        .write("sys/fs/cgroup/job/cpuset.mems.effective", "0")
        .write("sys/fs/cgroup/job/cpu.max", "150000 100000")
        .mkdir("sys/devices/system/node/node0");
    t.write("sys/devices/system/node/node0/cpulist", "0-3");
    for cpu in 0..4u32 {
        t.cpu(cpu, 0, cpu, &cpu.to_string(), "0-3")
            .cache(cpu, 3, 3, "Unified", "8M", "0-3");
    }
    let topo = t.topo();
    assert_eq!(topo.online(), set("0-3"));
    assert_eq!(topo.allowed(), set("1-2"));
    assert_eq!(topo.partitions().allowed_cpus, set("1-2"));
    assert_eq!(
        topo.process.cgroup_source.as_deref(),
        Some("/sys/fs/cgroup/job/cpuset.cpus.effective")
    );
    assert_eq!(topo.process.cgroup_mems, Some(set("0")));
    assert_eq!(topo.process.cpu_quota, Some(1.5));
    let text = view::tree(&topo);
    assert!(
        text.contains(
            "Usable by this process: 1-2 (restricted by the cgroup cpuset, \
             /sys/fs/cgroup/job/cpuset.cpus.effective)"
        ),
        "{text}"
    );
    assert_eq!(topo.restricted_by(), [Restriction::Cgroup]);
    assert!(text.contains("CPU  0!"), "disallowed CPUs marked:\n{text}");
    assert_eq!(placed(&topo, "one-per-core", 2).unwrap(), ["1", "2"]);
    assert_eq!(placed(&topo, "os", 2).unwrap(), ["1-2", "1-2"]);
    assert!(matches!(
        placed(&topo, "one-per-core", 3),
        Err(PlanError::NotEnough { have: 2, .. })
    ));
    let e = placed(&topo, "cpus:0", 1).unwrap_err().to_string();
    assert!(e.contains("outside this process's affinity/cgroup"), "{e}");
}

/// Garbage in a list file is an error naming the file, on one line.
#[test]
fn garbage_in_a_list_file_is_a_one_line_error() {
    let t = smt_off();
    t.write("sys/devices/system/cpu/online", "0-3,\u{0}zz\nmore");
    let e = discover(t.root()).unwrap_err();
    let msg = format!("{:#}", anyhow::Error::from(e));
    assert!(msg.contains("sys/devices/system/cpu/online"), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}

#[test]
fn c2c_budget_keeps_a_sibling_pair_and_reaches_the_other_package_first() {
    use smtlab::experiments::c2c::{budget_order, fit_prefix};
    let t = two_socket();
    let topo = t.topo();
    let order = budget_order(&topo, &topo.allowed());
    assert_eq!(order.len(), 16, "{order:?}");
    assert_eq!(&order[..2], [0, 8], "the first core's SMT siblings first");
    // Then one CPU per core, spread: the other package comes before a third core here.
    assert!((4..8).contains(&order[2]), "{order:?}");
    let one_per_core: Vec<u32> = order[2..9].to_vec();
    assert!(
        one_per_core.iter().all(|&c| c < 8),
        "one CPU (the first) of each remaining core before any second sibling: {order:?}"
    );
    // 3 pairs: a sibling pair and two cross-package pairs.
    assert_eq!(fit_prefix(&order, 3), set(&format!("0,8,{}", order[2])));
    // Restricted to some CPUs, only those come back.
    let some = set("1,2,9,12");
    let o = budget_order(&topo, &some);
    assert_eq!(o.iter().copied().collect::<CpuSet>(), some);
    assert_eq!(&o[..2], [1, 9], "{o:?}");
}

/// 1 package × 2 cores × 4 threads (SMT4, as POWER7): cores 0-3 and 4-7.
#[test]
fn smt4_sibling_burners_spread_over_the_workers_cores() {
    let t = Tree::new();
    t.write("sys/devices/system/cpu/online", "0-7")
        .write("sys/devices/system/cpu/smt/control", "on");
    for cpu in 0..8u32 {
        let core = if cpu < 4 { "0-3" } else { "4-7" };
        t.cpu(cpu, 0, cpu / 4, core, "0-7")
            .cache(cpu, 3, 3, "Unified", "8M", "0-7");
    }
    let topo = t.topo();
    // Workers one per core on 0 and 4: burners alternate between the two cores instead of
    // filling core 0's three free siblings first.
    assert_eq!(
        placed(&topo, "siblings-of:0,4", 4).unwrap(),
        ["1", "5", "2", "6"]
    );
    // Never a listed CPU, even when the list holds several siblings of one core.
    assert_eq!(
        placed(&topo, "siblings-of:0,1", 3).unwrap(),
        ["2", "3", "2"]
    );
    assert_eq!(placed(&topo, "all", 1).unwrap(), ["0", "1", "2", "3"]);
    assert_eq!(placed(&topo, "pairs", 4).unwrap(), ["0", "1", "4", "5"]);
    assert_eq!(placed(&topo, "same-core", 4).unwrap(), ["0", "1", "2", "3"]);
}

/// Four CPUs, one core each, one shared L3: the base the inconsistent trees below edit.
fn four_cores() -> Tree {
    let t = Tree::new();
    t.write("sys/devices/system/cpu/online", "0-3");
    for cpu in 0..4u32 {
        t.cpu(cpu, 0, cpu, &cpu.to_string(), "0-3")
            .cache(cpu, 0, 1, "Data", "32K", &cpu.to_string())
            .cache(cpu, 3, 3, "Unified", "8M", "0-3");
    }
    t
}

/// What `topo` shows of a tree: its text and JSON warnings, each checked to hold `has`.
fn warned(topo: &Topology, has: &[&str]) {
    let text = view::tree(topo);
    let table = view::cpu_table(topo);
    let json: serde_json::Value = serde_json::from_str(&view::to_json(topo)).unwrap();
    let in_json: Vec<String> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect();
    for h in has {
        assert!(
            topo.warnings.iter().any(|w| w.contains(h)),
            "{h}: {:?}",
            topo.warnings
        );
        assert!(
            in_json.iter().any(|w| w.contains(h)),
            "JSON: {h}: {in_json:?}"
        );
        assert!(text.contains(h), "text: {h}:\n{text}");
        assert!(table.contains(h), "--cpus: {h}:\n{table}");
    }
}

#[test]
fn a_consistent_tree_reads_without_warnings() {
    let topo = four_cores().topo();
    assert!(topo.warnings.is_empty(), "{:?}", topo.warnings);
    assert_eq!(topo.cores(), sets(&["0", "1", "2", "3"]));
}

/// An empty `online` once read as "0 CPUs online", exit 0.
#[test]
fn an_empty_online_list_is_refused_naming_the_file() {
    let t = four_cores();
    t.write("sys/devices/system/cpu/online", "");
    let msg = format!("{:#}", anyhow::Error::from(discover(t.root()).unwrap_err()));
    assert!(
        msg.contains("sys/devices/system/cpu/online") && msg.contains("empty"),
        "{msg}"
    );
    // No online CPU at all, from the per-CPU files of an old kernel: refused too.
    let t = four_cores();
    std::fs::remove_file(t.root().join("sys/devices/system/cpu/online")).unwrap();
    for cpu in 0..4 {
        t.write(&format!("sys/devices/system/cpu/cpu{cpu}/online"), "0");
    }
    let msg = format!("{:#}", anyhow::Error::from(discover(t.root()).unwrap_err()));
    assert!(msg.contains("no CPU is online"), "{msg}");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(["topo", "--sysfs-root"])
        .arg(t.root())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `online` = 0-7 with only cpu0-3 in the tree once gave 4 CPUs without a word.
#[test]
fn online_cpus_without_a_directory_are_named() {
    let t = four_cores();
    t.write("sys/devices/system/cpu/online", "0-7");
    t.write("sys/devices/system/cpu/present", "0-5");
    let topo = t.topo();
    assert_eq!(topo.online(), set("0-3"));
    warned(
        &topo,
        &[
            "CPUs 4-7 are listed in",
            "sys/devices/system/cpu/online` but have no `cpuN` directory: left out",
            "CPUs 4-5 are listed in",
        ],
    );
}

/// An oversized sibling mask once merged every core into one.
#[test]
fn an_oversized_core_mask_does_not_merge_cores() {
    let t = four_cores();
    let d = "sys/devices/system/cpu/cpu0/topology";
    // The mask wins over the list (hwloc reads masks); `ff` names CPUs 0-7.
    t.write(&format!("{d}/core_cpus"), "000000ff");
    t.write(&format!("{d}/thread_siblings"), "000000ff");
    let topo = t.topo();
    assert_eq!(topo.cores(), sets(&["0", "1", "2", "3"]));
    assert_eq!(topo.threads_per_core(), 1);
    warned(
        &topo,
        &[
            "CPU 0 lists SMT siblings",
            "that have no `cpuN` directory",
            "that do not list it back",
        ],
    );
    // Masks that agree with each other stay a core, whatever their width.
    let t = four_cores();
    for cpu in 0..2 {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        t.write(&format!("{d}/core_cpus"), "00000003");
    }
    let topo = t.topo();
    assert_eq!(topo.cores(), sets(&["0-1", "2", "3"]));
    assert!(topo.warnings.is_empty(), "{:?}", topo.warnings);
}

/// Cache files holding garbage were once dropped without a word.
#[test]
fn garbage_cache_files_are_named() {
    let t = four_cores();
    let d = |cpu: u32, f: &str| format!("sys/devices/system/cpu/cpu{cpu}/cache/index3/{f}");
    for cpu in 0..4 {
        t.write(&d(cpu, "level"), "three");
    }
    t.write("sys/devices/system/cpu/cpu1/cache/index0/type", "Sideways");
    t.write("sys/devices/system/cpu/cpu2/cache/index0/size", "lots");
    let topo = t.topo();
    warned(
        &topo,
        &[
            "CPUs 0-3: `cache/index3/level` holds `three`, not a cache level",
            "CPU 1: `cache/index0/type` holds `Sideways`, not Data, Instruction or Unified",
            "CPU 2: `cache/index0/size` holds `lots`, not a size like 32K",
        ],
    );
    assert_eq!(topo.caches_at(3).count(), 0, "the garbage L3 is left out");
    assert_eq!(topo.cache_of(2, 1).unwrap().size_bytes, None);
}

/// Under `taskset -c 0` the affinity mask limits the CPUs, not the cgroup file that allows
/// them all (`topo` once named the cgroup file).
#[test]
fn the_affinity_mask_is_named_when_it_is_what_limits() {
    let root = smtlab::topology::discover(Path::new("/")).unwrap();
    let online = root.online();
    let cgroup_allows_all = root
        .process
        .cgroup_cpus
        .as_ref()
        .is_none_or(|c| online.intersection(c) == online);
    if online.len() < 2 || !cgroup_allows_all {
        crate::common::skip(
            crate::common::Need::Machine,
            &format!("needs 2 online CPUs that the cgroup allows (have {online})"),
        );
        return;
    }
    let first = online.first().unwrap().to_string();
    let out = std::process::Command::new("taskset")
        .args(["-c", &first])
        .arg(assert_cmd::cargo::cargo_bin("smtlab"))
        .arg("topo")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let usable = text
        .lines()
        .find(|l| l.starts_with("Usable by this process"))
        .unwrap_or_default();
    assert!(
        usable.contains("restricted by the affinity mask") && !usable.contains("cgroup"),
        "{text}"
    );
}
