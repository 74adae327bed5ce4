//! What a crowded run reports is still true: with hundreds of threads per CPU a worker can
//! wait seconds after the stop for its turn to leave, and such a run once reported a
//! 33.8 s operation in a 2 s window and 1,167 % of the time waiting for a CPU. Margins
//! are wide and the CPUs are the first one or two this process may use.

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
        // Only operations that ended inside the window are timed; the margin covers the
        // moment between the window's last clock read and the workers being told.
        let max = s["latency_max_ns"].as_u64().unwrap();
        assert!(
            max <= window + 250_000_000,
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
