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
use std::os::unix::fs::OpenOptionsExt as _;

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
    let t = crate::fsutil::read_kernel_text(path)
        .with_context(|| format!("reading `{}`", path.display()))?;
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
        // Never blocking on a FIFO planted in a copied tree (ENXIO at once, fifo(7)).
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
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
    crate::fsutil::read_kernel_text(root.join("proc/sys/kernel/random/boot_id"))
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
/// still runs. A journal that fails [`check`] is never applied and never deleted: it is
/// renamed aside ([`crate::fsutil::keep_aside`]) and the error (exit 2) names it.
pub fn recover(root: &Path, dir: &Path) -> Result<Vec<String>> {
    let path = dir.join(JOURNAL);
    let text = match crate::fsutil::read_input_text(&path, crate::limits::MAX_JOURNAL_BYTES) {
        Ok(t) => t,
        Err(crate::fsutil::InputError::Missing) => return Ok(Vec::new()),
        Err(crate::fsutil::InputError::Interrupted) => {
            return Err(crate::error::Interrupted.into());
        }
        // Another user's (root's) journal directory: only its owner can put pools back.
        Err(_) if denied(&path) => return Ok(Vec::new()),
        Err(e) => return Err(invalid(&path, &e.to_string())),
    };
    let j: Journal = match serde_json::from_str(&text) {
        Ok(j) => j,
        Err(e) => return Err(invalid(&path, &format!("is not one smtlab wrote ({e})"))),
    };
    if let Err(why) = check(root, &j) {
        return Err(invalid(&path, &why));
    }
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

/// True when this user may not read the regular file at `path` (or look into its
/// directory). Never opens it: a FIFO there would block the open.
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

/// The error for a hugetlb journal at `path` that failed (`why`), after renaming it aside.
fn invalid(path: &Path, why: &str) -> anyhow::Error {
    let what = format!("the hugetlb journal `{}` {why}", path.display());
    let msg = match crate::fsutil::keep_aside(path) {
        Ok(kept) => format!(
            "{what}; it was not applied and is kept as `{}`: look at it, set nr_hugepages back \
             by hand if needed (/sys/kernel/mm/hugepages/hugepages-*/nr_hugepages), then remove it",
            kept.display()
        ),
        Err(e) => format!(
            "{what}; it was not applied, and setting it aside failed ({e}): look at it, set \
             nr_hugepages back by hand if needed, then remove it"
        ),
    };
    BadInput(msg).into()
}

/// A pool's `nr_hugepages` relative to a root: the global pool
/// (`sys/kernel/mm/hugepages/hugepages-<N>kB/nr_hugepages`) or a NUMA node's
/// (`sys/devices/system/node/node<M>/hugepages/hugepages-<N>kB/nr_hugepages`), as
/// Documentation/admin-guide/mm/hugetlbpage.rst lays them out. Returns the page size in
/// bytes; None for any other path (`..`, absolute, another file).
pub fn pool_page_bytes(rel: &str) -> Option<u64> {
    let parts: Vec<&str> = rel.split('/').collect();
    let number = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    let pool = match parts.as_slice() {
        ["sys", "kernel", "mm", "hugepages", pool, "nr_hugepages"] => pool,
        [
            "sys",
            "devices",
            "system",
            "node",
            node,
            "hugepages",
            pool,
            "nr_hugepages",
        ] if node.strip_prefix("node").is_some_and(number) => pool,
        _ => return None,
    };
    let kb = pool.strip_prefix("hugepages-")?.strip_suffix("kB")?;
    if !number(kb) {
        return None;
    }
    kb.parse::<u64>().ok()?.checked_mul(1024).filter(|&b| b > 0)
}

/// Checks a hugetlb journal before anything acts on it: every file it names is a pool's
/// `nr_hugepages` under `root` ([`pool_page_bytes`]), reached without a symbolic link
/// (the sysfs directories on the way are real directories), named once, with a value whose
/// pages fit in the machine's memory (`MemTotal` under the root; a pool cannot be larger).
pub fn check(root: &Path, j: &Journal) -> Result<(), String> {
    if j.schema_version != 1 {
        return Err(format!(
            "has schema version {}, and this smtlab reads 1",
            j.schema_version
        ));
    }
    let mem_total = crate::fsutil::read_kernel_text(root.join("proc/meminfo"))
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()?
                .checked_mul(1024)
        });
    let mut seen = std::collections::BTreeSet::new();
    for p in &j.pools {
        let shown = crate::quote::shorten(&p.file);
        let Some(page) = pool_page_bytes(&p.file) else {
            return Err(format!(
                "names `{shown}`, which is not a hugetlb pool's nr_hugepages under the root \
                 (sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages or \
                 sys/devices/system/node/node<N>/hugepages/hugepages-<size>kB/nr_hugepages)"
            ));
        };
        if !seen.insert(p.file.as_str()) {
            return Err(format!("names `{shown}` twice"));
        }
        // Each directory on the way exists and is not a link, and the file is a file.
        let mut at = root.to_path_buf();
        let last = p.file.split('/').count() - 1;
        for (i, part) in p.file.split('/').enumerate() {
            at.push(part);
            let ok = std::fs::symlink_metadata(&at).is_ok_and(|m| {
                if i == last {
                    m.file_type().is_file()
                } else {
                    m.file_type().is_dir()
                }
            });
            if !ok {
                return Err(format!(
                    "names `{shown}`, but `{}` is not there as a plain {} (a pool of a \
                     different kernel, or a link)",
                    at.display(),
                    if i == last { "file" } else { "directory" }
                ));
            }
        }
        let plausible = match mem_total {
            Some(total) => p.nr_hugepages.checked_mul(page).is_some_and(|b| b <= total),
            None => p.nr_hugepages.checked_mul(page).is_some(),
        };
        if !plausible {
            return Err(format!(
                "puts {} back to {} pages of {} KiB, more than this machine's memory{}",
                shown,
                p.nr_hugepages,
                page / 1024,
                mem_total
                    .map(|t| format!(" ({} MiB MemTotal)", t >> 20))
                    .unwrap_or_default()
            ));
        }
    }
    Ok(())
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
            if let Err(e) = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                .open(&file)
            {
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

    /// Files in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// The journal drives root writes, so it may name only a pool's `nr_hugepages` under
    /// the root (the global pools, or a NUMA node's), with a value the machine could hold.
    /// A journal naming `../../tmp/x/victim2.txt` once made a plain `mem pages` write 7
    /// into that file. A failing journal is never applied and never deleted: it is renamed
    /// aside with a timestamp and named in the error (exit 2).
    #[test]
    fn a_journal_naming_anything_but_a_pool_is_kept_aside_and_never_applied() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        pool(&root, "hugepages-2048kB", 300, 300);
        let meminfo = root.join("proc/meminfo");
        std::fs::create_dir_all(meminfo.parent().unwrap()).unwrap();
        // 8 GiB: at most 4096 pages of 2 MiB.
        std::fs::write(&meminfo, "MemTotal:        8388608 kB\n").unwrap();
        let victim = t.path().join("victim2.txt");
        std::fs::write(&victim, "precious\n").unwrap();
        let outside = root.join("etc");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("nr_hugepages"), "keep\n").unwrap();
        let free = "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages";
        for (file, value, says) in [
            ("../victim2.txt", 7, "../victim2.txt"),
            ("../../../../../../tmp/x/victim2.txt", 7, "victim2.txt"),
            (victim.to_str().unwrap(), 7, "victim2.txt"),
            ("etc/nr_hugepages", 7, "etc/nr_hugepages"),
            (free, 7, "free_hugepages"),
            (
                "sys/kernel/mm/hugepages/hugepages-2048kB/../hugepages-2048kB/nr_hugepages",
                7,
                "..",
            ),
            (
                "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
                1 << 40,
                "1099511627776",
            ),
        ] {
            let dir = t.path().join("run");
            let _ = std::fs::remove_dir_all(&dir);
            write_journal(
                &dir,
                &Journal {
                    schema_version: 1,
                    pid: u32::MAX - 1, // no such process
                    boot_id: None,
                    pools: vec![PoolBefore {
                        file: file.into(),
                        nr_hugepages: value,
                    }],
                },
            )
            .unwrap();
            let e = recover(&root, &dir).unwrap_err();
            let msg = format!("{e:#}");
            assert_eq!(crate::error::exit_code(&e), 2, "{file}: {msg}");
            assert!(msg.contains(says), "{file}: {msg}");
            let kept = names(&dir);
            assert!(
                kept.len() == 1 && kept[0].starts_with("hugepages-journal.json.invalid-"),
                "{file}: {kept:?}"
            );
            assert!(msg.contains(&kept[0]), "{file}: {msg}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
            assert_eq!(
                std::fs::read_to_string(outside.join("nr_hugepages")).unwrap(),
                "keep\n"
            );
            assert_eq!(std::fs::read_to_string(root.join(free)).unwrap(), "300\n");
            assert_eq!(nr(&root, "hugepages-2048kB"), 300);
        }
        // A NUMA node's pool is a pool too.
        let node = root.join("sys/devices/system/node/node1/hugepages/hugepages-2048kB");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("nr_hugepages"), "9\n").unwrap();
        let dir = t.path().join("run");
        let _ = std::fs::remove_dir_all(&dir);
        write_journal(
            &dir,
            &Journal {
                schema_version: 1,
                pid: u32::MAX - 1,
                boot_id: None,
                pools: vec![PoolBefore {
                    file: "sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"
                        .into(),
                    nr_hugepages: 2,
                }],
            },
        )
        .unwrap();
        assert_eq!(recover(&root, &dir).unwrap().len(), 1);
        assert_eq!(
            std::fs::read_to_string(node.join("nr_hugepages")).unwrap(),
            "2\n"
        );
        assert!(names(&dir).is_empty());
    }
}
