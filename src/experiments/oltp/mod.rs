//! The oltp experiment: plan the layouts, open the database, run each layout (interleaved
//! round by round) with the insert workload on an [`Engine`](crate::engine::Engine), verify
//! the row count after every run, and return the [`OltpReport`](crate::oltp::OltpReport).
//!
//! The command (`smtlab oltp`) and the study's oltp phase both call [`run`]; with the
//! [`FakeEngine`](crate::engine::FakeEngine) the database is opened and the tables are
//! made for real, but the engine makes the insert counts up, so tests above this module see
//! the real orchestration and report model.
//!
//! Split by job: `run.rs` (orchestration: database, layouts, rounds), `analysis.rs` (a run's
//! figures and row check, layouts that coincide; pure), `model.rs` (the study's section
//! around [`crate::oltp::model`], the run's own model), `view.rs` (terminal text, study
//! tables, finding, answer row, export; pure).

mod analysis;
pub mod model;
mod run;
pub mod verdict;
pub mod view;

pub use analysis::{median, per_sec, row_check_failure, same_placements};
pub use model::{Note, OltpLayoutSummary, OltpSection};
pub use run::{Say, plan_layouts, run};
pub use view::{PHASE, TITLE};

use crate::placement::{Plan, Request};

/// A layout this machine can place: the request (as the report names it) and where its
/// threads go.
#[derive(Debug, Clone)]
pub struct PlannedLayout {
    pub request: Request,
    pub plan: Plan,
}
