//! `smtlab merge`: many hosts' `results.json` files in, one answer per machine type out.
//!
//! Data flow: `input` finds and decodes the files (bad ones become skipped entries with a
//! reason) → `host` names each host, keys its machine type and lists what its own results
//! say could have disturbed it → `build` keeps one study per host, groups hosts by type and
//! pools each workload class's ratio across them (`pool`: t and normal quantiles from
//! `stats::distributions`) → [`Fleet`](model::Fleet) → `view` (Markdown, HTML,
//! terminal text, Prometheus gauges).
//! `fixture` makes up hosts for tests and the benchmark.

pub mod build;
pub mod fixture;
pub mod host;
pub mod input;
pub mod model;
pub mod pool;
pub mod view;

use model::{Fleet, FleetProvenance};
use std::path::PathBuf;

/// File names written into the output directory.
pub const FLEET_JSON: &str = "fleet.json";
pub const FLEET_HTML: &str = "fleet.html";
pub const FLEET_MD: &str = "fleet.md";

/// Reads every input (files, and `results.json` files under directories) on `threads`
/// threads and builds the fleet. Bad inputs are listed in `skipped`, never fatal; Err for
/// more inputs than `merge` reads at once ([`crate::error::BadInput`]) and once a signal
/// arrived ([`crate::interrupt::Interrupted`]: no partial fleet).
pub fn merge(
    inputs: &[PathBuf],
    threads: usize,
    provenance: FleetProvenance,
) -> anyhow::Result<Fleet> {
    let (files, mut skipped) = input::expand(inputs)?;
    crate::interrupt::check()?;
    crate::say!(
        "merge: reading {} on {}",
        crate::render::count(files.len(), "file"),
        crate::render::count(threads.clamp(1, 64).min(files.len().max(1)), "thread")
    );
    let mut hosts = Vec::with_capacity(files.len());
    for r in input::load_all(&files, threads)? {
        match r {
            Ok(l) => hosts.push(host::Host::from_loaded(l)),
            Err(s) => skipped.push(s),
        }
    }
    let fleet = build::build(hosts, skipped, files.len(), provenance);
    crate::interrupt::check()?;
    Ok(fleet)
}

/// Provenance of a merge starting now.
pub fn provenance(command: String) -> FleetProvenance {
    FleetProvenance {
        smtlab_version: env!("CARGO_PKG_VERSION").into(),
        git_revision: crate::report::machine::GIT_REVISION.into(),
        command,
        merged_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
    }
}
