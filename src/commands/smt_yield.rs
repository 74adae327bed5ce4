//! `smtlab yield`: runs [`crate::experiments::smt_yield`] on this machine and prints its
//! report (or, with `--dry-run`, the three layouts only; that works on a dump too).

use crate::engine::RealEngine;
use crate::experiments::smt_yield::{self as experiment, view};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct YieldCommand {
    pub root: PathBuf,
    pub exp: experiment::Config,
    pub json: bool,
    pub dry_run: bool,
    /// `--export-json/csv/markdown`: the report as files.
    pub exports: crate::render::export::Exports,
}

/// Runs the command; one line per run goes to stderr, the report to `out`. A Ctrl-C'd run
/// writes the rounds so far and exits 130; a failed insert row check writes the report,
/// then fails.
pub fn run(cfg: &YieldCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let topo = super::topology_for_run(&cfg.root, cfg.dry_run, true)?;
    // Another machine's dump says nothing about this one's memory.
    let mem = if topo.live {
        crate::limits::mem_available_bytes()
    } else {
        None
    };
    let planned = experiment::plan(&topo, &cfg.exp, mem)?;
    if cfg.dry_run {
        return super::emit(out, cfg.json, &planned.plan, view::dry_run_text, false);
    }
    let rep = experiment::run_planned(&RealEngine, &topo, &cfg.exp, &planned, &mut |m| {
        crate::say!("yield: {m}")
    })?;
    // The exports hold what the terminal shows, an interrupted run's rounds too.
    super::emit_blocks(out, cfg.json, &rep, view::blocks)?;
    cfg.exports.write(|| view::export(&rep))?;
    if rep.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    let bad: Vec<String> = rep
        .workloads
        .iter()
        .flat_map(|w| w.runs.iter())
        .filter(|r| r.rows_verified == Some(false))
        .map(|r| format!("{} (round {})", r.layout, r.round))
        .collect();
    if !bad.is_empty() {
        anyhow::bail!(
            "insert row check failed for {}: the table did not gain exactly the committed rows",
            bad.join(", ")
        );
    }
    Ok(())
}
