//! `seqlock`: readers write nothing. A writer makes the sequence odd, writes, makes it even
//! again; a reader copies the entry out between two reads of the sequence and copies again
//! if it changed (a *retry*) or waits while it is odd (a collision). One sequence for the
//! whole table, on its own line, read-only while nobody writes, so it stays in every
//! reader's cache; writers serialise on a [`WriterLock`].
//!
//! Memory order (Boehm, "Can seqlocks get along with programming language memory models?",
//! MSPC 2012): the entry's words are `AtomicU64`s accessed relaxed, so racing copies are not
//! undefined behaviour; writer `seq = odd; fence(Release); words`, reader `words;
//! fence(Acquire); seq` — if a reader saw any new word it sees the odd or newer sequence.
//! Keys never change (a write replaces the value of an existing key), so probing is safe
//! without validation; the copied value is what gets validated.

use super::wait::{Backoff, Wait, WriterLock};
use super::{Common, Entry, Layout, RwThreadStats, Scheme, SchemeKind};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering, fence};

/// The table as atomic words under one sequence counter.
pub struct SeqLock {
    layout: Layout,
    seq: CachePadded<AtomicU64>,
    writer: WriterLock,
    words: Box<[[AtomicU64; 6]]>,
}

/// Per-thread state.
pub struct SeqLockHandle {
    common: Common,
}

impl SeqLock {
    #[inline]
    fn copy(&self, slot: usize) -> Entry {
        let w = &self.words[slot];
        Entry::from_words(std::array::from_fn(|i| w[i].load(Ordering::Relaxed)))
    }

    /// Waits for an even sequence; returns it.
    #[inline]
    fn read_begin(&self, w: &mut Wait) -> u64 {
        let s = self.seq.load(Ordering::Acquire);
        if s & 1 == 0 {
            return s;
        }
        w.collide();
        let mut b = Backoff::default();
        loop {
            b.step(w);
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 == 0 {
                return s;
            }
        }
    }

    #[inline]
    fn read_retry(&self, s: u64) -> bool {
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) != s
    }
}

impl Scheme for SeqLock {
    type Handle = SeqLockHandle;
    const KIND: SchemeKind = SchemeKind::SeqLock;

    fn new(layout: &Layout, _threads: usize) -> Self {
        super::calibrate();
        SeqLock {
            layout: layout.clone(),
            seq: CachePadded::new(AtomicU64::new(0)),
            writer: WriterLock::default(),
            words: layout
                .initial()
                .into_iter()
                .map(|e| e.words().map(AtomicU64::new))
                .collect(),
        }
    }

    fn handle(&self, _thread: usize) -> SeqLockHandle {
        SeqLockHandle {
            common: Common::new(),
        }
    }

    fn common(h: &mut SeqLockHandle) -> &mut Common {
        &mut h.common
    }

    #[inline]
    fn get(&self, h: &mut SeqLockHandle, key: u64) -> Option<Entry> {
        let c = &mut h.common;
        let mut w = Wait::default();
        let slot = self
            .layout
            .find(key, |s| self.words[s][0].load(Ordering::Relaxed))?;
        loop {
            let s = self.read_begin(&mut w);
            let e = self.copy(slot);
            let retry = self.read_retry(s);
            if !retry {
                w.record(&mut c.stats.reads);
                return Some(e);
            }
            c.stats.read_retries += 1;
        }
    }

    fn replace(&self, h: &mut SeqLockHandle, e: Entry) -> bool {
        let c = &mut h.common;
        let Some(slot) = self
            .layout
            .find(e.key, |s| self.words[s][0].load(Ordering::Relaxed))
        else {
            return false;
        };
        let mut w = Wait::default();
        c.timer.start();
        self.writer.lock(&mut w);
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        c.timer.stop();
        w.record(&mut c.stats.writes);
        for (a, v) in self.words[slot].iter().zip(e.words()) {
            a.store(v, Ordering::Relaxed);
        }
        c.timer.start();
        self.seq.store(s + 2, Ordering::Release);
        self.writer.unlock();
        c.timer.stop();
        true
    }

    fn contents(&self) -> Vec<Entry> {
        let mut w = Wait::default();
        self.writer.lock(&mut w);
        let v = (0..self.words.len()).map(|s| self.copy(s)).collect();
        self.writer.unlock();
        v
    }

    fn stats(&self, h: &SeqLockHandle) -> RwThreadStats {
        h.common.stats.clone()
    }
}
