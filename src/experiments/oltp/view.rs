//! Everything that turns an oltp result into tables and sentences: the terminal table
//! (and `--dry-run`'s placements), the study's section, the finding and the inserts answer
//! row, and the export document. Pure.

use super::model::OltpSection;
use super::{PlannedLayout, same_placements};
use crate::conclusion::{
    Answer, CONFIDENCE, Evidence, Finding, HtAnswer, PhaseName, SectionCtx, StudySection,
    WorkloadClass, decide, indicative_note, not_answered,
};
use crate::experiments::smt_yield::view::POOL_ASSUMPTION;
use crate::oltp::model::{OltpReport, SkippedLayout};
use crate::placement::Request;
use crate::render::blocks::Block;
use crate::render::export::{Document, Section};
use crate::render::{self, NONE, Table, count, duration_ns, latency_ns, thousands};
use crate::stats::{Comparison, Effect, Thresholds};

/// The phase that fills this section; results.json names it `"oltp"`.
pub const PHASE: PhaseName = PhaseName::new("oltp");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Database inserts per CPU layout (oltp)";

// ---------------------------------------------------------------------------------------
// The terminal.

/// `--dry-run`: each layout's threads, CPUs and cores, and what was skipped.
pub fn dry_run_text(
    threads: usize,
    topo: &crate::topology::Topology,
    layouts: &[PlannedLayout],
    skipped: &[SkippedLayout],
) -> String {
    let plans: Vec<_> = layouts.iter().map(|l| &l.plan).collect();
    let mut o = format!(
        "oltp dry run: {} for --threads {threads}; nothing is run\n",
        count(plans.len(), "layout"),
    );
    if let Some(u) = plans.iter().find_map(|p| p.scope.as_ref()) {
        o.push_str(&format!("layouts {u}\n"));
    }
    for p in plans {
        let cores: std::collections::BTreeSet<_> = p
            .threads
            .iter()
            .filter(|t| t.cpus.len() == 1)
            .map(|t| topo.core_of(t.cpus.first().expect("non-empty")))
            .collect();
        o.push_str(&format!(
            "\n{}: {} on CPUs {} ({}){}\n",
            p.request,
            count(p.threads.len(), "thread"),
            p.cpus(),
            count(cores.len(), "core"),
            if p.oversubscribed {
                ", oversubscribed"
            } else {
                ""
            }
        ));
        let mut table = Table::new(&["THREAD", "CPUS", "CORE"]);
        for t in &p.threads {
            let core = if t.cpus.len() == 1 {
                topo.core_of(t.cpus.first().expect("non-empty")).to_string()
            } else {
                NONE.into()
            };
            table.push(vec![t.thread.to_string(), t.cpus.to_string(), core]);
        }
        o.push_str(&table.text());
        for n in &p.notes {
            o.push_str(&format!("note: {n}\n"));
        }
    }
    for s in skipped {
        o.push_str(&format!("\nskipped {}: {}\n", s.placement, s.reason));
    }
    for n in same_placements(topo, layouts) {
        o.push_str(&format!("\nnote: {n}\n"));
    }
    o
}

/// Every run: placement, round, inserts/s, elapsed times, commit latency, row check.
pub fn runs_table(r: &OltpReport) -> Table {
    let mut table = Table::new(&[
        "PLACEMENT",
        "THREADS",
        "ROUND",
        "INSERTS/S",
        "ELAPSED",
        "THREAD MIN",
        "MEDIAN",
        "MAX",
        "COMMIT P50",
        "P99",
        "MAX",
        "ROWS",
        "CHECK",
    ]);
    for run in &r.runs {
        let d = |ns: u64| duration_ns(ns as f64);
        table.push(vec![
            run.placement.to_string(),
            run.threads.to_string(),
            run.round.to_string(),
            thousands(run.inserts_per_sec.round() as u64),
            d(run.elapsed_ns),
            d(run.thread_elapsed_min_ns),
            d(run.thread_elapsed_median_ns),
            d(run.thread_elapsed_max_ns),
            latency_ns(run.commit_latency_p50_ns),
            latency_ns(run.commit_latency_p99_ns),
            latency_ns(run.commit_latency_max_ns),
            thousands(run.rows_in_table),
            if run.rows_verified {
                "ok".into()
            } else {
                format!("LOST? expected {}", thousands(run.rows_expected))
            },
        ]);
    }
    table
}

/// Each client thread's counters, run by run; None when no thread counted.
pub fn counters_table(r: &OltpReport) -> Option<Table> {
    use crate::counters::view as counters;
    let counts = || {
        r.runs
            .iter()
            .flat_map(|run| run.per_thread.iter().map(|t| t.counters.as_ref()))
    };
    if counts().all(|c| c.is_none()) {
        return None;
    }
    let hw = counters::any_hardware(counts());
    let mut table = Table::with_header(
        ["PLACEMENT", "ROUND", "THREAD", "CPUS"]
            .map(String::from)
            .into_iter()
            .chain(counters::header(hw))
            .collect::<Vec<_>>(),
    );
    for run in &r.runs {
        for t in &run.per_thread {
            table.push(
                [
                    run.placement.to_string(),
                    run.round.to_string(),
                    t.thread.to_string(),
                    t.cpus.clone(),
                ]
                .into_iter()
                .chain(counters::cells(t.counters.as_ref(), hw))
                .collect(),
            );
        }
    }
    Some(table)
}

fn counters_heading(r: &OltpReport) -> &'static str {
    if r.backend_pinning.starts_with("embedded") {
        "client thread counters (the embedded database runs in them)"
    } else {
        "client thread counters (the server's backend processes are not counted)"
    }
}

/// The first lines: the database, the transaction shape, threads and stop rule.
fn header(r: &OltpReport) -> Vec<String> {
    let stop = match (r.rows_per_thread, r.duration_ns) {
        (Some(rows), _) => format!("{} rows per thread", thousands(rows)),
        (None, Some(ns)) => format!("{} per run", duration_ns(ns as f64)),
        _ => String::new(),
    };
    let mut v = vec![format!(
        "oltp: {} ({} key, {} row(s)/txn, durability {}) on {}",
        r.schema, r.key, r.rows_per_txn, r.durability, r.db_description
    )];
    if let Some(u) = &r.scope {
        v.push(format!("layouts {u}"));
    }
    v.push(format!(
        "{} threads, {stop}, prefill {} rows; backends: {}",
        r.threads,
        thousands(r.prefill_rows),
        r.backend_pinning
    ));
    v
}

/// The terminal report.
pub fn text(r: &OltpReport) -> String {
    let mut out = header(r).join("\n") + "\n\n";
    if !r.runs.is_empty() {
        out.push_str(&runs_table(r).text());
    }
    for s in &r.skipped {
        out.push_str(&format!("skipped {}: {}\n", s.placement, s.reason));
    }
    for run in &r.runs {
        if run.pinning_violations > 0 {
            out.push_str(&format!(
                "warning: {} (round {}): {} seen outside their CPUs\n",
                run.placement,
                run.round,
                count(run.pinning_violations, "thread")
            ));
        }
    }
    if let Some(t) = counters_table(r) {
        out.push_str(&format!("\n{}:\n", counters_heading(r)));
        out.push_str(&t.text());
        let counts = r
            .runs
            .iter()
            .flat_map(|run| run.per_thread.iter().map(|t| t.counters.as_ref()));
        if let Some(n) = crate::counters::view::multiplexing_note(counts) {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::view::status_lines(st) {
            out.push_str(&format!("{l}\n"));
        }
    }
    if r.interrupted {
        out.push_str(&format!(
            "interrupted by {}: the runs above finished before it\n",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------
// The export.

/// The export: one row per run with its raw numbers, and the terminal's tables.
pub fn document(r: &OltpReport) -> Document {
    let mut data = Table::new(&[
        "placement",
        "round",
        "threads",
        "inserts_per_sec",
        "txns_per_sec",
        "rows_committed",
        "elapsed_ns",
        "thread_elapsed_min_ns",
        "thread_elapsed_median_ns",
        "thread_elapsed_max_ns",
        "commit_latency_p50_ns",
        "commit_latency_p99_ns",
        "commit_latency_max_ns",
        "commit_latency_mean_ns",
        "rows_in_table",
        "rows_expected",
        "rows_verified",
        "involuntary_ctx_switches",
        "client_cpu_time_ns",
        "pinning_violations",
    ]);
    for run in &r.runs {
        data.push(vec![
            run.placement.to_string(),
            run.round.to_string(),
            run.threads.to_string(),
            run.inserts_per_sec.to_string(),
            run.txns_per_sec.to_string(),
            run.rows_committed.to_string(),
            run.elapsed_ns.to_string(),
            run.thread_elapsed_min_ns.to_string(),
            run.thread_elapsed_median_ns.to_string(),
            run.thread_elapsed_max_ns.to_string(),
            run.commit_latency_p50_ns.to_string(),
            run.commit_latency_p99_ns.to_string(),
            run.commit_latency_max_ns.to_string(),
            run.commit_latency_mean_ns.to_string(),
            run.rows_in_table.to_string(),
            run.rows_expected.to_string(),
            run.rows_verified.to_string(),
            run.involuntary_ctx_switches.to_string(),
            run.client_cpu_time_ns.to_string(),
            run.pinning_violations.to_string(),
        ]);
    }
    let mut sections = vec![Section {
        heading: "Runs".into(),
        text: header(r)
            .into_iter()
            .chain(
                r.skipped
                    .iter()
                    .map(|s| format!("Skipped {}: {}.", s.placement, s.reason)),
            )
            .collect(),
        table: Some(runs_table(r)),
    }];
    if let Some(t) = counters_table(r) {
        sections.push(Section {
            heading: counters_heading(r).into(),
            text: Vec::new(),
            table: Some(t),
        });
    }
    Document {
        title: format!("smtlab oltp on {}", r.db_version),
        json: serde_json::to_value(r).unwrap_or_default(),
        data,
        sections,
    }
}

// ---------------------------------------------------------------------------------------
// The study's section.

/// The study's oltp settings in one paragraph.
pub fn settings(x: &OltpSection) -> String {
    let res = &x.result;
    format!(
        "{} client threads insert singleton rows into {} ({} table, {} keys, {} row(s) per transaction, durability {}); layouts {}{} run interleaved, {} per run. Backends: {}.",
        res.threads,
        if res.db_version.is_empty() {
            res.db_description.clone()
        } else {
            format!("{} on {}", res.db_version, res.db_description)
        },
        res.schema,
        res.key,
        res.rows_per_txn,
        res.durability,
        x.layouts.join(", "),
        res.scope
            .as_ref()
            .map(|u| format!(" within {} (CPUs {})", u.label, u.cpus))
            .unwrap_or_default(),
        res.duration_ns
            .map(|ns| duration_ns(ns as f64))
            .unwrap_or_else(|| NONE.into()),
        res.backend_pinning
    )
}

/// The study's oltp table: one row per layout.
pub fn table(o: &OltpSection) -> Table {
    let mut t = Table::new(&[
        "LAYOUT",
        "ROUNDS",
        "INSERTS/S",
        "MIN–MAX",
        "COMMIT P99",
        "ROWS",
    ]);
    for s in &o.summary {
        t.rows.push(vec![
            s.placement.to_string(),
            s.inserts_per_sec.n.to_string(),
            render::pm_sig(s.inserts_per_sec.median, s.inserts_per_sec.mad),
            format!(
                "{}–{}",
                render::si(s.inserts_per_sec.min),
                render::si(s.inserts_per_sec.max)
            ),
            latency_ns(s.commit_latency_p99_ns),
            if s.rows_verified {
                "verified".into()
            } else {
                "MISMATCH".into()
            },
        ]);
    }
    for s in &o.result.skipped {
        t.rows.push(vec![
            s.placement.to_string(),
            "0".into(),
            "skipped".into(),
            NONE.into(),
            NONE.into(),
            s.reason.clone(),
        ]);
    }
    t
}

/// The study's oltp runs: every run.
pub fn runs(o: &OltpSection) -> Table {
    let mut t = Table::new(&[
        "LAYOUT",
        "ROUND",
        "INSERTS/S",
        "ROWS",
        "CPUS",
        "INVOL. SWITCHES",
    ]);
    for r in &o.result.runs {
        t.rows.push(vec![
            r.placement.to_string(),
            r.round.to_string(),
            thousands(r.inserts_per_sec.round().max(0.0) as u64),
            thousands(r.rows_committed),
            r.per_thread
                .iter()
                .map(|t| t.cpus.clone())
                .collect::<Vec<_>>()
                .join(" "),
            thousands(r.involuntary_ctx_switches),
        ]);
    }
    t
}

// ---------------------------------------------------------------------------------------
// The finding and the answer row.

/// A single-writer database: more client threads cannot add insert capacity.
pub fn is_sqlite(o: &OltpSection) -> bool {
    o.result.db_version.starts_with("SQLite") || o.result.db.starts_with("sqlite")
}

/// Per round, layout `a`'s inserts/s ÷ layout `b`'s in the same round.
fn oltp_paired(o: &OltpSection, a: &Request, b: &Request, t: Thresholds) -> Option<Comparison> {
    let rate = |p: &Request, round: usize| {
        o.result
            .runs
            .iter()
            .find(|x| x.placement == *p && x.round == round)
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
pub fn inserts_answer(o: Option<&OltpSection>, smt: bool, missing: &str, no_smt: &str) -> Answer {
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
            class,
            answer: decide(&c, HtAnswer::from_yield),
            reason: format!(
                "SMT yield for inserts: `all` (every sibling of the cores) ÷ `one-per-core` \
                 (one thread per core), paired by round: {}{}; {POOL_ASSUMPTION}",
                c,
                indicative_note(&c)
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
        v.push(format!("oltp layout `{}`: {}", s.placement, s.reason));
    }
    v
}

/// The study's oltp section: what was run, inserts per second by layout, the layout table,
/// and every run folded.
impl StudySection for OltpSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        vec![
            Block::Intro(settings(self)),
            Block::Chart(layouts_chart(self)),
            Block::Table(table(self)),
            Block::Folded {
                summary: "Every run".into(),
                blocks: vec![Block::Table(runs(self))],
            },
        ]
    }

    fn finding(&self, smt: bool) -> Option<Finding> {
        Some(oltp_finding(self, smt))
    }
}

/// One bar per layout: the median inserts/s, whiskers min–max.
fn layouts_chart(x: &OltpSection) -> String {
    use render::svg::{Bar, Group};
    let groups: Vec<Group> = x
        .summary
        .iter()
        .enumerate()
        .map(|(i, s)| Group {
            caption: s.placement.to_string(),
            bars: vec![Bar {
                label: String::new(),
                value: s.inserts_per_sec.median,
                range: Some((s.inserts_per_sec.min, s.inserts_per_sec.max)),
                series: i,
                highlight: false,
                tooltip: format!(
                    "{}: {} inserts/s",
                    s.placement,
                    render::pm_sig(s.inserts_per_sec.median, s.inserts_per_sec.mad)
                ),
            }],
        })
        .collect();
    render::svg::bar_chart(
        "oltp-layouts",
        "Inserts per second by layout (median, whiskers min–max)",
        "inserts/s",
        &groups,
        &[],
        None,
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oltp::model::tests::sample;

    #[test]
    fn renders_table() {
        insta::assert_snapshot!(text(&sample()));
    }

    #[test]
    fn exports_parse_back() {
        let dir = tempfile::tempdir().unwrap();
        let e = crate::render::export::Exports {
            json: None,
            csv: Some(dir.path().join("o.csv")),
            markdown: Some(dir.path().join("o.md")),
        };
        e.check().unwrap();
        let rep = sample();
        e.write(|| document(&rep)).unwrap();
        let mut r = ::csv::Reader::from_path(dir.path().join("o.csv")).unwrap();
        let head = r.headers().unwrap().clone();
        assert_eq!(&head[0], "placement");
        let rows: Vec<::csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), rep.runs.len());
        let col = head.iter().position(|h| h == "inserts_per_sec").unwrap();
        let v: f64 = rows[0][col].parse().unwrap();
        assert_eq!(v, rep.runs[0].inserts_per_sec);
        let md = std::fs::read_to_string(dir.path().join("o.md")).unwrap();
        assert!(md.starts_with("# smtlab oltp on PostgreSQL 15.8"), "{md}");
        assert!(md.contains("| PLACEMENT | THREADS |"), "{md}");
    }
}

/// The inserts row and the oltp finding, from the fake study's oltp section.
#[cfg(test)]
pub(crate) mod answer_tests {
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
            &crate::experiments::smt_yield::view::tests::tight(0.80),
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
