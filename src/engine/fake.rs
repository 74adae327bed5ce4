//! A deterministic stand-in for the real engine (hyperfine's mock-executor idea).
//!
//! [`FakeEngine`] never runs the workload (it only asks its name) and never reads a clock.
//! It makes up a [`RunResult`] that is *plausible* — rates per thread with per-interval
//! jitter, CPU time shrinking and run-queue delay growing when threads share a CPU — and
//! *reproducible*: the same seed, plan and spec give byte-identical results, and the n-th
//! run of an engine always equals the n-th run of a fresh engine with the same seed, so
//! repetitions differ from each other but not between test runs. Results are marked
//! `synthetic: true`. Use it for tests of statistics, reports and CLI layers, never for
//! numbers anyone reads as measurements.

use super::{Engine, IntervalSample, PingPongSpec, RunResult, RunSpec, ThreadResult, Workload};
use crate::cpuset::CpuSet;
use crate::placement::Plan;
use crate::stats::SplitMix64;
use crate::topology::{Proximity, Topology};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Makes up deterministic results; see the module docs.
#[derive(Debug)]
pub struct FakeEngine {
    /// Seed of every number produced.
    pub seed: u64,
    /// Operations per second of one thread alone on a CPU.
    pub ops_per_sec: f64,
    /// Relative per-interval jitter (0.02 = ±2 % uniform).
    pub jitter: f64,
    /// Speed factor per thread index, cycled (e.g. `[1.0, 0.1]` makes odd threads 10×
    /// slower, like a lock thread sharing a core with a scanner). Empty = all 1.
    pub thread_factors: Vec<f64>,
    /// Single-thread rates for workloads whose name starts with the given prefix (e.g.
    /// `oltp-insert` at 30,000/s), overriding `ops_per_sec`.
    pub rates: Vec<(String, f64)>,
    /// The machine c2c latencies are made up for (by proximity class); without it every
    /// pair gets the same-L3 figure.
    pub topology: Option<Topology>,
    runs: AtomicU64,
    clock_ns: AtomicU64,
}

impl Clone for FakeEngine {
    fn clone(&self) -> Self {
        Self {
            seed: self.seed,
            ops_per_sec: self.ops_per_sec,
            jitter: self.jitter,
            thread_factors: self.thread_factors.clone(),
            rates: self.rates.clone(),
            topology: self.topology.clone(),
            runs: AtomicU64::new(self.runs.load(Ordering::Relaxed)),
            clock_ns: AtomicU64::new(self.clock_ns.load(Ordering::Relaxed)),
        }
    }
}

impl FakeEngine {
    /// 10 M ops/s per thread, ±2 % jitter, all threads equal.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            ops_per_sec: 10e6,
            jitter: 0.02,
            thread_factors: Vec::new(),
            rates: Vec::new(),
            topology: None,
            runs: AtomicU64::new(0),
            clock_ns: AtomicU64::new(0),
        }
    }

    /// Same engine with `rate` ops/s per thread for workloads named `prefix…`.
    pub fn with_rate_for(mut self, prefix: &str, rate: f64) -> Self {
        self.rates.push((prefix.to_string(), rate));
        self
    }

    /// Same engine making c2c latencies up by proximity on `topo`.
    pub fn with_topology(mut self, topo: &Topology) -> Self {
        self.topology = Some(topo.clone());
        self
    }

    /// The single-thread rate of `workload`.
    fn rate_of(&self, workload: &str) -> f64 {
        self.rates
            .iter()
            .find(|(p, _)| workload.starts_with(p.as_str()))
            .map_or(self.ops_per_sec, |r| r.1)
    }

    /// Same engine with per-thread speed factors.
    pub fn with_thread_factors(mut self, f: Vec<f64>) -> Self {
        self.thread_factors = f;
        self
    }

    /// Same engine with another single-thread rate.
    pub fn with_ops_per_sec(mut self, r: f64) -> Self {
        self.ops_per_sec = r;
        self
    }

    /// The result of run number `index` (0-based) — what the `index`-th call returns.
    pub fn result_for(&self, index: u64, plan: &Plan, spec: &RunSpec, workload: &str) -> RunResult {
        let mut rng = SplitMix64::new(self.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        // Threads per CPU, for threads pinned to one CPU; `os`-style sets share evenly.
        let mut load: BTreeMap<u32, f64> = BTreeMap::new();
        for t in &plan.threads {
            let share = 1.0 / t.cpus.len().max(1) as f64;
            for c in t.cpus.iter() {
                *load.entry(c).or_default() += share;
            }
        }
        let cpu_share = |cpus: &CpuSet| -> f64 {
            let mean_load = cpus.iter().map(|c| load[&c]).sum::<f64>() / cpus.len().max(1) as f64;
            (1.0 / mean_load).min(1.0)
        };
        let intervals = spec.intervals();
        let interval_ns: Vec<u64> = (0..intervals)
            .map(|k| {
                let end = (spec.interval() * (k as u32 + 1)).min(spec.duration());
                let start = spec.interval() * k as u32;
                // A few µs of coordinator lateness, as real runs show.
                (end - start).as_nanos() as u64 + rng.below(50_000)
            })
            .collect();
        let measured_ns: u64 = interval_ns.iter().sum();
        let threads = plan
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let share = cpu_share(&t.cpus);
                let factor = if self.thread_factors.is_empty() {
                    1.0
                } else {
                    self.thread_factors[i % self.thread_factors.len()]
                };
                let rate = self.rate_of(workload) * factor * share;
                let jit = |rng: &mut SplitMix64| 1.0 + self.jitter * (2.0 * rng.next_f64() - 1.0);
                let interval_ops: Vec<u64> = interval_ns
                    .iter()
                    .map(|&ns| (rate * ns as f64 / 1e9 * jit(&mut rng)).max(0.0).round() as u64)
                    .collect();
                let warmup_ops =
                    (rate * spec.warmup().as_secs_f64() * 0.9 * jit(&mut rng)).round() as u64;
                let cpu_time_ns =
                    (measured_ns as f64 * share * (0.995 + 0.005 * rng.next_f64())) as u64;
                let waiting = measured_ns as f64 * (1.0 - share);
                // One involuntary switch per ~3 ms slice given away; a few voluntary ones.
                let involuntary = (waiting / 3e6).round() as u64 + rng.below(3);
                ThreadResult {
                    thread: i,
                    tid: 0,
                    cpus: t.cpus.clone(),
                    observed_cpus: t.cpus.clone(),
                    warmup_ops,
                    ops: interval_ops.iter().sum(),
                    interval_ops,
                    cpu_time_ns,
                    voluntary_ctx_switches: rng.below(4),
                    involuntary_ctx_switches: involuntary,
                    runqueue_delay_ns: Some(waiting as u64 + rng.below(100_000)),
                    counters: None,
                    counters_span_ns: measured_ns,
                }
            })
            .collect();
        RunResult {
            steal_share: None,
            workload: workload.to_string(),
            placement: plan.request.clone(),
            spec: spec.clone(),
            warmup_ns: spec.warmup().as_nanos() as u64,
            measured_ns,
            interval_ns,
            stop_latency_ns: 20_000 + rng.below(200_000),
            threads,
            pinning_violations: Vec::new(),
            interrupted: false,
            synthetic: true,
            nice_offset: 0,
        }
    }
}

impl Engine for FakeEngine {
    fn run_observed(
        &self,
        plan: &Plan,
        spec: &RunSpec,
        workload: &dyn Workload,
        on_interval: &mut dyn FnMut(&IntervalSample),
    ) -> anyhow::Result<RunResult> {
        let index = self.runs.fetch_add(1, Ordering::Relaxed);
        let r = self.result_for(index, plan, spec, &workload.name());
        for (k, &ns) in r.interval_ns.iter().enumerate() {
            on_interval(&IntervalSample {
                index: k,
                elapsed_ns: ns,
                ops: r.threads.iter().map(|t| t.interval_ops[k]).collect(),
            });
        }
        Ok(r)
    }

    /// Latencies typical of each proximity class (SMT siblings share L1/L2; another L3 or
    /// package crosses the interconnect), ±10 %, from the seed and the pair.
    fn ping_pong(&self, a: u32, b: u32, spec: &PingPongSpec) -> anyhow::Result<Vec<f64>> {
        let proximity = self
            .topology
            .as_ref()
            .map_or(Proximity::SameL3, |t| t.proximity(a, b));
        let base = match proximity {
            Proximity::SameCpu => 5.0,
            Proximity::SmtSibling => 18.0,
            Proximity::SameL3 => 65.0,
            Proximity::OtherL3 => 110.0,
            Proximity::OtherPackage => 190.0,
        };
        let mut rng = SplitMix64::new(self.seed ^ (u64::from(a) << 32 | u64::from(b)));
        Ok((0..spec.samples)
            .map(|_| base * (1.0 + 0.1 * rng.next_f64()))
            .collect())
    }

    /// 1.25 s per call: phase wall times in fake reports are reproducible.
    fn now_ns(&self) -> u64 {
        self.clock_ns.fetch_add(1_250_000_000, Ordering::Relaxed)
    }

    fn synthetic(&self) -> bool {
        true
    }
}
