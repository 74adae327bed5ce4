//! `smtlab lockscan`: lock threads on one global lock beside memory-scanning threads —
//! live interval rows shaped like the original test's output ("To Hyper or not to Hyper",
//! SQL Server, 2005), then per-thread summaries, fairness and the verdict; `--json` for
//! the model.

use crate::engine::{IntervalSample, RealEngine};
use crate::experiments::lockscan::{self, Layout, LockscanConfig, Scenario};
use crate::locks::{LockKind, StatsMode};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// The command: the experiment's config plus where the topology comes from and how to
/// print.
#[derive(Debug, Clone)]
pub struct LockscanCommand {
    pub root: PathBuf,
    pub exp: LockscanConfig,
    pub json: bool,
    pub dry_run: bool,
    /// `--export-json/--export-csv/--export-markdown`.
    pub exports: crate::render::export::Exports,
}

pub fn run(cfg: &LockscanCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let topo = super::topology_for_run(&cfg.root, cfg.dry_run, true)?;
    let scen = lockscan::scenarios(&topo, &cfg.exp.layout, cfg.exp.baseline && !cfg.dry_run)?;
    // Every scan thread memsets its own buffer from the start of its run.
    let scanners = scen.iter().map(|s| s.scan_cpus.len()).max().unwrap_or(0) as u64;
    crate::limits::memory(
        &format!("--scan-bytes {}", cfg.exp.scan_bytes),
        (cfg.exp.scan_bytes as u64).saturating_mul(scanners),
        crate::limits::mem_available_bytes(),
        &crate::render::count(scanners as usize, "scan buffer"),
        crate::limits::Force::NotOffered,
    )?;
    for s in &scen {
        let lock: crate::cpuset::CpuSet = s.lock_cpus.iter().copied().collect();
        let scan: crate::cpuset::CpuSet = s.scan_cpus.iter().copied().collect();
        if lock.intersects(&scan) && !matches!(cfg.exp.layout, Layout::Sweep(_)) {
            crate::say!(
                "warning: lock and scan CPUs overlap on {}: those threads time-share a CPU",
                lock.intersection(&scan)
            );
        }
    }
    if cfg.dry_run {
        if let Some(u) = lockscan::sweep_scope(&topo, &cfg.exp.layout) {
            writeln!(out, "sweep {}", u)?;
        }
        out.write_all(lockscan::view::dry_run(&topo, &scen).as_bytes())?;
        return Ok(());
    }
    let engine = RealEngine;
    let json = cfg.json;
    // Interval rows go where the original test printed them: stdout (stderr under --json).
    let mut err = std::io::stderr();
    let o: &mut dyn Write = if json { &mut err } else { &mut *out };
    let counted = cfg.exp.stats != StatsMode::Off;
    let mut live = |s: &Scenario, k: LockKind, sample: &IntervalSample, spins: &[u64]| {
        let _ = writeln!(
            o,
            "[{} / {}] interval {} ({:.1} s)",
            k,
            s.label,
            sample.index + 1,
            sample.elapsed_ns as f64 / 1e9
        );
        let nl = s.lock_cpus.len();
        for (i, &c) in s.lock_cpus.iter().chain(&s.scan_cpus).enumerate() {
            let ops = sample.ops.get(i).copied().unwrap_or(0);
            if i < nl && counted {
                let _ = writeln!(
                    o,
                    "  Thread Id = {i}, CPU = {c}, Locked = {ops}, Spin = {}",
                    spins.get(i).copied().unwrap_or(0)
                );
            } else if i < nl {
                let _ = writeln!(o, "  Thread Id = {i}, CPU = {c}, Locked = {ops}");
            } else {
                let _ = writeln!(o, "  Thread Id = {i}, CPU = {c}, scan passes = {ops}");
            }
        }
    };
    let measured: crate::cpuset::CpuSet = scen
        .iter()
        .flat_map(|s| s.lock_cpus.iter().chain(&s.scan_cpus).copied())
        .collect();
    let busy = crate::hygiene::preflight(&measured);
    let mut report = lockscan::run(&engine, &topo, &cfg.exp, &scen, &mut live)?;
    report.notes.extend(busy);
    let interrupted = report.results.iter().any(|r| r.interrupted);
    // The exports hold what an interrupted run finished too, before its exit code.
    super::emit(out, cfg.json, &report, lockscan::view::text, false)?;
    cfg.exports.write(|| lockscan::view::document(&report))?;
    if interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}
