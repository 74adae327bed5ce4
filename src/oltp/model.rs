//! The `oltp` result model (serde; the JSON is this model). Units live in field names;
//! the terminal table is in [`crate::experiments::oltp::view`].

use super::{Durability, KeyMode, Schema};
use crate::placement::Request;
use serde::{Deserialize, Serialize};

/// Everything one `smtlab oltp` invocation measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OltpReport {
    /// The database, as given (`sqlite`, `postgres-managed`, or the URL with its password
    /// replaced by `***`).
    pub db: String,
    /// `SQLite 3.x` or `PostgreSQL 15.8`.
    pub db_version: String,
    /// Where and how, in one line (never a password).
    pub db_description: String,
    /// `seed-001` or `seed-002`.
    pub schema: Schema,
    /// `sequential` or `random`.
    pub key: KeyMode,
    /// `full` or `delayed`.
    pub durability: Durability,
    /// Rows per transaction.
    pub rows_per_txn: u32,
    /// Client threads per run.
    pub threads: usize,
    /// Rows requested for the prefill (random keys).
    pub prefill_rows: u64,
    /// Rows each thread inserts, when runs are `--rows-per-thread`.
    pub rows_per_thread: Option<u64>,
    /// Measurement length, when runs are `--duration`, ns.
    pub duration_ns: Option<u64>,
    /// Warm-up before each measurement, ns (its rows are in the table, not in the rates).
    pub warmup_ns: u64,
    /// How server backends were pinned.
    pub backend_pinning: String,
    /// Runs, in the order they ran (layouts interleaved round by round).
    pub runs: Vec<LayoutRun>,
    /// Layouts not possible here, with the reason.
    pub skipped: Vec<SkippedLayout>,
    /// The unit the scoped layouts stayed inside (`--within`); None when no layout was scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::placement::ScopeUnit>,
    /// True when a signal cut the invocation short (the runs so far are kept).
    pub interrupted: bool,
    /// The counters' mode and every event not counted, with the reason; None with
    /// `--counters off`, on the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
    /// The look at the clients' CPUs just before the runs: each warning (other work on
    /// them, steal), as printed. Empty when they were quiet, and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hygiene: Vec<String>,
    /// Which signal, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<crate::interrupt::Signal>,
}

/// A layout that was skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedLayout {
    /// The placement request, as on the command line (`pairs`, `cpus:0,2`).
    #[serde(with = "request_as_text")]
    pub placement: Request,
    /// Why it is not possible here.
    pub reason: String,
}

/// One run of one layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutRun {
    /// The placement request, as on the command line (`pairs`, `cpus:0,2`).
    #[serde(with = "request_as_text")]
    pub placement: Request,
    /// Client threads in this run.
    pub threads: usize,
    /// Round number, from 0 (`--repeat`).
    pub round: usize,
    /// Inserted rows per second over the whole run (rows ÷ `elapsed_ns`).
    pub inserts_per_sec: f64,
    /// Committed transactions per second.
    pub txns_per_sec: f64,
    /// Rows committed during the measurement.
    pub rows_committed: u64,
    /// Wall time of the run, ns: until the last thread's last commit (rows-per-thread) or
    /// the engine's measured time (duration).
    pub elapsed_ns: u64,
    /// Per-thread elapsed time, smallest, ns.
    pub thread_elapsed_min_ns: u64,
    /// Per-thread elapsed time, median, ns.
    pub thread_elapsed_median_ns: u64,
    /// Per-thread elapsed time, largest, ns.
    pub thread_elapsed_max_ns: u64,
    /// Commit latency, median, ns.
    pub commit_latency_p50_ns: u64,
    /// Commit latency, 99th percentile, ns.
    pub commit_latency_p99_ns: u64,
    /// Commit latency, largest, ns.
    pub commit_latency_max_ns: u64,
    /// Commit latency, mean, ns.
    pub commit_latency_mean_ns: f64,
    /// Rows in the table after the run.
    pub rows_in_table: u64,
    /// Rows the table must hold: prefill + warm-up + measured rows committed.
    pub rows_expected: u64,
    /// `rows_in_table == rows_expected`: nothing committed was lost, nothing extra appeared.
    pub rows_verified: bool,
    /// Client threads' involuntary context switches (preemptions) during the measurement.
    pub involuntary_ctx_switches: u64,
    /// Client threads' CPU time during the measurement, ns.
    pub client_cpu_time_ns: u64,
    /// Threads seen on a CPU outside their set (should be 0).
    pub pinning_violations: usize,
    /// Hypervisor steal on the clients' CPUs during the run, 0–1; None where not measured
    /// (no steal field in /proc/stat, the fake engine, older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_share: Option<f64>,
    /// Why the run was disturbed while it ran (`engine::disturbance::of_run`: steal, or a
    /// client thread kept off its CPU by other work); None when its records show nothing,
    /// and in older files. Its round is left out of the layouts' paired comparisons. The
    /// records are the clients' own: a PostgreSQL backend's lost CPU time is not seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
    /// Per client thread.
    pub per_thread: Vec<ThreadRun>,
}

/// One client thread of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRun {
    /// Plan thread index.
    pub thread: usize,
    /// CPUs the thread (and its backend, when pinned) ran on.
    pub cpus: String,
    /// PostgreSQL backend pid.
    pub backend_pid: Option<i32>,
    /// Rows committed during the measurement.
    pub rows: u64,
    /// From the start of the measurement to its last commit, ns.
    pub elapsed_ns: u64,
    /// `rows` ÷ `elapsed_ns`.
    pub inserts_per_sec: f64,
    /// Commit latency, 99th percentile, ns.
    pub commit_latency_p99_ns: u64,
    /// The client thread's event counters over the measurement (the database backend
    /// serving it is another process, not counted here); None with `--counters off`, on
    /// the fake engine and in older files.
    #[serde(default)]
    pub counters: Option<crate::counters::Counts>,
}

/// A placement [`Request`] in JSON as the text the command line takes (`one-per-core`,
/// `cpus:0,2`), so reports stay readable and compare with `--configs`:
/// `#[serde(with = "request_as_text")]`.
pub mod request_as_text {
    use crate::placement::Request;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(r: &Request, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(r)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Request, D::Error> {
        let s = String::deserialize(d)?;
        Request::parse(&s).map_err(D::Error::custom)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A report with one run and one skipped layout.
    pub(crate) fn sample() -> OltpReport {
        OltpReport {
            hygiene: Vec::new(),
            db: "postgres://u:***@h/db".into(),
            db_version: "PostgreSQL 15.8".into(),
            db_description: "PostgreSQL 15.8 at postgres://u:***@h/db (synchronous_commit=on)"
                .into(),
            schema: Schema::Seed001,
            key: KeyMode::Sequential,
            durability: Durability::Full,
            rows_per_txn: 2,
            threads: 2,
            prefill_rows: 1000,
            rows_per_thread: Some(20_000),
            duration_ns: None,
            warmup_ns: 0,
            backend_pinning: "only client threads pinned: remote".into(),
            scope: None,
            runs: vec![LayoutRun {
                placement: Request::OnePerCore,
                threads: 2,
                round: 0,
                inserts_per_sec: 12_345.6,
                txns_per_sec: 6_172.8,
                rows_committed: 40_000,
                elapsed_ns: 3_240_000_000,
                thread_elapsed_min_ns: 3_100_000_000,
                thread_elapsed_median_ns: 3_240_000_000,
                thread_elapsed_max_ns: 3_240_000_000,
                commit_latency_p50_ns: 150_000,
                commit_latency_p99_ns: 900_000,
                commit_latency_max_ns: 12_000_000,
                commit_latency_mean_ns: 160_000.0,
                rows_in_table: 41_000,
                rows_expected: 41_000,
                rows_verified: true,
                involuntary_ctx_switches: 12,
                client_cpu_time_ns: 1_000_000_000,
                pinning_violations: 0,
                steal_share: None,
                disturbed: None,
                per_thread: vec![],
            }],
            skipped: vec![SkippedLayout {
                placement: Request::Pairs,
                reason: "no SMT".into(),
            }],
            interrupted: false,
            counters: None,
            interrupted_by: None,
        }
    }

    #[test]
    fn json_round_trips_with_units_in_names() {
        let r = sample();
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["runs"][0]["rows_verified"], true);
        // Enums in the model, the same strings in the JSON as before they were enums.
        assert_eq!(j["schema"], "seed-001");
        assert_eq!(j["key"], "sequential");
        assert_eq!(j["durability"], "full");
        assert_eq!(j["runs"][0]["placement"], "one-per-core");
        assert_eq!(j["skipped"][0]["placement"], "pairs");
        assert!(j["runs"][0]["inserts_per_sec"].as_f64().unwrap() > 12_000.0);
        let back: OltpReport = serde_json::from_value(j).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn placements_read_back_from_their_command_line_text() {
        let mut r = sample();
        r.runs[0].placement = Request::Cpus(crate::cpuset::CpuSet::from_cpus([0, 2, 3]));
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["runs"][0]["placement"], "cpus:0,2-3");
        let back: OltpReport = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(back, r);
        let mut bad = j;
        bad["runs"][0]["placement"] = "bogus".into();
        assert!(serde_json::from_value::<OltpReport>(bad).is_err());
    }
}
