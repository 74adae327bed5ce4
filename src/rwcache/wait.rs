//! The wait loop the rwcache schemes share, instrumented as the lock library's locks are.
//!
//! [`Backoff`] is the `backoff` lock's schedule (`locks/backoff.rs`):
//! PAUSE delays sized in time, doubling from 256 ns to 16 µs until 64 µs were spent, then 4
//! `sched_yield`s, then sleeps doubling from 50 µs to 1 ms. So `rwspin`, `brlock` and the
//! seqlock/rcu writer locks wait exactly like `spin` does, and their counts compare.
//! [`Wait`] holds one acquisition's record in locals (the clock is read only after a
//! collision), folded into the thread's [`ThreadStats`] by [`Wait::record`].

use crate::locks::{BackoffParams, ThreadStats, now_ns, pause_ns};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// PAUSE counts of the default [`BackoffParams`], computed once.
struct Pauses {
    min: u64,
    max: u64,
    limit: u64,
    params: BackoffParams,
}

fn pauses() -> &'static Pauses {
    static P: OnceLock<Pauses> = OnceLock::new();
    P.get_or_init(|| {
        let params = BackoffParams::default();
        let n = |ns: u64| ((ns as f64 / pause_ns()).round() as u64).max(1);
        Pauses {
            min: n(params.min_delay_ns),
            max: n(params.max_delay_ns),
            limit: n(params.spin_limit_ns),
            params,
        }
    })
}

/// One acquisition's wait, in locals.
#[derive(Debug, Default)]
pub struct Wait {
    /// The first attempt failed.
    pub collided: bool,
    start_ns: u64,
    /// PAUSEs spent in delays.
    pub spins: u64,
    /// Yields and sleeps.
    pub backoffs: u64,
    /// Time in yields and sleeps, ns.
    pub sleep_ns: u64,
}

impl Wait {
    /// Marks the collision (first call only) and starts the wait clock.
    #[inline]
    pub fn collide(&mut self) {
        if !self.collided {
            self.collided = true;
            self.start_ns = now_ns();
        }
    }

    /// Folds this acquisition into `s` (one acquisition; wait timed if it collided).
    #[inline]
    pub fn record(&self, s: &mut ThreadStats) {
        let c = &mut s.counts;
        c.acquisitions += 1;
        if self.collided {
            let wait = now_ns().saturating_sub(self.start_ns);
            c.collisions += 1;
            c.spins += self.spins;
            c.backoffs += self.backoffs;
            c.sleep_ns += self.sleep_ns;
            c.wait_ns += wait;
            s.wait_ns_hist.saturating_record(wait.max(1));
        }
    }
}

/// The `backoff` lock's delay schedule for one acquisition.
#[derive(Debug)]
pub struct Backoff {
    delay: u64,
    spun: u64,
    yields: u32,
    sleep_ns: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        let p = pauses();
        Backoff {
            delay: p.min,
            spun: 0,
            yields: 0,
            sleep_ns: p.params.min_sleep_ns,
        }
    }
}

impl Backoff {
    /// Waits one step (a PAUSE delay, a yield or a sleep), recording it in `w`.
    #[inline]
    pub fn step(&mut self, w: &mut Wait) {
        let p = pauses();
        if self.spun < p.limit {
            for _ in 0..self.delay {
                std::hint::spin_loop();
            }
            w.spins += self.delay;
            self.spun += self.delay;
            self.delay = (self.delay * 2).min(p.max);
        } else {
            let t0 = now_ns();
            if self.yields < p.params.yields {
                std::thread::yield_now();
                self.yields += 1;
            } else {
                std::thread::sleep(Duration::from_nanos(self.sleep_ns));
                self.sleep_ns = (self.sleep_ns * 2).min(p.params.max_sleep_ns);
            }
            w.backoffs += 1;
            w.sleep_ns += now_ns().saturating_sub(t0);
        }
    }
}

/// A TTAS writer lock with the backoff schedule (seqlock's and rcu's writer side, brlock's
/// writer flag). Its own line.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct WriterLock {
    locked: AtomicBool,
}

impl WriterLock {
    #[inline]
    fn try_take(&self) -> bool {
        !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::SeqCst)
    }

    /// Takes the lock, recording a collision and the wait in `w`.
    #[inline]
    pub fn lock(&self, w: &mut Wait) {
        if self.try_take() {
            return;
        }
        w.collide();
        let mut b = Backoff::default();
        loop {
            b.step(w);
            if self.try_take() {
                return;
            }
        }
    }

    /// True while some writer holds it (SeqCst: brlock readers pair it with their slot store).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::SeqCst)
    }

    /// True while held (relaxed: for wait loops).
    #[inline]
    pub fn is_locked_relaxed(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// Releases.
    #[inline]
    pub fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

/// Times the writers' lock code (writes are rare and slow, so a fenced clock read around
/// each piece costs little against them; lookups are never timed, see [`super`]).
/// Accumulates [`ticks`], minus [`timer_overhead_ticks`] per piece.
#[derive(Debug, Default)]
pub struct LockTimer {
    t0: u64,
    /// Ticks accumulated since the last `take`.
    acc: u64,
}

impl LockTimer {
    /// Starts a timed piece.
    #[inline]
    pub fn start(&mut self) {
        self.t0 = ticks();
    }

    /// Ends a timed piece, adding its time minus the clock's own cost.
    #[inline]
    pub fn stop(&mut self) {
        let d = ticks().saturating_sub(self.t0);
        self.acc += d.saturating_sub(timer_overhead_ticks());
    }

    /// Returns and clears the accumulated time, ns.
    #[inline]
    pub fn take(&mut self) -> u64 {
        (std::mem::take(&mut self.acc) as f64 * ns_per_tick()) as u64
    }
}

/// True when [`ticks`] reads the TSC (the kernel uses it as its clocksource, so it is
/// invariant and synchronised); else it reads `CLOCK_MONOTONIC` in ns.
fn use_tsc() -> bool {
    static TSC: OnceLock<bool> = OnceLock::new();
    *TSC.get_or_init(|| cfg!(target_arch = "x86_64") && crate::locks::clock_name() == "tsc")
}

/// A timestamp for short sections: `lfence; rdtsc; lfence` on x86_64 with a trusted TSC, so
/// the section's instructions cannot drift across the reads (an unfenced `rdtsc` lets them
/// overlap, which made a two-load section look like 10 ns here); `CLOCK_MONOTONIC` in ns
/// elsewhere. Not `cpuid`: it always exits to the hypervisor in a VM (Intel SDM vol. 3C,
/// "Instructions That Cause VM Exits Unconditionally").
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if use_tsc() {
        // SAFETY: lfence and rdtsc exist on every x86_64 CPU and touch no memory.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            let t = core::arch::x86_64::_rdtsc();
            core::arch::x86_64::_mm_lfence();
            return t;
        }
    }
    crate::locks::monotonic_ns()
}

/// ns per [`ticks`] unit: calibrated once against `CLOCK_MONOTONIC` over 20 ms (1 without
/// the TSC).
pub fn ns_per_tick() -> f64 {
    static NS: OnceLock<f64> = OnceLock::new();
    *NS.get_or_init(|| {
        if !use_tsc() {
            return 1.0;
        }
        let (m0, t0) = (crate::locks::monotonic_ns(), ticks());
        while crate::locks::monotonic_ns() - m0 < 20_000_000 {
            std::hint::spin_loop();
        }
        let (m1, t1) = (crate::locks::monotonic_ns(), ticks());
        if t1 > t0 {
            (m1 - m0) as f64 / (t1 - t0) as f64
        } else {
            1.0
        }
    })
}

/// Cost of timing an empty piece, in [`ticks`]: the median of 2,000 back-to-back pairs,
/// measured once. Subtracted from every timed piece.
pub fn timer_overhead_ticks() -> u64 {
    static OVERHEAD: OnceLock<u64> = OnceLock::new();
    *OVERHEAD.get_or_init(|| {
        let v: Vec<u64> = (0..2000)
            .map(|_| {
                let a = ticks();
                let b = ticks();
                b.saturating_sub(a)
            })
            .collect();
        crate::stats::upper_median(&v)
    })
}

/// Chooses the clock and measures its cost (call before running, so no sample pays it).
pub fn calibrate_timer() {
    ns_per_tick();
    timer_overhead_ticks();
}
