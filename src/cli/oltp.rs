//! `smtlab oltp`: inserts into SQLite or PostgreSQL from pinned client threads.

use super::args::{CountersArg, OutputArgs, Repeat, RootArg, WithinArg, default_help, help};
use super::values::{self, whole};
use crate::limits;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// `smtlab oltp` options.
#[derive(Args, Debug)]
#[command(
    mut_arg("repeat", default_help("1", "Rounds over the layouts (A B C A B C …)")),
    mut_arg(
        "json",
        help("Machine-readable JSON (`inserts_per_sec`, `rows_verified`, …)")
    )
)]
pub(super) struct OltpArgs {
    /// sqlite (temporary file), sqlite:PATH, postgres-managed (a throwaway cluster smtlab
    /// creates and removes), or postgres://USER@HOST[:PORT]/DB (password from PGPASSWORD,
    /// ~/.pgpass / PGPASSFILE or --db-password-file, as libpq looks).
    #[arg(
        long,
        default_value = "sqlite",
        value_name = "DB",
        hide_default_value = false
    )]
    db: String,
    /// A file whose first line is the PostgreSQL password (keeps it out of `ps`).
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// Table: seed-001 (bigint key, 150-byte rows) or seed-002 (identity key, uuid).
    #[arg(long, default_value = "seed-001", hide_possible_values = true,
          value_parser = values::schema())]
    schema: crate::oltp::Schema,
    /// sequential (hot last page) or random keys.
    #[arg(long, default_value = "sequential", hide_possible_values = true,
          value_parser = values::key_mode())]
    key: crate::oltp::KeyMode,
    /// Rows per transaction (one multi-row INSERT per commit).
    #[arg(long, default_value_t = 1, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<u32>(1, limits::MAX_ROWS_PER_TXN.into(), limits::WHY_ROWS_PER_TXN))]
    rows_per_txn: u32,
    /// full (commit waits for the log flush) or delayed (SQL Server's Delayed Durability =
    /// FORCED: SQLite synchronous=OFF, PostgreSQL synchronous_commit=off).
    #[arg(long, default_value = "delayed", hide_possible_values = true,
          value_parser = values::durability())]
    durability: crate::oltp::Durability,
    /// Random-key rows inserted before each run (a big table, scaled).
    #[arg(long, default_value_t = 0, value_name = "ROWS", allow_hyphen_values = true,
          value_parser = whole::<u64>(0, limits::MAX_PREFILL_ROWS.into(), limits::WHY_ROWS))]
    prefill: u64,
    /// Client threads (one connection each).
    #[arg(long, short = 't', default_value_t = 2, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_CONNECTIONS.into(), limits::WHY_CONNECTIONS))]
    threads: usize,
    /// Each thread inserts this many rows (per-thread elapsed reported).
    #[arg(long, value_name = "R", allow_hyphen_values = true,
          value_parser = whole::<u64>(1, limits::MAX_ROWS_PER_THREAD.into(), limits::WHY_ROWS))]
    rows_per_thread: Option<u64>,
    /// Measurement length (10, 10s, 500ms, 2m); with --rows-per-thread, the time limit.
    /// Default 10 s, or 1 h with --rows-per-thread.
    #[arg(long, short = 'd', allow_hyphen_values = true, value_parser = values::measured)]
    duration: Option<Duration>,
    /// Warm-up before measuring. Default 1 s, or 0 with --rows-per-thread.
    #[arg(long, allow_hyphen_values = true, value_parser = values::warmup)]
    warmup: Option<Duration>,
    /// Where client threads (and local backends) run: one-per-core, pairs, all, os,
    /// cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os", conflicts_with = "configs", hide_possible_values = true,
          value_parser = values::placement_text())]
    placement: String,
    /// Several layouts, run interleaved; impossible ones are skipped with the reason.
    /// The HT on/off comparison is `one-per-core,pairs,all`: N threads on N cores, N threads
    /// on N/2 cores' sibling pairs, and every sibling of those N cores (2N threads with SMT).
    #[arg(long, value_name = "LIST")]
    configs: Option<String>,
    #[command(flatten)]
    repeat: Repeat,
    #[command(flatten)]
    within: WithinArg,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    root: RootArg,
    #[command(flatten)]
    counters: CountersArg,
    #[command(flatten)]
    output: OutputArgs,
}

impl OltpArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let exports = self.output.exports();
        crate::commands::oltp::run(
            &crate::commands::oltp::OltpCommand {
                oltp: self.config()?,
                exports,
            },
            out,
        )
    }

    /// Turns the `oltp` options into a checked config.
    fn config(self) -> Result<crate::oltp::OltpConfig> {
        use crate::oltp::{DbTarget, OltpConfig, OltpSettings, StopRule, TableSpec, parse_layouts};
        let a = self;
        let stop = match a.rows_per_thread {
            Some(r) => StopRule::RowsPerThread(r),
            None => StopRule::Duration,
        };
        let rows_mode = a.rows_per_thread.is_some();
        let duration = match a.duration {
            Some(d) => d,
            None if rows_mode => Duration::from_secs(3600),
            None => Duration::from_secs(10),
        };
        let warmup = match a.warmup {
            Some(w) => w,
            None if rows_mode => Duration::ZERO,
            None => Duration::from_secs(1),
        };
        let layouts = match &a.configs {
            Some(c) => values::no_empty_items("--configs", c)
                .and_then(|()| parse_layouts(c))
                .map_err(|e| match e.0.starts_with("--configs") {
                    true => e,
                    false => crate::error::BadInput(format!("--configs: {e}")),
                }),
            None => parse_layouts(&a.placement)
                .map_err(|e| crate::error::BadInput(format!("--placement: {e}"))),
        }?;
        Ok(OltpConfig::new(OltpSettings {
            db: DbTarget::parse(&a.db)?.with_password_file(a.db_password_file)?,
            table: TableSpec {
                schema: a.schema,
                key: a.key,
                rows_per_txn: a.rows_per_txn,
            },
            durability: a.durability,
            prefill: a.prefill,
            threads: a.threads,
            stop,
            duration,
            warmup,
            layouts,
            within: a.within.within,
            repeat: a.repeat.repeat,
            dry_run: a.dry_run,
            sysfs_root: a.root.sysfs_root,
            json: a.output.json(),
            counters: a.counters.counters,
        })?)
    }
}
