//! rwcache: every scheme is a correct cache (same final contents for the same seeded
//! operations; readers never see a torn entry or one older than a completed write; writers
//! progress under constant reads), the report pipeline over the fake engine, and the CLI's
//! bad-input errors and JSON.

use assert_cmd::Command;
use smtlab::engine::{FakeEngine, RunSpec};
use smtlab::experiments::rwcache::{self, RwcacheConfig, TableSpec};
use smtlab::placement::Request;
use smtlab::rwcache::{Entry, Layout, SchemeKind};
use smtlab::stats::SplitMix64;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The table after applying `writes` to the initial one, by a plain model.
fn model(layout: &Layout, writes: &[Entry]) -> Vec<Entry> {
    let mut latest: std::collections::HashMap<u64, Entry> = std::collections::HashMap::new();
    for w in writes {
        latest.insert(w.key, *w);
    }
    layout
        .initial()
        .into_iter()
        .map(|e| latest.get(&e.key).copied().unwrap_or(e))
        .collect()
}

#[test]
fn every_scheme_ends_with_the_same_contents_single_threaded() {
    let layout = Layout::new(1000);
    let mut rng = SplitMix64::new(2024);
    let mut writes = Vec::new();
    let ops: Vec<(bool, u64)> = (0..20_000)
        .map(|_| (rng.below(10) == 0, rng.below(1000)))
        .collect();
    let mut contents = Vec::new();
    // The `none` reference (no lock) runs the same code single-threaded: it must agree too.
    for kind in SchemeKind::ALL.into_iter().chain([SchemeKind::Unlocked]) {
        let c = kind.build(&layout, 1);
        let mut h = c.handle(0);
        let mut version = 0;
        writes.clear();
        for &(write, key) in &ops {
            if write {
                version += 1;
                let e = Entry::new(key, version);
                assert!(c.replace(&mut h, e), "{kind}: key {key} missing");
                writes.push(e);
            } else {
                let e = c.get(&mut h, key).expect("present");
                assert_eq!(e.key, key);
                assert!(e.is_consistent());
            }
        }
        let s = c.stats(&h);
        assert_eq!(c.get(&mut h, 5000), None, "{kind}: absent key found");
        assert_eq!(s.writes.counts.acquisitions, writes.len() as u64, "{kind}");
        assert_eq!(
            s.reads.counts.acquisitions,
            (ops.len() - writes.len()) as u64,
            "{kind}"
        );
        drop(h);
        contents.push((kind, c.contents()));
    }
    let want = model(&layout, &writes);
    for (kind, got) in &contents {
        assert!(
            got == &want,
            "{kind} ends with other contents than the model"
        );
    }
}

#[test]
fn every_scheme_ends_with_the_same_contents_with_concurrent_writers() {
    // Two threads, each writing its own keys (key % 2 == thread) in a seeded order while
    // reading everything: the final table is determined whatever the interleaving.
    let layout = Layout::new(500);
    let seqs: Vec<Vec<Entry>> = (0..2u64)
        .map(|t| {
            let mut rng = SplitMix64::new(77 + t);
            (1..=3000u64)
                .map(|v| Entry::new(rng.below(250) * 2 + t, v))
                .collect()
        })
        .collect();
    // Each key's last write is the last in its own thread's sequence.
    let want = {
        let mut last: std::collections::HashMap<u64, Entry> = Default::default();
        for s in &seqs {
            for e in s {
                last.insert(e.key, *e);
            }
        }
        let v: Vec<Entry> = last.into_values().collect();
        model(&layout, &v)
    };
    for kind in SchemeKind::ALL {
        let c = kind.build(&layout, 2);
        std::thread::scope(|sc| {
            for (t, seq) in seqs.iter().enumerate() {
                let c = &c;
                sc.spawn(move || {
                    let mut h = c.handle(t);
                    for (i, e) in seq.iter().enumerate() {
                        assert!(c.replace(&mut h, *e));
                        let r = c.get(&mut h, (i as u64 * 7) % 500).unwrap();
                        assert!(r.is_consistent(), "{kind}: torn {r:?}");
                    }
                });
            }
        });
        assert!(c.contents() == want, "{kind}: contents differ");
    }
}

/// Readers check every entry they copy: not torn, the right key, and not older than the
/// last write that completed before the read began.
fn check_fresh_and_whole(kind: SchemeKind) {
    const KEYS: u64 = 64;
    let layout = Layout::new(KEYS as usize);
    let c = kind.build(&layout, 3);
    let done: Vec<AtomicU64> = (0..KEYS).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let start = Barrier::new(3);
    std::thread::scope(|sc| {
        for t in 1..3 {
            let (c, done, stop, reads, start) = (&c, &done, &stop, &reads, &start);
            sc.spawn(move || {
                let mut h = c.handle(t);
                let mut rng = SplitMix64::new(t as u64);
                let mut n = 0u64;
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let k = rng.below(KEYS);
                    let floor = done[k as usize].load(Ordering::Acquire);
                    let e = c.get(&mut h, k).expect("present");
                    assert_eq!(e.key, k, "{kind}: wrong key");
                    assert!(e.is_consistent(), "{kind}: torn entry {e:?}");
                    assert!(
                        e.version >= floor,
                        "{kind}: key {k} read version {} after version {floor} was written",
                        e.version
                    );
                    n += 1;
                }
                reads.fetch_add(n, Ordering::Relaxed);
            });
        }
        let mut h = c.handle(0);
        let mut rng = SplitMix64::new(9);
        start.wait();
        let t0 = Instant::now();
        let mut v = 0;
        while t0.elapsed() < Duration::from_millis(300) {
            v += 1;
            let k = rng.below(KEYS);
            assert!(c.replace(&mut h, Entry::new(k, v)));
            done[k as usize].store(v, Ordering::Release);
        }
        stop.store(true, Ordering::Relaxed);
        assert!(v > 100, "{kind}: only {v} writes in 300 ms");
    });
    assert!(
        reads.load(Ordering::Relaxed) > 100,
        "{kind}: readers starved"
    );
}

#[test]
fn seqlock_readers_see_whole_and_fresh_entries() {
    check_fresh_and_whole(SchemeKind::SeqLock);
}

#[test]
fn rcu_readers_see_whole_and_fresh_entries() {
    check_fresh_and_whole(SchemeKind::Rcu);
}

#[test]
fn lock_based_readers_see_whole_and_fresh_entries() {
    for k in [
        SchemeKind::Spin,
        SchemeKind::RwSpin,
        SchemeKind::RwLock,
        SchemeKind::ParkingLotRw,
        SchemeKind::BrLock,
    ] {
        check_fresh_and_whole(k);
    }
}

#[test]
fn writers_progress_under_constant_reads() {
    // Two readers never pause; the writer must still finish its writes with a bounded
    // wait (writer preference in rwspin, the flag in brlock, no waiting in seqlock/rcu).
    for kind in SchemeKind::ALL {
        let layout = Layout::new(1000);
        let c = kind.build(&layout, 3);
        let stop = AtomicBool::new(false);
        let start = Barrier::new(3);
        let (worst, total, stats) = std::thread::scope(|sc| {
            for t in 1..3 {
                let (c, stop, start) = (&c, &stop, &start);
                sc.spawn(move || {
                    let mut h = c.handle(t);
                    let mut k = t as u64;
                    start.wait();
                    while !stop.load(Ordering::Relaxed) {
                        k = (k + 7) % 1000;
                        std::hint::black_box(c.get(&mut h, k));
                    }
                });
            }
            let mut h = c.handle(0);
            start.wait();
            let t0 = Instant::now();
            let mut worst = Duration::ZERO;
            for v in 1..=200u64 {
                let w0 = Instant::now();
                assert!(c.replace(&mut h, Entry::new(v % 1000, v)));
                worst = worst.max(w0.elapsed());
            }
            let total = t0.elapsed();
            stop.store(true, Ordering::Relaxed);
            (worst, total, c.stats(&h))
        });
        assert_eq!(stats.writes.counts.acquisitions, 200, "{kind}");
        assert!(
            total < Duration::from_secs(10),
            "{kind}: 200 writes took {total:?} under constant reads"
        );
        assert!(
            worst < Duration::from_secs(2),
            "{kind}: a write waited {worst:?}"
        );
    }
}

#[test]
fn the_no_lock_reference_is_single_threaded_only() {
    let layout = Layout::new(100);
    assert!(std::panic::catch_unwind(|| SchemeKind::Unlocked.build(&layout, 2)).is_err());
    let c = SchemeKind::Unlocked.build(&layout, 1);
    let h = c.handle(0);
    // A second live handle (a second thread) is refused; once the first is gone it is fine.
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.handle(0))).is_err());
    drop(h);
    let mut h = c.handle(0);
    assert_eq!(c.get(&mut h, 7), Some(Entry::new(7, 0)));
}

fn topo() -> smtlab::topology::Topology {
    smtlab::topology::discover(std::path::Path::new("/")).unwrap()
}

#[test]
fn fake_engine_report_has_every_table() {
    let cfg = RwcacheConfig::new(
        SchemeKind::ALL.to_vec(),
        vec![1, 2],
        Request::Spread,
        smtlab::placement::Scope::Package,
        TableSpec::default(),
        RunSpec::new(Duration::ZERO, Duration::from_millis(100)).unwrap(),
        3,
        1,
    )
    .unwrap();
    let fake = FakeEngine::new(5);
    let mut seen = 0;
    let r = rwcache::run(&fake, &topo(), &cfg, &mut |_, _, _, _| seen += 1).unwrap();
    // The `none` reference runs once per round too, but is not reported as a scheme run.
    assert_eq!(seen, 7 * 2 * 3);
    assert_eq!(r.results.len(), 14);
    let reference = r.reference.as_ref().expect("the no-lock reference ran");
    assert_eq!(
        (reference.scheme, reference.threads, reference.runs),
        (SchemeKind::Unlocked, 1, 3)
    );
    assert!(r.results.iter().all(|x| x.scheme != SchemeKind::Unlocked));
    for x in &r.results {
        let share = x.lock_cpu_share.expect("measured by subtraction");
        assert!(
            (0.0..=1.0).contains(&share.min) && share.max <= 1.0,
            "{share:?}"
        );
        assert!(x.lock_cpu_ns_per_request.unwrap() >= 0.0);
        assert!((0.0..=1.0).contains(&x.wait_cpu_share));
    }
    assert_eq!(r.before_after.len(), 2);
    assert_eq!(r.read_cost.len(), 7);
    let best = r.best.as_ref().unwrap();
    assert_eq!(best.per_threads.len(), 2);
    assert!(best.overall_score > 0.0 && best.overall_score <= 1.0);
    assert!(r.verdict.iter().any(|v| v.starts_with("spin → rwspin")));
    let j = serde_json::to_value(&r).unwrap();
    assert!(j["results"][0]["requests_per_sec"]["median"].is_number());
    assert!(j["results"][0]["writer_wait_p99_ns"].is_number());
    assert!(j["results"][0]["lock_cpu_share"]["median"].is_number());
    assert!(j["results"][0]["lock_cpu_ns_per_request"].is_number());
    assert!(j["results"][0]["wait_cpu_share"].is_number());
    assert_eq!(j["results"][1]["scheme"], "rwspin");
    assert_eq!(j["reference"]["scheme"], "none");
    assert!(j["reference"]["cpu_ns_per_request"]["median"].is_number());
    assert!(j["before_after"][0]["before"]["lock_cpu_pct"].is_number());
    let text = smtlab::experiments::rwcache::view::text(&r);
    for want in [
        "before/after at 2 threads",
        "% CPU IN LOCK",
        "none (no lock: reference)",
        "CPU in the lock is found by subtraction",
        "W WAIT P99",
        "best overall",
    ] {
        assert!(text.contains(want), "missing `{want}` in\n{text}");
    }
}

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").unwrap()
}

#[test]
fn bad_input_names_the_value_and_exits_2() {
    for (args, want) in [
        (
            vec!["--entries", "0"],
            "--entries 0: expected a whole number between 1 and",
        ),
        (
            vec!["--write-ratio", "2"],
            "--write-ratio 2: expected a fraction between 0 and 1",
        ),
        (
            vec!["--scheme", "mcs"],
            "unknown scheme `mcs`; valid: spin, rwspin",
        ),
        (
            vec!["--threads", "0"],
            "`0`: expected a whole number between 1 and",
        ),
        (
            vec!["--lookups", "0"],
            "--lookups 0: expected a whole number between 1 and",
        ),
    ] {
        let out = smtlab()
            .arg("rwcache")
            .args(&args)
            .args(["--duration", "10ms"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn short_real_run_gives_json_with_units() {
    let out = smtlab()
        .args([
            "rwcache",
            "--scheme",
            "spin,rwspin,seqlock",
            "--threads",
            "1",
            "--entries",
            "1000",
            "--duration",
            "150ms",
            "--warmup",
            "0",
            "--repeat",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert!(r["requests_per_sec"]["median"].as_f64().unwrap() > 0.0);
        assert!(r["reads"]["acquisitions"].as_u64().unwrap() > 0);
        let share = r["lock_cpu_share"]["median"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&share), "{share}");
        let wait = r["wait_cpu_share"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&wait), "{wait}");
    }
    assert_eq!(j["reference"]["scheme"], "none");
    assert!(
        j["reference"]["cpu_ns_per_request"]["median"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(j["before_after"][0]["before"]["scheme"], "spin");
    assert_eq!(j["before_after"][0]["after"]["scheme"], "rwspin");
}
