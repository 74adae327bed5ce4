//! The worker side of `neighbors` ([`Worker`]) and the built-in one, [`HotPage`]; plus the
//! engine workload that runs workers and thread burners together.

use crate::burn::Burners;
use crate::engine::{Phase, ThreadCtx, Workload};
use crate::locks::{LockKind, LockOptions, LockThread, StatsMode, ThreadStats};
use crate::placement::Plan;
use anyhow::Result;
use hdrhistogram::Histogram;
use std::sync::Mutex;

/// A hold (or a wait) longer than this counts as preempted: far beyond any critical
/// section here, and about one scheduler slice.
pub const PREEMPTED_NS: u64 = 1_000_000;

/// The worker side of `neighbors`: an engine workload plus what the diagnosis needs.
pub trait Worker: Workload {
    /// Ends the step (undoing anything the worker changed, e.g. pinned server backends)
    /// and hands back what it saw.
    fn finish(self: Box<Self>) -> Result<WorkerOutcome>;
}

/// What a worker saw in one step.
pub struct WorkerOutcome {
    /// Latencies of the operations that started and ended inside the measured window,
    /// ns, merged over threads: none can exceed the window.
    pub latency_ns: Histogram<u64>,
    /// Lock holds longer than [`PREEMPTED_NS`] and waits longer than it; None when the
    /// worker cannot see its lock (a database's internal locks).
    pub preemptions: Option<(u64, u64)>,
}

/// Builds a fresh worker for a step from the workers' part of the step's plan.
pub type MakeWorker<'a> = dyn Fn(&Plan) -> Result<Box<dyn Worker + 'a>> + 'a;

/// Appends 64-byte rows to one shared 8 KiB page under a lock of the lock library: the
/// serialized path of inserts that all land on a B-tree's last page (an ever-increasing
/// key), where every insert latches the same page.
pub struct HotPage {
    kind: LockKind,
    page: crate::locks::Protected<Page>,
    workers: usize,
    latency: Mutex<Histogram<u64>>,
    stats: Mutex<Vec<ThreadStats>>,
}

/// The shared page: a write offset and the bytes.
pub struct Page {
    offset: usize,
    bytes: Box<[u8; 8192]>,
    rows: u64,
}

const ROW: usize = 64;

impl HotPage {
    pub fn new(kind: LockKind, workers: usize) -> Self {
        // Full stats: hold times are the lock-holder-preemption evidence.
        let opts = LockOptions::with_stats(StatsMode::Full);
        HotPage {
            kind,
            page: crate::locks::Protected::new(
                kind,
                &opts,
                Page {
                    offset: 0,
                    bytes: Box::new([0; 8192]),
                    rows: 0,
                },
            ),
            workers,
            latency: Mutex::new(crate::locks::new_histogram()),
            stats: Mutex::new(Vec::new()),
        }
    }
}

impl Workload for HotPage {
    fn name(&self) -> String {
        format!("hot-page/{}", self.kind)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        let mut lt = LockThread::new(ctx.thread, self.workers);
        let mut hist = crate::locks::new_histogram();
        let mut row = [0u8; ROW];
        row[..8].copy_from_slice(&(ctx.thread as u64).to_le_bytes());
        let mut measuring = false;
        while !ctx.should_stop() {
            if !measuring && ctx.phase() == Phase::Measure {
                lt.reset();
                hist.reset();
                measuring = true;
            }
            let t0 = crate::locks::now_ns();
            self.page.with(&mut lt, |p| {
                // The page fills and a new one starts, as a B-tree's last page splits.
                if p.offset + ROW > p.bytes.len() {
                    p.offset = 0;
                }
                p.bytes[p.offset..p.offset + ROW].copy_from_slice(&row);
                p.offset += ROW;
                p.rows += 1;
            });
            let t1 = crate::locks::now_ns();
            // Only operations that ended inside the measured window count: one that ends
            // after the stop may have waited behind every other waiter's exit (a ticket
            // waiter cannot give up), so its latency says how long stopping took, not how
            // the workload ran (33.8 s in a 2 s window with 256 workers on 2 CPUs).
            if ctx.phase() == Phase::Measure {
                hist.saturating_record(t1.saturating_sub(t0).max(1));
            }
            ctx.add_progress(1);
        }
        if measuring {
            self.latency.lock().expect("not poisoned").add(&hist).ok();
            self.stats.lock().expect("not poisoned").push(lt.stats());
        }
    }
}

impl Worker for HotPage {
    fn finish(self: Box<Self>) -> Result<WorkerOutcome> {
        let s = self.stats.into_inner().expect("not poisoned");
        let holds: u64 = s.iter().map(|t| t.counts.long_holds).sum();
        let waits: u64 = s
            .iter()
            .map(|t| t.wait_ns_hist.count_between(PREEMPTED_NS, u64::MAX))
            .sum();
        Ok(WorkerOutcome {
            latency_ns: self.latency.into_inner().expect("not poisoned"),
            preemptions: Some((holds, waits)),
        })
    }
}

/// Workers and thread-mode burners in one engine run.
pub(super) struct Combined<'a> {
    pub worker: &'a dyn Worker,
    pub workers: usize,
    pub burners: Option<&'a Burners>,
}

impl Workload for Combined<'_> {
    fn name(&self) -> String {
        self.worker.name()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        if ctx.thread < self.workers {
            self.worker.run_thread(ctx)
        } else if let Some(b) = self.burners {
            b.run_burner(ctx.thread - self.workers, ctx)
        }
    }
    fn requested_nice(&self) -> Option<i32> {
        self.burners.and_then(|b| b.requested_nice())
    }
}
