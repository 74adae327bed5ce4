//! smtlab's SMT code paths on a real Linux kernel with SMT siblings: one QEMU guest per
//! topology (see `tests/guest/mod.rs`), every command of a topology in one boot.
//!
//! In each guest: `topo --json` matches the declared topology; every placement request the
//! topology supports pins where `plan` says (burners report the CPUs they were seen on);
//! requests that need siblings fail with exit 3 where there are none. The 1 × 2 × 2 guest
//! also runs every experiment end to end, and the study takes its SMT branch. Timing in
//! these guests is emulated: nothing about them asserts speed.
//!
//! Two known-answer machines are the exception: guests whose vCPU threads are pinned to
//! host CPUs, so their SMT is a physical fact (perfect SMT: siblings on separate host CPUs;
//! zero-yield SMT: siblings on one host CPU). There `yield`, `pairs` (predictions beside
//! measured pairs, and the advice), the quick study's yield phase, c2c and answer table
//! are checked against the truth, each boot with nothing else
//! of this binary running ([`guest::exclusive`]) and judged only when the rest of the host
//! was quiet. `SMTLAB_GUEST_REPEAT=N` boots each N times and counts passes and failures.
//!
//! Needs qemu-system-x86, busybox-static, cpio and a kernel (`tests/guest/fetch-kernel.sh`);
//! skipped with the reason without them, unless `SMTLAB_REQUIRE_GUESTS=1` (CI).

mod guest;
#[path = "common/skip.rs"]
mod skip;

use guest::{GuestCommand, GuestRun, Shape, VcpuPins, cmd, run_guest};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// A JSON array of CPU numbers as a set.
fn cpus(v: &Value) -> BTreeSet<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a CPU list: {v}"))
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}

/// A JSON partition (array of CPU lists).
fn partition(v: &Value) -> Vec<Vec<u64>> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a partition: {v}"))
        .iter()
        .map(|s| cpus(s).into_iter().collect())
        .collect()
}

/// Consecutive chunks of `size` CPUs out of `0..n`: how QEMU numbers threads, cores,
/// packages and (as declared here) NUMA nodes.
fn chunks(n: u32, size: u32) -> Vec<Vec<u64>> {
    (0..n / size)
        .map(|k| ((k * size) as u64..((k + 1) * size) as u64).collect())
        .collect()
}

/// The placement requests a shape supports, with a thread count each, and the burners
/// that count makes (`all` runs every sibling of its cores).
fn requests(s: Shape) -> Vec<(String, u32, u32)> {
    let mut v = vec![
        ("one-per-core".to_string(), s.cores, s.cores),
        ("all".into(), s.cores, s.cores * s.threads),
        (
            "spread".into(),
            s.cores * s.threads + 1,
            s.cores * s.threads + 1,
        ),
        ("cpus:0,2".into(), 2, 2),
        ("os".into(), 2, 2),
    ];
    if s.cores >= 2 {
        v.push(("same-l3".into(), 2, 2));
    }
    if s.sockets >= 2 {
        v.push(("other-package".into(), 2, 2));
    }
    if s.threads >= 2 {
        v.push(("pairs".into(), 2, 2));
        v.push(("same-core".into(), s.threads, s.threads));
        v.push(("siblings-of:0".into(), 1, 1));
    }
    v
}

/// Commands every guest runs: the topology, then `plan` and a short pinned `burn` for each
/// request, and the sibling requests that must fail without SMT.
fn common_commands(s: Shape) -> Vec<GuestCommand> {
    let mut v = vec![cmd("topo", "smtlab topo --json")];
    for (req, t, _) in requests(s) {
        v.push(cmd(
            format!("plan {req}"),
            format!("smtlab plan {req} --threads {t} --json"),
        ));
        v.push(cmd(
            format!("burn {req}"),
            format!("smtlab burn -k int -t {t} --placement {req} -d 200ms --warmup 0 --json"),
        ));
    }
    if s.threads == 1 {
        for req in ["pairs", "same-core", "siblings-of:0"] {
            v.push(cmd(
                format!("no-smt {req}"),
                format!("smtlab plan {req} --threads 2"),
            ));
        }
    }
    v
}

/// Checks what every guest must show.
fn check_common(s: Shape, run: &GuestRun) {
    let topo = run.cmd("topo").ok().json();
    let n = s.cpus();
    assert_eq!(
        cpus(&topo["online_cpus"]),
        (0..n as u64).collect(),
        "{topo}"
    );
    assert_eq!(partition(&topo["cores"]), chunks(n, s.threads), "cores");
    assert_eq!(
        partition(&topo["packages"]),
        chunks(n, s.cores * s.threads),
        "packages"
    );
    let nodes = s.numa_nodes.max(1);
    assert_eq!(
        partition(&topo["numa_nodes"]),
        chunks(n, n / nodes),
        "NUMA nodes"
    );
    assert_eq!(
        topo["machine"]["smt_control"].as_str(),
        Some(if s.threads > 1 { "on" } else { "notsupported" }),
        "smt/control"
    );

    for (req, t, burners) in requests(s) {
        let plan = run.cmd(&format!("plan {req}")).ok().json();
        let threads = plan["threads"].as_array().unwrap();
        assert_eq!(threads.len() as u32, burners, "plan {req}: {plan}");
        let burn = run.cmd(&format!("burn {req}")).ok().json();
        let rows = burn["burners"].as_array().unwrap();
        assert_eq!(rows.len() as u32, burners, "burn {req}: {burn}");
        for (p, b) in threads.iter().zip(rows) {
            let planned = cpus(&p["cpus"]);
            assert_eq!(cpus(&b["cpus"]), planned, "burn {req} pinned as planned");
            let seen = cpus(&b["observed_cpus"]);
            assert!(
                !seen.is_empty() && seen.is_subset(&planned),
                "burn {req} (t={t}): burner seen on {seen:?}, pinned to {planned:?}"
            );
        }
        // The comparison layouts stay in one package.
        if [
            "one-per-core",
            "all",
            "spread",
            "pairs",
            "same-core",
            "same-l3",
        ]
        .contains(&req.as_str())
        {
            let per_pkg = (s.cores * s.threads) as u64;
            let used: BTreeSet<u64> = threads.iter().flat_map(|t| cpus(&t["cpus"])).collect();
            let pkgs: BTreeSet<u64> = used.iter().map(|c| c / per_pkg).collect();
            assert_eq!(pkgs.len(), 1, "{req} spans packages: {used:?}");
        }
    }
    if s.threads == 1 {
        for req in ["pairs", "same-core", "siblings-of:0"] {
            let o = run.cmd(&format!("no-smt {req}"));
            o.expect_code(3);
            assert!(o.stderr.contains("SMT siblings"), "{}", o.stderr);
        }
    }
}

/// Boots `s` with the common commands and `extra`, checks the common ones. The caller
/// holds `host` for the whole test.
fn guest(
    host: &guest::Shared,
    s: Shape,
    extra: Vec<GuestCommand>,
    files: &[&str],
    limit: Duration,
) -> Option<GuestRun> {
    let p = guest::prereqs_or_skip()?;
    let mut cmds = common_commands(s);
    cmds.extend(extra);
    let run = run_guest(host, &p, s, &cmds, files, limit);
    eprintln!("guest {s}: {} commands in {:.1?}", cmds.len(), run.wall);
    check_common(s, &run);
    Some(run)
}

/// Counters attach to each worker thread, not to the process or another thread: the
/// guest has no PMU under TCG, but its kernel counts software events, and each thread's
/// task-clock is its own CPU time over the window (cpu_share × the duration, from
/// CLOCK_THREAD_CPUTIME_ID), within margins wide enough for TCG's slow clocks.
fn check_thread_counters(ls: &Value) {
    let status = &ls["counters"];
    assert_eq!(status["mode"], "all", "{status}");
    let reasons = status["unavailable"].as_array().unwrap();
    let duration = ls["duration_ns"].as_f64().unwrap();
    for r in ls["results"].as_array().unwrap() {
        for t in r["threads"].as_array().unwrap() {
            let c = &t["counters"];
            for f in [
                "task_clock_ns",
                "context_switches",
                "cpu_migrations",
                "page_faults",
            ] {
                assert!(c[f].is_u64(), "{f} not counted in the guest: {t}");
            }
            let tc = c["task_clock_ns"].as_f64().unwrap();
            let cpu = t["cpu_share"].as_f64().unwrap() * duration;
            assert!(
                cpu > 0.0 && (tc - cpu).abs() <= 0.5 * cpu + 20e6,
                "thread {} on CPU {}: task-clock {tc} ns vs its CPU time {cpu} ns",
                t["thread"],
                t["cpu"]
            );
            for f in ["cycles", "instructions", "ipc"] {
                assert!(c[f].is_null(), "{f} counted without a PMU: {c}");
            }
        }
    }
    for event in ["cycles", "instructions"] {
        let why = reasons
            .iter()
            .find(|u| u["event"] == event)
            .and_then(|u| u["reason"].as_str())
            .unwrap_or_else(|| panic!("{event} null without a reason: {status}"));
        assert!(!why.is_empty(), "{status}");
        eprintln!("guest: {event} not counted: {why}");
    }
}

#[test]
fn one_package_two_cores_two_threads_runs_every_experiment() {
    let host = guest::shared();
    let s = Shape::new(1, 2, 2, 0);
    let extra = vec![
        cmd(
            "lockscan sweep",
            "smtlab lockscan --sweep --duration 300ms --warmup 0 --repeat 1 --interval 300ms --json",
        ),
        cmd(
            "neighbors siblings",
            "smtlab neighbors --placement one-per-core --workers 2 --burner-placement siblings \
             --burners 0,1,2 -d 300ms --warmup 0 --repeat 2 --json",
        ),
        cmd(
            "neighbors siblings dry",
            "smtlab neighbors --placement one-per-core --workers 2 --burner-placement siblings \
             --burners 2 --dry-run",
        ),
        cmd(
            "rwcache pairs",
            "smtlab rwcache --placement pairs --threads 2 --scheme spin,rwspin -d 300ms \
             --warmup 0 --repeat 1 --json",
        ),
        cmd(
            "oltp layouts",
            "smtlab oltp --db sqlite --configs one-per-core,pairs,all --threads 2 \
             --rows-per-thread 200 --json",
        ),
        cmd("c2c", "smtlab c2c --samples 31 --round-trips 100 --json"),
        cmd(
            "yield",
            "smtlab yield --workloads int,hot-page/ttas --duration 200ms --warmup 0 --repeat 2 \
             --json",
        ),
        cmd(
            "yield text",
            "smtlab yield --workloads int --duration 200ms --warmup 0 --repeat 2",
        ),
        cmd(
            "compare layouts",
            "smtlab compare --placements one-per-core,pairs,all --cores 2 --runs 2 --json \
             -- /bin/true",
        ),
        cmd("study", "smtlab study --quick --out /tmp/study"),
    ];
    let files = ["/tmp/study/results.json", "/tmp/study/summary.md"];
    let Some(run) = guest(&host, s, extra, &files, Duration::from_secs(600)) else {
        return;
    };

    // The sweep of SQL Server's "To Hyper or not to Hyper" test (Slava Oks, 2005): the
    // scanner on each lock thread's real sibling in turn, and each
    // thread seen on the CPU it was pinned to.
    let ls = run.cmd("lockscan sweep").ok().json();
    assert_eq!(ls["smt"], true);
    let results = ls["results"].as_array().unwrap();
    let sweeps: Vec<&Value> = results
        .iter()
        .filter(|r| {
            r["scenario"]["label"]
                .as_str()
                .unwrap()
                .starts_with("scanner on")
        })
        .collect();
    assert_eq!(sweeps.len(), 2, "one scenario per core: {ls}");
    for (r, (scan, lock)) in sweeps.iter().zip([(1u64, 0u64), (3, 2)]) {
        assert_eq!(cpus(&r["scenario"]["scan_cpus"]), BTreeSet::from([scan]));
        assert_eq!(cpus(&r["scenario"]["lock_cpus"]), BTreeSet::from([0, 2]));
        for t in r["threads"].as_array().unwrap() {
            let cpu = t["cpu"].as_u64().unwrap();
            assert_eq!(
                cpus(&t["observed_cpus"]),
                BTreeSet::from([cpu]),
                "thread ran where it was pinned: {t}"
            );
            let sibling = t["role"] == "lock" && cpu == lock;
            assert_eq!(t["shares_core_with_scanner"], sibling, "{t}");
        }
    }

    check_thread_counters(&ls);

    // Burners on the workers' siblings, never on the workers' CPUs; every step ran pinned.
    let dry = &run.cmd("neighbors siblings dry").ok().stdout;
    for line in [
        "worker 0 on CPUs 0",
        "worker 1 on CPUs 2",
        "burner 0 on CPUs 1",
        "burner 1 on CPUs 3",
    ] {
        assert!(dry.contains(line), "{dry}");
    }
    let nb = run.cmd("neighbors siblings").ok().json();
    let steps = nb["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6, "0, 1 and 2 sibling burners, 2 rounds: {nb}");
    for step in steps {
        assert_eq!(step["pinning_ok"], true, "{step}");
        // The workers have a CPU each; the burners on their siblings cannot take it.
        assert_eq!(
            (step["runnable_threads"].as_u64(), step["cpus"].as_u64()),
            (Some(2), Some(2)),
            "{step}"
        );
        // Pinned on both sides: never the unpinned "possibly".
        assert_ne!(step["diagnosis"], "possibly-smt-sharing", "{step}");
        assert_ne!(step["diagnosis"], "oversubscribed", "{step}");
        // The counters are the workers' alone: with burners on the siblings, counting
        // them too would double the task-clock past 2 workers × the window.
        let c = &step["worker_counters"];
        let tc = c["task_clock_ns"].as_f64().unwrap();
        let window = step["measured_ns"].as_f64().unwrap();
        assert!(
            tc > 0.0 && tc <= 2.0 * window * 1.4 + 50e6,
            "workers' task-clock {tc} ns over a {window} ns window: {step}"
        );
        assert!(c["cycles"].is_null(), "{c}");
    }
    let summary = nb["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 3, "{nb}");
    for s in summary {
        assert_eq!(s["ratio"]["n"], 2, "paired over both rounds: {s}");
    }

    let rw = run.cmd("rwcache pairs").ok().json();
    assert!(!rw["results"].as_array().unwrap().is_empty(), "{rw}");

    let ol = run.cmd("oltp layouts").ok().json();
    let ran: BTreeSet<&str> = ol["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["placement"].as_str().unwrap())
        .collect();
    assert_eq!(
        ran,
        BTreeSet::from(["one-per-core", "pairs", "all"]),
        "{ol}"
    );
    assert!(
        ol["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["rows_verified"] == true)
    );

    // The user's command under the three layouts of two cores: one thread per core, both
    // siblings of one core, every sibling of both; the JSON records the CPUs it was given.
    let cmp = run.cmd("compare layouts").ok().json();
    let placed: Vec<(String, BTreeSet<u64>, usize)> = cmp["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["label"].as_str().unwrap().to_string(),
                cpus(&p["cpus"]),
                p["runs"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        placed,
        [
            ("one-per-core".to_string(), BTreeSet::from([0, 2]), 2),
            ("pairs".to_string(), BTreeSet::from([0, 1]), 2),
            ("all".to_string(), BTreeSet::from([0, 1, 2, 3]), 2),
        ],
        "{cmp}"
    );
    assert_eq!(cmp["smt_yield"]["placement"], "all", "{cmp}");
    assert_eq!(cmp["pairs_slowdown"]["placement"], "pairs", "{cmp}");

    let c2c = run.cmd("c2c").ok().json();
    let rel: BTreeSet<&str> = c2c["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["proximity"].as_str().unwrap())
        .collect();
    assert!(
        rel.contains("smt-sibling"),
        "a sibling pair was measured: {rel:?}"
    );

    // yield: the three layouts ran on the same two cores, every thread inside its
    // planned CPUs, and each workload has a yield from its two rounds.
    let y = run.cmd("yield").ok().json();
    let layouts: Vec<(String, BTreeSet<u64>)> = y["plan"]["layouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["layout"].as_str().unwrap().to_string(), cpus(&l["cpus"])))
        .collect();
    assert_eq!(
        layouts,
        [
            ("one-per-core".to_string(), BTreeSet::from([0, 2])),
            ("all".to_string(), BTreeSet::from([0, 1, 2, 3])),
            ("pairs".to_string(), BTreeSet::from([0, 1])),
        ],
        "{y}"
    );
    let workloads = y["workloads"].as_array().unwrap();
    assert_eq!(workloads.len(), 2, "{y}");
    for w in workloads {
        let runs = w["runs"].as_array().unwrap();
        let ran: BTreeSet<&str> = runs.iter().map(|r| r["layout"].as_str().unwrap()).collect();
        assert_eq!(ran, BTreeSet::from(["one-per-core", "all", "pairs"]), "{w}");
        // 3 layouts × 2 rounds, and a round with a disturbed run (steal, or a thread kept
        // off its CPU: seen in this TCG guest at 95 % on-CPU, preempted 10 times) run once
        // more at the end, all 3 layouts, the disturbed run kept with its reason.
        let disturbed = runs.iter().filter(|r| !r["disturbed"].is_null()).count();
        let again = runs.len().saturating_sub(6);
        assert!(
            runs.len() >= 6 && again % 3 == 0 && again / 3 <= disturbed.min(2),
            "3 layouts × 2 rounds, plus 3 for each round run again ({disturbed} disturbed): {} runs: {w}",
            runs.len()
        );
        for r in runs {
            let seen = cpus(&r["observed_cpus"]);
            assert!(
                !seen.is_empty() && seen.is_subset(&cpus(&r["cpus"])),
                "threads seen inside their planned CPUs: {r}"
            );
            assert_eq!(r["pinning_ok"], true, "{r}");
            assert_eq!(r["synthetic"], false, "{r}");
            // The run's counters are its own threads' sum: software events counted,
            // task-clock no more than threads × the measured window (wide margins for
            // TCG's clocks), hardware events null (no PMU in the guest).
            let c = &r["counters"];
            for f in ["task_clock_ns", "context_switches", "cpu_migrations"] {
                assert!(c[f].is_u64(), "{f} not counted in the guest: {r}");
            }
            let tc = c["task_clock_ns"].as_f64().unwrap();
            let budget = r["threads"].as_f64().unwrap() * r["measured_ns"].as_f64().unwrap();
            assert!(
                tc > 0.0 && tc <= 1.5 * budget + 50e6,
                "task-clock {tc} ns for a {budget} ns thread budget: {r}"
            );
            assert!(c["cycles"].is_null() && c["ipc"].is_null(), "{c}");
        }
        assert_eq!(y["counters"]["mode"], "all", "{y}");
        let c = &w["smt_yield"]["comparison"];
        // Both rounds, or one where a disturbed round could not be made up (its rerun
        // disturbed too: yield runs again at most half the rounds).
        let n = c["n"].as_u64().unwrap_or(0);
        assert!(
            n == 2 || (n == 1 && disturbed > 0),
            "a yield from both rounds ({disturbed} runs disturbed): {w}"
        );
        if n == 2 {
            assert_eq!(c["indicative"], true, "{w}");
        }
        assert!(c["estimate"].as_f64().unwrap() > 0.0, "{w}");
        assert!(
            w["shared_core_speed"]["comparison"]["estimate"].is_number(),
            "{w}"
        );
    }
    let text = &run.cmd("yield text").ok().stdout;
    eprintln!("yield in the 1x2x2 guest:\n{text}");
    assert!(text.contains("SMT yield on the same 2 cores"), "{text}");
    // Both rounds, or one round where a disturbed run's round could not be made up, which
    // the notes then say (one CI boot: "int: 2 runs disturbed while they ran, left out of
    // the comparisons: thread 3 on CPU 3 was kept off its CPU by other work (94 % of the
    // run on a CPU, preempted 8 times)", the yield "no interval (n = 1)").
    assert!(
        text.contains("indicative (n = 2)")
            || (text.contains("no interval (n = 1)")
                && text.contains("disturbed while they ran, left out of the comparisons")),
        "{text}"
    );

    // The study took its SMT branch: sibling measurements, not "cannot be tested".
    let study = run.cmd("study").ok();
    eprintln!("study in the 1x2x2 guest:\n{}", study.stdout);
    let results: Value = serde_json::from_str(&run.file("/tmp/study/results.json")).unwrap();
    assert_eq!(results["smt"]["threads_per_core"], 2, "{}", results["smt"]);
    let summary = run.file("/tmp/study/summary.md");
    assert!(!summary.contains("cannot be tested here"), "{summary}");
    let phase = |name: &str| {
        results["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} phase: {}", results["phases"]))
    };
    assert_eq!(phase("yield")["status"], "done", "{}", phase("yield"));
    // Each workload has a yield from every round the phase planned (the study's 3, or 5
    // when each run still gets 120 ms), or says why not (in a debug build under TCG one
    // pass of a ruler can outlast a quick study's run).
    let rounds = &results["smt_yield"]["result"]["plan"]["repeat"];
    assert!(*rounds == 3 || *rounds == 5, "{rounds}");
    let yields = results["smt_yield"]["result"]["workloads"]
        .as_array()
        .unwrap();
    assert_eq!(yields.len(), 5, "{yields:?}");
    for w in yields {
        let n = &w["smt_yield"]["comparison"]["n"];
        assert!(
            n == rounds
                || w["notes"].to_string().contains("completed no operation")
                || w["notes"].to_string().contains("disturbed while"),
            "{}: a yield from {rounds} rounds or the reason there is none: {w}",
            w["workload"]
        );
    }
    assert!(
        yields
            .iter()
            .any(|w| w["smt_yield"]["comparison"]["n"] == *rounds),
        "{yields:?}"
    );
    assert!(
        results["lockscan"]["result"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["scenario"]["label"]
                .as_str()
                .unwrap()
                .contains("sibling of")),
        "the study's lockscan ran the sibling sweep"
    );
    // Each sibling scenario compares the lock thread with itself in its round's baseline,
    // and the scan streams past the scanner's L2.
    let lockscan = &results["lockscan"]["result"];
    for r in lockscan["results"].as_array().unwrap() {
        if r["scenario"]["label"]
            .as_str()
            .unwrap()
            .contains("sibling of")
        {
            assert!(r["sharing_vs_own_baseline"].is_object(), "{r}");
        }
    }
    if let Some(l2) = lockscan["scan_l2_bytes"].as_u64() {
        assert!(lockscan["scan_bytes"].as_u64().unwrap() > l2, "{lockscan}");
    }
    // neighbors ran the controlled sibling series beside the unpinned one: workers one per
    // core, 0, 1 and 2 burners on their siblings, per lock.
    let nb = &results["neighbors"];
    assert!(nb["sibling_skipped"].is_null(), "{}", nb["sibling_skipped"]);
    let series = nb["series"].as_array().unwrap();
    let sib: Vec<&Value> = series
        .iter()
        .filter(|s| s["placement"] == "sibling-burners")
        .collect();
    assert_eq!(sib.len(), 2, "one per lock: {series:?}");
    for s in &sib {
        assert_eq!(s["workers"], 2, "{s}");
        let burners: Vec<u64> = s["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|st| st["burners"].as_u64().unwrap())
            .collect();
        assert_eq!(burners, [0, 1, 2], "{s}");
    }
    for s in series.iter().filter(|s| s["placement"] == "unpinned") {
        for st in s["steps"].as_array().unwrap() {
            assert_ne!(st["diagnosis"], "smt-sharing", "unpinned: {st}");
        }
    }
    for r in nb["runs"].as_array().unwrap() {
        if r["burner_placement"] == "siblings" {
            for st in r["steps"].as_array().unwrap() {
                assert_eq!(st["pinning_ok"], true, "{st}");
            }
        }
    }
    // The answer table, as the study's summary has it, for the record.
    let table: Vec<&str> = summary
        .lines()
        .skip_while(|l| !l.starts_with("| workload class"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() >= 7, "a row per class: {summary}");
    eprintln!("answer table in the 1x2x2 guest:\n{}", table.join("\n"));
    eprintln!(
        "lockscan scan buffer {} bytes, scanner L2 {} bytes",
        lockscan["scan_bytes"], lockscan["scan_l2_bytes"]
    );
    for f in results["verdict"]["findings"].as_array().unwrap() {
        let topic = f["topic"].as_str().unwrap();
        if topic.starts_with("noisy") || topic.starts_with("locks") {
            eprintln!("finding {topic}:\n  {}\n  {}", f["observed"], f["meaning"]);
        }
    }
}

#[test]
fn two_packages_two_nodes_keep_comparison_layouts_in_one_package() {
    let host = guest::shared();
    let s = Shape::new(2, 2, 2, 2);
    let extra = vec![
        cmd(
            "one-per-core 2",
            "smtlab plan one-per-core --threads 2 --json",
        ),
        cmd("pairs 4", "smtlab plan pairs --threads 4 --json"),
        cmd(
            "siblings-of 0",
            "smtlab plan siblings-of:0 --threads 1 --json",
        ),
        cmd(
            "one-per-core 4 machine",
            "smtlab plan one-per-core --threads 4 --within machine --json",
        ),
        cmd("one-per-core 3", "smtlab plan one-per-core --threads 3"),
        cmd("lockscan sweep dry", "smtlab lockscan --sweep --dry-run"),
    ];
    let Some(run) = guest(&host, s, extra, &[], Duration::from_secs(240)) else {
        return;
    };
    let placed = |name: &str| -> Vec<u64> {
        run.cmd(name).ok().json()["threads"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| cpus(&t["cpus"]))
            .collect()
    };
    assert_eq!(placed("one-per-core 2"), [0, 2], "package 0's two cores");
    assert_eq!(
        placed("pairs 4"),
        [0, 1, 2, 3],
        "package 0's two sibling pairs"
    );
    assert_eq!(placed("siblings-of 0"), [1], "CPU 0's sibling, not CPU 0");
    let machine = placed("one-per-core 4 machine");
    assert_eq!(
        machine.iter().filter(|&&c| c >= 4).count(),
        2,
        "--within machine spreads over both packages: {machine:?}"
    );
    let o = run.cmd("one-per-core 3");
    o.expect_code(3);
    assert!(o.stderr.contains("--within machine"), "{}", o.stderr);
    let dry = &run.cmd("lockscan sweep dry").ok().stdout;
    assert!(dry.contains("sweep within package 0"), "{dry}");
    assert!(dry.contains("scanner on 1 (sibling of 0)"), "{dry}");
    assert!(dry.contains("scanner on 3 (sibling of 2)"), "{dry}");
    assert!(!dry.contains("scanner on 5"), "{dry}");
}

#[test]
fn smt4_spreads_sibling_burners_over_the_workers_cores() {
    let host = guest::shared();
    let s = Shape::new(1, 2, 4, 0);
    let extra = vec![
        cmd(
            "siblings-of 0,4",
            "smtlab plan siblings-of:0,4 --threads 4 --json",
        ),
        cmd(
            "neighbors dry",
            "smtlab neighbors --placement one-per-core --workers 2 --burner-placement siblings \
             --burners 4 --dry-run",
        ),
    ];
    let Some(run) = guest(&host, s, extra, &[], Duration::from_secs(240)) else {
        return;
    };
    let v: Vec<u64> = run.cmd("siblings-of 0,4").ok().json()["threads"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| cpus(&t["cpus"]))
        .collect();
    assert_eq!(v, [1, 5, 2, 6], "alternating between the two cores");
    let dry = &run.cmd("neighbors dry").ok().stdout;
    for b in [
        "burner 0 on CPUs 1",
        "burner 1 on CPUs 5",
        "burner 2 on CPUs 2",
        "burner 3 on CPUs 6",
    ] {
        assert!(dry.contains(b), "{dry}");
    }
}

#[test]
fn no_smt_guest_refuses_sibling_placements() {
    let host = guest::shared();
    let s = Shape::new(1, 4, 1, 0);
    let extra = vec![cmd(
        "oltp layouts dry",
        "smtlab oltp --configs one-per-core,pairs,all --threads 2 --dry-run",
    )];
    let Some(run) = guest(&host, s, extra, &[], Duration::from_secs(180)) else {
        return;
    };
    let dry = &run.cmd("oltp layouts dry").ok().stdout;
    assert!(dry.contains("skipped pairs"), "{dry}");
    assert!(
        dry.contains("their cores have no usable SMT sibling"),
        "{dry}"
    );
}

#[test]
fn missing_qemu_says_what_to_install() {
    let _host = guest::shared();
    let empty = tempfile::tempdir().unwrap();
    let e = guest::find_prereqs(empty.path().as_os_str(), None, empty.path()).unwrap_err();
    assert!(e.contains("apt-get install qemu-system-x86"), "{e}");
    assert!(e.contains("fetch-kernel.sh"), "{e}");
}

/// `smt` and `top` on a kernel with siblings: switching through `smt/control`, SIGKILL of a
/// change right after its journal and midway (forced through cpuN/online, which takes one
/// write per sibling), `restore` back to 0-3 every time; `top` with a busy loop on one
/// sibling and on both, traced from `sched_switch` (the harness mounts tracefs), and no
/// tracefs instance left behind by a finished, interrupted or killed `top`. Runs without
/// the common commands: one boot, about 20 commands.
#[test]
fn smt_off_restore_and_top_per_core() {
    let host = guest::shared();
    let Some(p) = guest::prereqs_or_skip() else {
        return;
    };
    let s = Shape::new(1, 2, 2, 0);
    let online = "cat /sys/devices/system/cpu/online";
    let inst = "ls /sys/kernel/tracing/instances";
    // A burner pinned to CPUS in the background while COMMAND runs; COMMAND's exit code.
    let with_burn = |cpus: &str, threads: u32, command: &str| {
        format!(
            "smtlab burn -k int -t {threads} --cpus {cpus} -d 120s --warmup 0 >/dev/null 2>&1 & \
             b=$!; sleep 1; {command}; c=$?; kill $b; wait $b; exit $c"
        )
    };
    let cmds = vec![
        cmd("status before", "smtlab smt status --json"),
        cmd(
            "top one sibling",
            with_burn("1", 1, "smtlab top --once --json -i 2s"),
        ),
        cmd(
            "top both siblings",
            with_burn("0,1", 2, "smtlab top --once --json -i 2s"),
        ),
        cmd("top text", with_burn("1", 1, "smtlab top --once -i 1s")),
        cmd(
            "top pid",
            with_burn("0,1", 2, "smtlab top --once --json -i 2s --pid $b"),
        ),
        cmd("instances after top", inst),
        cmd("off", "smtlab smt off"),
        cmd("online after off", online),
        cmd("status after off", "smtlab smt status"),
        cmd("status after off json", "smtlab smt status --json"),
        cmd(
            "top after off",
            with_burn("2", 1, "smtlab top --once -i 1s"),
        ),
        cmd(
            "top after off json",
            with_burn("2", 1, "smtlab top --once --json -i 1s"),
        ),
        cmd("restore", "smtlab smt restore"),
        cmd("online after restore", online),
        cmd("restore again", "smtlab smt restore"),
        cmd(
            "kill after journal",
            format!(
                "smtlab smt off --method cpu-online --step-delay 60s >/dev/null 2>&1 & p=$!; \
                 while [ ! -f /run/smtlab/smt-journal.json ]; do sleep 0.05; done; \
                 kill -9 $p; wait $p; echo \"killed: $({online})\"; smtlab smt restore; \
                 echo \"restored: $({online})\""
            ),
        ),
        cmd(
            "kill midway",
            format!(
                "smtlab smt off --method cpu-online --step-delay 60s >/dev/null 2>&1 & p=$!; \
                 while [ \"$({online})\" = 0-3 ]; do sleep 0.05; done; \
                 kill -9 $p; wait $p; echo \"killed: $({online})\"; smtlab smt restore; \
                 echo \"restored: $({online})\""
            ),
        ),
        cmd(
            "top interrupted",
            format!(
                "smtlab top -i 10s >/dev/null 2>&1 & p=$!; sleep 2; kill -INT $p; wait $p; \
                 echo \"code $?\"; {inst}"
            ),
        ),
        cmd(
            "top killed then swept",
            format!(
                "smtlab top -i 10s >/dev/null 2>&1 & p=$!; sleep 2; kill -9 $p; wait $p; \
                 echo \"left: $({inst})\"; smtlab top --once -i 200ms >/dev/null; \
                 echo \"after: $({inst})\""
            ),
        ),
        cmd("online at the end", online),
    ];
    let run = run_guest(&host, &p, s, &cmds, &[], Duration::from_secs(480));
    eprintln!("guest {s}: {} commands in {:.1?}", cmds.len(), run.wall);

    let st = run.cmd("status before").ok().json();
    assert_eq!(st["control"], "on");
    assert_eq!(st["threads_per_core"], 2);
    assert_eq!(st["cores"][0]["online"], serde_json::json!([0, 1]));

    // One busy sibling: its core busy, never both; the other core idle.
    let top = run.cmd("top one sibling").ok().json();
    eprintln!("top --once --json, burner on CPU 1:\n{top}");
    assert_eq!(top["smt"], true);
    assert_eq!(top["tracefs"]["used"], true, "{}", top["tracefs"]);
    let c0 = &top["cores"][0];
    assert!(
        top["cpus"][1]["busy_share"].as_f64().unwrap() > 0.8,
        "{top}"
    );
    assert!(c0["busy_min_share"].as_f64().unwrap() > 0.8, "{c0}");
    assert!(c0["both_busy_min_share"].as_f64().unwrap() < 0.2, "{c0}");
    assert!(
        c0["traced"]["both_busy_share"].as_f64().unwrap() < 0.1,
        "{c0}"
    );
    assert!(
        c0["traced"]["one_busy_share"].as_f64().unwrap() > 0.8,
        "{c0}"
    );
    let c1 = &top["cores"][1];
    assert!(
        c1["busy_max_share"].as_f64().unwrap() < 0.3,
        "idle core: {c1}"
    );
    // Both siblings busy: the traced both-busy share is well above 0.
    let top = run.cmd("top both siblings").ok().json();
    let c0 = &top["cores"][0];
    assert!(
        c0["traced"]["both_busy_share"].as_f64().unwrap() > 0.5,
        "{c0}"
    );
    assert!(c0["both_busy_min_share"].as_f64().unwrap() > 0.5, "{c0}");
    eprintln!(
        "top --once (SMT on, burner on CPU 1):\n{}",
        run.cmd("top text").ok().stdout
    );
    // The burner's two threads on CPUs 0 and 1 shared core 0 for most of the interval.
    let top = run.cmd("top pid").ok().json();
    let threads = top["pid"]["threads"].as_array().unwrap();
    let shared: Vec<&Value> = threads
        .iter()
        .flat_map(|t| t["shared_core_with"].as_array().unwrap())
        .collect();
    assert!(
        shared
            .iter()
            .any(|o| o["core"] == 0 && o["overlap_ns"].as_u64().unwrap() > 500_000_000),
        "{}",
        top["pid"]
    );
    assert_eq!(run.cmd("instances after top").ok().stdout.trim(), "");

    // smt off through the control; status agrees; restore brings back 0-3.
    let off = run.cmd("off").ok();
    eprintln!("smt off:\n{}", off.stdout);
    assert!(off.stdout.contains("through smt/control"), "{}", off.stdout);
    assert_eq!(run.cmd("online after off").ok().stdout.trim(), "0,2");
    let status = run.cmd("status after off").ok();
    eprintln!("smt status:\n{}", status.stdout);
    let st = run.cmd("status after off json").ok().json();
    assert_eq!(st["control"], "off");
    assert_eq!(st["active"], false);
    assert_eq!(st["threads_per_core"], 1);
    assert_eq!(st["cores"][0]["offline"], serde_json::json!([1]));
    assert_eq!(st["cores"][1]["offline"], serde_json::json!([3]));
    assert_eq!(st["journal"]["online"], serde_json::json!([0, 1, 2, 3]));
    eprintln!(
        "top --once (SMT off, burner on CPU 2):\n{}",
        run.cmd("top after off").ok().stdout
    );
    let top = run.cmd("top after off json").ok().json();
    assert_eq!(top["smt"], false, "one thread per core now");
    assert_eq!(top["cpus"].as_array().unwrap().len(), 2);
    let restore = run.cmd("restore").ok();
    eprintln!("smt restore:\n{}", restore.stdout);
    assert_eq!(run.cmd("online after restore").ok().stdout.trim(), "0-3");
    assert!(
        run.cmd("restore again")
            .ok()
            .stdout
            .contains("nothing to restore")
    );

    // SIGKILL right after the journal: nothing changed yet; restore finds its journal.
    let k = &run.cmd("kill after journal").ok().stdout;
    assert!(
        k.contains("killed: 0-3") && k.contains("restored: 0-3"),
        "{k}"
    );
    assert!(k.contains("already in the recorded state"), "{k}");
    // SIGKILL after the first of two writes: restore brings the sibling back.
    let k = &run.cmd("kill midway").ok().stdout;
    assert!(k.contains("killed: 0,2-3"), "{k}");
    assert!(k.contains("restored: 0-3"), "{k}");

    // Ctrl-C ends top with 130 and removes its tracefs instance; a SIGKILLed top's
    // instance is removed by the next top.
    let i = &run.cmd("top interrupted").ok().stdout;
    assert_eq!(i.trim(), "code 130", "{i}");
    let k = &run.cmd("top killed then swept").ok().stdout;
    assert!(k.contains("left: smtlab-"), "{k}");
    assert!(
        k.contains("after: \n") || k.trim_end().ends_with("after:"),
        "{k}"
    );
    assert_eq!(run.cmd("online at the end").ok().stdout.trim(), "0-3");
}

/// `compare --cgroup` on cgroup v2 with real SMT siblings: the guest mounts cgroup2 and
/// enables cpuset for children (Linux `Documentation/admin-guide/cgroup-v2.rst`,
/// "Cpuset"), then the command, which resets its own affinity to every CPU, still sees
/// only its placement's CPUs (one-per-core: one sibling of each core; all: both), from
/// inside `smtlab-compare-*` cgroups that are gone afterwards — after a normal exit and
/// after SIGINT mid-run (exit 130, the command's `sleep` ended too). Also the study with
/// the command as its last phase, its section and answer row. One boot, no common
/// commands.
#[test]
fn compare_cgroup_v2_places_the_command_and_removes_its_cgroups() {
    let host = guest::shared();
    let Some(p) = guest::prereqs_or_skip() else {
        return;
    };
    let s = Shape::new(1, 2, 2, 0);
    // What the command sees, one line each, appended per run.
    let probe = "taskset -p f $$ >/dev/null 2>&1; echo \"reset $?\" >> /tmp/seen; \
                 echo \"cgroup $(cut -d: -f3 /proc/self/cgroup)\" >> /tmp/seen; \
                 echo \"allowed $(grep Cpus_allowed_list /proc/self/status | cut -f2)\" >> /tmp/seen; \
                 echo \"effective $(cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/cpuset.cpus.effective)\" >> /tmp/seen";
    let cmds = vec![
        cmd(
            "mount cgroup2",
            "mount -t cgroup2 none /sys/fs/cgroup && echo +cpuset > \
             /sys/fs/cgroup/cgroup.subtree_control && cat /sys/fs/cgroup/cgroup.subtree_control",
        ),
        cmd(
            "compare cgroup",
            format!(
                "smtlab compare --placements one-per-core,all --cores 2 --cgroup --runs 2 \
                 --warmup 0 --json --shell -- '{probe}'"
            ),
        ),
        cmd("seen", "cat /tmp/seen"),
        cmd(
            "left after exit",
            "ls -d /sys/fs/cgroup/smtlab-* 2>/dev/null || echo none",
        ),
        cmd(
            "sigint",
            "rm -f /tmp/mark; \
             smtlab compare --placements one-per-core,all --cores 2 --cgroup --runs 3 \
             --warmup 0 --shell -- 'echo $$ > /tmp/mark; sleep 300' >/tmp/int.out 2>/tmp/int.err & \
             pid=$!; i=0; \
             while [ ! -s /tmp/mark ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; \
             echo \"during $(ls -d /sys/fs/cgroup/smtlab-* 2>/dev/null | wc -l)\"; \
             kill -INT $pid; wait $pid; echo \"exit $?\"; \
             echo \"after $(ls -d /sys/fs/cgroup/smtlab-* 2>/dev/null | wc -l)\"; \
             echo \"sleeps $(for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done \
             | grep -c '^sleep 300 ')\"; cat /tmp/int.err >&2",
        ),
        cmd(
            "study",
            "smtlab study --budget 10s --out /tmp/study --placements one-per-core,all \
             --cores 2 --cgroup --runs 5 --warmup 0 -- true",
        ),
        cmd(
            "left after study",
            "ls -d /sys/fs/cgroup/smtlab-* 2>/dev/null || echo none",
        ),
    ];
    let files = ["/tmp/study/results.json"];
    let run = run_guest(&host, &p, s, &cmds, &files, Duration::from_secs(900));
    eprintln!("guest {s}: {} commands in {:.1?}", cmds.len(), run.wall);

    let m = run.cmd("mount cgroup2").ok();
    assert!(m.stdout.contains("cpuset"), "{}", m.stdout);

    let cmp = run.cmd("compare cgroup").ok().json();
    assert_eq!(cmp["enforcement"], "cgroup-v2", "{cmp}");
    let placed: Vec<(String, BTreeSet<u64>)> = cmp["placements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["label"].as_str().unwrap().to_string(), cpus(&p["cpus"])))
        .collect();
    assert_eq!(
        placed,
        [
            ("one-per-core".to_string(), BTreeSet::from([0, 2])),
            ("all".to_string(), BTreeSet::from([0, 1, 2, 3])),
        ],
        "{cmp}"
    );
    // Runs interleave in counterbalanced order (one-per-core, all, then all,
    // one-per-core); each runs from its placement's own cgroup (`smtlab-compare-PID-K`, K
    // the placement's index) and saw that placement's CPUs though it asked for all four.
    let seen = &run.cmd("seen").ok().stdout;
    eprintln!("what the command saw:\n{seen}");
    let lines: Vec<&str> = seen.lines().collect();
    assert_eq!(lines.len(), 16, "four lines per run, four runs:\n{seen}");
    let mut groups = BTreeSet::new();
    let mut order = Vec::new();
    for run_lines in lines.chunks(4) {
        // The reset to every CPU succeeded, and the cgroup still held it to its CPUs.
        assert_eq!(run_lines[0], "reset 0", "{seen}");
        let group = run_lines[1].strip_prefix("cgroup /").unwrap_or("");
        assert!(group.starts_with("smtlab-compare-"), "{seen}");
        groups.insert(group.to_string());
        let want = match group.rsplit('-').next() {
            Some("0") => "0,2",
            Some("1") => "0-3",
            _ => panic!("cgroup {group} names no placement:\n{seen}"),
        };
        order.push(want);
        assert_eq!(run_lines[2], format!("allowed {want}"), "{seen}");
        assert_eq!(run_lines[3], format!("effective {want}"), "{seen}");
    }
    assert_eq!(groups.len(), 2, "one cgroup per placement: {groups:?}");
    assert_eq!(
        order,
        ["0,2", "0-3", "0-3", "0,2"],
        "counterbalanced:\n{seen}"
    );
    assert_eq!(run.cmd("left after exit").ok().stdout.trim(), "none");

    let int = run.cmd("sigint");
    let out = &int.stdout;
    eprintln!("SIGINT mid-run:\n{out}");
    for line in ["during 2", "exit 130", "after 0", "sleeps 0"] {
        assert!(
            out.lines().any(|l| l.trim() == line),
            "`{line}` expected:\n{out}\n--- stderr\n{}",
            int.stderr
        );
    }

    // The study ran the command as its last phase, in cgroups, and answers for it.
    let st = run.cmd("study");
    assert!(
        matches!(st.code, Some(0 | 1)),
        "study exited {:?}: {}",
        st.code,
        st.stderr
    );
    let r: Value = serde_json::from_str(&run.file("/tmp/study/results.json")).unwrap();
    let phase = r["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "compare")
        .unwrap();
    assert_eq!(phase["status"], "done", "{phase}");
    assert_eq!(r["compare"]["result"]["enforcement"], "cgroup-v2");
    let row = r["verdict"]["answers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["class"] == "command")
        .unwrap();
    eprintln!("the study's row for the command: {row}");
    assert_eq!(row["evidence"]["comparison"]["n"], 5, "{row}");
    assert_ne!(row["answer"], "not-measured", "{row}");
    assert_eq!(run.cmd("left after study").ok().stdout.trim(), "none");
}

// Known-answer machines: guests whose vCPU threads are pinned so that their SMT behaviour
// is a physical fact (see tests/guest/mod.rs), and the tool's measurements and answer table
// checked against it.

/// What pinning makes true of a machine.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Truth {
    /// Every vCPU on a host CPU of its own: a core's two threads each run at full speed.
    PerfectSmt,
    /// A core's threads on one host CPU: they take turns, SMT adds nothing.
    ZeroYield,
}

/// A known-answer machine: its topology and truth.
#[derive(Debug, Clone, Copy)]
struct Machine {
    name: &'static str,
    shape: Shape,
    truth: Truth,
}

const PERFECT_SMT: Machine = Machine {
    name: "perfect SMT",
    shape: Shape::new(1, 1, 2, 0),
    truth: Truth::PerfectSmt,
};

const ZERO_YIELD_SMT: Machine = Machine {
    name: "zero-yield SMT",
    shape: Shape::new(1, 2, 2, 0),
    truth: Truth::ZeroYield,
};

/// The yield command's rounds and run lengths: 5 paired rounds give the yield its 95 %
/// interval; 1 s runs hold hundreds of `prime` passes even in a debug build under TCG.
const YIELD_ARGS: &str = "--workloads prime,int --repeat 5 --duration 1s --warmup 250ms";

/// The pairs run of a known-answer machine: four compute rulers as the workloads and the
/// model's dimensions, on a pair of siblings, 3 rounds of short runs (4 alone + 10 pairs,
/// 42 runs of 0.6 s). Every pair of two rulers is measured by the profile itself, so the
/// prediction beside each measured pair is the check.
const PAIRS_ARGS: &str = "--workloads int,prime,mul,l1 --rulers int,prime,mul,l1 \
     --partner sibling --repeat 3 --duration 500ms --warmup 100ms --measure all";

/// The zero-yield machine's advice: three single-thread workloads on two cores, `int`
/// with a floor no shared core meets (siblings taking turns run at about 0.5 each).
const PAIRS_ADVICE: &str = "--advise int=1,prime=1,mul=1 --floor int=0.7";

/// Perfect SMT's known answer for a pair of siblings: each runs at its speed alone. QEMU's
/// other threads share the vCPUs' host CPUs (no spare one on a 2-CPU host), so "alone" is
/// 1.0 within this band, the same ±20 % of the known answer that zero-yield's 0.40–0.60
/// allows around 0.5.
const PERFECT_PAIR: std::ops::RangeInclusive<f64> = 0.8..=1.2;
/// The measured pairs' mean: wider, for TCG's cost of an idle sibling vCPU (see
/// [`judge_pairs`]).
const PERFECT_MEASURED: std::ops::RangeInclusive<f64> = 0.7..=1.3;
/// An interval that reaches this band around 1.0 holds the known answer.
const PERFECT_BAND: std::ops::RangeInclusive<f64> = 0.9..=1.1;
/// Zero-yield's known answer for a pair of siblings: 0.5, or a little below it for the
/// host's switching between the two vCPU threads on one CPU (see [`judge_pairs`]).
const ZERO_BAND: std::ops::RangeInclusive<f64> = 0.40..=0.55;

/// The compute rulers whose yield is checked.
const COMPUTE: [&str; 2] = ["prime", "int"];

impl Machine {
    /// The host CPUs needed: one per vCPU (perfect SMT) or one per core (zero-yield).
    fn host_cpus(&self) -> usize {
        match self.truth {
            Truth::PerfectSmt => self.shape.cpus() as usize,
            Truth::ZeroYield => (self.shape.sockets * self.shape.cores) as usize,
        }
    }

    /// Perfect SMT: vCPU v on host CPU v. Zero-yield: every thread of core k on host CPU k
    /// (QEMU numbers a core's threads consecutively).
    fn pins(&self, host: &[usize]) -> VcpuPins {
        let t = self.shape.threads;
        VcpuPins::new((0..self.shape.cpus()).map(|v| {
            let slot = match self.truth {
                Truth::PerfectSmt => v as usize,
                Truth::ZeroYield => (v / t) as usize,
            };
            (v, host[slot])
        }))
    }

    fn commands(&self) -> Vec<GuestCommand> {
        let advice = match self.truth {
            Truth::PerfectSmt => "",
            Truth::ZeroYield => PAIRS_ADVICE,
        };
        vec![
            cmd("topo", "smtlab topo --json"),
            cmd("yield", format!("smtlab yield {YIELD_ARGS} --json")),
            cmd(
                "pairs",
                format!("smtlab pairs {PAIRS_ARGS} {advice} --json"),
            ),
            cmd("study", "smtlab study --quick --out /tmp/study"),
        ]
    }
}

/// A comparison as the JSON has it, for printing and checking.
#[derive(Debug, Clone, Copy)]
struct Cmp {
    estimate: f64,
    low: f64,
    high: f64,
    confidence: f64,
    n: u64,
}

impl Cmp {
    fn of(v: &Value) -> Option<Cmp> {
        Some(Cmp {
            estimate: v["estimate"].as_f64()?,
            low: v["low"].as_f64()?,
            high: v["high"].as_f64()?,
            confidence: v["confidence"].as_f64().unwrap_or(f64::NAN),
            n: v["n"].as_u64()?,
        })
    }
}

impl std::fmt::Display for Cmp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2}× ({:.0} % interval {:.2}–{:.2}, n = {})",
            self.estimate,
            self.confidence * 100.0,
            self.low,
            self.high,
            self.n
        )
    }
}

/// Each workload's yield and shared-core speed in a yield report.
fn yields(report: &Value) -> Vec<(String, Option<Cmp>, Option<Cmp>)> {
    report["workloads"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .map(|w| {
                    (
                        w["workload"].as_str().unwrap_or("?").to_string(),
                        Cmp::of(&w["smt_yield"]["comparison"]),
                        Cmp::of(&w["shared_core_speed"]["comparison"]),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The most the rest of the host (everything but QEMU, plus the time the hypervisor under
/// it steals) may use during the measured commands, in host CPUs, for a boot to be judged.
/// A busy host changes what each layout gets (the scheduler shares a CPU among all its
/// runnable threads), so the truth pinning makes no longer holds.
const QUIET: f64 = 0.2;

/// What one boot of a known-answer machine showed, and which checks failed.
#[derive(Debug, Default)]
struct Boot {
    lines: Vec<String>,
    failures: Vec<String>,
    /// Why the boot is not judged: the host was busy during a measured command, or the
    /// emulated machine froze.
    busy: Option<String>,
}

impl Boot {
    fn say(&mut self, line: String) {
        self.lines.push(line);
    }
    fn check(&mut self, ok: bool, what: String) {
        if !ok {
            self.failures.push(what);
        }
    }
}

/// Checks one boot of `m` against its truth.
fn judge(m: &Machine, run: &GuestRun) -> Boot {
    let mut b = Boot::default();
    b.say(format!("host: {}", run.host_report().trim_end()));
    let host = run.host.as_ref().expect("a pinned guest");
    b.check(
        host.strays.is_empty(),
        format!("vCPU threads ran off their host CPUs: {:?}", host.strays),
    );
    for (i, c) in run.commands.iter().enumerate() {
        if c.name == "topo" {
            continue;
        }
        match host.window(i) {
            Some(w) if w.rest_of_host + w.steal > QUIET => {
                b.busy.get_or_insert(format!(
                    "the host was busy: during `{}` the rest of the host used {:.2} host CPUs and steal {:.2}, over {QUIET}",
                    c.name, w.rest_of_host, w.steal
                ));
            }
            Some(_) => {}
            None => b.check(false, format!("no host figures for `{}`", c.name)),
        }
    }

    // The guest shows the declared siblings.
    let topo = run.cmd("topo").ok().json();
    let n = m.shape.cpus();
    assert_eq!(
        partition(&topo["cores"]),
        chunks(n, m.shape.threads),
        "cores"
    );

    // `yield`: the compute rulers' yields and shared-core speeds.
    let y = run.cmd("yield").ok().json();
    for (w, yl, shared) in yields(&y) {
        let shown = |c: Option<Cmp>| c.map_or("none".to_string(), |c| c.to_string());
        b.say(format!(
            "yield {w}: SMT yield {}; a thread on a shared core {}",
            shown(yl),
            shown(shared)
        ));
        if !COMPUTE.contains(&w.as_str()) {
            continue;
        }
        let Some(yl) = yl else {
            b.check(false, format!("yield {w}: no SMT yield"));
            continue;
        };
        match m.truth {
            Truth::PerfectSmt => b.check(
                yl.low > 1.2,
                format!("yield {w}: SMT yield {yl}: its interval should lie above 1.2"),
            ),
            // Taking turns adds nothing, and costs a little (host context switches): the
            // interval must reach the ±5 % band around 1.0 that the answers call no effect.
            Truth::ZeroYield => {
                b.check(
                    yl.low <= 1.05 && yl.high >= 0.95,
                    format!(
                        "yield {w}: SMT yield {yl}: its interval should reach 0.95–1.05 (no effect)"
                    ),
                );
                // Half speed on a shared core (the int: 0.53×, 0.48–0.56): the
                // estimate below 0.75 and the whole interval below the ±5 % band, a
                // margin that held where prime's 5 TCG rounds gave 0.63× (0.46–0.85).
                match shared {
                    Some(s) => b.check(
                        s.estimate < 0.75 && s.high < 0.95,
                        format!(
                            "yield {w}: a thread on a shared core {s}: it should be below 0.75× with its interval below 0.95"
                        ),
                    ),
                    None => b.check(false, format!("yield {w}: no shared-core speed")),
                }
            }
        }
    }

    judge_pairs(m, run, &mut b);

    // `study --quick`: its yield phase and the answer table.
    let st = run.cmd("study");
    b.check(
        matches!(st.code, Some(0 | 1)),
        format!("study exited {:?}: {}", st.code, st.stderr),
    );
    let Ok(r) = serde_json::from_str::<Value>(&run.file("/tmp/study/results.json")) else {
        b.check(false, "study: results.json is not JSON".into());
        return b;
    };
    let phase = r["phases"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["phase"] == "yield"))
        .cloned()
        .unwrap_or_default();
    b.check(
        phase["status"] == "done",
        format!("study: yield phase {phase}"),
    );
    for (w, yl, shared) in yields(&r["smt_yield"]["result"]) {
        let shown = |c: Option<Cmp>| c.map_or("none".to_string(), |c| c.to_string());
        b.say(format!(
            "study yield phase {w}: SMT yield {}; a thread on a shared core {}",
            shown(yl),
            shown(shared)
        ));
    }
    let walls: Vec<String> = r["phases"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    format!(
                        "{} {} {:.1} s",
                        p["phase"].as_str().unwrap_or("?"),
                        p["status"].as_str().unwrap_or("?"),
                        p["wall_ns"].as_f64().unwrap_or(0.0) / 1e9
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    b.say(format!("study phases: {}", walls.join(", ")));
    // c2c: siblings on two host CPUs hand a line over in nanoseconds; siblings taking
    // turns on one host CPU wait for the host scheduler, milliseconds a handoff.
    let siblings: Vec<&Value> = r["c2c"]["result"]["pairs"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter(|p| p["proximity"] == "smt-sibling")
                .collect()
        })
        .unwrap_or_default();
    b.check(
        !siblings.is_empty(),
        "study: c2c measured no sibling pair".into(),
    );
    for p in siblings {
        let ns = p["latency_ns"]["median"].as_f64().unwrap_or(f64::NAN);
        let limited = p["time_limited"] == true;
        b.say(format!(
            "study c2c siblings {}-{}: {ns:.0} ns a handoff over {} samples{}",
            p["a"],
            p["b"],
            p["latency_ns"]["n"],
            if limited {
                ", stopped at its time limit"
            } else {
                ""
            }
        ));
        match m.truth {
            Truth::PerfectSmt => b.check(
                ns < 10_000.0 && !limited,
                format!("study c2c siblings: {ns:.0} ns a handoff, should be under 10 µs"),
            ),
            Truth::ZeroYield => b.check(
                ns > 10_000.0,
                format!("study c2c siblings: {ns:.0} ns a handoff, should be over 10 µs"),
            ),
        }
    }
    let answers = r["verdict"]["answers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for a in &answers {
        let c = Cmp::of(&a["evidence"]["comparison"]);
        b.say(format!(
            "study answer: {:<22} {:<14} {}",
            a["class"].as_str().unwrap_or("?"),
            a["answer"].as_str().unwrap_or("?"),
            c.map_or(String::new(), |c| c.to_string())
        ));
    }
    let compute = answers.iter().find(|a| a["class"] == "compute");
    let answer = compute.and_then(|a| a["answer"].as_str()).unwrap_or("none");
    let reason = compute.map_or(Value::Null, |a| a["reason"].clone());
    match m.truth {
        Truth::PerfectSmt => b.check(
            answer == "keep-ht-on",
            format!("study: compute row answers {answer}, should be keep-ht-on ({reason})"),
        ),
        Truth::ZeroYield => b.check(
            compute.is_some() && answer != "keep-ht-on",
            format!("study: compute row answers {answer}, should never be keep-ht-on ({reason})"),
        ),
    }
    b
}

/// `pairs` against the truth. Perfect SMT: siblings run at their speed alone, so the
/// predictions as a whole lie near 1.0 (their mean in [`PERFECT_PAIR`], at least 3 in 4
/// of their 90 % intervals reaching [`PERFECT_BAND`]) and so do the measured pairs (their
/// mean in [`PERFECT_MEASURED`]).
/// Zero-yield: the predicted speeds near 0.5 (siblings taking turns: the mean in
/// 0.40–0.60, at least 3 in 4 of their 90 % intervals reaching [`ZERO_BAND`]), and the advice never
/// shares the core of a workload whose floor is above 0.6.
fn judge_pairs(m: &Machine, run: &GuestRun, b: &mut Boot) {
    let out = run.cmd("pairs");
    b.check(
        out.code == Some(0),
        format!("pairs exited {:?}: {}", out.code, out.stderr),
    );
    let Ok(v) = serde_json::from_str::<Value>(&out.stdout) else {
        b.check(false, format!("pairs: not JSON: {}", out.stdout));
        return;
    };
    b.check(
        v["partner"]["kind"] == "smt-siblings",
        format!("pairs: partner {}, should be SMT siblings", v["partner"]),
    );
    let pairs = v["pairs"].as_array().cloned().unwrap_or_default();
    b.check(
        pairs.len() == 16,
        format!("pairs: {} ordered pairs, should be 16", pairs.len()),
    );
    let mut zero_yield = Vec::new();
    let mut perfect = Vec::new();
    for p in &pairs {
        let (a, o) = (
            p["a"].as_str().unwrap_or("?"),
            p["b"].as_str().unwrap_or("?"),
        );
        let pred = Cmp::of(&p["predicted"]);
        let meas = Cmp::of(&p["measured"]);
        let shown = |c: Option<Cmp>| c.map_or("none".to_string(), |c| c.to_string());
        b.say(format!(
            "pairs {a} beside {o}: predicted {}, measured {}",
            shown(pred),
            shown(meas)
        ));
        let Some(pred) = pred else {
            b.check(false, format!("pairs {a} beside {o}: no prediction"));
            continue;
        };
        match m.truth {
            Truth::PerfectSmt => match meas {
                Some(meas) => perfect.push((format!("{a} beside {o}"), pred, meas)),
                None => b.check(false, format!("pairs {a} beside {o}: not measured")),
            },
            Truth::ZeroYield => zero_yield.push((format!("{a} beside {o}"), pred)),
        }
    }
    if !perfect.is_empty() {
        // Both sides are judged against the known answer, not against each other: each
        // measured pair is 3 rounds of 0.5 s under TCG, its 90 % interval often ±0.3
        // wide, and the host's noise moves a workload's alone runs as a block (one CI
        // boot measured mul beside int, prime, mul and l1 at 1.26–1.42×, all from mul's
        // slow alone runs, while every prediction was 0.84–1.00× and 1.0 lay inside all
        // 16 prediction intervals). Checking the predictions against those measurements
        // judged the host, not the model. As for zero-yield: the mean within ±20 % of the
        // answer, and the answer's band reached by at least 12 of 16 90 % intervals (more
        // than 4 misses has a chance of 0.017 for honest intervals, Bin(16, 0.1)).
        //
        // The measured side is held to a wider band and its intervals are reported, not
        // counted: under TCG a workload alone beside an idle sibling vCPU often runs
        // slower than beside a busy one (one quiet boot: l1 beside int 1.43×, 1.24–1.66;
        // the measured mean over four boots 0.90–1.10×), an emulator's cost the model,
        // whose losses are never below 0, does not predict. The band still fails a
        // measurement that took perfect siblings for siblings taking turns (0.5×).
        let summary = |cmps: &[(&String, &Cmp)]| {
            let n = cmps.len();
            let mean = cmps.iter().map(|(_, c)| c.estimate).sum::<f64>() / n as f64;
            let misses: Vec<String> = cmps
                .iter()
                .filter(|(_, c)| c.high < *PERFECT_BAND.start() || c.low > *PERFECT_BAND.end())
                .map(|(pair, c)| format!("{pair} {c}"))
                .collect();
            (n, mean, misses)
        };
        let predicted: Vec<(&String, &Cmp)> =
            perfect.iter().map(|(pair, p, _)| (pair, p)).collect();
        let measured: Vec<(&String, &Cmp)> = perfect.iter().map(|(pair, _, m)| (pair, m)).collect();
        for (side, cmps, band) in [
            ("predicted", &predicted, PERFECT_PAIR),
            ("measured", &measured, PERFECT_MEASURED),
        ] {
            let (n, mean, misses) = summary(cmps);
            b.say(format!(
                "pairs perfect SMT, {side}: mean {mean:.2}× over {n} pairs; {} of {n} intervals miss 0.9–1.1",
                misses.len()
            ));
            b.check(
                band.contains(&mean),
                format!(
                    "pairs: mean {side} {mean:.2}× over {n} pairs, should be {:.2}–{:.2}",
                    band.start(),
                    band.end()
                ),
            );
            if side == "predicted" {
                b.check(
                    misses.len() * 4 <= n,
                    format!(
                        "pairs: {} of {n} predicted 90 % intervals miss 0.9–1.1, at most {} may: {misses:?}",
                        misses.len(),
                        n / 4
                    ),
                );
            }
        }
    }
    if m.truth == Truth::ZeroYield && !zero_yield.is_empty() {
        // Siblings taking turns run at 0.5× whatever they run, less what the host spends
        // switching between the two vCPU threads on one CPU (one quiet boot measured its
        // 16 pairs at 0.37–0.51×, mean 0.43×, and predicted them at 0.38–0.46×: the model
        // right, the answer below 0.5). Each prediction is an estimate with a 90 %
        // interval, so about 1 in 10 may miss by chance: the check asks the predictions
        // as a whole to be right, the mean in 0.40–0.60 and at least 12 of 16 intervals
        // reaching [`ZERO_BAND`] (more than 4 misses of 16 has a chance of 0.017 for
        // honest 90 % intervals, Bin(16, 0.1)). That boot failed a check of 0.5 inside
        // each interval with 7 of 16 (prime beside mul 0.38×, 0.31–0.45); an earlier CI
        // boot failed a check of each estimate against 0.40–0.60 with 3 of 16 (mul beside
        // int 0.33×, 0.22–0.43).
        let n = zero_yield.len();
        let mean = zero_yield.iter().map(|(_, p)| p.estimate).sum::<f64>() / n as f64;
        let misses: Vec<String> = zero_yield
            .iter()
            .filter(|(_, p)| p.high < *ZERO_BAND.start() || p.low > *ZERO_BAND.end())
            .map(|(pair, p)| format!("{pair} {p}"))
            .collect();
        b.say(format!(
            "pairs zero-yield: mean prediction {mean:.2}× over {n} pairs; {} of {n} intervals miss 0.40–0.55",
            misses.len()
        ));
        b.check(
            (0.40..=0.60).contains(&mean),
            format!("pairs: mean prediction {mean:.2}× over {n} pairs, should be 0.40–0.60"),
        );
        b.check(
            misses.len() * 4 <= n,
            format!(
                "pairs: {} of {n} predictions' 90 % intervals miss 0.40–0.55, at most {} may: {misses:?}",
                misses.len(),
                n / 4
            ),
        );
    }
    if m.truth == Truth::ZeroYield {
        let advice = &v["advice"];
        b.say(format!("pairs advice: {advice}"));
        let ws = advice["workloads"].as_array().cloned().unwrap_or_default();
        b.check(!ws.is_empty(), "pairs: no advice".into());
        for w in ws
            .iter()
            .filter(|w| w["floor"].as_f64().unwrap_or(0.0) > 0.6)
        {
            let name = w["workload"].as_str().unwrap_or("?");
            let paired = advice["pairs"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p[0] == name || p[1] == name);
            b.check(
                w["shared_threads"] == 0 && !paired,
                format!("pairs advice shares {name}'s core despite its floor: {w}"),
            );
        }
    }
}

/// How long into a known-answer test a boot that could not be judged is still booted
/// again: a boot takes 3–5 minutes on a quiet 2-CPU host.
const RETRY_BUDGET: Duration = Duration::from_secs(12 * 60);

/// How long a known-answer test may take in all, every boot and every freeze's second try
/// included: QEMU is killed at this time and the boot is not judged. CI runs both tests
/// and must end well inside its 90 minutes on a host that is slow all along (seen: 56
/// minutes in all when boots were allowed 20 minutes each and two were taken).
const TEST_BUDGET: Duration = Duration::from_secs(20 * 60);

/// The wall-time limit of one known-answer boot: a quiet host needs 3–5 minutes. A host
/// that gives QEMU less CPU gets more (see `guest::try_run_pinned_guest`); a guest that
/// still has not finished has frozen, and waiting longer only costs CI its time.
const BOOT_LIMIT: Duration = Duration::from_secs(600);

/// Boots `m` `SMTLAB_GUEST_REPEAT` times (default 1) with nothing else of this test binary
/// running, prints what each boot measured and a pass/fail count, and fails if any boot
/// it judged failed. A boot is not judged when the host was busy during a measured command
/// or the emulated machine froze twice (no answer was seen); without a repeat count such
/// a boot is booted again, twice at most, while within [`RETRY_BUDGET`], and every boot
/// ends by [`TEST_BUDGET`] (a repeat count sets no budget). With no boot judged
/// the test says so and skips ([`skip::Need::QuietHost`]). A boot that panics otherwise
/// (a check of the guest's own topology) counts as failed.
fn known_answer(m: Machine) {
    let host = guest::exclusive();
    let Some(p) = guest::prereqs_or_skip() else {
        return;
    };
    let Some(cpus) = guest::host_cpus_or_skip(m.host_cpus()) else {
        return;
    };
    let pins = m.pins(&cpus);
    let (repeat, mut retries) = match std::env::var("SMTLAB_GUEST_REPEAT") {
        Ok(r) => (
            r.parse::<usize>()
                .expect("SMTLAB_GUEST_REPEAT: a number of boots"),
            0,
        ),
        Err(_) => (1, 2),
    };
    let cmds = m.commands();
    let t0 = std::time::Instant::now();
    let deadline = (repeat == 1).then(|| t0 + TEST_BUDGET);
    let (mut passed, mut failed, mut unjudged) = (0, Vec::new(), Vec::new());
    let (mut counted, mut k) = (0, 0);
    while counted < repeat {
        k += 1;
        let boot = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            guest::try_run_pinned_guest(
                &host,
                &p,
                m.shape,
                &pins,
                &cmds,
                &["/tmp/study/results.json"],
                BOOT_LIMIT,
                deadline,
            )
            .map(|run| match run {
                Ok(run) => judge(&m, &run),
                Err(froze) => Boot {
                    busy: Some(froze.lines().next().unwrap_or("").to_string()),
                    ..Default::default()
                },
            })
        }));
        let b = match boot {
            Ok(Some(b)) => b,
            Ok(None) => return, // not pinnable here: said why
            Err(e) => Boot {
                failures: vec![format!(
                    "the boot failed: {}",
                    e.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| e.downcast_ref::<&str>().copied())
                        .unwrap_or("a panic")
                )],
                ..Default::default()
            },
        };
        let outcome = match (&b.busy, b.failures.is_empty()) {
            (Some(why), _) => format!("not judged ({why})"),
            (None, true) => "pass".into(),
            (None, false) => "FAIL".into(),
        };
        eprintln!(
            "known answer, {} ({}, pins {pins}), boot {k}: {outcome}",
            m.name, m.shape,
        );
        for l in &b.lines {
            eprintln!("  {l}");
        }
        for f in &b.failures {
            eprintln!("  failed: {f}");
        }
        match (b.busy, b.failures.is_empty()) {
            (Some(why), _) => {
                unjudged.push((k, why));
                if retries > 0 && t0.elapsed() < RETRY_BUDGET {
                    retries -= 1;
                    eprintln!("  booting it again: this boot could not be judged");
                } else {
                    counted += 1;
                }
            }
            (None, true) => {
                passed += 1;
                counted += 1;
            }
            (None, false) => {
                failed.push((k, b.failures));
                counted += 1;
            }
        }
    }
    eprintln!(
        "known answer, {}: {k} boots in {:.0} s, {passed} passed, {} failed, {} not judged",
        m.name,
        t0.elapsed().as_secs_f64(),
        failed.len(),
        unjudged.len()
    );
    assert!(
        failed.is_empty(),
        "the {} machine's known answer was missed in {} of {k} boots: {failed:#?}",
        m.name,
        failed.len()
    );
    if passed == 0 && !unjudged.is_empty() {
        skip::skip(
            skip::Need::QuietHost,
            &format!(
                "the {} machine's known answer could not be judged in any of {k} boots: {unjudged:?}",
                m.name
            ),
        );
    }
}

/// 1 socket × 1 core × 2 threads, each vCPU on its own host CPU: the two siblings run at
/// full speed each. `yield` must find each compute ruler's yield interval above 1.2, the
/// quick study's c2c sibling handoffs under 10 µs, the study must answer keep HT on
/// for compute, and the speeds `pairs` predicts must average within 0.05 of the same
/// pairs measured, at least 3 in 4 inside the measured pair's 90 % interval.
#[test]
fn known_answer_perfect_smt() {
    known_answer(PERFECT_SMT);
}

/// 1 socket × 2 cores × 2 threads, both threads of a core on one host CPU: siblings take
/// turns. `yield` must find each compute ruler's yield interval reaching 0.95–1.05 and a
/// thread on a shared core below 0.75×, the quick study's c2c sibling handoffs over 10 µs,
/// the study must never answer keep HT on for compute, the speeds `pairs` predicts must
/// average 0.40–0.60 with at least 3 in 4 of their 90 % intervals reaching 0.40–0.55, and its
/// advice must give `int` (floor 0.7) a core of its own.
#[test]
fn known_answer_zero_yield_smt() {
    known_answer(ZERO_YIELD_SMT);
}

/// A guest for looking into something by hand, not a check: boots the shape in
/// `SMTLAB_GUEST_SHAPE` (`SOCKETSxCORESxTHREADS`, default 1x2x2) and runs each line of
/// `SMTLAB_GUEST_CMDS` as a command, printing what each printed and how long it took.
/// `SMTLAB_GUEST_PINS='0:0 1:0 2:1 3:1'` pins the vCPU threads to those host CPUs first
/// and prints what the host did during each command.
/// `SMTLAB_GUEST_CMDS='smtlab topo' cargo test --test smt_guests by_hand -- --ignored --nocapture`
#[test]
#[ignore = "for investigating by hand: set SMTLAB_GUEST_CMDS"]
fn by_hand() {
    let Some(p) = guest::prereqs_or_skip() else {
        return;
    };
    let dims: Vec<u32> = std::env::var("SMTLAB_GUEST_SHAPE")
        .unwrap_or_else(|_| "1x2x2".into())
        .split('x')
        .map(|d| {
            d.parse()
                .expect("SMTLAB_GUEST_SHAPE: SOCKETSxCORESxTHREADS")
        })
        .collect();
    let [sockets, cores, threads] = dims[..] else {
        panic!("SMTLAB_GUEST_SHAPE: SOCKETSxCORESxTHREADS, e.g. 1x2x2");
    };
    let s = Shape::new(sockets, cores, threads, 0);
    let lines = std::env::var("SMTLAB_GUEST_CMDS").expect("SMTLAB_GUEST_CMDS: one command a line");
    let cmds: Vec<GuestCommand> = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| cmd(format!("{i}"), l))
        .collect();
    let limit = Duration::from_secs(1800);
    let run = match std::env::var("SMTLAB_GUEST_PINS") {
        Ok(pins) => {
            let pins = VcpuPins::parse(&pins).unwrap_or_else(|e| panic!("SMTLAB_GUEST_PINS: {e}"));
            let host = guest::exclusive();
            let Some(run) = guest::run_pinned_guest(&host, &p, s, &pins, &cmds, &[], limit) else {
                return;
            };
            run
        }
        Err(_) => run_guest(&guest::shared(), &p, s, &cmds, &[], limit),
    };
    for c in &run.commands {
        println!("$ {}\n{}{}exit {:?}\n", c.shell, c.stdout, c.stderr, c.code);
    }
    println!("{}", run.host_report());
}
