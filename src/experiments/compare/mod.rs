//! `smtlab compare -- CMD`: the user's own command under several placements (one thread
//! per core, both siblings, every sibling, CPU lists), with or without noisy neighbours,
//! run interleaved (A B C A B C …) after discarded warm-up rounds, and compared with
//! statistics: medians and MAD per placement, each placement against the first paired by
//! round (the ratio of each round's two runs, their median with an interval and a call),
//! and the SMT yield.
//!
//! Split by job, as hyperfine splits its benchmark: [`config`] (options, checks, the
//! placements on this machine), [`runner`] (one execution: affinity or cgroup, timing,
//! rusage, output), [`pins`] and [`cgroup`] (placing servers and the command's tree),
//! [`guard`] (undoing all of it if smtlab is killed), [`metric`] (reading numbers from the
//! output), [`duration`] (commands that run for a fixed time, whose wall time measures no
//! work), [`model`] (the one serde model), [`analysis`] (statistics and calls),
//! [`view`] (terminal table, study section, finding and answer row, export document). [`run`] ties them together; [`measure`]
//! is the interleaving loop alone, over any executor; [`fake`] runs it over made-up runs
//! for the study's tests.

pub mod analysis;
pub mod cgroup;
pub mod config;
pub mod duration;
pub mod fake;
#[cfg(test)]
pub mod fixture;
pub mod guard;
pub mod metric;
pub mod model;
pub mod pins;
pub mod proctree;
pub mod runner;
mod session;
pub mod verdict;
pub mod view;

pub use config::{
    BurnerChoice, CheckedConfig, CommandLine, Config, PlacementChoice, Resolved, Variant,
};
pub use model::{Call, CompareReport, CompareSection, PlacementMedian};

use crate::error::Interrupted;
use crate::topology::Topology;
use analysis::{Basis, Setting, SmtPairs};
use anyhow::Result;
use model::{BurnerInfo, FixedDuration, PlacementResult, Run, ServerInfo, Skipped};
use std::time::Duration;

// What the command layer shows while a comparison runs goes through the crate's one
// progress trait: setup steps and rounds as `note`s, the total of runs (warm-up included)
// as `planned`, each finished run as `advance(1)`; `Quiet` shows nothing.
use crate::progress::Progress;
pub use crate::progress::Quiet;
pub use view::{PHASE, TITLE};

/// Measured runs per placement, and how the loop ended.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measured {
    /// Runs of each placement, in order.
    pub runs: Vec<Vec<Run>>,
    /// Measured rounds planned.
    pub rounds: usize,
    /// Warm-up rounds done.
    pub warmup_rounds: usize,
    /// Ctrl-C ended the loop early.
    pub interrupted: bool,
}

/// A run failed: the error, and the runs measured before it.
#[derive(Debug)]
pub struct Failed {
    pub error: anyhow::Error,
    pub measured: Measured,
}

/// What [`run_keeping`] returns: the report, and the failure that ended the runs early
/// (the report then covers the runs before it).
#[derive(Debug)]
pub struct Kept {
    pub report: CompareReport,
    pub failure: Option<anyhow::Error>,
}

impl Kept {
    /// The report, or the failure when there was one (what `smtlab compare` does).
    pub fn into_result(self) -> Result<CompareReport> {
        match self.failure {
            None => Ok(self.report),
            Some(e) => Err(e),
        }
    }
}

/// The number of measured rounds that fills `max_time`, after `timed` rounds (warm-up or
/// measured) took `spent`, `measured` of them already measured; clamped to
/// [`config::MIN_AUTO_RUNS`]..=[`config::MAX_AUTO_RUNS`].
pub fn auto_rounds(max_time: Duration, spent: Duration, timed: usize, measured: usize) -> usize {
    let per_round = spent.as_secs_f64() / timed.max(1) as f64;
    let left = max_time.saturating_sub(spent).as_secs_f64();
    let more = if per_round > 0.0 {
        (left / per_round).floor().min(1e9) as usize
    } else {
        config::MAX_AUTO_RUNS
    };
    (measured + more).clamp(config::MIN_AUTO_RUNS, config::MAX_AUTO_RUNS)
}

/// The interleaving loop: `warmup` discarded rounds, then measured rounds, each running
/// every placement once, the order counterbalanced from round to round (A B C, C B A,
/// B C A, …: [`crate::engine::counterbalanced`]) so that no placement always runs first,
/// each run recording its position. `exec(placement, round)` runs one execution (round None
/// = warm-up); `clock()` reads elapsed time. Without `runs`, the round count is chosen
/// from the first rounds' time so that everything takes about `max_time`. Ctrl-C
/// ([`Interrupted`] from `exec`) ends the loop with what was measured; other errors end it
/// with the error and what was measured before it ([`Failed`]).
#[allow(clippy::too_many_arguments)]
pub fn measure(
    placements: usize,
    warmup: usize,
    runs: Option<usize>,
    max_time: Duration,
    clock: &mut dyn FnMut() -> Duration,
    exec: &mut dyn FnMut(usize, Option<usize>) -> Result<Run>,
    ui: &dyn Progress,
) -> Result<Measured, Failed> {
    let mut m = Measured {
        runs: vec![Vec::new(); placements],
        ..Measured::default()
    };
    let interrupted = |e: &anyhow::Error| e.chain().any(|c| c.is::<Interrupted>());
    let t0 = clock();
    let first_guess = runs.unwrap_or(config::MIN_AUTO_RUNS);
    ui.planned(((warmup + first_guess) * placements) as u64);
    for w in 0..warmup {
        ui.note(&format!("warm-up round {}/{warmup} (discarded)", w + 1));
        for p in 0..placements {
            match exec(p, None) {
                Ok(_) => ui.advance(1),
                Err(e) if interrupted(&e) => {
                    m.interrupted = true;
                    return Ok(m);
                }
                Err(error) => return Err(Failed { error, measured: m }),
            }
        }
        m.warmup_rounds += 1;
    }
    let mut total = runs;
    if total.is_none() && warmup > 0 {
        let n = auto_rounds(max_time, clock() - t0, warmup, 0);
        ui.planned(((warmup + n) * placements) as u64);
        total = Some(n);
    }
    let mut round = 0;
    while total.is_none_or(|n| round < n) {
        round += 1;
        match total {
            Some(n) => ui.note(&format!("round {round}/{n}")),
            None => ui.note(&format!("round {round}")),
        }
        // Counterbalanced: A B C, C B A, B C A, … (see `counterbalanced`).
        let order = crate::engine::counterbalanced(placements, round - 1);
        for (position, p) in order.into_iter().enumerate() {
            match exec(p, Some(round)) {
                Ok(mut r) => {
                    r.round = round;
                    r.position = position + 1;
                    m.runs[p].push(r);
                    ui.advance(1);
                }
                Err(e) if interrupted(&e) => {
                    m.interrupted = true;
                    m.rounds = total.unwrap_or(round);
                    return Ok(m);
                }
                Err(error) => {
                    m.rounds = total.unwrap_or(round);
                    return Err(Failed { error, measured: m });
                }
            }
        }
        if total.is_none() {
            let n = auto_rounds(max_time, clock() - t0, round, round);
            ui.planned(((warmup + n) * placements) as u64);
            total = Some(n);
        }
    }
    m.rounds = total.unwrap_or(round);
    Ok(m)
}

/// What [`assemble`] needs besides the runs.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub enforcement: String,
    pub server: Option<ServerInfo>,
    pub notes: Vec<String>,
    /// The CPUs each placement's server processes were pinned to.
    pub server_cpus: Vec<Option<crate::cpuset::CpuSet>>,
    /// The metric's unit as the parser read it (sysbench: events/s or transactions/s).
    pub metric_unit: Option<&'static str>,
    /// What the runs' counters could not count, and why; None with counters off.
    pub counters: Option<crate::counters::Status>,
    /// A time limit found in the command's arguments before the runs
    /// ([`duration::adjust`]).
    pub fixed_duration: Option<FixedDuration>,
    /// The scheduler settings that can hold a command to fewer CPUs than it is allowed.
    pub sched: model::SchedFacts,
}

/// Builds the report from the placements, their runs and the analysis. Pure.
pub fn assemble(
    cfg: &Config,
    resolved: &Resolved,
    measured: Measured,
    pairs: SmtPairs,
    ctx: Context,
) -> CompareReport {
    let metric = cfg.metric.as_ref().map(|m| m.info());
    let basis = Basis::of(metric.as_ref());
    let mut placements: Vec<PlacementResult> = resolved
        .variants
        .iter()
        .zip(measured.runs)
        .enumerate()
        .map(|(i, (v, runs))| {
            let mut p = PlacementResult {
                server_cpus: ctx.server_cpus.get(i).cloned().flatten(),
                burner_cpus: v.burner_cpus.clone(),
                notes: v.notes.clone(),
                ..PlacementResult::unsummarized(
                    v.label.clone(),
                    v.request.clone(),
                    v.cpus.clone(),
                    v.cores,
                    runs,
                )
            };
            analysis::summarize(&mut p);
            p
        })
        .collect();
    // sysbench's OLTP tests report transactions, not events: the parser's unit wins.
    let mut metric = metric;
    if let (Some(m), Some(u)) = (metric.as_mut(), ctx.metric_unit) {
        m.unit = u.to_string();
    }
    for p in &mut placements {
        p.notes.dedup();
    }
    let mut fixed_duration = ctx.fixed_duration;
    let setting = Setting {
        placements: &placements,
        basis,
        noise: cfg.noise,
        fixed_by_arguments: fixed_duration
            .as_ref()
            .filter(|f| f.metric_chosen.is_none()),
    };
    let comparisons = analysis::comparisons(&setting);
    let smt_yield = pairs
        .yield_pair
        .and_then(|p| analysis::pair_speedup(&setting, p));
    let pairs_slowdown = pairs
        .pairs_pair
        .and_then(|p| analysis::pair_speedup(&setting, p));
    if fixed_duration.is_none() {
        fixed_duration = analysis::fixed_by_timing(&comparisons, smt_yield.as_ref());
    }
    let starved = analysis::starved(&placements, &comparisons, ctx.sched);
    CompareReport {
        command: cfg.command.argv(),
        metric,
        warmup_rounds: measured.warmup_rounds,
        rounds: measured.rounds,
        enforcement: ctx.enforcement,
        scope: resolved.scope.clone(),
        noise_threshold: cfg.noise,
        confidence: analysis::CONFIDENCE,
        server: ctx.server,
        burners: cfg.burners.as_ref().map(|b| BurnerInfo {
            kind: b.kind.to_string(),
            count: b.count,
            placement: config::burner_place_name(b.placement).into(),
        }),
        placements,
        skipped: resolved
            .skipped
            .iter()
            .map(|(label, reason)| Skipped {
                label: label.clone(),
                reason: reason.clone(),
            })
            .collect(),
        comparisons,
        no_comparison: resolved.no_comparison.clone(),
        smt_yield,
        pairs_slowdown,
        fixed_duration,
        interrupted: measured.interrupted,
        interrupted_by: crate::interrupt::signal().filter(|_| measured.interrupted),
        starved,
        notes: ctx.notes,
        preflight: Vec::new(),
        counters: ctx.counters,
    }
}

/// Finds the SMT pairs among the placements without burners.
pub fn smt_pairs(topo: &Topology, variants: &[Variant]) -> SmtPairs {
    let allowed = topo.allowed();
    let sets: Vec<Option<&crate::cpuset::CpuSet>> = variants
        .iter()
        .map(|v| v.burner_cpus.is_empty().then_some(&v.cpus))
        .collect();
    analysis::smt_pairs(&sets, |c| topo.core_of(c).intersection(&allowed))
}

/// Runs the whole comparison on this machine: checks, server, setup, the interleaved runs,
/// cleanup, analysis. Everything it changes is undone on every exit path; Ctrl-C returns
/// the report of what was measured with `interrupted` set (or [`Interrupted`] when
/// nothing was).
pub fn run(topo: &Topology, cfg: &CheckedConfig, ui: &dyn Progress) -> Result<CompareReport> {
    session::run(topo, cfg, ui)?.into_result()
}

/// As [`run`], but a run that fails (the command exits non-zero, its metric is missing)
/// after others were measured ends the comparison with the report of the runs before it
/// and the failure, everything undone as on every other path: a study keeps them. A
/// failure before any measured run is an error, as for [`run`].
pub fn run_keeping(topo: &Topology, cfg: &CheckedConfig, ui: &dyn Progress) -> Result<Kept> {
    session::run(topo, cfg, ui)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ms: u64) -> Run {
        Run {
            round: 0,
            position: 0,
            wall_time_ns: ms * 1_000_000,
            user_time_ns: 0,
            system_time_ns: 0,
            max_rss_bytes: 0,
            voluntary_switches: 0,
            involuntary_switches: 0,
            exit_code: Some(0),
            signal: None,
            metric: None,
            burner_ops_per_sec: None,
            counters: None,
            leftover_processes: 0,
        }
    }

    /// The (placement, round) of every execution, in order.
    type Log = std::rc::Rc<std::cell::RefCell<Vec<(usize, Option<usize>)>>>;

    /// A fake executor on a fake clock: each run advances the clock by 1 s; execution
    /// `fail_at` (1-based) is Ctrl-C.
    fn fake(
        fail_at: Option<usize>,
    ) -> (
        impl FnMut() -> Duration,
        impl FnMut(usize, Option<usize>) -> Result<Run>,
        Log,
    ) {
        let now = std::rc::Rc::new(std::cell::Cell::new(Duration::ZERO));
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let (n1, n2, l) = (now.clone(), now, log.clone());
        let clock = move || n1.get();
        let exec = move |p: usize, round: Option<usize>| -> Result<Run> {
            n2.set(n2.get() + Duration::from_secs(1));
            l.borrow_mut().push((p, round));
            if Some(l.borrow().len()) == fail_at {
                return Err(Interrupted.into());
            }
            Ok(sample(100 + p as u64))
        };
        (clock, exec, log)
    }

    #[test]
    fn rounds_interleave_after_the_warm_up() {
        let (mut clock, mut exec, log) = fake(None);
        let m = measure(
            3,
            1,
            Some(2),
            Duration::from_secs(60),
            &mut clock,
            &mut exec,
            &Quiet,
        )
        .unwrap();
        // The second round runs the placements the other way round.
        assert_eq!(
            *log.borrow(),
            [
                (0, None),
                (1, None),
                (2, None),
                (0, Some(1)),
                (1, Some(1)),
                (2, Some(1)),
                (2, Some(2)),
                (1, Some(2)),
                (0, Some(2)),
            ]
        );
        assert_eq!((m.rounds, m.warmup_rounds, m.interrupted), (2, 1, false));
        assert_eq!(
            m.runs[1].iter().map(|r| r.round).collect::<Vec<_>>(),
            [1, 2]
        );
        // Each run records where in its round it ran.
        let positions = |p: usize| m.runs[p].iter().map(|r| r.position).collect::<Vec<_>>();
        assert_eq!(
            (positions(0), positions(1), positions(2)),
            (vec![1, 3], vec![2, 2], vec![3, 1])
        );
    }

    #[test]
    fn the_round_count_fills_the_time_budget() {
        // 2 placements × 1 s per run: a warm-up round takes 2 s, so 60 s hold 29 more.
        let (mut clock, mut exec, _) = fake(None);
        let m = measure(
            2,
            1,
            None,
            Duration::from_secs(60),
            &mut clock,
            &mut exec,
            &Quiet,
        )
        .unwrap();
        assert_eq!(m.rounds, 29);
        assert_eq!(m.runs[0].len(), 29);
        // Without a warm-up the first measured round is the yardstick.
        let (mut clock, mut exec, _) = fake(None);
        let m = measure(
            2,
            0,
            None,
            Duration::from_secs(10),
            &mut clock,
            &mut exec,
            &Quiet,
        )
        .unwrap();
        assert_eq!(m.rounds, 5);
        assert_eq!(
            auto_rounds(Duration::from_secs(60), Duration::from_secs(50), 1, 1),
            3,
            "at least 3"
        );
        assert_eq!(
            auto_rounds(Duration::from_secs(60), Duration::from_millis(1), 1, 0),
            1000,
            "at most 1000"
        );
        assert_eq!(
            auto_rounds(Duration::from_secs(1), Duration::ZERO, 1, 0),
            1000
        );
    }

    #[test]
    fn ctrl_c_keeps_what_was_measured() {
        let (mut clock, mut exec, _) = fake(Some(6));
        let m = measure(
            2,
            1,
            Some(5),
            Duration::from_secs(60),
            &mut clock,
            &mut exec,
            &Quiet,
        )
        .unwrap();
        assert!(m.interrupted);
        // Execution 6 is the second of round 2, which runs `1` before `0`.
        assert_eq!((m.runs[0].len(), m.runs[1].len()), (1, 2));
        let (mut clock, mut exec, _) = fake(Some(1));
        let m = measure(
            2,
            1,
            Some(5),
            Duration::from_secs(60),
            &mut clock,
            &mut exec,
            &Quiet,
        )
        .unwrap();
        assert!(m.interrupted && m.runs.iter().all(Vec::is_empty));
    }

    #[test]
    fn a_failing_run_keeps_the_runs_before_it() {
        // Execution 6 = warm-up (1, 2), round 1 (3, 4), round 2 (5, 6): round 2 runs
        // placement 1 first, so placement 0 fails.
        let mut n = 0;
        let mut exec = |p: usize, _: Option<usize>| -> Result<Run> {
            n += 1;
            if n == 6 {
                anyhow::bail!("`app` failed on b (round 2): exit code 1");
            }
            Ok(sample(100 + p as u64))
        };
        let f = measure(
            2,
            1,
            Some(5),
            Duration::from_secs(60),
            &mut || Duration::ZERO,
            &mut exec,
            &Quiet,
        )
        .unwrap_err();
        assert!(f.error.to_string().contains("exit code 1"), "{}", f.error);
        assert!(!f.measured.interrupted);
        assert_eq!((f.measured.runs[0].len(), f.measured.runs[1].len()), (1, 2));
        assert_eq!((f.measured.rounds, f.measured.warmup_rounds), (5, 1));
        // A failure in the warm-up keeps nothing.
        let mut exec = |_: usize, _: Option<usize>| -> Result<Run> { anyhow::bail!("no") };
        let f = measure(
            2,
            1,
            Some(5),
            Duration::from_secs(60),
            &mut || Duration::ZERO,
            &mut exec,
            &Quiet,
        )
        .unwrap_err();
        assert!(f.measured.runs.iter().all(Vec::is_empty));
    }
}
