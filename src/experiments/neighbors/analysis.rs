//! From one step's engine run and worker outcome to a [`Step`]: rates, latencies,
//! scheduling evidence and the diagnosis. Pure.

use super::diagnosis::{self, Evidence};
use super::model::Step;
use crate::cpuset::CpuSet;
use crate::engine::RunResult;
use crate::placement::Plan;
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

/// Where the burners sit relative to the workers' CPUs: (some burner on a worker's SMT
/// sibling, some burner on a worker's CPU). Unpinned workers on an SMT machine meet their
/// burners as siblings whenever both run, so with burners that counts as siblings.
fn burner_proximity(
    topo: &Topology,
    worker_cpus: &CpuSet,
    burner_cpus: &[CpuSet],
    burners: usize,
) -> (bool, bool) {
    let pinned_workers = *worker_cpus != topo.allowed();
    // A burner pinned to one CPU: that CPU.
    let single = |b: &CpuSet| b.first().filter(|_| b.len() == 1);
    let on_siblings = burner_cpus.iter().filter_map(single).any(|b| {
        worker_cpus
            .iter()
            .any(|w| topo.proximity(w, b) == Proximity::SmtSibling)
    }) || (!pinned_workers && topo.threads_per_core() > 1 && burners > 0);
    let on_cpus = burner_cpus
        .iter()
        .filter_map(single)
        .any(|b| worker_cpus.contains(b));
    (on_siblings, on_cpus)
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
    let invol: u64 = threads.iter().map(|t| t.involuntary_ctx_switches).sum();
    let vol: u64 = threads.iter().map(|t| t.voluntary_ctx_switches).sum();
    // Unmeasured for one thread is unmeasured for the step: a partial sum would look
    // like less waiting.
    let delay: Option<u64> = threads.iter().map(|t| t.runqueue_delay_ns).sum();
    let delay_share = delay.map(|d| d as f64 / (r.measured_ns.max(1) as f64 * workers as f64));
    let worker_cpus: CpuSet = m.plan.threads[..workers]
        .iter()
        .fold(CpuSet::new(), |a, t| a.union(&t.cpus));
    let (on_siblings, on_cpus) = burner_proximity(topo, &worker_cpus, m.burner_cpus, m.burners);
    let cpus = topo.allowed().len();
    let runnable = workers + m.burners;
    let baseline = baseline.unwrap_or(ops_per_sec);
    let ev = Evidence {
        ops_per_sec,
        baseline_ops_per_sec: baseline,
        runnable_threads: runnable,
        cpus,
        burners_on_worker_siblings: on_siblings,
        burners_on_worker_cpus: on_cpus,
        worker_involuntary_switches_per_sec: invol as f64 / secs,
        worker_run_delay_share: delay_share,
        holder_preemptions: m.preemptions.map(|(h, w)| h + w),
        time_slice_ns: slice,
    };
    let (diagnosis, reason) = diagnosis::diagnose(&ev);
    Step {
        burners: m.burners,
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
        latency_p50_ns: m.latency_ns.value_at_quantile(0.5),
        latency_p99_ns: m.latency_ns.value_at_quantile(0.99),
        latency_max_ns: m.latency_ns.max(),
        runnable_threads: runnable,
        cpus,
        worker_involuntary_switches_per_sec: invol as f64 / secs,
        worker_voluntary_switches_per_sec: vol as f64 / secs,
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{RunSpec, ThreadResult};
    use crate::experiments::diagnosis::Diagnosis;
    use crate::placement::ThreadPlacement;
    use crate::report::fixture::topology;

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
                })
                .collect(),
            pinning_violations: Vec::new(),
            interrupted: false,
            synthetic: true,
            steal_share: None,
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
        assert_eq!((s.runnable_threads, s.cpus), (4, 8));
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
        // Unpinned workers on an SMT machine share cores with any burner.
        let (sib, cpu) = burner_proximity(&smt, &all, std::slice::from_ref(&all), 1);
        assert_eq!((sib, cpu), (true, false));
        let (sib, _) = burner_proximity(&smt, &all, &[], 0);
        assert!(!sib, "no burners, no sharing");
        let flat = topology(4, 1, false);
        let w = CpuSet::from_cpus([0, 1]);
        let (sib, cpu) = burner_proximity(&flat, &w, &[CpuSet::from_cpus([1])], 1);
        assert_eq!((sib, cpu), (false, true));
    }

    #[test]
    fn no_thread_burners_is_a_positive_zero() {
        let r = result(&[10], &[None]);
        let z = thread_burner_ops_per_sec(&r, 1);
        assert!(z == 0.0 && z.is_sign_positive());
    }
}
