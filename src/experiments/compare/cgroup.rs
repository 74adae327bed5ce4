//! Temporary cpuset cgroups (`--cgroup`): one per placement, holding the command's whole
//! tree on the placement's CPUs even if a process resets its own affinity, removed on
//! every exit path.
//!
//! cgroup v2 is used when a `cgroup2` mount offers the `cpuset` controller and its root
//! enables it for children (`cpuset` in `cgroup.subtree_control`); otherwise a cgroup v1
//! `cpuset` hierarchy, where `cpuset.mems` must be set before a process may join
//! (Linux `Documentation/admin-guide/cgroup-v2.rst` "Cpuset", `cgroup-v1/cpusets.rst`
//! section 2.1). Both need write access to the hierarchy's root: root, or a delegated
//! subtree. No such hierarchy, or a read-only one, is not possible here (exit 3); one
//! this user may not write is a missing privilege (exit 4).
//!
//! After each run the cgroup is emptied (v2 `cgroup.kill` where the kernel has it, 5.14+,
//! else SIGKILL to every pid in `cgroup.procs`): a process that left the command's process
//! group (`setsid`) is still in the cgroup. A cgroup left by a SIGKILLed smtlab is emptied
//! and removed by the [`super::guard`] process, and by the next `--cgroup` run
//! ([`sweep_stale`]).

use crate::cpuset::CpuSet;
use crate::error::{NeedsPrivilege, NotPossible};
use anyhow::{Context, Result};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Name prefix of the cgroups this module makes: `smtlab-compare-PID-N`.
pub const PREFIX: &str = "smtlab-compare";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// cgroup v1 or v2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    /// `cgroup-v1` / `cgroup-v2`, as recorded in results.
    pub fn name(self) -> &'static str {
        match self {
            Version::V1 => "cgroup-v1",
            Version::V2 => "cgroup-v2",
        }
    }
}

/// Where cpuset cgroups can be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// The directory new cgroups go in (the hierarchy's root).
    pub root: PathBuf,
    pub version: Version,
}

/// Mount points of cgroup file systems in `/proc/self/mounts` text: (type, dir, options).
fn cgroup_mounts(mounts: &str) -> Vec<(String, PathBuf, String)> {
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (dir, ty, opts) = (f.get(1)?, f.get(2)?, f.get(3)?);
            // The kernel writes a space in a path as \040 (proc_pid_mounts(5)).
            let dir = dir.replace("\\040", " ");
            matches!(*ty, "cgroup" | "cgroup2")
                .then(|| (ty.to_string(), PathBuf::from(dir), opts.to_string()))
        })
        .collect()
}

fn has_word(path: &Path, word: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s.split_whitespace().any(|w| w == word))
}

/// Finds a hierarchy with the cpuset controller; [`NotPossible`] with the reason when
/// there is none this process could use.
pub fn find() -> Result<Hierarchy> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mounts = cgroup_mounts(&mounts);
    let mut why = Vec::new();
    for (ty, dir, _) in mounts.iter().filter(|(t, _, _)| t == "cgroup2") {
        debug_assert_eq!(ty, "cgroup2");
        if !has_word(&dir.join("cgroup.controllers"), "cpuset") {
            why.push(format!(
                "the cgroup v2 hierarchy at {} has no cpuset controller (it is bound to cgroup v1)",
                dir.display()
            ));
            continue;
        }
        if !has_word(&dir.join("cgroup.subtree_control"), "cpuset") {
            why.push(format!(
                "{}/cgroup.subtree_control does not enable cpuset for child cgroups (as root: \
                 `echo +cpuset > {}/cgroup.subtree_control`)",
                dir.display(),
                dir.display()
            ));
            continue;
        }
        return Ok(Hierarchy {
            root: dir.clone(),
            version: Version::V2,
        });
    }
    for (_, dir, opts) in mounts.iter().filter(|(t, _, _)| t == "cgroup") {
        if opts.split(',').any(|o| o == "cpuset") {
            return Ok(Hierarchy {
                root: dir.clone(),
                version: Version::V1,
            });
        }
    }
    if why.is_empty() {
        why.push("no cgroup file system with the cpuset controller is mounted".into());
    }
    Err(NotPossible(format!(
        "--cgroup needs a cpuset cgroup: {}; drop --cgroup to place the command by CPU affinity",
        why.join("; ")
    ))
    .into())
}

/// One temporary cpuset cgroup. Emptied and removed by [`Cpuset::remove`] or on drop.
#[derive(Debug)]
pub struct Cpuset {
    path: PathBuf,
    version: Version,
    /// `cgroup.procs`, open for the child to write its pid into before exec.
    procs: Option<std::fs::File>,
    removed: bool,
}

/// Writes `value` into a cgroupfs control file (a request to the kernel, so into the file
/// itself, never a temporary file renamed over it).
fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

impl Cpuset {
    /// Creates `root/smtlab-compare-PID-N` limited to `cpus`.
    pub fn create(h: &Hierarchy, cpus: &CpuSet) -> Result<Self> {
        let path = h.root.join(format!(
            "{PREFIX}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(e) = std::fs::create_dir(&path) {
            let why = format!(
                "--cgroup: cannot create a cgroup in {} ({e})",
                h.root.display()
            );
            let instead = "drop --cgroup to place the command by CPU affinity";
            return Err(match e.raw_os_error() {
                // Permission: root (or a delegated subtree) could.
                Some(libc::EACCES | libc::EPERM) => NeedsPrivilege(format!(
                    "{why}: it needs root, or a delegated cgroup subtree; {instead}"
                ))
                .into(),
                // A read-only mount (a container's /sys/fs/cgroup): nobody here can.
                Some(libc::EROFS) => NotPossible(format!(
                    "{why}: the cgroup file system is mounted read-only here; {instead}"
                ))
                .into(),
                _ => anyhow::Error::new(e).context(format!("creating cgroup {}", path.display())),
            });
        }
        let mut c = Cpuset {
            path,
            version: h.version,
            procs: None,
            removed: false,
        };
        let (cpus_file, mems_file, parent_mems) = match h.version {
            Version::V2 => ("cpuset.cpus", None, None),
            Version::V1 => (
                "cpuset.cpus",
                Some("cpuset.mems"),
                Some(h.root.join("cpuset.mems")),
            ),
        };
        write(&c.path.join(cpus_file), &cpus.to_string())
            .with_context(|| format!("limiting cgroup {} to CPUs {cpus}", c.path.display()))?;
        if let (Some(m), Some(parent)) = (mems_file, parent_mems) {
            let mems = std::fs::read_to_string(&parent)
                .with_context(|| format!("reading {}", parent.display()))?;
            write(&c.path.join(m), mems.trim())
                .with_context(|| format!("setting {} of {}", m, c.path.display()))?;
        }
        let procs = std::fs::OpenOptions::new()
            .write(true)
            .open(c.path.join("cgroup.procs"))
            .with_context(|| format!("opening {}/cgroup.procs", c.path.display()))?;
        c.procs = Some(procs);
        Ok(c)
    }

    /// The cgroup's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The version it was made with.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The open `cgroup.procs` a child writes its pid into.
    pub fn procs_fd(&self) -> Option<RawFd> {
        self.procs.as_ref().map(|f| f.as_raw_fd())
    }

    /// Kills every process still in the cgroup and waits (up to 2 s) until it is empty.
    /// Returns how many were killed.
    pub fn empty(&self) -> usize {
        empty_dir(&self.path)
    }

    /// Empties and removes the cgroup. Idempotent.
    pub fn remove(&mut self) -> Result<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        self.procs = None;
        empty_dir(&self.path);
        remove_dir(&self.path)
    }
}

impl Drop for Cpuset {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            crate::say!("warning: {e:#}");
        }
    }
}

fn members(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|s| s.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Kills every process in the cgroup at `dir`; waits until none is left (2 s at most).
pub fn empty_dir(dir: &Path) -> usize {
    let first = members(dir);
    if first.is_empty() {
        return 0;
    }
    let kill = dir.join("cgroup.kill");
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let now = members(dir);
        if now.is_empty() || Instant::now() >= deadline {
            return first.len();
        }
        if !(kill.exists() && write(&kill, "1").is_ok()) {
            for pid in now {
                // SAFETY: kill has no memory preconditions; the pids are members of a
                // cgroup this program made for its own command.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `rmdir` of an empty cgroup; a cgroup already gone is fine.
fn remove_dir(dir: &Path) -> Result<()> {
    // A process just killed can hold its cgroup for a moment after it disappears from
    // cgroup.procs (EBUSY): retry briefly.
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if Instant::now() < deadline && e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(e).with_context(|| format!("removing cgroup {}", dir.display()));
            }
        }
    }
}

/// Empties and removes a cgroup by path (the guard's cleanup after SIGKILL).
pub fn remove_path(dir: &Path) -> Result<()> {
    empty_dir(dir);
    remove_dir(dir)
}

/// The pid in a `smtlab-compare-PID-N` name.
fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?.strip_prefix('-')?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Removes the cgroups of smtlabs that are gone (SIGKILLed before their guard could
/// clean up). Returns the directories removed.
pub fn sweep_stale(h: &Hierarchy) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(&h.root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if pid as u32 == std::process::id() || crate::tempstate::process_exists(pid) {
            continue;
        }
        if remove_path(&e.path()).is_ok() {
            out.push(e.path());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_are_read_from_proc_text() {
        let text = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
                    cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
                    cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n\
                    cgroup /odd\\040dir cgroup rw,memory 0 0\n";
        let m = cgroup_mounts(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].1, PathBuf::from("/sys/fs/cgroup/cpuset"));
        assert!(m[0].2.split(',').any(|o| o == "cpuset"));
        assert_eq!(m[1].0, "cgroup2");
        assert_eq!(m[2].1, PathBuf::from("/odd dir"));
    }

    #[test]
    fn owner_pids_come_from_names() {
        assert_eq!(owner_pid("smtlab-compare-123-4"), Some(123));
        assert_eq!(owner_pid("smtlab-compare-123"), None);
        assert_eq!(owner_pid("smtlab-compare-x-1"), None);
        assert_eq!(owner_pid("other-123-4"), None);
    }
}
