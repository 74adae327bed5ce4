//! Experiments: each turns engine results (or engine measurements) into its own result
//! model — pure where it can be, so reports are tested without the hardware.

pub mod c2c;
pub mod compare;
pub mod lockscan;
pub mod neighbors;
/// neighbors' rule set, at its old path.
pub use neighbors::diagnosis;
pub mod oltp;
/// A read-mostly metadata cache under spin, reader/writer, brlock, seqlock and RCU schemes.
pub mod rwcache;
/// `yield`: throughput and latency with and without SMT siblings on the same cores.
pub mod smt_yield;
