//! Descriptive statistics of one sample: mean, standard deviation, percentiles, the median
//! and the median absolute deviation. Pure; empty input gives NaN, never a panic.
//!
//! - **Headline and spread**: the median and the median absolute deviation scaled by
//!   1.4826, which estimates σ for normal data while ignoring the long right tail that
//!   preemption and interrupts add to timings (hyperfine `src/outlier_detection.rs`;
//!   Leys et al. 2013, "Detecting outliers: do not use standard deviation around the
//!   mean, use absolute deviation around the median").
//! - **Percentiles** by linear interpolation between closest ranks (Hyndman & Fan 1996,
//!   type 7: numpy's and criterion's default).

/// MAD → σ for normally distributed data: 1 / Φ⁻¹(3/4).
pub const MAD_SCALE: f64 = 1.4826;

/// Arithmetic mean; NaN when empty.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n − 1 in the denominator); 0 for one value, NaN when empty.
pub fn stddev(xs: &[f64]) -> f64 {
    match xs.len() {
        0 => f64::NAN,
        1 => 0.0,
        n => {
            let m = mean(xs);
            (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        }
    }
}

/// Coefficient of variation, stddev / mean; NaN when empty or the mean is 0.
pub fn cv(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if m == 0.0 { f64::NAN } else { stddev(xs) / m }
}

/// Smallest value; NaN when empty.
pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().reduce(f64::min).unwrap_or(f64::NAN)
}

/// Largest value; NaN when empty.
pub fn max(xs: &[f64]) -> f64 {
    xs.iter().copied().reduce(f64::max).unwrap_or(f64::NAN)
}

/// The values in ascending order (NaN last, by `f64::total_cmp`).
pub(super) fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

/// Percentile `p` (0–100) of already sorted values, type 7 interpolation.
fn percentile_sorted(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let h = (v.len() - 1) as f64 * (p.clamp(0.0, 100.0) / 100.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

/// Percentile `p` (0–100), linear interpolation between closest ranks (type 7); NaN when
/// empty.
pub fn percentile(xs: &[f64], p: f64) -> f64 {
    percentile_sorted(&sorted(xs), p)
}

/// Several percentiles with one sort.
pub fn percentiles(xs: &[f64], ps: &[f64]) -> Vec<f64> {
    let v = sorted(xs);
    ps.iter().map(|&p| percentile_sorted(&v, p)).collect()
}

/// Median; NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    percentile(xs, 50.0)
}

/// The median of counts, no interpolation: the upper middle one for an even number (a
/// count that was measured, never a mean of two); 0 when empty.
pub fn upper_median(v: &[u64]) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get(s.len() / 2).copied().unwrap_or(0)
}

/// Median absolute deviation from the median, × [`MAD_SCALE`]; NaN when empty.
pub fn mad(xs: &[f64]) -> f64 {
    let m = median(xs);
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev) * MAD_SCALE
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn hand_computed() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        // median 2; |deviations| 1 1 0 0 2 4 7 → median 1.
        assert!(close(mad(&[1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0]), 1.4826));
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        assert!(close(stddev(&xs), (32.0f64 / 7.0).sqrt()));
        assert!(close(cv(&xs), (32.0f64 / 7.0).sqrt() / 5.0));
        assert_eq!((min(&xs), max(&xs)), (2.0, 9.0));
        // Type 7: h = (n−1)·p = 7 · 0.25 = 1.75 → 4 + 0.75·(4 − 4) = 4; p90: h = 6.3 → 7 + 0.3·2.
        assert_eq!(percentile(&xs, 25.0), 4.0);
        assert!(close(percentile(&xs, 90.0), 7.6));
        assert_eq!(percentile(&xs, 0.0), 2.0);
        assert_eq!(percentile(&xs, 100.0), 9.0);
        assert!(median(&[]).is_nan() && mad(&[]).is_nan());
        assert_eq!(stddev(&[3.0]), 0.0);
        assert_eq!(upper_median(&[4, 1, 3, 2]), 3);
        assert_eq!(upper_median(&[]), 0);
    }

    fn samples() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(-1e6f64..1e6, 1..60)
    }

    proptest! {
        #[test]
        fn order_statistics_are_bounded(xs in samples(), p in 0.0f64..100.0) {
            let (lo, hi) = (min(&xs), max(&xs));
            let m = median(&xs);
            prop_assert!(lo <= m && m <= hi);
            let q = percentile(&xs, p);
            prop_assert!(lo <= q && q <= hi);
            prop_assert!(percentile(&xs, p) <= percentile(&xs, (p + 1.0).min(100.0)));
            prop_assert!(mad(&xs) >= 0.0);
            prop_assert!(stddev(&xs) >= 0.0);
        }

        #[test]
        fn median_and_mad_are_shift_and_scale_equivariant(
            xs in samples(), shift in -1e3f64..1e3, scale in 0.01f64..100.0,
        ) {
            let ys: Vec<f64> = xs.iter().map(|x| x * scale + shift).collect();
            prop_assert!((median(&ys) - (median(&xs) * scale + shift)).abs() < 1e-6 * (1.0 + median(&ys).abs()));
            prop_assert!((mad(&ys) - mad(&xs) * scale).abs() < 1e-6 * (1.0 + mad(&ys)));
        }
    }
}
