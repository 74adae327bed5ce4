//! Event counters end to end: the engine's per-thread counters against the kernel's own
//! per-thread clocks, and `lockscan` / `compare` JSON with software events counted and
//! hardware events either counted or null with a reason. Whether this machine has a
//! hardware PMU is read from /sys/bus/event_source/devices, never assumed; the hardware
//! checks print why they were skipped where it has none.

use assert_cmd::Command;
use smtlab::cpuset::CpuSet;
use smtlab::engine::{self, RunSpec, ThreadCtx, Workload};
use smtlab::placement::{Plan, ThreadPlacement};
use std::time::Duration;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

/// The CPU PMUs this machine shows; empty without hardware counters.
fn pmus() -> Vec<String> {
    std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| smtlab::counters::reason::is_cpu_pmu(n))
                .collect()
        })
        .unwrap_or_default()
}

const SOFTWARE: [&str; 4] = [
    "task_clock_ns",
    "context_switches",
    "cpu_migrations",
    "page_faults",
];
const HARDWARE: [(&str, &str); 7] = [
    ("cycles", "cycles"),
    ("instructions", "instructions"),
    ("ref_cycles", "ref-cycles"),
    ("stalled_cycles_frontend", "stalled-cycles-frontend"),
    ("stalled_cycles_backend", "stalled-cycles-backend"),
    ("llc_load_misses", "LLC-load-misses"),
    ("branch_misses", "branch-misses"),
];

/// Software events counted in `counts`; every hardware event either counted or null
/// with a reason in `status` (the report's `counters`), and, without a PMU, that reason
/// is the missing PMU.
fn check(counts: &serde_json::Value, status: &serde_json::Value) {
    for f in SOFTWARE {
        assert!(counts[f].is_u64(), "{f} not counted: {counts}");
    }
    let unavailable = status["unavailable"].as_array().expect("a list");
    let reason = |event: &str| {
        unavailable
            .iter()
            .find(|u| u["event"] == event)
            .and_then(|u| u["reason"].as_str())
            .map(String::from)
    };
    let no_pmu = pmus().is_empty();
    for (field, event) in HARDWARE {
        if counts[field].is_null() {
            let r = reason(event).unwrap_or_else(|| panic!("{event} null without a reason"));
            if no_pmu {
                assert!(r.contains("no hardware PMU"), "{event}: {r}");
            }
        } else {
            assert!(!no_pmu, "{event} counted without a PMU: {counts}");
            assert!(
                reason(event).is_none(),
                "{event} counted and listed as unavailable"
            );
        }
    }
    if no_pmu {
        assert!(counts["ipc"].is_null() && counts["cpi"].is_null());
        crate::common::skip(
            crate::common::Need::Machine,
            "the hardware counter checks: no hardware PMU (/sys/bus/event_source/devices has no `cpu`)",
        );
    } else if counts["cycles"].is_u64() && counts["instructions"].is_u64() {
        assert!(counts["ipc"].as_f64().unwrap() > 0.0, "{counts}");
    }
}

/// Sleeps 1 ms at a time: a context switch per sleep, little CPU.
struct Napper;

impl Workload for Napper {
    fn name(&self) -> String {
        "napper".into()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        while !ctx.should_stop() {
            // Some work between naps, so task-clock has something to count.
            let mut x = 0u64;
            for i in 0..20_000u64 {
                x = x.wrapping_add(std::hint::black_box(i));
            }
            std::hint::black_box(x);
            std::thread::sleep(Duration::from_millis(1));
            ctx.add_progress(1);
        }
    }
}

#[test]
fn engine_threads_count_their_own_measured_window() {
    let cpus = smtlab::affinity::process_affinity().unwrap().to_vec();
    let plan = Plan {
        request: "test".into(),
        threads: (0..2)
            .map(|i| ThreadPlacement {
                thread: i,
                cpus: CpuSet::from_cpus([cpus[i % cpus.len()]]),
            })
            .collect(),
        oversubscribed: false,
        notes: vec![],
        scope: None,
    };
    // A warm-up three times the window, so a count that included it would be far outside
    // the margins below, which are wide because a loaded CI host preempts these threads
    // between the counters' and the clocks' reads.
    let spec = RunSpec::new(Duration::from_millis(900), Duration::from_millis(300)).unwrap();
    let r = engine::run(&plan, &spec, &Napper).unwrap();
    for t in &r.threads {
        let c = &t.counters.as_ref().expect("counters on by default").counts;
        // The kernel's other per-thread clocks over (nearly) the same window.
        let tc = c.task_clock_ns.unwrap() as f64;
        let cpu = t.cpu_time_ns as f64;
        assert!(
            (tc - cpu).abs() <= 0.5 * cpu + 5e6,
            "task-clock {tc} vs CLOCK_THREAD_CPUTIME_ID {cpu}"
        );
        let cs = c.context_switches.unwrap() as f64;
        let ru = (t.voluntary_ctx_switches + t.involuntary_ctx_switches) as f64;
        assert!(cs >= 10.0, "a 1 ms nap loop switches: {cs}");
        assert!(
            (cs - ru).abs() <= 0.25 * ru + 10.0,
            "context switches {cs} vs getrusage {ru}"
        );
        // The warm-up (900 ms of 1 ms naps, 900+ switches) is not in the count: a 300 ms
        // window of naps has about 300, plus what preemption adds under load.
        assert!(
            cs <= 2.0 * 300.0,
            "{cs} switches in a 300 ms window of 1 ms naps"
        );
    }
    let st = r.counter_status().unwrap();
    if pmus().is_empty() {
        assert!(st.hardware_missing());
    }
    // Off: nothing opened, nothing reported.
    let off = spec.with_counters(smtlab::counters::Mode::Off);
    let r = engine::run(&plan, &off, &Napper).unwrap();
    assert!(r.threads.iter().all(|t| t.counters.is_none()));
    assert!(r.counter_status().is_none());
}

fn lockscan_json(extra: &[&str]) -> serde_json::Value {
    let out = smtlab()
        .args(["lockscan", "--duration", "300ms", "--interval", "100ms"])
        .args(["--warmup", "0", "--repeat", "1", "--json"])
        .args(extra)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

#[test]
fn lockscan_reports_counters_per_thread() {
    let r = lockscan_json(&[]);
    let status = &r["counters"];
    assert_eq!(status["mode"], "all");
    for s in r["results"].as_array().unwrap() {
        for t in s["threads"].as_array().unwrap() {
            check(&t["counters"], status);
        }
        if pmus().is_empty() {
            assert_eq!(s["core_cpi"], serde_json::json!([]));
        }
    }
    // Software only: hardware events null with that reason, whatever the machine.
    let r = lockscan_json(&["--counters", "software", "--no-baseline"]);
    let u = r["counters"]["unavailable"].as_array().unwrap();
    assert_eq!(u.len(), 7, "{u:?}");
    assert!(
        u.iter()
            .all(|u| u["reason"] == "not counted (`--counters software`)")
    );
    let t = &r["results"][0]["threads"][0]["counters"];
    assert!(t["task_clock_ns"].is_u64() && t["cycles"].is_null());
    // Off: no counters anywhere.
    let r = lockscan_json(&["--counters", "off", "--no-baseline"]);
    assert!(r["counters"].is_null());
    assert!(r["results"][0]["threads"][0]["counters"].is_null());
}

#[test]
fn lockscan_text_says_why_hardware_counters_are_missing() {
    let out = smtlab()
        .args(["lockscan", "--duration", "200ms", "--interval", "100ms"])
        .args(["--warmup", "0", "--repeat", "1", "--no-baseline"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("counters (median run):"), "{text}");
    assert!(
        text.contains("TASK-CLOCK") && text.contains("MIGRATIONS"),
        "{text}"
    );
    if pmus().is_empty() {
        assert!(
            text.contains("counters: hardware counters not measured: no hardware PMU"),
            "{text}"
        );
        assert!(!text.contains("IPC"), "{text}");
    }
}

#[test]
fn compare_counts_each_runs_process_tree() {
    let cpu = smtlab::affinity::process_affinity().unwrap().to_vec()[0];
    let out = smtlab()
        .args([
            "compare",
            "--cpus",
            &cpu.to_string(),
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .args(["--json", "--", "sh", "-c"])
        // A child burning CPU beside the shell: the tree, not only the shell.
        .arg("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done & wait")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let r: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let status = &r["counters"];
    assert_eq!(status["mode"], "all");
    let p = &r["placements"][0];
    for run in p["runs"].as_array().unwrap() {
        let c = &run["counters"];
        check(c, status);
        // task-clock covers what wait4 saw of the tree: user + system time, within the
        // tick granularity of rusage.
        let tc = c["task_clock_ns"].as_u64().unwrap() as f64;
        let ru = (run["user_time_ns"].as_u64().unwrap() + run["system_time_ns"].as_u64().unwrap())
            as f64;
        assert!(
            tc > 1e6,
            "20,000 shell iterations take more than 1 ms: {tc}"
        );
        assert!(
            (tc - ru).abs() <= 0.25 * ru + 20e6,
            "task-clock {tc} vs rusage {ru}"
        );
    }
    assert!(
        p["counters"]["task_clock_ns"].is_u64(),
        "the placement's median"
    );
}

fn json_of(args: &[&str]) -> serde_json::Value {
    let out = smtlab()
        .args(args)
        .args(["--warmup", "0", "--repeat", "1", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// A thread's task-clock cannot exceed the wall time it ran: `threads` × `window`, with
/// room for start-up and the kernel's accounting granularity.
fn within_cpu_budget(counts: &serde_json::Value, threads: u64, window_ns: u64) {
    let tc = counts["task_clock_ns"].as_u64().unwrap();
    assert!(tc > 0, "nothing counted: {counts}");
    assert!(
        tc <= threads * window_ns * 3 / 2 + 50_000_000,
        "task-clock {tc} ns for {threads} threads over {window_ns} ns: {counts}"
    );
}

#[test]
fn neighbors_counts_the_workers_of_every_step() {
    let r = json_of(&["neighbors", "--burners", "0,1", "-d", "300ms"]);
    let status = &r["counters"];
    assert_eq!(status["mode"], "all");
    let steps = r["steps"].as_array().unwrap();
    assert!(!steps.is_empty());
    for s in steps {
        let c = &s["worker_counters"];
        check(c, status);
        within_cpu_budget(
            c,
            s["workers"].as_u64().unwrap(),
            s["measured_ns"].as_u64().unwrap(),
        );
    }
    let off = json_of(&[
        "neighbors",
        "--burners",
        "0",
        "-d",
        "200ms",
        "--counters",
        "off",
    ]);
    assert!(off["counters"].is_null());
    assert!(off["steps"][0]["worker_counters"].is_null());
}

#[test]
fn rwcache_counts_each_scheme_run() {
    let r = json_of(&["rwcache", "-t", "2", "-d", "300ms"]);
    let status = &r["counters"];
    assert_eq!(status["mode"], "all");
    let results = r["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for s in results {
        check(&s["counters"], status);
        within_cpu_budget(&s["counters"], 2, 300_000_000);
    }
    let sw = json_of(&[
        "rwcache",
        "-t",
        "2",
        "-d",
        "200ms",
        "--counters",
        "software",
    ]);
    let c = &sw["results"][0]["counters"];
    assert!(c["task_clock_ns"].is_u64() && c["cycles"].is_null(), "{c}");
    assert!(
        sw["counters"]["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["reason"] == "not counted (`--counters software`)")
    );
}

#[test]
fn oltp_counts_each_insert_thread() {
    let r = json_of(&["oltp", "-t", "2", "-d", "300ms"]);
    let status = &r["counters"];
    assert_eq!(status["mode"], "all");
    let runs = r["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for run in runs {
        let threads = run["per_thread"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "one entry per insert thread: {run}");
        for t in threads {
            check(&t["counters"], status);
            within_cpu_budget(&t["counters"], 1, 300_000_000);
        }
    }
}
