//! `ticket`: FIFO by a take-a-number counter. Every waiter spins on the one `now_serving`
//! word, so each handoff invalidates all waiters; and when the next ticket's owner is
//! descheduled nobody can proceed, hence the collapse under oversubscription (Boyd-Wickizer et
//! al. 2012; Ouyang and Lange, VEE 2013; REFERENCE §2.2).

use super::probe::Probe;
use super::{LockKind, LockThread, RawLock};
use std::sync::atomic::{AtomicU32, Ordering};

/// Both counters on one line, as in CK's `ck_spinlock_ticket` and Linux's old ticket lock.
#[derive(Default)]
pub(crate) struct Ticket {
    next: AtomicU32,
    serving: AtomicU32,
}

impl RawLock for Ticket {
    fn kind(&self) -> LockKind {
        LockKind::Ticket
    }

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, _: &mut LockThread) {
        // Relaxed: the ticket only orders us; the Acquire load of `serving` synchronises with
        // the previous holder's Release store.
        let mine = self.next.fetch_add(1, Ordering::Relaxed);
        if self.serving.load(Ordering::Acquire) == mine {
            return;
        }
        p.collision();
        let mut spins = 0;
        loop {
            std::hint::spin_loop();
            spins += 1;
            if self.serving.load(Ordering::Acquire) == mine {
                break;
            }
        }
        p.spins(spins);
    }

    #[inline]
    unsafe fn release(&self, _: &mut LockThread) {
        // Only the holder writes `serving`, so load + store instead of a locked add.
        let s = self.serving.load(Ordering::Relaxed);
        self.serving.store(s.wrapping_add(1), Ordering::Release);
    }

    fn queue_tail(&self) -> Option<usize> {
        Some(self.next.load(Ordering::Relaxed) as usize)
    }
}
