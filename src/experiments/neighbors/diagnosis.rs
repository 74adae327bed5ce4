//! Names the mechanism behind a throughput loss when CPU neighbours run.
//!
//! Pure: a step's evidence in, a [`Diagnosis`] and a one-line reason out. Hardware sharing
//! (SMT siblings, caches, memory bandwidth) costs a bounded, monotonic factor: a sibling
//! at worst about halves a thread (Sprunt, "Pentium 4 Performance-Monitoring Features",
//! IEEE Micro 2002). Oversubscription with a lock costs a cliff instead — 100× or more, to
//! about one operation per scheduler time slice — as soon as runnable threads exceed
//! logical CPUs and a lock holder or the next FIFO waiter gets descheduled (lock-holder
//! preemption: Uhlig et al., "Towards Scalable Multiprocessor Virtual Machines", VM '04;
//! Ouyang and Lange, VEE 2013; natively, Johnson et al., ASPLOS 2010).
//!
//! Evidence that was not measured is not evidence: a rule that needs it does not fire, and
//! the reason says it was not measured rather than showing a 0. The same holds for
//! placement: SMT sharing is named only when the run pinned a burner to a worker's SMT
//! sibling; when the scheduler placed them it is only "possibly" SMT sharing. Runnable
//! threads are counted against the CPUs the threads may use, not every CPU of the machine.

use serde::{Deserialize, Serialize};

/// The mechanism a step's loss is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Diagnosis {
    /// No loss worth naming (≥ 80 % of the baseline) and no oversubscription.
    None,
    /// Burners pinned to the workers' SMT siblings, no oversubscription.
    SmtSharing,
    /// A loss with workers or burners placed by the scheduler on an SMT machine: they may
    /// have shared cores, but the run did not control it ("possibly SMT sharing:
    /// unpinned").
    PossiblySmtSharing,
    /// Burners on other cores, no oversubscription, yet a loss: shared cache, memory
    /// bandwidth or frequency.
    SharedResources,
    /// Not oversubscribed by this experiment, yet the workers wait for a CPU much of the
    /// time: other processes on the machine (or the hypervisor) compete for it.
    ExternalLoad,
    /// More runnable threads than CPUs, moderate loss: time slicing.
    Oversubscribed,
    /// More runnable threads than CPUs and throughput near one operation per time slice:
    /// lock holders or next-in-line waiters preempted.
    PreemptionCollapse,
}

impl Diagnosis {
    pub fn label(self) -> &'static str {
        match self {
            Diagnosis::None => "none",
            Diagnosis::SmtSharing => "smt-sharing",
            Diagnosis::PossiblySmtSharing => "possibly-smt-sharing",
            Diagnosis::SharedResources => "shared-resources",
            Diagnosis::ExternalLoad => "external-load",
            Diagnosis::Oversubscribed => "oversubscribed",
            Diagnosis::PreemptionCollapse => "preemption-collapse",
        }
    }

    /// How bad the mechanism is, 0 (none) to 6 (collapse): breaks ties between rounds that
    /// disagree.
    pub fn severity(self) -> u8 {
        match self {
            Diagnosis::None => 0,
            Diagnosis::PossiblySmtSharing => 1,
            Diagnosis::SmtSharing => 2,
            Diagnosis::SharedResources => 3,
            Diagnosis::ExternalLoad => 4,
            Diagnosis::Oversubscribed => 5,
            Diagnosis::PreemptionCollapse => 6,
        }
    }
}

/// What was measured in one step, as the diagnosis needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// Worker operations per second in this step.
    pub ops_per_sec: f64,
    /// Worker operations per second with no burners (the reference).
    pub baseline_ops_per_sec: f64,
    /// Threads that want a CPU all the time and compete for the workers' CPUs: the
    /// workers plus the burners allowed on those CPUs (or on CPUs of such burners).
    pub runnable_threads: usize,
    /// Logical CPUs those threads may use (the union of their allowed CPU sets).
    pub cpus: usize,
    /// Whether some burner is pinned to the SMT sibling of a CPU a worker is pinned to.
    pub burners_on_worker_siblings: bool,
    /// Whether some burner may run on an SMT sibling of a worker's CPU because the
    /// scheduler places one or both (unpinned): sharing possible, not controlled.
    #[serde(default)]
    pub burners_maybe_on_worker_siblings: bool,
    /// Whether some burner shares a logical CPU with a worker (time slicing, not SMT).
    pub burners_on_worker_cpus: bool,
    /// Involuntary context switches of the workers per second.
    pub worker_involuntary_switches_per_sec: f64,
    /// Share of the workers' wall time spent runnable but waiting for a CPU (0–1); None
    /// when not measured (a kernel without schedstat).
    pub worker_run_delay_share: Option<f64>,
    /// Lock holds and lock waits longer than 1 ms (a preempted holder or next waiter);
    /// None when the worker cannot see its lock (a database's internal locks).
    pub holder_preemptions: Option<u64>,
    /// Scheduler time slice assumed, in ns (EEVDF base slice for this CPU count).
    pub time_slice_ns: f64,
}

/// Step ratio at or above which a loss is not worth naming.
pub const NO_LOSS_RATIO: f64 = 0.8;
/// Run-queue wait share above which a step that does not oversubscribe the CPUs is
/// blamed on other load.
pub const EXTERNAL_DELAY_SHARE: f64 = 0.2;
/// A step at or below this share of the reference, with preemption evidence, is a
/// collapse rather than ordinary time slicing (which costs at most runnable/CPUs).
pub const COLLAPSE_RATIO: f64 = 0.05;
/// Throughput within this factor of one operation per time slice counts as "near" it.
pub const SLICE_FACTOR: f64 = 10.0;
/// Run-queue wait share above which an oversubscribed step counts as preempted.
const PREEMPTED_DELAY_SHARE: f64 = 0.05;

/// The EEVDF base slice Linux uses for `ncpus` CPUs: 0.75 ms × (1 + ilog2(min(ncpus, 8)))
/// (`sysctl_sched_base_slice` scaled by `get_update_sysctl_factor()` in
/// `kernel/sched/fair.c`): 1.5 ms on 2 CPUs, 3 ms on ≥ 8.
pub fn base_slice_ns(ncpus: usize) -> f64 {
    let n = ncpus.clamp(1, 8) as u32;
    0.75e6 * (1 + n.ilog2()) as f64
}

/// The evidence in one line, saying "not measured" where it was not.
fn facts(e: &Evidence, ratio: f64) -> String {
    let delay = match e.worker_run_delay_share {
        Some(d) => format!("{:.0}% of time waiting for a CPU", d * 100.0),
        None => "time waiting for a CPU not measured".into(),
    };
    let holds = match e.holder_preemptions {
        Some(n) => format!("{n} preempted/long holds"),
        None => "preempted/long holds not measured".into(),
    };
    format!(
        "{} runnable on {}, {:.1}% of baseline, {:.0} involuntary switches/s, {delay}, {holds}",
        e.runnable_threads,
        crate::render::count(e.cpus, "CPU"),
        ratio * 100.0,
        e.worker_involuntary_switches_per_sec,
    )
}

/// Diagnoses one step; returns the mechanism and its evidence in one line.
pub fn diagnose(e: &Evidence) -> (Diagnosis, String) {
    let ratio = if e.baseline_ops_per_sec > 0.0 {
        e.ops_per_sec / e.baseline_ops_per_sec
    } else {
        1.0
    };
    let facts = facts(e, ratio);
    let delay = e.worker_run_delay_share;
    if e.runnable_threads > e.cpus {
        let per_slice = 1e9 / e.time_slice_ns;
        let near_slice = e.ops_per_sec <= per_slice * SLICE_FACTOR;
        let preempted = e.holder_preemptions.is_some_and(|n| n > 0)
            || e.worker_involuntary_switches_per_sec > 0.0
            || delay.is_some_and(|d| d > PREEMPTED_DELAY_SHARE);
        // The cliff: a drop of 20× or more with preempted holders or waiters in evidence,
        // or a rate already down at a few operations per time slice.
        if preempted && (ratio < COLLAPSE_RATIO || (near_slice && ratio < 0.1)) {
            return (
                Diagnosis::PreemptionCollapse,
                format!(
                    "{:.0} ops/s ≈ {:.2} per {:.1} ms time slice: a preempted holder or next waiter stalls the lock; {facts}",
                    e.ops_per_sec,
                    e.ops_per_sec / per_slice,
                    e.time_slice_ns / 1e6
                ),
            );
        }
        return (
            Diagnosis::Oversubscribed,
            format!("more runnable threads than CPUs, time slicing; {facts}"),
        );
    }
    if delay.is_some_and(|d| d > EXTERNAL_DELAY_SHARE) {
        return (
            Diagnosis::ExternalLoad,
            format!(
                "not oversubscribed by this experiment, yet workers waited for a CPU: other processes compete; {facts}"
            ),
        );
    }
    if ratio >= NO_LOSS_RATIO {
        return (Diagnosis::None, facts);
    }
    if e.burners_on_worker_siblings {
        return (
            Diagnosis::SmtSharing,
            format!("burners pinned to the workers' SMT siblings; {facts}"),
        );
    }
    if e.burners_maybe_on_worker_siblings {
        return (
            Diagnosis::PossiblySmtSharing,
            format!(
                "possibly SMT sharing: unpinned — the scheduler chose whether burners ran on the workers' SMT siblings, so the run did not control it (shared caches, memory bandwidth or frequency would look the same); {facts}"
            ),
        );
    }
    if e.burners_on_worker_cpus {
        // Pinned onto the same CPUs without exceeding CPUs cannot happen; say what we see.
        return (
            Diagnosis::Oversubscribed,
            format!("burners share the workers' CPUs; {facts}"),
        );
    }
    // Without the run-queue wait, other load on the machine looks the same.
    let unless = if delay.is_none() {
        " (or other load: time waiting for a CPU was not measured)"
    } else {
        ""
    };
    (
        Diagnosis::SharedResources,
        format!(
            "burners on other cores, no oversubscription: shared cache, memory bandwidth or frequency{unless}; {facts}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of 4 workers on 8 CPUs against a 74,635 ops/s reference, nothing preempted.
    fn ev(ops: f64, runnable: usize) -> Evidence {
        Evidence {
            ops_per_sec: ops,
            baseline_ops_per_sec: 74_635.0,
            runnable_threads: runnable,
            cpus: 8,
            burners_on_worker_siblings: false,
            burners_maybe_on_worker_siblings: false,
            burners_on_worker_cpus: false,
            worker_involuntary_switches_per_sec: 0.0,
            worker_run_delay_share: Some(0.0),
            holder_preemptions: Some(0),
            time_slice_ns: base_slice_ns(8),
        }
    }

    #[test]
    fn slices() {
        assert_eq!(base_slice_ns(2), 1.5e6);
        assert_eq!(base_slice_ns(8), 3.0e6);
        assert_eq!(base_slice_ns(64), 3.0e6);
        assert_eq!(base_slice_ns(1), 0.75e6);
    }

    /// A field report of singleton inserts on SQL Server (4 inserters, 4 cores × 2
    /// threads): 74,635 inserts/s alone; 36,448 with 2 burners, which the scheduler spread
    /// onto the inserters' siblings; 212 with 5 burners (9 runnable on 8 CPUs); 550 with 6.
    #[test]
    fn a_field_report_read_through_the_rules() {
        assert_eq!(diagnose(&ev(74_635.0, 4)).0, Diagnosis::None);
        let mut two = ev(36_448.0, 6);
        two.burners_on_worker_siblings = true;
        assert_eq!(diagnose(&two).0, Diagnosis::SmtSharing);
        let mut five = ev(212.0, 9);
        five.worker_involuntary_switches_per_sec = 400.0;
        five.holder_preemptions = Some(30);
        let (d, why) = diagnose(&five);
        assert_eq!(d, Diagnosis::PreemptionCollapse);
        assert!(why.contains("time slice"), "{why}");
        let mut six = ev(550.0, 10);
        six.worker_run_delay_share = Some(0.5);
        assert_eq!(diagnose(&six).0, Diagnosis::PreemptionCollapse);
    }

    #[test]
    fn every_label_from_hand_made_evidence() {
        let cases = [
            // 90 % of the reference on 6 of 8 CPUs: nothing worth naming.
            (ev(67_000.0, 6), Diagnosis::None, "none"),
            (
                Evidence {
                    burners_on_worker_siblings: true,
                    ..ev(40_000.0, 6)
                },
                Diagnosis::SmtSharing,
                "smt-sharing",
            ),
            (
                Evidence {
                    burners_maybe_on_worker_siblings: true,
                    ..ev(40_000.0, 6)
                },
                Diagnosis::PossiblySmtSharing,
                "possibly-smt-sharing",
            ),
            (
                ev(40_000.0, 6),
                Diagnosis::SharedResources,
                "shared-resources",
            ),
            (
                Evidence {
                    worker_run_delay_share: Some(0.21),
                    ..ev(74_000.0, 4)
                },
                Diagnosis::ExternalLoad,
                "external-load",
            ),
            (
                ev(40_000.0, 10),
                Diagnosis::Oversubscribed,
                "oversubscribed",
            ),
            (
                Evidence {
                    holder_preemptions: Some(1),
                    ..ev(3_000.0, 10)
                },
                Diagnosis::PreemptionCollapse,
                "preemption-collapse",
            ),
        ];
        for (e, want, label) in cases {
            let (d, why) = diagnose(&e);
            assert_eq!(d, want, "{why}");
            assert_eq!(d.label(), label);
            assert_eq!(serde_json::to_value(d).unwrap(), label);
            assert!(why.contains("runnable on 8 CPUs"), "{why}");
        }
    }

    #[test]
    fn deep_drop_with_preemption_is_a_collapse() {
        // 4 ticket waiters on 2 CPUs: 80× slower, waits of a slice each.
        let mut e = ev(28_000.0, 4);
        e.cpus = 2;
        e.baseline_ops_per_sec = 2_300_000.0;
        e.holder_preemptions = Some(685);
        assert_eq!(diagnose(&e).0, Diagnosis::PreemptionCollapse);
    }

    #[test]
    fn moderate_oversubscription_is_not_a_collapse() {
        let mut e = ev(50_000.0, 10);
        e.worker_involuntary_switches_per_sec = 500.0;
        assert_eq!(diagnose(&e).0, Diagnosis::Oversubscribed);
        // Slow but without any sign of preemption: still not called a collapse.
        assert_eq!(diagnose(&ev(100.0, 10)).0, Diagnosis::Oversubscribed);
    }

    #[test]
    fn burners_on_the_workers_cpus_are_time_slicing() {
        let e = Evidence {
            burners_on_worker_cpus: true,
            ..ev(40_000.0, 6)
        };
        let (d, why) = diagnose(&e);
        assert_eq!(d, Diagnosis::Oversubscribed);
        assert!(why.starts_with("burners share the workers' CPUs"), "{why}");
    }

    #[test]
    fn thresholds_sit_where_the_constants_say() {
        // Exactly 80 % is no loss; just below is one.
        let of_100k = |ops: f64| Evidence {
            baseline_ops_per_sec: 100_000.0,
            ..ev(ops, 6)
        };
        assert_eq!(diagnose(&of_100k(80_000.0)).0, Diagnosis::None);
        assert_eq!(diagnose(&of_100k(79_999.0)).0, Diagnosis::SharedResources);
        // A run-queue wait of exactly 20 % is not yet other load.
        let e = Evidence {
            worker_run_delay_share: Some(0.2),
            ..ev(74_000.0, 4)
        };
        assert_eq!(diagnose(&e).0, Diagnosis::None);
    }

    #[test]
    fn unpinned_placement_is_never_called_smt_sharing() {
        // The scheduler may have put burners on the workers' siblings: a loss is only
        // "possibly" SMT sharing, and says why.
        let e = Evidence {
            burners_maybe_on_worker_siblings: true,
            ..ev(40_000.0, 6)
        };
        let (d, why) = diagnose(&e);
        assert_eq!(d, Diagnosis::PossiblySmtSharing);
        assert!(why.starts_with("possibly SMT sharing: unpinned"), "{why}");
        // No loss: nothing to name either way.
        let e = Evidence {
            burners_maybe_on_worker_siblings: true,
            ..ev(74_000.0, 6)
        };
        assert_eq!(diagnose(&e).0, Diagnosis::None);
        // A burner pinned to a sibling is certain, whatever else is unpinned.
        let e = Evidence {
            burners_on_worker_siblings: true,
            burners_maybe_on_worker_siblings: true,
            ..ev(40_000.0, 6)
        };
        assert_eq!(diagnose(&e).0, Diagnosis::SmtSharing);
        // Old files without the field read it as false.
        let mut v = serde_json::to_value(ev(1.0, 1)).unwrap();
        v.as_object_mut()
            .unwrap()
            .remove("burners_maybe_on_worker_siblings");
        let back: Evidence = serde_json::from_value(v).unwrap();
        assert!(!back.burners_maybe_on_worker_siblings);
    }

    #[test]
    fn a_worker_alone_on_its_cpu_without_waiting_is_not_oversubscribed() {
        // 1 worker on its own CPU, 0 % run-queue wait: counted against its one CPU it is
        // 1 runnable on 1, whatever burners do elsewhere.
        let e = Evidence {
            runnable_threads: 1,
            cpus: 1,
            ..ev(74_635.0, 1)
        };
        let (d, why) = diagnose(&e);
        assert_eq!(d, Diagnosis::None, "{why}");
        assert!(why.starts_with("1 runnable on 1 CPU,"), "{why}");
    }

    #[test]
    fn external_load() {
        let mut e = ev(70_000.0, 4);
        e.worker_run_delay_share = Some(0.6);
        assert_eq!(diagnose(&e).0, Diagnosis::ExternalLoad);
    }

    #[test]
    fn cross_core_loss() {
        assert_eq!(diagnose(&ev(40_000.0, 6)).0, Diagnosis::SharedResources);
        assert_eq!(diagnose(&ev(70_000.0, 6)).0, Diagnosis::None);
    }

    #[test]
    fn unmeasured_evidence_stays_unmeasured() {
        let unmeasured = |e: Evidence| Evidence {
            worker_run_delay_share: None,
            holder_preemptions: None,
            ..e
        };
        // The facts say so instead of showing 0.
        let (_, why) = diagnose(&unmeasured(ev(74_635.0, 4)));
        assert!(why.contains("time waiting for a CPU not measured"), "{why}");
        assert!(why.contains("preempted/long holds not measured"), "{why}");
        assert!(!why.contains("0% of time"), "{why}");
        // Measured zeros still read as zeros.
        let (_, why) = diagnose(&ev(74_635.0, 4));
        assert!(
            why.contains("0% of time waiting for a CPU, 0 preempted/long holds"),
            "{why}"
        );
        // A loss that other load could explain is not pinned on shared resources alone.
        let (d, why) = diagnose(&unmeasured(ev(40_000.0, 6)));
        assert_eq!(d, Diagnosis::SharedResources);
        assert!(
            why.contains("or other load: time waiting for a CPU was not measured"),
            "{why}"
        );
        let (_, why) = diagnose(&ev(40_000.0, 6));
        assert!(!why.contains("other load"), "{why}");
        // Without a measured run-queue wait or hold there is no preemption evidence: a
        // deep drop is time slicing, not called a collapse.
        let (d, why) = diagnose(&unmeasured(ev(550.0, 10)));
        assert_eq!(d, Diagnosis::Oversubscribed, "{why}");
        // Involuntary switches are always measured and still count.
        let e = Evidence {
            worker_involuntary_switches_per_sec: 400.0,
            ..unmeasured(ev(550.0, 10))
        };
        assert_eq!(diagnose(&e).0, Diagnosis::PreemptionCollapse);
    }

    #[test]
    fn unmeasured_evidence_is_null_in_json() {
        let e = Evidence {
            worker_run_delay_share: None,
            holder_preemptions: None,
            ..ev(1.0, 1)
        };
        let v = serde_json::to_value(&e).unwrap();
        assert!(v["worker_run_delay_share"].is_null(), "{v}");
        assert!(v["holder_preemptions"].is_null(), "{v}");
    }

    #[test]
    fn severity_orders_collapse_worst() {
        use Diagnosis::*;
        let order = [
            None,
            PossiblySmtSharing,
            SmtSharing,
            SharedResources,
            ExternalLoad,
            Oversubscribed,
            PreemptionCollapse,
        ];
        assert!(order.windows(2).all(|w| w[0].severity() < w[1].severity()));
    }
}
