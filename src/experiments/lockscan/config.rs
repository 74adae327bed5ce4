//! What a lockscan run is asked to do: where threads go, which locks, the critical section,
//! the scan buffer, run lengths and rounds. Every value is checked as the config is built,
//! so a bad one is refused with what would be valid before anything runs.

use crate::cpuset::CpuSet;
use crate::engine::RunSpec;
use crate::error::BadInput;
use crate::locks::{LockKind, StatsMode};
use crate::placement::Scope;
use crate::topology::Topology;

/// Where threads go, as the user asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// The original test's default: the scanner on the lowest allowed CPU (its
    /// `mask & (mask - 1)` clears the lowest bit for the lock threads), lock threads on the
    /// rest.
    ScannerOnLowest,
    /// Explicit CPU sets (`--lock-cpus/--scan-cpus`, or `-l/-s` decimal masks as the
    /// original test took them).
    Explicit { lock: CpuSet, scan: CpuSet },
    /// One scenario per scanner position: on SMT machines the scanner on each lock
    /// thread's sibling in turn; without SMT, on each core in turn. The lock threads stay
    /// inside one unit of the scope (one package by default), so that the sweep compares
    /// sibling and cross-core positions, not sockets.
    Sweep(Scope),
}

/// A checked lockscan configuration. [`LockscanConfig::new`] and the `with_*` setters are
/// the only way to build one; each refuses a bad value, naming it and what would be valid.
#[derive(Debug, Clone)]
pub struct LockscanConfig {
    pub layout: Layout,
    /// The locks compared, in order; at least one.
    pub locks: Vec<LockKind>,
    /// Busy work inside the critical section, ns (0 = an empty section, as in the original
    /// test).
    pub cs_ns: u64,
    /// Bytes each scan thread memsets per pass; at least 1.
    pub scan_bytes: usize,
    pub spec: RunSpec,
    /// Rounds over every (scenario, lock) trial; at least 1.
    pub repeat: usize,
    /// Also run each scenario without scan threads (the cross-core reference).
    pub baseline: bool,
    /// What the lock records: `Counters` (spins and handoffs) or `Off` (the bare algorithm;
    /// acquisitions then come from the workload's own count).
    pub stats: StatsMode,
    /// Keeps construction to the checked paths below.
    _checked: Checked,
}

/// Only this module can make one, so only its constructors build a config.
#[derive(Debug, Clone, Copy)]
struct Checked;

impl LockscanConfig {
    /// The scan buffer unless told otherwise: 1 MiB, the original test's `MemoryBlock`.
    pub const DEFAULT_SCAN_BYTES: usize = 1 << 20;

    /// `locks` over `layout`, each run for `spec`: one round, a baseline, an empty
    /// critical section, 1 MiB scans, lock counters on.
    pub fn new(layout: Layout, locks: Vec<LockKind>, spec: RunSpec) -> Result<Self, BadInput> {
        if locks.is_empty() {
            return Err(BadInput(
                "--lock selects no lock; give `all` or a list like ttas,ticket".into(),
            ));
        }
        Ok(LockscanConfig {
            layout,
            locks,
            cs_ns: 0,
            scan_bytes: Self::DEFAULT_SCAN_BYTES,
            spec,
            repeat: 1,
            baseline: true,
            stats: StatsMode::Counters,
            _checked: Checked,
        })
    }

    /// Busy work inside the critical section, at most 1 s.
    pub fn with_cs_ns(mut self, ns: u64) -> Result<Self, BadInput> {
        crate::limits::at_most(
            "--cs-ns",
            ns,
            crate::limits::MAX_OP_NS,
            "busy work per critical section, 1 s",
        )?;
        self.cs_ns = ns;
        Ok(self)
    }

    /// Bytes each scanner memsets per pass (what fits in memory is checked against the
    /// machine when the scanners are known).
    pub fn with_scan_bytes(mut self, bytes: usize) -> Result<Self, BadInput> {
        if bytes == 0 {
            return Err(BadInput(
                "--scan-bytes must be at least 1 byte (the default is 1MiB)".into(),
            ));
        }
        self.scan_bytes = bytes;
        Ok(self)
    }

    /// `Off` or `Counters`: lockscan reports neither waits nor hold times.
    pub fn with_stats(mut self, stats: StatsMode) -> Result<Self, BadInput> {
        if !matches!(stats, StatsMode::Off | StatsMode::Counters) {
            return Err(BadInput(format!(
                "--lock-stats: `{stats}` times waits that lockscan does not report; expected off or counters"
            )));
        }
        self.stats = stats;
        Ok(self)
    }

    /// Rounds over every trial, at least 1.
    pub fn with_repeat(mut self, repeat: usize) -> Result<Self, BadInput> {
        if repeat == 0 {
            return Err(BadInput("--repeat must be at least 1".into()));
        }
        self.repeat = repeat;
        Ok(self)
    }

    /// Whether each scenario also runs without its scanners.
    pub fn with_baseline(mut self, baseline: bool) -> Self {
        self.baseline = baseline;
        self
    }
}

/// What `--scan-bytes auto` chose, and from what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoScanBytes {
    /// The buffer each scanner memsets per pass.
    pub bytes: usize,
    /// The largest L2 among the usable CPUs, when the machine reports one.
    pub l2_bytes: Option<u64>,
}

/// `auto` makes the scan buffer this many times the largest L2, so that every pass streams
/// past the scanner's L2 into the shared levels (L3 or memory) wherever the scanner runs.
pub const AUTO_L2_MULTIPLE: u64 = 4;
/// `auto` when no L2 size is reported: 4 × 2 MiB, the largest per-core L2 of current x86
/// server cores (Intel's Golden Cove and Raptor Cove P-cores; AMD's Zen 4 and 5 have 1 MiB).
pub const AUTO_FALLBACK_BYTES: usize = 8 << 20;
/// `auto` never asks for more than this per scanner (an L2 reported as hundreds of MiB is
/// a firmware error, not a cache).
pub const AUTO_MAX_BYTES: usize = 64 << 20;

/// The scan buffer `--scan-bytes auto` uses on `topo`: [`AUTO_L2_MULTIPLE`] × the largest
/// L2 of the usable CPUs, at most [`AUTO_MAX_BYTES`]; [`AUTO_FALLBACK_BYTES`] when no
/// usable CPU reports an L2 size.
pub fn auto_scan_bytes(topo: &Topology) -> AutoScanBytes {
    let l2_bytes = topo
        .allowed()
        .iter()
        .filter_map(|c| topo.cache_of(c, 2)?.size_bytes)
        .filter(|&b| b > 0)
        .max();
    let bytes = match l2_bytes {
        Some(l2) => usize::try_from(l2.saturating_mul(AUTO_L2_MULTIPLE))
            .unwrap_or(AUTO_MAX_BYTES)
            .min(AUTO_MAX_BYTES),
        None => AUTO_FALLBACK_BYTES,
    };
    AutoScanBytes { bytes, l2_bytes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn base() -> LockscanConfig {
        let spec = RunSpec::new(Duration::ZERO, Duration::from_millis(100)).unwrap();
        LockscanConfig::new(Layout::ScannerOnLowest, vec![LockKind::Ttas], spec).unwrap()
    }

    #[test]
    fn defaults_are_the_original_tests() {
        let c = base();
        assert_eq!((c.cs_ns, c.scan_bytes, c.repeat), (0, 1 << 20, 1));
        assert!(c.baseline);
        assert_eq!(c.stats, StatsMode::Counters);
    }

    #[test]
    fn each_bad_value_is_refused_with_its_option() {
        let spec = RunSpec::new(Duration::ZERO, Duration::from_millis(100)).unwrap();
        let e = LockscanConfig::new(Layout::ScannerOnLowest, vec![], spec).unwrap_err();
        assert!(e.0.contains("--lock"), "{e}");
        // A zero run length cannot reach a config: the spec refuses it.
        let e = RunSpec::new(Duration::ZERO, Duration::ZERO).unwrap_err();
        assert!(e.0.contains("duration"), "{e}");
        let e = base().with_cs_ns(1_000_000_001).unwrap_err();
        assert!(
            e.0.contains("--cs-ns 1000000001: at most 1000000000"),
            "{e}"
        );
        assert!(base().with_cs_ns(1_000_000_000).is_ok());
        let e = base().with_scan_bytes(0).unwrap_err();
        assert!(e.0.contains("--scan-bytes"), "{e}");
        for mode in [StatsMode::Waits, StatsMode::Full] {
            let e = base().with_stats(mode).unwrap_err();
            assert!(e.0.contains("expected off or counters"), "{e}");
        }
        assert_eq!(
            base().with_stats(StatsMode::Off).unwrap().stats,
            StatsMode::Off
        );
        let e = base().with_repeat(0).unwrap_err();
        assert!(e.0.contains("--repeat"), "{e}");
    }

    #[test]
    fn auto_scan_bytes_streams_past_the_largest_l2() {
        use crate::topology::fixture::topology;
        // The fixture's cores report a 512 KiB L2 each: 2 MiB.
        let topo = topology(2, 2, false);
        assert_eq!(
            auto_scan_bytes(&topo),
            AutoScanBytes {
                bytes: 2 << 20,
                l2_bytes: Some(512 << 10)
            }
        );
        // No L2 reported: the stated default.
        let mut bare = topo.clone();
        bare.caches.retain(|c| c.level != 2);
        assert_eq!(
            auto_scan_bytes(&bare),
            AutoScanBytes {
                bytes: AUTO_FALLBACK_BYTES,
                l2_bytes: None
            }
        );
        // An absurd L2 is capped.
        let mut huge = topo;
        for c in huge.caches.iter_mut().filter(|c| c.level == 2) {
            c.size_bytes = Some(1 << 40);
        }
        assert_eq!(auto_scan_bytes(&huge).bytes, AUTO_MAX_BYTES);
    }
}
