//! `smtlab man` and `smtlab completions`: the man pages and the shell completion scripts,
//! made from the same clap definition as `--help` (clap_mangen, clap_complete), so the
//! three never disagree.

use super::Cli;
use crate::error::BadInput;
use anyhow::Result;
use clap::{Args, CommandFactory};
use std::io::Write;

/// `smtlab man` options.
#[derive(Args, Debug)]
pub(super) struct ManArgs {
    /// The subcommand whose page to print, e.g. `lockscan` or `smt status` (default: the
    /// page of smtlab itself, which lists the subcommands).
    #[arg(value_name = "SUBCOMMAND")]
    subcommand: Vec<String>,
}

impl ManArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let mut cmd = Cli::command();
        // Gives every subcommand its display name (`smtlab-lockscan`), the page's title.
        cmd.build();
        for (i, name) in self.subcommand.iter().enumerate() {
            let Some(sub) = cmd.find_subcommand(name).cloned() else {
                let path = std::iter::once("smtlab")
                    .chain(self.subcommand[..i].iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" ");
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .filter(|s| !s.is_hide_set())
                    .map(|s| s.get_name())
                    .collect();
                let valid = match names.is_empty() {
                    true => format!("`{path}` has none"),
                    false => format!("valid: {}", names.join(", ")),
                };
                return Err(BadInput(format!(
                    "`{path} {}`: no such subcommand; {valid}",
                    crate::quote::shorten(name),
                ))
                .into());
            };
            cmd = sub;
        }
        let page = clap_mangen::Man::new(cmd)
            .source(format!("smtlab {}", env!("CARGO_PKG_VERSION")))
            .manual("smtlab");
        // Rendered whole first: a failed write leaves no half page behind a success.
        let mut text = Vec::new();
        page.render(&mut text)?;
        out.write_all(&text)?;
        out.flush()?;
        Ok(())
    }
}

/// `smtlab completions` options.
#[derive(Args, Debug)]
pub(super) struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum, value_name = "SHELL", hide_possible_values = true)]
    shell: clap_complete::Shell,
}

impl CompletionsArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        let mut cmd = Cli::command();
        // clap_complete panics on a failed write; it writes into memory instead.
        let mut text = Vec::new();
        clap_complete::generate(self.shell, &mut cmd, "smtlab", &mut text);
        out.write_all(&text)?;
        out.flush()?;
        Ok(())
    }
}
