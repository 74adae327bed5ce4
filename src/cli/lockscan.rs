//! `smtlab lockscan`: lock threads against scan threads.

use super::args::{CountersArg, OutputArgs, RootArg, RunArgs, WithinArg, default_help, help};
use super::values::{self, whole};
use crate::commands;
use crate::limits;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::time::Duration;

/// `smtlab lockscan` options.
#[derive(Args, Debug)]
#[command(
    mut_arg(
        "duration",
        default_help("10s", "Measured time per run: 10s, 500ms, 2m")
    ),
    mut_arg("warmup", default_help("500ms", "Discarded warm-up before each run")),
    mut_arg(
        "repeat",
        default_help(
            "3",
            "Repetitions of every scenario (interleaved), for medians and confidence intervals"
        )
    ),
    mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{results: [{threads: [{cpu, locked, spins, …}]}], verdict}`"
        )
    )
)]
pub(super) struct LockscanArgs {
    #[command(flatten)]
    root: RootArg,
    /// Lock kind: tas, ttas (the classic test's), backoff, ticket, mcs, mutex, parking_lot,
    /// adaptive; or `all` to compare every lock in one table.
    #[arg(long, default_value = "ttas", hide_possible_values = true,
          value_parser = values::lock_kinds())]
    lock: values::List<crate::locks::LockKind>,
    /// Busy work inside the critical section, ns (0 = an empty section).
    #[arg(long, default_value_t = 0, value_name = "NS", allow_hyphen_values = true,
          value_parser = whole::<u64>(0, limits::MAX_OP_NS.into(), limits::WHY_OP_NS))]
    cs_ns: u64,
    /// Bytes each scan thread memsets per pass: a size (1MiB, 2097152, 512K) or `auto`
    /// (4 × the largest L2, at most 64 MiB; 8 MiB when no L2 size is reported).
    #[arg(long, default_value = "1MiB", value_name = "SIZE", allow_hyphen_values = true,
          value_parser = values::bytes_or_auto)]
    scan_bytes: values::Bytes,
    /// CPUs of the lock threads (one thread per CPU).
    #[arg(long, value_name = "LIST")]
    lock_cpus: Option<String>,
    /// CPUs of the scan threads (one thread per CPU).
    #[arg(long, value_name = "LIST")]
    scan_cpus: Option<String>,
    /// Lock-thread affinity mask, as the classic Windows test took it: decimal (`-l7` = CPUs 0-2) or 0x hex.
    #[arg(short = 'l', value_name = "MASK", conflicts_with = "lock_cpus")]
    lock_mask: Option<String>,
    /// Scan-thread affinity mask, as the classic Windows test took it: decimal (`-s8` = CPU 3) or 0x hex.
    #[arg(short = 's', value_name = "MASK", conflicts_with = "scan_cpus")]
    scan_mask: Option<String>,
    /// One scenario per scanner position (each lock thread's sibling; without SMT, each core).
    #[arg(long, conflicts_with_all = ["lock_cpus", "scan_cpus", "lock_mask", "scan_mask"])]
    sweep: bool,
    #[command(flatten)]
    within: WithinArg,
    #[command(flatten)]
    run: RunArgs,
    /// Interval between live rows (the classic test printed every 10 s).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = values::measured)]
    interval: Duration,
    /// Skip the reference run without scan threads.
    #[arg(long)]
    no_baseline: bool,
    /// What the lock records: `counters` (spins, handoffs; the default) or `off` (the bare
    /// algorithm, to see the instrumentation's cost on this machine; no spins or handoffs).
    #[arg(long, default_value = "counters", value_name = "MODE", hide_possible_values = true,
          value_parser = values::lock_stats_mode())]
    lock_stats: crate::locks::StatsMode,
    #[command(flatten)]
    counters: CountersArg,
    /// Print the placements only (works with --sysfs-root).
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    output: OutputArgs,
}

impl LockscanArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::lockscan::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::lockscan::LockscanCommand> {
        use crate::cpuset::CpuSet;
        use crate::error::BadInput;
        use crate::experiments::lockscan::{Layout, LockscanConfig};
        let a = self;
        let bad = |m: String| anyhow::Error::new(BadInput(m));
        let locks = a.lock.0;
        let scan_bytes = match a.scan_bytes {
            values::Bytes::Auto => {
                crate::experiments::lockscan::auto_scan_bytes(&commands::load_topology(
                    &a.root.sysfs_root,
                )?)
                .bytes
            }
            values::Bytes::Exactly(n) => n,
        };
        let list = |s: &Option<String>, m: &Option<String>, what: &str| -> Result<Option<CpuSet>> {
            Ok(match (s, m) {
                (Some(l), _) => {
                    Some(CpuSet::parse_user(l).map_err(|e| bad(format!("--{what}-cpus: {e}")))?)
                }
                (None, Some(m)) => {
                    Some(CpuSet::parse_mask(m).map_err(|e| bad(format!("-{}: {e}", &what[..1])))?)
                }
                (None, None) => None,
            })
        };
        let stats = a.lock_stats;
        let lock = list(&a.lock_cpus, &a.lock_mask, "lock")?;
        let scan = list(&a.scan_cpus, &a.scan_mask, "scan")?;
        let layout = if a.sweep {
            Layout::Sweep(a.within.within)
        } else if lock.is_none() && scan.is_none() {
            Layout::ScannerOnLowest
        } else {
            let topo = commands::load_topology(&a.root.sysfs_root)?;
            let allowed = topo.allowed();
            // One side given: the other takes the remaining usable CPUs, as the classic test did.
            let (lock, scan) = match (lock, scan) {
                (Some(l), Some(s)) => (l, s),
                (Some(l), None) => {
                    let rest = allowed.difference(&l);
                    (
                        l,
                        rest.first()
                            .map(|c| CpuSet::from_cpus([c]))
                            .unwrap_or_default(),
                    )
                }
                (None, Some(s)) => (allowed.difference(&s), s),
                (None, None) => unreachable!("handled above"),
            };
            Layout::Explicit { lock, scan }
        };
        let spec = crate::engine::RunSpec::new(a.run.warmup(), a.run.duration())?
            .with_interval(a.interval)?
            .with_counters(a.counters.counters);
        Ok(commands::lockscan::LockscanCommand {
            root: a.root.sysfs_root,
            exp: LockscanConfig::new(layout, locks, spec)?
                .with_cs_ns(a.cs_ns)?
                .with_scan_bytes(scan_bytes)?
                .with_stats(stats)?
                .with_repeat(a.run.repeat())?
                .with_baseline(!a.no_baseline),
            json: a.output.json(),
            exports: a.output.exports(),
            dry_run: a.dry_run,
        })
    }
}
