//! `rwlock` (`std::sync::RwLock`) and `parking_lot-rw` (`parking_lot::RwLock`), used as they
//! are. Their wait loops are not ours, so spins and backoffs are not visible: a collision is
//! a failed `try_read` / `try_write`, and its wait is timed around the blocking call.

use super::wait::Wait;
use super::{Common, Entry, Layout, RwThreadStats, Scheme, SchemeKind, lookup, store};

macro_rules! rw_scheme {
    ($name:ident, $handle:ident, $kind:expr, $lock:ty, $new:expr,
     $try_read:ident, $read:ident, $try_write:ident, $write:ident) => {
        /// The table inside the reader/writer lock.
        pub struct $name {
            layout: Layout,
            table: $lock,
        }

        /// Per-thread state.
        pub struct $handle {
            common: Common,
        }

        impl Scheme for $name {
            type Handle = $handle;
            const KIND: SchemeKind = $kind;

            fn new(layout: &Layout, _threads: usize) -> Self {
                super::calibrate();
                $name {
                    layout: layout.clone(),
                    table: $new(layout.initial().into_boxed_slice()),
                }
            }

            fn handle(&self, _thread: usize) -> $handle {
                $handle {
                    common: Common::new(),
                }
            }

            fn common(h: &mut $handle) -> &mut Common {
                &mut h.common
            }

            #[inline]
            fn get(&self, h: &mut $handle, key: u64) -> Option<Entry> {
                let c = &mut h.common;
                let mut w = Wait::default();
                let g = match $try_read(&self.table) {
                    Some(g) => g,
                    None => {
                        w.collide();
                        $read(&self.table)
                    }
                };
                w.record(&mut c.stats.reads);
                let e = lookup(&self.layout, &g, key);
                drop(g);
                e
            }

            fn replace(&self, h: &mut $handle, e: Entry) -> bool {
                let c = &mut h.common;
                let mut w = Wait::default();
                c.timer.start();
                let mut g = match $try_write(&self.table) {
                    Some(g) => g,
                    None => {
                        w.collide();
                        $write(&self.table)
                    }
                };
                c.timer.stop();
                w.record(&mut c.stats.writes);
                let ok = store(&self.layout, &mut g, e);
                c.timer.start();
                drop(g);
                c.timer.stop();
                ok
            }

            fn contents(&self) -> Vec<Entry> {
                $read(&self.table).to_vec()
            }

            fn stats(&self, h: &$handle) -> RwThreadStats {
                h.common.stats.clone()
            }
        }
    };
}

type StdLock = std::sync::RwLock<Box<[Entry]>>;
type PlLock = parking_lot::RwLock<Box<[Entry]>>;

// Nothing panics while holding these locks, so poisoning cannot happen; take the data anyway.
fn std_try_read(l: &StdLock) -> Option<std::sync::RwLockReadGuard<'_, Box<[Entry]>>> {
    match l.try_read() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}
fn std_read(l: &StdLock) -> std::sync::RwLockReadGuard<'_, Box<[Entry]>> {
    l.read().unwrap_or_else(|p| p.into_inner())
}
fn std_try_write(l: &StdLock) -> Option<std::sync::RwLockWriteGuard<'_, Box<[Entry]>>> {
    match l.try_write() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}
fn std_write(l: &StdLock) -> std::sync::RwLockWriteGuard<'_, Box<[Entry]>> {
    l.write().unwrap_or_else(|p| p.into_inner())
}
fn pl_try_read(l: &PlLock) -> Option<parking_lot::RwLockReadGuard<'_, Box<[Entry]>>> {
    l.try_read()
}
fn pl_read(l: &PlLock) -> parking_lot::RwLockReadGuard<'_, Box<[Entry]>> {
    l.read()
}
fn pl_try_write(l: &PlLock) -> Option<parking_lot::RwLockWriteGuard<'_, Box<[Entry]>>> {
    l.try_write()
}
fn pl_write(l: &PlLock) -> parking_lot::RwLockWriteGuard<'_, Box<[Entry]>> {
    l.write()
}

rw_scheme!(
    StdRw,
    StdRwHandle,
    SchemeKind::RwLock,
    StdLock,
    StdLock::new,
    std_try_read,
    std_read,
    std_try_write,
    std_write
);
rw_scheme!(
    ParkingLotRw,
    ParkingLotRwHandle,
    SchemeKind::ParkingLotRw,
    PlLock,
    PlLock::new,
    pl_try_read,
    pl_read,
    pl_try_write,
    pl_write
);
