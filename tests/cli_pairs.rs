//! `smtlab pairs`: a short real run with a command and two rulers (behaviour only: the
//! JSON's shape, the partner named as what it is, the profiles file written and read
//! back), a crafted profiles file driving the advice with no measurement at all (a floor no
//! placement meets: exit 3; another version: exit 2), and the refusals before any run.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use smtlab::experiments::pairs::model::{
    MachineKey, PROFILES_FORMAT, PROFILES_VERSION, Partner, PartnerKind, ProfilesFile,
};
use smtlab::stats::{Comparison, Thresholds};
use std::path::Path;

use crate::common;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

/// The partner `--partner auto` picks here, and this machine's key.
fn here() -> (PartnerKind, MachineKey) {
    let t = smtlab::topology::discover(Path::new("/")).unwrap();
    let kind = if t.threads_per_core() > 1 {
        PartnerKind::SmtSiblings
    } else {
        PartnerKind::SharedCache
    };
    (kind, smtlab::experiments::pairs::run::machine_key(&t))
}

/// A profiles file for rulers int and l1 on this machine: int loses half beside int,
/// l1 a little beside anything.
fn crafted(version: &str) -> ProfilesFile {
    let c =
        |x: f64| Comparison::of_paired_ratios(&[x * 0.99, x, x * 1.01], Thresholds::SLOWDOWN, 0.9);
    let (kind, machine) = here();
    ProfilesFile {
        format: PROFILES_FORMAT.into(),
        profiles_version: PROFILES_VERSION,
        smtlab_version: version.into(),
        machine,
        partner: Partner {
            kind,
            cpus: [0, 1],
            asked: "auto".into(),
            label: kind.label().into(),
        },
        rulers: vec!["int".into(), "l1".into()],
        duration_ns: 1_000_000_000,
        rounds: 3,
        ruler_pairs: vec![vec![c(0.5), c(0.9)], vec![c(0.95), c(0.9)]],
        profiles: Vec::new(),
    }
}

#[test]
fn a_floor_no_placement_meets_is_refused_from_profiles_alone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.json");
    std::fs::write(
        &f,
        serde_json::to_vec(&crafted(env!("CARGO_PKG_VERSION"))).unwrap(),
    )
    .unwrap();
    let base = [
        "pairs",
        "--workloads",
        "int,l1",
        "--rulers",
        "int,l1",
        "--measure",
        "none",
    ];
    // As many int threads as CPUs must share, and int keeps about half beside int.
    let cpus = smtlab::topology::discover(Path::new("/"))
        .unwrap()
        .allowed()
        .len();
    smtlab()
        .args(base)
        .arg("--profiles")
        .arg(&f)
        .args(["--advise", &format!("int={cpus}"), "--floor", "int=0.9"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("no placement meets the floors"))
        .stderr(predicate::str::contains("int keeps at best"));
    // Without the floor the same profiles give an answer, and nothing was measured.
    let text = common::stdout_of(smtlab().args(base).arg("--profiles").arg(&f).args([
        "--advise",
        "int=1,l1=1",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["profiles_from"].is_string());
    assert_eq!(v["pairs"].as_array().unwrap().len(), 4);
    let p = &v["pairs"][0];
    assert_eq!(p["a"], "int");
    assert_eq!(p["b"], "int");
    assert!(p["predicted"]["estimate"].as_f64().unwrap() < 0.8, "{p}");
    assert!(v["advice"]["verdict"].is_string());
    // A file from another version is refused (exit 2).
    std::fs::write(&f, serde_json::to_vec(&crafted("0.0.1")).unwrap()).unwrap();
    smtlab()
        .args(base)
        .arg("--profiles")
        .arg(&f)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("measured by smtlab 0.0.1"));
}

#[test]
fn a_short_real_run_with_a_command_saves_profiles_that_a_second_run_reuses() {
    let _heavy = common::cpu_heavy();
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("profiles.json");
    let csv = dir.path().join("pairs.csv");
    let text = common::stdout_of(
        smtlab()
            .args([
                "pairs",
                "--workloads",
                "int",
                "--rulers",
                "int,l1,l2",
                "--cmd",
                "nap=sleep 0.3",
                "--repeat",
                "2",
                "-d",
                "100ms",
                "--warmup",
                "50ms",
                "--measure",
                "all",
                "--json",
            ])
            .arg("--save-profiles")
            .arg(&saved)
            .arg("--export-csv")
            .arg(&csv),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let label = v["partner"]["label"].as_str().unwrap();
    let kind = here().0;
    assert_eq!(label, kind.label());
    assert_eq!(v["rulers"].as_array().unwrap().len(), 3);
    // int and nap: 4 ordered pairs, nap beside nap measured by the check.
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 4);
    let nap = pairs
        .iter()
        .find(|p| p["a"] == "nap" && p["b"] == "nap")
        .unwrap();
    assert!(nap["measured"]["estimate"].as_f64().unwrap() > 0.0, "{nap}");
    // A sleeping command loses nothing measurable beside a ruler.
    let profile = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["workload"] == "nap")
        .unwrap();
    assert_eq!(profile["kind"], "command");
    assert!(saved.is_file() && csv.is_file());
    // The second run reads nap's profile and the rulers' pairs: no profile run of nap.
    let out = smtlab()
        .args([
            "pairs",
            "--workloads=",
            "--rulers",
            "int,l1,l2",
            "--cmd",
            "nap=sleep 0.3",
            "--measure",
            "none",
            "--repeat",
            "2",
        ])
        .arg("--profiles")
        .arg(&saved)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("profile ["), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Profiles read from"), "{stdout}");
    // Another command under the same name is refused.
    smtlab()
        .args([
            "pairs",
            "--workloads=",
            "--rulers",
            "int,l1,l2",
            "--cmd",
            "nap=sleep 0.2",
            "--measure",
            "none",
        ])
        .arg("--profiles")
        .arg(&saved)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("workload `nap` there is"));
}

#[test]
fn a_sysbench_memory_command_is_read_in_mib_per_second() {
    let _heavy = common::cpu_heavy();
    // What `sysbench memory` prints for its rate (sysbench 1.0.20), with no `events per
    // second:` line.
    let text = common::stdout_of(smtlab().args([
        "pairs",
        "--workloads=",
        "--rulers",
        "int,l1,l2",
        "--cmd",
        "mem=sleep 0.3; echo 'Total operations: 1048576 (5930647.83 per second)'; \
         echo '1024.00 MiB transferred (5791.65 MiB/sec)'",
        "--metric",
        "mem=sysbench",
        "--repeat",
        "2",
        "-d",
        "100ms",
        "--warmup",
        "50ms",
        "--measure",
        "none",
        "--json",
    ]));
    let v: Value = serde_json::from_str(&text).unwrap();
    let mem = v["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["workload"] == "mem")
        .unwrap()
        .clone();
    assert_eq!(mem["unit"], "MiB/s", "{mem}");
    assert_eq!(mem["alone_per_sec"].as_f64(), Some(5791.65), "{mem}");
}

#[test]
fn refusals_name_the_bad_value_before_any_run() {
    for (args, has) in [
        (
            &["pairs", "--partner", "core"][..],
            "valid: auto, sibling, same-l3, cpus:A,B",
        ),
        (
            &["pairs", "--measure", "some"][..],
            "valid: held-out, all, none",
        ),
        (&["pairs", "--rulers", "int,int"][..], "listed twice"),
        (
            &["pairs", "--cmd", "noequals"][..],
            "expected NAME='COMMAND",
        ),
        (
            &["pairs", "--advise", "x=1"][..],
            "not a workload of this run",
        ),
        (
            &["pairs", "--metric", "y=sysbench"][..],
            "no --cmd is named `y`",
        ),
        (
            &["pairs", "--repeat", "1"][..],
            "--repeat 1: pairs needs at least 2 rounds",
        ),
    ] {
        smtlab()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(has));
    }
    smtlab()
        .args(["pairs", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--advise").and(predicate::str::contains("--floor")));
}
