//! `smtlab burn`: CPU burners.

use super::args::{CountersArg, OutputArgs, Window, WithinArg, default_help};
use super::values::{self, whole};
use crate::commands;
use crate::limits;
use crate::placement::Request;
use anyhow::Result;
use clap::Args;
use std::io::Write;

/// `smtlab burn` options.
#[derive(Args, Debug)]
#[command(
    mut_arg("duration", default_help("5s", "Measurement length: 5, 5s, 500ms, 2m")),
    mut_arg(
        "warmup",
        default_help(
            "1s",
            "Warm-up before measuring (buffers are built during it); 0 to skip"
        )
    )
)]
pub(super) struct BurnArgs {
    /// Burner kind: prime, int, mul, fma, fma-scalar, fma-avx2, fma-avx512, pause,
    /// stream, chase, l1, l2, scan.
    #[arg(long, short = 'k', hide_possible_values = true, value_parser = values::burner_kind())]
    kind: crate::burn::BurnerKind,
    /// Number of burners.
    #[arg(long, short = 't', default_value_t = 1, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    threads: usize,
    /// Where burners run: one-per-core, pairs, all, spread, same-core, same-l3,
    /// other-l3, other-package, siblings-of:LIST, cpus:LIST, os (not pinned; the
    /// default). See `smtlab plan`.
    #[arg(long, value_name = "REQUEST", conflicts_with = "cpus", hide_possible_values = true,
          value_parser = values::placement())]
    placement: Option<Request>,
    #[command(flatten)]
    within: WithinArg,
    /// Pin burners to these CPUs in turn (same as `--placement cpus:LIST`).
    #[arg(long, value_name = "LIST", value_parser = values::cpus)]
    cpus: Option<crate::cpuset::CpuSet>,
    #[command(flatten)]
    window: Window,
    /// thread (engine threads of this process) or process (one child process each).
    #[arg(long, default_value = "thread", hide_possible_values = true,
          value_parser = values::burn_mode())]
    mode: crate::burn::Mode,
    /// Scheduling policy of each burner: normal, batch, idle.
    #[arg(long, default_value = "normal", hide_possible_values = true,
          value_parser = values::policy())]
    policy: crate::burn::Policy,
    /// Nice value of each burner (-20..19; negative needs CAP_SYS_NICE).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<i32>(-20, 19, values::WHY_NICE))]
    nice: Option<i32>,
    #[command(flatten)]
    counters: CountersArg,
    /// Prime bound for `prime`, as sysbench's --cpu-max-prime.
    #[arg(long, default_value_t = crate::burn::DEFAULT_MAX_PRIME, allow_hyphen_values = true,
          value_parser = whole::<u64>(3, limits::MAX_MAX_PRIME.into(), limits::WHY_MAX_PRIME))]
    max_prime: u64,
    /// Run more than 64 threads per usable CPU (a run that only measures the scheduler
    /// and is slow to stop).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    output: OutputArgs,
    /// Internal: run as a process-mode burner child pinned to LIST.
    #[arg(long, hide = true, value_name = "LIST", value_parser = values::cpus)]
    child_cpus: Option<crate::cpuset::CpuSet>,
    /// Internal: the bound on a child's stream/chase buffer, bytes.
    #[arg(long, hide = true, value_name = "BYTES", value_parser = values::parse_bytes)]
    max_buffer: Option<usize>,
    /// Internal: a child runs until SIGTERM.
    #[arg(long, hide = true, requires = "child_cpus")]
    until_stopped: bool,
}

impl BurnArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let a = self;
        let placement = match (a.placement, a.cpus) {
            (Some(p), _) => p,
            (None, Some(c)) => Request::Cpus(c),
            (None, None) => Request::Os,
        };
        let child = a.child_cpus.map(|cpus| commands::burn::Child {
            cpus,
            until_stopped: a.until_stopped,
        });
        commands::burn::run(
            &commands::burn::BurnCommand {
                spec: crate::burn::BurnSpec::new(a.kind)
                    .with_policy(a.policy)
                    .with_nice(a.nice)?
                    .with_max_prime(a.max_prime)?
                    .with_max_buffer(a.max_buffer)?
                    .with_counters(a.counters.counters),
                threads: a.threads,
                placement,
                within: a.within.within,
                mode: a.mode,
                warmup: a.window.warmup,
                duration: a.window.duration,
                json: a.output.json(),
                force: a.force,
                child,
                exports: a.output.exports(),
            },
            out,
        )
    }
}
