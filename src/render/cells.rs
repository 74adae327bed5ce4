//! Table cells shared by several views: durations and dates as the reports print them.
//! Pure.

/// Seconds with one decimal: `12.3 s`.
pub fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix seconds (proleptic Gregorian, no time zone data).
pub fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    // Howard Hinnant's civil_from_days
    // (https://howardhinnant.github.io/date_algorithms.html#civil_from_days).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A number read from a file, as a refusal quotes it: short whatever its size (`1e308`,
/// not 309 digits), `null (not a number)` for NaN, which a file writes as `null`.
pub fn file_value(v: f64) -> String {
    if v.is_nan() {
        "null (not a number)".into()
    } else if v != 0.0 && v.is_finite() && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn seconds_have_one_decimal() {
        assert_eq!(secs(0), "0.0 s");
        assert_eq!(secs(12_345_000_000), "12.3 s");
    }
}
