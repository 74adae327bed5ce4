//! `smtlab topo`: the machine's topology as a tree, a per-CPU table or JSON.

use crate::topology::view;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Tree,
    Cpus,
    Json,
}

#[derive(Debug, Clone)]
pub struct TopoCommand {
    pub root: PathBuf,
    pub view: View,
}

pub fn run(cfg: &TopoCommand, out: &mut dyn Write) -> Result<()> {
    let topo = super::load_topology(&cfg.root)?;
    let text = match cfg.view {
        View::Tree => view::tree(&topo),
        View::Cpus => view::cpu_table(&topo),
        View::Json => view::to_json(&topo) + "\n",
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}
