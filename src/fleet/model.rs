//! `fleet.json`: what `smtlab merge` found, the one model the Markdown, HTML, terminal and
//! Prometheus renderers draw.

use crate::report::metrics::RatioKind;
use crate::report::{HtAnswer, Status, WorkloadClass};
use crate::stats::{Comparison, Effect, Thresholds};
use serde::{Deserialize, Serialize};

/// Version of the `fleet.json` layout.
pub const FLEET_SCHEMA_VERSION: u32 = 1;
/// The `kind` of a `fleet.json`, so that one given to `merge` is recognised as not a host's.
pub const FLEET_KIND: &str = "smtlab-fleet";

/// Many hosts' studies, grouped by machine type and pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fleet {
    /// Always `smtlab-fleet`.
    pub kind: String,
    pub schema_version: u32,
    pub provenance: FleetProvenance,
    /// Confidence asked of every pooled interval, e.g. 0.95.
    pub confidence: f64,
    /// How hosts were pooled, in words with the sources.
    pub method: String,
    /// Input files read (after expanding directories).
    pub files_read: usize,
    /// Hosts merged (one results.json each).
    pub hosts: usize,
    /// Of them, made up by the fake engine.
    pub synthetic_hosts: usize,
    /// Of them, run inside a Slurm job.
    pub slurm_hosts: usize,
    /// Inputs not merged, each with its reason.
    pub skipped: Vec<Skipped>,
    /// One entry per machine type, largest first.
    pub types: Vec<MachineType>,
    /// Fleet-wide notes (mixed smtlab versions, types that differ only in SMT state).
    pub notes: Vec<String>,
}

/// A fleet-wide note; kept in [`Fleet::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// The hosts ran these different smtlab versions.
    MixedVersions { versions: Vec<String> },
    /// The hosts ran different smtlab builds (version and git revision, with how many
    /// hosts ran each): their answers were made by different builds' rules.
    MixedBuilds { builds: Vec<(String, usize)> },
    /// Machine type `off_type` (`hosts` hosts) has the CPU of `on_type` with SMT `smt`.
    SmtOffTwin {
        off_type: String,
        hosts: usize,
        on_type: String,
        smt: String,
    },
    /// `synthetic_hosts` of the `hosts` hosts carry the fake engine's data.
    Synthetic {
        synthetic_hosts: usize,
        hosts: usize,
    },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::render::count;
        match self {
            Note::MixedVersions { versions } => write!(
                f,
                "The hosts ran different smtlab versions ({}); their studies may have measured \
                 differently.",
                versions.join(", ")
            ),
            Note::MixedBuilds { builds } => write!(
                f,
                "The hosts ran {} different smtlab builds ({}): their answers were made by \
                 different builds' rules, and a row pooling them may mix rules; run the \
                 older hosts' studies again with one build to compare like with like.",
                builds.len(),
                builds
                    .iter()
                    .map(|(b, n)| format!("{b} on {}", count(*n, "host")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Note::SmtOffTwin {
                off_type,
                hosts,
                on_type,
                smt,
            } => write!(
                f,
                "{off_type} ({}) has the CPU of {on_type} with SMT {smt}: its hosts cannot \
                 answer the HT question until SMT is on there.",
                count(*hosts, "host")
            ),
            Note::Synthetic {
                synthetic_hosts,
                hosts,
            } => write!(
                f,
                "{synthetic_hosts} of {} carry synthetic data made up by the fake engine: \
                 nothing on them was measured.",
                count(*hosts, "host")
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
mod note_tests {
    use super::Note;

    #[test]
    fn notes_say_the_sentences_merge_printed() {
        let twin = Note::SmtOffTwin {
            off_type: "type 2".into(),
            hosts: 1,
            on_type: "type 1".into(),
            smt: "off".into(),
        };
        assert_eq!(
            twin,
            "type 2 (1 host) has the CPU of type 1 with SMT off: its hosts cannot answer the HT \
             question until SMT is on there."
        );
        let synthetic = Note::Synthetic {
            synthetic_hosts: 2,
            hosts: 3,
        };
        assert_eq!(
            synthetic,
            "2 of 3 hosts carry synthetic data made up by the fake engine: nothing on them was \
             measured."
        );
        let mixed = Note::MixedVersions {
            versions: vec!["0.1.0".into(), "0.2.0".into()],
        };
        assert_eq!(
            mixed,
            "The hosts ran different smtlab versions (0.1.0, 0.2.0); their studies may have \
             measured differently."
        );
    }
}

/// Which smtlab merged, when, how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetProvenance {
    pub smtlab_version: String,
    pub git_revision: String,
    /// The command line, as typed.
    pub command: String,
    /// When the merge ran, seconds since the Unix epoch.
    pub merged_unix_s: u64,
}

/// An input that was not merged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The path as given or found.
    pub path: String,
    pub problem: Problem,
    /// What is wrong and what would be right, in one sentence.
    pub reason: String,
}

/// Why an input was not merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Problem {
    /// The path does not exist.
    Missing,
    /// It could not be read (permissions, I/O error, a directory that cannot be listed).
    Unreadable,
    /// Larger than any results.json smtlab writes.
    TooLarge,
    /// Empty.
    Empty,
    /// Not UTF-8 text.
    NotText,
    /// JSON that ends early: cut short.
    Truncated,
    /// Not JSON.
    NotJson,
    /// JSON, but not a smtlab results.json.
    NotResults,
    /// A `fleet.json` written by `smtlab merge`.
    FleetFile,
    /// Written by an older smtlab whose layout this one does not read.
    OlderSchema,
    /// Written by a newer smtlab.
    NewerSchema,
    /// Of this version, but a section `merge` needs is missing or malformed.
    Incomplete,
    /// A second results.json of a host already merged.
    Duplicate,
    /// A directory holding no results.json.
    NoResults,
    /// A directory deeper than `merge` searches, not searched.
    TooDeep,
    /// A value no study writes: an estimate outside its own interval, a confidence level
    /// outside (0, 1), an empty host name, a start in the future, ….
    Invalid,
}

impl Problem {
    pub fn label(self) -> &'static str {
        match self {
            Problem::Missing => "missing",
            Problem::Unreadable => "unreadable",
            Problem::TooLarge => "too large",
            Problem::Empty => "empty",
            Problem::NotText => "not text",
            Problem::Truncated => "truncated",
            Problem::NotJson => "not JSON",
            Problem::NotResults => "not a results.json",
            Problem::FleetFile => "a fleet.json",
            Problem::OlderSchema => "older schema",
            Problem::NewerSchema => "newer schema",
            Problem::Incomplete => "incomplete",
            Problem::Duplicate => "duplicate host",
            Problem::NoResults => "no results.json",
            Problem::TooDeep => "too deep",
            Problem::Invalid => "invalid values",
        }
    }
}

/// What makes hosts one machine type: the same answer is expected of them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TypeKey {
    /// `model name` from `/proc/cpuinfo`, spaces collapsed.
    pub cpu_model: String,
    pub packages: usize,
    /// Cores per package (online cores ÷ packages, rounded up).
    pub cores_per_package: usize,
    /// Most online threads on one core.
    pub threads_per_core: usize,
    /// `smt/control` (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`), or `on` /
    /// `no SMT` from the threads per core when the kernel has no such file.
    pub smt: String,
    /// The kernel's major version (`6` of `Linux 6.1.0-18-amd64`), or `unknown`.
    pub kernel_major: String,
    /// `bare metal`, or the hypervisor's name: a guest's siblings are what its VM
    /// configuration says, not the CPU's.
    pub platform: String,
}

impl TypeKey {
    /// `Intel Xeon Gold 6230 · 2 packages × 20 cores × 2 threads · SMT on · Linux 6 · bare metal`.
    pub fn label(&self) -> String {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        format!(
            "{} · {} × {} × {} · SMT {} · Linux {} · {}",
            self.cpu_model,
            plural(self.packages, "package"),
            plural(self.cores_per_package, "core"),
            plural(self.threads_per_core, "thread"),
            self.smt,
            self.kernel_major,
            self.platform
        )
    }
}

/// One machine type's hosts and answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineType {
    /// `type 1`, `type 2`, … in the order listed (most hosts first).
    pub id: String,
    pub key: TypeKey,
    /// The key as printed.
    pub label: String,
    /// The answer for the type in one paragraph, built from `classes`.
    pub headline: String,
    pub hosts: Vec<HostRow>,
    pub classes: Vec<ClassRow>,
    /// The Slurm form of the advice, one line per workload class that loses with HT, a small
    /// loss included (empty when none does).
    pub slurm_advice: Vec<String>,
}

/// One host of a type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRow {
    pub host: String,
    /// Where the name came from: `uname -n`, `SLURMD_NODENAME`, or `directory name`.
    pub host_from: String,
    /// The results.json it was read from.
    pub file: String,
    /// `uname -srvm` as the host reported it.
    pub kernel: String,
    pub microcode: Option<String>,
    pub smtlab_version: String,
    /// The git revision of the smtlab build that ran it (`unknown` outside a checkout);
    /// None in files that do not say.
    #[serde(default)]
    pub git_revision: Option<String>,
    pub started_unix_s: u64,
    pub status: Status,
    pub synthetic: bool,
    /// The Slurm job step it ran in, in one sentence; None outside Slurm.
    pub slurm: Option<String>,
    /// What its own results say could change its numbers (steal, busy CPUs, …).
    pub caveats: Vec<Caveat>,
}

/// Something in a host's own results that can make it differ from its type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Caveat {
    pub kind: CaveatKind,
    /// The fact, with its numbers, as the host's results state it.
    pub text: String,
}

/// Kinds of caveat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaveatKind {
    /// The hypervisor took CPU time (steal).
    Steal,
    /// Other work ran on the measured CPUs.
    BusyCpus,
    /// Some cores had no SMT sibling online.
    SmtPartlyOff,
    /// The study could use only some of the online CPUs (cgroup, affinity, Slurm).
    CpusRestricted,
    /// The study was stopped or a phase failed.
    Partial,
    /// A debug build of smtlab.
    DebugBuild,
    /// Made up by the fake engine.
    Synthetic,
    /// Microcode unlike the type's other hosts.
    Microcode,
    /// No microcode reading, where the type's other hosts have one: not a measured
    /// difference, so it explains no outlier.
    MicrocodeUnknown,
    /// Kernel release unlike the type's other hosts.
    Kernel,
    /// Answers made by older rules than this build's: recomputed from the host's stored
    /// runs, or, where they could not be read, used as stored (the text says which).
    OlderRules,
}

impl CaveatKind {
    /// Whether the caveat is a measured difference that can explain why a host stands
    /// apart (a missing reading is not one).
    pub fn measured(self) -> bool {
        !matches!(self, CaveatKind::MicrocodeUnknown | CaveatKind::OlderRules)
    }

    pub fn label(self) -> &'static str {
        match self {
            CaveatKind::Steal => "steal",
            CaveatKind::BusyCpus => "busy CPUs",
            CaveatKind::SmtPartlyOff => "SMT partly off",
            CaveatKind::CpusRestricted => "CPUs restricted",
            CaveatKind::Partial => "partial study",
            CaveatKind::DebugBuild => "debug build",
            CaveatKind::Synthetic => "synthetic",
            CaveatKind::Microcode => "different microcode",
            CaveatKind::MicrocodeUnknown => "microcode not recorded",
            CaveatKind::Kernel => "different kernel",
            CaveatKind::OlderRules => "older rules",
        }
    }
}

/// One workload class on one machine type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassRow {
    pub class: WorkloadClass,
    /// For `command`: the command the hosts ran (hosts that ran different commands get
    /// one row each).
    pub command: Option<String>,
    /// What the ratio compares.
    pub ratio: RatioKind,
    /// The type's answer, decided from `pooled` as one host's is from its interval.
    pub answer: HtAnswer,
    /// Why, with the numbers.
    pub reason: String,
    /// What the pooled interval was judged against; None when nothing was pooled.
    pub thresholds: Option<Thresholds>,
    pub pooled: Option<PooledRatio>,
    /// How many hosts gave each answer (only answers given).
    pub tally: Vec<AnswerCount>,
    /// When the hosts disagree: each firm answer with the hosts that gave it.
    #[serde(default)]
    pub groups: Vec<AnswerGroup>,
    /// When the hosts' split follows something recorded about them (microcode, kernel
    /// release, smtlab build, SMT partly off), that, in words.
    #[serde(default)]
    pub split_follows: Option<String>,
    /// Every host of the type, as its own study answered.
    pub hosts: Vec<HostAnswer>,
    /// The Slurm form of the advice for jobs of this class; None unless the type's answer
    /// is a loss (turn HT off, or a small loss).
    pub slurm: Option<String>,
}

/// How many hosts answered one way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerCount {
    pub answer: HtAnswer,
    pub hosts: usize,
}

/// Hosts of one type that gave one firm answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerGroup {
    pub answer: HtAnswer,
    pub hosts: Vec<String>,
    /// The lowest and highest of their own ratios.
    pub low: f64,
    pub high: f64,
}

/// The ratio pooled across hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledRatio {
    /// Hosts in the pool.
    pub hosts: usize,
    /// The pooled ratio (the random-effects mean of the log ratios, back-transformed).
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    /// `random effects` over two or more hosts, or `one host` (its own interval).
    pub method: String,
    /// Between-host standard deviation of the log ratio (τ); None for one host.
    pub tau: Option<f64>,
    /// I², 0–1: the share of the spread between hosts beyond their own noise; None when
    /// it cannot be computed (one host, or Q = 0).
    pub i2: Option<f64>,
    /// Cochran's Q.
    pub q: Option<f64>,
    /// Where one more host of this type's true ratio is expected to lie (k ≥ 3).
    pub predict_low: Option<f64>,
    pub predict_high: Option<f64>,
    /// Where one more host of this type is expected to *measure*, its own runs' noise
    /// included (k ≥ 3).
    #[serde(default)]
    pub predict_measured_low: Option<f64>,
    #[serde(default)]
    pub predict_measured_high: Option<f64>,
    /// The pooled interval's class against the thresholds.
    pub effect: Effect,
}

/// One host's answer for a class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostAnswer {
    pub host: String,
    /// As its own study answered.
    pub answer: HtAnswer,
    /// Its evidence; None when it had none.
    pub comparison: Option<Comparison>,
    /// Its own reason.
    pub reason: String,
    /// In the pool.
    pub pooled: bool,
    /// Its own study withheld a firm answer that its evidence alone would give (depends
    /// on the workload, held back as inconclusive, not called): it counts by its reason,
    /// never by its ratio.
    #[serde(default)]
    pub withheld: bool,
    /// Why not, when not.
    pub not_pooled: Option<String>,
    /// Set when it stands apart from the other hosts of its type.
    pub outlier: Option<Outlier>,
}

/// A host whose ratio stands apart from the pool of the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outlier {
    /// Its studentized deleted residual.
    pub residual: f64,
    /// The bound it passed (Bonferroni for the hosts tested).
    pub bound: f64,
    /// What its own results show that the other hosts' do not; empty when nothing does.
    pub explained_by: Vec<Caveat>,
    /// Left out of the pool (only when explained).
    pub excluded: bool,
}

impl Fleet {
    /// The JSON text of `fleet.json` (pretty, newline-terminated).
    pub fn to_json(&self) -> anyhow::Result<String> {
        let mut s = serde_json::to_string_pretty(self)?;
        s.push('\n');
        Ok(s)
    }
}
