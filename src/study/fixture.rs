//! The fake study every view's answer-row and finding tests start from: one study on the
//! fake engine per topology, each section produced by the real experiment code, built
//! once and cloned by the tests that change a section. Test-only.

use crate::engine::FakeEngine;
use crate::report::{Answer, HtAnswer, MachineInfo, Provenance, Report, Verdict, WorkloadClass};
use crate::topology::fixture;
use std::sync::OnceLock;

/// A study on the fake engine: every section produced by the real experiment code.
pub fn study(cores: u32, threads_per_core: u32) -> Report {
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
    let cfg = super::tests::config(super::QUICK_BUDGET);
    super::run(
        &FakeEngine::new(7).with_topology(&topo),
        &topo,
        machine,
        provenance,
        &cfg,
        &crate::progress::Quiet,
    )
    .expect("fake study")
}

/// The fake study on 2 cores without SMT siblings.
pub fn no_smt() -> &'static Report {
    static R: OnceLock<Report> = OnceLock::new();
    R.get_or_init(|| study(2, 1))
}

/// The fake study on 4 cores with 2 threads each.
pub fn smt() -> &'static Report {
    static R: OnceLock<Report> = OnceLock::new();
    R.get_or_init(|| study(4, 2))
}

/// The verdict's row for `class`.
pub fn answer(v: &Verdict, class: WorkloadClass) -> &Answer {
    v.answers
        .iter()
        .find(|a| a.class == class)
        .expect("a row per class")
}

/// Every sentence the verdict prints.
pub fn sentences(v: &Verdict) -> Vec<String> {
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
pub fn assert_cites_only_what_was_measured(v: &Verdict) {
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
