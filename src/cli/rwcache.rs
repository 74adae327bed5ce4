//! `smtlab rwcache`: a read-mostly metadata cache under each reader/writer scheme.

use super::args::{CountersArg, OutputArgs, RootArg, RunArgs, WithinArg, default_help, help};
use super::values::{self, Counts, whole};
use crate::commands;
use crate::limits;
use crate::placement::Request;
use anyhow::Result;
use clap::Args;
use std::io::Write;

/// `smtlab rwcache` options.
#[derive(Args, Debug)]
#[command(
    mut_arg("duration", default_help("2s", "Measured time per run: 2s, 500ms, 1m")),
    mut_arg("warmup", default_help("300ms", "Discarded warm-up before each run")),
    mut_arg(
        "repeat",
        default_help(
            "3",
            "Rounds over every (threads, scheme) pair, interleaved, for medians and CIs"
        )
    ),
    mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{results: [{scheme, threads, requests_per_sec, lock_cpu_share, \
         reads, writes, …}], before_after, read_cost, best}`"
        )
    )
)]
pub(super) struct RwcacheArgs {
    #[command(flatten)]
    root: RootArg,
    /// Schemes: spin, rwspin, rwlock, parking_lot-rw, brlock, seqlock, rcu (a list), or all.
    #[arg(long, default_value = "all", hide_possible_values = true,
          value_parser = values::scheme_kinds())]
    scheme: values::List<crate::rwcache::SchemeKind>,
    /// Thread counts to run, e.g. 1,2,4 (default: 1 and every usable CPU).
    #[arg(long, short = 't', value_name = "LIST", allow_hyphen_values = true,
          value_parser = values::counts(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    threads: Option<Counts>,
    /// Where threads run: spread (one per logical CPU, first siblings first), one-per-core,
    /// pairs, cpus:LIST, os, … (see `smtlab plan`).
    #[arg(long, default_value = "spread", hide_possible_values = true,
          value_parser = values::placement())]
    placement: Request,
    #[command(flatten)]
    within: WithinArg,
    /// Metadata objects in the table.
    #[arg(long, default_value_t = 10_000, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_ENTRIES.into(), limits::WHY_ENTRIES))]
    entries: usize,
    /// Lookups per request (each under its own read-side acquisition).
    #[arg(long, default_value_t = 4, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_LOOKUPS.into(), limits::WHY_LOOKUPS))]
    lookups: usize,
    /// Fraction of requests that replace an entry (0..1).
    #[arg(long, default_value_t = 0.0001, value_name = "FRACTION", allow_hyphen_values = true,
          value_parser = values::fraction)]
    write_ratio: f64,
    /// Busy work per request outside the lock, ns (the rest of a statement).
    #[arg(long, default_value_t = 0, value_name = "NS", allow_hyphen_values = true,
          value_parser = whole::<u64>(0, limits::MAX_OP_NS.into(), limits::WHY_OP_NS))]
    work_ns: u64,
    #[command(flatten)]
    run: RunArgs,
    /// Seed of the key sequences.
    #[arg(long, default_value_t = 3, allow_hyphen_values = true,
          value_parser = whole::<u64>(0, u64::MAX.into(), ""))]
    seed: u64,
    #[command(flatten)]
    counters: CountersArg,
    #[command(flatten)]
    output: OutputArgs,
    /// Run more than 64 threads per usable CPU (a run that only measures the scheduler
    /// and is slow to stop).
    #[arg(long)]
    force: bool,
}

impl RwcacheArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::rwcache::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::rwcache::RwcacheCommand> {
        use crate::experiments::rwcache::{RwcacheConfig, TableSpec};
        let a = self;
        let schemes = a.scheme.0;
        let placement = a.placement;
        let threads = match a.threads {
            Some(Counts(v)) => v,
            None => {
                // 1 thread and one per CPU the placement can use (its scope's unit when scoped).
                let topo = commands::load_topology(&a.root.sysfs_root)?;
                let n = if placement.is_scoped() {
                    crate::placement::scoped_cores(&topo, a.within.within)
                        .0
                        .cpus
                        .len()
                } else {
                    topo.allowed().len()
                }
                .max(1);
                if n == 1 { vec![1] } else { vec![1, n] }
            }
        };
        let spec = crate::engine::RunSpec::new(a.run.warmup(), a.run.duration())?
            .with_counters(a.counters.counters);
        let exp = RwcacheConfig::new(
            schemes,
            threads,
            placement,
            a.within.within,
            TableSpec {
                entries: a.entries,
                lookups: a.lookups,
                write_ratio: a.write_ratio,
                work_ns: a.work_ns,
            },
            spec,
            a.run.repeat(),
            a.seed,
        )?;
        Ok(commands::rwcache::RwcacheCommand {
            force: a.force,
            root: a.root.sysfs_root,
            exp,
            json: a.output.json(),
            exports: a.output.exports(),
        })
    }
}
