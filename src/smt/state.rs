//! What the kernel says about SMT under a sysfs/procfs root: `smt/control` and `smt/active`,
//! which CPUs are present and online, which can be offlined (have a `cpuN/online` file),
//! the cores of the online CPUs, `nosmt` on the kernel command line, and the CPU
//! vulnerabilities whose mitigation depends on SMT. Reading only; the parsing is pure.
//!
//! Files: Documentation/ABI/testing/sysfs-devices-system-cpu (`smt/control`: on, off,
//! forceoff, notsupported, notimplemented, or a thread count on newer kernels; `smt/active`;
//! `cpuN/online`), Documentation/admin-guide/kernel-parameters.txt (`nosmt`, `nosmt=force`,
//! `smt=`, and the `…,nosmt` forms of `l1tf=`, `mds=`, `tsx_async_abort=`,
//! `mmio_stale_data=`, `retbleed=`), Documentation/admin-guide/hw-vuln/.

use crate::cpuset::CpuSet;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The sysfs CPU directory under a root.
pub fn cpu_dir(root: &Path) -> PathBuf {
    root.join("sys/devices/system/cpu")
}

/// Everything `smt status` and the planners need, read at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmtState {
    /// `smt/control` as the kernel wrote it; None when the file is missing (kernels before
    /// 4.18, or architectures without the control).
    pub control: Option<String>,
    /// `smt/active`: at least one core has more than one thread online.
    pub active: Option<bool>,
    /// Present CPUs (the `present` list, else every `cpuN` directory).
    pub present: CpuSet,
    /// Online CPUs.
    pub online: CpuSet,
    /// CPUs with a `cpuN/online` file: only these can be taken offline or brought back
    /// (x86 often has none for CPU 0).
    pub switchable: CpuSet,
    /// Cores as sets of online sibling CPUs, by first CPU. The kernel removes an offline
    /// CPU's `topology/` directory, so offline siblings belong to no core here.
    pub cores: Vec<CpuSet>,
    /// Kernel command-line words that turn SMT off at boot (`nosmt`, `nosmt=force`,
    /// `smt=1`, `mds=full,nosmt`, …).
    pub cmdline_nosmt: Vec<String>,
    /// CPU vulnerabilities whose status text mentions SMT.
    pub vulnerabilities: Vec<Vulnerability>,
    /// `/proc/cpuinfo` names an AMD family 15h CPU: the sibling sets in `cores` are CMT
    /// modules, two integer cores each, not SMT threads
    /// ([`crate::topology::CMT_MODULES`]).
    #[serde(default)]
    pub cmt_modules: bool,
}

/// One file of `/sys/devices/system/cpu/vulnerabilities/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vulnerability {
    /// File name: `mds`, `l1tf`, `mmio_stale_data`, …
    pub name: String,
    /// Its one line, e.g. `Mitigation: Clear CPU buffers; SMT vulnerable`.
    pub status: String,
}

impl SmtState {
    /// Largest number of online threads on one core (the kernel's sibling sets; CMT
    /// modules count as cores here, see [`SmtState::smt_cores`]).
    pub fn threads_per_core(&self) -> usize {
        self.cores.iter().map(CpuSet::len).max().unwrap_or(1)
    }

    /// The cores as SMT sees them: the kernel's sibling sets, or every CPU alone when those
    /// are CMT modules.
    pub fn smt_cores(&self) -> Vec<CpuSet> {
        if self.cmt_modules {
            self.online.iter().map(|c| CpuSet::from_cpus([c])).collect()
        } else {
            self.cores.clone()
        }
    }

    /// The kernel's sibling sets of more than one CPU, when they are CMT modules.
    pub fn modules(&self) -> Vec<&CpuSet> {
        if self.cmt_modules {
            self.cores.iter().filter(|c| c.len() > 1).collect()
        } else {
            Vec::new()
        }
    }

    /// Present CPUs that are offline.
    pub fn offline(&self) -> CpuSet {
        self.present.difference(&self.online)
    }

    /// True when `smt/control` can switch SMT on this kernel (`on`, `off` or a count).
    pub fn control_switches(&self) -> bool {
        matches!(self.control.as_deref(), Some("on" | "off"))
            || self
                .control
                .as_deref()
                .is_some_and(|c| c.parse::<u32>().is_ok())
    }
}

/// Reads the SMT state under `root` (`/` for this machine).
pub fn read(root: &Path) -> Result<SmtState> {
    let dir = cpu_dir(root);
    if !dir.is_dir() {
        return Err(crate::error::BadInput(format!(
            "`{}` has no sys/devices/system/cpu directory: not a sysfs root (expected `/` or a copy of one)",
            root.display()
        ))
        .into());
    }
    let text = |rel: &str| crate::fsutil::read_kernel_text(dir.join(rel)).ok();
    let list = |rel: &str| -> Result<Option<CpuSet>> {
        match text(rel) {
            None => Ok(None),
            Some(t) => CpuSet::parse_list(t.trim())
                .map(Some)
                .with_context(|| format!("reading `{}`", dir.join(rel).display())),
        }
    };
    let mut dirs = CpuSet::new();
    let mut switchable = CpuSet::new();
    for e in std::fs::read_dir(&dir)
        .with_context(|| format!("listing `{}`", dir.display()))?
        .flatten()
    {
        let name = e.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&n| n < crate::cpuset::MAX_CPUS)
        else {
            continue;
        };
        dirs.insert(n);
        if e.path().join("online").is_file() {
            switchable.insert(n);
        }
    }
    let present = list("present")?.unwrap_or_else(|| dirs.clone());
    let online = match list("online")? {
        Some(o) => o,
        // Without the top-level list: each CPU's own file, absent on CPUs that cannot go
        // offline (so online).
        None => dirs
            .iter()
            .filter(|&c| text(&format!("cpu{c}/online")).is_none_or(|t| t.trim() != "0"))
            .collect(),
    };
    let cores = read_cores(&dir, &online)?;
    let cmdline = crate::fsutil::read_kernel_text(root.join("proc/cmdline")).unwrap_or_default();
    let mut vulnerabilities = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir.join("vulnerabilities")) {
        for e in rd.flatten() {
            if let Ok(t) = crate::fsutil::read_kernel_text(e.path()) {
                let v = Vulnerability {
                    name: e.file_name().to_string_lossy().into_owned(),
                    status: t.trim().to_string(),
                };
                if mentions_smt(&v.status) {
                    vulnerabilities.push(v);
                }
            }
        }
    }
    vulnerabilities.sort_by(|a, b| a.name.cmp(&b.name));
    let control = text("smt/control").map(|t| t.trim().to_string());
    if control.as_deref() == Some("") {
        // The kernel writes one word or a number there (sysfs-devices-system-cpu); an
        // empty read is a FIFO or an empty file standing in for it.
        return Err(crate::error::BadInput(format!(
            "`{}` is empty (a FIFO or an empty file?): not the kernel's smt/control, which \
             holds on, off, forceoff, notsupported, notimplemented or a number of threads \
             per core",
            dir.join("smt/control").display()
        ))
        .into());
    }
    Ok(SmtState {
        control,
        active: text("smt/active").and_then(|t| match t.trim() {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        }),
        present,
        online,
        switchable,
        cores,
        cmdline_nosmt: nosmt_words(&cmdline),
        vulnerabilities,
        cmt_modules: crate::fsutil::read_kernel_text(root.join("proc/cpuinfo"))
            .is_ok_and(|t| crate::topology::is_cmt_cpuinfo(&t)),
    })
}

/// The cores of the online CPUs from each CPU's `topology/thread_siblings_list` (or the
/// newer `core_cpus_list`), limited to online CPUs; a CPU without topology files is a core
/// of its own.
fn read_cores(dir: &Path, online: &CpuSet) -> Result<Vec<CpuSet>> {
    let mut cores: Vec<CpuSet> = Vec::new();
    let mut seen = CpuSet::new();
    for cpu in online.iter() {
        if seen.contains(cpu) {
            continue;
        }
        let topo = dir.join(format!("cpu{cpu}/topology"));
        let text = crate::fsutil::read_kernel_text(topo.join("core_cpus_list"))
            .or_else(|_| crate::fsutil::read_kernel_text(topo.join("thread_siblings_list")))
            .ok();
        let mut core = match text {
            Some(t) => CpuSet::parse_list(t.trim())
                .with_context(|| format!("reading the siblings of cpu{cpu}"))?
                .intersection(online),
            None => CpuSet::new(),
        };
        core.insert(cpu);
        // Siblings already placed in another core (inconsistent files): keep them there.
        core = core.difference(&seen);
        seen = seen.union(&core);
        cores.push(core);
    }
    cores.sort_by_key(|c| c.first());
    Ok(cores)
}

/// True when a vulnerability status depends on SMT (`SMT vulnerable`, `SMT disabled`,
/// `SMT Host state unknown`, `SMT mitigated`, `STIBP: …` does not count).
pub fn mentions_smt(status: &str) -> bool {
    status
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| w == "SMT")
}

/// Kernel command-line words that turn SMT off at boot: `nosmt`, `nosmt=force`, `smt=N`,
/// and any `name=…,nosmt` mitigation option.
pub fn nosmt_words(cmdline: &str) -> Vec<String> {
    cmdline
        .split_whitespace()
        // Words after a bare `--` go to init, not to the kernel.
        .take_while(|w| *w != "--")
        .filter(|w| {
            *w == "nosmt"
                || w.starts_with("nosmt=")
                || w.starts_with("smt=")
                || w.split_once('=')
                    .is_some_and(|(_, v)| v.split(',').any(|o| o == "nosmt"))
        })
        .map(str::to_string)
        .collect()
}

/// The kernel's boot id (`/proc/sys/kernel/random/boot_id`), to tell a journal from an
/// earlier boot; None where the root has none (a copied tree).
pub fn boot_id(root: &Path) -> Option<String> {
    crate::fsutil::read_kernel_text(root.join("proc/sys/kernel/random/boot_id"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smt_mentions_are_words() {
        assert!(mentions_smt(
            "Mitigation: Clear CPU buffers; SMT vulnerable"
        ));
        assert!(mentions_smt("Mitigation: PTE Inversion; VMX: SMT disabled"));
        assert!(mentions_smt(
            "Mitigation: Clear CPU buffers; SMT Host state unknown"
        ));
        assert!(!mentions_smt("Not affected"));
        assert!(!mentions_smt("Mitigation: Retpolines; STIBP: disabled"));
        assert!(!mentions_smt("SMTP"));
    }

    #[test]
    fn nosmt_words_on_the_command_line() {
        let c = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 mds=full,nosmt quiet nosmt=force \
                 mitigations=auto smt=1 -- nosmt";
        assert_eq!(nosmt_words(c), ["mds=full,nosmt", "nosmt=force", "smt=1"]);
        assert_eq!(nosmt_words("nosmt"), ["nosmt"]);
        assert!(nosmt_words("mitigations=auto,nosmtx quiet").is_empty());
    }
}
