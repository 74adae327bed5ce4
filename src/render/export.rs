//! `--export-json`, `--export-csv` and `--export-markdown FILE`: a measuring command's
//! results as files, beside what it prints. One [`Document`] per run feeds all three, as
//! hyperfine's exporters share one result list (`src/export/mod.rs` there):
//!
//! - JSON: the command's serde model, the same document `--json` prints;
//! - CSV: [`Document::data`], one row per measured unit with raw numbers (no SI prefixes,
//!   no "±"), the unit in the column name, written by the `csv` crate (RFC 4180 quoting);
//! - Markdown: the title, then each [`Section`]'s heading, sentences and table as the
//!   terminal shows them, every field through the one escaper ([`super::markdown`]).
//!
//! Each file is written whole (a temporary file, then rename), and every path is checked
//! before the run starts ([`Exports::check`]), so a bad path costs no measurement and no
//! run leaves half a file.

use super::blocks::Block;
use super::markdown::md;
use super::table::{NONE, Table};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where to write each export; all `None` when none was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exports {
    pub json: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
}

/// One part of the Markdown export: a heading, plain sentences, and a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub heading: String,
    pub text: Vec<String>,
    pub table: Option<Table>,
}

/// Everything a run exports.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// `smtlab lockscan on …`: the Markdown file's first heading.
    pub title: String,
    /// The command's model as JSON.
    pub json: serde_json::Value,
    /// Raw values, one row per measured unit: the CSV file.
    pub data: Table,
    pub sections: Vec<Section>,
}

impl Document {
    /// A run's export from its one document, the blocks its terminal output is drawn
    /// from: the Markdown has the same headings, sentences and tables (folded detail
    /// under its summary line as a heading of its own; charts left out, their tables
    /// carry the numbers).
    pub fn of<T: serde::Serialize>(title: &str, model: &T, data: Table, blocks: &[Block]) -> Self {
        let mut sections = Vec::new();
        sections_of(blocks, &mut sections);
        Document {
            title: title.into(),
            json: serde_json::to_value(model).unwrap_or_default(),
            data,
            sections,
        }
    }
}

/// `blocks` as sections: a heading opens one, and text or a table after a section's
/// table opens an untitled one, so that everything keeps its order.
fn sections_of(blocks: &[Block], out: &mut Vec<Section>) {
    fn open(out: &mut Vec<Section>, heading: &str) {
        out.push(Section {
            heading: heading.into(),
            text: Vec::new(),
            table: None,
        });
    }
    fn current(out: &mut Vec<Section>) -> &mut Section {
        if out.last().is_none_or(|s| s.table.is_some()) {
            open(out, "");
        }
        out.last_mut().expect("a section was just opened")
    }
    for b in blocks {
        match b {
            Block::Heading(h) | Block::Subheading(h) => open(out, h),
            Block::Folded { summary, blocks } => {
                open(out, summary);
                sections_of(blocks, out);
            }
            Block::Chart(_) => {}
            Block::Table(t) => current(out).table = Some(t.clone()),
            Block::Intro(t) | Block::Key(t) | Block::Note(t) => current(out).text.push(t.clone()),
            Block::List(items) => current(out).text.extend(items.iter().cloned()),
            Block::Terms(terms) => current(out).text.extend(
                terms
                    .iter()
                    .map(|t| format!("{}: {} — {}", t.label, t.observed, t.meaning)),
            ),
        }
    }
}

impl Exports {
    /// No exports.
    pub fn none() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.json.is_none() && self.csv.is_none() && self.markdown.is_none()
    }

    /// Each path as its flag names it.
    fn paths(&self) -> [(&'static str, Option<&Path>); 3] {
        [
            ("--export-json", self.json.as_deref()),
            ("--export-csv", self.csv.as_deref()),
            ("--export-markdown", self.markdown.as_deref()),
        ]
    }

    /// Refuses, before any work, a path that is not a regular file (or nothing yet) in a
    /// directory smtlab can write.
    pub fn check(&self) -> Result<(), crate::error::BadInput> {
        for (flag, path) in self.paths() {
            if let Some(p) = path {
                crate::fsutil::check_output(flag, p)?;
            }
        }
        Ok(())
    }

    /// Writes every export asked for; `document` is built only when one is.
    pub fn write(&self, document: impl FnOnce() -> Document) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let doc = document();
        let write = |p: &Path, text: String| {
            crate::fsutil::replace(p, text.as_bytes())
                .with_context(|| format!("writing {}", p.display()))
        };
        if let Some(p) = &self.json {
            write(p, serde_json::to_string_pretty(&doc.json)? + "\n")?;
        }
        if let Some(p) = &self.csv {
            write(p, csv(&doc.data)?)?;
        }
        if let Some(p) = &self.markdown {
            write(p, markdown(&doc))?;
        }
        Ok(())
    }
}

/// A table as CSV: the header, then each row, padded to the header's width; [`NONE`]
/// (not measured) as an empty field.
pub fn csv(t: &Table) -> Result<String> {
    let mut w = ::csv::WriterBuilder::new()
        .flexible(false)
        .from_writer(Vec::new());
    w.write_record(&t.header)?;
    for r in &t.rows {
        let row: Vec<&str> = (0..t.header.len())
            .map(|i| match r.get(i).map(String::as_str) {
                Some(NONE) | None => "",
                Some(c) => c,
            })
            .collect();
        w.write_record(&row)?;
    }
    let bytes = w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(String::from_utf8(bytes)?)
}

/// The Markdown export: the title, then each section.
pub fn markdown(doc: &Document) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# {}\n", md(&doc.title));
    for s in &doc.sections {
        if !s.heading.is_empty() {
            let _ = writeln!(o, "## {}\n", md(&s.heading));
        }
        for t in &s.text {
            let _ = writeln!(o, "{}\n", md(t));
        }
        if let Some(t) = &s.table {
            super::markup::md_table(&mut o, t);
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Document {
        let mut data = Table::new(&["lock", "ops_per_sec", "note"]);
        data.push(vec![
            "ttas".into(),
            "1234.5".into(),
            "a, \"quoted\" one".into(),
        ]);
        data.push(vec!["mutex".into(), NONE.into()]);
        let mut shown = Table::new(&["lock", "ops/s"]);
        shown.push(vec!["ttas".into(), "1.23 k".into()]);
        Document {
            title: "smtlab lockscan".into(),
            json: serde_json::json!({"a": 1}),
            data,
            sections: vec![Section {
                heading: "Throughput".into(),
                text: vec!["One line | with a pipe.".into()],
                table: Some(shown),
            }],
        }
    }

    #[test]
    fn csv_quotes_pads_and_leaves_not_measured_empty() {
        let text = csv(&doc().data).unwrap();
        assert_eq!(
            text,
            "lock,ops_per_sec,note\nttas,1234.5,\"a, \"\"quoted\"\" one\"\nmutex,,\n"
        );
    }

    #[test]
    fn markdown_has_title_sections_and_escaped_tables() {
        let text = markdown(&doc());
        assert!(
            text.starts_with("# smtlab lockscan\n\n## Throughput\n\n"),
            "{text}"
        );
        assert!(
            text.contains("| lock | ops/s |\n|---|---|\n| ttas | 1.23 k |\n"),
            "{text}"
        );
        // A paragraph line is inline text: one line, no heading or list started.
        assert!(text.contains("\nOne line | with a pipe.\n"), "{text}");
    }

    #[test]
    fn nothing_asked_builds_nothing() {
        Exports::none()
            .write(|| panic!("built a document nobody asked for"))
            .unwrap();
    }

    #[test]
    fn every_asked_export_is_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let e = Exports {
            json: Some(dir.path().join("r.json")),
            csv: Some(dir.path().join("r.csv")),
            markdown: Some(dir.path().join("r.md")),
        };
        e.check().unwrap();
        e.write(doc).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap())
                .unwrap();
        assert_eq!(json["a"], 1);
        let mut r = ::csv::Reader::from_path(dir.path().join("r.csv")).unwrap();
        assert_eq!(r.records().count(), 2);
        assert!(
            std::fs::read_to_string(dir.path().join("r.md"))
                .unwrap()
                .starts_with("# smtlab lockscan")
        );
    }

    #[test]
    fn a_path_in_a_missing_directory_is_refused_before_work() {
        let e = Exports {
            csv: Some(PathBuf::from("/nonexistent/dir/r.csv")),
            ..Exports::none()
        };
        let err = e.check().unwrap_err().to_string();
        assert!(err.contains("--export-csv /nonexistent/dir/r.csv"), "{err}");
    }
}
