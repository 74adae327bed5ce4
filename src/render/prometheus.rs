//! The Prometheus text exposition format (prometheus.io/docs/instrumenting/exposition_formats):
//! per metric family a `# HELP` and a `# TYPE` line, then one sample per line, label values
//! escaped. `study --prometheus` and `merge --prometheus` write through [`Exposition`];
//! node_exporter's textfile collector reads such files (`*.prom`).
//!
//! A family written by more than one command must carry the same HELP text in each: the
//! textfile collector gathers every file of its directory into one registry, and a second
//! HELP for a name makes it drop that family's samples with an error ("has help … but should
//! have …", client_golang `registry.go`). [`SMT_YIELD_HELP`] is that text for
//! `smtlab_smt_yield`, which `top` writes with a `source` label and `study` with `class`.

use std::fmt::Write;

/// HELP of `smtlab_smt_yield`, shared by `top --prometheus` (label `source`) and `study
/// --prometheus` (label `class`).
pub const SMT_YIELD_HELP: &str = "SMT yield: a core's throughput with all its threads busy over one thread alone, on the same cores. Label source (top): the value its capacity figures use; label class (study): measured for that workload class.";

/// A sample value as the format spells it: `NaN`, `+Inf`, `-Inf`, or the shortest decimal
/// that reads back as the same float.
pub fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

/// A label value with `\`, `"` and line feeds escaped, and other control characters
/// written as the text of their escapes.
pub fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            // Any other control character (a tab is text in a label value) as the terminal
            // shows it, `\x1b`, its backslash escaped: the format has no escape of its own
            // for them, and one written raw runs when the file is printed.
            c if c != '\t' && super::terminal::is_unsafe(c) => {
                s.push_str(&super::terminal::field(&c.to_string()).replace('\\', "\\\\"))
            }
            c => s.push(c),
        }
    }
    s
}

/// `{a="x",b="y"}`, or nothing for no labels.
pub fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// An exposition being written: gauge families in the order they are added.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// One gauge family; nothing when it has no samples (a HELP line without samples tells
    /// a dashboard nothing). `samples` hold rendered label sets ([`labels`]) and values.
    pub fn gauge(&mut self, name: &str, help: &str, samples: &[(String, f64)]) {
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(self.out, "# HELP {name} {}", help.replace('\n', " "));
        let _ = writeln!(self.out, "# TYPE {name} gauge");
        for (l, v) in samples {
            let _ = writeln!(self.out, "{name}{l} {}", value(*v));
        }
    }

    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_labels_and_families_are_spelled_as_the_format_says() {
        assert_eq!(value(f64::NAN), "NaN");
        assert_eq!(value(f64::INFINITY), "+Inf");
        assert_eq!(value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(value(1.25), "1.25");
        assert_eq!(value(3.0), "3");
        assert_eq!(
            labels(&[("host", "a\"b\\c\nd"), ("k", "v")]),
            r#"{host="a\"b\\c\nd",k="v"}"#
        );
        assert_eq!(labels(&[]), "");
        // A control character from a results.json (a host name that sets the terminal's
        // title) is written as its escape's text, the backslash escaped: `cat` of the file
        // runs nothing, and the parser reads `\x1b` back as four characters.
        assert_eq!(
            labels(&[("t", "\u{1b}]0;title\u{7}\tx\u{85}\u{202e}")]),
            "{t=\"\\\\x1b]0;title\\\\x07\tx\\\\x85\\\\u{202e}\"}"
        );
        let mut e = Exposition::new();
        e.gauge("x_empty", "nothing", &[]);
        e.gauge("x_ratio", "a ratio", &[(labels(&[("k", "v")]), 0.5)]);
        assert_eq!(
            e.finish(),
            "# HELP x_ratio a ratio\n# TYPE x_ratio gauge\nx_ratio{k=\"v\"} 0.5\n"
        );
    }
}
