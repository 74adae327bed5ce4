//! Everything that turns a pairs result into tables and sentences: one document (its
//! sections) that the terminal, `--export-markdown` and `--export-csv` all render. Pure.

use super::analysis::LOSS_BELOW;
use super::model::{
    Check, Interval, JudgedOver, PairEntry, PairsReport, PairsSection, PartnerKind,
};
use crate::conclusion::{Evidence, Finding, PhaseName, SectionCtx, StudySection};
use crate::render::blocks::Block;
use crate::render::export::{Document, Section};
use crate::render::{self, NONE, Table, fixed_bounds, fixed2};
use crate::stats::Comparison;

/// The study phase that fills [`PairsSection`].
pub const PHASE: PhaseName = PhaseName::new("pairs");
/// Its section's title in the report.
pub const TITLE: &str = "Pair interference (pairs)";

/// `0.82 (0.78–0.86)`; an interval whose bounds round alike at two decimals gets a third
/// (`1.000 (0.998–1.003)`), so that a narrow interval never reads as a point.
fn interval(i: Option<Interval>) -> String {
    match i {
        Some(i) if i.n == 1 => format!("{} (n = 1)", fixed2(i.estimate)),
        Some(i) if i.low == i.high => format!("{} (an interval of zero width)", fixed2(i.estimate)),
        Some(i) => {
            let d = if fixed2(i.low) == fixed2(i.high) {
                3
            } else {
                2
            };
            format!(
                "{} ({})",
                render::fixed(i.estimate, d),
                fixed_bounds(i.low, i.high, d)
            )
        }
        None => NONE.into(),
    }
}

/// A share as whole per cent with a space before the sign, as the rest of this report
/// writes its levels (`90 % intervals`) and the tool its interval labels (`95 % CI`).
fn percent(share: f64) -> String {
    format!("{} %", render::percent_figure(share, 0))
}

/// Which pairs a check's verdict rests on, with their count and why.
fn judged_over(c: &Check) -> String {
    match c.judged_over {
        JudgedOver::LossPairs => format!(
            "the {} pairs measured below {} (the {})",
            c.loss_pairs,
            fixed2(LOSS_BELOW),
            c.judged_over.label()
        ),
        JudgedOver::AllPairs => format!(
            "all {} scored pairs ({} measured below {}, fewer than the {} it takes to judge \
             over the loss pairs alone)",
            c.pairs,
            c.loss_pairs,
            fixed2(LOSS_BELOW),
            super::analysis::MIN_CHECK_PAIRS
        ),
    }
}

fn ratio(c: &Option<Comparison>) -> String {
    interval(c.as_ref().map(Interval::of))
}

fn find<'a>(r: &'a PairsReport, a: &str, b: &str) -> Option<&'a PairEntry> {
    r.pairs.iter().find(|p| p.a == a && p.b == b)
}

/// The title line.
pub fn title(r: &PairsReport) -> String {
    format!(
        "smtlab pairs on CPUs {} and {} ({})",
        r.partner.cpus[0], r.partner.cpus[1], r.partner.label
    )
}

/// Every section, in the order the terminal prints them.
pub fn sections(r: &PairsReport) -> Vec<Section> {
    let mut out = Vec::new();
    let mut intro = vec![format!(
        "Each workload ran alone on CPU {} and beside each ruler ({}) on CPU {} ({}), {} \
         round{} of {} runs after {} warm-up, in counterbalanced order; every speed is a share \
         of the workload's own speed alone, paired by round.",
        r.partner.cpus[0],
        r.rulers.join(", "),
        r.partner.cpus[1],
        r.partner.label,
        r.rounds,
        if r.rounds == 1 { "" } else { "s" },
        render::duration_ns(r.duration_ns as f64),
        render::duration_ns(r.warmup_ns as f64),
    )];
    intro.push(format!(
        "Cost: the profile took {} runs in {}{}.",
        r.profile_runs,
        render::duration_ns(r.profile_wall_ns as f64),
        if r.check_runs > 0 {
            format!(
                ", measuring the checked pairs {} runs in {}",
                r.check_runs,
                render::duration_ns(r.check_wall_ns as f64)
            )
        } else {
            String::new()
        }
    ));
    if let Some(f) = &r.profiles_from {
        intro.push(format!(
            "Profiles read from {f}; only workloads not in it were profiled."
        ));
    }
    if r.synthetic {
        intro.push("synthetic: made-up numbers from the fake engine, not measurements".into());
    }
    intro.extend(r.notes.iter().map(|n| format!("note: {n}")));
    out.push(Section {
        heading: "Setting".into(),
        text: intro,
        table: None,
    });

    // Profiles.
    let mut head = vec!["WORKLOAD".to_string(), "ALONE".to_string()];
    head.extend(
        r.rulers
            .iter()
            .map(|k| format!("BESIDE {}", k.to_uppercase())),
    );
    let mut sen = Table::with_header(head);
    let mut head = vec!["WORKLOAD".to_string()];
    head.extend(r.rulers.iter().map(|k| k.to_uppercase()));
    let mut con = Table::with_header(head);
    for p in &r.profiles {
        let mut row = vec![
            p.workload.clone(),
            if p.alone_per_sec > 0.0 {
                format!("{} {}", render::si(p.alone_per_sec), p.unit)
            } else {
                NONE.into()
            },
        ];
        row.extend(p.sensitivity.iter().map(ratio));
        sen.push(row);
        let mut row = vec![p.workload.clone()];
        row.extend(p.contentiousness.iter().map(ratio));
        con.push(row);
    }
    let level = format!(
        "{} % intervals",
        render::fixed(super::config::CONFIDENCE * 100.0, 0)
    );
    out.push(Section {
        heading: "Sensitivity: the workload's speed beside each ruler".into(),
        text: vec![format!(
            "Speed beside the ruler ÷ speed alone ({level}, Student t on log ratios)."
        )],
        table: Some(sen),
    });
    out.push(Section {
        heading: "Contentiousness: each ruler's speed beside the workload".into(),
        text: vec![format!(
            "The ruler's speed beside the workload ÷ the ruler alone ({level})."
        )],
        table: Some(con),
    });

    // The model.
    match &r.model {
        Some(m) => {
            let mut t = Table::new(&["TERM", "COEFFICIENT", "RESOURCE"]);
            t.push(vec![
                "c0".into(),
                render::fixed(m.intercept, 3),
                "every pair (time sharing, front end)".into(),
            ]);
            for (k, c) in r.rulers.iter().zip(&m.coefficients) {
                let res = k
                    .parse::<crate::burn::BurnerKind>()
                    .map(super::analysis::resource)
                    .unwrap_or("");
                t.push(vec![k.clone(), render::fixed(*c, 3), res.into()]);
            }
            out.push(Section {
                heading: "Model".into(),
                text: vec![
                    m.form.clone(),
                    format!("Source: {}.", m.source),
                    format!(
                        "Fit: {} ruler pairs, residual SD {} (dof {}), largest residual {}, R² {}. \
                         Each prediction's {level} carry this residual error and the profiles' \
                         own uncertainty; a pair of rulers is predicted from a fit without \
                         them (leave one workload out).",
                        m.training_pairs,
                        render::fixed(m.residual_sd, 3),
                        m.residual_dof,
                        render::fixed(m.max_abs_residual, 3),
                        m.r_squared
                            .map_or_else(|| NONE.to_string(), |x| render::fixed(x, 2))
                    ),
                ],
                table: Some(t),
            });
        }
        None => out.push(Section {
            heading: "Model".into(),
            text: vec!["not fitted: too few ruler pairs (see Not measured)".into()],
            table: None,
        }),
    }

    // The pair matrix, one row per unordered pair.
    let mut t = Table::new(&[
        "A",
        "B",
        "A BESIDE B",
        "MEASURED",
        "B BESIDE A",
        "MEASURED",
        "COMBINED",
    ]);
    let mut drivers = Vec::new();
    for (i, pa) in r.profiles.iter().enumerate() {
        for pb in &r.profiles[i..] {
            let ab = find(r, &pa.workload, &pb.workload);
            let ba = find(r, &pb.workload, &pa.workload);
            let est = |p: Option<&PairEntry>| {
                p.and_then(|p| p.measured.or(p.predicted))
                    .map(|x| x.estimate)
            };
            let combined = match (est(ab), est(ba)) {
                (Some(x), Some(y)) => format!("{} of 2.00", fixed2(x + y)),
                _ => NONE.into(),
            };
            t.push(vec![
                pa.workload.clone(),
                pb.workload.clone(),
                interval(ab.and_then(|p| p.predicted)),
                interval(ab.and_then(|p| p.measured)),
                interval(ba.and_then(|p| p.predicted)),
                interval(ba.and_then(|p| p.measured)),
                combined,
            ]);
        }
    }
    for p in &r.pairs {
        if p.drivers.is_empty() {
            continue;
        }
        let d: Vec<String> = p
            .drivers
            .iter()
            .map(|d| {
                format!(
                    "{} is sensitive to {} and {} contends on it ({} of the loss, the {} ruler's term)",
                    p.a,
                    d.resource,
                    p.b,
                    fixed2(d.loss),
                    d.ruler
                )
            })
            .collect();
        drivers.push(format!(
            "{} beside {}: predicted {}: {}.",
            p.a,
            p.b,
            fixed2(p.predicted.map_or(f64::NAN, |x| x.estimate)),
            d.join("; ")
        ));
    }
    let mut text = vec![format!(
        "A BESIDE B: A's speed with B on the partner CPU ÷ A alone, predicted with its {} % \
         prediction interval and, where measured, measured (a pair of rulers is measured by the profile itself). \
         COMBINED: the two speeds added (measured where measured, else predicted), against 2.00 for each alone on a CPU of its own.",
        render::fixed(super::config::CONFIDENCE * 100.0, 0)
    )];
    text.extend(drivers);
    out.push(Section {
        heading: "Pairs".into(),
        text,
        table: Some(t),
    });

    // The check.
    if let Some(c) = &r.check {
        let mut t = Table::new(&[
            "PREDICTOR",
            "MEAN |ERROR|",
            "WORST |ERROR|",
            "MEAN |ERROR| WHERE SPEED < 0.9",
        ]);
        for s in &c.scores {
            t.push(vec![
                s.predictor.clone(),
                render::fixed(s.mean_abs_error, 3),
                render::fixed(s.worst_abs_error, 3),
                s.loss_pairs_mean_abs_error
                    .map_or_else(|| NONE.to_string(), |x| render::fixed(x, 3)),
            ]);
        }
        let mut text = vec![format!(
            "{} ({} with a measured speed below {}); {} of the measured speeds \
             fall inside their {} % prediction interval{}.",
            render::count(c.pairs, "scored pair"),
            c.loss_pairs,
            fixed2(LOSS_BELOW),
            percent(c.coverage),
            render::fixed(c.confidence * 100.0, 0),
            if c.in_sample_skipped > 0 {
                format!(
                    "; {} measured ruler pairs are not scored (their prediction was fitted on them)",
                    c.in_sample_skipped
                )
            } else {
                String::new()
            }
        )];
        let over = judged_over(c);
        text.push(match c.beats_both {
            Some(true) => format!("The model beats both baselines on this machine, judged over {over}."),
            Some(false) => format!(
                "The model does NOT beat both baselines on this machine, judged over {over}: do not act on its predictions here."
            ),
            None => format!(
                "Too few scored pairs to judge the model here (fewer than {}): measure more (--measure all).",
                super::analysis::MIN_CHECK_PAIRS
            ),
        });
        out.push(Section {
            heading: "Check: predicted against measured".into(),
            text,
            table: Some(t),
        });
    }

    // The advice.
    if let Some(a) = &r.advice {
        let mut t = Table::new(&[
            "WORKLOAD",
            "THREADS",
            "CPUS",
            "PREDICTED SPEEDS",
            "LOWEST BOUND",
            "FLOOR",
        ]);
        let mut lines = vec![format!("{}.", a.verdict)];
        for w in &a.workloads {
            t.push(vec![
                w.workload.clone(),
                w.threads.to_string(),
                w.cpus.clone(),
                w.speeds
                    .iter()
                    .map(|s| fixed2(*s))
                    .collect::<Vec<_>>()
                    .join(" "),
                fixed2(w.lowest_low),
                if w.floor > 0.0 {
                    fixed2(w.floor)
                } else {
                    NONE.into()
                },
            ]);
            let cpus = crate::cpuset::CpuSet::parse_list(&w.cpus)
                .map(|c| c.to_vec())
                .unwrap_or_default();
            lines.push(format!(
                "{}: taskset -c {} …   (systemd: CPUAffinity={})",
                w.workload,
                w.cpus,
                cpus.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
            if w.floor > 0.0 && w.lowest_low < w.floor {
                lines.push(format!(
                    "{}: its prediction interval reaches down to {}, below its floor {}: the floor is met by the estimate, not surely",
                    w.workload,
                    fixed2(w.lowest_low),
                    fixed2(w.floor)
                ));
            }
        }
        let whole: Vec<&str> = a
            .workloads
            .iter()
            .filter(|w| w.shared_threads == 0)
            .map(|w| w.workload.as_str())
            .collect();
        if r.partner.kind == super::model::PartnerKind::SmtSiblings
            && !whole.is_empty()
            && !a.pairs.is_empty()
        {
            lines.push(format!(
                "Whole cores for {}: on Kubernetes, a Guaranteed pod under the static CPU \
                 manager policy with `full-pcpus-only`; under Slurm, `--hint=nomultithread`.",
                whole.join(", ")
            ));
        }
        if !a.idle_cpus.is_empty() {
            lines.push(format!("Idle: CPUs {}.", a.idle_cpus));
        }
        lines.push(format!(
            "Search: {}, {} pairings scored; predicted total {} solo speeds{}.",
            a.method,
            a.tried,
            fixed2(a.throughput),
            a.throughput_unshared
                .map(|u| format!(", {} with one thread per core (HT off)", fixed2(u)))
                .unwrap_or_default()
        ));
        out.push(Section {
            heading: "Placement advice".into(),
            text: lines,
            table: Some(t),
        });
    }

    if !r.not_measured.is_empty() || r.interrupted {
        let mut text: Vec<String> = r
            .not_measured
            .iter()
            .map(|n| format!("not measured: {n}"))
            .collect();
        if r.interrupted {
            text.push(
                "interrupted: these are the runs made before the signal; profiles were not saved"
                    .into(),
            );
        }
        out.push(Section {
            heading: "Not measured".into(),
            text,
            table: None,
        });
    }
    out
}

/// The terminal report.
pub fn text(r: &PairsReport) -> String {
    let mut o = format!("{}\n", title(r));
    for s in sections(r) {
        o.push_str(&format!("\n{}\n", s.heading));
        for l in &s.text {
            o.push_str(l);
            o.push('\n');
        }
        if let Some(t) = &s.table {
            o.push_str(&t.text());
        }
    }
    o
}

/// The raw numbers, one row per ordered pair.
pub fn data(r: &PairsReport) -> Table {
    let mut t = Table::new(&[
        "a",
        "b",
        "predicted_speed",
        "predicted_low",
        "predicted_high",
        "confidence",
        "measured_speed",
        "measured_low",
        "measured_high",
        "error",
    ]);
    let f = |x: Option<f64>| x.map_or_else(|| NONE.to_string(), |v| v.to_string());
    for p in &r.pairs {
        t.push(vec![
            p.a.clone(),
            p.b.clone(),
            f(p.predicted.map(|x| x.estimate)),
            f(p.predicted.map(|x| x.low)),
            f(p.predicted.map(|x| x.high)),
            f(p.predicted.map(|x| x.confidence)),
            f(p.measured.map(|x| x.estimate)),
            f(p.measured.map(|x| x.low)),
            f(p.measured.map(|x| x.high)),
            f(p.error),
        ]);
    }
    t
}

/// What `--export-*` write.
pub fn document(r: &PairsReport) -> Document {
    Document {
        title: title(r),
        json: serde_json::to_value(r).unwrap_or_default(),
        data: data(r),
        sections: sections(r),
    }
}

/// The pair matrix as a heatmap: row A, column B, A's speed beside B ÷ A alone (measured
/// where measured, else predicted).
pub fn matrix_chart(r: &PairsReport) -> String {
    let labels: Vec<String> = r.profiles.iter().map(|p| p.workload.clone()).collect();
    let cells: Vec<Vec<Option<f64>>> = labels
        .iter()
        .map(|a| {
            labels
                .iter()
                .map(|b| {
                    find(r, a, b)
                        .and_then(|p| p.measured.or(p.predicted))
                        .map(|x| x.estimate)
                })
                .collect()
        })
        .collect();
    render::svg::heatmap_styled(
        "pairs-heatmap",
        &format!(
            "Speed of the row's workload beside the column's ÷ alone ({})",
            r.partner.label
        ),
        &labels,
        &cells,
        "× alone",
        render::svg::HeatmapStyle {
            digits: 2,
            between: "beside",
            items: "workloads",
        },
    )
}

/// The lowest measured pair of rulers: (A, B, its ratio).
fn worst_measured(r: &PairsReport) -> Option<(&str, &str, Comparison)> {
    let mut best: Option<(&str, &str, Comparison)> = None;
    for (i, row) in r.ruler_pairs.iter().enumerate() {
        for (j, c) in row.iter().enumerate() {
            let (Some(c), Some(a), Some(b)) = (c, r.rulers.get(i), r.rulers.get(j)) else {
                continue;
            };
            if best.as_ref().is_none_or(|x| c.estimate < x.2.estimate) {
                best = Some((a, b, *c));
            }
        }
    }
    best
}

/// The study's pairs section: the heatmap, then the command's own sections.
impl StudySection for PairsSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        let r = &self.result;
        let mut b = Vec::new();
        for (k, s) in sections(r).into_iter().enumerate() {
            if k == 0 {
                let mut lines = s.text.into_iter();
                if let Some(first) = lines.next() {
                    b.push(Block::Intro(first));
                }
                b.extend(lines.map(Block::Note));
                b.push(Block::Chart(matrix_chart(r)));
                continue;
            }
            b.push(Block::Heading(s.heading));
            b.extend(s.text.into_iter().map(Block::Note));
            if let Some(t) = s.table {
                b.push(Block::Table(t));
            }
        }
        b
    }

    fn finding(&self, _smt: bool) -> Option<Finding> {
        let r = &self.result;
        let (a, b, c) = worst_measured(r)?;
        let shared = match r.partner.kind {
            PartnerKind::SmtSiblings => "sharing a core (SMT siblings)",
            PartnerKind::SharedCache => "on separate cores sharing a cache and the memory bus",
        };
        let check = match r.check.as_ref().map(|c| (c.beats_both, judged_over(c))) {
            Some((Some(true), over)) => {
                format!("the model beat both baselines here, judged over {over}")
            }
            Some((Some(false), over)) => {
                format!("the model did NOT beat both baselines here, judged over {over}")
            }
            _ => "too few pairs were held out to judge the model here".to_string(),
        };
        let meaning = if c.estimate < LOSS_BELOW {
            format!(
                "Work that presses what {b} presses ({}) costs {a}-like work about {} of its speed {shared}; \
                 `smtlab pairs` predicts any two of your own workloads from one profile each, and `--advise` \
                 places them.",
                b.parse::<crate::burn::BurnerKind>()
                    .map(super::analysis::resource)
                    .unwrap_or("its resource"),
                percent(1.0 - c.estimate)
            )
        } else {
            format!(
                "No pair of the study's rulers lost 10 % or more {shared} by its estimate; your own \
                 workloads may press other resources: `smtlab pairs --cmd NAME='CMD'` measures them."
            )
        };
        Some(Finding {
            topic: "pair interference (pairs)".into(),
            observed: format!(
                "{a} ran at {} of its speed alone beside {b} {shared}, the lowest of {} ruler pairs \
                 measured over {}; {check}.",
                interval(Some(Interval::of(&c))),
                r.ruler_pairs
                    .iter()
                    .flatten()
                    .filter(|x| x.is_some())
                    .count(),
                render::count(r.rounds, "round")
            ),
            meaning,
            evidence: vec![Evidence {
                what: format!(
                    "{a}'s speed beside {b} ÷ {a} alone, CPUs {} and {}",
                    r.partner.cpus[0], r.partner.cpus[1]
                ),
                runs: format!("pairs profile rounds 1–{}", r.rounds),
                comparison: c,
            }],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(estimate: f64, low: f64, high: f64) -> Option<Interval> {
        Some(Interval {
            estimate,
            low,
            high,
            confidence: 0.9,
            n: 0,
        })
    }

    #[test]
    fn a_narrow_interval_never_reads_as_a_point() {
        assert_eq!(interval(at(0.82, 0.78, 0.86)), "0.82 (0.78–0.86)");
        // Bounds that round alike at two decimals ("1.00 (1.00)") get a third.
        assert_eq!(interval(at(1.0004, 0.998, 1.003)), "1.000 (0.998–1.003)");
        assert_eq!(
            interval(at(1.0, 1.0, 1.0)),
            "1.00 (an interval of zero width)"
        );
        assert_eq!(interval(None), NONE);
    }
}
