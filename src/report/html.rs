//! `report.html`: one self-contained page (inline CSS, inline SVG, no scripts, no network)
//! rendered from a [`Report`] alone. Deterministic: the same report gives the same bytes.

use super::view;
use super::{Report, Section, Status};
use crate::conclusion::SectionCtx;
use crate::render::Table;
use crate::render::blocks::Block;
use crate::render::markup::{
    CSS_STUDY, Column, HtmlStyle, html_table, inline, page_end, page_start,
};
use crate::render::svg::{self, CoreBox, L3Box, PackageBox, esc};
use crate::topology::Topology;
use std::fmt::Write;

/// Renders the page.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let title = format!("smtlab study — {}", r.machine.cpu_model);
    page_start(&mut o, &title, CSS_STUDY);
    let _ = writeln!(
        o,
        "<h1>smtlab study</h1>\n<p class=\"meta\">{} · {} · smtlab {} (git {}) · {}</p>",
        esc(&r.machine.cpu_model),
        esc(&crate::render::cells::utc(r.provenance.started_unix_s)),
        esc(&r.provenance.smtlab_version),
        esc(&r.provenance.git_revision),
        if r.status == Status::Complete {
            "complete"
        } else {
            "partial"
        }
    );
    if r.synthetic {
        o.push_str("<p class=\"banner synthetic\">Synthetic data: every number on this page was made up by the fake engine for tests. Nothing was measured.</p>\n");
    }
    if let Some(why) = r.partial_reason() {
        let _ = writeln!(
            o,
            "<p class=\"banner partial\">Partial: {}.</p>",
            inline(&why)
        );
    }
    verdict(&mut o, r);
    machine(&mut o, r);
    let ctx = view::section_ctx(r);
    for s in r.sections() {
        section(&mut o, r, s, &ctx);
    }
    page_end(
        &mut o,
        &format!(
            "Written by <code>{}</code>; re-render with <code>smtlab report results.json</code>. Schema version {}.",
            esc(&r.provenance.command),
            r.schema_version
        ),
    );
    o
}

fn table(o: &mut String, t: &Table) {
    html_table(o, t, &HtmlStyle::AUTO);
}

fn para(o: &mut String, class: &str, text: &str) {
    let _ = writeln!(o, "<p class=\"{class}\">{}</p>", inline(text));
}

fn verdict(o: &mut String, r: &Report) {
    let v = &r.verdict;
    o.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n");
    if !v.answers.is_empty() {
        // Each row is classed by its answer, for the stylesheet's colours.
        let row_class = |i: usize| format!("{:?}", v.answers[i].answer).to_lowercase();
        html_table(
            o,
            &view::answer_rows(v, true),
            &HtmlStyle {
                class: Some("answers"),
                columns: &[
                    Column::Text,
                    Column::Strong,
                    Column::Text,
                    Column::Code,
                    Column::Anchor,
                ],
                row_class: Some(&row_class),
                ..HtmlStyle::TEXT
            },
        );
    }
    para(o, "headline", &v.headline);
    if !v.findings.is_empty() {
        o.push_str(
            "<h3>What each experiment showed, and what it means for HT and pinning</h3>\n<dl>\n",
        );
        for f in &v.findings {
            finding(o, f);
        }
        o.push_str("</dl>\n");
    }
    if !v.not_measured.is_empty() {
        o.push_str("<h3>Not measured here, and why</h3>\n<ul>\n");
        for n in &v.not_measured {
            let _ = writeln!(o, "<li>{}</li>", inline(n));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
}

/// One finding at a glance: its comparisons as a table (what, ratio, interval, n, class)
/// and what they mean; the full observation folded away below. A finding without
/// comparisons (medians only) shows its observation instead of a table.
fn finding(o: &mut String, f: &super::Finding) {
    let _ = writeln!(o, "<dt>{}</dt>\n<dd>", inline(&f.topic));
    if f.evidence.is_empty() {
        para(o, "observed", &f.observed);
    } else {
        table(
            o,
            &crate::render::comparisons_table(
                f.evidence.iter().map(|e| (e.what.as_str(), &e.comparison)),
            ),
        );
    }
    let _ = writeln!(o, "<p><strong>Meaning:</strong> {}</p>", inline(&f.meaning));
    if !f.evidence.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>Everything observed</summary><p>{}</p></details>",
            inline(&f.observed)
        );
    }
    o.push_str("</dd>\n");
}

/// The topology picture's boxes: packages ⊃ L3 groups ⊃ cores (online CPUs).
pub fn topology_boxes(t: &Topology) -> Vec<PackageBox> {
    let allowed = t.allowed();
    let cores = t.cores();
    let l3 = t.llc_groups();
    let llc_name = t
        .llc_level()
        .map(|l| format!("L{l}"))
        .unwrap_or_else(|| "group".into());
    t.packages()
        .iter()
        .enumerate()
        .map(|(pi, p)| PackageBox {
            label: format!("Package {pi}: CPUs {p}"),
            l3: l3
                .iter()
                .filter(|g| g.intersects(p))
                .map(|g| {
                    let size = g
                        .first()
                        .and_then(|c| t.llc_level().and_then(|l| t.cache_of(c, l)))
                        .and_then(|c| c.size_bytes)
                        .map(|b| format!(" {}", crate::render::bytes(b)))
                        .unwrap_or_default();
                    L3Box {
                        label: format!("{llc_name}{size}: CPUs {g}"),
                        cores: cores
                            .iter()
                            .filter(|c| c.first().is_some_and(|f| g.contains(f) && p.contains(f)))
                            .map(|c| CoreBox {
                                cpus: c.to_vec(),
                                disallowed: c.difference(&allowed).to_vec(),
                            })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect()
}

fn machine(o: &mut String, r: &Report) {
    o.push_str("<section id=\"machine\">\n<h2>Machine</h2>\n");
    table(o, &view::machine(r));
    if let Some(t) = view::slurm_variables(r) {
        o.push_str("<p>What Slurm gave the study (its <code>SLURM_*</code> variables):</p>\n");
        table(o, &t);
    }
    o.push_str(&svg::topology(
        "topology",
        &format!(
            "Topology: {} package(s), {} L3 group(s), {} cores, {} thread(s) per core",
            r.machine.packages, r.machine.l3_groups, r.machine.cores, r.smt.threads_per_core
        ),
        &topology_boxes(&r.topology),
    ));
    if !r.notes.is_empty() {
        o.push_str("<ul class=\"note\">\n");
        for n in &r.notes {
            let _ = writeln!(o, "<li>{}</li>", inline(&n.to_string()));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("<h3>Phases</h3>\n");
    table(o, &view::phases(r));
    o.push_str("</section>\n");
}

/// One experiment's section: its heading, then its blocks (or why it is missing).
fn section(o: &mut String, r: &Report, s: Section<'_>, ctx: &SectionCtx) {
    let _ = writeln!(
        o,
        "<section id=\"{}\">\n<h2>{}</h2>",
        s.phase.label(),
        esc(s.title)
    );
    blocks(o, &view::section_blocks(r, s, ctx));
    o.push_str("</section>\n");
}

/// A section's blocks as HTML.
fn blocks(o: &mut String, b: &[Block]) {
    for x in b {
        match x {
            Block::Intro(t) | Block::Note(t) => para(o, "note", t),
            Block::Key(t) => {
                let _ = writeln!(o, "<p><strong>{}</strong></p>", inline(t));
            }
            Block::List(items) => {
                o.push_str("<ul>\n");
                for l in items {
                    let _ = writeln!(o, "<li>{}</li>", inline(l));
                }
                o.push_str("</ul>\n");
            }
            Block::Terms(terms) => {
                o.push_str("<dl>\n");
                for t in terms {
                    let _ = writeln!(
                        o,
                        "<dt>{}: {}</dt><dd>{}</dd>",
                        esc(&t.label),
                        inline(&t.observed),
                        inline(&t.meaning)
                    );
                }
                o.push_str("</dl>\n");
            }
            Block::Table(t) => table(o, t),
            Block::Chart(svg) => o.push_str(svg),
            Block::Heading(h) => {
                let _ = writeln!(o, "<h3>{}</h3>", esc(h));
            }
            Block::Subheading(h) => {
                let _ = writeln!(o, "<h4>{}</h4>", esc(h));
            }
            Block::Folded {
                summary,
                blocks: inner,
            } => {
                let _ = writeln!(o, "<details><summary>{}</summary>", esc(summary));
                blocks(o, inner);
                o.push_str("</details>\n");
            }
        }
    }
}
