//! The oltp phase: singleton inserts into a real database (`--db`) under the layouts of
//! the published HT insert test — one client per core, two per core (SMT pairs), every
//! CPU — with one client per core of the scope's unit (at most 8), interleaved rounds.

use crate::experiments::oltp as experiment;
use crate::oltp::{self, DbTarget, OltpReport};
use crate::placement::{self, Request};
use crate::report::{OltpLayoutSummary, OltpSection, PhaseName, Report};
use crate::stats::{self, Summary};
use crate::study::phase::{Outcome, Phase, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// Per-run cost besides the measured time: creating the table and checking its rows.
const RUN_COST: Duration = Duration::from_millis(60);

/// The sized phase.
#[derive(Debug, Clone)]
pub struct OltpPhase {
    pub config: oltp::OltpConfig,
    /// Layouts this machine can place (the others are reported as skipped).
    pub possible: usize,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(OltpPhase::size(ctx)?))
}

/// Opening the database: a managed PostgreSQL cluster is initdb'd and started.
fn setup(db: &DbTarget) -> Duration {
    match db {
        DbTarget::PostgresManaged => Duration::from_secs(6),
        _ => ms(300),
    }
}

impl OltpPhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let within = ctx.cfg.within;
        let layouts = vec![Request::OnePerCore, Request::Pairs, Request::All];
        let (_, unit_cores) = placement::scoped_cores(ctx.topo, within);
        let threads = unit_cores.len().clamp(1, 8);
        let possible = layouts
            .iter()
            .filter(|r| placement::plan_within(ctx.topo, r, threads, within).is_ok())
            .count()
            .max(1);
        let runs = (possible * ctx.repeat) as u32;
        let per_run =
            (ctx.budget.saturating_sub(setup(&ctx.cfg.db)) / runs).saturating_sub(RUN_COST);
        let (warmup, duration) = split_run(
            per_run,
            0.75,
            (ms(300), Duration::from_secs(20)),
            (ms(100), Duration::from_secs(2)),
        );
        // A refused value here is a bug in the sizing above, returned as the error it is.
        let config = oltp::OltpConfig::new(oltp::OltpSettings {
            db: ctx.cfg.db.clone(),
            table: oltp::TableSpec {
                schema: oltp::Schema::Seed001,
                key: oltp::KeyMode::Sequential,
                rows_per_txn: 1,
            },
            durability: oltp::Durability::Delayed,
            prefill: 0,
            threads,
            stop: oltp::StopRule::Duration,
            duration,
            warmup,
            layouts,
            within,
            repeat: ctx.repeat,
            dry_run: false,
            sysfs_root: "/".into(),
            json: true,
            counters: ctx.cfg.counters,
        })?;
        Ok(OltpPhase { config, possible })
    }
}

impl Phase for OltpPhase {
    fn name(&self) -> PhaseName {
        crate::experiments::oltp::PHASE
    }
    fn estimate(&self) -> Duration {
        let runs = (self.possible * self.config.repeat) as u32;
        setup(&self.config.db) + (self.config.duration + self.config.warmup + RUN_COST) * runs
    }
    fn units(&self) -> u64 {
        0
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let r = experiment::run(ctx.engine, ctx.topo, &self.config, &mut |m| {
            ctx.progress.note(m)
        })?;
        let outcome = match experiment::row_check_failure(&r) {
            Some(e) => Outcome::failed(format!("{e:#}")),
            None => Outcome::interrupted_if(r.interrupted),
        };
        rep.oltp = Some(OltpSection {
            layouts: self.config.layouts.iter().map(|l| l.to_string()).collect(),
            summary: summarise(&r),
            result: r,
        });
        Ok(outcome)
    }
}

/// Per layout over rounds, in the order layouts first ran.
pub fn summarise(r: &OltpReport) -> Vec<OltpLayoutSummary> {
    let mut layouts: Vec<&Request> = Vec::new();
    for run in &r.runs {
        if !layouts.contains(&&run.placement) {
            layouts.push(&run.placement);
        }
    }
    layouts
        .into_iter()
        .filter_map(|l| {
            let runs: Vec<_> = r.runs.iter().filter(|x| x.placement == *l).collect();
            let rates: Vec<f64> = runs.iter().map(|x| x.inserts_per_sec).collect();
            let p99: Vec<f64> = runs
                .iter()
                .map(|x| x.commit_latency_p99_ns as f64)
                .collect();
            Some(OltpLayoutSummary {
                placement: l.clone(),
                inserts_per_sec: Summary::of(&rates)?,
                commit_latency_p99_ns: stats::median(&p99).round() as u64,
                rows_verified: runs.iter().all(|x| x.rows_verified),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{QUICK, sized};

    #[test]
    fn one_client_per_core_and_only_possible_layouts_are_budgeted() {
        let s = sized(
            2,
            1,
            QUICK,
            crate::experiments::oltp::PHASE,
            OltpPhase::size,
        )
        .unwrap();
        assert_eq!(s.config.threads, 2);
        // `pairs` needs SMT siblings: one-per-core and all only.
        assert_eq!(s.possible, 2);
        let t = sized(
            4,
            2,
            QUICK,
            crate::experiments::oltp::PHASE,
            OltpPhase::size,
        )
        .unwrap();
        assert_eq!(t.config.threads, 4);
        assert_eq!(t.possible, 3);
    }

    #[test]
    fn layouts_are_summarised_over_their_rounds_in_run_order() {
        let mut r = crate::oltp::model::tests::sample();
        let run = r.runs[0].clone();
        let with = |placement: Request, rate: f64, p99: u64, ok: bool| {
            let mut x = run.clone();
            x.placement = placement;
            x.inserts_per_sec = rate;
            x.commit_latency_p99_ns = p99;
            x.rows_verified = ok;
            x
        };
        // Rounds interleaved: pairs, one-per-core, pairs, one-per-core, pairs.
        r.runs = vec![
            with(Request::Pairs, 100.0, 10, true),
            with(Request::OnePerCore, 200.0, 20, true),
            with(Request::Pairs, 300.0, 30, false),
            with(Request::OnePerCore, 400.0, 40, true),
            with(Request::Pairs, 200.0, 50, true),
        ];
        let s = summarise(&r);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].placement, Request::Pairs, "first to run, first listed");
        assert_eq!(
            (s[0].inserts_per_sec.n, s[0].inserts_per_sec.median),
            (3, 200.0)
        );
        assert_eq!(s[0].commit_latency_p99_ns, 30);
        assert!(!s[0].rows_verified, "one failed round fails the layout");
        assert_eq!(s[1].placement, Request::OnePerCore);
        assert_eq!(s[1].inserts_per_sec.median, 300.0);
        assert_eq!(s[1].commit_latency_p99_ns, 30, "median of 20 and 40");
        assert!(s[1].rows_verified);
    }
}
