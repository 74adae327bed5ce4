//! `smtlab study`: every experiment this machine supports, within a budget.

use super::args::{CountersArg, WithinArg};
use super::compare::CommandArgs;
use super::values;
use crate::commands;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// `smtlab study` options.
#[derive(Args, Debug)]
pub(super) struct StudyArgs {
    /// Finish within about a minute: short runs, fewer samples.
    #[arg(long, conflicts_with = "budget")]
    quick: bool,
    /// Time the measurements are sized to fill: 90s, 5m, 20m (default 5m).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = values::budget)]
    budget: Option<Duration>,
    /// Directory for results.json, report.html and summary.md.
    #[arg(long, value_name = "DIR", default_value = "smtlab-study")]
    out: PathBuf,
    /// Database for the oltp phase: sqlite (a temporary file), sqlite:PATH,
    /// postgres-managed (a throwaway cluster) or postgres://USER@HOST[:PORT]/DB (password
    /// from PGPASSWORD, ~/.pgpass / PGPASSFILE or --db-password-file).
    #[arg(long, value_name = "DB", default_value = "sqlite")]
    db: String,
    /// A file whose first line is the PostgreSQL password (keeps it out of `ps`).
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    #[command(flatten)]
    within: WithinArg,
    #[command(
        flatten,
        next_help_heading = "Your command (smtlab study [OPTIONS] -- CMD [ARGS]...)"
    )]
    cmd: CommandArgs,
    /// Your own command and its arguments: the study's last phase runs it under SMT
    /// placements (one thread per core vs every sibling, or --cpus lists), as `smtlab
    /// compare` does, and answers for it in the verdict.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
    #[command(flatten)]
    counters: CountersArg,
    /// Also write the answer table as Prometheus gauges to FILE (node_exporter's textfile
    /// format, replaced whole): smtlab_answer{class,answer}, smtlab_smt_yield{class}.
    #[arg(long, value_name = "FILE")]
    prometheus: Option<PathBuf>,
}

/// Turns the `study` options into a validated config.
impl StudyArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::study::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::study::StudyCommand> {
        let a = self;
        let budget = match (a.budget, a.quick) {
            (_, true) => crate::study::QUICK_BUDGET,
            (Some(b), false) => b,
            (None, false) => crate::study::DEFAULT_BUDGET,
        };
        let db =
            crate::oltp::DbTarget::parse(&a.db)?.with_password_file(a.db_password_file.clone())?;
        // The command as typed, minus any password in the database URL.
        let mut command = String::from("smtlab study");
        if a.quick {
            command.push_str(" --quick");
        }
        if let Some(b) = a.budget {
            command.push_str(&format!(
                " --budget {}",
                crate::duration::format_duration(b)
            ));
        }
        command.push_str(&format!(" --out {}", a.out.display()));
        if a.db != "sqlite" {
            command.push_str(&format!(" --db {db}"));
        }
        if a.within.within != crate::placement::Scope::default() {
            command.push_str(&format!(" --within {}", a.within.within));
        }
        if a.counters.counters != crate::counters::Mode::default() {
            command.push_str(&format!(" --counters {}", a.counters.counters));
        }
        let given = a.cmd.words();
        let compare = if a.command.is_empty() {
            if !given.is_empty() {
                let names: Vec<&String> = given.iter().filter(|w| w.starts_with("--")).collect();
                return Err(crate::error::BadInput(format!(
                    "{} place and measure your own command, but none was given: add it after \
                 `--`, e.g. `smtlab study --metric pgbench -- pgbench -n -T 10`",
                    names
                        .iter()
                        .map(|n| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .into());
            }
            None
        } else {
            let typed = crate::experiments::compare::view::shell_words(&given);
            if !typed.is_empty() {
                command.push(' ');
                command.push_str(&typed);
            }
            command.push_str(" -- ");
            command.push_str(&crate::experiments::compare::view::shell_words(&a.command));
            // One band for the command's section and its answer row: the other rows' ±5 %.
            let mut exp = a.cmd.config(
                a.command,
                a.within.within,
                crate::stats::Thresholds::YIELD.noise,
            )?;
            exp.counters = a.counters.counters;
            // Checked here so that a missing program or bad count stops the study before
            // any phase; the phase checks it again when it runs the command for real.
            exp.clone().check()?;
            Some(exp)
        };
        Ok(commands::study::StudyCommand {
            study: crate::study::Config {
                quick: a.quick,
                budget,
                db,
                command,
                within: a.within.within,
                compare,
                counters: a.counters.counters,
            },
            out: a.out,
            prometheus: a.prometheus,
        })
    }
}
