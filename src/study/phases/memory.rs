//! The memory phase: `mem report`'s reading of procfs and sysfs (overcommit, page cache,
//! huge pages, cgroup limits, OOM candidates) with its findings, then a bounded `mem pages`:
//! dependent-load latency vs working set with 4 KiB pages and THP (never hugetlb: see
//! [`LEAVE_HUGETLB`]), up to a cap its small share
//! of the budget allows — 256 MiB at most, 64 MiB with `--quick`, less when MemAvailable is
//! small. A cap that low misses where 4 KiB pages fall behind on CPUs with large TLBs;
//! `smtlab mem pages` (default 1 GiB) goes further.
//!
//! On a synthetic engine the settings are read from [`crate::mem::fixture`]'s made-up tree,
//! so the study's tests do not depend on this machine's memory, and the curves are not
//! measured: the fake engine has nothing to say about this machine's TLBs.

use crate::mem::pages::{self, PagesConfig, analysis};
use crate::progress::Progress;
use crate::report::{MemorySection, PhaseName, Report};
use crate::study::phase::{Outcome, Phase, RunCtx, SizeCtx, ms};
use anyhow::Result;
use std::time::Duration;

/// The largest working set the study measures.
pub const PAGES_CAP: u64 = 256 << 20;
/// … with `--quick`.
pub const QUICK_CAP: u64 = 64 << 20;
/// Below this the curves stop inside the last-level cache of most servers and say nothing
/// about TLBs: the part is skipped instead.
pub const PAGES_FLOOR: u64 = 16 << 20;
/// Page sizes measured: 4 KiB and THP.
const KINDS: u32 = 2;
/// Mapping, faulting in, first-touch rounds and writing each working set's cycle into
/// both buffers, per MiB of the cap (measured: 11 ms in a debug build on a loaded 2-vCPU
/// guest, 256 MiB in 5.4 s of which 2.4 s were samples; a release build needs less).
const PER_MIB: Duration = Duration::from_millis(10);

/// Free hugetlb pages are usually someone's: a database that maps them when it starts
/// (PostgreSQL `huge_pages = on`, Oracle's SGA) fails to start if they are taken, and
/// another `mem pages --reserve` run cannot give its pool back while the study holds pages
/// of it. So the study measures 4 KiB and THP only.
pub const LEAVE_HUGETLB: &str = "the study leaves hugetlb pools alone (their free pages are \
     usually a database's); `smtlab mem pages` measures them when pages are free, or with \
     --reserve as root";

/// What the page-size part measures.
#[derive(Debug, Clone, PartialEq)]
pub struct PagesPlan {
    pub max_bytes: u64,
    /// Samples per working set and page size, after one discarded warm-up.
    pub repeat: usize,
    pub chase_sample: Duration,
    pub bandwidth_sample: Duration,
}

impl PagesPlan {
    /// Expected wall time: every sample of every working set for two page sizes, plus the
    /// work proportional to the cap.
    pub fn estimate(&self) -> Duration {
        let sets = analysis::working_sets(self.max_bytes).len() as u32;
        (self.chase_sample + self.bandwidth_sample) * (sets * (self.repeat as u32 + 1) * KINDS)
            + PER_MIB * (self.max_bytes >> 20) as u32
    }

    /// The largest cap (halving from [`PAGES_CAP`], or [`QUICK_CAP`] with `--quick`, down to
    /// [`PAGES_FLOOR`]) whose estimate fits `budget`.
    pub fn size(budget: Duration, repeat: usize, quick: bool) -> Self {
        let (chase_sample, bandwidth_sample) = if quick {
            (ms(3), ms(1))
        } else {
            (ms(5), ms(2))
        };
        let mut p = PagesPlan {
            max_bytes: if quick { QUICK_CAP } else { PAGES_CAP },
            repeat,
            chase_sample,
            bandwidth_sample,
        };
        while p.max_bytes > PAGES_FLOOR && p.estimate() > budget {
            p.max_bytes /= 2;
        }
        p
    }
}

struct Memory {
    /// None on a synthetic engine.
    pages: Option<PagesPlan>,
}

pub fn size(ctx: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(Memory {
        pages: (!ctx.synthetic).then(|| PagesPlan::size(ctx.budget, ctx.repeat, ctx.cfg.quick)),
    }))
}

/// `mem pages`' changes to the machine (none without `--reserve`, but a journal left by a
/// killed `--reserve` run is put back) as notes; not its steps, which would be some 30
/// lines in a log for a phase of a few seconds.
struct Steps<'a>(&'a dyn Progress);

impl Progress for Steps<'_> {
    fn note(&self, msg: &str) {
        self.0.note(msg);
    }
}

/// The cap lowered to what half of MemAvailable holds (the study should not push the
/// machine into reclaim), or why the curves are not measured.
fn fit(plan: &PagesPlan, available: Option<u64>) -> Result<PagesConfig, String> {
    let mut max = plan.max_bytes;
    let mut note = None;
    if let Some(a) = available {
        let fits = pages::largest_max(a / 2);
        if fits < PAGES_FLOOR {
            return Err(format!(
                "MemAvailable is {}: half of it holds working sets up to {}, below the {} the \
                 study needs to reach past the caches",
                crate::render::bytes(a),
                crate::render::bytes(fits),
                crate::render::bytes(PAGES_FLOOR)
            ));
        }
        if fits < max {
            max = floor_pow2(fits).max(PAGES_FLOOR);
            note = Some(format!(
                "working sets up to {} instead of {}: MemAvailable is {}",
                crate::render::bytes(max),
                crate::render::bytes(plan.max_bytes),
                crate::render::bytes(a)
            ));
        }
    }
    let mut cfg =
        PagesConfig::new(Some(max), plan.repeat, false, available).map_err(|e| e.to_string())?;
    cfg.chase_sample = plan.chase_sample;
    cfg.bandwidth_sample = plan.bandwidth_sample;
    cfg.note = note;
    cfg.leave_hugetlb = Some(LEAVE_HUGETLB.into());
    Ok(cfg)
}

/// The largest power of two ≤ `v` (v ≥ 1).
fn floor_pow2(v: u64) -> u64 {
    1 << (63 - v.max(1).leading_zeros())
}

impl Phase for Memory {
    fn name(&self) -> PhaseName {
        crate::mem::PHASE
    }
    fn estimate(&self) -> Duration {
        self.pages
            .as_ref()
            .map_or(Duration::ZERO, PagesPlan::estimate)
    }
    fn units(&self) -> u64 {
        // With curves to measure: progress by the estimate, steps as notes.
        if self.pages.is_some() { 0 } else { 1 }
    }
    fn run(&self, ctx: &RunCtx<'_>, report: &mut Report) -> Result<Outcome> {
        let root = crate::mem::source::Dir::new(std::path::Path::new("/"));
        let rep = if ctx.engine.synthetic() {
            crate::mem::read(&crate::mem::fixture::tree(
                &crate::mem::fixture::Machine::default(),
            ))
        } else {
            crate::mem::read(&root)
        };
        let mut section = MemorySection {
            report: rep,
            pages: None,
            pages_skipped: None,
        };
        let Some(plan) = &self.pages else {
            section.pages_skipped = Some("synthetic report: nothing measured".into());
            report.memory = Some(section);
            ctx.progress.advance(1);
            return Ok(Outcome::done());
        };
        let cfg = match fit(plan, crate::mem::read::mem_available(&root)) {
            Ok(c) => c,
            Err(why) => {
                section.pages_skipped = Some(why);
                report.memory = Some(section);
                return Ok(Outcome::done());
            }
        };
        // The settings are kept even when the curves fail.
        report.memory = Some(section);
        let mut pages = pages::run(&cfg, &Steps(ctx.progress))?;
        // The debug-build caveat is the study's already.
        pages
            .notes
            .retain(|n| !report.notes.iter().any(|r| r == n.as_str()));
        let stopped = pages.interrupted;
        if let Some(m) = report.memory.as_mut() {
            m.pages = Some(pages);
        }
        Ok(Outcome::interrupted_if(stopped))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::pages::buffer::PageKind;
    use crate::study::tests::{DEFAULT, QUICK, sized};

    fn plan(budget: Duration) -> PagesPlan {
        sized(2, 1, budget, crate::mem::PHASE, |ctx| {
            PagesPlan::size(ctx.budget, ctx.repeat, ctx.cfg.quick)
        })
    }

    #[test]
    fn the_cap_fits_the_share_and_quick_is_smaller() {
        let q = plan(QUICK);
        let d = plan(DEFAULT);
        assert!(
            q.max_bytes <= QUICK_CAP && q.max_bytes >= PAGES_FLOOR,
            "{q:?}"
        );
        assert_eq!(d.max_bytes, PAGES_CAP, "{d:?}");
        let share = crate::study::phases::share(crate::mem::PHASE);
        assert!(d.estimate() <= DEFAULT.mul_f64(share), "{d:?}");
        assert!(q.estimate() < d.estimate());
        // A tiny budget still measures past the floor rather than nothing.
        assert_eq!(
            PagesPlan::size(Duration::ZERO, 3, true).max_bytes,
            PAGES_FLOOR
        );
    }

    #[test]
    fn little_memory_lowers_the_cap_or_skips_with_the_number() {
        let p = PagesPlan::size(DEFAULT, 5, false);
        let c = fit(&p, Some(8 << 30)).unwrap();
        assert_eq!(c.max_bytes, PAGES_CAP);
        assert!(c.note.is_none());
        let c = fit(&p, Some(200 << 20)).unwrap();
        assert!(
            c.max_bytes.is_power_of_two() && c.max_bytes < PAGES_CAP,
            "{c:?}"
        );
        assert!(
            c.note
                .as_deref()
                .unwrap()
                .contains("MemAvailable is 200 MiB")
        );
        let why = fit(&p, Some(20 << 20)).unwrap_err();
        assert!(why.contains("MemAvailable is 20 MiB"), "{why}");
        assert_eq!(floor_pow2(100), 64);
    }

    /// The part the study runs, on this machine with a 1 MiB cap: structure, never speed.
    #[test]
    fn a_tiny_cap_measures_a_curve_per_page_size_on_this_machine() {
        let plan = PagesPlan {
            max_bytes: 1 << 20,
            repeat: 1,
            chase_sample: ms(1),
            bandwidth_sample: ms(1),
        };
        let cfg = fit(&plan, None).unwrap();
        assert_eq!(cfg.max_bytes, 1 << 20);
        let p = pages::run(&cfg, &Steps(&crate::progress::Quiet)).unwrap();
        assert!(!p.interrupted);
        let sets = analysis::working_sets(1 << 20);
        let measured: Vec<_> = p.kinds.iter().filter(|k| k.skipped.is_none()).collect();
        assert!(!measured.is_empty());
        for k in &measured {
            assert_eq!(k.points.len(), sets.len(), "{:?}", k.kind);
            for q in &k.points {
                assert!(q.latency_ns.median > 0.0 && q.latency_ns.median.is_finite());
            }
        }
        for k in p.kinds.iter().filter(|k| k.skipped.is_some()) {
            assert!(k.points.is_empty() && !k.skipped.as_deref().unwrap().is_empty());
        }
        for k in [PageKind::Huge2M, PageKind::Huge1G] {
            let r = p.kinds.iter().find(|r| r.kind == k).unwrap();
            assert_eq!(r.skipped.as_deref(), Some(LEAVE_HUGETLB), "{k:?}");
        }
        let svg = crate::mem::pages::view::chart(&p);
        assert_eq!(svg.matches("<polyline").count(), measured.len());
        assert_eq!(
            crate::mem::pages::view::latency_table(&p).rows.len(),
            sets.len(),
            "one row per working set"
        );
    }
}
