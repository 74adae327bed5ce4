//! `smtlab report results.json`: re-render `report.html` and `summary.md` from a study's
//! JSON, without rerunning anything. The output is byte-identical to what the study wrote.
//! A file whose answers older rules made is said to be so; `--recompute` makes every
//! answer again from the stored runs with this build's rules, renders the pages from
//! those, writes the recomputed file beside them and prints the table and what changed.

use crate::report::{self, Report};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The recomputed results, written beside the pages (the file read is never replaced).
pub const RECOMPUTED_JSON: &str = "results.recomputed.json";

#[derive(Debug, Clone)]
pub struct ReportCommand {
    /// The `results.json` to read.
    pub results: PathBuf,
    /// Where to write; None = the directory holding `results`.
    pub out: Option<PathBuf>,
    /// Make every answer again with this build's rules.
    pub recompute: bool,
}

pub fn run(cfg: &ReportCommand, out: &mut dyn Write) -> Result<()> {
    let text = crate::fsutil::read_input_text(&cfg.results, crate::limits::MAX_RESULTS_BYTES)
        .map_err(|e| e.into_error(&format!("reading `{}`", cfg.results.display())))?;
    let dir = match &cfg.out {
        Some(d) => d.clone(),
        None => cfg
            .results
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let written: &[&str] = if cfg.recompute {
        &[report::REPORT_HTML, report::SUMMARY_MD, RECOMPUTED_JSON]
    } else {
        &[report::REPORT_HTML, report::SUMMARY_MD]
    };
    refuse_to_overwrite_input(&cfg.results, &dir, written)?;
    if !cfg.recompute {
        let rendered = report::render_json(&text)
            .with_context(|| format!("rendering `{}`", cfg.results.display()))?;
        report::check_out_dir(&dir, &[report::REPORT_HTML, report::SUMMARY_MD])?;
        for p in report::write_rendered(&rendered, &dir, false)? {
            writeln!(out, "wrote {}", p.display())?;
        }
        let r = Report::from_json(&text)?;
        if let Some(note) = report::verdict::older_rules_note(&r) {
            writeln!(out, "note: {note}")?;
        }
        return Ok(());
    }
    let mut r =
        Report::from_json(&text).with_context(|| format!("reading `{}`", cfg.results.display()))?;
    let (verdict, changes) = report::verdict::recompute(&r);
    let made_by = report::verdict::older_rules_note(&r);
    r.verdict = verdict;
    let json = r.to_json()?;
    let rendered = report::render_json(&json)?;
    report::check_out_dir(
        &dir,
        &[report::REPORT_HTML, report::SUMMARY_MD, RECOMPUTED_JSON],
    )?;
    let written = report::write_rendered(&rendered, &dir, false)?;
    let recomputed = report::write_atomic(&dir.join(RECOMPUTED_JSON), json.as_bytes())?;
    writeln!(out, "{}", recompute_text(&r, &changes, made_by.is_some()))?;
    for p in written.iter().chain([&recomputed]) {
        writeln!(out, "wrote {}", p.display())?;
    }
    Ok(())
}

/// Refuses (bad input) when one of the files this command writes in `dir` is the file it
/// reads, under its own name, another name or a symbolic link: the same device and inode
/// (stat(2)), since writing the pages or the recomputed JSON replaces that file.
fn refuse_to_overwrite_input(results: &Path, dir: &Path, names: &[&str]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(input) = std::fs::metadata(results) else {
        return Ok(());
    };
    for name in names {
        let target = dir.join(name);
        if let Ok(m) = std::fs::metadata(&target)
            && m.dev() == input.dev()
            && m.ino() == input.ino()
        {
            return Err(crate::error::BadInput(format!(
                "`{}` is the file being read (`{}`), and this command would write over it; \
                 copy or rename it, or give --out another directory",
                target.display(),
                results.display()
            ))
            .into());
        }
    }
    Ok(())
}

/// The recomputed answer table, then each row that changed (before → after).
fn recompute_text(r: &Report, changes: &[report::verdict::Change], older: bool) -> String {
    use crate::render::Table;
    let mut t = Table::new(&["CLASS", "ANSWER", "EVIDENCE"]);
    for a in &r.verdict.answers {
        t.push(vec![
            a.class.label().to_string(),
            a.answer.label().to_string(),
            a.evidence.as_ref().map_or_else(
                || crate::render::NONE.to_string(),
                |e| e.comparison.to_string(),
            ),
        ]);
    }
    let mut o = format!(
        "Answers recomputed from the stored runs with this build's rules ({}):\n\n{}\n",
        report::verdict::RULES,
        t.text()
    );
    if changes.is_empty() {
        o.push_str("\nNo answer changed");
        o.push_str(if older {
            ", though older rules made them.\n"
        } else {
            ".\n"
        });
    } else {
        o.push_str(&format!(
            "\nChanged ({} of {} rows):\n",
            changes.len(),
            r.verdict.answers.len()
        ));
        for c in changes {
            let before = c.before.as_ref().map_or_else(
                || "no row".to_string(),
                |b| {
                    format!(
                        "{}{}",
                        b.answer.label(),
                        b.evidence
                            .as_ref()
                            .map(|e| format!(" ({})", e.comparison))
                            .unwrap_or_default()
                    )
                },
            );
            o.push_str(&format!(
                "- {}: was {before}; now {}{} — {}\n",
                c.class.label(),
                c.after.answer.label(),
                c.after
                    .evidence
                    .as_ref()
                    .map(|e| format!(" ({})", e.comparison))
                    .unwrap_or_default(),
                c.after.reason
            ));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{HtAnswer, WorkloadClass};

    #[test]
    fn recompute_refuses_to_write_over_the_file_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let old = crate::report::verdict::previous_schema();
        let file = dir.path().join(RECOMPUTED_JSON);
        std::fs::write(&file, &old).unwrap();
        // The same file by its own name, and by a symbolic link in another directory.
        let other = tempfile::tempdir().unwrap();
        let link = other.path().join("results.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        for (results, out_dir) in [(file.clone(), None), (link, Some(dir.path().to_path_buf()))] {
            let mut o = Vec::new();
            let err = run(
                &ReportCommand {
                    results: results.clone(),
                    out: out_dir,
                    recompute: true,
                },
                &mut o,
            )
            .expect_err("writing results.recomputed.json over the input must be refused");
            assert_eq!(crate::error::exit_code(&err), 2, "{err:#}");
            let msg = format!("{err:#}");
            assert!(
                msg.contains(&file.display().to_string())
                    && msg.contains(&results.display().to_string()),
                "{msg}"
            );
            assert_eq!(
                std::fs::read_to_string(&file).unwrap(),
                old,
                "input byte-identical"
            );
            assert!(
                !dir.path().join(crate::report::REPORT_HTML).exists(),
                "nothing written"
            );
            assert!(o.is_empty());
        }
    }

    #[test]
    fn recompute_on_a_previous_schema_file_prints_the_table_and_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("results.json");
        let old = crate::report::verdict::previous_schema();
        assert!(!old.contains("\"rules\"") && !old.contains("core_yield"));
        std::fs::write(&file, &old).unwrap();
        // Plain `report` renders the file's own answers and says which build made them.
        let mut o = Vec::new();
        let cfg = ReportCommand {
            results: file.clone(),
            out: None,
            recompute: false,
        };
        run(&cfg, &mut o).unwrap();
        let plain = String::from_utf8(o).unwrap();
        assert!(
            plain.contains("note: the answers in this file were made by smtlab 0.0.0-test (git 0) under rules from before they were numbered (this build: rules 1)")
                && plain.contains("`smtlab report --recompute`"),
            "{plain}"
        );
        let md = std::fs::read_to_string(dir.path().join(crate::report::SUMMARY_MD)).unwrap();
        assert!(
            md.contains("turn HT off"),
            "the stored answer is shown as stored"
        );
        // --recompute: the table with this build's rules, and the row that changed.
        let mut o = Vec::new();
        run(
            &ReportCommand {
                recompute: true,
                ..cfg
            },
            &mut o,
        )
        .unwrap();
        let text = String::from_utf8(o).unwrap();
        assert!(
            text.contains("Answers recomputed from the stored runs with this build's rules (1)"),
            "{text}"
        );
        assert!(
            text.contains("CLASS") && text.contains("locks beside memory scans"),
            "{text}"
        );
        assert!(
            text.contains("- locks beside memory scans: was turn HT off (")
                && text.contains("now inconclusive (1.00×"),
            "{text}"
        );
        assert!(
            text.contains("acquisitions of a lock thread whose SMT sibling ran a memory scanner"),
            "{text}"
        );
        assert!(text.contains("Changed (1 of 7 rows)"), "{text}");
        // The file read is left as it was; the recomputed one sits beside it.
        assert_eq!(std::fs::read_to_string(&file).unwrap(), old);
        let back =
            Report::from_json(&std::fs::read_to_string(dir.path().join(RECOMPUTED_JSON)).unwrap())
                .unwrap();
        assert_eq!(back.verdict.rules, crate::report::verdict::RULES);
        let row = back
            .verdict
            .answers
            .iter()
            .find(|a| a.class == WorkloadClass::LocksBesideScans)
            .unwrap();
        assert_ne!(row.answer, HtAnswer::TurnHtOff);
        assert!(row.gate.is_some(), "recomputed rows carry their gate");
        // A file of this build's rules says nothing of rules.
        let cur = dir.path().join("current.json");
        std::fs::write(&cur, crate::study::fixture::smt().to_json().unwrap()).unwrap();
        let mut o = Vec::new();
        run(
            &ReportCommand {
                results: cur,
                out: None,
                recompute: false,
            },
            &mut o,
        )
        .unwrap();
        assert!(!String::from_utf8(o).unwrap().contains("note:"));
    }
}
