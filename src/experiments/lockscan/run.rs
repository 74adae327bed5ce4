//! Orchestration: every (scenario, lock) trial on the engine, interleaved round-robin over
//! the repetitions, each with its handoff ceiling measured just before it.
//!
//! Each round runs every trial once, the baseline (no scanner) first, so that a scenario's
//! run r and the baseline's run r are neighbours in time: the own-baseline ratio pairs
//! them, and drift between rounds (frequency, temperature, other load) cancels. A round
//! with a run disturbed while it ran is left out of the paired comparisons and run again
//! at the end (at most half as many rounds again).

use super::analysis::{Run, core_progress, disturbed_rounds, summarise};
use super::config::LockscanConfig;
use super::model::{LockscanReport, SCHEMA_VERSION};
use super::scenario::{Scenario, sweep_scope};
use super::verdict::{notes, verdict_lines};
use super::workload::LockScan;
use crate::engine::{Engine, IntervalSample};
use crate::locks::LockKind;
use crate::topology::{Proximity, Topology};
use anyhow::Result;

/// Live per-interval callback: scenario, lock, the engine's sample, spins per lock thread
/// in that interval.
pub type OnInterval<'a> = dyn FnMut(&Scenario, LockKind, &IntervalSample, &[u64]) + 'a;

/// Runs every scenario × lock, interleaved, `repeat` times. `on_interval` receives live
/// per-interval rows (scenario index, lock, sample, spins per lock thread so far).
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &LockscanConfig,
    scen: &[Scenario],
    on_interval: &mut OnInterval<'_>,
) -> Result<LockscanReport> {
    // (scenario, lock) trials, interleaved round-robin over repetitions: `runs[t][r]` ran
    // in round r.
    let trials: Vec<(usize, LockKind)> = scen
        .iter()
        .enumerate()
        .flat_map(|(i, _)| cfg.locks.iter().map(move |&k| (i, k)))
        .collect();
    let mut runs: Vec<Vec<Run>> = trials.iter().map(|_| Vec::new()).collect();
    // Each scanner scenario's one-per-core run for its scanners, run right after it in
    // every round (with a baseline to pair the lock threads with): the other half of the
    // shared core's progress.
    let alone: Vec<Option<Scenario>> = scen
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (cfg.baseline && i > 0 && scen[0].scan_cpus.is_empty())
                .then(|| s.scanner_alone(topo))
                .flatten()
        })
        .collect();
    let mut alone_runs: Vec<Vec<Run>> = trials.iter().map(|_| Vec::new()).collect();
    let mut interrupted = false;
    let mut rounds = cfg.repeat;
    let mut extended = false;
    let mut round = 0;
    'outer: loop {
        if round == rounds && !extended {
            // Rounds with a run disturbed while it ran, run again once at the end (at most
            // half as many again), so that leaving them out of the paired comparisons
            // leaves the rounds asked for where the machine calms down.
            extended = true;
            rounds += again(&runs, &alone_runs, cfg.repeat);
        }
        if round == rounds {
            break;
        }
        for (ti, &(si, kind)) in trials.iter().enumerate() {
            if crate::interrupt::requested() {
                interrupted = true;
                break 'outer;
            }
            let run = run_once(engine, topo, cfg, &scen[si], kind, on_interval)?;
            let stop = run.result.interrupted;
            runs[ti].push(run);
            if stop {
                interrupted = true;
                break 'outer;
            }
            if let Some(a) = &alone[si] {
                if crate::interrupt::requested() {
                    interrupted = true;
                    break 'outer;
                }
                let run = run_once(engine, topo, cfg, a, kind, on_interval)?;
                let stop = run.result.interrupted;
                if !stop {
                    alone_runs[ti].push(run);
                } else {
                    interrupted = true;
                    break 'outer;
                }
            }
        }
        round += 1;
    }
    let smt = topo.threads_per_core() > 1;
    let mut results = Vec::new();
    for (ti, &(si, kind)) in trials.iter().enumerate() {
        if runs[ti].is_empty() {
            continue;
        }
        let baseline = if cfg.baseline && si > 0 && scen[0].scan_cpus.is_empty() {
            trials
                .iter()
                .position(|&(s, k)| s == 0 && k == kind)
                .map(|b| (&scen[0], runs[b].as_slice()))
        } else {
            None
        };
        let mut r = summarise(
            topo,
            &scen[si],
            kind,
            &runs[ti],
            baseline,
            cfg.stats,
            interrupted,
        );
        let p = core_progress(
            topo,
            &scen[si],
            &runs[ti],
            baseline,
            alone[si].as_ref().map(|_| alone_runs[ti].as_slice()),
        );
        r.scan_bytes_per_sec = p.scan_bytes_per_sec;
        r.scan_alone_bytes_per_sec = p.scan_alone_bytes_per_sec;
        r.scan_ratios = p.scan_ratios;
        r.core_yield_ratios = p.core_yield_ratios;
        r.core_yield = p.core_yield;
        r.disturbed_rounds = disturbed_rounds(
            &runs[ti],
            baseline.map(|(_, br)| br),
            alone[si].as_ref().map(|_| alone_runs[ti].as_slice()),
        );
        r.pinning_ok &= alone_runs[ti].iter().all(|a| a.result.pinning_ok());
        r.steal_share = r
            .steal_share
            .into_iter()
            .chain(alone_runs[ti].iter().filter_map(|a| a.result.steal_share))
            .reduce(f64::max);
        results.push(r);
    }
    let steal = runs.iter().flatten().map(|r| r.result.steal_share);
    let measured: Vec<&crate::counters::Measurement> = runs
        .iter()
        .flatten()
        .flat_map(|r| r.result.threads.iter().filter_map(|t| t.counters.as_ref()))
        .collect();
    let counters =
        (!measured.is_empty()).then(|| crate::counters::Status::of(cfg.spec.counters(), measured));
    // The largest L2 a scanner ran beside: a buffer no larger stays inside its core.
    let scan_l2_bytes = scen
        .iter()
        .flat_map(|s| &s.scan_cpus)
        .filter_map(|&c| topo.cache_of(c, 2)?.size_bytes)
        .max();
    let notes = notes(
        cfg,
        &results,
        smt,
        topo.machine.hypervisor,
        steal,
        scan_l2_bytes,
    );
    Ok(LockscanReport {
        schema_version: SCHEMA_VERSION,
        smt,
        hypervisor: topo.machine.hypervisor,
        cs_ns: cfg.cs_ns,
        scan_bytes: cfg.scan_bytes,
        scan_l2_bytes,
        duration_ns: cfg.spec.duration().as_nanos() as u64,
        repeat: cfg.repeat,
        lock_stats: cfg.stats,
        c2c_latency_ns: results.iter().find_map(|r| r.c2c_latency_ns),
        scope: sweep_scope(topo, &cfg.layout),
        verdict: verdict_lines(&results, smt),
        results,
        notes,
        counters,
    })
}

/// One run of scenario `s` with lock `kind`, its live intervals passed to `on_interval`.
fn run_once(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &LockscanConfig,
    s: &Scenario,
    kind: LockKind,
    on_interval: &mut OnInterval<'_>,
) -> Result<Run> {
    let w = LockScan::new(
        kind,
        s.lock_cpus.len(),
        cfg.cs_ns,
        cfg.scan_bytes,
        cfg.stats,
    );
    // The handoff ceiling, measured just before the run: a hypervisor's host moves the
    // vCPUs between runs (c2c here spanned 11–112 ns within minutes).
    let latencies = class_latencies(engine, topo, &s.lock_cpus);
    let mut prev_spins = vec![0u64; s.lock_cpus.len()];
    let result = engine.run_observed(&s.plan(), &cfg.spec, &w, &mut |sample| {
        let now = w.live_spins();
        let delta: Vec<u64> = now
            .iter()
            .zip(&prev_spins)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        prev_spins = now;
        on_interval(s, kind, sample, &delta);
    })?;
    // Where the workload did not run (the fake engine) its passes stand in for the bytes.
    let scanned = w
        .take_scanned(s.scan_cpus.len())
        .into_iter()
        .enumerate()
        .map(|(j, b)| {
            b.unwrap_or_else(|| {
                let passes = result
                    .threads
                    .get(s.lock_cpus.len() + j)
                    .map_or(0, |t| t.ops);
                passes.saturating_mul(cfg.scan_bytes as u64)
            })
        })
        .collect();
    Ok(Run {
        disturbed: crate::engine::disturbance::of_run(&result),
        result,
        stats: w.take_stats(),
        latencies,
        scanned,
    })
}

/// How many rounds to run again at the end: one per round of the first `repeat` in which
/// any run (of any trial, or a scanners' one-per-core run) was disturbed, at most half of
/// `repeat` (rounded up).
fn again(runs: &[Vec<Run>], alone_runs: &[Vec<Run>], repeat: usize) -> usize {
    let disturbed = (0..repeat)
        .filter(|&r| {
            runs.iter()
                .chain(alone_runs)
                .any(|t| t.get(r).is_some_and(|x| x.disturbed.is_some()))
        })
        .count();
    disturbed.min(repeat.div_ceil(2))
}

/// One c2c latency per proximity class among `cpus` (the first pair of each class in
/// their order; at most four measurements of ≈ 10 ms), now. Empty on the fake engine.
fn class_latencies(engine: &dyn Engine, topo: &Topology, cpus: &[u32]) -> Vec<(Proximity, f64)> {
    let mut tried: Vec<Proximity> = vec![Proximity::SameCpu];
    let mut out = Vec::new();
    for (i, &a) in cpus.iter().enumerate() {
        for &b in &cpus[i + 1..] {
            let p = topo.proximity(a, b);
            if tried.contains(&p) {
                continue;
            }
            tried.push(p);
            if let Some(l) = engine.cache_line_latency_ns(a, b) {
                out.push((p, l));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FakeEngine, RunSpec};
    use crate::experiments::lockscan::config::Layout;
    use std::time::Duration;

    #[test]
    fn rounds_with_a_disturbed_run_are_run_again_at_most_half_as_many_again() {
        let topo = crate::topology::fixture::topology(2, 2, false);
        let spec = RunSpec::new(Duration::ZERO, Duration::from_millis(10)).unwrap();
        let cfg = LockscanConfig::new(
            Layout::Sweep(crate::placement::Scope::Package),
            vec![LockKind::Ttas],
            spec,
        )
        .unwrap();
        let s = Scenario {
            label: "baseline (no scanner)".into(),
            lock_cpus: vec![0, 1],
            scan_cpus: Vec::new(),
        };
        let engine = FakeEngine::new(7).with_topology(&topo);
        let one = run_once(
            &engine,
            &topo,
            &cfg,
            &s,
            LockKind::Ttas,
            &mut |_, _, _, _| {},
        )
        .unwrap();
        assert_eq!(one.disturbed, None, "a synthetic run is never disturbed");
        let mark = |d: bool| Run {
            disturbed: d.then(|| "steal".into()),
            ..one.clone()
        };
        // Two trials × 4 rounds: round 2 disturbed in both (one round again), round 4 in
        // a scanners' one-per-core run (another).
        let runs = vec![
            vec![mark(false), mark(true), mark(false), mark(false)],
            vec![mark(false), mark(true), mark(false), mark(false)],
        ];
        let alone = vec![
            vec![mark(false), mark(false), mark(false), mark(true)],
            vec![],
        ];
        assert_eq!(again(&runs, &alone, 4), 2);
        // Never more than half as many again: 5 of 5 disturbed gives 3.
        let all = vec![(0..5).map(|_| mark(true)).collect::<Vec<_>>()];
        assert_eq!(again(&all, &[], 5), 3);
        assert_eq!(again(&[vec![mark(false); 3]], &[], 3), 0);
    }
}
