//! `none`: the reference for measuring lock cost by subtraction — the same table, the same
//! [`lookup`] / [`store`] and the same per-lookup bookkeeping as the other schemes, with no
//! lock at all. Single thread only, and not selectable on the command line.
//!
//! Sound without a lock because the table is *owned* by the one live handle: [`Scheme::handle`]
//! moves it out of the cache (panicking if another handle holds it) and the handle's `Drop`
//! moves it back, so no two threads can ever reach it. The hot path touches only the handle.

use super::{Common, Entry, Layout, RwThreadStats, Scheme, SchemeKind, lookup, store};
use std::sync::{Arc, Mutex};

/// The table, parked here while no handle holds it.
type Parked = Arc<Mutex<Option<Box<[Entry]>>>>;

/// No lock: the reference scheme (1 thread).
pub struct Unlocked {
    layout: Layout,
    parked: Parked,
}

/// The only handle: it owns the table while it lives.
pub struct UnlockedHandle {
    common: Common,
    table: Option<Box<[Entry]>>,
    parked: Parked,
}

impl Drop for UnlockedHandle {
    fn drop(&mut self) {
        if let Some(t) = self.table.take() {
            *self.parked.lock().unwrap_or_else(|p| p.into_inner()) = Some(t);
        }
    }
}

impl UnlockedHandle {
    #[inline]
    fn table(&mut self) -> &mut [Entry] {
        self.table
            .as_deref_mut()
            .expect("the handle owns the table")
    }
}

impl Scheme for Unlocked {
    type Handle = UnlockedHandle;
    const KIND: SchemeKind = SchemeKind::Unlocked;

    /// # Panics
    /// When `threads` is not 1: the reference has no lock.
    fn new(layout: &Layout, threads: usize) -> Self {
        assert_eq!(threads, 1, "`none` (no lock) runs single-threaded only");
        super::calibrate();
        Unlocked {
            layout: layout.clone(),
            parked: Arc::new(Mutex::new(Some(layout.initial().into_boxed_slice()))),
        }
    }

    /// # Panics
    /// While another handle is alive (a second thread).
    fn handle(&self, _thread: usize) -> UnlockedHandle {
        let table = self.parked.lock().unwrap_or_else(|p| p.into_inner()).take();
        assert!(
            table.is_some(),
            "`none` (no lock) has one handle at a time: single thread only"
        );
        UnlockedHandle {
            common: Common::new(),
            table,
            parked: Arc::clone(&self.parked),
        }
    }

    fn common(h: &mut UnlockedHandle) -> &mut Common {
        &mut h.common
    }

    #[inline]
    fn get(&self, h: &mut UnlockedHandle, key: u64) -> Option<Entry> {
        h.common.stats.reads.counts.acquisitions += 1;
        let t = h.table.as_deref().expect("the handle owns the table");
        lookup(&self.layout, t, key)
    }

    fn replace(&self, h: &mut UnlockedHandle, e: Entry) -> bool {
        h.common.stats.writes.counts.acquisitions += 1;
        store(&self.layout, h.table(), e)
    }

    /// # Panics
    /// While a handle is alive.
    fn contents(&self) -> Vec<Entry> {
        self.parked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
            .expect("`none`: contents read while a handle holds the table")
            .to_vec()
    }

    fn stats(&self, h: &UnlockedHandle) -> RwThreadStats {
        h.common.stats.clone()
    }
}
