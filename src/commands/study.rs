//! `smtlab study`: run every experiment this machine supports within a time budget, with one
//! progress bar per phase on stderr, then write `results.json`, `report.html` and
//! `summary.md` (atomically) and print the verdict. Ctrl-C writes what finished, marked
//! `partial`, and exits 130.

use crate::engine::RealEngine;
use crate::report::{self, PhaseStatus};
use crate::study::{self, Progress};
use anyhow::{Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct StudyCommand {
    pub study: study::Config,
    /// Directory for the three files (created if missing).
    pub out: PathBuf,
    /// `--prometheus FILE`: the answer table as gauges, written whole after the study.
    pub prometheus: Option<PathBuf>,
}

pub fn run(cfg: &StudyCommand, out: &mut dyn Write) -> Result<()> {
    let root = Path::new("/");
    // Fail on an unusable output directory now, not after a minute of measuring.
    report::check_out_dir(
        &cfg.out,
        &[
            report::RESULTS_JSON,
            report::REPORT_HTML,
            report::SUMMARY_MD,
        ],
    )?;
    if let Some(p) = &cfg.prometheus {
        crate::fsutil::check_output("--prometheus", p)?;
    }

    check_database(&cfg.study.db)?;
    if let Some(c) = &cfg.study.compare {
        check_cgroup(c)?;
    }
    let topo = super::load_topology(root)?;
    let machine = report::machine::machine_info(&topo, root);
    let provenance = report::machine::provenance(cfg.study.command.clone());
    let bars = Bars::new(std::io::stderr().is_terminal());
    let busy = crate::hygiene::preflight(&topo.allowed());
    let mut rep = study::run(&RealEngine, &topo, machine, provenance, &cfg.study, &bars)?;
    rep.notes
        .extend(busy.into_iter().map(report::Note::Hygiene));
    rep.slurm = report::slurm::from_env(report::slurm::environment(), &topo);
    bars.close();
    if bars.multi.is_some() {
        // The kept bars leave the cursor at the end of the last one.
        crate::say!();
    }
    let mut written = report::write_all(&rep, &cfg.out)?;
    if let Some(p) = &cfg.prometheus {
        written.push(report::write_atomic(
            p,
            report::metrics::prometheus(&rep).as_bytes(),
        )?);
    }
    if let Some(c) = &rep.compare {
        writeln!(out, "Your command (compare phase):")?;
        write!(
            out,
            "{}",
            crate::render::terminal::draw(&crate::experiments::compare::view::blocks(
                &c.result, None
            ))
        )?;
        writeln!(out)?;
    }
    write!(out, "{}", report::view::answers_text(&rep.verdict))?;
    writeln!(out, "Verdict: {}", rep.verdict.headline)?;
    if let Some(m) = &rep.memory {
        match (&m.pages, &m.pages_skipped) {
            (Some(p), _) => writeln!(out, "{}", crate::mem::pages::view::summary_line(p))?,
            (None, Some(why)) => writeln!(out, "Page size: not measured: {why}")?,
            (None, None) => {}
        }
    }
    for p in &written {
        writeln!(out, "wrote {}", p.display())?;
    }
    if let Some(why) = rep.partial_reason() {
        writeln!(out, "partial: {why}")?;
        if rep.phases.iter().any(|p| p.status == PhaseStatus::Failed) {
            anyhow::bail!("the study is partial: {why}");
        }
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}

/// Connects to the oltp phase's database (or finds the server binaries a managed cluster
/// needs) before anything is measured, so a wrong `--db` fails in seconds instead of
/// after the phases before oltp.
fn check_database(db: &crate::oltp::DbTarget) -> Result<()> {
    use crate::oltp::DbTarget;
    match db {
        // Context, not a new error: bad input found here stays exit 2.
        DbTarget::Postgres { .. } => {
            crate::oltp::Db::open(db, crate::oltp::Durability::Delayed, 1)
                .context("checking --db before the study")?;
        }
        DbTarget::PostgresManaged => {
            crate::oltp::managed::find_binaries().context("checking --db before the study")?;
        }
        DbTarget::Sqlite(_) => {}
    }
    Ok(())
}

/// With `--cgroup`, makes and removes one cgroup before the study, so a machine without a
/// cpuset cgroup (exit 3) or a user who may not create one (exit 4) is told in seconds,
/// not after every other phase.
fn check_cgroup(c: &crate::experiments::compare::Config) -> Result<()> {
    use crate::experiments::compare::cgroup;
    if !c.cgroup {
        return Ok(());
    }
    let h = cgroup::find()?;
    let mut probe = cgroup::Cpuset::create(&h, &crate::affinity::process_affinity()?)?;
    probe.remove()
}

/// One indicatif bar per phase (kept on screen when done), or plain lines on stderr when
/// it is not a terminal.
struct Bars {
    multi: Option<MultiProgress>,
    current: RefCell<Option<Current>>,
    /// The phase running, for plain-line notes.
    phase: std::cell::Cell<Option<&'static str>>,
}

struct Current {
    bar: ProgressBar,
    ticker: Option<(Arc<AtomicBool>, std::thread::JoinHandle<()>)>,
}

impl Bars {
    fn new(terminal: bool) -> Self {
        Bars {
            multi: terminal.then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr())),
            current: RefCell::new(None),
            phase: std::cell::Cell::new(None),
        }
    }

    fn stop_current(&self) -> Option<ProgressBar> {
        let cur = self.current.borrow_mut().take()?;
        if let Some((stop, h)) = cur.ticker {
            stop.store(true, Ordering::Relaxed);
            let _ = h.join();
        }
        Some(cur.bar)
    }

    fn close(&self) {
        if let Some(b) = self.stop_current() {
            b.abandon();
        }
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("valid template")
        .progress_chars("=> ")
}

impl Progress for Bars {
    fn start(&self, phase: &'static str, units: u64, estimate: Duration) {
        self.close();
        self.phase.set(Some(phase));
        let Some(multi) = &self.multi else {
            return;
        };
        let (bar, ticker) = if units > 0 {
            let b = multi.add(ProgressBar::new(units));
            b.set_style(style(
                "{prefix:>10} [{bar:30}] {pos}/{len}  {elapsed:>4} elapsed, ETA {eta}",
            ));
            b.enable_steady_tick(Duration::from_millis(200));
            (b, None)
        } else {
            // No step counts (oltp): progress by the estimate, held short of the end.
            let len = estimate.as_millis().max(1) as u64;
            let b = multi.add(ProgressBar::new(len));
            b.set_style(style(
                "{prefix:>10} [{bar:30}] {elapsed:>4} elapsed, ETA ~{eta}  {wide_msg}",
            ));
            let stop = Arc::new(AtomicBool::new(false));
            let (s, bb, t0) = (stop.clone(), b.clone(), Instant::now());
            let h = std::thread::spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    bb.set_position((t0.elapsed().as_millis() as u64).min(len.saturating_sub(1)));
                    std::thread::sleep(Duration::from_millis(200));
                }
            });
            (b, Some((stop, h)))
        };
        bar.set_prefix(phase);
        *self.current.borrow_mut() = Some(Current { bar, ticker });
    }

    fn note(&self, msg: &str) {
        match (&self.multi, self.current.borrow().as_ref()) {
            (Some(_), Some(c)) => c.bar.set_message(msg.to_string()),
            _ => match self.phase.get() {
                Some(p) => crate::say!("study: {p}: {msg}"),
                None => crate::say!("study: {msg}"),
            },
        }
    }

    fn advance(&self, n: u64) {
        if let Some(c) = self.current.borrow().as_ref() {
            c.bar.inc(n);
        }
    }

    fn finish(&self, phase: &'static str, msg: &str) {
        match self.stop_current() {
            Some(bar) => {
                bar.set_style(style("{prefix:>10} {msg}"));
                bar.finish_with_message(msg.to_string());
            }
            None => match &self.multi {
                Some(m) => {
                    let b = m.add(ProgressBar::new(1));
                    b.set_style(style("{prefix:>10} {msg}"));
                    b.set_prefix(phase);
                    b.finish_with_message(msg.to_string());
                }
                None => crate::say!("study: {phase}: {msg}"),
            },
        }
    }
}
