//! Fitting a c2c run into a time budget: how long pairs take, which CPUs to keep (siblings
//! first, then one CPU per core in spread order) and how many samples per pair.

use crate::cpuset::CpuSet;
use crate::engine::PingPongSpec;
use crate::topology::Topology;

/// One-way latency assumed when estimating how long a c2c run takes: generous, since VMs
/// and multi-socket machines run slower than 100 ns and an estimate should not undershoot.
pub const ASSUMED_LATENCY_NS: f64 = 200.0;

/// Fewest samples a budget may cut a pair down to: enough for a median and its MAD.
pub const MIN_BUDGET_SAMPLES: usize = 31;

/// Rough wall time of measuring `pairs` pairs at `spec` (each sample is `round_trips`
/// round trips of two one-way transfers, plus the discarded first sample).
pub fn estimate(pairs: usize, spec: &PingPongSpec) -> std::time::Duration {
    let per_pair = (spec.samples + 1) as f64 * spec.round_trips as f64 * 2.0 * ASSUMED_LATENCY_NS;
    std::time::Duration::from_secs_f64(pairs as f64 * per_pair / 1e9)
}

/// `cpus` in the order a budget keeps them: two SMT siblings of the first core (in spread
/// order) that has two of them, then one CPU per further core in spread order (other L3s
/// and packages come early), then the remaining siblings. A prefix of two CPUs is a
/// sibling pair; each CPU after that adds a core.
pub fn budget_order(topo: &Topology, cpus: &CpuSet) -> Vec<u32> {
    let mut cores: Vec<Vec<u32>> = crate::placement::spread_cores(topo)
        .iter()
        .map(|c| c.iter().filter(|&x| cpus.contains(x)).collect::<Vec<u32>>())
        .filter(|c| !c.is_empty())
        .collect();
    // Lead with the first core that has two of `cpus`, so a sibling pair is measured.
    if let Some(i) = cores.iter().position(|c| c.len() > 1) {
        let lead = cores.remove(i);
        cores.insert(0, lead);
    }
    let mut order: Vec<u32> = Vec::new();
    if let Some(first) = cores.first() {
        order.extend(first.iter().take(2));
    }
    for c in cores.iter().skip(1) {
        order.push(c[0]);
    }
    if let Some(first) = cores.first() {
        order.extend(first.iter().skip(2));
    }
    for c in cores.iter().skip(1) {
        order.extend(&c[1..]);
    }
    // CPUs the topology does not place in a core (none on a sane machine) go last.
    order.extend(
        cpus.iter()
            .filter(|c| !order.contains(c))
            .collect::<Vec<u32>>(),
    );
    order
}

/// The longest prefix of `order` (at least its first two CPUs) with at most `max_pairs`
/// pairs.
pub fn fit_prefix(order: &[u32], max_pairs: usize) -> CpuSet {
    let mut k = order.len();
    while k > 2 && k * (k - 1) / 2 > max_pairs {
        k -= 1;
    }
    order.iter().take(k).copied().collect()
}

/// What `--budget` settles on: samples per pair and the CPUs (a prefix of `order`).
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetFit {
    pub spec: PingPongSpec,
    pub cpus: CpuSet,
    /// Even [`MIN_BUDGET_SAMPLES`] over two CPUs is estimated above the budget.
    pub over: bool,
}

/// Fits a run over `order` into `budget`: fewer samples per pair first (not below
/// [`MIN_BUDGET_SAMPLES`], nor above `spec`'s), then fewer CPUs, keeping a prefix of
/// `order` (see [`budget_order`]).
pub fn fit_budget(order: &[u32], spec: &PingPongSpec, budget: std::time::Duration) -> BudgetFit {
    let pairs = |k: usize| k * k.saturating_sub(1) / 2;
    let one_sample = |k: usize| {
        estimate(
            pairs(k),
            &PingPongSpec {
                samples: 0,
                round_trips: spec.round_trips,
            },
        )
        .as_secs_f64()
    };
    // estimate() counts samples + 1 (the discarded first), so fit that many.
    let fit = (budget.as_secs_f64() / one_sample(order.len()).max(f64::MIN_POSITIVE)) as usize;
    let samples = fit
        .saturating_sub(1)
        .clamp(MIN_BUDGET_SAMPLES.min(spec.samples), spec.samples);
    let spec = PingPongSpec {
        samples,
        round_trips: spec.round_trips,
    };
    let per_pair = estimate(1, &spec).as_secs_f64();
    let max_pairs = (budget.as_secs_f64() / per_pair) as usize;
    let cpus = if pairs(order.len()) > max_pairs {
        fit_prefix(order, max_pairs)
    } else {
        order.iter().copied().collect()
    };
    let over = estimate(pairs(cpus.len()), &spec) > budget;
    BudgetFit { spec, cpus, over }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_prefix_keeps_the_most_pairs_that_fit() {
        let order = [0, 8, 1, 2, 3, 9, 10, 11];
        assert_eq!(fit_prefix(&order, 100).len(), 8, "28 pairs fit");
        assert_eq!(
            fit_prefix(&order, 6).to_vec(),
            [0, 1, 2, 8],
            "4 CPUs = 6 pairs"
        );
        assert_eq!(
            fit_prefix(&order, 5).to_vec(),
            [0, 1, 8],
            "3 CPUs = 3 pairs"
        );
        assert_eq!(fit_prefix(&order, 0).len(), 2, "never fewer than one pair");
    }

    #[test]
    fn a_budget_cuts_samples_before_cpus() {
        let order: Vec<u32> = (0..64).collect();
        let spec = PingPongSpec {
            samples: 300,
            round_trips: 1000,
        };
        let fits = |f: &BudgetFit, b: std::time::Duration| {
            estimate(f.cpus.len() * (f.cpus.len() - 1) / 2, &f.spec) <= b
        };
        // 2016 pairs; 2 min leaves about 147 samples, and all 64 CPUs.
        let b = std::time::Duration::from_secs(120);
        let f = fit_budget(&order, &spec, b);
        assert_eq!(f.cpus.len(), 64, "{f:?}");
        assert!((140..=150).contains(&f.spec.samples), "{f:?}");
        assert!(fits(&f, b) && !f.over);
        // Samples already at the floor: CPUs go.
        let b = std::time::Duration::from_secs(10);
        let f = fit_budget(&order, &spec, b);
        assert_eq!(f.spec.samples, MIN_BUDGET_SAMPLES);
        assert!(f.cpus.len() < 64 && f.cpus.len() > 2, "{f:?}");
        assert!(fits(&f, b) && !f.over);
        // A budget nothing fits: two CPUs at the floor, and said to be over.
        let f = fit_budget(&order, &spec, std::time::Duration::from_millis(1));
        assert_eq!((f.cpus.len(), f.spec.samples, f.over), (2, 31, true));
        // Fewer samples asked than the floor: kept as asked.
        let few = PingPongSpec {
            samples: 10,
            round_trips: 1000,
        };
        assert_eq!(fit_budget(&order[..4], &few, b).spec.samples, 10);
        // Within budget already: nothing changes.
        let f = fit_budget(&order[..2], &spec, std::time::Duration::from_secs(3600));
        assert_eq!((f.cpus.len(), f.spec.samples), (2, 300));
    }

    #[test]
    fn estimates_scale_with_pairs_samples_and_round_trips() {
        let spec = PingPongSpec {
            samples: 99,
            round_trips: 1000,
        };
        // 100 samples × 1000 round trips × 2 × 200 ns = 40 ms per pair.
        assert_eq!(estimate(1, &spec).as_millis(), 40);
        assert_eq!(estimate(10, &spec).as_millis(), 400);
    }
}
