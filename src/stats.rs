//! Statistics over samples: pure functions, no I/O, no clocks.
//!
//! Modelled on criterion's `stats` module and hyperfine's outlier detection, and cited as
//! they are:
//! - **Headline and spread**: the median and the median absolute deviation scaled by
//!   1.4826, which estimates σ for normal data while ignoring the long right tail that
//!   preemption and interrupts add to timings (hyperfine `src/outlier_detection.rs`;
//!   Leys et al. 2013, "Detecting outliers: do not use standard deviation around the
//!   mean, use absolute deviation around the median").
//! - **Percentiles** by linear interpolation between closest ranks (Hyndman & Fan type 7,
//!   numpy's and criterion's default).
//! - **Outliers are counted, never dropped**: Tukey's fences, mild beyond 1.5 IQR from the
//!   quartiles, severe beyond 3 IQR (Tukey 1977; criterion
//!   `src/stats/univariate/outliers/tukey.rs`, `book/src/analysis.md`).
//! - **Comparisons**: a percentile bootstrap confidence interval of the ratio of medians,
//!   resampling each group with replacement from a seeded generator (Efron & Tibshirani
//!   1993; criterion `src/stats/univariate/bootstrap.rs`), and a
//!   [`Verdict`](crate::stats::Verdict) that calls a change only when the whole interval
//!   lies beyond a noise threshold (criterion `src/report.rs`, `noise_threshold`,
//!   default 2 %).
//! - **Fairness**: Jain's index `(Σx)² / (n·Σx²)`, 1 when all equal, 1/n when one thread
//!   gets everything (Jain, Chiu, Hawe 1984, DEC-TR-301), next to the max/min ratio.
//!
//! Empty input gives NaN (or `None` for [`Summary::of`](crate::stats::Summary::of)) rather
//! than a panic: a report shows "–" for a configuration that could not run.

use serde::{Deserialize, Serialize};

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

fn sorted(xs: &[f64]) -> Vec<f64> {
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

/// Outcome of comparing a candidate with a baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Faster,
    Slower,
    NoDifference,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "no difference",
        })
    }
}

/// What a larger value means for the ratio being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Better {
    /// Throughput-like: more is faster.
    Higher,
    /// Latency-like: less is faster.
    Lower,
}

/// Judges a CI of `candidate / baseline`: a change is called only when the *whole*
/// interval lies beyond `1 ± noise` (criterion's noise threshold; 0.02 = 2 %).
pub fn verdict(ci: &Ci, noise: f64, better: Better) -> Verdict {
    let up = ci.low > 1.0 + noise;
    let down = ci.high < 1.0 - noise;
    match (up, down, better) {
        (true, _, Better::Higher) | (_, true, Better::Lower) => Verdict::Faster,
        (true, _, Better::Lower) | (_, true, Better::Higher) => Verdict::Slower,
        _ => Verdict::NoDifference,
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
/// generators"; the seeder of `rand`'s xoshiro): tiny, fast and seedable, good enough for
/// bootstrap resampling, shuffles and fake data. Not for cryptography.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (Lemire's multiply-shift; bias < n / 2^64). 0 when n = 0.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
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
        assert_eq!(jain(&[1.0, 1.0, 1.0, 1.0]), 1.0);
        assert_eq!(jain(&[1.0, 0.0, 0.0, 0.0]), 0.25);
        // (1+3)² / (2·(1+9)) = 0.8
        assert!(close(jain(&[1.0, 3.0]), 0.8));
        assert_eq!(max_min_ratio(&[2.0, 10.0, 5.0]), 5.0);
        assert_eq!(max_min_ratio(&[0.0, 1.0]), f64::INFINITY);
        assert!(median(&[]).is_nan() && mad(&[]).is_nan() && jain(&[]).is_nan());
        assert_eq!(stddev(&[3.0]), 0.0);
        assert!(Summary::of(&[]).is_none());
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
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.n, 13);
        assert_eq!(s.max, 100.0); // outliers are kept
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
    fn bootstrap_and_verdict() {
        let base: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let fast: Vec<f64> = base.iter().map(|x| x * 1.5).collect();
        let ci = bootstrap_ratio_of_medians(&fast, &base, 0.95, 2000, 1).unwrap();
        assert!(close(ci.estimate, 1.5));
        assert!(ci.contains(1.5) && ci.low > 1.4 && ci.high < 1.6, "{ci:?}");
        assert_eq!(verdict(&ci, 0.02, Better::Higher), Verdict::Faster);
        assert_eq!(verdict(&ci, 0.02, Better::Lower), Verdict::Slower);
        let same = bootstrap_ratio_of_medians(&base, &base, 0.95, 2000, 1).unwrap();
        assert_eq!(verdict(&same, 0.02, Better::Higher), Verdict::NoDifference);
        // Seeded: the same seed gives the same interval.
        assert_eq!(
            bootstrap_ratio_of_medians(&fast, &base, 0.95, 500, 9),
            bootstrap_ratio_of_medians(&fast, &base, 0.95, 500, 9)
        );
        assert!(bootstrap_ratio_of_medians(&[], &base, 0.95, 10, 1).is_none());
        // A CI straddling the noise band is no difference even if its estimate is not 1.
        let wide = Ci {
            estimate: 1.1,
            low: 0.97,
            high: 1.3,
            confidence: 0.95,
        };
        assert_eq!(verdict(&wide, 0.02, Better::Higher), Verdict::NoDifference);
    }

    #[test]
    fn rng_is_reproducible_and_uniform_enough() {
        let mut a = SplitMix64::new(5);
        let mut b = SplitMix64::new(5);
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        assert!(xs.iter().all(|&x| x == b.next_u64()));
        let mut counts = [0usize; 10];
        for _ in 0..100_000 {
            counts[a.below(10) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
        assert_eq!(a.below(0), 0);
        let f = a.next_f64();
        assert!((0.0..1.0).contains(&f));
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
            prop_assert!(Outliers::of(&xs).total() <= xs.len());
        }

        #[test]
        fn median_and_mad_are_shift_and_scale_equivariant(
            xs in samples(), shift in -1e3f64..1e3, scale in 0.01f64..100.0,
        ) {
            let ys: Vec<f64> = xs.iter().map(|x| x * scale + shift).collect();
            prop_assert!((median(&ys) - (median(&xs) * scale + shift)).abs() < 1e-6 * (1.0 + median(&ys).abs()));
            prop_assert!((mad(&ys) - mad(&xs) * scale).abs() < 1e-6 * (1.0 + mad(&ys)));
        }

        #[test]
        fn order_does_not_matter(mut xs in samples(), seed in any::<u64>()) {
            let s = Summary::of(&xs).unwrap();
            SplitMix64::new(seed).shuffle(&mut xs);
            prop_assert_eq!(s, Summary::of(&xs).unwrap());
        }

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

// ---------------------------------------------------------------------------------------
// Three-way comparisons. A ratio's interval is judged against a loss threshold and a noise
// band around 1, and only an interval lying wholly on one side counts: an estimate of 0.50×
// whose interval reaches 0.85× is not a loss, and an interval that reaches outside the
// noise band is not "no effect" either. Everything else is inconclusive — absence of
// evidence is not evidence of no effect (Altman & Bland 1995, BMJ 311:485, "Absence of
// evidence is not evidence of absence"; the equivalence-band reading is Schuirmann's two
// one-sided tests, J. Pharmacokinet. Biopharm. 15:657, 1987).

/// Fewer paired runs than this and no comparison is called: the interval is printed as
/// "indicative (n = 2)" and classed inconclusive. From 3 runs on, the Student-t interval
/// below covers at its stated level (the coverage test in this module checks it at n = 3,
/// 5, 8 and 20), so a large effect can be called from 3 rounds and a small one stays
/// inconclusive because its interval is wide, not because of a rule.
pub const MIN_RUNS_FOR_CI: usize = 3;

/// Rounds an interleaved comparison runs unless asked otherwise: 5 paired rounds give a
/// Student-t interval with 4 degrees of freedom (t = 2.78), which calls a 10 % effect at a
/// 3 % round-to-round spread; 3 rounds (t = 4.30) call only large effects.
pub const DEFAULT_ROUNDS: usize = 5;

/// Intervals from a percentile bootstrap (results files written before the Student-t
/// interval) were labelled indicative below this many runs: such an interval of 3 or 4
/// values can only span their range, whatever confidence is asked for.
pub const BOOTSTRAP_MIN_RUNS: usize = 5;

/// What a ratio's interval says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// The whole interval lies below the loss threshold.
    Loss,
    /// The whole interval lies between the loss threshold and the noise band: a measured
    /// slowdown, smaller than a loss (0.85–0.90 against a 0.80 loss line and a ±5 % band:
    /// 10–15 % slower, precisely measured).
    SmallLoss,
    /// The whole interval lies inside the noise band around 1.
    NoEffect,
    /// The whole interval lies above 1 + the noise band.
    Gain,
    /// Anything else: an interval straddling a threshold, too few runs, no interval.
    Inconclusive,
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Effect::Loss => "loss",
            Effect::SmallLoss => "small loss",
            Effect::NoEffect => "no effect",
            Effect::Gain => "gain",
            Effect::Inconclusive => "inconclusive",
        })
    }
}

/// The lines a ratio is judged against: a loss below `loss_below`, no effect inside
/// `1 ± noise`, a gain above `1 + noise`. A `loss_below` above `1 − noise` is taken as
/// `1 − noise`, so that no interval is both a loss and no effect.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// An interval wholly below this is a loss (0.8 = more than 20 % slower).
    pub loss_below: f64,
    /// Half-width of the band around 1 that counts as no effect (0.05 = ±5 %).
    pub noise: f64,
}

impl Thresholds {
    /// Slowdowns: a loss only when the whole interval is below 0.8×, no effect within ±5 %,
    /// a small loss wholly between the two.
    pub const SLOWDOWN: Thresholds = Thresholds {
        loss_below: 0.8,
        noise: 0.05,
    };
    /// Yields (SMT on ÷ SMT off on the same cores): below 0.95× a loss, above 1.05× a gain,
    /// within ±5 % no effect.
    pub const YIELD: Thresholds = Thresholds {
        loss_below: 0.95,
        noise: 0.05,
    };

    /// Checked thresholds: `noise` in [0, 1), `loss_below` in (0, 1 − noise].
    pub fn new(loss_below: f64, noise: f64) -> Result<Self, String> {
        if !(0.0..1.0).contains(&noise) {
            return Err(format!(
                "noise band {noise} must be at least 0 and below 1 (0.05 = ±5 %)"
            ));
        }
        if !(loss_below > 0.0 && loss_below <= 1.0 - noise) {
            return Err(format!(
                "loss threshold {loss_below} must be above 0 and at most 1 − noise = {}",
                1.0 - noise
            ));
        }
        Ok(Self { loss_below, noise })
    }

    /// The loss threshold actually used: never above the noise band's lower edge.
    pub fn effective_loss_below(&self) -> f64 {
        self.loss_below.min(1.0 - self.noise)
    }
}

/// Classifies the interval `[low, high]` of a ratio. NaN bounds or `low > high` are
/// inconclusive.
pub fn classify(low: f64, high: f64, t: Thresholds) -> Effect {
    if low.is_nan() || high.is_nan() || low > high {
        return Effect::Inconclusive;
    }
    let (lo_band, hi_band) = (1.0 - t.noise, 1.0 + t.noise);
    if high < t.effective_loss_below() {
        Effect::Loss
    } else if low > hi_band {
        Effect::Gain
    } else if low >= lo_band && high <= hi_band {
        Effect::NoEffect
    } else if high < lo_band && low >= t.effective_loss_below() {
        Effect::SmallLoss
    } else {
        Effect::Inconclusive
    }
}

/// How an interval was computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalMethod {
    /// Student-t interval of the mean log ratio, `exp(mean ± t(n−1) · s / √n)`; the
    /// estimate is the geometric mean of the ratios. Exact when the log ratios are normal
    /// (Student 1908); timing ratios are positive and right-skewed, which the log makes
    /// near-symmetric, and heavier tails make it wider, not narrower (coverage test below).
    StudentTLog,
    /// The distribution-free interval of the median between two order statistics, at the
    /// level the binomial distribution gives it (the sign-test interval; Conover 1999,
    /// "Practical Nonparametric Statistics", §3.2): used when a ratio is 0 (a thread that
    /// got nothing), where logs are undefined. Its level is printed as it is, e.g. 75 %
    /// for the range of 3 values.
    OrderStatistic,
    /// Percentile bootstrap of the median (results files written before the Student-t
    /// interval; its level was nominal, not its coverage).
    #[default]
    PercentileBootstrap,
}

/// A ratio with its interval, the number of runs behind it, and its three-way class: what
/// a verdict cites.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The ratio: the geometric mean of the paired ratios ([`IntervalMethod::StudentTLog`])
    /// or their median (the other methods).
    pub estimate: f64,
    /// Lower bound of the interval.
    pub low: f64,
    /// Upper bound of the interval.
    pub high: f64,
    /// The interval's confidence level, e.g. 0.95: the level asked for, or for an
    /// order-statistic interval the level it has.
    pub confidence: f64,
    /// Runs (pairs) behind the interval.
    pub n: usize,
    /// Too few runs for a confidence interval (fewer than [`MIN_RUNS_FOR_CI`], or
    /// [`BOOTSTRAP_MIN_RUNS`] for a bootstrap interval): printed as indicative, never called.
    pub indicative: bool,
    /// The class of the interval against `thresholds` (inconclusive when indicative, or
    /// when an order-statistic interval cannot reach the level asked for).
    pub effect: Effect,
    /// What the interval was judged against.
    pub thresholds: Thresholds,
    /// How the interval was computed.
    #[serde(default)]
    pub method: IntervalMethod,
}

impl Comparison {
    /// From one ratio per pair of runs taken back to back (per round of interleaved runs),
    /// so drift between rounds cancels instead of widening the interval: a Student-t
    /// interval of the mean log ratio at `confidence`, classified against `t`; when a
    /// ratio is 0, the order-statistic interval of the median instead. Ratios that are NaN,
    /// infinite or negative are left out. One ratio gives no interval and is inconclusive;
    /// None when no ratio is usable.
    pub fn of_paired_ratios(ratios: &[f64], t: Thresholds, confidence: f64) -> Option<Self> {
        let xs: Vec<f64> = ratios
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .collect();
        if xs.is_empty() {
            return None;
        }
        let n = xs.len();
        let (method, estimate, low, high, level, reached) = if xs.contains(&0.0) {
            let (low, high, level) = order_statistic_interval(&xs, confidence);
            (
                IntervalMethod::OrderStatistic,
                median(&xs),
                low,
                high,
                level,
                level >= confidence - 1e-12,
            )
        } else {
            let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
            let m = mean(&logs);
            let half = if n < 2 {
                0.0
            } else {
                student_t_quantile(1.0 - (1.0 - confidence) / 2.0, (n - 1) as f64) * stddev(&logs)
                    / (n as f64).sqrt()
            };
            (
                IntervalMethod::StudentTLog,
                m.exp(),
                (m - half).exp(),
                (m + half).exp(),
                confidence,
                true,
            )
        };
        let indicative = n < MIN_RUNS_FOR_CI;
        Some(Self {
            estimate,
            low,
            high,
            confidence: level,
            n,
            indicative,
            effect: if indicative || !reached {
                Effect::Inconclusive
            } else {
                classify(low, high, t)
            },
            thresholds: t,
            method,
        })
    }

    /// From a percentile-bootstrap interval computed elsewhere over `n` runs (results files
    /// written before the Student-t interval, and comparisons that feed no answer).
    pub fn from_ci(ci: Ci, n: usize, t: Thresholds) -> Self {
        let indicative = n < BOOTSTRAP_MIN_RUNS;
        Self {
            estimate: ci.estimate,
            low: ci.low,
            high: ci.high,
            confidence: ci.confidence,
            n,
            indicative,
            effect: if n < 2 || indicative {
                Effect::Inconclusive
            } else {
                classify(ci.low, ci.high, t)
            },
            thresholds: t,
            method: IntervalMethod::PercentileBootstrap,
        }
    }

    /// The standard error of the mean log ratio, for pooling comparisons (a Student-t
    /// interval's half-width on the log scale ÷ its t quantile); None for other methods
    /// and below 2 runs.
    pub fn log_standard_error(&self) -> Option<f64> {
        if self.method != IntervalMethod::StudentTLog || self.n < 2 || self.low <= 0.0 {
            return None;
        }
        let q = student_t_quantile(1.0 - (1.0 - self.confidence) / 2.0, (self.n - 1) as f64);
        Some((self.high / self.low).ln() / (2.0 * q))
    }

    /// What to call the interval: `95 % CI`, `75 % CI` (an order-statistic interval of 3
    /// runs), `indicative (n = 2)`, or `no interval (n = 1)`.
    pub fn interval_label(&self) -> String {
        if self.n < 2 {
            format!("no interval (n = {})", self.n)
        } else if self.indicative {
            format!("indicative (n = {})", self.n)
        } else {
            format!("{} % CI", level_text(self.confidence))
        }
    }

    /// The interval with its label: `95 % CI 1.25–1.37`, `indicative (n = 2) 0.30–0.85`.
    /// The ratio inside a sentence, its interval and class after what it is a ratio of:
    /// `0.50× the others' rate (95 % CI 0.30–0.85: inconclusive)`.
    pub fn ratio_of(&self, of: &str) -> String {
        let of = if of.is_empty() {
            String::new()
        } else {
            format!(" {of}")
        };
        format!(
            "{}×{of} ({}: {})",
            ratio_text(self.estimate),
            self.interval_text(),
            self.effect
        )
    }

    /// As [`Comparison::ratio_of`], with the run count inside the parentheses when the
    /// interval has one: `0.99× of their rate (95 % CI 0.97–1.01, n = 5: no effect)`.
    pub fn ratio_of_n(&self, of: &str) -> String {
        let n = if self.indicative || self.n < 2 {
            String::new()
        } else {
            format!(", n = {}", self.n)
        };
        format!(
            "{}× {of} ({}{n}: {})",
            ratio_text(self.estimate),
            self.interval_text(),
            self.effect
        )
    }

    pub fn interval_text(&self) -> String {
        if self.n < 2 {
            self.interval_label()
        } else {
            format!(
                "{} {}–{}",
                self.interval_label(),
                ratio_text(self.low),
                ratio_text(self.high)
            )
        }
    }
}

/// `1.31× (95 % CI 1.25–1.37, n = 10): gain`; `0.50× (indicative (n = 2) 0.30–0.85):
/// inconclusive`.
impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = if self.indicative || self.n < 2 {
            String::new()
        } else {
            format!(", n = {}", self.n)
        };
        write!(
            f,
            "{}× ({}{n}): {}",
            ratio_text(self.estimate),
            self.interval_text(),
            self.effect
        )
    }
}

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

/// `ln Γ(x)` for x > 0, Lanczos approximation (g = 7, 9 terms; relative error below
/// 1e-15; Press et al., "Numerical Recipes", 3rd ed., §6.1).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The continued fraction of the regularised incomplete beta function, by the modified
/// Lentz method ("Numerical Recipes", 3rd ed., §6.4, `betacf`).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=500 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularised incomplete beta function `I_x(a, b)`.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom:
/// `1 − ½·I_{df/(df+t²)}(df/2, ½)` for t ≥ 0 (Abramowitz & Stegun 26.7.1 with 26.5.27).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    let tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (df may be fractional, as
/// Welch's is), by bisection on [`student_t_cdf`] to 1e-12: 4.303 for p = 0.975 and
/// df = 2, 2.093 for df = 19. NaN outside 0 < p < 1 or for df ≤ 0.
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    // Callers ask for the same few (level, n) pairs many times over (every comparison of
    // a report, the coverage test's 240,000 intervals): remember the last answer.
    thread_local! {
        static LAST: std::cell::Cell<(f64, f64, f64)> =
            const { std::cell::Cell::new((f64::NAN, f64::NAN, f64::NAN)) };
    }
    let (lp, ldf, lq) = LAST.get();
    if lp == p && ldf == df {
        return lq;
    }
    let q = student_t_quantile_uncached(p, df);
    LAST.set((p, df, q));
    q
}

fn student_t_quantile_uncached(p: f64, df: f64) -> f64 {
    let upper = p > 0.5;
    let q = if upper { p } else { 1.0 - p };
    let mut hi = 2.0;
    while student_t_cdf(hi, df) < q && hi < 1e12 {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if student_t_cdf(mid, df) < q {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi.max(1.0) {
            break;
        }
    }
    let x = 0.5 * (lo + hi);
    if upper { x } else { -x }
}

/// A confidence level as a percentage with as few decimals as it needs and never rounded
/// up to 100: `95`, `99.8`, `99.79` (a Bonferroni level such as 1 − 0.05/24 = 99.79 %
/// would otherwise print as "100 % CI", which no interval is).
pub fn level_text(confidence: f64) -> String {
    let p = confidence * 100.0;
    if !p.is_finite() {
        return format!("{p}");
    }
    for d in 0..3 {
        let s = format!("{p:.d$}");
        let back: f64 = s.parse().unwrap_or(f64::NAN);
        if (back - p).abs() < 1e-9 || (d > 0 && back < 100.0 && (back - p).abs() < 0.05) {
            return s;
        }
    }
    // Three decimals, truncated rather than rounded so 99.9996 stays below 100.
    format!("{:.3}", (p * 1000.0).floor() / 1000.0)
}

/// A ratio with two decimals (a 1 % step, finer than any noise band here): `1.31`,
/// `0.50`; `12.3` and `150` above 10.
pub fn ratio_text(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        format!("{x}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod three_way_tests {
    use super::*;
    use proptest::prelude::*;

    const T: Thresholds = Thresholds::SLOWDOWN;

    #[test]
    fn confidence_levels_never_print_as_100() {
        assert_eq!(level_text(0.95), "95");
        assert_eq!(level_text(0.99), "99");
        assert_eq!(level_text(0.975), "97.5");
        // Bonferroni for the worst of 24 and of 1000.
        assert_eq!(level_text(1.0 - 0.05 / 24.0), "99.8");
        assert_eq!(level_text(1.0 - 0.05 / 1000.0), "99.995");
        assert_eq!(level_text(0.999_999_6), "99.999");
        assert_eq!(level_text(1.0), "100");
    }

    #[test]
    fn hand_computed_classes() {
        // Loss only when the whole interval is below 0.8.
        assert_eq!(classify(0.30, 0.70, T), Effect::Loss);
        // The case: 0.50× with CI 0.30–0.85 is not a loss.
        assert_eq!(classify(0.30, 0.85, T), Effect::Inconclusive);
        // Inside ±5 %: no effect; touching the edges still inside.
        assert_eq!(classify(0.96, 1.04, T), Effect::NoEffect);
        assert_eq!(classify(0.95, 1.05, T), Effect::NoEffect);
        // Straddling the band's edge.
        assert_eq!(classify(0.94, 1.02, T), Effect::Inconclusive);
        // Measurably slower but not below the loss line: a small loss, not "too wide to
        // call" (0.87×, 0.85–0.90 is a measured 10–15 % slowdown).
        assert_eq!(classify(0.85, 0.90, T), Effect::SmallLoss);
        // Straddling the loss line or reaching into the band is inconclusive.
        assert_eq!(classify(0.75, 0.90, T), Effect::Inconclusive);
        assert_eq!(classify(0.85, 0.96, T), Effect::Inconclusive);
        // Gain: wholly above 1.05.
        assert_eq!(classify(1.25, 1.37, T), Effect::Gain);
        assert_eq!(classify(1.04, 1.37, T), Effect::Inconclusive);
        assert_eq!(classify(f64::NAN, 1.0, T), Effect::Inconclusive);
        assert_eq!(classify(1.1, 1.0, T), Effect::Inconclusive);
        // Yields: 0.90–0.94 is a loss there (below 0.95), a small loss for slowdowns.
        assert_eq!(classify(0.90, 0.94, Thresholds::YIELD), Effect::Loss);
        assert_eq!(classify(0.90, 0.94, T), Effect::SmallLoss);
        // A loss line above the band's lower edge is clamped to it.
        let odd = Thresholds {
            loss_below: 0.99,
            noise: 0.05,
        };
        assert_eq!(classify(0.96, 0.97, odd), Effect::NoEffect);
        assert_eq!(classify(0.90, 0.94, odd), Effect::Loss);
    }

    #[test]
    fn thresholds_are_checked() {
        assert!(Thresholds::new(0.8, 0.05).is_ok());
        assert!(Thresholds::new(0.99, 0.05).unwrap_err().contains("0.99"));
        assert!(Thresholds::new(0.8, 1.5).unwrap_err().contains("1.5"));
        assert!(Thresholds::new(0.0, 0.05).is_err());
    }

    #[test]
    fn two_runs_are_indicative_three_are_an_interval_and_one_is_none() {
        let c = Comparison::of_paired_ratios(&[1.30, 1.32], Thresholds::YIELD, 0.95).unwrap();
        assert!(c.indicative);
        assert_eq!(c.effect, Effect::Inconclusive, "two runs are never called");
        assert_eq!(c.interval_label(), "indicative (n = 2)");
        // Three tight ratios: a Student-t interval with 2 degrees of freedom, called.
        let c = Comparison::of_paired_ratios(&[1.30, 1.32, 1.31], Thresholds::YIELD, 0.95).unwrap();
        assert!(!c.indicative);
        assert_eq!(c.method, IntervalMethod::StudentTLog);
        assert_eq!(c.effect, Effect::Gain);
        assert_eq!(c.interval_label(), "95 % CI");
        assert_eq!(c.to_string(), "1.31× (95 % CI 1.29–1.34, n = 3): gain");
        let one = Comparison::of_paired_ratios(&[2.0], Thresholds::YIELD, 0.95).unwrap();
        assert_eq!(one.effect, Effect::Inconclusive, "a point is no interval");
        assert_eq!(one.interval_label(), "no interval (n = 1)");
        assert!(Comparison::of_paired_ratios(&[], T, 0.95).is_none());
        assert!(Comparison::of_paired_ratios(&[f64::NAN, f64::INFINITY], T, 0.95).is_none());
        // An interval computed elsewhere (an old file's bootstrap) keeps the old rule:
        // 0.50× with an interval reaching 0.85 from 3 runs is indicative.
        let c = Comparison::from_ci(
            Ci {
                estimate: 0.5,
                low: 0.3,
                high: 0.85,
                confidence: 0.95,
            },
            3,
            T,
        );
        assert_eq!(c.effect, Effect::Inconclusive);
        assert_eq!(c.method, IntervalMethod::PercentileBootstrap);
        assert_eq!(
            c.to_string(),
            "0.50× (indicative (n = 3) 0.30–0.85): inconclusive"
        );
    }

    /// At 5 rounds the percentile bootstrap gave the min–max of the 5 ratios at every
    /// level asked (1.08–1.31 at 95 %, 97.5 % and 99.17 % alike), and min–max of 5 covers
    /// the median only 93.75 % of the time. The interval used now widens with the level.
    #[test]
    fn five_round_intervals_are_not_min_max_and_multiplicity_widens_them() {
        let r = [1.08, 1.15, 1.20, 1.24, 1.31];
        let at = |level| Comparison::of_paired_ratios(&r, Thresholds::YIELD, level).unwrap();
        let (a, b, c) = (at(0.95), at(0.975), at(1.0 - 0.05 / 6.0));
        assert!(a.low > 1.08 && a.high < 1.31, "not the range: {a}");
        assert!(
            b.low < a.low && b.high > a.high,
            "97.5 % wider than 95 %: {b} vs {a}"
        );
        assert!(
            c.low < b.low && c.high > b.high,
            "99.17 % wider again: {c} vs {b}"
        );
        assert_eq!(level_text(c.confidence), "99.2");
        // The old bootstrap, for the record: the same range at every level.
        let boot = |level| bootstrap_median(&r, level, 2000, 13).unwrap();
        assert_eq!((boot(0.95).low, boot(0.95).high), (1.08, 1.31));
        assert_eq!((boot(0.9917).low, boot(0.9917).high), (1.08, 1.31));
    }

    /// A 2× effect is answerable from the 3 rounds of `study --quick` (the perfect-SMT
    /// guest gave a compute interval of 1.64–2.68 and was held back as "only 3 runs").
    #[test]
    fn a_two_fold_yield_from_three_rounds_is_a_gain() {
        let c = Comparison::of_paired_ratios(&[1.61, 1.90, 2.02], Thresholds::YIELD, 0.95).unwrap();
        assert_eq!(c.effect, Effect::Gain, "{c}");
        assert!(c.low > 1.2, "{c}");
        // A small effect from 3 noisy rounds stays inconclusive.
        let c = Comparison::of_paired_ratios(&[0.98, 1.09, 1.12], Thresholds::YIELD, 0.95).unwrap();
        assert_eq!(c.effect, Effect::Inconclusive, "{c}");
    }

    #[test]
    fn student_t_quantiles_match_the_tables() {
        // Abramowitz & Stegun table 26.10 / any statistics table.
        for (p, df, want) in [
            (0.975, 1.0, 12.706_204_736),
            (0.975, 2.0, 4.302_652_730),
            (0.975, 4.0, 2.776_445_105),
            (0.975, 7.0, 2.364_624_252),
            (0.975, 19.0, 2.093_024_054),
            (0.995, 10.0, 3.169_272_673),
            (0.95, 3.0, 2.353_363_435),
            (0.975, 1000.0, 1.962_339_081),
            (0.975, 1e7, 1.959_964_3),
        ] {
            let got = student_t_quantile(p, df);
            assert!(
                (got - want).abs() < 1e-6 * want,
                "t({p}, {df}) = {got}, want {want}"
            );
            assert!((student_t_quantile(1.0 - p, df) + want).abs() < 1e-6 * want);
            assert!(
                (student_t_cdf(want, df) - p).abs() < 1e-7,
                "cdf at t({p}, {df})"
            );
        }
        assert_eq!(student_t_quantile(0.5, 3.0), 0.0);
        assert!(student_t_quantile(1.0, 3.0).is_nan() && student_t_quantile(0.9, 0.0).is_nan());
    }

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
        // A starved thread (ratio 0) takes this interval, labelled at its level, and 3 runs
        // cannot reach 95 %: inconclusive, whatever the values.
        let c = Comparison::of_paired_ratios(&[0.0, 0.05, 0.1], T, 0.95).unwrap();
        assert_eq!(c.method, IntervalMethod::OrderStatistic);
        assert_eq!(c.interval_label(), "75 % CI");
        assert_eq!(c.effect, Effect::Inconclusive);
        let six = [0.0, 0.05, 0.1, 0.1, 0.2, 0.3];
        let c = Comparison::of_paired_ratios(&six, T, 0.95).unwrap();
        assert_eq!(c.interval_label(), "96.9 % CI");
        assert_eq!(c.effect, Effect::Loss);
    }

    /// Draws `n` paired ratios around `truth` under one noise model.
    fn draw(rng: &mut SplitMix64, noise: Noise, truth: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| match noise {
                // Additive normal noise on the ratio itself, 8 % of it.
                Noise::Normal => truth * (1.0 + 0.08 * normal(rng)),
                // Multiplicative: log-normal with σ = 0.08.
                Noise::LogNormal => truth * (0.08 * normal(rng)).exp(),
                // Heavy tails: Student-t with 3 degrees of freedom on the log scale.
                Noise::HeavyTailed => {
                    let chi2: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
                    truth * (0.05 * normal(rng) / (chi2 / 3.0).sqrt()).exp()
                }
            })
            .collect()
    }

    #[derive(Debug, Clone, Copy)]
    enum Noise {
        Normal,
        LogNormal,
        HeavyTailed,
    }

    /// A standard normal deviate (Box–Muller).
    fn normal(rng: &mut SplitMix64) -> f64 {
        let u = 1.0 - rng.next_f64();
        let v = rng.next_f64();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// The interval's stated confidence is its real coverage: for n = 3, 5, 8, 20 and
    /// normal, log-normal and heavy-tailed noise, 10,000 samples each, the Student-t
    /// interval covers the true ratio within ±2 points of the level, at 95 % and at the
    /// Bonferroni level for the lowest of 6 (99.17 %). Prints the table
    /// (`cargo test --lib coverage -- --nocapture`).
    #[test]
    fn intervals_cover_the_true_ratio_at_their_stated_level() {
        let truth = 1.3;
        let mut rng = SplitMix64::new(2026);
        let mut table =
            vec!["method      level   noise         n=3    n=5    n=8    n=20".to_string()];
        let mut off = Vec::new();
        for level in [0.95, 1.0 - 0.05 / 6.0] {
            for noise in [Noise::Normal, Noise::LogNormal, Noise::HeavyTailed] {
                let mut row = format!(
                    "student-t   {:<6}  {:<12}",
                    level_text(level),
                    format!("{noise:?}")
                );
                for n in [3, 5, 8, 20] {
                    let hits = (0..10_000)
                        .filter(|_| {
                            let c = Comparison::of_paired_ratios(
                                &draw(&mut rng, noise, truth, n),
                                Thresholds::YIELD,
                                level,
                            )
                            .unwrap();
                            c.low <= truth && truth <= c.high
                        })
                        .count();
                    let cov = hits as f64 / 10_000.0;
                    row.push_str(&format!("  {:5.1}", cov * 100.0));
                    if (cov - level).abs() > 0.02 {
                        off.push(format!("{noise:?} n={n} at {level}: {cov}"));
                    }
                }
                table.push(row);
            }
        }
        println!(
            "{}",
            table.join(
                "
"
            )
        );
        assert!(
            off.is_empty(),
            "coverage off by more than 2 points: {off:?}"
        );
    }

    /// The same table for the percentile bootstrap the comparisons used before (1,000
    /// samples of each, 1,000 resamples): its stated 95 % is not its coverage at small n.
    /// Ignored: it takes a minute; run with `--ignored --nocapture`.
    #[test]
    #[ignore]
    fn bootstrap_coverage_table() {
        let truth = 1.3;
        let mut rng = SplitMix64::new(2026);
        for noise in [Noise::Normal, Noise::LogNormal, Noise::HeavyTailed] {
            let mut row = format!("bootstrap   95      {:<12}", format!("{noise:?}"));
            for n in [3, 5, 8, 20] {
                let hits = (0..1_000)
                    .filter(|k| {
                        let ci = bootstrap_median(&draw(&mut rng, noise, truth, n), 0.95, 1000, *k)
                            .unwrap();
                        ci.low <= truth && truth <= ci.high
                    })
                    .count();
                row.push_str(&format!("  {:5.1}", hits as f64 / 10.0));
            }
            println!("{row}");
        }
    }

    fn thresholds() -> impl Strategy<Value = Thresholds> {
        (0.0f64..0.3, 0.1f64..1.0).prop_map(|(noise, f)| Thresholds {
            loss_below: f * (1.0 - noise),
            noise,
        })
    }

    proptest! {
        #[test]
        fn an_interval_inside_the_band_is_never_a_loss_or_gain(
            t in thresholds(), a in 0.0f64..1.0, b in 0.0f64..1.0,
        ) {
            let (lo, hi) = (1.0 - t.noise, 1.0 + t.noise);
            let (x, y) = (lo + a * (hi - lo), lo + b * (hi - lo));
            prop_assert_eq!(classify(x.min(y), x.max(y), t), Effect::NoEffect);
        }

        #[test]
        fn classes_match_where_the_interval_lies(
            t in thresholds(), x in 0.0f64..3.0, w in 0.0f64..1.0,
        ) {
            let (low, high) = (x, x + w);
            let e = classify(low, high, t);
            match e {
                Effect::Loss => prop_assert!(high < t.loss_below),
                Effect::SmallLoss => prop_assert!(high < 1.0 - t.noise && low >= t.effective_loss_below()),
                Effect::Gain => prop_assert!(low > 1.0 + t.noise),
                Effect::NoEffect => prop_assert!(low >= 1.0 - t.noise && high <= 1.0 + t.noise),
                Effect::Inconclusive => {}
            }
            // Any interval containing 1 is never a loss or a gain.
            if low <= 1.0 && 1.0 <= high {
                prop_assert!(!matches!(e, Effect::Loss | Effect::Gain));
            }
            // Widening an interval never turns an inconclusive one into a call.
            if e == Effect::Inconclusive {
                prop_assert_eq!(classify(low - 0.1, high + 0.1, t), Effect::Inconclusive);
            }
        }

        #[test]
        fn fewer_than_three_runs_are_indicative(
            xs in prop::collection::vec(0.0f64..2.0, 1..12), level in 0.5f64..0.999,
        ) {
            let c = Comparison::of_paired_ratios(&xs, Thresholds::YIELD, level).unwrap();
            prop_assert_eq!(c.indicative, xs.len() < MIN_RUNS_FOR_CI);
            prop_assert_eq!(c.n, xs.len());
            prop_assert!(c.low <= c.estimate * (1.0 + 1e-12) && c.estimate <= c.high * (1.0 + 1e-12));
            if xs.len() < MIN_RUNS_FOR_CI {
                prop_assert_eq!(c.effect, Effect::Inconclusive);
            }
            // A higher level never narrows the interval.
            let wider = Comparison::of_paired_ratios(&xs, Thresholds::YIELD, (level + 1.0) / 2.0).unwrap();
            prop_assert!(wider.low <= c.low * (1.0 + 1e-12) && wider.high >= c.high * (1.0 - 1e-12));
        }
    }
}
