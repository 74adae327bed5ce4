//! One host as `merge` sees it: its name, its machine type, its answers as its own study
//! gave them, and what its own results say could have disturbed it. Pure.

use super::input::{HostFile, Loaded};
use super::model::{Caveat, CaveatKind, HostRow, TypeKey};
use crate::report::{Answer, Status};
use std::path::Path;

/// A host ready to be grouped.
#[derive(Debug, Clone)]
pub struct Host {
    pub row: HostRow,
    pub key: TypeKey,
    /// Its answer table, as stored.
    pub answers: Vec<Answer>,
    /// The command its compare phase ran, as shell words; None when it ran none.
    pub command: Option<String>,
}

/// The name a host goes by: `uname -n` from its report, else the node Slurm named, else
/// the directory its results.json sits in (the Slurm and Ansible recipes name it after the
/// host), else the file's name.
fn name(f: &HostFile, path: &Path) -> (String, &'static str) {
    if let Some(h) = f.machine.as_ref().and_then(|m| m.hostname.clone()) {
        return (h, "uname -n");
    }
    if let Some(n) = f.slurm.as_ref().and_then(|j| j.node.clone()) {
        return (n, "SLURMD_NODENAME");
    }
    let dir = path
        .parent()
        .and_then(|p| p.file_name())
        .map(|d| d.to_string_lossy().into_owned());
    match dir {
        Some(d)
            if path
                .file_name()
                .is_some_and(|n| n == super::input::RESULTS_NAME) =>
        {
            (d, "directory name")
        }
        _ => (path.display().to_string(), "file name"),
    }
}

/// The kernel's major version from `uname -srvm` text (`Linux 6.1.0-18-amd64 …` → `6`).
pub fn kernel_major(kernel: &str) -> String {
    kernel
        .split_whitespace()
        .nth(1)
        .and_then(|rel| rel.split('.').next())
        .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()))
        .map_or_else(|| "unknown".to_string(), str::to_string)
}

/// The kernel release (`6.1.0-18-amd64`), or the whole text when it has no second word.
pub fn kernel_release(kernel: &str) -> String {
    kernel
        .split_whitespace()
        .nth(1)
        .unwrap_or(kernel)
        .to_string()
}

/// Marks the start of [`crate::hygiene::warnings`]' busy-CPU warning.
const BUSY_NOTE: &str = "other work was running on CPU";
/// Marks the start of [`crate::hygiene::warnings`]' and [`crate::hygiene::steal_note`]'s
/// steal warnings.
const STEAL_NOTE: &str = "the hypervisor took";

/// What the host's own results say could change its numbers: steal in its yield runs or
/// before the study, other work on its CPUs, cores without a sibling online, CPUs kept from
/// the study, a stopped study, a debug build, made-up numbers. (Microcode and kernel
/// differences are relative to the type and are added when the type is built.)
fn own_caveats(f: &HostFile, m: &crate::report::MachineInfo) -> Vec<Caveat> {
    let mut v = Vec::new();
    let mut add = |kind, text: String| v.push(Caveat { kind, text });
    if let Some(t) = &f.older_rules {
        add(CaveatKind::OlderRules, t.clone());
    }
    let steal = f
        .smt_yield
        .iter()
        .flat_map(|y| &y.result.workloads)
        .flat_map(|w| &w.runs)
        .filter_map(|r| r.steal_share)
        .filter(|s| s.is_finite())
        .fold(None, |acc: Option<f64>, s| {
            Some(acc.map_or(s, |a| a.max(s)))
        });
    if let Some(s) = steal.filter(|s| *s > crate::hygiene::STEAL_WARN) {
        add(
            CaveatKind::Steal,
            format!(
                "the hypervisor took up to {:.0} % of the measured CPUs' time during the yield runs (steal)",
                s * 100.0
            ),
        );
    }
    for n in &f.notes {
        if n.starts_with(STEAL_NOTE) && steal.is_none_or(|s| s <= crate::hygiene::STEAL_WARN) {
            add(CaveatKind::Steal, n.clone());
        } else if n.starts_with(BUSY_NOTE) {
            add(CaveatKind::BusyCpus, n.clone());
        }
    }
    let external = f
        .neighbors
        .iter()
        .flat_map(|n| &n.series)
        .filter_map(|s| s.steps.first())
        .find(|st| st.diagnosis.as_deref() == Some("external-load"));
    if let Some(st) = external {
        add(
            CaveatKind::BusyCpus,
            format!(
                "neighbors: its workers waited for a CPU with no burner running (external load){}",
                st.reason
                    .as_deref()
                    .map_or(String::new(), |r| format!(": {r}"))
            ),
        );
    }
    if let Some(smt) = &f.smt
        && smt.threads_per_core > 1
        && smt.cores_with_siblings < m.cores
    {
        add(
            CaveatKind::SmtPartlyOff,
            format!(
                "only {} of {} cores had an SMT sibling online",
                smt.cores_with_siblings, m.cores
            ),
        );
    }
    let usable = m
        .usable_cpus
        .parse::<crate::cpuset::CpuSet>()
        .map(|s| s.len())
        .ok();
    if let Some(u) = usable
        && u < m.online_cpus
    {
        let by = match &f.slurm {
            Some(j) => format!("Slurm {}", j.sentence()),
            None => "a cgroup or affinity mask".into(),
        };
        add(
            CaveatKind::CpusRestricted,
            format!(
                "the study could use CPUs {} ({u} of {} online), kept to them by {by}",
                m.usable_cpus, m.online_cpus
            ),
        );
    }
    if f.status == Some(Status::Partial) {
        let why = f
            .phases
            .iter()
            .filter(|p| p.status == crate::report::PhaseStatus::Failed)
            .map(|p| format!("{} failed", p.phase))
            .collect::<Vec<_>>();
        add(
            CaveatKind::Partial,
            if why.is_empty() {
                "the study was stopped before it finished (partial)".into()
            } else {
                format!("the study is partial: {}", why.join(", "))
            },
        );
    }
    if let Some(p) = &f.provenance
        && p.build_profile == "debug"
    {
        add(
            CaveatKind::DebugBuild,
            "a debug build of smtlab ran it: unoptimised code measures the wrong thing".into(),
        );
    }
    if f.synthetic == Some(true) {
        add(
            CaveatKind::Synthetic,
            "synthetic: made up by the fake engine, nothing measured".into(),
        );
    }
    v
}

/// The host's machine type.
fn key(f: &HostFile, m: &crate::report::MachineInfo) -> TypeKey {
    let smt = f.smt.as_ref();
    let threads = smt.map_or(1, |s| s.threads_per_core.max(1));
    let state = smt
        .and_then(|s| s.control.clone())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| {
            if threads > 1 {
                "on".into()
            } else {
                "no SMT".into()
            }
        });
    let packages = m.packages.max(1);
    TypeKey {
        cpu_model: m.cpu_model.split_whitespace().collect::<Vec<_>>().join(" "),
        packages,
        cores_per_package: m.cores.div_ceil(packages),
        threads_per_core: threads,
        smt: state,
        kernel_major: kernel_major(&m.kernel),
        platform: if m.hypervisor == "none" {
            "bare metal".into()
        } else {
            format!("VM ({})", m.hypervisor)
        },
    }
}

impl Host {
    /// The host a checked [`Loaded`] file describes (its sections are present: see
    /// `input::decode`).
    pub fn from_loaded(l: Loaded) -> Host {
        let f = l.file;
        let m = f.machine.clone().expect("decode checked `machine`");
        let p = f.provenance.clone().expect("decode checked `provenance`");
        let (host, host_from) = name(&f, &l.path);
        let caveats = own_caveats(&f, &m);
        let key = key(&f, &m);
        let command = f
            .compare
            .as_ref()
            .map(|c| crate::experiments::compare::view::shell_words(&c.result.command))
            .filter(|c| !c.is_empty());
        Host {
            row: HostRow {
                host,
                host_from: host_from.into(),
                file: l.path.display().to_string(),
                kernel: m.kernel.clone(),
                microcode: m.microcode.clone(),
                smtlab_version: p.smtlab_version.clone(),
                git_revision: Some(p.git_revision.clone()),
                started_unix_s: p.started_unix_s,
                status: f.status.unwrap_or(Status::Complete),
                synthetic: f.synthetic.unwrap_or(false),
                slurm: f.slurm.as_ref().map(|j| j.sentence()),
                caveats,
            },
            key,
            answers: f.verdict.map(|v| v.answers).unwrap_or_default(),
            command,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_are_read_from_uname_text() {
        assert_eq!(kernel_major("Linux 6.1.0-18-amd64 #1 SMP x86_64"), "6");
        assert_eq!(kernel_major("Linux 5.10.0 #1"), "5");
        assert_eq!(kernel_major("unknown (read from a dump)"), "unknown");
        assert_eq!(kernel_major("unknown"), "unknown");
        assert_eq!(kernel_release("Linux 6.1.0-18-amd64 #1"), "6.1.0-18-amd64");
    }

    #[test]
    fn the_hygiene_warnings_are_recognised_by_their_openings() {
        // If hygiene's wording changes, this fails instead of merge silently missing them.
        let loads = [crate::hygiene::CpuLoad {
            cpu: 0,
            busy: 0.5,
            steal: 0.2,
        }];
        let w = crate::hygiene::warnings(&loads, std::time::Duration::from_millis(250));
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with(BUSY_NOTE), "{}", w[0]);
        assert!(w[1].starts_with(STEAL_NOTE), "{}", w[1]);
        let s = crate::hygiene::steal_note("runs", [Some(0.5)]).unwrap();
        assert!(s.starts_with(STEAL_NOTE), "{s}");
    }
}
