//! `oltp`: singleton inserts from N client threads into a real database — bundled SQLite,
//! an existing PostgreSQL server, or a throwaway PostgreSQL cluster smtlab manages — with
//! the client threads (and local server backends) pinned per a placement plan: two
//! published SQL Server single-row insert tests (tables `seed-001`, `seed-002`) redone on
//! open databases.
//!
//! Codemap:
//! - [`target`]: what `--db` names; password redaction.
//! - [`schema`]: the insert tests' tables, INSERTs and keys in both SQL dialects.
//! - [`managed`]: find, `initdb`, start, stop and remove a PostgreSQL cluster.
//! - [`db`]: the engine-agnostic [`Db`] and per-thread [`Session`] (the insert path).
//! - [`wire`]: a blocking PostgreSQL protocol client for the insert hot path.
//! - [`pin`]: pin PostgreSQL backends to their client's CPUs and restore them.
//! - [`workload`]: the insert loop as an [`crate::engine::Workload`].
//! - [`model`]: the serde result model (its table is [`crate::experiments::oltp::view`]).
//!
//! Reusing the insert path (as `neighbors --workload oltp` does):
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use smtlab::oltp::{Db, DbTarget, Durability, InsertWorkload, KeyMode, Schema, StopRule, TableSpec};
//! # let plan: smtlab::placement::Plan = unimplemented!();
//! let db = Db::open(&DbTarget::parse("sqlite")?, Durability::Delayed, plan.threads.len())?;
//! let table = TableSpec { schema: Schema::Seed002, key: KeyMode::Sequential, rows_per_txn: 1 };
//! let before = db.create_table(&table, 0)?;
//! let w = InsertWorkload::new(&db, &table, &plan, StopRule::Duration)?; // sessions + pinned backends
//! let spec = smtlab::engine::RunSpec::new(std::time::Duration::from_secs(1), std::time::Duration::from_secs(5))?;
//! let run = smtlab::engine::run(&plan, &spec, &w);
//! let outcome = w.finish()?; // restores backend affinity; per-thread rows and latencies
//! let _ = run?;
//! assert_eq!(db.count_rows(&table)?, before + outcome.rows_committed());
//! db.close()?; // also done on drop: removes a temp SQLite file or the managed cluster
//! # Ok(()) }
//! ```

pub mod db;
pub mod managed;
pub mod model;
pub mod pin;
pub mod schema;
pub mod secret;
pub mod target;
pub mod wire;
pub mod workload;

pub use db::{BackendPinning, Db, Session};
pub use managed::ManagedCluster;
pub use model::{LayoutRun, OltpReport, SkippedLayout};
pub use schema::{Durability, KeyMode, Schema, TableSpec};
pub use target::{DbTarget, redact};
pub use workload::{InsertOutcome, InsertWorkload, StopRule};

use crate::error::BadInput;
use crate::placement::Request;
use std::path::PathBuf;
use std::time::Duration;

/// Most client threads one run may use.
pub const MAX_THREADS: usize = crate::limits::MAX_CONNECTIONS as usize;

/// What an `smtlab oltp` invocation asks for, as typed; [`OltpConfig::new`] checks it.
#[derive(Debug, Clone)]
pub struct OltpSettings {
    /// The database.
    pub db: DbTarget,
    /// Table and transaction shape.
    pub table: TableSpec,
    /// Commit durability.
    pub durability: Durability,
    /// Random-key rows inserted before each run.
    pub prefill: u64,
    /// Client threads.
    pub threads: usize,
    /// Fixed rows per thread, or fixed duration.
    pub stop: StopRule,
    /// Measurement length for [`StopRule::Duration`]; the give-up limit for
    /// [`StopRule::RowsPerThread`].
    pub duration: Duration,
    /// Warm-up before each measurement (rows kept in the table, not in the rates).
    pub warmup: Duration,
    /// Layouts to compare, run interleaved round by round.
    pub layouts: Vec<Request>,
    /// The unit the scoped layouts (one-per-core, pairs, all, …) stay inside (one package
    /// by default).
    pub within: crate::placement::Scope,
    /// Rounds.
    pub repeat: usize,
    /// Print the placements only.
    pub dry_run: bool,
    /// sysfs root for the topology (a dump only with `dry_run`).
    pub sysfs_root: PathBuf,
    /// JSON instead of the table.
    pub json: bool,
    /// Event counters each client thread opens over the measurement.
    pub counters: crate::counters::Mode,
}

/// A checked `smtlab oltp` invocation: [`OltpConfig::new`] is the only way to build one, so
/// the commands and the run that take it need not check again. It reads as its
/// [`OltpSettings`] and cannot be changed.
#[derive(Debug, Clone)]
pub struct OltpConfig(OltpSettings);

impl OltpConfig {
    /// The settings, or the first bad value named with what would be valid.
    pub fn new(settings: OltpSettings) -> Result<Self, BadInput> {
        settings.check()?;
        Ok(Self(settings))
    }
}

impl std::ops::Deref for OltpConfig {
    type Target = OltpSettings;
    fn deref(&self) -> &OltpSettings {
        &self.0
    }
}

impl OltpSettings {
    /// Checks values a type cannot: threads, rows, durations, repeat, layouts.
    fn check(&self) -> Result<(), BadInput> {
        if self.threads == 0 {
            return Err(BadInput("--threads must be at least 1 (got 0)".into()));
        }
        crate::limits::at_most(
            "--threads",
            self.threads as u64,
            MAX_THREADS as u64,
            "client threads, one database connection each",
        )?;
        crate::limits::at_most(
            "--prefill",
            self.prefill,
            crate::limits::MAX_PREFILL_ROWS,
            "rows inserted before each run",
        )?;
        self.table.validate()?;
        if let StopRule::RowsPerThread(0) = self.stop {
            return Err(BadInput("--rows-per-thread must be at least 1".into()));
        }
        if self.duration.is_zero() {
            return Err(BadInput("--duration must be positive".into()));
        }
        if self.repeat == 0 {
            return Err(BadInput("--repeat must be at least 1".into()));
        }
        if self.layouts.is_empty() {
            return Err(BadInput("--configs needs at least one layout".into()));
        }
        Ok(())
    }
}

/// Splits `--configs one-per-core,pairs,cpus:0,2,all` into requests: a bare number after a
/// list-taking request (`cpus:`, `siblings-of:`) continues that request's CPU list.
pub fn parse_layouts(s: &str) -> Result<Vec<Request>, BadInput> {
    let mut parts: Vec<String> = Vec::new();
    for tok in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let continues = tok.starts_with(|c: char| c.is_ascii_digit())
            && parts
                .last()
                .is_some_and(|p| p.starts_with("cpus") || p.starts_with("siblings-of"));
        match parts.last_mut() {
            Some(last) if continues => {
                last.push(',');
                last.push_str(tok);
            }
            _ => parts.push(tok.to_string()),
        }
    }
    parts
        .iter()
        .map(|p| Request::parse(p).map_err(|e| BadInput(e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_keep_cpu_lists_together() {
        let v = parse_layouts("one-per-core, pairs,cpus:0,2-3,all").unwrap();
        assert_eq!(
            v.iter().map(|r| r.to_string()).collect::<Vec<_>>(),
            ["one-per-core", "pairs", "cpus:0,2-3", "all"]
        );
        assert!(parse_layouts("bogus").is_err());
    }
}
