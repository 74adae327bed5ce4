//! The placement planner: from a topology and a request, the CPUs each thread may run on.
//! Pure: no syscalls; the engine applies a plan.
//!
//! **Scope.** The comparison layouts (`one-per-core`, `pairs`, `all`, `spread`, `same-core`,
//! `same-l3`) stay inside one *scope unit*: by default one package, and on hybrid machines
//! one core kind of that package. An SMT comparison whose layouts also differ in package
//! (cross-socket cache-line traffic, remote NUMA memory) or in core kind (P- vs E-cores)
//! measures those differences too, so its ratio says nothing about SMT. `Scope::Machine`
//! lifts the limit. Requests that name CPUs (`cpus`, `siblings-of`), `os`, and the
//! requests that are *about* crossing units (`other-l3`, `other-package`) are not scoped.
//!
//! **Spreading order.** Requests that choose cores walk them in *spread order*: first core
//! of package 0, first core of package 1, …, then the next last-level-cache group of each
//! package, then the next core of each group. Consecutive threads therefore land on
//! different packages first, then different L3s, then different cores, as Linux's
//! scheduler and `hwloc-distrib` spread load. Within a core, siblings are taken in OS-number
//! order. Only online CPUs this process may use are ever chosen.

pub mod view;

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
    /// Threads in pairs on both siblings of a core: N threads on N/2 cores (SMT on, same
    /// thread count).
    Pairs,
    /// Every SMT sibling of the N cores `one-per-core` uses: N × threads-per-core threads
    /// (SMT on, same cores: "12 threads on 6 cores with HT"). Without SMT it is
    /// `one-per-core`.
    All,
    /// N threads, one per logical CPU: the first sibling of every core first, then the
    /// second, …; wraps around (oversubscribes) past the last CPU.
    Spread,
    /// All threads on the siblings of one core.
    SameCore,
    /// Threads on distinct cores sharing one last-level cache.
    SameL3,
    /// Each thread in a different last-level-cache group.
    OtherL3,
    /// Each thread in a different package.
    OtherPackage,
    /// Each thread on an SMT sibling of the listed CPUs' cores, never on a listed CPU;
    /// spread round-robin over those cores.
    SiblingsOf(CpuSet),
    /// Each thread on the listed CPUs, in turn.
    Cpus(CpuSet),
    /// Not pinned: every thread may use every allowed CPU; the OS decides.
    Os,
}

/// The request names accepted on the command line.
pub const REQUEST_NAMES: &str = "one-per-core, pairs, all, spread, same-core, same-l3, other-l3, other-package, siblings-of:LIST, cpus:LIST, os";

/// How far a scoped request may spread: which unit of the machine its CPUs stay inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// One package (socket), and one core kind of it on hybrid machines. The default.
    #[default]
    Package,
    /// One last-level-cache group (an AMD CCX, an Intel socket's L3), one core kind.
    L3,
    /// One NUMA node, one core kind.
    Node,
    /// The whole machine: every usable CPU, packages and kinds mixed.
    Machine,
}

/// The names `--within` accepts.
pub const SCOPE_NAMES: &str = "package, l3, node, machine";

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Package, Scope::L3, Scope::Node, Scope::Machine];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Package => "package",
            Scope::L3 => "l3",
            Scope::Node => "node",
            Scope::Machine => "machine",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        Scope::ALL
            .into_iter()
            .find(|x| x.name().eq_ignore_ascii_case(t) || (t == "socket" && *x == Scope::Package))
            .ok_or_else(|| format!("unknown scope `{t}`; valid: {SCOPE_NAMES}"))
    }
}

/// The unit a scoped plan stayed inside.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeUnit {
    /// The scope asked for.
    pub within: Scope,
    /// Human label, e.g. `package 0`, `package 0, P-core`, `L3 0-7`, `the whole machine`.
    pub label: String,
    /// The usable CPUs of the unit.
    pub cpus: CpuSet,
    /// How many units of this scope the machine has (1 = the scope changed nothing).
    pub units: usize,
}

/// The line saying which unit a scoped placement stayed inside, e.g. `within package 0
/// (CPUs 0-7; one of 2 such units here; --within machine uses them all)`.
impl std::fmt::Display for ScopeUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.within == Scope::Machine || self.units <= 1 {
            write!(f, "within {} (CPUs {})", self.label, self.cpus)
        } else {
            write!(
                f,
                "within {} (CPUs {}; one of {} such units here; --within machine uses them all)",
                self.label, self.cpus, self.units
            )
        }
    }
}

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
            // The CPU error quotes the list; the request is named, not quoted again.
            let set = CpuSet::parse_user(a).map_err(|e| PlanError::BadRequest {
                request: name.to_string(),
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
            "spread" => simple(Request::Spread),
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

    /// Whether the request stays inside one [`Scope`] unit.
    pub fn is_scoped(&self) -> bool {
        matches!(
            self,
            Request::OnePerCore
                | Request::Pairs
                | Request::All
                | Request::Spread
                | Request::SameCore
                | Request::SameL3
        )
    }

    /// Whether threads are pinned to single CPUs (everything but `os`).
    pub fn is_pinned(&self) -> bool {
        *self != Request::Os
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Request::OnePerCore => f.write_str("one-per-core"),
            Request::Pairs => f.write_str("pairs"),
            Request::All => f.write_str("all"),
            Request::Spread => f.write_str("spread"),
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

/// Why a plan cannot be made on this machine (defined with the other error classes, which
/// give it its exit code).
pub use crate::error::PlanError;

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
    /// One entry per thread. `all` may place more threads than were asked for (every
    /// sibling of the cores); its notes say so.
    pub threads: Vec<ThreadPlacement>,
    /// True when some CPU carries more than one thread.
    pub oversubscribed: bool,
    /// Facts the user should know (spreading, wrap-around).
    pub notes: Vec<String>,
    /// The unit a scoped request stayed inside; None for unscoped requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeUnit>,
}

/// What a placement tells the user besides its CPUs; kept in [`Plan::notes`] as its
/// sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// `pairs` with an odd thread count: the last thread, `alone`, has a core to itself.
    OddPairs { alone: usize },
    /// `all` placed `threads` threads: every sibling of the `cores` cores.
    AllSiblings { cores: usize, threads: usize },
    /// More threads than the `cpus` CPUs the request allows: threads share CPUs.
    Wraps {
        threads: usize,
        cpus: usize,
        over: WrapOver,
    },
    /// Any other text.
    Other(String),
}

/// Which CPUs a wrapping request went round.
#[derive(Debug, Clone, Copy)]
pub enum WrapOver {
    /// `spread`: every usable CPU, so CPUs carry several threads.
    Spread,
    /// `siblings-of:LIST`: the free SMT siblings of the listed CPUs.
    Siblings,
    /// `cpus:LIST`: the listed CPUs.
    Listed,
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::OddPairs { alone } => {
                write!(f, "odd thread count: thread {alone} has its core to itself")
            }
            Note::AllSiblings { cores, threads } => write!(
                f,
                "`all` runs {threads} threads: every SMT sibling of the {cores} cores \
                 `one-per-core` uses"
            ),
            Note::Wraps {
                threads,
                cpus,
                over,
            } => match over {
                WrapOver::Spread => write!(
                    f,
                    "{threads} threads on {cpus} CPUs: threads wrap around, CPUs carry several"
                ),
                WrapOver::Siblings => write!(
                    f,
                    "{threads} threads on {cpus} sibling CPUs: threads wrap around"
                ),
                WrapOver::Listed => {
                    write!(
                        f,
                        "{threads} threads on {cpus} listed CPUs: threads wrap around"
                    )
                }
            },
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
mod note_tests {
    use super::{Note, WrapOver};

    #[test]
    fn notes_say_the_sentences_the_planner_printed() {
        assert_eq!(
            Note::AllSiblings {
                cores: 2,
                threads: 4
            },
            "`all` runs 4 threads: every SMT sibling of the 2 cores `one-per-core` uses"
        );
        assert_eq!(
            Note::OddPairs { alone: 2 },
            "odd thread count: thread 2 has its core to itself"
        );
        let wraps = |over| Note::Wraps {
            threads: 5,
            cpus: 2,
            over,
        };
        assert_eq!(
            wraps(WrapOver::Spread),
            "5 threads on 2 CPUs: threads wrap around, CPUs carry several"
        );
        assert_eq!(
            wraps(WrapOver::Siblings),
            "5 threads on 2 sibling CPUs: threads wrap around"
        );
        assert_eq!(
            wraps(WrapOver::Listed),
            "5 threads on 2 listed CPUs: threads wrap around"
        );
    }
}

impl Plan {
    /// Union of all threads' CPUs.
    pub fn cpus(&self) -> CpuSet {
        self.threads
            .iter()
            .fold(CpuSet::new(), |a, t| a.union(&t.cpus))
    }
}

/// The units of `scope` as usable CPU sets with labels, best first. On hybrid machines
/// every unit but `machine` is split by core kind. Best = the most performant kind (hwloc
/// ranks kinds energy-efficient first, so the last kind), then the most cores with two or
/// more usable siblings, then the most cores, then the lowest CPU number, so that a
/// request picks the same unit whatever it asks for and layouts compared in one run share it.
pub fn scope_units(topo: &Topology, scope: Scope) -> Vec<ScopeUnit> {
    let allowed = topo.allowed();
    let label_pkg = |s: &CpuSet| {
        s.first()
            .and_then(|c| topo.cpu(c))
            .and_then(|c| c.package)
            .map_or_else(
                || format!("package of CPUs {s}"),
                |p| format!("package {p}"),
            )
    };
    let groups: Vec<(String, CpuSet)> = match scope {
        Scope::Machine => vec![("the whole machine".to_string(), allowed.clone())],
        Scope::Package => topo
            .packages()
            .into_iter()
            .map(|p| (label_pkg(&p), p))
            .collect(),
        Scope::L3 => {
            let level = topo.llc_level().unwrap_or(3);
            topo.llc_groups()
                .into_iter()
                .map(|g| (format!("L{level} of CPUs {g}"), g))
                .collect()
        }
        Scope::Node => topo
            .numa_nodes
            .iter()
            .map(|n| (format!("NUMA node {}", n.node), n.cpus.clone()))
            .collect(),
    };
    let mut groups: Vec<(String, CpuSet)> = groups
        .into_iter()
        .map(|(l, s)| (l, s.intersection(&allowed)))
        .filter(|(_, s)| !s.is_empty())
        .collect();
    // CPUs the kernel placed in no unit (missing package or node files) form one more, so
    // that no usable CPU is lost.
    let covered = groups.iter().fold(CpuSet::new(), |a, (_, s)| a.union(s));
    let loose = allowed.difference(&covered);
    if !loose.is_empty() {
        groups.push((format!("CPUs {loose} (no {scope} information)"), loose));
    }
    // Split by kind, except for the whole machine.
    let mut units: Vec<(Option<usize>, String, CpuSet)> = Vec::new();
    for (label, set) in groups {
        if scope == Scope::Machine || topo.kinds.len() < 2 {
            units.push((None, label, set));
            continue;
        }
        let mut rest = set.clone();
        for (k, kind) in topo.kinds.iter().enumerate() {
            let part = set.intersection(&kind.cpus);
            if !part.is_empty() {
                rest = rest.difference(&part);
                units.push((Some(k), format!("{label}, {}", kind.name), part));
            }
        }
        if !rest.is_empty() {
            units.push((None, format!("{label}, CPUs of no known kind"), rest));
        }
    }
    let cores = topo.cores();
    let count = |s: &CpuSet, min: usize| {
        cores
            .iter()
            .filter(|c| c.intersection(s).len() >= min)
            .count()
    };
    units.sort_by_key(|(kind, _, s)| {
        (
            std::cmp::Reverse(kind.map_or(0, |k| k + 1)),
            std::cmp::Reverse(count(s, 2)),
            std::cmp::Reverse(count(s, 1)),
            s.first(),
        )
    });
    let n = units.len();
    units
        .into_iter()
        .map(|(_, label, cpus)| ScopeUnit {
            within: scope,
            label,
            cpus,
            units: n,
        })
        .collect()
}

/// The unit scoped requests use (the first of [`scope_units`]), and its cores in spread
/// order. With no usable CPU at all the unit is empty.
pub fn scoped_cores(topo: &Topology, scope: Scope) -> (ScopeUnit, Vec<CpuSet>) {
    let unit = scope_units(topo, scope)
        .into_iter()
        .next()
        .unwrap_or_else(|| ScopeUnit {
            within: scope,
            label: "no usable CPU".into(),
            cpus: CpuSet::new(),
            units: 0,
        });
    let cores = spread_cores(topo)
        .into_iter()
        .map(|c| c.intersection(&unit.cpus))
        .filter(|c| !c.is_empty())
        .collect();
    (unit, cores)
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

/// Makes a plan for `threads` threads with the default scope (one package, one core kind).
pub fn plan(topo: &Topology, request: &Request, threads: usize) -> Result<Plan, PlanError> {
    plan_within(topo, request, threads, Scope::default())
}

/// Makes a plan for `threads` threads; scoped requests stay inside one unit of `scope`.
pub fn plan_within(
    topo: &Topology,
    request: &Request,
    threads: usize,
    scope: Scope,
) -> Result<Plan, PlanError> {
    if threads == 0 {
        return Err(PlanError::ZeroThreads);
    }
    let allowed = topo.allowed();
    let (unit, cores) = if request.is_scoped() {
        let (u, c) = scoped_cores(topo, scope);
        (Some(u), c)
    } else {
        (None, spread_cores(topo))
    };
    let name = request.to_string();
    // Where a count was taken, and how to widen it, for NotEnough.
    let scope_text = match &unit {
        Some(u) if u.units > 1 => format!(
            " in {} (--within {scope}; --within machine would use all {} usable CPUs)",
            u.label,
            allowed.len()
        ),
        _ => " here".to_string(),
    };
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
        scope: scope_text.clone(),
    };
    let one = |c: u32| CpuSet::from_cpus([c]);
    let first = |c: &CpuSet| c.first().map(one);
    let mut notes: Vec<Note> = Vec::new();
    let cpus: Vec<CpuSet> = match request {
        Request::OnePerCore => {
            if threads > cores.len() {
                return Err(not_enough(threads, cores.len(), "cores"));
            }
            cores.iter().take(threads).filter_map(first).collect()
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
                notes.push(Note::OddPairs { alone: threads - 1 });
            }
            (0..threads)
                .filter_map(|i| smt_cores[i / 2].iter().nth(i % 2).map(one))
                .collect()
        }
        Request::All => {
            if threads > cores.len() {
                return Err(not_enough(threads, cores.len(), "cores"));
            }
            let cpus: Vec<CpuSet> = cores
                .iter()
                .take(threads)
                .flat_map(|c| c.iter().map(one).collect::<Vec<_>>())
                .collect();
            if cpus.len() > threads {
                notes.push(Note::AllSiblings {
                    cores: threads,
                    threads: cpus.len(),
                });
            }
            cpus
        }
        Request::Spread => {
            let max_t = cores.iter().map(CpuSet::len).max().unwrap_or(1);
            let order: Vec<u32> = (0..max_t)
                .flat_map(|k| cores.iter().filter_map(move |c| c.iter().nth(k)))
                .collect();
            if order.is_empty() {
                return Err(not_enough(threads, 0, "CPUs"));
            }
            if threads > order.len() {
                notes.push(Note::Wraps {
                    threads,
                    cpus: order.len(),
                    over: WrapOver::Spread,
                });
            }
            (0..threads).map(|i| one(order[i % order.len()])).collect()
        }
        Request::SameCore => {
            if threads == 1 {
                cores.first().and_then(first).into_iter().collect()
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
            g.iter().take(threads).filter_map(first).collect()
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
                .filter_map(|g| g.first().and_then(first))
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
                .filter_map(|p| {
                    // The first core of the package in spread order.
                    cores
                        .iter()
                        .find(|c| c.is_subset(p))
                        .and_then(CpuSet::first)
                        .or_else(|| p.first())
                        .map(one)
                })
                .collect()
        }
        Request::SiblingsOf(list) => {
            check_allowed(topo, list)?;
            if !cores.iter().any(|c| c.len() >= 2) {
                return Err(no_smt(""));
            }
            let sibs =
                free_siblings(topo, list, &allowed).map_err(|reason| PlanError::NoFreeSibling {
                    request: name.clone(),
                    reason,
                })?;
            if threads > sibs.len() {
                notes.push(Note::Wraps {
                    threads,
                    cpus: sibs.len(),
                    over: WrapOver::Siblings,
                });
            }
            (0..threads).map(|i| one(sibs[i % sibs.len()])).collect()
        }
        Request::Cpus(list) => {
            check_allowed(topo, list)?;
            let v = list.to_vec();
            if threads > v.len() {
                notes.push(Note::Wraps {
                    threads,
                    cpus: v.len(),
                    over: WrapOver::Listed,
                });
            }
            (0..threads).map(|i| one(v[i % v.len()])).collect()
        }
        Request::Os => (0..threads).map(|_| allowed.clone()).collect(),
    };
    if cpus.is_empty() {
        return Err(not_enough(threads, 0, "usable CPUs"));
    }
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
        notes: notes.into_iter().map(String::from).collect(),
        scope: unit,
    })
}

/// The SMT siblings of `list`'s cores that are not in `list`, round-robin over those cores
/// (first free sibling of each core, then the second, …), so that on SMT4 the burners of
/// two workers land one per worker core before any core gets a second. Errors name the
/// listed CPUs whose cores have no free sibling.
fn free_siblings(topo: &Topology, list: &CpuSet, allowed: &CpuSet) -> Result<Vec<u32>, String> {
    let mut cores: Vec<CpuSet> = Vec::new();
    let mut full: Vec<String> = Vec::new();
    for c in list.iter() {
        let core = topo.core_of(c).intersection(allowed);
        if cores.contains(&core) {
            continue;
        }
        let free = core.difference(list);
        if free.is_empty() {
            let whole = topo.core_of(c);
            full.push(if whole.len() < 2 {
                format!("CPU {c} has no SMT sibling (its core has one thread)")
            } else if core.len() < whole.len() {
                format!("the usable siblings of CPU {c} ({core}) are all listed")
            } else {
                format!("CPU {c}'s core ({core}) is all listed")
            });
        }
        cores.push(core);
    }
    if !full.is_empty() {
        return Err(format!(
            "{}: siblings-of never places a thread on a listed CPU (for burners beside \
             workers, pin the workers one per core)",
            full.join("; ")
        ));
    }
    let free: Vec<Vec<u32>> = cores.iter().map(|c| c.difference(list).to_vec()).collect();
    let depth = free.iter().map(Vec::len).max().unwrap_or(0);
    Ok((0..depth)
        .flat_map(|k| free.iter().filter_map(move |f| f.get(k).copied()))
        .collect())
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
        assert_eq!("machine".parse::<Scope>().unwrap(), Scope::Machine);
        assert_eq!("socket".parse::<Scope>().unwrap(), Scope::Package);
        let e = "rack".parse::<Scope>().unwrap_err();
        assert!(
            e.contains("rack") && e.contains("package, l3, node, machine"),
            "{e}"
        );
        for r in [
            "one-per-core",
            "pairs",
            "all",
            "spread",
            "os",
            "cpus:1-2",
            "siblings-of:4",
        ] {
            assert_eq!(Request::parse(r).unwrap().to_string(), r);
        }
    }
}
