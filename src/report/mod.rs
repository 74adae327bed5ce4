//! The study's one data model, [`Report`](crate::report::Report), and everything that turns it into files:
//! `results.json` (the model serialised), `report.html` (self-contained, SVG charts) and
//! `summary.md`.
//!
//! Rendering is a pure function of the JSON: `smtlab study` writes `results.json`, reads it
//! back and renders from what it read, exactly as `smtlab report results.json` does, so both
//! produce byte-identical HTML and Markdown. Every file is written atomically (a temporary
//! file in the same directory, then `rename`), so an error or Ctrl-C never leaves half a
//! file behind.
//!
//! Codemap: `model.rs` holds the top-level model ([`Report`], provenance, machine facts,
//! phases, verdict) and `write.rs` the files ([`write_all`]), both re-exported here; the
//! experiments' sections are below. [`machine`](crate::report::machine) collects the facts about this machine and build; [`verdict`](crate::report::verdict) turns
//! results into plain words; [`html`](crate::report::html) and [`markdown`](crate::report::markdown) render;
//! [`lenient`](crate::lenient) (re-exported) reads JSON in which non-finite numbers were written as `null`;
//! [`view`](crate::report::view) holds the study's own tables (answers, machine, Slurm, phases) both renderers print.

pub mod html;
pub mod machine;
pub mod markdown;
pub mod metrics;
mod model;
pub mod slurm;
pub mod verdict;
pub mod view;
mod write;

pub use crate::conclusion::{Answer, Evidence, Finding, HtAnswer, PhaseName, WorkloadClass};
// The sections of the experiments that own their view live beside their models.
pub use crate::experiments::c2c::C2cSection;
pub use crate::experiments::lockscan::LockscanSection;
pub use crate::experiments::neighbors::{
    NeighborsSection, NeighborsSeries, NeighborsStep, SeriesPlacement,
};
pub use crate::experiments::rwcache::{RwcacheRow, RwcacheSection};

/// The JSON reader for non-finite numbers written as `null`, at its old path.
pub use crate::lenient;
pub use model::*;
pub use write::*;

pub use crate::experiments::compare::{CompareSection, PlacementMedian};
pub use crate::experiments::oltp::{OltpLayoutSummary, OltpSection};
pub use crate::experiments::smt_yield::YieldSection;
pub use crate::mem::MemorySection;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_schema_version_is_bad_input() {
        let e = Report::from_json(r#"{"schema_version": 999}"#).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_BAD_INPUT);
        assert!(format!("{e:#}").contains("999"));
    }
}
