//! The upper bounds on what a user may ask for, in one table, with one wording for every
//! refusal: `--threads 100000000: at most 4096 (…why…)`, exit 2, before anything is
//! allocated or spawned.
//!
//! They keep the machine alive, not the user honest: `plan all --threads 100000000` once
//! grew to 24 GB and was OOM-killed, and `burn -t 100000` was still spawning threads 16
//! minutes later. Every limit is far above what a measurement on today's largest machines
//! needs (a few hundred CPUs): thread counts well past the CPUs only measure the scheduler.

use crate::error::BadInput;

/// Threads, workers or burners in one run.
pub const MAX_THREADS: u64 = 4096;
/// Burner child processes in one run.
pub const MAX_PROCESSES: u64 = 1024;
/// Database connections (client threads) in one oltp run.
pub const MAX_CONNECTIONS: u64 = 1024;
/// Busy work per operation (`--cs-ns`, `--work-ns`): 1 s.
pub const MAX_OP_NS: u64 = 1_000_000_000;
/// Rows inserted before an oltp run.
pub const MAX_PREFILL_ROWS: u64 = 100_000_000;
/// `burn --max-prime` (sysbench's default is 10,000; 10⁹ makes one event take minutes).
pub const MAX_MAX_PRIME: u64 = 1_000_000_000;
/// Share of `MemAvailable` that buffers a run allocates may take.
pub const MEMORY_SHARE: f64 = 0.5;

/// Every limit, for the README table: option(s), limit, why.
pub const TABLE: &[(&str, &str, &str)] = &[
    (
        "`plan`/`burn --threads`, `neighbors --workers`/`--burners`, `rwcache --threads`",
        "4096",
        "more threads than that measure the scheduler, and each costs a stack",
    ),
    (
        "`burn --mode process --threads`, `neighbors --burner-mode process`",
        "1024",
        "each burner is a process",
    ),
    ("`oltp --threads`", "1024", "one database connection each"),
    (
        "`lockscan --cs-ns`, `rwcache --work-ns`",
        "1 s",
        "per operation; longer ones never finish a run",
    ),
    ("`oltp --prefill`", "100,000,000 rows", "minutes of inserts"),
    (
        "`burn --max-prime`",
        "1,000,000,000",
        "one event would take minutes",
    ),
    (
        "`lockscan --scan-bytes` × scan threads",
        "half of MemAvailable",
        "the buffers are memset from the start",
    ),
];

/// `value` of `option` must be at most `max`.
pub fn at_most(option: &str, value: u64, max: u64, why: &str) -> Result<(), BadInput> {
    if value > max {
        return Err(BadInput(format!("{option} {value}: at most {max} ({why})")));
    }
    Ok(())
}

/// `MemAvailable` from `/proc/meminfo`, in bytes; None when it cannot be read.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// `total_bytes` that `option` would allocate must fit in [`MEMORY_SHARE`] of
/// `available` (this machine's `MemAvailable` when None is known, the check is skipped).
pub fn memory(
    option: &str,
    total_bytes: u64,
    available: Option<u64>,
    what: &str,
) -> Result<(), BadInput> {
    let Some(avail) = available else {
        return Ok(());
    };
    let max = (avail as f64 * MEMORY_SHARE) as u64;
    if total_bytes > max {
        return Err(BadInput(format!(
            "{option}: {what} would take {} but at most {} may be used (half of the {} \
             this machine has available)",
            crate::topology::render::human_bytes(total_bytes),
            crate::topology::render::human_bytes(max),
            crate::topology::render::human_bytes(avail)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_option_value_limit_and_why() {
        assert!(at_most("--threads", 4096, MAX_THREADS, "x").is_ok());
        let e = at_most("--threads", 100_000_000, MAX_THREADS, "why")
            .unwrap_err()
            .0;
        assert_eq!(e, "--threads 100000000: at most 4096 (why)");
        let e = memory("--scan-bytes", 64 << 30, Some(8 << 30), "2 scan buffers")
            .unwrap_err()
            .0;
        assert!(e.contains("--scan-bytes") && e.contains("64 GiB"), "{e}");
        assert!(memory("--scan-bytes", 1 << 20, Some(8 << 30), "x").is_ok());
        assert!(memory("--scan-bytes", u64::MAX, None, "x").is_ok());
        assert_eq!(
            parse_mem_available("MemTotal: 10 kB\nMemAvailable:    2048 kB\n"),
            Some(2 << 20)
        );
    }
}
