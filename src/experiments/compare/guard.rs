//! The guard: a small helper process (`smtlab compare --internal-guard`, re-executed) that
//! undoes what a comparison changed if smtlab dies without doing it itself (SIGKILL, a
//! crash), when none of smtlab's own code runs.
//!
//! smtlab tells the guard, one line at a time on the guard's stdin, what it changed and
//! when it undid it: the command's process group, process trees it pinned (with the
//! original and pinned CPU sets), cpuset cgroups, managed database clusters, and the mark
//! its commands carry in their environment ([`super::proctree::MARK_VAR`]). Ending
//! normally it writes `done` and the guard exits. When stdin reaches end of file without
//! `done` (the kernel closed the pipe because smtlab died), the guard kills the command's
//! group and every process that carries the mark (descendants that left the group with
//! setsid(2): the kernel re-parented them to init, so nothing else names them), gives
//! pinned threads their original CPUs back, empties and removes the cgroups, and removes
//! the clusters (whose servers their parent-death signal already stopped). A descendant
//! that both left the group and cleared its environment is found only by `--cgroup`.
//!
//! The guard runs in its own process group and ignores SIGINT, SIGTERM and SIGHUP, so
//! the terminal's Ctrl-C or a closed session does not end it before it has cleaned up.

use crate::cpuset::CpuSet;
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The hidden option that turns `smtlab compare` into the guard.
pub const GUARD_FLAG: &str = "--internal-guard";

/// smtlab's end of the guard.
pub struct Guard {
    stdin: Mutex<Option<ChildStdin>>,
    child: Mutex<Option<Child>>,
}

impl Guard {
    /// Starts the guard from `exe` (None = this binary).
    pub fn start(exe: Option<&Path>) -> Result<Self> {
        let exe = match exe {
            Some(p) => p.to_path_buf(),
            None if Path::new("/proc/self/exe").exists() => PathBuf::from("/proc/self/exe"),
            None => std::env::current_exe().context("finding the smtlab binary")?,
        };
        use std::os::unix::process::CommandExt;
        let mut child = Command::new(&exe)
            .args(["compare", GUARD_FLAG])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting the cleanup guard ({})", exe.display()))?;
        let stdin = child.stdin.take();
        Ok(Guard {
            stdin: Mutex::new(stdin),
            child: Mutex::new(Some(child)),
        })
    }

    fn send(&self, line: &str) {
        let mut g = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = g.as_mut()
            && writeln!(s, "{line}").and_then(|_| s.flush()).is_err()
        {
            crate::say!(
                "warning: the cleanup guard is gone; if smtlab is killed now, what it changed stays"
            );
            *g = None;
        }
    }

    /// Every command carries `mark` (a [`super::proctree::mark`]) in its environment.
    pub fn mark(&self, mark: &str) {
        self.send(&format!("mark {mark}"));
    }

    /// The command's process group `pgid` is running.
    pub fn process_group(&self, pgid: i32) {
        self.send(&format!("pgroup {pgid}"));
    }

    /// The group ended and was reaped.
    pub fn process_group_done(&self, pgid: i32) {
        self.send(&format!("unpgroup {pgid}"));
    }

    /// `root`'s tree is pinned to `pinned`; its original CPUs are `orig`.
    pub fn tree(&self, root: i32, orig: &CpuSet, pinned: &CpuSet) {
        self.send(&format!("tree {root} {orig} {pinned}"));
    }

    /// `root`'s tree was restored.
    pub fn tree_done(&self, root: i32) {
        self.send(&format!("untree {root}"));
    }

    /// A cgroup exists at `path`.
    pub fn cgroup(&self, path: &Path) {
        self.send(&format!("cgroup {}", path.display()));
    }

    /// The cgroup at `path` was removed.
    pub fn cgroup_done(&self, path: &Path) {
        self.send(&format!("uncgroup {}", path.display()));
    }

    /// A managed cluster lives in `dir`.
    pub fn cluster(&self, dir: &Path) {
        self.send(&format!("cluster {}", dir.display()));
    }

    /// The cluster in `dir` was removed.
    pub fn cluster_done(&self, dir: &Path) {
        self.send(&format!("uncluster {}", dir.display()));
    }

    /// Everything was undone: the guard exits without doing anything.
    pub fn finish(&self) {
        self.send("done");
        *self.stdin.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if let Some(mut c) = self.child.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = c.wait();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Dropped last (made first): every other guard has run by now.
        self.finish();
    }
}

/// What the guard was told is in place.
#[derive(Debug, Default, PartialEq)]
pub struct Ledger {
    pub pgroups: BTreeSet<i32>,
    pub trees: BTreeMap<i32, (CpuSet, CpuSet)>,
    pub cgroups: BTreeSet<PathBuf>,
    pub clusters: BTreeSet<PathBuf>,
    /// The mark smtlab's commands carry.
    pub mark: Option<String>,
    /// `done` arrived: nothing to undo.
    pub done: bool,
}

impl Ledger {
    /// Applies one line of the protocol; unknown lines are ignored.
    pub fn apply(&mut self, line: &str) {
        let (cmd, arg) = line.split_once(' ').unwrap_or((line, ""));
        let pid = || arg.trim().parse::<i32>().ok();
        match cmd {
            "done" => self.done = true,
            "mark" if !arg.trim().is_empty() => self.mark = Some(arg.trim().to_string()),
            "pgroup" => self.pgroups.extend(pid()),
            "unpgroup" => {
                if let Some(p) = pid() {
                    self.pgroups.remove(&p);
                }
            }
            "tree" => {
                let f: Vec<&str> = arg.split_whitespace().collect();
                if let [root, orig, pinned] = f[..]
                    && let (Ok(r), Ok(o), Ok(p)) = (
                        root.parse::<i32>(),
                        CpuSet::parse_list(orig),
                        CpuSet::parse_list(pinned),
                    )
                {
                    self.trees.insert(r, (o, p));
                }
            }
            "untree" => {
                if let Some(p) = pid() {
                    self.trees.remove(&p);
                }
            }
            "cgroup" => {
                self.cgroups.insert(PathBuf::from(arg));
            }
            "uncgroup" => {
                self.cgroups.remove(Path::new(arg));
            }
            "cluster" => {
                self.clusters.insert(PathBuf::from(arg));
            }
            "uncluster" => {
                self.clusters.remove(Path::new(arg));
            }
            _ => {}
        }
    }

    /// True when nothing is left to undo.
    pub fn is_clear(&self) -> bool {
        self.done
            || (self.pgroups.is_empty()
                && self.mark.is_none()
                && self.trees.is_empty()
                && self.cgroups.is_empty()
                && self.clusters.is_empty())
    }
}

/// The guard's main: reads the protocol from `input` until `done` or end of file, then
/// undoes whatever is still in place.
pub fn serve(input: impl BufRead) {
    // SAFETY: setting dispositions to SIG_IGN has no preconditions.
    unsafe {
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(s, libc::SIG_IGN);
        }
    }
    let did = watch(input);
    if !did.is_empty() {
        crate::say!(
            "smtlab compare ended without cleaning up (killed?); its guard {}",
            did.join(", ")
        );
    }
}

/// Reads the protocol until `done` or end of file; undoes what is left and says what.
fn watch(input: impl BufRead) -> Vec<String> {
    let mut ledger = Ledger::default();
    for line in input.lines() {
        let Ok(line) = line else { break };
        ledger.apply(line.trim_end());
        if ledger.done {
            return Vec::new();
        }
    }
    if ledger.is_clear() {
        return Vec::new();
    }
    let mut did = Vec::new();
    for pgid in &ledger.pgroups {
        // SAFETY: kill has no memory preconditions; the group is the command's.
        if unsafe { libc::kill(-pgid, libc::SIGKILL) } == 0 {
            did.push(format!("killed the command's process group {pgid}"));
        }
    }
    if let Some(mark) = &ledger.mark {
        let n = kill_marked(mark);
        if n > 0 {
            did.push(format!(
                "killed {n} process(es) the command left outside its group"
            ));
        }
    }
    for (root, (orig, pinned)) in &ledger.trees {
        let n = super::proctree::release_tree(*root, orig, pinned);
        did.push(format!(
            "gave {n} thread(s) of process {root} their CPUs {orig} back"
        ));
    }
    for cg in &ledger.cgroups {
        match super::cgroup::remove_path(cg) {
            Ok(()) => did.push(format!("removed cgroup {}", cg.display())),
            Err(e) => did.push(format!("could not remove cgroup {}: {e:#}", cg.display())),
        }
    }
    for dir in &ledger.clusters {
        // The postmaster's parent-death signal stopped it; the sweep waits for it and
        // removes every cluster directory whose smtlab is gone, this one included.
        if let Some(base) = dir.parent() {
            let wait = std::time::Instant::now();
            while dir.exists() && wait.elapsed() < std::time::Duration::from_secs(20) {
                crate::oltp::managed::remove_stale_clusters(base);
                if dir.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
        }
        if dir.exists() {
            did.push(format!("could not remove cluster {}", dir.display()));
        } else {
            did.push(format!("removed cluster {}", dir.display()));
        }
    }
    did
}

/// Kills every process whose environment carries one of `mark`'s executions, again until
/// none is left (a process forking as it is found) or 5 s passed; returns how many.
/// Another user's processes are never read (their environ is not readable) or killed.
fn kill_marked(mark: &str) -> usize {
    use super::proctree;
    let mut killed = BTreeSet::new();
    let t0 = std::time::Instant::now();
    loop {
        let found: Vec<proctree::Proc> = proctree::all()
            .into_iter()
            .filter(|p| !killed.contains(&(p.pid, p.start)))
            .filter(|p| proctree::mark_of(p.pid).is_some_and(|m| proctree::is_ours(&m, mark)))
            .collect();
        if found.is_empty() || t0.elapsed() > std::time::Duration::from_secs(5) {
            return killed.len();
        }
        for p in found {
            // SAFETY: kill has no memory preconditions; the process carries smtlab's mark.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
            killed.insert((p.pid, p.start));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_follows_the_protocol() {
        let mut l = Ledger::default();
        for line in [
            "pgroup 100",
            "tree 7 0-3 1",
            "cgroup /sys/fs/cgroup/cpuset/smtlab-compare-1-0",
            "cluster /tmp/smtlab-pg-1-0",
            "bogus line",
            "pgroup x",
        ] {
            l.apply(line);
        }
        assert_eq!(l.pgroups, BTreeSet::from([100]));
        assert_eq!(
            l.trees[&7],
            (CpuSet::from_cpus([0, 1, 2, 3]), CpuSet::from_cpus([1]))
        );
        assert!(!l.is_clear());
        for line in [
            "unpgroup 100",
            "untree 7",
            "uncgroup /sys/fs/cgroup/cpuset/smtlab-compare-1-0",
            "uncluster /tmp/smtlab-pg-1-0",
        ] {
            l.apply(line);
        }
        assert!(l.is_clear() && !l.done);
        l.apply("pgroup 5");
        l.apply("done");
        assert!(l.is_clear());
    }

    #[test]
    fn serve_undoes_a_pinned_tree_when_input_ends_without_done() {
        let mine = crate::affinity::get_affinity(0).unwrap();
        let Some(first) = mine.first() else { return };
        let one = CpuSet::from_cpus([first]);
        let mut c = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = c.id() as i32;
        crate::affinity::set_affinity(pid, &one).unwrap();
        let text = format!("tree {pid} {mine} {one}\n");
        let did = watch(std::io::Cursor::new(text));
        assert_eq!(did.len(), 1, "{did:?}");
        assert!(watch(std::io::Cursor::new(format!("tree {pid} 0 0\ndone\n"))).is_empty());
        assert_eq!(crate::affinity::get_affinity(pid).unwrap(), mine);
        let _ = c.kill();
        let _ = c.wait();
    }
}
