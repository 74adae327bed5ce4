//! The lockscan phase: the scanner swept over every core of the scope's unit (plus a
//! baseline without it), with three locks — test-and-test-and-set, the spin lock of the
//! SQL Server team's "To Hyper or not to Hyper" test; a fair ticket lock; the futex
//! mutex — in interleaved rounds.

use crate::engine::{PingPongSpec, RunSpec};
use crate::experiments::c2c;
use crate::experiments::lockscan::{self, Layout, LockscanConfig};
use crate::locks::LockKind;
use crate::report::{LockscanSection, PhaseName, Report};
use crate::study::phase::{Outcome, Phase, RUN_OVERHEAD, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// The sized phase.
#[derive(Debug, Clone)]
pub struct LockscanPhase {
    pub config: LockscanConfig,
    /// Runs per lock and round: the sweep's scenarios (baseline included) and each
    /// scanner scenario's one-per-core run of its scanners.
    pub scenarios: usize,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(LockscanPhase::size(ctx)?))
}

impl LockscanPhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let layout = Layout::Sweep(ctx.cfg.within);
        let locks = vec![LockKind::Ttas, LockKind::Ticket, LockKind::Mutex];
        let scen = lockscan::scenarios(ctx.topo, &layout, true)?;
        // Each scanner scenario also runs its scanners one per core (their cores' lock
        // threads left out) every round.
        let scenarios = scen.len()
            + scen
                .iter()
                .skip(1)
                .filter(|s| s.scanner_alone(ctx.topo).is_some())
                .count();
        let runs = (scenarios * locks.len() * ctx.repeat) as u32;
        let per_run = (ctx.budget / runs.max(1)).saturating_sub(RUN_OVERHEAD);
        let (warm, measure) = split_run(
            per_run,
            0.75,
            (ms(100), Duration::from_secs(10)),
            (ms(30), Duration::from_secs(1)),
        );
        Ok(LockscanPhase {
            // The original test's empty critical section, with counters; its 1 MiB scan
            // fits in many cores' L2 (2 MiB on recent Intel cores), so the study's scan
            // streams past the largest L2 (`--scan-bytes auto`).
            config: LockscanConfig::new(
                layout,
                locks,
                RunSpec::new(warm, measure)?.with_counters(ctx.cfg.counters),
            )?
            .with_scan_bytes(lockscan::auto_scan_bytes(ctx.topo).bytes)?
            .with_repeat(ctx.repeat)?,
            scenarios,
        })
    }

    fn runs(&self) -> u32 {
        (self.scenarios * self.config.locks.len() * self.config.repeat) as u32
    }
}

impl Phase for LockscanPhase {
    fn name(&self) -> PhaseName {
        crate::experiments::lockscan::PHASE
    }
    fn estimate(&self) -> Duration {
        // Before each run lockscan measures one pair per proximity class (at most four)
        // for its handoff ceiling.
        let ceiling = c2c::estimate(4, &PingPongSpec::CEILING);
        let spec = &self.config.spec;
        (spec.warmup() + spec.duration() + RUN_OVERHEAD + ceiling) * self.runs()
    }
    fn units(&self) -> u64 {
        u64::from(self.runs()) * self.config.spec.intervals() as u64
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let c = &self.config;
        let scen = lockscan::scenarios(ctx.topo, &c.layout, c.baseline)?;
        let r = lockscan::run(ctx.engine, ctx.topo, c, &scen, &mut |_, _, _, _| {
            ctx.progress.advance(1)
        })?;
        let stopped = r.results.iter().any(|x| x.interrupted);
        rep.lockscan = Some(LockscanSection {
            layout: "sweep".into(),
            locks: c.locks.clone(),
            warmup_ns: c.spec.warmup().as_nanos() as u64,
            duration_ns: c.spec.duration().as_nanos() as u64,
            result: r,
        });
        Ok(Outcome::interrupted_if(stopped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{DEFAULT, QUICK, sized};

    #[test]
    fn two_cores_sweep_baseline_and_each_core() {
        let s = sized(
            2,
            1,
            QUICK,
            crate::experiments::lockscan::PHASE,
            LockscanPhase::size,
        )
        .unwrap();
        assert_eq!(s.scenarios, 3, "baseline + scanner on each of 2 cores");
        assert!(s.config.spec.duration() >= ms(100));
        assert_eq!(s.config.repeat, 3);
        // 4 × the fixture's 512 KiB L2.
        assert_eq!(s.config.scan_bytes, 2 << 20);
    }

    #[test]
    fn longer_budgets_give_longer_runs_and_more_repeats() {
        let q = sized(
            2,
            1,
            QUICK,
            crate::experiments::lockscan::PHASE,
            LockscanPhase::size,
        )
        .unwrap();
        let l = sized(
            2,
            1,
            DEFAULT,
            crate::experiments::lockscan::PHASE,
            LockscanPhase::size,
        )
        .unwrap();
        assert!(l.config.spec.duration() > q.config.spec.duration());
        assert_eq!(l.config.repeat, 5);
    }
}
