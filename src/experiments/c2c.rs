//! c2c: the one-way latency of handing a cache line from one CPU to another, for every
//! pair of CPUs, and what it implies for locks.
//!
//! The engine does the timing ([`crate::engine::ping_pong`]); this module turns the samples
//! into a matrix and summaries (pure, tested on made-up samples) and owns the ceiling
//! arithmetic the lock experiments use: a contended lock handoff needs at least k
//! serialized cache-line transfers (the lock line, then data lines; global spinning adds
//! invalidations per waiter), so handoffs/s ≤ 1 / (k·L) for one-way latency L
//! (REFERENCE §2.6: 134 ns → 7.5 M/s at k = 1, 3.7 M/s at k = 2).

use crate::cpuset::CpuSet;
use crate::engine::{Engine, PingPongSpec};
use crate::stats::{self, Summary};
use crate::topology::{Proximity, Topology};
use anyhow::Result;
use serde::{Deserialize, Serialize};

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

/// Upper bound on contended lock handoffs per second when each handoff needs `k`
/// serialized transfers of a line with one-way latency `latency_ns`: `1e9 / (k·L)`.
/// Infinite for a zero latency or k; NaN for a NaN latency.
pub fn ceiling(latency_ns: f64, k: u32) -> f64 {
    1e9 / (k as f64 * latency_ns)
}

/// A measured handoff rate as a share of the k = 1 [`ceiling`] (0.25 = a quarter of what
/// the line transfers alone would allow).
pub fn share_of_ceiling(handoffs_per_sec: f64, latency_ns: f64) -> f64 {
    handoffs_per_sec / ceiling(latency_ns, 1)
}

/// The ceilings implied by one latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// One-way latency the ceilings derive from, ns.
    pub latency_ns: f64,
    /// 1 / L: one line transfer per handoff.
    pub k1_handoffs_per_sec: f64,
    /// 1 / (2·L): the lock line plus one data line.
    pub k2_handoffs_per_sec: f64,
}

impl Ceiling {
    pub fn of(latency_ns: f64) -> Self {
        Self {
            latency_ns,
            k1_handoffs_per_sec: ceiling(latency_ns, 1),
            k2_handoffs_per_sec: ceiling(latency_ns, 2),
        }
    }
}

/// One measured pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// The CPU that timed (ping).
    pub a: u32,
    /// Its partner (pong).
    pub b: u32,
    /// How the two CPUs relate (SMT sibling, same L3, …).
    pub proximity: Proximity,
    /// One-way latency over samples (median, MAD, range, outlier counts), ns.
    pub latency_ns: Summary,
    /// Mean one-way latency, ns (what core-to-core-latency prints).
    pub mean_latency_ns: f64,
}

/// Latency summary for one proximity class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub proximity: Proximity,
    /// Pairs in this class.
    pub pairs: usize,
    /// Median over the pairs' medians, ns.
    pub median_latency_ns: f64,
    /// Smallest and largest pair median, ns.
    pub min_latency_ns: f64,
    pub max_latency_ns: f64,
    /// Ceilings from the class median.
    pub ceiling: Ceiling,
}

/// The whole c2c measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2c {
    /// CPUs measured.
    pub cpus: CpuSet,
    /// Kept samples per pair (one more was taken and discarded).
    pub samples: usize,
    /// Round trips timed per sample.
    pub round_trips: usize,
    /// Every measured pair, a < b.
    pub pairs: Vec<Pair>,
    /// `matrix_ns[i][j]`: median one-way latency between the i-th and j-th CPU of `cpus`,
    /// ns; null on the diagonal and for pairs not measured (interrupted).
    pub matrix_ns: Vec<Vec<Option<f64>>>,
    /// Per proximity class, closest first.
    pub classes: Vec<ClassSummary>,
    /// Ctrl-C stopped the measurement; `pairs` holds what finished.
    pub interrupted: bool,
    /// Usable CPUs a `--budget` left out (empty when none were).
    #[serde(default)]
    pub left_out: CpuSet,
}

impl C2c {
    /// Builds the result from raw per-pair one-way samples (ns). Pure.
    pub fn from_samples(
        topo: &Topology,
        cpus: &CpuSet,
        spec: &PingPongSpec,
        samples: &[((u32, u32), Vec<f64>)],
        interrupted: bool,
    ) -> Self {
        let list = cpus.to_vec();
        let idx = |c: u32| list.iter().position(|&x| x == c);
        let mut matrix = vec![vec![None; list.len()]; list.len()];
        let mut pairs = Vec::new();
        for ((a, b), s) in samples {
            let Some(latency) = Summary::of(s) else {
                continue;
            };
            if let (Some(i), Some(j)) = (idx(*a), idx(*b)) {
                matrix[i][j] = Some(latency.median);
                matrix[j][i] = Some(latency.median);
            }
            pairs.push(Pair {
                a: *a,
                b: *b,
                proximity: topo.proximity(*a, *b),
                latency_ns: latency,
                mean_latency_ns: stats::mean(s),
            });
        }
        let classes = Proximity::ALL
            .iter()
            .filter_map(|&p| {
                let m: Vec<f64> = pairs
                    .iter()
                    .filter(|x| x.proximity == p)
                    .map(|x| x.latency_ns.median)
                    .collect();
                if m.is_empty() {
                    return None;
                }
                let median = stats::median(&m);
                Some(ClassSummary {
                    proximity: p,
                    pairs: m.len(),
                    median_latency_ns: median,
                    min_latency_ns: stats::min(&m),
                    max_latency_ns: stats::max(&m),
                    ceiling: Ceiling::of(median),
                })
            })
            .collect();
        Self {
            cpus: cpus.clone(),
            samples: spec.samples,
            round_trips: spec.round_trips,
            pairs,
            matrix_ns: matrix,
            classes,
            interrupted,
            left_out: CpuSet::new(),
        }
    }

    /// Median one-way latency between `a` and `b`, if measured, ns.
    pub fn latency_ns(&self, a: u32, b: u32) -> Option<f64> {
        self.pairs
            .iter()
            .find(|p| (p.a, p.b) == (a, b) || (p.a, p.b) == (b, a))
            .map(|p| p.latency_ns.median)
    }

    /// The class summary for `p`, if any pair of that class was measured.
    pub fn class(&self, p: Proximity) -> Option<&ClassSummary> {
        self.classes.iter().find(|c| c.proximity == p)
    }
}

/// The pairs to measure: every a < b in `cpus`.
pub fn pairs(cpus: &CpuSet) -> Vec<(u32, u32)> {
    let v = cpus.to_vec();
    let mut out = Vec::new();
    for (i, &a) in v.iter().enumerate() {
        for &b in &v[i + 1..] {
            out.push((a, b));
        }
    }
    out
}

/// Measures every pair of `cpus` on `engine` (stops early on Ctrl-C, marking the
/// result `interrupted`). `on_pair` is called after each pair, e.g. for progress.
pub fn measure(
    engine: &dyn Engine,
    topo: &Topology,
    cpus: &CpuSet,
    spec: &PingPongSpec,
    on_pair: &mut dyn FnMut(usize, usize),
) -> Result<C2c> {
    let todo = pairs(cpus);
    let mut samples = Vec::with_capacity(todo.len());
    let mut interrupted = false;
    for (k, &(a, b)) in todo.iter().enumerate() {
        if crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        let s = engine.ping_pong(a, b, spec)?;
        if s.len() < spec.samples {
            interrupted = true;
            break;
        }
        samples.push(((a, b), s));
        on_pair(k + 1, todo.len());
    }
    Ok(C2c::from_samples(topo, cpus, spec, &samples, interrupted))
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

    #[test]
    fn ceilings_match_the_reference_table() {
        // REFERENCE §2.6: 7 ns → 143M/71M; 134 ns → 7.5M/3.7M; 200 ns → 5M/2.5M.
        assert!((ceiling(7.0, 1) / 1e6 - 142.86).abs() < 0.01);
        assert!((ceiling(7.0, 2) / 1e6 - 71.43).abs() < 0.01);
        assert!((ceiling(134.0, 1) / 1e6 - 7.46).abs() < 0.01);
        assert!((ceiling(134.0, 2) / 1e6 - 3.73).abs() < 0.01);
        assert_eq!(ceiling(200.0, 2), 2.5e6);
        assert_eq!(share_of_ceiling(2.5e6, 200.0), 0.5);
        let c = Ceiling::of(100.0);
        assert_eq!((c.k1_handoffs_per_sec, c.k2_handoffs_per_sec), (1e7, 5e6));
    }

    #[test]
    fn samples_become_matrix_pairs_and_classes() {
        let topo = crate::topology::discover(std::path::Path::new("/")).unwrap();
        let cpus = CpuSet::from_cpus([0, 1, 2]);
        let spec = PingPongSpec {
            samples: 5,
            round_trips: 10,
        };
        let samples = vec![
            ((0, 1), vec![100.0, 102.0, 98.0, 101.0, 500.0]),
            ((0, 2), vec![50.0, 50.0, 50.0, 50.0, 50.0]),
            ((1, 2), vec![]),
        ];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, true);
        assert!(r.interrupted);
        assert_eq!(r.pairs.len(), 2, "an empty pair is skipped");
        assert_eq!(r.latency_ns(1, 0), Some(101.0));
        assert_eq!(r.pairs[0].latency_ns.outliers.high_severe, 1);
        assert_eq!(r.pairs[0].mean_latency_ns, 180.2);
        assert_eq!(r.matrix_ns[0][1], Some(101.0));
        assert_eq!(r.matrix_ns[1][0], Some(101.0));
        assert_eq!(r.matrix_ns[2][0], Some(50.0));
        assert_eq!(r.matrix_ns[1][2], None);
        assert_eq!(r.matrix_ns[0][0], None);
        let n: usize = r.classes.iter().map(|c| c.pairs).sum();
        assert_eq!(n, 2);
        for p in &r.pairs {
            assert_eq!(p.proximity, topo.proximity(p.a, p.b));
            let c = r.class(p.proximity).unwrap();
            assert!(c.min_latency_ns <= p.latency_ns.median);
        }
        let j = serde_json::to_value(&r).unwrap();
        assert!(j["matrix_ns"][0][0].is_null());
        assert!(j["classes"][0]["ceiling"]["k1_handoffs_per_sec"].is_f64());
    }

    #[test]
    fn pairs_are_unordered_and_complete() {
        let p = pairs(&CpuSet::from_cpus([0, 2, 5]));
        assert_eq!(p, [(0, 2), (0, 5), (2, 5)]);
        assert!(pairs(&CpuSet::from_cpus([3])).is_empty());
    }
}
