//! `smtlab plan`: which CPUs each thread would get, for this machine or a dump.

use crate::placement::{self, Request};
use anyhow::Result;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct PlanCommand {
    pub root: PathBuf,
    pub request: Request,
    pub threads: usize,
    pub within: placement::Scope,
    pub json: bool,
}

pub fn run(cfg: &PlanCommand, out: &mut dyn std::io::Write) -> Result<()> {
    crate::limits::at_most(
        "--threads",
        cfg.threads as u64,
        crate::limits::MAX_THREADS,
        "threads to place",
    )?;
    let topo = super::load_topology(&cfg.root)?;
    let plan = placement::plan_within(&topo, &cfg.request, cfg.threads, cfg.within)?;
    super::emit(
        out,
        cfg.json,
        &plan,
        |p| crate::placement::view::plan_text(&topo, p),
        false,
    )
}
