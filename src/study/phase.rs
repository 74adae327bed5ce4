//! The one abstraction the study loop knows: a [`Phase`] is an experiment sized for its
//! share of the budget, which runs on an [`Engine`] and writes its section of the
//! [`Report`].
//!
//! A phase is made in two steps, so the study can print its estimate before anything is
//! measured: a sizer (`fn(&SizeCtx) -> Result<Box<dyn Phase>>`, pure) picks run lengths and
//! repeats from the budget and the topology; [`Phase::run`] then measures.

use crate::engine::Engine;
use crate::experiments::neighbors::BurnerMode;
use crate::report::{PhaseName, PhaseStatus, Report};
use crate::study::{Config, Progress};
use crate::topology::Topology;
use anyhow::Result;
use std::time::Duration;

/// What a sizer knows: the machine, the study's settings, and this phase's share of the
/// budget.
pub struct SizeCtx<'a> {
    pub topo: &'a Topology,
    pub cfg: &'a Config,
    /// This phase's share of the study budget.
    pub budget: Duration,
    /// Rounds per comparison: 3 for short budgets, 5 otherwise.
    pub repeat: usize,
    /// How neighbors runs its burners (processes on the real engine).
    pub burner_mode: BurnerMode,
    /// The engine makes its numbers up: a phase that measures outside the engine (the
    /// memory phase's page-size curves) plans nothing.
    pub synthetic: bool,
}

/// What a running phase uses.
pub struct RunCtx<'a> {
    pub engine: &'a dyn Engine,
    pub topo: &'a Topology,
    pub progress: &'a dyn Progress,
}

/// One experiment of the study, already sized.
pub trait Phase {
    fn name(&self) -> PhaseName;
    /// Expected wall time.
    fn estimate(&self) -> Duration;
    /// Progress steps [`Phase::run`] will report (0: show elapsed time instead).
    fn units(&self) -> u64;
    /// Why this phase cannot run on this machine, decided when sizing (e.g. one CPU
    /// leaves c2c no pair); the study records it as skipped.
    fn skip_reason(&self) -> Option<String> {
        None
    }
    /// Measures and writes this phase's section of `report`. Ctrl-C ends the phase at the
    /// next step with the steps so far kept ([`Outcome::interrupted_if`]).
    fn run(&self, ctx: &RunCtx<'_>, report: &mut Report) -> Result<Outcome>;
}

/// Makes a phase for a budget share (pure).
pub type Sizer = fn(&SizeCtx<'_>) -> Result<Box<dyn Phase>>;

/// What a phase body reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: PhaseStatus,
    pub reason: Option<String>,
}

impl Outcome {
    pub fn done() -> Self {
        Outcome {
            status: PhaseStatus::Done,
            reason: None,
        }
    }
    pub fn interrupted_if(stopped: bool) -> Self {
        if stopped {
            Outcome {
                status: PhaseStatus::Interrupted,
                reason: Some(format!(
                    "stopped by {}; the runs before it are kept",
                    crate::interrupt::name(crate::interrupt::signal())
                )),
            }
        } else {
            Self::done()
        }
    }
    pub fn failed(reason: String) -> Self {
        Outcome {
            status: PhaseStatus::Failed,
            reason: Some(reason),
        }
    }
}

/// Assumed fixed cost per engine run (spawning, pinning, burner processes), for estimates.
pub const RUN_OVERHEAD: Duration = Duration::from_millis(15);

/// Splits one run's time slot into (warm-up, measurement): `measure_share` of it measured,
/// the rest warm-up, each clamped to its own (min, max).
pub fn split_run(
    slot: Duration,
    measure_share: f64,
    measure: (Duration, Duration),
    warm: (Duration, Duration),
) -> (Duration, Duration) {
    (
        clamp(slot.mul_f64(1.0 - measure_share), warm.0, warm.1),
        clamp(slot.mul_f64(measure_share), measure.0, measure.1),
    )
}

fn clamp(d: Duration, lo: Duration, hi: Duration) -> Duration {
    d.max(lo).min(hi)
}

pub fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_slot_splits_by_share_within_limits() {
        let s = (ms(100), ms(10_000));
        let w = (ms(30), ms(1_000));
        assert_eq!(split_run(ms(1_000), 0.75, s, w), (ms(250), ms(750)));
        assert_eq!(
            split_run(ms(10), 0.75, s, w),
            (ms(30), ms(100)),
            "minimums win"
        );
        assert_eq!(
            split_run(ms(100_000), 0.75, s, w),
            (ms(1_000), ms(10_000)),
            "maximums win"
        );
    }
}
