//! `smtlab topo` and `smtlab plan`: the machine, and where threads would go on it.

use super::args::{JsonArg, RootArg, WithinArg, help};
use super::values::whole;
use crate::commands;
use crate::limits;
use crate::placement::Request;
use anyhow::Result;
use clap::Args;
use std::io::Write;

/// `smtlab topo` options.
#[derive(Args, Debug)]
#[command(mut_arg(
    "json",
    help("Machine-readable JSON (model + oracle-shaped partitions)")
))]
pub(super) struct TopoArgs {
    #[command(flatten)]
    root: RootArg,
    /// One row per logical CPU.
    #[arg(long)]
    cpus: bool,
    #[command(flatten)]
    json: JsonArg,
}

impl TopoArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let view = if self.json.json {
            commands::topo::View::Json
        } else if self.cpus {
            commands::topo::View::Cpus
        } else {
            commands::topo::View::Tree
        };
        commands::topo::run(
            &commands::topo::TopoCommand {
                root: self.root.sysfs_root,
                view,
            },
            out,
        )
    }
}

/// `smtlab plan` options.
#[derive(Args, Debug)]
#[command(mut_arg("json", help("JSON: `{request, threads: [{thread, cpus}], scope, …}`")))]
pub(super) struct PlanArgs {
    /// one-per-core (one thread per core: SMT off), pairs (N threads on both siblings
    /// of N/2 cores), all (every sibling of the N cores one-per-core uses: N × threads
    /// per core), spread (N threads one per logical CPU, first siblings first),
    /// same-core, same-l3, other-l3, other-package, siblings-of LIST (the other
    /// siblings of those CPUs' cores, never the CPUs themselves), cpus LIST, os.
    #[arg(hide_possible_values = true, value_parser = super::values::placement_text())]
    request: String,
    /// CPU list for `siblings-of` and `cpus` (or write `siblings-of:LIST`).
    list: Option<String>,
    /// Number of threads to place.
    #[arg(long, short = 't', value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    threads: usize,
    #[command(flatten)]
    root: RootArg,
    #[command(flatten)]
    within: WithinArg,
    #[command(flatten)]
    json: JsonArg,
}

impl PlanArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let PlanArgs {
            request,
            list,
            threads,
            root,
            within,
            json,
        } = self;
        let text = match list {
            // `plan cpus:0-1 extra` once became the list `0-1:extra`.
            Some(l) if request.contains(':') => {
                return Err(crate::error::BadInput(format!(
                    "`{}` already has its CPU list, so `{}` is one word too many; write \
                     the list once, as `{}` or `{} {}`",
                    crate::quote::shorten(&request),
                    crate::quote::shorten(&l),
                    crate::quote::shorten(&request),
                    request.split(':').next().unwrap_or_default(),
                    crate::quote::shorten(request.split_once(':').map_or("", |x| x.1)),
                ))
                .into());
            }
            Some(l) => format!("{request}:{l}"),
            None => request,
        };
        let request = Request::parse(&text)?;
        commands::plan::run(
            &commands::plan::PlanCommand {
                root: root.sysfs_root,
                request,
                threads,
                within: within.within,
                json: json.json,
            },
            out,
        )
    }
}
