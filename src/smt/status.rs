//! `smt status`: the model (one serde struct, JSON as is) and its text view, built from an
//! [`SmtState`], the journal if any, and what this process may write.

use super::journal::{self, Journal};
use super::state::{self, SmtState, Vulnerability};
use crate::cpuset::CpuSet;
use anyhow::Result;
use serde::Serialize;
use std::path::Path;

/// Everything `smt status` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SmtStatus {
    /// The root read (`/` for this machine).
    pub root: String,
    /// `smt/control`: on, off, forceoff, notsupported, notimplemented, a thread count, or
    /// None when the kernel has no such file.
    pub control: Option<String>,
    /// `smt/active`: some core has more than one thread online.
    pub active: Option<bool>,
    /// Most online threads on one core.
    pub threads_per_core: usize,
    /// The sibling sets are AMD family 15h CMT modules of two integer cores, not SMT
    /// threads: there is no SMT to switch (`cores` then lists the modules).
    pub cmt_modules: bool,
    /// Every core: its online siblings and, when the journal recorded the core, its offline
    /// ones.
    pub cores: Vec<CoreStatus>,
    pub online: CpuSet,
    /// Present but offline CPUs.
    pub offline: CpuSet,
    /// Offline CPUs whose core is not known: the kernel removes an offline CPU's topology
    /// and no journal recorded it.
    pub offline_core_unknown: CpuSet,
    /// Online CPUs without a `cpuN/online` file: they cannot be taken offline.
    pub cannot_go_offline: CpuSet,
    /// Kernel command-line words that disable SMT at boot (`nosmt`, `nosmt=force`, …).
    pub cmdline_nosmt: Vec<String>,
    /// CPU vulnerabilities whose status mentions SMT.
    pub vulnerabilities: Vec<Vulnerability>,
    /// What this process may change.
    pub privileges: Privileges,
    /// The journal of an earlier change, when one is waiting for `smt restore`.
    pub journal: Option<JournalStatus>,
    /// Where a journal could be that this user may not read (root's journal directory):
    /// `journal` is then unknown, not absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_unreadable: Option<String>,
}

/// One core.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreStatus {
    /// Index by first CPU, from 0.
    pub core: usize,
    pub online: CpuSet,
    pub offline: CpuSet,
}

/// What this process may change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Privileges {
    /// Effective user id.
    pub euid: u32,
    /// `smt/control` is writable by this process.
    pub can_write_control: bool,
    /// Every `cpuN/online` file is writable by this process.
    pub can_write_online: bool,
    /// One sentence for people.
    pub summary: String,
}

/// A journal waiting for `smt restore`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JournalStatus {
    pub path: String,
    /// The smtlab that wrote it, and whether it still runs.
    pub pid: u32,
    pub writer_running: bool,
    /// The command it journaled (`off`, `on`).
    pub command: String,
    pub written_unix_s: u64,
    /// Written during an earlier boot: describes nothing current.
    pub earlier_boot: bool,
    /// The state `restore` puts back.
    pub online: CpuSet,
    pub control: Option<String>,
}

/// Reads the status under `root`.
pub fn read(root: &Path) -> Result<SmtStatus> {
    let st = state::read(root)?;
    let found = journal::find(root, journal::OnInvalid::Report)?;
    let dir = state::cpu_dir(root);
    let can = |rel: &str| writable(&dir.join(rel));
    let can_write_control = st.control.is_some() && can("smt/control");
    let can_write_online =
        !st.switchable.is_empty() && st.switchable.iter().all(|c| can(&format!("cpu{c}/online")));
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    let boot = state::boot_id(root);
    let unreadable = journal::unreadable(root).map(|p| p.display().to_string());
    let mut status = build(
        root,
        &st,
        found.map(|f| (f.path.display().to_string(), f.journal)),
        euid,
        can_write_control,
        can_write_online,
        boot,
    );
    if status.journal.is_none() {
        status.journal_unreadable = unreadable;
    }
    Ok(status)
}

fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() on a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The status from its parts (pure).
pub fn build(
    root: &Path,
    st: &SmtState,
    journal: Option<(String, Journal)>,
    euid: u32,
    can_write_control: bool,
    can_write_online: bool,
    boot_id: Option<String>,
) -> SmtStatus {
    let offline = st.offline();
    // Cores: the journal's map places offline siblings; current cores fill the rest.
    let mut cores: Vec<(CpuSet, CpuSet)> = Vec::new();
    let mut placed = CpuSet::new();
    if let Some((_, j)) = &journal {
        for c in &j.cores {
            let on = c.intersection(&st.online);
            let off = c.intersection(&offline);
            if on.is_empty() && off.is_empty() {
                continue;
            }
            placed = placed.union(&on).union(&off);
            cores.push((on, off));
        }
    }
    for c in &st.cores {
        let rest = c.difference(&placed);
        if !rest.is_empty() {
            placed = placed.union(&rest);
            cores.push((rest, CpuSet::new()));
        }
    }
    cores.sort_by_key(|(on, off)| on.union(off).first());
    let control = st.control.as_deref();
    let may_switch = match control {
        Some("on" | "off") => can_write_control,
        _ => can_write_online,
    };
    let who = if euid == 0 {
        "root".to_string()
    } else {
        format!("user {euid}, not root")
    };
    let summary = match (control, may_switch) {
        _ if st.cmt_modules => format!(
            "{who}; nothing to switch: no SMT (the sibling pairs are CMT modules of two \
             integer cores)"
        ),
        (Some("notsupported"), _) if st.threads_per_core() == 1 && offline.is_empty() => {
            format!("{who}; nothing to switch: SMT is not supported here")
        }
        (Some("forceoff"), _) => format!(
            "{who}; SMT was forced off at boot (nosmt=force): only a reboot without it turns \
             it back on"
        ),
        (_, true) => format!("{who}: may switch SMT (smtlab smt off | on | restore)"),
        (_, false) if euid == 0 => {
            "root, but the SMT files are not writable here (a read-only sysfs?)".to_string()
        }
        (_, false) => {
            format!("{who}: may read only; switching SMT needs root (exit code 4)")
        }
    };
    let journal = journal.map(|(path, j)| JournalStatus {
        path,
        pid: j.pid,
        writer_running: j.pid != std::process::id()
            && crate::tempstate::process_exists(j.pid as i32),
        command: j.command.clone(),
        written_unix_s: j.written_unix_s,
        earlier_boot: j.boot_id != boot_id,
        online: j.online.clone(),
        control: j.control.clone(),
    });
    SmtStatus {
        root: root.display().to_string(),
        control: st.control.clone(),
        active: st.active,
        threads_per_core: if st.cmt_modules {
            1
        } else {
            st.threads_per_core()
        },
        cmt_modules: st.cmt_modules,
        cores: cores
            .into_iter()
            .enumerate()
            .map(|(i, (online, offline))| CoreStatus {
                core: i,
                online,
                offline,
            })
            .collect(),
        online: st.online.clone(),
        offline_core_unknown: offline.difference(&placed),
        offline,
        cannot_go_offline: st.online.difference(&st.switchable),
        cmdline_nosmt: st.cmdline_nosmt.clone(),
        vulnerabilities: st.vulnerabilities.clone(),
        privileges: Privileges {
            euid,
            can_write_control,
            can_write_online,
            summary,
        },
        journal,
        journal_unreadable: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    fn smt_off_state() -> SmtState {
        SmtState {
            control: Some("off".into()),
            active: Some(false),
            present: set("0-3"),
            online: set("0,2"),
            switchable: set("1-3"),
            cores: vec![set("0"), set("2")],
            cmdline_nosmt: vec![],
            vulnerabilities: vec![Vulnerability {
                name: "mds".into(),
                status: "Mitigation: Clear CPU buffers; SMT disabled".into(),
            }],
            cmt_modules: false,
        }
    }

    #[test]
    fn journal_places_offline_siblings_in_their_cores() {
        let j = Journal {
            control: Some("on".into()),
            online: set("0-3"),
            cores: vec![set("0-1"), set("2-3")],
            ..Journal::for_test()
        };
        let s = build(
            Path::new("/"),
            &smt_off_state(),
            Some(("/run/smtlab/smt-journal.json".into(), j)),
            0,
            true,
            true,
            None,
        );
        assert_eq!(s.cores.len(), 2);
        assert_eq!(s.cores[0].online, set("0"));
        assert_eq!(s.cores[0].offline, set("1"));
        assert_eq!(s.cores[1].offline, set("3"));
        assert!(s.offline_core_unknown.is_empty());
        assert_eq!(s.cannot_go_offline, set("0"));
        let text = super::super::view::status_text(&s);
        insta::assert_snapshot!(text);
        assert!(text.contains("online 0, offline 1"), "{text}");
        assert!(text.contains("puts back online 0-3"), "{text}");
        assert!(text.contains("mds"), "{text}");
    }

    #[test]
    fn without_a_journal_offline_cpus_have_no_core() {
        let s = build(
            Path::new("/"),
            &smt_off_state(),
            None,
            1000,
            false,
            false,
            None,
        );
        assert_eq!(s.offline_core_unknown, set("1,3"));
        assert!(
            s.privileges.summary.contains("needs root"),
            "{:?}",
            s.privileges
        );
        assert!(super::super::view::status_text(&s).contains("not known"));
    }
}
