//! `smtlab pairs`: what two workloads do to each other when they share a core (SMT
//! siblings) or, without SMT, a cache and the memory bus — predicted from one profile per
//! workload (its sensitivity to and contentiousness on each ruler's resource), by a model
//! fitted on this machine from the rulers' own pairs (SMiTe, MICRO 2014; Bubble-Up,
//! MICRO 2011, between cores), each prediction with an interval, checked against real
//! pairs measured here; and the placement that follows from it (`--advise`).
//!
//! [`config`] (checked options), [`run`](mod@run) (partner, profile and check rounds over any
//! [`crate::engine::Engine`], the user's commands through compare's runner),
//! [`analysis`] (ratios, NNLS, the model, the check; pure), [`advice`] (the placement
//! search; pure), [`model`] (serde), [`view`] (the one document).

pub mod advice;
pub mod analysis;
pub mod config;
pub mod model;
pub mod run;
pub mod view;

pub use config::Config;
pub use model::{PairsReport, PairsSection};
pub use run::run;
pub use view::{PHASE, TITLE};
