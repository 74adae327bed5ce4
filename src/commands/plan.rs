//! `smtlab plan`: which CPUs each thread would get, for this machine or a dump.

use crate::placement::{self, Plan, Request};
use crate::render::{self, Table};
use crate::topology::Topology;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct PlanCommand {
    pub root: PathBuf,
    pub request: Request,
    pub threads: usize,
    pub within: placement::Scope,
    pub json: bool,
}

pub fn run(cfg: &PlanCommand, out: &mut dyn std::io::Write) -> Result<()> {
    crate::limits::at_most(
        "--threads",
        cfg.threads as u64,
        crate::limits::MAX_THREADS,
        "threads to place",
    )?;
    let topo = super::load_topology(&cfg.root)?;
    let plan = placement::plan_within(&topo, &cfg.request, cfg.threads, cfg.within)?;
    super::emit(out, cfg.json, &plan, |p| render_text(&topo, p), false)
}

/// The plan as a table: each thread's CPUs, core, L3 group and package.
fn render_text(topo: &Topology, plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "placement {} for {}:",
        plan.request,
        render::count(plan.threads.len(), "thread")
    );
    let mut table = Table::new(&["THREAD", "CPUS", "CORE", "L3 GROUP", "PACKAGE"]);
    let llcs = topo.llc_groups();
    for t in &plan.threads {
        let first = t.cpus.first().expect("plans never hold empty sets");
        let single = t.cpus.len() == 1;
        table.push(vec![
            t.thread.to_string(),
            t.cpus.to_string(),
            if single {
                topo.core_of(first).to_string()
            } else {
                "-".into()
            },
            if single {
                llcs.iter()
                    .find(|g| g.contains(first))
                    .map(|g| g.to_string())
                    .unwrap_or_else(|| "-".into())
            } else {
                "-".into()
            },
            if single {
                topo.cpu(first)
                    .and_then(|c| c.package)
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| "-".into())
            } else {
                "-".into()
            },
        ]);
    }
    out.push_str(&table.text());
    let cores_used = plan
        .threads
        .iter()
        .filter(|t| t.cpus.len() == 1)
        .map(|t| topo.core_of(t.cpus.first().expect("non-empty")))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if cores_used > 0 {
        let _ = writeln!(
            out,
            "{} on {} of {}{}",
            render::count(plan.threads.len(), "thread"),
            render::count(plan.cpus().len(), "CPU"),
            render::count(cores_used, "core"),
            if plan.oversubscribed {
                " (oversubscribed)"
            } else {
                ""
            }
        );
    }
    if let Some(u) = &plan.scope {
        let _ = writeln!(out, "{u}");
    }
    for n in &plan.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
