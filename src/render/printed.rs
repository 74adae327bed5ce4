//! A guard for reshaping the views: the set of numbers a command's terminal output
//! prints, kept in `tests/printed/NAME.txt`, must still be printed after the view is
//! rewritten. A number is a run of digits with the `.` and `,` inside it (`1,234.5`,
//! `0,2`); units, words and layout may change, a value may not go missing.
//!
//! `PRINTED_WRITE=1` writes the lists anew from today's output (done once, before a
//! view is reshaped, and committed).

use std::collections::BTreeSet;
use std::path::PathBuf;

/// Every number in `text`, once each.
pub fn numbers(text: &str) -> BTreeSet<String> {
    let cs: Vec<char> = text.chars().collect();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < cs.len() {
        if !cs[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < cs.len()
            && (cs[i].is_ascii_digit()
                || (matches!(cs[i], '.' | ',')
                    && cs.get(i + 1).is_some_and(|c| c.is_ascii_digit())))
        {
            i += 1;
        }
        out.insert(cs[start..i].iter().collect());
    }
    out
}

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/printed")
        .join(format!("{name}.txt"))
}

/// Fails naming every number of the stored list for `name` that `text` no longer prints.
pub fn assert_kept(name: &str, text: &str) {
    let now = numbers(text);
    let p = path(name);
    if std::env::var_os("PRINTED_WRITE").is_some() {
        let list: Vec<&str> = now.iter().map(String::as_str).collect();
        std::fs::write(&p, list.join("\n") + "\n").unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (PRINTED_WRITE=1 writes it)", p.display()));
    let lost: Vec<&str> = stored
        .lines()
        .filter(|n| !n.is_empty() && !now.contains(*n))
        .collect();
    assert!(
        lost.is_empty(),
        "{name}: printed before, missing now: {lost:?}\n--- output ---\n{text}"
    );
}

#[cfg(test)]
mod tests {
    use super::numbers;

    #[test]
    fn numbers_keep_their_separators_and_drop_their_units() {
        let n = numbers("CPUs 0,2: 1,234.5 ms ±3 %, 1.23 k, L3, x86_64. Done 7.");
        let got: Vec<&str> = n.iter().map(String::as_str).collect();
        assert_eq!(got, ["0,2", "1,234.5", "1.23", "3", "64", "7", "86"]);
    }
}

/// The numbers of each command's terminal output, drawn from the fake study's sections
/// (every section produced by the experiment's own code on the fake engine), with and
/// without SMT siblings, and from the models' own samples where a command is not a
/// study phase.
#[cfg(test)]
mod kept {
    use super::assert_kept;
    use crate::experiments::{c2c, compare, neighbors, oltp, rwcache, smt_yield};
    use crate::render::terminal::draw;
    // oltp's study phase runs a real SQLite even on the fake engine, so its times vary
    // from run to run: its model's sample stands in.
    use crate::study::fixture::{no_smt, smt};

    #[test]
    fn every_view_prints_the_numbers_it_printed_before() {
        for (tag, r) in [("smt", smt()), ("no_smt", no_smt())] {
            let name = |v: &str| format!("{v}_{tag}");
            if let Some(s) = &r.compare {
                assert_kept(
                    &name("compare"),
                    &draw(&compare::view::blocks(&s.result, None)),
                );
            }
            if let Some(s) = &r.smt_yield {
                assert_kept(&name("yield"), &draw(&smt_yield::view::blocks(&s.result)));
            }
            if let Some(s) = &r.rwcache {
                assert_kept(&name("rwcache"), &rwcache::view::text(&s.result));
            }
            if let Some(s) = &r.c2c {
                assert_kept(&name("c2c"), &draw(&c2c::view::blocks(&s.result, true)));
            }
            if let Some(s) = &r.neighbors {
                let all: String = s
                    .runs
                    .iter()
                    .map(|run| draw(&neighbors::view::blocks(run)))
                    .collect();
                assert_kept(&name("neighbors"), &all);
            }
        }
        let cmp = compare::fixture::fixture();
        assert_kept("compare_fixture", &draw(&compare::view::blocks(&cmp, None)));
        let burn = crate::burn::model::tests::sample();
        assert_kept("burn", &draw(&crate::burn::view::blocks(&burn)));
        let top = crate::top::model::tests::one_busy_sibling(crate::top::model::TraceInput::Off(
            "not root".into(),
        ));
        assert_kept("top", &draw(&crate::top::view::blocks(&top, true)));
        assert_kept(
            "oltp_sample",
            &draw(&oltp::view::blocks(&crate::oltp::model::tests::sample())),
        );
    }
}
