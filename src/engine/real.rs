//! The real engine: pinned OS threads, a coordinator that only sleeps and samples.
//!
//! The calling thread is the coordinator. It never spins: it sleeps to absolute interval
//! boundaries (in slices of at most [`POLL`] so Ctrl-C is seen quickly), so it needs only a
//! few microseconds of CPU per boundary and the kernel's wake-up preference for sleepers
//! gets it onto a CPU even when 64 spinning threads share 2 CPUs.

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
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Longest the coordinator sleeps before looking at the Ctrl-C flag again.
const POLL: Duration = Duration::from_millis(20);
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
    spec.validate()?;
    let n = plan.threads.len();
    if n == 0 {
        return Err(anyhow!("the plan has no threads"));
    }
    let shared = Shared {
        gate: Gate::default(),
        warm_stop: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        phase: AtomicU8::new(Phase::WarmUp.as_u8()),
        progress: (0..n)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
        tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
        warmup: !spec.warmup.is_zero(),
    };
    let shared = &shared;

    std::thread::scope(|s| -> Result<RunResult> {
        let mut handles = Vec::with_capacity(n);
        for (i, tp) in plan.threads.iter().enumerate() {
            // Ctrl-C while thousands of threads are being spawned ends the run now, not
            // after the last spawn (the spawned ones wait blocked at the gate).
            if crate::interrupt::requested() {
                shared.gate.abort();
                join_all(handles);
                return Err(crate::error::Interrupted.into());
            }
            let cpus = tp.cpus.clone();
            let h = std::thread::Builder::new()
                .name(format!("smtlab-w{i}"))
                .spawn_scoped(s, move || worker(i, cpus, shared, workload));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.gate.abort();
                    join_all(handles);
                    return Err(e).with_context(|| format!("spawning thread {i} of {n}"));
                }
            }
        }
        let mut c = Coordinator {
            plan,
            spec,
            shared,
            interrupted: false,
            all_done: false,
        };
        let timing = c.drive(on_interval);
        let outs = join_all(handles);
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
        })
    })
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
}

/// What a worker hands back.
struct WorkerOut {
    tid: i32,
    observed: CpuSet,
    delta: Snapshot,
}

fn worker(i: usize, cpus: CpuSet, sh: &Shared, w: &dyn Workload) -> Result<WorkerOut> {
    // If the workload panics, release the coordinator instead of leaving it waiting.
    struct AbortOnUnwind<'a>(&'a Gate);
    impl Drop for AbortOnUnwind<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.abort();
            }
        }
    }
    let _guard = AbortOnUnwind(&sh.gate);
    let tid = affinity::gettid();
    sh.tids[i].store(tid, Ordering::Relaxed);
    if let Err(e) = affinity::set_affinity(0, &cpus) {
        sh.gate.abort();
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
    };
    if !sh.gate.arrive() {
        return Ok(idle());
    }
    if sh.warmup {
        w.run_thread(&ThreadCtx {
            thread: i,
            stop: &sh.warm_stop,
            progress: &sh.progress[i],
            phase: &sh.phase,
        });
        if !sh.gate.arrive() {
            return Ok(idle());
        }
    }
    let start = Snapshot::take(tid);
    w.run_thread(&ThreadCtx {
        thread: i,
        stop: &sh.stop,
        progress: &sh.progress[i],
        phase: &sh.phase,
    });
    let end = Snapshot::take(tid);
    sh.gate.done();
    if let Some(c) = affinity::current_cpu() {
        observed.insert(c);
    }
    Ok(WorkerOut {
        tid,
        observed,
        delta: start.delta(&end),
    })
}

fn join_all<T>(handles: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>) -> Vec<Result<T>> {
    handles
        .into_iter()
        .enumerate()
        .map(|(i, h)| match h.join() {
            Ok(r) => r,
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(anyhow!("workload thread {i} panicked: {msg}"))
            }
        })
        .collect()
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

    fn drive(&mut self, on_interval: &mut dyn FnMut(&IntervalSample)) -> Result<Timing> {
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
        // Every worker pinned and waiting?
        if !sh.gate.wait_arrivals(n) {
            return Ok(t); // a worker failed; its error comes from the join
        }
        if sh.warmup {
            sh.phase.store(Phase::WarmUp.as_u8(), Ordering::SeqCst);
            let w0 = Instant::now();
            sh.gate.open();
            let finished = self.sleep_until(w0 + self.spec.warmup);
            sh.warm_stop.store(true, Ordering::SeqCst);
            if !sh.gate.wait_arrivals(n) {
                return Ok(t);
            }
            t.warmup_ns = nanos(w0.elapsed());
            for (i, p) in sh.progress.iter().enumerate() {
                t.warmup_ops[i] = p.swap(0, Ordering::Relaxed);
            }
            if !finished {
                sh.stop.store(true, Ordering::SeqCst);
                sh.gate.abort();
                return Ok(t);
            }
        }
        sh.phase.store(Phase::Measure.as_u8(), Ordering::SeqCst);
        // Read before the gate opens, so the read is not on the measured CPUs' clock.
        let times0 = crate::hygiene::read_times();
        let t0 = Instant::now();
        sh.gate.open();
        let total = self.spec.intervals();
        let mut prev = vec![0u64; n];
        let mut last = t0;
        for k in 0..total {
            let boundary = t0 + (self.spec.interval * (k as u32 + 1)).min(self.spec.duration);
            let finished = self.sleep_until(boundary);
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
            for (i, tid) in sh.tids.iter().enumerate() {
                if let Some(c) = last_cpu(tid.load(Ordering::Relaxed)) {
                    t.observed[i].insert(c);
                }
            }
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
        sh.stop.store(true, Ordering::SeqCst);
        // Workers return on their own; measure how long that takes from here. A worker
        // stuck in a call that cannot see the stop flag (an insert waiting on a database
        // lock) would leave the run hanging without a word, so say so after a while.
        if !sh.gate.wait_all_done_within(n, STOP_WARN_AFTER) {
            let left = n.saturating_sub(sh.gate.done.load(Ordering::SeqCst) as usize);
            crate::say!(
                "smtlab: {left} of {n} threads still running {} s after the run ended; a thread \
                 may be blocked in a call that does not see the stop (e.g. a database lock \
                 wait). Still waiting; Ctrl-C twice quits.",
                STOP_WARN_AFTER.as_secs()
            );
            sh.gate.wait_all_done(n);
        }
        t.stop_latency_ns = nanos(stop_at.elapsed());
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
#[derive(Default)]
struct Gate {
    /// Bumped by `open` and `abort`; workers wait on it.
    generation: AtomicU32,
    /// Workers at the gate; the coordinator waits on it.
    arrived: AtomicU32,
    /// Workers finished measuring; the coordinator waits on it.
    done: AtomicU32,
    aborted: AtomicBool,
}

impl Gate {
    /// Worker: arrive and wait for the coordinator to open. False when aborted.
    fn arrive(&self) -> bool {
        let g = self.generation.load(Ordering::SeqCst);
        self.arrived.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.arrived, 1);
        loop {
            if self.aborted.load(Ordering::SeqCst) {
                return false;
            }
            if self.generation.load(Ordering::SeqCst) != g {
                return true;
            }
            futex_wait(&self.generation, g, POLL);
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

    /// Coordinator: wait until `n` workers arrived. False when aborted.
    fn wait_arrivals(&self, n: usize) -> bool {
        self.wait_for(&self.arrived, n)
    }

    /// Coordinator: let the waiting workers go.
    fn open(&self) {
        self.arrived.store(0, Ordering::SeqCst);
        self.generation.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.generation, i32::MAX);
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
        self.done.fetch_add(1, Ordering::SeqCst);
        futex_wake(&self.done, 1);
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
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 for the duration of the call; `ts` is a
    // valid relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
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
