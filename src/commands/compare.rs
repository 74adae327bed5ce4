//! `smtlab compare -- CMD`: runs [`crate::experiments::compare`] on this machine with a
//! progress bar (on a terminal only), prints the table or JSON, and writes the exports
//! (each atomically: a temporary file renamed into place).

use crate::experiments::compare::{self as experiment, view};
use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A validated `compare` invocation.
#[derive(Debug, Clone)]
pub struct CompareCommand {
    pub exp: experiment::CheckedConfig,
    pub json: bool,
    /// `--export-json/csv/markdown`: the report as files.
    pub exports: crate::render::export::Exports,
}

pub fn run(cfg: &CompareCommand, out: &mut dyn Write) -> Result<()> {
    cfg.exports.check()?;
    let topo = super::topology_for_run(Path::new("/"), false, false)?;
    if let Some(b) = &cfg.exp.burners {
        let (bytes, what) =
            crate::burn::buffers_total(b.kind, &topo, &vec![topo.allowed(); b.count]);
        crate::limits::memory(
            &format!("--burners {}:{}", b.kind, b.count),
            bytes,
            crate::limits::mem_available_bytes(),
            &what,
            crate::limits::Force::NotOffered,
        )?;
    }
    let terminal = std::io::stderr().is_terminal() && !cfg.exp.show_output;
    let ui = Bars::new(terminal);
    let rep = experiment::run(&topo, &cfg.exp, &ui);
    ui.close();
    let rep = rep?;
    // The comparison first: an export that fails now (a disk that filled) must not take
    // the results on stdout with it.
    super::emit_blocks(out, cfg.json, &rep, |r| view::blocks(r, None))?;
    cfg.exports.write(|| view::export(&rep))?;
    if rep.interrupted {
        return Err(crate::error::Interrupted.into());
    }
    Ok(())
}

/// The guard process's main (`smtlab compare --internal-guard`).
pub fn guard_main() -> Result<()> {
    experiment::guard::serve(std::io::stdin().lock());
    Ok(())
}

/// The progress bar with ETA on a terminal (drawn from the moment the runs are planned,
/// after the checks that print warnings); plain `compare: …` lines (rounds at most once a
/// second) otherwise.
struct Bars {
    terminal: bool,
    bar: Mutex<Option<ProgressBar>>,
    last_line: Mutex<Option<Instant>>,
}

impl Bars {
    fn new(terminal: bool) -> Self {
        Bars {
            terminal,
            bar: Mutex::new(None),
            last_line: Mutex::new(None),
        }
    }

    fn bar(&self) -> Option<ProgressBar> {
        self.bar.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn close(&self) {
        if let Some(b) = self.bar() {
            b.finish_and_clear();
        }
    }
}

impl crate::progress::Progress for Bars {
    fn note(&self, msg: &str) {
        let round = msg.starts_with("round ") || msg.starts_with("warm-up round");
        match self.bar() {
            Some(b) if round => b.set_message(msg.to_string()),
            Some(b) => b.println(format!("compare: {msg}")),
            None => {
                let measured = msg.starts_with("round ");
                let mut last = self.last_line.lock().unwrap_or_else(|e| e.into_inner());
                if measured && last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
                    return;
                }
                if measured {
                    *last = Some(Instant::now());
                }
                crate::say!("compare: {msg}");
            }
        }
    }

    fn planned(&self, runs: u64) {
        if !self.terminal {
            return;
        }
        let mut slot = self.bar.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(b) => b.set_length(runs),
            None => {
                let b = ProgressBar::with_draw_target(Some(runs), ProgressDrawTarget::stderr());
                b.set_style(
                    ProgressStyle::with_template(
                        "{bar:30} {pos}/{len} runs  {elapsed:>4} elapsed, ETA {eta}  {wide_msg}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
                b.enable_steady_tick(Duration::from_millis(200));
                *slot = Some(b);
            }
        }
    }

    fn advance(&self, n: u64) {
        if let Some(b) = self.bar() {
            b.inc(n);
        }
    }
}
