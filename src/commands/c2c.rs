//! `smtlab c2c`: one-way cache-line handoff latency between every pair of usable CPUs, as a
//! matrix, per-pair spread and the implied ceiling on contended lock handoffs.

use crate::cpuset::CpuSet;
use crate::engine::PingPongSpec;
use crate::error::{BadInput, NotPossible};
use crate::experiments::c2c::{self, C2c};
use crate::placement::PlanError;
use crate::render;
use anyhow::Result;
use std::io::{IsTerminal, Write};
use std::path::Path;

#[derive(Debug, Clone)]
pub struct C2cCommand {
    /// CPUs to measure; None = every CPU this process may use.
    pub cpus: Option<CpuSet>,
    /// Samples kept per pair.
    pub samples: usize,
    /// Round trips per sample.
    pub round_trips: usize,
    /// Longest the measurement may take: fewer samples per pair first (down to
    /// [`c2c::MIN_BUDGET_SAMPLES`]), then fewer CPUs ([`c2c::budget_order`]).
    pub budget: Option<std::time::Duration>,
    /// Write the [`C2c`] model as JSON instead of tables.
    pub json: bool,
    /// `--export-json/--export-csv/--export-markdown`.
    pub exports: crate::render::export::Exports,
}

impl Default for C2cCommand {
    fn default() -> Self {
        let d = PingPongSpec::default();
        Self {
            cpus: None,
            samples: d.samples,
            round_trips: d.round_trips,
            budget: None,
            json: false,
            exports: Default::default(),
        }
    }
}

pub fn run(cfg: &C2cCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    if cfg.samples == 0 {
        return Err(BadInput("--samples must be at least 1 (default 300)".into()).into());
    }
    if cfg.round_trips == 0 {
        return Err(BadInput("--round-trips must be at least 1 (default 1000)".into()).into());
    }
    let topo = super::load_topology(Path::new("/"))?;
    let allowed = topo.allowed();
    let cpus = match &cfg.cpus {
        Some(c) => {
            let bad = c.difference(&allowed);
            if !bad.is_empty() {
                return Err(PlanError::NotAllowed {
                    cpus: bad,
                    allowed,
                    why: " (offline, or outside this process's affinity or cgroup)".into(),
                }
                .into());
            }
            c.clone()
        }
        None => allowed.clone(),
    };
    if cpus.len() < 2 {
        let msg = format!(
            "c2c needs at least 2 CPUs to bounce a cache line between, but only CPU {cpus} {}",
            if cfg.cpus.is_some() {
                "was given (--cpus)"
            } else {
                "is usable here"
            }
        );
        // A one-CPU list is the user's input; a one-CPU machine is the machine.
        return Err(if cfg.cpus.is_some() {
            BadInput(msg).into()
        } else {
            NotPossible(msg).into()
        });
    }
    let mut spec = PingPongSpec {
        samples: cfg.samples,
        round_trips: cfg.round_trips,
    };
    let mut cpus = cpus;
    let mut left_out = CpuSet::new();
    let pairs = |c: &CpuSet| c.len() * c.len().saturating_sub(1) / 2;
    let full = c2c::estimate(pairs(&cpus), &spec);
    match cfg.budget {
        Some(budget) if full > budget => {
            let usable = cpus.clone();
            let fit = c2c::fit_budget(&c2c::budget_order(&topo, &usable), &spec, budget);
            spec = fit.spec;
            cpus = fit.cpus;
            left_out = usable.difference(&cpus);
            crate::say!(
                "c2c: --budget {}: {} samples per pair{}; about {}{}",
                render::wall(budget),
                spec.samples,
                if left_out.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", CPUs {cpus} (two siblings of one core, then one CPU per core in spread order; left out: {left_out})"
                    )
                },
                render::wall(c2c::estimate(pairs(&cpus), &spec)),
                if fit.over {
                    format!(
                        ", over the budget: {} samples over 2 CPUs is the least c2c measures",
                        c2c::MIN_BUDGET_SAMPLES
                    )
                } else {
                    String::new()
                }
            );
        }
        None if full > std::time::Duration::from_secs(60) => crate::say!(
            "c2c: {} pairs × {} samples × {} round trips: about {}; --budget 1m or --cpus LIST takes less",
            pairs(&cpus),
            spec.samples,
            spec.round_trips,
            render::wall(full)
        ),
        _ => {}
    }
    crate::hygiene::preflight(&cpus);
    let progress = std::io::stderr().is_terminal();
    let t0 = std::time::Instant::now();
    let r = c2c::measure(
        &crate::engine::RealEngine,
        &topo,
        &cpus,
        &spec,
        &mut |done, total| {
            if progress {
                // Remaining time from the pace so far: pairs cost about the same.
                let left = t0
                    .elapsed()
                    .mul_f64((total - done) as f64 / done.max(1) as f64);
                // A progress line that cannot be written is dropped, never a panic.
                let mut err = std::io::stderr();
                let _ = write!(
                    err,
                    "\r\x1b[Kc2c: pair {done}/{total}, about {} left",
                    render::wall(left)
                );
                if done == total {
                    let _ = write!(err, "\r\x1b[K");
                }
            }
        },
    )?;
    let r = C2c { left_out, ..r };
    let hypervisor = topo.machine.hypervisor;
    // The exports hold what an interrupted run finished too, before its exit code.
    super::emit_blocks(out, cfg.json, &r, |r| c2c::view::blocks(r, hypervisor))?;
    cfg.exports.write(|| c2c::view::export(&r, hypervisor))?;
    if r.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}
