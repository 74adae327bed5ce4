//! `smtlab yield`: runs [`crate::experiments::smt_yield`] on this machine and prints its
//! report (or, with `--dry-run`, the three layouts only; that works on a dump too).

use crate::engine::RealEngine;
use crate::experiments::smt_yield::model::{Layout, LayoutRatio, LayoutSummary};
use crate::experiments::smt_yield::{self as experiment, YieldPlan, YieldReport};
use crate::render::{self, Caveat, Table};
use crate::stats::{Summary, ratio_text};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct YieldCommand {
    pub root: PathBuf,
    pub exp: experiment::Config,
    pub json: bool,
    pub dry_run: bool,
}

/// Runs the command; one line per run goes to stderr, the report to `out`. A Ctrl-C'd run
/// writes the rounds so far and exits 130; a failed insert row check writes the report,
/// then fails.
pub fn run(cfg: &YieldCommand, out: &mut dyn Write) -> Result<()> {
    let topo = super::topology_for_run(&cfg.root, cfg.dry_run, true)?;
    // Another machine's dump says nothing about this one's memory.
    let mem = if topo.live {
        crate::limits::mem_available_bytes()
    } else {
        None
    };
    let planned = experiment::plan(&topo, &cfg.exp, mem)?;
    if cfg.dry_run {
        return super::emit(out, cfg.json, &planned.plan, dry_run_text, false);
    }
    let rep = experiment::run_planned(&RealEngine, &topo, &cfg.exp, &planned, &mut |m| {
        crate::say!("yield: {m}")
    })?;
    super::emit(out, cfg.json, &rep, human, rep.interrupted)?;
    let bad: Vec<String> = rep
        .workloads
        .iter()
        .flat_map(|w| w.runs.iter())
        .filter(|r| r.rows_verified == Some(false))
        .map(|r| format!("{} (round {})", r.layout, r.round))
        .collect();
    if !bad.is_empty() {
        anyhow::bail!(
            "insert row check failed for {}: the table did not gain exactly the committed rows",
            bad.join(", ")
        );
    }
    Ok(())
}

/// The three layouts, thread by thread, the workloads and the run count.
pub fn dry_run_text(p: &YieldPlan) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "yield dry run: {} layouts on the same {}{}; nothing is run\n",
        p.layouts.len(),
        render::count(p.cores, "core"),
        p.scope
            .as_ref()
            .map(|u| format!(" {u}"))
            .unwrap_or_default()
    ));
    for l in &p.layouts {
        o.push_str(&format!(
            "\n{}: {} on {}, CPUs {} ({})\n",
            l.layout,
            render::count(l.threads, "thread"),
            render::count(l.cores.len(), "core"),
            l.cpus,
            l.layout.meaning()
        ));
        let mut table = Table::new(&["THREAD", "CPU", "CORE"]);
        for (i, c) in l.thread_cpus.iter().enumerate() {
            let core = l
                .cores
                .iter()
                .find(|k| c.is_subset(k))
                .map_or_else(|| "-".to_string(), ToString::to_string);
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
        render::count(p.workloads.len(), "workload"),
        render::count(p.layouts.len(), "layout"),
        render::count(p.repeat, "round"),
        render::count(runs, "run"),
        dur(p.duration_ns),
        dur(p.warmup_ns),
        render::wall(std::time::Duration::from_nanos(p.estimate_ns))
    ));
    for n in &p.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

/// A duration as typed on the command line: `1s`, `250ms`.
fn dur(ns: u64) -> String {
    crate::duration::format_duration(std::time::Duration::from_nanos(ns))
}

/// A rate to 3 significant figures with an SI suffix: `12.3 M`, `845`, `1.20 k`.
fn rate(v: f64) -> String {
    let a = v.abs();
    let (x, suf) = if a >= 1e9 {
        (v / 1e9, " G")
    } else if a >= 1e6 {
        (v / 1e6, " M")
    } else if a >= 1e3 {
        (v / 1e3, " k")
    } else {
        (v, "")
    };
    format!("{}{suf}", sig3(x))
}

fn sig3(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `12.3 M ± 1.2 %`: median and MAD relative to it, the spread to 2 significant figures.
fn with_spread(s: &Option<Summary>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.n < 2 || s.median == 0.0 => rate(s.median),
        Some(s) => {
            let pct = 100.0 * s.mad / s.median.abs();
            let spread = if pct >= 10.0 {
                format!("{pct:.0}")
            } else {
                format!("{pct:.1}")
            };
            format!("{} ± {spread} %", rate(s.median))
        }
    }
}

fn ratio_cells(r: &Option<LayoutRatio>) -> [String; 3] {
    match r {
        None => ["-".into(), "-".into(), "not measured".into()],
        Some(r) => [
            format!("{}×", ratio_text(r.comparison.estimate)),
            r.comparison.interval_text(),
            r.comparison.effect.to_string(),
        ],
    }
}

fn latency_cell(l: Option<&LayoutSummary>) -> String {
    let Some(l) = l else {
        return "-".into();
    };
    match (l.latency_p50_ns, l.latency_p99_ns, l.time_per_op_ns) {
        (Some(p50), Some(p99), _) => format!(
            "{} / {}",
            render::duration_ns(p50),
            render::duration_ns(p99)
        ),
        (_, _, Some(mean)) => format!("mean {}", render::duration_ns(mean)),
        _ => "-".into(),
    }
}

/// The yield taken apart by the counters (IPC change × cycle share ÷ instructions per
/// operation), or one line saying why it was not measured.
fn split_text(r: &YieldReport) -> String {
    let mut o = String::new();
    if r.workloads.iter().all(|w| w.yield_split.is_none()) {
        let why = if r.synthetic {
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
        };
        o.push_str(&format!(
            "\nSMT yield as IPC change × cycle share: not measured ({why})\n"
        ));
        return o;
    }
    o.push_str(
        "\nSMT yield = IPC change × cycle share ÷ instructions per operation (all ÷ one-per-core, \
         medians over rounds)\n",
    );
    let mut table = Table::with_header(
        [
            "WORKLOAD",
            "IPC ONE-PER-CORE",
            "IPC ALL",
            "IPC ×",
            "CYCLES/S ×",
            "INSTR/OP ×",
        ]
        .map(String::from)
        .to_vec(),
    );
    for w in &r.workloads {
        let mut row = vec![w.workload.clone()];
        match &w.yield_split {
            Some(s) => row.extend([
                format!("{:.2}", s.ipc_one_per_core),
                format!("{:.2}", s.ipc_all),
                format!("{}×", ratio_text(s.ipc_ratio)),
                format!("{}×", ratio_text(s.cycles_per_sec_ratio)),
                format!("{}×", ratio_text(s.instructions_per_op_ratio)),
            ]),
            None => row.extend(std::iter::repeat_n("-".to_string(), 5)),
        }
        table.push(row);
    }
    o.push_str(&table.text());
    // Cycles and instructions give how much IPC changed, not which shared resource made
    // it change: no per-resource event was counted, so none is named.
    let k = r.plan.threads_per_core.max(2);
    o.push_str(&format!(
        "IPC × below 1× is how much fewer instructions per cycle the threads retired with \
         their siblings busy; which shared resource caused it was not measured (these \
         counters do not tell execution ports, caches, memory or the front end apart). \
         Cycles/s × is the CPU time the extra threads add (up to {k}× with {k} busy threads \
         per core).\n"
    ));
    o
}

/// The report as text: throughput, the yield and shared-core speed with their intervals
/// and classes, latency, then what was left out and why.
pub fn human(r: &YieldReport) -> String {
    let p = &r.plan;
    let mut o = String::new();
    let threads = |l: Layout| p.layouts.iter().find(|x| x.layout == l).map(|x| x.threads);
    let layout_names: Vec<String> = p
        .layouts
        .iter()
        .map(|l| format!("{} {}", l.layout, render::count(l.threads, "thread")))
        .collect();
    o.push_str(&format!(
        "SMT yield on the same {}{}\n{}; {} of {} after {} warm-up, interleaved, layout order counterbalanced{}\n",
        render::count(p.cores, "core"),
        p.scope
            .as_ref()
            .map(|u| format!(" {u}"))
            .unwrap_or_default(),
        layout_names.join(", "),
        render::count(p.repeat, "round"),
        dur(p.duration_ns),
        dur(p.warmup_ns),
        if r.synthetic {
            " (SYNTHETIC: made up by the fake engine)"
        } else {
            ""
        }
    ));
    let cols: Vec<Layout> = p.layouts.iter().map(|l| l.layout).collect();

    o.push_str("\nThroughput per second (median ± MAD over rounds)\n");
    let mut head = vec!["WORKLOAD".to_string(), "UNIT".into()];
    head.extend(cols.iter().map(|l| l.name().to_uppercase()));
    let mut table = Table::with_header(head);
    for w in &r.workloads {
        let mut row = vec![w.workload.clone(), w.unit.clone()];
        row.extend(
            cols.iter()
                .map(|l| with_spread(&w.layout(*l).and_then(|s| s.ops_per_sec))),
        );
        table.push(row);
    }
    o.push_str(&table.text());

    o.push_str(&format!(
        "\nSMT yield = all ÷ one-per-core (gain above {}×, loss below {}×); shared-core speed = \
         per thread, pairs ÷ one-per-core (loss below {}×)\n",
        ratio_text(1.0 + r.yield_thresholds.noise),
        ratio_text(r.yield_thresholds.effective_loss_below()),
        ratio_text(r.shared_core_thresholds.effective_loss_below())
    ));
    let mut table = Table::with_header(
        [
            "WORKLOAD",
            "YIELD",
            "INTERVAL",
            "CLASS",
            "SHARED-CORE SPEED",
            "INTERVAL",
            "CLASS",
        ]
        .map(String::from)
        .to_vec(),
    );
    for w in &r.workloads {
        let mut row = vec![w.workload.clone()];
        row.extend(ratio_cells(&w.smt_yield));
        row.extend(ratio_cells(&w.shared_core_speed));
        table.push(row);
    }
    o.push_str(&table.text());

    o.push_str(&split_text(r));

    o.push_str("\nLatency per operation (median over rounds): p50 / p99 where each operation is timed, else the mean time per operation of one thread\n");
    let mut head = vec!["WORKLOAD".to_string()];
    head.extend(cols.iter().map(|l| l.name().to_uppercase()));
    let mut table = Table::with_header(head);
    for w in &r.workloads {
        let mut row = vec![w.workload.clone()];
        row.extend(cols.iter().map(|l| latency_cell(w.layout(*l))));
        table.push(row);
    }
    o.push_str(&table.text());

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
                    render::count(n, "round"),
                    crate::stats::MIN_RUNS_FOR_CI
                )
            } else {
                String::new()
            }
        ));
    }
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
        for l in crate::counters::text::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    if r.interrupted {
        o.push_str("interrupted: the rounds so far are shown\n");
    }
    o
}
