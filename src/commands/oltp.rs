//! `smtlab oltp`: runs [`crate::experiments::oltp`] on this machine and prints its report
//! as a table (or JSON; or, with `--dry-run`, the placements only), and writes the exports.

use crate::engine::RealEngine;
use crate::experiments::oltp::{self as experiment, view};
use crate::oltp::OltpConfig;
use anyhow::Result;
use std::io::Write;

/// A checked `smtlab oltp` invocation: the experiment's settings and the exports.
#[derive(Debug, Clone)]
pub struct OltpCommand {
    pub oltp: OltpConfig,
    /// `--export-json/csv/markdown`: the report as files.
    pub exports: crate::render::export::Exports,
}

/// Runs the command; step narration goes to stderr, the report to `out`. A Ctrl-C'd run
/// writes the runs so far and exits 130; a failed row check writes the report, then fails.
pub fn run(cfg: &OltpCommand, out: &mut dyn Write) -> Result<()> {
    let (exports, cfg) = (&cfg.exports, &cfg.oltp);
    exports.check()?;
    let topo = super::topology_for_run(&cfg.sysfs_root, cfg.dry_run, true)?;
    if cfg.dry_run {
        let (plans, skipped) = experiment::plan_layouts(&topo, cfg)?;
        if cfg.json {
            let plans: Vec<_> = plans.iter().map(|l| &l.plan).collect();
            let v = serde_json::json!({ "layouts": plans, "skipped": skipped });
            writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        } else {
            let text = view::dry_run_text(cfg.threads, &topo, &plans, &skipped);
            out.write_all(text.as_bytes())?;
        }
        return Ok(());
    }
    let rep = experiment::run(&RealEngine, &topo, cfg, &mut |m| crate::say!("oltp: {m}"))?;
    // The exports hold what the terminal shows, an interrupted run's runs too.
    super::emit_blocks(out, cfg.json, &rep, view::blocks)?;
    exports.write(|| view::export(&rep))?;
    if rep.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    match experiment::row_check_failure(&rep) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
