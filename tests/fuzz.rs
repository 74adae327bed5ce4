//! Property tests for every parser of user or file input: CPU lists and masks, durations,
//! byte sizes, database URLs and the password file, sysfs/procfs trees, `/proc/stat` and
//! per-thread stat lines, the SMT journal and the paths a hugetlb journal may name,
//! `results.json`; and the Markdown escaping every field goes through.
//!
//! Each parser is checked by one property, run twice:
//! - in the normal `cargo test`, with a few hundred cases (the file takes seconds);
//! - in an ignored long run, `SMTLAB_FUZZ_CASES` cases (default 1,000,000) per parser,
//!   sysfs trees read from memory and 1 in [`ON_DISK_SHARE`] of that count written to disk:
//!   `cargo test --release --test fuzz -- --ignored --nocapture`.
//!
//! What every property asserts: the parser returns (no panic, no hang: a case running longer
//! than [`HANG`] aborts the run and prints its input), an error names the bad input, a
//! value printed by smtlab parses back to itself, and where a simple oracle exists (a naive
//! range expansion, the bits of a number) the parser agrees with it. A failing case is
//! shrunk by proptest to a minimal input and printed.

use proptest::prelude::*;
use proptest::string::string_regex;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;
use smtlab::cpuset::{CpuSet, MAX_CPUS};
use smtlab::duration::{format_duration, parse_duration, parse_duration_or_zero, parse_measured};
use smtlab::oltp::secret::{Endpoint, match_passfile, read_password_file};
use smtlab::oltp::{DbTarget, redact};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

// ------------------------------------------------------------------ harness

/// Cases per parser in the long runs, unless `SMTLAB_FUZZ_CASES` says otherwise.
const LONG_CASES: u32 = 1_000_000;
/// A case still running after this long is a hang: its input is printed and the run aborts
/// (proptest alone would wait forever). Far above any parser's slowest case, even in a
/// debug build on a loaded machine.
const HANG: Duration = Duration::from_secs(60);
/// How often a long run prints how far it got.
const PROGRESS: Duration = Duration::from_secs(300);

fn long_cases() -> u32 {
    match std::env::var("SMTLAB_FUZZ_CASES") {
        Ok(v) => v
            .trim()
            .replace(['_', ','], "")
            .parse()
            .unwrap_or_else(|_| {
                panic!("SMTLAB_FUZZ_CASES={v}: expected a number of cases like 1000000")
            }),
        Err(_) => LONG_CASES,
    }
}

/// The case being run, for the watchdog: when it started and its input.
type Current = Arc<Mutex<Option<(Instant, String)>>>;

/// Aborts the process, naming the input, when one case runs longer than [`HANG`].
struct Watchdog {
    current: Current,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(name: &'static str) -> Self {
        let current: Current = Arc::default();
        let done = Arc::new(AtomicBool::new(false));
        let (c, d) = (current.clone(), done.clone());
        let thread = std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if let Some((t, input)) = &*c.lock().unwrap_or_else(|e| e.into_inner())
                    && t.elapsed() > HANG
                {
                    eprintln!(
                        "fuzz {name}: HANG: one case has run for {:.0?}; its input:\n{input}",
                        t.elapsed()
                    );
                    std::process::abort();
                }
            }
        });
        Watchdog {
            current,
            done,
            thread: Some(thread),
        }
    }

    fn set(&self, v: Option<(Instant, String)>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = v;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs `check` on `cases` inputs drawn from `strategy`, then prints one line: cases, time,
/// and the slowest case with its input. A panic or a failed check fails the test with
/// proptest's minimal failing input.
fn fuzz<S>(
    name: &'static str,
    cases: u32,
    strategy: S,
    check: impl Fn(&S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let watchdog = Watchdog::start(name);
    let ran = Cell::new(0u64);
    // The slowest case by wall time, and the one that took most CPU time: on a loaded
    // machine the first includes time spent descheduled; the second is the parser's own
    // cost (plus other tests' when they run in parallel: `--test-threads 1` isolates it).
    let slowest = RefCell::new(Slowest::default());
    let most_cpu = RefCell::new(Slowest::default());
    let t0 = Instant::now();
    let last_note = Cell::new(t0);
    let result = runner.run(&strategy, |v| {
        let input = format!("{v:?}");
        let (start, cpu0) = (Instant::now(), process_cpu());
        watchdog.set(Some((start, input)));
        let r = check(&v);
        let (wall, cpu) = (start.elapsed(), process_cpu().saturating_sub(cpu0));
        if let Some((_, input)) = self::take(&watchdog) {
            if wall > slowest.borrow().wall {
                *slowest.borrow_mut() = Slowest {
                    wall,
                    cpu,
                    input: input.clone(),
                };
            }
            if cpu > most_cpu.borrow().cpu {
                *most_cpu.borrow_mut() = Slowest { wall, cpu, input };
            }
        }
        ran.set(ran.get() + 1);
        // Progress for long runs, so that a run cut short still says how far it got.
        if last_note.get().elapsed() > PROGRESS {
            last_note.set(Instant::now());
            eprintln!(
                "fuzz {name}: {} of {cases} cases, {:.0} s, slowest so far {:.3} ms ({:.3} ms CPU)",
                ran.get(),
                t0.elapsed().as_secs_f64(),
                slowest.borrow().wall.as_secs_f64() * 1e3,
                most_cpu.borrow().cpu.as_secs_f64() * 1e3,
            );
        }
        r
    });
    drop(watchdog);
    eprintln!(
        "fuzz {name}: {} cases in {:.1} s, 0 hangs; slowest case {}; most CPU {}",
        ran.get(),
        t0.elapsed().as_secs_f64(),
        slowest.into_inner(),
        most_cpu.into_inner(),
    );
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

/// One case's times and input, for the summary line.
#[derive(Default)]
struct Slowest {
    wall: Duration,
    cpu: Duration,
    input: String,
}

impl std::fmt::Display for Slowest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: String = self.input.chars().take(120).collect();
        let more = if self.input.chars().count() > 120 {
            "…"
        } else {
            ""
        };
        write!(
            f,
            "{:.3} ms wall, {:.3} ms CPU: {shown}{more}",
            self.wall.as_secs_f64() * 1e3,
            self.cpu.as_secs_f64() * 1e3
        )
    }
}

/// CPU time of this process so far (every thread: discovery reads with its own).
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn take(w: &Watchdog) -> Option<(Instant, String)> {
    w.current.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Where test files are written: tmpfs when there is one (a sysfs case writes about 200
/// files).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("smtlab-fuzz-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

fn regex(pattern: &str) -> BoxedStrategy<String> {
    string_regex(pattern)
        .unwrap_or_else(|e| panic!("bad pattern {pattern}: {e}"))
        .boxed()
}

/// Text no parser should choke on: arbitrary Unicode and bytes (NUL, control characters,
/// invalid UTF-8 replaced), the parser's own alphabet (`class`, a regex character class),
/// numbers past u32, u64 and u128, and long repetitions.
fn garbage(class: &str) -> BoxedStrategy<String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(any::<u8>(), 0..48)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        regex(&format!("[{class}]{{0,40}}")),
        regex("[ \t\n]{0,3}[0-9]{9,45}[ \t\n]{0,3}"),
        (regex(&format!("[{class}]{{1,8}}")), 1usize..600).prop_map(|(s, n)| s.repeat(n)),
    ]
    .boxed()
}

/// The `problem` part of an error quotes (in backticks) something from `token`.
fn names_token(message: &str, token: &str) -> bool {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .any(|q| !q.is_empty() && token.contains(q.trim()) && !q.trim().is_empty())
}

// ------------------------------------------------------------------ CPU lists

/// One element of a CPU list.
#[derive(Debug, Clone)]
enum Tok {
    One(u32),
    Range(u32, u32),
    Stride(u32, u32, u32),
}

impl Tok {
    fn text(&self) -> String {
        match *self {
            Tok::One(c) => c.to_string(),
            Tok::Range(a, b) => format!("{a}-{b}"),
            Tok::Stride(a, b, s) => format!("{a}-{b}:{s}"),
        }
    }

    fn expand(&self, into: &mut BTreeSet<u32>) {
        match *self {
            Tok::One(c) => {
                into.insert(c);
            }
            Tok::Range(a, b) => into.extend(a..=b),
            Tok::Stride(a, b, s) => into.extend((a..=b).step_by(s as usize)),
        }
    }
}

fn cpu() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..300, 1 => 0..MAX_CPUS, 1 => MAX_CPUS - 70..MAX_CPUS]
}

fn tok() -> impl Strategy<Value = Tok> {
    prop_oneof![
        cpu().prop_map(Tok::One),
        (cpu(), 0u32..200).prop_map(|(a, n)| Tok::Range(a, a.saturating_add(n).min(MAX_CPUS - 1))),
        (cpu(), 0u32..400, 1u32..70).prop_map(|(a, n, s)| Tok::Stride(
            a,
            a.saturating_add(n).min(MAX_CPUS - 1),
            s
        )),
    ]
}

/// Separators as people type them: `,` with optional spaces around the token.
fn join_tokens(toks: &[String], spaces: &[bool]) -> String {
    toks.iter()
        .enumerate()
        .map(|(i, t)| {
            if spaces.get(i).copied().unwrap_or(false) {
                format!(" {t} ")
            } else {
                t.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A well-formed list and the set a naive expansion gives.
fn list_case() -> impl Strategy<Value = (String, BTreeSet<u32>)> {
    (
        prop::collection::vec(tok(), 0..12),
        prop::collection::vec(any::<bool>(), 12),
        prop::sample::select(vec!["", "\n", " ", "\t\n"]),
    )
        .prop_map(|(toks, spaces, end)| {
            let mut set = BTreeSet::new();
            toks.iter().for_each(|t| t.expand(&mut set));
            let texts: Vec<String> = toks.iter().map(Tok::text).collect();
            (format!("{}{end}", join_tokens(&texts, &spaces)), set)
        })
}

/// A token that is not a valid list element.
fn bad_token() -> impl Strategy<Value = String> {
    prop_oneof![
        regex("[a-zA-Z!#$%&*+./;<=>?@_~]{1,4}"),
        regex("[1-9][0-9]{5,30}"),
        regex("[0-9]{1,3}-"),
        regex("-[0-9]{1,3}"),
        regex("[0-9]{1,3}:[2-9]"),
        regex("[0-9]{1,3}-[0-9]{1,3}:0"),
        regex("[0-9]{1,3}-[0-9]{1,3}:[a-z]{1,2}"),
        regex("[0-9]{1,2}\\.[0-9]"),
        regex("[0-9]{1,2}-[0-9]{1,2}-[0-9]{1,2}"),
        regex("[0-9]{1,3}-[1-9][0-9]{5,12}"),
        (200u32..1000, 0u32..199).prop_map(|(a, b)| format!("{a}-{b}")),
        Just(String::new()),
    ]
}

/// A list with one bad token among good ones.
fn bad_list_case() -> impl Strategy<Value = (String, String)> {
    (
        prop::collection::vec(tok(), 0..5),
        bad_token(),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(toks, bad, at)| {
            let mut texts: Vec<String> = toks.iter().map(Tok::text).collect();
            let i = at.index(texts.len() + 1);
            texts.insert(i, bad.clone());
            (texts.join(","), bad)
        })
}

/// Any set of CPUs up to [`MAX_CPUS`], dense runs included.
fn arb_set() -> impl Strategy<Value = CpuSet> {
    (
        prop::collection::vec(cpu(), 0..40),
        prop::collection::vec((cpu(), 0u32..300), 0..3),
    )
        .prop_map(|(cpus, runs)| {
            let mut s = CpuSet::from_cpus(cpus);
            for (a, n) in runs {
                for c in a..a.saturating_add(n).min(MAX_CPUS) {
                    s.insert(c);
                }
            }
            s
        })
}

const LIST_CLASS: &str = "0-9,:\\- \t\nxX";

#[derive(Debug, Clone)]
enum ListCase {
    Garbage(String),
    Valid(String, BTreeSet<u32>),
    Bad(String, String),
    RoundTrip(CpuSet),
}

fn list_cases() -> impl Strategy<Value = ListCase> {
    prop_oneof![
        garbage(LIST_CLASS).prop_map(ListCase::Garbage),
        list_case().prop_map(|(t, s)| ListCase::Valid(t, s)),
        bad_list_case().prop_map(|(t, b)| ListCase::Bad(t, b)),
        arb_set().prop_map(ListCase::RoundTrip),
    ]
}

fn check_list(case: &ListCase) -> Result<(), TestCaseError> {
    match case {
        ListCase::Garbage(t) => {
            for r in [CpuSet::parse_list(t), CpuSet::parse_user(t), t.parse()] {
                if let Err(e) = r {
                    prop_assert_eq!(&e.input, t);
                    // Messages quote the value once, control characters escaped and long
                    // values shortened to their start.
                    let msg = e.to_string();
                    let escaped = smtlab::quote::shorten(t);
                    let start: String = escaped.chars().take(40).collect();
                    prop_assert!(
                        msg.contains(t.as_str()) || msg.contains(start.as_str()),
                        "{} not named in {}",
                        escaped,
                        msg
                    );
                }
            }
        }
        ListCase::Valid(t, want) => {
            let got = CpuSet::parse_list(t).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(got.to_vec(), want.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(CpuSet::parse_user(t).ok(), Some(got));
        }
        ListCase::Bad(t, bad) => {
            if t.trim().is_empty() {
                return Ok(());
            }
            let e = match CpuSet::parse_list(t) {
                Ok(s) => return Err(TestCaseError::fail(format!("`{t}` parsed as {s:?}"))),
                Err(e) => e,
            };
            prop_assert_eq!(&e.input, t);
            if bad.is_empty() {
                prop_assert!(e.problem.contains("empty element"), "{}", e);
            } else {
                prop_assert!(names_token(&e.problem, bad), "`{}` not named: {}", bad, e);
            }
        }
        ListCase::RoundTrip(s) => {
            prop_assert_eq!(&CpuSet::parse_list(&s.to_list()).unwrap(), s);
            prop_assert_eq!(s.to_list(), s.to_string());
            prop_assert_eq!(&CpuSet::from_words(s.as_words().to_vec()), s);
        }
    }
    Ok(())
}

#[test]
fn cpu_lists() {
    fuzz("cpu-lists", 512, list_cases(), check_list);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_cpu_lists() {
    fuzz("cpu-lists", long_cases(), list_cases(), check_list);
}

/// The longest lists a user can type (an argument is at most 128 KiB on Linux): every
/// range covering all CPUs. Parsing must stay quick (no per-CPU work per token).
#[test]
fn long_full_range_lists_parse() {
    let t = vec!["0-65535"; 16_000].join(",");
    let s = CpuSet::parse_list(&t).unwrap();
    assert_eq!(s.len(), MAX_CPUS as usize);
    let t = vec!["1-65535:2"; 12_000].join(",");
    assert_eq!(CpuSet::parse_list(&t).unwrap().len(), MAX_CPUS as usize / 2);
}

// ------------------------------------------------------------------ masks

#[derive(Debug, Clone)]
enum MaskCase {
    Garbage(String),
    /// `0x` + one hex number: 64-bit words (least significant first), leading zeros,
    /// upper case, surrounding whitespace.
    Hex(Vec<u64>, usize, bool, bool),
    /// hwloc's `0x…,0x…` 32-bit words, most significant first; the bool per word writes a
    /// zero word as an empty block or without its `0x`.
    Hwloc(Vec<(u32, bool)>),
    /// sysfs words, most significant first, each padded to 8 digits or not.
    Sysfs(Vec<u32>, bool),
    Decimal(u128),
    RoundTrip(CpuSet, usize),
}

fn mask_cases() -> impl Strategy<Value = MaskCase> {
    let word64 = prop_oneof![any::<u64>(), Just(0u64), Just(u64::MAX), 0u64..256];
    let word32 = prop_oneof![any::<u32>(), Just(0u32), Just(u32::MAX)];
    prop_oneof![
        garbage("0-9a-fA-FxX,\\- \t\n").prop_map(MaskCase::Garbage),
        // Around the widest mask accepted (16,384 hex digits = MAX_CPUS).
        (16_370usize..16_400, regex("[0-9a-fA-F]"), 0usize..20_000).prop_map(|(n, d, zeros)| {
            MaskCase::Garbage(format!("0x{}{}", "0".repeat(zeros), d.repeat(n)))
        }),
        (
            prop::collection::vec(word64, 0..6),
            0usize..30,
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(w, z, u, s)| MaskCase::Hex(w, z, u, s)),
        prop::collection::vec((word32.clone(), any::<bool>()), 2..8).prop_map(MaskCase::Hwloc),
        (prop::collection::vec(word32, 1..10), any::<bool>())
            .prop_map(|(w, p)| MaskCase::Sysfs(w, p)),
        prop_oneof![any::<u128>(), 1u128..1024].prop_map(MaskCase::Decimal),
        (arb_set(), 0usize..80).prop_map(|(s, p)| MaskCase::RoundTrip(s, p)),
    ]
}

/// The set whose bits are the 32-bit `words`, most significant first.
fn set_of_words32(words: &[u32]) -> CpuSet {
    let mut s = CpuSet::new();
    for (i, w) in words.iter().rev().enumerate() {
        for b in 0..32 {
            if w >> b & 1 == 1 {
                s.insert(i as u32 * 32 + b);
            }
        }
    }
    s
}

fn check_mask(case: &MaskCase) -> Result<(), TestCaseError> {
    let ok = |r: Result<CpuSet, smtlab::cpuset::CpuSetError>| {
        r.map_err(|e| TestCaseError::fail(e.to_string()))
    };
    match case {
        MaskCase::Garbage(t) => {
            for r in [
                CpuSet::parse_user(t),
                CpuSet::parse_mask(t),
                CpuSet::parse_sysfs_mask(t),
            ] {
                if let Err(e) = r {
                    prop_assert_eq!(&e.input, t);
                }
            }
        }
        MaskCase::Hex(words, zeros, upper, space) => {
            let mut digits: String = words.iter().rev().map(|w| format!("{w:016x}")).collect();
            digits.insert_str(0, &"0".repeat(*zeros));
            if digits.is_empty() {
                digits.push('0');
            }
            let mut t = format!("0x{digits}");
            if *upper {
                t = t.to_uppercase();
            }
            if *space {
                t = format!(" {t}\n");
            }
            let want = CpuSet::from_words(words.clone());
            prop_assert_eq!(&ok(CpuSet::parse_user(&t))?, &want);
            prop_assert_eq!(&ok(CpuSet::parse_mask(&t))?, &want);
        }
        MaskCase::Hwloc(words) => {
            let t = words
                .iter()
                .enumerate()
                .map(|(i, &(w, alt))| match (w, alt, i) {
                    (_, _, 0) => format!("0x{w:x}"),
                    (0, true, _) => String::new(),
                    (_, true, _) => format!("{w:X}"),
                    _ => format!("0x{w:08x}"),
                })
                .collect::<Vec<_>>()
                .join(",");
            let plain: Vec<u32> = words.iter().map(|w| w.0).collect();
            prop_assert_eq!(ok(CpuSet::parse_user(&t))?, set_of_words32(&plain));
        }
        MaskCase::Sysfs(words, padded) => {
            let t = words
                .iter()
                .map(|w| {
                    if *padded {
                        format!("{w:08x}")
                    } else {
                        format!("{w:x}")
                    }
                })
                .collect::<Vec<_>>()
                .join(",");
            prop_assert_eq!(ok(CpuSet::parse_sysfs_mask(&t))?, set_of_words32(words));
            // Padded words are the sysfs form in user input too (`--cpus 00000000,00000001`).
            if *padded {
                prop_assert_eq!(ok(CpuSet::parse_user(&t))?, set_of_words32(words));
            }
        }
        MaskCase::Decimal(v) => {
            let r = CpuSet::parse_mask(&v.to_string());
            if *v == 0 {
                prop_assert!(r.is_err());
            } else {
                let want = CpuSet::from_cpus((0..128).filter(|b| v >> b & 1 == 1));
                prop_assert_eq!(ok(r)?, want);
            }
            let e = CpuSet::parse_mask(&format!("{v}0000")).err();
            if let Some(e) = e.filter(|_| v.checked_mul(10_000).is_none()) {
                prop_assert!(e.problem.contains("128-CPU"), "{}", e);
            }
        }
        MaskCase::RoundTrip(s, pad) => {
            prop_assert_eq!(&ok(CpuSet::parse_user(&s.to_hex_mask()))?, s);
            if !s.is_empty() {
                prop_assert_eq!(&ok(CpuSet::parse_mask(&s.to_hex_mask()))?, s);
            }
            prop_assert_eq!(&ok(CpuSet::parse_sysfs_mask(&s.to_sysfs_mask(*pad)))?, s);
            prop_assert_eq!(&ok(CpuSet::parse_user(&s.to_sysfs_mask(*pad)))?, s);
        }
    }
    Ok(())
}

#[test]
fn cpu_masks() {
    fuzz("cpu-masks", 512, mask_cases(), check_mask);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_cpu_masks() {
    fuzz("cpu-masks", long_cases(), mask_cases(), check_mask);
}

// ------------------------------------------------------------------ durations

const YEAR_NS: u128 = 366 * 86_400 * 1_000_000_000;

const UNITS: &[(&str, u128)] = &[
    ("", 1_000_000_000),
    ("s", 1_000_000_000),
    ("sec", 1_000_000_000),
    ("secs", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("ns", 1),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

#[derive(Debug, Clone)]
enum DurationCase {
    Garbage(String),
    /// An integer with a unit (index into [`UNITS`]) and an optional space.
    Int(u64, usize, bool),
    /// `int.frac` with a unit.
    Frac(u32, String, usize),
    RoundTrip(u64),
}

fn duration_cases() -> impl Strategy<Value = DurationCase> {
    prop_oneof![
        garbage("0-9.a-zµ \t-").prop_map(DurationCase::Garbage),
        regex("[0-9]{0,400}\\.?[0-9]{0,400}(ns|us|ms|s|m|h|)").prop_map(DurationCase::Garbage),
        (
            prop_oneof![0u64..100_000, any::<u64>(), 31_000_000u64..32_000_000],
            0..UNITS.len(),
            any::<bool>()
        )
            .prop_map(|(n, u, s)| DurationCase::Int(n, u, s)),
        (
            prop_oneof![Just(0u32), 0u32..100_000],
            regex("0{0,12}[0-9]{1,12}"),
            0..UNITS.len()
        )
            .prop_map(|(i, f, u)| DurationCase::Frac(i, f, u)),
        (1u64..=YEAR_NS as u64).prop_map(DurationCase::RoundTrip),
    ]
}

fn check_duration(case: &DurationCase) -> Result<(), TestCaseError> {
    match case {
        DurationCase::Garbage(t) => {
            let r = parse_duration(t);
            if let Err(e) = &r {
                prop_assert_eq!(&e.input, t);
                prop_assert!(e.to_string().contains("500ms"));
            }
            if let Ok(d) = r {
                prop_assert!(d > Duration::ZERO && d.as_nanos() <= YEAR_NS);
                prop_assert_eq!(parse_duration_or_zero(t).ok(), Some(d));
            }
            let _ = parse_duration_or_zero(t);
            if let Err(e) = parse_measured(t, "--duration") {
                prop_assert!(e.0.starts_with("--duration"), "{}", e.0);
            }
        }
        DurationCase::Int(n, u, space) => {
            let (unit, per) = UNITS[*u];
            let t = format!("{n}{}{unit}", if *space { " " } else { "" });
            let want = u128::from(*n) * per;
            match parse_duration(&t) {
                Ok(d) => prop_assert_eq!(d.as_nanos(), want, "{}", t),
                Err(e) => prop_assert!(
                    want == 0 || want > YEAR_NS - 1_000_000_000,
                    "{} refused: {}",
                    t,
                    e
                ),
            }
        }
        DurationCase::Frac(i, f, u) => {
            let (unit, per) = UNITS[*u];
            let t = format!("{i}.{f}{unit}");
            let want = (format!("{i}.{f}").parse::<f64>().unwrap() * per as f64) as u128;
            match parse_duration(&t) {
                Ok(d) => {
                    prop_assert!(d > Duration::ZERO, "{} read as zero", t);
                    let diff = d.as_nanos().abs_diff(want);
                    prop_assert!(diff <= 1 + want / 1_000_000_000, "{} read as {:?}", t, d);
                }
                Err(e) => prop_assert!(
                    want == 0 || want > YEAR_NS - 1_000_000_000,
                    "{} refused: {}",
                    t,
                    e
                ),
            }
        }
        DurationCase::RoundTrip(ns) => {
            let d = Duration::from_nanos(*ns);
            prop_assert_eq!(parse_duration(&format_duration(d)).ok(), Some(d));
        }
    }
    Ok(())
}

#[test]
fn durations() {
    fuzz("durations", 512, duration_cases(), check_duration);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_durations() {
    fuzz("durations", long_cases(), duration_cases(), check_duration);
}

// ------------------------------------------------------------------ byte sizes

const SIZE_SUFFIXES: &[(&str, u128)] = &[
    ("", 1),
    ("b", 1),
    ("k", 1 << 10),
    ("kib", 1 << 10),
    ("m", 1 << 20),
    ("mib", 1 << 20),
    ("g", 1 << 30),
    ("gib", 1 << 30),
];

#[derive(Debug, Clone)]
enum SizeCase {
    Garbage(String),
    /// A number, a suffix (index into [`SIZE_SUFFIXES`]), upper case, a space before it.
    Sized(u64, usize, bool, bool),
}

fn size_cases() -> impl Strategy<Value = SizeCase> {
    prop_oneof![
        garbage("0-9a-zA-Z +\\-.").prop_map(SizeCase::Garbage),
        (
            prop_oneof![0u64..5000, any::<u64>(), (1u64 << 34) - 4..(1 << 34) + 4],
            0..SIZE_SUFFIXES.len(),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(n, s, u, sp)| SizeCase::Sized(n, s, u, sp)),
    ]
}

fn check_size(case: &SizeCase) -> Result<(), TestCaseError> {
    match case {
        SizeCase::Garbage(t) => {
            if let Err(e) = smtlab::cli::parse_bytes(t) {
                prop_assert!(e.contains(t.trim()), "{}", e);
            }
        }
        SizeCase::Sized(n, s, upper, space) => {
            let (suffix, mult) = SIZE_SUFFIXES[*s];
            let suffix = if *upper {
                suffix.to_uppercase()
            } else {
                suffix.to_string()
            };
            let t = format!("{n}{}{suffix}", if *space { " " } else { "" });
            let want = u128::from(*n) * mult;
            match smtlab::cli::parse_bytes(&t) {
                Ok(b) => prop_assert_eq!(b as u128, want, "{}", t),
                Err(e) => {
                    // Zero bytes is refused too: a scan buffer needs at least one.
                    prop_assert!(
                        want == 0 || want > usize::MAX as u128,
                        "{} refused: {}",
                        t,
                        e
                    );
                    // The parser trims the value before quoting it (`0 ` is quoted `0`).
                    prop_assert!(e.contains(t.trim()), "{}", e);
                }
            }
        }
    }
    Ok(())
}

#[test]
fn byte_sizes() {
    fuzz("sizes", 512, size_cases(), check_size);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_byte_sizes() {
    fuzz("sizes", long_cases(), size_cases(), check_size);
}

// ------------------------------------------------------------------ other named values

/// Every other option value parsed from text: placements, layouts, scopes, lock, scheme,
/// burner and schema names. None may panic; each refusal says something.
fn check_names(t: &str) -> Result<(), TestCaseError> {
    use smtlab::placement::{Request, Scope};
    fn said<E: std::fmt::Display>(r: Result<impl Sized, E>) -> Result<(), TestCaseError> {
        if let Err(e) = r {
            prop_assert!(!e.to_string().trim().is_empty());
        }
        Ok(())
    }
    said(Request::parse(t))?;
    said(smtlab::oltp::parse_layouts(t))?;
    said(t.parse::<Scope>())?;
    said(t.parse::<smtlab::locks::LockKind>())?;
    said(t.parse::<smtlab::locks::StatsMode>())?;
    said(t.parse::<smtlab::rwcache::SchemeKind>())?;
    said(t.parse::<smtlab::burn::Policy>())?;
    said(t.parse::<smtlab::burn::Mode>())?;
    said(t.parse::<smtlab::burn::BurnerKind>())?;
    said(t.parse::<smtlab::experiments::neighbors::BurnerPlacement>())?;
    said(smtlab::oltp::Schema::parse(t))?;
    said(smtlab::oltp::KeyMode::parse(t))?;
    said(smtlab::oltp::Durability::parse(t))?;
    Ok(())
}

fn name_cases() -> impl Strategy<Value = String> {
    prop_oneof![
        garbage("a-z0-9,:=\\- "),
        regex(
            "(one-per-core|pairs|all|spread|same-core|same-l3|other-l3|other-package|os|\
             siblings-of|cpus|tas|ttas|mcs|fifo|rr|thread|process)[:= ,]?[0-9a-fx,:\\- ]{0,20}"
        ),
    ]
}

#[test]
fn option_names() {
    fuzz("names", 512, name_cases(), |t| check_names(t));
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_option_names() {
    fuzz("names", long_cases(), name_cases(), |t| check_names(t));
}

// ------------------------------------------------------------------ database URLs

/// A connection string holding `password` somewhere, or garbage (password empty).
#[derive(Debug, Clone)]
struct UrlCase {
    text: String,
    password: String,
}

fn password() -> impl Strategy<Value = String> {
    // Upper case and digits only, after a `PW` no other part of the string uses: a
    // password cannot appear in an output by coincidence.
    regex("PW[0-9A-Z]{4,10}((%40|@|:|%2F|/|\\?|#|&|;|=|~|\\$)[0-9A-Z]{1,4})?")
}

fn url_cases() -> impl Strategy<Value = UrlCase> {
    let scheme = prop::sample::select(vec!["postgres://", "postgresql://", "postgres:/", ""]);
    let user = regex("[a-z_]{0,8}");
    let host = prop_oneof![
        regex("[a-z]{1,10}(\\.[a-z]{2,3})?"),
        Just("127.0.0.1".to_string()),
        Just("[::1]".to_string()),
        Just("%2Ftmp".to_string()),
        Just(String::new()),
        regex("[a-z]{1,4},[a-z]{1,4}"),
    ];
    let port = prop_oneof![
        Just(String::new()),
        (0u32..100_000).prop_map(|p| format!(":{p}")),
        regex(":[a-z0-9]{0,6}"),
    ];
    let db = regex("(/[a-z_]{0,8})?");
    let param = prop_oneof![
        regex("sslmode=(disable|prefer|require|bogus)"),
        regex("connect_timeout=(-?[0-9]{1,12}|[a-z]{1,3})"),
        regex("application_name=[a-z]{0,6}"),
        regex("[a-z]{1,8}=[a-z0-9]{0,4}"),
        Just("password=".to_string()),
    ];
    let url = (
        scheme,
        user.clone(),
        password(),
        0u8..4,
        host.clone(),
        port,
        db,
        prop::collection::vec(param, 0..3),
    )
        .prop_map(|(scheme, user, pw, place, host, port, db, params)| {
            let userinfo = match place {
                0 => format!("{user}:{pw}@"),
                1 => format!("{user}@"),
                2 => String::new(),
                _ => format!(":{pw}@"),
            };
            let mut params = params;
            if place == 1 || place == 2 {
                params.push(format!("password={pw}"));
            }
            let query = if params.is_empty() {
                String::new()
            } else {
                format!("?{}", params.join("&"))
            };
            UrlCase {
                text: format!("{scheme}{userinfo}{host}{port}{db}{query}"),
                // `postgres:/` is not a URL (no driver reads one): it is refused as an
                // unknown database, and echoed with whatever it holds.
                password: if scheme.contains("://") {
                    pw
                } else {
                    String::new()
                },
            }
        });
    let quoted = regex("PW[0-9A-Z]{2}( |\\\\'|=)[0-9A-Z]{2}");
    let keyword = (
        prop_oneof![host, Just("/run/postgresql".to_string())],
        user,
        password(),
        quoted,
        0u8..4,
        prop::sample::select(vec!["=", " = ", "= ", " ="]),
    )
        .prop_map(|(host, user, pw, qpw, form, eq)| {
            let (pwtext, pw) = match form {
                0 => (pw.clone(), pw),
                1 => (format!("'{qpw}'"), qpw.replace("\\'", "'")),
                2 => (format!("'{pw}'"), pw),
                _ => (pw.clone(), pw),
            };
            let kw = if form == 3 { "PASSWORD" } else { "password" };
            UrlCase {
                text: format!("host={host} user={user} {kw}{eq}{pwtext} dbname=x"),
                password: pw,
            }
        });
    prop_oneof![
        2 => url,
        1 => keyword,
        1 => garbage("a-z0-9:/@?&=%.\\[\\]' ").prop_map(|t| UrlCase { text: t, password: String::new() }),
        1 => regex("(postgres://|sqlite:|host=)[ -~]{0,40}").prop_map(|t| UrlCase { text: t, password: String::new() }),
    ]
}

fn check_url(case: &UrlCase) -> Result<(), TestCaseError> {
    let UrlCase { text, password } = case;
    let leaks = |s: &str| {
        // The password as typed, or its value once percent-decoding turned `%40` into `@`.
        !password.is_empty()
            && (s.contains(password.as_str()) || s.contains(&password.replace("%40", "@")))
    };
    let redacted = redact(text);
    prop_assert!(!leaks(&redacted), "redact kept the password: {}", redacted);
    match DbTarget::parse(text) {
        Ok(t) => {
            let shown = t.to_string();
            prop_assert!(!leaks(&shown), "shown as {}", shown);
            let debug = format!("{t:?}");
            prop_assert!(!leaks(&debug), "debug shows the password: {}", debug);
        }
        Err(e) => {
            prop_assert!(!leaks(&e.0), "error shows the password: {}", e.0);
            // The message names the value (shortened messages keep its start).
            let start: String = redact(text.trim()).chars().take(12).collect();
            // A bad parameter is named by itself (`connect_timeout 2150000000: …`).
            prop_assert!(
                e.0.contains(&start) || e.0.contains("connect_timeout"),
                "{} not named in: {}",
                start,
                e.0
            );
        }
    }
    Ok(())
}

#[test]
fn database_urls() {
    fuzz("db-urls", 512, url_cases(), check_url);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_database_urls() {
    fuzz("db-urls", long_cases(), url_cases(), check_url);
}

// ------------------------------------------------------------------ password file

#[derive(Debug, Clone)]
struct PassCase {
    ep: (String, u16, String, String),
    password: String,
    /// Lines before the matching one: (which field differs, as comment, as short line).
    decoys: Vec<(usize, u8)>,
    /// Whether the matching line is there at all.
    present: bool,
    /// Random text instead of a built file.
    garbage: Option<String>,
}

/// A password-file field written so that it reads back as `s` (libpq's escapes).
fn escape_field(s: &str, first: bool) -> String {
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if c == '\\' || c == ':' || (first && i == 0 && c == '#') {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

fn pass_cases() -> impl Strategy<Value = PassCase> {
    let field = regex("[^\n\r]{0,12}");
    (
        (field.clone(), any::<u16>(), field.clone(), field.clone()),
        field,
        prop::collection::vec((0usize..4, 0u8..4), 0..5),
        any::<bool>(),
        prop::option::weighted(0.3, garbage("a-z0-9:*#\\\\\n ")),
    )
        .prop_map(|(ep, password, decoys, present, garbage)| PassCase {
            ep,
            password,
            decoys,
            present,
            garbage,
        })
}

fn check_pass(case: &PassCase) -> Result<(), TestCaseError> {
    let (host, port, database, user) = case.ep.clone();
    let ep = Endpoint {
        host,
        port,
        database,
        user,
    };
    if let Some(g) = &case.garbage {
        let _ = match_passfile(g, &ep);
        return Ok(());
    }
    let fields = [
        ep.host.clone(),
        ep.port.to_string(),
        ep.database.clone(),
        ep.user.clone(),
    ];
    let line = |f: &[String], pw: &str| {
        let mut parts: Vec<String> = f
            .iter()
            .enumerate()
            .map(|(i, x)| escape_field(x, i == 0))
            .collect();
        parts.push(escape_field(pw, false));
        parts.join(":")
    };
    let mut text = String::new();
    for &(differs, how) in &case.decoys {
        let mut f = fields.clone();
        f[differs].push('\u{1}');
        let l = line(&f, "decoy");
        text.push_str(&match how {
            0 => l,
            1 => format!("#{}", line(&fields, "commented")),
            2 => escape_field(&fields[0], true) + ":" + &escape_field(&fields[1], false),
            _ => "   ".to_string(),
        });
        text.push('\n');
    }
    if case.present {
        text.push_str(&line(&fields, &case.password));
        text.push('\n');
    }
    let got = match_passfile(&text, &ep);
    let want = case.present.then(|| case.password.clone());
    prop_assert_eq!(got, want, "file:\n{}", text);
    Ok(())
}

#[test]
fn password_files() {
    fuzz("pgpass", 512, pass_cases(), check_pass);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_password_files() {
    fuzz("pgpass", long_cases(), pass_cases(), check_pass);
}

/// `--db-password-file`: any bytes give the first line or an error naming the file.
fn check_password_file(dir: &Path, bytes: &[u8]) -> Result<(), TestCaseError> {
    let p = dir.join("pw");
    std::fs::write(&p, bytes).unwrap();
    match read_password_file(&p) {
        Ok(pw) => {
            let text = std::str::from_utf8(bytes).expect("read as UTF-8");
            prop_assert_eq!(Some(pw.as_str()), text.lines().next());
            prop_assert!(!pw.is_empty());
        }
        Err(e) => prop_assert!(e.0.contains(&p.display().to_string()), "{}", e.0),
    }
    Ok(())
}

fn password_file_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64),
        any::<String>().prop_map(String::into_bytes),
        regex("\n?[a-z ]{0,10}\r?\n[a-z]{0,5}").prop_map(String::into_bytes),
    ]
}

#[test]
fn password_file_contents() {
    let dir = scratch();
    fuzz("password-file", 256, password_file_bytes(), |b| {
        check_password_file(dir.path(), b)
    });
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_password_file_contents() {
    let dir = scratch();
    fuzz("password-file", long_cases(), password_file_bytes(), |b| {
        check_password_file(dir.path(), b)
    });
}

// ------------------------------------------------------------------ /proc/stat, task stat

#[derive(Debug, Clone)]
enum ProcCase {
    Garbage(String, String),
    /// Well-formed `cpuN v…` lines: (cpu, values).
    Lines(Vec<(u32, Vec<u64>)>),
    /// A task stat line: comm, processor.
    TaskStat(String, u32),
}

fn proc_value() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..1_000_000, any::<u64>(), Just(u64::MAX)]
}

fn proc_cases() -> impl Strategy<Value = ProcCase> {
    let g = || {
        prop_oneof![
            garbage("a-z0-9 \n()"),
            regex("(cpu[0-9]{0,12}( [0-9]{1,22}){0,12}\n){0,8}"),
        ]
    };
    prop_oneof![
        (g(), g()).prop_map(|(a, b)| ProcCase::Garbage(a, b)),
        prop::collection::vec(
            (
                prop_oneof![0u32..8, any::<u32>()],
                prop::collection::vec(proc_value(), 4..11)
            ),
            0..6
        )
        .prop_map(ProcCase::Lines),
        (regex("[^\n]{0,16}"), any::<u32>()).prop_map(|(c, p)| ProcCase::TaskStat(c, p)),
    ]
}

fn check_proc(case: &ProcCase) -> Result<(), TestCaseError> {
    use smtlab::engine::threadstats::{parse_schedstat_wait, parse_stat_processor};
    use smtlab::hygiene::{load_between, parse_proc_stat, steal_share};
    match case {
        ProcCase::Garbage(a, b) => {
            let (ta, tb) = (parse_proc_stat(a), parse_proc_stat(b));
            let all: CpuSet = ta.iter().map(|t| t.cpu).filter(|&c| c < MAX_CPUS).collect();
            for l in load_between(&ta, &tb, &all) {
                prop_assert!((0.0..=1.0).contains(&l.busy) && (0.0..=1.0).contains(&l.steal));
            }
            if let Some(s) = steal_share(&ta, &tb, &all) {
                prop_assert!((0.0..=1.0).contains(&s));
            }
            let _ = (parse_schedstat_wait(a), parse_stat_processor(a));
        }
        ProcCase::Lines(lines) => {
            let text: String = lines
                .iter()
                .map(|(c, v)| {
                    let v: Vec<String> = v.iter().map(u64::to_string).collect();
                    format!("cpu{c} {}\n", v.join(" "))
                })
                .collect();
            let got = parse_proc_stat(&format!("cpu  1 2 3 4\n{text}intr 5 6\n"));
            prop_assert_eq!(got.len(), lines.len());
            let sum = |v: &[u64], i: &[usize]| {
                let s: u128 = i
                    .iter()
                    .map(|&i| u128::from(v.get(i).copied().unwrap_or(0)))
                    .sum();
                s.min(u128::from(u64::MAX)) as u64
            };
            for (t, (c, v)) in got.iter().zip(lines) {
                prop_assert_eq!(t.cpu, *c);
                prop_assert_eq!(t.busy, sum(v, &[0, 1, 2, 5, 6]));
                prop_assert_eq!(t.idle, sum(v, &[3, 4]));
                prop_assert_eq!(t.steal, sum(v, &[7]));
            }
        }
        ProcCase::TaskStat(comm, processor) => {
            let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
            fields[0] = "R".into();
            fields[39 - 3] = processor.to_string();
            let line = format!("4242 ({comm}) {}\n", fields.join(" "));
            prop_assert_eq!(parse_stat_processor(&line), Some(*processor));
            let sched = format!("{} {processor} 7\n", u64::from(*processor) * 3);
            prop_assert_eq!(parse_schedstat_wait(&sched), Some(u64::from(*processor)));
        }
    }
    Ok(())
}

#[test]
fn proc_files() {
    fuzz("proc-stat", 512, proc_cases(), check_proc);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_proc_files() {
    fuzz("proc-stat", long_cases(), proc_cases(), check_proc);
}

// ------------------------------------------------------------------ sysfs trees

/// File contents, shown as text in failure reports.
#[derive(Clone)]
struct Content(Vec<u8>);

impl Debug for Content {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.0))
    }
}

#[derive(Debug, Clone)]
enum Edit {
    /// Write a file: an index into the tree's paths plus [`EXTRA_PATHS`], and its content.
    Write(usize, Content),
    Remove(usize),
    /// Create a directory with an odd name.
    Dir(&'static str),
    /// Replace a file by something that is not a plain file.
    Special(usize, Special),
}

#[derive(Debug, Clone, Copy)]
enum Special {
    /// A symlink to /dev/zero: a file that never ends.
    Zero,
    /// A FIFO: opening it waits for a writer.
    Fifo,
    /// A directory where a file should be.
    Dir,
}

#[derive(Debug, Clone)]
struct TreeCase {
    cores: u32,
    threads: u32,
    nodes: u32,
    edits: Vec<Edit>,
}

/// Files that a valid tree may lack, and names that only a broken or hand-made one has.
const EXTRA_PATHS: &[&str] = &[
    "sys/devices/system/cpu/isolated",
    "sys/devices/system/cpu/nohz_full",
    "sys/devices/system/cpu/cpu0/online",
    "sys/devices/system/cpu/cpu1/online",
    "sys/devices/system/cpu/cpu0/topology/core_cpus",
    "sys/devices/system/cpu/cpu0/topology/package_cpus",
    "sys/devices/system/cpu/cpu0/topology/cluster_cpus",
    "sys/devices/system/cpu/cpu0/topology/die_cpus",
    "sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_map",
    "sys/devices/system/cpu/cpu0/cache/index7/level",
    "sys/devices/system/cpu/cpu0/cache/index7/type",
    "sys/devices/system/cpu/cpu0/cache/index7/size",
    "sys/devices/system/cpu/cpu0/cache/index7/shared_cpu_list",
    "sys/devices/system/cpu/cpu1/cpufreq/base_frequency",
    "sys/devices/system/cpu/cpu65535/online",
    "sys/devices/system/cpu/smt/control",
    "sys/devices/system/cpu/smt/active",
    "sys/devices/cpu_core/cpus",
    "sys/devices/cpu_atom/cpus",
    "sys/devices/cpu_lowpower/cpus",
    "sys/devices/system/node/node1/cpumap",
    "sys/devices/system/node/node1/meminfo",
    "sys/devices/system/node/node70000/cpulist",
    "sys/devices/system/node/node4294967295/cpumap",
    "proc/self/cpuset",
    "sys/fs/cgroup/cpuset/a/cpuset.cpus",
    "sys/fs/cgroup/cpuset/a/cpuset.effective_cpus",
    "sys/fs/cgroup/cpuset/a/cpus",
    "sys/fs/cgroup/cpu/a/cpu.cfs_quota_us",
    "sys/fs/cgroup/cpu/a/cpu.cfs_period_us",
];

const ODD_DIRS: &[&str] = &[
    "sys/devices/system/cpu/cpu+1",
    "sys/devices/system/cpu/cpu01",
    "sys/devices/system/cpu/cpu-1",
    "sys/devices/system/cpu/cpu65535",
    "sys/devices/system/cpu/cpu65536",
    "sys/devices/system/cpu/cpu4294967296",
    "sys/devices/system/cpu/cpu0/cache/index9",
    "sys/devices/system/node/node+0",
    "sys/devices/system/node/node70000",
    "sys/devices/system/node/node4294967295",
    "sys/kernel/mm/hugepages/hugepages-18014398509481984kB",
    "sys/kernel/mm/hugepages/hugepages-99999999999999999999999kB",
    "sys/kernel/mm/hugepages/hugepages-kB",
];

/// A consistent tree: `cores` cores of `threads` CPUs (Linux numbering: CPU i and
/// i + cores are siblings), L1d, L1i, L2 per core and one L3, `nodes` NUMA nodes, a cgroup
/// v2 cpuset and the procfs files discovery reads.
fn base_tree(cores: u32, threads: u32, nodes: u32) -> BTreeMap<String, Vec<u8>> {
    let n = cores * threads;
    let all = format!("0-{}", n - 1);
    let mut t = BTreeMap::new();
    let mut put = |k: String, v: String| {
        t.insert(k, format!("{v}\n").into_bytes());
    };
    let cpu = "sys/devices/system/cpu";
    for f in ["possible", "present", "online"] {
        put(format!("{cpu}/{f}"), all.clone());
    }
    put(format!("{cpu}/smt/control"), "on".into());
    put(
        format!("{cpu}/smt/active"),
        u32::from(threads > 1).to_string(),
    );
    for c in 0..n {
        let core = c % cores;
        let sib = CpuSet::from_cpus((0..threads).map(|t| core + t * cores));
        let b = format!("{cpu}/cpu{c}");
        let tp = format!("{b}/topology");
        put(format!("{tp}/physical_package_id"), "0".into());
        put(format!("{tp}/die_id"), "0".into());
        put(format!("{tp}/cluster_id"), "65535".into());
        put(format!("{tp}/core_id"), core.to_string());
        put(format!("{tp}/core_cpus_list"), sib.to_list());
        put(format!("{tp}/thread_siblings"), sib.to_sysfs_mask(1));
        put(format!("{tp}/thread_siblings_list"), sib.to_list());
        put(format!("{tp}/package_cpus_list"), all.clone());
        put(format!("{tp}/core_siblings_list"), all.clone());
        put(format!("{tp}/die_cpus_list"), all.clone());
        put(format!("{b}/cpu_capacity"), "1024".into());
        put(format!("{b}/cpufreq/cpuinfo_max_freq"), "3000000".into());
        put(format!("{b}/cpufreq/base_frequency"), "2000000".into());
        for (i, (level, ty, size, shared)) in [
            (1, "Data", "32K", sib.to_list()),
            (1, "Instruction", "32K", sib.to_list()),
            (2, "Unified", "1024K", sib.to_list()),
            (3, "Unified", "16384K", all.clone()),
        ]
        .into_iter()
        .enumerate()
        {
            let d = format!("{b}/cache/index{i}");
            put(format!("{d}/level"), level.to_string());
            put(format!("{d}/type"), ty.into());
            put(format!("{d}/size"), size.into());
            put(format!("{d}/coherency_line_size"), "64".into());
            put(format!("{d}/ways_of_associativity"), "8".into());
            put(
                format!("{d}/id"),
                if level == 3 { 0 } else { core }.to_string(),
            );
            put(format!("{d}/shared_cpu_list"), shared);
        }
    }
    let node = "sys/devices/system/node";
    put(format!("{node}/online"), format!("0-{}", nodes - 1));
    for nd in 0..nodes {
        let cpus = CpuSet::from_cpus((0..n).filter(|c| c % nodes == nd));
        put(format!("{node}/node{nd}/cpulist"), cpus.to_list());
        put(
            format!("{node}/node{nd}/meminfo"),
            format!("Node {nd} MemTotal:       8000000 kB"),
        );
    }
    put(
        "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages".into(),
        "0".into(),
    );
    put(
        "proc/cpuinfo".into(),
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Fuzz CPU\n\
         flags\t\t: fpu hypervisor"
            .into(),
    );
    put("proc/meminfo".into(), "MemTotal:       16000000 kB".into());
    put(
        "proc/mounts".into(),
        "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n\
         cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0"
            .into(),
    );
    put(
        "proc/self/cgroup".into(),
        "0::/a\n3:cpuset:/a\n4:cpu,cpuacct:/a".into(),
    );
    put("sys/fs/cgroup/a/cpuset.cpus.effective".into(), all.clone());
    put("sys/fs/cgroup/a/cpuset.mems.effective".into(), "0".into());
    put("sys/fs/cgroup/a/cpu.max".into(), "max 100000".into());
    t
}

fn content() -> impl Strategy<Value = Content> {
    let fixed = prop::sample::select(vec![
        "",
        "\n",
        "\0\0\0",
        "0",
        "1",
        "-1",
        "65535",
        "0-3",
        "0-65535",
        "3-0",
        "0,,1",
        "0x3",
        "ffffffff,ffffffff",
        "Data",
        "Unified",
        "Instruction",
        "4294967296",
        "2147483648",
        "18446744073709551615",
        "18446744073709551615K",
        "18014398509481984K",
        "99999999999999999999G",
        "0K",
        "max 100000",
        "-5 100000",
        "NaN 1",
        "inf 1",
        "1e308 1e-308",
        "0 0",
        "on",
        "off",
        "forceoff",
        "notsupported",
        "cgroup2 / cgroup2 rw 0 0",
        "0::/",
        "0::/../..",
        "MemTotal: 18446744073709551615 kB",
        "Node 0 MemTotal: 18014398509481984 kB",
    ]);
    prop_oneof![
        3 => fixed.prop_map(|s| s.as_bytes().to_vec()),
        2 => prop::collection::vec(any::<u8>(), 0..48),
        2 => regex("[0-9a-fA-F,\\-: x\n]{0,32}").prop_map(String::into_bytes),
        1 => (regex("[0-9,\\-]{1,8}"), 1usize..600).prop_map(|(s, n)| s.repeat(n).into_bytes()),
        1 => regex("[a-z_ ]{0,10}: ?[0-9a-z ]{0,24}(\n[a-z_ ]{0,10}: ?[0-9a-z ]{0,24}){0,4}")
            .prop_map(String::into_bytes),
    ]
    .prop_map(Content)
}

fn tree_cases() -> impl Strategy<Value = TreeCase> {
    let edit = prop_oneof![
        6 => (any::<usize>(), content()).prop_map(|(i, c)| Edit::Write(i, c)),
        2 => any::<usize>().prop_map(Edit::Remove),
        1 => prop::sample::select(ODD_DIRS).prop_map(Edit::Dir),
        1 => (any::<usize>(), prop::sample::select(vec![Special::Zero, Special::Fifo, Special::Dir]))
            .prop_map(|(i, k)| Edit::Special(i, k)),
    ];
    (
        1u32..4,
        1u32..3,
        1u32..3,
        prop::collection::vec(edit, 0..10),
    )
        .prop_map(|(cores, threads, nodes, edits)| TreeCase {
            cores,
            threads,
            nodes,
            edits,
        })
}

/// The case's tree: its files (path under the root → bytes), the odd directories, and the
/// files replaced by something that is not a plain file.
type BuiltTree = (
    BTreeMap<String, Vec<u8>>,
    Vec<&'static str>,
    Vec<(String, Special)>,
);

fn build_tree(case: &TreeCase) -> BuiltTree {
    let mut tree = base_tree(case.cores, case.threads, case.nodes);
    let mut dirs = Vec::new();
    let mut specials = Vec::new();
    let paths: Vec<String> = tree
        .keys()
        .cloned()
        .chain(EXTRA_PATHS.iter().map(|s| s.to_string()))
        .collect();
    for e in &case.edits {
        match e {
            Edit::Write(i, c) => {
                tree.insert(paths[i % paths.len()].clone(), c.0.clone());
            }
            Edit::Remove(i) => {
                tree.remove(&paths[i % paths.len()]);
            }
            Edit::Dir(d) => dirs.push(*d),
            Edit::Special(i, k) => {
                let p = &paths[i % paths.len()];
                tree.remove(p);
                specials.push((p.clone(), *k));
            }
        }
    }
    (tree, dirs, specials)
}

/// Runs everything `topo` and `plan` do with what discovery read; an error must be one
/// clear line.
fn check_discovered(
    r: Result<smtlab::topology::Topology, smtlab::topology::DiscoverError>,
) -> Result<(), TestCaseError> {
    use smtlab::placement::{Request, Scope, plan_within};
    use smtlab::topology::view;
    match r {
        Ok(topo) => {
            let _ = (
                view::tree(&topo),
                view::cpu_table(&topo),
                view::to_json(&topo),
            );
            let _ = (
                view::smt_summary(&topo),
                topo.partitions(),
                topo.llc_groups(),
            );
            for req in [
                "one-per-core",
                "pairs",
                "all",
                "spread",
                "same-core",
                "same-l3",
                "other-l3",
                "other-package",
                "os",
                "siblings-of:0",
                "cpus:0-1",
            ] {
                let req = Request::parse(req).unwrap();
                for scope in Scope::ALL {
                    for threads in [1, 2, 5] {
                        let _ = plan_within(&topo, &req, threads, scope);
                    }
                }
            }
            Ok(())
        }
        Err(e) => {
            let msg = e.to_string();
            if msg.trim().is_empty() || msg.contains('\n') {
                Err(TestCaseError::fail(format!("unclear error: {msg:?}")))
            } else {
                Ok(())
            }
        }
    }
}

/// What discovery read, as text with the root left out, to compare a tree on disk with
/// the same tree in memory.
fn discovered_text(
    r: &Result<smtlab::topology::Topology, smtlab::topology::DiscoverError>,
    root: &str,
) -> String {
    let text = match r {
        Ok(t) => serde_json::to_string(t).unwrap(),
        Err(e) => e.to_string(),
    };
    text.replace(root, "ROOT")
}

/// Writes the case's tree under `base`, reads it with `topology::discover`, checks what
/// was read; a tree of plain files must read exactly as the same files in memory do
/// (so the in-memory long run stands for trees on disk).
fn check_tree(base: &Path, n: &Cell<u64>, case: &TreeCase) -> Result<(), TestCaseError> {
    let (tree, dirs, specials) = build_tree(case);
    n.set(n.get() + 1);
    let root: PathBuf = base.join(format!("t{}", n.get()));
    let mut made = BTreeSet::new();
    for (rel, bytes) in &tree {
        let p = root.join(rel);
        let parent = p.parent().unwrap();
        if made.insert(parent.to_path_buf()) {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(&p, bytes);
    }
    std::fs::create_dir_all(root.join("sys/devices/system/cpu")).unwrap();
    let plain = dirs.is_empty() && specials.is_empty();
    for d in dirs {
        let _ = std::fs::create_dir_all(root.join(d));
    }
    for (rel, kind) in specials {
        let p = root.join(rel);
        let _ = std::fs::create_dir_all(p.parent().unwrap());
        let _ = match kind {
            Special::Zero => std::os::unix::fs::symlink("/dev/zero", &p),
            Special::Dir => std::fs::create_dir_all(&p),
            Special::Fifo => {
                use std::os::unix::ffi::OsStrExt;
                let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
                // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
                let _ = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
                Ok(())
            }
        };
    }
    let r = smtlab::topology::discover(&root);
    let same = if plain {
        let on_disk = discovered_text(&r, &root.display().to_string());
        let mut files = tree;
        // The directory the tree always has, as a file inside it.
        files.insert("sys/devices/system/cpu/.keep".into(), Vec::new());
        let in_memory = discovered_text(&smtlab::topology::discover_in_memory(&files), "(memory)");
        if on_disk == in_memory {
            Ok(())
        } else {
            Err(TestCaseError::fail(format!(
                "read differently on disk and in memory:\n{on_disk}\n{in_memory}"
            )))
        }
    } else {
        Ok(())
    };
    let out = check_discovered(r).and(same);
    let _ = std::fs::remove_dir_all(&root);
    out
}

/// The case's tree read from memory: odd directories hold an empty file, a FIFO reads as
/// empty and a file that never ends as absent (as discovery reads them on disk), a
/// directory in a file's place is a directory.
fn check_tree_in_memory(case: &TreeCase) -> Result<(), TestCaseError> {
    let (mut files, dirs, specials) = build_tree(case);
    files.insert("sys/devices/system/cpu/.keep".into(), Vec::new());
    for d in dirs {
        files.insert(format!("{d}/.keep"), Vec::new());
    }
    for (rel, kind) in specials {
        match kind {
            Special::Zero => {}
            Special::Fifo => {
                files.insert(rel, Vec::new());
            }
            Special::Dir => {
                files.insert(format!("{rel}/.keep"), Vec::new());
            }
        }
    }
    check_discovered(smtlab::topology::discover_in_memory(&files))
}

/// Trees on disk cost about 200 file creations each (about 20 ms a case here, a third of
/// it reading 64 MiB from the /dev/zero links), so the long run writes this share of
/// `SMTLAB_FUZZ_CASES` trees and reads the rest from memory.
const ON_DISK_SHARE: u32 = 50;

#[test]
fn sysfs_trees() {
    let dir = scratch();
    let n = Cell::new(0);
    fuzz("sysfs-on-disk", 64, tree_cases(), |c| {
        check_tree(dir.path(), &n, c)
    });
}

#[test]
fn sysfs_trees_in_memory() {
    fuzz("sysfs-in-memory", 256, tree_cases(), check_tree_in_memory);
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_sysfs_trees() {
    let dir = scratch();
    let n = Cell::new(0);
    fuzz(
        "sysfs-on-disk",
        (long_cases() / ON_DISK_SHARE).max(1),
        tree_cases(),
        |c| check_tree(dir.path(), &n, c),
    );
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_sysfs_trees_in_memory() {
    fuzz(
        "sysfs-in-memory",
        long_cases(),
        tree_cases(),
        check_tree_in_memory,
    );
}

// ------------------------------------------------------------------ journals

/// The machine the SMT journals are checked against: CPUs 0-7 present, CPU 0 without an
/// online file (as on x86), CPUs 0-3 online.
fn journal_machine() -> smtlab::smt::state::SmtState {
    smtlab::smt::state::SmtState {
        control: Some("on".into()),
        active: Some(true),
        present: CpuSet::parse_list("0-7").unwrap(),
        online: CpuSet::parse_list("0-3").unwrap(),
        switchable: CpuSet::parse_list("1-7").unwrap(),
        cores: vec![
            CpuSet::parse_list("0-1").unwrap(),
            CpuSet::parse_list("2-3").unwrap(),
        ],
        cmdline_nosmt: Vec::new(),
        vulnerabilities: Vec::new(),
        cmt_modules: false,
    }
}

#[derive(Debug, Clone)]
enum JournalCase {
    /// Any text.
    Garbage(String),
    /// A journal's JSON with its fields chosen from good and bad values.
    Fields {
        schema: Value,
        control: Value,
        online: Value,
        cores: Value,
        command: Value,
    },
}

fn journal_cases() -> impl Strategy<Value = JournalCase> {
    let cpus = || {
        prop_oneof![
            2 => prop::collection::vec(0u32..12, 0..10).prop_map(|v| serde_json::json!(v)),
            3 => Just(serde_json::json!([0, 1, 2, 3])),
            1 => Just(serde_json::json!([65536])),
            1 => Just(serde_json::json!("0-3")),
            1 => Just(Value::Null),
        ]
    };
    let word = |good: &'static [&'static str]| {
        prop_oneof![
            6 => prop::sample::select(good).prop_map(|w| Value::String(w.into())),
            1 => any::<String>().prop_map(Value::String),
            1 => any::<u32>().prop_map(|n| Value::String(n.to_string())),
            1 => Just(Value::Null),
            1 => Just(serde_json::json!(7)),
        ]
    };
    prop_oneof![
        1 => garbage("{}\\[\\]\":,0-9a-z ").prop_map(JournalCase::Garbage),
        4 => (
            prop_oneof![
                4 => Just(serde_json::json!(1)),
                1 => Just(serde_json::json!(2)),
                1 => Just(serde_json::json!(-1)),
                1 => Just(serde_json::json!("one")),
            ],
            word(&[
                "on",
                "off",
                "forceoff",
                "notsupported",
                "notimplemented",
                "2"
            ]),
            cpus(),
            prop_oneof![
                1 => prop::collection::vec(prop::collection::vec(0u32..12, 0..4), 0..5)
                    .prop_map(|v| serde_json::json!(v)),
                2 => Just(serde_json::json!([[0, 1], [2, 3]])),
            ],
            word(&["off", "on"]),
        )
            .prop_map(
                |(schema, control, online, cores, command)| JournalCase::Fields {
                    schema,
                    control,
                    online,
                    cores,
                    command,
                }
            ),
    ]
}

/// The SMT journal's parse and checks: never a panic; every journal it accepts is one
/// `restore` may act on (a non-empty set of present CPUs holding CPU 0, which cannot go
/// offline; cores of those CPUs, apart; a control value the kernel writes); every refusal
/// says why.
fn check_smt_journal(case: &JournalCase) -> Result<(), TestCaseError> {
    let text = match case {
        JournalCase::Garbage(t) => t.clone(),
        JournalCase::Fields {
            schema,
            control,
            online,
            cores,
            command,
        } => serde_json::json!({
            "schema_version": schema, "root": "/", "boot_id": null, "pid": 1,
            "written_unix_s": 0, "command": command, "control": control,
            "online": online, "cores": cores,
        })
        .to_string(),
    };
    let st = journal_machine();
    match smtlab::smt::journal::parse_checked(&text, &st) {
        Ok(j) => {
            ACCEPTED_JOURNALS.fetch_add(1, Ordering::Relaxed);
            prop_assert!(!j.online.is_empty() && j.online.is_subset(&st.present));
            prop_assert!(
                j.online.contains(0),
                "CPU 0 cannot go offline: {:?}",
                j.online
            );
            let mut seen = CpuSet::new();
            for c in &j.cores {
                prop_assert!(!c.is_empty() && c.is_subset(&j.online) && !seen.intersects(c));
                seen = seen.union(c);
            }
            if let Some(c) = &j.control {
                prop_assert!(
                    smtlab::smt::journal::CONTROL_VALUES.contains(&c.as_str())
                        || c.parse::<u32>().is_ok_and(|n| n >= 1),
                    "control {}",
                    c
                );
            }
            prop_assert!(j.command == "off" || j.command == "on");
        }
        Err(why) => prop_assert!(!why.trim().is_empty()),
    }
    Ok(())
}

/// Journals [`check_smt_journal`] saw accepted: the property says nothing unless some are.
static ACCEPTED_JOURNALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[test]
fn smt_journals() {
    fuzz("smt-journal", 512, journal_cases(), check_smt_journal);
    assert!(
        ACCEPTED_JOURNALS.load(Ordering::Relaxed) > 0,
        "no journal was accepted"
    );
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_smt_journals() {
    fuzz(
        "smt-journal",
        long_cases(),
        journal_cases(),
        check_smt_journal,
    );
}

fn pool_path_cases() -> impl Strategy<Value = String> {
    prop_oneof![
        garbage("a-z0-9/.\\-"),
        regex(
            "(/|\\./|\\.\\./)?sys/(kernel/mm|devices/system/node/node[0-9x]{0,3})\
             (/\\.\\.)?/hugepages/hugepages-[0-9]{0,9}[kKmM]B/(nr|free)_hugepages/?"
        ),
    ]
}

/// What a hugetlb journal may name: only the two `nr_hugepages` forms, relative, with no
/// `.` or `..` in them, and a page size that is a whole number of KiB.
fn check_pool_path(rel: &str) -> Result<(), TestCaseError> {
    use smtlab::mem::pages::reserve::pool_page_bytes;
    if let Some(bytes) = pool_page_bytes(rel) {
        let parts: Vec<&str> = rel.split('/').collect();
        prop_assert!(!rel.starts_with('/') && !parts.contains(&"..") && !parts.contains(&"."));
        prop_assert_eq!(parts.last().copied(), Some("nr_hugepages"));
        prop_assert!(
            rel.starts_with("sys/kernel/mm/hugepages/hugepages-")
                || rel.starts_with("sys/devices/system/node/node")
        );
        let kb = parts[parts.len() - 2]
            .strip_prefix("hugepages-")
            .and_then(|p| p.strip_suffix("kB"))
            .and_then(|n| n.parse::<u64>().ok());
        prop_assert_eq!(kb.map(|k| k * 1024), Some(bytes));
    }
    Ok(())
}

#[test]
fn hugetlb_pool_paths() {
    fuzz("hugetlb-pool-paths", 512, pool_path_cases(), |p| {
        check_pool_path(p)
    });
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_hugetlb_pool_paths() {
    fuzz("hugetlb-pool-paths", long_cases(), pool_path_cases(), |p| {
        check_pool_path(p)
    });
}

// ------------------------------------------------------------------ Markdown

fn markdown_cases() -> impl Strategy<Value = String> {
    prop_oneof![
        garbage("a-z `\\[\\]()<>&#|!\\\\\n\r"),
        hostile_text(),
        regex(
            "[a-z ]{0,8}(`{1,3})?\\[[a-z]{0,5}\\]\\((javascript:)?[a-z()]{0,10}\\)(`{1,3})?\n?#? ?[a-z]{0,5}"
        ),
    ]
}

/// The bytes of one Markdown line outside code spans as CommonMark reads them (a backtick
/// run closed by one of the same length; md() leaves exactly those alone), each backslash
/// escape kept as one space: an escaped character is literal text, and it also separates
/// what stands either side of it (`:\\[//` holds no `://`: CommonMark reads the escape
/// before any autolink rule sees the colon).
fn outside_code_spans(m: &str) -> Vec<u8> {
    let b = m.as_bytes();
    let mut i = 0;
    let mut outside = Vec::new();
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            outside.push(b' ');
            i += 2;
            continue;
        }
        if b[i] == b'`' {
            let n = b[i..].iter().take_while(|&&c| c == b'`').count();
            let mut j = i + n;
            let mut closed = None;
            while j < b.len() {
                if b[j] == b'`' {
                    let k = b[j..].iter().take_while(|&&c| c == b'`').count();
                    if k == n {
                        closed = Some(j + k);
                        break;
                    }
                    j += k;
                } else {
                    j += 1;
                }
            }
            i = closed.unwrap_or(i + n);
            continue;
        }
        outside.push(b[i]);
        i += 1;
    }
    outside
}

/// A control character (but a line break or tab) or a bidirectional control, if `t` holds
/// one: what a terminal or viewer would run.
fn control_in(t: &str) -> Option<char> {
    t.chars()
        .find(|&c| c != '\n' && c != '\t' && smtlab::render::terminal::is_unsafe(c))
}

/// What GitHub's Markdown would make a link of without brackets (GFM autolinks): `://`,
/// `www.`, an address's `@`.
fn autolink_in(outside: &[u8]) -> Option<&'static str> {
    let t = String::from_utf8_lossy(outside).to_ascii_lowercase();
    ["://", "www.", "@"].into_iter().find(|p| t.contains(p))
}

/// Any field through `render::markdown::md` is one line of inline text: no line break, no
/// control character, and outside code spans no raw `<`, no unescaped `[` or `]` (no link,
/// no image), nothing GitHub would autolink.
fn check_markdown(t: &str) -> Result<(), TestCaseError> {
    let m = smtlab::render::markdown::md(t);
    prop_assert!(!m.contains(['\n', '\r']), "{:?}", m);
    prop_assert!(control_in(&m).is_none(), "{:?} gave {:?}", t, m);
    let outside = outside_code_spans(&m);
    prop_assert!(
        !outside.contains(&b'<') && !outside.contains(&b'[') && !outside.contains(&b']'),
        "{:?} gave {:?}",
        t,
        m
    );
    prop_assert!(autolink_in(&outside).is_none(), "{:?} gave {:?}", t, m);
    Ok(())
}

/// A whole Markdown document from hostile fields: no control character, no line that
/// starts a raw HTML block, nothing GitHub would autolink outside code spans.
fn check_markdown_doc(what: &str, doc: &str) -> Result<(), TestCaseError> {
    prop_assert!(control_in(doc).is_none(), "{}: {:?}", what, control_in(doc));
    for line in doc.lines() {
        prop_assert!(
            !line.trim_start().starts_with('<'),
            "{}: a raw HTML line: {:?}",
            what,
            line
        );
        let outside = outside_code_spans(line);
        prop_assert!(
            autolink_in(&outside).is_none(),
            "{}: a bare link: {:?}",
            what,
            line
        );
    }
    Ok(())
}

/// An HTML page (or terminal text) from hostile fields: no control character, no script.
fn check_page(what: &str, page: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        control_in(page).is_none(),
        "{}: {:?}",
        what,
        control_in(page)
    );
    prop_assert!(!page.contains("<script"), "{}: a script", what);
    // Bounded by what it draws: the study's page is tens of kB; a crafted file may make
    // more rows, never without end (the file itself is at most 256 MiB; this one ~100 kB).
    prop_assert!(page.len() < 64 << 20, "{}: {} bytes", what, page.len());
    Ok(())
}

/// Inputs a random run once found, kept so that every run tries them: `:[//` failed a
/// check that joined the text either side of an escape into `://`.
#[test]
fn markdown_fields_found_before() {
    for t in [":[//", "http:[//x", "www[.x", "a[@]b", ":\\//", "w\\ww.x"] {
        check_markdown(t).unwrap_or_else(|e| panic!("{t:?}: {e}"));
    }
}

#[test]
fn markdown_fields() {
    fuzz("markdown", 512, markdown_cases(), |t| check_markdown(t));
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_markdown_fields() {
    fuzz("markdown", long_cases(), markdown_cases(), |t| {
        check_markdown(t)
    });
}

// ------------------------------------------------------------------ results.json

/// A valid `results.json`: the fake study's, as its snapshot test keeps it current.
static RESULTS: LazyLock<(String, Value, Vec<String>)> = LazyLock::new(|| {
    let snap = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/integration__study__fake_results_json.snap");
    let snap = std::fs::read_to_string(snap).unwrap();
    // insta's header ends at the second `---` line.
    let json = snap.splitn(3, "---\n").nth(2).unwrap().to_string();
    let v: Value = serde_json::from_str(&json).unwrap();
    let mut pointers = Vec::new();
    fn walk(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    walk(
                        x,
                        format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                        out,
                    );
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        if !at.is_empty() {
            out.push(at);
        }
    }
    walk(&v, String::new(), &mut pointers);
    (json, v, pointers)
});

#[derive(Debug, Clone)]
enum Replacement {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Text(String),
    EmptyArray,
    EmptyObject,
    /// The number times this factor (or negated, or zeroed).
    Scale(f64),
    /// An array's first element repeated, or its elements dropped but one.
    Repeat(usize),
}

#[derive(Debug, Clone)]
enum JsonEdit {
    Delete(usize),
    Replace(usize, Replacement),
    /// Cut the text at this fraction (per mille) of its length.
    Truncate(u16),
    /// XOR one byte (at this per-mille position) with a value.
    Flip(u16, u8),
    /// Insert text at this per-mille position.
    Splice(u16, String),
}

/// Text as a hostile results.json holds it: escape sequences, C0/C1 controls,
/// bidirectional overrides, line breaks before markup, bare links and addresses.
fn hostile_text() -> BoxedStrategy<String> {
    let piece = prop_oneof![
        Just("\x1b]0;title\x07".to_string()),
        Just("\x1b[2J".to_string()),
        Just("\r".to_string()),
        Just("\u{9b}31m".to_string()),
        Just("\u{202e}".to_string()),
        Just("\n\n<script>alert(1)</script>\n".to_string()),
        Just("https://evil.example/x".to_string()),
        Just("WWW.evil.example".to_string()),
        Just("a@evil.example".to_string()),
        Just("`".to_string()),
        Just("\\".to_string()),
        regex("[a-z .:/@]{0,6}"),
        (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap().to_string()),
    ];
    prop::collection::vec(piece, 1..6)
        .prop_map(|v| v.concat())
        .boxed()
}

fn replacement() -> impl Strategy<Value = Replacement> {
    prop_oneof![
        Just(Replacement::Null),
        any::<bool>().prop_map(Replacement::Bool),
        prop_oneof![Just(i64::MIN), Just(-1i64), Just(0i64), any::<i64>()]
            .prop_map(Replacement::Int),
        prop_oneof![Just(u64::MAX), any::<u64>()].prop_map(Replacement::UInt),
        prop_oneof![
            Just(1e308),
            Just(-1e308),
            Just(5e-324),
            Just(-0.0),
            any::<f64>()
        ]
        .prop_map(Replacement::Float),
        prop_oneof![
            any::<String>(),
            regex("<[a-z]{1,6}>&\"'[a-z ]{0,8}"),
            hostile_text(),
            hostile_text(),
            Just("x".repeat(10_000))
        ]
        .prop_map(Replacement::Text),
        Just(Replacement::EmptyArray),
        Just(Replacement::EmptyObject),
        prop_oneof![Just(0.0), Just(-1.0), Just(1e12), Just(1e-12), -4.0..4.0f64]
            .prop_map(Replacement::Scale),
        (0usize..300).prop_map(Replacement::Repeat),
    ]
}

fn json_cases() -> impl Strategy<Value = Vec<JsonEdit>> {
    let edit = prop_oneof![
        2 => any::<usize>().prop_map(JsonEdit::Delete),
        6 => (any::<usize>(), replacement()).prop_map(|(i, r)| JsonEdit::Replace(i, r)),
        1 => (0u16..1000).prop_map(JsonEdit::Truncate),
        1 => (0u16..1000, 1u8..=255).prop_map(|(i, x)| JsonEdit::Flip(i, x)),
        1 => (0u16..1000, regex("[\\[\\]{}\",:0-9a-z\\\\ ]{1,6}")).prop_map(|(i, s)| JsonEdit::Splice(i, s)),
    ];
    prop::collection::vec(edit, 1..5)
}

/// What `r` makes of `target`; None when it does not apply (a repeat of a non-array).
fn replaced(target: &Value, r: &Replacement) -> Option<Value> {
    let num = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
    Some(match r {
        Replacement::Null => Value::Null,
        Replacement::Bool(b) => Value::Bool(*b),
        Replacement::Int(i) => Value::from(*i),
        Replacement::UInt(u) => Value::from(*u),
        Replacement::Float(x) => num(*x),
        Replacement::Text(s) => Value::String(s.clone()),
        Replacement::EmptyArray => Value::Array(Vec::new()),
        Replacement::EmptyObject => Value::Object(Default::default()),
        Replacement::Scale(f) => match target.as_f64() {
            Some(x) if target.is_u64() && *f >= 0.0 => Value::from((x * f) as u64),
            Some(x) => num(x * f),
            None => Value::Null,
        },
        Replacement::Repeat(n) => match target {
            Value::Array(a) if !a.is_empty() => {
                if *n < 2 {
                    Value::Array(a[..1].to_vec())
                } else {
                    Value::Array(std::iter::repeat_n(a[0].clone(), *n).collect())
                }
            }
            _ => return None,
        },
    })
}

/// How to take one structural edit back.
enum Undo {
    /// Put this value back at the pointer.
    Set(String, Value),
    /// Put this key back into the object at the pointer.
    Key(String, String, Value),
    /// Put this element back into the array at the pointer, at this index.
    Element(String, usize, Value),
}

thread_local! {
    /// The document the edits are applied to and taken back from: cloning the whole
    /// `Value` for every case took longer than reading the text back.
    static DOC: RefCell<Value> = RefCell::new(RESULTS.1.clone());
}

/// The mutated text of `results.json`: the structural edits on the parsed document, which
/// is then printed (compact: the parser reads any layout, and whitespace only slows every
/// case), then the text edits.
fn mutate(edits: &[JsonEdit]) -> String {
    DOC.with(|doc| {
        let mut v = doc.borrow_mut();
        let mut undo = Vec::new();
        let text = edit_document(&mut v, edits, &mut undo);
        for u in undo.into_iter().rev() {
            match u {
                Undo::Set(p, old) => {
                    *v.pointer_mut(&p).expect("the edit found it") = old;
                }
                Undo::Key(p, k, old) => {
                    if let Some(Value::Object(m)) = v.pointer_mut(&p) {
                        m.insert(k, old);
                    }
                }
                Undo::Element(p, i, old) => {
                    if let Some(Value::Array(a)) = v.pointer_mut(&p) {
                        a.insert(i, old);
                    }
                }
            }
        }
        text
    })
}

fn edit_document(v: &mut Value, edits: &[JsonEdit], undo: &mut Vec<Undo>) -> String {
    let (_, _, pointers) = &*RESULTS;
    let mut text_edits = Vec::new();
    for e in edits {
        match e {
            JsonEdit::Delete(i) => {
                let p = &pointers[i % pointers.len()];
                let (parent, last) = p.rsplit_once('/').unwrap();
                match v.pointer_mut(parent) {
                    Some(Value::Object(m)) => {
                        let key = last.replace("~1", "/").replace("~0", "~");
                        if let Some(old) = m.remove(&key) {
                            undo.push(Undo::Key(parent.to_string(), key, old));
                        }
                    }
                    Some(Value::Array(a)) => {
                        if let Ok(k) = last.parse::<usize>()
                            && k < a.len()
                        {
                            let old = a.remove(k);
                            undo.push(Undo::Element(parent.to_string(), k, old));
                        }
                    }
                    _ => {}
                }
            }
            JsonEdit::Replace(i, r) => {
                let p = &pointers[i % pointers.len()];
                if let Some(t) = v.pointer_mut(p)
                    && let Some(new) = replaced(t, r)
                {
                    let old = std::mem::replace(t, new);
                    undo.push(Undo::Set(p.clone(), old));
                }
            }
            other => text_edits.push(other),
        }
    }
    let mut text = serde_json::to_string(&v).unwrap();
    let at = |t: &String, per_mille: u16| {
        let mut i = t.len() * usize::from(per_mille) / 1000;
        while !t.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    for e in text_edits {
        match e {
            JsonEdit::Truncate(p) => text.truncate(at(&text, *p)),
            JsonEdit::Flip(p, x) => {
                let mut b = std::mem::take(&mut text).into_bytes();
                let i = (b.len() * usize::from(*p) / 1000).min(b.len().saturating_sub(1));
                if let Some(c) = b.get_mut(i) {
                    *c ^= x;
                }
                text = String::from_utf8_lossy(&b).into_owned();
            }
            JsonEdit::Splice(p, s) => {
                let i = at(&text, *p);
                text.insert_str(i, s);
            }
            _ => {}
        }
    }
    text
}

/// The file through `report` (summary.md, report.html) and through `merge` (decode, one
/// host, the fleet and its four views): bad input is refused as such, and whatever is
/// written holds no control character, raw HTML block, autolink or script, and is bounded.
fn check_results(edits: &[JsonEdit]) -> Result<(), TestCaseError> {
    let text = mutate(edits);
    if let Ok(file) = smtlab::fleet::input::decode(text.as_bytes()) {
        let host = smtlab::fleet::host::Host::from_loaded(smtlab::fleet::input::Loaded {
            path: PathBuf::from("hosts/h/results.json"),
            file,
        });
        let f = smtlab::fleet::build::build(
            vec![host],
            Vec::new(),
            1,
            smtlab::fleet::provenance("smtlab merge hosts".into()),
        );
        check_markdown_doc("fleet.md", &smtlab::fleet::view::markdown(&f))?;
        check_page("fleet.html", &smtlab::fleet::view::html(&f))?;
        // As merge prints it: line injection and control characters, not markup inside a
        // line (text there).
        check_terminal(
            "merge's terminal text",
            &smtlab::render::terminal::text(&smtlab::fleet::view::text(&f)),
            &[],
        )?;
        let prom = smtlab::fleet::view::prometheus(&f);
        prop_assert!(control_in(&prom).is_none(), "fleet.prom: {:?}", prom);
    }
    match smtlab::report::render_json(&text) {
        Ok(r) => {
            prop_assert!(!r.html.is_empty() && !r.markdown.is_empty());
            check_markdown_doc("summary.md", &r.markdown)?;
            check_page("report.html", &r.html)?;
        }
        Err(e) => {
            prop_assert!(
                e.downcast_ref::<smtlab::error::BadInput>().is_some(),
                "not bad input (exit 2): {:#}",
                e
            );
            prop_assert!(e.to_string().contains("results.json"), "{}", e);
        }
    }
    Ok(())
}

#[test]
fn results_json_unchanged_renders() {
    let (json, _, pointers) = &*RESULTS;
    assert!(pointers.len() > 100);
    smtlab::report::render_json(json).unwrap();
    smtlab::report::render_json(&mutate(&[])).unwrap();
}

#[test]
fn results_json_edits_are_taken_back() {
    let (_, original, _) = &*RESULTS;
    let unchanged = serde_json::to_string(original).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&json_cases(), |edits| {
            mutate(&edits);
            prop_assert_eq!(mutate(&[]), unchanged.clone(), "after {:?}", edits);
            Ok(())
        })
        .unwrap();
}

#[test]
fn results_json() {
    fuzz("results-json", 48, json_cases(), |e| check_results(e));
}

#[test]
#[ignore = "long run: cargo test --release --test fuzz -- --ignored"]
fn long_results_json() {
    fuzz("results-json", long_cases(), json_cases(), |e| {
        check_results(e)
    });
}

// ------------------------------------------------------------------ merge's terminal text

/// Whether `line` is one `merge` writes itself (`fleet::view::text`, then `wrote …`), its
/// values inside it: a value from a file that breaks a line starts a line of its own, one
/// the tool did not write. `paths` are where the skipped inputs lie, as a skipped line
/// starts with its path.
fn tool_line(line: &str, paths: &[&str]) -> bool {
    let classes = smtlab::report::metrics::CLASSES.map(|c| c.label());
    let counted = line
        .split_once(' ')
        .is_some_and(|(n, rest)| n.parse::<usize>().is_ok() && rest.starts_with("host"));
    line.is_empty()
        || counted
        || [
            "SYNTHETIC DATA on ",
            "type ",
            "  grouping key: ",
            "WORKLOAD CLASS ",
            "  outlier ",
            "  slurm: ",
            "Skipped:",
            "note: ",
            "wrote ",
        ]
        .iter()
        .any(|p| line.starts_with(p))
        || classes.iter().any(|c| {
            line.starts_with(c) || line.strip_prefix("  ").is_some_and(|l| l.starts_with(c))
        })
        || paths
            .iter()
            .any(|p| line.strip_prefix("  ").is_some_and(|l| l.starts_with(p)))
}

/// Merge's terminal text from hostile fields: every line one the tool writes (no value
/// starts a line of its own), and no control character but the line breaks between them:
/// no escape sequence, bell, carriage return or tab. Markup inside a line is text there.
fn check_terminal(what: &str, text: &str, paths: &[&str]) -> Result<(), TestCaseError> {
    let c = text
        .chars()
        .find(|&c| c != '\n' && smtlab::render::terminal::is_unsafe(c));
    prop_assert!(c.is_none(), "{}: holds {:?}", what, c);
    for line in text.lines() {
        prop_assert!(
            tool_line(line, paths),
            "{}: a line merge did not write: {:?}",
            what,
            line
        );
    }
    prop_assert!(text.len() < 64 << 20, "{}: {} bytes", what, text.len());
    Ok(())
}

/// Texts a hostile results.json field holds: line breaks before a script (line injection on
/// the terminal, a raw HTML block in Markdown) with a title-setting OSC and a
/// screen-clearing CSI; a carriage return, a C1 CSI, a bidirectional override and a tab;
/// bare links and an address; Markdown's own syntax.
const HOSTILE_TEXTS: [&str; 4] = [
    "\n\n<script>alert(1)</script>\n\x1b]0;title\x07\x1b[2J",
    "\r\u{9b}31m\u{202e}\tx",
    "https://evil.example/x WWW.evil.example a@evil.example",
    "`\\[x](javascript:y)` # <b>",
];

/// The fixture with the text fields it lacks and merge reads: the host's name, microcode
/// and a Slurm job.
fn full_results() -> Value {
    let mut v = RESULTS.1.clone();
    let m = v["machine"].as_object_mut().unwrap();
    m.insert("hostname".into(), "h1".into());
    m.insert("microcode".into(), "0xde".into());
    v["slurm"] = serde_json::json!({
        "job_id": "12",
        "step_id": "0",
        "node": "n1",
        "usable_cpus": "0-1",
        "cgroup_cpus": "0-1",
        "cgroup_source": "/sys/fs/cgroup/job_12/cpuset.cpus.effective",
        "affinity": "0-1",
        "variables": {"SLURM_JOB_ID": "12", "SLURM_JOB_PARTITION": "batch"}
    });
    v
}

/// The pointer of every string in `v`.
fn string_leaves(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                string_leaves(x, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                string_leaves(x, format!("{at}/{i}"), out);
            }
        }
        Value::String(_) => out.push(at),
        _ => {}
    }
}

/// `smtlab merge` of `doc` in a directory named `host_dir`, an empty results.json beside
/// it (a skipped input) and a clean host (what merge says across hosts, such as mixed
/// versions; and a fleet left when `doc` is refused), then, when `report`, `smtlab report` of `doc`: the
/// terminal text, fleet.md, fleet.html, fleet.prom, summary.md and report.html each checked
/// for their destination.
fn check_merged(doc: &Value, host_dir: &str, report: bool) -> Result<(), TestCaseError> {
    let dir = scratch();
    let inputs = dir.path().join("in");
    let text = serde_json::to_string(doc).unwrap();
    let mut clean = full_results();
    clean["machine"]["hostname"] = "clean".into();
    for (d, t) in [
        (host_dir.to_string(), text.clone()),
        (format!("{host_dir}-empty"), String::new()),
        ("clean".into(), serde_json::to_string(&clean).unwrap()),
    ] {
        std::fs::create_dir_all(inputs.join(&d)).unwrap();
        std::fs::write(inputs.join(&d).join("results.json"), t).unwrap();
    }
    let out = dir.path().join("out");
    let prom = dir.path().join("fleet.prom");
    let cfg = smtlab::commands::merge::MergeCommand {
        inputs: vec![inputs.clone()],
        out: out.clone(),
        prometheus: Some(prom.clone()),
        json: false,
        command: format!("smtlab merge {}", inputs.display()),
    };
    let mut stdout = Vec::new();
    let r = smtlab::commands::merge::run(&cfg, &mut stdout);
    prop_assert!(r.is_ok(), "merge failed: {:#}", r.unwrap_err());
    let stdout = String::from_utf8(stdout).unwrap();
    let root = inputs.display().to_string();
    check_terminal("merge's terminal text", &stdout, &[&root])?;
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap();
    check_markdown_doc("fleet.md", &read(out.join("fleet.md")))?;
    check_page("fleet.html", &read(out.join("fleet.html")))?;
    let prom = read(prom);
    prop_assert!(control_in(&prom).is_none(), "fleet.prom: {:?}", prom);
    if !report {
        return Ok(());
    }
    match smtlab::report::render_json(&text) {
        Ok(r) => {
            check_markdown_doc("summary.md", &r.markdown)?;
            check_page("report.html", &r.html)?;
        }
        Err(e) => prop_assert!(
            e.downcast_ref::<smtlab::error::BadInput>().is_some(),
            "not bad input (exit 2): {:#}",
            e
        ),
    }
    Ok(())
}

/// Every text field of a results.json merge reads, planted with the first hostile text
/// one field at a time (through merge; the fields on one worker per CPU), and with each
/// hostile text in every field at once (through merge and report); the host's directory
/// named with it too (a name may hold anything but `/`).
#[test]
fn every_field_holding_each_hostile_text() {
    let base = full_results();
    let mut leaves = Vec::new();
    string_leaves(&base, String::new(), &mut leaves);
    assert!(leaves.len() > 700, "{} text fields", leaves.len());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for w in 0..workers {
            let (base, leaves, failed) = (&base, &leaves, &failed);
            s.spawn(move || {
                for (i, p) in leaves.iter().enumerate().skip(w).step_by(workers) {
                    let mut doc = base.clone();
                    *doc.pointer_mut(p).unwrap() = HOSTILE_TEXTS[0].into();
                    if let Err(e) = check_merged(&doc, "h", false) {
                        failed.lock().unwrap().push((i, format!("{p}: {e}")));
                    }
                }
            });
        }
    });
    let mut failed = failed.into_inner().unwrap();
    failed.sort();
    let mut failed: Vec<String> = failed.into_iter().map(|(_, f)| f).collect();
    let dir_name = |h: &str| format!("h{}", h.replace('/', "|"));
    for (i, h) in HOSTILE_TEXTS.iter().enumerate() {
        let mut doc = base.clone();
        for p in &leaves {
            *doc.pointer_mut(p).unwrap() = (*h).into();
        }
        for d in [dir_name(h), "h".to_string()] {
            if let Err(e) = check_merged(&doc, &d, true) {
                failed.push(format!("text {i} in every field, directory {d:?}: {e}"));
            }
        }
        let mut doc = base.clone();
        doc["machine"]["hostname"] = Value::Null;
        if let Err(e) = check_merged(&doc, &dir_name(h), true) {
            failed.push(format!("text {i} as the directory naming the host: {e}"));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed; the first: {}\nall:\n{}",
        failed.len(),
        leaves.len() + 3 * HOSTILE_TEXTS.len(),
        failed[0],
        failed.join("\n")
    );
}
