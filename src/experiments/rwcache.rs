//! `rwcache` (seed 003): a read-mostly metadata cache under each protection scheme of
//! [`crate::rwcache`], at each thread count, through the engine (pinned threads, schemes
//! interleaved A B C … per round). Per scheme: requests/s with spread; the share of CPU
//! spent in the lock (the seed's "spinlock % CPU contribution"); lock stats per side;
//! then the seed's before/after table (`spin` → `rwspin`, as RTM → CU2), the cost of a
//! shared reader line, and the best scheme.
//!
//! CPU in the lock is found by subtraction ([`crate::rwcache::lock_cost`]): every round also
//! runs the reference `none` — the same request loop with no lock, 1 thread, pinned like
//! the 1-thread runs — and a scheme's lock CPU per request is its CPU ns per request minus
//! the reference's median, floored at 0; its share is that ÷ its own CPU ns per request
//! (0–1). At more threads the difference also holds what sharing costs: cache-line
//! transfers, waits, and a sibling's competition for the core. Waits after a collision are
//! timed exactly (the clock is read only then) and give `wait_cpu_share`.
//!
//! A request looks up `lookups` uniformly random keys, each under its own read-side
//! acquisition (each T-SQL statement looks metadata up, seed 003), and with probability
//! `write_ratio` replaces one random entry; `work_ns` of busy work outside the lock can
//! stand for the rest of the statement (0 by default: the cache alone).

use crate::cpuset::CpuSet;
use crate::engine::{Engine, Order, Phase, RunResult, RunSpec, ThreadCtx, Workload, schedule};
use crate::error::BadInput;
use crate::locks::LockSummary;
use crate::placement::{self, Request};
use crate::rwcache::{Entry, Layout, MAX_ENTRIES, RwThreadStats, Scheme, SchemeKind, lock_cost};
use crate::stats::{self, Better, Ci, SplitMix64, Summary, Verdict};
use crate::topology::Topology;
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// Bumped when the JSON layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 2;

/// Most lookups per request.
pub const MAX_LOOKUPS: usize = 1024;

/// Most threads in one run.
pub const MAX_THREADS: usize = crate::limits::MAX_THREADS as usize;

/// Noise threshold for verdicts: a change is called only beyond ±2 %.
const NOISE: f64 = 0.02;

/// The workload's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSpec {
    /// Entries in the table (keys `0..entries`).
    pub entries: usize,
    /// Lookups per request.
    pub lookups: usize,
    /// Fraction of requests that replace an entry, 0..=1.
    pub write_ratio: f64,
    /// Busy work per request outside the lock, ns.
    pub work_ns: u64,
}

impl Default for TableSpec {
    /// Issue 6's defaults: 10,000 entries, 4 lookups, 1 write in 10,000 requests.
    fn default() -> Self {
        TableSpec {
            entries: 10_000,
            lookups: 4,
            write_ratio: 0.0001,
            work_ns: 0,
        }
    }
}

impl TableSpec {
    /// Checks every value, naming the bad one and the valid range.
    pub fn validate(&self) -> Result<(), BadInput> {
        if !(1..=MAX_ENTRIES).contains(&self.entries) {
            return Err(BadInput(format!(
                "--entries must be between 1 and {MAX_ENTRIES} (got {}); the seed's cache is modelled with 10000",
                self.entries
            )));
        }
        if !(1..=MAX_LOOKUPS).contains(&self.lookups) {
            return Err(BadInput(format!(
                "--lookups must be between 1 and {MAX_LOOKUPS} (got {})",
                self.lookups
            )));
        }
        if !(0.0..=1.0).contains(&self.write_ratio) {
            return Err(BadInput(format!(
                "--write-ratio must be a fraction of requests between 0 and 1, e.g. 0.0001 (got {})",
                self.write_ratio
            )));
        }
        if self.work_ns > crate::limits::MAX_OP_NS {
            return Err(BadInput(format!(
                "--work-ns must be at most 1000000000 (1 s) per request (got {})",
                self.work_ns
            )));
        }
        Ok(())
    }
}

/// A validated rwcache configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub schemes: Vec<SchemeKind>,
    /// Thread counts to run, in order.
    pub threads: Vec<usize>,
    pub placement: Request,
    /// The unit a scoped placement stays inside (one package by default).
    pub within: placement::Scope,
    pub table: TableSpec,
    pub spec: RunSpec,
    /// Rounds over every (threads, scheme) trial.
    pub repeat: usize,
    /// Seeds each thread's key sequence.
    pub seed: u64,
}

impl Config {
    /// Checks the whole configuration.
    pub fn validate(&self) -> Result<(), BadInput> {
        self.table.validate()?;
        self.spec.validate()?;
        if self.schemes.is_empty() {
            return Err(BadInput(
                "--scheme selects nothing; give `all` or a list like spin,rwspin".into(),
            ));
        }
        if self.threads.is_empty() || self.threads.iter().any(|&t| t == 0 || t > MAX_THREADS) {
            return Err(BadInput(format!(
                "--threads must list counts between 1 and {MAX_THREADS}, e.g. 1,2 (got {:?})",
                self.threads
            )));
        }
        if self.repeat == 0 {
            return Err(BadInput("--repeat must be at least 1".into()));
        }
        Ok(())
    }
}

/// A scheme's workload, type-erased for the engine, with its stats.
pub trait CacheWorkload: Workload {
    /// Takes the per-thread stats of the last measurement (empty stats for threads that
    /// did not report).
    fn take_stats(&self) -> Vec<RwThreadStats>;
}

/// The request loop over scheme `S`.
struct Requests<S: Scheme> {
    cache: S,
    table: TableSpec,
    threads: usize,
    seed: u64,
    finals: Mutex<Vec<Option<RwThreadStats>>>,
}

/// Builds the workload of `kind` for `threads` threads.
///
/// # Panics
/// [`SchemeKind::Unlocked`] (the `none` reference) with `threads` ≠ 1.
pub fn workload(
    kind: SchemeKind,
    table: &TableSpec,
    threads: usize,
    seed: u64,
) -> Box<dyn CacheWorkload> {
    fn make<S: Scheme>(t: &TableSpec, threads: usize, seed: u64) -> Box<dyn CacheWorkload> {
        Box::new(Requests::<S> {
            cache: S::new(&Layout::new(t.entries), threads),
            table: t.clone(),
            threads,
            seed,
            finals: Mutex::new(vec![None; threads]),
        })
    }
    use crate::rwcache as r;
    match kind {
        SchemeKind::Spin => make::<r::Spin>(table, threads, seed),
        SchemeKind::RwSpin => make::<r::RwSpin>(table, threads, seed),
        SchemeKind::RwLock => make::<r::StdRw>(table, threads, seed),
        SchemeKind::ParkingLotRw => make::<r::ParkingLotRw>(table, threads, seed),
        SchemeKind::BrLock => make::<r::BrLock>(table, threads, seed),
        SchemeKind::SeqLock => make::<r::SeqLock>(table, threads, seed),
        SchemeKind::Rcu => make::<r::Rcu>(table, threads, seed),
        SchemeKind::Unlocked => make::<r::Unlocked>(table, threads, seed),
    }
}

#[inline]
fn busy_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = crate::locks::now_ns();
    while crate::locks::now_ns().saturating_sub(start) < ns {
        std::hint::spin_loop();
    }
}

impl<S: Scheme> Workload for Requests<S> {
    fn name(&self) -> String {
        format!("rwcache/{}", S::KIND)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        let measure = ctx.phase() == Phase::Measure;
        let mut h = self.cache.handle(ctx.thread);
        let mut rng = SplitMix64::new(
            self.seed
                ^ (ctx.thread as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
                ^ u64::from(measure),
        );
        let n = self.table.entries as u64;
        let always_write = self.table.write_ratio >= 1.0;
        // P(write) = threshold / 2^64.
        let threshold = (self.table.write_ratio * 2f64.powi(64)) as u64;
        let mut writes = 0u64;
        let mut acc = 0u64;
        let mut pending = 0u64;
        while !ctx.should_stop() {
            // Identical for every scheme and the `none` reference: nothing here is timed,
            // so lock cost is the difference in CPU per request.
            for _ in 0..self.table.lookups {
                let key = rng.below(n);
                if let Some(e) = self.cache.get(&mut h, key) {
                    acc = acc.wrapping_add(e.version ^ e.payload[0]);
                }
            }
            if always_write || rng.next_u64() < threshold {
                let key = rng.below(n);
                writes += 1;
                // Versions unique per thread: (count << 16) | thread.
                let version = (writes << 16) | (ctx.thread as u64 & 0xFFFF);
                self.cache.replace(&mut h, Entry::new(key, version));
                let c = S::common(&mut h);
                c.stats.write_lock_ns += c.timer.take();
            }
            busy_ns(self.table.work_ns);
            pending += 1;
            if pending == 16 {
                ctx.add_progress(pending);
                pending = 0;
            }
        }
        ctx.add_progress(pending);
        std::hint::black_box(acc);
        if measure {
            self.finals.lock().expect("not poisoned")[ctx.thread] = Some(self.cache.stats(&h));
        }
    }
}

impl<S: Scheme> CacheWorkload for Requests<S> {
    fn take_stats(&self) -> Vec<RwThreadStats> {
        let mut f = self.finals.lock().expect("not poisoned");
        (0..self.threads)
            .map(|i| f.get_mut(i).and_then(Option::take).unwrap_or_default())
            .collect()
    }
}

/// One run: the engine's result and each thread's stats.
pub struct RunOutcome {
    pub run: RunResult,
    pub stats: Vec<RwThreadStats>,
}

impl RunOutcome {
    fn merged(&self) -> RwThreadStats {
        let mut t = RwThreadStats::default();
        for s in &self.stats {
            t.merge(s);
        }
        t
    }

    fn requests(&self) -> u64 {
        self.run.total_ops()
    }

    /// Threads' wall time in this run, ns (measured time × threads).
    fn thread_ns(&self) -> f64 {
        self.run.measured_ns as f64 * self.run.threads.len().max(1) as f64
    }

    /// Waiting on the CPU after a collision (timed: wait − sleep) ÷ the threads' CPU time,
    /// at most 1.
    fn wait_cpu_share(&self) -> f64 {
        ratio(
            self.merged().wait_on_cpu_ns() as f64,
            self.run.cpu_time_ns() as f64,
        )
        .min(1.0)
    }

    /// Lookups per request (reads ÷ requests).
    fn lookups_per_request(&self) -> f64 {
        ratio(
            self.merged().reads.counts.acquisitions as f64,
            self.requests() as f64,
        )
    }

    fn cpu_ns_per_request(&self) -> f64 {
        ratio(self.run.cpu_time_ns() as f64, self.requests() as f64)
    }

    /// CPU time ÷ (wall time × threads).
    fn cpu_share(&self) -> f64 {
        ratio(self.run.cpu_time_ns() as f64, self.thread_ns())
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { 0.0 }
}

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
    /// Threads' CPU time ÷ (wall time × threads), median over runs, 0–1 (the seed's "% CPU").
    pub cpu_share: f64,
    /// Share of the threads' CPU spent in the lock, by subtraction, over runs, 0–1 (the
    /// seed's "spinlock % CPU contribution"): per run, (CPU ns per request − the `none`
    /// reference's median CPU ns per request) floored at 0, ÷ CPU ns per request. None
    /// without a reference run.
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
    /// Per-run requests/s, in run order.
    pub run_requests_per_sec: Vec<f64>,
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

/// The seed's RTM → CU2 table: `spin` → `rwspin` at one thread count.
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
    /// Faster / slower / no difference (beyond ±2 %).
    pub verdict: Option<Verdict>,
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
    /// Whether the lead is beyond noise.
    pub verdict: Option<Verdict>,
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
    /// Plain-words conclusions.
    pub verdict: Vec<String>,
    /// What could not be measured or run here, and why.
    pub notes: Vec<String>,
    /// Ctrl-C cut the runs short.
    pub interrupted: bool,
}

/// Called after each run: threads, scheme, repetition index, the run.
pub type OnRun<'a> = dyn FnMut(usize, SchemeKind, usize, &RunResult) + 'a;

/// Runs every (threads, scheme) trial `repeat` times, interleaved round-robin, and builds
/// the report. Thread counts the placement cannot serve are skipped with a note.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    on_run: &mut OnRun<'_>,
) -> Result<RwcacheReport> {
    cfg.validate()?;
    let mut notes = Vec::new();
    let mut plans = Vec::new();
    for &n in &cfg.threads {
        match placement::plan_within(topo, &cfg.placement, n, cfg.within) {
            // `all` may place more threads than asked (every sibling of n cores).
            Ok(p) => plans.push((p.threads.len(), p)),
            Err(e) => notes.push(format!("{n} threads skipped: {e}")),
        }
    }
    if plans.is_empty() {
        return Err(crate::error::NotPossible(format!(
            "no thread count can be placed with `{}`: {}",
            cfg.placement,
            notes.join("; ")
        ))
        .into());
    }
    let mut trials: Vec<(usize, SchemeKind)> = (0..plans.len())
        .flat_map(|p| cfg.schemes.iter().map(move |&k| (p, k)))
        .collect();
    // The `none` reference, first in every round (so it has a run whenever another trial
    // does), on the 1-thread placement.
    match placement::plan_within(topo, &cfg.placement, 1, cfg.within) {
        Ok(p) => {
            plans.push((1, p));
            trials.insert(0, (plans.len() - 1, SchemeKind::Unlocked));
        }
        Err(e) => notes.push(format!(
            "the no-lock reference (1 thread) could not be placed ({e}): CPU in the lock is not measured"
        )),
    }
    let mut runs: Vec<Vec<RunOutcome>> = trials.iter().map(|_| Vec::new()).collect();
    let mut interrupted = false;
    for ti in schedule(trials.len(), cfg.repeat, Order::RoundRobin) {
        if crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        let (pi, kind) = trials[ti];
        let (n, plan) = &plans[pi];
        let seed = cfg.seed.wrapping_add(runs[ti].len() as u64);
        let w = workload(kind, &cfg.table, *n, seed);
        let r = engine.run(plan, &cfg.spec, w.as_ref())?;
        if kind != SchemeKind::Unlocked {
            on_run(*n, kind, runs[ti].len(), &r);
        }
        let stop = r.interrupted;
        runs[ti].push(RunOutcome {
            run: r,
            stats: w.take_stats(),
        });
        if stop {
            interrupted = true;
            break;
        }
    }
    notes.extend(crate::hygiene::steal_note(
        "the runs",
        runs.iter().flatten().map(|r| r.run.steal_share),
    ));
    let reference = trials
        .iter()
        .zip(&runs)
        .find(|((_, k), r)| *k == SchemeKind::Unlocked && !r.is_empty())
        .map(|(&(pi, _), r)| summarise_reference(&plans[pi].1, r));
    let ref_ns = reference
        .as_ref()
        .and_then(|r| r.cpu_ns_per_request)
        .map(|s| s.median);
    let results: Vec<SchemeResult> = trials
        .iter()
        .zip(&runs)
        .filter(|((_, k), r)| *k != SchemeKind::Unlocked && !r.is_empty())
        .map(|(&(pi, kind), r)| summarise(kind, plans[pi].0, &plans[pi].1, r, ref_ns))
        .collect();
    let layout = Layout::new(cfg.table.entries);
    let smt = topo.threads_per_core() > 1;
    if topo.machine.hypervisor {
        notes.push("running under a hypervisor: vCPU preemption and host neighbours can distort lock results".into());
    }
    if results.iter().any(|r| r.oversubscribed) {
        notes.push("some thread counts exceed the CPUs given: threads time-share CPUs, and a preempted lock holder stalls the spinning schemes".into());
    }
    if cfg.schemes.iter().any(|k| !k.spins_visible()) {
        notes.push("rwlock and parking_lot-rw wait inside std / parking_lot: their collisions (failed try_read/try_write) and wait times are measured, their spins and backoffs are not (shown as -)".into());
    }
    if let Some(x) = ref_ns {
        notes.push(format!(
            "CPU in the lock is found by subtraction: LOCK NS/REQ = the scheme's CPU ns per request − {} ns of `none` (the same requests with no lock, 1 thread, run in every round), floored at 0; LOCK %CPU = that ÷ the scheme's CPU ns per request (at more threads it also holds cache-line transfers and a sibling's competition for the core); WAIT %CPU = timed waits after a collision ÷ CPU time",
            fmt_ns(x)
        ));
    }
    let starved: Vec<String> = results
        .iter()
        .filter(|r| !r.oversubscribed && r.cpu_share < 0.9)
        .map(|r| format!("{}@{} {:.0} %", r.scheme, r.threads, r.cpu_share * 100.0))
        .collect();
    if !starved.is_empty() {
        notes.push(format!(
            "pinned threads were on their CPUs for less than 90 % of the run ({}): another process competed for these CPUs, so rates are low and noisy; rerun on a quiet machine",
            starved.join(", ")
        ));
    }
    let before_after = before_after(&results);
    let read_cost = read_cost(&results, &cfg.schemes);
    let best = best(&results);
    let verdict = verdict_lines(&results, &before_after, &read_cost, best.as_ref());
    Ok(RwcacheReport {
        schema_version: SCHEMA_VERSION,
        table: cfg.table.clone(),
        slots: layout.slots(),
        shard_slots: layout.shard_slots(),
        placement: cfg.placement.to_string(),
        scope: plans.iter().find_map(|(_, p)| p.scope.clone()),
        warmup_ns: cfg.spec.warmup.as_nanos() as u64,
        duration_ns: cfg.spec.duration.as_nanos() as u64,
        repeat: cfg.repeat,
        seed: cfg.seed,
        clock: crate::locks::clock_name().into(),
        timer_overhead_ns: crate::rwcache::timer_overhead_ns(),
        hypervisor: topo.machine.hypervisor,
        smt,
        reference,
        results,
        before_after,
        read_cost,
        best,
        verdict,
        notes,
        interrupted,
    })
}

fn fmt_ns(x: f64) -> String {
    if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// Summarises the `none` reference's runs (pure).
pub fn summarise_reference(plan: &crate::placement::Plan, runs: &[RunOutcome]) -> ReferenceResult {
    let cpu: Vec<f64> = runs
        .iter()
        .map(RunOutcome::cpu_ns_per_request)
        .filter(|&x| x > 0.0)
        .collect();
    let shares: Vec<f64> = runs.iter().map(RunOutcome::cpu_share).collect();
    let rps: Vec<f64> = runs.iter().map(|r| r.run.ops_per_sec()).collect();
    ReferenceResult {
        scheme: SchemeKind::Unlocked,
        threads: 1,
        cpus: plan.cpus(),
        runs: runs.len(),
        requests_per_sec: Summary::of(&rps),
        cpu_ns_per_request: Summary::of(&cpu),
        cpu_share: if shares.is_empty() {
            0.0
        } else {
            stats::median(&shares)
        },
        pinning_ok: runs.iter().all(|r| r.run.pinning_ok()),
    }
}

/// Summarises one trial's runs (pure); `reference_cpu_ns_per_request` is the `none`
/// reference's median CPU ns per request, subtracted for the lock's CPU.
pub fn summarise(
    kind: SchemeKind,
    threads: usize,
    plan: &crate::placement::Plan,
    runs: &[RunOutcome],
    reference_cpu_ns_per_request: Option<f64>,
) -> SchemeResult {
    let med = |f: &dyn Fn(&RunOutcome) -> f64| {
        let v: Vec<f64> = runs.iter().map(f).collect();
        if v.is_empty() { 0.0 } else { stats::median(&v) }
    };
    let cost = |r: &RunOutcome| {
        reference_cpu_ns_per_request.and_then(|x| lock_cost(r.cpu_ns_per_request(), x))
    };
    let costs: Vec<(f64, f64, f64)> = runs
        .iter()
        .filter_map(|r| {
            cost(r).map(|c| {
                (
                    c.lock_cpu_share,
                    c.lock_cpu_ns_per_request,
                    ratio(c.lock_cpu_ns_per_request, r.lookups_per_request()),
                )
            })
        })
        .collect();
    let med_of = |f: fn(&(f64, f64, f64)) -> f64| {
        let v: Vec<f64> = costs.iter().map(f).collect();
        (!v.is_empty()).then(|| stats::median(&v))
    };
    let rps: Vec<f64> = runs.iter().map(|r| r.run.ops_per_sec()).collect();
    let mut all = RwThreadStats::default();
    for r in runs {
        all.merge(&r.merged());
    }
    let writes = all.writes.summary();
    SchemeResult {
        scheme: kind,
        threads,
        cpus: plan.cpus(),
        oversubscribed: plan.oversubscribed,
        shared_reader_line: kind.shared_reader_line(),
        runs: runs.len(),
        requests_per_sec: Summary::of(&rps),
        lookups_per_sec: med(&|r| {
            ratio(
                r.merged().reads.counts.acquisitions as f64 * 1e9,
                r.run.measured_ns as f64,
            )
        }),
        cpu_share: med(&RunOutcome::cpu_share),
        lock_cpu_share: Summary::of(&costs.iter().map(|c| c.0).collect::<Vec<_>>()),
        lock_cpu_ns_per_request: med_of(|c| c.1),
        lock_cpu_ns_per_lookup: med_of(|c| c.2),
        wait_cpu_share: med(&RunOutcome::wait_cpu_share),
        cpu_ns_per_request: med(&RunOutcome::cpu_ns_per_request),
        write_lock_ns_per_write: ratio(
            all.write_lock_ns as f64,
            all.writes.counts.acquisitions as f64,
        ),
        reads: all.reads.summary(),
        // Every scheme times its waits (the library lock in `spin` runs in `Waits` mode).
        writer_wait_p99_ns: writes.wait_p99_ns.unwrap_or(0),
        writer_wait_max_ns: writes.wait_max_ns.unwrap_or(0),
        writes,
        read_retries: all.read_retries,
        spins_visible: kind.spins_visible(),
        voluntary_ctx_switches: runs
            .iter()
            .flat_map(|r| &r.run.threads)
            .map(|t| t.voluntary_ctx_switches)
            .sum(),
        involuntary_ctx_switches: runs
            .iter()
            .flat_map(|r| &r.run.threads)
            .map(|t| t.involuntary_ctx_switches)
            .sum(),
        pinning_ok: runs.iter().all(|r| r.run.pinning_ok()),
        run_requests_per_sec: rps,
    }
}

fn median_rps(r: &SchemeResult) -> f64 {
    r.requests_per_sec.map(|s| s.median).unwrap_or(0.0)
}

fn row(r: &SchemeResult) -> BeforeAfterRow {
    BeforeAfterRow {
        scheme: r.scheme,
        cpu_pct: r.cpu_share * 100.0,
        lock_cpu_pct: r.lock_cpu_share.map(|s| s.median * 100.0),
        requests_per_sec: median_rps(r),
        cpu_ns_per_request: r.cpu_ns_per_request,
    }
}

/// `spin` → `rwspin` at every thread count that ran both (pure).
pub fn before_after(results: &[SchemeResult]) -> Vec<BeforeAfter> {
    let mut out = Vec::new();
    for b in results.iter().filter(|r| r.scheme == SchemeKind::Spin) {
        let Some(a) = results
            .iter()
            .find(|r| r.scheme == SchemeKind::RwSpin && r.threads == b.threads)
        else {
            continue;
        };
        let (before, after) = (row(b), row(a));
        let ci = stats::bootstrap_ratio_of_medians(
            &a.run_requests_per_sec,
            &b.run_requests_per_sec,
            0.95,
            2000,
            3,
        );
        out.push(BeforeAfter {
            threads: b.threads,
            requests_change_pct: (ratio(after.requests_per_sec, before.requests_per_sec) - 1.0)
                * 100.0,
            lock_cpu_change_pts: after
                .lock_cpu_pct
                .zip(before.lock_cpu_pct)
                .map(|(a, b)| a - b),
            cpu_per_request_change_pct: (ratio(
                after.cpu_ns_per_request,
                before.cpu_ns_per_request,
            ) - 1.0)
                * 100.0,
            verdict: ci
                .filter(|_| a.runs > 1 && b.runs > 1)
                .map(|c| stats::verdict(&c, NOISE, Better::Higher)),
            requests_ratio: ci.filter(|_| a.runs > 1 && b.runs > 1),
            before,
            after,
        });
    }
    out
}

/// Read-side cost of each scheme across thread counts (pure).
pub fn read_cost(results: &[SchemeResult], schemes: &[SchemeKind]) -> Vec<ReadCost> {
    schemes
        .iter()
        .filter_map(|&k| {
            let mut rs: Vec<&SchemeResult> = results.iter().filter(|r| r.scheme == k).collect();
            if rs.is_empty() {
                return None;
            }
            rs.sort_by_key(|r| r.threads);
            let one = rs.iter().find(|r| r.threads == 1).map(|r| median_rps(r));
            let most = rs.last().expect("non-empty");
            Some(ReadCost {
                scheme: k,
                shared_reader_line: k.shared_reader_line(),
                by_threads: rs
                    .iter()
                    .map(|r| ReadCostAt {
                        threads: r.threads,
                        lock_cpu_ns_per_lookup: r.lock_cpu_ns_per_lookup,
                        requests_per_sec_per_thread: median_rps(r) / r.threads as f64,
                    })
                    .collect(),
                scaling: one
                    .filter(|&o| o > 0.0 && most.threads > 1)
                    .map(|o| median_rps(most) / o),
            })
        })
        .collect()
}

/// The best scheme per thread count and overall (pure). None without results.
pub fn best(results: &[SchemeResult]) -> Option<Best> {
    let mut threads: Vec<usize> = results.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    let mut per_threads = Vec::new();
    for &n in &threads {
        let mut at: Vec<&SchemeResult> = results.iter().filter(|r| r.threads == n).collect();
        at.sort_by(|a, b| median_rps(b).total_cmp(&median_rps(a)));
        let first = at[0];
        let second = at.get(1);
        let ci = second.and_then(|s| {
            stats::bootstrap_ratio_of_medians(
                &first.run_requests_per_sec,
                &s.run_requests_per_sec,
                0.95,
                2000,
                5,
            )
            .filter(|_| first.runs > 1 && s.runs > 1)
        });
        per_threads.push(BestAt {
            threads: n,
            scheme: first.scheme,
            requests_per_sec: median_rps(first),
            runner_up: second.map(|s| s.scheme),
            over_runner_up: ci,
            verdict: ci.map(|c| stats::verdict(&c, NOISE, Better::Higher)),
        });
    }
    let mut schemes: Vec<SchemeKind> = results.iter().map(|r| r.scheme).collect();
    schemes.sort();
    schemes.dedup();
    let score = |k: SchemeKind| -> f64 {
        let logs: Vec<f64> = per_threads
            .iter()
            .map(|b| {
                let mine = results
                    .iter()
                    .find(|r| r.scheme == k && r.threads == b.threads)
                    .map(median_rps)
                    .unwrap_or(0.0);
                ratio(mine, b.requests_per_sec).max(1e-12).ln()
            })
            .collect();
        stats::mean(&logs).exp()
    };
    let (overall, overall_score) = schemes
        .iter()
        .map(|&k| (k, score(k)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Best {
        overall,
        overall_score,
        per_threads,
    })
}

fn verdict_lines(
    results: &[SchemeResult],
    ba: &[BeforeAfter],
    cost: &[ReadCost],
    best: Option<&Best>,
) -> Vec<String> {
    let mut out = Vec::new();
    for b in ba {
        out.push(format!(
            "spin → rwspin at {} thread{}: requests/s {:+.1} %{}, {}, CPU per request {:+.1} % (seed 003: +12.5 % requests/s, 31.8 % of CPU in the spinlock before)",
            b.threads,
            if b.threads == 1 { "" } else { "s" },
            b.requests_change_pct,
            b.requests_ratio
                .map(|c| format!(" (95% CI {:+.1}…{:+.1} %)", (c.low - 1.0) * 100.0, (c.high - 1.0) * 100.0))
                .unwrap_or_default(),
            match (b.before.lock_cpu_pct, b.after.lock_cpu_pct, b.lock_cpu_change_pts) {
                (Some(x), Some(y), Some(d)) =>
                    format!("CPU in the lock {x:.1} % → {y:.1} % ({d:+.1} pts)"),
                _ => "CPU in the lock not measured".to_string(),
            },
            b.cpu_per_request_change_pct
        ));
    }
    // Shared reader line: lock CPU per lookup at the most threads, shared vs private.
    let most = results.iter().map(|r| r.threads).max().unwrap_or(0);
    if most > 1 {
        let at = |shared: bool| -> Vec<String> {
            cost.iter()
                .filter(|c| c.shared_reader_line == shared && c.scheme != SchemeKind::Spin)
                .filter_map(|c| {
                    let hi = c.by_threads.iter().find(|x| x.threads == most)?;
                    let lo = c
                        .by_threads
                        .iter()
                        .find(|x| x.threads == 1)
                        .and_then(|l| l.lock_cpu_ns_per_lookup);
                    Some(format!(
                        "{} {:.1} ns{}",
                        c.scheme,
                        hi.lock_cpu_ns_per_lookup?,
                        lo.map(|l| format!(" (1 thread: {l:.1})"))
                            .unwrap_or_default()
                    ))
                })
                .collect()
        };
        let (s, p) = (at(true), at(false));
        if !s.is_empty() && !p.is_empty() {
            out.push(format!(
                "lock CPU per lookup (by subtraction) at {most} threads — a shared reader line: {}; private or no reader writes: {}",
                s.join(", "),
                p.join(", ")
            ));
        }
        let scal: Vec<String> = cost
            .iter()
            .filter_map(|c| c.scaling.map(|x| format!("{} {:.2}×", c.scheme, x)))
            .collect();
        if !scal.is_empty() {
            out.push(format!(
                "requests/s at {most} threads ÷ 1 thread: {}",
                scal.join(", ")
            ));
        }
    }
    if let Some(b) = best {
        out.push(format!(
            "best overall: {} (geometric mean {:.0} % of the best at each thread count)",
            b.overall,
            b.overall_score * 100.0
        ));
        for p in &b.per_threads {
            out.push(format!(
                "  at {} thread{}: {} {} requests/s{}",
                p.threads,
                if p.threads == 1 { "" } else { "s" },
                p.scheme,
                crate::render::si(p.requests_per_sec),
                match (p.runner_up, p.over_runner_up, p.verdict) {
                    (Some(r), Some(c), Some(v)) => format!(
                        ", {:.2}× {r} (95% CI {:.2}–{:.2}: {})",
                        c.estimate,
                        c.low,
                        c.high,
                        if v == Verdict::Faster {
                            "ahead"
                        } else {
                            "within noise"
                        }
                    ),
                    (Some(r), _, _) => format!(", ahead of {r} (one run: no CI)"),
                    _ => String::new(),
                }
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_table_values_are_named() {
        let mut t = TableSpec {
            entries: 0,
            ..TableSpec::default()
        };
        let e = t.validate().unwrap_err().to_string();
        assert!(e.contains("--entries") && e.contains("got 0"), "{e}");
        t.entries = 10;
        t.write_ratio = 2.0;
        let e = t.validate().unwrap_err().to_string();
        assert!(e.contains("--write-ratio") && e.contains("got 2"), "{e}");
        t.write_ratio = f64::NAN;
        assert!(t.validate().is_err());
        t.write_ratio = 1.0;
        assert!(t.validate().is_ok());
    }
}
