//! What a yield run measures: the workloads, the cores, the run lengths; checked before
//! anything runs.

use super::model::WorkloadKind;
use crate::burn::BurnerKind;
use crate::engine::RunSpec;
use crate::error::BadInput;
use crate::locks::LockKind;
use crate::oltp::{DbTarget, Durability, TableSpec};
use crate::placement::Scope;

/// Most rounds one run may ask for.
pub const MAX_REPEAT: usize = crate::limits::MAX_REPEAT as usize;

/// The workloads run when none are named: a ruler per resource (divider, integer ALU,
/// FMA, DRAM bandwidth, DRAM latency, L2) and the hot-page lock with a sleeping and a
/// spinning lock.
pub const DEFAULT_WORKLOADS: &str = "prime,int,fma,stream,chase,l2,hot-page/mutex,hot-page/ttas";

/// The names `--workloads` accepts.
pub const WORKLOAD_NAMES: &str = "a ruler (prime, int, mul, fma, fma-scalar, fma-avx2, \
     fma-avx512, pause, stream, chase, l1, l2, scan), hot-page/LOCK (LOCK: tas, ttas, \
     backoff, ticket, mcs, mutex, parking_lot, adaptive), insert (needs --db postgres…)";

/// One workload of the yield run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A burner ("ruler") of one kind, one per thread.
    Ruler(BurnerKind),
    /// Appends to one shared page under this lock (`neighbors`' worker).
    HotPage(LockKind),
    /// Singleton inserts, one connection per thread, on the configured database.
    Insert,
}

impl Subject {
    /// Parses `prime`, `hot-page/ttas` (or `lock:ttas`), `insert`.
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        let t = s.trim();
        let lower = t.to_ascii_lowercase();
        if lower == "insert" || lower == "oltp" {
            return Ok(Subject::Insert);
        }
        for prefix in ["hot-page/", "hot-page:", "lock:", "lock/"] {
            if let Some(k) = lower.strip_prefix(prefix) {
                return k
                    .parse()
                    .map(Subject::HotPage)
                    .map_err(|e| BadInput(format!("--workloads: `{t}`: {e}")));
            }
        }
        lower.parse().map(Subject::Ruler).map_err(|_| {
            BadInput(format!(
                "--workloads: unknown workload `{t}`; valid: {WORKLOAD_NAMES}"
            ))
        })
    }

    /// Parses a comma-separated list; duplicates are refused.
    pub fn parse_list(s: &str) -> Result<Vec<Self>, BadInput> {
        let mut v: Vec<Subject> = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let x = Subject::parse(part)?;
            if v.contains(&x) {
                return Err(BadInput(format!(
                    "--workloads: `{}` is listed twice",
                    part.trim()
                )));
            }
            v.push(x);
        }
        if v.is_empty() {
            return Err(BadInput(format!(
                "--workloads needs at least one workload; valid: {WORKLOAD_NAMES}"
            )));
        }
        Ok(v)
    }

    /// The name in reports (`prime`, `hot-page/ttas`, `insert`).
    pub fn name(&self) -> String {
        match self {
            Subject::Ruler(k) => k.to_string(),
            Subject::HotPage(k) => format!("hot-page/{k}"),
            Subject::Insert => "insert".into(),
        }
    }

    pub fn class(&self) -> WorkloadKind {
        match self {
            Subject::Ruler(k) if k.uses_caches() || *k == BurnerKind::Scan => {
                WorkloadKind::MemoryRuler
            }
            Subject::Ruler(_) => WorkloadKind::ComputeRuler,
            Subject::HotPage(_) => WorkloadKind::Lock,
            Subject::Insert => WorkloadKind::Insert,
        }
    }

    /// What one operation is.
    pub fn unit(&self) -> String {
        match self {
            Subject::Ruler(k) => k.unit().label().to_string(),
            Subject::HotPage(_) => "appends".into(),
            Subject::Insert => "rows".into(),
        }
    }

    /// What it stresses, in words.
    pub fn describe(&self) -> String {
        match self {
            Subject::Ruler(k) => k.describe().to_string(),
            Subject::HotPage(k) => format!(
                "64-byte appends to one shared page under a {} lock ({})",
                if lock_sleeps(*k) {
                    "sleeping"
                } else {
                    "spinning"
                },
                k.describe()
            ),
            Subject::Insert => "singleton inserts, one connection per thread".into(),
        }
    }
}

/// Whether a waiter on `k` ends up asleep in the kernel (futex) rather than spinning: a
/// sleeping waiter leaves its core's pipeline to the sibling, a spinning one shares it.
pub fn lock_sleeps(k: LockKind) -> bool {
    matches!(
        k,
        LockKind::Mutex | LockKind::ParkingLot | LockKind::Adaptive | LockKind::Backoff
    )
}

/// The database of the `insert` workload.
#[derive(Debug, Clone)]
pub struct InsertTarget {
    pub db: DbTarget,
    pub durability: Durability,
    pub table: TableSpec,
}

impl InsertTarget {
    /// True for SQLite: it admits one writer at a time, so a second core adds nothing and
    /// its yield says nothing about SMT.
    pub fn single_writer(&self) -> bool {
        matches!(self.db, DbTarget::Sqlite(_))
    }
}

/// A checked yield configuration. [`Config::new`] (and [`Config::with_run`], which goes
/// through it) is the only way to build one besides the defaults; it refuses a bad value,
/// naming it and what would be valid, so planning and running need not check again.
#[derive(Debug, Clone)]
pub struct Config {
    pub subjects: Vec<Subject>,
    /// N; None = every core of the scope unit.
    pub cores: Option<usize>,
    pub within: Scope,
    pub spec: RunSpec,
    /// Rounds.
    pub repeat: usize,
    /// The database for `insert` (and the reason it is left out when SQLite).
    pub db: Option<InsertTarget>,
    /// Keeps construction to the checked paths.
    _checked: Checked,
}

/// Only this module can make one, so only its constructors build a config.
#[derive(Debug, Clone, Copy)]
struct Checked;

impl Config {
    /// `subjects` on `cores` cores (None: every core) of one unit of `within`, each run for
    /// `spec`, `repeat` rounds, `insert` into `db`; or the first bad value named with what
    /// would be valid. Each argument has its own type, so two swapped arguments do not
    /// compile.
    pub fn new(
        subjects: Vec<Subject>,
        cores: Option<usize>,
        within: Scope,
        spec: RunSpec,
        repeat: usize,
        db: Option<InsertTarget>,
    ) -> Result<Self, BadInput> {
        if subjects.is_empty() {
            return Err(BadInput(format!(
                "--workloads needs at least one workload; valid: {WORKLOAD_NAMES}"
            )));
        }
        if cores == Some(0) {
            return Err(BadInput(
                "--cores must be at least 1 (got 0); leave it out for every core of the unit"
                    .into(),
            ));
        }
        if let Some(n) = cores {
            crate::limits::at_most(
                "--cores",
                n as u64,
                crate::limits::MAX_YIELD_CORES,
                crate::limits::WHY_YIELD_CORES,
            )?;
        }
        if repeat == 0 {
            return Err(BadInput("--repeat must be at least 1 (got 0)".into()));
        }
        crate::limits::at_most(
            "--repeat",
            repeat as u64,
            MAX_REPEAT as u64,
            "rounds over every workload and layout",
        )?;
        if subjects.contains(&Subject::Insert) && db.is_none() {
            return Err(BadInput(
                "--workloads insert needs a database: --db postgres-managed or --db \
                 postgres://USER@HOST/DB"
                    .into(),
            ));
        }
        if let Some(t) = &db {
            t.table.validate()?;
        }
        Ok(Self {
            subjects,
            cores,
            within,
            spec,
            repeat,
            db,
            _checked: Checked,
        })
    }

    /// The same workloads, cores and database, each run for `spec`, `repeat` rounds
    /// (checked as [`Config::new`] checks them).
    pub fn with_run(self, spec: RunSpec, repeat: usize) -> Result<Self, BadInput> {
        Self::new(
            self.subjects,
            self.cores,
            self.within,
            spec,
            repeat,
            self.db,
        )
    }
}

impl Default for Config {
    /// [`DEFAULT_WORKLOADS`], every core of one package, 1 s runs after 250 ms warm-up,
    /// [`crate::stats::DEFAULT_ROUNDS`] rounds, no database.
    fn default() -> Self {
        Self {
            subjects: Subject::parse_list(DEFAULT_WORKLOADS).expect("valid defaults"),
            cores: None,
            within: Scope::default(),
            spec: RunSpec::new(
                std::time::Duration::from_millis(250),
                std::time::Duration::from_secs(1),
            )
            .expect("1 s is positive"),
            repeat: crate::stats::DEFAULT_ROUNDS,
            db: None,
            _checked: Checked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_workloads() {
        let v = Subject::parse_list(DEFAULT_WORKLOADS).unwrap();
        assert_eq!(v.len(), 8);
        assert_eq!(v[0], Subject::Ruler(BurnerKind::Prime));
        assert_eq!(v[6], Subject::HotPage(LockKind::Mutex));
        assert_eq!(Subject::parse("lock:ttas").unwrap().name(), "hot-page/ttas");
        assert_eq!(Subject::parse(" Insert ").unwrap(), Subject::Insert);
        let e = Subject::parse("divide").unwrap_err().0;
        assert!(e.contains("`divide`") && e.contains("hot-page/LOCK"), "{e}");
        let e = Subject::parse("hot-page/spin").unwrap_err().0;
        assert!(e.contains("spin") && e.contains("ttas"), "{e}");
        let e = Subject::parse_list("prime,prime").unwrap_err().0;
        assert!(e.contains("twice"), "{e}");
        assert!(Subject::parse_list(" , ").is_err());
    }

    #[test]
    fn classes_and_units() {
        assert_eq!(
            Subject::Ruler(BurnerKind::Stream).class(),
            WorkloadKind::MemoryRuler
        );
        assert_eq!(
            Subject::Ruler(BurnerKind::Prime).class(),
            WorkloadKind::ComputeRuler
        );
        assert_eq!(Subject::Ruler(BurnerKind::Prime).unit(), "events");
        assert_eq!(Subject::HotPage(LockKind::Ttas).unit(), "appends");
        assert!(
            Subject::HotPage(LockKind::Mutex)
                .describe()
                .contains("sleeping")
        );
        assert!(
            Subject::HotPage(LockKind::Ttas)
                .describe()
                .contains("spinning")
        );
    }

    #[test]
    fn validation_names_the_bad_value() {
        let d = Config::default();
        let with = |subjects: Vec<Subject>, cores, repeat| {
            Config::new(subjects, cores, d.within, d.spec.clone(), repeat, None)
        };
        assert!(with(d.subjects.clone(), None, 5).is_ok());
        let e = with(d.subjects.clone(), Some(0), 5).unwrap_err();
        assert!(e.0.contains("--cores"), "{e}");
        let e = with(d.subjects.clone(), None, 0).unwrap_err();
        assert!(e.0.contains("--repeat"), "{e}");
        let mut insert = d.subjects.clone();
        insert.push(Subject::Insert);
        let e = with(insert, None, 3).unwrap_err();
        assert!(e.0.contains("--db"), "{e}");
        let e = d.clone().with_run(d.spec.clone(), 0).unwrap_err();
        assert!(e.0.contains("--repeat"), "{e}");
    }
}
