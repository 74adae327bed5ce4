//! The rwcache result model: the JSON is this model serialised; renderers read it. Units
//! live in field names.

use crate::cpuset::CpuSet;
use crate::locks::LockSummary;
use crate::placement;
use crate::rwcache::SchemeKind;
use crate::stats::{Ci, Effect, Summary};
use serde::{Deserialize, Serialize};

use super::TableSpec;

/// Bumped when the JSON layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 2;

/// One scheme at one thread count, over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemeResult {
    pub scheme: SchemeKind,
    pub threads: usize,
    /// CPUs the threads were pinned to.
    pub cpus: CpuSet,
    /// Some CPU carried more than one thread.
    pub oversubscribed: bool,
    /// Every reader writes one shared line (spin, rwspin, rwlock, parking_lot-rw).
    pub shared_reader_line: bool,
    pub runs: usize,
    /// Requests per second (all threads), over runs.
    pub requests_per_sec: Option<Summary>,
    /// Lookups per second, median run.
    pub lookups_per_sec: f64,
    /// Threads' CPU time ÷ (wall time × threads), median over runs, 0–1 (a process's
    /// "% CPU" as a monitor shows it).
    pub cpu_share: f64,
    /// Share of the threads' CPU spent in the lock, by subtraction, over runs, 0–1 (what a
    /// profile shows as a spinlock's share of CPU): per run, (CPU ns per request − the
    /// `none` reference's median CPU ns per request) floored at 0, ÷ CPU ns per request.
    /// None without a reference run.
    pub lock_cpu_share: Option<Summary>,
    /// CPU per request attributed to the lock (same subtraction), median over runs, ns.
    pub lock_cpu_ns_per_request: Option<f64>,
    /// `lock_cpu_ns_per_request` ÷ lookups per request, median over runs, ns: the lock's
    /// cost per lookup (writes, 1 in 10^4 requests by default, included).
    pub lock_cpu_ns_per_lookup: Option<f64>,
    /// Waiting after a collision (timed from the collision: wait − sleeps) ÷ the threads'
    /// CPU time, median over runs, 0–1: the contended part of the lock's CPU. rwlock and
    /// parking_lot-rw wait inside their own code, so theirs includes time parked.
    pub wait_cpu_share: f64,
    /// Threads' CPU time per request, median over runs, ns.
    pub cpu_ns_per_request: f64,
    /// Writer's lock code (acquire + release, waits included) per write, mean, ns
    /// (fenced TSC around each write, timer cost subtracted); 0 without writes.
    pub write_lock_ns_per_write: f64,
    /// Read side, all runs merged (counts are totals over `runs`).
    pub reads: LockSummary,
    /// Write side, all runs merged.
    pub writes: LockSummary,
    /// Writer wait (collision → acquired, uncontended writes as 0), 99th percentile, ns.
    pub writer_wait_p99_ns: u64,
    /// Longest writer wait, ns.
    pub writer_wait_max_ns: u64,
    /// Seqlock reads that copied again because a writer ran (0 for other schemes).
    pub read_retries: u64,
    /// False for rwlock / parking_lot-rw: their spins and backoffs are not visible (0 here).
    pub spins_visible: bool,
    /// Voluntary context switches, all threads and runs (blocking, yields, sleeps).
    pub voluntary_ctx_switches: u64,
    /// Involuntary context switches (preemptions), all threads and runs.
    pub involuntary_ctx_switches: u64,
    /// Pinning held in every run.
    pub pinning_ok: bool,
    /// The largest share of the measured CPUs' time the hypervisor took during a run
    /// (steal, from `/proc/stat`), 0–1; None (and left out) where it was not sampled, and
    /// in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_share_max: Option<f64>,
    /// Per-run requests/s, in run order.
    pub run_requests_per_sec: Vec<f64>,
    /// Per event, the median over runs of all threads' counters summed (task-clock,
    /// context switches, migrations; IPC where cycles were counted); None with `--counters
    /// off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
}

/// The `none` reference (the request loop with no lock, 1 thread) over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceResult {
    /// Always `none`.
    pub scheme: SchemeKind,
    /// Always 1.
    pub threads: usize,
    pub cpus: CpuSet,
    pub runs: usize,
    pub requests_per_sec: Option<Summary>,
    /// Threads' CPU time per request, over runs, ns; its median is subtracted.
    pub cpu_ns_per_request: Option<Summary>,
    /// Threads' CPU time ÷ wall time, median over runs, 0–1.
    pub cpu_share: f64,
    pub pinning_ok: bool,
}

/// One row of the before/after table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeforeAfterRow {
    pub scheme: SchemeKind,
    /// Threads' CPU busy, % of their wall time.
    pub cpu_pct: f64,
    /// CPU in the lock (by subtraction), % of the scheme's CPU; None without a reference.
    pub lock_cpu_pct: Option<f64>,
    /// Requests per second, median.
    pub requests_per_sec: f64,
    /// CPU per request, ns.
    pub cpu_ns_per_request: f64,
}

/// `spin` → `rwspin` at one thread count: the before/after table of SQL Server 2016's
/// move from a spinlock to a reader/writer spinlock (RTM → CU2), measured here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeforeAfter {
    pub threads: usize,
    pub before: BeforeAfterRow,
    pub after: BeforeAfterRow,
    /// after ÷ before − 1, %.
    pub requests_change_pct: f64,
    /// Change of the CPU-in-lock share, percentage points.
    pub lock_cpu_change_pts: Option<f64>,
    /// Change of CPU per request, %.
    pub cpu_per_request_change_pct: f64,
    /// Bootstrap 95 % CI of requests/s after ÷ before (None with one run each).
    pub requests_ratio: Option<Ci>,
    /// The ratio's effect against a ±2 % band (gain, loss, no effect or inconclusive),
    /// stored in the words of `lead_words`.
    #[serde(default, with = "lead_words")]
    pub verdict: Option<Effect>,
}

/// One scheme's read-side cost across thread counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadCost {
    pub scheme: SchemeKind,
    pub shared_reader_line: bool,
    /// (threads, lock CPU ns per lookup, requests/s per thread).
    pub by_threads: Vec<ReadCostAt>,
    /// Requests/s at the most threads ÷ at 1 thread (None without a 1-thread run).
    pub scaling: Option<f64>,
}

/// Read cost at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadCostAt {
    pub threads: usize,
    /// Lock CPU per lookup (by subtraction), ns.
    pub lock_cpu_ns_per_lookup: Option<f64>,
    /// Requests per second per thread.
    pub requests_per_sec_per_thread: f64,
}

/// The winner at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestAt {
    pub threads: usize,
    pub scheme: SchemeKind,
    pub requests_per_sec: f64,
    pub runner_up: Option<SchemeKind>,
    /// Bootstrap 95 % CI of best ÷ runner-up requests/s.
    pub over_runner_up: Option<Ci>,
    /// Whether the lead is beyond a ±2 % band, stored in the words of `lead_words`.
    #[serde(default, with = "lead_words")]
    pub verdict: Option<Effect>,
}

/// The best scheme overall and per thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Best {
    /// Highest geometric mean of (requests/s ÷ the best at that thread count).
    pub overall: SchemeKind,
    /// That geometric mean, 0–1 (1 = best at every thread count).
    pub overall_score: f64,
    pub per_threads: Vec<BestAt>,
}

/// The whole rwcache result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RwcacheReport {
    pub schema_version: u32,
    pub table: TableSpec,
    /// Slots in the hash table (2 × entries, rounded up to a power of two).
    pub slots: usize,
    /// Slots per shard (rcu's copy-on-write unit).
    pub shard_slots: usize,
    pub placement: String,
    /// The unit a scoped placement stayed inside (`--within`); None when unscoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<placement::ScopeUnit>,
    pub warmup_ns: u64,
    pub duration_ns: u64,
    pub repeat: usize,
    pub seed: u64,
    /// Clock of the writers' lock timing: `tsc` or `clock_monotonic`.
    pub clock: String,
    /// Cost of an empty timed piece (fenced TSC pair), subtracted from each write's, ns.
    pub timer_overhead_ns: f64,
    pub hypervisor: bool,
    pub smt: bool,
    /// The `none` reference whose CPU per request is subtracted (None when 1 thread could
    /// not be placed or no run finished).
    pub reference: Option<ReferenceResult>,
    pub results: Vec<SchemeResult>,
    pub before_after: Vec<BeforeAfter>,
    pub read_cost: Vec<ReadCost>,
    pub best: Option<Best>,
    /// Other work took these CPUs during the runs: the verdict opens with this caution.
    /// None on a quiet machine and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caution: Option<Caution>,
    /// Plain-words conclusions (the caution first, when there is one).
    pub verdict: Vec<String>,
    /// What could not be measured or run here, and why (`Note`s, and the look at the
    /// CPUs' warnings).
    pub notes: Vec<String>,
    /// Ctrl-C cut the runs short.
    pub interrupted: bool,
    /// The counters' mode and every event not counted, with the reason; None with
    /// `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
}

/// Signs that other work shared the measured CPUs, with the figures that show it. A
/// pinned thread that is runnable the whole run is on its CPU the whole run, so CPU time
/// below wall time means something else ran there (getrusage(2) CPU time against the run's
/// wall time); steal is time the hypervisor gave the vCPU's host CPU to another guest
/// (proc(5), `/proc/stat`). Either way the rates are low and noisy, and a comparison between
/// schemes measured at different moments can reflect the load, not the schemes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Caution {
    /// Results (scheme × thread count, not oversubscribed) whose threads were on their CPUs
    /// less than `ON_CPU_WARN` of the run (median over runs), and how many results there
    /// were.
    pub starved_results: usize,
    pub results: usize,
    /// The lowest and highest on-CPU share among the starved results, 0–1.
    pub on_cpu_low: Option<f64>,
    pub on_cpu_high: Option<f64>,
    /// The largest steal share of any run, 0–1, when above
    /// [`STEAL_WARN`](crate::hygiene::STEAL_WARN).
    pub steal_max: Option<f64>,
}

/// Pinned threads on their CPUs less than this share of the run were starved.
pub const ON_CPU_WARN: f64 = 0.9;

impl Caution {
    /// What was seen, with its figures: "pinned threads were on their CPUs only 42–85 % of
    /// the time in 2 of 4 results and the hypervisor took up to 13 % of their time (steal)".
    pub fn figures(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(lo), Some(hi)) = (self.on_cpu_low, self.on_cpu_high) {
            parts.push(format!(
                "pinned threads were on their CPUs only {} of the time in {} of {}",
                crate::render::percent_bounds(lo, hi),
                self.starved_results,
                crate::render::count(self.results, "result")
            ));
        }
        if let Some(s) = self.steal_max {
            parts.push(format!(
                "the hypervisor took up to {} of their time (steal)",
                crate::render::percent_bounds(s, s)
            ));
        }
        parts.join(" and ")
    }
}

impl std::fmt::Display for Caution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "caution: other work shared these CPUs: {}, so the rates are low and noisy and the comparisons below may not hold on a quiet \
             machine; rerun there before acting on them",
            self.figures()
        )
    }
}

/// What an rwcache run could not measure or run, and how it measured; kept in
/// [`RwcacheReport::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// A caveat several commands attach (hypervisor).
    Caveat(crate::render::Caveat),
    /// Some thread count exceeds the CPUs given.
    Oversubscribed,
    /// `rwlock` and `parking_lot-rw` spin inside their libraries.
    SpinsHidden,
    /// CPU in the lock is the scheme's CPU per request less the `none` reference's
    /// `reference_ns`.
    BySubtraction { reference_ns: f64 },
    /// This thread count could not be placed.
    ThreadsSkipped { threads: usize, why: String },
    /// The 1-thread `none` reference could not be placed.
    NoReference { why: String },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Caveat(c) => std::fmt::Display::fmt(c, f),
            Note::Oversubscribed => f.write_str(
                "some thread counts exceed the CPUs given: threads time-share CPUs, and a \
                 preempted lock holder stalls the spinning schemes",
            ),
            Note::SpinsHidden => f.write_str(
                "rwlock and parking_lot-rw wait inside std / parking_lot: their collisions \
                 (failed try_read/try_write) and wait times are measured, their spins and \
                 backoffs are not (shown as -)",
            ),
            Note::BySubtraction { reference_ns } => write!(
                f,
                "CPU in the lock is found by subtraction: LOCK NS/REQ = the scheme's CPU ns per \
                 request − {} ns of `none` (the same requests with no lock, 1 thread, run in \
                 every round), floored at 0; LOCK %CPU = that ÷ the scheme's CPU ns per request \
                 (at more threads it also holds cache-line transfers and a sibling's \
                 competition for the core); WAIT %CPU = timed waits after a collision ÷ CPU \
                 time",
                crate::render::ns_figure(*reference_ns)
            ),
            Note::ThreadsSkipped { threads, why } => write!(f, "{threads} threads skipped: {why}"),
            Note::NoReference { why } => write!(
                f,
                "the no-lock reference (1 thread) could not be placed ({why}): CPU in the lock \
                 is not measured"
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
mod note_tests {
    use super::Note;

    #[test]
    fn notes_say_the_sentences_rwcache_printed() {
        let skipped = Note::ThreadsSkipped {
            threads: 8,
            why: "too few CPUs".into(),
        };
        assert_eq!(skipped, "8 threads skipped: too few CPUs");
    }
}

// ---------------------------------------------------------------------------------------
// The study's section: what results.json keeps under `rwcache`.

/// `rwcache` as the study ran it: every scheme at 1 thread and at every usable CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RwcacheSection {
    /// One row per scheme × thread count (what the chart and table show).
    pub rows: Vec<RwcacheRow>,
    /// The experiment's own report (lock stats, before/after, best, verdict, notes).
    pub result: RwcacheReport,
}

/// One scheme at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RwcacheRow {
    pub scheme: crate::rwcache::SchemeKind,
    pub threads: usize,
    pub requests_per_sec: Summary,
    /// Median share of the threads' time spent in the lock code, 0–1, when measured.
    pub lock_cpu_share: Option<f64>,
}

/// The words results.json has always stored for a ratio against rwcache's ±2 % band:
/// `faster` (a gain), `slower` (a loss) and `no-difference`, which covered both an interval
/// inside the band and one straddling its edge. Written so, so that the file does not
/// change; read back, `no-difference` is inconclusive, since it cannot say which it was.
pub(crate) mod lead_words {
    use crate::stats::Effect;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Effect>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            None => s.serialize_none(),
            Some(Effect::Gain) => s.serialize_some("faster"),
            Some(Effect::Loss | Effect::SmallLoss) => s.serialize_some("slower"),
            Some(Effect::NoEffect | Effect::Inconclusive) => s.serialize_some("no-difference"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Effect>, D::Error> {
        match Option::<String>::deserialize(d)?.as_deref() {
            None => Ok(None),
            Some("faster") => Ok(Some(Effect::Gain)),
            Some("slower") => Ok(Some(Effect::Loss)),
            Some("no-difference") => Ok(Some(Effect::Inconclusive)),
            Some(other) => Err(serde::de::Error::custom(format!(
                "verdict `{other}`: expected faster, slower or no-difference"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Lead {
        #[serde(default, with = "lead_words")]
        verdict: Option<Effect>,
    }

    /// The stored words do not change with the enum behind them, and a word that cannot
    /// tell a tie from an interval straddling the band reads back as inconclusive.
    #[test]
    fn lead_words_keep_the_file_and_never_read_back_firmer() {
        let json = |e| serde_json::to_string(&Lead { verdict: e }).unwrap();
        assert_eq!(json(Some(Effect::Gain)), r#"{"verdict":"faster"}"#);
        assert_eq!(json(Some(Effect::Loss)), r#"{"verdict":"slower"}"#);
        assert_eq!(
            json(Some(Effect::NoEffect)),
            r#"{"verdict":"no-difference"}"#
        );
        assert_eq!(
            json(Some(Effect::Inconclusive)),
            r#"{"verdict":"no-difference"}"#
        );
        assert_eq!(json(None), r#"{"verdict":null}"#);
        let read = |s: &str| serde_json::from_str::<Lead>(s).map(|l| l.verdict);
        assert_eq!(read(r#"{"verdict":"faster"}"#).unwrap(), Some(Effect::Gain));
        assert_eq!(
            read(r#"{"verdict":"no-difference"}"#).unwrap(),
            Some(Effect::Inconclusive)
        );
        assert_eq!(read("{}").unwrap(), None);
        let e = read(r#"{"verdict":"maybe"}"#).unwrap_err().to_string();
        assert!(e.contains("maybe") && e.contains("no-difference"), "{e}");
    }
}
