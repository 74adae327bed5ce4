//! The request loop the engine runs: the same code for every scheme and for the `none`
//! reference, so the difference in CPU per request is the lock's.

use super::TableSpec;
use crate::engine::{Phase, ThreadCtx, Workload};
use crate::rwcache::{Entry, Layout, RwThreadStats, Scheme, SchemeKind};
use crate::stats::SplitMix64;
use std::sync::Mutex;

/// A scheme's workload, type-erased for the engine, with its stats.
pub trait CacheWorkload: Workload {
    /// Takes the per-thread stats of the last measurement (empty stats for threads that
    /// did not report).
    fn take_stats(&self) -> Vec<RwThreadStats>;
}

/// The request loop over scheme `S`.
struct Requests<S: Scheme> {
    cache: S,
    table: TableSpec,
    threads: usize,
    seed: u64,
    finals: Mutex<Vec<Option<RwThreadStats>>>,
}

/// Builds the workload of `kind` for `threads` threads.
///
/// # Panics
/// [`SchemeKind::Unlocked`] (the `none` reference) with `threads` ≠ 1.
pub fn workload(
    kind: SchemeKind,
    table: &TableSpec,
    threads: usize,
    seed: u64,
) -> Box<dyn CacheWorkload> {
    fn make<S: Scheme>(t: &TableSpec, threads: usize, seed: u64) -> Box<dyn CacheWorkload> {
        Box::new(Requests::<S> {
            cache: S::new(&Layout::new(t.entries), threads),
            table: t.clone(),
            threads,
            seed,
            finals: Mutex::new(vec![None; threads]),
        })
    }
    use crate::rwcache as r;
    match kind {
        SchemeKind::Spin => make::<r::Spin>(table, threads, seed),
        SchemeKind::RwSpin => make::<r::RwSpin>(table, threads, seed),
        SchemeKind::RwLock => make::<r::StdRw>(table, threads, seed),
        SchemeKind::ParkingLotRw => make::<r::ParkingLotRw>(table, threads, seed),
        SchemeKind::BrLock => make::<r::BrLock>(table, threads, seed),
        SchemeKind::SeqLock => make::<r::SeqLock>(table, threads, seed),
        SchemeKind::Rcu => make::<r::Rcu>(table, threads, seed),
        SchemeKind::Unlocked => make::<r::Unlocked>(table, threads, seed),
    }
}

#[inline]
fn busy_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = crate::locks::now_ns();
    while crate::locks::now_ns().saturating_sub(start) < ns {
        std::hint::spin_loop();
    }
}

impl<S: Scheme> Workload for Requests<S> {
    fn name(&self) -> String {
        format!("rwcache/{}", S::KIND)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        let measure = ctx.phase() == Phase::Measure;
        let mut h = self.cache.handle(ctx.thread);
        let mut rng = SplitMix64::new(
            self.seed
                ^ (ctx.thread as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
                ^ u64::from(measure),
        );
        let n = self.table.entries as u64;
        let always_write = self.table.write_ratio >= 1.0;
        // P(write) = threshold / 2^64.
        let threshold = (self.table.write_ratio * 2f64.powi(64)) as u64;
        let mut writes = 0u64;
        let mut acc = 0u64;
        let mut pending = 0u64;
        while !ctx.should_stop() {
            // Identical for every scheme and the `none` reference: nothing here is timed,
            // so lock cost is the difference in CPU per request.
            for _ in 0..self.table.lookups {
                let key = rng.below(n);
                if let Some(e) = self.cache.get(&mut h, key) {
                    acc = acc.wrapping_add(e.version ^ e.payload[0]);
                }
            }
            if always_write || rng.next_u64() < threshold {
                let key = rng.below(n);
                writes += 1;
                // Versions unique per thread: (count << 16) | thread.
                let version = (writes << 16) | (ctx.thread as u64 & 0xFFFF);
                self.cache.replace(&mut h, Entry::new(key, version));
                let c = S::common(&mut h);
                c.stats.write_lock_ns += c.timer.take();
            }
            busy_ns(self.table.work_ns);
            pending += 1;
            if pending == 16 {
                ctx.add_progress(pending);
                pending = 0;
            }
        }
        ctx.add_progress(pending);
        std::hint::black_box(acc);
        if measure {
            self.finals.lock().expect("not poisoned")[ctx.thread] = Some(self.cache.stats(&h));
        }
    }
}

impl<S: Scheme> CacheWorkload for Requests<S> {
    fn take_stats(&self) -> Vec<RwThreadStats> {
        let mut f = self.finals.lock().expect("not poisoned");
        (0..self.threads)
            .map(|i| f.get_mut(i).and_then(Option::take).unwrap_or_default())
            .collect()
    }
}
