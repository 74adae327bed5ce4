//! The three layouts on the same N cores, and the plan of a run: which workloads run and
//! which are left out, with the reason. Pure: a function of the topology, the
//! configuration and the memory available.

use super::config::{Config, Subject};
use super::model::{Layout, LayoutPlan, LeftOut, Note, YieldPlan};
use crate::burn::BurnerKind;
use crate::burn::workload::buffer_bytes;
use crate::cpuset::CpuSet;
use crate::error::NotPossible;
use crate::placement::{self, Plan, PlanError, Request};
use crate::topology::Topology;
use anyhow::Result;

/// Why SQLite's inserts are left out of the yield.
pub const SINGLE_WRITER: &str = "single writer: cannot show SMT capacity (SQLite admits one \
     writer at a time, so a second core, or a sibling, adds no insert capacity)";

/// A plan with the placements to run.
#[derive(Debug, Clone)]
pub struct Planned {
    pub plan: YieldPlan,
    /// The placements, in run order within a round.
    pub layouts: Vec<(Layout, Plan)>,
    /// The workloads to run, in order (`plan.workloads` names them).
    pub subjects: Vec<Subject>,
}

/// Plans the layouts on `topo` and decides the workloads. `mem_available` (bytes) bounds
/// the rulers' buffers; None skips that check.
///
/// Errors when the unit has no SMT sibling (`PlanError::NoSmt`, exit 3: with one thread
/// per core `all` is `one-per-core` and there is no yield to measure), or `--cores` asks
/// for more cores than the unit has.
pub fn plan(topo: &Topology, cfg: &Config, mem_available: Option<u64>) -> Result<Planned> {
    let (unit, cores) = placement::scoped_cores(topo, cfg.within);
    if !cores.iter().any(|c| c.len() >= 2) {
        if topo.threads_per_core() <= 1 {
            let off = topo
                .machine
                .smt_control
                .as_deref()
                .filter(|c| matches!(*c, "off" | "forceoff"));
            let modules = topo.cmt_modules();
            return Err(PlanError::NoSmt {
                request: "yield".into(),
                hint: match off {
                    _ if !modules.is_empty() => format!(
                        ": the {} pairs of CPUs Linux lists as thread siblings here are {}, \
                         each CPU a core of its own, so there is no SMT yield to measure; \
                         nothing was run",
                        modules.len(),
                        crate::topology::CMT_MODULES
                    ),
                    Some(c) => format!(
                        ": SMT is turned off here (smt/control = {c}); the yield compares N \
                         threads on N cores with every sibling of the same cores, so turn SMT \
                         on to measure it"
                    ),
                    None => ": the yield compares N threads on N cores with every sibling \
                               of the same cores, and with one thread per core both are the \
                               same run; nothing was run"
                        .into(),
                },
            }
            .into());
        }
        return Err(NotPossible(format!(
            "yield needs a core with two usable SMT siblings, but {} has none usable by this \
             process (affinity or cgroup); try --within machine",
            unit.label
        ))
        .into());
    }
    let n = cfg.cores.unwrap_or(cores.len());
    let opc = placement::plan_within(topo, &Request::OnePerCore, n, cfg.within)?;
    let all = placement::plan_within(topo, &Request::All, n, cfg.within)?;
    let mut notes: Vec<Note> = Vec::new();
    if all.threads.len() == opc.threads.len() {
        return Err(NotPossible(format!(
            "the {} core(s) chosen ({}) have one usable thread each, so `all` is \
             `one-per-core`: no yield to measure; choose more cores (--cores) or another unit \
             (--within)",
            n,
            opc.cpus()
        ))
        .into());
    }
    if all.threads.len() < 2 * n {
        notes.push(Note::AllShort {
            threads: all.threads.len(),
            cores: n,
        });
    }
    let mut layouts = vec![(Layout::OnePerCore, opc), (Layout::All, all)];
    let pairs_n = n - n % 2;
    if pairs_n < 2 {
        // `pairs` runs N threads two to a core on N/2 cores. With two threads per core one
        // core's pair would be `all`; with more it is a layout of its own, but N = 1 has no
        // half.
        let tpc = layouts[1].1.threads.len();
        notes.push(Note::OneCore { all_threads: tpc });
    } else {
        match placement::plan_within(topo, &Request::Pairs, pairs_n, cfg.within) {
            Ok(p) => {
                if pairs_n < n {
                    notes.push(Note::OddCores {
                        cores: n,
                        pairs_threads: pairs_n,
                    });
                }
                layouts.push((Layout::Pairs, p));
            }
            Err(e @ (PlanError::NotEnough { .. } | PlanError::NoSmt { .. })) => {
                notes.push(Note::NoPairs { why: e.to_string() })
            }
            Err(e) => return Err(e.into()),
        }
    }
    let all_plan = &layouts[1].1;
    let (subjects, left_out) = choose_workloads(topo, cfg, all_plan, mem_available);
    if subjects.is_empty() {
        let why: Vec<String> = left_out
            .iter()
            .map(|l| format!("{}: {}", l.workload, l.reason))
            .collect();
        return Err(NotPossible(format!("no workload can run here ({})", why.join("; "))).into());
    }
    let runs = (subjects.len() * layouts.len() * cfg.repeat) as u64;
    let per_run = nanos(cfg.spec.warmup()) + nanos(cfg.spec.duration());
    let scope = layouts[0].1.scope.clone();
    let plan = YieldPlan {
        cores: n,
        threads_per_core: layouts[0]
            .1
            .threads
            .iter()
            .filter_map(|t| t.cpus.first())
            .map(|c| topo.core_of(c).intersection(&topo.allowed()).len())
            .max()
            .unwrap_or(1),
        scope,
        layouts: layouts
            .iter()
            .map(|(l, p)| layout_plan(topo, *l, p))
            .collect(),
        workloads: subjects.iter().map(Subject::name).collect(),
        left_out,
        warmup_ns: nanos(cfg.spec.warmup()),
        duration_ns: nanos(cfg.spec.duration()),
        repeat: cfg.repeat,
        estimate_ns: runs.saturating_mul(per_run),
        notes: notes.into_iter().map(String::from).collect(),
    };
    Ok(Planned {
        plan,
        layouts,
        subjects,
    })
}

/// The workloads that run, and those left out with the reason.
fn choose_workloads(
    topo: &Topology,
    cfg: &Config,
    all: &Plan,
    mem_available: Option<u64>,
) -> (Vec<Subject>, Vec<LeftOut>) {
    let mut run = Vec::new();
    let mut out = Vec::new();
    for s in &cfg.subjects {
        match s {
            Subject::Ruler(k) if uses_buffer(*k) => {
                let total: u64 = all
                    .threads
                    .iter()
                    .map(|t| buffer_bytes(*k, topo, t.cpus.first()).0 as u64)
                    .sum();
                match crate::limits::memory(
                    "--workloads",
                    total,
                    mem_available,
                    &format!("{} `{k}` buffers in `all`", all.threads.len()),
                    crate::limits::Force::NotOffered,
                ) {
                    Ok(()) => run.push(*s),
                    Err(e) => out.push(LeftOut {
                        workload: s.name(),
                        reason: e.0,
                    }),
                }
            }
            Subject::Insert => {}
            _ => run.push(*s),
        }
    }
    let wants_insert = cfg.subjects.contains(&Subject::Insert) || cfg.db.is_some();
    match &cfg.db {
        Some(t) if t.single_writer() => out.push(LeftOut {
            workload: "insert (sqlite)".into(),
            reason: SINGLE_WRITER.into(),
        }),
        Some(_) => run.push(Subject::Insert),
        None if !wants_insert => out.push(LeftOut {
            workload: "insert".into(),
            reason: "not run: no database given (--db postgres-managed or --db \
                     postgres://USER@HOST/DB measures inserts)"
                .into(),
        }),
        None => {}
    }
    (run, out)
}

fn uses_buffer(k: BurnerKind) -> bool {
    k.uses_caches() || k == BurnerKind::Scan
}

/// A layout as planned, with its cores.
pub fn layout_plan(topo: &Topology, layout: Layout, p: &Plan) -> LayoutPlan {
    let allowed = topo.allowed();
    let mut cores: Vec<CpuSet> = Vec::new();
    for t in &p.threads {
        if let Some(c) = t.cpus.first() {
            let core = topo.core_of(c).intersection(&allowed);
            if !cores.contains(&core) {
                cores.push(core);
            }
        }
    }
    LayoutPlan {
        layout,
        request: p.request.clone(),
        threads: p.threads.len(),
        thread_cpus: p.threads.iter().map(|t| t.cpus.clone()).collect(),
        cores,
        cpus: p.cpus(),
        notes: p.notes.clone(),
    }
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
