//! The serde model of a pairs run (what `--json` prints and `--export-json` writes) and of
//! a profiles file (`--save-profiles`, `--profiles`). Units live in the field names; every
//! speed is a share of the workload's own speed alone with the partner CPU idle.

use crate::stats::Comparison;
use serde::{Deserialize, Serialize};

/// Version of this model's JSON.
pub const SCHEMA_VERSION: u32 = 1;
/// Version of the profiles file's layout.
pub const PROFILES_VERSION: u32 = 1;
/// The `format` field of a profiles file.
pub const PROFILES_FORMAT: &str = "smtlab-pairs-profiles";

/// What the two CPUs of a pair share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartnerKind {
    /// Two hardware threads of one core.
    SmtSiblings,
    /// Two cores that share a last-level cache and the memory bus, nothing more.
    SharedCache,
}

impl PartnerKind {
    /// How every output names it: cache sharing is never called SMT.
    pub fn label(self) -> &'static str {
        match self {
            PartnerKind::SmtSiblings => "SMT siblings",
            PartnerKind::SharedCache => "shared cache, separate cores",
        }
    }
}

/// The two CPUs every pair runs on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partner {
    pub kind: PartnerKind,
    /// The CPU of the workload measured (A), and of its partner (B).
    pub cpus: [u32; 2],
    /// What `--partner` asked for (`auto`, `sibling`, `same-l3`, `cpus:A,B`).
    pub asked: String,
    /// "SMT siblings" or "shared cache, separate cores".
    pub label: String,
}

/// A speed with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// A's speed beside B ÷ A's speed alone.
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// The interval's level (0.9 = 90 %).
    pub confidence: f64,
    /// Rounds behind a measured speed (1: no interval); 0 for a prediction.
    #[serde(default)]
    pub n: usize,
}

impl Interval {
    pub fn of(c: &Comparison) -> Self {
        Self {
            estimate: c.estimate,
            low: c.low,
            high: c.high,
            confidence: c.confidence,
            n: c.n,
        }
    }

    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// One workload's profile: its speed beside each ruler (sensitivity) and each ruler's
/// speed beside it (contentiousness), both as shares of the speed alone, paired by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub workload: String,
    /// `ruler` or `command`.
    pub kind: String,
    /// The ruler's resource, or the command as typed.
    pub describe: String,
    /// What its speed counts (`ops/s`, `runs/s`, `events/s`).
    pub unit: String,
    /// Median speed alone (partner CPU idle), in `unit`.
    pub alone_per_sec: f64,
    /// Per ruler (in `rulers` order): its speed beside the ruler ÷ alone.
    pub sensitivity: Vec<Option<Comparison>>,
    /// Per ruler: the ruler's speed beside it ÷ the ruler alone.
    pub contentiousness: Vec<Option<Comparison>>,
    /// How a fixed-time command's speed is read, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_duration: Option<String>,
}

/// The model fitted on this machine from the rulers' own pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FittedModel {
    /// The formula, in words.
    pub form: String,
    /// Where the form comes from.
    pub source: String,
    /// c₀: the loss every pair has (time sharing, a shared front end).
    pub intercept: f64,
    /// cᵢ per ruler (in `rulers` order), each ≥ 0.
    pub coefficients: Vec<f64>,
    /// Ruler pairs it was fitted on.
    pub training_pairs: usize,
    /// Standard deviation of its residuals (speed), with `residual_dof` degrees of freedom.
    pub residual_sd: f64,
    pub residual_dof: usize,
    /// Largest residual on its training pairs (speed).
    pub max_abs_residual: f64,
    /// Share of the training pairs' variance it explains; None when they did not vary.
    pub r_squared: Option<f64>,
}

/// The resource behind a loss: ruler i's term cᵢ·sᵢ(A)·kᵢ(B).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Driver {
    pub ruler: String,
    /// The resource that ruler presses.
    pub resource: String,
    /// Its share of the predicted loss of speed (0.12 = 12 points).
    pub loss: f64,
}

/// One ordered pair: A's speed beside B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairEntry {
    pub a: String,
    pub b: String,
    /// A's predicted speed beside B ÷ A alone, with its prediction interval.
    pub predicted: Option<Interval>,
    /// The same, measured (paired by round with A alone); null when not measured.
    pub measured: Option<Interval>,
    /// Predicted − measured estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<f64>,
    /// What "the worst single sensitivity" baseline predicts: A's lowest speed beside any
    /// ruler.
    pub worst_sensitivity: Option<f64>,
    /// The rulers whose terms drive a large predicted loss, largest first.
    pub drivers: Vec<Driver>,
    /// Workloads whose pairs were left out of this prediction's fit (A and B when they are
    /// rulers): leave one workload out.
    pub fitted_without: Vec<String>,
    /// True when neither A's nor B's pairs were in the fit (a command always; a ruler when
    /// the fit without it had pairs enough): only these are scored by the check.
    pub held_out: bool,
    /// True when the model's loss for this pair was above 1 (a speed below 0, clamped to
    /// 0): the pair lies outside what the rulers' pairs showed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub extrapolated: bool,
    /// Why no prediction was made where a model exists (a cell it needs not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_predicted: Option<String>,
}

/// How one predictor did on the measured pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// `model`, `no interference`, `worst single sensitivity`.
    pub predictor: String,
    /// Mean absolute error of the speed over every measured pair.
    pub mean_abs_error: f64,
    /// Largest absolute error.
    pub worst_abs_error: f64,
    /// Mean absolute error over the pairs that matter (measured speed below 0.9); None
    /// when no measured pair lost that much.
    pub loss_pairs_mean_abs_error: Option<f64>,
}

/// The model checked against the measured pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Ordered pairs measured and predicted out of sample.
    pub pairs: usize,
    /// Measured pairs left out of the score because their prediction was fitted on them
    /// (a ruler pair where too few pairs remained without it).
    pub in_sample_skipped: usize,
    /// Of them, measured speed below 0.9.
    pub loss_pairs: usize,
    /// The model, then the two baselines.
    pub scores: Vec<Score>,
    /// Share of measured speeds inside their prediction interval.
    pub coverage: f64,
    /// The intervals' stated level.
    pub confidence: f64,
    /// The model's error is below both baselines' over [`Check::judged_over`]; None with
    /// too few scored pairs to say.
    pub beats_both: Option<bool>,
    /// The pairs `beats_both` was judged over.
    #[serde(default)]
    pub judged_over: JudgedOver,
}

/// Which scored pairs the check judges the model over: the pairs that lose (measured speed
/// below 0.9) where enough of them lose to say anything, else every scored pair; one
/// losing pair's error is that pair's noise, not the model's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum JudgedOver {
    #[serde(rename = "loss pairs")]
    LossPairs,
    #[default]
    #[serde(rename = "all pairs")]
    AllPairs,
}

impl JudgedOver {
    /// As the report says it.
    pub fn label(self) -> &'static str {
        match self {
            Self::LossPairs => "loss pairs",
            Self::AllPairs => "all pairs",
        }
    }
}

/// One workload's share of an advised placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvisedWorkload {
    pub workload: String,
    pub threads: usize,
    /// Its CPUs: `taskset -c LIST`, systemd `CPUAffinity=`.
    pub cpus: String,
    /// Its threads' predicted speeds, lowest first (share of solo).
    pub speeds: Vec<f64>,
    /// The lowest prediction interval bound among its threads.
    pub lowest_low: f64,
    /// Its floor (0 = none).
    pub floor: f64,
    /// Threads that share their core (or cache pair) with another thread.
    pub shared_threads: usize,
}

/// A placement: who shares a core with whom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// "exact" (every pairing tried) or "greedy then swaps".
    pub method: String,
    /// Pairings tried.
    pub tried: u64,
    /// The pairs formed, by workload name (`batch+scan`); a thread with no entry runs alone.
    pub pairs: Vec<(String, String)>,
    pub workloads: Vec<AdvisedWorkload>,
    /// Predicted total speed (sum of the threads' shares of solo speed).
    pub throughput: f64,
    /// The same with every thread on a core of its own, time-shared when there are more
    /// threads than cores (HT off: each core's worth 1.0); None without SMT, where every
    /// CPU is a core and there is nothing to switch off.
    pub throughput_unshared: Option<f64>,
    /// CPUs no thread uses.
    pub idle_cpus: String,
    /// What it means for HT (or, without SMT, for sharing a cache), in words.
    pub verdict: String,
}

/// A pairs run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairsReport {
    pub schema_version: u32,
    pub smtlab_version: String,
    pub partner: Partner,
    /// The rulers (dimensions), in the order of every per-ruler list.
    pub rulers: Vec<String>,
    /// Measured time per run, ns; warm-up before it, ns; rounds.
    pub duration_ns: u64,
    pub warmup_ns: u64,
    pub rounds: usize,
    pub profiles: Vec<Profile>,
    /// Ruler i's speed beside ruler j ÷ ruler i alone: the model's training pairs.
    pub ruler_pairs: Vec<Vec<Option<Comparison>>>,
    pub model: Option<FittedModel>,
    /// Every ordered pair of workloads (two copies of one workload included).
    pub pairs: Vec<PairEntry>,
    pub check: Option<Check>,
    pub advice: Option<Advice>,
    /// Runs and wall time of the profile (what a new workload costs: its own runs only)
    /// and of the check (measuring pairs), ns: the cost the model saves.
    pub profile_runs: usize,
    pub profile_wall_ns: u64,
    pub check_runs: usize,
    pub check_wall_ns: u64,
    /// Where the profiles came from when read from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profiles_from: Option<String>,
    pub notes: Vec<String>,
    /// What was not measured, each with its reason.
    pub not_measured: Vec<String>,
    pub interrupted: bool,
    pub synthetic: bool,
}

/// The machine a profiles file was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineKey {
    pub model: Option<String>,
    pub online_cpus: usize,
    pub threads_per_core: usize,
    pub hypervisor: bool,
}

/// `--save-profiles`: what a later run needs to predict without profiling again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfilesFile {
    pub format: String,
    pub profiles_version: u32,
    pub smtlab_version: String,
    pub machine: MachineKey,
    pub partner: Partner,
    pub rulers: Vec<String>,
    pub duration_ns: u64,
    pub rounds: usize,
    pub ruler_pairs: Vec<Vec<Option<Comparison>>>,
    pub profiles: Vec<Profile>,
}

/// `pairs` as the study ran it: the rulers as the workloads, a short profile, every pair
/// measured by it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairsSection {
    pub result: PairsReport,
}
