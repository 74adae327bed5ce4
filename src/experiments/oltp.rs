//! The oltp experiment: plan the layouts, open the database, run each layout (interleaved
//! round by round) with the insert workload on an [`Engine`], verify the row count after
//! every run, and return the [`OltpReport`].
//!
//! The command (`smtlab oltp`) and the study's oltp phase both call [`run`]; with the
//! [`FakeEngine`](crate::engine::FakeEngine) the database is opened and the tables are
//! made for real, but the engine makes the insert counts up, so tests above this module see
//! the real orchestration and report model.

use crate::engine::{Engine, RunSpec};
use crate::error::{Interrupted, NotPossible};
use crate::oltp::report::{self, LayoutRun, OltpReport, SkippedLayout, ThreadRun};
use crate::oltp::{BackendPinning, Config, Db, DbTarget, InsertWorkload, StopRule, workload};
use crate::placement::{Plan, PlanError};
use crate::render;
use crate::topology::Topology;
use anyhow::{Context, Result};

/// Narration of the steps (layout k of n preparing, inserting, its rate), one line each:
/// stderr for the command, the progress bar for the study.
pub type Say<'a> = dyn FnMut(&str) + 'a;

/// The layouts `cfg` asks for, planned on `topo`: the possible ones, and the ones this
/// machine cannot place (no SMT sibling, too few CPUs) with the reason.
pub fn plan_layouts(topo: &Topology, cfg: &Config) -> Result<(Vec<Plan>, Vec<SkippedLayout>)> {
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for l in &cfg.layouts {
        match crate::placement::plan_within(topo, l, cfg.threads, cfg.within) {
            Ok(p) => plans.push(p),
            Err(e @ (PlanError::NoSmt { .. } | PlanError::NotEnough { .. })) => {
                skipped.push(SkippedLayout {
                    placement: l.to_string(),
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
/// [`row_check_failure`] turns it into one after the report is written.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    say: &mut Say<'_>,
) -> Result<OltpReport> {
    cfg.validate()?;
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
        .flat_map(|p| &p.threads)
        .fold(crate::cpuset::CpuSet::new(), |a, t| a.union(&t.cpus));
    for w in engine.hygiene(&clients) {
        say(&format!("warning: {w}"));
    }
    let max_threads = plans.iter().map(|p| p.threads.len()).max().unwrap_or(1);
    let db = Db::open(&cfg.db, cfg.durability, max_threads)
        .with_context(|| format!("opening {}", cfg.db))?;
    say(&db.describe());
    if let BackendPinning::ClientsOnly(why) = db.backend_pinning() {
        say(&format!("{why}; only the client threads are pinned"));
    }
    let mut rep = OltpReport {
        db: cfg.db.to_string(),
        db_version: db.version().to_string(),
        db_description: db.describe(),
        schema: cfg.table.schema.to_string(),
        key: cfg.table.key.to_string(),
        durability: cfg.durability.to_string(),
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
        scope: plans.iter().find_map(|p| p.scope.clone()),
        interrupted: false,
    };

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
        }
        Err(e) => return Err(e),
        Ok(()) => closed?,
    }
    Ok(rep)
}

/// The first run whose row count did not match, as an error naming the counts.
pub fn row_check_failure(rep: &OltpReport) -> Option<anyhow::Error> {
    rep.runs.iter().find(|r| !r.rows_verified).map(|bad| {
        anyhow::anyhow!(
            "row count check failed for {} (round {}): {} rows in the table, {} expected",
            bad.placement,
            bad.round,
            bad.rows_in_table,
            bad.rows_expected
        )
    })
}

/// All layouts, interleaved: round 0 of every layout, then round 1, …
fn run_all(
    engine: &dyn Engine,
    cfg: &Config,
    db: &Db,
    plans: &[Plan],
    rep: &mut OltpReport,
    say: &mut Say<'_>,
) -> Result<()> {
    let total = plans.len() * cfg.repeat;
    let mut k = 0;
    for round in 0..cfg.repeat {
        for plan in plans {
            k += 1;
            crate::interrupt::check()?;
            let run = run_layout(engine, cfg, db, plan, round, (k, total), say)
                .with_context(|| format!("layout {} (round {round})", plan.request))?;
            say(&format!(
                "[{k}/{total}] {}: {} inserts/s, {} rows, check {}",
                plan.request,
                render::thousands(run.inserts_per_sec.round() as u64),
                render::thousands(run.rows_committed),
                if run.rows_verified { "ok" } else { "FAILED" }
            ));
            rep.runs.push(run);
        }
    }
    Ok(())
}

/// The engine's spec for a `--duration` run: 100 ms progress intervals.
fn spec_for(cfg: &Config) -> RunSpec {
    let interval = std::time::Duration::from_millis(100).min(cfg.duration);
    RunSpec::new(cfg.warmup, cfg.duration).with_interval(interval)
}

fn run_layout(
    engine: &dyn Engine,
    cfg: &Config,
    db: &Db,
    plan: &Plan,
    round: usize,
    (k, total): (usize, usize),
    say: &mut Say<'_>,
) -> Result<LayoutRun> {
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
        StopRule::Duration => spec_for(cfg),
        StopRule::RowsPerThread(_) => RunSpec::new(std::time::Duration::ZERO, cfg.duration),
    };
    let res = engine.run(plan, &spec, &w).map(|r| Measured {
        measured_ns: r.measured_ns,
        rows: matches!(cfg.stop, StopRule::Duration).then(|| r.total_ops()),
        involuntary_ctx_switches: r.threads.iter().map(|t| t.involuntary_ctx_switches).sum(),
        cpu_time_ns: r.cpu_time_ns(),
        pinning_violations: r.pinning_violations.len(),
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
    let elapsed: Vec<u64> = outcome.threads.iter().map(|t| t.elapsed_ns).collect();
    let elapsed_ns = match cfg.stop {
        StopRule::RowsPerThread(_) => elapsed.iter().copied().max().unwrap_or(0),
        StopRule::Duration => res.measured_ns,
    };
    let rows = res.rows.unwrap_or_else(|| outcome.rows_measured());
    let txns: u64 = outcome.threads.iter().map(|t| t.txns).sum();
    let h = &outcome.latency_ns;
    let nonempty = |v: u64| if h.is_empty() { 0 } else { v };
    Ok(LayoutRun {
        placement: plan.request.clone(),
        threads: plan.threads.len(),
        round,
        inserts_per_sec: report::per_sec(rows, elapsed_ns),
        txns_per_sec: report::per_sec(txns, elapsed_ns),
        rows_committed: rows,
        elapsed_ns,
        thread_elapsed_min_ns: elapsed.iter().copied().min().unwrap_or(0),
        thread_elapsed_median_ns: report::median(&elapsed),
        thread_elapsed_max_ns: elapsed.iter().copied().max().unwrap_or(0),
        commit_latency_p50_ns: nonempty(h.value_at_quantile(0.5)),
        commit_latency_p99_ns: nonempty(h.value_at_quantile(0.99)),
        commit_latency_max_ns: nonempty(h.max()),
        commit_latency_mean_ns: if h.is_empty() { 0.0 } else { h.mean() },
        rows_in_table: in_table,
        rows_expected: expected,
        rows_verified: in_table == expected,
        involuntary_ctx_switches: res.involuntary_ctx_switches,
        client_cpu_time_ns: res.cpu_time_ns,
        pinning_violations: res.pinning_violations,
        per_thread: outcome
            .threads
            .iter()
            .map(|t| ThreadRun {
                thread: t.thread,
                cpus: plan.threads[t.thread].cpus.to_string(),
                backend_pid: t.backend_pid,
                rows: t.rows,
                elapsed_ns: t.elapsed_ns,
                inserts_per_sec: report::per_sec(t.rows, t.elapsed_ns),
                commit_latency_p99_ns: if t.latency_ns.is_empty() {
                    0
                } else {
                    t.latency_ns.value_at_quantile(0.99)
                },
            })
            .collect(),
    })
}

/// Notes for layouts that put every thread where an earlier layout did (e.g. `all` is
/// `one-per-core` when the cores have one usable thread each), with the reason only when
/// it is the reason.
pub fn same_placements(topo: &Topology, plans: &[Plan]) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        if let Some(q) = plans[..i].iter().find(|q| q.threads == p.threads) {
            let allowed = topo.allowed();
            let single = p
                .cpus()
                .iter()
                .all(|c| topo.core_of(c).intersection(&allowed).len() < 2);
            notes.push(format!(
                "`{}` places its {} threads exactly as `{}`{}",
                p.request,
                p.threads.len(),
                q.request,
                if single {
                    ": their cores have no usable SMT sibling"
                } else {
                    ""
                }
            ));
        }
    }
    notes
}

/// What the runner measured, from the engine or the fixed-work runner.
struct Measured {
    measured_ns: u64,
    /// Rows the engine counted inside its measured time (duration runs): the rate's
    /// numerator. Threads finish the commit they are in after the stop; those rows are in
    /// the table and the row check, not in the rate.
    rows: Option<u64>,
    involuntary_ctx_switches: u64,
    cpu_time_ns: u64,
    pinning_violations: usize,
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
