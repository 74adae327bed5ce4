//! The journal: the SMT state before smtlab changed it, written before the first write to
//! sysfs, so that `smt restore` can put it back even after the changing process was
//! SIGKILLed or its terminal closed.
//!
//! One file per root, `smt-journal.json`, replaced atomically (written to a temporary file,
//! flushed, renamed over the old one, directory flushed: rename(2) is atomic, so a reader
//! sees the old file or the new one, never half of one). For this machine it lives in
//! `/run/smtlab/` (a tmpfs emptied at boot, like the state it describes), or in
//! `$XDG_RUNTIME_DIR/smtlab/` when `/run` is not writable; for a copied tree given with
//! `--sysfs-root`, in that tree's `run/smtlab/`. The oldest state wins: a second change
//! keeps the first journal, so `restore` goes back to how the machine was before smtlab
//! first touched it.

use super::state::SmtState;
use crate::cpuset::CpuSet;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Bumped when the journal's layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

/// The journal's file name.
pub const FILE: &str = "smt-journal.json";

/// The state to go back to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub schema_version: u32,
    /// The root the state was read under (`/` for this machine).
    pub root: String,
    /// The kernel's boot id then; a journal from an earlier boot describes nothing current.
    pub boot_id: Option<String>,
    /// The smtlab process that wrote it.
    pub pid: u32,
    /// When, seconds since the Unix epoch.
    pub written_unix_s: u64,
    /// The command that was about to change the state (`off`, `on`).
    pub command: String,
    /// `smt/control` before the change.
    pub control: Option<String>,
    /// Online CPUs before the change.
    pub online: CpuSet,
    /// Cores (online sibling sets) before the change: the only record of which offline CPU
    /// belongs to which core, since the kernel hides an offline CPU's topology.
    pub cores: Vec<CpuSet>,
}

impl Journal {
    /// The journal for `state`, about to be changed by `command`.
    pub fn new(root: &Path, state: &SmtState, command: &str) -> Self {
        Journal {
            schema_version: SCHEMA_VERSION,
            root: root.display().to_string(),
            boot_id: super::state::boot_id(root),
            pid: std::process::id(),
            written_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            command: command.into(),
            control: state.control.clone(),
            online: state.online.clone(),
            cores: state.cores.clone(),
        }
    }

    #[cfg(test)]
    pub fn for_test() -> Self {
        Journal {
            schema_version: SCHEMA_VERSION,
            root: "/".into(),
            boot_id: None,
            pid: 1,
            written_unix_s: 0,
            command: "off".into(),
            control: None,
            online: CpuSet::new(),
            cores: Vec::new(),
        }
    }
}

/// Where the journal directory is: pure, from the facts that decide it.
/// `live`: the root is this machine; `run_writable`: `/run` (or `/run/smtlab`) can be
/// written by this process; `xdg`: `$XDG_RUNTIME_DIR`.
pub fn dir_for(root: &Path, live: bool, run_writable: bool, xdg: Option<&Path>) -> PathBuf {
    if !live {
        return root.join("run/smtlab");
    }
    match xdg {
        Some(x) if !run_writable && x.is_absolute() => x.join("smtlab"),
        _ => PathBuf::from("/run/smtlab"),
    }
}

/// The directories to look in for this root's journal, most likely first.
pub fn candidates(root: &Path) -> Vec<PathBuf> {
    let live = is_live(root);
    let xdg = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let mut v = vec![dir_for(root, live, true, xdg.as_deref())];
    let other = dir_for(root, live, false, xdg.as_deref());
    if other != v[0] {
        v.push(other);
    }
    v
}

/// The directory a new journal goes to.
pub fn dir_to_write(root: &Path) -> PathBuf {
    let live = is_live(root);
    let run_ok = writable(Path::new("/run/smtlab")) || writable(Path::new("/run"));
    let xdg = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    dir_for(root, live, run_ok, xdg.as_deref())
}

fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() on a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// True when `root` is this machine's `/`.
pub fn is_live(root: &Path) -> bool {
    matches!((root.canonicalize(), Path::new("/").canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// A journal found on disk.
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub journal: Journal,
}

/// What to do with a journal that fails its checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnInvalid {
    /// Only say so (`smt status`: reading changes nothing).
    Report,
    /// Rename it aside ([`crate::fsutil::keep_aside`]) and say where it is, so that it is
    /// neither applied nor lost, and the next change is not blocked (`off`, `on`,
    /// `restore`).
    KeepAside,
}

/// The journal for `root`, if one exists, checked against the machine under `root`
/// ([`check`]). A journal that cannot be read, does not parse or fails a check is an
/// error (exit 2) naming it and why; it is never applied, never overwritten and never
/// deleted: with [`OnInvalid::KeepAside`] it is renamed aside with a timestamp.
pub fn find(root: &Path, on_invalid: OnInvalid) -> Result<Option<Found>> {
    for dir in candidates(root) {
        let path = dir.join(FILE);
        // Root's journal directory (0700) as another user: not this user's to read. `smt
        // status` goes on without it; a change needs root anyway.
        if denied(&path) {
            if on_invalid == OnInvalid::Report {
                continue;
            }
            return Err(crate::error::NeedsPrivilege(format!(
                "the SMT journal `{}` can be read only by its owner (root): run as root \
                 (sudo smtlab smt …)",
                path.display()
            ))
            .into());
        }
        let why = match crate::fsutil::read_input_text(&path, crate::limits::MAX_JOURNAL_BYTES) {
            Err(crate::fsutil::InputError::Missing) => continue,
            Err(crate::fsutil::InputError::Interrupted) => {
                return Err(crate::error::Interrupted.into());
            }
            Err(e) => e.to_string(),
            // The root's own errors are the root's, not the journal's.
            Ok(text) => match parse_checked(&text, &super::state::read(root)?) {
                Ok(journal) => return Ok(Some(Found { path, journal })),
                Err(why) => why,
            },
        };
        return Err(invalid(&path, &why, on_invalid));
    }
    Ok(None)
}

/// The first place a journal for `root` could be that this user may not read (root's
/// 0700 journal directory, seen by another user), if any.
pub fn unreadable(root: &Path) -> Option<PathBuf> {
    candidates(root)
        .into_iter()
        .map(|d| d.join(FILE))
        .find(|p| denied(p))
}

/// True when this user may not read what is at `path` (or look into its directory).
/// Never opens it: a FIFO there would block the open.
fn denied(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    match std::fs::metadata(path) {
        Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
        Ok(m) if m.is_file() => std::ffi::CString::new(path.as_os_str().as_bytes())
            // SAFETY: access() on a valid NUL-terminated path.
            .is_ok_and(|c| unsafe { libc::access(c.as_ptr(), libc::R_OK) } != 0),
        Ok(_) => false,
    }
}

/// The journal in `text`, checked against the machine's state `st` ([`check`]), or why it
/// is not one to act on (a sentence that follows "the SMT journal `PATH`").
pub fn parse_checked(text: &str, st: &super::state::SmtState) -> Result<Journal, String> {
    parse(text).and_then(|j| check(&j, st).map(|()| j))
}

/// The journal in `text`, or why it is not one this smtlab wrote.
fn parse(text: &str) -> Result<Journal, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("is not JSON ({e})"))?;
    match v.get("schema_version") {
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
        Some(other) => {
            return Err(format!(
                "has schema version {other}, and this smtlab reads {SCHEMA_VERSION}"
            ));
        }
        None => return Err("has no schema_version".into()),
    }
    serde_json::from_value(v).map_err(|e| format!("is not one smtlab wrote ({e})"))
}

/// The values `smt/control` takes (Documentation/ABI/testing/sysfs-devices-system-cpu):
/// these words, or a number of threads per core on kernels that offer SMT-N.
pub const CONTROL_VALUES: &[&str] = &["on", "off", "forceoff", "notsupported", "notimplemented"];

/// Checks a journal as strictly as sysfs input before anything acts on it, against the
/// machine's state `st` under the same root: its online set is not empty, names only
/// present CPUs, and holds every present CPU without an `online` file (those cannot go
/// offline, so they were online when it was written; x86 has one, CPU 0); each core is a
/// non-empty set of its online CPUs, disjoint from the others; `control` is a value the
/// kernel writes; `command` is `off` or `on`.
pub fn check(j: &Journal, st: &super::state::SmtState) -> Result<(), String> {
    if j.online.is_empty() {
        return Err("names no online CPU, and the kernel always keeps at least one online".into());
    }
    let absent = j.online.difference(&st.present);
    if !absent.is_empty() {
        return Err(format!(
            "names CPUs {absent} online, which are not present here (present: {})",
            st.present
        ));
    }
    let fixed = st.present.difference(&st.switchable);
    let missing = fixed.difference(&j.online);
    if !missing.is_empty() {
        let cpus: Vec<String> = missing.iter().map(|c| format!("cpu{c}")).collect();
        return Err(format!(
            "records {} offline, which cannot go offline here (no online file)",
            cpus.join(", ")
        ));
    }
    let mut seen = CpuSet::new();
    for core in &j.cores {
        if core.is_empty() || !core.is_subset(&j.online) || seen.intersects(core) {
            return Err(format!(
                "has a core {{{core}}} that is not a set of its online CPUs {} apart from the \
                 other cores",
                j.online
            ));
        }
        seen = seen.union(core);
    }
    if let Some(c) = &j.control
        && !CONTROL_VALUES.contains(&c.as_str())
        && !c.parse::<u32>().is_ok_and(|n| n >= 1)
    {
        return Err(format!(
            "has smt/control `{}`, which the kernel never writes (it writes {} or a thread \
             count)",
            crate::quote::shorten(c),
            CONTROL_VALUES.join(", ")
        ));
    }
    if !matches!(j.command.as_str(), "off" | "on") {
        return Err(format!(
            "was written before `smt {}`, which is no change smtlab makes (off, on)",
            crate::quote::shorten(&j.command)
        ));
    }
    Ok(())
}

/// The error for a journal at `path` that failed (`why`), after keeping it aside if asked.
fn invalid(path: &Path, why: &str, on_invalid: OnInvalid) -> anyhow::Error {
    let by_hand = "put the CPUs back by hand if needed (echo 1 > \
                   /sys/devices/system/cpu/cpuN/online)";
    let what = format!("the SMT journal `{}` {why}", path.display());
    let msg = match on_invalid {
        OnInvalid::Report => format!(
            "{what}; nothing was done: look at it, {by_hand}, and remove it, or let `smt \
             restore` set it aside"
        ),
        OnInvalid::KeepAside => match crate::fsutil::keep_aside(path) {
            Ok(kept) => format!(
                "{what}; it was not applied and is kept as `{}`: look at it, {by_hand}, then \
                 remove it",
                kept.display()
            ),
            Err(e) => format!(
                "{what}; it was not applied, and setting it aside failed ({e}): look at it, \
                 {by_hand}, then remove it"
            ),
        },
    };
    crate::error::BadInput(msg).into()
}

/// Writes `journal` atomically into `dir` (created with mode 0700 when missing) and
/// returns its path.
pub fn write(dir: &Path, journal: &Journal) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating the journal directory `{}`", dir.display()))?;
    let path = dir.join(FILE);
    let body = serde_json::to_string_pretty(journal)? + "\n";
    crate::fsutil::replace(&path, body.as_bytes())
        .with_context(|| format!("writing the SMT journal `{}`", path.display()))?;
    Ok(path)
}

/// Removes the journal at `path`.
pub fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(anyhow::Error::new(e))
            .with_context(|| format!("removing the SMT journal `{}`", path.display())),
    }
}

/// An exclusive lock on the journal directory for one change, so two smtlab processes do not
/// switch the same CPUs at once. Released when dropped, or by the kernel when the process
/// dies (flock(2)).
pub struct ChangeLock {
    _file: std::fs::File,
}

impl ChangeLock {
    /// Takes the lock in `dir` (created when missing), or says another change is running.
    pub fn take(dir: &Path) -> Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating the journal directory `{}`", dir.display()))?;
        let path = dir.join("smt.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening `{}`", path.display()))?;
        if !crate::tempstate::try_lock(&file) {
            anyhow::bail!(
                "another smtlab is switching SMT right now (it holds `{}`); wait for it to finish",
                path.display()
            );
        }
        Ok(ChangeLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_goes_to_run_then_xdg_and_into_a_copied_tree() {
        let xdg = Path::new("/run/user/1000");
        assert_eq!(
            dir_for(Path::new("/"), true, true, Some(xdg)),
            Path::new("/run/smtlab")
        );
        assert_eq!(
            dir_for(Path::new("/"), true, false, Some(xdg)),
            Path::new("/run/user/1000/smtlab")
        );
        assert_eq!(
            dir_for(Path::new("/"), true, false, None),
            Path::new("/run/smtlab")
        );
        assert_eq!(
            dir_for(Path::new("/tmp/tree"), false, true, Some(xdg)),
            Path::new("/tmp/tree/run/smtlab")
        );
    }

    #[test]
    fn write_then_find_round_trips_and_keeps_no_temp_file() {
        let t = tempfile::tempdir().unwrap();
        for c in 0..4 {
            let d = t.path().join(format!("sys/devices/system/cpu/cpu{c}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("online"), "1\n").unwrap();
        }
        let j = Journal {
            root: t.path().display().to_string(),
            control: Some("on".into()),
            online: CpuSet::parse_list("0-3").unwrap(),
            cores: vec![CpuSet::parse_list("0-1").unwrap()],
            ..Journal::for_test()
        };
        let dir = dir_to_write(t.path());
        let p = write(&dir, &j).unwrap();
        assert_eq!(p, t.path().join("run/smtlab").join(FILE));
        let found = find(t.path(), OnInvalid::KeepAside).unwrap().unwrap();
        assert_eq!(found.journal, j);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::write(&p, "{ not json").unwrap();
        // Reported only: still there.
        let e = find(t.path(), OnInvalid::Report).unwrap_err().to_string();
        assert!(e.contains("is not JSON"), "{e}");
        assert!(p.exists());
        remove(&p).unwrap();
        assert!(find(t.path(), OnInvalid::KeepAside).unwrap().is_none());
    }
}
