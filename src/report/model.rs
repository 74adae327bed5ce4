//! The study's top-level model, `results.json` as serde types: [`Report`], its
//! provenance, machine facts, settings, phase records, notes and verdict. The experiments'
//! sections it holds are defined beside it in `report` (and move to their experiments).

use super::slurm;
use super::{
    C2cSection, CompareSection, LockscanSection, MemorySection, NeighborsSection, OltpSection,
    RwcacheSection, YieldSection,
};
use crate::conclusion::{Answer, Finding, PhaseName, StudySection};
use crate::lenient;
use crate::topology::Topology;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// Version of the `results.json` layout; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

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
    /// What the rulers do to each other in pairs (`smtlab pairs`); None in files written
    /// before it existed.
    #[serde(default)]
    pub pairs: Option<crate::experiments::pairs::PairsSection>,
    /// The signal that stopped the study, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<crate::interrupt::Signal>,
    /// The Slurm job step the study ran in (`SLURM_*` variables, its cgroup cpuset); None
    /// outside Slurm and in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<slurm::SlurmJob>,
    /// The answer in plain words.
    pub verdict: Verdict,
    /// Study-wide notes (budget overruns, caveats, busy CPUs, …).
    pub notes: Vec<Note>,
}

/// A study-wide note; in JSON its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// Even the shortest runs need more than the budget (`needed_s` > 1.5 × `budget_s`).
    OverBudget { needed_s: f64, budget_s: f64 },
    /// A caveat several commands attach (debug build, hypervisor, frequency governor).
    Caveat(crate::render::Caveat),
    /// A warning of the look at the CPUs before the run (other work, steal time).
    Hygiene(String),
    /// Any other text (read back from a file).
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::OverBudget { needed_s, budget_s } => write!(
                f,
                "this machine needs about {needed_s:.0} s even with the shortest runs, more \
                 than the {budget_s:.0} s budget"
            ),
            Note::Caveat(c) => std::fmt::Display::fmt(c, f),
            Note::Hygiene(s) | Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

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

/// One experiment's place in the report: the phase that fills it, its heading, and what it
/// holds (None when the phase did not run or produced nothing).
#[derive(Clone, Copy)]
pub struct Section<'a> {
    pub phase: PhaseName,
    pub title: &'static str,
    pub content: Option<&'a dyn StudySection>,
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
    /// The version of the rules that made these answers
    /// ([`RULES`](super::verdict::RULES) when this build wrote them); 0 in files written
    /// before the rules were numbered. `smtlab report --recompute` makes them again from
    /// the stored runs with this build's rules.
    #[serde(default)]
    pub rules: u32,
}

impl Report {
    /// Every experiment's section in the order report.html and summary.md show them, each
    /// with its phase and heading (and why it is missing when it is); no content where the
    /// phase did not run. A new experiment adds its field above and its line here.
    pub fn sections(&self) -> Vec<Section<'_>> {
        fn of<'a, S: StudySection>(
            phase: PhaseName,
            title: &'static str,
            s: &'a Option<S>,
        ) -> Section<'a> {
            Section {
                phase,
                title,
                content: s.as_ref().map(|s| s as &dyn StudySection),
            }
        }
        use crate::experiments::{
            c2c, compare, lockscan, neighbors, oltp, pairs, rwcache, smt_yield,
        };
        use crate::mem;
        vec![
            of(mem::PHASE, mem::TITLE, &self.memory),
            of(c2c::PHASE, c2c::TITLE, &self.c2c),
            of(lockscan::PHASE, lockscan::TITLE, &self.lockscan),
            of(neighbors::PHASE, neighbors::TITLE, &self.neighbors),
            of(oltp::PHASE, oltp::TITLE, &self.oltp),
            of(rwcache::PHASE, rwcache::TITLE, &self.rwcache),
            of(smt_yield::PHASE, smt_yield::TITLE, &self.smt_yield),
            of(compare::PHASE, compare::TITLE, &self.compare),
            of(pairs::PHASE, pairs::TITLE, &self.pairs),
        ]
    }

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
            smt: super::machine::smt_facts(&topology),
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
            pairs: None,
            compare: None,
            interrupted_by: None,
            slurm: None,
            verdict: Verdict {
                headline: String::new(),
                answers: Vec::new(),
                findings: Vec::new(),
                not_measured: Vec::new(),
                rules: super::verdict::RULES,
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
