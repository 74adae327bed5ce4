//! Cache-line ping-pong between two pinned threads: the one-way latency of handing a
//! modified cache line from one CPU to another.
//!
//! The method of nviennot/core-to-core-latency (`src/bench/cas.rs`): one
//! `AtomicBool` on its own cache line; the *ping* thread flips it false→true by
//! compare-exchange, the *pong* thread flips it back true→false, both with Relaxed
//! ordering, each spinning until its own exchange succeeds. Every exchange must pull the
//! line over in the modified state, so one round trip is two line transfers and the
//! one-way latency is round trip / 2. Both threads pin themselves first and meet at a
//! barrier; each sample times `round_trips` round trips with one clock read on either
//! side, and the first sample (cold caches, CPUs leaving idle states) is discarded.
//!
//! A pair has a time limit ([`pair_time_limit`]). The method assumes both threads run at once;
//! when they take turns on one physical CPU (a hypervisor running two vCPUs on one host
//! CPU), each handoff waits for the scheduler to switch threads — milliseconds, not
//! nanoseconds — and a fixed count of round trips would take hours. Past the limit the
//! pair stops with the samples it has, the one in progress timed over the round trips it
//! completed.

use crate::affinity;
use crate::cpuset::CpuSet;
use anyhow::{Result, anyhow, bail};
use crossbeam_utils::CachePadded;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const PING: bool = false;
const PONG: bool = true;

/// How much to measure per CPU pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingPongSpec {
    /// Samples kept (one more is taken and discarded as warm-up).
    pub samples: usize,
    /// Round trips timed per sample.
    pub round_trips: usize,
}

impl Default for PingPongSpec {
    /// 300 samples × 1,000 round trips, as core-to-core-latency.
    fn default() -> Self {
        Self {
            samples: 300,
            round_trips: 1000,
        }
    }
}

impl PingPongSpec {
    /// The short measurement an experiment takes just before a run for its handoff
    /// ceiling ([`crate::engine::Engine::cache_line_latency_ns`]): about 10 ms.
    pub const CEILING: PingPongSpec = PingPongSpec {
        samples: 21,
        round_trips: 500,
    };
}

/// One-way handoff time the [`pair_time_limit`] allows for: 50 times the slowest cache-line
/// transfers measured across sockets (a few hundred ns), far below a scheduler switch.
pub const SLOWEST_HANDOFF_NS: f64 = 10_000.0;

/// Longest a pair of `spec` may take: every handoff of every sample (the discarded one
/// too) at [`SLOWEST_HANDOFF_NS`], plus 2 s for starting and pinning the threads. The
/// default 300 × 1,000 round trips: 8 s; a handoff ceiling ([`PingPongSpec::CEILING`]):
/// 2.2 s.
pub fn pair_time_limit(spec: &PingPongSpec) -> Duration {
    let handoffs = (spec.samples + 1) as f64 * spec.round_trips as f64 * 2.0;
    Duration::from_secs(2) + Duration::from_secs_f64(handoffs * SLOWEST_HANDOFF_NS / 1e9)
}

/// Ping-pongs one cache line between CPUs `a` (ping, timing) and `b` (pong) and returns
/// the one-way latency of each kept sample, ns. Returns fewer samples when Ctrl-C arrives
/// (check [`crate::interrupt::requested`]) or the pair reaches its [`pair_time_limit`]; then
/// the sample in progress is kept as its time so far over the round trips it completed
/// (an overestimate by at most the unfinished wait), the discarded first one too when it
/// is all there is.
pub fn ping_pong(a: u32, b: u32, spec: &PingPongSpec) -> Result<Vec<f64>> {
    if a == b {
        bail!("ping-pong needs two different CPUs (got CPU {a} twice)");
    }
    if spec.samples == 0 || spec.round_trips == 0 {
        bail!("ping-pong needs at least 1 sample of at least 1 round trip");
    }
    let flag = CachePadded::new(AtomicBool::new(PING));
    let stop = CachePadded::new(AtomicBool::new(false));
    let failed = AtomicBool::new(false);
    let barrier = Barrier::new(2);
    let pin = |cpu: u32| -> Result<()> {
        let r = affinity::set_affinity(0, &CpuSet::from_cpus([cpu]))
            .map_err(|e| anyhow!("pinning a ping-pong thread to CPU {cpu}: {e}"));
        if r.is_err() || affinity::current_cpu() != Some(cpu) {
            failed.store(true, Ordering::SeqCst);
        }
        barrier.wait();
        r?;
        if failed.load(Ordering::SeqCst) {
            bail!("ping-pong threads on CPUs {a} and {b} could not both be pinned");
        }
        Ok(())
    };
    std::thread::scope(|s| {
        let pong = std::thread::Builder::new()
            .name(format!("smtlab-pong{b}"))
            .spawn_scoped(s, || -> Result<()> {
                pin(b)?;
                loop {
                    while flag
                        .compare_exchange(PONG, PING, Ordering::Relaxed, Ordering::Relaxed)
                        .is_err()
                    {
                        // No PAUSE: as in the reference method, so numbers compare.
                        if stop.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                    }
                }
            })?;
        let ping = std::thread::Builder::new()
            .name(format!("smtlab-ping{a}"))
            .spawn_scoped(s, || -> Result<Vec<f64>> {
                let r = (|| {
                    pin(a)?;
                    let deadline = Instant::now() + pair_time_limit(spec);
                    let mut out = Vec::with_capacity(spec.samples);
                    for k in 0..=spec.samples {
                        if crate::interrupt::requested() {
                            break;
                        }
                        let t0 = Instant::now();
                        let mut done = 0;
                        let mut late = false;
                        // The clock is read once every 2^16 failed exchanges of the sample:
                        // a handoff takes a few of them, so about once per thousand round
                        // trips when the partner runs, every few ms when it does not.
                        let mut spins = 0u32;
                        while done < spec.round_trips {
                            while flag
                                .compare_exchange(PING, PONG, Ordering::Relaxed, Ordering::Relaxed)
                                .is_err()
                            {
                                spins = spins.wrapping_add(1);
                                if spins & 0xffff == 0 && Instant::now() > deadline {
                                    late = true;
                                    break;
                                }
                            }
                            if late {
                                break;
                            }
                            done += 1;
                        }
                        let ns = t0.elapsed().as_nanos() as f64;
                        let over = late || Instant::now() > deadline;
                        if done > 0 && (k > 0 || (over && out.is_empty())) {
                            out.push(ns / done as f64 / 2.0);
                        }
                        if over {
                            break;
                        }
                    }
                    Ok(out)
                })();
                stop.store(true, Ordering::Relaxed);
                r
            })?;
        let samples = ping
            .join()
            .map_err(|_| anyhow!("the ping thread panicked"))?;
        stop.store(true, Ordering::Relaxed);
        pong.join()
            .map_err(|_| anyhow!("the pong thread panicked"))??;
        samples
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_limit_allows_every_handoff_at_the_slowest_transfer() {
        // 301 samples × 1,000 round trips × 2 handoffs × 10 µs = 6.02 s, plus 2 s.
        let d = pair_time_limit(&PingPongSpec::default());
        assert_eq!(d.as_millis(), 8020);
        // 22 × 500 × 2 × 10 µs = 0.22 s, plus 2 s.
        assert_eq!(pair_time_limit(&PingPongSpec::CEILING).as_millis(), 2220);
    }
}
