//! `backoff`: TTAS with exponential backoff in *time*, then `sched_yield`, then sleep — the
//! SQL Server-style spinlock (SQLCAT whitepaper "Diagnosing and Resolving Spinlock Contention on SQL Server"; the `spin` scheme of rwcache).
//!
//! A waiter that finds the lock held waits a delay without touching the lock line, then
//! retries; the delay doubles up to a cap. Once the delays add up to `spin_limit_ns` it yields
//! the CPU `yields` times, then sleeps with a doubling sleep. Every yield and sleep counts as a
//! backoff (SQL Server: "the spinning thread fails to obtain the spinlock and yields"), and its
//! duration as sleep time. Delays are PAUSE loops sized with the calibrated PAUSE cost, so the
//! algorithm itself reads no clock.

use super::clock::{pause_n, pauses_for_ns};
use super::probe::Probe;
use super::tas::Ttas;
use super::{LockKind, LockThread, RawLock, owner_word};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Delays and thresholds of the `backoff` lock, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackoffParams {
    /// First delay (256 ns ≈ CK `ck_backoff`'s initial 2^9 iterations of its stall loop).
    pub min_delay_ns: u64,
    /// Delay cap (16 µs = 2^6 × the first delay; crossbeam `Backoff` caps spinning at 2^6).
    pub max_delay_ns: u64,
    /// Delay time summed over one acquisition before yielding (64 µs: a few context switches;
    /// past that the holder is likely not running).
    pub spin_limit_ns: u64,
    /// `sched_yield` calls before sleeping (4, as crossbeam's yield steps 7–10).
    pub yields: u32,
    /// First sleep (50 µs, Linux's default timer slack: a shorter nanosleep would not be
    /// shorter in practice).
    pub min_sleep_ns: u64,
    /// Sleep cap (1 ms; PostgreSQL's `s_lock` starts at 1 ms and grows to 1 s, which suits
    /// long database holds, not a lab lock).
    pub max_sleep_ns: u64,
}

impl Default for BackoffParams {
    fn default() -> Self {
        BackoffParams {
            min_delay_ns: 256,
            max_delay_ns: 16_384,
            spin_limit_ns: 64_000,
            yields: 4,
            min_sleep_ns: 50_000,
            max_sleep_ns: 1_000_000,
        }
    }
}

pub(crate) struct Backoff {
    /// An [`owner_word`], taken as TTAS does.
    word: AtomicU32,
    params: BackoffParams,
    min_pauses: u64,
    max_pauses: u64,
    limit_pauses: u64,
}

impl Backoff {
    pub(crate) fn new(params: BackoffParams) -> Self {
        Backoff {
            word: AtomicU32::new(0),
            params,
            min_pauses: pauses_for_ns(params.min_delay_ns),
            max_pauses: pauses_for_ns(params.max_delay_ns.max(params.min_delay_ns)),
            limit_pauses: pauses_for_ns(params.spin_limit_ns),
        }
    }
}

impl RawLock for Backoff {
    fn kind(&self) -> LockKind {
        LockKind::Backoff
    }

    const TRACKS_OWNER: bool = true;

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32 {
        let mine = owner_word::locked_by(t.index);
        if let Some(prev) = Ttas::try_take(&self.word, mine) {
            return prev;
        }
        self.acquire_slow(p, mine)
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        self.word
            .store(owner_word::released_by(t.index), Ordering::Release);
    }
}

impl Backoff {
    /// The contended path, out of line so the uncontended one inlines into its caller with
    /// the probe in registers (it cost 3 ns per acquisition in `counters` mode).
    #[cold]
    #[inline(never)]
    fn acquire_slow<P: Probe>(&self, p: &mut P, mine: u32) -> u32 {
        p.collision();
        let mut delay = self.min_pauses;
        let mut spun = 0;
        let mut yields = 0;
        let mut sleep_ns = self.params.min_sleep_ns;
        loop {
            if spun < self.limit_pauses {
                pause_n(delay);
                p.spins(delay);
                spun += delay;
                delay = (delay * 2).min(self.max_pauses);
            } else if yields < self.params.yields {
                p.backoff_begin();
                std::thread::yield_now();
                p.backoff_end();
                yields += 1;
            } else {
                p.backoff_begin();
                std::thread::sleep(Duration::from_nanos(sleep_ns));
                p.backoff_end();
                sleep_ns = (sleep_ns * 2).min(self.params.max_sleep_ns);
            }
            if let Some(prev) = Ttas::try_take(&self.word, mine) {
                return prev;
            }
        }
    }
}
