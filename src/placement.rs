//! The placement planner: from a topology and a request, the CPUs each thread may run on.
//! Pure: no syscalls; the engine applies a plan.
//!
//! **Spreading order.** Requests that choose cores walk them in *spread order*: first core
//! of package 0, first core of package 1, …, then the next last-level-cache group of each
//! package, then the next core of each group. Consecutive threads therefore land on
//! different packages first, then different L3s, then different cores, as Linux's
//! scheduler and `hwloc-distrib` spread load. Within a core, siblings are taken in OS-number
//! order. Only online CPUs this process may use are ever chosen.

use crate::cpuset::CpuSet;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What the caller asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "cpus")]
pub enum Request {
    /// One thread per core, the first allowed sibling of each: the SMT-off equivalent.
    OnePerCore,
    /// Threads in pairs on both siblings of a core: N threads on N/2 cores (SMT on).
    Pairs,
    /// One thread per allowed logical CPU, cores' first siblings first, then the second.
    All,
    /// All threads on the siblings of one core.
    SameCore,
    /// Threads on distinct cores sharing one last-level cache.
    SameL3,
    /// Each thread in a different last-level-cache group.
    OtherL3,
    /// Each thread in a different package.
    OtherPackage,
    /// Each thread on the SMT sibling(s) of the listed CPUs, in turn.
    SiblingsOf(CpuSet),
    /// Each thread on the listed CPUs, in turn.
    Cpus(CpuSet),
    /// Not pinned: every thread may use every allowed CPU; the OS decides.
    Os,
}

/// The request names accepted on the command line.
pub const REQUEST_NAMES: &str = "one-per-core, pairs, all, same-core, same-l3, other-l3, other-package, siblings-of:LIST, cpus:LIST, os";

impl Request {
    /// Parses `one-per-core`, `pairs`, …, `siblings-of:0,2` / `siblings-of=0,2`, `cpus:0-3`.
    /// A bare CPU list or `0x` mask is taken as `cpus:LIST`.
    pub fn parse(s: &str) -> Result<Self, PlanError> {
        let t = s.trim();
        let (name, arg) = match t.split_once([':', '=', ' ']) {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (t, None),
        };
        let list = |a: Option<&str>| -> Result<CpuSet, PlanError> {
            let a = a.ok_or_else(|| PlanError::BadRequest {
                request: s.to_string(),
                reason: format!("`{name}` needs a CPU list, as in `{name}:0,2`"),
            })?;
            let set = CpuSet::parse_user(a).map_err(|e| PlanError::BadRequest {
                request: s.to_string(),
                reason: e.to_string(),
            })?;
            if set.is_empty() {
                return Err(PlanError::BadRequest {
                    request: s.to_string(),
                    reason: "the CPU list is empty".into(),
                });
            }
            Ok(set)
        };
        let simple = |r: Request| -> Result<Request, PlanError> {
            match arg {
                Some(a) if !a.is_empty() => Err(PlanError::BadRequest {
                    request: s.to_string(),
                    reason: format!("`{name}` takes no argument"),
                }),
                _ => Ok(r),
            }
        };
        match name {
            "one-per-core" => simple(Request::OnePerCore),
            "pairs" => simple(Request::Pairs),
            "all" => simple(Request::All),
            "same-core" => simple(Request::SameCore),
            "same-l3" => simple(Request::SameL3),
            "other-l3" => simple(Request::OtherL3),
            "other-package" => simple(Request::OtherPackage),
            "os" => simple(Request::Os),
            "siblings-of" => Ok(Request::SiblingsOf(list(arg)?)),
            "cpus" => Ok(Request::Cpus(list(arg)?)),
            _ if t.starts_with(|c: char| c.is_ascii_digit()) => Ok(Request::Cpus(list(Some(t))?)),
            _ => Err(PlanError::BadRequest {
                request: s.to_string(),
                reason: format!("unknown placement; valid: {REQUEST_NAMES}"),
            }),
        }
    }

    /// Whether the request only makes sense with SMT siblings.
    pub fn needs_smt(&self) -> bool {
        matches!(
            self,
            Request::Pairs | Request::SameCore | Request::SiblingsOf(_)
        )
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::OnePerCore => f.write_str("one-per-core"),
            Request::Pairs => f.write_str("pairs"),
            Request::All => f.write_str("all"),
            Request::SameCore => f.write_str("same-core"),
            Request::SameL3 => f.write_str("same-l3"),
            Request::OtherL3 => f.write_str("other-l3"),
            Request::OtherPackage => f.write_str("other-package"),
            Request::SiblingsOf(s) => write!(f, "siblings-of:{s}"),
            Request::Cpus(s) => write!(f, "cpus:{s}"),
            Request::Os => f.write_str("os"),
        }
    }
}

/// Why a plan cannot be made on this machine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The machine shows no SMT siblings; callers skip sibling experiments on this.
    #[error(
        "`{request}` needs SMT siblings, but this machine shows none (1 thread per core){hint}"
    )]
    NoSmt { request: String, hint: String },
    #[error(
        "`{request}` with {threads} threads needs {need} {what}, but only {have} are usable here"
    )]
    NotEnough {
        request: String,
        threads: usize,
        need: usize,
        have: usize,
        what: &'static str,
    },
    #[error("CPU{} {cpus} not usable here (usable: {allowed}){why}", if .cpus.len() > 1 { "s" } else { "" })]
    NotAllowed {
        cpus: CpuSet,
        allowed: CpuSet,
        why: String,
    },
    #[error("--threads must be at least 1 (got 0)")]
    ZeroThreads,
    #[error("invalid placement `{request}`: {reason}")]
    BadRequest { request: String, reason: String },
}

/// Where one thread may run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadPlacement {
    /// Thread index, from 0.
    pub thread: usize,
    /// CPUs it is pinned to (one CPU, or the whole allowed set for `os`).
    pub cpus: CpuSet,
}

/// A placement for every thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The request, as text.
    pub request: String,
    /// One entry per thread.
    pub threads: Vec<ThreadPlacement>,
    /// True when some CPU carries more than one thread.
    pub oversubscribed: bool,
    /// Facts the user should know (spreading, wrap-around).
    pub notes: Vec<String>,
}

impl Plan {
    /// Union of all threads' CPUs.
    pub fn cpus(&self) -> CpuSet {
        self.threads
            .iter()
            .fold(CpuSet::new(), |a, t| a.union(&t.cpus))
    }
}

/// Cores in spread order (see the module docs), each as its allowed siblings.
pub fn spread_cores(topo: &Topology) -> Vec<CpuSet> {
    let allowed = topo.allowed();
    let cores: Vec<CpuSet> = topo
        .cores()
        .into_iter()
        .map(|c| c.intersection(&allowed))
        .filter(|c| !c.is_empty())
        .collect();
    // package → llc group → cores
    let llcs = topo.llc_groups();
    let mut tree: Vec<Vec<Vec<CpuSet>>> = Vec::new();
    for p in topo.packages() {
        let mut groups: Vec<Vec<CpuSet>> = Vec::new();
        for g in llcs.iter().filter(|g| g.intersects(&p)) {
            let members: Vec<CpuSet> = cores
                .iter()
                .filter(|c| c.first().is_some_and(|f| g.contains(f) && p.contains(f)))
                .cloned()
                .collect();
            if !members.is_empty() {
                groups.push(members);
            }
        }
        if !groups.is_empty() {
            tree.push(groups);
        }
    }
    // Cores the tree missed (no package info): append in order.
    let placed: CpuSet = tree
        .iter()
        .flatten()
        .flatten()
        .fold(CpuSet::new(), |a, c| a.union(c));
    let loose: Vec<CpuSet> = cores
        .iter()
        .filter(|c| !c.is_subset(&placed))
        .cloned()
        .collect();
    if !loose.is_empty() {
        tree.push(vec![loose]);
    }
    // Round-robin: core index within group, group index within package, package.
    let max_groups = tree.iter().map(Vec::len).max().unwrap_or(0);
    let max_cores = tree.iter().flatten().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(cores.len());
    for ci in 0..max_cores {
        for gi in 0..max_groups {
            for pkg in &tree {
                if let Some(c) = pkg.get(gi).and_then(|g| g.get(ci)) {
                    out.push(c.clone());
                }
            }
        }
    }
    out
}

/// Makes a plan for `threads` threads.
pub fn plan(topo: &Topology, request: &Request, threads: usize) -> Result<Plan, PlanError> {
    if threads == 0 {
        return Err(PlanError::ZeroThreads);
    }
    let allowed = topo.allowed();
    let cores = spread_cores(topo);
    let name = request.to_string();
    let smt_cores: Vec<&CpuSet> = cores.iter().filter(|c| c.len() >= 2).collect();
    let no_smt = |hint: &str| PlanError::NoSmt {
        request: name.clone(),
        hint: hint.to_string(),
    };
    let not_enough = |need: usize, have: usize, what: &'static str| PlanError::NotEnough {
        request: name.clone(),
        threads,
        need,
        have,
        what,
    };
    let one = |c: u32| CpuSet::from_cpus([c]);
    let mut notes = Vec::new();
    let cpus: Vec<CpuSet> = match request {
        Request::OnePerCore => {
            if threads > cores.len() {
                return Err(not_enough(threads, cores.len(), "cores"));
            }
            cores
                .iter()
                .take(threads)
                .map(|c| one(c.first().expect("non-empty")))
                .collect()
        }
        Request::Pairs => {
            if smt_cores.is_empty() {
                return Err(no_smt(": use one-per-core for the SMT-off layout"));
            }
            let need = threads.div_ceil(2);
            if need > smt_cores.len() {
                return Err(not_enough(
                    need,
                    smt_cores.len(),
                    "cores with 2 usable siblings",
                ));
            }
            if threads % 2 == 1 {
                notes.push(format!(
                    "odd thread count: thread {} has its core to itself",
                    threads - 1
                ));
            }
            (0..threads)
                .map(|i| one(smt_cores[i / 2].iter().nth(i % 2).expect("2 siblings")))
                .collect()
        }
        Request::All => {
            let max_t = cores.iter().map(CpuSet::len).max().unwrap_or(1);
            let order: Vec<u32> = (0..max_t)
                .flat_map(|k| cores.iter().filter_map(move |c| c.iter().nth(k)))
                .collect();
            if threads > order.len() {
                notes.push(format!(
                    "{threads} threads on {} CPUs: threads wrap around, CPUs carry several",
                    order.len()
                ));
            }
            (0..threads).map(|i| one(order[i % order.len()])).collect()
        }
        Request::SameCore => {
            if threads == 1 {
                vec![one(cores[0].first().expect("non-empty"))]
            } else {
                // The first core in spread order among those with the most siblings
                // (`max_by_key` would return the last one).
                let Some(best) = cores
                    .iter()
                    .min_by_key(|c| std::cmp::Reverse(c.len()))
                    .filter(|c| c.len() >= 2)
                else {
                    return Err(no_smt(""));
                };
                if threads > best.len() {
                    return Err(not_enough(threads, best.len(), "siblings on one core"));
                }
                best.iter().take(threads).map(one).collect()
            }
        }
        Request::SameL3 => {
            let groups = llc_core_groups(topo, &cores);
            let Some(g) = groups.iter().find(|g| g.len() >= threads) else {
                let have = groups.iter().map(Vec::len).max().unwrap_or(0);
                return Err(not_enough(threads, have, "cores in one last-level cache"));
            };
            g.iter()
                .take(threads)
                .map(|c| one(c.first().expect("non-empty")))
                .collect()
        }
        Request::OtherL3 => {
            let groups = llc_core_groups(topo, &cores);
            if groups.len() < threads.max(2) {
                return Err(not_enough(
                    threads.max(2),
                    groups.len(),
                    "last-level caches",
                ));
            }
            groups
                .iter()
                .take(threads)
                .map(|g| one(g[0].first().expect("non-empty")))
                .collect()
        }
        Request::OtherPackage => {
            let pkgs: Vec<CpuSet> = topo
                .packages()
                .into_iter()
                .map(|p| p.intersection(&allowed))
                .filter(|p| !p.is_empty())
                .collect();
            if pkgs.len() < threads.max(2) {
                return Err(not_enough(threads.max(2), pkgs.len(), "packages"));
            }
            pkgs.iter()
                .take(threads)
                .map(|p| {
                    // The first core of the package in spread order.
                    let c = cores
                        .iter()
                        .find(|c| c.is_subset(p))
                        .and_then(CpuSet::first)
                        .unwrap_or_else(|| p.first().expect("non-empty"));
                    one(c)
                })
                .collect()
        }
        Request::SiblingsOf(list) => {
            check_allowed(topo, list)?;
            if smt_cores.is_empty() {
                return Err(no_smt(""));
            }
            let mut sibs = Vec::new();
            for c in list.iter() {
                let s = topo.core_of(c).intersection(&allowed);
                let others = s.difference(&one(c));
                if others.is_empty() {
                    return Err(PlanError::NotEnough {
                        request: name.clone(),
                        threads,
                        need: 1,
                        have: 0,
                        what: if s.len() < topo.core_of(c).len() {
                            "usable siblings of that CPU"
                        } else {
                            "SMT siblings of that CPU"
                        },
                    });
                }
                sibs.extend(others.iter());
            }
            (0..threads).map(|i| one(sibs[i % sibs.len()])).collect()
        }
        Request::Cpus(list) => {
            check_allowed(topo, list)?;
            let v = list.to_vec();
            if threads > v.len() {
                notes.push(format!(
                    "{threads} threads on {} listed CPUs: threads wrap around",
                    v.len()
                ));
            }
            (0..threads).map(|i| one(v[i % v.len()])).collect()
        }
        Request::Os => (0..threads).map(|_| allowed.clone()).collect(),
    };
    let mut seen = CpuSet::new();
    let mut oversubscribed = false;
    if *request != Request::Os {
        for s in &cpus {
            for c in s.iter() {
                if !seen.insert(c) {
                    oversubscribed = true;
                }
            }
        }
    } else {
        oversubscribed = threads > allowed.len();
    }
    Ok(Plan {
        request: name,
        threads: cpus
            .into_iter()
            .enumerate()
            .map(|(thread, cpus)| ThreadPlacement { thread, cpus })
            .collect(),
        oversubscribed,
        notes,
    })
}

/// Cores grouped by last-level cache, each group in spread order, groups in spread order.
fn llc_core_groups(topo: &Topology, cores: &[CpuSet]) -> Vec<Vec<CpuSet>> {
    let mut groups: Vec<(CpuSet, Vec<CpuSet>)> = topo
        .llc_groups()
        .into_iter()
        .map(|g| (g, Vec::new()))
        .collect();
    for c in cores {
        if let Some(f) = c.first()
            && let Some((_, v)) = groups.iter_mut().find(|(g, _)| g.contains(f))
        {
            v.push(c.clone());
        }
    }
    let mut out: Vec<Vec<CpuSet>> = groups
        .into_iter()
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
        .collect();
    // Spread order of groups: by position of their first core in `cores`.
    out.sort_by_key(|v| cores.iter().position(|c| *c == v[0]));
    out
}

fn check_allowed(topo: &Topology, list: &CpuSet) -> Result<(), PlanError> {
    let allowed = topo.allowed();
    let bad = list.difference(&allowed);
    if bad.is_empty() {
        return Ok(());
    }
    let known: CpuSet = topo.cpus.iter().map(|c| c.cpu).collect();
    let offline: CpuSet = topo
        .cpus
        .iter()
        .filter(|c| !c.online)
        .map(|c| c.cpu)
        .collect();
    let why = if !bad.is_subset(&known) {
        format!(": this machine has CPUs {known} only")
    } else if bad.intersects(&offline) {
        ": offline".to_string()
    } else {
        ": outside this process's affinity/cgroup".to_string()
    };
    Err(PlanError::NotAllowed {
        cpus: bad,
        allowed,
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_requests() {
        assert_eq!(Request::parse("pairs").unwrap(), Request::Pairs);
        assert_eq!(
            Request::parse("siblings-of:0,2").unwrap(),
            Request::SiblingsOf(CpuSet::from_cpus([0, 2]))
        );
        assert_eq!(
            Request::parse("0-3").unwrap(),
            Request::Cpus(CpuSet::from_cpus([0, 1, 2, 3]))
        );
        let e = Request::parse("bogus").unwrap_err().to_string();
        assert!(e.contains("bogus") && e.contains("one-per-core"), "{e}");
        assert!(Request::parse("cpus").is_err());
        assert!(Request::parse("pairs:3").is_err());
        for r in [
            "one-per-core",
            "pairs",
            "all",
            "os",
            "cpus:1-2",
            "siblings-of:4",
        ] {
            assert_eq!(Request::parse(r).unwrap().to_string(), r);
        }
    }
}
