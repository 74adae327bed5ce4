//! CLI tests of the experiments built on the engine: `lockscan` and `neighbors`.
//! Real runs are short and assert behaviour with wide margins, never speed.

use assert_cmd::Command;
use predicates::prelude::*;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

use crate::common;
use common::smt_dump;

/// This machine's topology, so that tests hold on any machine, with or without SMT.
fn this_machine() -> smtlab::topology::Topology {
    smtlab::topology::discover(std::path::Path::new("/")).expect("this machine's topology")
}

#[test]
fn lockscan_sweep_dry_run_puts_the_scanner_on_each_sibling() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = smt_dump(tmp.path()) else {
        return;
    };
    let text = common::stdout_of(
        smtlab()
            .args(["lockscan", "--sweep", "--dry-run", "--sysfs-root"])
            .arg(&root),
    );
    // 4 packages × 2 cores, siblings i and i+8; package 0 holds cores {0,8} and {4,12}.
    // By default the sweep stays in package 0: lock threads on 0 and 4, the scanner on
    // 8 and then on 12.
    assert!(
        text.contains("sweep within package 0 (CPUs 0,4,8,12"),
        "{text}"
    );
    for (sib, of) in [(8, 0), (12, 4)] {
        assert!(
            text.contains(&format!("scanner on {sib} (sibling of {of})")),
            "{text}"
        );
    }
    assert!(!text.contains("scanner on 9 "), "{text}");
    assert!(text.contains("yes (SMT sibling)"), "{text}");
    // --within machine: every core's sibling in turn, lock threads on 0-7.
    let text = common::stdout_of(
        smtlab()
            .args(["lockscan", "--sweep", "--dry-run", "--within", "machine"])
            .arg("--sysfs-root")
            .arg(&root),
    );
    for sib in 8..16 {
        assert!(
            text.contains(&format!("scanner on {sib} (sibling of {})", sib - 8)),
            "{text}"
        );
    }
}

#[test]
fn a_live_run_refuses_another_machines_sysfs_root() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = smt_dump(tmp.path()) else {
        return;
    };
    for args in [
        vec!["lockscan", "--sweep", "-d", "100ms"],
        vec!["neighbors", "--burners", "0", "-d", "100ms"],
        vec!["rwcache", "--threads", "1", "-d", "100ms"],
        vec!["oltp", "--rows-per-thread", "10"],
    ] {
        smtlab()
            .args(&args)
            .arg("--sysfs-root")
            .arg(&root)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("--sysfs-root"))
            .stderr(predicate::str::contains("for reading only"));
    }
    // `/` is this machine: allowed.
    smtlab()
        .args(["lockscan", "-d", "100ms", "--warmup", "0", "--repeat", "1"])
        .args(["--no-baseline", "--sysfs-root", "/"])
        .assert()
        .success();
}

#[test]
fn lockscan_decimal_masks_print_interval_rows_and_a_summary() {
    smtlab()
        .args([
            "lockscan",
            "-l1",
            "-s2",
            "--duration",
            "300ms",
            "--interval",
            "100ms",
            "--warmup",
            "0",
            "--repeat",
            "2",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("Thread Id = 0, CPU = 0, Locked ="))
        .stdout(predicate::str::contains("CPU = 1, scan passes ="))
        .stdout(predicate::str::contains("Verdict:"))
        .stdout(predicate::str::contains("SPINS/ACQ"));
}

/// Runs a short lockscan (200 ms, one repetition) with `args` and `--json`; returns the
/// parsed report and stderr.
fn lockscan_json(args: &[&str]) -> (serde_json::Value, String) {
    let out = smtlab()
        .arg("lockscan")
        .args(args)
        .args([
            "--duration",
            "200ms",
            "--interval",
            "100ms",
            "--warmup",
            "0",
            "--repeat",
            "1",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn lockscan_json_has_threads_and_verdict() {
    let (v, stderr) = lockscan_json(&[
        "--lock-cpus",
        "0,1",
        "--scan-cpus",
        "1",
        "--lock",
        "ticket,mutex",
    ]);
    assert!(stderr.contains("overlap"), "{stderr}");
    let results = v["results"].as_array().unwrap();
    // baseline + explicit, for two locks.
    assert_eq!(results.len(), 4);
    let t = &results[1]["threads"][0];
    for k in [
        "cpu",
        "locked",
        "spins",
        "share_of_acquisitions",
        "handoffs_received",
    ] {
        assert!(t.get(k).is_some(), "missing {k} in {t}");
    }
    assert!(v["verdict"].is_array());
    // The lock thread on the scanner's CPU is compared with itself in the baseline run of
    // the same round: one round, one ratio, no interval. A round whose run or baseline was
    // disturbed while it ran (under `cargo test`'s parallel load, another test takes the
    // CPUs) is left out with its reason and run again, at most once more here.
    let ticket = results
        .iter()
        .find(|r| r["lock"] == "ticket" && r["scenario"]["label"] == "explicit")
        .unwrap();
    let mut disturbed: Vec<u64> = ticket["disturbed_rounds"]
        .as_array()
        .map(|d| {
            d.iter()
                .inspect(|x| assert!(x["why"].as_str().is_some_and(|w| !w.is_empty()), "{x}"))
                .map(|x| x["round"].as_u64().unwrap())
                .collect()
        })
        .unwrap_or_default();
    disturbed.sort_unstable();
    disturbed.dedup();
    let runs = ticket["runs"].as_u64().unwrap();
    let kept = runs - disturbed.len() as u64;
    assert_eq!(
        ticket["sharing_ratios"].as_array().unwrap().len() as u64,
        kept,
        "{ticket}"
    );
    if kept > 0 {
        let own = &ticket["sharing_vs_own_baseline"];
        assert_eq!(
            (own["n"].as_u64(), own["effect"].as_str()),
            (Some(kept), Some("inconclusive")),
            "{own}"
        );
        assert!(
            v["verdict"]
                .to_string()
                .contains("own rate in the same round without a scanner"),
            "{}",
            v["verdict"]
        );
    }
    assert_eq!(v["smt"], this_machine().threads_per_core() > 1);
    assert_eq!(v["lock_stats"], "counters");
    // Two lock CPUs: each result's handoffs are set against its own measured ceiling.
    for r in results {
        let lat = r["c2c_latency_ns"].as_f64().expect("c2c measured");
        assert!(lat > 0.0, "{r}");
        let share = r["handoffs_share_of_ceiling"].as_f64().expect("share");
        let expect = r["handoffs_per_sec"].as_f64().unwrap() * lat / 1e9;
        assert!(
            (share - expect).abs() <= 1e-9 * expect.max(1.0),
            "{share} vs {expect}"
        );
    }
}

#[test]
fn lockscan_stats_off_runs_the_bare_lock_and_says_what_is_missing() {
    let (v, stderr) = lockscan_json(&["--lock-cpus", "0,1", "--lock-stats", "off"]);
    // Interval rows (on stderr under --json) show what was counted, no made-up spins.
    assert!(stderr.contains("Locked = "), "{stderr}");
    assert!(!stderr.contains("Spin ="), "{stderr}");
    assert_eq!(v["lock_stats"], "off");
    let r = &v["results"][0];
    assert!(r["handoffs_per_sec"].is_null(), "{r}");
    assert!(r["handoffs_share_of_ceiling"].is_null(), "{r}");
    // The ceiling is still measured, for context.
    assert!(r["c2c_latency_ns"].as_f64().is_some_and(|l| l > 0.0), "{r}");
    let mut locked = 0;
    for t in r["threads"].as_array().unwrap() {
        if t["role"] == "lock" {
            // Acquisitions still counted (by the workload); lock internals not. A thread
            // starved by the unfair lock on a loaded machine may show none: the workload
            // counts in batches of 64, and the last partial one falls after the window.
            locked += t["locked"].as_u64().unwrap();
            for k in [
                "spins",
                "spins_per_acquire",
                "handoffs_received",
                "handoffs_by_proximity",
            ] {
                assert!(t[k].is_null(), "{k}: {t}");
            }
        }
    }
    assert!(locked > 0, "{r}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("lock stats off"), "{notes}");
}

#[test]
fn lockscan_scan_bytes_auto_streams_past_the_l2() {
    let topo = this_machine();
    let want = smtlab::experiments::lockscan::auto_scan_bytes(&topo);
    // Lock thread and scanner share CPU 0, which every machine has.
    let (v, _) = lockscan_json(&[
        "--lock-cpus",
        "0",
        "--scan-cpus",
        "0",
        "--scan-bytes",
        "auto",
        "--no-baseline",
    ]);
    assert_eq!(v["scan_bytes"].as_u64(), Some(want.bytes as u64), "{v}");
    match v["scan_l2_bytes"].as_u64() {
        Some(l2) => assert!(v["scan_bytes"].as_u64().unwrap() > l2, "{v}"),
        // No L2 size here: the stated default, and a note saying so.
        None => {
            assert_eq!(
                want.bytes,
                smtlab::experiments::lockscan::AUTO_FALLBACK_BYTES
            );
            assert!(v["notes"].to_string().contains("no L2 size"), "{v}");
        }
    }
    // Without a baseline no thread is compared with itself, and the verdict says why.
    assert!(v["results"][0]["sharing_vs_own_baseline"].is_null(), "{v}");
}

#[test]
fn lockscan_bad_input_is_a_clear_error() {
    for (args, needle) in [
        (vec!["--scan-bytes", "0"], "--scan-bytes"),
        (vec!["--lock", "bogus"], "bogus"),
        (vec!["--lock-cpus", "999"], "999"),
        (vec!["-l", "0"], "selects no CPU"),
        (vec!["--lock-cpus", "3-1"], "backwards"),
        (vec!["--scan-bytes", "lots"], "lots"),
        (
            vec!["--lock-stats", "some"],
            "unknown mode `some`; expected off or counters",
        ),
        (vec!["--lock-stats", "full"], "expected off or counters"),
    ] {
        smtlab()
            .arg("lockscan")
            .args(&args)
            .args(["--duration", "100ms"])
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("Error:"))
            .stderr(predicate::str::contains(needle))
            .stderr(predicate::str::contains("panicked").not());
    }
}

#[test]
fn neighbors_dry_run_puts_burners_on_worker_siblings() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = smt_dump(tmp.path()) else {
        return;
    };
    smtlab()
        .args([
            "neighbors",
            "--workers",
            "2",
            "--placement",
            "cpus:0,1",
            "--burners",
            "2",
            "--burner-placement",
            "siblings",
            "--dry-run",
            "--sysfs-root",
        ])
        .arg(&root)
        .assert()
        .success()
        .stdout(predicate::str::contains("burner 0 on CPUs 8"))
        .stdout(predicate::str::contains("burner 1 on CPUs 9"));
}

#[test]
fn sibling_burners_need_workers_with_a_free_sibling() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = smt_dump(tmp.path()) else {
        return;
    };
    for (placement, needle) in [
        // Unpinned workers have no sibling to aim at.
        ("os", "needs pinned workers"),
        // `pairs` workers fill both siblings of their cores.
        ("pairs", "siblings-of never places a thread on a listed CPU"),
    ] {
        smtlab()
            .args(["neighbors", "--workers", "2", "--placement", placement])
            .args(["--burners", "0,1", "--burner-placement", "siblings"])
            .args(["--dry-run", "--sysfs-root"])
            .arg(&root)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
}

#[test]
fn neighbors_siblings_are_skipped_without_smt() {
    let topo = this_machine();
    if topo.threads_per_core() > 1 {
        // Here CPU 0 has a sibling: the burner goes there, never on CPU 0 itself.
        let sib = topo.core_of(0).iter().find(|&c| c != 0).unwrap();
        smtlab()
            .args(["neighbors", "--workers", "1", "--placement", "cpus:0"])
            .args([
                "--burners",
                "1",
                "--burner-placement",
                "siblings",
                "--dry-run",
            ])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("burner 0 on CPUs {sib}")));
        return;
    }
    smtlab()
        .args([
            "neighbors",
            "--workers",
            "1",
            "--placement",
            "cpus:0",
            "--burners",
            "1",
            "--burner-placement",
            "siblings",
            "--dry-run",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("skipped"))
        .stdout(predicate::str::contains("SMT"));
}

#[test]
fn neighbors_oversubscribed_ticket_lock_is_diagnosed() {
    // Two more workers than usable CPUs, whatever this machine has.
    let workers = this_machine().allowed().len() + 2;
    let out = smtlab()
        .args([
            "neighbors",
            "--lock",
            "ticket",
            "--workers",
            &workers.to_string(),
            "--burners",
            "0",
            "--duration",
            "500ms",
            "--warmup",
            "100ms",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let step = &v["steps"][0];
    assert_eq!(step["runnable_threads"], workers);
    // More waiters than CPUs: never `none`, whatever the exact rate on a loaded machine.
    assert_ne!(step["diagnosis"], "none", "{step}");
    assert!(v["reference"].is_object(), "a 2-worker reference run: {v}");
    assert!(step["reason"].as_str().unwrap().contains("runnable on"));
}

/// `neighbors --lock ticket --workers 1 --burners 0,1 --repeat 2` plus `extra`.
fn neighbors_two_rounds(extra: &[&str]) -> Vec<u8> {
    smtlab()
        .args([
            "neighbors",
            "--lock",
            "ticket",
            "--workers",
            "1",
            "--burners",
            "0,1",
            "--repeat",
            "2",
            "--duration",
            "100ms",
            "--warmup",
            "0",
        ])
        .args(extra)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

#[test]
fn neighbors_repeat_runs_rounds_and_pairs_each_step_with_its_rounds_first() {
    let v: serde_json::Value = serde_json::from_slice(&neighbors_two_rounds(&["--json"])).unwrap();
    assert_eq!(v["repeat"], 2);
    // Rounds interleave the steps: 0 and 1 burners, then both again.
    let order: Vec<(u64, u64)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["round"].as_u64().unwrap(), s["burners"].as_u64().unwrap()))
        .collect();
    assert_eq!(order, [(0, 0), (0, 1), (1, 0), (1, 1)], "{v}");
    for s in v["steps"].as_array().unwrap() {
        if s["burners"] == 0 {
            assert_eq!(s["ratio_to_first"], 1.0, "each round's own first step: {s}");
        }
    }
    let summary = v["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2, "{v}");
    for s in summary {
        let c = &s["ratio"];
        assert_eq!(
            (c["n"].as_u64(), c["indicative"].as_bool()),
            (Some(2), Some(true)),
            "{s}"
        );
    }
    let text = String::from_utf8(neighbors_two_rounds(&[])).unwrap();
    assert!(text.contains("; 2 rounds"), "{text}");
    assert!(text.contains("Over 2 rounds"), "{text}");
    assert!(text.contains("indicative (n = 2)"), "{text}");
}

#[test]
fn neighbors_bad_input() {
    for (args, needle) in [
        (vec!["--workers", "0"], "--workers"),
        (
            vec!["--repeat", "0"],
            "--repeat 0: expected a whole number between 1 and",
        ),
        (vec!["--burners", "1,x"], "`x`"),
        (vec!["--burner-kind", "nope"], "nope"),
        (vec!["--burner-placement", "moon"], "moon"),
        (vec!["--workload", "tea"], "tea"),
    ] {
        smtlab()
            .arg("neighbors")
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
}
