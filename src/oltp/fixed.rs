//! A fixed-work run: every plan thread runs the workload's measurement once, and the run
//! ends when the last thread returns (seed 001: each session inserts R rows; the elapsed
//! time is the slowest session's).
//!
//! TEMPORARY: the engine ([`crate::engine::run`]) measures fixed durations only — its
//! coordinator sleeps to the end of the duration even after every worker has returned. Until
//! it ends a run when all workers are done, `--rows-per-thread` uses this runner, which
//! follows the engine's protocol (pin, check `sched_getcpu`, barrier, `Phase::Measure`,
//! Ctrl-C → stop flag) for exactly this case. Replace with `engine::run` then.

use crate::affinity;
use crate::cpuset::CpuSet;
use crate::engine::{Phase, ThreadCtx, Workload};
use crate::placement::Plan;
use anyhow::{Context, Result, anyhow};
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What a fixed-work run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedRun {
    /// From the barrier to the last thread's return, ns.
    pub measured_ns: u64,
    /// Involuntary context switches of all threads during the run.
    pub involuntary_ctx_switches: u64,
    /// CPU time of all threads during the run, ns.
    pub cpu_time_ns: u64,
    /// Threads seen outside their CPU set (at start or end).
    pub pinning_violations: usize,
    /// The time limit or Ctrl-C stopped the threads.
    pub cut_short: bool,
}

/// Longest the coordinator sleeps before looking at the limit and Ctrl-C again.
const POLL: Duration = Duration::from_millis(20);

/// Start gate: the coordinator opens it once every thread is pinned, or aborts it.
#[derive(Default)]
struct Gate {
    /// 0 = closed, 1 = open, 2 = aborted.
    state: Mutex<u8>,
    cv: Condvar,
    arrived: AtomicU64,
}

impl Gate {
    fn wait(&self) -> bool {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        self.cv.notify_all();
        let mut s = self.state.lock();
        while *s == 0 {
            self.cv.wait(&mut s);
        }
        *s == 1
    }

    fn notify(&self) {
        let _s = self.state.lock();
        self.cv.notify_all();
    }

    fn set(&self, v: u8) {
        *self.state.lock() = v;
        self.cv.notify_all();
    }

    fn wait_arrivals(&self, n: u64) {
        let mut s = self.state.lock();
        while self.arrived.load(Ordering::SeqCst) < n && *s != 2 {
            self.cv.wait_for(&mut s, Duration::from_millis(10));
        }
    }
}

/// Runs `workload` once per plan thread, pinned, until every thread returns, `limit`
/// passes (the stop flag is raised) or Ctrl-C.
pub fn run(plan: &Plan, workload: &dyn Workload, limit: Duration) -> Result<FixedRun> {
    let n = plan.threads.len();
    let gate = Gate::default();
    let stop = AtomicBool::new(false);
    let phase = AtomicU8::new(Phase::Measure.as_u8());
    let progress: Vec<CachePadded<AtomicU64>> = (0..n)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    let done = AtomicU64::new(0);
    std::thread::scope(|s| -> Result<FixedRun> {
        let mut handles = Vec::with_capacity(n);
        for (i, tp) in plan.threads.iter().enumerate() {
            let (gate, stop, phase, progress, done) = (&gate, &stop, &phase, &progress, &done);
            let cpus = tp.cpus.clone();
            let h = std::thread::Builder::new()
                .name(format!("smtlab-oltp{i}"))
                .spawn_scoped(s, move || -> Result<Worker> {
                    if let Err(e) = affinity::set_affinity(0, &cpus) {
                        gate.set(2);
                        return Err(e)
                            .with_context(|| format!("pinning thread {i} to CPUs {cpus}"));
                    }
                    let mut outside = !on(&cpus);
                    if !gate.wait() {
                        return Ok(Worker::default());
                    }
                    let (c0, inv0) = thread_usage();
                    workload.run_thread(&ThreadCtx {
                        thread: i,
                        stop,
                        progress: &progress[i],
                        phase,
                    });
                    let end = Instant::now();
                    let (c1, inv1) = thread_usage();
                    outside |= !on(&cpus);
                    done.fetch_add(1, Ordering::SeqCst);
                    gate.notify();
                    Ok(Worker {
                        end: Some(end),
                        cpu_ns: c1.saturating_sub(c0),
                        involuntary: inv1.saturating_sub(inv0),
                        outside,
                    })
                });
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    gate.set(2);
                    return Err(anyhow!("spawning client thread {i}: {e}"));
                }
            }
        }
        gate.wait_arrivals(n as u64);
        let start = Instant::now();
        {
            let mut st = gate.state.lock();
            if *st == 0 {
                *st = 1; // open, unless a thread aborted while pinning
            }
        }
        gate.cv.notify_all();
        let mut cut_short = false;
        // Sleep until the last thread is done (each one wakes us), looking at the limit
        // and the Ctrl-C flag every POLL: no busy coordinator on a machine being measured.
        {
            let mut st = gate.state.lock();
            while done.load(Ordering::SeqCst) < n as u64 && *st != 2 {
                if crate::interrupt::requested() || start.elapsed() >= limit {
                    cut_short = true;
                    stop.store(true, Ordering::SeqCst);
                    break;
                }
                gate.cv.wait_for(&mut st, POLL);
            }
        }
        let mut run = FixedRun {
            measured_ns: 0,
            involuntary_ctx_switches: 0,
            cpu_time_ns: 0,
            pinning_violations: 0,
            cut_short,
        };
        let mut last = start;
        let mut first_err = None;
        for (i, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(w)) => {
                    last = last.max(w.end.unwrap_or(start));
                    run.cpu_time_ns += w.cpu_ns;
                    run.involuntary_ctx_switches += w.involuntary;
                    run.pinning_violations += usize::from(w.outside);
                }
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some(anyhow!("client thread {i} panicked"))),
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        run.measured_ns = u64::try_from((last - start).as_nanos()).unwrap_or(u64::MAX);
        Ok(run)
    })
}

/// What one thread hands back.
#[derive(Default)]
struct Worker {
    end: Option<Instant>,
    cpu_ns: u64,
    involuntary: u64,
    outside: bool,
}

fn on(cpus: &CpuSet) -> bool {
    affinity::current_cpu().is_none_or(|c| cpus.contains(c))
}

/// This thread's CPU time (ns) and involuntary context switches.
fn thread_usage() -> (u64, u64) {
    // SAFETY: getrusage writes into the zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_nivcsw as u64)
}
