//! From a run's measurements to its row of the report, the row-count check, and which
//! layouts placed their threads alike (pure).

use super::PlannedLayout;
use super::model::Note;
use crate::oltp::model::{LayoutRun, OltpReport, ThreadRun};
use crate::oltp::{InsertOutcome, StopRule};
use crate::topology::Topology;

/// What the engine measured of one run.
pub(super) struct Measured {
    pub measured_ns: u64,
    /// Rows the engine counted inside its measured time (duration runs): the rate's
    /// numerator. Threads finish the commit they are in after the stop; those rows are in
    /// the table and the row check, not in the rate.
    pub rows: Option<u64>,
    pub involuntary_ctx_switches: u64,
    pub cpu_time_ns: u64,
    pub pinning_violations: usize,
    /// Hypervisor steal on the run's CPUs, 0–1, where measured.
    pub steal_share: Option<f64>,
    /// Why the run was disturbed while it ran, where its records say so.
    pub disturbed: Option<String>,
    /// Each plan thread's counters.
    pub counters: Vec<Option<crate::counters::Measurement>>,
    /// What the run's counters could not count, and why.
    pub status: Option<crate::counters::Status>,
}

/// One run's row of the report: rates over the run's elapsed time (until the last
/// thread's last commit for `--rows-per-thread`, the engine's measured time for
/// `--duration`), latencies, and the row check — the table must hold exactly the rows it
/// held before plus every row committed (`expected`).
pub(super) fn layout_run(
    layout: &PlannedLayout,
    round: usize,
    stop: StopRule,
    res: &Measured,
    outcome: &InsertOutcome,
    (in_table, expected): (u64, u64),
) -> LayoutRun {
    let plan = &layout.plan;
    let elapsed: Vec<u64> = outcome.threads.iter().map(|t| t.elapsed_ns).collect();
    let elapsed_ns = match stop {
        StopRule::RowsPerThread(_) => elapsed.iter().copied().max().unwrap_or(0),
        StopRule::Duration => res.measured_ns,
    };
    let rows = res.rows.unwrap_or_else(|| outcome.rows_measured());
    let txns: u64 = outcome.threads.iter().map(|t| t.txns).sum();
    let h = &outcome.latency_ns;
    let nonempty = |v: u64| if h.is_empty() { 0 } else { v };
    LayoutRun {
        placement: layout.request.clone(),
        threads: plan.threads.len(),
        round,
        inserts_per_sec: per_sec(rows, elapsed_ns),
        txns_per_sec: per_sec(txns, elapsed_ns),
        rows_committed: rows,
        elapsed_ns,
        thread_elapsed_min_ns: elapsed.iter().copied().min().unwrap_or(0),
        thread_elapsed_median_ns: median(&elapsed),
        thread_elapsed_max_ns: elapsed.iter().copied().max().unwrap_or(0),
        commit_latency_p50_ns: nonempty(h.value_at_quantile(0.5)),
        commit_latency_p99_ns: nonempty(h.value_at_quantile(0.99)),
        commit_latency_max_ns: nonempty(h.max()),
        commit_latency_mean_ns: if h.is_empty() { 0.0 } else { h.mean() },
        rows_in_table: in_table,
        rows_expected: expected,
        rows_verified: in_table == expected,
        involuntary_ctx_switches: res.involuntary_ctx_switches,
        client_cpu_time_ns: res.cpu_time_ns,
        pinning_violations: res.pinning_violations,
        steal_share: res.steal_share,
        disturbed: res.disturbed.clone(),
        per_thread: outcome
            .threads
            .iter()
            .map(|t| ThreadRun {
                thread: t.thread,
                cpus: plan.threads[t.thread].cpus.to_string(),
                backend_pid: t.backend_pid,
                rows: t.rows,
                elapsed_ns: t.elapsed_ns,
                inserts_per_sec: per_sec(t.rows, t.elapsed_ns),
                commit_latency_p99_ns: if t.latency_ns.is_empty() {
                    0
                } else {
                    t.latency_ns.value_at_quantile(0.99)
                },
                counters: res
                    .counters
                    .get(t.thread)
                    .cloned()
                    .flatten()
                    .map(|m| m.counts),
            })
            .collect(),
    }
}

/// The first run whose row count did not match, as an error naming the counts.
pub fn row_check_failure(rep: &OltpReport) -> Option<anyhow::Error> {
    rep.runs.iter().find(|r| !r.rows_verified).map(|bad| {
        anyhow::anyhow!(
            "row count check failed for {} (round {}): {} rows in the table, {} expected",
            bad.placement,
            bad.round,
            bad.rows_in_table,
            bad.rows_expected
        )
    })
}

/// Notes for layouts that put every thread where an earlier layout did (e.g. `all` is
/// `one-per-core` when the cores have one usable thread each), with the reason only when
/// it is the reason.
pub fn same_placements(topo: &Topology, layouts: &[PlannedLayout]) -> Vec<Note> {
    let mut notes = Vec::new();
    for (i, l) in layouts.iter().enumerate() {
        let p = &l.plan;
        if let Some(q) = layouts[..i]
            .iter()
            .map(|q| &q.plan)
            .find(|q| q.threads == p.threads)
        {
            let allowed = topo.allowed();
            let single = p
                .cpus()
                .iter()
                .all(|c| topo.core_of(c).intersection(&allowed).len() < 2);
            notes.push(Note::SamePlacement {
                layout: p.request.clone(),
                threads: p.threads.len(),
                as_layout: q.request.clone(),
                no_sibling: single,
            });
        }
    }
    notes
}

/// Median of a list (upper median for even lengths; 0 when empty).
pub use crate::stats::upper_median as median;

/// `n` per second of `ns`.
pub fn per_sec(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::oltp::BackendPinning;
    use crate::oltp::workload::ThreadOutcome;
    use crate::placement::{Plan, Request, ThreadPlacement};
    use hdrhistogram::Histogram;

    fn plan(request: &str, cpus: &[u32]) -> PlannedLayout {
        let plan = Plan {
            request: request.into(),
            threads: cpus
                .iter()
                .enumerate()
                .map(|(thread, &c)| ThreadPlacement {
                    thread,
                    cpus: CpuSet::from_cpus([c]),
                })
                .collect(),
            oversubscribed: false,
            notes: vec![],
            scope: None,
        };
        PlannedLayout {
            request: Request::parse(request).unwrap(),
            plan,
        }
    }

    fn histogram(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 1_000_000_000, 3).unwrap();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    /// Two threads: 100 rows in 1 s and 300 rows in 2 s, 10 warm-up rows each.
    fn outcome() -> InsertOutcome {
        let thread = |thread, rows, elapsed_ns, latencies: &[u64]| ThreadOutcome {
            thread,
            backend_pid: None,
            rows,
            warmup_rows: 10,
            txns: rows,
            elapsed_ns,
            completed: true,
            latency_ns: histogram(latencies),
        };
        InsertOutcome {
            threads: vec![
                thread(0, 100, 1_000_000_000, &[1_000, 3_000]),
                thread(1, 300, 2_000_000_000, &[2_000]),
            ],
            latency_ns: histogram(&[1_000, 2_000, 3_000]),
            pinning: BackendPinning::Local,
        }
    }

    fn measured(measured_ns: u64, rows: Option<u64>) -> Measured {
        Measured {
            measured_ns,
            rows,
            involuntary_ctx_switches: 3,
            cpu_time_ns: 5,
            pinning_violations: 0,
            steal_share: None,
            disturbed: None,
            counters: Vec::new(),
            status: None,
        }
    }

    #[test]
    fn a_fixed_row_run_is_timed_to_the_last_commit_and_its_rows_checked() {
        let o = outcome();
        assert_eq!((o.rows_committed(), o.rows_measured()), (420, 400));
        let p = plan("one-per-core", &[0, 1]);
        // 1,000 rows before + 420 committed = 1,420 expected.
        let run = layout_run(
            &p,
            1,
            StopRule::RowsPerThread(300),
            &measured(1_500_000_000, None),
            &o,
            (1_420, 1_420),
        );
        assert_eq!(
            run.elapsed_ns, 2_000_000_000,
            "the slowest thread's last commit"
        );
        assert_eq!(run.inserts_per_sec, 200.0, "400 rows in 2 s");
        assert_eq!(run.rows_committed, 400);
        assert_eq!(
            (run.thread_elapsed_min_ns, run.thread_elapsed_median_ns),
            (1_000_000_000, 2_000_000_000)
        );
        assert!(run.rows_verified);
        assert_eq!(run.per_thread[1].inserts_per_sec, 150.0);
        assert_eq!(run.per_thread[1].cpus, "1");
        assert_eq!(run.commit_latency_max_ns, o.latency_ns.max());
        // One row missing: the check fails, and names the counts.
        let lost = layout_run(
            &p,
            1,
            StopRule::RowsPerThread(300),
            &measured(1_500_000_000, None),
            &o,
            (1_419, 1_420),
        );
        assert!(!lost.rows_verified);
        let mut rep = crate::oltp::model::tests::sample();
        assert!(row_check_failure(&rep).is_none());
        rep.runs.push(lost);
        let e = row_check_failure(&rep).unwrap().to_string();
        assert_eq!(
            e,
            "row count check failed for one-per-core (round 1): 1419 rows in the table, 1420 expected"
        );
    }

    #[test]
    fn a_duration_run_is_timed_and_counted_by_the_engine() {
        // The engine counted 500 rows in its 2.5 s; rows committed after the stop are in
        // the table, not in the rate.
        let run = layout_run(
            &plan("pairs", &[0, 2]),
            0,
            StopRule::Duration,
            &measured(2_500_000_000, Some(500)),
            &outcome(),
            (420, 420),
        );
        assert_eq!((run.elapsed_ns, run.rows_committed), (2_500_000_000, 500));
        assert_eq!(run.inserts_per_sec, 200.0);
        assert_eq!(run.txns_per_sec, 160.0, "400 transactions in 2.5 s");
    }

    #[test]
    fn layouts_that_place_alike_are_named_with_the_reason() {
        // Two cores without siblings: `all` is `one-per-core`.
        let topo = crate::topology::fixture::topology(2, 1, false);
        let plans = [
            plan("one-per-core", &[0, 1]),
            plan("all", &[0, 1]),
            plan("cpus:1,0", &[1, 0]),
        ];
        assert_eq!(
            same_placements(&topo, &plans),
            [
                "`all` places its 2 threads exactly as `one-per-core`: their cores have no usable SMT sibling"
            ]
        );
        // With siblings, the same CPUs are not for want of one.
        let smt = crate::topology::fixture::topology(2, 2, false);
        let n = same_placements(&smt, &[plan("pairs", &[0, 2]), plan("cpus:0,2", &[0, 2])]);
        assert_eq!(n, ["`cpus:0,2` places its 2 threads exactly as `pairs`"]);
    }

    #[test]
    fn median_is_upper_for_even() {
        assert_eq!(median(&[3, 1, 2]), 2);
        assert_eq!(median(&[4, 1, 3, 2]), 3);
        assert_eq!(median(&[]), 0);
        assert_eq!(per_sec(5, 0), 0.0);
        assert_eq!(per_sec(5, 500_000_000), 10.0);
    }
}
