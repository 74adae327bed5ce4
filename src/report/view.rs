//! The study's own terminal view: the answer table `smtlab study` prints after the run.
//! Pure.

use super::Verdict;
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

#[cfg(test)]
mod tests {
    use crate::experiments::{lockscan, smt_yield};
    use crate::report::fixture::smt;
    use crate::report::tables::counters_not_measured;

    #[test]
    fn report_tables_show_ipc_and_core_cpi_only_when_measured() {
        use crate::counters::{Counts, Event, Scaled};
        let mut r = smt().clone();
        // Synthetic: no IPC column, no CPI table, a sentence why.
        let y = r.smt_yield.as_ref().unwrap();
        assert!(
            !smt_yield::view::table(y)
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
        let t = smt_yield::view::table(y);
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
