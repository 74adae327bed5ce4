//! `smtlab yield`: SMT on vs off on the same cores.

use super::args::{
    CountersArg, DEFAULT_ROUNDS, OutputArgs, RootArg, RunArgs, WithinArg, default_help, help,
};
use super::values::{self, whole};
use crate::commands;
use crate::limits;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// `smtlab yield` options.
#[derive(Args, Debug)]
#[command(
    mut_arg("duration", default_help("1s", "Measured time per run: 1s, 500ms, 2m")),
    mut_arg(
        "warmup",
        default_help(
            "250ms",
            "Discarded warm-up before each run (ruler buffers are built during it)"
        )
    ),
    mut_arg(
        "repeat",
        default_help(
            DEFAULT_ROUNDS,
            "Rounds over every workload and layout (A B C A B C …); 3 or more for confidence intervals"
        )
    ),
    mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{plan, workloads: [{workload, layouts, smt_yield: \
         {comparison: {estimate, low, high, n, effect}}, shared_core_speed, runs}]}`"
        )
    )
)]
pub(super) struct YieldArgs {
    #[command(flatten)]
    root: RootArg,
    /// Workloads, in run order: rulers (prime, int, mul, fma, pause, stream, chase, l1, l2,
    /// scan), hot-page/LOCK (the neighbors worker under tas, ttas, backoff, ticket, mcs,
    /// mutex, parking_lot or adaptive), insert (with --db).
    #[arg(long, value_name = "LIST", default_value = crate::experiments::smt_yield::DEFAULT_WORKLOADS)]
    workloads: String,
    /// N: the cores every layout uses (default: every core of the unit --within picks).
    #[arg(long, value_name = "K", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_YIELD_CORES.into(), limits::WHY_YIELD_CORES))]
    cores: Option<usize>,
    #[command(flatten)]
    within: WithinArg,
    #[command(flatten)]
    run: RunArgs,
    /// Adds inserts: postgres-managed (a throwaway cluster) or postgres://USER@HOST[:PORT]/DB.
    /// SQLite admits one writer at a time, so it is left out with that reason.
    #[arg(long, value_name = "DB")]
    db: Option<String>,
    /// A file whose first line is the PostgreSQL password (keeps it out of `ps`).
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// Insert durability: full (commit waits for the log flush) or delayed.
    #[arg(long, default_value = "delayed", hide_possible_values = true,
          value_parser = values::durability())]
    durability: crate::oltp::Durability,
    /// Print the three layouts and the workloads only (works with --sysfs-root).
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    counters: CountersArg,
    #[command(flatten)]
    output: OutputArgs,
}

impl YieldArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::smt_yield::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::smt_yield::YieldCommand> {
        use crate::experiments::smt_yield::{Config, InsertTarget, Subject};
        let a = self;
        values::no_empty_items("--workloads", &a.workloads)?;
        let mut subjects = Subject::parse_list(&a.workloads)?;
        let db = match &a.db {
            Some(d) => {
                use crate::oltp::{DbTarget, KeyMode, Schema, TableSpec};
                if !subjects.contains(&Subject::Insert) {
                    subjects.push(Subject::Insert);
                }
                Some(InsertTarget {
                    db: DbTarget::parse(d)?.with_password_file(a.db_password_file.clone())?,
                    durability: a.durability,
                    table: TableSpec {
                        schema: Schema::parse("seed-001")?,
                        key: KeyMode::parse("sequential")?,
                        rows_per_txn: 1,
                    },
                })
            }
            None => None,
        };
        let spec = crate::engine::RunSpec::new(a.run.warmup(), a.run.duration())?
            .with_counters(a.counters.counters);
        let exp = Config::new(subjects, a.cores, a.within.within, spec, a.run.repeat(), db)?;
        Ok(commands::smt_yield::YieldCommand {
            root: a.root.sysfs_root,
            exp,
            json: a.output.json(),
            dry_run: a.dry_run,
            exports: a.output.exports(),
        })
    }
}
