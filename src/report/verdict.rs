//! The verdict: "keep HT on?" per workload class, and the findings behind it. Pure: a
//! [`Report`] in, a [`Verdict`] out; built once by the study and stored in the JSON, so
//! re-rendering never changes it.
//!
//! Rules every sentence here follows:
//! - it is rendered from an [`Evidence`](crate::conclusion::Evidence) that carries the numbers it cites (ratio,
//!   interval, run count, which runs);
//! - a comparison is a loss, no effect, a gain or inconclusive
//!   ([`crate::stats::Comparison`]): an interval that reaches across a threshold is
//!   inconclusive, never "no effect" (Altman & Bland, BMJ 1995: absence of evidence is not
//!   evidence of absence);
//! - a mechanism (SMT sharing, time slicing, preemption) is named only when the run
//!   controlled the placement that would cause it or measured its signs (run-queue wait,
//!   involuntary switches, long lock holds); hardware causes inside a core (fill buffers,
//!   store queues) are never named; IPC is cited only for a workload whose runs counted
//!   cycles and instructions (yield's split), never inferred;
//! - what was not measured is listed with the reason;
//! - a row of several workloads (or scanner scenarios) stands on the per-round median of
//!   their ratios, a true median, and lists each with its interval widened for being one
//!   of k (Bonferroni); when those intervals point different ways (a gain beside a loss or
//!   beside no effect) the row answers "depends on the workload" and names them, so
//!   neither the best nor the worst member decides alone;
//! - a run whose own records say it was disturbed (busy CPUs before it, steal, threads off
//!   their CPUs) answers nothing: its row is inconclusive with that reason.

use super::{
    Answer, HtAnswer, PhaseName, PhaseStatus, Report, SeriesPlacement, Status, Verdict,
    WorkloadClass,
};
use crate::conclusion::{AnswerCtx, Conclusions, Gate};
use crate::experiments::smt_yield::model::YieldSection;
use crate::experiments::{c2c, compare, lockscan, neighbors, oltp, rwcache, smt_yield};
use crate::render::count;

/// The version of the rules [`build`] follows, stored with every verdict. Raised whenever
/// a change here or in an experiment's answer row can give a stored run another answer,
/// so that a file's answers can be told to be older than the build reading it.
/// 1: rows count every member, fleet answers no firmer than the hosts', locks beside scans
/// from the shared core's combined progress, every row gated by its runs' quality,
/// disturbed rounds dropped.
pub const RULES: u32 = 1;

/// Builds the verdict from everything else in the report.
pub fn build(r: &Report) -> Verdict {
    let smt = r.smt.threads_per_core > 1;
    let findings = findings(r, smt);
    let no_smt = no_smt_reason(r);
    // Each experiment's rows from its section, or why it has none, in the table's order;
    // the yield, inserts and command rows through their gates (the phases' own quality
    // records; lockscan gates its row itself).
    fn ctx<'a>(smt: bool, missing: &'a str, no_smt: &'a str) -> AnswerCtx<'a> {
        AnswerCtx {
            smt,
            missing,
            no_smt,
        }
    }
    let mut answers: Vec<Answer> = YieldSection::answers(
        r.smt_yield.as_ref(),
        &ctx(smt, &phase_reason(r, smt_yield::PHASE), &no_smt),
    )
    .into_iter()
    .map(|a| {
        let kinds: &[smt_yield::WorkloadKind] = match a.class {
            WorkloadClass::Compute => &[smt_yield::WorkloadKind::ComputeRuler],
            WorkloadClass::Memory => &[smt_yield::WorkloadKind::MemoryRuler],
            WorkloadClass::Locks => &[smt_yield::WorkloadKind::Lock],
            _ => &[],
        };
        gated(a, r.smt_yield.as_ref().map(|y| yield_gate(y, kinds)))
    })
    .collect();
    answers.push(lockscan::verdict::answer(
        r.lockscan.as_ref(),
        smt,
        &no_smt_reason(r),
        &phase_reason(r, lockscan::PHASE),
    ));
    answers.extend(
        oltp::model::OltpSection::answers(
            r.oltp.as_ref(),
            &ctx(smt, &phase_reason(r, oltp::PHASE), &no_smt),
        )
        .into_iter()
        .map(|a| gated(a, r.oltp.as_ref().map(|o| inserts_gate(&o.result)))),
    );
    let mut cache = rwcache::view::answer(
        r.rwcache.as_ref(),
        smt,
        &no_smt_reason(r),
        &phase_reason(r, rwcache::PHASE),
    );
    // rwcache answers no row (it never compares one thread per core with both siblings),
    // but its runs' quality is stored with the row as the other rows' is.
    if smt && let Some(w) = r.rwcache.as_ref() {
        cache.gate = Some(rwcache_gate(&w.result));
    }
    answers.push(cache);
    answers.extend(
        compare::model::CompareSection::answers(
            r.compare.as_ref(),
            &ctx(smt, &command_missing(r), &no_smt),
        )
        .into_iter()
        .map(|a| gated(a, r.compare.as_ref().map(|c| command_gate(&c.result)))),
    );
    let headline = headline(r, smt, &answers);
    Verdict {
        headline,
        answers,
        findings,
        not_measured: not_measured(r, smt),
        rules: RULES,
    }
}

/// A row whose answer or evidence the recomputation changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub class: super::WorkloadClass,
    /// The stored row; None when the file had no row for the class.
    pub before: Option<Answer>,
    pub after: Answer,
}

/// Every answer made again from the stored runs with this build's rules, and the rows that
/// came out differently (answer, or the ratio and interval it rests on). Only the stored
/// runs are read: what the runs did not record (the scanner's progress before it was
/// kept, a gate's preflight before it was stored) stays unknown, and the rows say so.
pub fn recompute(r: &Report) -> (Verdict, Vec<Change>) {
    let v = build(r);
    let changes = v
        .answers
        .iter()
        .filter_map(|after| {
            let before = r.verdict.answers.iter().find(|a| a.class == after.class);
            let same = before.is_some_and(|b| {
                b.answer == after.answer
                    && match (&b.evidence, &after.evidence) {
                        (Some(x), Some(y)) => same_comparison(&x.comparison, &y.comparison),
                        (None, None) => true,
                        _ => false,
                    }
            });
            (!same).then(|| Change {
                class: after.class,
                before: before.cloned(),
                after: after.clone(),
            })
        })
        .collect();
    (v, changes)
}

/// The same comparison, up to the last bits a JSON round trip may change (serde_json
/// reads a float to within one unit in the last place unless built with
/// `float_roundtrip`).
fn same_comparison(a: &crate::stats::Comparison, b: &crate::stats::Comparison) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
    a.n == b.n
        && a.effect == b.effect
        && a.method == b.method
        && close(a.estimate, b.estimate)
        && close(a.low, b.low)
        && close(a.high, b.high)
        && close(a.confidence, b.confidence)
}

/// Said where a file's answers were made by older rules than this build's: which build
/// made them, and how to have them made again. None for a file of this build's rules.
pub fn older_rules_note(r: &Report) -> Option<String> {
    (r.verdict.rules < RULES).then(|| {
        format!(
            "the answers in this file were made by smtlab {} (git {}) under {} (this build: rules {RULES}); they are shown as that build made them: `smtlab report --recompute` makes them again from the stored runs with this build's rules and says what changed",
            r.provenance.smtlab_version,
            r.provenance.git_revision,
            if r.verdict.rules == 0 {
                "rules from before they were numbered".to_string()
            } else {
                format!("rules {}", r.verdict.rules)
            }
        )
    })
}

/// The order findings are listed in: the lock experiments first, then what explains them
/// (c2c's handoff ceiling), then the rulers and the user's command. Sections not listed
/// here follow in the report's order.
const FINDING_ORDER: [PhaseName; 7] = [
    lockscan::PHASE,
    neighbors::PHASE,
    oltp::PHASE,
    rwcache::PHASE,
    c2c::PHASE,
    smt_yield::PHASE,
    compare::PHASE,
];

/// Every section's finding, in [`FINDING_ORDER`].
fn findings(r: &Report, smt: bool) -> Vec<super::Finding> {
    let mut sections: Vec<_> = r
        .sections()
        .into_iter()
        .filter_map(|s| Some((s.phase, s.content?)))
        .collect();
    sections.sort_by_key(|(phase, _)| {
        FINDING_ORDER
            .iter()
            .position(|p| p == phase)
            .unwrap_or(FINDING_ORDER.len())
    });
    sections
        .into_iter()
        .filter_map(|(_, s)| s.finding(smt))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Each row's gate: its runs' own quality records.

/// `a` through `gate` where its section ran.
fn gated(a: Answer, gate: Option<Gate>) -> Answer {
    match gate {
        Some(g) => a.gated(g),
        None => a,
    }
}

/// The yield rows: the phase's look at the CPUs before the runs, steal and strays over the
/// workloads of the row's kinds.
fn yield_gate(y: &smt_yield::YieldSection, kinds: &[smt_yield::WorkloadKind]) -> Gate {
    let members: Vec<_> = y
        .result
        .workloads
        .iter()
        .filter(|w| kinds.contains(&w.class))
        .collect();
    // Rounds disturbed while they ran were dropped from the yields already (each with its
    // reason in the workload's ratio); what is left was checked for them.
    Gate::new(
        &["preflight", "steal", "pinning", "disturbed-rounds"],
        smt_yield::verdict::yield_quality(y, &members),
    )
}

/// The inserts row: oltp's look at the clients' CPUs before the runs, steal during them,
/// clients off their CPUs, and the row check (every committed row in the table).
pub(crate) fn inserts_gate(o: &crate::oltp::OltpReport) -> Gate {
    let mut problems = o.hygiene.clone();
    let steal = o
        .runs
        .iter()
        .filter_map(|r| r.steal_share)
        .fold(0.0f64, f64::max);
    if steal > crate::hygiene::STEAL_WARN {
        problems.push(format!(
            "the hypervisor took up to {} of the clients' CPUs' time during the runs (steal)",
            crate::render::percent(steal, 0)
        ));
    }
    let strays = o.runs.iter().filter(|r| r.pinning_violations > 0).count();
    if strays > 0 {
        problems.push(format!(
            "{} saw a client thread on a CPU outside its layout, so the layouts did not hold",
            count(strays, "run")
        ));
    }
    let lost = o.runs.iter().filter(|r| !r.rows_verified).count();
    if lost > 0 {
        problems.push(format!(
            "{} failed the row check (the table did not hold exactly the rows committed)",
            count(lost, "run")
        ));
    }
    Gate::new(&["preflight", "steal", "pinning", "rows"], problems)
}

/// The read-mostly cache row: threads on their CPUs (getrusage(2) CPU time against wall
/// time), steal (proc(5), `/proc/stat`) and pinning, over rwcache's results.
pub(crate) fn rwcache_gate(w: &rwcache::RwcacheReport) -> Gate {
    let mut problems = Vec::new();
    if let Some(c) = rwcache::caution(&w.results) {
        if let (Some(lo), Some(hi)) = (c.on_cpu_low, c.on_cpu_high) {
            problems.push(format!(
                "pinned threads were on their CPUs only {} of the time in {} of {}",
                crate::render::percent_bounds(lo, hi),
                c.starved_results,
                count(c.results, "result")
            ));
        }
        if let Some(s) = c.steal_max {
            problems.push(format!(
                "the hypervisor took up to {} of the measured CPUs' time during a run (steal)",
                crate::render::percent_bounds(s, s)
            ));
        }
    }
    let strays = w.results.iter().filter(|x| !x.pinning_ok).count();
    if strays > 0 {
        problems.push(format!(
            "{} saw a thread off the CPUs it was pinned to",
            count(strays, "result")
        ));
    }
    Gate::new(&["on-cpu", "steal", "pinning"], problems)
}

/// The command row: compare's look at the placements' CPUs before the runs.
pub(crate) fn command_gate(c: &compare::CompareReport) -> Gate {
    Gate::new(&["preflight"], c.preflight.clone())
}

// ---------------------------------------------------------------------------------------
// The answer table.

/// Why a machine without SMT siblings answers no row.
pub(crate) fn no_smt_reason(r: &Report) -> String {
    format!(
        "{}, so no run could put two threads on one core",
        r.smt.sentence.trim_end_matches('.')
    )
}

/// Why a phase produced no section: its record's reason, or "did not run".
/// Why the "your command" row has no section: a study skips the phase when it was given no
/// command (or none this machine can compare), and that reason is the whole story, in the
/// phase's words ("no command was given: …"), not "the compare phase skipped: …" as if
/// something had gone missing; any other state is said as for other phases.
fn command_missing(r: &Report) -> String {
    r.phases
        .iter()
        .find(|p| p.phase == compare::PHASE && p.status == PhaseStatus::Skipped)
        .and_then(|p| p.reason.clone())
        .unwrap_or_else(|| phase_reason(r, compare::PHASE))
}

pub(crate) fn phase_reason(r: &Report, phase: PhaseName) -> String {
    r.phases
        .iter()
        .find(|p| p.phase == phase)
        .map(|p| {
            format!(
                "the {phase} phase {}{}",
                p.status.label(),
                p.reason
                    .as_deref()
                    .map(|x| format!(": {x}"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_else(|| format!("the {phase} phase did not run"))
}

// ---------------------------------------------------------------------------------------
// The headline.

fn headline(r: &Report, smt: bool, answers: &[Answer]) -> String {
    let what = if r.machine.hypervisor != "none" {
        format!(
            "{} vCPUs under {}",
            r.machine.online_cpus, r.machine.hypervisor
        )
    } else {
        format!("{} CPUs", r.machine.online_cpus)
    };
    let mut parts = Vec::new();
    if smt {
        parts.push(format!(
            "On this machine ({what}, {} threads per core on {} of {} cores):",
            r.smt.threads_per_core, r.smt.cores_with_siblings, r.machine.cores
        ));
    } else {
        parts.push(format!(
            "On this machine ({what}, no SMT siblings): HT cannot be tested here — every \
             logical CPU is its own core, so no row of the answer table could be measured."
        ));
    }
    let answered: Vec<String> = answers
        .iter()
        .filter(|a| a.answer != HtAnswer::NotMeasured)
        .filter_map(|a| {
            let e = a.evidence.as_ref()?;
            Some(format!(
                "{} for {} ({})",
                a.answer.label(),
                a.class.label(),
                e.comparison
            ))
        })
        .collect();
    if smt {
        if answered.is_empty() {
            parts.push(
                "no workload class could be answered (the answer table says why for each).".into(),
            );
        } else {
            parts.push(format!("{}.", capitalise(&answered.join("; "))));
        }
    }
    if let Some(s) = r
        .neighbors
        .as_ref()
        .and_then(neighbors::verdict::largest_loss)
    {
        parts.push(s);
    } else if r.neighbors.is_some() {
        parts.push(
            "No neighbours step's interval lay wholly below 0.8× of its unloaded rate.".into(),
        );
    }
    if r.neighbors
        .as_ref()
        .is_some_and(neighbors::verdict::disturbed)
    {
        parts.push("Caution: other processes competed for these CPUs during the study (workers waited for a CPU even without burners), so the numbers are noisier than on a quiet machine.".into());
    }
    // The same caution the rwcache section opens its verdict with, so that the headline
    // and the section say the same thing.
    if let Some(c) = r.rwcache.as_ref().and_then(|w| w.result.caution.as_ref()) {
        parts.push(format!(
            "Caution: other work shared the CPUs during the read-mostly cache runs ({}): \
             their scheme comparisons may not hold on a quiet machine.",
            c.figures()
        ));
    }
    // Every row's own gate, not the neighbours alone: the rows whose runs were disturbed.
    let disturbed: Vec<&str> = answers
        .iter()
        .filter(|a| a.gate.as_ref().is_some_and(|g| !g.clean()))
        .map(|a| a.class.label())
        .collect();
    if !disturbed.is_empty() {
        parts.push(format!(
            "Caution: the runs behind {} were disturbed (their rows say how), so {} held back as inconclusive.",
            disturbed.join(", "),
            if disturbed.len() == 1 { "that row is" } else { "those rows are" }
        ));
    }
    if r.status == Status::Partial {
        parts.push("The study was stopped before it finished: this report holds the phases before it and the runs the interrupted phase finished; later phases did not run.".into());
    }
    let mut h = parts.join(" ");
    if r.synthetic {
        h = format!("SYNTHETIC DATA from the fake engine, not measurements. {h}");
    }
    h
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Not measured.

fn not_measured(r: &Report, smt: bool) -> Vec<String> {
    let mut v = Vec::new();
    if !smt {
        v.push(format!(
            "SMT sibling effects: {}. Run `smtlab study` on a machine with SMT to answer the HT question for your hardware.",
            no_smt_reason(r)
        ));
    } else {
        v.push("An HT-off run: every comparison here ran with SMT on, and `one-per-core` (one thread on each of the same cores) stands in for HT off; with SMT switched off the kernel also has fewer logical CPUs to spread other work over.".into());
    }
    if r.machine.hypervisor != "none" {
        v.push(format!(
            "The host's topology and CPU: under a hypervisor ({}) these vCPUs may themselves be SMT siblings or share cores with other guests, without the guest seeing it; an emulated CPU's timings say nothing about real hardware.",
            r.machine.hypervisor
        ));
    }
    if r.machine.hardware_counters.starts_with("unavailable") {
        v.push("Hardware counters (IPC, cache misses, fill buffers): the kernel exposes no CPU PMU here, so no sentence names a resource inside a core; mechanisms are inferred from scheduling evidence (context switches, run-queue wait, long lock holds) only.".into());
    }
    if r.machine.frequency_governor == "unavailable" {
        v.push("CPU frequency: no cpufreq interface, so the clock could be neither read nor fixed; compared runs were interleaved so drift spreads evenly.".into());
    }
    for p in &r.phases {
        if matches!(
            p.status,
            PhaseStatus::Skipped | PhaseStatus::Failed | PhaseStatus::NotRun
        ) {
            v.push(format!(
                "{} ({}): {}",
                p.phase,
                p.status.label(),
                p.reason.as_deref().unwrap_or("no reason recorded")
            ));
        }
    }
    if let Some(n) = &r.neighbors {
        let controlled = n
            .series
            .iter()
            .any(|s| s.placement == SeriesPlacement::SiblingBurners);
        if !controlled {
            let why = n.sibling_skipped.as_deref().map_or(String::new(), |w| {
                format!(" The controlled series (burners pinned to the workers' siblings) did not run: {w}.")
            });
            v.push(format!("Controlled placement in neighbors: its workers and burners were placed by the scheduler, so it can show oversubscription but cannot establish SMT sharing.{why}"));
        }
        for run in n.runs.iter().take(1) {
            for (b, why) in &run.skipped {
                v.push(format!("neighbors with {}: {why}", count(*b, "burner")));
            }
        }
    }
    if let Some(o) = &r.oltp {
        v.extend(oltp::verdict::not_measured(o));
    }
    if let Some(c) = &r.c2c
        && !c.cpus_left_out.is_empty()
    {
        v.push(format!(
            "c2c on CPUs {}: left out to fit the time budget (the first core's siblings and one CPU per core were measured)",
            c.cpus_left_out
        ));
    }
    v
}

#[cfg(test)]
/// The fake SMT study as the previous build wrote it: no rule version, no gates, no
/// scanner progress in lockscan, and that build's answer for locks beside scans —
/// turn HT off from the lock thread's loss alone.
pub(crate) fn previous_schema() -> String {
    let r = crate::study::fixture::smt().clone();
    let mut v = serde_json::to_value(&r).unwrap();
    let verdict = v["verdict"].as_object_mut().unwrap();
    verdict.remove("rules");
    for a in verdict["answers"].as_array_mut().unwrap() {
        a.as_object_mut().unwrap().remove("gate");
        if a["class"] == "locks-beside-scans" {
            a["answer"] = "turn-ht-off".into();
        }
    }
    for s in v["lockscan"]["result"]["results"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        for f in [
            "scan_bytes_per_sec",
            "scan_alone_bytes_per_sec",
            "scan_ratios",
            "core_yield_ratios",
            "core_yield",
            "steal_share",
        ] {
            s.remove(f);
        }
        for t in s["threads"].as_array_mut().unwrap() {
            t.as_object_mut().unwrap().remove("scan_bytes_per_sec");
        }
    }
    serde_json::to_string_pretty(&v).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conclusion::WorkloadClass;
    use crate::experiments::oltp::verdict::tests::postgres_with_yield;
    use crate::experiments::smt_yield::WorkloadKind;
    use crate::experiments::smt_yield::verdict::tests::{rulers_with_yield, set_yield, tight};
    use crate::study::fixture::{answer, assert_cites_only_what_was_measured, no_smt, smt};

    #[test]
    fn a_no_smt_machine_answers_no_row_and_says_why() {
        let v = build(no_smt());
        assert_cites_only_what_was_measured(&v);
        assert!(
            v.headline.contains("HT cannot be tested here"),
            "{}",
            v.headline
        );
        for a in &v.answers {
            assert_eq!(a.answer, HtAnswer::NotMeasured, "{a:?}");
            assert!(
                a.reason.contains("no SMT siblings")
                    || a.reason.contains("one writer")
                    || (a.class == WorkloadClass::Command
                        && a.reason.contains("no command was given")),
                "{a:?}"
            );
        }
        // The oversubscription finding keeps its numbers: runnable threads, CPUs, ratio, n.
        let n = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("noisy"))
            .unwrap();
        assert!(n.observed.contains("runnable on"), "{}", n.observed);
        assert!(!n.evidence.is_empty());
        assert!(n.evidence.iter().all(|e| e.comparison.n >= 1));
    }

    #[test]
    fn without_smt_the_missing_sibling_series_is_listed_with_its_reason() {
        let v = build(no_smt());
        assert!(
            no_smt()
                .neighbors
                .as_ref()
                .unwrap()
                .series
                .iter()
                .all(|s| s.placement == SeriesPlacement::Unpinned)
        );
        assert!(
            v.not_measured
                .iter()
                .any(|n| n.contains("did not run: no SMT siblings")),
            "{:?}",
            v.not_measured
        );
    }

    /// The "your command" row of a study given no command says so first (nothing was
    /// skipped for want of anything but a command), in the phase's own words.
    #[test]
    fn the_command_row_without_a_command_says_none_was_given() {
        for r in [smt(), no_smt()] {
            let v = build(r);
            let a = answer(&v, WorkloadClass::Command);
            assert_eq!(a.answer, HtAnswer::NotMeasured);
            assert!(a.reason.starts_with("no command was given"), "{}", a.reason);
            let phase = r.phases.iter().find(|p| p.phase == compare::PHASE).unwrap();
            assert_eq!(Some(&a.reason), phase.reason.as_ref());
        }
    }

    /// rwcache's caution (threads off their CPUs, steal) is in the headline too, with its
    /// figures, not only in its section.
    #[test]
    fn the_headline_carries_rwcache_s_caution() {
        let mut r = smt().clone();
        assert!(!build(&r).headline.contains("read-mostly cache runs"));
        r.rwcache
            .as_mut()
            .expect("an rwcache section")
            .result
            .caution = Some(rwcache::Caution {
            starved_results: 3,
            results: 12,
            on_cpu_low: Some(0.42),
            on_cpu_high: Some(0.85),
            steal_max: Some(0.13),
        });
        let h = build(&r).headline;
        assert!(
            h.contains(
                "Caution: other work shared the CPUs during the read-mostly cache runs (pinned \
                 threads were on their CPUs only 42–85 % of the time in 3 of 12 results and the \
                 hypervisor took up to 13 % of their time (steal)): their scheme comparisons \
                 may not hold on a quiet machine."
            ),
            "{h}"
        );
    }

    /// oltp's look at the clients' CPUs found other work on them: printed, never stored,
    /// so the inserts row answered keep HT on from those runs. Now the warning is in the
    /// oltp report and the row is held back with it, the gate stored with the row.
    #[test]
    fn the_inserts_row_is_gated_by_oltps_hygiene_warnings() {
        let mut r = smt().clone();
        let o = r.oltp.as_mut().unwrap();
        postgres_with_yield(o, &[1.29, 1.30, 1.31, 1.30, 1.32]);
        let clean = build(&r);
        let a = answer(&clean, WorkloadClass::Inserts);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
        let g = a.gate.as_ref().unwrap();
        assert!(
            g.clean() && g.checked.contains(&"preflight".to_string()),
            "{g:?}"
        );
        let w = "other work was running on CPU 3 in the 0.25 s before the run (41% busy): its interference is part of these results";
        r.oltp.as_mut().unwrap().result.hygiene = vec![w.into()];
        let v = build(&r);
        let a = answer(&v, WorkloadClass::Inserts);
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
        assert!(a.reason.contains(w), "{}", a.reason);
        assert_eq!(a.gate.as_ref().unwrap().problems, [w]);
        // Stored in results.json: the row read back carries its gate.
        let json = serde_json::to_value(&v).unwrap();
        let row = json["answers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["class"] == "inserts")
            .unwrap();
        assert_eq!(row["gate"]["problems"][0], w);
        // The headline's caution comes from this row, not from the neighbours.
        assert!(!crate::experiments::neighbors::verdict::disturbed(
            r.neighbors.as_ref().unwrap()
        ));
        assert!(
            v.headline
                .contains("Caution: the runs behind database inserts were disturbed"),
            "{}",
            v.headline
        );
        // Steal during the runs, a client off its CPUs and a failed row check each hold it
        // back too.
        for edit in [
            (|x: &mut crate::oltp::LayoutRun| x.steal_share = Some(0.2)) as fn(&mut _),
            |x| x.pinning_violations = 1,
            |x| x.rows_verified = false,
        ] {
            let mut r = smt().clone();
            let o = r.oltp.as_mut().unwrap();
            postgres_with_yield(o, &[1.29, 1.30, 1.31, 1.30, 1.32]);
            edit(&mut o.result.runs[3]);
            let v = build(&r);
            let a = answer(&v, WorkloadClass::Inserts);
            assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
            assert_eq!(a.gate.as_ref().unwrap().problems.len(), 1, "{a:?}");
        }
    }

    /// compare's look at the placements' CPUs (other work, steal) went into its notes only;
    /// the command row answered from those runs. The gate reads it.
    #[test]
    fn the_command_row_is_gated_by_compares_preflight() {
        let mut c = crate::experiments::compare::fixture::fixture();
        let clean = command_gate(&c);
        assert!(clean.clean());
        c.preflight = vec!["the hypervisor took 12% of CPU 1 (steal)".into()];
        let g = command_gate(&c);
        assert_eq!(g.checked, ["preflight"]);
        let row = Answer {
            class: WorkloadClass::Command,
            answer: HtAnswer::KeepHtOn,
            evidence: None,
            reason: "SMT yield of `my-app`: 1.25×".into(),
            section: Some(compare::PHASE),
            gate: None,
        };
        let a = gated(row, Some(g));
        assert_eq!(a.answer, HtAnswer::Inconclusive);
        assert!(a.reason.contains("(steal)"), "{}", a.reason);
    }

    /// A scanner scenario with a thread off its CPU, or steal during the runs: the
    /// locks-beside-scans row reads both.
    #[test]
    fn the_locks_beside_scans_row_is_gated_by_pinning_and_steal() {
        let r = smt().clone();
        let v = build(&r);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
        assert!(a.gate.as_ref().unwrap().clean());
        for steal in [false, true] {
            let mut r = smt().clone();
            let s = &mut r.lockscan.as_mut().unwrap().result.results[2];
            if steal {
                s.steal_share = Some(0.09);
            } else {
                s.pinning_ok = false;
            }
            let v = build(&r);
            let a = answer(&v, WorkloadClass::LocksBesideScans);
            assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
            let p = &a.gate.as_ref().unwrap().problems;
            assert!(
                p[0].contains(if steal { "(steal)" } else { "outside its own" }),
                "{p:?}"
            );
        }
    }

    /// rwcache's runs were checked (threads on their CPUs, steal, pinning) but its row
    /// stored no gate. It stores one now; the row stays not measured here, since rwcache
    /// never compares one thread per core with both siblings.
    #[test]
    fn the_read_mostly_cache_row_stores_rwcaches_gate() {
        let mut r = smt().clone();
        let results = &mut r.rwcache.as_mut().unwrap().result.results;
        results.truncate(12);
        for x in results.iter_mut() {
            x.oversubscribed = false;
        }
        assert_eq!(results.len(), 12, "the fake study's rwcache results");
        for (x, share) in results.iter_mut().zip([0.42, 0.60, 0.85]) {
            x.cpu_share = share;
        }
        results[5].steal_share_max = Some(0.13);
        results[7].pinning_ok = false;
        let v = build(&r);
        let a = answer(&v, WorkloadClass::ReadMostlyCache);
        assert_eq!(a.answer, HtAnswer::NotMeasured, "{}", a.reason);
        assert!(
            a.reason.contains("did not compare one thread per core"),
            "{}",
            a.reason
        );
        let g = a.gate.as_ref().expect("the row stores rwcache's gate");
        assert_eq!(g.checked, ["on-cpu", "steal", "pinning"]);
        assert_eq!(
            g.problems,
            [
                "pinned threads were on their CPUs only 42–85 % of the time in 3 of 12 results",
                "the hypervisor took up to 13 % of the measured CPUs' time during a run (steal)",
                "1 result saw a thread off the CPUs it was pinned to",
            ],
            "{g:?}"
        );
        let clean = build(smt());
        let g = answer(&clean, WorkloadClass::ReadMostlyCache).gate.clone();
        assert!(g.is_some_and(|g| g.clean()));
    }

    /// The yield rows were gated already; their gate is now stored with the row.
    #[test]
    fn the_yield_rows_store_their_gate() {
        let mut r = smt().clone();
        r.smt_yield.as_mut().unwrap().result.preflight = vec!["other work on CPU 2".into()];
        let v = build(&r);
        for class in [
            WorkloadClass::Compute,
            WorkloadClass::Memory,
            WorkloadClass::Locks,
        ] {
            let a = answer(&v, class);
            assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
            assert_eq!(a.gate.as_ref().unwrap().problems, ["other work on CPU 2"]);
            assert_eq!(
                a.reason.matches("held back as inconclusive").count(),
                1,
                "{}",
                a.reason
            );
        }
    }

    /// The headline names each answered row by its answer and class, whatever the row's
    /// answer: keep HT on (compute rulers, PostgreSQL inserts) or depends on the workload
    /// (a lock gaining beside one losing).
    #[test]
    fn the_headline_states_each_answered_row() {
        let mut r = smt().clone();
        rulers_with_yield(
            r.smt_yield.as_mut().unwrap(),
            &[1.29, 1.30, 1.31, 1.30, 1.32, 1.28, 1.30],
        );
        let v = build(&r);
        assert_eq!(
            answer(&v, WorkloadClass::Compute).answer,
            HtAnswer::KeepHtOn
        );
        assert!(
            v.headline.contains("Keep HT on for compute"),
            "{}",
            v.headline
        );
        let mut r = smt().clone();
        postgres_with_yield(
            r.oltp.as_mut().unwrap(),
            &[1.29, 1.30, 1.31, 1.30, 1.32, 1.28, 1.30],
        );
        let v = build(&r);
        assert!(
            v.headline.contains("keep HT on for database inserts"),
            "{}",
            v.headline
        );
        let mut r = smt().clone();
        set_yield(
            r.smt_yield.as_mut().unwrap(),
            &[
                ("hot-page/mutex", WorkloadKind::Lock, &tight(1.10)),
                ("hot-page/ttas", WorkloadKind::Lock, &tight(0.80)),
            ],
        );
        let v = build(&r);
        assert!(
            v.headline
                .contains("Depends on the workload for lock-heavy threads"),
            "{}",
            v.headline
        );
    }
}
