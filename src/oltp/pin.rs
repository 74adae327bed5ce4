//! Pinning PostgreSQL backends to their client threads' CPUs, and putting them back.
//!
//! A client thread pinned to CPU 3 whose backend runs anywhere measures the scheduler, not
//! the layout; so each connection's backend (`pg_backend_pid()`, a single-threaded process)
//! gets its client's CPU set. [`BackendPins`] remembers every original affinity and
//! restores it in [`BackendPins::restore`] and again in `Drop`, so errors, panics and
//! Ctrl-C (which returns through the normal path) all leave the server as it was.

use crate::affinity;
use crate::cpuset::CpuSet;
use anyhow::{Context, Result};

/// Backends pinned so far and their original CPU sets.
#[derive(Debug, Default)]
pub struct BackendPins {
    saved: Vec<(i32, CpuSet)>,
}

impl BackendPins {
    /// Nothing pinned yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Pins process `pid` to `cpus`, remembering its current affinity first.
    pub fn pin(&mut self, pid: i32, cpus: &CpuSet) -> Result<()> {
        let before = affinity::get_affinity(pid)
            .with_context(|| format!("reading the CPU affinity of backend {pid}"))?;
        affinity::set_affinity(pid, cpus)
            .with_context(|| format!("pinning backend {pid} to CPUs {cpus}"))?;
        self.saved.push((pid, before));
        Ok(())
    }

    /// How many backends are pinned.
    pub fn len(&self) -> usize {
        self.saved.len()
    }

    /// True when nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.saved.is_empty()
    }

    /// Restores every original affinity. A backend that has already exited (`ESRCH`) is
    /// fine; other failures are reported after trying all of them.
    pub fn restore(&mut self) -> Result<()> {
        let mut first_err = None;
        for (pid, cpus) in self.saved.drain(..) {
            if let Err(e) = affinity::set_affinity(pid, &cpus)
                && e.raw_os_error() != Some(libc::ESRCH)
                && first_err.is_none()
            {
                first_err = Some(
                    anyhow::Error::new(e)
                        .context(format!("restoring backend {pid}'s CPU affinity to {cpus}")),
                );
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for BackendPins {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            crate::say!("warning: {e:#}");
        }
    }
}
