//! Made-up hosts for tests and the merge benchmark: results.json files as a study on the
//! fake engine writes them (every section, at full size), with the answer table set to a
//! yield chosen per host, and the signs a disturbed host leaves in its own results (steal
//! in its runs, a busy-CPU warning). Every report is marked synthetic.

use crate::engine::FakeEngine;
use crate::report::metrics::answer_for;
use crate::report::{
    Answer, Evidence, HtAnswer, MachineInfo, PhaseName, Provenance, Report, WorkloadClass,
};
use crate::stats::{Comparison, Thresholds};
use std::sync::OnceLock;

/// A machine type of the made-up fleet.
#[derive(Debug, Clone, Copy)]
pub struct TypeSpec {
    pub cpu_model: &'static str,
    pub cores: u32,
    pub threads_per_core: u32,
    /// `smt/control`.
    pub smt_control: &'static str,
    /// `uname -srvm`.
    pub kernel: &'static str,
    pub microcode: &'static str,
}

/// Three machine types: two with SMT (different CPUs and kernels), one without.
pub const TYPES: [TypeSpec; 3] = [
    TypeSpec {
        cpu_model: "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz",
        cores: 4,
        threads_per_core: 2,
        smt_control: "on",
        kernel: "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 x86_64",
        microcode: "0x5003604",
    },
    TypeSpec {
        cpu_model: "AMD EPYC 7543 32-Core Processor",
        cores: 2,
        threads_per_core: 2,
        smt_control: "on",
        kernel: "Linux 5.10.0-28-amd64 #1 SMP Debian 5.10.209-2 x86_64",
        microcode: "0xa0011d1",
    },
    TypeSpec {
        cpu_model: "Intel(R) Core(TM) i7-9700 CPU @ 3.00GHz",
        cores: 4,
        threads_per_core: 1,
        smt_control: "notsupported",
        kernel: "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 x86_64",
        microcode: "0xf8",
    },
];

/// Runs behind every made-up host's ratios, and their spread on the log scale.
pub const RUNS: usize = 10;
pub const LOG_SE: f64 = 0.03;

/// What disturbed a host, as its own results would show it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Disturbance {
    None,
    /// The hypervisor took this share of the measured CPUs' time during the yield runs.
    Steal(f64),
    /// Other work kept the CPUs this busy before the study.
    BusyCpus(f64),
}

/// The ratios a made-up host measured, per workload class (None: not measured).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratios {
    pub compute: f64,
    pub memory: f64,
    pub locks: f64,
    pub locks_beside_scans: f64,
    pub inserts: f64,
}

impl Ratios {
    /// Every class at `x`.
    pub fn all(x: f64) -> Self {
        Ratios {
            compute: x,
            memory: x,
            locks: x,
            locks_beside_scans: x,
            inserts: x,
        }
    }
}

/// The fake engine's study of a type, made once per process.
pub fn base(t: usize) -> &'static Report {
    static BASES: [OnceLock<Report>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    BASES[t].get_or_init(|| {
        let spec = &TYPES[t];
        let topo = crate::topology::fixture::topology(spec.cores, spec.threads_per_core, false);
        let machine = MachineInfo {
            cpu_model: spec.cpu_model.into(),
            kernel: spec.kernel.into(),
            frequency_governor: "performance".into(),
            hardware_counters: "available (not read by this study)".into(),
            ..crate::report::machine::summary(&topo)
        };
        let provenance = Provenance {
            smtlab_version: env!("CARGO_PKG_VERSION").into(),
            git_revision: "000000000000".into(),
            build_profile: "release".into(),
            command: "smtlab study --out results".into(),
            started_unix_s: 1_700_000_000,
            wall_ns: 300_000_000_000,
        };
        let cfg = crate::study::Config {
            quick: true,
            budget: crate::study::QUICK_BUDGET,
            db: crate::oltp::DbTarget::Sqlite(None),
            command: "smtlab study --out results".into(),
            within: crate::placement::Scope::Package,
            compare: None,
            counters: crate::counters::Mode::default(),
        };
        let mut r = crate::study::run(
            &FakeEngine::new(7).with_topology(&topo),
            &topo,
            machine,
            provenance,
            &cfg,
            &crate::progress::Quiet,
        )
        .expect("the fake study runs");
        r.smt.control = Some(spec.smt_control.into());
        r.machine.microcode = Some(spec.microcode.into());
        r
    })
}

/// The comparison a host with ratio `x` reports over [`RUNS`] runs, as the study computes
/// one: a Student-t interval on log ratios, `ln x ± t(RUNS − 1)·LOG_SE`, classified
/// against `t`.
pub fn comparison(x: f64, t: Thresholds) -> Comparison {
    let q = crate::stats::student_t_quantile(0.975, (RUNS - 1) as f64);
    let (low, high) = ((x.ln() - q * LOG_SE).exp(), (x.ln() + q * LOG_SE).exp());
    Comparison {
        estimate: x,
        low,
        high,
        confidence: 0.95,
        n: RUNS,
        indicative: false,
        effect: crate::stats::classify(low, high, t),
        thresholds: t,
        method: crate::stats::IntervalMethod::StudentTLog,
    }
}

fn answer(class: WorkloadClass, x: f64, section: PhaseName, what: &str) -> Answer {
    let c = comparison(x, Thresholds::YIELD);
    Answer {
        gate: None,
        class,
        answer: answer_for(class, c.effect),
        evidence: Some(Evidence {
            what: what.into(),
            runs: format!("{section}, {RUNS} paired rounds"),
            comparison: c,
        }),
        reason: format!("made up for the fleet fixture: {c}"),
        section: Some(section),
    }
}

/// One host of type `t` named `host`, whose answers rest on `ratios` (SMT types only; a
/// type without SMT keeps the study's own not-measured rows), started `started_unix_s`,
/// disturbed as `d` says.
pub fn report(t: usize, host: &str, ratios: Ratios, started_unix_s: u64, d: Disturbance) -> Report {
    let mut r = base(t).clone();
    r.machine.hostname = Some(host.into());
    r.provenance.started_unix_s = started_unix_s;
    if r.smt.threads_per_core > 1 {
        for a in &mut r.verdict.answers {
            let (x, section, what) = match a.class {
                WorkloadClass::Compute => (
                    ratios.compute,
                    crate::experiments::smt_yield::PHASE,
                    "SMT yield of `prime`: throughput with every sibling ÷ one thread per core, same cores",
                ),
                WorkloadClass::Memory => (
                    ratios.memory,
                    crate::experiments::smt_yield::PHASE,
                    "SMT yield of `stream`: throughput with every sibling ÷ one thread per core, same cores",
                ),
                WorkloadClass::Locks => (
                    ratios.locks,
                    crate::experiments::smt_yield::PHASE,
                    "SMT yield of `ttas`: throughput with every sibling ÷ one thread per core, same cores",
                ),
                WorkloadClass::LocksBesideScans => (
                    ratios.locks_beside_scans,
                    crate::experiments::lockscan::PHASE,
                    "acquisitions/s of a lock thread beside a scanning sibling ÷ the same thread without a scanner, paired by round",
                ),
                WorkloadClass::Inserts => (
                    ratios.inserts,
                    crate::experiments::oltp::PHASE,
                    "inserts/s, all ÷ one-per-core on the same cores",
                ),
                _ => continue,
            };
            *a = answer(a.class, x, section, what);
        }
    }
    match d {
        Disturbance::None => {}
        Disturbance::Steal(s) => {
            if let Some(y) = &mut r.smt_yield {
                for w in &mut y.result.workloads {
                    for run in &mut w.runs {
                        run.steal_share = Some(s);
                    }
                }
            }
            r.notes.extend(
                crate::hygiene::steal_note("the yield runs", [Some(s)])
                    .map(crate::report::Note::Hygiene),
            );
        }
        Disturbance::BusyCpus(b) => {
            let loads: Vec<crate::hygiene::CpuLoad> = (0..r.machine.online_cpus as u32)
                .map(|cpu| crate::hygiene::CpuLoad {
                    cpu,
                    busy: b,
                    steal: 0.0,
                })
                .collect();
            r.notes.extend(
                crate::hygiene::warnings(&loads, crate::hygiene::PREFLIGHT_WINDOW)
                    .into_iter()
                    .map(crate::report::Note::Hygiene),
            );
        }
    }
    r
}

/// The answer a made-up host gives for `class` (for tests that check the fixture).
pub fn answer_of(r: &Report, class: WorkloadClass) -> HtAnswer {
    r.verdict
        .answers
        .iter()
        .find(|a| a.class == class)
        .map_or(HtAnswer::NotMeasured, |a| a.answer)
}

/// A small deterministic spread in ±2 % (inside each host's own ±6 % interval), so the
/// hosts of a type vary as measurements do without disagreeing beyond their noise.
pub fn jitter(i: usize) -> f64 {
    (0.02 * (((i * 7) % 11) as f64 - 5.0) / 5.0).exp()
}

fn write(dir: &std::path::Path, r: &Report) -> std::io::Result<std::path::PathBuf> {
    let host = r.machine.hostname.clone().unwrap_or_else(|| "host".into());
    let d = dir.join(host);
    std::fs::create_dir_all(&d)?;
    let p = d.join(crate::report::RESULTS_JSON);
    std::fs::write(&p, r.to_json().map_err(std::io::Error::other)?)?;
    Ok(p)
}

/// The fleet the merge tests check, one directory per host under `dir`, 200 files:
/// - 120 `xeon-NNN` of type 0 (compute 1.28, memory-bound 1.15, locks 1.10, locks beside
///   scans 0.99, inserts 1.22, each within ±2 %), two of them disturbed and far below the others: `xeon-017`
///   (steal 15 % in its yield runs; every ratio 0.80) and `xeon-064` (CPUs 60 % busy
///   before the study; every ratio 0.85);
/// - 50 `epyc-NN` of type 1 (compute 1.01, memory-bound 0.97, locks 0.80, inserts 1.00;
///   locks beside scans 0.85, 0.90, 0.95, 1.00 and 1.05 in turn: hosts that disagree
///   beyond their noise);
/// - 28 `desk-NN` of type 2 (no SMT: nothing measured);
/// - `broken/results.json`: `xeon-001`'s file cut in half;
/// - `old/results.json`: a file of schema version 0.
pub fn write_test_fleet(dir: &std::path::Path) -> std::io::Result<()> {
    let t0 = 1_700_000_000;
    for i in 1..=120 {
        let host = format!("xeon-{i:03}");
        let (ratios, d) = match i {
            17 => (Ratios::all(0.80), Disturbance::Steal(0.15)),
            64 => (Ratios::all(0.85), Disturbance::BusyCpus(0.60)),
            _ => {
                let j = jitter(i);
                (
                    Ratios {
                        compute: 1.28 * j,
                        memory: 1.15 * j,
                        locks: 1.10 * j,
                        locks_beside_scans: 0.99 * j,
                        inserts: 1.22 * j,
                    },
                    Disturbance::None,
                )
            }
        };
        let p = write(dir, &report(0, &host, ratios, t0 + i as u64, d))?;
        if i == 1 {
            let text = std::fs::read(&p)?;
            std::fs::create_dir_all(dir.join("broken"))?;
            std::fs::write(
                dir.join("broken").join(crate::report::RESULTS_JSON),
                &text[..text.len() / 2],
            )?;
        }
    }
    for i in 1..=50 {
        let j = jitter(i);
        let spread = 0.85 + 0.05 * (i % 5) as f64;
        let ratios = Ratios {
            compute: 1.01 * j,
            memory: 0.97 * j,
            locks: 0.80 * j,
            locks_beside_scans: spread,
            inserts: 1.00 * j,
        };
        write(
            dir,
            &report(
                1,
                &format!("epyc-{i:02}"),
                ratios,
                t0 + i as u64,
                Disturbance::None,
            ),
        )?;
    }
    for i in 1..=28 {
        write(
            dir,
            &report(
                2,
                &format!("desk-{i:02}"),
                Ratios::all(1.0),
                t0 + i as u64,
                Disturbance::None,
            ),
        )?;
    }
    let mut old = report(0, "old-host", Ratios::all(1.2), t0, Disturbance::None);
    old.schema_version = 0;
    std::fs::create_dir_all(dir.join("old"))?;
    std::fs::write(
        dir.join("old").join(crate::report::RESULTS_JSON),
        old.to_json().map_err(std::io::Error::other)?,
    )?;
    Ok(())
}

/// `n` healthy hosts spread over the three types (six in ten of type 0, three of type 1,
/// one of type 2), one directory each under `dir`: the benchmark's fleet.
pub fn write_hosts(dir: &std::path::Path, n: usize) -> std::io::Result<()> {
    for i in 0..n {
        let t = match i % 10 {
            0..=5 => 0,
            6..=8 => 1,
            _ => 2,
        };
        let j = jitter(i);
        let ratios = Ratios {
            compute: 1.2 * j,
            memory: 1.1 * j,
            locks: 1.05 * j,
            locks_beside_scans: 0.97 * j,
            inserts: 1.1 * j,
        };
        write(
            dir,
            &report(
                t,
                &format!("host-{i:05}"),
                ratios,
                1_700_000_000 + i as u64,
                Disturbance::None,
            ),
        )?;
    }
    Ok(())
}
