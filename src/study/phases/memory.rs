//! The memory phase: `mem report`'s reading of procfs and sysfs (overcommit, page cache,
//! huge pages, cgroup limits, OOM candidates) with its findings. It reads files only, so it
//! takes no share of the budget. `mem pages` is not part of the study: a curve worth
//! reading takes 15 s or more per 512 MiB, and its question (what page size costs) is not
//! the study's (what CPU sharing costs).
//!
//! On a synthetic engine the section is read from [`crate::mem::fixture`]'s made-up tree,
//! so the study's tests do not depend on this machine's memory.

use crate::report::{MemorySection, PhaseName, Report};
use crate::study::phase::{Outcome, Phase, RunCtx, SizeCtx};
use anyhow::Result;
use std::time::Duration;

struct Memory;

pub fn size(_: &SizeCtx<'_>) -> Result<Box<dyn Phase>> {
    Ok(Box::new(Memory))
}

impl Phase for Memory {
    fn name(&self) -> PhaseName {
        PhaseName::Memory
    }
    fn estimate(&self) -> Duration {
        Duration::ZERO
    }
    fn units(&self) -> u64 {
        1
    }
    fn run(&self, ctx: &RunCtx<'_>, report: &mut Report) -> Result<Outcome> {
        let rep = if ctx.engine.synthetic() {
            crate::mem::read(&crate::mem::fixture::tree(
                &crate::mem::fixture::Machine::default(),
            ))
        } else {
            crate::mem::read(&crate::mem::source::Dir::new(std::path::Path::new("/")))
        };
        report.memory = Some(MemorySection { report: rep });
        ctx.progress.advance(1);
        Ok(Outcome::done())
    }
}
