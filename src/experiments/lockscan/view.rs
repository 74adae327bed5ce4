//! lockscan's view: the terminal text ([`text`]), the tables the study's section lays out
//! ([`scenarios`], [`threads`], [`core_cpi`]) and the export document ([`document`]) —
//! laid out from the model; the sentences that conclude are `verdict`'s. Pure.

use super::model::{LockscanReport, LockscanSection, ScenarioResult, ThreadRole};
use super::scenario::Scenario;
use super::verdict::{PHASE, finding, verdict_lines};
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::render::blocks::Block;
use crate::render::export::{Document, Section};
use crate::render::{self, NONE, Table, si, thousands};

/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Lock threads vs a memory scanner (lockscan)";

// ---------------------------------------------------------------------------------------
// The terminal.

/// The end-of-run text: per scenario a per-thread table, fairness, then the verdict.
pub fn text(r: &LockscanReport) -> String {
    let mut o = String::new();
    o.push_str(&header(r));
    o.push('\n');
    if let Some(u) = &r.scope {
        o.push_str(&format!("sweep {}\n", u));
    }
    for s in &r.results {
        o.push_str(&format!("\n== {} ==\n", scenario_heading(s)));
        o.push_str(&threads(s).text());
        o.push_str(&counters_text(s));
        o.push_str(&scenario_summary(s));
        o.push('\n');
        if !s.pinning_ok {
            o.push_str("warning: a thread was seen outside its pinned CPU\n");
        }
    }
    if r.results.len() > 1 {
        o.push_str("\n== comparison ==\n");
        o.push_str(&comparison(r).text());
    }
    if let Some(l) = ceiling_line(r) {
        o.push_str(&format!("\n{l}\n"));
    }
    // A share above 100 % is explained where it is read, under the table.
    for n in r.notes.iter().filter(|n| above_ceiling(n)) {
        o.push_str(&format!("note: {n}\n"));
    }
    o.push_str("\nVerdict:\n");
    let verdict = verdict(r);
    if verdict.is_empty() {
        o.push_str("  no scanner-sharing comparison in these scenarios\n");
    }
    for v in &verdict {
        o.push_str(&format!("  {v}\n"));
    }
    for n in r.notes.iter().filter(|n| !above_ceiling(n)) {
        o.push_str(&format!("note: {n}\n"));
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::view::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    o
}

/// Whether note `n` explains handoffs above the cache-line ceiling (the table's OF
/// CEILING column over 100 %), which is said right under the table.
fn above_ceiling(n: &str) -> bool {
    n.starts_with(super::model::ABOVE_CEILING)
}

/// What ran, in one line.
fn header(r: &LockscanReport) -> String {
    format!(
        "lockscan: {} of {:.1} s per scenario, critical section {} ns, scan buffer {}{}, lock stats {}",
        render::count(r.repeat, "run"),
        r.duration_ns as f64 / 1e9,
        r.cs_ns,
        crate::topology::view::human_bytes(r.scan_bytes as u64),
        r.scan_l2_bytes
            .filter(|l2| *l2 > 0)
            .map(|l2| format!(
                " ({}× the scanner's L2)",
                render::sig(r.scan_bytes as f64 / l2 as f64, 2)
            ))
            .unwrap_or_default(),
        r.lock_stats
    )
}

/// `ttas / scanner on 1 (sibling of 0) (lock 0,2, scan 1)`.
fn scenario_heading(s: &ScenarioResult) -> String {
    format!(
        "{} / {} (lock {}, scan {})",
        s.lock,
        s.scenario.label,
        join(&s.scenario.lock_cpus),
        join(&s.scenario.scan_cpus)
    )
}

/// Total acquisitions, handoffs against the cache-line ceiling and fairness, in one line.
fn scenario_summary(s: &ScenarioResult) -> String {
    let mut o = match s.acquisitions_per_sec {
        Some(x) => format!("total {} acquisitions/s ± {}", si(x.median), si(x.mad)),
        // No run finished (Ctrl-C before the first): nothing to summarise.
        None => "total acquisitions/s not measured".into(),
    };
    if let Some(h) = s.handoffs_per_sec {
        o.push_str(&format!(", {} handoffs/s", si(h)));
    }
    if let (Some(sh), Some(l)) = (s.handoffs_share_of_ceiling, s.c2c_latency_ns) {
        // Several classes: say what the handoff-weighted latency was made of.
        let classes = if s.c2c_latency_by_proximity.len() > 1 {
            let v: Vec<String> = s
                .c2c_latency_by_proximity
                .iter()
                .map(|(p, l)| format!("{} {l:.0}", p.label()))
                .collect();
            format!(", weighted by handoffs over {} ns", v.join(", "))
        } else {
            String::new()
        };
        o.push_str(&format!(
            " ({} of the {} ceiling at {l:.0} ns c2c{classes})",
            render::percent(sh, 1),
            si(1e9 / l)
        ));
    }
    if s.scenario.lock_cpus.len() > 1 {
        o.push_str(&format!(
            "; fairness: Jain {:.3}, max/min {:.2}×",
            s.jain_index, s.max_min_ratio
        ));
    }
    o
}

/// The cache-line ceiling, said once here only when no scenario line carried it (lock
/// stats off).
fn ceiling_line(r: &LockscanReport) -> Option<String> {
    let shown = r
        .results
        .iter()
        .any(|s| s.handoffs_share_of_ceiling.is_some());
    let l = r.c2c_latency_ns.filter(|_| !shown)?;
    Some(format!(
        "cache-line handoff latency between the first two lock CPUs: {l:.0} ns one way → ceiling {} handoffs/s",
        si(1e9 / l)
    ))
}

/// One row per lock × scenario, as the terminal's `== comparison ==` shows it.
pub fn comparison(r: &LockscanReport) -> Table {
    let mut table = Table::new(&[
        "LOCK",
        "SCENARIO",
        "ACQ/S",
        "±MAD",
        "HANDOFFS/S",
        "OF CEILING",
        "JAIN",
        "MAX/MIN",
        "SHARING ÷ OWN BASELINE",
    ]);
    for s in &r.results {
        table.push(vec![
            s.lock.to_string(),
            s.scenario.label.clone(),
            render::or_dash(s.acquisitions_per_sec.map(|x| x.median), si),
            render::or_dash(s.acquisitions_per_sec.map(|x| x.mad), si),
            render::or_dash(s.handoffs_per_sec, si),
            render::or_dash(s.handoffs_share_of_ceiling, |x| render::percent(x, 0)),
            format!("{:.3}", s.jain_index),
            format!("{:.2}", s.max_min_ratio),
            render::or_dash(s.sharing_vs_own_baseline, |c| {
                format!("{}× {}", crate::render::ratio_text(c.estimate), c.effect)
            }),
        ]);
    }
    table
}

/// A scenario's counters in its median run: per thread, then per core when cycles and
/// instructions were counted, and the IPC of lock threads beside a scanner against the
/// other lock threads. Empty when no thread counted.
fn counters_text(s: &ScenarioResult) -> String {
    use crate::counters::view as counters;
    let counts = || s.threads.iter().map(|t| t.counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = counters::any_hardware(counts());
    let mut o = String::from("counters (median run):\n");
    let mut table = Table::with_header(
        ["THREAD", "ROLE", "CPU", "SHARES"]
            .map(String::from)
            .into_iter()
            .chain(counters::header(hw))
            .collect::<Vec<_>>(),
    );
    for t in &s.threads {
        let shares = if !t.is_lock() {
            "-"
        } else if t.shares_core_with_scanner {
            "yes"
        } else {
            "no"
        };
        table.push(
            [
                t.thread.to_string(),
                t.role.to_string(),
                t.cpu.to_string(),
                shares.into(),
            ]
            .into_iter()
            .chain(counters::cells(t.counters.as_ref(), hw))
            .collect(),
        );
    }
    o.push_str(&table.text());
    if let Some(n) = counters::multiplexing_note(counts()) {
        o.push_str(&format!("note: {n}\n"));
    }
    let ipc = |sharing: bool| {
        let v: Vec<f64> = s
            .threads
            .iter()
            .filter(|t| t.is_lock() && t.shares_core_with_scanner == sharing)
            .filter_map(|t| t.counters.as_ref()?.ipc)
            .collect();
        (!v.is_empty()).then(|| crate::stats::mean(&v))
    };
    if let (Some(a), Some(b)) = (ipc(true), ipc(false)) {
        o.push_str(&format!(
            "IPC of lock threads beside a scanner {a:.2}, of the others {b:.2} ({}×)\n",
            crate::render::ratio_text(a / b)
        ));
    }
    if !s.core_cpi.is_empty() {
        o.push_str(
            "per-core CPI (median run; a core's cycles over all its threads' instructions):\n",
        );
        o.push_str(&counters::core_cpi_table(&s.core_cpi));
    }
    o
}

fn join(v: &[u32]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    }
}

/// `--dry-run`: per scenario, where each thread goes and whether it shares a core with a
/// scanner.
pub fn dry_run(topo: &crate::topology::Topology, scen: &[Scenario]) -> String {
    let mut o = String::from("lockscan placements (dry run, nothing started):\n");
    for s in scen {
        let scan: crate::cpuset::CpuSet = s.scan_cpus.iter().copied().collect();
        o.push_str(&format!("\n{}\n", s.label));
        let mut table = Table::new(&["THREAD", "ROLE", "CPU", "CORE", "SHARES CORE WITH SCANNER"]);
        let nl = s.lock_cpus.len();
        for (i, &c) in s.lock_cpus.iter().chain(&s.scan_cpus).enumerate() {
            let core = topo.core_of(c);
            table.push(vec![
                i.to_string(),
                if i < nl {
                    ThreadRole::Lock
                } else {
                    ThreadRole::Scan
                }
                .to_string(),
                c.to_string(),
                core.to_string(),
                if i >= nl {
                    "-".into()
                } else if core.intersects(&scan) {
                    if scan.contains(c) {
                        "yes (same CPU)".into()
                    } else {
                        "yes (SMT sibling)".into()
                    }
                } else {
                    "no".into()
                },
            ]);
        }
        o.push_str(&table.text());
    }
    o
}

// ---------------------------------------------------------------------------------------
// Tables the study's section lays out (and the terminal's per-thread table).

// ---------------------------------------------------------------------------------------
// The study's section.

/// What the section's chart and tables show, in one paragraph.
pub fn section_intro(l: &LockscanSection) -> String {
    format!(
        "Lock threads loop acquire → release on one global lock while a scan thread memsets {} per pass; one scenario per scanner position{} plus a baseline without scanner, {} runs each of {} (after {} warm-up), interleaved. Bars: each lock thread's acquisitions per second (median; whiskers min–max over runs).",
        crate::topology::view::human_bytes(l.result.scan_bytes as u64),
        l.result
            .scope
            .as_ref()
            .map(|u| format!(" within {} (CPUs {})", u.label, u.cpus))
            .unwrap_or_default(),
        l.result.repeat,
        render::duration_ns(l.duration_ns as f64),
        render::duration_ns(l.warmup_ns as f64)
    )
}

/// The verdict lines, derived from the results as the model's `verdict` field stores them.
pub fn verdict(r: &LockscanReport) -> Vec<String> {
    verdict_lines(&r.results, r.smt)
}

/// One row per lock × scenario, with every comparison the scenario allows.
pub fn scenarios(r: &LockscanReport) -> Table {
    let mut t = Table::new(&[
        "LOCK",
        "SCENARIO",
        "ACQ/S",
        "HANDOFFS/S",
        "OF CEILING",
        "JAIN",
        "MAX/MIN",
        "SHARING/OWN BASELINE",
        "SHARING/OTHERS (BIASED)",
        "CROSS-CORE/BASELINE",
    ]);
    for s in &r.results {
        t.rows.push(vec![
            s.lock.to_string(),
            s.scenario.label.clone(),
            s.acquisitions_per_sec
                .as_ref()
                .map(render::summary_cell)
                .unwrap_or_else(|| NONE.into()),
            s.handoffs_per_sec.map(si).unwrap_or_else(|| NONE.into()),
            s.handoffs_share_of_ceiling
                .map(|x| render::percent(x, 0))
                .unwrap_or_else(|| NONE.into()),
            render::fixed2(s.jain_index),
            render::fixed2(s.max_min_ratio),
            render::comparison_cell(s.sharing_vs_own_baseline.as_ref()),
            render::ci_cell(s.sharing_vs_others.as_ref()),
            render::ci_cell(s.cross_core_vs_baseline.as_ref()),
        ]);
    }
    t
}

/// Per thread, for one scenario result: the terminal's end-of-run table and the report's
/// per-thread tables.
pub fn threads(s: &ScenarioResult) -> Table {
    let mut t = Table::new(&[
        "THREAD",
        "ROLE",
        "CPU",
        "CORE",
        "SHARES",
        "OPS/S",
        "±MAD",
        "LOCKED",
        "SPINS",
        "SHARE",
        "SPINS/ACQ",
        "HANDOFFS IN",
        "CPU%",
    ]);
    for th in &s.threads {
        // A scanner has no lock counts; spins and handoffs are None with lock stats off.
        let lock_only = |v: Option<String>| v.filter(|_| th.is_lock()).unwrap_or(NONE.into());
        t.rows.push(vec![
            th.thread.to_string(),
            th.role.to_string(),
            th.cpu.to_string(),
            th.core.to_string(),
            lock_only(Some(
                if th.shares_core_with_scanner {
                    "yes"
                } else {
                    "no"
                }
                .into(),
            )),
            si(th.ops_per_sec),
            th.ops_per_sec_summary
                .map(|x| si(x.mad))
                .unwrap_or(NONE.into()),
            lock_only(Some(thousands(th.locked))),
            lock_only(th.spins.map(thousands)),
            lock_only(Some(render::percent(th.share_of_acquisitions, 1))),
            lock_only(th.spins_per_acquire.map(render::fixed2)),
            lock_only(th.handoffs_received.map(thousands)),
            render::percent(th.cpu_share, 0),
        ]);
    }
    t
}

/// Per core, its threads' CPI and the core's (two siblings sharing 1 M cycles with 750 k
/// and 500 k instructions have thread CPIs 1.33 and 2.0, core CPI 0.80), for every
/// scenario whose median run counted cycles; None when none did.
pub fn core_cpi(r: &LockscanReport) -> Option<Table> {
    let mut t = Table::new(&[
        "LOCK",
        "SCENARIO",
        "CORE",
        "THREAD",
        "CPU",
        "THREAD CPI",
        "CORE CPI",
    ]);
    for s in &r.results {
        for k in &s.core_cpi {
            for (i, th) in k.threads.iter().enumerate() {
                let first = i == 0;
                t.rows.push(vec![
                    s.lock.to_string(),
                    s.scenario.label.clone(),
                    if first {
                        k.core.to_string()
                    } else {
                        String::new()
                    },
                    th.thread.to_string(),
                    th.cpu.to_string(),
                    th.cpi.map(render::fixed2).unwrap_or_else(|| NONE.into()),
                    if first {
                        k.core_cpi
                            .map(render::fixed2)
                            .unwrap_or_else(|| NONE.into())
                    } else {
                        String::new()
                    },
                ]);
            }
        }
    }
    (!t.rows.is_empty()).then_some(t)
}

// ---------------------------------------------------------------------------------------
// Exports.

/// Raw numbers, one row per lock × scenario × thread: the CSV export.
pub fn data(r: &LockscanReport) -> Table {
    let mut t = Table::new(&[
        "lock",
        "scenario",
        "lock_cpus",
        "scan_cpus",
        "runs",
        "thread",
        "role",
        "cpu",
        "core",
        "shares_core_with_scanner",
        "ops_per_sec",
        "ops_per_sec_mad",
        "locked",
        "spins",
        "share_of_acquisitions",
        "spins_per_acquire",
        "handoffs_received",
        "cpu_share",
        "involuntary_ctx_switches",
        "scenario_acquisitions_per_sec",
        "scenario_handoffs_per_sec",
        "jain_index",
        "max_min_ratio",
        "sharing_vs_own_baseline",
        "sharing_vs_own_baseline_low",
        "sharing_vs_own_baseline_high",
        "interrupted",
    ]);
    let raw = |x: Option<f64>| x.map_or_else(|| NONE.to_string(), |x| x.to_string());
    let cpus = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(" ");
    for s in &r.results {
        let own = s.sharing_vs_own_baseline;
        for th in &s.threads {
            t.push(vec![
                s.lock.to_string(),
                s.scenario.label.clone(),
                cpus(&s.scenario.lock_cpus),
                cpus(&s.scenario.scan_cpus),
                s.runs.to_string(),
                th.thread.to_string(),
                th.role.to_string(),
                th.cpu.to_string(),
                th.core.to_string(),
                th.shares_core_with_scanner.to_string(),
                th.ops_per_sec.to_string(),
                raw(th.ops_per_sec_summary.map(|x| x.mad)),
                th.locked.to_string(),
                raw(th.spins.map(|x| x as f64)),
                th.share_of_acquisitions.to_string(),
                raw(th.spins_per_acquire),
                raw(th.handoffs_received.map(|x| x as f64)),
                th.cpu_share.to_string(),
                th.involuntary_ctx_switches.to_string(),
                raw(s.acquisitions_per_sec.map(|x| x.median)),
                raw(s.handoffs_per_sec),
                s.jain_index.to_string(),
                s.max_min_ratio.to_string(),
                raw(own.map(|c| c.estimate)),
                raw(own.map(|c| c.low)),
                raw(own.map(|c| c.high)),
                s.interrupted.to_string(),
            ]);
        }
    }
    t
}

/// The export document: the model, the raw rows, and the terminal's tables.
pub fn document(r: &LockscanReport) -> Document {
    let mut sections = vec![Section {
        heading: "Runs".into(),
        text: [header(r)]
            .into_iter()
            .chain(r.scope.as_ref().map(|u| format!("sweep {u}")))
            .collect(),
        table: None,
    }];
    for s in &r.results {
        sections.push(Section {
            heading: scenario_heading(s),
            text: vec![scenario_summary(s)],
            table: Some(threads(s)),
        });
    }
    sections.push(Section {
        heading: "Comparison".into(),
        text: ceiling_line(r).into_iter().collect(),
        table: Some(comparison(r)),
    });
    if let Some(t) = core_cpi(r) {
        sections.push(Section {
            heading: "Per-core CPI (median run)".into(),
            text: Vec::new(),
            table: Some(t),
        });
    }
    sections.push(Section {
        heading: "Verdict".into(),
        text: verdict(r)
            .into_iter()
            .chain(r.notes.iter().map(|n| format!("Note: {n}")))
            .collect(),
        table: None,
    });
    Document {
        title: "smtlab lockscan".into(),
        json: serde_json::to_value(r).unwrap_or(serde_json::Value::Null),
        data: data(r),
        sections,
    }
}

/// The study's lockscan section: what was measured, a bar per lock thread (those sharing
/// the scanner's core or CPU marked), the scenario table, per-core CPI when counted, the
/// verdict lines and notes, and the per-thread tables folded.
impl StudySection for LockscanSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, ctx: &SectionCtx) -> Vec<Block> {
        let mut b = vec![Block::Intro(section_intro(self))];
        let (chart, cut) = threads_chart(self, ctx.smt);
        b.push(Block::Chart(chart));
        if cut {
            b.push(Block::Note(
                "The chart shows the first scenarios only; the table has all.".into(),
            ));
        }
        b.push(Block::Table(scenarios(&self.result)));
        b.extend(
            self.result
                .notes
                .iter()
                .filter(|n| above_ceiling(n))
                .cloned()
                .map(Block::Note),
        );
        if let Some(t) = core_cpi(&self.result) {
            b.push(Block::Note("Per-core CPI (median run): a core's cycles over all its threads' instructions, beside each thread's own CPI.".into()));
            b.push(Block::Table(t));
        } else if let Some(why) = &ctx.counters_not_measured {
            b.push(Block::Note(why.clone()));
        }
        b.extend(
            verdict(&self.result)
                .into_iter()
                .chain(
                    self.result
                        .notes
                        .iter()
                        .filter(|n| !above_ceiling(n))
                        .cloned(),
                )
                .map(Block::Note),
        );
        let mut folded = Vec::new();
        for s in &self.result.results {
            folded.push(Block::Subheading(format!(
                "{} / {}",
                s.lock, s.scenario.label
            )));
            folded.push(Block::Table(threads(s)));
        }
        b.push(Block::Folded {
            summary: "Per-thread tables".into(),
            blocks: folded,
        });
        b
    }

    fn finding(&self, smt: bool) -> Option<Finding> {
        Some(finding(self, smt))
    }
}

/// A bar per lock thread, grouped by lock and scenario, those sharing the scanner's core
/// (or CPU, without SMT) highlighted; and whether scenarios were cut to keep it readable.
fn threads_chart(l: &LockscanSection, smt: bool) -> (String, bool) {
    use render::svg::{Bar, Group};
    const MAX_BARS: usize = 96;
    let mut groups = Vec::new();
    let mut bars = 0;
    let mut cut = false;
    for s in &l.result.results {
        let n = s.threads.iter().filter(|t| t.is_lock()).count();
        if bars + n > MAX_BARS {
            cut = true;
            continue;
        }
        bars += n;
        let li = l.locks.iter().position(|k| *k == s.lock).unwrap_or(0);
        groups.push(Group {
            caption: format!("{} / {}", s.lock, short_scenario(&s.scenario.label)),
            bars: s
                .threads
                .iter()
                .filter(|t| t.is_lock())
                .map(|t| Bar {
                    label: format!("{}", t.cpu),
                    value: t.ops_per_sec,
                    range: t.ops_per_sec_summary.map(|x| (x.min, x.max)),
                    series: li,
                    highlight: t.shares_core_with_scanner,
                    tooltip: format!(
                        "{} / {}: thread {} on CPU {}: {} acquisitions/s",
                        s.lock,
                        s.scenario.label,
                        t.thread,
                        t.cpu,
                        si(t.ops_per_sec)
                    ),
                })
                .collect(),
        });
    }
    let series: Vec<String> = l.locks.iter().map(|k| k.to_string()).collect();
    let sharing = if smt {
        "shares its core with the scanner"
    } else {
        "shares its CPU with the scanner"
    };
    let chart = render::svg::bar_chart(
        "lockscan-threads",
        "Per-thread lock acquisitions per second (labels: CPU)",
        "acquisitions/s",
        &groups,
        &series,
        Some(sharing),
        false,
    );
    (chart, cut)
}

/// `baseline (no scanner)` → `baseline`, `scanner on 3 (sibling of 0)` → `scanner on 3`.
fn short_scenario(label: &str) -> &str {
    label.split(" (").next().unwrap_or(label)
}

#[cfg(test)]
mod tests {
    use super::super::config::LockscanConfig;
    use super::super::model::Note;
    use super::*;
    use crate::experiments::lockscan::Layout;
    use crate::experiments::lockscan::verdict::tests::scenario;
    use crate::locks::{LockKind, StatsMode};

    #[test]
    fn acquisitions_not_measured_print_as_not_measured_and_stay_null_in_json() {
        let r = LockscanReport {
            schema_version: 1,
            smt: true,
            hypervisor: false,
            cs_ns: 0,
            scan_bytes: 1 << 20,
            scan_l2_bytes: None,
            duration_ns: 1_000_000_000,
            repeat: 1,
            lock_stats: StatsMode::Counters,
            c2c_latency_ns: None,
            scope: None,
            results: vec![
                scenario("measured", Some(2_000_000.0)),
                scenario("cut", None),
            ],
            verdict: Vec::new(),
            notes: Vec::new(),
            counters: None,
        };
        let text = text(&r);
        assert!(text.contains("total 2 M acquisitions/s"), "{text}");
        assert!(text.contains("total acquisitions/s not measured"), "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("ttas") && l.contains("cut"))
            .expect("a comparison row for the cut scenario");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(&cells[2..4], ["-", "-"], "ACQ/S and ±MAD in `{row}`");
        assert!(!text.contains(" 0 acquisitions"), "{text}");
        let j = serde_json::to_value(&r).unwrap();
        assert!(j["results"][1]["acquisitions_per_sec"].is_null());
    }

    /// Handoffs above 100 % of the ceiling are explained under the comparison table, not
    /// after the verdict far below it.
    #[test]
    fn the_above_ceiling_note_follows_the_table() {
        let above = String::from(Note::AboveCeiling {
            runs: vec!["ttas / measured".into()],
            hypervisor: true,
        });
        let r = LockscanReport {
            schema_version: 1,
            smt: true,
            hypervisor: true,
            cs_ns: 0,
            scan_bytes: 1 << 20,
            scan_l2_bytes: None,
            duration_ns: 1_000_000_000,
            repeat: 1,
            lock_stats: StatsMode::Counters,
            c2c_latency_ns: None,
            scope: None,
            results: vec![
                scenario("measured", Some(2_000_000.0)),
                scenario("cut", None),
            ],
            verdict: Vec::new(),
            notes: vec![above.clone(), "another note".into()],
            counters: None,
        };
        let text = text(&r);
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in {text}"));
        assert!(at("== comparison ==") < at(&above), "{text}");
        assert!(at(&above) < at("Verdict:"), "{text}");
        assert!(at("Verdict:") < at("note: another note"), "{text}");
        assert_eq!(text.matches(&above).count(), 1, "{text}");
    }

    /// A run on the fake engine: the CSV has one row per lock × scenario × thread, with raw
    /// numbers a CSV reader parses back; the Markdown has the per-thread tables.
    #[test]
    fn exports_write_csv_and_markdown_that_parse_back() {
        use crate::engine::{FakeEngine, RunSpec};
        use crate::render::export::Exports;
        let topo = crate::topology::fixture::topology(2, 2, false);
        let spec = RunSpec::new(
            std::time::Duration::ZERO,
            std::time::Duration::from_millis(10),
        )
        .unwrap();
        let cfg = LockscanConfig::new(Layout::ScannerOnLowest, vec![LockKind::Ttas], spec)
            .unwrap()
            .with_repeat(3)
            .unwrap();
        let scen = super::super::scenarios(&topo, &cfg.layout, true).unwrap();
        let engine = FakeEngine::new(3).with_topology(&topo);
        let r = super::super::run(&engine, &topo, &cfg, &scen, &mut |_, _, _, _| {}).unwrap();
        let d = tempfile::tempdir().unwrap();
        let ex = Exports {
            json: Some(d.path().join("r.json")),
            csv: Some(d.path().join("r.csv")),
            markdown: Some(d.path().join("r.md")),
        };
        ex.check().unwrap();
        ex.write(|| document(&r)).unwrap();
        let mut rd = csv::Reader::from_path(d.path().join("r.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        let threads: usize = r.results.iter().map(|s| s.threads.len()).sum();
        assert_eq!(rows.len(), threads);
        for (row, th) in rows.iter().zip(r.results.iter().flat_map(|s| &s.threads)) {
            assert_eq!(
                row[col("ops_per_sec")].parse::<f64>().unwrap(),
                th.ops_per_sec
            );
            assert_eq!(row[col("cpu")].parse::<u32>().unwrap(), th.cpu);
        }
        let md = std::fs::read_to_string(d.path().join("r.md")).unwrap();
        assert!(md.starts_with("# smtlab lockscan\n"), "{md}");
        assert!(md.contains("| THREAD | ROLE | CPU |"), "{md}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json")).unwrap())
                .unwrap();
        // The model as `--json` prints it (floats compared as parsed back, not bit for bit).
        assert_eq!(json["schema_version"], r.schema_version);
        assert_eq!(
            json["results"].as_array().map(Vec::len),
            Some(r.results.len())
        );
        assert_eq!(json["verdict"], serde_json::json!(r.verdict));
    }
}
