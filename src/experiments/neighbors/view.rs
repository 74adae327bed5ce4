//! neighbors' view: everything that turns its model into tables and sentences — the
//! terminal text ([`text`]), the study section's table ([`series`]), its finding and the
//! headline's largest loss ([`finding`], [`largest_loss`]), and the export document
//! ([`document`]). Pure.

use super::diagnosis::Diagnosis;
use super::model::{
    NeighborsReport, NeighborsSection, NeighborsSeries, SeriesPlacement, SeriesStep, Step,
};
use crate::conclusion::{Evidence, Finding, PhaseName, SectionCtx, StudySection};
use crate::render::blocks::Block;
use crate::render::count;
use crate::render::export::{Document, Section};
use crate::render::{self, NONE, Table, duration_ns, si};
use crate::stats::Effect;

/// The phase that fills this section; results.json names it `"neighbors"`.
pub const PHASE: PhaseName = PhaseName::new("neighbors");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Noisy neighbours: a hot lock vs CPU burners (neighbors)";

// ---------------------------------------------------------------------------------------
// The terminal.

/// One row per step (burners → ops/s and the evidence), then one diagnosis line per step;
/// with several rounds, also one row per burner count over them, its ratio paired with
/// each round's first step.
pub fn text(r: &NeighborsReport) -> String {
    let mut o = String::new();
    o.push_str(&header(r));
    o.push('\n');
    o.push_str(&steps(r).text());
    for l in legend(r) {
        o.push_str(&l);
        o.push('\n');
    }
    if let Some(t) = rounds(r) {
        o.push_str(&format!("\n{}:\n", rounds_title(r)));
        o.push_str(&t.text());
        o.push_str("\nDiagnosis (most rounds; evidence of the round nearest the median):\n");
    } else {
        o.push_str("\nDiagnosis:\n");
    }
    for l in diagnosis_lines(r) {
        o.push_str(&format!("  {l}\n"));
    }
    o.push_str(&counters_text(r));
    for n in notes(r) {
        o.push_str(&format!("note: {n}\n"));
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::view::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    o
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

/// The workers' counters per step, summed over the workers; empty when no step counted.
fn counters_text(r: &NeighborsReport) -> String {
    use crate::counters::view as counters;
    let steps: Vec<(String, &Step)> = r
        .reference
        .iter()
        .map(|s| ("ref".to_string(), s))
        .chain(r.steps.iter().map(|s| (s.burners.to_string(), s)))
        .collect();
    let counts = || steps.iter().map(|(_, s)| s.worker_counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
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
    let mut o = String::from("\nWorker counters per step (summed over the workers):\n");
    o.push_str(&table.text());
    if let Some(n) = counters::multiplexing_note(counts()) {
        o.push_str(&format!("note: {n}\n"));
    }
    o
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

/// The export document: the model, one row per step, and the terminal's tables.
pub fn document(r: &NeighborsReport) -> Document {
    let mut sections = vec![Section {
        heading: "Steps".into(),
        text: std::iter::once(header(r)).chain(legend(r)).collect(),
        table: Some(steps(r)),
    }];
    if let Some(t) = rounds(r) {
        sections.push(Section {
            heading: rounds_title(r),
            text: Vec::new(),
            table: Some(t),
        });
    }
    sections.push(Section {
        heading: "Diagnosis".into(),
        text: diagnosis_lines(r)
            .into_iter()
            .chain(notes(r).into_iter().map(|n| format!("Note: {n}")))
            .collect(),
        table: None,
    });
    Document {
        title: "smtlab neighbors".into(),
        json: serde_json::to_value(r).unwrap_or(serde_json::Value::Null),
        data: data(r),
        sections,
    }
}

// ---------------------------------------------------------------------------------------
// The study's finding and the headline's largest loss.

/// What neighbors showed, for the study's findings: per series its unloaded rate and its
/// lowest step, which locks lost once runnable threads outnumbered the CPUs, and what the
/// controlled sibling series says.
pub fn finding(n: &NeighborsSection) -> Finding {
    let mut obs = Vec::new();
    let mut evidence = Vec::new();
    for s in &n.series {
        let Some(first) = s.steps.first() else {
            continue;
        };
        let placement = match s.placement {
            SeriesPlacement::Unpinned => "unpinned".to_string(),
            SeriesPlacement::SiblingBurners => "burners on the workers' siblings".to_string(),
        };
        let mut line = format!(
            "`{}` ({placement}) with {}: {} ops/s with {}",
            s.lock,
            placed_workers(s.placement, s.workers_in(n)),
            crate::render::pm_n(&first.ops_per_sec),
            count(first.burners, "burner"),
        );
        if let Some((worst, c)) = s
            .steps
            .iter()
            .filter(|st| st.burners != first.burners)
            .filter_map(|st| Some((st, st.ratio?)))
            .min_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate))
        {
            line.push_str(&format!(
                "; lowest at {} ({} runnable on {}): {}, diagnosis `{}`",
                count(worst.burners, "burner"),
                worst.runnable_threads,
                count(worst.cpus, "CPU"),
                c.ratio_of("the 0-burner rate"),
                worst.diagnosis.label()
            ));
            evidence.push(Evidence {
                what: format!(
                    "`{}` ops/s with {} ÷ with {}",
                    s.lock,
                    placed_burners(s.placement, worst.burners),
                    count(first.burners, "burner")
                ),
                runs: format!("neighbors ({placement}), {} rounds", c.n),
                comparison: c,
            });
        }
        obs.push(line);
    }
    // Which locks lost at a step with more runnable threads than CPUs, and which did not.
    let mut lost = Vec::new();
    let mut slowed = Vec::new();
    let mut kept = Vec::new();
    for s in &n.series {
        if let Some(c) = s
            .steps
            .iter()
            .filter(|st| st.runnable_threads > st.cpus)
            .filter_map(|st| st.ratio)
            .min_by(|a, b| a.estimate.total_cmp(&b.estimate))
        {
            match c.effect {
                Effect::Loss => lost.push(format!("`{}`", s.lock)),
                Effect::SmallLoss => slowed.push(format!("`{}`", s.lock)),
                Effect::NoEffect | Effect::Gain => kept.push(format!("`{}`", s.lock)),
                Effect::Inconclusive => {}
            }
        }
    }
    let mut meaning = if !lost.is_empty() && !kept.is_empty() {
        format!(
            "With more runnable threads than CPUs, {} lost while {} did not: the lock, not only the thread count, decides what oversubscription costs; keep runnable lock-heavy threads at or below the CPUs they may use, or use the lock that kept its rate.",
            lost.join(", "),
            kept.join(", ")
        )
    } else if !lost.is_empty() {
        format!(
            "With more runnable threads than CPUs, {} lost: keep runnable lock-heavy threads at or below the CPUs they may use.",
            lost.join(", ")
        )
    } else if !kept.is_empty() && slowed.is_empty() {
        "No lock lost with more runnable threads than CPUs at these step lengths.".into()
    } else if slowed.is_empty() {
        "No step oversubscribed the CPUs with an interval narrow enough to call.".into()
    } else {
        String::new()
    };
    // At most two sentences: oversubscription (with any small loss as a clause of it), then
    // the controlled sibling series.
    if !slowed.is_empty() {
        let small = format!(
            "{} slowed by a measured amount smaller than the loss line (a small loss; see its interval)",
            slowed.join(", ")
        );
        meaning = match meaning.strip_suffix('.') {
            Some(m) => format!("{m}; {small}."),
            None => format!("With more runnable threads than CPUs, {small}."),
        };
    }
    if let Some(m) = sibling_meaning(n) {
        if !meaning.is_empty() {
            meaning.push(' ');
        }
        meaning.push_str(&m);
    }
    Finding {
        topic: "noisy neighbours (neighbors)".into(),
        observed: obs.join(". ") + ".",
        meaning,
        evidence,
    }
}

/// What the controlled sibling series says: per lock, its rate with every worker's sibling
/// busy (the last step) against the same round's rate without burners. Only this series
/// may name SMT sharing, the placement, not the scheduler, having put the burners there;
/// and only where that step's own diagnosis says so: a step diagnosed otherwise (other
/// processes competing for the CPUs, say) is named by its diagnosis.
fn sibling_meaning(n: &NeighborsSection) -> Option<String> {
    let mut lost = Vec::new();
    let mut lost_other = Vec::new();
    let mut kept = Vec::new();
    let mut unclear = Vec::new();
    for s in n
        .series
        .iter()
        .filter(|s| s.placement == SeriesPlacement::SiblingBurners)
    {
        let Some((st, c)) = s
            .steps
            .iter()
            .filter(|st| st.burners > 0)
            .max_by_key(|st| st.burners)
            .and_then(|st| Some((st, st.ratio?)))
        else {
            continue;
        };
        let what = format!(
            "`{}` ({} with {})",
            s.lock,
            c.ratio_of("of its rate without burners"),
            count(st.burners, "busy sibling")
        );
        match c.effect {
            Effect::Loss | Effect::SmallLoss if st.diagnosis == Diagnosis::SmtSharing => {
                lost.push(what)
            }
            Effect::Loss | Effect::SmallLoss => lost_other.push(format!(
                "{what}, diagnosed `{}` from {}",
                st.diagnosis.label(),
                st.reason
            )),
            Effect::NoEffect | Effect::Gain => kept.push(what),
            Effect::Inconclusive => unclear.push(what),
        }
    }
    if lost.is_empty() && lost_other.is_empty() && kept.is_empty() && unclear.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    if !lost.is_empty() {
        parts.push(format!(
            "{} lost: SMT sharing, since each thread had a CPU of its own and only the core was shared",
            lost.join(", ")
        ));
    }
    if !lost_other.is_empty() {
        parts.push(format!(
            "{} lost, but that step's diagnosis is not SMT sharing, so the loss is not put down to the busy siblings",
            lost_other.join("; ")
        ));
    }
    if !kept.is_empty() {
        parts.push(format!(
            "{} kept {} rate within its interval: a busy sibling did not slow {} beyond the ±5 % band",
            kept.join(", "),
            if kept.len() == 1 { "its" } else { "their" },
            if kept.len() == 1 { "it" } else { "them" }
        ));
    }
    if !unclear.is_empty() {
        parts.push(format!(
            "the interval was too wide to call for {}",
            unclear.join(", ")
        ));
    }
    Some(format!(
        "With one worker per core and burners pinned to their SMT siblings, {}.",
        parts.join("; ")
    ))
}

/// The neighbors step whose paired interval lies lowest, when it is a loss: what it cost,
/// what the diagnosis measured, and what the other locks of the same placement kept at the
/// same burner count.
pub fn largest_loss(n: &NeighborsSection) -> Option<String> {
    let (series, st, c) = n
        .series
        .iter()
        .flat_map(|s| {
            s.steps
                .iter()
                .filter(|st| st.burners > 0)
                .filter_map(move |st| Some((s, st, st.ratio?)))
        })
        .filter(|(_, _, c)| c.effect == Effect::Loss)
        .min_by(|a, b| a.2.high.total_cmp(&b.2.high))?;
    let others: Vec<String> = n
        .series
        .iter()
        .filter(|s| s.lock != series.lock && s.placement == series.placement)
        .filter_map(|s| {
            let o = s.steps.iter().find(|o| o.burners == st.burners)?;
            Some(format!("`{}` was at {}", s.lock, o.ratio?.ratio_of("")))
        })
        .collect();
    Some(format!(
        "Largest measured loss: with {} and {} the `{}` lock ran at {}{}{}.",
        placed_burners(series.placement, st.burners),
        placed_workers(series.placement, series.workers_in(n)),
        series.lock,
        c.ratio_of("its unloaded rate"),
        mechanism(series, st),
        if others.is_empty() {
            String::new()
        } else {
            format!("; at the same step {}", others.join(", "))
        }
    ))
}

/// `2 burners` (unpinned) or `2 burners pinned to the workers' SMT siblings`.
fn placed_burners(p: SeriesPlacement, b: usize) -> String {
    match p {
        SeriesPlacement::Unpinned => count(b, "burner"),
        SeriesPlacement::SiblingBurners => {
            format!("{} pinned to the workers' SMT siblings", count(b, "burner"))
        }
    }
}

/// `4 workers` (unpinned) or `2 workers one per core`.
fn placed_workers(p: SeriesPlacement, w: usize) -> String {
    match p {
        SeriesPlacement::Unpinned => count(w, "worker"),
        SeriesPlacement::SiblingBurners => format!("{} one per core", count(w, "worker")),
    }
}

/// The diagnosis as a clause, only where the run measured its signs. SMT sharing is named
/// only for the controlled series (burners pinned to the workers' siblings); with unpinned
/// threads the scheduler, not the run, chose who shared a core, so it is at most possible
/// (files written before `possibly-smt-sharing` existed may say `smt-sharing` there).
fn mechanism(s: &NeighborsSeries, st: &SeriesStep) -> String {
    match st.diagnosis {
        Diagnosis::None => String::new(),
        Diagnosis::SmtSharing | Diagnosis::PossiblySmtSharing
            if s.placement == SeriesPlacement::Unpinned =>
        {
            format!(
                " — possibly SMT sharing, but the workers and burners were unpinned, so the \
                 run did not control it ({})",
                st.reason
            )
        }
        Diagnosis::SmtSharing => format!(
            " — SMT sharing: the burners were pinned to the workers' siblings and the threads \
             had a CPU each ({})",
            st.reason
        ),
        d => format!(" — diagnosed `{}` from {}", d.label(), st.reason),
    }
}

/// Other processes competed for the CPUs: some series' first step (no burners) was
/// diagnosed external load.
pub fn disturbed(n: &NeighborsSection) -> bool {
    n.series.iter().any(|s| {
        s.steps
            .first()
            .is_some_and(|st| st.diagnosis == Diagnosis::ExternalLoad)
    })
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
        Some(finding(self))
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
        assert!(text(&r).contains("Over 2 rounds"), "{}", text(&r));
        let d = tempfile::tempdir().unwrap();
        let ex = Exports {
            json: None,
            csv: Some(d.path().join("n.csv")),
            markdown: Some(d.path().join("n.md")),
        };
        ex.check().unwrap();
        ex.write(|| document(&r)).unwrap();
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

    // -----------------------------------------------------------------------------------
    // The study's finding and the headline's largest loss, on a made-up section: per lock
    // an unpinned series (2 workers, 0–4 burners on 4 CPUs) and a controlled one (4
    // workers one per core, 0–4 burners on their siblings, 8 CPUs), every step at its
    // unloaded rate.

    fn section() -> NeighborsSection {
        use crate::locks::LockKind;
        use crate::stats::{Summary, Thresholds};
        let step = |burners: usize, workers: usize, cpus: usize| SeriesStep {
            burners,
            runnable_threads: workers + burners,
            cpus,
            ops_per_sec: Summary::of(&[1e6, 1.01e6, 0.99e6]).unwrap(),
            ratio_to_first: 1.0,
            latency_p99_ns: 1_000,
            diagnosis: Diagnosis::None,
            reason: "no sign of contention".into(),
            ratio: (burners > 0)
                .then(|| {
                    crate::stats::Comparison::of_paired_ratios(
                        &[0.99, 1.0, 1.01, 1.0, 0.995],
                        Thresholds::SLOWDOWN,
                        0.95,
                    )
                })
                .flatten(),
        };
        let locks = vec![LockKind::Ticket, LockKind::Adaptive];
        let mut series = Vec::new();
        for &lock in &locks {
            series.push(NeighborsSeries {
                lock,
                placement: SeriesPlacement::Unpinned,
                workers: Some(2),
                steps: (0..=4).map(|b| step(b, 2, 4)).collect(),
            });
            series.push(NeighborsSeries {
                lock,
                placement: SeriesPlacement::SiblingBurners,
                workers: Some(4),
                steps: (0..=4).map(|b| step(b, 4, 8)).collect(),
            });
        }
        NeighborsSection {
            workers: 2,
            locks,
            burner_steps: (0..=4).collect(),
            burner_kind: "prime".into(),
            burner_mode: super::super::BurnerMode::Thread,
            warmup_ns: 0,
            duration_ns: 10_000_000,
            repeat: 5,
            series,
            sibling_skipped: None,
            runs: Vec::new(),
        }
    }

    /// Makes the `placement` series' step with `burners` of the first lock a deep loss.
    fn deep_loss(
        n: &mut NeighborsSection,
        placement: SeriesPlacement,
        burners: usize,
        d: Diagnosis,
        reason: &str,
    ) {
        let s = n
            .series
            .iter_mut()
            .find(|s| s.placement == placement)
            .unwrap();
        let st = s.steps.iter_mut().find(|st| st.burners == burners).unwrap();
        st.diagnosis = d;
        st.reason = reason.into();
        st.ratio = Some(crate::stats::Comparison::from_ci(
            crate::stats::Ci {
                estimate: 0.2,
                low: 0.15,
                high: 0.25,
                confidence: 0.95,
            },
            5,
            crate::stats::Thresholds::SLOWDOWN,
        ));
    }

    #[test]
    fn the_worst_neighbours_step_not_oversubscribed_is_not_called_oversubscription() {
        let mut n = section();
        n.series
            .retain(|s| s.placement == SeriesPlacement::Unpinned);
        for s in &mut n.series {
            for st in &mut s.steps {
                st.runnable_threads = st.cpus;
                if st.burners > 0 {
                    st.diagnosis = Diagnosis::SharedResources;
                    st.reason = "2 runnable on 2 CPUs, 0% of time waiting for a CPU".into();
                    st.ratio = Some(crate::stats::Comparison::from_ci(
                        crate::stats::Ci {
                            estimate: 0.6,
                            low: 0.55,
                            high: 0.65,
                            confidence: 0.95,
                        },
                        5,
                        crate::stats::Thresholds::SLOWDOWN,
                    ));
                }
            }
        }
        let loss = largest_loss(&n).expect("a loss");
        assert!(loss.starts_with("Largest measured loss"), "{loss}");
        assert!(loss.contains("`shared-resources`"), "{loss}");
        let f = finding(&n);
        for s in [&loss, &f.observed, &f.meaning] {
            assert!(!s.contains("oversubscription"), "{s}");
            assert!(!s.contains("more runnable threads than CPUs"), "{s}");
        }
    }

    #[test]
    fn a_controlled_sibling_loss_names_smt_sharing_and_an_unpinned_one_does_not() {
        // Controlled: burners pinned to the workers' siblings.
        let mut n = section();
        deep_loss(
            &mut n,
            SeriesPlacement::SiblingBurners,
            4,
            Diagnosis::SmtSharing,
            "burners pinned to the workers' SMT siblings; 4 runnable on 4 CPUs",
        );
        let loss = largest_loss(&n).unwrap();
        assert!(
            loss.contains(
                "with 4 burners pinned to the workers' SMT siblings and 4 workers one per core"
            ),
            "{loss}"
        );
        assert!(
            loss.contains("— SMT sharing: the burners were pinned"),
            "{loss}"
        );
        let f = finding(&n);
        assert!(
            f.meaning
                .contains("SMT sharing, since each thread had a CPU of its own"),
            "{}",
            f.meaning
        );
        // At a glance: at most two sentences.
        assert!(f.meaning.matches(". ").count() <= 1, "{}", f.meaning);
        // Unpinned: at most possibly, whether the step says so or an old file says
        // `smt-sharing`.
        for d in [Diagnosis::PossiblySmtSharing, Diagnosis::SmtSharing] {
            let mut n = section();
            deep_loss(
                &mut n,
                SeriesPlacement::Unpinned,
                2,
                d,
                "6 runnable on 8 CPUs",
            );
            let loss = largest_loss(&n).unwrap();
            assert!(loss.contains("possibly SMT sharing"), "{loss}");
            assert!(!loss.contains("— SMT sharing"), "{loss}");
        }
    }

    /// The neighbours finding said "lost: SMT sharing" for a sibling-series step whose own
    /// diagnosis was `external-load` (the headline of the same report said external load).
    #[test]
    fn a_sibling_series_loss_diagnosed_external_load_is_not_called_smt_sharing() {
        let mut n = section();
        deep_loss(
            &mut n,
            SeriesPlacement::SiblingBurners,
            4,
            Diagnosis::ExternalLoad,
            "workers waited for a CPU 40 % of the time with no burner",
        );
        let f = finding(&n);
        assert!(!f.meaning.contains("lost: SMT sharing"), "{}", f.meaning);
        assert!(f.meaning.contains("external-load"), "{}", f.meaning);
    }

    #[test]
    fn disturbed_only_when_an_unloaded_step_saw_external_load() {
        let mut n = section();
        assert!(!disturbed(&n));
        n.series[0].steps[0].diagnosis = Diagnosis::ExternalLoad;
        assert!(disturbed(&n));
    }
}
