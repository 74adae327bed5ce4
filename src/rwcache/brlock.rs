//! `brlock`: a big-reader lock (Linux's old brlock, ck_brlock, crossbeam's `ShardedLock`):
//! each thread announces its reads in its own slot, on its own cache line, so readers on
//! different CPUs never write a shared line; a writer takes the writer flag and then waits
//! for every slot to drain. Reads get cheap, writes cost O(threads).
//!
//! Reader: `slot += 1` (SeqCst), then check the writer flag (SeqCst); if a writer is there,
//! `slot -= 1` and wait for it (a collision). Writer: take the flag (a [`WriterLock`], SeqCst
//! swap), then wait until every slot reads 0. The SeqCst store/load pairs on both sides are
//! Dekker's handshake: either the reader sees the flag or the writer sees the slot. Slots
//! are counters, so a thread index beyond the slot count (shared slot) stays correct.

use super::wait::{Backoff, Wait, WriterLock};
use super::{Common, Entry, Layout, RwThreadStats, Scheme, SchemeKind, Slots, lookup, store};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// The table under a big-reader lock.
pub struct BrLock {
    layout: Layout,
    writer: WriterLock,
    readers: Box<[CachePadded<AtomicU64>]>,
    slots: Slots,
}

/// Per-thread state: the reader slot index.
pub struct BrLockHandle {
    common: Common,
    slot: usize,
}

impl BrLock {
    #[inline]
    fn read_lock(&self, slot: &AtomicU64, w: &mut Wait) {
        loop {
            slot.fetch_add(1, Ordering::SeqCst);
            if !self.writer.is_locked() {
                return;
            }
            slot.fetch_sub(1, Ordering::Release);
            w.collide();
            let mut b = Backoff::default();
            while self.writer.is_locked_relaxed() {
                b.step(w);
            }
        }
    }

    fn write_lock(&self, w: &mut Wait) {
        self.writer.lock(w);
        for r in self.readers.iter() {
            if r.load(Ordering::SeqCst) != 0 {
                w.collide();
                let mut b = Backoff::default();
                while r.load(Ordering::SeqCst) != 0 {
                    b.step(w);
                }
            }
        }
        std::sync::atomic::fence(Ordering::Acquire);
    }
}

impl Scheme for BrLock {
    type Handle = BrLockHandle;
    const KIND: SchemeKind = SchemeKind::BrLock;

    fn new(layout: &Layout, threads: usize) -> Self {
        super::calibrate();
        BrLock {
            layout: layout.clone(),
            writer: WriterLock::default(),
            readers: (0..threads.max(1))
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            slots: Slots::new(layout),
        }
    }

    fn handle(&self, thread: usize) -> BrLockHandle {
        BrLockHandle {
            common: Common::new(),
            slot: thread % self.readers.len(),
        }
    }

    fn common(h: &mut BrLockHandle) -> &mut Common {
        &mut h.common
    }

    #[inline]
    fn get(&self, h: &mut BrLockHandle, key: u64) -> Option<Entry> {
        let slot = &self.readers[h.slot];
        let c = &mut h.common;
        let mut w = Wait::default();
        self.read_lock(slot, &mut w);
        w.record(&mut c.stats.reads);
        // SAFETY: our slot is non-zero and no writer holds the flag, so writers wait.
        let e = lookup(&self.layout, unsafe { self.slots.read() }, key);
        slot.fetch_sub(1, Ordering::Release);
        e
    }

    fn replace(&self, h: &mut BrLockHandle, e: Entry) -> bool {
        let c = &mut h.common;
        let mut w = Wait::default();
        c.timer.start();
        self.write_lock(&mut w);
        c.timer.stop();
        w.record(&mut c.stats.writes);
        // SAFETY: flag held and every reader slot drained.
        let ok = store(&self.layout, unsafe { self.slots.write() }, e);
        c.timer.start();
        self.writer.unlock();
        c.timer.stop();
        ok
    }

    fn contents(&self) -> Vec<Entry> {
        let mut w = Wait::default();
        self.write_lock(&mut w);
        // SAFETY: exclusive.
        let v = unsafe { self.slots.read() }.to_vec();
        self.writer.unlock();
        v
    }

    fn stats(&self, h: &BrLockHandle) -> RwThreadStats {
        h.common.stats.clone()
    }
}
