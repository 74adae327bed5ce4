//! Everything that turns a yield result into tables and sentences: the terminal report
//! (and `--dry-run`'s plan), the study's section, the finding and the answer rows the
//! study's verdict cites, and the export document. Pure.

use super::model::{
    Layout, LayoutSummary, WorkloadKind, WorkloadResult, YieldPlan, YieldReport, YieldSection,
};
use crate::conclusion::{
    Aggregate, Answer, Evidence, Finding, HtAnswer, Member, PhaseName, SectionCtx, StudySection,
    WorkloadClass, indicative_note, not_answered,
};
use crate::duration::format_duration;
use crate::render::blocks::Block;
use crate::render::export::{Document, Section};
use crate::render::{self, Caveat, NONE, Table, count, duration_ns, sig, times};
use crate::stats::Effect;
use std::time::Duration;

/// The phase that fills this section; results.json names it `"yield"`.
pub const PHASE: PhaseName = PhaseName::new("yield");
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

/// The yield and the shared-core speed with their intervals and classes.
pub fn yield_table(r: &YieldReport) -> Table {
    let mut table = Table::new(&[
        "WORKLOAD",
        "YIELD",
        "INTERVAL",
        "CLASS",
        "SHARED-CORE SPEED",
        "INTERVAL",
        "CLASS",
    ]);
    for w in &r.workloads {
        let mut row = vec![w.workload.clone()];
        row.extend(render::comparison_cells(
            w.smt_yield.as_ref().map(|r| &r.comparison),
        ));
        row.extend(render::comparison_cells(
            w.shared_core_speed.as_ref().map(|r| &r.comparison),
        ));
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

/// The report as text: throughput, the yield and shared-core speed with their intervals
/// and classes, latency, then what was left out and why.
pub fn text(r: &YieldReport) -> String {
    let p = &r.plan;
    let mut o = format!("{}\n{}\n", title(r), how(r));
    o.push_str("\nThroughput per second (median ± MAD over rounds)\n");
    o.push_str(&throughput_table(r).text());
    o.push_str(&format!("\n{}\n", thresholds_line(r)));
    o.push_str(&yield_table(r).text());
    match split_table(r) {
        None => o.push_str(&format!(
            "\nSMT yield as IPC change × cycle share: not measured ({})\n",
            split_missing(r)
        )),
        Some(t) => {
            o.push_str(&format!("\n{SPLIT_HEADING}\n"));
            o.push_str(&t.text());
            o.push_str(&split_meaning(r));
            o.push('\n');
        }
    }
    o.push_str(&format!("\n{LATENCY_HEADING}\n"));
    o.push_str(&latency_table(r).text());

    let n = r
        .workloads
        .iter()
        .filter_map(|w| w.smt_yield.as_ref())
        .map(|y| y.comparison.n)
        .min();
    if let Some(n) = n {
        o.push_str(&format!(
            "\nIntervals: Student-t intervals of the per-round log ratios (the ratio shown is their geometric mean){}\n",
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
        o.push_str(&format!(
            "A yield above 1 means the siblings add capacity: {b} threads on the cores do more \
             than {a}; near 1 they add nothing; below 1 they cost throughput.\n"
        ));
    }
    for l in &p.left_out {
        o.push_str(&format!("left out: {}: {}\n", l.workload, l.reason));
    }
    for w in &r.workloads {
        for n in &w.notes {
            o.push_str(&format!("note: {}: {n}\n", w.workload));
        }
    }
    for n in p.notes.iter().chain(&r.notes) {
        o.push_str(&format!("note: {n}\n"));
    }
    if r.hypervisor {
        o.push_str(&format!("note: {}\n", Caveat::Hypervisor { kind: None }));
    }
    if cfg!(debug_assertions) && !r.synthetic {
        o.push_str(&format!("note: {}\n", Caveat::DebugBuild));
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::view::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    if r.interrupted {
        o.push_str("interrupted: the rounds so far are shown\n");
    }
    o
}

// ---------------------------------------------------------------------------------------
// The export.

/// The export: every run's raw numbers (one row per run), and the terminal's tables.
pub fn document(r: &YieldReport) -> Document {
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
    let mut sections = vec![
        Section {
            heading: "Throughput per second (median ± MAD over rounds)".into(),
            text: vec![how(r)],
            table: Some(throughput_table(r)),
        },
        Section {
            heading: "SMT yield and shared-core speed".into(),
            text: vec![thresholds_line(r)],
            table: Some(yield_table(r)),
        },
    ];
    sections.push(match split_table(r) {
        Some(t) => Section {
            heading: SPLIT_HEADING.into(),
            text: vec![split_meaning(r)],
            table: Some(t),
        },
        None => Section {
            heading: "SMT yield as IPC change × cycle share".into(),
            text: vec![format!("Not measured ({}).", split_missing(r))],
            table: None,
        },
    });
    sections.push(Section {
        heading: LATENCY_HEADING.into(),
        text: Vec::new(),
        table: Some(latency_table(r)),
    });
    Document {
        title: format!("smtlab yield: {}", title(r)),
        json: serde_json::to_value(r).unwrap_or_default(),
        data,
        sections,
    }
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

/// The study's yield table: one row per workload.
pub fn table(y: &YieldSection) -> Table {
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
    let ipc = y.result.workloads.iter().any(|w| w.yield_split.is_some());
    if ipc {
        t.header.push("IPC ONE-PER-CORE → ALL".into());
        t.header.push("YIELD = IPC × CYCLES/S ÷ INSTR/OP".into());
    }
    for w in &y.result.workloads {
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
            w.smt_yield.as_ref().map(|r| &r.comparison),
        ));
        row.extend(render::comparison_cells(
            w.shared_core_speed.as_ref().map(|r| &r.comparison),
        ));
        row.push(match (p99(Layout::OnePerCore), p99(Layout::All)) {
            (Some(a), Some(b)) => format!("{} → {}", duration_ns(a), duration_ns(b)),
            _ => "not timed".into(),
        });
        if ipc {
            match &w.yield_split {
                Some(x) => {
                    let r = crate::stats::ratio_text;
                    row.push(format!("{} → {}", r(x.ipc_one_per_core), r(x.ipc_all)));
                    row.push(format!(
                        "{} × {} ÷ {}",
                        r(x.ipc_ratio),
                        r(x.cycles_per_sec_ratio),
                        r(x.instructions_per_op_ratio)
                    ));
                }
                None => row.extend([NONE.to_string(), NONE.to_string()]),
            }
        }
        t.rows.push(row);
    }
    t
}

// ---------------------------------------------------------------------------------------
// The finding and the answer rows.

/// The compute row of the answer table: the compute rulers' yields. `missing` says why
/// nothing could answer when `smt` is false or the section is absent.
pub fn compute_answer(y: Option<&YieldSection>, smt: bool, missing: &str) -> Answer {
    class_answer(
        y,
        smt,
        WorkloadClass::Compute,
        &[WorkloadKind::ComputeRuler],
        missing,
    )
}

/// The memory-bound row: the memory rulers' yields, never pooled with the compute ones.
pub fn memory_answer(y: Option<&YieldSection>, smt: bool, missing: &str) -> Answer {
    class_answer(
        y,
        smt,
        WorkloadClass::Memory,
        &[WorkloadKind::MemoryRuler],
        missing,
    )
}

/// The lock-heavy row: the hot-page lock's yield.
pub fn locks_answer(y: Option<&YieldSection>, smt: bool, missing: &str) -> Answer {
    class_answer(y, smt, WorkloadClass::Locks, &[WorkloadKind::Lock], missing)
}

fn class_answer(
    y: Option<&YieldSection>,
    smt: bool,
    class: WorkloadClass,
    members: &[WorkloadKind],
    missing: &str,
) -> Answer {
    yield_answer_for(y, smt, class, members)
        .unwrap_or_else(|| not_answered(class, yield_missing(y, smt, missing), Some(PHASE)))
}

/// Why the yield phase gave no answer: `missing` (no SMT, or the phase's own record)
/// unless the phase ran without a workload of the class.
fn yield_missing(y: Option<&YieldSection>, smt: bool, missing: &str) -> String {
    if !smt || y.is_none() {
        missing.to_string()
    } else {
        "the yield phase ran no workload of this class to completion".into()
    }
}

/// Per round, throughput(all) ÷ throughput(one-per-core) of one yield workload, with the
/// round it came from.
pub fn yield_round_ratios(w: &WorkloadResult) -> Vec<(usize, f64)> {
    let rate = |layout: Layout, round: usize| {
        w.runs
            .iter()
            .find(|x| x.layout == layout && x.round == round && !x.interrupted)
            .map(|x| x.ops_per_sec)
            .filter(|x| *x > 0.0)
    };
    let mut rounds: Vec<usize> = w.runs.iter().map(|x| x.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds
        .into_iter()
        .filter_map(|k| Some((k, rate(Layout::All, k)? / rate(Layout::OnePerCore, k)?)))
        .filter(|(_, x)| x.is_finite())
        .collect()
}

/// What in the yield phase's own records makes its numbers unfit to answer from: CPUs
/// busy before the runs, steal above [`crate::hygiene::STEAL_WARN`], threads seen on CPUs
/// other than their own. Empty when the runs were clean.
fn yield_quality(y: &YieldSection, members: &[&WorkloadResult]) -> Vec<String> {
    let mut out: Vec<String> = y.result.preflight.clone();
    let runs = || members.iter().flat_map(|w| w.runs.iter());
    let steal = runs().filter_map(|r| r.steal_share).fold(0.0f64, f64::max);
    if steal > crate::hygiene::STEAL_WARN {
        out.push(format!(
            "the hypervisor took up to {:.0} % of the measured CPUs' time during the runs (steal)",
            steal * 100.0
        ));
    }
    let strays = runs().filter(|r| !r.pinning_ok && !r.interrupted).count();
    if strays > 0 {
        out.push(format!(
            "{} saw a thread on a CPU outside its own, so the layouts did not hold",
            count(strays, "run")
        ));
    }
    out
}

/// Said on every row that compares N threads with 2N on the same cores: what a "turn HT
/// off" there assumes, and the other remedy.
pub const POOL_ASSUMPTION: &str = "this compares one thread per core with a thread on every sibling of the same cores, i.e. a thread pool sized to the logical CPUs; with HT on, a pool of one thread per core keeps the one-per-core rate, so sizing the pool is the other remedy";

/// The answer for one class from the yield phase. One workload answers alone; several
/// answer by the per-round median of their yields unless their own intervals (widened for
/// being one of k) disagree, which answers "depends on the workload" and names them. The
/// phase's own quality records (busy CPUs, steal, strays) turn any answer inconclusive.
/// None when the phase measured no workload of the class.
pub fn yield_answer_for(
    y: Option<&YieldSection>,
    smt: bool,
    class: WorkloadClass,
    members: &[WorkloadKind],
) -> Option<Answer> {
    if !smt {
        return None;
    }
    let y = y?;
    let ws: Vec<&WorkloadResult> = y
        .result
        .workloads
        .iter()
        .filter(|w| members.contains(&w.class))
        .filter(|w| w.smt_yield.is_some())
        .collect();
    let agg = Aggregate::of(
        ws.iter()
            .filter_map(|w| {
                Some(Member {
                    label: format!("`{}`", w.workload),
                    comparison: w.smt_yield.as_ref()?.comparison,
                    ratios: yield_round_ratios(w),
                })
            })
            .collect(),
        y.result.yield_thresholds,
    )?;
    let mut reason = format!(
        "SMT yield ({}): {}",
        "throughput with every sibling ÷ one thread per core, same cores, paired by round",
        agg.text("the throughput of one thread per core", "workloads")
    );
    reason.push_str(&indicative_note(&agg.central));
    let mut answer = agg.answer(HtAnswer::from_yield);
    let problems = yield_quality(y, &ws);
    if !problems.is_empty() && answer != HtAnswer::Inconclusive {
        reason.push_str(&format!(
            "; held back as inconclusive, since the runs were disturbed: {}",
            problems.join("; ")
        ));
        answer = HtAnswer::Inconclusive;
    }
    if members.contains(&WorkloadKind::Lock) || members.contains(&WorkloadKind::Insert) {
        reason.push_str(&format!("; {POOL_ASSUMPTION}"));
    }
    let what = if agg.k == 1 {
        format!(
            "SMT yield of {}: throughput with every sibling ÷ one thread per core, same cores",
            agg.members[0].0
        )
    } else {
        format!(
            "SMT yield, per-round median of {} workloads: throughput with every sibling ÷ one thread per core, same cores",
            agg.k
        )
    };
    Some(Answer {
        class,
        answer,
        evidence: Some(Evidence {
            what,
            runs: format!("yield, {} paired rounds", agg.central.n),
            comparison: agg.central,
        }),
        reason,
        section: Some(PHASE),
    })
}

/// The study's yield finding: each workload's yield (and shared-core speed, and IPC where
/// counted), and what they mean together.
pub fn yield_finding(y: &YieldSection) -> Finding {
    let mut obs = Vec::new();
    let mut evidence = Vec::new();
    let (mut gains, mut flat, mut losses, mut unclear) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in &y.result.workloads {
        let Some(yr) = &w.smt_yield else {
            obs.push(format!(
                "`{}`: no yield (a layout completed no round)",
                w.workload
            ));
            continue;
        };
        let c = yr.comparison;
        let mut line = format!("`{}` {}", w.workload, c.ratio_of("with every sibling"));
        if let Some(sc) = &w.shared_core_speed {
            line.push_str(&format!(
                ", one thread on a shared core {}",
                sc.comparison.ratio_of("of its speed alone")
            ));
        }
        // IPC is cited only where cycles and instructions were counted.
        if let Some(x) = &w.yield_split {
            line.push_str(&format!(
                " (IPC {} → {}, {}, with {} the cycles per second)",
                sig(x.ipc_one_per_core, 2),
                sig(x.ipc_all, 2),
                times(x.ipc_ratio),
                times(x.cycles_per_sec_ratio)
            ));
        }
        obs.push(line);
        match c.effect {
            Effect::Gain => gains.push(format!("`{}`", w.workload)),
            Effect::NoEffect => flat.push(format!("`{}`", w.workload)),
            Effect::Loss | Effect::SmallLoss => losses.push(format!("`{}`", w.workload)),
            Effect::Inconclusive => unclear.push(format!("`{}`", w.workload)),
        }
        evidence.push(Evidence {
            what: format!("`{}` throughput, all ÷ one-per-core", w.workload),
            runs: format!("yield, rounds {:?}", yr.rounds),
            comparison: c,
        });
    }
    let mut meaning = Vec::new();
    if !gains.is_empty() {
        meaning.push(format!(
            "the siblings added capacity for {}",
            gains.join(", ")
        ));
    }
    if !flat.is_empty() {
        meaning.push(format!(
            "changed throughput by less than {} for {}",
            render::band(y.result.yield_thresholds.noise),
            flat.join(", ")
        ));
    }
    if !losses.is_empty() {
        meaning.push(format!("cost throughput for {}", losses.join(", ")));
    }
    let meaning = if meaning.is_empty() {
        "No workload's yield interval was narrow enough to call; more rounds (`--repeat`) are needed.".to_string()
    } else {
        let mut m = format!("On the same cores, {}", meaning.join("; "));
        if !unclear.is_empty() {
            m.push_str(&format!("; too wide to call for {}", unclear.join(", ")));
        }
        m + "."
    };
    Finding {
        topic: "SMT yield (yield)".into(),
        observed: obs.join("; ") + ".",
        meaning,
        evidence,
    }
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
        b.push(Block::Table(table(self)));
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
        Some(yield_finding(self))
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::verdict::build;
    use crate::stats::Comparison;
    use crate::study::fixture::{assert_cites_only_what_was_measured, sentences, smt};

    /// The yield section of the fake SMT study.
    fn section() -> YieldSection {
        smt().smt_yield.clone().expect("the yield phase ran on SMT")
    }

    /// Sets every ruler's rounds so that all ÷ one-per-core is `ratios[k]` in round k, and
    /// its yield from them.
    pub(crate) fn rulers_with_yield(y: &mut YieldSection, ratios: &[f64]) {
        let t = y.result.yield_thresholds;
        for w in &mut y.result.workloads {
            if !matches!(
                w.class,
                WorkloadKind::ComputeRuler | WorkloadKind::MemoryRuler
            ) {
                continue;
            }
            let template = w.runs[0].clone();
            w.runs.clear();
            for (k, q) in ratios.iter().enumerate() {
                for (layout, rate) in [(Layout::OnePerCore, 1e6), (Layout::All, 1e6 * q)] {
                    let mut run = template.clone();
                    run.round = k;
                    run.layout = layout;
                    run.ops_per_sec = rate;
                    w.runs.push(run);
                }
            }
            let c = Comparison::of_paired_ratios(ratios, t, 0.95).unwrap();
            w.smt_yield.as_mut().unwrap().comparison = c;
        }
    }

    /// Replaces the yield section's workloads with these, each all ÷ one-per-core at
    /// `ratios[k]` in round k.
    pub(crate) fn set_yield(y: &mut YieldSection, workloads: &[(&str, WorkloadKind, &[f64])]) {
        let t = y.result.yield_thresholds;
        let template = y.result.workloads[0].clone();
        y.result.workloads = workloads
            .iter()
            .map(|(name, class, ratios)| {
                let mut w = template.clone();
                w.workload = name.to_string();
                w.class = *class;
                let run = w.runs[0].clone();
                w.runs.clear();
                for (k, q) in ratios.iter().enumerate() {
                    for (layout, rate) in [(Layout::OnePerCore, 1e6), (Layout::All, 1e6 * q)] {
                        let mut x = run.clone();
                        x.round = k;
                        x.layout = layout;
                        x.ops_per_sec = rate;
                        x.pinning_ok = true;
                        x.steal_share = None;
                        w.runs.push(x);
                    }
                }
                let c = Comparison::of_paired_ratios(ratios, t, 0.95).unwrap();
                w.smt_yield.as_mut().unwrap().comparison = c;
                w
            })
            .collect();
        y.result.preflight.clear();
    }

    /// Around `x` in 5 rounds, ±1 %.
    pub(crate) fn tight(x: f64) -> Vec<f64> {
        [1.0, 1.01, 0.99, 1.005, 0.995]
            .iter()
            .map(|d| x * d)
            .collect()
    }

    /// The fake SMT study with its yield section replaced by `y`.
    fn report_with(y: YieldSection) -> crate::report::Report {
        let mut r = smt().clone();
        r.smt_yield = Some(y);
        r
    }

    #[test]
    fn ipc_is_cited_only_where_it_was_counted() {
        // The fake engine counts nothing: no sentence cites IPC.
        let v = build(smt());
        assert!(sentences(&v).iter().all(|s| !s.contains("IPC")));
        // One ruler's runs counted cycles and instructions: its finding cites them.
        let mut y = section();
        let w = &mut y.result.workloads[0];
        w.yield_split = Some(super::super::model::YieldSplit {
            ipc_one_per_core: 0.39,
            ipc_all: 0.25,
            ipc_ratio: 0.64,
            cycles_per_sec_ratio: 2.0,
            instructions_per_op_ratio: 1.0,
            rounds: 3,
        });
        let name = w.workload.clone();
        let f = yield_finding(&y);
        assert!(f.topic.contains("yield"), "{}", f.topic);
        assert!(
            f.observed.contains(&format!("`{name}`"))
                && f.observed
                    .contains("(IPC 0.39 → 0.25, 0.64×, with 2.00× the cycles per second)"),
            "{}",
            f.observed
        );
        assert_eq!(f.observed.matches("IPC").count(), 1, "{}", f.observed);
    }

    #[test]
    fn smt_with_a_tight_ruler_yield_of_1_3_keeps_ht_on_for_compute() {
        let mut y = section();
        rulers_with_yield(&mut y, &[1.29, 1.30, 1.31, 1.30, 1.32, 1.28, 1.30]);
        let a = compute_answer(Some(&y), true, "");
        assert_cites_only_what_was_measured(&build(&report_with(y)));
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let c = a.evidence.as_ref().unwrap().comparison;
        assert!(
            (c.estimate - 1.30).abs() < 0.01 && c.n == 7 && !c.indicative,
            "{c:?}"
        );
        assert!(a.reason.contains("95 % CI"), "{}", a.reason);
        // Several rulers: each is shown with an interval widened for being one of k.
        assert!(
            a.reason.contains("widened for being one of"),
            "{}",
            a.reason
        );
    }

    /// Two lock workloads, one gaining (mutex 1.10×) and one losing (ttas 0.80×): with an
    /// even count the "median" was the upper middle one, so the row said keep HT on. A
    /// class whose workloads disagree depends on the workload, naming them.
    #[test]
    fn a_lock_row_with_a_gain_and_a_loss_depends_on_the_workload() {
        let mut y = section();
        set_yield(
            &mut y,
            &[
                ("hot-page/mutex", WorkloadKind::Lock, &tight(1.10)),
                ("hot-page/ttas", WorkloadKind::Lock, &tight(0.80)),
            ],
        );
        let a = locks_answer(Some(&y), true, "");
        assert_cites_only_what_was_measured(&build(&report_with(y)));
        assert_eq!(a.answer, HtAnswer::DependsOnWorkload, "{}", a.reason);
        assert!(
            a.reason.contains("gain for `hot-page/mutex`"),
            "{}",
            a.reason
        );
        assert!(
            a.reason.contains("loss for `hot-page/ttas`"),
            "{}",
            a.reason
        );
        // The central value is a true median: the mean of the two middle ratios per round.
        let c = a.evidence.as_ref().unwrap().comparison;
        assert!((c.estimate - 0.95).abs() < 0.005, "{c}");
    }

    /// Yields 0.90/0.97/1.02 (stream, chase, l2) and 1.15/1.20/1.90 (compute rulers) were
    /// one row, decided by the 4th of 6: keep HT on. Memory rulers answer a row of their
    /// own.
    #[test]
    fn memory_rulers_are_not_pooled_with_compute_rulers() {
        let mut y = section();
        set_yield(
            &mut y,
            &[
                ("stream", WorkloadKind::MemoryRuler, &tight(0.90)),
                ("chase", WorkloadKind::MemoryRuler, &tight(0.97)),
                ("l2", WorkloadKind::MemoryRuler, &tight(1.02)),
                ("fma", WorkloadKind::ComputeRuler, &tight(1.15)),
                ("prime", WorkloadKind::ComputeRuler, &tight(1.20)),
                ("int", WorkloadKind::ComputeRuler, &tight(1.90)),
            ],
        );
        let compute = compute_answer(Some(&y), true, "");
        let memory = memory_answer(Some(&y), true, "");
        assert_cites_only_what_was_measured(&build(&report_with(y)));
        assert_eq!(compute.answer, HtAnswer::KeepHtOn, "{}", compute.reason);
        assert!(!compute.reason.contains("`stream`"), "{}", compute.reason);
        assert_ne!(memory.answer, HtAnswer::KeepHtOn, "{}", memory.reason);
        assert_eq!(
            memory.answer,
            HtAnswer::DependsOnWorkload,
            "{}",
            memory.reason
        );
        assert!(
            memory.reason.contains("loss for `stream`"),
            "{}",
            memory.reason
        );
        assert!(!memory.reason.contains("`int`"), "{}", memory.reason);
    }

    /// The quick study runs 3 rounds; the perfect-SMT guest's compute yields (1.61×,
    /// 1.90×, 2.02× per round) were held back as "only 3 runs". A 2× effect is answered.
    #[test]
    fn a_quick_study_answers_a_two_fold_compute_yield_from_three_rounds() {
        let mut y = section();
        set_yield(
            &mut y,
            &[
                ("prime", WorkloadKind::ComputeRuler, &[1.61, 1.90, 2.02]),
                ("int", WorkloadKind::ComputeRuler, &[1.90, 1.93, 1.88]),
            ],
        );
        let a = compute_answer(Some(&y), true, "");
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
        assert!(!a.reason.contains("no answer is drawn"), "{}", a.reason);
        // The zero-yield guest's numbers (0.99×, 0.98×) never keep HT on.
        let mut y = section();
        set_yield(
            &mut y,
            &[
                ("prime", WorkloadKind::ComputeRuler, &[0.88, 0.99, 1.12]),
                ("int", WorkloadKind::ComputeRuler, &[0.95, 0.98, 1.02]),
            ],
        );
        let a = compute_answer(Some(&y), true, "");
        assert_ne!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
    }

    /// Lock yields compare N threads with 2N on the same cores: the row says that "turn
    /// HT off" assumes a pool sized to the logical CPUs, and offers the other remedy
    /// (the inserts row's twin is in oltp's view).
    #[test]
    fn the_lock_row_states_the_thread_pool_assumption() {
        let mut y = section();
        set_yield(
            &mut y,
            &[("hot-page/ttas", WorkloadKind::Lock, &tight(0.76))],
        );
        let a = locks_answer(Some(&y), true, "");
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
        assert!(
            a.reason.contains("sized to the logical CPUs"),
            "{}",
            a.reason
        );
        assert!(a.reason.contains("one thread per core"), "{}", a.reason);
        assert!(a.reason.contains("other remedy"), "{}", a.reason);
    }

    /// The yield phase's own notes (CPUs busy before the runs, steal above 5 %, threads
    /// seen off their CPUs) did not reach the answer rows.
    #[test]
    fn disturbed_yield_runs_turn_the_answer_inconclusive() {
        let gain: &[(&str, WorkloadKind, &[f64])] = &[(
            "int",
            WorkloadKind::ComputeRuler,
            &[1.9, 1.92, 1.88, 1.91, 1.89],
        )];
        let mut clean = section();
        set_yield(&mut clean, gain);
        assert_eq!(
            compute_answer(Some(&clean), true, "").answer,
            HtAnswer::KeepHtOn
        );
        type Spoil = fn(&mut YieldReport);
        let spoilers: [(Spoil, &str); 3] = [
            (
                |y| {
                    y.preflight.push("other work was running on CPU 1 in the 0.25 s before the run (CPU 1 60 % busy): its interference is part of these results".into())
                },
                "other work was running on CPU 1",
            ),
            (
                |y| y.workloads[0].runs[3].steal_share = Some(0.08),
                "took up to 8 %",
            ),
            (
                |y| y.workloads[0].runs[2].pinning_ok = false,
                "a thread on a CPU outside its own",
            ),
        ];
        for (spoil, says) in spoilers {
            let mut y = clean.clone();
            spoil(&mut y.result);
            let a = compute_answer(Some(&y), true, "");
            assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
            assert!(a.reason.contains(says), "{}", a.reason);
        }
    }

    /// "No effect" (an interval within ±5 %) was printed as "added nothing measurable"
    /// for 1.02–1.05.
    #[test]
    fn no_effect_is_worded_as_inside_the_band_not_as_nothing() {
        let mut y = section();
        set_yield(
            &mut y,
            &[(
                "int",
                WorkloadKind::ComputeRuler,
                &[1.02, 1.035, 1.05, 1.03, 1.04],
            )],
        );
        let f = yield_finding(&y);
        assert!(!f.meaning.contains("nothing measurable"), "{}", f.meaning);
        assert!(f.meaning.contains("less than ±5 %"), "{}", f.meaning);
        for s in sentences(&build(&report_with(y))) {
            assert!(!s.contains("neither helps nor hurts"), "{s}");
            assert!(!s.contains("nothing measurable"), "{s}");
        }
    }
}
