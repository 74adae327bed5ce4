//! smtlab: measure how CPU sharing — SMT siblings, lock contention, noisy neighbours,
//! oversubscription — speeds up or wrecks real workloads.
//!
//! Data flows `cli → Config → topology → placement → engine → samples → stats → Report →
//! renderers`; see ARCHITECTURE.md for the module map. Sizing, planning, statistics,
//! analysis and rendering are pure and tested without the hardware, on the
//! [`engine::FakeEngine`]. What reaches outside the process lives in these modules:
//! - `engine`: measurement threads, their pinning and priority (setpriority), clocks.
//! - `burn`: burner threads and child processes (`burn::process`), their scheduling policy
//!   and nice value (`burn::sched`).
//! - `counters`: perf_event_open(2) per thread and per command tree; `counters::prepare`
//!   raises the open-file limit and holds one event of each kind for the process's life.
//! - `oltp`: database connections and SQLite files; managed PostgreSQL clusters (`initdb`,
//!   `postgres` child processes, their data directory); pinning server backends and restoring
//!   them (`oltp::pin`).
//! - `smt`: `smt::apply` writes CPU online and SMT control files in sysfs, after
//!   `smt::journal` writes the journal file that `restore` reads.
//! - `top::trace`: creates a tracefs instance, enables `sched_switch` in it, removes it.
//! - `experiments::compare`: runs the user's command in its own process group with its CPUs
//!   set (`runner`); pins server processes and starts burners per run (`session`, `pins`);
//!   creates and removes cpuset cgroups (`cgroup`); starts a guard process that undoes all
//!   that if smtlab is killed (`guard`). `experiments::neighbors` and `experiments::oltp`
//!   start burners and databases through `burn` and `oltp`; `study` through its phases.
//! - `mem::pages`: `mmap`ed buffers; with `--reserve`, hugetlb pool sizes in sysfs and
//!   their journal (`mem::pages::reserve`).
//! - `tempstate`: `$TMPDIR/smtlab-*` directories with an owner lock, and removing those of
//!   owners that are gone.
//! - `interrupt`: the SIGINT, SIGTERM and SIGHUP handlers.
//! - files the user asked for, each through [`fsutil::replace`] after
//!   [`fsutil::check_output`]: `report::write_all` (the study's files), `commands::study`
//!   and `commands::merge` (`--prometheus`, and merge's fleet files), `commands::compare`
//!   (`--export-csv`, `--export-markdown`), `commands::top` (`--textfile`, through
//!   [`fsutil::replace_unsynced`]); files the user names, read through
//!   [`fsutil::read_input`] (`results.json`, password files, `--yield`, the journals, the
//!   hosts' results.json files for `merge` in `fleet::input`, on scoped threads); a
//!   journal that fails its checks is renamed aside ([`fsutil::keep_aside`]).
//! - the study's environment for `SLURM_*` (`report::slurm`).
//! - reading sysfs and procfs: `topology::discover`, `hygiene` (0.25 s of `/proc/stat`),
//!   `mem` (`mem report`), `counters::reason`.
//!
//! Modules (each file opens with a `//!` line saying what it owns):
//! - [`affinity`]: Affinity syscalls sized for > 1024 CPUs.
//! - [`burn`]: CPU burners ("rulers") stressing one resource each, as engine threads or child processes.
//! - [`cli`]: The command line: clap types live here and nowhere else.
//! - [`commands`]: One module per subcommand, each taking a typed config.
//! - [`conclusion`]: What a run concluded: findings, answer rows and their evidence, shared by every experiment and the report.
//! - [`counters`]: Hardware and software event counters per thread and per process tree (perf_event_open), and IPC/CPI.
//! - [`cpuset`]: `CpuSet` and its list / hex / sysfs / decimal-mask forms.
//! - [`duration`]: Durations as users type them (`5`, `500ms`, `250us`, `1.5s`, `1h`), one grammar for every option.
//! - [`engine`]: The `Engine` trait: measurement threads spawned, pinned and timed for real, or made up.
//! - [`error`]: Exit codes and error classes.
//! - [`fleet`]: `merge`: many hosts' studies grouped by machine type, pooled across hosts, into one answer per type.
//! - [`fsutil`]: Writing a file whole (only over a regular file) and reading a named input file (regular, capped).
//! - [`experiments`]: Experiments: engine measurements turned into result models (c2c, …).
//! - [`hygiene`]: Is other work or the hypervisor already using the CPUs about to be measured?
//! - [`interrupt`]: Ctrl-C / SIGTERM as a polled flag, so cleanup runs on the normal return path.
//! - [`lenient`]: Reading JSON in which non-finite numbers were written as `null`.
//! - [`limits`]: The upper bounds on counts, sizes and times users may ask for, with one refusal wording.
//! - [`locks`]: The lock library: every measured lock behind one trait, with switchable instrumentation.
//! - [`mem`]: Overcommit, OOM risk, page cache, huge pages; and what page size costs on this CPU.
//! - [`note`]: Typed notes a result carries, written in JSON as their sentence.
//! - [`oltp`]: Singleton inserts on real databases (SQLite, PostgreSQL by URL or managed).
//! - [`placement`]: The placement planner: topology + request → CPUs per thread.
//! - [`progress`]: The one progress trait: study phases, `mem pages`, `compare`'s runs.
//! - [`quote`]: User input quoted in messages once, shortened when long.
//! - [`render`]: Shared text renderers (tables, number formats).
//! - [`report`]: The study's one data model (`results.json`) and its HTML, Markdown and SVG renderers.
//! - [`rwcache`]: A read-mostly metadata cache under seven protection schemes, from a spinlock to RCU.
//! - [`smt`]: Switching SMT off and on through sysfs, journaled so that every change can be undone.
//! - [`stats`]: Statistics over samples: medians, MAD, outliers, bootstrap CIs, verdicts, fairness.
//! - [`tempstate`]: Temporary directories with an owner lock, and the sweep that removes those whose smtlab is gone.
//! - [`study`]: `study`: a loop over phases, each an experiment sized to its share of a time budget, into one report.
//! - [`top`]: Per-core utilisation: what "50 % CPU" means when two threads share a core.
//! - [`topology`]: CPU topology from a sysfs root, and its views.

// Some modules link explicitly to paths that also resolve implicitly; both are right.
#![allow(rustdoc::redundant_explicit_links)]

/// `eprintln!` that never panics: a warning or progress line that cannot be written
/// (stderr closed, `2>/dev/full`) is dropped, and the run goes on. std's `eprintln!`
/// panics on a write error, which turned every warning into exit 101.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod affinity;
pub mod burn;
pub mod cli;
pub mod commands;
pub mod conclusion;
pub mod counters;
pub mod cpuset;
pub mod duration;
pub mod engine;
pub mod error;
pub mod experiments;
pub mod fleet;
pub mod fsutil;
pub mod hygiene;
pub mod interrupt;
pub mod lenient;
pub mod limits;
pub mod locks;
pub mod mem;
pub mod note;
pub mod oltp;
pub mod placement;
pub mod progress;
pub mod quote;
pub mod render;
pub mod report;
pub mod rwcache;
pub mod smt;
pub mod stats;
pub mod study;
pub mod tempstate;
pub mod top;
pub mod topology;
