//! `parking_lot`: `parking_lot::RawMutex` through `lock_api`. Barging with eventual fairness
//! (a fair handoff forced every ~0.5 ms), spin 2/4/8 hints, yield, then park (parking_lot `core/src/spinwait.rs`,
//! `core/src/parking_lot.rs`).
//!
//! Its internals are opaque here: a collision is a failed `try_lock`, and the whole `lock()`
//! that follows is timed as wait; spins, backoffs and sleep time stay 0, so `spin_ns` includes
//! parked time for this lock.

use super::probe::Probe;
use super::{LockKind, LockThread, NO_OWNER, RawLock};
use parking_lot::lock_api::RawMutex as _;

pub(crate) struct ParkingLot {
    raw: parking_lot::RawMutex,
}

impl Default for ParkingLot {
    fn default() -> Self {
        ParkingLot {
            raw: parking_lot::RawMutex::INIT,
        }
    }
}

impl RawLock for ParkingLot {
    fn kind(&self) -> LockKind {
        LockKind::ParkingLot
    }

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, _: &mut LockThread) -> u32 {
        if !P::ENABLED {
            self.raw.lock();
            return NO_OWNER;
        }
        if self.raw.try_lock() {
            return NO_OWNER;
        }
        p.collision();
        self.raw.lock();
        NO_OWNER
    }

    #[inline]
    unsafe fn release(&self, _: &mut LockThread) {
        // SAFETY: the caller holds the lock (Lock::unlock's contract), on this thread.
        unsafe { self.raw.unlock() }
    }
}
