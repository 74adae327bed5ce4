//! Pooling one ratio across hosts: a random-effects meta-analysis on log ratios. Pure.
//!
//! Each host contributes its log ratio `y` and a within-host variance `v`: the square of
//! the standard error its own Student-t interval on log ratios implies
//! ([`crate::stats::Comparison::log_standard_error`]). Hosts of one machine type are not copies of one machine: firmware,
//! background load and placement differ, so the hosts' true ratios are taken to vary around
//! a type mean with between-host variance τ²:
//! - τ² by DerSimonian & Laird's moment estimator (Controlled Clinical Trials 7:177, 1986);
//! - the mean's interval by Hartung & Knapp (Stat. Med. 20:3875, 2001; Sidik & Jonkman,
//!   Stat. Med. 21:3153, 2002) with t(k − 1) quantiles, which keeps its coverage with few
//!   hosts where the DerSimonian–Laird normal interval is too narrow (IntHout et al., BMC
//!   Med. Res. Methodol. 14:25, 2014); its variance factor is held at no less than 1
//!   (Röver, Knapp & Friede, BMC Med. Res. Methodol. 15:99, 2015), so hosts that agree more
//!   closely than their own intervals predict never narrow it below the fixed-effect one;
//! - heterogeneity as I² = (Q − (k − 1)) / Q, the share of the spread between hosts not
//!   explained by their own noise (Higgins & Thompson, Stat. Med. 21:1539, 2002; about 25 %
//!   low, 50 % moderate, 75 % high: Higgins et al., BMJ 327:557, 2003), beside τ itself;
//! - a prediction interval for one more host's true ratio, μ ± t(k − 2)·√(τ² + SE²)
//!   (Higgins, Thompson & Spiegelhalter, J. R. Stat. Soc. A 172:137, 2009), for k ≥ 3,
//!   and for what that host will *measure*, with its own sampling variance added;
//! - within-host variances estimated from few runs are not taken as known: the hosts'
//!   noise of one run is pooled and no host weighs more than its run count allows (see
//!   `working_variances`; the tests check coverage by simulation at 3–5 runs per host);
//! - outlying hosts by the studentized deleted residual, each host against the pool of the
//!   others (Viechtbauer & Cheung, Res. Synth. Methods 1:112, 2010), beyond a Bonferroni
//!   bound for k hosts.

use crate::stats::normal_quantile;
use crate::stats::student_t_quantile as t_quantile;

/// One host's log ratio, its variance, and the degrees of freedom that variance was
/// estimated with (runs − 1 for a Student-t interval; infinite when known).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub y: f64,
    pub v: f64,
    pub df: f64,
}

/// The variances the pool weighs hosts by. A variance estimated from 2–4 degrees of
/// freedom (3–5 runs) is itself very uncertain: its inverse, the weight, has a heavy upper
/// tail, so a host whose few runs happened to agree dominates the pool, and an interval
/// that treats the variances as known covers too seldom (about 89–93 % for a stated 95 %
/// at 3–5 runs per host, by the simulation below). Hosts of one machine type run the same
/// study on the same CPU, so their within-host noise is pooled (each host's variance of
/// one run, weighted by its degrees of freedom, as in a pooled two-sample variance) and
/// each host is weighed by the larger of its own variance and the pooled one scaled to
/// its run count: a noisy host still counts less, a lucky quiet one no more than its runs
/// allow. With every variance known (infinite degrees of freedom) they are used as given.
fn working_variances(xs: &[Estimate]) -> (Vec<f64>, Option<f64>) {
    let est: Vec<&Estimate> = xs.iter().filter(|e| e.df.is_finite()).collect();
    let df: f64 = est.iter().map(|e| e.df).sum();
    if est.is_empty() || df <= 0.0 {
        return (xs.iter().map(|e| e.v).collect(), None);
    }
    // v = s² / n with n = df + 1: the variance of one run is v·n.
    let s2 = est.iter().map(|e| e.df * e.v * (e.df + 1.0)).sum::<f64>() / df;
    let vs = xs
        .iter()
        .map(|e| {
            if e.df.is_finite() {
                e.v.max(s2 / (e.df + 1.0))
            } else {
                e.v
            }
        })
        .collect();
    (vs, Some(s2))
}

/// The pooled log ratio with its intervals and heterogeneity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pooled {
    /// Hosts pooled.
    pub k: usize,
    /// The random-effects mean, log scale.
    pub mu: f64,
    /// Its Hartung–Knapp standard error (variance factor at least 1).
    pub se: f64,
    /// The interval of the mean, log scale.
    pub low: f64,
    pub high: f64,
    /// Between-host variance (DerSimonian–Laird), log scale.
    pub tau2: f64,
    /// Cochran's Q with k − 1 degrees of freedom.
    pub q: f64,
    /// I², 0–1; None when Q is 0.
    pub i2: Option<f64>,
    /// Where one more host's true ratio is expected, log scale (k ≥ 3).
    pub predict: Option<(f64, f64)>,
    /// Where one more host's *measured* ratio is expected (its own runs' noise added),
    /// log scale (k ≥ 3).
    pub predict_measured: Option<(f64, f64)>,
}

/// τ² by DerSimonian–Laird, Q, and the fixed-effect weights' sums.
fn dl(xs: &[Estimate]) -> (f64, f64) {
    let w: Vec<f64> = xs.iter().map(|e| 1.0 / e.v).collect();
    let sw: f64 = w.iter().sum();
    let sw2: f64 = w.iter().map(|w| w * w).sum();
    let fe = xs.iter().zip(&w).map(|(e, w)| w * e.y).sum::<f64>() / sw;
    let q: f64 = xs.iter().zip(&w).map(|(e, w)| w * (e.y - fe).powi(2)).sum();
    let k = xs.len() as f64;
    let c = sw - sw2 / sw;
    let tau2 = if c > 0.0 {
        ((q - (k - 1.0)) / c).max(0.0)
    } else {
        0.0
    };
    (tau2, q)
}

/// The random-effects mean and its plain (DerSimonian–Laird) standard error for a given τ².
fn re_mean(xs: &[Estimate], tau2: f64) -> (f64, f64, f64) {
    let w: Vec<f64> = xs.iter().map(|e| 1.0 / (e.v + tau2)).collect();
    let sw: f64 = w.iter().sum();
    let mu = xs.iter().zip(&w).map(|(e, w)| w * e.y).sum::<f64>() / sw;
    (mu, (1.0 / sw).sqrt(), sw)
}

/// Pools k ≥ 2 hosts at `confidence`; None with fewer, or when a variance is not positive
/// and finite. Each host's variance enters as `working_variances` gives it.
pub fn random_effects(xs: &[Estimate], confidence: f64) -> Option<Pooled> {
    let k = xs.len();
    if k < 2
        || xs
            .iter()
            .any(|e| !(e.v > 0.0 && e.v.is_finite() && e.y.is_finite()))
    {
        return None;
    }
    let (vs, run_variance) = working_variances(xs);
    let xs: Vec<Estimate> = xs
        .iter()
        .zip(&vs)
        .map(|(e, &v)| Estimate { v, ..*e })
        .collect();
    let xs = &xs[..];
    let (tau2, q) = dl(xs);
    let (mu, _, sw) = re_mean(xs, tau2);
    let w: Vec<f64> = xs.iter().map(|e| 1.0 / (e.v + tau2)).collect();
    let hk = xs
        .iter()
        .zip(&w)
        .map(|(e, w)| w * (e.y - mu).powi(2))
        .sum::<f64>()
        / (k - 1) as f64;
    let se = (hk.max(1.0) / sw).sqrt();
    let p = 0.5 + confidence / 2.0;
    let t = t_quantile(p, (k - 1) as f64);
    let tp = (k >= 3).then(|| t_quantile(p, (k - 2) as f64));
    let predict = tp.map(|tp| {
        let half = tp * (tau2 + se * se).sqrt();
        (mu - half, mu + half)
    });
    // A new host's own measurement adds its sampling variance: the pooled variance of
    // one run over the hosts' median run count, or with known variances their mean.
    let v_new = match run_variance {
        Some(s2) => {
            let mut ns: Vec<f64> = xs
                .iter()
                .map(|e| e.df + 1.0)
                .filter(|n| n.is_finite())
                .collect();
            ns.sort_by(f64::total_cmp);
            s2 / ns[ns.len() / 2]
        }
        None => xs.iter().map(|e| e.v).sum::<f64>() / k as f64,
    };
    let predict_measured = tp.map(|tp| {
        let half = tp * (tau2 + se * se + v_new).sqrt();
        (mu - half, mu + half)
    });
    Some(Pooled {
        k,
        mu,
        se,
        low: mu - t * se,
        high: mu + t * se,
        tau2,
        q,
        i2: (q > 0.0).then(|| ((q - (k - 1) as f64) / q).max(0.0)),
        predict,
        predict_measured,
    })
}

/// Each host's studentized deleted residual: its log ratio against the pool of the other
/// hosts, `(y_i − μ_(−i)) / √(v_i + τ²_(−i) + SE²_(−i))` (DerSimonian–Laird without host
/// i). Empty with fewer than 3 hosts (two others are the fewest that estimate a spread).
pub fn deleted_residuals(xs: &[Estimate]) -> Vec<f64> {
    if xs.len() < 3 {
        return Vec::new();
    }
    let (vs, _) = working_variances(xs);
    let xs: Vec<Estimate> = xs
        .iter()
        .zip(&vs)
        .map(|(e, &v)| Estimate { v, ..*e })
        .collect();
    (0..xs.len())
        .map(|i| {
            let others: Vec<Estimate> = xs
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, e)| *e)
                .collect();
            let (tau2, _) = dl(&others);
            let (mu, se, _) = re_mean(&others, tau2);
            (xs[i].y - mu) / (xs[i].v + tau2 + se * se).sqrt()
        })
        .collect()
}

/// The bound a deleted residual must pass to call one of `k` hosts an outlier: the
/// two-sided 95 % normal bound, Bonferroni-corrected for testing k hosts (2.39 for 3 hosts,
/// 3.34 for 60), so a fleet of agreeing hosts flags none by chance 95 % of the time.
pub fn outlier_bound(k: usize) -> f64 {
    normal_quantile(1.0 - 0.025 / k.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(y: f64, se: f64) -> Estimate {
        Estimate {
            y,
            v: se * se,
            df: f64::INFINITY,
        }
    }

    /// Q, τ² and I² recomputed here step by step from the DerSimonian–Laird formulas.
    #[test]
    fn pooling_matches_a_hand_computed_dersimonian_laird_hartung_knapp() {
        let xs = [
            est(0.10, 0.05),
            est(0.30, 0.05),
            est(0.20, 0.04),
            est(0.05, 0.06),
        ];
        let p = random_effects(&xs, 0.95).unwrap();
        // By hand: w = 400, 400, 625, 277.8; FE mean = 0.17467; Q = Σw(y−FE)².
        let w = [400.0, 400.0, 625.0, 1.0 / 0.0036];
        let sw: f64 = w.iter().sum();
        let fe = (400.0 * 0.10 + 400.0 * 0.30 + 625.0 * 0.20 + w[3] * 0.05) / sw;
        let q: f64 = [0.10, 0.30, 0.20, 0.05]
            .iter()
            .zip(&w)
            .map(|(y, w)| w * (y - fe) * (y - fe))
            .sum();
        assert!((p.q - q).abs() < 1e-9, "{} vs {q}", p.q);
        let c = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
        let tau2 = (q - 3.0) / c;
        assert!((p.tau2 - tau2).abs() < 1e-12);
        assert!((p.i2.unwrap() - (q - 3.0) / q).abs() < 1e-12);
        assert!(p.low < p.mu && p.mu < p.high);
        let (a, b) = p.predict.unwrap();
        assert!(a < p.low && b > p.high, "the prediction interval is wider");
    }

    #[test]
    fn agreeing_hosts_have_no_heterogeneity_and_a_tight_interval() {
        let xs: Vec<Estimate> = (0..40)
            .map(|i| est(0.22 + 0.001 * (i % 3) as f64, 0.03))
            .collect();
        let p = random_effects(&xs, 0.95).unwrap();
        assert_eq!(p.tau2, 0.0);
        assert_eq!(p.i2, Some(0.0));
        // Fixed-effect SE = 0.03/√40 (the variance factor is held at 1).
        assert!((p.se - 0.03 / 40f64.sqrt()).abs() < 1e-12);
        assert!(p.high - p.low < 0.02);
        assert!(deleted_residuals(&xs).iter().all(|r| r.abs() < 1.0));
    }

    #[test]
    fn disagreeing_hosts_widen_the_interval_and_raise_i2() {
        let agree: Vec<Estimate> = (0..6).map(|_| est(0.2, 0.03)).collect();
        let disagree: Vec<Estimate> = [0.0, 0.4, 0.1, 0.3, -0.05, 0.45]
            .iter()
            .map(|&y| est(y, 0.03))
            .collect();
        let a = random_effects(&agree, 0.95).unwrap();
        let d = random_effects(&disagree, 0.95).unwrap();
        assert!(d.i2.unwrap() > 0.9 && d.tau2 > 0.01);
        assert!(d.high - d.low > 5.0 * (a.high - a.low));
    }

    #[test]
    fn an_outlier_stands_out_against_the_others_and_no_one_else_does() {
        let mut xs: Vec<Estimate> = (0..20)
            .map(|i| est(0.22 + 0.01 * ((i % 5) as f64 - 2.0), 0.03))
            .collect();
        xs.push(est((0.7f64).ln(), 0.03));
        let r = deleted_residuals(&xs);
        let bound = outlier_bound(xs.len());
        assert!((bound - normal_quantile(1.0 - 0.025 / 21.0)).abs() < 1e-12);
        assert!(r[20] < -bound, "{}", r[20]);
        assert!(r[..20].iter().all(|x| x.abs() < bound), "{r:?}");
    }

    /// A small deterministic generator (SplitMix64, Steele et al., OOPSLA 2014) and normal
    /// deviates by Box–Muller, for the coverage simulation.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let u = self.next().max(1e-300);
            let v = self.next();
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    /// A host of `n` rounds as its study reports it: the mean log ratio of its rounds and
    /// the Student-t variance of that mean, with n − 1 degrees of freedom.
    fn simulated_host(rng: &mut Rng, theta: f64, sigma: f64, n: usize) -> Estimate {
        let ys: Vec<f64> = (0..n).map(|_| theta + sigma * rng.normal()).collect();
        let m = ys.iter().sum::<f64>() / n as f64;
        let s2 = ys.iter().map(|y| (y - m).powi(2)).sum::<f64>() / (n - 1) as f64;
        Estimate {
            y: m,
            v: s2 / n as f64,
            df: (n - 1) as f64,
        }
    }

    /// Coverage at a stated 95 % with 3–5 rounds per host (variances from 2–4 degrees of
    /// freedom), 6–20 hosts, with and without spread between hosts: the pooled interval
    /// covers the type's true mean, and the measured prediction interval covers one more
    /// host's own measurement, each within a few points of 95 %.
    #[test]
    fn coverage_holds_with_variances_estimated_from_few_rounds() {
        let mut rng = Rng(0x5eed);
        let sims = 1500;
        let mut table = Vec::new();
        for &n in &[3usize, 4, 5] {
            for &k in &[6usize, 12, 20] {
                for &tau in &[0.0, 0.03, 0.08] {
                    let mu = 0.2;
                    let (mut mean_in, mut next_in, mut known_in) = (0, 0, 0);
                    for _ in 0..sims {
                        // Hosts' own noise differs by up to a factor of 2.
                        let xs: Vec<Estimate> = (0..k)
                            .map(|i| {
                                let theta = mu + tau * rng.normal();
                                let sigma = 0.035 + 0.035 * (i % 3) as f64 / 2.0;
                                simulated_host(&mut rng, theta, sigma, n)
                            })
                            .collect();
                        let p = random_effects(&xs, 0.95).unwrap();
                        mean_in += usize::from(p.low <= mu && mu <= p.high);
                        // The same hosts with their variances taken as known.
                        let known: Vec<Estimate> = xs
                            .iter()
                            .map(|e| Estimate {
                                df: f64::INFINITY,
                                ..*e
                            })
                            .collect();
                        let p0 = random_effects(&known, 0.95).unwrap();
                        known_in += usize::from(p0.low <= mu && mu <= p0.high);
                        let theta = mu + tau * rng.normal();
                        let new = simulated_host(&mut rng, theta, 0.0525, n);
                        let (a, b) = p.predict_measured.unwrap();
                        next_in += usize::from(a <= new.y && new.y <= b);
                    }
                    let c = mean_in as f64 / sims as f64;
                    let d = next_in as f64 / sims as f64;
                    table.push((n, k, tau, c, d, known_in as f64 / sims as f64));
                }
            }
        }
        let text: Vec<String> = table
            .iter()
            .map(|(n, k, tau, c, d, o)| {
                format!("n {n} k {k} tau {tau}: mean {c:.3} next {d:.3} (as known: {o:.3})")
            })
            .collect();
        eprintln!("{}", text.join("\n"));
        for (n, k, tau, c, d, _) in &table {
            assert!(
                *c >= 0.935,
                "pooled interval covered {c} at n {n}, k {k}, tau {tau}"
            );
            assert!(
                *d >= 0.925,
                "prediction covered {d} at n {n}, k {k}, tau {tau}"
            );
        }
        // Taking the variances as known is what fell short.
        let worst = table.iter().map(|r| r.5).fold(1.0, f64::min);
        assert!(worst < 0.93, "{worst}");
    }

    #[test]
    fn too_few_hosts_pool_nothing_and_test_nothing() {
        assert_eq!(random_effects(&[est(0.1, 0.1)], 0.95), None);
        assert!(deleted_residuals(&[est(0.1, 0.1), est(0.2, 0.1)]).is_empty());
        assert_eq!(random_effects(&[est(0.1, 0.0), est(0.2, 0.1)], 0.95), None);
        let two = random_effects(&[est(0.1, 0.05), est(0.2, 0.05)], 0.95).unwrap();
        assert_eq!(two.predict, None);
        // t(1) = 12.7: two hosts give a wide interval.
        assert!(two.high - two.low > 1.0);
    }
}
