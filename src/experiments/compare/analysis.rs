//! From runs to conclusions: summaries per placement, each placement against the first
//! paired by round, and the SMT pairs (yield of `all` over `one-per-core`, slowdown of
//! `pairs`), with a four-way call. Pure.
//!
//! Every comparison is paired: each round runs every placement back to back, so the
//! ratio of one round's two runs leaves out drift between rounds, which a ratio of
//! medians counts as spread. Its estimate, interval and small-sample label are
//! [`stats::Comparison::of_paired_ratios`]'s, the same computation the study's answer row
//! for the command calls ([`paired_in`]).
//!
//! The call follows criterion's rule (criterion `src/report.rs`, `noise_threshold`): a
//! change is called only when the *whole* interval lies beyond the noise band. Unlike
//! criterion's three-way verdict it tells an interval inside the band (no difference)
//! from one straddling its edge (inconclusive: the runs cannot tell yet).

use super::model::{
    Call, CompareReport, Comparison, FixedDuration, FoundBy, PairRatio, PlacementResult, Run,
    SchedFacts, StarveCause, Starved,
};
use crate::cpuset::CpuSet;
use crate::stats::{self, Better, Effect, Summary, Thresholds};

/// Confidence of every interval.
pub const CONFIDENCE: f64 = 0.95;

/// What a speed (> 1 = faster) is judged against: faster above `1 + noise`, slower below
/// `1 − noise`, no difference inside.
pub fn thresholds(noise: f64) -> Thresholds {
    Thresholds::new(1.0 - noise, noise).unwrap_or(Thresholds::YIELD)
}

/// Which value is compared, and which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    WallTime,
    Metric(Better),
}

impl Basis {
    /// What a comparison with `metric` (None: wall time) compares.
    pub fn of(metric: Option<&super::metric::MetricInfo>) -> Self {
        match metric {
            Some(m) if m.higher_is_better => Basis::Metric(Better::Higher),
            Some(_) => Basis::Metric(Better::Lower),
            None => Basis::WallTime,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Basis::WallTime => "wall_time_ns",
            Basis::Metric(_) => "metric",
        }
    }

    pub fn better(self) -> Better {
        match self {
            Basis::WallTime => Better::Lower,
            Basis::Metric(b) => b,
        }
    }

    /// The compared value of one run, when it has one.
    pub fn value(self, r: &Run) -> Option<f64> {
        match self {
            Basis::WallTime => Some(r.wall_time_ns as f64),
            Basis::Metric(_) => r.metric,
        }
    }

    /// The compared value of every run that has it.
    pub fn values(self, runs: &[Run]) -> Vec<f64> {
        runs.iter().filter_map(|r| self.value(r)).collect()
    }
}

/// Fills a placement's summaries from its runs.
pub fn summarize(p: &mut PlacementResult) {
    let runs = &p.runs;
    let col = |f: &dyn Fn(&Run) -> Option<f64>| -> Vec<f64> { runs.iter().filter_map(f).collect() };
    p.wall_time_ns = Summary::of(&col(&|r| Some(r.wall_time_ns as f64)));
    p.metric = Summary::of(&col(&|r| r.metric));
    p.user_time_ns = Summary::of(&col(&|r| Some(r.user_time_ns as f64)));
    p.system_time_ns = Summary::of(&col(&|r| Some(r.system_time_ns as f64)));
    p.cpus_used = {
        let used = col(&|r| {
            (r.wall_time_ns > 0)
                .then(|| (r.user_time_ns + r.system_time_ns) as f64 / r.wall_time_ns as f64)
        });
        (!used.is_empty()).then(|| stats::median(&used))
    };
    p.max_rss_bytes = runs.iter().map(|r| r.max_rss_bytes).max();
    let med = |v: Vec<f64>| (!v.is_empty()).then(|| stats::median(&v));
    p.voluntary_switches = med(col(&|r| Some(r.voluntary_switches as f64)));
    p.involuntary_switches = med(col(&|r| Some(r.involuntary_switches as f64)));
    p.burner_ops_per_sec = med(col(&|r| r.burner_ops_per_sec));
    p.counters = runs
        .iter()
        .map(|r| r.counters.as_ref())
        .collect::<Option<Vec<_>>>()
        .and_then(crate::counters::Counts::median);
    p.failed_runs = runs
        .iter()
        .filter(|r| r.exit_code != Some(0) || r.signal.is_some())
        .count();
}

/// "About one CPU" busy: between these, a command tree kept one CPU's worth of time busy
/// (a tree mostly waiting keeps less; one given two CPUs that used them keeps ≈ 2).
const ABOUT_ONE_CPU: (f64, f64) = (0.75, 1.25);

/// The placements allowed two or more CPUs (and no burners beside them) whose command
/// tree kept about one busy, or less while preempted more often than it waited (a tree
/// that mostly waits, on I/O or a sleep, keeps little busy and is not starved), where
/// their comparison with the baseline did not come out faster: what stands behind a "no
/// difference" or "inconclusive" there, with the causes `facts` make likely. Other load is
/// always among them.
pub fn starved(
    placements: &[PlacementResult],
    comparisons: &[Comparison],
    facts: SchedFacts,
) -> Vec<Starved> {
    let Some(base) = placements.first() else {
        return Vec::new();
    };
    let Some(base_used) = base.cpus_used else {
        return Vec::new();
    };
    let about_one = |u: f64| (ABOUT_ONE_CPU.0..=ABOUT_ONE_CPU.1).contains(&u);
    placements
        .iter()
        .skip(1)
        .filter(|p| p.cpus.len() >= 2 && p.burner_cpus.is_empty())
        .filter(|p| {
            comparisons
                .iter()
                .any(|c| c.placement == p.label && c.call != Call::Faster)
        })
        .filter_map(|p| {
            let used = p.cpus_used?;
            let (invol, vol) = (
                p.involuntary_switches.unwrap_or(0.0),
                p.voluntary_switches.unwrap_or(0.0),
            );
            let preempted = invol >= Starved::MIN_PREEMPTIONS && invol >= vol;
            if !(about_one(used) || (used < ABOUT_ONE_CPU.1 && preempted)) {
                return None;
            }
            let mut likely_causes = vec![StarveCause::OtherLoad];
            if facts.autogroup == Some(true) {
                likely_causes.push(StarveCause::Autogroup);
            }
            if let Some(q) = facts.cpu_quota.filter(|&q| q < p.cpus.len() as f64) {
                likely_causes.push(StarveCause::CpuQuota { cpus: q });
            }
            Some(Starved {
                placement: p.label.clone(),
                allowed: p.cpus.len(),
                cpus_used: used,
                runs: p.runs.len(),
                involuntary_switches: invol,
                voluntary_switches: vol,
                baseline: base.label.clone(),
                baseline_allowed: base.cpus.len(),
                baseline_cpus_used: base_used,
                likely_causes,
            })
        })
        .collect()
}

/// The rounds every placement finished, in order: the rounds whose runs pair up (a
/// failure or Ctrl-C can end the last round part-way).
pub fn complete_rounds(placements: &[PlacementResult]) -> Vec<usize> {
    let Some((first, rest)) = placements.split_first() else {
        return Vec::new();
    };
    first
        .runs
        .iter()
        .map(|x| x.round)
        .filter(|&k| rest.iter().all(|p| p.runs.iter().any(|x| x.round == k)))
        .collect()
}

/// Per complete round, `f(run of num) / f(run of den)`, for rounds where both are
/// positive and finite.
fn round_ratios(
    placements: &[PlacementResult],
    (num, den): (usize, usize),
    f: impl Fn(&Run) -> Option<f64>,
) -> (Vec<usize>, Vec<f64>) {
    let (Some(n), Some(d)) = (placements.get(num), placements.get(den)) else {
        return Default::default();
    };
    let at = |p: &PlacementResult, k: usize| p.runs.iter().find(|x| x.round == k).and_then(&f);
    complete_rounds(placements)
        .into_iter()
        .filter_map(|k| {
            let r = at(n, k)? / at(d, k)?;
            (r.is_finite() && r > 0.0).then_some((k, r))
        })
        .unzip()
}

/// Per complete round, the speed of placement `num` over `den` (> 1 = `num` faster): the
/// ratio of the compared values for a throughput, its inverse for a time.
pub fn round_speedups(
    placements: &[PlacementResult],
    pair: (usize, usize),
    basis: Basis,
) -> (Vec<usize>, Vec<f64>) {
    let (rounds, ratios) = round_ratios(placements, pair, |r| basis.value(r));
    let speedups = match basis.better() {
        Better::Higher => ratios,
        Better::Lower => ratios.into_iter().map(|x| 1.0 / x).collect(),
    };
    (rounds, speedups)
}

/// What decides how a comparison is made and whether it can be called.
#[derive(Debug, Clone, Copy)]
pub struct Setting<'a> {
    pub placements: &'a [PlacementResult],
    pub basis: Basis,
    /// The noise band's half-width (0.02 = ±2 %).
    pub noise: f64,
    /// A time limit found in the command's arguments with no metric to compare instead:
    /// wall time calls nothing.
    pub fixed_by_arguments: Option<&'a FixedDuration>,
}

/// One pair of placements compared round by round.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// The rounds paired.
    pub rounds: Vec<usize>,
    /// Per round, the speed of the numerator over the denominator (> 1 = faster).
    pub speedups: Vec<f64>,
    /// Their central value (`stats::Comparison`'s: the geometric mean) with its interval,
    /// run count and class; the class is inconclusive when the value compared cannot call
    /// it.
    pub comparison: stats::Comparison,
    /// Why the value compared cannot call it (see [`not_called`]).
    pub not_called: Option<String>,
}

impl Paired {
    /// The call, from the comparison's class (inconclusive when it cannot be called).
    pub fn call(&self) -> Call {
        Call::of(self.comparison.effect)
    }
}

/// Placement `num` against `den`, paired by round: the one computation behind compare's
/// lines and the study's row for the pair. None when no complete round has both.
pub fn paired(s: &Setting<'_>, pair: (usize, usize)) -> Option<Paired> {
    let (rounds, speedups) = round_speedups(s.placements, pair, s.basis);
    let comparison =
        stats::Comparison::of_paired_ratios(&speedups, thresholds(s.noise), CONFIDENCE)?;
    let not_called = not_called(s, pair, &comparison);
    let mut comparison = comparison;
    if not_called.is_some() {
        // Its interval may sit inside the band, but what it measured is no evidence.
        comparison.effect = Effect::Inconclusive;
    }
    Some(Paired {
        rounds,
        speedups,
        comparison,
        not_called,
    })
}

/// Why wall time cannot call a pair: the command runs for a fixed time by its arguments,
/// or its wall time did not change while its CPU time did. The second has two readings —
/// a fixed-duration command, whose wall time measures no work, or fixed work that the
/// extra CPU time did not speed up (SMT adding nothing) — and wall time cannot tell them
/// apart, so it is no evidence of "no difference"; a metric read from the output can.
pub fn not_called(
    s: &Setting<'_>,
    pair: (usize, usize),
    wall: &stats::Comparison,
) -> Option<String> {
    if s.basis != Basis::WallTime {
        return None;
    }
    if let Some(f) = s.fixed_by_arguments {
        return Some(format!(
            "{}, so its wall time is the same whatever it gets done and measures no work; {}",
            f.seen, METRIC_ADVICE
        ));
    }
    if wall.effect != Effect::NoEffect {
        return None;
    }
    let cpu = |r: &Run| Some((r.user_time_ns + r.system_time_ns) as f64);
    let (_, ratios) = round_ratios(s.placements, pair, cpu);
    let c = stats::Comparison::of_paired_ratios(&ratios, thresholds(s.noise), CONFIDENCE)?;
    if !matches!(c.effect, Effect::Gain | Effect::Loss) {
        return None;
    }
    let label = |i: usize| s.placements.get(i).map_or("", |p| p.label.as_str());
    Some(format!(
        "wall time was the same on `{}` and `{}` ({}× the speed, {}) while CPU time was not \
         ({}× as much, {}): either the command runs for a fixed time, so its wall time \
         measures no work, or its work is fixed and the extra CPU time did not speed it \
         up; wall time cannot tell which, so it calls nothing. {}",
        label(pair.0),
        label(pair.1),
        crate::render::ratio_text(wall.estimate),
        wall.interval_text(),
        crate::render::ratio_text(c.estimate),
        c.interval_text(),
        capitalised(METRIC_ADVICE)
    ))
}

/// What to do about a command whose wall time measures no work.
pub const METRIC_ADVICE: &str = "give `--metric` to compare its throughput read from the \
     output (`--metric sysbench`, `--metric pgbench`, or `--metric 'REGEX'` with one capture \
     group)";

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Every placement after the first against the first, paired by round.
pub fn comparisons(s: &Setting<'_>) -> Vec<Comparison> {
    let Some(base) = s.placements.first() else {
        return Vec::new();
    };
    (1..s.placements.len())
        .filter_map(|i| {
            let p = paired(s, (i, 0))?;
            Some(Comparison {
                placement: s.placements[i].label.clone(),
                baseline: base.label.clone(),
                basis: s.basis.name().into(),
                call: p.call(),
                rounds: p.rounds,
                speedups: p.speedups,
                speedup: p.comparison,
                not_called: p.not_called,
            })
        })
        .collect()
}

/// The comparison of the placements labelled `num` and `den` in a finished report: what
/// the study's answer row for the command cites, computed as the report's own lines are.
pub fn paired_in(r: &CompareReport, num: &str, den: &str) -> Option<Paired> {
    let find = |l: &str| r.placements.iter().position(|p| p.label == l);
    let pair = (find(num)?, find(den)?);
    paired(&setting_of(r), pair)
}

/// The setting a finished report was compared in.
pub fn setting_of(r: &CompareReport) -> Setting<'_> {
    Setting {
        placements: &r.placements,
        basis: Basis::of(r.metric.as_ref()),
        noise: r.noise_threshold,
        fixed_by_arguments: r
            .fixed_duration
            .as_ref()
            .filter(|f| f.found_by == FoundBy::Arguments && f.metric_chosen.is_none()),
    }
}

/// A report-wide note when some pair's wall time looked like a fixed-duration command's;
/// None when none did or when the arguments already said so.
pub fn fixed_by_timing(comparisons: &[Comparison], y: Option<&PairRatio>) -> Option<FixedDuration> {
    let seen = comparisons
        .iter()
        .filter_map(|c| c.not_called.as_ref())
        .chain(y.and_then(|y| y.not_called.as_ref()))
        .next()?;
    Some(FixedDuration {
        found_by: FoundBy::Timing,
        seen: seen.clone(),
        metric_chosen: None,
    })
}

/// Placements that form SMT pairs, found from their CPU sets and the cores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SmtPairs {
    /// (all, one-per-core): every usable sibling of the cores of one-per-core's CPUs.
    pub yield_pair: Option<(usize, usize)>,
    /// (pairs, one-per-core): as many CPUs, on both siblings of fewer cores.
    pub pairs_pair: Option<(usize, usize)>,
}

/// Finds the pairs among `sets` (None = a placement left out, e.g. one with burners);
/// `core_of(cpu)` gives the usable siblings of that CPU's core, itself included.
pub fn smt_pairs(sets: &[Option<&CpuSet>], core_of: impl Fn(u32) -> CpuSet) -> SmtPairs {
    let cores_of = |s: &CpuSet| -> Vec<CpuSet> {
        let mut v: Vec<CpuSet> = s.iter().map(&core_of).collect();
        v.sort_by_key(CpuSet::first);
        v.dedup();
        v
    };
    let whole = |cores: &[CpuSet]| cores.iter().fold(CpuSet::new(), |a, c| a.union(c));
    // One CPU on each of its cores, and some core has another sibling.
    let one_per_core = |s: &CpuSet| {
        let c = cores_of(s);
        c.len() == s.len() && c.iter().any(|c| c.len() >= 2)
    };
    let mut out = SmtPairs::default();
    for (i, a) in sets.iter().enumerate() {
        let Some(a) = a.filter(|a| one_per_core(a)) else {
            continue;
        };
        let a_cores = cores_of(a);
        for (j, b) in sets.iter().enumerate() {
            let Some(b) = b else { continue };
            if i == j {
                continue;
            }
            let b_cores = cores_of(b);
            let b_whole = *b == &whole(&b_cores);
            if out.yield_pair.is_none() && b_cores == a_cores && b_whole && b.len() > a.len() {
                out.yield_pair = Some((j, i));
            }
            if out.pairs_pair.is_none()
                && b.len() == a.len()
                && b_whole
                && b_cores.len() < a_cores.len()
            {
                out.pairs_pair = Some((j, i));
            }
        }
    }
    out
}

/// Speed of `num` over `den` paired by round (> 1 = `num` does more per unit of time).
pub fn pair_speedup(s: &Setting<'_>, (num, den): (usize, usize)) -> Option<PairRatio> {
    let (n, d) = (s.placements.get(num)?, s.placements.get(den)?);
    let p = paired(s, (num, den))?;
    Some(PairRatio {
        placement: n.label.clone(),
        reference: d.label.clone(),
        basis: s.basis.name().into(),
        rounds: p.rounds,
        speedups: p.speedups,
        ratio: p.comparison,
        not_called: p.not_called,
    })
}

/// A slowdown (> 1 = each run of `num` takes longer or does less) from a speed ratio's
/// estimate and interval: their inverses, bounds swapped.
pub fn slowdown(c: &stats::Comparison) -> (f64, f64, f64) {
    (1.0 / c.estimate, 1.0 / c.high, 1.0 / c.low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_follows_the_class() {
        let t = thresholds(0.02);
        let call = |lo: f64, hi: f64| Call::of(stats::classify(lo, hi, t));
        // The whole interval above 1.02: faster; below 0.98: slower.
        assert_eq!(call(1.4, 1.6), Call::Faster);
        assert_eq!(call(0.45, 0.55), Call::Slower);
        // Inside [0.98, 1.02]: no difference.
        assert_eq!(call(0.99, 1.01), Call::NoDifference);
        assert_eq!(call(0.98, 1.02), Call::NoDifference);
        // Straddling an edge: inconclusive, even with the estimate far out.
        assert_eq!(call(0.97, 1.30), Call::Inconclusive);
        assert_eq!(call(1.01, 1.05), Call::Inconclusive);
        assert_eq!(call(0.90, 0.99), Call::Inconclusive);
        // Just beyond the band: called.
        assert_eq!(call(1.021, 1.03), Call::Faster);
        assert_eq!(call(f64::NAN, 1.0), Call::Inconclusive);
    }

    fn run(round: usize, wall_ms: u64, metric: Option<f64>) -> Run {
        Run {
            round,
            position: 0,
            wall_time_ns: wall_ms * 1_000_000,
            user_time_ns: 0,
            system_time_ns: 0,
            max_rss_bytes: 1 << 20,
            voluntary_switches: 3,
            involuntary_switches: 1,
            exit_code: Some(0),
            signal: None,
            metric,
            burner_ops_per_sec: None,
            counters: None,
            leftover_processes: 0,
        }
    }

    fn placement(label: &str, walls: &[u64]) -> PlacementResult {
        let mut p = PlacementResult::unsummarized(
            label.into(),
            label.into(),
            CpuSet::from_cpus([0]),
            1,
            walls
                .iter()
                .enumerate()
                .map(|(i, &w)| run(i + 1, w, Some(1e6 / w as f64)))
                .collect(),
        );
        summarize(&mut p);
        p
    }

    fn setting(ps: &[PlacementResult], basis: Basis) -> Setting<'_> {
        Setting {
            placements: ps,
            basis,
            noise: 0.02,
            fixed_by_arguments: None,
        }
    }

    /// `--cpus 0 --cpus 0-1` of a 2-thread, 1 s sysbench on a busy machine: 995 ms of user
    /// time in every run of both placements, the same events/s.
    fn starved_pair(user_ms_two_cpus: u64) -> [PlacementResult; 2] {
        let mk = |label: &str, cpus: &[u32], user_ms: u64| {
            let runs = (1..=5)
                .map(|k| Run {
                    user_time_ns: user_ms * 1_000_000,
                    ..run(k, 1000, Some(1000.0 + k as f64))
                })
                .collect();
            let mut p = PlacementResult::unsummarized(
                label.into(),
                label.into(),
                CpuSet::from_cpus(cpus.iter().copied()),
                cpus.len(),
                runs,
            );
            summarize(&mut p);
            p
        };
        [
            mk("cpus:0", &[0], 995),
            mk("cpus:0-1", &[0, 1], user_ms_two_cpus),
        ]
    }

    #[test]
    fn a_two_cpu_placement_that_kept_one_busy_is_named_with_the_likely_causes() {
        let ps = starved_pair(995);
        assert_eq!(ps[1].cpus_used, Some(0.995));
        let s = setting(&ps, Basis::Metric(Better::Higher));
        let c = comparisons(&s);
        assert_ne!(c[0].call, Call::Faster, "{c:?}");
        let facts = SchedFacts {
            autogroup: Some(true),
            cpu_quota: Some(1.5),
        };
        let x = starved(&ps, &c, facts);
        assert_eq!(x.len(), 1, "{x:?}");
        assert_eq!(x[0].placement, "cpus:0-1");
        assert_eq!((x[0].allowed, x[0].runs), (2, 5));
        assert_eq!((x[0].cpus_used, x[0].baseline_cpus_used), (0.995, 0.995));
        assert_eq!(
            x[0].likely_causes,
            [
                StarveCause::OtherLoad,
                StarveCause::Autogroup,
                StarveCause::CpuQuota { cpus: 1.5 }
            ]
        );
        let text = super::super::model::Note::Starved(x[0].clone()).to_string();
        assert!(
            text.starts_with(
                "cpus:0-1 kept 0.99 CPUs busy (median of 5 runs: user + system time ÷ wall time) \
                 of the 2 CPUs it was allowed; cpus:0 kept 0.99 of 1."
            ),
            "{text}"
        );
        assert!(text.contains("sched_autogroup_enabled = 1"), "{text}");
        assert!(text.contains("CPU quota of 1.50 CPUs"), "{text}");
        // No autogroup, no quota: other load alone.
        let x = starved(&ps, &c, SchedFacts::default());
        assert_eq!(x[0].likely_causes, [StarveCause::OtherLoad]);
        // A quota at or above the CPUs allowed holds nothing back.
        let q = SchedFacts {
            autogroup: Some(false),
            cpu_quota: Some(2.0),
        };
        assert_eq!(
            starved(&ps, &c, q)[0].likely_causes,
            [StarveCause::OtherLoad]
        );
    }

    /// Under `stress-ng --cpu 2`: 0.2 CPUs kept busy of 2, preempted 73 times a run, 5
    /// waits: starved, said as such.
    #[test]
    fn a_two_cpu_placement_mostly_preempted_is_starved_below_one_cpu() {
        let mut ps = starved_pair(209);
        for p in &mut ps {
            for r in &mut p.runs {
                (r.involuntary_switches, r.voluntary_switches) = (73, 5);
            }
            summarize(p);
        }
        let c = comparisons(&setting(&ps, Basis::Metric(Better::Higher)));
        let x = starved(&ps, &c, SchedFacts::default());
        assert_eq!(x.len(), 1, "{x:?}");
        assert!(x[0].preempted());
        let text = super::super::model::Note::Starved(x[0].clone()).to_string();
        assert!(
            text.contains(
                "It was preempted more often than it waited (median 73 involuntary, 5 voluntary \
                 context switches per run): its threads were ready to run and did not get their \
                 CPUs"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_placement_that_used_its_cpus_or_mostly_waited_is_not_starved() {
        for user_ms in [1990, 300] {
            let ps = starved_pair(user_ms);
            let c = comparisons(&setting(&ps, Basis::Metric(Better::Higher)));
            assert!(
                starved(&ps, &c, SchedFacts::default()).is_empty(),
                "{user_ms} ms"
            );
        }
    }

    #[test]
    fn comparisons_against_the_first_pair_the_rounds_every_placement_finished() {
        let ps = [
            placement("a", &[100, 101, 99, 100, 102, 98, 100]),
            placement("b", &[50, 51, 49, 50, 50, 52, 48]),
            placement("c", &[100, 99, 101, 100, 100, 101, 99]),
            placement("d", &[100, 150]),
        ];
        assert_eq!(ps[0].wall_time_ns.unwrap().median, 100e6);
        assert_eq!(ps[0].max_rss_bytes, Some(1 << 20));
        assert_eq!(ps[0].voluntary_switches, Some(3.0));
        // `d` ran rounds 1 and 2 only: those are the rounds every placement finished.
        assert_eq!(complete_rounds(&ps), [1, 2]);
        let c = comparisons(&setting(&ps, Basis::WallTime));
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].rounds, [1, 2]);
        assert_eq!(c[0].speedups, [2.0, 101.0 / 51.0]);
        assert_eq!(c[0].speedup.n, 2);
        assert!((c[0].speedup.estimate - 2.0).abs() < 0.02, "{:?}", c[0]);
        // One placement against the first in round 2: 100 ms against 101 ms.
        assert_eq!(c[2].speedups, [1.0, 101.0 / 150.0]);
        // The metric (higher is better) gives the same speeds.
        let m = comparisons(&setting(&ps, Basis::Metric(Better::Higher)));
        for (w, m) in c[0].speedups.iter().zip(&m[0].speedups) {
            assert!((w - m).abs() < 1e-9);
        }
        assert_eq!(
            comparisons(&setting(&ps, Basis::WallTime)),
            c,
            "reproducible"
        );
        // Without `d`, seven rounds: `b` twice as fast, `c` the same.
        let c = comparisons(&setting(&ps[..3], Basis::WallTime));
        assert_eq!(c[0].rounds.len(), 7);
        assert_eq!(c[0].call, Call::Faster, "{:?}", c[0]);
        assert!(
            c[0].speedup.low > 1.8 && c[0].speedup.high < 2.2,
            "{:?}",
            c[0]
        );
        assert_ne!(c[1].call, Call::Faster);
        assert_ne!(c[1].call, Call::Slower);
        assert!(c[1].not_called.is_none());
    }

    #[test]
    fn drift_between_rounds_cancels_in_the_pairs() {
        // One-per-core drifts from 100 to 160 ms over the rounds; `all` is 1.25× faster in
        // each. The ratio of medians would spread over the drift; paired, 1.25 every round.
        let one = [100, 110, 120, 130, 140, 150, 160];
        let all = one.map(|w| w * 4 / 5);
        let ps = [placement("one-per-core", &one), placement("all", &all)];
        let c = &comparisons(&setting(&ps, Basis::WallTime))[0];
        assert!(c.speedups.iter().all(|x| (x - 1.25).abs() < 1e-12), "{c:?}");
        assert!((c.speedup.low - 1.25).abs() < 1e-9 && (c.speedup.high - 1.25).abs() < 1e-9);
        assert_eq!(c.call, Call::Faster);
    }

    #[test]
    fn smt_pairs_on_two_cores_of_two_siblings() {
        // Cores {0,1} and {2,3}.
        let core_of = |c: u32| {
            if c < 2 {
                CpuSet::from_cpus([0, 1])
            } else {
                CpuSet::from_cpus([2, 3])
            }
        };
        let opc = CpuSet::from_cpus([0, 2]);
        let pairs = CpuSet::from_cpus([0, 1]);
        let all = CpuSet::from_cpus([0, 1, 2, 3]);
        let found = smt_pairs(&[Some(&opc), Some(&pairs), Some(&all)], core_of);
        assert_eq!(found.yield_pair, Some((2, 0)));
        assert_eq!(found.pairs_pair, Some((1, 0)));
        // A burner variant (None) is never paired; order does not matter.
        let found = smt_pairs(&[Some(&all), None, Some(&opc)], core_of);
        assert_eq!(found.yield_pair, Some((0, 2)));
        assert_eq!(found.pairs_pair, None);
        // No siblings: nothing pairs (CPU 0 vs 0-1 on a machine without SMT).
        let single = |c: u32| CpuSet::from_cpus([c]);
        let a = CpuSet::from_cpus([0]);
        let b = CpuSet::from_cpus([0, 1]);
        assert_eq!(
            smt_pairs(&[Some(&a), Some(&b)], single),
            SmtPairs::default()
        );
    }

    #[test]
    fn yield_and_slowdown_by_hand() {
        // The same work per run: 80 ms on all siblings, 100 ms on one thread per core
        // (yield 100 / 80 = 1.25), 160 ms on both siblings of half the cores (1.6× slower).
        let ps = [
            placement("one-per-core", &[100; 6]),
            placement("pairs", &[160; 6]),
            placement("all", &[80; 6]),
        ];
        let s = setting(&ps, Basis::WallTime);
        let y = pair_speedup(&s, (2, 0)).unwrap();
        assert!((y.ratio.estimate - 1.25).abs() < 1e-12, "{y:?}");
        assert_eq!(y.rounds, [1, 2, 3, 4, 5, 6]);
        assert_eq!(
            (y.placement.as_str(), y.reference.as_str()),
            ("all", "one-per-core")
        );
        let p = pair_speedup(&s, (1, 0)).unwrap();
        assert!((slowdown(&p.ratio).0 - 1.6).abs() < 1e-12, "{p:?}");
        let sm = pair_speedup(&setting(&ps, Basis::Metric(Better::Higher)), (1, 0)).unwrap();
        assert!((slowdown(&sm.ratio).0 - 1.6).abs() < 1e-9, "{sm:?}");
    }
}
