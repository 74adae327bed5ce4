//! `lockscan` (seed 000): lock threads hammer one global lock while scan threads memset a
//! buffer; does a lock thread that shares a core with a scanner acquire less?
//!
//! The seed's program packed its counters into one array and reported one 10-second
//! sample of one lock. Here every lock thread has its own stats block (cache-line padded,
//! in the lock library), runs repeat with interleaved scenarios (baseline without scanners
//! first in each round), and the verdict carries a bootstrap confidence interval.

use crate::cpuset::CpuSet;
use crate::engine::{Engine, IntervalSample, Phase, RunResult, RunSpec, ThreadCtx, Workload};
use crate::locks::{LockCounters, LockKind, LockThread, StatsMode, ThreadStats, new_lock};
use crate::placement::{Plan, ThreadPlacement};
use crate::stats::{self, Ci, Summary};
use crate::topology::{Proximity, Topology};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Bumped when the JSON layout changes incompatibly.
/// 2: `spins`, `spins_per_acquire`, `handoffs_received` and `handoffs_per_sec` are null
/// under `--lock-stats off`; `lock_stats` and per-result `c2c_latency_ns` added.
pub const SCHEMA_VERSION: u32 = 2;

/// Critical-section length (ns) from which `counters` measured within 2 % of `off` for 7 of
/// 8 locks (`cargo bench --bench locks`, 100 ns inside, 200 ns outside); below it, lockscan
/// warns that absolute rates carry the instrumentation's cost.
const COUNTERS_CHEAP_CS_NS: u64 = 100;

/// Who runs where in one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Short name: `baseline`, `seed-default`, `scanner on 3`, …
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

fn list(v: &[u32]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    }
}

/// Where threads go, as the user asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// The seed's default: the scanner on the lowest allowed CPU (its `mask & (mask-1)`
    /// clears the lowest bit for the lock threads), lock threads on the rest.
    SeedDefault,
    /// Explicit CPU sets (`--lock-cpus/--scan-cpus` or the seed's `-l/-s` masks).
    Explicit { lock: CpuSet, scan: CpuSet },
    /// One scenario per scanner position: on SMT machines the scanner on each lock
    /// thread's sibling in turn; without SMT, on each core in turn. The lock threads stay
    /// inside one unit of the scope (one package by default), so that the sweep compares
    /// sibling and cross-core positions, not sockets.
    Sweep(crate::placement::Scope),
}

/// A validated lockscan configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub layout: Layout,
    pub locks: Vec<LockKind>,
    /// Busy work inside the critical section, ns (0 = the seed's empty section).
    pub cs_ns: u64,
    /// Bytes each scan thread memsets per pass.
    pub scan_bytes: usize,
    pub spec: RunSpec,
    pub repeat: usize,
    /// Also run each scenario without scan threads (the cross-core reference).
    pub baseline: bool,
    /// What the lock records: `Counters` (the seed's spins plus handoffs) or `Off` (the bare
    /// algorithm; acquisitions then come from the workload's own count).
    pub stats: StatsMode,
}

/// Builds the scenarios for a layout on this topology, or says why it cannot.
pub fn scenarios(topo: &Topology, layout: &Layout, baseline: bool) -> Result<Vec<Scenario>> {
    use crate::error::BadInput;
    let allowed = topo.allowed();
    let mut out = Vec::new();
    match layout {
        Layout::SeedDefault => {
            let scan = allowed
                .first()
                .ok_or_else(|| BadInput("no usable CPU".into()))?;
            let lock: Vec<u32> = allowed.iter().filter(|&c| c != scan).collect();
            if lock.is_empty() {
                return Err(crate::error::NotPossible(format!(
                    "the seed's default layout needs at least 2 usable CPUs (one scanner, the rest lock threads), but this process may use only CPU {scan}; pass --lock-cpus/--scan-cpus to share it"
                ))
                .into());
            }
            out.push(Scenario {
                label: "seed-default".into(),
                lock_cpus: lock,
                scan_cpus: vec![scan],
            });
        }
        Layout::Explicit { lock, scan } => {
            check_usable(topo, lock, "lock")?;
            check_usable(topo, scan, "scan")?;
            if lock.is_empty() {
                return Err(BadInput(
                    "no lock threads: --lock-cpus (or -l) selects no CPU; give at least one, e.g. --lock-cpus 0".into(),
                )
                .into());
            }
            out.push(Scenario {
                label: "explicit".into(),
                lock_cpus: lock.to_vec(),
                scan_cpus: scan.to_vec(),
            });
        }
        Layout::Sweep(within) => {
            let (_, cores) = crate::placement::scoped_cores(topo, *within);
            let smt = cores.iter().any(|c| c.len() >= 2);
            if smt {
                // Lock threads on the first sibling of every core with a sibling; the
                // scanner visits each of those cores' second sibling.
                // (first, second sibling) of every core with two or more.
                let pairs: Vec<(u32, u32)> = cores
                    .iter()
                    .filter_map(|c| {
                        let mut it = c.iter();
                        Some((it.next()?, it.next()?))
                    })
                    .collect();
                let lock: Vec<u32> = pairs.iter().map(|&(first, _)| first).collect();
                for &(first, sib) in &pairs {
                    out.push(Scenario {
                        label: format!("scanner on {sib} (sibling of {first})"),
                        lock_cpus: lock.clone(),
                        scan_cpus: vec![sib],
                    });
                }
            } else {
                // Without SMT the scanner can only share a core by time-sharing a CPU
                // with a lock thread; every other lock thread sees it cross-core.
                let lock: Vec<u32> = cores.iter().filter_map(|c| c.first()).collect();
                if lock.is_empty() {
                    return Err(BadInput("no usable CPU".into()).into());
                }
                for &c in &lock {
                    out.push(Scenario {
                        label: format!("scanner on {c} (time-shares CPU {c})"),
                        lock_cpus: lock.clone(),
                        scan_cpus: vec![c],
                    });
                }
            }
        }
    }
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
    Err(crate::error::BadInput(format!(
        "{what} CPUs {bad} are {why}; usable CPUs: {allowed}"
    ))
    .into())
}

/// Busy-waits about `ns` nanoseconds (the critical-section work).
#[inline]
fn busy_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = crate::locks::now_ns();
    while crate::locks::now_ns().saturating_sub(start) < ns {
        std::hint::spin_loop();
    }
}

/// The seed's two thread types over one global lock.
pub struct LockScan {
    lock_kind: LockKind,
    lock: Box<dyn crate::locks::Lock>,
    lock_threads: usize,
    cs_ns: u64,
    scan_bytes: usize,
    /// Live counters of each lock thread, for per-interval spins.
    live: Mutex<Vec<Option<Arc<LockCounters>>>>,
    /// Final stats of each lock thread (measurement phase only).
    finals: Mutex<Vec<Option<ThreadStats>>>,
}

impl LockScan {
    pub fn new(
        lock_kind: LockKind,
        lock_threads: usize,
        cs_ns: u64,
        scan_bytes: usize,
        stats: StatsMode,
    ) -> Self {
        LockScan {
            lock_kind,
            lock: new_lock(lock_kind, stats),
            lock_threads,
            cs_ns,
            scan_bytes,
            live: Mutex::new(vec![None; lock_threads]),
            finals: Mutex::new(vec![None; lock_threads]),
        }
    }

    /// Takes the final per-lock-thread stats of the last run.
    pub fn take_stats(&self) -> Vec<ThreadStats> {
        let mut f = self.finals.lock().expect("not poisoned");
        f.iter_mut()
            .map(|s| {
                s.take()
                    .unwrap_or_else(|| ThreadStats::new(self.lock_threads))
            })
            .collect()
    }

    /// Spins so far of each lock thread (live, for interval rows).
    pub fn live_spins(&self) -> Vec<u64> {
        self.live
            .lock()
            .expect("not poisoned")
            .iter()
            .map(|c| c.as_ref().map(|c| c.load().spins).unwrap_or(0))
            .collect()
    }
}

impl Workload for LockScan {
    fn name(&self) -> String {
        format!("lockscan/{}", self.lock_kind)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        if ctx.thread < self.lock_threads {
            let mut lt = LockThread::new(ctx.thread, self.lock_threads);
            self.live.lock().expect("not poisoned")[ctx.thread] = Some(lt.counters());
            let mut measuring = false;
            let mut n = 0u64;
            let batch = if self.cs_ns >= 100 { 1 } else { 64 };
            while !ctx.should_stop() {
                if !measuring && ctx.phase() == Phase::Measure {
                    lt.reset();
                    measuring = true;
                }
                self.lock.lock(&mut lt);
                busy_ns(self.cs_ns);
                // SAFETY: this thread took the lock two lines above and still holds it.
                unsafe { self.lock.unlock(&mut lt) };
                n += 1;
                // Batch the shared progress counter in the hammer: it sits on this thread's
                // own line, but one add per acquisition would still double the loop's
                // stores. The batch left at the window's end is not counted, so with a
                // real critical section (where one add costs nothing) count each one.
                if n == batch {
                    ctx.add_progress(n);
                    n = 0;
                }
            }
            ctx.add_progress(n);
            self.finals.lock().expect("not poisoned")[ctx.thread] = Some(lt.stats());
        } else {
            let mut buf = vec![0u8; self.scan_bytes];
            let mut v = 0u8;
            // A pass over gigabytes (the first one faulting every page in) takes seconds:
            // look at the stop flag every 16 MiB; only whole passes count.
            'passes: while !ctx.should_stop() {
                v = v.wrapping_add(1);
                for chunk in buf.chunks_mut(16 << 20) {
                    if ctx.should_stop() {
                        break 'passes;
                    }
                    // SAFETY: writes exactly chunk.len() bytes into chunk.
                    unsafe { std::ptr::write_bytes(chunk.as_mut_ptr(), v, chunk.len()) };
                }
                std::hint::black_box(&mut buf);
                ctx.add_progress(1);
            }
        }
    }
}

/// One thread's row (medians over repetitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRow {
    pub thread: usize,
    /// `lock` or `scan`.
    pub role: String,
    /// The CPU the thread was pinned to.
    pub cpu: u32,
    /// The CPUs the thread was seen running on, over all runs (`sched_getcpu` and
    /// `/proc/self/task/TID/stat`); equal to `cpu` when pinning held. Empty for results
    /// that carried no observation (older files, fake runs).
    #[serde(default)]
    pub observed_cpus: CpuSet,
    /// The CPU's core (its SMT sibling set).
    pub core: CpuSet,
    /// A scan thread runs on this thread's core (an SMT sibling or the same CPU).
    pub shares_core_with_scanner: bool,
    /// Acquisitions per second (lock threads) or scan passes per second, median over runs.
    pub ops_per_sec: f64,
    /// Spread of `ops_per_sec` over runs.
    pub ops_per_sec_summary: Option<Summary>,
    /// Acquisitions in the measured time of the median run (`locked` in the seed).
    pub locked: u64,
    /// Wait-loop iterations (`spin` in the seed), median run; None with lock stats off.
    pub spins: Option<u64>,
    /// This thread's share of all acquisitions, 0–1.
    pub share_of_acquisitions: f64,
    pub spins_per_acquire: Option<f64>,
    /// Acquisitions that took the lock from another thread; None with lock stats off.
    pub handoffs_received: Option<u64>,
    /// Handoffs received by the previous owner's proximity (`smt-sibling`, `same-l3`, …);
    /// None with lock stats off and for scan threads.
    pub handoffs_by_proximity: Option<Vec<(Proximity, u64)>>,
    /// Share of its wall time the thread was on a CPU, 0–1.
    pub cpu_share: f64,
    pub involuntary_ctx_switches: u64,
}

/// One scenario with one lock: all its runs summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub lock: LockKind,
    pub runs: usize,
    pub threads: Vec<ThreadRow>,
    /// Total acquisitions per second, over runs.
    pub acquisitions_per_sec: Option<Summary>,
    /// Jain's fairness index over lock threads' acquisition rates (1 = perfectly fair).
    pub jain_index: f64,
    /// Fastest / slowest lock thread.
    pub max_min_ratio: f64,
    /// Handoffs per second (owner changed), median run; None with lock stats off.
    pub handoffs_per_sec: Option<f64>,
    /// Median acquisition rate of scanner-sharing lock threads ÷ the other lock threads,
    /// with a bootstrap CI over runs; None when one group is empty.
    pub sharing_vs_others: Option<Ci>,
    /// Median acquisition rate of lock threads not sharing a core with a scanner ÷ the
    /// same threads in the baseline scenario (cross-core interference); None without one.
    pub cross_core_vs_baseline: Option<Ci>,
    /// One-way cache-line latency the median run's handoffs met, ns: the latencies of
    /// `c2c_latency_by_proximity` weighted by the handoffs between CPUs of each class
    /// ([`handoff_latency_ns`]); None with one lock CPU or a synthetic run.
    #[serde(default)]
    pub c2c_latency_ns: Option<f64>,
    /// c2c latency of one pair of lock CPUs per proximity class, measured just before the
    /// median run, ns.
    #[serde(default)]
    pub c2c_latency_by_proximity: Vec<(Proximity, f64)>,
    /// Handoffs per second as a share of the cache-line ceiling 1/`c2c_latency_ns` (k = 1):
    /// the share of the run's time the lock line spent moving. None when either is unknown.
    pub handoffs_share_of_ceiling: Option<f64>,
    /// Pinning held in every run.
    pub pinning_ok: bool,
    /// Ctrl-C cut the runs short.
    pub interrupted: bool,
}

/// The whole lockscan result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockscanReport {
    pub schema_version: u32,
    /// SMT siblings were visible, so sibling cases could run.
    pub smt: bool,
    pub hypervisor: bool,
    pub cs_ns: u64,
    pub scan_bytes: usize,
    pub duration_ns: u64,
    pub repeat: usize,
    /// What the locks recorded (`counters` or `off`).
    #[serde(default)]
    pub lock_stats: StatsMode,
    /// The first result's `c2c_latency_ns`: the physical limit on handoffs.
    pub c2c_latency_ns: Option<f64>,
    /// The unit the sweep stayed inside (`--within`); None for the other layouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::placement::ScopeUnit>,
    pub results: Vec<ScenarioResult>,
    /// Plain-words conclusion.
    pub verdict: Vec<String>,
    /// What could not be measured here, and why.
    pub notes: Vec<String>,
}

/// Live per-interval callback: scenario, lock, the engine's sample, spins per lock thread
/// in that interval.
pub type OnInterval<'a> = dyn FnMut(&Scenario, LockKind, &IntervalSample, &[u64]) + 'a;

/// Runs every scenario × lock, interleaved, `repeat` times. `on_interval` receives live
/// per-interval rows (scenario index, lock, sample, spins per lock thread so far).
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    scen: &[Scenario],
    on_interval: &mut OnInterval<'_>,
) -> Result<LockscanReport> {
    // (scenario, lock) trials, interleaved round-robin over repetitions.
    let trials: Vec<(usize, LockKind)> = scen
        .iter()
        .enumerate()
        .flat_map(|(i, _)| cfg.locks.iter().map(move |&k| (i, k)))
        .collect();
    let mut runs: Vec<Vec<Run>> = trials.iter().map(|_| Vec::new()).collect();
    let mut interrupted = false;
    'outer: for _ in 0..cfg.repeat {
        for (ti, &(si, kind)) in trials.iter().enumerate() {
            if crate::interrupt::requested() {
                interrupted = true;
                break 'outer;
            }
            let s = &scen[si];
            let w = LockScan::new(
                kind,
                s.lock_cpus.len(),
                cfg.cs_ns,
                cfg.scan_bytes,
                cfg.stats,
            );
            let plan = s.plan();
            // The handoff ceiling, measured just before the run: a hypervisor's host moves
            // the vCPUs between runs (c2c here spanned 11–112 ns within minutes).
            let latencies = class_latencies(engine, topo, &s.lock_cpus);
            let mut prev_spins = vec![0u64; s.lock_cpus.len()];
            let r = engine.run_observed(&plan, &cfg.spec, &w, &mut |sample| {
                let now = w.live_spins();
                let delta: Vec<u64> = now
                    .iter()
                    .zip(&prev_spins)
                    .map(|(a, b)| a.saturating_sub(*b))
                    .collect();
                prev_spins = now;
                on_interval(s, kind, sample, &delta);
            })?;
            let st = w.take_stats();
            let stop = r.interrupted;
            runs[ti].push(Run {
                result: r,
                stats: st,
                latencies,
            });
            if stop {
                interrupted = true;
                break 'outer;
            }
        }
    }
    let smt = topo.threads_per_core() > 1;
    let mut results = Vec::new();
    for (ti, &(si, kind)) in trials.iter().enumerate() {
        if runs[ti].is_empty() {
            continue;
        }
        let baseline = if cfg.baseline && si > 0 {
            trials
                .iter()
                .position(|&(s, k)| s == 0 && k == kind)
                .map(|b| &runs[b])
        } else {
            None
        };
        results.push(summarise(
            topo,
            &scen[si],
            kind,
            &runs[ti],
            baseline,
            cfg.stats,
            interrupted,
        ));
    }
    let c2c_latency_ns = results.iter().find_map(|r| r.c2c_latency_ns);
    let mut notes = Vec::new();
    notes.extend(crate::hygiene::steal_note(
        "the runs",
        runs.iter().flatten().map(|r| r.result.steal_share),
    ));
    let over: Vec<String> = results
        .iter()
        .filter(|r| r.handoffs_share_of_ceiling.is_some_and(|x| x > 1.0))
        .map(|r| format!("{} / {}", r.lock, r.scenario.label))
        .collect();
    if !over.is_empty() {
        let why = if topo.machine.hypervisor {
            "the line moved faster during the run than just before it, as when a host moves vCPUs onto SMT siblings of one core"
        } else {
            "the ceiling comes from one pair of CPUs per proximity class, and other pairs of a class can be faster"
        };
        notes.push(format!(
            "handoffs above the c2c ceiling measured just before the run ({}): {why}",
            over.join(", ")
        ));
    }
    if !smt {
        notes.push("no SMT siblings on this machine: the sibling case (a lock thread whose SMT sibling scans memory, seed 000's ~10× loss) could not be run here; shown instead: a scanner time-sharing a lock thread's CPU, and lock threads on other cores (cross-core)".into());
    }
    if topo.machine.hypervisor {
        notes.push("running under a hypervisor: vCPU preemption and host neighbours can distort lock results".into());
    }
    if cfg.stats == StatsMode::Counters && cfg.cs_ns < COUNTERS_CHEAP_CS_NS {
        notes.push(format!("lock stats cost: counting spins and handoffs adds a few ns to every acquisition, which with a {} ns critical section can be tens of percent of the absolute rate; every thread pays it, so ratios compare like with like; `smtlab lockscan --lock-stats off` runs the bare lock (README: measured cost)", cfg.cs_ns));
    }
    if cfg.stats == StatsMode::Off {
        notes.push("lock stats off: the bare lock algorithms ran; acquisitions are the workload's own count, and spins and handoffs were not recorded".into());
    }
    let verdict = verdict_lines(&results, smt);
    Ok(LockscanReport {
        schema_version: SCHEMA_VERSION,
        smt,
        hypervisor: topo.machine.hypervisor,
        cs_ns: cfg.cs_ns,
        scan_bytes: cfg.scan_bytes,
        duration_ns: cfg.spec.duration.as_nanos() as u64,
        repeat: cfg.repeat,
        lock_stats: cfg.stats,
        c2c_latency_ns,
        scope: sweep_scope(topo, &cfg.layout),
        results,
        verdict,
        notes,
    })
}

/// The unit a sweep stays inside, for the report.
pub fn sweep_scope(topo: &Topology, layout: &Layout) -> Option<crate::placement::ScopeUnit> {
    match layout {
        Layout::Sweep(within) => Some(crate::placement::scoped_cores(topo, *within).0),
        _ => None,
    }
}

/// One run of one (scenario, lock) trial.
struct Run {
    result: RunResult,
    /// Each lock thread's lock stats.
    stats: Vec<ThreadStats>,
    /// One-way c2c latency per proximity class among the lock CPUs, just before the run.
    latencies: Vec<(Proximity, f64)>,
}

/// One c2c latency per proximity class among `cpus` (the first pair of each class in
/// their order; at most four measurements of ≈ 10 ms), now. Empty on the fake engine.
fn class_latencies(engine: &dyn Engine, topo: &Topology, cpus: &[u32]) -> Vec<(Proximity, f64)> {
    let mut tried: Vec<Proximity> = vec![Proximity::SameCpu];
    let mut out = Vec::new();
    for (i, &a) in cpus.iter().enumerate() {
        for &b in &cpus[i + 1..] {
            let p = topo.proximity(a, b);
            if tried.contains(&p) {
                continue;
            }
            tried.push(p);
            if let Some(l) = engine.cache_line_latency_ns(a, b) {
                out.push((p, l));
            }
        }
    }
    out
}

/// The one-way latency a run's handoffs met on average: each class's latency weighted by
/// the handoffs between CPUs of that class. A run whose handoffs all stayed on one CPU
/// (time-sharing threads: no line moves) or had none gets the nearest class measured.
pub fn handoff_latency_ns(
    handoffs: &[(Proximity, u64)],
    latencies: &[(Proximity, f64)],
) -> Option<f64> {
    let (mut ns, mut n) = (0.0, 0u64);
    for (p, h) in handoffs {
        if let Some((_, l)) = latencies.iter().find(|(q, _)| q == p) {
            ns += *h as f64 * l;
            n += h;
        }
    }
    if n > 0 {
        Some(ns / n as f64)
    } else {
        latencies.iter().min_by_key(|(p, _)| *p).map(|(_, l)| *l)
    }
}

/// Per-run acquisition rate of each lock thread.
fn lock_rates(r: &RunResult, lock_threads: usize) -> Vec<f64> {
    r.threads
        .iter()
        .take(lock_threads)
        .map(|t| t.ops_per_sec(r.measured_ns))
        .collect()
}

fn summarise(
    topo: &Topology,
    s: &Scenario,
    kind: LockKind,
    runs: &[Run],
    baseline: Option<&Vec<Run>>,
    lock_stats: StatsMode,
    interrupted: bool,
) -> ScenarioResult {
    let counted = lock_stats != StatsMode::Off;
    let nl = s.lock_cpus.len();
    let scan: CpuSet = s.scan_cpus.iter().copied().collect();
    let cpus: Vec<u32> = s.lock_cpus.iter().chain(&s.scan_cpus).copied().collect();
    let sharing: Vec<bool> = cpus
        .iter()
        .map(|&c| topo.core_of(c).intersects(&scan))
        .collect();
    // The median run by total acquisitions represents counts (locked, spins).
    let totals: Vec<f64> = runs
        .iter()
        .map(|r| lock_rates(&r.result, nl).iter().sum())
        .collect();
    let med = stats::median(&totals);
    let mid = totals
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 - med).abs().total_cmp(&(b.1 - med).abs()))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let (mr, ms) = (&runs[mid].result, &runs[mid].stats);
    // Acquisitions as the lock counted them, or (stats off) as the workload did. Both count
    // every release; their windows start and end a few µs apart (≈ 0.01 % here), and the
    // workload's count misses its last batch (< 64 acquisitions, only below 100 ns).
    let locked_of = |i: usize| {
        if counted {
            ms[i].counts.acquisitions
        } else {
            mr.threads[i].ops
        }
    };
    let total_locked: u64 = (0..nl).map(locked_of).sum();
    let mut rows = Vec::new();
    for (i, &cpu) in cpus.iter().enumerate() {
        let per_run: Vec<f64> = runs
            .iter()
            .map(|r| &r.result)
            .map(|r| r.threads[i].ops_per_sec(r.measured_ns))
            .collect();
        let tr = &mr.threads[i];
        let (locked, spins, handoffs, by) = if i < nl {
            let st = &ms[i];
            let mut by: Vec<(Proximity, u64)> = Vec::new();
            for (prev, &n) in st.handoffs_from.iter().enumerate() {
                if n == 0 || prev >= nl {
                    continue;
                }
                let p = topo.proximity(s.lock_cpus[prev], cpu);
                match by.iter_mut().find(|(q, _)| *q == p) {
                    Some((_, m)) => *m += n,
                    None => by.push((p, n)),
                }
            }
            by.sort();
            (
                locked_of(i),
                counted.then_some(st.counts.spins),
                counted.then_some(st.counts.handoffs),
                by,
            )
        } else {
            (0, None, None, Vec::new())
        };
        rows.push(ThreadRow {
            thread: i,
            role: if i < nl { "lock" } else { "scan" }.into(),
            cpu,
            observed_cpus: runs.iter().fold(CpuSet::new(), |a, r| {
                a.union(&r.result.threads[i].observed_cpus)
            }),
            core: topo.core_of(cpu),
            shares_core_with_scanner: i < nl && sharing[i],
            ops_per_sec: stats::median(&per_run),
            ops_per_sec_summary: Summary::of(&per_run),
            locked,
            spins,
            share_of_acquisitions: if total_locked > 0 {
                locked as f64 / total_locked as f64
            } else {
                0.0
            },
            spins_per_acquire: spins.map(|s| {
                if locked > 0 {
                    s as f64 / locked as f64
                } else {
                    0.0
                }
            }),
            handoffs_received: handoffs,
            handoffs_by_proximity: spins.map(|_| by),
            cpu_share: tr.cpu_share(mr.measured_ns),
            involuntary_ctx_switches: tr.involuntary_ctx_switches,
        });
    }
    let med_rates: Vec<f64> = rows.iter().take(nl).map(|r| r.ops_per_sec).collect();
    // Per run: mean rate of the sharing lock threads and of the others.
    let group = |r: &RunResult, want: bool| -> Option<f64> {
        let v: Vec<f64> = lock_rates(r, nl)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| sharing[*i] == want)
            .map(|(_, x)| x)
            .collect();
        (!v.is_empty()).then(|| stats::mean(&v))
    };
    let a: Vec<f64> = runs.iter().filter_map(|r| group(&r.result, true)).collect();
    let b: Vec<f64> = runs
        .iter()
        .filter_map(|r| group(&r.result, false))
        .collect();
    let sharing_vs_others = stats::bootstrap_ratio_of_medians(&a, &b, 0.95, 2000, 42);
    let cross_core_vs_baseline = baseline.and_then(|base| {
        let base_rates: Vec<f64> = base
            .iter()
            .map(|r| &r.result)
            .filter_map(|r| {
                let v: Vec<f64> = lock_rates(r, nl)
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !sharing[*i])
                    .map(|(_, x)| x)
                    .collect();
                (!v.is_empty()).then(|| stats::mean(&v))
            })
            .collect();
        stats::bootstrap_ratio_of_medians(&b, &base_rates, 0.95, 2000, 43)
    });
    let handoffs: u64 = ms.iter().map(|t| t.counts.handoffs).sum();
    let secs = mr.measured_ns.max(1) as f64 / 1e9;
    let handoffs_per_sec = counted.then(|| handoffs as f64 / secs);
    // The median run's handoffs against the latencies measured just before that run.
    let mut by_class: Vec<(Proximity, u64)> = Vec::new();
    for (p, h) in rows
        .iter()
        .filter_map(|r| r.handoffs_by_proximity.as_ref())
        .flatten()
    {
        match by_class.iter_mut().find(|(q, _)| q == p) {
            Some((_, n)) => *n += h,
            None => by_class.push((*p, *h)),
        }
    }
    let c2c_latency_ns = handoff_latency_ns(&by_class, &runs[mid].latencies);
    ScenarioResult {
        scenario: s.clone(),
        lock: kind,
        runs: runs.len(),
        threads: rows,
        acquisitions_per_sec: Summary::of(&totals),
        jain_index: stats::jain(&med_rates),
        max_min_ratio: stats::max_min_ratio(&med_rates),
        handoffs_per_sec,
        c2c_latency_ns,
        c2c_latency_by_proximity: runs[mid].latencies.clone(),
        handoffs_share_of_ceiling: handoffs_per_sec
            .zip(c2c_latency_ns)
            .map(|(h, l)| crate::experiments::c2c::share_of_ceiling(h, l)),
        sharing_vs_others,
        cross_core_vs_baseline,
        pinning_ok: runs.iter().all(|r| r.result.pinning_ok()),
        interrupted,
    }
}

fn fmt_ci(c: &Ci, runs: usize) -> String {
    if runs < 3 {
        format!(
            "{:.2}× ({runs} run{}: too few for a confidence interval, use --repeat 3 or more)",
            c.estimate,
            if runs == 1 { "" } else { "s" }
        )
    } else {
        format!("{:.2}× (95% CI {:.2}–{:.2})", c.estimate, c.low, c.high)
    }
}

fn verdict_lines(results: &[ScenarioResult], smt: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        if r.scenario.scan_cpus.is_empty() {
            continue;
        }
        let what = if smt {
            "lock threads sharing a core with a scanner"
        } else {
            "the lock thread time-sharing its CPU with a scanner"
        };
        match &r.sharing_vs_others {
            Some(c) => out.push(format!(
                "{} / {}: {what} acquired at {} the rate of the others",
                r.lock,
                r.scenario.label,
                fmt_ci(c, r.runs)
            )),
            None => {
                if r.threads.iter().any(|t| t.shares_core_with_scanner) {
                    out.push(format!(
                        "{} / {}: every lock thread shares a core with a scanner; nothing to compare against",
                        r.lock, r.scenario.label
                    ));
                }
            }
        }
        if let Some(c) = &r.cross_core_vs_baseline {
            // Call a direction only when the whole interval lies beyond a 5 % noise band
            // (criterion's rule); with fewer than 3 runs there is no interval to trust.
            let (lo, hi) = if r.runs >= 3 {
                (c.low, c.high)
            } else {
                (c.estimate, c.estimate)
            };
            let meaning = if lo > 1.05 {
                "faster: the scanner took CPU time from a competing lock thread, so fewer acquisitions competed"
            } else if hi < 0.95 {
                "slower: cross-core interference (shared cache, memory bandwidth, frequency)"
            } else {
                "no clear cross-core effect (the interval includes no change)"
            };
            out.push(format!(
                "{} / {}: lock threads on other cores than the scanner ran at {} of their rate without a scanner — {meaning}",
                r.lock,
                r.scenario.label,
                fmt_ci(c, r.runs)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_latency_weights_each_class_by_its_handoffs() {
        use Proximity::*;
        let lat = [(SmtSibling, 10.0), (SameL3, 40.0), (OtherPackage, 130.0)];
        // 3 sibling handoffs at 10 ns and 1 cross-package one at 130: (30 + 130) / 4.
        let h = [(SmtSibling, 3), (OtherPackage, 1)];
        assert_eq!(handoff_latency_ns(&h, &lat), Some(40.0));
        // Handoffs between threads time-sharing one CPU move no line: not weighted.
        let h = [(SameCpu, 1000), (SameL3, 10)];
        assert_eq!(handoff_latency_ns(&h, &lat), Some(40.0));
        // None at all: the nearest class measured.
        assert_eq!(handoff_latency_ns(&[], &lat), Some(10.0));
        assert_eq!(handoff_latency_ns(&[(SameCpu, 5)], &lat[1..]), Some(40.0));
        assert_eq!(handoff_latency_ns(&[(SameL3, 5)], &[]), None);
    }

    #[test]
    fn seed_default_layout_scans_the_lowest_cpu() {
        // As the seed computes it: lock = mask & (mask - 1), scan = the lowest bit.
        let mask = 0b1111u32;
        assert_eq!(mask & (mask - 1), 0b1110);
        let s = Scenario {
            label: "x".into(),
            lock_cpus: vec![1, 2, 3],
            scan_cpus: vec![0],
        };
        let p = s.plan();
        assert_eq!(p.threads.len(), 4);
        assert_eq!(p.threads[3].cpus.to_vec(), [0]);
        assert!(!p.oversubscribed);
    }
}
