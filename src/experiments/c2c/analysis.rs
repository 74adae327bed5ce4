//! From samples to figures (pure): the matrix, per-pair spread and per-class summaries,
//! and the ceiling on contended lock handoffs a latency implies.
//!
//! A contended lock handoff needs at least k serialized cache-line transfers (the lock
//! line, then data lines; global spinning adds invalidations per waiter), so handoffs/s ≤
//! 1 / (k·L) for one-way latency L: 134 ns allows 7.5 M/s at k = 1 and 3.7 M/s at k = 2.

use super::model::{C2c, ClassSummary, Pair};
use crate::cpuset::CpuSet;
use crate::engine::PingPongSpec;
use crate::stats::{self, Summary};
use crate::topology::{Proximity, Topology};
use serde::{Deserialize, Serialize};

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
                // Ctrl-C drops the pair it stopped, so a short pair here ran out of time.
                time_limited: s.len() < spec.samples,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_are_one_over_k_transfers() {
        // 1e9 / (k·L): 7 ns (SMT siblings) → 142.9 M/s, 71.4 M/s; 134 ns (two vCPUs of a
        // cloud VM) → 7.46 M/s, 3.73 M/s; 200 ns → 5 M/s, 2.5 M/s.
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
    fn ceiling_edges() {
        assert!(ceiling(0.0, 1).is_infinite());
        assert!(ceiling(100.0, 0).is_infinite());
        assert!(ceiling(f64::NAN, 1).is_nan());
        // A lock handing off 1 M times/s over 250 ns lines uses a quarter of the ceiling.
        assert_eq!(share_of_ceiling(1e6, 250.0), 0.25);
    }

    #[test]
    fn classes_are_the_median_of_their_pairs() {
        // Two cores with two siblings each: CPUs 0 and 2 share a core, so do 1 and 3.
        let topo = crate::topology::fixture::topology(2, 2, false);
        let cpus = CpuSet::from_cpus([0, 1, 2, 3]);
        let spec = PingPongSpec {
            samples: 3,
            round_trips: 10,
        };
        let samples = vec![
            ((0, 2), vec![5.0, 5.0, 5.0]),
            ((0, 1), vec![40.0, 40.0, 40.0]),
            ((0, 3), vec![60.0, 60.0, 60.0]),
            ((1, 2), vec![50.0, 50.0, 50.0]),
        ];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, false);
        let sib = r.class(Proximity::SmtSibling).unwrap();
        assert_eq!((sib.pairs, sib.median_latency_ns), (1, 5.0));
        let cores = r.class(Proximity::SameL3).unwrap();
        assert_eq!(cores.pairs, 3);
        assert_eq!(
            (
                cores.median_latency_ns,
                cores.min_latency_ns,
                cores.max_latency_ns
            ),
            (50.0, 40.0, 60.0)
        );
        // 50 ns: 20 M handoffs/s with one line transfer each, 10 M with two.
        assert_eq!(cores.ceiling, Ceiling::of(50.0));
        assert_eq!(
            (
                cores.ceiling.k1_handoffs_per_sec,
                cores.ceiling.k2_handoffs_per_sec
            ),
            (2e7, 1e7)
        );
        assert_eq!(
            r.classes[0].proximity,
            Proximity::SmtSibling,
            "closest first"
        );
    }
}
