//! `smtlab report results.json`: re-render `report.html` and `summary.md` from a study's
//! JSON, without rerunning anything. The output is byte-identical to what the study wrote.

use crate::report;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct ReportCommand {
    /// The `results.json` to read.
    pub results: PathBuf,
    /// Where to write; None = the directory holding `results`.
    pub out: Option<PathBuf>,
}

pub fn run(cfg: &ReportCommand, out: &mut dyn Write) -> Result<()> {
    let text = crate::fsutil::read_input_text(&cfg.results, crate::limits::MAX_RESULTS_BYTES)
        .map_err(|e| e.into_error(&format!("reading `{}`", cfg.results.display())))?;
    let rendered = report::render_json(&text)
        .with_context(|| format!("rendering `{}`", cfg.results.display()))?;
    let dir = match &cfg.out {
        Some(d) => d.clone(),
        None => cfg
            .results
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    report::check_out_dir(&dir, &[report::REPORT_HTML, report::SUMMARY_MD])?;
    for p in report::write_rendered(&rendered, &dir, false)? {
        writeln!(out, "wrote {}", p.display())?;
    }
    Ok(())
}
