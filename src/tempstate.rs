//! smtlab's temporary directories (`$TMPDIR/smtlab-KIND-PID-N`, KIND one of [`KINDS`]):
//! each holds an `owner.lock` that its smtlab keeps `flock`ed while it lives, and every run
//! that makes one first removes those of every kind whose owner is gone (SIGKILLed, so its
//! `Drop` never ran): a SQLite run sweeps the clusters of a killed PostgreSQL run too.
//!
//! The kernel releases an `flock` with its holder however the holder ends, and the lock is
//! seen across pid namespaces (a `/tmp` shared with a container, where the owner's pid
//! means nothing here), so the lock, not the pid, decides whether a directory is in use
//! (flock(2)).

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The file whose `flock` marks a directory as in use.
pub const OWNER_LOCK: &str = "owner.lock";

/// The prefix of an `oltp` SQLite database's directory.
pub const SQLITE: &str = "smtlab-sqlite";
/// The prefix of a managed PostgreSQL cluster's directory.
pub const PG: &str = "smtlab-pg";
/// Every kind of temporary directory smtlab makes.
pub const KINDS: &[&str] = &[SQLITE, PG];

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary directory owned by this process: locked while it exists, removed on drop.
pub struct OwnedDir {
    path: PathBuf,
    /// Holds the `flock` for as long as the directory exists.
    _lock: std::fs::File,
}

impl OwnedDir {
    /// Creates `$TMPDIR/<prefix>-<pid>-<n>` with its owner lock held, after removing the
    /// stale directories of every kind ([`reap_every_kind`], with `before` for each).
    /// `prefix` is one of [`KINDS`].
    pub fn create(prefix: &str, before: &mut dyn FnMut(&Path)) -> Result<Self> {
        let base = std::env::temp_dir();
        for d in reap_every_kind(&base, before) {
            crate::say!("removed {} (left by an smtlab that is gone)", d.display());
        }
        let path = base.join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path)
            .with_context(|| format!("creating temporary directory `{}`", path.display()))?;
        let lock = std::fs::File::create(path.join(OWNER_LOCK))
            .and_then(|f| {
                if try_lock(&f) {
                    Ok(f)
                } else {
                    Err(std::io::Error::other("already locked"))
                }
            })
            .with_context(|| format!("locking `{}`", path.display()));
        match lock {
            Ok(l) => Ok(OwnedDir { path, _lock: l }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&path);
                Err(e)
            }
        }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Takes `file`'s exclusive `flock` without waiting; false when another process holds it.
pub fn try_lock(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a valid open descriptor.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// True when a process `pid` exists (EPERM: it exists but is someone else's).
pub fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Removes every `base/<prefix>-PID-N` left by an smtlab that is gone, calling `before`
/// on each first (e.g. to stop a server still running from it). Returns the directories
/// removed.
///
/// A directory is in use while its [`OWNER_LOCK`] is locked. Without the lock held, it is
/// stale when its pid is gone, or when it is over a minute old (the pid was reused).
/// Directories without a lock file (an older smtlab's, or one being created this instant)
/// go by the pid alone.
pub fn reap_stale(base: &Path, prefix: &str, before: &mut dyn FnMut(&Path)) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let lead = format!("{prefix}-");
    let mut removed = Vec::new();
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name
            .strip_prefix(&lead)
            .and_then(|r| r.split_once('-'))
            .filter(|(_, n)| n.parse::<u64>().is_ok())
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = e.path();
        let owner_alive = process_exists(owner);
        // Held until the directory is gone, so two sweeping smtlabs do not race.
        let lock = match std::fs::File::open(dir.join(OWNER_LOCK)) {
            Ok(f) => {
                if !try_lock(&f) {
                    continue; // in use
                }
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > Duration::from_secs(60));
                if owner_alive && !old {
                    continue; // being set up by a live smtlab
                }
                Some(f)
            }
            Err(_) if owner_alive => continue,
            Err(_) => None,
        };
        before(&dir);
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
        drop(lock);
    }
    removed
}

/// [`reap_stale`] for every prefix of [`KINDS`]: whichever kind a run makes, it removes
/// the stale directories of all of them.
pub fn reap_every_kind(base: &Path, before: &mut dyn FnMut(&Path)) -> Vec<PathBuf> {
    KINDS
        .iter()
        .flat_map(|k| reap_stale(base, k, before))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_owners_directory_is_reaped_and_a_live_one_kept() {
        let base = tempfile::tempdir().unwrap();
        // pid 0 never exists as a process of ours: a dead owner.
        let dead = base.path().join("smtlab-x-999999999-0");
        std::fs::create_dir(&dead).unwrap();
        std::fs::File::create(dead.join(OWNER_LOCK)).unwrap();
        // A directory whose lock is held is in use, whatever its pid says.
        let held = base.path().join("smtlab-x-999999998-0");
        std::fs::create_dir(&held).unwrap();
        let f = std::fs::File::create(held.join(OWNER_LOCK)).unwrap();
        assert!(try_lock(&f));
        // Another prefix is not ours to touch.
        let other = base.path().join("smtlab-y-999999999-0");
        std::fs::create_dir(&other).unwrap();
        let mut seen = Vec::new();
        let removed = reap_stale(base.path(), "smtlab-x", &mut |d| seen.push(d.to_path_buf()));
        assert_eq!(removed, vec![dead.clone()]);
        assert_eq!(seen, vec![dead]);
        assert!(held.exists() && other.exists());
        drop(f);
    }

    #[test]
    fn every_kind_is_reaped_whichever_kind_the_run_makes() {
        let base = tempfile::tempdir().unwrap();
        // Above any pid_max (at most 2^22, proc(5)): an owner that is gone.
        let mk = |name: &str| {
            let d = base.path().join(name);
            std::fs::create_dir(&d).unwrap();
            std::fs::File::create(d.join(OWNER_LOCK)).unwrap();
            d
        };
        let pg = mk(&format!("{PG}-999999999-0"));
        let sqlite = mk(&format!("{SQLITE}-999999999-1"));
        let live = mk(&format!("{PG}-{}-0", std::process::id()));
        let other = mk("smtlab-other-999999999-0");
        let mut seen = Vec::new();
        let mut removed = reap_every_kind(base.path(), &mut |d| seen.push(d.to_path_buf()));
        removed.sort();
        let mut want = vec![pg, sqlite];
        want.sort();
        assert_eq!(removed, want);
        seen.sort();
        assert_eq!(seen, want);
        // A live owner's (younger than a minute) and a kind smtlab does not make stay.
        assert!(live.exists() && other.exists());
    }
}
