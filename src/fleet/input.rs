//! Finding and reading the hosts' `results.json` files: directories are searched for files
//! of that name, every file is read whole (in parallel), and each becomes a [`HostFile`] or
//! a [`Skipped`] entry saying what is wrong with it. Nothing here stops the merge: one bad
//! file is one line in the report.
//!
//! Only the sections `merge` uses are decoded ([`HostFile`]); the rest of each file is
//! still parsed, so a truncated or malformed file is caught, but not kept in memory.

use super::model::{FLEET_KIND, Problem, Skipped};
use crate::report::{
    MachineInfo, PhaseRecord, Provenance, SCHEMA_VERSION, SmtFacts, Status, Verdict,
    slurm::SlurmJob,
};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The largest file read: far above any results.json smtlab writes (a few MB for hundreds
/// of CPUs), far below what would exhaust memory with one file per CPU in flight.
pub const MAX_FILE_BYTES: u64 = crate::limits::MAX_RESULTS_BYTES;
/// The most files one merge reads.
pub const MAX_FILES: usize = crate::limits::MAX_MERGE_FILES as usize;
/// How deep directories are searched.
const MAX_DEPTH: usize = 16;
/// The file name searched for in directories.
pub const RESULTS_NAME: &str = crate::report::RESULTS_JSON;

/// What `merge` reads of one results.json. Every field is optional here, so that a file of
/// another layout is told apart from a broken one by what it has.
#[derive(Debug, Clone, Deserialize)]
pub struct HostFile {
    pub schema_version: Option<serde_json::Value>,
    /// Set only in a `fleet.json`.
    #[serde(default)]
    pub kind: Option<String>,
    pub status: Option<Status>,
    pub synthetic: Option<bool>,
    pub provenance: Option<Provenance>,
    pub machine: Option<MachineInfo>,
    pub smt: Option<SmtFacts>,
    #[serde(default)]
    pub phases: Vec<PhaseRecord>,
    #[serde(default)]
    pub smt_yield: Option<YieldView>,
    #[serde(default)]
    pub neighbors: Option<NeighborsView>,
    #[serde(default)]
    pub compare: Option<CompareView>,
    pub verdict: Option<Verdict>,
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(default)]
    pub slurm: Option<SlurmJob>,
}

/// The yield runs' steal shares.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct YieldView {
    #[serde(default)]
    pub result: YieldResultView,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct YieldResultView {
    #[serde(default)]
    pub workloads: Vec<YieldWorkloadView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct YieldWorkloadView {
    #[serde(default)]
    pub runs: Vec<YieldRunView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct YieldRunView {
    #[serde(default)]
    pub steal_share: Option<f64>,
}

/// The neighbors series' diagnoses (external load on the first, burner-free step).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NeighborsView {
    #[serde(default)]
    pub series: Vec<NeighborsSeriesView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NeighborsSeriesView {
    #[serde(default)]
    pub steps: Vec<NeighborsStepView>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NeighborsStepView {
    #[serde(default)]
    pub diagnosis: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// The user's command.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CompareView {
    #[serde(default)]
    pub result: CompareResultView,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct CompareResultView {
    #[serde(default)]
    pub command: Vec<String>,
}

/// A file read and decoded, with the path it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    pub file: HostFile,
}

fn skip(path: &Path, problem: Problem, reason: String) -> Skipped {
    Skipped {
        path: path.display().to_string(),
        problem,
        reason,
    }
}

/// The files to read: each argument that is a file as given, each directory searched for
/// `results.json` files (symbolic links to directories are not followed, so a link cannot
/// make a loop). The same file reached twice is read once. Arguments that do not exist,
/// and directories holding no results.json, become [`Skipped`] entries. Err when more than
/// [`MAX_FILES`] files are found.
pub fn expand(args: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<Skipped>), crate::error::BadInput> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for a in args {
        let meta = match std::fs::metadata(a) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                skipped.push(skip(a, Problem::Missing, "does not exist".into()));
                continue;
            }
            Err(e) => {
                skipped.push(skip(
                    a,
                    Problem::Unreadable,
                    format!("cannot be read ({e})"),
                ));
                continue;
            }
        };
        let mut found = Vec::new();
        if meta.is_dir() {
            walk(a, 0, &mut found, &mut skipped);
            if found.is_empty() {
                skipped.push(skip(
                    a,
                    Problem::NoResults,
                    format!(
                        "a directory holding no {RESULTS_NAME} (searched {MAX_DEPTH} levels deep)"
                    ),
                ));
            }
        } else {
            found.push(a.clone());
        }
        for f in found {
            let id = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
            if seen.insert(id) {
                files.push(f);
            }
            if files.len() > MAX_FILES {
                return Err(crate::error::BadInput(format!(
                    "more than {MAX_FILES} files to merge under the paths given, and one merge \
                     reads at most {MAX_FILES} files; merge fewer at a time"
                )));
            }
        }
    }
    Ok((files, skipped))
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>, skipped: &mut Vec<Skipped>) {
    if depth > MAX_DEPTH {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            skipped.push(skip(
                dir,
                Problem::Unreadable,
                format!("cannot be listed ({e})"),
            ));
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            walk(&path, depth + 1, found, skipped);
        } else if e.file_name() == RESULTS_NAME && (ft.is_file() || path.is_file()) {
            found.push(path);
        }
        if found.len() > MAX_FILES {
            return;
        }
    }
}

/// Reads and decodes every file, on up to `threads` threads, in the order given.
pub fn load_all(files: &[PathBuf], threads: usize) -> Vec<Result<Loaded, Skipped>> {
    let threads = threads.clamp(1, 64).min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<Result<Loaded, Skipped>>> = (0..files.len()).map(|_| None).collect();
    let slots: Vec<std::sync::Mutex<&mut Option<Result<Loaded, Skipped>>>> =
        out.iter_mut().map(std::sync::Mutex::new).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= files.len() {
                        break;
                    }
                    let r = load(&files[i]);
                    **slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    drop(slots);
    out.into_iter()
        .map(|r| r.expect("every file was loaded"))
        .collect()
}

/// Reads one file and decodes it.
pub fn load(path: &Path) -> Result<Loaded, Skipped> {
    let bytes = read_capped(path)?;
    let file = decode(&bytes).map_err(|(problem, reason)| skip(path, problem, reason))?;
    Ok(Loaded {
        path: path.to_path_buf(),
        file,
    })
}

/// The file's bytes through [`crate::fsutil::read_input`] (regular files only, never a
/// blocking open, at most [`MAX_FILE_BYTES`], stopping on a signal), or why it is skipped.
fn read_capped(path: &Path) -> Result<Vec<u8>, Skipped> {
    use crate::fsutil::InputError;
    crate::fsutil::read_input(path, MAX_FILE_BYTES).map_err(|e| match &e {
        InputError::Bad(why) if why.contains("may hold at most") => {
            skip(path, Problem::TooLarge, why.clone())
        }
        _ => skip(path, Problem::Unreadable, format!("cannot be read: {e}")),
    })
}

/// Decodes a results.json's bytes, or says what is wrong with them.
pub fn decode(bytes: &[u8]) -> Result<HostFile, (Problem, String)> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Err((Problem::Empty, "is empty".into()));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        (
            Problem::NotText,
            format!(
                "is not UTF-8 text (invalid byte at offset {}): not a results.json",
                e.valid_up_to()
            ),
        )
    })?;
    // Editors on some systems save UTF-8 with a byte-order mark; JSON forbids it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let file = match serde_json::from_str::<HostFile>(text) {
        Ok(f) => f,
        Err(e) if e.is_eof() => return Err(truncated(&e)),
        // Not JSON, valid JSON of another shape (serde_json reports some type mismatches,
        // such as a number where a name is expected, as syntax errors), or non-finite
        // numbers written as `null` where a number is expected: read it again as a value,
        // then through the lenient reader, which also says where in the file a mismatch is.
        Err(_) => slow_decode(text)?,
    };
    check(&file)?;
    Ok(file)
}

/// The slow path: the whole document as a value, checked for what it is before decoding.
fn slow_decode(text: &str) -> Result<HostFile, (Problem, String)> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() {
            truncated(&e)
        } else {
            (
                Problem::NotJson,
                format!("is not valid JSON ({e}): not a results.json smtlab wrote"),
            )
        }
    })?;
    let Some(obj) = v.as_object() else {
        return Err((
            Problem::NotResults,
            "is JSON but not an object: not a smtlab results.json".into(),
        ));
    };
    if obj.get("kind").and_then(|k| k.as_str()) == Some(FLEET_KIND) {
        return Err(fleet_file());
    }
    version_problem(obj.get("schema_version"), obj.contains_key("verdict"))?;
    crate::lenient::from_value::<HostFile>(v).map_err(|e| {
        (
            Problem::Incomplete,
            format!("does not match the results.json layout {SCHEMA_VERSION} ({e})"),
        )
    })
}

fn truncated(e: &serde_json::Error) -> (Problem, String) {
    (
        Problem::Truncated,
        format!(
            "ends early (line {}, column {}): it was cut short, by a copy that did not finish or a full disk; copy it again from the host",
            e.line(),
            e.column()
        ),
    )
}

fn fleet_file() -> (Problem, String) {
    (
        Problem::FleetFile,
        "is a fleet.json written by `smtlab merge`, not one host's results.json; merge the hosts' results.json files instead".into(),
    )
}

/// Err when the version is missing (not a results.json) or not this build's.
fn version_problem(
    v: Option<&serde_json::Value>,
    has_verdict: bool,
) -> Result<(), (Problem, String)> {
    let Some(v) = v else {
        return Err((
            Problem::NotResults,
            if has_verdict {
                "has no schema_version: not a results.json smtlab wrote".into()
            } else {
                "is JSON without schema_version or verdict: not a smtlab results.json".into()
            },
        ));
    };
    match v.as_u64() {
        Some(x) if x == u64::from(SCHEMA_VERSION) => Ok(()),
        Some(x) if x < u64::from(SCHEMA_VERSION) => Err((
            Problem::OlderSchema,
            format!(
                "has schema_version {x}, written by an older smtlab; this smtlab reads version {SCHEMA_VERSION}: run the study again with this smtlab"
            ),
        )),
        Some(x) => Err((
            Problem::NewerSchema,
            format!(
                "has schema_version {x}, written by a newer smtlab; this smtlab reads version {SCHEMA_VERSION}: merge with the smtlab that wrote it"
            ),
        )),
        None => Err((
            Problem::NotResults,
            format!("has schema_version {v}, not a number: not a results.json smtlab wrote"),
        )),
    }
}

/// What a decoded file must hold to be merged.
fn check(f: &HostFile) -> Result<(), (Problem, String)> {
    if f.kind.as_deref() == Some(FLEET_KIND) {
        return Err(fleet_file());
    }
    version_problem(f.schema_version.as_ref(), f.verdict.is_some())?;
    let missing: Vec<&str> = [
        ("status", f.status.is_none()),
        ("synthetic", f.synthetic.is_none()),
        ("provenance", f.provenance.is_none()),
        ("machine", f.machine.is_none()),
        ("smt", f.smt.is_none()),
        ("verdict", f.verdict.is_none()),
    ]
    .into_iter()
    .filter(|(_, m)| *m)
    .map(|(n, _)| n)
    .collect();
    if !missing.is_empty() {
        return Err((
            Problem::Incomplete,
            format!(
                "has no `{}`: not a complete results.json (a study writes every section, even when a phase is skipped)",
                missing.join("`, `")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> (Problem, String) {
        decode(text.as_bytes()).unwrap_err()
    }

    #[test]
    fn each_kind_of_bad_file_is_named() {
        assert_eq!(problem("").0, Problem::Empty);
        assert_eq!(problem(" \n").0, Problem::Empty);
        assert_eq!(decode(&[0x7b, 0xff, 0xfe]).unwrap_err().0, Problem::NotText);
        let (p, why) = problem(r#"{"schema_version": 1, "status": "comp"#);
        assert_eq!(p, Problem::Truncated, "{why}");
        assert!(why.contains("cut short"), "{why}");
        assert_eq!(problem("schema_version = 1").0, Problem::NotJson);
        assert_eq!(problem("[1, 2]").0, Problem::NotResults);
        assert_eq!(problem(r#"{"name": "x"}"#).0, Problem::NotResults);
        let (p, why) = problem(r#"{"schema_version": 0, "verdict": {}}"#);
        assert_eq!(p, Problem::OlderSchema);
        assert!(
            why.contains("schema_version 0") && why.contains("older"),
            "{why}"
        );
        let (p, why) = problem(r#"{"schema_version": 7}"#);
        assert_eq!(p, Problem::NewerSchema);
        assert!(why.contains("newer"), "{why}");
        assert_eq!(
            problem(r#"{"kind": "smtlab-fleet", "schema_version": 1}"#).0,
            Problem::FleetFile
        );
        let (p, why) = problem(r#"{"schema_version": 1, "notes": []}"#);
        assert_eq!(p, Problem::Incomplete);
        assert!(
            why.contains("`machine`") && why.contains("`verdict`"),
            "{why}"
        );
        // A newer file whose layout changed is called newer, not malformed.
        assert_eq!(
            problem(r#"{"schema_version": 2, "status": 5, "verdict": []}"#).0,
            Problem::NewerSchema
        );
    }

    #[test]
    fn a_study_report_decodes_and_a_null_ratio_reads_as_nan() {
        use super::super::fixture::{Disturbance, Ratios, report};
        let r = report(0, "h1", Ratios::all(1.25), 0, Disturbance::None);
        let json = r.to_json().unwrap();
        let f = decode(json.as_bytes()).unwrap();
        assert_eq!(f.machine.unwrap().hostname.as_deref(), Some("h1"));
        assert_eq!(f.verdict.unwrap().answers.len(), r.verdict.answers.len());
        // A non-finite estimate is written as null; the lenient path reads it back.
        let mut r2 = r.clone();
        for a in &mut r2.verdict.answers {
            if let Some(e) = &mut a.evidence {
                e.comparison.high = f64::NAN;
            }
        }
        let f2 = decode(r2.to_json().unwrap().as_bytes()).unwrap();
        assert!(
            f2.verdict
                .unwrap()
                .answers
                .iter()
                .filter_map(|a| a.evidence.as_ref())
                .all(|e| e.comparison.high.is_nan())
        );
    }

    #[test]
    fn directories_are_searched_and_one_file_is_read_once() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a");
        std::fs::create_dir_all(a.join("deep")).unwrap();
        std::fs::write(a.join("deep").join(RESULTS_NAME), "{}").unwrap();
        std::fs::write(a.join("other.json"), "{}").unwrap();
        std::fs::create_dir_all(d.path().join("empty")).unwrap();
        let (files, skipped) = expand(&[
            a.clone(),
            a.join("deep").join(RESULTS_NAME),
            d.path().join("empty"),
            d.path().join("nope"),
        ])
        .unwrap();
        assert_eq!(files, vec![a.join("deep").join(RESULTS_NAME)]);
        let problems: Vec<Problem> = skipped.iter().map(|s| s.problem).collect();
        assert_eq!(problems, vec![Problem::NoResults, Problem::Missing]);
    }
}
