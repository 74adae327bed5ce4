//! CLI tests of `smtlab oltp`: SQLite always; the managed PostgreSQL cluster when the
//! server binaries exist (skipped with the reason otherwise, unless CI=true). Runs are
//! short and assert behaviour (row counts, cleanup, messages, exit codes), never speed.

use crate::common;
use assert_cmd::Command;
use predicates::prelude::*;
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

/// True when PostgreSQL server binaries exist; prints why not otherwise, and fails under
/// CI, where `.ci/run` installs them.
fn have_postgres() -> bool {
    match smtlab::oltp::managed::find_binaries() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("CI must have PostgreSQL: {e:#}");
            }
            crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
            false
        }
    }
}

/// The cluster directory named in smtlab's stderr ("managed cluster in DIR (").
fn cluster_dir(stderr: &str) -> PathBuf {
    let line = stderr
        .lines()
        .find(|l| l.contains("managed cluster in "))
        .unwrap_or_else(|| panic!("no cluster line in:\n{stderr}"));
    let rest = line.split("managed cluster in ").nth(1).unwrap();
    PathBuf::from(rest.split(" (").next().unwrap())
}

/// Pids of live (non-zombie) processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) && alive(pid) {
            out.push(pid);
        }
    }
    out
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

/// Asserts the cluster is gone: directory removed, postmaster and anything naming the
/// directory ended (allowing a moment for the kernel to reap).
fn assert_cluster_gone(dir: &Path, postmaster: Option<i32>) {
    let t0 = Instant::now();
    loop {
        let procs = processes_mentioning(&dir.display().to_string());
        let pm_alive = postmaster.is_some_and(alive);
        if !dir.exists() && procs.is_empty() && !pm_alive {
            return;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            panic!(
                "cluster not cleaned up: dir exists {}, processes {procs:?}, postmaster alive {pm_alive}",
                dir.exists()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn sqlite_rows_per_thread_verifies_row_count() {
    let out = smtlab()
        .args([
            "oltp",
            "--db",
            "sqlite",
            "--threads",
            "2",
            "--rows-per-thread",
            "500",
        ])
        .args(["--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &j["runs"][0];
    assert_eq!(run["rows_committed"], 1000);
    assert_eq!(run["rows_in_table"], 1000);
    assert_eq!(run["rows_verified"], true);
    assert!(run["inserts_per_sec"].as_f64().unwrap() > 0.0);
    assert_eq!(run["per_thread"].as_array().unwrap().len(), 2);
    assert!(
        run["thread_elapsed_max_ns"].as_u64().unwrap()
            >= run["thread_elapsed_min_ns"].as_u64().unwrap()
    );
    // The temporary database is gone.
    let err = stderr_of(&out);
    let path = err
        .lines()
        .find_map(|l| l.split(" at ").nth(1))
        .and_then(|r| r.split(' ').next())
        .expect("db path in stderr");
    assert!(!Path::new(path).exists(), "{path} left behind");
}

#[test]
fn sqlite_seed002_random_duration_with_batches() {
    smtlab()
        .args([
            "oltp", "--db", "sqlite", "--schema", "seed-002", "--key", "random",
        ])
        .args([
            "--rows-per-txn",
            "3",
            "--duration",
            "300ms",
            "--warmup",
            "100ms",
        ])
        .args(["--durability", "full", "--prefill", "100", "-t", "2"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "seed-002 (random key, 3 row(s)/txn, durability full)",
        ))
        .stdout(predicate::str::contains("  ok"));
}

#[test]
fn sqlite_file_path_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    smtlab()
        .args(["oltp", "--rows-per-thread", "50", "-t", "1", "--db"])
        .arg(format!("sqlite:{}", db.display()))
        .assert()
        .success();
    assert!(db.exists());
}

#[test]
fn configs_run_interleaved_and_skip_impossible_layouts() {
    let out = smtlab()
        .args([
            "oltp",
            "--configs",
            "one-per-core,pairs,all",
            "--threads",
            "2",
        ])
        .args(["--rows-per-thread", "200", "--repeat", "2", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let order: Vec<String> = j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["placement"].as_str().unwrap().to_string())
        .collect();
    // A round with a run disturbed while it ran (another process took its CPUs) is run
    // again at the end; only the rounds asked for keep the interleaved order.
    let disturbed = j["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["disturbed"].is_string())
        .count();
    let smt = order.iter().any(|p| p == "pairs");
    let asked = if smt { 6 } else { 4 };
    assert!(
        order.len() == asked || disturbed > 0,
        "{} runs for {asked} asked and none disturbed: {order:?}",
        order.len()
    );
    let order = &order[..asked];
    if smt {
        assert_eq!(
            order,
            [
                "one-per-core",
                "pairs",
                "all",
                "one-per-core",
                "pairs",
                "all"
            ]
        );
    } else {
        assert_eq!(order, ["one-per-core", "all", "one-per-core", "all"]);
        let reason = j["skipped"][0]["reason"].as_str().unwrap();
        assert_eq!(j["skipped"][0]["placement"], "pairs");
        assert!(reason.contains("SMT"), "{reason}");
    }
    assert!(
        j["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["rows_verified"] == true)
    );
}

#[test]
fn dry_run_on_an_smt_dump_shows_the_three_comparison_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = common::smt_dump(tmp.path()) else {
        return;
    };
    let dry_run = |threads: &str, within: &str| {
        common::stdout_of(
            smtlab()
                .args(["oltp", "--configs", "one-per-core,pairs,all", "--dry-run"])
                .args(["--threads", threads, "--within", within, "--sysfs-root"])
                .arg(&root),
        )
    };
    let text = dry_run("6", "machine");
    assert!(text.contains("within the whole machine"), "{text}");
    assert!(
        text.contains("one-per-core: 6 threads on CPUs 0-5 (6 cores)"),
        "{text}"
    );
    assert!(
        text.contains("pairs: 6 threads on CPUs 0-2,8-10 (3 cores)"),
        "{text}"
    );
    // The third layout of the `seed-001` insert test (the blog post "SQL Server,
    // Hyper-Threading and OLTP Workloads"): every sibling of the same 6 cores, 12 threads.
    assert!(
        text.contains("all: 12 threads on CPUs 0-5,8-13 (6 cores)"),
        "{text}"
    );

    // By default the three layouts stay in package 0 (cores {0,8} and {4,12}).
    let text = dry_run("2", "package");
    assert!(text.contains("within package 0"), "{text}");
    assert!(
        text.contains("one-per-core: 2 threads on CPUs 0,4 (2 cores)"),
        "{text}"
    );
    assert!(
        text.contains("pairs: 2 threads on CPUs 0,8 (1 core)"),
        "{text}"
    );
    assert!(
        text.contains("all: 4 threads on CPUs 0,4,8,12 (2 cores)"),
        "{text}"
    );
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    for (args, msg) in [
        (
            vec!["--threads", "0"],
            "--threads 0: expected a whole number between 1 and",
        ),
        (vec!["--db", "mysql://u:secret@h/db"], "unknown database"),
        (vec!["--schema", "tpcc"], "unknown schema `tpcc`"),
        (vec!["--key", "zigzag"], "unknown key mode"),
        (
            vec!["--rows-per-txn", "0"],
            "--rows-per-txn 0: expected a whole number between 1 and",
        ),
        (vec!["--placement", "bogus"], "unknown placement"),
    ] {
        let out = smtlab()
            .arg("oltp")
            .args(&args)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = stderr_of(&out);
        assert!(err.contains(msg), "{args:?}: {err}");
        assert!(!err.contains("secret"), "{err}");
    }
}

#[test]
fn unreachable_and_malformed_urls_fail_fast_without_the_password() {
    for url in [
        "postgres://u:secret@127.0.0.1:1/db",
        "postgres://u:secret@127.0.0.1:1/db?connect_timeout=zz",
    ] {
        let t0 = Instant::now();
        let out = smtlab()
            .args(["oltp", "--db", url, "--rows-per-thread", "1"])
            .assert()
            .failure()
            .get_output()
            .clone();
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{url}: {:?}",
            t0.elapsed()
        );
        let all = format!(
            "{}{}",
            stderr_of(&out),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(!all.contains("secret"), "{all}");
        assert!(all.contains("u:***@127.0.0.1:1"), "{all}");
    }
}

#[test]
fn managed_postgres_runs_verifies_and_cleans_up() {
    if !have_postgres() {
        return;
    }
    let out = smtlab()
        .args(["oltp", "--db", "postgres-managed", "--threads", "2"])
        .args(["--rows-per-thread", "300", "--rows-per-txn", "2", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let err = stderr_of(&out);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["runs"][0]["rows_in_table"], 600);
    assert_eq!(j["runs"][0]["rows_verified"], true);
    assert!(
        j["backend_pinning"]
            .as_str()
            .unwrap()
            .contains("backend pinned")
    );
    let pids = &j["runs"][0]["per_thread"];
    assert!(pids[0]["backend_pid"].as_i64().unwrap() > 0);
    assert_cluster_gone(&cluster_dir(&err), None);
}

/// Spawns `smtlab oltp --db postgres-managed` for a `duration` run and waits until it inserts;
/// returns the child, its cluster directory and the postmaster pid.
fn start_long_managed_run(
    duration: &str,
) -> (
    std::process::Child,
    PathBuf,
    i32,
    std::thread::JoinHandle<String>,
) {
    let mut child = std::process::Command::new(bin())
        .args([
            "oltp",
            "--db",
            "postgres-managed",
            "--threads",
            "2",
            "--duration",
            duration,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            if line.contains("inserting with") {
                let _ = tx.send(all.clone());
            }
        }
        all
    });
    let so_far = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "smtlab did not start inserting within 60 s ({e}); its stderr:\n{}",
                reader.join().unwrap_or_default()
            );
        }
    };
    let dir = cluster_dir(&so_far);
    let pm: i32 = std::fs::read_to_string(dir.join("data/postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pm));
    // Let it insert for a moment.
    std::thread::sleep(Duration::from_millis(500));
    (child, dir, pm, reader)
}

fn wait_with_timeout(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > limit {
            // Ctrl-C first, so even a failing test leaves no cluster behind.
            // SAFETY: kill with our own child's pid.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            panic!("smtlab did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `signal` to a running managed oltp and checks it exits 130 with the cluster gone.
fn signal_mid_run_stops_and_removes_the_cluster(signal: libc::c_int) {
    if !have_postgres() {
        return;
    }
    let (mut child, dir, pm, reader) = start_long_managed_run("60");
    // SAFETY: kill with a valid pid of our own child.
    unsafe { libc::kill(child.id() as i32, signal) };
    let status = wait_with_timeout(&mut child, Duration::from_secs(30));
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert_cluster_gone(&dir, Some(pm));
}

#[test]
fn sigint_mid_run_stops_and_removes_the_cluster() {
    signal_mid_run_stops_and_removes_the_cluster(libc::SIGINT);
}

/// A dropped ssh session: handled like Ctrl-C.
#[test]
fn sighup_mid_run_stops_and_removes_the_cluster() {
    signal_mid_run_stops_and_removes_the_cluster(libc::SIGHUP);
}

#[test]
fn sigkill_mid_run_takes_the_server_down_and_the_next_start_removes_the_directory() {
    if !have_postgres() {
        return;
    }
    let (mut child, dir, pm, reader) = start_long_managed_run("60");
    // SIGKILL runs none of smtlab's code: the kernel's parent-death signal stops the
    // postmaster, and the directory waits for the next start.
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = reader.join();
    let t0 = Instant::now();
    while alive(pm) || !processes_mentioning(&dir.display().to_string()).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "postmaster {pm} still running 10 s after smtlab was killed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing of smtlab's ran, so the directory stays until a start cleans up: this one,
    // or a concurrent test's managed start, which runs the same sweep first.
    smtlab::oltp::managed::remove_stale_clusters(dir.parent().unwrap());
    assert_cluster_gone(&dir, Some(pm));
}

#[test]
fn error_mid_run_removes_the_cluster() {
    if !have_postgres() {
        return;
    }
    // The engine ends a duration run when its time is up, so a failure shows then.
    let (mut child, dir, pm, reader) = start_long_managed_run("6");
    // Kill the client backends from outside: the run fails mid-way.
    let mut admin = postgres::Config::new()
        .host_path(&dir)
        .user("smtlab")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .unwrap();
    let n: i64 = admin
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = 'smtlab' AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(n >= 1);
    drop(admin);
    let status = wait_with_timeout(&mut child, Duration::from_secs(30));
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("terminat") || err.contains("closed"), "{err}");
    assert_cluster_gone(&dir, Some(pm));
}

/// `smtlab oltp --db postgres://pwuser@127.0.0.1:PORT/postgres` against a cluster that
/// listens on 127.0.0.1 and requires SCRAM for that role: a wrong or missing password fails
/// clearly, the right one from the URL, PGPASSWORD, PGPASSFILE or --db-password-file works,
/// and only the URL form puts it on a command line.
#[test]
fn password_auth_failure_is_clear_fast_and_secret_free() {
    if !have_postgres() {
        return;
    }
    // A cluster of our own, listening on 127.0.0.1 at a free port, with one role that must
    // give its password (SCRAM) over TCP: pg_hba.conf's first matching line decides, so
    // ours goes before initdb's `trust` lines.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cluster = smtlab::oltp::ManagedCluster::start_with(
        smtlab::oltp::Durability::Delayed,
        4,
        &["listen_addresses=127.0.0.1", &format!("port={port}")],
    )
    .unwrap();
    let hba = cluster.data_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("host all pwuser 127.0.0.1/32 scram-sha-256\n{old}"),
    )
    .unwrap();
    let mut admin = postgres::Config::new()
        .host_path(cluster.dir())
        .port(port)
        .user("smtlab")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .unwrap();
    admin
        .batch_execute(
            "SET password_encryption = 'scram-sha-256'; \
             CREATE ROLE pwuser LOGIN SUPERUSER PASSWORD 'r1ght-Pw-7788'; SELECT pg_reload_conf();",
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // Password authentication is really required over TCP: without one the server refuses
    // and with it the server accepts, by a client other than smtlab.
    let tcp = |password: Option<&str>| {
        let mut c = postgres::Config::new();
        c.host("127.0.0.1")
            .port(port)
            .user("pwuser")
            .dbname("postgres")
            .connect_timeout(Duration::from_secs(5));
        if let Some(p) = password {
            c.password(p);
        }
        c.connect(postgres::NoTls)
    };
    let refused = tcp(None)
        .err()
        .map(|e| format!("{e:?}"))
        .unwrap_or_default();
    assert!(refused.contains("password"), "{refused}");
    assert!(tcp(Some("wrong")).is_err());
    tcp(Some("r1ght-Pw-7788")).unwrap();
    let host = format!("127.0.0.1:{port}");
    let t0 = Instant::now();
    let out = smtlab()
        .args(["oltp", "--rows-per-thread", "5", "--db"])
        .arg(format!("postgresql://pwuser:secret@{host}/postgres"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(t0.elapsed() < Duration::from_secs(5));
    let err = stderr_of(&out);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("pwuser:***@"), "{err}");
    assert!(!err.contains("secret"), "{err}");
    // The right password works end to end (SCRAM in both the admin and the insert client),
    // and a server reached by URL on this host gets its backends pinned too.
    let out = smtlab()
        .args([
            "oltp",
            "--rows-per-thread",
            "20",
            "-t",
            "2",
            "--json",
            "--db",
        ])
        .arg(format!("postgresql://pwuser:r1ght-Pw-7788@{host}/postgres"))
        .assert()
        .success()
        .get_output()
        .clone();
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["runs"][0]["rows_verified"], true);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("r1ght"));
    assert!(j["db"].as_str().unwrap().contains("pwuser:***@"));
    // A password in the URL works but is visible to other users: one warning line.
    let err = stderr_of(&out);
    assert!(err.contains("other local users can read"), "{err}");
    assert!(!err.contains("r1ght"), "{err}");

    // Without a password in the URL: PGPASSWORD, a password file (PGPASSFILE, mode 0600)
    // and --db-password-file, as libpq looks. The password is in no process's command
    // line while the run is going.
    let url = format!("postgresql://pwuser@{host}/postgres");
    let tmp = tempfile::tempdir().unwrap();
    let passfile = tmp.path().join("pgpass");
    std::fs::write(&passfile, "*:*:postgres:pwuser:r1ght-Pw-7788\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let pwfile = tmp.path().join("pw");
    std::fs::write(&pwfile, "r1ght-Pw-7788\n").unwrap();
    /// How the password is given: a name, environment variables, extra arguments.
    type Way<'a> = (&'a str, Vec<(&'a str, OsString)>, Vec<OsString>);
    use std::ffi::OsString;
    let ways: [Way; 3] = [
        (
            "PGPASSWORD",
            vec![("PGPASSWORD", "r1ght-Pw-7788".into())],
            vec![],
        ),
        (
            "PGPASSFILE",
            vec![("PGPASSFILE", passfile.clone().into())],
            vec![],
        ),
        (
            "--db-password-file",
            vec![],
            vec!["--db-password-file".into(), pwfile.clone().into()],
        ),
    ];
    for (how, env, args) in ways {
        let child = std::process::Command::new(bin())
            .args([
                "oltp",
                "--duration",
                "2s",
                "--warmup",
                "0",
                "-t",
                "2",
                "--json",
            ])
            .arg("--db")
            .arg(&url)
            .args(&args)
            .env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE")
            .envs(env)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        let leaks = processes_mentioning("r1ght-Pw-7788");
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{how}: {}", stderr_of(&out));
        assert!(
            leaks.is_empty(),
            "{how}: password on the command line of {leaks:?}"
        );
        let err = stderr_of(&out);
        assert!(!err.contains("other local users"), "{how}: {err}");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            j["runs"][0]["inserts_per_sec"].as_f64().unwrap() > 0.0,
            "{how}"
        );
    }
    // A wrong password from PGPASSWORD fails (exit 1), quickly, saying why, and shows no
    // password.
    let t0 = Instant::now();
    let out = smtlab()
        .args(["oltp", "--rows-per-thread", "5", "--db"])
        .arg(&url)
        .env_remove("PGPASSFILE")
        .env("PGPASSWORD", "wr0ng-Pw-1122")
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(t0.elapsed() < Duration::from_secs(5));
    let err = stderr_of(&out);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(!err.contains("wr0ng"), "{err}");
    // No password at all: refused too.
    let out = smtlab()
        .args(["oltp", "--rows-per-thread", "5", "--db"])
        .arg(&url)
        .env_remove("PGPASSWORD")
        .env("PGPASSFILE", tmp.path().join("none"))
        .env("HOME", tmp.path())
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(stderr_of(&out).contains("password"), "{}", stderr_of(&out));
    // A password file others can read is ignored, as libpq ignores it, with a warning.
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = smtlab()
        .args(["oltp", "--rows-per-thread", "5", "--db"])
        .arg(&url)
        .env_remove("PGPASSWORD")
        .env("PGPASSFILE", &passfile)
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(
        stderr_of(&out).contains("chmod 0600"),
        "{}",
        stderr_of(&out)
    );
    // The table smtlab made on a server it does not own is dropped again.
    let n: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'smtlab_%'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
    drop(admin);
    let dir = cluster.dir().to_path_buf();
    drop(cluster);
    assert_cluster_gone(&dir, None);
}

#[test]
fn missing_binaries_give_the_install_hint() {
    let out = smtlab()
        .env("SMTLAB_PG_BINDIR", "/nonexistent/bin")
        .args(["oltp", "--db", "postgres-managed", "--rows-per-thread", "1"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let err = stderr_of(&out);
    assert!(err.contains("no PostgreSQL server binaries"), "{err}");
    assert!(err.contains("apt-get install postgresql"), "{err}");
}

/// A SQLite run removes what a killed managed-PostgreSQL run left (and the other way round:
/// every run that makes a temporary directory sweeps every kind).
#[test]
fn a_sqlite_run_removes_a_dead_smtlabs_cluster_directory() {
    let tmp = tempfile::tempdir().unwrap();
    // A pid that existed and is gone: a child started and reaped here.
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let stale = tmp.path().join(format!("smtlab-pg-{dead}-0"));
    std::fs::create_dir_all(stale.join("data")).unwrap();
    std::fs::File::create(stale.join("owner.lock")).unwrap();
    let out = smtlab()
        .args(["oltp", "--rows-per-thread", "5"])
        .env("TMPDIR", tmp.path())
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!stale.exists(), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(&format!("removed {}", stale.display())),
        "{}",
        stderr_of(&out)
    );
    // Its own SQLite directory is gone too.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn a_sigkilled_sqlite_runs_directory_is_removed_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(bin())
        .args(["oltp", "--duration", "30s", "--warmup", "0"])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sqlite_dirs = || -> Vec<PathBuf> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("smtlab-sqlite-")
            })
            .collect()
    };
    let t0 = Instant::now();
    while sqlite_dirs().is_empty() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: no Drop runs
    child.wait().unwrap();
    let left = sqlite_dirs();
    assert_eq!(left.len(), 1, "SIGKILL leaves its directory: {left:?}");
    let out = smtlab()
        .args(["oltp", "--rows-per-thread", "5"])
        .env("TMPDIR", tmp.path())
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(!left[0].exists(), "the next run removes it");
    assert!(stderr_of(&out).contains("left by an smtlab that is gone"));
    assert!(sqlite_dirs().is_empty(), "and its own is gone too");
}
