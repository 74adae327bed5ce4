//! The headline and spread of one sample as one value: median, MAD, extremes, count and
//! Tukey outlier counts (the methods are in [`super::descriptive`] and [`super::outliers`]).
//! Pure.

use serde::{Deserialize, Serialize};

use super::descriptive::{mad, max, median, min};
use super::outliers::Outliers;

/// The headline and spread of one set of samples. Unitless: the field holding it names
/// the unit (`latency_ns: Summary`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Median.
    pub median: f64,
    /// Median absolute deviation × 1.4826 (a robust σ).
    pub mad: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub n: usize,
    /// Samples beyond Tukey's fences (kept in every other number).
    pub outliers: Outliers,
}

impl Summary {
    /// The summary of `xs`; None when empty.
    pub fn of(xs: &[f64]) -> Option<Self> {
        if xs.is_empty() {
            return None;
        }
        Some(Self {
            median: median(xs),
            mad: mad(xs),
            min: min(xs),
            max: max(xs),
            n: xs.len(),
            outliers: Outliers::of(xs),
        })
    }

    /// MAD relative to the median (a robust coefficient of variation).
    pub fn relative_mad(&self) -> f64 {
        self.mad / self.median
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;
    use proptest::prelude::*;

    #[test]
    fn empty_is_none_and_outliers_stay_in() {
        assert!(Summary::of(&[]).is_none());
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 100.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (3.0, 1.0, 100.0, 5));
        assert_eq!(s.outliers.high_severe, 1);
    }

    proptest! {
        #[test]
        fn order_does_not_matter(
            mut xs in prop::collection::vec(-1e6f64..1e6, 1..60), seed in any::<u64>(),
        ) {
            let s = Summary::of(&xs).unwrap();
            SplitMix64::new(seed).shuffle(&mut xs);
            prop_assert_eq!(s, Summary::of(&xs).unwrap());
            prop_assert!(s.outliers.total() <= xs.len());
        }
    }
}
