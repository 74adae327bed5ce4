//! How far a long run is, told to whoever shows it: the one progress trait of the study
//! (a stage per phase), `mem pages` (its steps and changes to the machine) and `compare`
//! (its runs). The measuring code calls it; the command layer draws bars or plain lines,
//! and a caller that shows nothing passes [`Quiet`]. Every method has an empty default, so
//! a view implements what it shows.

use std::time::Duration;

/// What a long run says about its progress.
pub trait Progress {
    /// A stage starts (a study phase): `steps` expected, 0 when the steps are not counted
    /// (show the time against `estimate` instead).
    fn start(&self, _stage: &'static str, _steps: u64, _estimate: Duration) {}
    /// The number of steps is now known, or changed (compare's runs once its rounds are
    /// sized).
    fn planned(&self, _steps: u64) {}
    /// `n` more steps done.
    fn advance(&self, _n: u64) {}
    /// Where the run is, in a few words ("round 3/7", a working set); the next step
    /// replaces it, so a view may show only the latest.
    fn step(&self, _msg: &str) {}
    /// Worth a line of its own (a change to the machine, a server started, a setup
    /// command): always shown.
    fn note(&self, _msg: &str) {}
    /// The stage ended; `outcome` says how in one line ("done in 4.2 s", "skipped: why").
    fn finish(&self, _stage: &'static str, _outcome: &str) {}
}

/// Shows nothing.
pub struct Quiet;

impl Progress for Quiet {}
