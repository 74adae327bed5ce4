//! Exit codes and error classes. Errors travel as `anyhow::Error`; the binary maps them to
//! an exit code by looking for one of the typed errors below in the chain.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | a run-time failure of something outside smtlab (a server, a disk), or a failed study phase |
//! | 2 | bad input: command line, CPU list, sysfs root, input files, `--out`, database URLs |
//! | 3 | not possible on this machine (e.g. SMT sibling placement without SMT siblings) |
//! | 130 | interrupted (SIGINT/Ctrl-C, SIGTERM or SIGHUP); partial results were written where the command says so |

use crate::cpuset::CpuSetError;
use crate::placement::PlanError;
use crate::topology::DiscoverError;

/// A bad value given by the user, with the message saying what would be valid.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Something this machine cannot do (and another machine could).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotPossible(pub String);

/// SIGINT (Ctrl-C), SIGTERM or SIGHUP arrived; its message names the signal.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match crate::interrupt::signal() {
            Some(s) => write!(f, "interrupted by {s}"),
            None => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Interrupted {}

pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_NOT_POSSIBLE: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit code for an error: the first typed error found in its chain decides.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<BadInput>() || cause.is::<CpuSetError>() || cause.is::<DiscoverError>() {
            return EXIT_BAD_INPUT;
        }
        if cause.is::<NotPossible>() {
            return EXIT_NOT_POSSIBLE;
        }
        if cause.is::<Interrupted>() {
            return EXIT_INTERRUPTED;
        }
        if let Some(p) = cause.downcast_ref::<PlanError>() {
            return match p {
                PlanError::NoSmt { .. } | PlanError::NotEnough { .. } => EXIT_NOT_POSSIBLE,
                _ => EXIT_BAD_INPUT,
            };
        }
    }
    EXIT_FAILURE
}
