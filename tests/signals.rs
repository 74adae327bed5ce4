//! Signals at scale: the first SIGINT, SIGTERM or SIGHUP ends any run within a few seconds
//! with cleanup and exit 130, however many threads, burner processes or prefill rows; a
//! second one hurries the cleanup but never skips it.
//!
//! The counts are small enough for a test and still show the pattern: 256 spinning
//! threads on one or two CPUs once took 14 s (debug) to stop, 512 burner processes 27 s,
//! and a prefill ignored signals altogether. Limits are wide (3 s from the signal), never
//! speeds; the CPUs are the first one or two this process may use, whatever the machine.
//! The runs with hundreds of threads or processes take `common::cpu_heavy`, so in the one
//! test process they do not run beside the engine's and the lock library's busy tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long after the signal the run must have ended.
const STOP_LIMIT: Duration = Duration::from_secs(3);

/// The first one or two CPUs this process may use, as a CPU list.
fn two_cpus() -> String {
    let allowed = smtlab::affinity::process_affinity().unwrap();
    let cpus: Vec<String> = allowed.iter().take(2).map(|c| c.to_string()).collect();
    cpus.join(",")
}

/// A running smtlab whose stderr is collected line by line.
struct Run {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: String,
    /// An environment value only this run and its children carry.
    marker: String,
}

impl Run {
    fn start(args: &[&str], tmpdir: Option<&Path>) -> Run {
        let marker = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smtlab"));
        cmd.args(args)
            .env("SMTLAB_TEST_MARKER", &marker)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(t) = tmpdir {
            cmd.env("TMPDIR", t);
        }
        let mut child = cmd.spawn().expect("smtlab starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Run {
            child,
            lines,
            stderr: String::new(),
            marker,
        }
    }

    /// Waits until a stderr line contains `needle` (at most 60 s).
    fn wait_for_line(&mut self, needle: &str) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(l) => {
                    self.stderr.push_str(&l);
                    self.stderr.push('\n');
                    if l.contains(needle) {
                        return;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        self.kill();
        panic!(
            "no line with `{needle}` within 60 s; stderr:\n{}",
            self.stderr
        );
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill with the pid of our own, unreaped child.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the exit, at most `limit`; returns the exit code and how long it took.
    fn exit_within(&mut self, limit: Duration) -> (Option<i32>, Duration) {
        let t0 = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let took = t0.elapsed();
                while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.stderr.push_str(&l);
                    self.stderr.push('\n');
                }
                return (status.code(), took);
            }
            // Far past the limit: a hung run fails the test instead of hanging it.
            if t0.elapsed() > limit + Duration::from_secs(30) {
                self.kill();
                panic!("smtlab still running 30 s past {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Signals, then asserts exit 130 within [`STOP_LIMIT`]; returns the stderr.
    fn interrupt(&mut self, sig: libc::c_int, what: &str) -> String {
        self.signal(sig);
        let (code, took) = self.exit_within(STOP_LIMIT);
        assert_eq!(
            code,
            Some(130),
            "{what}: exit code; stderr:\n{}",
            self.stderr
        );
        assert!(
            took <= STOP_LIMIT,
            "{what}: exited {took:?} after the signal (limit {STOP_LIMIT:?}); stderr:\n{}",
            self.stderr
        );
        self.stderr.clone()
    }

    /// Live processes (this run's children included) that carry its marker.
    fn marked_processes(&self) -> Vec<i32> {
        let needle = format!("SMTLAB_TEST_MARKER={}", self.marker);
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
            let found = env.split(|&b| b == 0).any(|v| v == needle.as_bytes());
            if found && alive(pid) {
                out.push(pid);
            }
        }
        out
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// A process exists and is not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Entries of `dir` whose name starts with `prefix`.
fn entries(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect()
}

#[test]
fn sigint_stops_256_spinning_burners_on_two_cpus_at_any_point() {
    let _g = crate::common::cpu_heavy();
    let cpus = two_cpus();
    // While spawning, in the warm-up, in the measurement.
    for after in [0.05, 0.8, 2.0] {
        let mut run = Run::start(
            &[
                "burn", "-k", "int", "-t", "256", "--force", "--cpus", &cpus, "-d", "60s",
            ],
            None,
        );
        std::thread::sleep(Duration::from_secs_f64(after));
        let err = run.interrupt(libc::SIGINT, &format!("SIGINT at {after} s"));
        assert!(err.contains("interrupted by SIGINT"), "{err}");
    }
}

#[test]
fn a_run_of_256_burners_on_two_cpus_lasts_about_what_was_asked() {
    let _g = crate::common::cpu_heavy();
    let out = Command::new(env!("CARGO_BIN_EXE_smtlab"))
        .args([
            "burn",
            "-k",
            "int",
            "-t",
            "256",
            "--force",
            "--cpus",
            &two_cpus(),
        ])
        .args(["-d", "1s", "--warmup", "0", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let burners = j["burners"].as_array().unwrap();
    assert_eq!(burners.len(), 256);
    for b in burners {
        let measured = b["measured_ns"].as_u64().unwrap();
        // Asked 1 s; it once overshot to 5-15 s when the coordinator was starved.
        // The upper bound leaves room for a loaded CI host and still catches that.
        assert!(
            (1_000_000_000..4_000_000_000).contains(&measured),
            "measured {measured} ns for a 1 s run"
        );
    }
    let notes = j["notes"].to_string();
    assert!(notes.contains("nice value was raised"), "{notes}");
}

#[test]
fn sigint_stops_neighbors_with_256_workers_on_two_cpus() {
    let _g = crate::common::cpu_heavy();
    let placement = format!("cpus:{}", two_cpus());
    let mut run = Run::start(
        &[
            "neighbors",
            "--workers",
            "256",
            "--placement",
            &placement,
            "--burners",
            "0,1",
            "--force",
            "-d",
            "60s",
        ],
        None,
    );
    std::thread::sleep(Duration::from_secs(2));
    run.interrupt(libc::SIGINT, "neighbors, SIGINT at 2 s");
}

#[test]
fn sigint_while_burner_processes_are_spawned_leaves_none_behind() {
    let _g = crate::common::cpu_heavy();
    let mut run = Run::start(
        &[
            "burn", "-k", "int", "--mode", "process", "-t", "256", "--force", "-d", "60s",
        ],
        None,
    );
    // Some children exist (each carries the marker in its environment); more are coming.
    let t0 = Instant::now();
    while run.marked_processes().len() < 3 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    run.interrupt(libc::SIGINT, "SIGINT while spawning burner processes");
    let t0 = Instant::now();
    loop {
        let left = run.marked_processes();
        if left.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "burner processes left behind: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_and_sighup_are_named_and_exit_130() {
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGHUP, "SIGHUP")] {
        let mut run = Run::start(&["burn", "-k", "int", "-t", "2", "-d", "60s"], None);
        std::thread::sleep(Duration::from_millis(500));
        let err = run.interrupt(sig, name);
        assert!(err.contains(&format!("interrupted by {name}")), "{err}");
        assert!(!err.contains("Ctrl-C"), "{err}");
    }
}

/// Starts a SQLite oltp run with a prefill far too big to finish, in its own TMPDIR, and
/// waits until the prefill is under way.
fn start_big_sqlite_prefill(tmp: &Path) -> Run {
    let mut run = Run::start(
        &[
            "oltp",
            "--prefill",
            "100000000",
            "-d",
            "1s",
            "--warmup",
            "0",
        ],
        Some(tmp),
    );
    run.wait_for_line("preparing the table");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(entries(tmp, "smtlab-sqlite-").len(), 1, "{}", run.stderr);
    run
}

#[test]
fn sigint_during_an_sqlite_prefill_ends_it_and_removes_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_big_sqlite_prefill(tmp.path());
    run.interrupt(libc::SIGINT, "SIGINT during the prefill");
    assert_eq!(entries(tmp.path(), "smtlab-sqlite-"), Vec::<PathBuf>::new());
}

#[test]
fn a_second_sigint_during_an_sqlite_prefill_still_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_big_sqlite_prefill(tmp.path());
    run.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(30));
    let err = run.interrupt(libc::SIGINT, "two SIGINTs during the prefill");
    assert_eq!(
        entries(tmp.path(), "smtlab-sqlite-"),
        Vec::<PathBuf>::new(),
        "{err}"
    );
}

#[test]
fn sigterm_during_an_sqlite_prefill_ends_it_and_removes_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    let mut run = start_big_sqlite_prefill(tmp.path());
    let err = run.interrupt(libc::SIGTERM, "SIGTERM during the prefill");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    assert_eq!(entries(tmp.path(), "smtlab-sqlite-"), Vec::<PathBuf>::new());
}

#[test]
fn a_prefill_beyond_the_limit_is_bad_input_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_smtlab"))
        .args(["oltp", "--prefill", "18446744073709551615", "-d", "1s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--prefill") && err.contains("100000000"),
        "{err}"
    );
}

/// True when PostgreSQL server binaries exist; prints why not otherwise, and fails under
/// CI, where they are installed.
fn have_postgres() -> bool {
    match smtlab::oltp::managed::find_binaries() {
        Ok(_) => true,
        Err(e) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI must have PostgreSQL: {e:#}"
            );
            crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
            false
        }
    }
}

/// The managed cluster's directory, from the line that names it.
fn cluster_dir(stderr: &str) -> PathBuf {
    stderr
        .lines()
        .find_map(|l| l.split("managed cluster in ").nth(1))
        .and_then(|r| r.split(" (").next())
        .map(PathBuf::from)
        .expect("the cluster directory is named")
}

/// Waits up to 5 s for every process carrying the run's marker to be gone.
fn assert_no_marked_processes(run: &Run) {
    let t0 = Instant::now();
    loop {
        let left = run.marked_processes();
        if left.is_empty() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "processes left: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_during_a_managed_postgres_prefill_ends_it_and_removes_the_cluster() {
    if !have_postgres() {
        return;
    }
    let mut run = Run::start(
        &[
            "oltp",
            "--db",
            "postgres-managed",
            "--prefill",
            "100000000",
            "-t",
            "2",
            "-d",
            "1s",
        ],
        None,
    );
    run.wait_for_line("preparing the table");
    let dir = cluster_dir(&run.stderr);
    assert!(dir.exists());
    std::thread::sleep(Duration::from_millis(500));
    let err = run.interrupt(libc::SIGTERM, "SIGTERM during a PostgreSQL prefill");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    assert!(
        !dir.exists(),
        "{} left behind; stderr:\n{err}",
        dir.display()
    );
    assert_no_marked_processes(&run);
}

#[test]
fn a_second_signal_to_256_workers_on_two_cpus_still_exits_130() {
    let placement = format!("cpus:{}", two_cpus());
    let mut run = Run::start(
        &[
            "neighbors",
            "--workers",
            "256",
            "--placement",
            &placement,
            "--burners",
            "0,1",
            "--force",
            "-d",
            "60s",
        ],
        None,
    );
    std::thread::sleep(Duration::from_secs(2));
    // Two different signals, back to back: a second SIGINT sent while the first is still
    // pending would merge with it (and when both are pending, SIGINT is delivered first).
    // Once killed by the second instead of exiting 130.
    run.signal(libc::SIGTERM);
    let err = run.interrupt(libc::SIGINT, "neighbors, SIGTERM then SIGINT");
    assert!(err.contains("second signal"), "{err}");
}

#[test]
fn two_sigints_during_a_managed_postgres_run_leave_no_cluster_or_server() {
    if !have_postgres() {
        return;
    }
    // The default TMPDIR: as root the cluster runs as the postgres user, which must be
    // able to reach it.
    let mut run = Run::start(
        &["oltp", "--db", "postgres-managed", "-t", "2", "-d", "60s"],
        None,
    );
    run.wait_for_line("inserting with");
    let dir = cluster_dir(&run.stderr);
    assert!(dir.exists());
    std::thread::sleep(Duration::from_millis(300));
    run.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(30));
    let err = run.interrupt(libc::SIGINT, "two SIGINTs mid-run");
    assert!(
        !dir.exists(),
        "{} left behind; stderr:\n{err}",
        dir.display()
    );
    // The postmaster and its backends inherit smtlab's environment, marker included.
    assert_no_marked_processes(&run);
}
