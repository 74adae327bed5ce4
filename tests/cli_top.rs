//! `smtlab top`: JSON and Prometheus output on this machine (shapes and invariants, never
//! its CPU count or load), the Prometheus text checked with a real parser
//! (`prometheus-parse`), a synthetic SMT interval through every renderer, `--pid`, and
//! bad input. The per-core maths is unit-tested beside `top::cores` and `top::model`.

use assert_cmd::Command;
use prometheus_parse::{LineInfo, Scrape, Value};
use serde_json::Value as Json;
use smtlab::cpuset::CpuSet;
use smtlab::hygiene::CpuTimes;
use smtlab::top::cores::Yield;
use smtlab::top::model::{self, Inputs, TraceInput};
use smtlab::top::{trace, view as render};

fn smtlab(args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("smtlab").unwrap();
    c.args(args);
    c
}

fn stdout(mut c: Command) -> String {
    let o = c.assert().success().get_output().clone();
    String::from_utf8(o.stdout).unwrap()
}

fn share(v: &Json) -> f64 {
    let x = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((0.0..=1.0).contains(&x), "share {x} outside 0–1");
    x
}

/// Checks the invariants of one interval's JSON.
fn check_interval(v: &Json) {
    assert_eq!(v["schema_version"], 1);
    let cpus = v["cpus"].as_array().unwrap();
    let cores = v["cores"].as_array().unwrap();
    assert!(!cpus.is_empty() && !cores.is_empty());
    let mut covered = Vec::new();
    for c in cores {
        let lo = share(&c["busy_min_share"]);
        let hi = share(&c["busy_max_share"]);
        assert!(lo <= hi + 1e-9, "{c}");
        assert!(share(&c["both_busy_min_share"]) <= share(&c["both_busy_max_share"]) + 1e-9);
        assert!(share(&c["used_min_share"]) <= share(&c["used_max_share"]) + 1e-9);
        covered.extend(
            c["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap()),
        );
    }
    let mut listed: Vec<u64> = cpus.iter().map(|c| c["cpu"].as_u64().unwrap()).collect();
    covered.sort();
    listed.sort();
    assert_eq!(covered, listed, "every CPU in exactly one core");
    for c in cpus {
        if !c["busy_share"].is_null() {
            share(&c["busy_share"]);
        }
    }
    let m = &v["machine"];
    share(&m["logical_busy_share"]);
    let n = cores.len() as f64;
    let (lo, hi) = (
        m["headroom_cores_min"].as_f64().unwrap(),
        m["headroom_cores_max"].as_f64().unwrap(),
    );
    assert!(-1e-9 <= lo && lo <= hi + 1e-9 && hi <= n + 1e-9, "{m}");
    assert!(!m["summary"].as_str().unwrap().is_empty());
    assert_eq!(
        v["smt"],
        cores
            .iter()
            .any(|c| c["cpus"].as_array().unwrap().len() > 1)
    );
}

#[test]
fn once_json_here_is_one_interval_that_holds_together() {
    let out = stdout(smtlab(&["top", "--once", "--json", "--interval", "200ms"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "one NDJSON line: {out}");
    let v: Json = serde_json::from_str(lines[0]).unwrap();
    check_interval(&v);
    assert_eq!(v["smt_yield"]["value"], 1.25);
    assert_eq!(v["smt_yield"]["source"], "assumed");
    if v["smt"] == false {
        let notes = v["notes"].as_array().unwrap();
        assert!(
            notes
                .iter()
                .any(|n| n.as_str().unwrap().starts_with("one thread per core"))
        );
    }
}

#[test]
fn count_gives_one_line_per_interval() {
    let out = stdout(smtlab(&["top", "--count", "2", "--json", "-i", "100ms"]));
    assert_eq!(out.lines().count(), 2, "{out}");
    for l in out.lines() {
        check_interval(&serde_json::from_str(l).unwrap());
    }
}

#[test]
fn text_once_has_the_summary_and_one_row_per_core() {
    let out = stdout(smtlab(&["top", "--once", "-i", "100ms"]));
    assert!(out.contains("logical "), "{out}");
    assert!(out.contains("cores"), "{out}");
    assert!(
        !out.contains('\x1b'),
        "no screen control when not a terminal"
    );
}

/// Parses `text` with prometheus-parse, insisting that every line is understood (the
/// parser skips what it does not recognise) and every sample is a documented gauge.
fn scrape(text: &str) -> Scrape {
    for line in text.lines() {
        assert!(
            !matches!(LineInfo::parse(line), LineInfo::Ignored),
            "not exposition format: {line}"
        );
    }
    let s = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).unwrap();
    let sample_lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(s.samples.len(), sample_lines);
    for smp in &s.samples {
        assert!(
            s.docs.contains_key(&smp.metric),
            "no HELP for {}",
            smp.metric
        );
        assert!(
            matches!(smp.value, Value::Gauge(_)),
            "{} is not a gauge",
            smp.metric
        );
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

#[test]
fn prometheus_here_parses() {
    let out = stdout(smtlab(&["top", "--once", "--prometheus", "-i", "100ms"]));
    let s = scrape(&out);
    let busy: Vec<_> = s
        .samples
        .iter()
        .filter(|x| x.metric == "smtlab_cpu_busy_ratio")
        .collect();
    assert!(!busy.is_empty());
    for b in busy {
        assert!(b.labels.get("cpu").is_some() && b.labels.get("core").is_some());
    }
    let lo = gauge(&s, "smtlab_headroom_cores", &[("bound", "min")]);
    let hi = gauge(&s, "smtlab_headroom_cores", &[("bound", "max")]);
    assert!(lo <= hi + 1e-9);
    assert_eq!(
        gauge(&s, "smtlab_smt_yield", &[("source", "assumed")]),
        1.25
    );
}

#[test]
fn textfile_is_replaced_whole() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("smtlab.prom");
    let out = stdout(smtlab(&[
        "top",
        "--count",
        "2",
        "-i",
        "100ms",
        "--prometheus",
        "--textfile",
        f.to_str().unwrap(),
    ]));
    assert!(out.is_empty(), "{out}");
    scrape(&std::fs::read_to_string(&f).unwrap());
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
}

/// An SMT interval with a trace, built through the library: every family, traced ones
/// included, parses and carries the model's numbers.
#[test]
fn a_traced_smt_interval_renders_in_every_format() {
    let cores = [
        CpuSet::parse_list("0-1").unwrap(),
        CpuSet::parse_list("2-3").unwrap(),
    ];
    let t = |cpu, busy, idle| CpuTimes {
        cpu,
        busy,
        idle,
        steal: 0,
    };
    let before: Vec<CpuTimes> = (0..4).map(|c| t(c, 0, 0)).collect();
    let after = [t(0, 100, 0), t(1, 50, 50), t(2, 0, 100), t(3, 0, 100)];
    let text = "\
 smtlab-1 [000] ..... 10.000000: tracing_mark_write: smtlab-begin
 a-5 [000] d..2. 10.100000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R ==> next_comm=b next_pid=6 next_prio=120
 <idle>-0 [001] d..2. 10.500000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=c next_pid=7 next_prio=120
 smtlab-1 [000] ..... 11.000000: tracing_mark_write: smtlab-end
";
    let s = model::build(Inputs {
        cores: &cores,
        before: &before,
        after: &after,
        interval_ns: 1_000_000_000,
        time_unix_ms: 0,
        smt_yield: &Yield::assumed(),
        trace: TraceInput::Traced(trace::parse(text)),
        pid: None,
    });
    let v = serde_json::to_value(&s).unwrap();
    check_interval(&v);
    let traced = s.cores[0].traced.unwrap();
    assert!((traced.both_busy_share - 0.5).abs() < 1e-6, "{traced:?}");

    let p = scrape(&render::prometheus(&s));
    let both = gauge(
        &p,
        "smtlab_core_traced_ratio",
        &[("core", "0"), ("cpus", "0-1"), ("state", "both")],
    );
    assert!((both - 0.5).abs() < 1e-6);
    assert_eq!(
        gauge(&p, "smtlab_core_busy_min_ratio", &[("core", "0")]),
        s.cores[0].busy_min_share
    );
    assert_eq!(
        gauge(&p, "smtlab_cpu_busy_ratio", &[("cpu", "1"), ("core", "0")]),
        0.5
    );

    let table = smtlab::render::terminal::draw(&render::blocks(&s, true));
    insta::assert_snapshot!("traced_smt_interval_text", table);
    insta::assert_snapshot!("traced_smt_interval_prometheus", render::prometheus(&s));
    assert!(table.contains("idle/one/both % (traced)"), "{table}");
    assert!(table.contains("SMT yield: assumed 1.25"), "{table}");
    // Busiest core first.
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("0-1") || l.contains("2-3"))
        .collect();
    assert!(rows[0].contains("0-1"), "{table}");
    let line: Json = serde_json::from_str(render::json_line(&s).trim()).unwrap();
    assert_eq!(line, v);
}

#[test]
fn pid_lists_the_threads_of_a_process() {
    let mut child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let out = smtlab(&["top", "--once", "--json", "-i", "300ms", "--pid", &pid])
        .assert()
        .get_output()
        .clone();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Json = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["pid"];
    assert_eq!(p["pid"].as_u64().unwrap().to_string(), pid);
    let threads = p["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1, "{p}");
    assert!(["sampled", "tracefs"].contains(&p["method"].as_str().unwrap()));
    // A busy loop is seen running somewhere (wide margin: the host may be loaded).
    assert!(!threads[0]["cpus"].as_array().unwrap().is_empty(), "{p}");
}

#[test]
fn a_bounded_run_exports_every_interval_as_json_csv_and_markdown() {
    let d = tempfile::tempdir().unwrap();
    let path = |name: &str| d.path().join(name).to_str().unwrap().to_string();
    let (json, csv_file, md) = (path("t.json"), path("t.csv"), path("t.md"));
    smtlab(&[
        "top",
        "--count",
        "2",
        "-i",
        "100ms",
        "--export-json",
        &json,
        "--export-csv",
        &csv_file,
        "--export-markdown",
        &md,
    ])
    .assert()
    .success();
    let list: Json = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let intervals = list.as_array().expect("a JSON list of intervals");
    assert_eq!(intervals.len(), 2);
    intervals.iter().for_each(check_interval);

    let mut r = csv::Reader::from_path(&csv_file).unwrap();
    let head = r.headers().unwrap().clone();
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {head:?}"))
    };
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    for (i, v) in intervals.iter().enumerate() {
        let of = |level: &str| -> Vec<&csv::StringRecord> {
            rows.iter()
                .filter(|r| r[col("interval")] == (i + 1).to_string() && &r[col("level")] == level)
                .collect()
        };
        let cpus = of("cpu");
        let cores = of("core");
        assert_eq!(
            cpus.len(),
            v["cpus"].as_array().unwrap().len(),
            "interval {i}"
        );
        assert_eq!(
            cores.len(),
            v["cores"].as_array().unwrap().len(),
            "interval {i}"
        );
        for c in &cpus {
            let cpu: u64 = c[col("cpu")].parse().unwrap();
            let in_json = v["cpus"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["cpu"] == cpu)
                .unwrap();
            match c[col("busy_share")].parse::<f64>() {
                Ok(b) => assert!((b - in_json["busy_share"].as_f64().unwrap()).abs() < 1e-12),
                Err(_) => assert!(in_json["busy_share"].is_null(), "{c:?}"),
            }
        }
        for (c, in_json) in cores.iter().zip(v["cores"].as_array().unwrap()) {
            for name in [
                "busy_min_share",
                "busy_max_share",
                "used_min_share",
                "used_max_share",
            ] {
                let x: f64 = c[col(name)].parse().unwrap();
                // serde_json reads a float back to within one unit in the last place.
                assert!(
                    (x - in_json[name].as_f64().unwrap()).abs() < 1e-12,
                    "{name}"
                );
            }
            assert_eq!(&c[col("busy_share")], "", "a core row has no per-CPU share");
        }
    }

    let text = std::fs::read_to_string(&md).unwrap();
    assert!(
        text.starts_with("# smtlab top: 2 intervals from "),
        "{text}"
    );
    assert_eq!(text.matches("\n## Interval ").count(), 2, "{text}");
    assert!(text.contains("|---|"), "{text}");
}

#[test]
fn exports_need_a_bounded_run_and_a_writable_path() {
    let o = smtlab(&["top", "--export-csv", "/tmp/never-written.csv"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("need a bounded run: add --once or --count N"),
        "{err}"
    );
    // A bad path is refused before the interval is sampled: a 1 h interval would
    // otherwise hold the test for an hour.
    let o = smtlab(&[
        "top",
        "--once",
        "-i",
        "1h",
        "--export-markdown",
        "/nonexistent/t.md",
    ])
    .assert()
    .code(2)
    .get_output()
    .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--export-markdown /nonexistent/t.md"), "{err}");
}

#[test]
fn bad_input_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let bad_yield = d.path().join("y.json");
    std::fs::write(&bad_yield, r#"{"yield": 1.2}"#).unwrap();
    let good_yield = d.path().join("good.json");
    std::fs::write(&good_yield, r#"{"smt_yield": 1.1}"#).unwrap();
    for (args, says) in [
        (vec!["top", "--once", "-i", "10ms"], "between 100ms and 1h"),
        (vec!["top", "--count", "0"], "between 1 and"),
        (
            vec!["top", "--once", "--pid", "4000000000"],
            "no such process",
        ),
        (
            vec!["top", "--once", "--yield", bad_yield.to_str().unwrap()],
            "smt_yield",
        ),
        (
            vec!["top", "--once", "--yield", "/nonexistent.json"],
            "--yield",
        ),
        (
            vec![
                "top",
                "--once",
                "--prometheus",
                "--textfile",
                "/nonexistent/x.prom",
            ],
            "directory /nonexistent does not exist",
        ),
    ] {
        let o = smtlab(&args).assert().code(2).get_output().clone();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = stdout(smtlab(&[
        "top",
        "--once",
        "--json",
        "-i",
        "100ms",
        "--yield",
        good_yield.to_str().unwrap(),
    ]));
    let v: Json = serde_json::from_str(&out).unwrap();
    assert_eq!(v["smt_yield"]["value"], 1.1);
}

#[test]
fn a_copied_tree_is_read_but_never_traced() {
    let t = tempfile::tempdir().unwrap();
    let cpu = t.path().join("sys/devices/system/cpu");
    for c in 0..4u32 {
        let d = cpu.join(format!("cpu{c}/topology"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("thread_siblings_list"),
            if c < 2 { "0-1" } else { "2-3" },
        )
        .unwrap();
    }
    std::fs::write(cpu.join("online"), "0-3\n").unwrap();
    std::fs::create_dir_all(t.path().join("proc")).unwrap();
    std::fs::write(
        t.path().join("proc/stat"),
        "cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 1 0 0 9 0 0 0 0 0 0\ncpu1 1 0 0 9 0 0 0 0 0 0\n\
         cpu2 1 0 0 9 0 0 0 0 0 0\ncpu3 1 0 0 9 0 0 0 0 0 0\n",
    )
    .unwrap();
    let out = stdout(smtlab(&[
        "top",
        "--once",
        "--json",
        "-i",
        "100ms",
        "--sysfs-root",
        t.path().to_str().unwrap(),
    ]));
    let v: Json = serde_json::from_str(&out).unwrap();
    check_interval(&v);
    assert_eq!(v["smt"], true);
    assert_eq!(v["cores"][1]["cpus"], serde_json::json!([2, 3]));
    assert_eq!(v["tracefs"]["used"], false);
    assert!(
        v["tracefs"]["reason"]
            .as_str()
            .unwrap()
            .contains("copied tree")
    );
    // The copy's counters do not move: said, not made up.
    assert!(v["cpus"][0]["busy_share"].is_null());
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("no time accounted")
    );
}

#[test]
fn ctrl_c_ends_top_with_130() {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(["top", "-i", "30s"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let t0 = std::time::Instant::now();
    // SAFETY: kill on a child we own.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(130));
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(10),
        "ends promptly"
    );
}
