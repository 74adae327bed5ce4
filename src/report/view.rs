//! The study's own terminal view: the answer table `smtlab study` prints after the run.
//! Pure.

use super::Verdict;
use crate::render::{NONE, Table};

/// "Keep HT on?" per workload class: the class, the answer, and the evidence's ratio with
/// its interval.
pub fn answer_table(v: &Verdict) -> Table {
    let mut table = Table::new(&["WORKLOAD CLASS", "ANSWER", "EVIDENCE"]);
    for a in &v.answers {
        table.push(vec![
            a.class.label().to_string(),
            a.answer.label().to_string(),
            a.evidence
                .as_ref()
                .map_or_else(|| NONE.to_string(), |e| e.comparison.to_string()),
        ]);
    }
    table
}

/// The answer table, then why, one line per class; empty without answers.
pub fn answers_text(v: &Verdict) -> String {
    if v.answers.is_empty() {
        return String::new();
    }
    let mut s = answer_table(v).text();
    for a in &v.answers {
        s.push_str(&format!("  {}: {}\n", a.class.label(), a.reason));
    }
    s
}
