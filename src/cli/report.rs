//! `smtlab report` and `smtlab merge`: studies' results.json rendered again, one host's or
//! a fleet's.

use super::args::{JsonArg, help};
use crate::commands;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// `smtlab report` options.
#[derive(Args, Debug)]
pub(super) struct ReportArgs {
    /// The results.json a study wrote.
    results: PathBuf,
    /// Output directory (default: the directory holding results.json).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Make every answer again from the stored runs with this build's rules: print the
    /// recomputed table and what changed, render the pages from it and write
    /// results.recomputed.json beside them (the file read is left as it is).
    #[arg(long)]
    recompute: bool,
}

impl ReportArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::report::run(
            &commands::report::ReportCommand {
                results: self.results,
                out: self.out,
                recompute: self.recompute,
            },
            out,
        )
    }
}

/// `smtlab merge` options.
#[derive(Args, Debug)]
#[command(mut_arg("json", help("Print fleet.json instead of the summary")))]
pub(super) struct MergeArgs {
    /// results.json files written by `smtlab study`, and directories searched for files of
    /// that name (e.g. one directory per host).
    #[arg(value_name = "RESULTS", required = true)]
    inputs: Vec<PathBuf>,
    /// Directory for fleet.json, fleet.html and fleet.md.
    #[arg(long, value_name = "DIR", default_value = "smtlab-fleet")]
    out: PathBuf,
    /// Also write the answers as Prometheus gauges to FILE (node_exporter's textfile
    /// format, replaced whole): smtlab_fleet_answer{machine_type,class,answer}, …
    #[arg(long, value_name = "FILE")]
    prometheus: Option<PathBuf>,
    #[command(flatten)]
    json: JsonArg,
}

impl MergeArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::merge::run(&self.config(), out)
    }

    fn config(self) -> commands::merge::MergeCommand {
        let a = self;
        let mut command = format!("smtlab merge --out {}", a.out.display());
        if let Some(p) = &a.prometheus {
            command.push_str(&format!(" --prometheus {}", p.display()));
        }
        for i in &a.inputs {
            command.push_str(&format!(" {}", i.display()));
        }
        if command.chars().count() > 400 {
            command = command.chars().take(399).collect::<String>() + "…";
        }
        commands::merge::MergeCommand {
            inputs: a.inputs,
            out: a.out,
            prometheus: a.prometheus,
            json: a.json.json,
            command,
        }
    }
}
