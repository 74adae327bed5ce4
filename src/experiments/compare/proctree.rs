//! A process and its descendants, read from `/proc`, and giving a tree's threads their
//! CPUs back: what [`super::pins`] does after each run and [`super::guard`] after smtlab
//! was killed. Also the processes a command left behind outside its process group
//! (`setsid`): those smtlab adopted as a child subreaper, and those marked by the
//! environment variable [`MARK_VAR`] that every command it runs inherits.

use crate::affinity;
use crate::cpuset::CpuSet;

/// The parent pid in `/proc/PID/stat` (the field after the parenthesised command name,
/// which may itself hold spaces and parentheses: proc_pid_stat(5)).
fn parent_of(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(')')?.1;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proc {
    pub pid: i32,
    /// Its start time after boot, in clock ticks (field 22 of proc_pid_stat(5)): with the
    /// pid it names one process, not a later one given the same pid.
    pub start: u64,
    pub parent: i32,
    /// Its process group and session (setpgid(2), setsid(2)).
    pub group: i32,
    pub session: i32,
}

/// `/proc/PID/stat` read into a [`Proc`]; None when the process is gone.
pub fn stat(pid: i32) -> Option<Proc> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    // After the name: state (3), ppid (4), pgrp (5), session (6), … starttime (22).
    Some(Proc {
        pid,
        parent: rest.get(1)?.parse().ok()?,
        group: rest.get(2)?.parse().ok()?,
        session: rest.get(3)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
    })
}

/// Every process now.
pub fn all() -> Vec<Proc> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

/// The children of `parent` among `procs`.
pub fn children_of(procs: &[Proc], parent: i32) -> Vec<Proc> {
    procs
        .iter()
        .filter(|p| p.parent == parent)
        .copied()
        .collect()
}

/// `root` and its descendants among `procs`, parents before children.
pub fn tree_in(procs: &[Proc], root: i32) -> Vec<i32> {
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(procs.iter().filter(|c| c.parent == p).map(|c| c.pid));
        i += 1;
    }
    out
}

/// The environment variable every command smtlab compare runs inherits; its value is
/// [`mark`]. A descendant that left the command's process group and session keeps it
/// (environ(7): a child inherits its parent's environment across fork and execve) unless it
/// clears it, which is how the guard finds such processes after smtlab was killed.
pub const MARK_VAR: &str = "SMTLAB_COMPARE_RUN";

/// This smtlab's mark: its pid and start time, unique on this machine while it runs. Each
/// execution's value is this, `-`, and its number ([`run_mark`]).
pub fn mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let start = stat(me).map_or(0, |p| p.start);
        format!("{me}-{start}")
    })
}

/// The value of [`MARK_VAR`] in process `pid`'s environment; None when it has none or the
/// environment cannot be read (gone, or another user's: proc(5), `/proc/PID/environ`).
pub fn mark_of(pid: i32) -> Option<String> {
    let path = format!("/proc/{pid}/environ");
    let env = crate::fsutil::read_kernel_file(std::path::Path::new(&path), false).ok()?;
    let key = format!("{MARK_VAR}=");
    env.split(|&b| b == 0)
        .find_map(|v| v.strip_prefix(key.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The mark of this smtlab's `n`th execution.
pub fn run_mark(n: u64) -> String {
    format!("{}-{n}", mark())
}

/// Whether `value` (a [`MARK_VAR`] value) is one of [`mark`]'s executions.
pub fn is_ours(value: &str, mark: &str) -> bool {
    value
        .strip_prefix(mark)
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `root` and every live descendant, parents before children.
pub fn tree(root: i32) -> Vec<i32> {
    let mut children: Vec<(i32, i32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            if let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>()
                && let Some(pp) = parent_of(pid)
            {
                children.push((pp, pid));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(children.iter().filter(|(pp, _)| *pp == p).map(|(_, c)| *c));
        i += 1;
    }
    out
}

/// Thread ids of `pid` (empty when it is gone).
pub fn threads(pid: i32) -> Vec<i32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Gives every thread of `root`'s tree that still has exactly `pinned` the set `orig`.
/// Returns how many threads changed. Used on restore and by the guard.
pub fn release_tree(root: i32, orig: &CpuSet, pinned: &CpuSet) -> usize {
    let mut n = 0;
    for pid in tree(root) {
        for tid in threads(pid) {
            if affinity::get_affinity(tid).is_ok_and(|a| &a == pinned)
                && affinity::set_affinity(tid, orig).is_ok()
            {
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_names_this_smtlabs_executions_only() {
        let m = mark();
        assert!(is_ours(&run_mark(0), m) && is_ours(&run_mark(17), m));
        for other in [
            m.to_string(),
            format!("{m}-"),
            format!("{m}-1x"),
            format!("{m}1-2"),
            format!("x{m}-1"),
        ] {
            assert!(!is_ours(&other, m), "{other}");
        }
    }

    #[test]
    fn stat_reads_this_process() {
        // SAFETY: getpid, getppid, getpgrp and getsid(0) have no preconditions.
        let (me, parent, group, session) = unsafe {
            (
                libc::getpid(),
                libc::getppid(),
                libc::getpgrp(),
                libc::getsid(0),
            )
        };
        let p = stat(me).unwrap();
        assert_eq!((p.pid, p.parent), (me, parent));
        // Group and session as the kernel reports them to this process: inside a pid
        // namespace whose session leader lives outside it (as in some CI runners) both read
        // 0 in /proc/PID/stat and from getsid(2) alike, so "> 0" is not a property to test.
        assert_eq!((p.group, p.session), (group, session), "{p:?}");
        assert!(p.start > 0, "{p:?}");
        assert!(children_of(&all(), parent).iter().any(|c| c.pid == me));
    }
}
