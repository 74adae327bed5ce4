//! The neighbors phase: up to 4 workers on a hot page behind a fair spin lock and behind
//! an adaptive one, with CPU burners stepping across the oversubscription point, in
//! interleaved rounds; each lock's steps are summarised over the rounds.

use crate::burn::{BurnSpec, BurnerKind};
use crate::experiments::neighbors::{
    self, BurnerMode, BurnerPlacement, Diagnosis, HotPage, NeighborsConfig, NeighborsReport, Worker,
};
use crate::locks::LockKind;
use crate::placement::{Plan, Request};
use crate::report::{NeighborsSection, NeighborsSeries, NeighborsStep, PhaseName, Report};
use crate::stats::Summary;
use crate::stats::{Comparison, Thresholds};
use crate::study::phase::{Outcome, Phase, RUN_OVERHEAD, RunCtx, SizeCtx, ms, split_run};
use anyhow::Result;
use std::time::Duration;

/// The sized phase.
#[derive(Debug, Clone)]
pub struct NeighborsPhase {
    pub config: NeighborsConfig,
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
        let locks = vec![LockKind::Ticket, LockKind::Adaptive];
        let runs = (steps.len() * locks.len() * ctx.repeat) as u32;
        let per_step = (ctx.budget / runs.max(1)).saturating_sub(step_overhead(ctx.burner_mode));
        let (warm, measure) = split_run(
            per_step,
            0.8,
            (ms(100), Duration::from_secs(5)),
            (ms(30), Duration::from_secs(1)),
        );
        let spec = crate::engine::RunSpec::new(warm, measure);
        Ok(NeighborsPhase {
            config: NeighborsConfig::new(workers, Request::Os, ctx.cfg.within, spec)?
                .with_burners(
                    steps,
                    BurnSpec::new(BurnerKind::Prime),
                    BurnerPlacement::Os,
                    ctx.burner_mode,
                )?,
            locks,
            repeat: ctx.repeat,
        })
    }

    fn runs(&self) -> u32 {
        (self.config.burner_steps.len() * self.locks.len() * self.repeat) as u32
    }
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
        PhaseName::Neighbors
    }
    fn estimate(&self) -> Duration {
        let spec = &self.config.spec;
        (spec.warmup + spec.duration + step_overhead(self.config.burner_mode)) * self.runs()
    }
    fn units(&self) -> u64 {
        u64::from(self.runs())
    }
    fn run(&self, ctx: &RunCtx<'_>, rep: &mut Report) -> Result<Outcome> {
        let c = &self.config;
        let mut runs = Vec::new();
        let mut stopped = false;
        'rounds: for _ in 0..self.repeat {
            for &lock in &self.locks {
                let workers = c.workers;
                let make = move |_: &Plan| -> Result<Box<dyn Worker>> {
                    Ok(Box::new(HotPage::new(lock, workers)))
                };
                let r = neighbors::run(ctx.engine, ctx.topo, c, &make, &mut |_| {
                    ctx.progress.advance(1)
                })?;
                stopped = r.interrupted;
                runs.push((lock, r));
                if stopped {
                    break 'rounds;
                }
            }
        }
        rep.neighbors = Some(NeighborsSection {
            workers: c.workers,
            locks: self.locks.clone(),
            burner_steps: c.burner_steps.clone(),
            burner_kind: c.burner.kind.to_string(),
            burner_mode: c.burner_mode,
            warmup_ns: c.spec.warmup.as_nanos() as u64,
            duration_ns: c.spec.duration.as_nanos() as u64,
            repeat: self.repeat,
            series: self.locks.iter().map(|&l| summarise(l, &runs)).collect(),
            runs: runs.into_iter().map(|(_, r)| r).collect(),
        });
        Ok(Outcome::interrupted_if(stopped))
    }
}

/// One lock's steps over all its rounds: median ops/s with spread, the diagnosis most
/// rounds gave (the more severe one on a tie), and the step closest to the median as the
/// representative for runnable threads, CPUs and the reason.
pub fn summarise(lock: LockKind, runs: &[(LockKind, NeighborsReport)]) -> NeighborsSeries {
    let mine: Vec<&NeighborsReport> = runs
        .iter()
        .filter(|(l, _)| *l == lock)
        .map(|(_, r)| r)
        .collect();
    let mut burners: Vec<usize> = mine
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.burners))
        .collect();
    burners.sort_unstable();
    burners.dedup();
    let mut steps: Vec<NeighborsStep> = Vec::new();
    for b in burners {
        let all: Vec<&neighbors::Step> = mine
            .iter()
            .flat_map(|r| r.steps.iter().filter(move |s| s.burners == b))
            .collect();
        let rates: Vec<f64> = all.iter().map(|s| s.ops_per_sec).collect();
        let Some(sum) = Summary::of(&rates) else {
            continue;
        };
        let Some(mid) = all.iter().min_by(|x, y| {
            (x.ops_per_sec - sum.median)
                .abs()
                .total_cmp(&(y.ops_per_sec - sum.median).abs())
        }) else {
            continue;
        };
        let mut counts: Vec<(Diagnosis, usize)> = Vec::new();
        for s in &all {
            match counts.iter_mut().find(|(d, _)| *d == s.diagnosis) {
                Some((_, n)) => *n += 1,
                None => counts.push((s.diagnosis, 1)),
            }
        }
        let diagnosis = counts
            .iter()
            .max_by_key(|(d, n)| (*n, d.severity()))
            .map_or(Diagnosis::None, |(d, _)| *d);
        let mut p99: Vec<u64> = all.iter().map(|s| s.latency_p99_ns).collect();
        p99.sort_unstable();
        // Each round's step against that round's own first step: a paired ratio, so
        // drift between rounds cancels.
        let paired: Vec<f64> = all
            .iter()
            .map(|s| s.ratio_to_first)
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        let ratio = Comparison::of_paired_ratios(&paired, Thresholds::SLOWDOWN, 0.95, 2000, 7);
        steps.push(NeighborsStep {
            burners: b,
            runnable_threads: mid.runnable_threads,
            cpus: mid.cpus,
            ops_per_sec: sum,
            ratio_to_first: 0.0,
            latency_p99_ns: p99[p99.len() / 2],
            diagnosis,
            reason: mid.reason.clone(),
            ratio,
        });
    }
    let first = steps.first().map_or(0.0, |s| s.ops_per_sec.median);
    for s in &mut steps {
        s.ratio_to_first = if first > 0.0 {
            s.ops_per_sec.median / first
        } else {
            0.0
        };
    }
    NeighborsSeries { lock, steps }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::tests::{QUICK, sized};

    #[test]
    fn small_machines_step_every_burner_count_past_the_cpus() {
        let s = sized(2, 1, QUICK, PhaseName::Neighbors, NeighborsPhase::size).unwrap();
        assert_eq!(s.config.burner_steps, [0, 1, 2, 3, 4]);
        assert_eq!(s.config.workers, 2);
    }

    #[test]
    fn big_machines_step_around_the_oversubscription_edge() {
        let s = sized(32, 2, QUICK, PhaseName::Neighbors, NeighborsPhase::size).unwrap();
        // 64 CPUs, 4 workers: the edge is at 60 burners.
        assert_eq!(s.config.burner_steps, [0, 1, 30, 60, 61, 62, 66]);
    }

    fn step(burners: usize, ops_per_sec: f64, diagnosis: Diagnosis) -> neighbors::Step {
        neighbors::Step {
            burners,
            ops_per_sec,
            ratio_to_first: 0.0,
            time_per_op_ns: 0.0,
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
            skipped: Vec::new(),
            notes: Vec::new(),
            interrupted: false,
        }
    }

    #[test]
    fn a_series_takes_the_median_and_the_majority_diagnosis() {
        let runs = vec![
            (
                LockKind::Ticket,
                report(vec![
                    step(0, 100.0, Diagnosis::None),
                    step(4, 10.0, Diagnosis::Oversubscribed),
                ]),
            ),
            (
                LockKind::Ticket,
                report(vec![
                    step(0, 120.0, Diagnosis::None),
                    step(4, 12.0, Diagnosis::PreemptionCollapse),
                ]),
            ),
            (
                LockKind::Ticket,
                report(vec![
                    step(0, 110.0, Diagnosis::None),
                    step(4, 11.0, Diagnosis::Oversubscribed),
                ]),
            ),
            (
                LockKind::Adaptive,
                report(vec![step(0, 1.0, Diagnosis::SmtSharing)]),
            ),
        ];
        let s = summarise(LockKind::Ticket, &runs);
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[0].ops_per_sec.median, 110.0);
        assert_eq!(s.steps[0].ops_per_sec.n, 3);
        assert_eq!(s.steps[1].diagnosis, Diagnosis::Oversubscribed, "2 of 3");
        assert!((s.steps[1].ratio_to_first - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_tie_goes_to_the_more_severe_diagnosis() {
        let runs = vec![
            (
                LockKind::Ticket,
                report(vec![step(1, 50.0, Diagnosis::SmtSharing)]),
            ),
            (
                LockKind::Ticket,
                report(vec![step(1, 40.0, Diagnosis::PreemptionCollapse)]),
            ),
        ];
        let s = summarise(LockKind::Ticket, &runs);
        assert_eq!(s.steps[0].diagnosis, Diagnosis::PreemptionCollapse);
    }
}
