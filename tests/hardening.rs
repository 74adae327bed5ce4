//! What a crowded run reports is still true: with hundreds of threads per CPU a worker can
//! wait seconds after the stop for its turn to leave, and such a run once reported a
//! 33.8 s operation in a 2 s window and 1,167 % of the time waiting for a CPU. Bounds come
//! from what the run recorded (its window, each worker's own time), not from wall-clock
//! margins, and the CPUs are the first one or two this process may use.

use std::process::{Command, Stdio};
use std::time::Duration;

/// The first one or two CPUs this process may use, as a CPU list.
fn two_cpus() -> String {
    let allowed = smtlab::affinity::process_affinity().unwrap();
    let cpus: Vec<String> = allowed.iter().take(2).map(|c| c.to_string()).collect();
    cpus.join(",")
}

#[test]
fn neighbors_with_256_workers_reports_latencies_inside_the_window_and_waits_as_shares() {
    let placement = format!("cpus:{}", two_cpus());
    let out = Command::new(env!("CARGO_BIN_EXE_smtlab"))
        .args(["neighbors", "--workers", "256", "--placement", &placement])
        .args([
            "--burners",
            "0,2",
            "--force",
            "-d",
            "1s",
            "--warmup",
            "200ms",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut steps: Vec<&serde_json::Value> = j["steps"].as_array().unwrap().iter().collect();
    steps.extend(j.get("reference").filter(|r| !r.is_null()));
    assert!(steps.len() >= 2, "{j}");
    for s in steps {
        let window = s["measured_ns"].as_u64().unwrap();
        assert!(window >= 1_000_000_000, "a 1 s window measured {window} ns");
        // Only operations that began and ended inside the window are timed: each began
        // after the window opened (the measured phase is a call of its own) and ended
        // before the engine closed it, which it does before reading the window's end. So
        // no latency exceeds the window, however loaded the machine; the 0.1 % is the
        // workers' clock (the TSC, calibrated against CLOCK_MONOTONIC) against the window's.
        let max = s["latency_max_ns"].as_u64().unwrap();
        assert!(
            max as f64 <= window as f64 * 1.001,
            "max latency {max} ns in a {window} ns window: {s}"
        );
        // A share of each worker's own time: at most 100 % (schedstat may be missing).
        if let Some(share) = s["worker_run_delay_share"].as_f64() {
            assert!(
                (0.0..=1.0 + 1e-9).contains(&share),
                "run-queue share {share}"
            );
        }
    }
}

#[test]
fn an_interrupted_run_names_the_signal_in_its_output() {
    for (sig, name, json) in [
        (libc::SIGTERM, "SIGTERM", false),
        (libc::SIGHUP, "SIGHUP", true),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smtlab"));
        cmd.args(["burn", "-k", "int", "-t", "1", "-d", "60s", "--warmup", "0"]);
        if json {
            cmd.arg("--json");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(700));
        // SAFETY: kill has no memory preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{name}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if json {
            let j: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(j["interrupted"], true);
            assert_eq!(j["interrupted_by"], name, "{stdout}");
        } else {
            assert!(
                stdout.contains(&format!("interrupted by {name}:")),
                "{stdout}"
            );
        }
        assert!(
            stderr.contains(&format!("interrupted by {name}")),
            "{stderr}"
        );
        assert!(!stdout.contains("Ctrl-C") && !stderr.contains("Ctrl-C"));
    }
}

/// Every text of a `results.json` that the model accepts with HTML in it (names, reasons,
/// notes, the `--db` and command-line strings) comes out escaped: never as markup in
/// `report.html`, never as raw HTML outside a code span in `summary.md` (once 31 fields
/// passed `<img src=x onerror=…>` through).
#[test]
fn html_in_any_text_of_results_json_is_escaped_in_both_reports() {
    use serde_json::Value;
    const INJECT: &str = "<img src=x onerror=alert(1)>";
    let snap = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/integration__study__fake_results_json.snap");
    let snap = std::fs::read_to_string(snap).unwrap();
    // insta's header ends at the second `---` line.
    let json = snap.splitn(3, "---\n").nth(2).unwrap();
    let mut v: Value = serde_json::from_str(json).unwrap();
    fn strings(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    strings(x, format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    strings(x, format!("{at}/{i}"), out);
                }
            }
            Value::String(_) => out.push(at),
            _ => {}
        }
    }
    let mut pointers = Vec::new();
    strings(&v, String::new(), &mut pointers);
    let mut injected = Vec::new();
    for p in &pointers {
        let old = v.pointer(p).unwrap().clone();
        *v.pointer_mut(p).unwrap() = Value::String(format!("{}{INJECT}", old.as_str().unwrap()));
        // Closed sets (enums, CPU lists) refuse it; every free text takes it.
        if smtlab::report::lenient::from_value::<smtlab::report::Report>(v.clone()).is_ok() {
            injected.push(p.clone());
        } else {
            *v.pointer_mut(p).unwrap() = old;
        }
    }
    assert!(
        injected.len() >= 50,
        "only {} texts: {injected:?}",
        injected.len()
    );
    for must in ["/study/db", "/provenance/command"] {
        assert!(injected.iter().any(|p| p == must), "{must} not injected");
    }
    let r = smtlab::report::render_json(&serde_json::to_string(&v).unwrap()).unwrap();
    assert!(!r.html.contains("<img"), "raw <img> in report.html");
    // Outside code spans (which Markdown prints literally), no `<` starts a tag.
    for (n, line) in r.markdown.lines().enumerate() {
        let outside: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect();
        assert!(
            !outside.contains("<img"),
            "summary.md line {}: {line}",
            n + 1
        );
    }
}

/// A scan buffer of several GiB no longer holds up the end of a run: the scanner looks at
/// the stop flag every 16 MiB of its pass (a 16 GiB buffer once turned `-d 1s` into 34 s),
/// both at the end of the measured window and on SIGINT.
#[test]
fn a_multi_gib_scan_buffer_ends_on_time_and_on_sigint() {
    const GIB: u64 = 1 << 30;
    let available = smtlab::limits::mem_available_bytes().unwrap_or(0);
    // 4 GiB, and the limits module asks for --force above half of what is available.
    if available < 10 * GIB {
        crate::common::skip(
            crate::common::Need::Machine,
            &format!(
                "{} MiB available, this test allocates 4 GiB",
                available >> 20
            ),
        );
        return;
    }
    let _cpu = crate::common::cpu_heavy();
    let lockscan = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smtlab"));
        cmd.args(["lockscan", "--scan-bytes", "4GiB", "--repeat", "1"])
            .args(["--warmup", "0", "--lock-cpus", &two_cpus()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    };
    // The end of the window: a baseline and a scanner run of 1 s each, plus allocating
    // and touching 4 GiB once; 34 s before the fix, a few seconds after.
    let t0 = std::time::Instant::now();
    let out = lockscan(&["--duration", "1"]).output().unwrap();
    let took = t0.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(20), "a 1 s run took {took:?}");
    // SIGINT in the middle of a 60 s run.
    let child = lockscan(&["--duration", "60"]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = std::time::Instant::now();
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stopped = sent.elapsed();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stopped < Duration::from_secs(3),
        "stopped {stopped:?} after SIGINT"
    );
}
