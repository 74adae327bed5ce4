//! Memory settings that decide how a database server behaves under pressure, and what
//! page size does to memory access on this CPU.
//!
//! - `mem report` ([`read()`], [`findings`], [`view`]): overcommit mode and commit
//!   headroom, page cache and dirty data, swap, transparent and hugetlb huge pages,
//!   reclaim and NUMA settings, this process's cgroup limits and the OOM killer's likeliest
//!   victims, read from procfs and sysfs under a root ([`source`]) into one serde model
//!   ([`model`]), with findings in plain words.

pub mod findings;
pub mod fixture;
pub mod model;
pub mod pages;
pub mod read;
pub mod source;
pub mod tlb;
pub mod view;

pub use model::{MemReport, MemorySection};
pub use read::read;
pub use view::{PHASE, TITLE};
