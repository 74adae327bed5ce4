//! Reading a number out of the command's output: pgbench's `tps`, sysbench's events or
//! transactions per second, or the first capture group of a user's regex. Pure.
//!
//! - pgbench (PostgreSQL 14+) prints one `tps = 1234.567890 (without initial connection
//!   time)` line; older versions print two, `(including connections establishing)` and
//!   `(excluding connections establishing)`, and the excluding one is the same quantity
//!   as 14+'s (PostgreSQL docs, "pgbench", section "Common Options" and its sample output).
//! - sysbench 1.0 prints `events per second: N` for `cpu` and other event tests,
//!   `T MiB transferred (X MiB/sec)` for `memory`, and `transactions: N (X per sec.)` for
//!   the OLTP Lua tests (akopytov/sysbench README, sample outputs).

use serde::{Deserialize, Serialize};

/// Which number to read from the output.
#[derive(Debug, Clone)]
pub enum MetricSpec {
    /// pgbench's transactions per second.
    Pgbench,
    /// sysbench's events per second, MiB/s for `memory`, transactions per second for OLTP
    /// tests.
    Sysbench,
    /// The first capture group (or the whole match) of the first line matching.
    Regex {
        /// The pattern as the user typed it.
        pattern: String,
        re: regex::Regex,
        lower_is_better: bool,
    },
}

/// The metric as recorded in a result: what it is, and which way is better.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetricInfo {
    /// `pgbench`, `sysbench`, or `regex`.
    pub source: String,
    /// The regex, for `regex`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// What the number counts: `tps`, `events/s`, `transactions/s`, or `value`.
    pub unit: String,
    /// True for throughputs (pgbench, sysbench, a regex unless `--lower-is-better`).
    pub higher_is_better: bool,
}

impl MetricSpec {
    /// Parses `--metric`: `pgbench`, `sysbench`, or a regex (which must compile and have at
    /// most one capture group that matters: the first).
    pub fn parse(text: &str, lower_is_better: bool) -> Result<Self, String> {
        let t = text.trim();
        let named = match t {
            "pgbench" => Some(MetricSpec::Pgbench),
            "sysbench" => Some(MetricSpec::Sysbench),
            _ => None,
        };
        if let Some(m) = named {
            if lower_is_better {
                return Err(format!(
                    "--lower-is-better goes with a regex metric; `{t}` reads a throughput, \
                     where higher is better"
                ));
            }
            return Ok(m);
        }
        if t.is_empty() {
            return Err(
                "empty; expected pgbench, sysbench or a regex whose first capture \
                        group is the number, e.g. 'latency: ([0-9.]+) ms'"
                    .into(),
            );
        }
        let re = regex::RegexBuilder::new(t)
            .multi_line(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| {
                format!(
                    "`{t}` is neither pgbench, sysbench nor a valid regex: {}",
                    first_line(&e.to_string())
                )
            })?;
        Ok(MetricSpec::Regex {
            pattern: t.to_string(),
            re,
            lower_is_better,
        })
    }

    /// What a result records about this metric.
    pub fn info(&self) -> MetricInfo {
        match self {
            MetricSpec::Pgbench => MetricInfo {
                source: "pgbench".into(),
                pattern: None,
                unit: "tps".into(),
                higher_is_better: true,
            },
            MetricSpec::Sysbench => MetricInfo {
                source: "sysbench".into(),
                pattern: None,
                unit: "events/s".into(),
                higher_is_better: true,
            },
            MetricSpec::Regex {
                pattern,
                lower_is_better,
                ..
            } => MetricInfo {
                source: "regex".into(),
                pattern: Some(pattern.clone()),
                unit: "value".into(),
                higher_is_better: !lower_is_better,
            },
        }
    }

    /// The number in `out` (the command's stdout, then its stderr), with its unit when the
    /// parser knows it better than [`MetricSpec::info`] (sysbench OLTP: transactions/s).
    pub fn read(&self, stdout: &str, stderr: &str) -> Option<(f64, Option<&'static str>)> {
        [stdout, stderr].into_iter().find_map(|text| match self {
            MetricSpec::Pgbench => pgbench_tps(text).map(|v| (v, None)),
            MetricSpec::Sysbench => sysbench_rate(text).map(|(v, u)| (v, Some(u))),
            MetricSpec::Regex { re, .. } => regex_value(re, text).map(|v| (v, None)),
        })
    }
}

impl MetricSpec {
    /// Why [`MetricSpec::read`] found no number in a run's output, as the error says it:
    /// nothing matched; or what did match (quoted) and why it is not a number — a regex
    /// without a capture group reads its whole match, and `NaN`, `inf` or `1e400` parse but
    /// are not finite. `place` says whose output (`the output of `CMD` on LABEL (round 2)`);
    /// `dropped` is the bytes of it that were not kept ([`super::runner::CAPTURE_LIMIT`]).
    pub fn miss(&self, stdout: &str, stderr: &str, place: &str, dropped: u64) -> String {
        let what = match self {
            MetricSpec::Pgbench => format!("--metric pgbench found no `tps = …` line in {place}"),
            MetricSpec::Sysbench => format!(
                "--metric sysbench found no `events per second:`, `MiB transferred (… \
                 MiB/sec)` or `transactions: … per sec.` line in {place}"
            ),
            MetricSpec::Regex { pattern, re, .. } => {
                let shown = crate::quote::shorten(pattern);
                let first = [stdout, stderr]
                    .into_iter()
                    .find_map(|t| re.captures(t))
                    .and_then(|c| c.get(1).or_else(|| c.get(0)))
                    .map(|m| crate::quote::shorten(m.as_str().trim()));
                match first {
                    None => format!("--metric '{shown}' matched nothing in {place}"),
                    Some(m) if re.captures_len() == 1 => format!(
                        "--metric '{shown}' matched `{m}`, which is not a number (the regex \
                         has no capture group, so its whole match is read: put the number in \
                         one, e.g. 'tps = ([0-9.]+)'), in {place}"
                    ),
                    Some(m) if m.replace([',', '_'], "").parse::<f64>().is_ok() => format!(
                        "--metric '{shown}' captured `{m}`, which is not a finite number, in \
                         {place}"
                    ),
                    Some(m) => format!(
                        "--metric '{shown}' captured `{m}`, which is not a number, in {place}"
                    ),
                }
            }
        };
        if dropped == 0 {
            return what;
        }
        format!(
            "{what}; {dropped} bytes in the middle of its output were not kept (only the first \
             and last {} MiB of each stream are), so a number there was not seen",
            (super::runner::CAPTURE_LIMIT / 2) >> 20
        )
    }
}

fn first_line(s: &str) -> String {
    // regex's errors draw the pattern over several lines; the last says what is wrong.
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// A number as tools print it: `1234.5`, `1,234.5`, `1.2e3`.
fn number(s: &str) -> Option<f64> {
    let t: String = s.trim().chars().filter(|&c| c != ',' && c != '_').collect();
    t.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// pgbench's tps: the line `without initial connection time` (14+) or `excluding
/// connections establishing` (older), else the only `tps =` line.
pub fn pgbench_tps(text: &str) -> Option<f64> {
    let lines: Vec<(&str, f64)> = text
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("tps = ")?;
            let num = rest.split_whitespace().next()?;
            Some((rest, number(num)?))
        })
        .collect();
    lines
        .iter()
        .find(|(rest, _)| rest.contains("without initial") || rest.contains("excluding"))
        .or_else(|| lines.first())
        .map(|(_, v)| *v)
}

/// sysbench's rate: `events per second: N`, else the memory test's `T MiB transferred
/// (X MiB/sec)`, else `transactions: N (X per sec.)`.
pub fn sysbench_rate(text: &str) -> Option<(f64, &'static str)> {
    let events = text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("events per second:")?;
        number(rest)
    });
    if let Some(v) = events {
        return Some((v, "events/s"));
    }
    // sysbench's memory test (src/tests/memory/sb_memory.c) reports its bandwidth as
    // "%4.2f MiB transferred (%4.2f MiB/sec)" and prints no events per second; 0.4 and
    // 0.5 printed "MB transferred (… MB/sec)".
    let bandwidth = text.lines().find_map(|l| {
        [("MiB", "MiB/s"), ("MB", "MB/s")]
            .into_iter()
            .find_map(|(unit, per_sec)| {
                let inside = l.trim().split_once(&format!("{unit} transferred ("))?.1;
                let rate = inside.strip_suffix(')')?.trim();
                Some((number(rate.strip_suffix(&format!("{unit}/sec"))?)?, per_sec))
            })
    });
    if bandwidth.is_some() {
        return bandwidth;
    }
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("transactions:")?;
        let inside = rest.split_once('(')?.1;
        let v = number(inside.split_whitespace().next()?)?;
        inside.contains("per sec").then_some((v, "transactions/s"))
    })
}

/// The first capture group of the first match (the whole match without groups), as a
/// number.
pub fn regex_value(re: &regex::Regex, text: &str) -> Option<f64> {
    re.captures_iter(text).find_map(|c| {
        let m = c.get(1).or_else(|| c.get(0))?;
        number(m.as_str())
    })
}

/// The last `n` lines of a command's output, for messages (empty lines dropped), each cut
/// to [`QUOTED_LINE_CHARS`] characters: a command that printed 20 MB on one line once had
/// all of it quoted back.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    lines[start..]
        .iter()
        .map(|l| {
            let chars = l.chars().count();
            if chars <= QUOTED_LINE_CHARS {
                format!("  | {l}")
            } else {
                let cut: String = l.chars().take(QUOTED_LINE_CHARS).collect();
                format!("  | {cut}… ({chars} characters)")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The longest line [`last_lines`] quotes whole.
pub const QUOTED_LINE_CHARS: usize = 300;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const PGBENCH_15: &str = "pgbench (15.8 (Debian 15.8-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 5
query mode: simple
number of clients: 2
number of threads: 2
maximum number of tries: 1
duration: 5 s
number of transactions actually processed: 6182
number of failed transactions: 0 (0.000%)
latency average = 1.617 ms
initial connection time = 4.925 ms
tps = 1236.733515 (without initial connection time)
";

    const PGBENCH_12: &str = "latency average = 5.100 ms
tps = 391.909461 (including connections establishing)
tps = 392.120371 (excluding connections establishing)
";

    /// `sysbench cpu --time=1 --threads=1 run`, sysbench 1.0.20 (Debian 1.0.20+ds-5), as
    /// it printed it.
    const SYSBENCH_CPU: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 1
Initializing random number generator from current time


Prime numbers limit: 10000

Initializing worker threads...

Threads started!

CPU speed:
    events per second:  2522.21

General statistics:
    total time:                          1.0004s
    total number of events:              2527

Latency (ms):
         min:                                    0.39
         avg:                                    0.40
         max:                                    0.96
         95th percentile:                        0.42
         sum:                                  999.11

Threads fairness:
    events (avg/stddev):           2527.0000/0.00
    execution time (avg/stddev):   0.9991/0.00

";

    /// `sysbench memory --memory-total-size=1G --threads=1 run`, the same sysbench: no
    /// `events per second:` line, its rate is the MiB/sec after `MiB transferred`.
    const SYSBENCH_MEMORY: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 1
Initializing random number generator from current time


Running memory speed test with the following options:
  block size: 1KiB
  total size: 1024MiB
  operation: write
  scope: global

Initializing worker threads...

Threads started!

Total operations: 1048576 (5930647.83 per second)

1024.00 MiB transferred (5791.65 MiB/sec)


General statistics:
    total time:                          0.1754s
    total number of events:              1048576

Latency (ms):
         min:                                    0.00
         avg:                                    0.00
         max:                                    0.09
         95th percentile:                        0.00
         sum:                                   70.71

Threads fairness:
    events (avg/stddev):           1048576.0000/0.00
    execution time (avg/stddev):   0.0707/0.00

";

    const SYSBENCH_OLTP: &str = "SQL statistics:
    queries performed:
        read:                            140000
    transactions:                        10000  (332.84 per sec.)
    queries:                             200000 (6656.72 per sec.)
";

    #[test]
    fn pgbench_reads_the_tps_without_connection_time() {
        assert_eq!(pgbench_tps(PGBENCH_15), Some(1236.733515));
        assert_eq!(pgbench_tps(PGBENCH_12), Some(392.120371));
        assert_eq!(pgbench_tps("tps = 12.5 (something new)\n"), Some(12.5));
        assert_eq!(pgbench_tps("no tps here"), None);
        let m = MetricSpec::parse("pgbench", false).unwrap();
        assert_eq!(
            m.read("", PGBENCH_15),
            Some((1236.733515, None)),
            "stderr too"
        );
    }

    #[test]
    fn sysbench_reads_events_then_transactions() {
        assert_eq!(sysbench_rate(SYSBENCH_CPU), Some((2522.21, "events/s")));
        assert_eq!(
            sysbench_rate(SYSBENCH_OLTP),
            Some((332.84, "transactions/s"))
        );
        assert_eq!(sysbench_rate("transactions: 5 (total)"), None);
        assert_eq!(sysbench_rate(""), None);
    }

    #[test]
    fn sysbench_memory_reads_its_mib_per_second() {
        assert_eq!(sysbench_rate(SYSBENCH_MEMORY), Some((5791.65, "MiB/s")));
        let m = MetricSpec::parse("sysbench", false).unwrap();
        assert_eq!(m.read(SYSBENCH_MEMORY, ""), Some((5791.65, Some("MiB/s"))));
        assert_eq!(
            sysbench_rate("102400.00 MiB transferred (10231.55 MiB/sec)\n"),
            Some((10231.55, "MiB/s"))
        );
        // sysbench 0.4 and 0.5 wrote MB.
        assert_eq!(
            sysbench_rate("1024.00 MB transferred (3012.75 MB/sec)\n"),
            Some((3012.75, "MB/s"))
        );
        // A total without a rate is no rate.
        assert_eq!(sysbench_rate("1024.00 MiB transferred\n"), None);
    }

    #[test]
    fn regex_takes_the_first_group_or_the_whole_match() {
        let m = MetricSpec::parse(r"latency: ([0-9.,]+) ms", true).unwrap();
        assert_eq!(
            m.read("x\nlatency: 1,234.5 ms\nlatency: 9 ms", ""),
            Some((1234.5, None))
        );
        assert!(m.info().pattern.is_some() && !m.info().higher_is_better);
        let whole = MetricSpec::parse(r"[0-9]+\.[0-9]+", false).unwrap();
        assert_eq!(whole.read("took 3.25 s", ""), Some((3.25, None)));
        // A match that is not a number is skipped for the next one.
        let word = MetricSpec::parse(r"rate=(\S+)", false).unwrap();
        assert_eq!(word.read("rate=n/a\nrate=7", ""), Some((7.0, None)));
        assert_eq!(word.read("nothing", "neither"), None);
    }

    #[test]
    fn bad_metrics_say_what_is_valid() {
        let e = MetricSpec::parse("latency: ([0-9]+", false).unwrap_err();
        assert!(
            e.contains("neither pgbench, sysbench nor a valid regex"),
            "{e}"
        );
        assert!(e.contains("unclosed group"), "{e}");
        let e = MetricSpec::parse("pgbench", true).unwrap_err();
        assert!(e.contains("--lower-is-better"), "{e}");
        assert!(MetricSpec::parse("  ", false).is_err());
    }

    #[test]
    fn last_lines_quote_the_end() {
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "  | b\n  | c");
        assert_eq!(last_lines("", 3), "");
        let long = "x".repeat(5000);
        let q = last_lines(&long, 1);
        assert!(q.len() < 400 && q.ends_with("… (5000 characters)"), "{q}");
    }

    #[test]
    fn a_miss_says_what_matched_and_why_it_is_no_number() {
        let at = "the output of `x` on cpus:0 (round 1)";
        let miss = |pattern: &str, out: &str, dropped: u64| {
            MetricSpec::parse(pattern, false)
                .unwrap()
                .miss(out, "", at, dropped)
        };
        assert_eq!(
            miss("rate=([0-9]+)", "nothing", 0),
            format!("--metric 'rate=([0-9]+)' matched nothing in {at}")
        );
        assert!(miss("tps", "tps=5", 0).starts_with(
            "--metric 'tps' matched `tps`, which is not a number (the regex has no capture group"
        ));
        for v in ["NaN", "-inf", "1e400", "inf"] {
            let m = miss("v=(\\S+)", &format!("v={v}"), 0);
            assert!(
                m.contains(&format!("captured `{v}`, which is not a finite number")),
                "{m}"
            );
        }
        let m = miss("v=(\\S+)", "v=fast", 0);
        assert!(m.contains("captured `fast`, which is not a number"), "{m}");
        let m = miss("w=([0-9]+)", "xxx", 1234);
        assert!(m.ends_with("1234 bytes in the middle of its output were not kept (only the first and last 8 MiB of each stream are), so a number there was not seen"), "{m}");
        let m = MetricSpec::Pgbench.miss("", "", at, 0);
        assert!(
            m.starts_with("--metric pgbench found no `tps = …` line in the output"),
            "{m}"
        );
    }

    proptest! {
        #[test]
        fn parsers_never_panic(s in ".{0,200}") {
            let _ = pgbench_tps(&s);
            let _ = sysbench_rate(&s);
            let _ = number(&s);
        }

        #[test]
        fn printed_rates_read_back(v in 0.0f64..1e9) {
            let text = format!("tps = {v:.6} (without initial connection time)\n");
            let got = pgbench_tps(&text).unwrap();
            prop_assert!((got - v).abs() <= 1e-6 * v.max(1.0));
            let text = format!("    events per second: {v:>10.2}\n");
            let (got, _) = sysbench_rate(&text).unwrap();
            prop_assert!((got - v).abs() <= 0.01);
        }
    }
}
