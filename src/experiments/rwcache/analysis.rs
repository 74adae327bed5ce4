//! From runs to figures (pure): each run's CPU per request and lock CPU by subtraction,
//! the per-scheme summaries, the `spin` → `rwspin` before/after figures, the read-side cost
//! across thread counts and the best scheme.
//!
//! CPU in the lock is found by subtraction ([`crate::rwcache::lock_cost`]): a scheme's
//! lock CPU per request is its CPU ns per request minus the median of the `none`
//! reference (the same request loop with no lock, 1 thread), floored at 0; its share is
//! that ÷ its own CPU ns per request (0–1). At more threads the difference also holds what
//! sharing costs: cache-line transfers, waits, and a sibling's competition for the core.

use super::model::{
    BeforeAfter, BeforeAfterRow, Best, BestAt, Caution, ON_CPU_WARN, ReadCost, ReadCostAt,
    ReferenceResult, SchemeResult,
};
use crate::engine::RunResult;
use crate::placement::Plan;
use crate::rwcache::{RwThreadStats, SchemeKind, lock_cost};
use crate::stats::{self, Summary, Thresholds};

/// Noise threshold for verdicts: a change is called only beyond ±2 %.
pub(super) const NOISE: f64 = 0.02;

/// One run: the engine's result and each thread's stats.
pub struct RunOutcome {
    pub run: RunResult,
    pub stats: Vec<RwThreadStats>,
}

impl RunOutcome {
    fn merged(&self) -> RwThreadStats {
        let mut t = RwThreadStats::default();
        for s in &self.stats {
            t.merge(s);
        }
        t
    }

    fn requests(&self) -> u64 {
        self.run.total_ops()
    }

    /// Threads' wall time in this run, ns (measured time × threads).
    fn thread_ns(&self) -> f64 {
        self.run.measured_ns as f64 * self.run.threads.len().max(1) as f64
    }

    /// Waiting on the CPU after a collision (timed: wait − sleep) ÷ the threads' CPU time,
    /// at most 1.
    fn wait_cpu_share(&self) -> f64 {
        ratio(
            self.merged().wait_on_cpu_ns() as f64,
            self.run.cpu_time_ns() as f64,
        )
        .min(1.0)
    }

    /// Lookups per request (reads ÷ requests).
    fn lookups_per_request(&self) -> f64 {
        ratio(
            self.merged().reads.counts.acquisitions as f64,
            self.requests() as f64,
        )
    }

    fn cpu_ns_per_request(&self) -> f64 {
        ratio(self.run.cpu_time_ns() as f64, self.requests() as f64)
    }

    /// CPU time ÷ (wall time × threads).
    fn cpu_share(&self) -> f64 {
        ratio(self.run.cpu_time_ns() as f64, self.thread_ns())
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

/// Summarises the `none` reference's runs (pure).
pub fn summarise_reference(plan: &Plan, runs: &[RunOutcome]) -> ReferenceResult {
    let cpu: Vec<f64> = runs
        .iter()
        .map(RunOutcome::cpu_ns_per_request)
        .filter(|&x| x > 0.0)
        .collect();
    let shares: Vec<f64> = runs.iter().map(RunOutcome::cpu_share).collect();
    let rps: Vec<f64> = runs.iter().map(|r| r.run.ops_per_sec()).collect();
    ReferenceResult {
        scheme: SchemeKind::Unlocked,
        threads: 1,
        cpus: plan.cpus(),
        runs: runs.len(),
        requests_per_sec: Summary::of(&rps),
        cpu_ns_per_request: Summary::of(&cpu),
        cpu_share: if shares.is_empty() {
            0.0
        } else {
            stats::median(&shares)
        },
        pinning_ok: runs.iter().all(|r| r.run.pinning_ok()),
    }
}

/// Summarises one trial's runs (pure); `reference_cpu_ns_per_request` is the `none`
/// reference's median CPU ns per request, subtracted for the lock's CPU.
pub fn summarise(
    kind: SchemeKind,
    threads: usize,
    plan: &Plan,
    runs: &[RunOutcome],
    reference_cpu_ns_per_request: Option<f64>,
) -> SchemeResult {
    let med = |f: &dyn Fn(&RunOutcome) -> f64| {
        let v: Vec<f64> = runs.iter().map(f).collect();
        if v.is_empty() { 0.0 } else { stats::median(&v) }
    };
    let cost = |r: &RunOutcome| {
        reference_cpu_ns_per_request.and_then(|x| lock_cost(r.cpu_ns_per_request(), x))
    };
    let costs: Vec<(f64, f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            cost(r).map(|c| {
                (
                    c.lock_cpu_share,
                    c.lock_cpu_ns_per_request,
                    ratio(c.lock_cpu_ns_per_request, r.lookups_per_request()),
                )
            })
        })
        .collect();
    let med_of = |f: fn(&(f64, f64, f64)) -> f64| {
        let v: Vec<f64> = costs.iter().map(f).collect();
        (!v.is_empty()).then(|| stats::median(&v))
    };
    let rps: Vec<f64> = runs.iter().map(|r| r.run.ops_per_sec()).collect();
    let mut all = RwThreadStats::default();
    for r in runs {
        all.merge(&r.merged());
    }
    let writes = all.writes.summary();
    SchemeResult {
        scheme: kind,
        threads,
        cpus: plan.cpus(),
        oversubscribed: plan.oversubscribed,
        shared_reader_line: kind.shared_reader_line(),
        runs: runs.len(),
        requests_per_sec: Summary::of(&rps),
        lookups_per_sec: med(&|r| {
            ratio(
                r.merged().reads.counts.acquisitions as f64 * 1e9,
                r.run.measured_ns as f64,
            )
        }),
        cpu_share: med(&RunOutcome::cpu_share),
        lock_cpu_share: Summary::of(&costs.iter().map(|c| c.0).collect::<Vec<_>>()),
        lock_cpu_ns_per_request: med_of(|c| c.1),
        lock_cpu_ns_per_lookup: med_of(|c| c.2),
        wait_cpu_share: med(&RunOutcome::wait_cpu_share),
        cpu_ns_per_request: med(&RunOutcome::cpu_ns_per_request),
        write_lock_ns_per_write: ratio(
            all.write_lock_ns as f64,
            all.writes.counts.acquisitions as f64,
        ),
        reads: all.reads.summary(),
        // Every scheme times its waits (the library lock in `spin` runs in `Waits` mode).
        writer_wait_p99_ns: writes.wait_p99_ns.unwrap_or(0),
        writer_wait_max_ns: writes.wait_max_ns.unwrap_or(0),
        writes,
        read_retries: all.read_retries,
        spins_visible: kind.spins_visible(),
        voluntary_ctx_switches: runs
            .iter()
            .flat_map(|r| &r.run.threads)
            .map(|t| t.voluntary_ctx_switches)
            .sum(),
        involuntary_ctx_switches: runs
            .iter()
            .flat_map(|r| &r.run.threads)
            .map(|t| t.involuntary_ctx_switches)
            .sum(),
        pinning_ok: runs.iter().all(|r| r.run.pinning_ok()),
        steal_share_max: runs
            .iter()
            .filter_map(|r| r.run.steal_share)
            .reduce(f64::max),
        run_requests_per_sec: rps,
        counters: {
            let per_run: Option<Vec<crate::counters::Counts>> = runs
                .iter()
                .map(|r| {
                    r.run
                        .threads
                        .iter()
                        .map(|t| t.counters.as_ref().map(|m| &m.counts))
                        .collect::<Option<Vec<_>>>()
                        .and_then(crate::counters::Counts::sum)
                })
                .collect();
            per_run.and_then(|v| crate::counters::Counts::median(&v))
        },
    }
}

/// The caution a disturbed run carries: results (not oversubscribed, where sharing a CPU
/// is the design) whose threads were on their CPUs less than `ON_CPU_WARN` of the run,
/// and steal above [`STEAL_WARN`](crate::hygiene::STEAL_WARN) in any run. None when
/// neither was seen.
pub fn caution(results: &[SchemeResult]) -> Option<Caution> {
    let measured = measured(results);
    let starved: Vec<f64> = measured
        .iter()
        .filter(|r| !r.oversubscribed && r.cpu_share < ON_CPU_WARN)
        .map(|r| r.cpu_share)
        .collect();
    let steal = measured
        .iter()
        .filter_map(|r| r.steal_share_max)
        .reduce(f64::max)
        .filter(|&s| s > crate::hygiene::STEAL_WARN);
    (!starved.is_empty() || steal.is_some()).then(|| Caution {
        starved_results: starved.len(),
        results: measured.len(),
        on_cpu_low: starved.iter().copied().reduce(f64::min),
        on_cpu_high: starved.iter().copied().reduce(f64::max),
        steal_max: steal,
    })
}

/// The median requests/s of a measured result. Callers keep to [`measured`] results, so
/// a scheme with no completed run never enters a comparison as 0 requests/s.
fn median_rps(r: &SchemeResult) -> f64 {
    r.requests_per_sec.map_or(f64::NAN, |s| s.median)
}

/// The results with at least one completed run (Ctrl-C can leave a scheme without any).
fn measured(results: &[SchemeResult]) -> Vec<&SchemeResult> {
    results
        .iter()
        .filter(|r| r.requests_per_sec.is_some())
        .collect()
}

fn row(r: &SchemeResult) -> BeforeAfterRow {
    BeforeAfterRow {
        scheme: r.scheme,
        cpu_pct: r.cpu_share * 100.0,
        lock_cpu_pct: r.lock_cpu_share.map(|s| s.median * 100.0),
        requests_per_sec: median_rps(r),
        cpu_ns_per_request: r.cpu_ns_per_request,
    }
}

/// `spin` → `rwspin` at every thread count that ran both (pure).
pub fn before_after(results: &[SchemeResult]) -> Vec<BeforeAfter> {
    let results = measured(results);
    let mut out = Vec::new();
    for b in results.iter().filter(|r| r.scheme == SchemeKind::Spin) {
        let Some(a) = results
            .iter()
            .find(|r| r.scheme == SchemeKind::RwSpin && r.threads == b.threads)
        else {
            continue;
        };
        let (before, after) = (row(b), row(a));
        let ci = stats::bootstrap_ratio_of_medians(
            &a.run_requests_per_sec,
            &b.run_requests_per_sec,
            0.95,
            2000,
            3,
        );
        out.push(BeforeAfter {
            threads: b.threads,
            requests_change_pct: (ratio(after.requests_per_sec, before.requests_per_sec) - 1.0)
                * 100.0,
            lock_cpu_change_pts: after
                .lock_cpu_pct
                .zip(before.lock_cpu_pct)
                .map(|(a, b)| a - b),
            cpu_per_request_change_pct: (ratio(
                after.cpu_ns_per_request,
                before.cpu_ns_per_request,
            ) - 1.0)
                * 100.0,
            verdict: ci
                .filter(|_| a.runs > 1 && b.runs > 1)
                .map(|c| stats::classify(c.low, c.high, Thresholds::band(NOISE))),
            requests_ratio: ci.filter(|_| a.runs > 1 && b.runs > 1),
            before,
            after,
        });
    }
    out
}

/// Read-side cost of each scheme across thread counts (pure).
pub fn read_cost(results: &[SchemeResult], schemes: &[SchemeKind]) -> Vec<ReadCost> {
    schemes
        .iter()
        .filter_map(|&k| {
            let mut rs: Vec<&SchemeResult> = measured(results)
                .into_iter()
                .filter(|r| r.scheme == k)
                .collect();
            if rs.is_empty() {
                return None;
            }
            rs.sort_by_key(|r| r.threads);
            let one = rs.iter().find(|r| r.threads == 1).map(|r| median_rps(r));
            let most = rs.last().expect("non-empty");
            Some(ReadCost {
                scheme: k,
                shared_reader_line: k.shared_reader_line(),
                by_threads: rs
                    .iter()
                    .map(|r| ReadCostAt {
                        threads: r.threads,
                        lock_cpu_ns_per_lookup: r.lock_cpu_ns_per_lookup,
                        requests_per_sec_per_thread: median_rps(r) / r.threads as f64,
                    })
                    .collect(),
                scaling: one
                    .filter(|&o| o > 0.0 && most.threads > 1)
                    .map(|o| median_rps(most) / o),
            })
        })
        .collect()
}

/// The best scheme per thread count and overall (pure). None without results.
pub fn best(results: &[SchemeResult]) -> Option<Best> {
    let results = measured(results);
    let mut threads: Vec<usize> = results.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut per_threads = Vec::new();
    for &n in &threads {
        let mut at: Vec<&SchemeResult> =
            results.iter().copied().filter(|r| r.threads == n).collect();
        at.sort_by(|a, b| median_rps(b).total_cmp(&median_rps(a)));
        let first = at[0];
        let second = at.get(1);
        let ci = second.and_then(|s| {
            stats::bootstrap_ratio_of_medians(
                &first.run_requests_per_sec,
                &s.run_requests_per_sec,
                0.95,
                2000,
                5,
            )
            .filter(|_| first.runs > 1 && s.runs > 1)
        });
        per_threads.push(BestAt {
            threads: n,
            scheme: first.scheme,
            requests_per_sec: median_rps(first),
            runner_up: second.map(|s| s.scheme),
            over_runner_up: ci,
            verdict: ci.map(|c| stats::classify(c.low, c.high, Thresholds::band(NOISE))),
        });
    }
    let mut schemes: Vec<SchemeKind> = results.iter().map(|r| r.scheme).collect();
    schemes.sort();
    schemes.dedup();
    let score = |k: SchemeKind| -> f64 {
        let logs: Vec<f64> = per_threads
            .iter()
            .map(|b| {
                let mine = results
                    .iter()
                    .find(|r| r.scheme == k && r.threads == b.threads)
                    .map(|r| median_rps(r))
                    .unwrap_or(0.0);
                ratio(mine, b.requests_per_sec).max(1e-12).ln()
            })
            .collect();
        stats::mean(&logs).exp()
    };
    let (overall, overall_score) = schemes
        .iter()
        .map(|&k| (k, score(k)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Best {
        overall,
        overall_score,
        per_threads,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::engine::{RunSpec, ThreadResult};
    use crate::placement::ThreadPlacement;
    use crate::stats::Effect;
    use std::time::Duration;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// `threads` threads on CPUs 0.., one per CPU.
    pub(in super::super) fn plan(threads: usize) -> Plan {
        Plan {
            request: "spread".into(),
            threads: (0..threads)
                .map(|thread| ThreadPlacement {
                    thread,
                    cpus: CpuSet::from_cpus([thread as u32]),
                })
                .collect(),
            oversubscribed: false,
            notes: vec![],
            scope: None,
        }
    }

    /// A 1 s run of `threads` threads serving `requests` with `cpu_ns` of CPU in all, four
    /// lookups per request.
    pub(in super::super) fn outcome(threads: usize, requests: u64, cpu_ns: u64) -> RunOutcome {
        let n = threads as u64;
        let run = RunResult {
            workload: "rwcache/test".into(),
            placement: "spread".into(),
            spec: RunSpec::new(Duration::ZERO, Duration::from_secs(1)).unwrap(),
            warmup_ns: 0,
            measured_ns: 1_000_000_000,
            interval_ns: vec![1_000_000_000],
            stop_latency_ns: 0,
            threads: (0..threads)
                .map(|i| ThreadResult {
                    thread: i,
                    tid: 0,
                    cpus: CpuSet::from_cpus([i as u32]),
                    observed_cpus: CpuSet::from_cpus([i as u32]),
                    warmup_ops: 0,
                    ops: requests / n,
                    interval_ops: vec![requests / n],
                    cpu_time_ns: cpu_ns / n,
                    voluntary_ctx_switches: 0,
                    involuntary_ctx_switches: 0,
                    runqueue_delay_ns: None,
                    counters: None,
                    counters_span_ns: 1_000_000_000,
                })
                .collect(),
            pinning_violations: vec![],
            interrupted: false,
            synthetic: true,
            steal_share: None,
            nice_offset: 0,
        };
        let mut stats = RwThreadStats::default();
        stats.reads.counts.acquisitions = requests * 4;
        RunOutcome {
            run,
            stats: vec![stats],
        }
    }

    /// `kind` at `threads` threads over runs of `requests_per_run`, each at 1 s of CPU per
    /// thread, against a reference of 100 ns per request.
    pub(in super::super) fn result(
        kind: SchemeKind,
        threads: usize,
        requests_per_run: &[u64],
    ) -> SchemeResult {
        let runs: Vec<RunOutcome> = requests_per_run
            .iter()
            .map(|&r| outcome(threads, r, threads as u64 * 1_000_000_000))
            .collect();
        summarise(kind, threads, &plan(threads), &runs, Some(100.0))
    }

    /// The largest steal of a scheme's runs is kept with its result.
    #[test]
    fn the_largest_steal_of_the_runs_is_kept() {
        let mut runs: Vec<RunOutcome> = (0..3).map(|_| outcome(1, 1_000, 1_000_000_000)).collect();
        runs[0].run.steal_share = Some(0.02);
        runs[1].run.steal_share = Some(0.13);
        let r = summarise(SchemeKind::Spin, 1, &plan(1), &runs, Some(100.0));
        assert_eq!(r.steal_share_max, Some(0.13));
        let none = summarise(SchemeKind::Spin, 1, &plan(1), &runs[2..], Some(100.0));
        assert_eq!(none.steal_share_max, None);
    }

    #[test]
    fn lock_cpu_is_found_by_subtraction() {
        // The reference: 10 M requests in 1 s of CPU = 100 ns per request.
        let reference = summarise_reference(&plan(1), &[outcome(1, 10_000_000, 1_000_000_000)]);
        let ref_ns = reference.cpu_ns_per_request.unwrap().median;
        assert!(close(ref_ns, 100.0), "{ref_ns}");
        assert!(close(reference.cpu_share, 1.0));
        // 8 M requests in 1 s of CPU = 125 ns: 25 ns in the lock, 20 % of the CPU, 6.25 ns
        // per lookup (4 lookups per request).
        let spin = summarise(
            SchemeKind::Spin,
            1,
            &plan(1),
            &[outcome(1, 8_000_000, 1_000_000_000)],
            Some(ref_ns),
        );
        assert!(close(spin.cpu_ns_per_request, 125.0));
        assert!(close(spin.lock_cpu_ns_per_request.unwrap(), 25.0));
        assert!(close(spin.lock_cpu_share.unwrap().median, 0.2));
        assert!(close(spin.lock_cpu_ns_per_lookup.unwrap(), 6.25));
        assert!(close(spin.lookups_per_sec, 32e6));
        assert!(close(spin.cpu_share, 1.0));
        // Two threads at 1.6 s of CPU in 1 s each: 80 % busy.
        let two = summarise(
            SchemeKind::Spin,
            2,
            &plan(2),
            &[outcome(2, 16_000_000, 1_600_000_000)],
            Some(ref_ns),
        );
        assert!(close(two.cpu_share, 0.8));
        assert!(
            close(two.lock_cpu_ns_per_request.unwrap(), 0.0),
            "100 ns = the reference"
        );
        // Faster than the reference (noise): no lock CPU, never negative.
        let fast = summarise(
            SchemeKind::SeqLock,
            1,
            &plan(1),
            &[outcome(1, 10_500_000, 1_000_000_000)],
            Some(ref_ns),
        );
        assert_eq!(fast.lock_cpu_ns_per_request, Some(0.0));
        assert_eq!(fast.lock_cpu_share.unwrap().median, 0.0);
        // No reference run: not measured, not 0.
        let none = summarise(
            SchemeKind::Spin,
            1,
            &plan(1),
            &[outcome(1, 8_000_000, 1_000_000_000)],
            None,
        );
        assert_eq!(none.lock_cpu_share, None);
        assert_eq!(none.lock_cpu_ns_per_request, None);
    }

    #[test]
    fn before_after_figures() {
        // spin 125 ns per request (20 % in the lock) → rwspin 111.1 ns (10 %): +12.5 %
        // requests/s, −10 points of CPU in the lock, −11.1 % CPU per request.
        let results = [
            result(SchemeKind::Spin, 1, &[8_000_000; 3]),
            result(SchemeKind::RwSpin, 1, &[9_000_000; 3]),
            result(SchemeKind::Spin, 2, &[16_000_000; 3]),
        ];
        let ba = before_after(&results);
        assert_eq!(ba.len(), 1, "2 threads ran spin only: no row");
        let b = &ba[0];
        assert_eq!(b.threads, 1);
        assert_eq!(
            (b.before.scheme, b.after.scheme),
            (SchemeKind::Spin, SchemeKind::RwSpin)
        );
        assert!(
            close(b.requests_change_pct, 12.5),
            "{}",
            b.requests_change_pct
        );
        assert!(close(b.before.lock_cpu_pct.unwrap(), 20.0));
        assert!(close(b.after.lock_cpu_pct.unwrap(), 10.0));
        assert!(close(b.lock_cpu_change_pts.unwrap(), -10.0));
        assert!(close(b.cpu_per_request_change_pct, -100.0 / 9.0));
        assert!(close(b.before.cpu_pct, 100.0));
        assert!(close(b.requests_ratio.unwrap().estimate, 1.125));
        assert_eq!(b.verdict, Some(Effect::Gain));
        // One run each: the figures, but no interval and no verdict.
        let one = before_after(&[
            result(SchemeKind::Spin, 1, &[8_000_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000]),
        ]);
        assert!(close(one[0].requests_change_pct, 12.5));
        assert_eq!((one[0].requests_ratio, one[0].verdict), (None, None));
    }

    #[test]
    fn a_scheme_without_a_completed_run_enters_no_comparison() {
        // Ctrl-C before any rwspin run completed: requests/s not measured, never 0.
        let mut cut = result(SchemeKind::RwSpin, 1, &[9_000_000; 3]);
        cut.requests_per_sec = None;
        let results = [result(SchemeKind::Spin, 1, &[8_000_000; 3]), cut];
        assert!(before_after(&results).is_empty(), "no row against nothing");
        let b = best(&results).unwrap();
        assert_eq!(
            (b.per_threads[0].scheme, b.per_threads[0].runner_up),
            (SchemeKind::Spin, None)
        );
        assert!(close(b.per_threads[0].requests_per_sec, 8_000_000.0));
        let rc = read_cost(&results, &[SchemeKind::Spin, SchemeKind::RwSpin]);
        assert_eq!(rc.len(), 1, "rwspin has no measured cost: {rc:?}");
        assert!(best(&results[1..]).is_none());
    }

    #[test]
    fn the_best_scheme_per_thread_count_and_overall() {
        let results = [
            result(SchemeKind::Spin, 1, &[8_000_000; 3]),
            result(SchemeKind::RwSpin, 1, &[9_000_000; 3]),
            result(SchemeKind::Spin, 4, &[40_000_000; 3]),
            result(SchemeKind::RwSpin, 4, &[20_000_000; 3]),
        ];
        let b = best(&results).unwrap();
        let at1 = &b.per_threads[0];
        assert_eq!(
            (at1.threads, at1.scheme, at1.runner_up),
            (1, SchemeKind::RwSpin, Some(SchemeKind::Spin))
        );
        assert!(close(at1.over_runner_up.unwrap().estimate, 1.125));
        assert_eq!(at1.verdict, Some(Effect::Gain));
        assert_eq!(
            (b.per_threads[1].threads, b.per_threads[1].scheme),
            (4, SchemeKind::Spin)
        );
        // Geometric mean of each scheme's share of the best: spin √(8/9 × 1) = 0.943,
        // rwspin √(1 × 0.5) = 0.707.
        assert_eq!(b.overall, SchemeKind::Spin);
        assert!(
            close(b.overall_score, (8.0f64 / 9.0).sqrt()),
            "{}",
            b.overall_score
        );
        assert!(best(&[]).is_none());
    }

    #[test]
    fn a_lead_within_noise_is_a_tie() {
        // Medians 9.00 M vs 8.99 M, runs overlapping: the interval stays inside ±2 %.
        let results = [
            result(SchemeKind::Spin, 1, &[8_990_000, 8_950_000, 9_050_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000, 9_100_000, 8_950_000]),
        ];
        let at = &best(&results).unwrap().per_threads[0];
        assert_eq!(at.scheme, SchemeKind::RwSpin);
        assert_eq!(at.verdict, Some(Effect::NoEffect));
        // One run each: a winner, no verdict.
        let one = [
            result(SchemeKind::Spin, 1, &[8_000_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000]),
        ];
        let at = &best(&one).unwrap().per_threads[0];
        assert_eq!(
            (at.scheme, at.over_runner_up, at.verdict),
            (SchemeKind::RwSpin, None, None)
        );
    }

    #[test]
    fn read_cost_and_scaling() {
        let results = [
            result(SchemeKind::RwSpin, 1, &[8_000_000]),
            result(SchemeKind::RwSpin, 4, &[20_000_000]),
            result(SchemeKind::SeqLock, 4, &[36_000_000]),
        ];
        let c = read_cost(
            &results,
            &[SchemeKind::RwSpin, SchemeKind::SeqLock, SchemeKind::Rcu],
        );
        assert_eq!(c.len(), 2, "rcu did not run");
        // 20 M at 4 threads ÷ 8 M at 1 thread.
        assert!(close(c[0].scaling.unwrap(), 2.5));
        assert!(c[0].shared_reader_line && !c[1].shared_reader_line);
        assert!(close(c[0].by_threads[1].requests_per_sec_per_thread, 5e6));
        // 4 s of CPU for 20 M requests = 200 ns: 100 ns over the reference, 25 per lookup.
        assert!(close(
            c[0].by_threads[1].lock_cpu_ns_per_lookup.unwrap(),
            25.0
        ));
        assert_eq!(c[1].scaling, None, "no 1-thread run");
    }
}
