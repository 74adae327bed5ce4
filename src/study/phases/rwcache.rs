//! The rwcache phase: every protection scheme of the read-mostly cache at 1 thread and
//! at every CPU of the scope's unit, spread over cores, interleaved rounds.

use crate::cpuset::CpuSet;
use crate::engine::RunSpec;
use crate::experiments::rwcache;
use crate::placement::{self, Request};
use crate::report::{PhaseName, Report, RwcacheRow, RwcacheSection};
use crate::rwcache::SchemeKind;
use crate::study::phase::{Outcome, Phase, RUN_OVERHEAD, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// The sized phase.
#[derive(Debug, Clone)]
pub struct RwcachePhase {
    pub config: rwcache::RwcacheConfig,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(RwcachePhase::size(ctx)?))
}

impl RwcachePhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let (_, unit_cores) = placement::scoped_cores(ctx.topo, ctx.cfg.within);
        let unit_cpus = unit_cores.iter().map(CpuSet::len).sum::<usize>().max(1);
        let threads = if unit_cpus > 1 {
            vec![1, unit_cpus]
        } else {
            vec![1]
        };
        let schemes = SchemeKind::ALL.to_vec();
        let runs = (threads.len() * schemes.len() * ctx.repeat) as u32;
        let per_run = (ctx.budget / runs).saturating_sub(RUN_OVERHEAD);
        let (warm, measure) = split_run(
            per_run,
            0.8,
            (ms(80), Duration::from_secs(5)),
            (ms(20), Duration::from_secs(1)),
        );
        let seed = 3;
        let config = rwcache::RwcacheConfig::new(
            schemes,
            threads,
            Request::Spread,
            ctx.cfg.within,
            rwcache::TableSpec::default(),
            RunSpec::new(warm, measure)?.with_counters(ctx.cfg.counters),
            ctx.repeat,
            seed,
        )?;
        Ok(RwcachePhase { config })
    }

    fn runs(&self) -> u32 {
        let c = &self.config;
        (c.threads.len() * c.schemes.len() * c.repeat) as u32
    }
}

impl Phase for RwcachePhase {
    fn name(&self) -> PhaseName {
        crate::experiments::rwcache::PHASE
    }
    fn estimate(&self) -> Duration {
        let spec = &self.config.spec;
        (spec.duration() + spec.warmup() + RUN_OVERHEAD) * self.runs()
    }
    fn units(&self) -> u64 {
        u64::from(self.runs())
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let r = rwcache::run(ctx.engine, ctx.topo, &self.config, &mut |_, _, _, _| {
            ctx.progress.advance(1)
        })?;
        let stopped = r.interrupted;
        rep.rwcache = Some(RwcacheSection {
            rows: r
                .results
                .iter()
                .filter_map(|x| {
                    Some(RwcacheRow {
                        scheme: x.scheme,
                        threads: x.threads,
                        requests_per_sec: x.requests_per_sec?,
                        lock_cpu_share: x.lock_cpu_share.map(|s| s.median),
                    })
                })
                .collect(),
            result: r,
        });
        Ok(Outcome::interrupted_if(stopped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{QUICK, sized};

    #[test]
    fn one_thread_and_every_cpu_of_the_unit() {
        let s = sized(
            2,
            2,
            QUICK,
            crate::experiments::rwcache::PHASE,
            RwcachePhase::size,
        )
        .unwrap();
        assert_eq!(s.config.threads, [1, 4]);
        let one = sized(
            1,
            1,
            QUICK,
            crate::experiments::rwcache::PHASE,
            RwcachePhase::size,
        )
        .unwrap();
        assert_eq!(one.config.threads, [1]);
    }
}
