//! Experiments: each turns engine results (or engine measurements) into its own result
//! model — pure where it can be, so reports are tested without the hardware.

pub mod c2c;
pub mod compare;
pub mod lockscan;
pub mod neighbors;
/// neighbors' rule set, at its old path.
pub use neighbors::diagnosis;
pub mod oltp;
pub mod pairs;
pub mod rwcache;
pub mod smt_yield;
