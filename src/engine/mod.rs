//! The run engine: the only module that creates measurement threads, pins them and reads
//! clocks. Everything above it (experiments, stats, reports) sees only [`RunResult`]s.
//!
//! A run: spawn one thread per [`Plan`] entry → each pins itself and checks `sched_getcpu`
//! → all meet at a barrier → warm-up (discarded) → measurement intervals until the
//! duration → stop flag → per-thread CPU time, context switches and run-queue delay.
//!
//! INTERFACE CONTRACT (shared by all experiments; keep stable):
//! - A [`Workload`] is small: a name and `run_thread(&ThreadCtx)`, which loops until
//!   `ctx.should_stop()` and reports operations with `ctx.add_progress(n)`. Per-thread state
//!   lives in locals of `run_thread`; workload-specific results (lock stats, latency
//!   histograms) are handed back through the workload's own interior-mutable fields.
//! - `ctx.thread` is the index into the plan; `ctx.phase()` tells warm-up from measurement.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

/// What phase the run is in, as seen by workload threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    WarmUp,
    Measure,
    Stopping,
}

/// Shared per-run state handed to each workload thread.
pub struct ThreadCtx<'a> {
    /// Index of this thread in the plan.
    pub thread: usize,
    /// Set when the thread must return.
    pub stop: &'a AtomicBool,
    /// This thread's operation counter, on its own cache line(s).
    pub progress: &'a CachePadded<AtomicU64>,
    /// 0 = warm-up, 1 = measure, 2 = stopping.
    pub phase: &'a AtomicU8,
}

impl ThreadCtx<'_> {
    /// True once the thread should return. Cheap (one relaxed load): poll it in hot loops.
    #[inline]
    pub fn should_stop(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Adds `n` completed operations. A relaxed add on a line only this thread writes.
    #[inline]
    pub fn add_progress(&self, n: u64) {
        self.progress.fetch_add(n, Ordering::Relaxed);
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::WarmUp,
            1 => Phase::Measure,
            _ => Phase::Stopping,
        }
    }
}

/// A workload the engine can run: one loop per thread.
pub trait Workload: Sync {
    /// Short name for reports.
    fn name(&self) -> String;
    /// Runs thread `ctx.thread` until `ctx.should_stop()`, counting operations.
    fn run_thread(&self, ctx: &ThreadCtx<'_>);
}
