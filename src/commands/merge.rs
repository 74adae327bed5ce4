//! `smtlab merge RESULTS…`: many hosts' studies into one answer per machine type, written
//! as `fleet.json`, `fleet.html` and `fleet.md` (each whole, atomically) and summed up on
//! stdout. A bad input is named on stderr and in the report, and the rest is merged; only
//! when nothing usable is left is it an error (exit 2, no files written).

use crate::fleet::{self, FLEET_HTML, FLEET_JSON, FLEET_MD};
use crate::report;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct MergeCommand {
    /// results.json files, and directories searched for them.
    pub inputs: Vec<PathBuf>,
    /// Directory for the three files (created if missing).
    pub out: PathBuf,
    /// `--prometheus FILE`: the fleet's answers as gauges.
    pub prometheus: Option<PathBuf>,
    /// Print fleet.json instead of the summary.
    pub json: bool,
    /// The command line, for the report.
    pub command: String,
}

pub fn run(cfg: &MergeCommand, out: &mut dyn Write) -> Result<()> {
    report::check_out_dir(&cfg.out, &[FLEET_JSON, FLEET_HTML, FLEET_MD])?;
    if let Some(p) = &cfg.prometheus {
        crate::fsutil::check_output("--prometheus", p)?;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let f = fleet::merge(&cfg.inputs, threads, fleet::provenance(cfg.command.clone()))?;
    for s in &f.skipped {
        crate::say!("merge: skipped {}: {}", s.path, s.reason);
    }
    if f.hosts == 0 {
        return Err(crate::error::BadInput(format!(
            "nothing to merge: {} given, none a usable results.json (each is named above with its reason); give the results.json files a study wrote, or directories holding them",
            crate::render::count(cfg.inputs.len(), "input")
        ))
        .into());
    }
    let json = f.to_json()?;
    let mut written = vec![
        report::write_atomic(&cfg.out.join(FLEET_JSON), json.as_bytes())?,
        report::write_atomic(&cfg.out.join(FLEET_HTML), fleet::view::html(&f).as_bytes())?,
        report::write_atomic(
            &cfg.out.join(FLEET_MD),
            fleet::view::markdown(&f).as_bytes(),
        )?,
    ];
    if let Some(p) = &cfg.prometheus {
        written.push(report::write_atomic(
            p,
            fleet::view::prometheus(&f).as_bytes(),
        )?);
    }
    if cfg.json {
        out.write_all(json.as_bytes())?;
    } else {
        out.write_all(fleet::view::text(&f).as_bytes())?;
        for p in &written {
            writeln!(out, "wrote {}", p.display())?;
        }
    }
    Ok(())
}
