//! `smtlab c2c`: cache-line ping-pong latency between CPU pairs.

use super::args::{OutputArgs, help};
use super::values::{self, whole};
use crate::commands;
use crate::limits;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::time::Duration;

/// `smtlab c2c` options.
#[derive(Args, Debug)]
#[command(mut_arg(
    "json",
    help(
        "Machine-readable JSON: `{cpus, pairs: [{a, b, proximity, latency_ns}], matrix_ns, classes, left_out}`"
    )
))]
pub(super) struct C2cArgs {
    /// CPUs to measure (default: every CPU this process may use).
    #[arg(long, value_name = "LIST", value_parser = values::cpus)]
    cpus: Option<crate::cpuset::CpuSet>,
    /// Samples per pair (one more is taken and discarded).
    #[arg(long, default_value_t = 300, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_SAMPLES.into(), limits::WHY_SAMPLES))]
    samples: usize,
    /// Round trips timed per sample.
    #[arg(long, default_value_t = 1000, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_ROUND_TRIPS.into(), limits::WHY_ROUND_TRIPS))]
    round_trips: usize,
    /// Longest to spend (30s, 2m): fewer samples per pair first (down to 31), then
    /// fewer CPUs (two siblings of one core, then one CPU per core in spread order).
    /// Big machines have thousands of pairs.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = values::measured)]
    budget: Option<Duration>,
    #[command(flatten)]
    output: OutputArgs,
}

impl C2cArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::c2c::run(
            &commands::c2c::C2cCommand {
                cpus: self.cpus,
                samples: self.samples,
                round_trips: self.round_trips,
                budget: self.budget,
                json: self.output.json(),
            },
            out,
        )
    }
}
