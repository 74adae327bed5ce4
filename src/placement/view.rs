//! `smtlab plan`'s terminal view of a placement plan.

use crate::render::Table;
use crate::topology::Topology;

/// `smtlab plan`'s view: each thread's CPUs, core, L3 group and package.
pub fn plan_text(topo: &Topology, plan: &super::Plan) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "placement {} for {}:",
        plan.request,
        crate::render::count(plan.threads.len(), "thread")
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
                crate::render::NONE.into()
            },
            if single {
                llcs.iter()
                    .find(|g| g.contains(first))
                    .map(|g| g.to_string())
                    .unwrap_or_else(|| crate::render::NONE.into())
            } else {
                crate::render::NONE.into()
            },
            if single {
                topo.cpu(first)
                    .and_then(|c| c.package)
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| crate::render::NONE.into())
            } else {
                crate::render::NONE.into()
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
            crate::render::count(plan.threads.len(), "thread"),
            crate::render::count(plan.cpus().len(), "CPU"),
            crate::render::count(cores_used, "core"),
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
