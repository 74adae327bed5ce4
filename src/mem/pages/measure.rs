//! The three measurements, each over one [`Mapping`]: dependent loads along a random
//! cycle (latency), sequential reads (bandwidth), and first touch (page faults). Each
//! looks at `stop` at least every few milliseconds.
//!
//! The chase follows lmbench's `lat_mem_rd`: every 64-byte line of the working set holds
//! the address of the next, in one random cycle (Sattolo's algorithm), so each load's
//! address depends on the previous load and the prefetchers cannot guess it. The cycle is
//! the same for every page size, so the curves differ only in how pages are backed.

use super::buffer::Mapping;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Bytes per chase node: one cache line.
pub const LINE: usize = 64;
/// Loads between clock reads (and stop checks): 5 µs from L1 (clock overhead < 1 %),
/// ~1 ms from DRAM behind TLB misses.
const HOPS: u64 = 4096;
/// Bytes read between clock reads in the bandwidth loop (several passes over a small
/// working set).
const CHUNK: usize = 256 << 10;

/// A random single cycle through `n` lines (Sattolo's algorithm: `perm[i]` is the line
/// after line `i`). None when `stop` turned true (checked every 1 Mi lines).
pub fn cycle(n: usize, seed: u64, stop: &dyn Fn() -> bool) -> Option<Vec<u32>> {
    let n = n.clamp(2, u32::MAX as usize);
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut rng = crate::stats::SplitMix64::new(seed);
    for i in (1..n).rev() {
        if i % (1 << 20) == 0 && stop() {
            return None;
        }
        let j = rng.below(i as u64) as usize; // j < i: one cycle (Sattolo), not Fisher–Yates
        perm.swap(i, j);
    }
    Some(perm)
}

/// Writes `perm`'s cycle into the first `perm.len()` lines of `m`: line i holds the
/// address of line `perm[i]`. Sequential writes; `stop` every 1 Mi lines.
pub fn write_cycle(m: &Mapping, perm: &[u32], stop: &dyn Fn() -> bool) -> bool {
    assert!(
        perm.len() * LINE <= m.len(),
        "cycle larger than the mapping"
    );
    let base = m.as_ptr();
    for (i, &next) in perm.iter().enumerate() {
        if i % (1 << 20) == 0 && stop() {
            return false;
        }
        // SAFETY: both lines lie inside the mapping (checked above); 64-byte aligned.
        unsafe {
            let at = base.add(i * LINE) as *mut usize;
            at.write(base.add(next as usize * LINE) as usize);
        }
    }
    true
}

/// Follows the cycle from `*at` for at least `target`, timing batches of `HOPS` loads,
/// and returns the median batch's ns per load (so a batch during which the vCPU was
/// preempted, or another thread ran, does not move the result); None when stopped first.
/// `*at` keeps the position for the next sample.
pub fn chase(at: &mut usize, target: Duration, stop: &dyn Fn() -> bool) -> Option<f64> {
    let mut p = *at;
    let mut per_load = Vec::new();
    let t0 = Instant::now();
    let mut last = t0;
    loop {
        for _ in 0..HOPS {
            // SAFETY: p always holds an address written by `write_cycle` inside the
            // mapping, which outlives the chase.
            p = unsafe { *(p as *const usize) };
        }
        let now = Instant::now();
        per_load.push((now - last).as_nanos() as f64 / HOPS as f64);
        last = now;
        if now - t0 >= target {
            *at = black_box(p);
            return Some(crate::stats::median(&per_load));
        }
        if stop() {
            *at = p;
            return None;
        }
    }
}

/// Reads `[0, len)` of `m` sequentially, wrapping around, for at least `target`, timing
/// batches of at least `CHUNK` bytes; returns the median batch's bytes per second, or
/// None when stopped.
pub fn read_bandwidth(
    m: &Mapping,
    len: usize,
    target: Duration,
    stop: &dyn Fn() -> bool,
) -> Option<f64> {
    let len = len.min(m.len()) / 8 * 8;
    // SAFETY: [0, len) lies inside the mapping, which was touched, and u64-aligned.
    let words = unsafe { std::slice::from_raw_parts(m.as_ptr() as *const u64, len / 8) };
    let chunk = (CHUNK / 8).min(words.len());
    let mut pos = 0usize;
    let mut sum = 0u64;
    let mut rates = Vec::new();
    let t0 = Instant::now();
    let mut last = t0;
    loop {
        let mut batch = 0usize;
        while batch < CHUNK / 8 {
            let end = (pos + chunk).min(words.len());
            sum = sum.wrapping_add(words[pos..end].iter().fold(0u64, |a, &x| a.wrapping_add(x)));
            batch += end - pos;
            pos = if end == words.len() { 0 } else { end };
        }
        let now = Instant::now();
        rates.push((batch * 8) as f64 / (now - last).as_secs_f64().max(1e-9));
        last = now;
        if now - t0 >= target {
            black_box(sum);
            return Some(crate::stats::median(&rates));
        }
        if stop() {
            return None;
        }
    }
}

/// One first-touch sample: how long faulting a fresh mapping in took, and how many faults
/// the kernel counted for it (`ru_minflt` of this thread, getrusage(2)).
#[derive(Debug, Clone, Copy)]
pub struct Touch {
    pub ns: f64,
    pub faults: u64,
}

fn minor_faults() -> u64 {
    // SAFETY: getrusage fills the struct; RUSAGE_THREAD counts this thread only.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut u);
        u.ru_minflt as u64
    }
}

/// Touches every 4 KiB of a fresh mapping and times it; None when stopped.
pub fn first_touch(m: &Mapping, stop: &dyn Fn() -> bool) -> Option<Touch> {
    let f0 = minor_faults();
    let t0 = Instant::now();
    if !m.touch(stop) {
        return None;
    }
    let ns = t0.elapsed().as_nanos() as f64;
    Some(Touch {
        ns,
        faults: minor_faults().saturating_sub(f0),
    })
}

#[cfg(test)]
mod tests {
    use super::super::buffer::PageKind;
    use super::*;

    #[test]
    fn the_cycle_visits_every_line_once() {
        let perm = cycle(1000, 9, &|| false).unwrap();
        let mut seen = vec![false; 1000];
        let mut i = 0usize;
        for _ in 0..1000 {
            assert!(!seen[i]);
            seen[i] = true;
            i = perm[i] as usize;
        }
        assert_eq!(i, 0);
        assert_eq!(perm, cycle(1000, 9, &|| false).unwrap(), "seeded");
    }

    #[test]
    fn chase_bandwidth_and_touch_run_on_a_small_mapping() {
        let m = Mapping::new(PageKind::Small, 1 << 20).unwrap();
        assert!(m.touch(&|| false));
        let n = (256 << 10) / LINE;
        let perm = cycle(n, 1, &|| false).unwrap();
        assert!(write_cycle(&m, &perm, &|| false));
        let mut at = m.as_ptr() as usize;
        let ns = chase(&mut at, Duration::from_millis(2), &|| false).unwrap();
        assert!(ns > 0.0 && ns.is_finite());
        let start = m.as_ptr() as usize;
        assert!(
            (start..start + n * LINE).contains(&at),
            "stays inside the cycle"
        );
        let bw = read_bandwidth(&m, 256 << 10, Duration::from_millis(2), &|| false).unwrap();
        assert!(bw > 0.0);
        assert_eq!(
            chase(&mut at, Duration::from_secs(60), &|| true),
            None,
            "stop is seen"
        );
        let fresh = Mapping::new(PageKind::Small, 2 << 20).unwrap();
        let t = first_touch(&fresh, &|| false).unwrap();
        assert!(t.faults >= 1 && t.ns > 0.0, "{t:?}");
    }
}
