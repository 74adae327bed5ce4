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
//! Codemap: [`machine`](crate::report::machine) collects the facts about this machine and build; [`verdict`](crate::report::verdict) turns
//! results into plain words; [`svg`](crate::report::svg) draws charts; [`html`](crate::report::html) and [`markdown`](crate::report::markdown) render;
//! [`lenient`](crate::lenient) (re-exported) reads JSON in which non-finite numbers were written as `null`;
//! [`tables`](crate::report::tables) holds the rows both renderers print.

pub mod html;
pub mod machine;
pub mod markdown;
pub mod metrics;
pub mod pages;
pub mod slurm;
pub mod svg;
pub mod tables;
pub mod verdict;

pub use crate::conclusion::{Answer, Evidence, Finding, HtAnswer, PhaseName, WorkloadClass};

/// The JSON reader for non-finite numbers written as `null`, at its old path.
pub use crate::lenient;

use crate::experiments::c2c::C2c;
use crate::experiments::lockscan::LockscanReport;
use crate::experiments::neighbors::NeighborsReport;
use crate::experiments::rwcache::RwcacheReport;
use crate::locks::LockKind;
use crate::oltp::OltpReport;
use crate::stats::Summary;
use crate::topology::Topology;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Version of the `results.json` layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// File names written into the output directory.
pub const RESULTS_JSON: &str = "results.json";
pub const REPORT_HTML: &str = "report.html";
pub const SUMMARY_MD: &str = "summary.md";

/// Everything one `smtlab study` found, and what it could not measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Version of this JSON layout.
    pub schema_version: u32,
    /// `complete`, or `partial` when a signal stopped the study or a phase failed
    /// (finished phases are kept).
    pub status: Status,
    /// True when the numbers were made up by the fake engine (tests), not measured.
    pub synthetic: bool,
    /// Which smtlab, built how, started when.
    pub provenance: Provenance,
    /// Kernel, governor, hypervisor and the CPU summary.
    pub machine: MachineInfo,
    /// SMT facts in one place.
    pub smt: SmtFacts,
    /// The full topology model (as `smtlab topo --json` has it).
    pub topology: Topology,
    /// How the study was asked to run.
    pub study: StudySettings,
    /// Every phase in order, with what happened to it.
    pub phases: Vec<PhaseRecord>,
    /// Cache-line handoff latency between CPUs.
    pub c2c: Option<C2cSection>,
    /// Lock threads vs a memory scanner.
    pub lockscan: Option<LockscanSection>,
    /// A hot-page lock vs CPU burners.
    pub neighbors: Option<NeighborsSection>,
    /// Singleton inserts on a real database, per layout.
    pub oltp: Option<OltpSection>,
    /// A read-mostly cache under different reader/writer schemes.
    pub rwcache: Option<RwcacheSection>,
    /// SMT on vs off on the same cores: the yield per workload.
    #[serde(default)]
    pub smt_yield: Option<YieldSection>,
    /// The user's own command under SMT placements (`smtlab study -- CMD`).
    #[serde(default)]
    pub compare: Option<CompareSection>,
    /// The memory settings (`smtlab mem report`); None in files written before it existed.
    #[serde(default)]
    pub memory: Option<MemorySection>,
    /// The signal that stopped the study, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<crate::interrupt::Signal>,
    /// The Slurm job step the study ran in (`SLURM_*` variables, its cgroup cpuset); None
    /// outside Slurm and in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<slurm::SlurmJob>,
    /// The answer in plain words.
    pub verdict: Verdict,
    /// Study-wide notes (budget overruns, skipped CPUs, …).
    pub notes: Vec<String>,
}

/// Whether every phase got its chance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    Complete,
    /// Ctrl-C stopped the study; later phases did not run.
    Partial,
}

/// Which smtlab produced the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// `CARGO_PKG_VERSION`.
    pub smtlab_version: String,
    /// `git rev-parse --short=12 HEAD` at build time, or `unknown` outside a git checkout.
    pub git_revision: String,
    /// `release` or `debug` (debug builds measure the wrong thing).
    pub build_profile: String,
    /// The command line, as typed.
    pub command: String,
    /// Start of the study, seconds since the Unix epoch (UTC).
    pub started_unix_s: u64,
    /// Wall time of the whole study, ns.
    pub wall_ns: u64,
}

/// Facts about the machine that change what results mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    /// CPU model name from `/proc/cpuinfo`, or `unknown`.
    pub cpu_model: String,
    /// `uname -srvm`.
    pub kernel: String,
    /// `cpufreq/scaling_governor` of the first usable CPU, or `unavailable` (no cpufreq,
    /// as in most VMs).
    pub frequency_governor: String,
    /// The hypervisor's name (`KVM`, `VMware`, …), `none` on bare metal, or `yes
    /// (unknown)` when only the CPU flag says so.
    pub hypervisor: String,
    /// Whether the kernel exposes a CPU PMU (`/sys/bus/event_source/devices/cpu*`). The
    /// study reads no hardware counters either way; this says whether `perf` could.
    pub hardware_counters: String,
    /// Online logical CPUs.
    pub online_cpus: usize,
    /// CPUs this process may use, as a list (`0-1`).
    pub usable_cpus: String,
    /// Cores, packages and L3 groups over online CPUs.
    pub cores: usize,
    pub packages: usize,
    pub l3_groups: usize,
    /// Total memory, bytes.
    pub memory_bytes: Option<u64>,
    /// The host's name (`uname -n`); None when read from a dump and in files written
    /// before it was recorded. `smtlab merge` tells hosts apart by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The CPU microcode revision (`microcode` in `/proc/cpuinfo`, x86), when the kernel
    /// shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microcode: Option<String>,
}

/// What the machine says about SMT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmtFacts {
    /// Most online threads on one core (1 = no SMT siblings visible).
    pub threads_per_core: usize,
    /// Cores with more than one online thread.
    pub cores_with_siblings: usize,
    /// `smt/control`, when the kernel has it.
    pub control: Option<String>,
    /// `smt/active`, when the kernel has it.
    pub active: Option<bool>,
    /// AMD family 15h CMT modules (two integer cores each, which the kernel lists as
    /// thread siblings): each CPU counts as a core and `threads_per_core` is 1. Absent
    /// (0) on every other machine.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cmt_modules: usize,
    /// One plain sentence.
    pub sentence: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How the study was asked to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudySettings {
    /// `--quick` was given.
    pub quick: bool,
    /// Time the measurements were sized to fill, ns.
    pub budget_ns: u64,
    /// The sum of the phases' estimates, ns (may exceed the budget on large machines).
    pub estimate_ns: u64,
    /// The database for `oltp` (password replaced by `***`).
    pub db: String,
}

/// What happened to a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhaseStatus {
    /// Ran to the end.
    Done,
    /// A signal (SIGINT, SIGTERM, SIGHUP) arrived during it; what finished is kept.
    Interrupted,
    /// Not possible or not available here (the reason says why).
    Skipped,
    /// It failed; the reason holds the error. Other phases still ran.
    Failed,
    /// A signal arrived before it started.
    NotRun,
}

impl PhaseStatus {
    pub fn label(self) -> &'static str {
        match self {
            PhaseStatus::Done => "done",
            PhaseStatus::Interrupted => "interrupted",
            PhaseStatus::Skipped => "skipped",
            PhaseStatus::Failed => "failed",
            PhaseStatus::NotRun => "not run",
        }
    }
}

/// One phase's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub phase: PhaseName,
    pub status: PhaseStatus,
    /// Why it was skipped, failed or cut short; None when done.
    pub reason: Option<String>,
    /// What the study expected it to take, ns.
    pub estimate_ns: u64,
    /// What it took, ns.
    pub wall_ns: u64,
}

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

/// The answer, in plain words, with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// "On this machine: …" — one paragraph, built from the findings and answers below.
    pub headline: String,
    /// "Keep HT on?" per workload class: the table every output shows first.
    #[serde(default)]
    pub answers: Vec<Answer>,
    /// One finding per experiment.
    pub findings: Vec<Finding>,
    /// What could not be measured here, and why.
    pub not_measured: Vec<String>,
}

impl Report {
    /// A complete report of this layout version with no phase run yet: every experiment's
    /// section None (each phase fills its own), no verdict, no notes.
    pub fn new(
        synthetic: bool,
        provenance: Provenance,
        machine: MachineInfo,
        topology: Topology,
        study: StudySettings,
    ) -> Self {
        Report {
            schema_version: SCHEMA_VERSION,
            status: Status::Complete,
            synthetic,
            provenance,
            machine,
            smt: self::machine::smt_facts(&topology),
            topology,
            study,
            phases: Vec::new(),
            c2c: None,
            lockscan: None,
            neighbors: None,
            oltp: None,
            rwcache: None,
            smt_yield: None,
            memory: None,
            compare: None,
            interrupted_by: None,
            slurm: None,
            verdict: Verdict {
                headline: String::new(),
                answers: Vec::new(),
                findings: Vec::new(),
                not_measured: Vec::new(),
            },
            notes: Vec::new(),
        }
    }

    /// Why the report is partial, in one sentence; None when it is complete.
    pub fn partial_reason(&self) -> Option<String> {
        if self.status != Status::Partial {
            return None;
        }
        let failed: Vec<String> = self
            .phases
            .iter()
            .filter(|p| p.status == PhaseStatus::Failed)
            .map(|p| {
                format!(
                    "{} failed ({})",
                    p.phase,
                    p.reason.as_deref().unwrap_or("no reason recorded")
                )
            })
            .collect();
        Some(if failed.is_empty() {
            format!(
                "the study was stopped by {}; phases that finished are shown, the others are \
                 listed as not run",
                crate::interrupt::name(self.interrupted_by)
            )
        } else {
            format!("{}; the other phases are shown", failed.join("; "))
        })
    }

    /// The JSON text of `results.json` (pretty, newline-terminated).
    pub fn to_json(&self) -> Result<String> {
        let mut s = serde_json::to_string_pretty(self).context("serialising the report")?;
        s.push('\n');
        Ok(s)
    }

    /// Reads a report from JSON text. Non-finite numbers (written as `null`) read back as
    /// NaN; the layout version must be this build's.
    pub fn from_json(text: &str) -> Result<Self> {
        // Editors on some systems save UTF-8 with a byte-order mark; JSON forbids it.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.trim().is_empty() {
            return Err(crate::error::BadInput("results.json is empty".into()).into());
        }
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            crate::error::BadInput(format!(
                "results.json is not valid JSON ({e}); was it cut short or edited?"
            ))
        })?;
        let version = v.get("schema_version");
        if version.and_then(|x| x.as_u64()) != Some(SCHEMA_VERSION as u64) {
            // The value as written (`"one"`, `-1`): only an absent field is "missing".
            let found = match version {
                Some(x) => format!(
                    "has schema_version {}",
                    crate::quote::shorten(&x.to_string())
                ),
                None => "has no schema_version".to_string(),
            };
            return Err(crate::error::BadInput(format!(
                "results.json {found}, and this smtlab reads {SCHEMA_VERSION}"
            ))
            .into());
        }
        lenient::from_value(v).map_err(|e| {
            crate::error::BadInput(format!("results.json does not match the report model: {e}"))
                .into()
        })
    }
}

/// The three files rendered from one JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub json: String,
    pub html: String,
    pub markdown: String,
}

/// Renders HTML and Markdown from the JSON text alone (what `smtlab report` does).
pub fn render_json(json: &str) -> Result<Rendered> {
    let r = Report::from_json(json)?;
    Ok(Rendered {
        json: json.to_string(),
        html: html::render(&r),
        markdown: markdown::render(&r),
    })
}

/// Serialises `report`, renders from the serialised text, and writes all three files into
/// `dir` atomically. Returns the paths written.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let json = report.to_json()?;
    let r = render_json(&json)?;
    write_rendered(&r, dir, true)
}

/// Writes rendered files into `dir` (created if missing); `with_json` also writes
/// `results.json`. Each file is written atomically.
pub fn write_rendered(r: &Rendered, dir: &Path, with_json: bool) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating `{}`", dir.display()))?;
    let mut out = Vec::new();
    if with_json {
        out.push(write_atomic(&dir.join(RESULTS_JSON), r.json.as_bytes())?);
    }
    out.push(write_atomic(&dir.join(REPORT_HTML), r.html.as_bytes())?);
    out.push(write_atomic(&dir.join(SUMMARY_MD), r.markdown.as_bytes())?);
    Ok(out)
}

/// Checks, before any work, that the output directory can be created and written and
/// that each of `files` in it is a regular file or nothing ([`crate::fsutil::check_output`]):
/// an `--out` that is a file, or under /proc or /sys, or whose `report.html` is a FIFO, is
/// the user's input (exit 2), and finding out after a study has measured for minutes would
/// lose the results.
pub fn check_out_dir(dir: &Path, files: &[&str]) -> Result<(), crate::error::BadInput> {
    let bad = |why: String| {
        crate::error::BadInput(format!(
            "--out {}: {why}; give a directory smtlab can create and write",
            dir.display()
        ))
    };
    if dir.exists() && !dir.is_dir() {
        return Err(bad("it is a file, not a directory".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create it ({e})")))?;
    let probe = dir.join(format!(".smtlab-write-test.{}", std::process::id()));
    write_atomic(&probe, b"").map_err(|e| bad(format!("cannot write in it ({e:#})")))?;
    let _ = std::fs::remove_file(&probe);
    for f in files {
        crate::fsutil::check_output("--out", &dir.join(f))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` whole ([`crate::fsutil::replace`]) and returns the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    crate::fsutil::replace(path, bytes).with_context(|| format!("writing `{}`", path.display()))?;
    Ok(path.to_path_buf())
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
