//! `summary.md`: the verdict and every table of the HTML report, without charts. Pure and
//! deterministic, rendered from a [`Report`] alone.

use super::tables::{self, Table};
use super::{PhaseName, Report, Status};
use std::fmt::Write;

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn table(o: &mut String, t: &Table) {
    let header: Vec<String> = if t.header.iter().all(|h| h.is_empty()) {
        vec!["".into(); t.header.len()]
    } else {
        t.header.iter().map(|h| cell(h)).collect()
    };
    let _ = writeln!(o, "| {} |", header.join(" | "));
    let _ = writeln!(o, "|{}|", vec!["---"; header.len()].join("|"));
    for r in &t.rows {
        let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
        let _ = writeln!(o, "| {} |", cells.join(" | "));
    }
    o.push('\n');
}

fn missing(o: &mut String, r: &Report, phase: PhaseName) {
    match r.phases.iter().find(|p| p.phase == phase) {
        Some(p) => {
            let _ = writeln!(
                o,
                "Not measured ({}): {}\n",
                p.status.label(),
                p.reason.as_deref().unwrap_or("no reason recorded")
            );
        }
        None => o.push_str("Not measured.\n\n"),
    }
}

/// Renders the summary.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# smtlab study: {}\n", r.machine.cpu_model);
    if r.synthetic {
        o.push_str(
            "> **Synthetic data**: made up by the fake engine for tests. Nothing was measured.\n\n",
        );
    }
    if r.status == Status::Partial {
        o.push_str(
            "> **Partial**: the study was stopped with Ctrl-C; only finished phases are shown.\n\n",
        );
    }
    o.push_str("## Verdict\n\n");
    let _ = writeln!(o, "{}\n", r.verdict.headline);
    for f in &r.verdict.findings {
        let _ = writeln!(
            o,
            "- **{}**: {}\n  *Meaning:* {}",
            f.topic, f.observed, f.meaning
        );
    }
    if !r.verdict.findings.is_empty() {
        o.push('\n');
    }
    if !r.verdict.not_measured.is_empty() {
        o.push_str("### Not measured here, and why\n\n");
        for n in &r.verdict.not_measured {
            let _ = writeln!(o, "- {n}");
        }
        o.push('\n');
    }
    o.push_str("## Machine\n\n");
    table(&mut o, &tables::machine(r));
    for n in &r.notes {
        let _ = writeln!(o, "- {n}");
    }
    if !r.notes.is_empty() {
        o.push('\n');
    }
    o.push_str("### Phases\n\n");
    table(&mut o, &tables::phases(r));

    o.push_str("## c2c: cache-line handoff latency\n\n");
    match &r.c2c {
        Some(c) => table(&mut o, &tables::c2c(c)),
        None => missing(&mut o, r, PhaseName::C2c),
    }
    o.push_str("## lockscan: lock threads vs a memory scanner\n\n");
    match &r.lockscan {
        Some(l) => {
            table(&mut o, &tables::lockscan(l));
            for v in l.result.verdict.iter().chain(&l.result.notes) {
                let _ = writeln!(o, "- {v}");
            }
            o.push('\n');
        }
        None => missing(&mut o, r, PhaseName::Lockscan),
    }
    o.push_str("## neighbors: a hot lock vs CPU burners\n\n");
    match &r.neighbors {
        Some(n) => table(&mut o, &tables::neighbors(n)),
        None => missing(&mut o, r, PhaseName::Neighbors),
    }
    o.push_str("## oltp: inserts per CPU layout\n\n");
    match &r.oltp {
        Some(x) => {
            let _ = writeln!(
                o,
                "{} on {}\n",
                x.result.db_version, x.result.db_description
            );
            table(&mut o, &tables::oltp(x));
        }
        None => missing(&mut o, r, PhaseName::Oltp),
    }
    o.push_str("## rwcache: read-mostly cache schemes\n\n");
    match &r.rwcache {
        Some(w) => {
            let _ = writeln!(o, "{}\n", tables::rwcache_settings(w));
            table(&mut o, &tables::rwcache(w));
            for v in &w.result.verdict {
                let _ = writeln!(o, "- {v}");
            }
            o.push('\n');
        }
        None => missing(&mut o, r, PhaseName::Rwcache),
    }
    let _ = writeln!(
        o,
        "---\nsmtlab {} (git {}), {} build · `{}` · re-render with `smtlab report results.json`",
        r.provenance.smtlab_version,
        r.provenance.git_revision,
        r.provenance.build_profile,
        r.provenance.command
    );
    o
}
