//! neighbors' view: its one document ([`blocks`]), drawn on the terminal and written by
//! [`export`], the study section's table ([`series`]) and the CSV rows ([`data`]); its
//! finding and the headline's largest loss are in `verdict`. Pure.

use super::diagnosis::Diagnosis;
use super::model::{NeighborsReport, NeighborsSection, SeriesPlacement, Step};
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::render::blocks::Block;

pub use super::verdict::PHASE;
use crate::render::count;
use crate::render::export::Document;
use crate::render::{self, NONE, Table, duration_ns, si};

/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Noisy neighbours: a hot lock vs CPU burners (neighbors)";

// ---------------------------------------------------------------------------------------
// The terminal.

/// The run as one document, in the terminal's order: what ran, one row per step and what
/// its columns mean; with several rounds one row per burner count over them; one
/// diagnosis line per step; the workers' counters; the notes. `smtlab neighbors` draws
/// it, `--export-markdown` writes it.
pub fn blocks(r: &NeighborsReport) -> Vec<Block> {
    let mut b = vec![
        Block::Intro(header(r)),
        Block::Heading("Steps".into()),
        Block::Table(steps(r)),
        Block::List(legend(r)),
    ];
    let diagnosis = match rounds(r) {
        Some(t) => {
            b.push(Block::Heading(rounds_title(r)));
            b.push(Block::Table(t));
            "Diagnosis (most rounds; evidence of the round nearest the median)"
        }
        None => "Diagnosis",
    };
    b.push(Block::Heading(diagnosis.into()));
    b.push(Block::List(diagnosis_lines(r)));
    b.extend(counters_blocks(r));
    let mut notes: Vec<String> = notes(r).into_iter().map(|n| format!("note: {n}")).collect();
    if let Some(st) = &r.counters {
        notes.extend(crate::counters::view::status_lines(st));
    }
    if !notes.is_empty() {
        b.push(Block::Heading("Notes".into()));
        b.push(Block::List(notes));
    }
    b
}

/// What `--export-*` writes: [`blocks`] as Markdown, [`data`] as CSV, the model as JSON.
pub fn export(r: &NeighborsReport) -> Document {
    Document::of("smtlab neighbors", r, data(r), &blocks(r))
}

/// What ran, in one line.
fn header(r: &NeighborsReport) -> String {
    format!(
        "neighbors: {} workers ({}, {}) vs {} burners ({}, {} mode, policy {}); time slice {}{}",
        r.workers,
        r.workload,
        r.worker_placement,
        r.burner_kind,
        r.burner_placement,
        r.burner_mode,
        r.burner_policy,
        duration_ns(r.time_slice_ns),
        if r.repeat > 1 {
            format!("; {} rounds", r.repeat)
        } else {
            String::new()
        }
    )
}

/// One row per step (and the reference run), with a ROUND column when several rounds ran.
pub fn steps(r: &NeighborsReport) -> Table {
    let rounds = r.repeat > 1;
    let mut table = Table::new(&[
        "BURNERS",
        "WORKERS",
        "RUNNABLE",
        "OPS/S",
        "SHARE",
        "TIME/OP",
        "P50",
        "P99",
        "MAX",
        "INVOL/S",
        "RUNQ WAIT",
        "LONG HOLDS",
        "LONG WAITS",
        "BURNER OPS/S",
        "DIAGNOSIS",
    ]);
    if rounds {
        table.header.insert(0, "ROUND".into());
    }
    let row = |label: String, s: &Step| -> Vec<String> {
        let mut v = vec![
            label,
            s.workers.to_string(),
            format!("{}/{}", s.runnable_threads, s.cpus),
            si(s.ops_per_sec),
            render::percent(s.ratio_to_first, 1),
            duration_ns(s.time_per_op_ns),
            duration_ns(s.latency_p50_ns as f64),
            duration_ns(s.latency_p99_ns as f64),
            duration_ns(s.latency_max_ns as f64),
            format!("{:.0}", s.worker_involuntary_switches_per_sec),
            render::or_dash(s.worker_run_delay_share, |d| render::percent(d, 0)),
            render::or_dash(s.holder_preemptions, render::thousands),
            render::or_dash(s.long_waits, render::thousands),
            si(s.burner_ops_per_sec),
            s.diagnosis.label().into(),
        ];
        if rounds {
            v.insert(0, (s.round + 1).to_string());
        }
        v
    };
    if let Some(rf) = &r.reference {
        table.push(row("ref".into(), rf));
    }
    for s in &r.steps {
        table.push(row(s.burners.to_string(), s));
    }
    table
}

/// What the step table's columns mean.
fn legend(r: &NeighborsReport) -> Vec<String> {
    vec![
        format!(
            "SHARE is relative to {}{}",
            if r.reference.is_some() {
                "the reference run (`ref`: as many workers as CPUs, no burners)"
            } else {
                "the first step"
            },
            if r.repeat > 1 {
                " of the same round"
            } else {
                ""
            }
        ),
        "RUNNABLE: threads that can take a worker's CPU / the CPUs they may use".into(),
        "P50, P99, MAX: latency of the operations that started and ended in the window".into(),
        "RUNQ WAIT: share of each worker's time spent waiting for a CPU, mean over the workers"
            .into(),
    ]
}

fn rounds_title(r: &NeighborsReport) -> String {
    format!(
        "Over {} rounds (RATIO: each round's ops/s ÷ its own first step, paired)",
        r.repeat
    )
}

/// With several rounds, one row per burner count over them; None with one round.
pub fn rounds(r: &NeighborsReport) -> Option<Table> {
    if r.repeat <= 1 {
        return None;
    }
    let mut table = Table::new(&["BURNERS", "RUNNABLE", "OPS/S", "±MAD", "RATIO", "DIAGNOSIS"]);
    for s in &r.summary {
        table.push(vec![
            s.burners.to_string(),
            format!("{}/{}", s.runnable_threads, s.cpus),
            si(s.ops_per_sec.median),
            si(s.ops_per_sec.mad),
            render::or_dash(s.ratio, |c| c.to_string()),
            s.diagnosis.label().into(),
        ]);
    }
    Some(table)
}

/// One diagnosis line per burner count (over rounds when several ran), then the skipped
/// steps.
fn diagnosis_lines(r: &NeighborsReport) -> Vec<String> {
    let line = |burners: usize, d: Diagnosis, reason: &str| {
        format!(
            "{}: {} — {reason}",
            render::count(burners, "burner"),
            d.label()
        )
    };
    let mut v: Vec<String> = if r.repeat > 1 {
        r.summary
            .iter()
            .map(|s| line(s.burners, s.diagnosis, &s.reason))
            .collect()
    } else {
        r.steps
            .iter()
            .map(|s| line(s.burners, s.diagnosis, &s.reason))
            .collect()
    };
    for (b, why) in &r.skipped {
        v.push(format!("{}: skipped — {why}", render::count(*b, "burner")));
    }
    v
}

/// The run's notes, then the hypervisor caveat.
fn notes(r: &NeighborsReport) -> Vec<String> {
    let mut v = r.notes.clone();
    if r.hypervisor {
        let kind = None;
        v.push(crate::render::Caveat::Hypervisor { kind }.to_string());
    }
    v
}

/// The workers' counters per step, summed over the workers; nothing when no step counted.
fn counters_blocks(r: &NeighborsReport) -> Vec<Block> {
    use crate::counters::view as counters;
    let steps: Vec<(String, &Step)> = r
        .reference
        .iter()
        .map(|s| ("ref".to_string(), s))
        .chain(r.steps.iter().map(|s| (s.burners.to_string(), s)))
        .collect();
    let counts = || steps.iter().map(|(_, s)| s.worker_counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return Vec::new();
    }
    let hw = counters::any_hardware(counts());
    let rounds = r.repeat > 1;
    let mut head: Vec<String> = vec!["BURNERS".into()];
    if rounds {
        head.insert(0, "ROUND".into());
    }
    let mut table = Table::with_header(
        head.into_iter()
            .chain(counters::header(hw))
            .collect::<Vec<_>>(),
    );
    for (label, s) in &steps {
        let mut row = vec![label.clone()];
        if rounds {
            row.insert(0, (s.round + 1).to_string());
        }
        row.extend(counters::cells(s.worker_counters.as_ref(), hw));
        table.push(row);
    }
    let mut b = vec![
        Block::Heading("Worker counters per step (summed over the workers)".into()),
        Block::Table(table),
    ];
    b.extend(counters::multiplexing_note(counts()).map(|n| Block::Note(format!("note: {n}"))));
    b
}

// ---------------------------------------------------------------------------------------
// The study's section.

/// What the section's chart and table show, in one paragraph.
pub fn section_intro(n: &NeighborsSection) -> String {
    format!(
        "{} workers append rows to one shared page under the lock while `{}` burners ({} mode) step up, workers and burners placed by the scheduler (unpinned){}; {} sweep(s) per lock, {} per step after {} warm-up. Points: median ops/s (log axis), bars min–max; marker fill = diagnosis.",
        n.workers,
        n.burner_kind,
        match n.burner_mode {
            super::BurnerMode::Thread => "thread",
            super::BurnerMode::Process => "process",
        },
        match (
            n.series
                .iter()
                .find(|s| s.placement == SeriesPlacement::SiblingBurners),
            &n.sibling_skipped,
        ) {
            (Some(s), _) => format!(
                "; beside them a controlled series: {} one per core, burners pinned to their SMT siblings",
                count(s.workers_in(n), "worker")
            ),
            (None, Some(why)) => format!("; no controlled sibling series: {why}"),
            (None, None) => String::new(),
        },
        n.repeat,
        duration_ns(n.duration_ns as f64),
        duration_ns(n.warmup_ns as f64)
    )
}

/// One row per series (lock and placement) × burner step.
pub fn series(n: &NeighborsSection) -> Table {
    let mut t = Table::new(&[
        "LOCK",
        "SERIES",
        "BURNERS",
        "RUNNABLE/CPUS",
        "OPS/S",
        "RATIO",
        "P99",
        "DIAGNOSIS",
        "EVIDENCE",
    ]);
    for s in &n.series {
        for st in &s.steps {
            t.rows.push(vec![
                s.lock.to_string(),
                s.placement.label().to_string(),
                st.burners.to_string(),
                format!("{}/{}", st.runnable_threads, st.cpus),
                render::summary_cell(&st.ops_per_sec),
                match &st.ratio {
                    Some(c) => render::comparison_cell(Some(c)),
                    None => format!("{:.3}", st.ratio_to_first),
                },
                duration_ns(st.latency_p99_ns as f64),
                st.diagnosis.label().into(),
                st.reason.clone(),
            ]);
        }
    }
    t
}

// ---------------------------------------------------------------------------------------
// Exports.

/// Raw numbers, one row per step of each round (the reference first): the CSV export.
pub fn data(r: &NeighborsReport) -> Table {
    let mut t = Table::new(&[
        "round",
        "burners",
        "reference",
        "workers",
        "runnable_threads",
        "cpus",
        "ops_per_sec",
        "ratio_to_first",
        "time_per_op_ns",
        "latency_p50_ns",
        "latency_p99_ns",
        "latency_max_ns",
        "worker_involuntary_switches_per_sec",
        "worker_voluntary_switches_per_sec",
        "worker_run_delay_share",
        "holder_preemptions",
        "long_waits",
        "burner_ops_per_sec",
        "steal_share",
        "diagnosis",
        "pinning_ok",
        "interrupted",
    ]);
    let raw = |x: Option<f64>| x.map_or_else(|| NONE.to_string(), |x| x.to_string());
    let row = |s: &Step, reference: bool| {
        vec![
            s.round.to_string(),
            s.burners.to_string(),
            reference.to_string(),
            s.workers.to_string(),
            s.runnable_threads.to_string(),
            s.cpus.to_string(),
            s.ops_per_sec.to_string(),
            s.ratio_to_first.to_string(),
            s.time_per_op_ns.to_string(),
            s.latency_p50_ns.to_string(),
            s.latency_p99_ns.to_string(),
            s.latency_max_ns.to_string(),
            s.worker_involuntary_switches_per_sec.to_string(),
            s.worker_voluntary_switches_per_sec.to_string(),
            raw(s.worker_run_delay_share),
            raw(s.holder_preemptions.map(|x| x as f64)),
            raw(s.long_waits.map(|x| x as f64)),
            s.burner_ops_per_sec.to_string(),
            raw(s.steal_share),
            s.diagnosis.label().into(),
            s.pinning_ok.to_string(),
            s.interrupted.to_string(),
        ]
    };
    if let Some(rf) = &r.reference {
        t.push(row(rf, true));
    }
    for s in &r.steps {
        t.push(row(s, false));
    }
    t
}

/// The study's neighbors section: what was measured, throughput against burners per series
/// (markers coloured by diagnosis), the series table, and the runs' notes once each.
impl StudySection for NeighborsSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        let mut b = vec![
            Block::Intro(section_intro(self)),
            Block::Chart(throughput_chart(self)),
            Block::Table(series(self)),
        ];
        let mut notes: Vec<&String> = Vec::new();
        for run in &self.runs {
            for x in &run.notes {
                if !notes.contains(&x) {
                    notes.push(x);
                }
            }
        }
        b.extend(notes.into_iter().map(|x| Block::Note(x.clone())));
        b
    }

    fn finding(&self, _smt: bool) -> Option<Finding> {
        Some(super::verdict::finding(self))
    }
}

/// Worker throughput against the burner count, one line per series, log scale; each
/// point's marker coloured by its step's diagnosis.
fn throughput_chart(n: &NeighborsSection) -> String {
    use render::svg::{Point, Series};
    let series: Vec<Series> = n
        .series
        .iter()
        .map(|s| Series {
            name: match s.placement {
                SeriesPlacement::Unpinned => s.lock.to_string(),
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
    render::svg::line_chart(
        "neighbors-throughput",
        "Worker throughput vs CPU burners (log scale)",
        "burners",
        "ops/s",
        &series,
        &legend,
        true,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of 2 rounds over 0–2 burners on the fake engine.
    fn fake_run() -> NeighborsReport {
        use super::super::{BurnerMode, BurnerPlacement, HotPage, NeighborsConfig, Worker};
        use crate::burn::BurnerKind;
        use crate::burn::workload::BurnSpec;
        use crate::engine::{FakeEngine, RunSpec};
        use crate::locks::LockKind;
        use crate::placement::{Request, Scope};
        let topo = crate::topology::fixture::topology(2, 2, false);
        let spec = RunSpec::new(
            std::time::Duration::ZERO,
            std::time::Duration::from_millis(10),
        )
        .unwrap();
        let cfg = NeighborsConfig::new(2, Request::Os, Scope::Package, spec)
            .unwrap()
            .with_burners(
                vec![0, 1, 2],
                BurnSpec::new(BurnerKind::Prime),
                BurnerPlacement::Os,
                BurnerMode::Thread,
            )
            .unwrap()
            .with_repeat(2)
            .unwrap();
        let make = |_: &crate::placement::Plan| -> anyhow::Result<Box<dyn Worker>> {
            Ok(Box::new(HotPage::new(LockKind::Ticket, 2)))
        };
        let engine = FakeEngine::new(3).with_topology(&topo);
        super::super::run(&engine, &topo, &cfg, &make, &mut |_| {}).unwrap()
    }

    /// The CSV has one row per step of each round, raw numbers a CSV reader parses back;
    /// the Markdown has the step table.
    #[test]
    fn exports_write_csv_and_markdown_that_parse_back() {
        use crate::render::export::Exports;
        let r = fake_run();
        let text = crate::render::terminal::draw(&blocks(&r));
        assert!(text.contains("Over 2 rounds"), "{text}");
        let d = tempfile::tempdir().unwrap();
        let ex = Exports {
            json: None,
            csv: Some(d.path().join("n.csv")),
            markdown: Some(d.path().join("n.md")),
        };
        ex.check().unwrap();
        ex.write(|| export(&r)).unwrap();
        let mut rd = csv::Reader::from_path(d.path().join("n.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        let steps: Vec<&Step> = r.reference.iter().chain(&r.steps).collect();
        assert_eq!(rows.len(), steps.len());
        for (row, s) in rows.iter().zip(steps) {
            assert_eq!(
                row[col("ops_per_sec")].parse::<f64>().unwrap(),
                s.ops_per_sec
            );
            assert_eq!(row[col("burners")].parse::<usize>().unwrap(), s.burners);
            assert_eq!(row[col("round")].parse::<usize>().unwrap(), s.round);
        }
        let md = std::fs::read_to_string(d.path().join("n.md")).unwrap();
        assert!(md.starts_with("# smtlab neighbors\n"), "{md}");
        assert!(md.contains("| ROUND | BURNERS | WORKERS |"), "{md}");
    }
}
