//! Exit codes and error classes. Errors travel as `anyhow::Error`; the binary maps them to
//! an exit code by looking for one of the typed errors below in the chain.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | a run-time failure of something outside smtlab (a server, a disk), or a failed study phase |
//! | 2 | bad input: command line, CPU list, sysfs root, input files, output paths, journals, database URLs |
//! | 3 | not possible on this machine (e.g. SMT sibling placement without SMT siblings) |
//! | 4 | needs privileges this process lacks (e.g. a negative nice value without `CAP_SYS_NICE`) |
//! | 130 | interrupted (SIGINT/Ctrl-C, SIGTERM or SIGHUP); partial results were written where the command says so |
//!
//! The typed errors of the planner and of topology discovery are defined here too (and
//! re-exported where they are raised), so that this module, which every layer uses, needs
//! nothing above `cpuset`.

use crate::cpuset::{CpuSet, CpuSetError};
use std::path::PathBuf;

/// A bad value given by the user, with the message saying what would be valid.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Something this machine cannot do (and another machine could).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotPossible(pub String);

/// Something this user may not do, and root (or a capability, or a resource limit) may:
/// running it again with the privilege named in the message would work.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NeedsPrivilege(pub String);

/// SIGINT (Ctrl-C), SIGTERM or SIGHUP arrived (defined beside the flag it reports, so
/// `interrupt` needs nothing from this module).
pub use crate::interrupt::Interrupted;

/// Why a plan cannot be made on this machine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The machine shows no SMT siblings; callers skip sibling experiments on this.
    #[error(
        "`{request}` needs SMT siblings, but this machine shows none (1 thread per core){hint}"
    )]
    NoSmt { request: String, hint: String },
    #[error(
        "`{request}` with {threads} threads needs {need} {what}, but only {have} are usable{scope}"
    )]
    NotEnough {
        request: String,
        threads: usize,
        need: usize,
        have: usize,
        what: &'static str,
        /// Where the count was taken, and how to widen it (empty when unscoped).
        scope: String,
    },
    #[error("CPU{} {cpus} not usable here (usable: {allowed}){why}", if .cpus.len() > 1 { "s" } else { "" })]
    NotAllowed {
        cpus: CpuSet,
        allowed: CpuSet,
        why: String,
    },
    /// `siblings-of` CPUs whose cores have no SMT sibling left once the listed CPUs are
    /// taken out (e.g. the CPUs of `pairs` workers).
    #[error("`{request}`: {reason}")]
    NoFreeSibling { request: String, reason: String },
    #[error("--threads must be at least 1 (got 0)")]
    ZeroThreads,
    #[error("invalid placement `{}`: {reason}", crate::quote::shorten(.request))]
    BadRequest { request: String, reason: String },
}

/// Why a root could not be read as a topology.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("sysfs root `{0}` does not exist or is not a directory")]
    NoRoot(PathBuf),
    #[error(
        "`{0}` has no `sys/devices/system/cpu` directory: not a sysfs root (expected `/` or an unpacked topology dump)"
    )]
    NotSysfs(PathBuf),
    #[error("`{path}` holds `{content}`, which is not valid")]
    BadFile {
        path: PathBuf,
        content: String,
        #[source]
        source: Box<CpuSetError>,
    },
    #[error("no CPU found under `{0}`")]
    NoCpus(PathBuf),
    /// Files that contradict each other in a way no kernel writes, so that no reading of
    /// them can be trusted.
    #[error("`{path}`: {problem}")]
    Inconsistent { path: PathBuf, problem: String },
}

pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_NOT_POSSIBLE: u8 = 3;
pub const EXIT_NEEDS_PRIVILEGE: u8 = 4;
pub const EXIT_INTERRUPTED: u8 = crate::interrupt::EXIT_CODE;

/// Every exit code and what it means, in the words `--help` and README use (a test checks
/// README's table against this one, and `tests/exit_codes.rs` runs a case for each).
pub const EXIT_CODES: &[(u8, &str)] = &[
    (0, "success"),
    (
        EXIT_FAILURE,
        "a run-time failure outside smtlab (a server, a disk) or a failed study phase",
    ),
    (
        EXIT_BAD_INPUT,
        "bad input: options, CPU lists, --sysfs-root, input files, output paths, database URLs",
    ),
    (EXIT_NOT_POSSIBLE, "not possible on this machine"),
    (
        EXIT_NEEDS_PRIVILEGE,
        "needs privileges this process lacks (root, a capability, a resource limit)",
    ),
    (
        EXIT_INTERRUPTED,
        "interrupted (Ctrl-C, SIGTERM, SIGHUP), after cleaning up",
    ),
];

/// The `--help` footer: every exit code, one per line.
pub fn exit_codes_help() -> String {
    let mut s = String::from("Exit codes:");
    for (code, meaning) in EXIT_CODES {
        s.push_str(&format!("\n  {code:>3}  {meaning}"));
    }
    s
}

/// The exit code for an error: the first typed error found in its chain decides.
pub fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<BadInput>() || cause.is::<CpuSetError>() || cause.is::<DiscoverError>() {
            return EXIT_BAD_INPUT;
        }
        if cause.is::<NotPossible>() {
            return EXIT_NOT_POSSIBLE;
        }
        if cause.is::<NeedsPrivilege>() {
            return EXIT_NEEDS_PRIVILEGE;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_class_has_its_code_and_the_table_lists_every_code() {
        let code = |e: anyhow::Error| exit_code(&e.context("while doing something"));
        assert_eq!(code(BadInput("x".into()).into()), EXIT_BAD_INPUT);
        assert_eq!(code(NotPossible("x".into()).into()), EXIT_NOT_POSSIBLE);
        assert_eq!(
            code(NeedsPrivilege("x".into()).into()),
            EXIT_NEEDS_PRIVILEGE
        );
        assert_eq!(code(anyhow::anyhow!("a server said no")), EXIT_FAILURE);
        let codes: Vec<u8> = EXIT_CODES.iter().map(|r| r.0).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 130]);
        let help = exit_codes_help();
        for c in codes {
            assert!(help.contains(&format!(" {c}  ")), "{help}");
        }
    }
}
