//! `mem report`'s one serde model: what the kernel is set to, what it means, and the
//! findings. JSON is this model as is; the text view and the study's section render it.
//!
//! A value the kernel did not provide is `null` here, and [`MemReport::not_available`]
//! says which file was missing or unreadable: nothing is filled in with a made-up 0.

use serde::{Deserialize, Serialize};

/// Everything `mem report` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemReport {
    /// The root procfs and sysfs were read under (`/` for this machine).
    pub root: String,
    pub overcommit: Overcommit,
    pub memory: Memory,
    pub swap: Swap,
    pub thp: Thp,
    pub hugetlb: Hugetlb,
    pub reclaim: Reclaim,
    /// This process's memory cgroup.
    pub cgroup: Cgroup,
    pub oom: Oom,
    /// What the settings mean together, in plain words, each with its number.
    pub findings: Vec<Observation>,
    /// Files (or `/proc/meminfo` lines) that were missing or unreadable, and so every
    /// value above that is `null`.
    pub not_available: Vec<NotAvailable>,
}

/// `vm.overcommit_memory` and the commit accounting it enforces or not
/// (Documentation/mm/overcommit-accounting.rst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overcommit {
    /// `vm.overcommit_memory`.
    pub mode: Option<OvercommitMode>,
    /// `vm.overcommit_ratio`: percent of RAM (minus hugetlb pages) that counts toward
    /// CommitLimit in strict mode.
    pub ratio_percent: Option<u64>,
    /// `vm.overcommit_kbytes` in bytes: replaces the ratio when not 0.
    pub kbytes_bytes: Option<u64>,
    /// `CommitLimit` from /proc/meminfo.
    pub commit_limit_bytes: Option<u64>,
    /// `Committed_AS` from /proc/meminfo: address space processes have asked for.
    pub committed_as_bytes: Option<u64>,
    /// CommitLimit − Committed_AS (negative when more is committed than the limit).
    pub headroom_bytes: Option<i64>,
    /// Strict mode only: the headroom less `admin_reserve_kbytes` and
    /// `user_reserve_kbytes`, the most a process without CAP_SYS_ADMIN is sure to get
    /// (mm/util.c `__vm_enough_memory` keeps the first for root and holds back up to the
    /// second, min(process size / 32, user_reserve_kbytes), from each process). None in
    /// other modes or when a value is missing.
    #[serde(default)]
    pub unprivileged_headroom_bytes: Option<i64>,
    /// Where CommitLimit comes from: `(MemTotal − hugetlb) × ratio + swap` or
    /// `overcommit_kbytes + swap`, with the numbers.
    pub limit_formula: Option<String>,
    /// What the mode makes of the headroom.
    pub meaning: String,
    /// `vm.admin_reserve_kbytes` in bytes: kept for root in modes 0 and 2.
    pub admin_reserve_bytes: Option<u64>,
    /// `vm.user_reserve_kbytes` in bytes: kept back from one user process in mode 2.
    pub user_reserve_bytes: Option<u64>,
}

/// The three values of `vm.overcommit_memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OvercommitMode {
    /// 0: obvious overcommits refused, the rest allowed.
    Heuristic,
    /// 1: every allocation succeeds.
    Always,
    /// 2: allocations fail once Committed_AS would pass CommitLimit.
    Strict,
}

impl OvercommitMode {
    pub fn from_value(v: u64) -> Option<Self> {
        match v {
            0 => Some(OvercommitMode::Heuristic),
            1 => Some(OvercommitMode::Always),
            2 => Some(OvercommitMode::Strict),
            _ => None,
        }
    }

    pub fn value(self) -> u64 {
        match self {
            OvercommitMode::Heuristic => 0,
            OvercommitMode::Always => 1,
            OvercommitMode::Strict => 2,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            OvercommitMode::Heuristic => "heuristic",
            OvercommitMode::Always => "always",
            OvercommitMode::Strict => "strict",
        }
    }
}

/// RAM and the page cache, from /proc/meminfo and the dirty-writeback sysctls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    /// The kernel's estimate of what can be allocated without swapping (free + reclaimable).
    pub available_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// Page cache (`Cached`).
    pub cached_bytes: Option<u64>,
    /// Page cache modified and not yet written back.
    pub dirty_bytes: Option<u64>,
    /// Page cache being written back now.
    pub writeback_bytes: Option<u64>,
    /// Anonymous memory backed by transparent huge pages.
    pub anon_huge_bytes: Option<u64>,
    /// `vm.dirty_background_ratio`: percent of available memory dirty before the flusher
    /// threads start writing back.
    pub dirty_background_ratio_percent: Option<u64>,
    /// `vm.dirty_ratio`: percent at which a writing process must write back itself.
    pub dirty_ratio_percent: Option<u64>,
}

/// Swap space and how readily the kernel uses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Swap {
    pub total_bytes: Option<u64>,
    pub free_bytes: Option<u64>,
    /// `vm.swappiness` (0–200): how readily anonymous memory is swapped relative to
    /// dropping page cache.
    pub swappiness: Option<u64>,
}

/// Transparent huge pages (Documentation/admin-guide/mm/transhuge.rst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thp {
    /// `enabled`: always, madvise or never.
    pub enabled: Option<String>,
    /// `defrag`: always, defer, defer+madvise, madvise or never.
    pub defrag: Option<String>,
    /// `khugepaged/defrag`: khugepaged compacts memory to collapse pages.
    pub khugepaged_defrag: Option<bool>,
    /// `khugepaged/pages_to_scan` per wake-up.
    pub khugepaged_pages_to_scan: Option<u64>,
    /// `khugepaged/scan_sleep_millisecs`, in ms.
    pub khugepaged_scan_sleep_ms: Option<u64>,
    /// `hpage_pmd_size`: the THP size, bytes.
    pub page_bytes: Option<u64>,
}

/// Pages reserved for hugetlbfs and `MAP_HUGETLB` (Documentation/admin-guide/mm/hugetlbpage.rst).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hugetlb {
    /// `Hugepagesize` from /proc/meminfo: the size `vm.nr_hugepages` counts.
    pub default_page_bytes: Option<u64>,
    /// `Hugetlb` from /proc/meminfo: memory in hugetlb pages of every size.
    pub total_bytes: Option<u64>,
    /// One entry per page size the kernel supports.
    pub sizes: Vec<HugeSize>,
}

/// One hugetlb page size, from `/sys/kernel/mm/hugepages/hugepages-<N>kB/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HugeSize {
    pub page_bytes: u64,
    /// `nr_hugepages`: pages in the pool.
    pub total: Option<u64>,
    /// `free_hugepages`: not mapped by anyone.
    pub free: Option<u64>,
    /// `resv_hugepages`: promised to a mapping, not yet faulted in.
    pub reserved: Option<u64>,
    /// `surplus_hugepages`: allocated beyond `nr_hugepages` under `nr_overcommit_hugepages`.
    pub surplus: Option<u64>,
    /// `nr_overcommit_hugepages`: how many surplus pages may be allocated on demand.
    pub overcommit: Option<u64>,
    /// Per NUMA node (`/sys/devices/system/node/nodeN/hugepages/`).
    pub nodes: Vec<HugeNode>,
}

/// One size's pool on one NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HugeNode {
    pub node: u32,
    pub total: Option<u64>,
    pub free: Option<u64>,
    pub surplus: Option<u64>,
}

/// Reclaim and NUMA placement settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reclaim {
    /// `vm.min_free_kbytes` in bytes: the reserve below which only the kernel allocates.
    pub min_free_bytes: Option<u64>,
    /// `vm.zone_reclaim_mode`: 0 = allocate on another node before reclaiming locally.
    pub zone_reclaim_mode: Option<u64>,
    /// `kernel.numa_balancing`: 0 off, 1 on (2 and 3: memory tiering modes).
    pub numa_balancing: Option<u64>,
    /// NUMA nodes with memory (`/sys/devices/system/node/has_memory`), when known.
    pub memory_nodes: Option<usize>,
}

/// This process's memory cgroup and its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cgroup {
    /// `v2`, `v1`, or None when no memory controller was found.
    pub version: Option<String>,
    /// The cgroup's directory, as mounted (e.g. `/sys/fs/cgroup/system.slice/x.service`).
    pub path: Option<String>,
    /// Limits found in that directory (v2 `memory.max`, `memory.high`, `memory.swap.max`;
    /// v1 `memory.limit_in_bytes`, `memory.soft_limit_in_bytes`, `memory.memsw.limit_in_bytes`).
    pub limits: Vec<CgroupLimit>,
    /// `memory.current` (v2) or `memory.usage_in_bytes` (v1).
    pub usage_bytes: Option<u64>,
    /// Why nothing was found, when nothing was.
    pub note: Option<String>,
}

/// One cgroup limit file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupLimit {
    /// The file name (`memory.max`).
    pub file: String,
    /// The limit; None when the file says there is none (`max`, or v1's page-counter maximum).
    pub limit_bytes: Option<u64>,
    /// What crossing it does.
    pub meaning: String,
}

/// The OOM killer's settings and its likeliest victims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Oom {
    /// `vm.panic_on_oom`: 0 kill a process; 1 or 2 panic the kernel instead.
    pub panic_on_oom: Option<u64>,
    /// `vm.oom_kill_allocating_task`: kill the allocating task instead of the top scorer.
    pub kill_allocating_task: Option<u64>,
    /// Processes read.
    pub processes: usize,
    /// Processes with `oom_score_adj` −1000: never chosen.
    pub opted_out: Vec<OomProcess>,
    /// The ten with the highest `oom_score`, highest first.
    pub top: Vec<OomProcess>,
    /// Why the processes listed may not be the machine's: /proc shows no kernel threads
    /// (no `kthreadd` as PID 2), as in a PID namespace of its own (a container) or with
    /// `hidepid`; None when it shows them.
    #[serde(default)]
    pub partial_view: Option<String>,
}

/// One process as the OOM killer sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OomProcess {
    pub pid: u32,
    /// `Name` from /proc/PID/status.
    pub name: String,
    /// `oom_score` (0–1000 on current kernels): the highest is killed first.
    pub oom_score: i64,
    /// `oom_score_adj` (−1000…1000; −1000 = never).
    pub oom_score_adj: i64,
    /// Resident memory (`VmRSS`).
    pub rss_bytes: u64,
}

/// One thing worth knowing, with the number behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// A stable name (`strict-overcommit-low-headroom`).
    pub code: String,
    pub level: Level,
    /// What the settings are, with the numbers.
    pub observed: String,
    /// What it means for a database or service on this machine.
    pub meaning: String,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Worth changing, or likely to hurt.
    Warning,
    /// Worth knowing.
    Info,
}

impl Level {
    pub fn label(self) -> &'static str {
        match self {
            Level::Warning => "warning",
            Level::Info => "info",
        }
    }
}

/// A file (or a line of /proc/meminfo) that gave no value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotAvailable {
    /// `/proc/sys/vm/overcommit_ratio`, or `/proc/meminfo CommitLimit` for a line.
    pub source: String,
    /// `missing`, `unreadable (…)`, or `not a number: …`.
    pub reason: String,
}

impl MemReport {
    /// "not available: SOURCE REASON" for a value read from `source`; the text names the
    /// file even when the record is for its whole file (`/proc/meminfo` for a line of it).
    pub fn why(&self, source: &str) -> String {
        let hit = self.not_available.iter().find(|n| {
            n.source == source
                || source
                    .strip_prefix(n.source.as_str())
                    .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('/'))
        });
        match hit {
            Some(n) => format!("not available: {} {}", n.source, n.reason),
            None => format!("not available: {source} missing"),
        }
    }
}

/// `mem report` as the study read it: overcommit, page cache, huge pages, cgroup limits,
/// OOM candidates and the findings; and `mem pages`' latency curves for 4 KiB pages and THP
/// over working sets up to a cap the phase's budget share allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySection {
    pub report: MemReport,
    /// The page-size curves; None when not measured (`pages_skipped` says why) and in files
    /// written before the study measured them.
    #[serde(default)]
    pub pages: Option<crate::mem::pages::model::PagesReport>,
    /// Why the curves were not measured (a synthetic report, too little MemAvailable).
    #[serde(default)]
    pub pages_skipped: Option<String>,
}
