//! `neighbors`: K workers do serialized "hot page" appends under one lock while the number
//! of CPU burners steps up; per step the throughput, latency, scheduling evidence and a
//! [`Diagnosis`] of the mechanism.
//!
//! The case it reproduces: singleton inserts into one table lose about half their rate
//! once burners land on the inserters' SMT siblings, and collapse to a few hundred per
//! second — about one per scheduler time slice — as soon as runnable threads exceed the
//! logical CPUs and a lock holder gets preempted (see [`diagnosis`] for the rules and
//! their sources).
//!
//! The worker side is a [`Worker`]: any engine workload that can also hand back its
//! operation latencies and lock-holder evidence. [`HotPage`] is the built-in one (small rows
//! appended to one shared 8 KiB page, like last-page inserts); a database insert path plugs
//! in the same way (`--workload oltp`).
//!
//! Split by job, as hyperfine splits executor, result, relative speed and export:
//! - `config`: what was asked for ([`NeighborsConfig`]), checked when built;
//! - `plan`: where each step's workers and burners go ([`step_plan`]);
//! - `workload`: the worker side ([`Worker`], [`HotPage`]);
//! - `run`: the steps on an [`Engine`](crate::engine::Engine) ([`run`]);
//! - `analysis`: one step's measurements into a [`Step`], rounds into [`SeriesStep`]s
//!   (pure);
//! - [`diagnosis`]: the rules naming the mechanism (pure);
//! - `model`: the serde result ([`NeighborsReport`]) and the study's section;
//! - `view`: the model in tables and words (terminal, study section, finding, exports).

mod analysis;
mod config;
pub mod diagnosis;
mod model;
mod plan;
mod run;
pub mod verdict;
pub mod view;
mod workload;

pub use analysis::summarise;
pub use config::{BurnerMode, BurnerPlacement, NeighborsConfig};
pub use diagnosis::Diagnosis;
pub use model::{
    NeighborsReport, NeighborsSection, NeighborsSeries, SCHEMA_VERSION, SeriesPlacement,
    SeriesStep, SeriesStep as NeighborsStep, Step,
};
pub use plan::{contention, step_not_possible_here, step_plan};
pub use run::run;
pub use view::{PHASE, TITLE};
pub use workload::{HotPage, MakeWorker, PREEMPTED_NS, Page, Worker, WorkerOutcome};
