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
