//! The README's examples, run as shown: every `$ smtlab …` line of a text block that reads
//! another machine's tree (`--sysfs-root NAME`, hwloc's dump NAME unpacked beside it) must
//! print what the README shows under it (`[…]` stands for lines left out). These need no
//! SMT siblings and no root, so they run everywhere the dumps are. The first screen's
//! facts are checked against the binary: where the study writes, and what `--quick` takes.

use crate::common::{Need, no_dump, skip, stdout_of};
use std::path::{Path, PathBuf};

const README: &str = include_str!("../README.md");

/// One `$ smtlab …` line and the output the README shows for it.
struct Example {
    line: usize,
    args: Vec<String>,
    shown: Vec<String>,
}

/// The examples of `text` blocks whose command has `--sysfs-root`.
fn examples(readme: &str) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut in_text = false;
    let mut current: Option<Example> = None;
    for (i, l) in readme.lines().enumerate() {
        if l.starts_with("```") {
            in_text = !in_text && l == "```text";
            out.extend(current.take());
            continue;
        }
        if !in_text {
            continue;
        }
        if let Some(cmd) = l.strip_prefix("$ ") {
            out.extend(current.take());
            if cmd.starts_with("smtlab ") && cmd.contains("--sysfs-root ") {
                assert!(
                    !cmd.contains(['\'', '"', '|', '\\']),
                    "README line {}: an example run here is split on spaces: {cmd}",
                    i + 1
                );
                current = Some(Example {
                    line: i + 1,
                    args: cmd.split_whitespace().skip(1).map(String::from).collect(),
                    shown: Vec::new(),
                });
            }
        } else if let Some(e) = current.as_mut() {
            e.shown.push(l.to_string());
        }
    }
    out.extend(current);
    out
}

/// Whether `printed` shows `shown`: line for line, where each `[…]` line of `shown` stands
/// for any number of printed lines.
fn shows(printed: &[&str], shown: &[String]) -> bool {
    let mut rest = printed;
    let mut chunks = shown.split(|l| l.trim() == "[…]").peekable();
    let mut first = true;
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let at = if first {
            rest.starts_with_lines(chunk).then_some(0)
        } else {
            (0..=rest.len().saturating_sub(chunk.len()))
                .find(|&k| rest[k..].starts_with_lines(chunk))
        };
        let Some(k) = at else { return false };
        rest = &rest[k + chunk.len()..];
        if last && !rest.is_empty() && shown.last().is_none_or(|l| l.trim() != "[…]") {
            return false;
        }
        first = false;
    }
    true
}

trait Lines {
    fn starts_with_lines(&self, chunk: &[String]) -> bool;
}

impl Lines for [&str] {
    fn starts_with_lines(&self, chunk: &[String]) -> bool {
        self.len() >= chunk.len()
            && self
                .iter()
                .zip(chunk)
                .all(|(a, b)| a.trim_end() == b.trim_end())
    }
}

fn dumps_dir() -> PathBuf {
    std::env::var_os("SMTLAB_TOPOLOGY_DUMPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/topology")
        })
}

#[test]
fn the_readme_examples_on_a_dump_print_what_it_shows() {
    let found = examples(README);
    assert!(found.len() >= 3, "the README's dump examples went missing");
    let dir = dumps_dir().join("hwloc");
    let tmp = tempfile::tempdir().unwrap();
    let mut wrong = Vec::new();
    for e in &found {
        let at = e.args.iter().position(|a| a == "--sysfs-root").unwrap();
        let name = &e.args[at + 1];
        let tarball = dir.join(format!("{name}.tar.bz2"));
        if !tarball.is_file() {
            skip(Need::Dumps, &no_dump(&dir, &tarball));
            return;
        }
        if !tmp.path().join(name).is_dir() {
            let ok = std::process::Command::new("tar")
                .arg("-xf")
                .arg(&tarball)
                .arg("-C")
                .arg(tmp.path())
                .status()
                .expect("tar runs")
                .success();
            assert!(ok, "unpacking {}", tarball.display());
        }
        let out = assert_cmd::Command::cargo_bin("smtlab")
            .unwrap()
            .current_dir(tmp.path())
            .args(&e.args)
            .output()
            .unwrap();
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = printed.lines().collect();
        if !shows(&lines, &e.shown) {
            wrong.push(format!(
                "README line {}: smtlab {}\n--- README shows:\n{}\n--- it prints:\n{printed}",
                e.line,
                e.args.join(" "),
                e.shown.join("\n")
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn elided_lines_match_any_run_of_printed_lines() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert!(shows(&["a", "b", "c"], &s(&["a", "[…]", "c"])));
    assert!(shows(&["a", "b", "c"], &s(&["a", "[…]"])));
    assert!(!shows(&["a", "b", "c"], &s(&["a", "b"])));
    assert!(!shows(&["a", "b"], &s(&["b"])));
    assert!(!shows(&["a", "c"], &s(&["a", "[…]", "b"])));
}

/// The first screen says where the study writes and how long `--quick` takes; the binary
/// must agree.
#[test]
fn the_first_screen_agrees_with_study_help() {
    let top: String = README.lines().take(45).collect::<Vec<_>>().join("\n");
    let setup: Vec<&str> = top
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block near the top")
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .collect();
    assert_eq!(setup, ["cargo run --release -- study", "cargo test"]);
    let help = stdout_of(
        assert_cmd::Command::cargo_bin("smtlab")
            .unwrap()
            .args(["study", "--help"]),
    );
    assert!(help.contains("[default:\n") || help.contains("[default: smtlab-study]"));
    assert!(help.contains("smtlab-study"), "{help}");
    assert!(top.contains("./smtlab-study/report.html"), "{top}");
    assert!(help.contains("about a minute"), "{help}");
    assert!(top.contains("--quick: about a minute"), "{top}");
    assert!(top.contains("cargo install --path ."), "{top}");
    assert!(top.contains("target/release/smtlab"), "{top}");
    assert!(top.contains("not measured here"), "{top}");
}
