//! `smtlab smt status | off | on | restore`: SMT's state, and switching it with a journal.

use crate::smt::apply::{self, Action, Options};
use crate::smt::status;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// What to do.
#[derive(Debug, Clone)]
pub enum Config {
    Status {
        root: PathBuf,
        json: bool,
    },
    Change {
        root: PathBuf,
        action: Action,
        options: Options,
    },
}

pub fn run(cfg: &Config, out: &mut dyn Write) -> Result<()> {
    match cfg {
        Config::Status { root, json } => {
            let s = status::read(root)?;
            super::emit(out, *json, &s, crate::smt::view::status_text, false)
        }
        Config::Change {
            root,
            action,
            options,
        } => apply::run(root, *action, options, out),
    }
}
