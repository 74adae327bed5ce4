//! Counts, sizes and times far beyond the limits are refused before anything is allocated
//! or spawned: exit 2, the option, the value and the limit, in well under a second.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn huge_counts_and_sizes_are_refused_at_once() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let mut failures = Vec::new();
    for v in ["100000000", "100000000000"] {
        let cases: Vec<(Vec<String>, &str)> = vec![
            (
                vec!["plan".into(), "all".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec!["plan".into(), "os".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec![
                    "burn".into(),
                    "-k".into(),
                    "prime".into(),
                    "-t".into(),
                    v.into(),
                ],
                "--threads",
            ),
            (
                vec![
                    "burn".into(),
                    "-k".into(),
                    "int".into(),
                    "--mode".into(),
                    "process".into(),
                    "-t".into(),
                    v.into(),
                ],
                "--threads",
            ),
            (
                vec![
                    "burn".into(),
                    "-k".into(),
                    "prime".into(),
                    "--max-prime".into(),
                    format!("{v}00"),
                ],
                "--max-prime",
            ),
            (
                vec!["neighbors".into(), "--workers".into(), v.into()],
                "--workers",
            ),
            (
                vec!["neighbors".into(), "--burners".into(), format!("0,{v}")],
                "--burners",
            ),
            (
                vec!["oltp".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec!["oltp".into(), "--prefill".into(), format!("{v}00")],
                "--prefill",
            ),
            (
                vec!["rwcache".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec!["lockscan".into(), "--cs-ns".into(), format!("{v}00")],
                "--cs-ns",
            ),
            (
                vec!["lockscan".into(), "--scan-bytes".into(), format!("{v}MiB")],
                "--scan-bytes",
            ),
            (
                vec!["c2c".into(), "--samples".into(), v.into()],
                "--samples",
            ),
            (
                vec!["c2c".into(), "--round-trips".into(), v.into()],
                "--round-trips",
            ),
            (
                vec!["lockscan".into(), "--repeat".into(), v.into()],
                "--repeat",
            ),
            (
                vec!["oltp".into(), "--rows-per-thread".into(), format!("{v}00")],
                "--rows-per-thread",
            ),
            (
                vec!["rwcache".into(), "--entries".into(), v.into()],
                "--entries",
            ),
        ];
        for (args, option) in cases {
            let t0 = Instant::now();
            let out = Command::new(&bin).args(&args).output().unwrap();
            let took = t0.elapsed();
            let err = String::from_utf8_lossy(&out.stderr);
            eprintln!("{args:?}: exit {:?} in {took:?}", out.status.code());
            if out.status.code() != Some(2)
                || !err.contains(option)
                || !(err.contains("at most") || err.contains("expected a whole number between"))
                || took > Duration::from_secs(5)
            {
                failures.push(format!(
                    "{args:?}: exit {:?} in {took:?}: {err}",
                    out.status.code()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn one_duration_grammar_and_a_shortest_window() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    // oltp used its own parser, which refused `1h` and `250us`.
    for args in [
        vec!["oltp", "--duration", "1h", "--dry-run"],
        vec!["oltp", "--warmup", "250us", "--dry-run"],
        vec!["lockscan", "--duration", "1h", "--dry-run"],
    ] {
        let out = Command::new(&bin).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Every measured window: `burn -d 1ns` once printed "CPU% 852.7".
    for (args, option) in [
        (vec!["burn", "-k", "int", "-d", "1ns"], "--duration 1ns"),
        (vec!["lockscan", "-d", "5ms"], "--duration 5ms"),
        (vec!["lockscan", "--interval", "1ns"], "--interval 1ns"),
        (vec!["neighbors", "-d", "1ms"], "--duration 1ms"),
        (vec!["rwcache", "-d", "1us"], "--duration 1us"),
        (vec!["oltp", "--duration", "2ms"], "--duration 2ms"),
        (vec!["c2c", "--budget", "1ns"], "--budget 1ns"),
    ] {
        let out = Command::new(&bin).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(option) && err.contains("between 10ms and"),
            "{args:?}: {err}"
        );
    }
    let out = Command::new(&bin)
        .args(["study", "--budget", "5s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--budget 5s") && err.contains("--quick"),
        "{err}"
    );
}

/// `--max-prime 18446744073709551615` once ran and printed 0 events/s, exit 0.
#[test]
fn nonsense_is_refused_not_measured() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    for (args, has) in [
        (
            vec!["burn", "-k", "prime", "--max-prime", "18446744073709551615"],
            "--max-prime 18446744073709551615: expected a whole number between 3 and",
        ),
        (
            vec!["burn", "-k", "prime", "--max-prime", "2"],
            "--max-prime 2: expected a whole number between 3 and",
        ),
        (
            vec!["rwcache", "--write-ratio", "NaN"],
            "--write-ratio NaN: expected a fraction between 0 and 1",
        ),
    ] {
        let out = Command::new(&bin).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(has), "{args:?}: {err}");
    }
}

/// README's Limits table is `smtlab::limits::TABLE`, row for row.
#[test]
fn readme_lists_every_limit() {
    let readme =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
            .unwrap();
    let section = readme.split("## Limits").nth(1).expect("a Limits section");
    let section = section.split("\n## ").next().unwrap();
    let rows: Vec<String> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| option"))
        .map(str::to_string)
        .collect();
    let want: Vec<String> = smtlab::limits::TABLE
        .iter()
        .map(|l| l.readme_row())
        .collect();
    assert!(
        rows == want,
        "README's Limits table differs from smtlab::limits::TABLE, which reads:\n{}",
        want.join("\n")
    );
}

/// Every number in `smtlab::limits::TABLE` is the one the binary enforces: one past it
/// (or just short of a shortest duration) is refused, exit 2, naming that number. Every
/// row with a number has at least one such case.
#[test]
fn every_limit_in_the_table_is_the_one_enforced() {
    use smtlab::duration::format_duration as duration_words;
    use smtlab::limits::{self, Bound};
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    // (a piece of the TABLE row's options, the arguments, what the refusal must say).
    // `over`: `{}` in the arguments is one past the limit `n`, and the refusal names `n`.
    let words = |args: &str| -> Vec<String> { args.split_whitespace().map(String::from).collect() };
    let over = |row: &'static str, args: &str, n: u64| {
        (
            row,
            words(&args.replace("{}", &(n + 1).to_string())),
            n.to_string(),
        )
    };
    let refused = |row: &'static str, args: &str, says: String| (row, words(args), says);
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        over(
            "`plan`/`burn --threads`",
            "plan all --threads {}",
            limits::MAX_THREADS,
        ),
        over(
            "`plan`/`burn --threads`",
            "burn -k int -t {}",
            limits::MAX_THREADS,
        ),
        over(
            "`compare --cores`",
            "compare --cores {} -- true",
            limits::MAX_THREADS,
        ),
        over(
            "`yield --cores`",
            "yield --cores {}",
            limits::MAX_YIELD_CORES,
        ),
        over(
            "`burn --mode process --threads`",
            "burn -k int --mode process -t {}",
            limits::MAX_PROCESSES,
        ),
        over(
            "`compare --burners` (the count)",
            "compare --burners prime:{} -- true",
            limits::MAX_PROCESSES,
        ),
        over(
            "`oltp --threads`",
            "oltp --threads {}",
            limits::MAX_CONNECTIONS,
        ),
        over(
            "`lockscan --cs-ns`",
            "lockscan --cs-ns {}",
            limits::MAX_OP_NS,
        ),
        over(
            "`rwcache --work-ns`",
            "rwcache --work-ns {}",
            limits::MAX_OP_NS,
        ),
        over(
            "`oltp --prefill`",
            "oltp --prefill {}",
            limits::MAX_PREFILL_ROWS,
        ),
        over(
            "`oltp --rows-per-thread`",
            "oltp --rows-per-thread {}",
            limits::MAX_ROWS_PER_THREAD,
        ),
        over(
            "`oltp --rows-per-txn`",
            "oltp --rows-per-txn {}",
            limits::MAX_ROWS_PER_TXN,
        ),
        over(
            "`burn --max-prime`",
            "burn -k prime --max-prime {}",
            limits::MAX_MAX_PRIME,
        ),
        over("`--repeat`", "lockscan --repeat {}", limits::MAX_REPEAT),
        over("`--repeat`", "neighbors --repeat {}", limits::MAX_REPEAT),
        over("`--repeat`", "oltp --repeat {}", limits::MAX_REPEAT),
        over("`--repeat`", "rwcache --repeat {}", limits::MAX_REPEAT),
        over("`--repeat`", "yield --repeat {}", limits::MAX_REPEAT),
        over("`--repeat`", "mem pages --repeat {}", limits::MAX_REPEAT),
        over(
            "`compare --runs`",
            "compare --runs {} -- true",
            limits::MAX_RUNS,
        ),
        over(
            "`compare --warmup`",
            "compare --warmup {} -- true",
            limits::MAX_RUNS,
        ),
        over(
            "`rwcache --entries`",
            "rwcache --entries {}",
            limits::MAX_ENTRIES,
        ),
        over(
            "`rwcache --lookups`",
            "rwcache --lookups {}",
            limits::MAX_LOOKUPS,
        ),
        over("`c2c --samples`", "c2c --samples {}", limits::MAX_SAMPLES),
        over(
            "`c2c --round-trips`",
            "c2c --round-trips {}",
            limits::MAX_ROUND_TRIPS,
        ),
        refused(
            "every `--duration`",
            "burn -k int -d 9ms",
            duration_words(smtlab::duration::MIN_MEASURED),
        ),
        refused(
            "`lockscan --interval`",
            "lockscan --interval 9ms",
            duration_words(smtlab::duration::MIN_MEASURED),
        ),
        refused(
            "`c2c --budget`",
            "c2c --budget 9ms",
            duration_words(smtlab::duration::MIN_MEASURED),
        ),
        refused(
            "`top --interval`",
            "top --interval 99ms",
            duration_words(limits::MIN_TOP_INTERVAL),
        ),
        refused(
            "`top --interval`",
            "top --interval 61m",
            duration_words(limits::MAX_TOP_INTERVAL),
        ),
        refused(
            "`study --budget`",
            "study --budget 9s",
            duration_words(limits::MIN_STUDY_BUDGET),
        ),
    ];
    let mut failures = Vec::new();
    for (_, args, number) in &cases {
        let out = Command::new(&bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let says = [
            format!("at most {number} "),
            format!(" and {number} "),
            format!(" and {number})"),
            format!("between {number} and"),
        ];
        if out.status.code() != Some(2) || !says.iter().any(|s| err.contains(s.as_str())) {
            failures.push(format!(
                "{args:?}: exit {:?}, want 2 naming {number}: {err}",
                out.status.code()
            ));
        }
    }
    // Each row with a number is probed; a new row needs a case here.
    for l in limits::TABLE {
        if matches!(l.bound, Bound::Words(_) | Bound::PerCpu(_)) {
            continue; // memory and the per-CPU cap have their own tests below
        }
        if matches!(l.bound, Bound::AtMost(_, after) if after.starts_with(" bytes")) {
            continue; // input files: input_files_past_their_size_cap_are_refused_unread
        }
        if l.options.contains("`merge`'s input files") {
            continue; // merge_past_its_file_limit_is_refused_unread
        }
        if l.options.contains("`merge`'s directory search") {
            // fleet::input's a_results_json_too_deep_and_a_fifo_named_results_json_are_named_not_dropped
            continue;
        }
        if !cases.iter().any(|(key, _, _)| l.options.contains(key)) {
            failures.push(format!("no case for the limit row {}", l.readme_row()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A 20,000-character value is quoted once, shortened, in a one-line message.
#[test]
fn long_values_are_quoted_once_and_shortened() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let list = "0,".repeat(10_000);
    let garbage = "x".repeat(20_000);
    for args in [
        vec![
            "plan".to_string(),
            format!("cpus:{list}"),
            "-t".into(),
            "1".into(),
        ],
        vec![
            "plan".to_string(),
            "cpus".into(),
            list.clone(),
            "-t".into(),
            "1".into(),
        ],
        vec![
            "burn".into(),
            "-k".into(),
            "int".into(),
            "--cpus".into(),
            list.clone(),
        ],
        vec!["lockscan".into(), "--lock-cpus".into(), list.clone()],
        vec!["c2c".into(), "--cpus".into(), list.clone()],
        vec!["oltp".into(), "--configs".into(), format!("cpus:{garbage}")],
        vec!["burn".into(), "-k".into(), garbage.clone()],
        vec![
            "burn".into(),
            "-k".into(),
            "int".into(),
            "-t".into(),
            garbage.clone(),
        ],
        vec!["rwcache".into(), "--scheme".into(), garbage.clone()],
    ] {
        let out = Command::new(&bin).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let shown: Vec<&str> = args.iter().map(|a| &a[..a.len().min(30)]).collect();
        assert_eq!(out.status.code(), Some(2), "{shown:?}: {err}");
        assert!(
            err.len() < 600 && err.trim_end().lines().count() == 1,
            "{shown:?}: {} bytes: {}",
            err.len(),
            &err[..err.len().min(2000)]
        );
        assert_eq!(
            err.matches("characters)").count(),
            1,
            "{shown:?}: quoted once: {err}"
        );
    }
}

/// The CPUs this process may use (the per-CPU cap is relative to them).
fn usable_cpus() -> usize {
    smtlab::affinity::process_affinity()
        .map(|c| c.len())
        .unwrap_or(1)
        .max(1)
}

/// Sends SIGINT after `after` and returns the exit code and the time from the signal to
/// the exit.
fn interrupt(args: &[String], after: Duration) -> (Option<i32>, Duration) {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let mut child = Command::new(bin)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let t0 = Instant::now();
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = child.wait().unwrap();
    (status.code(), t0.elapsed())
}

#[test]
fn a_crowded_run_needs_force_and_the_largest_allowed_stops_within_3_s() {
    let cpus = usable_cpus();
    let cap = smtlab::limits::MAX_THREADS_PER_CPU as usize * cpus;
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    for args in [
        vec![
            "burn".to_string(),
            "-k".into(),
            "int".into(),
            "-t".into(),
            (cap + 1).to_string(),
            "-d".into(),
            "1s".into(),
        ],
        vec![
            "neighbors".to_string(),
            "--workers".into(),
            (cap + 1).to_string(),
            "--burners".into(),
            "0".into(),
            "-d".into(),
            "1s".into(),
        ],
        vec![
            "rwcache".to_string(),
            "-t".into(),
            (cap + 1).to_string(),
            "-d".into(),
            "1s".into(),
        ],
    ] {
        let t0 = Instant::now();
        let out = Command::new(&bin).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--force") && err.contains("per CPU"),
            "{args:?}: {err}"
        );
        // Refused before anything starts; the margin is for a busy machine.
        assert!(t0.elapsed() < Duration::from_secs(10), "{args:?}");
    }
    // The largest count allowed without --force: spinning burners and hot-page workers,
    // every one runnable, stop within 3 s of Ctrl-C (2 CPUs: 128 threads).
    let cases = [
        vec![
            "burn".to_string(),
            "-k".into(),
            "int".into(),
            "-t".into(),
            cap.to_string(),
            "-d".into(),
            "30s".into(),
            "--warmup".into(),
            "0".into(),
        ],
        vec![
            "neighbors".to_string(),
            "--workers".into(),
            cap.to_string(),
            "--burners".into(),
            "0".into(),
            "-d".into(),
            "30s".into(),
            "--warmup".into(),
            "0".into(),
        ],
    ];
    for args in cases {
        let (code, took) = interrupt(&args, Duration::from_millis(1500));
        assert_eq!(code, Some(130), "{args:?}");
        assert!(
            took < Duration::from_secs(3),
            "{args:?}: {took:?} after SIGINT"
        );
    }
}

/// Buffers that could never fit are refused before anything is allocated: exit 2, the
/// option with its value, the total asked and this machine's `MemAvailable`, in well under
/// a second. `--force` (which allows crowded runs) does not lift it.
#[test]
fn buffers_beyond_available_memory_are_refused_at_once() {
    let Some(avail) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| smtlab::limits::parse_mem_available(&t))
    else {
        crate::common::skip(
            crate::common::Need::Machine,
            "no MemAvailable in /proc/meminfo",
        );
        return;
    };
    const GIB: u64 = 1 << 30;
    // (arguments, the option named, the least the buffers take: stream and chase buffers
    // are 4 × the last-level cache and at least 64 MiB each).
    let cases: Vec<(Vec<&str>, &str, u64)> = vec![
        (
            vec!["burn", "-k", "stream", "-t", "4096", "--force", "-d", "1s"],
            "--threads 4096 with --kind stream",
            256 * GIB,
        ),
        (
            vec!["burn", "-k", "chase", "-t", "4096", "--force", "-d", "1s"],
            "--threads 4096 with --kind chase",
            256 * GIB,
        ),
        (
            vec![
                "neighbors",
                "--workers",
                "1",
                "--burners",
                "0,4095",
                "--burner-kind",
                "stream",
                "--force",
                "-d",
                "1s",
            ],
            "--burners 4095 with --burner-kind stream",
            255 * GIB,
        ),
        (
            vec!["lockscan", "--scan-bytes", "1024G", "-d", "1s"],
            "--scan-bytes 1099511627776",
            1024 * GIB,
        ),
        (
            // Once a panic in a worker ("capacity overflow").
            vec![
                "lockscan",
                "--scan-bytes",
                "18446744073709551615",
                "-d",
                "1s",
            ],
            "--scan-bytes 18446744073709551615",
            u64::MAX,
        ),
        (
            vec!["compare", "--burners", "stream:1024", "--", "true"],
            "--burners stream:1024",
            64 * GIB,
        ),
    ];
    let mut failures = Vec::new();
    for (args, option, least) in cases {
        if least <= avail {
            crate::common::skip(
                crate::common::Need::Machine,
                &format!("the case {args:?} needs more memory than the {avail} bytes available"),
            );
            continue;
        }
        let t0 = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_smtlab"))
            .args(&args)
            .output()
            .unwrap();
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2)
            || !err.contains(&format!("{option}: "))
            || !err.contains("would take")
            || !err.contains("B this machine has available (MemAvailable in /proc/meminfo)")
            || took > Duration::from_secs(5)
        {
            failures.push(format!(
                "{args:?}: exit {:?} in {took:?}: {err}",
                out.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Input files larger than their kind's cap in `smtlab::limits` are refused before they
/// are read, naming the cap: a 133 MB one-line password file was read whole and sent, and
/// a results.json, `--yield` file or SMT journal could grow the process without bound.
#[test]
fn input_files_past_their_size_cap_are_refused_unread() {
    use smtlab::limits;
    let dir = tempfile::tempdir().unwrap();
    // Sparse files: one byte past the cap costs no disk.
    let big = |name: &str, cap: u64| {
        let p = dir.path().join(name);
        std::fs::File::create(&p).unwrap().set_len(cap + 1).unwrap();
        p
    };
    let results = big("results.json", limits::MAX_RESULTS_BYTES);
    let password = big("password", limits::MAX_PASSWORD_FILE_BYTES);
    let yields = big("yield.json", limits::MAX_YIELD_FILE_BYTES);
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sys/devices/system/cpu/cpu0")).unwrap();
    std::fs::create_dir_all(tree.join("run/smtlab")).unwrap();
    std::fs::File::create(tree.join("run/smtlab/smt-journal.json"))
        .unwrap()
        .set_len(limits::MAX_JOURNAL_BYTES + 1)
        .unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let pg = "postgres://u@127.0.0.1:1/db";
    // (a piece of the TABLE row's options, the arguments, PGPASSFILE, the cap).
    let cases: Vec<(&str, Vec<String>, Option<String>, u64)> = vec![
        (
            "results.json",
            vec!["report".into(), s(&results)],
            None,
            limits::MAX_RESULTS_BYTES,
        ),
        (
            "`--db-password-file`",
            ["oltp", "--db", pg, "--db-password-file", &s(&password)]
                .map(String::from)
                .to_vec(),
            None,
            limits::MAX_PASSWORD_FILE_BYTES,
        ),
        (
            "`PGPASSFILE`",
            ["oltp", "--rows-per-thread", "1", "--db", pg]
                .map(String::from)
                .to_vec(),
            Some(s(&password)),
            limits::MAX_PASSWORD_FILE_BYTES,
        ),
        (
            "`top --yield` file",
            ["top", "--once", "--yield", &s(&yields)]
                .map(String::from)
                .to_vec(),
            None,
            limits::MAX_YIELD_FILE_BYTES,
        ),
        (
            "the SMT journal",
            ["smt", "restore", "--sysfs-root", &s(&tree)]
                .map(String::from)
                .to_vec(),
            None,
            limits::MAX_JOURNAL_BYTES,
        ),
    ];
    let mut failures = Vec::new();
    for l in limits::TABLE {
        if matches!(l.bound, limits::Bound::AtMost(_, after) if after.starts_with(" bytes"))
            && !cases.iter().any(|(key, ..)| l.options.contains(key))
        {
            failures.push(format!("no case for the limit row {}", l.readme_row()));
        }
    }
    for (_, args, passfile, cap) in cases {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_smtlab"));
        cmd.args(&args).env_remove("PGPASSWORD");
        if let Some(f) = &passfile {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o600)).unwrap();
            cmd.env("PGPASSFILE", f);
        }
        let t0 = Instant::now();
        let out = cmd.output().unwrap();
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2)
            || !err.contains(&format!("at most {cap} "))
            || took > Duration::from_secs(10)
        {
            failures.push(format!(
                "{args:?} (PGPASSFILE {passfile:?}): exit {:?} in {took:?}: {err}",
                out.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One more file than a merge may read is refused, naming the limit, before any is read
/// (the files here are empty: reading one would skip it as empty, not refuse the merge).
#[test]
fn merge_past_its_file_limit_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let n = smtlab::limits::MAX_MERGE_FILES + 1;
    let names: Vec<String> = (0..n).map(|k| k.to_string()).collect();
    for name in &names {
        std::fs::File::create(dir.path().join(name)).unwrap();
    }
    let out = Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .current_dir(dir.path())
        .arg("merge")
        .arg("--out")
        .arg("fleet")
        .args(&names)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "at most {} files",
            smtlab::limits::MAX_MERGE_FILES
        )),
        "{err}"
    );
    assert!(!dir.path().join("fleet").join("fleet.json").exists());
}
