//! `summary.md`: the verdict and every section of the HTML report, without charts and with
//! folded detail left to the page. Pure and deterministic, rendered from a [`Report`]
//! alone.

use super::Report;
use super::view;
use crate::render::Table;
use crate::render::blocks::Block;
use crate::render::markdown::{code, md};
use crate::render::markup::{Column, md_table, md_table_with};
use std::fmt::Write;

fn table(o: &mut String, t: &Table) {
    md_table(o, t);
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
        md_table_with(
            &mut o,
            &view::answer_rows(&r.verdict, false),
            &[Column::Text, Column::Strong],
        );
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

    let ctx = view::section_ctx(r);
    for s in r.sections() {
        let _ = writeln!(o, "## {}\n", md(s.title));
        blocks(&mut o, &view::section_blocks(r, s, &ctx));
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

/// A section's blocks as Markdown: charts left out (the tables carry their numbers), and
/// folded detail named but left to report.html, so the summary stays a summary.
fn blocks(o: &mut String, b: &[Block]) {
    for (k, x) in b.iter().enumerate() {
        match x {
            Block::Intro(t) => {
                let _ = writeln!(o, "{}\n", md(t));
            }
            Block::Key(t) => {
                let _ = writeln!(o, "**{}**\n", md(t));
            }
            Block::Note(t) => {
                let _ = writeln!(o, "- {}", md(t));
                if !matches!(b.get(k + 1), Some(Block::Note(_))) {
                    o.push('\n');
                }
            }
            Block::List(items) => {
                for l in items {
                    let _ = writeln!(o, "- {}", md(l));
                }
                o.push('\n');
            }
            Block::Terms(terms) => {
                for t in terms {
                    let _ = writeln!(
                        o,
                        "- **{}**: {}\n  *Meaning:* {}",
                        md(&t.label),
                        md(&t.observed),
                        md(&t.meaning)
                    );
                }
                o.push('\n');
            }
            Block::Table(t) => table(o, t),
            Block::Chart(_) => {}
            Block::Heading(h) => {
                let _ = writeln!(o, "### {}\n", md(h));
            }
            Block::Subheading(h) => {
                let _ = writeln!(o, "#### {}\n", md(h));
            }
            // Detail the page folds away stays out of the summary; the line says where it is.
            Block::Folded { summary, .. } => {
                let _ = writeln!(o, "{}: in report.html.\n", md(summary));
            }
        }
    }
}
