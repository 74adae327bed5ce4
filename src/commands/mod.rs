//! One module per subcommand: a typed `Config` in, output written to a `Write`.

pub mod burn;
pub mod c2c;
pub mod compare;
pub mod lockscan;
/// `smtlab mem`: memory settings in plain words, and what page size costs on this CPU.
pub mod mem;
/// `smtlab merge`: many hosts' results.json into one answer per machine type.
pub mod merge;
pub mod neighbors;
pub mod oltp;
/// `smtlab pairs`: pair prediction from profiles, checked, and placement advice.
pub mod pairs;
pub mod plan;
/// `smtlab report`: re-render a study's HTML and Markdown from its results.json.
pub mod report;
/// `smtlab rwcache`: the read-mostly cache's scheme comparison, table and JSON.
pub mod rwcache;
/// `smtlab smt`: SMT's state, and switching it off and on with a journal.
pub mod smt;
/// `smtlab yield`: SMT on vs off on the same cores, per workload.
pub mod smt_yield;
/// `smtlab study`: every experiment within a budget, into results.json, report.html, summary.md.
pub mod study;
/// `smtlab top`: per-CPU and per-core utilisation, and what it leaves.
pub mod top;
pub mod topo;

use crate::topology::{Topology, discover};
use anyhow::{Context, Result};
use std::path::Path;

/// Writes a finished experiment: its serde model as JSON or its text view, then turns a
/// Ctrl-C-shortened run into the `Interrupted` error (exit 130) after the output is out.
pub fn emit<T: serde::Serialize>(
    out: &mut dyn std::io::Write,
    json: bool,
    report: &T,
    human: impl FnOnce(&T) -> String,
    interrupted: bool,
) -> Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(report)?)?;
    } else {
        out.write_all(human(report).as_bytes())?;
    }
    if interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}

/// [`emit`] for a result laid out as one document: its blocks drawn by the terminal
/// writer.
pub fn emit_blocks<T: serde::Serialize>(
    out: &mut dyn std::io::Write,
    json: bool,
    report: &T,
    blocks: impl FnOnce(&T) -> Vec<crate::render::blocks::Block>,
) -> Result<()> {
    emit(
        out,
        json,
        report,
        |r| crate::render::terminal::draw(&blocks(r)),
        false,
    )
}

/// Reads the topology for a command that pins threads or measures: `root` must be this
/// machine's (`/`), unless the command only prints placements (`dry_run`). A dump read for
/// a live run would pin this machine's CPUs under another machine's labels, or fail
/// partway with the kernel's bare `EINVAL`.
pub fn topology_for_run(root: &Path, dry_run: bool, dry_run_flag: bool) -> Result<Topology> {
    if !dry_run && !is_this_machine(root) {
        let how = if dry_run_flag {
            "add --dry-run to print the placements on that machine, or drop --sysfs-root to measure this one"
        } else {
            "this command has no dry run; read the tree with `smtlab topo` or `smtlab plan`, or drop --sysfs-root to measure this machine"
        };
        return Err(crate::error::BadInput(format!(
            "--sysfs-root {}: another machine's topology is for reading only, and this run \
             would pin and measure this machine's CPUs; {how}",
            root.display()
        ))
        .into());
    }
    load_topology(root)
}

/// True when `root` is this machine's root directory.
fn is_this_machine(root: &Path) -> bool {
    match (root.canonicalize(), Path::new("/").canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Reads the topology under `root`, with the root named in the error.
pub fn load_topology(root: &Path) -> Result<Topology> {
    discover(root).with_context(|| format!("reading the CPU topology under `{}`", root.display()))
}
