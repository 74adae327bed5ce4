//! `smtlab top`: sample `/proc/stat` (and, as root, `sched_switch` in a tracefs instance)
//! over intervals and print per-CPU and per-core utilisation as a refreshing table, NDJSON
//! or Prometheus text. The tracefs instance is removed on every way out (see `top::trace`).

use crate::render::terminal::draw;
use crate::top::cores::Yield;
use crate::top::model::{self, Inputs, PidInput, TraceInput};
use crate::top::{sample, trace, view};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The table; `refresh` redraws the screen each interval (a terminal), otherwise one
    /// block per interval is appended (as `mpstat` does).
    Text { refresh: bool },
    /// One JSON object per interval, one per line.
    Json,
    /// The Prometheus text exposition format.
    Prometheus,
}

#[derive(Debug, Clone)]
pub struct TopCommand {
    /// Where procfs and sysfs are read (`/` for this machine).
    pub root: PathBuf,
    pub interval: Duration,
    /// Intervals to print; None runs until Ctrl-C.
    pub count: Option<u64>,
    pub format: Format,
    /// Replace this file atomically with each interval's output instead of printing it
    /// (node_exporter's textfile collector reads `*.prom` files whole).
    pub textfile: Option<PathBuf>,
    pub pid: Option<u32>,
    pub smt_yield: Yield,
    /// Try tracefs for the exact per-core split.
    pub trace: bool,
    /// `--export-json/csv/markdown`: every interval of a bounded run, written once the last
    /// one ends (or at Ctrl-C, the ones finished before it).
    pub exports: crate::render::export::Exports,
}

/// How often `--pid` samples the threads without tracefs.
const PID_SAMPLE: Duration = Duration::from_millis(25);

pub fn run(cfg: &TopCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let live = crate::smt::journal::is_live(&cfg.root);
    if let Some(pid) = cfg.pid
        && sample::read_threads(&cfg.root, pid).is_none()
    {
        return Err(crate::error::BadInput(format!(
            "--pid {pid}: no such process under {}",
            cfg.root.join("proc").display()
        ))
        .into());
    }
    let mut tracer = None;
    let mut why_not = String::new();
    if !cfg.trace {
        why_not = "--no-trace".into();
    } else if !live {
        why_not = "tracing needs this machine, not a copied tree".into();
    // SAFETY: geteuid has no preconditions.
    } else if unsafe { libc::geteuid() } != 0 {
        why_not = "not root: the exact per-core split needs tracefs, which needs root".into();
    } else {
        match trace::Tracer::open(&cfg.root) {
            Ok(t) => tracer = Some(t),
            Err(e) => why_not = e,
        }
    }
    // SAFETY: sysconf has no preconditions.
    let ticks_per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    // The intervals the exports hold; kept only when an export was asked for.
    let mut kept = Vec::new();
    let mut i = 0u64;
    while cfg.count.is_none_or(|n| i < n) {
        let st = crate::smt::state::read(&cfg.root)?;
        let before = sample::read_stat(&cfg.root)?;
        if let Some(t) = tracer.as_mut()
            && let Err(e) = t.start()
        {
            why_not = e;
            tracer = None;
        }
        let t0 = Instant::now();
        let mut snapshots = Vec::new();
        let mut gone = false;
        loop {
            if let Some(pid) = cfg.pid {
                match sample::read_threads(&cfg.root, pid) {
                    Some(v) => snapshots.push(v),
                    None => gone = true,
                }
            }
            let left = cfg.interval.saturating_sub(t0.elapsed());
            if left.is_zero() || crate::interrupt::requested() {
                break;
            }
            let step = if cfg.pid.is_some() {
                PID_SAMPLE
            } else {
                Duration::from_millis(50)
            };
            std::thread::sleep(step.min(left));
        }
        // Ctrl-C: the interval is cut short; print nothing for it, and export the ones
        // finished before it. The tracer's Drop switches tracing off and removes its
        // instance on the way out.
        if crate::interrupt::requested() && !kept.is_empty() {
            cfg.exports.write(|| view::export(&kept))?;
        }
        crate::interrupt::check()?;
        let traced = match tracer.as_mut().map(|t| t.stop()) {
            Some(Ok(t)) => TraceInput::Traced(t),
            Some(Err(e)) => {
                tracer = None;
                TraceInput::Off(e)
            }
            None => TraceInput::Off(why_not.clone()),
        };
        let after = sample::read_stat(&cfg.root)?;
        let elapsed = t0.elapsed();
        // CMT modules are two cores each, not SMT siblings: every CPU is a core.
        let cores = st.smt_cores();
        let s = model::build(Inputs {
            cores: &cores,
            before: &before,
            after: &after,
            interval_ns: elapsed.as_nanos() as u64,
            time_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            smt_yield: &cfg.smt_yield,
            trace: traced,
            pid: cfg.pid.map(|pid| PidInput {
                pid,
                comm: sample::read_comm(&cfg.root, pid),
                snapshots,
                gone,
                ticks_per_sec,
            }),
        });
        let text = match cfg.format {
            Format::Text { refresh: true } => {
                format!("\x1b[H\x1b[2J{}", draw(&view::blocks(&s, true)))
            }
            Format::Text { refresh: false } => {
                let sep = if i > 0 { "\n" } else { "" };
                format!("{sep}{}", draw(&view::blocks(&s, i == 0)))
            }
            Format::Json => view::json_line(&s),
            Format::Prometheus => view::prometheus(&s),
        };
        match &cfg.textfile {
            Some(path) => crate::fsutil::replace_unsynced(path, text.as_bytes())
                .with_context(|| format!("writing `{}`", path.display()))?,
            None => {
                out.write_all(text.as_bytes())?;
                out.flush()?;
            }
        }
        if !cfg.exports.is_empty() {
            kept.push(s);
        }
        i += 1;
    }
    cfg.exports.write(|| view::export(&kept))?;
    drop(tracer);
    Ok(())
}
