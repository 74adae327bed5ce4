//! `smtlab neighbors`: workers on one lock while CPU burners step up — a table of burners →
//! ops/s with a diagnosis per step, or `--json`.

use crate::engine::RealEngine;
use crate::experiments::neighbors::{self, HotPage, NeighborsConfig, NeighborsReport, Worker};
use crate::locks::LockKind;
use crate::render::{self, Table, duration_ns, si};
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
}

pub fn run(cfg: &NeighborsCommand, out: &mut dyn Write) -> Result<()> {
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
        let kind = cfg.exp.burner.kind;
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
    super::emit(out, cfg.json, &report, human, report.interrupted)
}

/// `round 2, ` before a live step line when there are several rounds.
fn round_prefix(rounds: usize, s: &neighbors::Step) -> String {
    if rounds > 1 {
        format!("round {}/{rounds}, ", s.round + 1)
    } else {
        String::new()
    }
}

/// One row per step (burners → ops/s and the evidence), then one diagnosis line per step;
/// with several rounds, also one row per burner count over them, its ratio paired with
/// each round's first step.
pub fn human(r: &NeighborsReport) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "neighbors: {} workers ({}, {}) vs {} burners ({}, {} mode, policy {}); time slice {}{}\n",
        r.workers,
        r.workload,
        r.worker_placement,
        r.burner_kind,
        r.burner_placement,
        r.burner_mode,
        r.burner_policy,
        duration_ns(r.time_slice_ns),
        if r.repeat > 1 {
            format!("; {} rounds", r.repeat)
        } else {
            String::new()
        }
    ));
    let rounds = r.repeat > 1;
    let mut table = Table::new(&[
        "BURNERS",
        "WORKERS",
        "RUNNABLE",
        "OPS/S",
        "SHARE",
        "TIME/OP",
        "P50",
        "P99",
        "MAX",
        "INVOL/S",
        "RUNQ WAIT",
        "LONG HOLDS",
        "LONG WAITS",
        "BURNER OPS/S",
        "DIAGNOSIS",
    ]);
    if rounds {
        table.header.insert(0, "ROUND".into());
    }
    let row = |label: String, s: &neighbors::Step| -> Vec<String> {
        let mut v = vec![
            label,
            s.workers.to_string(),
            format!("{}/{}", s.runnable_threads, s.cpus),
            si(s.ops_per_sec),
            format!("{:.1}%", s.ratio_to_first * 100.0),
            duration_ns(s.time_per_op_ns),
            duration_ns(s.latency_p50_ns as f64),
            duration_ns(s.latency_p99_ns as f64),
            duration_ns(s.latency_max_ns as f64),
            format!("{:.0}", s.worker_involuntary_switches_per_sec),
            s.worker_run_delay_share
                .map(|d| format!("{:.0}%", d * 100.0))
                .unwrap_or_else(|| "-".into()),
            s.holder_preemptions
                .map(render::thousands)
                .unwrap_or_else(|| "-".into()),
            s.long_waits
                .map(render::thousands)
                .unwrap_or_else(|| "-".into()),
            si(s.burner_ops_per_sec),
            s.diagnosis.label().into(),
        ];
        if rounds {
            v.insert(0, (s.round + 1).to_string());
        }
        v
    };
    if let Some(rf) = &r.reference {
        table.push(row("ref".into(), rf));
    }
    for s in &r.steps {
        table.push(row(s.burners.to_string(), s));
    }
    o.push_str(&table.text());
    o.push_str("SHARE is relative to ");
    o.push_str(if r.reference.is_some() {
        "the reference run (`ref`: as many workers as CPUs, no burners)"
    } else {
        "the first step"
    });
    o.push_str(if rounds { " of the same round\n" } else { "\n" });
    o.push_str("RUNNABLE: threads that can take a worker's CPU / the CPUs they may use\n");
    o.push_str("P50, P99, MAX: latency of the operations that started and ended in the window\n");
    o.push_str(
        "RUNQ WAIT: share of each worker's time spent waiting for a CPU, mean over the workers\n",
    );
    if rounds {
        o.push_str(&format!(
            "\nOver {} rounds (RATIO: each round's ops/s ÷ its own first step, paired):\n",
            r.repeat
        ));
        let mut table = Table::new(&["BURNERS", "RUNNABLE", "OPS/S", "±MAD", "RATIO", "DIAGNOSIS"]);
        for s in &r.summary {
            table.push(vec![
                s.burners.to_string(),
                format!("{}/{}", s.runnable_threads, s.cpus),
                si(s.ops_per_sec.median),
                si(s.ops_per_sec.mad),
                render::or_dash(s.ratio, |c| c.to_string()),
                s.diagnosis.label().into(),
            ]);
        }
        o.push_str(&table.text());
        o.push_str("\nDiagnosis (most rounds; evidence of the round nearest the median):\n");
        for s in &r.summary {
            o.push_str(&format!(
                "  {}: {} — {}\n",
                render::count(s.burners, "burner"),
                s.diagnosis.label(),
                s.reason
            ));
        }
    } else {
        o.push_str("\nDiagnosis:\n");
        for s in &r.steps {
            o.push_str(&format!(
                "  {}: {} — {}\n",
                render::count(s.burners, "burner"),
                s.diagnosis.label(),
                s.reason
            ));
        }
    }
    for (b, why) in &r.skipped {
        o.push_str(&format!(
            "  {}: skipped — {why}\n",
            render::count(*b, "burner")
        ));
    }
    o.push_str(&counters_text(r));
    for n in &r.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    if r.hypervisor {
        let kind = None;
        o.push_str(&format!(
            "note: {}\n",
            crate::render::Caveat::Hypervisor { kind }
        ));
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::text::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    o
}

/// The workers' counters per step, summed over the workers; empty when no step counted.
fn counters_text(r: &NeighborsReport) -> String {
    use crate::counters::text;
    let steps: Vec<(String, &neighbors::Step)> = r
        .reference
        .iter()
        .map(|s| ("ref".to_string(), s))
        .chain(r.steps.iter().map(|s| (s.burners.to_string(), s)))
        .collect();
    let counts = || steps.iter().map(|(_, s)| s.worker_counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = text::any_hardware(counts());
    let rounds = r.repeat > 1;
    let mut head: Vec<String> = vec!["BURNERS".into()];
    if rounds {
        head.insert(0, "ROUND".into());
    }
    let mut table =
        Table::with_header(head.into_iter().chain(text::header(hw)).collect::<Vec<_>>());
    for (label, s) in &steps {
        let mut row = vec![label.clone()];
        if rounds {
            row.insert(0, (s.round + 1).to_string());
        }
        row.extend(text::cells(s.worker_counters.as_ref(), hw));
        table.push(row);
    }
    let mut o = String::from("\nWorker counters per step (summed over the workers):\n");
    o.push_str(&table.text());
    if let Some(n) = text::multiplexing_note(counts()) {
        o.push_str(&format!("note: {n}\n"));
    }
    o
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
