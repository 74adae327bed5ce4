//! Renderers shared by every command: the one table type ([`Table`]) and number formatting.
//! Pure functions from data to text.

pub mod export;
pub mod markdown;
pub mod prometheus;
mod table;
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

#[cfg(test)]
mod tests {
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
