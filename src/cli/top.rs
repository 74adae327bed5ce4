//! `smtlab top`: per-CPU and per-core utilisation.

use super::args::{OutputArgs, RootArg, help};
use super::values::whole;
use crate::commands;
use crate::limits;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// `smtlab top` options.
#[derive(Args, Debug)]
#[command(mut_arg("json", |a: clap::Arg| help(
    "One JSON object per interval, one per line (NDJSON): `{cpus: [{cpu, core, busy_share}], \
     cores: [{cpus, busy_min_share, busy_max_share, both_busy_min_share, traced, \
     used_min_share, …}], machine: {logical_busy_share, headroom_cores_min, …}}`"
)(a).conflicts_with("prometheus")))]
#[command(
    mut_arg(
        "export_json",
        help(
            "Also write every interval to FILE as one JSON list (each as --json prints it); \
             needs --once or --count"
        )
    ),
    mut_arg(
        "export_csv",
        help(
            "Also write every interval to FILE as CSV: one row per CPU and per core (column \
             `level`), raw shares 0–1; needs --once or --count"
        )
    ),
    mut_arg(
        "export_markdown",
        help(
            "Also write each interval's summary and core table to FILE as Markdown; needs \
             --once or --count"
        )
    )
)]
pub(super) struct TopArgs {
    #[command(flatten)]
    root: RootArg,
    /// One interval, then exit (same as --count 1).
    #[arg(long, conflicts_with = "count")]
    once: bool,
    /// Interval length: 1s, 500ms, 5 (seconds); 100ms to 1h.
    #[arg(
        long,
        short = 'i',
        default_value = "1s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    interval: String,
    /// Intervals to print, then exit (default: until Ctrl-C).
    #[arg(long, short = 'n', value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<u64>(1, u64::MAX.into(), ""))]
    count: Option<u64>,
    // `--json`, and `--export-json/--export-csv/--export-markdown FILE`: every interval of
    // a bounded run (`--once` or `--count N`), written when the last one ends.
    #[command(flatten)]
    output: OutputArgs,
    /// The Prometheus text exposition format (gauges named smtlab_*).
    #[arg(long)]
    prometheus: bool,
    /// With --prometheus: replace FILE atomically each interval instead of printing, for
    /// node_exporter's textfile collector (name it *.prom).
    #[arg(long, value_name = "FILE", requires = "prometheus")]
    textfile: Option<PathBuf>,
    /// Also show this process's threads: which CPUs each ran on and which of them shared a
    /// core at the same time (exact with tracefs, else sampled every 25 ms).
    #[arg(long, value_name = "PID", allow_hyphen_values = true,
          value_parser = whole::<u32>(1, u32::MAX.into(), ""))]
    pid: Option<u32>,
    /// The SMT yield for the capacity figures, from a JSON file whose top-level number
    /// `smt_yield` is a core's throughput with all its threads busy over one alone
    /// (default: an assumed 1.25).
    #[arg(long = "yield", value_name = "FILE")]
    yield_file: Option<PathBuf>,
    /// Do not use tracefs, even as root (bounds from /proc/stat only).
    #[arg(long)]
    no_trace: bool,
}

impl TopArgs {
    pub fn run(self, out: &mut dyn Write) -> Result<()> {
        commands::top::run(&self.config()?, out)
    }

    fn config(self) -> Result<commands::top::TopCommand> {
        let a = self;
        use crate::error::BadInput;
        use std::io::IsTerminal;
        let interval = crate::duration::parse_duration(&a.interval)
            .map_err(|e| BadInput(format!("--interval: {e}")))?;
        if !(limits::MIN_TOP_INTERVAL..=limits::MAX_TOP_INTERVAL).contains(&interval) {
            return Err(BadInput(format!(
                "--interval {}: must be between {} and {} ({})",
                a.interval,
                crate::duration::format_duration(limits::MIN_TOP_INTERVAL),
                crate::duration::format_duration(limits::MAX_TOP_INTERVAL),
                limits::WHY_TOP_INTERVAL
            ))
            .into());
        }
        let count = if a.once { Some(1) } else { a.count };
        if count == Some(0) {
            return Err(BadInput("--count must be at least 1".into()).into());
        }
        let smt_yield = match &a.yield_file {
            None => crate::top::cores::Yield::assumed(),
            Some(p) => {
                let text = crate::fsutil::read_input_text(p, limits::MAX_YIELD_FILE_BYTES)
                    .map_err(|e| e.into_error(&format!("--yield {}", p.display())))?;
                crate::top::cores::yield_from_json(p, &text).map_err(BadInput)?
            }
        };
        if let Some(f) = &a.textfile {
            crate::fsutil::check_output("--textfile", f)?;
        }
        let exports = a.output.exports();
        if !exports.is_empty() && count.is_none() {
            return Err(BadInput(
                "--export-json/--export-csv/--export-markdown need a bounded run: add --once or \
                 --count N (the files hold every interval and are written when the last one ends)"
                    .into(),
            )
            .into());
        }
        let format = if a.output.json() {
            commands::top::Format::Json
        } else if a.prometheus {
            commands::top::Format::Prometheus
        } else {
            commands::top::Format::Text {
                refresh: count != Some(1) && std::io::stdout().is_terminal(),
            }
        };
        Ok(commands::top::TopCommand {
            root: a.root.sysfs_root,
            interval,
            count,
            format,
            textfile: a.textfile,
            pid: a.pid,
            smt_yield,
            trace: !a.no_trace,
            exports,
        })
    }
}
