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

/// The journal for `root`, if one exists. A file that does not parse is an error naming it
/// (it is never overwritten or removed silently: it may be the only record).
pub fn find(root: &Path) -> Result<Option<Found>> {
    for dir in candidates(root) {
        let path = dir.join(FILE);
        let text = match crate::fsutil::read_input_text(&path, crate::limits::MAX_JOURNAL_BYTES)
        {
            Ok(t) => t,
            Err(crate::fsutil::InputError::Missing) => continue,
            Err(e) => {
                return Err(e.into_error(&format!("the SMT journal `{}`", path.display())));
            }
        };
        let journal: Journal = serde_json::from_str(&text).map_err(|e| {
            crate::error::BadInput(format!(
                "the SMT journal `{}` is not one smtlab wrote ({e}); look at it, put the CPUs \
                 back by hand (echo 1 > /sys/devices/system/cpu/cpuN/online) and remove it",
                path.display()
            ))
        })?;
        if journal.schema_version != SCHEMA_VERSION {
            return Err(crate::error::BadInput(format!(
                "the SMT journal `{}` has schema version {}, this smtlab reads {SCHEMA_VERSION}",
                path.display(),
                journal.schema_version
            ))
            .into());
        }
        return Ok(Some(Found { path, journal }));
    }
    Ok(None)
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
        std::fs::create_dir_all(t.path().join("sys/devices/system/cpu")).unwrap();
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
        let found = find(t.path()).unwrap().unwrap();
        assert_eq!(found.journal, j);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "{names:?}");
        std::fs::write(&p, "{ not json").unwrap();
        let e = find(t.path()).unwrap_err().to_string();
        assert!(e.contains("not one smtlab wrote"), "{e}");
        remove(&p).unwrap();
        assert!(find(t.path()).unwrap().is_none());
    }
}
