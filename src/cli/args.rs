//! Flag groups several subcommands share, each defined once and `#[command(flatten)]`ed
//! into the commands that take it, so the help, the man page and the completions of every
//! command come from the one definition (ripgrep keeps its flags in one table for the same
//! reason).
//!
//! Where the commands share a flag's form but not its default or help text (`--duration`
//! is 10 s per lockscan run and 2 s per rwcache run), the group holds the form — name,
//! short letter, value parser — and each command sets its own default and words with
//! `#[command(mut_arg("duration", default_help("10s", "…")))]`.

use super::values;
use crate::limits;
use clap::{Arg, Args};
use std::path::PathBuf;
use std::time::Duration;

/// `--repeat`'s default where it is [`crate::stats::DEFAULT_ROUNDS`], as text (a test
/// keeps the two equal).
pub(super) const DEFAULT_ROUNDS: &str = "5";

/// Sets a flattened flag's default and help for one command (see the module comment).
pub(super) fn default_help(default: &'static str, help: &'static str) -> impl FnOnce(Arg) -> Arg {
    move |a| a.default_value(default).required(false).help(help)
}

/// Sets a flattened flag's help for one command.
pub(super) fn help(help: &'static str) -> impl FnOnce(Arg) -> Arg {
    move |a| a.help(help)
}

/// `--sysfs-root`.
#[derive(Args, Debug, Clone)]
pub(super) struct RootArg {
    /// Read sysfs/procfs from this root instead of `/` (e.g. an unpacked topology dump).
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
}

/// `--within`.
#[derive(Args, Debug, Clone)]
pub(super) struct WithinArg {
    /// Where the comparison layouts (one-per-core, pairs, all, spread, same-core, same-l3) stay:
    /// one `package` (the default; and one core kind on hybrid CPUs), one `l3`, one NUMA
    /// `node`, or the whole `machine`. An SMT comparison that also crosses packages or core
    /// kinds measures those too.
    #[arg(long, value_name = "SCOPE", default_value = "package", hide_possible_values = true,
          value_parser = values::scope())]
    pub within: crate::placement::Scope,
}

/// `--counters`.
#[derive(Args, Debug, Clone)]
pub(super) struct CountersArg {
    /// Event counters for each measured thread (`compare`: each run's whole process
    /// tree): `all` (every event this machine can count:
    /// task-clock, context switches, migrations, page faults, and cycles, instructions,
    /// IPC where a hardware PMU exists), `software` (the kernel's events only), or `off`.
    /// What cannot be counted is reported with the reason.
    #[arg(long, value_name = "MODE", default_value = "all", hide_possible_values = true,
          value_parser = values::counter_modes())]
    pub counters: crate::counters::Mode,
}

/// `--duration` and `--warmup`: one measured window and the discarded time before it.
/// Defaults and help are each command's own (`default_help`).
#[derive(Args, Debug, Clone)]
pub(super) struct Window {
    #[arg(long, short = 'd', allow_hyphen_values = true, value_parser = values::measured)]
    pub duration: Duration,
    #[arg(long, allow_hyphen_values = true, value_parser = values::warmup)]
    pub warmup: Duration,
}

/// `--repeat`: rounds or repetitions. Default and help are each command's own.
#[derive(Args, Debug, Clone)]
pub(super) struct Repeat {
    #[arg(long, value_name = "N", allow_hyphen_values = true,
          value_parser = values::whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
    pub repeat: usize,
}

/// What every run of an experiment takes: the window, its warm-up and the repetitions.
#[derive(Args, Debug, Clone)]
pub(super) struct RunArgs {
    #[command(flatten)]
    pub window: Window,
    #[command(flatten)]
    pub repeat: Repeat,
}

impl RunArgs {
    pub fn duration(&self) -> Duration {
        self.window.duration
    }

    pub fn warmup(&self) -> Duration {
        self.window.warmup
    }

    pub fn repeat(&self) -> usize {
        self.repeat.repeat
    }
}

/// `--json`: the one declaration; each command says what its JSON holds
/// (`#[command(mut_arg("json", help("…")))]`).
#[derive(Args, Debug, Clone)]
pub(super) struct JsonArg {
    /// Machine-readable JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a measuring command writes: JSON on stdout, and export files.
#[derive(Args, Debug, Clone)]
pub(super) struct OutputArgs {
    #[command(flatten)]
    pub json: JsonArg,
    /// Also write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the result's numbers as CSV to FILE, one row per measured unit.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Also write the result's tables as Markdown to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
}

impl OutputArgs {
    pub fn json(&self) -> bool {
        self.json.json
    }

    /// The export files asked for.
    pub fn exports(&self) -> crate::render::export::Exports {
        crate::render::export::Exports {
            json: self.export_json.clone(),
            csv: self.export_csv.clone(),
            markdown: self.export_markdown.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeat_default_is_the_stats_default() {
        assert_eq!(
            super::DEFAULT_ROUNDS,
            crate::stats::DEFAULT_ROUNDS.to_string()
        );
    }
}
