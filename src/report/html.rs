//! `report.html`: one self-contained page (inline CSS, inline SVG, no scripts, no network)
//! rendered from a [`Report`] alone. Deterministic: the same report gives the same bytes.

use super::view;
use super::{Report, Section, Status};
use crate::conclusion::SectionCtx;
use crate::render::Table;
use crate::render::blocks::Block;
use crate::render::svg::{self, CoreBox, L3Box, PackageBox, esc};
use crate::topology::Topology;
use std::fmt::Write;

const CSS: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}
h1{margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
.meta{color:#555}.banner{padding:.6em 1em;border-radius:6px;margin:1em 0;font-weight:600}
.synthetic{background:#fff3cd;border:1px solid #e0c060}.partial{background:#fde2e1;border:1px solid #d9534f}
#verdict{background:#f3f8ff;border:1px solid #b8d0f0;border-radius:8px;padding:.2em 1.2em 1em}
#verdict h2{border:none}.headline{font-size:1.1em}
.answers .keephton strong{color:#17702a}.answers .turnhtoff strong{color:#b3261e}.answers .inconclusive strong,.answers .notmeasured strong{color:#6b6b6b}
dt{font-weight:700;margin-top:.8em}dd{margin-left:1em}dd p{margin:.3em 0}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}th,td{border:1px solid #ddd;padding:.25em .55em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.chart{display:block;margin:.8em 0;max-width:100%;height:auto}.note{color:#555;font-size:.9em}
code{background:#f2f2f2;padding:0 .25em;border-radius:3px;font-size:.92em}details{margin:.5em 0}summary{cursor:pointer;color:#0b5394}footer{margin-top:3em;color:#777;font-size:.85em}
";

/// Renders the page.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let title = format!("smtlab study — {}", r.machine.cpu_model);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n",
        esc(&title)
    );
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
    let _ = writeln!(
        o,
        "<footer>Written by <code>{}</code>; re-render with <code>smtlab report results.json</code>. Schema version {}.</footer>\n</body>\n</html>",
        esc(&r.provenance.command),
        r.schema_version
    );
    o
}

fn table(o: &mut String, t: &Table) {
    o.push_str("<table>\n");
    if t.header.iter().any(|h| !h.is_empty()) {
        o.push_str("<tr>");
        for h in &t.header {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>\n");
    }
    for row in &t.rows {
        o.push_str("<tr>");
        for c in row {
            let numeric = c.starts_with(|ch: char| ch.is_ascii_digit()) && !c.contains(' ')
                || c.ends_with('×');
            if numeric {
                let _ = write!(o, "<td class=\"num\">{}</td>", esc(c));
            } else {
                let _ = write!(o, "<td>{}</td>", inline(c));
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

fn para(o: &mut String, class: &str, text: &str) {
    let _ = writeln!(o, "<p class=\"{class}\">{}</p>", inline(text));
}

/// Escapes text and turns `backticked` spans into `<code>`.
pub fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(&esc(part));
            out.push_str("</code>");
        } else {
            out.push_str(&esc(part));
        }
    }
    // An odd number of backticks: the last one was literal.
    if text.matches('`').count() % 2 == 1 {
        return esc(text);
    }
    out
}

fn verdict(o: &mut String, r: &Report) {
    let v = &r.verdict;
    o.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n");
    if !v.answers.is_empty() {
        o.push_str(
            "<table class=\"answers\">\n<tr><th>workload class</th><th>answer</th><th>evidence</th><th>why</th><th>section</th></tr>\n",
        );
        for a in &v.answers {
            let _ = writeln!(
                o,
                "<tr class=\"{}\"><td>{}</td><td><strong>{}</strong></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&format!("{:?}", a.answer).to_lowercase()),
                esc(a.class.label()),
                esc(a.answer.label()),
                a.evidence
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |e| esc(&e.comparison.to_string())),
                inline(&a.reason),
                a.section
                    .map_or_else(|| "-".to_string(), |p| format!("<a href=\"#{p}\">{p}</a>")),
            );
        }
        o.push_str("</table>\n");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_code_spans_are_escaped() {
        assert_eq!(inline("a `<b>` c"), "a <code>&lt;b&gt;</code> c");
        assert_eq!(inline("odd ` tick"), "odd ` tick");
        assert_eq!(inline("plain & simple"), "plain &amp; simple");
    }
}
