//! `smtlab merge RESULTS…`: many hosts' studies into one answer per machine type, written
//! as `fleet.json`, `fleet.html` and `fleet.md` (all or none, each whole) and summed up on
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
    let existed = std::fs::symlink_metadata(&cfg.out).is_ok();
    let r = merge(cfg, out);
    // A failed merge (nothing usable, a signal, a write that failed) leaves no empty
    // output directory it made itself; remove_dir removes only an empty one.
    if r.is_err() && !existed {
        let _ = std::fs::remove_dir(&cfg.out);
    }
    r
}

fn merge(cfg: &MergeCommand, out: &mut dyn Write) -> Result<()> {
    report::check_out_dir(&cfg.out, &[FLEET_JSON, FLEET_HTML, FLEET_MD])?;
    if let Some(p) = &cfg.prometheus {
        crate::fsutil::check_output("--prometheus", p)?;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let f = fleet::merge(&cfg.inputs, threads, fleet::provenance(cfg.command.clone()))?;
    crate::interrupt::check()?;
    for s in &f.skipped {
        crate::say!(
            "merge: skipped {}: {}",
            crate::render::terminal::field(&s.path),
            crate::render::terminal::field(&s.reason)
        );
    }
    if f.hosts == 0 {
        return Err(crate::error::BadInput(format!(
            "nothing to merge: {} given, none a usable results.json (each is named above with its reason); give the results.json files a study wrote, or directories holding them",
            crate::render::count(cfg.inputs.len(), "input")
        ))
        .into());
    }
    let json = f.to_json()?;
    let html = fleet::view::html(&f);
    let md = fleet::view::markdown(&f);
    let prom = cfg.prometheus.as_ref().map(|_| fleet::view::prometheus(&f));
    let paths = [
        cfg.out.join(FLEET_JSON),
        cfg.out.join(FLEET_HTML),
        cfg.out.join(FLEET_MD),
    ];
    let mut files: Vec<(&std::path::Path, &[u8])> = vec![
        (&paths[0], json.as_bytes()),
        (&paths[1], html.as_bytes()),
        (&paths[2], md.as_bytes()),
    ];
    if let (Some(p), Some(text)) = (&cfg.prometheus, &prom) {
        files.push((p, text.as_bytes()));
    }
    // All or none: a signal before the renames leaves the previous fleet's files as they
    // were, never a new fleet.json beside an old fleet.html.
    crate::fsutil::replace_all(&files)?;
    let written: Vec<&std::path::Path> = files.iter().map(|(p, _)| *p).collect();
    if cfg.json {
        out.write_all(json.as_bytes())?;
    } else {
        // Host names, CPU models, kernels and paths come from files merge does not control.
        out.write_all(crate::render::terminal::text(&fleet::view::text(&f)).as_bytes())?;
        for p in &written {
            writeln!(
                out,
                "wrote {}",
                crate::render::terminal::field(&p.display().to_string())
            )?;
        }
    }
    Ok(())
}
