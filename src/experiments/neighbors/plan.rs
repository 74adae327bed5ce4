//! Where each step's threads go: the workers by their placement, then the burners by
//! theirs, or the reason this machine cannot place them.

use super::config::{BurnerMode, BurnerPlacement, NeighborsConfig};
use crate::cpuset::CpuSet;
use crate::placement::{self, Plan, Request, ThreadPlacement};
use crate::topology::Topology;
use anyhow::Result;

/// True when a step's plan failed because this machine cannot place it (no SMT siblings,
/// too few CPUs): the step is skipped with the reason. Bad combinations of options
/// (sibling burners beside `pairs` workers) are errors instead.
pub fn step_not_possible_here(e: &anyhow::Error) -> bool {
    use crate::placement::PlanError;
    matches!(
        e.downcast_ref::<PlanError>(),
        Some(PlanError::NoSmt { .. } | PlanError::NotEnough { .. })
    ) || e.downcast_ref::<crate::error::NotPossible>().is_some()
}

/// The threads competing for the workers' CPUs and the CPUs they may use: the workers,
/// plus every burner whose allowed CPUs overlap the workers' CPUs or those of a burner
/// already counted (a burner pushed off a shared CPU lands on the next). Burners confined
/// to other CPUs cannot take a worker's CPU, so they are left out: a worker alone on its
/// CPU is never oversubscribed by burners elsewhere. Unpinned threads may use every CPU,
/// so with any of them this is every thread on every allowed CPU.
pub fn contention(workers: &[CpuSet], burners: &[CpuSet]) -> (usize, CpuSet) {
    let mut cpus = workers.iter().fold(CpuSet::new(), |a, w| a.union(w));
    let mut counted = vec![false; burners.len()];
    let mut runnable = workers.len();
    loop {
        let mut grew = false;
        for (b, seen) in burners.iter().zip(counted.iter_mut()) {
            if !*seen && b.intersects(&cpus) {
                *seen = true;
                runnable += 1;
                cpus = cpus.union(b);
                grew = true;
            }
        }
        if !grew {
            return (runnable, cpus);
        }
    }
}

/// The placements of one step: workers then burners. Thread burners are in the plan;
/// process burners only in the CPU sets returned beside it.
pub fn step_plan(
    topo: &Topology,
    cfg: &NeighborsConfig,
    burners: usize,
) -> Result<(Plan, Vec<CpuSet>)> {
    let workers = placement::plan_within(topo, &cfg.worker_placement, cfg.workers, cfg.within)?;
    let worker_cpus = workers.cpus();
    let burner_cpus = if burners == 0 {
        Vec::new()
    } else {
        burner_cpus(topo, cfg.burner_placement, &worker_cpus, burners)?
    };
    let worker_sets: Vec<CpuSet> = workers.threads.iter().map(|t| t.cpus.clone()).collect();
    let (runnable, cpus) = contention(&worker_sets, &burner_cpus);
    let mut threads = workers.threads.clone();
    if cfg.burner_mode == BurnerMode::Thread {
        for (i, c) in burner_cpus.iter().enumerate() {
            threads.push(ThreadPlacement {
                thread: cfg.workers + i,
                cpus: c.clone(),
            });
        }
    }
    Ok((
        Plan {
            request: format!("workers {} + {burners} burners", workers.request),
            threads,
            oversubscribed: runnable > cpus.len(),
            notes: workers.notes,
            scope: workers.scope,
        },
        burner_cpus,
    ))
}

/// The CPU set of each of `burners` burners placed by `how` around the workers' CPUs.
fn burner_cpus(
    topo: &Topology,
    how: BurnerPlacement,
    worker_cpus: &CpuSet,
    burners: usize,
) -> Result<Vec<CpuSet>> {
    let allowed = topo.allowed();
    Ok(match how {
        BurnerPlacement::Os => vec![allowed; burners],
        BurnerPlacement::SameCpus => {
            let v = worker_cpus.to_vec();
            (0..burners)
                .map(|i| CpuSet::from_cpus([v[i % v.len()]]))
                .collect()
        }
        BurnerPlacement::Siblings => {
            // The config refused unpinned workers here, so each worker CPU is its own.
            let p = placement::plan(topo, &Request::SiblingsOf(worker_cpus.clone()), burners)?;
            p.threads.into_iter().map(|t| t.cpus).collect()
        }
        BurnerPlacement::OtherCores => {
            let used: CpuSet = worker_cpus
                .iter()
                .fold(CpuSet::new(), |a, c| a.union(&topo.core_of(c)));
            let rest = allowed.difference(&used).to_vec();
            if rest.is_empty() {
                return Err(crate::error::NotPossible(format!(
                    "--burner-placement other-cores: the workers' cores ({used}) cover every usable CPU"
                ))
                .into());
            }
            (0..burners)
                .map(|i| CpuSet::from_cpus([rest[i % rest.len()]]))
                .collect()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::burn::{BurnSpec, BurnerKind};
    use crate::engine::RunSpec;
    use crate::placement::Scope;
    use crate::topology::fixture::topology;

    fn cfg(placement: Request, burners: BurnerPlacement, mode: BurnerMode) -> NeighborsConfig {
        let spec =
            RunSpec::new(std::time::Duration::ZERO, std::time::Duration::from_secs(1)).unwrap();
        NeighborsConfig::new(2, placement, Scope::Package, spec)
            .unwrap()
            .with_burners(vec![0, 2], BurnSpec::new(BurnerKind::Prime), burners, mode)
            .unwrap()
    }

    #[test]
    fn thread_burners_join_the_plan_and_process_burners_do_not() {
        // 4 cores × 2 siblings: CPU i and i + 4 share a core.
        let topo = topology(4, 2, false);
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::Siblings,
            BurnerMode::Thread,
        );
        let (plan, burners) = step_plan(&topo, &c, 2).unwrap();
        assert_eq!(plan.threads.len(), 4);
        assert_eq!(burners, [CpuSet::from_cpus([4]), CpuSet::from_cpus([5])]);
        assert_eq!(plan.threads[2].cpus, burners[0]);
        assert!(!plan.oversubscribed);
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::Siblings,
            BurnerMode::Process,
        );
        let (plan, burners) = step_plan(&topo, &c, 2).unwrap();
        assert_eq!((plan.threads.len(), burners.len()), (2, 2));
    }

    #[test]
    fn burners_go_where_their_placement_says() {
        let topo = topology(4, 1, false);
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::SameCpus,
            BurnerMode::Thread,
        );
        let (_, b) = step_plan(&topo, &c, 3).unwrap();
        assert_eq!(b, [0, 1, 0].map(|c| CpuSet::from_cpus([c])));
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::OtherCores,
            BurnerMode::Thread,
        );
        let (plan, b) = step_plan(&topo, &c, 3).unwrap();
        assert_eq!(b, [2, 3, 2].map(|c| CpuSet::from_cpus([c])));
        // 3 burners on CPUs 2 and 3 time-share those, but cannot reach the workers' CPUs
        // 0 and 1: the workers are not oversubscribed.
        assert!(!plan.oversubscribed, "burners confined to other cores");
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::SameCpus,
            BurnerMode::Thread,
        );
        let (plan, _) = step_plan(&topo, &c, 1).unwrap();
        assert!(
            plan.oversubscribed,
            "a burner on a worker's CPU: 3 on 2 CPUs"
        );
        let c = cfg(Request::Os, BurnerPlacement::Os, BurnerMode::Thread);
        let (_, b) = step_plan(&topo, &c, 1).unwrap();
        assert_eq!(b, [topo.allowed()]);
    }

    #[test]
    fn contention_counts_only_threads_that_can_reach_the_workers_cpus() {
        let one = |c: u32| CpuSet::from_cpus([c]);
        // Workers alone on 0 and 1; burners pinned to 2, 2 and 3: 2 on 2 CPUs.
        let (n, cpus) = contention(&[one(0), one(1)], &[one(2), one(2), one(3)]);
        assert_eq!((n, cpus.to_vec()), (2, vec![0, 1]));
        // A burner on worker 1's CPU: 3 on 2.
        let (n, cpus) = contention(&[one(0), one(1)], &[one(1), one(3)]);
        assert_eq!((n, cpus.to_vec()), (3, vec![0, 1]));
        // Reached through another burner: {1,2} overlaps the workers, {2} overlaps it.
        let (n, cpus) = contention(&[one(0), one(1)], &[one(2), CpuSet::from_cpus([1, 2])]);
        assert_eq!((n, cpus.to_vec()), (4, vec![0, 1, 2]));
        // Unpinned workers and burners: everything on every CPU.
        let all = CpuSet::from_cpus([0, 1, 2, 3]);
        let (n, cpus) = contention(&[all.clone(), all.clone()], &vec![all.clone(); 3]);
        assert_eq!((n, cpus.len()), (5, 4));
        // Pinned workers, unpinned burners: the burners may use the workers' CPUs.
        let (n, cpus) = contention(&[one(0)], std::slice::from_ref(&all));
        assert_eq!((n, cpus.len()), (2, 4));
    }

    #[test]
    fn what_this_machine_cannot_place_is_skipped_not_refused() {
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::OtherCores,
            BurnerMode::Thread,
        );
        let e = step_plan(&topology(2, 1, false), &c, 1).unwrap_err();
        assert!(step_not_possible_here(&e), "{e:#}");
        let c = cfg(
            Request::OnePerCore,
            BurnerPlacement::Siblings,
            BurnerMode::Thread,
        );
        let e = step_plan(&topology(4, 1, false), &c, 1).unwrap_err();
        assert!(step_not_possible_here(&e), "no SMT: {e:#}");
        let c = cfg(
            Request::Pairs,
            BurnerPlacement::Siblings,
            BurnerMode::Thread,
        );
        let e = step_plan(&topology(4, 2, false), &c, 1).unwrap_err();
        assert!(
            !step_not_possible_here(&e),
            "pairs leave no free sibling: {e:#}"
        );
    }
}
