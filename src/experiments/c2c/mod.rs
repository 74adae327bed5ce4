//! c2c: the one-way latency of handing a cache line from one CPU to another, for every
//! pair of CPUs, and what it implies for locks.
//!
//! The engine does the timing ([`crate::engine::ping_pong`]: two pinned threads bounce one
//! line by compare-exchange, round trip / 2, as the `core-to-core-latency` crate measures
//! it). Split by job: `run.rs` measures the pairs on any engine, `analysis.rs` turns the
//! samples into a matrix and summaries (pure, tested on made-up samples), `ceiling.rs`
//! holds the handoff ceiling arithmetic the lock experiments use, `budget.rs` fits a run
//! into a time budget, `model.rs` is the serde result, `view.rs` turns it into tables and
//! sentences (the terminal, the study's section, its finding, exports).

mod analysis;
mod budget;
mod ceiling;
mod model;
mod run;
pub mod verdict;
pub mod view;

pub use budget::{
    ASSUMED_LATENCY_NS, BudgetFit, MIN_BUDGET_SAMPLES, budget_order, estimate, fit_budget,
    fit_prefix,
};
pub use ceiling::{Ceiling, ceiling, share_of_ceiling};
pub use model::{C2c, C2cSection, ClassSummary, Pair};
pub use run::{measure, pairs};
pub use view::{PHASE, TITLE};
