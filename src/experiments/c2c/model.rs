//! The c2c result model: the JSON is this model serialised. Built from samples by
//! `C2c::from_samples` (`analysis.rs`).

use super::ceiling::Ceiling;
use crate::cpuset::CpuSet;
use crate::stats::Summary;
use crate::topology::Proximity;
use serde::{Deserialize, Serialize};

/// One measured pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// The CPU that timed (ping).
    pub a: u32,
    /// Its partner (pong).
    pub b: u32,
    /// How the two CPUs relate (SMT sibling, same L3, …).
    pub proximity: Proximity,
    /// One-way latency over samples (median, MAD, range, outlier counts), ns.
    pub latency_ns: Summary,
    /// Mean one-way latency, ns (what core-to-core-latency prints).
    pub mean_latency_ns: f64,
    /// The pair reached its time limit ([`crate::engine::pair_time_limit`]) with fewer
    /// samples than asked (`latency_ns.n` says how many): its handoffs were too slow for
    /// cache-line transfers.
    #[serde(default)]
    pub time_limited: bool,
}

/// Latency summary for one proximity class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    pub proximity: Proximity,
    /// Pairs in this class.
    pub pairs: usize,
    /// Median over the pairs' medians, ns.
    pub median_latency_ns: f64,
    /// Smallest and largest pair median, ns.
    pub min_latency_ns: f64,
    pub max_latency_ns: f64,
    /// Ceilings from the class median.
    pub ceiling: Ceiling,
}

/// The whole c2c measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2c {
    /// CPUs measured.
    pub cpus: CpuSet,
    /// Kept samples per pair (one more was taken and discarded).
    pub samples: usize,
    /// Round trips timed per sample.
    pub round_trips: usize,
    /// Every measured pair, a < b.
    pub pairs: Vec<Pair>,
    /// `matrix_ns[i][j]`: median one-way latency between the i-th and j-th CPU of `cpus`,
    /// ns; null on the diagonal and for pairs not measured (interrupted).
    pub matrix_ns: Vec<Vec<Option<f64>>>,
    /// Per proximity class, closest first.
    pub classes: Vec<ClassSummary>,
    /// Ctrl-C stopped the measurement; `pairs` holds what finished.
    pub interrupted: bool,
    /// Usable CPUs a `--budget` left out (empty when none were).
    #[serde(default)]
    pub left_out: CpuSet,
}

impl C2c {
    /// Median one-way latency between `a` and `b`, if measured, ns.
    pub fn latency_ns(&self, a: u32, b: u32) -> Option<f64> {
        self.pairs
            .iter()
            .find(|p| (p.a, p.b) == (a, b) || (p.a, p.b) == (b, a))
            .map(|p| p.latency_ns.median)
    }

    /// The class summary for `p`, if any pair of that class was measured.
    pub fn class(&self, p: Proximity) -> Option<&ClassSummary> {
        self.classes.iter().find(|c| c.proximity == p)
    }
}

// ---------------------------------------------------------------------------------------
// The study's section: what results.json keeps under `c2c`.

/// `c2c` as the study ran it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cSection {
    /// Samples kept per pair.
    pub samples: usize,
    /// Round trips per sample.
    pub round_trips: usize,
    /// Usable CPUs left out to fit the budget (empty when all were measured).
    pub cpus_left_out: String,
    pub result: C2c,
}
