//! Writing a study's files: `results.json`, and `report.html` and `summary.md` rendered
//! from that JSON text alone (so `smtlab report` reproduces them byte for byte), each
//! written whole through [`crate::fsutil::replace`] after [`check_out_dir`].

use super::{Report, html, markdown};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// File names written into the output directory.
pub const RESULTS_JSON: &str = "results.json";
pub const REPORT_HTML: &str = "report.html";
pub const SUMMARY_MD: &str = "summary.md";

/// The three files rendered from one JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub json: String,
    pub html: String,
    pub markdown: String,
}

/// Renders HTML and Markdown from the JSON text alone (what `smtlab report` does).
pub fn render_json(json: &str) -> Result<Rendered> {
    let r = Report::from_json(json)?;
    Ok(Rendered {
        json: json.to_string(),
        html: html::render(&r),
        markdown: markdown::render(&r),
    })
}

/// Serialises `report`, renders from the serialised text, and writes all three files into
/// `dir` atomically. Returns the paths written.
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let json = report.to_json()?;
    let r = render_json(&json)?;
    write_rendered(&r, dir, true)
}

/// Writes rendered files into `dir` (created if missing); `with_json` also writes
/// `results.json`. Each file is written atomically.
pub fn write_rendered(r: &Rendered, dir: &Path, with_json: bool) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating `{}`", dir.display()))?;
    let mut out = Vec::new();
    if with_json {
        out.push(write_atomic(&dir.join(RESULTS_JSON), r.json.as_bytes())?);
    }
    out.push(write_atomic(&dir.join(REPORT_HTML), r.html.as_bytes())?);
    out.push(write_atomic(&dir.join(SUMMARY_MD), r.markdown.as_bytes())?);
    Ok(out)
}

/// Checks, before any work, that the output directory can be created and written and
/// that each of `files` in it is a regular file or nothing ([`crate::fsutil::check_output`]):
/// an `--out` that is a file, or under /proc or /sys, or whose `report.html` is a FIFO, is
/// the user's input (exit 2), and finding out after a study has measured for minutes would
/// lose the results.
pub fn check_out_dir(dir: &Path, files: &[&str]) -> Result<(), crate::error::BadInput> {
    let bad = |why: String| {
        crate::error::BadInput(format!(
            "--out {}: {why}; give a directory smtlab can create and write",
            dir.display()
        ))
    };
    // A link is refused like every other output path's: run as root, a link planted in a
    // shared directory would have smtlab write its files wherever the link points (/etc).
    if let Ok(m) = std::fs::symlink_metadata(dir)
        && m.file_type().is_symlink()
    {
        let to = std::fs::read_link(dir).map_or_else(|_| "?".into(), |t| t.display().to_string());
        return Err(bad(format!(
            "it is a symbolic link (to {to}), and smtlab writes only into a directory named \
             as itself; give the directory the link points to"
        )));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(bad("it is a file, not a directory".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| bad(format!("cannot create it ({e})")))?;
    let probe = dir.join(format!(".smtlab-write-test.{}", std::process::id()));
    write_atomic(&probe, b"").map_err(|e| bad(format!("cannot write in it ({e:#})")))?;
    let _ = std::fs::remove_file(&probe);
    for f in files {
        crate::fsutil::check_output("--out", &dir.join(f))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` whole ([`crate::fsutil::replace`]) and returns the path.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    crate::fsutil::replace(path, bytes).with_context(|| format!("writing `{}`", path.display()))?;
    Ok(path.to_path_buf())
}
