//! The machine's CPU topology as data: logical CPUs, cores (SMT sibling sets), caches,
//! packages, dies, clusters, NUMA nodes, CPU kinds, and which CPUs this process may use.
//!
//! Built by [`discover`] from a sysfs/procfs root path (the live machine or a dump), and
//! pure afterwards: everything downstream (placement, rendering, handoff classes) reads this
//! model, never sysfs, so tests run on any machine.

mod discover;
pub mod fixture;
pub mod view;

pub use discover::{DiscoverError, discover, discover_in_memory};

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the topology JSON layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything smtlab knows about the CPUs of one machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Topology {
    /// Filesystem root that sysfs and procfs were read from (`/` for this machine).
    pub root: String,
    /// True when read from this running machine (so affinity and hypervisor are real).
    pub live: bool,
    /// Machine-wide facts.
    pub machine: Machine,
    /// Every CPU the kernel knows (present or possible), ascending by OS number.
    pub cpus: Vec<Cpu>,
    /// Cache instances, each once, ordered by level then first CPU.
    pub caches: Vec<Cache>,
    /// CPU kinds (hybrid P/E cores), energy-efficient first as hwloc ranks them; empty when
    /// all CPUs are alike or the kernel does not tell.
    pub kinds: Vec<CpuKind>,
    /// NUMA nodes with their CPUs and memory. Serialised as `numa` so that the top-level
    /// `numa_nodes` key of `topo --json` stays the oracle-shaped partition (lists of CPUs).
    #[serde(rename = "numa")]
    pub numa_nodes: Vec<NumaNode>,
    /// The CPUs this process may run on, and why.
    pub process: ProcessCpus,
    /// Oddities found while reading (missing files, inconsistent data), for the user.
    pub warnings: Vec<String>,
}

/// One logical CPU (an OS CPU number, a "PU" in hwloc's words).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cpu {
    /// OS CPU number (`cpuN`).
    pub cpu: u32,
    /// Online per `cpuN/online` or the top-level `online` list.
    pub online: bool,
    /// `physical_package_id` (socket; on some ARM boards a cluster). None when offline.
    pub package: Option<u32>,
    /// `die_id` (Linux 5.2+).
    pub die: Option<u32>,
    /// `cluster_id` (Linux 5.16+; on x86 the L2 group of E-cores).
    pub cluster: Option<u32>,
    /// `core_id`: per package, with gaps; a label, not an identity (use `core_cpus`).
    pub core_id: Option<u32>,
    /// SMT siblings including this CPU (`core_cpus`, else `thread_siblings`), online only
    /// (`discover` intersects with the online set), as the kernel lists them. On AMD family
    /// 15h these are CMT modules, not cores: [`Topology::cores`] and
    /// [`Topology::core_of`] then count each CPU as a core of its own
    /// ([`Topology::cmt_modules`]).
    pub core_cpus: CpuSet,
    /// CPUs of the same package (`package_cpus`, else `core_siblings`), online only; empty
    /// when the kernel gives no package mask.
    pub package_cpus: CpuSet,
    /// CPUs of the same die, when the kernel exposes dies.
    pub die_cpus: Option<CpuSet>,
    /// CPUs of the same cluster, when the kernel exposes clusters.
    pub cluster_cpus: Option<CpuSet>,
    /// NUMA node holding this CPU.
    pub numa_node: Option<u32>,
    /// Index into [`Topology::kinds`].
    pub kind: Option<usize>,
    /// `cpu_capacity` (max 1024), when present.
    pub capacity: Option<u32>,
    /// `cpufreq/base_frequency` in kHz, when present.
    pub base_freq_khz: Option<u64>,
    /// `cpufreq/cpuinfo_max_freq` in kHz, when present (never used alone to tell kinds apart).
    pub max_freq_khz: Option<u64>,
    /// In the kernel's `isolated` list (`isolcpus=`): no load balancing onto it.
    pub isolated: bool,
    /// In the kernel's `nohz_full` list.
    pub nohz_full: bool,
}

/// Data, instruction or unified cache.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum CacheType {
    Data,
    Instruction,
    Unified,
}

/// One cache instance and the CPUs sharing it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cache {
    /// 1, 2, 3 (or 4 for memory-side caches reported as CPU caches).
    pub level: u8,
    #[serde(rename = "type")]
    pub cache_type: CacheType,
    /// The kernel's cache `id`, when present (unique per level, need not start at 0).
    pub id: Option<u32>,
    /// Capacity in bytes.
    pub size_bytes: Option<u64>,
    /// `coherency_line_size` in bytes.
    pub line_bytes: Option<u32>,
    /// `ways_of_associativity`.
    pub ways: Option<u32>,
    /// CPUs sharing this instance (`shared_cpu_list` / `shared_cpu_map`).
    pub cpus: CpuSet,
}

impl Cache {
    /// hwloc-style short name: `L1d`, `L1i`, `L2`, `L3`.
    pub fn name(&self) -> String {
        match self.cache_type {
            CacheType::Data => format!("L{}d", self.level),
            CacheType::Instruction => format!("L{}i", self.level),
            CacheType::Unified => format!("L{}", self.level),
        }
    }
}

/// A class of CPUs (hybrid P-cores, E-cores, big.LITTLE clusters).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuKind {
    /// Short label: `E-core`, `P-core`, `LP-E-core`, or `capacity N`/`base N MHz`.
    pub name: String,
    /// Where the kind came from: `pmu` (`/sys/devices/cpu_core|cpu_atom/cpus`),
    /// `cpu_capacity`, `base_frequency` or both joined by `+`.
    pub source: String,
    /// Member CPUs.
    pub cpus: CpuSet,
}

/// A NUMA node.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NumaNode {
    /// Node number (sparse: 0,2,3 or GPU nodes 250+ exist).
    pub node: u32,
    /// CPUs local to the node (empty for memory-only nodes).
    pub cpus: CpuSet,
    /// `MemTotal` of the node in bytes, when known.
    pub memory_bytes: Option<u64>,
}

/// Machine-wide facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    /// `vendor_id` (x86), `CPU implementer` (ARM) or similar from `/proc/cpuinfo`.
    pub vendor: Option<String>,
    /// `model name` / `cpu` / `Processor` from `/proc/cpuinfo`.
    pub model: Option<String>,
    /// x86 `cpu family` from `/proc/cpuinfo` (0x15 on AMD = Bulldozer-family CMT modules).
    pub family: Option<u32>,
    /// True when `/proc/cpuinfo` carries the `hypervisor` flag (or a known VM vendor).
    pub hypervisor: bool,
    /// `smt/control`: `on`, `off`, `forceoff`, `notsupported`, `notimplemented`, or a number.
    pub smt_control: Option<String>,
    /// `smt/active`: SMT enabled *and* siblings online.
    pub smt_active: Option<bool>,
    /// Kernel's `possible` CPU list.
    pub possible_cpus: Option<CpuSet>,
    /// Kernel's `present` CPU list.
    pub present_cpus: Option<CpuSet>,
    /// Huge page sizes the kernel offers, in bytes.
    pub huge_page_sizes_bytes: Vec<u64>,
    /// Total memory in bytes (`/proc/meminfo` `MemTotal`).
    pub memory_bytes: Option<u64>,
}

/// Which CPUs this process may use: online ∩ cgroup cpuset ∩ affinity.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessCpus {
    /// `sched_getaffinity` of this process (live machine only).
    pub affinity: Option<CpuSet>,
    /// The cgroup (v2 `cpuset.cpus.effective`, v1 `cpuset.cpus`) restriction, when found.
    pub cgroup_cpus: Option<CpuSet>,
    /// The cgroup's memory nodes (v2 `cpuset.mems.effective`, v1 `cpuset.mems`), when found
    /// beside `cgroup_cpus`: NUMA node numbers this process may allocate on.
    #[serde(default)]
    pub cgroup_mems: Option<CpuSet>,
    /// Which cgroup file gave `cgroup_cpus`, relative to the root.
    pub cgroup_source: Option<String>,
    /// CPU quota from cgroup v2 `cpu.max` or v1 `cpu.cfs_quota_us`, in CPUs (e.g. 1.5);
    /// None when unlimited or unknown. A quota does not restrict placement but caps time.
    pub cpu_quota: Option<f64>,
}

/// What keeps this process off some online CPUs.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Restriction {
    /// The cgroup's cpuset (a container, a systemd slice, Slurm).
    Cgroup,
    /// The process's affinity mask (`taskset`, `numactl`, `sched_setaffinity`).
    Affinity,
}

/// How two CPUs relate; the classes lock handoffs are counted by.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Proximity {
    /// The same logical CPU.
    SameCpu,
    /// SMT siblings of one core.
    SmtSibling,
    /// Different cores sharing a last-level cache.
    SameL3,
    /// Same package, different last-level caches.
    OtherL3,
    /// Different packages.
    OtherPackage,
}

impl Proximity {
    pub const ALL: [Proximity; 5] = [
        Proximity::SameCpu,
        Proximity::SmtSibling,
        Proximity::SameL3,
        Proximity::OtherL3,
        Proximity::OtherPackage,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Proximity::SameCpu => "same-cpu",
            Proximity::SmtSibling => "smt-sibling",
            Proximity::SameL3 => "same-l3",
            Proximity::OtherL3 => "other-l3",
            Proximity::OtherPackage => "other-package",
        }
    }
}

/// AMD's x86 family 15h: Bulldozer, Piledriver, Steamroller and Excavator, whose cores come
/// in pairs, "compute units" (CMT modules).
pub const AMD_CMT_FAMILY: u32 = 0x15;

/// What a CMT module is, for messages. AMD family 15h pairs two integer cores in a compute
/// unit that share the instruction fetch and decode, the floating-point unit and the L2
/// cache, each core keeping its own integer scheduler, execution units and L1 data cache
/// (AMD, BIOS and Kernel Developer's Guide for Family 15h Models 00h-0Fh Processors,
/// publication 42301). Linux lists the two cores of a compute unit as thread siblings
/// (from CPUID leaf 0x8000001E in arch/x86/kernel/cpu/amd.c, topology_amd.c since 6.9), as the
/// Opteron 6276 and 6328 dumps of hwloc and util-linux show (`thread_siblings_list` 0-1
/// with `core_id` 0 and 1), but each CPU is an integer core of its own: there is no SMT
/// to turn off, and "SMT off" would take half the cores offline.
pub const CMT_MODULES: &str = "AMD family 15h (Bulldozer-family) CMT modules: two integer \
     cores sharing instruction fetch and decode, the FPU and the L2 cache";

/// True for a CPU whose kernel thread siblings are CMT modules: AMD family 15h
/// (see [`CMT_MODULES`]).
pub fn is_cmt_family(vendor: Option<&str>, family: Option<u32>) -> bool {
    vendor == Some("AuthenticAMD") && family == Some(AMD_CMT_FAMILY)
}

/// [`is_cmt_family`] from `/proc/cpuinfo` text (its first `vendor_id` and `cpu family`).
pub fn is_cmt_cpuinfo(cpuinfo: &str) -> bool {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    is_cmt_family(
        field("vendor_id").as_deref(),
        field("cpu family").and_then(|f| f.parse().ok()),
    )
}

/// Partitions of OS CPU numbers per level, the shape of `fixtures/topology/*.oracle.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Partitions {
    pub online_cpus: CpuSet,
    pub allowed_cpus: CpuSet,
    pub cores: Vec<CpuSet>,
    pub l2_caches: Vec<CpuSet>,
    pub l3_caches: Vec<CpuSet>,
    pub packages: Vec<CpuSet>,
    pub numa_nodes: Vec<CpuSet>,
    pub dies: Vec<CpuSet>,
    pub cpu_kinds: Vec<CpuSet>,
}

impl Topology {
    /// The CPU with OS number `cpu`, if known.
    pub fn cpu(&self, cpu: u32) -> Option<&Cpu> {
        self.cpus
            .binary_search_by_key(&cpu, |c| c.cpu)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// Online CPUs.
    pub fn online(&self) -> CpuSet {
        self.cpus
            .iter()
            .filter(|c| c.online)
            .map(|c| c.cpu)
            .collect()
    }

    /// CPUs this process may run on: online ∩ cgroup ∩ affinity.
    pub fn allowed(&self) -> CpuSet {
        let mut s = self.online();
        if let Some(c) = &self.process.cgroup_cpus {
            s = s.intersection(c);
        }
        if let Some(a) = &self.process.affinity {
            s = s.intersection(a);
        }
        s
    }

    /// What keeps this process off online CPUs, in the order the kernel applies them: the
    /// cgroup when it leaves out online CPUs, the affinity mask when it leaves out CPUs the
    /// cgroup allows. Empty when every online CPU is usable. (A cgroup file that allows
    /// everything is not a restriction: under `taskset -c 0` the mask is what limits.)
    pub fn restricted_by(&self) -> Vec<Restriction> {
        let online = self.online();
        let mut out = Vec::new();
        let in_cgroup = match &self.process.cgroup_cpus {
            Some(c) => {
                let s = online.intersection(c);
                if s != online {
                    out.push(Restriction::Cgroup);
                }
                s
            }
            None => online,
        };
        if let Some(a) = &self.process.affinity
            && in_cgroup.intersection(a) != in_cgroup
        {
            out.push(Restriction::Affinity);
        }
        out
    }

    /// Distinct SMT sibling sets (cores) over online CPUs, ordered by first CPU. With CMT
    /// modules every CPU is a core.
    pub fn cores(&self) -> Vec<CpuSet> {
        let online = self.online();
        if self.splits_modules() {
            return online.iter().map(|c| CpuSet::from_cpus([c])).collect();
        }
        unique_sets(
            self.cpus
                .iter()
                .filter(|c| c.online)
                .map(|c| online_core(c, &online)),
        )
    }

    /// The CPU's kernel thread siblings are CMT modules, not SMT threads (cheap: one look
    /// at the vendor and family).
    fn splits_modules(&self) -> bool {
        is_cmt_family(self.machine.vendor.as_deref(), self.machine.family)
    }

    /// The CMT modules over online CPUs (the kernel's thread-sibling sets of more than one
    /// CPU on AMD family 15h), by first CPU; empty on every other machine.
    pub fn cmt_modules(&self) -> Vec<CpuSet> {
        if !self.splits_modules() {
            return Vec::new();
        }
        let online = self.online();
        unique_sets(
            self.cpus
                .iter()
                .filter(|c| c.online)
                .map(|c| online_core(c, &online))
                .filter(|m| m.len() > 1),
        )
    }

    /// The CMT module holding `cpu`, when it is in one.
    pub fn cmt_module_of(&self, cpu: u32) -> Option<CpuSet> {
        if !self.splits_modules() {
            return None;
        }
        let c = self.cpu(cpu).filter(|c| c.online)?;
        let m = online_core(c, &self.online());
        (m.len() > 1).then_some(m)
    }

    /// Largest number of online threads on one core (1 = no SMT visible).
    pub fn threads_per_core(&self) -> usize {
        self.cores().iter().map(CpuSet::len).max().unwrap_or(1)
    }

    /// Caches at `level` that hold data (unified or data), as instances.
    pub fn caches_at(&self, level: u8) -> impl Iterator<Item = &Cache> {
        self.caches
            .iter()
            .filter(move |c| c.level == level && c.cache_type != CacheType::Instruction)
    }

    /// The highest cache level with a data-holding instance (the LLC).
    pub fn llc_level(&self) -> Option<u8> {
        self.caches
            .iter()
            .filter(|c| c.cache_type != CacheType::Instruction)
            .map(|c| c.level)
            .max()
    }

    /// The data cache of `level` that `cpu` uses.
    pub fn cache_of(&self, cpu: u32, level: u8) -> Option<&Cache> {
        self.caches_at(level).find(|c| c.cpus.contains(cpu))
    }

    /// The core (online sibling set) containing `cpu`; `{cpu}` alone when unknown, and with
    /// CMT modules.
    pub fn core_of(&self, cpu: u32) -> CpuSet {
        if self.splits_modules() {
            return CpuSet::from_cpus([cpu]);
        }
        match self.cpu(cpu) {
            Some(c) if c.online && !c.core_cpus.is_empty() => {
                // `discover` keeps `core_cpus` to online CPUs; re-check cheaply anyway.
                if c.core_cpus
                    .iter()
                    .all(|s| self.cpu(s).is_some_and(|x| x.online))
                {
                    c.core_cpus.clone()
                } else {
                    online_core(c, &self.online())
                }
            }
            _ => CpuSet::from_cpus([cpu]),
        }
    }

    /// Groups of CPUs sharing a last-level cache; packages when no cache is known.
    pub fn llc_groups(&self) -> Vec<CpuSet> {
        let online = self.online();
        let groups = match self.llc_level() {
            Some(l) if l >= 2 => {
                unique_sets(self.caches_at(l).map(|c| c.cpus.intersection(&online)))
            }
            _ => Vec::new(),
        };
        if groups.is_empty() {
            self.packages()
        } else {
            // CPUs whose LLC is unknown still need a group (asymmetric caches).
            let covered = groups.iter().fold(CpuSet::new(), |a, g| a.union(g));
            let mut groups = groups;
            for p in self.packages() {
                let rest = p.difference(&covered);
                if !rest.is_empty() {
                    groups.push(rest);
                }
            }
            sort_sets(&mut groups);
            groups
        }
    }

    /// Packages over online CPUs, as the kernel's package masks (`package_cpus`, else
    /// `core_siblings`) group them, else by `physical_package_id`. Online CPUs the kernel
    /// places in no package form one more group, so every online CPU is in exactly one.
    pub fn packages(&self) -> Vec<CpuSet> {
        let online = self.online();
        let mut out = self.known_packages(&online);
        let covered = out.iter().fold(CpuSet::new(), |a, p| a.union(p));
        let rest = online.difference(&covered);
        if !rest.is_empty() {
            out.push(rest);
            sort_sets(&mut out);
        }
        out
    }

    /// Packages the kernel reports (empty when it says nothing, as on the PS3).
    fn known_packages(&self, online: &CpuSet) -> Vec<CpuSet> {
        let mut by_id: BTreeMap<u32, CpuSet> = BTreeMap::new();
        let mut sets = Vec::new();
        for c in self.cpus.iter().filter(|c| c.online) {
            let set = c.package_cpus.intersection(online);
            if !set.is_empty() {
                // Each package once, from its first CPU (as hwloc): a CPU whose mask
                // disagrees with its first sibling's cannot split the partition.
                if set.first() == Some(c.cpu) {
                    sets.push(set);
                }
            } else if let Some(p) = c.package {
                by_id.entry(p).or_default().insert(c.cpu);
            }
        }
        unique_sets(sets.into_iter().chain(by_id.into_values()))
    }

    /// The package holding `cpu` (see [`Topology::packages`]).
    pub fn package_of(&self, cpu: u32) -> CpuSet {
        match self.cpu(cpu) {
            Some(c) if !c.package_cpus.is_empty() => c.package_cpus.clone(),
            _ => self
                .packages()
                .into_iter()
                .find(|p| p.contains(cpu))
                .unwrap_or_else(|| CpuSet::from_cpus([cpu])),
        }
    }

    /// Dies that are a level of their own: the kernel's `die_cpus` groups that hold more
    /// than one CPU and differ from their package (hwloc lists no die otherwise; kernels
    /// write a die per package on every machine since 5.2).
    pub fn dies(&self) -> Vec<CpuSet> {
        let online = self.online();
        let mut out = Vec::new();
        for c in self.cpus.iter().filter(|c| c.online) {
            let Some(d) = &c.die_cpus else { continue };
            let d = d.intersection(&online);
            if d.len() > 1 && d.first() == Some(c.cpu) && d != c.package_cpus.intersection(&online)
            {
                out.push(d);
            }
        }
        unique_sets(out)
    }

    /// How CPUs `a` and `b` relate. Cheap (no partition is rebuilt), so callers may ask
    /// for every pair of a large machine.
    pub fn proximity(&self, a: u32, b: u32) -> Proximity {
        if a == b {
            return Proximity::SameCpu;
        }
        if self.core_of(a).contains(b) {
            return Proximity::SmtSibling;
        }
        let same_package = self.package_of(a).contains(b);
        let llc = self
            .llc_level()
            .filter(|&l| l >= 2)
            .and_then(|l| self.cache_of(a, l));
        let same_llc = match llc {
            Some(c) => c.cpus.contains(b),
            // No shared cache known for `a`: its package is its group (as `llc_groups`).
            None => same_package,
        };
        if same_llc {
            Proximity::SameL3
        } else if same_package {
            Proximity::OtherL3
        } else {
            Proximity::OtherPackage
        }
    }

    /// The per-level partitions, as in the oracle files.
    pub fn partitions(&self) -> Partitions {
        let online = self.online();
        let at =
            |level: u8| unique_sets(self.caches_at(level).map(|c| c.cpus.intersection(&online)));
        Partitions {
            online_cpus: online.clone(),
            allowed_cpus: self.allowed(),
            cores: self.cores(),
            l2_caches: at(2),
            l3_caches: at(3),
            packages: self.known_packages(&online),
            numa_nodes: unique_sets(self.numa_nodes.iter().map(|n| n.cpus.intersection(&online))),
            dies: self.dies(),
            cpu_kinds: unique_sets(self.kinds.iter().map(|k| k.cpus.intersection(&online))),
        }
    }
}

/// The online siblings of `c` (itself at least).
fn online_core(c: &Cpu, online: &CpuSet) -> CpuSet {
    let s = c.core_cpus.intersection(online);
    if s.is_empty() {
        CpuSet::from_cpus([c.cpu])
    } else {
        s
    }
}

/// Sorts sets by their ascending CPU lists, as the oracles sort.
fn sort_sets(v: &mut [CpuSet]) {
    v.sort_by(|a, b| a.iter().cmp(b.iter()));
}

/// Distinct non-empty sets, sorted (by first CPU, as the oracles sort).
pub fn unique_sets<I: IntoIterator<Item = CpuSet>>(sets: I) -> Vec<CpuSet> {
    let mut v: Vec<CpuSet> = sets.into_iter().filter(|s| !s.is_empty()).collect();
    sort_sets(&mut v);
    v.dedup();
    v
}
