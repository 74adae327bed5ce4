//! The memory section's page-size chart (`mem pages` as the study ran it) for
//! report.html; its tables and sentences are [`crate::mem::pages::view`]'s. Pure.

use super::svg::{self, Point, Series, XMark};
use crate::mem::pages::model::{KindResult, PagesReport};
use crate::render::bytes;

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
                            crate::render::pm_sig(l.median, l.mad)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::pages::view::tests::report;

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
