//! `mem pages`' text view: the latency curves as a table and one sparkline per page size
//! on a shared log scale, bandwidth, first-touch cost, the TLB table with reach, the bends
//! and where 4 KiB pages fall behind.

use super::buffer::PageKind;
use super::model::*;
use crate::mem::render::bytes;
use crate::render::{Table, sig};
use std::fmt::Write;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// `12.3 ± 0.4`.
fn pm(median: f64, mad: f64) -> String {
    format!("{} ± {}", sig(median, 3), sig(mad, 2))
}

/// Decimal GB/s, as bandwidth is quoted.
fn gbs(v: f64) -> String {
    sig(v / 1e9, 3)
}

/// One character per point of each curve, on one log scale for all of them.
pub fn sparklines(kinds: &[&KindResult]) -> Vec<(String, String)> {
    let all: Vec<f64> = kinds
        .iter()
        .flat_map(|k| k.points.iter().map(|p| p.latency_ns.median))
        .filter(|v| *v > 0.0 && v.is_finite())
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    kinds
        .iter()
        .map(|k| {
            let line: String = k
                .points
                .iter()
                .map(|p| {
                    let v = p.latency_ns.median;
                    let f = if hi > lo && v > 0.0 {
                        (v.ln() - lo.ln()) / (hi.ln() - lo.ln())
                    } else {
                        0.0
                    };
                    BARS[((f * 7.0).round() as usize).min(7)]
                })
                .collect();
            (k.kind.label().to_string(), line)
        })
        .collect()
}

pub fn human(r: &PagesReport) -> String {
    let mut o = String::new();
    let measured: Vec<&KindResult> = r
        .kinds
        .iter()
        .filter(|k| k.skipped.is_none() && !k.points.is_empty())
        .collect();
    let _ = writeln!(
        o,
        "Dependent-load latency, ns per load (median ± MAD of {} samples of {} ms; a random \
         cycle through every 64-byte line of the working set)",
        r.repeat,
        r.chase_sample_ns / 1_000_000
    );
    if let Some(first) = measured.first() {
        let mut table = Table::with_header(
            std::iter::once("working set".to_string())
                .chain(measured.iter().map(|k| k.kind.label().to_string()))
                .chain(measured.iter().map(|k| format!("{} GB/s", k.kind.label())))
                .collect::<Vec<_>>(),
        );
        for (i, p) in first.points.iter().enumerate() {
            let mut row = vec![bytes(p.working_set_bytes)];
            for k in &measured {
                row.push(
                    k.points
                        .get(i)
                        .map_or("-".into(), |q| pm(q.latency_ns.median, q.latency_ns.mad)),
                );
            }
            for k in &measured {
                row.push(
                    k.points
                        .get(i)
                        .map_or("-".into(), |q| gbs(q.bandwidth_bytes_per_sec.median)),
                );
            }
            table.push(row);
        }
        o.push_str(&table.text());
        let _ = writeln!(
            o,
            "\nLatency vs working set ({} → {}, log scale ▁ {} ns … █ {} ns):",
            bytes(first.points.first().map_or(0, |p| p.working_set_bytes)),
            bytes(first.points.last().map_or(0, |p| p.working_set_bytes)),
            sig(lowest(&measured), 3),
            sig(highest(&measured), 3)
        );
        for (label, line) in sparklines(&measured) {
            let _ = writeln!(o, "  {label:<14} {line}");
        }
    } else {
        o.push_str("  nothing measured\n");
    }

    o.push_str("\nWhere 4 KiB pages fall behind\n");
    let _ = writeln!(o, "  {}", departure(r));

    o.push_str(
        "\nBends (latency up ≥ 25% from one working set to the next; ns before the step → at the bend's last working set)\n",
    );
    for k in &measured {
        if k.bends.is_empty() {
            let _ = writeln!(o, "  {:<14} none", k.kind.label());
        }
        for (i, b) in k.bends.iter().enumerate() {
            let _ = writeln!(
                o,
                "  {:<14} {}: {} → {} ns{}",
                if i == 0 { k.kind.label() } else { "" },
                bend_span(b),
                sig(b.from_ns, 3),
                sig(b.to_ns, 3),
                b.near
                    .as_ref()
                    .map_or(String::new(), |n| format!(" (just past {n})"))
            );
        }
    }

    o.push_str("\nFirst touch (fresh mapping, one write per 4 KiB; median ± MAD)\n");
    let mut table = Table::new(&["pages", "mapping", "faults", "ns per fault", "ns per MiB"]);
    for k in &measured {
        if let Some(t) = &k.first_touch {
            table.push(vec![
                k.kind.label().into(),
                bytes(t.bytes),
                t.faults.to_string(),
                pm(t.ns_per_fault.median, t.ns_per_fault.mad),
                pm(t.ns_per_mib.median, t.ns_per_mib.mad),
            ]);
        }
    }
    for l in table.text().lines() {
        let _ = writeln!(o, "  {l}");
    }

    o.push_str("\nBacking\n");
    for k in &r.kinds {
        let what = match (&k.skipped, &k.backing) {
            (Some(why), _) => format!("skipped: {why}"),
            (None, Some(b)) => b.sentence.clone(),
            (None, None) => "not read (/proc/self/smaps)".into(),
        };
        let _ = writeln!(o, "  {:<14} {what}", k.kind.label());
    }

    let _ = writeln!(
        o,
        "\nTLBs (CPUID{}{})",
        if r.tlb.vendor.is_empty() {
            String::new()
        } else {
            format!(", {}", r.tlb.vendor)
        },
        if r.tlb.leaves.is_empty() {
            String::new()
        } else {
            format!(" leaves {}", r.tlb.leaves.join(", "))
        }
    );
    if !r.tlb.entries.is_empty() {
        let mut table = Table::new(&["level", "kind", "page", "entries", "ways", "reach"]);
        for e in &r.tlb.entries {
            table.push(vec![
                format!("L{}", e.level),
                e.kind.label().into(),
                bytes(e.page_bytes),
                e.entries.to_string(),
                e.ways.map_or("full".into(), |w| w.to_string()),
                bytes(e.reach_bytes),
            ]);
        }
        for l in table.text().lines() {
            let _ = writeln!(o, "  {l}");
        }
    }
    for n in &r.tlb.notes {
        let _ = writeln!(o, "  {n}");
    }
    if !r.caches.is_empty() {
        let _ = writeln!(
            o,
            "  data caches: {}",
            r.caches
                .iter()
                .map(|c| format!("{} {}", c.name, bytes(c.size_bytes)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !r.reserved.is_empty() {
        o.push_str("\nhugetlb pools reserved for the run\n");
        for c in &r.reserved {
            let _ = writeln!(
                o,
                "  {}: {} → {} (asked {}), put back to {}",
                c.pool,
                c.before,
                c.granted,
                c.asked,
                c.restored.map_or("unknown".into(), |v| v.to_string())
            );
        }
    }
    if r.interrupted {
        o.push_str("\ninterrupted: the working sets above are the ones that finished\n");
    }
    for n in &r.notes {
        let _ = writeln!(o, "note: {n}");
    }
    o
}

/// Where 4 KiB pages fall behind huge pages, as one sentence (also the study report's).
pub fn departure(r: &PagesReport) -> String {
    match &r.departure {
        // One point is not "every size from here on": say it is only the largest.
        Some(d) if d.working_sets == 1 => format!(
            "only at the largest working set, {}: 4 KiB pages are slower than {} there, {} vs \
             {} ns per load ({:.2}×); a larger `smtlab mem pages --max` would show whether \
             it holds beyond",
            bytes(d.working_set_bytes),
            d.reference.label(),
            sig(d.latency_4k_ns, 3),
            sig(d.latency_ref_ns, 3),
            d.ratio_at_max,
        ),
        Some(d) => format!(
            "from a {} working set on, 4 KiB pages are slower than {} at every size: {} vs {} ns \
             per load there, {:.2}× at {}{}",
            bytes(d.working_set_bytes),
            d.reference.label(),
            sig(d.latency_4k_ns, 3),
            sig(d.latency_ref_ns, 3),
            d.ratio_at_max,
            bytes(r.max_bytes),
            d.tlb_reach_bytes.map_or(String::new(), |t| format!(
                " (CPUID's largest 4 KiB data-TLB reach below it: {})",
                bytes(t)
            ))
        ),
        None if r
            .kinds
            .iter()
            .any(|k| k.kind != PageKind::Small && k.skipped.is_none() && !k.points.is_empty()) =>
        {
            format!(
                "nowhere up to {}: the 4 KiB curve stays within the huge-page one's spread \
                 (or 10%); a larger working set (`smtlab mem pages --max`) may show it",
                bytes(r.max_bytes)
            )
        }
        None => "not measured: no huge-page curve to compare with".into(),
    }
}

fn lowest(k: &[&KindResult]) -> f64 {
    k.iter()
        .flat_map(|k| k.points.iter().map(|p| p.latency_ns.median))
        .fold(f64::MAX, f64::min)
}

fn highest(k: &[&KindResult]) -> f64 {
    k.iter()
        .flat_map(|k| k.points.iter().map(|p| p.latency_ns.median))
        .fold(0.0, f64::max)
}

/// Where a bend happened: one working set for a single step, the range for a climb of
/// several consecutive steps (whose latencies are those of the range's two ends).
fn bend_span(b: &super::model::Bend) -> String {
    if b.last_working_set_bytes > b.working_set_bytes {
        format!(
            "from {} to {}",
            bytes(b.working_set_bytes),
            bytes(b.last_working_set_bytes)
        )
    } else {
        format!("at {}", bytes(b.working_set_bytes))
    }
}
