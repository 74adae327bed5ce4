//! What `smtlab pairs` saves (`cargo bench --bench pairs_cost`): profiling N workloads
//! against measuring all N(N+1)/2 of their pairs, both timed on this machine.
//!
//! Two runs of `smtlab pairs --json` (the binary cargo builds for the bench), in this
//! order:
//!
//! 1. the rulers' matrix alone (each ruler alone and beside each other): the fixed cost
//!    every pairs run pays once, whatever N;
//! 2. N fixed-work commands profiled (each alone and beside each ruler) and then every one
//!    of their N(N+1)/2 pairs measured (`--measure all`): the profile's time minus the
//!    matrix's is what N profiles cost, growing with N; the check's time is what measuring
//!    every pair costs, growing with N².
//!
//! Defaults: 8 commands (xz -9, gzip -9, bzip2 -9, sort, awk, sha256sum over an 8 MiB
//! generated text file, `sysbench memory` and `sysbench cpu` with a fixed amount of work),
//! pairs' default rulers, 3 rounds, 1 s ruler runs after 1 s warm-up. Overrides:
//! `SMTLAB_BENCH_CMDS` (one `NAME=COMMAND` a line; `{input}` is the generated file),
//! `SMTLAB_BENCH_RULERS`, `SMTLAB_BENCH_REPEAT`, `SMTLAB_BENCH_DURATION_MS`,
//! `SMTLAB_BENCH_WARMUP_MS`. Timing needs a quiet machine: nothing else running.

use smtlab::engine::RunSpec;
use smtlab::experiments::pairs::{PairsReport, config::DEFAULT_RULERS};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// The default workloads: fixed work each, a few hundred ms to a few s on a current core.
const DEFAULT_CMDS: &[&str] = &[
    // Output to /dev/null, though pairs discards the stdout of a command without
    // `--metric` itself: reading sort's ~68 MB took the command's CPU (every "sort beside a
    // ruler" round was left out as disturbed, ~80 % on CPU) in builds that piped it.
    "xz9=xz -9 -T1 -c {input} > /dev/null",
    "gzip9=gzip -9 -c {input} > /dev/null",
    "bzip2=bzip2 -9 -c {input} > /dev/null",
    // sort and awk finish one pass over the file in 5–80 ms, under the burner's 100 ms
    // report interval, which pairs refuses ("give it more work"): sort makes 8 passes
    // (about 0.5 s), awk 128 (8 took 85 ms beside a ruler; a `--cmd` runs through `sh -c`).
    "sort=for i in 1 2 3 4 5 6 7 8; do sort {input} > /dev/null; done",
    "awk=for i in $(seq 128); do awk '{ n += length($0) } END { print n }' {input}; done",
    "sha256=sh -c 'for i in 1 2 3 4 5 6 7 8; do sha256sum {input}; done'",
    "sysbench-mem=sysbench memory --threads=1 --memory-total-size=4G run",
    "sysbench-cpu=sysbench cpu --threads=1 --cpu-max-prime=20000 --events=2000 --time=0 run",
];

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_num(name: &str, default: u64) -> u64 {
    env(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// 8 MiB of text that compresses like text, not like zeros: numbered lines of words
/// drawn from a fixed linear congruential sequence (the same file every run).
fn write_input(path: &Path) {
    const WORDS: &[&str] = &[
        "core",
        "thread",
        "sibling",
        "cache",
        "line",
        "lock",
        "page",
        "insert",
        "scan",
        "memory",
        "bandwidth",
        "latency",
        "queue",
        "port",
        "divider",
        "vector",
    ];
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("input file"));
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut written = 0usize;
    let mut line = 0u64;
    while written < 8 << 20 {
        let mut s = format!("{line:08} ");
        for _ in 0..12 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            s.push_str(WORDS[(x >> 60) as usize]);
            s.push(' ');
        }
        s.push('\n');
        written += s.len();
        f.write_all(s.as_bytes()).expect("writing the input");
        line += 1;
    }
    f.flush().expect("writing the input");
}

/// One `smtlab pairs --json` run of the binary cargo built beside this bench (burners
/// beside a command are `smtlab burn` processes, so the command runs as itself).
fn run(
    rulers_as_workloads: &str,
    cmds: &[String],
    measure: &str,
    spec: &RunSpec,
    repeat: usize,
) -> PairsReport {
    let rulers = env("SMTLAB_BENCH_RULERS").unwrap_or_else(|| DEFAULT_RULERS.into());
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_smtlab"));
    c.arg("pairs")
        .arg(format!("--workloads={rulers_as_workloads}"))
        .args(["--rulers", &rulers])
        .args(["--measure", measure])
        .args(["--repeat", &repeat.to_string()])
        .arg(format!("--duration={}ms", spec.duration().as_millis()))
        .arg(format!("--warmup={}ms", spec.warmup().as_millis()))
        .arg("--json");
    for cmd in cmds {
        c.arg("--cmd").arg(cmd);
    }
    let out = c
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("running smtlab pairs");
    assert!(out.status.success(), "smtlab pairs failed: {}", out.status);
    serde_json::from_slice(&out.stdout).expect("the pairs report")
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = dir.path().join("input.txt");
    write_input(&input);
    let cmds: Vec<String> = match env("SMTLAB_BENCH_CMDS") {
        Some(v) => v.lines().map(str::to_string).collect::<Vec<_>>(),
        None => DEFAULT_CMDS.iter().map(|c| c.to_string()).collect(),
    }
    .into_iter()
    .filter(|l| !l.trim().is_empty())
    .map(|l| l.replace("{input}", &input.display().to_string()))
    .collect();
    let n = cmds.len();
    let repeat = env_num("SMTLAB_BENCH_REPEAT", 3) as usize;
    let spec = RunSpec::new(
        Duration::from_millis(env_num("SMTLAB_BENCH_WARMUP_MS", 1000)),
        Duration::from_millis(env_num("SMTLAB_BENCH_DURATION_MS", 1000)),
    )
    .expect("run lengths");

    // 1. The rulers' matrix only: one ruler as the workload adds no run to it.
    let first = env("SMTLAB_BENCH_RULERS")
        .unwrap_or_else(|| DEFAULT_RULERS.into())
        .split(',')
        .next()
        .unwrap_or("int")
        .trim()
        .to_string();
    let matrix = run(&first, &[], "none", &spec, repeat);
    // 2. N commands: their profiles, then every pair of them.
    let full = run("", &cmds, "all", &spec, repeat);

    let profiles_ns = full.profile_wall_ns.saturating_sub(matrix.profile_wall_ns);
    let profile_runs = full.profile_runs.saturating_sub(matrix.profile_runs);
    let pairs_n = n * (n + 1) / 2;
    println!(
        "pairs cost on CPUs {} and {} ({}), {} rulers, {repeat} rounds",
        full.partner.cpus[0],
        full.partner.cpus[1],
        full.partner.label,
        full.rulers.len()
    );
    println!(
        "rulers' matrix (fixed, once): {} runs in {:.1} s",
        matrix.profile_runs,
        secs(matrix.profile_wall_ns)
    );
    println!(
        "profiling {n} workloads: {profile_runs} runs in {:.1} s ({:.1} s a workload: one more costs that)",
        secs(profiles_ns),
        secs(profiles_ns) / n.max(1) as f64
    );
    println!(
        "measuring all {pairs_n} pairs: {} runs in {:.1} s",
        full.check_runs,
        secs(full.check_wall_ns)
    );
    let per_pair = secs(full.check_wall_ns) / pairs_n.max(1) as f64;
    let per_profile = secs(profiles_ns) / n.max(1) as f64;
    for m in [n, 2 * n, 4 * n] {
        println!(
            "N = {m}: profiles {:.0} s + matrix {:.0} s against all {} pairs {:.0} s{}",
            per_profile * m as f64,
            secs(matrix.profile_wall_ns),
            m * (m + 1) / 2,
            per_pair * (m * (m + 1) / 2) as f64,
            if m == n {
                " (measured)"
            } else {
                " (scaled from the measured per-workload and per-pair times)"
            }
        );
    }
    if let Some(c) = &full.check {
        let model = &c.scores[0];
        println!(
            "the model on those {} pairs: mean |error| {:.3}, worst {:.3}",
            c.pairs, model.mean_abs_error, model.worst_abs_error
        );
    }
}
