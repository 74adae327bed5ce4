//! Percentile bootstrap confidence intervals of a median and of a ratio of medians,
//! resampling with replacement from a seeded generator (Efron & Tibshirani 1993, "An
//! Introduction to the Bootstrap", ch. 13; criterion `src/stats/univariate/bootstrap.rs`).
//! Pure. Its stated level is nominal: at a handful of runs it covers less (the coverage
//! table in `coverage.rs`), which is why paired comparisons use the Student-t interval of
//! [`super::comparison`] instead.

use serde::{Deserialize, Serialize};

use super::descriptive::{median, percentiles};
use super::rng::SplitMix64;

/// A confidence interval around a point estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ci {
    /// The statistic on the original samples.
    pub estimate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Ci {
    /// Whether `x` lies inside the interval.
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// Percentile bootstrap CI of `median(a) / median(b)`: each of `resamples` rounds draws
/// `a` and `b` with replacement (independently, since they are separate runs) from a
/// [`SplitMix64`] seeded with `seed`. None when either group is empty or a median is 0.
pub fn bootstrap_ratio_of_medians(
    a: &[f64],
    b: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<Ci> {
    let (ma, mb) = (median(a), median(b));
    if a.is_empty() || b.is_empty() || mb == 0.0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(resamples.max(1));
    for _ in 0..resamples.max(1) {
        for x in ra.iter_mut() {
            *x = a[rng.below(a.len() as u64) as usize];
        }
        for x in rb.iter_mut() {
            *x = b[rng.below(b.len() as u64) as usize];
        }
        let d = median(&rb);
        if d != 0.0 {
            ratios.push(median(&ra) / d);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    Some(percentile_ci(ma / mb, &ratios, confidence))
}

/// Percentile bootstrap CI of the median of `xs`: for *paired* comparisons, where each
/// sample is already a ratio of two runs taken back to back (so drift between pairs cancels
/// instead of widening the interval, as it does for [`bootstrap_ratio_of_medians`]). None
/// when `xs` is empty.
pub fn bootstrap_median(xs: &[f64], confidence: f64, resamples: usize, seed: u64) -> Option<Ci> {
    if xs.is_empty() {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut r = vec![0.0; xs.len()];
    let meds: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            for x in r.iter_mut() {
                *x = xs[rng.below(xs.len() as u64) as usize];
            }
            median(&r)
        })
        .collect();
    Some(percentile_ci(median(xs), &meds, confidence))
}

/// The percentile interval of bootstrap `resampled` statistics around `estimate`.
fn percentile_ci(estimate: f64, resampled: &[f64], confidence: f64) -> Ci {
    let alpha = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    let q = percentiles(resampled, &[alpha * 100.0, (1.0 - alpha) * 100.0]);
    Ci {
        estimate,
        low: q[0],
        high: q[1],
        confidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Effect, Thresholds, classify, max, min};
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn bootstrap_median_of_paired_ratios() {
        // Ratios near 0.99 with one wild pair: the median and its CI ignore the outlier.
        let mut xs: Vec<f64> = (0..30).map(|i| 0.985 + (i % 3) as f64 * 0.005).collect();
        xs.push(0.3);
        let ci = bootstrap_median(&xs, 0.95, 2000, 7).unwrap();
        assert!((ci.estimate - 0.99).abs() < 1e-9, "{ci:?}");
        assert!(ci.low >= 0.985 && ci.high <= 0.995, "{ci:?}");
        assert_eq!(bootstrap_median(&xs, 0.95, 2000, 7), Some(ci), "seeded");
        assert!(bootstrap_median(&[], 0.95, 10, 1).is_none());
        let one = bootstrap_median(&[2.0], 0.95, 10, 1).unwrap();
        assert_eq!((one.low, one.estimate, one.high), (2.0, 2.0, 2.0));
    }

    #[test]
    fn bootstrap_ratio_and_its_class() {
        let band = Thresholds::band(0.02);
        let base: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let fast: Vec<f64> = base.iter().map(|x| x * 1.5).collect();
        let ci = bootstrap_ratio_of_medians(&fast, &base, 0.95, 2000, 1).unwrap();
        assert!(close(ci.estimate, 1.5));
        assert!(ci.contains(1.5) && ci.low > 1.4 && ci.high < 1.6, "{ci:?}");
        assert_eq!(classify(ci.low, ci.high, band), Effect::Gain);
        let slow = bootstrap_ratio_of_medians(&base, &fast, 0.95, 2000, 1).unwrap();
        assert_eq!(classify(slow.low, slow.high, band), Effect::Loss);
        let same = bootstrap_ratio_of_medians(&base, &base, 0.95, 2000, 1).unwrap();
        assert_eq!(classify(same.low, same.high, band), Effect::NoEffect);
        // Seeded: the same seed gives the same interval.
        assert_eq!(
            bootstrap_ratio_of_medians(&fast, &base, 0.95, 500, 9),
            bootstrap_ratio_of_medians(&fast, &base, 0.95, 500, 9)
        );
        assert!(bootstrap_ratio_of_medians(&[], &base, 0.95, 10, 1).is_none());
        // An interval straddling the band is inconclusive even if its estimate is not 1.
        assert_eq!(classify(0.97, 1.3, band), Effect::Inconclusive);
    }

    proptest! {
        #[test]
        fn bootstrap_ci_brackets_the_resampled_range(
            a in prop::collection::vec(1.0f64..1e3, 1..20),
            b in prop::collection::vec(1.0f64..1e3, 1..20),
            seed in any::<u64>(),
        ) {
            let ci = bootstrap_ratio_of_medians(&a, &b, 0.9, 200, seed).unwrap();
            prop_assert!(ci.low <= ci.high);
            let bound = max(&a) / min(&b);
            prop_assert!(ci.high <= bound * (1.0 + 1e-12));
            prop_assert!(ci.low >= min(&a) / max(&b) * (1.0 - 1e-12));
        }
    }
}
