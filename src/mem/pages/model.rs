//! `mem pages`' one serde model: the curves per page size, first-touch cost, the TLB
//! table, where the curves bend and where 4 KiB pages fall behind huge pages.

use super::buffer::PageKind;
use super::reserve::PoolChange;
use crate::mem::tlb::TlbInfo;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// Everything `mem pages` measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PagesReport {
    /// The largest working set, bytes.
    pub max_bytes: u64,
    /// Measured samples per working set and page size (after one discarded warm-up).
    pub repeat: usize,
    /// Time each latency sample ran, ns.
    pub chase_sample_ns: u64,
    /// Time each bandwidth sample ran, ns.
    pub bandwidth_sample_ns: u64,
    /// Seed of the random cycle.
    pub seed: u64,
    /// THP `enabled` when the run started.
    pub thp_enabled: Option<String>,
    /// One entry per page size: measured, or skipped with the reason.
    pub kinds: Vec<KindResult>,
    /// This CPU's TLBs from CPUID.
    pub tlb: TlbInfo,
    /// Data cache sizes of the CPU the run started on (L1d, L2, L3), bytes.
    pub caches: Vec<CacheMark>,
    /// Where the 4 KiB curve leaves the huge-page one for good; None when it does not
    /// within the sizes measured, or when no huge-page curve was measured.
    pub departure: Option<Departure>,
    /// hugetlb pools raised for the run with `--reserve`, and put back.
    pub reserved: Vec<PoolChange>,
    /// Ctrl-C (or SIGTERM/SIGHUP) ended the run early; what finished is kept.
    pub interrupted: bool,
    /// What the reader should know: the `--note` given, pools put back after a crash, and
    /// [`Note`]s.
    pub notes: Vec<String>,
}

/// What a `mem pages` run tells its reader besides its curves; kept in
/// [`PagesReport::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// A caveat several commands attach (debug build).
    Caveat(crate::render::Caveat),
    /// Under a hypervisor a TLB miss walks the guest's and the host's page tables.
    TwoLevelWalk,
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Caveat(c) => std::fmt::Display::fmt(c, f),
            Note::TwoLevelWalk => f.write_str(
                "running under a hypervisor: a TLB miss walks two sets of page tables (the \
                 guest's and the host's), so 4 KiB pages cost more here than on bare metal, and \
                 the host's own page size decides part of the result",
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

/// One page size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindResult {
    pub kind: PageKind,
    /// Why it was not measured (no pages reserved, THP off, …); None when measured.
    pub skipped: Option<String>,
    /// What backed the buffer, from /proc/self/smaps.
    pub backing: Option<BackingSummary>,
    /// One point per working set, smallest first.
    pub points: Vec<Point>,
    /// Cost of faulting fresh memory in.
    pub first_touch: Option<FirstTouch>,
    /// Working sets where latency stepped up by [`super::analysis::BEND_RATIO`] or more over
    /// the size before.
    pub bends: Vec<Bend>,
}

/// What backed the measured buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackingSummary {
    pub buffer_bytes: u64,
    /// Bytes backed by transparent huge pages (`AnonHugePages`).
    pub thp_bytes: u64,
    /// `KernelPageSize` of the mapping.
    pub kernel_page_bytes: u64,
    /// One sentence: "THP granted for 100% of the buffer", …
    pub sentence: String,
}

/// One working set under one page size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub working_set_bytes: u64,
    /// Dependent-load latency, ns per load.
    pub latency_ns: Summary,
    /// Sequential read bandwidth.
    pub bandwidth_bytes_per_sec: Summary,
}

/// Faulting fresh memory in: one write per 4 KiB of a new mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirstTouch {
    /// Size of each fresh mapping, bytes.
    pub bytes: u64,
    /// Page faults the kernel counted per mapping (median).
    pub faults: u64,
    /// ns per fault: the cost of one page of this size.
    pub ns_per_fault: Summary,
    /// ns per MiB touched: comparable across page sizes.
    pub ns_per_mib: Summary,
}

/// A step up in a latency curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bend {
    /// The first working set after the step.
    pub working_set_bytes: u64,
    /// The last working set of the climb: consecutive steps of ≥ 25 % are one bend, from
    /// the set before the first to this one (equal to `working_set_bytes` for a single
    /// step; 0 in older files).
    #[serde(default)]
    pub last_working_set_bytes: u64,
    /// Median latency before the climb and at its last working set, ns.
    pub from_ns: f64,
    pub to_ns: f64,
    /// A capacity just below it that likely explains it (`L2 1 MiB`, `L2 TLB reach 512 KiB`).
    pub near: Option<String>,
}

/// A data cache's capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheMark {
    /// `L1d`, `L2`, `L3`.
    pub name: String,
    pub size_bytes: u64,
}

/// Where 4 KiB pages start costing more than huge pages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Departure {
    /// The huge-page curve compared with (`thp`, or `hugetlb-2m` when THP was not granted).
    pub reference: PageKind,
    /// The first working set from which every larger one is slower with 4 KiB pages.
    pub working_set_bytes: u64,
    pub latency_4k_ns: f64,
    pub latency_ref_ns: f64,
    /// At the largest working set: 4 KiB latency ÷ the reference's.
    pub ratio_at_max: f64,
    /// The 4 KiB data TLB reach just below it, when CPUID gave one.
    pub tlb_reach_bytes: Option<u64>,
    /// Working sets from it to the largest, all slower with 4 KiB pages; 1 means only the
    /// largest was, which a larger `--max` may or may not confirm (0 in older files).
    #[serde(default)]
    pub working_sets: usize,
}
