//! The c2c phase: one-way cache-line latency between CPU pairs, as many CPUs as the
//! budget share allows — the first core's SMT siblings first, then one CPU per core in
//! spread order (other L3s, other packages), so a subset still covers every proximity
//! class.

use crate::cpuset::CpuSet;
use crate::engine::PingPongSpec;
use crate::experiments::c2c;
use crate::report::{C2cSection, PhaseName, Report};
use crate::study::phase::{Outcome, Phase, RunCtx, SizeCtx};
use anyhow::Result;
use std::time::Duration;

/// The sized phase.
#[derive(Debug, Clone)]
pub struct C2cPhase {
    /// CPUs measured pairwise.
    pub cpus: CpuSet,
    /// Usable CPUs the budget left out.
    pub left_out: CpuSet,
    pub spec: PingPongSpec,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(C2cPhase::size(ctx)))
}

impl C2cPhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Self {
        let allowed = ctx.topo.allowed();
        let spec = PingPongSpec {
            samples: if ctx.cfg.quick { 100 } else { 300 },
            round_trips: 1000,
        };
        let per_pair = c2c::estimate(1, &spec);
        let max_pairs = (ctx.budget.as_secs_f64() / per_pair.as_secs_f64()).max(1.0) as usize;
        let cpus = c2c::fit_prefix(&c2c::budget_order(ctx.topo, &allowed), max_pairs);
        C2cPhase {
            left_out: allowed.difference(&cpus),
            cpus,
            spec,
        }
    }

    fn pairs(&self) -> usize {
        let k = self.cpus.len();
        k * k.saturating_sub(1) / 2
    }
}

impl Phase for C2cPhase {
    fn name(&self) -> PhaseName {
        crate::experiments::c2c::PHASE
    }
    fn estimate(&self) -> Duration {
        c2c::estimate(1, &self.spec) * self.pairs() as u32
    }
    fn units(&self) -> u64 {
        self.pairs() as u64
    }
    fn skip_reason(&self) -> Option<String> {
        (self.cpus.len() < 2).then(|| {
            format!(
                "only CPU {} is usable: no pair to bounce a cache line between",
                self.cpus
            )
        })
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let r = c2c::measure(ctx.engine, ctx.topo, &self.cpus, &self.spec, &mut |_, _| {
            ctx.progress.advance(1)
        })?;
        let stopped = r.interrupted;
        rep.c2c = Some(C2cSection {
            samples: self.spec.samples,
            round_trips: self.spec.round_trips,
            cpus_left_out: self.left_out.to_string(),
            result: c2c::C2c {
                left_out: self.left_out.clone(),
                ..r
            },
        });
        Ok(Outcome::interrupted_if(stopped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{QUICK, sized};

    #[test]
    fn two_cpus_give_one_pair() {
        let s = sized(2, 1, QUICK, crate::experiments::c2c::PHASE, C2cPhase::size);
        assert_eq!(s.cpus.to_string(), "0-1");
        assert!(s.left_out.is_empty());
        assert_eq!(s.units(), 1);
    }

    #[test]
    fn big_machines_measure_a_subset_siblings_first() {
        let s = sized(32, 2, QUICK, crate::experiments::c2c::PHASE, C2cPhase::size);
        let v = s.cpus.to_vec();
        assert!(v.len() >= 2 && v.len() < 64, "{v:?}");
        assert_eq!(&v[..1], &[0]);
        assert!(v.contains(&32), "CPU 0's sibling is measured: {v:?}");
        assert!(!s.left_out.is_empty());
    }

    #[test]
    fn one_cpu_is_skipped_with_the_reason() {
        let s = sized(1, 1, QUICK, crate::experiments::c2c::PHASE, C2cPhase::size);
        assert!(s.skip_reason().unwrap().contains("no pair"));
    }
}
