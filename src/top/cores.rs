//! Per-core utilisation from per-CPU busy shares, and the capacity left (pure).
//!
//! `/proc/stat` counts time per logical CPU, so a core's own figures can only be bounded:
//! with sibling busy shares b₁…bₖ (S = Σbᵢ, M = max bᵢ) over an interval,
//! - time with at least one sibling busy lies in [M, min(1, S)]: equal to M when the
//!   siblings' busy periods nest, to min(1, S) when they never overlap;
//! - time with two or more busy lies in [max(0, (S − 1)/(k − 1), b₍₁₎ + b₍₂₎ − 1),
//!   min(1, S − M)], b₍₁₎ and b₍₂₎ the two largest shares; for two siblings that is
//!   [max(0, b₁ + b₂ − 1), min(b₁, b₂)];
//! - time with all k busy lies in [max(0, S − (k − 1)), min bᵢ] (each sibling is idle for
//!   1 − bᵢ, so some sibling is idle for at most Σ(1 − bᵢ)).
//!
//! A traced interval gives the exact split into idle, one, two or more and all k busy.
//!
//! Capacity in *cores' worth*: with SMT yield Y (a core's throughput with all k of its
//! threads busy over one thread alone: what `smtlab yield` measures as `all` ÷
//! `one-per-core`), one busy thread uses 1/Y of its core and all k use all of it. With two
//! threads per core that is everything: a core uses T₂ + (T₁ − T₂)/Y of itself, with
//! T₁ = time at least one busy and T₂ = time both busy. With k > 2 (POWER SMT4/SMT8) a
//! core with 2 … k − 1 threads busy delivers some throughput between one thread's and k
//! threads', which no single yield gives: that time is bounded (as if it delivered one
//! thread's throughput, or the whole core's), and when it is a sizeable part of the
//! interval the capacity left is *not modelled* rather than guessed.
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
    /// Every sibling busy: lower and upper bound (equal to `both_*` with two siblings).
    pub all_min: f64,
    pub all_max: f64,
}

impl Bounds {
    /// Upper bound on the time with more than one but not every sibling busy (0 with two
    /// siblings or fewer): the time whose throughput a yield does not give.
    pub fn between_max(&self) -> f64 {
        (self.both_max - self.all_min).max(0.0)
    }
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
            all_min: max,
            all_max: max,
        };
    }
    let mut sorted = b.clone();
    sorted.sort_by(|x, y| y.total_cmp(x));
    let both_min = ((sum - 1.0) / (n as f64 - 1.0))
        .max(sorted[0] + sorted[1] - 1.0)
        .max(0.0);
    let both_max = (sum - max).min(1.0);
    Bounds {
        busy_min: max,
        busy_max: sum.min(1.0),
        both_min,
        both_max,
        all_min: (sum - (n as f64 - 1.0)).max(0.0).min(both_max),
        all_max: sorted[n - 1].min(both_max),
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
    /// Every sibling busy (part of `both`; equal to it with two siblings).
    pub all: f64,
}

/// The share of a core of two threads used, in cores' worth (0–1), from time with at
/// least one sibling busy (`busy`) and with both (`both`), at yield `y` (taken as at least
/// 1: below 1 a second thread adds nothing, and a core is full with one).
pub fn used(busy: f64, both: f64, y: f64) -> f64 {
    let y = y.max(1.0);
    let both = both.min(busy);
    (both + (busy - both) / y).clamp(0.0, 1.0)
}

/// The least and most of a core of k threads used, from its traced split: one busy thread
/// uses 1/Y, all k the whole core, and 2 … k − 1 between the two (no yield says where).
/// Equal bounds with two threads per core.
pub fn used_traced(s: &Split, y: f64) -> (f64, f64) {
    let y = y.max(1.0);
    let all = s.all.min(s.both);
    let between = s.both - all;
    let lo = all + (s.one + between) / y;
    let hi = all + s.one / y + between;
    (lo.clamp(0.0, 1.0), hi.clamp(0.0, 1.0))
}

/// The least and most of a core used, from its siblings' busy shares alone, at yield `y`.
///
/// Least: between-time delivers one thread's throughput, and busy periods nest as far as
/// the shares allow. With T₁ = time at least one busy and T_k = time all k busy,
/// S = Σ j·T_j ≤ (k − 1)(T₁ − T_k) + k·T_k, so T_k ≥ S − (k − 1)T₁; the least of
/// T_k + (T₁ − T_k)/Y over T₁ ∈ [M, min(1, S)] is at an end or at T₁ = S/(k − 1).
/// Most: between-time counts as the whole core, and busy periods spread out. A thread
/// alone is worth 1/Y per unit of CPU time, two or more together at most 1/2 (a whole
/// core for two threads' time), so the most is S·max(1/Y, 1/2) while S ≤ 1, then as much
/// time alone as fits. With two threads per core both are the exact extremes.
pub fn used_range(busy: &[f64], y: f64) -> (f64, f64) {
    let b: Vec<f64> = busy.iter().map(|x| x.clamp(0.0, 1.0)).collect();
    let k = b.len();
    let sum: f64 = b.iter().sum();
    let max = b.iter().copied().fold(0.0, f64::max);
    if k <= 1 {
        return (max, max);
    }
    let y = y.max(1.0);
    let top = sum.min(1.0);
    let at = |t: f64| t / y + (1.0 - 1.0 / y) * (sum - (k as f64 - 1.0) * t).max(0.0);
    let kink = sum / (k as f64 - 1.0);
    let mut lo = at(max).min(at(top));
    if kink > max && kink < top {
        lo = lo.min(at(kink));
    }
    let hi = if sum <= 1.0 {
        sum * (1.0 / y).max(0.5)
    } else if sum < 2.0 {
        if y <= 2.0 {
            (2.0 - sum) / y + (sum - 1.0)
        } else {
            sum / 2.0
        }
    } else {
        1.0
    };
    let (lo, hi) = (lo.clamp(0.0, 1.0), hi.clamp(0.0, 1.0));
    (lo.min(hi), lo.max(hi))
}

/// Where the yield used for headroom comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Yield {
    /// Throughput of a core with all its threads busy ÷ one thread alone.
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

/// The most threads per core smtlab models (POWER8 and later: SMT8).
pub const MAX_THREADS_PER_CORE: f64 = 8.0;

/// Reads the yield from a JSON file: an object with a top-level number `smt_yield`
/// (between 0.5 and 8). Errors name the file and what is expected.
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
             {{\"smt_yield\": 1.18}}): the throughput of a core with all its threads busy ÷ \
             one thread alone",
                path.display()
            )
        })?;
    if !(0.5..=MAX_THREADS_PER_CORE).contains(&y) {
        return Err(format!(
            "--yield {}: smt_yield {y} is outside 0.5–8 (the k threads of a core give between \
             half and k times one thread's throughput; 8 is the most threads per core there \
             are, POWER8's SMT8)",
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

/// The median SMT yield of the compute rulers in `smtlab yield --json` output
/// (`workloads`) or in a study's results.json (`smt_yield.result.workloads`); of the
/// memory rulers when no compute ruler has one, of every workload when no ruler has one.
/// A true median (the mean of the middle two for an even count): the upper middle one
/// took the better of two rulers. Compute and memory rulers are not pooled, their yields
/// differing in kind. None when the file holds no yield.
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
    let of_class = |class: &str| -> Vec<f64> {
        workloads
            .iter()
            .filter(|w| w.get("class").and_then(serde_json::Value::as_str) == Some(class))
            .filter_map(estimate)
            .collect()
    };
    [
        of_class("compute-ruler"),
        of_class("memory-ruler"),
        workloads.iter().filter_map(estimate).collect(),
    ]
    .into_iter()
    .find(|ys| !ys.is_empty())
    .map(|ys| crate::stats::median(&ys))
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
            all: 0.0,
        };
    }
    let n = siblings.len() as i32;
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
    let (mut one, mut both, mut all) = (0u64, 0u64, 0u64);
    for (t, d) in edges {
        let span = t.saturating_sub(last);
        match count {
            0 => {}
            1 => one += span,
            _ => both += span,
        }
        if count >= n.max(2) {
            all += span;
        }
        count += d;
        last = last.max(t);
    }
    let f = |x: u64| x as f64 / total as f64;
    Split {
        idle: (1.0 - f(one) - f(both)).max(0.0),
        one: f(one),
        both: f(both),
        all: f(all),
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
        let (lo, hi) = used_range(&[0.5, 0.5], 1.25);
        assert!(close(lo, 0.5) && close(hi, 0.8), "{lo} {hi}");
        // "50 % CPU" on SMT: one busy thread per core already uses 80 % at Y = 1.25.
        let (lo, hi) = used_range(&[1.0, 0.0], 1.25);
        assert!(close(lo, 0.8) && close(hi, 0.8));
        // Two siblings at 60 % and 70 %: nested (0.6 both, 0.1 alone) to spread out
        // (0.3 both, 0.7 alone), as T₂ + (T₁ − T₂)/Y gives at each end.
        let (lo, hi) = used_range(&[0.6, 0.7], 1.25);
        assert!(close(lo, used(0.7, 0.6, 1.25)), "{lo}");
        assert!(close(hi, used(1.0, 0.3, 1.25)), "{hi}");
    }

    #[test]
    fn smt4_capacity_bounds() {
        // All four threads busy: the whole core; one: 1/Y.
        let (lo, hi) = used_range(&[1.0; 4], 1.25);
        assert!(close(lo, 1.0) && close(hi, 1.0));
        let (lo, hi) = used_range(&[1.0, 0.0, 0.0, 0.0], 1.25);
        assert!(close(lo, 0.8) && close(hi, 0.8), "{lo} {hi}");
        // Two of four busy throughout: between one thread's worth and the whole core.
        let b = bounds(&[1.0, 1.0, 0.0, 0.0]);
        assert!(
            close(b.all_max, 0.0) && close(b.between_max(), 1.0),
            "{b:?}"
        );
        let (lo, hi) = used_range(&[1.0, 1.0, 0.0, 0.0], 1.25);
        assert!(close(lo, 0.8) && close(hi, 1.0), "{lo} {hi}");
        // Traced, the same: 2 busy all the time, never 1, never 4.
        let s = Split {
            idle: 0.0,
            one: 0.0,
            both: 1.0,
            all: 0.0,
        };
        let (lo, hi) = used_traced(&s, 1.25);
        assert!(close(lo, 0.8) && close(hi, 1.0), "{lo} {hi}");
        // Two siblings: traced bounds are equal and match `used`.
        let s = Split {
            idle: 0.2,
            one: 0.5,
            both: 0.3,
            all: 0.3,
        };
        let (lo, hi) = used_traced(&s, 1.25);
        assert!(close(lo, hi) && close(lo, used(0.8, 0.3, 1.25)));
        // Half busy on every sibling: all four together half the time (0.5) up to two at
        // a time all the time (the whole core).
        let (lo, hi) = used_range(&[0.5; 4], 1.25);
        assert!(close(lo, 0.5) && close(hi, 1.0), "{lo} {hi}");
    }

    #[test]
    fn bounds_contain_every_schedule() {
        // Random schedules of k siblings over 100 slots: the exact capacity used (one
        // thread 1/Y, all k 1, between anywhere in [1/Y, 1]) lies inside the bounds from
        // the shares alone, and inside the traced ones.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let k = 2 + (next() % 7) as usize;
            let y = 1.0 + (next() % 1000) as f64 / 1000.0 * (k as f64 - 1.0);
            let p = (next() % 100) as f64 / 100.0;
            let slots: Vec<Vec<bool>> = (0..100)
                .map(|_| (0..k).map(|_| (next() % 100) as f64 / 100.0 < p).collect())
                .collect();
            let busy: Vec<f64> = (0..k)
                .map(|i| slots.iter().filter(|s| s[i]).count() as f64 / 100.0)
                .collect();
            let share = |j: usize| {
                slots
                    .iter()
                    .filter(|s| s.iter().filter(|x| **x).count() == j)
                    .count() as f64
                    / 100.0
            };
            let one = share(1);
            let all = share(k);
            let between: f64 = (2..k).map(share).sum();
            let (exact_lo, exact_hi) = (all + (one + between) / y, all + one / y + between);
            let (lo, hi) = used_range(&busy, y);
            assert!(
                lo <= exact_lo + 1e-9 && exact_hi <= hi + 1e-9,
                "{busy:?} {y}"
            );
            let b = bounds(&busy);
            assert!(
                b.all_min <= all + 1e-9 && all <= b.all_max + 1e-9,
                "{busy:?} {b:?}"
            );
            assert!(between <= b.between_max() + 1e-9, "{busy:?} {b:?}");
        }
    }

    #[test]
    fn sweep_splits_overlap() {
        // Sibling A busy 0–60, B busy 40–100, window 0–100: one 80, both 20, idle 0.
        let s = split(&[vec![(0, 60)], vec![(40, 100)]], 0, 100);
        assert!(close(s.one, 0.8) && close(s.both, 0.2) && close(s.idle, 0.0));
        assert!(close(s.all, 0.2));
        // Four siblings: all four only 50–60.
        let s = split(
            &[
                vec![(0, 60)],
                vec![(40, 100)],
                vec![(50, 70)],
                vec![(50, 60)],
            ],
            0,
            100,
        );
        assert!(close(s.all, 0.1) && close(s.both, 0.3), "{s:?}");
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
        assert!(yield_from_json(p, r#"{"smt_yield": 9}"#).is_err());
        // An SMT4 core's yield can pass 2 (four threads against one).
        assert_eq!(
            yield_from_json(p, r#"{"smt_yield": 2.4}"#).unwrap().value,
            2.4
        );
        assert!(yield_from_json(p, "nope").is_err());
        // `smtlab yield --json`: the median ruler's yield.
        let report = r#"{"workloads": [
            {"workload": "int", "class": "compute-ruler", "smt_yield": {"comparison": {"estimate": 1.3}}},
            {"workload": "l2", "class": "memory-ruler", "smt_yield": {"comparison": {"estimate": 1.1}}},
            {"workload": "fma", "class": "compute-ruler", "smt_yield": {"comparison": {"estimate": 1.2}}},
            {"workload": "hot-page/ttas", "class": "lock", "smt_yield": {"comparison": {"estimate": 0.6}}}
        ]}"#;
        // Compute rulers only, and the true median of 1.3 and 1.2.
        assert!((yield_from_json(p, report).unwrap().value - 1.25).abs() < 1e-12);
        // A study's results.json.
        let study = format!(r#"{{"smt_yield": {{"result": {report}}}}}"#);
        assert!((yield_from_json(p, &study).unwrap().value - 1.25).abs() < 1e-12);
    }

    /// With two compute rulers at 1.0× and 1.4× the capacity model took the upper middle,
    /// 1.4, and with memory rulers beside them a memory ruler could decide.
    #[test]
    fn top_yield_from_an_even_count_of_rulers_is_their_true_median() {
        let p = std::path::Path::new("y.json");
        let two = r#"{"workloads": [
            {"workload": "int", "class": "compute-ruler", "smt_yield": {"comparison": {"estimate": 1.0}}},
            {"workload": "fma", "class": "compute-ruler", "smt_yield": {"comparison": {"estimate": 1.4}}},
            {"workload": "stream", "class": "memory-ruler", "smt_yield": {"comparison": {"estimate": 1.9}}},
            {"workload": "chase", "class": "memory-ruler", "smt_yield": {"comparison": {"estimate": 1.9}}}
        ]}"#;
        assert!((yield_from_json(p, two).unwrap().value - 1.2).abs() < 1e-12);
        let memory_only = r#"{"workloads": [
            {"workload": "stream", "class": "memory-ruler", "smt_yield": {"comparison": {"estimate": 1.1}}}
        ]}"#;
        assert!((yield_from_json(p, memory_only).unwrap().value - 1.1).abs() < 1e-12);
    }
}
