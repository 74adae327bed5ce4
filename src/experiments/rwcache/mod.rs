//! `rwcache`: a read-mostly metadata cache under each protection scheme of
//! [`crate::rwcache`], at each thread count, through the engine (pinned threads, schemes
//! interleaved A B C … per round). Per scheme: requests/s with spread; the share of CPU
//! spent in the lock; lock stats per side; then a before/after table (`spin` → `rwspin`),
//! the cost of a shared reader line, and the best scheme.
//!
//! The case it reproduces: SQL Server 2016 looked up a metadata cache (`CMED_HASH_SET`)
//! under one spinlock for every T-SQL statement; at about 640,000 batches/s that spinlock
//! took 31.8 % of the CPU. Cumulative Update 2 made it a reader/writer spinlock
//! (`LOCK_RW_CMED_HASH_SET`): 720,000 batches/s (+12.5 %) with the CPU busy 72 % instead of
//! 85 % (Microsoft SQLCAT, "SQLSweet16!, Episode 8: How SQL Server 2016 Cumulative Update 2
//! (CU2) can improve performance of highly concurrent workloads", 2016). `spin` → `rwspin`
//! is that change; the other schemes are the next steps for read-mostly data whose readers
//! should write nothing shared (per-thread reader slots, seqlock, RCU).
//!
//! A request looks up `lookups` uniformly random keys, each under its own read-side
//! acquisition (as each statement looks its metadata up), and with probability
//! `write_ratio` replaces one random entry; `work_ns` of busy work outside the lock can
//! stand for the rest of the statement (0 by default: the cache alone). Waits after a
//! collision are timed exactly (the clock is read only then) and give `wait_cpu_share`;
//! CPU in the lock is found by subtraction (see `analysis.rs`).
//!
//! Split by job: `config.rs` (what to run, checked), `workload.rs` (the request loop the
//! engine runs), `run.rs` (planning and interleaved rounds on any engine), `analysis.rs`
//! (runs → figures, pure), `view.rs` (the model in tables and words: the terminal, the
//! study's section, the sentences kept in the model, exports), `model.rs` (the serde
//! result).

mod analysis;
mod config;
mod model;
mod run;
pub mod view;
mod workload;

pub use analysis::{
    RunOutcome, before_after, best, caution, read_cost, summarise, summarise_reference,
};
pub use config::{MAX_LOOKUPS, MAX_THREADS, RwcacheConfig, TableSpec};
pub use model::{
    BeforeAfter, BeforeAfterRow, Best, BestAt, Caution, ReadCost, ReadCostAt, ReferenceResult,
    RwcacheReport, RwcacheRow, RwcacheSection, SCHEMA_VERSION, SchemeResult,
};
pub use run::{OnRun, run};
pub use view::{PHASE, TITLE};
pub use workload::{CacheWorkload, workload};
