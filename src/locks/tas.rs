//! `tas` and `ttas`: the barging spinlocks. Lowest fast-path latency, no fairness: a waiter can
//! be bypassed forever (CK `ck_spinlock_fas`; Dice, "Malthusian Locks", EuroSys 2017).

use super::probe::Probe;
use super::{LockKind, LockThread, RawLock, owner_word};
use std::sync::atomic::{AtomicU32, Ordering};

/// Test-and-set: every attempt is an `xchg`, so waiters keep the line bouncing in exclusive
/// state; PAUSE between attempts as CK's `fas` does. The word is an [`owner_word`]: a failed
/// exchange writes its own index over the holder's, which the holder's release overwrites.
#[derive(Default)]
pub(crate) struct Tas {
    word: AtomicU32,
}

impl RawLock for Tas {
    fn kind(&self) -> LockKind {
        LockKind::Tas
    }

    const TRACKS_OWNER: bool = true;

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32 {
        let mine = owner_word::locked_by(t.index);
        let old = self.word.swap(mine, Ordering::Acquire);
        if !owner_word::is_locked(old) {
            return owner_word::last_owner(old);
        }
        p.collision();
        let mut spins = 0;
        loop {
            std::hint::spin_loop();
            spins += 1;
            super::yield_if_stopping(spins);
            let old = self.word.swap(mine, Ordering::Acquire);
            if !owner_word::is_locked(old) {
                p.spins(spins);
                return owner_word::last_owner(old);
            }
        }
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        self.word
            .store(owner_word::released_by(t.index), Ordering::Release);
    }
}

/// Test-and-test-and-set, the lock of the classic scanner-vs-lock Windows test: `if (Lock == 0 && InterlockedExchange(&Lock, 1) ==
/// 0)` else PAUSE and retry. Waiters spin on a shared (read-only) copy of the line and only
/// `xchg` when it looks free. The word is an [`owner_word`].
#[derive(Default)]
pub(crate) struct Ttas {
    word: AtomicU32,
}

impl Ttas {
    /// One test-and-test-and-set: the previous holder if this thread got the lock.
    #[inline(always)]
    pub(crate) fn try_take(word: &AtomicU32, mine: u32) -> Option<u32> {
        if owner_word::is_locked(word.load(Ordering::Relaxed)) {
            return None;
        }
        let old = word.swap(mine, Ordering::Acquire);
        (!owner_word::is_locked(old)).then(|| owner_word::last_owner(old))
    }
}

impl RawLock for Ttas {
    fn kind(&self) -> LockKind {
        LockKind::Ttas
    }

    const TRACKS_OWNER: bool = true;

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32 {
        let mine = owner_word::locked_by(t.index);
        if let Some(prev) = Ttas::try_take(&self.word, mine) {
            return prev;
        }
        p.collision();
        let mut spins = 0;
        loop {
            std::hint::spin_loop();
            spins += 1;
            super::yield_if_stopping(spins);
            if let Some(prev) = Ttas::try_take(&self.word, mine) {
                p.spins(spins);
                return prev;
            }
        }
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        self.word
            .store(owner_word::released_by(t.index), Ordering::Release);
    }
}
