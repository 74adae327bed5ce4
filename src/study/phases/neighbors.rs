//! The neighbors phase: up to 4 workers on a hot page behind a fair spin lock and behind
//! an adaptive one, with CPU burners stepping across the oversubscription point, in
//! interleaved rounds; each lock's steps are summarised over the rounds.
//!
//! The unpinned series leaves placement to the scheduler, as on a machine nobody tuned: it
//! shows what oversubscription costs, but whether a burner met a worker on one core was the
//! scheduler's choice. So on SMT machines a second, controlled series runs beside it:
//! workers one per core, then 1..N burners pinned to their siblings. Only that series can
//! name SMT sharing.

use crate::burn::{BurnSpec, BurnerKind};
use crate::experiments::neighbors::{
    self, BurnerMode, BurnerPlacement, HotPage, NeighborsConfig, NeighborsReport, Worker,
};
use crate::locks::LockKind;
use crate::placement::{Plan, Request};
use crate::report::{NeighborsSection, NeighborsSeries, PhaseName, Report, SeriesPlacement};
use crate::study::phase::{Outcome, Phase, RUN_OVERHEAD, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// The sized phase.
#[derive(Debug, Clone)]
pub struct NeighborsPhase {
    /// The unpinned series.
    pub config: NeighborsConfig,
    /// The controlled series: workers one per core, burners on their siblings; None
    /// without SMT siblings.
    pub siblings: Option<NeighborsConfig>,
    /// Why `siblings` is None.
    pub sibling_skipped: Option<String>,
    pub locks: Vec<LockKind>,
    pub repeat: usize,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(NeighborsPhase::size(ctx)?))
}

impl NeighborsPhase {
    pub fn size(ctx: &SizeCtx<'_>) -> Result<Self> {
        let ncpu = ctx.topo.allowed().len().max(1);
        let workers = ncpu.min(4);
        let steps: Vec<usize> = if ncpu <= 6 {
            (0..=ncpu + 2).collect()
        } else {
            let edge = ncpu - workers;
            let mut v = vec![0, 1, edge / 2, edge, edge + 1, edge + 2, ncpu + 2];
            v.sort_unstable();
            v.dedup();
            v
        };
        let (sibling_workers, sibling_skipped) = sibling_workers(ctx);
        let sibling_steps = sibling_workers.map_or(0, |w| w + 1);
        let locks = vec![LockKind::Ticket, LockKind::Adaptive];
        let runs = ((steps.len() + sibling_steps) * locks.len() * ctx.repeat) as u32;
        let per_step = (ctx.budget / runs.max(1)).saturating_sub(step_overhead(ctx.burner_mode));
        let (warm, measure) = split_run(
            per_step,
            0.8,
            (ms(100), Duration::from_secs(5)),
            (ms(30), Duration::from_secs(1)),
        );
        let spec = crate::engine::RunSpec::new(warm, measure)?.with_counters(ctx.cfg.counters);
        let prime = BurnSpec::new(BurnerKind::Prime);
        let siblings = match sibling_workers {
            Some(w) => Some(
                NeighborsConfig::new(w, Request::OnePerCore, ctx.cfg.within, spec.clone())?
                    .with_burners(
                        (0..=w).collect(),
                        prime.clone(),
                        BurnerPlacement::Siblings,
                        ctx.burner_mode,
                    )?,
            ),
            None => None,
        };
        Ok(NeighborsPhase {
            config: NeighborsConfig::new(workers, Request::Os, ctx.cfg.within, spec)?
                .with_burners(steps, prime, BurnerPlacement::Os, ctx.burner_mode)?,
            siblings,
            sibling_skipped,
            locks,
            repeat: ctx.repeat,
        })
    }

    fn steps_per_round(&self) -> usize {
        self.config.burner_steps.len() + self.siblings.as_ref().map_or(0, |c| c.burner_steps.len())
    }

    fn runs(&self) -> u32 {
        (self.steps_per_round() * self.locks.len() * self.repeat) as u32
    }
}

/// Workers for the controlled sibling series — one per core of the scope's unit that has a
/// free sibling, at most 4 — or why there is none.
fn sibling_workers(ctx: &SizeCtx<'_>) -> (Option<usize>, Option<String>) {
    if ctx.topo.threads_per_core() <= 1 {
        return (
            None,
            Some(
                "no SMT siblings on this machine, so no burner can be pinned to a worker's \
                 sibling"
                    .into(),
            ),
        );
    }
    let (unit, cores) = crate::placement::scoped_cores(ctx.topo, ctx.cfg.within);
    let with_siblings = cores.iter().filter(|c| c.len() >= 2).count();
    if with_siblings == 0 {
        return (
            None,
            Some(format!(
                "no core {unit} has two usable SMT siblings, so no burner can be pinned \
                 beside a worker"
            )),
        );
    }
    (Some(with_siblings.min(4)), None)
}

/// Burner processes add their fork, exec and exit to every step.
fn step_overhead(mode: BurnerMode) -> Duration {
    match mode {
        BurnerMode::Process => RUN_OVERHEAD * 3,
        BurnerMode::Thread => RUN_OVERHEAD,
    }
}

impl Phase for NeighborsPhase {
    fn name(&self) -> PhaseName {
        crate::experiments::neighbors::PHASE
    }
    fn estimate(&self) -> Duration {
        let spec = &self.config.spec;
        (spec.warmup() + spec.duration() + step_overhead(self.config.burner_mode)) * self.runs()
    }
    fn units(&self) -> u64 {
        u64::from(self.runs())
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let c = &self.config;
        let mut runs: Vec<(LockKind, SeriesPlacement, NeighborsReport)> = Vec::new();
        let mut stopped = false;
        let series: Vec<(SeriesPlacement, &NeighborsConfig)> =
            std::iter::once((SeriesPlacement::Unpinned, c))
                .chain(
                    self.siblings
                        .iter()
                        .map(|s| (SeriesPlacement::SiblingBurners, s)),
                )
                .collect();
        // Each round runs every lock under every placement, so drift hits them alike.
        'rounds: for _ in 0..self.repeat {
            for &(placement, cfg) in &series {
                for &lock in &self.locks {
                    let workers = cfg.workers;
                    let make = move |_: &Plan| -> Result<Box<dyn Worker>> {
                        Ok(Box::new(HotPage::new(lock, workers)))
                    };
                    let r = neighbors::run(ctx.engine, ctx.topo, cfg, &make, &mut |_| {
                        ctx.progress.advance(1)
                    })?;
                    stopped = r.interrupted;
                    runs.push((lock, placement, r));
                    if stopped {
                        break 'rounds;
                    }
                }
            }
        }
        let mut all_series = Vec::new();
        for &(placement, cfg) in &series {
            for &lock in &self.locks {
                let mine: Vec<&NeighborsReport> = runs
                    .iter()
                    .filter(|(l, p, _)| *l == lock && *p == placement)
                    .map(|(_, _, r)| r)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                all_series.push(summarise(lock, placement, cfg.workers, &mine));
            }
        }
        rep.neighbors = Some(NeighborsSection {
            workers: c.workers,
            locks: self.locks.clone(),
            burner_steps: c.burner_steps.clone(),
            burner_kind: c.burner.kind().to_string(),
            burner_mode: c.burner_mode,
            warmup_ns: c.spec.warmup().as_nanos() as u64,
            duration_ns: c.spec.duration().as_nanos() as u64,
            repeat: self.repeat,
            series: all_series,
            sibling_skipped: self.sibling_skipped.clone(),
            runs: runs.into_iter().map(|(_, _, r)| r).collect(),
        });
        Ok(Outcome::interrupted_if(stopped))
    }
}

/// One lock's sweeps under one placement, summarised per burner count over the rounds
/// ([`neighbors::summarise`]: medians, majority diagnosis, paired ratios).
pub fn summarise(
    lock: LockKind,
    placement: SeriesPlacement,
    workers: usize,
    runs: &[&NeighborsReport],
) -> NeighborsSeries {
    NeighborsSeries {
        lock,
        placement,
        workers: Some(workers),
        steps: neighbors::summarise(runs.iter().flat_map(|r| &r.steps)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::neighbors::Diagnosis;
    use crate::study::tests::{QUICK, sized};

    #[test]
    fn small_machines_step_every_burner_count_past_the_cpus() {
        let s = sized(
            2,
            1,
            QUICK,
            crate::experiments::neighbors::PHASE,
            NeighborsPhase::size,
        )
        .unwrap();
        assert_eq!(s.config.burner_steps, [0, 1, 2, 3, 4]);
        assert_eq!(s.config.workers, 2);
    }

    #[test]
    fn big_machines_step_around_the_oversubscription_edge() {
        let s = sized(
            32,
            2,
            QUICK,
            crate::experiments::neighbors::PHASE,
            NeighborsPhase::size,
        )
        .unwrap();
        // 64 CPUs, 4 workers: the edge is at 60 burners.
        assert_eq!(s.config.burner_steps, [0, 1, 30, 60, 61, 62, 66]);
    }

    #[test]
    fn smt_machines_add_a_controlled_sibling_series() {
        let s = sized(
            2,
            2,
            QUICK,
            crate::experiments::neighbors::PHASE,
            NeighborsPhase::size,
        )
        .unwrap();
        let sib = s.siblings.as_ref().expect("SMT: a sibling series");
        assert_eq!(sib.workers, 2, "one per core");
        assert_eq!(sib.worker_placement, Request::OnePerCore);
        assert_eq!(sib.burner_placement, BurnerPlacement::Siblings);
        assert_eq!(sib.burner_steps, [0, 1, 2]);
        assert_eq!(s.sibling_skipped, None);
        // Both series share the budget: (7 unpinned + 3 sibling steps) × 2 locks × 3.
        assert_eq!(s.runs(), 60);
        let big = sized(
            32,
            2,
            QUICK,
            crate::experiments::neighbors::PHASE,
            NeighborsPhase::size,
        )
        .unwrap();
        assert_eq!(big.siblings.unwrap().burner_steps, [0, 1, 2, 3, 4]);
        // Without SMT: skipped, with the reason.
        let flat = sized(
            2,
            1,
            QUICK,
            crate::experiments::neighbors::PHASE,
            NeighborsPhase::size,
        )
        .unwrap();
        assert!(flat.siblings.is_none());
        assert!(
            flat.sibling_skipped
                .as_deref()
                .unwrap()
                .starts_with("no SMT siblings"),
            "the reason is kept"
        );
        assert_eq!(flat.runs(), 30, "5 steps × 2 locks × 3 rounds, as before");
    }

    fn step(burners: usize, ops_per_sec: f64, diagnosis: Diagnosis) -> neighbors::Step {
        neighbors::Step {
            burners,
            round: 0,
            ops_per_sec,
            ratio_to_first: 0.0,
            time_per_op_ns: 0.0,
            measured_ns: 0,
            latency_p50_ns: 0,
            latency_p99_ns: burners as u64,
            latency_max_ns: 0,
            runnable_threads: 2 + burners,
            cpus: 2,
            worker_involuntary_switches_per_sec: 0.0,
            worker_voluntary_switches_per_sec: 0.0,
            worker_run_delay_share: None,
            holder_preemptions: None,
            long_waits: None,
            burner_ops_per_sec: 0.0,
            diagnosis,
            reason: String::new(),
            pinning_ok: true,
            interrupted: false,
            workers: 2,
            steal_share: None,
            worker_counters: None,
        }
    }

    fn report(steps: Vec<neighbors::Step>) -> NeighborsReport {
        NeighborsReport {
            schema_version: 1,
            workload: "hot-page".into(),
            workers: 2,
            worker_placement: "os".into(),
            burner_kind: BurnerKind::Prime,
            burner_placement: BurnerPlacement::Os,
            burner_mode: BurnerMode::Thread,
            burner_policy: crate::burn::Policy::Normal,
            time_slice_ns: 3e6,
            smt: false,
            hypervisor: false,
            reference: None,
            steps,
            repeat: 1,
            summary: Vec::new(),
            skipped: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
            counters: None,
        }
    }

    #[test]
    fn a_series_takes_the_median_and_the_majority_diagnosis() {
        let runs = [
            report(vec![
                step(0, 100.0, Diagnosis::None),
                step(4, 10.0, Diagnosis::Oversubscribed),
            ]),
            report(vec![
                step(0, 120.0, Diagnosis::None),
                step(4, 12.0, Diagnosis::PreemptionCollapse),
            ]),
            report(vec![
                step(0, 110.0, Diagnosis::None),
                step(4, 11.0, Diagnosis::Oversubscribed),
            ]),
        ];
        let runs: Vec<&NeighborsReport> = runs.iter().collect();
        let s = summarise(LockKind::Ticket, SeriesPlacement::Unpinned, 2, &runs);
        assert_eq!(
            (s.lock, s.placement, s.workers),
            (LockKind::Ticket, SeriesPlacement::Unpinned, Some(2))
        );
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[0].ops_per_sec.median, 110.0);
        assert_eq!(s.steps[0].ops_per_sec.n, 3);
        assert_eq!(s.steps[1].diagnosis, Diagnosis::Oversubscribed, "2 of 3");
        assert!((s.steps[1].ratio_to_first - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_tie_goes_to_the_more_severe_diagnosis() {
        let runs = [
            report(vec![step(1, 50.0, Diagnosis::SmtSharing)]),
            report(vec![step(1, 40.0, Diagnosis::PreemptionCollapse)]),
        ];
        let runs: Vec<&NeighborsReport> = runs.iter().collect();
        let s = summarise(LockKind::Ticket, SeriesPlacement::SiblingBurners, 2, &runs);
        assert_eq!(s.steps[0].diagnosis, Diagnosis::PreemptionCollapse);
    }
}
