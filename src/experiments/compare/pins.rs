//! Placing running processes for one run: every thread of them and of their descendants
//! pinned to the run's CPUs, and put back afterwards.
//!
//! Original affinities are kept in an [`crate::oltp::pin::BackendPins`], which restores
//! them in `restore` and again on drop, so errors, panics and Ctrl-C (returning through
//! the normal path) leave the processes as they were. Threads and processes started
//! during the run inherit the pinned set from their parent (sched_setaffinity(2)); on
//! restore, those still pinned are given their tree root's original set. For SIGKILL of
//! smtlab, the [`super::guard`] process does the same walk.

use super::guard::Guard;
use super::proctree::{release_tree, threads, tree};
use crate::affinity;
use crate::cpuset::CpuSet;
use crate::error::{BadInput, NeedsPrivilege};
use crate::oltp::pin::BackendPins;
use anyhow::Result;
use std::collections::BTreeSet;

/// Checks that `pid` exists (bad input otherwise) and that this process may change its
/// CPUs (needs privileges otherwise: sched_setaffinity(2) fails with EPERM for another
/// user's process without CAP_SYS_NICE), before any run.
pub fn check_pid(pid: i32) -> Result<()> {
    if pid <= 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(BadInput(format!(
            "--pin-pids: no process {pid} (is the server running? `pgrep -f NAME` finds its pid)"
        ))
        .into());
    }
    // Setting the affinity it already has changes nothing and tells whether we may.
    let cur = affinity::get_affinity(pid)
        .map_err(|e| BadInput(format!("--pin-pids: cannot read process {pid}'s CPUs: {e}")))?;
    affinity::set_affinity(pid, &cur).map_err(|e| {
        if e.raw_os_error() == Some(libc::EPERM) {
            NeedsPrivilege(format!(
                "--pin-pids: process {pid} belongs to another user; pinning it needs root or \
                 CAP_SYS_NICE ({e})"
            ))
            .into()
        } else {
            anyhow::Error::new(BadInput(format!(
                "--pin-pids: cannot pin process {pid}: {e}"
            )))
        }
    })
}

fn vanished(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.raw_os_error() == Some(libc::ESRCH))
    })
}

/// Process trees pinned for one run; restored by [`TreePins::restore`] or on drop.
pub struct TreePins<'g> {
    saved: BackendPins,
    /// (root, its original CPUs, the pinned CPUs).
    roots: Vec<(i32, CpuSet, CpuSet)>,
    guard: Option<&'g Guard>,
    done: bool,
}

impl<'g> TreePins<'g> {
    /// Pins every thread of `roots` and their descendants to `cpus`. A root that is gone
    /// is an error (the server died); threads that end while being pinned are skipped.
    pub fn pin(roots: &[i32], cpus: &CpuSet, guard: Option<&'g Guard>) -> Result<Self> {
        let mut p = TreePins {
            saved: BackendPins::new(),
            roots: Vec::new(),
            guard,
            done: false,
        };
        let mut seen = BTreeSet::new();
        for &root in roots {
            let orig = affinity::get_affinity(root).map_err(|e| {
                anyhow::anyhow!("process {root} (to pin beside the command) is gone: {e}")
            })?;
            if let Some(g) = guard {
                g.tree(root, &orig, cpus);
            }
            p.roots.push((root, orig, cpus.clone()));
            // Twice: threads and children started while the first pass ran are caught by
            // the second (later ones inherit the pinned set from their parent).
            for _ in 0..2 {
                for pid in tree(root) {
                    for tid in threads(pid) {
                        if !seen.insert(tid) {
                            continue;
                        }
                        if let Err(e) = p.saved.pin(tid, cpus)
                            && !vanished(&e)
                        {
                            return Err(e.context(format!("pinning process {root}'s tree")));
                        }
                    }
                }
            }
        }
        Ok(p)
    }

    /// Threads pinned.
    pub fn len(&self) -> usize {
        self.saved.len()
    }

    pub fn is_empty(&self) -> bool {
        self.saved.is_empty()
    }

    /// Restores every thread's CPUs, then gives threads started during the run (still on
    /// the pinned set) their root's original set. Idempotent.
    pub fn restore(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        let r = self.saved.restore();
        for (root, orig, pinned) in &self.roots {
            release_tree(*root, orig, pinned);
            if let Some(g) = self.guard {
                g.tree_done(*root);
            }
        }
        r
    }
}

impl Drop for TreePins<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            crate::say!("warning: {e:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_tree_is_pinned_and_restored_with_children_started_meanwhile() {
        let mine = affinity::get_affinity(0).unwrap();
        let Some(first) = mine.first() else { return };
        let one = CpuSet::from_cpus([first]);
        // A shell with a sleeping child.
        let mut sh = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let root = sh.id() as i32;
        let t0 = std::time::Instant::now();
        while tree(root).len() < 3 && t0.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let before = affinity::get_affinity(root).unwrap();
        let mut pins = TreePins::pin(&[root], &one, None).unwrap();
        assert!(pins.len() >= 3, "shell and its two sleeps");
        for pid in tree(root) {
            assert_eq!(affinity::get_affinity(pid).unwrap(), one);
        }
        pins.restore().unwrap();
        for pid in tree(root) {
            assert_eq!(affinity::get_affinity(pid).unwrap(), before, "pid {pid}");
        }
        // A child forked while pinned inherits the pinned set: release_tree gives it the
        // root's original set back (here set by hand, as the fork would have).
        let child = *tree(root).last().unwrap();
        affinity::set_affinity(child, &one).unwrap();
        if one != before {
            assert!(release_tree(root, &before, &one) >= 1);
            assert_eq!(affinity::get_affinity(child).unwrap(), before);
        }
        for pid in tree(root).into_iter().rev() {
            // SAFETY: kill with pids of this test's own children.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = sh.wait();
    }

    #[test]
    fn missing_pids_are_bad_input() {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id() as i32;
        c.wait().unwrap();
        let e = check_pid(pid).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_BAD_INPUT);
        let e = format!("{e:#}");
        assert!(e.contains(&format!("no process {pid}")), "{e}");
        assert!(check_pid(-3).is_err());
        check_pid(std::process::id() as i32).unwrap();
    }
}
