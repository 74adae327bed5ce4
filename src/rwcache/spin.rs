//! `spin`: every lookup and every replacement takes the lock library's `backoff` spinlock —
//! SQL Server's `CMED_HASH_SET` before CU2: readers exclude each other.

use super::{Common, Entry, Layout, RwThreadStats, Scheme, SchemeKind, Slots, lookup, store};
use crate::locks::{Lock, LockKind, LockThread, StatsMode, new_lock};

/// The table under one `backoff` lock.
pub struct Spin {
    layout: Layout,
    lock: Box<dyn Lock>,
    slots: Slots,
    threads: usize,
}

/// Per-thread state: one `LockThread` per side, so reads and writes count apart.
pub struct SpinHandle {
    common: Common,
    read: LockThread,
    write: LockThread,
}

impl Scheme for Spin {
    type Handle = SpinHandle;
    const KIND: SchemeKind = SchemeKind::Spin;

    fn new(layout: &Layout, threads: usize) -> Self {
        super::calibrate();
        Spin {
            layout: layout.clone(),
            // `Waits`: every other scheme times its waits (rwcache/wait.rs), so this one must
            // too for the wait and lock-CPU columns to compare.
            lock: new_lock(LockKind::Backoff, StatsMode::Waits),
            slots: Slots::new(layout),
            threads,
        }
    }

    fn handle(&self, thread: usize) -> SpinHandle {
        SpinHandle {
            common: Common::new(),
            read: LockThread::new(thread, self.threads),
            write: LockThread::new(thread, self.threads),
        }
    }

    fn common(h: &mut SpinHandle) -> &mut Common {
        &mut h.common
    }

    #[inline]
    fn get(&self, h: &mut SpinHandle, key: u64) -> Option<Entry> {
        self.lock.lock(&mut h.read);
        // SAFETY: we hold the lock.
        let e = lookup(&self.layout, unsafe { self.slots.read() }, key);
        // SAFETY: taken above by this thread.
        unsafe { self.lock.unlock(&mut h.read) };
        e
    }

    fn replace(&self, h: &mut SpinHandle, e: Entry) -> bool {
        h.common.timer.start();
        self.lock.lock(&mut h.write);
        h.common.timer.stop();
        // SAFETY: we hold the lock.
        let ok = store(&self.layout, unsafe { self.slots.write() }, e);
        h.common.timer.start();
        // SAFETY: taken above by this thread.
        unsafe { self.lock.unlock(&mut h.write) };
        h.common.timer.stop();
        ok
    }

    fn contents(&self) -> Vec<Entry> {
        let mut t = LockThread::new(0, 1);
        self.lock.lock(&mut t);
        // SAFETY: we hold the lock.
        let v = unsafe { self.slots.read() }.to_vec();
        // SAFETY: taken above.
        unsafe { self.lock.unlock(&mut t) };
        v
    }

    fn stats(&self, h: &SpinHandle) -> RwThreadStats {
        let mut s = h.common.stats.clone();
        s.reads.merge(&h.read.stats());
        s.writes.merge(&h.write.stats());
        s
    }
}
