//! Measurement hygiene: is something else already using the CPUs about to be measured?
//!
//! Other processes on a measured CPU, or a hypervisor's host taking the vCPU away (steal
//! time), become part of the result. Before an experiment, [`preflight`] samples
//! `/proc/stat` over a short window and warns about measured CPUs that were busy or
//! stolen from. The parsing and arithmetic are pure and tested on made-up text.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Cumulative time of one CPU from `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    pub cpu: u32,
    /// user + nice + system + irq + softirq (guest time is already inside user).
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this vCPU wanted to run.
    pub steal: u64,
}

/// The per-CPU lines (`cpuN …`) of `/proc/stat`; lines that do not parse are skipped.
pub fn parse_proc_stat(text: &str) -> Vec<CpuTimes> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let cpu: u32 = f.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            // Saturating: a corrupt line must not overflow (the kernel's counters never do).
            let sum = |i: &[usize]| i.iter().fold(0u64, |s, &i| s.saturating_add(at(i)));
            (v.len() >= 4).then(|| CpuTimes {
                cpu,
                busy: sum(&[0, 1, 2, 5, 6]),
                idle: sum(&[3, 4]),
                steal: at(7),
            })
        })
        .collect()
}

/// One CPU's use over a window, as shares of its time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuLoad {
    pub cpu: u32,
    /// Running something (not idle, not stolen), 0–1.
    pub busy: f64,
    /// Taken by the hypervisor, 0–1.
    pub steal: f64,
}

/// Use of each CPU of `cpus` between two snapshots (CPUs missing from either, or with no
/// ticks in between, are left out).
pub fn load_between(a: &[CpuTimes], b: &[CpuTimes], cpus: &CpuSet) -> Vec<CpuLoad> {
    b.iter()
        .filter(|t| cpus.contains(t.cpu))
        .filter_map(|t1| {
            let t0 = a.iter().find(|t| t.cpu == t1.cpu)?;
            let d = |x1: u64, x0: u64| x1.saturating_sub(x0) as f64;
            let (busy, idle, steal) = (
                d(t1.busy, t0.busy),
                d(t1.idle, t0.idle),
                d(t1.steal, t0.steal),
            );
            let total = busy + idle + steal;
            (total > 0.0).then(|| CpuLoad {
                cpu: t1.cpu,
                busy: busy / total,
                steal: steal / total,
            })
        })
        .collect()
}

/// The hypervisor's share (steal) of `cpus`' time between two snapshots, 0–1; None when
/// none of them ticked.
pub fn steal_share(a: &[CpuTimes], b: &[CpuTimes], cpus: &CpuSet) -> Option<f64> {
    let (mut steal, mut total) = (0u64, 0u64);
    for t1 in b.iter().filter(|t| cpus.contains(t.cpu)) {
        if let Some(t0) = a.iter().find(|t| t.cpu == t1.cpu) {
            let s = t1.steal.saturating_sub(t0.steal);
            steal = steal.saturating_add(s);
            total = total
                .saturating_add(t1.busy.saturating_sub(t0.busy))
                .saturating_add(t1.idle.saturating_sub(t0.idle))
                .saturating_add(s);
        }
    }
    (total > 0).then(|| steal as f64 / total as f64)
}

/// The per-CPU times now, from `/proc/stat`; None when it cannot be read.
pub fn read_times() -> Option<Vec<CpuTimes>> {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .map(|t| parse_proc_stat(&t))
}

/// Notes for results whose runs lost more than [`STEAL_WARN`] of their CPUs to the
/// hypervisor: `what` names the runs, `steal` holds each run's share.
pub fn steal_note(what: &str, steal: impl IntoIterator<Item = Option<f64>>) -> Option<String> {
    let worst = steal.into_iter().flatten().fold(0.0f64, f64::max);
    (worst > STEAL_WARN).then(|| {
        format!(
            "the hypervisor took up to {:.0} % of the measured CPUs' time during {what} (steal): \
             the host was short of CPU, and these numbers include its other guests",
            worst * 100.0
        )
    })
}

/// A measured CPU busier than this before a run is worth a warning.
pub const BUSY_WARN: f64 = 0.10;
/// Steal above this means the host is short of CPU for this guest.
pub const STEAL_WARN: f64 = 0.05;

/// Plain-words warnings for the CPUs in `loads` over the thresholds (empty when quiet).
pub fn warnings(loads: &[CpuLoad], window: Duration) -> Vec<String> {
    let secs = window.as_secs_f64();
    let mut out = Vec::new();
    let busy: Vec<&CpuLoad> = loads.iter().filter(|l| l.busy > BUSY_WARN).collect();
    if !busy.is_empty() {
        out.push(format!(
            "other work was running on CPU{} {} in the {secs:.2} s before the run ({}): its \
             interference is part of these results",
            if busy.len() == 1 { "" } else { "s" },
            busy.iter().map(|l| l.cpu).collect::<CpuSet>(),
            busy.iter()
                .map(|l| format!("CPU {} {:.0} % busy", l.cpu, l.busy * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let stolen: Vec<&CpuLoad> = loads.iter().filter(|l| l.steal > STEAL_WARN).collect();
    if !stolen.is_empty() {
        out.push(format!(
            "the hypervisor took {} in the {secs:.2} s before the run (steal time): the host is \
             short of CPU, and these results include its other guests",
            stolen
                .iter()
                .map(|l| format!("{:.0} % of CPU {}", l.steal * 100.0, l.cpu))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    out
}

/// How long [`preflight`] watches the CPUs.
pub const PREFLIGHT_WINDOW: Duration = Duration::from_millis(250);

/// Watches `cpus` for [`PREFLIGHT_WINDOW`] and returns the warnings, also printed on
/// stderr (prefixed `warning:`).
pub fn preflight(cpus: &CpuSet) -> Vec<String> {
    let w = check(cpus);
    for line in &w {
        crate::say!("warning: {line}");
    }
    w
}

/// [`preflight`] without printing. Empty when `/proc/stat` cannot be read.
pub fn check(cpus: &CpuSet) -> Vec<String> {
    let Some(a) = read_times() else {
        return Vec::new();
    };
    std::thread::sleep(PREFLIGHT_WINDOW);
    let Some(b) = read_times() else {
        return Vec::new();
    };
    warnings(&load_between(&a, &b, cpus), PREFLIGHT_WINDOW)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  300 0 30 1000 10 0 0 0 0 0\n\
        cpu0 100 0 10 500 5 0 0 0 0 0\n\
        cpu1 200 0 20 500 5 0 0 0 0 0\n\
        intr 12345\n";
    // CPU 0: 10 busy of 100 ticks; CPU 1: 50 busy, 10 stolen of 100.
    const AFTER: &str = "cpu  360 0 30 1130 10 0 0 10 0 0\n\
        cpu0 108 0 12 590 5 0 0 0 0 0\n\
        cpu1 240 0 30 540 5 0 0 10 0 0\n";

    #[test]
    fn parses_per_cpu_lines_only() {
        let t = parse_proc_stat(BEFORE);
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[1],
            CpuTimes {
                cpu: 1,
                busy: 220,
                idle: 505,
                steal: 0
            }
        );
        // Old kernels with only four fields still parse.
        assert_eq!(parse_proc_stat("cpu3 1 2 3 4\n")[0].busy, 6);
        assert!(parse_proc_stat("cpuX 1 2 3 4\ncpu0 1 2\n").is_empty());
    }

    #[test]
    fn load_is_a_share_of_each_cpus_ticks() {
        let l = load_between(
            &parse_proc_stat(BEFORE),
            &parse_proc_stat(AFTER),
            &CpuSet::from_cpus([0, 1]),
        );
        assert_eq!(l.len(), 2);
        assert!((l[0].busy - 0.1).abs() < 1e-9, "{l:?}");
        assert!((l[1].busy - 0.5).abs() < 1e-9 && (l[1].steal - 0.1).abs() < 1e-9);
        // Only the CPUs asked about.
        let one = load_between(
            &parse_proc_stat(BEFORE),
            &parse_proc_stat(AFTER),
            &CpuSet::from_cpus([1]),
        );
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn steal_is_summed_over_the_cpus_asked_about() {
        let (a, b) = (parse_proc_stat(BEFORE), parse_proc_stat(AFTER));
        // CPU 1 alone: 10 of 100 ticks; both CPUs: 10 of 200.
        assert_eq!(steal_share(&a, &b, &CpuSet::from_cpus([1])), Some(0.1));
        assert_eq!(steal_share(&a, &b, &CpuSet::from_cpus([0, 1])), Some(0.05));
        assert_eq!(
            steal_share(&a, &a, &CpuSet::from_cpus([0])),
            None,
            "no ticks"
        );
        assert!(steal_note("runs", [Some(0.01), None]).is_none());
        let n = steal_note("lockscan's runs", [Some(0.01), Some(0.12)]).unwrap();
        assert!(
            n.contains("up to 12 %") && n.contains("lockscan's runs"),
            "{n}"
        );
    }

    #[test]
    fn warns_about_busy_and_stolen_cpus_only() {
        let quiet = [CpuLoad {
            cpu: 0,
            busy: 0.02,
            steal: 0.0,
        }];
        assert!(warnings(&quiet, PREFLIGHT_WINDOW).is_empty());
        let loud = [
            CpuLoad {
                cpu: 0,
                busy: 0.02,
                steal: 0.0,
            },
            CpuLoad {
                cpu: 1,
                busy: 0.5,
                steal: 0.1,
            },
        ];
        let w = warnings(&loud, PREFLIGHT_WINDOW);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("CPU 1 50 % busy") && !w[0].contains("CPU 0"),
            "{w:?}"
        );
        assert!(
            w[1].contains("10 % of CPU 1") && w[1].contains("steal"),
            "{w:?}"
        );
    }
}
