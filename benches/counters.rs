//! What event counters cost (`cargo bench --bench counters`): the throughput of a lockscan
//! run (a TTAS lock thread beside a memory scanner) and of a burn run (`int` burners, one
//! per CPU) with counters `software` against `off`, and an A/A control (`off` against
//! `off`) showing the noise floor.
//!
//! Each pair runs the two modes back to back, in alternating order (ABBA: linear drift
//! cancels), the per-pair ratio is the sample, and the result is the median ratio with a
//! bootstrap 95 % interval classed against ±2 % ([`smtlab::stats::Comparison`]). Shared
//! VMs wander by tens of percent between runs; pairing is what makes a 1 % effect
//! visible at all.
//!
//! `SMTLAB_BENCH_PAIRS` (default 6), `SMTLAB_BENCH_MS` (run length, default 1000) and
//! `SMTLAB_BENCH_MODE` (`software` or `all`, default `software`) override the defaults.

use smtlab::burn::{BurnSpec, BurnerKind, Burners};
use smtlab::counters::Mode;
use smtlab::cpuset::CpuSet;
use smtlab::engine::{self, RunResult, RunSpec, Workload};
use smtlab::experiments::lockscan::LockScan;
use smtlab::locks::{LockKind, StatsMode};
use smtlab::placement::{Plan, ThreadPlacement};
use smtlab::stats::{Comparison, Thresholds};
use std::time::Duration;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn plan(cpus: &[u32]) -> Plan {
    Plan {
        request: "bench".into(),
        threads: cpus
            .iter()
            .enumerate()
            .map(|(i, &c)| ThreadPlacement {
                thread: i,
                cpus: CpuSet::from_cpus([c]),
            })
            .collect(),
        oversubscribed: false,
        notes: vec![],
        scope: None,
    }
}

/// What a run's throughput is: all threads' operations, or one thread's.
type Pick = fn(&RunResult) -> f64;

/// `pairs` ABBA pairs of (b ÷ a) throughput ratios; `make` builds a fresh workload.
fn paired(
    pairs: usize,
    ms: u64,
    plan: &Plan,
    (a, b): (Mode, Mode),
    make: &dyn Fn() -> Box<dyn Workload>,
    pick: Pick,
) -> Vec<f64> {
    let rate = |mode: Mode| {
        let spec = RunSpec::new(Duration::from_millis(200), Duration::from_millis(ms))
            .expect("a positive window")
            .with_counters(mode);
        pick(&engine::run(plan, &spec, &*make()).expect("run"))
    };
    (0..pairs)
        .map(|i| {
            let (ra, rb) = if i % 2 == 0 {
                let ra = rate(a);
                (ra, rate(b))
            } else {
                let rb = rate(b);
                (rate(a), rb)
            };
            rb / ra
        })
        .collect()
}

fn report(what: &str, ratios: &[f64]) {
    let t = Thresholds::new(0.9, 0.02).expect("valid thresholds");
    match Comparison::of_paired_ratios(ratios, t, 0.95) {
        Some(c) => println!("{what:<44} {c}"),
        None => println!("{what:<44} no ratio (a run did nothing)"),
    }
    let list: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
    println!("{:<44} pairs: {}", "", list.join(" "));
}

fn main() {
    let pairs = env("SMTLAB_BENCH_PAIRS", 6) as usize;
    let ms = env("SMTLAB_BENCH_MS", 1000);
    let mode: Mode = std::env::var("SMTLAB_BENCH_MODE")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(Mode::Software);
    let cpus = smtlab::affinity::process_affinity()
        .expect("affinity")
        .to_vec();
    let topo = smtlab::topology::discover(std::path::Path::new("/")).expect("topology");
    println!(
        "counters cost: {mode} ÷ off, {pairs} ABBA pairs of {ms} ms runs on CPUs {}; 95 % CI of the median ratio",
        CpuSet::from_cpus(cpus.iter().copied())
    );
    // lockscan's default layout on a machine without siblings: the lock thread on the
    // second CPU, the scanner on the first.
    let ls_cpus: Vec<u32> = if cpus.len() > 1 {
        vec![cpus[1], cpus[0]]
    } else {
        vec![cpus[0], cpus[0]]
    };
    let ls_plan = plan(&ls_cpus);
    let lockscan = || -> Box<dyn Workload> {
        Box::new(LockScan::new(
            LockKind::Ttas,
            1,
            0,
            1 << 20,
            StatsMode::Counters,
        ))
    };
    // The lock thread's acquisitions per second, lockscan's ACQ/S.
    let acquisitions: Pick = |r| r.thread_ops_per_sec()[0];
    report(
        &format!("lockscan ttas + scanner, {mode} ÷ off"),
        &paired(
            pairs,
            ms,
            &ls_plan,
            (Mode::Off, mode),
            &lockscan,
            acquisitions,
        ),
    );
    report(
        "lockscan ttas + scanner, off ÷ off (A/A)",
        &paired(
            pairs,
            ms,
            &ls_plan,
            (Mode::Off, Mode::Off),
            &lockscan,
            acquisitions,
        ),
    );
    let burn_plan = plan(&cpus);
    let burn_cpus: Vec<CpuSet> = cpus.iter().map(|&c| CpuSet::from_cpus([c])).collect();
    let burn = || -> Box<dyn Workload> {
        Box::new(Burners::new(&BurnSpec::new(BurnerKind::Int), &topo, &burn_cpus).expect("burners"))
    };
    let total: Pick = RunResult::ops_per_sec;
    report(
        &format!("burn int × {}, {mode} ÷ off", cpus.len()),
        &paired(pairs, ms, &burn_plan, (Mode::Off, mode), &burn, total),
    );
    report(
        &format!("burn int × {}, off ÷ off (A/A)", cpus.len()),
        &paired(pairs, ms, &burn_plan, (Mode::Off, Mode::Off), &burn, total),
    );
}
