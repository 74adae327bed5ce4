//! A read-mostly metadata cache (like SQL Server's `CMED_HASH_SET`, looked up on every
//! statement) under seven protection schemes, each instrumented alike, so `smtlab rwcache`
//! can show what a shared reader line costs.
//!
//! The table is an open-addressing hash table of [`Entry`]s (fixed keys `0..entries`, 48-byte
//! values) laid out by [`Layout`]: slots are split into power-of-two *shards* and a key probes
//! linearly inside its home shard only. Every scheme uses the same layout (so the same probe
//! sequence and the same final contents); only `rcu` uses the shards, as its unit of
//! copy-on-write, so a write copies one shard (~256 slots, 12 KiB) instead of the whole table.
//! Writes *replace* an entry (same key, new version and payload); keys never move, so readers
//! that race with a writer (seqlock) can probe keys safely and only the copied-out value needs
//! validating.
//!
//! Schemes ([`SchemeKind`]): `spin` is the lock library's `backoff` lock (the SQL Server-like
//! spinlock, stats from the library); `rwspin` (reader count + writer bits, writer preference),
//! `brlock` (one reader slot per thread on its own line; a writer takes all) and `seqlock`
//! (readers retry) are here, built on the same backoff schedule ([`wait`]) and the same
//! counters; `rwlock` (std) and `parking_lot-rw` are used as they are, with collisions seen
//! through `try_read` / `try_write`; `rcu` swaps per-shard snapshots with `arc-swap`.
//!
//! Instrumentation, per thread and per side (reads, writes), in the lock library's own
//! [`ThreadStats`]: acquisitions, collisions (first attempt found it held), spins, backoffs
//! (yield/sleep), sleep and wait time, a histogram of contended waits. The clock is read only
//! after a collision, so contended waiting (spins, backoffs, sleeps: hundreds of ns and more)
//! is timed exactly, and the uncontended path is never timed.
//!
//! The CPU spent *in the lock* (a profile's "spinlock % CPU") is measured by subtraction, not by
//! timing the lock code: the reference scheme `none` ([`SchemeKind::Unlocked`], [`Unlocked`])
//! runs the identical lookups and replacements with no lock, on one thread, interleaved with
//! the other schemes in every round; a scheme's lock CPU per request is its CPU ns per
//! request minus the reference's, floored at 0, and its share is that ÷ its own CPU ns per
//! request ([`lock_cost`]), so it lies in 0–1. Timing each 20 ns lookup with a fenced TSC
//! read instead (tried first) measured the timer: `lfence; rdtsc` in a hot loop costs more
//! than an idle calibration subtracts, and the "share" exceeded 100 %. Only writes (1 in
//! 10^4 requests, each hundreds of ns) are still timed with [`wait::ticks`].

mod brlock;
mod rcu;
mod rwspin;
mod seqlock;
mod spin;
mod stdrw;
mod unlocked;
pub mod wait;

use crate::locks::ThreadStats;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::fmt;
use std::str::FromStr;

pub use brlock::BrLock;
pub use rcu::Rcu;
pub use rwspin::RwSpin;
pub use seqlock::SeqLock;
pub use spin::Spin;
pub use stdrw::{ParkingLotRw, StdRw};
pub use unlocked::Unlocked;

/// Largest `--entries`: 4 Mi entries make a 384 MiB table (2 slots per entry, 48 B each).
pub const MAX_ENTRIES: usize = crate::limits::MAX_ENTRIES as usize;

/// Largest shard (slots). 256 slots × 48 B = 12 KiB copied per `rcu` write.
pub const SHARD_SLOTS: usize = 256;

/// One cached metadata object: a key, a version and a payload derived from both, so a torn
/// copy (words from two versions) is detectable ([`Entry::is_consistent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Entry {
    /// The key; [`Entry::EMPTY_KEY`] marks an empty slot.
    pub key: u64,
    /// Bumped by each replacement.
    pub version: u64,
    /// `mix(key, version, i)`.
    pub payload: [u64; 4],
}

impl Entry {
    /// Key of an empty slot.
    pub const EMPTY_KEY: u64 = u64::MAX;
    /// An empty slot.
    pub const EMPTY: Entry = Entry {
        key: Entry::EMPTY_KEY,
        version: 0,
        payload: [0; 4],
    };

    /// The entry for `key` at `version`.
    pub fn new(key: u64, version: u64) -> Self {
        let mut payload = [0; 4];
        for (i, p) in payload.iter_mut().enumerate() {
            *p = mix(key, version, i as u64);
        }
        Entry {
            key,
            version,
            payload,
        }
    }

    /// True when every payload word belongs to this key and version (not torn).
    pub fn is_consistent(&self) -> bool {
        self.payload
            .iter()
            .enumerate()
            .all(|(i, &p)| p == mix(self.key, self.version, i as u64))
    }

    pub(crate) fn words(&self) -> [u64; 6] {
        [
            self.key,
            self.version,
            self.payload[0],
            self.payload[1],
            self.payload[2],
            self.payload[3],
        ]
    }

    pub(crate) fn from_words(w: [u64; 6]) -> Self {
        Entry {
            key: w[0],
            version: w[1],
            payload: [w[2], w[3], w[4], w[5]],
        }
    }
}

fn mix(key: u64, version: u64, i: u64) -> u64 {
    let mut z = key
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(version.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(i.wrapping_mul(0x94D0_49BB_1331_11EB));
    z ^= z >> 31;
    z
}

/// Where keys live: `slots` (a power of two, at least 2 × entries) split into shards of
/// `shard_slots`; a key probes linearly inside its home shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    entries: usize,
    slots: usize,
    shard_slots: usize,
    shift: u32,
}

impl Layout {
    /// The layout for keys `0..entries` (1 ..= [`MAX_ENTRIES`]). Shards start at
    /// [`SHARD_SLOTS`] and double until no shard overflows (never at load ≤ 0.5 and 10k
    /// entries; the loop makes any size safe).
    pub fn new(entries: usize) -> Self {
        assert!(
            (1..=MAX_ENTRIES).contains(&entries),
            "entries validated by the caller"
        );
        let slots = (entries * 2).next_power_of_two();
        let mut l = Layout {
            entries,
            slots,
            shard_slots: SHARD_SLOTS.min(slots),
            shift: 64 - slots.trailing_zeros(),
        };
        while !l.fits() {
            l.shard_slots *= 2;
        }
        l
    }

    fn fits(&self) -> bool {
        let mut used = vec![0usize; self.shards()];
        for k in 0..self.entries as u64 {
            let s = self.home(k) / self.shard_slots;
            used[s] += 1;
            if used[s] > self.shard_slots {
                return false;
            }
        }
        true
    }

    /// Number of keys.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Number of slots.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Slots per shard.
    pub fn shard_slots(&self) -> usize {
        self.shard_slots
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.slots / self.shard_slots
    }

    /// The key's home slot (Fibonacci hashing: the top bits of key × 2^64/φ).
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The `i`-th slot of `key`'s probe sequence (wraps inside the home shard).
    #[inline]
    pub fn probe(&self, key: u64, i: usize) -> usize {
        let h = self.home(key);
        let mask = self.shard_slots - 1;
        (h & !mask) | (h.wrapping_add(i) & mask)
    }

    /// The shard of a slot.
    #[inline]
    pub fn shard_of(&self, slot: usize) -> usize {
        slot / self.shard_slots
    }

    /// The slot holding `key` in `slots`, by probing with `key_at(slot)`; None when absent.
    #[inline]
    pub(crate) fn find(&self, key: u64, key_at: impl Fn(usize) -> u64) -> Option<usize> {
        for i in 0..self.shard_slots {
            let s = self.probe(key, i);
            let k = key_at(s);
            if k == key {
                return Some(s);
            }
            if k == Entry::EMPTY_KEY {
                return None;
            }
        }
        None
    }

    /// The initial table: every key at version 0, inserted in key order.
    pub fn initial(&self) -> Vec<Entry> {
        let mut t = vec![Entry::EMPTY; self.slots];
        for k in 0..self.entries as u64 {
            let s = (0..self.shard_slots)
                .map(|i| self.probe(k, i))
                .find(|&s| t[s].key == Entry::EMPTY_KEY)
                .expect("Layout::new made every shard big enough");
            t[s] = Entry::new(k, 0);
        }
        t
    }
}

/// Which protection scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum SchemeKind {
    /// The lock library's `backoff` spinlock around every access (SQL Server's spinlock).
    #[serde(rename = "spin")]
    Spin,
    /// Reader/writer spinlock: reader count + writer bits in one word, writer preference.
    #[serde(rename = "rwspin")]
    RwSpin,
    /// `std::sync::RwLock`.
    #[serde(rename = "rwlock")]
    RwLock,
    /// `parking_lot::RwLock`.
    #[serde(rename = "parking_lot-rw")]
    ParkingLotRw,
    /// Big-reader lock: one reader slot per thread on its own line; a writer takes all.
    #[serde(rename = "brlock")]
    BrLock,
    /// Sequence lock: readers copy out and retry if a writer ran meanwhile.
    #[serde(rename = "seqlock")]
    SeqLock,
    /// Per-shard snapshots swapped with `arc-swap`; writers copy the shard.
    #[serde(rename = "rcu")]
    Rcu,
    /// Reference, not a protection scheme: the same code with no lock, one thread only.
    /// Not in [`SchemeKind::ALL`] and not accepted by `--scheme`; `rwcache` runs it itself
    /// to measure lock cost by subtraction.
    #[serde(rename = "none")]
    Unlocked,
}

impl SchemeKind {
    /// Every protection scheme, in table order (not the `none` reference).
    pub const ALL: [SchemeKind; 7] = [
        SchemeKind::Spin,
        SchemeKind::RwSpin,
        SchemeKind::RwLock,
        SchemeKind::ParkingLotRw,
        SchemeKind::BrLock,
        SchemeKind::SeqLock,
        SchemeKind::Rcu,
    ];

    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            SchemeKind::Spin => "spin",
            SchemeKind::RwSpin => "rwspin",
            SchemeKind::RwLock => "rwlock",
            SchemeKind::ParkingLotRw => "parking_lot-rw",
            SchemeKind::BrLock => "brlock",
            SchemeKind::SeqLock => "seqlock",
            SchemeKind::Rcu => "rcu",
            SchemeKind::Unlocked => "none",
        }
    }

    /// One line for `--help` and reports.
    pub fn describe(self) -> &'static str {
        match self {
            SchemeKind::Spin => "backoff spinlock (SQL Server-like), readers exclude each other",
            SchemeKind::RwSpin => "reader/writer spinlock: readers share one counter line",
            SchemeKind::RwLock => "std::sync::RwLock (futex)",
            SchemeKind::ParkingLotRw => "parking_lot::RwLock",
            SchemeKind::BrLock => "per-thread reader slots on own lines; writer takes all",
            SchemeKind::SeqLock => "readers write nothing and retry on a concurrent write",
            SchemeKind::Rcu => "arc-swap snapshots per shard; writers copy on write",
            SchemeKind::Unlocked => "reference: the same lookups with no lock, 1 thread only",
        }
    }

    /// True when every reader writes one shared cache line (the lock word).
    pub fn shared_reader_line(self) -> bool {
        matches!(
            self,
            SchemeKind::Spin | SchemeKind::RwSpin | SchemeKind::RwLock | SchemeKind::ParkingLotRw
        )
    }

    /// True when the scheme's wait loops are ours, so spins and backoffs are counted (std and
    /// parking_lot hide theirs: only collisions and wait time are seen).
    pub fn spins_visible(self) -> bool {
        !matches!(self, SchemeKind::RwLock | SchemeKind::ParkingLotRw)
    }

    /// Builds this scheme over `layout`'s initial table, for `threads` threads.
    ///
    /// # Panics
    /// [`SchemeKind::Unlocked`] with `threads` ≠ 1.
    pub fn build(self, layout: &Layout, threads: usize) -> Box<dyn DynCache> {
        match self {
            SchemeKind::Spin => Box::new(Spin::new(layout, threads)),
            SchemeKind::RwSpin => Box::new(RwSpin::new(layout, threads)),
            SchemeKind::RwLock => Box::new(StdRw::new(layout, threads)),
            SchemeKind::ParkingLotRw => Box::new(ParkingLotRw::new(layout, threads)),
            SchemeKind::BrLock => Box::new(BrLock::new(layout, threads)),
            SchemeKind::SeqLock => Box::new(SeqLock::new(layout, threads)),
            SchemeKind::Rcu => Box::new(Rcu::new(layout, threads)),
            SchemeKind::Unlocked => Box::new(Unlocked::new(layout, threads)),
        }
    }
}

impl fmt::Display for SchemeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A scheme name that is not one of [`SchemeKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheme `{given}`; valid: {}, or all", SchemeKind::ALL.map(SchemeKind::name).join(", "))]
pub struct UnknownScheme {
    /// What was given.
    pub given: String,
}

impl FromStr for SchemeKind {
    type Err = UnknownScheme;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        SchemeKind::ALL
            .into_iter()
            .find(|k| k.name().replace('_', "-") == t)
            .or(match t.as_str() {
                "parking-lot" | "plrw" | "pl-rw" => Some(SchemeKind::ParkingLotRw),
                "std" | "std-rw" => Some(SchemeKind::RwLock),
                _ => None,
            })
            .ok_or_else(|| UnknownScheme {
                given: s.trim().to_string(),
            })
    }
}

/// Parses `all` or a comma-separated list of schemes (duplicates dropped, order kept).
pub fn parse_schemes(s: &str) -> Result<Vec<SchemeKind>, UnknownScheme> {
    if s.trim() == "all" {
        return Ok(SchemeKind::ALL.to_vec());
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        let k: SchemeKind = part.parse()?;
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// What one thread recorded: reads and writes as lock-library stats, seqlock retries, and
/// the timed writer lock code.
#[derive(Debug, Clone)]
pub struct RwThreadStats {
    /// Read-side acquisitions (one per lookup), collisions, spins, waits.
    pub reads: ThreadStats,
    /// Write-side acquisitions (one per replacement), collisions, spins, waits.
    pub writes: ThreadStats,
    /// Seqlock reads that saw a concurrent write and copied again.
    pub read_retries: u64,
    /// Time in the writer's lock code (acquire + release, waits included), all writes, ns
    /// (fenced [`wait::ticks`], the clock's own cost subtracted per piece).
    pub write_lock_ns: u64,
}

impl Default for RwThreadStats {
    fn default() -> Self {
        RwThreadStats {
            reads: ThreadStats::new(0),
            writes: ThreadStats::new(0),
            read_retries: 0,
            write_lock_ns: 0,
        }
    }
}

impl RwThreadStats {
    /// Adds `o` into `self`.
    pub fn merge(&mut self, o: &RwThreadStats) {
        self.reads.merge(&o.reads);
        self.writes.merge(&o.writes);
        self.read_retries += o.read_retries;
        self.write_lock_ns += o.write_lock_ns;
    }

    /// Waiting on the CPU after a collision (wait − sleep), reads and writes, ns. For rwlock
    /// and parking_lot-rw the wait includes time parked in the kernel (they hide it).
    pub fn wait_on_cpu_ns(&self) -> u64 {
        self.reads.counts.spin_ns() + self.writes.counts.spin_ns()
    }
}

/// Lock cost of one scheme found by subtraction ([`lock_cost`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LockCost {
    /// CPU per request attributed to the lock, ns (≥ 0).
    pub lock_cpu_ns_per_request: f64,
    /// That ÷ the scheme's CPU per request, 0–1.
    pub lock_cpu_share: f64,
}

/// The lock's CPU per request and its share of the scheme's CPU, by subtraction: `scheme`
/// and `reference` are CPU ns per request of the scheme and of the lock-free reference
/// (`none`, 1 thread) running the same code. A scheme no slower than the reference (noise)
/// costs 0. None when `scheme` is not a positive number or `reference` is negative / not a
/// number. The share is in 0–1 by construction.
pub fn lock_cost(
    scheme_cpu_ns_per_request: f64,
    reference_cpu_ns_per_request: f64,
) -> Option<LockCost> {
    let (s, r) = (scheme_cpu_ns_per_request, reference_cpu_ns_per_request);
    if !(s.is_finite() && s > 0.0 && r.is_finite() && r >= 0.0) {
        return None;
    }
    let lock = (s - r).max(0.0);
    Some(LockCost {
        lock_cpu_ns_per_request: lock,
        lock_cpu_share: (lock / s).clamp(0.0, 1.0),
    })
}

/// Per-thread state every scheme's handle carries: stats and the writers' lock-code timer.
pub struct Common {
    pub(crate) stats: RwThreadStats,
    pub(crate) timer: wait::LockTimer,
}

impl Common {
    pub(crate) fn new() -> Self {
        Common {
            stats: RwThreadStats::default(),
            timer: wait::LockTimer::default(),
        }
    }
}

/// One scheme, statically dispatched (the workload's hot loop is generic over it).
pub trait Scheme: Send + Sync + 'static {
    /// Per-thread state.
    type Handle: Send + 'static;
    /// Which scheme.
    const KIND: SchemeKind;
    /// Builds the scheme over `layout`'s initial table for `threads` threads.
    fn new(layout: &Layout, threads: usize) -> Self
    where
        Self: Sized;
    /// State for thread `thread` (`0..threads`).
    fn handle(&self, thread: usize) -> Self::Handle;
    /// The handle's stats and timer.
    fn common(h: &mut Self::Handle) -> &mut Common;
    /// A copy of `key`'s entry, or None when absent.
    fn get(&self, h: &mut Self::Handle, key: u64) -> Option<Entry>;
    /// Replaces the entry with `e.key`; false when the key is absent.
    fn replace(&self, h: &mut Self::Handle, e: Entry) -> bool;
    /// The slots, in layout order (call when no thread is writing).
    fn contents(&self) -> Vec<Entry>;
    /// What the handle recorded (the library lock's own stats folded in).
    fn stats(&self, h: &Self::Handle) -> RwThreadStats;
}

/// A type-erased per-thread handle of a [`DynCache`].
pub struct AnyHandle(Box<dyn Any + Send>);

/// Any scheme behind one object-safe interface (tests and tools; the workload uses
/// [`Scheme`] directly).
pub trait DynCache: Send + Sync {
    /// Which scheme.
    fn kind(&self) -> SchemeKind;
    /// State for thread `thread`.
    fn handle(&self, thread: usize) -> AnyHandle;
    /// A copy of `key`'s entry.
    fn get(&self, h: &mut AnyHandle, key: u64) -> Option<Entry>;
    /// Replaces the entry with `e.key`.
    fn replace(&self, h: &mut AnyHandle, e: Entry) -> bool;
    /// The slots, in layout order.
    fn contents(&self) -> Vec<Entry>;
    /// What the handle recorded.
    fn stats(&self, h: &AnyHandle) -> RwThreadStats;
}

impl<S: Scheme> DynCache for S {
    fn kind(&self) -> SchemeKind {
        S::KIND
    }
    fn handle(&self, thread: usize) -> AnyHandle {
        AnyHandle(Box::new(Scheme::handle(self, thread)))
    }
    fn get(&self, h: &mut AnyHandle, key: u64) -> Option<Entry> {
        Scheme::get(self, downcast::<S>(h), key)
    }
    fn replace(&self, h: &mut AnyHandle, e: Entry) -> bool {
        Scheme::replace(self, downcast::<S>(h), e)
    }
    fn contents(&self) -> Vec<Entry> {
        Scheme::contents(self)
    }
    fn stats(&self, h: &AnyHandle) -> RwThreadStats {
        let h =
            h.0.downcast_ref::<S::Handle>()
                .expect("a handle of another scheme");
        Scheme::stats(self, h)
    }
}

fn downcast<S: Scheme>(h: &mut AnyHandle) -> &mut S::Handle {
    h.0.downcast_mut::<S::Handle>()
        .expect("a handle of another scheme")
}

/// Cost of timing an empty piece of lock code here, ns (see [`wait::ticks`]); subtracted
/// from every timed piece (writes only: lookups are never timed).
pub fn timer_overhead_ns() -> f64 {
    wait::timer_overhead_ticks() as f64 * wait::ns_per_tick()
}

/// Calibrates the lock library's clock and PAUSE cost and the lock-code timer (~50 ms, once
/// per process); every scheme's constructor calls it so no measured section pays for it.
pub fn calibrate() {
    crate::locks::calibrate();
    wait::calibrate_timer();
}

/// A slot table shared by the lock-protected schemes: written only by a writer holding the
/// scheme's exclusive side, read only under its shared side.
pub(crate) struct Slots(std::cell::UnsafeCell<Box<[Entry]>>);

// SAFETY: the schemes that hold a `Slots` hand out `&` only under their shared side and
// `&mut` only under their exclusive side (tested in tests/rwcache.rs).
unsafe impl Sync for Slots {}

impl Slots {
    pub(crate) fn new(layout: &Layout) -> Self {
        Slots(std::cell::UnsafeCell::new(
            layout.initial().into_boxed_slice(),
        ))
    }

    /// # Safety
    /// The caller holds the shared (or exclusive) side of the protecting lock.
    #[inline]
    pub(crate) unsafe fn read(&self) -> &[Entry] {
        // SAFETY: forwarded.
        unsafe { &*self.0.get() }
    }

    /// # Safety
    /// The caller holds the exclusive side of the protecting lock.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn write(&self) -> &mut [Entry] {
        // SAFETY: forwarded.
        unsafe { &mut *self.0.get() }
    }
}

/// Looks `key` up in a slot slice.
#[inline]
pub(crate) fn lookup(layout: &Layout, t: &[Entry], key: u64) -> Option<Entry> {
    layout.find(key, |s| t[s].key).map(|s| t[s])
}

/// Replaces `e.key`'s entry in a slot slice.
#[inline]
pub(crate) fn store(layout: &Layout, t: &mut [Entry], e: Entry) -> bool {
    match layout.find(e.key, |s| t[s].key) {
        Some(s) => {
            t[s] = e;
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_holds_every_key_once() {
        for n in [1, 2, 3, 100, 10_000, 70_000] {
            let l = Layout::new(n);
            let t = l.initial();
            assert_eq!(t.len(), l.slots());
            assert!(l.slots() >= 2 * n);
            let mut keys: Vec<u64> = t
                .iter()
                .filter(|e| e.key != Entry::EMPTY_KEY)
                .map(|e| e.key)
                .collect();
            keys.sort_unstable();
            assert_eq!(keys, (0..n as u64).collect::<Vec<_>>());
            for k in 0..n as u64 {
                assert_eq!(lookup(&l, &t, k), Some(Entry::new(k, 0)));
            }
            assert_eq!(lookup(&l, &t, n as u64 + 5), None);
        }
    }

    #[test]
    fn torn_entries_are_detected() {
        let a = Entry::new(7, 1);
        let b = Entry::new(7, 2);
        assert!(a.is_consistent() && b.is_consistent());
        let mut torn = a;
        torn.payload[2] = b.payload[2];
        assert!(!torn.is_consistent());
        assert_eq!(Entry::from_words(a.words()), a);
    }

    #[test]
    fn lock_cost_is_the_difference_from_the_reference() {
        let c = lock_cost(100.0, 60.0).unwrap();
        assert!((c.lock_cpu_ns_per_request - 40.0).abs() < 1e-9);
        assert!((c.lock_cpu_share - 0.4).abs() < 1e-9);
        // Faster than the reference (noise): no lock cost, never negative.
        assert_eq!(
            lock_cost(55.0, 60.0),
            Some(LockCost {
                lock_cpu_ns_per_request: 0.0,
                lock_cpu_share: 0.0
            })
        );
        // All of it in the lock at most.
        assert_eq!(lock_cost(80.0, 0.0).unwrap().lock_cpu_share, 1.0);
        assert_eq!(lock_cost(0.0, 60.0), None);
        assert_eq!(lock_cost(100.0, f64::NAN), None);
        assert_eq!(lock_cost(f64::INFINITY, 60.0), None);
    }

    #[test]
    fn none_is_internal_only() {
        assert!(!SchemeKind::ALL.contains(&SchemeKind::Unlocked));
        assert!("none".parse::<SchemeKind>().is_err());
        assert!(parse_schemes("spin,none").is_err());
        assert_eq!(
            serde_json::to_string(&SchemeKind::Unlocked).unwrap(),
            "\"none\""
        );
    }

    #[test]
    fn scheme_names_round_trip() {
        for k in SchemeKind::ALL {
            assert_eq!(k.name().parse::<SchemeKind>().unwrap(), k);
            let j = serde_json::to_string(&k).unwrap();
            assert_eq!(j, format!("\"{}\"", k.name()));
        }
        assert_eq!(parse_schemes("all").unwrap().len(), 7);
        assert_eq!(
            parse_schemes("spin,rwspin,spin").unwrap(),
            [SchemeKind::Spin, SchemeKind::RwSpin]
        );
        let e = parse_schemes("spin,mcs").unwrap_err().to_string();
        assert!(e.contains("`mcs`") && e.contains("seqlock"), "{e}");
    }
}
