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

use super::{Answer, HtAnswer, PhaseName, PhaseStatus, Report, SeriesPlacement, Status, Verdict};
use crate::conclusion::cmp_text;
use crate::experiments::{compare, lockscan, neighbors, oltp, rwcache, smt_yield};
use crate::render::count;

/// Builds the verdict from everything else in the report.
pub fn build(r: &Report) -> Verdict {
    let smt = r.smt.threads_per_core > 1;
    let findings = findings(r, smt);
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
        lockscan::view::answer(
            r.lockscan.as_ref(),
            smt,
            &no_smt_reason(r),
            &phase_reason(r, PhaseName::Lockscan),
        ),
        oltp::view::inserts_answer(
            r.oltp.as_ref(),
            smt,
            &phase_reason(r, PhaseName::Oltp),
            &no_smt,
        ),
        rwcache::view::answer(
            r.rwcache.as_ref(),
            smt,
            &no_smt_reason(r),
            &phase_reason(r, PhaseName::Rwcache),
        ),
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

/// The order findings are listed in: the lock experiments first, then what explains them
/// (c2c's handoff ceiling), then the rulers and the user's command. Sections not listed
/// here follow in the report's order.
const FINDING_ORDER: [PhaseName; 7] = [
    PhaseName::Lockscan,
    PhaseName::Neighbors,
    PhaseName::Oltp,
    PhaseName::Rwcache,
    PhaseName::C2c,
    PhaseName::Yield,
    PhaseName::Compare,
];

/// Every section's finding, in [`FINDING_ORDER`].
fn findings(r: &Report, smt: bool) -> Vec<super::Finding> {
    let mut sections: Vec<_> = r
        .sections()
        .into_iter()
        .filter_map(|(phase, s)| Some((phase, s?)))
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

// ---------------------------------------------------------------------------------------
// Findings, one per experiment.

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conclusion::{WorkloadClass, pm};
    use crate::engine::FakeEngine;
    use crate::experiments::smt_yield::{Layout as YieldLayout, WorkloadKind};
    use crate::placement::Request;
    use crate::report::{MachineInfo, Provenance};
    use crate::stats::Summary;
    use crate::stats::{Comparison, Effect, Thresholds};
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
            &crate::progress::Quiet,
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
        assert!(
            crate::experiments::lockscan::view::core_cpi(&r.lockscan.as_ref().unwrap().result)
                .is_none()
        );
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
        let t = crate::experiments::lockscan::view::core_cpi(&r.lockscan.as_ref().unwrap().result)
            .unwrap();
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
