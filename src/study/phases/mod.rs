//! The study's phases, in the order they run, with each one's share of the budget.
//!
//! Adding an experiment to the study: a file here with its sizer and `Phase`
//! implementation (`crate::study::phase::Phase`), one line in [`ALL`], and its section in
//! [`Report`](crate::report::Report) (a `PhaseName` variant, a field and its line in
//! `Report::sections()`; the section's view implements `conclusion::StudySection`).
//!
//! The user's command (`compare`) runs only when one is given after `--`; its share is
//! then taken from the others in proportion, so a study without a command measures as
//! long as before.

use crate::report::PhaseName;
use crate::study::phase::Sizer;

pub mod c2c;
pub mod compare;
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

/// Every phase, in order. The shares of the built-in phases add up to 1; `compare`'s is
/// what it takes from them when the study has a command ([`share_in`]). The yield phase
/// has the largest share: three rows of the answer table (compute, memory-bound and
/// lock-heavy workloads) stand on its intervals, which need rounds — at 7 % of a quick
/// study its 80 ms runs gave a perfect-SMT guest's 2× yield an interval of 0.64–4.74.
pub const ALL: [Entry; 9] = [
    Entry {
        name: PhaseName::Topology,
        share: 0.0,
        size: topology::size,
    },
    Entry {
        name: PhaseName::Memory,
        share: 0.03,
        size: memory::size,
    },
    Entry {
        name: PhaseName::C2c,
        share: 0.05,
        size: c2c::size,
    },
    Entry {
        name: PhaseName::Lockscan,
        share: 0.18,
        size: lockscan::size,
    },
    Entry {
        name: PhaseName::Neighbors,
        share: 0.17,
        size: neighbors::size,
    },
    Entry {
        name: PhaseName::Oltp,
        share: 0.15,
        size: oltp::size,
    },
    Entry {
        name: PhaseName::Rwcache,
        share: 0.12,
        size: rwcache::size,
    },
    Entry {
        name: PhaseName::Yield,
        share: 0.30,
        size: smt_yield::size,
    },
    Entry {
        name: PhaseName::Compare,
        share: 0.25,
        size: compare::size,
    },
];

/// `name`'s share of the budget as listed in [`ALL`] (0 for a name not in it).
pub fn share(name: PhaseName) -> f64 {
    ALL.iter().find(|e| e.name == name).map_or(0.0, |e| e.share)
}

/// `name`'s share of the budget in a study with or without the user's command: without
/// one, `compare` gets nothing and the others their listed shares; with one, `compare`
/// its listed share and the others theirs of what remains. Either way they add up to 1.
pub fn share_in(name: PhaseName, with_command: bool) -> f64 {
    let command = if with_command {
        share(PhaseName::Compare)
    } else {
        0.0
    };
    if name == PhaseName::Compare {
        command
    } else {
        share(name) * (1.0 - command)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_to_the_budget_and_every_phase_is_listed_once() {
        for with_command in [false, true] {
            let sum: f64 = ALL.iter().map(|e| share_in(e.name, with_command)).sum();
            assert!((sum - 1.0).abs() < 1e-9, "{with_command}: {sum}");
        }
        assert_eq!(share_in(PhaseName::Compare, false), 0.0);
        assert_eq!(share_in(PhaseName::Yield, false), share(PhaseName::Yield));
        assert!(share_in(PhaseName::Yield, true) < share(PhaseName::Yield));
        assert_eq!(
            ALL.iter().map(|e| e.name).collect::<Vec<_>>(),
            PhaseName::ALL
        );
    }
}
