//! Outliers are counted, never dropped: Tukey's fences, mild beyond 1.5 IQR from the
//! quartiles, severe beyond 3 IQR (Tukey 1977, "Exploratory Data Analysis"; criterion
//! `src/stats/univariate/outliers/tukey.rs`, `book/src/analysis.md`). Pure.

use serde::{Deserialize, Serialize};

use super::descriptive::percentiles;

/// Tukey's fences from the quartiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Fences {
    pub low_severe: f64,
    pub low_mild: f64,
    pub high_mild: f64,
    pub high_severe: f64,
}

impl Fences {
    /// Q1 − 3 IQR, Q1 − 1.5 IQR, Q3 + 1.5 IQR, Q3 + 3 IQR.
    pub fn of(xs: &[f64]) -> Self {
        let q = percentiles(xs, &[25.0, 75.0]);
        let iqr = q[1] - q[0];
        Self {
            low_severe: q[0] - 3.0 * iqr,
            low_mild: q[0] - 1.5 * iqr,
            high_mild: q[1] + 1.5 * iqr,
            high_severe: q[1] + 3.0 * iqr,
        }
    }
}

/// How many samples lie beyond each Tukey fence. Reported, never removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outliers {
    /// Below Q1 − 3 IQR.
    pub low_severe: usize,
    /// Between Q1 − 3 IQR and Q1 − 1.5 IQR.
    pub low_mild: usize,
    /// Between Q3 + 1.5 IQR and Q3 + 3 IQR.
    pub high_mild: usize,
    /// Above Q3 + 3 IQR.
    pub high_severe: usize,
}

impl Outliers {
    /// Classifies every sample against the Tukey fences of the same samples.
    pub fn of(xs: &[f64]) -> Self {
        let mut o = Outliers::default();
        if xs.len() < 4 {
            return o; // quartiles of fewer values say nothing
        }
        let f = Fences::of(xs);
        for &x in xs {
            if x < f.low_severe {
                o.low_severe += 1;
            } else if x < f.low_mild {
                o.low_mild += 1;
            } else if x > f.high_severe {
                o.high_severe += 1;
            } else if x > f.high_mild {
                o.high_mild += 1;
            }
        }
        o
    }

    /// All outliers, mild and severe.
    pub fn total(&self) -> usize {
        self.low_severe + self.low_mild + self.high_mild + self.high_severe
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn tukey_counts_hand_computed() {
        // 1..=10: Q1 = 3.25, Q3 = 7.75, IQR = 4.5 → mild above 14.5, severe above 21.25.
        let mut xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let f = Fences::of(&xs);
        assert!(close(f.high_mild, 14.5) && close(f.high_severe, 21.25));
        assert!(close(f.low_mild, -3.5) && close(f.low_severe, -10.25));
        xs.extend([16.0, 100.0, -50.0]);
        // Fences move with the added points; recompute: Q1 = 3.0, Q3 = 9.0, IQR 6.
        let o = Outliers::of(&xs);
        assert_eq!(o.high_severe, 1); // 100 > 9 + 18
        assert_eq!(o.high_mild, 0); // 16 < 9 + 9
        assert_eq!(o.low_severe, 1); // −50 < 3 − 18
        assert_eq!(o.total(), 2);
        let s = crate::stats::Summary::of(&xs).unwrap();
        assert_eq!(s.n, 13);
        assert_eq!(s.max, 100.0); // outliers are kept
    }

    #[test]
    fn fewer_than_four_values_have_no_outliers() {
        assert_eq!(Outliers::of(&[1.0, 1.0, 100.0]).total(), 0);
        assert_eq!(Outliers::of(&[]).total(), 0);
    }
}
