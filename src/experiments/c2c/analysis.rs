//! From samples to figures (pure): the matrix, per-pair spread and per-class summaries
//! with the handoff ceiling each class median implies ([`super::ceiling`]).

use super::ceiling::Ceiling;
use super::model::{C2c, ClassSummary, Pair};
use crate::cpuset::CpuSet;
use crate::engine::PingPongSpec;
use crate::stats::{self, Summary};
use crate::topology::{Proximity, Topology};

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
