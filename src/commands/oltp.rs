//! `smtlab oltp`: runs [`crate::experiments::oltp`] on this machine and prints its report
//! (or, with `--dry-run`, the placements only).

use crate::engine::RealEngine;
use crate::experiments::oltp::{self as experiment, same_placements};
use crate::oltp::Config;
use crate::oltp::report::{self, SkippedLayout};
use crate::placement::Plan;
use crate::render;
use anyhow::Result;
use std::io::Write;

/// Runs the command; step narration goes to stderr, the report to `out`. A Ctrl-C'd run
/// writes the runs so far and exits 130; a failed row check writes the report, then fails.
pub fn run(cfg: &Config, out: &mut dyn Write) -> Result<()> {
    cfg.validate()?;
    let topo = super::topology_for_run(&cfg.sysfs_root, cfg.dry_run, true)?;
    if cfg.dry_run {
        let (plans, skipped) = experiment::plan_layouts(&topo, cfg)?;
        return dry_run(cfg, &topo, &plans, &skipped, out);
    }
    let rep = experiment::run(&RealEngine, &topo, cfg, &mut |m| crate::say!("oltp: {m}"))?;
    super::emit(out, cfg.json, &rep, report::render_text, rep.interrupted)?;
    match experiment::row_check_failure(&rep) {
        Some(e) => Err(e),
        None => Ok(()),
    }
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
