//! One module per subcommand: a typed `Config` in, output written to a `Write`.

pub mod burn;
pub mod c2c;
pub mod oltp;
pub mod plan;
pub mod topo;

use crate::topology::{Topology, discover};
use anyhow::{Context, Result};
use std::path::Path;

/// Reads the topology under `root`, with the root named in the error.
pub fn load_topology(root: &Path) -> Result<Topology> {
    discover(root).with_context(|| format!("reading the CPU topology under `{}`", root.display()))
}
