//! Counts, sizes and times far beyond the limits are refused before anything is allocated
//! or spawned: exit 2, the option, the value and the limit, in well under a second.

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn huge_counts_and_sizes_are_refused_at_once() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    let mut failures = Vec::new();
    for v in ["100000000", "100000000000"] {
        let cases: Vec<(Vec<String>, &str)> = vec![
            (
                vec!["plan".into(), "all".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec!["plan".into(), "os".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec![
                    "burn".into(),
                    "-k".into(),
                    "prime".into(),
                    "-t".into(),
                    v.into(),
                ],
                "--threads",
            ),
            (
                vec![
                    "burn".into(),
                    "-k".into(),
                    "int".into(),
                    "--mode".into(),
                    "process".into(),
                    "-t".into(),
                    v.into(),
                ],
                "--threads",
            ),
            (
                vec![
                    "burn".into(),
                    "-k".into(),
                    "prime".into(),
                    "--max-prime".into(),
                    format!("{v}00"),
                ],
                "--max-prime",
            ),
            (
                vec!["neighbors".into(), "--workers".into(), v.into()],
                "--workers",
            ),
            (
                vec!["neighbors".into(), "--burners".into(), format!("0,{v}")],
                "--burners",
            ),
            (
                vec!["oltp".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec!["oltp".into(), "--prefill".into(), format!("{v}00")],
                "--prefill",
            ),
            (
                vec!["rwcache".into(), "--threads".into(), v.into()],
                "--threads",
            ),
            (
                vec!["lockscan".into(), "--cs-ns".into(), format!("{v}00")],
                "--cs-ns",
            ),
            (
                vec!["lockscan".into(), "--scan-bytes".into(), format!("{v}MiB")],
                "--scan-bytes",
            ),
        ];
        for (args, option) in cases {
            let t0 = Instant::now();
            let out = Command::new(&bin).args(&args).output().unwrap();
            let took = t0.elapsed();
            let err = String::from_utf8_lossy(&out.stderr);
            eprintln!("{args:?}: exit {:?} in {took:?}", out.status.code());
            if out.status.code() != Some(2)
                || !err.contains(option)
                || !(err.contains("at most") || err.contains("between 1 and"))
                || took > Duration::from_secs(5)
            {
                failures.push(format!(
                    "{args:?}: exit {:?} in {took:?}: {err}",
                    out.status.code()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn one_duration_grammar_and_a_shortest_window() {
    let bin = assert_cmd::cargo::cargo_bin("smtlab");
    // oltp used its own parser, which refused `1h` and `250us`.
    for args in [
        vec!["oltp", "--duration", "1h", "--dry-run"],
        vec!["oltp", "--warmup", "250us", "--dry-run"],
        vec!["lockscan", "--duration", "1h", "--dry-run"],
    ] {
        let out = Command::new(&bin).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for args in [
        vec!["burn", "-k", "int", "-d", "1ns"],
        vec!["lockscan", "-d", "5ms"],
        vec!["neighbors", "-d", "1ms"],
        vec!["rwcache", "-d", "1us"],
        vec!["oltp", "--duration", "2ms"],
    ] {
        let out = Command::new(&bin).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--duration") && err.contains("at least 10ms"),
            "{args:?}: {err}"
        );
    }
}
