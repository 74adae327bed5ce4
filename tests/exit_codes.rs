//! The exit-code contract, one row per case, from one table: 0 ok, 1 a run-time failure of
//! something outside smtlab (a server that does not answer), 2 bad input (options, input
//! files, `--out`, malformed URLs), 3 not possible on this machine, 4 needs privileges,
//! 130 interrupted. Every code of `smtlab::error::EXIT_CODES` has a row, and README's table
//! lists exactly those codes.

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
    /// Run as an unprivileged user (`nobody`, through `setpriv`, when this is root).
    unprivileged: bool,
    /// Send SIGINT this long after the start.
    interrupt_after: Option<Duration>,
    /// Send SIGINT once this file exists (a command under test made it), within
    /// [`MARKER_WAIT`].
    interrupt_on_file: Option<String>,
    /// After the exit no live process's command line may hold this (what the command
    /// started, including what left its group with setsid).
    no_process_with: Option<String>,
    /// After the exit this file must not exist (nothing written from a cut-short run).
    no_file: Option<String>,
    /// A program and its arguments that run smtlab (appended), e.g. in another namespace;
    /// it exits 97 or 98 when it cannot set up what the row needs.
    wrap: Vec<String>,
    /// Why this row cannot run here (it is then skipped, saying so).
    skip: Option<String>,
    code: i32,
    stderr_has: String,
    within: Duration,
}

fn row(name: &'static str, args: &[&str], code: i32, stderr_has: &str) -> Row {
    Row {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        one_cpu: false,
        unprivileged: false,
        interrupt_after: None,
        interrupt_on_file: None,
        no_process_with: None,
        no_file: None,
        wrap: Vec::new(),
        skip: None,
        code,
        stderr_has: stderr_has.to_string(),
        within: Duration::from_secs(5),
    }
}

/// Longest a row waits for its [`Row::interrupt_on_file`].
const MARKER_WAIT: Duration = Duration::from_secs(120);

/// Live (not zombie) processes whose command line holds `token`: (pid, command line).
fn processes_with(token: &str) -> Vec<(i32, String)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|pid| {
            // State is the field after the parenthesised name (proc_pid_stat(5)).
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|x| x.1.trim_start().starts_with('Z'))
                })
                == Some(false)
        })
        .filter_map(|pid| {
            let c = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            c.contains(token).then_some((pid, c))
        })
        .collect()
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
    // A valid results.json (the fake study's), so `report` gets as far as its --out.
    let snap = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots/integration__study__fake_results_json.snap"),
    )
    .unwrap();
    std::fs::write(p("results.json"), snap.splitn(3, "---\n").nth(2).unwrap()).unwrap();
    let results = p("results.json");
    std::fs::create_dir(p("a-dir")).unwrap();
    let sqlite_dir = format!("sqlite:{}", p("a-dir"));
    let slash = |name: &str| format!("{}/", p(name));
    let own_pid = std::process::id().to_string();
    let out_file = p("a-file");
    let empty = p("empty.json");
    let garbage = p("garbage.json");
    let schema = p("schema.json");
    // A server that accepts the connection and never answers (the kernel completes the
    // handshake; nothing reads): only a time limit ends the wait.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = |q: &str| {
        format!(
            "postgres://u@127.0.0.1:{}/db{q}",
            silent.local_addr().unwrap().port()
        )
    };
    let silent_1s = silent_url("?connect_timeout=1");
    // A sysfs root whose `online` list is empty: no kernel writes that.
    let cut = dir.path().join("cut-dump");
    std::fs::create_dir_all(cut.join("sys/devices/system/cpu/cpu0")).unwrap();
    std::fs::write(cut.join("sys/devices/system/cpu/online"), "\n").unwrap();
    let cut = cut.display().to_string();
    // SMT journals that are not JSON text: planted under --sysfs-root trees.
    let smt_root = |name: &str, plant: &dyn Fn(&Path)| {
        let t = dir.path().join(name);
        let cpu = t.join("sys/devices/system/cpu");
        std::fs::create_dir_all(cpu.join("cpu0")).unwrap();
        std::fs::create_dir_all(cpu.join("cpu1")).unwrap();
        std::fs::write(cpu.join("cpu1/online"), "1\n").unwrap();
        std::fs::write(cpu.join("present"), "0-1\n").unwrap();
        std::fs::create_dir_all(t.join("run/smtlab")).unwrap();
        plant(&t.join("run/smtlab/smt-journal.json"));
        t.display().to_string()
    };
    let not_utf8 = smt_root("journal-not-utf8", &|j| {
        std::fs::write(j, b"{\xff\xfe}").unwrap()
    });
    let a_dir = smt_root("journal-dir", &|j| std::fs::create_dir(j).unwrap());
    let looping = smt_root("journal-loop", &|j| {
        std::os::unix::fs::symlink(j, j).unwrap()
    });
    let endless = smt_root("journal-endless", &|j| {
        let c = std::ffi::CString::new(j.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path. A FIFO never ends (like /dev/zero, which a
        // test may not make without CAP_MKNOD).
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    });
    let pw_loop = p("password-loop");
    std::os::unix::fs::symlink(&pw_loop, &pw_loop).unwrap();
    let with_env = |k: &str, v: &str| vec!["env".to_string(), format!("{k}={v}")];
    let to_full = ["sh", "-c", "exec \"$@\" > /dev/full", "sh"]
        .map(String::from)
        .to_vec();
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
        // `?connect_timeout=` is honoured as libpq does (it was a fixed 4.5 s).
        Row {
            within: Duration::from_millis(3500),
            ..row(
                "a silent server and connect_timeout=1",
                &["oltp", "--rows-per-thread", "1", "--db", &silent_1s],
                1,
                "no answer within 1.0 s",
            )
        },
        row(
            "a connect_timeout that is not whole seconds",
            &["oltp", "--db", "postgres://u@h/db?connect_timeout=10s"],
            2,
            "connect_timeout",
        ),
        // 2: input files, --out, URLs, options.
        row(
            "a --sysfs-root whose files contradict each other",
            &["topo", "--sysfs-root", &cut],
            2,
            "online`: the file is empty",
        ),
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
            "does not match the report model: at `status`: invalid type",
        ),
        row(
            "report --out is a file",
            &["report", &results, "--out", &out_file],
            2,
            &format!("--out {out_file}: it is a file"),
        ),
        row(
            "report --out under /proc",
            &["report", &results, "--out", "/proc/smtlab"],
            2,
            "--out /proc/smtlab: cannot create it",
        ),
        row(
            "report --out an existing directory under /sys",
            &["report", &results, "--out", "/sys/kernel"],
            2,
            "--out /sys/kernel: cannot write in it",
        ),
        row(
            "study --out is a file",
            &["study", "--quick", "--out", &out_file],
            2,
            &format!("--out {out_file}: it is a file"),
        ),
        row(
            "study --out under /proc",
            &["study", "--quick", "--out", "/proc/smtlab"],
            2,
            "--out /proc/smtlab: cannot create it",
        ),
        row(
            "study --out under /sys",
            &["study", "--quick", "--out", "/sys/smtlab"],
            2,
            "--out /sys/smtlab: cannot create it",
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
            "top --textfile in a directory that cannot be written",
            &[
                "top",
                "--once",
                "--prometheus",
                "--textfile",
                "/proc/x.prom",
            ],
            2,
            "--textfile /proc/x.prom: cannot write in /proc",
        ),
        row(
            "compare --export-csv in a directory that cannot be written, before the runs",
            &[
                "compare",
                "--export-csv",
                "/proc/x.csv",
                "--",
                "sh",
                "-c",
                "sleep 10",
            ],
            2,
            "--export-csv /proc/x.csv: cannot write in /proc",
        ),
        row(
            "merge --prometheus with a trailing slash, before reading",
            &[
                "merge",
                "--out",
                &p("merge-slash"),
                "--prometheus",
                &slash("x.prom"),
                &results,
            ],
            2,
            "it ends with `/`",
        ),
        row(
            "top --textfile with a trailing slash",
            &[
                "top",
                "--prometheus",
                "--textfile",
                &slash("top.prom"),
                "--once",
            ],
            2,
            "it ends with `/`",
        ),
        row(
            "compare --export-json with a trailing slash",
            &["compare", "--export-json", &slash("c.json"), "--", "true"],
            2,
            "it ends with `/`",
        ),
        row(
            "burn --export-csv with a trailing slash",
            &[
                "burn",
                "-k",
                "int",
                "-d",
                "100ms",
                "--export-csv",
                &slash("b.csv"),
            ],
            2,
            "it ends with `/`",
        ),
        row(
            "study --prometheus with a trailing slash, before measuring",
            &[
                "study",
                "--quick",
                "--out",
                &p("study-slash"),
                "--prometheus",
                &slash("s.prom"),
            ],
            2,
            "it ends with `/`",
        ),
        row(
            "sqlite:PATH under /proc",
            &["oltp", "--db", "sqlite:/proc/smtlab-x.db"],
            2,
            "cannot write in /proc",
        ),
        row(
            "compare --server-cpus of a CPU this process may not use, before any server",
            &[
                "compare",
                "--pin-pids",
                &own_pid,
                "--server-cpus",
                "77",
                "--",
                "true",
            ],
            2,
            "--server-cpus 77: CPU 77 is not one this process may use",
        ),
        row(
            "compare --export-markdown that is a directory",
            &["compare", "--export-markdown", "/tmp", "--", "true"],
            2,
            "--export-markdown /tmp: it is a directory",
        ),
        row(
            "sqlite:PATH in a directory that does not exist",
            &["oltp", "--db", "sqlite:/nonexistent/x.db"],
            2,
            "directory /nonexistent does not exist",
        ),
        row(
            "study: sqlite:PATH in a directory that does not exist, before measuring",
            &[
                "study",
                "--quick",
                "--out",
                &p("study-sqlite"),
                "--db",
                "sqlite:/nonexistent/x.db",
            ],
            2,
            "directory /nonexistent does not exist",
        ),
        row(
            "study --db-password-file that does not exist",
            &[
                "study",
                "--quick",
                "--out",
                &p("study-pw"),
                "--db",
                "postgres://u@127.0.0.1:1/db",
                "--db-password-file",
                "/nonexistent",
            ],
            2,
            "--db-password-file /nonexistent: it does not exist",
        ),
        row(
            "oltp --db-password-file that is a loop of links",
            &[
                "oltp",
                "--db",
                "postgres://u@127.0.0.1:1/db",
                "--db-password-file",
                &pw_loop,
            ],
            2,
            "loop of symbolic links",
        ),
        Row {
            wrap: with_env("PGPASSFILE", &pw_loop),
            ..row(
                "PGPASSFILE that is a loop of links",
                &[
                    "oltp",
                    "--rows-per-thread",
                    "1",
                    "--db",
                    "postgres://u@127.0.0.1:1/db",
                ],
                2,
                "PGPASSFILE",
            )
        },
        row(
            "an SMT journal that is not UTF-8",
            &["smt", "restore", "--sysfs-root", &not_utf8],
            2,
            "not UTF-8",
        ),
        row(
            "an SMT journal that is a directory",
            &["smt", "restore", "--sysfs-root", &a_dir],
            2,
            "it is a directory",
        ),
        row(
            "an SMT journal that is a loop of links",
            &["smt", "restore", "--sysfs-root", &looping],
            2,
            "loop of symbolic links",
        ),
        row(
            "an SMT journal that never ends",
            &["smt", "restore", "--sysfs-root", &endless],
            2,
            "it is a FIFO",
        ),
        // 1: a disk that filled is outside smtlab, even for --help.
        Row {
            wrap: to_full.clone(),
            ..row("--help to a full disk", &["--help"], 1, "No space left")
        },
        Row {
            wrap: to_full.clone(),
            ..row(
                "--version to a full disk",
                &["--version"],
                1,
                "No space left",
            )
        },
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
    // pairs: bad workloads and commands (2), a failing command (1), more threads than CPUs
    // (3); floors no placement meets are tests/cli_pairs.rs's (they need a profiles file).
    std::fs::write(p("profiles.json"), "{\"format\": \"other\"}").unwrap();
    rows.extend([
        row(
            "pairs: unknown workload",
            &["pairs", "--workloads", "stream,divide"],
            2,
            "unknown workload `divide`",
        ),
        row(
            "pairs: a --cmd that prints no metric",
            &[
                "pairs",
                "--workloads=",
                "--cmd",
                "x=true",
                "--metric",
                "x=sysbench",
            ],
            2,
            "found no",
        ),
        row(
            "pairs: one round (a ratio needs two)",
            &["pairs", "--workloads", "int", "--repeat", "1"],
            2,
            "at least 2 rounds",
        ),
        row(
            "pairs: a --cmd that fails",
            &["pairs", "--workloads=", "--cmd", "x=false"],
            1,
            "`false` failed",
        ),
        row(
            "pairs: more --advise threads than CPUs",
            &["pairs", "--workloads", "int", "--advise", "int=100000"],
            3,
            "usable CPUs",
        ),
        row(
            "pairs: a profiles file that is not one",
            &[
                "pairs",
                "--workloads",
                "int",
                "--profiles",
                &p("profiles.json"),
            ],
            2,
            "not a pairs profiles file",
        ),
    ]);
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
    // 4: a negative nice value needs CAP_SYS_NICE (or RLIMIT_NICE), which `nobody` lacks.
    let mut nice = row(
        "negative nice without CAP_SYS_NICE",
        &[
            "burn", "-k", "int", "--nice", "-5", "-d", "100ms", "--warmup", "0",
        ],
        4,
        "CAP_SYS_NICE",
    );
    nice.unprivileged = true;
    rows.push(nice);
    // The same refused by the parent before it starts burner processes, not by a child.
    let mut nice = row(
        "negative nice for burner processes without CAP_SYS_NICE",
        &[
            "burn", "-k", "int", "--mode", "process", "--nice", "-5", "-d", "100ms",
        ],
        4,
        "CAP_SYS_NICE",
    );
    nice.unprivileged = true;
    rows.push(nice);
    // 130: Ctrl-C ends a run early, after cleanup.
    let mut int = row(
        "SIGINT during a run",
        &["burn", "-k", "int", "-d", "20s"],
        130,
        "",
    );
    int.interrupt_after = Some(Duration::from_millis(800));
    rows.push(int);
    let mut int = row(
        "SIGINT during a pairs profile",
        &[
            "pairs",
            "--workloads",
            "int",
            "--rulers",
            "int,l1",
            "-d",
            "20s",
            "--warmup",
            "0",
        ],
        130,
        "",
    );
    int.interrupt_after = Some(Duration::from_millis(800));
    rows.push(int);
    // Ctrl-C while the user's command runs: it, its background child and the child that
    // left its process group and session (setsid) are gone when smtlab exits, and no
    // profiles file is written from the cut-short run.
    let started = p("pairs-cmd-started");
    let saved = p("pairs-profiles.json");
    // The marker is made by the process that left the group, so the signal comes after
    // it did.
    let cmd = format!(
        "work=sleep 41.37 & setsid sh -c 'touch {started}; exec sleep 41.37' & sleep 41.37; wait"
    );
    let mut int = row(
        "SIGINT while a pairs --cmd runs",
        &[
            "pairs",
            "--workloads=",
            "--rulers",
            "int,l1",
            "-d",
            "100ms",
            "--warmup",
            "0",
            "--cmd",
            &cmd,
            "--save-profiles",
            &saved,
        ],
        130,
        "",
    );
    int.interrupt_on_file = Some(started);
    int.no_process_with = Some("sleep 41.37".into());
    int.no_file = Some(saved);
    rows.push(int);
    // connect_timeout=0 waits as long as it takes, and Ctrl-C still ends the wait.
    let silent_never = silent_url("?connect_timeout=0");
    let mut int = row(
        "SIGINT while a silent server is awaited without limit",
        &["oltp", "--rows-per-thread", "1", "--db", &silent_never],
        130,
        "",
    );
    int.interrupt_after = Some(Duration::from_millis(1500));
    rows.push(int);
    // 2: negative, fractional-negative and oversized numbers name the option, the value
    // and the range (clap once said "unexpected argument '-1' found").
    for (args, has) in [
        (
            &["burn", "-k", "int", "-d", "-1s"][..],
            "--duration -1s: must be greater than zero; expected a duration between 10ms and",
        ),
        (
            &["burn", "-k", "int", "--warmup", "-5"],
            "--warmup -5: negative; expected 0 (none) or a duration",
        ),
        (
            &["burn", "-k", "int", "-t", "-1"],
            "--threads -1: expected a whole number between 1 and 4096",
        ),
        (
            &["rwcache", "--write-ratio", "-0.1"],
            "--write-ratio -0.1: expected a fraction between 0 and 1",
        ),
        (
            &["burn", "-k", "int", "-t", "99999999999999999999"],
            "--threads 99999999999999999999: expected a whole number between 1 and 4096",
        ),
        (
            &["neighbors", "--burner-nice", "-21"],
            "--burner-nice -21: expected a whole number between -20 and 19",
        ),
        (
            &["oltp", "--prefill", "18446744073709551615"],
            "--prefill 18446744073709551615: expected a whole number between 0 and",
        ),
        (
            &["c2c", "--samples", "99999999999"],
            "--samples 99999999999: expected a whole number between 1 and",
        ),
        (
            &["lockscan", "--repeat", "-1"],
            "--repeat -1: expected a whole number between 1 and",
        ),
        (
            &["lockscan", "--scan-bytes", "-1MiB"],
            "--scan-bytes -1MiB: not a size",
        ),
        (
            &["neighbors", "--workload", "bogus"],
            "--workload bogus: valid: hot-page, oltp",
        ),
        (
            &["burn", "-k", "bogus"],
            "--kind: unknown burner kind `bogus`; valid kinds: prime",
        ),
    ] {
        rows.push(Row {
            args: args.iter().map(|s| s.to_string()).collect(),
            ..row("a number out of range", &[], 2, has)
        });
    }
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

    // compare's 4 and 3: as `nobody`, a root-owned process may not be pinned
    // (sched_setaffinity EPERM) and the root-owned cpuset hierarchy takes no new cgroup;
    // with every cgroup mount hidden in a private mount namespace there is none at all.
    let cpu = first_usable_cpu().to_string();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let needs_root = (!root).then(|| "dropping to another user needs root".to_string());
    let mut sleeper = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let sleeper_pid = sleeper.id().to_string();
    rows.push(Row {
        unprivileged: true,
        skip: needs_root.clone(),
        ..row(
            "compare: --pin-pids of a process we may not pin",
            &[
                "compare",
                "--cpus",
                &cpu,
                "--runs",
                "1",
                "--pin-pids",
                &sleeper_pid,
                "--",
                "true",
            ],
            4,
            "belongs to another user",
        )
    });
    // An sqlite: path `nobody` cannot write: a root-owned file, mode 644, in a root-owned
    // directory it may enter but not write.
    let shared = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::set_permissions(
        shared.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let root_db = shared.path().join("root-owned.db");
    std::fs::write(&root_db, "").unwrap();
    let root_db = format!("sqlite:{}", root_db.display());
    rows.push(Row {
        unprivileged: true,
        skip: needs_root.clone(),
        ..row(
            "sqlite:PATH this user cannot write",
            &["oltp", "--db", &root_db],
            2,
            "cannot write",
        )
    });
    let no_hierarchy = if root {
        smtlab::experiments::compare::cgroup::find()
            .err()
            .map(|e| format!("{e:#}"))
    } else {
        needs_root.clone()
    };
    rows.push(Row {
        unprivileged: true,
        skip: no_hierarchy,
        ..row(
            "compare: --cgroup without permission to create one",
            &[
                "compare", "--cgroup", "--cpus", &cpu, "--runs", "1", "--", "true",
            ],
            4,
            "cannot create a cgroup",
        )
    });
    rows.push(Row {
        wrap: [
            "unshare",
            "--mount",
            "sh",
            "-c",
            "for m in $(awk '$3 ~ /^cgroup2?$/ {print $2}' /proc/self/mounts | sort -r); do \
             umount \"$m\" || exit 97; done; \
             grep -q ' cgroup2\\? ' /proc/self/mounts && exit 98; exec \"$@\"",
            "sh",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        skip: (!root).then(|| "hiding the cgroup mounts needs root".to_string()),
        ..row(
            "compare: --cgroup with no cgroup file system",
            &[
                "compare", "--cgroup", "--cpus", &cpu, "--runs", "1", "--", "true",
            ],
            3,
            "no cgroup file system with the cpuset controller is mounted",
        )
    });

    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let mut failures = Vec::new();
    let mut covered = std::collections::BTreeSet::new();
    // A skipped row says why and covers nothing: its exit code counts only when another
    // row that ran gives it.
    let mut skipped = Vec::new();
    let mut skip = |r: &Row, why: &str| {
        let line = format!("{} (exit {}): skipped, {why}", r.name, r.code);
        eprintln!("{line}");
        skipped.push(line);
    };
    for r in &rows {
        if let Some(why) = &r.skip {
            skip(r, why);
            continue;
        }
        let mut cmd = if !r.wrap.is_empty() {
            let mut c = Command::new(&r.wrap[0]);
            c.args(&r.wrap[1..]).arg(&bin);
            c
        } else if r.one_cpu {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu]).arg(&bin);
            c
        } else if r.unprivileged && root {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&bin)
                .current_dir("/");
            c
        } else {
            Command::new(&bin)
        };
        let t0 = Instant::now();
        // From the signal to the exit, for an interrupted row.
        let mut signalled: Option<Instant> = None;
        let out = match (r.interrupt_after, &r.interrupt_on_file) {
            (None, None) => cmd.args(&r.args).output().unwrap(),
            (after, marker) => {
                let mut child = cmd
                    .args(&r.args)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                if let Some(after) = after {
                    std::thread::sleep(after);
                }
                if let Some(m) = marker {
                    // Not past an early exit (its code is then the failure to see).
                    while !Path::new(m).exists()
                        && t0.elapsed() < MARKER_WAIT
                        && child.try_wait().unwrap().is_none()
                    {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                // A child already reaped by try_wait is not signalled: its pid may be
                // another process's now.
                if child.try_wait().unwrap().is_none() {
                    signalled = Some(Instant::now());
                    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                }
                child.wait_with_output().unwrap()
            }
        };
        let took = signalled.map_or_else(|| t0.elapsed(), |at| at.elapsed());
        if signalled.is_some() {
            eprintln!(
                "{}: exit {:?} {took:?} after SIGINT",
                r.name,
                out.status.code()
            );
        }
        let left = r
            .no_process_with
            .as_deref()
            .map(processes_with)
            .unwrap_or_default();
        for (pid, _) in &left {
            // SAFETY: kill has no memory preconditions; a leftover of this row's command.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        if !left.is_empty() {
            failures.push(format!(
                "{}: still running after its exit: {left:?}",
                r.name
            ));
        }
        if let Some(f) = r.no_file.as_deref().filter(|f| Path::new(f).exists()) {
            failures.push(format!("{}: wrote {f}", r.name));
        }
        if r.unprivileged && root && String::from_utf8_lossy(&out.stderr).contains("setpriv") {
            skip(
                r,
                &format!(
                    "setpriv cannot drop to nobody here: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            );
            continue;
        }
        if !r.wrap.is_empty()
            && (matches!(out.status.code(), Some(97 | 98))
                || String::from_utf8_lossy(&out.stderr).contains(&format!("{}:", r.wrap[0])))
        {
            skip(
                r,
                &format!(
                    "{} could not set it up: {}",
                    r.wrap[0],
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            );
            continue;
        }
        covered.insert(r.code);
        let err = String::from_utf8_lossy(&out.stderr);
        let ok = out.status.code() == Some(r.code)
            && err.contains(&r.stderr_has)
            && !err.contains("panicked")
            && took < r.within;
        if !ok {
            failures.push(format!(
                "{} {:?}: exit {:?} (want {}) in {took:?}, stderr: {err}",
                r.name,
                r.args,
                out.status.code(),
                r.code
            ));
        }
    }
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        !Path::new(&p("study-out")).join("results.json").exists(),
        "a study whose database is unreachable measures nothing"
    );
    let codes: std::collections::BTreeSet<i32> = smtlab::error::EXIT_CODES
        .iter()
        .map(|(c, _)| i32::from(*c))
        .collect();
    let not_run: Vec<&i32> = codes.difference(&covered).collect();
    assert!(
        not_run.is_empty(),
        "exit codes no row that ran has shown: {not_run:?}; skipped rows:\n{}",
        skipped.join("\n")
    );
    assert_eq!(
        covered, codes,
        "no row expects a code outside error::EXIT_CODES"
    );
}

/// README's exit-code table and `--help`'s footer list the codes of `error::EXIT_CODES`.
#[test]
fn readme_and_help_list_every_exit_code() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split("## Exit codes")
        .nth(1)
        .expect("README has an Exit codes section");
    let section = section.split("\n## ").next().unwrap();
    let in_readme: Vec<u8> = section
        .lines()
        .filter_map(|l| {
            l.strip_prefix("| ")?
                .split(" |")
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect();
    let codes: Vec<u8> = smtlab::error::EXIT_CODES.iter().map(|(c, _)| *c).collect();
    assert_eq!(in_readme, codes, "README's exit-code table");
    let help = Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for (code, meaning) in smtlab::error::EXIT_CODES {
        let first_words: String = meaning.chars().take(20).collect();
        assert!(
            help.contains(&format!("{code:>3}  {first_words}")),
            "--help lists exit code {code}: {help}"
        );
    }
}

#[test]
fn a_byte_order_mark_in_results_json_is_accepted() {
    // Write a real report through the fake study, then prepend a BOM as some editors do.
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let snap =
        std::fs::read_to_string(src.join("integration__study__fake_results_json.snap")).unwrap();
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

/// A schema error says where: the JSON path of the field that does not fit.
#[test]
fn a_schema_error_names_the_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let snap =
        std::fs::read_to_string(src.join("integration__study__fake_results_json.snap")).unwrap();
    let json = snap.splitn(3, "---\n").nth(2).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["topology"]["cpus"][1]["online"] = serde_json::json!("yes");
    let path = dir.path().join("results.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .arg("report")
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("at `topology.cpus[1].online`: invalid type: string \"yes\""),
        "{err}"
    );
    assert!(
        !dir.path().join("report.html").exists(),
        "nothing half-written"
    );
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

/// Messages say what is wrong, not something near it: each case gives its exit code, text
/// its stderr must hold and text it must not (what it once said instead).
#[test]
fn messages_name_the_real_problem() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let snap = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots/integration__study__fake_results_json.snap"),
    )
    .unwrap();
    let json = snap.splitn(3, "---\n").nth(2).unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let with = |name: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut v = v.clone();
        f(&mut v);
        let p = dir.path().join(name);
        std::fs::write(&p, v.to_string()).unwrap();
        p.display().to_string()
    };
    let schema_word = with("schema-word.json", &|v| v["schema_version"] = "one".into());
    let schema_neg = with("schema-neg.json", &|v| v["schema_version"] = (-1).into());
    let escape = with("escape.json", &|v| v["status"] = "\u{1b}[2J\u{7}".into());
    let cpu = first_usable_cpu().to_string();
    let compare = |metric: &str, script: &str| -> Vec<String> {
        [
            "compare", "--runs", "1", "--warmup", "0", "--cpus", &cpu, "--metric", metric, "--",
            "sh", "-c", script,
        ]
        .map(String::from)
        .to_vec()
    };
    let words = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // (arguments, exit code, stderr holds, stderr does not hold)
    let cases: Vec<(Vec<String>, i32, &str, &str)> = vec![
        (
            compare("tps", "echo tps=5"),
            2,
            "matched `tps`, which is not a number",
            "matched nothing",
        ),
        (
            compare("v=(\\S+)", "echo v=NaN"),
            2,
            "`NaN`, which is not a finite number",
            "matched nothing",
        ),
        (
            compare("v=(\\S+)", "echo v=-inf"),
            2,
            "`-inf`, which is not a finite number",
            "matched nothing",
        ),
        (
            compare("v=(\\S+)", "echo v=1e400"),
            2,
            "`1e400`, which is not a finite number",
            "matched nothing",
        ),
        (
            compare("v=(\\S+)", "echo v=fast"),
            2,
            "`fast`, which is not a number",
            "matched nothing",
        ),
        // Output past the capture limit: the end is kept (metric lines come last), and
        // a miss says what was not kept.
        (
            compare(
                "v=([0-9]+)",
                "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo v=5",
            ),
            0,
            "",
            "matched nothing",
        ),
        (
            compare(
                "w=([0-9]+)",
                "head -c 20000000 /dev/zero | tr '\\0' x; echo",
            ),
            2,
            "bytes in the middle of its output were not kept",
            "",
        ),
        (
            words(&["plan", "cpus", "0-99999999:99999999", "-t", "1"]),
            2,
            "CPU `99999999` is beyond the supported maximum",
            "stride",
        ),
        (
            words(&["plan", "cpus:0-1", "extra", "-t", "1"]),
            2,
            "`cpus:0-1` already has its CPU list",
            "0-1:extra",
        ),
        (
            words(&["report", &schema_word]),
            2,
            "schema_version \"one\"",
            "missing",
        ),
        (
            words(&["report", &schema_neg]),
            2,
            "schema_version -1",
            "missing",
        ),
        (
            words(&["mem", "pages", "--max", "18446744073709551615"]),
            2,
            "--max 18446744073709551615",
            "0 B",
        ),
        (
            words(&["study", "--budget", "9s"]),
            2,
            "e.g. 90s, 5m, 20m",
            "500ms",
        ),
        (
            words(&["burn", "-k", "int", "--warmup", "-1"]),
            2,
            "--warmup -1: negative; expected 0 (none) or a duration",
            "greater than zero",
        ),
        (words(&["report", &escape]), 2, "\\u{1b}[2J\\u{7}", "\u{1b}"),
    ];
    let mut failures = Vec::new();
    for (args, code, has, hasnt) in &cases {
        let out = Command::new(&bin).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(*code)
            || !err.contains(has)
            || (!hasnt.is_empty() && err.contains(hasnt))
            || err.contains("panicked")
        {
            let shown: Vec<&str> = args.iter().map(|a| &a[..a.len().min(60)]).collect();
            failures.push(format!(
                "{shown:?}: exit {:?} (want {code}), want {has:?} and not {hasnt:?}: {}",
                out.status.code(),
                &err[..err.len().min(1500)]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Input that means nothing, or something else than it says, is refused (exit 2) or warned
/// about, not quietly taken: a sysfs word mask is a mask, an empty item in a list is an
/// error, a root with no procfs is no root, and a password file others can read is
/// named.
#[test]
fn nonsense_is_refused_or_warned_about() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let pw = dir.path().join("pw");
    std::fs::write(&pw, "secret\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = |p: &Path| p.display().to_string();
    let w = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let open_pw = format!(
        "warning: --db-password-file {} can be read by group or others (mode 644)",
        s(&pw)
    );
    // (arguments, exit code, stdout holds, stderr holds)
    let cases: Vec<(Vec<String>, i32, &str, &str)> = vec![
        // The word mask `00000000,00000001` (the form README lists) is CPU 0, not 0 and 1.
        (
            w(&["plan", "cpus:00000000,00000001", "-t", "1", "--json"]),
            0,
            "\"request\": \"cpus:0\"",
            "",
        ),
        (
            w(&["mem", "report", "--sysfs-root", &s(&empty)]),
            2,
            "",
            "no proc/meminfo",
        ),
        (
            w(&["oltp", "--configs", "one-per-core,,all", "--dry-run"]),
            2,
            "",
            "--configs one-per-core,,all: item 2 is empty",
        ),
        (
            w(&["compare", "--placements", "one-per-core,,all", "--", "true"]),
            2,
            "",
            "--placements one-per-core,,all: item 2 is empty",
        ),
        (
            w(&["yield", "--workloads", "int,,prime", "--dry-run"]),
            2,
            "",
            "--workloads int,,prime: item 2 is empty",
        ),
        (
            w(&[
                "oltp",
                "--db",
                "postgres://u@127.0.0.1:1/db",
                "--db-password-file",
                &s(&pw),
            ]),
            1,
            "",
            &open_pw,
        ),
    ];
    let mut failures = Vec::new();
    for (args, code, out_has, err_has) in &cases {
        let out = Command::new(&bin).args(args).output().unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        if out.status.code() != Some(*code) || !o.contains(out_has) || !e.contains(err_has) {
            failures.push(format!(
                "{args:?}: exit {:?} (want {code}), want stdout {out_has:?}, stderr {err_has:?}: \
                 {}\n{e}",
                out.status.code(),
                &o[..o.len().min(300)]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
