//! `neighbors` (seed 002): K workers do serialized "hot page" appends under one lock while
//! the number of CPU burners steps up; per step the throughput, latency, scheduling
//! evidence and a [`Diagnosis`] of the mechanism.
//!
//! The worker side is a [`Worker`]: any engine workload that can also hand back its
//! operation latencies and lock-holder evidence. [`HotPage`] is the built-in one (small rows
//! appended to one shared 8 KiB page, like last-page inserts); a database insert path plugs
//! in the same way (`--workload oltp`).

use super::diagnosis::{self, Diagnosis, Evidence};
use crate::burn::{BurnSpec, Burners, ProcessBurners, ProcessOptions};
use crate::cpuset::CpuSet;
use crate::engine::{Engine, Phase, RunResult, RunSpec, ThreadCtx, Workload};
use crate::locks::{LockKind, LockOptions, LockThread, StatsMode, ThreadStats};
use crate::placement::{self, Plan, Request, ThreadPlacement};
use crate::topology::Topology;
use anyhow::Result;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// Bumped when the JSON layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;
/// A hold (or a wait) longer than this counts as preempted: far beyond any critical
/// section here, and about one scheduler slice.
pub const PREEMPTED_NS: u64 = 1_000_000;

/// The worker side of `neighbors`: an engine workload plus what the diagnosis needs.
pub trait Worker: Workload {
    /// Ends the step (undoing anything the worker changed, e.g. pinned server backends)
    /// and hands back what it saw.
    fn finish(self: Box<Self>) -> Result<WorkerOutcome>;
}

/// What a worker saw in one step.
pub struct WorkerOutcome {
    /// Latencies of measured operations, ns, merged over threads.
    pub latency_ns: Histogram<u64>,
    /// Lock holds longer than [`PREEMPTED_NS`] and waits longer than it; None when the
    /// worker cannot see its lock (a database's internal locks).
    pub preemptions: Option<(u64, u64)>,
}

/// Builds a fresh worker for a step from the workers' part of the step's plan.
pub type MakeWorker<'a> = dyn Fn(&Plan) -> Result<Box<dyn Worker + 'a>> + 'a;

/// Appends 64-byte rows to one shared 8 KiB page under a lock of the lock library: the
/// serialized path of last-page inserts in seeds 001/002.
pub struct HotPage {
    kind: LockKind,
    page: crate::locks::Protected<Page>,
    workers: usize,
    latency: Mutex<Histogram<u64>>,
    stats: Mutex<Vec<ThreadStats>>,
}

/// The shared page: a write offset and the bytes.
pub struct Page {
    offset: usize,
    bytes: Box<[u8; 8192]>,
    rows: u64,
}

const ROW: usize = 64;

impl HotPage {
    pub fn new(kind: LockKind, workers: usize) -> Self {
        // Full stats: hold times are the lock-holder-preemption evidence.
        let opts = LockOptions::with_stats(StatsMode::Full);
        HotPage {
            kind,
            page: crate::locks::Protected::new(
                kind,
                &opts,
                Page {
                    offset: 0,
                    bytes: Box::new([0; 8192]),
                    rows: 0,
                },
            ),
            workers,
            latency: Mutex::new(crate::locks::new_histogram()),
            stats: Mutex::new(Vec::new()),
        }
    }
}

impl Workload for HotPage {
    fn name(&self) -> String {
        format!("hot-page/{}", self.kind)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        let mut lt = LockThread::new(ctx.thread, self.workers);
        let mut hist = crate::locks::new_histogram();
        let mut row = [0u8; ROW];
        row[..8].copy_from_slice(&(ctx.thread as u64).to_le_bytes());
        let mut measuring = false;
        while !ctx.should_stop() {
            if !measuring && ctx.phase() == Phase::Measure {
                lt.reset();
                hist.reset();
                measuring = true;
            }
            let t0 = crate::locks::now_ns();
            self.page.with(&mut lt, |p| {
                // The page fills and a new one starts, as a B-tree's last page splits.
                if p.offset + ROW > p.bytes.len() {
                    p.offset = 0;
                }
                p.bytes[p.offset..p.offset + ROW].copy_from_slice(&row);
                p.offset += ROW;
                p.rows += 1;
            });
            let t1 = crate::locks::now_ns();
            hist.saturating_record(t1.saturating_sub(t0).max(1));
            ctx.add_progress(1);
        }
        if measuring {
            self.latency.lock().expect("not poisoned").add(&hist).ok();
            self.stats.lock().expect("not poisoned").push(lt.stats());
        }
    }
}

impl Worker for HotPage {
    fn finish(self: Box<Self>) -> Result<WorkerOutcome> {
        let s = self.stats.into_inner().expect("not poisoned");
        let holds: u64 = s.iter().map(|t| t.counts.long_holds).sum();
        let waits: u64 = s
            .iter()
            .map(|t| t.wait_ns_hist.count_between(PREEMPTED_NS, u64::MAX))
            .sum();
        Ok(WorkerOutcome {
            latency_ns: self.latency.into_inner().expect("not poisoned"),
            preemptions: Some((holds, waits)),
        })
    }
}

/// Where burners go relative to the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BurnerPlacement {
    /// Unpinned: the scheduler decides (seed 002).
    Os,
    /// On the workers' CPUs, in turn.
    SameCpus,
    /// On the SMT siblings of the workers' CPUs (needs SMT).
    Siblings,
    /// On cores no worker uses.
    OtherCores,
}

impl std::str::FromStr for BurnerPlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "os" => Ok(Self::Os),
            "same-cpus" => Ok(Self::SameCpus),
            "siblings" => Ok(Self::Siblings),
            "other-cores" => Ok(Self::OtherCores),
            _ => Err(format!(
                "unknown burner placement `{s}`; valid: os, same-cpus, siblings, other-cores"
            )),
        }
    }
}

/// Thread burners share the engine run; process burners are re-executed `smtlab burn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BurnerMode {
    Thread,
    Process,
}

/// A validated neighbors configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub workers: usize,
    /// Worker placement (default `os`).
    pub worker_placement: Request,
    /// The unit a scoped worker placement stays inside.
    pub within: placement::Scope,
    pub burner_steps: Vec<usize>,
    pub burner: BurnSpec,
    pub burner_placement: BurnerPlacement,
    pub burner_mode: BurnerMode,
    pub spec: RunSpec,
}

/// True when a step's plan failed because this machine cannot place it (no SMT siblings,
/// too few CPUs): the step is skipped with the reason. Bad combinations of options
/// (sibling burners beside unpinned workers or beside `pairs` workers) are errors instead.
pub fn step_not_possible_here(e: &anyhow::Error) -> bool {
    use crate::placement::PlanError;
    matches!(
        e.downcast_ref::<PlanError>(),
        Some(PlanError::NoSmt { .. } | PlanError::NotEnough { .. })
    ) || e.downcast_ref::<crate::error::NotPossible>().is_some()
}

/// The placements of one step: workers then burners.
pub fn step_plan(topo: &Topology, cfg: &Config, burners: usize) -> Result<(Plan, Vec<CpuSet>)> {
    let workers = placement::plan_within(topo, &cfg.worker_placement, cfg.workers, cfg.within)?;
    let allowed = topo.allowed();
    let worker_cpus = workers.cpus();
    let burner_cpus: Vec<CpuSet> = if burners == 0 {
        Vec::new()
    } else {
        match cfg.burner_placement {
            BurnerPlacement::Os => vec![allowed.clone(); burners],
            BurnerPlacement::SameCpus => {
                let v = worker_cpus.to_vec();
                (0..burners)
                    .map(|i| CpuSet::from_cpus([v[i % v.len()]]))
                    .collect()
            }
            BurnerPlacement::Siblings => {
                // Unpinned workers move between CPUs, so no CPU is "their sibling": a
                // burner there would share a core with a worker only by chance.
                if !cfg.worker_placement.is_pinned() {
                    return Err(crate::error::BadInput(format!(
                        "--burner-placement siblings needs pinned workers, but --placement is                          `{}` (unpinned): pin the workers one per core (--placement one-per-core)                          so each has a free sibling",
                        cfg.worker_placement
                    ))
                    .into());
                }
                let p = placement::plan(topo, &Request::SiblingsOf(worker_cpus.clone()), burners)?;
                p.threads.into_iter().map(|t| t.cpus).collect()
            }
            BurnerPlacement::OtherCores => {
                let used: CpuSet = worker_cpus
                    .iter()
                    .fold(CpuSet::new(), |a, c| a.union(&topo.core_of(c)));
                let rest = allowed.difference(&used).to_vec();
                if rest.is_empty() {
                    return Err(crate::error::NotPossible(format!(
                        "--burner-placement other-cores: the workers' cores ({used}) cover every usable CPU"
                    ))
                    .into());
                }
                (0..burners)
                    .map(|i| CpuSet::from_cpus([rest[i % rest.len()]]))
                    .collect()
            }
        }
    };
    let mut threads = workers.threads.clone();
    if cfg.burner_mode == BurnerMode::Thread {
        for (i, c) in burner_cpus.iter().enumerate() {
            threads.push(ThreadPlacement {
                thread: cfg.workers + i,
                cpus: c.clone(),
            });
        }
    }
    Ok((
        Plan {
            request: format!("workers {} + {burners} burners", workers.request),
            threads,
            oversubscribed: cfg.workers + burners > allowed.len(),
            notes: workers.notes,
            scope: workers.scope,
        },
        burner_cpus,
    ))
}

/// Workers and thread-mode burners in one engine run.
struct Combined<'a> {
    worker: &'a dyn Worker,
    workers: usize,
    burners: Option<&'a Burners>,
}

impl Workload for Combined<'_> {
    fn name(&self) -> String {
        self.worker.name()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        if ctx.thread < self.workers {
            self.worker.run_thread(ctx)
        } else if let Some(b) = self.burners {
            b.run_burner(ctx.thread - self.workers, ctx)
        }
    }
    fn requested_nice(&self) -> Option<i32> {
        self.burners.and_then(|b| b.requested_nice())
    }
}

/// One burner count's measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub burners: usize,
    /// Worker operations per second.
    pub ops_per_sec: f64,
    /// `ops_per_sec` ÷ the first step's.
    pub ratio_to_first: f64,
    /// Mean time per operation across the workers (wall ÷ ops × workers), ns.
    pub time_per_op_ns: f64,
    pub latency_p50_ns: u64,
    pub latency_p99_ns: u64,
    pub latency_max_ns: u64,
    /// Workers + burners (all want a CPU all the time).
    pub runnable_threads: usize,
    /// Usable logical CPUs.
    pub cpus: usize,
    pub worker_involuntary_switches_per_sec: f64,
    pub worker_voluntary_switches_per_sec: f64,
    /// Share of the workers' time spent runnable but waiting for a CPU, 0–1; None when
    /// schedstat is unavailable.
    pub worker_run_delay_share: Option<f64>,
    /// Lock holds longer than 1 ms (holder preempted); None when the worker cannot see its
    /// lock (a database's internal locks).
    pub holder_preemptions: Option<u64>,
    /// Lock waits longer than 1 ms (holder or next waiter preempted); None as above.
    pub long_waits: Option<u64>,
    /// Burner progress, their own units per second, summed.
    pub burner_ops_per_sec: f64,
    pub diagnosis: Diagnosis,
    /// The evidence, in one line.
    pub reason: String,
    pub pinning_ok: bool,
    /// Ctrl-C cut this step short.
    pub interrupted: bool,
    /// Worker threads in this step.
    pub workers: usize,
    /// Share of the CPUs' time the hypervisor took during this step (steal), 0–1; None
    /// where not measured.
    #[serde(default)]
    pub steal_share: Option<f64>,
}

/// The whole neighbors result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NeighborsReport {
    pub schema_version: u32,
    pub workload: String,
    pub workers: usize,
    pub worker_placement: String,
    pub burner_kind: String,
    pub burner_placement: BurnerPlacement,
    pub burner_mode: BurnerMode,
    pub burner_policy: String,
    pub time_slice_ns: f64,
    pub smt: bool,
    pub hypervisor: bool,
    /// The reference run when the first step was already oversubscribed: as many
    /// workers as CPUs, no burners. Its rate is the baseline of every ratio.
    pub reference: Option<Step>,
    pub steps: Vec<Step>,
    /// Steps that could not run here, with the reason.
    pub skipped: Vec<(usize, String)>,
    pub notes: Vec<String>,
    pub interrupted: bool,
}

/// Runs every step in order. `make_worker` builds a fresh worker per step (a new lock, a
/// fresh page). `on_step` sees each step as it completes.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    make_worker: &MakeWorker<'_>,
    on_step: &mut dyn FnMut(&Step),
) -> Result<NeighborsReport> {
    // A bad combination of options fails before anything runs, not at its first step.
    for &b in &cfg.burner_steps {
        if let Err(e) = step_plan(topo, cfg, b)
            && !step_not_possible_here(&e)
        {
            return Err(e);
        }
    }
    let cpus = topo.allowed().len();
    let slice = diagnosis::base_slice_ns(cpus);
    let mut steps: Vec<Step> = Vec::new();
    let mut skipped = Vec::new();
    let mut notes = Vec::new();
    let mut interrupted = false;
    let mut worker_name = String::new();
    // The reference rate: the first step, unless it is already oversubscribed — then a
    // run with as many workers as CPUs and no burners (so `--workers 4` on 2 CPUs is
    // compared with 2 workers, not with itself).
    let mut reference = None;
    let first_b = cfg.burner_steps.first().copied().unwrap_or(0);
    if cfg.workers + first_b > cpus && cfg.workers > cpus {
        let mut rc = cfg.clone();
        rc.workers = cpus;
        if let Some((step, _)) =
            run_step(engine, topo, &rc, 0, make_worker, None, slice, &mut notes)?
        {
            reference = Some(step);
        }
    }
    let mut baseline = reference.as_ref().map(|s| s.ops_per_sec);
    for &b in &cfg.burner_steps {
        if crate::interrupt::requested() {
            interrupted = true;
            break;
        }
        let step = match run_step(
            engine,
            topo,
            cfg,
            b,
            make_worker,
            baseline,
            slice,
            &mut notes,
        ) {
            Ok(Some((s, name))) => {
                worker_name = name;
                s
            }
            Ok(None) => break,
            Err(e) if step_not_possible_here(&e) => {
                skipped.push((b, format!("{e:#}")));
                continue;
            }
            Err(e) => return Err(e),
        };
        if baseline.is_none() {
            baseline = Some(step.ops_per_sec);
        }
        on_step(&step);
        let stop = step.interrupted;
        steps.push(step);
        if stop {
            interrupted = true;
            break;
        }
    }
    notes.extend(crate::hygiene::steal_note(
        "the steps",
        steps.iter().map(|s| s.steal_share),
    ));
    if topo.threads_per_core() <= 1 {
        notes.push("no SMT siblings on this machine: the smt-sharing mechanism cannot occur here; losses without oversubscription are shared caches, memory bandwidth or frequency".into());
    }
    if cfg.burner.policy != crate::burn::Policy::Normal {
        notes.push(format!(
            "burners run at policy {}: they still count as runnable, but the scheduler favours the workers",
            cfg.burner.policy
        ));
    }
    Ok(NeighborsReport {
        schema_version: SCHEMA_VERSION,
        workload: worker_name,
        workers: cfg.workers,
        worker_placement: cfg.worker_placement.to_string(),
        burner_kind: cfg.burner.kind.to_string(),
        burner_placement: cfg.burner_placement,
        burner_mode: cfg.burner_mode,
        burner_policy: cfg.burner.policy.to_string(),
        time_slice_ns: slice,
        smt: topo.threads_per_core() > 1,
        hypervisor: topo.machine.hypervisor,
        reference,
        steps,
        skipped,
        notes,
        interrupted,
    })
}

/// Runs one step: plans it, starts burners (threads or processes), runs the engine, and
/// measures. None when Ctrl-C arrived before it started.
#[allow(clippy::too_many_arguments)]
fn run_step(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    b: usize,
    make_worker: &MakeWorker<'_>,
    baseline: Option<f64>,
    slice: f64,
    notes: &mut Vec<String>,
) -> Result<Option<(Step, String)>> {
    if crate::interrupt::requested() {
        return Ok(None);
    }
    let (plan, burner_cpus) = step_plan(topo, cfg, b)?;
    let worker_plan = Plan {
        threads: plan.threads[..cfg.workers].to_vec(),
        ..plan.clone()
    };
    let worker = make_worker(&worker_plan)?;
    let thread_burners = match cfg.burner_mode {
        BurnerMode::Thread if b > 0 => Some(Burners::new(&cfg.burner, topo, &burner_cpus)?),
        _ => None,
    };
    // Process burners are killed and reaped when this guard drops, on every path.
    let procs = match cfg.burner_mode {
        BurnerMode::Process if b > 0 => Some(ProcessBurners::spawn(
            &cfg.burner,
            &burner_cpus,
            &ProcessOptions {
                exe: None,
                warmup: std::time::Duration::ZERO,
                duration: None,
            },
        )?),
        _ => None,
    };
    let combined = Combined {
        worker: worker.as_ref(),
        workers: cfg.workers,
        burners: thread_burners.as_ref(),
    };
    let before = procs.as_ref().map(|p| p.progress());
    let r = engine.run(&plan, &cfg.spec, &combined)?;
    let burner_ops_per_sec = match (&procs, &before) {
        (Some(p), Some(before)) => {
            let ops: u64 = p
                .progress()
                .iter()
                .zip(before)
                .map(|(a, b)| a.ops.saturating_sub(b.ops))
                .sum();
            ops as f64 / (r.measured_ns.max(1) as f64 / 1e9)
        }
        _ => {
            r
            .threads
            .iter()
            .skip(cfg.workers)
            .map(|t| t.ops_per_sec(r.measured_ns))
            .sum::<f64>()
            .max(0.0)
            // An empty f64 sum is -0.0, and max(-0.0, 0.0) may keep it; + 0.0 makes it +0.
            + 0.0
        }
    };
    drop(procs);
    if let Some(tb) = &thread_burners {
        for n in &tb.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
        tb.release();
        tb.check()?;
    }
    let name = worker.name();
    let outcome = worker.finish()?;
    let lat = outcome.latency_ns;
    let preemptions = outcome.preemptions;
    Ok(Some((
        make_step(
            topo,
            cfg,
            b,
            &burner_cpus,
            &plan,
            &r,
            &lat,
            preemptions,
            burner_ops_per_sec,
            baseline,
            slice,
        ),
        name,
    )))
}

#[allow(clippy::too_many_arguments)]
fn make_step(
    topo: &Topology,
    cfg: &Config,
    burners: usize,
    burner_cpus: &[CpuSet],
    plan: &Plan,
    r: &RunResult,
    lat: &Histogram<u64>,
    preemptions: Option<(u64, u64)>,
    burner_ops_per_sec: f64,
    first: Option<f64>,
    slice: f64,
) -> Step {
    let secs = r.measured_ns.max(1) as f64 / 1e9;
    let workers = &r.threads[..cfg.workers.min(r.threads.len())];
    let ops: u64 = workers.iter().map(|t| t.ops).sum();
    let ops_per_sec = ops as f64 / secs;
    let invol: u64 = workers.iter().map(|t| t.involuntary_ctx_switches).sum();
    let vol: u64 = workers.iter().map(|t| t.voluntary_ctx_switches).sum();
    let delay: Option<u64> = workers.iter().map(|t| t.runqueue_delay_ns).sum();
    let delay_share = delay.map(|d| d as f64 / (r.measured_ns.max(1) as f64 * cfg.workers as f64));
    let worker_cpus: CpuSet = plan.threads[..cfg.workers]
        .iter()
        .fold(CpuSet::new(), |a, t| a.union(&t.cpus));
    let all = topo.allowed();
    let pinned_workers = worker_cpus != all;
    // A burner pinned to one CPU: that CPU.
    let single = |b: &CpuSet| b.first().filter(|_| b.len() == 1);
    let on_siblings = burner_cpus.iter().filter_map(single).any(|b| {
        worker_cpus
            .iter()
            .any(|w| topo.proximity(w, b) == crate::topology::Proximity::SmtSibling)
    }) || (!pinned_workers && topo.threads_per_core() > 1 && burners > 0);
    let on_cpus = burner_cpus
        .iter()
        .filter_map(single)
        .any(|b| worker_cpus.contains(b));
    let runnable = cfg.workers + burners;
    let baseline = first.unwrap_or(ops_per_sec);
    // Without a reference from a non-oversubscribed run the ratio says nothing.
    let ev = Evidence {
        ops_per_sec,
        baseline_ops_per_sec: baseline,
        runnable_threads: runnable,
        cpus: all.len(),
        burners_on_worker_siblings: on_siblings,
        burners_on_worker_cpus: on_cpus,
        worker_involuntary_switches_per_sec: invol as f64 / secs,
        worker_run_delay_share: delay_share.unwrap_or(0.0),
        holder_preemptions: preemptions.map(|(h, w)| h + w).unwrap_or(0),
        time_slice_ns: slice,
    };
    let (d, why) = diagnosis::diagnose(&ev);
    Step {
        burners,
        ops_per_sec,
        ratio_to_first: if baseline > 0.0 {
            ops_per_sec / baseline
        } else {
            0.0
        },
        time_per_op_ns: if ops > 0 {
            r.measured_ns as f64 * cfg.workers as f64 / ops as f64
        } else {
            f64::INFINITY
        },
        latency_p50_ns: lat.value_at_quantile(0.5),
        latency_p99_ns: lat.value_at_quantile(0.99),
        latency_max_ns: lat.max(),
        runnable_threads: runnable,
        cpus: all.len(),
        worker_involuntary_switches_per_sec: invol as f64 / secs,
        worker_voluntary_switches_per_sec: vol as f64 / secs,
        worker_run_delay_share: delay_share,
        holder_preemptions: preemptions.map(|p| p.0),
        long_waits: preemptions.map(|p| p.1),
        burner_ops_per_sec,
        diagnosis: d,
        reason: why,
        pinning_ok: r.pinning_ok(),
        interrupted: r.interrupted,
        workers: cfg.workers,
        steal_share: r.steal_share,
    }
}
