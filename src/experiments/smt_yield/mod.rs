//! `yield`: what SMT adds on the same N cores. Each workload runs as `one-per-core` (N
//! threads, one per core: the SMT-off equivalent), `all` (every sibling of those N cores:
//! SMT on, full) and `pairs` (N threads on N/2 cores), interleaved round by round in
//! counterbalanced order (A B C, C B A, B C A, …) so that no layout always runs first. The
//! **SMT yield** is throughput(all) ÷ throughput(one-per-core): above 1 the siblings add
//! capacity, within the noise band around 1 any change is too small to tell, below it they cost. The **shared-core speed** is a
//! thread's rate in `pairs` ÷ its rate in `one-per-core`. Both are paired per round, with
//! a bootstrap interval and a three-way class ([`crate::stats::Effect`]).
//!
//! Codemap (split by job, as hyperfine splits executor, result and export):
//! - [`config`]: the workloads (rulers, the hot-page lock, inserts) and the checked
//!   configuration.
//! - [`layouts`]: the three layouts on the same cores, and which workloads run (pure).
//! - [`run`](mod@run): the interleaved rounds on an [`crate::engine::Engine`].
//! - [`analysis`]: summaries, yields and shared-core speeds (pure).
//! - [`model`]: the serde result.
//! - [`view`]: the terminal report, the study's section, the finding and answer rows,
//!   the export document (pure).

pub mod analysis;
pub mod config;
pub mod layouts;
pub mod model;
pub mod run;
pub mod verdict;
pub mod view;

pub use config::{Config, DEFAULT_WORKLOADS, InsertTarget, Subject, WORKLOAD_NAMES};
pub use layouts::{Planned, SINGLE_WRITER, plan};
pub use model::{
    Layout, LayoutRatio, WorkloadKind, WorkloadResult, YieldPlan, YieldReport, YieldSection,
};
pub use run::{run, run_planned};
pub use view::{PHASE, TITLE};
