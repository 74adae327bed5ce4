//! A burn run as one document ([`blocks`]): one row per burner and the total, each
//! burner's counters, the notes; [`data`] for CSV. Pure.

use super::kind::Unit;
use super::model::BurnReport;
use crate::render::blocks::Block;
use crate::render::export::Document;
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

/// The run as one document: what ran, one row per burner and the total, the bandwidth,
/// each burner's counters, then what cut it short and the notes. `smtlab burn` draws it,
/// `--export-markdown` writes it.
pub fn blocks(r: &BurnReport) -> Vec<Block> {
    let mut b = vec![
        Block::Intro(title(r)),
        Block::Heading("Burners".into()),
        Block::Table(burners_table(r)),
    ];
    if r.unit == Unit::Bytes {
        b.push(Block::Note(format!(
            "total bandwidth: {}",
            bytes_per_sec(r.total_ops_per_sec)
        )));
    }
    if let Some(t) = counters_table(r) {
        b.push(Block::Heading("Counters".into()));
        b.push(Block::Table(t));
        let counts = r
            .burners
            .iter()
            .map(|b| b.counters.as_ref().map(|m| &m.counts));
        b.extend(
            crate::counters::view::multiplexing_note(counts)
                .map(|n| Block::Note(format!("note: {n}"))),
        );
    }
    let mut notes = Vec::new();
    if r.interrupted {
        notes.push(format!(
            "interrupted by {}: rates cover the time measured before it",
            crate::interrupt::name(r.interrupted_by)
        ));
    }
    notes.extend(r.notes.iter().map(|n| format!("note: {n}")));
    if let Some(st) = &r.counters {
        notes.extend(crate::counters::view::status_lines(st));
    }
    if !notes.is_empty() {
        b.push(Block::Heading("Notes".into()));
        b.push(Block::List(notes));
    }
    b
}

/// One row per burner with its raw numbers: the CSV export.
pub fn data(r: &BurnReport) -> Table {
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
    data
}

/// What `--export-*` writes: [`blocks`] as Markdown, [`data`] as CSV, the model as JSON.
pub fn export(r: &BurnReport) -> Document {
    Document::of(&format!("smtlab burn {}", r.kind), r, data(r), &blocks(r))
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
        e.write(|| export(&r)).unwrap();
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
