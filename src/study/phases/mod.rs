//! The study's phases, in the order they run, with each one's share of the budget.
//!
//! Adding an experiment to the study: a file here with its sizer and `Phase`
//! implementation (`crate::study::phase::Phase`), one line in [`ALL`], and its section in
//! [`Report`](crate::report::Report) (a field and its line in `Report::sections()`). The
//! phase's name and its section's title are constants beside the section's view, which
//! implements `conclusion::StudySection`.
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
pub mod pairs;
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
pub const ALL: [Entry; 10] = [
    Entry {
        name: topology::PHASE,
        share: 0.0,
        size: topology::size,
    },
    Entry {
        name: crate::mem::PHASE,
        share: 0.03,
        size: memory::size,
    },
    Entry {
        name: crate::experiments::c2c::PHASE,
        share: 0.05,
        size: c2c::size,
    },
    Entry {
        name: crate::experiments::lockscan::PHASE,
        share: 0.13,
        size: lockscan::size,
    },
    Entry {
        name: crate::experiments::neighbors::PHASE,
        share: 0.17,
        size: neighbors::size,
    },
    Entry {
        name: crate::experiments::oltp::PHASE,
        share: 0.12,
        size: oltp::size,
    },
    Entry {
        name: crate::experiments::rwcache::PHASE,
        share: 0.12,
        size: rwcache::size,
    },
    Entry {
        name: crate::experiments::smt_yield::PHASE,
        share: 0.30,
        size: smt_yield::size,
    },
    Entry {
        name: crate::experiments::compare::PHASE,
        share: 0.25,
        size: compare::size,
    },
    // Last and short: the rulers' own pairs and the model's fit; a user's workloads need
    // their own profiles (`smtlab pairs`).
    Entry {
        name: crate::experiments::pairs::PHASE,
        share: 0.08,
        size: pairs::size,
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
        share(crate::experiments::compare::PHASE)
    } else {
        0.0
    };
    if name == crate::experiments::compare::PHASE {
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
        assert_eq!(share_in(crate::experiments::compare::PHASE, false), 0.0);
        assert_eq!(
            share_in(crate::experiments::smt_yield::PHASE, false),
            share(crate::experiments::smt_yield::PHASE)
        );
        assert!(
            share_in(crate::experiments::smt_yield::PHASE, true)
                < share(crate::experiments::smt_yield::PHASE)
        );
        let mut labels: Vec<&str> = ALL.iter().map(|e| e.name.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), ALL.len(), "a phase named twice: {labels:?}");
    }

    #[test]
    fn every_report_section_is_filled_by_a_listed_phase() {
        let r = crate::study::fixture::smt();
        for s in r.sections() {
            assert!(
                ALL.iter().any(|e| e.name == s.phase),
                "section {} has no phase",
                s.phase
            );
        }
    }
}
