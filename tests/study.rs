//! `study` and `report`: the report model built with the fake engine (snapshots of JSON,
//! Markdown and HTML), re-rendering byte for byte, partial reports after Ctrl-C, and the CLI (bad input, a real
//! Ctrl-C during a quick study). The pages in a real browser: `browser.rs`.

use crate::common::{self, own_process};
use assert_cmd::Command;
use smtlab::engine::FakeEngine;
use smtlab::experiments::{c2c, compare, lockscan, neighbors, oltp, rwcache, smt_yield};
use smtlab::oltp::DbTarget;
use smtlab::progress::Quiet;
use smtlab::report::{self, MachineInfo, PhaseName, PhaseStatus, Provenance, Report, Status};
use smtlab::study::{self, Progress};
use std::time::Duration;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

fn machine(topo: &smtlab::topology::Topology) -> MachineInfo {
    MachineInfo {
        kernel: "Linux 6.1.0-test #1 SMP x86_64".into(),
        frequency_governor: "unavailable".into(),
        hypervisor: if topo.machine.hypervisor {
            "KVM".into()
        } else {
            "none".into()
        },
        hardware_counters: "unavailable (no CPU PMU exposed by the kernel; typical in VMs)".into(),
        ..report::machine::summary(topo)
    }
}

fn provenance() -> Provenance {
    Provenance {
        smtlab_version: "0.0.0-test".into(),
        git_revision: "000000000000".into(),
        build_profile: "release".into(),
        command: "smtlab study --quick --out out".into(),
        started_unix_s: 1_700_000_000,
        wall_ns: 0,
    }
}

fn config() -> study::Config {
    study::Config {
        quick: true,
        budget: study::QUICK_BUDGET,
        db: DbTarget::Sqlite(None),
        command: "smtlab study --quick --out out".into(),
        within: smtlab::placement::Scope::Package,
        compare: None,
        counters: smtlab::counters::Mode::default(),
    }
}

/// rwcache measures its own clock's overhead and names the clock: machine facts that the
/// fake engine cannot fix. Pin them so snapshots are the same everywhere.
fn normalise(r: &mut Report) {
    if let Some(o) = &mut r.oltp {
        // The real oltp code opened a temporary SQLite file; its path has the pid in it.
        o.result.db_description = format!(
            "{} at a temporary file (normalised for the test)",
            o.result.db_version
        );
    }
    if let Some(w) = &mut r.rwcache {
        w.result.timer_overhead_ns = 0.0;
        w.result.clock = "tsc".into();
        for n in &mut w.result.notes {
            if n.starts_with("lock time is sampled") {
                *n = "lock time is sampled (normalised for the test)".into();
            }
        }
    }
}

/// The study on a made-up machine through the fake engine.
pub(crate) fn fake_report(cores: u32, threads_per_core: u32, progress: &dyn Progress) -> Report {
    fake_report_with(cores, threads_per_core, &config(), progress)
}

/// The study of `cfg` on a made-up machine through the fake engine.
fn fake_report_with(
    cores: u32,
    threads_per_core: u32,
    cfg: &study::Config,
    progress: &dyn Progress,
) -> Report {
    let topo = smtlab::topology::fixture::topology(cores, threads_per_core, true);
    let engine = FakeEngine::new(7)
        .with_topology(&topo)
        .with_rate_for("oltp ", 30_000.0);
    let mut r = study::run(&engine, &topo, machine(&topo), provenance(), cfg, progress).unwrap();
    normalise(&mut r);
    r
}

#[test]
fn fake_study_snapshots_json_markdown_html() {
    let r = fake_report(2, 1, &Quiet);
    assert!(r.synthetic);
    assert_eq!(r.status, Status::Complete);
    for p in &r.phases {
        if p.phase == smt_yield::PHASE || p.phase == compare::PHASE {
            // No SMT siblings on this made-up machine: no yield to measure; no command.
            assert_eq!(p.status, PhaseStatus::Skipped, "{p:?}");
            continue;
        }
        assert_eq!(p.status, PhaseStatus::Done, "{p:?}");
    }
    let json = r.to_json().unwrap();
    let rendered = report::render_json(&json).unwrap();
    insta::assert_snapshot!("fake_results_json", json);
    insta::assert_snapshot!("fake_summary_md", rendered.markdown);
    insta::assert_snapshot!("fake_report_html", rendered.html);
}

#[test]
fn the_verdict_says_no_smt_here_and_what_results_mean() {
    let r = fake_report(2, 1, &Quiet);
    let v = &r.verdict;
    assert!(v.headline.starts_with("SYNTHETIC DATA"), "{}", v.headline);
    assert!(v.headline.contains("no SMT siblings"), "{}", v.headline);
    assert!(v.headline.contains("On this machine"), "{}", v.headline);
    let topics: Vec<&str> = v.findings.iter().map(|f| f.topic.as_str()).collect();
    for t in [
        "locks",
        "noisy neighbours",
        "database inserts",
        "read-mostly cache",
        "cache-line",
    ] {
        assert!(topics.iter().any(|x| x.starts_with(t)), "{t} in {topics:?}");
    }
    for f in &v.findings {
        assert!(!f.meaning.is_empty() && !f.observed.is_empty(), "{f:?}");
    }
    assert!(
        v.not_measured
            .iter()
            .any(|n| n.starts_with("SMT sibling effects"))
    );
    assert!(v.not_measured.iter().any(|n| n.contains("`pairs`")));
    // No siblings: the controlled sibling series of neighbors is skipped, with the reason.
    let n = r.neighbors.as_ref().unwrap();
    assert!(
        n.sibling_skipped
            .as_deref()
            .is_some_and(|w| w.starts_with("no SMT siblings")),
        "{:?}",
        n.sibling_skipped
    );
    assert!(
        n.series
            .iter()
            .all(|s| s.placement == report::SeriesPlacement::Unpinned)
    );
}

#[test]
fn an_smt_machine_gets_sibling_findings() {
    let r = fake_report(4, 2, &Quiet);
    assert_eq!(r.smt.threads_per_core, 2);
    assert!(
        !r.verdict.headline.contains("cannot be tested"),
        "{}",
        r.verdict.headline
    );
    assert!(
        !r.verdict
            .not_measured
            .iter()
            .any(|n| n.starts_with("SMT sibling effects"))
    );
    let o = r.oltp.as_ref().unwrap();
    assert!(
        o.summary
            .iter()
            .any(|s| s.placement == smtlab::placement::Request::Pairs),
        "pairs ran on SMT"
    );
    // neighbors ran a controlled series beside the unpinned one: workers one per core,
    // burners pinned to their siblings, 0 up to one per worker.
    let n = r.neighbors.as_ref().unwrap();
    let sib: Vec<_> = n
        .series
        .iter()
        .filter(|s| s.placement == report::SeriesPlacement::SiblingBurners)
        .collect();
    assert_eq!(sib.len(), n.locks.len(), "{:?}", n.series);
    for s in &sib {
        let burners: Vec<usize> = s.steps.iter().map(|st| st.burners).collect();
        assert_eq!(burners, [0, 1, 2, 3, 4]);
    }
    // The unpinned series never claims SMT sharing.
    for s in n
        .series
        .iter()
        .filter(|s| s.placement == report::SeriesPlacement::Unpinned)
    {
        for st in &s.steps {
            assert_ne!(st.diagnosis.label(), "smt-sharing", "{st:?}");
        }
    }
    let md = report::markdown::render(&r);
    // SQLite serialises writers: no SMT yield is claimed from it.
    assert!(!md.contains("SMT yield:"), "{md}");
    // The answer table comes first, one row per workload class.
    let v = &r.verdict;
    assert_eq!(v.answers.len(), 7, "{:?}", v.answers);
    assert!(md.find("| workload class |").unwrap() < md.find("## Machine").unwrap());
    insta::assert_snapshot!("fake_smt_summary_md", md);
}

/// An AMD family 15h machine: the kernel's thread siblings are CMT modules (two integer
/// cores sharing a front end, FPU and L2), not Hyper-Threading. The study must not answer
/// "keep HT on / turn HT off" there: every answer row is not measured, and the reason names
/// the modules.
#[test]
fn a_cmt_machine_answers_no_ht_question_and_names_the_modules() {
    let mut topo = smtlab::topology::fixture::topology(4, 2, false);
    topo.machine.vendor = Some("AuthenticAMD".into());
    topo.machine.family = Some(0x15);
    let engine = FakeEngine::new(7)
        .with_topology(&topo)
        .with_rate_for("oltp ", 30_000.0);
    let r = study::run(
        &engine,
        &topo,
        machine(&topo),
        provenance(),
        &config(),
        &Quiet,
    )
    .unwrap();
    assert!(r.smt.sentence.contains("CMT module"), "{}", r.smt.sentence);
    let v = &r.verdict;
    for a in &v.answers {
        assert_eq!(a.answer, report::HtAnswer::NotMeasured, "{a:?}");
        // Rows with a reason of their own first (no command given, SQLite's one writer)
        // say that instead.
        if !matches!(
            a.class,
            report::WorkloadClass::Command | report::WorkloadClass::Inserts
        ) {
            assert!(a.reason.contains("CMT module"), "{a:?}");
        }
    }
    assert!(v.headline.contains("no SMT siblings"), "{}", v.headline);
    let y = r
        .phases
        .iter()
        .find(|p| p.phase == smt_yield::PHASE)
        .unwrap();
    assert_eq!(y.status, PhaseStatus::Skipped, "{y:?}");
}

/// A study with the user's command: `smtlab study --quick [OPTIONS] -- my-app --bench`.
fn config_with_command(f: impl FnOnce(&mut smtlab::experiments::compare::Config)) -> study::Config {
    let mut c = smtlab::experiments::compare::Config::new(vec!["my-app".into(), "--bench".into()]);
    // The band `smtlab study` gives the command without `--noise`: its answer rows' ±5 %.
    c.noise = smtlab::stats::Thresholds::YIELD.noise;
    f(&mut c);
    study::Config {
        command: "smtlab study --quick --out out -- my-app --bench".into(),
        compare: Some(c),
        ..config()
    }
}

/// The compare section in the Markdown: from its heading to the footer.
fn markdown_section(md: &str) -> &str {
    let start = md
        .find("## Your command (compare)")
        .expect("compare section");
    let end = md[start..].find("\n---\n").map_or(md.len(), |e| start + e);
    &md[start..end]
}

/// The compare section of the HTML.
fn html_section(html: &str) -> &str {
    let start = html
        .find("<section id=\"compare\">")
        .expect("compare section");
    let end = html[start..].find("</section>").unwrap() + start + "</section>".len();
    &html[start..end]
}

#[test]
fn a_command_on_an_smt_machine_gets_its_section_chart_and_answer_row() {
    use smtlab::experiments::compare::{PlacementChoice, metric::MetricSpec};
    use smtlab::placement::Request;
    let cfg = config_with_command(|c| {
        c.placements = vec![
            PlacementChoice::Named(Request::OnePerCore),
            PlacementChoice::Named(Request::All),
        ];
        c.metric = Some(MetricSpec::Pgbench);
        c.runs = Some(6);
    });
    let r = fake_report_with(4, 2, &cfg, &Quiet);
    let p = r.phases.iter().find(|p| p.phase == compare::PHASE);
    assert_eq!(p.map(|p| p.status), Some(PhaseStatus::Done), "{p:?}");
    let c = r.compare.as_ref().expect("a compare section");
    assert_eq!(c.result.placements.len(), 2);
    assert!(
        c.result.placements.iter().all(|p| p.runs.len() == 6),
        "--runs is honoured"
    );
    assert_eq!(c.sized_to_ns, None);
    let a = r
        .verdict
        .answers
        .iter()
        .find(|a| a.class == report::WorkloadClass::Command)
        .unwrap();
    assert_eq!(a.answer, report::HtAnswer::KeepHtOn, "{a:?}");
    let e = a.evidence.as_ref().unwrap();
    assert_eq!(
        (e.comparison.n, e.runs.as_str()),
        (6, "compare, 6 paired rounds")
    );
    // The section and the row in every output: JSON (read back), Markdown, HTML.
    let json = r.to_json().unwrap();
    let back = Report::from_json(&json).unwrap();
    let b = back
        .compare
        .as_ref()
        .expect("the section survives the round trip");
    assert_eq!(b.medians.len(), 2);
    assert_eq!(b.result.placements[1].runs, c.result.placements[1].runs);
    let rendered = report::render_json(&json).unwrap();
    assert!(
        rendered
            .markdown
            .contains("| your command | **keep HT on** |")
    );
    assert!(rendered.html.contains("data-chart=\"compare-placements\""));
    insta::assert_snapshot!(
        "command_smt_answer_row",
        serde_json::to_string_pretty(a).unwrap()
    );
    insta::assert_snapshot!(
        "command_smt_summary_md",
        markdown_section(&rendered.markdown)
    );
    insta::assert_snapshot!("command_smt_report_html", html_section(&rendered.html));
}

#[test]
fn a_command_without_siblings_shows_what_ran_and_says_why_no_answer() {
    use smtlab::experiments::compare::PlacementChoice;
    use smtlab::placement::Request;
    // `all` needs siblings: left out with the reason; the CPU lists run, sized to the
    // command's share of the budget.
    let cfg = config_with_command(|c| {
        c.placements = vec![
            PlacementChoice::Named(Request::All),
            PlacementChoice::Cpus(smtlab::cpuset::CpuSet::from_cpus([0])),
            PlacementChoice::Cpus(smtlab::cpuset::CpuSet::from_cpus([0, 1])),
        ];
    });
    let r = fake_report_with(2, 1, &cfg, &Quiet);
    let c = r.compare.as_ref().expect("a compare section");
    let labels: Vec<&str> = c
        .result
        .placements
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert_eq!(labels, ["cpus:0", "cpus:0-1"]);
    assert!(
        c.result.skipped.iter().any(|s| s.label == "all"),
        "{:?}",
        c.result.skipped
    );
    assert!(c.sized_to_ns.is_some());
    assert!(c.result.placements.iter().all(|p| p.runs.len() >= 3));
    let a = r
        .verdict
        .answers
        .iter()
        .find(|a| a.class == report::WorkloadClass::Command)
        .unwrap();
    assert_eq!(a.answer, report::HtAnswer::NotMeasured);
    assert!(a.evidence.is_none());
    let rendered = report::render_json(&r.to_json().unwrap()).unwrap();
    insta::assert_snapshot!(
        "command_no_smt_answer_row",
        serde_json::to_string_pretty(a).unwrap()
    );
    insta::assert_snapshot!(
        "command_no_smt_summary_md",
        markdown_section(&rendered.markdown)
    );
}

#[test]
fn ctrl_c_in_the_command_phase_keeps_the_rounds_that_finished() {
    own_process!(
        ctrl_c_in_the_command_phase_keeps_the_rounds_that_finished,
        {
            let r = fake_report_with(4, 2, &config_with_command(|_| {}), &CtrlCAt(compare::PHASE));
            assert_eq!(r.status, Status::Partial);
            let p = r.phases.iter().find(|p| p.phase == compare::PHASE).unwrap();
            // Ctrl-C before the first run: nothing to keep, the phase is interrupted.
            assert_eq!(p.status, PhaseStatus::Interrupted, "{p:?}");
            assert!(r.compare.is_none());
        }
    );
}

/// The command's answer row.
fn command_row(r: &Report) -> &report::Answer {
    r.verdict
        .answers
        .iter()
        .find(|a| a.class == report::WorkloadClass::Command)
        .expect("a row for the command")
}

#[test]
fn a_three_percent_yield_is_the_same_call_in_the_section_and_the_row() {
    use smtlab::experiments::compare::{Call, PlacementChoice, metric::MetricSpec};
    use smtlab::placement::Request;
    // Every sibling adds 3 % and runs vary by ±0.1 %: a tight interval around 1.03×,
    // outside compare's own ±2 % and inside the study's ±5 %. The section once called it
    // "faster" (±2 %) beside a row saying "no difference" (±5 %).
    for (noise, call, answer) in [
        (0.05, Call::NoDifference, report::HtAnswer::NoDifference),
        (0.02, Call::Faster, report::HtAnswer::KeepHtOn),
    ] {
        let cfg = config_with_command(|c| {
            c.placements = vec![
                PlacementChoice::Named(Request::OnePerCore),
                PlacementChoice::Named(Request::All),
            ];
            c.metric = Some(MetricSpec::Pgbench);
            c.runs = Some(8);
            c.noise = noise;
            c.fake.sibling_gain = 0.03;
            c.fake.jitter = 0.002;
        });
        let r = fake_report_with(4, 2, &cfg, &Quiet);
        let c = r.compare.as_ref().unwrap();
        let section = &c.result.comparisons[0];
        assert!((section.speedup.low - 1.03).abs() < 0.01, "{section:?}");
        assert!((section.speedup.high - 1.03).abs() < 0.01, "{section:?}");
        assert_eq!(section.call, call, "±{noise}: {section:?}");
        let a = command_row(&r);
        assert_eq!(a.answer, answer, "±{noise}: {a:?}");
        let band = format!("±{:.0} %", noise * 100.0);
        assert!(a.reason.contains(&band), "{}", a.reason);
        // Both in every output, each naming the band.
        let md = report::render_json(&r.to_json().unwrap()).unwrap().markdown;
        let sec = markdown_section(&md);
        assert!(sec.contains(&format!("beyond {band}")), "{sec}");
        let words = if call == Call::NoDifference {
            "no difference"
        } else {
            "faster"
        };
        assert!(
            sec.contains(&format!("all vs one-per-core: 1.03× {words}"))
                || sec.contains(&format!("all vs one-per-core: {words}")),
            "{sec}"
        );
    }
}

#[test]
fn a_command_that_fails_mid_phase_keeps_its_runs_and_the_row_its_complete_rounds() {
    use smtlab::experiments::compare::{PlacementChoice, metric::MetricSpec};
    use smtlab::placement::Request;
    let cfg = config_with_command(|c| {
        c.placements = vec![
            PlacementChoice::Named(Request::OnePerCore),
            PlacementChoice::Named(Request::All),
        ];
        c.metric = Some(MetricSpec::Pgbench);
        c.runs = Some(8);
        // Runs 1-2 warm up, 3-12 are rounds 1-5, and round 6 runs `all` first
        // (counterbalanced: A B, B A, B A, A B, A B, B A): 13 is `all`, and
        // `one-per-core` fails after it.
        c.fake.fail_on_run = Some(14);
    });
    let r = fake_report_with(4, 2, &cfg, &Quiet);
    assert_eq!(r.status, Status::Partial);
    let p = r.phases.iter().find(|p| p.phase == compare::PHASE).unwrap();
    assert_eq!(p.status, PhaseStatus::Failed, "{p:?}");
    let why = p.reason.as_deref().unwrap();
    assert!(
        why.starts_with(
            "after 11 runs (5 complete rounds; kept): `my-app --bench` failed on one-per-core (round 6)"
        ),
        "{why}"
    );
    assert!(
        r.partial_reason()
            .unwrap()
            .contains("compare failed (after 11 runs"),
        "{:?}",
        r.partial_reason()
    );
    let c = r.compare.as_ref().expect("the finished runs are kept");
    let runs: Vec<usize> = c.result.placements.iter().map(|p| p.runs.len()).collect();
    assert_eq!(runs, [5, 6]);
    assert_eq!(c.medians.iter().map(|m| m.n).collect::<Vec<_>>(), [5, 6]);
    // The row pairs the 5 rounds both placements finished, and still answers.
    let a = command_row(&r);
    let e = a.evidence.as_ref().unwrap();
    assert_eq!(
        (e.comparison.n, e.runs.as_str()),
        (5, "compare, 5 paired rounds")
    );
    assert_eq!(a.answer, report::HtAnswer::KeepHtOn, "{a:?}");
    let rendered = report::render_json(&r.to_json().unwrap()).unwrap();
    assert!(rendered.markdown.contains("**Partial**"));
    assert!(markdown_section(&rendered.markdown).contains("| one-per-core |"));
}

/// Records the steps the compare phase announced and took.
#[derive(Default)]
struct Steps {
    current: std::cell::Cell<Option<&'static str>>,
    units: std::cell::Cell<u64>,
    advanced: std::cell::Cell<u64>,
}

impl Progress for Steps {
    fn start(&self, phase: &'static str, units: u64, _: Duration) {
        self.current.set(Some(phase));
        if phase == compare::PHASE.label() {
            self.units.set(units);
        }
    }
    fn advance(&self, n: u64) {
        if self.current.get() == Some(compare::PHASE.label()) {
            self.advanced.set(self.advanced.get() + n);
        }
    }
}

#[test]
fn with_runs_the_command_phase_counts_its_runs() {
    let steps = Steps::default();
    let r = fake_report_with(4, 2, &config_with_command(|c| c.runs = Some(7)), &steps);
    assert!(r.compare.is_some());
    // (7 rounds + 1 warm-up) × (one-per-core, all), each run one step.
    assert_eq!((steps.units.get(), steps.advanced.get()), (16, 16));
    // Without --runs the rounds are sized as it goes: progress by time, no steps.
    let steps = Steps::default();
    fake_report_with(4, 2, &config_with_command(|_| {}), &steps);
    assert_eq!((steps.units.get(), steps.advanced.get()), (0, 0));
}

#[test]
fn rendering_depends_only_on_the_json_and_report_reproduces_it() {
    let r = fake_report(2, 1, &Quiet);
    let dir = tempfile::tempdir().unwrap();
    let written = report::write_all(&r, dir.path()).unwrap();
    assert_eq!(written.len(), 3);
    let html = std::fs::read(dir.path().join("report.html")).unwrap();
    let md = std::fs::read(dir.path().join("summary.md")).unwrap();
    // Re-render into another directory with the binary.
    let other = tempfile::tempdir().unwrap();
    smtlab()
        .arg("report")
        .arg(dir.path().join("results.json"))
        .arg("--out")
        .arg(other.path())
        .assert()
        .success();
    assert_eq!(
        std::fs::read(other.path().join("report.html")).unwrap(),
        html
    );
    assert_eq!(std::fs::read(other.path().join("summary.md")).unwrap(), md);
    // And in place (the default directory), still identical; no temp files left behind.
    smtlab()
        .arg("report")
        .arg(dir.path().join("results.json"))
        .assert()
        .success();
    assert_eq!(std::fs::read(dir.path().join("report.html")).unwrap(), html);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["report.html", "results.json", "summary.md"]);
}

/// Presses "Ctrl-C" when a given phase starts.
struct CtrlCAt(PhaseName);

impl Progress for CtrlCAt {
    fn start(&self, phase: &'static str, _: u64, _: Duration) {
        if phase == self.0.label() {
            common::press_ctrl_c();
        }
    }
}

#[test]
fn ctrl_c_in_each_phase_gives_a_partial_report_of_what_finished() {
    own_process!(
        ctrl_c_in_each_phase_gives_a_partial_report_of_what_finished,
        {
            for phase in [
                c2c::PHASE,
                lockscan::PHASE,
                neighbors::PHASE,
                oltp::PHASE,
                rwcache::PHASE,
            ] {
                smtlab::interrupt::set_for_test(false);
                let r = fake_report(2, 1, &CtrlCAt(phase));
                smtlab::interrupt::set_for_test(false);
                assert_eq!(r.status, Status::Partial, "{phase}");
                let i = r.phases.iter().position(|p| p.phase == phase).unwrap();
                for p in &r.phases[..i] {
                    assert_eq!(p.status, PhaseStatus::Done, "{phase}: {p:?}");
                }
                for p in &r.phases[i + 1..] {
                    assert_eq!(p.status, PhaseStatus::NotRun, "{phase}: {p:?}");
                }
                assert!(
                    r.verdict.headline.contains("stopped before it finished"),
                    "{}",
                    r.verdict.headline
                );
                // What is there renders and survives the JSON round trip.
                let rendered = report::render_json(&r.to_json().unwrap()).unwrap();
                assert!(
                    rendered
                        .html
                        .contains("Partial: the study was stopped by SIGINT")
                );
                assert!(rendered.markdown.contains("**Partial**"));
                // The signal is named, never assumed to be Ctrl-C.
                assert_eq!(r.interrupted_by, Some(smtlab::interrupt::Signal::Int));
                for p in &r.phases[i + 1..] {
                    assert_eq!(
                        p.reason.as_deref(),
                        Some("SIGINT arrived before this phase")
                    );
                }
                assert!(!rendered.html.contains("Ctrl-C"), "{phase}");
            }
        }
    );
}

#[test]
fn a_failed_phase_makes_the_study_partial_with_the_reason() {
    let topo = smtlab::topology::fixture::topology(2, 1, true);
    let engine = FakeEngine::new(7).with_topology(&topo);
    // A database the oltp phase cannot open: the phase fails, the others still run.
    let cfg = study::Config {
        db: DbTarget::Sqlite(Some("/proc/smtlab-no-such-dir/x.db".into())),
        ..config()
    };
    let r = study::run(&engine, &topo, machine(&topo), provenance(), &cfg, &Quiet).unwrap();
    let oltp = r.phases.iter().find(|p| p.phase == oltp::PHASE).unwrap();
    assert_eq!(oltp.status, PhaseStatus::Failed, "{oltp:?}");
    assert!(oltp.reason.as_deref().unwrap().contains("x.db"), "{oltp:?}");
    assert_eq!(r.status, Status::Partial);
    let why = r.partial_reason().unwrap();
    assert!(why.starts_with("oltp failed ("), "{why}");
    assert!(
        r.phases
            .iter()
            .filter(|p| p.phase != oltp::PHASE)
            .all(|p| p.status != PhaseStatus::NotRun),
        "{:?}",
        r.phases
    );
    let rendered = report::render_json(&r.to_json().unwrap()).unwrap();
    assert!(
        rendered.markdown.contains("oltp failed"),
        "{}",
        rendered.markdown
    );
}

#[test]
fn report_rejects_missing_and_malformed_files() {
    let dir = tempfile::tempdir().unwrap();
    smtlab()
        .arg("report")
        .arg(dir.path().join("nope.json"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("nope.json"));
    let bad = dir.path().join("results.json");
    std::fs::write(&bad, "{\"schema_version\": 1, \"status\": 3}").unwrap();
    smtlab()
        .arg("report")
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("does not match the report model"));
    assert!(
        !dir.path().join("report.html").exists(),
        "no half-written output"
    );
}

#[test]
fn study_rejects_bad_options() {
    smtlab()
        .args(["study", "--budget", "2s"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--budget 2s: expected a duration between 10s and",
        ));
    smtlab()
        .args(["study", "--quick", "--budget", "1m"])
        .assert()
        .code(2);
    smtlab()
        .args(["study", "--db", "mysql://x"])
        .assert()
        .code(2);
}

#[test]
fn study_refuses_command_options_without_a_command_and_bad_commands() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    smtlab()
        .args(["study", "--out", out, "--metric", "pgbench", "--runs", "3"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--runs, --metric place and measure your own command, but none was given",
        ));
    smtlab()
        .args(["study", "--out", out, "--", "smtlab-no-such-command"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not found"));
    smtlab()
        .args([
            "study",
            "--out",
            out,
            "--placements",
            "spread",
            "--",
            "true",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown placement `spread`"));
    // A CPU this process may not use: refused when the phases are sized, before any runs.
    smtlab()
        .args(["study", "--out", out, "--cpus", "4095", "--", "true"])
        .assert()
        .code(2);
    assert!(
        !dir.path().join("results.json").exists(),
        "nothing measured, nothing written"
    );
}

#[test]
fn study_with_a_command_runs_it_as_its_last_phase() {
    let dir = tempfile::tempdir().unwrap();
    let all = smtlab::affinity::process_affinity().unwrap();
    let first = all.first().unwrap().to_string();
    let mut args: Vec<String> = ["study", "--budget", "10s", "--out"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.push(dir.path().display().to_string());
    args.extend(["--cpus".into(), first.clone()]);
    let two: Vec<u32> = all.iter().take(2).collect();
    if two.len() == 2 {
        args.extend(["--cpus".into(), format!("{},{}", two[0], two[1])]);
    }
    args.extend(
        [
            "--runs",
            "5",
            "--metric",
            "tps = ([0-9]+)",
            "--",
            "sh",
            "-c",
            "echo tps = 100",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(&args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Your command (compare phase):"), "{stdout}");
    assert!(stdout.contains("your command"), "{stdout}");
    let text = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    let r = Report::from_json(&text).unwrap();
    assert!(
        r.provenance.command.ends_with("-- sh -c 'echo tps = 100'"),
        "{}",
        r.provenance.command
    );
    let p = r.phases.iter().find(|p| p.phase == compare::PHASE).unwrap();
    assert_eq!(p.status, PhaseStatus::Done, "{p:?}");
    let c = r.compare.as_ref().expect("the compare section");
    assert_eq!(c.result.placements.len(), two.len().max(1));
    for p in &c.result.placements {
        assert_eq!(p.runs.len(), 5, "--runs is honoured: {p:?}");
        assert!(p.runs.iter().all(|x| x.metric == Some(100.0)), "{p:?}");
    }
    assert_eq!(c.sized_to_ns, None);
    assert_eq!(
        c.result.noise_threshold, 0.05,
        "a study judges the command by its answer rows' band"
    );
    let a = r
        .verdict
        .answers
        .iter()
        .find(|a| a.class == report::WorkloadClass::Command)
        .expect("an answer row for the command");
    if r.smt.threads_per_core < 2 {
        assert_eq!(a.answer, report::HtAnswer::NotMeasured, "{a:?}");
        assert!(a.reason.contains("no SMT siblings"), "{}", a.reason);
    }
    let md = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(md.contains("## Your command (compare)"), "{md}");
    assert!(md.contains("| your command |"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("data-chart=\"compare-placements\""));
}

#[test]
fn a_real_command_failing_mid_study_exits_1_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let first = smtlab::affinity::process_affinity()
        .unwrap()
        .first()
        .unwrap()
        .to_string();
    // Run 1 warms up, runs 2-4 are rounds 1-3, run 5 (round 4) exits 3.
    let script = format!(
        "n=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}; \
         [ $n -ge 5 ] && {{ echo broken >&2; exit 3; }}; echo tps = 100",
        c = count.display()
    );
    let out_dir = dir.path().join("out");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(["study", "--budget", "10s", "--out"])
        .arg(&out_dir)
        .args([
            "--cpus",
            &first,
            "--runs",
            "6",
            "--metric",
            "tps = ([0-9]+)",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("compare failed (after 3 runs"), "{stderr}");
    let r =
        Report::from_json(&std::fs::read_to_string(out_dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(r.status, Status::Partial);
    let p = r.phases.iter().find(|p| p.phase == compare::PHASE).unwrap();
    assert_eq!(p.status, PhaseStatus::Failed, "{p:?}");
    let why = p.reason.as_deref().unwrap();
    assert!(
        why.contains("(round 4): exit code 3") && why.contains("broken"),
        "{why}"
    );
    let c = r
        .compare
        .as_ref()
        .expect("the runs before the failure are kept");
    assert_eq!(c.result.placements[0].runs.len(), 3);
    assert!(out_dir.join("summary.md").exists() && out_dir.join("report.html").exists());
}

#[test]
fn real_ctrl_c_during_a_quick_study_writes_a_partial_report_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let child = std::process::Command::new(bin)
        .args(["study", "--quick", "--out"])
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let text = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    let r = Report::from_json(&text).unwrap();
    assert_eq!(r.status, Status::Partial);
    // The signal lands inside a phase (that phase is interrupted) or, when
    // it arrives just as one phase ends, before the next (every later phase
    // is not run, saying why). Either way the run stops and says so.
    let stopped_inside = r
        .phases
        .iter()
        .any(|p| p.status == PhaseStatus::Interrupted);
    let stopped_between = r.phases.iter().any(|p| {
        p.status == PhaseStatus::NotRun
            && p.reason.as_deref() == Some("SIGINT arrived before this phase")
    });
    assert!(stopped_inside || stopped_between, "{:?}", r.phases);
    assert!(
        r.phases
            .iter()
            .all(|p| p.status != PhaseStatus::NotRun || p.reason.is_some()),
        "every phase not run says why: {:?}",
        r.phases
    );
    assert!(dir.path().join("report.html").exists());
    assert!(dir.path().join("summary.md").exists());
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 3, "only the three files");
}
