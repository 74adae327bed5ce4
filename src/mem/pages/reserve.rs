//! `mem pages --reserve`: hugetlb pages added to the pool for the run and given back on
//! every exit path.
//!
//! Before the first write, the pool sizes as found are journaled (atomically, like `smt`'s
//! journal) to `/run/smtlab/hugepages-journal.json`. The [`Reservation`] puts them back
//! when the run ends: on return, on an error, and on Ctrl-C/SIGTERM/SIGHUP (the loops see
//! [`crate::interrupt`] and return, and the guard's `Drop` runs). After a SIGKILL the
//! journal stays, and the next `mem pages` puts the pools back first ([`recover`]).
//!
//! Shrinking `nr_hugepages` below the pages still mapped turns them into surplus pages the
//! kernel frees when unmapped (Documentation/admin-guide/mm/hugetlbpage.rst), so the
//! buffers are unmapped before the restore anyway.

use crate::error::{BadInput, NeedsPrivilege};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The journal's file name.
pub const JOURNAL: &str = "hugepages-journal.json";
const LOCK: &str = "hugepages.lock";

/// The pool sizes to put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    pub schema_version: u32,
    /// The smtlab that reserved.
    pub pid: u32,
    /// The boot it happened in (a reboot resets the pools).
    pub boot_id: Option<String>,
    pub pools: Vec<PoolBefore>,
}

/// One pool's `nr_hugepages` before smtlab changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolBefore {
    /// Relative to the root: `sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages`.
    pub file: String,
    pub nr_hugepages: u64,
}

/// What one pool went through, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolChange {
    /// `hugepages-2048kB`.
    pub pool: String,
    pub before: u64,
    /// What smtlab wrote.
    pub asked: u64,
    /// What the kernel then had (short of `asked` when memory is fragmented).
    pub granted: u64,
    /// What it read after putting `before` back; None until restored.
    pub restored: Option<u64>,
}

/// Pools raised for a run; put back by [`Reservation::restore`] or when dropped.
pub struct Reservation {
    root: PathBuf,
    journal: PathBuf,
    pub changes: Vec<PoolChange>,
    done: bool,
    _lock: std::fs::File,
}

fn read_u64(path: &Path) -> Result<u64> {
    let t =
        std::fs::read_to_string(path).with_context(|| format!("reading `{}`", path.display()))?;
    t.trim()
        .parse()
        .with_context(|| format!("`{}` holds `{}`, not a number", path.display(), t.trim()))
}

/// Writes `v` into an existing sysfs file: a request to the kernel, which a temporary file
/// and rename (`crate::fsutil::replace`) could not make.
fn write_u64(path: &Path, v: u64) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(format!("{v}\n").as_bytes())
}

/// The pool's `nr_hugepages` file under `root`.
pub fn pool_file(root: &Path, pool: &str) -> PathBuf {
    root.join("sys/kernel/mm/hugepages")
        .join(pool)
        .join("nr_hugepages")
}

fn boot_id(root: &Path) -> Option<String> {
    std::fs::read_to_string(root.join("proc/sys/kernel/random/boot_id"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn write_journal(dir: &Path, j: &Journal) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating `{}`", dir.display()))?;
    let path = dir.join(JOURNAL);
    let body = serde_json::to_string_pretty(j)? + "\n";
    crate::fsutil::replace(&path, body.as_bytes())
        .with_context(|| format!("writing the hugetlb journal `{}`", path.display()))?;
    Ok(path)
}

fn take_lock(dir: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating `{}`", dir.display()))?;
    let path = dir.join(LOCK);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening `{}`", path.display()))?;
    if !crate::tempstate::try_lock(&f) {
        anyhow::bail!(
            "another smtlab is reserving hugetlb pages right now (it holds `{}`); wait for it",
            path.display()
        );
    }
    Ok(f)
}

/// True when a process with this pid exists.
fn alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Puts back the pools of a journal left by an smtlab that died (SIGKILL) during a
/// `--reserve` run. Returns what it said; nothing when there is no journal, or its writer
/// still runs.
pub fn recover(root: &Path, dir: &Path) -> Result<Vec<String>> {
    let path = dir.join(JOURNAL);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        // Another user's (root's) journal directory: only its owner can put pools back.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading `{}`", path.display())),
    };
    let j: Journal = serde_json::from_str(&text).map_err(|e| {
        BadInput(format!(
            "the hugetlb journal `{}` is not one smtlab wrote ({e}); look at it, set \
             nr_hugepages back by hand and remove it",
            path.display()
        ))
    })?;
    if j.pid != std::process::id() && alive(j.pid) {
        return Ok(Vec::new());
    }
    if j.boot_id.is_some() && j.boot_id != boot_id(root) {
        let _ = std::fs::remove_file(&path);
        return Ok(vec![format!(
            "removed the hugetlb journal `{}` of an earlier boot (booting reset the pools)",
            path.display()
        )]);
    }
    let mut said = Vec::new();
    let mut failed = false;
    for p in &j.pools {
        let f = root.join(&p.file);
        match write_u64(&f, p.nr_hugepages) {
            Ok(()) => said.push(format!(
                "put {} back to {} (smtlab pid {} reserved pages and died before restoring)",
                f.display(),
                p.nr_hugepages,
                j.pid
            )),
            // Not this user's to fix: say so and measure anyway; root's next run restores.
            Err(e) => {
                failed = true;
                said.push(format!(
                    "smtlab (pid {}) reserved hugetlb pages and died before giving them back; \
                     putting {} back to {} needs root ({e}): `echo {} | sudo tee {}`, or run \
                     `sudo smtlab mem pages` once",
                    j.pid,
                    f.display(),
                    p.nr_hugepages,
                    p.nr_hugepages,
                    f.display()
                ));
            }
        }
    }
    if failed {
        return Ok(said);
    }
    std::fs::remove_file(&path).with_context(|| format!("removing `{}`", path.display()))?;
    Ok(said)
}

impl Reservation {
    /// Raises each pool in `wants` (pool directory, free pages needed) by what it lacks.
    /// Refuses (exit 4) when a pool file is not writable, before anything changes.
    pub fn reserve(root: &Path, dir: &Path, wants: &[(&str, u64)]) -> Result<Reservation> {
        let short = |pool: &str, need: u64| -> Result<Option<(u64, u64)>> {
            let d = root.join("sys/kernel/mm/hugepages").join(pool);
            let nr = read_u64(&d.join("nr_hugepages"))?;
            let free = read_u64(&d.join("free_hugepages"))?;
            Ok((free < need).then_some((nr, free)))
        };
        // Privileges first, before the lock and the journal (which live in a root-owned
        // directory), so a normal user gets exit 4 and nothing changes.
        for &(pool, need) in wants {
            if short(pool, need)?.is_none() {
                continue;
            }
            let file = pool_file(root, pool);
            if let Err(e) = std::fs::OpenOptions::new().write(true).open(&file) {
                return Err(NeedsPrivilege(format!(
                    "--reserve writes `{}` ({e}): run as root (sudo smtlab mem pages --reserve), \
                     or reserve the pages beforehand: `sudo sysctl vm.nr_hugepages=N` for the \
                     default size, `echo N | sudo tee {}` for this one",
                    file.display(),
                    file.display()
                ))
                .into());
            }
        }
        let lock = take_lock(dir)?;
        let mut plan = Vec::new();
        for &(pool, need) in wants {
            if let Some((nr, free)) = short(pool, need)? {
                plan.push((pool.to_string(), nr, nr + (need - free)));
            }
        }
        let journal = Journal {
            schema_version: 1,
            pid: std::process::id(),
            boot_id: boot_id(root),
            pools: plan
                .iter()
                .map(|(pool, before, _)| PoolBefore {
                    file: format!("sys/kernel/mm/hugepages/{pool}/nr_hugepages"),
                    nr_hugepages: *before,
                })
                .collect(),
        };
        let journal_path = if plan.is_empty() {
            dir.join(JOURNAL)
        } else {
            write_journal(dir, &journal)?
        };
        let mut r = Reservation {
            root: root.to_path_buf(),
            journal: journal_path,
            changes: Vec::new(),
            done: plan.is_empty(),
            _lock: lock,
        };
        for (pool, before, asked) in plan {
            let file = pool_file(root, &pool);
            // From here on, Drop puts back whatever was changed.
            r.changes.push(PoolChange {
                pool: pool.clone(),
                before,
                asked,
                granted: before,
                restored: None,
            });
            write_u64(&file, asked)
                .with_context(|| format!("writing {asked} to `{}`", file.display()))?;
            let granted = read_u64(&file)?;
            if let Some(c) = r.changes.last_mut() {
                c.granted = granted;
            }
        }
        Ok(r)
    }

    /// Puts every pool back to its journaled size and removes the journal. Idempotent.
    pub fn restore(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        let mut failed = Vec::new();
        for c in &mut self.changes {
            let file = pool_file(&self.root, &c.pool);
            match write_u64(&file, c.before) {
                Ok(()) => c.restored = read_u64(&file).ok(),
                Err(e) => failed.push(format!("`{}`: {e}", file.display())),
            }
        }
        if !failed.is_empty() {
            anyhow::bail!(
                "putting hugetlb pools back failed ({}); the journal `{}` stays for the next \
                 `smtlab mem pages`",
                failed.join("; "),
                self.journal.display()
            );
        }
        self.done = true;
        match std::fs::remove_file(&self.journal) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing `{}`", self.journal.display()))
            }
            _ => Ok(()),
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            crate::say!("error: {e:#}");
        }
    }
}

/// Where the journal goes: beside `smt`'s (`/run/smtlab`, or `$XDG_RUNTIME_DIR/smtlab`).
pub fn journal_dir() -> PathBuf {
    crate::smt::journal::dir_to_write(Path::new("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(root: &Path, name: &str, nr: u64, free: u64) {
        let d = root.join("sys/kernel/mm/hugepages").join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("nr_hugepages"), format!("{nr}\n")).unwrap();
        std::fs::write(d.join("free_hugepages"), format!("{free}\n")).unwrap();
    }

    fn nr(root: &Path, name: &str) -> u64 {
        read_u64(&pool_file(root, name)).unwrap()
    }

    #[test]
    fn reserve_raises_by_what_is_missing_and_restores_on_drop() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("run");
        pool(t.path(), "hugepages-2048kB", 10, 4);
        pool(t.path(), "hugepages-1048576kB", 0, 0);
        {
            let r = Reservation::reserve(
                t.path(),
                &dir,
                &[("hugepages-2048kB", 20), ("hugepages-1048576kB", 1)],
            )
            .unwrap();
            assert_eq!(nr(t.path(), "hugepages-2048kB"), 26, "10 + (20 - 4 free)");
            assert_eq!(nr(t.path(), "hugepages-1048576kB"), 1);
            assert_eq!(r.changes[0].granted, 26);
            let j: Journal =
                serde_json::from_str(&std::fs::read_to_string(dir.join(JOURNAL)).unwrap()).unwrap();
            assert_eq!(j.pools[0].nr_hugepages, 10);
        }
        assert_eq!(nr(t.path(), "hugepages-2048kB"), 10);
        assert_eq!(nr(t.path(), "hugepages-1048576kB"), 0);
        assert!(!dir.join(JOURNAL).exists());
    }

    #[test]
    fn enough_free_pages_change_nothing() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("run");
        pool(t.path(), "hugepages-2048kB", 64, 64);
        let mut r = Reservation::reserve(t.path(), &dir, &[("hugepages-2048kB", 8)]).unwrap();
        assert!(r.changes.is_empty());
        assert!(!dir.join(JOURNAL).exists());
        r.restore().unwrap();
        assert_eq!(nr(t.path(), "hugepages-2048kB"), 64);
    }

    #[test]
    fn a_dead_writer_s_journal_is_put_back() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("run");
        pool(t.path(), "hugepages-2048kB", 300, 300);
        let j = Journal {
            schema_version: 1,
            pid: u32::MAX - 1, // no such process
            boot_id: None,
            pools: vec![PoolBefore {
                file: "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages".into(),
                nr_hugepages: 2,
            }],
        };
        write_journal(&dir, &j).unwrap();
        let said = recover(t.path(), &dir).unwrap();
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(nr(t.path(), "hugepages-2048kB"), 2);
        assert!(!dir.join(JOURNAL).exists());
        assert!(recover(t.path(), &dir).unwrap().is_empty());
        std::fs::write(dir.join(JOURNAL), "garbage").unwrap();
        let e = recover(t.path(), &dir).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
