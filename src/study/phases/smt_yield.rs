//! The yield phase: the rulers and the hot-page lock (and PostgreSQL inserts when the
//! study has a PostgreSQL `--db`) as one-per-core, all and pairs on every core of the
//! scope's unit, interleaved rounds. Skipped with the reason where the unit has no SMT
//! sibling: there `all` is `one-per-core` and there is no yield to measure.

use crate::engine::RunSpec;
use crate::experiments::smt_yield::{self, InsertTarget, Subject};
use crate::oltp::{self, DbTarget};
use crate::placement::PlanError;
use crate::report::{PhaseName, Report, YieldSection};
use crate::study::phase::{Outcome, Phase, RUN_OVERHEAD, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// The workloads of a `--quick` study: the divider, the integer ALU, the L2, and the hot
/// page under a sleeping and a spinning lock.
pub const QUICK_WORKLOADS: &str = "prime,int,l2,hot-page/mutex,hot-page/ttas";

/// The shortest run slot (warm-up, run and overhead) for which the phase takes 5 rounds
/// rather than the study's 3.
const YIELD_MIN_SLOT: Duration = Duration::from_millis(120);

/// The sized phase.
#[derive(Debug, Clone)]
pub struct YieldPhase {
    pub config: smt_yield::Config,
    /// Layouts per round (2 with one core, else 3).
    pub layouts: usize,
    /// Workloads that will run.
    pub workloads: usize,
    /// Why it cannot run here.
    pub skip: Option<String>,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(YieldPhase::size(ctx)?))
}

/// Opening the database: a managed PostgreSQL cluster is initdb'd and started.
fn setup(db: &DbTarget) -> Duration {
    match db {
        DbTarget::PostgresManaged => Duration::from_secs(6),
        DbTarget::Postgres { .. } => ms(300),
        DbTarget::Sqlite(_) => Duration::ZERO,
    }
}

/// Not possible on this machine (rather than a mistake): the phase is skipped.
fn not_possible_here(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<PlanError>(),
        Some(PlanError::NoSmt { .. } | PlanError::NotEnough { .. })
    ) || e.downcast_ref::<crate::error::NotPossible>().is_some()
}

impl YieldPhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let subjects = Subject::parse_list(if ctx.cfg.quick {
            QUICK_WORKLOADS
        } else {
            smt_yield::DEFAULT_WORKLOADS
        })?;
        // Sized below from the layouts this config plans; a refused value here is a bug
        // in the sizing, returned as the error it is.
        let config = smt_yield::Config::new(
            subjects,
            None,
            ctx.cfg.within,
            smt_yield::Config::default().spec,
            ctx.repeat,
            Some(InsertTarget {
                db: ctx.cfg.db.clone(),
                durability: oltp::Durability::Delayed,
                table: oltp::TableSpec {
                    schema: oltp::Schema::Seed001,
                    key: oltp::KeyMode::Sequential,
                    rows_per_txn: 1,
                },
            }),
        )?;
        let (layouts, workloads, skip) = match smt_yield::plan(ctx.topo, &config, None) {
            Ok(p) => (p.layouts.len(), p.subjects.len(), None),
            Err(e) if not_possible_here(&e) => (0, 0, Some(format!("{e:#}"))),
            Err(e) => return Err(e),
        };
        // Rounds before run length: the answer rows' Student-t intervals narrow with
        // rounds (t = 4.30 at 3, 2.78 at 5), so the phase runs the default 5 rounds when
        // each run still gets YIELD_MIN_SLOT, else the study's count.
        let available = ctx.budget.saturating_sub(setup(&ctx.cfg.db));
        let slot = |repeat: usize| available / (layouts * workloads * repeat).max(1) as u32;
        let repeat = if slot(crate::stats::DEFAULT_ROUNDS) >= YIELD_MIN_SLOT {
            ctx.repeat.max(crate::stats::DEFAULT_ROUNDS)
        } else {
            ctx.repeat
        };
        let per_run = slot(repeat).saturating_sub(RUN_OVERHEAD);
        let (warmup, duration) = split_run(
            per_run,
            0.8,
            (ms(80), Duration::from_secs(5)),
            (ms(20), Duration::from_secs(1)),
        );
        let spec = RunSpec::new(warmup, duration)?.with_counters(ctx.cfg.counters);
        let config = config.with_run(spec, repeat)?;
        Ok(YieldPhase {
            config,
            layouts,
            workloads,
            skip,
        })
    }

    fn runs(&self) -> u32 {
        (self.layouts * self.workloads * self.config.repeat) as u32
    }
}

impl Phase for YieldPhase {
    fn name(&self) -> PhaseName {
        crate::experiments::smt_yield::PHASE
    }
    fn estimate(&self) -> Duration {
        if self.skip.is_some() {
            return Duration::ZERO;
        }
        let spec = &self.config.spec;
        let db = self.config.db.as_ref().filter(|t| !t.single_writer());
        db.map_or(Duration::ZERO, |t| setup(&t.db))
            + (spec.duration() + spec.warmup() + RUN_OVERHEAD) * self.runs()
    }
    fn units(&self) -> u64 {
        u64::from(self.runs())
    }
    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        // One narration line per run starts with `[k/n]`; the others are notes.
        let r = smt_yield::run(ctx.engine, ctx.topo, &self.config, &mut |m| {
            if m.starts_with('[') {
                ctx.progress.advance(1)
            } else {
                ctx.progress.note(m)
            }
        })?;
        let bad = r
            .workloads
            .iter()
            .flat_map(|w| &w.runs)
            .find(|x| x.rows_verified == Some(false))
            .map(|x| {
                format!(
                    "insert row check failed in {} (round {})",
                    x.layout, x.round
                )
            });
        let outcome = match bad {
            Some(why) => Outcome::failed(why),
            None => Outcome::interrupted_if(r.interrupted),
        };
        rep.smt_yield = Some(YieldSection { result: r });
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{DEFAULT, QUICK, sized};

    #[test]
    fn skipped_without_siblings_with_the_reason() {
        let s = sized(
            2,
            1,
            QUICK,
            crate::experiments::smt_yield::PHASE,
            YieldPhase::size,
        )
        .unwrap();
        let why = s.skip.clone().expect("skipped");
        assert!(why.contains("needs SMT siblings"), "{why}");
        assert_eq!(s.estimate(), Duration::ZERO);
    }

    #[test]
    fn every_core_three_layouts_and_sqlite_left_out() {
        let s = sized(
            4,
            2,
            QUICK,
            crate::experiments::smt_yield::PHASE,
            YieldPhase::size,
        )
        .unwrap();
        assert!(s.skip.is_none());
        assert_eq!((s.layouts, s.workloads), (3, 5));
        // The quick study's 3 rounds become the default 5 while each run gets 120 ms.
        assert_eq!(s.config.repeat, 5);
        // The study's default SQLite is left out of the yield (single writer).
        assert!(s.config.db.as_ref().unwrap().single_writer());
        // The runs fit near the share.
        let share = QUICK.mul_f64(crate::study::phases::share(
            crate::experiments::smt_yield::PHASE,
        ));
        assert!(
            s.estimate() <= share + Duration::from_secs(1),
            "{:?}",
            s.estimate()
        );
        let d = sized(
            4,
            2,
            DEFAULT,
            crate::experiments::smt_yield::PHASE,
            YieldPhase::size,
        )
        .unwrap();
        assert_eq!((d.layouts, d.workloads, d.config.repeat), (3, 8, 5));
        let share = DEFAULT.mul_f64(crate::study::phases::share(
            crate::experiments::smt_yield::PHASE,
        ));
        assert!(
            d.estimate() <= share + Duration::from_secs(2),
            "{:?}",
            d.estimate()
        );
    }
}
