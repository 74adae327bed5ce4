//! Fairness of shares among threads: Jain's index `(Σx)² / (n·Σx²)`, 1 when all equal,
//! 1/n when one thread gets everything (Jain, Chiu & Hawe 1984, "A quantitative measure of
//! fairness and discrimination for resource allocation in shared computer systems",
//! DEC-TR-301), next to the max/min ratio. Pure.

use super::descriptive::{max, min};

/// Jain's fairness index `(Σx)² / (n·Σx²)`: 1 = perfectly even, 1/n = one takes all.
/// NaN when empty or all zero.
pub fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || s2 == 0.0 {
        f64::NAN
    } else {
        s * s / (xs.len() as f64 * s2)
    }
}

/// Largest / smallest value: how many times more the luckiest got than the unluckiest.
/// Infinite when the smallest is 0 and the largest is not; NaN when empty.
pub fn max_min_ratio(xs: &[f64]) -> f64 {
    let (lo, hi) = (min(xs), max(xs));
    if lo == 0.0 && hi == 0.0 {
        f64::NAN
    } else {
        hi / lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hand_computed() {
        assert_eq!(jain(&[1.0, 1.0, 1.0, 1.0]), 1.0);
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), 0.25);
        // (1+3)² / (2·(1+9)) = 0.8
        assert!((jain(&[1.0, 3.0]) - 0.8).abs() < 1e-12);
        assert_eq!(max_min_ratio(&[2.0, 10.0, 5.0]), 5.0);
        assert_eq!(max_min_ratio(&[0.0, 1.0]), f64::INFINITY);
        assert!(jain(&[]).is_nan() && max_min_ratio(&[]).is_nan());
    }

    proptest! {
        #[test]
        fn jain_lies_between_one_over_n_and_one(xs in prop::collection::vec(0.0f64..1e9, 1..40)) {
            let j = jain(&xs);
            if xs.iter().any(|&x| x > 0.0) {
                let n = xs.len() as f64;
                prop_assert!(j >= 1.0 / n - 1e-12 && j <= 1.0 + 1e-12);
                prop_assert!(max_min_ratio(&xs) >= 1.0);
            } else {
                prop_assert!(j.is_nan());
            }
        }
    }
}
