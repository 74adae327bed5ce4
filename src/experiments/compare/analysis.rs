//! From runs to conclusions: summaries per placement, each placement against the first
//! (ratio of medians, bootstrap CI, a four-way call), and the SMT pairs (yield of `all`
//! over `one-per-core`, slowdown of `pairs`). Pure.
//!
//! The call follows criterion's rule (criterion `src/report.rs`, `noise_threshold`): a
//! change is called only when the *whole* interval lies beyond the noise band. Unlike
//! criterion's three-way verdict it tells an interval inside the band (no difference)
//! from one straddling its edge (inconclusive: the runs cannot tell yet).

use super::model::{Call, Comparison, PairRatio, PlacementResult, Run};
use crate::cpuset::CpuSet;
use crate::stats::{self, Better, Ci, Summary};

/// Confidence of every interval.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 4000;
/// Fewer runs than this on either side make a call indicative only.
pub const INDICATIVE_BELOW: usize = 5;
/// Seed of the bootstrap resampling: results are reproducible from the JSON.
const SEED: u64 = 0x5EED_C0DE;

/// The call for a CI of `candidate / baseline` with noise band `1 ± noise`.
pub fn call(ci: &Ci, noise: f64, better: Better) -> Call {
    let (lo, hi) = (ci.low, ci.high);
    if !(lo.is_finite() && hi.is_finite()) {
        return Call::Inconclusive;
    }
    let (up, down) = (lo > 1.0 + noise, hi < 1.0 - noise);
    match (up, down, better) {
        (true, _, Better::Higher) | (_, true, Better::Lower) => Call::Faster,
        (true, _, Better::Lower) | (_, true, Better::Higher) => Call::Slower,
        _ if lo >= 1.0 - noise && hi <= 1.0 + noise => Call::NoDifference,
        _ => Call::Inconclusive,
    }
}

/// The ratio CI turned into a speedup (> 1 = faster): itself for throughputs, its
/// inverse (bounds swapped) for times.
pub fn speedup(ci: &Ci, better: Better) -> Ci {
    match better {
        Better::Higher => *ci,
        Better::Lower => Ci {
            estimate: 1.0 / ci.estimate,
            low: 1.0 / ci.high,
            high: 1.0 / ci.low,
            confidence: ci.confidence,
        },
    }
}

/// Which value is compared, and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    WallTime,
    Metric(Better),
}

impl Basis {
    /// What a comparison with `metric` (None: wall time) compares.
    pub fn of(metric: Option<&super::metric::MetricInfo>) -> Self {
        match metric {
            Some(m) if m.higher_is_better => Basis::Metric(Better::Higher),
            Some(_) => Basis::Metric(Better::Lower),
            None => Basis::WallTime,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Basis::WallTime => "wall_time_ns",
            Basis::Metric(_) => "metric",
        }
    }

    pub fn better(self) -> Better {
        match self {
            Basis::WallTime => Better::Lower,
            Basis::Metric(b) => b,
        }
    }

    /// The compared value of every run that has it.
    pub fn values(self, runs: &[Run]) -> Vec<f64> {
        runs.iter()
            .filter_map(|r| match self {
                Basis::WallTime => Some(r.wall_time_ns as f64),
                Basis::Metric(_) => r.metric,
            })
            .collect()
    }
}

/// Fills a placement's summaries from its runs.
pub fn summarize(p: &mut PlacementResult) {
    let runs = &p.runs;
    let col = |f: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> { runs.iter().filter_map(f).collect() };
    p.wall_time_ns = Summary::of(&col(&|r| Some(r.wall_time_ns as f64)));
    p.metric = Summary::of(&col(&|r| r.metric));
    p.user_time_ns = Summary::of(&col(&|r| Some(r.user_time_ns as f64)));
    p.system_time_ns = Summary::of(&col(&|r| Some(r.system_time_ns as f64)));
    p.max_rss_bytes = runs.iter().map(|r| r.max_rss_bytes).max();
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| stats::median(&v));
    p.voluntary_switches = med(col(&|r| Some(r.voluntary_switches as f64)));
    p.involuntary_switches = med(col(&|r| Some(r.involuntary_switches as f64)));
    p.burner_ops_per_sec = med(col(&|r| r.burner_ops_per_sec));
    p.counters = runs
        .iter()
        .map(|r| r.counters.as_ref())
        .collect::<Option<Vec<_>>>()
        .and_then(crate::counters::Counts::median);
    p.failed_runs = runs
        .iter()
        .filter(|r| r.exit_code != Some(0) || r.signal.is_some())
        .count();
}

/// Bootstrap CI of median(a) / median(b) for placements `ia` and `ib`, seeded by the pair:
/// results reproduce, and the same pair gets the same interval wherever it is reported.
fn ratio(a: &[f64], b: &[f64], (ia, ib): (usize, usize)) -> Option<Ci> {
    let seed = SEED ^ ((ia as u64) << 32 | ib as u64);
    stats::bootstrap_ratio_of_medians(a, b, CONFIDENCE, RESAMPLES, seed)
}

/// Every placement after the first against the first.
pub fn comparisons(placements: &[PlacementResult], basis: Basis, noise: f64) -> Vec<Comparison> {
    let Some((base, rest)) = placements.split_first() else {
        return Vec::new();
    };
    let b = basis.values(&base.runs);
    rest.iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let a = basis.values(&p.runs);
            let ci = ratio(&a, &b, (i + 1, 0))?;
            Some(Comparison {
                placement: p.label.clone(),
                baseline: base.label.clone(),
                basis: basis.name().into(),
                ratio_of_medians: ci,
                speedup: speedup(&ci, basis.better()),
                call: call(&ci, noise, basis.better()),
                indicative: a.len().min(b.len()) < INDICATIVE_BELOW,
            })
        })
        .collect()
}

/// Placements that form SMT pairs, found from their CPU sets and the cores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmtPairs {
    /// (all, one-per-core): every usable sibling of the cores of one-per-core's CPUs.
    pub yield_pair: Option<(usize, usize)>,
    /// (pairs, one-per-core): as many CPUs, on both siblings of fewer cores.
    pub pairs_pair: Option<(usize, usize)>,
}

/// Finds the pairs among `sets` (None = a placement left out, e.g. one with burners);
/// `core_of(cpu)` gives the usable siblings of that CPU's core, itself included.
pub fn smt_pairs(sets: &[Option<&CpuSet>], core_of: impl Fn(u32) -> CpuSet) -> SmtPairs {
    let cores_of = |s: &CpuSet| -> Vec<CpuSet> {
        let mut v: Vec<CpuSet> = s.iter().map(&core_of).collect();
        v.sort_by_key(CpuSet::first);
        v.dedup();
        v
    };
    let whole = |cores: &[CpuSet]| cores.iter().fold(CpuSet::new(), |a, c| a.union(c));
    // One CPU on each of its cores, and some core has another sibling.
    let one_per_core = |s: &CpuSet| {
        let c = cores_of(s);
        c.len() == s.len() && c.iter().any(|c| c.len() >= 2)
    };
    let mut out = SmtPairs::default();
    for (i, a) in sets.iter().enumerate() {
        let Some(a) = a.filter(|a| one_per_core(a)) else {
            continue;
        };
        let a_cores = cores_of(a);
        for (j, b) in sets.iter().enumerate() {
            let Some(b) = b else { continue };
            if i == j {
                continue;
            }
            let b_cores = cores_of(b);
            let b_whole = *b == &whole(&b_cores);
            if out.yield_pair.is_none() && b_cores == a_cores && b_whole && b.len() > a.len() {
                out.yield_pair = Some((j, i));
            }
            if out.pairs_pair.is_none()
                && b.len() == a.len()
                && b_whole
                && b_cores.len() < a_cores.len()
            {
                out.pairs_pair = Some((j, i));
            }
        }
    }
    out
}

/// Throughput of `num` over `den` (a speedup: > 1 = `num` does more per unit of time).
pub fn pair_speedup(
    placements: &[PlacementResult],
    (num, den): (usize, usize),
    basis: Basis,
) -> Option<PairRatio> {
    let (n, d) = (placements.get(num)?, placements.get(den)?);
    let ci = ratio(&basis.values(&n.runs), &basis.values(&d.runs), (num, den))?;
    Some(PairRatio {
        placement: n.label.clone(),
        reference: d.label.clone(),
        basis: basis.name().into(),
        ratio: speedup(&ci, basis.better()),
    })
}

/// How many times longer (or less productive) each run of `num` is than of `den`: the
/// inverse of [`pair_speedup`].
pub fn pair_slowdown(
    placements: &[PlacementResult],
    pair: (usize, usize),
    basis: Basis,
) -> Option<PairRatio> {
    let mut r = pair_speedup(placements, pair, basis)?;
    r.ratio = speedup(&r.ratio, Better::Lower);
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ci(low: f64, high: f64) -> Ci {
        Ci {
            estimate: (low + high) / 2.0,
            low,
            high,
            confidence: 0.95,
        }
    }

    #[test]
    fn the_call_by_hand() {
        let n = 0.02;
        // Throughput 1.5× with the whole interval above 1.02: faster.
        assert_eq!(call(&ci(1.4, 1.6), n, Better::Higher), Call::Faster);
        // The same ratio of times: slower.
        assert_eq!(call(&ci(1.4, 1.6), n, Better::Lower), Call::Slower);
        // Times halved: faster; throughput halved: slower.
        assert_eq!(call(&ci(0.45, 0.55), n, Better::Lower), Call::Faster);
        assert_eq!(call(&ci(0.45, 0.55), n, Better::Higher), Call::Slower);
        // Inside [0.98, 1.02]: no difference, either way.
        assert_eq!(call(&ci(0.99, 1.01), n, Better::Higher), Call::NoDifference);
        assert_eq!(call(&ci(0.98, 1.02), n, Better::Lower), Call::NoDifference);
        // Straddling an edge: inconclusive, even with the estimate far out.
        assert_eq!(call(&ci(0.97, 1.30), n, Better::Higher), Call::Inconclusive);
        assert_eq!(call(&ci(1.01, 1.05), n, Better::Higher), Call::Inconclusive);
        assert_eq!(call(&ci(0.90, 0.99), n, Better::Lower), Call::Inconclusive);
        // Just beyond the band: called.
        assert_eq!(call(&ci(1.021, 1.03), n, Better::Higher), Call::Faster);
        assert_eq!(
            call(&ci(f64::NAN, 1.0), n, Better::Higher),
            Call::Inconclusive
        );
    }

    #[test]
    fn speedup_inverts_times() {
        let s = speedup(
            &Ci {
                estimate: 0.5,
                low: 0.4,
                high: 0.8,
                confidence: 0.95,
            },
            Better::Lower,
        );
        assert_eq!((s.low, s.estimate, s.high), (1.25, 2.0, 2.5));
        let same = ci(1.1, 1.2);
        assert_eq!(speedup(&same, Better::Higher), same);
    }

    fn run(wall_ms: u64, metric: Option<f64>) -> Run {
        Run {
            round: 1,
            wall_time_ns: wall_ms * 1_000_000,
            user_time_ns: 0,
            system_time_ns: 0,
            max_rss_bytes: 1 << 20,
            voluntary_switches: 3,
            involuntary_switches: 1,
            exit_code: Some(0),
            signal: None,
            metric,
            burner_ops_per_sec: None,
            counters: None,
            leftover_processes: 0,
        }
    }

    fn placement(label: &str, walls: &[u64]) -> PlacementResult {
        let mut p = PlacementResult {
            label: label.into(),
            request: label.into(),
            cpus: CpuSet::from_cpus([0]),
            cores: 1,
            server_cpus: None,
            burner_cpus: Vec::new(),
            runs: walls
                .iter()
                .map(|&w| run(w, Some(1e6 / w as f64)))
                .collect(),
            wall_time_ns: None,
            metric: None,
            user_time_ns: None,
            system_time_ns: None,
            max_rss_bytes: None,
            voluntary_switches: None,
            involuntary_switches: None,
            burner_ops_per_sec: None,
            counters: None,
            failed_runs: 0,
            notes: Vec::new(),
        };
        summarize(&mut p);
        p
    }

    #[test]
    fn comparisons_against_the_first() {
        let ps = [
            placement("a", &[100, 101, 99, 100, 102, 98, 100]),
            placement("b", &[50, 51, 49, 50, 50, 52, 48]),
            placement("c", &[100, 99, 101, 100, 100, 101, 99]),
            placement("d", &[100, 150]),
        ];
        assert_eq!(ps[0].wall_time_ns.unwrap().median, 100e6);
        assert_eq!(ps[0].max_rss_bytes, Some(1 << 20));
        assert_eq!(ps[0].voluntary_switches, Some(3.0));
        let c = comparisons(&ps, Basis::WallTime, 0.02);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].call, Call::Faster);
        assert!((c[0].ratio_of_medians.estimate - 0.5).abs() < 1e-12);
        assert!((c[0].speedup.estimate - 2.0).abs() < 1e-12);
        assert_eq!(c[1].call, Call::NoDifference, "{:?}", c[1]);
        assert!(c[2].indicative && !c[0].indicative);
        // The metric (higher is better) reaches the same calls.
        let m = comparisons(&ps, Basis::Metric(Better::Higher), 0.02);
        assert_eq!(m[0].call, Call::Faster);
        assert!((m[0].speedup.estimate - 2.0).abs() < 1e-9);
        assert_eq!(comparisons(&ps, Basis::WallTime, 0.02), c, "reproducible");
    }

    #[test]
    fn smt_pairs_on_two_cores_of_two_siblings() {
        // Cores {0,1} and {2,3}.
        let core_of = |c: u32| {
            if c < 2 {
                CpuSet::from_cpus([0, 1])
            } else {
                CpuSet::from_cpus([2, 3])
            }
        };
        let opc = CpuSet::from_cpus([0, 2]);
        let pairs = CpuSet::from_cpus([0, 1]);
        let all = CpuSet::from_cpus([0, 1, 2, 3]);
        let found = smt_pairs(&[Some(&opc), Some(&pairs), Some(&all)], core_of);
        assert_eq!(found.yield_pair, Some((2, 0)));
        assert_eq!(found.pairs_pair, Some((1, 0)));
        // A burner variant (None) is never paired; order does not matter.
        let found = smt_pairs(&[Some(&all), None, Some(&opc)], core_of);
        assert_eq!(found.yield_pair, Some((0, 2)));
        assert_eq!(found.pairs_pair, None);
        // No siblings: nothing pairs (CPU 0 vs 0-1 on a machine without SMT).
        let single = |c: u32| CpuSet::from_cpus([c]);
        let a = CpuSet::from_cpus([0]);
        let b = CpuSet::from_cpus([0, 1]);
        assert_eq!(
            smt_pairs(&[Some(&a), Some(&b)], single),
            SmtPairs::default()
        );
    }

    #[test]
    fn yield_and_slowdown_by_hand() {
        // The same work per run: 80 ms on all siblings, 100 ms on one thread per core
        // (yield 100 / 80 = 1.25), 160 ms on both siblings of half the cores (1.6× slower).
        let ps = [
            placement("one-per-core", &[100; 6]),
            placement("pairs", &[160; 6]),
            placement("all", &[80; 6]),
        ];
        let y = pair_speedup(&ps, (2, 0), Basis::WallTime).unwrap();
        assert!((y.ratio.estimate - 1.25).abs() < 1e-12, "{y:?}");
        assert_eq!(
            (y.placement.as_str(), y.reference.as_str()),
            ("all", "one-per-core")
        );
        let s = pair_slowdown(&ps, (1, 0), Basis::WallTime).unwrap();
        assert!((s.ratio.estimate - 1.6).abs() < 1e-12, "{s:?}");
        let sm = pair_slowdown(&ps, (1, 0), Basis::Metric(Better::Higher)).unwrap();
        assert!((sm.ratio.estimate - 1.6).abs() < 1e-9, "{sm:?}");
    }
}
