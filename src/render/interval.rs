//! The words for `stats`' numbers: a confidence level (`95`, `99.2`, never `100`), a
//! ratio's digits, an interval's label (`95 % CI`, `indicative (n = 2)`), an effect's name
//! (`no effect`), and a comparison in a sentence. `stats` returns numbers and enums; every
//! sentence about them is written here, so that a printed interval always states its own
//! level. The methods on [`Comparison`] below are an `impl` block of `stats`' type kept in
//! `render` (Rust allows an inherent `impl` anywhere in the defining crate) so that no
//! caller changes where the words moved.

use crate::stats::{Ci, Comparison, Effect};

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

/// The label of an interval at `confidence`, written as [`Comparison::interval_kind`]
/// writes it, so that one report spells every level alike: `95 % CI`, `99.2 % CI`.
pub fn ci_label(confidence: f64) -> String {
    format!("{} % CI", level_text(confidence))
}

/// A bootstrap ratio with its interval at the interval's own level, or with the reason it
/// has none (fewer than three runs): `0.52× (95 % CI 0.48–0.55)`, `1.10× (90 % CI 1.05–1.15)`.
pub fn ci_with_runs(c: &Ci, runs: usize) -> String {
    if runs < 3 {
        format!(
            "{:.2}× ({}: too few for a confidence interval, use --repeat 3 or more)",
            c.estimate,
            super::count(runs, "run")
        )
    } else {
        format!(
            "{:.2}× ({} {:.2}–{:.2})",
            c.estimate,
            ci_label(c.confidence),
            c.low,
            c.high
        )
    }
}

/// `loss`, `small loss`, `no effect`, `gain`, `inconclusive`.
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

impl Comparison {
    /// What to call the interval: `95 % CI`, `75 % CI` (an order-statistic interval of 3
    /// runs), `indicative (n = 2)`, or `no interval (n = 1)`.
    pub fn interval_label(&self) -> String {
        if self.n < 2 || self.indicative {
            format!("{} (n = {})", self.interval_kind(), self.n)
        } else {
            self.interval_kind()
        }
    }

    /// The interval's kind without its run count, for a table that shows the count in a
    /// column of its own: `95 % CI`, `indicative`, `no interval`.
    pub fn interval_kind(&self) -> String {
        if self.n < 2 {
            "no interval".into()
        } else if self.indicative {
            "indicative".into()
        } else {
            format!("{} % CI", level_text(self.confidence))
        }
    }

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

    /// The interval with its label: `95 % CI 1.25–1.37`, `indicative (n = 2) 0.30–0.85`.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{IntervalMethod, Thresholds};

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

    /// Every printed interval states its own level: a 90 % and a 99.2 % interval (a
    /// Bonferroni level, 1 − 0.05/6) are not printed as 95 %.
    #[test]
    fn intervals_print_their_own_level() {
        let at = |confidence| Ci {
            estimate: 1.10,
            low: 1.05,
            high: 1.15,
            confidence,
        };
        assert_eq!(ci_with_runs(&at(0.95), 5), "1.10× (95 % CI 1.05–1.15)");
        assert_eq!(ci_with_runs(&at(0.90), 5), "1.10× (90 % CI 1.05–1.15)");
        assert_eq!(
            ci_with_runs(&at(1.0 - 0.05 / 6.0), 5),
            "1.10× (99.2 % CI 1.05–1.15)"
        );
        assert!(ci_with_runs(&at(0.90), 2).contains("2 runs: too few"));
        let r = [1.08, 1.15, 1.20, 1.24, 1.31];
        for (level, label) in [(0.90, "90 % CI"), (1.0 - 0.05 / 6.0, "99.2 % CI")] {
            let c = Comparison::of_paired_ratios(&r, Thresholds::YIELD, level).unwrap();
            assert_eq!(c.interval_label(), label);
            assert!(c.to_string().contains(label), "{c}");
            assert!(c.ratio_of("x").contains(label));
            assert!(c.ratio_of_n("x").contains(label));
        }
    }

    #[test]
    fn labels_say_how_many_runs_and_which_interval() {
        let c = Comparison::of_paired_ratios(&[1.30, 1.32], Thresholds::YIELD, 0.95).unwrap();
        assert_eq!(c.interval_label(), "indicative (n = 2)");
        let c = Comparison::of_paired_ratios(&[1.30, 1.32, 1.31], Thresholds::YIELD, 0.95).unwrap();
        assert_eq!(c.interval_label(), "95 % CI");
        assert_eq!(c.to_string(), "1.31× (95 % CI 1.29–1.34, n = 3): gain");
        assert_eq!(
            c.ratio_of_n("of their rate"),
            "1.31× of their rate (95 % CI 1.29–1.34, n = 3: gain)"
        );
        let one = Comparison::of_paired_ratios(&[2.0], Thresholds::YIELD, 0.95).unwrap();
        assert_eq!(one.interval_label(), "no interval (n = 1)");
        let old = Comparison::from_ci(
            Ci {
                estimate: 0.5,
                low: 0.3,
                high: 0.85,
                confidence: 0.95,
            },
            3,
            Thresholds::SLOWDOWN,
        );
        assert_eq!(
            old.to_string(),
            "0.50× (indicative (n = 3) 0.30–0.85): inconclusive"
        );
        assert_eq!(
            old.ratio_of("the others' rate"),
            "0.50× the others' rate (indicative (n = 3) 0.30–0.85: inconclusive)"
        );
        // An order-statistic interval is labelled at the level it has.
        let c =
            Comparison::of_paired_ratios(&[0.0, 0.05, 0.1], Thresholds::SLOWDOWN, 0.95).unwrap();
        assert_eq!(c.method, IntervalMethod::OrderStatistic);
        assert_eq!(c.interval_label(), "75 % CI");
        let six = [0.0, 0.05, 0.1, 0.1, 0.2, 0.3];
        let c = Comparison::of_paired_ratios(&six, Thresholds::SLOWDOWN, 0.95).unwrap();
        assert_eq!(c.interval_label(), "96.9 % CI");
    }

    #[test]
    fn effects_and_ratios_in_words() {
        assert_eq!(Effect::SmallLoss.to_string(), "small loss");
        assert_eq!(Effect::NoEffect.to_string(), "no effect");
        assert_eq!(ratio_text(1.314), "1.31");
        assert_eq!(ratio_text(12.34), "12.3");
        assert_eq!(ratio_text(150.4), "150");
        assert_eq!(ratio_text(f64::NAN), "NaN");
    }
}
