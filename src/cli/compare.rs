//! `smtlab compare`: the user's own command under SMT placements; its options are also
//! `smtlab study -- CMD`'s.

use super::args::{CountersArg, OutputArgs, WithinArg, help};
use super::values::{self, whole};
use crate::commands;
use crate::limits;
use anyhow::Result;
use clap::Args;
use std::io::Write;

/// How the user's command is placed and measured: `smtlab compare` and `smtlab study --
/// CMD` take the same options (hyperfine's names where they mean the same).
#[derive(Args, Debug)]
pub(super) struct CommandArgs {
    /// Named placements, run in this order: one-per-core (one thread on each of K cores),
    /// pairs (both siblings of K/2 cores), all (every sibling of K cores). Default
    /// one-per-core,all on a machine with SMT; without siblings, `compare` measures the
    /// command on every CPU of the K cores, with nothing to compare.
    #[arg(long, value_name = "LIST", value_delimiter = ',', hide_possible_values = true,
          value_parser = values::compare_placements())]
    placements: Vec<String>,
    /// K, the cores of the named placements (default: every core of the --within unit).
    #[arg(long, value_name = "K", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    cores: Option<usize>,
    /// A CPU list as one more placement (repeatable; runs after --placements).
    #[arg(long, value_name = "LIST")]
    cpus: Vec<String>,
    /// Measured rounds (each runs every placement once). Default: as many as fit the time
    /// (compare: --max-time; study: the command's share of --budget) after the warm-up,
    /// at least 3.
    #[arg(long, short = 'r', value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_RUNS.into(), limits::WHY_RUNS))]
    runs: Option<usize>,
    /// Discarded rounds before measuring.
    #[arg(long, short = 'w', value_name = "N", default_value_t = 1, allow_hyphen_values = true,
          value_parser = whole::<usize>(0, limits::MAX_RUNS.into(), limits::WHY_RUNS))]
    warmup: usize,
    /// A number read from the command's output: `pgbench` (tps), `sysbench` (events or
    /// transactions per second), or a regex whose first capture group is the number.
    /// Without it, wall time is compared (sysbench, and pgbench -T, run for a fixed time:
    /// their own metric is read instead).
    #[arg(long, value_name = "pgbench|sysbench|REGEX")]
    metric: Option<String>,
    /// The regex metric is a latency or a time: lower is better.
    #[arg(long, requires = "metric")]
    lower_is_better: bool,
    /// Shell command run before each run (unpinned, not timed), e.g. 'pgbench -i -s 10'.
    #[arg(long, short = 'p', value_name = "CMD")]
    prepare: Option<String>,
    /// Shell command run once before all runs.
    #[arg(long, short = 's', value_name = "CMD")]
    setup: Option<String>,
    /// Shell command run once after all runs (also after a failure or Ctrl-C).
    #[arg(long, short = 'c', value_name = "CMD")]
    cleanup: Option<String>,
    /// Run the command through `sh -c` (pipes, builtins); by default it is exec'd directly.
    #[arg(long)]
    shell: bool,
    /// Keep runs that exit non-zero instead of stopping.
    #[arg(long, short = 'i')]
    ignore_failure: bool,
    /// Show the command's output (on stderr) instead of only capturing it.
    #[arg(long)]
    show_output: bool,
    /// Running processes (a server the command talks to) to place too: every thread of
    /// them and of their children, during each run, restored afterwards.
    #[arg(long, value_name = "PID", value_delimiter = ',', num_args = 1..)]
    pin_pids: Vec<i32>,
    /// Start a throwaway PostgreSQL cluster, export PGHOST/PGPORT/PGUSER/PGDATABASE to the
    /// command, place its processes like the command (or --server-cpus), remove it at the end.
    #[arg(long)]
    with_postgres: bool,
    /// CPUs for the server's processes in every placement.
    #[arg(long, value_name = "LIST")]
    server_cpus: Option<String>,
    /// Hold each placement in a temporary cpuset cgroup (root), so processes that reset
    /// their own affinity stay on its CPUs.
    #[arg(long)]
    cgroup: bool,
    /// Noisy neighbours: each placement runs once alone and once beside COUNT burners of
    /// KIND (prime, int, mul, fma, pause, stream, chase, l1, l2, scan), e.g. prime:2.
    #[arg(long, value_name = "KIND:COUNT")]
    burners: Option<String>,
    /// Where the burners go: siblings (of the placement's CPUs), same-cpus, other-cores, os.
    #[arg(long, value_name = "WHERE", default_value = "siblings", hide_possible_values = true,
          value_parser = values::burner_placement_text())]
    burner_placement: String,
    /// Changes smaller than this many percent are "no difference" [default: 2; study: 5,
    /// the band of its other answer rows, used by the command's section and row alike].
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    noise: Option<f64>,
}

impl CommandArgs {
    /// The options given, as they would be typed (for a study's provenance, and to refuse
    /// them without a command).
    pub fn words(&self) -> Vec<String> {
        let mut w: Vec<String> = Vec::new();
        let mut opt = |name: &str, v: Option<String>| {
            w.push(format!("--{name}"));
            w.extend(v);
        };
        if !self.placements.is_empty() {
            opt("placements", Some(self.placements.join(",")));
        }
        if let Some(k) = self.cores {
            opt("cores", Some(k.to_string()));
        }
        for c in &self.cpus {
            opt("cpus", Some(c.clone()));
        }
        if let Some(n) = self.runs {
            opt("runs", Some(n.to_string()));
        }
        if self.warmup != 1 {
            opt("warmup", Some(self.warmup.to_string()));
        }
        if let Some(m) = &self.metric {
            opt("metric", Some(m.clone()));
        }
        if self.lower_is_better {
            opt("lower-is-better", None);
        }
        for (name, v) in [
            ("prepare", &self.prepare),
            ("setup", &self.setup),
            ("cleanup", &self.cleanup),
        ] {
            if let Some(v) = v {
                opt(name, Some(v.clone()));
            }
        }
        for (name, on) in [
            ("shell", self.shell),
            ("ignore-failure", self.ignore_failure),
            ("show-output", self.show_output),
            ("with-postgres", self.with_postgres),
            ("cgroup", self.cgroup),
        ] {
            if on {
                opt(name, None);
            }
        }
        if !self.pin_pids.is_empty() {
            let pids: Vec<String> = self.pin_pids.iter().map(i32::to_string).collect();
            opt("pin-pids", Some(pids.join(",")));
        }
        if let Some(c) = &self.server_cpus {
            opt("server-cpus", Some(c.clone()));
        }
        if let Some(b) = &self.burners {
            opt("burners", Some(b.clone()));
        }
        if self.burner_placement != "siblings" {
            opt("burner-placement", Some(self.burner_placement.clone()));
        }
        if let Some(n) = self.noise {
            opt("noise", Some(n.to_string()));
        }
        w
    }

    /// The comparison's configuration for `words` (not yet checked: the caller sets what
    /// is its own, then checks it with `Config::check`).
    pub fn config(
        self,
        words: Vec<String>,
        within: crate::placement::Scope,
        default_noise: f64,
    ) -> Result<crate::experiments::compare::Config> {
        use crate::experiments::compare::{self as cmp, PlacementChoice};
        let a = self;
        let bad = |m: String| anyhow::Error::new(crate::error::BadInput(m));
        let mut exp = cmp::Config::new(words);
        exp.command.shell = a.shell;
        if !a.placements.is_empty() {
            values::no_empty_items("--placements", &a.placements.join(","))?;
        }
        for p in &a.placements {
            exp.placements.push(PlacementChoice::parse_named(p)?);
        }
        for c in &a.cpus {
            let set =
                crate::cpuset::CpuSet::parse_user(c).map_err(|e| bad(format!("--cpus: {e}")))?;
            if set.is_empty() {
                return Err(bad("--cpus: the CPU list is empty".into()));
            }
            exp.placements.push(PlacementChoice::Cpus(set));
        }
        exp.cores = a.cores;
        exp.within = within;
        exp.runs = a.runs;
        exp.warmup = a.warmup;
        exp.metric = a
            .metric
            .as_deref()
            .map(|m| cmp::metric::MetricSpec::parse(m, a.lower_is_better))
            .transpose()
            .map_err(|e| bad(format!("--metric: {e}")))?;
        exp.prepare = a.prepare;
        exp.setup = a.setup;
        exp.cleanup = a.cleanup;
        exp.ignore_failure = a.ignore_failure;
        exp.show_output = a.show_output;
        exp.pin_pids = a.pin_pids;
        exp.with_postgres = a.with_postgres;
        exp.server_cpus = a
            .server_cpus
            .map(|c| {
                crate::cpuset::CpuSet::parse_user(&c)
                    .map_err(|e| bad(format!("--server-cpus: {e}")))
            })
            .transpose()?;
        exp.cgroup = a.cgroup;
        let burner_placement = a
            .burner_placement
            .parse()
            .map_err(|e: String| bad(format!("--burner-placement: {e}")))?;
        exp.burners = a
            .burners
            .map(|b| cmp::BurnerChoice::parse(&b, burner_placement))
            .transpose()?;
        exp.noise = match a.noise {
            Some(n) if !n.is_finite() => {
                return Err(bad(format!("--noise {n}: expected a percentage such as 2")));
            }
            Some(n) => n / 100.0,
            None => default_noise,
        };
        Ok(exp)
    }
}

/// `smtlab compare` options.
#[derive(Args, Debug)]
#[command(
    mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{placements: [{label, cpus, runs, wall_time_ns, metric, …}], \
         comparisons, smt_yield, …}`"
        )
    ),
    mut_arg("export_csv", help("Write one CSV row per placement to FILE")),
    mut_arg("export_markdown", help("Write a Markdown table to FILE"))
)]
pub(super) struct CompareArgs {
    #[command(flatten)]
    cmd: CommandArgs,
    #[command(flatten)]
    within: WithinArg,
    /// Time the automatic round count is sized to fill (warm-up included).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        allow_hyphen_values = true
    )]
    max_time: String,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    counters: CountersArg,
    /// Internal: run as the cleanup guard of a comparison.
    #[arg(long, hide = true)]
    internal_guard: bool,
    /// The command and its arguments.
    #[arg(
        last = true,
        value_name = "CMD",
        required_unless_present = "internal_guard"
    )]
    command: Vec<String>,
}

impl CompareArgs {
    /// Turns the `compare` options into a validated config and runs it.
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let a = self;
        if a.internal_guard {
            return commands::compare::guard_main();
        }
        let mut exp = a.cmd.config(
            a.command,
            a.within.within,
            crate::experiments::compare::config::DEFAULT_NOISE,
        )?;
        exp.max_time = crate::duration::parse_measured(&a.max_time, "--max-time")?;
        exp.counters = a.counters.counters;
        let exp = exp.check()?;
        let exports = a.output.exports();
        commands::compare::run(
            &commands::compare::CompareCommand {
                exp,
                json: a.output.json(),
                exports,
            },
            out,
        )
    }
}
