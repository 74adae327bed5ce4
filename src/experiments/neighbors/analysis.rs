//! From one step's engine run and worker outcome to a [`Step`]: rates, latencies,
//! scheduling evidence and the diagnosis. Pure.

use super::diagnosis::{self, Diagnosis, Evidence};
use super::model::{SeriesStep, Step};
use crate::cpuset::CpuSet;
use crate::engine::RunResult;
use crate::placement::Plan;
use crate::stats::{Comparison, Summary, Thresholds};
use crate::topology::{Proximity, Topology};
use hdrhistogram::Histogram;

/// What one step measured.
pub struct StepRun<'a> {
    /// Burners in this step.
    pub burners: usize,
    /// Each burner's CPU set.
    pub burner_cpus: &'a [CpuSet],
    /// The step's plan: workers first.
    pub plan: &'a Plan,
    pub result: &'a RunResult,
    /// Worker operation latencies, ns.
    pub latency_ns: &'a Histogram<u64>,
    /// Long lock holds and long waits; None when the worker cannot see its lock.
    pub preemptions: Option<(u64, u64)>,
    pub burner_ops_per_sec: f64,
}

/// Summed rate of the thread burners (plan threads after the `workers`).
pub fn thread_burner_ops_per_sec(r: &RunResult, workers: usize) -> f64 {
    r.threads
        .iter()
        .skip(workers)
        .map(|t| t.ops_per_sec(r.measured_ns))
        .sum::<f64>()
        .max(0.0)
        // An empty f64 sum is -0.0, and max(-0.0, 0.0) may keep it; + 0.0 makes it +0.
        + 0.0
}

/// Where the burners sit relative to the workers: (some burner pinned to the SMT sibling of
/// a CPU a worker is pinned to; some burner may run on a sibling of a CPU a worker may run
/// on, because the scheduler places one of them; some burner pinned to a worker's CPU).
/// Only the first establishes SMT sharing: with unpinned threads the scheduler, not the
/// run, decides who meets whom.
fn burner_proximity(
    topo: &Topology,
    worker_sets: &[CpuSet],
    burner_cpus: &[CpuSet],
) -> (bool, bool, bool) {
    // A thread pinned to one CPU: that CPU.
    let single = |s: &CpuSet| s.first().filter(|_| s.len() == 1);
    let sibling = |a: u32, b: u32| topo.proximity(a, b) == Proximity::SmtSibling;
    let mut on_siblings = false;
    let mut maybe = false;
    for w in worker_sets {
        for b in burner_cpus {
            match (single(w), single(b)) {
                (Some(w), Some(b)) => on_siblings |= sibling(w, b),
                _ => {
                    // Either side unpinned: a sibling of any CPU the worker may use, among
                    // the CPUs the burner may use.
                    maybe |= w
                        .iter()
                        .any(|x| topo.core_of(x).iter().any(|y| y != x && b.contains(y)))
                }
            }
        }
    }
    let worker_cpus: CpuSet = worker_sets.iter().filter_map(single).collect();
    let on_cpus = burner_cpus
        .iter()
        .filter_map(single)
        .any(|b| worker_cpus.contains(b));
    (on_siblings, maybe, on_cpus)
}

/// The step `m` measured with `workers` workers; `baseline` is the reference rate (None:
/// this step is its own), `slice` the scheduler slice assumed.
pub fn step(
    topo: &Topology,
    workers: usize,
    m: &StepRun<'_>,
    baseline: Option<f64>,
    slice: f64,
) -> Step {
    let r = m.result;
    let secs = r.measured_ns.max(1) as f64 / 1e9;
    let threads = &r.threads[..workers.min(r.threads.len())];
    let ops: u64 = threads.iter().map(|t| t.ops).sum();
    let ops_per_sec = ops as f64 / secs;
    // Each thread's counters cover its own span (from its first operation of the
    // measurement to its return after the stop), which with hundreds of threads per CPU
    // is seconds longer than the window: every rate and share below is over those spans,
    // so a share stays a share (dividing by the window instead once read 1,167 %).
    let span = |t: &crate::engine::ThreadResult| t.counters_span_or(r.measured_ns).max(1) as f64;
    let spans: f64 = threads.iter().map(span).sum();
    // Switches of all workers per second of a worker's mean span.
    let span_secs = spans / threads.len().max(1) as f64 / 1e9;
    let invol: u64 = threads.iter().map(|t| t.involuntary_ctx_switches).sum();
    let vol: u64 = threads.iter().map(|t| t.voluntary_ctx_switches).sum();
    let invol_per_sec = invol as f64 / span_secs;
    let vol_per_sec = vol as f64 / span_secs;
    // Unmeasured for one thread is unmeasured for the step: a partial sum would look
    // like less waiting.
    let delay: Option<u64> = threads.iter().map(|t| t.runqueue_delay_ns).sum();
    // Clamped: a thread reads its counters while on a CPU, so every wait it counts lies
    // inside its span; only a preemption between two reads of one snapshot can push the
    // quotient past 1.
    let delay_share = delay
        .filter(|_| !threads.is_empty())
        .map(|d| (d as f64 / spans).min(1.0));
    let worker_sets: Vec<CpuSet> = m.plan.threads[..workers.min(m.plan.threads.len())]
        .iter()
        .map(|t| t.cpus.clone())
        .collect();
    let (on_siblings, maybe_siblings, on_cpus) =
        burner_proximity(topo, &worker_sets, m.burner_cpus);
    // Oversubscription counts the threads that can take the workers' CPUs against the CPUs
    // they may use, not every CPU of the machine.
    let (runnable, cpus) = super::plan::contention(&worker_sets, m.burner_cpus);
    let cpus = cpus.len();
    let baseline = baseline.unwrap_or(ops_per_sec);
    let ev = Evidence {
        ops_per_sec,
        baseline_ops_per_sec: baseline,
        runnable_threads: runnable,
        cpus,
        burners_on_worker_siblings: on_siblings,
        burners_maybe_on_worker_siblings: maybe_siblings,
        burners_on_worker_cpus: on_cpus,
        worker_involuntary_switches_per_sec: invol_per_sec,
        worker_run_delay_share: delay_share,
        holder_preemptions: m.preemptions.map(|(h, w)| h + w),
        time_slice_ns: slice,
    };
    let (diagnosis, reason) = diagnosis::diagnose(&ev);
    Step {
        burners: m.burners,
        round: 0,
        ops_per_sec,
        ratio_to_first: if baseline > 0.0 {
            ops_per_sec / baseline
        } else {
            0.0
        },
        time_per_op_ns: if ops > 0 {
            r.measured_ns as f64 * workers as f64 / ops as f64
        } else {
            f64::INFINITY
        },
        measured_ns: r.measured_ns,
        latency_p50_ns: m.latency_ns.value_at_quantile(0.5),
        latency_p99_ns: m.latency_ns.value_at_quantile(0.99),
        latency_max_ns: m.latency_ns.max(),
        runnable_threads: runnable,
        cpus,
        worker_involuntary_switches_per_sec: invol_per_sec,
        worker_voluntary_switches_per_sec: vol_per_sec,
        worker_run_delay_share: delay_share,
        holder_preemptions: m.preemptions.map(|p| p.0),
        long_waits: m.preemptions.map(|p| p.1),
        burner_ops_per_sec: m.burner_ops_per_sec,
        diagnosis,
        reason,
        pinning_ok: r.pinning_ok(),
        interrupted: r.interrupted,
        workers,
        steal_share: r.steal_share,
        worker_counters: threads
            .iter()
            .map(|t| t.counters.as_ref().map(|m| &m.counts))
            .collect::<Option<Vec<_>>>()
            .and_then(crate::counters::Counts::sum),
    }
}

/// Steps of several rounds summarised per burner count: median ops/s with spread, the
/// diagnosis most rounds gave (the more severe one on a tie), the round closest to the
/// median as the representative for runnable threads, CPUs and the reason, and each
/// round's ratio to its own first step as a paired comparison (drift between rounds
/// cancels).
pub fn summarise<'a>(steps: impl IntoIterator<Item = &'a Step>) -> Vec<SeriesStep> {
    let all: Vec<&Step> = steps.into_iter().collect();
    let mut burners: Vec<usize> = all.iter().map(|s| s.burners).collect();
    burners.sort_unstable();
    burners.dedup();
    let mut out: Vec<SeriesStep> = Vec::new();
    for b in burners {
        let mine: Vec<&Step> = all.iter().copied().filter(|s| s.burners == b).collect();
        let rates: Vec<f64> = mine.iter().map(|s| s.ops_per_sec).collect();
        let Some(sum) = Summary::of(&rates) else {
            continue;
        };
        let Some(mid) = mine.iter().min_by(|x, y| {
            (x.ops_per_sec - sum.median)
                .abs()
                .total_cmp(&(y.ops_per_sec - sum.median).abs())
        }) else {
            continue;
        };
        let mut counts: Vec<(Diagnosis, usize)> = Vec::new();
        for s in &mine {
            match counts.iter_mut().find(|(d, _)| *d == s.diagnosis) {
                Some((_, n)) => *n += 1,
                None => counts.push((s.diagnosis, 1)),
            }
        }
        let diagnosis = counts
            .iter()
            .max_by_key(|(d, n)| (*n, d.severity()))
            .map_or(Diagnosis::None, |(d, _)| *d);
        let mut p99: Vec<u64> = mine.iter().map(|s| s.latency_p99_ns).collect();
        p99.sort_unstable();
        let paired: Vec<f64> = mine
            .iter()
            .map(|s| s.ratio_to_first)
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        let ratio = Comparison::of_paired_ratios(&paired, Thresholds::SLOWDOWN, 0.95);
        out.push(SeriesStep {
            burners: b,
            runnable_threads: mid.runnable_threads,
            cpus: mid.cpus,
            ops_per_sec: sum,
            ratio_to_first: 0.0,
            latency_p99_ns: p99[p99.len() / 2],
            diagnosis,
            reason: mid.reason.clone(),
            ratio,
        });
    }
    let first = out.first().map_or(0.0, |s| s.ops_per_sec.median);
    for s in &mut out {
        s.ratio_to_first = if first > 0.0 {
            s.ops_per_sec.median / first
        } else {
            0.0
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{RunSpec, ThreadResult};
    use crate::experiments::diagnosis::Diagnosis;
    use crate::placement::ThreadPlacement;
    use crate::topology::fixture::topology;

    /// A 1-second run: `ops` per thread, each with `delay` ns waiting for a CPU.
    fn result(ops: &[u64], delay: &[Option<u64>]) -> RunResult {
        RunResult {
            workload: "hot-page/ticket".into(),
            placement: String::new(),
            spec: RunSpec::default(),
            warmup_ns: 0,
            measured_ns: 1_000_000_000,
            interval_ns: vec![1_000_000_000],
            stop_latency_ns: 0,
            threads: ops
                .iter()
                .zip(delay)
                .enumerate()
                .map(|(i, (&ops, &d))| ThreadResult {
                    thread: i,
                    tid: 0,
                    cpus: CpuSet::new(),
                    observed_cpus: CpuSet::new(),
                    warmup_ops: 0,
                    ops,
                    interval_ops: vec![ops],
                    cpu_time_ns: 0,
                    voluntary_ctx_switches: 1,
                    involuntary_ctx_switches: 3,
                    runqueue_delay_ns: d,
                    counters: None,
                    counters_span_ns: 1_000_000_000,
                })
                .collect(),
            pinning_violations: Vec::new(),
            interrupted: false,
            synthetic: true,
            steal_share: None,
            nice_offset: 0,
        }
    }

    fn plan(cpus: &[u32]) -> Plan {
        Plan {
            request: String::new(),
            threads: cpus
                .iter()
                .enumerate()
                .map(|(thread, &c)| ThreadPlacement {
                    thread,
                    cpus: CpuSet::from_cpus([c]),
                })
                .collect(),
            oversubscribed: false,
            notes: Vec::new(),
            scope: None,
        }
    }

    fn latencies() -> Histogram<u64> {
        let mut h = crate::locks::new_histogram();
        for ns in [1_000, 2_000, 3_000] {
            h.record(ns).unwrap();
        }
        h
    }

    #[test]
    fn a_step_from_hand_computed_numbers() {
        // 4 cores × 2 siblings; workers on CPUs 0 and 1, two burners on their siblings.
        let topo = topology(4, 2, false);
        let burners = [CpuSet::from_cpus([4]), CpuSet::from_cpus([5])];
        let plan = plan(&[0, 1, 4, 5]);
        let r = result(
            &[30_000, 10_000, 5, 5],
            &[Some(100_000_000), Some(300_000_000), None, None],
        );
        let lat = latencies();
        let m = StepRun {
            burners: 2,
            burner_cpus: &burners,
            plan: &plan,
            result: &r,
            latency_ns: &lat,
            preemptions: Some((2, 3)),
            burner_ops_per_sec: thread_burner_ops_per_sec(&r, 2),
        };
        let s = step(&topo, 2, &m, Some(100_000.0), 1.5e6);
        assert_eq!(s.ops_per_sec, 40_000.0);
        assert_eq!(s.ratio_to_first, 0.4);
        // 1 s × 2 workers / 40,000 ops.
        assert_eq!(s.time_per_op_ns, 50_000.0);
        // The sibling burners cannot take the workers' CPUs 0 and 1: 2 runnable on 2.
        assert_eq!((s.runnable_threads, s.cpus), (2, 2));
        assert_eq!(s.worker_involuntary_switches_per_sec, 6.0);
        assert_eq!(s.worker_voluntary_switches_per_sec, 2.0);
        // 0.4 s of waiting over 2 worker-seconds; burners' schedstat does not count.
        assert_eq!(s.worker_run_delay_share, Some(0.2));
        assert_eq!((s.holder_preemptions, s.long_waits), (Some(2), Some(3)));
        assert_eq!(s.burner_ops_per_sec, 10.0);
        assert_eq!(s.latency_max_ns, lat.max());
        assert_eq!(s.diagnosis, Diagnosis::SmtSharing, "{}", s.reason);
        assert!(
            s.reason
                .contains("20% of time waiting for a CPU, 5 preempted/long holds")
        );
    }

    #[test]
    fn waits_and_switches_are_over_each_workers_own_span_not_the_window() {
        // A 1 s window; the two workers took 3 s and 1 s from their first operation to
        // their return after the stop (a slow stop at hundreds of threads per CPU), and
        // waited 2.7 s and 0.5 s of it.
        let topo = topology(4, 1, false);
        let plan = plan(&[0, 1]);
        let mut r = result(&[10, 10], &[Some(2_700_000_000), Some(500_000_000)]);
        r.threads[0].counters_span_ns = 3_000_000_000;
        let lat = latencies();
        let step_of = |r: &RunResult| {
            let m = StepRun {
                burners: 0,
                burner_cpus: &[],
                plan: &plan,
                result: r,
                latency_ns: &lat,
                preemptions: None,
                burner_ops_per_sec: 0.0,
            };
            step(&topo, 2, &m, None, 1.5e6)
        };
        let s = step_of(&r);
        // 3.2 s of waiting in 4 s of the workers' time; over the 1 s window × 2 workers
        // it would read 160 %.
        let share = s.worker_run_delay_share.unwrap();
        assert!((share - 0.8).abs() < 1e-12, "{share}");
        // 6 switches in a mean span of 2 s.
        assert!((s.worker_involuntary_switches_per_sec - 3.0).abs() < 1e-12);
        assert_eq!(s.measured_ns, 1_000_000_000);
        // Files from before the span was recorded (0) read it as the window.
        r.threads[0].counters_span_ns = 0;
        r.threads[0].runqueue_delay_ns = Some(900_000_000);
        let share = step_of(&r).worker_run_delay_share.unwrap();
        assert!((share - 0.7).abs() < 1e-12, "{share}");
    }

    #[test]
    fn an_unmeasured_run_queue_delay_stays_unmeasured() {
        let topo = topology(4, 1, false);
        let burners = [CpuSet::from_cpus([2]), CpuSet::from_cpus([3])];
        let plan = plan(&[0, 1, 2, 3]);
        // One worker without schedstat makes the step's delay unknown, not smaller.
        let r = result(
            &[30_000, 10_000, 5, 5],
            &[Some(900_000_000), None, None, None],
        );
        let lat = latencies();
        let m = StepRun {
            burners: 2,
            burner_cpus: &burners,
            plan: &plan,
            result: &r,
            latency_ns: &lat,
            preemptions: None,
            burner_ops_per_sec: 0.0,
        };
        let s = step(&topo, 2, &m, Some(100_000.0), 1.5e6);
        assert_eq!(s.worker_run_delay_share, None);
        assert_eq!((s.holder_preemptions, s.long_waits), (None, None));
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["worker_run_delay_share"].is_null(), "{json}");
        assert_eq!(s.diagnosis, Diagnosis::SharedResources, "{}", s.reason);
        assert!(
            s.reason
                .contains("time waiting for a CPU not measured, preempted/long holds not measured"),
            "{}",
            s.reason
        );
        assert!(!s.reason.contains("0% of time"), "{}", s.reason);
    }

    #[test]
    fn burners_on_the_workers_cpus_and_unpinned_workers() {
        let smt = topology(2, 2, false);
        let all = smt.allowed();
        let one = |c: u32| CpuSet::from_cpus([c]);
        // Unpinned workers on an SMT machine may meet any burner on a sibling: possible,
        // never certain.
        let got = burner_proximity(&smt, std::slice::from_ref(&all), std::slice::from_ref(&all));
        assert_eq!(got, (false, true, false));
        // Pinned workers, unpinned burners: the same.
        assert_eq!(
            burner_proximity(&smt, &[one(0)], std::slice::from_ref(&all)),
            (false, true, false)
        );
        // A burner pinned to worker 0's sibling (CPU 2): certain.
        assert_eq!(
            burner_proximity(&smt, &[one(0), one(1)], &[one(2)]),
            (true, false, false)
        );
        // No burners, no sharing.
        assert_eq!(burner_proximity(&smt, &[all], &[]), (false, false, false));
        let flat = topology(4, 1, false);
        let got = burner_proximity(&flat, &[one(0), one(1)], &[one(1)]);
        assert_eq!(got, (false, false, true));
        // Without SMT nothing is a sibling, pinned or not.
        let got = burner_proximity(&flat, &[flat.allowed()], &[flat.allowed()]);
        assert_eq!(got, (false, false, false));
    }

    /// A step of 2 workers with `burners` placed as given, at `ops` of a 100,000 ops/s
    /// reference, every worker waiting `delay` of its time.
    fn placed_step(
        topo: &Topology,
        workers: &[CpuSet],
        burners: &[CpuSet],
        ops: u64,
        delay: u64,
    ) -> Step {
        let plan = Plan {
            request: String::new(),
            threads: workers
                .iter()
                .chain(burners)
                .enumerate()
                .map(|(thread, c)| ThreadPlacement {
                    thread,
                    cpus: c.clone(),
                })
                .collect(),
            oversubscribed: false,
            notes: Vec::new(),
            scope: None,
        };
        let n = workers.len() + burners.len();
        let mut per = vec![ops / workers.len() as u64; workers.len()];
        per.extend(std::iter::repeat_n(5, burners.len()));
        let r = result(&per, &vec![Some(delay); n]);
        let lat = latencies();
        let m = StepRun {
            burners: burners.len(),
            burner_cpus: burners,
            plan: &plan,
            result: &r,
            latency_ns: &lat,
            preemptions: Some((0, 0)),
            burner_ops_per_sec: 0.0,
        };
        step(topo, workers.len(), &m, Some(100_000.0), 1.5e6)
    }

    #[test]
    fn oversubscription_is_judged_from_the_cpus_the_threads_are_pinned_to() {
        let one = |c: u32| CpuSet::from_cpus([c]);
        let flat = topology(4, 1, false);
        // Workers alone on CPUs 0 and 1, 0 % waiting; five burners crowd CPUs 2 and 3.
        // 7 threads on 4 CPUs, but no burner can take a worker's CPU.
        let burners = [one(2), one(3), one(2), one(3), one(2)];
        let s = placed_step(&flat, &[one(0), one(1)], &burners, 90_000, 0);
        assert_eq!((s.runnable_threads, s.cpus), (2, 2));
        assert_eq!(s.diagnosis, Diagnosis::None, "{}", s.reason);
        // Even with a loss it is not called oversubscription.
        let s = placed_step(&flat, &[one(0), one(1)], &burners, 50_000, 0);
        assert_eq!(s.diagnosis, Diagnosis::SharedResources, "{}", s.reason);
        assert!(
            !s.reason.contains("more runnable threads than CPUs"),
            "{}",
            s.reason
        );
        // One worker alone on a 1-CPU set: 1 runnable on 1 CPU.
        let s = placed_step(&flat, &[one(0)], &[one(1), one(1)], 100_000, 0);
        assert_eq!((s.runnable_threads, s.cpus), (1, 1));
        assert_eq!(s.diagnosis, Diagnosis::None, "{}", s.reason);
        // A burner on a worker's CPU does oversubscribe it: 3 on 2.
        let s = placed_step(&flat, &[one(0), one(1)], &[one(1)], 60_000, 400_000_000);
        assert_eq!((s.runnable_threads, s.cpus), (3, 2));
        assert_eq!(s.diagnosis, Diagnosis::Oversubscribed, "{}", s.reason);
    }

    #[test]
    fn an_unpinned_run_is_never_diagnosed_smt_sharing() {
        let smt = topology(2, 2, false);
        let all = smt.allowed();
        // Unpinned workers and burners, 3 of 4 CPUs busy, half the rate: possibly SMT
        // sharing, not smt-sharing.
        let s = placed_step(
            &smt,
            &[all.clone(), all.clone()],
            std::slice::from_ref(&all),
            50_000,
            0,
        );
        assert_eq!((s.runnable_threads, s.cpus), (3, 4));
        assert_eq!(s.diagnosis, Diagnosis::PossiblySmtSharing, "{}", s.reason);
        assert!(
            s.reason.starts_with("possibly SMT sharing: unpinned"),
            "{}",
            s.reason
        );
        // Pinned workers, unpinned burners: the same.
        let one = |c: u32| CpuSet::from_cpus([c]);
        let s = placed_step(
            &smt,
            &[one(0), one(1)],
            std::slice::from_ref(&all),
            50_000,
            0,
        );
        assert_eq!(s.diagnosis, Diagnosis::PossiblySmtSharing, "{}", s.reason);
        // Burners pinned to the workers' siblings: a controlled SMT-sharing loss.
        let s = placed_step(&smt, &[one(0), one(1)], &[one(2), one(3)], 50_000, 0);
        assert_eq!(s.diagnosis, Diagnosis::SmtSharing, "{}", s.reason);
    }

    #[test]
    fn no_thread_burners_is_a_positive_zero() {
        let r = result(&[10], &[None]);
        let z = thread_burner_ops_per_sec(&r, 1);
        assert!(z == 0.0 && z.is_sign_positive());
    }
}
