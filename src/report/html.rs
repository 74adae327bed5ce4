//! `report.html`: one self-contained page (inline CSS, inline SVG, no scripts, no network)
//! rendered from a [`Report`] alone. Deterministic: the same report gives the same bytes.

use super::svg::{self, Bar, CoreBox, Group, L3Box, PackageBox, Point, Series, esc};
use super::view;
use super::{PhaseStatus, Report, Status};
use crate::experiments::diagnosis::Diagnosis;
use crate::experiments::{lockscan, rwcache};
use crate::render::{Table, si};
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
    memory(&mut o, r);
    c2c(&mut o, r);
    lockscan(&mut o, r);
    neighbors(&mut o, r);
    oltp(&mut o, r);
    rwcache(&mut o, r);
    smt_yield(&mut o, r);
    command(&mut o, r);
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

fn missing(o: &mut String, r: &Report, phase: super::PhaseName) {
    let p = r.phases.iter().find(|p| p.phase == phase);
    let why = match p {
        Some(p) => format!(
            "Not measured ({}): {}",
            p.status.label(),
            p.reason.as_deref().unwrap_or("no reason recorded")
        ),
        None => "Not measured.".into(),
    };
    para(o, "note", &why);
}

fn interrupted_note(o: &mut String, r: &Report, phase: super::PhaseName) {
    if r.phases
        .iter()
        .any(|p| p.phase == phase && p.status == PhaseStatus::Interrupted)
    {
        para(
            o,
            "note",
            &format!(
                "Interrupted by {}: only the runs that finished are shown.",
                crate::interrupt::name(r.interrupted_by)
            ),
        );
    }
}

fn c2c(o: &mut String, r: &Report) {
    o.push_str("<section id=\"c2c\">\n<h2>Cache-line handoff latency (c2c)</h2>\n");
    let Some(c) = &r.c2c else {
        missing(o, r, super::PhaseName::C2c);
        o.push_str("</section>\n");
        return;
    };
    para(o, "note", &crate::experiments::c2c::view::section_intro(c));
    interrupted_note(o, r, super::PhaseName::C2c);
    let labels: Vec<String> = c.result.cpus.iter().map(|x| x.to_string()).collect();
    o.push_str(&svg::heatmap(
        "c2c-heatmap",
        "One-way cache-line latency between CPUs (ns)",
        &labels,
        &c.result.matrix_ns,
        "ns",
    ));
    table(o, &crate::experiments::c2c::view::classes(&c.result));
    if let Some(n) = crate::experiments::c2c::view::section_left_out(c) {
        para(o, "note", &n);
    }
    o.push_str("</section>\n");
}

fn lockscan(o: &mut String, r: &Report) {
    o.push_str("<section id=\"lockscan\">\n<h2>Lock threads vs a memory scanner (lockscan)</h2>\n");
    let Some(l) = &r.lockscan else {
        missing(o, r, super::PhaseName::Lockscan);
        o.push_str("</section>\n");
        return;
    };
    para(o, "note", &lockscan::view::section_intro(l));
    interrupted_note(o, r, super::PhaseName::Lockscan);
    const MAX_BARS: usize = 96;
    let mut groups = Vec::new();
    let mut bars = 0;
    let mut cut = false;
    for s in &l.result.results {
        let n = s.threads.iter().filter(|t| t.is_lock()).count();
        if bars + n > MAX_BARS {
            cut = true;
            continue;
        }
        bars += n;
        let li = l.locks.iter().position(|k| *k == s.lock).unwrap_or(0);
        groups.push(Group {
            caption: format!("{} / {}", s.lock, short_scenario(&s.scenario.label)),
            bars: s
                .threads
                .iter()
                .filter(|t| t.is_lock())
                .map(|t| Bar {
                    label: format!("{}", t.cpu),
                    value: t.ops_per_sec,
                    range: t.ops_per_sec_summary.map(|x| (x.min, x.max)),
                    series: li,
                    highlight: t.shares_core_with_scanner,
                    tooltip: format!(
                        "{} / {}: thread {} on CPU {}: {} acquisitions/s",
                        s.lock,
                        s.scenario.label,
                        t.thread,
                        t.cpu,
                        si(t.ops_per_sec)
                    ),
                })
                .collect(),
        });
    }
    let series: Vec<String> = l.locks.iter().map(|k| k.to_string()).collect();
    let sharing = if r.smt.threads_per_core > 1 {
        "shares its core with the scanner"
    } else {
        "shares its CPU with the scanner"
    };
    o.push_str(&svg::bar_chart(
        "lockscan-threads",
        "Per-thread lock acquisitions per second (labels: CPU)",
        "acquisitions/s",
        &groups,
        &series,
        Some(sharing),
        false,
    ));
    if cut {
        para(
            o,
            "note",
            "The chart shows the first scenarios only; the table has all.",
        );
    }
    table(o, &lockscan::view::scenarios(&l.result));
    if let Some(t) = lockscan::view::core_cpi(&l.result) {
        para(
            o,
            "note",
            "Per-core CPI (median run): a core's cycles over all its threads' instructions, beside each thread's own CPI.",
        );
        table(o, &t);
    } else if let Some(why) = view::counters_not_measured(r) {
        para(o, "note", &why);
    }
    for line in lockscan::view::verdict(&l.result) {
        para(o, "note", &line);
    }
    for n in &l.result.notes {
        para(o, "note", n);
    }
    o.push_str("<details><summary>Per-thread tables</summary>\n");
    for s in &l.result.results {
        let _ = writeln!(
            o,
            "<h4>{} / {}</h4>",
            esc(&s.lock.to_string()),
            esc(&s.scenario.label)
        );
        table(o, &lockscan::view::threads(s));
    }
    o.push_str("</details>\n</section>\n");
}

/// `baseline (no scanner)` → `baseline`, `scanner on 3 (sibling of 0)` → `scanner on 3`.
fn short_scenario(label: &str) -> &str {
    label.split(" (").next().unwrap_or(label)
}

/// Marker colour per diagnosis (apart from the series colours, which ring the markers).
pub fn diagnosis_colour(d: Diagnosis) -> &'static str {
    match d {
        Diagnosis::None => "#2ca02c",
        Diagnosis::SmtSharing => "#9467bd",
        Diagnosis::PossiblySmtSharing => "#c5b0d5",
        Diagnosis::SharedResources => "#17becf",
        Diagnosis::ExternalLoad => "#8c8c8c",
        Diagnosis::Oversubscribed => "#f5d000",
        Diagnosis::PreemptionCollapse => "#d62728",
    }
}

fn neighbors(o: &mut String, r: &Report) {
    o.push_str("<section id=\"neighbors\">\n<h2>Noisy neighbours: a hot lock vs CPU burners (neighbors)</h2>\n");
    let Some(n) = &r.neighbors else {
        missing(o, r, super::PhaseName::Neighbors);
        o.push_str("</section>\n");
        return;
    };
    para(
        o,
        "note",
        &crate::experiments::neighbors::view::section_intro(n),
    );
    interrupted_note(o, r, super::PhaseName::Neighbors);
    let series: Vec<Series> = n
        .series
        .iter()
        .map(|s| Series {
            name: match s.placement {
                super::SeriesPlacement::Unpinned => s.lock.to_string(),
                p => format!("{} ({})", s.lock, p.label()),
            },
            points: s
                .steps
                .iter()
                .map(|st| Point {
                    x: st.burners as f64,
                    y: st.ops_per_sec.median,
                    range: Some((st.ops_per_sec.min, st.ops_per_sec.max)),
                    marker: Some(diagnosis_colour(st.diagnosis).to_string()),
                    tooltip: format!(
                        "{} ({}): {} burners, {} ops/s ({:.3}×), {}",
                        s.lock,
                        s.placement.label(),
                        st.burners,
                        si(st.ops_per_sec.median),
                        st.ratio_to_first,
                        st.diagnosis.label()
                    ),
                })
                .collect(),
        })
        .collect();
    let mut seen: Vec<Diagnosis> = Vec::new();
    for s in &n.series {
        for st in &s.steps {
            if !seen.contains(&st.diagnosis) {
                seen.push(st.diagnosis);
            }
        }
    }
    let legend: Vec<(String, String)> = seen
        .iter()
        .map(|d| (d.label().to_string(), diagnosis_colour(*d).to_string()))
        .collect();
    o.push_str(&svg::line_chart(
        "neighbors-throughput",
        "Worker throughput vs CPU burners (log scale)",
        "burners",
        "ops/s",
        &series,
        &legend,
        true,
    ));
    table(o, &crate::experiments::neighbors::view::series(n));
    let mut notes: Vec<&String> = Vec::new();
    for run in &n.runs {
        for x in &run.notes {
            if !notes.contains(&x) {
                notes.push(x);
            }
        }
    }
    for x in notes {
        para(o, "note", x);
    }
    o.push_str("</section>\n");
}

fn oltp(o: &mut String, r: &Report) {
    o.push_str("<section id=\"oltp\">\n<h2>Database inserts per CPU layout (oltp)</h2>\n");
    let Some(x) = &r.oltp else {
        missing(o, r, super::PhaseName::Oltp);
        o.push_str("</section>\n");
        return;
    };
    para(o, "note", &crate::experiments::oltp::view::settings(x));
    interrupted_note(o, r, super::PhaseName::Oltp);
    let groups: Vec<Group> = x
        .summary
        .iter()
        .enumerate()
        .map(|(i, s)| Group {
            caption: s.placement.to_string(),
            bars: vec![Bar {
                label: String::new(),
                value: s.inserts_per_sec.median,
                range: Some((s.inserts_per_sec.min, s.inserts_per_sec.max)),
                series: i,
                highlight: false,
                tooltip: format!(
                    "{}: {} inserts/s",
                    s.placement,
                    crate::render::pm_sig(s.inserts_per_sec.median, s.inserts_per_sec.mad)
                ),
            }],
        })
        .collect();
    o.push_str(&svg::bar_chart(
        "oltp-layouts",
        "Inserts per second by layout (median, whiskers min–max)",
        "inserts/s",
        &groups,
        &[],
        None,
        false,
    ));
    table(o, &crate::experiments::oltp::view::table(x));
    o.push_str("<details><summary>Every run</summary>\n");
    table(o, &crate::experiments::oltp::view::runs(x));
    o.push_str("</details>\n</section>\n");
}

fn rwcache(o: &mut String, r: &Report) {
    o.push_str("<section id=\"rwcache\">\n<h2>Read-mostly cache under reader/writer schemes (rwcache)</h2>\n");
    let Some(w) = &r.rwcache else {
        missing(o, r, super::PhaseName::Rwcache);
        o.push_str("</section>\n");
        return;
    };
    para(o, "note", &rwcache::view::settings(&w.result));
    interrupted_note(o, r, super::PhaseName::Rwcache);
    let mut schemes: Vec<crate::rwcache::SchemeKind> = Vec::new();
    let mut threads: Vec<usize> = Vec::new();
    for row in &w.rows {
        if !schemes.contains(&row.scheme) {
            schemes.push(row.scheme);
        }
        if !threads.contains(&row.threads) {
            threads.push(row.threads);
        }
    }
    let groups: Vec<Group> = threads
        .iter()
        .map(|&t| Group {
            caption: format!("{t} thread{}", if t == 1 { "" } else { "s" }),
            bars: w
                .rows
                .iter()
                .filter(|x| x.threads == t)
                .map(|x| Bar {
                    label: String::new(),
                    value: x.requests_per_sec.median,
                    range: Some((x.requests_per_sec.min, x.requests_per_sec.max)),
                    series: schemes.iter().position(|s| *s == x.scheme).unwrap_or(0),
                    highlight: false,
                    tooltip: format!(
                        "{} at {t} threads: {} requests/s",
                        x.scheme,
                        crate::render::summary_cell(&x.requests_per_sec)
                    ),
                })
                .collect(),
        })
        .collect();
    o.push_str(&svg::bar_chart(
        "rwcache-schemes",
        "Requests per second by scheme and thread count",
        "requests/s",
        &groups,
        &schemes.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        None,
        false,
    ));
    table(o, &rwcache::view::rows(w));
    for n in rwcache::view::verdict(&w.result)
        .iter()
        .chain(&w.result.notes)
    {
        para(o, "note", n);
    }
    o.push_str("</section>\n");
}

fn memory(o: &mut String, r: &Report) {
    o.push_str("<section id=\"memory\">\n<h2>Memory settings</h2>\n");
    let Some(m) = &r.memory else {
        missing(o, r, super::PhaseName::Memory);
        o.push_str("</section>\n");
        return;
    };
    table(o, &crate::mem::view::study_table(&m.report));
    if !m.report.findings.is_empty() {
        o.push_str("<dl>\n");
        for f in &m.report.findings {
            let _ = writeln!(
                o,
                "<dt>{}: {}</dt><dd>{}</dd>",
                esc(f.level.label()),
                inline(&f.observed),
                inline(&f.meaning)
            );
        }
        o.push_str("</dl>\n");
    }
    para(
        o,
        "note",
        "Read from procfs and sysfs; `smtlab mem report` shows every value, `smtlab mem pages` measures what page size costs.",
    );
    memory_pages(o, m);
    o.push_str("</section>\n");
}

/// The page-size curves: chart, where 4 KiB falls behind, backing, TLB table, latencies.
fn memory_pages(o: &mut String, m: &super::MemorySection) {
    use super::pages;
    o.push_str("<h3>Page size: latency vs working set</h3>\n");
    let Some(p) = &m.pages else {
        let why = m
            .pages_skipped
            .as_deref()
            .unwrap_or("this results.json was written before the study measured page sizes");
        para(o, "note", &format!("Not measured: {why}."));
        return;
    };
    if p.interrupted {
        para(
            o,
            "note",
            "Interrupted: the working sets below are the ones that finished.",
        );
    }
    o.push_str(&pages::chart(p));
    let _ = writeln!(
        o,
        "<p><strong>{}</strong></p>",
        inline(&crate::mem::pages::view::departure_sentence(p))
    );
    para(o, "note", &crate::mem::pages::view::study_settings(p));
    table(o, &crate::mem::pages::view::backing_table(p));
    o.push_str("<h4>TLBs (CPUID)</h4>\n");
    if let Some(t) = crate::mem::pages::view::tlb_table(p) {
        table(o, &t);
    }
    for n in crate::mem::pages::view::tlb_notes(p) {
        para(o, "note", &n);
    }
    o.push_str("<details><summary>Latency per working set (ns per load, median ± MAD)</summary>\n");
    table(o, &crate::mem::pages::view::latency_table(p));
    o.push_str("</details>\n");
    for n in &p.notes {
        para(o, "note", n);
    }
}

fn smt_yield(o: &mut String, r: &Report) {
    o.push_str("<section id=\"yield\">\n<h2>SMT on vs off on the same cores (yield)</h2>\n");
    let Some(y) = &r.smt_yield else {
        missing(o, r, super::PhaseName::Yield);
        o.push_str("</section>\n");
        return;
    };
    para(o, "note", &crate::experiments::smt_yield::view::settings(y));
    interrupted_note(o, r, super::PhaseName::Yield);
    // One bar per workload: the yield, whiskers its interval; 1.0 is "SMT adds nothing".
    let groups: Vec<Group> = y
        .result
        .workloads
        .iter()
        .filter_map(|w| {
            let c = &w.smt_yield.as_ref()?.comparison;
            Some(Group {
                caption: w.workload.clone(),
                bars: vec![Bar {
                    label: String::new(),
                    value: c.estimate,
                    range: Some((c.low, c.high)),
                    series: 0,
                    highlight: c.effect == crate::stats::Effect::Loss,
                    tooltip: format!("{}: SMT yield {c}", w.workload),
                }],
            })
        })
        .collect();
    if !groups.is_empty() {
        o.push_str(&svg::bar_chart(
            "yield",
            "SMT yield: throughput of all ÷ one-per-core (whiskers: interval; 1 = the siblings add nothing)",
            "yield (×)",
            &groups,
            &[],
            None,
            false,
        ));
    }
    table(o, &crate::experiments::smt_yield::view::table(y));
    if let Some(why) = view::counters_not_measured(r) {
        para(o, "note", &why);
    }
    for l in &y.result.plan.left_out {
        para(
            o,
            "note",
            &format!("Left out: {}: {}", l.workload, l.reason),
        );
    }
    for n in y.result.plan.notes.iter().chain(&y.result.notes) {
        para(o, "note", n);
    }
    o.push_str("</section>\n");
}

fn command(o: &mut String, r: &Report) {
    o.push_str("<section id=\"compare\">\n<h2>Your command (compare)</h2>\n");
    let Some(c) = &r.compare else {
        missing(o, r, super::PhaseName::Compare);
        o.push_str("</section>\n");
        return;
    };
    para(o, "note", &crate::experiments::compare::view::settings(c));
    interrupted_note(o, r, super::PhaseName::Compare);
    // One bar per placement: the median of its runs, whiskers the median's interval.
    // Wall time is drawn in seconds; a metric in its own unit.
    let seconds = c.medians.iter().any(|m| m.unit == "ns");
    let scale = if seconds { 1e-9 } else { 1.0 };
    let unit = c.medians.first().map_or("", |m| m.unit.as_str());
    let groups: Vec<Group> = c
        .medians
        .iter()
        .filter_map(|m| {
            let ci = m.median?;
            Some(Group {
                caption: m.label.clone(),
                bars: vec![Bar {
                    label: String::new(),
                    value: ci.estimate * scale,
                    range: Some((ci.low * scale, ci.high * scale)),
                    series: 0,
                    highlight: false,
                    tooltip: format!(
                        "{}: median {} (interval {}–{}, n = {})",
                        m.label,
                        si(ci.estimate * scale),
                        si(ci.low * scale),
                        si(ci.high * scale),
                        m.n
                    ),
                }],
            })
        })
        .collect();
    if !groups.is_empty() {
        let (title, axis) = if seconds {
            (
                "Wall time per run by placement: median, whiskers its interval (lower is faster)"
                    .to_string(),
                "wall time (s)".to_string(),
            )
        } else {
            let better = c.result.metric.as_ref().map_or("", |m| {
                if m.higher_is_better {
                    "higher"
                } else {
                    "lower"
                }
            });
            (
                format!(
                    "{unit} per run by placement: median, whiskers its interval ({better} is better)"
                ),
                unit.to_string(),
            )
        };
        o.push_str(&svg::bar_chart(
            "compare-placements",
            &title,
            &axis,
            &groups,
            &[],
            None,
            false,
        ));
    }
    table(o, &crate::experiments::compare::view::table(c));
    let lines = crate::experiments::compare::view::lines(&c.result);
    if !lines.is_empty() {
        o.push_str("<ul>\n");
        for l in &lines {
            let _ = writeln!(o, "<li>{}</li>", inline(l));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("</section>\n");
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
