//! `summary.md`: the verdict and every table of the HTML report, without charts. Pure and
//! deterministic, rendered from a [`Report`] alone.

use super::view;
use super::{PhaseName, Report};
use crate::render::Table;
use crate::render::markdown::{code, md};
use std::fmt::Write;

fn table(o: &mut String, t: &Table) {
    crate::render::export::markdown_table(o, t);
}

fn missing(o: &mut String, r: &Report, phase: PhaseName) {
    match r.phases.iter().find(|p| p.phase == phase) {
        Some(p) => {
            let _ = writeln!(
                o,
                "Not measured ({}): {}\n",
                p.status.label(),
                md(p.reason.as_deref().unwrap_or("no reason recorded"))
            );
        }
        None => o.push_str("Not measured.\n\n"),
    }
}

/// One finding at a glance: its comparisons as a table (what, ratio, interval, n, class),
/// what they mean, then the full observation; a finding without comparisons (medians
/// only) states its observation first.
fn finding(o: &mut String, f: &super::Finding) {
    let _ = writeln!(o, "**{}**\n", md(&f.topic));
    if f.evidence.is_empty() {
        let _ = writeln!(o, "{}\n", md(&f.observed));
    } else {
        table(
            o,
            &crate::render::comparisons_table(
                f.evidence.iter().map(|e| (e.what.as_str(), &e.comparison)),
            ),
        );
    }
    let _ = writeln!(o, "*Meaning:* {}\n", md(&f.meaning));
    if !f.evidence.is_empty() {
        let _ = writeln!(o, "Everything observed: {}\n", md(&f.observed));
    }
}

/// Renders the summary.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# smtlab study: {}\n", md(&r.machine.cpu_model));
    if r.synthetic {
        o.push_str(
            "> **Synthetic data**: made up by the fake engine for tests. Nothing was measured.\n\n",
        );
    }
    if let Some(why) = r.partial_reason() {
        let _ = writeln!(o, "> **Partial**: {}.\n", md(&why));
    }
    o.push_str("## Verdict\n\n");
    if !r.verdict.answers.is_empty() {
        o.push_str("| workload class | answer | evidence | why |\n|---|---|---|---|\n");
        for a in &r.verdict.answers {
            let _ = writeln!(
                o,
                "| {} | **{}** | {} | {} |",
                md(a.class.label()),
                md(a.answer.label()),
                a.evidence
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |e| md(&e.comparison.to_string())),
                md(&a.reason).replace('|', "\\|"),
            );
        }
        o.push('\n');
    }
    let _ = writeln!(o, "{}\n", md(&r.verdict.headline));
    for f in &r.verdict.findings {
        finding(&mut o, f);
    }
    if !r.verdict.not_measured.is_empty() {
        o.push_str("### Not measured here, and why\n\n");
        for n in &r.verdict.not_measured {
            let _ = writeln!(o, "- {}", md(n));
        }
        o.push('\n');
    }
    o.push_str("## Machine\n\n");
    table(&mut o, &view::machine(r));
    if let Some(t) = view::slurm_variables(r) {
        o.push_str("What Slurm gave the study (its `SLURM_*` variables):\n\n");
        table(&mut o, &t);
    }
    for n in &r.notes {
        let _ = writeln!(o, "- {}", md(&n.to_string()));
    }
    if !r.notes.is_empty() {
        o.push('\n');
    }
    o.push_str("### Phases\n\n");
    table(&mut o, &view::phases(r));

    o.push_str("## Memory settings\n\n");
    match &r.memory {
        Some(m) => {
            table(&mut o, &crate::mem::view::study_table(&m.report));
            for f in &m.report.findings {
                let _ = writeln!(
                    o,
                    "- **{}**: {}\n  *Meaning:* {}",
                    f.level.label(),
                    md(&f.observed),
                    md(&f.meaning)
                );
            }
            if !m.report.findings.is_empty() {
                o.push('\n');
            }
            memory_pages(&mut o, m);
        }
        None => missing(&mut o, r, PhaseName::Memory),
    }
    o.push_str("## c2c: cache-line handoff latency\n\n");
    match &r.c2c {
        Some(c) => table(&mut o, &crate::experiments::c2c::view::classes(&c.result)),
        None => missing(&mut o, r, PhaseName::C2c),
    }
    o.push_str("## lockscan: lock threads vs a memory scanner\n\n");
    match &r.lockscan {
        Some(l) => {
            table(
                &mut o,
                &crate::experiments::lockscan::view::scenarios(&l.result),
            );
            let verdict = crate::experiments::lockscan::view::verdict(&l.result);
            for v in verdict.iter().chain(&l.result.notes) {
                let _ = writeln!(o, "- {}", md(v));
            }
            o.push('\n');
            if let Some(t) = crate::experiments::lockscan::view::core_cpi(&l.result) {
                o.push_str("Per-core CPI (median run; a core's cycles over all its threads' instructions):\n\n");
                table(&mut o, &t);
            } else if let Some(why) = view::counters_not_measured(r) {
                let _ = writeln!(o, "{}\n", md(&why));
            }
        }
        None => missing(&mut o, r, PhaseName::Lockscan),
    }
    o.push_str("## neighbors: a hot lock vs CPU burners\n\n");
    match &r.neighbors {
        Some(n) => table(&mut o, &crate::experiments::neighbors::view::series(n)),
        None => missing(&mut o, r, PhaseName::Neighbors),
    }
    o.push_str("## oltp: inserts per CPU layout\n\n");
    match &r.oltp {
        Some(x) => {
            let _ = writeln!(
                o,
                "{} on {}\n",
                md(&x.result.db_version),
                md(&x.result.db_description)
            );
            table(&mut o, &crate::experiments::oltp::view::table(x));
        }
        None => missing(&mut o, r, PhaseName::Oltp),
    }
    o.push_str("## rwcache: read-mostly cache schemes\n\n");
    match &r.rwcache {
        Some(w) => {
            let _ = writeln!(
                o,
                "{}\n",
                md(&crate::experiments::rwcache::view::settings(&w.result))
            );
            table(&mut o, &crate::experiments::rwcache::view::rows(w));
            for v in &crate::experiments::rwcache::view::verdict(&w.result) {
                let _ = writeln!(o, "- {}", md(v));
            }
            o.push('\n');
        }
        None => missing(&mut o, r, PhaseName::Rwcache),
    }
    o.push_str("## yield: SMT on vs off on the same cores\n\n");
    match &r.smt_yield {
        Some(y) => {
            let _ = writeln!(
                o,
                "{}\n",
                md(&crate::experiments::smt_yield::view::settings(y))
            );
            table(&mut o, &crate::experiments::smt_yield::view::table(y));
            for l in &y.result.plan.left_out {
                let _ = writeln!(o, "- Left out: {}: {}", md(&l.workload), md(&l.reason));
            }
            for n in y.result.plan.notes.iter().chain(&y.result.notes) {
                let _ = writeln!(o, "- {}", md(n));
            }
            o.push('\n');
            if let Some(why) = view::counters_not_measured(r) {
                let _ = writeln!(o, "{}\n", md(&why));
            }
        }
        None => missing(&mut o, r, PhaseName::Yield),
    }
    o.push_str("## compare: your command\n\n");
    match &r.compare {
        Some(c) => {
            let _ = writeln!(
                o,
                "{}\n",
                md(&crate::experiments::compare::view::settings(c))
            );
            table(&mut o, &crate::experiments::compare::view::table(c));
            for l in crate::experiments::compare::view::lines(&c.result) {
                let _ = writeln!(o, "- {}", md(&l));
            }
            o.push('\n');
        }
        None => missing(&mut o, r, PhaseName::Compare),
    }
    let _ = writeln!(
        o,
        "---\nsmtlab {} (git {}), {} build · {} · re-render with `smtlab report results.json`",
        md(&r.provenance.smtlab_version),
        md(&r.provenance.git_revision),
        md(&r.provenance.build_profile),
        code(&r.provenance.command)
    );
    o
}

/// The page-size curves as tables: where 4 KiB falls behind, latencies, backing, TLBs.
fn memory_pages(o: &mut String, m: &super::MemorySection) {
    o.push_str("### Page size: latency vs working set\n\n");
    let Some(p) = &m.pages else {
        let why = m
            .pages_skipped
            .as_deref()
            .unwrap_or("this results.json was written before the study measured page sizes");
        let _ = writeln!(o, "Not measured: {}.\n", md(why));
        return;
    };
    if p.interrupted {
        o.push_str("Interrupted: the working sets below are the ones that finished.\n\n");
    }
    let _ = writeln!(
        o,
        "**{}**\n",
        md(&crate::mem::pages::view::departure_sentence(p))
    );
    let _ = writeln!(o, "{}\n", md(&crate::mem::pages::view::study_settings(p)));
    table(o, &crate::mem::pages::view::latency_table(p));
    table(o, &crate::mem::pages::view::backing_table(p));
    if let Some(t) = crate::mem::pages::view::tlb_table(p) {
        table(o, &t);
    }
    for n in crate::mem::pages::view::tlb_notes(p).iter().chain(&p.notes) {
        let _ = writeln!(o, "- {}", md(n));
    }
    if !(p.notes.is_empty() && crate::mem::pages::view::tlb_notes(p).is_empty()) {
        o.push('\n');
    }
}
