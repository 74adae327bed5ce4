//! `smtlab oltp`: runs [`crate::experiments::oltp`] on this machine and prints its report
//! as a table (or JSON; or, with `--dry-run`, the placements only).

use crate::engine::RealEngine;
use crate::experiments::oltp::{self as experiment, PlannedLayout, same_placements};
use crate::oltp::OltpConfig;
use crate::oltp::report::{OltpReport, SkippedLayout};
use crate::render::{self, Table};
use anyhow::Result;
use std::io::Write;

/// Runs the command; step narration goes to stderr, the report to `out`. A Ctrl-C'd run
/// writes the runs so far and exits 130; a failed row check writes the report, then fails.
pub fn run(cfg: &OltpConfig, out: &mut dyn Write) -> Result<()> {
    cfg.validate()?;
    let topo = super::topology_for_run(&cfg.sysfs_root, cfg.dry_run, true)?;
    if cfg.dry_run {
        let (plans, skipped) = experiment::plan_layouts(&topo, cfg)?;
        return dry_run(cfg, &topo, &plans, &skipped, out);
    }
    let rep = experiment::run(&RealEngine, &topo, cfg, &mut |m| crate::say!("oltp: {m}"))?;
    super::emit(out, cfg.json, &rep, render_text, rep.interrupted)?;
    match experiment::row_check_failure(&rep) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn dry_run(
    cfg: &OltpConfig,
    topo: &crate::topology::Topology,
    layouts: &[PlannedLayout],
    skipped: &[SkippedLayout],
    out: &mut dyn Write,
) -> Result<()> {
    let plans: Vec<_> = layouts.iter().map(|l| &l.plan).collect();
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
        writeln!(out, "layouts {}", u)?;
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
        let mut table = Table::new(&["THREAD", "CPUS", "CORE"]);
        for t in &p.threads {
            let core = if t.cpus.len() == 1 {
                topo.core_of(t.cpus.first().expect("non-empty")).to_string()
            } else {
                "-".into()
            };
            table.push(vec![t.thread.to_string(), t.cpus.to_string(), core]);
        }
        out.write_all(table.text().as_bytes())?;
        for n in &p.notes {
            writeln!(out, "note: {n}")?;
        }
    }
    for s in skipped {
        writeln!(out, "\nskipped {}: {}", s.placement, s.reason)?;
    }
    for n in same_placements(topo, layouts) {
        writeln!(out, "\nnote: {n}")?;
    }
    Ok(())
}

/// The terminal table.
pub fn render_text(r: &OltpReport) -> String {
    let mut out = String::new();
    let stop = match (r.rows_per_thread, r.duration_ns) {
        (Some(rows), _) => format!("{} rows per thread", render::thousands(rows)),
        (None, Some(ns)) => format!("{} per run", render::duration_ns(ns as f64)),
        _ => String::new(),
    };
    out.push_str(&format!(
        "oltp: {} ({} key, {} row(s)/txn, durability {}) on {}\n",
        r.schema, r.key, r.rows_per_txn, r.durability, r.db_description
    ));
    if let Some(u) = &r.scope {
        out.push_str(&format!("layouts {}\n", u));
    }
    out.push_str(&format!(
        "{} threads, {stop}, prefill {} rows; backends: {}\n\n",
        r.threads,
        render::thousands(r.prefill_rows),
        r.backend_pinning
    ));
    let mut table = Table::with_header(
        [
            "PLACEMENT",
            "THREADS",
            "ROUND",
            "INSERTS/S",
            "ELAPSED",
            "THREAD MIN",
            "MEDIAN",
            "MAX",
            "COMMIT P50",
            "P99",
            "MAX",
            "ROWS",
            "CHECK",
        ]
        .map(String::from)
        .to_vec(),
    );
    for run in &r.runs {
        let d = |ns: u64| render::duration_ns(ns as f64);
        table.push(vec![
            run.placement.to_string(),
            run.threads.to_string(),
            run.round.to_string(),
            render::thousands(run.inserts_per_sec.round() as u64),
            d(run.elapsed_ns),
            d(run.thread_elapsed_min_ns),
            d(run.thread_elapsed_median_ns),
            d(run.thread_elapsed_max_ns),
            render::latency_ns(run.commit_latency_p50_ns),
            render::latency_ns(run.commit_latency_p99_ns),
            render::latency_ns(run.commit_latency_max_ns),
            render::thousands(run.rows_in_table),
            if run.rows_verified {
                "ok".into()
            } else {
                format!("LOST? expected {}", render::thousands(run.rows_expected))
            },
        ]);
    }
    if !r.runs.is_empty() {
        out.push_str(&table.text());
    }
    for s in &r.skipped {
        out.push_str(&format!("skipped {}: {}\n", s.placement, s.reason));
    }
    for run in &r.runs {
        if run.pinning_violations > 0 {
            out.push_str(&format!(
                "warning: {} (round {}): {} thread(s) seen outside their CPUs\n",
                run.placement, run.round, run.pinning_violations
            ));
        }
    }
    out.push_str(&counters_text(r));
    if let Some(st) = &r.counters {
        for l in crate::counters::text::status_lines(st) {
            out.push_str(&format!("{l}\n"));
        }
    }
    if r.interrupted {
        out.push_str(&format!(
            "interrupted by {}: the runs above finished before it\n",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    out
}

/// Each client thread's counters, run by run; empty when no thread counted.
fn counters_text(r: &OltpReport) -> String {
    use crate::counters::text;
    let counts = || {
        r.runs
            .iter()
            .flat_map(|run| run.per_thread.iter().map(|t| t.counters.as_ref()))
    };
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = text::any_hardware(counts());
    let mut table = Table::with_header(
        ["PLACEMENT", "ROUND", "THREAD", "CPUS"]
            .map(String::from)
            .into_iter()
            .chain(text::header(hw))
            .collect::<Vec<_>>(),
    );
    for run in &r.runs {
        for t in &run.per_thread {
            table.push(
                [
                    run.placement.to_string(),
                    run.round.to_string(),
                    t.thread.to_string(),
                    t.cpus.clone(),
                ]
                .into_iter()
                .chain(text::cells(t.counters.as_ref(), hw))
                .collect(),
            );
        }
    }
    let mut o = String::from(if r.backend_pinning.starts_with("embedded") {
        "\nclient thread counters (the embedded database runs in them):\n"
    } else {
        "\nclient thread counters (the server's backend processes are not counted):\n"
    });
    o.push_str(&table.text());
    if let Some(n) = text::multiplexing_note(counts()) {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::report::tests::sample;

    #[test]
    fn renders_table() {
        insta::assert_snapshot!(render_text(&sample()));
    }
}
