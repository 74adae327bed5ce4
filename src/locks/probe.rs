//! Wait-loop hooks. Each algorithm is written once, generic over [`Probe`]; with [`NoProbe`]
//! every hook compiles to nothing, so the uninstrumented lock is the bare algorithm.

use super::clock::ticks;

/// What an algorithm reports while acquiring.
pub(crate) trait Probe {
    /// False for [`NoProbe`]: lets an algorithm skip work done only to observe itself.
    const ENABLED: bool;
    /// The first attempt found the lock held (called at most once per acquisition).
    fn collision(&mut self);
    /// `n` wait-loop iterations.
    fn spins(&mut self, n: u64);
    /// About to give up the CPU (yield, sleep, futex wait).
    fn backoff_begin(&mut self);
    /// Back from giving up the CPU.
    fn backoff_end(&mut self);
}

/// Records nothing.
pub(crate) struct NoProbe;

impl Probe for NoProbe {
    const ENABLED: bool = false;
    #[inline(always)]
    fn collision(&mut self) {}
    #[inline(always)]
    fn spins(&mut self, _: u64) {}
    #[inline(always)]
    fn backoff_begin(&mut self) {}
    #[inline(always)]
    fn backoff_end(&mut self) {}
}

/// Records one acquisition's wait in locals (registers); folded into the thread's counters
/// by the wrapper. Sleeps are always timed (a clock read is nothing next to a syscall); the
/// collision is timed only when `timed` (stats mode `waits` or `full`), in raw [`ticks`]
/// converted to ns after the release.
pub(crate) struct WaitProbe {
    /// Read the clock at the collision (a constant per lock type, so the test folds away).
    timed: bool,
    pub collided: bool,
    /// When the collision happened, [`ticks`] (0 unless `timed`).
    pub start_ticks: u64,
    pub spins: u64,
    pub backoffs: u64,
    /// Time given up, [`ticks`].
    pub sleep_ticks: u64,
    sleep_start: u64,
}

impl WaitProbe {
    #[inline(always)]
    pub fn new(timed: bool) -> Self {
        WaitProbe {
            timed,
            collided: false,
            start_ticks: 0,
            spins: 0,
            backoffs: 0,
            sleep_ticks: 0,
            sleep_start: 0,
        }
    }
}

impl Probe for WaitProbe {
    const ENABLED: bool = true;
    #[inline(always)]
    fn collision(&mut self) {
        self.collided = true;
        if self.timed {
            self.start_ticks = ticks();
        }
    }
    #[inline(always)]
    fn spins(&mut self, n: u64) {
        self.spins += n;
    }
    #[inline]
    fn backoff_begin(&mut self) {
        self.backoffs += 1;
        self.sleep_start = ticks();
    }
    #[inline]
    fn backoff_end(&mut self) {
        self.sleep_ticks += ticks().saturating_sub(self.sleep_start);
    }
}
