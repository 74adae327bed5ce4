//! `smtlab rwcache`: a read-mostly metadata cache under every scheme — one line per run on
//! stderr while it goes, then the scheme table, the lock stats, the before/after table
//! (`spin` → `rwspin`, as SQL Server 2016 RTM → CU2), the read-side cost and the best
//! scheme; `--json` for the model.

use crate::engine::RealEngine;
use crate::experiments::rwcache::{self, RwcacheConfig};
use crate::render::si;
use crate::rwcache::SchemeKind;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// A validated `rwcache` command.
#[derive(Debug, Clone)]
pub struct RwcacheCommand {
    pub root: PathBuf,
    pub exp: RwcacheConfig,
    pub json: bool,
    /// Allows more than [`crate::limits::MAX_THREADS_PER_CPU`] threads per usable CPU.
    pub force: bool,
    /// `--export-json/--export-csv/--export-markdown`.
    pub exports: crate::render::export::Exports,
}

pub fn run(cfg: &RwcacheCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let topo = super::topology_for_run(&cfg.root, false, false)?;
    let most = cfg.exp.threads.iter().copied().max().unwrap_or(1);
    crate::limits::per_cpu("--threads", most as u64, topo.allowed().len(), cfg.force)?;
    let json = cfg.json;
    let mut progress = |n: usize, k: SchemeKind, rep: usize, r: &crate::engine::RunResult| {
        if json {
            return;
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "[{n} thread{} / {k} / run {}] {} requests/s",
            if n == 1 { "" } else { "s" },
            rep + 1,
            si(r.ops_per_sec())
        );
    };
    let busy = crate::hygiene::preflight(&topo.allowed());
    let mut report = rwcache::run(&RealEngine, &topo, &cfg.exp, &mut progress)?;
    report.notes.extend(busy);
    // The exports hold what an interrupted run finished too, before its exit code.
    super::emit(out, cfg.json, &report, rwcache::view::text, false)?;
    cfg.exports.write(|| rwcache::view::document(&report))?;
    if report.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}
