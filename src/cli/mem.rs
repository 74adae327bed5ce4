//! `smtlab mem`: memory settings in plain words, and what page size costs here.

use super::args::{DEFAULT_ROUNDS, JsonArg, OutputArgs, Repeat, RootArg, default_help, help};
use super::values;
use crate::commands;
use anyhow::Result;
use clap::Subcommand;
use std::io::Write;

/// `smtlab mem` subcommands.
#[derive(Subcommand, Debug)]
pub(super) enum MemAction {
    /// Overcommit mode, CommitLimit and headroom with what each mode means; MemTotal,
    /// MemAvailable, page cache, dirty data; swap and swappiness; THP; hugetlb pages per
    /// size and node; reclaim and NUMA settings; this process's cgroup limits; the ten
    /// processes the OOM killer would pick first; findings in plain words.
    #[command(mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{overcommit: {mode, commit_limit_bytes, committed_as_bytes, \
         headroom_bytes, …}, memory, swap, thp, hugetlb: {sizes: [{page_bytes, total, free, \
         reserved, surplus, nodes}]}, reclaim, cgroup, oom: {top: [{pid, name, oom_score, \
         oom_score_adj, rss_bytes}]}, findings, not_available}`"
        )
    ))]
    Report {
        #[command(flatten)]
        root: RootArg,
        #[command(flatten)]
        json: JsonArg,
    },
    /// Measures what page size does here: dependent-load latency and sequential read
    /// bandwidth vs working set (16 KiB to --max) with 4 KiB pages, THP, and hugetlb 2 MiB /
    /// 1 GiB pages when reserved; first-touch cost per page size; the TLB table from CPUID
    /// and its reach beside where the curves bend.
    #[command(
        mut_arg(
            "repeat",
            default_help(
                DEFAULT_ROUNDS,
                "Samples per working set and page size (after one discarded warm-up)"
            )
        ),
        mut_arg(
            "json",
            help(
                "Machine-readable JSON: `{kinds: [{kind, skipped, backing, points: \
             [{working_set_bytes, latency_ns, bandwidth_bytes_per_sec}], first_touch, bends}], \
             tlb: {entries: [{level, kind, page_bytes, entries, reach_bytes}]}, departure, …}`"
            )
        )
    )]
    Pages {
        /// Largest working set (default 1GiB, less when MemAvailable is smaller); larger
        /// than memory allows is refused.
        #[arg(long, value_name = "SIZE", value_parser = values::bytes_or_auto)]
        max: Option<values::Bytes>,
        #[command(flatten)]
        repeat: Repeat,
        /// As root: add the hugetlb pages the run needs to the pools, and put the pools
        /// back when it ends (also on Ctrl-C; after a SIGKILL the next run does).
        #[arg(long)]
        reserve: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}

impl MemAction {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::mem::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::mem::Config> {
        let a = self;
        match a {
            MemAction::Report { root, json } => Ok(commands::mem::Config::Report {
                root: root.sysfs_root,
                json: json.json,
            }),
            MemAction::Pages {
                max,
                repeat,
                reserve,
                output,
            } => {
                let max = match max {
                    None | Some(values::Bytes::Auto) => None,
                    Some(values::Bytes::Exactly(n)) => Some(n as u64),
                };
                Ok(commands::mem::Config::Pages {
                    max,
                    repeat: repeat.repeat,
                    reserve,
                    json: output.json(),
                    exports: output.exports(),
                })
            }
        }
    }
}
