//! The one serde model of a comparison: what `--json` prints and every renderer reads.

use super::metric::MetricInfo;
use crate::cpuset::CpuSet;
use crate::placement::ScopeUnit;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// A whole `smtlab compare` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    /// The command as run: its argv, or `["sh", "-c", TEXT]` with `--shell`.
    pub command: Vec<String>,
    /// The metric read from the output; None = wall time is the headline.
    pub metric: Option<MetricInfo>,
    /// Discarded rounds before measuring.
    pub warmup_rounds: usize,
    /// Measured rounds; each runs every placement once, the order counterbalanced from
    /// round to round (each run's `position` says where it ran in its round).
    pub rounds: usize,
    /// How each run's CPUs were enforced: `affinity` (set in the child before exec,
    /// inherited by everything it starts) or `cgroup-v2` / `cgroup-v1` (a temporary
    /// cpuset cgroup that processes cannot leave).
    pub enforcement: String,
    /// The unit the named placements stayed inside; None with `--cpus` only.
    pub scope: Option<ScopeUnit>,
    /// Changes smaller than this share (0.02 = 2 %) are called "no difference".
    pub noise_threshold: f64,
    /// Confidence of every interval (0.95).
    pub confidence: f64,
    /// The server the command talks to, when smtlab placed one.
    pub server: Option<ServerInfo>,
    /// Burners added beside some placements.
    pub burners: Option<BurnerInfo>,
    /// One entry per placement (and per placement with burners), in run order; the first
    /// is the baseline.
    pub placements: Vec<PlacementResult>,
    /// Placements that could not run here, with the reason.
    pub skipped: Vec<Skipped>,
    /// Each placement against the first, paired by round. Files written before the
    /// comparisons were paired read as none.
    #[serde(default, deserialize_with = "paired_only")]
    pub comparisons: Vec<Comparison>,
    /// Why there are no comparisons, and how to get one: without placements on a machine
    /// without SMT siblings the command runs on one placement only. None when placements
    /// were compared (and in older files).
    #[serde(default)]
    pub no_comparison: Option<String>,
    /// Throughput of every sibling of some cores over one thread per core on the same
    /// cores: what SMT adds for this command.
    #[serde(default, deserialize_with = "paired_only")]
    pub smt_yield: Option<PairRatio>,
    /// How each run on both siblings of half the cores compares with one thread per core
    /// with as many threads: what SMT costs each thread (its `ratio` is the speed, below
    /// 1 = slower; the text prints the inverse, the slowdown).
    #[serde(default, deserialize_with = "paired_only")]
    pub pairs_slowdown: Option<PairRatio>,
    /// The command runs for a fixed time, so its wall time measures no work: found in its
    /// arguments or its timing, with the metric chosen instead when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_duration: Option<FixedDuration>,
    /// True when a signal ended the run early: the numbers cover the rounds that finished.
    pub interrupted: bool,
    /// Which signal, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<crate::interrupt::Signal>,
    /// Placements allowed several CPUs whose command tree kept only about one busy, with
    /// what on this machine could have held them back ([`Starved`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub starved: Vec<Starved>,
    /// Facts the user should know (machine, hygiene, placement notes; [`Note`]s).
    pub notes: Vec<String>,
    /// The look at the placements' CPUs just before the runs: each warning (other work on
    /// them, steal), also among `notes`. An answer drawn from these runs is held back.
    /// Empty when they were quiet, and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<String>,
    /// The event counters' mode and every event not counted, with the reason; None with
    /// `--counters off` and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
}

/// Reads a comparison field written since comparisons are paired by round; one written
/// before (an unpaired ratio of medians, its `speedup` or `ratio` an interval without a
/// run count) reads as none rather than as a paired comparison it is not.
fn paired_only<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::de::DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    let unpaired = |c: &serde_json::Value| {
        c.get("ratio_of_medians").is_some() || c.get("ratio").is_some_and(|r| r.get("n").is_none())
    };
    let older = match &v {
        serde_json::Value::Array(a) => a.iter().any(unpaired),
        c @ serde_json::Value::Object(_) => unpaired(c),
        _ => false,
    };
    if older {
        return Ok(T::default());
    }
    crate::lenient::from_value(v).map_err(serde::de::Error::custom)
}

/// The server placed beside the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// `postgres-managed` (a throwaway cluster) or `pids` (`--pin-pids`).
    pub kind: String,
    /// The server's version, for a managed cluster.
    pub version: Option<String>,
    /// Processes whose threads (and children's threads) were pinned during each run.
    pub pids: Vec<i32>,
    /// `--server-cpus`; None = each placement's own CPUs.
    pub fixed_cpus: Option<CpuSet>,
}

/// The neighbours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurnerInfo {
    /// Burner kind (`prime`, `stream`, …).
    pub kind: String,
    /// Burners per run.
    pub count: usize,
    /// `siblings`, `same-cpus`, `other-cores` or `os`.
    pub placement: String,
}

/// One placement's runs and their summaries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementResult {
    /// Name in tables: `one-per-core`, `cpus:0-1`, `all + 2 prime on siblings`.
    pub label: String,
    /// The placement request (`one-per-core`, `cpus:0-1`).
    pub request: String,
    /// CPUs the command (and everything it started) was allowed.
    pub cpus: CpuSet,
    /// Cores those CPUs belong to.
    pub cores: usize,
    /// CPUs the server's processes were pinned to, when there is a server.
    pub server_cpus: Option<CpuSet>,
    /// CPUs of each burner (empty without burners).
    pub burner_cpus: Vec<CpuSet>,
    /// Measured runs, in order.
    pub runs: Vec<Run>,
    /// Wall time per run, ns.
    pub wall_time_ns: Option<Summary>,
    /// The metric per run, in its unit.
    pub metric: Option<Summary>,
    /// User CPU time of the whole process tree per run, ns.
    pub user_time_ns: Option<Summary>,
    /// System CPU time of the whole process tree per run, ns.
    pub system_time_ns: Option<Summary>,
    /// CPUs the command tree kept busy: per run its user + system CPU time ÷ its wall
    /// time, the median over runs (2.0 = two CPUs busy the whole run). None without runs
    /// and in older files.
    #[serde(default)]
    pub cpus_used: Option<f64>,
    /// Largest resident set of any one process of the tree, over all runs, bytes.
    pub max_rss_bytes: Option<u64>,
    /// Median voluntary context switches per run (waiting: I/O, locks, sleep).
    pub voluntary_switches: Option<f64>,
    /// Median involuntary context switches per run (preempted: CPU contention).
    pub involuntary_switches: Option<f64>,
    /// Median ops/s of all burners together during the runs.
    pub burner_ops_per_sec: Option<f64>,
    /// Per event, the median over runs of the command tree's counters (task-clock,
    /// context switches, migrations, page faults; cycles, instructions, IPC where the PMU
    /// counts them); None with `--counters off` and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
    /// Runs that exited non-zero (kept with `--ignore-failure`).
    pub failed_runs: usize,
    /// Notes from the planner (odd thread counts, …).
    pub notes: Vec<String>,
}

impl PlacementResult {
    /// A placement's runs before `analysis::summarize` fills the summaries: no server or
    /// burner CPUs, no notes.
    pub fn unsummarized(
        label: String,
        request: String,
        cpus: CpuSet,
        cores: usize,
        runs: Vec<Run>,
    ) -> Self {
        PlacementResult {
            label,
            request,
            cpus,
            cores,
            server_cpus: None,
            burner_cpus: Vec::new(),
            runs,
            wall_time_ns: None,
            metric: None,
            user_time_ns: None,
            system_time_ns: None,
            cpus_used: None,
            max_rss_bytes: None,
            voluntary_switches: None,
            involuntary_switches: None,
            burner_ops_per_sec: None,
            counters: None,
            failed_runs: 0,
            notes: Vec::new(),
        }
    }
}

/// One execution of the command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Round number, from 1.
    pub round: usize,
    /// Where in its round it ran, from 1 (0 in older files and for warm-up runs).
    #[serde(default)]
    pub position: usize,
    /// From spawn to exit, ns.
    pub wall_time_ns: u64,
    /// User CPU time of the command and every descendant reaped, ns (`wait4`).
    pub user_time_ns: u64,
    /// System CPU time, ns.
    pub system_time_ns: u64,
    /// Largest resident set of one process of the tree, bytes.
    pub max_rss_bytes: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    /// Exit code; None when killed by a signal.
    pub exit_code: Option<i32>,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// The metric read from its output.
    pub metric: Option<f64>,
    /// Ops/s of all burners together during this run.
    pub burner_ops_per_sec: Option<f64>,
    /// Processes of its group still running when it exited, killed then.
    pub leftover_processes: usize,
    /// Event counters of the command's whole tree, from its exec to its exit; None with
    /// `--counters off` and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
}

/// A placement that did not run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub label: String,
    pub reason: String,
}

/// What a comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    /// The whole interval lies beyond the noise band, on the better side.
    Faster,
    /// The whole interval lies beyond the noise band, on the worse side.
    Slower,
    /// The whole interval lies inside the noise band.
    NoDifference,
    /// The interval straddles an edge of the noise band: more runs would tell.
    Inconclusive,
}

impl Call {
    /// The call for a speed's class (> 1 = faster) against the noise band.
    pub fn of(effect: crate::stats::Effect) -> Self {
        use crate::stats::Effect;
        match effect {
            Effect::Gain => Call::Faster,
            Effect::Loss | Effect::SmallLoss => Call::Slower,
            Effect::NoEffect => Call::NoDifference,
            Effect::Inconclusive => Call::Inconclusive,
        }
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Call::Faster => "faster",
            Call::Slower => "slower",
            Call::NoDifference => "no difference",
            Call::Inconclusive => "inconclusive",
        })
    }
}

/// One placement against the baseline, paired by round: each round ran every placement
/// back to back, so the ratio of the two runs of one round cancels drift between rounds
/// (a machine warming up, a neighbour starting) that a ratio of medians would count as
/// spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The placement's label.
    pub placement: String,
    /// The baseline's label (the first placement).
    pub baseline: String,
    /// `wall_time_ns` or `metric`: which value was compared.
    pub basis: String,
    /// The rounds paired: those every placement finished.
    pub rounds: Vec<usize>,
    /// Per paired round, the placement's speed ÷ the baseline's (> 1 = faster): the
    /// metric's ratio for a throughput, the inverse ratio for a time.
    pub speedups: Vec<f64>,
    /// Their central value (the geometric mean) with its interval, run count and class
    /// against the noise band: `crate::stats::Comparison`, as the study's answer rows.
    pub speedup: crate::stats::Comparison,
    pub call: Call,
    /// Why the value compared cannot call this comparison (wall time of a command that
    /// runs for a fixed time); the call is then inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_called: Option<String>,
}

/// A ratio between two placements that form a known pair (see
/// [`CompareReport::smt_yield`], [`CompareReport::pairs_slowdown`]), paired by round as
/// [`Comparison`] is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairRatio {
    /// The numerator's label (`all`, or `pairs`).
    pub placement: String,
    /// The denominator's label (`one-per-core`).
    pub reference: String,
    /// `wall_time_ns` or `metric`.
    pub basis: String,
    /// The rounds paired: those every placement finished.
    pub rounds: Vec<usize>,
    /// Per paired round, the numerator's speed ÷ the denominator's (> 1 = faster).
    pub speedups: Vec<f64>,
    /// Their central value with its interval, run count and class. For `pairs_slowdown`
    /// each run's slowdown is the inverse (`pairs` at 0.625× the speed = 1.6× slower).
    pub ratio: crate::stats::Comparison,
    /// As [`Comparison::not_called`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_called: Option<String>,
}

/// A command that runs for a fixed time rather than a fixed amount of work: its wall time
/// is the same whatever it gets done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedDuration {
    pub found_by: FoundBy,
    /// What was seen, in words: the time limit in its arguments, or wall and CPU time.
    pub seen: String,
    /// The metric compared instead of wall time (`sysbench`, `pgbench`), when smtlab
    /// chose one because none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_chosen: Option<String>,
}

/// A placement allowed two or more CPUs whose command tree kept at most about one of them
/// busy (user + system time ÷ wall time, [`PlacementResult::cpus_used`]): about one, or
/// less while it was preempted more often than it waited. Either the command runs about
/// one thread at a time, or it did not get the CPUs it was allowed (surely so when it was
/// mostly preempted). A comparison with it measures what the CPU time it got gives, not
/// the CPUs it names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Starved {
    /// The placement's label.
    pub placement: String,
    /// CPUs it was allowed.
    pub allowed: usize,
    /// CPUs its command tree kept busy (the median over its runs).
    pub cpus_used: f64,
    /// Runs behind `cpus_used`.
    pub runs: usize,
    /// Its median involuntary and voluntary context switches per run: preempted more often
    /// than it waited means its threads were ready to run and did not get a CPU.
    pub involuntary_switches: f64,
    pub voluntary_switches: f64,
    /// The baseline's label, CPUs allowed and CPUs kept busy, for comparison.
    pub baseline: String,
    pub baseline_allowed: usize,
    pub baseline_cpus_used: f64,
    /// What on this machine can hold a command to fewer CPUs than it is allowed.
    pub likely_causes: Vec<StarveCause>,
}

impl Starved {
    /// Involuntary context switches per run below which "preempted more often than it
    /// waited" is not read from a short run's few switches (an `echo` switches once or
    /// twice).
    pub const MIN_PREEMPTIONS: f64 = 10.0;

    /// Preempted more often than it waited, and at least [`Self::MIN_PREEMPTIONS`] times
    /// a run: ready to run, not running.
    pub fn preempted(&self) -> bool {
        self.involuntary_switches >= Self::MIN_PREEMPTIONS
            && self.involuntary_switches >= self.voluntary_switches
    }
}

/// Why a command may get fewer CPUs than its affinity allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cause", rename_all = "kebab-case")]
pub enum StarveCause {
    /// Other processes running on the same CPUs: always possible, and the scheduler
    /// shares each CPU among the runnable tasks on it.
    OtherLoad,
    /// `kernel.sched_autogroup_enabled` = 1: CFS first shares CPU time between
    /// autogroups (one per session, setsid(2)), then among a group's tasks, so a command
    /// in a session of its own beside a busy session gets that group's share
    /// (sched(7), "The autogroup feature").
    Autogroup,
    /// This process's cgroup caps its CPU time at `cpus` CPUs (cgroup v2 `cpu.max`, v1
    /// `cpu.cfs_quota_us`; the kernel's "CFS Bandwidth Control").
    CpuQuota { cpus: f64 },
}

/// What [`Starved`] weighs that the runs do not show: the machine's scheduler settings.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SchedFacts {
    /// `/proc/sys/kernel/sched_autogroup_enabled` is 1; None where unread.
    pub autogroup: Option<bool>,
    /// The cgroup CPU quota in CPUs, when there is one.
    pub cpu_quota: Option<f64>,
}

/// How a fixed-duration command was recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FoundBy {
    /// A known tool's time limit among its arguments (`sysbench --time`, `pgbench -T`).
    Arguments,
    /// Wall time the same on two placements while their CPU time was not.
    Timing,
}

/// `compare` as the study ran it: the user's command under its placements, interleaved
/// rounds, as `smtlab compare` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareSection {
    /// The time the automatic round count was sized to fill (the command's share of the
    /// budget, warm-up included), ns; None when `--runs` fixed the rounds.
    pub sized_to_ns: Option<u64>,
    /// The compared value of each placement that ran: its median with a bootstrap
    /// interval (what the chart shows).
    pub medians: Vec<PlacementMedian>,
    /// The comparison as `smtlab compare --json` prints it.
    pub result: CompareReport,
}

/// One placement's compared value over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementMedian {
    /// The placement's label (`one-per-core`, `cpus:0-1`).
    pub label: String,
    /// `metric` or `wall_time_ns`: which value.
    pub basis: String,
    /// Its unit: the metric's (`tps`, `events/s`, `value`), or `ns`.
    pub unit: String,
    /// The median of the runs with a percentile bootstrap interval of it; None without
    /// runs.
    pub median: Option<crate::stats::Ci>,
    /// Runs behind it.
    pub n: usize,
}

/// What a compare run tells the reader about how it ran; kept in [`CompareReport::notes`]
/// as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// A caveat several commands attach (debug-built burners, hypervisor).
    Caveat(crate::render::Caveat),
    /// Processes the command left running when it exited, killed with its tree.
    Leftovers { leftovers: usize },
    /// The fake executor made the runs up.
    NotRun,
    /// The fake executor started and placed no server.
    NoServer,
    /// A placement that kept about one of its CPUs busy.
    Starved(Starved),
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Caveat(c) => std::fmt::Display::fmt(c, f),
            Note::Leftovers { leftovers } => write!(
                f,
                "{leftovers} process(es) the command started were still running when it exited \
                 and were killed then (each run ends with its whole process tree)"
            ),
            Note::NotRun => f.write_str(
                "synthetic: the command was not run; these runs were made up by compare's fake \
                 executor",
            ),
            Note::NoServer => f.write_str("synthetic: no server was started or placed"),
            Note::Starved(x) => {
                use crate::render::{count, fixed2, plural};
                write!(
                    f,
                    "{} kept {} CPUs busy (median of {}: user + system time ÷ wall time) of the \
                     {} {} it was allowed; {} kept {} of {}. ",
                    x.placement,
                    fixed2(x.cpus_used),
                    count(x.runs, "run"),
                    x.allowed,
                    plural("CPU", x.allowed),
                    x.baseline,
                    fixed2(x.baseline_cpus_used),
                    x.baseline_allowed,
                )?;
                if x.preempted() {
                    write!(
                        f,
                        "It was preempted more often than it waited (median {} involuntary, {} \
                         voluntary context switches per run): its threads were ready to run and \
                         did not get their CPUs, so this comparison measures the CPU time it \
                         got, not {} CPUs",
                        crate::render::thousands(x.involuntary_switches.round() as u64),
                        crate::render::thousands(x.voluntary_switches.round() as u64),
                        x.allowed,
                    )?;
                } else {
                    write!(
                        f,
                        "Either the command runs about one thread at a time, so more CPUs cannot \
                         speed it up, or it did not get its CPUs, and this comparison then \
                         measures the CPU time it got, not {} CPUs",
                        x.allowed,
                    )?;
                }
                let causes: Vec<String> = x
                    .likely_causes
                    .iter()
                    .map(|c| match c {
                        StarveCause::OtherLoad => "other load on these CPUs".to_string(),
                        StarveCause::Autogroup => "autogroup \
                            (/proc/sys/kernel/sched_autogroup_enabled = 1: CPU time is shared \
                            between sessions first, so a busy session elsewhere holds this \
                            one to its share; `sysctl kernel.sched_autogroup_enabled=0` turns \
                            it off)"
                            .to_string(),
                        StarveCause::CpuQuota { cpus } => format!(
                            "this cgroup's CPU quota of {} CPUs (cpu.max)",
                            fixed2(*cpus)
                        ),
                    })
                    .collect();
                if !causes.is_empty() {
                    write!(f, "; what can hold it back here: {}", causes.join("; "))?;
                }
                Ok(())
            }
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);
