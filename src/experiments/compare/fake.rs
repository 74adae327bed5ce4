//! A stand-in for running the user's command (hyperfine's mock-executor idea, as
//! [`crate::engine::FakeEngine`] is for engine runs): no process is started, no CPU is
//! pinned, no clock is read.
//!
//! [`run`] resolves the placements and runs the real interleaving loop
//! ([`super::measure`]), analysis and report assembly over made-up runs, so the study's
//! tests see the section and answer row users would. Each run is *plausible* — a
//! placement's speed is one unit per core plus a quarter for every further sibling it
//! runs on that core, seven tenths of it beside burners, with ±2 % jitter — and
//! *reproducible*: the same placements give the same runs. Never numbers anyone reads as
//! measurements; the report says so in a note. [`FakeBehaviour`](super::config::FakeBehaviour) changes the sibling's gain,
//! the jitter, and makes one run fail as a command exiting 1 would.

use super::config::{self, Config, Variant};
use super::model::{CompareReport, Note, Run};
use super::{Context, Kept};
use crate::progress::Progress;
use crate::stats::SplitMix64;
use crate::topology::Topology;
use anyhow::Result;
use std::cell::Cell;
use std::time::Duration;

/// Speed left beside burners.
const BESIDE_BURNERS: f64 = 0.7;
/// Wall time of one run on one core, ns.
const ONE_CORE_NS: f64 = 400e6;
/// The metric of one core (a throughput, or for lower-is-better a time in its unit).
const ONE_CORE_METRIC: f64 = 1000.0;

/// How many cores' worth of work `v` does at once.
fn speed(topo: &Topology, v: &Variant, gain: f64) -> f64 {
    let cores = config::cores_of(topo, &v.cpus);
    let s: f64 = cores
        .iter()
        .map(|core| {
            let on = core.intersection(&v.cpus).len().max(1);
            1.0 + gain * (on - 1) as f64
        })
        .sum();
    if v.burner_cpus.is_empty() {
        s
    } else {
        s * BESIDE_BURNERS
    }
}

/// The made-up run of placement `index` in `round` (None = warm-up).
fn made_up(topo: &Topology, cfg: &Config, v: &Variant, index: usize, round: Option<usize>) -> Run {
    let seed = 0x00C0_FFEE ^ ((index as u64) << 32) ^ round.unwrap_or(0) as u64;
    let mut rng = SplitMix64::new(seed);
    let b = &cfg.fake;
    let jitter = 1.0 + b.jitter * (rng.next_f64() - 0.5);
    let cap = b.cpu_cap.unwrap_or(f64::INFINITY);
    let speed = speed(topo, v, b.sibling_gain).min(cap) * jitter;
    let wall_ns = ONE_CORE_NS / speed;
    let metric = cfg.metric.as_ref().map(|m| {
        if m.info().higher_is_better {
            ONE_CORE_METRIC * speed
        } else {
            ONE_CORE_METRIC / speed
        }
    });
    let cpus = (v.cpus.len() as f64).min(cap);
    Run {
        round: round.unwrap_or(0),
        position: 0,
        wall_time_ns: wall_ns.round() as u64,
        user_time_ns: (wall_ns * cpus * 0.95).round() as u64,
        system_time_ns: (wall_ns * 0.02).round() as u64,
        max_rss_bytes: 8 << 20,
        voluntary_switches: 12,
        involuntary_switches: 5 * v.cpus.len() as u64,
        exit_code: Some(0),
        signal: None,
        metric,
        burner_ops_per_sec: (!v.burner_cpus.is_empty())
            .then_some(1e6 * v.burner_cpus.len() as f64 * BESIDE_BURNERS),
        leftover_processes: 0,
        counters: None,
    }
}

/// The comparison of `cfg` on `topo` with made-up runs. Errors as [`super::run`] for
/// placements this machine cannot run and for a failing run; Ctrl-C
/// ([`crate::interrupt`]) ends it as it ends a real comparison. A server
/// (`--with-postgres`, `--pin-pids`) is neither started nor placed; a note says so.
pub fn run(topo: &Topology, cfg: &Config, ui: &dyn Progress) -> Result<CompareReport> {
    run_keeping(topo, cfg, ui)?.into_result()
}

/// As [`run`], but a run that fails after others were measured ends the comparison with
/// the report of those runs and the failure, as [`super::run_keeping`] does.
pub fn run_keeping(topo: &Topology, cfg: &Config, ui: &dyn Progress) -> Result<Kept> {
    let mut adjusted = cfg.clone();
    let fixed_duration = super::duration::adjust(&mut adjusted);
    let cfg = &adjusted;
    let resolved = config::resolve(topo, cfg)?;
    let pairs = super::smt_pairs(topo, &resolved.variants);
    let now = Cell::new(Duration::ZERO);
    let executed = Cell::new(0usize);
    let measured = super::measure(
        resolved.variants.len(),
        cfg.warmup,
        cfg.runs,
        cfg.max_time,
        &mut || now.get(),
        &mut |p, round| {
            crate::interrupt::check()?;
            executed.set(executed.get() + 1);
            let v = &resolved.variants[p];
            if cfg.fake.fail_on_run == Some(executed.get()) {
                let when = round.map_or("warm-up".to_string(), |r| format!("round {r}"));
                anyhow::bail!(
                    "`{}` failed on {} ({when}): exit code 1 (made up by the fake executor)",
                    cfg.command.words.join(" "),
                    v.label
                );
            }
            let r = made_up(topo, cfg, v, p, round);
            now.set(now.get() + Duration::from_nanos(r.wall_time_ns));
            Ok(r)
        },
        ui,
    );
    let (measured, failure) = match measured {
        Ok(m) => (m, None),
        Err(f) if f.measured.runs.iter().all(Vec::is_empty) => return Err(f.error),
        Err(f) => (f.measured, Some(f.error)),
    };
    if measured.interrupted && measured.runs.iter().all(Vec::is_empty) {
        return Err(crate::error::Interrupted.into());
    }
    let mut notes = vec![Note::NotRun];
    if cfg.with_postgres || !cfg.pin_pids.is_empty() {
        notes.push(Note::NoServer);
    }
    let report = super::assemble(
        cfg,
        &resolved,
        measured,
        pairs,
        Context {
            enforcement: if cfg.cgroup { "cgroup-v2" } else { "affinity" }.into(),
            server: None,
            notes: notes.into_iter().map(String::from).collect(),
            server_cpus: Vec::new(),
            metric_unit: None,
            counters: None,
            fixed_duration,
            sched: super::model::SchedFacts {
                autogroup: None,
                cpu_quota: topo.process.cpu_quota,
            },
        },
    );
    Ok(Kept { report, failure })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::compare::PlacementChoice;
    use crate::placement::Request;

    fn cfg(runs: usize) -> Config {
        let mut c = Config::new(vec!["true".into()]);
        c.placements = vec![
            PlacementChoice::Named(Request::OnePerCore),
            PlacementChoice::Named(Request::Pairs),
            PlacementChoice::Named(Request::All),
        ];
        c.cores = Some(2);
        c.runs = Some(runs);
        c
    }

    #[test]
    fn siblings_add_a_quarter_and_runs_repeat_exactly() {
        let topo = crate::topology::fixture::topology(2, 2, false);
        let a = run(&topo, &cfg(5), &super::super::Quiet).unwrap();
        let b = run(&topo, &cfg(5), &super::super::Quiet).unwrap();
        assert_eq!(a, b, "reproducible");
        let y = a.smt_yield.as_ref().expect("one-per-core and all pair up");
        assert!((y.ratio.estimate - 1.25).abs() < 0.05, "{y:?}");
        let s = a.pairs_slowdown.as_ref().expect("pairs pairs up");
        let slower = crate::experiments::compare::analysis::slowdown(&s.ratio).0;
        assert!((slower - 1.6).abs() < 0.1, "{s:?}");
        assert!(a.placements.iter().all(|p| p.runs.len() == 5));
        assert!(a.notes.iter().any(|n| n.starts_with("synthetic")));
    }

    /// `compare --cpus 0 --cpus 0-1 -- sysbench cpu --threads=2 --time=1 run` where each run
    /// gets one CPU's worth of time: the 2-CPU placement is named as having kept about one
    /// busy, in the model, the JSON and the text, instead of a bare call.
    #[test]
    fn a_placement_held_to_one_cpu_is_named() {
        let topo = crate::topology::fixture::topology(2, 1, false);
        let words = "sysbench cpu --threads=2 --time=1 run";
        let mut c = Config::new(words.split(' ').map(String::from).collect());
        c.placements = vec![
            PlacementChoice::Cpus(crate::cpuset::CpuSet::from_cpus([0])),
            PlacementChoice::Cpus(crate::cpuset::CpuSet::from_cpus([0, 1])),
        ];
        c.runs = Some(5);
        c.fake.cpu_cap = Some(1.0);
        let r = run(&topo, &c, &super::super::Quiet).unwrap();
        assert_eq!(r.starved.len(), 1, "{:?}", r.starved);
        let x = &r.starved[0];
        assert_eq!((x.placement.as_str(), x.allowed), ("cpus:0-1", 2));
        assert!((0.9..1.0).contains(&x.cpus_used), "{x:?}");
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["starved"][0]["placement"], "cpus:0-1");
        assert_eq!(j["starved"][0]["likely_causes"][0]["cause"], "other-load");
        let lines = crate::experiments::compare::verdict::lines(&r);
        let at = lines
            .iter()
            .position(|l| l.starts_with("cpus:0-1 vs cpus:0: "))
            .expect("the comparison line");
        assert!(
            lines[at + 1].starts_with("cpus:0-1 kept 0.97 CPUs busy")
                && lines[at + 1].contains("of the 2 CPUs it was allowed")
                && lines[at + 1].contains("what can hold it back here: other load on these CPUs"),
            "{lines:#?}"
        );
        // Given both CPUs, nothing to say.
        c.fake.cpu_cap = None;
        assert!(
            run(&topo, &c, &super::super::Quiet)
                .unwrap()
                .starved
                .is_empty()
        );
    }

    #[test]
    fn a_run_that_fails_keeps_the_runs_before_it() {
        let topo = crate::topology::fixture::topology(2, 2, false);
        let mut c = cfg(4);
        c.warmup = 0;
        // Three placements, counterbalanced: round 1 runs one-per-core, pairs, all;
        // round 2 all, pairs, one-per-core; round 3 pairs, all, one-per-core. Execution 8
        // is `all` in round 3.
        c.fake.fail_on_run = Some(8);
        let kept = run_keeping(&topo, &c, &super::super::Quiet).unwrap();
        let e = kept.failure.expect("the failure");
        assert!(e.to_string().contains("failed on all (round 3)"), "{e}");
        let runs: Vec<usize> = kept
            .report
            .placements
            .iter()
            .map(|p| p.runs.len())
            .collect();
        assert_eq!(runs, [2, 3, 2]);
        // `run` (what `smtlab compare` uses) gives the error alone.
        assert!(run(&topo, &c, &super::super::Quiet).is_err());
        // Failing on the first run keeps nothing: an error.
        c.fake.fail_on_run = Some(1);
        assert!(run_keeping(&topo, &c, &super::super::Quiet).is_err());
    }
}
