//! What the yield phase concludes, in one place: the study's three answer rows
//! (compute, memory-bound, lock-heavy), each from its class's yields and never pooled
//! across classes, and the phase's finding. The view ([`super::view`]) lays these out.

use super::model::{Layout, WorkloadKind, WorkloadResult, YieldSection};
use crate::conclusion::{
    Aggregate, Answer, AnswerCtx, Conclusions, Evidence, Finding, HtAnswer, Member, PhaseName,
    WorkloadClass, indicative_note, not_answered,
};
use crate::render::{self, count, sig, times};
use crate::stats::Effect;

/// The yield phase's rows: compute, memory-bound, lock-heavy. Without SMT siblings each
/// says why no machine like this one can answer.
impl Conclusions for YieldSection {
    fn answers(y: Option<&Self>, ctx: &AnswerCtx<'_>) -> Vec<Answer> {
        let missing = if ctx.smt { ctx.missing } else { ctx.no_smt };
        vec![
            compute_answer(y, ctx.smt, missing),
            memory_answer(y, ctx.smt, missing),
            locks_answer(y, ctx.smt, missing),
        ]
    }
}

/// The phase that fills this section; results.json names it `"yield"`.
pub const PHASE: PhaseName = PhaseName::new("yield");

/// The compute row of the answer table: the compute rulers' yields. `missing` says why
/// nothing could answer when `smt` is false or the section is absent.
fn compute_answer(y: Option<&YieldSection>, smt: bool, missing: &str) -> Answer {
    class_answer(
        y,
        smt,
        WorkloadClass::Compute,
        &[WorkloadKind::ComputeRuler],
        missing,
    )
}

/// The memory-bound row: the memory rulers' yields, never pooled with the compute ones.
fn memory_answer(y: Option<&YieldSection>, smt: bool, missing: &str) -> Answer {
    class_answer(
        y,
        smt,
        WorkloadClass::Memory,
        &[WorkloadKind::MemoryRuler],
        missing,
    )
}

/// The lock-heavy row: the hot-page lock's yield.
fn locks_answer(y: Option<&YieldSection>, smt: bool, missing: &str) -> Answer {
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
            .find(|x| {
                x.layout == layout && x.round == round && !x.interrupted && x.disturbed.is_none()
            })
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
pub fn yield_quality(y: &YieldSection, members: &[&WorkloadResult]) -> Vec<String> {
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
    // A workload of the class that gave no yield (no round with operations in both
    // layouts: a failed ruler) is named, not dropped silently: the row stands on the rest.
    let failed: Vec<String> = y
        .result
        .workloads
        .iter()
        .filter(|w| members.contains(&w.class))
        .filter(|w| w.smt_yield.as_ref().is_none_or(|s| s.comparison.n == 0))
        .map(|w| format!("`{}`", w.workload))
        .collect();
    if !failed.is_empty() {
        reason.push_str(&format!(
            "; left out of the row, having given no yield (no round with operations in both layouts; its section says why): {}",
            failed.join(", ")
        ));
    }
    reason.push_str(&indicative_note(&agg.central));
    let mut answer = agg.answer(HtAnswer::from_yield);
    if let Some(note) = agg.outside_note() {
        reason.push_str(&format!("; {note}"));
    }
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
        gate: None,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::experiments::smt_yield::model::YieldReport;
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

    /// A ruler that did no work (0 operations in every run) has no yield; the row stands
    /// on the others and names it.
    #[test]
    fn a_failed_ruler_is_named_in_its_row_not_dropped_unmentioned() {
        let mut y = section();
        let (a, b) = (tight(1.3), tight(1.25));
        set_yield(
            &mut y,
            &[
                ("prime", WorkloadKind::ComputeRuler, &a),
                ("int", WorkloadKind::ComputeRuler, &b),
                ("fma", WorkloadKind::ComputeRuler, &b),
            ],
        );
        let w = &mut y.result.workloads[2];
        for r in &mut w.runs {
            r.ops_per_sec = 0.0;
        }
        w.smt_yield = None;
        let a = compute_answer(Some(&y), true, "");
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{}", a.reason);
        assert!(
            a.reason
                .contains("left out of the row, having given no yield")
                && a.reason.contains("`fma`"),
            "{}",
            a.reason
        );
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
