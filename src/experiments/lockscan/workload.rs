//! The two thread types of the original test over one global lock: lock threads that
//! acquire and release it in a loop, scan threads that memset a buffer.

use crate::engine::{Phase, ThreadCtx, Workload};
use crate::locks::{LockCounters, LockKind, LockThread, StatsMode, ThreadStats, new_lock};
use std::sync::{Arc, Mutex};

/// Busy-waits about `ns` nanoseconds (the critical-section work).
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

/// Lock threads (plan threads `0..lock_threads`) and scan threads (the rest) of one run.
pub struct LockScan {
    lock_kind: LockKind,
    lock: Box<dyn crate::locks::Lock>,
    lock_threads: usize,
    cs_ns: u64,
    scan_bytes: usize,
    /// Live counters of each lock thread, for per-interval spins.
    live: Mutex<Vec<Option<Arc<LockCounters>>>>,
    /// Final stats of each lock thread (measurement phase only).
    finals: Mutex<Vec<Option<ThreadStats>>>,
    /// Bytes each scan thread wrote in the measurement phase (whole 16 MiB chunks and the
    /// pass's tail), None until it has run one.
    scanned: Mutex<Vec<Option<u64>>>,
}

impl LockScan {
    pub fn new(
        lock_kind: LockKind,
        lock_threads: usize,
        cs_ns: u64,
        scan_bytes: usize,
        stats: StatsMode,
    ) -> Self {
        LockScan {
            lock_kind,
            lock: new_lock(lock_kind, stats),
            lock_threads,
            cs_ns,
            scan_bytes,
            live: Mutex::new(vec![None; lock_threads]),
            finals: Mutex::new(vec![None; lock_threads]),
            scanned: Mutex::new(Vec::new()),
        }
    }

    /// Takes the bytes each scan thread (in plan order after the lock threads) wrote in
    /// the last run's measurement phase; None for a thread that did not run one (the fake
    /// engine runs no workload).
    pub fn take_scanned(&self, scan_threads: usize) -> Vec<Option<u64>> {
        let mut f = self.scanned.lock().expect("not poisoned");
        let mut out = std::mem::take(&mut *f);
        out.resize(scan_threads, None);
        out
    }

    /// Takes the final per-lock-thread stats of the last run.
    pub fn take_stats(&self) -> Vec<ThreadStats> {
        let mut f = self.finals.lock().expect("not poisoned");
        f.iter_mut()
            .map(|s| {
                s.take()
                    .unwrap_or_else(|| ThreadStats::new(self.lock_threads))
            })
            .collect()
    }

    /// Spins so far of each lock thread (live, for interval rows).
    pub fn live_spins(&self) -> Vec<u64> {
        self.live
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|c| c.as_ref().map(|c| c.load().spins).unwrap_or(0))
            .collect()
    }
}

impl Workload for LockScan {
    fn name(&self) -> String {
        format!("lockscan/{}", self.lock_kind)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        if ctx.thread < self.lock_threads {
            let mut lt = LockThread::new(ctx.thread, self.lock_threads);
            self.live.lock().expect("not poisoned")[ctx.thread] = Some(lt.counters());
            let mut measuring = false;
            let mut n = 0u64;
            let batch = if self.cs_ns >= 100 { 1 } else { 64 };
            while !ctx.should_stop() {
                if !measuring && ctx.phase() == Phase::Measure {
                    lt.reset();
                    measuring = true;
                }
                self.lock.lock(&mut lt);
                busy_ns(self.cs_ns);
                // SAFETY: this thread took the lock two lines above and still holds it.
                unsafe { self.lock.unlock(&mut lt) };
                n += 1;
                // Batch the shared progress counter in the hammer: it sits on this thread's
                // own line, but one add per acquisition would still double the loop's
                // stores. The batch left at the window's end is not counted, so with a
                // real critical section (where one add costs nothing) count each one.
                if n == batch {
                    ctx.add_progress(n);
                    n = 0;
                }
            }
            ctx.add_progress(n);
            self.finals.lock().expect("not poisoned")[ctx.thread] = Some(lt.stats());
        } else {
            let mut buf = vec![0u8; self.scan_bytes];
            let mut v = 0u8;
            // Bytes written, counted per chunk: a pass over gigabytes is too coarse a unit
            // for the scanner's rate in a run of a few seconds.
            let mut bytes = 0u64;
            let measuring = ctx.phase() == Phase::Measure;
            // A pass over gigabytes (the first one faulting every page in) takes seconds:
            // look at the stop flag every 16 MiB; only whole passes count.
            'passes: while !ctx.should_stop() {
                v = v.wrapping_add(1);
                for chunk in buf.chunks_mut(16 << 20) {
                    if ctx.should_stop() {
                        break 'passes;
                    }
                    // SAFETY: writes exactly chunk.len() bytes into chunk.
                    unsafe { std::ptr::write_bytes(chunk.as_mut_ptr(), v, chunk.len()) };
                    bytes += chunk.len() as u64;
                }
                std::hint::black_box(&mut buf);
                ctx.add_progress(1);
            }
            if measuring {
                let i = ctx.thread - self.lock_threads;
                let mut f = self.scanned.lock().expect("not poisoned");
                if f.len() <= i {
                    f.resize(i + 1, None);
                }
                f[i] = Some(bytes);
            }
        }
    }
}
