//! The one vocabulary for what a ratio's interval says: [`Effect`] (loss, small loss, no
//! effect, gain, inconclusive), the [`Thresholds`] it is judged against and [`classify`].
//! Only an interval lying wholly on one side of a line counts: an estimate of 0.50× whose
//! interval reaches 0.85× is not a loss, and an interval that reaches outside the noise
//! band is not "no effect" either; everything else is inconclusive — absence of evidence
//! is not evidence of no effect (Altman & Bland 1995, BMJ 311:485, "Absence of evidence is
//! not evidence of absence"; the equivalence-band reading is Schuirmann's two one-sided
//! tests, J. Pharmacokinet. Biopharm. 15:657, 1987). A band alone, with no separate loss
//! line, is criterion's noise threshold (`src/report.rs`, `noise_threshold`, default 2 %).
//! Pure: the words for an effect are `render`'s.

use serde::{Deserialize, Serialize};

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

    /// A band alone: a change either way is called only when the whole interval clears
    /// `1 ± noise` (criterion's noise threshold), so there is no small loss.
    pub fn band(noise: f64) -> Self {
        Self {
            loss_below: 1.0 - noise,
            noise,
        }
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

/// What a larger value means for the ratio being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Better {
    /// Throughput-like: more is faster.
    Higher,
    /// Latency-like: less is faster.
    Lower,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const T: Thresholds = Thresholds::SLOWDOWN;

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

    }
}
