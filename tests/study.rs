//! `study` and `report`: the report model built with the fake engine (snapshots of JSON,
//! Markdown and HTML), re-rendering byte for byte, partial reports after Ctrl-C, the HTML in
//! headless Chromium, and the CLI (bad input, a real Ctrl-C during a quick study).

use assert_cmd::Command;
use smtlab::engine::FakeEngine;
use smtlab::oltp::DbTarget;
use smtlab::report::{self, MachineInfo, PhaseName, PhaseStatus, Provenance, Report, Status};
use smtlab::study::{self, NoProgress, Progress};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// Studies read and set the process-wide Ctrl-C flag: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

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
    }
}

/// rwcache measures its own clock's overhead and names the clock: machine facts that the
/// fake engine cannot fix. Pin them so snapshots are the same everywhere.
fn normalise(r: &mut Report) {
    if let Some(o) = &mut r.oltp {
        // The real oltp code opened a temporary SQLite file; its path has the pid in it.
        o.result.db_description = "SQLite (temporary file, normalised for the test)".into();
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
fn fake_report(cores: u32, threads_per_core: u32, progress: &dyn Progress) -> Report {
    let topo = report::fixture::topology(cores, threads_per_core, true);
    let engine = FakeEngine::new(7)
        .with_topology(&topo)
        .with_rate_for("oltp ", 30_000.0);
    let mut r = study::run(
        &engine,
        &topo,
        machine(&topo),
        provenance(),
        &config(),
        progress,
    )
    .unwrap();
    normalise(&mut r);
    r
}

#[test]
fn fake_study_snapshots_json_markdown_html() {
    let _g = serial();
    smtlab::interrupt::set_for_test(false);
    let r = fake_report(2, 1, &NoProgress);
    assert!(r.synthetic);
    assert_eq!(r.status, Status::Complete);
    for p in &r.phases {
        if p.phase == PhaseName::Yield {
            // No SMT siblings on this made-up machine: no yield to measure.
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
    let _g = serial();
    smtlab::interrupt::set_for_test(false);
    let r = fake_report(2, 1, &NoProgress);
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
    let _g = serial();
    smtlab::interrupt::set_for_test(false);
    let r = fake_report(4, 2, &NoProgress);
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
    assert_eq!(v.answers.len(), 5, "{:?}", v.answers);
    assert!(md.find("| workload class |").unwrap() < md.find("## Machine").unwrap());
    insta::assert_snapshot!("fake_smt_summary_md", md);
}

#[test]
fn rendering_depends_only_on_the_json_and_report_reproduces_it() {
    let _g = serial();
    smtlab::interrupt::set_for_test(false);
    let r = fake_report(2, 1, &NoProgress);
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
    fn start(&self, phase: PhaseName, _: u64, _: Duration) {
        if phase == self.0 {
            smtlab::interrupt::set_for_test(true);
        }
    }
    fn advance(&self, _: u64) {}
    fn finish(&self, _: PhaseName, _: PhaseStatus, _: Option<&str>, _: Duration) {}
}

#[test]
fn ctrl_c_in_each_phase_gives_a_partial_report_of_what_finished() {
    let _g = serial();
    for phase in [
        PhaseName::C2c,
        PhaseName::Lockscan,
        PhaseName::Neighbors,
        PhaseName::Oltp,
        PhaseName::Rwcache,
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

#[test]
fn a_failed_phase_makes_the_study_partial_with_the_reason() {
    let _g = serial();
    smtlab::interrupt::set_for_test(false);
    let topo = report::fixture::topology(2, 1, true);
    let engine = FakeEngine::new(7).with_topology(&topo);
    // A database the oltp phase cannot open: the phase fails, the others still run.
    let cfg = study::Config {
        db: DbTarget::Sqlite(Some("/proc/smtlab-no-such-dir/x.db".into())),
        ..config()
    };
    let r = study::run(
        &engine,
        &topo,
        machine(&topo),
        provenance(),
        &cfg,
        &NoProgress,
    )
    .unwrap();
    let oltp = r
        .phases
        .iter()
        .find(|p| p.phase == PhaseName::Oltp)
        .unwrap();
    assert_eq!(oltp.status, PhaseStatus::Failed, "{oltp:?}");
    assert!(oltp.reason.as_deref().unwrap().contains("x.db"), "{oltp:?}");
    assert_eq!(r.status, Status::Partial);
    let why = r.partial_reason().unwrap();
    assert!(why.starts_with("oltp failed ("), "{why}");
    assert!(
        r.phases
            .iter()
            .filter(|p| p.phase != PhaseName::Oltp)
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
    assert!(
        r.phases
            .iter()
            .any(|p| p.status == PhaseStatus::Interrupted),
        "{:?}",
        r.phases
    );
    assert!(dir.path().join("report.html").exists());
    assert!(dir.path().join("summary.md").exists());
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 3, "only the three files");
}

/// Expected chart names in the fake report, one `<svg data-chart>` each.
const CHARTS: [&str; 6] = [
    "topology",
    "c2c-heatmap",
    "lockscan-threads",
    "neighbors-throughput",
    "oltp-layouts",
    "rwcache-schemes",
];

fn chromium() -> Option<std::path::PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && out.status.success()
        {
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !p.is_empty() {
                return Some(p.into());
            }
        }
    }
    None
}

fn headless(bin: &Path, profile: &Path, extra: &[&str], url: &str) -> std::process::Output {
    std::process::Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("chromium runs")
}

#[test]
fn the_html_renders_in_headless_chromium_with_every_chart() {
    let Some(bin) = chromium() else {
        if std::env::var("SMTLAB_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
            panic!("chromium not found and SMTLAB_REQUIRE_CHROMIUM=1");
        }
        eprintln!("skipped: chromium is not installed (apt-get install chromium)");
        return;
    };
    let r = {
        let _g = serial();
        smtlab::interrupt::set_for_test(false);
        fake_report(2, 1, &NoProgress)
    };
    let dir = tempfile::tempdir().unwrap();
    report::write_all(&r, dir.path()).unwrap();
    let url = format!("file://{}", dir.path().join("report.html").display());
    let profile = tempfile::tempdir().unwrap();
    let dom = headless(&bin, profile.path(), &["--dump-dom"], &url);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let html = String::from_utf8_lossy(&dom.stdout);
    for c in CHARTS {
        assert!(
            html.contains(&format!("data-chart=\"{c}\"")),
            "chart {c} missing from the DOM"
        );
    }
    assert!(html.contains("id=\"verdict\""));
    let console = String::from_utf8_lossy(&dom.stderr);
    for line in console.lines() {
        assert!(
            !(line.contains(":CONSOLE")
                || line.contains("Uncaught")
                || line.contains("ERR_FILE_NOT_FOUND")),
            "console error: {line}"
        );
    }
    let shot = std::env::var_os("SMTLAB_SCREENSHOT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("shot.png"));
    let out = headless(
        &bin,
        profile.path(),
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,3000",
            "--hide-scrollbars",
        ],
        &url,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a real screenshot ({} bytes)",
        png.len()
    );
}
