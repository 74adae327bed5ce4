//! Pure analysis of the curves: which working sets to measure, where a curve steps up and
//! which capacity (a cache, a TLB's reach) sits just below the step, and where 4 KiB pages
//! fall behind huge pages for good.

use super::buffer::PageKind;
use super::model::{Bend, CacheMark, Departure, KindResult, Point};
use crate::mem::tlb::TlbInfo;
use crate::render::bytes;

/// The smallest working set: a quarter of the smallest L1d in use, so the first points sit
/// in L1 everywhere.
pub const MIN_WORKING_SET: u64 = 16 << 10;
/// A step of this factor or more over the previous working set is a bend.
pub const BEND_RATIO: f64 = 1.25;
/// 4 KiB pages are "slower" where their median latency is this much above the reference's
/// and their median − MAD is above the reference's median + MAD.
pub const DEPART_RATIO: f64 = 1.10;

/// Working sets from [`MIN_WORKING_SET`] to `max`: two per octave (×1, ×1.5), then `max`
/// itself when it is not on that grid. Every size is a multiple of 4 KiB.
pub fn working_sets(max: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut s = MIN_WORKING_SET;
    while s <= max {
        v.push(s);
        let mid = s + s / 2;
        if mid <= max {
            v.push(mid);
        }
        s *= 2;
    }
    let max4k = max / 4096 * 4096;
    if v.last().is_some_and(|&l| l < max4k) {
        v.push(max4k);
    }
    v
}

/// Capacities that can explain a step in `kind`'s curve: the data caches and the data
/// TLBs' reach for the page size `kind` was backed with.
pub fn marks(
    kind: PageKind,
    thp_granted: bool,
    tlb: &TlbInfo,
    caches: &[CacheMark],
) -> Vec<(u64, String)> {
    let mut m: Vec<(u64, String)> = caches
        .iter()
        .map(|c| (c.size_bytes, format!("{} {}", c.name, bytes(c.size_bytes))))
        .collect();
    let page = match kind {
        PageKind::Thp if !thp_granted => crate::mem::tlb::K4,
        k => k.page_bytes(),
    };
    for level in [1u8, 2] {
        if let Some(r) = tlb.data_reach(page, level) {
            m.push((
                r,
                format!(
                    "L{level} TLB reach {} ({} × {})",
                    bytes(r),
                    r / page,
                    bytes(page)
                ),
            ));
        }
    }
    m.sort_by_key(|x| x.0);
    m
}

/// Steps of [`BEND_RATIO`] or more, consecutive steps merged into one climb; each names
/// the largest capacity in `marks` from the size before the climb up to its last size,
/// inclusive (random access starts missing a level at its capacity or a little before, as
/// other data and conflicts share it).
pub fn bends(points: &[Point], marks: &[(u64, String)]) -> Vec<Bend> {
    let near = |lo: u64, hi: u64| {
        marks
            .iter()
            .rev()
            .find(|(c, _)| *c >= lo && *c <= hi)
            .map(|(_, name)| name.clone())
    };
    let mut out: Vec<Bend> = Vec::new();
    // The working set before the current climb's first step.
    let mut climb_lo = 0;
    let mut prev_step = false;
    for w in points.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let step = b.latency_ns.median >= a.latency_ns.median * BEND_RATIO;
        if step && prev_step {
            if let Some(last) = out.last_mut() {
                last.to_ns = b.latency_ns.median;
                last.last_working_set_bytes = b.working_set_bytes;
                last.near = near(climb_lo, b.working_set_bytes);
            }
        } else if step {
            climb_lo = a.working_set_bytes;
            out.push(Bend {
                working_set_bytes: b.working_set_bytes,
                last_working_set_bytes: b.working_set_bytes,
                from_ns: a.latency_ns.median,
                to_ns: b.latency_ns.median,
                near: near(climb_lo, b.working_set_bytes),
            });
        }
        prev_step = step;
    }
    out
}

/// The huge-page curve to compare 4 KiB pages with: THP when at least 90 % of its buffer
/// was backed by huge pages, else hugetlb 2 MiB, else hugetlb 1 GiB.
pub fn reference(kinds: &[KindResult]) -> Option<&KindResult> {
    let measured = |k: PageKind| {
        kinds
            .iter()
            .find(|r| r.kind == k && r.skipped.is_none() && !r.points.is_empty())
    };
    let thp = measured(PageKind::Thp).filter(|r| {
        r.backing
            .as_ref()
            .is_some_and(|b| b.thp_bytes as f64 >= 0.9 * b.buffer_bytes as f64)
    });
    thp.or_else(|| measured(PageKind::Huge2M))
        .or_else(|| measured(PageKind::Huge1G))
}

/// Where 4 KiB pages become slower than `reference` at every larger working set.
pub fn departure(small: &KindResult, reference: &KindResult, tlb: &TlbInfo) -> Option<Departure> {
    let pairs: Vec<(&Point, &Point)> = small
        .points
        .iter()
        .filter_map(|p| {
            let q = reference
                .points
                .iter()
                .find(|q| q.working_set_bytes == p.working_set_bytes)?;
            Some((p, q))
        })
        .collect();
    let slower = |(p, q): &(&Point, &Point)| {
        let (a, b) = (&p.latency_ns, &q.latency_ns);
        a.median >= b.median * DEPART_RATIO && a.median - a.mad > b.median + b.mad
    };
    let mut first = None;
    for (i, pq) in pairs.iter().enumerate().rev() {
        if slower(pq) {
            first = Some(i);
        } else {
            break;
        }
    }
    let i = first?;
    let (p, q) = pairs[i];
    let (lp, lq) = pairs[pairs.len() - 1];
    let tlb_reach = [1u8, 2]
        .iter()
        .filter_map(|&l| tlb.data_reach(crate::mem::tlb::K4, l))
        .filter(|&r| r < p.working_set_bytes)
        .max();
    Some(Departure {
        reference: reference.kind,
        working_set_bytes: p.working_set_bytes,
        latency_4k_ns: p.latency_ns.median,
        latency_ref_ns: q.latency_ns.median,
        ratio_at_max: lp.latency_ns.median / lq.latency_ns.median,
        tlb_reach_bytes: tlb_reach,
        working_sets: pairs.len() - i,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    fn pt(ws: u64, ns: f64, mad: f64) -> Point {
        let mut s = Summary::of(&[ns]).unwrap();
        s.mad = mad;
        Point {
            working_set_bytes: ws,
            latency_ns: s,
            bandwidth_bytes_per_sec: Summary::of(&[1e9]).unwrap(),
        }
    }

    fn kind(k: PageKind, pts: Vec<Point>) -> KindResult {
        KindResult {
            kind: k,
            skipped: None,
            backing: None,
            points: pts,
            first_touch: None,
            bends: Vec::new(),
        }
    }

    #[test]
    fn working_sets_go_two_per_octave_up_to_max() {
        let v = working_sets(1 << 20);
        assert_eq!(v[..4], [16 << 10, 24 << 10, 32 << 10, 48 << 10]);
        assert_eq!(*v.last().unwrap(), 1 << 20);
        assert_eq!(v.len(), 13);
        assert_eq!(working_sets(100 << 10).last(), Some(&(100 << 10)));
        assert_eq!(working_sets(16 << 10), vec![16 << 10]);
        assert!(working_sets(1 << 30).iter().all(|s| s % 4096 == 0));
    }

    #[test]
    fn steps_are_found_merged_and_named() {
        let pts = vec![
            pt(32 << 10, 1.0, 0.0),
            pt(48 << 10, 1.0, 0.0),
            pt(64 << 10, 3.0, 0.0), // past a 48 KiB L1d
            pt(96 << 10, 3.1, 0.0),
            pt(512 << 10, 3.2, 0.0),
            pt(1 << 20, 10.0, 0.0), // at a 1 MiB L2
            pt(2 << 20, 40.0, 0.0), // merged with the step before
            pt(3 << 20, 41.0, 0.0),
        ];
        let marks = vec![
            (48 << 10, "L1d 48 KiB".to_string()),
            (1 << 20, "L2 1 MiB".into()),
        ];
        let b = bends(&pts, &marks);
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].working_set_bytes, 64 << 10);
        assert_eq!(b[0].near.as_deref(), Some("L1d 48 KiB"));
        assert_eq!((b[1].from_ns, b[1].to_ns), (3.2, 40.0));
        assert_eq!(b[1].working_set_bytes, 1 << 20);
        assert_eq!(b[1].near.as_deref(), Some("L2 1 MiB"));
        assert_eq!(b[1].last_working_set_bytes, 2 << 20, "the climb's end");
        assert_eq!(b[0].last_working_set_bytes, 64 << 10, "a single step");
        assert!(bends(&pts[..2], &marks).is_empty());
        // A climb whose capacity lies past its first step is still named by it.
        let climb = vec![
            pt(512 << 10, 3.8, 0.0),
            pt(768 << 10, 4.8, 0.0),
            pt(1 << 20, 6.4, 0.0),
            pt(1536 << 10, 11.6, 0.0),
        ];
        let b = bends(&climb, &marks);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!((b[0].from_ns, b[0].to_ns), (3.8, 11.6));
        assert_eq!(
            (b[0].working_set_bytes, b[0].last_working_set_bytes),
            (768 << 10, 1536 << 10)
        );
        assert_eq!(b[0].near.as_deref(), Some("L2 1 MiB"));
    }

    #[test]
    fn departure_is_the_start_of_the_last_slower_run() {
        let small = kind(
            PageKind::Small,
            vec![
                pt(1 << 20, 5.0, 0.1),
                pt(2 << 20, 6.0, 0.1), // slower, but not for good
                pt(4 << 20, 5.0, 0.1),
                pt(8 << 20, 9.0, 0.2),
                pt(16 << 20, 30.0, 1.0),
            ],
        );
        let thp = kind(
            PageKind::Thp,
            vec![
                pt(1 << 20, 5.0, 0.1),
                pt(2 << 20, 5.0, 0.1),
                pt(4 << 20, 5.0, 0.1),
                pt(8 << 20, 7.0, 0.2),
                pt(16 << 20, 12.0, 1.0),
            ],
        );
        let tlb = crate::mem::tlb::finish(
            "AuthenticAMD".into(),
            crate::mem::tlb::decode_amd(None, Some((0, 0x6080_0000, 0, 0)), None).0,
            vec![],
        );
        let d = departure(&small, &thp, &tlb).unwrap();
        assert_eq!(d.working_set_bytes, 8 << 20);
        assert_eq!(d.ratio_at_max, 2.5);
        assert_eq!(d.tlb_reach_bytes, Some(512 << 10), "128 × 4 KiB");
        assert_eq!(d.working_sets, 2, "8 and 16 MiB");
        // Only the largest working set slower: one point, said as one.
        let mut late = thp.clone();
        late.points[3] = pt(8 << 20, 9.0, 0.2);
        let d = departure(&small, &late, &tlb).unwrap();
        assert_eq!((d.working_set_bytes, d.working_sets), (16 << 20, 1));
        // Overlapping spreads are not a departure.
        let noisy = kind(PageKind::Thp, vec![pt(16 << 20, 28.0, 3.0)]);
        assert!(departure(&small, &noisy, &tlb).is_none());
    }
}
