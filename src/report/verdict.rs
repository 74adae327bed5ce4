//! The verdict: "keep HT on?" per workload class, and the findings behind it. Pure: a
//! [`Report`] in, a [`Verdict`] out; built once by the study and stored in the JSON, so
//! re-rendering never changes it.
//!
//! Rules every sentence here follows:
//! - it is rendered from an [`Evidence`] that carries the numbers it cites (ratio,
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
    Answer, Evidence, Finding, HtAnswer, PhaseName, PhaseStatus, Report, SeriesPlacement, Status,
    Verdict, WorkloadClass,
};
use crate::conclusion::{
    Aggregate, CONFIDENCE, Member, cmp_text, indicative_note, not_answered, pm, ratio_of,
};
use crate::experiments::diagnosis::Diagnosis;
use crate::experiments::{compare, oltp, smt_yield};
use crate::render::{count, si_sig, sig};
use crate::rwcache::SchemeKind;
use crate::stats::{Comparison, Effect, Thresholds};
use crate::topology::Proximity;

/// Builds the verdict from everything else in the report.
pub fn build(r: &Report) -> Verdict {
    let smt = r.smt.threads_per_core > 1;
    let mut findings = Vec::new();
    if let Some(l) = &r.lockscan {
        findings.push(lock_finding(l, smt));
    }
    if let Some(n) = &r.neighbors {
        findings.push(neighbors_finding(n));
    }
    if let Some(o) = &r.oltp {
        findings.push(oltp::view::oltp_finding(o, smt));
    }
    if let Some(w) = &r.rwcache {
        findings.push(rwcache_finding(w));
    }
    if let Some(c) = &r.c2c {
        findings.push(c2c_finding(c));
    }
    if let Some(y) = &r.smt_yield {
        findings.push(smt_yield::view::yield_finding(y));
    }
    if let Some(c) = &r.compare {
        findings.push(compare::view::command_finding(c, smt));
    }
    let no_smt = no_smt_reason(r);
    let yield_missing = if smt {
        phase_reason(r, PhaseName::Yield)
    } else {
        no_smt.clone()
    };
    let y = r.smt_yield.as_ref();
    let answers = vec![
        smt_yield::view::compute_answer(y, smt, &yield_missing),
        smt_yield::view::memory_answer(y, smt, &yield_missing),
        smt_yield::view::locks_answer(y, smt, &yield_missing),
        locks_answer(r, smt),
        oltp::view::inserts_answer(
            r.oltp.as_ref(),
            smt,
            &phase_reason(r, PhaseName::Oltp),
            &no_smt,
        ),
        cache_answer(r, smt),
        compare::view::command_answer(
            r.compare.as_ref(),
            smt,
            &phase_reason(r, PhaseName::Compare),
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

// ---------------------------------------------------------------------------------------
// Numbers as the verdict prints them: 3 significant figures, spreads 2.

// ---------------------------------------------------------------------------------------
// The answer table.

fn no_smt_reason(r: &Report) -> String {
    format!(
        "{}, so no run could put two threads on one core",
        r.smt.sentence.trim_end_matches('.')
    )
}

/// Why a phase produced no section: its record's reason, or "did not run".
fn phase_reason(r: &Report, phase: PhaseName) -> String {
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

/// For a slowdown from sharing a core (shared ÷ alone).
fn sharing_answer(e: Effect) -> HtAnswer {
    HtAnswer::from_sharing(e)
}

/// One scanner scenario's sharing comparison, as the verdict judges it.
#[derive(Debug, Clone)]
struct Sharing {
    /// `` `ttas`, scanner on 1 (sibling of 0) ``.
    label: String,
    lock: crate::locks::LockKind,
    comparison: Comparison,
    /// The per-round ratios behind it (own-baseline comparisons only).
    ratios: Vec<f64>,
    /// Per round, this ratio ÷ the same runs' lock threads on other cores against their
    /// own baseline: the control that separates sharing the core from whatever the scanner
    /// does to every core. Empty without such threads and in older files.
    control_ratios: Vec<f64>,
    /// Against the thread's own rate without a scanner (false: against the other lock
    /// threads of the same runs, from a file written before the own comparison existed).
    own: bool,
}

impl Sharing {
    fn member(&self) -> Member {
        Member {
            label: self.label.clone(),
            comparison: self.comparison,
            ratios: self.ratios.iter().copied().enumerate().collect(),
        }
    }
}

/// The scanner scenarios of lockscan, each judged by its lock threads' own rate without a
/// scanner; a file written before that comparison existed falls back to the other lock
/// threads of the same runs (each such entry says so through `own`).
fn sibling_comparisons(l: &super::LockscanSection) -> Vec<Sharing> {
    let scanners = || {
        l.result
            .results
            .iter()
            .filter(|s| !s.scenario.scan_cpus.is_empty())
    };
    let entry =
        |s: &crate::experiments::lockscan::ScenarioResult, c: Comparison, own: bool| Sharing {
            label: format!("`{}`, {}", s.lock, s.scenario.label),
            lock: s.lock,
            comparison: c,
            ratios: if own {
                s.sharing_ratios.clone()
            } else {
                Vec::new()
            },
            control_ratios: if own {
                s.sharing_vs_cross_core_ratios.clone()
            } else {
                Vec::new()
            },
            own,
        };
    let own: Vec<Sharing> = scanners()
        .filter_map(|s| Some(entry(s, s.sharing_vs_own_baseline?, true)))
        .collect();
    if !own.is_empty() {
        return own;
    }
    scanners()
        .filter_map(|s| {
            let c = Comparison::from_ci(s.sharing_vs_others?, s.runs, Thresholds::SLOWDOWN);
            Some(entry(s, c, false))
        })
        .collect()
}

/// The control over the same scenarios: per round, the sharing threads' ratio ÷ the
/// other-core threads' ratio, taken together as the sharing comparisons are. None when no
/// scenario had lock threads on other cores.
fn control_of(all: &[Sharing]) -> Option<Comparison> {
    let members: Vec<Member> = all
        .iter()
        .filter(|s| !s.control_ratios.is_empty())
        .filter_map(|s| {
            Some(Member {
                label: s.label.clone(),
                comparison: Comparison::of_paired_ratios(
                    &s.control_ratios,
                    Thresholds::SLOWDOWN,
                    CONFIDENCE,
                )?,
                ratios: s.control_ratios.iter().copied().enumerate().collect(),
            })
        })
        .collect();
    Aggregate::of(members, Thresholds::SLOWDOWN).map(|a| a.central)
}

/// What a loss beside a scanning sibling may be put down to, given the control: `(clause,
/// shown)` — `shown` is false when the threads on other cores lost about as much, so the
/// loss is not specific to sharing the core.
fn control_clause(control: Option<&Comparison>) -> (String, bool) {
    match control {
        Some(c) if matches!(c.effect, Effect::Loss | Effect::SmallLoss) => (
            format!(
                "lock threads on other cores of the same runs lost less (the sharing thread ÷ them: {}), so the loss comes with sharing the core",
                ratio_of(c, "")
            ),
            true,
        ),
        Some(c) => (
            format!(
                "but lock threads on other cores of the same runs lost about as much (the sharing thread ÷ them: {}), so the loss is not shown to come from sharing the core: the scanner slowed the other cores too (memory bandwidth, the lock's cache line, the clock)",
                ratio_of(c, "")
            ),
            false,
        ),
        None => (
            "no lock thread ran on another core in the same runs, so whether the loss is specific to sharing the core was not measured".into(),
            true,
        ),
    }
}

/// What a sharing comparison is a ratio of.
fn sharing_of(own: bool) -> &'static str {
    if own {
        "its own rate without a scanner in the same round"
    } else {
        "the other lock threads' rate"
    }
}

/// Said once where a file predates the own-baseline comparison.
const OTHERS_FALLBACK: &str = "this file predates the comparison of each lock thread with its own rate without a scanner, so it is compared with the other lock threads of the same runs, which an unfair lock biases by position";

/// Said where lock threads beside a scanner kept their rate: what that does not show.
const SCANNER_UNMEASURED: &str = "the scanner's own progress was not measured, so this says a scanning sibling did not slow the lock threads, not that HT adds capacity";

fn locks_answer(r: &Report, smt: bool) -> Answer {
    let class = WorkloadClass::LocksBesideScans;
    let section = Some(PhaseName::Lockscan);
    if !smt {
        return not_answered(
            class,
            format!(
                "{}; a scanner here can only time-share a lock thread's CPU, a scheduler \
                 effect that HT does not change",
                no_smt_reason(r)
            ),
            section,
        );
    }
    let Some(l) = &r.lockscan else {
        return not_answered(class, phase_reason(r, PhaseName::Lockscan), section);
    };
    let sharing = sibling_comparisons(l);
    let own = sharing.iter().all(|s| s.own);
    let Some(agg) = Aggregate::of(
        sharing.iter().map(Sharing::member).collect(),
        Thresholds::SLOWDOWN,
    ) else {
        return not_answered(
            class,
            "lockscan ran no scenario with a scanner on a lock thread's sibling and a \
             baseline to compare it with"
                .into(),
            section,
        );
    };
    let mut reason = format!(
        "acquisitions of a lock thread whose SMT sibling ran a memory scanner, {}",
        agg.text(sharing_of(own), "scanner scenarios")
    );
    if !own {
        reason = format!("{OTHERS_FALLBACK}: {reason}");
    }
    reason.push_str(&indicative_note(&agg.central));
    let mut answer = agg.answer(sharing_answer);
    if matches!(answer, HtAnswer::TurnHtOff | HtAnswer::SmallLoss) {
        let (clause, shown) = control_clause(control_of(&sharing).as_ref());
        reason.push_str(&format!("; {clause}"));
        if !shown {
            answer = HtAnswer::Inconclusive;
        } else {
            reason.push_str("; keeping memory-streaming work off the siblings of threads that hold such a lock is the other remedy");
        }
    }
    if answer == HtAnswer::NoDifference {
        reason.push_str(&format!("; {SCANNER_UNMEASURED}"));
    }
    if agg.central.effect == Effect::Gain && !agg.disagree {
        reason.push_str("; the lock threads ran faster beside a scanning sibling, which answers neither way: the scanner's own progress was not measured");
    }
    Answer {
        class,
        answer,
        evidence: Some(Evidence {
            what: if own {
                "acquisitions/s of a lock thread beside a scanning sibling ÷ the same thread \
                 without a scanner, paired by round"
                    .into()
            } else {
                "acquisitions/s of a lock thread beside a scanning sibling ÷ the other lock \
                 threads of the same runs (biased by an unfair lock's positions)"
                    .into()
            },
            runs: if agg.k == 1 {
                format!("lockscan, {}", agg.members[0].0)
            } else {
                format!("lockscan, {} scanner scenarios", agg.k)
            },
            comparison: agg.central,
        }),
        reason,
        section,
    }
}

fn cache_answer(r: &Report, smt: bool) -> Answer {
    let class = WorkloadClass::ReadMostlyCache;
    let section = Some(PhaseName::Rwcache);
    if !smt {
        return not_answered(class, no_smt_reason(r), section);
    }
    if r.rwcache.is_none() {
        return not_answered(class, phase_reason(r, PhaseName::Rwcache), section);
    }
    not_answered(
        class,
        "rwcache compared schemes at 1 thread and at every usable CPU; it did not compare one \
         thread per core with both siblings on the same cores"
            .into(),
        section,
    )
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
                cmp_text(&e.comparison)
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
    if let Some(s) = largest_loss(r) {
        parts.push(s);
    } else if r.neighbors.is_some() {
        parts.push(
            "No neighbours step's interval lay wholly below 0.8× of its unloaded rate.".into(),
        );
    }
    if disturbed(r) {
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

/// The neighbors step whose paired interval lies lowest, when it is a loss: what it cost,
/// what the diagnosis measured, and what the other locks of the same placement kept at the
/// same burner count.
fn largest_loss(r: &Report) -> Option<String> {
    let n = r.neighbors.as_ref()?;
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
            Some(format!("`{}` was at {}", s.lock, ratio_of(&o.ratio?, "")))
        })
        .collect();
    Some(format!(
        "Largest measured loss: with {} and {} the `{}` lock ran at {}{}{}.",
        placed_burners(series.placement, st.burners),
        placed_workers(series.placement, series.workers_in(n)),
        series.lock,
        ratio_of(&c, "its unloaded rate"),
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
fn mechanism(s: &super::NeighborsSeries, st: &super::NeighborsStep) -> String {
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

fn disturbed(r: &Report) -> bool {
    r.neighbors.as_ref().is_some_and(|n| {
        n.series.iter().any(|s| {
            s.steps
                .first()
                .is_some_and(|st| st.diagnosis == Diagnosis::ExternalLoad)
        })
    })
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

// ---------------------------------------------------------------------------------------
// Findings, one per experiment.

fn lock_finding(l: &super::LockscanSection, smt: bool) -> Finding {
    let results = &l.result.results;
    let mut obs = Vec::new();
    let mut evidence = Vec::new();
    let mut locks = Vec::new();
    for s in results {
        if !locks.contains(&s.lock) {
            locks.push(s.lock);
        }
    }
    let sharing = sibling_comparisons(l);
    let own = sharing.iter().all(|s| s.own);
    if !own {
        obs.push(capitalise(OTHERS_FALLBACK));
    }
    let beside = if smt {
        "beside"
    } else {
        "time-sharing its CPU with"
    };
    let mut sharing_effects = Vec::new();
    // Locks that lost beside a scanner, split by what the cross-core control says.
    let (mut lost_core, mut lost_everywhere, mut lost_uncontrolled) =
        (Vec::new(), Vec::new(), Vec::new());
    for lock in locks {
        let mine: Vec<_> = results.iter().filter(|s| s.lock == lock).collect();
        let mut line = format!("`{lock}`:");
        if let Some(b) = mine.iter().find(|s| s.scenario.scan_cpus.is_empty())
            && let Some(a) = &b.acquisitions_per_sec
        {
            line.push_str(&format!(
                " {} acquisitions/s without a scanner (Jain {:.2})",
                pm(a),
                b.jain_index
            ));
        }
        let of_lock: Vec<Sharing> = sharing.iter().filter(|s| s.lock == lock).cloned().collect();
        if let Some(agg) = Aggregate::of(
            of_lock.iter().map(Sharing::member).collect(),
            Thresholds::SLOWDOWN,
        ) {
            let c = agg.central;
            sharing_effects.push(if agg.disagree {
                Effect::Inconclusive
            } else {
                c.effect
            });
            line.push_str(&format!(
                "; the lock thread {beside} a scanner, {}",
                agg.text(sharing_of(own), "scanner positions")
            ));
            let control = control_of(&of_lock);
            if let Some(ctrl) = &control {
                line.push_str(&format!(
                    "; against lock threads on other cores of the same runs, {}",
                    ratio_of(ctrl, "")
                ));
                evidence.push(Evidence {
                    what: format!(
                        "`{lock}`: the scanner-sharing thread's ratio ÷ the other-core threads' ratio, same runs, paired by round"
                    ),
                    runs: format!("lockscan, {}", count(of_lock.len(), "scanner position")),
                    comparison: *ctrl,
                });
            }
            if matches!(c.effect, Effect::Loss | Effect::SmallLoss) && !agg.disagree {
                let name = format!("`{lock}`");
                match control.map(|x| x.effect) {
                    Some(Effect::Loss | Effect::SmallLoss) => lost_core.push(name),
                    Some(_) => lost_everywhere.push(name),
                    None => lost_uncontrolled.push(name),
                }
            }
            evidence.push(Evidence {
                what: format!(
                    "`{lock}` acquisitions/s, scanner-sharing thread ÷ {}",
                    if own {
                        "itself without a scanner, paired by round"
                    } else {
                        "the other lock threads"
                    }
                ),
                runs: if agg.k == 1 {
                    format!("lockscan, {}", agg.members[0].0)
                } else {
                    format!("lockscan, {}", count(agg.k, "scanner position"))
                },
                comparison: c,
            });
        }
        // Cross-core: paired against the same threads' own baseline where the file has it,
        // else the older unpaired interval.
        let cross: Vec<Member> = mine
            .iter()
            .filter_map(|s| {
                let c = s.cross_core_vs_own_baseline.or_else(|| {
                    s.cross_core_vs_baseline
                        .map(|ci| Comparison::from_ci(ci, s.runs, Thresholds::SLOWDOWN))
                })?;
                Some(Member {
                    label: s.scenario.label.clone(),
                    comparison: c,
                    ratios: s.cross_core_ratios.iter().copied().enumerate().collect(),
                })
            })
            .collect();
        if let Some(agg) = Aggregate::of(cross, Thresholds::SLOWDOWN) {
            line.push_str(&format!(
                "; lock threads on other cores kept {}{}",
                ratio_of(&agg.central, "of their rate without a scanner"),
                if agg.k > 1 {
                    format!(
                        " ({} over {} scanner positions)",
                        if agg.central_note.is_none() {
                            "per-round median"
                        } else {
                            "lower middle"
                        },
                        agg.k
                    )
                } else {
                    String::new()
                }
            ));
            evidence.push(Evidence {
                what: format!("`{lock}` acquisitions/s on other cores, with ÷ without scanner"),
                runs: format!(
                    "lockscan, {} and baseline",
                    count(agg.k, "scanner position")
                ),
                comparison: agg.central,
            });
        }
        obs.push(line);
    }
    let any = |e: Effect| sharing_effects.contains(&e);
    let against = if own {
        "their own rates without a scanner"
    } else {
        "the other lock threads"
    };
    let counted = l
        .result
        .counters
        .as_ref()
        .is_some_and(|c| !c.hardware_missing());
    let meaning = if !smt {
        "A scanner here can only time-share a lock thread's CPU, so that thread runs part of the time and acquires accordingly: the scheduler dividing a CPU, not HT. To see what a scanning sibling does, run on an SMT machine.".to_string()
    } else if !lost_core.is_empty() || !lost_everywhere.is_empty() || !lost_uncontrolled.is_empty()
    {
        let mut parts = Vec::new();
        if !lost_core.is_empty() {
            parts.push(format!(
                "{} lost beside a scanning sibling and more than lock threads on other cores of the same runs: the loss comes with sharing the core{}. Keep memory-streaming work off the siblings of threads holding such a lock, or turn HT off for such a mix",
                lost_core.join(", "),
                if counted {
                    "; which resource inside the core is not identified by the cycle and instruction counts"
                } else {
                    "; which resource inside the core was not measured (no hardware counters)"
                }
            ));
        }
        if !lost_everywhere.is_empty() {
            parts.push(format!(
                "{} lost beside a scanning sibling, but lock threads on other cores lost about as much: the scanner slowed every core, so the loss is not shown to come from sharing the core, and HT off would not remove it",
                lost_everywhere.join(", ")
            ));
        }
        if !lost_uncontrolled.is_empty() {
            parts.push(format!(
                "{} lost beside a scanning sibling; no lock thread ran on another core in the same runs, so whether the loss is specific to sharing the core was not measured",
                lost_uncontrolled.join(", ")
            ));
        }
        format!("{}.", parts.join(". "))
    } else if !sharing_effects.is_empty() && sharing_effects.iter().all(|e| *e == Effect::NoEffect)
    {
        let mut m = format!(
            "Every lock's interval lay within ±5 % of {against}: on this machine a scanning sibling did not slow lock threads by more than 5 %; {SCANNER_UNMEASURED}",
        );
        if evidence.iter().any(|e| e.comparison.indicative) {
            m.push_str(" — indicative where fewer than 3 runs ran; more runs (`--repeat`) give confidence intervals");
        }
        m.push('.');
        m
    } else if any(Effect::Inconclusive) {
        "At least one lock's intervals were too wide to call, or its scanner positions disagreed (see each interval): more runs (`--repeat`) or a quieter machine are needed before deciding HT for this mix.".into()
    } else {
        format!("No lock lost beside a scanning sibling; {SCANNER_UNMEASURED}.")
    };
    Finding {
        topic: "locks (lockscan)".into(),
        observed: obs.join(". ") + ".",
        meaning,
        evidence,
    }
}

fn neighbors_finding(n: &super::NeighborsSection) -> Finding {
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
            pm(&first.ops_per_sec),
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
                ratio_of(&c, "the 0-burner rate"),
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
            "With more runnable threads than CPUs, {} lost while {} did not: the lock, not only the thread count, decides what oversubscription costs. Keep runnable lock-heavy threads at or below the CPUs they may use, or use the lock that kept its rate.",
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
    if !slowed.is_empty() {
        if !meaning.is_empty() {
            meaning.push(' ');
        }
        meaning.push_str(&format!(
            "With more runnable threads than CPUs, {} slowed by a measured amount smaller than the loss line (a small loss; see its interval).",
            slowed.join(", ")
        ));
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
fn sibling_meaning(n: &super::NeighborsSection) -> Option<String> {
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
            ratio_of(&c, "of its rate without burners"),
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

fn rwcache_finding(w: &super::RwcacheSection) -> Finding {
    let top = w.rows.iter().map(|r| r.threads).max().unwrap_or(1);
    let at = |s: SchemeKind| w.rows.iter().find(|r| r.threads == top && r.scheme == s);
    let mut obs = Vec::new();
    if let Some(b) = w.result.best.as_ref().map(|b| b.overall)
        && let Some(row) = at(b)
    {
        obs.push(format!(
            "best at {}: `{b}` {} requests/s",
            count(top, "thread"),
            pm(&row.requests_per_sec)
        ));
    }
    if let (Some(s), Some(rw)) = (at(SchemeKind::Spin), at(SchemeKind::RwSpin)) {
        obs.push(format!(
            "`spin` {} → `rwspin` {} ({:+.1} %, medians)",
            si_sig(s.requests_per_sec.median, 3),
            si_sig(rw.requests_per_sec.median, 3),
            (rw.requests_per_sec.median / s.requests_per_sec.median - 1.0) * 100.0
        ));
    }
    let best = |want: bool| {
        w.result
            .results
            .iter()
            .filter(|x| x.threads == top && x.shared_reader_line == want)
            .filter_map(|x| x.requests_per_sec.map(|s| s.median))
            .fold(0.0, f64::max)
    };
    let (with, without) = (best(true), best(false));
    let meaning = if with > 0.0 && without > 0.0 {
        let ratio = with / without;
        obs.push(format!(
            "at {} the best scheme whose readers write a shared line reached {}× the best without one (medians; no interval)",
            count(top, "thread"),
            sig(ratio, 3)
        ));
        if ratio < Thresholds::SLOWDOWN.loss_below {
            format!(
                "The best scheme whose readers write a shared line (the lock word) reached only {}× the best whose readers write nothing shared (per-CPU slots, seqlock, RCU-style snapshots) — medians without an interval, so indicative; fix the lock before judging HT for such a workload.",
                sig(ratio, 3)
            )
        } else {
            format!(
                "Whether readers that write a shared line cost throughput is not established at this thread count: the medians differ by {} %, and no interval was computed.",
                sig(((1.0 - ratio) * 100.0).abs(), 2)
            )
        }
    } else {
        "Too few schemes ran to compare readers that write a shared line with readers that do not."
            .into()
    };
    Finding {
        topic: "read-mostly cache (rwcache)".into(),
        observed: obs.join("; ") + ".",
        meaning,
        evidence: Vec::new(),
    }
}

fn c2c_finding(c: &super::C2cSection) -> Finding {
    let classes: Vec<String> = c
        .result
        .classes
        .iter()
        .map(|k| {
            format!(
                "{} {} ns (≤ {} handoffs/s)",
                k.proximity.label(),
                sig(k.median_latency_ns, 3),
                si_sig(k.ceiling.k1_handoffs_per_sec, 3)
            )
        })
        .collect();
    let sib = c.result.class(Proximity::SmtSibling);
    let other = c
        .result
        .classes
        .iter()
        .filter(|k| k.proximity != Proximity::SmtSibling)
        .min_by(|a, b| a.median_latency_ns.total_cmp(&b.median_latency_ns));
    let meaning = match (sib, other) {
        (Some(s), Some(o)) if s.median_latency_ns > 0.0 => format!(
            "Handing a cache line between SMT siblings took {} ns, {}× faster than the fastest other pair measured ({}, {} ns): a lock passed between siblings moves its cache line that much faster.",
            sig(s.median_latency_ns, 3),
            sig(o.median_latency_ns / s.median_latency_ns, 2),
            o.proximity.label(),
            sig(o.median_latency_ns, 3)
        ),
        (Some(s), None) => format!(
            "Handing a cache line between SMT siblings took {} ns; no pair on different cores was measured to compare with.",
            sig(s.median_latency_ns, 3)
        ),
        _ => "Every contended lock handoff moves at least one cache line at this latency, which bounds lock throughput; no SMT sibling pair was measured here.".into(),
    };
    Finding {
        topic: "cache-line handoff (c2c)".into(),
        observed: if classes.is_empty() {
            "no pair finished.".into()
        } else {
            classes.join("; ") + "."
        },
        meaning,
        evidence: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::FakeEngine;
    use crate::experiments::smt_yield::{Layout as YieldLayout, WorkloadKind};
    use crate::placement::Request;
    use crate::report::{MachineInfo, Provenance};
    use crate::stats::{Ci, Summary};
    use crate::topology::fixture;
    use std::sync::OnceLock;

    #[test]
    fn spreads_carry_two_figures() {
        let s = Summary::of(&[19.5e6, 19.979e6, 20.4e6]).unwrap();
        assert!(pm(&s).starts_with("20.0 M ± "), "{}", pm(&s));
    }

    /// A study on the fake engine: every section produced by the real experiment code.
    fn study(cores: u32, threads_per_core: u32) -> Report {
        let topo = fixture::topology(cores, threads_per_core, true);
        let machine = MachineInfo {
            hypervisor: "KVM".into(),
            hardware_counters: "unavailable (no CPU PMU exposed by the kernel)".into(),
            frequency_governor: "unavailable".into(),
            ..crate::report::machine::summary(&topo)
        };
        let provenance = Provenance {
            smtlab_version: "0.0.0-test".into(),
            git_revision: "0".into(),
            build_profile: "test".into(),
            command: "smtlab study --quick".into(),
            started_unix_s: 0,
            wall_ns: 0,
        };
        let cfg = crate::study::tests::config(crate::study::QUICK_BUDGET);
        crate::study::run(
            &FakeEngine::new(7).with_topology(&topo),
            &topo,
            machine,
            provenance,
            &cfg,
            &crate::study::NoProgress,
        )
        .expect("fake study")
    }

    fn no_smt() -> &'static Report {
        static R: OnceLock<Report> = OnceLock::new();
        R.get_or_init(|| study(2, 1))
    }

    fn smt() -> &'static Report {
        static R: OnceLock<Report> = OnceLock::new();
        R.get_or_init(|| study(4, 2))
    }

    fn answer(v: &Verdict, class: WorkloadClass) -> &Answer {
        v.answers
            .iter()
            .find(|a| a.class == class)
            .expect("a row per class")
    }

    /// Every sentence the verdict prints.
    fn sentences(v: &Verdict) -> Vec<String> {
        let mut all = vec![v.headline.clone()];
        all.extend(v.answers.iter().map(|a| a.reason.clone()));
        for f in &v.findings {
            all.push(f.observed.clone());
            all.push(f.meaning.clone());
        }
        all
    }

    /// Claims no run here measures: hardware resources without counters, comparatives
    /// without a compared pair, internal document numbers, "no effect" without its band.
    fn assert_cites_only_what_was_measured(v: &Verdict) {
        for s in sentences(v) {
            for banned in [
                "fill buffer",
                "store queue",
                "far less",
                "seed 0",
                "did not measurably",
                "HT worth keeping",
            ] {
                assert!(!s.contains(banned), "`{banned}` in: {s}");
            }
        }
        for a in &v.answers {
            match a.answer {
                HtAnswer::NotMeasured => assert!(a.evidence.is_none() && !a.reason.is_empty()),
                _ => assert!(a.evidence.is_some(), "{a:?}"),
            }
        }
    }

    #[test]
    fn report_tables_show_ipc_and_core_cpi_only_when_measured() {
        use crate::counters::{Counts, Event, Scaled};
        use crate::report::tables;
        let mut r = smt().clone();
        // Synthetic: no IPC column, no CPI table, a sentence why.
        let y = r.smt_yield.as_ref().unwrap();
        assert!(
            !smt_yield::view::table(y)
                .header
                .iter()
                .any(|h| h.contains("IPC"))
        );
        assert!(tables::core_cpi(r.lockscan.as_ref().unwrap()).is_none());
        assert_eq!(
            tables::counters_not_measured(&r).as_deref(),
            Some("IPC and per-core CPI: not measured (a synthetic report counts nothing).")
        );
        // A real report without a PMU: the reason is the counters' own.
        r.synthetic = false;
        r.lockscan.as_mut().unwrap().result.counters = Some(crate::counters::Status {
            mode: crate::counters::Mode::All,
            unavailable: Event::ALL
                .into_iter()
                .filter(|e| e.is_hardware())
                .map(|event| crate::counters::Unavailable {
                    event,
                    reason: "no hardware PMU".into(),
                })
                .collect(),
        });
        assert_eq!(
            tables::counters_not_measured(&r).as_deref(),
            Some(
                "IPC and per-core CPI: not measured (hardware counters not measured: no hardware PMU)."
            )
        );
        // Counted: the table and the column appear, the sentence goes.
        let full = |v| Scaled {
            value: v,
            counted_share: 1.0,
        };
        let hw = |ins| {
            Counts::from_scaled(&[
                (Event::Cycles, full(1_000_000)),
                (Event::Instructions, full(ins)),
            ])
        };
        let (a, b) = (hw(750_000), hw(500_000));
        let core: crate::cpuset::CpuSet = "0-1".parse().unwrap();
        let s = &mut r.lockscan.as_mut().unwrap().result.results[0];
        s.core_cpi = crate::counters::per_core([(0, 0, core.clone(), &a), (1, 1, core, &b)]);
        let t = tables::core_cpi(r.lockscan.as_ref().unwrap()).unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(&t.rows[0][5..], ["1.33", "0.80"]);
        assert_eq!(&t.rows[1][5..], ["2.00", ""]);
        assert_eq!(tables::counters_not_measured(&r), None);
        let y = r.smt_yield.as_mut().unwrap();
        y.result.workloads[0].yield_split =
            Some(crate::experiments::smt_yield::model::YieldSplit {
                ipc_one_per_core: 0.39,
                ipc_all: 0.25,
                ipc_ratio: 0.64,
                cycles_per_sec_ratio: 2.0,
                instructions_per_op_ratio: 1.0,
                rounds: 3,
            });
        let t = smt_yield::view::table(y);
        assert_eq!(
            t.header.last().unwrap(),
            "YIELD = IPC × CYCLES/S ÷ INSTR/OP"
        );
        assert_eq!(
            &t.rows[0][t.rows[0].len() - 2..],
            ["0.39 → 0.25", "0.64 × 2.00 ÷ 1.00"]
        );
        assert_eq!(t.rows[1].last().unwrap(), "–");
    }

    #[test]
    fn ipc_is_cited_only_where_it_was_counted() {
        // The fake engine counts nothing: no sentence cites IPC.
        let r = smt().clone();
        let v = build(&r);
        assert!(sentences(&v).iter().all(|s| !s.contains("IPC")));
        // One ruler's runs counted cycles and instructions: its finding cites them.
        let mut r = smt().clone();
        let y = r.smt_yield.as_mut().unwrap();
        let w = &mut y.result.workloads[0];
        w.yield_split = Some(crate::experiments::smt_yield::model::YieldSplit {
            ipc_one_per_core: 0.39,
            ipc_all: 0.25,
            ipc_ratio: 0.64,
            cycles_per_sec_ratio: 2.0,
            instructions_per_op_ratio: 1.0,
            rounds: 3,
        });
        let name = w.workload.clone();
        let v = build(&r);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.contains("yield"))
            .unwrap();
        assert!(
            f.observed.contains(&format!("`{name}`"))
                && f.observed
                    .contains("(IPC 0.39 → 0.25, 0.64×, with 2.00× the cycles per second)"),
            "{}",
            f.observed
        );
        assert_eq!(f.observed.matches("IPC").count(), 1, "{}", f.observed);
    }

    /// Sets inserts/s so that `all` ÷ `one-per-core` is `ratios[k]` in round k.
    fn postgres_with_yield(r: &mut Report, ratios: &[f64]) {
        let o = r.oltp.as_mut().unwrap();
        o.result.db = "postgres-managed".into();
        o.result.db_version = "PostgreSQL 15.8".into();
        let template = o
            .result
            .runs
            .iter()
            .find(|x| x.placement == Request::OnePerCore)
            .unwrap()
            .clone();
        o.result.runs.clear();
        for (k, y) in ratios.iter().enumerate() {
            let mut one = template.clone();
            one.round = k;
            one.inserts_per_sec = 10_000.0;
            let mut all = one.clone();
            all.placement = Request::All;
            all.inserts_per_sec = 10_000.0 * y;
            for t in &mut all.per_thread {
                t.cpus.push_str(",x");
            }
            o.result.runs.push(one);
            o.result.runs.push(all);
        }
    }

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

    /// Sets every ruler's rounds so that all ÷ one-per-core is `ratios[k]` in round k, and
    /// its yield from them.
    fn rulers_with_yield(r: &mut Report, ratios: &[f64]) {
        let y = r.smt_yield.as_mut().expect("the yield phase ran on SMT");
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
                for (layout, rate) in [(YieldLayout::OnePerCore, 1e6), (YieldLayout::All, 1e6 * q)]
                {
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

    #[test]
    fn smt_with_a_tight_ruler_yield_of_1_3_keeps_ht_on_for_compute() {
        let mut r = smt().clone();
        rulers_with_yield(&mut r, &[1.29, 1.30, 1.31, 1.30, 1.32, 1.28, 1.30]);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::Compute);
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
        assert!(
            v.headline.contains("Keep HT on for compute"),
            "{}",
            v.headline
        );
    }

    #[test]
    fn smt_with_a_tight_yield_of_1_3_keeps_ht_on() {
        let mut r = smt().clone();
        postgres_with_yield(&mut r, &[1.29, 1.30, 1.31, 1.30, 1.32, 1.28, 1.30]);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::Inserts);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let c = a.evidence.as_ref().unwrap().comparison;
        assert!(
            (c.estimate - 1.30).abs() < 0.01 && c.n == 7 && !c.indicative,
            "{c:?}"
        );
        assert!(a.reason.contains("95 % CI"), "{}", a.reason);
        assert!(
            v.headline.contains("keep HT on for database inserts"),
            "{}",
            v.headline
        );
    }

    /// Replaces the sibling scenarios by one per entry: its own-baseline comparison and the
    /// per-round ratios behind it.
    /// Scanner scenarios with these sharing comparisons; lock threads on other cores kept
    /// their rate in every round (the control then equals the sharing ratios).
    fn sibling_scenarios(r: &mut Report, scenarios: &[(Comparison, Vec<f64>)]) {
        sibling_scenarios_with_cross(r, scenarios, None)
    }

    /// As [`sibling_scenarios`], the other-core lock threads at `cross` of their rate in
    /// each round (None: 1.0 in every round).
    fn sibling_scenarios_with_cross(
        r: &mut Report,
        scenarios: &[(Comparison, Vec<f64>)],
        cross: Option<&[f64]>,
    ) {
        let l = r.lockscan.as_mut().unwrap();
        let template = l
            .result
            .results
            .iter()
            .find(|s| !s.scenario.scan_cpus.is_empty())
            .unwrap()
            .clone();
        l.result.results.retain(|s| s.scenario.scan_cpus.is_empty());
        for (i, (c, ratios)) in scenarios.iter().enumerate() {
            let mut s = template.clone();
            s.scenario.label = format!("scenario {i}");
            s.sharing_vs_own_baseline = Some(*c);
            s.sharing_ratios = ratios.clone();
            s.runs = ratios.len();
            let ones = vec![1.0; ratios.len()];
            let cross = cross.unwrap_or(&ones);
            s.cross_core_ratios = cross.to_vec();
            s.cross_core_vs_own_baseline =
                Comparison::of_paired_ratios(cross, Thresholds::SLOWDOWN, 0.95);
            s.sharing_vs_cross_core_ratios = ratios.iter().zip(cross).map(|(a, b)| a / b).collect();
            s.sharing_vs_cross_core = Comparison::of_paired_ratios(
                &s.sharing_vs_cross_core_ratios,
                Thresholds::SLOWDOWN,
                0.95,
            );
            l.result.results.push(s);
        }
    }

    /// A scenario whose own-baseline comparison comes from `ratios`.
    fn paired(ratios: &[f64]) -> (Comparison, Vec<f64>) {
        let c = Comparison::of_paired_ratios(ratios, Thresholds::SLOWDOWN, 0.95).unwrap();
        (c, ratios.to_vec())
    }

    fn ci(estimate: f64, low: f64, high: f64) -> Ci {
        Ci {
            estimate,
            low,
            high,
            confidence: 0.95,
        }
    }

    #[test]
    fn a_wide_interval_around_half_is_inconclusive_not_no_effect() {
        let mut r = smt().clone();
        let c = Comparison::from_ci(ci(0.50, 0.30, 0.85), 5, Thresholds::SLOWDOWN);
        sibling_scenarios(&mut r, &[(c, vec![0.30, 0.45, 0.50, 0.60, 0.85])]);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(
            a.reason.contains("its own rate without a scanner"),
            "{}",
            a.reason
        );
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(f.meaning.contains("too wide to call"), "{}", f.meaning);
        assert!(f.observed.contains("inconclusive"), "{}", f.observed);
    }

    #[test]
    fn the_worst_neighbours_step_not_oversubscribed_is_not_called_oversubscription() {
        let mut r = no_smt().clone();
        let n = r.neighbors.as_mut().unwrap();
        for s in &mut n.series {
            for st in &mut s.steps {
                st.runnable_threads = st.cpus;
                if st.burners > 0 {
                    st.diagnosis = Diagnosis::SharedResources;
                    st.reason = "2 runnable on 2 CPUs, 0% of time waiting for a CPU".into();
                    st.ratio = Some(Comparison::from_ci(
                        ci(0.6, 0.55, 0.65),
                        5,
                        Thresholds::SLOWDOWN,
                    ));
                }
            }
        }
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        assert!(
            v.headline.contains("Largest measured loss"),
            "{}",
            v.headline
        );
        assert!(v.headline.contains("`shared-resources`"), "{}", v.headline);
        for s in sentences(&v) {
            assert!(!s.contains("oversubscription"), "{s}");
            assert!(!s.contains("more runnable threads than CPUs"), "{s}");
        }
    }

    /// Makes the `placement` series' step with `burners` of `lock` the deepest loss.
    fn deep_loss(
        r: &mut Report,
        placement: SeriesPlacement,
        burners: usize,
        d: Diagnosis,
        reason: &str,
    ) {
        let n = r.neighbors.as_mut().unwrap();
        let s = n
            .series
            .iter_mut()
            .find(|s| s.placement == placement)
            .expect("the series ran");
        let st = s.steps.iter_mut().find(|st| st.burners == burners).unwrap();
        st.diagnosis = d;
        st.reason = reason.into();
        st.ratio = Some(Comparison::from_ci(
            ci(0.2, 0.15, 0.25),
            5,
            Thresholds::SLOWDOWN,
        ));
    }

    #[test]
    fn a_controlled_sibling_loss_names_smt_sharing_and_an_unpinned_one_does_not() {
        let base = smt();
        let n = base.neighbors.as_ref().unwrap();
        let sib = n
            .series
            .iter()
            .find(|s| s.placement == SeriesPlacement::SiblingBurners)
            .expect("the study ran the sibling series on SMT");
        assert_eq!(sib.workers, Some(4));
        assert_eq!(n.sibling_skipped, None);
        // Controlled: burners pinned to the workers' siblings.
        let mut r = base.clone();
        deep_loss(
            &mut r,
            SeriesPlacement::SiblingBurners,
            4,
            Diagnosis::SmtSharing,
            "burners pinned to the workers' SMT siblings; 4 runnable on 4 CPUs",
        );
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        assert!(
            v.headline.contains(
                "with 4 burners pinned to the workers' SMT siblings and 4 workers one per core"
            ),
            "{}",
            v.headline
        );
        assert!(
            v.headline
                .contains("— SMT sharing: the burners were pinned"),
            "{}",
            v.headline
        );
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("noisy"))
            .unwrap();
        assert!(
            f.meaning
                .contains("SMT sharing, since each thread had a CPU of its own"),
            "{}",
            f.meaning
        );
        // Unpinned: at most possibly, whether the step says so or an old file says
        // `smt-sharing`.
        for d in [Diagnosis::PossiblySmtSharing, Diagnosis::SmtSharing] {
            let mut r = base.clone();
            deep_loss(
                &mut r,
                SeriesPlacement::Unpinned,
                2,
                d,
                "6 runnable on 8 CPUs",
            );
            let v = build(&r);
            assert_cites_only_what_was_measured(&v);
            assert!(
                v.headline.contains("possibly SMT sharing"),
                "{}",
                v.headline
            );
            assert!(!v.headline.contains("— SMT sharing"), "{}", v.headline);
        }
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

    /// One scanner position of 24 with a clear loss (even at 1 − 0.05/24) beside 23 with
    /// none: neither "no difference" (the median) nor "turn HT off" (the worst) holds for
    /// the row, which says so and names the position.
    #[test]
    fn one_lost_scenario_of_24_makes_the_row_depend_on_it() {
        let mut r = smt().clone();
        let mut all = vec![paired(&[0.97, 0.98, 0.99, 0.98, 0.98]); 23];
        all.insert(7, paired(&[0.55, 0.60, 0.65, 0.60, 0.58]));
        sibling_scenarios(&mut r, &all);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::DependsOnWorkload, "{a:?}");
        assert!((a.evidence.as_ref().unwrap().comparison.estimate - 0.98).abs() < 0.005);
        assert!(a.reason.contains("per-round median of 24"), "{}", a.reason);
        // The lowest's interval comes from its own rounds at 1 − 0.05/24, labelled so.
        assert!(
            a.reason
                .contains("lowest `ttas`, scenario 7 0.60× (99.8 % CI"),
            "{}",
            a.reason
        );
        assert!(
            a.reason.contains("loss for `ttas`, scenario 7"),
            "{}",
            a.reason
        );
        assert!(!a.reason.contains("100 % CI"), "{}", a.reason);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(
            f.observed.contains("per-round median of 24"),
            "{}",
            f.observed
        );
    }

    #[test]
    fn a_sibling_loss_names_the_lock_that_lost() {
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &vec![paired(&[0.5, 0.52, 0.48, 0.5, 0.49]); 3]);
        let lock = r
            .lockscan
            .as_ref()
            .unwrap()
            .result
            .results
            .last()
            .unwrap()
            .lock;
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        assert_eq!(
            answer(&v, WorkloadClass::LocksBesideScans).answer,
            HtAnswer::TurnHtOff
        );
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(
            f.meaning.starts_with(&format!(
                "`{lock}` lost beside a scanning sibling and more than lock threads on other cores"
            )),
            "{}",
            f.meaning
        );
    }

    #[test]
    fn a_thread_slow_against_the_others_but_not_against_itself_is_no_loss() {
        // An unfair lock: beside the scanner the thread gets 0.3× the others, as it did
        // without a scanner; against its own baseline it kept its rate.
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &[paired(&[0.99, 1.0, 1.01, 1.0, 0.98])]);
        for s in &mut r.lockscan.as_mut().unwrap().result.results {
            s.sharing_vs_others = Some(ci(0.30, 0.25, 0.35));
        }
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::NoDifference, "{a:?}");
        assert!(!a.reason.contains("0.30"), "{}", a.reason);
    }

    #[test]
    fn an_old_file_falls_back_to_the_other_threads_and_says_so() {
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &[paired(&[1.0; 5]), paired(&[1.0; 5])]);
        for s in &mut r.lockscan.as_mut().unwrap().result.results {
            s.sharing_vs_own_baseline = None;
            s.sharing_ratios.clear();
            s.sharing_vs_others = Some(ci(0.98, 0.96, 1.0));
        }
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::NoDifference, "{a:?}");
        assert!(a.reason.starts_with("this file predates"), "{}", a.reason);
        assert!(
            a.reason.contains("the other lock threads' rate"),
            "{}",
            a.reason
        );
        assert!(a.reason.contains("not widened"), "{}", a.reason);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(
            f.observed.starts_with("This file predates"),
            "{}",
            f.observed
        );
    }

    #[test]
    fn sqlite_alone_cannot_answer_for_inserts() {
        let r = smt();
        assert!(oltp::view::is_sqlite(r.oltp.as_ref().unwrap()));
        let v = build(r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::Inserts);
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("one writer at a time"), "{}", a.reason);
        assert!(v.not_measured.iter().any(|n| n.contains("SQLite")));
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("database"))
            .unwrap();
        assert!(f.meaning.contains("single-writer"), "{}", f.meaning);
    }

    #[test]
    fn indicative_intervals_are_not_called_95_percent() {
        let mut r = smt().clone();
        postgres_with_yield(&mut r, &[1.3, 1.31]);
        let v = build(&r);
        let a = answer(&v, WorkloadClass::Inserts);
        assert!(a.reason.contains("indicative (n = 2)"), "{}", a.reason);
        assert!(!a.reason.contains("95 % CI"), "{}", a.reason);
        // Two rounds give no interval: no answer.
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(a.reason.contains("no answer is drawn"), "{}", a.reason);
        // Three tight rounds do: a Student-t interval with 2 degrees of freedom.
        let mut r = smt().clone();
        postgres_with_yield(&mut r, &[1.3, 1.31, 1.29]);
        let a = answer(&build(&r), WorkloadClass::Inserts).clone();
        assert!(a.reason.contains("95 % CI"), "{}", a.reason);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
    }

    /// `r` with a compare section from the fake executor: `placements` by name, then
    /// `cpus` lists, `runs` rounds each.
    fn with_command(r: &Report, placements: &[&str], cpus: &[&[u32]], runs: usize) -> Report {
        with_command_as(r, placements, cpus, runs, |_| {})
    }

    /// As [`with_command`], `edit` changing the comparison's settings last.
    fn with_command_as(
        r: &Report,
        placements: &[&str],
        cpus: &[&[u32]],
        runs: usize,
        edit: impl FnOnce(&mut crate::experiments::compare::Config),
    ) -> Report {
        use crate::experiments::compare::{self, PlacementChoice};
        let mut c = compare::Config::new(vec!["my-app".into(), "--bench".into()]);
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
        c.metric = Some(compare::metric::MetricSpec::Pgbench);
        // A study's band (`smtlab study` without `--noise`).
        c.noise = Thresholds::YIELD.noise;
        edit(&mut c);
        let result = compare::fake::run(&r.topology, &c, &compare::Quiet).unwrap();
        let mut r = r.clone();
        r.compare = Some(super::super::CompareSection {
            sized_to_ns: None,
            medians: crate::study::phases::compare::medians(&result),
            result,
        });
        r
    }

    #[test]
    fn the_command_row_and_the_section_judge_against_one_band() {
        use crate::experiments::compare::Call;
        // Every sibling adds 3 %, each run within ±0.1 %: an interval near 1.03, outside
        // ±2 % and inside ±5 %. Once the section said "faster" (its ±2 %) while the row
        // said "no difference" (±5 %).
        for (noise, call, answer, band) in [
            (0.05, Call::NoDifference, HtAnswer::NoDifference, "±5 %"),
            (0.02, Call::Faster, HtAnswer::KeepHtOn, "±2 %"),
        ] {
            let r = with_command_as(smt(), &["one-per-core", "all"], &[], 8, |c| {
                c.noise = noise;
                c.fake.sibling_gain = 0.03;
                c.fake.jitter = 0.002;
            });
            let c = r.compare.as_ref().unwrap();
            let section = &c.result.comparisons[0];
            assert!(
                (section.speedup.estimate - 1.03).abs() < 0.005,
                "{section:?}"
            );
            assert_eq!(section.call, call, "band {band}: {section:?}");
            let v = build(&r);
            let a = answer_of(&v);
            assert_eq!(a.answer, answer, "band {band}: {a:?}");
            let e = a.evidence.as_ref().unwrap();
            assert_eq!(e.comparison.thresholds.noise, noise);
            assert!(a.reason.contains(band), "{}", a.reason);
            assert!(
                compare::view::settings(c).contains(&format!("beyond {band}")),
                "{}",
                compare::view::settings(c)
            );
        }
    }

    fn answer_of(v: &Verdict) -> &Answer {
        answer(v, WorkloadClass::Command)
    }

    #[test]
    fn the_command_row_pairs_only_rounds_every_placement_finished() {
        let mut r = with_command(smt(), &["one-per-core", "all"], &[], 7);
        // A failure in round 7 after `one-per-core` ran: `all` has 6 runs.
        r.compare.as_mut().unwrap().result.placements[1].runs.pop();
        let v = build(&r);
        let e = answer_of(&v).evidence.clone().unwrap();
        assert_eq!(
            (e.comparison.n, e.runs.as_str()),
            (6, "compare, 6 paired rounds")
        );
        // Round 3 of `one-per-core` lost as well: 5 rounds have both.
        r.compare.as_mut().unwrap().result.placements[0]
            .runs
            .remove(2);
        let e = answer_of(&build(&r)).evidence.clone().unwrap();
        assert_eq!(e.comparison.n, 5);
    }

    #[test]
    fn the_command_row_answers_from_all_vs_one_per_core_paired_by_round() {
        let r = with_command(smt(), &["one-per-core", "all"], &[], 7);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::Command);
        // Every sibling adds a quarter per core on the fake executor: a gain.
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let e = a.evidence.as_ref().unwrap();
        assert_eq!(e.comparison.n, 7);
        assert_eq!(e.runs, "compare, 7 paired rounds");
        assert!((e.comparison.estimate - 1.25).abs() < 0.05, "{e:?}");
        assert_eq!(e.comparison.thresholds, Thresholds::YIELD);
        assert!(a.reason.contains("`all`") && a.reason.contains("`one-per-core`"));
        assert!(a.reason.contains("my-app --bench"), "{}", a.reason);
        assert_eq!(a.section, Some(PhaseName::Compare));
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("your command"))
            .unwrap();
        assert!(f.meaning.contains("faster"), "{}", f.meaning);
        assert_eq!(f.evidence.len(), 1);
        // 3 rounds of a 1.25× gain are enough for an interval that calls it; 2 are not,
        // and the reason says why.
        let r = with_command(smt(), &["one-per-core", "all"], &[], 3);
        let a = answer(&build(&r), WorkloadClass::Command).clone();
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let r = with_command(smt(), &["one-per-core", "all"], &[], 2);
        let a = answer(&build(&r), WorkloadClass::Command).clone();
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(a.reason.contains("only 2 runs"), "{}", a.reason);
    }

    #[test]
    fn a_slower_command_on_every_sibling_turns_ht_off() {
        let mut r = with_command(smt(), &["one-per-core", "all"], &[], 6);
        // `all` gets 0.7× the tps of `one-per-core` in every round.
        let c = r.compare.as_mut().unwrap();
        let one: Vec<f64> = c.result.placements[0]
            .runs
            .iter()
            .map(|x| x.metric.unwrap())
            .collect();
        for (run, base) in c.result.placements[1].runs.iter_mut().zip(one) {
            run.metric = Some(base * (0.7 + 0.01 * run.round as f64));
        }
        let v = build(&r);
        let a = answer(&v, WorkloadClass::Command);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{a:?}");
        assert_eq!(a.evidence.as_ref().unwrap().comparison.effect, Effect::Loss);
    }

    #[test]
    fn without_siblings_or_without_the_pair_the_command_row_says_why() {
        // No siblings: not measured, naming what ran instead.
        let r = with_command(no_smt(), &[], &[&[0], &[0, 1]], 5);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::Command);
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("no SMT siblings"), "{}", a.reason);
        assert!(a.reason.contains("`cpus:0-1`"), "{}", a.reason);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("your command"))
            .unwrap();
        assert!(f.meaning.contains("not in SMT"), "{}", f.meaning);
        // Siblings, but two CPU lists that differ by cores, not by SMT.
        let r = with_command(smt(), &[], &[&[0], &[0, 1]], 5);
        let a = answer(&build(&r), WorkloadClass::Command).clone();
        assert_eq!(a.answer, HtAnswer::NotMeasured, "{a:?}");
        assert!(a.reason.contains("hold no pair"), "{}", a.reason);
        // No command: the phase's reason.
        let a = answer(&build(smt()), WorkloadClass::Command).clone();
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("no command was given"), "{}", a.reason);
    }

    /// `r` with a compare section of `one-per-core` and `all` assembled by compare itself
    /// from hand-made runs: per round, each placement's wall time and CPU time (user), ms.
    fn with_command_runs(r: &Report, runs: [&[(f64, f64)]; 2]) -> Report {
        use crate::experiments::compare::{self, Context, Measured, PlacementChoice, model::Run};
        let mut c = compare::Config::new(vec!["my-app".into(), "--bench".into()]);
        c.placements = vec![
            PlacementChoice::parse_named("one-per-core").unwrap(),
            PlacementChoice::parse_named("all").unwrap(),
        ];
        c.runs = Some(runs[0].len());
        c.noise = Thresholds::YIELD.noise;
        let resolved = compare::config::resolve(&r.topology, &c).unwrap();
        let pairs = compare::smt_pairs(&r.topology, &resolved.variants);
        let ms = |x: f64| (x * 1e6).round() as u64;
        let measured = Measured {
            runs: runs
                .iter()
                .map(|p| {
                    p.iter()
                        .enumerate()
                        .map(|(i, &(wall, cpu))| Run {
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
        let result = compare::assemble(&c, &resolved, measured, pairs, Context::default());
        let mut r = r.clone();
        r.compare = Some(super::super::CompareSection {
            sized_to_ns: None,
            medians: crate::study::phases::compare::medians(&result),
            result,
        });
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
        let r = with_command_runs(smt(), [&one, &all]);
        let c = r.compare.as_ref().unwrap();
        let section = &c.result.comparisons[0];
        assert_eq!(section.placement, "all");
        assert!(
            (section.speedup.estimate - 1.25).abs() < 1e-9
                && section.speedup.low > 1.2
                && section.speedup.high < 1.3,
            "{section:?}"
        );
        assert_eq!(section.call, crate::experiments::compare::Call::Faster);
        let y = c.result.smt_yield.as_ref().unwrap();
        let a = answer_of(&build(&r)).clone();
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
        let r = with_command_runs(smt(), [&one, &all]);
        let c = r.compare.as_ref().unwrap();
        let section = &c.result.comparisons[0];
        assert_ne!(
            section.call,
            crate::experiments::compare::Call::NoDifference,
            "{section:?}"
        );
        let lines = compare::view::lines(&c.result).join("\n");
        assert!(lines.contains("--metric"), "{lines}");
        let v = build(&r);
        let a = answer_of(&v);
        assert!(
            matches!(a.answer, HtAnswer::Inconclusive | HtAnswer::NotMeasured),
            "{a:?}"
        );
        assert!(
            a.reason.contains("fixed time") && a.reason.contains("--metric"),
            "{}",
            a.reason
        );
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("your command"))
            .unwrap();
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
            let r = with_command_as(smt(), &["one-per-core", "all"], &[], 5, |c| {
                c.command.words = words.iter().map(|w| w.to_string()).collect();
                c.metric = None;
            });
            let res = &r.compare.as_ref().unwrap().result;
            assert_eq!(
                res.metric.as_ref().map(|m| m.source.as_str()),
                metric,
                "{words:?}"
            );
            let lines = compare::view::lines(res).join("\n");
            assert!(lines.contains("fixed time"), "{words:?}: {lines}");
            let a = answer_of(&build(&r)).clone();
            if metric.is_some() {
                assert_eq!(a.answer, HtAnswer::KeepHtOn, "{words:?}: {a:?}");
            } else {
                assert_eq!(a.answer, HtAnswer::NotMeasured, "{words:?}: {a:?}");
                assert!(a.reason.contains("--metric"), "{}", a.reason);
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Wrong-answer paths, each from the numbers that showed it.

    /// Replaces the yield section's workloads with these, each all ÷ one-per-core at
    /// `ratios[k]` in round k.
    fn set_yield(r: &mut Report, workloads: &[(&str, WorkloadKind, &[f64])]) {
        let y = r.smt_yield.as_mut().expect("the yield phase ran on SMT");
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
                    for (layout, rate) in
                        [(YieldLayout::OnePerCore, 1e6), (YieldLayout::All, 1e6 * q)]
                    {
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
    fn tight(x: f64) -> Vec<f64> {
        [1.0, 1.01, 0.99, 1.005, 0.995]
            .iter()
            .map(|d| x * d)
            .collect()
    }

    /// Two lock workloads, one gaining (mutex 1.10×) and one losing (ttas 0.80×): with an
    /// even count the "median" was the upper middle one, so the row said keep HT on. A
    /// class whose workloads disagree depends on the workload, naming them.
    #[test]
    fn a_lock_row_with_a_gain_and_a_loss_depends_on_the_workload() {
        let mut r = smt().clone();
        set_yield(
            &mut r,
            &[
                ("hot-page/mutex", WorkloadKind::Lock, &tight(1.10)),
                ("hot-page/ttas", WorkloadKind::Lock, &tight(0.80)),
            ],
        );
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::Locks);
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
        assert!(
            v.headline
                .contains("Depends on the workload for lock-heavy threads"),
            "{}",
            v.headline
        );
    }

    /// Yields 0.90/0.97/1.02 (stream, chase, l2) and 1.15/1.20/1.90 (compute rulers) were
    /// one row, decided by the 4th of 6: keep HT on. Memory rulers answer a row of their
    /// own.
    #[test]
    fn memory_rulers_are_not_pooled_with_compute_rulers() {
        let mut r = smt().clone();
        set_yield(
            &mut r,
            &[
                ("stream", WorkloadKind::MemoryRuler, &tight(0.90)),
                ("chase", WorkloadKind::MemoryRuler, &tight(0.97)),
                ("l2", WorkloadKind::MemoryRuler, &tight(1.02)),
                ("fma", WorkloadKind::ComputeRuler, &tight(1.15)),
                ("prime", WorkloadKind::ComputeRuler, &tight(1.20)),
                ("int", WorkloadKind::ComputeRuler, &tight(1.90)),
            ],
        );
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let compute = answer(&v, WorkloadClass::Compute);
        assert_eq!(compute.answer, HtAnswer::KeepHtOn, "{}", compute.reason);
        assert!(!compute.reason.contains("`stream`"), "{}", compute.reason);
        let memory = answer(&v, WorkloadClass::Memory);
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
        let mut r = smt().clone();
        set_yield(
            &mut r,
            &[
                ("prime", WorkloadKind::ComputeRuler, &[1.61, 1.90, 2.02]),
                ("int", WorkloadKind::ComputeRuler, &[1.90, 1.93, 1.88]),
            ],
        );
        let a = answer(&build(&r), WorkloadClass::Compute).clone();
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
        assert!(!a.reason.contains("no answer is drawn"), "{}", a.reason);
        // The zero-yield guest's numbers (0.99×, 0.98×) never keep HT on.
        let mut r = smt().clone();
        set_yield(
            &mut r,
            &[
                ("prime", WorkloadKind::ComputeRuler, &[0.88, 0.99, 1.12]),
                ("int", WorkloadKind::ComputeRuler, &[0.95, 0.98, 1.02]),
            ],
        );
        let a = answer(&build(&r), WorkloadClass::Compute).clone();
        assert_ne!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
    }

    /// A lock thread beside a scanning sibling at 0.97× (0.96–1.01) was mapped to keep HT
    /// on, though the scanner's own progress was never measured.
    #[test]
    fn no_slowdown_beside_a_scanner_is_no_difference_not_keep_ht_on() {
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &[paired(&[0.96, 0.97, 0.98, 0.965, 0.975])]);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::NoDifference, "{}", a.reason);
        assert!(
            a.reason.contains("scanner's own progress was not measured"),
            "{}",
            a.reason
        );
    }

    /// 0.87× (0.85–0.90) against a 0.80 loss line and a ±5 % band was "inconclusive, too
    /// wide to call; more runs needed": it is a measured 10–15 % loss.
    #[test]
    fn a_narrow_slowdown_above_the_loss_line_is_a_small_loss() {
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &[paired(&[0.85, 0.87, 0.89, 0.86, 0.88])]);
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::SmallLoss, "{}", a.reason);
        assert!(a.reason.contains("small loss"), "{}", a.reason);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(!f.meaning.contains("too wide"), "{}", f.meaning);
    }

    /// Lock and insert yields compare N threads with 2N on the same cores: the row says
    /// that "turn HT off" assumes a pool sized to the logical CPUs, and offers the other
    /// remedy.
    #[test]
    fn lock_and_insert_rows_state_the_thread_pool_assumption() {
        let mut r = smt().clone();
        set_yield(
            &mut r,
            &[("hot-page/ttas", WorkloadKind::Lock, &tight(0.76))],
        );
        postgres_with_yield(&mut r, &tight(0.80));
        let v = build(&r);
        for class in [WorkloadClass::Locks, WorkloadClass::Inserts] {
            let a = answer(&v, class);
            assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
            assert!(
                a.reason.contains("sized to the logical CPUs"),
                "{}",
                a.reason
            );
            assert!(a.reason.contains("one thread per core"), "{}", a.reason);
            assert!(a.reason.contains("other remedy"), "{}", a.reason);
        }
    }

    /// A sibling lock thread at 0.70× while the lock threads on other cores of the same
    /// runs were at 0.72×: the scanner slowed every core, so the loss is not put down to
    /// sharing the core, and the row does not say turn HT off.
    #[test]
    fn a_sibling_loss_matched_on_other_cores_is_not_blamed_on_core_sharing() {
        let mut r = smt().clone();
        let sharing = [0.69, 0.70, 0.71, 0.70, 0.695];
        let cross = [0.71, 0.72, 0.73, 0.72, 0.715];
        sibling_scenarios_with_cross(&mut r, &[paired(&sharing)], Some(&cross));
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let a = answer(&v, WorkloadClass::LocksBesideScans);
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
        assert!(
            a.reason.contains("not shown to come from sharing the core"),
            "{}",
            a.reason
        );
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(
            !f.meaning.contains("comes with sharing the core"),
            "{}",
            f.meaning
        );
        assert!(f.meaning.contains("slowed every core"), "{}", f.meaning);
        // With the other cores unaffected, the same loss does come with sharing the core.
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &[paired(&sharing)]);
        let v = build(&r);
        assert_eq!(
            answer(&v, WorkloadClass::LocksBesideScans).answer,
            HtAnswer::TurnHtOff
        );
    }

    /// "(no hardware counters)" was printed beside a sibling loss when counters ran.
    #[test]
    fn a_sibling_loss_does_not_say_no_counters_when_they_ran() {
        let mut r = smt().clone();
        sibling_scenarios(&mut r, &[paired(&[0.5, 0.52, 0.48, 0.5, 0.49])]);
        r.lockscan.as_mut().unwrap().result.counters = Some(crate::counters::Status {
            mode: crate::counters::Mode::All,
            unavailable: Vec::new(),
        });
        let f = build(&r)
            .findings
            .into_iter()
            .find(|f| f.topic.starts_with("locks"))
            .unwrap();
        assert!(
            f.meaning.contains("comes with sharing the core"),
            "{}",
            f.meaning
        );
        assert!(!f.meaning.contains("no hardware counters"), "{}", f.meaning);
    }

    /// The neighbours finding said "lost: SMT sharing" for a sibling-series step whose own
    /// diagnosis was `external-load` (the headline of the same report said external load).
    #[test]
    fn a_sibling_series_loss_diagnosed_external_load_is_not_called_smt_sharing() {
        let mut r = smt().clone();
        let last = r
            .neighbors
            .as_ref()
            .unwrap()
            .series
            .iter()
            .find(|s| s.placement == SeriesPlacement::SiblingBurners)
            .and_then(|s| s.steps.iter().map(|st| st.burners).max())
            .expect("the sibling series ran on SMT");
        deep_loss(
            &mut r,
            SeriesPlacement::SiblingBurners,
            last,
            Diagnosis::ExternalLoad,
            "workers waited for a CPU 40 % of the time with no burner",
        );
        let v = build(&r);
        assert_cites_only_what_was_measured(&v);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("noisy"))
            .unwrap();
        assert!(!f.meaning.contains("lost: SMT sharing"), "{}", f.meaning);
        assert!(f.meaning.contains("external-load"), "{}", f.meaning);
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
        let mut clean = smt().clone();
        set_yield(&mut clean, gain);
        assert_eq!(
            answer(&build(&clean), WorkloadClass::Compute).answer,
            HtAnswer::KeepHtOn
        );
        type Spoil = fn(&mut crate::experiments::smt_yield::YieldReport);
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
            let mut r = clean.clone();
            spoil(&mut r.smt_yield.as_mut().unwrap().result);
            let a = answer(&build(&r), WorkloadClass::Compute).clone();
            assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
            assert!(a.reason.contains(says), "{}", a.reason);
        }
    }

    /// "No effect" (an interval within ±5 %) was printed as "added nothing measurable"
    /// for 1.02–1.05.
    #[test]
    fn no_effect_is_worded_as_inside_the_band_not_as_nothing() {
        let mut r = smt().clone();
        set_yield(
            &mut r,
            &[(
                "int",
                WorkloadKind::ComputeRuler,
                &[1.02, 1.035, 1.05, 1.03, 1.04],
            )],
        );
        let v = build(&r);
        let f = v
            .findings
            .iter()
            .find(|f| f.topic.starts_with("SMT yield"))
            .unwrap();
        assert!(!f.meaning.contains("nothing measurable"), "{}", f.meaning);
        assert!(f.meaning.contains("less than ±5 %"), "{}", f.meaning);
        for s in sentences(&v) {
            assert!(!s.contains("neither helps nor hurts"), "{s}");
            assert!(!s.contains("nothing measurable"), "{s}");
        }
    }
}
