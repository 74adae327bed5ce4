//! `smtlab merge`: a generated fleet of 200 results.json files (3 machine types, one type
//! with two disturbed outlier hosts, one truncated file, one file of an old schema) grouped,
//! pooled, flagged and skipped as the report says; bad inputs one message each and exit 2
//! only when nothing is left; duplicate hosts; the Prometheus text of `merge` and `study`
//! parsed, and scraped together with `top`'s by Debian's prometheus-node-exporter.

use assert_cmd::Command;
use prometheus_parse::{LineInfo, Scrape, Value};
use smtlab::fleet::fixture::{self, Disturbance, Ratios};
use smtlab::fleet::model::{CaveatKind, Fleet, Problem};
use smtlab::report::{HtAnswer, WorkloadClass};
use std::path::Path;
use std::sync::OnceLock;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Parses `text` with prometheus-parse, insisting that every line is understood and every
/// sample is a gauge with a HELP line.
fn scrape(text: &str) -> Scrape {
    for line in text.lines() {
        assert!(
            !matches!(LineInfo::parse(line), LineInfo::Ignored),
            "not exposition format: {line}"
        );
    }
    let s = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let samples = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(s.samples.len(), samples);
    for smp in &s.samples {
        assert!(
            s.docs.contains_key(&smp.metric),
            "no HELP for {}",
            smp.metric
        );
        assert!(matches!(smp.value, Value::Gauge(_)), "{}", smp.metric);
    }
    s
}

fn gauge(s: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = s
        .samples
        .iter()
        .filter(|x| x.metric == metric && labels.iter().all(|(k, v)| x.labels.get(k) == Some(v)))
        .map(|x| match x.value {
            Value::Gauge(v) => v,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(found.len(), 1, "{metric} {labels:?}");
    found[0]
}

/// The generated fleet, merged once for every test that reads it.
struct Merged {
    _dir: tempfile::TempDir,
    out: std::path::PathBuf,
    stdout: String,
    stderr: String,
    fleet: Fleet,
}

fn merged() -> &'static Merged {
    static M: OnceLock<Merged> = OnceLock::new();
    M.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let fleet_dir = dir.path().join("fleet");
        fixture::write_test_fleet(&fleet_dir).unwrap();
        let out = dir.path().join("out");
        let o = smtlab()
            .current_dir(dir.path())
            .args([
                "merge",
                "fleet",
                "--out",
                "out",
                "--prometheus",
                "out/fleet.prom",
            ])
            .assert()
            .success()
            .get_output()
            .clone();
        let text = std::fs::read_to_string(out.join("fleet.json")).unwrap();
        Merged {
            fleet: serde_json::from_str(&text).expect("fleet.json reads back"),
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
            out,
            _dir: dir,
        }
    })
}

fn class(
    t: &smtlab::fleet::model::MachineType,
    c: WorkloadClass,
) -> &smtlab::fleet::model::ClassRow {
    t.classes.iter().find(|r| r.class == c).unwrap()
}

#[test]
fn a_generated_fleet_is_grouped_by_machine_type_with_the_key_printed() {
    let m = merged();
    let f = &m.fleet;
    assert_eq!((f.files_read, f.hosts), (200, 198));
    assert_eq!(
        f.synthetic_hosts, 198,
        "the fixture's hosts are synthetic and say so"
    );
    let sizes: Vec<(&str, usize)> = f
        .types
        .iter()
        .map(|t| (t.key.cpu_model.as_str(), t.hosts.len()))
        .collect();
    assert_eq!(
        sizes,
        [
            ("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", 120),
            ("AMD EPYC 7543 32-Core Processor", 50),
            ("Intel(R) Core(TM) i7-9700 CPU @ 3.00GHz", 28),
        ]
    );
    let k = &f.types[0].key;
    assert_eq!(
        (k.packages, k.cores_per_package, k.threads_per_core),
        (1, 4, 2)
    );
    assert_eq!((k.smt.as_str(), k.kernel_major.as_str()), ("on", "6"));
    assert_eq!(f.types[1].key.kernel_major, "5");
    assert_eq!(f.types[2].key.smt, "notsupported");
    for t in &f.types {
        assert!(
            m.stdout.contains(&format!("grouping key: {}", t.label)),
            "{}",
            m.stdout
        );
    }
    assert!(
        m.stdout.contains("SYNTHETIC DATA on 198 hosts"),
        "{}",
        m.stdout
    );
    println!("{}", m.stdout);
}

#[test]
fn hosts_that_agree_pool_into_the_types_answer_and_two_disturbed_outliers_are_named() {
    let m = merged();
    let xeon = &m.fleet.types[0];
    let c = class(xeon, WorkloadClass::Compute);
    assert_eq!(c.answer, HtAnswer::KeepHtOn, "{}", c.reason);
    let p = c.pooled.as_ref().unwrap();
    assert_eq!(p.hosts, 118);
    assert!(
        p.low > 1.26 && p.high < 1.30 && p.low < p.estimate && p.estimate < p.high,
        "{p:?}"
    );
    assert!(p.i2.unwrap() < 0.25 && p.tau.unwrap() < 0.01, "{p:?}");
    assert!(
        c.reason.contains("Pooled over 118 of 120 hosts"),
        "{}",
        c.reason
    );
    assert!(c.reason.contains("agree"), "{}", c.reason);
    for cl in [
        WorkloadClass::Compute,
        WorkloadClass::Locks,
        WorkloadClass::LocksBesideScans,
        WorkloadClass::Inserts,
    ] {
        let row = class(xeon, cl);
        let out: Vec<(&str, CaveatKind, bool)> = row
            .hosts
            .iter()
            .filter_map(|h| {
                let o = h.outlier.as_ref()?;
                Some((h.host.as_str(), o.explained_by[0].kind, o.excluded))
            })
            .collect();
        assert_eq!(
            out,
            [
                ("xeon-017", CaveatKind::Steal, true),
                ("xeon-064", CaveatKind::BusyCpus, true)
            ],
            "{cl:?}"
        );
        assert!(row.hosts.iter().filter(|h| !h.pooled).count() == 2);
    }
    // Named, with the reason from their own results, in every output.
    let md = std::fs::read_to_string(m.out.join("fleet.md")).unwrap();
    let html = std::fs::read_to_string(m.out.join("fleet.html")).unwrap();
    for text in [&m.stdout, &md, &html] {
        assert!(text.contains("xeon-017") && text.contains("xeon-064"));
        assert!(text.contains("15 % of the measured CPUs"), "steal cited");
        assert!(text.contains("CPU 0 60 % busy"), "busy CPUs cited");
    }
    assert!(!html.contains("<script"));
    // Locks on a sibling: hosts each inconclusive, the pool of 118 is not.
    let l = class(xeon, WorkloadClass::Locks);
    assert_eq!(l.answer, HtAnswer::KeepHtOn);
    assert!(
        l.hosts
            .iter()
            .filter(|h| h.answer == HtAnswer::Inconclusive)
            .count()
            == 118,
        "{:?}",
        l.tally
    );
}

#[test]
fn a_losing_class_gets_the_slurm_hint_and_disagreeing_hosts_are_inconclusive() {
    let m = merged();
    let epyc = &m.fleet.types[1];
    assert_eq!(
        class(epyc, WorkloadClass::Compute).answer,
        HtAnswer::NoDifference
    );
    let l = class(epyc, WorkloadClass::Locks);
    assert_eq!(l.answer, HtAnswer::TurnHtOff, "{}", l.reason);
    let hint = l.slurm.as_deref().unwrap();
    assert!(
        hint.contains("--hint=nomultithread") && hint.contains("--threads-per-core=1"),
        "{hint}"
    );
    assert_eq!(epyc.slurm_advice, vec![hint.to_string()]);
    assert!(
        m.stdout
            .contains("slurm: jobs of the class \"lock-heavy threads\"")
    );
    // Hosts 0.85, 0.90, 0.95, 1.00, 1.05 in turn: they disagree, and the pooled interval
    // reaches across the 0.95× loss line.
    let s = class(epyc, WorkloadClass::LocksBesideScans);
    let p = s.pooled.as_ref().unwrap();
    assert_eq!(s.answer, HtAnswer::Inconclusive, "{}", s.reason);
    assert!(p.low < 0.95 && p.high > 0.95, "{p:?}");
    assert!(p.i2.unwrap() > 0.75, "{p:?}");
    assert!(
        s.reason.contains("differ well beyond their own noise"),
        "{}",
        s.reason
    );
    let (a, b) = (p.predict_low.unwrap(), p.predict_high.unwrap());
    assert!(
        a < 0.87 && b > 1.03,
        "a new host may land anywhere in {a}–{b}"
    );
    assert!(s.hosts.iter().all(|h| h.outlier.is_none()));
    // No class of the Xeon type loses: no hint there.
    assert!(m.fleet.types[0].slurm_advice.is_empty());
    // No SMT on the i7 hosts: nothing measured, and it says why.
    let desk = &m.fleet.types[2];
    assert!(
        desk.classes
            .iter()
            .all(|c| c.answer == HtAnswer::NotMeasured)
    );
    assert!(
        desk.headline.contains("no SMT siblings"),
        "{}",
        desk.headline
    );
    assert!(
        class(desk, WorkloadClass::Compute)
            .reason
            .contains("(28 hosts)"),
        "{}",
        class(desk, WorkloadClass::Compute).reason
    );
}

#[test]
fn the_truncated_and_the_old_file_are_skipped_one_message_each() {
    let m = merged();
    let sk: Vec<(&str, Problem)> = m
        .fleet
        .skipped
        .iter()
        .map(|s| (s.path.as_str(), s.problem))
        .collect();
    assert_eq!(
        sk,
        [
            ("fleet/broken/results.json", Problem::Truncated),
            ("fleet/old/results.json", Problem::OlderSchema)
        ]
    );
    let lines: Vec<&str> = m
        .stderr
        .lines()
        .filter(|l| l.starts_with("merge: skipped"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", m.stderr);
    assert!(lines[0].contains("fleet/broken/results.json") && lines[0].contains("cut short"));
    assert!(lines[1].contains("fleet/old/results.json") && lines[1].contains("schema_version 0"));
    let md = std::fs::read_to_string(m.out.join("fleet.md")).unwrap();
    assert!(md.contains("## Skipped inputs"), "{md}");
    assert!(md.contains("fleet/broken/results.json") && md.contains("fleet/old/results.json"));
}

#[test]
fn the_fleet_as_prometheus_gauges_parses() {
    let m = merged();
    let s = scrape(&std::fs::read_to_string(m.out.join("fleet.prom")).unwrap());
    let xeon = m.fleet.types[0].label.as_str();
    let epyc = m.fleet.types[1].label.as_str();
    assert_eq!(
        gauge(
            &s,
            "smtlab_fleet_answer",
            &[
                ("machine_type", xeon),
                ("class", "compute"),
                ("answer", "keep-ht-on")
            ]
        ),
        1.0
    );
    assert_eq!(
        gauge(
            &s,
            "smtlab_fleet_answer",
            &[
                ("machine_type", epyc),
                ("class", "locks"),
                ("answer", "turn-ht-off")
            ]
        ),
        1.0
    );
    let y = gauge(
        &s,
        "smtlab_fleet_smt_yield",
        &[("machine_type", xeon), ("class", "compute")],
    );
    let p = class(&m.fleet.types[0], WorkloadClass::Compute)
        .pooled
        .clone()
        .unwrap();
    assert!((y - p.estimate).abs() < 1e-9);
    assert_eq!(
        gauge(
            &s,
            "smtlab_fleet_outlier_hosts",
            &[("machine_type", xeon), ("class", "compute")]
        ),
        2.0
    );
    assert_eq!(gauge(&s, "smtlab_fleet_skipped_inputs", &[]), 2.0);
}

fn write_report(dir: &Path, name: &str, r: &smtlab::report::Report) -> std::path::PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("results.json");
    std::fs::write(&p, r.to_json().unwrap()).unwrap();
    p
}

#[test]
fn a_host_given_twice_is_merged_once_from_its_latest_study() {
    let d = tempfile::tempdir().unwrap();
    let old = fixture::report(0, "db7", Ratios::all(1.2), 1_700_000_000, Disturbance::None);
    let new = fixture::report(0, "db7", Ratios::all(1.3), 1_700_086_400, Disturbance::None);
    let other = fixture::report(0, "db8", Ratios::all(1.3), 1_700_000_000, Disturbance::None);
    write_report(d.path(), "a", &new);
    write_report(d.path(), "b", &old);
    write_report(d.path(), "c", &other);
    let o = smtlab()
        .current_dir(d.path())
        .args(["merge", "a", "b", "c", "--out", "out", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let f: Fleet = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(f.hosts, 2);
    assert_eq!(f.skipped.len(), 1);
    let s = &f.skipped[0];
    assert_eq!(
        (s.path.as_str(), s.problem),
        ("b/results.json", Problem::Duplicate)
    );
    assert!(
        s.reason.contains("`db7`")
            && s.reason.contains("a/results.json")
            && s.reason.contains("later study"),
        "{}",
        s.reason
    );
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("merge: skipped b/results.json"), "{stderr}");
    // One host of two pooled with the other: the newer study's 1.3 is the one counted.
    let c = class(&f.types[0], WorkloadClass::Compute);
    assert!((c.pooled.as_ref().unwrap().estimate - 1.3).abs() < 1e-9);
}

#[test]
fn bad_inputs_are_named_one_by_one_and_nothing_usable_is_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("notes.txt"), "hello").unwrap();
    std::fs::write(p.join("other.json"), r#"{"name": "x"}"#).unwrap();
    std::fs::write(
        p.join("newer.json"),
        r#"{"schema_version": 9, "verdict": {}}"#,
    )
    .unwrap();
    std::fs::write(
        p.join("fleet.json"),
        r#"{"kind": "smtlab-fleet", "schema_version": 1}"#,
    )
    .unwrap();
    std::fs::write(p.join("empty.json"), "").unwrap();
    std::fs::create_dir(p.join("nothing-here")).unwrap();
    let o = smtlab()
        .current_dir(p)
        .args([
            "merge",
            "notes.txt",
            "other.json",
            "newer.json",
            "fleet.json",
            "empty.json",
            "nothing-here",
            "missing.json",
            "--out",
            "out",
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(o.stderr).unwrap();
    for (file, words) in [
        ("notes.txt", "not valid JSON"),
        ("other.json", "not a smtlab results.json"),
        ("newer.json", "newer smtlab"),
        ("fleet.json", "fleet.json written by `smtlab merge`"),
        ("empty.json", "is empty"),
        ("nothing-here", "holding no results.json"),
        ("missing.json", "does not exist"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("merge: skipped {file}: ")) && l.contains(words)),
            "{file}: {words}\n{err}"
        );
    }
    assert!(err.contains("nothing to merge: 7 inputs given"), "{err}");
    assert!(
        !p.join("out").join("fleet.json").exists(),
        "no report when nothing was merged"
    );
    // One usable file among them: merged, the rest listed, exit 0.
    let good = fixture::report(
        0,
        "ok-host",
        Ratios::all(1.2),
        1_700_000_000,
        Disturbance::None,
    );
    write_report(p, "good", &good);
    let o = smtlab()
        .current_dir(p)
        .args([
            "merge",
            "good",
            "notes.txt",
            "newer.json",
            "--out",
            "out",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let f: Fleet = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(f.hosts, 1);
    let probs: Vec<Problem> = f.skipped.iter().map(|s| s.problem).collect();
    assert_eq!(probs, [Problem::NotJson, Problem::NewerSchema]);
    // One host is not a type: its own answer is shown, the type's is inconclusive.
    let c = class(&f.types[0], WorkloadClass::Compute);
    assert_eq!(c.answer, HtAnswer::Inconclusive);
    assert!(c.reason.contains("one host is not a type"), "{}", c.reason);
    assert_eq!(c.hosts[0].answer, HtAnswer::KeepHtOn);
}

#[test]
fn an_unusable_prometheus_path_is_refused_before_reading_anything() {
    let d = tempfile::tempdir().unwrap();
    smtlab()
        .current_dir(d.path())
        .args([
            "merge",
            ".",
            "--out",
            "out",
            "--prometheus",
            "no/such/dir/x.prom",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--prometheus no/such/dir/x.prom"));
    std::fs::create_dir(d.path().join("adir")).unwrap();
    smtlab()
        .current_dir(d.path())
        .args(["merge", ".", "--prometheus", "adir"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("it is a directory"));
}

/// The study's answer table as gauges, from a study on the fake engine.
fn study_prom() -> String {
    let r = fixture::report(0, "h1", Ratios::all(1.25), 1_700_000_000, Disturbance::None);
    smtlab::report::metrics::prometheus(&r)
}

#[test]
fn the_studys_answer_table_as_prometheus_gauges_parses() {
    let s = scrape(&study_prom());
    assert_eq!(
        gauge(
            &s,
            "smtlab_answer",
            &[("class", "compute"), ("answer", "keep-ht-on")]
        ),
        1.0
    );
    assert_eq!(
        gauge(
            &s,
            "smtlab_answer",
            &[("class", "compute"), ("answer", "turn-ht-off")]
        ),
        0.0
    );
    assert!((gauge(&s, "smtlab_smt_yield", &[("class", "compute")]) - 1.25).abs() < 1e-9);
    assert_eq!(
        gauge(&s, "smtlab_smt_yield_runs", &[("class", "compute")]),
        10.0
    );
    // Locks beside scans rests on the shared core's combined progress, a yield; only a
    // file holding the lock thread's sharing ratio alone exports it as one.
    assert!(gauge(&s, "smtlab_smt_yield", &[("class", "locks-beside-scans")]) > 0.0);
    assert!(
        s.samples
            .iter()
            .all(|x| !(x.metric == "smtlab_sibling_sharing_ratio"
                && x.labels.get("class") == Some("locks-beside-scans")))
    );
}

/// A TCP port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process stopped (SIGTERM, then SIGKILL) and reaped when dropped, on every exit
/// path of the test, panics included.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        for _ in 0..50 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_get(port: u16, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// `top`, `study` and `merge` write into one textfile directory, as on a host that runs
/// all three: node_exporter's textfile collector must take every family (one HELP per
/// name across files, or it drops the family with an error).
#[test]
fn node_exporter_scrapes_the_study_merge_and_top_textfiles_together() {
    let exporter = "prometheus-node-exporter";
    if std::process::Command::new(exporter)
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(!ci(), "CI must have {exporter} (.ci/run installs it)");
        crate::common::skip(
            crate::common::Need::NodeExporter,
            &format!("{exporter} is not installed (apt-get install prometheus-node-exporter)"),
        );
        return;
    }
    let m = merged();
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(m.out.join("fleet.prom"), d.path().join("fleet.prom")).unwrap();
    std::fs::write(d.path().join("study.prom"), study_prom()).unwrap();
    let top = smtlab()
        .args(["top", "--once", "--prometheus", "-i", "100ms"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    std::fs::write(d.path().join("top.prom"), top).unwrap();
    let port = free_port();
    let log = std::fs::File::create(d.path().join("exporter.log")).unwrap();
    let _daemon = Daemon(
        std::process::Command::new(exporter)
            .args([
                "--collector.disable-defaults",
                "--collector.textfile",
                &format!("--collector.textfile.directory={}", d.path().display()),
                &format!("--web.listen-address=127.0.0.1:{port}"),
            ])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("node exporter starts"),
    );
    let mut body = None;
    for _ in 0..100 {
        if let Ok(b) = http_get(port, "/metrics") {
            body = Some(b);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let body = body.expect("node exporter answers within 10 s");
    let log = std::fs::read_to_string(d.path().join("exporter.log")).unwrap_or_default();
    assert!(
        body.contains("node_textfile_scrape_error 0"),
        "{body}\n{log}"
    );
    assert!(!log.contains("error gathering metrics"), "{log}");
    for needle in [
        "smtlab_smt_yield{class=\"compute\"}",
        "smtlab_smt_yield{source=\"assumed\"}",
        "smtlab_answer{",
        "smtlab_fleet_answer{",
        "smtlab_cpu_busy_ratio{",
    ] {
        assert!(
            body.contains(needle),
            "{needle} not scraped:\n{body}\n{log}"
        );
    }
    println!(
        "node exporter scraped {} lines of smtlab gauges",
        body.lines().filter(|l| l.starts_with("smtlab_")).count()
    );
}

#[test]
fn study_refuses_an_unusable_prometheus_path_before_measuring() {
    let d = tempfile::tempdir().unwrap();
    smtlab()
        .current_dir(d.path())
        .args([
            "study",
            "--quick",
            "--out",
            "out",
            "--prometheus",
            "no/dir/smtlab.prom",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--prometheus no/dir/smtlab.prom: directory no/dir does not exist",
        ));
    // Refused before the phases ran: no study was written.
    assert!(!d.path().join("out/results.json").exists());
}

/// Every file of `dir`, name and bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_signal_while_merge_reads_exits_130_and_leaves_the_previous_fleet_byte_identical() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    fixture::write_hosts(&hosts, 1000).unwrap();
    // The previous, complete fleet: of 2 hosts, so that a new one written over it shows.
    let old_in = dir.path().join("old");
    fixture::write_hosts(&old_in, 2).unwrap();
    let out = dir.path().join("out");
    let prom = out.join("fleet.prom");
    smtlab()
        .args(["merge", "--out"])
        .arg(&out)
        .arg("--prometheus")
        .arg(&prom)
        .arg(&old_in)
        .assert()
        .success();
    let before = snapshot(&out);
    assert_eq!(
        before.len(),
        4,
        "{:?}",
        before.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_smtlab"))
            .args(["merge", "--out"])
            .arg(&out)
            .arg("--prometheus")
            .arg(&prom)
            .arg(&hosts)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "merge ended before reading; stderr:\n{seen}"
            );
            seen.push_str(&line);
            if line.starts_with("merge: reading 1000 files") {
                break;
            }
        }
        // SAFETY: kill with the pid of our own, unreaped child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        seen.push_str(&rest);
        assert_eq!(status.code(), Some(130), "{name}: stderr:\n{seen}");
        assert!(seen.contains(&format!("interrupted by {name}")), "{seen}");
        assert!(
            !seen.contains("skipped"),
            "no file is called skipped: {seen}"
        );
        assert!(
            snapshot(&out) == before,
            "{name}: the previous fleet's files changed (or a temporary file was left): {:?}",
            snapshot(&out).iter().map(|f| &f.0).collect::<Vec<_>>()
        );
    }
}

/// A merge of 10,001 hosts interrupted 1 s, 2 s and 3 s after it started: exit 130 each
/// time, and the previous fleet's files (and nothing else) byte-identical afterwards.
/// Ignored: writing the hosts takes a minute and about 600 MB of `$TMPDIR`. Run with
/// `cargo test --test integration cli_merge::long_ -- --ignored --nocapture`; it prints
/// when each signal came and when merge exited. A point where merge had already finished
/// before its signal (a fast machine) is said, and fails: the test needs a slower merge.
#[test]
#[ignore = "long run: cargo test --test integration cli_merge::long_ -- --ignored --nocapture"]
fn long_a_10001_host_merge_interrupted_at_1_2_and_3_s_exits_130_and_keeps_the_previous_fleet() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    let t0 = Instant::now();
    fixture::write_hosts(&hosts, 10_001).unwrap();
    eprintln!(
        "10,001 hosts written in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let old_in = dir.path().join("old");
    fixture::write_hosts(&old_in, 2).unwrap();
    let out = dir.path().join("out");
    let prom = out.join("fleet.prom");
    smtlab()
        .args(["merge", "--out"])
        .arg(&out)
        .arg("--prometheus")
        .arg(&prom)
        .arg(&old_in)
        .assert()
        .success();
    let before = snapshot(&out);
    assert_eq!(before.len(), 4);
    let mut failures = Vec::new();
    for at in [1u64, 2, 3] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_smtlab"))
            .args(["merge", "--out"])
            .arg(&out)
            .arg("--prometheus")
            .arg(&prom)
            .arg(&hosts)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        std::thread::sleep(Duration::from_secs(at));
        if let Some(st) = child.try_wait().unwrap() {
            failures.push(format!("at {at} s: merge had already ended ({st})"));
            continue;
        }
        // SAFETY: kill with the pid of our own, unreaped child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let sent = start.elapsed();
        let o = child.wait_with_output().unwrap();
        let took = start.elapsed() - sent;
        let err = String::from_utf8_lossy(&o.stderr);
        let same = snapshot(&out) == before;
        eprintln!(
            "signal at {:.3} s: exit {:?} {:.3} s later; previous fleet byte-identical: {same}",
            sent.as_secs_f64(),
            o.status.code(),
            took.as_secs_f64()
        );
        if o.status.code() != Some(130) || !same || !err.contains("interrupted by SIGINT") {
            failures.push(format!(
                "at {at} s: exit {:?}, files identical {same}: {err}",
                o.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_temporary_file_left_by_a_killed_merge_is_removed_by_the_next_and_a_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    fixture::write_hosts(&hosts, 2).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // What a SIGKILL during the write leaves: the temporary file, unlocked, its writer gone.
    let stale = out.join(".fleet.json.smtlab-999999-0.tmp");
    std::fs::write(&stale, "{\"partial\": ").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // One whose writer still holds its lock (this process), however old.
    let live = out.join(".fleet.html.smtlab-999998-0.tmp");
    std::fs::write(&live, "<html").unwrap();
    let held = std::fs::File::open(&live).unwrap();
    held.set_modified(old).ok();
    std::fs::File::options()
        .write(true)
        .open(&live)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // SAFETY: flock on a valid open descriptor.
    assert_eq!(
        unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&held),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        },
        0
    );
    // A file of another name is never touched.
    let other = out.join(".notes.smtlab-999997-0.tmp");
    std::fs::write(&other, "mine").unwrap();
    let o = smtlab()
        .args(["merge", "--out"])
        .arg(&out)
        .arg(&hosts)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(
        !stale.exists(),
        "the stale temporary file is reaped; stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("removed {}", stale.display())),
        "{stderr}"
    );
    assert!(live.exists(), "a locked one is in use and kept");
    assert!(other.exists());
    drop(held);
}

/// What a hostile results.json field holds: a title-setting and screen-clearing escape
/// sequence, a bell, a C1 CSI, a bidirectional override, line breaks that would start a
/// raw HTML block, a script, and bare links.
const HOSTILE: &str = "h\x1b]0;pwned\x07\x1b[2J\r\u{9b}31m\u{202e}x\n\n<script>alert(1)</script>\n# head https://evil.example/x www.evil.example a@evil.example";

/// Asserts `text` (a file or a stream) holds no control character but line breaks and
/// tabs, and no bidirectional override.
fn assert_no_controls(what: &str, text: &str) {
    for c in text.chars() {
        assert!(
            !(smtlab::render::terminal::is_unsafe(c) && c != '\n' && c != '\t'),
            "{what} holds {c:?}:\n{text}"
        );
    }
}

/// Markdown outside code spans: the text GitHub would scan for HTML and links.
fn outside_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut parts = line.split('`');
    let mut inside = false;
    for p in parts.by_ref() {
        if !inside {
            out.push_str(p);
        }
        inside = !inside;
    }
    out
}

fn assert_safe_markdown(what: &str, text: &str) {
    assert_no_controls(what, text);
    for line in text.lines() {
        assert!(
            !line.trim_start().starts_with('<'),
            "{what}: a line starts a raw HTML block: {line:?}"
        );
        // What is backslash-escaped is text (CommonMark §2.4), never a link's start.
        let prose = outside_code_spans(line)
            .replace("\\\\", "")
            .replace("\\:", "")
            .replace("\\.", "")
            .replace("\\@", "");
        for link in ["://", "www.", "WWW.", "<script"] {
            assert!(
                !prose.contains(link),
                "{what}: `{link}` would be a link or markup: {line:?}"
            );
        }
        assert!(!prose.contains('@'), "{what}: a bare address: {line:?}");
    }
}

fn assert_safe_html(what: &str, text: &str) {
    assert_no_controls(what, text);
    assert!(!text.contains("<script"), "{what} holds a script");
}

#[test]
fn hostile_text_fields_are_escaped_on_the_terminal_stderr_and_in_every_file() {
    let dir = tempfile::tempdir().unwrap();
    // A directory name holding line breaks, a script and an escape sequence.
    let hostile_dir = dir.path().join("in\n\n<script>x</script>\x1b[2J");
    let mut r = fixture::report(
        0,
        HOSTILE,
        Ratios::all(1.25),
        1_700_000_000,
        Disturbance::None,
    );
    r.machine.cpu_model = format!("Xeon {HOSTILE}");
    r.machine.kernel = format!("6.1.0 {HOSTILE}");
    let good = write_report(&hostile_dir, "h1", &r);
    let bad = hostile_dir.join("bad\x1b[2J").join("results.json");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, "").unwrap();
    let out = dir.path().join("out");
    let o = smtlab()
        .args(["merge", "--out"])
        .arg(&out)
        .arg(&hostile_dir)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert_no_controls("merge's stdout", &stdout);
    assert_no_controls("merge's stderr", &stderr);
    assert!(stdout.contains("\\x1b]0;pwned\\x07"), "{stdout}");
    assert!(stderr.contains("bad\\x1b[2J"), "{stderr}");
    let md = std::fs::read_to_string(out.join("fleet.md")).unwrap();
    assert_safe_markdown("fleet.md", &md);
    let merged_by = md.lines().find(|l| l.starts_with("Merged by")).unwrap();
    assert!(merged_by.ends_with("UTC."), "one line: {merged_by:?}");
    assert_safe_html(
        "fleet.html",
        &std::fs::read_to_string(out.join("fleet.html")).unwrap(),
    );
    // One host's report of the same file.
    let rep = dir.path().join("report");
    smtlab()
        .arg("report")
        .arg(&good)
        .arg("--out")
        .arg(&rep)
        .assert()
        .success();
    assert_safe_markdown(
        "summary.md",
        &std::fs::read_to_string(rep.join("summary.md")).unwrap(),
    );
    assert_safe_html(
        "report.html",
        &std::fs::read_to_string(rep.join("report.html")).unwrap(),
    );
}

#[test]
fn empty_host_names_and_a_forged_future_study_are_refused_each_and_the_real_study_kept() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        let mut r = fixture::report(0, "x", Ratios::all(1.25), 1_700_000_000, Disturbance::None);
        r.machine.hostname = Some(String::new());
        write_report(dir.path(), name, &r);
    }
    let real = fixture::report(
        0,
        "db7",
        Ratios::all(1.25),
        1_700_000_000,
        Disturbance::None,
    );
    write_report(dir.path(), "db7-real", &real);
    // Far in the future, and a loss: as the host's latest study it would replace the real one.
    let forged = fixture::report(0, "db7", Ratios::all(0.5), 4_000_000_000, Disturbance::None);
    write_report(dir.path(), "db7-forged", &forged);
    let out = dir.path().join("out");
    let o = smtlab()
        .args(["merge", "--out"])
        .arg(&out)
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(o.stderr).unwrap();
    let f: Fleet =
        serde_json::from_str(&std::fs::read_to_string(out.join("fleet.json")).unwrap()).unwrap();
    assert_eq!(f.hosts, 1, "{stderr}");
    let h = &f.types[0].hosts[0];
    assert_eq!((h.host.as_str(), h.started_unix_s), ("db7", 1_700_000_000));
    let invalid: Vec<&str> = f
        .skipped
        .iter()
        .filter(|s| s.problem == Problem::Invalid)
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(invalid.len(), 4, "{:?}", f.skipped);
    assert_eq!(
        stderr.matches("machine.hostname \"\", empty").count(),
        3,
        "{stderr}"
    );
    assert!(
        stderr.contains("db7-forged/results.json: has provenance.started_unix_s 4000000000"),
        "{stderr}"
    );
}

#[test]
fn an_out_that_is_a_link_to_a_directory_is_refused_and_a_failed_merge_leaves_no_out() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    fixture::write_hosts(&hosts, 2).unwrap();
    let target = dir.path().join("elsewhere");
    std::fs::create_dir(&target).unwrap();
    let link = dir.path().join("out-link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for cmd in [
        vec!["merge".to_string(), hosts.display().to_string()],
        vec![
            "report".to_string(),
            hosts.join("host-00000/results.json").display().to_string(),
        ],
    ] {
        let o = smtlab()
            .args(&cmd)
            .arg("--out")
            .arg(&link)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let stderr = String::from_utf8(o.stderr).unwrap();
        assert!(
            stderr.contains("it is a symbolic link (to "),
            "{cmd:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            0,
            "nothing written through it"
        );
    }
    // Nothing usable: exit 2, and the --out it would have made is not left behind.
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let out = dir.path().join("new-out");
    smtlab()
        .arg("merge")
        .arg(&empty)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2);
    assert!(!out.exists(), "--out made for a merge that exited 2");
}
