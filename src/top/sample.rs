//! Reading what `top` samples under a root: `/proc/stat` per-CPU times, and the threads of
//! one process from `/proc/PID/task/TID/stat` (proc(5)). Parsing is pure.

use crate::hygiene::{CpuTimes, parse_proc_stat};
use anyhow::{Context, Result};
use std::path::Path;

/// The per-CPU lines of `<root>/proc/stat`.
pub fn read_stat(root: &Path) -> Result<Vec<CpuTimes>> {
    let p = root.join("proc/stat");
    let text = crate::fsutil::read_kernel_text(&p)
        .with_context(|| format!("reading `{}`", p.display()))?;
    Ok(parse_proc_stat(&text))
}

/// One thread at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadStat {
    pub tid: u32,
    pub comm: String,
    /// `R`: running or runnable.
    pub running: bool,
    /// The CPU it last ran on (field 39, `processor`).
    pub cpu: u32,
    /// User + system time, clock ticks (fields 14 and 15).
    pub cpu_ticks: u64,
}

/// Parses one `/proc/PID/task/TID/stat` line.
pub fn parse_thread_stat(tid: u32, text: &str) -> Option<ThreadStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // f[0] is field 3 (state): field k is f[k − 3].
    let num = |k: usize| f.get(k - 3).and_then(|x| x.parse::<u64>().ok());
    Some(ThreadStat {
        tid,
        comm,
        running: f.first() == Some(&"R"),
        cpu: num(39)? as u32,
        cpu_ticks: num(14)? + num(15)?,
    })
}

/// The threads of `pid` now; None when the process is gone.
pub fn read_threads(root: &Path, pid: u32) -> Option<Vec<ThreadStat>> {
    let dir = root.join(format!("proc/{pid}/task"));
    let rd = std::fs::read_dir(&dir).ok()?;
    let mut v: Vec<ThreadStat> = rd
        .flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let text = crate::fsutil::read_kernel_text(e.path().join("stat")).ok()?;
            parse_thread_stat(tid, &text)
        })
        .collect();
    v.sort_by_key(|t| t.tid);
    Some(v)
}

/// The process's name (`/proc/PID/comm`).
pub fn read_comm(root: &Path, pid: u32) -> Option<String> {
    crate::fsutil::read_kernel_text(root.join(format!("proc/{pid}/comm")))
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_stat_fields() {
        // A name with spaces and parentheses, as proc(5) allows.
        let line = "4242 (my (odd) thr) R 1 4242 4242 0 -1 4194304 100 0 0 0 150 25 0 0 20 0 \
                    3 0 12345 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 \
                    0 0 0";
        let t = parse_thread_stat(4242, line).unwrap();
        assert_eq!(t.comm, "my (odd) thr");
        assert!(t.running);
        assert_eq!(t.cpu, 3);
        assert_eq!(t.cpu_ticks, 175);
        assert!(parse_thread_stat(1, "1 (x) S 0").is_none());
    }
}
