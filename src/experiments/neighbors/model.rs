//! neighbors' result model: what `--json` prints and the study's report embeds. Renderers
//! read only this.

use super::config::{BurnerMode, BurnerPlacement};
use super::diagnosis::Diagnosis;
use crate::burn::{BurnerKind, Policy};
use crate::locks::LockKind;
use crate::stats::{Comparison, Summary};
use serde::{Deserialize, Serialize};

/// Bumped when the JSON layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

/// One burner count's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub burners: usize,
    /// The round (sweep) this step ran in, from 0; rounds interleave the steps, each
    /// starting again from its first step.
    #[serde(default)]
    pub round: usize,
    /// Worker operations per second.
    pub ops_per_sec: f64,
    /// `ops_per_sec` ÷ the first step's (or the reference run's) in the same round.
    pub ratio_to_first: f64,
    /// Mean time per operation across the workers (wall ÷ ops × workers), ns.
    pub time_per_op_ns: f64,
    /// The measured window, ns: every rate is over it (0 in files written before it was
    /// recorded).
    #[serde(default)]
    pub measured_ns: u64,
    /// Latency percentiles of the worker operations that started and ended inside the
    /// measured window (so the max never exceeds the window), ns.
    pub latency_p50_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_max_ns: u64,
    /// Threads that want a CPU all the time and can take a worker's CPU: the workers plus
    /// the burners allowed on the workers' CPUs (directly or through other such burners).
    /// Burners confined to other CPUs are left out: they cannot preempt a worker.
    pub runnable_threads: usize,
    /// Logical CPUs those threads may use (the union of their allowed sets); every usable
    /// CPU when any of them is unpinned.
    pub cpus: usize,
    /// The workers' context switches, summed, per second of a worker's mean time; each
    /// worker's counts and time run from its first operation of the measurement to its
    /// return after the stop.
    pub worker_involuntary_switches_per_sec: f64,
    pub worker_voluntary_switches_per_sec: f64,
    /// Share of the workers' time spent runnable but waiting for a CPU, 0–1: their
    /// run-queue waits summed ÷ their times summed (the mean share per worker, weighted
    /// by time), each worker's time as for the switches; None when schedstat is
    /// unavailable.
    pub worker_run_delay_share: Option<f64>,
    /// Lock holds longer than 1 ms (holder preempted); None when the worker cannot see its
    /// lock (a database's internal locks).
    pub holder_preemptions: Option<u64>,
    /// Lock waits longer than 1 ms (holder or next waiter preempted); None as above.
    pub long_waits: Option<u64>,
    /// Burner progress, their own units per second, summed.
    pub burner_ops_per_sec: f64,
    pub diagnosis: Diagnosis,
    /// The evidence, in one line.
    pub reason: String,
    pub pinning_ok: bool,
    /// Ctrl-C cut this step short.
    pub interrupted: bool,
    /// Worker threads in this step.
    pub workers: usize,
    /// Share of the CPUs' time the hypervisor took during this step (steal), 0–1; None
    /// where not measured.
    #[serde(default)]
    pub steal_share: Option<f64>,
    /// The workers' event counters summed over the step's run (task-clock, context
    /// switches, migrations; IPC where cycles were counted); None with `--counters off`,
    /// on the fake engine and in older files.
    #[serde(default)]
    pub worker_counters: Option<crate::counters::Counts>,
}

/// The whole neighbors result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsReport {
    pub schema_version: u32,
    /// The worker workload's name (`hot-page/ticket`, `oltp/sqlite`, …).
    pub workload: String,
    pub workers: usize,
    /// The worker placement as given (`os`, `one-per-core`, `cpus:0-3`, …).
    pub worker_placement: String,
    /// What each burner runs, by its command-line name (`prime`, `fma-avx2`, …).
    #[serde(with = "kind_as_name")]
    pub burner_kind: BurnerKind,
    pub burner_placement: BurnerPlacement,
    pub burner_mode: BurnerMode,
    pub burner_policy: Policy,
    pub time_slice_ns: f64,
    pub smt: bool,
    pub hypervisor: bool,
    /// The reference run when the first step was already oversubscribed: as many
    /// workers as CPUs, no burners. Its rate is the baseline of every ratio.
    pub reference: Option<Step>,
    /// Every step of every round, in the order they ran.
    pub steps: Vec<Step>,
    /// Rounds over the steps (`--repeat`); 1 in files written before it existed.
    #[serde(default = "one")]
    pub repeat: usize,
    /// Per burner count over the rounds: the median rate and the paired ratio to each
    /// round's first step, with its interval and three-way class.
    #[serde(default)]
    pub summary: Vec<SeriesStep>,
    /// Steps that could not run here, with the reason.
    pub skipped: Vec<(usize, String)>,
    /// What the steps could not show or may have distorted (`Note`s, the burners' and
    /// the look at the CPUs' warnings).
    pub notes: Vec<String>,
    pub interrupted: bool,
    /// The counters' mode and every event not counted, with the reason; None with
    /// `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
}

/// What a neighbors run could not show or may have distorted; kept in
/// [`NeighborsReport::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// No SMT siblings: the smt-sharing mechanism cannot occur.
    NoSiblings,
    /// The burners ran at a scheduling policy other than `normal`.
    BurnerPolicy { policy: Policy },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::NoSiblings => f.write_str(
                "no SMT siblings on this machine: the smt-sharing mechanism cannot occur here; \
                 losses without oversubscription are shared caches, memory bandwidth or \
                 frequency",
            ),
            Note::BurnerPolicy { policy } => write!(
                f,
                "burners run at policy {policy}: they still count as runnable, but the \
                 scheduler favours the workers"
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

fn one() -> usize {
    1
}

/// One burner count over the rounds of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesStep {
    pub burners: usize,
    /// Threads competing for the workers' CPUs (as [`Step::runnable_threads`]), in the
    /// round nearest the median.
    pub runnable_threads: usize,
    /// The CPUs they may use (as [`Step::cpus`]).
    pub cpus: usize,
    /// Worker operations per second over the rounds.
    pub ops_per_sec: Summary,
    /// Median `ops_per_sec` ÷ the median of the first step.
    pub ratio_to_first: f64,
    /// Median op latency p99 over the rounds, ns.
    pub latency_p99_ns: u64,
    /// The diagnosis most rounds gave (ties: the more severe).
    pub diagnosis: super::Diagnosis,
    /// The evidence of the round closest to the median.
    pub reason: String,
    /// Each round's rate ÷ that round's first step, paired, with its interval and
    /// three-way class; None in files written before it existed.
    #[serde(default)]
    pub ratio: Option<Comparison>,
}

/// A burner kind as its command-line name: `fma-avx2` rather than serde's `{"fma": "avx2"}`.
mod kind_as_name {
    use crate::burn::BurnerKind;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(k: &BurnerKind, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(k)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BurnerKind, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

// ---------------------------------------------------------------------------------------
// The study's section: what results.json keeps under `neighbors`.

/// `neighbors` as the study ran it: per lock an unpinned burner sweep and, on SMT
/// machines, a controlled sweep of burners on the workers' siblings; repeated,
/// interleaved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsSection {
    /// Workers of the unpinned series.
    pub workers: usize,
    pub locks: Vec<LockKind>,
    /// Burner counts of the unpinned series.
    pub burner_steps: Vec<usize>,
    pub burner_kind: String,
    pub burner_mode: BurnerMode,
    /// Discarded warm-up per step, ns.
    pub warmup_ns: u64,
    /// Measured time per step, ns.
    pub duration_ns: u64,
    /// Sweeps per lock.
    pub repeat: usize,
    /// Per lock and placement: every step summarised over the sweeps.
    pub series: Vec<NeighborsSeries>,
    /// Why the controlled sibling series did not run (no SMT siblings, …); None when it
    /// ran, and in files written before it existed.
    #[serde(default)]
    pub sibling_skipped: Option<String>,
    /// Every sweep as `neighbors` reported it, in the order they ran.
    pub runs: Vec<NeighborsReport>,
}

/// How a neighbors series placed its threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesPlacement {
    /// Workers and burners placed by the scheduler, as on a machine nobody tuned: shows
    /// what oversubscription costs, but whether burners met workers on a core was the
    /// scheduler's choice, so SMT sharing is at most possible.
    #[default]
    Unpinned,
    /// Workers one per core, burners pinned to their SMT siblings: SMT sharing controlled
    /// by the placement.
    SiblingBurners,
}

impl SeriesPlacement {
    pub fn label(self) -> &'static str {
        match self {
            SeriesPlacement::Unpinned => "unpinned",
            SeriesPlacement::SiblingBurners => "sibling burners",
        }
    }
}

/// One lock's burner sweep under one placement, summarised over repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsSeries {
    pub lock: LockKind,
    /// `unpinned` in files written before the sibling series existed.
    #[serde(default)]
    pub placement: SeriesPlacement,
    /// Workers of this series; None in files written before it existed (then the
    /// section's `workers`).
    #[serde(default)]
    pub workers: Option<usize>,
    pub steps: Vec<SeriesStep>,
}

impl NeighborsSeries {
    /// Workers of this series.
    pub fn workers_in(&self, section: &NeighborsSection) -> usize {
        self.workers.unwrap_or(section.workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::burn::FmaWidth;

    #[test]
    fn closed_sets_serialise_as_their_command_line_names() {
        let r = NeighborsReport {
            schema_version: SCHEMA_VERSION,
            workload: "hot-page/ticket".into(),
            workers: 2,
            worker_placement: "os".into(),
            burner_kind: BurnerKind::Fma(FmaWidth::Avx2),
            burner_placement: BurnerPlacement::OtherCores,
            burner_mode: BurnerMode::Process,
            burner_policy: Policy::Idle,
            time_slice_ns: 1.5e6,
            smt: false,
            hypervisor: false,
            reference: None,
            steps: Vec::new(),
            repeat: 1,
            summary: Vec::new(),
            skipped: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
            counters: None,
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["burner_kind"], "fma-avx2");
        assert_eq!(v["burner_placement"], "other-cores");
        assert_eq!(v["burner_mode"], "process");
        assert_eq!(v["burner_policy"], "idle");
        let back: NeighborsReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
        let mut v = serde_json::to_value(&r).unwrap();
        v["burner_kind"] = "divide".into();
        let e = serde_json::from_value::<NeighborsReport>(v).unwrap_err();
        assert!(e.to_string().contains("divide"), "{e}");
    }
}
