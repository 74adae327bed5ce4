//! `smtlab topo` and `smtlab plan` as a user runs them: on this machine, on a dump, and with
//! bad input (one `Error:` line on stderr, the exit code README documents, never a panic).

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").unwrap()
}

fn this_machine_online() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn under_hypervisor() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| {
        t.lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

fn this_machine_has_smt() -> bool {
    smtlab::topology::discover(Path::new("/")).is_ok_and(|t| t.threads_per_core() > 1)
}

/// Runs `smtlab ARGS`, expects failure with `code`, and returns stderr after checking it is
/// one line starting `Error:` and no panic.
fn fails(args: &[&str], code: i32) -> String {
    let out = smtlab().args(args).assert().code(code).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("Error: "), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line: {err}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
    err
}

/// A small sysfs tree: 4 cores × 2 threads, siblings (i, i+4), one L3.
fn small_tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let w = |rel: &str, s: &str| {
        let p = d.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, format!("{s}\n")).unwrap();
    };
    w("sys/devices/system/cpu/online", "0-7");
    w("sys/devices/system/cpu/smt/control", "on");
    for cpu in 0..8 {
        let c = cpu % 4;
        let t = format!("sys/devices/system/cpu/cpu{cpu}");
        w(
            &format!("{t}/topology/core_cpus_list"),
            &format!("{c},{}", c + 4),
        );
        w(&format!("{t}/topology/package_cpus_list"), "0-7");
        w(&format!("{t}/topology/physical_package_id"), "0");
        w(&format!("{t}/topology/core_id"), &c.to_string());
        w(&format!("{t}/cache/index3/level"), "3");
        w(&format!("{t}/cache/index3/type"), "Unified");
        w(&format!("{t}/cache/index3/size"), "8192K");
        w(&format!("{t}/cache/index3/shared_cpu_list"), "0-7");
    }
    d
}

use crate::common;
use common::smt_dump as ht_dump;

#[test]
fn topo_on_this_machine() {
    let out = smtlab().arg("topo").assert().success().get_output().clone();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("CPUs online"), "{text}");
    if this_machine_online() == "0-1" {
        // A 2-vCPU guest that shows no SMT siblings: two cores, one L3.
        assert!(text.contains("2 CPUs online, 2 cores"), "{text}");
        let l3_lines = text
            .lines()
            .filter(|l| l.trim_start().starts_with("L3 "))
            .count();
        assert_eq!(l3_lines, 1, "one L3:\n{text}");
        assert!(
            text.contains("no SMT siblings visible: 1 thread per core"),
            "{text}"
        );
    }
    assert_eq!(
        text.contains("virtual machine: the reported topology may not match the host"),
        under_hypervisor(),
        "{text}"
    );
    // Two sentences, not two glued with a semicolon.
    assert!(!text.contains("host; running under a hypervisor"), "{text}");
}

#[test]
fn topo_cpus_has_a_row_per_cpu() {
    let out = smtlab()
        .args(["topo", "--cpus"])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("CPU") && header.contains("SIBLINGS"),
        "{header}"
    );
    let topo = smtlab::topology::discover(Path::new("/")).unwrap();
    assert_eq!(
        lines.filter(|l| !l.trim().is_empty()).count(),
        topo.cpus.len()
    );
}

#[test]
fn topo_json_on_this_machine() {
    let out = smtlab()
        .args(["topo", "--json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert!(v["cores"].is_array() && v["online_cpus"].is_array());
    assert!(
        v["numa_nodes"][0].is_array(),
        "numa_nodes is a partition of CPU lists"
    );
    assert!(v["smt"]["sentence"].is_string());
}

#[test]
fn plan_on_a_two_thread_per_core_dump() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = ht_dump(tmp.path()) else {
        return;
    };
    let topo = smtlab::topology::discover(&root).unwrap();
    assert_eq!(topo.threads_per_core(), 2);
    let plan = |req: &str| -> Vec<u32> {
        let out = smtlab()
            .args([
                "plan",
                req,
                "--threads",
                "6",
                "--json",
                "--within",
                "machine",
            ])
            .arg("--sysfs-root")
            .arg(&root)
            .assert()
            .success()
            .get_output()
            .clone();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 6);
        threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                assert_eq!(t["thread"], i);
                let cpus = t["cpus"].as_array().unwrap();
                assert_eq!(cpus.len(), 1, "one CPU per thread");
                cpus[0].as_u64().unwrap() as u32
            })
            .collect()
    };
    let pairs = plan("pairs");
    assert_eq!(pairs.iter().collect::<BTreeSet<_>>().len(), 6, "6 CPUs");
    let cores: BTreeSet<_> = pairs.iter().map(|&c| topo.core_of(c)).collect();
    assert_eq!(cores.len(), 3, "3 cores");
    for core in &cores {
        assert_eq!(core.len(), 2);
        assert!(
            core.iter().all(|c| pairs.contains(&c)),
            "both siblings of {core}"
        );
    }
    let one = plan("one-per-core");
    let cores: BTreeSet<_> = one.iter().map(|&c| topo.core_of(c)).collect();
    assert_eq!(cores.len(), 6, "6 distinct cores");

    // The human view says the same.
    let text = common::stdout_of(
        smtlab()
            .args(["plan", "pairs", "--threads", "6", "--within", "machine"])
            .arg("--sysfs-root")
            .arg(&root),
    );
    assert!(text.contains("6 threads on 6 CPUs of 3 cores"), "{text}");
    assert!(text.contains("within the whole machine"), "{text}");

    // By default the comparison layouts stay in one package: package 0 has two cores, {0,8} and
    // {4,12}, so 6 threads one per core do not fit, and the message says how to widen.
    smtlab()
        .args(["plan", "one-per-core", "--threads", "6", "--sysfs-root"])
        .arg(&root)
        .assert()
        .code(3)
        .stderr(predicates::str::contains("package 0"))
        .stderr(predicates::str::contains("--within machine"));
    let text = common::stdout_of(
        smtlab()
            .args(["plan", "pairs", "--threads", "4", "--sysfs-root"])
            .arg(&root),
    );
    assert!(
        text.contains("within package 0 (CPUs 0,4,8,12; one of 4 such units"),
        "{text}"
    );
    for cpu in ["0", "8", "4", "12"] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().nth(1) == Some(cpu)),
            "{text}"
        );
    }
}

#[test]
fn plan_on_a_synthetic_tree() {
    let t = small_tree();
    let out = smtlab()
        .args([
            "plan",
            "siblings-of",
            "1",
            "--threads",
            "1",
            "--json",
            "--sysfs-root",
        ])
        .arg(t.path())
        .assert()
        .success()
        .get_output()
        .clone();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["threads"][0]["cpus"], serde_json::json!([5]));
}

#[test]
fn pairs_without_smt_fails_clearly() {
    if this_machine_has_smt() {
        crate::common::skip(
            crate::common::Need::Machine,
            "this machine has SMT siblings",
        );
        return;
    }
    let err = fails(&["plan", "pairs", "--threads", "2"], 3);
    assert!(err.contains("needs SMT siblings"), "{err}");
    assert!(
        err.contains("one-per-core"),
        "says what to use instead: {err}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let err = fails(&["topo", "--sysfs-root", "/nonexistent"], 2);
    assert!(err.contains("/nonexistent"), "{err}");
    let err = fails(
        &[
            "plan",
            "os",
            "--threads",
            "1",
            "--sysfs-root",
            "/nonexistent",
        ],
        2,
    );
    assert!(err.contains("does not exist"), "{err}");

    // A tree with garbage in `online`.
    let t = small_tree();
    std::fs::write(
        t.path().join("sys/devices/system/cpu/online"),
        "0-7,banana\n\0",
    )
    .unwrap();
    let root = t.path().to_str().unwrap();
    let err = fails(&["topo", "--sysfs-root", root], 2);
    assert!(err.contains("online") && err.contains("banana"), "{err}");
    fails(&["topo", "--json", "--sysfs-root", root], 2);

    for (list, says) in [
        ("0-", "has no end"),
        ("3-1", "runs backwards"),
        ("0xZZ", "not a hex digit"),
    ] {
        let err = fails(&["plan", &format!("cpus:{list}"), "--threads", "1"], 2);
        assert!(err.contains(says), "{list}: {err}");
        let err = fails(&["plan", "cpus", list, "--threads", "1"], 2);
        assert!(err.contains(says), "{list}: {err}");
    }
    let err = fails(&["plan", "cpus:99", "--threads", "1"], 2);
    assert!(err.contains("99") && err.contains("only"), "{err}");
    let err = fails(&["plan", "bogus", "--threads", "1"], 2);
    assert!(err.contains("one-per-core"), "lists valid requests: {err}");
    fails(&["plan", "os", "--threads", "0"], 2);
}
