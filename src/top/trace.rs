//! Exact per-core busy time from the `sched:sched_switch` tracepoint: a CPU is idle while
//! it runs its idle task (pid 0) and busy otherwise, so intersecting the siblings' timelines
//! gives the time with both busy, one busy and none (what HP's LinuxKI reports per core as
//! "double busy").
//!
//! The tracing runs in a tracefs *instance* of its own (`instances/smtlab-PID`, Linux 3.10+,
//! Documentation/trace/ftrace.rst "Instances"): its own ring buffer, event switches and
//! `tracing_on`, so another tracer's settings are never touched. Every exit path switches it
//! off, clears the buffer and removes the instance (which frees the buffer): the normal
//! return and Ctrl-C through `Drop`, a SIGKILL through the sweep of the next run, which
//! removes instances whose smtlab is gone. Parsing and the timelines are pure.

use crate::cpuset::CpuSet;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One `sched_switch` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    pub cpu: u32,
    pub ts_ns: u64,
    pub prev_pid: u32,
    pub next_pid: u32,
    pub next_comm: String,
}

/// A parsed trace of one interval.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    pub switches: Vec<Switch>,
    /// Timestamps of smtlab's begin and end markers: the interval.
    pub begin_ns: Option<u64>,
    pub end_ns: Option<u64>,
    /// CPUs whose buffer lost events (`CPU:N [LOST M EVENTS]`, or overruns in `stats`).
    pub lost: CpuSet,
}

pub const BEGIN: &str = "smtlab-begin";
pub const END: &str = "smtlab-end";

/// Parses tracefs's `trace` text, e.g.
/// `bash-1234 [001] d..2. 5873.123456: sched_switch: prev_comm=bash prev_pid=1234
/// prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120`.
/// Lines that do not parse are skipped.
pub fn parse(text: &str) -> Trace {
    let mut t = Trace::default();
    for line in text.lines() {
        if line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.trim_start().strip_prefix("CPU:") {
            if rest.contains("LOST")
                && let Some(cpu) = rest.split_whitespace().next().and_then(|c| c.parse().ok())
            {
                t.lost.insert(cpu);
            }
            continue;
        }
        let (head, event) = if let Some(i) = line.find(": sched_switch: ") {
            (&line[..i], Some(&line[i + 16..]))
        } else if let Some(i) = line.find(": tracing_mark_write: ") {
            let msg = line[i + 22..].trim();
            let Some((_, ts)) = head_fields(&line[..i]) else {
                continue;
            };
            if msg == BEGIN {
                t.begin_ns = Some(ts);
            } else if msg == END {
                t.end_ns = Some(ts);
            }
            continue;
        } else {
            continue;
        };
        let Some((cpu, ts)) = head_fields(head) else {
            continue;
        };
        let Some(ev) = event else { continue };
        let field = |name: &str| -> Option<&str> {
            let i = ev.find(name)?;
            let rest = &ev[i + name.len()..];
            Some(rest.split_whitespace().next().unwrap_or(""))
        };
        let (Some(prev), Some(next)) = (
            field(" prev_pid=").or_else(|| field("prev_pid=")),
            field(" next_pid="),
        ) else {
            continue;
        };
        let (Ok(prev_pid), Ok(next_pid)) = (prev.parse(), next.parse()) else {
            continue;
        };
        // The name may hold spaces: everything between `next_comm=` and ` next_pid=`.
        let next_comm = ev
            .find("next_comm=")
            .and_then(|a| {
                let s = &ev[a + 10..];
                s.find(" next_pid=").map(|b| s[..b].to_string())
            })
            .unwrap_or_default();
        t.switches.push(Switch {
            cpu,
            ts_ns: ts,
            prev_pid,
            next_pid,
            next_comm,
        });
    }
    t.switches.sort_by_key(|s| s.ts_ns);
    t
}

/// The CPU (`[001]`) and timestamp (`5873.123456`) at the end of a line's head; the task
/// name before them may hold spaces and brackets, so they are found from the right.
fn head_fields(head: &str) -> Option<(u32, u64)> {
    let mut words = head.split_whitespace().rev();
    let ts = parse_ts(words.next()?)?;
    let cpu = words
        .take(2)
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']')?.parse().ok())?;
    Some((cpu, ts))
}

/// `seconds.fraction` as nanoseconds.
fn parse_ts(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    let sec: u64 = sec.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().ok()?
    };
    sec.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Per CPU, who ran when: (start ns, end ns, pid) in time order.
pub type Runs = BTreeMap<u32, Vec<(u64, u64, u32)>>;

/// Who ran on each CPU over `[t0, t1]`, from the switches. A CPU with no switch in the
/// trace has no entry (its state is unknown from the trace).
pub fn runs(trace: &Trace, t0: u64, t1: u64) -> Runs {
    let mut by_cpu: BTreeMap<u32, Vec<&Switch>> = BTreeMap::new();
    for s in &trace.switches {
        by_cpu.entry(s.cpu).or_default().push(s);
    }
    let mut out = BTreeMap::new();
    for (cpu, sw) in by_cpu {
        let mut v = Vec::new();
        // Before the first switch the CPU ran the first switch's prev task.
        let mut cur = sw[0].prev_pid;
        let mut since = t0;
        for s in sw {
            let at = s.ts_ns.clamp(t0, t1);
            if at > since {
                v.push((since, at, cur));
            }
            cur = s.next_pid;
            since = since.max(at);
        }
        if t1 > since {
            v.push((since, t1, cur));
        }
        out.insert(cpu, v);
    }
    out
}

/// The busy intervals (not the idle task) of one CPU's runs.
pub fn busy(runs: &[(u64, u64, u32)]) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = Vec::new();
    for &(a, b, pid) in runs {
        if pid == 0 {
            continue;
        }
        match v.last_mut() {
            Some(last) if last.1 == a => last.1 = b,
            _ => v.push((a, b)),
        }
    }
    v
}

/// A tracefs instance recording `sched_switch`, removed when dropped.
pub struct Tracer {
    dir: PathBuf,
}

/// Where tracefs is mounted under `root`: `sys/kernel/tracing` (Linux 4.1+), else the
/// older `sys/kernel/debug/tracing`.
pub fn tracefs_dir(root: &Path) -> Option<PathBuf> {
    ["sys/kernel/tracing", "sys/kernel/debug/tracing"]
        .iter()
        .map(|p| root.join(p))
        .find(|p| p.join("instances").is_dir())
}

impl Tracer {
    /// Makes the instance and switches `sched_switch` on in it (tracing itself stays off
    /// until [`Tracer::start`]). The error says why exact figures are not available.
    pub fn open(root: &Path) -> Result<Tracer, String> {
        let base = tracefs_dir(root).ok_or_else(|| {
            "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)".to_string()
        })?;
        let instances = base.join("instances");
        sweep(&instances);
        let dir = instances.join(format!("smtlab-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| {
            format!(
                "cannot make a tracefs instance in {}: {e}",
                instances.display()
            )
        })?;
        let t = Tracer { dir };
        let enable = t.dir.join("events/sched/sched_switch/enable");
        if !enable.is_file() {
            return Err("this kernel has no sched:sched_switch tracepoint".into());
        }
        t.write("tracing_on", "0")?;
        // One clock for every CPU, so the siblings' timelines line up.
        let _ = t.write("trace_clock", "global");
        // Keep the interval's start when the buffer fills; lost events are counted.
        let _ = t.write("options/overwrite", "0");
        t.write("events/sched/sched_switch/enable", "1")?;
        Ok(t)
    }

    /// Writes `value` into a tracefs control file (a request to the kernel, so into the
    /// file itself, never a temporary file renamed over it).
    fn write(&self, rel: &str, value: &str) -> Result<(), String> {
        let p = self.dir.join(rel);
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&p)
            .and_then(|mut f| f.write_all(value.as_bytes()))
            .map_err(|e| format!("writing {value} to {}: {e}", p.display()))
    }

    /// Clears the buffer and starts recording, then marks the interval's start.
    pub fn start(&mut self) -> Result<(), String> {
        self.write("trace", "")?;
        self.write("tracing_on", "1")?;
        self.write("trace_marker", BEGIN)
    }

    /// Marks the end, stops recording, and returns the parsed trace (buffer cleared).
    pub fn stop(&mut self) -> Result<Trace, String> {
        let _ = self.write("trace_marker", END);
        self.write("tracing_on", "0")?;
        let text = crate::fsutil::read_kernel_text(self.dir.join("trace"))
            .map_err(|e| format!("reading the trace: {e}"))?;
        let mut t = parse(&text);
        t.lost = t.lost.union(&self.overruns());
        let _ = self.write("trace", "");
        Ok(t)
    }

    /// CPUs whose per-CPU buffer overran or dropped events (`per_cpu/cpuN/stats`).
    fn overruns(&self) -> CpuSet {
        let mut lost = CpuSet::new();
        let Ok(rd) = std::fs::read_dir(self.dir.join("per_cpu")) else {
            return lost;
        };
        for e in rd.flatten() {
            let Some(cpu) = e
                .file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("cpu"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let text = crate::fsutil::read_kernel_text(e.path().join("stats")).unwrap_or_default();
            let bad = text.lines().any(|l| {
                let mut kv = l.splitn(2, ':');
                let (k, v) = (kv.next().unwrap_or(""), kv.next().unwrap_or(""));
                (k == "overrun" || k == "dropped events")
                    && v.trim().parse::<u64>().is_ok_and(|n| n > 0)
            });
            if bad {
                lost.insert(cpu);
            }
        }
        lost
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        let _ = self.write("events/sched/sched_switch/enable", "0");
        let _ = self.write("trace", "");
        // Removing the instance frees its buffers.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Removes instances left by an smtlab that is gone (SIGKILLed before its `Drop`).
fn sweep(instances: &Path) {
    let Ok(rd) = std::fs::read_dir(instances) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("smtlab-"))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 != std::process::id() && !crate::tempstate::process_exists(pid) {
            let _ = std::fs::write(e.path().join("tracing_on"), "0");
            if std::fs::remove_dir(e.path()).is_ok() {
                crate::say!(
                    "removed the tracefs instance {} left by smtlab pid {pid}",
                    e.path().display()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: nop
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          smtlab-900     [000] .....   100.000000: tracing_mark_write: smtlab-begin
          <idle>-0       [001] d..2.   100.200000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=my worker [x] next_pid=77 next_prio=120
     my worker [x]-77    [001] d..2.   100.700000: sched_switch: prev_comm=my worker [x] prev_pid=77 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
            burn-50      [000] d..2.   100.500000: sched_switch: prev_comm=burn prev_pid=50 prev_prio=120 prev_state=R ==> next_comm=burn next_pid=51 next_prio=120
CPU:3 [LOST 12 EVENTS]
          smtlab-900     [000] .....   101.000000: tracing_mark_write: smtlab-end
";

    #[test]
    fn parses_switches_markers_and_losses() {
        let t = parse(TRACE);
        assert_eq!(t.begin_ns, Some(100_000_000_000));
        assert_eq!(t.end_ns, Some(101_000_000_000));
        assert_eq!(t.switches.len(), 3);
        assert_eq!(t.switches[0].cpu, 1);
        assert_eq!(t.switches[0].next_comm, "my worker [x]");
        assert_eq!(t.switches[0].next_pid, 77);
        assert_eq!(t.lost, CpuSet::from_cpus([3]));
        assert_eq!(parse_ts("5873.123456"), Some(5_873_123_456_000));
        assert_eq!(parse_ts("12"), Some(12_000_000_000));
        assert_eq!(parse_ts("1.x"), None);
    }

    #[test]
    fn timelines_from_switches() {
        let t = parse(TRACE);
        let (t0, t1) = (t.begin_ns.unwrap(), t.end_ns.unwrap());
        let r = runs(&t, t0, t1);
        // CPU 0 ran burn (50) then burn (51): busy all the interval.
        assert_eq!(busy(&r[&0]), [(t0, t1)]);
        // CPU 1 was idle, ran 77 from 0.2 s to 0.7 s.
        let b1 = busy(&r[&1]);
        assert_eq!(b1, [(t0 + 200_000_000, t0 + 700_000_000)]);
        let s = crate::top::cores::split(&[busy(&r[&0]), b1], t0, t1);
        assert!((s.both - 0.5).abs() < 1e-9 && (s.one - 0.5).abs() < 1e-9);
        assert!(!r.contains_key(&2), "no switch on CPU 2: unknown");
    }

    #[test]
    fn tracer_needs_a_tracefs() {
        let t = tempfile::tempdir().unwrap();
        let e = Tracer::open(t.path()).err().unwrap();
        assert!(e.contains("not mounted"), "{e}");
    }
}
