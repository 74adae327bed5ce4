//! Orchestration: `repeat` rounds, each a reference run when the first step already
//! oversubscribes, then every burner step in order, each with fresh workers and burners
//! that are gone when it ends. Every step's ratio is to its own round's first step (or
//! reference), so the rounds give paired ratios and drift between rounds cancels.

use super::analysis::{self, StepRun};
use super::config::{BurnerMode, NeighborsConfig};
use super::diagnosis;
use super::model::{NeighborsReport, Note, SCHEMA_VERSION, Step};
use super::plan::{step_not_possible_here, step_plan};
use super::workload::{Combined, MakeWorker};
use crate::burn::{Burners, ProcessBurners, ProcessOptions};
use crate::engine::Engine;
use crate::placement::Plan;
use crate::topology::Topology;
use anyhow::Result;

/// What every step of one run shares.
struct Ctx<'a, 'w> {
    engine: &'a dyn Engine,
    topo: &'a Topology,
    make_worker: &'a MakeWorker<'w>,
    /// The scheduler slice assumed for this machine, ns.
    slice: f64,
    /// What each run's counters could not count, for the report's reasons.
    counted: std::cell::RefCell<Vec<crate::counters::Measurement>>,
}

/// Runs every step in order. `make_worker` builds a fresh worker per step (a new lock, a
/// fresh page). `on_step` sees each step as it completes.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &NeighborsConfig,
    make_worker: &MakeWorker<'_>,
    on_step: &mut dyn FnMut(&Step),
) -> Result<NeighborsReport> {
    // A combination this machine's topology makes impossible to place (beyond what the
    // config could check) fails before anything runs, not at its first step.
    for &b in &cfg.burner_steps {
        if let Err(e) = step_plan(topo, cfg, b)
            && !step_not_possible_here(&e)
        {
            return Err(e);
        }
    }
    let cpus = topo.allowed().len();
    let ctx = Ctx {
        engine,
        topo,
        make_worker,
        slice: diagnosis::base_slice_ns(cpus),
        counted: Default::default(),
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut skipped: Vec<(usize, String)> = Vec::new();
    let mut notes = Vec::new();
    let mut interrupted = false;
    let mut worker_name = String::new();
    let mut first_reference = None;
    'rounds: for round in 0..cfg.repeat {
        if crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        let reference = reference_step(&ctx, cfg, &mut notes)?;
        let mut baseline = reference.as_ref().map(|s| s.ops_per_sec);
        if round == 0 {
            first_reference = reference;
        }
        for &b in &cfg.burner_steps {
            if crate::interrupt::requested() {
                interrupted = true;
                break 'rounds;
            }
            let mut step = match run_step(&ctx, cfg, b, baseline, &mut notes) {
                Ok(Some((s, name))) => {
                    worker_name = name;
                    s
                }
                Ok(None) => break 'rounds,
                Err(e) if step_not_possible_here(&e) => {
                    // Said once, not once per round.
                    if round == 0 {
                        skipped.push((b, format!("{e:#}")));
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            step.round = round;
            if baseline.is_none() {
                baseline = Some(step.ops_per_sec);
            }
            on_step(&step);
            let stop = step.interrupted;
            steps.push(step);
            if stop {
                interrupted = true;
                break 'rounds;
            }
        }
    }
    add_notes(&mut notes, topo, cfg, &steps);
    Ok(NeighborsReport {
        schema_version: SCHEMA_VERSION,
        workload: worker_name,
        workers: cfg.workers,
        worker_placement: cfg.worker_placement.to_string(),
        burner_kind: cfg.burner.kind(),
        burner_placement: cfg.burner_placement,
        burner_mode: cfg.burner_mode,
        burner_policy: cfg.burner.policy(),
        time_slice_ns: ctx.slice,
        smt: topo.threads_per_core() > 1,
        hypervisor: topo.machine.hypervisor,
        reference: first_reference,
        summary: super::analysis::summarise(&steps),
        steps,
        repeat: cfg.repeat,
        skipped,
        notes,
        interrupted,
        counters: {
            let counted = ctx.counted.borrow();
            (!counted.is_empty())
                .then(|| crate::counters::Status::of(cfg.spec.counters(), counted.iter()))
        },
    })
}

/// The reference rate: the first step, unless it is already oversubscribed — then a run
/// with as many workers as CPUs and no burners (so `--workers 4` on 2 CPUs is compared
/// with 2 workers, not with itself). None when the first step is its own reference.
fn reference_step(
    ctx: &Ctx<'_, '_>,
    cfg: &NeighborsConfig,
    notes: &mut Vec<String>,
) -> Result<Option<Step>> {
    let cpus = ctx.topo.allowed().len();
    let first_b = cfg.burner_steps.first().copied().unwrap_or(0);
    if cfg.workers + first_b <= cpus || cfg.workers <= cpus {
        return Ok(None);
    }
    let mut rc = cfg.clone();
    rc.workers = cpus;
    Ok(run_step(ctx, &rc, 0, None, notes)?.map(|(step, _)| step))
}

/// What the steps could not show or may have distorted, and why.
fn add_notes(notes: &mut Vec<String>, topo: &Topology, cfg: &NeighborsConfig, steps: &[Step]) {
    notes.extend(crate::hygiene::steal_note(
        "the steps",
        steps.iter().map(|s| s.steal_share),
    ));
    if topo.threads_per_core() <= 1 {
        notes.push(Note::NoSiblings.into());
    }
    if cfg.burner.policy() != crate::burn::Policy::Normal {
        notes.push(
            Note::BurnerPolicy {
                policy: cfg.burner.policy(),
            }
            .into(),
        );
    }
}

/// Runs one step with `b` burners: plans it, starts burners (threads or processes), runs
/// the engine, and measures. None when Ctrl-C arrived before it started.
fn run_step(
    ctx: &Ctx<'_, '_>,
    cfg: &NeighborsConfig,
    b: usize,
    baseline: Option<f64>,
    notes: &mut Vec<String>,
) -> Result<Option<(Step, String)>> {
    if crate::interrupt::requested() {
        return Ok(None);
    }
    let (plan, burner_cpus) = step_plan(ctx.topo, cfg, b)?;
    let worker_plan = Plan {
        threads: plan.threads[..cfg.workers].to_vec(),
        ..plan.clone()
    };
    let worker = (ctx.make_worker)(&worker_plan)?;
    let thread_burners = match cfg.burner_mode {
        BurnerMode::Thread if b > 0 => Some(Burners::new(&cfg.burner, ctx.topo, &burner_cpus)?),
        _ => None,
    };
    // Process burners are killed and reaped when this guard drops, on every path.
    let procs = match cfg.burner_mode {
        BurnerMode::Process if b > 0 => Some(ProcessBurners::spawn(
            &cfg.burner,
            &burner_cpus,
            &ProcessOptions {
                exe: None,
                warmup: std::time::Duration::ZERO,
                duration: None,
            },
        )?),
        _ => None,
    };
    let combined = Combined {
        worker: worker.as_ref(),
        workers: cfg.workers,
        burners: thread_burners.as_ref(),
    };
    let before = procs.as_ref().map(|p| p.progress());
    let r = ctx.engine.run(&plan, &cfg.spec, &combined)?;
    if let Some(st) = r.counter_status() {
        ctx.counted.borrow_mut().push(crate::counters::Measurement {
            counts: Default::default(),
            unavailable: st.unavailable,
        });
    }
    let burner_ops_per_sec = match (&procs, &before) {
        (Some(p), Some(before)) => {
            let ops: u64 = p
                .progress()
                .iter()
                .zip(before)
                .map(|(a, b)| a.ops.saturating_sub(b.ops))
                .sum();
            ops as f64 / (r.measured_ns.max(1) as f64 / 1e9)
        }
        _ => analysis::thread_burner_ops_per_sec(&r, cfg.workers),
    };
    drop(procs);
    if let Some(tb) = &thread_burners {
        for n in &tb.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
        tb.release();
        tb.check()?;
    }
    let name = worker.name();
    let outcome = worker.finish()?;
    let measured = StepRun {
        burners: b,
        burner_cpus: &burner_cpus,
        plan: &plan,
        result: &r,
        latency_ns: &outcome.latency_ns,
        preemptions: outcome.preemptions,
        burner_ops_per_sec,
    };
    let step = analysis::step(ctx.topo, cfg.workers, &measured, baseline, ctx.slice);
    Ok(Some((step, name)))
}
