//! The arithmetic of pair prediction, pure: speed ratios paired by round, a non-negative
//! least-squares fit (Lawson–Hanson), SMiTe-form predictions with intervals, the check
//! against measured pairs and its two baselines.
//!
//! The model is SMiTe's (Zhang, Laurenzano, Mars, Tang, MICRO 2014) written in losses, as
//! SMTcheck writes it (CISA-SKKU): with sᵢ(A) = 1 − Senᵢ(A) (how much A loses beside ruler
//! i) and kᵢ(B) = 1 − Conᵢ(B) (how much ruler i loses beside B),
//!
//! ```text
//! 1 − speed(A | B) = c₀ + Σᵢ cᵢ · sᵢ(A) · kᵢ(B),   every c ≥ 0,
//! ```
//!
//! so a term is large only when A is sensitive to a resource *and* B presses it (in the
//! speed form Senᵢ(A)·Conᵢ(B) is small as soon as either is, and a sensitive A would be
//! predicted to lose beside a B that presses nothing). It is fitted on the rulers' own
//! pairs, cheap training data that needs no user workload.

use super::config::CONFIDENCE;
use super::model::{Check, Driver, FittedModel, Interval, JudgedOver, PairEntry, Profile, Score};
use crate::burn::BurnerKind;
use crate::stats::{self, Comparison, Thresholds};
use std::collections::BTreeMap;

/// A measured speed below this is a pair that matters.
pub const LOSS_BELOW: f64 = 0.9;
/// Fewer scored pairs than this and the check does not judge the model.
pub const MIN_CHECK_PAIRS: usize = 3;
/// A ruler's term below this is not named as a driver of a loss.
pub const DRIVER_MIN: f64 = 0.02;

/// One run: subject `a` on the measured CPU, `b` (or nothing) on the partner CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub round: usize,
    pub a: usize,
    pub b: Option<usize>,
    /// A's speed (ops/s, runs/s or its metric).
    pub a_per_sec: f64,
    /// B's speed over the same window, when it was measured.
    pub b_per_sec: Option<f64>,
    /// Why the run was disturbed while it ran (another task took CPU time from a measured
    /// thread: `engine::disturbance`); None when its records show nothing.
    pub disturbed: Option<String>,
}

/// The resource a ruler presses, for the sentences about a loss.
pub fn resource(k: BurnerKind) -> &'static str {
    match k {
        BurnerKind::Prime => "the integer divider",
        BurnerKind::Int => "the integer ALUs",
        BurnerKind::Mul => "the integer multiplier",
        BurnerKind::Fma(_) => "the FMA units",
        BurnerKind::Pause => "issue slots (PAUSE)",
        BurnerKind::Stream => "memory bandwidth",
        BurnerKind::Chase => "memory latency",
        BurnerKind::L1 => "the L1d load ports",
        BurnerKind::L2 => "the private L2",
        BurnerKind::Scan => "L1/L2 stores",
    }
}

/// Median speed of `x` alone, over the runs not disturbed.
pub fn alone_per_sec(runs: &[Run], x: usize) -> f64 {
    let v: Vec<f64> = runs
        .iter()
        .filter(|r| r.a == x && r.b.is_none() && r.disturbed.is_none())
        .map(|r| r.a_per_sec)
        .collect();
    if v.is_empty() { 0.0 } else { stats::median(&v) }
}

pub use super::config::MIN_ROUNDS;

/// Why a cell has no ratio: how many rounds ran it, and in how many every run did work
/// and none was disturbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unmeasured {
    pub rounds: usize,
    pub with_work: usize,
}

/// The runs left out because they were disturbed while they ran, in run order.
pub fn disturbed_runs(runs: &[Run]) -> Vec<&Run> {
    runs.iter().filter(|r| r.disturbed.is_some()).collect()
}

/// `x`'s speed beside `y` ÷ `x` alone, or None (see [`ratio`]).
pub fn speed_ratio(runs: &[Run], x: usize, y: usize) -> Option<Comparison> {
    ratio(runs, x, y).ok()
}

/// `x`'s speed beside `y` ÷ `x` alone, one ratio per round that has both (runs of one
/// round are taken close together, so drift between rounds cancels), as a Student-t
/// interval on the log ratios at [`CONFIDENCE`] (`stats::Comparison`). A round in which
/// a run did no work (a speed of 0: a ruler that went a report interval without work, a
/// command whose metric could not be read) or was disturbed ([`Run::disturbed`]) says
/// nothing about sharing and is left out;
/// with fewer than [`MIN_ROUNDS`] rounds left the cell is [`Unmeasured`], never a ratio.
pub fn ratio(runs: &[Run], x: usize, y: usize) -> Result<Comparison, Unmeasured> {
    // A disturbed run's speed is kept as NaN: its round then counts as a round without
    // work, left out like one (another task took CPU time from it: one-sided noise that
    // can only slow it, engine::disturbance).
    let speed = |r: &Run, v: f64| if r.disturbed.is_some() { f64::NAN } else { v };
    let mut alone: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut beside: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for r in runs {
        match r.b {
            None if r.a == x => alone
                .entry(r.round)
                .or_default()
                .push(speed(r, r.a_per_sec)),
            Some(b) if r.a == x && b == y => beside
                .entry(r.round)
                .or_default()
                .push(speed(r, r.a_per_sec)),
            // B's speed where it was measured (a ruler beside a command); a command
            // restarted beside another has none, which is no measurement, not no work.
            Some(b) if b == x && r.a == y => {
                if let Some(v) = r.b_per_sec {
                    beside.entry(r.round).or_default().push(speed(r, v))
                }
            }
            _ => {}
        }
    }
    let worked = |v: &[f64]| v.iter().all(|s| s.is_finite() && *s > 0.0);
    let ratios: Vec<f64> = beside
        .iter()
        .filter_map(|(round, v)| {
            let a = alone.get(round)?;
            (worked(a) && worked(v)).then(|| stats::mean(v) / stats::mean(a))
        })
        .collect();
    let why = Unmeasured {
        rounds: beside.len(),
        with_work: ratios.len(),
    };
    if ratios.len() < MIN_ROUNDS {
        return Err(why);
    }
    Comparison::of_paired_ratios(&ratios, Thresholds::SLOWDOWN, CONFIDENCE).ok_or(why)
}

// ---------------------------------------------------------------------------------------
// Non-negative least squares.

/// Solves the least-squares problem on the columns in `cols` by the normal equations
/// (Gaussian elimination with partial pivoting, a tiny ridge when singular); the other
/// entries are 0.
fn least_squares_on(a: &[Vec<f64>], b: &[f64], cols: &[usize], n: usize) -> Vec<f64> {
    let k = cols.len();
    let mut m = vec![vec![0.0; k + 1]; k];
    for (i, &ci) in cols.iter().enumerate() {
        for (j, &cj) in cols.iter().enumerate() {
            m[i][j] = a.iter().map(|row| row[ci] * row[cj]).sum();
        }
        m[i][k] = a.iter().zip(b).map(|(row, y)| row[ci] * y).sum();
    }
    let scale = (0..k)
        .map(|i| m[i][i].abs())
        .fold(0.0, f64::max)
        .max(1e-300);
    for (i, row) in m.iter_mut().enumerate() {
        row[i] += 1e-12 * scale;
    }
    for col in 0..k {
        let piv = (col..k)
            .max_by(|&p, &q| m[p][col].abs().total_cmp(&m[q][col].abs()))
            .unwrap_or(col);
        m.swap(col, piv);
        let d = m[col][col];
        if d.abs() < 1e-300 {
            continue;
        }
        for r in 0..k {
            if r != col {
                let f = m[r][col] / d;
                if f != 0.0 {
                    let pivot_row = m[col].clone();
                    for (x, p) in m[r][col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    let mut x = vec![0.0; n];
    for (i, &ci) in cols.iter().enumerate() {
        x[ci] = if m[i][i].abs() < 1e-300 {
            0.0
        } else {
            m[i][k] / m[i][i]
        };
    }
    x
}

/// The `x ≥ 0` minimising ‖A x − b‖², by Lawson and Hanson's active-set algorithm
/// ("Solving Least Squares Problems", 1974, ch. 23; the algorithm of SciPy's
/// `optimize.nnls`): move the column with the largest gradient into the passive set,
/// solve unconstrained on it, and step back along the segment whenever a passive entry
/// would turn negative. `a` is row-major, every row as long as the first.
pub fn nnls(a: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let n = a.first().map_or(0, Vec::len);
    let mut x = vec![0.0; n];
    if n == 0 || a.len() != b.len() {
        return x;
    }
    let mut passive = vec![false; n];
    let bnorm = b.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
    let tol = 1e-10 * bnorm * n as f64;
    for _ in 0..(3 * n + 10) {
        let resid: Vec<f64> = a
            .iter()
            .zip(b)
            .map(|(row, y)| y - row.iter().zip(&x).map(|(p, q)| p * q).sum::<f64>())
            .collect();
        let w: Vec<f64> = (0..n)
            .map(|j| a.iter().zip(&resid).map(|(row, r)| row[j] * r).sum())
            .collect();
        let Some(j) = (0..n)
            .filter(|&j| !passive[j] && w[j] > tol)
            .max_by(|&p, &q| w[p].total_cmp(&w[q]))
        else {
            break;
        };
        passive[j] = true;
        for _ in 0..(3 * n + 10) {
            let cols: Vec<usize> = (0..n).filter(|&i| passive[i]).collect();
            let z = least_squares_on(a, b, &cols, n);
            if cols.iter().all(|&i| z[i] > 0.0) {
                x = z;
                break;
            }
            let alpha = cols
                .iter()
                .filter(|&&i| z[i] <= 0.0)
                .map(|&i| x[i] / (x[i] - z[i]))
                .fold(f64::INFINITY, f64::min)
                .clamp(0.0, 1.0);
            for i in 0..n {
                x[i] += alpha * (z[i] - x[i]);
                if passive[i] && x[i] <= tol {
                    x[i] = 0.0;
                    passive[i] = false;
                }
            }
        }
    }
    x
}

// ---------------------------------------------------------------------------------------
// Profiles as the model's inputs.

/// The loss side of a profile: per ruler sᵢ (or kᵢ) = max(0, 1 − ratio), and its variance
/// from the ratio's interval (delta method on the log: Var(r) ≈ r²·SE(log r)²).
#[derive(Debug, Clone, PartialEq)]
pub struct Losses {
    pub value: Vec<f64>,
    pub variance: Vec<f64>,
    /// False where the ratio was not measured (its value 0 then stands for nothing).
    pub known: Vec<bool>,
}

impl Losses {
    /// Every entry measured, with these values and variances.
    pub fn known(value: Vec<f64>, variance: Vec<f64>) -> Self {
        let known = vec![true; value.len()];
        Self {
            value,
            variance,
            known,
        }
    }

    pub fn of(ratios: &[Option<Comparison>]) -> Self {
        let value = ratios
            .iter()
            .map(|c| c.map_or(0.0, |c| (1.0 - c.estimate).max(0.0)))
            .collect();
        let variance = ratios
            .iter()
            .map(|c| {
                c.and_then(|c| c.log_standard_error().map(|se| (c.estimate * se).powi(2)))
                    .unwrap_or(0.0)
            })
            .collect();
        let known = ratios.iter().map(Option::is_some).collect();
        Self {
            value,
            variance,
            known,
        }
    }
}

/// The rulers whose term sᵢ(A)·kᵢ(B) is unknown: a factor not measured and the other not
/// measured to be 0 (a product with a known 0 is 0 whatever the other factor).
pub fn unknown_terms(sa: &Losses, kb: &Losses) -> Vec<usize> {
    (0..sa.value.len())
        .filter(|&i| {
            let zero = |l: &Losses| l.known[i] && l.value[i] == 0.0;
            let measured = sa.known[i] && kb.known[i];
            !measured && !zero(sa) && !zero(kb)
        })
        .collect()
}

/// Profile of ruler `i` from the rulers' pair matrix `m[i][j]` (ruler i's speed beside
/// ruler j ÷ alone): its sensitivities are its row, its contentiousness its column.
pub fn ruler_profile(m: &[Vec<Option<Comparison>>], i: usize) -> (Losses, Losses) {
    let sen: Vec<Option<Comparison>> = m[i].clone();
    let con: Vec<Option<Comparison>> = (0..m.len()).map(|j| m[j][i]).collect();
    (Losses::of(&sen), Losses::of(&con))
}

/// The features of pair (A | B): sᵢ(A)·kᵢ(B) per ruler.
fn features(sa: &Losses, kb: &Losses) -> Vec<f64> {
    sa.value.iter().zip(&kb.value).map(|(s, k)| s * k).collect()
}

/// The SMiTe-form model fitted by [`fit`]: c₀ and cᵢ, with its residual error.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub intercept: f64,
    pub coefficients: Vec<f64>,
    pub rows: usize,
    pub residual_sd: f64,
    pub dof: usize,
    pub max_abs_residual: f64,
    pub r_squared: Option<f64>,
}

/// Fits c₀, cᵢ ≥ 0 on every ordered ruler pair (i | j) with a measured ratio, leaving out
/// pairs that involve a ruler in `without`; None with fewer pairs than coefficients + 1
/// (no residual error left to estimate).
pub fn fit(m: &[Vec<Option<Comparison>>], without: &[usize]) -> Option<Fit> {
    let r = m.len();
    let profiles: Vec<(Losses, Losses)> = (0..r).map(|i| ruler_profile(m, i)).collect();
    let mut a = Vec::new();
    let mut y = Vec::new();
    for i in 0..r {
        for j in 0..r {
            if without.contains(&i) || without.contains(&j) {
                continue;
            }
            let Some(c) = m[i][j] else { continue };
            // A row with a term not measured would fit its 0 as a measurement.
            if !unknown_terms(&profiles[i].0, &profiles[j].1).is_empty() {
                continue;
            }
            let mut row = vec![1.0];
            row.extend(features(&profiles[i].0, &profiles[j].1));
            a.push(row);
            y.push(1.0 - c.estimate);
        }
    }
    fit_rows(&a, &y, r)
}

/// The fit over rows `[1, x₁ … x_R]` and losses `y`.
pub fn fit_rows(a: &[Vec<f64>], y: &[f64], rulers: usize) -> Option<Fit> {
    if a.len() < rulers + 2 {
        return None;
    }
    let x = nnls(a, y);
    let pred: Vec<f64> = a
        .iter()
        .map(|row| row.iter().zip(&x).map(|(p, q)| p * q).sum())
        .collect();
    let resid: Vec<f64> = y.iter().zip(&pred).map(|(v, p)| v - p).collect();
    let rss: f64 = resid.iter().map(|e| e * e).sum();
    let active = x.iter().filter(|c| **c > 0.0).count();
    let dof = a.len().saturating_sub(active).max(1);
    let my = stats::mean(y);
    let tss: f64 = y.iter().map(|v| (v - my).powi(2)).sum();
    Some(Fit {
        intercept: x[0],
        coefficients: x[1..].to_vec(),
        rows: a.len(),
        residual_sd: (rss / dof as f64).sqrt(),
        dof,
        max_abs_residual: resid.iter().map(|e| e.abs()).fold(0.0, f64::max),
        r_squared: (tss > 1e-12).then(|| 1.0 - rss / tss),
    })
}

impl Fit {
    /// A's predicted speed beside B with a prediction interval at `confidence` that carries
    /// both the model's residual error (σ² from its training pairs) and the profiles'
    /// uncertainty (Σ cᵢ²·(kᵢ²·Var sᵢ + sᵢ²·Var kᵢ), first order):
    /// estimate ± t(dof)·√(σ² + that). Coefficient uncertainty is not carried.
    pub fn predict(&self, sa: &Losses, kb: &Losses, confidence: f64) -> Interval {
        let x = features(sa, kb);
        let loss: f64 = self.intercept
            + self
                .coefficients
                .iter()
                .zip(&x)
                .map(|(c, v)| c * v)
                .sum::<f64>();
        let var_profile: f64 = self
            .coefficients
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c * c
                    * (kb.value[i].powi(2) * sa.variance[i] + sa.value[i].powi(2) * kb.variance[i])
            })
            .sum();
        let q = stats::student_t_quantile(1.0 - (1.0 - confidence) / 2.0, self.dof as f64);
        let half = q * (self.residual_sd.powi(2) + var_profile).sqrt();
        // A speed is never below 0 (a workload beside another either progresses or
        // stops): a loss above 1 is the linear form extrapolated past its training
        // pairs. The estimate and the low end are clamped to 0; the high end keeps the
        // interval's half-width above the clamped estimate, so a clamped prediction is
        // never narrower than the model's own error ([`Fit::extrapolates`] tells them).
        let raw = 1.0 - loss;
        let estimate = raw.max(0.0);
        Interval {
            estimate,
            low: (raw - half).max(0.0),
            high: estimate + half,
            confidence,
            n: 0,
        }
    }

    /// The rulers whose term this fit weighs (cᵢ > 0) and the pair's profiles leave
    /// unknown ([`unknown_terms`]): a prediction would take the missing loss for 0.
    pub fn missing(&self, sa: &Losses, kb: &Losses) -> Vec<usize> {
        unknown_terms(sa, kb)
            .into_iter()
            .filter(|&i| self.coefficients[i] > 0.0)
            .collect()
    }

    /// True when the predicted loss of A beside B is above 1 (a speed below 0 before
    /// [`Fit::predict`] clamps it): outside anything the rulers' pairs showed.
    pub fn extrapolates(&self, sa: &Losses, kb: &Losses) -> bool {
        let x = features(sa, kb);
        self.intercept
            + self
                .coefficients
                .iter()
                .zip(&x)
                .map(|(c, v)| c * v)
                .sum::<f64>()
            > 1.0
    }

    /// The rulers whose terms make up a large predicted loss, largest first.
    pub fn drivers(&self, sa: &Losses, kb: &Losses, rulers: &[BurnerKind]) -> Vec<Driver> {
        let x = features(sa, kb);
        let mut d: Vec<Driver> = self
            .coefficients
            .iter()
            .zip(&x)
            .zip(rulers)
            .map(|((c, v), k)| Driver {
                ruler: k.to_string(),
                resource: resource(*k).to_string(),
                loss: c * v,
            })
            .filter(|d| d.loss >= DRIVER_MIN)
            .collect();
        d.sort_by(|p, q| q.loss.total_cmp(&p.loss));
        d.truncate(2);
        d
    }

    pub fn model(&self) -> FittedModel {
        FittedModel {
            form: "1 − speed(A|B) = c0 + Σ ci·si(A)·ki(B); si(A) = 1 − A's speed beside ruler i, \
                   ki(B) = 1 − ruler i's speed beside B; every c ≥ 0"
                .into(),
            source: "SMiTe (Zhang, Laurenzano, Mars, Tang, MICRO 2014), in losses as SMTcheck \
                     writes it; fitted by non-negative least squares (Lawson–Hanson) on this \
                     machine's ruler-beside-ruler pairs"
                .into(),
            intercept: self.intercept,
            coefficients: self.coefficients.clone(),
            training_pairs: self.rows,
            residual_sd: self.residual_sd,
            residual_dof: self.dof,
            max_abs_residual: self.max_abs_residual,
            r_squared: self.r_squared,
        }
    }
}

/// A workload's profile as the model's inputs.
pub fn losses(p: &Profile) -> (Losses, Losses) {
    (Losses::of(&p.sensitivity), Losses::of(&p.contentiousness))
}

/// What "the worst single sensitivity" predicts for A beside anything: A's lowest speed
/// beside a ruler.
pub fn worst_sensitivity(p: &Profile) -> Option<f64> {
    p.sensitivity
        .iter()
        .flatten()
        .map(|c| c.estimate)
        .min_by(f64::total_cmp)
}

/// Every ordered pair of `profiles` predicted. A pair whose workloads are rulers is
/// predicted from a fit without those rulers' pairs (leave one workload out), falling
/// back to the full fit where too few pairs would remain (said in `fitted_without`, which
/// is then empty).
pub fn predict_all(
    m: &[Vec<Option<Comparison>>],
    rulers: &[BurnerKind],
    profiles: &[Profile],
) -> Vec<PairEntry> {
    let ruler_index = |p: &Profile| -> Option<usize> {
        (p.kind == "ruler")
            .then(|| rulers.iter().position(|k| k.to_string() == p.workload))
            .flatten()
    };
    let mut cache: BTreeMap<Vec<usize>, Option<Fit>> = BTreeMap::new();
    let full = fit(m, &[]);
    let mut out = Vec::new();
    for pa in profiles {
        for pb in profiles {
            let mut without: Vec<usize> = [ruler_index(pa), ruler_index(pb)]
                .into_iter()
                .flatten()
                .collect();
            without.sort_unstable();
            without.dedup();
            let f = cache
                .entry(without.clone())
                .or_insert_with(|| fit(m, &without))
                .clone();
            let (f, left_out, held_out) = match f {
                Some(f) => (
                    Some(f),
                    without.iter().map(|&i| rulers[i].to_string()).collect(),
                    true,
                ),
                None => (full.clone(), Vec::new(), without.is_empty()),
            };
            let (sa, _) = losses(pa);
            let (_, kb) = losses(pb);
            // A term the fit weighs that rests on a cell not measured: no prediction
            // rather than one that takes the missing loss for 0.
            let missing: Vec<usize> = f.as_ref().map_or(Vec::new(), |f| f.missing(&sa, &kb));
            let not_predicted = (!missing.is_empty()).then(|| {
                let names: Vec<String> = missing.iter().map(|&i| rulers[i].to_string()).collect();
                format!(
                    "{} beside {}: not predicted: {}'s loss beside, or {}'s load on, the {} \
                     ruler{} was not measured, and the model weighs {}",
                    pa.workload,
                    pb.workload,
                    pa.workload,
                    pb.workload,
                    names.join(", "),
                    if names.len() == 1 { "" } else { "s" },
                    if names.len() == 1 { "it" } else { "them" }
                )
            });
            let f = if not_predicted.is_some() { None } else { f };
            let predicted = f.as_ref().map(|f| f.predict(&sa, &kb, CONFIDENCE));
            let extrapolated = f.as_ref().is_some_and(|f| f.extrapolates(&sa, &kb));
            let drivers = match (&f, predicted) {
                (Some(f), Some(p)) if p.estimate < LOSS_BELOW => f.drivers(&sa, &kb, rulers),
                _ => Vec::new(),
            };
            out.push(PairEntry {
                a: pa.workload.clone(),
                b: pb.workload.clone(),
                predicted,
                measured: None,
                error: None,
                worst_sensitivity: worst_sensitivity(pa),
                drivers,
                fitted_without: left_out,
                held_out,
                extrapolated,
                not_predicted,
            });
        }
    }
    out
}

/// The model against the measured pairs, beside "no interference" (1.0) and "the worst
/// single sensitivity"; None when no pair was both measured and predicted.
pub fn check(pairs: &[PairEntry]) -> Option<Check> {
    // (measured, predicted, worst single sensitivity) per scored pair.
    type Scored = (f64, Interval, Option<f64>);
    let both: Vec<Scored> = pairs
        .iter()
        .filter(|p| p.held_out)
        .filter_map(|p| Some((p.measured?.estimate, p.predicted?, p.worst_sensitivity)))
        .collect();
    let in_sample_skipped = pairs
        .iter()
        .filter(|p| !p.held_out && p.measured.is_some() && p.predicted.is_some())
        .count();
    if both.is_empty() {
        return None;
    }
    let score = |name: &str, pred: &dyn Fn(&Scored) -> f64| {
        let errs: Vec<(f64, bool)> = both
            .iter()
            .map(|x| ((pred(x) - x.0).abs(), x.0 < LOSS_BELOW))
            .collect();
        let loss: Vec<f64> = errs.iter().filter(|e| e.1).map(|e| e.0).collect();
        Score {
            predictor: name.into(),
            mean_abs_error: stats::mean(&errs.iter().map(|e| e.0).collect::<Vec<_>>()),
            worst_abs_error: errs.iter().map(|e| e.0).fold(0.0, f64::max),
            loss_pairs_mean_abs_error: (!loss.is_empty()).then(|| stats::mean(&loss)),
        }
    };
    let model = score("model", &|x| x.1.estimate);
    let none = score("no interference", &|_| 1.0);
    let worst = score("worst single sensitivity", &|x| x.2.unwrap_or(1.0));
    // The pairs that lose are the test where at least MIN_CHECK_PAIRS of them lose; with
    // fewer, the verdict would rest on one or two pairs' noise.
    let loss_pairs = both.iter().filter(|x| x.0 < LOSS_BELOW).count();
    let judged_over = if loss_pairs >= MIN_CHECK_PAIRS {
        JudgedOver::LossPairs
    } else {
        JudgedOver::AllPairs
    };
    let key = |s: &Score| match judged_over {
        JudgedOver::LossPairs => s.loss_pairs_mean_abs_error.unwrap_or(s.mean_abs_error),
        JudgedOver::AllPairs => s.mean_abs_error,
    };
    let beats_both = (both.len() >= MIN_CHECK_PAIRS)
        .then(|| key(&model) < key(&none) && key(&model) < key(&worst));
    let covered = both.iter().filter(|x| x.1.contains(x.0)).count();
    Some(Check {
        pairs: both.len(),
        in_sample_skipped,
        loss_pairs,
        coverage: covered as f64 / both.len() as f64,
        confidence: CONFIDENCE,
        scores: vec![model, none, worst],
        beats_both,
        judged_over,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Thresholds;

    fn c(x: f64) -> Option<Comparison> {
        Comparison::of_paired_ratios(&[x * 0.99, x, x * 1.01], Thresholds::SLOWDOWN, 0.9)
    }

    #[test]
    fn nnls_matches_hand_computed_cases() {
        // Unconstrained optimum is non-negative: plain least squares (y = 1 + 2x).
        let a = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.0]];
        let x = nnls(&a, &[1.0, 3.0, 5.0]);
        assert!(
            (x[0] - 1.0).abs() < 1e-9 && (x[1] - 2.0).abs() < 1e-9,
            "{x:?}"
        );
        // y = 3 − x: the unconstrained slope is −1, so NNLS sets it to 0 and the
        // intercept to the mean, 2.
        let x = nnls(&a, &[3.0, 2.0, 1.0]);
        assert!(x[1] == 0.0 && (x[0] - 2.0).abs() < 1e-9, "{x:?}");
        // Lawson & Hanson's kind of case: two correlated columns, one must go to zero.
        let a = vec![vec![1.0, 2.0], vec![2.0, 1.0], vec![1.0, 1.0]];
        let x = nnls(&a, &[-1.0, 2.0, 0.5]);
        assert!(x.iter().all(|v| *v >= 0.0), "{x:?}");
        // KKT: gradient ≤ 0 where x = 0, ≈ 0 where x > 0.
        let r: Vec<f64> = a
            .iter()
            .zip([-1.0, 2.0, 0.5])
            .map(|(row, y)| y - row[0] * x[0] - row[1] * x[1])
            .collect();
        for j in 0..2 {
            let w: f64 = a.iter().zip(&r).map(|(row, e)| row[j] * e).sum();
            if x[j] > 0.0 {
                assert!(w.abs() < 1e-8, "{w}");
            } else {
                assert!(w <= 1e-8, "{w}");
            }
        }
        assert!(nnls(&[], &[]).is_empty());
    }

    #[test]
    fn the_fit_recovers_known_coefficients_and_predicts_with_intervals() {
        // Rows made from 1 − speed = 0.03 + 0.5·x₁ + 0·x₂ + 2·x₃ exactly: recovered.
        let xs = [
            [0.1, 0.0, 0.0],
            [0.0, 0.2, 0.0],
            [0.0, 0.0, 0.1],
            [0.2, 0.1, 0.05],
            [0.05, 0.3, 0.2],
            [0.3, 0.0, 0.15],
        ];
        let a: Vec<Vec<f64>> = xs.iter().map(|x| vec![1.0, x[0], x[1], x[2]]).collect();
        let y: Vec<f64> = xs.iter().map(|x| 0.03 + 0.5 * x[0] + 2.0 * x[2]).collect();
        let f = fit_rows(&a, &y, 3).unwrap();
        assert!((f.intercept - 0.03).abs() < 1e-6, "{f:?}");
        assert!((f.coefficients[0] - 0.5).abs() < 1e-6);
        assert!(f.coefficients[1].abs() < 1e-6);
        assert!((f.coefficients[2] - 2.0).abs() < 1e-6);
        assert!(f.max_abs_residual < 1e-6);
        // A workload that loses 30 % beside ruler 3 next to one that slows ruler 3 by 40 %:
        // 1 − (0.03 + 2·0.3·0.4) = 0.73.
        let sa = Losses::known(vec![0.0, 0.0, 0.3], vec![0.0, 0.0, 0.0004]);
        let kb = Losses::known(vec![0.0, 0.0, 0.4], vec![0.0, 0.0, 0.0004]);
        let p = f.predict(&sa, &kb, 0.9);
        assert!((p.estimate - 0.73).abs() < 1e-5, "{p:?}");
        assert!(p.low < p.estimate && p.estimate < p.high);
        let d = f.drivers(
            &sa,
            &kb,
            &[BurnerKind::Int, BurnerKind::L2, BurnerKind::Stream],
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].resource, "memory bandwidth");
        // Beside a partner that presses nothing only c₀ is lost, whatever A's sensitivity.
        let quiet = Losses::known(vec![0.0; 3], vec![0.0; 3]);
        let q = f.predict(&sa, &quiet, 0.9);
        assert!((q.estimate - 0.97).abs() < 1e-5);
        // Profile uncertainty widens the interval.
        let wide = Losses::known(kb.value.clone(), vec![0.0, 0.0, 0.01]);
        let pw = f.predict(&sa, &wide, 0.9);
        assert!(pw.high - pw.low > p.high - p.low);
        // Too few rows for the coefficients and a residual: no fit.
        assert!(fit_rows(&a[..4], &y[..4], 3).is_none());
    }

    #[test]
    fn a_ruler_matrix_fits_and_leaving_rulers_out_drops_their_pairs() {
        // stream slows stream and chase; int is untouched.
        let v = [[0.98, 0.97, 0.99], [0.97, 0.55, 0.8], [0.99, 0.75, 0.9]];
        let m: Vec<Vec<Option<Comparison>>> = v
            .iter()
            .map(|r| r.iter().map(|&x| c(x)).collect())
            .collect();
        let f = fit(&m, &[]).unwrap();
        assert_eq!(f.rows, 9);
        assert!(f.intercept >= 0.0 && f.coefficients.iter().all(|c| *c >= 0.0));
        assert!(
            fit(&m, &[0]).is_none(),
            "4 pairs cannot fit 4 coefficients and a residual"
        );
        let (s, k) = ruler_profile(&m, 1);
        assert!((s.value[1] - 0.45).abs() < 1e-3 && (k.value[2] - 0.25).abs() < 1e-3);
    }

    #[test]
    fn ratios_pair_each_round_with_its_own_alone_run() {
        let runs = vec![
            Run {
                round: 0,
                a: 0,
                b: None,
                a_per_sec: 100.0,
                b_per_sec: None,
                disturbed: None,
            },
            Run {
                round: 0,
                a: 0,
                b: Some(1),
                a_per_sec: 80.0,
                b_per_sec: Some(45.0),
                disturbed: None,
            },
            Run {
                round: 0,
                a: 1,
                b: None,
                a_per_sec: 50.0,
                b_per_sec: None,
                disturbed: None,
            },
            Run {
                round: 1,
                a: 0,
                b: None,
                a_per_sec: 200.0,
                b_per_sec: None,
                disturbed: None,
            },
            Run {
                round: 1,
                a: 0,
                b: Some(1),
                a_per_sec: 160.0,
                b_per_sec: Some(45.0),
                disturbed: None,
            },
            Run {
                round: 1,
                a: 1,
                b: None,
                a_per_sec: 50.0,
                b_per_sec: None,
                disturbed: None,
            },
        ];
        let r = speed_ratio(&runs, 0, 1).unwrap();
        assert!((r.estimate - 0.8).abs() < 1e-12 && r.n == 2);
        // B's speed over the same window, against B alone.
        let r = speed_ratio(&runs, 1, 0).unwrap();
        assert!((r.estimate - 0.9).abs() < 1e-12);
        assert!(speed_ratio(&runs, 0, 2).is_none());
        assert_eq!(alone_per_sec(&runs, 0), 150.0);
    }

    fn run(round: usize, a: usize, b: Option<usize>, v: f64, w: Option<f64>) -> Run {
        Run {
            round,
            a,
            b,
            a_per_sec: v,
            b_per_sec: w,
            disturbed: None,
        }
    }

    #[test]
    fn a_cell_with_one_round_of_work_is_not_a_measurement() {
        // The shape of a measured run with 1.9 GiB memory rulers: the alone run of two
        // rounds did no work (buffers still being built) and the third did a fifth of
        // its work, so the one ratio left was 5.06 with an interval of 0.00–163025287.
        let runs = vec![
            run(0, 0, None, 0.0, None),
            run(0, 0, Some(1), 101.2, Some(40.0)),
            run(1, 0, None, 20.0, None),
            run(1, 0, Some(1), 101.2, Some(40.0)),
            run(2, 0, None, 0.0, None),
            run(2, 0, Some(1), 101.2, Some(40.0)),
            run(0, 1, None, 50.0, None),
            run(1, 1, None, 50.0, None),
            run(2, 1, None, 0.0, None),
        ];
        assert_eq!(
            ratio(&runs, 0, 1),
            Err(Unmeasured {
                rounds: 3,
                with_work: 1
            })
        );
        assert!(speed_ratio(&runs, 0, 1).is_none());
        // B's side: two rounds where both B alone and B beside A did work: a ratio.
        let r = ratio(&runs, 1, 0).unwrap();
        assert_eq!(r.n, 2);
        assert!((r.estimate - 0.8).abs() < 1e-12);
        // A partner that did no work over the window leaves its round out too; a partner
        // whose speed was not measured (a command restarted beside another) is no round.
        let runs = vec![
            run(0, 0, None, 100.0, None),
            run(0, 0, Some(1), 80.0, Some(0.0)),
            run(1, 0, None, 100.0, None),
            run(1, 0, Some(1), 80.0, None),
            run(0, 1, None, 50.0, None),
            run(1, 1, None, 50.0, None),
        ];
        assert_eq!(
            ratio(&runs, 1, 0),
            Err(Unmeasured {
                rounds: 1,
                with_work: 0
            })
        );
        // Two commands, each measured in front of the other: both ratios.
        let runs = vec![
            run(0, 0, None, 2.0, None),
            run(0, 1, None, 4.0, None),
            run(0, 0, Some(1), 1.0, None),
            run(0, 1, Some(0), 3.0, None),
            run(1, 0, None, 2.0, None),
            run(1, 1, None, 4.0, None),
            run(1, 0, Some(1), 1.0, None),
            run(1, 1, Some(0), 3.0, None),
        ];
        assert!((ratio(&runs, 0, 1).unwrap().estimate - 0.5).abs() < 1e-12);
        assert!((ratio(&runs, 1, 0).unwrap().estimate - 0.75).abs() < 1e-12);
        assert_eq!(ratio(&runs, 0, 1).unwrap().n, 2);
    }

    #[test]
    fn a_round_disturbed_while_it_ran_is_left_out_with_its_reason() {
        // Three rounds of A beside B at 0.80 of A alone; in round 2 another task took
        // CPU time from A's thread and A ran at half its speed there.
        let mut runs = Vec::new();
        for round in 0..3 {
            runs.push(run(round, 0, None, 100.0, None));
            runs.push(run(round, 1, None, 50.0, None));
            runs.push(run(round, 0, Some(1), 80.0, Some(45.0)));
        }
        runs[5].a_per_sec = 40.0;
        runs[5].disturbed =
            Some("thread 0 on CPU 0 was kept off its CPU by other work (61 % of the run on a CPU, preempted 412 times)".into());
        let r = ratio(&runs, 0, 1).unwrap();
        assert_eq!(r.n, 2, "{r:?}");
        assert!((r.estimate - 0.8).abs() < 1e-12, "{r:?}");
        // Its partner's side of the same run is left out too.
        assert_eq!(ratio(&runs, 1, 0).unwrap().n, 2);
        // Each left-out run with its round and reason.
        let d = disturbed_runs(&runs);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].round, d[0].a, d[0].b), (1, 0, Some(1)));
        assert!(
            d[0].disturbed
                .as_deref()
                .unwrap()
                .contains("kept off its CPU")
        );
        // A disturbed alone run leaves its round out of every ratio against it.
        runs[5].disturbed = None;
        runs[5].a_per_sec = 80.0;
        runs[3].disturbed =
            Some("the hypervisor took 12 % of its CPUs' time while it ran (steal)".into());
        assert_eq!(ratio(&runs, 0, 1).unwrap().n, 2);
        // With only one clean round left the cell is not measured, and says why; the
        // speed alone is the clean runs'.
        runs[0].disturbed = Some("steal".into());
        runs[0].a_per_sec = 10.0;
        runs[3].a_per_sec = 10.0;
        assert_eq!(alone_per_sec(&runs, 0), 100.0);
        assert_eq!(
            ratio(&runs, 0, 1),
            Err(Unmeasured {
                rounds: 3,
                with_work: 1
            })
        );
    }

    #[test]
    fn a_cell_not_measured_is_never_taken_for_no_loss() {
        // stream beside stream (ruler 3 beside ruler 3) was refused. Before, its missing
        // loss counted as 0: stream looked insensitive to stream and every prediction
        // that needs that term said "no loss" with the full confidence of the fit.
        let v = [
            [0.98, 0.97, 0.95, 0.99],
            [0.96, 0.8, 0.9, 0.85],
            [0.95, 0.9, 0.7, 0.8],
            [0.99, 0.85, 0.75, 0.5],
        ];
        let mut m: Vec<Vec<Option<Comparison>>> = v
            .iter()
            .map(|r| r.iter().map(|&x| c(x)).collect())
            .collect();
        m[3][3] = None;
        let (s3, k3) = ruler_profile(&m, 3);
        assert!(!s3.known[3] && !k3.known[3]);
        assert_eq!(unknown_terms(&s3, &k3), [3]);
        // A known 0 on either side makes the term 0 whatever the other is.
        let zero = Losses::known(vec![0.0; 4], vec![0.0; 4]);
        assert!(unknown_terms(&s3, &zero).is_empty());
        // 15 measured pairs; the 6 others with stream on either side rest on the missing
        // cell: 9 rows.
        let f = fit(&m, &[]).unwrap();
        assert_eq!(f.rows, 9);
        let profile = |name: &str, i: usize| Profile {
            workload: name.into(),
            kind: "command".into(),
            describe: String::new(),
            unit: String::new(),
            alone_per_sec: 1.0,
            sensitivity: m[i].clone(),
            contentiousness: (0..4).map(|j| m[j][i]).collect(),
            fixed_duration: None,
        };
        let rulers = [
            BurnerKind::Int,
            BurnerKind::L2,
            BurnerKind::Chase,
            BurnerKind::Stream,
        ];
        let ps = [profile("a", 1), profile("b", 3)];
        let pairs = predict_all(&m, &rulers, &ps);
        let bb = pairs.iter().find(|p| p.a == "b" && p.b == "b").unwrap();
        if f.coefficients[3] > 0.0 {
            assert!(bb.predicted.is_none(), "{bb:?}");
            assert!(
                bb.not_predicted.as_ref().unwrap().contains("stream ruler"),
                "{bb:?}"
            );
        } else {
            assert!(bb.predicted.is_some() && bb.not_predicted.is_none());
        }
        // A fit that weighs the stream term leaves b beside b unpredicted.
        let weighs = Fit {
            coefficients: vec![0.0, 0.0, 0.0, 1.0],
            ..f.clone()
        };
        let (sb, kb) = losses(&ps[1]);
        assert_eq!(weighs.missing(&sb, &kb), [3]);
        let (sa, ka) = losses(&ps[0]);
        assert!(weighs.missing(&sa, &ka).is_empty());
        // a beside a needs no missing cell.
        let aa = pairs.iter().find(|p| p.a == "a" && p.b == "a").unwrap();
        assert!(
            aa.predicted.is_some() && aa.not_predicted.is_none(),
            "{aa:?}"
        );
    }

    #[test]
    fn a_prediction_is_never_a_negative_speed() {
        // A fit on absurd cells predicted −2.54: a loss of 3.54. Clamped to 0, with an
        // interval that starts at 0 and keeps the model's half-width above it.
        let f = Fit {
            intercept: 0.04,
            coefficients: vec![14.0],
            rows: 20,
            residual_sd: 0.1,
            dof: 18,
            max_abs_residual: 0.2,
            r_squared: Some(0.04),
        };
        let sa = Losses::known(vec![0.5], vec![0.0]);
        let kb = Losses::known(vec![0.5], vec![0.0]);
        let p = f.predict(&sa, &kb, 0.9);
        assert_eq!(p.estimate, 0.0, "{p:?}");
        assert_eq!(p.low, 0.0);
        assert!(p.high > 0.1 && p.high < 0.3, "{p:?}");
        assert!(f.extrapolates(&sa, &kb));
        let mild = Losses::known(vec![0.01], vec![0.0]);
        let q = f.predict(&mild, &kb, 0.9);
        assert!(q.estimate > 0.0 && !f.extrapolates(&mild, &kb), "{q:?}");
        assert!(q.low <= q.estimate && q.estimate <= q.high);
    }

    fn entry(measured: f64, predicted: f64, worst: f64) -> PairEntry {
        let i = |x: f64| Interval {
            estimate: x,
            low: x - 0.05,
            high: x + 0.05,
            confidence: 0.9,
            n: 3,
        };
        PairEntry {
            a: "a".into(),
            b: "b".into(),
            predicted: Some(i(predicted)),
            measured: Some(i(measured)),
            error: None,
            worst_sensitivity: Some(worst),
            drivers: Vec::new(),
            fitted_without: Vec::new(),
            held_out: true,
            extrapolated: false,
            not_predicted: None,
        }
    }

    #[test]
    fn the_check_scores_the_model_against_both_baselines() {
        let pairs = vec![
            entry(0.6, 0.62, 0.5),
            entry(1.0, 0.98, 0.5),
            entry(0.8, 0.9, 0.7),
        ];
        let c = check(&pairs).unwrap();
        assert_eq!((c.pairs, c.loss_pairs), (3, 2));
        let m = &c.scores[0];
        assert!((m.mean_abs_error - (0.02 + 0.02 + 0.1) / 3.0).abs() < 1e-12);
        assert!((m.loss_pairs_mean_abs_error.unwrap() - 0.06).abs() < 1e-12);
        assert!((c.scores[1].loss_pairs_mean_abs_error.unwrap() - 0.3).abs() < 1e-12);
        assert_eq!(c.beats_both, Some(true));
        assert!((c.coverage - 2.0 / 3.0).abs() < 1e-12);
        // A model no better than "no interference" says so.
        let bad = vec![
            entry(0.6, 1.0, 0.6),
            entry(0.8, 1.0, 0.8),
            entry(0.7, 1.0, 0.7),
        ];
        assert_eq!(check(&bad).unwrap().beats_both, Some(false));
        // Two pairs are too few to judge.
        assert_eq!(check(&bad[..2]).unwrap().beats_both, None);
        assert!(check(&[]).is_none());
    }

    #[test]
    fn one_losing_pair_is_too_few_to_judge_the_model_where_it_matters() {
        // An acceptance run: 81 ordered pairs scored out of sample, one of them below 0.90
        // (stream beside int, measured 0.897, predicted 0.898). The model was judged on that
        // one pair alone, where the worst single sensitivity happened to hit it exactly.
        let mut pairs = vec![entry(0.897, 0.898, 0.897)];
        pairs.extend((0..80).map(|_| entry(0.98, 0.975, 0.9)));
        let c = check(&pairs).unwrap();
        assert_eq!((c.pairs, c.loss_pairs), (81, 1));
        assert_eq!(c.beats_both, Some(true), "{c:?}");
        assert_eq!(c.judged_over, JudgedOver::AllPairs);
        // Three pairs that lose are enough, and there the model is worse than the worst
        // single sensitivity.
        let mut pairs = vec![
            entry(0.6, 0.8, 0.62),
            entry(0.7, 0.85, 0.7),
            entry(0.8, 0.95, 0.78),
        ];
        pairs.extend((0..80).map(|_| entry(0.98, 0.975, 0.9)));
        let c = check(&pairs).unwrap();
        assert_eq!(c.loss_pairs, 3);
        assert_eq!(c.beats_both, Some(false), "{c:?}");
        assert_eq!(c.judged_over, JudgedOver::LossPairs);
    }
}
