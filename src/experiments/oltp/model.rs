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
    #[serde(with = "crate::oltp::report::request_as_text")]
    pub placement: crate::placement::Request,
    pub inserts_per_sec: Summary,
    /// Median commit latency p99 over rounds, ns.
    pub commit_latency_p99_ns: u64,
    /// Every round's row count matched what was committed.
    pub rows_verified: bool,
}
