//! What an rwcache run is asked to do, checked before anything runs.

use crate::engine::RunSpec;
use crate::error::BadInput;
use crate::placement::{Request, Scope};
use crate::rwcache::{MAX_ENTRIES, SchemeKind};
use serde::{Deserialize, Serialize};

/// Most lookups per request.
pub const MAX_LOOKUPS: usize = crate::limits::MAX_LOOKUPS as usize;

/// Most threads in one run.
pub const MAX_THREADS: usize = crate::limits::MAX_THREADS as usize;

/// The workload's shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSpec {
    /// Entries in the table (keys `0..entries`).
    pub entries: usize,
    /// Lookups per request.
    pub lookups: usize,
    /// Fraction of requests that replace an entry, 0..=1.
    pub write_ratio: f64,
    /// Busy work per request outside the lock, ns.
    pub work_ns: u64,
}

impl Default for TableSpec {
    /// A metadata cache read on every request and rarely changed: 10,000 entries, 4
    /// lookups per request, 1 write in 10,000 requests.
    fn default() -> Self {
        TableSpec {
            entries: 10_000,
            lookups: 4,
            write_ratio: 0.0001,
            work_ns: 0,
        }
    }
}

impl TableSpec {
    /// Checks every value, naming the bad one and the valid range.
    fn validate(&self) -> Result<(), BadInput> {
        if !(1..=MAX_ENTRIES).contains(&self.entries) {
            return Err(BadInput(format!(
                "--entries must be between 1 and {MAX_ENTRIES} (got {}); the default is 10000",
                self.entries
            )));
        }
        if !(1..=MAX_LOOKUPS).contains(&self.lookups) {
            return Err(BadInput(format!(
                "--lookups must be between 1 and {MAX_LOOKUPS} (got {})",
                self.lookups
            )));
        }
        if !(0.0..=1.0).contains(&self.write_ratio) {
            return Err(BadInput(format!(
                "--write-ratio must be a fraction of requests between 0 and 1, e.g. 0.0001 (got {})",
                self.write_ratio
            )));
        }
        if self.work_ns > crate::limits::MAX_OP_NS {
            return Err(BadInput(format!(
                "--work-ns must be at most 1000000000 (1 s) per request (got {})",
                self.work_ns
            )));
        }
        Ok(())
    }
}

/// A checked rwcache configuration. [`RwcacheConfig::new`] is the only way to build one; it
/// refuses a bad value, naming it and what would be valid, so [`super::run`] need not check
/// again.
#[derive(Debug, Clone, PartialEq)]
pub struct RwcacheConfig {
    pub schemes: Vec<SchemeKind>,
    /// Thread counts to run, in order.
    pub threads: Vec<usize>,
    pub placement: Request,
    /// The unit a scoped placement stays inside (one package by default).
    pub within: Scope,
    pub table: TableSpec,
    pub spec: RunSpec,
    /// Rounds over every (threads, scheme) trial.
    pub repeat: usize,
    /// Seeds each thread's key sequence.
    pub seed: u64,
    /// Keeps construction to [`RwcacheConfig::new`].
    _checked: Checked,
}

/// Only this module can make one, so only [`RwcacheConfig::new`] builds a config.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Checked;

impl RwcacheConfig {
    /// The configuration, or the first bad value named with what would be valid. Each
    /// argument has its own type, so two swapped arguments do not compile.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        schemes: Vec<SchemeKind>,
        threads: Vec<usize>,
        placement: Request,
        within: Scope,
        table: TableSpec,
        spec: RunSpec,
        repeat: usize,
        seed: u64,
    ) -> Result<Self, BadInput> {
        table.validate()?;
        if schemes.is_empty() {
            return Err(BadInput(
                "--scheme selects nothing; give `all` or a list like spin,rwspin".into(),
            ));
        }
        if threads.is_empty() || threads.iter().any(|&t| t == 0 || t > MAX_THREADS) {
            return Err(BadInput(format!(
                "--threads must list counts between 1 and {MAX_THREADS}, e.g. 1,2 (got {threads:?})"
            )));
        }
        if repeat == 0 {
            return Err(BadInput("--repeat must be at least 1".into()));
        }
        Ok(RwcacheConfig {
            schemes,
            threads,
            placement,
            within,
            table,
            spec,
            repeat,
            seed,
            _checked: Checked,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn bad_table_values_are_named() {
        let with = |t: &TableSpec| {
            table_config(t.clone())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let mut t = TableSpec {
            entries: 0,
            ..TableSpec::default()
        };
        let e = with(&t);
        assert!(e.contains("--entries") && e.contains("got 0"), "{e}");
        t.entries = 10;
        t.write_ratio = 2.0;
        let e = with(&t);
        assert!(e.contains("--write-ratio") && e.contains("got 2"), "{e}");
        t.write_ratio = f64::NAN;
        assert!(table_config(t.clone()).is_err());
        t.write_ratio = 1.0;
        assert!(table_config(t).is_ok());
    }

    fn config(
        schemes: Vec<SchemeKind>,
        threads: Vec<usize>,
        repeat: usize,
    ) -> Result<RwcacheConfig, BadInput> {
        config_with(schemes, threads, repeat, TableSpec::default())
    }

    fn table_config(table: TableSpec) -> Result<RwcacheConfig, BadInput> {
        config_with(vec![SchemeKind::Spin], vec![1], 1, table)
    }

    fn config_with(
        schemes: Vec<SchemeKind>,
        threads: Vec<usize>,
        repeat: usize,
        table: TableSpec,
    ) -> Result<RwcacheConfig, BadInput> {
        RwcacheConfig::new(
            schemes,
            threads,
            Request::Spread,
            Scope::Package,
            table,
            RunSpec::new(Duration::ZERO, Duration::from_millis(100)).unwrap(),
            repeat,
            1,
        )
    }

    #[test]
    fn a_config_is_checked_when_built() {
        assert!(config(vec![SchemeKind::Spin], vec![1, 2], 1).is_ok());
        let e = config(vec![], vec![1], 1).unwrap_err().to_string();
        assert!(e.contains("--scheme selects nothing"), "{e}");
        for threads in [vec![], vec![0], vec![1, MAX_THREADS + 1]] {
            let e = config(vec![SchemeKind::Spin], threads.clone(), 1)
                .unwrap_err()
                .to_string();
            assert!(e.contains("--threads must list counts"), "{threads:?}: {e}");
        }
        let e = config(vec![SchemeKind::Spin], vec![1], 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--repeat"), "{e}");
    }
}
