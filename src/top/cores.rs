//! Per-core utilisation from per-CPU busy shares, and the capacity left (pure).
//!
//! `/proc/stat` counts time per logical CPU, so a core's own figures can only be bounded:
//! with sibling busy shares b₁…bₙ (S = Σbᵢ, M = max bᵢ) over an interval,
//! - time with at least one sibling busy lies in [M, min(1, S)]: equal to M when the
//!   siblings' busy periods nest, to min(1, S) when they never overlap;
//! - time with two or more busy lies in [max(0, (S − 1)/(n − 1), b₍₁₎ + b₍₂₎ − 1),
//!   min(1, S − M)], b₍₁₎ and b₍₂₎ the two largest shares; for two siblings that is
//!   [max(0, b₁ + b₂ − 1), min(b₁, b₂)].
//!
//! A traced interval gives the exact split into idle, one busy and two or more busy.
//!
//! Capacity in *cores' worth*: with SMT yield Y (a core's throughput with both siblings busy
//! over one sibling alone), one busy thread uses 1/Y of its core and two or more use all of
//! it, so a core uses T₂ + (T₁ − T₂)/Y of itself, with T₁ = time at least one busy and
//! T₂ = time two or more busy. That rises with T₁ and T₂, so the bounds above bound it.
//! Seen this way a machine at "50 % CPU" with one busy thread per core (the scheduler's
//! preference: it spreads over idle cores first, kernel/sched/fair.c select_idle_core) has
//! used 1/Y of every core: 80 % at Y = 1.25.

use serde::Serialize;

/// Bounds on one core's time, shares of the interval (0–1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bounds {
    /// At least one sibling busy: lower and upper bound.
    pub busy_min: f64,
    pub busy_max: f64,
    /// Two or more siblings busy: lower and upper bound.
    pub both_min: f64,
    pub both_max: f64,
}

/// The bounds from the siblings' busy shares (each clamped to 0–1).
pub fn bounds(busy: &[f64]) -> Bounds {
    let b: Vec<f64> = busy.iter().map(|x| x.clamp(0.0, 1.0)).collect();
    let sum: f64 = b.iter().sum();
    let max = b.iter().copied().fold(0.0, f64::max);
    let n = b.len();
    if n <= 1 {
        return Bounds {
            busy_min: max,
            busy_max: max,
            both_min: 0.0,
            both_max: 0.0,
        };
    }
    let mut sorted = b.clone();
    sorted.sort_by(|x, y| y.total_cmp(x));
    Bounds {
        busy_min: max,
        busy_max: sum.min(1.0),
        both_min: ((sum - 1.0) / (n as f64 - 1.0))
            .max(sorted[0] + sorted[1] - 1.0)
            .max(0.0),
        both_max: (sum - max).min(1.0),
    }
}

/// A core's traced time, shares of the interval (they sum to 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Split {
    pub idle: f64,
    /// Exactly one sibling busy.
    pub one: f64,
    /// Two or more siblings busy.
    pub both: f64,
}

/// The share of a core used, in cores' worth (0–1), from time with at least one sibling
/// busy (`busy`) and with two or more (`both`), at yield `y` (taken as at least 1: below 1
/// a second thread adds nothing, and a core is full with one).
pub fn used(busy: f64, both: f64, y: f64) -> f64 {
    let y = y.max(1.0);
    let both = both.min(busy);
    (both + (busy - both) / y).clamp(0.0, 1.0)
}

/// The least and most of a core used, from its bounds: least with busy periods nested as
/// far as the sums allow, most with them spread out.
pub fn used_range(b: &Bounds, n: usize, sum: f64, y: f64) -> (f64, f64) {
    if n <= 1 {
        return (b.busy_min, b.busy_max);
    }
    // Least: T₁ = M, and T₂ as small as S − M allows: (S − M)/(n − 1).
    let lo_both = ((sum - b.busy_min) / (n as f64 - 1.0))
        .max(b.both_min)
        .min(b.both_max);
    let lo = used(b.busy_min, lo_both, y);
    // Most: T₁ = min(1, S), and T₂ as large as what is left: S − T₁.
    let hi_both = (sum - b.busy_max).max(b.both_min).min(b.both_max);
    let hi = used(b.busy_max, hi_both, y);
    (lo.min(hi), lo.max(hi))
}

/// Where the yield used for headroom comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Yield {
    /// Throughput of a core with both siblings busy ÷ one sibling alone.
    pub value: f64,
    /// `assumed`, or the file it was read from.
    pub source: String,
    /// Why this value, for people.
    pub note: String,
}

/// The yield assumed without `--yield`.
pub const ASSUMED_YIELD: f64 = 1.25;

impl Yield {
    /// 1.25: Intel reported up to 30 % more throughput from Hyper-Threading on server
    /// benchmarks (Marr et al., "Hyper-Threading Technology Architecture and
    /// Microarchitecture", Intel Technology Journal 6(1), 2002); workloads range from
    /// below 1 to about 1.6.
    pub fn assumed() -> Self {
        Yield {
            value: ASSUMED_YIELD,
            source: "assumed".into(),
            note: "assumed 1.25: Intel reported up to 30 % more throughput from Hyper-Threading \
                   on server benchmarks (Marr et al., Intel Technology Journal, Q1 2002); \
                   measure this machine's with `smtlab yield` and pass --yield FILE"
                .into(),
        }
    }
}

/// Reads the yield from a JSON file: an object with a top-level number `smt_yield`
/// (between 0.5 and 2). Errors name the file and what is expected.
pub fn yield_from_json(path: &std::path::Path, text: &str) -> Result<Yield, String> {
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("--yield {}: not JSON ({e})", path.display()))?;
    let y = v
        .get("smt_yield")
        .and_then(serde_json::Value::as_f64)
        .or_else(|| median_ruler_yield(&v))
        .ok_or_else(|| {
            format!(
                "--yield {}: expected `smtlab yield --json` output, a study's results.json with \
             a yield section, or a JSON object with a top-level number `smt_yield` (e.g. \
             {{\"smt_yield\": 1.18}}): the throughput of a core with both siblings busy ÷ one \
             sibling alone",
                path.display()
            )
        })?;
    if !(0.5..=2.0).contains(&y) {
        return Err(format!(
            "--yield {}: smt_yield {y} is outside 0.5–2 (two threads on a core give between \
             half and twice one thread's throughput)",
            path.display()
        ));
    }
    Ok(Yield {
        value: y,
        source: path.display().to_string(),
        note: if y < 1.0 {
            format!(
                "measured {y:.2} (from {}): a second thread costs throughput, so a core counts \
                 as full with one",
                path.display()
            )
        } else {
            format!("measured {y:.2} (from {})", path.display())
        },
    })
}

/// The median SMT yield of the rulers in `smtlab yield --json` output (`workloads`) or in
/// a study's results.json (`smt_yield.result.workloads`); every workload's when no ruler
/// has one. None when the file holds no yield.
fn median_ruler_yield(v: &serde_json::Value) -> Option<f64> {
    let workloads = v
        .get("workloads")
        .or_else(|| v.get("smt_yield")?.get("result")?.get("workloads"))?
        .as_array()?;
    let estimate = |w: &serde_json::Value| {
        w.get("smt_yield")?
            .get("comparison")?
            .get("estimate")?
            .as_f64()
            .filter(|x| x.is_finite())
    };
    let rulers: Vec<f64> = workloads
        .iter()
        .filter(|w| {
            matches!(
                w.get("class").and_then(serde_json::Value::as_str),
                Some("compute-ruler" | "memory-ruler")
            )
        })
        .filter_map(estimate)
        .collect();
    let mut ys = if rulers.is_empty() {
        workloads.iter().filter_map(estimate).collect()
    } else {
        rulers
    };
    if ys.is_empty() {
        return None;
    }
    ys.sort_by(f64::total_cmp);
    Some(ys[ys.len() / 2])
}

/// Busy time of sorted, disjoint intervals per sibling, split into idle, one and two or
/// more busy over `[t0, t1]` (ns); parts outside the window are ignored.
pub fn split(siblings: &[Vec<(u64, u64)>], t0: u64, t1: u64) -> Split {
    let total = t1.saturating_sub(t0);
    if total == 0 {
        return Split {
            idle: 1.0,
            one: 0.0,
            both: 0.0,
        };
    }
    // Sweep over every start (+1) and end (−1).
    let mut edges: Vec<(u64, i32)> = siblings
        .iter()
        .flatten()
        .map(|&(a, b)| (a.max(t0), b.min(t1)))
        .filter(|(a, b)| a < b)
        .flat_map(|(a, b)| [(a, 1), (b, -1)])
        .collect();
    edges.sort_unstable();
    let (mut count, mut last) = (0i32, t0);
    let (mut one, mut both) = (0u64, 0u64);
    for (t, d) in edges {
        let span = t.saturating_sub(last);
        match count {
            0 => {}
            1 => one += span,
            _ => both += span,
        }
        count += d;
        last = last.max(t);
    }
    let f = |x: u64| x as f64 / total as f64;
    Split {
        idle: (1.0 - f(one) - f(both)).max(0.0),
        one: f(one),
        both: f(both),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn two_sibling_bounds() {
        let b = bounds(&[0.6, 0.7]);
        assert!(close(b.busy_min, 0.7) && close(b.busy_max, 1.0));
        assert!(close(b.both_min, 0.3) && close(b.both_max, 0.6));
        let b = bounds(&[0.2, 0.3]);
        assert!(close(b.busy_max, 0.5) && close(b.both_min, 0.0) && close(b.both_max, 0.2));
        // One busy sibling: the core is exactly as busy, never both.
        let b = bounds(&[1.0, 0.0]);
        assert!(close(b.busy_min, 1.0) && close(b.busy_max, 1.0) && close(b.both_max, 0.0));
        // No SMT: the core is the CPU.
        let b = bounds(&[0.4]);
        assert!(close(b.busy_min, 0.4) && close(b.busy_max, 0.4));
        // Tick counts can overshoot 1: clamped.
        let b = bounds(&[1.02, -0.01]);
        assert!(close(b.busy_min, 1.0) && close(b.both_max, 0.0));
    }

    #[test]
    fn smt4_bounds() {
        let b = bounds(&[1.0, 1.0, 0.5, 0.5]);
        assert!(close(b.busy_min, 1.0) && close(b.busy_max, 1.0));
        assert!(close(b.both_min, 1.0) && close(b.both_max, 1.0));
        let b = bounds(&[0.5, 0.5, 0.5, 0.0]);
        assert!(close(b.both_min, 0.5 / 3.0) && close(b.both_max, 1.0));
    }

    #[test]
    fn used_capacity_of_one_and_two_threads() {
        // One thread busy all the time: 1/Y of the core.
        assert!(close(used(1.0, 0.0, 1.25), 0.8));
        // Both busy all the time: the whole core.
        assert!(close(used(1.0, 1.0, 1.25), 1.0));
        // A yield below 1 counts a core as full with one thread.
        assert!(close(used(1.0, 0.0, 0.9), 1.0));
        // Two half-busy siblings: 0.5 (nested) to 0.8 (alternating) of the core.
        let b = bounds(&[0.5, 0.5]);
        let (lo, hi) = used_range(&b, 2, 1.0, 1.25);
        assert!(close(lo, 0.5) && close(hi, 0.8), "{lo} {hi}");
        // "50 % CPU" on SMT: one busy thread per core already uses 80 % at Y = 1.25.
        let b = bounds(&[1.0, 0.0]);
        let (lo, hi) = used_range(&b, 2, 1.0, 1.25);
        assert!(close(lo, 0.8) && close(hi, 0.8));
    }

    #[test]
    fn sweep_splits_overlap() {
        // Sibling A busy 0–60, B busy 40–100, window 0–100: one 80, both 20, idle 0.
        let s = split(&[vec![(0, 60)], vec![(40, 100)]], 0, 100);
        assert!(close(s.one, 0.8) && close(s.both, 0.2) && close(s.idle, 0.0));
        // Only A, half the window.
        let s = split(&[vec![(10, 60)], vec![]], 0, 100);
        assert!(close(s.one, 0.5) && close(s.both, 0.0) && close(s.idle, 0.5));
        let s = split(&[vec![], vec![]], 0, 100);
        assert!(close(s.idle, 1.0));
    }

    #[test]
    fn yield_file_shape() {
        let p = std::path::Path::new("y.json");
        assert_eq!(
            yield_from_json(p, r#"{"smt_yield": 1.18, "other": 1}"#)
                .unwrap()
                .value,
            1.18
        );
        let e = yield_from_json(p, r#"{"yield": 1.18}"#).unwrap_err();
        assert!(e.contains("smt_yield"), "{e}");
        assert!(yield_from_json(p, r#"{"smt_yield": 7}"#).is_err());
        assert!(yield_from_json(p, "nope").is_err());
        // `smtlab yield --json`: the median ruler's yield.
        let report = r#"{"workloads": [
            {"workload": "int", "class": "compute-ruler", "smt_yield": {"comparison": {"estimate": 1.3}}},
            {"workload": "l2", "class": "memory-ruler", "smt_yield": {"comparison": {"estimate": 1.1}}},
            {"workload": "fma", "class": "compute-ruler", "smt_yield": {"comparison": {"estimate": 1.2}}},
            {"workload": "hot-page/ttas", "class": "lock", "smt_yield": {"comparison": {"estimate": 0.6}}}
        ]}"#;
        assert_eq!(yield_from_json(p, report).unwrap().value, 1.2);
        // A study's results.json.
        let study = format!(r#"{{"smt_yield": {{"result": {report}}}}}"#);
        assert_eq!(yield_from_json(p, &study).unwrap().value, 1.2);
    }
}
