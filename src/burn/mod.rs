//! CPU burners ("rulers"): tight loops that each stress one resource — the divider, an ALU
//! chain, the FMA units, DRAM bandwidth or latency, a cache level — and count their own
//! progress, run as engine threads ([`Burners`], a [`crate::engine::Workload`]) or as child
//! processes ([`ProcessBurners`]) that die with smtlab.
//!
//! Starting N burners of kind K for another experiment:
//! - **thread mode**: build [`Burners::new`]`(&spec, &topo, &cpus)` (one CPU set per
//!   burner) and run it in the same engine run as your workers: your workload's
//!   `run_thread` calls [`Burners::run_burner`]`(ctx.thread - workers, ctx)` for burner
//!   threads; their progress is the engine's per-thread `ops`.
//! - **process mode**: [`ProcessBurners::spawn`]`(&spec, &cpus, &opts)` with
//!   `opts.duration = None`; read live [`ProcessBurners::progress`]; end with
//!   [`ProcessBurners::stop`] (results) or just drop it (killed and reaped).
//!
//! `prime` is `sysbench cpu`'s event: its events/s compare with sysbench's at the same
//! `--cpu-max-prime`.

pub mod kernels;
pub mod kind;
pub mod model;
pub mod process;
pub mod sched;
pub mod view;
pub mod workload;

pub use crate::duration::{DurationError, format_duration, parse_duration, parse_duration_or_zero};
pub use kind::{BurnerKind, FmaWidth, KIND_NAMES, Unit, UnknownKind};
pub use model::{BurnReport, BurnerResult, Mode, Note};
pub use process::{ChildLine, ProcessBurners, ProcessOptions, Progress};
pub use sched::{POLICY_NAMES, Policy};
pub use workload::{BurnSpec, Burners, DEFAULT_MAX_PRIME, buffers_total};

use crate::cpuset::CpuSet;
use crate::engine::{self, RunSpec};
use crate::error::Interrupted;
use crate::placement::{Plan, ThreadPlacement};
use crate::topology::Topology;
use anyhow::Result;
use std::io::Write;
use std::time::Duration;

/// Extra time a process-mode run may take beyond warm-up + duration (exec, topology,
/// buffer set-up) before its children are declared stuck.
pub const PROCESS_SLACK: Duration = Duration::from_secs(30);

/// Runs `plan.threads.len()` burners as threads of this process for `run.duration`.
/// Returns the report with `interrupted` set after Ctrl-C (the caller decides the exit
/// code).
pub fn run_threads(
    spec: &BurnSpec,
    topo: &Topology,
    plan: &Plan,
    run: &RunSpec,
) -> Result<BurnReport> {
    let cpus: Vec<CpuSet> = plan.threads.iter().map(|t| t.cpus.clone()).collect();
    let burners = Burners::new(spec, topo, &cpus)?;
    let result = engine::run(plan, run, &burners)?;
    burners.release();
    burners.check()?;
    let mut report = BurnReport::new(
        spec,
        Mode::Thread,
        plan.request.clone(),
        nanos(run.warmup()),
        nanos(run.duration()),
    );
    report.burners = (0..burners.len())
        .map(|i| BurnerResult::from_thread_run(&result, &burners, i))
        .collect();
    report.interrupted = result.interrupted;
    report.counters = result.counter_status();
    report.interrupted_by = crate::interrupt::signal().filter(|_| result.interrupted);
    report.notes = plan.notes.clone();
    report.notes.extend(burners.notes.iter().cloned());
    if plan.oversubscribed {
        report.notes.push(Note::Oversubscribed.into());
    }
    if result.nice_offset > 0 {
        report.notes.push(
            Note::Demoted {
                by: result.nice_offset,
            }
            .into(),
        );
    }
    Ok(report.finish())
}

/// Runs one burner process per plan thread, each for `run.duration`; `on_spawn` sees the
/// child pids as soon as they exist. Ctrl-C kills the children and returns `Interrupted`.
pub fn run_processes(
    spec: &BurnSpec,
    plan: &Plan,
    run: &RunSpec,
    on_spawn: &mut dyn FnMut(&[i32]),
) -> Result<BurnReport> {
    let cpus: Vec<CpuSet> = plan.threads.iter().map(|t| t.cpus.clone()).collect();
    let set = ProcessBurners::spawn(
        spec,
        &cpus,
        &ProcessOptions {
            exe: None,
            warmup: run.warmup(),
            duration: Some(run.duration()),
        },
    )?;
    on_spawn(&set.pids());
    let nice_offset = set.nice_offset();
    let results = set.wait(run.warmup() + run.duration() + PROCESS_SLACK)?;
    let mut report = BurnReport::new(
        spec,
        Mode::Process,
        plan.request.clone(),
        nanos(run.warmup()),
        nanos(run.duration()),
    );
    report.counters = {
        let ms: Vec<&crate::counters::Measurement> = results
            .iter()
            .filter_map(|b| b.counters.as_deref())
            .collect();
        (!ms.is_empty()).then(|| crate::counters::Status::of(spec.counters(), ms))
    };
    report.burners = results;
    report.notes = plan.notes.clone();
    if plan.oversubscribed {
        report.notes.push(Note::Oversubscribed.into());
    }
    if nice_offset > 0 {
        report.notes.push(Note::Demoted { by: nice_offset }.into());
    }
    Ok(report.finish())
}

/// The child side of process mode: one burner pinned to `cpus`, writing [`ChildLine`]s to
/// `out`. Runs `duration`, or until SIGTERM/Ctrl-C when None; an interruption is a normal
/// end here (the parent asked for it).
pub fn run_child(
    spec: &BurnSpec,
    topo: &Topology,
    cpus: &CpuSet,
    warmup: Duration,
    duration: Option<Duration>,
    out: &mut dyn Write,
) -> Result<()> {
    // "Until stopped": long enough to never end on its own.
    const FOREVER: Duration = Duration::from_secs(100 * 365 * 86_400);
    let plan = Plan {
        request: format!("cpus:{cpus}"),
        threads: vec![ThreadPlacement {
            thread: 0,
            cpus: cpus.clone(),
        }],
        oversubscribed: false,
        notes: Vec::new(),
        scope: None,
    };
    let run = RunSpec::new(warmup, duration.unwrap_or(FOREVER))?
        .with_interval(process::CHILD_INTERVAL)?
        .with_counters(spec.counters());
    // Hold still (blocked, using no CPU) until the parent has started every sibling.
    process::wait_for_siblings();
    let burners = Burners::new(spec, topo, std::slice::from_ref(cpus))?;
    let mut write_err = None;
    let result = engine::run_observed(&plan, &run, &burners, &mut |s| {
        let line = ChildLine::Interval {
            ops: s.ops.iter().sum(),
            elapsed_ns: s.elapsed_ns,
        };
        if let Err(e) = writeln!(
            out,
            "{}",
            serde_json::to_string(&line).expect("serialisable")
        )
        .and_then(|()| out.flush())
        {
            write_err.get_or_insert(e);
        }
    })?;
    burners.release();
    burners.check()?;
    let done = ChildLine::Done {
        result: BurnerResult::from_thread_run(&result, &burners, 0),
        interrupted: result.interrupted,
    };
    writeln!(out, "{}", serde_json::to_string(&done)?)?;
    out.flush()?;
    if let Some(e) = write_err {
        return Err(e.into());
    }
    Ok(())
}

/// `Err(Interrupted)` when the report was cut short by Ctrl-C, after the caller printed it.
pub fn interrupted_error(report: &BurnReport) -> Result<()> {
    if report.interrupted {
        Err(Interrupted.into())
    } else {
        Ok(())
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
