//! c2c's view: its one document ([`blocks`]: matrix, per-pair spread, ceilings), drawn on
//! the terminal and written by [`export`], the study section's table ([`classes`]) and the
//! CSV rows ([`data`]); its finding is in `verdict`. Pure.

use super::model::{C2c, C2cSection};
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::render::blocks::Block;
use crate::render::export::Document;
use crate::render::{self, Table, si};

/// The phase that fills this section; results.json names it `"c2c"`.
pub const PHASE: PhaseName = PhaseName::new("c2c");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Cache-line handoff latency (c2c)";

/// The run as one document: what was measured, the matrix, per-pair spread (up to 8
/// CPUs), the ceilings per relation, then the notes (with `hypervisor`, the guest
/// caveat first). `smtlab c2c` draws it, `--export-markdown` writes it.
pub fn blocks(r: &C2c, hypervisor: bool) -> Vec<Block> {
    let mut b: Vec<Block> = intro(r).into_iter().map(Block::Intro).collect();
    b.push(Block::Heading("Latency matrix".into()));
    b.push(Block::Table(matrix(r)));
    if let Some(t) = pairs(r) {
        b.push(Block::Heading("Pairs".into()));
        b.push(Block::Table(t));
    }
    if let Some(t) = ceilings(r) {
        b.push(Block::Heading(
            "Ceiling on contended lock handoffs, 1 / (k × latency)".into(),
        ));
        b.push(Block::Table(t));
        b.push(Block::Note(CEILING_NOTE.into()));
    }
    let mut notes = Vec::new();
    if hypervisor {
        let kind = None;
        notes.push(crate::render::Caveat::Hypervisor { kind }.to_string());
    }
    notes.extend(self::notes(r));
    if !notes.is_empty() {
        b.push(Block::Heading("Notes".into()));
        b.push(Block::List(
            notes.into_iter().map(|n| format!("note: {n}")).collect(),
        ));
    }
    b
}

/// What `--export-*` writes: [`blocks`] as Markdown, [`data`] as CSV, the model as JSON.
pub fn export(r: &C2c, hypervisor: bool) -> Document {
    Document::of("smtlab c2c", r, data(r), &blocks(r, hypervisor))
}

const CEILING_NOTE: &str = "k=1: the lock line alone moves per handoff; k=2: plus one data line. Real contended locks reach a fraction of this.";

/// What was measured, one line each.
fn intro(r: &C2c) -> Vec<String> {
    let mut v = vec![
        "Cache-line handoff latency, one way (CAS ping-pong, round trip / 2), median ns".into(),
        format!(
            "{} samples × {} round trips per pair; first sample discarded",
            r.samples, r.round_trips
        ),
    ];
    if !r.left_out.is_empty() {
        v.push(format!(
            "CPUs {} measured; left out to fit the budget: {}",
            r.cpus, r.left_out
        ));
    }
    v
}

/// Pairs stopped at their time limit, and an interrupted run.
fn notes(r: &C2c) -> Vec<String> {
    let mut v: Vec<String> = r
        .pairs
        .iter()
        .filter(|p| p.time_limited)
        .map(|p| {
            format!(
                "pair {}-{} stopped at its time limit after {} of {} samples: a handoff took {}, \
                 and a cache line moves in under {}, so its two threads were mostly not running at \
                 the same time (as when a hypervisor runs both vCPUs on one host CPU).",
                p.a,
                p.b,
                p.latency_ns.n,
                r.samples,
                render::duration_ns(p.latency_ns.median),
                render::duration_ns(crate::engine::SLOWEST_HANDOFF_NS),
            )
        })
        .collect();
    if r.interrupted {
        v.push("interrupted: pairs not measured show `?`.".into());
    }
    v
}

/// Few enough CPUs to show each cell's spread and the per-pair table.
fn small(r: &C2c) -> bool {
    r.cpus.len() <= 8
}

/// The median latency of every pair, CPU by CPU (± MAD up to 8 CPUs).
pub fn matrix(r: &C2c) -> Table {
    let list = r.cpus.to_vec();
    let small = small(r);
    let mut table = Table::with_header(
        std::iter::once("CPU".to_string())
            .chain(list.iter().map(u32::to_string))
            .collect::<Vec<_>>(),
    );
    for (i, &a) in list.iter().enumerate() {
        let mut row = vec![a.to_string()];
        for (j, &b) in list.iter().enumerate() {
            row.push(match r.matrix_ns[i][j] {
                None if i == j => "-".into(),
                None => "?".into(),
                Some(m) => {
                    let mad = r
                        .pairs
                        .iter()
                        .find(|p| (p.a, p.b) == (a, b) || (p.a, p.b) == (b, a))
                        .map(|p| p.latency_ns.mad)
                        .unwrap_or(f64::NAN);
                    if small {
                        format!("{m:.0} ±{mad:.0}")
                    } else {
                        format!("{m:.0}")
                    }
                }
            });
        }
        table.push(row);
    }
    table
}

/// Per pair its spread (up to 8 CPUs); None for more CPUs or no pair.
pub fn pairs(r: &C2c) -> Option<Table> {
    if !small(r) || r.pairs.is_empty() {
        return None;
    }
    let mut table = Table::new(&[
        "PAIR", "RELATION", "MEDIAN", "±MAD", "MIN", "MAX", "MEAN", "OUTLIERS",
    ]);
    for p in &r.pairs {
        let l = &p.latency_ns;
        table.push(vec![
            format!("{}-{}", p.a, p.b),
            p.proximity.label().into(),
            format!("{:.1}", l.median),
            format!("{:.1}", l.mad),
            format!("{:.1}", l.min),
            format!("{:.1}", l.max),
            format!("{:.1}", p.mean_latency_ns),
            format!("{}/{}", l.outliers.total(), l.n),
        ]);
    }
    Some(table)
}

/// Per relation the ceiling on contended lock handoffs; None when no class was measured.
pub fn ceilings(r: &C2c) -> Option<Table> {
    if r.classes.is_empty() {
        return None;
    }
    let mut table = Table::new(&["RELATION", "PAIRS", "LATENCY", "RANGE", "K=1", "K=2"]);
    for c in &r.classes {
        table.push(vec![
            c.proximity.label().into(),
            c.pairs.to_string(),
            render::duration_ns(c.median_latency_ns),
            format!("{:.0}-{:.0} ns", c.min_latency_ns, c.max_latency_ns),
            format!("{}/s", si(c.ceiling.k1_handoffs_per_sec)),
            format!("{}/s", si(c.ceiling.k2_handoffs_per_sec)),
        ]);
    }
    Some(table)
}

/// What the study's c2c section measured, in one paragraph.
pub fn section_intro(c: &C2cSection) -> String {
    format!(
        "One-way latency of moving a modified cache line between two CPUs (compare-and-swap ping-pong, median of {} samples × {} round trips per pair). A contended lock handoff needs at least one such transfer, so 1/latency caps handoffs per second.",
        c.samples, c.round_trips
    )
}

/// The CPUs the study left out to fit its budget, as a sentence; None when it measured all.
pub fn section_left_out(c: &C2cSection) -> Option<String> {
    (!c.cpus_left_out.is_empty())
        .then(|| format!("CPUs {} were left out to fit the budget.", c.cpus_left_out))
}

/// The study section's table: one row per relation.
pub fn classes(r: &C2c) -> Table {
    let mut t = Table::new(&["CLASS", "PAIRS", "MEDIAN", "RANGE", "CEILING k=1", "k=2"]);
    for k in &r.classes {
        t.rows.push(vec![
            k.proximity.label().into(),
            k.pairs.to_string(),
            format!("{:.0} ns", k.median_latency_ns),
            format!("{:.0}–{:.0} ns", k.min_latency_ns, k.max_latency_ns),
            format!("{}/s", si(k.ceiling.k1_handoffs_per_sec)),
            format!("{}/s", si(k.ceiling.k2_handoffs_per_sec)),
        ]);
    }
    t
}

/// Raw numbers, one row per measured pair: the CSV export.
pub fn data(r: &C2c) -> Table {
    let mut t = Table::new(&[
        "cpu_a",
        "cpu_b",
        "relation",
        "samples",
        "median_ns",
        "mad_ns",
        "min_ns",
        "max_ns",
        "mean_ns",
        "outliers",
        "time_limited",
    ]);
    for p in &r.pairs {
        let l = &p.latency_ns;
        t.push(vec![
            p.a.to_string(),
            p.b.to_string(),
            p.proximity.label().into(),
            l.n.to_string(),
            l.median.to_string(),
            l.mad.to_string(),
            l.min.to_string(),
            l.max.to_string(),
            p.mean_latency_ns.to_string(),
            l.outliers.total().to_string(),
            p.time_limited.to_string(),
        ]);
    }
    t
}

/// The study's c2c section: what was measured, the latency heatmap, one row per relation.
impl StudySection for C2cSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        let labels: Vec<String> = self.result.cpus.iter().map(|x| x.to_string()).collect();
        let mut b = vec![
            Block::Intro(section_intro(self)),
            Block::Chart(render::svg::heatmap(
                "c2c-heatmap",
                "One-way cache-line latency between CPUs (ns)",
                &labels,
                &self.result.matrix_ns,
                "ns",
            )),
            Block::Table(classes(&self.result)),
        ];
        b.extend(section_left_out(self).map(Block::Note));
        b
    }

    fn finding(&self, _smt: bool) -> Option<Finding> {
        Some(super::verdict::finding(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::engine::PingPongSpec;
    use std::path::Path;

    fn text(r: &C2c, hypervisor: bool) -> String {
        crate::render::terminal::draw(&blocks(r, hypervisor))
    }

    #[test]
    fn text_report_shape() {
        let topo = crate::topology::discover(Path::new("/")).unwrap();
        let cpus = CpuSet::from_cpus([0, 1, 2]);
        let spec = PingPongSpec {
            samples: 4,
            round_trips: 10,
        };
        let samples = vec![((0, 1), vec![100.0, 102.0, 98.0, 101.0])];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, true);
        let t = text(&r, true);
        assert!(t.contains("4 samples × 10 round trips"), "{t}");
        assert!(t.contains("100 ±1"), "{t}");
        assert!(t.contains("?"), "{t}");
        assert!(t.contains("K=1"), "{t}");
        assert!(t.contains("10 M/s") || t.contains("9.9"), "{t}");
        assert!(t.contains("hypervisor"));
        assert!(t.contains("interrupted"));
        assert!(!t.contains("time limit"), "{t}");
    }

    /// Two vCPUs taking turns on one host CPU (a 1 × 2 × 2 QEMU guest whose sibling
    /// vCPU threads were pinned to one host CPU): 7.7 ms a handoff, one partial sample.
    #[test]
    fn a_pair_stopped_at_its_time_limit_says_why() {
        let topo = crate::topology::discover(Path::new("/")).unwrap();
        let cpus = CpuSet::from_cpus([0, 1]);
        let spec = PingPongSpec {
            samples: 100,
            round_trips: 1000,
        };
        let samples = vec![((0, 1), vec![7_748_858.3])];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, false);
        assert!(r.pairs[0].time_limited);
        let t = text(&r, false);
        assert!(
            t.contains("pair 0-1 stopped at its time limit after 1 of 100 samples"),
            "{t}"
        );
        assert!(t.contains("a handoff took 7.7 ms"), "{t}");
        assert!(
            t.contains("under 10.0 µs") || t.contains("under 10 µs"),
            "{t}"
        );
    }

    /// The CSV has one row per pair, raw numbers a CSV reader parses back; the Markdown has
    /// the matrix.
    #[test]
    fn exports_write_csv_and_markdown_that_parse_back() {
        use crate::render::export::Exports;
        let topo = crate::topology::fixture::topology(2, 2, false);
        let cpus = CpuSet::from_cpus([0, 1, 2]);
        let spec = PingPongSpec {
            samples: 4,
            round_trips: 10,
        };
        let samples = vec![
            ((0, 1), vec![100.0, 102.0, 98.0, 101.0]),
            ((0, 2), vec![60.0, 61.0, 59.0, 60.5]),
        ];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, false);
        let d = tempfile::tempdir().unwrap();
        let ex = Exports {
            json: None,
            csv: Some(d.path().join("c.csv")),
            markdown: Some(d.path().join("c.md")),
        };
        ex.write(|| export(&r, false)).unwrap();
        let mut rd = csv::Reader::from_path(d.path().join("c.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), r.pairs.len());
        for (row, p) in rows.iter().zip(&r.pairs) {
            assert_eq!(
                row[col("median_ns")].parse::<f64>().unwrap(),
                p.latency_ns.median
            );
            assert_eq!(row[col("cpu_a")].parse::<u32>().unwrap(), p.a);
        }
        let md = std::fs::read_to_string(d.path().join("c.md")).unwrap();
        assert!(md.starts_with("# smtlab c2c\n"), "{md}");
        assert!(md.contains("| CPU | 0 | 1 | 2 |"), "{md}");
    }
}
