//! Orchestration: plan the layouts, open the database, run every layout round by round on
//! an engine, count the rows after each run, close the database on every path.

use super::PlannedLayout;
use super::analysis::{self, Measured, same_placements};
use crate::engine::{Engine, RunSpec};
use crate::error::{Interrupted, NotPossible};
use crate::oltp::model::{LayoutRun, OltpReport, SkippedLayout};
use crate::oltp::{BackendPinning, Db, DbTarget, InsertWorkload, OltpConfig, StopRule, workload};
use crate::placement::PlanError;
use crate::render;
use crate::topology::Topology;
use anyhow::{Context, Result};

/// Narration of the steps (layout k of n preparing, inserting, its rate), one line each:
/// stderr for the command, the progress bar for the study.
pub type Say<'a> = dyn FnMut(&str) + 'a;

/// The layouts `cfg` asks for, planned on `topo`: the possible ones, and the ones this
/// machine cannot place (no SMT sibling, too few CPUs) with the reason.
pub fn plan_layouts(
    topo: &Topology,
    cfg: &OltpConfig,
) -> Result<(Vec<PlannedLayout>, Vec<SkippedLayout>)> {
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for l in &cfg.layouts {
        match crate::placement::plan_within(topo, l, cfg.threads, cfg.within) {
            Ok(plan) => plans.push(PlannedLayout {
                request: l.clone(),
                plan,
            }),
            Err(e @ (PlanError::NoSmt { .. } | PlanError::NotEnough { .. })) => {
                skipped.push(SkippedLayout {
                    placement: l.clone(),
                    reason: e.to_string(),
                })
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok((plans, skipped))
}

/// Runs every possible layout `cfg.repeat` times on `engine`.
///
/// Ctrl-C ends the run at the next step and returns the runs so far with
/// `interrupted: true`; the database is closed (a managed cluster stopped and removed) on
/// every path. A failed row check is in the report (`rows_verified: false`), not an error:
/// [`row_check_failure`](super::row_check_failure) turns it into one after the report is
/// written.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &OltpConfig,
    say: &mut Say<'_>,
) -> Result<OltpReport> {
    let (plans, skipped) = plan_layouts(topo, cfg)?;
    if plans.is_empty() {
        let why: Vec<String> = skipped
            .iter()
            .map(|s| format!("{}: {}", s.placement, s.reason))
            .collect();
        return Err(NotPossible(format!(
            "none of the layouts is possible here ({})",
            why.join("; ")
        ))
        .into());
    }
    for s in &skipped {
        say(&format!("skipping {}: {}", s.placement, s.reason));
    }
    for n in same_placements(topo, &plans) {
        say(&format!("note: {n}"));
    }

    let clients: crate::cpuset::CpuSet = plans
        .iter()
        .flat_map(|l| &l.plan.threads)
        .fold(crate::cpuset::CpuSet::new(), |a, t| a.union(&t.cpus));
    let hygiene = engine.hygiene(&clients);
    for w in &hygiene {
        say(&format!("warning: {w}"));
    }
    let max_threads = plans
        .iter()
        .map(|l| l.plan.threads.len())
        .max()
        .unwrap_or(1);
    let db = Db::open(&cfg.db, cfg.durability, max_threads)
        .with_context(|| format!("opening {}", cfg.db))?;
    say(&db.describe());
    if let BackendPinning::ClientsOnly(why) = db.backend_pinning() {
        say(&format!("{why}; only the client threads are pinned"));
    }
    let mut rep = empty_report(cfg, &db, &plans, skipped);
    rep.hygiene = hygiene;
    let result = run_all(engine, cfg, &db, &plans, &mut rep, say);
    if matches!(cfg.db, DbTarget::Postgres { .. })
        && let Err(e) = db.drop_table(&cfg.table)
    {
        say(&format!(
            "warning: dropping table {}: {e:#}",
            cfg.table.schema.table()
        ));
    }
    let closed = db.close();
    match result {
        Err(e) if e.chain().any(|c| c.is::<Interrupted>()) => {
            rep.interrupted = true;
            rep.interrupted_by = crate::interrupt::signal();
        }
        Err(e) => return Err(e),
        Ok(()) => closed?,
    }
    Ok(rep)
}

/// The report before any run: what was asked, the database, the skipped layouts.
fn empty_report(
    cfg: &OltpConfig,
    db: &Db,
    plans: &[PlannedLayout],
    skipped: Vec<SkippedLayout>,
) -> OltpReport {
    OltpReport {
        db: cfg.db.to_string(),
        db_version: db.version().to_string(),
        db_description: db.describe(),
        schema: cfg.table.schema,
        key: cfg.table.key,
        durability: cfg.durability,
        rows_per_txn: cfg.table.rows_per_txn,
        threads: cfg.threads,
        prefill_rows: cfg.prefill,
        rows_per_thread: match cfg.stop {
            StopRule::RowsPerThread(r) => Some(r),
            StopRule::Duration => None,
        },
        duration_ns: match cfg.stop {
            StopRule::Duration => Some(nanos(cfg.duration)),
            StopRule::RowsPerThread(_) => None,
        },
        warmup_ns: nanos(cfg.warmup),
        backend_pinning: db.backend_pinning().to_string(),
        runs: Vec::new(),
        skipped,
        scope: plans.iter().find_map(|l| l.plan.scope.clone()),
        interrupted: false,
        counters: None,
        hygiene: Vec::new(),
        interrupted_by: None,
    }
}

/// All layouts, interleaved: round 0 of every layout, then round 1, … A round with a run
/// disturbed while it ran is left out of the paired comparisons (`verdict`), and run again
/// once at the end, at most half as many rounds again, so that leaving it out keeps the
/// rounds asked for where the machine calms down.
fn run_all(
    engine: &dyn Engine,
    cfg: &OltpConfig,
    db: &Db,
    plans: &[PlannedLayout],
    rep: &mut OltpReport,
    say: &mut Say<'_>,
) -> Result<()> {
    let mut rounds = cfg.repeat;
    let mut total = plans.len() * rounds;
    let mut k = 0;
    let mut round = 0;
    loop {
        if round == cfg.repeat && rounds == cfg.repeat {
            rounds += again(&rep.runs, cfg.repeat);
            total = plans.len() * rounds;
        }
        if round >= rounds {
            return Ok(());
        }
        for layout in plans {
            k += 1;
            crate::interrupt::check()?;
            let (run, status) = run_layout(engine, cfg, db, layout, round, (k, total), say)
                .with_context(|| format!("layout {} (round {round})", layout.request))?;
            if let Some(st) = status {
                rep.counters = Some(match rep.counters.take() {
                    Some(before) => before.merge(&st),
                    None => st,
                });
            }
            say(&format!(
                "[{k}/{total}] {}: {} inserts/s, {} rows, check {}",
                layout.request,
                render::thousands(run.inserts_per_sec.round() as u64),
                render::thousands(run.rows_committed),
                if run.rows_verified { "ok" } else { "FAILED" }
            ));
            if let Some(why) = &run.disturbed {
                say(&format!(
                    "  round {} of {} disturbed ({why}): left out{}",
                    round + 1,
                    layout.request,
                    if round < cfg.repeat {
                        ", to be run again at the end"
                    } else {
                        ""
                    }
                ));
            }
            rep.runs.push(run);
        }
        round += 1;
    }
}

/// How many rounds to run again: one per round of the first `repeat` with a disturbed
/// run, at most half of `repeat` (rounded up).
fn again(runs: &[LayoutRun], repeat: usize) -> usize {
    let mut disturbed: Vec<usize> = runs
        .iter()
        .filter(|r| r.disturbed.is_some() && r.round < repeat)
        .map(|r| r.round)
        .collect();
    disturbed.sort_unstable();
    disturbed.dedup();
    disturbed.len().min(repeat.div_ceil(2))
}

/// The engine's spec for a `--duration` run: 100 ms progress intervals.
fn spec_for(cfg: &OltpConfig) -> Result<RunSpec, crate::error::BadInput> {
    let interval = std::time::Duration::from_millis(100).min(cfg.duration);
    Ok(RunSpec::new(cfg.warmup, cfg.duration)?
        .with_interval(interval)?
        .with_counters(cfg.counters))
}

fn run_layout(
    engine: &dyn Engine,
    cfg: &OltpConfig,
    db: &Db,
    layout: &PlannedLayout,
    round: usize,
    (k, total): (usize, usize),
    say: &mut Say<'_>,
) -> Result<(LayoutRun, Option<crate::counters::Status>)> {
    let plan = &layout.plan;
    say(&format!(
        "[{k}/{total}] {}: preparing the table{}",
        plan.request,
        if cfg.prefill > 0 {
            format!(" ({} prefill rows)", render::thousands(cfg.prefill))
        } else {
            String::new()
        }
    ));
    let before = db.create_table(&cfg.table, cfg.prefill)?;
    crate::interrupt::check()?;
    let w = InsertWorkload::new(db, &cfg.table, plan, cfg.stop)?;
    say(&format!(
        "[{k}/{total}] {}: inserting with {} threads",
        plan.request,
        plan.threads.len()
    ));
    // A fixed-work run has no warm-up (every row counts toward the quota) and ends when
    // the last thread returns; its duration is only the give-up limit.
    let spec = match cfg.stop {
        StopRule::Duration => spec_for(cfg)?,
        StopRule::RowsPerThread(_) => {
            RunSpec::new(std::time::Duration::ZERO, cfg.duration)?.with_counters(cfg.counters)
        }
    };
    let res = engine.run(plan, &spec, &w).map(|r| Measured {
        counters: r.threads.iter().map(|t| t.counters.clone()).collect(),
        status: r.counter_status(),
        measured_ns: r.measured_ns,
        rows: matches!(cfg.stop, StopRule::Duration).then(|| r.total_ops()),
        involuntary_ctx_switches: r.threads.iter().map(|t| t.involuntary_ctx_switches).sum(),
        cpu_time_ns: r.cpu_time_ns(),
        pinning_violations: r.pinning_violations.len(),
        steal_share: r.steal_share,
        disturbed: crate::engine::disturbance::of_run(&r),
    });
    // Restore backend affinity and close sessions before looking at the result.
    let outcome = w.finish();
    let res = res?;
    let outcome = outcome?;
    if crate::interrupt::requested() {
        return Err(Interrupted.into());
    }
    if let StopRule::RowsPerThread(_) = cfg.stop
        && let Some(e) = workload::incomplete(&outcome)
    {
        return Err(e.context(format!(
            "the run hit the {:.0} s limit (raise --duration)",
            cfg.duration.as_secs_f64()
        )));
    }
    let in_table = db.count_rows(&cfg.table)?;
    let expected = before + outcome.rows_committed();
    let run = analysis::layout_run(
        layout,
        round,
        cfg.stop,
        &res,
        &outcome,
        (in_table, expected),
    );
    Ok((run, res.status))
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_with_a_disturbed_run_are_run_again_at_most_half_as_many_again() {
        let template = crate::study::fixture::smt()
            .oltp
            .clone()
            .unwrap()
            .result
            .runs[0]
            .clone();
        let run = |round: usize, disturbed: bool| LayoutRun {
            round,
            disturbed: disturbed.then(|| "steal".into()),
            ..template.clone()
        };
        // Rounds 1 and 3 of 4 disturbed (round 1 in both layouts): two rounds again; a
        // disturbed run of a round already run again adds none.
        let runs = [
            run(0, false),
            run(0, false),
            run(1, true),
            run(1, true),
            run(2, false),
            run(3, true),
            run(4, true),
        ];
        assert_eq!(again(&runs, 4), 2);
        // Never more than half as many again: 5 of 5 disturbed gives 3.
        let all: Vec<LayoutRun> = (0..5).map(|k| run(k, true)).collect();
        assert_eq!(again(&all, 5), 3);
        assert_eq!(again(&[run(0, false)], 1), 0);
    }
}
