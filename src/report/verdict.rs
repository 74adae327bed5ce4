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

use super::{Answer, HtAnswer, PhaseName, PhaseStatus, Report, SeriesPlacement, Status, Verdict};
use crate::experiments::{c2c, compare, lockscan, neighbors, oltp, rwcache, smt_yield};
use crate::render::count;

/// Builds the verdict from everything else in the report.
pub fn build(r: &Report) -> Verdict {
    let smt = r.smt.threads_per_core > 1;
    let findings = findings(r, smt);
    let no_smt = no_smt_reason(r);
    let yield_missing = if smt {
        phase_reason(r, smt_yield::PHASE)
    } else {
        no_smt.clone()
    };
    let y = r.smt_yield.as_ref();
    let answers = vec![
        smt_yield::view::compute_answer(y, smt, &yield_missing),
        smt_yield::view::memory_answer(y, smt, &yield_missing),
        smt_yield::view::locks_answer(y, smt, &yield_missing),
        lockscan::view::answer(
            r.lockscan.as_ref(),
            smt,
            &no_smt_reason(r),
            &phase_reason(r, lockscan::PHASE),
        ),
        oltp::view::inserts_answer(r.oltp.as_ref(), smt, &phase_reason(r, oltp::PHASE), &no_smt),
        rwcache::view::answer(
            r.rwcache.as_ref(),
            smt,
            &no_smt_reason(r),
            &phase_reason(r, rwcache::PHASE),
        ),
        compare::view::command_answer(
            r.compare.as_ref(),
            smt,
            &phase_reason(r, compare::PHASE),
            &no_smt,
        ),
    ];
    let headline = headline(r, smt, &answers);
    Verdict {
        headline,
        answers,
        findings,
        not_measured: not_measured(r, smt),
    }
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
// The answer table.

/// Why a machine without SMT siblings answers no row.
pub(crate) fn no_smt_reason(r: &Report) -> String {
    format!(
        "{}, so no run could put two threads on one core",
        r.smt.sentence.trim_end_matches('.')
    )
}

/// Why a phase produced no section: its record's reason, or "did not run".
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
    if let Some(s) = r.neighbors.as_ref().and_then(neighbors::view::largest_loss) {
        parts.push(s);
    } else if r.neighbors.is_some() {
        parts.push(
            "No neighbours step's interval lay wholly below 0.8× of its unloaded rate.".into(),
        );
    }
    if r.neighbors.as_ref().is_some_and(neighbors::view::disturbed) {
        parts.push("Caution: other processes competed for these CPUs during the study (workers waited for a CPU even without burners), so the numbers are noisier than on a quiet machine.".into());
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
        v.extend(oltp::view::not_measured(o));
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
mod tests {
    use super::*;
    use crate::conclusion::WorkloadClass;
    use crate::experiments::oltp::view::answer_tests::postgres_with_yield;
    use crate::experiments::smt_yield::WorkloadKind;
    use crate::experiments::smt_yield::view::tests::{rulers_with_yield, set_yield, tight};
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
