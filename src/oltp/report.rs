//! The `oltp` result model (serde; the JSON is this model) and its terminal rendering.
//! Units live in field names.

use crate::render;
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
    pub schema: String,
    /// `sequential` or `random`.
    pub key: String,
    /// `full` or `delayed`.
    pub durability: String,
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
    /// The unit the seed layouts stayed inside (`--within`); None when no layout was scoped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::placement::ScopeUnit>,
    /// True when Ctrl-C cut the invocation short (the runs so far are kept).
    pub interrupted: bool,
}

/// A layout that was skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedLayout {
    /// The placement request.
    pub placement: String,
    /// Why it is not possible here.
    pub reason: String,
}

/// One run of one layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutRun {
    /// The placement request.
    pub placement: String,
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
}

/// Median of a list (upper median for even lengths; 0 when empty).
pub fn median(v: &[u64]) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get(s.len() / 2).copied().unwrap_or(0)
}

/// `n` per second of `ns`.
pub fn per_sec(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

/// The terminal table.
pub fn render_text(r: &OltpReport) -> String {
    let mut out = String::new();
    let stop = match (r.rows_per_thread, r.duration_ns) {
        (Some(rows), _) => format!("{} rows per thread", render::thousands(rows)),
        (None, Some(ns)) => format!("{} per run", render::duration_ns(ns as f64)),
        _ => String::new(),
    };
    out.push_str(&format!(
        "oltp: {} ({} key, {} row(s)/txn, durability {}) on {}\n",
        r.schema, r.key, r.rows_per_txn, r.durability, r.db_description
    ));
    if let Some(u) = &r.scope {
        out.push_str(&format!("layouts {}\n", u));
    }
    out.push_str(&format!(
        "{} threads, {stop}, prefill {} rows; backends: {}\n\n",
        r.threads,
        render::thousands(r.prefill_rows),
        r.backend_pinning
    ));
    let mut rows = vec![
        [
            "PLACEMENT",
            "THREADS",
            "ROUND",
            "INSERTS/S",
            "ELAPSED",
            "THREAD MIN",
            "MEDIAN",
            "MAX",
            "COMMIT P50",
            "P99",
            "MAX",
            "ROWS",
            "CHECK",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for run in &r.runs {
        let d = |ns: u64| render::duration_ns(ns as f64);
        rows.push(vec![
            run.placement.clone(),
            run.threads.to_string(),
            run.round.to_string(),
            render::thousands(run.inserts_per_sec.round() as u64),
            d(run.elapsed_ns),
            d(run.thread_elapsed_min_ns),
            d(run.thread_elapsed_median_ns),
            d(run.thread_elapsed_max_ns),
            render::latency_ns(run.commit_latency_p50_ns),
            render::latency_ns(run.commit_latency_p99_ns),
            render::latency_ns(run.commit_latency_max_ns),
            render::thousands(run.rows_in_table),
            if run.rows_verified {
                "ok".into()
            } else {
                format!("LOST? expected {}", render::thousands(run.rows_expected))
            },
        ]);
    }
    if !r.runs.is_empty() {
        out.push_str(&render::table(&rows));
    }
    for s in &r.skipped {
        out.push_str(&format!("skipped {}: {}\n", s.placement, s.reason));
    }
    for run in &r.runs {
        if run.pinning_violations > 0 {
            out.push_str(&format!(
                "warning: {} (round {}): {} thread(s) seen outside their CPUs\n",
                run.placement, run.round, run.pinning_violations
            ));
        }
    }
    if r.interrupted {
        out.push_str(
            "interrupted: the runs above finished before the signal (Ctrl-C, SIGTERM or SIGHUP)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> OltpReport {
        OltpReport {
            db: "postgres://u:***@h/db".into(),
            db_version: "PostgreSQL 15.8".into(),
            db_description: "PostgreSQL 15.8 at postgres://u:***@h/db (synchronous_commit=on)"
                .into(),
            schema: "seed-001".into(),
            key: "sequential".into(),
            durability: "full".into(),
            rows_per_txn: 2,
            threads: 2,
            prefill_rows: 1000,
            rows_per_thread: Some(20_000),
            duration_ns: None,
            warmup_ns: 0,
            backend_pinning: "only client threads pinned: remote".into(),
            scope: None,
            runs: vec![LayoutRun {
                placement: "one-per-core".into(),
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
                per_thread: vec![],
            }],
            skipped: vec![SkippedLayout {
                placement: "pairs".into(),
                reason: "no SMT".into(),
            }],
            interrupted: false,
        }
    }

    #[test]
    fn renders_table() {
        insta::assert_snapshot!(render_text(&sample()));
    }

    #[test]
    fn json_round_trips_with_units_in_names() {
        let r = sample();
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["runs"][0]["rows_verified"], true);
        assert!(j["runs"][0]["inserts_per_sec"].as_f64().unwrap() > 12_000.0);
        let back: OltpReport = serde_json::from_value(j).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn median_is_upper_for_even() {
        assert_eq!(median(&[3, 1, 2]), 2);
        assert_eq!(median(&[4, 1, 3, 2]), 3);
        assert_eq!(median(&[]), 0);
    }
}
