//! `tas` and `ttas`: the barging spinlocks. Lowest fast-path latency, no fairness: a waiter can
//! be bypassed forever (CK `ck_spinlock_fas`; Dice, "Malthusian Locks", REFERENCE §2.1).

use super::probe::Probe;
use super::{LockKind, LockThread, RawLock};
use std::sync::atomic::{AtomicBool, Ordering};

/// Test-and-set: every attempt is an `xchg`, so waiters keep the line bouncing in exclusive
/// state; PAUSE between attempts as CK's `fas` does.
#[derive(Default)]
pub(crate) struct Tas {
    locked: AtomicBool,
}

impl RawLock for Tas {
    fn kind(&self) -> LockKind {
        LockKind::Tas
    }

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, _: &mut LockThread) {
        if !self.locked.swap(true, Ordering::Acquire) {
            return;
        }
        p.collision();
        let mut spins = 0;
        loop {
            std::hint::spin_loop();
            spins += 1;
            if !self.locked.swap(true, Ordering::Acquire) {
                break;
            }
        }
        p.spins(spins);
    }

    #[inline]
    unsafe fn release(&self, _: &mut LockThread) {
        self.locked.store(false, Ordering::Release);
    }
}

/// Test-and-test-and-set, seed 000's lock: `if (Lock == 0 && InterlockedExchange(&Lock, 1) ==
/// 0)` else PAUSE and retry. Waiters spin on a shared (read-only) copy of the line and only
/// `xchg` when it looks free.
#[derive(Default)]
pub(crate) struct Ttas {
    locked: AtomicBool,
}

impl RawLock for Ttas {
    fn kind(&self) -> LockKind {
        LockKind::Ttas
    }

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, _: &mut LockThread) {
        if !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire) {
            return;
        }
        p.collision();
        let mut spins = 0;
        loop {
            std::hint::spin_loop();
            spins += 1;
            if !self.locked.load(Ordering::Relaxed) && !self.locked.swap(true, Ordering::Acquire) {
                break;
            }
        }
        p.spins(spins);
    }

    #[inline]
    unsafe fn release(&self, _: &mut LockThread) {
        self.locked.store(false, Ordering::Release);
    }
}
