//! `smtlab oltp`: plan the layouts, open the database, run each layout (interleaved round
//! by round) with the insert workload on the engine, verify the row count, report.

use crate::engine::{self, RunSpec};
use crate::error::{Interrupted, NotPossible};
use crate::oltp::report::{self, LayoutRun, OltpReport, SkippedLayout, ThreadRun};
use crate::oltp::{Config, Db, DbTarget, InsertWorkload, StopRule, workload};
use crate::placement::{Plan, PlanError};
use crate::render;
use anyhow::{Context, Result};
use std::io::Write;

/// Runs the command; progress goes to stderr, the report to `out`.
pub fn run(cfg: &Config, out: &mut dyn Write) -> Result<()> {
    run_with(cfg, out, &mut |m| crate::say!("oltp: {m}"))
}

/// Narration of the steps (layout k of n preparing, inserting, its rate), one line each.
pub type Say<'a> = dyn FnMut(&str) + 'a;

/// [`run`], with the step narration going to `say` (the study shows it on its bar).
pub fn run_with(cfg: &Config, out: &mut dyn Write, say: &mut Say<'_>) -> Result<()> {
    cfg.validate()?;
    let topo = super::topology_for_run(&cfg.sysfs_root, cfg.dry_run, true)?;
    let mut plans: Vec<Plan> = Vec::new();
    let mut skipped: Vec<SkippedLayout> = Vec::new();
    for l in &cfg.layouts {
        match crate::placement::plan_within(&topo, l, cfg.threads, cfg.within) {
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
    if cfg.dry_run {
        return dry_run(cfg, &topo, &plans, &skipped, out);
    }
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
    for n in same_placements(&topo, &plans) {
        say(&format!("note: {n}"));
    }

    let clients: crate::cpuset::CpuSet = plans
        .iter()
        .flat_map(|p| &p.threads)
        .fold(crate::cpuset::CpuSet::new(), |a, t| a.union(&t.cpus));
    for w in crate::hygiene::check(&clients) {
        say(&format!("warning: {w}"));
    }
    let max_threads = plans.iter().map(|p| p.threads.len()).max().unwrap_or(1);
    let db = Db::open(&cfg.db, cfg.durability, max_threads)
        .with_context(|| format!("opening {}", cfg.db))?;
    say(&db.describe());
    if let crate::oltp::BackendPinning::ClientsOnly(why) = db.backend_pinning() {
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

    let result = run_all(cfg, &db, &plans, &mut rep, say);
    if matches!(cfg.db, DbTarget::Postgres { .. })
        && let Err(e) = db.drop_table(&cfg.table)
    {
        crate::say!(
            "warning: dropping table {}: {e:#}",
            cfg.table.schema.table()
        );
    }
    let closed = db.close();
    if let Err(e) = result {
        if e.chain().any(|c| c.is::<Interrupted>()) {
            rep.interrupted = true;
            write_report(cfg, &rep, out)?;
        }
        return Err(e);
    }
    closed?;
    write_report(cfg, &rep, out)?;
    if let Some(bad) = rep.runs.iter().find(|r| !r.rows_verified) {
        anyhow::bail!(
            "row count check failed for {} (round {}): {} rows in the table, {} expected",
            bad.placement,
            bad.round,
            bad.rows_in_table,
            bad.rows_expected
        );
    }
    Ok(())
}

fn write_report(cfg: &Config, rep: &OltpReport, out: &mut dyn Write) -> Result<()> {
    if cfg.json {
        writeln!(out, "{}", serde_json::to_string_pretty(rep)?)?;
    } else {
        out.write_all(report::render_text(rep).as_bytes())?;
    }
    Ok(())
}

/// All layouts, interleaved: round 0 of every layout, then round 1, …
fn run_all(
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
            let run = run_layout(cfg, db, plan, round, (k, total), say)
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
    let res = engine::run(plan, &spec, &w).map(|r| Measured {
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

fn dry_run(
    cfg: &Config,
    topo: &crate::topology::Topology,
    plans: &[Plan],
    skipped: &[SkippedLayout],
    out: &mut dyn Write,
) -> Result<()> {
    if cfg.json {
        let v = serde_json::json!({ "layouts": plans, "skipped": skipped });
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "oltp dry run: {} layout(s) for --threads {}; nothing is run",
        plans.len(),
        cfg.threads
    )?;
    if let Some(u) = plans.iter().find_map(|p| p.scope.as_ref()) {
        writeln!(out, "layouts {}", render::scope_line(u))?;
    }
    for p in plans {
        let cores: std::collections::BTreeSet<_> = p
            .threads
            .iter()
            .filter(|t| t.cpus.len() == 1)
            .map(|t| topo.core_of(t.cpus.first().expect("non-empty")))
            .collect();
        writeln!(
            out,
            "\n{}: {} threads on CPUs {} ({} core{}){}",
            p.request,
            p.threads.len(),
            p.cpus(),
            cores.len(),
            if cores.len() == 1 { "" } else { "s" },
            if p.oversubscribed {
                ", oversubscribed"
            } else {
                ""
            }
        )?;
        let mut rows = vec![vec!["THREAD".to_string(), "CPUS".into(), "CORE".into()]];
        for t in &p.threads {
            let core = if t.cpus.len() == 1 {
                topo.core_of(t.cpus.first().expect("non-empty")).to_string()
            } else {
                "-".into()
            };
            rows.push(vec![t.thread.to_string(), t.cpus.to_string(), core]);
        }
        out.write_all(render::table(&rows).as_bytes())?;
        for n in &p.notes {
            writeln!(out, "note: {n}")?;
        }
    }
    for s in skipped {
        writeln!(out, "\nskipped {}: {}", s.placement, s.reason)?;
    }
    for n in same_placements(topo, plans) {
        writeln!(out, "\nnote: {n}")?;
    }
    Ok(())
}

/// Notes for layouts that put every thread where an earlier layout did (e.g. `all` is
/// `one-per-core` when the cores have one usable thread each), with the reason only when
/// it is the reason.
fn same_placements(topo: &crate::topology::Topology, plans: &[Plan]) -> Vec<String> {
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
