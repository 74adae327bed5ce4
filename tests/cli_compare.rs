//! CLI tests of `smtlab compare -- CMD`: bad input and its exit codes, what a run records
//! (CPUs, rusage, metrics, exports), and that nothing it changes outlives it — the
//! command's tree, pinned processes, cgroups, the managed PostgreSQL cluster — after a
//! normal exit, Ctrl-C at each phase, and SIGKILL. Commands are short shell snippets;
//! nothing asserts speed. Tests that need PostgreSQL, sysbench, root or a cpuset cgroup
//! say why they skip (and fail under CI=true where `.ci/run` installs the tools).

use assert_cmd::Command;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("smtlab")
}

fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// True when PostgreSQL server binaries exist; says why not otherwise (fails under CI).
fn have_postgres() -> bool {
    match smtlab::oltp::managed::find_binaries() {
        Ok(_) => true,
        Err(e) => {
            assert!(!ci(), "CI must have PostgreSQL: {e:#}");
            crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
            false
        }
    }
}

/// The CPUs this test may use, and the first of them.
fn cpus() -> (smtlab::cpuset::CpuSet, u32) {
    let all = smtlab::affinity::process_affinity().unwrap();
    let first = all.first().unwrap();
    (all, first)
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
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

/// Waits up to 10 s for every pid to be gone.
fn assert_gone(pids: &[i32]) {
    let t0 = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still running 10 s later: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Pids written one per line into `file` by the command.
fn pids_in(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// A running `smtlab compare` whose stderr is read line by line.
struct Running {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    all: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Running {
    fn start(args: &[&str]) -> Self {
        let mut child = std::process::Command::new(bin())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let all = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let a = all.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                a.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
        });
        Running {
            child,
            lines: rx,
            all,
        }
    }

    /// Waits for a stderr line containing `marker` (60 s at most); returns it.
    fn wait_for(&mut self, marker: &str) -> String {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(100))
                && l.contains(marker)
            {
                return l;
            }
            if let Ok(Some(s)) = self.child.try_wait() {
                panic!("smtlab exited ({s}) before `{marker}`:\n{}", self.stderr());
            }
        }
        self.kill_hard();
        panic!("no `{marker}` within 60 s:\n{}", self.stderr());
    }

    fn stderr(&self) -> String {
        self.all.lock().unwrap().clone()
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill with our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    fn kill_hard(&mut self) {
        self.signal(libc::SIGINT);
        std::thread::sleep(Duration::from_secs(3));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the exit (30 s at most) and returns its code.
    fn exit_code(&mut self) -> Option<i32> {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                // Let the reader drain the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return s.code();
            }
            if t0.elapsed() > Duration::from_secs(30) {
                self.kill_hard();
                panic!("smtlab did not exit within 30 s:\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn bad_input_exits_2_before_any_run() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--placements", "spread", "--", "true"],
            "one-per-core, pairs, all",
        ),
        (
            &["--cpus", "0", "--", "smtlab-no-such-command"],
            "not found on PATH",
        ),
        (
            &["--cpus", "0", "--pin-pids", "999999999", "--", "true"],
            "no process 999999999",
        ),
        (
            &["--cpus", "0", "--metric", "tps=([0-9]+", "--", "true"],
            "valid regex",
        ),
        (
            &["--cpus", "0", "--burners", "prime", "--", "true"],
            "KIND:COUNT",
        ),
        (
            &["--cpus", "0", "--burner-placement", "moon", "--", "true"],
            "moon",
        ),
        (&["--cpus", "0", "--runs", "0", "--", "true"], "--runs"),
        (
            &["--cpus", "0", "--max-time", "soon", "--", "true"],
            "--max-time",
        ),
        (&["--cpus", "x", "--", "true"], "--cpus"),
        (
            &["--cpus", "0", "--server-cpus", "0", "--", "true"],
            "--with-postgres",
        ),
        (
            &[
                "--cpus",
                "0",
                "--export-csv",
                "/nonexistent/dir/x.csv",
                "--",
                "true",
            ],
            "does not exist",
        ),
    ];
    for (args, needle) in cases {
        let out = smtlab().arg("compare").args(*args).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: `{needle}` not in {err}");
        assert!(!err.contains("round 1"), "{args:?} ran: {err}");
    }
    // clap's own refusals are exit 2 too: no command, --lower-is-better alone.
    for args in [
        &["compare", "--cpus", "0"][..],
        &["compare", "--lower-is-better", "--", "true"],
    ] {
        assert_eq!(smtlab().args(args).output().unwrap().status.code(), Some(2));
    }
}

#[test]
fn a_metric_that_never_matches_quotes_the_output_and_exits_2() {
    let (_, first) = cpus();
    let out = smtlab()
        .args(["compare", "--cpus", &first.to_string(), "--runs", "3"])
        .args(["--metric", r"tps = ([0-9.]+)", "--shell", "--"])
        .arg("echo first line; echo the last words")
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("matched nothing") && err.contains("the last words"),
        "{err}"
    );
    assert!(err.contains("warm-up"), "after the first run: {err}");
}

#[test]
fn placements_needing_smt_exit_3_on_a_machine_without_it() {
    let topo = smtlab::topology::discover(Path::new("/")).unwrap();
    if topo.threads_per_core() > 1 {
        crate::common::skip(
            crate::common::Need::Machine,
            "this machine has SMT siblings (the SMT guests test the refusal)",
        );
        return;
    }
    for p in ["one-per-core,pairs", "all"] {
        let out = smtlab()
            .args(["compare", "--placements", p, "--cores", "1", "--", "true"])
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(3), "{p}: {err}");
        let named = p.rsplit(',').next().unwrap();
        assert!(err.contains(&format!("`{named}`")), "{err}");
    }
}

#[test]
fn without_smt_the_default_measures_the_command_on_every_cpu_and_says_why_not_compared() {
    let topo = smtlab::topology::discover(Path::new("/")).unwrap();
    if topo.threads_per_core() > 1 {
        crate::common::skip(
            crate::common::Need::Machine,
            "this machine has SMT siblings (the default compares placements)",
        );
        return;
    }
    let (all, _) = cpus();
    let out = smtlab()
        .args(["compare", "--runs", "3", "--json", "--shell", "--"])
        .arg("i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    let ps = j["placements"].as_array().unwrap();
    assert_eq!(ps.len(), 1, "{j}");
    assert_eq!(ps[0]["label"], format!("cpus:{all}"));
    assert_eq!(ps[0]["cpus"], serde_json::to_value(&all).unwrap());
    assert_eq!(ps[0]["runs"].as_array().unwrap().len(), 3);
    assert!(ps[0]["wall_time_ns"]["median"].as_f64().unwrap() > 0.0);
    assert_eq!(j["comparisons"], serde_json::json!([]));
    assert!(j["smt_yield"].is_null() && j["pairs_slowdown"].is_null());
    let why = j["no_comparison"].as_str().unwrap();
    assert!(
        why.contains("no SMT comparison was possible") && why.contains("--cpus"),
        "{why}"
    );
    // The text says it too, under the per-run table; no comparison line.
    let out = smtlab()
        .args(["compare", "--runs", "2", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("cpus:{all}")), "{text}");
    assert!(text.contains("no SMT comparison was possible"), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("cpus:") && l.contains(" vs "))
            && !text.contains("SMT yield"),
        "{text}"
    );
}

#[test]
fn json_records_placements_runs_and_the_tree_usage() {
    let (all, first) = cpus();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--cpus",
            &all.to_string(),
        ])
        .args(["--runs", "3", "--warmup", "1", "--json", "--shell", "--"])
        .arg("i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done & wait")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    let ps = j["placements"].as_array().unwrap();
    assert_eq!(ps.len(), 2);
    assert_eq!(ps[0]["cpus"], serde_json::json!([first]));
    assert_eq!(ps[0]["label"], format!("cpus:{first}"));
    for p in ps {
        let runs = p["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3, "{p}");
        assert_eq!(
            runs.iter()
                .map(|r| r["round"].as_u64().unwrap())
                .collect::<Vec<_>>(),
            [1, 2, 3]
        );
        // The busy loop ran in a grandchild the shell waited for: its CPU time counts.
        assert!(runs.iter().all(|r| r["user_time_ns"].as_u64().unwrap()
            + r["system_time_ns"].as_u64().unwrap()
            > 0));
        assert!(p["wall_time_ns"]["median"].as_f64().unwrap() > 0.0);
        assert!(p["max_rss_bytes"].as_u64().unwrap() > 0);
    }
    assert_eq!(
        (j["rounds"].as_u64(), j["warmup_rounds"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(j["enforcement"], "affinity");
    let c = &j["comparisons"][0];
    assert_eq!(c["baseline"], format!("cpus:{first}"));
    assert!(
        ["faster", "slower", "no-difference", "inconclusive"]
            .contains(&c["call"].as_str().unwrap())
    );
    // Paired by round: the three rounds, one speed ratio each, their median's interval.
    assert_eq!(c["rounds"], serde_json::json!([1, 2, 3]));
    assert_eq!(c["speedups"].as_array().unwrap().len(), 3);
    assert_eq!(c["speedup"]["n"], 3);
    assert!(c["speedup"]["low"].as_f64().unwrap() <= c["speedup"]["high"].as_f64().unwrap());
    // The order was counterbalanced (A B, B A, B A) and each run says where it ran.
    let positions = |p: &serde_json::Value| -> Vec<u64> {
        p["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["position"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(positions(&ps[0]), [1, 2, 2]);
    assert_eq!(positions(&ps[1]), [2, 1, 1]);
}

#[test]
fn every_process_of_the_command_inherits_the_placement() {
    // The metric is the first CPU of a grandchild's allowed list: the shell's child's
    // child reads its own status.
    let (all, first) = cpus();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args([
            "--metric",
            r"Cpus_allowed_list:\s+([0-9]+)",
            "--json",
            "--shell",
            "--",
        ])
        .arg("sh -c 'grep Cpus_allowed_list /proc/self/status'")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(
        j["placements"][0]["metric"]["median"].as_f64(),
        Some(first as f64)
    );
    assert_eq!(j["metric"]["source"], "regex");
    assert!(all.contains(first));
}

#[test]
fn a_regex_metric_can_be_lower_is_better() {
    let (_, first) = cpus();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "3",
            "--warmup",
            "0",
        ])
        .args([
            "--metric",
            r"latency: ([0-9.]+) ms",
            "--lower-is-better",
            "--json",
            "--",
        ])
        .args(["echo", "latency: 4.5 ms"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(j["metric"]["higher_is_better"], false);
    assert_eq!(j["placements"][0]["metric"]["median"].as_f64(), Some(4.5));
}

#[test]
fn a_failing_command_exits_1_quoting_its_output_unless_ignored() {
    let (_, first) = cpus();
    let base = [
        "compare",
        "--cpus",
        &first.to_string(),
        "--runs",
        "2",
        "--warmup",
        "0",
    ];
    let out = smtlab()
        .args(base)
        .args(["--shell", "--", "echo boom >&2; exit 3"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("exit code 3") && err.contains("boom"), "{err}");
    assert!(err.contains("--ignore-failure"), "{err}");
    let out = smtlab()
        .args(base)
        .args(["-i", "--json", "--shell", "--", "echo boom >&2; exit 3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(j["placements"][0]["failed_runs"], 2);
    assert_eq!(j["placements"][0]["runs"][0]["exit_code"], 3);
    // Killed by a signal: said so.
    let out = smtlab()
        .args(base)
        .args(["--shell", "--", "kill -9 $$"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr_of(&out).contains("SIGKILL"), "{}", stderr_of(&out));
}

#[test]
fn background_processes_end_with_their_run() {
    let (_, first) = cpus();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args([
            "--metric",
            "([0-9]+)",
            "--json",
            "--shell",
            "--",
            "sleep 60 & echo $!",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    let pid = j["placements"][0]["metric"]["median"].as_f64().unwrap() as i32;
    assert_gone(&[pid]);
    assert_eq!(j["placements"][0]["runs"][0]["leftover_processes"], 1);
    let notes = j["notes"].to_string();
    assert!(notes.contains("were killed"), "{notes}");
}

#[test]
fn setup_prepare_and_cleanup_run_when_they_should() {
    let (_, first) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let l = log.display();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "2",
            "--warmup",
            "1",
        ])
        .args(["--setup", &format!("echo setup >> {l}")])
        .args(["--prepare", &format!("echo prepare >> {l}")])
        .args(["--cleanup", &format!("echo cleanup >> {l}")])
        .args(["--shell", "--", &format!("echo run >> {l}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "setup", "prepare", "run", "prepare", "run", "prepare", "run", "cleanup"
        ]
    );
    // Cleanup also runs after the command fails.
    std::fs::remove_file(&log).unwrap();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "1",
            "--warmup",
            "0",
        ])
        .args(["--cleanup", &format!("echo cleanup >> {l}")])
        .args(["--shell", "--", "exit 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "cleanup\n");
}

#[test]
fn exports_are_written_whole() {
    let (all, first) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("out.csv");
    let md = dir.path().join("out.md");
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--cpus",
            &all.to_string(),
        ])
        .args(["--runs", "2", "--warmup", "0"])
        .arg("--export-csv")
        .arg(&csv)
        .arg("--export-markdown")
        .arg(&md)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("WALL median ± MAD") && text.contains(&format!("cpus:{first}")),
        "{text}"
    );
    let c = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = c.lines().collect();
    assert_eq!(rows.len(), 3, "{c}");
    assert!(rows[0].starts_with("placement,request,cpus,"));
    assert!(rows[1].ends_with(",baseline"), "{c}");
    let m = std::fs::read_to_string(&md).unwrap();
    assert!(
        m.contains("| PLACEMENT | CPUS |") && m.contains("| baseline |"),
        "{m}"
    );
    // No temporary file left beside them.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn markdown_export_shows_html_in_the_command_as_text() {
    let (_, first) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("out.md");
    // `sh -c true NAME`: NAME is only $0, so the command runs whatever it holds.
    let evil = "<img src=x onerror=alert(1)>|`<b>`";
    let out = smtlab()
        .args(["compare", "--cpus", &first.to_string()])
        .args(["--runs", "1", "--warmup", "0"])
        .arg("--export-markdown")
        .arg(&md)
        .args(["--", "sh", "-c", "true", evil])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let m = std::fs::read_to_string(&md).unwrap();
    // The command is text like every other line of the document: the tag outside the
    // backticks is escaped, the one inside them is a code span (literal in Markdown).
    let line = m.lines().find(|l| l.starts_with("Command:")).unwrap();
    assert_eq!(
        line, "Command: sh -c true '&lt;img src=x onerror=alert(1)&gt;|`<b>`'",
        "{m}"
    );
    assert!(!m.replace("`<b>`", "").contains('<'), "{m}");
}

/// The pids of the command (the shell) and its background child, written to `file`.
fn tree_script(file: &Path) -> String {
    format!(
        "echo $$ > {f}; sleep 60 & echo $! >> {f}; wait",
        f = file.display()
    )
}

fn wait_for_pids(file: &Path, n: usize) -> Vec<i32> {
    let t0 = Instant::now();
    loop {
        let p = pids_in(file);
        if p.len() >= n {
            return p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no pids in {}",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_mid_run_exits_130_and_ends_the_command_tree() {
    let (_, first) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pids");
    let mut r = Running::start(&[
        "compare",
        "--cpus",
        &first.to_string(),
        "--runs",
        "3",
        "--warmup",
        "0",
        "--shell",
        "--",
        &tree_script(&f),
    ]);
    r.wait_for("round 1/3");
    let pids = wait_for_pids(&f, 2);
    r.signal(libc::SIGINT);
    assert_eq!(r.exit_code(), Some(130), "{}", r.stderr());
    assert_gone(&pids);
}

#[test]
fn sigkill_of_smtlab_still_ends_the_command_tree() {
    let (_, first) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pids");
    let mut r = Running::start(&[
        "compare",
        "--cpus",
        &first.to_string(),
        "--runs",
        "3",
        "--warmup",
        "0",
        "--shell",
        "--",
        &tree_script(&f),
    ]);
    r.wait_for("round 1/3");
    let pids = wait_for_pids(&f, 2);
    r.signal(libc::SIGKILL);
    let _ = r.child.wait();
    // The shell by its parent-death signal, the background sleep by the guard.
    assert_gone(&pids);
}

/// A command whose descendants left its process group and session (setsid(1)): one adopted
/// by smtlab at once (its parent, the shell's background job, execs `sleep`), one whose
/// parent lives on in the new session. Each writes its pid to `file`.
fn setsid_script(file: &Path, then: &str) -> String {
    format!(
        "setsid sleep 60 & echo $! >> {f}; \
         setsid sh -c 'sleep 60 & echo $! >> {f}; wait' & {then}",
        f = file.display()
    )
}

/// Kills what a failed assertion left running, so a failing test leaves nothing behind.
struct KillOnDrop(Vec<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for &p in &self.0 {
            if alive(p) {
                // SAFETY: kill with a pid this test's command started.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
    }
}

#[test]
fn setsid_descendants_end_with_compare_after_exit_sigterm_and_sigkill() {
    let (_, first) = cpus();
    let first = first.to_string();
    // A normal exit: the command returns while both sleepers run on.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pids");
    // The third also cleared its environment: found by its ancestry alone.
    let script = setsid_script(
        &f,
        &format!(
            "setsid env -i sleep 60 & echo $! >> {}; sleep 0.3",
            f.display()
        ),
    );
    let out = smtlab()
        .args(["compare", "--cpus", &first, "--runs", "1", "--warmup", "0"])
        .args(["--shell", "--", &script])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let pids = wait_for_pids(&f, 3);
    let _left = KillOnDrop(pids.clone());
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        pids.iter().all(|&p| !alive(p)),
        "normal exit: still running {:?}",
        pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
    );
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pids");
        let script = setsid_script(&f, "wait");
        let mut r = Running::start(&[
            "compare", "--cpus", &first, "--runs", "3", "--warmup", "0", "--shell", "--", &script,
        ]);
        r.wait_for("round 1/3");
        let pids = wait_for_pids(&f, 2);
        let _left = KillOnDrop(pids.clone());
        r.signal(sig);
        let code = r.exit_code();
        if sig == libc::SIGTERM {
            assert_eq!(code, Some(130), "{}", r.stderr());
        }
        // After SIGKILL the guard finds them by the mark in their environment (one that
        // cleared it as well is found only with --cgroup).
        assert_gone(&pids);
    }
}

/// A `--cleanup` that ignores SIGTERM and would run 30 s: the first signal during it stops
/// it and smtlab within 2 s (1 s to finish, SIGTERM, SIGKILL half a second later). Before,
/// it had 5 s and then 2 s more between SIGTERM and SIGKILL: 7 s. The bound asserted is 4.5 s,
/// wide for a loaded machine, and still below what it was.
#[test]
fn a_slow_cleanup_is_stopped_within_2_s_of_the_first_signal() {
    let (_, first) = cpus();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("pids");
    let cleanup = format!("trap '' TERM; sleep 30 & echo $! > {}; wait", f.display());
    let mut r = Running::start(&[
        "compare",
        "--cpus",
        &first.to_string(),
        "--runs",
        "1",
        "--warmup",
        "0",
        "--cleanup",
        &cleanup,
        "--",
        "true",
    ]);
    r.wait_for("cleanup:");
    let pids = wait_for_pids(&f, 1);
    let _left = KillOnDrop(pids.clone());
    let t0 = Instant::now();
    r.signal(libc::SIGINT);
    let code = r.exit_code();
    let took = t0.elapsed();
    assert_eq!(code, Some(130), "{}", r.stderr());
    assert!(
        took < Duration::from_millis(4500),
        "exited {took:?} after the signal:\n{}",
        r.stderr()
    );
    assert!(
        r.stderr().contains("still running 1s after SIGINT"),
        "{}",
        r.stderr()
    );
    assert_gone(&pids);
}

/// A `sleep` to pin, and its CPUs before.
fn sleeper() -> (std::process::Child, smtlab::cpuset::CpuSet) {
    let c = std::process::Command::new("sleep")
        .arg("120")
        .spawn()
        .unwrap();
    let before = smtlab::affinity::get_affinity(c.id() as i32).unwrap();
    (c, before)
}

#[test]
fn pinned_pids_are_placed_during_runs_and_restored() {
    let (_, first) = cpus();
    let (mut s, before) = sleeper();
    let pid = s.id().to_string();
    // The command reads the pinned process's CPUs while it is pinned.
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args(["--pin-pids", &pid, "--json"])
        .args(["--metric", r"Cpus_allowed_list:\s+([0-9]+)$", "--"])
        .args(["grep", "Cpus_allowed_list", &format!("/proc/{pid}/status")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(
        j["placements"][0]["metric"]["median"].as_f64(),
        Some(first as f64),
        "{j}"
    );
    assert_eq!(j["server"]["kind"], "pids");
    assert_eq!(
        j["placements"][0]["server_cpus"],
        serde_json::json!([first])
    );
    assert_eq!(
        smtlab::affinity::get_affinity(s.id() as i32).unwrap(),
        before
    );
    let _ = s.kill();
    let _ = s.wait();
}

#[test]
fn pinned_pids_are_restored_after_ctrl_c_and_after_sigkill() {
    let (_, first) = cpus();
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let (mut s, before) = sleeper();
        let pid = s.id().to_string();
        let mut r = Running::start(&[
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "3",
            "--warmup",
            "0",
            "--pin-pids",
            &pid,
            "--",
            "sleep",
            "30",
        ]);
        r.wait_for("round 1/3");
        std::thread::sleep(Duration::from_millis(300));
        r.signal(sig);
        let code = r.exit_code();
        if sig == libc::SIGINT {
            assert_eq!(code, Some(130), "{}", r.stderr());
        }
        // After SIGKILL the guard restores it: allow it a moment.
        let t0 = Instant::now();
        while smtlab::affinity::get_affinity(s.id() as i32).unwrap() != before {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "signal {sig}: process {pid} still pinned:\n{}",
                r.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = s.kill();
        let _ = s.wait();
    }
}

/// The cpuset hierarchy `--cgroup` would use, when this test may use it.
fn cgroup_root() -> Option<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip(crate::common::Need::Machine, "--cgroup needs root");
        return None;
    }
    match smtlab::experiments::compare::cgroup::find() {
        Ok(h) => Some(h.root),
        Err(e) => {
            crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
            None
        }
    }
}

/// This smtlab's cgroups under `root`.
fn cgroups_of(root: &Path, pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("smtlab-compare-{pid}-"))
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_cgroup_holds_processes_that_reset_their_affinity_and_is_removed() {
    let Some(root) = cgroup_root() else { return };
    let (all, first) = cpus();
    if all.len() < 2 {
        crate::common::skip(
            crate::common::Need::Machine,
            "one usable CPU, so a reset affinity cannot be told apart",
        );
        return;
    }
    // The command asks for every CPU, then reports what it got.
    let out = smtlab()
        .args(["compare", "--cgroup", "--cpus", &first.to_string(), "--runs", "2"])
        .args(["--warmup", "0", "--json", "--metric", r"Cpus_allowed_list:\s+([0-9]+)$"])
        .args(["--shell", "--"])
        .arg(format!(
            "taskset -pc {all} $$ >/dev/null; grep Cpus_allowed_list /proc/self/status; cat /proc/self/cgroup >&2"
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert!(
        j["enforcement"].as_str().unwrap().starts_with("cgroup-v"),
        "{j}"
    );
    assert_eq!(
        j["placements"][0]["metric"]["median"].as_f64(),
        Some(first as f64),
        "{j}"
    );
    assert_eq!(
        j["placements"][0]["metric"]["max"].as_f64(),
        Some(first as f64),
        "{j}"
    );
    // Gone afterwards (the pid was smtlab's; none of its cgroups is left).
    let t0 = Instant::now();
    while std::fs::read_dir(&root).unwrap().flatten().any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with("smtlab-compare-")
            && {
                let n = e.file_name().to_string_lossy().to_string();
                n.split('-')
                    .nth(2)
                    .and_then(|p| p.parse::<i32>().ok())
                    .is_some_and(|p| !alive(p))
            }
    }) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "a dead smtlab's cgroup is left"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn cgroups_are_removed_after_ctrl_c_and_sigkill() {
    let Some(root) = cgroup_root() else { return };
    let (_, first) = cpus();
    for sig in [libc::SIGINT, libc::SIGKILL] {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pids");
        let mut r = Running::start(&[
            "compare",
            "--cgroup",
            "--cpus",
            &first.to_string(),
            "--runs",
            "3",
            "--warmup",
            "0",
            "--shell",
            "--",
            // setsid: a process that left the command's group is still in its cgroup.
            &format!("setsid sleep 60 & echo $! > {}; wait", f.display()),
        ]);
        r.wait_for("round 1/3");
        let pids = wait_for_pids(&f, 1);
        let smtlab_pid = r.child.id();
        assert!(!cgroups_of(&root, smtlab_pid).is_empty(), "made its cgroup");
        r.signal(sig);
        let code = r.exit_code();
        if sig == libc::SIGINT {
            assert_eq!(code, Some(130), "{}", r.stderr());
        }
        assert_gone(&pids);
        let t0 = Instant::now();
        while !cgroups_of(&root, smtlab_pid).is_empty() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "signal {sig}: cgroups left {:?}:\n{}",
                cgroups_of(&root, smtlab_pid),
                r.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[test]
fn burners_run_beside_the_command_and_end_with_each_run() {
    let (all, first) = cpus();
    let Some(other) = all.iter().find(|&c| c != first) else {
        crate::common::skip(
            crate::common::Need::Machine,
            "one usable CPU, no other core for the burner",
        );
        return;
    };
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args([
            "--burners",
            "int:1",
            "--burner-placement",
            "other-cores",
            "--json",
        ])
        .args(["--", "sleep", "0.3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    let ps = j["placements"].as_array().unwrap();
    assert_eq!(ps.len(), 2, "alone and with the burner: {j}");
    assert_eq!(
        ps[1]["label"],
        format!("cpus:{first} + 1 int on other-cores")
    );
    assert_eq!(ps[1]["burner_cpus"][0], serde_json::json!([other]));
    assert!(
        ps[1]["burner_ops_per_sec"].as_f64().unwrap() > 0.0,
        "{}",
        ps[1]
    );
    assert!(ps[0]["burner_ops_per_sec"].is_null());
    assert_eq!(j["burners"]["kind"], "int");
    // No burner of this binary outlives the run (their exe is this smtlab).
    let me = std::fs::canonicalize(bin()).unwrap();
    let t0 = Instant::now();
    loop {
        let left: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
            .filter(|&p| {
                std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|x| x == me)
                    && std::fs::read(format!("/proc/{p}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("--child-cpus"))
                    && alive(p)
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "burners left: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---- PostgreSQL ----

/// The cluster directory named in smtlab's stderr ("managed cluster in DIR (").
fn cluster_dir(line: &str) -> PathBuf {
    let rest = line.split("managed cluster in ").nth(1).unwrap();
    PathBuf::from(rest.split(" (").next().unwrap())
}

/// `smtlab-pg-PID-*` directories of smtlab `pid` in the temporary directory.
fn clusters_of(pid: u32) -> Vec<PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("smtlab-pg-{pid}-"))
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

fn postmaster_of(dir: &Path) -> Option<i32> {
    std::fs::read_to_string(dir.join("data/postmaster.pid"))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

fn assert_no_cluster_of(pid: u32, postmaster: Option<i32>) {
    let t0 = Instant::now();
    while !clusters_of(pid).is_empty() || postmaster.is_some_and(alive) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "cluster left: {:?}, postmaster {postmaster:?} alive {}",
            clusters_of(pid),
            postmaster.is_some_and(alive)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn pgbench_with_a_time_limit_is_compared_by_tps_without_metric() {
    if !have_postgres() {
        return;
    }
    let (all, first) = cpus();
    let out = smtlab()
        .args(["compare", "--with-postgres", "--cpus", &first.to_string()])
        .args(["--cpus", &all.to_string(), "--runs", "1", "--warmup", "0"])
        .args(["--prepare", "pgbench -i -s 1 -q"])
        .args(["--", "pgbench", "-n", "-T", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    // Not wall time, which `-T 1` fixes at a second: the tps, and a note saying why.
    assert!(text.contains("compared by tps (pgbench"), "{text}");
    assert!(
        text.contains("note: `pgbench` runs for a fixed time (`-T 1`)")
            && text.contains("chosen because no `--metric` was given"),
        "{text}"
    );
}

#[test]
fn with_postgres_runs_pgbench_and_removes_the_cluster() {
    if !have_postgres() {
        return;
    }
    let (all, first) = cpus();
    let out = smtlab()
        .args(["compare", "--with-postgres", "--cpus", &first.to_string()])
        .args(["--cpus", &all.to_string(), "--runs", "1", "--warmup", "0"])
        .args([
            "--prepare",
            "pgbench -i -s 1 -q",
            "--metric",
            "pgbench",
            "--json",
        ])
        .args(["--", "pgbench", "-n", "-c", "2", "-j", "2", "-T", "1"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    let j = json_of(&out);
    for p in j["placements"].as_array().unwrap() {
        assert!(p["metric"]["median"].as_f64().unwrap() > 0.0, "{p}");
        assert_eq!(p["server_cpus"], p["cpus"]);
    }
    assert_eq!(j["server"]["kind"], "postgres-managed");
    assert_eq!(j["metric"]["unit"], "tps");
    let line = err
        .lines()
        .find(|l| l.contains("managed cluster in "))
        .unwrap();
    let dir = cluster_dir(line);
    assert!(!dir.exists(), "{} left", dir.display());
    let pm = j["server"]["pids"][0].as_i64().unwrap() as i32;
    assert_gone(&[pm]);
}

/// Ctrl-C while smtlab is at `marker`; exit 130 and no cluster or process left.
fn interrupt_postgres_at(marker: &str, extra: &[&str], cmd: &[&str]) {
    let (_, first) = cpus();
    let mut args = vec![
        "compare",
        "--with-postgres",
        "--cpus",
        &first.to_string() as &str,
    ]
    .into_iter()
    .map(String::from)
    .collect::<Vec<_>>();
    args.extend(["--runs", "2", "--warmup", "1"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.extend(cmd.iter().map(|s| s.to_string()));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut r = Running::start(&argv);
    let line = r.wait_for(marker);
    let pid = r.child.id();
    let pm = line
        .contains("managed cluster in ")
        .then(|| postmaster_of(&cluster_dir(&line)))
        .flatten();
    if !marker.contains("starting") {
        std::thread::sleep(Duration::from_millis(500));
    }
    r.signal(libc::SIGINT);
    assert_eq!(r.exit_code(), Some(130), "at `{marker}`:\n{}", r.stderr());
    assert_no_cluster_of(pid, pm);
}

#[test]
fn ctrl_c_while_the_cluster_starts_removes_it() {
    if !have_postgres() {
        return;
    }
    interrupt_postgres_at("starting a throwaway PostgreSQL cluster", &[], &["true"]);
}

#[test]
fn ctrl_c_during_setup_prepare_and_run_removes_the_cluster() {
    if !have_postgres() {
        return;
    }
    interrupt_postgres_at("setup:", &["--setup", "sleep 30"], &["true"]);
    interrupt_postgres_at("warm-up round", &["--prepare", "sleep 30"], &["true"]);
    interrupt_postgres_at("warm-up round", &[], &["sleep", "30"]);
    // A measured round (after the warm-up one), and the cleanup after the last round.
    interrupt_postgres_at("round 1/2", &[], &["sleep", "30"]);
    interrupt_postgres_at("cleanup:", &["--cleanup", "sleep 30"], &["true"]);
}

/// The command killed by SIGKILL (here by itself) mid-run: the comparison fails with the
/// signal named, and the cluster and its server are gone.
#[test]
fn a_command_killed_by_sigkill_fails_the_run_and_the_cluster_is_removed() {
    if !have_postgres() {
        return;
    }
    let (_, first) = cpus();
    let out = smtlab()
        .args(["compare", "--with-postgres", "--cpus", &first.to_string()])
        .args(["--runs", "2", "--warmup", "0", "--"])
        .args(["sh", "-c", "kill -9 $$"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("SIGKILL"), "the signal is named:\n{err}");
    let line = err
        .lines()
        .find(|l| l.contains("managed cluster in "))
        .unwrap_or_else(|| panic!("no cluster line:\n{err}"));
    let dir = cluster_dir(line);
    assert!(!dir.exists(), "{} left", dir.display());
}

#[test]
fn sigkill_mid_run_takes_the_cluster_down_and_the_guard_removes_it() {
    if !have_postgres() {
        return;
    }
    let (_, first) = cpus();
    let mut r = Running::start(&[
        "compare",
        "--with-postgres",
        "--cpus",
        &first.to_string(),
        "--runs",
        "2",
        "--",
        "sleep",
        "30",
    ]);
    let line = r.wait_for("managed cluster in ");
    let dir = cluster_dir(&line);
    let pm = postmaster_of(&dir);
    r.wait_for("warm-up round");
    std::thread::sleep(Duration::from_millis(300));
    let pid = r.child.id();
    r.signal(libc::SIGKILL);
    let _ = r.child.wait();
    assert_no_cluster_of(pid, pm);
}

// ---- sysbench ----

#[test]
fn sysbench_metric_reads_events_per_second() {
    if std::process::Command::new("sysbench")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(!ci(), "CI must have sysbench");
        crate::common::skip(
            crate::common::Need::Machine,
            "sysbench is not installed (apt-get install sysbench)",
        );
        return;
    }
    let (_, first) = cpus();
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args(["--metric", "sysbench", "--json", "--"])
        .args(["sysbench", "cpu", "--threads=1", "--time=1", "run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    assert_eq!(j["metric"]["unit"], "events/s");
    assert!(j["placements"][0]["metric"]["median"].as_f64().unwrap() > 0.0);
}

#[test]
fn sysbench_with_a_time_limit_is_compared_by_its_own_metric_without_metric() {
    if std::process::Command::new("sysbench")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(!ci(), "CI must have sysbench");
        crate::common::skip(
            crate::common::Need::Machine,
            "sysbench is not installed (apt-get install sysbench)",
        );
        return;
    }
    let (_, first) = cpus();
    let out = smtlab()
        .args(["compare", "--cpus", &first.to_string(), "--runs", "1"])
        .args(["--warmup", "0", "--json", "--"])
        .args(["sysbench", "cpu", "--threads=1", "--time=1", "run"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let j = json_of(&out);
    // `--time=1` runs for a second whatever it gets done: its events/s are compared.
    assert_eq!(j["metric"]["source"], "sysbench");
    assert_eq!(j["fixed_duration"]["found_by"], "arguments");
    assert_eq!(j["fixed_duration"]["metric_chosen"], "sysbench");
    assert!(j["placements"][0]["metric"]["median"].as_f64().unwrap() > 0.0);
}

/// `setpriv` arguments that run a command as uid/gid 65534 (nobody) with no groups, when
/// this test runs as root and both exist; None after printing why not.
fn as_nobody() -> Option<Vec<String>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip(
            crate::common::Need::Machine,
            "dropping to another user needs root",
        );
        return None;
    }
    let setpriv = std::process::Command::new("sh")
        .args(["-c", "command -v setpriv"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(setpriv) = setpriv else {
        crate::common::skip(
            crate::common::Need::Machine,
            "setpriv is not installed (util-linux)",
        );
        return None;
    };
    let nobody = std::process::Command::new(&setpriv)
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "true",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !nobody {
        crate::common::skip(
            crate::common::Need::Machine,
            "cannot run a command as uid 65534 here",
        );
        return None;
    }
    // The binary must be reachable by that user through every directory above it.
    let b = bin();
    let mut dir = b.parent();
    while let Some(d) = dir {
        use std::os::unix::fs::PermissionsExt;
        if std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 == 0) {
            crate::common::skip(
                crate::common::Need::Machine,
                &format!("{} is not searchable by other users", d.display()),
            );
            return None;
        }
        dir = d.parent();
    }
    Some(
        [
            &setpriv,
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    )
}

/// `smtlab ARGS` as uid 65534, from a directory it may enter.
fn smtlab_as_nobody(setpriv: &[String], args: &[&str]) -> std::process::Output {
    std::process::Command::new(&setpriv[0])
        .args(&setpriv[1..])
        .arg(bin())
        .args(args)
        .current_dir("/")
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap()
}

#[test]
fn pinning_another_users_process_needs_privileges_exit_4() {
    let Some(setpriv) = as_nobody() else { return };
    let (_, first) = cpus();
    // A root-owned process: uid 65534 may not change its CPUs (sched_setaffinity EPERM).
    let (mut s, before) = sleeper();
    let pid = s.id().to_string();
    let out = smtlab_as_nobody(
        &setpriv,
        &[
            "compare",
            "--cpus",
            &first.to_string(),
            "--runs",
            "1",
            "--pin-pids",
            &pid,
            "--",
            "true",
        ],
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(&format!("process {pid} belongs to another user"))
            && err.contains("CAP_SYS_NICE"),
        "{err}"
    );
    assert_eq!(
        smtlab::affinity::get_affinity(s.id() as i32).unwrap(),
        before
    );
    let _ = s.kill();
    let _ = s.wait();
}

#[test]
fn a_cgroup_this_user_may_not_create_needs_privileges_exit_4() {
    let Some(setpriv) = as_nobody() else { return };
    let Some(root) = cgroup_root() else { return };
    let (_, first) = cpus();
    let out = smtlab_as_nobody(
        &setpriv,
        &[
            "compare",
            "--cgroup",
            "--cpus",
            &first.to_string(),
            "--runs",
            "1",
            "--",
            "true",
        ],
    );
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("cannot create a cgroup") && err.contains("needs root"),
        "{err}"
    );
    assert!(
        !std::fs::read_dir(&root).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("smtlab-compare-")
                && e.path().join("cgroup.procs").exists()
                && std::fs::metadata(e.path()).is_ok_and(|m| {
                    use std::os::unix::fs::MetadataExt;
                    m.uid() == 65534
                })
        }),
        "no cgroup of uid 65534 left"
    );
}

#[test]
fn no_cgroup_file_system_at_all_is_not_possible_exit_3() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip(
            crate::common::Need::Machine,
            "hiding the cgroup mounts needs root (a private mount namespace)",
        );
        return;
    }
    // A private mount namespace (unshare(1) makes its mounts private) without any cgroup
    // file system: the host's mounts stay as they are.
    let (_, first) = cpus();
    let script = format!(
        "for m in $(awk '$3 ~ /^cgroup2?$/ {{print $2}}' /proc/self/mounts | sort -r); do \
         umount \"$m\" || exit 97; done; \
         grep -q ' cgroup2\\? ' /proc/self/mounts && exit 98; \
         exec {} compare --cgroup --cpus {first} --runs 1 -- true",
        bin().display()
    );
    let out = match std::process::Command::new("unshare")
        .args(["--mount", "sh", "-c", &script])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            crate::common::skip(
                crate::common::Need::Machine,
                &format!("unshare(1) is not available ({e})"),
            );
            return;
        }
    };
    let err = stderr_of(&out);
    if matches!(out.status.code(), Some(97 | 98)) || err.contains("unshare failed") {
        assert!(!ci(), "CI must be able to hide the cgroup mounts: {err}");
        crate::common::skip(
            crate::common::Need::Machine,
            &format!("cannot unmount the cgroup file systems here: {err}"),
        );
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("no cgroup file system with the cpuset controller is mounted"),
        "{err}"
    );
}
