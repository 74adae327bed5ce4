//! `smtlab c2c` end to end: output shapes and bad input. Short runs (few samples).

use assert_cmd::Command;
use predicates::prelude::*;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").unwrap()
}

fn usable_cpus() -> Vec<u32> {
    smtlab::affinity::process_affinity().unwrap().to_vec()
}

#[test]
fn text_matrix_and_ceiling() {
    if usable_cpus().len() < 2 {
        crate::common::skip(crate::common::Need::Machine, "needs 2 usable CPUs");
        return;
    }
    smtlab()
        .args(["c2c", "--samples", "20", "--round-trips", "100"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "20 samples × 100 round trips per pair",
        ))
        .stdout(predicate::str::contains("CPU"))
        .stdout(predicate::str::contains(
            "Ceiling on contended lock handoffs",
        ))
        .stdout(predicate::str::contains("K=2"));
}

#[test]
fn json_has_every_pair_and_a_square_matrix() {
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        crate::common::skip(crate::common::Need::Machine, "needs 2 usable CPUs");
        return;
    }
    // At most 4 CPUs keeps the test short on big machines.
    let list: Vec<String> = cpus.iter().take(4).map(u32::to_string).collect();
    let n = list.len();
    let out = smtlab()
        .args(["c2c", "--samples", "15", "--round-trips", "100", "--json"])
        .args(["--cpus", &list.join(",")])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let j: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(j["pairs"].as_array().unwrap().len(), n * (n - 1) / 2);
    assert_eq!(j["matrix_ns"].as_array().unwrap().len(), n);
    for p in j["pairs"].as_array().unwrap() {
        let m = p["latency_ns"]["median"].as_f64().unwrap();
        assert!(m > 0.0 && m < 1e6, "{m}");
        assert_eq!(p["latency_ns"]["n"], 15);
    }
    let c = &j["classes"][0]["ceiling"];
    assert!(
        c["k1_handoffs_per_sec"].as_f64().unwrap() > c["k2_handoffs_per_sec"].as_f64().unwrap()
    );
    assert_eq!(j["interrupted"], false);
}

#[test]
fn one_cpu_given_is_bad_input_and_one_cpu_usable_is_not_possible() {
    let first = usable_cpus()[0].to_string();
    // One CPU on the command line is the user's input: exit 2.
    smtlab()
        .args(["c2c", "--cpus", &first])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("at least 2 CPUs"));
    // One usable CPU (an affinity mask of one) is the machine: exit 3.
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    Command::new("taskset")
        .args(["-c", &first])
        .arg(bin)
        .arg("c2c")
        .assert()
        .code(3)
        .stderr(predicate::str::contains("is usable here"));
}

#[test]
fn bad_input_exits_2() {
    smtlab()
        .args(["c2c", "--cpus", "0,4095"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("4095"))
        .stderr(predicate::str::contains("not usable"));
    smtlab()
        .args(["c2c", "--samples", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--samples"));
    smtlab()
        .args(["c2c", "--round-trips", "0"])
        .assert()
        .code(2);
    smtlab()
        .args(["c2c", "--cpus", "zero"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("zero"));
    smtlab()
        .args(["c2c", "--budget", "soon"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--budget"))
        .stderr(predicate::str::contains("soon"));
}

#[test]
fn a_budget_takes_fewer_samples_first() {
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        crate::common::skip(crate::common::Need::Machine, "needs 2 usable CPUs");
        return;
    }
    let list = format!("{},{}", cpus[0], cpus[1]);
    // One pair at 300 samples is estimated at 120 ms; 10 ms leaves the floor of 31.
    let out = smtlab()
        .args(["c2c", "--cpus", &list, "--budget", "10ms", "--json"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "--budget 10 ms: 31 samples per pair",
        ))
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["samples"], 31);
    assert_eq!(
        v["left_out"],
        serde_json::json!([]),
        "two CPUs given, none left out"
    );
    assert_eq!(v["pairs"].as_array().unwrap().len(), 1);
}

#[test]
fn other_work_on_a_measured_cpu_is_reported() {
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        crate::common::skip(crate::common::Need::Machine, "needs 2 usable CPUs");
        return;
    }
    let busy_cpu = cpus[1];
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    // Another process's work, as far as the child smtlab can tell: a spinning thread here.
    let spinner = std::thread::spawn(move || {
        smtlab::affinity::set_affinity(0, &smtlab::cpuset::CpuSet::from_cpus([busy_cpu])).unwrap();
        while !s.load(std::sync::atomic::Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    let list = format!("{},{}", cpus[0], busy_cpu);
    let out = smtlab()
        .args([
            "c2c",
            "--cpus",
            &list,
            "--samples",
            "5",
            "--round-trips",
            "100",
        ])
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    spinner.join().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("other work was running on CPU") && err.contains(&format!("CPU {busy_cpu} ")),
        "{err}"
    );
}
