//! Orchestration over any [`Engine`]: plan each thread count, run every (threads, scheme)
//! trial and the `none` reference round-robin, then summarise into the report.

use super::analysis::{self, RunOutcome};
use super::model::{Note, RwcacheReport, SCHEMA_VERSION, SchemeResult};
use super::{RwcacheConfig, view, workload};
use crate::engine::{Engine, Order, RunResult, schedule};
use crate::placement::{self, Plan};
use crate::rwcache::{Layout, SchemeKind};
use crate::topology::Topology;
use anyhow::Result;

/// Called after each run: threads, scheme, repetition index, the run.
pub type OnRun<'a> = dyn FnMut(usize, SchemeKind, usize, &RunResult) + 'a;

/// The thread counts that could be placed, each with its plan (`all` may place more
/// threads than asked: every sibling of n cores).
type Plans = Vec<(usize, Plan)>;

/// (index into the plans, scheme): one trial, run once per round.
type Trial = (usize, SchemeKind);

/// Runs every (threads, scheme) trial `repeat` times, interleaved round-robin, and builds
/// the report. Thread counts the placement cannot serve are skipped with a note.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &RwcacheConfig,
    on_run: &mut OnRun<'_>,
) -> Result<RwcacheReport> {
    let (plans, trials, mut notes) = plan_trials(topo, cfg)?;
    let (runs, interrupted) = run_rounds(engine, cfg, &plans, &trials, on_run)?;
    let reference = trials
        .iter()
        .zip(&runs)
        .find(|((_, k), r)| *k == SchemeKind::Unlocked && !r.is_empty())
        .map(|(&(pi, _), r)| analysis::summarise_reference(&plans[pi].1, r));
    let ref_ns = reference
        .as_ref()
        .and_then(|r| r.cpu_ns_per_request)
        .map(|s| s.median);
    let results: Vec<SchemeResult> = trials
        .iter()
        .zip(&runs)
        .filter(|((_, k), r)| *k != SchemeKind::Unlocked && !r.is_empty())
        .map(|(&(pi, kind), r)| analysis::summarise(kind, plans[pi].0, &plans[pi].1, r, ref_ns))
        .collect();
    notes.extend(view::notes(
        topo.machine.hypervisor,
        &results,
        &cfg.schemes,
        ref_ns,
    ));
    let before_after = analysis::before_after(&results);
    let read_cost = analysis::read_cost(&results, &cfg.schemes);
    let best = analysis::best(&results);
    // Steal and starved threads are said once, as the verdict's caution, not as notes.
    let caution = analysis::caution(&results);
    let verdict = view::lines(
        &results,
        &before_after,
        &read_cost,
        best.as_ref(),
        caution.as_ref(),
    );
    let layout = Layout::new(cfg.table.entries);
    Ok(RwcacheReport {
        schema_version: SCHEMA_VERSION,
        table: cfg.table.clone(),
        slots: layout.slots(),
        shard_slots: layout.shard_slots(),
        placement: cfg.placement.to_string(),
        scope: plans.iter().find_map(|(_, p)| p.scope.clone()),
        warmup_ns: cfg.spec.warmup().as_nanos() as u64,
        duration_ns: cfg.spec.duration().as_nanos() as u64,
        repeat: cfg.repeat,
        seed: cfg.seed,
        clock: crate::locks::clock_name().into(),
        timer_overhead_ns: crate::rwcache::timer_overhead_ns(),
        hypervisor: topo.machine.hypervisor,
        smt: topo.threads_per_core() > 1,
        reference,
        results,
        before_after,
        read_cost,
        best,
        caution,
        verdict,
        notes,
        interrupted,
        counters: {
            let ms: Vec<&crate::counters::Measurement> = runs
                .iter()
                .flatten()
                .flat_map(|r| r.run.threads.iter().filter_map(|t| t.counters.as_ref()))
                .collect();
            (!ms.is_empty()).then(|| crate::counters::Status::of(cfg.spec.counters(), ms))
        },
    })
}

/// Plans every thread count and the 1-thread `none` reference; the trials are every
/// (thread count, scheme), the reference first so it has a run whenever another trial
/// does. What cannot be placed becomes a note; nothing placeable is an error.
fn plan_trials(topo: &Topology, cfg: &RwcacheConfig) -> Result<(Plans, Vec<Trial>, Vec<String>)> {
    let mut notes: Vec<Note> = Vec::new();
    let mut plans = Vec::new();
    for &n in &cfg.threads {
        match placement::plan_within(topo, &cfg.placement, n, cfg.within) {
            Ok(p) => plans.push((p.threads.len(), p)),
            Err(e) => notes.push(Note::ThreadsSkipped {
                threads: n,
                why: e.to_string(),
            }),
        }
    }
    if plans.is_empty() {
        let why: Vec<String> = notes.iter().map(Note::to_string).collect();
        return Err(crate::error::NotPossible(format!(
            "no thread count can be placed with `{}`: {}",
            cfg.placement,
            why.join("; ")
        ))
        .into());
    }
    let mut trials: Vec<Trial> = (0..plans.len())
        .flat_map(|p| cfg.schemes.iter().map(move |&k| (p, k)))
        .collect();
    match placement::plan_within(topo, &cfg.placement, 1, cfg.within) {
        Ok(p) => {
            plans.push((1, p));
            trials.insert(0, (plans.len() - 1, SchemeKind::Unlocked));
        }
        Err(e) => notes.push(Note::NoReference { why: e.to_string() }),
    }
    Ok((plans, trials, notes.into_iter().map(String::from).collect()))
}

/// Runs the trials `cfg.repeat` times round-robin (A B C … A B C …, so drift falls on
/// every scheme alike); stops at Ctrl-C. Returns each trial's runs and whether it stopped.
fn run_rounds(
    engine: &dyn Engine,
    cfg: &RwcacheConfig,
    plans: &Plans,
    trials: &[Trial],
    on_run: &mut OnRun<'_>,
) -> Result<(Vec<Vec<RunOutcome>>, bool)> {
    let mut runs: Vec<Vec<RunOutcome>> = trials.iter().map(|_| Vec::new()).collect();
    for ti in schedule(trials.len(), cfg.repeat, Order::RoundRobin) {
        if crate::interrupt::requested() {
            return Ok((runs, true));
        }
        let (pi, kind) = trials[ti];
        let (n, plan) = &plans[pi];
        let seed = cfg.seed.wrapping_add(runs[ti].len() as u64);
        let w = workload(kind, &cfg.table, *n, seed);
        let r = engine.run(plan, &cfg.spec, w.as_ref())?;
        if kind != SchemeKind::Unlocked {
            on_run(*n, kind, runs[ti].len(), &r);
        }
        let stop = r.interrupted;
        runs[ti].push(RunOutcome {
            run: r,
            stats: w.take_stats(),
        });
        if stop {
            return Ok((runs, true));
        }
    }
    Ok((runs, false))
}
