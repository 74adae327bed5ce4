//! What oltp concludes, in one place: the inserts row of the answer table (behind
//! [`Conclusions`]), the study's finding, and what the verdict lists as not measured. The
//! view ([`super::view`]) lays the runs out.

use super::model::OltpSection;
use crate::conclusion::{
    Answer, AnswerCtx, CONFIDENCE, Conclusions, Evidence, Finding, HtAnswer, PhaseName,
    WorkloadClass, decide, indicative_note, not_answered,
};
use crate::experiments::smt_yield::verdict::POOL_ASSUMPTION;
use crate::placement::Request;
use crate::render::{self, duration_ns};
use crate::stats::{Comparison, Effect, Thresholds};

/// The inserts row: SMT on vs off for concurrent inserts on a real database.
impl Conclusions for OltpSection {
    fn answers(o: Option<&Self>, ctx: &AnswerCtx<'_>) -> Vec<Answer> {
        vec![inserts_answer(o, ctx.smt, ctx.missing, ctx.no_smt)]
    }
}

/// The phase that fills this section; results.json names it `"oltp"`.
pub const PHASE: PhaseName = PhaseName::new("oltp");
/// A single-writer database: more client threads cannot add insert capacity.
pub fn is_sqlite(o: &OltpSection) -> bool {
    o.result.db_version.starts_with("SQLite") || o.result.db.starts_with("sqlite")
}

/// Per round, layout `a`'s inserts/s ÷ layout `b`'s in the same round. A round either of
/// whose runs was disturbed while it ran gives no ratio: the disturbance can only slow
/// the run it hit, so keeping it biases the ratio one way.
fn oltp_paired(o: &OltpSection, a: &Request, b: &Request, t: Thresholds) -> Option<Comparison> {
    let rate = |p: &Request, round: usize| {
        o.result
            .runs
            .iter()
            .find(|x| x.placement == *p && x.round == round)
            .filter(|x| x.disturbed.is_none())
            .map(|x| x.inserts_per_sec)
    };
    let rounds: Vec<usize> = {
        let mut v: Vec<usize> = o.result.runs.iter().map(|x| x.round).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let ratios: Vec<f64> = rounds
        .into_iter()
        .filter_map(|k| Some(rate(a, k)? / rate(b, k)?))
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    Comparison::of_paired_ratios(&ratios, t, CONFIDENCE)
}

/// The runs of layouts `a` and `b` disturbed while they ran (left out of their paired
/// comparison), counted, with the first: `2 runs … (first: round 5, `all`: why)`.
fn disturbed_clause(o: &OltpSection, a: &Request, b: &Request) -> Option<String> {
    let mut d = o
        .result
        .runs
        .iter()
        .filter(|r| (r.placement == *a || r.placement == *b) && r.disturbed.is_some());
    let first = d.next()?;
    let n = 1 + d.count();
    Some(format!(
        "{} disturbed while {} ran, {} left out (first: round {}, `{}`: {})",
        render::count(n, "run"),
        if n == 1 { "it" } else { "they" },
        if n == 1 { "its round" } else { "their rounds" },
        first.round + 1,
        first.placement,
        first.disturbed.as_deref().unwrap_or_default()
    ))
}

/// The CPUs each thread of layout `p`'s first run was pinned to.
fn oltp_cpus(o: &OltpSection, p: &Request) -> Option<Vec<String>> {
    o.result
        .runs
        .iter()
        .find(|r| r.placement == *p)
        .map(|r| r.per_thread.iter().map(|t| t.cpus.clone()).collect())
}

/// The inserts row: `all` ÷ `one-per-core` on the same cores, paired by round.
/// `missing` is the phase's own reason when `o` is None; `no_smt` why a machine without
/// siblings cannot answer.
fn inserts_answer(o: Option<&OltpSection>, smt: bool, missing: &str, no_smt: &str) -> Answer {
    let class = WorkloadClass::Inserts;
    let section = Some(PHASE);
    let Some(o) = o else {
        return not_answered(class, missing.to_string(), section);
    };
    if is_sqlite(o) {
        return not_answered(
            class,
            "SQLite admits one writer at a time, so more client threads — on siblings or on \
             cores — cannot add insert capacity: it cannot show SMT capacity (run the study \
             with `--db postgres-managed`)"
                .into(),
            section,
        );
    }
    if !smt {
        return not_answered(class, no_smt.to_string(), section);
    }
    let (Some(_), Some(_)) = (
        oltp_cpus(o, &Request::OnePerCore),
        oltp_cpus(o, &Request::All),
    ) else {
        return not_answered(
            class,
            "oltp did not run both `one-per-core` and `all`, the SMT-off and SMT-on layouts \
             on the same cores"
                .into(),
            section,
        );
    };
    match oltp_paired(o, &Request::All, &Request::OnePerCore, Thresholds::YIELD) {
        Some(c) => Answer {
            gate: None,
            class,
            answer: decide(&c, HtAnswer::from_yield),
            reason: format!(
                "SMT yield for inserts: `all` (every sibling of the cores) ÷ `one-per-core` \
                 (one thread per core), paired by round: {}{}{}; {POOL_ASSUMPTION}",
                c,
                indicative_note(&c),
                disturbed_clause(o, &Request::All, &Request::OnePerCore)
                    .map(|d| format!("; {d}"))
                    .unwrap_or_default()
            ),
            evidence: Some(Evidence {
                what: "inserts/s, all ÷ one-per-core on the same cores".into(),
                runs: format!("oltp, {} rounds", c.n),
                comparison: c,
            }),
            section,
        },
        None => not_answered(
            class,
            "no oltp round ran both `one-per-core` and `all`".into(),
            section,
        ),
    }
}

/// The study's oltp finding: each layout's inserts/s, the yield and the shared-core
/// ratio where both layouts ran on different CPUs, and what they mean.
pub fn oltp_finding(o: &OltpSection, smt: bool) -> Finding {
    let mut obs: Vec<String> = o
        .summary
        .iter()
        .map(|s| {
            format!(
                "`{}` {} inserts/s{}{}",
                s.placement,
                crate::render::pm_n(&s.inserts_per_sec),
                match s.commit_latency_p99_ns {
                    0 => String::new(),
                    ns => format!(" (commit p99 {})", duration_ns(ns as f64)),
                },
                if s.rows_verified {
                    ""
                } else {
                    ", ROW CHECK FAILED"
                }
            )
        })
        .collect();
    let mut evidence = Vec::new();
    let same = |a: &Request, b: &Request| {
        let x = oltp_cpus(o, a);
        x.is_some() && x == oltp_cpus(o, b)
    };
    for (a, what) in [
        (Request::All, "SMT yield: all ÷ one-per-core"),
        (
            Request::Pairs,
            "per thread on a shared core: pairs ÷ one-per-core",
        ),
    ] {
        // A single-writer database cannot show what a sibling adds: no yield is computed.
        if is_sqlite(o)
            || oltp_cpus(o, &a).is_none()
            || oltp_cpus(o, &Request::OnePerCore).is_none()
        {
            continue;
        }
        if same(&a, &Request::OnePerCore) {
            obs.push(format!(
                "`{a}` and `one-per-core` placed the clients on the same CPUs here, so they differ only by noise"
            ));
            continue;
        }
        let t = if a == Request::All {
            Thresholds::YIELD
        } else {
            Thresholds::SLOWDOWN
        };
        if let Some(c) = oltp_paired(o, &a, &Request::OnePerCore, t) {
            obs.push(format!("{what} = {}", c.ratio_of("")));
            evidence.push(Evidence {
                what: format!("inserts/s, {what}"),
                runs: format!("oltp, {} rounds", c.n),
                comparison: c,
            });
        }
    }
    let meaning = if is_sqlite(o) {
        "SQLite admits one writer at a time: extra client threads queue for the write lock, so these layouts show this machine's single-writer insert rate, not what HT adds. Run with `--db postgres-managed` for a database whose writers run in parallel.".to_string()
    } else if !smt {
        "Without siblings the layouts that differ on SMT machines coincide here; the numbers are this machine's insert baseline.".into()
    } else {
        match evidence.first().filter(|e| e.what.contains("yield")) {
            Some(e) => format!(
                "Twice the clients on the same cores gave {}: {}.",
                e.comparison.ratio_of("the inserts of one per core"),
                match e.comparison.effect {
                    Effect::Gain => "the siblings add capacity for this insert path".to_string(),
                    Effect::NoEffect => format!(
                        "the change stayed inside the {} band: the siblings add no capacity beyond it here",
                        render::band(e.comparison.thresholds.noise)
                    ),
                    Effect::Loss | Effect::SmallLoss => "the siblings cost capacity here".into(),
                    Effect::Inconclusive => "too wide to call".into(),
                }
            ),
            None => {
                "The `all` layout did not run, so what the siblings add was not measured.".into()
            }
        }
    };
    Finding {
        topic: format!("database inserts (oltp, {})", o.result.db_version),
        observed: obs.join("; ") + ".",
        meaning,
        evidence,
    }
}

/// The lines the study's verdict lists as not measured for this section.
pub fn not_measured(o: &OltpSection) -> Vec<String> {
    let mut v = Vec::new();
    if is_sqlite(o) {
        v.push("Insert capacity with SMT: SQLite admits one writer at a time, so its inserts cannot show what a second sibling adds; `--db postgres-managed` can.".into());
    }
    for s in &o.result.skipped {
        // The planner's reason often opens with the layout's name ("`pairs` needs SMT
        // siblings…"): say the name once.
        let name = format!("`{}`", s.placement);
        v.push(match s.reason.strip_prefix(&name) {
            Some(rest) => format!("oltp layout {name}{rest}"),
            None => format!("oltp layout {name}: {}", s.reason),
        });
    }
    v
}

/// The inserts row and the oltp finding, from the fake study's oltp section.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::verdict::build;
    use crate::study::fixture::{assert_cites_only_what_was_measured, smt};

    /// The oltp section of the fake SMT study (SQLite).
    fn section() -> OltpSection {
        smt().oltp.clone().expect("the oltp phase ran")
    }

    /// Makes `o` a PostgreSQL run whose inserts/s make `all` ÷ `one-per-core` `ratios[k]`
    /// in round k.
    pub(crate) fn postgres_with_yield(o: &mut OltpSection, ratios: &[f64]) {
        o.result.db = "postgres-managed".into();
        o.result.db_version = "PostgreSQL 15.8".into();
        let template = o
            .result
            .runs
            .iter()
            .find(|x| x.placement == Request::OnePerCore)
            .unwrap()
            .clone();
        o.result.runs.clear();
        for (k, y) in ratios.iter().enumerate() {
            let mut one = template.clone();
            one.round = k;
            one.inserts_per_sec = 10_000.0;
            let mut all = one.clone();
            all.placement = Request::All;
            all.inserts_per_sec = 10_000.0 * y;
            for t in &mut all.per_thread {
                t.cpus.push_str(",x");
            }
            o.result.runs.push(one);
            o.result.runs.push(all);
        }
    }

    /// The fake SMT study with its oltp section replaced by `o`.
    fn report_with(o: OltpSection) -> crate::report::Report {
        let mut r = smt().clone();
        r.oltp = Some(o);
        r
    }

    #[test]
    fn the_settings_name_the_database_version_once() {
        let o = section();
        let text = super::super::view::settings(&o);
        assert_eq!(text.matches(&o.result.db_version).count(), 1, "{text}");
    }

    #[test]
    fn smt_with_a_tight_yield_of_1_3_keeps_ht_on() {
        let mut o = section();
        postgres_with_yield(&mut o, &[1.29, 1.30, 1.31, 1.30, 1.32, 1.28, 1.30]);
        let a = inserts_answer(Some(&o), true, "", "");
        assert_cites_only_what_was_measured(&build(&report_with(o)));
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
        let c = a.evidence.as_ref().unwrap().comparison;
        assert!(
            (c.estimate - 1.30).abs() < 0.01 && c.n == 7 && !c.indicative,
            "{c:?}"
        );
        assert!(a.reason.contains("95 % CI"), "{}", a.reason);
    }

    #[test]
    fn a_disturbed_round_is_left_out_of_the_inserts_row_with_its_reason() {
        // Four rounds at 1.29–1.31 and a fifth whose `all` run lost CPU to another task
        // (0.95): kept, the row is inconclusive at 1.22× (95 % CI 1.03–1.45); left out,
        // the four clean rounds keep HT on at 1.30× (1.29–1.31).
        let mut o = section();
        postgres_with_yield(&mut o, &[1.29, 1.30, 1.31, 1.30, 0.95]);
        let a = inserts_answer(Some(&o), true, "", "");
        let c = a.evidence.as_ref().unwrap().comparison;
        assert_eq!((a.answer, c.n), (HtAnswer::Inconclusive, 5), "{}", a.reason);
        assert!(
            (c.estimate - 1.22).abs() < 0.005
                && (c.low - 1.03).abs() < 0.005
                && (c.high - 1.45).abs() < 0.005,
            "{c:?}"
        );
        let why = "thread 2 on CPU 3 was kept off its CPU by other work (70 % of the run on a CPU, preempted 800 times)";
        let all = o
            .result
            .runs
            .iter_mut()
            .find(|r| r.placement == Request::All && r.round == 4)
            .unwrap();
        all.disturbed = Some(why.into());
        let a = inserts_answer(Some(&o), true, "", "");
        let c = a.evidence.as_ref().unwrap().comparison;
        assert_eq!((a.answer, c.n), (HtAnswer::KeepHtOn, 4), "{}", a.reason);
        assert!(
            (c.estimate - 1.30).abs() < 0.005 && c.low > 1.285 && c.high < 1.315,
            "{c:?}"
        );
        assert!(
            a.reason.contains(&format!(
                "1 run disturbed while it ran, its round left out (first: round 5, `all`: {why})"
            )),
            "{}",
            a.reason
        );
        assert_cites_only_what_was_measured(&build(&report_with(o)));
    }

    #[test]
    fn sqlite_alone_cannot_answer_for_inserts() {
        let o = section();
        assert!(is_sqlite(&o));
        assert_cites_only_what_was_measured(&build(smt()));
        let a = inserts_answer(Some(&o), true, "", "");
        assert_eq!(a.answer, HtAnswer::NotMeasured);
        assert!(a.reason.contains("one writer at a time"), "{}", a.reason);
        assert!(not_measured(&o).iter().any(|n| n.contains("SQLite")));
        let f = oltp_finding(&o, true);
        assert!(f.topic.starts_with("database"), "{}", f.topic);
        assert!(f.meaning.contains("single-writer"), "{}", f.meaning);
    }

    #[test]
    fn indicative_intervals_are_not_called_95_percent() {
        let mut o = section();
        postgres_with_yield(&mut o, &[1.3, 1.31]);
        let a = inserts_answer(Some(&o), true, "", "");
        assert!(a.reason.contains("indicative (n = 2)"), "{}", a.reason);
        assert!(!a.reason.contains("95 % CI"), "{}", a.reason);
        // Two rounds give no interval: no answer.
        assert_eq!(a.answer, HtAnswer::Inconclusive, "{a:?}");
        assert!(a.reason.contains("no answer is drawn"), "{}", a.reason);
        // Three tight rounds do: a Student-t interval with 2 degrees of freedom.
        let mut o = section();
        postgres_with_yield(&mut o, &[1.3, 1.31, 1.29]);
        let a = inserts_answer(Some(&o), true, "", "");
        assert!(a.reason.contains("95 % CI"), "{}", a.reason);
        assert_eq!(a.answer, HtAnswer::KeepHtOn, "{a:?}");
    }

    /// Insert yields compare N threads with 2N on the same cores: the row says that "turn
    /// HT off" assumes a pool sized to the logical CPUs, and offers the other remedy (the
    /// lock row's twin is in yield's view).
    #[test]
    fn the_insert_row_states_the_thread_pool_assumption() {
        let mut o = section();
        postgres_with_yield(
            &mut o,
            &crate::experiments::smt_yield::verdict::tests::tight(0.80),
        );
        let a = inserts_answer(Some(&o), true, "", "");
        assert_eq!(a.answer, HtAnswer::TurnHtOff, "{}", a.reason);
        assert!(
            a.reason.contains("sized to the logical CPUs"),
            "{}",
            a.reason
        );
        assert!(a.reason.contains("one thread per core"), "{}", a.reason);
        assert!(a.reason.contains("other remedy"), "{}", a.reason);
    }
}
