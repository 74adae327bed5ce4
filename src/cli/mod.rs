//! The command line. clap's types stay in this module: each subcommand's file turns its
//! options into a typed, validated config from `crate::commands` and hands it over. Flag
//! groups several commands share are in `args`, value parsers in `values`, and the man
//! pages and shell completions, made from this one definition, in `docs`.

use anyhow::Result;
use clap::{Parser, Subcommand};

mod args;
mod burn;
mod c2c;
mod compare;
mod docs;
mod lockscan;
mod mem;
mod neighbors;
mod oltp;
mod pairs;
mod report;
mod rwcache;
mod smt;
mod smt_yield;
mod study;
mod top;
mod topo;
mod values;

pub use values::parse_bytes;

#[derive(Parser, Debug)]
#[command(
    name = "smtlab",
    version,
    about = "Measure how CPU sharing (SMT siblings, locks, noisy neighbours, oversubscription) speeds up or wrecks workloads",
    after_help = crate::error::exit_codes_help()
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the CPU topology: packages, L3 groups, cores and their SMT siblings.
    Topo(topo::TopoArgs),
    /// Run CPU burners, like `stress-ng --cpu`: each stresses one resource and reports its
    /// rate (events/s for `prime`, comparable with `sysbench cpu`).
    Burn(burn::BurnArgs),
    /// Singleton inserts from N pinned client threads into SQLite or PostgreSQL:
    /// inserts/s, per-thread elapsed, commit latency, a row-count check.
    Oltp(oltp::OltpArgs),
    /// Cache-line ping-pong latency between every pair of CPUs (as core-to-core-latency),
    /// with the ceiling it puts on contended lock handoffs per second.
    C2c(c2c::C2cArgs),
    /// Lock threads spin on one global lock while scan threads memset a buffer;
    /// does a lock thread sharing a core with a scanner acquire less?
    Lockscan(lockscan::LockscanArgs),
    /// Workers append to one hot page under a lock while CPU burners step up;
    /// per step ops/s, latency, scheduling evidence and the mechanism behind any loss.
    Neighbors(neighbors::NeighborsArgs),
    /// A read-mostly metadata cache under spin, rwspin, rwlock, parking_lot-rw,
    /// brlock, seqlock and rcu; requests/s, % CPU in the lock, lock stats, spin → rwspin.
    Rwcache(rwcache::RwcacheArgs),
    /// Your own command under SMT placements and noisy neighbours: one thread per core vs
    /// both siblings vs every sibling (or CPU lists), interleaved and paired by round,
    /// with medians, intervals and the SMT yield.
    /// `smtlab compare --cpus 0 --cpus 0-1 -- sysbench cpu run`.
    Compare(compare::CompareArgs),
    /// The main job: run every experiment this machine supports (topology, c2c, lockscan,
    /// neighbors, oltp, rwcache, yield; and your own command given after `--`) within a
    /// time budget and write results.json, report.html and summary.md with a plain-words
    /// verdict.
    Study(study::StudyArgs),
    /// Re-render report.html and summary.md from a study's results.json (byte-identical to
    /// what the study wrote).
    Report(report::ReportArgs),
    /// Merge many hosts' studies (results.json files, or directories holding them) into one
    /// answer per machine type: fleet.json, fleet.html and fleet.md.
    Merge(report::MergeArgs),
    /// SMT's state, and switching it off and on through sysfs with a journal that `smt
    /// restore` undoes (even after the switching process was killed).
    #[command(
        subcommand,
        after_help = "Switching needs root: a normal user gets exit code 4 (and can add --dry-run to see the writes)."
    )]
    Smt(smt::SmtAction),
    /// Per-CPU and per-core utilisation, like `mpstat -P ALL 1` but per core: what "50 %
    /// CPU" means when two threads share a core, and the capacity left in cores' worth.
    Top(top::TopArgs),
    /// Memory settings in plain words (overcommit and commit headroom, page cache, swap,
    /// huge pages, cgroup limits, OOM victims), and what page size costs on this CPU.
    #[command(subcommand)]
    Mem(mem::MemAction),
    /// Plan thread placements (which CPUs each thread gets) without running anything.
    Plan(topo::PlanArgs),
    /// SMT on vs off on the same N cores: each workload as one-per-core (N threads), all
    /// (every sibling of those cores) and pairs (N threads on N/2 cores), interleaved;
    /// throughput, latency, the SMT yield (all ÷ one-per-core) and a thread's speed on a
    /// shared core, each with its interval and class (gain, no effect, loss, inconclusive).
    Yield(smt_yield::YieldArgs),
    /// What two workloads do to each other on a shared core (or cache), predicted from one
    /// profile each against rulers, by a model fitted here (SMiTe), with intervals, checked
    /// against measured pairs; `--advise` a placement.
    Pairs(pairs::PairsArgs),
    /// Print the man page of smtlab, or of one subcommand (`smtlab man lockscan | man -l -`).
    Man(docs::ManArgs),
    /// Print a shell completion script: `smtlab completions bash > /etc/bash_completion.d/smtlab`.
    Completions(docs::CompletionsArgs),
}

/// Parses the process arguments and runs the command.
pub fn main() -> Result<()> {
    // Before parsing, so a signal that arrives in the first milliseconds (a supervisor's
    // quick SIGTERM) ends the run with exit 130 and cleanup, not by the default action.
    crate::interrupt::install();
    let cli = Cli::try_parse().map_err(from_clap)?;
    let mut out = std::io::stdout().lock();
    let out: &mut dyn std::io::Write = &mut out;
    match cli.command {
        Command::Topo(a) => a.run(out),
        Command::Burn(a) => a.run(out),
        Command::Oltp(a) => a.run(out),
        Command::C2c(a) => a.run(out),
        Command::Lockscan(a) => a.run(out),
        Command::Neighbors(a) => a.run(out),
        Command::Rwcache(a) => a.run(out),
        Command::Compare(a) => a.run(out),
        Command::Study(a) => a.run(out),
        Command::Report(a) => a.run(out),
        Command::Merge(a) => a.run(out),
        Command::Smt(a) => a.run(out),
        Command::Top(a) => a.run(out),
        Command::Mem(a) => a.run(out),
        Command::Plan(a) => a.run(out),
        Command::Yield(a) => a.run(out),
        Command::Pairs(a) => a.run(out),
        Command::Man(a) => a.run(out),
        Command::Completions(a) => a.run(out),
    }
}

/// A value one of the parsers in [`values`] refused becomes bad input in the one wording
/// of every refusal, `--option value: what is valid`, with a long value quoted shortened.
/// Everything else (help, version, unknown options, usage) is clap's to print and exit
/// on: help and version with 0, usage errors with 2.
fn from_clap(e: clap::Error) -> anyhow::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // Help and version go to stdout with exit 0, but only once written: clap's own `exit`
    // ignores a failed write, and `--help > /dev/full` exited 0 having written nothing.
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        use std::io::Write;
        let what = if e.kind() == ErrorKind::DisplayHelp {
            "the help"
        } else {
            "the version"
        };
        return match e.print().and_then(|()| std::io::stdout().flush()) {
            Ok(()) => std::process::exit(0),
            Err(io) => anyhow::Error::new(io).context(format!("writing {what} to stdout")),
        };
    }
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        e.exit();
    };
    let why = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (ErrorKind::ValueValidation, _) => {
            std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string())
        }
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(valid))) if !value.is_empty() => {
            format!("valid: {}", valid.join(", "))
        }
        _ => e.exit(),
    };
    // `--threads <N>` → `--threads`.
    let option = arg.split([' ', '=']).next().unwrap_or(&arg);
    let short = crate::quote::shorten(&value);
    let msg = if why.contains(&format!("`{value}`")) || why.contains(&format!("`{short}`")) {
        // The parser's own message quotes the value already: once is enough.
        format!("{option}: {}", why.replace(&value, &short))
    } else {
        format!("{option} {short}: {why}")
    };
    crate::error::BadInput(msg).into()
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
