//! `ticket`: FIFO by a take-a-number counter. Every waiter spins on the one `now_serving`
//! word, so each handoff invalidates all waiters; and when the next ticket's owner is
//! descheduled nobody can proceed, hence the collapse under oversubscription (Boyd-Wickizer et
//! al. 2012; Ouyang and Lange, VEE 2013).

use super::probe::Probe;
use super::{LockKind, LockThread, NO_OWNER, RawLock};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Both counters on one line, as in CK's `ck_spinlock_ticket` and Linux's old ticket lock.
/// `serving` also carries the last holder (high half: index + 1, 0 = never held), written by
/// the release store that exists anyway, so attributing a handoff adds no store to the line
/// every waiter spins on.
#[derive(Default)]
pub(crate) struct Ticket {
    next: AtomicU32,
    serving: AtomicU64,
}

/// The ticket now served, from the `serving` word.
#[inline(always)]
fn served(w: u64) -> u32 {
    w as u32
}

/// The last holder, from the `serving` word.
#[inline(always)]
fn last_owner(w: u64) -> u32 {
    match (w >> 32) as u32 {
        0 => NO_OWNER,
        n => n - 1,
    }
}

impl RawLock for Ticket {
    fn kind(&self) -> LockKind {
        LockKind::Ticket
    }

    const TRACKS_OWNER: bool = true;

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, _: &mut LockThread) -> u32 {
        // Relaxed: the ticket only orders us; the Acquire load of `serving` synchronises with
        // the previous holder's Release store.
        let mine = self.next.fetch_add(1, Ordering::Relaxed);
        let w = self.serving.load(Ordering::Acquire);
        if served(w) == mine {
            return last_owner(w);
        }
        p.collision();
        let mut spins = 0;
        loop {
            std::hint::spin_loop();
            spins += 1;
            super::yield_if_stopping(spins);
            let w = self.serving.load(Ordering::Acquire);
            if served(w) == mine {
                p.spins(spins);
                return last_owner(w);
            }
        }
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        // Only the holder writes `serving`, so load + store instead of a locked add.
        let next = served(self.serving.load(Ordering::Relaxed)).wrapping_add(1);
        let owner = u64::from(t.index) + 1;
        self.serving
            .store(owner << 32 | u64::from(next), Ordering::Release);
    }

    fn queue_tail(&self) -> Option<usize> {
        Some(self.next.load(Ordering::Relaxed) as usize)
    }
}
