//! Experiments: each turns engine results (or engine measurements) into its own result
//! model — pure where it can be, so reports are tested without the hardware.

pub mod c2c;
pub mod compare;
pub mod diagnosis;
pub mod lockscan;
pub mod neighbors;
pub mod oltp;
/// Seed 003: a read-mostly metadata cache under spin, reader/writer, brlock, seqlock and RCU schemes.
pub mod rwcache;
