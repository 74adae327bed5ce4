//! The real engine: pinned OS threads, a coordinator that only sleeps and samples.
//!
//! The calling thread is the coordinator. It never spins: it sleeps to absolute interval
//! boundaries (in slices of at most [`POLL`] so Ctrl-C is seen quickly) and needs little
//! CPU per boundary: one load per thread, and `/proc` reads for at most
//! [`LAST_CPU_SAMPLES`] threads.
//!
//! **Oversubscribed runs.** Little CPU is not enough once hundreds of threads spin per
//! CPU. The fair scheduler (CFS, EEVDF since Linux 6.6) gives each runnable thread of equal
//! weight the same share, so the coordinator gets 1/(N+1) of a CPU: any burst of its own
//! (waking N threads with one `FUTEX_WAKE` takes it about 1.5 µs per thread) leaves it
//! behind the others in virtual time, and it waits until they catch up, about N times the
//! burst (the lag rules of `Documentation/scheduler/sched-eevdf.rst`). Measured here (2
//! vCPUs, 1,024 `int` burners, `burn -d 2s --warmup 0`): the first interval boundary was
//! 1.7–8 s late, 13 ms of `/proc` reads took 40–65 s, and the 2 s run took 16–139 s.
//! Raising the coordinator's priority needs privileges; lowering one's own never does
//! (setpriority(2), sched(7)). So when the threads per CPU would outweigh the coordinator
//! more than [`MAX_WEIGHT_RATIO`] times, every engine thread raises its nice value by the
//! same [`RunResult::nice_offset`] before the run starts: a thread's share depends only
//! on nice *differences* (each step ≈ 1.25× weight, the kernel's `sched_prio_to_weight`),
//! so the threads share the CPUs among themselves exactly as before, while the coordinator
//! at its own nice preempts them at once. Workloads that set their own nice
//! ([`ThreadCtx::nice_offset`]) add the same offset.
//!
//! Weight alone does not cover one case: when thousands of threads that are owed time
//! become runnable at once, a task already on the run queue waits until they are paid.
//! So the coordinator is asleep whenever that happens: a helper spawns the workers and
//! opens the first gate ([`start`]), and in crowded runs the workers wait between
//! warm-up and measurement yielding rather than blocked ([`Gate::arrive`]).

use super::threadstats::{Snapshot, last_cpu, sleep_until_or};
use super::{
    Engine, IntervalSample, Phase, PinningViolation, RunResult, RunSpec, ThreadCtx, ThreadResult,
    Workload,
};
use crate::affinity;
use crate::cpuset::CpuSet;
use crate::placement::Plan;
use anyhow::{Context, Result, anyhow};
use crossbeam_utils::CachePadded;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Longest the coordinator sleeps before looking at the Ctrl-C flag again.
const POLL: Duration = Duration::from_millis(20);
/// Threads whose last CPU the coordinator reads from `/proc` at each interval boundary
/// (rotating through all of them): each read costs it about 10 µs of CPU.
pub const LAST_CPU_SAMPLES: usize = 64;
/// Most total scheduler weight of engine threads on one CPU, as a multiple of the
/// coordinator's own, before the engine threads are demoted: the coordinator then gets
/// at least 1/(1 + this) of a CPU when it wants one.
pub const MAX_WEIGHT_RATIO: f64 = 8.0;
/// Weights of nice 0..=19, the upper half of the kernel's `sched_prio_to_weight`
/// (kernel/sched/core.c): each step is about 1.25×.
const NICE_WEIGHT: [f64; 20] = [
    1024.0, 820.0, 655.0, 526.0, 423.0, 335.0, 272.0, 215.0, 172.0, 137.0, 110.0, 87.0, 70.0, 56.0,
    45.0, 36.0, 29.0, 23.0, 18.0, 15.0,
];
/// How long after the stop flag the coordinator waits quietly for the workers.
const STOP_WARN_AFTER: Duration = Duration::from_secs(5);

/// Runs workloads for real. See [`run_observed`].
#[derive(Debug, Default, Clone, Copy)]
pub struct RealEngine;

impl Engine for RealEngine {
    fn run_observed(
        &self,
        plan: &Plan,
        spec: &RunSpec,
        workload: &dyn Workload,
        on_interval: &mut dyn FnMut(&IntervalSample),
    ) -> Result<RunResult> {
        run_observed(plan, spec, workload, on_interval)
    }

    fn cache_line_latency_ns(&self, a: u32, b: u32) -> Option<f64> {
        if a == b {
            return None;
        }
        super::ping_pong(a, b, &super::PingPongSpec::CEILING)
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| crate::stats::median(&v))
    }

    fn ping_pong(&self, a: u32, b: u32, spec: &super::PingPongSpec) -> Result<Vec<f64>> {
        super::ping_pong(a, b, spec)
    }

    fn hygiene(&self, cpus: &crate::cpuset::CpuSet) -> Vec<String> {
        crate::hygiene::check(cpus)
    }

    fn now_ns(&self) -> u64 {
        // One origin per process: phase wall times are differences of these.
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let origin = *ORIGIN.get_or_init(std::time::Instant::now);
        u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Runs `workload` with one pinned thread per plan entry. See [`run_observed`].
pub fn run(plan: &Plan, spec: &RunSpec, workload: &dyn Workload) -> Result<RunResult> {
    run_observed(plan, spec, workload, &mut |_| {})
}

/// Runs `workload` with one thread per plan entry, calling `on_interval` (in the calling
/// thread) at every measurement interval boundary.
///
/// Errors when a thread cannot be spawned or pinned, or a workload thread panics. A
/// thread seen on a CPU outside its set is not an error but is listed in
/// [`RunResult::pinning_violations`]. Ctrl-C ([`crate::interrupt::requested`]) ends the run
/// at once with [`RunResult::interrupted`] set and the intervals so far kept.
pub fn run_observed(
    plan: &Plan,
    spec: &RunSpec,
    workload: &dyn Workload,
    on_interval: &mut dyn FnMut(&IntervalSample),
) -> Result<RunResult> {
    let n = plan.threads.len();
    if n == 0 {
        return Err(anyhow!("the plan has no threads"));
    }
    // Once per process, before any thread of this run spins: the workers' openings then
    // switch no kernel static key (see `counters::prepare`).
    crate::counters::prepare(spec.counters());
    let load = threads_per_cpu(plan.threads.iter().map(|t| &t.cpus));
    let nice_offset = nice_offset(load, headroom(workload.requested_nice()));
    let shared = Shared {
        gate: Gate::new(n),
        warm_stop: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        phase: AtomicU8::new(Phase::WarmUp.as_u8()),
        progress: (0..n)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
        tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
        warmup: !spec.warmup().is_zero(),
        nice_offset,
        counters: spec.counters(),
        crowded: load > MAX_WEIGHT_RATIO,
        start: Mutex::new(None),
        started: AtomicU32::new(0),
        outs: (0..n).map(|_| Mutex::new(None)).collect(),
        stopping: StopWindow::default(),
    };
    let shared = &shared;
    let mut c = Coordinator {
        plan,
        spec,
        shared,
        interrupted: false,
        all_done: false,
        next_sample: 0,
    };

    // Every thread spawned in the scope is joined when it ends, on every path.
    let timing = std::thread::scope(|s| -> Result<Timing> {
        // Spawning and the first opening happen on a helper thread while the coordinator
        // sleeps (see `start`).
        std::thread::Builder::new()
            .name("smtlab-start".into())
            .spawn_scoped(s, move || {
                let run = std::panic::AssertUnwindSafe(|| start(s, plan, shared, workload));
                if let Err(p) = std::panic::catch_unwind(run) {
                    // Never leave the coordinator waiting for a start that will not come.
                    shared.abort();
                    *lock(&shared.start) = Some(Started {
                        opened: None,
                        interrupted: false,
                        spawn_error: Some(anyhow!(
                            "the thread spawning the workers panicked: {}",
                            panic_message(&*p)
                        )),
                    });
                    shared.announce_start();
                }
            })
            .context("starting the thread that spawns the workers")?;
        // No timeout: waking up now and then would put the coordinator on the run queue,
        // where the opening could catch it. The helper wakes it on every path.
        while shared.started.load(Ordering::SeqCst) == 0 {
            futex_wait(&shared.started, 0, None);
        }
        let st = lock(&shared.start).take().expect("set before `started`");
        c.interrupted = st.interrupted;
        if let Some(e) = st.spawn_error {
            return Err(e);
        }
        if st.interrupted && st.opened.is_none() {
            // Ctrl-C before the run began: nothing to report.
            return Err(crate::error::Interrupted.into());
        }
        c.drive(st.opened, on_interval)
    });
    {
        let outs: Vec<Result<WorkerOut>> = shared
            .outs
            .iter()
            .enumerate()
            .map(|(i, o)| {
                lock(o)
                    .take()
                    .unwrap_or_else(|| Err(anyhow!("workload thread {i} did not report")))
            })
            .collect();
        let timing = timing?;
        let mut threads = Vec::with_capacity(n);
        let mut violations = Vec::new();
        for (i, out) in outs.into_iter().enumerate() {
            let out = out?;
            let tp = &plan.threads[i];
            let mut observed = out.observed.clone();
            observed = observed.union(&timing.observed[i]);
            for cpu in observed.difference(&tp.cpus).iter() {
                violations.push(PinningViolation {
                    thread: i,
                    cpu,
                    allowed: tp.cpus.clone(),
                });
            }
            threads.push(ThreadResult {
                thread: i,
                tid: out.tid,
                cpus: tp.cpus.clone(),
                observed_cpus: observed,
                warmup_ops: timing.warmup_ops[i],
                ops: timing.interval_ops[i].iter().sum(),
                interval_ops: timing.interval_ops[i].clone(),
                cpu_time_ns: out.delta.cpu_time_ns,
                voluntary_ctx_switches: out.delta.voluntary,
                involuntary_ctx_switches: out.delta.involuntary,
                runqueue_delay_ns: out.delta.runqueue_wait_ns,
                counters: out.counters,
                counters_span_ns: out.delta.wall_ns,
            });
        }
        Ok(RunResult {
            workload: workload.name(),
            placement: plan.request.clone(),
            spec: spec.clone(),
            warmup_ns: timing.warmup_ns,
            measured_ns: timing.interval_ns.iter().sum(),
            interval_ns: timing.interval_ns,
            stop_latency_ns: timing.stop_latency_ns,
            threads,
            pinning_violations: violations,
            interrupted: c.interrupted,
            synthetic: false,
            steal_share: timing.steal_share,
            nice_offset,
        })
    }
}

/// Locks `m`, ignoring poisoning (every value behind these locks is written whole).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// State the coordinator and the workers share.
struct Shared {
    gate: Gate,
    warm_stop: AtomicBool,
    stop: AtomicBool,
    phase: AtomicU8,
    progress: Vec<CachePadded<AtomicU64>>,
    tids: Vec<AtomicI32>,
    warmup: bool,
    /// Added to every engine thread's nice value (see the module docs).
    nice_offset: i32,
    /// Which event counters each worker opens.
    counters: crate::counters::Mode,
    /// More than [`MAX_WEIGHT_RATIO`] threads per CPU: between warm-up and measurement
    /// the workers wait at the gate yielding instead of blocked (see [`Gate::arrive`]).
    crowded: bool,
    /// What [`start`] found, written before `started` is set.
    start: Mutex<Option<Started>>,
    /// Set (and woken) once `start` is written and, when the gate opened, every worker
    /// was woken ([`Gate::open_then`]).
    started: AtomicU32,
    /// Each worker's result (an error for a panic), written as it returns.
    outs: Vec<Mutex<Option<Result<WorkerOut>>>>,
    /// Open while the workers are told to end a phase.
    stopping: StopWindow,
}

/// Counts this run in [`super::stopping`] while its threads are being told to stop;
/// uncounted when the run ends.
#[derive(Default)]
struct StopWindow(AtomicBool);

impl StopWindow {
    fn open(&self) {
        if !self.0.swap(true, Ordering::SeqCst) {
            super::STOPPING.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn close(&self) {
        if self.0.swap(false, Ordering::SeqCst) {
            super::STOPPING.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Drop for StopWindow {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    /// Ends the run early: every worker returns, wherever it is (at the gate, warming
    /// up or measuring).
    fn abort(&self) {
        self.stopping.open();
        self.warm_stop.store(true, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
        self.phase.store(Phase::Stopping.as_u8(), Ordering::SeqCst);
        self.gate.abort();
    }

    /// Wakes the coordinator waiting for the run to start (idempotent).
    fn announce_start(&self) {
        if self.started.load(Ordering::Relaxed) == 0 && self.started.swap(1, Ordering::SeqCst) == 0
        {
            futex_wake(&self.started, 1);
        }
    }
}

/// The most threads any one CPU would carry, one thread per set, counting a thread
/// allowed on k CPUs as 1/k on each.
pub fn threads_per_cpu<'a>(sets: impl IntoIterator<Item = &'a CpuSet>) -> f64 {
    let mut load: std::collections::HashMap<u32, f64> = std::collections::HashMap::new();
    for set in sets {
        let k = set.len();
        for c in set.iter() {
            *load.entry(c).or_default() += 1.0 / k as f64;
        }
    }
    load.into_values().fold(0.0, f64::max)
}

/// How far threads may be demoted when one of them asks for `requested_nice`: nobody's
/// nice may pass 19.
fn headroom(requested_nice: Option<i32>) -> i32 {
    19 - current_nice().max(requested_nice.unwrap_or(0))
}

/// The nice offset the engine would give threads pinned to `sets` (one each), some of
/// which set `requested_nice` on themselves: for burner processes, which are not engine
/// threads of this process but crowd its coordinator the same way.
pub fn nice_offset_for(sets: &[CpuSet], requested_nice: Option<i32>) -> i32 {
    nice_offset(threads_per_cpu(sets), headroom(requested_nice))
}

/// The smallest nice increment (at most `headroom`, so no thread's nice passes 19 and
/// their differences stay) that keeps `threads_per_cpu` threads' total weight within
/// [`MAX_WEIGHT_RATIO`] times one nice-0 thread's.
pub fn nice_offset(threads_per_cpu: f64, headroom: i32) -> i32 {
    let max = headroom.clamp(0, 19) as usize;
    (0..=max)
        .find(|&d| threads_per_cpu * NICE_WEIGHT[d] <= MAX_WEIGHT_RATIO * NICE_WEIGHT[0])
        .unwrap_or(max) as i32
}

/// The calling thread's nice value (0 when it cannot be read).
pub fn current_nice() -> i32 {
    // getpriority returns the nice value itself and may legitimately return -1: errno
    // tells an error apart.
    // SAFETY: __errno_location returns this thread's errno; getpriority has no memory
    // preconditions.
    unsafe {
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, affinity::gettid() as libc::id_t);
        if n == -1 && *libc::__errno_location() != 0 {
            0
        } else {
            n
        }
    }
}

/// Raises the calling thread's nice value by `by` (never needs privileges).
fn demote_self(tid: i32, by: i32) {
    if by <= 0 {
        return;
    }
    let target = (current_nice() + by).min(19);
    // SAFETY: setpriority has no memory preconditions; PRIO_PROCESS with a tid targets
    // that one thread on Linux. Failure leaves the thread at its nice; nothing to undo.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, target) };
}

/// `/proc/stat` times before the measurement, for its steal share.
type CpuTimes = Option<Vec<crate::hygiene::CpuTimes>>;

/// What [`start`] hands the coordinator.
struct Started {
    /// When the gate first opened, and (without warm-up) the CPU times read just before;
    /// None when it never opened (a worker failed, or Ctrl-C).
    opened: Option<(Instant, CpuTimes)>,
    interrupted: bool,
    spawn_error: Option<anyhow::Error>,
}

/// Spawns one worker per plan thread, waits until all are pinned and blocked at the
/// gate, and opens it for the warm-up (or the measurement).
///
/// This runs on a helper thread, and the coordinator sleeps until every worker was woken,
/// so that the coordinator is off the run queue when thousands of workers become
/// runnable at once. Under EEVDF a task that is on the run queue while
/// others join with positive lag (workers that waited their turn are owed time) falls
/// behind the new average virtual time and is not picked until they are paid, about
/// 4 ms per joining thread per CPU: a coordinator that opened the gate itself woke up to
/// 27 s late with 4,096 workers on 2 CPUs (and so did a helper that opened it and then
/// had to exit). A task that wakes after the join is placed at the new average and,
/// with a nice value below the workers', runs at once (`place_entity`,
/// Documentation/scheduler/sched-eevdf.rst). The helper also takes the CPU burst of
/// spawning off the coordinator.
fn start<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    plan: &'env Plan,
    shared: &'env Shared,
    workload: &'env dyn Workload,
) {
    let n = plan.threads.len();
    let mut st = Started {
        opened: None,
        interrupted: false,
        spawn_error: None,
    };
    let finish = |st: Started| {
        *lock(&shared.start) = Some(st);
        shared.announce_start();
    };
    for (i, tp) in plan.threads.iter().enumerate() {
        // Ctrl-C while thousands of threads are being spawned ends the run now, not after
        // the last spawn (the spawned ones wait blocked at the gate).
        if crate::interrupt::requested() {
            shared.abort();
            st.interrupted = true;
            return finish(st);
        }
        let cpus = tp.cpus.clone();
        let h = std::thread::Builder::new()
            .name(format!("smtlab-w{i}"))
            .spawn_scoped(s, move || {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    worker(i, cpus, shared, workload)
                }))
                .unwrap_or_else(|p| {
                    // Release the others instead of leaving them at the gate.
                    shared.abort();
                    Err(anyhow!(
                        "workload thread {i} panicked: {}",
                        panic_message(&*p)
                    ))
                });
                *lock(&shared.outs[i]) = Some(out);
            });
        if let Err(e) = h {
            shared.abort();
            st.spawn_error =
                Some(anyhow::Error::new(e).context(format!("spawning thread {i} of {n}")));
            return finish(st);
        }
    }
    match wait_arrivals(shared, n) {
        Arrivals::All => {}
        // A worker failed; its error comes from its result.
        Arrivals::Aborted => return finish(st),
        Arrivals::Interrupted => {
            st.interrupted = true;
            return finish(st);
        }
    }
    let times0 = if shared.warmup {
        shared.phase.store(Phase::WarmUp.as_u8(), Ordering::SeqCst);
        None
    } else {
        shared.phase.store(Phase::Measure.as_u8(), Ordering::SeqCst);
        // Read before the gate opens, so the read is not on the measured CPUs' clock.
        crate::hygiene::read_times()
    };
    st.opened = Some((Instant::now(), times0));
    // Written before the gate opens: after it, this thread may wait seconds for a CPU.
    *lock(&shared.start) = Some(st);
    shared.gate.open_then(&shared.started);
}

/// How waiting for every worker at the gate ended.
enum Arrivals {
    All,
    /// A worker failed (or the run was stopped) and aborted the gate.
    Aborted,
    /// Ctrl-C arrived; the gate was aborted.
    Interrupted,
}

/// Waits until all `n` workers are at the gate, watching the Ctrl-C flag.
fn wait_arrivals(shared: &Shared, n: usize) -> Arrivals {
    let gate = &shared.gate;
    loop {
        if crate::interrupt::requested() {
            shared.abort();
            return Arrivals::Interrupted;
        }
        let v = gate.arrived.load(Ordering::SeqCst);
        if v as usize >= n {
            return Arrivals::All;
        }
        if gate.aborted.load(Ordering::SeqCst) {
            return Arrivals::Aborted;
        }
        futex_wait(&gate.arrived, v, POLL);
    }
}

/// What a worker hands back.
struct WorkerOut {
    tid: i32,
    observed: CpuSet,
    delta: Snapshot,
    counters: Option<crate::counters::Measurement>,
}

fn worker(i: usize, cpus: CpuSet, sh: &Shared, w: &dyn Workload) -> Result<WorkerOut> {
    // If the workload panics, release the coordinator instead of leaving it waiting.
    struct AbortOnUnwind<'a>(&'a Shared);
    impl Drop for AbortOnUnwind<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.abort();
            }
        }
    }
    let _guard = AbortOnUnwind(sh);
    let tid = affinity::gettid();
    sh.tids[i].store(tid, Ordering::Relaxed);
    demote_self(tid, sh.nice_offset);
    if let Err(e) = affinity::set_affinity(0, &cpus) {
        sh.abort();
        return Err(e).with_context(|| format!("pinning thread {i} to CPUs {cpus}"));
    }
    let mut observed = CpuSet::new();
    // sched_setaffinity migrates the caller before returning, so this is already inside.
    if let Some(c) = affinity::current_cpu() {
        observed.insert(c);
    }
    let idle = || WorkerOut {
        tid,
        observed: observed.clone(),
        delta: Snapshot::default(),
        counters: None,
    };
    // Opened here, disabled, so that opening costs nothing inside the window; counting
    // covers the measurement only (`pid` 0 follows this thread to any CPU).
    let counters = crate::counters::Counters::open_thread(sh.counters);
    if !sh.gate.arrive(false) {
        return Ok(idle());
    }
    if sh.warmup {
        w.run_thread(&ThreadCtx {
            thread: i,
            stop: &sh.warm_stop,
            progress: &sh.progress[i],
            phase: &sh.phase,
            nice_offset: sh.nice_offset,
        });
        if !sh.gate.arrive(sh.crowded) {
            return Ok(idle());
        }
    }
    let start = Snapshot::take(tid);
    if let Some(c) = &counters {
        c.start();
    }
    w.run_thread(&ThreadCtx {
        thread: i,
        stop: &sh.stop,
        progress: &sh.progress[i],
        phase: &sh.phase,
        nice_offset: sh.nice_offset,
    });
    if let Some(c) = &counters {
        c.stop();
    }
    let end = Snapshot::take(tid);
    sh.gate.done();
    let counters = counters.map(|c| c.read());
    if let Some(c) = affinity::current_cpu() {
        observed.insert(c);
    }
    Ok(WorkerOut {
        tid,
        observed,
        delta: start.delta(&end),
        counters,
    })
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// What the coordinator measured.
struct Timing {
    warmup_ns: u64,
    warmup_ops: Vec<u64>,
    interval_ns: Vec<u64>,
    interval_ops: Vec<Vec<u64>>,
    observed: Vec<CpuSet>,
    stop_latency_ns: u64,
    steal_share: Option<f64>,
}

struct Coordinator<'a> {
    plan: &'a Plan,
    spec: &'a RunSpec,
    shared: &'a Shared,
    interrupted: bool,
    /// Every worker returned from the measurement on its own (a fixed amount of work
    /// done, or a client failed): the run ends at the next poll instead of sleeping out
    /// the duration.
    all_done: bool,
    /// The next thread whose last CPU is read at a boundary.
    next_sample: usize,
}

impl Coordinator<'_> {
    /// Sleeps until `deadline` or Ctrl-C; returns false on Ctrl-C.
    fn sleep_until(&mut self, deadline: Instant) -> bool {
        loop {
            if crate::interrupt::requested() {
                self.interrupted = true;
                return false;
            }
            if Instant::now() >= deadline {
                return true;
            }
            if self.shared.phase.load(Ordering::Relaxed) == Phase::Measure.as_u8()
                && self.shared.gate.done.load(Ordering::SeqCst) as usize >= self.plan.threads.len()
            {
                self.all_done = true;
                return true;
            }
            sleep_until_or(deadline, POLL);
        }
    }

    /// Waits until every worker is at the gate; false when one failed (the gate was
    /// aborted) or Ctrl-C arrived (then the gate is aborted here).
    fn wait_arrivals(&mut self, n: usize) -> bool {
        match wait_arrivals(self.shared, n) {
            Arrivals::All => true,
            Arrivals::Aborted => false,
            Arrivals::Interrupted => {
                self.interrupted = true;
                false
            }
        }
    }

    /// Reads the last CPU of up to [`LAST_CPU_SAMPLES`] threads, continuing where the
    /// previous boundary stopped, so the coordinator's CPU per boundary stays bounded
    /// however many threads run.
    fn sample_last_cpus(&mut self, observed: &mut [CpuSet]) {
        let tids = &self.shared.tids;
        for _ in 0..LAST_CPU_SAMPLES.min(tids.len()) {
            let i = self.next_sample % tids.len();
            self.next_sample = i + 1;
            if let Some(c) = last_cpu(tids[i].load(Ordering::Relaxed)) {
                observed[i].insert(c);
            }
        }
    }

    /// Runs the phases after [`spawn_and_open`] opened the gate at `opened` (None: it
    /// never opened, nothing to measure).
    fn drive(
        &mut self,
        opened: Option<(Instant, CpuTimes)>,
        on_interval: &mut dyn FnMut(&IntervalSample),
    ) -> Result<Timing> {
        let sh = self.shared;
        let n = self.plan.threads.len();
        let mut t = Timing {
            warmup_ns: 0,
            warmup_ops: vec![0; n],
            interval_ns: Vec::new(),
            interval_ops: vec![Vec::new(); n],
            observed: vec![CpuSet::new(); n],
            stop_latency_ns: 0,
            steal_share: None,
        };
        let Some((opened_at, times0)) = opened else {
            return Ok(t);
        };
        let (t0, times0) = if sh.warmup {
            let w0 = opened_at;
            let finished = self.sleep_until(w0 + self.spec.warmup());
            sh.stopping.open();
            sh.warm_stop.store(true, Ordering::SeqCst);
            if !self.wait_arrivals(n) {
                return Ok(t);
            }
            sh.stopping.close();
            t.warmup_ns = nanos(w0.elapsed());
            for (i, p) in sh.progress.iter().enumerate() {
                t.warmup_ops[i] = p.swap(0, Ordering::Relaxed);
            }
            if !finished {
                sh.abort();
                return Ok(t);
            }
            sh.phase.store(Phase::Measure.as_u8(), Ordering::SeqCst);
            // Read before the gate opens, so the read is not on the measured CPUs' clock.
            let times0 = crate::hygiene::read_times();
            let t0 = Instant::now();
            sh.gate.open();
            (t0, times0)
        } else {
            (opened_at, times0)
        };
        let total = self.spec.intervals();
        let mut prev = vec![0u64; n];
        let mut last = t0;
        for k in 0..total {
            let boundary = t0 + (self.spec.interval() * (k as u32 + 1)).min(self.spec.duration());
            let finished = self.sleep_until(boundary);
            // The window closes for the workers before its end is read: an operation a
            // workload counts as measured (it ended while the phase was `Measure`) then
            // lies inside the window, however late a loaded machine lets this thread
            // run again after the clock read below.
            if k + 1 == total || !finished {
                sh.phase.store(Phase::Stopping.as_u8(), Ordering::SeqCst);
            }
            let now = Instant::now();
            let mut ops = Vec::with_capacity(n);
            for (i, p) in sh.progress.iter().enumerate() {
                let v = p.load(Ordering::Relaxed);
                ops.push(v - prev[i]);
                t.interval_ops[i].push(v - prev[i]);
                prev[i] = v;
            }
            let sample = IntervalSample {
                index: k,
                elapsed_ns: nanos(now - last),
                ops,
            };
            t.interval_ns.push(sample.elapsed_ns);
            last = now;
            if !finished {
                break;
            }
            self.sample_last_cpus(&mut t.observed);
            on_interval(&sample);
            if self.all_done {
                break;
            }
        }
        if let (Some(a), Some(b)) = (&times0, crate::hygiene::read_times()) {
            let cpus = self
                .plan
                .threads
                .iter()
                .fold(CpuSet::new(), |u, t| u.union(&t.cpus));
            t.steal_share = crate::hygiene::steal_share(a, &b, &cpus);
        }
        sh.phase.store(Phase::Stopping.as_u8(), Ordering::SeqCst);
        let stop_at = Instant::now();
        sh.stopping.open();
        sh.stop.store(true, Ordering::SeqCst);
        // Workers return on their own; measure how long that takes from here. A worker
        // stuck in a call that cannot see the stop flag (an insert waiting on a database
        // lock) would leave the run hanging without a word, so say so after a while.
        if !sh.gate.wait_all_done_within(n, STOP_WARN_AFTER) {
            let left = n.saturating_sub(sh.gate.done.load(Ordering::SeqCst) as usize);
            crate::say!(
                "smtlab: {left} of {n} threads still running {} s after the run ended; a thread \
                 may be blocked in a call that does not see the stop (e.g. a database lock \
                 wait). Still waiting; Ctrl-C three times (the third 2 s after the second) \
                 exits without cleanup.",
                STOP_WARN_AFTER.as_secs()
            );
            sh.gate.wait_all_done(n);
        }
        t.stop_latency_ns = nanos(stop_at.elapsed());
        sh.stopping.close();
        Ok(t)
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A reusable barrier the coordinator opens, and that a failing worker can abort (std's
/// `Barrier` would leave everyone waiting for a thread that never arrives).
///
/// Built on futexes rather than a mutex and condvar: opening wakes every worker with one
/// `FUTEX_WAKE`, so all become runnable at once. With a condvar, woken waiters queue on
/// the mutex and each wakes the next; when 64 threads share 2 CPUs with spinners, that
/// chain takes a scheduler slice per link and late threads start measuring late.
struct Gate {
    /// Workers in the run: only the last to arrive (or finish) wakes the coordinator.
    /// Waking it on every arrival costs thousands of context switches at thousands of
    /// threads, each a burst the fair scheduler makes the coordinator pay back.
    workers: u32,
    /// Bumped by `open` and `abort`; workers wait on it.
    generation: AtomicU32,
    /// Workers at the gate; the coordinator waits on it.
    arrived: AtomicU32,
    /// Workers finished measuring; the coordinator waits on it.
    done: AtomicU32,
    aborted: AtomicBool,
}

impl Gate {
    fn new(workers: usize) -> Self {
        Gate {
            workers: u32::try_from(workers).unwrap_or(u32::MAX),
            generation: AtomicU32::new(0),
            arrived: AtomicU32::new(0),
            done: AtomicU32::new(0),
            aborted: AtomicBool::new(false),
        }
    }

    /// Worker: arrive and wait for the coordinator to open. False when aborted.
    ///
    /// With `yielding`, wait runnable, calling `sched_yield` (for the gate between
    /// warm-up and measurement in crowded runs). Workers that see the warm-up end after
    /// waiting their turn on the run queue are owed time; blocked, they keep that credit
    /// and thousands of them coming back at once put the coordinator behind all of them
    /// (see [`spawn_and_open`]). Yielding, they stay on the run queue and nothing is
    /// carried over. Before the first opening they block: spinning there would starve
    /// the thread spawning the rest.
    fn arrive(&self, yielding: bool) -> bool {
        let g = self.generation.load(Ordering::SeqCst);
        if self.arrived.fetch_add(1, Ordering::SeqCst) + 1 >= self.workers {
            futex_wake(&self.arrived, 1);
        }
        loop {
            if self.aborted.load(Ordering::SeqCst) {
                return false;
            }
            if self.generation.load(Ordering::SeqCst) != g {
                // `abort` sets `aborted` before it bumps the generation.
                return !self.aborted.load(Ordering::SeqCst);
            }
            if yielding {
                // SAFETY: sched_yield has no preconditions.
                unsafe { libc::sched_yield() };
            } else {
                futex_wait(&self.generation, g, POLL);
            }
        }
    }

    /// Coordinator: wait until `word` reaches `n`. False when aborted.
    fn wait_for(&self, word: &AtomicU32, n: usize) -> bool {
        loop {
            if self.aborted.load(Ordering::SeqCst) {
                return false;
            }
            let v = word.load(Ordering::SeqCst);
            if v as usize >= n {
                return true;
            }
            futex_wait(word, v, POLL);
        }
    }

    /// Coordinator: let the waiting workers go.
    fn open(&self) {
        self.arrived.store(0, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.generation, i32::MAX);
    }

    /// [`Gate::open`], then set `then` to 1 and wake its waiter, in one `FUTEX_WAKE_OP`:
    /// the kernel wakes every worker first and `then`'s waiter after them (futex(2)), so
    /// that waiter joins the run queue after all of them.
    fn open_then(&self, then: &AtomicU32) {
        self.arrived.store(0, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
        // FUTEX_OP(FUTEX_OP_SET, 1, FUTEX_OP_CMP_EQ, 0): *then = 1; wake if it was 0.
        const FUTEX_WAKE_OP: libc::c_int = 5;
        const SET_1_IF_WAS_0: u32 = 1 << 12;
        // SAFETY: both words are valid, aligned u32s for the duration of the call; the
        // fourth argument of FUTEX_WAKE_OP is a count (how many of `then`'s waiters to
        // wake), passed in the timeout slot.
        let r = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.generation.as_ptr(),
                FUTEX_WAKE_OP | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
                1usize,
                then.as_ptr(),
                SET_1_IF_WAS_0,
            )
        };
        if r < 0 {
            // Not supported (a kernel without FUTEX_WAKE_OP, seccomp): the same, in two
            // steps.
            futex_wake(&self.generation, i32::MAX);
            then.store(1, Ordering::SeqCst);
            futex_wake(then, 1);
        }
    }

    /// Anyone: release everybody for good.
    fn abort(&self) {
        self.aborted.store(true, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.generation, i32::MAX);
        futex_wake(&self.arrived, i32::MAX);
        futex_wake(&self.done, i32::MAX);
    }

    /// Worker: finished the measurement.
    fn done(&self) {
        if self.done.fetch_add(1, Ordering::SeqCst) + 1 >= self.workers {
            futex_wake(&self.done, 1);
        }
    }

    /// Coordinator: wait until `n` workers finished (or the gate was aborted).
    fn wait_all_done(&self, n: usize) {
        self.wait_for(&self.done, n);
    }

    /// [`Gate::wait_all_done`], giving up after `limit`; false when workers are still
    /// running then.
    fn wait_all_done_within(&self, n: usize, limit: Duration) -> bool {
        let t0 = Instant::now();
        loop {
            let v = self.done.load(Ordering::SeqCst);
            if v as usize >= n || self.aborted.load(Ordering::SeqCst) {
                return true;
            }
            if t0.elapsed() >= limit {
                return false;
            }
            futex_wait(&self.done, v, POLL);
        }
    }
}

/// Sleeps while `word == expected`, at most `timeout` (spurious wake-ups are fine: every
/// caller re-checks in a loop).
fn futex_wait(word: &AtomicU32, expected: u32, timeout: impl Into<Option<Duration>>) {
    let ts = timeout.into().map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call; `ts_ptr` is
    // null (no timeout) or a valid relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
        );
    }
}

/// Wakes up to `n` threads waiting on `word`.
fn futex_wake(word: &AtomicU32, n: i32) {
    // SAFETY: `word` is a valid, aligned u32; FUTEX_WAKE only uses its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(sets: &[&str]) -> f64 {
        let sets: Vec<CpuSet> = sets.iter().map(|s| s.parse().unwrap()).collect();
        threads_per_cpu(&sets)
    }

    #[test]
    fn load_counts_a_thread_on_k_cpus_as_1_over_k_on_each() {
        assert_eq!(load(&["0", "1"]), 1.0);
        assert_eq!(load(&["0", "0", "0-1"]), 2.5);
        assert_eq!(load(&["0-3"; 8]), 2.0);
    }

    #[test]
    fn demotion_is_just_enough_and_keeps_below_19() {
        // Up to 8 nice-0 threads per CPU: the coordinator gets its ninth; no change.
        assert_eq!(nice_offset(1.0, 19), 0);
        assert_eq!(nice_offset(8.0, 19), 0);
        // 16 per CPU need weight ≤ 512 each: nice 4 (423; nice 3 is 526).
        assert_eq!(nice_offset(16.0, 19), 4);
        // neighbors --workers 256 on 2 CPUs: 128 per CPU, weight ≤ 64: nice 13 (56).
        assert_eq!(nice_offset(128.0, 19), 13);
        // 1,024 or 4,096 on 2 CPUs: as far as nice goes.
        assert_eq!(nice_offset(512.0, 19), 19);
        assert_eq!(nice_offset(2048.0, 19), 19);
        // A burner asked for nice 15: the others may move 4 at most, or they would pass
        // it and the order between them would change.
        assert_eq!(nice_offset(512.0, 4), 4);
        assert_eq!(nice_offset(512.0, 0), 0);
        assert_eq!(nice_offset(512.0, -3), 0);
    }
}
