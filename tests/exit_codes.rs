//! The exit-code contract, one row per case, from one table: 0 ok, 1 a run-time failure of
//! something outside smtlab (a server that does not answer), 2 bad input (options, input
//! files, `--out`, malformed URLs), 3 not possible on this machine, 130 interrupted. README
//! lists the same codes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// One case: what to run, the code it must give, text its stderr must hold, and a limit
/// on how long it may take (bad input never waits for anything).
struct Row {
    name: &'static str,
    args: Vec<String>,
    /// Run under `taskset -c <first usable CPU>`.
    one_cpu: bool,
    code: i32,
    stderr_has: &'static str,
    within: Duration,
}

fn row(name: &'static str, args: &[&str], code: i32, stderr_has: &'static str) -> Row {
    Row {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        one_cpu: false,
        code,
        stderr_has,
        within: Duration::from_secs(5),
    }
}

fn first_usable_cpu() -> u32 {
    smtlab::topology::discover(Path::new("/"))
        .unwrap()
        .allowed()
        .first()
        .unwrap()
}

#[test]
fn every_row_of_the_exit_code_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(p("empty.json"), "").unwrap();
    std::fs::write(p("garbage.json"), "{\"schema_version\": 1, ").unwrap();
    std::fs::write(p("schema.json"), "{\"schema_version\": 1, \"status\": 3}").unwrap();
    std::fs::write(p("a-file"), "x").unwrap();
    std::fs::create_dir(p("a-dir")).unwrap();
    let sqlite_dir = format!("sqlite:{}", p("a-dir"));
    let out_file = p("a-file");
    let empty = p("empty.json");
    let garbage = p("garbage.json");
    let schema = p("schema.json");
    let mut rows = vec![
        row("ok", &["topo"], 0, ""),
        // 1: something outside smtlab failed (nothing listens on port 1).
        row(
            "unreachable server",
            &[
                "oltp",
                "--rows-per-thread",
                "1",
                "--db",
                "postgres://u@127.0.0.1:1/db",
            ],
            1,
            "cannot connect",
        ),
        // 2: input files, --out, URLs, options.
        row("empty results.json", &["report", &empty], 2, "is empty"),
        row(
            "truncated results.json",
            &["report", &garbage],
            2,
            "not valid JSON",
        ),
        row(
            "results.json of another shape",
            &["report", &schema],
            2,
            "does not match",
        ),
        row(
            "--out is a file",
            &["report", &schema, "--out", &out_file],
            2,
            "",
        ),
        row(
            "study --out is a file",
            &["study", "--quick", "--out", &out_file],
            2,
            "it is a file",
        ),
        row(
            "study --out under /proc",
            &["study", "--quick", "--out", "/proc/smtlab"],
            2,
            "cannot create",
        ),
        row(
            "URL without a host",
            &["oltp", "--db", "postgres://"],
            2,
            "no host",
        ),
        row(
            "port out of range",
            &["oltp", "--db", "postgres://u@h:99999/db"],
            2,
            "port",
        ),
        row(
            "unknown sslmode",
            &["oltp", "--db", "postgres://u@h/db?sslmode=bogus"],
            2,
            "sslmode",
        ),
        row(
            "sqlite:DIR",
            &["oltp", "--db", &sqlite_dir],
            2,
            "is a directory",
        ),
        row(
            "c2c on one listed CPU",
            &["c2c", "--cpus", &first_usable_cpu().to_string()],
            2,
            "at least 2 CPUs",
        ),
        row(
            "study checks its database first",
            &[
                "study",
                "--quick",
                "--out",
                &p("study-out"),
                "--db",
                "postgres://u@127.0.0.1:1/db",
            ],
            1,
            "checking --db before the study",
        ),
        row(
            "compare: unknown placement",
            &["compare", "--placements", "spread", "--", "true"],
            2,
            "valid: one-per-core, pairs, all",
        ),
        row(
            "compare: command not found",
            &["compare", "--cpus", "0", "--", "smtlab-no-such-command"],
            2,
            "not found on PATH",
        ),
        row(
            "compare: --pin-pids of no process",
            &[
                "compare",
                "--cpus",
                "0",
                "--pin-pids",
                "999999999",
                "--",
                "true",
            ],
            2,
            "no process 999999999",
        ),
    ];
    // 3: this machine (here, an affinity of one CPU) cannot do it.
    let mut lockscan = row(
        "lockscan's seed layout on one usable CPU",
        &["lockscan", "-d", "100ms"],
        3,
        "at least 2 usable CPUs",
    );
    lockscan.one_cpu = true;
    rows.push(lockscan);
    let mut c2c = row("c2c with one usable CPU", &["c2c"], 3, "is usable here");
    c2c.one_cpu = true;
    rows.push(c2c);
    let mut compare = row(
        "compare: pairs with one usable CPU",
        &[
            "compare",
            "--placements",
            "one-per-core,pairs",
            "--cores",
            "1",
            "--",
            "true",
        ],
        3,
        "`pairs` needs SMT siblings",
    );
    compare.one_cpu = true;
    rows.push(compare);

    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let cpu = first_usable_cpu().to_string();
    let mut failures = Vec::new();
    for r in &rows {
        let mut cmd = if r.one_cpu {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu]).arg(&bin);
            c
        } else {
            Command::new(&bin)
        };
        let t0 = Instant::now();
        let out = cmd.args(&r.args).output().unwrap();
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = out.status.code() == Some(r.code)
            && err.contains(r.stderr_has)
            && !err.contains("panicked")
            && took < r.within;
        if !ok {
            failures.push(format!(
                "{}: exit {:?} (want {}) in {took:?}, stderr: {err}",
                r.name,
                out.status.code(),
                r.code
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        !Path::new(&p("study-out")).join("results.json").exists(),
        "a study whose database is unreachable measures nothing"
    );
}

#[test]
fn a_byte_order_mark_in_results_json_is_accepted() {
    // Write a real report through the fake study, then prepend a BOM as some editors do.
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let snap = std::fs::read_to_string(src.join("study__fake_results_json.snap")).unwrap();
    // insta's header ends at the second `---` line.
    let json = snap.splitn(3, "---\n").nth(2).unwrap();
    let path = dir.path().join("results.json");
    std::fs::write(&path, format!("\u{feff}{json}")).unwrap();
    let out = Command::new(bin).arg("report").arg(&path).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("report.html").exists());
}

#[test]
fn an_unwritable_stderr_never_panics() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let cpu = first_usable_cpu().to_string();
    for (args, code) in [
        // An error message that cannot be written: the exit code still says what happened.
        (vec!["lockscan", "--lock", "bogus"], 2),
        // A warning (overlapping CPUs) and interval rows on stderr, then a normal run.
        (
            vec![
                "lockscan",
                "--lock-cpus",
                &cpu,
                "--scan-cpus",
                &cpu,
                "-d",
                "100ms",
                "--warmup",
                "0",
                "--repeat",
                "1",
                "--no-baseline",
                "--json",
            ],
            0,
        ),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = Command::new(&bin)
            .args(&args)
            .stderr(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}
