//! The compare phase: the user's own command (`smtlab study -- CMD`) under its placements,
//! interleaved rounds, as `smtlab compare` runs it — by default one thread per core
//! against every sibling of the same cores, which is the SMT on/off question for that
//! command. Skipped with the reason when no command was given.
//!
//! Placements this machine cannot run (`all` or `pairs` without SMT siblings, more cores
//! than it has) are left out with the reason and the others run; a phase left with none
//! is skipped. The rounds fill the phase's share of the budget, unless `--runs` fixes
//! them; then the progress bar counts the runs and its ETA follows their pace.
//!
//! Every call in the section and the answer row use one noise band, the comparison's
//! `--noise` (a study's default is the ±5 % of its other answer rows). A run that fails
//! part-way keeps the runs before it: the phase is recorded as failed with the reason, as
//! other phases that fail part-way are, and the section shows what finished.
//!
//! A synthetic engine runs no process: there the runs are made up by
//! [`compare::fake`](crate::experiments::compare::fake), and the section says so.

use crate::experiments::compare::{self, PlacementChoice, analysis::Basis};
use crate::placement::Request;
use crate::progress::Progress;
use crate::report::{CompareSection, PhaseName, PlacementMedian, Report};
use crate::study::phase::{Outcome, Phase, RunCtx, SizeCtx};
use anyhow::Result;
use std::time::Duration;

/// Starting a throwaway PostgreSQL cluster (`--with-postgres`), outside the rounds.
const CLUSTER_START: Duration = Duration::from_secs(6);
/// The shortest time the rounds are sized to, however small the share.
const MIN_SIZED_TO: Duration = Duration::from_secs(1);
/// Bootstrap resamples for each placement's interval (seeded: reproducible).
const RESAMPLES: usize = 2000;

/// The sized phase.
#[derive(Debug, Clone)]
pub struct ComparePhase {
    /// The comparison to run, its placements those possible here; None when skipped.
    pub config: Option<compare::Config>,
    /// Placements left out here, with the reason.
    pub left_out: Vec<(String, String)>,
    /// Why it cannot run.
    pub skip: Option<String>,
    /// What it should take.
    pub estimate: Duration,
    /// Runs planned (warm-up included) when `--runs` fixes them; 0 otherwise.
    pub planned_runs: u64,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(ComparePhase::size(ctx)?))
}

/// Not possible on this machine, as opposed to a mistake in the options.
fn not_possible_here(e: &anyhow::Error) -> bool {
    crate::error::exit_code(e) == crate::error::EXIT_NOT_POSSIBLE
}

fn label(c: &PlacementChoice) -> String {
    match c {
        PlacementChoice::Named(r) => r.to_string(),
        PlacementChoice::Cpus(s) => Request::Cpus(s.clone()).to_string(),
    }
}

/// Why the phase skips without a command, and what a command would get on this machine:
/// a comparison on siblings where it has them, or `smtlab compare`'s CPU sets where it has
/// none (the phase compares placements on siblings only).
fn no_command(topo: &crate::topology::Topology) -> String {
    if topo.threads_per_core() > 1 {
        "no command was given: `smtlab study [OPTIONS] -- CMD [ARGS…]` compares yours with one \
         thread per core against every sibling of the same cores"
            .into()
    } else {
        "no command was given, and this machine has no SMT siblings to compare one on: \
         `smtlab compare --cpus 0 --cpus 0-1 -- CMD [ARGS…]` compares yours on one CPU and on \
         two"
        .into()
    }
}

impl ComparePhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let skipped = |why: String| ComparePhase {
            config: None,
            left_out: Vec::new(),
            skip: Some(why),
            estimate: Duration::ZERO,
            planned_runs: 0,
        };
        let Some(given) = &ctx.cfg.compare else {
            return Ok(skipped(no_command(ctx.topo)));
        };
        let mut cfg = given.clone();
        // `smtlab compare` alone measures the command anyway; the study's phase is there to
        // compare placements, so without siblings and without placements it has nothing to do.
        if let Some(why) = compare::config::no_smt_default(ctx.topo, &cfg) {
            return Ok(skipped(format!(
                "{why}; compare CPU sets instead, e.g. --cpus 0 --cpus 0-1"
            )));
        }
        // Each named placement alone (burners aside): the ones this machine cannot run
        // are left out with the reason; a bad option is still an error.
        let mut left_out = Vec::new();
        if !cfg.placements.is_empty() {
            let mut kept = Vec::new();
            for c in &cfg.placements {
                let mut one = cfg.clone();
                one.placements = vec![c.clone()];
                one.burners = None;
                match compare::config::resolve(ctx.topo, &one) {
                    Ok(_) => kept.push(c.clone()),
                    Err(e) if not_possible_here(&e) => left_out.push((label(c), format!("{e:#}"))),
                    Err(e) => return Err(e),
                }
            }
            if kept.is_empty() {
                let why: Vec<String> = left_out.iter().map(|(_, w)| w.clone()).collect();
                return Ok(skipped(format!(
                    "no placement asked for can run here: {}",
                    why.join("; ")
                )));
            }
            cfg.placements = kept;
        }
        let variants = match compare::config::resolve(ctx.topo, &cfg) {
            Ok(r) => r.variants.len(),
            Err(e) if not_possible_here(&e) => return Ok(skipped(format!("{e:#}"))),
            Err(e) => return Err(e),
        };
        let setup = if cfg.with_postgres {
            CLUSTER_START
        } else {
            Duration::ZERO
        };
        cfg.max_time = ctx.budget.saturating_sub(setup).max(MIN_SIZED_TO);
        // With `--runs` the runs are counted; how long they take is known only once the
        // first ones ran, so the estimate before the study stays the share.
        let planned_runs = cfg.runs.map_or(0, |n| ((n + cfg.warmup) * variants) as u64);
        Ok(ComparePhase {
            estimate: setup + cfg.max_time,
            config: Some(cfg),
            left_out,
            skip: None,
            planned_runs,
        })
    }
}

/// Shows the comparison's steps as the phase's notes, and each run as a step when the
/// runs are counted.
struct Notes<'a> {
    progress: &'a dyn Progress,
    counted: bool,
}

impl Progress for Notes<'_> {
    fn note(&self, msg: &str) {
        self.progress.note(msg)
    }
    fn advance(&self, n: u64) {
        if self.counted {
            self.progress.advance(n)
        }
    }
}

impl Phase for ComparePhase {
    fn name(&self) -> PhaseName {
        crate::experiments::compare::PHASE
    }
    fn estimate(&self) -> Duration {
        self.estimate
    }
    fn units(&self) -> u64 {
        self.planned_runs
    }
    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let Some(cfg) = &self.config else {
            return Ok(Outcome::done());
        };
        let ui = Notes {
            progress: ctx.progress,
            counted: self.planned_runs > 0,
        };
        let kept = if ctx.engine.synthetic() {
            compare::fake::run_keeping(ctx.topo, cfg, &ui)?
        } else {
            // `smtlab study` checked the command before any phase; it is checked again here
            // because the study's config holds it unchecked (a synthetic study runs a
            // command that need not exist on this machine).
            compare::run_keeping(ctx.topo, &cfg.clone().check()?, &ui)?
        };
        let mut r = kept.report;
        for (label, reason) in &self.left_out {
            r.skipped.push(compare::model::Skipped {
                label: label.clone(),
                reason: reason.clone(),
            });
        }
        let interrupted = r.interrupted;
        let outcome = match &kept.failure {
            Some(e) => Outcome::failed(format!(
                "after {} ({}; kept): {e:#}",
                crate::render::count(r.placements.iter().map(|p| p.runs.len()).sum(), "run"),
                crate::render::count(
                    compare::analysis::complete_rounds(&r.placements).len(),
                    "complete round",
                ),
            )),
            None => Outcome::interrupted_if(interrupted),
        };
        rep.compare = Some(CompareSection {
            sized_to_ns: cfg.runs.is_none().then_some(cfg.max_time.as_nanos() as u64),
            medians: medians(&r),
            result: r,
        });
        Ok(outcome)
    }
}

/// Each placement's compared value: the median of its runs with a percentile bootstrap
/// interval (seeded by the placement's position, so the JSON reproduces).
pub fn medians(r: &compare::CompareReport) -> Vec<PlacementMedian> {
    let basis = Basis::of(r.metric.as_ref());
    let unit = match (&r.metric, basis) {
        (Some(m), Basis::Metric(_)) => m.unit.clone(),
        _ => "ns".to_string(),
    };
    r.placements
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let values = basis.values(&p.runs);
            PlacementMedian {
                label: p.label.clone(),
                basis: basis.name().into(),
                unit: unit.clone(),
                median: crate::stats::bootstrap_median(
                    &values,
                    compare::analysis::CONFIDENCE,
                    RESAMPLES,
                    0x4D45_4449_414E ^ i as u64,
                ),
                n: values.len(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::experiments::neighbors::BurnerMode;
    use crate::study::tests::{QUICK, config};

    fn sized(
        cores: u32,
        threads_per_core: u32,
        compare: Option<compare::Config>,
    ) -> Result<ComparePhase> {
        let topo = crate::topology::fixture::topology(cores, threads_per_core, true);
        let mut cfg = config(QUICK);
        cfg.compare = compare;
        ComparePhase::size(&SizeCtx {
            topo: &topo,
            cfg: &cfg,
            budget: QUICK.mul_f64(crate::study::phases::share_in(
                crate::experiments::compare::PHASE,
                cfg.compare.is_some(),
            )),
            repeat: 3,
            burner_mode: BurnerMode::Process,
            synthetic: false,
        })
    }

    fn command(placements: Vec<PlacementChoice>) -> compare::Config {
        let mut c = compare::Config::new(vec!["true".into()]);
        c.placements = placements;
        c
    }

    /// Without a command the reason says how to give one, and only what this machine can
    /// do with it: siblings to compare it on, or none, and then `smtlab compare`'s CPU sets.
    #[test]
    fn without_a_command_the_reason_fits_the_machine() {
        let smt = sized(4, 2, None).unwrap().skip.unwrap();
        assert_eq!(
            smt,
            "no command was given: `smtlab study [OPTIONS] -- CMD [ARGS…]` compares yours with \
             one thread per core against every sibling of the same cores"
        );
        let no_smt = sized(2, 1, None).unwrap().skip.unwrap();
        assert_eq!(
            no_smt,
            "no command was given, and this machine has no SMT siblings to compare one on: \
             `smtlab compare --cpus 0 --cpus 0-1 -- CMD [ARGS…]` compares yours on one CPU and \
             on two"
        );
    }

    #[test]
    fn without_a_command_it_is_skipped_and_takes_no_budget() {
        let s = sized(4, 2, None).unwrap();
        assert!(
            s.skip.as_deref().unwrap().contains("-- CMD"),
            "{:?}",
            s.skip
        );
        assert_eq!(s.estimate(), Duration::ZERO);
    }

    #[test]
    fn the_rounds_fill_the_share_unless_runs_are_given() {
        let s = sized(4, 2, Some(command(Vec::new()))).unwrap();
        assert!(s.skip.is_none());
        let share = QUICK.mul_f64(crate::study::phases::share(
            crate::experiments::compare::PHASE,
        ));
        let c = s.config.as_ref().unwrap();
        assert_eq!(c.max_time, share);
        assert_eq!(c.runs, None);
        assert_eq!(
            s.units(),
            0,
            "progress by time: the rounds are not known yet"
        );
        let mut fixed = command(Vec::new());
        fixed.runs = Some(9);
        let s = sized(4, 2, Some(fixed)).unwrap();
        // (9 rounds + 1 warm-up) × (one-per-core, all): the bar counts the runs.
        assert_eq!(s.units(), 20);
        assert_eq!(s.config.unwrap().runs, Some(9), "--runs is honoured");
        // A managed cluster's start comes out of the share.
        let mut pg = command(Vec::new());
        pg.with_postgres = true;
        let s = sized(4, 2, Some(pg)).unwrap();
        assert_eq!(s.config.unwrap().max_time, share - CLUSTER_START);
        assert_eq!(s.estimate, share);
    }

    #[test]
    fn placements_impossible_here_are_left_out_with_the_reason() {
        // No siblings: the default (one-per-core vs all) cannot run, so nothing does.
        let s = sized(2, 1, Some(command(Vec::new()))).unwrap();
        assert!(
            s.skip.as_deref().unwrap().contains("no SMT siblings"),
            "{:?}",
            s.skip
        );
        // `all` is left out, the CPU lists run.
        let s = sized(
            2,
            1,
            Some(command(vec![
                PlacementChoice::Named(Request::All),
                PlacementChoice::Cpus(CpuSet::from_cpus([0])),
                PlacementChoice::Cpus(CpuSet::from_cpus([0, 1])),
            ])),
        )
        .unwrap();
        assert!(s.skip.is_none());
        assert_eq!(s.config.unwrap().placements.len(), 2);
        assert_eq!(s.left_out.len(), 1);
        assert_eq!(s.left_out[0].0, "all");
        assert!(
            s.left_out[0].1.contains("needs SMT siblings"),
            "{:?}",
            s.left_out
        );
        // CPUs that do not exist are the user's mistake: an error before anything runs.
        let e = sized(
            2,
            1,
            Some(command(vec![PlacementChoice::Cpus(CpuSet::from_cpus([9]))])),
        )
        .unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_BAD_INPUT);
    }
}
