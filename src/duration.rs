//! Durations as users type them: `5` (seconds), `5s`, `500ms`, `250us`, `2m`, `1.5s`, `1h`.
//! The one grammar of every `--duration`, `--warmup`, `--interval` and `--budget`.

use std::time::Duration;

/// A duration that could not be parsed, with the accepted forms in the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration `{input}`: {reason} (examples: 5, 5s, 500ms, 2m, 1.5s)")]
pub struct DurationError {
    pub input: String,
    pub reason: String,
}

/// Parses `N` (seconds) or `N<unit>` with unit `ns`, `us`, `ms`, `s`, `m`, `h`; `N` may have a
/// fractional part. Zero, negative, NaN and absurdly large (> 1 year) values are rejected.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let err = |reason: &str| DurationError {
        input: s.to_string(),
        reason: reason.to_string(),
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(err("empty"));
    }
    if t.starts_with('-') {
        return Err(err("must be greater than zero"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(err("expected a number first"));
    }
    if num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1 {
        return Err(err("malformed number"));
    }
    let secs_per_unit = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(err(&format!(
                "unknown unit `{other}` (use ns, us, ms, s, m, h)"
            )));
        }
    };
    let v: f64 = num.parse().map_err(|_| err("malformed number"))?;
    let secs = v * secs_per_unit;
    if secs <= 0.0 {
        return Err(err("must be greater than zero"));
    }
    if secs > 366.0 * 86_400.0 {
        return Err(err("longer than a year"));
    }
    // Integer arithmetic where possible so `500ms` is exactly 500 ms.
    if !num.contains('.') {
        let n: u64 = num.parse().map_err(|_| err("malformed number"))?;
        let d = match unit.trim() {
            "ms" => Duration::from_millis(n),
            "us" | "µs" => Duration::from_micros(n),
            "ns" => Duration::from_nanos(n),
            _ => Duration::from_secs(n * secs_per_unit as u64),
        };
        return Ok(d);
    }
    // Below 1 ns rounds to zero, which callers were promised never to get.
    let d = Duration::from_secs_f64(secs);
    if d.is_zero() {
        return Err(err("shorter than 1ns"));
    }
    Ok(d)
}

/// The shortest measured window smtlab accepts: below a few scheduler ticks (4 ms at
/// HZ=250) rates are rounding noise (`burn -d 1ns` once printed "CPU% 852.7").
pub const MIN_MEASURED: Duration = Duration::from_millis(10);

/// A measurement length (`--duration`): [`parse_duration`], at least [`MIN_MEASURED`].
/// Errors name `option`.
pub fn parse_measured(s: &str, option: &str) -> Result<Duration, crate::error::BadInput> {
    let d = parse_duration(s).map_err(|e| crate::error::BadInput(format!("{option}: {e}")))?;
    if d < MIN_MEASURED {
        return Err(crate::error::BadInput(format!(
            "{option} {}: at least 10ms (shorter windows measure timer rounding, not the workload)",
            s.trim()
        )));
    }
    Ok(d)
}

/// Like [`parse_duration`], but `0` (with or without a unit) means zero: for warm-ups and
/// other optional phases.
pub fn parse_duration_or_zero(s: &str) -> Result<Duration, DurationError> {
    let t = s.trim();
    let num = t.trim_end_matches(|c: char| c.is_alphabetic() || c == 'µ');
    if !num.is_empty() && num.chars().all(|c| c == '0' || c == '.') && num.contains('0') {
        // Still reject a bad unit (`0x`).
        return parse_duration(&t.replacen(num, "1", 1)).map(|_| Duration::ZERO);
    }
    parse_duration(s)
}

/// Formats a duration as a user types it, the way `parse_duration` reads it back: whole
/// hours and minutes as `1h` and `10m`, else `5s`, `500ms`, `250us`, `7ns`.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    let s = d.as_secs();
    let whole = d.subsec_nanos() == 0;
    if whole && s >= 3600 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if whole && s >= 60 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepted_forms() {
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(
            parse_duration(" 500ms ").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0.5").unwrap(), Duration::from_millis(500));
    }

    #[test]
    fn rejected_forms_say_why() {
        for (s, why) in [
            ("", "empty"),
            ("0", "greater than zero"),
            ("0ms", "greater than zero"),
            ("-1s", "greater than zero"),
            ("5x", "unknown unit `x`"),
            ("s", "number first"),
            ("1.2.3s", "malformed"),
            (".5s", "malformed"),
            ("9999999h", "year"),
            ("0.0000000001", "1ns"),
        ] {
            let e = parse_duration(s).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("500ms"), "{s}: {e}");
        }
    }

    #[test]
    fn zero_where_allowed() {
        assert_eq!(parse_duration_or_zero("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration_or_zero("0ms").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_duration_or_zero("2s").unwrap(),
            Duration::from_secs(2)
        );
        assert!(parse_duration_or_zero("0x").is_err());
        assert!(parse_duration_or_zero("").is_err());
    }

    proptest! {
        #[test]
        fn format_round_trips(ns in 1u64..1_000_000_000_000) {
            let d = Duration::from_nanos(ns);
            prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
        }

        #[test]
        fn never_panics(s in "\\PC{0,12}") {
            let _ = parse_duration(&s);
        }
    }
}
