//! `smtlab neighbors`: hot-page workers while CPU burners step up.

use super::args::{CountersArg, OutputArgs, RootArg, RunArgs, WithinArg, default_help, help};
use super::values::{self, Counts, whole};
use crate::commands;
use crate::limits;
use crate::placement::Request;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// `smtlab neighbors` options.
#[derive(Args, Debug)]
#[command(
    mut_arg("duration", default_help("2s", "Measured time per step")),
    mut_arg("warmup", default_help("500ms", "Discarded warm-up per step")),
    mut_arg(
        "repeat",
        default_help(
            "1",
            "Rounds over the steps, each from the first step again; with 2 or more every step \
         gets a ratio paired with its round's first step and an interval (5+ for 95 % CIs)"
        )
    ),
    mut_arg(
        "json",
        help("JSON: `{steps: [{burners, ops_per_sec, diagnosis, …}]}`")
    )
)]
pub(super) struct NeighborsArgs {
    #[command(flatten)]
    root: RootArg,
    /// Worker threads (default 4 insert sessions).
    #[arg(long, default_value_t = 4, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    workers: usize,
    /// Worker side: `hot-page` (appends under a library lock) or `oltp` (real inserts).
    #[arg(long, default_value = "hot-page", value_enum)]
    workload: NeighborsWorkload,
    /// Lock of the hot page: tas, ttas, backoff, ticket, mcs, mutex, parking_lot, adaptive.
    #[arg(long, default_value = "ticket", hide_possible_values = true,
          value_parser = values::lock_kind())]
    lock: crate::locks::LockKind,
    /// Worker placement (default `os`: unpinned); one-per-core, pairs,
    /// spread, cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os", hide_possible_values = true,
          value_parser = values::placement())]
    placement: Request,
    #[command(flatten)]
    within: WithinArg,
    /// Burner counts to step through, e.g. 0,1,2,4 (default: 0 up to usable CPUs + 2).
    #[arg(long, value_name = "LIST", allow_hyphen_values = true,
          value_parser = values::counts(0, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    burners: Option<Counts>,
    /// Burner kind (default `prime`, a primality test per event).
    #[arg(long, default_value = "prime", hide_possible_values = true,
          value_parser = values::burner_kind())]
    burner_kind: crate::burn::BurnerKind,
    /// os, same-cpus, siblings, other-cores.
    #[arg(long, default_value = "os", hide_possible_values = true,
          value_parser = values::burner_placement())]
    burner_placement: crate::experiments::neighbors::BurnerPlacement,
    /// thread (in-process) or process (re-executed `smtlab burn`).
    #[arg(long, default_value = "thread", value_enum)]
    burner_mode: NeighborsBurnerMode,
    /// Burner scheduling policy: normal, batch, idle.
    #[arg(long, default_value = "normal", hide_possible_values = true,
          value_parser = values::policy())]
    burner_policy: crate::burn::Policy,
    /// Burner nice value (-20..19; negative needs CAP_SYS_NICE).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<i32>(-20, 19, values::WHY_NICE))]
    burner_nice: Option<i32>,
    #[command(flatten)]
    run: RunArgs,
    /// `--workload oltp`: the database (sqlite, sqlite:PATH, postgres://…, postgres-managed).
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// `--workload oltp`: a file whose first line is the PostgreSQL password.
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// `--workload oltp`: seed-001 or seed-002.
    #[arg(long, default_value = "seed-002", hide_possible_values = true,
          value_parser = values::schema())]
    schema: crate::oltp::Schema,
    /// `--workload oltp`: full or delayed.
    #[arg(long, default_value = "delayed", hide_possible_values = true,
          value_parser = values::durability())]
    durability: crate::oltp::Durability,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    counters: CountersArg,
    #[command(flatten)]
    output: OutputArgs,
    /// Run more than 64 threads per usable CPU (a run that only measures the scheduler
    /// and is slow to stop).
    #[arg(long)]
    force: bool,
}

/// `neighbors --workload`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum NeighborsWorkload {
    /// Appends under a library lock.
    #[value(alias = "hotpage")]
    HotPage,
    /// Real inserts (`--db`).
    Oltp,
}

/// `neighbors --burner-mode`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum NeighborsBurnerMode {
    /// In-process threads.
    Thread,
    /// Re-executed `smtlab burn` processes.
    Process,
}

impl NeighborsArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::neighbors::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::neighbors::NeighborsCommand> {
        use crate::experiments::neighbors::{BurnerMode, NeighborsConfig};
        let a = self;
        let burner_mode = match a.burner_mode {
            NeighborsBurnerMode::Thread => BurnerMode::Thread,
            NeighborsBurnerMode::Process => BurnerMode::Process,
        };
        let burner_steps = match a.burners {
            Some(Counts(v)) => {
                if burner_mode == BurnerMode::Process {
                    for &b in &v {
                        limits::at_most(
                            "--burners",
                            b as u64,
                            limits::MAX_PROCESSES,
                            limits::WHY_PROCESSES,
                        )?;
                    }
                }
                v
            }
            None => {
                let topo = commands::load_topology(&a.root.sysfs_root)?;
                (0..=topo.allowed().len() + 2).collect()
            }
        };
        let mut burner = crate::burn::BurnSpec::new(a.burner_kind);
        burner = burner
            .with_policy(a.burner_policy)
            .with_nice(a.burner_nice)?;
        let json = a.output.json();
        let workload = match a.workload {
            NeighborsWorkload::HotPage => commands::neighbors::WorkloadChoice::HotPage(a.lock),
            NeighborsWorkload::Oltp => {
                use crate::oltp::{DbTarget, KeyMode, StopRule, TableSpec};
                let oc = crate::oltp::OltpConfig::new(crate::oltp::OltpSettings {
                    db: DbTarget::parse(&a.db)?.with_password_file(a.db_password_file.clone())?,
                    table: TableSpec {
                        schema: a.schema,
                        key: KeyMode::parse("sequential")?,
                        rows_per_txn: 1,
                    },
                    durability: a.durability,
                    prefill: 0,
                    threads: a.workers,
                    stop: StopRule::Duration,
                    duration: Duration::from_secs(1),
                    warmup: Duration::ZERO,
                    layouts: vec![Request::Os],
                    within: a.within.within,
                    repeat: 1,
                    dry_run: a.dry_run,
                    sysfs_root: a.root.sysfs_root.clone(),
                    json,
                    counters: crate::counters::Mode::Off,
                })?;
                commands::neighbors::WorkloadChoice::Oltp(Box::new(oc))
            }
        };
        let spec = crate::engine::RunSpec::new(a.run.warmup(), a.run.duration())?
            .with_counters(a.counters.counters);
        // NeighborsConfig checks the spec and refuses `--placement all`; with_burners checks
        // the burner.
        let worker_placement = a.placement;
        Ok(commands::neighbors::NeighborsCommand {
            force: a.force,
            root: a.root.sysfs_root,
            exp: NeighborsConfig::new(a.workers, worker_placement, a.within.within, spec)?
                .with_burners(burner_steps, burner, a.burner_placement, burner_mode)?
                .with_repeat(a.run.repeat())?,
            workload,
            json,
            exports: a.output.exports(),
            dry_run: a.dry_run,
        })
    }
}
