//! `smtlab pairs`: predict what two workloads do to each other on a shared core (or
//! cache) from one profile each; check; advise a placement.

use super::args::{OutputArgs, RootArg, RunArgs, default_help, help};
use crate::commands;
use crate::experiments::pairs::config::{
    self, AdviceRequest, Config, MeasureChoice, PartnerChoice,
};
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// `smtlab pairs` options.
#[derive(Args, Debug)]
#[command(
    mut_arg(
        "duration",
        default_help(
            "1s",
            "Measured time per ruler run: 1s, 500ms, 2m (a command runs to its end)"
        )
    ),
    mut_arg(
        "warmup",
        default_help(
            "500ms",
            "Discarded warm-up before each ruler run and of each burner beside a command (memory rulers are noisy without it)"
        )
    ),
    mut_arg(
        "repeat",
        default_help(
            "3",
            "Rounds over every run (counterbalanced); 3 or more for intervals on the profiles"
        )
    ),
    mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{partner, rulers, profiles, model, pairs: [{a, b, \
             predicted: {estimate, low, high, confidence}, measured}], check, advice}`"
        )
    ),
    after_help = "Exit codes: 2 bad input (unknown workload, a --cmd printing no metric, a \
                  profiles file from another machine or version); 1 a --cmd that fails; 3 not \
                  possible here (more --advise threads than CPUs, floors no placement meets, \
                  --partner sibling without SMT); 130 interrupted."
)]
pub(super) struct PairsArgs {
    #[command(flatten)]
    root: RootArg,
    /// Rulers to profile and predict as workloads (prime, int, mul, fma, pause, stream,
    /// chase, l1, l2, scan); empty with --cmd for your commands only.
    #[arg(long, value_name = "LIST", default_value = config::DEFAULT_WORKLOADS)]
    workloads: String,
    /// Your own command as a workload: NAME='CMD …' (repeatable), run through `sh -c`
    /// pinned to one CPU; its speed is 1 ÷ its wall time (a fixed amount of work; its
    /// stdout discarded), or --metric NAME=….
    #[arg(long = "cmd", value_name = "NAME=CMD")]
    cmds: Vec<String>,
    /// NAME=pgbench|sysbench|REGEX: read the speed of --cmd NAME from its output (as
    /// `compare --metric`). sysbench and pgbench -T run for a fixed time: their own
    /// metric is read without asking.
    #[arg(long = "metric", value_name = "NAME=SPEC")]
    metrics: Vec<String>,
    /// The regex metrics are latencies or times: lower is better.
    #[arg(long)]
    lower_is_better: bool,
    /// The rulers (dimensions) every workload is profiled against.
    #[arg(long, value_name = "LIST", default_value = config::DEFAULT_RULERS)]
    rulers: String,
    /// Where the partner runs: auto (an SMT sibling where the machine has SMT, else another
    /// core sharing the L3), sibling, same-l3, or cpus:A,B.
    #[arg(long, value_name = "WHERE", default_value = "auto")]
    partner: String,
    /// Real pairs measured to check the model: held-out (the 3 predicted worst), all, none.
    #[arg(long, value_name = "WHICH", default_value = "held-out")]
    measure: String,
    #[command(flatten)]
    run: RunArgs,
    /// Reuse profiles (and the rulers' pairs) from a file --save-profiles wrote on this
    /// machine; only workloads not in it are profiled.
    #[arg(long, value_name = "FILE")]
    profiles: Option<PathBuf>,
    /// Write the profiles to FILE (not after Ctrl-C: a partial profile is not one).
    #[arg(long, value_name = "FILE")]
    save_profiles: Option<PathBuf>,
    /// Advise a placement: NAME=THREADS,… over the workloads (e.g. 'db=4,scan=1,batch=2').
    #[arg(long, value_name = "NAME=N,…")]
    advise: Option<String>,
    /// NAME=SHARE: every thread of NAME keeps at least this share of its solo speed
    /// (repeatable; with --advise).
    #[arg(long = "floor", value_name = "NAME=SHARE", requires = "advise")]
    floors: Vec<String>,
    #[command(flatten)]
    output: OutputArgs,
}

impl PairsArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::pairs::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::pairs::PairsCommand> {
        let a = self;
        let workloads = config::workloads(&a.workloads, &a.cmds, &a.metrics, a.lower_is_better)?;
        let rulers = config::parse_rulers("--rulers", &a.rulers)?;
        let advice = a
            .advise
            .as_deref()
            .map(|s| AdviceRequest::parse(s, &a.floors))
            .transpose()?;
        let spec = crate::engine::RunSpec::new(a.run.warmup(), a.run.duration())?;
        let exp = Config::new(
            workloads,
            rulers,
            PartnerChoice::parse(&a.partner)?,
            spec,
            a.run.repeat(),
            MeasureChoice::parse(&a.measure)?,
            a.profiles,
            a.save_profiles,
            advice,
        )?;
        Ok(commands::pairs::PairsCommand {
            root: a.root.sysfs_root,
            exp,
            json: a.output.json(),
            exports: a.output.exports(),
        })
    }
}
