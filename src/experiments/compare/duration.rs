//! Commands that run for a fixed time rather than a fixed amount of work. Their wall time
//! is the same whatever they get done, so comparing placements by it says nothing: a
//! `sysbench cpu --time=2 run` that does twice the events on every sibling still takes
//! 2 s. Found here from a known tool's time limit in the arguments (pure); the other sign,
//! wall time unchanged while CPU time changed, is read from the runs by
//! [`super::analysis::not_called`].
//!
//! The tools and their options, from their manuals: sysbench 1.0 (`--time=N`, "limit for
//! total execution time in seconds \[10\]", 0 = no limit; `--max-time` its deprecated
//! alias), pgbench (`-T`/`--time`, "run the test for this many seconds"; without it a
//! fixed number of transactions, `-t`), stress-ng (`-t`/`--timeout`), fio
//! (`--time_based`: "run for the specified runtime duration even if the files are
//! completely read or written").

use super::config::{CommandLine, Config};
use super::metric::MetricSpec;
use super::model::{FixedDuration, FoundBy};

/// A time limit found among a command's words.
#[derive(Debug, Clone)]
pub struct TimeLimit {
    /// The tool's name (`sysbench`).
    pub tool: &'static str,
    /// The option that limits its time, as given (`--time=2`), or what its default is.
    pub given: String,
    /// The metric that reads the tool's own throughput, when smtlab has one for it.
    pub preset: Option<MetricSpec>,
}

impl TimeLimit {
    /// `` `sysbench` runs for a fixed time (`--time=2`) ``.
    pub fn seen(&self) -> String {
        format!("`{}` runs for a fixed time ({})", self.tool, self.given)
    }
}

/// The words a shell would split `text` into, roughly: enough to find a tool's options.
fn shell_words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || ";|&()".contains(c))
        .filter(|w| !w.is_empty())
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"').to_string())
        .collect()
}

/// The value of option `name` (`--time`, `-T`) among `words`: `--time=2`, `--time 2`,
/// `-T 5` or `-T5` (short options only), with the words as given.
fn option(words: &[String], name: &str) -> Option<(String, String)> {
    let short = !name.starts_with("--");
    for (i, w) in words.iter().enumerate() {
        if w == name {
            let v = words.get(i + 1).cloned().unwrap_or_default();
            return Some((format!("`{name} {v}`"), v));
        }
        if let Some(v) = w.strip_prefix(&format!("{name}=")) {
            return Some((format!("`{w}`"), v.to_string()));
        }
        if short
            && let Some(v) = w.strip_prefix(name)
            && !v.is_empty()
            && v.chars().all(|c| c.is_ascii_digit())
        {
            return Some((format!("`{w}`"), v.to_string()));
        }
    }
    None
}

/// Whether a time value means "no limit" (`0`, `0s`).
fn zero(v: &str) -> bool {
    v.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        .is_ok_and(|x| x == 0.0)
}

/// The time limit of a known tool in `cmd`, if it has one. The tool is any word whose
/// file name is the tool's (`/usr/bin/sysbench`, after `nice` or `env`); its options are
/// the words after it. A metric preset is offered only for a command run directly: a
/// shell line may send the tool's output elsewhere.
pub fn time_limit(cmd: &CommandLine) -> Option<TimeLimit> {
    let words = if cmd.shell {
        shell_words(&cmd.words.join(" "))
    } else {
        cmd.words.clone()
    };
    let name = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let at = words.iter().position(|w| {
        matches!(
            name(w).as_str(),
            "sysbench" | "pgbench" | "stress-ng" | "fio"
        )
    })?;
    let tool = name(&words[at]);
    let args = &words[at + 1..];
    let preset = |m: MetricSpec| (!cmd.shell).then_some(m);
    match tool.as_str() {
        "sysbench" => {
            // Only `run` runs the benchmark (`prepare`, `cleanup`, `help` do not).
            if !args.iter().any(|w| w == "run") {
                return None;
            }
            let given = option(args, "--time").or_else(|| option(args, "--max-time"));
            match given {
                Some((_, v)) if zero(&v) => None,
                Some((g, _)) => Some(TimeLimit {
                    tool: "sysbench",
                    given: g,
                    preset: preset(MetricSpec::Sysbench),
                }),
                None => Some(TimeLimit {
                    tool: "sysbench",
                    given: "its default `--time=10`".into(),
                    preset: preset(MetricSpec::Sysbench),
                }),
            }
        }
        "pgbench" => {
            let (g, v) = option(args, "-T").or_else(|| option(args, "--time"))?;
            (!zero(&v)).then(|| TimeLimit {
                tool: "pgbench",
                given: g,
                preset: preset(MetricSpec::Pgbench),
            })
        }
        "stress-ng" => {
            let (g, v) = option(args, "-t").or_else(|| option(args, "--timeout"))?;
            (!zero(&v)).then_some(TimeLimit {
                tool: "stress-ng",
                given: g,
                preset: None,
            })
        }
        "fio" => args
            .iter()
            .any(|w| w == "--time_based" || w.starts_with("--time_based="))
            .then(|| TimeLimit {
                tool: "fio",
                given: "`--time_based`".into(),
                preset: None,
            }),
        _ => None,
    }
}

/// Looks at `cfg`'s command before it runs: without `--metric`, a known tool's time limit
/// sets the tool's own metric when smtlab has one (sysbench, pgbench), and is recorded
/// either way. With `--metric` nothing changes: the metric measures the work.
pub fn adjust(cfg: &mut Config) -> Option<FixedDuration> {
    if cfg.metric.is_some() {
        return None;
    }
    let t = time_limit(&cfg.command)?;
    let metric_chosen = t.preset.as_ref().map(|m| m.info().source);
    cfg.metric = t.preset.clone();
    Some(FixedDuration {
        found_by: FoundBy::Arguments,
        seen: t.seen(),
        metric_chosen,
    })
}

/// The sentence a report prints about a fixed-duration command.
pub fn sentence(f: &FixedDuration) -> String {
    match (&f.found_by, &f.metric_chosen) {
        (FoundBy::Arguments, Some(m)) => format!(
            "{}: its wall time is the same whatever it gets done, so its throughput is \
             compared instead (`--metric {m}`, chosen because no `--metric` was given)",
            f.seen
        ),
        (FoundBy::Arguments, None) => format!(
            "{}: its wall time is the same whatever it gets done, so no comparison by wall \
             time is called; {}",
            f.seen,
            super::analysis::METRIC_ADVICE
        ),
        (FoundBy::Timing, _) => f.seen.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(words: &[&str]) -> CommandLine {
        CommandLine {
            words: words.iter().map(|w| w.to_string()).collect(),
            shell: false,
        }
    }

    fn limit(words: &[&str]) -> Option<(String, Option<String>)> {
        time_limit(&cmd(words)).map(|t| (t.given, t.preset.map(|m| m.info().source)))
    }

    #[test]
    fn known_tools_time_limits_are_found_in_the_arguments() {
        let some = |g: &str, m: Option<&str>| Some((g.to_string(), m.map(String::from)));
        assert_eq!(
            limit(&["sysbench", "cpu", "--time=2", "run"]),
            some("`--time=2`", Some("sysbench"))
        );
        assert_eq!(
            limit(&["/usr/bin/sysbench", "cpu", "--threads=4", "run"]),
            some("its default `--time=10`", Some("sysbench"))
        );
        assert_eq!(
            limit(&["nice", "sysbench", "--max-time", "5", "cpu", "run"]),
            some("`--max-time 5`", Some("sysbench"))
        );
        // No time limit: fixed work.
        assert_eq!(
            limit(&["sysbench", "cpu", "--time=0", "--events=1000", "run"]),
            None
        );
        assert_eq!(limit(&["sysbench", "oltp_read_only", "prepare"]), None);
        assert_eq!(
            limit(&["pgbench", "-n", "-T", "5"]),
            some("`-T 5`", Some("pgbench"))
        );
        assert_eq!(
            limit(&["pgbench", "-T60", "-c", "4"]),
            some("`-T60`", Some("pgbench"))
        );
        assert_eq!(
            limit(&["pgbench", "--time=30"]),
            some("`--time=30`", Some("pgbench"))
        );
        assert_eq!(limit(&["pgbench", "-n", "-t", "1000"]), None);
        assert_eq!(
            limit(&["stress-ng", "--cpu", "4", "--timeout", "5"]),
            some("`--timeout 5`", None)
        );
        assert_eq!(
            limit(&["stress-ng", "--cpu", "4", "-t", "5s"]),
            some("`-t 5s`", None)
        );
        assert_eq!(
            limit(&["stress-ng", "--cpu", "4", "--cpu-ops", "1000"]),
            None
        );
        assert_eq!(
            limit(&["fio", "--name=x", "--time_based", "--runtime=10"]),
            some("`--time_based`", None)
        );
        assert_eq!(limit(&["fio", "--name=x", "--size=1G"]), None);
        assert_eq!(limit(&["make", "-j4", "--time=2"]), None);
        // In a shell line the limit is found, but no metric is chosen: the shell may send
        // the tool's output elsewhere.
        let sh = CommandLine {
            words: vec!["pgbench -n -T 5 > log; tail -1 log".into()],
            shell: true,
        };
        let t = time_limit(&sh).unwrap();
        assert_eq!(t.tool, "pgbench");
        assert!(t.preset.is_none());
    }

    #[test]
    fn without_a_metric_sysbench_and_pgbench_get_their_own() {
        let mut c = Config::new(vec![
            "sysbench".into(),
            "cpu".into(),
            "--time=2".into(),
            "run".into(),
        ]);
        let f = adjust(&mut c).unwrap();
        assert_eq!(
            c.metric.as_ref().map(|m| m.info().source).as_deref(),
            Some("sysbench")
        );
        assert_eq!(f.metric_chosen.as_deref(), Some("sysbench"));
        assert!(
            sentence(&f).contains("`--metric sysbench`, chosen"),
            "{}",
            sentence(&f)
        );
        // A metric given is kept, and nothing is recorded.
        let mut c = Config::new(vec!["pgbench".into(), "-T".into(), "5".into()]);
        c.metric = Some(MetricSpec::parse("tps = ([0-9.]+)", false).unwrap());
        assert_eq!(adjust(&mut c), None);
        assert_eq!(c.metric.as_ref().unwrap().info().source, "regex");
        // No preset: recorded, no metric, the advice says what to give.
        let mut c = Config::new(vec!["stress-ng".into(), "--timeout".into(), "5".into()]);
        let f = adjust(&mut c).unwrap();
        assert!(c.metric.is_none() && f.metric_chosen.is_none());
        assert!(sentence(&f).contains("--metric"), "{}", sentence(&f));
    }
}
