//! The study's phases, in the order they run, with each one's share of the budget.
//!
//! Adding an experiment to the study: a file here with its sizer and `Phase`
//! implementation (`crate::study::phase::Phase`), one line in [`ALL`], and its section in
//! [`Report`](crate::report::Report) (a `PhaseName` variant and a field).

use crate::report::PhaseName;
use crate::study::phase::Sizer;

pub mod c2c;
pub mod lockscan;
pub mod memory;
pub mod neighbors;
pub mod oltp;
pub mod rwcache;
pub mod smt_yield;
pub mod topology;

/// One phase of the study: its name, its share of the budget, its sizer.
pub struct Entry {
    pub name: PhaseName,
    pub share: f64,
    pub size: Sizer,
}

/// Every phase, in order. The shares add up to 1.
pub const ALL: [Entry; 8] = [
    Entry {
        name: PhaseName::Topology,
        share: 0.0,
        size: topology::size,
    },
    Entry {
        name: PhaseName::Memory,
        share: 0.0,
        size: memory::size,
    },
    Entry {
        name: PhaseName::C2c,
        share: 0.05,
        size: c2c::size,
    },
    Entry {
        name: PhaseName::Lockscan,
        share: 0.25,
        size: lockscan::size,
    },
    Entry {
        name: PhaseName::Neighbors,
        share: 0.25,
        size: neighbors::size,
    },
    Entry {
        name: PhaseName::Oltp,
        share: 0.20,
        size: oltp::size,
    },
    Entry {
        name: PhaseName::Rwcache,
        share: 0.15,
        size: rwcache::size,
    },
    Entry {
        name: PhaseName::Yield,
        share: 0.10,
        size: smt_yield::size,
    },
];

/// `name`'s share of the budget (0 for a name not in [`ALL`]).
pub fn share(name: PhaseName) -> f64 {
    ALL.iter().find(|e| e.name == name).map_or(0.0, |e| e.share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_budget_and_every_phase_is_listed_once() {
        let sum: f64 = ALL.iter().map(|e| e.share).sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        assert_eq!(
            ALL.iter().map(|e| e.name).collect::<Vec<_>>(),
            PhaseName::ALL
        );
    }
}
