//! `smtlab man` and `smtlab completions`: the man pages render in a real `man`, and the bash
//! completion script, sourced in a real bash, completes subcommands and option values.

use assert_cmd::Command;
use std::io::Write;
use std::process::Stdio;

fn smtlab() -> Command {
    Command::cargo_bin("smtlab").expect("binary built")
}

fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

fn stdout_of(args: &[&str]) -> String {
    let out = smtlab().args(args).assert().success().get_output().clone();
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// True when `prog` runs; says why not otherwise (fails under CI, which installs it).
fn have(prog: &str, install: &str) -> bool {
    let ok = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(!ci(), "CI must have `{prog}` ({install})");
        crate::common::skip(
            crate::common::Need::Machine,
            &format!("`{prog}` is not installed ({install})"),
        );
    }
    ok
}

/// Every subcommand smtlab lists (the page of each must render).
const SUBCOMMANDS: &[&str] = &[
    "topo",
    "burn",
    "oltp",
    "c2c",
    "lockscan",
    "neighbors",
    "rwcache",
    "compare",
    "study",
    "report",
    "merge",
    "smt",
    "top",
    "mem",
    "plan",
    "yield",
    "man",
    "completions",
];

/// Formats roff through `man -l -` as a reader would see it.
fn man_render(roff: &str) -> (String, String) {
    let mut child = std::process::Command::new("man")
        .args(["-l", "-"])
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("LC_ALL", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("man starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(roff.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    // Plain text: overstrikes removed, and groff's minus and hyphen signs as `-`.
    let mut stdout = String::new();
    for c in String::from_utf8_lossy(&out.stdout).chars() {
        match c {
            '\u{8}' => {
                stdout.pop();
            }
            '\u{2212}' | '\u{2010}' => stdout.push('-'),
            c => stdout.push(c),
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "man -l - failed: {stderr}\n{roff}");
    (stdout, stderr)
}

#[test]
fn man_pages_render_in_man() {
    let roff = stdout_of(&["man", "lockscan"]);
    assert!(roff.starts_with(".ie") || roff.starts_with(".TH"), "{roff}");
    assert!(roff.contains(".TH smtlab-lockscan 1"), "{roff}");
    if !have("man", "apt-get install man-db groff-base") {
        return;
    }
    let (page, stderr) = man_render(&roff);
    for want in [
        "NAME",
        "smtlab-lockscan",
        "SYNOPSIS",
        "OPTIONS",
        "--scan-bytes",
        "--lock-stats",
        "--repeat",
        "--json",
        "Repetitions of every scenario",
    ] {
        assert!(page.contains(want), "{want} in:\n{page}");
    }
    assert!(!stderr.contains("warning"), "{stderr}");

    // Every page, and the overview listing the subcommands.
    let overview = stdout_of(&["man"]);
    let (text, _) = man_render(&overview);
    for sub in SUBCOMMANDS {
        assert!(
            text.contains(&format!("smtlab-{sub}")),
            "{sub} listed:\n{text}"
        );
        let (text, stderr) = man_render(&stdout_of(&["man", sub]));
        assert!(text.contains("NAME"), "{sub}: {text}");
        assert!(!stderr.contains("warning"), "{sub}: {stderr}");
    }
    let (text, _) = man_render(&stdout_of(&["man", "smt", "status"]));
    assert!(text.contains("smtlab-smt-status"), "{text}");
}

#[test]
fn man_refuses_an_unknown_subcommand() {
    let out = smtlab()
        .args(["man", "lockscn"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("Error: `smtlab lockscn`: no such subcommand; valid: topo, burn"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(
        smtlab()
            .args(["man", "topo", "x"])
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone(),
    )
    .unwrap();
    assert!(
        err.contains("`smtlab topo x`: no such subcommand; `smtlab topo` has none"),
        "{err}"
    );
}

/// Sources the bash completion script and completes `words` (the last one being
/// completed, possibly empty), printing COMPREPLY one per line.
fn bash_complete(script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        r#"source '{script}'
func=$(complete -p smtlab | sed -E 's/.*-F ([^ ]+).*/\1/')
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
cur="${{COMP_WORDS[COMP_CWORD]}}"
prev="${{COMP_WORDS[COMP_CWORD-1]}}"
"$func" smtlab "$cur" "$prev"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        script = script.display(),
        words = quoted.join(" "),
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{words:?}: {stderr}");
    assert!(stderr.trim().is_empty(), "{words:?}: {stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_placement_values() {
    if !have("bash", "apt-get install bash") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("smtlab.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();

    assert_eq!(bash_complete(&script, &["smtlab", "lo"]), ["lockscan"]);
    let all = bash_complete(&script, &["smtlab", ""]);
    for sub in SUBCOMMANDS {
        assert!(all.iter().any(|w| w == sub), "{sub} in {all:?}");
    }
    let placements = bash_complete(&script, &["smtlab", "rwcache", "--placement", ""]);
    for p in ["one-per-core", "pairs", "all", "spread", "os"] {
        assert!(placements.iter().any(|w| w == p), "{p} in {placements:?}");
    }
    assert_eq!(
        bash_complete(&script, &["smtlab", "burn", "--placement", "one"]),
        ["one-per-core"]
    );
    let locks = bash_complete(&script, &["smtlab", "lockscan", "--lock", ""]);
    for l in ["ttas", "mcs", "parking_lot", "all"] {
        assert!(locks.iter().any(|w| w == l), "{l} in {locks:?}");
    }
    assert_eq!(
        bash_complete(&script, &["smtlab", "yield", "--within", "ma"]),
        ["machine"]
    );
    let opts = bash_complete(&script, &["smtlab", "lockscan", "--re"]);
    assert_eq!(opts, ["--repeat"]);
    let burn = bash_complete(&script, &["smtlab", "burn", "--"]);
    assert!(burn.iter().any(|w| w == "--max-prime"), "{burn:?}");
}

#[test]
fn every_shell_gets_a_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let text = stdout_of(&["completions", shell]);
        assert!(text.contains("smtlab"), "{shell}");
        assert!(text.contains("lockscan"), "{shell}");
        assert!(text.contains("one-per-core"), "{shell}: placement values");
    }
    let err = String::from_utf8(
        smtlab()
            .args(["completions", "tcsh"])
            .assert()
            .code(2)
            .get_output()
            .stderr
            .clone(),
    )
    .unwrap();
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
}

/// The values completions offer are not printed in `--help`: each command's help reads as
/// before (only `neighbors`' two value enums list theirs, as they always did).
#[test]
fn help_keeps_its_words() {
    for sub in SUBCOMMANDS {
        let help = stdout_of(&[sub, "--help"]);
        assert!(!help.contains("[possible values"), "{sub}:\n{help}");
    }
    let lockscan = stdout_of(&["lockscan", "--help"]);
    for want in [
        "-d, --duration <DURATION>",
        "Measured time per run: 10s, 500ms, 2m [default: 10s]",
        "Discarded warm-up before each run [default: 500ms]",
        "[default: 3]",
        "--json",
        "Machine-readable JSON: `{results:",
    ] {
        assert!(lockscan.contains(want), "{want}:\n{lockscan}");
    }
    let compare = stdout_of(&["compare", "--help"]);
    assert!(
        compare.contains("Write one CSV row per placement to FILE"),
        "{compare}"
    );
}
