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
/// How deep directories are searched: levels below the directory given.
pub const MAX_DEPTH: usize = crate::limits::MAX_MERGE_DEPTH as usize;
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
    /// Set when the file's answers were made by older rules than this build's: whether
    /// they were made again from its stored runs (`recompute_older`), in words.
    #[serde(skip)]
    pub older_rules: Option<String>,
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
                // Studies saved under other names (one `HOST.json` per host) are found only
                // when named: say they are there and how to pass them.
                let mut other: Vec<String> = std::fs::read_dir(a)
                    .map(|rd| {
                        rd.filter_map(|e| e.ok())
                            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .filter(|n| n.ends_with(".json"))
                            .collect()
                    })
                    .unwrap_or_default();
                other.sort();
                let hint = match other.len() {
                    0 => String::new(),
                    n => format!(
                        "; it holds {} ({}{}), which merge reads only when named: `smtlab merge \
                         {}/*.json`",
                        crate::render::count_of(n, "other .json file", "other .json files"),
                        other.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                        if n > 3 { ", …" } else { "" },
                        a.display()
                    ),
                };
                skipped.push(skip(
                    a,
                    Problem::NoResults,
                    format!(
                        "a directory holding no {RESULTS_NAME} (searched {MAX_DEPTH} levels \
                         deep){hint}"
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
    if crate::interrupt::requested() {
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
    let mut listed = Vec::new();
    for e in entries {
        match e {
            Ok(e) => listed.push(e),
            Err(e) => skipped.push(skip(
                dir,
                Problem::Unreadable,
                format!(
                    "cannot be listed whole ({e}): the entries after the error are not searched"
                ),
            )),
        }
    }
    listed.sort_by_key(|e| e.file_name());
    for e in listed {
        let path = e.path();
        let ft = match e.file_type() {
            Ok(ft) => ft,
            Err(err) => {
                skipped.push(skip(
                    &path,
                    Problem::Unreadable,
                    format!("cannot be examined ({err})"),
                ));
                continue;
            }
        };
        if ft.is_dir() {
            if depth >= MAX_DEPTH {
                // Not searched, and said so: a results.json below it is not silently lost.
                skipped.push(skip(
                    &path,
                    Problem::TooDeep,
                    format!(
                        "a directory {} levels below the one given, and merge searches {MAX_DEPTH} levels deep: not searched; give it (or a directory nearer its results.json) as an argument of its own",
                        depth + 1
                    ),
                ));
            } else {
                walk(&path, depth + 1, found, skipped);
            }
        } else if e.file_name() == RESULTS_NAME {
            // Whatever it is (a FIFO, a device, a link to a directory or to nothing), it
            // is read through the one reader, which names what it is and refuses it
            // without blocking.
            found.push(path);
        }
        if found.len() > MAX_FILES {
            return;
        }
    }
}

/// Reads and decodes every file, on up to `threads` threads, in the order given. Once a
/// signal arrives ([`crate::interrupt`]) no further file is started and the whole read is
/// [`crate::interrupt::Interrupted`]: a fleet of the files read so far would be a partial
/// answer written as if whole.
pub fn load_all(
    files: &[PathBuf],
    threads: usize,
) -> Result<Vec<Result<Loaded, Skipped>>, crate::interrupt::Interrupted> {
    let threads = threads.clamp(1, 64).min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<Option<Result<Loaded, Skipped>>> = (0..files.len()).map(|_| None).collect();
    let slots: Vec<std::sync::Mutex<&mut Option<Result<Loaded, Skipped>>>> =
        out.iter_mut().map(std::sync::Mutex::new).collect();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    if crate::interrupt::requested() {
                        break;
                    }
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
    crate::interrupt::check()?;
    Ok(out
        .into_iter()
        .map(|r| r.expect("every file was loaded"))
        .collect())
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
    let mut file = file;
    recompute_older(&mut file, text);
    Ok(file)
}

/// A file whose answers older rules made gets this build's answers, made again from its
/// stored runs (`report::verdict::recompute`), where the whole file reads with this
/// build; otherwise its stored answers stay, flagged. Either way `older_rules` says so.
fn recompute_older(f: &mut HostFile, text: &str) {
    let Some(made) = f.verdict.as_ref().map(|v| v.rules) else {
        return;
    };
    if made >= crate::report::verdict::RULES {
        return;
    }
    let rules = if made == 0 {
        "rules from before they were numbered".to_string()
    } else {
        format!("rules {made}")
    };
    match crate::report::Report::from_json(text) {
        Ok(r) => {
            let (v, changes) = crate::report::verdict::recompute(&r);
            f.older_rules = Some(format!(
                "its answers were made by {rules}; recomputed from its stored runs with this build's rules ({} of {} rows changed)",
                changes.len(),
                v.answers.len()
            ));
            f.verdict = Some(v);
        }
        Err(e) => {
            let why = format!("{e:#}");
            let why: String = why.chars().take(200).collect();
            f.older_rules = Some(format!(
                "its answers were made by {rules} and could not be recomputed (its runs do not read with this build: {why}); its stored answers are used as they are"
            ));
        }
    }
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
    invariants(f, now_unix_s()).map_err(|why| (Problem::Invalid, why))
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The largest ratio (or smallest, inverted) a comparison may hold: a million times
/// faster or slower is no placement's effect, only a corrupt or forged file.
pub const MAX_RATIO: f64 = 1e6;
/// How far a study's start may lie after this merge's clock (clock skew between hosts).
pub const FUTURE_SLACK_S: u64 = 24 * 3600;
/// Relative slack when checking that an estimate lies inside its interval: the three are
/// written as rounded decimals.
const INSIDE_SLACK: f64 = 1e-9;

/// What a study never writes, said in one sentence naming the field, the value and what
/// would be valid; Ok when the file holds none of it. `now` is this merge's clock.
pub fn invariants(f: &HostFile, now: u64) -> Result<(), String> {
    if let Some(m) = &f.machine
        && let Some(h) = &m.hostname
        && h.trim().is_empty()
    {
        return Err(format!(
            "has machine.hostname {h:?}, empty: uname -n never gives an empty name, and hosts without one would merge into one host; fix or remove the field (merge then names the host after its directory)"
        ));
    }
    if let Some(n) = f.slurm.as_ref().and_then(|j| j.node.as_deref())
        && n.trim().is_empty()
    {
        return Err(format!(
            "has slurm.node {n:?}, empty: SLURMD_NODENAME is never empty; fix or remove the field"
        ));
    }
    if let Some(p) = &f.provenance
        && p.started_unix_s > now.saturating_add(FUTURE_SLACK_S)
    {
        return Err(format!(
            "has provenance.started_unix_s {} ({}), more than a day after this merge's clock ({}): a study cannot start in the future, and as the latest study of its host it would displace the real one",
            p.started_unix_s,
            crate::render::cells::utc(p.started_unix_s),
            crate::render::cells::utc(now)
        ));
    }
    for a in f.verdict.iter().flat_map(|v| &v.answers) {
        let Some(e) = &a.evidence else { continue };
        let c = &e.comparison;
        let at = |field: &str| format!("the {} answer's {field}", a.class.label());
        if !(c.confidence > 0.0 && c.confidence < 1.0) {
            return Err(format!(
                "has {} {}: a confidence level lies strictly between 0 and 1 (0.95 is a 95 % interval)",
                at("confidence"),
                crate::render::cells::file_value(c.confidence)
            ));
        }
        if c.n as u64 > crate::limits::MAX_RUNS {
            return Err(format!(
                "has {} {}: more runs than any smtlab phase pairs (at most {})",
                at("n"),
                c.n,
                crate::limits::MAX_RUNS
            ));
        }
        // A bound the study could not compute is written as null (read as NaN); a bound
        // it did compute is a positive, finite ratio.
        for (field, v) in [("estimate", c.estimate), ("low", c.low), ("high", c.high)] {
            if v.is_nan() && field != "estimate" {
                continue;
            }
            if !(v.is_finite() && (1.0 / MAX_RATIO..=MAX_RATIO).contains(&v)) {
                return Err(format!(
                    "has {} {}: a ratio lies between {} and {} (a million times slower or faster)",
                    at(field),
                    crate::render::cells::file_value(v),
                    crate::render::cells::file_value(1.0 / MAX_RATIO),
                    crate::render::cells::file_value(MAX_RATIO)
                ));
            }
        }
        if c.low.is_finite() && c.high.is_finite() {
            let slack = INSIDE_SLACK * c.high.abs().max(1.0);
            if c.low > c.high + slack || c.estimate < c.low - slack || c.estimate > c.high + slack {
                return Err(format!(
                    "has {} {} outside its own interval {}–{}: an interval holds its estimate",
                    at("estimate"),
                    crate::render::cells::file_value(c.estimate),
                    crate::render::cells::file_value(c.low),
                    crate::render::cells::file_value(c.high)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A host from the previous build: its locks-beside-scans row says turn HT off from
    /// the lock thread's loss alone. merge makes its answers again from the stored runs;
    /// a file whose runs this build cannot read keeps its stored answers, flagged.
    #[test]
    fn a_host_of_older_rules_is_recomputed_or_flagged() {
        use crate::report::{HtAnswer, WorkloadClass};
        let old = crate::report::verdict::previous_schema();
        let f = decode(old.as_bytes()).unwrap();
        let row = |f: &HostFile| {
            f.verdict
                .as_ref()
                .unwrap()
                .answers
                .iter()
                .find(|a| a.class == WorkloadClass::LocksBesideScans)
                .unwrap()
                .answer
        };
        assert_ne!(row(&f), HtAnswer::TurnHtOff);
        let why = f.older_rules.as_deref().unwrap();
        assert!(
            why.contains("rules from before they were numbered; recomputed from its stored runs")
                && why.contains("1 of 7 rows changed"),
            "{why}"
        );
        // Runs this build cannot read: the lockscan section without its results.
        let mut v: serde_json::Value = serde_json::from_str(&old).unwrap();
        v["lockscan"]["result"]
            .as_object_mut()
            .unwrap()
            .remove("results");
        let f = decode(v.to_string().as_bytes()).unwrap();
        assert_eq!(row(&f), HtAnswer::TurnHtOff, "kept as stored");
        let why = f.older_rules.as_deref().unwrap();
        assert!(why.contains("could not be recomputed"), "{why}");
        // A file of this build's rules is read as stored, without the flag.
        let cur = crate::study::fixture::smt().to_json().unwrap();
        assert_eq!(decode(cur.as_bytes()).unwrap().older_rules, None);
    }

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

    /// A folder of `HOST.json` studies: refused, saying they are there and how to pass them.
    #[test]
    fn a_directory_of_other_json_files_says_how_to_pass_them() {
        let d = tempfile::tempdir().unwrap();
        for h in ["web1", "web2", "db1", "db2"] {
            std::fs::write(d.path().join(format!("{h}.json")), "{}").unwrap();
        }
        let (files, skipped) = expand(&[d.path().to_path_buf()]).unwrap();
        assert!(files.is_empty());
        let r = &skipped[0].reason;
        assert!(
            r.contains(&format!(
                "; it holds 4 other .json files (db1.json, db2.json, web1.json, …), which merge \
                 reads only when named: `smtlab merge {}/*.json`",
                d.path().display()
            )),
            "{r}"
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

    #[test]
    fn a_results_json_too_deep_and_a_fifo_named_results_json_are_named_not_dropped() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("fleet");
        // 21 levels down: the directory at level 17 is the first not searched.
        let mut deep = root.clone();
        for i in 1..=21 {
            deep.push(format!("l{i}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join(RESULTS_NAME), "{}").unwrap();
        // Level 16 is still searched.
        let mut sixteen = root.clone();
        for i in 1..=MAX_DEPTH {
            sixteen.push(format!("l{i}"));
        }
        std::fs::write(sixteen.join(RESULTS_NAME), "{}").unwrap();
        let fifo_dir = root.join("host-fifo");
        std::fs::create_dir_all(&fifo_dir).unwrap();
        let fifo = fifo_dir.join(RESULTS_NAME);
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (files, skipped) = expand(std::slice::from_ref(&root)).unwrap();
        assert_eq!(files, vec![fifo.clone(), sixteen.join(RESULTS_NAME)]);
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].problem, Problem::TooDeep);
        assert_eq!(skipped[0].path, sixteen.join("l17").display().to_string());
        assert!(
            skipped[0].reason.contains("17 levels below")
                && skipped[0].reason.contains("16 levels deep"),
            "{}",
            skipped[0].reason
        );
        // The FIFO is refused at once by the reader, named with what it is.
        let t0 = std::time::Instant::now();
        let s = load(&fifo).unwrap_err();
        assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(s.problem, Problem::Unreadable);
        assert!(s.reason.contains("it is a FIFO"), "{}", s.reason);
    }

    /// The fixture host's file with `edit` applied, decoded.
    fn decoded_with(
        edit: impl Fn(&mut crate::report::Report),
    ) -> Result<HostFile, (Problem, String)> {
        use super::super::fixture::{Disturbance, Ratios, report};
        let mut r = report(0, "h1", Ratios::all(1.25), 1_700_000_000, Disturbance::None);
        edit(&mut r);
        decode(r.to_json().unwrap().as_bytes())
    }

    fn first_comparison(r: &mut crate::report::Report) -> &mut crate::stats::Comparison {
        &mut r
            .verdict
            .answers
            .iter_mut()
            .find_map(|a| a.evidence.as_mut())
            .unwrap()
            .comparison
    }

    #[test]
    fn values_no_study_writes_are_refused_per_file_naming_the_value() {
        let refused = |edit: &dyn Fn(&mut crate::report::Report), says: &str| {
            let (p, why) = decoded_with(edit).unwrap_err();
            assert_eq!(p, Problem::Invalid, "{why}");
            assert!(why.contains(says), "want {says:?} in: {why}");
            assert!(why.len() < 400, "one sentence: {why}");
        };
        // 50×, 95 % CI 1.18–1.44.
        refused(
            &|r| {
                let c = first_comparison(r);
                (c.estimate, c.low, c.high) = (50.0, 1.18, 1.44);
            },
            "estimate 50 outside its own interval 1.18–1.44",
        );
        refused(
            &|r| first_comparison(r).n = usize::MAX,
            "n 18446744073709551615",
        );
        refused(&|r| first_comparison(r).confidence = 5.0, "confidence 5:");
        refused(&|r| first_comparison(r).confidence = -1.0, "confidence -1:");
        // null in the file (serde writes NaN as null).
        refused(
            &|r| first_comparison(r).confidence = f64::NAN,
            "confidence null (not a number)",
        );
        refused(&|r| first_comparison(r).high = 1e308, "high 1e308:");
        refused(&|r| first_comparison(r).low = 0.0, "low 0:");
        refused(
            &|r| r.machine.hostname = Some(String::new()),
            "machine.hostname \"\", empty",
        );
        refused(
            &|r| r.provenance.started_unix_s = 4_000_000_000,
            "provenance.started_unix_s 4000000000",
        );
        // What a study writes passes, a bound it could not compute (null) too.
        assert!(decoded_with(|_| {}).is_ok());
        assert!(decoded_with(|r| first_comparison(r).high = f64::NAN).is_ok());
    }
}
