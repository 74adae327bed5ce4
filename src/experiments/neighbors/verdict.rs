//! What neighbors concludes, in one place: the study's finding (per series its unloaded
//! rate and lowest step, which locks lost once runnable threads outnumbered the CPUs, what
//! the controlled sibling series says), the headline's largest loss, and whether an
//! unloaded step saw outside load. A mechanism is named only where the series controlled
//! it. The view ([`super::view`]) lays the runs out.

use super::diagnosis::Diagnosis;
use super::model::{NeighborsSection, NeighborsSeries, SeriesPlacement, SeriesStep};
use crate::conclusion::{Evidence, Finding, PhaseName};
use crate::render::count;
use crate::stats::Effect;

/// The phase that fills this section; results.json names it `"neighbors"`.
pub const PHASE: PhaseName = PhaseName::new("neighbors");

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
    } else if slowed.is_empty()
        && !n
            .series
            .iter()
            .flat_map(|s| &s.steps)
            .any(|st| st.runnable_threads > st.cpus)
    {
        "Every step had at most as many runnable threads as CPUs.".into()
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
    // The headline quotes the lowest loss (`largest_loss`); where neither sentence above
    // covers its step (not oversubscribed, not the sibling series' last step), say it here
    // too, so that the headline and this section say the same.
    if let Some((s, st, c)) = lowest_loss(n) {
        let sibling_last = s.placement == SeriesPlacement::SiblingBurners
            && s.steps.iter().map(|x| x.burners).max() == Some(st.burners);
        if st.runnable_threads <= st.cpus && !sibling_last {
            if !meaning.is_empty() {
                meaning.push(' ');
            }
            meaning.push_str(&format!(
                "The largest loss, `{}` with {} at {}, came with at most as many runnable \
                 threads as CPUs: diagnosed `{}`.",
                s.lock,
                placed_burners(s.placement, st.burners),
                c.ratio_of("its unloaded rate"),
                st.diagnosis.label()
            ));
        }
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
        // Burners on the siblings also load what the package shares (L3, memory
        // bandwidth, the clock); only the same burners on other cores of the package, a
        // control this study does not run, would tell the core from the package.
        parts.push(format!(
            "{} lost beside busy SMT siblings, each thread with a CPU of its own (so not time slicing); {PACKAGE_CONTROL}{}",
            lost.join(", "),
            if n.runs.iter().any(|r| r.hypervisor) {
                format!("; {GUEST_SIBLINGS}")
            } else {
                String::new()
            }
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

/// Why a loss beside busy siblings is not called SMT sharing: the package-level control
/// was not run.
const PACKAGE_CONTROL: &str = "no run put the same burners on other cores of the package, so whether the loss comes from sharing the core or from what the package shares (L3, memory bandwidth, the clock) was not measured";

/// Said under a hypervisor: a guest's siblings are its VM configuration's.
const GUEST_SIBLINGS: &str = "under a hypervisor the siblings are what the VM reports, and they may not share a physical core";

/// The neighbors step whose paired interval lies lowest, when it is a loss: what it cost,
/// what the diagnosis measured, and what the other locks of the same placement kept at the
/// same burner count.
pub fn largest_loss(n: &NeighborsSection) -> Option<String> {
    let (series, st, c) = lowest_loss(n)?;
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
        "Largest measured loss beside CPU burners (neighbours): with {} and {} the `{}` lock \
         ran at {}{}{}.",
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

/// The step with burners whose paired interval lies lowest, when it is a loss.
fn lowest_loss(
    n: &NeighborsSection,
) -> Option<(&NeighborsSeries, &SeriesStep, crate::stats::Comparison)> {
    n.series
        .iter()
        .flat_map(|s| {
            s.steps
                .iter()
                .filter(|st| st.burners > 0)
                .filter_map(move |st| Some((s, st, st.ratio?)))
        })
        .filter(|(_, _, c)| c.effect == Effect::Loss)
        .min_by(|a, b| a.2.high.total_cmp(&b.2.high))
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
            " — beside busy SMT siblings: the burners were pinned to the workers' siblings and \
             the threads had a CPU each; {PACKAGE_CONTROL} ({})",
            st.reason
        ),
        d => format!(
            " — not an HT result: diagnosed `{}` from {}",
            d.label(),
            st.reason
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        // The headline's loss is in the section's meaning too, with its diagnosis; the
        // headline says it is not an HT result.
        assert!(
            f.meaning.contains(
                "The largest loss, `ticket` with 1 burner at 0.60× its unloaded rate (95 % CI \
                 0.55–0.65: loss), came with at most as many runnable threads as CPUs: \
                 diagnosed `shared-resources`."
            ),
            "{}",
            f.meaning
        );
        assert!(
            !f.meaning.contains("narrow enough to call"),
            "{}",
            f.meaning
        );
        assert!(
            loss.contains("— not an HT result: diagnosed `shared-resources`"),
            "{loss}"
        );
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
            loss.contains("— beside busy SMT siblings: the burners were pinned"),
            "{loss}"
        );
        let f = finding(&n);
        // Without the package-level control, the mechanism is not named.
        assert!(!f.meaning.contains("SMT sharing, since"), "{}", f.meaning);
        assert!(
            f.meaning.contains("lost beside busy SMT siblings")
                && f.meaning
                    .contains("no run put the same burners on other cores"),
            "{}",
            f.meaning
        );
        assert!(!f.meaning.contains("under a hypervisor"), "{}", f.meaning);
        // In a guest, its siblings may not be real.
        let mut g = n.clone();
        g.runs.push(super::super::model::NeighborsReport {
            schema_version: super::super::model::SCHEMA_VERSION,
            workload: "hot-page/ticket".into(),
            workers: 4,
            worker_placement: "one per core".into(),
            burner_kind: crate::burn::BurnerKind::Prime,
            burner_placement: super::super::BurnerPlacement::OtherCores,
            burner_mode: super::super::BurnerMode::Thread,
            burner_policy: crate::burn::Policy::Idle,
            time_slice_ns: 1.5e6,
            smt: true,
            hypervisor: true,
            reference: None,
            steps: Vec::new(),
            repeat: 1,
            summary: Vec::new(),
            skipped: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
            counters: None,
        });
        let f = finding(&g);
        assert!(
            f.meaning.contains("siblings are what the VM reports"),
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
