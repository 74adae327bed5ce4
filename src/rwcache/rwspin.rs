//! `rwspin`: a reader/writer spinlock in one word — SQL Server 2016 CU2's
//! `LOCK_RW_CMED_HASH_SET`. Readers add to a count; a writer needs the count at zero.
//!
//! Word: bit 0 `WRITER` (held), bit 1 `WAITING` (a writer wants it: writer preference, new
//! readers back off so a writer is not starved by overlapping readers), readers counted from
//! bit 2, as ck_rwlock's writer-biased lock. Every reader does a `fetch_add` and a `fetch_sub`
//! on the one word, so with two reading threads the line moves between their caches on
//! every lookup: the cost this scheme keeps from `spin`, and the one `brlock`, `seqlock`
//! and `rcu` remove (their readers write nothing shared).
//! Waits use the `backoff` lock's schedule ([`super::wait::Backoff`]).

use super::wait::{Backoff, Wait};
use super::{Common, Entry, Layout, RwThreadStats, Scheme, SchemeKind, Slots, lookup, store};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

const WRITER: u64 = 1;
const WAITING: u64 = 2;
const READER: u64 = 4;

/// The table under a reader/writer spinlock.
pub struct RwSpin {
    layout: Layout,
    state: CachePadded<AtomicU64>,
    slots: Slots,
}

/// Per-thread state.
pub struct RwSpinHandle {
    common: Common,
}

impl RwSpin {
    #[inline]
    fn read_lock(&self, w: &mut Wait) {
        loop {
            let s = self.state.fetch_add(READER, Ordering::Acquire);
            if s & (WRITER | WAITING) == 0 {
                return;
            }
            self.state.fetch_sub(READER, Ordering::Relaxed);
            w.collide();
            let mut b = Backoff::default();
            while self.state.load(Ordering::Relaxed) & (WRITER | WAITING) != 0 {
                b.step(w);
            }
        }
    }

    #[inline]
    fn read_unlock(&self) {
        self.state.fetch_sub(READER, Ordering::Release);
    }

    fn write_lock(&self, w: &mut Wait) {
        let mut b: Option<Backoff> = None;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & WRITER == 0 && s < READER {
                // Free of readers and writers: take it, clearing WAITING (a still-waiting
                // writer sets it again on its next round).
                if self
                    .state
                    .compare_exchange_weak(s, WRITER, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            if s & WAITING == 0 {
                self.state.fetch_or(WAITING, Ordering::Relaxed);
            }
            w.collide();
            b.get_or_insert_with(Backoff::default).step(w);
        }
    }

    fn write_unlock(&self) {
        self.state.fetch_sub(WRITER, Ordering::Release);
    }
}

impl Scheme for RwSpin {
    type Handle = RwSpinHandle;
    const KIND: SchemeKind = SchemeKind::RwSpin;

    fn new(layout: &Layout, _threads: usize) -> Self {
        super::calibrate();
        RwSpin {
            layout: layout.clone(),
            state: CachePadded::new(AtomicU64::new(0)),
            slots: Slots::new(layout),
        }
    }

    fn handle(&self, _thread: usize) -> RwSpinHandle {
        RwSpinHandle {
            common: Common::new(),
        }
    }

    fn common(h: &mut RwSpinHandle) -> &mut Common {
        &mut h.common
    }

    #[inline]
    fn get(&self, h: &mut RwSpinHandle, key: u64) -> Option<Entry> {
        let c = &mut h.common;
        let mut w = Wait::default();
        self.read_lock(&mut w);
        w.record(&mut c.stats.reads);
        // SAFETY: read side held; writers wait for the count to reach zero.
        let e = lookup(&self.layout, unsafe { self.slots.read() }, key);
        self.read_unlock();
        e
    }

    fn replace(&self, h: &mut RwSpinHandle, e: Entry) -> bool {
        let c = &mut h.common;
        let mut w = Wait::default();
        c.timer.start();
        self.write_lock(&mut w);
        c.timer.stop();
        w.record(&mut c.stats.writes);
        // SAFETY: write side held: no reader, no other writer.
        let ok = store(&self.layout, unsafe { self.slots.write() }, e);
        c.timer.start();
        self.write_unlock();
        c.timer.stop();
        ok
    }

    fn contents(&self) -> Vec<Entry> {
        let mut w = Wait::default();
        self.read_lock(&mut w);
        // SAFETY: read side held.
        let v = unsafe { self.slots.read() }.to_vec();
        self.read_unlock();
        v
    }

    fn stats(&self, h: &RwSpinHandle) -> RwThreadStats {
        h.common.stats.clone()
    }
}
