//! clap value parsers for every option that takes a number, a duration or one of a closed
//! set: each checks the value's range as it is parsed, so a bad value is refused naming the
//! option, the value and what is valid (`--threads -1: expected a whole number between 1
//! and 4096 (…)`) instead of clap's "unexpected argument '-1' found". Options taking
//! numbers also set `allow_hyphen_values`, so that `-1` and `-0.1` reach these parsers.
//!
//! The parsers return only the problem; [`crate::cli`] puts the option and the value in
//! front of it, in one wording for every option.

use crate::duration::{self, MIN_MEASURED};
use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

mod offered;
pub use offered::*;

/// Why nice values stop where they do.
pub const WHY_NICE: &str = "the kernel's nice range; negative values need CAP_SYS_NICE";

/// A whole number between `min` and `max` (inclusive), as `T`. `why` says where the
/// bound comes from (empty: nothing to say). Accepts `_` between digits (`100_000`).
pub fn whole<T>(
    min: i128,
    max: i128,
    why: &'static str,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<i128> + Clone + Send + Sync + 'static,
{
    move |s: &str| {
        let range = || {
            let why = if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            };
            format!("expected a whole number between {min} and {max}{why}")
        };
        let t = s.trim().replace('_', "");
        let digits = t.strip_prefix(['-', '+']).unwrap_or(&t);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            let what = if t.parse::<f64>().is_ok() {
                "not a whole number"
            } else {
                "not a number"
            };
            return Err(format!("{what}; {}", range()));
        }
        // More digits than i128 holds is out of range as surely as max + 1.
        match t.parse::<i128>() {
            Ok(v) if (min..=max).contains(&v) => T::try_from(v).map_err(|_| range()),
            _ => Err(range()),
        }
    }
}

/// A fraction between 0 and 1 (inclusive), e.g. `0.0001`.
pub fn fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("expected a fraction between 0 and 1, e.g. 0.0001".into()),
    }
}

/// What [`duration::parse_duration`] takes, at least `min` (None: 0 for "none" or any
/// positive duration), with the accepted range in the message.
fn duration_at_least(s: &str, min: Option<Duration>, why: &str) -> Result<Duration, String> {
    let range = || match min {
        Some(m) => format!(
            "expected a duration between {} and 366 days, e.g. {}",
            duration::format_duration(m),
            // Examples the bound allows (`--budget 9s` once suggested 5s and 500ms).
            if m >= Duration::from_secs(10) {
                "90s, 5m, 20m"
            } else {
                "5s, 500ms, 2m, 1.5s"
            }
        ),
        None => "expected 0 (none) or a duration up to 366 days, e.g. 1s, 500ms".to_string(),
    };
    // 0 is allowed, so "must be greater than zero" would contradict the range.
    if min.is_none() && s.trim().starts_with('-') {
        return Err(format!("negative; {}", range()));
    }
    let parsed = match min {
        Some(_) => duration::parse_duration(s),
        None => duration::parse_duration_or_zero(s),
    };
    match parsed {
        Ok(d) if min.is_none_or(|m| d >= m) => Ok(d),
        Ok(_) => Err(format!("{}; {why}", range())),
        Err(e) => Err(format!("{}; {}", e.reason, range())),
    }
}

/// A measured window (`--duration`, an interval between rows, a c2c budget): at least
/// [`MIN_MEASURED`].
pub fn measured(s: &str) -> Result<Duration, String> {
    duration_at_least(
        s,
        Some(MIN_MEASURED),
        "shorter windows measure timer rounding, not the workload",
    )
}

/// A warm-up: `0` for none, or any positive duration.
pub fn warmup(s: &str) -> Result<Duration, String> {
    duration_at_least(s, None, "")
}

/// A study budget: at least 10 s (`--quick` is the shortest study).
pub fn budget(s: &str) -> Result<Duration, String> {
    duration_at_least(
        s,
        Some(crate::limits::MIN_STUDY_BUDGET),
        "use --quick for the shortest study",
    )
}

/// A byte size (`1048576`, `512K`, `1MiB`, `1g`) of at least one byte, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bytes {
    /// Sized from the topology by the command.
    Auto,
    Exactly(usize),
}

/// Parses a [`Bytes`].
pub fn bytes_or_auto(s: &str) -> Result<Bytes, String> {
    let t = s.trim();
    if t == "auto" {
        return Ok(Bytes::Auto);
    }
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [
        ("gib", 1usize << 30),
        ("mib", 1 << 20),
        ("kib", 1 << 10),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n.trim().to_string(), *m)))
    .unwrap_or((lower.clone(), 1));
    let expected = "expected a size of at least 1 byte like 1048576, 512K or 1MiB, or `auto`";
    if !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()) {
        return match num.parse::<usize>().ok().and_then(|n| n.checked_mul(mult)) {
            Some(0) => Err(expected.to_string()),
            Some(n) => Ok(Bytes::Exactly(n)),
            None => Err(format!(
                "more bytes than this machine can address; {expected}"
            )),
        };
    }
    Err(format!("not a size; {expected}"))
}

/// `lockscan --lock-stats`: the two modes lockscan reports (the others time waits).
pub fn lock_stats(s: &str) -> Result<crate::locks::StatsMode, String> {
    use crate::locks::StatsMode;
    match s.trim().parse::<StatsMode>() {
        Ok(m @ (StatsMode::Off | StatsMode::Counters)) => Ok(m),
        Ok(m) => Err(format!(
            "`{m}` times waits that lockscan does not report; expected off or counters"
        )),
        Err(_) => Err(format!(
            "unknown mode `{}`; expected off or counters",
            s.trim()
        )),
    }
}

/// One member of a closed set, through the type's own `FromStr`, whose error lists the
/// valid members.
pub fn member<T>(s: &str) -> Result<T, String>
where
    T: FromStr,
    T::Err: Display,
{
    s.trim().parse::<T>().map_err(|e| e.to_string())
}

/// Counts separated by commas (`0,1,2,4`), each between `min` and `max`.
pub fn counts(
    min: i128,
    max: i128,
    why: &'static str,
) -> impl Fn(&str) -> Result<Counts, String> + Clone + Send + Sync + 'static {
    let one = whole::<usize>(min, max, why);
    move |s: &str| {
        s.split(',')
            .map(|t| one(t).map_err(|e| format!("`{}`: {e}", crate::quote::shorten(t.trim()))))
            .collect::<Result<Vec<_>, _>>()
            .map(Counts)
    }
}

/// Several members of a closed set (its own type, so that clap takes it as one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct List<T>(pub Vec<T>);

/// `rwcache --scheme`: `all` or a list of schemes.
pub fn schemes(s: &str) -> Result<List<crate::rwcache::SchemeKind>, String> {
    crate::rwcache::parse_schemes(s)
        .map(List)
        .map_err(|e| e.to_string())
}

/// `lockscan --lock`: `all` or a list of lock kinds.
pub fn locks(s: &str) -> Result<List<crate::locks::LockKind>, String> {
    use crate::locks::LockKind;
    if s.trim() == "all" {
        return Ok(List(LockKind::ALL.to_vec()));
    }
    s.split(',')
        .map(member::<LockKind>)
        .collect::<Result<_, _>>()
        .map(List)
}

/// A CPU list (`0-3,8-11`) or hex mask (`0xff`) naming at least one CPU.
pub fn cpus(s: &str) -> Result<crate::cpuset::CpuSet, String> {
    match crate::cpuset::CpuSet::parse_user(s) {
        Ok(set) if set.is_empty() => Err("names no CPU; expected a list like 0-3,8-11".into()),
        Ok(set) => Ok(set),
        Err(e) => Err(e.to_string()),
    }
}

/// Refuses a comma-separated `list` with an empty item (`a,,b`, a trailing comma): it
/// was dropped without a word, so a typo ran one layout or workload fewer.
pub fn no_empty_items(option: &str, list: &str) -> Result<(), crate::error::BadInput> {
    match list.split(',').position(|item| item.trim().is_empty()) {
        None => Ok(()),
        Some(i) => Err(crate::error::BadInput(format!(
            "{option} {}: item {} is empty (`,,`, or a comma at an end); list each item once, \
             separated by single commas",
            crate::quote::shorten(list),
            i + 1
        ))),
    }
}

/// A list of counts from [`counts`] (its own type, so that clap takes it as one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts(pub Vec<usize>);

/// A byte size as `--scan-bytes` takes it (`1048576`, `512K`, `1MiB`, `2g`; not `auto`),
/// through the same parser as the option (public for the fuzz tests).
pub fn parse_bytes(s: &str) -> Result<usize, String> {
    match bytes_or_auto(s) {
        Ok(Bytes::Exactly(n)) => Ok(n),
        Ok(Bytes::Auto) => Err(format!("`{}`: not a size", s.trim())),
        Err(e) => Err(format!("`{}`: {e}", s.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn whole_numbers_in_range_and_everything_else_with_the_range() {
        let threads = whole::<usize>(1, 4096, "why");
        assert_eq!(threads("4096"), Ok(4096));
        assert_eq!(threads(" 1_000 "), Ok(1000));
        for bad in [
            "-1",
            "0",
            "4097",
            "99999999999999999999",
            "999999999999999999999999999999999999999999",
        ] {
            assert_eq!(
                threads(bad).unwrap_err(),
                "expected a whole number between 1 and 4096 (why)",
                "{bad}"
            );
        }
        assert!(
            threads("1.5")
                .unwrap_err()
                .starts_with("not a whole number")
        );
        assert!(threads("x").unwrap_err().starts_with("not a number"));
        assert!(threads("").unwrap_err().starts_with("not a number"));
        let nice = whole::<i32>(-20, 19, "");
        assert_eq!(nice("-20"), Ok(-20));
        assert_eq!(
            nice("-21").unwrap_err(),
            "expected a whole number between -20 and 19"
        );
    }

    #[test]
    fn fractions_durations_and_lists() {
        assert_eq!(fraction("0.5"), Ok(0.5));
        assert!(fraction("-0.1").unwrap_err().contains("between 0 and 1"));
        assert!(fraction("NaN").is_err());
        assert_eq!(measured("2s"), Ok(Duration::from_secs(2)));
        for bad in ["1ns", "-1s", "0", "x"] {
            let e = measured(bad).unwrap_err();
            assert!(e.contains("between 10ms and 366 days"), "{bad}: {e}");
        }
        assert_eq!(warmup("0"), Ok(Duration::ZERO));
        assert_eq!(warmup("250us"), Ok(Duration::from_micros(250)));
        assert!(
            warmup("-5")
                .unwrap_err()
                .starts_with("negative; expected 0 (none) or a duration")
        );
        let e = budget("5s").unwrap_err();
        assert!(
            e.contains("--quick") && e.contains("e.g. 90s, 5m, 20m"),
            "{e}"
        );
        let c = counts(0, 4096, "");
        assert_eq!(c("0, 1,4"), Ok(Counts(vec![0, 1, 4])));
        assert!(c("0,-1").unwrap_err().starts_with("`-1`: expected"));
        assert_eq!(bytes_or_auto("1MiB"), Ok(Bytes::Exactly(1 << 20)));
        assert_eq!(bytes_or_auto("auto"), Ok(Bytes::Auto));
        for bad in ["0", "-1", "x", "18446744073709551615G"] {
            assert!(bytes_or_auto(bad).unwrap_err().contains("1MiB"), "{bad}");
        }
    }

    #[test]
    fn empty_list_items_are_refused() {
        assert!(no_empty_items("--configs", "one-per-core,all").is_ok());
        for (bad, item) in [("a,,b", 2), (",a", 1), ("a,", 2), ("a, ,b", 2), ("", 1)] {
            let e = no_empty_items("--configs", bad).unwrap_err().0;
            assert!(e.contains(&format!("item {item} is empty")), "{bad}: {e}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = whole::<u64>(0, i128::from(u64::MAX), "")(&s);
            let _ = measured(&s);
            let _ = warmup(&s);
            let _ = fraction(&s);
            let _ = counts(0, 10, "")(&s);
        }
    }
}
