//! `smtlab smt` on writable fake sysfs trees (`--sysfs-root`): the `notsupported` path that
//! offlines siblings through `cpuN/online`, the journal and `restore`, SIGKILL right after
//! the journal and midway, Ctrl-C midway, pinned processes, and the exit code for a user
//! who may not write. On this machine only `--dry-run` runs against `/`: a test never
//! switches a real CPU.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A tree like a 1 × 2 × 2 machine whose `smt/control` says `notsupported`: siblings
/// (0,1) and (2,3), CPU 0 without an online file, no top-level `online` list (so each
/// CPU's own file is its state, as a fake tree cannot update the kernel's list).
fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let cpu = t.path().join("sys/devices/system/cpu");
    for c in 0..4u32 {
        let d = cpu.join(format!("cpu{c}/topology"));
        std::fs::create_dir_all(&d).unwrap();
        let sib = if c < 2 { "0-1" } else { "2-3" };
        std::fs::write(d.join("thread_siblings_list"), format!("{sib}\n")).unwrap();
        std::fs::write(d.join("core_id"), format!("{}\n", c / 2)).unwrap();
        std::fs::write(d.join("physical_package_id"), "0\n").unwrap();
        if c > 0 {
            std::fs::write(cpu.join(format!("cpu{c}/online")), "1\n").unwrap();
        }
    }
    std::fs::write(cpu.join("present"), "0-3\n").unwrap();
    std::fs::write(cpu.join("possible"), "0-3\n").unwrap();
    std::fs::create_dir_all(cpu.join("smt")).unwrap();
    std::fs::write(cpu.join("smt/control"), "notsupported\n").unwrap();
    std::fs::create_dir_all(cpu.join("vulnerabilities")).unwrap();
    std::fs::write(
        cpu.join("vulnerabilities/mds"),
        "Mitigation: Clear CPU buffers; SMT vulnerable\n",
    )
    .unwrap();
    std::fs::write(cpu.join("vulnerabilities/meltdown"), "Not affected\n").unwrap();
    let proc = t.path().join("proc");
    std::fs::create_dir_all(proc.join("sys/kernel/random")).unwrap();
    std::fs::write(proc.join("cmdline"), "BOOT_IMAGE=/vmlinuz quiet\n").unwrap();
    std::fs::write(proc.join("sys/kernel/random/boot_id"), "boot-1\n").unwrap();
    t
}

/// Adds a process whose one thread may run only on `cpus`.
fn pinned_process(root: &Path, pid: u32, name: &str, cpus: &str) {
    let d = root.join(format!("proc/{pid}/task/{pid}"));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("status"),
        format!("Name:\t{name}\nCpus_allowed:\tf\nCpus_allowed_list:\t{cpus}\n"),
    )
    .unwrap();
}

fn online(root: &Path, cpu: u32) -> String {
    std::fs::read_to_string(root.join(format!("sys/devices/system/cpu/cpu{cpu}/online")))
        .unwrap()
        .trim()
        .to_string()
}

fn journal(root: &Path) -> PathBuf {
    root.join("run/smtlab/smt-journal.json")
}

fn smtlab(root: &Path, args: &[&str]) -> Command {
    let mut c = Command::cargo_bin("smtlab").unwrap();
    c.args(args).arg("--sysfs-root").arg(root);
    c
}

fn stdout(mut c: Command) -> String {
    let o = c.assert().success().get_output().clone();
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn status_reads_the_tree() {
    let t = tree();
    let out = stdout(smtlab(t.path(), &["smt", "status", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["control"], "notsupported");
    assert_eq!(v["threads_per_core"], 2);
    assert_eq!(v["cores"][0]["online"], serde_json::json!([0, 1]));
    assert_eq!(v["cores"][1]["online"], serde_json::json!([2, 3]));
    assert_eq!(v["cannot_go_offline"], serde_json::json!([0]));
    assert_eq!(v["vulnerabilities"][0]["name"], "mds");
    assert_eq!(v["vulnerabilities"].as_array().unwrap().len(), 1);
    assert_eq!(v["cmdline_nosmt"], serde_json::json!([]));
    assert!(v["journal"].is_null());
    let text = stdout(smtlab(t.path(), &["smt", "status"]));
    assert!(text.contains("notsupported"), "{text}");
    assert!(text.contains("mds"), "{text}");
}

#[test]
fn nosmt_on_the_command_line_is_reported() {
    let t = tree();
    std::fs::write(
        t.path().join("proc/cmdline"),
        "root=/dev/sda1 mds=full,nosmt quiet\n",
    )
    .unwrap();
    let out = stdout(smtlab(t.path(), &["smt", "status", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["cmdline_nosmt"], serde_json::json!(["mds=full,nosmt"]));
}

#[test]
fn dry_run_prints_the_writes_and_changes_nothing() {
    let t = tree();
    let out = stdout(smtlab(t.path(), &["smt", "off", "--dry-run"]));
    let cpu = t.path().join("sys/devices/system/cpu");
    for c in [1, 3] {
        let line = format!("echo 0 > {}/cpu{c}/online", cpu.display());
        assert!(out.contains(&line), "{out}");
    }
    assert!(!out.contains("cpu2/online"), "{out}");
    assert_eq!(online(t.path(), 1), "1");
    assert!(!journal(t.path()).exists());
}

#[test]
fn off_offlines_siblings_through_cpu_online_and_restore_puts_them_back() {
    let t = tree();
    let out = stdout(smtlab(t.path(), &["smt", "off"]));
    assert!(out.contains("through cpuN/online"), "{out}");
    assert!(out.contains("undo with `smtlab smt restore"), "{out}");
    assert!(
        out.contains("done: online 0,2, smt/control notsupported, one thread per core"),
        "{out}"
    );
    assert_eq!(
        [1, 2, 3].map(|c| online(t.path(), c)),
        ["0", "1", "0"],
        "siblings 1 and 3 offline, 2 stays"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(journal(t.path())).unwrap()).unwrap();
    assert_eq!(j["online"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(j["command"], "off");

    // Status places the offline siblings in their cores from the journal.
    let v: serde_json::Value =
        serde_json::from_str(&stdout(smtlab(t.path(), &["smt", "status", "--json"]))).unwrap();
    assert_eq!(v["threads_per_core"], 1);
    assert_eq!(v["cores"][0]["offline"], serde_json::json!([1]));
    assert_eq!(v["cores"][1]["offline"], serde_json::json!([3]));
    assert_eq!(v["journal"]["online"], serde_json::json!([0, 1, 2, 3]));

    // A second `off` has nothing to switch and keeps the journal.
    let out = stdout(smtlab(t.path(), &["smt", "off"]));
    assert!(out.contains("nothing to switch"), "{out}");
    assert!(journal(t.path()).exists());

    let out = stdout(smtlab(t.path(), &["smt", "restore"]));
    assert!(
        out.contains("restored online 0-3; journal removed"),
        "{out}"
    );
    assert_eq!([1, 2, 3].map(|c| online(t.path(), c)), ["1", "1", "1"]);
    assert!(!journal(t.path()).exists());
    let out = stdout(smtlab(t.path(), &["smt", "restore"]));
    assert!(out.contains("nothing to restore"), "{out}");
}

#[test]
fn on_brings_every_cpu_back_and_drops_the_journal_it_matches() {
    let t = tree();
    stdout(smtlab(t.path(), &["smt", "off"]));
    let out = stdout(smtlab(t.path(), &["smt", "on"]));
    assert!(out.contains("CPUs 1,3 come online"), "{out}");
    assert!(out.contains("journal removed"), "{out}");
    assert_eq!([1, 2, 3].map(|c| online(t.path(), c)), ["1", "1", "1"]);
    assert!(!journal(t.path()).exists());
}

#[test]
fn restore_puts_back_a_cpu_that_was_offline_before_on() {
    let t = tree();
    std::fs::write(t.path().join("sys/devices/system/cpu/cpu3/online"), "0\n").unwrap();
    stdout(smtlab(t.path(), &["smt", "on"]));
    assert_eq!(online(t.path(), 3), "1");
    assert!(journal(t.path()).exists(), "the state before differs: kept");
    stdout(smtlab(t.path(), &["smt", "restore"]));
    assert_eq!(online(t.path(), 3), "0", "back to how it was before smtlab");
}

#[test]
fn pinned_processes_are_listed_and_need_force() {
    let t = tree();
    pinned_process(t.path(), 4242, "pinned-worker", "3");
    pinned_process(t.path(), 4243, "spread", "0-3");
    let o = smtlab(t.path(), &["smt", "off"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(out.contains("pid 4242 (pinned-worker)"), "{out}");
    assert!(!out.contains("4243"), "{out}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(online(t.path(), 3), "1", "nothing changed");
    assert!(!journal(t.path()).exists(), "no journal without a change");
    stdout(smtlab(t.path(), &["smt", "off", "--force"]));
    assert_eq!(online(t.path(), 3), "0");
    stdout(smtlab(t.path(), &["smt", "restore"]));
}

/// Starts `smt off` pausing `delay` after the journal and each write.
fn slow_off(root: &Path, delay: &str) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"))
        .args(["smt", "off", "--step-delay", delay, "--sysfs-root"])
        .arg(root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn sigkill_right_after_the_journal_then_restore() {
    let t = tree();
    let mut child = slow_off(t.path(), "10s");
    wait_for("the journal", || journal(t.path()).exists());
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(online(t.path(), 1), "1", "killed before the first write");
    let out = stdout(smtlab(t.path(), &["smt", "restore"]));
    assert!(out.contains("already in the recorded state"), "{out}");
    assert!(!journal(t.path()).exists());
}

#[test]
fn sigkill_midway_then_restore() {
    let t = tree();
    let mut child = slow_off(t.path(), "10s");
    wait_for("the first write", || online(t.path(), 1) == "0");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(online(t.path(), 3), "1", "killed before the second write");
    let v: serde_json::Value =
        serde_json::from_str(&stdout(smtlab(t.path(), &["smt", "status", "--json"]))).unwrap();
    assert_eq!(v["journal"]["writer_running"], false);
    let out = stdout(smtlab(t.path(), &["smt", "restore"]));
    assert!(out.contains("echo 1 > "), "{out}");
    assert!(out.contains("cpu1/online"), "{out}");
    assert_eq!([1, 2, 3].map(|c| online(t.path(), c)), ["1", "1", "1"]);
    assert!(!journal(t.path()).exists());
}

#[test]
fn ctrl_c_midway_undoes_the_change() {
    let t = tree();
    let child = slow_off(t.path(), "10s");
    wait_for("the first write", || online(t.path(), 1) == "0");
    // SAFETY: kill on a child we own.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(
        out.contains("interrupted: putting back the journal's state"),
        "{out}"
    );
    assert_eq!([1, 2, 3].map(|c| online(t.path(), c)), ["1", "1", "1"]);
    assert!(!journal(t.path()).exists());
}

#[test]
fn a_journal_from_an_earlier_boot_restores_nothing() {
    let t = tree();
    stdout(smtlab(t.path(), &["smt", "off"]));
    std::fs::write(t.path().join("proc/sys/kernel/random/boot_id"), "boot-2\n").unwrap();
    let out = stdout(smtlab(t.path(), &["smt", "restore"]));
    assert!(out.contains("earlier boot"), "{out}");
    assert_eq!(online(t.path(), 1), "0", "left alone");
    assert!(!journal(t.path()).exists());
}

#[test]
fn a_user_who_may_not_write_gets_exit_4_and_nothing_changes() {
    use std::os::unix::fs::PermissionsExt;
    let t = tree();
    for c in 1..4 {
        let f = t
            .path()
            .join(format!("sys/devices/system/cpu/cpu{c}/online"));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("smtlab"));
    cmd.args(["smt", "off", "--sysfs-root"]).arg(t.path());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Root may write anything: run as nobody.
        use std::os::unix::process::CommandExt;
        cmd.uid(65534).gid(65534);
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("sudo smtlab smt off"), "{err}");
    assert_eq!(online(t.path(), 1), "1");
    assert!(!journal(t.path()).exists());
}

#[test]
fn bad_method_is_bad_input() {
    let t = tree();
    let o = smtlab(t.path(), &["smt", "off", "--method", "sideways"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("auto, control or cpu-online"), "{err}");
    // The control cannot switch in this tree: not possible here (3).
    smtlab(t.path(), &["smt", "off", "--method", "control"])
        .assert()
        .code(3);
}

/// A journal that does not parse is neither applied, overwritten nor deleted: `smt status`
/// only reports it; `restore` (and `off`, `on`) renames it aside with a timestamp and names
/// it, exit 2, changing nothing.
#[test]
fn a_broken_journal_is_never_overwritten() {
    let t = tree();
    std::fs::create_dir_all(t.path().join("run/smtlab")).unwrap();
    std::fs::write(journal(t.path()), "{ half").unwrap();
    smtlab(t.path(), &["smt", "status"]).assert().code(2);
    assert!(journal(t.path()).exists(), "status changes nothing");
    let o = smtlab(t.path(), &["smt", "restore"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is not JSON") && err.contains("is kept as"),
        "{err}"
    );
    let kept: Vec<PathBuf> = std::fs::read_dir(t.path().join("run/smtlab"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("smt-journal.json.invalid-"))
        .collect();
    assert_eq!(kept.len(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(&kept[0]).unwrap(), "{ half");
    assert!(!journal(t.path()).exists());
    assert_eq!(online(t.path(), 1), "1");
}

/// On this machine: read-only commands and a dry run, never a real switch.
#[test]
fn this_machine_status_and_a_dry_run() {
    let live = |args: &[&str]| {
        let mut c = Command::cargo_bin("smtlab").unwrap();
        c.args(args);
        stdout(c)
    };
    let v: serde_json::Value = serde_json::from_str(&live(&["smt", "status", "--json"])).unwrap();
    let out = live(&["smt", "off", "--dry-run"]);
    if v["control"] == "notsupported" && v["threads_per_core"] == 1 {
        assert!(out.contains("notsupported"), "{out}");
        assert!(out.contains("nothing to switch"), "{out}");
    } else {
        eprintln!(
            "this machine has SMT ({}): dry run printed\n{out}",
            v["control"]
        );
    }
}

#[test]
fn a_closed_terminal_midway_still_undoes_the_change() {
    let t = tree();
    let mut child = slow_off(t.path(), "10s");
    wait_for("the first write", || online(t.path(), 1) == "0");
    // The terminal goes away: its output is gone, then SIGHUP.
    drop(child.stdout.take());
    drop(child.stderr.take());
    // SAFETY: kill on a child we own.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!([1, 2, 3].map(|c| online(t.path(), c)), ["1", "1", "1"]);
    assert!(!journal(t.path()).exists());
}

/// AMD family 15h (Opteron 6276): the kernel lists each CMT module's two integer cores as
/// thread siblings, so `smt off` planned to take 32 of the 64 cores offline as "SMT off".
/// There is no SMT to switch: refused (exit 3) with the reason, and nothing is planned.
#[test]
fn smt_off_on_bulldozer_cmt_modules_is_refused_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = crate::common::cmt_dump(tmp.path()) else {
        return;
    };
    let out = smtlab(&root, &["smt", "off", "--dry-run"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stdout.contains("echo 0"), "{stdout}");
    assert!(stderr.contains("CMT module"), "{stderr}");
    assert!(stderr.contains("integer cores"), "{stderr}");
    assert!(!journal(&root).exists());
    // `status` names them too.
    let s = crate::common::stdout_of(&mut smtlab(&root, &["smt", "status"]));
    assert!(s.contains("CMT module"), "{s}");
}

/// Puts a FIFO at `path` (replacing what is there).
fn plant_fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Puts a link to /dev/zero (a file that never ends) at `path`.
fn plant_zero(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

/// A path in the tree and what to plant there.
type Planting = (String, fn(&Path));

#[test]
fn fifos_and_endless_files_in_the_tree_never_hang_smt_or_top() {
    let cpu = "sys/devices/system/cpu";
    let cases: Vec<Planting> = vec![
        (format!("{cpu}/smt/control"), plant_fifo),
        ("proc/cmdline".into(), plant_fifo),
        ("proc/sys/kernel/random/boot_id".into(), plant_fifo),
        ("proc/77/task/77/status".into(), plant_fifo),
        (
            format!("{cpu}/cpu1/topology/thread_siblings_list"),
            plant_fifo,
        ),
        (format!("{cpu}/vulnerabilities/mds"), plant_zero),
        (format!("{cpu}/smt/control"), plant_zero),
        ("proc/cmdline".into(), plant_zero),
    ];
    for (rel, plant) in &cases {
        let t = tree();
        pinned_process(t.path(), 77, "db", "0-3");
        plant(&t.path().join(rel));
        for args in [&["smt", "status"][..], &["smt", "off", "--dry-run"][..]] {
            let t0 = Instant::now();
            let o = smtlab(t.path(), args)
                .timeout(Duration::from_secs(30))
                .output()
                .unwrap();
            let took = t0.elapsed();
            // Ended by itself (a timeout kills it: no exit code), in far less than that.
            assert!(
                o.status.code().is_some() && took < Duration::from_secs(20),
                "{args:?} with {rel} planted: {:?} after {took:?}; stderr: {}",
                o.status,
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    // top reads /proc/stat and the tasks' stat files of the tree.
    for plant in [plant_fifo as fn(&Path), plant_zero] {
        let t = tree();
        plant(&t.path().join("proc/stat"));
        let t0 = Instant::now();
        let o = smtlab(t.path(), &["top", "--once"])
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        assert!(
            o.status.code().is_some() && t0.elapsed() < Duration::from_secs(20),
            "top: {:?}; stderr: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// An empty `smt/control` (a FIFO reads as empty at once, and so does an empty file) is
/// no kernel's: the kernel always writes one word (on, off, forceoff, notsupported,
/// notimplemented) or a number. Refused, naming the file (exit 2); it was read as a control
/// of "" and `smt status` went on (exit 0).
#[test]
fn an_empty_smt_control_is_refused_naming_the_file() {
    let rel = "sys/devices/system/cpu/smt/control";
    let empty = |p: &Path| {
        let _ = std::fs::remove_file(p);
        std::fs::write(p, "\n").unwrap();
    };
    for plant in [plant_fifo as fn(&Path), empty] {
        let t = tree();
        plant(&t.path().join(rel));
        for args in [&["smt", "status"][..], &["smt", "off", "--dry-run"][..]] {
            let o = smtlab(t.path(), args)
                .timeout(Duration::from_secs(30))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("smt/control") && err.contains("empty"),
                "{args:?}: {err}"
            );
        }
    }
}

/// Every regular file under `root`, relative to it.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                dirs.push(e.path());
            } else if t.is_file() {
                out.push(e.path().strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Each file of the tree in turn replaced by a FIFO and by a link to /dev/zero: `smt
/// status`, `smt off --dry-run` and `top --once` end by themselves at once (an exit code,
/// well under 10 s, less than 1 MiB printed) — no reader blocks on the FIFO or reads the
/// endless file to its end.
#[test]
fn every_file_of_the_tree_as_a_fifo_or_dev_zero_is_refused_at_once() {
    let base = tree();
    pinned_process(base.path(), 77, "db", "0-3");
    let rels = files_under(base.path());
    assert!(rels.len() >= 20, "{rels:?}");
    let mut failures = Vec::new();
    for rel in &rels {
        for (kind, plant) in [("FIFO", plant_fifo as fn(&Path)), ("/dev/zero", plant_zero)] {
            let t = tree();
            pinned_process(t.path(), 77, "db", "0-3");
            plant(&t.path().join(rel));
            for args in [
                &["smt", "status"][..],
                &["smt", "off", "--dry-run"][..],
                &["top", "--once"][..],
            ] {
                let t0 = Instant::now();
                let o = smtlab(t.path(), args)
                    .timeout(Duration::from_secs(30))
                    .output()
                    .unwrap();
                let took = t0.elapsed();
                if o.status.code().is_none()
                    || took > Duration::from_secs(10)
                    || o.stdout.len() + o.stderr.len() > 1 << 20
                {
                    failures.push(format!(
                        "{} as {kind}, {args:?}: {:?} after {took:?}, {} bytes out",
                        rel.display(),
                        o.status,
                        o.stdout.len() + o.stderr.len()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn restore_dry_run_leaves_an_invalid_journal_where_it_is() {
    let t = tree();
    let j = journal(t.path());
    std::fs::create_dir_all(j.parent().unwrap()).unwrap();
    std::fs::write(&j, "{ not json").unwrap();
    let o = smtlab(t.path(), &["smt", "restore", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&j).unwrap(), "{ not json");
    let names: Vec<String> = std::fs::read_dir(j.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["smt-journal.json"], "a dry run renames nothing");
}
