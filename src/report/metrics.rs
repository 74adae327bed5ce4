//! The answer table as numbers other tools read: the names of classes and answers as they
//! appear in JSON and labels, what ratio each class's evidence is, and the study's answer
//! table as Prometheus gauges (`study --prometheus`, node_exporter's textfile format).
//!
//! `smtlab merge` reads the same names and the same effect-to-answer rule, so a fleet's
//! answer for a machine type is decided as one host's is.

use super::{Answer, HtAnswer, Report, WorkloadClass};
use crate::render::prometheus::{Exposition, SMT_YIELD_HELP, labels};
use crate::stats::Effect;

/// Every workload class, in the answer table's order.
pub const CLASSES: [WorkloadClass; 7] = [
    WorkloadClass::Compute,
    WorkloadClass::Memory,
    WorkloadClass::Locks,
    WorkloadClass::LocksBesideScans,
    WorkloadClass::Inserts,
    WorkloadClass::ReadMostlyCache,
    WorkloadClass::Command,
];

/// Every answer.
pub const ANSWERS: [HtAnswer; 7] = [
    HtAnswer::KeepHtOn,
    HtAnswer::TurnHtOff,
    HtAnswer::SmallLoss,
    HtAnswer::NoDifference,
    HtAnswer::DependsOnWorkload,
    HtAnswer::Inconclusive,
    HtAnswer::NotMeasured,
];

/// Every answer a machine type can get from `merge`: a study's, and hosts that disagree.
pub const FLEET_ANSWERS: [HtAnswer; 8] = [
    HtAnswer::KeepHtOn,
    HtAnswer::TurnHtOff,
    HtAnswer::SmallLoss,
    HtAnswer::NoDifference,
    HtAnswer::DependsOnWorkload,
    HtAnswer::HostsDisagree,
    HtAnswer::Inconclusive,
    HtAnswer::NotMeasured,
];

/// The class as JSON spells it (`locks-beside-scans`): the label value of every gauge.
pub fn class_slug(c: WorkloadClass) -> &'static str {
    match c {
        WorkloadClass::Compute => "compute",
        WorkloadClass::Memory => "memory",
        WorkloadClass::Locks => "locks",
        WorkloadClass::LocksBesideScans => "locks-beside-scans",
        WorkloadClass::Inserts => "inserts",
        WorkloadClass::ReadMostlyCache => "read-mostly-cache",
        WorkloadClass::Command => "command",
    }
}

/// The answer as JSON spells it (`turn-ht-off`).
pub fn answer_slug(a: HtAnswer) -> &'static str {
    match a {
        HtAnswer::KeepHtOn => "keep-ht-on",
        HtAnswer::TurnHtOff => "turn-ht-off",
        HtAnswer::SmallLoss => "small-loss",
        HtAnswer::NoDifference => "no-difference",
        HtAnswer::DependsOnWorkload => "depends-on-workload",
        HtAnswer::Inconclusive => "inconclusive",
        HtAnswer::NotMeasured => "not-measured",
        HtAnswer::HostsDisagree => "hosts-disagree",
    }
}

/// What the ratio behind a class's answer compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RatioKind {
    /// Throughput with every sibling busy ÷ one thread per core on the same cores: above 1
    /// SMT adds capacity.
    SmtYield,
    /// A thread's rate beside a busy sibling ÷ the same thread alone: below 1 sharing a
    /// core costs it.
    SiblingSharing,
}

impl RatioKind {
    pub fn label(self) -> &'static str {
        match self {
            RatioKind::SmtYield => "SMT yield",
            RatioKind::SiblingSharing => "sibling sharing ratio",
        }
    }
}

/// The ratio each class's answer rests on (the verdict's rows: the yield phase for compute
/// and locks, oltp's `all` ÷ `one-per-core` for inserts, the command's `all` ÷
/// `one-per-core`; lockscan's thread beside a scanning sibling ÷ alone).
///
/// Locks beside scans rests on the shared core's combined progress (lock thread and
/// scanner, each against itself one per core), a yield; files written before the
/// scanner's progress was recorded carry the lock thread's sharing ratio alone
/// ([`evidence_kind`] tells them apart).
pub fn ratio_kind(c: WorkloadClass) -> RatioKind {
    let _ = c;
    RatioKind::SmtYield
}

/// The kind of ratio a row's evidence is: its class's, except a locks-beside-scans row
/// judged against the slowdown thresholds, which is the lock thread's sharing ratio alone
/// (a file without the scanner's progress). None without evidence.
pub fn evidence_kind(a: &Answer) -> Option<RatioKind> {
    let c = a.evidence.as_ref()?.comparison;
    Some(
        if a.class == WorkloadClass::LocksBesideScans
            && c.thresholds == crate::stats::Thresholds::SLOWDOWN
        {
            RatioKind::SiblingSharing
        } else {
            ratio_kind(a.class)
        },
    )
}

/// The answer an interval's class gives for a workload class, as the verdict maps a
/// host's: for a yield a gain keeps HT on, a loss turns it off, a smaller measured loss is
/// a small loss, no effect is no difference; for a sharing ratio a loss turns HT off, a
/// smaller one is a small loss, no slowdown is no difference (what the sibling's own work
/// gained was not measured), and a sharing thread that ran faster answers nothing either
/// way. An inconclusive interval is inconclusive.
pub fn answer_for(c: WorkloadClass, e: Effect) -> HtAnswer {
    match ratio_kind(c) {
        RatioKind::SmtYield => HtAnswer::from_yield(e),
        RatioKind::SiblingSharing => HtAnswer::from_sharing(e),
    }
}

/// HELP of `smtlab_answer`.
pub const ANSWER_HELP: &str =
    "The study's answer for a workload class: 1 for the answer given, 0 for the others.";

/// The study's answer table as gauges: per class `smtlab_answer{class,answer}` (1 for the
/// answer given, 0 for the other six), the measured ratio with its interval and run count
/// (`smtlab_smt_yield`, `_low`, `_high`, `_runs`; `smtlab_sibling_sharing_ratio…` for the
/// class judged by a sharing ratio), and when and how the study ran.
pub fn prometheus(r: &Report) -> String {
    let mut e = Exposition::new();
    let mut answers = Vec::new();
    for a in &r.verdict.answers {
        for x in ANSWERS {
            answers.push((
                labels(&[("class", class_slug(a.class)), ("answer", answer_slug(x))]),
                if a.answer == x { 1.0 } else { 0.0 },
            ));
        }
    }
    e.gauge("smtlab_answer", ANSWER_HELP, &answers);
    for (kind, name, help) in [
        (RatioKind::SmtYield, "smtlab_smt_yield", SMT_YIELD_HELP),
        (
            RatioKind::SiblingSharing,
            "smtlab_sibling_sharing_ratio",
            "A thread's rate beside a busy SMT sibling over the same thread alone, per workload class.",
        ),
    ] {
        let rows: Vec<(String, crate::stats::Comparison)> = r
            .verdict
            .answers
            .iter()
            .filter(|a| evidence_kind(a) == Some(kind))
            .filter_map(|a| {
                let c = a.evidence.as_ref()?.comparison;
                Some((labels(&[("class", class_slug(a.class))]), c))
            })
            .collect();
        let pick = |f: fn(&crate::stats::Comparison) -> f64| -> Vec<(String, f64)> {
            rows.iter().map(|(l, c)| (l.clone(), f(c))).collect()
        };
        e.gauge(name, help, &pick(|c| c.estimate));
        e.gauge(
            &format!("{name}_low"),
            "Lower bound of the interval of the ratio of the same name (see smtlab_interval_confidence).",
            &pick(|c| c.low),
        );
        e.gauge(
            &format!("{name}_high"),
            "Upper bound of the interval of the ratio of the same name.",
            &pick(|c| c.high),
        );
        e.gauge(
            &format!("{name}_runs"),
            "Paired runs behind the ratio of the same name.",
            &pick(|c| c.n as f64),
        );
    }
    let confidence: Vec<(String, f64)> = r
        .verdict
        .answers
        .iter()
        .filter_map(|a| {
            Some((
                labels(&[("class", class_slug(a.class))]),
                a.evidence.as_ref()?.comparison.confidence,
            ))
        })
        .collect();
    e.gauge(
        "smtlab_interval_confidence",
        "Confidence level asked of the interval behind a class's answer (0.95 = 95 %).",
        &confidence,
    );
    e.gauge(
        "smtlab_study_start_time_seconds",
        "When the study started, seconds since the Unix epoch.",
        &[(String::new(), r.provenance.started_unix_s as f64)],
    );
    e.gauge(
        "smtlab_study_info",
        "The study behind these gauges: smtlab version, status, and whether its numbers were made up (synthetic).",
        &[(
            labels(&[
                ("version", &r.provenance.smtlab_version),
                ("git_revision", &r.provenance.git_revision),
                (
                    "status",
                    match r.status {
                        super::Status::Complete => "complete",
                        super::Status::Partial => "partial",
                    },
                ),
                ("synthetic", if r.synthetic { "true" } else { "false" }),
            ]),
            1.0,
        )],
    );
    e.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_the_json_names() {
        for c in CLASSES {
            assert_eq!(
                serde_json::to_value(c).unwrap().as_str(),
                Some(class_slug(c))
            );
        }
        for a in FLEET_ANSWERS {
            assert_eq!(
                serde_json::to_value(a).unwrap().as_str(),
                Some(answer_slug(a))
            );
        }
    }

    #[test]
    fn the_mapping_is_the_verdicts_for_yields_and_sharing_ratios() {
        use WorkloadClass as C;
        assert_eq!(answer_for(C::Compute, Effect::Gain), HtAnswer::KeepHtOn);
        assert_eq!(
            answer_for(C::Compute, Effect::NoEffect),
            HtAnswer::NoDifference
        );
        assert_eq!(answer_for(C::Inserts, Effect::Loss), HtAnswer::TurnHtOff);
        // Locks beside scans is the shared core's yield: a gain keeps HT on.
        assert_eq!(
            answer_for(C::LocksBesideScans, Effect::NoEffect),
            HtAnswer::NoDifference
        );
        assert_eq!(
            answer_for(C::LocksBesideScans, Effect::Gain),
            HtAnswer::KeepHtOn
        );
        assert_eq!(
            answer_for(C::Memory, Effect::SmallLoss),
            HtAnswer::SmallLoss
        );
        assert_eq!(
            answer_for(C::LocksBesideScans, Effect::Loss),
            HtAnswer::TurnHtOff
        );
        for c in CLASSES {
            assert_eq!(answer_for(c, Effect::Inconclusive), HtAnswer::Inconclusive);
        }
        // A locks-beside-scans row judged against the slowdown thresholds is the lock
        // thread's sharing ratio alone (a file without the scanner's progress).
        let row = |t: crate::stats::Thresholds| Answer {
            class: C::LocksBesideScans,
            answer: HtAnswer::Inconclusive,
            evidence: Some(crate::conclusion::Evidence {
                what: String::new(),
                runs: String::new(),
                comparison: crate::stats::Comparison::of_paired_ratios(&[0.7, 0.72, 0.69], t, 0.95)
                    .unwrap(),
            }),
            reason: String::new(),
            section: None,
            gate: None,
        };
        use crate::stats::Thresholds;
        assert_eq!(
            evidence_kind(&row(Thresholds::SLOWDOWN)),
            Some(RatioKind::SiblingSharing)
        );
        assert_eq!(
            evidence_kind(&row(Thresholds::YIELD)),
            Some(RatioKind::SmtYield)
        );
    }
}
