//! The command line. clap's types stay in this file: each subcommand is turned into a typed,
//! validated config from `crate::commands` and handed over.

use crate::commands;
use crate::placement::Request;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "smtlab",
    version,
    about = "Measure how CPU sharing (SMT siblings, locks, noisy neighbours, oversubscription) speeds up or wrecks workloads",
    after_help = "Exit codes: 0 ok, 1 run failed, 2 bad input, 3 not possible on this machine, 130 interrupted."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug, Clone)]
struct RootArg {
    /// Read sysfs/procfs from this root instead of `/` (e.g. an unpacked topology dump).
    #[arg(long, value_name = "DIR", default_value = "/")]
    sysfs_root: PathBuf,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the CPU topology: packages, L3 groups, cores and their SMT siblings.
    Topo {
        #[command(flatten)]
        root: RootArg,
        /// One row per logical CPU.
        #[arg(long)]
        cpus: bool,
        /// Machine-readable JSON (model + oracle-shaped partitions).
        #[arg(long)]
        json: bool,
    },
    /// Run CPU burners, like `stress-ng --cpu`: each stresses one resource and reports its
    /// rate (events/s for `prime`, comparable with `sysbench cpu`).
    Burn {
        /// Burner kind: prime, int, mul, fma, fma-scalar, fma-avx2, fma-avx512, pause,
        /// stream, chase, l1, l2, scan.
        #[arg(long, short = 'k')]
        kind: String,
        /// Number of burners.
        #[arg(long, short = 't', default_value_t = 1)]
        threads: usize,
        /// Where burners run: one-per-core, pairs, all, same-core, same-l3, other-l3,
        /// other-package, siblings-of:LIST, cpus:LIST, os (not pinned; the default).
        #[arg(long, value_name = "REQUEST", conflicts_with = "cpus")]
        placement: Option<String>,
        /// Pin burners to these CPUs in turn (same as `--placement cpus:LIST`).
        #[arg(long, value_name = "LIST")]
        cpus: Option<String>,
        /// Measurement length: 5, 5s, 500ms, 2m.
        #[arg(long, short = 'd', default_value = "5s")]
        duration: String,
        /// Warm-up before measuring (buffers are built during it); 0 to skip.
        #[arg(long, default_value = "1s")]
        warmup: String,
        /// thread (engine threads of this process) or process (one child process each).
        #[arg(long, default_value = "thread")]
        mode: String,
        /// Scheduling policy of each burner: normal, batch, idle.
        #[arg(long, default_value = "normal")]
        policy: String,
        /// Nice value of each burner (-20..19; negative needs CAP_SYS_NICE).
        #[arg(long, allow_negative_numbers = true)]
        nice: Option<i32>,
        /// Prime bound for `prime`, as sysbench's --cpu-max-prime.
        #[arg(long, default_value_t = crate::burn::DEFAULT_MAX_PRIME)]
        max_prime: u64,
        /// Machine-readable JSON.
        #[arg(long)]
        json: bool,
        /// Internal: run as a process-mode burner child pinned to LIST.
        #[arg(long, hide = true, value_name = "LIST")]
        child_cpus: Option<String>,
        /// Internal: a child runs until SIGTERM.
        #[arg(long, hide = true, requires = "child_cpus")]
        until_stopped: bool,
    },
    /// Cache-line ping-pong latency between every pair of CPUs (as core-to-core-latency),
    /// with the ceiling it puts on contended lock handoffs per second.
    C2c {
        /// CPUs to measure (default: every CPU this process may use).
        #[arg(long, value_name = "LIST")]
        cpus: Option<String>,
        /// Samples per pair (one more is taken and discarded).
        #[arg(long, default_value_t = 300)]
        samples: usize,
        /// Round trips timed per sample.
        #[arg(long, default_value_t = 1000)]
        round_trips: usize,
        /// Machine-readable JSON: `{cpus, pairs: [{a, b, proximity, latency_ns}], matrix_ns, classes}`.
        #[arg(long)]
        json: bool,
    },
    /// Singleton inserts from N pinned client threads into SQLite or PostgreSQL (seeds 001,
    /// 002): inserts/s, per-thread elapsed, commit latency, a row-count check.
    Oltp(OltpArgs),
    /// Plan thread placements (which CPUs each thread gets) without running anything.
    Plan {
        /// one-per-core, pairs, all, same-core, same-l3, other-l3, other-package,
        /// siblings-of LIST, cpus LIST, os.
        request: String,
        /// CPU list for `siblings-of` and `cpus` (or write `siblings-of:LIST`).
        list: Option<String>,
        /// Number of threads to place.
        #[arg(long, short = 't')]
        threads: usize,
        #[command(flatten)]
        root: RootArg,
        /// JSON: `{request, threads: [{thread, cpus}], …}`.
        #[arg(long)]
        json: bool,
    },
}

/// Parses the process arguments and runs the command.
pub fn main() -> Result<()> {
    let cli = Cli::parse();
    crate::interrupt::install();
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Topo { root, cpus, json } => {
            let view = if json {
                commands::topo::View::Json
            } else if cpus {
                commands::topo::View::Cpus
            } else {
                commands::topo::View::Tree
            };
            commands::topo::run(
                &commands::topo::Config {
                    root: root.sysfs_root,
                    view,
                },
                &mut out,
            )
        }
        Command::Burn {
            kind,
            threads,
            placement,
            cpus,
            duration,
            warmup,
            mode,
            policy,
            nice,
            max_prime,
            json,
            child_cpus,
            until_stopped,
        } => {
            let bad = |e: String| crate::error::BadInput(e);
            let kind: crate::burn::BurnerKind = kind.parse().map_err(|e| bad(format!("{e}")))?;
            let placement = match (placement, cpus) {
                (Some(p), _) => Request::parse(&p)?,
                (None, Some(c)) => Request::parse(&format!("cpus:{c}"))?,
                (None, None) => Request::Os,
            };
            let duration = crate::burn::parse_duration(&duration)
                .map_err(|e| bad(format!("--duration: {e}")))?;
            let warmup = crate::burn::parse_duration_or_zero(&warmup)
                .map_err(|e| bad(format!("--warmup: {e}")))?;
            let child = match child_cpus {
                Some(c) => Some(commands::burn::Child {
                    cpus: crate::cpuset::CpuSet::parse_user(&c)?,
                    until_stopped,
                }),
                None => None,
            };
            commands::burn::run(
                &commands::burn::Config {
                    spec: crate::burn::BurnSpec {
                        kind,
                        policy: policy.parse().map_err(|e| bad(format!("--policy: {e}")))?,
                        nice,
                        max_prime,
                    },
                    threads,
                    placement,
                    mode: mode.parse().map_err(|e| bad(format!("--mode: {e}")))?,
                    warmup,
                    duration,
                    json,
                    child,
                },
                &mut out,
            )
        }
        Command::C2c {
            cpus,
            samples,
            round_trips,
            json,
        } => commands::c2c::run(
            &commands::c2c::Config {
                cpus: cpus
                    .map(|c| crate::cpuset::CpuSet::parse_user(&c))
                    .transpose()?,
                samples,
                round_trips,
                json,
            },
            &mut out,
        ),
        Command::Oltp(args) => commands::oltp::run(&oltp_config(args)?, &mut out),
        Command::Plan {
            request,
            list,
            threads,
            root,
            json,
        } => {
            let text = match list {
                Some(l) => format!("{request}:{l}"),
                None => request,
            };
            let request = Request::parse(&text)?;
            commands::plan::run(
                &commands::plan::Config {
                    root: root.sysfs_root,
                    request,
                    threads,
                    json,
                },
                &mut out,
            )
        }
    }
}

/// `smtlab oltp` options.
#[derive(Args, Debug)]
struct OltpArgs {
    /// sqlite (temporary file), sqlite:PATH, postgres-managed (a throwaway cluster smtlab
    /// creates and removes), or postgres://USER[:PASSWORD]@HOST[:PORT]/DB.
    #[arg(
        long,
        default_value = "sqlite",
        value_name = "DB",
        hide_default_value = false
    )]
    db: String,
    /// Table: seed-001 (bigint key, 150-byte rows) or seed-002 (identity key, uuid).
    #[arg(long, default_value = "seed-001")]
    schema: String,
    /// sequential (hot last page) or random keys.
    #[arg(long, default_value = "sequential")]
    key: String,
    /// Rows per transaction (one multi-row INSERT per commit).
    #[arg(long, default_value_t = 1, value_name = "N")]
    rows_per_txn: u32,
    /// full (commit waits for the log flush) or delayed (the seeds' Delayed Durability =
    /// FORCED: SQLite synchronous=OFF, PostgreSQL synchronous_commit=off).
    #[arg(long, default_value = "delayed")]
    durability: String,
    /// Random-key rows inserted before each run (seed 001's big table, scaled).
    #[arg(long, default_value_t = 0, value_name = "ROWS")]
    prefill: u64,
    /// Client threads (one connection each).
    #[arg(long, short = 't', default_value_t = 2)]
    threads: usize,
    /// Each thread inserts this many rows (seed 001 style; per-thread elapsed reported).
    #[arg(long, value_name = "R")]
    rows_per_thread: Option<u64>,
    /// Measurement length (10, 10s, 500ms, 2m); with --rows-per-thread, the time limit.
    /// Default 10 s, or 1 h with --rows-per-thread.
    #[arg(long, short = 'd')]
    duration: Option<String>,
    /// Warm-up before measuring. Default 1 s, or 0 with --rows-per-thread.
    #[arg(long)]
    warmup: Option<String>,
    /// Where client threads (and local backends) run: one-per-core, pairs, all, os,
    /// cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os", conflicts_with = "configs")]
    placement: String,
    /// Several layouts, run interleaved (e.g. one-per-core,pairs,all); impossible ones
    /// are skipped with the reason.
    #[arg(long, value_name = "LIST")]
    configs: Option<String>,
    /// Rounds over the layouts (A B C A B C …).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    root: RootArg,
    /// Machine-readable JSON (`inserts_per_sec`, `rows_verified`, …).
    #[arg(long)]
    json: bool,
}

/// Turns the `oltp` options into a validated config.
fn oltp_config(a: OltpArgs) -> Result<crate::oltp::Config> {
    use crate::oltp::{
        Config, DbTarget, Durability, KeyMode, Schema, StopRule, TableSpec, parse_duration,
        parse_layouts,
    };
    let stop = match a.rows_per_thread {
        Some(r) => StopRule::RowsPerThread(r),
        None => StopRule::Duration,
    };
    let rows_mode = a.rows_per_thread.is_some();
    let duration = match &a.duration {
        Some(d) => parse_duration(d)?,
        None if rows_mode => std::time::Duration::from_secs(3600),
        None => std::time::Duration::from_secs(10),
    };
    let warmup = match &a.warmup {
        Some(w) => parse_duration(w)?,
        None if rows_mode => std::time::Duration::ZERO,
        None => std::time::Duration::from_secs(1),
    };
    let layouts = parse_layouts(a.configs.as_deref().unwrap_or(&a.placement))?;
    let cfg = Config {
        db: DbTarget::parse(&a.db)?,
        table: TableSpec {
            schema: Schema::parse(&a.schema)?,
            key: KeyMode::parse(&a.key)?,
            rows_per_txn: a.rows_per_txn,
        },
        durability: Durability::parse(&a.durability)?,
        prefill: a.prefill,
        threads: a.threads,
        stop,
        duration,
        warmup,
        layouts,
        repeat: a.repeat,
        dry_run: a.dry_run,
        sysfs_root: a.root.sysfs_root,
        json: a.json,
    };
    cfg.validate()?;
    Ok(cfg)
}

/// True when the error is a closed stdout (`smtlab topo | head`): exit quietly.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
