//! `study`: every experiment this machine supports, sized to a time budget, into one
//! [`Report`](crate::report::Report).
//!
//! The study is a loop over [`phases::ALL`]: each [`Phase`] is sized for its share of the
//! budget (pure, so the estimate is known before anything runs), then runs on an
//! [`Engine`] and writes its section of the report. A phase that fails is recorded with
//! its error and the study goes on; a phase that is not possible here is recorded as
//! skipped with the reason. Ctrl-C ([`crate::interrupt`]) lets the running experiment stop
//! and undo its changes on its normal return path (the experiments guarantee that), keeps
//! what it finished, marks later phases `not run` and the report `partial`.
//!
//! On the [`FakeEngine`](crate::engine::FakeEngine) every phase runs its real experiment
//! code with made-up measurements, so tests of the report see what users would.

#[cfg(test)]
pub mod fixture;
pub mod phase;
pub mod phases;

pub use phase::{Outcome, Phase, RunCtx, SizeCtx};

use crate::engine::Engine;
use crate::experiments::neighbors::BurnerMode;
use crate::oltp::DbTarget;
use crate::report::{
    self, MachineInfo, Note, PhaseRecord, PhaseStatus, Provenance, Report, Status, StudySettings,
};
use crate::topology::Topology;
use anyhow::Result;
use std::time::Duration;

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
    /// The unit the comparison layouts (lockscan's sweep, oltp's layouts, rwcache) stay inside.
    pub within: crate::placement::Scope,
    /// The user's own command (`smtlab study -- CMD`) and how to place it; None = the
    /// compare phase is skipped. Unchecked: a synthetic study runs a command that need not
    /// exist here; `smtlab study` checks it before any phase, the phase before a real run.
    pub compare: Option<crate::experiments::compare::Config>,
    /// Event counters every measured thread opens.
    pub counters: crate::counters::Mode,
}

/// Every phase sized to `cfg.budget` on `topo` (pure). Neighbors' burners are processes
/// on a real engine, threads on a synthetic one (it cannot account for processes).
pub fn size(topo: &Topology, cfg: &Config, synthetic: bool) -> Result<Vec<Box<dyn Phase>>> {
    let repeat = if cfg.budget < Duration::from_secs(120) {
        3
    } else {
        5
    };
    let burner_mode = if synthetic {
        BurnerMode::Thread
    } else {
        BurnerMode::Process
    };
    phases::ALL
        .iter()
        .map(|e| {
            (e.size)(&SizeCtx {
                topo,
                cfg,
                budget: cfg
                    .budget
                    .mul_f64(phases::share_in(e.name, cfg.compare.is_some())),
                repeat,
                burner_mode,
                synthetic,
            })
        })
        .collect()
}

/// Progress of the phases (a stage per phase: progress bars in the command, nothing in
/// tests), through the crate's one progress trait.
pub use crate::progress::Progress;

/// How a phase ended, in the one line progress shows: `done in 4.2 s`, or its status and
/// the first line of its reason (at most 110 characters).
fn outcome_line(status: PhaseStatus, reason: Option<&str>, wall: Duration) -> String {
    match (status, reason) {
        (PhaseStatus::Done, _) => format!("done in {:.1} s", wall.as_secs_f64()),
        (s, Some(r)) => format!("{}: {}", s.label(), first_line(r)),
        (s, None) => s.label().to_string(),
    }
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if l.chars().count() > 110 {
        l.chars().take(107).collect::<String>() + "…"
    } else {
        l.to_string()
    }
}

/// Runs the study. Never fails as a whole: failed phases are recorded in the report, which
/// is then `partial`. The caller writes the report, and exits 130 when it was interrupted,
/// 1 when a phase failed.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    machine: MachineInfo,
    mut provenance: Provenance,
    cfg: &Config,
    progress: &dyn Progress,
) -> Result<Report> {
    let t0 = engine.now_ns();
    let phases = size(topo, cfg, engine.synthetic())?;
    let total: Duration = phases.iter().map(|p| p.estimate()).sum();
    let settings = StudySettings {
        quick: cfg.quick,
        budget_ns: cfg.budget.as_nanos() as u64,
        estimate_ns: total.as_nanos() as u64,
        db: cfg.db.to_string(),
    };
    let mut rep = Report::new(
        engine.synthetic(),
        provenance.clone(),
        machine,
        topo.clone(),
        settings,
    );
    if total > cfg.budget + cfg.budget / 2 {
        rep.notes.push(Note::OverBudget {
            needed_s: total.as_secs_f64(),
            budget_s: cfg.budget.as_secs_f64(),
        });
    }
    use crate::render::Caveat;
    if rep.provenance.build_profile == "debug" {
        rep.notes.push(Note::Caveat(Caveat::DebugBuild));
    }
    if topo.machine.hypervisor {
        let kind = Some(rep.machine.hypervisor.clone()).filter(|k| k != "none");
        rep.notes.push(Note::Caveat(Caveat::Hypervisor { kind }));
    }
    let gov = &rep.machine.frequency_governor;
    if gov != "performance" && gov != "unavailable" && gov != "unknown" {
        let name = gov.clone();
        rep.notes.push(Note::Caveat(Caveat::Governor { name }));
    }

    let ctx = RunCtx {
        engine,
        topo,
        progress,
    };
    for phase in &phases {
        let name = phase.name();
        let estimate = phase.estimate();
        let record = |status, reason, wall_ns| PhaseRecord {
            phase: name,
            status,
            reason,
            estimate_ns: estimate.as_nanos() as u64,
            wall_ns,
        };
        if crate::interrupt::requested() {
            let why = format!(
                "{} arrived before this phase",
                crate::interrupt::name(crate::interrupt::signal())
            );
            rep.phases.push(record(PhaseStatus::NotRun, Some(why), 0));
            let line = outcome_line(PhaseStatus::NotRun, None, Duration::ZERO);
            progress.finish(name.label(), &line);
            continue;
        }
        if let Some(why) = phase.skip_reason() {
            let line = outcome_line(PhaseStatus::Skipped, Some(&why), Duration::ZERO);
            progress.finish(name.label(), &line);
            rep.phases.push(record(PhaseStatus::Skipped, Some(why), 0));
            continue;
        }
        let start = engine.now_ns();
        progress.start(name.label(), phase.units(), estimate);
        let out = match phase.run(&ctx, &mut rep) {
            Ok(o) => o,
            Err(e) if e.chain().any(|c| c.is::<crate::error::Interrupted>()) => {
                Outcome::interrupted_if(true)
            }
            Err(e) => Outcome::failed(format!("{e:#}")),
        };
        let wall = engine.now_ns().saturating_sub(start);
        let line = outcome_line(
            out.status,
            out.reason.as_deref(),
            Duration::from_nanos(wall),
        );
        progress.finish(name.label(), &line);
        rep.phases.push(record(out.status, out.reason, wall));
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
    if crate::interrupt::requested() {
        rep.interrupted_by = crate::interrupt::signal();
    }
    provenance.wall_ns = engine.now_ns().saturating_sub(t0);
    rep.provenance = provenance;
    rep.verdict = report::verdict::build(&rep);
    Ok(rep)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::PhaseName;

    pub const QUICK: Duration = QUICK_BUDGET;
    pub const DEFAULT: Duration = DEFAULT_BUDGET;

    pub fn config(budget: Duration) -> Config {
        Config {
            quick: budget <= QUICK_BUDGET,
            budget,
            db: DbTarget::Sqlite(None),
            command: "smtlab study".into(),
            within: crate::placement::Scope::Package,
            compare: None,
            counters: crate::counters::Mode::default(),
        }
    }

    /// `size` of phase `name` on a made-up machine of `cores` × `threads_per_core`, for
    /// a study of `budget`.
    pub fn sized<T>(
        cores: u32,
        threads_per_core: u32,
        budget: Duration,
        name: PhaseName,
        size: impl Fn(&SizeCtx<'_>) -> T,
    ) -> T {
        let topo = crate::topology::fixture::topology(cores, threads_per_core, true);
        let cfg = config(budget);
        size(&SizeCtx {
            topo: &topo,
            cfg: &cfg,
            budget: budget.mul_f64(phases::share_in(name, cfg.compare.is_some())),
            repeat: if budget < Duration::from_secs(120) {
                3
            } else {
                5
            },
            burner_mode: BurnerMode::Process,
            synthetic: false,
        })
    }

    fn total(cores: u32, threads_per_core: u32, budget: Duration) -> Duration {
        let topo = crate::topology::fixture::topology(cores, threads_per_core, true);
        let phases = size(&topo, &config(budget), false).unwrap();
        phases.iter().map(|p| p.estimate()).sum()
    }

    #[test]
    fn sizing_fits_the_budget_on_two_cpus() {
        let q = total(2, 1, QUICK_BUDGET);
        assert!(q <= QUICK_BUDGET + Duration::from_secs(4), "{q:?}");
        let l = total(2, 1, DEFAULT_BUDGET);
        assert!(l <= DEFAULT_BUDGET + Duration::from_secs(10), "{l:?}");
        assert!(l > q);
    }

    #[test]
    fn every_phase_is_sized_in_order() {
        let topo = crate::topology::fixture::topology(4, 2, false);
        let phases = size(&topo, &config(QUICK_BUDGET), true).unwrap();
        let names: Vec<PhaseName> = phases.iter().map(|p| p.name()).collect();
        let listed: Vec<PhaseName> = phases::ALL.iter().map(|e| e.name).collect();
        assert_eq!(names, listed);
    }
}
