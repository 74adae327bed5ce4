//! The names of the locks: parsing, display, the list of all of them.

use super::{Lock, StatsMode, new_lock};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which lock algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockKind {
    /// Test-and-set: `swap` in a loop with PAUSE between attempts.
    Tas,
    /// Test-and-test-and-set with PAUSE: spin on a plain load, `swap` when it looks free.
    /// The lock of the classic "scanner starves a lock thread on its sibling" test.
    Ttas,
    /// TTAS with exponential backoff in time, then `sched_yield`, then sleep (SQL Server-like).
    Backoff,
    /// Ticket lock: FIFO, everyone spins on one `now_serving` word.
    Ticket,
    /// MCS queue lock: FIFO, each waiter spins on its own node.
    Mcs,
    /// Futex 3-state mutex, std's Linux algorithm: 100 spins, then `FUTEX_WAIT`.
    Mutex,
    /// `parking_lot::RawMutex`: barging, spin-yield-park, fair handoff every ~0.5 ms.
    ParkingLot,
    /// Spin for a time budget (default 10 µs ≈ a context switch), then `FUTEX_WAIT`.
    Adaptive,
}

impl LockKind {
    /// Every kind, in the order tables list them.
    pub const ALL: [LockKind; 8] = [
        LockKind::Tas,
        LockKind::Ttas,
        LockKind::Backoff,
        LockKind::Ticket,
        LockKind::Mcs,
        LockKind::Mutex,
        LockKind::ParkingLot,
        LockKind::Adaptive,
    ];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Tas => "tas",
            LockKind::Ttas => "ttas",
            LockKind::Backoff => "backoff",
            LockKind::Ticket => "ticket",
            LockKind::Mcs => "mcs",
            LockKind::Mutex => "mutex",
            LockKind::ParkingLot => "parking_lot",
            LockKind::Adaptive => "adaptive",
        }
    }

    /// One line for `--help` and reports.
    pub fn describe(self) -> &'static str {
        match self {
            LockKind::Tas => "test-and-set (xchg) with PAUSE between attempts",
            LockKind::Ttas => {
                "test-and-test-and-set with PAUSE (the classic Windows scanner test's lock)"
            }
            LockKind::Backoff => "TTAS + exponential backoff in time, then yield, then sleep",
            LockKind::Ticket => "ticket lock, FIFO, global spinning",
            LockKind::Mcs => "MCS queue lock, FIFO, local spinning",
            LockKind::Mutex => "futex mutex (std's algorithm: 100 spins, then sleep)",
            LockKind::ParkingLot => "parking_lot::RawMutex (spin, yield, park)",
            LockKind::Adaptive => "spin for a time budget (10 us), then futex sleep",
        }
    }

    /// True for locks that grant the lock in arrival order (collapse when oversubscribed).
    pub fn is_fifo(self) -> bool {
        matches!(self, LockKind::Ticket | LockKind::Mcs)
    }

    /// Builds a lock of this kind with default options.
    pub fn build(self, stats: StatsMode) -> Box<dyn Lock> {
        new_lock(self, stats)
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A lock name that is not one of [`LockKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lock kind `{given}`; valid kinds: {}", valid_list())]
pub struct UnknownLockKind {
    /// What was given.
    pub given: String,
}

fn valid_list() -> String {
    LockKind::ALL.map(LockKind::name).join(", ")
}

impl FromStr for LockKind {
    type Err = UnknownLockKind;

    /// Accepts the names of [`LockKind::name`], case-insensitively, and `-` for `_`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_lowercase().replace('-', "_");
        LockKind::ALL
            .into_iter()
            .find(|k| k.name() == norm)
            .ok_or_else(|| UnknownLockKind {
                given: s.to_string(),
            })
    }
}
