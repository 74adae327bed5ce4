//! `smtlab mem report`: the memory settings that decide how a database host behaves under
//! pressure, with findings.

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
            let rep = crate::mem::read(&crate::mem::source::Dir::new(root));
            super::emit(out, *json, &rep, crate::mem::render::human, false)
        }
    }
}
