//! The lock library: every lock smtlab measures, behind one small object-safe trait, each
//! with the same optional instrumentation.
//!
//! Topology-free and engine-free on purpose: a lock knows thread *indices*, never CPUs, so
//! callers classify handoffs by topology afterwards (`handoffs_from[prev]` + the plan's CPUs).
//!
//! Usage: build a lock with `new_lock(kind, stats)`, give each thread its own `LockThread`
//! (index, stats block, MCS queue nodes), call `lock` / `unlock` (or the safe
//! `LockExt::with` / `guard`, or wrap data in `Protected`); at the end collect each
//! `LockThread::stats()`, merge them (`ThreadStats::total`) and take the serialisable
//! `summary()`.
//!
//! Instrumentation (`StatsMode`) is chosen when the lock is built and compiled into its type
//! (a const generic), so with `StatsMode::Off` the hot path contains no stats code at all.
//! `Counters` reads the clock only after a collision (the slow path); `Full` adds two clock
//! reads per acquisition for hold times.
//!
//! Files: `kind.rs` names the locks, `stats.rs` owns counters/histograms/summaries, `probe.rs`
//! the wait-loop hooks, `clock.rs` the clock and PAUSE calibration, then one file per
//! algorithm family: `tas.rs` (tas, ttas), `backoff.rs`, `ticket.rs`, `mcs.rs`, `futex.rs`
//! (mutex, adaptive), `parking.rs` (parking_lot).

mod backoff;
mod clock;
mod futex;
mod kind;
mod mcs;
mod parking;
mod probe;
mod stats;
mod tas;
mod ticket;

pub use backoff::BackoffParams;
pub use clock::{calibrate, clock_name, monotonic_ns, now_ns, pause_ns};
pub use kind::{LockKind, UnknownLockKind};
pub use stats::{Counts, LONG_HOLD_NS, LockCounters, LockSummary, ThreadStats, new_histogram};

use mcs::NodePool;
use probe::{NoProbe, Probe, WaitProbe};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// How much a lock records. Chosen at construction; compiled into the lock's type.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum StatsMode {
    /// Nothing: the hot path is the bare algorithm.
    Off,
    /// Acquisitions, collisions, spins, backoffs, handoffs; wait and sleep time are timed only
    /// on the slow path (after a collision), so uncontended acquisitions read no clock.
    #[default]
    Counters,
    /// `Counters` plus hold time of every acquisition (two clock reads per acquisition) and
    /// long holds (> [`LONG_HOLD_NS`]), the lock-holder-preemption evidence.
    Full,
}

/// Construction options beyond the kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LockOptions {
    /// What to record.
    pub stats: StatsMode,
    /// `adaptive`: how long to spin before parking, in ns (default [`ADAPTIVE_SPIN_NS`]).
    pub adaptive_spin_ns: u64,
    /// `backoff`: delays and thresholds.
    pub backoff: BackoffParams,
}

/// Default spin budget of the `adaptive` lock: about one context switch, the break-even point
/// of spin-then-park (LiTL's 2,700 iterations ≈ 9 µs, REFERENCE §2.4).
pub const ADAPTIVE_SPIN_NS: u64 = 10_000;

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            stats: StatsMode::default(),
            adaptive_spin_ns: ADAPTIVE_SPIN_NS,
            backoff: BackoffParams::default(),
        }
    }
}

impl LockOptions {
    /// Default options with the given stats mode.
    pub fn with_stats(stats: StatsMode) -> Self {
        LockOptions {
            stats,
            ..Default::default()
        }
    }
}

/// One mutual-exclusion lock. Object-safe: experiments hold a `Box<dyn Lock>`.
///
/// Every call takes the calling thread's [`LockThread`]: it carries the thread index (for
/// handoff attribution), the stats block and per-thread lock state (MCS queue nodes).
pub trait Lock: Send + Sync {
    /// Blocks until the calling thread holds the lock.
    fn lock(&self, t: &mut LockThread);

    /// Releases the lock.
    ///
    /// # Safety
    /// The calling thread holds this lock: its last [`Lock::lock`] on it has not been matched
    /// by an `unlock` yet. (MCS follows the holder's queue node; unlocking a lock you do not
    /// hold corrupts the queue.) `t` may be any `LockThread` of the calling thread.
    unsafe fn unlock(&self, t: &mut LockThread);

    /// Which algorithm this is.
    fn kind(&self) -> LockKind;

    /// What it records.
    fn stats_mode(&self) -> StatsMode;

    /// For FIFO locks, a value that changes whenever a thread joins the wait queue (ticket:
    /// the next ticket; MCS: the tail node's address); `None` for other locks. Lets tests
    /// observe arrival order without sleeping.
    fn queue_tail(&self) -> Option<usize> {
        None
    }
}

/// Safe conveniences over any [`Lock`].
pub trait LockExt: Lock {
    /// Locks and returns a guard that unlocks when dropped.
    fn guard<'a>(&'a self, t: &'a mut LockThread) -> LockGuard<'a, Self> {
        self.lock(t);
        LockGuard {
            lock: self,
            t,
            _not_send: PhantomData,
        }
    }

    /// Runs `f` holding the lock (released on return or panic).
    fn with<R>(&self, t: &mut LockThread, f: impl FnOnce() -> R) -> R {
        let _g = self.guard(t);
        f()
    }
}

impl<L: Lock + ?Sized> LockExt for L {}

/// Holds a lock until dropped. From [`LockExt::guard`].
pub struct LockGuard<'a, L: Lock + ?Sized> {
    lock: &'a L,
    t: &'a mut LockThread,
    /// Unlock must happen on the locking thread (parking_lot requires it), so no Send.
    _not_send: PhantomData<*const ()>,
}

impl<L: Lock + ?Sized> Drop for LockGuard<'_, L> {
    fn drop(&mut self) {
        // SAFETY: a guard is made only by `guard`, right after `lock` returned on this
        // thread, and it is !Send, so this drop runs on the thread holding the lock.
        unsafe { self.lock.unlock(self.t) }
    }
}

/// Builds a lock of `kind` with default options and the given stats mode.
pub fn new_lock(kind: LockKind, stats: StatsMode) -> Box<dyn Lock> {
    new_lock_with(kind, &LockOptions::with_stats(stats))
}

/// Builds a lock of `kind` with explicit options.
pub fn new_lock_with(kind: LockKind, opts: &LockOptions) -> Box<dyn Lock> {
    fn boxed<R: RawLock + 'static>(raw: R, stats: StatsMode) -> Box<dyn Lock> {
        match stats {
            StatsMode::Off => Box::new(Instrumented::<R, MODE_OFF>::new(raw)),
            StatsMode::Counters => Box::new(Instrumented::<R, MODE_COUNTERS>::new(raw)),
            StatsMode::Full => Box::new(Instrumented::<R, MODE_FULL>::new(raw)),
        }
    }
    clock::calibrate();
    let s = opts.stats;
    match kind {
        LockKind::Tas => boxed(tas::Tas::default(), s),
        LockKind::Ttas => boxed(tas::Ttas::default(), s),
        LockKind::Backoff => boxed(backoff::Backoff::new(opts.backoff), s),
        LockKind::Ticket => boxed(ticket::Ticket::default(), s),
        LockKind::Mcs => boxed(mcs::Mcs::default(), s),
        LockKind::Mutex => boxed(futex::FutexLock::mutex(), s),
        LockKind::ParkingLot => boxed(parking::ParkingLot::default(), s),
        LockKind::Adaptive => boxed(futex::FutexLock::adaptive(opts.adaptive_spin_ns), s),
    }
}

/// Per-thread lock state: the thread's index, its stats and its MCS queue nodes.
///
/// One per thread. Its stats cover every lock it is used with; use one `LockThread` per
/// (thread, lock) pair to keep locks apart. The counters are also readable live from other
/// threads through [`LockThread::counters`].
pub struct LockThread {
    index: u32,
    counters: Arc<LockCounters>,
    private: ThreadStats,
    pub(crate) nodes: NodePool,
}

impl LockThread {
    /// State for thread `index` of `threads` (indices `0..threads` name previous owners in
    /// `handoffs_from`; owners outside that range count in `handoffs_unknown`).
    pub fn new(index: usize, threads: usize) -> Self {
        LockThread {
            index: u32::try_from(index).expect("thread index fits in u32"),
            counters: Arc::new(LockCounters::default()),
            private: ThreadStats::new(threads),
            nodes: NodePool::default(),
        }
    }

    /// This thread's index.
    pub fn index(&self) -> usize {
        self.index as usize
    }

    /// The live counters (relaxed atomics written only by this thread), for per-interval
    /// reporting from another thread while the run goes on.
    pub fn counters(&self) -> Arc<LockCounters> {
        Arc::clone(&self.counters)
    }

    /// A snapshot of everything recorded so far: counters, histograms, handoff sources.
    pub fn stats(&self) -> ThreadStats {
        let mut s = self.private.clone();
        s.counts = self.counters.load();
        s
    }

    /// Zeroes everything (e.g. after warm-up).
    pub fn reset(&mut self) {
        self.counters.reset();
        self.private.reset();
    }

    /// Records one acquisition. `now` is the acquisition time when it was read (collision or
    /// Full mode), else 0.
    #[inline]
    fn record_acquire(&mut self, p: &WaitProbe, prev_owner: u32, now: u64) {
        let c = &*self.counters;
        LockCounters::bump(&c.acquisitions, 1);
        if p.collided {
            let wait = now.saturating_sub(p.start_ns);
            LockCounters::bump(&c.collisions, 1);
            LockCounters::bump(&c.spins, p.spins);
            LockCounters::bump(&c.backoffs, p.backoffs);
            LockCounters::bump(&c.sleep_ns, p.sleep_ns);
            LockCounters::bump(&c.wait_ns, wait);
            self.private.wait_ns_hist.saturating_record(wait.max(1));
        }
        if prev_owner != self.index && prev_owner != NO_OWNER {
            LockCounters::bump(&c.handoffs, 1);
            match self.private.handoffs_from.get_mut(prev_owner as usize) {
                Some(n) => *n += 1,
                None => self.private.handoffs_unknown += 1,
            }
        }
    }

    #[inline]
    fn record_release(&mut self, hold_ns: u64) {
        let c = &*self.counters;
        LockCounters::bump(&c.hold_ns, hold_ns);
        if hold_ns > LONG_HOLD_NS {
            LockCounters::bump(&c.long_holds, 1);
        }
        self.private.hold_ns_hist.saturating_record(hold_ns.max(1));
    }
}

/// A value protected by a lock of the library: the safe way to use a lock for data.
pub struct Protected<T> {
    lock: Box<dyn Lock>,
    value: UnsafeCell<T>,
}

// SAFETY: access to `value` goes only through `with`, which holds the lock; our locks provide
// mutual exclusion (tested in tests/locks.rs). Construction takes a LockKind, so no foreign
// `Lock` implementation can be slipped in.
unsafe impl<T: Send> Sync for Protected<T> {}

impl<T> Protected<T> {
    /// Protects `value` with a new lock.
    pub fn new(kind: LockKind, opts: &LockOptions, value: T) -> Self {
        Protected {
            lock: new_lock_with(kind, opts),
            value: UnsafeCell::new(value),
        }
    }

    /// Runs `f` on the value, holding the lock.
    pub fn with<R>(&self, t: &mut LockThread, f: impl FnOnce(&mut T) -> R) -> R {
        let _g = self.lock.guard(t);
        // SAFETY: we hold the lock, so no other `with` runs; the reference ends with `f`.
        f(unsafe { &mut *self.value.get() })
    }

    /// The lock, for its kind and queue probe.
    pub fn lock(&self) -> &dyn Lock {
        &*self.lock
    }

    /// The value, lock discarded.
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

// ---- the instrumentation wrapper shared by every algorithm ----

/// One algorithm, uninstrumented, generic over the wait-loop probe.
pub(crate) trait RawLock: Send + Sync {
    fn kind(&self) -> LockKind;
    /// Acquires; reports the first failed attempt as `p.collision()`, wait-loop iterations as
    /// spins, and CPU give-ups (yield, sleep, futex wait) inside `backoff_begin/end`.
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread);
    /// Releases.
    ///
    /// # Safety
    /// As [`Lock::unlock`].
    unsafe fn release(&self, t: &mut LockThread);
    fn queue_tail(&self) -> Option<usize> {
        None
    }
}

const MODE_OFF: u8 = 0;
const MODE_COUNTERS: u8 = 1;
const MODE_FULL: u8 = 2;
const NO_OWNER: u32 = u32::MAX;

/// An algorithm plus the owner fields that instrumentation writes while holding the lock.
///
/// The owner fields share the lock word's cache line: the holder owns that line anyway right
/// after acquiring, so recording the owner costs no extra coherence traffic. The whole struct
/// is 128-byte aligned (the adjacent-line prefetcher pulls pairs, crossbeam `CachePadded`).
#[repr(C, align(128))]
struct Instrumented<R, const MODE: u8> {
    raw: R,
    /// Thread index of the last holder, written by each holder (Counters/Full only).
    last_owner: AtomicU32,
    /// When the current holder acquired it, ns (Full only).
    acquired_at_ns: AtomicU64,
}

impl<R, const MODE: u8> Instrumented<R, MODE> {
    fn new(raw: R) -> Self {
        Instrumented {
            raw,
            last_owner: AtomicU32::new(NO_OWNER),
            acquired_at_ns: AtomicU64::new(0),
        }
    }
}

impl<R: RawLock, const MODE: u8> Lock for Instrumented<R, MODE> {
    #[inline]
    fn lock(&self, t: &mut LockThread) {
        if MODE == MODE_OFF {
            self.raw.acquire(&mut NoProbe, t);
            return;
        }
        let mut p = WaitProbe::default();
        self.raw.acquire(&mut p, t);
        // Relaxed: these fields are only touched by the holder, and the lock's own
        // acquire/release edges order them between successive holders.
        let now = if p.collided || MODE == MODE_FULL {
            now_ns()
        } else {
            0
        };
        let prev = self.last_owner.load(Ordering::Relaxed);
        if prev != t.index {
            self.last_owner.store(t.index, Ordering::Relaxed);
        }
        if MODE == MODE_FULL {
            self.acquired_at_ns.store(now, Ordering::Relaxed);
        }
        t.record_acquire(&p, prev, now);
    }

    #[inline]
    unsafe fn unlock(&self, t: &mut LockThread) {
        if MODE == MODE_FULL {
            let hold = now_ns().saturating_sub(self.acquired_at_ns.load(Ordering::Relaxed));
            t.record_release(hold);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.raw.release(t) }
    }

    fn kind(&self) -> LockKind {
        self.raw.kind()
    }

    fn stats_mode(&self) -> StatsMode {
        match MODE {
            MODE_OFF => StatsMode::Off,
            MODE_COUNTERS => StatsMode::Counters,
            _ => StatsMode::Full,
        }
    }

    fn queue_tail(&self) -> Option<usize> {
        self.raw.queue_tail()
    }
}
