//! Counters in text reports: the columns of a per-thread (or per-run) table, the per-core
//! CPI table, and the lines saying what was not measured. Hardware columns appear only
//! when some row counted them; a missing value is `-`, never 0.

use super::{CoreCpi, Counts, Status};
use crate::render::{self, Table, thousands};

/// True when any of `rows` counted a hardware event.
pub fn any_hardware<'a>(rows: impl IntoIterator<Item = Option<&'a Counts>>) -> bool {
    rows.into_iter().flatten().any(Counts::has_hardware)
}

/// Column headers: software, then hardware ones when `hw`.
pub fn header(hw: bool) -> Vec<String> {
    let mut h: Vec<String> = ["TASK-CLOCK", "CTX-SW", "MIGRATIONS", "PAGE-FAULTS"]
        .map(String::from)
        .to_vec();
    if hw {
        h.extend(["CYCLES", "INSTRUCTIONS", "IPC", "CPI", "GHZ"].map(String::from));
    }
    h
}

/// One row's cells under [`header`].
pub fn cells(c: Option<&Counts>, hw: bool) -> Vec<String> {
    let get = |f: fn(&Counts) -> Option<u64>| render::or_dash(c.and_then(f), thousands);
    let float = |f: fn(&Counts) -> Option<f64>, d: usize| {
        render::or_dash(c.and_then(f), |x| format!("{x:.d$}"))
    };
    let mut v = vec![
        render::or_dash(c.and_then(|c| c.task_clock_ns), |ns| {
            render::duration_ns(ns as f64)
        }),
        get(|c| c.context_switches),
        get(|c| c.cpu_migrations),
        get(|c| c.page_faults),
    ];
    if hw {
        v.push(render::or_dash(c.and_then(|c| c.cycles), |x| {
            render::si(x as f64)
        }));
        v.push(render::or_dash(c.and_then(|c| c.instructions), |x| {
            render::si(x as f64)
        }));
        v.push(float(|c| c.ipc, 2));
        v.push(float(|c| c.cpi, 2));
        v.push(float(|c| c.effective_ghz, 2));
    }
    v
}

/// A note when some value was scaled for multiplexing: the smallest counted share.
pub fn multiplexing_note<'a>(rows: impl IntoIterator<Item = Option<&'a Counts>>) -> Option<String> {
    let min = rows
        .into_iter()
        .flatten()
        .filter_map(|c| c.counted_share)
        .fold(f64::INFINITY, f64::min);
    (min < 0.999).then(|| {
        format!(
            "some events were counted only {:.0}% of the time (more events than PMU \
             counters) and are scaled up to the whole window",
            min * 100.0
        )
    })
}

/// The per-core CPI table: each core, its threads' CPIs and the core's; empty text for
/// an empty table.
pub fn core_cpi_table(cores: &[CoreCpi]) -> String {
    if cores.is_empty() {
        return String::new();
    }
    let mut table = Table::new(&[
        "CORE",
        "THREAD",
        "CPU",
        "CYCLES",
        "INSTRUCTIONS",
        "THREAD CPI",
        "CORE CPI",
    ]);
    for k in cores {
        for (i, t) in k.threads.iter().enumerate() {
            table.push(vec![
                if i == 0 {
                    k.core.to_string()
                } else {
                    String::new()
                },
                t.thread.to_string(),
                t.cpu.to_string(),
                render::si(t.cycles as f64),
                render::si(t.instructions as f64),
                render::or_dash(t.cpi, |x| format!("{x:.2}")),
                if i == 0 {
                    render::or_dash(k.core_cpi, |x| format!("{x:.2}"))
                } else {
                    String::new()
                },
            ]);
        }
    }
    table.text()
}

/// `counters: …` lines for what was not measured (nothing when everything was).
pub fn status_lines(st: &Status) -> Vec<String> {
    st.lines()
        .into_iter()
        .map(|l| format!("counters: {l}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::{Event, Scaled};

    fn full(v: u64) -> Scaled {
        Scaled {
            value: v,
            counted_share: 1.0,
        }
    }

    #[test]
    fn hardware_columns_only_when_counted() {
        let sw = Counts::from_scaled(&[
            (Event::TaskClock, full(1_500_000)),
            (Event::ContextSwitches, full(12)),
            (Event::CpuMigrations, full(0)),
        ]);
        assert!(!any_hardware([Some(&sw), None]));
        assert_eq!(header(false).len(), cells(Some(&sw), false).len());
        assert_eq!(cells(Some(&sw), false), ["1.5 ms", "12", "0", "-"]);
        assert_eq!(cells(None, false), ["-", "-", "-", "-"]);
        let hw = Counts::from_scaled(&[
            (Event::TaskClock, full(1_000_000)),
            (Event::Cycles, full(2_000_000)),
            (Event::Instructions, full(1_000_000)),
        ]);
        assert!(any_hardware([Some(&sw), Some(&hw)]));
        let c = cells(Some(&hw), true);
        assert_eq!(header(true).len(), c.len());
        assert_eq!(&c[4..], ["2 M", "1 M", "0.50", "2.00", "2.00"]);
        assert_eq!(multiplexing_note([Some(&hw)]), None);
        let half = Counts::from_scaled(&[(
            Event::Cycles,
            Scaled {
                value: 10,
                counted_share: 0.5,
            },
        )]);
        assert!(
            multiplexing_note([Some(&hw), Some(&half)])
                .unwrap()
                .contains("50%")
        );
    }

    #[test]
    fn core_table_lists_threads_under_their_core() {
        let hw = |cy, ins| {
            Counts::from_scaled(&[(Event::Cycles, full(cy)), (Event::Instructions, full(ins))])
        };
        let (a, b) = (hw(1_000_000, 750_000), hw(1_000_000, 500_000));
        let core: crate::cpuset::CpuSet = "0-1".parse().unwrap();
        let t = crate::counters::per_core([(0, 0, core.clone(), &a), (1, 1, core, &b)]);
        let text = core_cpi_table(&t);
        assert!(
            text.contains("1.33") && text.contains("2.00") && text.contains("0.80"),
            "{text}"
        );
        assert_eq!(core_cpi_table(&[]), "");
    }
}
