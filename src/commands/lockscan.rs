//! `smtlab lockscan`: lock threads on one global lock beside memory-scanning threads —
//! live interval rows shaped like the original test's output ("To Hyper or not to Hyper",
//! SQL Server, 2005), then per-thread summaries, fairness and the verdict; `--json` for
//! the model.

use crate::engine::{IntervalSample, RealEngine};
use crate::experiments::lockscan::{
    self, Layout, LockscanConfig, LockscanReport, Scenario, ThreadRole,
};
use crate::locks::{LockKind, StatsMode};
use crate::render::{self, Table, si};
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// The command: the experiment's config plus where the topology comes from and how to
/// print.
#[derive(Debug, Clone)]
pub struct LockscanCommand {
    pub root: PathBuf,
    pub exp: LockscanConfig,
    pub json: bool,
    pub dry_run: bool,
}

pub fn run(cfg: &LockscanCommand, out: &mut dyn Write) -> Result<()> {
    let topo = super::topology_for_run(&cfg.root, cfg.dry_run, true)?;
    let scen = lockscan::scenarios(&topo, &cfg.exp.layout, cfg.exp.baseline && !cfg.dry_run)?;
    // Every scan thread memsets its own buffer from the start of its run.
    let scanners = scen.iter().map(|s| s.scan_cpus.len()).max().unwrap_or(0) as u64;
    crate::limits::memory(
        &format!("--scan-bytes {}", cfg.exp.scan_bytes),
        (cfg.exp.scan_bytes as u64).saturating_mul(scanners),
        crate::limits::mem_available_bytes(),
        &crate::render::count(scanners as usize, "scan buffer"),
        crate::limits::Force::NotOffered,
    )?;
    for s in &scen {
        let lock: crate::cpuset::CpuSet = s.lock_cpus.iter().copied().collect();
        let scan: crate::cpuset::CpuSet = s.scan_cpus.iter().copied().collect();
        if lock.intersects(&scan) && !matches!(cfg.exp.layout, Layout::Sweep(_)) {
            crate::say!(
                "warning: lock and scan CPUs overlap on {}: those threads time-share a CPU",
                lock.intersection(&scan)
            );
        }
    }
    if cfg.dry_run {
        if let Some(u) = lockscan::sweep_scope(&topo, &cfg.exp.layout) {
            writeln!(out, "sweep {}", u)?;
        }
        return dry_run(&topo, &scen, out);
    }
    let engine = RealEngine;
    let json = cfg.json;
    // Interval rows go where the original test printed them: stdout (stderr under --json).
    let mut err = std::io::stderr();
    let o: &mut dyn Write = if json { &mut err } else { &mut *out };
    let counted = cfg.exp.stats != StatsMode::Off;
    let mut live = |s: &Scenario, k: LockKind, sample: &IntervalSample, spins: &[u64]| {
        let _ = writeln!(
            o,
            "[{} / {}] interval {} ({:.1} s)",
            k,
            s.label,
            sample.index + 1,
            sample.elapsed_ns as f64 / 1e9
        );
        let nl = s.lock_cpus.len();
        for (i, &c) in s.lock_cpus.iter().chain(&s.scan_cpus).enumerate() {
            let ops = sample.ops.get(i).copied().unwrap_or(0);
            if i < nl && counted {
                let _ = writeln!(
                    o,
                    "  Thread Id = {i}, CPU = {c}, Locked = {ops}, Spin = {}",
                    spins.get(i).copied().unwrap_or(0)
                );
            } else if i < nl {
                let _ = writeln!(o, "  Thread Id = {i}, CPU = {c}, Locked = {ops}");
            } else {
                let _ = writeln!(o, "  Thread Id = {i}, CPU = {c}, scan passes = {ops}");
            }
        }
    };
    let measured: crate::cpuset::CpuSet = scen
        .iter()
        .flat_map(|s| s.lock_cpus.iter().chain(&s.scan_cpus).copied())
        .collect();
    let busy = crate::hygiene::preflight(&measured);
    let mut report = lockscan::run(&engine, &topo, &cfg.exp, &scen, &mut live)?;
    report.notes.extend(busy);
    let interrupted = report.results.iter().any(|r| r.interrupted);
    super::emit(out, cfg.json, &report, human, interrupted)
}

fn dry_run(topo: &crate::topology::Topology, scen: &[Scenario], out: &mut dyn Write) -> Result<()> {
    writeln!(out, "lockscan placements (dry run, nothing started):")?;
    for s in scen {
        let scan: crate::cpuset::CpuSet = s.scan_cpus.iter().copied().collect();
        writeln!(out, "\n{}", s.label)?;
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
        out.write_all(table.text().as_bytes())?;
    }
    Ok(())
}

/// The end-of-run text: per scenario a per-thread table, fairness, then the verdict.
pub fn human(r: &LockscanReport) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "lockscan: {} run{} of {:.1} s per scenario, critical section {} ns, scan buffer {}{}, lock stats {}\n",
        r.repeat,
        if r.repeat == 1 { "" } else { "s" },
        r.duration_ns as f64 / 1e9,
        r.cs_ns,
        crate::topology::render::human_bytes(r.scan_bytes as u64),
        r.scan_l2_bytes
            .filter(|l2| *l2 > 0)
            .map(|l2| format!(" ({}× the scanner's L2)", crate::render::sig(r.scan_bytes as f64 / l2 as f64, 2)))
            .unwrap_or_default(),
        r.lock_stats
    ));
    if let Some(u) = &r.scope {
        o.push_str(&format!("sweep {}\n", u));
    }
    for s in &r.results {
        o.push_str(&format!(
            "\n== {} / {} (lock {}, scan {}) ==\n",
            s.lock,
            s.scenario.label,
            join(&s.scenario.lock_cpus),
            join(&s.scenario.scan_cpus)
        ));
        o.push_str(&crate::report::tables::lockscan_threads(s).text());
        o.push_str(&counters_text(s));
        let nl = s.scenario.lock_cpus.len();
        o.push_str(&match s.acquisitions_per_sec {
            Some(x) => format!("total {} acquisitions/s ± {}", si(x.median), si(x.mad)),
            // No run finished (Ctrl-C before the first): nothing to summarise.
            None => "total acquisitions/s not measured".into(),
        });
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
                " ({:.1}% of the {} ceiling at {l:.0} ns c2c{classes})",
                sh * 100.0,
                si(1e9 / l)
            ));
        }
        if nl > 1 {
            o.push_str(&format!(
                "; fairness: Jain {:.3}, max/min {:.2}×",
                s.jain_index, s.max_min_ratio
            ));
        }
        o.push('\n');
        if !s.pinning_ok {
            o.push_str("warning: a thread was seen outside its pinned CPU\n");
        }
    }
    if r.results.len() > 1 {
        o.push_str("\n== comparison ==\n");
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
                render::or_dash(s.handoffs_share_of_ceiling, |x| {
                    format!("{:.0}%", x * 100.0)
                }),
                format!("{:.3}", s.jain_index),
                format!("{:.2}", s.max_min_ratio),
                render::or_dash(s.sharing_vs_own_baseline, |c| {
                    format!("{}× {}", crate::stats::ratio_text(c.estimate), c.effect)
                }),
            ]);
        }
        o.push_str(&table.text());
    }
    // Said once here only when no scenario line carried it (lock stats off).
    let shown = r
        .results
        .iter()
        .any(|s| s.handoffs_share_of_ceiling.is_some());
    if let Some(l) = r.c2c_latency_ns.filter(|_| !shown) {
        o.push_str(&format!(
            "\ncache-line handoff latency between the first two lock CPUs: {l:.0} ns one way → ceiling {} handoffs/s\n",
            si(1e9 / l)
        ));
    }
    o.push_str("\nVerdict:\n");
    if r.verdict.is_empty() {
        o.push_str("  no scanner-sharing comparison in these scenarios\n");
    }
    for v in &r.verdict {
        o.push_str(&format!("  {v}\n"));
    }
    for n in &r.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::text::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    o
}

/// A scenario's counters in its median run: per thread, then per core when cycles and
/// instructions were counted, and the IPC of lock threads beside a scanner against the
/// other lock threads. Empty when no thread counted.
fn counters_text(s: &crate::experiments::lockscan::ScenarioResult) -> String {
    use crate::counters::text;
    let counts = || s.threads.iter().map(|t| t.counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = text::any_hardware(counts());
    let mut o = String::from("counters (median run):\n");
    let mut table = Table::with_header(
        ["THREAD", "ROLE", "CPU", "SHARES"]
            .map(String::from)
            .into_iter()
            .chain(text::header(hw))
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
            .chain(text::cells(t.counters.as_ref(), hw))
            .collect(),
        );
    }
    o.push_str(&table.text());
    if let Some(n) = text::multiplexing_note(counts()) {
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
            crate::stats::ratio_text(a / b)
        ));
    }
    if !s.core_cpi.is_empty() {
        o.push_str(
            "per-core CPI (median run; a core's cycles over all its threads' instructions):\n",
        );
        o.push_str(&text::core_cpi_table(&s.core_cpi));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::lockscan::ScenarioResult;

    fn scenario(label: &str, acquisitions: Option<f64>) -> ScenarioResult {
        ScenarioResult {
            scenario: Scenario {
                label: label.into(),
                lock_cpus: vec![0, 1],
                scan_cpus: vec![2],
            },
            lock: LockKind::Ttas,
            runs: 1,
            threads: Vec::new(),
            acquisitions_per_sec: acquisitions.and_then(|x| crate::stats::Summary::of(&[x])),
            jain_index: 1.0,
            max_min_ratio: 1.0,
            handoffs_per_sec: None,
            sharing_vs_own_baseline: None,
            sharing_ratios: Vec::new(),
            sharing_vs_others: None,
            cross_core_vs_baseline: None,
            cross_core_ratios: Vec::new(),
            cross_core_vs_own_baseline: None,
            sharing_vs_cross_core_ratios: Vec::new(),
            sharing_vs_cross_core: None,
            c2c_latency_ns: None,
            c2c_latency_by_proximity: Vec::new(),
            handoffs_share_of_ceiling: None,
            pinning_ok: true,
            interrupted: true,
            core_cpi: Vec::new(),
        }
    }

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
        let text = human(&r);
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
}
