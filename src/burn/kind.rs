//! Which resource a burner stresses, and the unit its progress counter counts.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A burner: one tight loop stressing one resource (a "ruler" in SMiTe's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BurnerKind {
    /// 64-bit `%` trial division, `sysbench cpu`'s algorithm: divider-bound.
    Prime,
    /// Dependent add/xor chain: one integer ALU op per cycle at best.
    Int,
    /// Dependent 64-bit `imul` chain: multiplier latency-bound.
    Mul,
    /// Independent FMA chains, widest SIMD this CPU offers (or a forced width).
    Fma(FmaWidth),
    /// PAUSE (`spin_loop`) hints: a spinning waiter that yields pipeline slots.
    Pause,
    /// memset/memcpy over a buffer of 4× the last-level cache (≥ 64 MiB): DRAM bandwidth.
    Stream,
    /// Pointer chase over a random single cycle of cache lines larger than the LLC:
    /// DRAM latency, one miss in flight.
    Chase,
    /// Sequential loads over half the L1d: load ports.
    L1,
    /// Sequential loads over half the L2.
    L2,
    /// A 1 MiB memset in a loop: the scan thread of the classic test in which a lock thread
    /// on the scanner's SMT sibling acquires about 10× less.
    Scan,
}

/// The SIMD width of the `fma` burner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FmaWidth {
    /// The widest width this CPU supports, decided at run time.
    Auto,
    /// Scalar `vfmadd…sd` (or a software `mul_add` without the FMA extension).
    Scalar,
    /// 256-bit AVX2 + FMA3.
    Avx2,
    /// 512-bit AVX-512F.
    Avx512,
}

/// What one unit of a burner's progress counter is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// One full trial-division pass over 3..max_prime (sysbench's event).
    Events,
    /// One dependent ALU instruction (add, xor, imul) or one PAUSE.
    Ops,
    /// One fused multiply-add per SIMD lane.
    Fmas,
    /// One byte written (memset, memcpy destination) or loaded.
    Bytes,
    /// One dependent load of the pointer chase.
    Loads,
}

impl Unit {
    /// Plural label used in tables and JSON field names.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Events => "events",
            Unit::Ops => "ops",
            Unit::Fmas => "fmas",
            Unit::Bytes => "bytes",
            Unit::Loads => "loads",
        }
    }
}

/// The kind names accepted on the command line.
pub const KIND_NAMES: &str =
    "prime, int, mul, fma, fma-scalar, fma-avx2, fma-avx512, pause, stream, chase, l1, l2, scan";

/// An unknown burner kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown burner kind `{0}`; valid kinds: {KIND_NAMES}")]
pub struct UnknownKind(pub String);

impl BurnerKind {
    /// Every kind with an automatic variant, for tests and help.
    pub const ALL: [BurnerKind; 10] = [
        BurnerKind::Prime,
        BurnerKind::Int,
        BurnerKind::Mul,
        BurnerKind::Fma(FmaWidth::Auto),
        BurnerKind::Pause,
        BurnerKind::Stream,
        BurnerKind::Chase,
        BurnerKind::L1,
        BurnerKind::L2,
        BurnerKind::Scan,
    ];

    /// What the progress counter counts.
    pub fn unit(self) -> Unit {
        match self {
            BurnerKind::Prime => Unit::Events,
            BurnerKind::Int | BurnerKind::Mul | BurnerKind::Pause => Unit::Ops,
            BurnerKind::Fma(_) => Unit::Fmas,
            BurnerKind::Stream | BurnerKind::L1 | BurnerKind::L2 | BurnerKind::Scan => Unit::Bytes,
            BurnerKind::Chase => Unit::Loads,
        }
    }

    /// The resource it stresses, one line for help and reports.
    pub fn describe(self) -> &'static str {
        match self {
            BurnerKind::Prime => "integer divider (64-bit % trial division, as sysbench cpu)",
            BurnerKind::Int => "integer ALU (dependent add/xor chain)",
            BurnerKind::Mul => "integer multiplier (dependent imul chain)",
            BurnerKind::Fma(_) => "FP/SIMD FMA units (independent chains)",
            BurnerKind::Pause => "nothing much: PAUSE spin hints",
            BurnerKind::Stream => "DRAM bandwidth (memset/memcpy over 4x LLC)",
            BurnerKind::Chase => "DRAM latency (pointer chase over > LLC)",
            BurnerKind::L1 => "L1d load ports (loads over half the L1d)",
            BurnerKind::L2 => "L2 (loads over half the L2)",
            BurnerKind::Scan => "L1/L2 stores (1 MiB memset in a loop)",
        }
    }

    /// True for kinds whose buffer size comes from the cache topology.
    pub fn uses_caches(self) -> bool {
        matches!(
            self,
            BurnerKind::Stream | BurnerKind::Chase | BurnerKind::L1 | BurnerKind::L2
        )
    }
}

impl fmt::Display for BurnerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BurnerKind::Prime => "prime",
            BurnerKind::Int => "int",
            BurnerKind::Mul => "mul",
            BurnerKind::Fma(FmaWidth::Auto) => "fma",
            BurnerKind::Fma(FmaWidth::Scalar) => "fma-scalar",
            BurnerKind::Fma(FmaWidth::Avx2) => "fma-avx2",
            BurnerKind::Fma(FmaWidth::Avx512) => "fma-avx512",
            BurnerKind::Pause => "pause",
            BurnerKind::Stream => "stream",
            BurnerKind::Chase => "chase",
            BurnerKind::L1 => "l1",
            BurnerKind::L2 => "l2",
            BurnerKind::Scan => "scan",
        })
    }
}

impl FromStr for BurnerKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "prime" => BurnerKind::Prime,
            "int" => BurnerKind::Int,
            "mul" => BurnerKind::Mul,
            "fma" => BurnerKind::Fma(FmaWidth::Auto),
            "fma-scalar" => BurnerKind::Fma(FmaWidth::Scalar),
            "fma-avx2" => BurnerKind::Fma(FmaWidth::Avx2),
            "fma-avx512" => BurnerKind::Fma(FmaWidth::Avx512),
            "pause" => BurnerKind::Pause,
            "stream" => BurnerKind::Stream,
            "chase" => BurnerKind::Chase,
            "l1" => BurnerKind::L1,
            "l2" => BurnerKind::L2,
            "scan" => BurnerKind::Scan,
            _ => return Err(UnknownKind(s.to_string())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in BurnerKind::ALL.into_iter().chain([
            BurnerKind::Fma(FmaWidth::Scalar),
            BurnerKind::Fma(FmaWidth::Avx2),
            BurnerKind::Fma(FmaWidth::Avx512),
        ]) {
            assert_eq!(k.to_string().parse::<BurnerKind>().unwrap(), k);
            assert!(KIND_NAMES.contains(&k.to_string()), "{k}");
        }
        assert_eq!(" PRIME ".parse::<BurnerKind>().unwrap(), BurnerKind::Prime);
    }

    #[test]
    fn unknown_kind_lists_valid_ones() {
        let e = "divide".parse::<BurnerKind>().unwrap_err().to_string();
        assert!(e.contains("`divide`") && e.contains("prime") && e.contains("chase"));
    }

    #[test]
    fn units() {
        assert_eq!(BurnerKind::Prime.unit(), Unit::Events);
        assert_eq!(BurnerKind::Stream.unit().label(), "bytes");
        assert_eq!(BurnerKind::Chase.unit(), Unit::Loads);
    }
}
