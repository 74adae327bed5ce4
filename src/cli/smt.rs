//! `smtlab smt`: SMT's state, and switching it through sysfs with a journal.

use super::args::{JsonArg, RootArg, help};
use super::values;
use crate::commands;
use anyhow::Result;
use clap::{Args, Subcommand};
use std::io::Write;
use std::path::PathBuf;

/// `smtlab smt` subcommands.
#[derive(Subcommand, Debug)]
pub(super) enum SmtAction {
    /// smt/control and smt/active, siblings online and offline per core, `nosmt` on the
    /// kernel command line, vulnerabilities whose mitigation mentions SMT, what this process
    /// may change, and any journal waiting for `restore`.
    #[command(mut_arg(
        "json",
        help(
            "Machine-readable JSON: `{control, active, cores: [{core, online, offline}], \
         cmdline_nosmt, vulnerabilities, privileges, journal}`"
        )
    ))]
    Status {
        #[command(flatten)]
        root: RootArg,
        #[command(flatten)]
        json: JsonArg,
    },
    /// One thread per core: `off` to smt/control when it switches here, else every sibling
    /// but the first of each core offline through cpuN/online. Journals the state first.
    Off(SmtChangeArgs),
    /// Every sibling online again (smt/control `on`, or each offline CPU's cpuN/online).
    /// Journals the state first.
    On(SmtChangeArgs),
    /// Put back exactly the state the journal recorded before smtlab's first change; a
    /// no-op, said so, when there is no journal.
    Restore {
        /// Print the writes without changing anything.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        root: SmtRootArg,
    },
}

#[derive(Args, Debug)]
pub(super) struct SmtRootArg {
    /// Read and write sysfs and procfs under this root instead of `/` (a copy of them, to
    /// try the commands); its journal goes to DIR/run/smtlab.
    #[arg(long, value_name = "DIR", default_value = "/")]
    sysfs_root: PathBuf,
}

#[derive(Args, Debug)]
pub(super) struct SmtChangeArgs {
    /// Print the writes without changing anything.
    #[arg(long)]
    dry_run: bool,
    /// Switch although processes pinned only to CPUs going offline lose their pinning
    /// (the kernel moves them to every CPU and never pins them back).
    #[arg(long)]
    force: bool,
    /// auto (smt/control when it switches here, else cpuN/online), control, or
    /// cpu-online (one CPU at a time; smt/control stays as it is).
    #[arg(long, default_value = "auto", value_name = "METHOD", hide_possible_values = true,
          value_parser = values::smt_method())]
    method: String,
    #[command(flatten)]
    root: SmtRootArg,
    /// Internal, for tests: pause after the journal and after each write.
    #[arg(long, hide = true, default_value = "0s", value_name = "DURATION")]
    step_delay: String,
}

impl SmtAction {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::smt::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::smt::Config> {
        let a = self;
        use crate::error::BadInput;
        use crate::smt::apply::{Action, Options};
        let change = |action: Action, c: SmtChangeArgs| -> Result<commands::smt::Config> {
            let method = c
                .method
                .parse()
                .map_err(|e: String| BadInput(format!("--method: {e}")))?;
            let step_delay = crate::duration::parse_duration_or_zero(&c.step_delay)
                .map_err(|e| BadInput(format!("--step-delay: {e}")))?;
            Ok(commands::smt::Config::Change {
                root: c.root.sysfs_root,
                action,
                options: Options {
                    dry_run: c.dry_run,
                    force: c.force,
                    method,
                    step_delay,
                },
            })
        };
        match a {
            SmtAction::Status { root, json } => Ok(commands::smt::Config::Status {
                root: root.sysfs_root,
                json: json.json,
            }),
            SmtAction::Off(c) => change(Action::Off, c),
            SmtAction::On(c) => change(Action::On, c),
            SmtAction::Restore { dry_run, root } => Ok(commands::smt::Config::Change {
                root: root.sysfs_root,
                action: Action::Restore,
                options: Options {
                    dry_run,
                    force: false,
                    method: crate::smt::plan::Method::Auto,
                    step_delay: std::time::Duration::ZERO,
                },
            }),
        }
    }
}
