//! A process and its descendants, read from `/proc`, and giving a tree's threads their
//! CPUs back: what [`super::pins`] does after each run and [`super::guard`] after smtlab
//! was killed.

use crate::affinity;
use crate::cpuset::CpuSet;

/// The parent pid in `/proc/PID/stat` (the field after the parenthesised command name,
/// which may itself hold spaces and parentheses: proc_pid_stat(5)).
fn parent_of(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = s.rsplit_once(')')?.1;
    rest.split_whitespace().nth(1)?.parse().ok()
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
