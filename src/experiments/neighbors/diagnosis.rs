//! Names the mechanism behind a throughput loss when CPU neighbours run (seed 002).
//!
//! Pure: a step's evidence in, a [`Diagnosis`] and a one-line reason out. The rules follow
//! REFERENCE §3.7: hardware sharing (SMT siblings, caches, memory bandwidth) costs a bounded,
//! monotonic factor (≤ ~2× per sibling); oversubscription with a lock costs a cliff — 100×
//! or more, to about one operation per scheduler time slice — as soon as runnable threads
//! exceed logical CPUs and a lock holder or the next FIFO waiter gets descheduled.

use serde::{Deserialize, Serialize};

/// The mechanism a step's loss is attributed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Diagnosis {
    /// No loss worth naming (≥ 80 % of the baseline) and no oversubscription.
    None,
    /// Burners share cores with workers as SMT siblings, no oversubscription.
    SmtSharing,
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
            Diagnosis::SharedResources => "shared-resources",
            Diagnosis::ExternalLoad => "external-load",
            Diagnosis::Oversubscribed => "oversubscribed",
            Diagnosis::PreemptionCollapse => "preemption-collapse",
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
    /// Worker threads plus busy burners: threads that want a CPU all the time.
    pub runnable_threads: usize,
    /// Logical CPUs the workers and burners may use.
    pub cpus: usize,
    /// Whether some burner shares a core with a worker as an SMT sibling.
    pub burners_on_worker_siblings: bool,
    /// Whether some burner shares a logical CPU with a worker (time slicing, not SMT).
    pub burners_on_worker_cpus: bool,
    /// Involuntary context switches of the workers per second.
    pub worker_involuntary_switches_per_sec: f64,
    /// Share of the workers' wall time spent runnable but waiting for a CPU (0–1).
    pub worker_run_delay_share: f64,
    /// Lock holds longer than 1 ms or with an involuntary switch while holding.
    pub holder_preemptions: u64,
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

/// The EEVDF base slice Linux uses for `ncpus` CPUs: 0.75 ms × (1 + ilog2(min(ncpus, 8)))
/// (`kernel/sched/fair.c`, REFERENCE §3.5): 1.5 ms on 2 CPUs, 3 ms on ≥ 8.
pub fn base_slice_ns(ncpus: usize) -> f64 {
    let n = ncpus.clamp(1, 8) as u32;
    0.75e6 * (1 + n.ilog2()) as f64
}

/// Diagnoses one step; returns the mechanism and its evidence in one line.
pub fn diagnose(e: &Evidence) -> (Diagnosis, String) {
    let ratio = if e.baseline_ops_per_sec > 0.0 {
        e.ops_per_sec / e.baseline_ops_per_sec
    } else {
        1.0
    };
    let over = e.runnable_threads > e.cpus;
    let per_slice = 1e9 / e.time_slice_ns;
    let facts = format!(
        "{} runnable on {} CPUs, {:.1}% of baseline, {:.0} involuntary switches/s, {:.0}% of time waiting for a CPU, {} preempted/long holds",
        e.runnable_threads,
        e.cpus,
        ratio * 100.0,
        e.worker_involuntary_switches_per_sec,
        e.worker_run_delay_share * 100.0,
        e.holder_preemptions
    );
    if over {
        let near_slice = e.ops_per_sec <= per_slice * SLICE_FACTOR;
        let preempted = e.holder_preemptions > 0
            || e.worker_involuntary_switches_per_sec > 0.0
            || e.worker_run_delay_share > 0.05;
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
    if e.worker_run_delay_share > EXTERNAL_DELAY_SHARE {
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
            format!("burners run on the workers' SMT siblings; {facts}"),
        );
    }
    if e.burners_on_worker_cpus {
        // Pinned onto the same CPUs without exceeding CPUs cannot happen; say what we see.
        return (
            Diagnosis::Oversubscribed,
            format!("burners share the workers' CPUs; {facts}"),
        );
    }
    (
        Diagnosis::SharedResources,
        format!(
            "burners on other cores, no oversubscription: shared cache, memory bandwidth or frequency; {facts}"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(ops: f64, runnable: usize) -> Evidence {
        Evidence {
            ops_per_sec: ops,
            baseline_ops_per_sec: 74_635.0,
            runnable_threads: runnable,
            cpus: 8,
            burners_on_worker_siblings: false,
            burners_on_worker_cpus: false,
            worker_involuntary_switches_per_sec: 0.0,
            worker_run_delay_share: 0.0,
            holder_preemptions: 0,
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

    /// Seed 002's table, read through the rules.
    #[test]
    fn seed_002_table() {
        assert_eq!(diagnose(&ev(74_635.0, 4)).0, Diagnosis::None);
        let mut two = ev(36_448.0, 6);
        two.burners_on_worker_siblings = true;
        assert_eq!(diagnose(&two).0, Diagnosis::SmtSharing);
        let mut five = ev(212.0, 9);
        five.worker_involuntary_switches_per_sec = 400.0;
        five.holder_preemptions = 30;
        let (d, why) = diagnose(&five);
        assert_eq!(d, Diagnosis::PreemptionCollapse);
        assert!(why.contains("time slice"), "{why}");
        let mut six = ev(550.0, 10);
        six.worker_run_delay_share = 0.5;
        assert_eq!(diagnose(&six).0, Diagnosis::PreemptionCollapse);
    }

    #[test]
    fn deep_drop_with_preemption_is_a_collapse() {
        // 4 ticket waiters on 2 CPUs: 80× slower, waits of a slice each.
        let mut e = ev(28_000.0, 4);
        e.cpus = 2;
        e.baseline_ops_per_sec = 2_300_000.0;
        e.holder_preemptions = 685;
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
    fn external_load() {
        let mut e = ev(70_000.0, 4);
        e.worker_run_delay_share = 0.6;
        assert_eq!(diagnose(&e).0, Diagnosis::ExternalLoad);
    }

    #[test]
    fn cross_core_loss() {
        assert_eq!(diagnose(&ev(40_000.0, 6)).0, Diagnosis::SharedResources);
        assert_eq!(diagnose(&ev(70_000.0, 6)).0, Diagnosis::None);
    }
}
