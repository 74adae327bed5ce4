//! The ceiling on contended lock handoffs a cache-line latency implies (pure): the c2c
//! model records it per class, and the lock experiments compare their handoff rates to it.
//!
//! A contended lock handoff needs at least k serialized cache-line transfers (the lock
//! line, then data lines; global spinning adds invalidations per waiter), so handoffs/s ≤
//! 1 / (k·L) for one-way latency L: 134 ns allows 7.5 M/s at k = 1 and 3.7 M/s at k = 2.

use serde::{Deserialize, Serialize};

/// Upper bound on contended lock handoffs per second when each handoff needs `k`
/// serialized transfers of a line with one-way latency `latency_ns`: `1e9 / (k·L)`.
/// Infinite for a zero latency or k; NaN for a NaN latency.
pub fn ceiling(latency_ns: f64, k: u32) -> f64 {
    1e9 / (k as f64 * latency_ns)
}

/// A measured handoff rate as a share of the k = 1 [`ceiling`] (0.25 = a quarter of what
/// the line transfers alone would allow).
pub fn share_of_ceiling(handoffs_per_sec: f64, latency_ns: f64) -> f64 {
    handoffs_per_sec / ceiling(latency_ns, 1)
}

/// The ceilings implied by one latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// One-way latency the ceilings derive from, ns.
    pub latency_ns: f64,
    /// 1 / L: one line transfer per handoff.
    pub k1_handoffs_per_sec: f64,
    /// 1 / (2·L): the lock line plus one data line.
    pub k2_handoffs_per_sec: f64,
}

impl Ceiling {
    pub fn of(latency_ns: f64) -> Self {
        Self {
            latency_ns,
            k1_handoffs_per_sec: ceiling(latency_ns, 1),
            k2_handoffs_per_sec: ceiling(latency_ns, 2),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceilings_are_one_over_k_transfers() {
        // 1e9 / (k·L): 7 ns (SMT siblings) → 142.9 M/s, 71.4 M/s; 134 ns (two vCPUs of a
        // cloud VM) → 7.46 M/s, 3.73 M/s; 200 ns → 5 M/s, 2.5 M/s.
        assert!((ceiling(7.0, 1) / 1e6 - 142.86).abs() < 0.01);
        assert!((ceiling(7.0, 2) / 1e6 - 71.43).abs() < 0.01);
        assert!((ceiling(134.0, 1) / 1e6 - 7.46).abs() < 0.01);
        assert!((ceiling(134.0, 2) / 1e6 - 3.73).abs() < 0.01);
        assert_eq!(ceiling(200.0, 2), 2.5e6);
        assert_eq!(share_of_ceiling(2.5e6, 200.0), 0.5);
        let c = Ceiling::of(100.0);
        assert_eq!((c.k1_handoffs_per_sec, c.k2_handoffs_per_sec), (1e7, 5e6));
    }

    #[test]
    fn ceiling_edges() {
        assert!(ceiling(0.0, 1).is_infinite());
        assert!(ceiling(100.0, 0).is_infinite());
        assert!(ceiling(f64::NAN, 1).is_nan());
        // A lock handing off 1 M times/s over 250 ns lines uses a quarter of the ceiling.
        assert_eq!(share_of_ceiling(1e6, 250.0), 0.25);
    }
}
