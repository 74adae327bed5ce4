//! The pairs phase: a few rulers as the workloads and the model's dimensions, every ruler
//! alone and beside every other on a pair of CPUs (SMT siblings where the machine has
//! them, else two cores sharing a cache), in short counterbalanced rounds. It is the
//! cheap half of `smtlab pairs` (the ruler-beside-ruler pairs the model is fitted on, and
//! its fit): what any two workloads do to each other needs their own profiles, which
//! the section says how to take.

use crate::engine::RunSpec;
use crate::experiments::pairs::{
    self, PairsSection,
    config::{MeasureChoice, PartnerChoice, parse_rulers, workloads},
};
use crate::report::{PhaseName, Report};
use crate::study::phase::{Outcome, Phase, RUN_OVERHEAD, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// The rulers of a `--quick` study: an ALU, the private L2 and memory bandwidth, the
/// three resources whose pairs differ most (compute beside compute shares issue slots,
/// memory beside memory the bus).
pub const QUICK_RULERS: &str = "int,l2,stream";

/// The rulers of a full study: `smtlab pairs`' default set.
pub const RULERS: &str = pairs::config::DEFAULT_RULERS;

/// Time to build the memory rulers' buffers once, before the first run on each CPU.
const BUILD: Duration = Duration::from_millis(800);

/// The sized phase.
#[derive(Debug, Clone)]
pub struct PairsPhase {
    pub config: pairs::Config,
    /// Runs per round: each ruler alone and each unordered pair of rulers.
    pub cells: usize,
    /// Why it cannot run here.
    pub skip: Option<String>,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(PairsPhase::size(ctx)?))
}

impl PairsPhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let list = if ctx.cfg.quick { QUICK_RULERS } else { RULERS };
        let rulers = parse_rulers("--rulers", list)?;
        let r = rulers.len();
        let cells = r + r * (r + 1) / 2;
        // A quick study takes the fewest rounds that give a ratio an interval.
        let repeat = if ctx.cfg.quick {
            pairs::analysis::MIN_ROUNDS
        } else {
            ctx.repeat.max(pairs::analysis::MIN_ROUNDS)
        };
        let runs = (cells * repeat) as u32;
        let slot = ctx
            .budget
            .saturating_sub(BUILD)
            .checked_div(runs.max(1))
            .unwrap_or_default()
            .saturating_sub(RUN_OVERHEAD);
        // Memory rulers are noisy without a warm-up (their buffers are built before it):
        // a quarter of each slot, at least 50 ms.
        let (warmup, duration) = split_run(slot, 0.75, (ms(100), ms(2_000)), (ms(50), ms(1_000)));
        let config = pairs::Config::new(
            workloads(list, &[], &[], false)?,
            rulers,
            PartnerChoice::Auto,
            RunSpec::new(warmup, duration)?,
            repeat,
            MeasureChoice::HeldOut,
            None,
            None,
            None,
        )?;
        let skip = (ctx.topo.allowed().len() < 2).then(|| {
            format!(
                "only CPU {} is usable: pairs needs two CPUs, one for each workload of a pair",
                ctx.topo.allowed().to_list()
            )
        });
        Ok(PairsPhase {
            config,
            cells,
            skip,
        })
    }

    fn runs(&self) -> usize {
        self.cells * self.config.repeat()
    }
}

impl Phase for PairsPhase {
    fn name(&self) -> PhaseName {
        pairs::PHASE
    }
    fn estimate(&self) -> Duration {
        let spec = self.config.spec();
        BUILD + (spec.warmup() + spec.duration() + RUN_OVERHEAD) * self.runs() as u32
    }
    fn units(&self) -> u64 {
        self.runs() as u64
    }
    fn skip_reason(&self) -> Option<String> {
        self.skip.clone()
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let r = pairs::run(ctx.engine, ctx.topo, &self.config, &mut |m| {
            // One line per run ("profile [k/n] round r: …"), and a few others.
            if m.contains("] round ") {
                ctx.progress.advance(1);
            }
            ctx.progress.step(m);
        })?;
        let stopped = r.interrupted;
        rep.pairs = Some(PairsSection { result: r });
        Ok(Outcome::interrupted_if(stopped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{DEFAULT, QUICK, sized};

    #[test]
    fn a_quick_study_runs_three_rulers_in_short_rounds_within_its_share() {
        let s = sized(2, 1, QUICK, pairs::PHASE, PairsPhase::size).unwrap();
        assert_eq!(s.config.rulers().len(), 3);
        assert_eq!(s.cells, 9, "3 alone + 6 pairs");
        assert!(s.skip.is_none());
        let share = QUICK.mul_f64(crate::study::phases::share(pairs::PHASE));
        assert!(
            s.estimate() <= share + Duration::from_secs(2),
            "{:?} for a share of {share:?}",
            s.estimate()
        );
        let full = sized(4, 2, DEFAULT, pairs::PHASE, PairsPhase::size).unwrap();
        assert_eq!(full.config.rulers().len(), 5);
        assert!(full.config.spec().duration() >= s.config.spec().duration());
    }

    #[test]
    fn one_cpu_is_skipped_with_the_reason() {
        let s = sized(1, 1, QUICK, pairs::PHASE, PairsPhase::size).unwrap();
        assert!(
            s.skip_reason().unwrap().contains("two CPUs"),
            "{:?}",
            s.skip
        );
    }
}
