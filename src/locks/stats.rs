//! Lock statistics: the live per-thread counters, the per-thread snapshot with histograms,
//! merging across threads, and the serialisable summary.
//!
//! Names follow SQL Server's `sys.dm_os_spinlock_stats` (Microsoft Learn): `collisions` =
//! acquire found the lock held, `spins` = wait-loop iterations, `backoffs` = the waiter gave
//! up the CPU (yield, sleep or futex wait), `sleep_ns` = time inside those give-ups.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::ops::AddAssign;
use std::sync::atomic::{AtomicU64, Ordering};

/// A hold longer than this (1 ms) counts in `long_holds`: longer than any sane critical
/// section, shorter than a scheduler slice (EEVDF's base slice, 0.75–3 ms: `sysctl_sched_base_slice` in `kernel/sched/fair.c`), so it flags a holder
/// that was preempted or slept.
pub const LONG_HOLD_NS: u64 = 1_000_000;

/// Histograms cover 1 ns to 1 h with 2 significant digits (1 % resolution, ~37 KB each).
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// A histogram with the bounds every lock histogram uses.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_NS, 2).expect("static histogram bounds are valid")
}

/// Live counters of one thread: written only by that thread (relaxed load + store, as cheap as
/// a plain increment on x86), readable by any thread. On their own 128-byte block so the
/// writer never shares a line (or an adjacent-line prefetch pair) with anyone.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct LockCounters {
    pub acquisitions: AtomicU64,
    pub collisions: AtomicU64,
    pub spins: AtomicU64,
    pub backoffs: AtomicU64,
    pub sleep_ns: AtomicU64,
    pub wait_ns: AtomicU64,
    pub handoffs: AtomicU64,
    pub hold_ns: AtomicU64,
    pub long_holds: AtomicU64,
}

impl LockCounters {
    /// Single-writer add: a relaxed load and store, no locked instruction.
    #[inline(always)]
    pub(crate) fn bump(c: &AtomicU64, n: u64) {
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// A relaxed snapshot (fields may be from slightly different instants).
    pub fn load(&self) -> Counts {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counts {
            acquisitions: l(&self.acquisitions),
            collisions: l(&self.collisions),
            spins: l(&self.spins),
            backoffs: l(&self.backoffs),
            sleep_ns: l(&self.sleep_ns),
            wait_ns: l(&self.wait_ns),
            handoffs: l(&self.handoffs),
            hold_ns: l(&self.hold_ns),
            long_holds: l(&self.long_holds),
        }
    }

    pub(crate) fn reset(&self) {
        for c in [
            &self.acquisitions,
            &self.collisions,
            &self.spins,
            &self.backoffs,
            &self.sleep_ns,
            &self.wait_ns,
            &self.handoffs,
            &self.hold_ns,
            &self.long_holds,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Plain counter values (a snapshot of [`LockCounters`], or a total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions whose first attempt found the lock held.
    pub collisions: u64,
    /// Wait-loop iterations (PAUSE or relaxed load per iteration; backoff delay PAUSEs count).
    pub spins: u64,
    /// Times a waiter gave up the CPU: `sched_yield`, sleep, futex wait.
    pub backoffs: u64,
    /// Time inside those give-ups, ns.
    pub sleep_ns: u64,
    /// Time from a collision to the acquisition, summed, ns (includes `sleep_ns`; `Waits`
    /// and `Full` modes only, else 0).
    pub wait_ns: u64,
    /// Acquisitions where the previous holder was another thread.
    pub handoffs: u64,
    /// Time holding the lock, summed, ns (`Full` mode only).
    pub hold_ns: u64,
    /// Holds longer than [`LONG_HOLD_NS`] (`Full` mode only).
    pub long_holds: u64,
}

impl Counts {
    /// Waiting time spent burning CPU (wait minus sleep), ns. For `parking_lot` the split is
    /// not visible, so this includes its parked time.
    pub fn spin_ns(&self) -> u64 {
        self.wait_ns.saturating_sub(self.sleep_ns)
    }
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.acquisitions += o.acquisitions;
        self.collisions += o.collisions;
        self.spins += o.spins;
        self.backoffs += o.backoffs;
        self.sleep_ns += o.sleep_ns;
        self.wait_ns += o.wait_ns;
        self.handoffs += o.handoffs;
        self.hold_ns += o.hold_ns;
        self.long_holds += o.long_holds;
    }
}

/// Everything one thread (or, merged, a set of threads) recorded.
#[derive(Debug, Clone)]
pub struct ThreadStats {
    /// Counter values.
    pub counts: Counts,
    /// `handoffs_from[i]`: handoffs received from thread `i` (classify by topology with the
    /// CPUs of the two threads).
    pub handoffs_from: Vec<u64>,
    /// Handoffs from owners with an index outside `handoffs_from`.
    pub handoffs_unknown: u64,
    /// Wait of each *contended* acquisition (collision → acquired), ns (`Waits` and `Full`
    /// modes; empty otherwise).
    pub wait_ns_hist: Histogram<u64>,
    /// Hold of each acquisition, ns (`Full` mode only; empty otherwise).
    pub hold_ns_hist: Histogram<u64>,
}

impl ThreadStats {
    /// Empty stats able to attribute handoffs from `threads` thread indices.
    pub fn new(threads: usize) -> Self {
        ThreadStats {
            counts: Counts::default(),
            handoffs_from: vec![0; threads],
            handoffs_unknown: 0,
            wait_ns_hist: new_histogram(),
            hold_ns_hist: new_histogram(),
        }
    }

    pub(crate) fn reset(&mut self) {
        self.counts = Counts::default();
        self.handoffs_from.iter_mut().for_each(|n| *n = 0);
        self.handoffs_unknown = 0;
        self.wait_ns_hist.reset();
        self.hold_ns_hist.reset();
    }

    /// Adds `other` into `self` (totals across threads).
    pub fn merge(&mut self, other: &ThreadStats) {
        self.counts += other.counts;
        if self.handoffs_from.len() < other.handoffs_from.len() {
            self.handoffs_from.resize(other.handoffs_from.len(), 0);
        }
        for (a, b) in self.handoffs_from.iter_mut().zip(&other.handoffs_from) {
            *a += b;
        }
        self.handoffs_unknown += other.handoffs_unknown;
        // Same bounds on both sides, so `add` cannot fail.
        self.wait_ns_hist
            .add(&other.wait_ns_hist)
            .expect("same histogram bounds");
        self.hold_ns_hist
            .add(&other.hold_ns_hist)
            .expect("same histogram bounds");
    }

    /// Totals of several threads.
    pub fn total<'a>(all: impl IntoIterator<Item = &'a ThreadStats>) -> ThreadStats {
        let mut t = ThreadStats::new(0);
        for s in all {
            t.merge(s);
        }
        t
    }

    /// The serialisable summary.
    pub fn summary(&self) -> LockSummary {
        let c = &self.counts;
        // Waits were timed unless there were collisions and none has a time (mode `counters`:
        // then the wait fields are `None` rather than a made-up 0).
        let timed_waits = c.collisions == 0 || !self.wait_ns_hist.is_empty();
        let wait_opt = |v: u64| timed_waits.then_some(v);
        // Uncontended acquisitions waited ~0: add them as zeros so the percentiles describe
        // every acquisition, while the hot path never touched the histogram for them.
        let mut all = self.wait_ns_hist.clone();
        let uncontended = c.acquisitions.saturating_sub(self.wait_ns_hist.len());
        if uncontended > 0 {
            all.record_n(0, uncontended).expect("0 is in range");
        }
        let q = |h: &Histogram<u64>, q: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            }
        };
        let hold = &self.hold_ns_hist;
        let timed_holds = !hold.is_empty();
        let hold_opt = |v: u64| timed_holds.then_some(v);
        LockSummary {
            acquisitions: c.acquisitions,
            collisions: c.collisions,
            spins: c.spins,
            spins_per_collision: ratio(c.spins, c.collisions),
            backoffs: c.backoffs,
            sleep_ns: c.sleep_ns,
            wait_ns: wait_opt(c.wait_ns),
            spin_ns: wait_opt(c.spin_ns()),
            handoffs: c.handoffs,
            reacquisitions: c.acquisitions.saturating_sub(c.handoffs),
            handoffs_from: self.handoffs_from.clone(),
            handoffs_unknown: self.handoffs_unknown,
            wait_p50_ns: wait_opt(q(&all, 0.5)),
            wait_p99_ns: wait_opt(q(&all, 0.99)),
            wait_p999_ns: wait_opt(q(&all, 0.999)),
            wait_max_ns: wait_opt(if all.is_empty() { 0 } else { all.max() }),
            contended_wait_p50_ns: wait_opt(q(&self.wait_ns_hist, 0.5)),
            contended_wait_p99_ns: wait_opt(q(&self.wait_ns_hist, 0.99)),
            hold_p50_ns: hold_opt(q(hold, 0.5)),
            hold_p99_ns: hold_opt(q(hold, 0.99)),
            hold_max_ns: hold_opt(if timed_holds { hold.max() } else { 0 }),
            hold_ns: hold_opt(c.hold_ns),
            long_holds: hold_opt(c.long_holds),
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Serialisable lock statistics of one thread or a total. Percentiles come from HDR
/// histograms with 1 % resolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockSummary {
    /// Lock acquisitions.
    pub acquisitions: u64,
    /// Acquisitions whose first attempt found the lock held.
    pub collisions: u64,
    /// Wait-loop iterations.
    pub spins: u64,
    /// `spins / collisions` (0 without collisions).
    pub spins_per_collision: f64,
    /// Times a waiter yielded, slept or futex-waited.
    pub backoffs: u64,
    /// Time yielded/slept/parked, ns.
    pub sleep_ns: u64,
    /// Time waiting after a collision, ns (spin + sleep). This and the other wait fields are
    /// `None` when waits were not timed (stats mode `counters`) and there were collisions.
    pub wait_ns: Option<u64>,
    /// Time waiting on the CPU (`wait_ns - sleep_ns`), ns.
    pub spin_ns: Option<u64>,
    /// Acquisitions where the previous holder was another thread.
    pub handoffs: u64,
    /// Acquisitions where this thread (or, in a total, the same thread) held it last.
    pub reacquisitions: u64,
    /// Handoffs received per previous-holder thread index.
    pub handoffs_from: Vec<u64>,
    /// Handoffs from thread indices beyond `handoffs_from`.
    pub handoffs_unknown: u64,
    /// Wait per acquisition, uncontended ones counted as 0: median, ns.
    pub wait_p50_ns: Option<u64>,
    /// … 99th percentile, ns.
    pub wait_p99_ns: Option<u64>,
    /// … 99.9th percentile, ns.
    pub wait_p999_ns: Option<u64>,
    /// … maximum, ns.
    pub wait_max_ns: Option<u64>,
    /// Wait of contended acquisitions only: median, ns.
    pub contended_wait_p50_ns: Option<u64>,
    /// … 99th percentile, ns.
    pub contended_wait_p99_ns: Option<u64>,
    /// Hold time median, ns (`None` unless stats mode `full`).
    pub hold_p50_ns: Option<u64>,
    /// Hold time 99th percentile, ns.
    pub hold_p99_ns: Option<u64>,
    /// Longest hold, ns.
    pub hold_max_ns: Option<u64>,
    /// Total hold time, ns (utilisation = `hold_ns` / wall time).
    pub hold_ns: Option<u64>,
    /// Holds longer than 1 ms.
    pub long_holds: Option<u64>,
}
