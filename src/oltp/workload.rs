//! The per-thread insert loop as an [`crate::engine::Workload`]: each client thread owns one
//! [`Session`] (opened, and its backend pinned, before the engine's barrier), commits
//! transactions until the engine says stop or its row quota is done, and records each
//! commit's latency in its own histogram.
//!
//! Reuse (e.g. `neighbors --workload oltp`): build a [`Db`], `create_table`, then
//! [`InsertWorkload::new`] with the plan, hand it to `engine::run`, and call
//! [`InsertWorkload::finish`] for per-thread rows, elapsed times and latencies.

use super::db::{BackendPinning, Db, Session};
use super::pin::BackendPins;
use super::schema::TableSpec;
use crate::engine::{Phase, ThreadCtx, Workload};
use crate::placement::Plan;
use anyhow::{Context, Result, anyhow};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// When a client thread stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "rows")]
pub enum StopRule {
    /// When the engine's duration is over.
    Duration,
    /// After this many rows (as the `seed-001` test of the blog post "SQL Server,
    /// Hyper-Threading and OLTP Workloads" ran: each session a fixed count), or
    /// earlier if the engine stops it.
    RowsPerThread(u64),
}

/// Highest commit latency the histograms track: 10 minutes, in ns.
const MAX_LATENCY_NS: u64 = 600_000_000_000;

/// One thread's state, touched only by that thread during the run.
struct Slot {
    session: Session,
    hist: Histogram<u64>,
    /// Rows committed during the measurement.
    rows: u64,
    /// Rows committed during the warm-up (in the table, not in the rates).
    warmup_rows: u64,
    txns: u64,
    /// From the start of the measurement to this thread's last commit, ns.
    elapsed_ns: u64,
    /// Whether the thread did all its rows (always true for [`StopRule::Duration`]).
    completed: bool,
    error: Option<anyhow::Error>,
}

/// The insert workload. Each slot's mutex is taken once per phase by its own thread, so it
/// is never contended.
pub struct InsertWorkload {
    slots: Vec<Mutex<Slot>>,
    rule: StopRule,
    name: String,
    failed: AtomicBool,
    pins: Mutex<BackendPins>,
    pinning: BackendPinning,
}

/// What one client thread did.
#[derive(Debug, Clone)]
pub struct ThreadOutcome {
    /// Plan thread index.
    pub thread: usize,
    /// PostgreSQL backend pid (None for SQLite).
    pub backend_pid: Option<i32>,
    /// Rows committed during the measurement.
    pub rows: u64,
    /// Rows committed during the warm-up.
    pub warmup_rows: u64,
    /// Transactions committed during the measurement.
    pub txns: u64,
    /// From the start of the measurement to the thread's last commit, ns.
    pub elapsed_ns: u64,
    /// Did all its rows (rows-per-thread), or ran to the stop (duration).
    pub completed: bool,
    /// Commit latencies, ns.
    pub latency_ns: Histogram<u64>,
}

/// What the whole workload did.
#[derive(Debug, Clone)]
pub struct InsertOutcome {
    /// Per thread, in plan order.
    pub threads: Vec<ThreadOutcome>,
    /// All threads' commit latencies, ns.
    pub latency_ns: Histogram<u64>,
    /// How backends were pinned.
    pub pinning: BackendPinning,
}

impl InsertOutcome {
    /// Rows committed, warm-up included: what the table must have gained.
    pub fn rows_committed(&self) -> u64 {
        self.threads.iter().map(|t| t.rows + t.warmup_rows).sum()
    }

    /// Rows committed during the measurement.
    pub fn rows_measured(&self) -> u64 {
        self.threads.iter().map(|t| t.rows).sum()
    }
}

impl InsertWorkload {
    /// Opens one session per plan thread and, where the server is on this host, pins each
    /// backend to its thread's CPUs (restored by [`Self::finish`] or on drop).
    pub fn new(db: &Db, table: &TableSpec, plan: &Plan, rule: StopRule) -> Result<Self> {
        let pinning = db.backend_pinning();
        let mut pins = BackendPins::new();
        let mut slots = Vec::with_capacity(plan.threads.len());
        for tp in &plan.threads {
            crate::interrupt::check()?;
            let session = db
                .connect(table, tp.thread)
                .with_context(|| format!("opening client thread {}'s connection", tp.thread))?;
            if pinning == BackendPinning::Local
                && let Some(pid) = session.backend_pid()
            {
                pins.pin(pid, &tp.cpus)?;
            }
            slots.push(Mutex::new(Slot {
                session,
                hist: Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3)
                    .expect("static histogram bounds are valid"),
                rows: 0,
                warmup_rows: 0,
                txns: 0,
                elapsed_ns: 0,
                completed: false,
                error: None,
            }));
        }
        Ok(Self {
            slots,
            rule,
            name: format!(
                "oltp {} {} key, {} row(s)/txn",
                table.schema, table.key, table.rows_per_txn
            ),
            failed: AtomicBool::new(false),
            pins: Mutex::new(pins),
            pinning,
        })
    }

    /// Backends pinned right now.
    pub fn pinned_backends(&self) -> usize {
        self.pins.lock().len()
    }

    /// Restores backend affinities, closes the sessions and hands back what each thread
    /// did; the first thread error, if any, as the error.
    pub fn finish(self) -> Result<InsertOutcome> {
        let restored = self.pins.lock().restore();
        let mut all =
            Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("static histogram bounds");
        let mut threads = Vec::with_capacity(self.slots.len());
        let mut first_err = None;
        for (i, slot) in self.slots.into_iter().enumerate() {
            let s = slot.into_inner();
            if let Some(e) = s.error
                && first_err.is_none()
            {
                first_err = Some(e);
            }
            all.add(&s.hist).expect("same bounds");
            threads.push(ThreadOutcome {
                thread: i,
                backend_pid: s.session.backend_pid(),
                rows: s.rows,
                warmup_rows: s.warmup_rows,
                txns: s.txns,
                elapsed_ns: s.elapsed_ns,
                completed: s.completed,
                latency_ns: s.hist,
            });
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        restored?;
        Ok(InsertOutcome {
            threads,
            latency_ns: all,
            pinning: self.pinning,
        })
    }
}

impl Workload for InsertWorkload {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        let Some(slot) = self.slots.get(ctx.thread) else {
            return;
        };
        let mut slot = slot.lock();
        let slot = &mut *slot;
        if slot.error.is_some() {
            return;
        }
        let measuring = ctx.phase() == Phase::Measure;
        let quota = match (self.rule, measuring) {
            (StopRule::RowsPerThread(r), true) => r,
            _ => u64::MAX,
        };
        let start = Instant::now();
        let mut last = start;
        let mut rows = 0u64;
        let keep_going = |rows: u64| {
            rows < quota
                && !ctx.should_stop()
                && !self.failed.load(Ordering::Relaxed)
                && !crate::interrupt::requested()
        };
        while keep_going(rows) {
            let t0 = Instant::now();
            match slot.session.insert_txn() {
                Ok(n) => {
                    let now = Instant::now();
                    rows += n;
                    ctx.add_progress(n);
                    // A commit after the window closed lies outside the measurement:
                    // the window's transaction rate and latencies leave it out.
                    if measuring && ctx.phase() == Phase::Measure {
                        let ns = u64::try_from((now - t0).as_nanos()).unwrap_or(u64::MAX);
                        slot.hist.saturating_record(ns.max(1));
                        slot.txns += 1;
                    }
                    last = now;
                }
                Err(e) => {
                    // Said at once: a duration run only ends when its time is up.
                    if !self.failed.swap(true, Ordering::Relaxed) {
                        crate::say!(
                            "oltp: client thread {} failed, the others stop: {e:#}",
                            ctx.thread
                        );
                    }
                    slot.error = Some(e);
                    break;
                }
            }
        }
        if measuring {
            slot.rows += rows;
            slot.elapsed_ns = u64::try_from((last - start).as_nanos()).unwrap_or(u64::MAX);
            slot.completed = match self.rule {
                StopRule::Duration => slot.error.is_none(),
                StopRule::RowsPerThread(r) => rows >= r,
            };
        } else {
            slot.warmup_rows += rows;
        }
    }
}

/// Error for a thread whose quota was not reached (the run was cut short).
pub fn incomplete(outcome: &InsertOutcome) -> Option<anyhow::Error> {
    let cut: Vec<usize> = outcome
        .threads
        .iter()
        .filter(|t| !t.completed)
        .map(|t| t.thread)
        .collect();
    if cut.is_empty() {
        None
    } else {
        Some(anyhow!(
            "client threads {cut:?} did not finish their rows before the run ended"
        ))
    }
}
