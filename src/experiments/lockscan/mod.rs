//! `lockscan`: lock threads hammer one global lock while scan threads memset a buffer;
//! does a lock thread that shares a core with a scanner acquire less?
//!
//! The test is SQL Server's "To Hyper or not to Hyper" (Slava Oks, 2005): there the lock
//! thread whose Hyper-Threading sibling scanned memory took about 700,000 acquisitions
//! while the others took about 10 million. That program packed its counters into one
//! array, so it measured its own false sharing too, and reported one 10-second sample of
//! one lock. Here every lock thread has its own stats block (cache-line padded, in the lock
//! library), runs repeat with interleaved scenarios (baseline without scanners first in
//! each round), each lock thread beside a scanner is compared with itself in the same round's
//! baseline, and the verdict carries a bootstrap interval with its three-way class.
//!
//! Split by job, as hyperfine splits executor, result, relative speed and export:
//! - `config`: what was asked for ([`LockscanConfig`], [`Layout`]), checked when built;
//! - `scenario`: where the threads go on this topology ([`scenarios`]);
//! - `workload`: the lock and scan threads ([`LockScan`]);
//! - `run`: the trials on an [`Engine`](crate::engine::Engine) ([`run`]);
//! - `analysis`: runs into per-scenario summaries (pure);
//! - `view`: the model in tables and words — terminal, study section, verdict lines and
//!   notes, findings, exports (pure);
//! - `model`: the serde result ([`LockscanReport`]).

mod analysis;
mod config;
mod model;
mod run;
mod scenario;
pub mod verdict;
pub mod view;
mod workload;

pub use analysis::handoff_latency_ns;
pub use config::{
    AUTO_FALLBACK_BYTES, AUTO_L2_MULTIPLE, AUTO_MAX_BYTES, AutoScanBytes, Layout, LockscanConfig,
    auto_scan_bytes,
};
pub use model::{
    DisturbedRound, DisturbedRun, LockscanReport, LockscanSection, SCHEMA_VERSION, ScenarioResult,
    ThreadRole, ThreadRow,
};
pub use run::{OnInterval, run};
pub use scenario::{Scenario, scenarios, sweep_scope};
pub use verdict::PHASE;
pub use view::TITLE;
pub use workload::LockScan;
