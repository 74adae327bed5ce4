//! Wait-loop hooks. Each algorithm is written once, generic over [`Probe`]; with [`NoProbe`]
//! every hook compiles to nothing, so the uninstrumented lock is the bare algorithm.

use super::clock::now_ns;

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
/// once, after acquiring. The clock is read only on the slow path.
#[derive(Default)]
pub(crate) struct WaitProbe {
    pub collided: bool,
    pub start_ns: u64,
    pub spins: u64,
    pub backoffs: u64,
    pub sleep_ns: u64,
    sleep_start_ns: u64,
}

impl Probe for WaitProbe {
    const ENABLED: bool = true;
    #[inline(always)]
    fn collision(&mut self) {
        self.collided = true;
        self.start_ns = now_ns();
    }
    #[inline(always)]
    fn spins(&mut self, n: u64) {
        self.spins += n;
    }
    #[inline]
    fn backoff_begin(&mut self) {
        self.backoffs += 1;
        self.sleep_start_ns = now_ns();
    }
    #[inline]
    fn backoff_end(&mut self) {
        self.sleep_ns += now_ns().saturating_sub(self.sleep_start_ns);
    }
}
