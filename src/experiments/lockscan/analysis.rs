//! From runs to a scenario's summary: per-thread medians, fairness, the sharing and
//! cross-core ratios with their bootstrap intervals, and the handoff ceiling. Pure.
//!
//! The sharing ratio that answers the question pairs each lock thread beside a scanner
//! with *itself* without one: the same CPU, in the baseline run of the same round. An
//! unfair lock splits acquisitions by position even with no scanner at all (TTAS lets the
//! thread nearest the last holder win again: Radovic and Hagersten, "Hierarchical
//! Backoff Locks for Nonuniform Communication Architectures", HPCA 2003), so comparing
//! with the other lock threads of the same run measures that unfairness as well.

use super::model::{DisturbedRound, DisturbedRun, ScenarioResult, ThreadRole, ThreadRow};
use super::scenario::Scenario;
use crate::cpuset::CpuSet;
use crate::engine::RunResult;
use crate::locks::{LockKind, StatsMode, ThreadStats};
use crate::stats::{self, Comparison, Summary, Thresholds};
use crate::topology::{Proximity, Topology};

/// One run of one (scenario, lock) trial.
#[derive(Debug, Clone)]
pub struct Run {
    pub result: RunResult,
    /// Each lock thread's lock stats.
    pub stats: Vec<ThreadStats>,
    /// One-way c2c latency per proximity class among the lock CPUs, just before the run.
    pub latencies: Vec<(Proximity, f64)>,
    /// Bytes each scan thread (in `scan_cpus` order) wrote in the measured time: counted
    /// by the workload, or passes × buffer size where it did not run (the fake engine).
    pub scanned: Vec<u64>,
    /// Why the run was disturbed while it ran (`engine::disturbance::of_run`); None when
    /// its records show nothing. Its round is left out of every paired comparison: the
    /// disturbance can only slow the run, so keeping it biases the ratio one way.
    pub disturbed: Option<String>,
}

/// Per round, the first disturbed run among the scenario's (`runs[r]`), its baseline's
/// and its scanners' one-per-core run of the same round: the rounds the paired
/// comparisons leave out, with why.
pub fn disturbed_rounds(
    runs: &[Run],
    baseline: Option<&[Run]>,
    alone: Option<&[Run]>,
) -> Vec<DisturbedRound> {
    let at = |v: Option<&[Run]>, r: usize| v.and_then(|v| v.get(r)?.disturbed.clone());
    (0..runs.len())
        .filter_map(|r| {
            let (run, why) = [
                (DisturbedRun::Scenario, runs[r].disturbed.clone()),
                (DisturbedRun::Baseline, at(baseline, r)),
                (DisturbedRun::ScannersAlone, at(alone, r)),
            ]
            .into_iter()
            .find_map(|(k, w)| Some((k, w?)))?;
            Some(DisturbedRound { round: r, run, why })
        })
        .collect()
}

/// The one-way latency a run's handoffs met on average: each class's latency weighted by
/// the handoffs between CPUs of that class. A run whose handoffs all stayed on one CPU
/// (time-sharing threads: no line moves) or had none gets the nearest class measured.
pub fn handoff_latency_ns(
    handoffs: &[(Proximity, u64)],
    latencies: &[(Proximity, f64)],
) -> Option<f64> {
    let (mut ns, mut n) = (0.0, 0u64);
    for (p, h) in handoffs {
        if let Some((_, l)) = latencies.iter().find(|(q, _)| q == p) {
            ns += *h as f64 * l;
            n += h;
        }
    }
    if n > 0 {
        Some(ns / n as f64)
    } else {
        latencies.iter().min_by_key(|(p, _)| *p).map(|(_, l)| *l)
    }
}

/// Per-run acquisition rate of each lock thread.
fn lock_rates(r: &RunResult, lock_threads: usize) -> Vec<f64> {
    r.threads
        .iter()
        .take(lock_threads)
        .map(|t| t.ops_per_sec(r.measured_ns))
        .collect()
}

/// The index of the value nearest the median (the first of equals); 0 for none. The run
/// it picks represents the counts (locked, spins), which have no meaningful median.
fn nearest_median(values: &[f64]) -> usize {
    let med = stats::median(values);
    values
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 - med).abs().total_cmp(&(b.1 - med).abs()))
        .map(|(i, _)| i)
        .unwrap_or(0)
}

/// Mean rate of the lock threads whose `sharing` flag equals `want`; None when there are
/// none.
fn group_mean(rates: &[f64], sharing: &[bool], want: bool) -> Option<f64> {
    let v: Vec<f64> = rates
        .iter()
        .zip(sharing)
        .filter(|(_, s)| **s == want)
        .map(|(x, _)| *x)
        .collect();
    (!v.is_empty()).then(|| stats::mean(&v))
}

/// Adds `n` handoffs of class `p` to per-class sums kept in first-seen order.
fn add_to_class(sums: &mut Vec<(Proximity, u64)>, p: Proximity, n: u64) {
    match sums.iter_mut().find(|(q, _)| *q == p) {
        Some((_, m)) => *m += n,
        None => sums.push((p, n)),
    }
}

/// Handoffs lock thread `st` on `cpu` received, by the proximity of the previous owner's
/// CPU; owners that are not lock threads are left out. Sorted by class.
fn handoffs_by_proximity(
    topo: &Topology,
    lock_cpus: &[u32],
    cpu: u32,
    st: &ThreadStats,
) -> Vec<(Proximity, u64)> {
    let mut by = Vec::new();
    for (prev, &n) in st.handoffs_from.iter().enumerate() {
        if n == 0 || prev >= lock_cpus.len() {
            continue;
        }
        add_to_class(&mut by, topo.proximity(lock_cpus[prev], cpu), n);
    }
    by.sort();
    by
}

/// Per round, the summed acquisition rate of the lock threads flagged in `sharing` ÷ the
/// summed rate of the baseline's lock threads on the same CPUs in the same round (`runs[r]`
/// and `base_runs[r]` ran in round r). Rounds whose baseline acquired nothing, or either
/// of whose runs was disturbed, give no ratio; empty when no thread is flagged or a flagged
/// thread's CPU has no lock thread in the baseline.
pub fn own_baseline_ratios(
    s: &Scenario,
    sharing: &[bool],
    runs: &[Run],
    base: &Scenario,
    base_runs: &[Run],
) -> Vec<f64> {
    per_round_ratios(s, sharing, runs, base, base_runs)
        .into_iter()
        .flatten()
        .collect()
}

/// [`own_baseline_ratios`] with a slot per round (None where the round gives no ratio),
/// so that two groups of the same runs can be paired round by round.
fn per_round_ratios(
    s: &Scenario,
    flagged: &[bool],
    runs: &[Run],
    base: &Scenario,
    base_runs: &[Run],
) -> Vec<Option<f64>> {
    let mut pairs = Vec::new();
    for (i, &cpu) in s.lock_cpus.iter().enumerate() {
        if !flagged.get(i).copied().unwrap_or(false) {
            continue;
        }
        match base.lock_cpus.iter().position(|&c| c == cpu) {
            Some(j) => pairs.push((i, j)),
            None => return Vec::new(),
        }
    }
    if pairs.is_empty() {
        return Vec::new();
    }
    let rate = |r: &Run, i: usize| {
        r.result
            .threads
            .get(i)
            .map_or(0.0, |t| t.ops_per_sec(r.result.measured_ns))
    };
    runs.iter()
        .zip(base_runs)
        .map(|(a, b)| {
            let num: f64 = pairs.iter().map(|&(i, _)| rate(a, i)).sum();
            let den: f64 = pairs.iter().map(|&(_, j)| rate(b, j)).sum();
            let x = num / den;
            let clean = a.disturbed.is_none() && b.disturbed.is_none();
            (clean && den > 0.0 && x.is_finite()).then_some(x)
        })
        .collect()
}

/// The control for a sibling loss, per round: (the scanner-sharing lock threads' ratio to
/// their own baseline) ÷ (the lock threads on other cores' ratio to theirs), from the same
/// runs. Below 1, the thread beside the scanner lost more than threads elsewhere; near 1,
/// whatever the scanner did (memory bandwidth, the lock's own cache line, the frequency)
/// hit every core alike and sharing the core is not shown to matter. Empty when either
/// group is empty.
pub fn sharing_vs_cross_core_ratios(
    s: &Scenario,
    sharing: &[bool],
    runs: &[Run],
    base: &Scenario,
    base_runs: &[Run],
) -> (Vec<f64>, Vec<f64>) {
    let others: Vec<bool> = sharing.iter().map(|x| !x).collect();
    let own = per_round_ratios(s, sharing, runs, base, base_runs);
    let cross = per_round_ratios(s, &others, runs, base, base_runs);
    let did = if own.is_empty() || cross.is_empty() {
        Vec::new()
    } else {
        own.iter()
            .zip(&cross)
            .filter_map(|(a, b)| Some((*a)? / (*b)?))
            .filter(|x| x.is_finite())
            .collect()
    };
    (cross.into_iter().flatten().collect(), did)
}

/// Bytes per second of scan threads `scanners` (indices into `scan_cpus`), summed, per
/// run; None for a run with no measured time.
fn scan_rates(runs: &[Run], scanners: &[usize]) -> Vec<Option<f64>> {
    runs.iter()
        .map(|r| {
            let secs = r.result.measured_ns as f64 / 1e9;
            let bytes: u64 = scanners
                .iter()
                .map(|&j| r.scanned.get(j).copied().unwrap_or(0))
                .sum();
            (secs > 0.0).then(|| bytes as f64 / secs)
        })
        .collect()
}

/// The core's combined progress beside a scanner, per round: what
/// [`ScenarioResult::core_yield`] and its neighbours hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CoreProgress {
    pub scan_bytes_per_sec: Vec<f64>,
    pub scan_alone_bytes_per_sec: Vec<f64>,
    pub scan_ratios: Vec<f64>,
    pub core_yield_ratios: Vec<f64>,
    pub core_yield: Option<Comparison>,
}

/// The shared cores' combined progress, per round: the lock threads beside a scanner
/// against their own baseline (`baseline`, the round's run without scanners) plus the
/// scanners beside them against `idle`, the round's run of the same scanners with their
/// cores' lock threads left out. Each thread measured against itself one per core, the
/// sum is the core's work with both siblings busy ÷ the work of one thread on it, as an
/// SMT yield counts it (all ÷ one-per-core on the same cores). Two siblings at 0.625×
/// each make a yield of 1.25: each lost, the core gained.
pub fn core_progress(
    topo: &Topology,
    s: &Scenario,
    runs: &[Run],
    baseline: Option<(&Scenario, &[Run])>,
    idle: Option<&[Run]>,
) -> CoreProgress {
    let scan: CpuSet = s.scan_cpus.iter().copied().collect();
    let lock_cores = s
        .lock_cpus
        .iter()
        .fold(CpuSet::new(), |a, &c| a.union(&topo.core_of(c)));
    let sharing: Vec<bool> = s
        .lock_cpus
        .iter()
        .map(|&c| topo.core_of(c).intersects(&scan))
        .collect();
    let beside: Vec<usize> = s
        .scan_cpus
        .iter()
        .enumerate()
        .filter(|(_, c)| lock_cores.contains(**c))
        .map(|(j, _)| j)
        .collect();
    if beside.is_empty() {
        return CoreProgress::default();
    }
    let shared = scan_rates(runs, &beside);
    let scan_bytes_per_sec: Vec<f64> = shared.iter().flatten().copied().collect();
    let Some(idle) = idle else {
        return CoreProgress {
            scan_bytes_per_sec,
            ..CoreProgress::default()
        };
    };
    let alone = scan_rates(idle, &beside);
    let scan_slots: Vec<Option<f64>> = shared
        .iter()
        .zip(&alone)
        .zip(runs.iter().zip(idle))
        .map(|((a, b), (r, i))| {
            if r.disturbed.is_some() || i.disturbed.is_some() {
                return None;
            }
            let x = (*a)? / (*b)?;
            (x.is_finite() && x >= 0.0).then_some(x)
        })
        .collect();
    let lock_slots = match baseline {
        Some((bs, br)) => per_round_ratios(s, &sharing, runs, bs, br),
        None => Vec::new(),
    };
    let core_yield_ratios: Vec<f64> = lock_slots
        .iter()
        .zip(&scan_slots)
        .filter_map(|(l, sc)| Some((*l)? + (*sc)?))
        .collect();
    CoreProgress {
        scan_bytes_per_sec,
        scan_alone_bytes_per_sec: alone.into_iter().flatten().collect(),
        scan_ratios: scan_slots.into_iter().flatten().collect(),
        core_yield: Comparison::of_paired_ratios(&core_yield_ratios, Thresholds::YIELD, 0.95),
        core_yield_ratios,
    }
}

/// Summarises every run of one (scenario, lock) trial; `baseline` holds the scenario
/// without scanners and its runs of the same lock, round by round, when there is one.
pub fn summarise(
    topo: &Topology,
    s: &Scenario,
    kind: LockKind,
    runs: &[Run],
    baseline: Option<(&Scenario, &[Run])>,
    lock_stats: StatsMode,
    interrupted: bool,
) -> ScenarioResult {
    let nl = s.lock_cpus.len();
    let scan: CpuSet = s.scan_cpus.iter().copied().collect();
    // Per thread in plan order (lock threads, then scan threads): a scanner on its core.
    let sharing: Vec<bool> = s
        .lock_cpus
        .iter()
        .chain(&s.scan_cpus)
        .map(|&c| topo.core_of(c).intersects(&scan))
        .collect();
    let totals: Vec<f64> = runs
        .iter()
        .map(|r| lock_rates(&r.result, nl).iter().sum())
        .collect();
    let mid = nearest_median(&totals);
    let rows = thread_rows(topo, s, runs, mid, lock_stats != StatsMode::Off, &sharing);
    let med_rates: Vec<f64> = rows.iter().take(nl).map(|r| r.ops_per_sec).collect();
    // Per run: mean rate of the sharing lock threads and of the others.
    let lock_sharing = &sharing[..nl];
    let group = |r: &Run, want: bool| group_mean(&lock_rates(&r.result, nl), lock_sharing, want);
    // Disturbed runs are left out of the comparisons over runs as of the paired ones.
    let clean = |r: &&Run| r.disturbed.is_none();
    let a: Vec<f64> = runs
        .iter()
        .filter(clean)
        .filter_map(|r| group(r, true))
        .collect();
    let b: Vec<f64> = runs
        .iter()
        .filter(clean)
        .filter_map(|r| group(r, false))
        .collect();
    let sharing_vs_others = stats::bootstrap_ratio_of_medians(&a, &b, 0.95, 2000, 42);
    let sharing_ratios = match baseline {
        Some((bs, br)) if !s.scan_cpus.is_empty() => {
            own_baseline_ratios(s, lock_sharing, runs, bs, br)
        }
        _ => Vec::new(),
    };
    let sharing_vs_own_baseline =
        Comparison::of_paired_ratios(&sharing_ratios, Thresholds::SLOWDOWN, 0.95);
    let (cross_core_ratios, sharing_vs_cross_core_ratios) = match baseline {
        Some((bs, br)) if !s.scan_cpus.is_empty() => {
            sharing_vs_cross_core_ratios(s, lock_sharing, runs, bs, br)
        }
        _ => (Vec::new(), Vec::new()),
    };
    let cross_core_vs_own_baseline =
        Comparison::of_paired_ratios(&cross_core_ratios, Thresholds::SLOWDOWN, 0.95);
    let sharing_vs_cross_core =
        Comparison::of_paired_ratios(&sharing_vs_cross_core_ratios, Thresholds::SLOWDOWN, 0.95);
    let cross_core_vs_baseline = baseline.map(|(_, br)| br).and_then(|base| {
        let base_rates: Vec<f64> = base
            .iter()
            .filter(clean)
            .filter_map(|r| group(r, false))
            .collect();
        stats::bootstrap_ratio_of_medians(&b, &base_rates, 0.95, 2000, 43)
    });
    let median_run = &runs[mid];
    let handoffs: u64 = median_run.stats.iter().map(|t| t.counts.handoffs).sum();
    let secs = median_run.result.measured_ns.max(1) as f64 / 1e9;
    let handoffs_per_sec = (lock_stats != StatsMode::Off).then(|| handoffs as f64 / secs);
    // The median run's handoffs against the latencies measured just before that run.
    let mut by_class: Vec<(Proximity, u64)> = Vec::new();
    for (p, h) in rows
        .iter()
        .filter_map(|r| r.handoffs_by_proximity.as_ref())
        .flatten()
    {
        add_to_class(&mut by_class, *p, *h);
    }
    let c2c_latency_ns = handoff_latency_ns(&by_class, &median_run.latencies);
    ScenarioResult {
        scenario: s.clone(),
        lock: kind,
        runs: runs.len(),
        threads: rows,
        acquisitions_per_sec: Summary::of(&totals),
        jain_index: stats::jain(&med_rates),
        max_min_ratio: stats::max_min_ratio(&med_rates),
        handoffs_per_sec,
        c2c_latency_ns,
        c2c_latency_by_proximity: median_run.latencies.clone(),
        handoffs_share_of_ceiling: handoffs_per_sec
            .zip(c2c_latency_ns)
            .map(|(h, l)| crate::experiments::c2c::share_of_ceiling(h, l)),
        sharing_vs_own_baseline,
        sharing_ratios,
        sharing_vs_others,
        cross_core_vs_baseline,
        cross_core_ratios,
        cross_core_vs_own_baseline,
        sharing_vs_cross_core_ratios,
        sharing_vs_cross_core,
        scan_bytes_per_sec: Vec::new(),
        scan_alone_bytes_per_sec: Vec::new(),
        scan_ratios: Vec::new(),
        core_yield_ratios: Vec::new(),
        core_yield: None,
        pinning_ok: runs.iter().all(|r| r.result.pinning_ok()),
        steal_share: runs
            .iter()
            .filter_map(|r| r.result.steal_share)
            .reduce(f64::max),
        interrupted,
        core_cpi: crate::counters::per_core(rows_counts(s, topo, &median_run.result)),
        disturbed_rounds: disturbed_rounds(runs, baseline.map(|(_, br)| br), None),
    }
}

/// (thread, CPU, core, counts) of every thread of a run that counted, for the per-core
/// CPI table.
fn rows_counts<'a>(
    s: &'a Scenario,
    topo: &'a Topology,
    r: &'a RunResult,
) -> impl Iterator<Item = (usize, u32, CpuSet, &'a crate::counters::Counts)> + 'a {
    s.lock_cpus
        .iter()
        .chain(&s.scan_cpus)
        .enumerate()
        .filter_map(move |(i, &cpu)| {
            let c = &r.threads.get(i)?.counters.as_ref()?.counts;
            Some((i, cpu, topo.core_of(cpu), c))
        })
}

/// One row per thread: rates as medians over the runs, counts from run `mid`.
fn thread_rows(
    topo: &Topology,
    s: &Scenario,
    runs: &[Run],
    mid: usize,
    counted: bool,
    sharing: &[bool],
) -> Vec<ThreadRow> {
    let nl = s.lock_cpus.len();
    let (mr, ms) = (&runs[mid].result, &runs[mid].stats);
    // Acquisitions as the lock counted them, or (stats off) as the workload did. Both count
    // every release; their windows start and end a few µs apart (≈ 0.01 % here), and the
    // workload's count misses its last batch (< 64 acquisitions, only below 100 ns).
    let locked_of = |i: usize| {
        if counted {
            ms[i].counts.acquisitions
        } else {
            mr.threads[i].ops
        }
    };
    let total_locked: u64 = (0..nl).map(locked_of).sum();
    let cpus = s.lock_cpus.iter().chain(&s.scan_cpus);
    let mut rows = Vec::new();
    for (i, &cpu) in cpus.enumerate() {
        let per_run: Vec<f64> = runs
            .iter()
            .map(|r| r.result.threads[i].ops_per_sec(r.result.measured_ns))
            .collect();
        let tr = &mr.threads[i];
        let lock = i < nl;
        let (locked, spins, handoffs, by) = if lock {
            let st = &ms[i];
            (
                locked_of(i),
                counted.then_some(st.counts.spins),
                counted.then_some(st.counts.handoffs),
                handoffs_by_proximity(topo, &s.lock_cpus, cpu, st),
            )
        } else {
            (0, None, None, Vec::new())
        };
        rows.push(ThreadRow {
            thread: i,
            role: if lock {
                ThreadRole::Lock
            } else {
                ThreadRole::Scan
            },
            cpu,
            observed_cpus: runs.iter().fold(CpuSet::new(), |a, r| {
                a.union(&r.result.threads[i].observed_cpus)
            }),
            core: topo.core_of(cpu),
            shares_core_with_scanner: lock && sharing[i],
            ops_per_sec: stats::median(&per_run),
            scan_bytes_per_sec: (!lock).then(|| {
                let j = i - nl;
                let per_run: Vec<f64> = runs
                    .iter()
                    .map(|r| {
                        let secs = r.result.measured_ns.max(1) as f64 / 1e9;
                        r.scanned.get(j).copied().unwrap_or(0) as f64 / secs
                    })
                    .collect();
                stats::median(&per_run)
            }),
            ops_per_sec_summary: Summary::of(&per_run),
            locked,
            spins,
            share_of_acquisitions: if total_locked > 0 {
                locked as f64 / total_locked as f64
            } else {
                0.0
            },
            spins_per_acquire: spins.map(|s| {
                if locked > 0 {
                    s as f64 / locked as f64
                } else {
                    0.0
                }
            }),
            handoffs_received: handoffs,
            handoffs_by_proximity: spins.map(|_| by),
            cpu_share: tr.cpu_share(mr.measured_ns),
            involuntary_ctx_switches: tr.involuntary_ctx_switches,
            counters: tr.counters.as_ref().map(|m| m.counts.clone()),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{RunSpec, ThreadResult};
    use crate::stats::Effect;
    use crate::topology::fixture::topology;

    #[test]
    fn handoff_latency_weights_each_class_by_its_handoffs() {
        use Proximity::*;
        let lat = [(SmtSibling, 10.0), (SameL3, 40.0), (OtherPackage, 130.0)];
        // 3 sibling handoffs at 10 ns and 1 cross-package one at 130: (30 + 130) / 4.
        let h = [(SmtSibling, 3), (OtherPackage, 1)];
        assert_eq!(handoff_latency_ns(&h, &lat), Some(40.0));
        // Handoffs between threads time-sharing one CPU move no line: not weighted.
        let h = [(SameCpu, 1000), (SameL3, 10)];
        assert_eq!(handoff_latency_ns(&h, &lat), Some(40.0));
        // None at all: the nearest class measured.
        assert_eq!(handoff_latency_ns(&[], &lat), Some(10.0));
        assert_eq!(handoff_latency_ns(&[(SameCpu, 5)], &lat[1..]), Some(40.0));
        assert_eq!(handoff_latency_ns(&[(SameL3, 5)], &[]), None);
    }

    #[test]
    fn the_representative_run_is_the_one_nearest_the_median() {
        assert_eq!(nearest_median(&[10.0, 30.0, 20.0]), 2);
        // Median 25 of four: 20 and 30 are equally near, the first wins.
        assert_eq!(nearest_median(&[10.0, 30.0, 20.0, 40.0]), 1);
        assert_eq!(nearest_median(&[]), 0);
    }

    #[test]
    fn group_means_split_sharing_from_other_threads() {
        let rates = [1.0, 3.0, 5.0];
        assert_eq!(group_mean(&rates, &[true, false, false], true), Some(1.0));
        assert_eq!(group_mean(&rates, &[true, false, false], false), Some(4.0));
        assert_eq!(group_mean(&rates, &[false, false, false], true), None);
    }

    /// A 1-second run of `ops` per thread (lock threads first).
    fn run(ops: &[u64], stats: Vec<ThreadStats>) -> Run {
        let threads = ops
            .iter()
            .enumerate()
            .map(|(i, &ops)| ThreadResult {
                thread: i,
                tid: 0,
                cpus: CpuSet::new(),
                observed_cpus: CpuSet::new(),
                warmup_ops: 0,
                ops,
                interval_ops: vec![ops],
                cpu_time_ns: 500_000_000,
                voluntary_ctx_switches: 0,
                involuntary_ctx_switches: 2,
                runqueue_delay_ns: None,
                counters: None,
                counters_span_ns: 1_000_000_000,
            })
            .collect();
        Run {
            result: RunResult {
                workload: "lockscan/ttas".into(),
                placement: String::new(),
                spec: RunSpec::default(),
                warmup_ns: 0,
                measured_ns: 1_000_000_000,
                interval_ns: vec![1_000_000_000],
                stop_latency_ns: 0,
                threads,
                pinning_violations: Vec::new(),
                interrupted: false,
                synthetic: true,
                steal_share: None,
                nice_offset: 0,
            },
            stats,
            latencies: vec![(Proximity::SmtSibling, 10.0), (Proximity::SameL3, 50.0)],
            scanned: Vec::new(),
            disturbed: None,
        }
    }

    /// Lock stats of three lock threads: `acq` acquisitions, 10 spins each, and handoffs
    /// `from[i][j]` received by thread i from thread j.
    fn lock_stats(acq: [u64; 3], from: [[u64; 3]; 3]) -> Vec<ThreadStats> {
        (0..3)
            .map(|i| {
                let mut st = ThreadStats::new(3);
                st.counts.acquisitions = acq[i];
                st.counts.spins = 10 * acq[i];
                st.counts.handoffs = from[i].iter().sum();
                st.handoffs_from = from[i].to_vec();
                st
            })
            .collect()
    }

    /// 3 cores × 2 siblings (CPU i and i + 3 share a core): lock threads on 0, 1, 2, the
    /// scanner on 3, the sibling of lock thread 0.
    fn scenario() -> Scenario {
        Scenario {
            label: "scanner on 3 (sibling of 0)".into(),
            lock_cpus: vec![0, 1, 2],
            scan_cpus: vec![3],
        }
    }

    #[test]
    fn a_scenario_summary_from_hand_computed_runs() {
        let topo = topology(3, 2, false);
        // Thread 0 shares its core with the scanner and acquires a tenth of the others.
        let from = [[0, 5, 5], [10, 0, 10], [10, 10, 0]];
        let runs = vec![
            run(&[100, 1000, 1000, 7], lock_stats([100, 1000, 1000], from)),
            run(&[200, 1000, 1000, 7], lock_stats([200, 1000, 1000], from)),
            run(&[150, 1000, 1000, 7], lock_stats([150, 1000, 1000], from)),
        ];
        let base = vec![
            run(&[1000, 1000, 1000], lock_stats([1000; 3], from)),
            run(&[1000, 1000, 1000], lock_stats([1000; 3], from)),
            run(&[1000, 1000, 1000], lock_stats([1000; 3], from)),
        ];
        let s = scenario();
        let b = Scenario {
            label: "baseline (no scanner)".into(),
            lock_cpus: vec![0, 1, 2],
            scan_cpus: Vec::new(),
        };
        let r = summarise(
            &topo,
            &s,
            LockKind::Ttas,
            &runs,
            Some((&b, &base)),
            StatsMode::Counters,
            false,
        );
        assert_eq!(r.runs, 3);
        // Totals 2100, 2200, 2150: the median run is the third.
        assert_eq!(r.acquisitions_per_sec.unwrap().median, 2150.0);
        let t0 = &r.threads[0];
        assert_eq!(
            (t0.role, t0.shares_core_with_scanner),
            (ThreadRole::Lock, true)
        );
        assert_eq!(t0.ops_per_sec, 150.0);
        assert_eq!((t0.locked, t0.spins), (150, Some(1500)));
        assert_eq!(t0.share_of_acquisitions, 150.0 / 2150.0);
        assert_eq!(t0.spins_per_acquire, Some(10.0));
        assert_eq!(t0.handoffs_received, Some(10));
        // CPUs 1 and 2 are other cores of the one L3.
        assert_eq!(
            t0.handoffs_by_proximity,
            Some(vec![(Proximity::SameL3, 10)])
        );
        assert!(!r.threads[1].shares_core_with_scanner);
        let scan = &r.threads[3];
        assert_eq!(scan.role, ThreadRole::Scan);
        assert_eq!(
            (scan.locked, scan.spins, scan.handoffs_received),
            (0, None, None)
        );
        assert!(
            !scan.shares_core_with_scanner,
            "only lock threads are flagged"
        );
        // 150 against the others' 1000 in every run: a ratio of 0.15 at the median.
        let c = r.sharing_vs_others.unwrap();
        assert!((c.estimate - 0.15).abs() < 1e-9, "{c:?}");
        assert!(c.low <= c.estimate && c.estimate <= c.high);
        // Against its own rate without a scanner, round by round: 100, 200 and 150 of
        // 1000.
        assert_eq!(r.sharing_ratios, [0.1, 0.2, 0.15]);
        let own = r.sharing_vs_own_baseline.unwrap();
        // The geometric mean of 0.1, 0.2 and 0.15: (0.003)^(1/3).
        assert!((own.estimate - 0.003f64.cbrt()).abs() < 1e-9, "{own:?}");
        assert_eq!((own.n, own.indicative), (3, false));
        assert_eq!(own.effect, crate::stats::Effect::Loss, "{own}");
        // The other lock threads ran as fast as without a scanner, round by round, so the
        // control (sharing ÷ other cores) is the sharing ratio itself: a loss that comes
        // with sharing the core.
        assert!((r.cross_core_vs_baseline.unwrap().estimate - 1.0).abs() < 1e-9);
        assert_eq!(r.cross_core_ratios, [1.0, 1.0, 1.0]);
        assert_eq!(r.sharing_vs_cross_core_ratios, [0.1, 0.2, 0.15]);
        assert_eq!(
            r.sharing_vs_cross_core.unwrap().effect,
            crate::stats::Effect::Loss
        );
        // 50 handoffs in 1 s, all between different cores of one L3 (50 ns).
        assert_eq!(r.handoffs_per_sec, Some(50.0));
        assert_eq!(r.c2c_latency_ns, Some(50.0));
        // The ceiling at 50 ns is 20 M handoffs/s.
        assert!((r.handoffs_share_of_ceiling.unwrap() - 50.0 / 20e6).abs() < 1e-15);
        // Medians 150, 1000, 1000: Jain = 2150² / (3 × (150² + 2 × 1000²)).
        let jain = 2150.0f64.powi(2) / (3.0 * (150.0f64.powi(2) + 2e6));
        assert!((r.jain_index - jain).abs() < 1e-12);
        assert!((r.max_min_ratio - 1000.0 / 150.0).abs() < 1e-12);
    }

    #[test]
    fn each_sharing_thread_is_paired_with_itself_in_the_same_rounds_baseline() {
        // An unfair lock: in the baseline thread 0 (CPU 0) already gets only 300 of 1000
        // per thread; beside the scanner it gets 240, 270 and 330 in rounds 1–3 while its
        // baselines were 300, 300 and 330. Against the others it looks 4× slower; against
        // itself it kept 0.8, 0.9 and 1.0 of its rate.
        let base_s = Scenario {
            label: "baseline (no scanner)".into(),
            lock_cpus: vec![0, 1, 2],
            scan_cpus: Vec::new(),
        };
        let s = scenario();
        let sharing = [true, false, false, false];
        let none = || lock_stats([0; 3], [[0; 3]; 3]);
        let runs = [
            run(&[240, 1000, 1000, 7], none()),
            run(&[270, 1000, 1000, 7], none()),
            run(&[330, 1000, 1000, 7], none()),
        ];
        let base = [
            run(&[300, 1000, 1000], none()),
            run(&[300, 1000, 1000], none()),
            run(&[330, 1000, 1000], none()),
            // A fourth baseline round whose scenario run never happened (Ctrl-C).
            run(&[1, 1000, 1000], none()),
        ];
        let ratios = own_baseline_ratios(&s, &sharing, &runs, &base_s, &base);
        assert_eq!(ratios, [0.8, 0.9, 1.0]);
        let topo = topology(3, 2, false);
        let r = summarise(
            &topo,
            &s,
            LockKind::Ttas,
            &runs,
            Some((&base_s, &base)),
            StatsMode::Off,
            false,
        );
        let own = r.sharing_vs_own_baseline.unwrap();
        // The geometric mean of 0.8, 0.9 and 1.0.
        assert!((own.estimate - 0.72f64.cbrt()).abs() < 1e-9, "{own}");
        // The biased comparison sees 270 against 1000.
        assert!((r.sharing_vs_others.unwrap().estimate - 0.27).abs() < 1e-9);
        // Two sharing threads are summed, each against its own CPU in the baseline, found
        // by CPU even when the baseline lists the CPUs in another order.
        let two = Scenario {
            label: "two".into(),
            lock_cpus: vec![0, 1, 2],
            scan_cpus: vec![3, 4],
        };
        let shuffled = Scenario {
            lock_cpus: vec![2, 1, 0],
            ..base_s.clone()
        };
        let runs = [run(&[100, 300, 1000, 7, 7], none())];
        let base = [run(&[1000, 500, 500], none())];
        let ratios = own_baseline_ratios(&two, &[true, true, false], &runs, &shuffled, &base);
        assert_eq!(ratios, [400.0 / 1000.0]);
        // A sharing CPU the baseline has no lock thread on: no pairing.
        let other = Scenario {
            lock_cpus: vec![5],
            ..base_s.clone()
        };
        assert!(own_baseline_ratios(&s, &sharing, &runs, &other, &base).is_empty());
        // A baseline round that acquired nothing gives no ratio, not infinity.
        let zero = [run(&[0, 0, 0], none())];
        let runs = [run(&[100, 300, 1000, 7], none())];
        assert!(own_baseline_ratios(&s, &sharing, &runs, &base_s, &zero).is_empty());
    }

    #[test]
    fn a_round_disturbed_while_it_ran_is_left_out_of_the_paired_comparisons() {
        // Thread 0 beside the scanner kept 0.60, 0.62, 0.61 and 0.62 of its own baseline
        // in rounds 1–4; in round 5 another task took its CPU and it kept 0.25. Kept, that
        // round makes the ratio 0.51× (95 % CI 0.31–0.84): not wholly below the 0.8 loss
        // line, so inconclusive. Left out, the four clean rounds give 0.61× (0.60–0.63).
        let base_s = Scenario {
            label: "baseline (no scanner)".into(),
            lock_cpus: vec![0, 1, 2],
            scan_cpus: Vec::new(),
        };
        let s = scenario();
        let topo = topology(3, 2, false);
        let none = || lock_stats([0; 3], [[0; 3]; 3]);
        let mut runs: Vec<Run> = [600, 620, 610, 620, 250]
            .iter()
            .map(|&a| run(&[a, 1000, 1000, 7], none()))
            .collect();
        let mut base: Vec<Run> = (0..5).map(|_| run(&[1000, 1000, 1000], none())).collect();
        let sum = |runs: &[Run], base: &[Run]| {
            summarise(
                &topo,
                &s,
                LockKind::Ttas,
                runs,
                Some((&base_s, base)),
                StatsMode::Off,
                false,
            )
        };
        let kept = sum(&runs, &base).sharing_vs_own_baseline.unwrap();
        assert_eq!((kept.n, kept.effect), (5, Effect::Inconclusive), "{kept}");
        assert!(
            (kept.estimate - 0.512).abs() < 0.005
                && (kept.low - 0.311).abs() < 0.005
                && (kept.high - 0.842).abs() < 0.005,
            "{kept}"
        );
        let why = "thread 0 on CPU 0 was kept off its CPU by other work (61 % of the run on a CPU, preempted 900 times)";
        runs[4].disturbed = Some(why.into());
        let r = sum(&runs, &base);
        let c = r.sharing_vs_own_baseline.unwrap();
        assert_eq!((c.n, c.effect), (4, Effect::Loss), "{c}");
        assert!(
            (c.estimate - 0.612).abs() < 0.005 && c.low > 0.59 && c.high < 0.635,
            "{c}"
        );
        assert_eq!(r.sharing_ratios.len(), 4);
        // The control pairs the same rounds: round 5 is out of it too.
        assert_eq!(r.cross_core_ratios.len(), 4);
        assert_eq!(r.sharing_vs_cross_core_ratios.len(), 4);
        // The round is kept with its reason, numbered from 0 as the runs are.
        assert_eq!(
            r.disturbed_rounds,
            [DisturbedRound {
                round: 4,
                run: DisturbedRun::Scenario,
                why: why.into()
            }]
        );
        // A disturbed baseline run leaves its round out the same way, and says which.
        runs[4].disturbed = None;
        base[4].disturbed = Some("steal".into());
        let r = sum(&runs, &base);
        assert_eq!(r.sharing_vs_own_baseline.unwrap().n, 4);
        assert_eq!(r.disturbed_rounds[0].run, DisturbedRun::Baseline);
        // The core's combined progress leaves out a round whose scanner-alone run was
        // disturbed.
        let runs = [
            scanning(&[625, 1000, 1000, 1], &[5_000_000_000]),
            scanning(&[600, 1000, 1000, 1], &[4_000_000_000]),
        ];
        let base = [
            scanning(&[1000, 1000, 1000], &[]),
            scanning(&[1000, 1000, 1000], &[]),
        ];
        let mut alone = [
            scanning(&[1000, 1000, 1], &[8_000_000_000]),
            scanning(&[1000, 1000, 1], &[8_000_000_000]),
        ];
        alone[1].disturbed = Some("steal".into());
        let p = core_progress(&topo, &s, &runs, Some((&base_s, &base)), Some(&alone));
        assert_eq!(p.scan_ratios, [0.625]);
        assert_eq!(p.core_yield_ratios, [1.25]);
        assert_eq!(
            disturbed_rounds(&runs, Some(&base), Some(&alone)),
            [DisturbedRound {
                round: 1,
                run: DisturbedRun::ScannersAlone,
                why: "steal".into()
            }]
        );
    }

    /// A run whose scan threads wrote `bytes` each in its measured second.
    fn scanning(ops: &[u64], bytes: &[u64]) -> Run {
        let mut r = run(ops, lock_stats([0; 3], [[0; 3]; 3]));
        r.scanned = bytes.to_vec();
        r
    }

    /// The core's combined progress: lock thread 0 kept 625 of its 1000 acquisitions/s
    /// and the scanner beside it 5 of its 8 GB/s one per core (the lock thread of its
    /// core left out): 0.625 + 0.625 = 1.25 of one thread's work, though each lost.
    #[test]
    fn the_core_yield_sums_each_siblings_rate_against_itself_one_per_core() {
        let topo = topology(3, 2, false);
        let s = scenario();
        let base_s = Scenario {
            label: "baseline (no scanner)".into(),
            lock_cpus: vec![0, 1, 2],
            scan_cpus: Vec::new(),
        };
        let alone_s = s.scanner_alone(&topo).unwrap();
        assert_eq!(alone_s.lock_cpus, [1, 2]);
        let runs = [
            scanning(&[625, 1000, 1000, 1], &[5_000_000_000]),
            scanning(&[600, 1000, 1000, 1], &[4_000_000_000]),
        ];
        let base = [
            scanning(&[1000, 1000, 1000], &[]),
            scanning(&[1000, 1000, 1000], &[]),
        ];
        let alone = [
            scanning(&[1000, 1000, 1], &[8_000_000_000]),
            scanning(&[1000, 1000, 1], &[8_000_000_000]),
        ];
        let p = core_progress(&topo, &s, &runs, Some((&base_s, &base)), Some(&alone));
        assert_eq!(p.scan_bytes_per_sec, [5e9, 4e9]);
        assert_eq!(p.scan_alone_bytes_per_sec, [8e9, 8e9]);
        assert_eq!(p.scan_ratios, [0.625, 0.5]);
        assert_eq!(p.core_yield_ratios, [1.25, 1.1]);
        let y = p.core_yield.unwrap();
        assert!((y.estimate - (1.25f64 * 1.1).sqrt()).abs() < 1e-9, "{y:?}");
        assert_eq!(y.thresholds, Thresholds::YIELD);
        // Without the scanner's one-per-core runs only its rate is kept.
        let p = core_progress(&topo, &s, &runs, Some((&base_s, &base)), None);
        assert_eq!(p.scan_bytes_per_sec, [5e9, 4e9]);
        assert!(p.core_yield_ratios.is_empty() && p.core_yield.is_none());
        // The per-thread row carries the scanner's bytes/s (the median of 5 and 4 GB/s).
        let r = summarise(
            &topo,
            &s,
            LockKind::Ttas,
            &runs,
            Some((&base_s, &base)),
            StatsMode::Off,
            false,
        );
        assert_eq!(r.threads[3].scan_bytes_per_sec, Some(4.5e9));
        assert_eq!(r.threads[0].scan_bytes_per_sec, None);
    }

    #[test]
    fn with_lock_stats_off_counts_come_from_the_workload_and_spins_stay_unknown() {
        let topo = topology(3, 2, false);
        let from = [[0; 3]; 3];
        let runs = vec![run(&[100, 300, 600, 7], lock_stats([0; 3], from))];
        let r = summarise(
            &topo,
            &scenario(),
            LockKind::Ttas,
            &runs,
            None,
            StatsMode::Off,
            true,
        );
        assert_eq!(r.threads[2].locked, 600);
        assert_eq!(r.threads[2].share_of_acquisitions, 0.6);
        for t in &r.threads {
            assert_eq!(t.spins, None);
            assert_eq!(t.spins_per_acquire, None);
            assert_eq!(t.handoffs_received, None);
            assert_eq!(t.handoffs_by_proximity, None);
        }
        assert_eq!(r.handoffs_per_sec, None);
        assert_eq!(r.handoffs_share_of_ceiling, None);
        assert_eq!(r.cross_core_vs_baseline, None);
        assert_eq!(
            r.sharing_vs_own_baseline, None,
            "no baseline, no own comparison"
        );
        assert!(r.sharing_ratios.is_empty());
        assert!(r.interrupted);
    }
}
