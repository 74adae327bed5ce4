//! A [`CompareReport`] as one document ([`blocks`]): what ran and how it was compared,
//! one table of the placements (hyperfine-like: median ± MAD, range, CPU times, context
//! switches, the speed against the first placement and its call), the counters, and the
//! conclusions [`super::verdict`] words. `smtlab compare` draws it on the terminal,
//! `--export-markdown` writes it, and the study's section is the same document with the
//! study's settings, a chart and the median's interval. The CSV is [`data`]; JSON is the
//! model itself. Pure: report in, blocks out.

use super::model::{CompareReport, CompareSection, PlacementMedian, PlacementResult};
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::render::blocks::Block;

pub use super::verdict::{PHASE, shell_words};
use crate::render::{self, Align, NONE, Table, band, duration_ns, times};

/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Your command (compare)";

/// The metric's column name: `EVENTS/S`, `TPS`, `VALUE`.
fn metric_head(r: &CompareReport) -> Option<String> {
    r.metric.as_ref().map(|m| m.unit.to_uppercase())
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

/// The one table of the placements: per placement its CPUs, runs, value (median ± MAD
/// and range; with a metric, the wall time beside it), with `medians` the interval of the
/// median, the speed against the first placement with its interval and call, CPU times
/// and context switches. Every column after the CPUs is right-aligned: a CPU list such as
/// `0,2` is not a number, and the table is told so rather than left to guess.
pub fn table(r: &CompareReport, medians: Option<&[PlacementMedian]>) -> Table {
    let metric = metric_head(r);
    let mut head: Vec<String> = ["PLACEMENT", "CPUS", "CORES", "RUNS"]
        .map(String::from)
        .into();
    match &metric {
        Some(m) => head.extend([
            format!("{m} median ± MAD"),
            "MIN … MAX".into(),
            "WALL".into(),
        ]),
        None => head.extend(["WALL median ± MAD".into(), "MIN … MAX".into()]),
    }
    if medians.is_some() {
        head.push("INTERVAL OF THE MEDIAN".into());
    }
    head.extend(["SPEED VS FIRST", "CALL", "USER", "SYS", "CTX vol/invol"].map(String::from));
    let burners = r.placements.iter().any(|p| p.burner_ops_per_sec.is_some());
    if burners {
        head.push("BURNER ops/s".into());
    }
    let mut t = Table::with_header(head)
        .align(0, Align::Left)
        .align(1, Align::Left);
    for i in 2..t.header.len() {
        t = t.align(i, Align::Right);
    }
    let dash = || NONE.to_string();
    let secs = duration_ns;
    for (i, p) in r.placements.iter().enumerate() {
        let mut row = vec![
            p.label.clone(),
            p.cpus.to_string(),
            p.cores.to_string(),
            p.runs.len().to_string(),
        ];
        let value = if metric.is_some() {
            p.metric
        } else {
            p.wall_time_ns
        };
        let f = |x: f64| {
            if metric.is_some() {
                render::si_sig(x, 3)
            } else {
                secs(x)
            }
        };
        row.push(value.map_or_else(dash, |s| {
            if metric.is_some() {
                render::pm_sig(s.median, s.mad)
            } else {
                render::median_mad(&s, secs)
            }
        }));
        row.push(value.map_or_else(dash, |s| render::min_max(&s, f)));
        if metric.is_some() {
            row.push(p.wall_time_ns.map_or_else(dash, |s| secs(s.median)));
        }
        if let Some(ms) = medians {
            let m = ms.iter().find(|m| m.label == p.label);
            let unit = m.map_or("ns", |m| m.unit.as_str());
            row.push(m.and_then(|m| m.median).map_or_else(dash, |ci| {
                format!(
                    "{} – {}",
                    render::in_unit(ci.low, unit, 3),
                    render::in_unit(ci.high, unit, 3)
                )
            }));
        }
        let (speed, call) = match (i, r.comparisons.iter().find(|x| x.placement == p.label)) {
            (0, _) => (times(1.0), "baseline".to_string()),
            (_, Some(x)) => (
                format!(
                    "{} ({})",
                    times(x.speedup.estimate),
                    x.speedup.interval_text()
                ),
                x.call.to_string(),
            ),
            _ => (dash(), dash()),
        };
        row.extend([speed, call]);
        row.push(p.user_time_ns.map_or_else(dash, |s| secs(s.median)));
        row.push(p.system_time_ns.map_or_else(dash, |s| secs(s.median)));
        row.push(switches(p));
        if burners {
            row.push(render::or_dash(p.burner_ops_per_sec, render::si));
        }
        t.push(row);
    }
    t
}

/// The placements with failed runs kept, when `--ignore-failure` kept any.
fn failed_line(r: &CompareReport) -> Option<String> {
    let failed: Vec<String> = r
        .placements
        .iter()
        .filter(|p| p.failed_runs > 0)
        .map(|p| format!("{} ({} of {})", p.label, p.failed_runs, p.runs.len()))
        .collect();
    (!failed.is_empty())
        .then(|| format!("failed runs kept (--ignore-failure): {}", failed.join(", ")))
}

/// The document: the command's output with `section` None, the study's section with it
/// (the study's settings instead of the command's header lines, a chart, the median's
/// interval in the table). Detail past the table sits under its own heading.
pub fn blocks(r: &CompareReport, section: Option<&CompareSection>) -> Vec<Block> {
    let mut b = Vec::new();
    match section {
        Some(c) => {
            b.push(Block::Intro(settings(c)));
            b.extend(placements_chart(c).map(Block::Chart));
        }
        None => {
            b.extend(header(r).into_iter().map(Block::Intro));
            b.push(Block::Heading("Placements".into()));
        }
    }
    b.push(Block::Table(table(
        r,
        section.map(|c| c.medians.as_slice()),
    )));
    if section.is_none() && r.placements.len() > 1 {
        b.push(Block::Note(
            "SPEED VS FIRST: the geometric mean of the per-round speed ratios against the \
             first placement (> 1 is faster), with its interval"
                .into(),
        ));
    }
    b.extend(failed_line(r).map(Block::Note));
    if section.is_none()
        && let Some(t) = counters_table(r)
    {
        b.push(Block::Heading(counters_heading(r).into()));
        b.push(Block::Table(t));
        b.extend(
            crate::counters::view::multiplexing_note(
                r.placements.iter().map(|p| p.counters.as_ref()),
            )
            .map(|n| Block::Note(format!("note: {n}"))),
        );
    }
    let lines = super::verdict::lines(r);
    if !lines.is_empty() {
        if section.is_none() {
            b.push(Block::Heading("Comparisons".into()));
        }
        b.push(Block::List(lines));
    }
    b
}

/// What `--export-*` writes: the document's blocks as Markdown, [`data`] as CSV, the model
/// as JSON.
pub fn export(r: &CompareReport) -> render::export::Document {
    // The command stays out of the title: a title is escaped text, in which a backtick of
    // the command's would open a span that shows HTML raw.
    render::export::Document::of("smtlab compare", r, data(r), &blocks(r, None))
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
        describe_runs(r),
        r.confidence * 100.0,
        crate::stats::BOOTSTRAP_MIN_RUNS,
        band(r.noise_threshold)
    )
}

/// The study's compare section: [`blocks`] with the section's settings, chart and medians.
impl StudySection for CompareSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        blocks(&self.result, Some(self))
    }

    fn finding(&self, smt: bool) -> Option<Finding> {
        Some(super::verdict::command_finding(self, smt))
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
mod tests {
    use super::super::fixture::fixture;
    use super::super::model::Call;
    use super::*;

    /// What `smtlab compare` prints.
    fn text(r: &CompareReport) -> String {
        crate::render::terminal::draw(&blocks(r, None))
    }

    fn markdown(r: &CompareReport) -> String {
        crate::render::export::markdown(&export(r))
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
            t.contains("\ncounters (median per run, the command's whole process tree)\n"),
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
        let c = crate::render::export::csv(&data(&fixture())).unwrap();
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
        // The command and the label are text: every '<' escaped, the label's pipe
        // backslashed so that the row keeps its columns.
        assert!(m.contains("&lt;img src=x onerror=alert(1)&gt;"), "{m}");
        assert!(m.contains("| &lt;b&gt;one&lt;/b&gt;\\|x | 0-1 |"), "{m}");
        assert!(!m.contains('<'), "{m}");
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
    fn exports_parse_back() {
        let r = fixture();
        let dir = tempfile::tempdir().unwrap();
        let e = crate::render::export::Exports {
            json: None,
            csv: Some(dir.path().join("c.csv")),
            markdown: Some(dir.path().join("c.md")),
        };
        e.check().unwrap();
        e.write(|| export(&r)).unwrap();
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
        assert!(md.contains("| PLACEMENT | CPUS |"), "{md}");
    }
}
