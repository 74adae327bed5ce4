//! The intervals' stated level checked against their coverage by simulation: paired
//! ratios drawn around a known truth under normal, log-normal and heavy-tailed (Student-t,
//! 3 degrees of freedom) noise, normal deviates by Box–Muller (Box & Muller 1958, Ann.
//! Math. Statist. 29:610). Tests only.

use super::*;

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
    let mut table = vec!["method      level   noise         n=3    n=5    n=8    n=20".to_string()];
    let mut off = Vec::new();
    for level in [0.95, 1.0 - 0.05 / 6.0] {
        for noise in [Noise::Normal, Noise::LogNormal, Noise::HeavyTailed] {
            let mut row = format!(
                "student-t   {:<6.2}  {:<12}",
                level * 100.0,
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
                    let ci =
                        bootstrap_median(&draw(&mut rng, noise, truth, n), 0.95, 1000, *k).unwrap();
                    ci.low <= truth && truth <= ci.high
                })
                .count();
            row.push_str(&format!("  {:5.1}", hits as f64 / 10.0));
        }
        println!("{row}");
    }
}
