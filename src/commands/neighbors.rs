//! `smtlab neighbors`: workers on one lock while CPU burners step up — a table of burners →
//! ops/s with a diagnosis per step, or `--json`.

use crate::engine::RealEngine;
use crate::experiments::neighbors::{self, HotPage, NeighborsConfig, Worker};
use crate::locks::LockKind;
use crate::render::si;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// Which worker side runs.
#[derive(Debug, Clone)]
pub enum WorkloadChoice {
    /// Appends to one shared page under a lock of the library.
    HotPage(LockKind),
    /// Real singleton inserts (`oltp`'s insert path) on the given database.
    Oltp(Box<crate::oltp::OltpConfig>),
}

/// The command: the experiment's config plus the worker side, where the topology comes
/// from and how to print.
#[derive(Debug, Clone)]
pub struct NeighborsCommand {
    pub root: PathBuf,
    pub exp: NeighborsConfig,
    pub workload: WorkloadChoice,
    pub json: bool,
    /// Allows more than [`crate::limits::MAX_THREADS_PER_CPU`] threads per usable CPU.
    pub force: bool,
    pub dry_run: bool,
    /// `--export-json/--export-csv/--export-markdown`.
    pub exports: crate::render::export::Exports,
}

pub fn run(cfg: &NeighborsCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let topo = super::topology_for_run(&cfg.root, cfg.dry_run, true)?;
    let most = cfg.exp.workers + cfg.exp.burner_steps.iter().copied().max().unwrap_or(0);
    crate::limits::per_cpu(
        "--workers + --burners",
        most as u64,
        topo.allowed().len(),
        cfg.force,
    )?;
    let most_burners = cfg.exp.burner_steps.iter().copied().max().unwrap_or(0);
    if !cfg.dry_run && most_burners > 0 {
        let kind = cfg.exp.burner.kind();
        let (bytes, what) =
            crate::burn::buffers_total(kind, &topo, &vec![topo.allowed(); most_burners]);
        crate::limits::memory(
            &format!("--burners {most_burners} with --burner-kind {kind}"),
            bytes,
            crate::limits::mem_available_bytes(),
            &what,
            crate::limits::Force::Offered(cfg.force),
        )?;
    }
    if cfg.dry_run {
        for &b in &cfg.exp.burner_steps {
            match neighbors::step_plan(&topo, &cfg.exp, b) {
                Ok((plan, burners)) => {
                    writeln!(out, "{b} burners:")?;
                    for t in plan.threads.iter().take(cfg.exp.workers) {
                        writeln!(out, "  worker {} on CPUs {}", t.thread, t.cpus)?;
                    }
                    for (i, c) in burners.iter().enumerate() {
                        writeln!(out, "  burner {i} on CPUs {c}")?;
                    }
                }
                Err(e) if neighbors::step_not_possible_here(&e) => {
                    writeln!(out, "{b} burners: skipped: {e:#}")?
                }
                Err(e) => return Err(e),
            }
        }
        return Ok(());
    }
    let engine = RealEngine;
    let json = cfg.json;
    let workers = cfg.exp.workers;
    let rounds = cfg.exp.repeat;
    let busy = crate::hygiene::preflight(&topo.allowed());
    let mut report = match &cfg.workload {
        WorkloadChoice::HotPage(kind) => {
            let kind = *kind;
            let make = move |_: &crate::placement::Plan| -> Result<Box<dyn Worker>> {
                Ok(Box::new(HotPage::new(kind, workers)))
            };
            neighbors::run(&engine, &topo, &cfg.exp, &make, &mut |s| {
                if !json {
                    crate::say!(
                        "  {}{} burners: {} ops/s ({})",
                        round_prefix(rounds, s),
                        s.burners,
                        si(s.ops_per_sec),
                        s.diagnosis.label()
                    );
                }
            })?
        }
        WorkloadChoice::Oltp(oc) => {
            let db = crate::oltp::Db::open(&oc.db, oc.durability, workers)?;
            let before = db.create_table(&oc.table, oc.prefill)?;
            let committed = std::sync::atomic::AtomicU64::new(0);
            let make = |plan: &crate::placement::Plan| -> Result<Box<dyn Worker + '_>> {
                let w = crate::oltp::InsertWorkload::new(
                    &db,
                    &oc.table,
                    plan,
                    crate::oltp::StopRule::Duration,
                )?;
                Ok(Box::new(OltpWorker {
                    w,
                    committed: &committed,
                }))
            };
            let report = neighbors::run(&engine, &topo, &cfg.exp, &make, &mut |s| {
                if !json {
                    crate::say!(
                        "  {}{} burners: {} inserts/s ({})",
                        round_prefix(rounds, s),
                        s.burners,
                        si(s.ops_per_sec),
                        s.diagnosis.label()
                    );
                }
            });
            // Nothing lost: the table gained exactly the rows the clients committed.
            let report = report?;
            let rows = db.count_rows(&oc.table)?;
            let expect = before + committed.load(std::sync::atomic::Ordering::Relaxed);
            db.close()?;
            if rows != expect {
                anyhow::bail!(
                    "row check failed: the table holds {rows} rows, {expect} were committed"
                );
            }
            crate::say!("rows verified: {rows} in the table = {expect} committed");
            report
        }
    };
    report.notes.extend(busy);
    // The exports hold what an interrupted run finished too, before its exit code.
    super::emit_blocks(out, cfg.json, &report, neighbors::view::blocks)?;
    cfg.exports.write(|| neighbors::view::export(&report))?;
    if report.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}

/// `round 2, ` before a live step line when there are several rounds.
fn round_prefix(rounds: usize, s: &neighbors::Step) -> String {
    if rounds > 1 {
        format!("round {}/{rounds}, ", s.round + 1)
    } else {
        String::new()
    }
}

/// `oltp`'s insert path as a neighbors worker.
struct OltpWorker<'a> {
    w: crate::oltp::InsertWorkload,
    committed: &'a std::sync::atomic::AtomicU64,
}

impl crate::engine::Workload for OltpWorker<'_> {
    fn name(&self) -> String {
        self.w.name()
    }
    fn run_thread(&self, ctx: &crate::engine::ThreadCtx<'_>) {
        self.w.run_thread(ctx)
    }
}

impl Worker for OltpWorker<'_> {
    fn finish(self: Box<Self>) -> Result<neighbors::WorkerOutcome> {
        let outcome = self.w.finish()?;
        self.committed.fetch_add(
            outcome.rows_committed(),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(neighbors::WorkerOutcome {
            latency_ns: outcome.latency_ns,
            preemptions: None,
        })
    }
}
