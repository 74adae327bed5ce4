//! Per-thread counters the kernel keeps: CPU time, context switches, run-queue delay and
//! the CPU a thread last ran on. Each reader is a thin wrapper over one syscall or one
//! procfs file.

use std::time::Duration;

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), ns.
pub fn thread_cpu_time_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC, ns.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the duration of the call.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (voluntary, involuntary) context switches of the calling thread (RUSAGE_THREAD).
pub fn thread_ctx_switches() -> (u64, u64) {
    // SAFETY: all-zero is a valid `rusage`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid out-pointer for the duration of the call.
    let r = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if r != 0 {
        return (0, 0);
    }
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// Run-queue wait of thread `tid` of this process so far, ns: field 2 of
/// `/proc/self/task/TID/schedstat` (on CPU ns, waiting ns, timeslices). None when the
/// file is missing (kernel without CONFIG_SCHED_INFO).
pub fn runqueue_wait_ns(tid: libc::pid_t) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    parse_schedstat_wait(&s)
}

/// Field 2 of a `schedstat` file's text (public for the fuzz tests).
pub fn parse_schedstat_wait(s: &str) -> Option<u64> {
    s.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU thread `tid` of this process last ran on: field 39 (`processor`) of
/// `/proc/self/task/TID/stat`.
pub fn last_cpu(tid: libc::pid_t) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    parse_stat_processor(&s)
}

/// Field 39 (`processor`) of a `stat` file's text (public for the fuzz tests).
pub fn parse_stat_processor(s: &str) -> Option<u32> {
    // Field 2 (comm) is in parentheses and may contain spaces: split after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    // `rest` starts at field 3 (state); processor is field 39.
    rest.split_whitespace().nth(39 - 3)?.parse().ok()
}

/// Counters a thread reads at the start and end of its measurement.
#[derive(Debug, Clone, Copy, Default)]
pub struct Snapshot {
    /// CLOCK_MONOTONIC when the counters were read, ns: a delta is the wall time the
    /// other deltas cover.
    pub wall_ns: u64,
    pub cpu_time_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    pub runqueue_wait_ns: Option<u64>,
}

impl Snapshot {
    /// Reads the calling thread's counters (`tid` is its own kernel id).
    pub fn take(tid: libc::pid_t) -> Self {
        let (voluntary, involuntary) = thread_ctx_switches();
        Self {
            wall_ns: monotonic_ns(),
            cpu_time_ns: thread_cpu_time_ns(),
            voluntary,
            involuntary,
            runqueue_wait_ns: runqueue_wait_ns(tid),
        }
    }

    /// `later - self`, saturating.
    pub fn delta(&self, later: &Snapshot) -> Snapshot {
        Snapshot {
            wall_ns: later.wall_ns.saturating_sub(self.wall_ns),
            cpu_time_ns: later.cpu_time_ns.saturating_sub(self.cpu_time_ns),
            voluntary: later.voluntary.saturating_sub(self.voluntary),
            involuntary: later.involuntary.saturating_sub(self.involuntary),
            runqueue_wait_ns: match (self.runqueue_wait_ns, later.runqueue_wait_ns) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
        }
    }
}

/// Sleeps until `deadline`, or for at most `max` — whichever is sooner.
pub fn sleep_until_or(deadline: std::time::Instant, max: Duration) {
    let now = std::time::Instant::now();
    if deadline > now {
        std::thread::sleep((deadline - now).min(max));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_schedstat() {
        assert_eq!(parse_schedstat_wait("187840 15165422 2\n"), Some(15165422));
        assert_eq!(parse_schedstat_wait("1"), None);
    }

    #[test]
    fn parses_stat_processor_with_spaces_in_comm() {
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[0] = "R".into();
        fields[39 - 3] = "7".into();
        let line = format!("1234 (a b) c) {}", fields.join(" "));
        assert_eq!(parse_stat_processor(&line), Some(7));
    }

    #[test]
    fn own_counters_are_readable() {
        let me = crate::affinity::gettid();
        let a = Snapshot::take(me);
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        let b = Snapshot::take(me);
        assert!(a.delta(&b).cpu_time_ns > 0);
        assert!(last_cpu(me).is_some());
        assert!(
            crate::affinity::get_affinity(0)
                .unwrap()
                .contains(last_cpu(me).unwrap())
        );
    }
}
