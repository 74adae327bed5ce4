//! The fleet drawn four ways from one [`Fleet`]: `fleet.md`, `fleet.html` (self-contained,
//! no scripts), the terminal summary `merge` prints, and Prometheus gauges (`merge
//! --prometheus`). Pure; the tables are built once here and drawn by each format.

use super::model::*;
use crate::render::cells::utc;
use crate::render::markdown::{code, md};
use crate::render::markup::{
    CSS_FLEET, Column, HtmlStyle, html_table, inline, md_table, page_start,
};
use crate::render::prometheus::{Exposition, labels};
use crate::render::ratio_text;
use crate::render::svg::esc;
use crate::render::terminal::field;
use crate::render::{NONE, Table, count};
use crate::report::HtAnswer;
use crate::report::metrics::{FLEET_ANSWERS, RatioKind, answer_slug, class_slug};
use std::fmt::Write;

/// `1.28× (95 % CI 1.27–1.29)`.
fn pooled_text(p: &PooledRatio) -> String {
    format!(
        "{}× ({} % CI {}–{})",
        ratio_text(p.estimate),
        crate::render::level_text(p.confidence),
        ratio_text(p.low),
        ratio_text(p.high)
    )
}

/// The class as a row names it: its label, or the command.
fn class_name(c: &ClassRow) -> String {
    match &c.command {
        Some(cmd) => format!("{}: {cmd}", c.class.label()),
        None => c.class.label().to_string(),
    }
}

/// One line summing up the inputs.
pub fn inputs_line(f: &Fleet) -> String {
    format!(
        "{} from {} in {}; {} skipped.",
        count(f.hosts, "host"),
        count(f.files_read, "file"),
        count(f.types.len(), "machine type"),
        count(f.skipped.len(), "input")
    )
}

/// Every type in one table.
pub fn overview(f: &Fleet) -> Table {
    let mut t = Table::new(&["TYPE", "HOSTS", "MACHINE TYPE (GROUPING KEY)", "ANSWERS"]);
    for ty in &f.types {
        let answered: Vec<String> = ty
            .classes
            .iter()
            .filter(|c| c.answer != HtAnswer::NotMeasured)
            .map(|c| format!("{}: {}", class_name(c), c.answer.label()))
            .collect();
        t.push(vec![
            ty.id.clone(),
            ty.hosts.len().to_string(),
            ty.label.clone(),
            if answered.is_empty() {
                "nothing measured".into()
            } else {
                answered.join("; ")
            },
        ]);
    }
    t
}

/// A type's answer per workload class.
pub fn answers(ty: &MachineType) -> Table {
    let mut t = Table::new(&[
        "WORKLOAD CLASS",
        "ANSWER",
        "POOLED RATIO",
        "POOLED",
        "I²",
        "τ (LOG)",
        "NEXT HOST EXPECTED",
        "HOSTS' OWN ANSWERS",
    ]);
    for c in &ty.classes {
        let p = c.pooled.as_ref();
        t.push(vec![
            class_name(c),
            c.answer.label().into(),
            p.map_or(NONE.into(), |p| {
                format!("{} {}", c.ratio.label(), pooled_text(p))
            }),
            p.map_or("0".into(), |p| format!("{} of {}", p.hosts, c.hosts.len())),
            p.and_then(|p| p.i2)
                .map_or(NONE.into(), |v| crate::render::percent(v, 0)),
            p.and_then(|p| p.tau)
                .map_or(NONE.into(), |x| format!("{x:.3}")),
            match p.map(|p| (p.predict_low, p.predict_high)) {
                Some((Some(a), Some(b))) => format!("{}–{}×", ratio_text(a), ratio_text(b)),
                _ => NONE.into(),
            },
            super::build::tally_text(&c.hosts),
        ]);
    }
    t
}

/// A type's hosts.
pub fn hosts(ty: &MachineType) -> Table {
    let mut t = Table::new(&[
        "HOST",
        "KERNEL",
        "MICROCODE",
        "STUDY STARTED",
        "SLURM",
        "CAVEATS",
    ]);
    for h in &ty.hosts {
        t.push(vec![
            h.host.clone(),
            super::host::kernel_release(&h.kernel),
            h.microcode.clone().unwrap_or_else(|| NONE.into()),
            utc(h.started_unix_s),
            h.slurm.clone().unwrap_or_else(|| NONE.into()),
            if h.caveats.is_empty() {
                NONE.into()
            } else {
                h.caveats
                    .iter()
                    .map(|c| format!("{}: {}", c.kind.label(), c.text))
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        ]);
    }
    t
}

/// Every host's own answer for one class.
pub fn host_answers(c: &ClassRow) -> Table {
    let mut t = Table::new(&["HOST", "ANSWER", "RATIO (INTERVAL)", "IN POOL", "NOTE"]);
    for h in &c.hosts {
        let note = match (&h.outlier, &h.not_pooled) {
            (Some(o), _) => outlier_text(o),
            (None, Some(w)) => w.clone(),
            (None, None) => String::new(),
        };
        t.push(vec![
            h.host.clone(),
            h.answer.label().into(),
            h.comparison.map_or(NONE.into(), |c| c.to_string()),
            if h.pooled { "yes" } else { "no" }.into(),
            note,
        ]);
    }
    t
}

fn outlier_text(o: &Outlier) -> String {
    let apart = format!(
        "outlier: deleted residual {:.1}, beyond ±{:.1}",
        o.residual, o.bound
    );
    if o.explained_by.is_empty() {
        format!("{apart}; nothing in its own results explains it, so it stays in the pool")
    } else {
        format!(
            "{apart}; its own results show {}; left out of the pool",
            o.explained_by
                .iter()
                .map(|c| format!("{} ({})", c.kind.label(), c.text))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Every outlier of a type, one line each.
pub fn outliers(ty: &MachineType) -> Vec<String> {
    let mut v = Vec::new();
    for c in &ty.classes {
        for h in &c.hosts {
            if let Some(o) = &h.outlier {
                v.push(format!(
                    "{} for {}: {} — {}",
                    h.host,
                    class_name(c),
                    h.comparison.map_or(NONE.into(), |c| c.to_string()),
                    outlier_text(o)
                ));
            }
        }
    }
    v
}

/// The Slurm lines for a type: its advice, or why there is none.
pub fn slurm_lines(ty: &MachineType) -> Vec<String> {
    if !ty.slurm_advice.is_empty() {
        return ty.slurm_advice.clone();
    }
    let unanswered = ty
        .classes
        .iter()
        .all(|c| matches!(c.answer, HtAnswer::NotMeasured | HtAnswer::Inconclusive));
    vec![if unanswered {
        "no Slurm hint: no workload class was measured to lose with HT on this type".into()
    } else {
        "no Slurm hint: no workload class loses with HT on this type, so jobs may use both siblings (the default)".into()
    }]
}

/// Inputs not merged.
pub fn skipped(f: &Fleet) -> Table {
    let mut t = Table::new(&["INPUT", "PROBLEM", "WHY"]);
    for s in &f.skipped {
        t.push(vec![
            s.path.clone(),
            s.problem.label().into(),
            s.reason.clone(),
        ]);
    }
    t
}

fn show_slurm(f: &Fleet, ty: &MachineType) -> bool {
    f.slurm_hosts > 0 || !ty.slurm_advice.is_empty()
}

// ---------------------------------------------------------------------------------------
// Terminal.

/// `t` with every cell through [`field`]: a cell from a file is one terminal line.
fn terminal_table(t: &Table) -> Table {
    let cells = |r: &Vec<String>| r.iter().map(|c| field(c)).collect();
    Table {
        header: cells(&t.header),
        rows: t.rows.iter().map(cells).collect(),
        align: t.align.clone(),
    }
}

/// What `merge` prints: per type its key, answers and outliers, then the skipped inputs.
/// Every value from an input file goes through [`field`]: a line break in one would start
/// a line the tool did not write, and an escape sequence would run on the terminal
/// (ECMA-48).
pub fn text(f: &Fleet) -> String {
    let mut o = String::new();
    if f.synthetic_hosts > 0 {
        let _ = writeln!(
            o,
            "SYNTHETIC DATA on {}: made up by the fake engine, not measured.",
            count(f.synthetic_hosts, "host")
        );
    }
    let _ = writeln!(o, "{}", inputs_line(f));
    for ty in &f.types {
        let _ = writeln!(o, "\n{} — {}", field(&ty.id), count(ty.hosts.len(), "host"));
        let _ = writeln!(o, "  grouping key: {}", field(&ty.label));
        o.push_str(&terminal_table(&answers(ty)).text());
        for c in &ty.classes {
            if c.answer != HtAnswer::NotMeasured || c.class == crate::report::WorkloadClass::Compute
            {
                let _ = writeln!(o, "  {}: {}", field(&class_name(c)), field(&c.reason));
            }
        }
        for l in outliers(ty) {
            let _ = writeln!(o, "  outlier {}", field(&l));
        }
        if show_slurm(f, ty) {
            for l in slurm_lines(ty) {
                let _ = writeln!(o, "  slurm: {}", field(&l));
            }
        }
    }
    if !f.skipped.is_empty() {
        let _ = writeln!(o, "\nSkipped:");
        for s in &f.skipped {
            let _ = writeln!(
                o,
                "  {}: {} — {}",
                field(&s.path),
                s.problem.label(),
                field(&s.reason)
            );
        }
    }
    for n in &f.notes {
        let _ = writeln!(o, "note: {}", field(n));
    }
    o
}

// ---------------------------------------------------------------------------------------
// Markdown.

/// `fleet.md`.
pub fn markdown(f: &Fleet) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# smtlab fleet: {} in {}\n",
        count(f.hosts, "host"),
        count(f.types.len(), "machine type")
    );
    if f.synthetic_hosts > 0 {
        let _ = writeln!(
            o,
            "> **Synthetic data** on {}: made up by the fake engine for tests. Nothing on them was measured.\n",
            count(f.synthetic_hosts, "host")
        );
    }
    let _ = writeln!(o, "{}\n", md(&inputs_line(f)));
    md_table(&mut o, &overview(f));
    for n in &f.notes {
        let _ = writeln!(o, "- {}", md(n));
    }
    if !f.notes.is_empty() {
        o.push('\n');
    }
    for ty in &f.types {
        let _ = writeln!(o, "## {}: {}\n", md(&ty.id), md(&ty.label));
        let k = &ty.key;
        let _ = writeln!(
            o,
            "Grouping key: CPU model {}; {} package(s) × {} cores × {} thread(s) per core; SMT {}; Linux {}; {}. {}.\n",
            code(&k.cpu_model),
            k.packages,
            k.cores_per_package,
            k.threads_per_core,
            md(&k.smt),
            md(&k.kernel_major),
            md(&k.platform),
            count(ty.hosts.len(), "host")
        );
        let _ = writeln!(o, "{}\n", md(&ty.headline));
        md_table(&mut o, &answers(ty));
        for c in &ty.classes {
            let _ = writeln!(o, "- **{}**: {}", md(&class_name(c)), md(&c.reason));
        }
        o.push('\n');
        let out = outliers(ty);
        if !out.is_empty() {
            o.push_str("### Outliers\n\n");
            for l in &out {
                let _ = writeln!(o, "- {}", md(l));
            }
            o.push('\n');
        }
        if show_slurm(f, ty) {
            o.push_str("### Slurm\n\n");
            for l in slurm_lines(ty) {
                let _ = writeln!(o, "- {}", md(&l));
            }
            o.push('\n');
        }
        o.push_str("### Hosts\n\n");
        md_table(&mut o, &hosts(ty));
        for c in &ty.classes {
            if c.hosts.iter().all(|h| h.answer == HtAnswer::NotMeasured) {
                continue;
            }
            let _ = writeln!(o, "### {}: host by host\n", md(&class_name(c)));
            md_table(&mut o, &host_answers(c));
        }
    }
    if !f.skipped.is_empty() {
        o.push_str("## Skipped inputs\n\n");
        md_table(&mut o, &skipped(f));
    }
    let _ = writeln!(o, "## Method\n\n{}\n", md(&f.method));
    let _ = writeln!(
        o,
        "Merged by {} (smtlab {}, git {}) at {}.",
        code(&f.provenance.command),
        md(&f.provenance.smtlab_version),
        md(&f.provenance.git_revision),
        utc(f.provenance.merged_unix_s)
    );
    o
}

// ---------------------------------------------------------------------------------------
// HTML.

/// The column of answers, coloured by the answer (`td.keep-ht-on`, …).
fn answer_class(col: usize, text: &str) -> Option<String> {
    (col == 1)
        .then(|| FLEET_ANSWERS.iter().find(|a| a.label() == text))
        .flatten()
        .map(|a| answer_slug(*a).to_string())
}

/// A table whose second column holds answers.
const ANSWER_TABLE: HtmlStyle<'static> = HtmlStyle {
    cell_class: Some(&answer_class),
    ..PROSE_TABLE
};

/// The fleet's answer table, the first table on the page: every type with its answers
/// (`table.answers`, as the study's page marks its own).
const OVERVIEW_TABLE: HtmlStyle<'static> = HtmlStyle {
    class: Some("answers"),
    ..PROSE_TABLE
};

/// Cells with `code` spans, as the study's page shows them: backticks become `<code>`.
const PROSE_TABLE: HtmlStyle<'static> = HtmlStyle {
    rest: Column::Code,
    ..HtmlStyle::TEXT
};

/// `fleet.html`.
pub fn html(f: &Fleet) -> String {
    let mut o = String::new();
    let title = format!(
        "smtlab fleet — {} in {}",
        count(f.hosts, "host"),
        count(f.types.len(), "machine type")
    );
    page_start(&mut o, &title, CSS_FLEET);
    let _ = writeln!(o, "<h1>{}</h1>", esc(&title));
    if f.synthetic_hosts > 0 {
        let _ = writeln!(
            o,
            "<p class=\"banner\">Synthetic data on {}: made up by the fake engine for tests. Nothing on them was measured.</p>",
            esc(&count(f.synthetic_hosts, "host"))
        );
    }
    let _ = writeln!(o, "<p class=\"meta\">{}</p>", esc(&inputs_line(f)));
    html_table(&mut o, &overview(f), &OVERVIEW_TABLE);
    if !f.notes.is_empty() {
        o.push_str("<ul>\n");
        for n in &f.notes {
            let _ = writeln!(o, "<li>{}</li>", inline(n));
        }
        o.push_str("</ul>\n");
    }
    for ty in &f.types {
        let _ = writeln!(
            o,
            "<section id=\"{}\">\n<h2>{}: {}</h2>",
            esc(&ty.id.replace(' ', "-")),
            esc(&ty.id),
            esc(&ty.label)
        );
        let _ = writeln!(o, "<p class=\"headline\">{}</p>", inline(&ty.headline));
        html_table(&mut o, &answers(ty), &ANSWER_TABLE);
        o.push_str("<dl>\n");
        for c in &ty.classes {
            let _ = writeln!(
                o,
                "<dt>{}</dt><dd>{}</dd>",
                esc(&class_name(c)),
                inline(&c.reason)
            );
        }
        o.push_str("</dl>\n");
        let out = outliers(ty);
        if !out.is_empty() {
            o.push_str("<h3>Outliers</h3>\n<ul>\n");
            for l in &out {
                let _ = writeln!(o, "<li>{}</li>", inline(l));
            }
            o.push_str("</ul>\n");
        }
        if show_slurm(f, ty) {
            o.push_str("<h3>Slurm</h3>\n<ul>\n");
            for l in slurm_lines(ty) {
                let _ = writeln!(o, "<li>{}</li>", inline(&l));
            }
            o.push_str("</ul>\n");
        }
        let _ = writeln!(
            o,
            "<details><summary>{} of this type</summary>",
            esc(&count(ty.hosts.len(), "host"))
        );
        html_table(&mut o, &hosts(ty), &PROSE_TABLE);
        o.push_str("</details>\n");
        for c in &ty.classes {
            if c.hosts.iter().all(|h| h.answer == HtAnswer::NotMeasured) {
                continue;
            }
            let _ = writeln!(
                o,
                "<details><summary>{}: host by host</summary>",
                esc(&class_name(c))
            );
            html_table(&mut o, &host_answers(c), &ANSWER_TABLE);
            o.push_str("</details>\n");
        }
        o.push_str("</section>\n");
    }
    if !f.skipped.is_empty() {
        o.push_str("<section id=\"skipped\">\n<h2>Skipped inputs</h2>\n");
        html_table(&mut o, &skipped(f), &PROSE_TABLE);
        o.push_str("</section>\n");
    }
    let _ = writeln!(
        o,
        "<section id=\"method\">\n<h2>Method</h2>\n<p>{}</p>\n</section>\n<footer>Merged by <code>{}</code> (smtlab {}, git {}) at {}. fleet.json schema version {}.</footer>\n</body>\n</html>",
        esc(&f.method),
        esc(&f.provenance.command),
        esc(&f.provenance.smtlab_version),
        esc(&f.provenance.git_revision),
        esc(&utc(f.provenance.merged_unix_s)),
        f.schema_version
    );
    o
}

// ---------------------------------------------------------------------------------------
// Prometheus.

/// The fleet's answers as gauges, one series per machine type and workload class (label
/// `machine_type` is the grouping key as printed; `command` only on a command's rows).
pub fn prometheus(f: &Fleet) -> String {
    let mut e = Exposition::new();
    let base = |ty: &MachineType, c: &ClassRow| -> Vec<(&'static str, String)> {
        let mut l = vec![
            ("machine_type", ty.label.clone()),
            ("class", class_slug(c.class).to_string()),
        ];
        if let Some(cmd) = &c.command {
            l.push(("command", cmd.clone()));
        }
        l
    };
    let render = |l: &[(&'static str, String)]| {
        let pairs: Vec<(&str, &str)> = l.iter().map(|(k, v)| (*k, v.as_str())).collect();
        labels(&pairs)
    };
    let mut answer = Vec::new();
    let mut hosts_pooled = Vec::new();
    let mut i2 = Vec::new();
    let mut tau = Vec::new();
    let mut outliers = Vec::new();
    let mut ratio: [Vec<(String, f64)>; 6] = Default::default();
    for ty in &f.types {
        for c in &ty.classes {
            let l = base(ty, c);
            for a in FLEET_ANSWERS {
                let mut la = l.clone();
                la.push(("answer", answer_slug(a).to_string()));
                answer.push((render(&la), if c.answer == a { 1.0 } else { 0.0 }));
            }
            let ls = render(&l);
            outliers.push((
                ls.clone(),
                c.hosts.iter().filter(|h| h.outlier.is_some()).count() as f64,
            ));
            let Some(p) = &c.pooled else {
                hosts_pooled.push((ls, 0.0));
                continue;
            };
            hosts_pooled.push((ls.clone(), p.hosts as f64));
            if let Some(x) = p.i2 {
                i2.push((ls.clone(), x));
            }
            if let Some(x) = p.tau {
                tau.push((ls.clone(), x));
            }
            let at = if c.ratio == RatioKind::SmtYield { 0 } else { 3 };
            ratio[at].push((ls.clone(), p.estimate));
            ratio[at + 1].push((ls.clone(), p.low));
            ratio[at + 2].push((ls, p.high));
        }
    }
    e.gauge(
        "smtlab_fleet_answer",
        "A machine type's answer for a workload class, pooled across its hosts: 1 for the answer given, 0 for the others.",
        &answer,
    );
    let names = [
        (
            "smtlab_fleet_smt_yield",
            "A machine type's SMT yield for a workload class, pooled across its hosts (random effects on log yields).",
        ),
        (
            "smtlab_fleet_smt_yield_low",
            "Lower bound of the pooled SMT yield's interval (Hartung-Knapp).",
        ),
        (
            "smtlab_fleet_smt_yield_high",
            "Upper bound of the pooled SMT yield's interval (Hartung-Knapp).",
        ),
        (
            "smtlab_fleet_sibling_sharing_ratio",
            "A machine type's sibling sharing ratio (a thread beside a busy sibling over alone), pooled across its hosts.",
        ),
        (
            "smtlab_fleet_sibling_sharing_ratio_low",
            "Lower bound of the pooled sibling sharing ratio's interval.",
        ),
        (
            "smtlab_fleet_sibling_sharing_ratio_high",
            "Upper bound of the pooled sibling sharing ratio's interval.",
        ),
    ];
    for (i, (name, help)) in names.iter().enumerate() {
        e.gauge(name, help, &ratio[i]);
    }
    e.gauge(
        "smtlab_fleet_hosts_pooled",
        "Hosts whose interval entered the pooled ratio.",
        &hosts_pooled,
    );
    e.gauge(
        "smtlab_fleet_heterogeneity_i2",
        "I squared, 0-1: the share of the spread between hosts' ratios beyond their own noise.",
        &i2,
    );
    e.gauge(
        "smtlab_fleet_tau",
        "Between-host standard deviation of the log ratio (DerSimonian-Laird tau).",
        &tau,
    );
    e.gauge(
        "smtlab_fleet_outlier_hosts",
        "Hosts whose ratio stands apart from the others of their type (studentized deleted residual beyond a Bonferroni bound).",
        &outliers,
    );
    let hosts: Vec<(String, f64)> = f
        .types
        .iter()
        .map(|ty| {
            (
                labels(&[("machine_type", &ty.label)]),
                ty.hosts.len() as f64,
            )
        })
        .collect();
    e.gauge(
        "smtlab_fleet_hosts",
        "Hosts merged per machine type.",
        &hosts,
    );
    e.gauge(
        "smtlab_fleet_skipped_inputs",
        "Inputs merge could not use (each named with its reason in fleet.json).",
        &[(String::new(), f.skipped.len() as f64)],
    );
    e.gauge(
        "smtlab_fleet_merge_time_seconds",
        "When the merge ran, seconds since the Unix epoch.",
        &[(String::new(), f.provenance.merged_unix_s as f64)],
    );
    e.finish()
}
