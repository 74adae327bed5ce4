//! The integration tests, one module per file beside this one, in one test binary: a change
//! to the library relinks this binary once instead of once per file (ripgrep's layout).
//! Run one file's tests with `cargo test --test integration engine::`.
//!
//! The tests share one process, so none may change process-wide state that the library reads
//! while other tests run: a test that presses Ctrl-C does it in a process of its own
//! ([`common::own_process!`]). `tests/smt_guests.rs` (QEMU guests, minutes of CPU) and
//! `tests/fuzz.rs` (long ignored runs, aborts on a hang) are binaries of their own; see
//! ARCHITECTURE.md, Tests.

mod common;

mod browser;
mod burn;
mod cli_c2c;
mod cli_compare;
mod cli_docs;
mod cli_experiments;
mod cli_merge;
mod cli_oltp;
mod cli_pairs;
mod cli_smt;
mod cli_top;
mod cli_topo;
mod cli_yield;
mod counters;
mod engine;
mod exit_codes;
mod hardening;
mod host_safety;
mod layering;
mod limits;
mod locks;
mod mem;
mod oltp;
mod readme;
mod rwcache;
mod signals;
mod study;
mod topology_conformance;
mod topology_synthetic;
