//! The serde model of a yield run: the plan (layouts on the cores, workloads), every run
//! as measured, and per workload the layout summaries and the two comparisons a verdict
//! cites. Units live in the field names.

use crate::cpuset::CpuSet;
use crate::placement::ScopeUnit;
use crate::stats::{Comparison, Summary, Thresholds};
use serde::{Deserialize, Serialize};

/// Bumped when the JSON layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

/// The three layouts on the same N cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// N threads, one per core: the SMT-off equivalent.
    OnePerCore,
    /// Every sibling of the same N cores (2N threads with 2 threads per core): SMT on, full.
    All,
    /// N threads on N/2 cores, two per core: how fast one thread is on a shared core.
    Pairs,
}

impl Layout {
    /// Run order within a round.
    pub const ALL: [Layout; 3] = [Layout::OnePerCore, Layout::All, Layout::Pairs];

    pub fn name(self) -> &'static str {
        match self {
            Layout::OnePerCore => "one-per-core",
            Layout::All => "all",
            Layout::Pairs => "pairs",
        }
    }

    /// What the layout stands for, one phrase.
    pub fn meaning(self) -> &'static str {
        match self {
            Layout::OnePerCore => "one thread per core: the SMT-off equivalent",
            Layout::All => "every sibling of the same cores: SMT on, full",
            Layout::Pairs => {
                "two threads per core on half the cores: a thread's speed on a shared core"
            }
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One layout as planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutPlan {
    pub layout: Layout,
    /// The planner's request, as text.
    pub request: String,
    /// Thread count.
    pub threads: usize,
    /// The CPU each thread is pinned to, in thread order.
    pub thread_cpus: Vec<CpuSet>,
    /// The cores used (each as its usable siblings), in first-use order.
    pub cores: Vec<CpuSet>,
    /// Union of the threads' CPUs.
    pub cpus: CpuSet,
    /// The planner's notes.
    pub notes: Vec<String>,
}

/// What kind of workload, for grouping in answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// A burner stressing one execution resource (divider, ALU, FMA).
    ComputeRuler,
    /// A burner stressing the memory hierarchy (cache, DRAM bandwidth or latency).
    MemoryRuler,
    /// Serialized appends to one hot page under a lock.
    Lock,
    /// Singleton inserts on a database.
    Insert,
}

/// A workload the run leaves out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub workload: String,
    pub reason: String,
}

/// Everything decided before a run: what `--dry-run` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YieldPlan {
    /// N: the cores every layout uses.
    pub cores: usize,
    /// Most usable threads on one of those cores.
    pub threads_per_core: usize,
    /// The unit the layouts stayed inside.
    pub scope: Option<ScopeUnit>,
    pub layouts: Vec<LayoutPlan>,
    /// Workloads to run, in order.
    pub workloads: Vec<String>,
    pub left_out: Vec<LeftOut>,
    pub warmup_ns: u64,
    pub duration_ns: u64,
    /// Rounds: every workload in every layout once per round.
    pub repeat: usize,
    /// Runs × (warm-up + duration), ns: a floor on the wall time.
    pub estimate_ns: u64,
    pub notes: Vec<String>,
}

/// One run as measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Round, from 0.
    pub round: usize,
    /// Where this layout ran among its workload's runs of the round, from 1: the order is
    /// counterbalanced from round to round (0 in older files).
    #[serde(default)]
    pub position: usize,
    pub layout: Layout,
    pub threads: usize,
    /// All threads' operations per second.
    pub ops_per_sec: f64,
    /// `ops_per_sec` ÷ threads.
    pub per_thread_ops_per_sec: f64,
    /// Mean wall time per operation of one thread (threads × wall ÷ operations), ns; None
    /// when nothing completed.
    pub time_per_op_ns: Option<f64>,
    /// Median and 99th percentile of the timed operations, ns; None when the workload does
    /// not time each operation (the rulers) or none was timed.
    pub latency_p50_ns: Option<u64>,
    pub latency_p99_ns: Option<u64>,
    /// Operations timed for the percentiles.
    pub latency_samples: u64,
    /// CPUs the threads were pinned to (union).
    pub cpus: CpuSet,
    /// CPUs the threads were seen on (union).
    pub observed_cpus: CpuSet,
    /// Every thread stayed on its own CPU.
    pub pinning_ok: bool,
    /// Hypervisor steal on those CPUs, 0–1; None where not measured.
    pub steal_share: Option<f64>,
    /// Ctrl-C cut the run short (it is left out of the comparisons).
    pub interrupted: bool,
    /// Why the run was disturbed while it ran (steal, a measured thread kept off its CPU
    /// by other work: [`crate::engine::disturbance`]); its round is left out of the
    /// comparisons and run again once where the rounds allow. None when its records show
    /// nothing, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
    /// Inserts only: the table gained exactly the committed rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_verified: Option<bool>,
    /// Made up by the fake engine.
    pub synthetic: bool,
    /// Wall time of the measurement, ns (0 in older files).
    #[serde(default)]
    pub measured_ns: u64,
    /// The threads' event counters summed over the run (an event only when every thread
    /// counted it); None with `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
}

/// The SMT yield taken apart by the counters: throughput = IPC × cycles per second ÷
/// instructions per operation, so yield = `ipc_ratio` × `cycles_per_sec_ratio` ÷
/// `instructions_per_op_ratio` (all ÷ one-per-core). `ipc_ratio` below 1 is what running
/// beside busy siblings cost per cycle (which shared resource caused it is not measured by
/// cycles and instructions); `cycles_per_sec_ratio` is the extra CPU time the siblings
/// bring (about k with k threads per core, less when preempted or clocked down);
/// `instructions_per_op_ratio` above 1 is extra work per operation (spinning, retries). Medians of the per-round ratios, so their product
/// matches the yield only roughly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YieldSplit {
    /// Instructions per cycle of the whole layout (Σ instructions ÷ Σ cycles).
    pub ipc_one_per_core: f64,
    pub ipc_all: f64,
    pub ipc_ratio: f64,
    /// Σ cycles ÷ wall time, all ÷ one-per-core.
    pub cycles_per_sec_ratio: f64,
    /// Σ instructions ÷ operations, all ÷ one-per-core.
    pub instructions_per_op_ratio: f64,
    /// Rounds whose two runs both counted cycles and instructions.
    pub rounds: usize,
}

/// One layout of one workload over the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutSummary {
    pub layout: Layout,
    pub threads: usize,
    /// Complete runs behind the numbers.
    pub runs: usize,
    pub ops_per_sec: Option<Summary>,
    pub per_thread_ops_per_sec: Option<Summary>,
    /// Medians over runs.
    pub time_per_op_ns: Option<f64>,
    pub latency_p50_ns: Option<f64>,
    pub latency_p99_ns: Option<f64>,
}

/// A ratio of two layouts, paired round by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutRatio {
    /// What is divided by what, in words.
    pub what: String,
    pub numerator: Layout,
    pub denominator: Layout,
    /// Per-thread rates (true) or whole-layout throughput (false).
    pub per_thread: bool,
    /// The rounds whose two runs both completed: the pairs behind the interval.
    pub rounds: Vec<usize>,
    /// Rounds left out because a run of theirs was disturbed while it ran, each with the
    /// reason. Empty when none was, and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<(usize, String)>,
    /// Value, interval, n and class.
    pub comparison: Comparison,
}

/// One workload's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadResult {
    pub workload: String,
    pub class: WorkloadKind,
    /// What one operation is (`events`, `bytes`, `appends`, `rows`).
    pub unit: String,
    /// The resource it stresses, in words.
    pub describe: String,
    pub layouts: Vec<LayoutSummary>,
    /// throughput(all) ÷ throughput(one-per-core): above 1, SMT adds capacity.
    pub smt_yield: Option<LayoutRatio>,
    /// per-thread throughput(pairs) ÷ per-thread throughput(one-per-core).
    pub shared_core_speed: Option<LayoutRatio>,
    /// The yield as IPC change × cycle share; None when the runs did not count cycles and
    /// instructions (the report's `counters` says why).
    #[serde(default)]
    pub yield_split: Option<YieldSplit>,
    pub runs: Vec<RunRecord>,
    pub notes: Vec<String>,
}

impl WorkloadResult {
    /// The summary of `layout`, when it ran.
    pub fn layout(&self, layout: Layout) -> Option<&LayoutSummary> {
        self.layouts.iter().find(|l| l.layout == layout)
    }
}

/// The whole yield result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YieldReport {
    pub schema_version: u32,
    pub plan: YieldPlan,
    /// What a yield is judged against.
    pub yield_thresholds: Thresholds,
    /// What a shared-core speed is judged against.
    pub shared_core_thresholds: Thresholds,
    pub workloads: Vec<WorkloadResult>,
    pub notes: Vec<String>,
    /// What watching the measured CPUs just before the runs found (other work on them,
    /// hypervisor steal), also among `notes`: an answer drawn from these runs is held back
    /// while this is non-empty. Empty in older files.
    #[serde(default)]
    pub preflight: Vec<String>,
    pub hypervisor: bool,
    pub interrupted: bool,
    /// Made up by the fake engine, not measured.
    pub synthetic: bool,
    /// The counters' mode and every event not counted, with the reason; None with
    /// `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
}

/// `yield` as the study ran it: every workload as one-per-core, all and pairs on the same
/// cores, interleaved rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YieldSection {
    /// The experiment's own report: the plan, every run, and per workload the yield and
    /// shared-core speed with their intervals and classes.
    pub result: YieldReport,
}

/// What the plan and a workload's runs tell the reader besides their figures; kept in
/// [`YieldPlan::notes`] and [`WorkloadResult::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// `all` placed `threads` threads, fewer than two on each of the `cores` cores.
    AllShort { threads: usize, cores: usize },
    /// One core: `pairs` is not run; `all` runs `all_threads` threads on it.
    OneCore { all_threads: usize },
    /// An odd core count: `pairs` runs `pairs_threads` threads.
    OddCores { cores: usize, pairs_threads: usize },
    /// `pairs` could not be placed.
    NoPairs { why: String },
    /// Runs that saw a thread on a CPU outside its own.
    Strayed { runs: usize },
    /// Runs that completed no operation.
    NoOperation { runs: usize },
    /// Runs disturbed while they ran (another task took CPU time from a measured thread),
    /// left out of the comparisons; `first` is the first one's reason.
    Disturbed { runs: usize, first: String },
    /// Runs cut short by a signal, left out of the comparisons.
    CutShort {
        runs: usize,
        signal: Option<crate::interrupt::Signal>,
    },
    /// The steal-time warning of the look at the CPUs.
    Steal(String),
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::render::count;
        match self {
            Note::AllShort { threads, cores } => write!(
                f,
                "`all` runs {threads} threads, not {}: some of the {cores} cores have one usable \
                 thread",
                2 * cores
            ),
            Note::OneCore { all_threads } if *all_threads <= 2 => f.write_str(
                "one core: `pairs` would be the `all` layout, so the speed of a thread on a \
                 shared core is not measured separately",
            ),
            Note::OneCore { all_threads } => write!(
                f,
                "one core: `pairs` not run: it puts N threads two to a core on N/2 cores, so it \
                 needs at least two cores (--cores 2); the speed of a thread on a shared core is \
                 not measured (`all` runs {all_threads} threads on the core)"
            ),
            Note::OddCores {
                cores,
                pairs_threads,
            } => write!(
                f,
                "{cores} cores is odd: `pairs` runs {pairs_threads} threads on {} cores so that \
                 every thread shares its core",
                pairs_threads / 2
            ),
            Note::NoPairs { why } => write!(f, "`pairs` not run: {why}"),
            Note::Strayed { runs } => write!(
                f,
                "{} saw a thread on a CPU outside its own",
                count(*runs, "run")
            ),
            Note::NoOperation { runs } => write!(
                f,
                "{} completed no operation: one operation (a ruler's pass over its buffer, a lock \
                 append) took longer than the run, so those rounds give no ratio; lengthen \
                 --duration",
                count(*runs, "run")
            ),
            Note::Disturbed { runs, first } => write!(
                f,
                "{} disturbed while {} ran, left out of the comparisons: {first}",
                count(*runs, "run"),
                if *runs == 1 { "it" } else { "they" }
            ),
            Note::CutShort { runs, signal } => write!(
                f,
                "{} cut short by {} left out of the comparisons",
                count(*runs, "run"),
                crate::interrupt::name(*signal)
            ),
            Note::Steal(s) | Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
mod note_tests {
    use super::Note;

    #[test]
    fn notes_say_the_sentences_yield_printed() {
        assert_eq!(
            Note::AllShort {
                threads: 5,
                cores: 3
            },
            "`all` runs 5 threads, not 6: some of the 3 cores have one usable thread"
        );
        assert_eq!(
            Note::OneCore { all_threads: 2 },
            "one core: `pairs` would be the `all` layout, so the speed of a thread on a shared \
             core is not measured separately"
        );
        assert_eq!(
            Note::OneCore { all_threads: 4 },
            "one core: `pairs` not run: it puts N threads two to a core on N/2 cores, so it \
             needs at least two cores (--cores 2); the speed of a thread on a shared core is not \
             measured (`all` runs 4 threads on the core)"
        );
        assert_eq!(
            Note::OddCores {
                cores: 3,
                pairs_threads: 2
            },
            "3 cores is odd: `pairs` runs 2 threads on 1 cores so that every thread shares its \
             core"
        );
        assert_eq!(
            Note::Strayed { runs: 1 },
            "1 run saw a thread on a CPU outside its own"
        );
    }
}
