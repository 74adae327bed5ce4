//! Where the threads of each scenario go on this topology: the layout turned into lock and
//! scan CPUs, or the reason it cannot be.

use super::config::Layout;
use crate::cpuset::CpuSet;
use crate::error::{BadInput, NotPossible};
use crate::placement::{Plan, ScopeUnit, ThreadPlacement};
use crate::topology::Topology;
use anyhow::Result;
use serde::{Deserialize, Serialize};

/// Who runs where in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Short name: `baseline (no scanner)`, `default`, `explicit`, `scanner on 3 (sibling of 1)`, …
    pub label: String,
    /// One lock thread per CPU listed (in order).
    pub lock_cpus: Vec<u32>,
    /// One scan thread per CPU listed.
    pub scan_cpus: Vec<u32>,
}

impl Scenario {
    /// The engine plan: lock threads first, then scan threads, each pinned to one CPU.
    pub fn plan(&self) -> Plan {
        let threads = self
            .lock_cpus
            .iter()
            .chain(&self.scan_cpus)
            .enumerate()
            .map(|(thread, &c)| ThreadPlacement {
                thread,
                cpus: CpuSet::from_cpus([c]),
            })
            .collect::<Vec<_>>();
        let cpus: CpuSet = self
            .lock_cpus
            .iter()
            .chain(&self.scan_cpus)
            .copied()
            .collect();
        Plan {
            request: format!(
                "lock {} / scan {}",
                list(&self.lock_cpus),
                list(&self.scan_cpus)
            ),
            oversubscribed: cpus.len() < threads.len(),
            threads,
            notes: Vec::new(),
            scope: None,
        }
    }
}

impl Scenario {
    /// The scanners' one-per-core run: the same scanners with the lock threads of their
    /// cores left out (the lock threads on other cores still run). None without a scanner
    /// beside a lock thread, and without SMT, where a scanner can only time-share a lock
    /// thread's CPU (the scheduler's split, which HT does not change).
    pub fn scanner_alone(&self, topo: &Topology) -> Option<Scenario> {
        if topo.threads_per_core() < 2 {
            return None;
        }
        let scan: CpuSet = self.scan_cpus.iter().copied().collect();
        let lock_cpus: Vec<u32> = self
            .lock_cpus
            .iter()
            .copied()
            .filter(|&c| !topo.core_of(c).intersects(&scan))
            .collect();
        (lock_cpus.len() < self.lock_cpus.len()).then(|| Scenario {
            label: format!("{}, its core's lock thread left out", self.label),
            lock_cpus,
            scan_cpus: self.scan_cpus.clone(),
        })
    }
}

fn list(v: &[u32]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    }
}

/// Builds the scenarios for a layout on this topology, or says why it cannot.
pub fn scenarios(topo: &Topology, layout: &Layout, baseline: bool) -> Result<Vec<Scenario>> {
    let mut out = match layout {
        Layout::ScannerOnLowest => vec![scanner_on_lowest(topo)?],
        Layout::Explicit { lock, scan } => {
            check_usable(topo, lock, "lock")?;
            check_usable(topo, scan, "scan")?;
            if lock.is_empty() {
                return Err(BadInput(
                    "no lock threads: --lock-cpus (or -l) selects no CPU; give at least one, e.g. --lock-cpus 0".into(),
                )
                .into());
            }
            vec![Scenario {
                label: "explicit".into(),
                lock_cpus: lock.to_vec(),
                scan_cpus: scan.to_vec(),
            }]
        }
        Layout::Sweep(within) => sweep(topo, *within)?,
    };
    if baseline {
        let first = out[0].clone();
        out.insert(
            0,
            Scenario {
                label: "baseline (no scanner)".into(),
                lock_cpus: first.lock_cpus,
                scan_cpus: Vec::new(),
            },
        );
    }
    Ok(out)
}

/// The original test's layout: the scanner on the lowest usable CPU, lock threads on the
/// rest.
fn scanner_on_lowest(topo: &Topology) -> Result<Scenario> {
    let allowed = topo.allowed();
    let scan = allowed
        .first()
        .ok_or_else(|| BadInput("no usable CPU".into()))?;
    let lock: Vec<u32> = allowed.iter().filter(|&c| c != scan).collect();
    if lock.is_empty() {
        return Err(NotPossible(format!(
            "the default layout needs at least 2 usable CPUs (one scanner, the rest lock threads), but this process may use only CPU {scan}; pass --lock-cpus/--scan-cpus to share it"
        ))
        .into());
    }
    Ok(Scenario {
        label: "default".into(),
        lock_cpus: lock,
        scan_cpus: vec![scan],
    })
}

/// One scenario per scanner position inside one unit of `within`.
fn sweep(topo: &Topology, within: crate::placement::Scope) -> Result<Vec<Scenario>> {
    let (_, cores) = crate::placement::scoped_cores(topo, within);
    if cores.iter().any(|c| c.len() >= 2) {
        // Lock threads on the first sibling of every core with two or more; the scanner
        // visits each of those cores' second sibling.
        let pairs: Vec<(u32, u32)> = cores
            .iter()
            .filter_map(|c| {
                let mut it = c.iter();
                Some((it.next()?, it.next()?))
            })
            .collect();
        let lock: Vec<u32> = pairs.iter().map(|&(first, _)| first).collect();
        return Ok(pairs
            .iter()
            .map(|&(first, sib)| Scenario {
                label: format!("scanner on {sib} (sibling of {first})"),
                lock_cpus: lock.clone(),
                scan_cpus: vec![sib],
            })
            .collect());
    }
    // Without SMT the scanner can only share a core by time-sharing a CPU with a lock
    // thread; every other lock thread sees it cross-core.
    let lock: Vec<u32> = cores.iter().filter_map(|c| c.first()).collect();
    if lock.is_empty() {
        return Err(BadInput("no usable CPU".into()).into());
    }
    Ok(lock
        .iter()
        .map(|&c| Scenario {
            label: format!("scanner on {c} (time-shares CPU {c})"),
            lock_cpus: lock.clone(),
            scan_cpus: vec![c],
        })
        .collect())
}

fn check_usable(topo: &Topology, set: &CpuSet, what: &str) -> Result<()> {
    let allowed = topo.allowed();
    let bad = set.difference(&allowed);
    if bad.is_empty() {
        return Ok(());
    }
    let offline: CpuSet = topo
        .cpus
        .iter()
        .filter(|c| !c.online)
        .map(|c| c.cpu)
        .collect();
    let why = if bad.intersects(&offline) {
        "offline"
    } else if topo.cpu(bad.first().expect("non-empty")).is_none() {
        "not on this machine"
    } else {
        "outside this process's affinity/cgroup"
    };
    Err(BadInput(format!(
        "{what} CPUs {bad} are {why}; usable CPUs: {allowed}"
    ))
    .into())
}

/// The unit a sweep stays inside, for the report.
pub fn sweep_scope(topo: &Topology, layout: &Layout) -> Option<ScopeUnit> {
    match layout {
        Layout::Sweep(within) => Some(crate::placement::scoped_cores(topo, *within).0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::Scope;
    use crate::topology::fixture::topology;

    #[test]
    fn the_default_layout_scans_on_the_lowest_cpu() {
        // As the original test computes it: lock = mask & (mask - 1), scan = the lowest bit.
        let mask = 0b1111u32;
        assert_eq!(mask & (mask - 1), 0b1110);
        let s = &scenarios(&topology(4, 1, false), &Layout::ScannerOnLowest, false).unwrap()[0];
        assert_eq!(
            (s.lock_cpus.as_slice(), s.scan_cpus.as_slice()),
            (&[1, 2, 3][..], &[0][..])
        );
        let p = s.plan();
        assert_eq!(p.threads.len(), 4);
        assert_eq!(p.threads[3].cpus.to_vec(), [0]);
        assert!(!p.oversubscribed);
    }

    #[test]
    fn a_sweep_visits_each_sibling_after_a_baseline() {
        // 2 cores × 2 siblings: CPU i and i + 2 share a core.
        let s = scenarios(&topology(2, 2, false), &Layout::Sweep(Scope::Package), true).unwrap();
        let got: Vec<(&str, &[u32], &[u32])> = s
            .iter()
            .map(|s| (s.label.as_str(), &s.lock_cpus[..], &s.scan_cpus[..]))
            .collect();
        assert_eq!(
            got,
            [
                ("baseline (no scanner)", &[0, 1][..], &[][..]),
                ("scanner on 2 (sibling of 0)", &[0, 1][..], &[2][..]),
                ("scanner on 3 (sibling of 1)", &[0, 1][..], &[3][..]),
            ]
        );
    }

    #[test]
    fn without_smt_the_sweep_time_shares_each_cpu() {
        let s = scenarios(
            &topology(2, 1, false),
            &Layout::Sweep(Scope::Package),
            false,
        )
        .unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].label, "scanner on 1 (time-shares CPU 1)");
        assert_eq!(
            (&s[1].lock_cpus[..], &s[1].scan_cpus[..]),
            (&[0, 1][..], &[1][..])
        );
        // Scanner and lock thread on one CPU: more threads than CPUs.
        assert!(s[1].plan().oversubscribed);
    }

    #[test]
    fn a_scanners_one_per_core_run_leaves_out_its_cores_lock_threads() {
        // 2 cores × 2 siblings: the scanner on 2 shares core {0, 2} with lock thread 0.
        let topo = topology(2, 2, false);
        let s = scenarios(&topo, &Layout::Sweep(Scope::Package), true).unwrap();
        assert_eq!(
            s[0].scanner_alone(&topo),
            None,
            "the baseline has no scanner"
        );
        let a = s[1].scanner_alone(&topo).unwrap();
        assert_eq!((&a.lock_cpus[..], &a.scan_cpus[..]), (&[1][..], &[2][..]));
        assert!(
            a.label.ends_with("its core's lock thread left out"),
            "{}",
            a.label
        );
        // Without SMT a scanner only time-shares a CPU: no one-per-core run of its own.
        let flat = topology(2, 1, false);
        let s = scenarios(&flat, &Layout::Sweep(Scope::Package), true).unwrap();
        assert_eq!(s[1].scanner_alone(&flat), None);
    }

    #[test]
    fn explicit_cpus_must_be_usable_and_name_a_lock_cpu() {
        let topo = topology(2, 1, false);
        let bad = Layout::Explicit {
            lock: CpuSet::from_cpus([0, 7]),
            scan: CpuSet::from_cpus([1]),
        };
        let e = scenarios(&topo, &bad, false).unwrap_err().to_string();
        assert!(e.contains("lock CPUs 7 are not on this machine"), "{e}");
        let none = Layout::Explicit {
            lock: CpuSet::new(),
            scan: CpuSet::from_cpus([1]),
        };
        let e = scenarios(&topo, &none, false).unwrap_err().to_string();
        assert!(e.contains("selects no CPU"), "{e}");
    }
}
