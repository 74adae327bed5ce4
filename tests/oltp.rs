//! The oltp database layer used directly (as `neighbors --workload oltp` does): SQLite
//! always, the managed PostgreSQL cluster when its binaries exist (skipped with the reason
//! otherwise, unless CI=true).

use smtlab::cpuset::CpuSet;
use smtlab::engine::RunSpec;
use smtlab::oltp::{
    Db, DbTarget, Durability, InsertWorkload, KeyMode, Schema, StopRule, TableSpec,
};
use smtlab::placement::{Plan, ThreadPlacement};
use std::time::Duration;

fn have_postgres() -> bool {
    match smtlab::oltp::managed::find_binaries() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("CI must have PostgreSQL: {e:#}");
            }
            crate::common::skip(crate::common::Need::Machine, &format!("{e:#}"));
            false
        }
    }
}

/// Every thread on the first usable CPU (pinning is then observable on any machine).
fn plan_on_first_cpu(threads: usize) -> Plan {
    let cpu = smtlab::affinity::process_affinity()
        .unwrap()
        .first()
        .unwrap();
    Plan {
        request: format!("cpus:{cpu}"),
        threads: (0..threads)
            .map(|thread| ThreadPlacement {
                thread,
                cpus: CpuSet::from_cpus([cpu]),
            })
            .collect(),
        oversubscribed: threads > 1,
        notes: vec![],
        scope: None,
    }
}

fn spec() -> TableSpec {
    TableSpec {
        schema: Schema::Seed001,
        key: KeyMode::Sequential,
        rows_per_txn: 1,
    }
}

#[test]
fn sqlite_sessions_insert_and_count_for_every_schema_and_key() {
    let db = Db::open(&DbTarget::Sqlite(None), Durability::Delayed, 2).unwrap();
    for schema in [Schema::Seed001, Schema::Seed002] {
        for key in [KeyMode::Sequential, KeyMode::Random] {
            let t = TableSpec {
                schema,
                key,
                rows_per_txn: 2,
            };
            let before = db.create_table(&t, 50).unwrap();
            assert!((49..=50).contains(&before), "{before}");
            let mut a = db.connect(&t, 0).unwrap();
            let mut b = db.connect(&t, 1).unwrap();
            for _ in 0..10 {
                assert_eq!(a.insert_txn().unwrap(), 2);
                assert_eq!(b.insert_txn().unwrap(), 2);
            }
            assert_eq!(db.count_rows(&t).unwrap(), before + 40, "{schema} {key}");
        }
    }
}

#[test]
fn sqlite_temp_dir_is_removed_on_close() {
    let db = Db::open(&DbTarget::Sqlite(None), Durability::Full, 1).unwrap();
    let d = db.describe();
    let path = d
        .split(" at ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&path).exists());
    db.close().unwrap();
    assert!(!std::path::Path::new(&path).exists());
}

#[test]
fn workload_on_the_engine_counts_what_it_committed() {
    let db = Db::open(&DbTarget::Sqlite(None), Durability::Delayed, 2).unwrap();
    let t = spec();
    let before = db.create_table(&t, 0).unwrap();
    let plan = plan_on_first_cpu(2);
    let w = InsertWorkload::new(&db, &t, &plan, StopRule::Duration).unwrap();
    let run = smtlab::engine::run(
        &plan,
        &RunSpec::new(Duration::from_millis(100), Duration::from_millis(300)).unwrap(),
        &w,
    )
    .unwrap();
    let out = w.finish().unwrap();
    assert!(out.rows_measured() > 0);
    // The engine samples at its last boundary and then raises the stop flag; rows
    // committed in between are in the table but not in the engine's count.
    assert!(out.rows_measured() >= run.total_ops());
    assert_eq!(db.count_rows(&t).unwrap(), before + out.rows_committed());
    assert!(!out.latency_ns.is_empty());
}

/// A fixed-work run on the engine: no warm-up, a 60 s give-up limit.
fn fixed_work(plan: &Plan, w: &InsertWorkload) -> smtlab::engine::RunResult {
    let spec = RunSpec::new(Duration::ZERO, Duration::from_secs(60)).unwrap();
    smtlab::engine::run(plan, &spec, w).unwrap()
}

#[test]
fn fixed_work_on_the_engine_does_each_threads_rows_and_ends_early() {
    let db = Db::open(&DbTarget::Sqlite(None), Durability::Delayed, 3).unwrap();
    let t = spec();
    db.create_table(&t, 0).unwrap();
    let plan = plan_on_first_cpu(3);
    let w = InsertWorkload::new(&db, &t, &plan, StopRule::RowsPerThread(120)).unwrap();
    let r = fixed_work(&plan, &w);
    let out = w.finish().unwrap();
    assert!(!r.interrupted);
    assert!(r.pinning_ok(), "{:?}", r.pinning_violations);
    assert!(out.threads.iter().all(|t| t.rows == 120 && t.completed));
    assert!(out.threads.iter().all(|t| t.elapsed_ns <= r.measured_ns));
    // The engine ended the run when the last thread returned, not at the 60 s limit.
    assert!(r.measured_ns < 30_000_000_000, "{} ns", r.measured_ns);
    assert_eq!(r.total_ops(), 360);
    assert_eq!(db.count_rows(&t).unwrap(), 360);
}

#[test]
fn managed_postgres_pins_backends_and_restores_them() {
    if !have_postgres() {
        return;
    }
    let db = Db::open(&DbTarget::PostgresManaged, Durability::Delayed, 2).unwrap();
    let cluster_dir = db.managed().unwrap().dir().to_path_buf();
    let t = TableSpec {
        schema: Schema::Seed002,
        key: KeyMode::Random,
        rows_per_txn: 3,
    };
    let before = db.create_table(&t, 30).unwrap();
    assert_eq!(before, 30);
    let plan = plan_on_first_cpu(2);
    let w = InsertWorkload::new(&db, &t, &plan, StopRule::RowsPerThread(30)).unwrap();
    assert_eq!(w.pinned_backends(), 2);
    let r = fixed_work(&plan, &w);
    assert!(!r.interrupted);
    let out = w.finish().unwrap();
    for th in &out.threads {
        assert_eq!(th.rows, 30);
        let pid = th.backend_pid.unwrap();
        // Restored: the backend may use every CPU the server could before (or has exited).
        if let Ok(a) = smtlab::affinity::get_affinity(pid) {
            assert!(!a.is_empty());
            assert_ne!(a, plan.threads[0].cpus, "backend {pid} still pinned");
        }
    }
    assert_eq!(db.count_rows(&t).unwrap(), before + 60);
    db.close().unwrap();
    assert!(!cluster_dir.exists());
}

#[test]
fn managed_cluster_is_removed_when_dropped_after_an_error() {
    if !have_postgres() {
        return;
    }
    let dir;
    {
        let db = Db::open(&DbTarget::PostgresManaged, Durability::Full, 1).unwrap();
        dir = db.managed().unwrap().dir().to_path_buf();
        assert!(dir.join("data/postmaster.pid").exists());
        // A failing step (no table yet): the error propagates and the Db drops.
        let t = spec();
        assert!(db.count_rows(&t).is_err());
    }
    assert!(!dir.exists());
}

#[test]
fn managed_cluster_is_removed_on_panic() {
    if !have_postgres() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let r = std::thread::spawn(move || {
        let db = Db::open(&DbTarget::PostgresManaged, Durability::Delayed, 1).unwrap();
        tx.send(db.managed().unwrap().dir().to_path_buf()).unwrap();
        panic!("boom while the cluster runs");
    })
    .join();
    assert!(r.is_err());
    let dir = rx.recv().unwrap();
    assert!(!dir.exists(), "{} left after a panic", dir.display());
}
