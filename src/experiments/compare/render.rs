//! Renderers over [`CompareReport`]: the terminal table (hyperfine-like), CSV (one row per
//! placement) and Markdown. JSON is the model itself, serialised by the command layer.
//! Pure: report in, text out.

use super::model::{Call, CompareReport, Comparison, PairRatio, PlacementResult};
use crate::render;
use crate::render::markdown::{cell, code, md};
use crate::stats::Summary;

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

fn with_mad(s: &Summary, f: impl Fn(f64) -> String) -> String {
    format!("{} ± {}", f(s.median), f(s.mad))
}

fn range(s: &Summary, f: impl Fn(f64) -> String) -> String {
    format!("{} … {}", f(s.min), f(s.max))
}

/// A value with three significant digits (`1237`, `14.8`, `0.0123`), or SI-suffixed from
/// 10,000 (`36.4 k`): enough for a median beside its spread.
fn short(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        return "-".into();
    }
    if a >= 1e4 {
        return render::si(x);
    }
    if a == 0.0 {
        return "0".into();
    }
    let digits = (2 - a.log10().floor() as i32).max(0) as usize;
    format!("{x:.digits$}")
}

fn secs(ns: f64) -> String {
    render::duration_ns(ns)
}

/// A speed's interval with its label and run count: `95 % CI 1.95–2.03, n = 7`;
/// the label and any small-sample wording are the comparison's own.
fn interval(c: &crate::stats::Comparison) -> String {
    let text = c.interval_text();
    if text.contains("n = ") {
        text
    } else {
        format!("{text}, n = {}", c.n)
    }
}

/// One comparison line: the call, the speed (> 1 = faster) and its interval.
fn comparison_line(c: &Comparison, noise: f64) -> String {
    let band = format!("±{}%", fmt_pct(noise));
    let s = &c.speedup;
    let x = |v: f64| crate::stats::ratio_text(v);
    let what = match (&c.not_called, c.call) {
        (Some(why), _) => format!("not called by wall time: {why}"),
        (None, Call::Faster) => format!("{}× faster ({})", x(s.estimate), interval(s)),
        (None, Call::Slower) => format!(
            "{}× slower: {}× the speed ({})",
            x(1.0 / s.estimate),
            x(s.estimate),
            interval(s)
        ),
        (None, Call::NoDifference) => format!(
            "no difference: {}× ({}, inside the {band} noise band)",
            x(s.estimate),
            interval(s)
        ),
        (None, Call::Inconclusive) => format!(
            "inconclusive: {}× ({}, straddles the {band} noise band; more runs would tell)",
            x(s.estimate),
            interval(s)
        ),
    };
    format!("{} vs {}: {what}", c.placement, c.baseline)
}

fn fmt_pct(x: f64) -> String {
    let p = x * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    }
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
        interval(&y.ratio),
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

/// Rows in columns, two spaces apart; `right[i]` right-aligns column `i` (after the
/// header). The shared table guesses alignment from the text, which takes `0,2` for a
/// number; here each column is known.
fn aligned(rows: &[Vec<String>], right: &[bool]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0; n];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (ri, r) in rows.iter().enumerate() {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(w[i] - c.chars().count());
            if ri > 0 && right.get(i).copied().unwrap_or(false) {
                line.push_str(&pad);
                line.push_str(c);
            } else {
                line.push_str(c);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn switches(p: &PlacementResult) -> String {
    match (p.voluntary_switches, p.involuntary_switches) {
        (Some(v), Some(i)) => format!("{}/{}", render::si(v), render::si(i)),
        _ => "-".into(),
    }
}

/// The terminal view.
pub fn text(r: &CompareReport) -> String {
    let mut out = String::new();
    out.push_str(&format!("Command: {}\n", shell_words(&r.command)));
    if let Some(s) = &r.scope {
        out.push_str(&format!("Placements {s}\n"));
    }
    if let Some(s) = &r.server {
        out.push_str(&format!(
            "Server: {}{} (pids {}) placed {} during each run\n",
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
    out.push_str(&describe_runs(r));
    out.push_str("\n\n");
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
    let mut rows = vec![head];
    for p in &r.placements {
        let mut row = vec![p.label.clone(), p.cpus.to_string(), p.cores.to_string()];
        let dash = || "-".to_string();
        if metric.is_some() {
            row.push(p.metric.map(|s| with_mad(&s, short)).unwrap_or_else(dash));
            row.push(p.metric.map(|s| range(&s, short)).unwrap_or_else(dash));
            row.push(p.wall_time_ns.map(|s| secs(s.median)).unwrap_or_else(dash));
        } else {
            row.push(
                p.wall_time_ns
                    .map(|s| with_mad(&s, secs))
                    .unwrap_or_else(dash),
            );
            row.push(p.wall_time_ns.map(|s| range(&s, secs)).unwrap_or_else(dash));
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
        rows.push(row);
    }
    let right: Vec<bool> = (0..rows[0].len()).map(|i| i >= 2).collect();
    out.push_str(&aligned(&rows, &right));
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
    out.push_str(&counters_table(r));
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
        out.extend(crate::counters::text::status_lines(st));
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

/// Each placement's event counters, medians over its runs of the whole process tree;
/// empty when no run counted.
fn counters_table(r: &CompareReport) -> String {
    use crate::counters::text;
    let counts = || r.placements.iter().map(|p| p.counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = text::any_hardware(counts());
    let mut rows = vec![
        std::iter::once("PLACEMENT".to_string())
            .chain(text::header(hw))
            .collect::<Vec<_>>(),
    ];
    // One placement and nothing to compare: each run is worth a row, so the counts can
    // be checked against `perf stat` on one run of the same command.
    let per_run = r.placements.len() == 1;
    for p in &r.placements {
        if per_run {
            for run in &p.runs {
                rows.push(
                    std::iter::once(format!("{} run {}", p.label, run.round))
                        .chain(text::cells(run.counters.as_ref(), hw))
                        .collect(),
                );
            }
        }
        rows.push(
            std::iter::once(if per_run {
                format!("{} median", p.label)
            } else {
                p.label.clone()
            })
            .chain(text::cells(p.counters.as_ref(), hw))
            .collect(),
        );
    }
    let right: Vec<bool> = (0..rows[0].len()).map(|i| i >= 1).collect();
    let mut out = String::from(if per_run {
        "\ncounters (each run and the median, the command's whole process tree):\n"
    } else {
        "\ncounters (median per run, the command's whole process tree):\n"
    });
    out.push_str(&aligned(&rows, &right));
    if let Some(n) = text::multiplexing_note(counts()) {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// One CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

/// CSV: one row per placement, empty cells for values not measured.
pub fn csv(r: &CompareReport) -> String {
    let head = [
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
    ];
    let mut out = head.join(",");
    out.push('\n');
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
                String::new(),
                String::new(),
                "baseline".to_string(),
            ),
            (_, Some(c)) => (
                num(Some(c.speedup.estimate)),
                num(Some(c.speedup.low)),
                num(Some(c.speedup.high)),
                c.call.to_string(),
            ),
            _ => Default::default(),
        };
        let w = p.wall_time_ns;
        let m = p.metric;
        let fields = [
            p.label.clone(),
            p.request.clone(),
            p.cpus.to_string(),
            p.cores.to_string(),
            p.runs.len().to_string(),
            p.failed_runs.to_string(),
            num(w.map(|s| s.median)),
            num(w.map(|s| s.mad)),
            num(w.map(|s| s.min)),
            num(w.map(|s| s.max)),
            if m.is_some() {
                unit.clone()
            } else {
                String::new()
            },
            num(m.map(|s| s.median)),
            num(m.map(|s| s.mad)),
            num(m.map(|s| s.min)),
            num(m.map(|s| s.max)),
            num(p.user_time_ns.map(|s| s.median)),
            num(p.system_time_ns.map(|s| s.median)),
            p.max_rss_bytes.map(|b| b.to_string()).unwrap_or_default(),
            num(p.voluntary_switches),
            num(p.involuntary_switches),
            num(p.burner_ops_per_sec),
            speedup,
            lo,
            hi,
            call,
        ];
        out.push_str(
            &fields
                .iter()
                .map(|f| csv_field(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        out.push('\n');
    }
    out
}

/// Markdown: the table hyperfine's `--export-markdown` writes, with CPUs, the metric and
/// each placement's speed relative to the first, then the comparisons.
pub fn markdown(r: &CompareReport) -> String {
    let mut out = format!("Command: {}\n\n", code(&shell_words(&r.command)));
    let metric = r.metric.as_ref();
    let mut head = vec!["Placement", "CPUs", "Wall median ± MAD"];
    let mhead = metric.map(|m| format!("{} median ± MAD", m.unit));
    if let Some(h) = &mhead {
        head.push(h);
    }
    head.extend(["Relative", "Call"]);
    let head_cells: Vec<String> = head.iter().map(|h| cell(h)).collect();
    out.push_str(&format!("| {} |\n", head_cells.join(" | ")));
    let aligns: Vec<&str> = head
        .iter()
        .enumerate()
        .map(|(i, _)| if i < 2 { ":---" } else { "---:" })
        .collect();
    out.push_str(&format!("|{}|\n", aligns.join("|")));
    for (i, p) in r.placements.iter().enumerate() {
        let cmp = r.comparisons.iter().find(|c| c.placement == p.label);
        let (rel, call) = match (i, cmp) {
            (0, _) => ("1.00".to_string(), "baseline".to_string()),
            (_, Some(c)) => (
                format!(
                    "{:.2} ({:.2}–{:.2})",
                    c.speedup.estimate, c.speedup.low, c.speedup.high
                ),
                c.call.to_string(),
            ),
            _ => ("-".into(), "-".into()),
        };
        let mut cells = vec![
            cell(&code(&p.label)),
            p.cpus.to_string(),
            p.wall_time_ns
                .map(|s| with_mad(&s, secs))
                .unwrap_or_else(|| "-".into()),
        ];
        if metric.is_some() {
            cells.push(
                p.metric
                    .map(|s| with_mad(&s, short))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        cells.extend([rel, cell(&call)]);
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push_str(&format!(
        "\nRelative = speed against the first placement, the geometric mean of its per-round ratios (> 1 is faster), with its interval; {}.\n",
        describe_runs(r)
    ));
    let mut lines: Vec<String> = r
        .comparisons
        .iter()
        .map(|c| comparison_line(c, r.noise_threshold))
        .collect();
    lines.extend(pair_lines(r));
    lines.extend(fixed_duration_line(r));
    lines.extend(unpaired_line(r));
    lines.extend(
        r.skipped
            .iter()
            .map(|s| format!("skipped {}: {}", s.label, s.reason)),
    );
    if !lines.is_empty() {
        out.push('\n');
        for l in lines {
            out.push_str(&format!("- {}\n", md(&l).replace(['\r', '\n'], " ")));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::metric::MetricInfo;
    use super::super::model::{Run, Skipped};
    use super::*;
    use crate::cpuset::CpuSet;

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
        let mut p = PlacementResult {
            label: label.into(),
            request: label.into(),
            cpus: CpuSet::from_cpus(cpus.iter().copied()),
            cores,
            server_cpus: None,
            burner_cpus: Vec::new(),
            runs,
            wall_time_ns: None,
            metric: None,
            user_time_ns: None,
            system_time_ns: None,
            max_rss_bytes: None,
            voluntary_switches: None,
            involuntary_switches: None,
            burner_ops_per_sec: None,
            counters: None,
            failed_runs: 0,
            notes: Vec::new(),
        };
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
        let c = csv(&fixture());
        // CPU lists with commas are quoted; every row has the header's column count.
        assert!(c.contains("\"0,2\""), "{c}");
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
        assert!(m.starts_with(&format!("Command: {cmd}\n")), "{m}");
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
        assert_eq!(fmt_pct(0.02), "2");
        assert_eq!(short(1236.73), "1237");
        assert_eq!(short(14.826), "14.8");
        assert_eq!(short(0.012345), "0.0123");
        assert_eq!(short(36_448.0), "36.448 k");
        assert_eq!(fmt_pct(0.025), "2.5");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        let argv: Vec<String> = ["sh", "-c", "echo it's | wc", "--x=1,2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_words(&argv), r"sh -c 'echo it'\''s | wc' --x=1,2");
    }
}
