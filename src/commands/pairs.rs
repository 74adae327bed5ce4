//! `smtlab pairs`: runs [`crate::experiments::pairs`] on this machine, prints its report,
//! writes the exports and, when asked and complete, the profiles file.

use crate::engine::RealEngine;
use crate::experiments::pairs::{self as experiment, view};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct PairsCommand {
    pub root: PathBuf,
    pub exp: experiment::Config,
    pub json: bool,
    pub exports: crate::render::export::Exports,
}

/// Runs the command: one line per run on stderr, the report on `out`. A Ctrl-C'd run
/// prints what it measured (marked interrupted), saves no profiles, and exits 130.
pub fn run(cfg: &PairsCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let topo = super::topology_for_run(&cfg.root, false, false)?;
    let rep = experiment::run(&RealEngine, &topo, &cfg.exp, &mut |m| {
        crate::say!("pairs: {m}")
    })?;
    finish(cfg, &topo, &rep, out)
}

/// Prints, exports and saves a finished (or interrupted) report.
pub fn finish(
    cfg: &PairsCommand,
    topo: &crate::topology::Topology,
    rep: &experiment::PairsReport,
    out: &mut dyn Write,
) -> Result<()> {
    super::emit(out, cfg.json, rep, view::text, false)?;
    cfg.exports.write(|| view::document(rep))?;
    if rep.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    if let Some(p) = cfg.exp.save_profiles() {
        let f = experiment::run::profiles_file(rep, topo);
        let bytes = serde_json::to_vec_pretty(&f)?;
        crate::fsutil::replace(p, &bytes)
            .with_context(|| format!("--save-profiles {}", p.display()))?;
        crate::say!("pairs: profiles saved to {}", p.display());
    }
    Ok(())
}
