//! `study`: every experiment this machine supports, sized to a time budget, into one
//! [`Report`](crate::report::Report).
//!
//! Phases run in a fixed order — topology, c2c, lockscan, neighbors, oltp, rwcache — each
//! through the experiment's library function with a configuration sized by [`size`](crate::study::size). A
//! phase that fails is recorded with its error and the study goes on; a phase that is not
//! possible here is recorded as skipped with the reason. Ctrl-C ([`crate::interrupt`]) lets
//! the running experiment stop and undo its changes on its normal return path (the
//! experiments guarantee that), keeps what it finished, marks later phases `not run` and the
//! report `partial`.
//!
//! Measurements come from a [`Lab`](crate::study::Lab): [`RealLab`](crate::study::RealLab) measures this machine, [`FakeLab`](crate::study::FakeLab) makes
//! up deterministic results through the [`FakeEngine`](crate::engine::FakeEngine) for tests of everything above.

use crate::cpuset::CpuSet;
use crate::engine::{Engine, FakeEngine, PingPongSpec, RealEngine, RunSpec, ThreadCtx, Workload};
use crate::experiments::c2c::{self, C2c};
use crate::experiments::lockscan::{self, Layout};
use crate::experiments::neighbors::{self, BurnerMode, BurnerPlacement, HotPage, Worker};
use crate::experiments::rwcache;
use crate::locks::LockKind;
use crate::oltp::{self, DbTarget, OltpReport};
use crate::placement::{PlanError, Request};
use crate::report::{
    self, C2cSection, LockscanSection, MachineInfo, NeighborsSection, NeighborsSeries,
    NeighborsStep, OltpLayoutSummary, OltpSection, PhaseName, PhaseRecord, PhaseStatus, Provenance,
    Report, RwcacheRow, RwcacheSection, Status, StudySettings,
};
use crate::stats::{self, SplitMix64, Summary};
use crate::topology::{Proximity, Topology};
use anyhow::Result;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What `--quick` sizes the measurements to: the whole study then fits in a minute.
pub const QUICK_BUDGET: Duration = Duration::from_secs(36);
/// The budget without `--quick` or `--budget`.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(300);

/// A validated `smtlab study` invocation.
#[derive(Debug, Clone)]
pub struct Config {
    pub quick: bool,
    /// Time the measurements are sized to fill.
    pub budget: Duration,
    /// The database for `oltp`.
    pub db: DbTarget,
    /// The command line, for the report.
    pub command: String,
    /// The unit the seed layouts (lockscan's sweep, oltp's layouts, rwcache) stay inside.
    pub within: crate::placement::Scope,
}

/// Share of the budget each phase is sized to.
const SHARES: [(PhaseName, f64); 5] = [
    (PhaseName::C2c, 0.05),
    (PhaseName::Lockscan, 0.30),
    (PhaseName::Neighbors, 0.30),
    (PhaseName::Oltp, 0.20),
    (PhaseName::Rwcache, 0.15),
];

/// Assumed fixed cost per run (threads, pinning, burner processes), for estimates.
const RUN_OVERHEAD: Duration = Duration::from_millis(15);

/// Every experiment's configuration, sized to the budget.
#[derive(Debug, Clone)]
pub struct Sizing {
    pub c2c_cpus: CpuSet,
    pub c2c_left_out: CpuSet,
    pub c2c: PingPongSpec,
    pub lockscan: lockscan::Config,
    pub lockscan_scenarios: usize,
    pub neighbors: neighbors::Config,
    pub neighbors_locks: Vec<LockKind>,
    pub neighbors_repeat: usize,
    pub oltp: oltp::Config,
    pub rwcache: rwcache::Config,
    /// Expected wall time per phase.
    pub estimates: Vec<(PhaseName, Duration)>,
}

impl Sizing {
    pub fn estimate(&self, p: PhaseName) -> Duration {
        self.estimates
            .iter()
            .find(|(q, _)| *q == p)
            .map(|e| e.1)
            .unwrap_or_default()
    }
    pub fn total(&self) -> Duration {
        self.estimates.iter().map(|e| e.1).sum()
    }
}

fn share(budget: Duration, p: PhaseName) -> Duration {
    let s = SHARES
        .iter()
        .find(|(q, _)| *q == p)
        .map(|x| x.1)
        .unwrap_or(0.0);
    budget.mul_f64(s)
}

fn clamp(d: Duration, lo: Duration, hi: Duration) -> Duration {
    d.max(lo).min(hi)
}

/// Splits one run's time slot into (warm-up, measurement): `measure_share` of it measured,
/// the rest warm-up, each clamped to its own limits.
fn split_run(
    slot: Duration,
    measure_share: f64,
    measure: (Duration, Duration),
    warm: (Duration, Duration),
) -> (Duration, Duration) {
    (
        clamp(slot.mul_f64(1.0 - measure_share), warm.0, warm.1),
        clamp(slot.mul_f64(measure_share), measure.0, measure.1),
    )
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Sizes every experiment to `budget` on `topo` (pure).
pub fn size(topo: &Topology, cfg: &Config, burner_mode: BurnerMode) -> Result<Sizing> {
    let budget = cfg.budget;
    let allowed = topo.allowed();
    let ncpu = allowed.len().max(1);
    let repeat = if budget < Duration::from_secs(120) {
        3
    } else {
        5
    };
    let mut estimates = vec![(PhaseName::Topology, Duration::ZERO)];

    // c2c: as many CPUs as the share allows; the first core's siblings first (the SMT
    // pair), then one CPU per core in spread order (other L3s, other packages).
    let samples = if cfg.quick { 100 } else { 300 };
    let round_trips = 1000;
    let per_pair = c2c::estimate(
        1,
        &PingPongSpec {
            samples,
            round_trips,
        },
    );
    let max_pairs =
        (share(budget, PhaseName::C2c).as_secs_f64() / per_pair.as_secs_f64()).max(1.0) as usize;
    let c2c_cpus = c2c::fit_prefix(&c2c::budget_order(topo, &allowed), max_pairs);
    let c2c_left_out = allowed.difference(&c2c_cpus);
    let k = c2c_cpus.len();
    let pairs = k * k.saturating_sub(1) / 2;
    estimates.push((PhaseName::C2c, per_pair * pairs as u32));

    // lockscan: the sweep (one scenario per scanner position + a baseline), three locks:
    // the seed's TTAS, a fair ticket lock, and the futex mutex.
    let locks = vec![LockKind::Ttas, LockKind::Ticket, LockKind::Mutex];
    let scen = lockscan::scenarios(topo, &Layout::Sweep(cfg.within), true)?;
    let runs = (scen.len() * locks.len() * repeat) as u32;
    let per_run = (share(budget, PhaseName::Lockscan) / runs.max(1)).saturating_sub(RUN_OVERHEAD);
    let (l_warm, l_measure) = split_run(
        per_run,
        0.75,
        (ms(100), Duration::from_secs(10)),
        (ms(30), Duration::from_secs(1)),
    );
    let l_spec = RunSpec::new(l_warm, l_measure);
    // Before each run lockscan measures one pair per proximity class (at most four).
    let l_ceiling = c2c::estimate(4, &PingPongSpec::CEILING);
    estimates.push((
        PhaseName::Lockscan,
        (l_warm + l_measure + RUN_OVERHEAD + l_ceiling) * runs,
    ));
    let lock_cfg = lockscan::Config {
        layout: Layout::Sweep(cfg.within),
        locks,
        cs_ns: 0,
        scan_bytes: 1 << 20,
        spec: l_spec,
        repeat,
        baseline: true,
        stats: crate::locks::StatsMode::Counters,
    };

    // neighbors: up to 4 workers (the seed's inserters) on a fair spin lock and on an
    // adaptive one, burners stepping across the oversubscription point.
    let workers = ncpu.min(4);
    let steps: Vec<usize> = if ncpu <= 6 {
        (0..=ncpu + 2).collect()
    } else {
        let edge = ncpu - workers;
        let mut v = vec![0, 1, edge / 2, edge, edge + 1, edge + 2, ncpu + 2];
        v.sort_unstable();
        v.dedup();
        v
    };
    let nb_locks = vec![LockKind::Ticket, LockKind::Adaptive];
    let nsteps = (steps.len() * nb_locks.len() * repeat) as u32;
    let step_overhead = RUN_OVERHEAD
        * if burner_mode == BurnerMode::Process {
            3
        } else {
            1
        };
    let per_step =
        (share(budget, PhaseName::Neighbors) / nsteps.max(1)).saturating_sub(step_overhead);
    let (n_warm, n_measure) = split_run(
        per_step,
        0.8,
        (ms(100), Duration::from_secs(5)),
        (ms(30), Duration::from_secs(1)),
    );
    estimates.push((
        PhaseName::Neighbors,
        (n_warm + n_measure + step_overhead) * nsteps,
    ));
    let nb_cfg = neighbors::Config {
        workers,
        worker_placement: Request::Os,
        within: cfg.within,
        burner_steps: steps,
        burner: crate::burn::BurnSpec {
            kind: crate::burn::BurnerKind::Prime,
            policy: crate::burn::Policy::Normal,
            nice: None,
            max_prime: crate::burn::DEFAULT_MAX_PRIME,
        },
        burner_placement: BurnerPlacement::Os,
        burner_mode,
        spec: RunSpec::new(n_warm, n_measure),
    };

    // oltp: seed 001's layouts with one client per core (at most 8).
    let layouts = vec![Request::OnePerCore, Request::Pairs, Request::All];
    let (_, unit_cores) = crate::placement::scoped_cores(topo, cfg.within);
    let threads = unit_cores.len().clamp(1, 8);
    let possible = layouts
        .iter()
        .filter(|r| crate::placement::plan_within(topo, r, threads, cfg.within).is_ok())
        .count()
        .max(1);
    let oruns = (possible * repeat) as u32;
    let setup = match cfg.db {
        DbTarget::PostgresManaged => Duration::from_secs(6),
        _ => ms(300),
    };
    let per_orun =
        (share(budget, PhaseName::Oltp).saturating_sub(setup) / oruns).saturating_sub(ms(60));
    let (o_warm, o_measure) = split_run(
        per_orun,
        0.75,
        (ms(300), Duration::from_secs(20)),
        (ms(100), Duration::from_secs(2)),
    );
    estimates.push((
        PhaseName::Oltp,
        setup + (o_measure + o_warm + ms(60)) * oruns,
    ));
    let oltp_cfg = oltp::Config {
        db: cfg.db.clone(),
        table: oltp::TableSpec {
            schema: oltp::Schema::Seed001,
            key: oltp::KeyMode::Sequential,
            rows_per_txn: 1,
        },
        durability: oltp::Durability::Delayed,
        prefill: 0,
        threads,
        stop: oltp::StopRule::Duration,
        duration: o_measure,
        warmup: o_warm,
        layouts,
        within: cfg.within,
        repeat,
        dry_run: false,
        sysfs_root: "/".into(),
        json: true,
    };
    oltp_cfg.validate()?;

    // rwcache: every scheme at 1 thread and at every usable CPU, issue 6's table.
    // rwcache: every scheme at 1 thread and at every CPU of the scope's unit.
    let unit_cpus = unit_cores.iter().map(CpuSet::len).sum::<usize>().max(1);
    let rw_threads = if unit_cpus > 1 {
        vec![1, unit_cpus]
    } else {
        vec![1]
    };
    let schemes = crate::rwcache::SchemeKind::ALL.to_vec();
    let rruns = (rw_threads.len() * schemes.len() * repeat) as u32;
    let per_rrun = (share(budget, PhaseName::Rwcache) / rruns).saturating_sub(RUN_OVERHEAD);
    let (r_warm, r_measure) = split_run(
        per_rrun,
        0.8,
        (ms(80), Duration::from_secs(5)),
        (ms(20), Duration::from_secs(1)),
    );
    estimates.push((
        PhaseName::Rwcache,
        (r_measure + r_warm + RUN_OVERHEAD) * rruns,
    ));
    let rw_cfg = rwcache::Config {
        schemes,
        threads: rw_threads,
        placement: Request::Spread,
        within: cfg.within,
        table: rwcache::TableSpec::default(),
        spec: RunSpec::new(r_warm, r_measure),
        repeat,
        seed: 3,
    };
    rw_cfg.validate()?;
    Ok(Sizing {
        c2c_cpus,
        c2c_left_out,
        c2c: PingPongSpec {
            samples,
            round_trips,
        },
        lockscan_scenarios: scen.len(),
        lockscan: lock_cfg,
        neighbors: nb_cfg,
        neighbors_locks: nb_locks,
        neighbors_repeat: repeat,
        oltp: oltp_cfg,
        rwcache: rw_cfg,
        estimates,
    })
}

/// Progress of the phases (progress bars in the command, nothing in tests).
pub trait Progress {
    /// A phase starts: `units` steps expected (0 = no step counts; show time instead).
    fn start(&self, phase: PhaseName, units: u64, estimate: Duration);
    /// `n` more steps done.
    fn advance(&self, n: u64);
    /// The phase ended.
    fn finish(&self, phase: PhaseName, status: PhaseStatus, reason: Option<&str>, wall: Duration);
    /// What the current phase is doing now, in a few words (oltp's layout steps).
    fn note(&self, _msg: &str) {}
}

/// Shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: PhaseName, _: u64, _: Duration) {}
    fn advance(&self, _: u64) {}
    fn finish(&self, _: PhaseName, _: PhaseStatus, _: Option<&str>, _: Duration) {}
}

/// Where measurements come from.
pub trait Lab {
    /// The engine lockscan and neighbors run on.
    fn engine(&self) -> &dyn Engine;
    /// True when results are made up.
    fn synthetic(&self) -> bool;
    /// Nanoseconds on a monotonic clock (phase wall times).
    fn now_ns(&self) -> u64;
    /// How neighbors runs its burners.
    fn burner_mode(&self) -> BurnerMode;
    /// c2c over `cpus`; `on_pair(done, total)` after each pair.
    fn c2c(
        &self,
        topo: &Topology,
        cpus: &CpuSet,
        spec: &PingPongSpec,
        on_pair: &mut dyn FnMut(usize, usize),
    ) -> Result<C2c>;
    /// oltp: every layout and round. Ctrl-C gives the runs so far with `interrupted`.
    fn oltp(
        &self,
        topo: &Topology,
        cfg: &oltp::Config,
        say: &mut crate::commands::oltp::Say<'_>,
    ) -> Result<OltpReport>;
}

/// Measures this machine.
pub struct RealLab {
    start: Instant,
}

impl Default for RealLab {
    fn default() -> Self {
        RealLab {
            start: Instant::now(),
        }
    }
}

impl Lab for RealLab {
    fn engine(&self) -> &dyn Engine {
        &RealEngine
    }
    fn synthetic(&self) -> bool {
        false
    }
    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn burner_mode(&self) -> BurnerMode {
        BurnerMode::Process
    }
    fn c2c(
        &self,
        topo: &Topology,
        cpus: &CpuSet,
        spec: &PingPongSpec,
        on_pair: &mut dyn FnMut(usize, usize),
    ) -> Result<C2c> {
        c2c::measure(topo, cpus, spec, on_pair)
    }
    fn oltp(
        &self,
        _topo: &Topology,
        cfg: &oltp::Config,
        say: &mut crate::commands::oltp::Say<'_>,
    ) -> Result<OltpReport> {
        // The oltp command is the one place that sequences layouts, tables and row checks;
        // its JSON is the OltpReport model. On Ctrl-C it writes the runs so far, then fails.
        let mut buf = Vec::new();
        let r = crate::commands::oltp::run_with(cfg, &mut buf, say);
        let parsed = serde_json::from_slice::<OltpReport>(&buf);
        match (r, parsed) {
            (Ok(()), Ok(rep)) => Ok(rep),
            (Ok(()), Err(e)) => Err(anyhow::Error::new(e).context("reading oltp's JSON")),
            (Err(e), Ok(rep)) if e.chain().any(|c| c.is::<crate::error::Interrupted>()) => Ok(rep),
            (Err(e), _) => Err(e),
        }
    }
}

/// Made-up, deterministic measurements for tests: the [`FakeEngine`] for engine runs,
/// seeded numbers for c2c, and oltp rates derived from fake engine runs.
pub struct FakeLab {
    pub engine: FakeEngine,
    pub seed: u64,
    clock: AtomicU64,
}

impl FakeLab {
    pub fn new(seed: u64) -> Self {
        FakeLab {
            engine: FakeEngine::new(seed),
            seed,
            clock: AtomicU64::new(0),
        }
    }
}

/// A workload that only has a name (the fake engine never runs it).
struct Named(String);

impl Workload for Named {
    fn name(&self) -> String {
        self.0.clone()
    }
    fn run_thread(&self, _ctx: &ThreadCtx<'_>) {}
}

impl Lab for FakeLab {
    fn engine(&self) -> &dyn Engine {
        &self.engine
    }
    fn synthetic(&self) -> bool {
        true
    }
    fn now_ns(&self) -> u64 {
        self.clock.fetch_add(1_250_000_000, Ordering::Relaxed)
    }
    fn burner_mode(&self) -> BurnerMode {
        BurnerMode::Thread
    }
    fn c2c(
        &self,
        topo: &Topology,
        cpus: &CpuSet,
        spec: &PingPongSpec,
        on_pair: &mut dyn FnMut(usize, usize),
    ) -> Result<C2c> {
        let mut rng = SplitMix64::new(self.seed);
        let todo = c2c::pairs(cpus);
        let mut samples = Vec::new();
        for (i, &(a, b)) in todo.iter().enumerate() {
            let base = match topo.proximity(a, b) {
                Proximity::SameCpu => 5.0,
                Proximity::SmtSibling => 18.0,
                Proximity::SameL3 => 65.0,
                Proximity::OtherL3 => 110.0,
                Proximity::OtherPackage => 190.0,
            };
            let s: Vec<f64> = (0..spec.samples)
                .map(|_| base * (1.0 + 0.1 * rng.next_f64()))
                .collect();
            samples.push(((a, b), s));
            on_pair(i + 1, todo.len());
        }
        Ok(C2c::from_samples(topo, cpus, spec, &samples, false))
    }
    fn oltp(
        &self,
        topo: &Topology,
        cfg: &oltp::Config,
        _say: &mut crate::commands::oltp::Say<'_>,
    ) -> Result<OltpReport> {
        fake_oltp(&self.engine, topo, cfg)
    }
}

/// oltp from fake engine runs: rows = operations, as if each op were one insert.
fn fake_oltp(engine: &FakeEngine, topo: &Topology, cfg: &oltp::Config) -> Result<OltpReport> {
    use crate::oltp::report::{LayoutRun, SkippedLayout, ThreadRun};
    let engine = engine.clone().with_ops_per_sec(30_000.0);
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for r in &cfg.layouts {
        match crate::placement::plan_within(topo, r, cfg.threads, cfg.within) {
            Ok(p) => plans.push(p),
            Err(e @ (PlanError::NoSmt { .. } | PlanError::NotEnough { .. })) => {
                skipped.push(SkippedLayout {
                    placement: r.to_string(),
                    reason: e.to_string(),
                })
            }
            Err(e) => return Err(e.into()),
        }
    }
    let spec = RunSpec::new(cfg.warmup, cfg.duration);
    let mut runs = Vec::new();
    let mut rows_total = 0;
    for round in 0..cfg.repeat {
        for p in &plans {
            let r = engine.run(p, &spec, &Named("oltp-insert/sqlite".into()))?;
            let rows = r.total_ops();
            rows_total += rows + r.threads.iter().map(|t| t.warmup_ops).sum::<u64>();
            let lat = |ops: u64| {
                (r.measured_ns * cfg.threads as u64)
                    .checked_div(ops)
                    .unwrap_or(0)
            };
            runs.push(LayoutRun {
                placement: p.request.clone(),
                threads: p.threads.len(),
                round,
                inserts_per_sec: r.ops_per_sec(),
                txns_per_sec: r.ops_per_sec(),
                rows_committed: rows,
                elapsed_ns: r.measured_ns,
                thread_elapsed_min_ns: r.measured_ns,
                thread_elapsed_median_ns: r.measured_ns,
                thread_elapsed_max_ns: r.measured_ns,
                commit_latency_p50_ns: lat(rows),
                commit_latency_p99_ns: lat(rows) * 4,
                commit_latency_max_ns: lat(rows) * 40,
                commit_latency_mean_ns: lat(rows) as f64 * 1.1,
                rows_in_table: rows_total,
                rows_expected: rows_total,
                rows_verified: true,
                involuntary_ctx_switches: r
                    .threads
                    .iter()
                    .map(|t| t.involuntary_ctx_switches)
                    .sum(),
                client_cpu_time_ns: r.cpu_time_ns(),
                pinning_violations: 0,
                per_thread: r
                    .threads
                    .iter()
                    .map(|t| ThreadRun {
                        thread: t.thread,
                        cpus: t.cpus.to_string(),
                        backend_pid: None,
                        rows: t.ops,
                        elapsed_ns: r.measured_ns,
                        inserts_per_sec: t.ops_per_sec(r.measured_ns),
                        commit_latency_p99_ns: lat(t.ops) * 4 / cfg.threads as u64,
                    })
                    .collect(),
            });
        }
    }
    Ok(OltpReport {
        db: cfg.db.to_string(),
        db_version: "SQLite (made up)".into(),
        db_description: "fake engine: no database was opened".into(),
        schema: cfg.table.schema.to_string(),
        key: cfg.table.key.to_string(),
        durability: cfg.durability.to_string(),
        rows_per_txn: cfg.table.rows_per_txn,
        threads: cfg.threads,
        prefill_rows: cfg.prefill,
        rows_per_thread: None,
        duration_ns: Some(cfg.duration.as_nanos() as u64),
        warmup_ns: cfg.warmup.as_nanos() as u64,
        backend_pinning: "embedded: client threads only".into(),
        scope: plans.iter().find_map(|p| p.scope.clone()),
        runs,
        skipped,
        interrupted: false,
    })
}

/// What a phase body reports.
struct Outcome {
    status: PhaseStatus,
    reason: Option<String>,
}

impl Outcome {
    fn done() -> Self {
        Outcome {
            status: PhaseStatus::Done,
            reason: None,
        }
    }
    fn interrupted_if(stopped: bool) -> Self {
        if stopped {
            Outcome {
                status: PhaseStatus::Interrupted,
                reason: Some("Ctrl-C: the runs before it are kept".into()),
            }
        } else {
            Self::done()
        }
    }
}

/// Runs the study. Never fails as a whole: failed phases are recorded in the report, which
/// is then `partial`. The caller writes the report, and exits 130 when it was interrupted,
/// 1 when a phase failed.
pub fn run(
    lab: &dyn Lab,
    topo: &Topology,
    machine: MachineInfo,
    mut provenance: Provenance,
    cfg: &Config,
    progress: &dyn Progress,
) -> Result<Report> {
    let t0 = lab.now_ns();
    let sizing = size(topo, cfg, lab.burner_mode())?;
    let mut rep = Report {
        schema_version: report::SCHEMA_VERSION,
        status: Status::Complete,
        synthetic: lab.synthetic(),
        provenance: provenance.clone(),
        machine,
        smt: report::machine::smt_facts(topo),
        topology: topo.clone(),
        study: StudySettings {
            quick: cfg.quick,
            budget_ns: cfg.budget.as_nanos() as u64,
            estimate_ns: sizing.total().as_nanos() as u64,
            db: cfg.db.to_string(),
        },
        phases: Vec::new(),
        c2c: None,
        lockscan: None,
        neighbors: None,
        oltp: None,
        rwcache: None,
        verdict: report::Verdict {
            headline: String::new(),
            findings: Vec::new(),
            not_measured: Vec::new(),
        },
        notes: Vec::new(),
    };
    if sizing.total() > cfg.budget + cfg.budget / 2 {
        rep.notes.push(format!(
            "this machine needs about {:.0} s even with the shortest runs, more than the {:.0} s budget",
            sizing.total().as_secs_f64(),
            cfg.budget.as_secs_f64()
        ));
    }
    if rep.provenance.build_profile == "debug" {
        rep.notes.push("debug build: numbers are far below what a release build measures; run `cargo run --release -- study`".into());
    }
    if topo.machine.hypervisor {
        rep.notes.push(format!(
            "running under a hypervisor ({}): the host may place these vCPUs on SMT siblings of one core without saying so, and vCPU preemption distorts lock results",
            rep.machine.hypervisor
        ));
    }
    let gov = &rep.machine.frequency_governor;
    if gov != "performance" && gov != "unavailable" && gov != "unknown" {
        rep.notes.push(format!(
            "frequency governor is `{gov}`, not `performance`: clock changes add noise between runs"
        ));
    }

    for phase in PhaseName::ALL {
        let estimate = sizing.estimate(phase);
        if crate::interrupt::requested() {
            rep.phases.push(PhaseRecord {
                phase,
                status: PhaseStatus::NotRun,
                reason: Some("Ctrl-C arrived before this phase".into()),
                estimate_ns: estimate.as_nanos() as u64,
                wall_ns: 0,
            });
            progress.finish(phase, PhaseStatus::NotRun, None, Duration::ZERO);
            continue;
        }
        let start = lab.now_ns();
        let out = run_phase(lab, topo, &sizing, phase, &mut rep, progress);
        let out = match out {
            Ok(o) => o,
            Err(e) if e.chain().any(|c| c.is::<crate::error::Interrupted>()) => {
                Outcome::interrupted_if(true)
            }
            Err(e) => Outcome {
                status: PhaseStatus::Failed,
                reason: Some(format!("{e:#}")),
            },
        };
        let wall = lab.now_ns().saturating_sub(start);
        progress.finish(
            phase,
            out.status,
            out.reason.as_deref(),
            Duration::from_nanos(wall),
        );
        rep.phases.push(PhaseRecord {
            phase,
            status: out.status,
            reason: out.reason,
            estimate_ns: estimate.as_nanos() as u64,
            wall_ns: wall,
        });
    }
    if crate::interrupt::requested()
        || rep.phases.iter().any(|p| {
            matches!(
                p.status,
                PhaseStatus::Interrupted | PhaseStatus::NotRun | PhaseStatus::Failed
            )
        })
    {
        rep.status = Status::Partial;
    }
    provenance.wall_ns = lab.now_ns().saturating_sub(t0);
    rep.provenance = provenance;
    rep.verdict = report::verdict::build(&rep);
    Ok(rep)
}

fn run_phase(
    lab: &dyn Lab,
    topo: &Topology,
    sz: &Sizing,
    phase: PhaseName,
    rep: &mut Report,
    progress: &dyn Progress,
) -> Result<Outcome> {
    let est = sz.estimate(phase);
    match phase {
        PhaseName::Topology => {
            progress.start(phase, 1, est);
            progress.advance(1);
            Ok(Outcome::done())
        }
        PhaseName::C2c => {
            if sz.c2c_cpus.len() < 2 {
                return Ok(Outcome {
                    status: PhaseStatus::Skipped,
                    reason: Some(format!(
                        "only CPU {} is usable: no pair to bounce a cache line between",
                        sz.c2c_cpus
                    )),
                });
            }
            let pairs = c2c::pairs(&sz.c2c_cpus).len() as u64;
            progress.start(phase, pairs, est);
            let r = lab.c2c(topo, &sz.c2c_cpus, &sz.c2c, &mut |_, _| progress.advance(1))?;
            let stopped = r.interrupted;
            rep.c2c = Some(C2cSection {
                samples: sz.c2c.samples,
                round_trips: sz.c2c.round_trips,
                cpus_left_out: sz.c2c_left_out.to_string(),
                result: c2c::C2c {
                    left_out: sz.c2c_left_out.clone(),
                    ..r
                },
            });
            Ok(Outcome::interrupted_if(stopped))
        }
        PhaseName::Lockscan => {
            let c = &sz.lockscan;
            let scen = lockscan::scenarios(topo, &c.layout, c.baseline)?;
            let units = (scen.len() * c.locks.len() * c.repeat * c.spec.intervals()) as u64;
            progress.start(phase, units, est);
            let r = lockscan::run(lab.engine(), topo, c, &scen, &mut |_, _, _, _| {
                progress.advance(1)
            })?;
            let stopped = r.results.iter().any(|x| x.interrupted);
            rep.lockscan = Some(LockscanSection {
                layout: "sweep".into(),
                locks: c.locks.clone(),
                warmup_ns: c.spec.warmup.as_nanos() as u64,
                duration_ns: c.spec.duration.as_nanos() as u64,
                result: r,
            });
            Ok(Outcome::interrupted_if(stopped))
        }
        PhaseName::Neighbors => {
            let c = &sz.neighbors;
            let units =
                (c.burner_steps.len() * sz.neighbors_locks.len() * sz.neighbors_repeat) as u64;
            progress.start(phase, units, est);
            let mut runs = Vec::new();
            let mut stopped = false;
            'rounds: for _ in 0..sz.neighbors_repeat {
                for &lock in &sz.neighbors_locks {
                    let workers = c.workers;
                    let make = move |_: &crate::placement::Plan| -> Result<Box<dyn Worker>> {
                        Ok(Box::new(HotPage::new(lock, workers)))
                    };
                    let r =
                        neighbors::run(lab.engine(), topo, c, &make, &mut |_| progress.advance(1))?;
                    stopped = r.interrupted;
                    runs.push((lock, r));
                    if stopped {
                        break 'rounds;
                    }
                }
            }
            rep.neighbors = Some(NeighborsSection {
                workers: c.workers,
                locks: sz.neighbors_locks.clone(),
                burner_steps: c.burner_steps.clone(),
                burner_kind: c.burner.kind.to_string(),
                burner_mode: match c.burner_mode {
                    BurnerMode::Thread => "thread",
                    BurnerMode::Process => "process",
                }
                .into(),
                warmup_ns: c.spec.warmup.as_nanos() as u64,
                duration_ns: c.spec.duration.as_nanos() as u64,
                repeat: sz.neighbors_repeat,
                series: sz
                    .neighbors_locks
                    .iter()
                    .map(|&l| summarise_neighbors(l, &runs))
                    .collect(),
                runs: runs.into_iter().map(|(_, r)| r).collect(),
            });
            Ok(Outcome::interrupted_if(stopped))
        }
        PhaseName::Oltp => {
            progress.start(phase, 0, est);
            let r = lab.oltp(topo, &sz.oltp, &mut |m| progress.note(m))?;
            let stopped = r.interrupted;
            rep.oltp = Some(OltpSection {
                layouts: sz.oltp.layouts.iter().map(|l| l.to_string()).collect(),
                summary: summarise_oltp(&r),
                result: r,
            });
            Ok(Outcome::interrupted_if(stopped))
        }
        PhaseName::Rwcache => {
            let c = &sz.rwcache;
            let units = (c.threads.len() * c.schemes.len() * c.repeat) as u64;
            progress.start(phase, units, est);
            let r = rwcache::run(lab.engine(), topo, c, &mut |_, _, _, _| progress.advance(1))?;
            let stopped = r.interrupted;
            rep.rwcache = Some(RwcacheSection {
                rows: r
                    .results
                    .iter()
                    .filter_map(|x| {
                        Some(RwcacheRow {
                            scheme: x.scheme.to_string(),
                            threads: x.threads,
                            requests_per_sec: x.requests_per_sec?,
                            lock_cpu_share: x.lock_cpu_share.map(|s| s.median),
                        })
                    })
                    .collect(),
                result: r,
            });
            Ok(Outcome::interrupted_if(stopped))
        }
    }
}

/// Severity order of diagnoses, for breaking ties between sweeps.
fn severity(d: crate::experiments::diagnosis::Diagnosis) -> u8 {
    use crate::experiments::diagnosis::Diagnosis::*;
    match d {
        None => 0,
        SmtSharing => 1,
        SharedResources => 2,
        ExternalLoad => 3,
        Oversubscribed => 4,
        PreemptionCollapse => 5,
    }
}

/// One lock's steps over all its sweeps: median ops/s with spread, the majority diagnosis.
pub fn summarise_neighbors(
    lock: LockKind,
    runs: &[(LockKind, neighbors::NeighborsReport)],
) -> NeighborsSeries {
    let mine: Vec<&neighbors::NeighborsReport> = runs
        .iter()
        .filter(|(l, _)| *l == lock)
        .map(|(_, r)| r)
        .collect();
    let mut burners: Vec<usize> = mine
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.burners))
        .collect();
    burners.sort_unstable();
    burners.dedup();
    let mut steps: Vec<NeighborsStep> = Vec::new();
    for b in burners {
        let all: Vec<&neighbors::Step> = mine
            .iter()
            .flat_map(|r| r.steps.iter().filter(move |s| s.burners == b))
            .collect();
        let rates: Vec<f64> = all.iter().map(|s| s.ops_per_sec).collect();
        let Some(sum) = Summary::of(&rates) else {
            continue;
        };
        let mid = all
            .iter()
            .min_by(|x, y| {
                (x.ops_per_sec - sum.median)
                    .abs()
                    .total_cmp(&(y.ops_per_sec - sum.median).abs())
            })
            .expect("non-empty");
        let mut counts: Vec<(crate::experiments::diagnosis::Diagnosis, usize)> = Vec::new();
        for s in &all {
            match counts.iter_mut().find(|(d, _)| *d == s.diagnosis) {
                Some((_, n)) => *n += 1,
                None => counts.push((s.diagnosis, 1)),
            }
        }
        let diagnosis = counts
            .iter()
            .max_by_key(|(d, n)| (*n, severity(*d)))
            .map(|(d, _)| *d)
            .expect("non-empty");
        let mut p99: Vec<u64> = all.iter().map(|s| s.latency_p99_ns).collect();
        p99.sort_unstable();
        steps.push(NeighborsStep {
            burners: b,
            runnable_threads: mid.runnable_threads,
            cpus: mid.cpus,
            ops_per_sec: sum,
            ratio_to_first: 0.0,
            latency_p99_ns: p99[p99.len() / 2],
            diagnosis,
            reason: mid.reason.clone(),
        });
    }
    let first = steps.first().map(|s| s.ops_per_sec.median).unwrap_or(0.0);
    for s in &mut steps {
        s.ratio_to_first = if first > 0.0 {
            s.ops_per_sec.median / first
        } else {
            0.0
        };
    }
    NeighborsSeries { lock, steps }
}

/// Per layout over rounds, in the order layouts first ran.
pub fn summarise_oltp(r: &OltpReport) -> Vec<OltpLayoutSummary> {
    let mut names: Vec<&str> = Vec::new();
    for run in &r.runs {
        if !names.contains(&run.placement.as_str()) {
            names.push(&run.placement);
        }
    }
    names
        .into_iter()
        .filter_map(|n| {
            let runs: Vec<_> = r.runs.iter().filter(|x| x.placement == n).collect();
            let rates: Vec<f64> = runs.iter().map(|x| x.inserts_per_sec).collect();
            let p99: Vec<f64> = runs
                .iter()
                .map(|x| x.commit_latency_p99_ns as f64)
                .collect();
            Some(OltpLayoutSummary {
                placement: n.to_string(),
                inserts_per_sec: Summary::of(&rates)?,
                commit_latency_p99_ns: stats::median(&p99).round() as u64,
                rows_verified: runs.iter().all(|x| x.rows_verified),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(budget: Duration) -> Config {
        Config {
            quick: budget <= QUICK_BUDGET,
            budget,
            db: DbTarget::Sqlite(None),
            command: "smtlab study".into(),
            within: crate::placement::Scope::Package,
        }
    }

    #[test]
    fn quick_sizing_fits_its_budget_on_two_cpus() {
        let t = report::fixture::topology(2, 1, true);
        let s = size(&t, &cfg(QUICK_BUDGET), BurnerMode::Process).unwrap();
        assert!(
            s.total() <= QUICK_BUDGET + Duration::from_secs(4),
            "{:?}",
            s.estimates
        );
        assert_eq!(s.c2c_cpus.to_string(), "0-1");
        assert_eq!(
            s.lockscan_scenarios, 3,
            "baseline + scanner on each of 2 cores"
        );
        assert_eq!(s.neighbors.burner_steps, [0, 1, 2, 3, 4]);
        assert_eq!(s.oltp.threads, 2);
        assert!(s.lockscan.spec.duration >= ms(100));
    }

    #[test]
    fn big_machines_measure_a_subset_of_c2c_pairs_siblings_first() {
        let t = report::fixture::topology(32, 2, false);
        let s = size(&t, &cfg(QUICK_BUDGET), BurnerMode::Thread).unwrap();
        let v = s.c2c_cpus.to_vec();
        assert!(v.len() >= 2 && v.len() < 64, "{v:?}");
        assert_eq!(&v[..1], &[0]);
        assert!(v.contains(&32), "CPU 0's sibling is measured: {v:?}");
        assert!(!s.c2c_left_out.is_empty());
        assert!(s.neighbors.burner_steps.len() <= 7);
    }

    #[test]
    fn longer_budgets_give_longer_runs_and_more_repeats() {
        let t = report::fixture::topology(2, 1, true);
        let q = size(&t, &cfg(QUICK_BUDGET), BurnerMode::Process).unwrap();
        let l = size(&t, &cfg(DEFAULT_BUDGET), BurnerMode::Process).unwrap();
        assert!(l.lockscan.spec.duration > q.lockscan.spec.duration);
        assert_eq!(l.lockscan.repeat, 5);
        assert!(
            l.total() <= DEFAULT_BUDGET + Duration::from_secs(10),
            "{:?}",
            l.estimates
        );
    }
}
