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
//! `Counters` counts without reading the clock (except around a sleep); `Waits` adds two
//! clock reads per collision for wait times; `Full` two more per acquisition for hold
//! times. Inside the critical section the wrapper does only
//! what needs the lock held (read and update the owner, read raw TSC ticks); counter
//! updates, ns scaling and histogram inserts run after the release, so instrumentation
//! lengthens other threads' waits as little as possible (`cargo bench --bench locks`
//! measures the throughput cost, paired against `Off`).
//!
//! Files: `kind.rs` names the locks, `stats.rs` owns counters/histograms/summaries, `probe.rs`
//! the wait-loop hooks, `clock.rs` the clock and PAUSE calibration, then one file per
//! algorithm family: `tas.rs` (tas, ttas), `backoff.rs`, `ticket.rs`, `mcs.rs`, `futex.rs`
//! (mutex, adaptive), `parking.rs` (parking_lot).

/// In a wait loop, after `spins` iterations: once a run is stopping, give the CPU away
/// now and then, so the thread whose turn it is (or the holder) gets to run; see
/// [`crate::engine::stopping`]. Measurements are over by then.
#[inline(always)]
pub(crate) fn yield_if_stopping(spins: u64) {
    if spins & 1023 == 0 && crate::engine::stopping() {
        std::thread::yield_now();
    }
}

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

use clock::{ticks, ticks_to_ns};
pub use kind::{LockKind, UnknownLockKind};
pub use stats::{Counts, LONG_HOLD_NS, LockCounters, LockSummary, ThreadStats, new_histogram};

use mcs::NodePool;
use probe::{NoProbe, Probe, WaitProbe};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// How much a lock records. Chosen at construction; compiled into the lock's type.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum StatsMode {
    /// Nothing: the hot path is the bare algorithm.
    Off,
    /// SQL Server's `sys.dm_os_spinlock_stats` set: acquisitions, collisions, spins, backoffs,
    /// sleep time, plus handoffs and their sources. No clock on the lock path (only around a
    /// sleep or futex wait, where a syscall dwarfs it), so it stays within the 2 % throughput
    /// goal even when the lock is the whole program.
    #[default]
    Counters,
    /// `Counters` plus the wait of every contended acquisition (histogram, spin time): two
    /// clock reads per collision.
    Waits,
    /// `Waits` plus the hold time of every acquisition (two clock reads per acquisition) and
    /// long holds (> [`LONG_HOLD_NS`]), the lock-holder-preemption evidence.
    Full,
}

impl StatsMode {
    /// Every mode, cheapest first.
    pub const ALL: [StatsMode; 4] = [
        StatsMode::Off,
        StatsMode::Counters,
        StatsMode::Waits,
        StatsMode::Full,
    ];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            StatsMode::Off => "off",
            StatsMode::Counters => "counters",
            StatsMode::Waits => "waits",
            StatsMode::Full => "full",
        }
    }
}

impl std::str::FromStr for StatsMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        StatsMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                format!("unknown stats mode `{t}`; expected off, counters, waits or full")
            })
    }
}

impl std::fmt::Display for StatsMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
/// of spin-then-park (LiTL's 2,700 iterations ≈ 9 µs, multicore-locks/litl `src/waiting_policy.h`).
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
            StatsMode::Waits => Box::new(Instrumented::<R, MODE_WAITS>::new(raw)),
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
    /// The current acquisition's collision, recorded after the release (see [`Collision`]).
    collision: Option<Collision>,
    /// `Full` mode: (lock address, acquisition ticks) of each lock this thread holds, so nested
    /// holds each get their own start without a store to the shared lock line.
    hold_starts: Vec<(usize, u64)>,
    /// For a lock without [`RawLock::TRACKS_OWNER`]: (lock address, whether this thread must
    /// write itself into `last_owner` at unlock), noted right after acquiring, while the line
    /// is ours, so the unlock need not read the line again after waiters have touched it.
    owner_note: (usize, bool),
    pub(crate) nodes: NodePool,
}

/// What a contended acquisition observed, kept until the lock is released: the counter
/// updates, ns scaling and histogram insert then run outside the critical section, so they
/// do not lengthen the wait of the threads queued behind this one.
struct Collision {
    spins: u64,
    backoffs: u64,
    sleep_ticks: u64,
    /// Collision → acquisition, [`clock::ticks`] (`Waits` and `Full` only).
    wait_ticks: Option<u64>,
}

impl LockThread {
    /// State for thread `index` of `threads` (indices `0..threads` name previous owners in
    /// `handoffs_from`; owners outside that range count in `handoffs_unknown`).
    pub fn new(index: usize, threads: usize) -> Self {
        LockThread {
            index: u32::try_from(index)
                .ok()
                .filter(|&i| i as usize <= MAX_THREAD_INDEX)
                .expect("thread index below 2^29"),
            counters: Arc::new(LockCounters::default()),
            private: ThreadStats::new(threads),
            collision: None,
            hold_starts: Vec::new(),
            owner_note: (0, false),
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

    /// A snapshot of everything recorded so far: counters, histograms, handoff sources. An
    /// acquisition is recorded when it is released, so a lock still held is not counted yet.
    pub fn stats(&self) -> ThreadStats {
        let mut s = self.private.clone();
        s.counts = self.counters.load();
        s
    }

    /// Zeroes everything (e.g. after warm-up).
    pub fn reset(&mut self) {
        self.counters.reset();
        self.private.reset();
        self.collision = None;
    }

    /// The start of this thread's hold of the lock at `addr` (innermost first).
    #[inline]
    fn take_hold_start(&mut self, addr: usize) -> Option<u64> {
        let i = self.hold_starts.iter().rposition(|&(a, _)| a == addr)?;
        Some(self.hold_starts.swap_remove(i).1)
    }

    /// Records a collision right away (mode `counters`). Deferring these bumps past the
    /// release, as `waits` does with its histogram, measured worse in paired runs (ticket
    /// hammered: 0.89 → 0.63 of `off`; mutex 0.95 → 0.83): the releasing thread then does the
    /// work just when it should be queueing again.
    #[inline(always)]
    fn record_collision(&mut self, spins: u64, backoffs: u64, sleep_ticks: u64) {
        let c = &*self.counters;
        LockCounters::bump(&c.collisions, 1);
        LockCounters::bump(&c.spins, spins);
        if backoffs > 0 {
            LockCounters::bump(&c.backoffs, backoffs);
            LockCounters::bump(&c.sleep_ns, ticks_to_ns(sleep_ticks));
        }
    }

    /// Records an acquisition's cheap part, inside the critical section: a counter bump and
    /// the handoff source, both on lines only this thread writes.
    #[inline(always)]
    fn record_acquire(&mut self, prev_owner: u32) {
        let c = &*self.counters;
        LockCounters::bump(&c.acquisitions, 1);
        if prev_owner != self.index && prev_owner != NO_OWNER {
            LockCounters::bump(&c.handoffs, 1);
            match self.private.handoffs_from.get_mut(prev_owner as usize) {
                Some(n) => *n += 1,
                None => self.private.handoffs_unknown += 1,
            }
        }
    }

    /// Keeps a collision for [`LockThread::flush_collision`] after the release. One still
    /// pending (nested locks sharing this `LockThread`) is recorded first: nothing is lost.
    #[cold]
    fn stash_collision(&mut self, c: Collision) {
        self.flush_collision();
        self.collision = Some(c);
    }

    /// Records the pending collision, if any.
    #[inline]
    fn flush_collision(&mut self) {
        if let Some(k) = self.collision.take() {
            self.record_collision(k.spins, k.backoffs, k.sleep_ticks);
            if let Some(w) = k.wait_ticks {
                let c = &*self.counters;
                let wait = ticks_to_ns(w);
                LockCounters::bump(&c.wait_ns, wait);
                self.private.wait_ns_hist.saturating_record(wait.max(1));
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
    /// Whether [`RawLock::acquire`] returns the previous holder: the algorithm carries it
    /// in stores it makes anyway ([`owner_word`] for tas/ttas/backoff, ticket's `serving`,
    /// the futex word, MCS's handover). Otherwise the wrapper keeps `last_owner` beside the
    /// lock word.
    const TRACKS_OWNER: bool = false;
    /// Acquires; reports the first failed attempt as `p.collision()`, wait-loop iterations as
    /// spins, and CPU give-ups (yield, sleep, futex wait) inside `backoff_begin/end`. Returns
    /// the previous holder's index ([`NO_OWNER`] if none, or if not `TRACKS_OWNER`).
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32;
    /// Releases (and, if `TRACKS_OWNER`, leaves `t`'s index for the next holder).
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
const MODE_WAITS: u8 = 2;
const MODE_FULL: u8 = 3;
const NO_OWNER: u32 = u32::MAX;

/// Lock words that carry their last holder (tas, ttas, backoff): bit 0 = locked, the bits
/// above = the last holder's index + 1 (0: never held). The release stores the holder's index
/// together with "unlocked", so the next acquirer learns its predecessor from the value its
/// own exchange returns. A handoff is then attributed with no store of its own to the lock's
/// line, which waiters of these locks are reading: such a store cost TTAS 7 % of its
/// throughput with 100 ns critical sections, and mutex 30 % when hammered. (Ticket, MCS and
/// the futex locks carry the holder their own way, in their files.)
pub(crate) mod owner_word {
    /// The word a successful acquisition by thread `index` writes.
    #[inline(always)]
    pub fn locked_by(index: u32) -> u32 {
        ((index + 1) << 1) | 1
    }
    /// The word thread `index`'s release writes.
    #[inline(always)]
    pub fn released_by(index: u32) -> u32 {
        (index + 1) << 1
    }
    #[inline(always)]
    pub fn is_locked(w: u32) -> bool {
        w & 1 != 0
    }
    /// The last holder in an unlocked word, [`super::NO_OWNER`] if never held.
    #[inline(always)]
    pub fn last_owner(w: u32) -> u32 {
        (w >> 1).wrapping_sub(1)
    }
}

/// Largest thread index a [`LockThread`] takes: `index + 1` must fit the owner bits of
/// [`owner_word`] (31) and of the futex locks' word (30).
const MAX_THREAD_INDEX: usize = (1 << 29) - 1;

/// Whether a mode times waits.
const fn timed_mode(mode: u8) -> bool {
    mode >= MODE_WAITS
}

/// An algorithm plus, for one that does not carry its last holder itself
/// ([`RawLock::TRACKS_OWNER`]; only parking_lot, whose word is opaque), the owner field that
/// instrumentation keeps for handoff attribution.
///
/// `last_owner` shares the lock word's cache line, and the holder writes it just before the
/// release store (not right after acquiring), so one ownership request serves both stores.
/// It costs parking_lot about 2–5 % of its throughput with 100 ns critical sections and 25 %
/// when hammered (`cargo bench --bench locks`); on a line of its own it cost no less. The
/// struct is 128-byte aligned (the adjacent-line prefetcher pulls pairs, crossbeam
/// `CachePadded`).
#[repr(C, align(128))]
struct Instrumented<R, const MODE: u8> {
    raw: R,
    /// Thread index of the last holder (Counters, Waits, Full); the current holder's
    /// predecessor until the holder releases.
    last_owner: AtomicU32,
}

impl<R, const MODE: u8> Instrumented<R, MODE> {
    /// This lock's identity in a thread's stack of held locks.
    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    fn new(raw: R) -> Self {
        Instrumented {
            raw,
            last_owner: AtomicU32::new(NO_OWNER),
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
        let timed = timed_mode(MODE);
        let mut p = WaitProbe::new(timed);
        let carried = self.raw.acquire(&mut p, t);
        // Inside the critical section: a read of the owner (the line is here already), the
        // raw clock where a mode needs it, and stores to this thread's own lines only.
        let now = if (p.collided && timed) || MODE == MODE_FULL {
            ticks()
        } else {
            0
        };
        // Relaxed: only holders touch `last_owner`, and the lock's own acquire/release
        // edges order them between successive holders.
        let prev = if R::TRACKS_OWNER {
            carried
        } else {
            let prev = self.last_owner.load(Ordering::Relaxed);
            t.owner_note = (self.addr(), prev != t.index);
            prev
        };
        t.record_acquire(prev);
        if MODE == MODE_FULL {
            t.hold_starts.push((self.addr(), now));
        }
        if p.collided {
            if timed {
                // Histogram insert and ns scaling wait until after the release.
                t.stash_collision(Collision {
                    spins: p.spins,
                    backoffs: p.backoffs,
                    sleep_ticks: p.sleep_ticks,
                    wait_ticks: Some(now.saturating_sub(p.start_ticks)),
                });
            } else {
                t.record_collision(p.spins, p.backoffs, p.sleep_ticks);
            }
        }
    }

    #[inline]
    unsafe fn unlock(&self, t: &mut LockThread) {
        if MODE == MODE_OFF {
            // SAFETY: forwarded from the caller.
            unsafe { self.raw.release(t) };
            return;
        }
        // Read the clock before releasing: a futex wake inside `release` is not hold time.
        let hold = if MODE == MODE_FULL {
            t.take_hold_start(self.addr())
                .map(|start| ticks().saturating_sub(start))
        } else {
            None
        };
        if !R::TRACKS_OWNER {
            let changed = match t.owner_note {
                (addr, changed) if addr == self.addr() => changed,
                // Another lock's acquisition on this `LockThread` replaced the note (nesting).
                _ => self.last_owner.load(Ordering::Relaxed) != t.index,
            };
            if changed {
                self.last_owner.store(t.index, Ordering::Relaxed);
            }
            t.owner_note = (0, false);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.raw.release(t) };
        if let Some(h) = hold {
            t.record_release(ticks_to_ns(h));
        }
        if timed_mode(MODE) && t.collision.is_some() {
            t.flush_collision();
        }
    }

    fn kind(&self) -> LockKind {
        self.raw.kind()
    }

    fn stats_mode(&self) -> StatsMode {
        match MODE {
            MODE_OFF => StatsMode::Off,
            MODE_COUNTERS => StatsMode::Counters,
            MODE_WAITS => StatsMode::Waits,
            _ => StatsMode::Full,
        }
    }

    fn queue_tail(&self) -> Option<usize> {
        self.raw.queue_tail()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_modes_parse_by_name_and_refuse_others() {
        for m in StatsMode::ALL {
            assert_eq!(m.name().parse::<StatsMode>(), Ok(m));
            assert_eq!(m.to_string().to_uppercase().parse::<StatsMode>(), Ok(m));
        }
        let e = "timing".parse::<StatsMode>().unwrap_err();
        assert!(
            e.contains("`timing`") && e.contains("off, counters, waits or full"),
            "{e}"
        );
    }

    #[test]
    fn owner_word_round_trips_every_index_it_accepts() {
        for i in [0, 1, 7, 1000, MAX_THREAD_INDEX as u32] {
            let (held, free) = (owner_word::locked_by(i), owner_word::released_by(i));
            assert!(owner_word::is_locked(held) && !owner_word::is_locked(free));
            assert_eq!(owner_word::last_owner(free), i);
            assert_eq!(owner_word::last_owner(held), i);
        }
        assert_eq!(owner_word::last_owner(0), NO_OWNER, "never held");
    }

    #[test]
    #[should_panic(expected = "thread index below 2^29")]
    fn thread_index_beyond_the_owner_bits_is_refused() {
        LockThread::new(MAX_THREAD_INDEX + 1, 1);
    }
}
