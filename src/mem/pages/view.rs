//! `mem pages`' text view: the latency curves as a table and one sparkline per page size
//! on a shared log scale, bandwidth, first-touch cost, the TLB table with reach, the bends
//! and where 4 KiB pages fall behind.

use super::buffer::PageKind;
use super::model::*;
use crate::render::{self, NONE, Table, bytes, pm_sig, sig};
use std::fmt::Write;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

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

/// The text view.
pub fn text(r: &PagesReport) -> String {
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
                .chain(measured.iter().map(|k| format!("{} read", k.kind.label())))
                .collect::<Vec<_>>(),
        );
        for (i, p) in first.points.iter().enumerate() {
            let mut row = vec![bytes(p.working_set_bytes)];
            for k in &measured {
                row.push(k.points.get(i).map_or("-".into(), |q| {
                    pm_sig(q.latency_ns.median, q.latency_ns.mad)
                }));
            }
            for k in &measured {
                row.push(k.points.get(i).map_or("-".into(), |q| {
                    crate::render::bytes_per_sec(q.bandwidth_bytes_per_sec.median)
                }));
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
                pm_sig(t.ns_per_fault.median, t.ns_per_fault.mad),
                pm_sig(t.ns_per_mib.median, t.ns_per_mib.mad),
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

// ---------------------------------------------------------------------------------------
// The study's memory section.

/// The page sizes with a curve.
pub fn measured(p: &PagesReport) -> Vec<&KindResult> {
    p.kinds
        .iter()
        .filter(|k| k.skipped.is_none() && !k.points.is_empty())
        .collect()
}

/// What was measured, in one sentence: the cap, samples and their length.
pub fn study_settings(p: &PagesReport) -> String {
    format!(
        "Working sets from 16 KiB to {}, two per octave; a random cycle through every 64-byte \
         line, {} samples of {} ms per working set and page size (median ± MAD), page sizes \
         interleaved; THP enabled = {}. `smtlab mem pages --max 1GiB` measures further, \
         and hugetlb pages with `--reserve`.",
        bytes(p.max_bytes),
        p.repeat,
        sig(p.chase_sample_ns as f64 / 1e6, 2),
        p.thp_enabled.as_deref().unwrap_or("unknown")
    )
}

/// Where 4 KiB pages fall behind, as a sentence.
pub fn departure_sentence(p: &PagesReport) -> String {
    format!("Where 4 KiB pages fall behind: {}.", departure(p))
}

/// Working set × page size: ns per load, median ± MAD.
pub fn latency_table(p: &PagesReport) -> Table {
    let kinds = measured(p);
    let mut t = Table {
        header: std::iter::once("Working set".to_string())
            .chain(kinds.iter().map(|k| format!("{} ns/load", k.kind.label())))
            .collect(),
        rows: Vec::new(),
        align: Vec::new(),
    };
    let mut sizes: Vec<u64> = kinds
        .iter()
        .flat_map(|k| k.points.iter().map(|q| q.working_set_bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    for ws in sizes {
        let mut row = vec![bytes(ws)];
        for k in &kinds {
            row.push(
                k.points
                    .iter()
                    .find(|q| q.working_set_bytes == ws)
                    .map_or(NONE.into(), |q| {
                        pm_sig(q.latency_ns.median, q.latency_ns.mad)
                    }),
            );
        }
        t.rows.push(row);
    }
    t
}

/// What backed each page size's buffer, or why it was skipped.
pub fn backing_table(p: &PagesReport) -> Table {
    let mut t = Table {
        header: vec!["Pages".into(), "Backing".into()],
        rows: Vec::new(),
        align: Vec::new(),
    };
    for k in &p.kinds {
        let what = match (&k.skipped, &k.backing) {
            (Some(why), _) => format!("skipped: {why}"),
            (None, Some(b)) => b.sentence.clone(),
            (None, None) => "not read (/proc/self/smaps)".into(),
        };
        t.rows.push(vec![k.kind.label().into(), what]);
    }
    t
}

/// This CPU's TLBs from CPUID, with the reach each implies; None when CPUID gave none.
pub fn tlb_table(p: &PagesReport) -> Option<Table> {
    if p.tlb.entries.is_empty() {
        return None;
    }
    let mut t = Table {
        header: ["Level", "Kind", "Page", "Entries", "Ways", "Reach"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: Vec::new(),
        align: Vec::new(),
    };
    for e in &p.tlb.entries {
        t.rows.push(vec![
            format!("L{}", e.level),
            e.kind.label().into(),
            bytes(e.page_bytes),
            e.entries.to_string(),
            e.ways.map_or("full".into(), |w| w.to_string()),
            bytes(e.reach_bytes),
        ]);
    }
    Some(t)
}

/// Why the TLB table is missing, or what CPUID said beside it.
pub fn tlb_notes(p: &PagesReport) -> Vec<String> {
    let mut v = p.tlb.notes.clone();
    if p.tlb.entries.is_empty() && v.is_empty() {
        v.push("CPUID gave no TLB table on this CPU".into());
    }
    v
}

/// One line for the study's terminal output.
pub fn summary_line(p: &PagesReport) -> String {
    let kinds: Vec<&str> = measured(p).iter().map(|k| k.kind.label()).collect();
    let what = match &p.departure {
        Some(d) if d.working_sets == 1 => format!(
            "4 KiB pages slower than {} only at the largest working set ({:.2}× at {})",
            d.reference.label(),
            d.ratio_at_max,
            bytes(d.working_set_bytes)
        ),
        Some(d) => format!(
            "4 KiB pages fall behind {} from {} ({:.2}× at {})",
            d.reference.label(),
            bytes(d.working_set_bytes),
            d.ratio_at_max,
            bytes(p.max_bytes)
        ),
        None if kinds.len() > 1 => format!(
            "4 KiB pages stay within the huge-page curve's spread up to {}",
            bytes(p.max_bytes)
        ),
        None => "no huge-page curve to compare 4 KiB pages with".into(),
    };
    let last = |k: PageKind| {
        p.kinds
            .iter()
            .find(|r| r.kind == k && r.skipped.is_none())
            .and_then(|r| r.points.last())
            .map(|q| sig(q.latency_ns.median, 3))
    };
    let at_max = match (last(PageKind::Small), last(PageKind::Thp)) {
        (Some(a), Some(b)) => format!("; {a} vs {b} ns per load at the largest"),
        _ => String::new(),
    };
    format!(
        "Page size ({}, working sets to {}): {what}{at_max}{}",
        if kinds.is_empty() {
            "nothing measured".to_string()
        } else {
            kinds.join(" vs ")
        },
        bytes(p.max_bytes),
        if p.interrupted { " (interrupted)" } else { "" }
    )
}

// ---------------------------------------------------------------------------------------
// The export.

/// The export: one row per page size and working set with its raw medians and spreads,
/// and the study's tables.
pub fn document(r: &PagesReport) -> crate::render::export::Document {
    use crate::render::export::{Document, Section};
    let mut data = Table::new(&[
        "pages",
        "working_set_bytes",
        "latency_ns_median",
        "latency_ns_mad",
        "latency_n",
        "bandwidth_bytes_per_sec_median",
        "bandwidth_bytes_per_sec_mad",
    ]);
    for k in measured(r) {
        for q in &k.points {
            data.push(vec![
                k.kind.label().to_string(),
                q.working_set_bytes.to_string(),
                q.latency_ns.median.to_string(),
                q.latency_ns.mad.to_string(),
                q.latency_ns.n.to_string(),
                q.bandwidth_bytes_per_sec.median.to_string(),
                q.bandwidth_bytes_per_sec.mad.to_string(),
            ]);
        }
    }
    let mut sections = vec![
        Section {
            heading: "Latency vs working set".into(),
            text: vec![departure_sentence(r), study_settings(r)],
            table: Some(latency_table(r)),
        },
        Section {
            heading: "Backing".into(),
            text: Vec::new(),
            table: Some(backing_table(r)),
        },
    ];
    sections.push(Section {
        heading: "TLBs".into(),
        text: tlb_notes(r)
            .into_iter()
            .chain(r.notes.iter().cloned())
            .collect(),
        table: tlb_table(r),
    });
    Document {
        title: "smtlab mem pages".into(),
        json: serde_json::to_value(r).unwrap_or_default(),
        data,
        sections,
    }
}

/// Latency vs working set, log-log, one line per page size with its median ± MAD as a
/// band; dashed marks at the 4 KiB data TLBs' reach and where 4 KiB pages fall behind.
pub fn chart(p: &PagesReport) -> String {
    use render::svg::{Point, Series, XMark};
    let series: Vec<Series> = measured(p)
        .iter()
        .map(|k| Series {
            name: k.kind.label().to_string(),
            points: k
                .points
                .iter()
                .map(|q| {
                    let l = &q.latency_ns;
                    Point {
                        x: q.working_set_bytes as f64,
                        y: l.median,
                        range: Some(((l.median - l.mad).max(l.median * 0.01), l.median + l.mad)),
                        marker: None,
                        tooltip: format!(
                            "{}, {}: {} ns per load",
                            k.kind.label(),
                            bytes(q.working_set_bytes),
                            render::pm_sig(l.median, l.mad)
                        ),
                    }
                })
                .collect(),
        })
        .collect();
    // A label every two octaves: 16 KiB, 64 KiB, … up to the cap.
    let mut ticks = Vec::new();
    let mut t = super::analysis::MIN_WORKING_SET;
    while t <= p.max_bytes {
        ticks.push((t as f64, bytes(t)));
        t *= 4;
    }
    let mut marks: Vec<XMark> = [1u8, 2]
        .iter()
        .filter_map(|&level| {
            let r = p.tlb.data_reach(crate::mem::tlb::K4, level)?;
            (r <= p.max_bytes).then(|| XMark {
                x: r as f64,
                label: format!("L{level} TLB reach (4 KiB) {}", bytes(r)),
            })
        })
        .collect();
    if let Some(d) = &p.departure {
        marks.push(XMark {
            x: d.working_set_bytes as f64,
            label: format!("4 KiB falls behind {}", d.reference.label()),
        });
    }
    render::svg::log_log_chart(
        "memory-pages",
        "Dependent-load latency vs working set, by page size (log-log; band: median ± MAD)",
        "working set",
        "ns per load",
        &series,
        &ticks,
        &marks,
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::mem::pages::model::{BackingSummary, Departure, Point as Pt};
    use crate::stats::Summary;

    fn curve(kind: PageKind, scale: f64) -> KindResult {
        let points = crate::mem::pages::analysis::working_sets(64 << 20)
            .into_iter()
            .map(|ws| {
                let mut l = Summary::of(&[4.0 + scale * (ws as f64 / 1e6)]).unwrap();
                l.mad = l.median * 0.05;
                Pt {
                    working_set_bytes: ws,
                    latency_ns: l,
                    bandwidth_bytes_per_sec: Summary::of(&[3e9]).unwrap(),
                }
            })
            .collect();
        KindResult {
            kind,
            skipped: None,
            backing: Some(BackingSummary {
                buffer_bytes: 64 << 20,
                thp_bytes: if kind == PageKind::Thp { 64 << 20 } else { 0 },
                kernel_page_bytes: 4096,
                sentence: "made up".into(),
            }),
            points,
            first_touch: None,
            bends: Vec::new(),
        }
    }

    pub(crate) fn report() -> PagesReport {
        PagesReport {
            max_bytes: 64 << 20,
            repeat: 3,
            chase_sample_ns: 3_000_000,
            bandwidth_sample_ns: 1_000_000,
            seed: 1,
            thp_enabled: Some("madvise".into()),
            kinds: vec![
                curve(PageKind::Small, 3.0),
                curve(PageKind::Thp, 1.5),
                KindResult {
                    kind: PageKind::Huge2M,
                    skipped: Some("needs 32 free 2 MiB pages".into()),
                    backing: None,
                    points: Vec::new(),
                    first_touch: None,
                    bends: Vec::new(),
                },
            ],
            tlb: crate::mem::tlb::finish(
                "AuthenticAMD".into(),
                crate::mem::tlb::decode_amd(None, Some((0, 0x6080_0000, 0, 0)), None).0,
                vec![],
            ),
            caches: Vec::new(),
            departure: Some(Departure {
                reference: PageKind::Thp,
                working_set_bytes: 16 << 20,
                latency_4k_ns: 54.0,
                latency_ref_ns: 29.0,
                ratio_at_max: 1.9,
                tlb_reach_bytes: Some(512 << 10),
                working_sets: 5,
            }),
            reserved: Vec::new(),
            interrupted: false,
            notes: Vec::new(),
        }
    }

    #[test]
    fn tables_and_sentences_say_what_was_measured() {
        let p = report();
        let t = latency_table(&p);
        assert_eq!(t.header, ["Working set", "4 KiB ns/load", "THP ns/load"]);
        assert_eq!(t.rows.len(), p.kinds[0].points.len());
        assert!(tlb_table(&p).is_some());
        assert!(backing_table(&p).rows[2][1].starts_with("skipped: needs 32"));
        assert!(departure_sentence(&p).starts_with("Where 4 KiB pages fall behind: from a 16 MiB"));
        let line = summary_line(&p);
        assert!(
            line.contains("4 KiB vs THP, working sets to 64 MiB"),
            "{line}"
        );
        assert!(
            line.contains("fall behind THP from 16 MiB (1.90× at 64 MiB)"),
            "{line}"
        );
        // A departure at the largest working set alone is not "from there on".
        let mut one = p.clone();
        one.departure.as_mut().unwrap().working_sets = 1;
        one.departure.as_mut().unwrap().working_set_bytes = 64 << 20;
        let s = departure_sentence(&one);
        assert!(
            s.starts_with("Where 4 KiB pages fall behind: only at the largest working set, 64 MiB"),
            "{s}"
        );
        assert!(!s.contains("every size"), "{s}");
        let line = summary_line(&one);
        assert!(
            line.contains("slower than THP only at the largest working set (1.90× at 64 MiB)"),
            "{line}"
        );
    }

    #[test]
    fn exports_parse_back() {
        let r = report();
        let dir = tempfile::tempdir().unwrap();
        let e = crate::render::export::Exports {
            json: None,
            csv: Some(dir.path().join("p.csv")),
            markdown: Some(dir.path().join("p.md")),
        };
        e.write(|| document(&r)).unwrap();
        let mut rd = ::csv::Reader::from_path(dir.path().join("p.csv")).unwrap();
        assert_eq!(&rd.headers().unwrap()[1], "working_set_bytes");
        let rows: Vec<::csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2 * r.kinds[0].points.len());
        let ws: u64 = rows[0][1].parse().unwrap();
        assert_eq!(ws, r.kinds[0].points[0].working_set_bytes);
        let md = std::fs::read_to_string(dir.path().join("p.md")).unwrap();
        assert!(md.starts_with("# smtlab mem pages"), "{md}");
        assert!(md.contains("| Working set |"), "{md}");
    }

    #[test]
    fn the_chart_has_one_line_and_band_per_measured_page_size_and_its_axes() {
        let p = report();
        let s = chart(&p);
        assert_eq!(
            s.matches("<polyline").count(),
            2,
            "4 KiB and THP, not hugetlb"
        );
        assert_eq!(s.matches("<polygon").count(), 2, "a MAD band per line");
        assert!(s.contains(r#"data-chart="memory-pages""#));
        for label in [
            "ns per load",
            "working set",
            "16 KiB",
            "64 MiB",
            "4 KiB",
            "THP",
        ] {
            assert!(s.contains(&format!(">{label}<")), "{label}");
        }
        assert!(s.contains("4 KiB falls behind THP"));
        assert!(s.contains("L2 TLB reach (4 KiB) 512 KiB"));
        assert!(!s.contains("hugetlb"));
        // Every point drawn, with its value on hover.
        assert_eq!(s.matches("<circle").count(), 2 * p.kinds[0].points.len());
        assert!(s.contains("<title>THP, 64 MiB: "));
    }
}
