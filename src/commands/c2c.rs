//! `smtlab c2c`: one-way cache-line handoff latency between every pair of usable CPUs, as a
//! matrix, per-pair spread and the implied ceiling on contended lock handoffs.

use crate::cpuset::CpuSet;
use crate::engine::PingPongSpec;
use crate::error::{BadInput, NotPossible};
use crate::experiments::c2c::{self, C2c};
use crate::placement::PlanError;
use crate::render::{self, Table};
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
        }
    }
}

pub fn run(cfg: &C2cCommand, out: &mut dyn Write) -> Result<()> {
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
    super::emit(
        out,
        cfg.json,
        &r,
        |r| render_text(r, hypervisor),
        r.interrupted,
    )
}

/// The text report: matrix, per-pair spread (up to 8 CPUs), ceilings per relation.
pub fn render_text(r: &C2c, hypervisor: bool) -> String {
    let mut s = String::new();
    s.push_str("Cache-line handoff latency, one way (CAS ping-pong, round trip / 2), median ns\n");
    s.push_str(&format!(
        "{} samples × {} round trips per pair; first sample discarded\n",
        r.samples, r.round_trips
    ));
    if !r.left_out.is_empty() {
        s.push_str(&format!(
            "CPUs {} measured; left out to fit the budget: {}\n",
            r.cpus, r.left_out
        ));
    }
    s.push('\n');
    let list = r.cpus.to_vec();
    let small = list.len() <= 8;
    let mut table = Table::with_header(
        std::iter::once("CPU".to_string())
            .chain(list.iter().map(u32::to_string))
            .collect::<Vec<_>>(),
    );
    for (i, &a) in list.iter().enumerate() {
        let mut row = vec![a.to_string()];
        for (j, &b) in list.iter().enumerate() {
            row.push(match r.matrix_ns[i][j] {
                None if i == j => "-".into(),
                None => "?".into(),
                Some(m) => {
                    let mad = r
                        .pairs
                        .iter()
                        .find(|p| (p.a, p.b) == (a, b) || (p.a, p.b) == (b, a))
                        .map(|p| p.latency_ns.mad)
                        .unwrap_or(f64::NAN);
                    if small {
                        format!("{m:.0} ±{mad:.0}")
                    } else {
                        format!("{m:.0}")
                    }
                }
            });
        }
        table.push(row);
    }
    s.push_str(&table.text());
    if small && !r.pairs.is_empty() {
        s.push('\n');
        let mut table = Table::with_header(
            [
                "PAIR", "RELATION", "MEDIAN", "±MAD", "MIN", "MAX", "MEAN", "OUTLIERS",
            ]
            .map(String::from)
            .to_vec(),
        );
        for p in &r.pairs {
            let l = &p.latency_ns;
            table.push(vec![
                format!("{}-{}", p.a, p.b),
                p.proximity.label().into(),
                format!("{:.1}", l.median),
                format!("{:.1}", l.mad),
                format!("{:.1}", l.min),
                format!("{:.1}", l.max),
                format!("{:.1}", p.mean_latency_ns),
                format!("{}/{}", l.outliers.total(), l.n),
            ]);
        }
        s.push_str(&table.text());
    }
    if !r.classes.is_empty() {
        s.push_str("\nCeiling on contended lock handoffs, 1 / (k × latency):\n");
        let mut table = Table::with_header(
            ["RELATION", "PAIRS", "LATENCY", "RANGE", "K=1", "K=2"]
                .map(String::from)
                .to_vec(),
        );
        for c in &r.classes {
            table.push(vec![
                c.proximity.label().into(),
                c.pairs.to_string(),
                render::duration_ns(c.median_latency_ns),
                format!("{:.0}-{:.0} ns", c.min_latency_ns, c.max_latency_ns),
                format!("{}/s", render::si(c.ceiling.k1_handoffs_per_sec)),
                format!("{}/s", render::si(c.ceiling.k2_handoffs_per_sec)),
            ]);
        }
        s.push_str(&table.text());
        s.push_str(
            "k=1: the lock line alone moves per handoff; k=2: plus one data line. \
             Real contended locks reach a fraction of this.\n",
        );
    }
    if hypervisor {
        let kind = None;
        s.push_str(&format!(
            "note: {}\n",
            crate::render::Caveat::Hypervisor { kind }
        ));
    }
    for p in r.pairs.iter().filter(|p| p.time_limited) {
        s.push_str(&format!(
            "note: pair {}-{} stopped at its time limit after {} of {} samples: a handoff took {}, \
             and a cache line moves in under {}, so its two threads were mostly not running at \
             the same time (as when a hypervisor runs both vCPUs on one host CPU).\n",
            p.a,
            p.b,
            p.latency_ns.n,
            r.samples,
            render::duration_ns(p.latency_ns.median),
            render::duration_ns(crate::engine::SLOWEST_HANDOFF_NS),
        ));
    }
    if r.interrupted {
        s.push_str("note: interrupted: pairs not measured show `?`.\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_report_shape() {
        let topo = crate::topology::discover(Path::new("/")).unwrap();
        let cpus = CpuSet::from_cpus([0, 1, 2]);
        let spec = PingPongSpec {
            samples: 4,
            round_trips: 10,
        };
        let samples = vec![((0, 1), vec![100.0, 102.0, 98.0, 101.0])];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, true);
        let t = render_text(&r, true);
        assert!(t.contains("4 samples × 10 round trips"), "{t}");
        assert!(t.contains("100 ±1"), "{t}");
        assert!(t.contains("?"), "{t}");
        assert!(t.contains("K=1"), "{t}");
        assert!(t.contains("10 M/s") || t.contains("9.9"), "{t}");
        assert!(t.contains("hypervisor"));
        assert!(t.contains("interrupted"));
        assert!(!t.contains("time limit"), "{t}");
    }

    /// Two vCPUs taking turns on one host CPU (a 1 × 2 × 2 QEMU guest whose sibling
    /// vCPU threads were pinned to one host CPU): 7.7 ms a handoff, one partial sample.
    #[test]
    fn a_pair_stopped_at_its_time_limit_says_why() {
        let topo = crate::topology::discover(Path::new("/")).unwrap();
        let cpus = CpuSet::from_cpus([0, 1]);
        let spec = PingPongSpec {
            samples: 100,
            round_trips: 1000,
        };
        let samples = vec![((0, 1), vec![7_748_858.3])];
        let r = C2c::from_samples(&topo, &cpus, &spec, &samples, false);
        assert!(r.pairs[0].time_limited);
        let t = render_text(&r, false);
        assert!(
            t.contains("pair 0-1 stopped at its time limit after 1 of 100 samples"),
            "{t}"
        );
        assert!(t.contains("a handoff took 7.7 ms"), "{t}");
        assert!(
            t.contains("under 10.0 µs") || t.contains("under 10 µs"),
            "{t}"
        );
    }
}
