//! oltp's model as the study keeps it: the experiment's own report
//! ([`crate::oltp::OltpReport`]) with a summary per layout over its rounds.

use crate::oltp::OltpReport;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// `oltp` as the study ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpSection {
    /// Layouts asked for (impossible ones are in `result.skipped`).
    pub layouts: Vec<String>,
    /// Per layout that ran: inserts/s over rounds.
    pub summary: Vec<OltpLayoutSummary>,
    pub result: OltpReport,
}

/// One layout over its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpLayoutSummary {
    /// The layout, as on the command line (`one-per-core`, `pairs`).
    #[serde(with = "crate::oltp::model::request_as_text")]
    pub placement: crate::placement::Request,
    pub inserts_per_sec: Summary,
    /// Median commit latency p99 over rounds, ns.
    pub commit_latency_p99_ns: u64,
    /// Every round's row count matched what was committed.
    pub rows_verified: bool,
}

/// What the layouts tell the user besides their runs.
#[derive(Debug, Clone)]
pub enum Note {
    /// `layout` puts its `threads` threads on the very CPUs `as_layout` did; `no_sibling`
    /// when that is because their cores have no usable SMT sibling.
    SamePlacement {
        layout: String,
        threads: usize,
        as_layout: String,
        no_sibling: bool,
    },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::SamePlacement {
                layout,
                threads,
                as_layout,
                no_sibling,
            } => {
                write!(
                    f,
                    "`{layout}` places its {threads} threads exactly as `{as_layout}`"
                )?;
                if *no_sibling {
                    f.write_str(": their cores have no usable SMT sibling")?;
                }
                Ok(())
            }
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);
