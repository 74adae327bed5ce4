//! smtlab: measure how CPU sharing — SMT siblings, lock contention, noisy neighbours,
//! oversubscription — speeds up or wrecks real workloads.
//!
//! Data flows `cli → Config → topology → placement → engine → samples → stats → Report →
//! renderers`; see ARCHITECTURE.md. Only the engine (and the oltp driver pinning server
//! backends) changes affinity; everything else is pure and tested without the hardware.

/// Affinity syscalls sized for > 1024 CPUs.
pub mod affinity;
/// CPU burners ("rulers") stressing one resource each, as engine threads or child processes.
pub mod burn;
/// The command line: clap types live here and nowhere else.
pub mod cli;
/// One module per subcommand, each taking a typed config.
pub mod commands;
/// `CpuSet` and its list / hex / sysfs / decimal-mask forms.
pub mod cpuset;
/// The run engine: the only place threads are spawned, pinned and timed.
pub mod engine;
/// Exit codes and error classes.
pub mod error;
/// Experiments: engine measurements turned into result models (c2c, …).
pub mod experiments;
/// Ctrl-C / SIGTERM as a polled flag, so cleanup runs on the normal return path.
pub mod interrupt;
/// The lock library: every measured lock behind one trait, with switchable instrumentation.
pub mod locks;
/// Singleton inserts on real databases (SQLite, PostgreSQL by URL or managed): seeds 001/002.
pub mod oltp;
/// The placement planner: topology + request → CPUs per thread.
pub mod placement;
/// Shared text renderers (tables, number formats).
pub mod render;
/// The study's one data model (`results.json`) and its HTML, Markdown and SVG renderers.
pub mod report;
/// A read-mostly metadata cache under seven protection schemes, from a spinlock to RCU (seed 003).
pub mod rwcache;
/// Statistics over samples: medians, MAD, outliers, bootstrap CIs, verdicts, fairness.
pub mod stats;
/// `study`: every experiment this machine supports, sized to a time budget, into one report.
pub mod study;
/// CPU topology from a sysfs root, and its views.
pub mod topology;
