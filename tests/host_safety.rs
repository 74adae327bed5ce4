//! Paths a user names can never hurt the host: an output path that is a device, a FIFO, a
//! symbolic link or a directory is refused before any work (exit 2) and left as it was; an
//! input file that is a FIFO or a device is refused at once instead of blocking or growing
//! without end. Devices and FIFOs are made with mknod(2)/mkfifo(3) inside a temporary
//! directory, never in the real `/dev`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn smtlab() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_smtlab"));
    c.stdin(Stdio::null());
    c
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// A FIFO at `dir/name`.
fn fifo(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(cstr(&p).as_ptr(), 0o600) },
        0,
        "mkfifo"
    );
    p
}

/// A character device like `/dev/null` (1:3) or `/dev/zero` (1:5) at `dir/name`, or None
/// (saying why) where this process may not make device nodes (not root, or no
/// CAP_MKNOD).
fn char_device(dir: &Path, name: &str, minor: u32) -> Option<PathBuf> {
    let p = dir.join(name);
    // SAFETY: a valid NUL-terminated path; makedev has no preconditions.
    let r = unsafe {
        libc::mknod(
            cstr(&p).as_ptr(),
            libc::S_IFCHR | 0o666,
            libc::makedev(1, minor),
        )
    };
    if r != 0 {
        crate::common::skip(
            crate::common::Need::Machine,
            &format!(
                "the device case: mknod {}: {}",
                p.display(),
                std::io::Error::last_os_error()
            ),
        );
        return None;
    }
    Some(p)
}

/// Runs `cmd` with a time limit (a FIFO that blocks must not hang the test), returning its
/// output and how long it took.
fn run_within(mut cmd: Command, limit: Duration) -> (Output, Duration) {
    let t0 = Instant::now();
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let watchdog = std::thread::spawn(move || {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: signal 0 only checks that the process exists.
            if unsafe { libc::kill(pid, 0) } != 0 {
                return;
            }
        }
        // SAFETY: our child's pid; SIGKILL ends a hung run.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    let _ = watchdog.join();
    (out, t0.elapsed())
}

fn err_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What kind of thing is at `p` (without following a link), for the assertions that it is
/// unchanged.
fn kind(p: &Path) -> &'static str {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return "nothing";
    };
    let t = m.file_type();
    if t.is_symlink() {
        "symlink"
    } else if t.is_fifo() {
        "fifo"
    } else if t.is_char_device() {
        "char device"
    } else if t.is_dir() {
        "directory"
    } else if t.is_file() {
        "file"
    } else {
        "other"
    }
}

/// The non-regular things an output path may turn out to be: (path, its kind, what the
/// refusal must say).
fn not_regular(dir: &Path) -> Vec<(PathBuf, &'static str, &'static str)> {
    let mut v = vec![(fifo(dir, "fifo.out"), "fifo", "is a FIFO")];
    let target = dir.join("target.txt");
    std::fs::write(&target, "keep me\n").unwrap();
    let link = dir.join("link.out");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    v.push((link, "symlink", "is a symbolic link"));
    let sub = dir.join("dir.out");
    std::fs::create_dir(&sub).unwrap();
    v.push((sub, "directory", "is a directory"));
    if let Some(d) = char_device(dir, "null.out", 3) {
        v.push((d, "char device", "is a character device"));
    }
    v
}

/// `top --textfile`, every `compare --export-*`, and the files of `study --out` and `report
/// --out`: a path that holds a device, a FIFO, a link or a directory is refused with exit 2
/// before anything runs, and is still what it was. (`top --textfile /dev/full` once turned
/// the real /dev/full into a 2.9 KB text file.)
#[test]
fn output_paths_that_are_not_regular_files_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results-src");
    std::fs::create_dir(&results).unwrap();
    let snap = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots/integration__study__fake_results_json.snap"),
    )
    .unwrap();
    let json = results.join("results.json");
    std::fs::write(&json, snap.splitn(3, "---\n").nth(2).unwrap()).unwrap();
    let mut failures = Vec::new();
    for (p, was, says) in not_regular(dir.path()) {
        let ps = p.display().to_string();
        // The out directories whose report.html is the odd thing.
        let out_dir = dir.path().join(format!("out-{}", was.replace(' ', "-")));
        std::fs::create_dir(&out_dir).unwrap();
        std::fs::rename(&p, out_dir.join("report.html")).unwrap();
        let html = out_dir.join("report.html");
        let outs = out_dir.display().to_string();
        let cases: Vec<(Vec<String>, &Path)> = vec![
            (
                ["top", "--once", "--prometheus", "--textfile", &ps]
                    .map(String::from)
                    .to_vec(),
                &p,
            ),
            (
                [
                    "compare",
                    "--runs",
                    "1",
                    "--warmup",
                    "0",
                    "--export-csv",
                    &ps,
                    "--",
                    "true",
                ]
                .map(String::from)
                .to_vec(),
                &p,
            ),
            (
                [
                    "compare",
                    "--runs",
                    "1",
                    "--warmup",
                    "0",
                    "--export-markdown",
                    &ps,
                    "--",
                    "true",
                ]
                .map(String::from)
                .to_vec(),
                &p,
            ),
            (
                ["report", &json.display().to_string(), "--out", &outs]
                    .map(String::from)
                    .to_vec(),
                &html,
            ),
            (
                ["study", "--quick", "--out", &outs]
                    .map(String::from)
                    .to_vec(),
                &html,
            ),
        ];
        for (args, path) in cases {
            // The thing moves between the two places: put it where this case looks.
            if path == p.as_path() && !p.exists() && std::fs::symlink_metadata(&p).is_err() {
                std::fs::rename(&html, &p).unwrap();
            } else if path == html.as_path() && std::fs::symlink_metadata(&html).is_err() {
                std::fs::rename(&p, &html).unwrap();
            }
            let mut cmd = smtlab();
            cmd.args(&args);
            let (o, took) = run_within(cmd, Duration::from_secs(20));
            let err = err_of(&o);
            if o.status.code() != Some(2)
                || !err.contains(says)
                || took > Duration::from_secs(10)
                || kind(path) != was
            {
                failures.push(format!(
                    "{args:?}: exit {:?} in {took:?}, {} is now a {} (was a {was}): {err}",
                    o.status.code(),
                    path.display(),
                    kind(path)
                ));
            }
        }
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("target.txt")).unwrap(),
        "keep me\n",
        "a link's target is never written"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An output file in a directory that cannot be written is refused before the work, with
/// exit 2 (it was exit 1 after the whole run, and the comparison's stdout was lost).
#[test]
fn an_output_file_in_an_unwritable_directory_is_refused_before_any_work() {
    for args in [
        vec![
            "top",
            "--once",
            "--prometheus",
            "--textfile",
            "/proc/smtlab.prom",
        ],
        vec![
            "compare",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--export-csv",
            "/proc/smtlab.csv",
            "--",
            "sh",
            "-c",
            "echo ran >&2",
        ],
        vec![
            "compare",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--export-markdown",
            "/sys/kernel/smtlab.md",
            "--",
            "sh",
            "-c",
            "echo ran >&2",
        ],
    ] {
        let mut cmd = smtlab();
        cmd.args(&args);
        let (o, took) = run_within(cmd, Duration::from_secs(20));
        let err = err_of(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("cannot write in"), "{args:?}: {err}");
        assert!(
            !err.contains("ran"),
            "{args:?}: the command ran first: {err}"
        );
        assert!(took < Duration::from_secs(10), "{args:?}: {took:?}");
    }
}

/// A writable 1 × 2 × 2 sysfs tree (siblings 0,1 and 2,3; CPU 0 without an online file,
/// as on x86) for `smt --sysfs-root`, with its journal directory.
fn smt_tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let cpu = t.path().join("sys/devices/system/cpu");
    for c in 0..4u32 {
        let d = cpu.join(format!("cpu{c}/topology"));
        std::fs::create_dir_all(&d).unwrap();
        let sib = if c < 2 { "0-1" } else { "2-3" };
        std::fs::write(d.join("thread_siblings_list"), format!("{sib}\n")).unwrap();
        if c > 0 {
            std::fs::write(cpu.join(format!("cpu{c}/online")), "1\n").unwrap();
        }
    }
    std::fs::write(cpu.join("present"), "0-3\n").unwrap();
    std::fs::create_dir_all(cpu.join("smt")).unwrap();
    std::fs::write(cpu.join("smt/control"), "on\n").unwrap();
    let proc = t.path().join("proc/sys/kernel/random");
    std::fs::create_dir_all(&proc).unwrap();
    std::fs::write(proc.join("boot_id"), "boot-1\n").unwrap();
    std::fs::create_dir_all(t.path().join("run/smtlab")).unwrap();
    t
}

/// The input files smtlab reads (a study's results.json, a password file given with
/// `--db-password-file` or `PGPASSFILE`, a `top --yield` file, the SMT journal): a FIFO or
/// a device there is refused at once with exit 2 naming what it is. A FIFO once blocked
/// the open(2) forever, through SIGTERM (restarted after the handler); `/dev/zero` grew
/// the process to 4.2 GB.
#[test]
fn input_files_that_are_fifos_or_devices_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut things = vec![(fifo(dir.path(), "in.fifo"), "a FIFO")];
    if let Some(d) = char_device(dir.path(), "zero", 5) {
        things.push((d, "a character device"));
    }
    let mut failures = Vec::new();
    for (p, says) in &things {
        let ps = p.display().to_string();
        let tree = smt_tree();
        let journal = tree.path().join("run/smtlab/smt-journal.json");
        std::os::unix::fs::symlink(p, &journal).unwrap();
        let root = tree.path().display().to_string();
        let pg = "postgres://u@127.0.0.1:1/db";
        let cases: Vec<(Vec<&str>, Option<&str>)> = vec![
            (vec!["report", &ps], None),
            (
                vec![
                    "oltp",
                    "--rows-per-thread",
                    "1",
                    "--db",
                    pg,
                    "--db-password-file",
                    &ps,
                ],
                None,
            ),
            (
                vec!["oltp", "--rows-per-thread", "1", "--db", pg],
                Some(ps.as_str()),
            ),
            (vec!["top", "--once", "--yield", &ps], None),
            (vec!["smt", "restore", "--sysfs-root", &root], None),
        ];
        for (args, passfile) in cases {
            let mut cmd = smtlab();
            cmd.args(&args).env_remove("PGPASSWORD");
            if let Some(f) = passfile {
                cmd.env("PGPASSFILE", f);
            }
            let (o, took) = run_within(cmd, Duration::from_secs(20));
            let err = err_of(&o);
            if o.status.code() != Some(2) || !err.contains(says) || took > Duration::from_secs(10) {
                failures.push(format!(
                    "{args:?} (PGPASSFILE {passfile:?}): exit {:?} in {took:?}: {err}",
                    o.status.code()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn cpu_online(root: &Path, cpu: u32) -> String {
    std::fs::read_to_string(root.join(format!("sys/devices/system/cpu/cpu{cpu}/online")))
        .unwrap()
        .trim()
        .to_string()
}

/// Files in the journal directory of `root`.
fn journal_dir_names(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("run/smtlab"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// An SMT journal is checked as strictly as sysfs before anything is written: a non-empty
/// online set that holds every CPU that cannot go offline (CPU 0 here, without an online
/// file), CPUs that exist, and a `control` value from the kernel's list. One that fails is
/// never applied and never deleted: it is renamed aside with a timestamp, named in the
/// error, exit 2. (`"online": []` once wrote 0 to cpu1..3; a bogus control made restore
/// say "already in the recorded state", exit 0, and delete the journal.)
#[test]
fn a_corrupt_smt_journal_is_kept_aside_and_never_applied() {
    let journal = |online: &str, control: &str, cores: &str| {
        format!(
            r#"{{"schema_version": 1, "root": "/", "boot_id": "boot-1", "pid": 1,
                "written_unix_s": 0, "command": "off", "control": {control},
                "online": {online}, "cores": {cores}}}"#
        )
    };
    let cases = [
        (
            "no online CPU",
            journal("[]", r#""on""#, "[]"),
            "names no online CPU",
        ),
        (
            "CPU 0, which cannot go offline, offline",
            journal("[1, 2, 3]", r#""on""#, "[[1], [2, 3]]"),
            "cpu0",
        ),
        (
            "a CPU that does not exist",
            journal("[0, 1, 2, 3, 9]", r#""on""#, "[[0, 1], [2, 3]]"),
            "9",
        ),
        (
            "a control value the kernel never writes",
            journal("[0, 1, 2, 3]", r#""sideways""#, "[[0, 1], [2, 3]]"),
            "`sideways`",
        ),
    ];
    let mut failures = Vec::new();
    for (name, body, says) in cases {
        let t = smt_tree();
        // The state to restore from: siblings 1 and 3 offline.
        for c in [1, 3] {
            std::fs::write(
                t.path()
                    .join(format!("sys/devices/system/cpu/cpu{c}/online")),
                "0\n",
            )
            .unwrap();
        }
        std::fs::write(t.path().join("run/smtlab/smt-journal.json"), &body).unwrap();
        let mut cmd = smtlab();
        cmd.args(["smt", "restore", "--sysfs-root"]).arg(t.path());
        let (o, _) = run_within(cmd, Duration::from_secs(20));
        let err = err_of(&o);
        let names = journal_dir_names(t.path());
        let kept: Vec<&String> = names
            .iter()
            .filter(|n| n.starts_with("smt-journal.json.invalid-"))
            .collect();
        let cpus = [1, 2, 3].map(|c| cpu_online(t.path(), c));
        let ok = o.status.code() == Some(2)
            && err.contains(says)
            && kept.len() == 1
            && err.contains(kept[0].as_str())
            && !names.iter().any(|n| n == "smt-journal.json")
            && std::fs::read_to_string(t.path().join("run/smtlab").join(kept[0])).unwrap() == body
            && cpus == ["0", "1", "0"];
        if !ok {
            failures.push(format!(
                "{name}: exit {:?}, journal dir {names:?}, cpu1..3 online {cpus:?}: {err}",
                o.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// PostgreSQL's POSIX shared memory segments in /dev/shm.
fn pg_shm_segments() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("PostgreSQL."))
                .collect()
        })
        .unwrap_or_default()
}

/// A managed cluster leaves no shared memory behind, even when its postmaster is killed
/// outright (the end of a hurried stop, or smtlab's SIGKILL): its dynamic shared memory
/// lives in files of its data directory (`dynamic_shared_memory_type = mmap`), removed
/// with it, and the small System V segment it recorded in `postmaster.pid` is removed once
/// no process is attached. A signal while a cluster started once left `PostgreSQL.*`
/// segments in /dev/shm in 3 of 4 runs.
#[test]
fn a_managed_cluster_leaves_no_shared_memory_even_when_its_server_is_killed() {
    use smtlab::oltp::Durability;
    use smtlab::oltp::managed::{ManagedCluster, find_binaries};
    if let Err(e) = find_binaries() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have PostgreSQL: {e:#}"
        );
        crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
        return;
    }
    let before = pg_shm_segments();
    let mut c = ManagedCluster::start(Durability::Delayed, 2).unwrap();
    let mut client = postgres::Client::connect(&c.conninfo(), postgres::NoTls).unwrap();
    let dsm: String = client
        .query_one("SHOW dynamic_shared_memory_type", &[])
        .unwrap()
        .get(0);
    drop(client);
    let pid_file = std::fs::read_to_string(c.data_dir().join("postmaster.pid")).unwrap();
    // Line 7: the System V segment's key and id.
    let shmid: i32 = pid_file
        .lines()
        .nth(6)
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1);
    let during: Vec<String> = pg_shm_segments().difference(&before).cloned().collect();
    let pid = c.postmaster_pid().unwrap();
    // SAFETY: the postmaster leads its own process group (its backends are in it).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    c.stop().unwrap();
    // Segments that appeared while the cluster ran and are still there. Said, not
    // asserted: another PostgreSQL on this machine may make some meanwhile; with `mmap`
    // this cluster makes none.
    let left: Vec<&String> = during
        .iter()
        .filter(|n| Path::new("/dev/shm").join(n).exists())
        .collect();
    // The System V segment is gone, or marked for destruction: a backend killed with the
    // postmaster may still be exiting and attached, and the kernel destroys a segment
    // marked so when its last process detaches (IPC_RMID, shmctl(2)). Judged by the mark,
    // which the stop sets before it returns, not by how soon a loaded machine lets the
    // last backend exit.
    assert!(
        shmid >= 0,
        "postmaster.pid names its System V segment: {pid_file}"
    );
    /// `SHM_DEST` in the segment's mode: "segment will be destroyed on last detach"
    /// (include/uapi/linux/shm.h); the libc crate does not export it for Linux.
    const SHM_DEST: libc::c_ushort = 0o1000;
    // SAFETY: IPC_STAT writes into the zeroed struct we pass.
    let (stat, ds) = unsafe {
        let mut ds: libc::shmid_ds = std::mem::zeroed();
        (libc::shmctl(shmid, libc::IPC_STAT, &mut ds), ds)
    };
    let sysv_left = stat == 0 && ds.shm_perm.mode & SHM_DEST == 0;
    assert!(
        dsm == "mmap" && !sysv_left,
        "dynamic_shared_memory_type {dsm}; segments left in /dev/shm: {left:?}; System V \
         segment {shmid} left unmarked (mode {:o}, {} attached)",
        ds.shm_perm.mode,
        ds.shm_nattch
    );
}

/// Whether any process maps `/dev/shm/NAME` (its line in some `/proc/PID/maps`).
fn shm_mapped(name: &str) -> bool {
    let want = format!("/dev/shm/{name}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<i32>().is_ok())
        })
        .any(|e| {
            std::fs::read_to_string(e.path().join("maps"))
                .is_ok_and(|m| m.lines().any(|l| l.ends_with(&want)))
        })
}

/// A signal while the managed cluster's `initdb` runs leaves no `PostgreSQL.*` segment in
/// /dev/shm: initdb's bootstrap and single-user backends use POSIX shared memory whatever
/// the server is later told, and a killed one removes none. (A signal 0.4–0.8 s into
/// `initdb` left two segments in 5 of 7 runs.) Segments that appeared meanwhile and that no
/// process maps are the ones left (another PostgreSQL on this machine maps its own).
#[test]
fn a_signal_during_initdb_leaves_no_posix_shared_memory() {
    use std::io::BufRead;
    if let Err(e) = smtlab::oltp::managed::find_binaries() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have PostgreSQL: {e:#}"
        );
        crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
        return;
    }
    let mut left = Vec::new();
    for i in 0..7u64 {
        let before = pg_shm_segments();
        let mut child = smtlab()
            .args([
                "compare",
                "--with-postgres",
                "--runs",
                "1",
                "--warmup",
                "0",
                "--cpus",
                "0",
            ])
            .args(["--", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while err.read_line(&mut line).unwrap() > 0 && !line.contains("starting a throwaway") {
            line.clear();
        }
        std::thread::sleep(Duration::from_millis(400 + 66 * i));
        // SAFETY: our child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut rest);
        let code = child.wait().unwrap().code();
        assert!(matches!(code, Some(130) | Some(0)), "exit {code:?}: {rest}");
        let new: Vec<String> = pg_shm_segments().difference(&before).cloned().collect();
        left.extend(new.into_iter().filter(|n| !shm_mapped(n)));
    }
    let cleanup = left.clone();
    for n in &cleanup {
        let _ = std::fs::remove_file(Path::new("/dev/shm").join(n));
    }
    assert!(left.is_empty(), "segments left in /dev/shm: {left:?}");
}

/// Processes whose command line is exactly `argv` (the tests give their commands
/// arguments no other program uses, such as `sleep 97.173`, so these are theirs).
fn processes_running(argv: &[&str]) -> Vec<i32> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

/// `compare`'s `--cleanup` and `--prepare` follow the first signal like the command does: a
/// `--cleanup` still runs after Ctrl-C (it is the command's own undo) but gets a grace
/// period, then its process group is terminated; a `--prepare` is terminated at once.
/// (`--cleanup 'sleep 100'` after a SIGINT at 1 s was still running 59 s later.)
#[test]
fn a_slow_cleanup_or_prepare_does_not_outlive_the_first_signal() {
    let cases = [
        (
            "--cleanup after a SIGINT during the command",
            vec!["--cleanup", "exec sleep 97.173", "--", "sleep", "30"],
            ["sleep", "97.173"],
        ),
        (
            "--prepare",
            vec!["--prepare", "exec sleep 98.291", "--", "true"],
            ["sleep", "98.291"],
        ),
        // A signal during a cleanup that then finishes in its grace period (or is stopped at
        // its end, on a slow machine): still 130.
        (
            "a short --cleanup with a SIGINT during it",
            vec!["--cleanup", "exec sleep 1.917", "--", "true"],
            ["sleep", "1.917"],
        ),
    ];
    let mut failures = Vec::new();
    for (name, args, marker) in cases {
        let mut cmd = smtlab();
        cmd.args(["compare", "--runs", "1", "--warmup", "0", "--cpus", "0"])
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        std::thread::sleep(Duration::from_millis(1500));
        let sent = Instant::now();
        // SAFETY: our child's pid.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let watchdog = std::thread::spawn(move || {
            let end = Instant::now() + Duration::from_secs(40);
            while Instant::now() < end {
                std::thread::sleep(Duration::from_millis(50));
                // SAFETY: signal 0 only checks that the process exists.
                if unsafe { libc::kill(pid, 0) } != 0 {
                    return;
                }
            }
            // SAFETY: our child's pid; the test ends a hung run.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        let o = child.wait_with_output().unwrap();
        let took = sent.elapsed();
        let _ = watchdog.join();
        let left = processes_running(&marker);
        for p in &left {
            // SAFETY: a process the test's own command started.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        let err = err_of(&o);
        if o.status.code() != Some(130) || took > Duration::from_secs(20) || !left.is_empty() {
            failures.push(format!(
                "{name}: exit {:?} {took:?} after SIGINT, {marker:?} left: {left:?}: {err}",
                o.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every free text of a `results.json` (a `--db` path, a reason, a note, the command)
/// stays one piece of inline text in `summary.md`: a line break in it starts no heading,
/// list or table row, and `[text](javascript:…)` is no link. Code spans keep it literal.
#[test]
fn markdown_fields_cannot_inject_lines_or_links() {
    use serde_json::Value;
    const INJECT: &str = "x\n# INJECTED\n| a | b |\r\n[click](javascript:alert(1))";
    let snap = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/integration__study__fake_results_json.snap");
    let snap = std::fs::read_to_string(snap).unwrap();
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
    let mut injected = 0;
    for p in &pointers {
        let old = v.pointer(p).unwrap().clone();
        *v.pointer_mut(p).unwrap() = Value::String(format!("{}{INJECT}", old.as_str().unwrap()));
        if smtlab::report::lenient::from_value::<smtlab::report::Report>(v.clone()).is_ok() {
            injected += 1;
        } else {
            *v.pointer_mut(p).unwrap() = old;
        }
    }
    assert!(injected >= 50, "only {injected} texts took the payload");
    let r = smtlab::report::render_json(&serde_json::to_string(&v).unwrap()).unwrap();
    let mut bad = Vec::new();
    for (n, line) in r.markdown.lines().enumerate() {
        let outside: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect();
        if line.starts_with("# INJECTED")
            || line.starts_with("| a | b |")
            || line.starts_with("[click]")
            || outside.contains("[click](")
        {
            bad.push(format!("summary.md line {}: {line}", n + 1));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Root's journal directory (0700), seen by another user: `smt status` says the journal is
/// not known to this user instead of failing or saying there is none; `restore` needs root
/// (exit 4). Needs root to drop to `nobody`.
#[test]
fn a_journal_another_user_may_not_read_is_unknown_not_absent() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::skip(
            crate::common::Need::Machine,
            "dropping to another user needs root",
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let t = smt_tree();
    for d in walk_dirs(t.path()) {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let jdir = t.path().join("run/smtlab");
    std::fs::write(jdir.join("smt-journal.json"), "{}").unwrap();
    std::fs::set_permissions(&jdir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let as_nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_smtlab"))
            .args(args)
            .arg("--sysfs-root")
            .arg(t.path())
            .current_dir("/");
        c.output().unwrap()
    };
    let o = as_nobody(&["smt", "status"]);
    let out = String::from_utf8_lossy(&o.stdout);
    if String::from_utf8_lossy(&o.stderr).contains("setpriv") {
        crate::common::skip(
            crate::common::Need::Machine,
            "setpriv cannot drop to nobody here",
        );
        return;
    }
    assert_eq!(o.status.code(), Some(0), "{}", err_of(&o));
    assert!(
        out.contains("journal") && out.contains("not known: this user may not read"),
        "{out}"
    );
    let o = as_nobody(&["smt", "restore"]);
    assert_eq!(o.status.code(), Some(4), "{}", err_of(&o));
    assert!(err_of(&o).contains("can be read only by its owner"));
    // Nothing was renamed: the journal is root's to deal with.
    assert!(jdir.join("smt-journal.json").exists());
}

/// Every directory under `root`, `root` included.
fn walk_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}
