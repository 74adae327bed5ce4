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

use crate::affinity;
use crate::cpuset::CpuSet;
use anyhow::{Result, anyhow, bail};
use crossbeam_utils::CachePadded;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

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

/// Ping-pongs one cache line between CPUs `a` (ping, timing) and `b` (pong) and returns
/// the one-way latency of each kept sample, ns. Returns fewer samples when Ctrl-C arrives
/// (check [`crate::interrupt::requested`]).
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
                    let mut out = Vec::with_capacity(spec.samples);
                    for k in 0..=spec.samples {
                        if crate::interrupt::requested() {
                            break;
                        }
                        let t0 = Instant::now();
                        for _ in 0..spec.round_trips {
                            while flag
                                .compare_exchange(PING, PONG, Ordering::Relaxed, Ordering::Relaxed)
                                .is_err()
                            {}
                        }
                        let ns = t0.elapsed().as_nanos() as f64;
                        if k > 0 {
                            out.push(ns / spec.round_trips as f64 / 2.0);
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
