//! Renderers shared by every command: the one table type ([`Table`]) and number formatting.
//! Pure functions from data to text.

pub mod blocks;
pub mod cells;
pub mod export;
mod interval;
pub mod markdown;
pub mod markup;
#[cfg(test)]
pub(crate) mod printed;
pub mod prometheus;
pub mod svg;
mod table;
pub mod terminal;
pub use interval::{ci_label, ci_with_runs, level_text, ratio_text};
pub use table::{Align, NONE, Table};

/// A count with thousands separators: `74,635`.
pub fn thousands(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A rate with a sensible number of digits and SI suffix: `5.73 M`, `212`, `36.4 k`.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let (x, suf) = if a >= 1e9 {
        (v / 1e9, " G")
    } else if a >= 1e6 {
        (v / 1e6, " M")
    } else if a >= 1e4 {
        (v / 1e3, " k")
    } else {
        (v, "")
    };
    if suf.is_empty() {
        if a >= 100.0 || a == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string()
        }
    } else {
        format!("{x:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
            + suf
    }
}

/// `x` to `digits` significant figures, never in exponent form: `20.0`, `0.0412`, `1234`
/// (digits left of the point are kept).
pub fn sig(x: f64, digits: u32) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    let decimals = (digits as i32 - 1 - mag).max(0) as usize;
    format!("{x:.decimals$}")
}

/// The SI prefix a value is shown with: its scale and suffix.
fn si_prefix(v: f64) -> (f64, &'static str) {
    let a = v.abs();
    if a >= 1e9 {
        (1e9, " G")
    } else if a >= 1e6 {
        (1e6, " M")
    } else if a >= 1e4 {
        (1e3, " k")
    } else {
        (1.0, "")
    }
}

/// A value with an SI prefix to `digits` significant figures: `20.0 M`, `59.9 k`, `812`.
pub fn si_sig(v: f64, digits: u32) -> String {
    let (scale, suffix) = si_prefix(v);
    format!("{}{suffix}", sig(v / scale, digits))
}

/// A median to 3 significant figures and its spread to 2, both in the median's unit:
/// `20.0 M ± 0.40 M`; the median alone when the spread is zero or unknown.
pub fn pm_sig(median: f64, spread: f64) -> String {
    let (scale, suffix) = si_prefix(median);
    if spread.is_finite() && spread > 0.0 {
        format!(
            "{}{suffix} ± {}{suffix}",
            sig(median / scale, 3),
            sig(spread / scale, 2)
        )
    } else {
        format!("{}{suffix}", sig(median / scale, 3))
    }
}

/// A value that may not have been measured, formatted by `f`, or `-` when it was not.
pub fn or_dash<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

/// A wall-clock span for people: `850 ms`, `42 s`, `8 min 12 s`, `2 h 5 min`.
pub fn wall(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s == 0 {
        format!("{} ms", d.as_millis())
    } else if s < 120 {
        format!("{s} s")
    } else if s < 2 * 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else {
        format!("{} h {} min", s / 3600, s % 3600 / 60)
    }
}

/// Nanoseconds as `85 ns`, `4.7 ms`, `1.20 s`.
/// A latency from a histogram that may be empty: 0 means no operation was timed (a run
/// cut short, or a fake engine that never ran the workload), shown as `–`.
pub fn latency_ns(ns: u64) -> String {
    if ns == 0 {
        "–".into()
    } else {
        duration_ns(ns as f64)
    }
}

/// A duration in ns as `0.31 ns`, `420 ns`, `1.5 µs`, `2.0 ms`, `1.25 s`. Below 1 ns two
/// significant figures, so a sub-nanosecond time per operation is never shown as `0 ns`.
pub fn duration_ns(ns: f64) -> String {
    if ns > 0.0 && ns < 1.0 {
        format!("{} ns", sig(ns, 2))
    } else if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// `1 thread`, `2 threads`: a count with its noun, singular or plural.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Caveats several commands attach to their results, worded in this one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caveat {
    /// A hypervisor's CPU flag is set; `kind` from /sys/hypervisor/type or the CPU
    /// vendor string when known. The host can move vCPUs between physical CPUs and run two
    /// of them on one core's SMT siblings without the guest seeing it (seen on this
    /// project's KVM CI: c2c between its two vCPUs moved between 11 ns, an SMT pair's
    /// shared L1, and 110 ns within minutes), and it preempts vCPUs.
    Hypervisor { kind: Option<String> },
    /// A debug build: the hot loops are unoptimised.
    DebugBuild,
    /// A cpufreq governor other than `performance`.
    Governor { name: String },
}

impl std::fmt::Display for Caveat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Caveat::Hypervisor { kind } => write!(
                f,
                "running under a hypervisor{}: the host can move these vCPUs and place two of \
                 them on one core's SMT siblings without the guest seeing it, so cache-line \
                 latency and lock results can change between runs, and vCPU preemption adds \
                 to what is measured",
                kind.as_deref()
                    .map(|k| format!(" ({k})"))
                    .unwrap_or_default()
            ),
            Caveat::DebugBuild => f.write_str(
                "debug build: numbers are far below what a release build measures; run \
                 `cargo run --release -- study`",
            ),
            Caveat::Governor { name } => write!(
                f,
                "frequency governor is `{name}`, not `performance`: clock changes add noise \
                 between runs"
            ),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Cells and ratio phrases the experiments' views share (lockscan, rwcache, c2c, neighbors).

/// A median ± MAD cell with SI prefixes, `5.2 M ± 0.1 M`; the median alone without spread;
/// `–` when not finite.
pub fn summary_cell(s: &crate::stats::Summary) -> String {
    if !s.median.is_finite() {
        return NONE.into();
    }
    if s.mad.is_finite() && s.mad > 0.0 {
        format!("{} ± {}", si(s.median), si(s.mad))
    } else {
        si(s.median)
    }
}

/// A ratio with its interval as a cell, `0.52× (0.48–0.55)`, or `–`.
pub fn ci_cell(c: Option<&crate::stats::Ci>) -> String {
    match c {
        Some(c) if c.estimate.is_finite() => {
            format!("{:.2}× ({:.2}–{:.2})", c.estimate, c.low, c.high)
        }
        _ => NONE.into(),
    }
}

/// A comparison as a cell, `0.98× (95 % CI 0.95–1.01): no effect`, or `–`.
pub fn comparison_cell(c: Option<&crate::stats::Comparison>) -> String {
    match c {
        Some(c) if c.estimate.is_finite() => format!(
            "{}× ({}): {}",
            ratio_text(c.estimate),
            c.interval_text(),
            c.effect
        ),
        _ => NONE.into(),
    }
}

/// Two decimals, `–` when not finite: an index or a ratio in a table.
pub fn fixed2(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        NONE.into()
    }
}

/// A share 0–1 as a percentage with `decimals` decimals and the sign: `31.8%`.
pub fn percent(share: f64, decimals: usize) -> String {
    format!("{}%", fixed(share * 100.0, decimals))
}

/// A share 0–1 as a percentage figure without the sign, for a column headed `%`: `31.8`.
pub fn percent_figure(share: f64, decimals: usize) -> String {
    fixed(share * 100.0, decimals)
}

/// Nanoseconds as a bare figure, one decimal below 100: `42.5`, `812`.
pub fn ns_figure(x: f64) -> String {
    if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// A finding's comparisons at a glance: one row per comparison with what was compared, the
/// ratio, its interval, the number of paired runs and the class (loss, no effect, …).
pub fn comparisons_table<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a crate::stats::Comparison)>,
) -> Table {
    let mut t = Table::new(&["COMPARED", "RATIO", "INTERVAL", "N", "CLASS"]);
    for (what, c) in rows {
        let interval = if c.n < 2 {
            NONE.to_string()
        } else {
            format!(
                "{}–{} ({})",
                ratio_text(c.low),
                ratio_text(c.high),
                c.interval_kind()
            )
        };
        t.push(vec![
            what.to_string(),
            format!("{}×", ratio_text(c.estimate)),
            interval,
            c.n.to_string(),
            c.effect.to_string(),
        ]);
    }
    t
}

/// Median ± MAD, both in the median's unit, with the run count: `20.0 M ± 0.40 M (n = 3)`,
/// or the median alone when there is no spread.
pub fn pm_n(s: &crate::stats::Summary) -> String {
    format!("{} (n = {})", pm_sig(s.median, s.mad), s.n)
}

/// A median with an SI prefix to 3 significant figures and its MAD relative to it, to 2:
/// `12.3 M ± 1.2 %`; the median alone when the spread is zero or unknown.
pub fn pm_rel(median: f64, mad: f64) -> String {
    if median == 0.0 || !mad.is_finite() || mad <= 0.0 {
        return si_sig(median, 3);
    }
    format!(
        "{} ± {} %",
        si_sig(median, 3),
        sig(100.0 * mad / median.abs(), 2)
    )
}

/// A noise band as `±5 %` (`±2.5 %`).
pub fn band(noise: f64) -> String {
    let p = noise * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("±{p:.0} %")
    } else {
        format!("±{p:.1} %")
    }
}

/// A ratio as `1.31×` (two decimals below 10, as [`ratio_text`]).
pub fn times(x: f64) -> String {
    format!("{}×", ratio_text(x))
}

/// A comparison's interval with its label and run count: `95 % CI 1.95–2.03, n = 7`,
/// `indicative (n = 2) 0.30–0.85`; the label and any small-sample wording are the
/// comparison's own.
pub fn interval_n(c: &crate::stats::Comparison) -> String {
    let text = c.interval_text();
    if text.contains("n = ") {
        text
    } else {
        format!("{text}, n = {}", c.n)
    }
}

/// A size in binary units to three significant digits, exact sizes without decimals:
/// `23.5 GiB`, `512 MiB`, `4 KiB`, `1.50 KiB`, `0 B`. The one byte format.
pub fn bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if b >= size {
            let v = b as f64 / size as f64;
            return if b.is_multiple_of(size) || v >= 100.0 {
                format!("{v:.0} {name}")
            } else if v >= 10.0 {
                format!("{v:.1} {name}")
            } else {
                format!("{v:.2} {name}")
            };
        }
    }
    format!("{b} B")
}

/// [`bytes`] with a sign when negative: `−512 MiB`.
pub fn signed_bytes(b: i64) -> String {
    if b < 0 {
        format!("−{}", bytes(b.unsigned_abs()))
    } else {
        bytes(b as u64)
    }
}

/// A decimal rate of bytes, as bandwidth is usually quoted: `12.3 GB/s`, `850 MB/s`.
pub fn bytes_per_sec(v: f64) -> String {
    let (scale, suffix) = si_prefix(v);
    format!("{} {}B/s", sig(v / scale, 3), suffix.trim())
}

/// A share (0–1) as a percentage, one decimal below 10 %: `12%`, `0.4%`, `0%`.
pub fn pct(share: f64) -> String {
    let p = share * 100.0;
    if p.abs() < 10.0 && p != 0.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_findings_indicative_interval_has_one_pair_of_brackets() {
        use crate::stats::{Comparison, Thresholds};
        // Two paired rounds: an indicative interval. The table has an N column, so the
        // interval cell names its kind once and leaves the count to that column.
        let two = Comparison::of_paired_ratios(&[0.97, 1.0], Thresholds::SLOWDOWN, 0.9).unwrap();
        let five = Comparison::of_paired_ratios(
            &[0.97, 1.0, 0.98, 0.99, 0.985],
            Thresholds::SLOWDOWN,
            0.9,
        )
        .unwrap();
        let t = super::comparisons_table([("two rounds", &two), ("five rounds", &five)]);
        let text = t.text();
        let row = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .to_string()
        };
        let r2 = row("two rounds");
        assert!(r2.contains("(indicative)"), "{text}");
        assert_eq!(r2.matches('(').count(), 1, "{text}");
        assert_eq!(r2.split_whitespace().rev().nth(1), Some("2"), "{text}");
        assert!(row("five rounds").contains("(90 % CI)"), "{text}");
    }

    #[test]
    fn significant_figures() {
        assert_eq!(super::sig(19.979, 3), "20.0");
        assert_eq!(super::sig(0.401034, 2), "0.40");
        assert_eq!(super::sig(1234.0, 3), "1234");
        assert_eq!(super::sig(0.0412, 3), "0.0412");
        assert_eq!(super::si_sig(59_911.0, 3), "59.9 k");
        assert_eq!(super::pm_sig(19_979_000.0, 401_034.0), "20.0 M ± 0.40 M");
        assert_eq!(super::pm_sig(812.0, 0.0), "812");
    }

    use super::*;

    #[test]
    fn wall_spans_read_naturally() {
        use std::time::Duration;
        assert_eq!(wall(Duration::from_millis(850)), "850 ms");
        assert_eq!(wall(Duration::from_secs(42)), "42 s");
        assert_eq!(wall(Duration::from_secs(492)), "8 min 12 s");
        assert_eq!(wall(Duration::from_secs(7500)), "2 h 5 min");
    }

    #[test]
    fn numbers() {
        assert_eq!(thousands(74635), "74,635");
        assert_eq!(thousands(212), "212");
        assert_eq!(si(5_730_000.0), "5.73 M");
        assert_eq!(si(212.0), "212");
        assert_eq!(si(36_448.0), "36.448 k");
        assert_eq!(duration_ns(4_700_000.0), "4.7 ms");
    }
}

/// A median to 3 significant figures and its spread (MAD) to 2, in the same unit, with no
/// SI prefix: `4.65 ± 0.01`, `12040 ± 310` (see [`pm_sig`] for prefixed values).
pub fn pm_plain(median: f64, spread: f64) -> String {
    format!("{} ± {}", sig(median, 3), sig(spread, 2))
}

/// `word` for `n` of them: `CPU` for one, `CPUs` otherwise (the number left to the caller).
pub fn plural(word: &str, n: usize) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// A count with a noun whose plural is not `+s`: `1 process`, `3 processes`.
pub fn count_of(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod words_tests {
    #[test]
    fn counts_plurals_and_spreads() {
        assert_eq!(super::plural("CPU", 1), "CPU");
        assert_eq!(super::plural("CPU", 0), "CPUs");
        assert_eq!(super::count_of(1, "process", "processes"), "1 process");
        assert_eq!(super::count_of(3, "process", "processes"), "3 processes");
        assert_eq!(super::pm_plain(4.6512, 0.0123), "4.65 ± 0.012");
        assert_eq!(super::pm_plain(12_040.0, 310.0), "12040 ± 310");
    }
}

// ---------------------------------------------------------------------------------------
// Fixed decimals, bounds, clock times and raw export values: the rules the top, fleet,
// compare and yield views and the SVG charts share.

/// `x` with `decimals` decimals, never a negative zero (`-0.0` reads as a value below zero
/// that was measured): `3.1`, `0.0`, `12`.
pub fn fixed(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// Bounds with `decimals` decimals, `1.2–3.4`, or one figure when both round alike: `2.0`.
pub fn fixed_bounds(lo: f64, hi: f64, decimals: usize) -> String {
    let (a, b) = (fixed(lo, decimals), fixed(hi, decimals));
    if a == b { a } else { format!("{a}–{b}") }
}

/// Bounds on a share (0–1) as whole percentages without the sign, for a column headed
/// `%`: `62–81`, or `62` when both round alike.
pub fn percent_bounds_figure(lo: f64, hi: f64) -> String {
    fixed_bounds(lo * 100.0, hi * 100.0, 0)
}

/// Bounds on a share (0–1) as whole percentages in a sentence: `62–81 %`, `62 %`.
pub fn percent_bounds(lo: f64, hi: f64) -> String {
    format!("{} %", percent_bounds_figure(lo, hi))
}

/// A coordinate or length in a drawing (SVG): one decimal, `0.0` for a value that is not
/// finite, so a bad input draws at the origin instead of writing `NaN` into the file.
pub fn coord(x: f64) -> String {
    fixed(if x.is_finite() { x } else { 0.0 }, 1)
}

/// The time of day in UTC from Unix milliseconds: `14:03:27 UTC`.
pub fn utc_time_of_day(unix_ms: u64) -> String {
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

/// A value as the CSV export writes it: every digit (Rust's shortest form that reads back
/// as the same `f64`), [`NONE`] — an empty field — when it was not measured.
pub fn raw(v: Option<f64>) -> String {
    v.map_or_else(|| NONE.to_string(), |x| x.to_string())
}

/// A comparison as three table cells, ratio, interval and class (`1.31×`,
/// `95 % CI 1.25–1.37`, `gain`); `–`, `–`, `not measured` when there is none.
pub fn comparison_cells(c: Option<&crate::stats::Comparison>) -> [String; 3] {
    match c {
        Some(c) if c.estimate.is_finite() => {
            [times(c.estimate), c.interval_text(), c.effect.to_string()]
        }
        _ => [NONE.into(), NONE.into(), "not measured".into()],
    }
}

/// A summary's median ± MAD, both through one unit's formatter: `1.20 s ± 30.0 ms`.
pub fn median_mad(s: &crate::stats::Summary, f: impl Fn(f64) -> String) -> String {
    format!("{} ± {}", f(s.median), f(s.mad))
}

/// A summary's extremes through one unit's formatter: `1.18 s … 1.25 s`.
pub fn min_max(s: &crate::stats::Summary, f: impl Fn(f64) -> String) -> String {
    format!("{} … {}", f(s.min), f(s.max))
}

/// A value in its unit to `digits` significant figures: a duration for `ns` (`1.20 s`),
/// else the figure and the unit (`36.4 k events/s`).
pub fn in_unit(x: f64, unit: &str, digits: u32) -> String {
    if unit == "ns" {
        duration_ns(x)
    } else {
        format!("{} {unit}", si_sig(x, digits))
    }
}

#[cfg(test)]
mod figures_tests {
    use super::*;

    #[test]
    fn spreads_carry_two_figures() {
        let s = crate::stats::Summary::of(&[19.5e6, 19.979e6, 20.4e6]).unwrap();
        assert!(pm_n(&s).starts_with("20.0 M ± "), "{}", pm_n(&s));
    }

    #[test]
    fn fixed_never_shows_a_negative_zero() {
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(-0.04, 1), "0.0");
        assert_eq!(fixed(-0.4, 0), "0");
        assert_eq!(fixed(-0.6, 0), "-1");
        assert_eq!(fixed(1.2345, 2), "1.23");
    }

    #[test]
    fn bounds_collapse_when_they_round_alike() {
        assert_eq!(fixed_bounds(1.21, 3.44, 1), "1.2–3.4");
        assert_eq!(fixed_bounds(2.01, 1.99, 1), "2.0");
        assert_eq!(percent_bounds_figure(0.62, 0.81), "62–81");
        assert_eq!(percent_bounds(0.621, 0.624), "62 %");
        assert_eq!(percent_bounds(0.62, 0.81), "62–81 %");
    }

    #[test]
    fn coordinates_clocks_and_raw_values() {
        assert_eq!(coord(f64::NAN), "0.0");
        assert_eq!(coord(-0.01), "0.0");
        assert_eq!(coord(12.345), "12.3");
        assert_eq!(utc_time_of_day(86_400_000 + 3_723_000), "01:02:03 UTC");
        assert_eq!(raw(Some(0.1)), "0.1");
        assert_eq!(raw(None), NONE);
    }
}
