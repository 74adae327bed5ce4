//! The `smtlab` binary: parse, run, map errors to exit codes (see `smtlab::error`).

use std::process::ExitCode;

fn main() -> ExitCode {
    match smtlab::cli::main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if smtlab::cli::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            smtlab::say!(
                "Error: {}",
                smtlab::quote::escape_controls(&format!("{e:#}"))
            );
            ExitCode::from(smtlab::error::exit_code(&e))
        }
    }
}
