//! lockscan's result model: what `--json` prints and the study's report embeds. Renderers
//! read only this.

use super::scenario::Scenario;
use crate::cpuset::CpuSet;
use crate::locks::{LockKind, StatsMode};
use crate::stats::{Ci, Comparison, Summary};
use crate::topology::Proximity;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Bumped when the JSON layout changes incompatibly.
/// 2: `spins`, `spins_per_acquire`, `handoffs_received` and `handoffs_per_sec` are null
/// under `--lock-stats off`; `lock_stats` and per-result `c2c_latency_ns` added.
pub const SCHEMA_VERSION: u32 = 2;

/// What a thread of a scenario does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadRole {
    /// Acquires and releases the global lock in a loop.
    Lock,
    /// Memsets its buffer in a loop.
    Scan,
}

impl ThreadRole {
    pub fn label(self) -> &'static str {
        match self {
            ThreadRole::Lock => "lock",
            ThreadRole::Scan => "scan",
        }
    }
}

impl fmt::Display for ThreadRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One thread's row (medians over repetitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    pub thread: usize,
    /// `lock` or `scan`.
    pub role: ThreadRole,
    /// The CPU the thread was pinned to.
    pub cpu: u32,
    /// The CPUs the thread was seen running on, over all runs (`sched_getcpu` and
    /// `/proc/self/task/TID/stat`); equal to `cpu` when pinning held. Empty for results
    /// that carried no observation (older files, fake runs).
    #[serde(default)]
    pub observed_cpus: CpuSet,
    /// The CPU's core (its SMT sibling set).
    pub core: CpuSet,
    /// A scan thread runs on this thread's core (an SMT sibling or the same CPU).
    pub shares_core_with_scanner: bool,
    /// Acquisitions per second (lock threads) or scan passes per second, median over runs.
    pub ops_per_sec: f64,
    /// Bytes a scan thread wrote per second of its runs, median over runs; None for lock
    /// threads and in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan_bytes_per_sec: Option<f64>,
    /// Spread of `ops_per_sec` over runs.
    pub ops_per_sec_summary: Option<Summary>,
    /// Acquisitions in the measured time of the median run (the original test's `locked`).
    pub locked: u64,
    /// Wait-loop iterations (the original test's `spin`), median run; None with lock stats
    /// off.
    pub spins: Option<u64>,
    /// This thread's share of all acquisitions, 0–1.
    pub share_of_acquisitions: f64,
    pub spins_per_acquire: Option<f64>,
    /// Acquisitions that took the lock from another thread; None with lock stats off.
    pub handoffs_received: Option<u64>,
    /// Handoffs received by the previous owner's proximity (`smt-sibling`, `same-l3`, …);
    /// None with lock stats off and for scan threads.
    pub handoffs_by_proximity: Option<Vec<(Proximity, u64)>>,
    /// Share of its wall time the thread was on a CPU, 0–1.
    pub cpu_share: f64,
    pub involuntary_ctx_switches: u64,
    /// Event counters of this thread in the median run (task-clock, context switches,
    /// migrations, page faults; cycles, instructions, IPC where the PMU counts them);
    /// None with `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
}

impl ThreadRow {
    /// A lock thread (not a scanner).
    pub fn is_lock(&self) -> bool {
        self.role == ThreadRole::Lock
    }
}

/// One scenario with one lock: all its runs summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub lock: LockKind,
    pub runs: usize,
    pub threads: Vec<ThreadRow>,
    /// Total acquisitions per second, over runs.
    pub acquisitions_per_sec: Option<Summary>,
    /// Jain's fairness index over lock threads' acquisition rates (1 = perfectly fair).
    pub jain_index: f64,
    /// Fastest / slowest lock thread.
    pub max_min_ratio: f64,
    /// Handoffs per second (owner changed), median run; None with lock stats off.
    pub handoffs_per_sec: Option<f64>,
    /// The answer to "does a scanner on its core slow a lock thread": per round, the
    /// acquisition rate of the lock threads sharing a core with a scanner ÷ the rate of
    /// the lock threads on the same CPUs in the same round's baseline run (no scanner),
    /// paired, with its interval and three-way class against
    /// [`Thresholds::SLOWDOWN`](crate::stats::Thresholds::SLOWDOWN). None without a
    /// baseline (`--no-baseline`), in the baseline itself, when no lock thread shares a
    /// core with a scanner, and in files written before it existed.
    #[serde(default)]
    pub sharing_vs_own_baseline: Option<Comparison>,
    /// The per-round ratios behind `sharing_vs_own_baseline`, in round order: what a
    /// summary over many scenarios needs to widen the interval of the worst one.
    #[serde(default)]
    pub sharing_ratios: Vec<f64>,
    /// Median acquisition rate of scanner-sharing lock threads ÷ the other lock threads of
    /// the same runs, with a bootstrap CI over runs; None when one group is empty. Kept for
    /// comparison only: an unfair lock (TTAS) favours threads by position and package even
    /// without a scanner, so this ratio can sit far from 1 with nothing on the core —
    /// `sharing_vs_own_baseline` is the comparison to judge by.
    pub sharing_vs_others: Option<Ci>,
    /// Median acquisition rate of lock threads not sharing a core with a scanner ÷ the
    /// same threads in the baseline scenario (cross-core interference); None without one.
    pub cross_core_vs_baseline: Option<Ci>,
    /// Per round, the lock threads on other cores than any scanner ÷ the same threads in
    /// the same round's baseline run, in round order; empty without a baseline or such
    /// threads, and in files written before it existed.
    #[serde(default)]
    pub cross_core_ratios: Vec<f64>,
    /// `cross_core_ratios` as a paired comparison against
    /// [`Thresholds::SLOWDOWN`](crate::stats::Thresholds::SLOWDOWN).
    #[serde(default)]
    pub cross_core_vs_own_baseline: Option<Comparison>,
    /// Per round, the scanner-sharing threads' ratio ÷ the other-core threads' ratio of the
    /// same runs (`analysis::sharing_vs_cross_core_ratios`).
    #[serde(default)]
    pub sharing_vs_cross_core_ratios: Vec<f64>,
    /// The control that lets a sibling loss be put down to sharing the core: the
    /// scanner-sharing threads against the threads on other cores, paired by round. A loss
    /// or small loss here means the sharing thread lost more than the others; anything else
    /// means the scanner's effect was not specific to the shared core.
    #[serde(default)]
    pub sharing_vs_cross_core: Option<Comparison>,
    /// Per run, in round order, the bytes per second written by the scan threads that
    /// share a core with a lock thread (summed). Empty without such scanners and in files
    /// written before the scanner's progress was recorded.
    #[serde(default)]
    pub scan_bytes_per_sec: Vec<f64>,
    /// Per round, the same scanners in that round's run with their cores' lock threads
    /// left out (the scanner one per core; the lock threads on other cores still run):
    /// the scanner's one-per-core rate.
    #[serde(default)]
    pub scan_alone_bytes_per_sec: Vec<f64>,
    /// Per round, `scan_bytes_per_sec` ÷ `scan_alone_bytes_per_sec`: what sharing the core
    /// with a lock thread cost the scanner.
    #[serde(default)]
    pub scan_ratios: Vec<f64>,
    /// Per round, the core's combined progress against one thread per core: the
    /// scanner-sharing lock threads' rate ÷ their own baseline plus the scanners' rate ÷
    /// their own one-per-core run. Above 1 the shared core did more work than either
    /// thread alone on it would have (as an SMT yield); rounds missing either part give
    /// none.
    #[serde(default)]
    pub core_yield_ratios: Vec<f64>,
    /// `core_yield_ratios` as a paired comparison against
    /// [`Thresholds::YIELD`](crate::stats::Thresholds::YIELD): what the row for locks
    /// beside scans answers from.
    #[serde(default)]
    pub core_yield: Option<Comparison>,
    /// One-way cache-line latency the median run's handoffs met, ns: the latencies of
    /// `c2c_latency_by_proximity` weighted by the handoffs between CPUs of each class
    /// ([`super::handoff_latency_ns`]); None with one lock CPU or a synthetic run.
    #[serde(default)]
    pub c2c_latency_ns: Option<f64>,
    /// c2c latency of one pair of lock CPUs per proximity class, measured just before the
    /// median run, ns.
    #[serde(default)]
    pub c2c_latency_by_proximity: Vec<(Proximity, f64)>,
    /// Handoffs per second as a share of the cache-line ceiling 1/`c2c_latency_ns` (k = 1):
    /// the share of the run's time the lock line spent moving. None when either is unknown.
    pub handoffs_share_of_ceiling: Option<f64>,
    /// Pinning held in every run.
    pub pinning_ok: bool,
    /// The largest hypervisor steal on the run's CPUs over its runs, 0–1; None where not
    /// measured (the fake engine, no steal field, older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_share: Option<f64>,
    /// Ctrl-C cut the runs short.
    pub interrupted: bool,
    /// Each core's CPI beside its threads' in the median run; empty when no thread
    /// counted cycles and instructions (see the report's `counters`).
    #[serde(default)]
    pub core_cpi: Vec<crate::counters::CoreCpi>,
    /// The rounds left out of this scenario's paired comparisons (own baseline, the
    /// cross-core control, the core's combined progress) because one of their runs was
    /// disturbed while it ran, each with its reason; empty when none was and in files
    /// written before rounds were checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed_rounds: Vec<DisturbedRound>,
}

/// Which of a round's runs was disturbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DisturbedRun {
    /// The scenario's own run.
    Scenario,
    /// The same round's run of the baseline (no scanner) its lock threads are paired with.
    Baseline,
    /// The same round's run of its scanners one per core (their cores' lock threads left
    /// out).
    ScannersAlone,
}

impl fmt::Display for DisturbedRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DisturbedRun::Scenario => "its own run",
            DisturbedRun::Baseline => "the baseline's run",
            DisturbedRun::ScannersAlone => "the scanners' one-per-core run",
        })
    }
}

/// A round left out of a scenario's paired comparisons: another task, or the hypervisor,
/// took CPU time from a measured thread of one of its runs (`engine::disturbance`), which
/// can only slow that run and so biases a ratio one way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisturbedRound {
    /// From 0, as the runs are numbered.
    pub round: usize,
    pub run: DisturbedRun,
    pub why: String,
}

impl fmt::Display for DisturbedRound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "round {}, {}: {}", self.round + 1, self.run, self.why)
    }
}

/// The whole lockscan result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockscanReport {
    pub schema_version: u32,
    /// SMT siblings were visible, so sibling cases could run.
    pub smt: bool,
    pub hypervisor: bool,
    pub cs_ns: u64,
    pub scan_bytes: usize,
    /// The largest L2 among the scan threads' CPUs, when the machine reports it: a buffer
    /// no larger stays in the scanner's own core.
    #[serde(default)]
    pub scan_l2_bytes: Option<u64>,
    pub duration_ns: u64,
    pub repeat: usize,
    /// What the locks recorded (`counters` or `off`).
    #[serde(default)]
    pub lock_stats: StatsMode,
    /// The first result's `c2c_latency_ns`: the physical limit on handoffs.
    pub c2c_latency_ns: Option<f64>,
    /// The unit the sweep stayed inside (`--within`); None for the other layouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::placement::ScopeUnit>,
    pub results: Vec<ScenarioResult>,
    /// Plain-words conclusion.
    pub verdict: Vec<String>,
    /// What could not be measured here, and why (`Note`s, and the user's own).
    pub notes: Vec<String>,
    /// The event counters' mode and every event not counted, with the reason; None with
    /// `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
}

// ---------------------------------------------------------------------------------------
// The study's section: what results.json keeps under `lockscan`.

/// `lockscan` as the study ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockscanSection {
    /// `sweep`: one scenario per scanner position, plus a baseline without scanner.
    pub layout: String,
    pub locks: Vec<crate::locks::LockKind>,
    /// Discarded warm-up per run, ns.
    pub warmup_ns: u64,
    /// Measured time per run, ns.
    pub duration_ns: u64,
    pub result: LockscanReport,
}

/// What a lockscan run could not show or may have distorted, and why; kept in
/// [`LockscanReport::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// The steal-time warning of the look at the CPUs.
    Steal(String),
    /// The scan buffer fits in the scanner's L2.
    ScanFitsL2 { scan_bytes: u64, l2_bytes: u64 },
    /// The machine reports no L2 size for the scanners' CPUs.
    NoL2Size { scan_bytes: u64 },
    /// These runs (`lock / scenario`) handed the line off faster than the c2c ceiling
    /// measured just before them.
    AboveCeiling { runs: Vec<String>, hypervisor: bool },
    /// No SMT siblings: the sibling case could not be run.
    NoSiblings,
    /// A caveat several commands attach (hypervisor).
    Caveat(crate::render::Caveat),
    /// Lock statistics were counted around a critical section this short.
    StatsCost { cs_ns: u64 },
    /// `--lock-stats off`.
    StatsOff,
    /// Rounds left out of the paired comparisons because a run of theirs was disturbed
    /// while it ran: per scenario (`lock / scenario`), its rounds; `again` rounds were run
    /// at the end in their place.
    Disturbed {
        scenarios: Vec<(String, Vec<DisturbedRound>)>,
        again: usize,
    },
    /// Any other text.
    Other(String),
}

/// How [`Note::AboveCeiling`]'s sentence begins (views place it under their table).
pub const ABOVE_CEILING: &str = "handoffs above the c2c ceiling";

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::render::bytes;
        match self {
            Note::Steal(s) | Note::Other(s) => f.write_str(s),
            Note::ScanFitsL2 {
                scan_bytes,
                l2_bytes,
            } => write!(
                f,
                "the {} scan buffer fits in the scanner's {} L2: its passes stay inside its own \
                 core, so only what the siblings share inside the core is exercised, not the L3 \
                 or memory path; `--scan-bytes auto` streams past the L2",
                bytes(*scan_bytes),
                bytes(*l2_bytes)
            ),
            Note::NoL2Size { scan_bytes } => write!(
                f,
                "this machine reports no L2 size for the scanners' CPUs, so whether the {} scan \
                 buffer streams past the scanner's L2 is not known",
                bytes(*scan_bytes)
            ),
            Note::AboveCeiling { runs, hypervisor } => {
                let why = if *hypervisor {
                    "the line moved faster during the run than just before it, as when a host \
                     moves vCPUs onto SMT siblings of one core"
                } else {
                    "the ceiling comes from one pair of CPUs per proximity class, and other pairs \
                     of a class can be faster"
                };
                write!(
                    f,
                    "{ABOVE_CEILING} measured just before the run ({}): {why}",
                    runs.join(", ")
                )
            }
            // The case the experiment comes from: in SQL Server's "To Hyper or not to Hyper"
            // test (Slava Oks, 2005) the lock thread beside a scanner on one Hyper-Threading
            // core took about 700,000 acquisitions while the others took about 10 million.
            Note::NoSiblings => f.write_str(
                "no SMT siblings on this machine: the sibling case (a lock thread whose SMT \
                 sibling scans memory, about 10× fewer acquisitions in SQL Server's 2005 \
                 \"To Hyper or not to Hyper\" test) could not be run here; shown instead: a \
                 scanner time-sharing a lock thread's CPU, and lock threads on other cores \
                 (cross-core)",
            ),
            Note::Caveat(c) => fmt::Display::fmt(c, f),
            Note::StatsCost { cs_ns } => write!(
                f,
                "lock stats cost: counting spins and handoffs adds a few ns to every \
                 acquisition, which with a {cs_ns} ns critical section can be tens of percent of \
                 the absolute rate; every thread pays it, so ratios compare like with like; \
                 `smtlab lockscan --lock-stats off` runs the bare lock (README: measured cost)"
            ),
            Note::Disturbed { scenarios, again } => {
                f.write_str(
                    "rounds disturbed while they ran (another task or the hypervisor took CPU \
                     time from a measured thread, which can only slow a run), left out of the \
                     paired comparisons: ",
                )?;
                for (i, (label, rounds)) in scenarios.iter().enumerate() {
                    let numbers: Vec<String> =
                        rounds.iter().map(|r| (r.round + 1).to_string()).collect();
                    write!(
                        f,
                        "{}{label}: {} {} (first: {})",
                        if i > 0 { "; " } else { "" },
                        if rounds.len() == 1 { "round" } else { "rounds" },
                        numbers.join(", "),
                        rounds[0]
                    )?;
                }
                if *again > 0 {
                    write!(
                        f,
                        "; {again} more {} run at the end in their place",
                        if *again == 1 {
                            "round was"
                        } else {
                            "rounds were"
                        }
                    )?;
                }
                Ok(())
            }
            Note::StatsOff => f.write_str(
                "lock stats off: the bare lock algorithms ran; acquisitions are the workload's \
                 own count, and spins and handoffs were not recorded",
            ),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_serialise_as_before() {
        assert_eq!(
            serde_json::to_string(&ThreadRole::Lock).unwrap(),
            "\"lock\""
        );
        assert_eq!(
            serde_json::to_string(&ThreadRole::Scan).unwrap(),
            "\"scan\""
        );
        let r: ThreadRole = serde_json::from_str("\"scan\"").unwrap();
        assert_eq!(r, ThreadRole::Scan);
        assert_eq!(ThreadRole::Lock.to_string(), "lock");
    }
}
