//! The run engine: where measurement threads are created, pinned and timed (burner
//! processes and database servers are `burn`'s and `oltp`'s). Everything above it
//! (experiments, stats, reports) sees only [`RunResult`](crate::engine::RunResult)s and
//! what the [`Engine`](crate::engine::Engine) trait returns.
//!
//! A run: spawn one thread per [`Plan`](crate::placement::Plan) entry → each pins itself
//! and checks `sched_getcpu` → all meet at a barrier → warm-up (discarded) → measurement
//! intervals until the duration → stop flag → per-thread CPU time, context switches and
//! run-queue delay.
//!
//! INTERFACE CONTRACT (shared by all experiments; keep stable):
//! - A [`Workload`](crate::engine::Workload) is small: a name and `run_thread(&ThreadCtx)`,
//!   which loops until `ctx.should_stop()` and reports operations with
//!   `ctx.add_progress(n)`. Per-thread state lives in locals of `run_thread`;
//!   workload-specific results (lock stats, latency histograms) are handed back through
//!   the workload's own interior-mutable fields.
//! - `ctx.thread` is the index into the plan; `ctx.phase()` tells warm-up from measurement.
//! - `run_thread` is called **once per phase** on the same pinned OS thread: once for the
//!   warm-up (only when `RunSpec::warmup` is non-zero, with `phase() == WarmUp`) and once
//!   for the measurement (`phase() == Measure`). Between the two calls every thread meets
//!   the others at a barrier and reads its own clocks, as divan puts barriers on both
//!   sides of the timed section, so CPU time and context switches cover the measurement
//!   only. Workloads that keep their own statistics record them only while
//!   `phase() == Measure` (or reset them on the first measurement call).
//! - Every loop a thread can block or spin in (waiting for a lock, for a partner) must
//!   also give up once `should_stop()` is true, or the run cannot end.
//!
//! Engines: [`RealEngine`](crate::engine::RealEngine) (and the free function
//! [`run`](crate::engine::run())) runs the workload for real;
//! [`FakeEngine`](crate::engine::FakeEngine) makes up plausible, deterministic results
//! from a seed without running anything, for tests of the statistics, report and CLI
//! layers. [`interleave`](crate::engine::interleave()) and
//! [`repeat`](crate::engine::repeat()) run repetitions, alternating compared
//! configurations (A B A B …).

pub mod disturbance;
mod fake;
mod pingpong;
mod real;
mod repeat;
mod result;
pub mod threadstats;

pub use fake::FakeEngine;
pub use pingpong::{PingPongSpec, SLOWEST_HANDOFF_NS, pair_time_limit, ping_pong};
pub use real::{RealEngine, current_nice, nice_offset_for, run, run_observed};
pub use repeat::{Order, Trial, counterbalanced, interleave, repeat, schedule};
pub use result::{IntervalSample, PinningViolation, RunResult, RunSpec, ThreadResult};

use crate::placement::Plan;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};

/// Runs of this process whose threads were told to stop and have not all returned.
static STOPPING: AtomicUsize = AtomicUsize::new(0);

/// True while a run of this process is ending its warm-up or its measurement. A wait loop
/// that cannot give up (a FIFO lock's waiter must take its turn, or the lock breaks)
/// should then give its CPU away ([`std::thread::yield_now`]) rather than spin out its
/// slice: with hundreds of waiters per CPU, the one whose turn it is otherwise waits a
/// scheduler round per handoff, and `neighbors --workers 256` took minutes to stop.
#[inline]
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Relaxed) > 0
}

/// What phase the run is in, as seen by workload threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    WarmUp,
    Measure,
    Stopping,
}

impl Phase {
    /// The value stored in [`ThreadCtx::phase`].
    pub fn as_u8(self) -> u8 {
        match self {
            Phase::WarmUp => 0,
            Phase::Measure => 1,
            Phase::Stopping => 2,
        }
    }
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
    /// How much the engine raised this thread's nice value because the run is
    /// oversubscribed (0 otherwise). A workload that sets its own nice value adds it, so
    /// the threads' priorities relative to each other stay as asked.
    pub nice_offset: i32,
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
    /// The highest nice value any of its threads sets on itself, if it sets any: the
    /// engine's demotion of an oversubscribed run stays below 19 by that much.
    fn requested_nice(&self) -> Option<i32> {
        None
    }
}

/// Something that turns a plan, a spec and a workload into a [`RunResult`]: the real
/// engine, or the fake one for tests. Experiments take `&dyn Engine` so their report
/// layers can be tested without the machine.
pub trait Engine: Sync {
    /// Runs once, calling `on_interval` in the calling thread at each measurement
    /// interval boundary (for live per-interval output).
    fn run_observed(
        &self,
        plan: &Plan,
        spec: &RunSpec,
        workload: &dyn Workload,
        on_interval: &mut dyn FnMut(&IntervalSample),
    ) -> anyhow::Result<RunResult>;

    /// Runs once.
    fn run(
        &self,
        plan: &Plan,
        spec: &RunSpec,
        workload: &dyn Workload,
    ) -> anyhow::Result<RunResult> {
        self.run_observed(plan, spec, workload, &mut |_| {})
    }

    /// One-way cache-line latency between CPUs `a` and `b` right now, ns (a short c2c
    /// ping-pong, ≈ 10 ms), for the handoff ceiling of the run about to start: under a
    /// hypervisor it moves between runs as the host moves vCPUs. None where the engine
    /// cannot measure (the fake engine, one CPU).
    fn cache_line_latency_ns(&self, a: u32, b: u32) -> Option<f64> {
        let _ = (a, b);
        None
    }

    /// c2c: `spec.samples` one-way cache-line latencies between CPUs `a` and `b`, ns;
    /// fewer when Ctrl-C cut the measurement short.
    fn ping_pong(&self, a: u32, b: u32, spec: &PingPongSpec) -> anyhow::Result<Vec<f64>>;

    /// Warnings about other work already running on `cpus` (or steal time) before an
    /// experiment measures them; nothing where the engine does not measure.
    fn hygiene(&self, cpus: &crate::cpuset::CpuSet) -> Vec<String> {
        let _ = cpus;
        Vec::new()
    }

    /// Nanoseconds on a monotonic clock, for phase wall times (a made-up clock in the
    /// fake engine, so reports of fake runs are reproducible).
    fn now_ns(&self) -> u64;

    /// True when the engine makes its results up instead of measuring.
    fn synthetic(&self) -> bool {
        false
    }
}
