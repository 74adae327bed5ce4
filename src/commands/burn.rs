//! `smtlab burn`: N burners of one kind, pinned per a placement, like `stress-ng --cpu`;
//! prints each burner's CPUs and rate, and the total.

use crate::burn::{self, BurnSpec, Mode};
use crate::cpuset::CpuSet;
use crate::error::BadInput;
use crate::placement::{self, Request};
use anyhow::Result;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// A validated `burn` invocation.
#[derive(Debug, Clone)]
pub struct BurnCommand {
    pub spec: BurnSpec,
    /// Number of burners (≥ 1).
    pub threads: usize,
    pub placement: Request,
    /// The unit a scoped placement stays inside.
    pub within: placement::Scope,
    pub mode: Mode,
    pub warmup: Duration,
    pub duration: Duration,
    pub json: bool,
    /// Allows more than [`crate::limits::MAX_THREADS_PER_CPU`] burners per usable CPU.
    pub force: bool,
    /// Set when this process is a burner child of another smtlab (hidden flags).
    pub child: Option<Child>,
    /// `--export-json/csv/markdown`: the report as files.
    pub exports: crate::render::export::Exports,
}

/// The child side of process mode.
#[derive(Debug, Clone)]
pub struct Child {
    /// The CPUs to pin the one burner to.
    pub cpus: CpuSet,
    /// Run until SIGTERM instead of for `duration`.
    pub until_stopped: bool,
}

impl BurnCommand {
    /// Checks what clap cannot.
    pub fn validate(&self) -> Result<(), BadInput> {
        if self.threads == 0 {
            return Err(BadInput(
                "--threads must be at least 1 (got 0): how many burners to run".into(),
            ));
        }
        use crate::limits;
        let (max, why) = match self.mode {
            Mode::Process => (
                limits::MAX_PROCESSES,
                "process-mode burners, one process each",
            ),
            Mode::Thread => (
                limits::MAX_THREADS,
                "burner threads; more only measure the scheduler",
            ),
        };
        limits::at_most("--threads", self.threads as u64, max, why)?;
        limits::at_most(
            "--max-prime",
            self.spec.max_prime(),
            limits::MAX_MAX_PRIME,
            "one event would take minutes; sysbench's default is 10000",
        )?;
        Ok(())
    }
}

pub fn run(cfg: &BurnCommand, out: &mut dyn Write) -> Result<()> {
    cfg.validate()?;
    cfg.exports.check()?;
    let topo = super::load_topology(Path::new("/"))?;
    if let Some(child) = &cfg.child {
        let duration = (!child.until_stopped).then_some(cfg.duration);
        return burn::run_child(&cfg.spec, &topo, &child.cpus, cfg.warmup, duration, out);
    }
    let plan = placement::plan_within(&topo, &cfg.placement, cfg.threads, cfg.within)?;
    // Burners on a pinned subset crowd those CPUs; unpinned ones share every usable CPU.
    let cpus = plan
        .threads
        .iter()
        .fold(CpuSet::default(), |acc, t| acc.union(&t.cpus))
        .len();
    crate::limits::per_cpu("--threads", cfg.threads as u64, cpus, cfg.force)?;
    let sets: Vec<CpuSet> = plan.threads.iter().map(|t| t.cpus.clone()).collect();
    let (bytes, what) = burn::buffers_total(cfg.spec.kind(), &topo, &sets);
    crate::limits::memory(
        &format!("--threads {} with --kind {}", cfg.threads, cfg.spec.kind()),
        bytes,
        crate::limits::mem_available_bytes(),
        &what,
        crate::limits::Force::Offered(cfg.force),
    )?;
    let run =
        crate::engine::RunSpec::new(cfg.warmup, cfg.duration)?.with_counters(cfg.spec.counters());
    let report = match cfg.mode {
        Mode::Thread => burn::run_threads(&cfg.spec, &topo, &plan, &run)?,
        Mode::Process => burn::run_processes(&cfg.spec, &plan, &run, &mut |pids| {
            let list: Vec<String> = pids.iter().map(i32::to_string).collect();
            crate::say!("burn: burner processes started: {}", list.join(" "));
        })?,
    };
    super::emit_blocks(out, cfg.json, &report, burn::view::blocks)?;
    cfg.exports.write(|| burn::view::export(&report))?;
    burn::interrupted_error(&report)
}
