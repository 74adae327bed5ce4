//! `smtlab yield`: the three layouts on synthetic and real SMT trees (dry run), the
//! refusal without siblings (exit 3), and a whole report on the fake engine. Real runs
//! happen in the SMT guests (`tests/smt_guests.rs`); nothing here asserts speed.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use smtlab::engine::FakeEngine;
use smtlab::experiments::smt_yield::{self, Config, Layout, Subject};
use smtlab::stats::Effect;
use std::path::{Path, PathBuf};

use crate::common;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

fn write(root: &Path, rel: &str, content: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{content}\n")).unwrap();
}

/// 1 package × `cores` cores × `threads` threads; CPU i's siblings are i, i + cores, ….
/// `control` is `smt/control`.
fn tree(root: &Path, cores: u32, threads: u32, control: &str) {
    let n = cores * threads;
    let all = format!("0-{}", n - 1);
    for f in ["online", "possible", "present"] {
        write(root, &format!("sys/devices/system/cpu/{f}"), &all);
    }
    write(root, "sys/devices/system/cpu/smt/control", control);
    write(
        root,
        "proc/cpuinfo",
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test\nflags\t\t: fpu sse2\n",
    );
    write(root, "sys/devices/system/node/node0/cpulist", &all);
    for cpu in 0..n {
        let core = cpu % cores;
        let sib: Vec<String> = (0..threads)
            .map(|k| (core + k * cores).to_string())
            .collect();
        let sib = sib.join(",");
        let t = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        write(root, &format!("{t}/physical_package_id"), "0");
        write(root, &format!("{t}/core_id"), &core.to_string());
        write(root, &format!("{t}/core_cpus_list"), &sib);
        write(root, &format!("{t}/thread_siblings_list"), &sib);
        write(root, &format!("{t}/package_cpus_list"), &all);
        write(root, &format!("{t}/core_siblings_list"), &all);
        for (i, (level, ty, size, shared)) in [
            (1, "Data", "48K", sib.as_str()),
            (2, "Unified", "1024K", sib.as_str()),
            (3, "Unified", "8M", all.as_str()),
        ]
        .into_iter()
        .enumerate()
        {
            let d = format!("sys/devices/system/cpu/cpu{cpu}/cache/index{i}");
            write(root, &format!("{d}/level"), &level.to_string());
            write(root, &format!("{d}/type"), ty);
            write(root, &format!("{d}/size"), size);
            write(root, &format!("{d}/coherency_line_size"), "64");
            write(root, &format!("{d}/shared_cpu_list"), shared);
        }
    }
}

fn dry_run_json(root: &Path, extra: &[&str]) -> Value {
    let text = common::stdout_of(
        smtlab()
            .args(["yield", "--dry-run", "--json", "--sysfs-root"])
            .arg(root)
            .args(extra),
    );
    serde_json::from_str(&text).expect("JSON")
}

fn cpus_of(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect()
}

#[test]
fn dry_run_on_a_synthetic_smt_tree_shows_three_layouts_on_the_same_cores() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 4, 2, "on");
    let p = dry_run_json(tmp.path(), &[]);
    assert_eq!(p["cores"], 4);
    assert_eq!(p["threads_per_core"], 2);
    let layouts = p["layouts"].as_array().unwrap();
    let names: Vec<&str> = layouts
        .iter()
        .map(|l| l["layout"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["one-per-core", "all", "pairs"]);
    let threads = |i: usize| layouts[i]["threads"].as_u64().unwrap();
    assert_eq!((threads(0), threads(1), threads(2)), (4, 8, 4));
    // one-per-core: the first sibling of each core; all: every sibling of the same cores;
    // pairs: both siblings of half of them.
    assert_eq!(cpus_of(&layouts[0]["cpus"]), [0, 1, 2, 3]);
    assert_eq!(cpus_of(&layouts[1]["cpus"]), (0..8).collect::<Vec<_>>());
    assert_eq!(cpus_of(&layouts[2]["cpus"]), [0, 1, 4, 5]);
    assert_eq!(layouts[2]["cores"].as_array().unwrap().len(), 2);
    let workloads: Vec<&str> = p["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(workloads.contains(&"prime") && workloads.contains(&"hot-page/ttas"));
    assert!(workloads.contains(&"hot-page/mutex") && workloads.contains(&"l2"));
    // --cores 3 is odd: pairs keeps every thread on a shared core.
    let p = dry_run_json(tmp.path(), &["--cores", "3", "--workloads", "int"]);
    assert_eq!(p["layouts"][1]["threads"], 6);
    assert_eq!(p["layouts"][2]["threads"], 2);
    assert!(p["notes"].to_string().contains("odd"), "{p}");
    // SQLite is left out with the reason; nothing else changes.
    let p = dry_run_json(tmp.path(), &["--db", "sqlite", "--workloads", "int"]);
    assert_eq!(p["workloads"].as_array().unwrap().len(), 1);
    assert!(
        p["left_out"][0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("single writer: cannot show SMT capacity"),
        "{p}"
    );
    // The text form names the scope unit, each thread's CPU and core, and the run count.
    let text = common::stdout_of(
        smtlab()
            .args(["yield", "--dry-run", "--repeat", "3", "--sysfs-root"])
            .arg(tmp.path()),
    );
    for s in [
        "3 layouts on the same 4 cores within package 0",
        "one-per-core: 4 threads on 4 cores, CPUs 0-3",
        "all: 8 threads on 4 cores, CPUs 0-7",
        "pairs: 4 threads on 2 cores, CPUs 0-1,4-5",
        "THREAD  CPU  CORE",
        "3 rounds = 72 runs",
    ] {
        assert!(text.contains(s), "missing `{s}`:\n{text}");
    }
}

/// The 2-package SMT dump (hwloc's 32intel64-2p8co2t: 2 × 8 cores × 2 threads, siblings
/// i and i+16), or None with the reason printed.
fn two_package_dump(tmp: &Path) -> Option<PathBuf> {
    let dir = std::env::var_os("SMTLAB_TOPOLOGY_DUMPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/topology")
        });
    let tarball = dir.join("hwloc/32intel64-2p8co2t+8ve.tar.bz2");
    if !tarball.is_file() {
        crate::common::skip(
            crate::common::Need::Dumps,
            &crate::common::no_dump(&dir, &tarball),
        );
        return None;
    }
    let ok = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp)
        .status()
        .expect("tar runs")
        .success();
    assert!(ok, "unpacking {}", tarball.display());
    Some(tmp.join("32intel64-2p8co2t+8ve"))
}

#[test]
fn dry_run_on_a_two_package_dump_stays_inside_package_0() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = two_package_dump(tmp.path()) else {
        return;
    };
    let package0: Vec<u64> = (0..8).chain(16..24).collect();
    let p = dry_run_json(&root, &[]);
    assert_eq!(p["cores"], 8);
    assert_eq!(p["scope"]["label"], "package 0");
    for l in p["layouts"].as_array().unwrap() {
        for c in cpus_of(&l["cpus"]) {
            assert!(package0.contains(&c), "{} uses CPU {c}: {l}", l["layout"]);
        }
    }
    assert_eq!(cpus_of(&p["layouts"][1]["cpus"]), {
        let mut v = package0.clone();
        v.sort();
        v
    });
    let text = common::stdout_of(
        smtlab()
            .args(["yield", "--dry-run", "--sysfs-root"])
            .arg(&root),
    );
    assert!(
        text.contains("on the same 8 cores within package 0 (CPUs 0-7,16-23; one of 2 such units"),
        "{text}"
    );
    assert!(text.contains("all: 16 threads on 8 cores"), "{text}");
    // --within machine: one-per-core spreads over both packages.
    let p = dry_run_json(&root, &["--within", "machine", "--cores", "4"]);
    let opc = cpus_of(&p["layouts"][0]["cpus"]);
    assert!(opc.iter().any(|&c| c >= 8), "{opc:?}");
    // The 4-package dump: package 0 only.
    let tmp4 = tempfile::tempdir().unwrap();
    if let Some(root4) = common::smt_dump(tmp4.path()) {
        let p = dry_run_json(&root4, &[]);
        assert_eq!(cpus_of(&p["layouts"][1]["cpus"]), [0, 4, 8, 12]);
    }
}

#[test]
fn without_siblings_nothing_runs_and_the_reason_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 4, 1, "notsupported");
    smtlab()
        .args(["yield", "--dry-run", "--sysfs-root"])
        .arg(tmp.path())
        .assert()
        .code(3)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("`yield` needs SMT siblings"))
        .stderr(predicate::str::contains("nothing was run"));
    let off = tempfile::tempdir().unwrap();
    tree(off.path(), 4, 1, "off");
    smtlab()
        .args(["yield", "--dry-run", "--sysfs-root"])
        .arg(off.path())
        .assert()
        .code(3)
        .stderr(predicate::str::contains("smt/control = off"));
    // A live run on this machine when it has no siblings: exit 3 before anything runs.
    let here = smtlab::topology::discover(Path::new("/")).expect("this machine's topology");
    if here.threads_per_core() > 1 {
        crate::common::skip(
            crate::common::Need::Machine,
            "the live no-SMT check: this machine has SMT siblings",
        );
        return;
    }
    smtlab()
        .args(["yield", "-d", "10ms", "--warmup", "0", "--repeat", "1"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("needs SMT siblings"));
}

#[test]
fn bad_input_is_refused_with_the_value() {
    for (args, needle) in [
        (vec!["--cores", "0"], "--cores"),
        (vec!["--repeat", "0"], "--repeat"),
        (vec!["--workloads", "prime,bogus"], "`bogus`"),
        (vec!["--workloads", "hot-page/spin"], "spin"),
        (vec!["--workloads", "insert"], "--db"),
        (vec!["--duration", "0"], "--duration"),
    ] {
        smtlab()
            .arg("yield")
            .args(&args)
            .args(["--dry-run"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 2, 2, "on");
    smtlab()
        .args(["yield", "--cores", "3", "--dry-run", "--sysfs-root"])
        .arg(tmp.path())
        .assert()
        .code(3)
        .stderr(predicate::str::contains("needs 3 cores"));
    // A dump is for reading only.
    smtlab()
        .args(["yield", "--sysfs-root"])
        .arg(tmp.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("for reading only"));
}

#[test]
fn fake_engine_report_has_a_yield_per_workload_with_its_interval_and_class() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 2, 2, "on");
    let topo = smtlab::topology::discover(tmp.path()).unwrap();
    let d = Config::default();
    let cfg = Config::new(
        Subject::parse_list("prime,l2,hot-page/mutex,hot-page/ttas").unwrap(),
        d.cores,
        d.within,
        smtlab::engine::RunSpec::new(
            std::time::Duration::from_millis(10),
            std::time::Duration::from_millis(100),
        )
        .unwrap(),
        3,
        d.db,
    )
    .unwrap();
    let planned = smt_yield::plan(&topo, &cfg, None).unwrap();
    let mut lines = Vec::new();
    let engine = FakeEngine::new(3);
    let rep = smt_yield::run_planned(&engine, &topo, &cfg, &planned, &mut |m| {
        lines.push(m.to_string())
    })
    .unwrap();
    assert!(rep.synthetic && !rep.interrupted);
    assert_eq!(lines.len(), 4 * 3 * 3, "one line per run: {lines:?}");
    assert!(
        lines[0].starts_with("[1/36] round 1 prime one-per-core:"),
        "{lines:?}"
    );
    assert!(lines[1].contains("prime all"), "interleaved: {lines:?}");
    assert_eq!(rep.workloads.len(), 4);
    for w in &rep.workloads {
        assert_eq!(w.runs.len(), 9, "{}", w.workload);
        // Counterbalanced, each run recording where it ran: round 1 runs one-per-core,
        // all, pairs; round 2 the other way round; round 3 all, pairs, one-per-core.
        let pos = |round: usize, l: Layout| {
            w.runs
                .iter()
                .find(|r| r.round == round && r.layout == l)
                .unwrap()
                .position
        };
        let order = |round| [Layout::OnePerCore, Layout::All, Layout::Pairs].map(|l| pos(round, l));
        assert_eq!(
            [order(0), order(1), order(2)],
            [[1, 2, 3], [3, 2, 1], [3, 1, 2]],
            "{}",
            w.workload
        );
        for r in &w.runs {
            assert!(r.observed_cpus.is_subset(&r.cpus) && r.pinning_ok);
        }
        // The fake engine gives every thread on its own CPU the same rate: `all` doubles
        // the throughput, a thread in `pairs` runs as fast as alone.
        let y = w.smt_yield.as_ref().expect("a yield");
        assert!((y.comparison.estimate - 2.0).abs() < 0.1, "{y:?}");
        assert_eq!(y.comparison.effect, Effect::Gain);
        assert_eq!(y.comparison.n, 3);
        // 3 rounds give a Student-t interval, not an indicative one.
        assert!(!y.comparison.indicative);
        assert_eq!(y.rounds, [0, 1, 2]);
        let s = w.shared_core_speed.as_ref().expect("a shared-core speed");
        assert!((s.comparison.estimate - 1.0).abs() < 0.05, "{s:?}");
        assert_eq!(w.layout(Layout::All).unwrap().threads, 4);
        assert_eq!(w.layout(Layout::Pairs).unwrap().threads, 2);
    }
    let text = smtlab::render::terminal::draw(&smtlab::experiments::smt_yield::view::blocks(&rep));
    for s in [
        "SMT yield on the same 2 cores within package 0",
        "SYNTHETIC",
        "95 % CI",
        "Student-t intervals of the per-round log ratios",
        "gain",
        "WORKLOAD",
        "hot-page/ttas",
        "left out: insert: not run",
        "else the mean time per operation",
    ] {
        assert!(text.contains(s), "missing `{s}`:\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("prime") && l.contains("95 % CI")),
        "3 rounds give a Student-t interval:\n{text}"
    );
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(
        json["workloads"][0]["smt_yield"]["comparison"]["effect"],
        "gain"
    );
    assert!(json["workloads"][0]["runs"][0]["ops_per_sec"].is_number());
    println!("{text}");
}

#[test]
fn real_engine_runs_every_workload_in_every_layout() {
    // The real threads on this machine's CPUs 0 and 1, described as the two siblings of
    // one core: the code path of a live run (pinning, fresh workloads per run, latency
    // histograms), whatever this machine's own topology. Nothing is asserted of speed.
    let here = smtlab::topology::discover(Path::new("/")).expect("this machine's topology");
    if !here.allowed().contains(0) || !here.allowed().contains(1) {
        crate::common::skip(
            crate::common::Need::Machine,
            "CPUs 0 and 1 are not both usable here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 1, 2, "on");
    let topo = smtlab::topology::discover(tmp.path()).unwrap();
    let d = Config::default();
    let cfg = Config::new(
        Subject::parse_list("int,l2,hot-page/mutex,hot-page/ttas").unwrap(),
        d.cores,
        d.within,
        smtlab::engine::RunSpec::new(
            std::time::Duration::from_millis(20),
            std::time::Duration::from_millis(60),
        )
        .unwrap(),
        2,
        d.db,
    )
    .unwrap();
    let planned = smt_yield::plan(&topo, &cfg, None).unwrap();
    assert_eq!(
        planned.layouts.len(),
        2,
        "one core: no separate pairs layout"
    );
    let rep = smt_yield::run_planned(
        &smtlab::engine::RealEngine,
        &topo,
        &cfg,
        &planned,
        &mut |_| {},
    )
    .unwrap();
    assert!(!rep.synthetic);
    for w in &rep.workloads {
        assert_eq!(w.runs.len(), 4 + repeated_runs(w), "{}", w.workload);
        for r in &w.runs {
            assert!(r.ops_per_sec > 0.0, "{}: {r:?}", w.workload);
            assert!(r.observed_cpus.is_subset(&r.cpus), "{r:?}");
        }
        assert_yield_or_disturbed(w);
        assert!(w.shared_core_speed.is_none());
        let timed = w.workload.starts_with("hot-page");
        let s = w.layout(Layout::All).unwrap();
        // Summaries leave disturbed runs out: with every `all` run disturbed, none is left.
        if s.runs > 0 {
            assert_eq!(s.latency_p99_ns.is_some(), timed, "{}: {s:?}", w.workload);
        }
    }
}

#[test]
fn postgres_inserts_run_in_every_layout_with_the_rows_checked() {
    if let Err(e) = smtlab::oltp::managed::find_binaries() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI must have PostgreSQL: {e:#}"
        );
        crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
        return;
    }
    let here = smtlab::topology::discover(Path::new("/")).expect("this machine's topology");
    if !here.allowed().contains(0) || !here.allowed().contains(1) {
        crate::common::skip(
            crate::common::Need::Machine,
            "CPUs 0 and 1 are not both usable here",
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 1, 2, "on");
    let topo = smtlab::topology::discover(tmp.path()).unwrap();
    use smtlab::oltp::{DbTarget, Durability, KeyMode, Schema, TableSpec};
    let d = Config::default();
    let cfg = Config::new(
        vec![Subject::Insert],
        d.cores,
        d.within,
        smtlab::engine::RunSpec::new(
            std::time::Duration::from_millis(50),
            std::time::Duration::from_millis(200),
        )
        .unwrap(),
        2,
        Some(smt_yield::InsertTarget {
            db: DbTarget::PostgresManaged,
            durability: Durability::Delayed,
            table: TableSpec {
                schema: Schema::Seed001,
                key: KeyMode::Sequential,
                rows_per_txn: 1,
            },
        }),
    )
    .unwrap();
    let planned = smt_yield::plan(&topo, &cfg, None).unwrap();
    assert_eq!(planned.plan.workloads, ["insert"]);
    let rep = smt_yield::run_planned(
        &smtlab::engine::RealEngine,
        &topo,
        &cfg,
        &planned,
        &mut |_| {},
    )
    .unwrap();
    let w = &rep.workloads[0];
    assert_eq!(w.unit, "rows");
    assert_eq!(w.runs.len(), 4 + repeated_runs(w));
    for r in &w.runs {
        assert_eq!(r.rows_verified, Some(true), "{r:?}");
        assert!(r.ops_per_sec > 0.0 && r.latency_p99_ns.is_some(), "{r:?}");
    }
    assert_yield_or_disturbed(w);
}

/// AMD family 15h (Opteron 6276): the thread siblings the kernel lists are CMT modules,
/// two integer cores each, not SMT threads: `yield` refuses (exit 3) and says so, instead
/// of measuring an "SMT yield" of a CPU without SMT.
#[test]
fn yield_on_bulldozer_cmt_modules_is_refused_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(root) = common::cmt_dump(tmp.path()) else {
        return;
    };
    smtlab()
        .args(["yield", "--dry-run", "--sysfs-root"])
        .arg(&root)
        .assert()
        .code(3)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("CMT module"))
        .stderr(predicate::str::contains("nothing was run"));
}

/// The fake engine's yield report of `prime` on a 2 × 2 tree, for the wording tests.
fn fake_prime_report() -> smt_yield::YieldReport {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 2, 2, "on");
    let topo = smtlab::topology::discover(tmp.path()).unwrap();
    let d = Config::default();
    let cfg = Config::new(
        Subject::parse_list("prime").unwrap(),
        d.cores,
        d.within,
        smtlab::engine::RunSpec::new(
            std::time::Duration::from_millis(10),
            std::time::Duration::from_millis(100),
        )
        .unwrap(),
        3,
        d.db,
    )
    .unwrap();
    let planned = smt_yield::plan(&topo, &cfg, None).unwrap();
    smt_yield::run_planned(&FakeEngine::new(3), &topo, &cfg, &planned, &mut |_| {}).unwrap()
}

/// One core of four threads: `pairs` (two threads on each of N/2 cores) needs two cores,
/// and it would not be `all` (four threads) anyway.
#[test]
fn yield_one_core_smt4_note_does_not_say_pairs_would_be_all() {
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 2, 4, "on");
    let topo = smtlab::topology::discover(tmp.path()).unwrap();
    let d = Config::default();
    let cfg = Config::new(d.subjects, Some(1), d.within, d.spec, d.repeat, d.db).unwrap();
    let p = smt_yield::plan(&topo, &cfg, None).unwrap().plan;
    let notes = p.notes.join("\n");
    assert!(!notes.contains("would be the `all` layout"), "{notes}");
    assert!(notes.contains("`pairs` not run"), "{notes}");
    assert!(notes.contains("two cores"), "{notes}");
    // With two threads per core one core's `pairs` would indeed be `all`.
    let tmp = tempfile::tempdir().unwrap();
    tree(tmp.path(), 2, 2, "on");
    let topo = smtlab::topology::discover(tmp.path()).unwrap();
    let p = smt_yield::plan(&topo, &cfg, None).unwrap().plan;
    assert!(
        p.notes.iter().any(|n| n.contains("`all` layout")),
        "{:?}",
        p.notes
    );
}

/// The split into IPC × cycles says how much IPC changed, not why: the note must not name
/// shared execution units or caches as the cause, which no counter here measured.
#[test]
fn yield_ipc_note_names_no_unmeasured_in_core_cause() {
    let mut rep = fake_prime_report();
    rep.synthetic = false;
    rep.workloads[0].yield_split = Some(smt_yield::model::YieldSplit {
        ipc_one_per_core: 1.6,
        ipc_all: 1.0,
        ipc_ratio: 0.625,
        cycles_per_sec_ratio: 2.0,
        instructions_per_op_ratio: 1.0,
        rounds: 3,
    });
    let text = smtlab::render::terminal::draw(&smtlab::experiments::smt_yield::view::blocks(&rep));
    assert!(text.contains("IPC ×"), "{text}");
    assert!(!text.contains("shared execution units"), "{text}");
    assert!(text.contains("not measured"), "{text}");
}

/// `int` does an operation in well under a nanosecond per thread: "mean 0 ns" is false.
#[test]
fn yield_int_sub_nanosecond_mean_is_not_0_ns() {
    let mut rep = fake_prime_report();
    for l in &mut rep.workloads[0].layouts {
        l.latency_p50_ns = None;
        l.latency_p99_ns = None;
        l.time_per_op_ns = Some(0.31);
    }
    let text = smtlab::render::terminal::draw(&smtlab::experiments::smt_yield::view::blocks(&rep));
    assert!(!text.contains("mean 0 ns"), "{text}");
    assert!(text.contains("mean 0.31 ns"), "{text}");
}

/// The export writes every run's raw numbers as CSV and the terminal's tables as Markdown.
#[test]
fn yield_exports_parse_back() {
    let rep = fake_prime_report();
    let dir = tempfile::tempdir().unwrap();
    let e = smtlab::render::export::Exports {
        json: Some(dir.path().join("y.json")),
        csv: Some(dir.path().join("y.csv")),
        markdown: Some(dir.path().join("y.md")),
    };
    e.check().unwrap();
    e.write(|| smtlab::experiments::smt_yield::view::export(&rep))
        .unwrap();
    let mut r = csv::Reader::from_path(dir.path().join("y.csv")).unwrap();
    let head = r.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let runs: Vec<_> = rep.workloads.iter().flat_map(|w| w.runs.iter()).collect();
    assert_eq!(rows.len(), runs.len());
    let ops: f64 = rows[0][col("ops_per_sec")].parse().unwrap();
    assert_eq!(ops, runs[0].ops_per_sec);
    assert_eq!(&rows[0][col("workload")], "prime");
    let md = std::fs::read_to_string(dir.path().join("y.md")).unwrap();
    assert!(
        md.starts_with("# smtlab yield: SMT yield on the same 2 cores"),
        "{md}"
    );
    assert!(
        md.contains("| WORKLOAD | ONE-PER-CORE /S | ALL /S | SMT YIELD | INTERVAL |"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("y.json")).unwrap()).unwrap();
    assert_eq!(json["workloads"][0]["workload"], "prime");
}

/// The runs of rounds run again because a run was disturbed while it ran (a busy machine:
/// other work kept a measured thread off its CPU), after the 2 rounds asked for: at most
/// one more round of both layouts, and only with a disturbed run to replace.
fn repeated_runs(w: &smtlab::experiments::smt_yield::model::WorkloadResult) -> usize {
    let extra = w.runs.iter().filter(|r| r.round >= 2).count();
    assert!(
        extra == 0 || (extra == 2 && w.runs.iter().any(|r| r.disturbed.is_some())),
        "{}: {extra} runs after the rounds asked for",
        w.workload
    );
    extra
}

/// A yield, or every round left out for a run disturbed while it ran (the tests of this
/// binary share the machine's CPUs, so a real run here can be kept off its CPU), each
/// with its reason.
fn assert_yield_or_disturbed(w: &smtlab::experiments::smt_yield::model::WorkloadResult) {
    if w.smt_yield.is_some() {
        return;
    }
    let mut rounds: Vec<usize> = w.runs.iter().map(|r| r.round).collect();
    rounds.dedup();
    for k in rounds {
        assert!(
            w.runs
                .iter()
                .any(|r| r.round == k && r.disturbed.as_deref().is_some_and(|d| !d.is_empty())),
            "{}: no yield, and round {k} was not disturbed: {:?}",
            w.workload,
            w.runs
        );
    }
}
