//! One module per subcommand: a typed `Config` in, output written to a `Write`.

pub mod burn;
pub mod c2c;
pub mod lockscan;
pub mod neighbors;
pub mod oltp;
pub mod plan;
/// `smtlab report`: re-render a study's HTML and Markdown from its results.json.
pub mod report;
/// `smtlab rwcache`: the seed 003 scheme comparison, table and JSON.
pub mod rwcache;
/// `smtlab study`: every experiment within a budget, into results.json, report.html, summary.md.
pub mod study;
pub mod topo;

use crate::topology::{Topology, discover};
use anyhow::{Context, Result};
use std::path::Path;

/// Reads the topology under `root`, with the root named in the error.
pub fn load_topology(root: &Path) -> Result<Topology> {
    discover(root).with_context(|| format!("reading the CPU topology under `{}`", root.display()))
}
