//! The study's one data model, [`Report`](crate::report::Report), and everything that turns it into files:
//! `results.json` (the model serialised), `report.html` (self-contained, SVG charts) and
//! `summary.md`.
//!
//! Rendering is a pure function of the JSON: `smtlab study` writes `results.json`, reads it
//! back and renders from what it read, exactly as `smtlab report results.json` does, so both
//! produce byte-identical HTML and Markdown. Every file is written atomically (a temporary
//! file in the same directory, then `rename`), so an error or Ctrl-C never leaves half a
//! file behind.
//!
//! Codemap: `model.rs` holds the top-level model ([`Report`], provenance, machine facts,
//! phases, verdict) and `write.rs` the files ([`write_all`]), both re-exported here; the
//! experiments' sections are below. [`machine`](crate::report::machine) collects the facts about this machine and build; [`verdict`](crate::report::verdict) turns
//! results into plain words; [`svg`](crate::report::svg) draws charts; [`html`](crate::report::html) and [`markdown`](crate::report::markdown) render;
//! [`lenient`](crate::lenient) (re-exported) reads JSON in which non-finite numbers were written as `null`;
//! [`tables`](crate::report::tables) holds the rows both renderers print.

pub mod html;
pub mod machine;
pub mod markdown;
pub mod metrics;
mod model;
pub mod pages;
pub mod slurm;
pub mod svg;
pub mod tables;
pub mod verdict;
mod write;

pub use crate::conclusion::{Answer, Evidence, Finding, HtAnswer, PhaseName, WorkloadClass};

/// The JSON reader for non-finite numbers written as `null`, at its old path.
pub use crate::lenient;
pub use model::*;
pub use write::*;

use crate::experiments::c2c::C2c;
use crate::experiments::lockscan::LockscanReport;
use crate::experiments::neighbors::NeighborsReport;
use crate::experiments::rwcache::RwcacheReport;
use crate::locks::LockKind;
use crate::oltp::OltpReport;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// `c2c` as the study ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cSection {
    /// Samples kept per pair.
    pub samples: usize,
    /// Round trips per sample.
    pub round_trips: usize,
    /// Usable CPUs left out to fit the budget (empty when all were measured).
    pub cpus_left_out: String,
    pub result: C2c,
}

/// `lockscan` as the study ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockscanSection {
    /// `sweep`: one scenario per scanner position, plus a baseline without scanner.
    pub layout: String,
    pub locks: Vec<LockKind>,
    /// Discarded warm-up per run, ns.
    pub warmup_ns: u64,
    /// Measured time per run, ns.
    pub duration_ns: u64,
    pub result: LockscanReport,
}

/// `neighbors` as the study ran it: per lock an unpinned burner sweep and, on SMT
/// machines, a controlled sweep of burners on the workers' siblings; repeated,
/// interleaved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsSection {
    /// Workers of the unpinned series.
    pub workers: usize,
    pub locks: Vec<LockKind>,
    /// Burner counts of the unpinned series.
    pub burner_steps: Vec<usize>,
    pub burner_kind: String,
    pub burner_mode: crate::experiments::neighbors::BurnerMode,
    /// Discarded warm-up per step, ns.
    pub warmup_ns: u64,
    /// Measured time per step, ns.
    pub duration_ns: u64,
    /// Sweeps per lock.
    pub repeat: usize,
    /// Per lock and placement: every step summarised over the sweeps.
    pub series: Vec<NeighborsSeries>,
    /// Why the controlled sibling series did not run (no SMT siblings, …); None when it
    /// ran, and in files written before it existed.
    #[serde(default)]
    pub sibling_skipped: Option<String>,
    /// Every sweep as `neighbors` reported it, in the order they ran.
    pub runs: Vec<NeighborsReport>,
}

/// How a neighbors series placed its threads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SeriesPlacement {
    /// Workers and burners placed by the scheduler, as on a machine nobody tuned: shows
    /// what oversubscription costs, but whether burners met workers on a core was the
    /// scheduler's choice, so SMT sharing is at most possible.
    #[default]
    Unpinned,
    /// Workers one per core, burners pinned to their SMT siblings: SMT sharing controlled
    /// by the placement.
    SiblingBurners,
}

impl SeriesPlacement {
    pub fn label(self) -> &'static str {
        match self {
            SeriesPlacement::Unpinned => "unpinned",
            SeriesPlacement::SiblingBurners => "sibling burners",
        }
    }
}

/// One lock's burner sweep under one placement, summarised over repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsSeries {
    pub lock: LockKind,
    /// `unpinned` in files written before the sibling series existed.
    #[serde(default)]
    pub placement: SeriesPlacement,
    /// Workers of this series; None in files written before it existed (then the
    /// section's `workers`).
    #[serde(default)]
    pub workers: Option<usize>,
    pub steps: Vec<NeighborsStep>,
}

impl NeighborsSeries {
    /// Workers of this series.
    pub fn workers_in(&self, section: &NeighborsSection) -> usize {
        self.workers.unwrap_or(section.workers)
    }
}

/// One burner count of one lock, over repetitions (the experiment's own summary type).
pub use crate::experiments::neighbors::SeriesStep as NeighborsStep;

/// `oltp` as the study ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpSection {
    /// Layouts asked for (impossible ones are in `result.skipped`).
    pub layouts: Vec<String>,
    /// Per layout that ran: inserts/s over rounds.
    pub summary: Vec<OltpLayoutSummary>,
    pub result: OltpReport,
}

/// One layout over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpLayoutSummary {
    /// The layout, as on the command line (`one-per-core`, `pairs`).
    #[serde(with = "crate::oltp::report::request_as_text")]
    pub placement: crate::placement::Request,
    pub inserts_per_sec: Summary,
    /// Median commit latency p99 over rounds, ns.
    pub commit_latency_p99_ns: u64,
    /// Every round's row count matched what was committed.
    pub rows_verified: bool,
}

/// `rwcache` as the study ran it: every scheme at 1 thread and at every usable CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RwcacheSection {
    /// One row per scheme × thread count (what the chart and table show).
    pub rows: Vec<RwcacheRow>,
    /// The experiment's own report (lock stats, before/after, best, verdict, notes).
    pub result: RwcacheReport,
}

/// One scheme at one thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RwcacheRow {
    pub scheme: crate::rwcache::SchemeKind,
    pub threads: usize,
    pub requests_per_sec: Summary,
    /// Median share of the threads' time spent in the lock code, 0–1, when measured.
    pub lock_cpu_share: Option<f64>,
}

/// `yield` as the study ran it: every workload as one-per-core, all and pairs on the same
/// cores, interleaved rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct YieldSection {
    /// The experiment's own report: the plan, every run, and per workload the yield and
    /// shared-core speed with their intervals and classes.
    pub result: crate::experiments::smt_yield::YieldReport,
}

/// `compare` as the study ran it: the user's command under its placements, interleaved
/// rounds, as `smtlab compare` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareSection {
    /// The time the automatic round count was sized to fill (the command's share of the
    /// budget, warm-up included), ns; None when `--runs` fixed the rounds.
    pub sized_to_ns: Option<u64>,
    /// The compared value of each placement that ran: its median with a bootstrap
    /// interval (what the chart shows).
    pub medians: Vec<PlacementMedian>,
    /// The comparison as `smtlab compare --json` prints it.
    pub result: crate::experiments::compare::CompareReport,
}

/// One placement's compared value over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementMedian {
    /// The placement's label (`one-per-core`, `cpus:0-1`).
    pub label: String,
    /// `metric` or `wall_time_ns`: which value.
    pub basis: String,
    /// Its unit: the metric's (`tps`, `events/s`, `value`), or `ns`.
    pub unit: String,
    /// The median of the runs with a percentile bootstrap interval of it; None without
    /// runs.
    pub median: Option<crate::stats::Ci>,
    /// Runs behind it.
    pub n: usize,
}

/// `mem report` as the study read it: overcommit, page cache, huge pages, cgroup limits,
/// OOM candidates and the findings; and `mem pages`' latency curves for 4 KiB pages and THP
/// over working sets up to a cap the phase's budget share allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorySection {
    pub report: crate::mem::MemReport,
    /// The page-size curves; None when not measured (`pages_skipped` says why) and in files
    /// written before the study measured them.
    #[serde(default)]
    pub pages: Option<crate::mem::pages::model::PagesReport>,
    /// Why the curves were not measured (a synthetic report, too little MemAvailable).
    #[serde(default)]
    pub pages_skipped: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_schema_version_is_bad_input() {
        let e = Report::from_json(r#"{"schema_version": 999}"#).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_BAD_INPUT);
        assert!(format!("{e:#}").contains("999"));
    }
}
