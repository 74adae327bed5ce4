//! How long `smtlab merge` takes over a fleet (`cargo bench --bench merge`): 1,000
//! results.json files as the fake engine's study writes them (every section at full size,
//! one directory per host, three machine types), merged as the command does it — find the
//! files, read and decode them on every CPU, group, pool, and render fleet.json, fleet.md,
//! fleet.html and the Prometheus text — timed over several passes with the files in the
//! page cache (the first, untimed pass puts them there). The goal is under 2 s.
//!
//! `SMTLAB_BENCH_FILES` (default 1000) and `SMTLAB_BENCH_PASSES` (default 5) override the
//! defaults.

use smtlab::fleet;
use std::time::{Duration, Instant};

const GOAL: Duration = Duration::from_secs(2);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let files = env("SMTLAB_BENCH_FILES", 1000);
    let passes = env("SMTLAB_BENCH_PASSES", 5).max(1);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let t = Instant::now();
    fleet::fixture::write_hosts(dir.path(), files).expect("writing the fleet");
    let bytes: u64 = walk(dir.path());
    println!(
        "fleet: {files} results.json files, {:.0} MB, written in {:.1} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let inputs = [dir.path().to_path_buf()];
    let mut times = Vec::new();
    for pass in 0..=passes {
        let t = Instant::now();
        let f = fleet::merge(&inputs, threads, fleet::provenance("bench".into())).expect("merge");
        let out = f.to_json().expect("json").len()
            + fleet::view::markdown(&f).len()
            + fleet::view::html(&f).len()
            + fleet::view::prometheus(&f).len();
        let took = t.elapsed();
        assert_eq!(f.hosts, files, "every file merged");
        if pass == 0 {
            println!(
                "warm-up pass (reads the files into the page cache): {:.3} s, {} machine types, {:.1} MB written",
                took.as_secs_f64(),
                f.types.len(),
                out as f64 / 1e6
            );
            continue;
        }
        times.push(took);
    }
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "merge of {files} files on {threads} thread(s), {passes} passes: median {:.3} s, fastest {:.3} s, slowest {:.3} s ({:.0} MB/s at the median)",
        median.as_secs_f64(),
        times[0].as_secs_f64(),
        times[times.len() - 1].as_secs_f64(),
        bytes as f64 / 1e6 / median.as_secs_f64()
    );
    println!(
        "goal: under {} s for 1,000 files: {}",
        GOAL.as_secs(),
        if files >= 1000 && median < GOAL {
            "met"
        } else if files < 1000 {
            "not checked (fewer than 1,000 files)"
        } else {
            "NOT met"
        }
    );
}

fn walk(d: &std::path::Path) -> u64 {
    std::fs::read_dir(d)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        walk(&p)
                    } else {
                        e.metadata().map_or(0, |m| m.len())
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}
