//! Scheduling class and nice value for a burner thread: `SCHED_OTHER`, `SCHED_BATCH` or
//! `SCHED_IDLE`, then `setpriority` on the thread id (Linux applies both per thread).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io;
use std::str::FromStr;

/// A burner's scheduling policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// `SCHED_OTHER`: competes with everything else by nice weight.
    #[default]
    Normal,
    /// `SCHED_BATCH`: like normal, but never preempts on wake-up.
    Batch,
    /// `SCHED_IDLE`: runs only when nothing else wants the CPU (weight ≈ nice 19 / 5).
    Idle,
}

/// The policy names accepted on the command line.
pub const POLICY_NAMES: &str = "normal, batch, idle";

/// An unknown policy name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scheduling policy `{0}`; valid: {POLICY_NAMES}")]
pub struct UnknownPolicy(pub String);

impl FromStr for Policy {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "normal" | "other" => Ok(Policy::Normal),
            "batch" => Ok(Policy::Batch),
            "idle" => Ok(Policy::Idle),
            _ => Err(UnknownPolicy(s.to_string())),
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Normal => "normal",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
        })
    }
}

impl Policy {
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Normal => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
        }
    }
}

/// Valid nice values.
pub const NICE_RANGE: std::ops::RangeInclusive<i32> = -20..=19;

/// Sets the calling thread's policy and, when given, its nice value. Lowering priority
/// always works; raising it (negative nice) needs `CAP_SYS_NICE` or `RLIMIT_NICE`.
pub fn apply_to_current_thread(policy: Policy, nice: Option<i32>) -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, policy.raw(), &param) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("sched_setscheduler({policy}): {e}"),
        ));
    }
    if let Some(n) = nice {
        let tid = crate::affinity::gettid();
        // SAFETY: setpriority has no memory preconditions; PRIO_PROCESS with a tid targets
        // that one thread on Linux.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, n) } != 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("setpriority(nice {n}): {e}"),
            ));
        }
    }
    Ok(())
}

/// The calling thread's policy and nice value, as the kernel reports them.
pub fn current_thread() -> io::Result<(Option<Policy>, i32)> {
    // SAFETY: pid 0 is the calling thread.
    let p = unsafe { libc::sched_getscheduler(0) };
    if p < 0 {
        return Err(io::Error::last_os_error());
    }
    let policy = match p {
        libc::SCHED_OTHER => Some(Policy::Normal),
        libc::SCHED_BATCH => Some(Policy::Batch),
        libc::SCHED_IDLE => Some(Policy::Idle),
        _ => None,
    };
    let tid = crate::affinity::gettid();
    // getpriority can legitimately return -1: clear errno first.
    // SAFETY: __errno_location returns the thread's errno slot.
    unsafe { *libc::__errno_location() = 0 };
    // SAFETY: no memory preconditions.
    let n = unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) };
    let errno = io::Error::last_os_error();
    if n == -1 && errno.raw_os_error().unwrap_or(0) != 0 {
        return Err(errno);
    }
    Ok((policy, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        for p in [Policy::Normal, Policy::Batch, Policy::Idle] {
            assert_eq!(p.to_string().parse::<Policy>().unwrap(), p);
        }
        let e = "fifo".parse::<Policy>().unwrap_err().to_string();
        assert!(e.contains("fifo") && e.contains("idle"));
    }

    #[test]
    fn lowering_priority_applies_to_this_thread_only() {
        let (before, nice_before) = current_thread().unwrap();
        let (inside, nice_inside) = std::thread::spawn(|| {
            apply_to_current_thread(Policy::Idle, Some(19)).unwrap();
            current_thread().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(inside, Some(Policy::Idle));
        assert_eq!(nice_inside, 19);
        assert_eq!(current_thread().unwrap(), (before, nice_before));
    }
}
