//! `smtlab mem`: `report` on synthetic procfs/sysfs trees written by the test (each
//! overcommit mode, a tree with files missing, JSON shape) and on this machine; `pages`
//! on a small working set (structure only, never speed), sizes refused with the number,
//! and `--reserve` leaving `vm.nr_hugepages` as it found it (as root only).

use assert_cmd::Command;
use smtlab::mem::fixture::{self, Machine};

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").unwrap()
}

fn tree(m: &Machine) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    fixture::tree(m).write_to(t.path()).unwrap();
    t
}

fn text_of(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).expect("stdout is UTF-8")
}

fn json_of(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.assert().success().get_output().stdout.clone();
    serde_json::from_slice(&out).expect("stdout is JSON")
}

#[test]
fn report_reads_each_overcommit_mode_from_a_tree() {
    for (mode, name, word) in [
        (0, "heuristic", "advisory"),
        (1, "always", "no limit"),
        (2, "strict", "fail"),
    ] {
        let t = tree(&Machine {
            overcommit_memory: mode,
            ..Machine::default()
        });
        let v = json_of(
            smtlab()
                .args(["mem", "report", "--json", "--sysfs-root"])
                .arg(t.path()),
        );
        assert_eq!(v["overcommit"]["mode"], name);
        assert_eq!(v["overcommit"]["commit_limit_bytes"], 10u64 << 30);
        assert_eq!(v["overcommit"]["headroom_bytes"], 4u64 << 30);
        assert!(
            v["overcommit"]["meaning"].as_str().unwrap().contains(word),
            "{mode}: {}",
            v["overcommit"]["meaning"]
        );
        assert_eq!(v["oom"]["top"][0]["name"], "java");
        assert_eq!(v["hugetlb"]["sizes"].as_array().unwrap().len(), 2);
        let text = text_of(
            smtlab()
                .args(["mem", "report", "--sysfs-root"])
                .arg(t.path()),
        );
        assert!(
            text.contains(&format!("{name} (vm.overcommit_memory = {mode})")),
            "{text}"
        );
        assert!(text.contains("Findings"));
    }
}

#[test]
fn report_on_a_tree_with_files_missing_names_them() {
    let mut f = fixture::tree(&Machine::default());
    f.remove("sys/kernel/mm/transparent_hugepage")
        .remove("proc/sys/vm/overcommit_ratio");
    let t = tempfile::tempdir().unwrap();
    f.write_to(t.path()).unwrap();
    let text = text_of(
        smtlab()
            .args(["mem", "report", "--sysfs-root"])
            .arg(t.path()),
    );
    assert!(
        text.contains("not available: /sys/kernel/mm/transparent_hugepage/enabled missing"),
        "{text}"
    );
    assert!(text.contains("not available: /proc/sys/vm/overcommit_ratio missing"));
    let v = json_of(
        smtlab()
            .args(["mem", "report", "--json", "--sysfs-root"])
            .arg(t.path()),
    );
    assert!(v["thp"]["enabled"].is_null());
    assert!(v["overcommit"]["ratio_percent"].is_null());

    // An empty root: a report of what is not there, exit 0.
    let empty = tempfile::tempdir().unwrap();
    let text = text_of(
        smtlab()
            .args(["mem", "report", "--sysfs-root"])
            .arg(empty.path()),
    );
    assert!(
        text.contains("not available: /proc/meminfo missing"),
        "{text}"
    );
}

#[test]
fn report_refuses_a_root_that_is_not_a_directory() {
    let out = smtlab()
        .args(["mem", "report", "--sysfs-root", "/nonexistent/x"])
        .assert()
        .code(2)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8_lossy(&out);
    assert!(
        err.contains("--sysfs-root /nonexistent/x: not a directory"),
        "{err}"
    );
}

#[test]
fn report_on_this_machine_has_every_section() {
    let text = text_of(smtlab().args(["mem", "report"]));
    for section in [
        "Overcommit",
        "Memory and page cache",
        "Swap",
        "Transparent huge pages",
        "Hugetlb pages",
        "Reclaim and NUMA",
        "This process's memory cgroup",
        "OOM killer",
        "Findings",
    ] {
        assert!(text.contains(section), "no {section} in\n{text}");
    }
    let v = json_of(smtlab().args(["mem", "report", "--json"]));
    assert!(
        v["memory"]["total_bytes"].as_u64().unwrap_or(0) > 0
            || v["memory"]["total_bytes"].is_null()
    );
}
