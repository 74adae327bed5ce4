//! What c2c concludes, in one place: the study's finding — each relation's latency and
//! handoff ceiling, and how much faster a line moves between SMT siblings. The view
//! ([`super::view`]) lays the run out.

use super::model::C2cSection;
use crate::conclusion::Finding;
use crate::render;
use crate::topology::Proximity;

/// What c2c showed, for the study's findings: each relation's latency and ceiling, and how
/// much faster a line moves between SMT siblings.
pub fn finding(c: &C2cSection) -> Finding {
    let classes: Vec<String> = c
        .result
        .classes
        .iter()
        .map(|k| {
            format!(
                "{} {} ns (≤ {} handoffs/s)",
                k.proximity.label(),
                render::sig(k.median_latency_ns, 3),
                render::si_sig(k.ceiling.k1_handoffs_per_sec, 3)
            )
        })
        .collect();
    let sib = c.result.class(Proximity::SmtSibling);
    let other = c
        .result
        .classes
        .iter()
        .filter(|k| k.proximity != Proximity::SmtSibling)
        .min_by(|a, b| a.median_latency_ns.total_cmp(&b.median_latency_ns));
    let meaning = match (sib, other) {
        (Some(s), Some(o)) if s.median_latency_ns > 0.0 => format!(
            "Handing a cache line between SMT siblings took {} ns, {}× faster than the fastest other pair measured ({}, {} ns): a lock passed between siblings moves its cache line that much faster.",
            render::sig(s.median_latency_ns, 3),
            render::sig(o.median_latency_ns / s.median_latency_ns, 2),
            o.proximity.label(),
            render::sig(o.median_latency_ns, 3)
        ),
        (Some(s), None) => format!(
            "Handing a cache line between SMT siblings took {} ns; no pair on different cores was measured to compare with.",
            render::sig(s.median_latency_ns, 3)
        ),
        _ => "Every contended lock handoff moves at least one cache line at this latency, which bounds lock throughput; no SMT sibling pair was measured here.".into(),
    };
    Finding {
        topic: "cache-line handoff (c2c)".into(),
        observed: if classes.is_empty() {
            "no pair finished.".into()
        } else {
            classes.join("; ") + "."
        },
        meaning,
        evidence: Vec::new(),
    }
}
