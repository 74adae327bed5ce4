//! Everything that turns a yield result into tables and sentences: the terminal report
//! (and `--dry-run`'s plan), the study's section, the finding and the answer rows the
//! study's verdict cites, and the export document. Pure.

use super::model::{Layout, LayoutSummary, YieldPlan, YieldReport, YieldSection};
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::duration::format_duration;
use crate::render::blocks::Block;

pub use super::verdict::{PHASE, POOL_ASSUMPTION};
use crate::render::export::Document;
use crate::render::{self, Caveat, NONE, Table, count, duration_ns, sig, times};
use crate::stats::Effect;
use std::time::Duration;

/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "SMT on vs off on the same cores (yield)";

// ---------------------------------------------------------------------------------------
// The terminal.

/// The three layouts, thread by thread, the workloads and the run count.
pub fn dry_run_text(p: &YieldPlan) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "yield dry run: {} layouts on the same {}{}; nothing is run\n",
        p.layouts.len(),
        count(p.cores, "core"),
        p.scope
            .as_ref()
            .map(|u| format!(" {u}"))
            .unwrap_or_default()
    ));
    for l in &p.layouts {
        o.push_str(&format!(
            "\n{}: {} on {}, CPUs {} ({})\n",
            l.layout,
            count(l.threads, "thread"),
            count(l.cores.len(), "core"),
            l.cpus,
            l.layout.meaning()
        ));
        let mut table = Table::new(&["THREAD", "CPU", "CORE"]);
        for (i, c) in l.thread_cpus.iter().enumerate() {
            let core = l
                .cores
                .iter()
                .find(|k| c.is_subset(k))
                .map_or_else(|| NONE.to_string(), ToString::to_string);
            table.push(vec![i.to_string(), c.to_string(), core]);
        }
        o.push_str(&table.text());
        for n in &l.notes {
            o.push_str(&format!("note: {n}\n"));
        }
    }
    o.push_str(&format!(
        "\nworkloads ({}): {}\n",
        p.workloads.len(),
        p.workloads.join(", ")
    ));
    for l in &p.left_out {
        o.push_str(&format!("left out: {}: {}\n", l.workload, l.reason));
    }
    let runs = p.workloads.len() * p.layouts.len() * p.repeat;
    o.push_str(&format!(
        "would run {} × {} × {} = {} of {} (+ {} warm-up), interleaved: at least {}\n",
        count(p.workloads.len(), "workload"),
        count(p.layouts.len(), "layout"),
        count(p.repeat, "round"),
        count(runs, "run"),
        format_duration(Duration::from_nanos(p.duration_ns)),
        format_duration(Duration::from_nanos(p.warmup_ns)),
        render::wall(std::time::Duration::from_nanos(p.estimate_ns))
    ));
    for n in &p.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

fn latency_cell(l: Option<&LayoutSummary>) -> String {
    let Some(l) = l else {
        return NONE.into();
    };
    match (l.latency_p50_ns, l.latency_p99_ns, l.time_per_op_ns) {
        (Some(p50), Some(p99), _) => format!("{} / {}", duration_ns(p50), duration_ns(p99)),
        (_, _, Some(mean)) => format!("mean {}", duration_ns(mean)),
        _ => NONE.into(),
    }
}

fn layouts(r: &YieldReport) -> Vec<Layout> {
    r.plan.layouts.iter().map(|l| l.layout).collect()
}

/// Throughput per second, one row per workload, one column per layout.
pub fn throughput_table(r: &YieldReport) -> Table {
    let cols = layouts(r);
    let mut head = vec!["WORKLOAD".to_string(), "UNIT".into()];
    head.extend(cols.iter().map(|l| l.name().to_uppercase()));
    let mut table = Table::with_header(head);
    for w in &r.workloads {
        let mut row = vec![w.workload.clone(), w.unit.clone()];
        row.extend(cols.iter().map(|l| {
            w.layout(*l)
                .and_then(|s| s.ops_per_sec.as_ref())
                .map_or(NONE.into(), |s| render::pm_rel(s.median, s.mad))
        }));
        table.push(row);
    }
    table
}

/// The yield taken apart by the counters; None when no workload counted cycles and
/// instructions.
pub fn split_table(r: &YieldReport) -> Option<Table> {
    if r.workloads.iter().all(|w| w.yield_split.is_none()) {
        return None;
    }
    let mut table = Table::new(&[
        "WORKLOAD",
        "IPC ONE-PER-CORE",
        "IPC ALL",
        "IPC ×",
        "CYCLES/S ×",
        "INSTR/OP ×",
    ]);
    for w in &r.workloads {
        let mut row = vec![w.workload.clone()];
        match &w.yield_split {
            Some(s) => row.extend([
                sig(s.ipc_one_per_core, 3),
                sig(s.ipc_all, 3),
                times(s.ipc_ratio),
                times(s.cycles_per_sec_ratio),
                times(s.instructions_per_op_ratio),
            ]),
            None => row.extend(std::iter::repeat_n(NONE.to_string(), 5)),
        }
        table.push(row);
    }
    Some(table)
}

/// Latency per operation, one row per workload, one column per layout.
pub fn latency_table(r: &YieldReport) -> Table {
    let cols = layouts(r);
    let mut head = vec!["WORKLOAD".to_string()];
    head.extend(cols.iter().map(|l| l.name().to_uppercase()));
    let mut table = Table::with_header(head);
    for w in &r.workloads {
        let mut row = vec![w.workload.clone()];
        row.extend(cols.iter().map(|l| latency_cell(w.layout(*l))));
        table.push(row);
    }
    table
}

/// Why the counters did not split the yield.
fn split_missing(r: &YieldReport) -> String {
    if r.synthetic {
        "a synthetic run counts nothing".to_string()
    } else {
        match &r.counters {
            None => "counters off (`--counters off`)".to_string(),
            Some(st) => st
                .lines()
                .into_iter()
                .find(|l| l.contains("hardware") || l.contains("cycles"))
                .unwrap_or_else(|| "no run counted cycles and instructions".into()),
        }
    }
}

/// What the split's columns mean. Cycles and instructions give how much IPC changed, not
/// which shared resource made it change: no per-resource event was counted, so none is
/// named.
fn split_meaning(r: &YieldReport) -> String {
    let k = r.plan.threads_per_core.max(2);
    format!(
        "IPC × below 1× is how much fewer instructions per cycle the threads retired with \
         their siblings busy; which shared resource caused it was not measured (these \
         counters do not tell execution ports, caches, memory or the front end apart). \
         Cycles/s × is the CPU time the extra threads add (up to {k}× with {k} busy threads \
         per core)."
    )
}

/// The first line: the cores, layouts, rounds and durations.
fn title(r: &YieldReport) -> String {
    let p = &r.plan;
    format!(
        "SMT yield on the same {}{}",
        count(p.cores, "core"),
        p.scope
            .as_ref()
            .map(|u| format!(" {u}"))
            .unwrap_or_default(),
    )
}

fn how(r: &YieldReport) -> String {
    let p = &r.plan;
    let layout_names: Vec<String> = p
        .layouts
        .iter()
        .map(|l| format!("{} {}", l.layout, count(l.threads, "thread")))
        .collect();
    format!(
        "{}; {} of {} after {} warm-up, interleaved, layout order counterbalanced{}",
        layout_names.join(", "),
        count(p.repeat, "round"),
        format_duration(Duration::from_nanos(p.duration_ns)),
        format_duration(Duration::from_nanos(p.warmup_ns)),
        if r.synthetic {
            " (SYNTHETIC: made up by the fake engine)"
        } else {
            ""
        }
    )
}

fn thresholds_line(r: &YieldReport) -> String {
    format!(
        "SMT yield = all ÷ one-per-core (gain above {}, loss below {}); shared-core speed = \
         per thread, pairs ÷ one-per-core (loss below {})",
        times(1.0 + r.yield_thresholds.noise),
        times(r.yield_thresholds.effective_loss_below()),
        times(r.shared_core_thresholds.effective_loss_below())
    )
}

const SPLIT_HEADING: &str = "SMT yield = IPC change × cycle share ÷ instructions per operation (all ÷ one-per-core, medians over rounds)";
const LATENCY_HEADING: &str = "Latency per operation (median over rounds): p50 / p99 where each operation is timed, else the mean time per operation of one thread";

/// The lines under the tables: how the intervals were drawn, what a yield means, what
/// was left out, the notes and caveats, the counters' status.
fn notes(r: &YieldReport) -> Vec<String> {
    let p = &r.plan;
    let mut o = Vec::new();
    let n = r
        .workloads
        .iter()
        .filter_map(|w| w.smt_yield.as_ref())
        .map(|y| y.comparison.n)
        .min();
    if let Some(n) = n {
        o.push(format!(
            "Intervals: Student-t intervals of the per-round log ratios (the ratio shown is their geometric mean){}",
            if n < crate::stats::MIN_RUNS_FOR_CI {
                format!(
                    "; with {} there is no interval and nothing is called (--repeat {} or more)",
                    count(n, "round"),
                    crate::stats::MIN_RUNS_FOR_CI
                )
            } else {
                String::new()
            }
        ));
    }
    let threads = |l: Layout| p.layouts.iter().find(|x| x.layout == l).map(|x| x.threads);
    if let (Some(a), Some(b)) = (threads(Layout::OnePerCore), threads(Layout::All)) {
        o.push(format!(
            "A yield above 1 means the siblings add capacity: {b} threads on the cores do more \
             than {a}; within the noise band around 1 any gain or loss is too small to tell from \
             noise; below it they cost throughput."
        ));
    }
    o.extend(
        p.left_out
            .iter()
            .map(|l| format!("left out: {}: {}", l.workload, l.reason)),
    );
    for w in &r.workloads {
        o.extend(w.notes.iter().map(|n| format!("note: {}: {n}", w.workload)));
    }
    o.extend(p.notes.iter().chain(&r.notes).map(|n| format!("note: {n}")));
    if r.hypervisor {
        o.push(format!("note: {}", Caveat::Hypervisor { kind: None }));
    }
    if cfg!(debug_assertions) && !r.synthetic {
        o.push(format!("note: {}", Caveat::DebugBuild));
    }
    if let Some(st) = &r.counters {
        o.extend(crate::counters::view::status_lines(st));
    }
    if r.interrupted {
        o.push("interrupted: the rounds so far are shown".into());
    }
    o
}

/// The report as one document, in the terminal's order: throughput, the yield table,
/// the yield taken apart by the counters (or why not), latency, then what was left out
/// and why. `smtlab yield` draws it; `--export-markdown` writes it.
pub fn blocks(r: &YieldReport) -> Vec<Block> {
    let mut b = vec![
        Block::Intro(title(r)),
        Block::Intro(how(r)),
        Block::Heading("Throughput per second (median ± MAD over rounds)".into()),
        Block::Table(throughput_table(r)),
        Block::Heading("SMT yield and shared-core speed".into()),
        Block::Note(thresholds_line(r)),
        Block::Table(table(r)),
    ];
    match split_table(r) {
        None => {
            b.push(Block::Heading(
                "SMT yield as IPC change × cycle share".into(),
            ));
            b.push(Block::Note(format!("not measured ({})", split_missing(r))));
        }
        Some(t) => {
            b.push(Block::Heading(SPLIT_HEADING.into()));
            b.push(Block::Table(t));
            b.push(Block::Note(split_meaning(r)));
        }
    }
    b.push(Block::Heading(LATENCY_HEADING.into()));
    b.push(Block::Table(latency_table(r)));
    let notes = notes(r);
    if !notes.is_empty() {
        b.push(Block::Heading("Notes".into()));
        b.push(Block::List(notes));
    }
    b
}

/// What `--export-*` writes: [`blocks`] as Markdown, [`data`] as CSV, the model as JSON.
pub fn export(r: &YieldReport) -> Document {
    Document::of(
        &format!("smtlab yield: {}", title(r)),
        r,
        data(r),
        &blocks(r),
    )
}

/// Every run's raw numbers, one row per run: the CSV export.
pub fn data(r: &YieldReport) -> Table {
    let mut data = Table::new(&[
        "workload",
        "unit",
        "layout",
        "round",
        "position",
        "threads",
        "ops_per_sec",
        "per_thread_ops_per_sec",
        "time_per_op_ns",
        "latency_p50_ns",
        "latency_p99_ns",
        "cpus",
        "pinning_ok",
        "steal_share",
        "interrupted",
        "measured_ns",
    ]);
    let opt = |x: Option<String>| x.unwrap_or_else(|| NONE.into());
    for w in &r.workloads {
        for run in &w.runs {
            data.push(vec![
                w.workload.clone(),
                w.unit.clone(),
                run.layout.to_string(),
                run.round.to_string(),
                run.position.to_string(),
                run.threads.to_string(),
                run.ops_per_sec.to_string(),
                run.per_thread_ops_per_sec.to_string(),
                opt(run.time_per_op_ns.map(|x| x.to_string())),
                opt(run.latency_p50_ns.map(|x| x.to_string())),
                opt(run.latency_p99_ns.map(|x| x.to_string())),
                run.cpus.to_string(),
                run.pinning_ok.to_string(),
                opt(run.steal_share.map(|x| x.to_string())),
                run.interrupted.to_string(),
                run.measured_ns.to_string(),
            ]);
        }
    }
    data
}

// ---------------------------------------------------------------------------------------
// The study's section.

/// yield's settings and thresholds in one paragraph.
pub fn settings(y: &YieldSection) -> String {
    let r = &y.result;
    let p = &r.plan;
    let layouts: Vec<String> = p
        .layouts
        .iter()
        .map(|l| {
            format!(
                "`{}` ({} threads on {} cores)",
                l.layout,
                l.threads,
                l.cores.len()
            )
        })
        .collect();
    format!(
        "Each workload ran as {} on the same {} cores{}; {} round(s) of {} after {} warm-up, interleaved with the layout order counterbalanced from round to round. SMT yield = throughput of `all` ÷ `one-per-core`: a gain above {}, a loss below {}, no effect when the whole interval is within {}. Shared-core speed = a thread's rate in `pairs` ÷ in `one-per-core`: a loss below {}. Intervals are Student-t intervals of the per-round log ratios (the ratio shown is their geometric mean); with fewer than {} rounds there is no interval and nothing is called.",
        layouts.join(", "),
        p.cores,
        p.scope
            .as_ref()
            .map(|u| format!(" within {} (CPUs {})", u.label, u.cpus))
            .unwrap_or_default(),
        p.repeat,
        duration_ns(p.duration_ns as f64),
        duration_ns(p.warmup_ns as f64),
        times(1.0 + r.yield_thresholds.noise),
        times(r.yield_thresholds.effective_loss_below()),
        render::band(r.yield_thresholds.noise),
        times(r.shared_core_thresholds.effective_loss_below()),
        crate::stats::MIN_RUNS_FOR_CI
    )
}

/// The one yield table, one row per workload: the rates of one-per-core and all, the
/// yield and the shared-core speed with their intervals and classes, p99 latency, and
/// where cycles and instructions were counted the yield taken apart by IPC.
pub fn table(r: &YieldReport) -> Table {
    let mut t = Table::new(&[
        "WORKLOAD",
        "ONE-PER-CORE /S",
        "ALL /S",
        "SMT YIELD",
        "INTERVAL",
        "CLASS",
        "SHARED-CORE SPEED",
        "INTERVAL",
        "CLASS",
        "P99 ONE-PER-CORE → ALL",
    ]);
    // IPC columns only when some workload counted cycles and instructions.
    let ipc = r.workloads.iter().any(|w| w.yield_split.is_some());
    if ipc {
        t.header.push("IPC ONE-PER-CORE → ALL".into());
        t.header.push("YIELD = IPC × CYCLES/S ÷ INSTR/OP".into());
    }
    for w in &r.workloads {
        let rate = |l: Layout| {
            w.layout(l)
                .and_then(|s| s.ops_per_sec.as_ref())
                .map(|s| format!("{} {}", render::pm_sig(s.median, s.mad), w.unit))
                .unwrap_or_else(|| NONE.into())
        };
        let p99 = |l: Layout| w.layout(l).and_then(|s| s.latency_p99_ns);
        let mut row = vec![
            w.workload.clone(),
            rate(Layout::OnePerCore),
            rate(Layout::All),
        ];
        row.extend(render::comparison_cells(
            w.smt_yield.as_ref().map(|y| &y.comparison),
        ));
        row.extend(render::comparison_cells(
            w.shared_core_speed.as_ref().map(|y| &y.comparison),
        ));
        row.push(match (p99(Layout::OnePerCore), p99(Layout::All)) {
            (Some(a), Some(b)) => format!("{} → {}", duration_ns(a), duration_ns(b)),
            _ => "not timed".into(),
        });
        if ipc {
            match &w.yield_split {
                Some(x) => {
                    let x_ = crate::render::ratio_text;
                    row.push(format!("{} → {}", x_(x.ipc_one_per_core), x_(x.ipc_all)));
                    row.push(format!(
                        "{} × {} ÷ {}",
                        x_(x.ipc_ratio),
                        x_(x.cycles_per_sec_ratio),
                        x_(x.instructions_per_op_ratio)
                    ));
                }
                None => row.extend([NONE.to_string(), NONE.to_string()]),
            }
        }
        t.rows.push(row);
    }
    t
}

/// The study's yield section: what was run, a bar per workload's yield with its interval,
/// the workload table, why counters were not read, what was left out and the notes.
impl StudySection for YieldSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, ctx: &SectionCtx) -> Vec<Block> {
        let mut b = vec![Block::Intro(settings(self))];
        b.extend(yield_chart(self).map(Block::Chart));
        b.push(Block::Table(table(&self.result)));
        b.extend(ctx.counters_not_measured.clone().map(Block::Note));
        b.extend(
            self.result
                .plan
                .left_out
                .iter()
                .map(|l| Block::Note(format!("Left out: {}: {}", l.workload, l.reason))),
        );
        b.extend(
            self.result
                .plan
                .notes
                .iter()
                .chain(&self.result.notes)
                .map(|n| Block::Note(n.clone())),
        );
        b
    }

    fn finding(&self, _smt: bool) -> Option<Finding> {
        Some(super::verdict::yield_finding(self))
    }
}

/// One bar per workload: the yield, whiskers its interval (1.0 is "SMT adds nothing"),
/// losses highlighted; None when no workload has a yield.
fn yield_chart(y: &YieldSection) -> Option<String> {
    use render::svg::{Bar, Group};
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
                    highlight: c.effect == Effect::Loss,
                    tooltip: format!("{}: SMT yield {c}", w.workload),
                }],
            })
        })
        .collect();
    (!groups.is_empty()).then(|| {
        render::svg::bar_chart(
            "yield",
            "SMT yield: throughput of all ÷ one-per-core (whiskers: interval; 1 = the siblings add nothing)",
            "yield (×)",
            &groups,
            &[],
            None,
            false,
        )
    })
}
