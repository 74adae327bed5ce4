//! From runs to answers, pure: per layout the median and spread of throughput, per-thread
//! rate and latency; per workload the SMT yield and a thread's speed on a shared core,
//! each a ratio paired round by round (the two runs of a round ran back to back, so drift
//! between rounds cancels) with a bootstrap interval and its three-way class.

use super::model::{Layout, LayoutRatio, LayoutSummary, RunRecord, YieldSplit};
use crate::stats::{self, Comparison, Summary, Thresholds};

/// Confidence asked of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2000;

/// Runs that count: completed (not cut short by Ctrl-C) and not disturbed while they ran.
fn complete(r: &RunRecord) -> bool {
    !r.interrupted && r.disturbed.is_none()
}

/// One summary per layout that has runs, in `layouts` order.
pub fn summarise(records: &[RunRecord], layouts: &[(Layout, usize)]) -> Vec<LayoutSummary> {
    layouts
        .iter()
        .map(|&(layout, threads)| {
            let runs: Vec<&RunRecord> = records
                .iter()
                .filter(|r| r.layout == layout && complete(r))
                .collect();
            let col = |f: &dyn Fn(&RunRecord) -> Option<f64>| -> Vec<f64> {
                runs.iter().filter_map(|r| f(r)).collect()
            };
            let med = |v: Vec<f64>| (!v.is_empty()).then(|| stats::median(&v));
            LayoutSummary {
                layout,
                threads,
                runs: runs.len(),
                ops_per_sec: Summary::of(&col(&|r| Some(r.ops_per_sec))),
                per_thread_ops_per_sec: Summary::of(&col(&|r| Some(r.per_thread_ops_per_sec))),
                time_per_op_ns: med(col(&|r| r.time_per_op_ns)),
                latency_p50_ns: med(col(&|r| r.latency_p50_ns.map(|v| v as f64))),
                latency_p99_ns: med(col(&|r| r.latency_p99_ns.map(|v| v as f64))),
            }
        })
        .collect()
}

/// `numerator ÷ denominator` paired by round (whole throughput, or per thread), with its
/// interval and class; None when no round has both runs complete.
pub fn ratio(
    records: &[RunRecord],
    numerator: Layout,
    denominator: Layout,
    per_thread: bool,
    t: Thresholds,
) -> Option<LayoutRatio> {
    let rate = |r: &RunRecord| {
        if per_thread {
            r.per_thread_ops_per_sec
        } else {
            r.ops_per_sec
        }
    };
    let find = |round: usize, layout: Layout| {
        records
            .iter()
            .find(|r| r.round == round && r.layout == layout && complete(r))
    };
    let mut rounds: Vec<usize> = records.iter().map(|r| r.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let mut used = Vec::new();
    let mut ratios = Vec::new();
    let mut dropped = Vec::new();
    for round in rounds {
        // A round whose run of either layout was disturbed gives no ratio: the noise it
        // carries is one-sided (another task can only slow a run), which no symmetric
        // interval allows for.
        if let Some(why) = [numerator, denominator].iter().find_map(|&l| {
            records
                .iter()
                .find(|r| r.round == round && r.layout == l && !r.interrupted)
                .and_then(|r| r.disturbed.as_ref().map(|w| format!("{l}: {w}")))
        }) {
            dropped.push((round, why));
            continue;
        }
        // A run that completed no operation measured nothing (one operation outlasted
        // it), not a rate of zero: its round gives no ratio.
        if let (Some(a), Some(b)) = (find(round, numerator), find(round, denominator))
            && rate(b) > 0.0
            && rate(a) > 0.0
            && rate(a).is_finite()
        {
            used.push(round);
            ratios.push(rate(a) / rate(b));
        }
    }
    let comparison = Comparison::of_paired_ratios(&ratios, t, CONFIDENCE)?;
    Some(LayoutRatio {
        what: if per_thread {
            format!("per-thread throughput, {numerator} ÷ {denominator}")
        } else {
            format!("throughput, {numerator} ÷ {denominator}")
        },
        numerator,
        denominator,
        per_thread,
        rounds: used,
        dropped,
        comparison,
    })
}

/// The SMT yield: throughput(all) ÷ throughput(one-per-core).
pub fn smt_yield(records: &[RunRecord]) -> Option<LayoutRatio> {
    ratio(
        records,
        Layout::All,
        Layout::OnePerCore,
        false,
        Thresholds::YIELD,
    )
}

/// A thread's speed on a shared core: per-thread throughput(pairs) ÷ per-thread
/// throughput(one-per-core).
pub fn shared_core_speed(records: &[RunRecord]) -> Option<LayoutRatio> {
    ratio(
        records,
        Layout::Pairs,
        Layout::OnePerCore,
        true,
        Thresholds::SLOWDOWN,
    )
}

/// The SMT yield split into IPC change × cycle share ÷ path length ([`YieldSplit`]),
/// paired by round; None when no round has both runs with cycles, instructions and
/// operations counted.
pub fn yield_split(records: &[RunRecord]) -> Option<YieldSplit> {
    // (IPC, cycles per second, instructions per operation) of a complete run.
    let figures = |r: &RunRecord| -> Option<(f64, f64, f64)> {
        let c = r.counters.as_ref()?;
        let (cy, ins) = (c.cycles? as f64, c.instructions? as f64);
        let secs = r.measured_ns as f64 / 1e9;
        let ops = r.ops_per_sec * secs;
        (cy > 0.0 && ins > 0.0 && secs > 0.0 && ops > 0.0).then(|| (ins / cy, cy / secs, ins / ops))
    };
    let find = |round: usize, layout: Layout| {
        records
            .iter()
            .find(|r| r.round == round && r.layout == layout && complete(r))
            .and_then(figures)
    };
    let mut rounds: Vec<usize> = records.iter().map(|r| r.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let (mut one, mut all, mut ipc, mut cps, mut ipo) = (vec![], vec![], vec![], vec![], vec![]);
    for round in rounds {
        if let (Some(a), Some(b)) = (find(round, Layout::All), find(round, Layout::OnePerCore)) {
            all.push(a.0);
            one.push(b.0);
            ipc.push(a.0 / b.0);
            cps.push(a.1 / b.1);
            ipo.push(a.2 / b.2);
        }
    }
    (!ipc.is_empty()).then(|| YieldSplit {
        ipc_one_per_core: stats::median(&one),
        ipc_all: stats::median(&all),
        ipc_ratio: stats::median(&ipc),
        cycles_per_sec_ratio: stats::median(&cps),
        instructions_per_op_ratio: stats::median(&ipo),
        rounds: ipc.len(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::stats::Effect;

    /// A clean `all` run of round `round`, for other modules' tests.
    pub(crate) fn record(round: usize) -> RunRecord {
        rec(round, Layout::All, 2, 100.0)
    }

    fn rec(round: usize, layout: Layout, threads: usize, ops: f64) -> RunRecord {
        RunRecord {
            round,
            position: 0,
            layout,
            threads,
            ops_per_sec: ops,
            per_thread_ops_per_sec: ops / threads as f64,
            time_per_op_ns: Some(1e9 * threads as f64 / ops),
            latency_p50_ns: None,
            latency_p99_ns: None,
            latency_samples: 0,
            cpus: CpuSet::new(),
            observed_cpus: CpuSet::new(),
            pinning_ok: true,
            steal_share: None,
            interrupted: false,
            disturbed: None,
            rows_verified: None,
            synthetic: true,
            measured_ns: 1_000_000_000,
            counters: None,
        }
    }

    #[test]
    fn the_yield_splits_into_ipc_and_cycles() {
        use crate::counters::{Counts, Event, Scaled};
        let counted = |mut r: RunRecord, cycles: u64, ipc: f64| {
            let full = |v| Scaled {
                value: v,
                counted_share: 1.0,
            };
            r.counters = Some(Counts::from_scaled(&[
                (Event::Cycles, full(cycles)),
                (Event::Instructions, full((cycles as f64 * ipc) as u64)),
            ]));
            r
        };
        // A core whose IPC falls from 0.39 with one thread to 0.25 with both siblings
        // busy; both siblings run, so twice the cycles. 1,000 instructions per operation:
        // one-per-core 4 cores × 1 G cycles × 0.39 / 1000 = 1.56 M ops/s.
        let mut v = Vec::new();
        for k in 0..3 {
            v.push(counted(
                rec(k, Layout::OnePerCore, 4, 1.56e6),
                4_000_000_000,
                0.39,
            ));
            v.push(counted(rec(k, Layout::All, 8, 2.0e6), 8_000_000_000, 0.25));
        }
        let s = yield_split(&v).unwrap();
        assert!((s.ipc_ratio - 0.25 / 0.39).abs() < 1e-3, "{s:?}");
        assert!((s.cycles_per_sec_ratio - 2.0).abs() < 1e-9);
        assert!((s.instructions_per_op_ratio - 1.0).abs() < 1e-3);
        assert_eq!((s.ipc_one_per_core, s.ipc_all, s.rounds), (0.39, 0.25, 3));
        // The identity: yield = IPC × cycles ÷ instructions per op.
        let y = smt_yield(&v).unwrap().comparison.estimate;
        let product = s.ipc_ratio * s.cycles_per_sec_ratio / s.instructions_per_op_ratio;
        assert!((y - product).abs() < 0.01, "{y} vs {product}");
        // Without cycles (no PMU): not measured.
        assert_eq!(yield_split(&runs(3, 1.3, 0.65)), None);
    }

    /// `rounds` rounds on 4 cores: one-per-core at 100 per thread, `all` 8 threads at
    /// `yield_` × the one-per-core total, pairs 4 threads at `shared` × 100 per thread, each
    /// round drifting by a common factor (which pairing cancels).
    fn runs(rounds: usize, yield_: f64, shared: f64) -> Vec<RunRecord> {
        let mut v = Vec::new();
        for k in 0..rounds {
            let drift = 1.0 + 0.1 * (k % 3) as f64;
            v.push(rec(k, Layout::OnePerCore, 4, 400.0 * drift));
            v.push(rec(k, Layout::All, 8, 400.0 * yield_ * drift));
            v.push(rec(k, Layout::Pairs, 4, 400.0 * shared * drift));
        }
        v
    }

    #[test]
    fn yield_and_shared_speed_hand_computed() {
        let r = runs(6, 1.3, 0.65);
        let y = smt_yield(&r).unwrap();
        // Drift cancels round by round: every ratio is exactly 1.3.
        assert!((y.comparison.estimate - 1.3).abs() < 1e-12, "{y:?}");
        assert!((y.comparison.low - 1.3).abs() < 1e-12 && (y.comparison.high - 1.3).abs() < 1e-12);
        assert_eq!(y.comparison.effect, Effect::Gain);
        assert_eq!(y.rounds, [0, 1, 2, 3, 4, 5]);
        assert!(!y.comparison.indicative);
        let s = shared_core_speed(&r).unwrap();
        assert!((s.comparison.estimate - 0.65).abs() < 1e-12);
        assert_eq!(s.comparison.effect, Effect::Loss, "0.65 < 0.8");
        assert!(s.per_thread);
        let sums = summarise(
            &r,
            &[
                (Layout::OnePerCore, 4),
                (Layout::All, 8),
                (Layout::Pairs, 4),
            ],
        );
        assert_eq!(sums.len(), 3);
        assert_eq!(sums[1].runs, 6);
        // Medians of 400·{1, 1.1, 1.2, 1, 1.1, 1.2} = 440; per thread 110.
        let opc = sums[0].ops_per_sec.unwrap();
        assert!((opc.median - 440.0).abs() < 1e-9, "{opc:?}");
        assert!((sums[0].per_thread_ops_per_sec.unwrap().median - 110.0).abs() < 1e-9);
        assert!(sums[0].latency_p99_ns.is_none(), "rulers time no operation");
    }

    #[test]
    fn a_yield_near_one_is_no_effect_and_a_low_one_a_loss() {
        assert_eq!(
            smt_yield(&runs(5, 1.0, 0.5)).unwrap().comparison.effect,
            Effect::NoEffect
        );
        assert_eq!(
            smt_yield(&runs(5, 0.7, 0.5)).unwrap().comparison.effect,
            Effect::Loss
        );
    }

    /// A neighbour that took CPU time from round 2's `all` run slowed it by a quarter:
    /// kept, that round pulled the yield down one-sidedly. It is left out, with its reason.
    #[test]
    fn a_round_disturbed_while_it_ran_is_dropped_with_its_reason() {
        let mut r = runs(5, 1.3, 0.65);
        for x in r
            .iter_mut()
            .filter(|x| x.round == 2 && x.layout == Layout::All)
        {
            x.ops_per_sec *= 0.75;
            x.disturbed = Some("thread 0 on CPU 0 was kept off its CPU by other work".into());
        }
        let y = smt_yield(&r).unwrap();
        assert_eq!(y.rounds, [0, 1, 3, 4]);
        assert_eq!(y.dropped.len(), 1);
        assert_eq!(y.dropped[0].0, 2);
        assert!(
            y.dropped[0].1.starts_with("all: thread 0"),
            "{:?}",
            y.dropped
        );
        assert!(
            (y.comparison.estimate - 1.3).abs() < 0.02,
            "{:?}",
            y.comparison
        );
    }

    #[test]
    fn interrupted_and_missing_runs_leave_their_round_out() {
        let mut r = runs(4, 1.2, 0.6);
        r.retain(|x| !(x.round == 1 && x.layout == Layout::All));
        r.iter_mut()
            .filter(|x| x.round == 3)
            .for_each(|x| x.interrupted = true);
        let y = smt_yield(&r).unwrap();
        assert_eq!(y.rounds, [0, 2]);
        assert!(y.comparison.indicative);
        assert_eq!(y.comparison.interval_label(), "indicative (n = 2)");
        // A run with no completed operation gives its round no ratio.
        let mut z = runs(3, 1.2, 0.6);
        z.iter_mut()
            .filter(|x| x.round == 0 && x.layout == Layout::All)
            .for_each(|x| x.ops_per_sec = 0.0);
        assert_eq!(smt_yield(&z).unwrap().rounds, [1, 2]);
        // Nothing paired: no ratio at all.
        let only: Vec<RunRecord> = r.into_iter().filter(|x| x.layout == Layout::All).collect();
        assert!(smt_yield(&only).is_none());
    }
}
