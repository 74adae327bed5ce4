//! Burners: every kind progresses and stops on time; process burners never outlive smtlab
//! (kill -9 of the parent, Ctrl-C, drop); bad input exits 2 with a clear message.

use assert_cmd::cargo::cargo_bin;
use smtlab::burn::{BurnSpec, BurnerKind, Burners, Policy, ProcessBurners, ProcessOptions, Unit};
use smtlab::cpuset::CpuSet;
use smtlab::engine::{self, RunSpec};
use smtlab::placement::{self, Request};
use smtlab::topology::discover;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn smtlab() -> Command {
    Command::new(cargo_bin("smtlab"))
}

/// Allowed CPUs of this test process.
fn allowed() -> CpuSet {
    smtlab::affinity::process_affinity().unwrap()
}

#[test]
fn every_kind_progresses_and_stops_on_time() {
    let topo = discover(Path::new("/")).unwrap();
    let plan = placement::plan(&topo, &Request::Os, 1).unwrap();
    let cpus = vec![plan.threads[0].cpus.clone()];
    let mut slowest_stop_ns = 0;
    for kind in BurnerKind::ALL {
        let burners = Burners::new(&BurnSpec::new(kind), &topo, &cpus).unwrap();
        // The warm-up builds the buffers (128 MiB for stream/chase here, seconds in a debug
        // build on a busy machine), then 300 ms count.
        let warmup = if matches!(kind, BurnerKind::Stream | BurnerKind::Chase) {
            Duration::from_secs(3)
        } else {
            Duration::from_millis(300)
        };
        let run = RunSpec::new(warmup, Duration::from_millis(300));
        let r = engine::run(&plan, &run, &burners).unwrap();
        let t = &r.threads[0];
        assert!(t.ops > 0, "{kind}: no progress in 300 ms");
        let info = burners.info(0);
        assert_eq!(info.error, None, "{kind}");
        if let BurnerKind::Fma(_) = kind {
            assert!(info.variant.is_some(), "fma reports its variant");
        }
        if kind.uses_caches() {
            let b = info.buffer_bytes.expect("buffer kinds report their size");
            if matches!(kind, BurnerKind::Stream | BurnerKind::Chase) {
                assert!(b >= 64 << 20, "{kind}: {b} bytes is below 64 MiB");
            }
        }
        // "Stops within ~10 ms": a wide margin for a loaded 2-vCPU CI box and debug builds.
        assert!(
            r.stop_latency_ns < 250_000_000,
            "{kind}: took {} ms to stop",
            r.stop_latency_ns / 1_000_000
        );
        slowest_stop_ns = slowest_stop_ns.max(r.stop_latency_ns);
    }
    eprintln!("slowest stop: {:.2} ms", slowest_stop_ns as f64 / 1e6);
}

#[test]
fn prime_burner_counts_sysbench_events() {
    // A 3..100 pass is tiny: many events in 200 ms, each a full pass.
    let topo = discover(Path::new("/")).unwrap();
    let plan = placement::plan(&topo, &Request::Os, 1).unwrap();
    let mut spec = BurnSpec::new(BurnerKind::Prime);
    spec.max_prime = 100;
    let burners = Burners::new(&spec, &topo, &[plan.threads[0].cpus.clone()]).unwrap();
    let r = engine::run(
        &plan,
        &RunSpec::new(Duration::ZERO, Duration::from_millis(200)),
        &burners,
    )
    .unwrap();
    assert!(r.threads[0].ops > 1000, "{} events", r.threads[0].ops);
    assert_eq!(BurnerKind::Prime.unit(), Unit::Events);
}

#[test]
fn thread_mode_json_applies_policy_and_nice() {
    let out = smtlab()
        .args([
            "burn",
            "--kind",
            "int",
            "--threads",
            "2",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
            "--policy",
            "idle",
            "--nice",
            "19",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["mode"], "thread");
    assert_eq!(j["unit"], "ops");
    let b = j["burners"].as_array().unwrap();
    assert_eq!(b.len(), 2);
    for x in b {
        // SCHED_IDLE threads run only when nothing else wants the CPU (sched(7)), so on a
        // busy machine they may legitimately complete nothing: only the count's presence
        // is asserted, not progress.
        assert!(x["ops"].as_u64().is_some());
        assert_eq!(x["policy"], "idle");
        assert_eq!(x["nice"], 19);
    }
    assert!(j["total_ops_per_sec"].as_f64().unwrap() >= 0.0);
}

#[test]
fn text_output_shows_each_burner_and_total() {
    let first = allowed().first().unwrap();
    let out = smtlab()
        .args([
            "burn", "-k", "prime", "-t", "1", "-d", "300ms", "--warmup", "0",
        ])
        .args(["--cpus", &first.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("EVENTS/S") && s.contains("total"), "{s}");
    assert!(s.contains("max prime 10000"), "{s}");
}

#[test]
fn process_mode_reports_every_child() {
    let out = smtlab()
        .args([
            "burn",
            "--kind",
            "pause",
            "--threads",
            "2",
            "--mode",
            "process",
            "--duration",
            "400ms",
            "--warmup",
            "100ms",
            "--policy",
            "batch",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["mode"], "process");
    let b = j["burners"].as_array().unwrap();
    assert_eq!(b.len(), 2);
    let pids: Vec<i64> = b.iter().map(|x| x["pid"].as_i64().unwrap()).collect();
    assert_ne!(pids[0], pids[1], "one process per burner");
    for x in b {
        assert!(x["ops"].as_u64().unwrap() > 0);
        assert_eq!(x["policy"], "batch");
        let ns = x["measured_ns"].as_u64().unwrap();
        assert!((300_000_000..2_000_000_000).contains(&ns), "{ns} ns");
    }
}

/// Starts `smtlab burn --mode process` and returns it with its burner pids (from its
/// stderr line), after checking each is alive and its child.
fn start_process_burners(threads: usize) -> (Child, Vec<i32>) {
    let mut child = smtlab()
        .args([
            "burn",
            "--kind",
            "int",
            "--mode",
            "process",
            "--duration",
            "60",
        ])
        .args(["--warmup", "0", "--threads", &threads.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("burn: burner processes started: ") {
                let _ = tx.send(
                    rest.split_whitespace()
                        .map(|p| p.parse::<i32>().unwrap())
                        .collect::<Vec<_>>(),
                );
            }
        }
    });
    let pids = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(p) => p,
        Err(e) => {
            let _ = child.kill();
            panic!("no pid line from smtlab burn: {e}");
        }
    };
    assert_eq!(pids.len(), threads);
    for &p in &pids {
        assert_eq!(
            proc_state(p).map(|(_, ppid)| ppid),
            Some(child.id() as i32),
            "pid {p} is a child of smtlab"
        );
    }
    (child, pids)
}

/// (state, ppid) of a live process; None when gone.
fn proc_state(pid: i32) -> Option<(char, i32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((state, ppid))
}

/// True when `pid` no longer runs: gone, or a zombie waiting for init to reap it.
fn dead(pid: i32) -> bool {
    matches!(proc_state(pid), None | Some(('Z' | 'X', _)))
}

fn all_dead_within(pids: &[i32], limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if pids.iter().all(|&p| dead(p)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn process_burners_die_with_a_killed_parent() {
    let (mut parent, pids) = start_process_burners(2);
    std::thread::sleep(Duration::from_millis(200)); // let them get going
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(parent.id() as i32, libc::SIGKILL) };
    parent.wait().unwrap();
    let ok = all_dead_within(&pids, Duration::from_secs(1));
    if !ok {
        for &p in &pids {
            // SAFETY: clean up what the test found alive.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
    assert!(ok, "burner processes {pids:?} outlived a kill -9 of smtlab");
}

#[test]
fn ctrl_c_during_process_mode_leaves_no_burner() {
    let (mut parent, pids) = start_process_burners(2);
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(parent.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = parent.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "smtlab ignored Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(130), "Ctrl-C exits 130");
    // The parent reaped them itself: they are gone, not even zombies.
    for &p in &pids {
        assert_eq!(proc_state(p), None, "burner {p} left behind after Ctrl-C");
    }
}

#[test]
fn library_process_burners_stream_progress_and_stop() {
    let cpus = vec![allowed(); 2];
    let opts = ProcessOptions {
        exe: Some(cargo_bin("smtlab")),
        warmup: Duration::ZERO,
        duration: None,
    };
    let mut spec = BurnSpec::new(BurnerKind::Mul);
    spec.policy = Policy::Idle;
    let set = ProcessBurners::spawn(&spec, &cpus, &opts).unwrap();
    let pids = set.pids();
    let t0 = Instant::now();
    while set.progress().iter().any(|p| p.ops == 0) {
        assert!(t0.elapsed() < Duration::from_secs(10), "no live progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    let results = set.stop().unwrap();
    assert_eq!(results.len(), 2);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.burner, i);
        assert_eq!(r.pid, pids[i]);
        assert!(r.ops > 0 && r.ops_per_sec > 0.0);
        assert_eq!(r.policy, Some(Policy::Idle));
    }
    for &p in &pids {
        assert_eq!(proc_state(p), None);
    }
}

#[test]
fn dropping_process_burners_kills_them() {
    let opts = ProcessOptions {
        exe: Some(cargo_bin("smtlab")),
        warmup: Duration::ZERO,
        duration: None,
    };
    let set = ProcessBurners::spawn(&BurnSpec::new(BurnerKind::Int), &[allowed()], &opts).unwrap();
    let pids = set.pids();
    std::thread::sleep(Duration::from_millis(100));
    drop(set);
    for &p in &pids {
        assert_eq!(proc_state(p), None, "dropped burner {p} still exists");
    }
}

#[test]
fn bad_input_is_a_clear_error_with_exit_code_2() {
    for (args, needle) in [
        (vec!["--kind", "divide"], "valid kinds: prime"),
        (
            vec!["--kind", "prime", "--threads", "0"],
            "--threads 0: expected a whole number between 1 and",
        ),
        (
            vec!["--kind", "prime", "--duration", "5x"],
            "--duration 5x: unknown unit `x`",
        ),
        (
            vec!["--kind", "prime", "--duration", "0"],
            "greater than zero",
        ),
        (
            vec!["--kind", "prime", "--nice", "40"],
            "between -20 and 19",
        ),
        (
            vec!["--kind", "prime", "--policy", "fifo"],
            "normal, batch, idle",
        ),
        (vec!["--kind", "prime", "--mode", "fork"], "thread, process"),
        (
            vec!["--kind", "prime", "--placement", "bogus"],
            "one-per-core",
        ),
        (vec!["--kind", "prime", "--max-prime", "2"], "between 3 and"),
    ] {
        let out = smtlab().arg("burn").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
