//! `smtlab mem report | pages`: the memory settings that decide how a database host
//! behaves under pressure, with findings; and what page size costs on this CPU, measured.

use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// What to do.
#[derive(Debug, Clone)]
pub enum Config {
    Report {
        /// procfs and sysfs are read under this root.
        root: PathBuf,
        json: bool,
    },
    Pages {
        /// `--max`; None for the default.
        max: Option<u64>,
        repeat: usize,
        reserve: bool,
        json: bool,
        /// `--export-json/csv/markdown`: the curves as files.
        exports: crate::render::export::Exports,
    },
}

/// Progress on stderr: changes to the machine always, steps on a terminal only.
struct Stderr {
    tty: bool,
}

impl crate::progress::Progress for Stderr {
    fn note(&self, msg: &str) {
        if self.tty {
            crate::say!("\r\x1b[K{msg}");
        } else {
            crate::say!("{msg}");
        }
    }
    fn step(&self, msg: &str) {
        if self.tty {
            use std::io::Write as _;
            let _ = write!(std::io::stderr(), "\r\x1b[Kmem pages: {msg}");
        }
    }
}

pub fn run(cfg: &Config, out: &mut dyn Write) -> Result<()> {
    match cfg {
        Config::Report { root, json } => {
            if !root.is_dir() {
                return Err(crate::error::BadInput(format!(
                    "--sysfs-root {}: not a directory; give the root of a procfs and sysfs \
                     tree (`/` for this machine)",
                    root.display()
                ))
                .into());
            }
            // Every figure comes from procfs: a tree without it (an empty directory, a
            // sysfs-only dump) once gave a report of nothing but "not available", exit 0.
            if !root.join("proc/meminfo").is_file() {
                return Err(crate::error::BadInput(format!(
                    "--sysfs-root {}: no proc/meminfo under it, so nothing `mem report` reads \
                     is there; give the root of a procfs and sysfs tree (`/` for this machine, \
                     or a copy that holds proc/meminfo)",
                    root.display()
                ))
                .into());
            }
            let rep = crate::mem::read(&crate::mem::source::Dir::new(root));
            super::emit(
                out,
                *json,
                &rep,
                |r| crate::render::terminal::draw(&crate::mem::view::blocks(r)),
                false,
            )
        }
        Config::Pages {
            max,
            repeat,
            reserve,
            json,
            exports,
        } => {
            use std::io::IsTerminal;
            exports.check()?;
            let root = crate::mem::source::Dir::new(std::path::Path::new("/"));
            let available = crate::mem::read::mem_available(&root);
            let cfg = crate::mem::pages::PagesConfig::new(*max, *repeat, *reserve, available)?;
            let progress = Stderr {
                tty: std::io::stderr().is_terminal(),
            };
            let rep = crate::mem::pages::run(&cfg, &progress);
            if progress.tty {
                use std::io::Write as _;
                let _ = write!(std::io::stderr(), "\r\x1b[K");
            }
            let rep = rep?;
            super::emit(out, *json, &rep, crate::mem::pages::view::text, false)?;
            exports.write(|| crate::mem::pages::view::document(&rep))?;
            if rep.interrupted {
                return Err(crate::error::Interrupted.into());
            }
            Ok(())
        }
    }
}
