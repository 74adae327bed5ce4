//! A burn run as text: one row per burner and the total, each burner's counters, and the
//! export document. Pure.

use super::kind::Unit;
use super::model::BurnReport;
use crate::render::export::{Document, Section};
use crate::render::{self, NONE, Table, bytes, bytes_per_sec};

/// The first line: kind, count, mode, placement, policy, duration and warm-up.
fn title(r: &BurnReport) -> String {
    let warm = if r.warmup_ns == 0 {
        "without warm-up".to_string()
    } else {
        format!("after {} warm-up", render::duration_ns(r.warmup_ns as f64))
    };
    format!(
        "burn {} × {} ({} mode, placement {}, policy {}{}{}), {} {}",
        r.kind,
        r.burners.len(),
        r.mode,
        r.placement,
        r.policy,
        r.nice.map(|n| format!(", nice {n}")).unwrap_or_default(),
        r.max_prime
            .map(|m| format!(", max prime {m}"))
            .unwrap_or_default(),
        render::duration_ns(r.duration_ns as f64),
        warm,
    )
}

/// One row per burner, then the total.
pub fn burners_table(r: &BurnReport) -> Table {
    let unit = r.unit.label();
    let fmt_rate = |v: f64| match r.unit {
        Unit::Events => render::sig(v, 3),
        _ => render::si_sig(v, 3),
    };
    let mut header = vec![
        "BURNER".to_string(),
        "PID".into(),
        "CPUS".into(),
        "SEEN ON".into(),
    ];
    let variants = r.burners.iter().any(|b| b.variant.is_some());
    let buffers = r.burners.iter().any(|b| b.buffer_bytes.is_some());
    if variants {
        header.push("VARIANT".into());
    }
    if buffers {
        header.push("BUFFER".into());
    }
    header.extend([
        format!("{}/S", unit.to_uppercase()),
        "CPU%".into(),
        "PREEMPTED".into(),
    ]);
    let mut table = Table::with_header(header);
    for b in &r.burners {
        let mut row = vec![
            b.burner.to_string(),
            b.pid.to_string(),
            b.cpus.to_string(),
            b.observed_cpus.to_string(),
        ];
        if variants {
            row.push(b.variant.clone().unwrap_or_else(|| NONE.into()));
        }
        if buffers {
            row.push(b.buffer_bytes.map(bytes).unwrap_or_else(|| NONE.into()));
        }
        row.extend([
            fmt_rate(b.ops_per_sec),
            format!("{:.1}", 100.0 * b.cpu_share()),
            render::thousands(b.involuntary_ctx_switches),
        ]);
        table.push(row);
    }
    let mut total = vec![
        "total".to_string(),
        String::new(),
        String::new(),
        String::new(),
    ];
    if variants {
        total.push(String::new());
    }
    if buffers {
        total.push(String::new());
    }
    total.push(fmt_rate(r.total_ops_per_sec));
    table.push(total);
    table
}

/// Each burner's counters; None when no burner counted.
pub fn counters_table(r: &BurnReport) -> Option<Table> {
    use crate::counters::view as counters;
    let counts = || {
        r.burners
            .iter()
            .map(|b| b.counters.as_ref().map(|m| &m.counts))
    };
    if counts().all(|c| c.is_none()) {
        return None;
    }
    let hw = counters::any_hardware(counts());
    let mut table = Table::with_header(
        ["BURNER", "CPUS"]
            .map(String::from)
            .into_iter()
            .chain(counters::header(hw))
            .collect::<Vec<_>>(),
    );
    for b in &r.burners {
        table.push(
            [b.burner.to_string(), b.cpus.to_string()]
                .into_iter()
                .chain(counters::cells(b.counters.as_ref().map(|m| &m.counts), hw))
                .collect(),
        );
    }
    Some(table)
}

/// The text report: the burners' table, the bandwidth, the counters, notes.
pub fn text(r: &BurnReport) -> String {
    let mut out = title(r) + "\n";
    out.push_str(&burners_table(r).text());
    if r.unit == Unit::Bytes {
        out.push_str(&format!(
            "total bandwidth: {}\n",
            bytes_per_sec(r.total_ops_per_sec)
        ));
    }
    if let Some(t) = counters_table(r) {
        out.push_str("counters:\n");
        out.push_str(&t.text());
        let counts = r
            .burners
            .iter()
            .map(|b| b.counters.as_ref().map(|m| &m.counts));
        if let Some(n) = crate::counters::view::multiplexing_note(counts) {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    if r.interrupted {
        out.push_str(&format!(
            "interrupted by {}: rates cover the time measured before it\n",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::view::status_lines(st) {
            out.push_str(&format!("{l}\n"));
        }
    }
    out
}

/// The export: one row per burner with its raw numbers, and the terminal's tables.
pub fn document(r: &BurnReport) -> Document {
    let unit = r.unit.label();
    let rate = format!("{unit}_per_sec");
    let mut data = Table::new(&[
        "burner",
        "pid",
        "cpus",
        "observed_cpus",
        "variant",
        "buffer_bytes",
        rate.as_str(),
        "cpu_share",
        "involuntary_ctx_switches",
    ]);
    for b in &r.burners {
        data.push(vec![
            b.burner.to_string(),
            b.pid.to_string(),
            b.cpus.to_string(),
            b.observed_cpus.to_string(),
            b.variant.clone().unwrap_or_else(|| NONE.into()),
            b.buffer_bytes
                .map_or_else(|| NONE.to_string(), |x| x.to_string()),
            b.ops_per_sec.to_string(),
            b.cpu_share().to_string(),
            b.involuntary_ctx_switches.to_string(),
        ]);
    }
    let mut sections = vec![Section {
        heading: "Burners".into(),
        text: vec![title(r)],
        table: Some(burners_table(r)),
    }];
    if let Some(t) = counters_table(r) {
        sections.push(Section {
            heading: "Counters".into(),
            text: Vec::new(),
            table: Some(t),
        });
    }
    Document {
        title: format!("smtlab burn {}", r.kind),
        json: serde_json::to_value(r).unwrap_or_default(),
        data,
        sections,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_parse_back() {
        let r = super::super::model::tests::sample();
        let dir = tempfile::tempdir().unwrap();
        let e = crate::render::export::Exports {
            json: None,
            csv: Some(dir.path().join("b.csv")),
            markdown: Some(dir.path().join("b.md")),
        };
        e.write(|| document(&r)).unwrap();
        let mut rd = ::csv::Reader::from_path(dir.path().join("b.csv")).unwrap();
        let head = rd.headers().unwrap().clone();
        assert_eq!(&head[0], "burner");
        let rows: Vec<::csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), r.burners.len());
        let v: f64 = rows[0][6].parse().unwrap();
        assert_eq!(v, r.burners[0].ops_per_sec);
        let md = std::fs::read_to_string(dir.path().join("b.md")).unwrap();
        assert!(md.starts_with("# smtlab burn"), "{md}");
        assert!(md.contains("| BURNER | PID |"), "{md}");
    }
}
