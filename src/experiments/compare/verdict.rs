//! What a compare run concludes, in one place: the lines under its table (each
//! comparison's call, the SMT yield and per-run cost, what was skipped or cut short), the
//! study's finding for the user's command, and its row of the answer table. The view
//! ([`super::view`]) lays these out; nothing here is worded twice.

use super::model::{Call, CompareReport, CompareSection, Comparison, FoundBy, PairRatio};
use crate::conclusion::{
    Answer, AnswerCtx, Conclusions, Evidence, Finding, HtAnswer, PhaseName, WorkloadClass, decide,
    indicative_note, not_answered,
};
use crate::render::{band, duration_ns, interval_n};
use crate::stats::Effect;

/// The phase that fills this section; results.json names it `"compare"`.
pub const PHASE: PhaseName = PhaseName::new("compare");
/// The argv as a shell would need it typed: words with spaces or shell characters in
/// single quotes.
pub fn shell_words(argv: &[String]) -> String {
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c))
    };
    argv.iter()
        .map(|w| {
            if plain(w) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
impl Conclusions for CompareSection {
    fn answers(c: Option<&Self>, ctx: &AnswerCtx<'_>) -> Vec<Answer> {
        vec![command_answer(c, ctx)]
    }
}

/// One comparison line: the call, the speed (> 1 = faster) and its interval.
fn comparison_line(c: &Comparison, noise: f64) -> String {
    let band = band(noise);
    let s = &c.speedup;
    let x = |v: f64| crate::render::ratio_text(v);
    let what = match (&c.not_called, c.call) {
        (Some(why), _) => format!("not called by wall time: {why}"),
        (None, Call::Faster) => format!("{}× faster ({})", x(s.estimate), interval_n(s)),
        (None, Call::Slower) => format!(
            "{}× slower: {}× the speed ({})",
            x(1.0 / s.estimate),
            x(s.estimate),
            interval_n(s)
        ),
        (None, Call::NoDifference) => format!(
            "no difference: {}× ({}, inside the {band} noise band)",
            x(s.estimate),
            interval_n(s)
        ),
        (None, Call::Inconclusive) => format!(
            "inconclusive: {}× ({}, straddles the {band} noise band; more runs would tell)",
            x(s.estimate),
            interval_n(s)
        ),
    };
    format!("{} vs {}: {what}", c.placement, c.baseline)
}

fn basis_words(basis: &str) -> &'static str {
    if basis == "metric" {
        "by the metric"
    } else {
        "by wall time"
    }
}

/// The yield line; `said` = a comparison line already gave the reason it is not called.
fn yield_line(y: &PairRatio, said: bool) -> String {
    if let Some(why) = &y.not_called {
        let why = if said { "as above" } else { why };
        return format!(
            "SMT yield ({} over {}): not called by wall time: {why}",
            y.placement, y.reference
        );
    }
    format!(
        "SMT yield: {} gets {}× the throughput of {} on the same cores ({}, {})",
        y.placement,
        crate::render::ratio_text(y.ratio.estimate),
        y.reference,
        interval_n(&y.ratio),
        basis_words(&y.basis)
    )
}

/// The per-run cost line; `said` as for [`yield_line`].
fn slowdown_line(s: &PairRatio, said: bool) -> String {
    if let Some(why) = &s.not_called {
        let why = if said { "as above" } else { why };
        return format!(
            "SMT cost per run ({} against {}): not called by wall time: {why}",
            s.placement, s.reference
        );
    }
    let x = |v: f64| crate::render::ratio_text(v);
    let (e, lo, hi) = super::analysis::slowdown(&s.ratio);
    format!(
        "SMT cost per run: {} (both siblings of half the cores) runs {}× slower than {} with as many threads ({} {}–{} as a slowdown, n = {}, {})",
        s.placement,
        x(e),
        s.reference,
        s.ratio.interval_label(),
        x(lo),
        x(hi),
        s.ratio.n,
        basis_words(&s.basis)
    )
}

/// What the table does not show, one sentence each: every comparison with its call, the
/// SMT yield and per-run cost, skipped placements, notes, and whether Ctrl-C cut it
/// short. The terminal view prints them under its table; the study's report as a list.
pub fn lines(r: &CompareReport) -> Vec<String> {
    let mut out = Vec::new();
    for c in &r.comparisons {
        out.push(comparison_line(c, r.noise_threshold));
        for x in r.starved.iter().filter(|x| x.placement == c.placement) {
            out.push(super::model::Note::Starved(x.clone()).to_string());
        }
    }
    if let Some(n) = &r.no_comparison {
        out.push(n.clone());
    }
    out.extend(pair_lines(r));
    out.extend(fixed_duration_line(r));
    out.extend(unpaired_line(r));
    for s in &r.skipped {
        out.push(format!("skipped {}: {}", s.label, s.reason));
    }
    for p in &r.placements {
        for n in &p.notes {
            out.push(format!("note: {}: {n}", p.label));
        }
    }
    for n in &r.notes {
        out.push(format!("note: {n}"));
    }
    if let Some(st) = &r.counters {
        out.extend(crate::counters::view::status_lines(st));
    }
    if r.interrupted {
        out.push(format!(
            "interrupted by {}: these numbers cover the runs that finished before it",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    out
}

/// The SMT yield and per-run cost lines.
fn pair_lines(r: &CompareReport) -> Vec<String> {
    let said =
        |why: &Option<String>| why.is_some() && r.comparisons.iter().any(|c| &c.not_called == why);
    let mut out = Vec::new();
    if let Some(y) = &r.smt_yield {
        out.push(yield_line(y, said(&y.not_called)));
    }
    if let Some(s) = &r.pairs_slowdown {
        out.push(slowdown_line(s, said(&s.not_called)));
    }
    out
}

/// The fixed-duration note, unless every line that needs it already gives the reason.
fn fixed_duration_line(r: &CompareReport) -> Option<String> {
    let f = r.fixed_duration.as_ref()?;
    let said = r
        .comparisons
        .iter()
        .map(|c| c.not_called.is_some())
        .chain(r.smt_yield.iter().map(|y| y.not_called.is_some()))
        .any(|x| x);
    (f.metric_chosen.is_some() || !said).then(|| format!("note: {}", super::duration::sentence(f)))
}

/// Placements but no comparison, and not for a reason the report states: a file written
/// before the comparisons were paired by round (they read as none), or no round that every
/// placement finished.
fn unpaired_line(r: &CompareReport) -> Option<String> {
    if r.placements.len() < 2 || !r.comparisons.is_empty() || r.no_comparison.is_some() {
        return None;
    }
    Some(
        if super::analysis::complete_rounds(&r.placements).is_empty() {
            "no comparison: no round ran every placement to the end".to_string()
        } else {
            "no comparison shown: this file was written by an older smtlab, whose comparisons \
         were not paired by round; the runs above are as measured"
                .to_string()
        },
    )
}

/// The labels of the placements a comparison ran, as `` `one-per-core` (CPUs 0-3), … ``.
fn command_labels(c: &CompareSection) -> String {
    c.result
        .placements
        .iter()
        .map(|p| format!("`{}` (CPUs {})", p.label, p.cpus))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the command's runs were compared by: `tps`, `wall time`.
fn command_value(c: &CompareSection) -> String {
    c.result
        .metric
        .as_ref()
        .map_or_else(|| "wall time".to_string(), |m| m.unit.clone())
}

/// The user's command: SMT on vs off is every sibling of some cores against one thread
/// on each of the same cores (the pair `smtlab compare` reports as its SMT yield).
/// `ctx.missing` is the phase's own reason when `c` is None; `ctx.no_smt` why a machine
/// without siblings cannot answer.
pub fn command_answer(c: Option<&CompareSection>, ctx: &AnswerCtx<'_>) -> Answer {
    let (smt, missing, no_smt) = (ctx.smt, ctx.missing, ctx.no_smt);
    let class = WorkloadClass::Command;
    let section = Some(PHASE);
    let Some(c) = c else {
        return not_answered(class, missing.to_string(), section);
    };
    if !smt {
        return not_answered(
            class,
            format!(
                "{no_smt}; the compare section shows what ran here: {}",
                command_labels(c)
            ),
            section,
        );
    }
    let Some(y) = &c.result.smt_yield else {
        return not_answered(
            class,
            format!(
                "the placements that ran ({}) hold no pair of one thread per core and every \
                 sibling of the same cores; `--placements one-per-core,all` asks for it",
                command_labels(c)
            ),
            section,
        );
    };
    // The comparison compare's own lines print for this pair, computed by compare.
    let fixed = c.result.fixed_duration.as_ref();
    if let Some(f) = fixed.filter(|f| f.found_by == FoundBy::Arguments && c.result.metric.is_none())
    {
        return not_answered(class, super::duration::sentence(f), section);
    }
    let Some(p) = super::analysis::paired_in(&c.result, &y.placement, &y.reference) else {
        return not_answered(
            class,
            format!(
                "no round ran both `{}` and `{}` to completion",
                y.placement, y.reference
            ),
            section,
        );
    };
    let cmp = p.comparison;
    let value = command_value(c);
    let chosen = fixed
        .and_then(|f| f.metric_chosen.as_ref().map(|m| (f, m)))
        .map(|(f, m)| format!(" ({}, so `--metric {m}` was read)", f.seen))
        .unwrap_or_default();
    let (answer, tail) = match &p.not_called {
        Some(why) => (HtAnswer::Inconclusive, format!("; not called: {why}")),
        None => (decide(&cmp, HtAnswer::from_yield), indicative_note(&cmp)),
    };
    Answer {
        gate: None,
        class,
        answer,
        reason: format!(
            "SMT yield for `{}`: `{}` (every sibling of the cores) ÷ `{}` (one thread per \
             core), speed by {value}{chosen}, paired by round, against the section's {} noise band: \
             {}{tail}",
            shell_words(&c.result.command),
            y.placement,
            y.reference,
            band(cmp.thresholds.noise),
            cmp,
        ),
        evidence: Some(Evidence {
            what: format!(
                "speed of your command by {value}, `{}` ÷ `{}` on the same cores",
                y.placement, y.reference
            ),
            runs: format!("compare, {} paired rounds", cmp.n),
            comparison: cmp,
        }),
        section,
    }
}

/// The study's finding for the user's command: each placement's value, the SMT pair's
/// speed ratio where it ran, and what that means.
pub(super) fn command_finding(c: &CompareSection, smt: bool) -> Finding {
    let value = command_value(c);
    let mut obs: Vec<String> = c
        .result
        .placements
        .iter()
        .map(|p| {
            let s = match &c.result.metric {
                Some(_) => p
                    .metric
                    .as_ref()
                    .map(|s| format!("{} {value}", crate::render::pm_n(s))),
                None => p.wall_time_ns.as_ref().map(|s| {
                    format!(
                        "{} ± {} wall time (n = {})",
                        duration_ns(s.median),
                        duration_ns(s.mad),
                        s.n
                    )
                }),
            };
            format!(
                "`{}` on CPUs {}: {}",
                p.label,
                p.cpus,
                s.unwrap_or_else(|| "no run".into())
            )
        })
        .collect();
    let mut evidence = Vec::new();
    let mut meaning = None;
    if let Some(f) = &c.result.fixed_duration
        && c.result.metric.is_none()
        && f.found_by == FoundBy::Arguments
    {
        meaning = Some(format!(
            "Wall time says nothing about SMT here: {}.",
            super::duration::sentence(f)
        ));
    } else if let Some(y) = &c.result.smt_yield
        && let Some(p) = super::analysis::paired_in(&c.result, &y.placement, &y.reference)
    {
        let cmp = p.comparison;
        obs.push(format!(
            "`{}` ran at {}",
            y.placement,
            cmp.ratio_of(&format!("the speed of `{}`", y.reference))
        ));
        meaning = Some(match (&p.not_called, cmp.effect) {
            (Some(why), _) => format!("Wall time cannot tell whether SMT helps your command: {why}"),
            (None, Effect::Gain) => format!(
                "The second sibling of each core made your command faster: with SMT on, it \
                 gets more done on the same cores ({}).",
                cmp.interval_text()
            ),
            (None, Effect::NoEffect) => format!("With the second sibling of each core your command ran within {} of its speed on one thread per core: any capacity SMT adds or costs it is smaller than that band.", band(cmp.thresholds.noise)),
            (None, Effect::Loss | Effect::SmallLoss) => "Your command was slower on every sibling than on one thread per core of the same cores: SMT costs it throughput; keep it to one thread per core, or turn HT off for it.".to_string(),
            (None, Effect::Inconclusive) => "The interval is too wide to say whether SMT helps your command: more rounds (`--runs`, or a longer `--budget`) or a quieter machine are needed.".to_string(),
        });
        evidence.push(Evidence {
            what: format!(
                "speed of your command by {value}, `{}` ÷ `{}` on the same cores",
                y.placement, y.reference
            ),
            runs: format!("compare, {} paired rounds", cmp.n),
            comparison: cmp,
        });
    }
    let meaning = meaning.unwrap_or_else(|| {
        if smt {
            "These placements do not differ by SMT alone (no pair of one thread per core and every sibling of the same cores), so they say nothing about HT; the compare section compares each with the first placement.".to_string()
        } else {
            "Without SMT siblings these placements differ in CPUs, not in SMT: they show how your command scales with CPUs here (the compare section compares each with the first placement), not what HT would do.".to_string()
        }
    });
    Finding {
        topic: "your command (compare)".into(),
        observed: obs.join("; ") + ".",
        meaning,
        evidence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conclusion::Answer;
    use crate::experiments::compare::{self as cmp, Context, Measured, PlacementChoice};
    use crate::report::Report;
    use crate::report::verdict::{self, build};
    use crate::stats::Thresholds;
    use crate::study::fixture::{assert_cites_only_what_was_measured, no_smt, smt};

    fn ctx<'a>(smt: bool, missing: &'a str, no_smt: &'a str) -> AnswerCtx<'a> {
        AnswerCtx {
            smt,
            missing,
            no_smt,
        }
    }

    /// A compare section from the fake executor on `r`'s machine: `placements` by name,
    /// then `cpus` lists, `runs` rounds each.
    fn with_command(
        r: &Report,
        placements: &[&str],
        cpus: &[&[u32]],
        runs: usize,
    ) -> CompareSection {
        with_command_as(r, placements, cpus, runs, |_| {})
    }

    /// As [`with_command`], `edit` changing the comparison's settings last.
    fn with_command_as(
        r: &Report,
        placements: &[&str],
        cpus: &[&[u32]],
        runs: usize,
        edit: impl FnOnce(&mut cmp::Config),
    ) -> CompareSection {
        let mut c = cmp::Config::new(vec!["my-app".into(), "--bench".into()]);
        for p in placements {
            c.placements.push(PlacementChoice::parse_named(p).unwrap());
        }
        for l in cpus {
            c.placements
                .push(PlacementChoice::Cpus(crate::cpuset::CpuSet::from_cpus(
                    l.iter().copied(),
                )));
        }
        c.runs = Some(runs);
        c.metric = Some(cmp::metric::MetricSpec::Pgbench);
        // A study's band (`smtlab study` without `--noise`).
        c.noise = Thresholds::YIELD.noise;
        edit(&mut c);
        let result = cmp::fake::run(&r.topology, &c, &crate::progress::Quiet).unwrap();
        CompareSection {
            sized_to_ns: None,
            medians: crate::study::phases::compare::medians(&result),
            result,
        }
    }

    /// A compare section of `one-per-core` and `all` on `r`'s machine, assembled by
    /// compare itself from hand-made runs: per round, each placement's wall time and CPU
    /// time (user), ms.
    fn with_command_runs(r: &Report, runs: [&[(f64, f64)]; 2]) -> CompareSection {
        let mut c = cmp::Config::new(vec!["my-app".into(), "--bench".into()]);
        c.placements = vec![
            PlacementChoice::parse_named("one-per-core").unwrap(),
            PlacementChoice::parse_named("all").unwrap(),
        ];
        c.runs = Some(runs[0].len());
        c.noise = Thresholds::YIELD.noise;
        let resolved = cmp::config::resolve(&r.topology, &c).unwrap();
        let pairs = cmp::smt_pairs(&r.topology, &resolved.variants);
        let ms = |x: f64| (x * 1e6).round() as u64;
        let measured = Measured {
            runs: runs
                .iter()
                .map(|p| {
                    p.iter()
                        .enumerate()
                        .map(|(i, &(wall, cpu))| super::super::model::Run {
                            round: i + 1,
                            position: 0,
                            wall_time_ns: ms(wall),
                            user_time_ns: ms(cpu),
                            system_time_ns: 0,
                            max_rss_bytes: 8 << 20,
                            voluntary_switches: 1,
                            involuntary_switches: 1,
                            exit_code: Some(0),
                            signal: None,
                            metric: None,
                            burner_ops_per_sec: None,
                            leftover_processes: 0,
                            counters: None,
                        })
                        .collect()
                })
                .collect(),
            rounds: runs[0].len(),
            warmup_rounds: 1,
            interrupted: false,
        };
        let result = cmp::assemble(&c, &resolved, measured, pairs, Context::default());
        CompareSection {
            sized_to_ns: None,
            medians: crate::study::phases::compare::medians(&result),
            result,
        }
    }

    /// The command row on the fake SMT machine.
    fn answer_of(c: &CompareSection) -> Answer {
        command_answer(Some(c), &ctx(true, "", ""))
    }

    /// `r` with its compare section replaced by `c`.
    fn report_with(r: &Report, c: CompareSection) -> Report {
        let mut r = r.clone();
        r.compare = Some(c);
        r
    }

    #[test]
    fn compare_section_and_study_row_use_the_same_paired_ratio() {
        // One-per-core takes 100, 110, 120, 130, 140 ms (drift between rounds), `all` is
        // 1.25× faster in every round. Paired by round that is 1.25× with no spread; the
        // section's unpaired ratio of medians once made the drift its interval (about
        // 0.98–1.59, inconclusive) beside a row saying keep HT on, 1.25× (1.25–1.25).
        let one = [100.0, 110.0, 120.0, 130.0, 140.0].map(|w| (w, w * 2.0));
        let all = one.map(|(w, c)| (w / 1.25, c * 1.6));
        let c = with_command_runs(smt(), [&one, &all]);
        let section = &c.result.comparisons[0];
        assert_eq!(section.placement, "all");
        assert!(
            (section.speedup.estimate - 1.25).abs() < 1e-9
                && section.speedup.low > 1.2
                && section.speedup.high < 1.3,
            "{section:?}"
        );
        assert_eq!(section.call, Call::Faster);
        let y = c.result.smt_yield.as_ref().unwrap();
        let a = answer_of(&c);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let e = a.evidence.as_ref().unwrap().comparison;
        // The section's comparison, its yield line and the row: one number, one interval.
        for (what, est, low, high) in [
            (
                "section",
                section.speedup.estimate,
                section.speedup.low,
                section.speedup.high,
            ),
            ("yield", y.ratio.estimate, y.ratio.low, y.ratio.high),
        ] {
            assert!(
                (est - e.estimate).abs() < 1e-9
                    && (low - e.low).abs() < 1e-9
                    && (high - e.high).abs() < 1e-9,
                "{what} {est} ({low}–{high}) vs row {e:?}"
            );
        }
    }

    #[test]
    fn a_fixed_duration_command_by_wall_time_is_not_called_no_difference() {
        // A command that runs for 2 s whatever it gets done: wall time the same on both
        // placements while `all` used twice the CPU time. Wall time measures nothing here;
        // once the row said "no difference … SMT adds no capacity".
        let one = [2001.0, 2002.0, 2000.0, 2001.0, 2003.0].map(|w| (w, 3900.0 + w / 100.0));
        let all = one.map(|(w, c)| (w + 0.5, c * 2.0));
        let c = with_command_runs(smt(), [&one, &all]);
        let section = &c.result.comparisons[0];
        assert_ne!(section.call, Call::NoDifference, "{section:?}");
        let text = lines(&c.result).join("\n");
        assert!(text.contains("--metric"), "{text}");
        let a = answer_of(&c);
        assert!(
            matches!(a.answer, HtAnswer::Inconclusive | HtAnswer::NotMeasured),
            "{a:?}"
        );
        assert!(
            a.reason.contains("fixed time") && a.reason.contains("--metric"),
            "{}",
            a.reason
        );
        let f = command_finding(&c, true);
        assert!(f.topic.starts_with("your command"), "{}", f.topic);
        assert!(!f.meaning.contains("adds no capacity"), "{}", f.meaning);
        assert!(f.meaning.contains("--metric"), "{}", f.meaning);

        // Known tools' time limits in the arguments: sysbench and pgbench get their own
        // metric, with a note saying why; another tool gets no wall-time answer.
        for (words, metric) in [
            (
                &["sysbench", "cpu", "--time=2", "run"][..],
                Some("sysbench"),
            ),
            (&["pgbench", "-n", "-T", "5"][..], Some("pgbench")),
            (&["stress-ng", "--cpu", "4", "--timeout", "5"][..], None),
        ] {
            let c = with_command_as(smt(), &["one-per-core", "all"], &[], 5, |c| {
                c.command.words = words.iter().map(|w| w.to_string()).collect();
                c.metric = None;
            });
            let res = &c.result;
            assert_eq!(
                res.metric.as_ref().map(|m| m.source.as_str()),
                metric,
                "{words:?}"
            );
            let text = lines(res).join("\n");
            assert!(text.contains("fixed time"), "{words:?}: {text}");
            let a = answer_of(&c);
            if metric.is_some() {
                assert_eq!(a.answer, HtAnswer::KeepHtOn, "{words:?}: {a:?}");
            } else {
                assert_eq!(a.answer, HtAnswer::NotMeasured, "{words:?}: {a:?}");
                assert!(a.reason.contains("--metric"), "{}", a.reason);
            }
        }
    }

    #[test]
    fn the_command_row_and_the_section_judge_against_one_band() {
        // Every sibling adds 3 %, each run within ±0.1 %: an interval near 1.03, outside
        // ±2 % and inside ±5 %. Once the section said "faster" (its ±2 %) while the row
        // said "no difference" (±5 %).
        for (noise, call, answer, band) in [
            (0.05, Call::NoDifference, HtAnswer::NoDifference, "±5 %"),
            (0.02, Call::Faster, HtAnswer::KeepHtOn, "±2 %"),
        ] {
            let c = with_command_as(smt(), &["one-per-core", "all"], &[], 8, |c| {
                c.noise = noise;
                c.fake.sibling_gain = 0.03;
                c.fake.jitter = 0.002;
            });
            let section = &c.result.comparisons[0];
            assert!(
                (section.speedup.estimate - 1.03).abs() < 0.005,
                "{section:?}"
            );
            assert_eq!(section.call, call, "band {band}: {section:?}");
            let a = answer_of(&c);
            assert_eq!(a.answer, answer, "band {band}: {a:?}");
            let e = a.evidence.as_ref().unwrap();
            assert_eq!(e.comparison.thresholds.noise, noise);
            assert!(a.reason.contains(band), "{}", a.reason);
            assert!(
                super::super::view::settings(&c).contains(&format!("beyond {band}")),
                "{}",
                super::super::view::settings(&c)
            );
        }
    }

    #[test]
    fn the_command_row_pairs_only_rounds_every_placement_finished() {
        let mut c = with_command(smt(), &["one-per-core", "all"], &[], 7);
        // A failure in round 7 after `one-per-core` ran: `all` has 6 runs.
        c.result.placements[1].runs.pop();
        let e = answer_of(&c).evidence.unwrap();
        assert_eq!(
            (e.comparison.n, e.runs.as_str()),
            (6, "compare, 6 paired rounds")
        );
        // Round 3 of `one-per-core` lost as well: 5 rounds have both.
        c.result.placements[0].runs.remove(2);
        let e = answer_of(&c).evidence.unwrap();
        assert_eq!(e.comparison.n, 5);
    }

    #[test]
    fn the_command_row_answers_from_all_vs_one_per_core_paired_by_round() {
        let c = with_command(smt(), &["one-per-core", "all"], &[], 7);
        let a = answer_of(&c);
        let f = command_finding(&c, true);
        assert_cites_only_what_was_measured(&build(&report_with(smt(), c)));
        // Every sibling adds a quarter per core on the fake executor: a gain.
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let e = a.evidence.as_ref().unwrap();
        assert_eq!(e.comparison.n, 7);
        assert_eq!(e.runs, "compare, 7 paired rounds");
        assert!((e.comparison.estimate - 1.25).abs() < 0.05, "{e:?}");
        assert_eq!(e.comparison.thresholds, Thresholds::YIELD);
        assert!(a.reason.contains("`all`") && a.reason.contains("`one-per-core`"));
        assert!(a.reason.contains("my-app --bench"), "{}", a.reason);
        assert_eq!(a.section, Some(PHASE));
        assert!(f.topic.starts_with("your command"), "{}", f.topic);
        assert!(f.meaning.contains("faster"), "{}", f.meaning);
        assert_eq!(f.evidence.len(), 1);
        // 3 rounds of a 1.25× gain are enough for an interval that calls it; 2 are not,
        // and the reason says why.
        let a = answer_of(&with_command(smt(), &["one-per-core", "all"], &[], 3));
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let a = answer_of(&with_command(smt(), &["one-per-core", "all"], &[], 2));
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(a.reason.contains("only 2 runs"), "{}", a.reason);
    }

    #[test]
    fn a_slower_command_on_every_sibling_turns_ht_off() {
        let mut c = with_command(smt(), &["one-per-core", "all"], &[], 6);
        // `all` gets 0.7× the tps of `one-per-core` in every round.
        let one: Vec<f64> = c.result.placements[0]
            .runs
            .iter()
            .map(|x| x.metric.unwrap())
            .collect();
        for (run, base) in c.result.placements[1].runs.iter_mut().zip(one) {
            run.metric = Some(base * (0.7 + 0.01 * run.round as f64));
        }
        let a = answer_of(&c);
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{a:?}");
        assert_eq!(a.evidence.as_ref().unwrap().comparison.effect, Effect::Loss);
    }

    #[test]
    fn without_siblings_or_without_the_pair_the_command_row_says_why() {
        // No siblings: not measured, naming what ran instead.
        let c = with_command(no_smt(), &[], &[&[0], &[0, 1]], 5);
        let a = command_answer(Some(&c), &ctx(false, "", &verdict::no_smt_reason(no_smt())));
        let f = command_finding(&c, false);
        assert_cites_only_what_was_measured(&build(&report_with(no_smt(), c)));
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("no SMT siblings"), "{}", a.reason);
        assert!(a.reason.contains("`cpus:0-1`"), "{}", a.reason);
        assert!(f.topic.starts_with("your command"), "{}", f.topic);
        assert!(f.meaning.contains("not in SMT"), "{}", f.meaning);
        // Siblings, but two CPU lists that differ by cores, not by SMT.
        let a = answer_of(&with_command(smt(), &[], &[&[0], &[0, 1]], 5));
        assert_eq!(a.answer, HtAnswer::NotMeasured, "{a:?}");
        assert!(a.reason.contains("hold no pair"), "{}", a.reason);
        // No command: the phase's reason.
        let missing = verdict::phase_reason(smt(), PHASE);
        let a = command_answer(smt().compare.as_ref(), &ctx(true, &missing, ""));
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("no command was given"), "{}", a.reason);
    }

    #[test]
    fn calls_read_naturally() {
        let r = crate::experiments::compare::fixture::fixture();
        let l = lines(&r);
        // pairs: about 0.61× the speed; all: 1.24× faster; each with its interval and n.
        assert!(
            l[0].starts_with("pairs vs one-per-core: 1.64× slower: 0.61× the speed (95 % CI"),
            "{l:?}"
        );
        assert!(l[0].ends_with("n = 7)"), "{l:?}");
        assert!(
            l[1].starts_with("all vs one-per-core: 1.24× faster (95 % CI"),
            "{l:?}"
        );
        assert_eq!(band(0.02), "±2 %");
        assert_eq!(crate::render::si_sig(1236.73, 3), "1237");
        assert_eq!(crate::render::si_sig(14.826, 3), "14.8");
        assert_eq!(crate::render::si_sig(0.012345, 3), "0.0123");
        assert_eq!(crate::render::si_sig(36_448.0, 3), "36.4 k");
        assert_eq!(band(0.025), "±2.5 %");
        let argv: Vec<String> = ["sh", "-c", "echo it's | wc", "--x=1,2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(shell_words(&argv), r"sh -c 'echo it'\''s | wc' --x=1,2");
    }
}
