//! The topology phase: the machine was read before the study started (it is the
//! report's `topology`); the phase records that step in the phase list.

use crate::report::{PhaseName, Report};

/// The first phase: the machine's topology, read before anything runs. results.json names
/// it `"topology"`; its facts are the report's machine section.
pub const PHASE: PhaseName = PhaseName::new("topology");
use crate::study::phase::{Outcome, Phase, RunCtx, SizeCtx};
use anyhow::Result;
use std::time::Duration;

struct Topology;

pub fn size(_: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(Topology))
}

impl Phase for Topology {
    fn name(&self) -> PhaseName {
        PHASE
    }
    fn estimate(&self) -> Duration {
        Duration::ZERO
    }
    fn units(&self) -> u64 {
        1
    }
    fn run(&self, ctx: &RunCtx<'_>, _: &mut Report) -> Result<Outcome> {
        ctx.progress.advance(1);
        Ok(Outcome::done())
    }
}
