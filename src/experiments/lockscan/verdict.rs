//! lockscan's conclusions: the verdict lines and notes the model keeps ([`verdict_lines`],
//! [`notes`]), the study's answer row ([`answer`], gated by [`quality`]) and its finding
//! ([`finding`]) — each worded here once, from the comparisons `analysis` made. Pure.

use super::config::LockscanConfig;
use super::model::{DisturbedRound, LockscanSection, Note, ScenarioResult};
use crate::conclusion::{
    Aggregate, Answer, CONFIDENCE, Evidence, Finding, Gate, HtAnswer, Member, PhaseName,
    WorkloadClass, indicative_note, not_answered,
};
use crate::locks::StatsMode;
use crate::render::{self, count};
use crate::stats::{Comparison, Effect, Thresholds};

/// The phase that fills this section; results.json names it `"lockscan"`.
pub const PHASE: PhaseName = PhaseName::new("lockscan");

/// Critical-section length (ns) from which `counters` measured within 2 % of `off` for 7 of
/// 8 locks (`cargo bench --bench locks`, 100 ns inside, 200 ns outside); below it, lockscan
/// warns that absolute rates carry the instrumentation's cost.
const COUNTERS_CHEAP_CS_NS: u64 = 100;

/// One line per comparison a scenario with a scanner allows: the sharing lock threads
/// against their own rate without a scanner (the answer; the other lock threads beside it,
/// for comparison), and the others against the baseline.
pub fn verdict_lines(results: &[ScenarioResult], smt: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        if r.scenario.scan_cpus.is_empty() {
            continue;
        }
        let what = if smt {
            "lock threads sharing a core with a scanner"
        } else {
            "the lock thread time-sharing its CPU with a scanner"
        };
        let others = r
            .sharing_vs_others
            .as_ref()
            .map(|c| crate::render::ci_with_runs(c, r.runs));
        match (&r.sharing_vs_own_baseline, others) {
            (Some(c), others) => out.push(format!(
                "{} / {}: {what} acquired {}{}",
                r.lock,
                r.scenario.label,
                c.ratio_of_n(
                    if smt {
                        "their own rate in the same round without a scanner"
                    } else {
                        "its own rate in the same round without a scanner"
                    }
                ),
                others
                    .map(|o| format!(
                        "; against the other lock threads of the same runs {o}, a comparison an unfair lock biases by position"
                    ))
                    .unwrap_or_default()
            )),
            (None, Some(o)) => out.push(format!(
                "{} / {}: {what} acquired at {o} the rate of the other lock threads of the same runs — {}",
                r.lock,
                r.scenario.label,
                if r.threads.iter().any(|t| t.shares_core_with_scanner) {
                    "no baseline run to compare them with themselves (without --no-baseline there is one), and an unfair lock favours some positions even without a scanner"
                } else {
                    "an unfair lock favours some positions even without a scanner"
                }
            )),
            (None, None) => {
                if r.threads.iter().any(|t| t.shares_core_with_scanner) {
                    out.push(format!(
                        "{} / {}: every lock thread shares a core with a scanner and no baseline paired them with themselves; nothing to compare against",
                        r.lock, r.scenario.label
                    ));
                }
            }
        }
        if let Some(c) = &r.cross_core_vs_own_baseline {
            out.push(format!(
                "{} / {}: lock threads on other cores than the scanner ran at {} — {}",
                r.lock,
                r.scenario.label,
                c.ratio_of_n("their own rate in the same round without a scanner"),
                cross_core_effect(c.low, c.high)
            ));
        } else if let Some(c) = &r.cross_core_vs_baseline {
            let (lo, hi) = if r.runs >= 3 {
                (c.low, c.high)
            } else {
                (c.estimate, c.estimate)
            };
            out.push(format!(
                "{} / {}: lock threads on other cores than the scanner ran at {} of their rate without a scanner — {}",
                r.lock,
                r.scenario.label,
                crate::render::ci_with_runs(c, r.runs),
                cross_core_effect(lo, hi)
            ));
        }
        if let (Some(y), Some(sc)) = (
            &r.core_yield,
            Comparison::of_paired_ratios(&r.scan_ratios, Thresholds::SLOWDOWN, CONFIDENCE),
        ) {
            out.push(format!(
                "{} / {}: the scanner wrote {} with its core's lock thread left out; the shared core did {} — {}",
                r.lock,
                r.scenario.label,
                sc.ratio_of_n("of its bytes/s"),
                y.ratio_of_n("of one thread's work (lock thread plus scanner, each against itself one per core)"),
                match y.effect {
                    Effect::Gain => "more work than one thread per core, though each thread may have run slower",
                    Effect::NoEffect => "about the work of one thread per core",
                    Effect::Loss | Effect::SmallLoss => "less work than one thread per core",
                    Effect::Inconclusive => "too wide to call",
                }
            ));
        }
        // The control for a sibling loss: did the sharing threads lose more than the
        // threads on other cores of the same runs?
        if let (Some(own), Some(ctrl)) = (&r.sharing_vs_own_baseline, &r.sharing_vs_cross_core)
            && matches!(own.effect, Effect::Loss | Effect::SmallLoss)
        {
            out.push(format!(
                "{} / {}: against the lock threads on other cores of the same runs, the sharing threads got {} — {}",
                r.lock,
                r.scenario.label,
                ctrl.ratio_of_n( "of their rate"),
                match (ctrl.effect, smt) {
                    (Effect::Loss | Effect::SmallLoss, true) => "they lost more than threads elsewhere, so the loss comes with sharing the core",
                    (Effect::Loss | Effect::SmallLoss, false) => "they lost more than threads elsewhere, so the loss comes with time-sharing the CPU",
                    (Effect::NoEffect, true) => "the loss is not shown to come from sharing the core: the scanner slowed the other cores about as much",
                    (Effect::NoEffect, false) => "the loss is not shown to come from time-sharing the CPU: the scanner slowed the other CPUs about as much",
                    (_, _) => "the control could not tell, so whether the loss is specific to the shared core was not shown",
                }
            ));
        }
    }
    out
}

/// What a cross-core interval means. A direction is called only when the whole interval
/// lies beyond a 5 % noise band (criterion's rule). Which shared resource slowed the other
/// cores is not measured, so none is named.
fn cross_core_effect(lo: f64, hi: f64) -> &'static str {
    if lo > 1.05 {
        "faster: the scanner took CPU time from a competing lock thread, so fewer acquisitions competed"
    } else if hi < 0.95 {
        "slower: the scanner slowed lock threads on other cores too, through something the cores share (which was not measured)"
    } else {
        "no clear cross-core effect (the interval includes no change)"
    }
}

/// What the runs could not show or may have distorted, and why. `steal` is each run's
/// steal share, where measured.
pub fn notes(
    cfg: &LockscanConfig,
    results: &[ScenarioResult],
    smt: bool,
    hypervisor: bool,
    steal: impl IntoIterator<Item = Option<f64>>,
    scan_l2_bytes: Option<u64>,
) -> Vec<String> {
    let mut notes: Vec<Note> = Vec::new();
    notes.extend(crate::hygiene::steal_note("the runs", steal).map(Note::Steal));
    let scanners = results.iter().any(|r| !r.scenario.scan_cpus.is_empty());
    let scan_bytes = cfg.scan_bytes as u64;
    match scan_l2_bytes {
        Some(l2_bytes) if scanners && scan_bytes <= l2_bytes => notes.push(Note::ScanFitsL2 {
            scan_bytes,
            l2_bytes,
        }),
        None if scanners => notes.push(Note::NoL2Size { scan_bytes }),
        _ => {}
    }
    let over: Vec<String> = results
        .iter()
        .filter(|r| r.handoffs_share_of_ceiling.is_some_and(|x| x > 1.0))
        .map(|r| format!("{} / {}", r.lock, r.scenario.label))
        .collect();
    if !over.is_empty() {
        notes.push(Note::AboveCeiling {
            runs: over,
            hypervisor,
        });
    }
    if !smt {
        notes.push(Note::NoSiblings);
    }
    if hypervisor {
        notes.push(Note::Caveat(crate::render::Caveat::Hypervisor {
            kind: None,
        }));
    }
    if cfg.stats == StatsMode::Counters && cfg.cs_ns < COUNTERS_CHEAP_CS_NS {
        notes.push(Note::StatsCost { cs_ns: cfg.cs_ns });
    }
    if cfg.stats == StatsMode::Off {
        notes.push(Note::StatsOff);
    }
    let scenarios: Vec<(String, Vec<DisturbedRound>)> = results
        .iter()
        .filter(|r| !r.disturbed_rounds.is_empty())
        .map(|r| {
            (
                format!("`{}`, {}", r.lock, r.scenario.label),
                r.disturbed_rounds.clone(),
            )
        })
        .collect();
    if !scenarios.is_empty() {
        let ran = results.iter().map(|r| r.runs).max().unwrap_or(0);
        notes.push(Note::Disturbed {
            scenarios,
            again: ran.saturating_sub(cfg.repeat),
        });
    }
    notes.into_iter().map(String::from).collect()
}

// ---------------------------------------------------------------------------------------
// The study's finding and answer row.

/// One scanner scenario's sharing comparison, as the verdict judges it.
#[derive(Debug, Clone)]
struct Sharing {
    /// `` `ttas`, scanner on 1 (sibling of 0) ``.
    label: String,
    lock: crate::locks::LockKind,
    comparison: Comparison,
    /// The per-round ratios behind it, keyed by round ([`keyed`]; own-baseline
    /// comparisons only).
    ratios: Vec<(usize, f64)>,
    /// Per round, this ratio ÷ the same runs' lock threads on other cores against their
    /// own baseline: the control that separates sharing the core from whatever the scanner
    /// does to every core; keyed by round. Empty without such threads and in older files.
    control_ratios: Vec<(usize, f64)>,
    /// Against the thread's own rate without a scanner (false: against the other lock
    /// threads of the same runs, from a file written before the own comparison existed).
    own: bool,
}

impl Sharing {
    fn member(&self) -> Member {
        Member {
            label: self.label.clone(),
            comparison: self.comparison,
            ratios: self.ratios.clone(),
        }
    }
}

/// A scenario's per-round ratios keyed by the round they came from, so that scenarios are
/// paired round by round: with rounds left out as disturbed, the rounds kept, in order,
/// when they account for every ratio; by position otherwise (no round left out, or one
/// that gave no ratio for another reason).
fn keyed(s: &ScenarioResult, ratios: &[f64]) -> Vec<(usize, f64)> {
    let kept: Vec<usize> = (0..s.runs)
        .filter(|r| !s.disturbed_rounds.iter().any(|d| d.round == *r))
        .collect();
    if !s.disturbed_rounds.is_empty() && kept.len() == ratios.len() {
        kept.into_iter().zip(ratios.iter().copied()).collect()
    } else {
        ratios.iter().copied().enumerate().collect()
    }
}

/// The scanner scenarios of lockscan, each judged by its lock threads' own rate without a
/// scanner; a file written before that comparison existed falls back to the other lock
/// threads of the same runs (each such entry says so through `own`).
fn sibling_comparisons(l: &LockscanSection) -> Vec<Sharing> {
    let scanners = || {
        l.result
            .results
            .iter()
            .filter(|s| !s.scenario.scan_cpus.is_empty())
    };
    let entry = |s: &ScenarioResult, c: Comparison, own: bool| Sharing {
        label: format!("`{}`, {}", s.lock, s.scenario.label),
        lock: s.lock,
        comparison: c,
        ratios: if own {
            keyed(s, &s.sharing_ratios)
        } else {
            Vec::new()
        },
        control_ratios: if own {
            keyed(s, &s.sharing_vs_cross_core_ratios)
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
                    &s.control_ratios
                        .iter()
                        .map(|(_, x)| *x)
                        .collect::<Vec<f64>>(),
                    Thresholds::SLOWDOWN,
                    CONFIDENCE,
                )?,
                ratios: s.control_ratios.clone(),
            })
        })
        .collect();
    Aggregate::of(members, Thresholds::SLOWDOWN).map(|a| a.central)
}

/// What a loss beside a scanning sibling may be put down to, given the control: `(clause,
/// shown)` — `shown` is false unless the threads on other cores lost less (a control that
/// lost about as much, one that could not tell, or none at all).
fn control_clause(control: Option<&Comparison>) -> (String, bool) {
    match control {
        Some(c) if matches!(c.effect, Effect::Loss | Effect::SmallLoss) => (
            format!(
                "lock threads on other cores of the same runs lost less (the sharing thread ÷ them: {}), so the loss comes with sharing the core",
                c.ratio_of("")
            ),
            true,
        ),
        // "About as much" is a measured equivalence: the control's interval inside the
        // band. An undecided control shows neither that nor the opposite.
        Some(c) if c.effect == Effect::NoEffect => (
            format!(
                "but lock threads on other cores of the same runs lost about as much (the sharing thread ÷ them: {}), so the loss is not shown to come from sharing the core: the scanner slowed the other cores too (memory bandwidth, the lock's cache line, the clock)",
                c.ratio_of("")
            ),
            false,
        ),
        Some(c) => (
            format!(
                "but the control, the sharing thread ÷ lock threads on other cores of the same runs, could not tell ({}), so whether the loss is specific to sharing the core was not shown; more rounds (a longer `--budget`) would tell",
                c.ratio_of("")
            ),
            false,
        ),
        // Without the control a loss beside the sibling may be the scanner slowing every
        // core (memory bandwidth, the clock), which HT off would not remove: held back.
        None => (
            "no lock thread ran on another core in the same runs (the cross-core control), so whether the loss is specific to sharing the core was not measured and the answer is held back; run lockscan with lock threads on at least two cores and the scanner on one's sibling (`smtlab lockscan --lock-cpus 0,2 --scan-cpus 1` where 1 is 0's sibling, on a machine with two or more cores)".into(),
            false,
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

/// One scanner scenario's core yield: the lock thread's and the scanner's rates, each
/// against itself one per core, summed (as [`ScenarioResult::core_yield`] holds it).
fn core_yield_members(l: &LockscanSection) -> Vec<(Member, Option<Comparison>)> {
    l.result
        .results
        .iter()
        .filter(|s| !s.scenario.scan_cpus.is_empty())
        .filter_map(|s| {
            Some((
                Member {
                    label: format!("`{}`, {}", s.lock, s.scenario.label),
                    comparison: s.core_yield?,
                    ratios: keyed(s, &s.core_yield_ratios),
                },
                Comparison::of_paired_ratios(&s.scan_ratios, Thresholds::SLOWDOWN, CONFIDENCE),
            ))
        })
        .collect()
}

/// Said where no lock thread ran on another core: what the core yield cannot separate.
const NO_CONTROL: &str = "no lock thread ran on another core in the same runs (the cross-core control), so what the scanner does to every core (memory bandwidth, the clock) was not separated from sharing this one and the answer is held back; run lockscan with lock threads on at least two cores and the scanner on one's sibling (`smtlab lockscan --lock-cpus 0,2 --scan-cpus 1` where 1 is 0's sibling, on a machine with two or more cores)";

/// Said where a lock thread lost beside a scanner but the scanner's progress is not in the
/// file: the core as a whole may still have gained.
const SCANNER_NOT_RECORDED: &str = "the scanner's own progress is not in this file (written before it was recorded), so the core's combined progress is unknown and a lock thread's loss is not an answer: two siblings at 0.625× each make a core that does 1.25× the work of one thread; rerun lockscan to measure it";

/// The answer row for lock threads beside a scanning sibling: from the shared core's
/// combined progress (the lock thread's acquisitions and the scanner's bytes, each against
/// itself one per core), not from the lock thread's loss alone. `no_smt` and `phase` are
/// the study's reasons for a machine without siblings and for a phase that gave no
/// section.
pub fn answer(l: Option<&LockscanSection>, smt: bool, no_smt: &str, phase: &str) -> Answer {
    let mut a = ungated_answer(l, smt, no_smt, phase);
    match l {
        Some(l) => {
            if a.evidence.is_some()
                && let Some(c) = disturbed_clause(l)
            {
                a.reason.push_str(&format!("; {c}"));
            }
            a.gated(quality(l))
        }
        None => a,
    }
}

/// The rounds the row's comparisons left out because a run of theirs was disturbed while
/// it ran, counted over the scanner scenarios, with the first reason; None when none was.
fn disturbed_clause(l: &LockscanSection) -> Option<String> {
    let mut all = l
        .result
        .results
        .iter()
        .filter(|r| !r.scenario.scan_cpus.is_empty())
        .flat_map(|r| r.disturbed_rounds.iter().map(move |d| (r, d)));
    let (r, first) = all.next()?;
    let n = 1 + all.count();
    Some(format!(
        "{} with a run disturbed while it ran left out of the paired comparisons (first: `{}`, {}, {first})",
        count(n, "round"),
        r.lock,
        r.scenario.label
    ))
}

/// What in lockscan's own records makes its numbers unfit to answer from: a thread seen
/// on a CPU outside its own (the placement that defines "sharing a core" did not hold),
/// steal above [`crate::hygiene::STEAL_WARN`] during the runs.
pub fn quality(l: &LockscanSection) -> Gate {
    let results = &l.result.results;
    let mut problems = Vec::new();
    let strays: Vec<String> = results
        .iter()
        .filter(|s| !s.pinning_ok && !s.interrupted)
        .map(|s| format!("`{}`, {}", s.lock, s.scenario.label))
        .collect();
    if !strays.is_empty() {
        problems.push(format!(
            "a thread was seen on a CPU outside its own in {} ({}), so the placements did not hold",
            count(strays.len(), "scenario"),
            if strays.len() <= crate::conclusion::LIST_ALL {
                strays.join(", ")
            } else {
                format!("{} and {} more", strays[..2].join(", "), strays.len() - 2)
            }
        ));
    }
    let steal = results
        .iter()
        .filter_map(|s| s.steal_share)
        .fold(0.0f64, f64::max);
    if steal > crate::hygiene::STEAL_WARN {
        problems.push(format!(
            "the hypervisor took up to {} of the measured CPUs' time during the runs (steal)",
            render::percent(steal, 0)
        ));
    }
    Gate::new(&["pinning", "steal"], problems)
}

fn ungated_answer(l: Option<&LockscanSection>, smt: bool, no_smt: &str, phase: &str) -> Answer {
    let class = WorkloadClass::LocksBesideScans;
    let section = Some(PHASE);
    if !smt {
        return not_answered(
            class,
            format!(
                "{}; a scanner here can only time-share a lock thread's CPU, a scheduler \
                 effect that HT does not change",
                no_smt
            ),
            section,
        );
    }
    let Some(l) = l else {
        return not_answered(class, phase.to_string(), section);
    };
    let sharing = sibling_comparisons(l);
    let yields = core_yield_members(l);
    if !yields.is_empty() && sharing.iter().all(|s| s.own) {
        return core_answer(&sharing, yields);
    }
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
    let mut answer = agg.answer(HtAnswer::from_sharing);
    if let Some(note) = agg.outside_note() {
        reason.push_str(&format!("; {note}"));
    }
    if matches!(answer, HtAnswer::TurnHtOff | HtAnswer::SmallLoss) {
        reason.push_str(&format!("; {SCANNER_NOT_RECORDED}"));
        answer = HtAnswer::Inconclusive;
    }
    if answer == HtAnswer::NoDifference {
        reason.push_str(&format!("; {SCANNER_UNMEASURED}"));
    }
    if agg.central.effect == Effect::Gain && !agg.disagree {
        reason.push_str("; the lock threads ran faster beside a scanning sibling, which answers neither way: the scanner's own progress was not measured");
    }
    Answer {
        gate: None,
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

/// The row from the shared cores' combined progress: a gain keeps HT on even where each
/// sibling lost (each at 0.625× is a core doing 1.25× the work); a loss turns it off only
/// when the lock threads on other cores of the same runs lost less (the loss comes with
/// sharing the core); without such threads the row is held back.
fn core_answer(sharing: &[Sharing], yields: Vec<(Member, Option<Comparison>)>) -> Answer {
    let class = WorkloadClass::LocksBesideScans;
    let scan_kept: Vec<Comparison> = yields.iter().filter_map(|(_, c)| *c).collect();
    let Some(agg) = Aggregate::of(
        yields.into_iter().map(|(m, _)| m).collect(),
        Thresholds::YIELD,
    ) else {
        return not_answered(
            class,
            "lockscan ran no scenario with a scanner beside a lock thread".into(),
            Some(PHASE),
        );
    };
    let mut reason = format!(
        "work done by a core whose SMT siblings ran a lock thread and a memory scanner, each \
         against itself one per core and summed, {}",
        agg.text("one thread per core", "scanner scenarios")
    );
    let lock_kept = Aggregate::of(
        sharing.iter().map(Sharing::member).collect(),
        Thresholds::SLOWDOWN,
    )
    .map(|a| a.central);
    let scan_kept = (!scan_kept.is_empty()).then(|| {
        // The middle scenario's: one sentence per side, the row's members carry the rest.
        let mut v = scan_kept;
        v.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
        v[(v.len() - 1) / 2]
    });
    if let (Some(lk), Some(sk)) = (lock_kept, scan_kept) {
        reason.push_str(&format!(
            "; of that, the lock thread kept {} and the scanner {}{}",
            lk.ratio_of("of its rate without a scanner"),
            sk.ratio_of("of its bytes/s with its core's lock thread left out"),
            if agg.k > 1 {
                " (medians over the scenarios)"
            } else {
                ""
            }
        ));
    }
    reason.push_str(&indicative_note(&agg.central));
    let mut answer = agg.answer(HtAnswer::from_yield);
    if let Some(note) = agg.outside_note() {
        reason.push_str(&format!("; {note}"));
    }
    let control = control_of(sharing);
    match (&control, answer) {
        (None, HtAnswer::NotMeasured) => {}
        (None, _) => {
            reason.push_str(&format!("; {NO_CONTROL}"));
            answer = HtAnswer::Inconclusive;
        }
        (Some(_), HtAnswer::TurnHtOff | HtAnswer::SmallLoss) => {
            let (clause, shown) = control_clause(control.as_ref());
            reason.push_str(&format!("; {clause}"));
            if !shown {
                answer = HtAnswer::Inconclusive;
            } else {
                reason.push_str("; keeping memory-streaming work off the siblings of threads that hold such a lock is the other remedy");
            }
        }
        (Some(_), HtAnswer::KeepHtOn)
            if lock_kept.is_some_and(|c| matches!(c.effect, Effect::Loss | Effect::SmallLoss)) =>
        {
            reason.push_str("; the lock thread itself was slower beside the scanner, so HT on serves throughput here, not the lock holder's latency");
        }
        _ => {}
    }
    Answer {
        gate: None,
        class,
        answer,
        evidence: Some(Evidence {
            what: "work of a core shared by a lock thread and a memory scanner ÷ one thread \
                   per core: the lock thread's acquisitions/s ÷ itself without a scanner plus \
                   the scanner's bytes/s ÷ itself with its core's lock thread left out, paired \
                   by round"
                .into(),
            runs: if agg.k == 1 {
                format!("lockscan, {}", agg.members[0].0)
            } else {
                format!("lockscan, {} scanner scenarios", agg.k)
            },
            comparison: agg.central,
        }),
        reason,
        section: Some(PHASE),
    }
}

/// What lockscan showed, for the study's findings: per lock its rate without a scanner,
/// beside one (against itself, the control on other cores), and on other cores.
pub fn finding(l: &LockscanSection, smt: bool) -> Finding {
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
    let (mut lost_core, mut lost_everywhere, mut lost_unclear, mut lost_uncontrolled) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Locks whose shared core did more work in all than one thread on it.
    let mut core_gained: Vec<String> = Vec::new();
    for lock in locks {
        let mine: Vec<_> = results.iter().filter(|s| s.lock == lock).collect();
        let mut line = format!("`{lock}`:");
        if let Some(b) = mine.iter().find(|s| s.scenario.scan_cpus.is_empty())
            && let Some(a) = &b.acquisitions_per_sec
        {
            line.push_str(&format!(
                " {} acquisitions/s without a scanner (Jain {:.2})",
                crate::render::pm_n(a),
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
                    ctrl.ratio_of("")
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
                    Some(Effect::NoEffect) => lost_everywhere.push(name),
                    Some(_) => lost_unclear.push(name),
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
        // The shared core's work: the lock thread and the scanner, each against itself one
        // per core, summed.
        let cores: Vec<Member> = mine
            .iter()
            .filter(|s| !s.scenario.scan_cpus.is_empty())
            .filter_map(|s| {
                Some(Member {
                    label: s.scenario.label.clone(),
                    comparison: s.core_yield?,
                    ratios: keyed(s, &s.core_yield_ratios),
                })
            })
            .collect();
        if smt && let Some(agg) = Aggregate::of(cores, Thresholds::YIELD) {
            if agg.answer(HtAnswer::from_yield) == HtAnswer::KeepHtOn {
                core_gained.push(format!("`{lock}`"));
            }
            line.push_str(&format!(
                "; the core it shared with the scanner did {}{}",
                agg.central.ratio_of("of one thread's work (lock thread plus scanner, each against itself one per core)"),
                if agg.k > 1 {
                    format!(" (per-round median over {} scanner positions)", agg.k)
                } else {
                    String::new()
                }
            ));
            evidence.push(Evidence {
                what: format!(
                    "`{lock}`: the shared core's work, lock thread ÷ itself without a scanner plus scanner ÷ itself with its core's lock thread left out"
                ),
                runs: format!("lockscan, {}", count(agg.k, "scanner position")),
                comparison: agg.central,
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
                    ratios: keyed(s, &s.cross_core_ratios),
                })
            })
            .collect();
        if let Some(agg) = Aggregate::of(cross, Thresholds::SLOWDOWN) {
            line.push_str(&format!(
                "; lock threads on other cores kept {}{}",
                agg.central.ratio_of("of their rate without a scanner"),
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
    } else if !lost_core.is_empty()
        || !lost_everywhere.is_empty()
        || !lost_unclear.is_empty()
        || !lost_uncontrolled.is_empty()
    {
        let mut parts = Vec::new();
        if !lost_core.is_empty() {
            parts.push(format!(
                "{} lost beside a scanning sibling and more than lock threads on other cores of the same runs: the loss comes with sharing the core{}",
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
        if !lost_unclear.is_empty() {
            parts.push(format!(
                "{} lost beside a scanning sibling; against lock threads on other cores of the same runs the control could not tell, so whether the loss is specific to sharing the core was not shown",
                lost_unclear.join(", ")
            ));
        }
        if !lost_uncontrolled.is_empty() {
            parts.push(format!(
                "{} lost beside a scanning sibling; no lock thread ran on another core in the same runs, so whether the loss is specific to sharing the core was not measured",
                lost_uncontrolled.join(", ")
            ));
        }
        // One sentence of what was lost and why, one of what to do: read at a glance
        // beside the comparisons' table.
        let mut m = capitalise(&format!("{}.", parts.join("; ")));
        if !lost_core.is_empty() && !core_gained.is_empty() {
            m.push_str(&format!(
                " Yet the core shared by the lock thread and the scanner did more work in all than one thread on it ({}): HT on serves this mix's throughput; keep memory-streaming work off the siblings of threads holding such a lock where the lock's latency matters.",
                core_gained.join(", ")
            ));
        } else if !lost_core.is_empty() {
            m.push_str(" Keep memory-streaming work off the siblings of threads holding such a lock, or turn HT off for such a mix.");
        }
        m
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

/// `this file …` → `This file …`.
fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::RunSpec;
    use crate::experiments::lockscan::{Layout, Scenario};
    use crate::locks::LockKind;
    use crate::stats::{Ci, Comparison};

    pub(crate) fn result(
        scan: &[u32],
        runs: usize,
        vs_others: Option<Ci>,
        vs_base: Option<Ci>,
    ) -> ScenarioResult {
        ScenarioResult {
            scenario: Scenario {
                label: "s".into(),
                lock_cpus: vec![0, 1],
                scan_cpus: scan.to_vec(),
            },
            lock: LockKind::Ttas,
            runs,
            threads: Vec::new(),
            acquisitions_per_sec: None,
            jain_index: 1.0,
            max_min_ratio: 1.0,
            handoffs_per_sec: None,
            sharing_vs_own_baseline: None,
            sharing_ratios: Vec::new(),
            sharing_vs_others: vs_others,
            cross_core_vs_baseline: vs_base,
            cross_core_ratios: Vec::new(),
            cross_core_vs_own_baseline: None,
            sharing_vs_cross_core_ratios: Vec::new(),
            sharing_vs_cross_core: None,
            scan_bytes_per_sec: Vec::new(),
            scan_alone_bytes_per_sec: Vec::new(),
            scan_ratios: Vec::new(),
            core_yield_ratios: Vec::new(),
            core_yield: None,
            c2c_latency_ns: None,
            c2c_latency_by_proximity: Vec::new(),
            handoffs_share_of_ceiling: None,
            pinning_ok: true,
            steal_share: None,
            interrupted: false,
            core_cpi: Vec::new(),
            disturbed_rounds: Vec::new(),
        }
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
    fn the_own_baseline_answers_and_the_others_are_shown_as_biased() {
        let mut r = result(&[2], 5, Some(ci(0.1, 0.08, 0.12)), None);
        r.sharing_ratios = vec![0.97, 0.99, 1.0, 1.01, 0.98];
        r.sharing_vs_own_baseline = crate::stats::Comparison::of_paired_ratios(
            &r.sharing_ratios,
            crate::stats::Thresholds::SLOWDOWN,
            0.95,
        );
        let v = verdict_lines(&[r], true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].starts_with(
                "ttas / s: lock threads sharing a core with a scanner acquired 0.99× their own rate in the same round without a scanner (95 % CI"
            ),
            "{v:?}"
        );
        assert!(v[0].contains(", n = 5: no effect)"), "{v:?}");
        assert!(
            v[0].ends_with("against the other lock threads of the same runs 0.10× (95 % CI 0.08–0.12), a comparison an unfair lock biases by position"),
            "{v:?}"
        );
    }

    #[test]
    fn a_sharing_ratio_carries_its_interval_or_says_why_not() {
        let r = result(&[2], 5, Some(ci(0.1, 0.08, 0.12)), None);
        assert_eq!(
            verdict_lines(&[r], true),
            [
                "ttas / s: lock threads sharing a core with a scanner acquired at 0.10× (95 % CI 0.08–0.12) the rate of the other lock threads of the same runs — an unfair lock favours some positions even without a scanner"
            ]
        );
        let r = result(&[1], 1, Some(ci(0.5, 0.5, 0.5)), None);
        let v = verdict_lines(&[r], false);
        assert!(
            v[0].contains("the lock thread time-sharing its CPU"),
            "{v:?}"
        );
        assert!(
            v[0].contains("0.50× (1 run: too few for a confidence interval"),
            "{v:?}"
        );
    }

    #[test]
    fn a_baseline_scenario_has_no_verdict() {
        let r = result(&[], 5, None, None);
        assert!(verdict_lines(&[r], true).is_empty());
    }

    #[test]
    fn cross_core_direction_needs_the_whole_interval_beyond_five_percent() {
        assert!(cross_core_effect(1.06, 1.3).starts_with("faster"));
        assert!(cross_core_effect(0.7, 0.94).starts_with("slower"));
        // The interval reaches into the noise band: no direction.
        assert!(cross_core_effect(1.04, 1.3).starts_with("no clear"));
        assert!(cross_core_effect(0.7, 0.96).starts_with("no clear"));
        // An old file's two runs: the estimate alone decides.
        let v = verdict_lines(&[result(&[2], 2, None, Some(ci(1.2, 0.5, 2.0)))], true);
        assert!(v[0].contains("faster"), "{v:?}");
        let v = verdict_lines(&[result(&[2], 3, None, Some(ci(0.8, 0.7, 0.9)))], true);
        assert_eq!(
            v.len(),
            1,
            "no sharing ratio and no sharing thread: one line"
        );
        assert!(
            v[0].ends_with(
                "— slower: the scanner slowed lock threads on other cores too, through something the cores share (which was not measured)"
            ),
            "{v:?}"
        );
    }

    #[test]
    fn notes_say_what_is_missing_here() {
        let spec =
            RunSpec::new(std::time::Duration::ZERO, std::time::Duration::from_secs(1)).unwrap();
        let cfg = LockscanConfig::new(Layout::ScannerOnLowest, vec![LockKind::Ttas], spec).unwrap();
        let mut over = result(&[2], 3, None, None);
        over.handoffs_share_of_ceiling = Some(1.5);
        let n = notes(&cfg, &[over], false, true, [None], Some(512 << 10));
        assert!(
            n[0].starts_with("handoffs above the c2c ceiling") && n[0].contains("moves vCPUs"),
            "{n:?}"
        );
        assert!(
            n[1].starts_with("no SMT siblings") && !n[1].contains("seed"),
            "{n:?}"
        );
        assert!(n[2].starts_with("running under a hypervisor"), "{n:?}");
        assert!(n[3].contains("with a 0 ns critical section"), "{n:?}");
        let off = cfg
            .clone()
            .with_stats(StatsMode::Off)
            .unwrap()
            .with_cs_ns(500)
            .unwrap();
        let n = notes(&off, &[], true, false, [None], None);
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("lock stats off"), "{n:?}");
    }

    #[test]
    fn a_scan_buffer_inside_the_l2_is_said_to_stay_in_the_core() {
        let spec =
            RunSpec::new(std::time::Duration::ZERO, std::time::Duration::from_secs(1)).unwrap();
        let cfg = LockscanConfig::new(Layout::ScannerOnLowest, vec![LockKind::Ttas], spec)
            .unwrap()
            .with_cs_ns(500)
            .unwrap();
        let scan = [result(&[2], 3, None, None)];
        // 1 MiB in a 2 MiB L2.
        let n = notes(&cfg, &scan, true, false, [None], Some(2 << 20));
        assert!(
            n[0].starts_with("the 1 MiB scan buffer fits in the scanner's 2 MiB L2"),
            "{n:?}"
        );
        // Past a 512 KiB L2: nothing to say.
        assert!(notes(&cfg, &scan, true, false, [None], Some(512 << 10)).is_empty());
        let n = notes(&cfg, &scan, true, false, [None], None);
        assert!(n[0].contains("reports no L2 size"), "{n:?}");
        // No scanner ran: no note about its buffer.
        assert!(
            notes(
                &cfg,
                &[result(&[], 3, None, None)],
                true,
                false,
                [None],
                None
            )
            .is_empty()
        );
    }

    /// A sibling loss at 0.70× beside other-core threads at 0.72× of the same runs: the
    /// loss is not put down to sharing the core.
    #[test]
    fn a_sibling_loss_matched_on_other_cores_is_not_put_down_to_the_core() {
        use crate::stats::Thresholds;
        let mut r = result(&[2], 5, None, None);
        r.sharing_ratios = vec![0.69, 0.70, 0.71, 0.70, 0.695];
        r.sharing_vs_own_baseline =
            Comparison::of_paired_ratios(&r.sharing_ratios, Thresholds::SLOWDOWN, 0.95);
        r.cross_core_ratios = vec![0.71, 0.72, 0.73, 0.72, 0.715];
        r.cross_core_vs_own_baseline =
            Comparison::of_paired_ratios(&r.cross_core_ratios, Thresholds::SLOWDOWN, 0.95);
        r.sharing_vs_cross_core_ratios = r
            .sharing_ratios
            .iter()
            .zip(&r.cross_core_ratios)
            .map(|(a, b)| a / b)
            .collect();
        r.sharing_vs_cross_core = Comparison::of_paired_ratios(
            &r.sharing_vs_cross_core_ratios,
            Thresholds::SLOWDOWN,
            0.95,
        );
        let v = verdict_lines(&[r], true);
        let control = v
            .iter()
            .find(|l| l.contains("against the lock threads on other cores"))
            .unwrap();
        assert!(
            control.contains("not shown to come from sharing the core"),
            "{v:?}"
        );
        let cross = v
            .iter()
            .find(|l| l.contains("on other cores than the scanner"))
            .unwrap();
        assert!(cross.contains("0.72×"), "{v:?}");
        assert!(
            !cross.contains("memory bandwidth"),
            "names no unmeasured cause: {v:?}"
        );
    }

    pub(crate) fn scenario(label: &str, acquisitions: Option<f64>) -> ScenarioResult {
        ScenarioResult {
            scenario: Scenario {
                label: label.into(),
                lock_cpus: vec![0, 1],
                scan_cpus: vec![2],
            },
            lock: LockKind::Ttas,
            runs: 1,
            threads: Vec::new(),
            acquisitions_per_sec: acquisitions.and_then(|x| crate::stats::Summary::of(&[x])),
            jain_index: 1.0,
            max_min_ratio: 1.0,
            handoffs_per_sec: None,
            sharing_vs_own_baseline: None,
            sharing_ratios: Vec::new(),
            sharing_vs_others: None,
            cross_core_vs_baseline: None,
            cross_core_ratios: Vec::new(),
            cross_core_vs_own_baseline: None,
            sharing_vs_cross_core_ratios: Vec::new(),
            sharing_vs_cross_core: None,
            scan_bytes_per_sec: Vec::new(),
            scan_alone_bytes_per_sec: Vec::new(),
            scan_ratios: Vec::new(),
            core_yield_ratios: Vec::new(),
            core_yield: None,
            c2c_latency_ns: None,
            c2c_latency_by_proximity: Vec::new(),
            handoffs_share_of_ceiling: None,
            pinning_ok: true,
            steal_share: None,
            interrupted: true,
            core_cpi: Vec::new(),
            disturbed_rounds: Vec::new(),
        }
    }

    #[test]
    fn ratios_after_a_disturbed_round_keep_their_round_numbers() {
        use super::super::model::DisturbedRun;
        // Round 2 of 4 left out: the three ratios came from rounds 1, 3 and 4, and are
        // paired with other scenarios' rounds 1, 3 and 4, not 1–3.
        let mut s = scenario("s", None);
        s.runs = 4;
        assert_eq!(keyed(&s, &[0.5, 0.6, 0.7]), [(0, 0.5), (1, 0.6), (2, 0.7)]);
        s.disturbed_rounds = vec![DisturbedRound {
            round: 1,
            run: DisturbedRun::Scenario,
            why: "steal".into(),
        }];
        assert_eq!(keyed(&s, &[0.5, 0.6, 0.7]), [(0, 0.5), (2, 0.6), (3, 0.7)]);
        // Fewer ratios than rounds kept (a round gave none for another reason): by position.
        assert_eq!(keyed(&s, &[0.5, 0.6]), [(0, 0.5), (1, 0.6)]);
        // The notes list the round with its reason, and the rounds run again.
        let cfg = LockscanConfig::new(
            Layout::Sweep(crate::placement::Scope::Package),
            vec![LockKind::Ttas],
            RunSpec::default(),
        )
        .unwrap()
        .with_repeat(3)
        .unwrap();
        let notes = notes(&cfg, &[s], true, false, [None], Some(1 << 20));
        let n = notes
            .iter()
            .find(|n| n.starts_with("rounds disturbed while they ran"))
            .expect("a note for the disturbed round");
        assert!(
            n.contains("`ttas`, s: round 2 (first: round 2, its own run: steal); 1 more round was run at the end in their place"),
            "{n}"
        );
    }

    // -----------------------------------------------------------------------------------
    // The study's finding and answer row, on a fake sweep whose scanner scenarios are then
    // set to given per-round ratios.

    const NO_SMT: &str = "no SMT siblings";
    const PHASE: &str = "the lockscan phase did not run";

    /// A study-like section: the scanner swept over a 4-core, 2-thread fixture, two locks,
    /// three rounds, on the fake engine.
    fn section() -> LockscanSection {
        use crate::engine::{FakeEngine, RunSpec};
        let topo = crate::topology::fixture::topology(4, 2, false);
        let spec = RunSpec::new(
            std::time::Duration::ZERO,
            std::time::Duration::from_millis(10),
        )
        .unwrap();
        let cfg = LockscanConfig::new(
            Layout::Sweep(crate::placement::Scope::Package),
            vec![LockKind::Ttas, LockKind::Ticket],
            spec,
        )
        .unwrap()
        .with_repeat(3)
        .unwrap();
        let scen = super::super::scenarios(&topo, &cfg.layout, true).unwrap();
        let engine = FakeEngine::new(7).with_topology(&topo);
        let result = super::super::run(&engine, &topo, &cfg, &scen, &mut |_, _, _, _| {}).unwrap();
        LockscanSection {
            layout: "sweep".into(),
            locks: cfg.locks.clone(),
            warmup_ns: 0,
            duration_ns: 10_000_000,
            result,
        }
    }

    /// Replaces the scanner scenarios by one per entry, each with its own-baseline
    /// comparison and per-round ratios, and lock threads on other cores at `cross` (None:
    /// 1.0 in every round).
    fn sibling_scenarios(
        l: &mut LockscanSection,
        scenarios: &[(Comparison, Vec<f64>)],
        cross: Option<&[f64]>,
    ) {
        use crate::stats::Thresholds;
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
            // As a file written before the scanner's progress was recorded.
            s.scan_bytes_per_sec.clear();
            s.scan_alone_bytes_per_sec.clear();
            s.scan_ratios.clear();
            s.core_yield_ratios.clear();
            s.core_yield = None;
            l.result.results.push(s);
        }
    }

    /// Gives every scanner scenario the scanner's per-round rate ÷ its one-per-core run,
    /// `scan`, and the core yield it makes with the lock thread's own-baseline ratios.
    fn with_scanner(l: &mut LockscanSection, scan: &[f64]) {
        for s in l
            .result
            .results
            .iter_mut()
            .filter(|s| !s.scenario.scan_cpus.is_empty())
        {
            s.scan_alone_bytes_per_sec = vec![8e9; scan.len()];
            s.scan_bytes_per_sec = scan.iter().map(|x| x * 8e9).collect();
            s.scan_ratios = scan.to_vec();
            s.core_yield_ratios = s
                .sharing_ratios
                .iter()
                .zip(scan)
                .map(|(a, b)| a + b)
                .collect();
            s.core_yield =
                Comparison::of_paired_ratios(&s.core_yield_ratios, Thresholds::YIELD, 0.95);
        }
    }

    /// The row of a section with these scanner scenarios, the scanner at `scan` of its
    /// one-per-core rate each round; `control: false` leaves no lock thread on another
    /// core (a one-core machine).
    fn judged_core(scenarios: &[(Comparison, Vec<f64>)], scan: &[f64], control: bool) -> Answer {
        let mut l = section();
        sibling_scenarios(&mut l, scenarios, None);
        with_scanner(&mut l, scan);
        if !control {
            for s in &mut l.result.results {
                s.cross_core_ratios.clear();
                s.cross_core_vs_own_baseline = None;
                s.sharing_vs_cross_core_ratios.clear();
                s.sharing_vs_cross_core = None;
            }
        }
        answer(Some(&l), true, NO_SMT, PHASE)
    }

    /// At a core yield of 1.25 each sibling runs at 0.625× of its rate one per core: the
    /// lock thread is below the 0.8 loss line, but the core did a quarter more work than
    /// either thread alone on it. That is no reason to turn HT off.
    #[test]
    fn a_core_that_gains_while_each_sibling_loses_keeps_ht_on() {
        let lock = [0.62, 0.63, 0.625, 0.62, 0.63];
        let scan = [0.63, 0.62, 0.625, 0.63, 0.62];
        let a = judged_core(&[paired(&lock)], &scan, true);
        assert_ne!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
        let e = a.evidence.as_ref().unwrap();
        assert!((e.comparison.estimate - 1.25).abs() < 0.01, "{e:?}");
        assert!(e.what.contains("plus the scanner's bytes/s"), "{}", e.what);
        assert!(
            a.reason.contains("the lock thread kept 0.62") && a.reason.contains("the scanner 0.62"),
            "{}",
            a.reason
        );
        let mut l = section();
        sibling_scenarios(&mut l, &[paired(&lock)], None);
        with_scanner(&mut l, &scan);
        let f = finding(&l, true);
        assert!(
            f.observed
                .contains("the core it shared with the scanner did 1.25×"),
            "{}",
            f.observed
        );
        assert!(
            f.meaning.contains("HT on serves this mix's throughput"),
            "{}",
            f.meaning
        );
        assert!(!f.meaning.contains("turn HT off"), "{}", f.meaning);
        // The same lock loss beside a scanner that kept only a fifth of its rate is a core
        // that lost: 0.625 + 0.2 = 0.83.
        let a = judged_core(&[paired(&lock)], &[0.2; 5], true);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
        // A file without the scanner's progress: the lock thread's loss alone answers
        // nothing.
        let (a, _) = judged(&[paired(&lock)], None);
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
        assert!(
            a.reason
                .contains("scanner's own progress is not in this file"),
            "{}",
            a.reason
        );
    }

    #[test]
    fn the_row_says_which_rounds_it_left_out_as_disturbed() {
        use super::super::model::DisturbedRun;
        let mut l = section();
        sibling_scenarios(&mut l, &[paired(&[0.99, 1.0, 1.01, 1.0])], None);
        for s in l
            .result
            .results
            .iter_mut()
            .filter(|s| !s.scenario.scan_cpus.is_empty())
        {
            s.runs = 5;
            s.disturbed_rounds = vec![DisturbedRound {
                round: 4,
                run: DisturbedRun::Baseline,
                why: "steal".into(),
            }];
        }
        let a = answer(Some(&l), true, NO_SMT, PHASE);
        assert!(
            a.reason.contains(
                "1 round with a run disturbed while it ran left out of the paired comparisons (first: `"
            ) && a
                .reason
                .contains("scenario 0, round 5, the baseline's run: steal)"),
            "{}",
            a.reason
        );
    }

    /// One core (no lock thread on another core, no cross-core control): whatever the
    /// core yield, the row is held back and says what to run.
    #[test]
    fn without_a_lock_thread_on_another_core_the_core_yield_is_held_back() {
        let lock = [0.62, 0.63, 0.625, 0.62, 0.63];
        for scan in [[0.625; 5], [0.2; 5]] {
            let a = judged_core(&[paired(&lock)], &scan, false);
            assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
            assert!(
                a.reason.contains("held back")
                    && a.reason.contains("--lock-cpus 0,2 --scan-cpus 1"),
                "{}",
                a.reason
            );
        }
    }

    /// A scenario whose own-baseline comparison comes from `ratios`.
    fn paired(ratios: &[f64]) -> (Comparison, Vec<f64>) {
        use crate::stats::Thresholds;
        let c = Comparison::of_paired_ratios(ratios, Thresholds::SLOWDOWN, 0.95).unwrap();
        (c, ratios.to_vec())
    }

    /// The row and the finding of a section with these scanner scenarios.
    fn judged(scenarios: &[(Comparison, Vec<f64>)], cross: Option<&[f64]>) -> (Answer, Finding) {
        let mut l = section();
        sibling_scenarios(&mut l, scenarios, cross);
        let a = answer(Some(&l), true, NO_SMT, PHASE);
        let f = finding(&l, true);
        for text in [&a.reason, &f.observed, &f.meaning] {
            for banned in [
                "fill buffer",
                "store queue",
                "far less",
                "did not measurably",
            ] {
                assert!(!text.contains(banned), "`{banned}` in: {text}");
            }
        }
        (a, f)
    }

    #[test]
    fn without_siblings_or_without_a_section_the_row_says_why() {
        let l = section();
        let a = answer(Some(&l), false, NO_SMT, PHASE);
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(
            a.reason.starts_with("no SMT siblings; a scanner here"),
            "{}",
            a.reason
        );
        let a = answer(None, true, NO_SMT, PHASE);
        assert_eq!(
            (a.answer, a.reason.as_str()),
            (HtAnswer::NotMeasured, PHASE)
        );
        assert!(
            finding(&l, false)
                .meaning
                .starts_with("A scanner here can only time-share")
        );
    }

    #[test]
    fn a_wide_interval_around_half_is_inconclusive_not_no_effect() {
        use crate::stats::Thresholds;
        let c = Comparison::from_ci(ci(0.50, 0.30, 0.85), 5, Thresholds::SLOWDOWN);
        let (a, f) = judged(&[(c, vec![0.30, 0.45, 0.50, 0.60, 0.85])], None);
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(
            a.reason.contains("its own rate without a scanner"),
            "{}",
            a.reason
        );
        assert!(f.meaning.contains("too wide to call"), "{}", f.meaning);
        assert!(f.observed.contains("inconclusive"), "{}", f.observed);
    }

    /// One scanner position of 24 with a clear loss (even at 1 − 0.05/24) beside 23 with
    /// none: neither "no difference" (the median) nor "turn HT off" (the worst) holds for
    /// the row, which says so and names the position.
    #[test]
    fn one_lost_scenario_of_24_makes_the_row_depend_on_it() {
        let mut all = vec![paired(&[0.97, 0.98, 0.99, 0.98, 0.98]); 23];
        all.insert(7, paired(&[0.55, 0.60, 0.65, 0.60, 0.58]));
        let (a, f) = judged(&all, None);
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
        assert!(
            f.observed.contains("per-round median of 24"),
            "{}",
            f.observed
        );
    }

    #[test]
    fn a_sibling_loss_names_the_lock_that_lost() {
        let lost = vec![paired(&[0.5, 0.52, 0.48, 0.5, 0.49]); 3];
        let (_, f) = judged(&lost, None);
        let a = judged_core(&lost, &[0.2; 5], true);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
        assert!(
            f.meaning.starts_with(
                "`ttas` lost beside a scanning sibling and more than lock threads on other cores"
            ),
            "{}",
            f.meaning
        );
        // At a glance: what was lost and why, then what to do — two sentences.
        assert_eq!(f.meaning.matches(". ").count(), 1, "{}", f.meaning);
    }

    #[test]
    fn a_thread_slow_against_the_others_but_not_against_itself_is_no_loss() {
        // An unfair lock: beside the scanner the thread gets 0.3× the others, as it did
        // without a scanner; against its own baseline it kept its rate.
        let mut l = section();
        sibling_scenarios(&mut l, &[paired(&[0.99, 1.0, 1.01, 1.0, 0.98])], None);
        for s in &mut l.result.results {
            s.sharing_vs_others = Some(ci(0.30, 0.25, 0.35));
        }
        let a = answer(Some(&l), true, NO_SMT, PHASE);
        assert_eq!(a.answer, HtAnswer::NoDifference, "{a:?}");
        assert!(!a.reason.contains("0.30"), "{}", a.reason);
    }

    #[test]
    fn an_old_file_falls_back_to_the_other_threads_and_says_so() {
        let mut l = section();
        sibling_scenarios(&mut l, &[paired(&[1.0; 5]), paired(&[1.0; 5])], None);
        for s in &mut l.result.results {
            s.sharing_vs_own_baseline = None;
            s.sharing_ratios.clear();
            s.sharing_vs_others = Some(ci(0.98, 0.96, 1.0));
        }
        let a = answer(Some(&l), true, NO_SMT, PHASE);
        assert_eq!(a.answer, HtAnswer::NoDifference, "{a:?}");
        assert!(a.reason.starts_with("this file predates"), "{}", a.reason);
        assert!(
            a.reason.contains("the other lock threads' rate"),
            "{}",
            a.reason
        );
        assert!(a.reason.contains("not widened"), "{}", a.reason);
        let f = finding(&l, true);
        assert!(
            f.observed.starts_with("This file predates"),
            "{}",
            f.observed
        );
    }

    /// A lock thread beside a scanning sibling at 0.97× (0.96–1.01) was mapped to keep HT
    /// on, though the scanner's own progress was never measured.
    #[test]
    fn no_slowdown_beside_a_scanner_is_no_difference_not_keep_ht_on() {
        let (a, _) = judged(&[paired(&[0.96, 0.97, 0.98, 0.965, 0.975])], None);
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
        let small = [paired(&[0.85, 0.87, 0.89, 0.86, 0.88])];
        let (_, f) = judged(&small, None);
        // The scanner adds 0.02–0.04 of its rate: the core did 0.88–0.92 of one thread's
        // work, below the yield's 0.95 loss line; the lock thread's own ratio is the small
        // loss it is.
        let a = judged_core(&small, &[0.03, 0.02, 0.03, 0.04, 0.03], true);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
        assert!(
            a.reason.contains("the lock thread kept 0.87× of its rate without a scanner (95 % CI 0.85–0.89: small loss)"),
            "{}",
            a.reason
        );
        assert!(!f.meaning.contains("too wide"), "{}", f.meaning);
    }

    /// A sibling lock thread at 0.70× while the lock threads on other cores of the same
    /// runs were at 0.72×: the scanner slowed every core, so the loss is not put down to
    /// sharing the core, and the row does not say turn HT off.
    #[test]
    fn a_sibling_loss_matched_on_other_cores_is_not_blamed_on_core_sharing() {
        let sharing = [0.69, 0.70, 0.71, 0.70, 0.695];
        let cross = [0.71, 0.72, 0.73, 0.72, 0.715];
        let (_, f) = judged(&[paired(&sharing)], Some(&cross));
        let mut l = section();
        sibling_scenarios(&mut l, &[paired(&sharing)], Some(&cross));
        with_scanner(&mut l, &[0.05; 5]);
        let a = answer(Some(&l), true, NO_SMT, PHASE);
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{}", a.reason);
        assert!(
            a.reason.contains("not shown to come from sharing the core"),
            "{}",
            a.reason
        );
        assert!(
            !f.meaning.contains("comes with sharing the core"),
            "{}",
            f.meaning
        );
        assert!(f.meaning.contains("slowed every core"), "{}", f.meaning);
        // With the other cores unaffected, the same loss does come with sharing the core.
        let a = judged_core(&[paired(&sharing)], &[0.05; 5], true);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
    }

    /// "(no hardware counters)" was printed beside a sibling loss when counters ran.
    #[test]
    fn a_sibling_loss_does_not_say_no_counters_when_they_ran() {
        let mut l = section();
        sibling_scenarios(&mut l, &[paired(&[0.5, 0.52, 0.48, 0.5, 0.49])], None);
        l.result.counters = Some(crate::counters::Status {
            mode: crate::counters::Mode::All,
            unavailable: Vec::new(),
        });
        let f = finding(&l, true);
        assert!(
            f.meaning.contains("comes with sharing the core"),
            "{}",
            f.meaning
        );
        assert!(!f.meaning.contains("no hardware counters"), "{}", f.meaning);
    }
}

#[cfg(test)]
mod control_tests {
    use super::*;

    fn ctrl(x: f64, low: f64, high: f64) -> Comparison {
        let t = Thresholds::SLOWDOWN;
        Comparison {
            estimate: x,
            low,
            high,
            confidence: 0.95,
            n: 5,
            indicative: false,
            effect: crate::stats::classify(low, high, t),
            thresholds: t,
            method: crate::stats::IntervalMethod::StudentTLog,
        }
    }

    /// "Lost about as much … the scanner slowed the other cores too" is a measured
    /// equivalence: an undecided control (0.80×, 0.50–1.30) shows neither it nor its
    /// opposite, and the answer stays held back without naming a mechanism.
    #[test]
    fn the_every_core_mechanism_is_named_only_from_a_no_difference_control() {
        let undecided = ctrl(0.80, 0.50, 1.30);
        assert_eq!(undecided.effect, Effect::Inconclusive);
        let (clause, shown) = control_clause(Some(&undecided));
        assert!(!shown, "{clause}");
        assert!(
            !clause.contains("about as much") && !clause.contains("memory bandwidth"),
            "{clause}"
        );
        assert!(clause.contains("could not tell"), "{clause}");
        let same = ctrl(0.99, 0.97, 1.02);
        assert_eq!(same.effect, Effect::NoEffect);
        let (clause, shown) = control_clause(Some(&same));
        assert!(!shown && clause.contains("lost about as much"), "{clause}");
        let (clause, shown) = control_clause(Some(&ctrl(0.6, 0.55, 0.65)));
        assert!(
            shown && clause.contains("comes with sharing the core"),
            "{clause}"
        );
    }

    /// A one-core machine has no lock thread on another core: a loss beside the sibling is
    /// inconclusive there, and the row says what to run.
    #[test]
    fn without_the_cross_core_control_a_loss_is_held_back_saying_what_to_run() {
        let (clause, shown) = control_clause(None);
        assert!(!shown, "{clause}");
        assert!(
            clause.contains("held back") && clause.contains("--lock-cpus 0,2 --scan-cpus 1"),
            "{clause}"
        );
    }
}
