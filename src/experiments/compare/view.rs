//! Everything that turns a [`CompareReport`] into tables and sentences: the terminal table
//! (hyperfine-like), the export document (CSV: one row per placement; Markdown: the
//! table hyperfine's `--export-markdown` writes, then the comparisons), the study's
//! section, its finding and the answer row for the user's command. JSON is the model
//! itself. Pure: report in, text out.

use super::model::{
    Call, CompareReport, CompareSection, Comparison, FoundBy, PairRatio, PlacementResult,
};
use crate::conclusion::{
    Answer, Evidence, Finding, HtAnswer, PhaseName, SectionCtx, StudySection, WorkloadClass,
    decide, indicative_note, not_answered,
};
use crate::render::blocks::Block;
use crate::render::export::{Document, Section};
use crate::render::markdown::code;
use crate::render::{self, Align, NONE, Table, band, duration_ns, interval_n, times};
use crate::stats::Effect;

/// The phase that fills this section; results.json names it `"compare"`.
pub const PHASE: PhaseName = PhaseName::new("compare");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Your command (compare)";

/// The argv as a shell would need it typed: words with spaces or shell characters in
/// single quotes.
pub fn shell_words(argv: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c))
    };
    argv.iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The metric's column name: `EVENTS/S`, `TPS`, `VALUE`.
fn metric_head(r: &CompareReport) -> Option<String> {
    r.metric.as_ref().map(|m| m.unit.to_uppercase())
}

/// One comparison line: the call, the speed (> 1 = faster) and its interval.
fn comparison_line(c: &Comparison, noise: f64) -> String {
    let band = band(noise);
    let s = &c.speedup;
    let x = |v: f64| crate::stats::ratio_text(v);
    let what = match (&c.not_called, c.call) {
        (Some(why), _) => format!("not called by wall time: {why}"),
        (None, Call::Faster) => format!("{}× faster ({})", x(s.estimate), interval_n(s)),
        (None, Call::Slower) => format!(
            "{}× slower: {}× the speed ({})",
            x(1.0 / s.estimate),
            x(s.estimate),
            interval_n(s)
        ),
        (None, Call::NoDifference) => format!(
            "no difference: {}× ({}, inside the {band} noise band)",
            x(s.estimate),
            interval_n(s)
        ),
        (None, Call::Inconclusive) => format!(
            "inconclusive: {}× ({}, straddles the {band} noise band; more runs would tell)",
            x(s.estimate),
            interval_n(s)
        ),
    };
    format!("{} vs {}: {what}", c.placement, c.baseline)
}

fn basis_words(basis: &str) -> &'static str {
    if basis == "metric" {
        "by the metric"
    } else {
        "by wall time"
    }
}

/// The yield line; `said` = a comparison line already gave the reason it is not called.
fn yield_line(y: &PairRatio, said: bool) -> String {
    if let Some(why) = &y.not_called {
        let why = if said { "as above" } else { why };
        return format!(
            "SMT yield ({} over {}): not called by wall time: {why}",
            y.placement, y.reference
        );
    }
    format!(
        "SMT yield: {} gets {}× the throughput of {} on the same cores ({}, {})",
        y.placement,
        crate::stats::ratio_text(y.ratio.estimate),
        y.reference,
        interval_n(&y.ratio),
        basis_words(&y.basis)
    )
}

/// The per-run cost line; `said` as for [`yield_line`].
fn slowdown_line(s: &PairRatio, said: bool) -> String {
    if let Some(why) = &s.not_called {
        let why = if said { "as above" } else { why };
        return format!(
            "SMT cost per run ({} against {}): not called by wall time: {why}",
            s.placement, s.reference
        );
    }
    let x = |v: f64| crate::stats::ratio_text(v);
    let (e, lo, hi) = super::analysis::slowdown(&s.ratio);
    format!(
        "SMT cost per run: {} (both siblings of half the cores) runs {}× slower than {} with as many threads ({} {}–{} as a slowdown, n = {}, {})",
        s.placement,
        x(e),
        s.reference,
        s.ratio.interval_label(),
        x(lo),
        x(hi),
        s.ratio.n,
        basis_words(&s.basis)
    )
}

fn describe_runs(r: &CompareReport) -> String {
    let metric = match &r.metric {
        Some(m) => format!(
            "{} ({}, {} is better)",
            m.unit,
            match &m.pattern {
                Some(p) => format!("regex '{p}'"),
                None => m.source.clone(),
            },
            if m.higher_is_better {
                "higher"
            } else {
                "lower"
            }
        ),
        None => "wall time (lower is better)".to_string(),
    };
    // One placement and nothing to compare it with: measured, not compared.
    let verb = if r.no_comparison.is_some() {
        "measured"
    } else {
        "compared"
    };
    let order = if r.placements.len() > 1 {
        ", interleaved in counterbalanced order (A B, B A, …) and paired by round"
    } else {
        ""
    };
    format!(
        "{verb} by {metric}; {} after {}{order}; CPUs set by {}",
        render::count(r.rounds, "round"),
        render::count(r.warmup_rounds, "warm-up round"),
        r.enforcement
    )
}

fn switches(p: &PlacementResult) -> String {
    match (p.voluntary_switches, p.involuntary_switches) {
        (Some(v), Some(i)) => format!("{}/{}", render::si(v), render::si(i)),
        _ => NONE.into(),
    }
}

/// The lines above the table: the command, the scope, the server, how runs were compared.
fn header(r: &CompareReport) -> Vec<String> {
    let mut v = vec![format!("Command: {}", shell_words(&r.command))];
    if let Some(s) = &r.scope {
        v.push(format!("Placements {s}"));
    }
    if let Some(s) = &r.server {
        v.push(format!(
            "Server: {}{} (pids {}) placed {} during each run",
            s.kind,
            s.version
                .as_ref()
                .map(|v| format!(", {v}"))
                .unwrap_or_default(),
            s.pids
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            match &s.fixed_cpus {
                Some(c) => format!("on CPUs {c}"),
                None => "on each placement's CPUs".into(),
            }
        ));
    }
    v.push(describe_runs(r));
    v
}

/// The terminal table: one row per placement, its value's median ± MAD and range, CPU
/// times and context switches. Every column after the CPUs is right-aligned: a CPU list
/// such as `0,2` is not a number, and the table is told so rather than left to guess.
pub fn placements_table(r: &CompareReport) -> Table {
    let metric = metric_head(r);
    let mut head = vec!["PLACEMENT".to_string(), "CPUS".into(), "CORES".into()];
    if let Some(m) = &metric {
        head.push(format!("{m} median ± MAD"));
        head.push("MIN … MAX".into());
        head.push("WALL".into());
    } else {
        head.push("WALL median ± MAD".into());
        head.push("MIN … MAX".into());
    }
    head.extend(["USER".into(), "SYS".into(), "CTX vol/invol".into()]);
    let burners = r.placements.iter().any(|p| p.burner_ops_per_sec.is_some());
    if burners {
        head.push("BURNER ops/s".into());
    }
    let mut t = Table::with_header(head);
    t = t.align(0, Align::Left).align(1, Align::Left);
    for i in 2..t.header.len() {
        t = t.align(i, Align::Right);
    }
    let dash = || NONE.to_string();
    let secs = duration_ns;
    for p in &r.placements {
        let mut row = vec![p.label.clone(), p.cpus.to_string(), p.cores.to_string()];
        if metric.is_some() {
            row.push(
                p.metric
                    .map(|s| render::pm_sig(s.median, s.mad))
                    .unwrap_or_else(dash),
            );
            row.push(
                p.metric
                    .map(|s| render::min_max(&s, |x| render::si_sig(x, 3)))
                    .unwrap_or_else(dash),
            );
            row.push(p.wall_time_ns.map(|s| secs(s.median)).unwrap_or_else(dash));
        } else {
            row.push(
                p.wall_time_ns
                    .map(|s| render::median_mad(&s, secs))
                    .unwrap_or_else(dash),
            );
            row.push(
                p.wall_time_ns
                    .map(|s| render::min_max(&s, secs))
                    .unwrap_or_else(dash),
            );
        }
        row.push(p.user_time_ns.map(|s| secs(s.median)).unwrap_or_else(dash));
        row.push(
            p.system_time_ns
                .map(|s| secs(s.median))
                .unwrap_or_else(dash),
        );
        row.push(switches(p));
        if burners {
            row.push(render::or_dash(p.burner_ops_per_sec, render::si));
        }
        t.push(row);
    }
    t
}

/// The terminal view.
pub fn text(r: &CompareReport) -> String {
    let mut out = header(r).join("\n");
    out.push_str("\n\n");
    out.push_str(&placements_table(r).text());
    let failed: Vec<String> = r
        .placements
        .iter()
        .filter(|p| p.failed_runs > 0)
        .map(|p| format!("{} ({} of {})", p.label, p.failed_runs, p.runs.len()))
        .collect();
    if !failed.is_empty() {
        out.push_str(&format!(
            "failed runs kept (--ignore-failure): {}\n",
            failed.join(", ")
        ));
    }
    if let Some(t) = counters_table(r) {
        out.push_str(&format!("\n{}:\n", counters_heading(r)));
        out.push_str(&t.text());
        if let Some(n) = crate::counters::view::multiplexing_note(
            r.placements.iter().map(|p| p.counters.as_ref()),
        ) {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    out.push('\n');
    for l in lines(r) {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// What the table does not show, one sentence each: every comparison with its call, the
/// SMT yield and per-run cost, skipped placements, notes, and whether Ctrl-C cut it
/// short. The terminal view prints them under its table; the study's report as a list.
pub fn lines(r: &CompareReport) -> Vec<String> {
    let mut out = Vec::new();
    for c in &r.comparisons {
        out.push(comparison_line(c, r.noise_threshold));
    }
    if let Some(n) = &r.no_comparison {
        out.push(n.clone());
    }
    out.extend(pair_lines(r));
    out.extend(fixed_duration_line(r));
    out.extend(unpaired_line(r));
    for s in &r.skipped {
        out.push(format!("skipped {}: {}", s.label, s.reason));
    }
    for p in &r.placements {
        for n in &p.notes {
            out.push(format!("note: {}: {n}", p.label));
        }
    }
    for n in &r.notes {
        out.push(format!("note: {n}"));
    }
    if let Some(st) = &r.counters {
        out.extend(crate::counters::view::status_lines(st));
    }
    if r.interrupted {
        out.push(format!(
            "interrupted by {}: these numbers cover the runs that finished before it",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    out
}

/// The SMT yield and per-run cost lines.
fn pair_lines(r: &CompareReport) -> Vec<String> {
    let said =
        |why: &Option<String>| why.is_some() && r.comparisons.iter().any(|c| &c.not_called == why);
    let mut out = Vec::new();
    if let Some(y) = &r.smt_yield {
        out.push(yield_line(y, said(&y.not_called)));
    }
    if let Some(s) = &r.pairs_slowdown {
        out.push(slowdown_line(s, said(&s.not_called)));
    }
    out
}

/// The fixed-duration note, unless every line that needs it already gives the reason.
fn fixed_duration_line(r: &CompareReport) -> Option<String> {
    let f = r.fixed_duration.as_ref()?;
    let said = r
        .comparisons
        .iter()
        .map(|c| c.not_called.is_some())
        .chain(r.smt_yield.iter().map(|y| y.not_called.is_some()))
        .any(|x| x);
    (f.metric_chosen.is_some() || !said).then(|| format!("note: {}", super::duration::sentence(f)))
}

/// Placements but no comparison, and not for a reason the report states: a file written
/// before the comparisons were paired by round (they read as none), or no round that every
/// placement finished.
fn unpaired_line(r: &CompareReport) -> Option<String> {
    if r.placements.len() < 2 || !r.comparisons.is_empty() || r.no_comparison.is_some() {
        return None;
    }
    Some(
        if super::analysis::complete_rounds(&r.placements).is_empty() {
            "no comparison: no round ran every placement to the end".to_string()
        } else {
            "no comparison shown: this file was written by an older smtlab, whose comparisons \
         were not paired by round; the runs above are as measured"
                .to_string()
        },
    )
}

/// How the runs were compared, in one line: the value, rounds, warm-up, enforcement.
pub fn how(r: &CompareReport) -> String {
    describe_runs(r)
}

/// One placement and nothing to compare: each run is worth a row, so the counts can be
/// checked against `perf stat` on one run of the same command.
fn counters_per_run(r: &CompareReport) -> bool {
    r.placements.len() == 1
}

fn counters_heading(r: &CompareReport) -> &'static str {
    if counters_per_run(r) {
        "counters (each run and the median, the command's whole process tree)"
    } else {
        "counters (median per run, the command's whole process tree)"
    }
}

/// Each placement's event counters, medians over its runs of the whole process tree;
/// None when no run counted.
fn counters_table(r: &CompareReport) -> Option<Table> {
    use crate::counters::view as counters;
    let counts = || r.placements.iter().map(|p| p.counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return None;
    }
    let hw = counters::any_hardware(counts());
    let mut t = Table::with_header(
        std::iter::once("PLACEMENT".to_string())
            .chain(counters::header(hw))
            .collect::<Vec<_>>(),
    )
    .align(0, Align::Left);
    for i in 1..t.header.len() {
        t = t.align(i, Align::Right);
    }
    let per_run = counters_per_run(r);
    for p in &r.placements {
        if per_run {
            for run in &p.runs {
                t.push(
                    std::iter::once(format!("{} run {}", p.label, run.round))
                        .chain(counters::cells(run.counters.as_ref(), hw))
                        .collect(),
                );
            }
        }
        t.push(
            std::iter::once(if per_run {
                format!("{} median", p.label)
            } else {
                p.label.clone()
            })
            .chain(counters::cells(p.counters.as_ref(), hw))
            .collect(),
        );
    }
    Some(t)
}

/// The raw numbers, one row per placement, [`NONE`] for values not measured: the CSV
/// export.
pub fn data(r: &CompareReport) -> Table {
    let mut t = Table::new(&[
        "placement",
        "request",
        "cpus",
        "cores",
        "runs",
        "failed_runs",
        "wall_median_ns",
        "wall_mad_ns",
        "wall_min_ns",
        "wall_max_ns",
        "metric_unit",
        "metric_median",
        "metric_mad",
        "metric_min",
        "metric_max",
        "user_median_ns",
        "system_median_ns",
        "max_rss_bytes",
        "voluntary_switches",
        "involuntary_switches",
        "burner_ops_per_sec",
        "speedup",
        "speedup_low",
        "speedup_high",
        "call",
    ]);
    let unit = r
        .metric
        .as_ref()
        .map(|m| m.unit.clone())
        .unwrap_or_default();
    for (i, p) in r.placements.iter().enumerate() {
        let cmp = r.comparisons.iter().find(|c| c.placement == p.label);
        let (speedup, lo, hi, call) = match (i, cmp) {
            (0, _) => (
                "1".into(),
                NONE.to_string(),
                NONE.to_string(),
                "baseline".to_string(),
            ),
            (_, Some(c)) => (
                render::raw(Some(c.speedup.estimate)),
                render::raw(Some(c.speedup.low)),
                render::raw(Some(c.speedup.high)),
                c.call.to_string(),
            ),
            _ => (
                NONE.to_string(),
                NONE.to_string(),
                NONE.to_string(),
                NONE.to_string(),
            ),
        };
        let w = p.wall_time_ns;
        let m = p.metric;
        t.push(vec![
            p.label.clone(),
            p.request.clone(),
            p.cpus.to_string(),
            p.cores.to_string(),
            p.runs.len().to_string(),
            p.failed_runs.to_string(),
            render::raw(w.map(|s| s.median)),
            render::raw(w.map(|s| s.mad)),
            render::raw(w.map(|s| s.min)),
            render::raw(w.map(|s| s.max)),
            if m.is_some() {
                unit.clone()
            } else {
                NONE.to_string()
            },
            render::raw(m.map(|s| s.median)),
            render::raw(m.map(|s| s.mad)),
            render::raw(m.map(|s| s.min)),
            render::raw(m.map(|s| s.max)),
            render::raw(p.user_time_ns.map(|s| s.median)),
            render::raw(p.system_time_ns.map(|s| s.median)),
            p.max_rss_bytes
                .map_or_else(|| NONE.to_string(), |b| b.to_string()),
            render::raw(p.voluntary_switches),
            render::raw(p.involuntary_switches),
            render::raw(p.burner_ops_per_sec),
            speedup,
            lo,
            hi,
            call,
        ]);
    }
    t
}

/// CSV: one row per placement, empty cells for values not measured.
pub fn csv(r: &CompareReport) -> anyhow::Result<String> {
    render::export::csv(&data(r))
}

/// The table hyperfine's `--export-markdown` writes, with CPUs, the metric and each
/// placement's speed relative to the first; placement labels as code spans.
pub fn relative_table(r: &CompareReport) -> Table {
    let metric = r.metric.as_ref();
    let mut head = vec![
        "Placement".to_string(),
        "CPUs".into(),
        "Wall median ± MAD".into(),
    ];
    if let Some(m) = metric {
        head.push(format!("{} median ± MAD", m.unit));
    }
    head.extend(["Relative".into(), "Call".into()]);
    let mut t = Table::with_header(head);
    for (i, p) in r.placements.iter().enumerate() {
        let cmp = r.comparisons.iter().find(|c| c.placement == p.label);
        let (rel, call) = match (i, cmp) {
            (0, _) => (times(1.0), "baseline".to_string()),
            (_, Some(c)) => (
                format!(
                    "{} ({}–{})",
                    times(c.speedup.estimate),
                    crate::stats::ratio_text(c.speedup.low),
                    crate::stats::ratio_text(c.speedup.high)
                ),
                c.call.to_string(),
            ),
            _ => (NONE.into(), NONE.into()),
        };
        let mut cells = vec![
            code(&p.label),
            p.cpus.to_string(),
            p.wall_time_ns
                .map(|s| render::median_mad(&s, duration_ns))
                .unwrap_or_else(|| NONE.into()),
        ];
        if metric.is_some() {
            cells.push(
                p.metric
                    .map(|s| render::pm_sig(s.median, s.mad))
                    .unwrap_or_else(|| NONE.into()),
            );
        }
        cells.extend([rel, call]);
        t.push(cells);
    }
    t
}

/// The export: the title, the placements as hyperfine's Markdown table, the comparisons,
/// and the counters; the CSV is [`data`].
pub fn document(r: &CompareReport) -> Document {
    let mut comparisons: Vec<String> = r
        .comparisons
        .iter()
        .map(|c| comparison_line(c, r.noise_threshold))
        .collect();
    comparisons.extend(pair_lines(r));
    comparisons.extend(fixed_duration_line(r));
    comparisons.extend(unpaired_line(r));
    comparisons.extend(
        r.skipped
            .iter()
            .map(|s| format!("skipped {}: {}", s.label, s.reason)),
    );
    let mut sections = vec![Section {
        heading: "Placements".into(),
        text: vec![
            format!("Command: {}", code(&shell_words(&r.command))),
            format!(
                "Relative = speed against the first placement, the geometric mean of its per-round ratios (> 1 is faster), with its interval; {}.",
                describe_runs(r)
            ),
        ],
        table: Some(relative_table(r)),
    }];
    if !comparisons.is_empty() {
        sections.push(Section {
            heading: "Comparisons".into(),
            text: comparisons,
            table: None,
        });
    }
    if let Some(t) = counters_table(r) {
        sections.push(Section {
            heading: counters_heading(r).into(),
            text: Vec::new(),
            table: Some(t),
        });
    }
    Document {
        // The command is in the first section as a code span: a title is escaped text, in
        // which a backtick of the command's would open a span that shows HTML raw.
        title: "smtlab compare".into(),
        json: serde_json::to_value(r).unwrap_or_default(),
        data: data(r),
        sections,
    }
}

/// Markdown: [`document`] as `--export-markdown` writes it.
pub fn markdown(r: &CompareReport) -> String {
    render::export::markdown(&document(r))
}

// ---------------------------------------------------------------------------------------
// The study's section.

/// compare's settings in one paragraph: the command, how runs were compared, how the
/// rounds were sized.
pub fn settings(c: &CompareSection) -> String {
    let r = &c.result;
    let sized = match c.sized_to_ns {
        Some(ns) => format!(
            "the rounds were sized to fill {} of the study's budget",
            duration_ns(ns as f64)
        ),
        None => "`--runs` fixed the rounds".to_string(),
    };
    format!(
        "`{}`{}: {}; {sized}. Each placement's median has a {:.0} % percentile bootstrap interval (indicative with fewer than {} runs); each placement is compared with the first round by round (the geometric mean of the per-round speed ratios, with its interval), called faster or slower only when the whole interval lies beyond {}, no difference when it lies inside; the answer row for your command is the same computation.",
        shell_words(&r.command),
        r.scope
            .as_ref()
            .map(|u| format!(" (placements within {}, CPUs {})", u.label, u.cpus))
            .unwrap_or_default(),
        how(r),
        r.confidence * 100.0,
        crate::stats::BOOTSTRAP_MIN_RUNS,
        band(r.noise_threshold)
    )
}

/// The study's compare table: one row per placement.
pub fn table(c: &CompareSection) -> Table {
    let r = &c.result;
    let mut t = Table::new(&[
        "PLACEMENT",
        "CPUS",
        "CORES",
        "RUNS",
        "MEDIAN",
        "INTERVAL OF THE MEDIAN",
        "± MAD",
        "SPEED VS FIRST",
        "CALL",
    ]);
    for (i, p) in r.placements.iter().enumerate() {
        let m = c.medians.iter().find(|m| m.label == p.label);
        let unit = m.map_or("ns", |m| m.unit.as_str());
        let summary = if m.is_some_and(|m| m.basis == "metric") {
            p.metric
        } else {
            p.wall_time_ns
        };
        let (speed, call) = match (i, r.comparisons.iter().find(|x| x.placement == p.label)) {
            (0, _) => (times(1.0), "baseline".to_string()),
            (_, Some(x)) => (
                format!(
                    "{} ({})",
                    times(x.speedup.estimate),
                    x.speedup.interval_text(),
                ),
                x.call.to_string(),
            ),
            _ => (NONE.into(), NONE.into()),
        };
        t.rows.push(vec![
            p.label.clone(),
            p.cpus.to_string(),
            p.cores.to_string(),
            p.runs.len().to_string(),
            m.and_then(|m| m.median)
                .map_or(NONE.into(), |ci| render::in_unit(ci.estimate, unit, 3)),
            m.and_then(|m| m.median).map_or(NONE.into(), |ci| {
                format!(
                    "{} – {}",
                    render::in_unit(ci.low, unit, 3),
                    render::in_unit(ci.high, unit, 3)
                )
            }),
            summary.map_or(NONE.into(), |s| render::in_unit(s.mad, unit, 2)),
            speed,
            call,
        ]);
    }
    t
}

// ---------------------------------------------------------------------------------------
// The finding and the answer row.

/// The labels of the placements a comparison ran, as `` `one-per-core` (CPUs 0-3), … ``.
fn command_labels(c: &CompareSection) -> String {
    c.result
        .placements
        .iter()
        .map(|p| format!("`{}` (CPUs {})", p.label, p.cpus))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the command's runs were compared by: `tps`, `wall time`.
fn command_value(c: &CompareSection) -> String {
    c.result
        .metric
        .as_ref()
        .map_or_else(|| "wall time".to_string(), |m| m.unit.clone())
}

/// The user's command: SMT on vs off is every sibling of some cores against one thread
/// on each of the same cores (the pair `smtlab compare` reports as its SMT yield).
/// `missing` is the phase's own reason when `c` is None; `no_smt` why a machine without
/// siblings cannot answer.
pub fn command_answer(
    c: Option<&CompareSection>,
    smt: bool,
    missing: &str,
    no_smt: &str,
) -> Answer {
    let class = WorkloadClass::Command;
    let section = Some(PHASE);
    let Some(c) = c else {
        return not_answered(class, missing.to_string(), section);
    };
    if !smt {
        return not_answered(
            class,
            format!(
                "{no_smt}; the compare section shows what ran here: {}",
                command_labels(c)
            ),
            section,
        );
    }
    let Some(y) = &c.result.smt_yield else {
        return not_answered(
            class,
            format!(
                "the placements that ran ({}) hold no pair of one thread per core and every \
                 sibling of the same cores; `--placements one-per-core,all` asks for it",
                command_labels(c)
            ),
            section,
        );
    };
    // The comparison compare's own lines print for this pair, computed by compare.
    let fixed = c.result.fixed_duration.as_ref();
    if let Some(f) = fixed.filter(|f| f.found_by == FoundBy::Arguments && c.result.metric.is_none())
    {
        return not_answered(class, super::duration::sentence(f), section);
    }
    let Some(p) = super::analysis::paired_in(&c.result, &y.placement, &y.reference) else {
        return not_answered(
            class,
            format!(
                "no round ran both `{}` and `{}` to completion",
                y.placement, y.reference
            ),
            section,
        );
    };
    let cmp = p.comparison;
    let value = command_value(c);
    let chosen = fixed
        .and_then(|f| f.metric_chosen.as_ref().map(|m| (f, m)))
        .map(|(f, m)| format!(" ({}, so `--metric {m}` was read)", f.seen))
        .unwrap_or_default();
    let (answer, tail) = match &p.not_called {
        Some(why) => (HtAnswer::Inconclusive, format!("; not called: {why}")),
        None => (decide(&cmp, HtAnswer::from_yield), indicative_note(&cmp)),
    };
    Answer {
        class,
        answer,
        reason: format!(
            "SMT yield for `{}`: `{}` (every sibling of the cores) ÷ `{}` (one thread per \
             core), speed by {value}{chosen}, paired by round, against the section's {} noise band: \
             {}{tail}",
            shell_words(&c.result.command),
            y.placement,
            y.reference,
            band(cmp.thresholds.noise),
            cmp,
        ),
        evidence: Some(Evidence {
            what: format!(
                "speed of your command by {value}, `{}` ÷ `{}` on the same cores",
                y.placement, y.reference
            ),
            runs: format!("compare, {} paired rounds", cmp.n),
            comparison: cmp,
        }),
        section,
    }
}

/// The study's finding for the user's command: each placement's value, the SMT pair's
/// speed ratio where it ran, and what that means.
pub fn command_finding(c: &CompareSection, smt: bool) -> Finding {
    let value = command_value(c);
    let mut obs: Vec<String> = c
        .result
        .placements
        .iter()
        .map(|p| {
            let s = match &c.result.metric {
                Some(_) => p
                    .metric
                    .as_ref()
                    .map(|s| format!("{} {value}", crate::render::pm_n(s))),
                None => p.wall_time_ns.as_ref().map(|s| {
                    format!(
                        "{} ± {} wall time (n = {})",
                        duration_ns(s.median),
                        duration_ns(s.mad),
                        s.n
                    )
                }),
            };
            format!(
                "`{}` on CPUs {}: {}",
                p.label,
                p.cpus,
                s.unwrap_or_else(|| "no run".into())
            )
        })
        .collect();
    let mut evidence = Vec::new();
    let mut meaning = None;
    if let Some(f) = &c.result.fixed_duration
        && c.result.metric.is_none()
        && f.found_by == FoundBy::Arguments
    {
        meaning = Some(format!(
            "Wall time says nothing about SMT here: {}.",
            super::duration::sentence(f)
        ));
    } else if let Some(y) = &c.result.smt_yield
        && let Some(p) = super::analysis::paired_in(&c.result, &y.placement, &y.reference)
    {
        let cmp = p.comparison;
        obs.push(format!(
            "`{}` ran at {}",
            y.placement,
            cmp.ratio_of(&format!("the speed of `{}`", y.reference))
        ));
        meaning = Some(match (&p.not_called, cmp.effect) {
            (Some(why), _) => format!("Wall time cannot tell whether SMT helps your command: {why}"),
            (None, Effect::Gain) => format!(
                "The second sibling of each core made your command faster: with SMT on, it \
                 gets more done on the same cores ({}).",
                cmp.interval_text()
            ),
            (None, Effect::NoEffect) => format!("With the second sibling of each core your command ran within {} of its speed on one thread per core: any capacity SMT adds or costs it is smaller than that band.", band(cmp.thresholds.noise)),
            (None, Effect::Loss | Effect::SmallLoss) => "Your command was slower on every sibling than on one thread per core of the same cores: SMT costs it throughput; keep it to one thread per core, or turn HT off for it.".to_string(),
            (None, Effect::Inconclusive) => "The interval is too wide to say whether SMT helps your command: more rounds (`--runs`, or a longer `--budget`) or a quieter machine are needed.".to_string(),
        });
        evidence.push(Evidence {
            what: format!(
                "speed of your command by {value}, `{}` ÷ `{}` on the same cores",
                y.placement, y.reference
            ),
            runs: format!("compare, {} paired rounds", cmp.n),
            comparison: cmp,
        });
    }
    let meaning = meaning.unwrap_or_else(|| {
        if smt {
            "These placements do not differ by SMT alone (no pair of one thread per core and every sibling of the same cores), so they say nothing about HT; the compare section compares each with the first placement.".to_string()
        } else {
            "Without SMT siblings these placements differ in CPUs, not in SMT: they show how your command scales with CPUs here (the compare section compares each with the first placement), not what HT would do.".to_string()
        }
    });
    Finding {
        topic: "your command (compare)".into(),
        observed: obs.join("; ") + ".",
        meaning,
        evidence,
    }
}

/// The study's compare section: what was run, a bar per placement (its median and the
/// median's interval), the placement table and the comparisons.
impl StudySection for CompareSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        let mut b = vec![Block::Intro(settings(self))];
        b.extend(placements_chart(self).map(Block::Chart));
        b.push(Block::Table(table(self)));
        let lines = lines(&self.result);
        if !lines.is_empty() {
            b.push(Block::List(lines));
        }
        b
    }

    fn finding(&self, smt: bool) -> Option<Finding> {
        Some(command_finding(self, smt))
    }
}

/// One bar per placement: the median of its runs, whiskers the median's interval; wall
/// time in seconds, a metric in its own unit. None when no placement has a median.
fn placements_chart(c: &CompareSection) -> Option<String> {
    use render::si;
    use render::svg::{Bar, Group};
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
    if groups.is_empty() {
        return None;
    }
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
    Some(render::svg::bar_chart(
        "compare-placements",
        &title,
        &axis,
        &groups,
        &[],
        None,
        false,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::metric::MetricInfo;
    use super::super::model::{Run, Skipped};
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::render::markdown::cell;

    fn run(round: usize, wall_ms: f64, metric: f64) -> Run {
        Run {
            round,
            position: 0,
            wall_time_ns: (wall_ms * 1e6) as u64,
            user_time_ns: (wall_ms * 1.9e6) as u64,
            system_time_ns: 4_000_000,
            max_rss_bytes: 8 << 20,
            voluntary_switches: 12,
            involuntary_switches: 340,
            exit_code: Some(0),
            signal: None,
            metric: Some(metric),
            burner_ops_per_sec: None,
            counters: None,
            leftover_processes: 0,
        }
    }

    /// Seven runs around `base`, each placement's jitter `shift` rounds along, so that
    /// the per-round ratios spread.
    fn placement(
        label: &str,
        cpus: &[u32],
        cores: usize,
        base: f64,
        shift: usize,
    ) -> PlacementResult {
        let runs: Vec<Run> = (1..=7)
            .map(|i| {
                let jitter = [0.0, 0.01, -0.01, 0.02, -0.005, 0.004, -0.02][(i - 1 + shift) % 7];
                let metric = (base * (1.0 - jitter) * 100.0).round() / 100.0;
                run(i, 2000.0 * (1.0 + jitter), metric)
            })
            .collect();
        let mut p = PlacementResult::unsummarized(
            label.into(),
            label.into(),
            CpuSet::from_cpus(cpus.iter().copied()),
            cores,
            runs,
        );
        super::super::analysis::summarize(&mut p);
        p
    }

    /// A made-up comparison of one-per-core, pairs and all on two cores of two siblings.
    pub(crate) fn fixture() -> CompareReport {
        use super::super::analysis::{self, Basis};
        use crate::stats::Better;
        let placements = vec![
            placement("one-per-core", &[0, 1], 2, 1000.0, 0),
            placement("pairs", &[0, 2], 1, 610.0, 1),
            placement("all", &[0, 1, 2, 3], 2, 1240.0, 3),
        ];
        let basis = Basis::Metric(Better::Higher);
        let setting = analysis::Setting {
            placements: &placements,
            basis,
            noise: 0.02,
            fixed_by_arguments: None,
        };
        let comparisons = analysis::comparisons(&setting);
        let smt_yield = analysis::pair_speedup(&setting, (2, 0));
        let pairs_slowdown = analysis::pair_speedup(&setting, (1, 0));
        CompareReport {
            command: vec![
                "sysbench".into(),
                "cpu".into(),
                "--threads=2".into(),
                "run".into(),
            ],
            metric: Some(MetricInfo {
                source: "sysbench".into(),
                pattern: None,
                unit: "events/s".into(),
                higher_is_better: true,
            }),
            warmup_rounds: 1,
            rounds: 7,
            enforcement: "affinity".into(),
            scope: None,
            noise_threshold: 0.02,
            confidence: 0.95,
            server: None,
            burners: None,
            comparisons,
            no_comparison: None,
            smt_yield,
            pairs_slowdown,
            fixed_duration: None,
            placements,
            skipped: vec![Skipped {
                label: "all + 1 prime".into(),
                reason: "CPUs 0-3 already use every sibling of their cores".into(),
            }],
            interrupted: false,
            interrupted_by: None,
            notes: vec!["made up for the renderer tests".into()],
            counters: None,
        }
    }

    #[test]
    fn text_table() {
        insta::assert_snapshot!(text(&fixture()));
    }

    #[test]
    fn counters_table_and_what_was_not_counted() {
        use crate::counters::{Counts, Event, Mode, Scaled, Status, Unavailable};
        let mut r = fixture();
        // No run counted: no table.
        assert!(!text(&r).contains("counters ("));
        let c = |t| {
            Counts::from_scaled(&[
                (
                    Event::TaskClock,
                    Scaled {
                        value: t,
                        counted_share: 1.0,
                    },
                ),
                (
                    Event::ContextSwitches,
                    Scaled {
                        value: 300,
                        counted_share: 1.0,
                    },
                ),
            ])
        };
        for p in &mut r.placements {
            for run in &mut p.runs {
                run.counters = Some(c(2_000_000_000));
            }
            super::super::analysis::summarize(p);
        }
        r.counters = Some(Status {
            mode: Mode::All,
            unavailable: vec![Unavailable {
                event: Event::Cycles,
                reason: "no hardware PMU".into(),
            }],
        });
        let t = text(&r);
        assert!(
            t.contains("counters (median per run, the command's whole process tree):"),
            "{t}"
        );
        assert!(t.contains("TASK-CLOCK") && !t.contains("IPC"), "{t}");
        assert!(t.contains("2.00 s") && t.contains("300"), "{t}");
        assert!(
            t.contains("counters: cycles not measured: no hardware PMU"),
            "{t}"
        );
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(
            j["placements"][0]["counters"]["task_clock_ns"],
            2_000_000_000u64
        );
        assert!(j["placements"][0]["runs"][0]["counters"]["cycles"].is_null());
    }

    #[test]
    fn one_placement_without_smt_is_measured_each_run_shown_and_not_compared() {
        use crate::counters::{Counts, Event, Scaled};
        let mut r = fixture();
        r.placements.truncate(1);
        r.comparisons.clear();
        r.smt_yield = None;
        r.pairs_slowdown = None;
        r.no_comparison = Some("no SMT comparison was possible: no SMT siblings".into());
        for (i, run) in r.placements[0].runs.iter_mut().enumerate() {
            run.counters = Some(Counts::from_scaled(&[(
                Event::TaskClock,
                Scaled {
                    value: 1_000_000_000 + i as u64 * 10_000_000,
                    counted_share: 1.0,
                },
            )]));
        }
        super::super::analysis::summarize(&mut r.placements[0]);
        let t = text(&r);
        assert!(
            t.contains("measured by") && !t.contains("compared by"),
            "{t}"
        );
        assert!(t.contains("no SMT comparison was possible"), "{t}");
        assert!(!t.contains(" vs ") && !t.contains("SMT yield"), "{t}");
        assert!(t.contains("counters (each run and the median"), "{t}");
        assert!(
            t.contains("one-per-core run 1") && t.contains("one-per-core run 7"),
            "{t}"
        );
        assert!(t.contains("one-per-core median"), "{t}");
        let j = serde_json::to_value(&r).unwrap();
        assert!(j["no_comparison"].as_str().unwrap().contains("no SMT"));
        assert_eq!(j["comparisons"], serde_json::json!([]));
    }

    #[test]
    fn csv_export() {
        let c = csv(&fixture()).unwrap();
        // CPU lists with commas are quoted; every row has the header's column count.
        assert!(c.contains("\"0,2\""), "{c}");
        let mut back = ::csv::Reader::from_reader(c.as_bytes());
        let width = back.headers().unwrap().len();
        assert_eq!(width, 25);
        let rows: Vec<_> = back.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 3);
        assert!(rows.iter().all(|r| r.len() == width));
        assert!(rows.iter().any(|r| &r[2] == "0,2"), "{c}");
        insta::assert_snapshot!(c);
    }

    #[test]
    fn markdown_export() {
        insta::assert_snapshot!(markdown(&fixture()));
    }

    #[test]
    fn markdown_export_shows_html_and_pipes_as_text() {
        let mut r = fixture();
        r.command = vec![
            "sh".into(),
            "-c".into(),
            "echo '<img src=x onerror=alert(1)>' | cat".into(),
        ];
        r.placements[0].label = "<b>one</b>|x".into();
        let m = markdown(&r);
        // The command is one code span (literal in Markdown), its pipe not backslashed: the
        // line is not a table row.
        let cmd = code(&shell_words(&r.command));
        assert!(m.contains(&format!("\nCommand: {cmd}\n")), "{m}");
        assert!(cmd.contains("<img src=x onerror=alert(1)>") && cmd.contains("' | cat"));
        // The label is a code span in its cell, the pipe escaped so the row keeps its
        // columns.
        let label = cell(&code("<b>one</b>|x"));
        assert_eq!(label, "`<b>one</b>\\|x`");
        assert!(m.contains(&format!("| {label} | 0-1 |")), "{m}");
        // Outside those code spans no '<' is left raw.
        let rest = m.replace(&cmd, "").replace(&label, "");
        assert!(!rest.contains('<'), "{rest}");
    }

    #[test]
    fn json_export() {
        let j = serde_json::to_string_pretty(&fixture()).unwrap();
        // It reads back (floats to within parsing precision).
        let back: CompareReport = serde_json::from_str(&j).unwrap();
        assert_eq!(back.placements.len(), 3);
        assert_eq!(back.comparisons[1].call, Call::Faster);
        insta::assert_snapshot!(j);
    }

    #[test]
    fn comparisons_written_before_pairing_read_as_none_and_say_so() {
        let mut j = serde_json::to_value(fixture()).unwrap();
        let ci = serde_json::json!({"estimate": 1.24, "low": 1.2, "high": 1.3, "confidence": 0.95});
        j["comparisons"] = serde_json::json!([{
            "placement": "all", "baseline": "one-per-core", "basis": "metric",
            "ratio_of_medians": ci, "speedup": ci, "call": "faster", "indicative": false
        }]);
        j["smt_yield"] = serde_json::json!({
            "placement": "all", "reference": "one-per-core", "basis": "metric", "ratio": ci
        });
        j.as_object_mut().unwrap().remove("pairs_slowdown");
        let r: CompareReport = crate::report::lenient::from_value(j).unwrap();
        assert!(r.comparisons.is_empty() && r.smt_yield.is_none() && r.pairs_slowdown.is_none());
        assert_eq!(r.placements[0].runs[0].position, 0);
        let t = text(&r);
        assert!(t.contains("written by an older smtlab"), "{t}");
        assert!(!t.contains(" vs ") && !t.contains("SMT yield"), "{t}");
        // A current file reads back whole; a malformed comparison is still an error.
        let back: CompareReport =
            crate::report::lenient::from_value(serde_json::to_value(fixture()).unwrap()).unwrap();
        assert_eq!(back.comparisons.len(), 2);
        let mut bad = serde_json::to_value(fixture()).unwrap();
        bad["comparisons"][0]["call"] = "sideways".into();
        assert!(crate::report::lenient::from_value::<CompareReport>(bad).is_err());
    }

    #[test]
    fn calls_read_naturally() {
        let r = fixture();
        let l = lines(&r);
        // pairs: about 0.61× the speed; all: 1.24× faster; each with its interval and n.
        assert!(
            l[0].starts_with("pairs vs one-per-core: 1.64× slower: 0.61× the speed (95 % CI"),
            "{l:?}"
        );
        assert!(l[0].ends_with("n = 7)"), "{l:?}");
        assert!(
            l[1].starts_with("all vs one-per-core: 1.24× faster (95 % CI"),
            "{l:?}"
        );
        assert_eq!(band(0.02), "±2 %");
        assert_eq!(render::si_sig(1236.73, 3), "1237");
        assert_eq!(render::si_sig(14.826, 3), "14.8");
        assert_eq!(render::si_sig(0.012345, 3), "0.0123");
        assert_eq!(render::si_sig(36_448.0, 3), "36.4 k");
        assert_eq!(band(0.025), "±2.5 %");
        let argv: Vec<String> = ["sh", "-c", "echo it's | wc", "--x=1,2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_words(&argv), r"sh -c 'echo it'\''s | wc' --x=1,2");
    }

    #[test]
    fn exports_parse_back() {
        let r = fixture();
        let dir = tempfile::tempdir().unwrap();
        let e = crate::render::export::Exports {
            json: None,
            csv: Some(dir.path().join("c.csv")),
            markdown: Some(dir.path().join("c.md")),
        };
        e.check().unwrap();
        e.write(|| document(&r)).unwrap();
        let mut rd = ::csv::Reader::from_path(dir.path().join("c.csv")).unwrap();
        let head = rd.headers().unwrap().clone();
        let rows: Vec<::csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), r.placements.len());
        let col = |n: &str| head.iter().position(|h| h == n).unwrap();
        let wall: f64 = rows[0][col("wall_median_ns")].parse().unwrap();
        assert_eq!(Some(wall), r.placements[0].wall_time_ns.map(|s| s.median));
        assert_eq!(&rows[0][col("call")], "baseline");
        let md = std::fs::read_to_string(dir.path().join("c.md")).unwrap();
        assert!(md.starts_with("# smtlab compare\n"), "{md}");
        assert!(md.contains("| Placement | CPUs |"), "{md}");
    }
}

/// The command row and the compare finding, from compare sections of the fake executor
/// or assembled by compare itself, on the fake study's machines.
#[cfg(test)]
mod answer_tests {
    use super::*;
    use crate::conclusion::Answer;
    use crate::experiments::compare::{self as cmp, Context, Measured, PlacementChoice};
    use crate::report::Report;
    use crate::report::verdict::{self, build};
    use crate::stats::Thresholds;
    use crate::study::fixture::{assert_cites_only_what_was_measured, no_smt, smt};

    /// A compare section from the fake executor on `r`'s machine: `placements` by name,
    /// then `cpus` lists, `runs` rounds each.
    fn with_command(
        r: &Report,
        placements: &[&str],
        cpus: &[&[u32]],
        runs: usize,
    ) -> CompareSection {
        with_command_as(r, placements, cpus, runs, |_| {})
    }

    /// As [`with_command`], `edit` changing the comparison's settings last.
    fn with_command_as(
        r: &Report,
        placements: &[&str],
        cpus: &[&[u32]],
        runs: usize,
        edit: impl FnOnce(&mut cmp::Config),
    ) -> CompareSection {
        let mut c = cmp::Config::new(vec!["my-app".into(), "--bench".into()]);
        for p in placements {
            c.placements.push(PlacementChoice::parse_named(p).unwrap());
        }
        for l in cpus {
            c.placements
                .push(PlacementChoice::Cpus(crate::cpuset::CpuSet::from_cpus(
                    l.iter().copied(),
                )));
        }
        c.runs = Some(runs);
        c.metric = Some(cmp::metric::MetricSpec::Pgbench);
        // A study's band (`smtlab study` without `--noise`).
        c.noise = Thresholds::YIELD.noise;
        edit(&mut c);
        let result = cmp::fake::run(&r.topology, &c, &crate::progress::Quiet).unwrap();
        CompareSection {
            sized_to_ns: None,
            medians: crate::study::phases::compare::medians(&result),
            result,
        }
    }

    /// A compare section of `one-per-core` and `all` on `r`'s machine, assembled by
    /// compare itself from hand-made runs: per round, each placement's wall time and CPU
    /// time (user), ms.
    fn with_command_runs(r: &Report, runs: [&[(f64, f64)]; 2]) -> CompareSection {
        let mut c = cmp::Config::new(vec!["my-app".into(), "--bench".into()]);
        c.placements = vec![
            PlacementChoice::parse_named("one-per-core").unwrap(),
            PlacementChoice::parse_named("all").unwrap(),
        ];
        c.runs = Some(runs[0].len());
        c.noise = Thresholds::YIELD.noise;
        let resolved = cmp::config::resolve(&r.topology, &c).unwrap();
        let pairs = cmp::smt_pairs(&r.topology, &resolved.variants);
        let ms = |x: f64| (x * 1e6).round() as u64;
        let measured = Measured {
            runs: runs
                .iter()
                .map(|p| {
                    p.iter()
                        .enumerate()
                        .map(|(i, &(wall, cpu))| super::super::model::Run {
                            round: i + 1,
                            position: 0,
                            wall_time_ns: ms(wall),
                            user_time_ns: ms(cpu),
                            system_time_ns: 0,
                            max_rss_bytes: 8 << 20,
                            voluntary_switches: 1,
                            involuntary_switches: 1,
                            exit_code: Some(0),
                            signal: None,
                            metric: None,
                            burner_ops_per_sec: None,
                            leftover_processes: 0,
                            counters: None,
                        })
                        .collect()
                })
                .collect(),
            rounds: runs[0].len(),
            warmup_rounds: 1,
            interrupted: false,
        };
        let result = cmp::assemble(&c, &resolved, measured, pairs, Context::default());
        CompareSection {
            sized_to_ns: None,
            medians: crate::study::phases::compare::medians(&result),
            result,
        }
    }

    /// The command row on the fake SMT machine.
    fn answer_of(c: &CompareSection) -> Answer {
        command_answer(Some(c), true, "", "")
    }

    /// `r` with its compare section replaced by `c`.
    fn report_with(r: &Report, c: CompareSection) -> Report {
        let mut r = r.clone();
        r.compare = Some(c);
        r
    }

    #[test]
    fn compare_section_and_study_row_use_the_same_paired_ratio() {
        // One-per-core takes 100, 110, 120, 130, 140 ms (drift between rounds), `all` is
        // 1.25× faster in every round. Paired by round that is 1.25× with no spread; the
        // section's unpaired ratio of medians once made the drift its interval (about
        // 0.98–1.59, inconclusive) beside a row saying keep HT on, 1.25× (1.25–1.25).
        let one = [100.0, 110.0, 120.0, 130.0, 140.0].map(|w| (w, w * 2.0));
        let all = one.map(|(w, c)| (w / 1.25, c * 1.6));
        let c = with_command_runs(smt(), [&one, &all]);
        let section = &c.result.comparisons[0];
        assert_eq!(section.placement, "all");
        assert!(
            (section.speedup.estimate - 1.25).abs() < 1e-9
                && section.speedup.low > 1.2
                && section.speedup.high < 1.3,
            "{section:?}"
        );
        assert_eq!(section.call, Call::Faster);
        let y = c.result.smt_yield.as_ref().unwrap();
        let a = answer_of(&c);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let e = a.evidence.as_ref().unwrap().comparison;
        // The section's comparison, its yield line and the row: one number, one interval.
        for (what, est, low, high) in [
            (
                "section",
                section.speedup.estimate,
                section.speedup.low,
                section.speedup.high,
            ),
            ("yield", y.ratio.estimate, y.ratio.low, y.ratio.high),
        ] {
            assert!(
                (est - e.estimate).abs() < 1e-9
                    && (low - e.low).abs() < 1e-9
                    && (high - e.high).abs() < 1e-9,
                "{what} {est} ({low}–{high}) vs row {e:?}"
            );
        }
    }

    #[test]
    fn a_fixed_duration_command_by_wall_time_is_not_called_no_difference() {
        // A command that runs for 2 s whatever it gets done: wall time the same on both
        // placements while `all` used twice the CPU time. Wall time measures nothing here;
        // once the row said "no difference … SMT adds no capacity".
        let one = [2001.0, 2002.0, 2000.0, 2001.0, 2003.0].map(|w| (w, 3900.0 + w / 100.0));
        let all = one.map(|(w, c)| (w + 0.5, c * 2.0));
        let c = with_command_runs(smt(), [&one, &all]);
        let section = &c.result.comparisons[0];
        assert_ne!(section.call, Call::NoDifference, "{section:?}");
        let text = lines(&c.result).join("\n");
        assert!(text.contains("--metric"), "{text}");
        let a = answer_of(&c);
        assert!(
            matches!(a.answer, HtAnswer::Inconclusive | HtAnswer::NotMeasured),
            "{a:?}"
        );
        assert!(
            a.reason.contains("fixed time") && a.reason.contains("--metric"),
            "{}",
            a.reason
        );
        let f = command_finding(&c, true);
        assert!(f.topic.starts_with("your command"), "{}", f.topic);
        assert!(!f.meaning.contains("adds no capacity"), "{}", f.meaning);
        assert!(f.meaning.contains("--metric"), "{}", f.meaning);

        // Known tools' time limits in the arguments: sysbench and pgbench get their own
        // metric, with a note saying why; another tool gets no wall-time answer.
        for (words, metric) in [
            (
                &["sysbench", "cpu", "--time=2", "run"][..],
                Some("sysbench"),
            ),
            (&["pgbench", "-n", "-T", "5"][..], Some("pgbench")),
            (&["stress-ng", "--cpu", "4", "--timeout", "5"][..], None),
        ] {
            let c = with_command_as(smt(), &["one-per-core", "all"], &[], 5, |c| {
                c.command.words = words.iter().map(|w| w.to_string()).collect();
                c.metric = None;
            });
            let res = &c.result;
            assert_eq!(
                res.metric.as_ref().map(|m| m.source.as_str()),
                metric,
                "{words:?}"
            );
            let text = lines(res).join("\n");
            assert!(text.contains("fixed time"), "{words:?}: {text}");
            let a = answer_of(&c);
            if metric.is_some() {
                assert_eq!(a.answer, HtAnswer::KeepHtOn, "{words:?}: {a:?}");
            } else {
                assert_eq!(a.answer, HtAnswer::NotMeasured, "{words:?}: {a:?}");
                assert!(a.reason.contains("--metric"), "{}", a.reason);
            }
        }
    }

    #[test]
    fn the_command_row_and_the_section_judge_against_one_band() {
        // Every sibling adds 3 %, each run within ±0.1 %: an interval near 1.03, outside
        // ±2 % and inside ±5 %. Once the section said "faster" (its ±2 %) while the row
        // said "no difference" (±5 %).
        for (noise, call, answer, band) in [
            (0.05, Call::NoDifference, HtAnswer::NoDifference, "±5 %"),
            (0.02, Call::Faster, HtAnswer::KeepHtOn, "±2 %"),
        ] {
            let c = with_command_as(smt(), &["one-per-core", "all"], &[], 8, |c| {
                c.noise = noise;
                c.fake.sibling_gain = 0.03;
                c.fake.jitter = 0.002;
            });
            let section = &c.result.comparisons[0];
            assert!(
                (section.speedup.estimate - 1.03).abs() < 0.005,
                "{section:?}"
            );
            assert_eq!(section.call, call, "band {band}: {section:?}");
            let a = answer_of(&c);
            assert_eq!(a.answer, answer, "band {band}: {a:?}");
            let e = a.evidence.as_ref().unwrap();
            assert_eq!(e.comparison.thresholds.noise, noise);
            assert!(a.reason.contains(band), "{}", a.reason);
            assert!(
                settings(&c).contains(&format!("beyond {band}")),
                "{}",
                settings(&c)
            );
        }
    }

    #[test]
    fn the_command_row_pairs_only_rounds_every_placement_finished() {
        let mut c = with_command(smt(), &["one-per-core", "all"], &[], 7);
        // A failure in round 7 after `one-per-core` ran: `all` has 6 runs.
        c.result.placements[1].runs.pop();
        let e = answer_of(&c).evidence.unwrap();
        assert_eq!(
            (e.comparison.n, e.runs.as_str()),
            (6, "compare, 6 paired rounds")
        );
        // Round 3 of `one-per-core` lost as well: 5 rounds have both.
        c.result.placements[0].runs.remove(2);
        let e = answer_of(&c).evidence.unwrap();
        assert_eq!(e.comparison.n, 5);
    }

    #[test]
    fn the_command_row_answers_from_all_vs_one_per_core_paired_by_round() {
        let c = with_command(smt(), &["one-per-core", "all"], &[], 7);
        let a = answer_of(&c);
        let f = command_finding(&c, true);
        assert_cites_only_what_was_measured(&build(&report_with(smt(), c)));
        // Every sibling adds a quarter per core on the fake executor: a gain.
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let e = a.evidence.as_ref().unwrap();
        assert_eq!(e.comparison.n, 7);
        assert_eq!(e.runs, "compare, 7 paired rounds");
        assert!((e.comparison.estimate - 1.25).abs() < 0.05, "{e:?}");
        assert_eq!(e.comparison.thresholds, Thresholds::YIELD);
        assert!(a.reason.contains("`all`") && a.reason.contains("`one-per-core`"));
        assert!(a.reason.contains("my-app --bench"), "{}", a.reason);
        assert_eq!(a.section, Some(PHASE));
        assert!(f.topic.starts_with("your command"), "{}", f.topic);
        assert!(f.meaning.contains("faster"), "{}", f.meaning);
        assert_eq!(f.evidence.len(), 1);
        // 3 rounds of a 1.25× gain are enough for an interval that calls it; 2 are not,
        // and the reason says why.
        let a = answer_of(&with_command(smt(), &["one-per-core", "all"], &[], 3));
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let a = answer_of(&with_command(smt(), &["one-per-core", "all"], &[], 2));
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(a.reason.contains("only 2 runs"), "{}", a.reason);
    }

    #[test]
    fn a_slower_command_on_every_sibling_turns_ht_off() {
        let mut c = with_command(smt(), &["one-per-core", "all"], &[], 6);
        // `all` gets 0.7× the tps of `one-per-core` in every round.
        let one: Vec<f64> = c.result.placements[0]
            .runs
            .iter()
            .map(|x| x.metric.unwrap())
            .collect();
        for (run, base) in c.result.placements[1].runs.iter_mut().zip(one) {
            run.metric = Some(base * (0.7 + 0.01 * run.round as f64));
        }
        let a = answer_of(&c);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{a:?}");
        assert_eq!(a.evidence.as_ref().unwrap().comparison.effect, Effect::Loss);
    }

    #[test]
    fn without_siblings_or_without_the_pair_the_command_row_says_why() {
        // No siblings: not measured, naming what ran instead.
        let c = with_command(no_smt(), &[], &[&[0], &[0, 1]], 5);
        let a = command_answer(Some(&c), false, "", &verdict::no_smt_reason(no_smt()));
        let f = command_finding(&c, false);
        assert_cites_only_what_was_measured(&build(&report_with(no_smt(), c)));
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("no SMT siblings"), "{}", a.reason);
        assert!(a.reason.contains("`cpus:0-1`"), "{}", a.reason);
        assert!(f.topic.starts_with("your command"), "{}", f.topic);
        assert!(f.meaning.contains("not in SMT"), "{}", f.meaning);
        // Siblings, but two CPU lists that differ by cores, not by SMT.
        let a = answer_of(&with_command(smt(), &[], &[&[0], &[0, 1]], 5));
        assert_eq!(a.answer, HtAnswer::NotMeasured, "{a:?}");
        assert!(a.reason.contains("hold no pair"), "{}", a.reason);
        // No command: the phase's reason.
        let missing = verdict::phase_reason(smt(), PHASE);
        let a = command_answer(smt().compare.as_ref(), true, &missing, "");
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("no command was given"), "{}", a.reason);
    }
}
