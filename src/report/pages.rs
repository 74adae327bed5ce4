//! The memory section's page-size curves (`mem pages` as the study ran it), shared by
//! report.html, summary.md and the study's terminal output: the chart, the latency table,
//! where 4 KiB pages fall behind, the TLB table. Pure.

use super::svg::{self, Point, Series, XMark};
use super::tables::{NONE, Table};
use crate::mem::pages::buffer::PageKind;
use crate::mem::pages::model::{KindResult, PagesReport};
use crate::mem::render::bytes;
use crate::render::{pm_plain, sig};

/// The page sizes with a curve.
fn measured(p: &PagesReport) -> Vec<&KindResult> {
    p.kinds
        .iter()
        .filter(|k| k.skipped.is_none() && !k.points.is_empty())
        .collect()
}

/// Latency vs working set, log-log, one line per page size with its median ± MAD as a
/// band; dashed marks at the 4 KiB data TLBs' reach and where 4 KiB pages fall behind.
pub fn chart(p: &PagesReport) -> String {
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
                            pm_plain(l.median, l.mad)
                        ),
                    }
                })
                .collect(),
        })
        .collect();
    // A label every two octaves: 16 KiB, 64 KiB, … up to the cap.
    let mut ticks = Vec::new();
    let mut t = crate::mem::pages::analysis::MIN_WORKING_SET;
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
    svg::log_log_chart(
        "memory-pages",
        "Dependent-load latency vs working set, by page size (log-log; band: median ± MAD)",
        "working set",
        "ns per load",
        &series,
        &ticks,
        &marks,
    )
}

/// What was measured, in one sentence: the cap, samples and their length.
pub fn settings(p: &PagesReport) -> String {
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
pub fn departure(p: &PagesReport) -> String {
    format!(
        "Where 4 KiB pages fall behind: {}.",
        crate::mem::pages::render::departure(p)
    )
}

/// Working set × page size: ns per load, median ± MAD.
pub fn latency(p: &PagesReport) -> Table {
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
                        pm_plain(q.latency_ns.median, q.latency_ns.mad)
                    }),
            );
        }
        t.rows.push(row);
    }
    t
}

/// What backed each page size's buffer, or why it was skipped.
pub fn backing(p: &PagesReport) -> Table {
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
pub fn tlb(p: &PagesReport) -> Option<Table> {
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

#[cfg(test)]
mod tests {
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

    pub fn report() -> PagesReport {
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

    #[test]
    fn tables_and_sentences_say_what_was_measured() {
        let p = report();
        let t = latency(&p);
        assert_eq!(t.header, ["Working set", "4 KiB ns/load", "THP ns/load"]);
        assert_eq!(t.rows.len(), p.kinds[0].points.len());
        assert!(tlb(&p).is_some());
        assert!(backing(&p).rows[2][1].starts_with("skipped: needs 32"));
        assert!(departure(&p).starts_with("Where 4 KiB pages fall behind: from a 16 MiB"));
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
        let s = departure(&one);
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
}
