//! The study's own view: the answer table `smtlab study` prints after the run, and the
//! tables of the study's own facts (machine, Slurm variables, phases) that report.html and
//! summary.md both show. Pure.

use super::{PhaseStatus, Report, Section, Verdict};
use crate::conclusion::SectionCtx;
use crate::render::blocks::Block;
use crate::render::cells::{secs, utc};
use crate::render::{NONE, Table};

/// "Keep HT on?" per workload class: the class, the answer, and the evidence's ratio with
/// its interval.
pub fn answer_table(v: &Verdict) -> Table {
    let mut table = Table::new(&["WORKLOAD CLASS", "ANSWER", "EVIDENCE"]);
    for a in &v.answers {
        table.push(vec![
            a.class.label().to_string(),
            a.answer.label().to_string(),
            a.evidence
                .as_ref()
                .map_or_else(|| NONE.to_string(), |e| e.comparison.to_string()),
        ]);
    }
    table
}

/// The answer table of report.html (with `section`, for its links) and summary.md: the
/// class, the answer, the evidence it cites, why, and the section holding its runs; `-`
/// where there is none.
pub fn answer_rows(v: &Verdict, section: bool) -> Table {
    let mut head = vec!["workload class", "answer", "evidence", "why"];
    if section {
        head.push("section");
    }
    let mut t = Table::new(&head);
    for a in &v.answers {
        let mut row = vec![
            a.class.label().to_string(),
            a.answer.label().to_string(),
            a.evidence
                .as_ref()
                .map_or_else(|| "-".to_string(), |e| e.comparison.to_string()),
            a.reason.clone(),
        ];
        if section {
            row.push(
                a.section
                    .as_ref()
                    .map_or_else(|| "-".to_string(), |p| p.to_string()),
            );
        }
        t.push(row);
    }
    t
}

/// The answer table, then why, one line per class; empty without answers.
pub fn answers_text(v: &Verdict) -> String {
    if v.answers.is_empty() {
        return String::new();
    }
    let mut s = answer_table(v).text();
    for a in &v.answers {
        s.push_str(&format!("  {}: {}\n", a.class.label(), a.reason));
    }
    s
}

/// Machine facts as key/value rows.
pub fn machine(r: &Report) -> Table {
    let m = &r.machine;
    let mut t = Table::new(&["", ""]);
    let mut kv = |k: &str, v: String| t.rows.push(vec![k.to_string(), v]);
    if let Some(h) = &m.hostname {
        kv("Host", h.clone());
    }
    kv("CPU", m.cpu_model.clone());
    if let Some(u) = &m.microcode {
        kv("Microcode", u.clone());
    }
    kv(
        "CPUs",
        format!(
            "{} online, usable {}; {} cores, {} package(s), {} L3 group(s)",
            m.online_cpus, m.usable_cpus, m.cores, m.packages, m.l3_groups
        ),
    );
    kv("SMT", r.smt.sentence.clone());
    kv("Hypervisor", m.hypervisor.clone());
    kv("Kernel", m.kernel.clone());
    kv("Frequency governor", m.frequency_governor.clone());
    kv("Hardware counters", m.hardware_counters.clone());
    if let Some(b) = m.memory_bytes {
        kv("Memory", crate::render::bytes(b));
    }
    let p = &r.provenance;
    kv(
        "smtlab",
        format!(
            "{} (git {}), {} build",
            p.smtlab_version, p.git_revision, p.build_profile
        ),
    );
    kv("Command", p.command.clone());
    if let Some(j) = &r.slurm {
        kv("Slurm", j.sentence());
    }
    kv(
        "Started",
        format!("{}, took {}", utc(p.started_unix_s), secs(p.wall_ns)),
    );
    kv(
        "Budget",
        format!(
            "{}{} (estimated {}); database {}",
            secs(r.study.budget_ns),
            if r.study.quick { " (--quick)" } else { "" },
            secs(r.study.estimate_ns),
            r.study.db
        ),
    );
    t
}

/// The `SLURM_*` variables the study ran with, one row each; None outside Slurm.
pub fn slurm_variables(r: &Report) -> Option<Table> {
    let j = r.slurm.as_ref()?;
    let mut t = Table::new(&["VARIABLE", "VALUE"]);
    for (k, v) in &j.variables {
        t.rows.push(vec![k.clone(), v.clone()]);
    }
    Some(t)
}

/// One row per phase.
pub fn phases(r: &Report) -> Table {
    let mut t = Table::new(&["PHASE", "STATUS", "TOOK", "ESTIMATE", "NOTE"]);
    for p in &r.phases {
        t.rows.push(vec![
            p.phase.to_string(),
            p.status.label().into(),
            secs(p.wall_ns),
            secs(p.estimate_ns),
            p.reason.clone().unwrap_or_default(),
        ]);
    }
    t
}

/// Why the report has no IPC column or per-core CPI table, in one sentence; None when
/// cycles and instructions were counted somewhere (then the tables show them) or when
/// neither lockscan nor yield ran.
pub fn counters_not_measured(r: &Report) -> Option<String> {
    let lockscan = r.lockscan.as_ref().map(|l| &l.result);
    let yld = r.smt_yield.as_ref().map(|y| &y.result);
    if lockscan.is_none() && yld.is_none() {
        return None;
    }
    let measured = lockscan.is_some_and(|l| l.results.iter().any(|s| !s.core_cpi.is_empty()))
        || yld.is_some_and(|y| y.workloads.iter().any(|w| w.yield_split.is_some()));
    if measured {
        return None;
    }
    let status = lockscan
        .and_then(|l| l.counters.as_ref())
        .or_else(|| yld.and_then(|y| y.counters.as_ref()));
    let why = match status {
        _ if r.synthetic => "a synthetic report counts nothing".to_string(),
        None => "no counters were read (`--counters off`, or a report from before smtlab counted)"
            .to_string(),
        Some(st) => st
            .lines()
            .into_iter()
            .find(|l| l.contains("hardware") || l.contains("cycles") || l.contains("instructions"))
            .unwrap_or_else(|| "no run counted both cycles and instructions".into()),
    };
    Some(format!("IPC and per-core CPI: not measured ({why})."))
}

/// What every section's blocks may depend on beyond the section itself.
pub fn section_ctx(r: &Report) -> SectionCtx {
    SectionCtx {
        smt: r.smt.threads_per_core > 1,
        counters_not_measured: counters_not_measured(r),
    }
}

/// One section's blocks as report.html and summary.md lay them out: why it is missing, or
/// its own blocks with the interrupted note after its introduction.
pub fn section_blocks(r: &Report, section: Section<'_>, ctx: &SectionCtx) -> Vec<Block> {
    let record = r.phases.iter().find(|p| p.phase == section.phase);
    let Some(s) = section.content else {
        return vec![Block::Intro(match record {
            Some(p) => format!(
                "Not measured ({}): {}",
                p.status.label(),
                p.reason.as_deref().unwrap_or("no reason recorded")
            ),
            None => "Not measured.".into(),
        })];
    };
    let mut b = s.blocks(ctx);
    if record.is_some_and(|p| p.status == PhaseStatus::Interrupted) {
        let lead = b
            .iter()
            .take_while(|x| matches!(x, Block::Intro(_)))
            .count();
        b.insert(
            lead,
            Block::Intro(format!(
                "Interrupted by {}: only the runs that finished are shown.",
                crate::interrupt::name(r.interrupted_by)
            )),
        );
    }
    b
}

#[cfg(test)]
mod tests {
    use super::counters_not_measured;
    use crate::experiments::{lockscan, smt_yield};
    use crate::study::fixture::smt;

    #[test]
    fn report_tables_show_ipc_and_core_cpi_only_when_measured() {
        use crate::counters::{Counts, Event, Scaled};
        let mut r = smt().clone();
        // Synthetic: no IPC column, no CPI table, a sentence why.
        let y = r.smt_yield.as_ref().unwrap();
        assert!(
            !smt_yield::view::table(&y.result)
                .header
                .iter()
                .any(|h| h.contains("IPC"))
        );
        assert!(lockscan::view::core_cpi(&r.lockscan.as_ref().unwrap().result).is_none());
        assert_eq!(
            counters_not_measured(&r).as_deref(),
            Some("IPC and per-core CPI: not measured (a synthetic report counts nothing).")
        );
        // A real report without a PMU: the reason is the counters' own.
        r.synthetic = false;
        r.lockscan.as_mut().unwrap().result.counters = Some(crate::counters::Status {
            mode: crate::counters::Mode::All,
            unavailable: Event::ALL
                .into_iter()
                .filter(|e| e.is_hardware())
                .map(|event| crate::counters::Unavailable {
                    event,
                    reason: "no hardware PMU".into(),
                })
                .collect(),
        });
        assert_eq!(
            counters_not_measured(&r).as_deref(),
            Some(
                "IPC and per-core CPI: not measured (hardware counters not measured: no hardware PMU)."
            )
        );
        // Counted: the table and the column appear, the sentence goes.
        let full = |v| Scaled {
            value: v,
            counted_share: 1.0,
        };
        let hw = |ins| {
            Counts::from_scaled(&[
                (Event::Cycles, full(1_000_000)),
                (Event::Instructions, full(ins)),
            ])
        };
        let (a, b) = (hw(750_000), hw(500_000));
        let core: crate::cpuset::CpuSet = "0-1".parse().unwrap();
        let s = &mut r.lockscan.as_mut().unwrap().result.results[0];
        s.core_cpi = crate::counters::per_core([(0, 0, core.clone(), &a), (1, 1, core, &b)]);
        let t = lockscan::view::core_cpi(&r.lockscan.as_ref().unwrap().result).unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(&t.rows[0][5..], ["1.33", "0.80"]);
        assert_eq!(&t.rows[1][5..], ["2.00", ""]);
        assert_eq!(counters_not_measured(&r), None);
        let y = r.smt_yield.as_mut().unwrap();
        y.result.workloads[0].yield_split = Some(smt_yield::model::YieldSplit {
            ipc_one_per_core: 0.39,
            ipc_all: 0.25,
            ipc_ratio: 0.64,
            cycles_per_sec_ratio: 2.0,
            instructions_per_op_ratio: 1.0,
            rounds: 3,
        });
        let t = smt_yield::view::table(&y.result);
        assert_eq!(
            t.header.last().unwrap(),
            "YIELD = IPC × CYCLES/S ÷ INSTR/OP"
        );
        assert_eq!(
            &t.rows[0][t.rows[0].len() - 2..],
            ["0.39 → 0.25", "0.64 × 2.00 ÷ 1.00"]
        );
        assert_eq!(t.rows[1].last().unwrap(), "–");
    }
}
