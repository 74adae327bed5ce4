//! The distribution-free confidence interval of a median between two order statistics, at
//! the level the binomial distribution gives it (the sign-test interval; Conover 1999,
//! "Practical Nonparametric Statistics", §3.2). Pure. Its level is what it is — 75 % for
//! the range of 3 values — and is reported as such, never as the level asked for.

use super::descriptive::sorted;

/// The interval `[x(k), x(n+1−k)]` of the sorted values for the largest `k` whose
/// coverage of the median, `1 − 2·P(Binomial(n, ½) ≤ k − 1)`, is at least `confidence`,
/// with that coverage; when even the full range falls short (`1 − 2^(1−n)`: 75 % for 3
/// values, 93.75 % for 5), the full range at its own level.
pub fn order_statistic_interval(xs: &[f64], confidence: f64) -> (f64, f64, f64) {
    let v = sorted(xs);
    let n = v.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, 0.0);
    }
    // P(Binomial(n, ½) ≤ j) for j = 0.., by the recurrence C(n, j+1) = C(n, j)·(n−j)/(j+1).
    let half_n = 0.5f64.powi(n as i32);
    let mut term = half_n;
    let mut cdf = Vec::with_capacity(n);
    for j in 0..n {
        cdf.push(cdf.last().copied().unwrap_or(0.0) + term);
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    let coverage = |k: usize| 1.0 - 2.0 * cdf[k - 1];
    let mut k = 1;
    while k < n.div_ceil(2) && coverage(k + 1) >= confidence {
        k += 1;
    }
    let level = if n == 1 { 0.0 } else { coverage(k) };
    (v[k - 1], v[n - k], level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistic_intervals_say_their_true_level() {
        // 3 values: the range, at 1 − 2·(1/8) = 75 %.
        let (lo, hi, level) = order_statistic_interval(&[0.3, 0.0, 0.1], 0.95);
        assert_eq!((lo, hi), (0.0, 0.3));
        assert!((level - 0.75).abs() < 1e-12);
        // 8 values at 95 %: [x(2), x(7)] covers 1 − 2·9/256 = 92.97 % < 95 %, so [x(1), x(8)]
        // at 1 − 2/256 = 99.22 %.
        let xs: Vec<f64> = (1..=8).map(f64::from).collect();
        let (lo, hi, level) = order_statistic_interval(&xs, 0.95);
        assert_eq!((lo, hi), (1.0, 8.0));
        assert!((level - (1.0 - 2.0 / 256.0)).abs() < 1e-12);
        // 20 values at 95 %: [x(6), x(15)] covers 95.86 %.
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let (lo, hi, level) = order_statistic_interval(&xs, 0.95);
        assert_eq!((lo, hi), (6.0, 15.0));
        assert!((level - 0.958_610_5).abs() < 1e-6, "{level}");
    }
}
