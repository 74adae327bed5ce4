//! Everything that turns an oltp result into tables and sentences: the terminal table
//! (and `--dry-run`'s placements), the study's section, the finding and the inserts answer
//! row, and the export document. Pure.

use super::model::OltpSection;
use super::{PlannedLayout, same_placements};
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::oltp::model::{OltpReport, SkippedLayout};
use crate::render::blocks::Block;

pub use super::verdict::PHASE;
use crate::render::export::Document;
use crate::render::{self, NONE, Table, count, duration_ns, latency_ns, thousands};

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

/// Every run: placement, round, inserts/s, elapsed times, commit latency, rows committed
/// and in the table, the row check, the client threads' CPUs and involuntary switches.
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
        "COMMITTED",
        "ROWS",
        "CHECK",
        "CPUS",
        "INVOL. SWITCHES",
    ]);
    for run in &r.runs {
        let d = |ns: u64| duration_ns(ns as f64);
        table.push(vec![
            run.placement.to_string(),
            run.threads.to_string(),
            // From 1, as every sentence counts rounds (the CSV keeps the file's 0-based
            // number).
            (run.round + 1).to_string(),
            thousands(run.inserts_per_sec.round() as u64),
            d(run.elapsed_ns),
            d(run.thread_elapsed_min_ns),
            d(run.thread_elapsed_median_ns),
            d(run.thread_elapsed_max_ns),
            latency_ns(run.commit_latency_p50_ns),
            latency_ns(run.commit_latency_p99_ns),
            latency_ns(run.commit_latency_max_ns),
            thousands(run.rows_committed),
            thousands(run.rows_in_table),
            if run.rows_verified {
                "ok".into()
            } else {
                format!("LOST? expected {}", thousands(run.rows_expected))
            },
            run.per_thread
                .iter()
                .map(|t| t.cpus.clone())
                .collect::<Vec<_>>()
                .join(" "),
            thousands(run.involuntary_ctx_switches),
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

/// The run as one document: what ran, one row per run (what was skipped and any thread
/// seen outside its CPUs under it), the client threads' counters, then the counters'
/// status and whether Ctrl-C cut it short. `smtlab oltp` draws it, `--export-markdown`
/// writes it, and the study folds the same runs table under its layout table.
pub fn blocks(r: &OltpReport) -> Vec<Block> {
    let mut b: Vec<Block> = header(r).into_iter().map(Block::Intro).collect();
    b.push(Block::Heading("Runs".into()));
    if !r.runs.is_empty() {
        b.push(Block::Table(runs_table(r)));
    }
    b.extend(
        r.skipped
            .iter()
            .map(|s| Block::Note(format!("skipped {}: {}", s.placement, s.reason))),
    );
    b.extend(
        r.runs
            .iter()
            .filter(|run| run.pinning_violations > 0)
            .map(|run| {
                Block::Note(format!(
                    "warning: {} (round {}): {} seen outside their CPUs",
                    run.placement,
                    run.round + 1,
                    count(run.pinning_violations, "thread")
                ))
            }),
    );
    b.extend(r.runs.iter().filter_map(|run| {
        let why = run.disturbed.as_ref()?;
        Some(Block::Note(format!(
            "disturbed: {} (round {}): {why}; its round is left out of the layouts' paired comparisons",
            run.placement,
            run.round + 1
        )))
    }));
    if let Some(t) = counters_table(r) {
        b.push(Block::Heading(counters_heading(r).into()));
        b.push(Block::Table(t));
        let counts = r
            .runs
            .iter()
            .flat_map(|run| run.per_thread.iter().map(|t| t.counters.as_ref()));
        b.extend(
            crate::counters::view::multiplexing_note(counts)
                .map(|n| Block::Note(format!("note: {n}"))),
        );
    }
    let mut notes = Vec::new();
    if let Some(st) = &r.counters {
        notes.extend(crate::counters::view::status_lines(st));
    }
    if r.interrupted {
        notes.push(format!(
            "interrupted by {}: the runs above finished before it",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    if !notes.is_empty() {
        b.push(Block::Heading("Notes".into()));
        b.push(Block::List(notes));
    }
    b
}

/// What `--export-*` writes: [`blocks`] as Markdown, [`data`] as CSV, the model as JSON.
pub fn export(r: &OltpReport) -> Document {
    Document::of(
        &format!("smtlab oltp on {}", r.db_version),
        r,
        data(r),
        &blocks(r),
    )
}

/// One row per run with its raw numbers: the CSV export.
pub fn data(r: &OltpReport) -> Table {
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
    data
}

// ---------------------------------------------------------------------------------------
// The study's section.

/// The study's oltp settings in one paragraph.
pub fn settings(x: &OltpSection) -> String {
    let res = &x.result;
    format!(
        "{} client threads insert singleton rows into {} ({} table, {} keys, {} row(s) per transaction, durability {}); layouts {}{} run interleaved, {} per run. Backends: {}.",
        res.threads,
        // The description starts with the version ("SQLite 3.46.0 at …").
        res.db_description,
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

/// The study's oltp section: what was run, inserts per second by layout, the layout table,
/// and every run folded (the command's runs table).
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
                blocks: vec![Block::Table(runs_table(&self.result))],
            },
        ]
    }

    fn finding(&self, smt: bool) -> Option<Finding> {
        Some(super::verdict::oltp_finding(self, smt))
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
        insta::assert_snapshot!(crate::render::terminal::draw(&blocks(&sample())));
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
        e.write(|| export(&rep)).unwrap();
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
