//! The upper bounds on what a user may ask for, in one table, with one wording for every
//! refusal: `--threads 100000000: at most 4096 (…why…)`, exit 2, before anything is
//! allocated or spawned.
//!
//! They keep the machine alive, not the user honest: `plan all --threads 100000000` once
//! grew to 24 GB and was OOM-killed, and `burn -t 100000` was still spawning threads 16
//! minutes later. Every limit is far above what a measurement on today's largest machines
//! needs (a few hundred CPUs): thread counts well past the CPUs only measure the scheduler.

use crate::error::BadInput;
use std::time::Duration;

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
/// Rows each oltp client thread inserts with `--rows-per-thread`.
pub const MAX_ROWS_PER_THREAD: u64 = 100_000_000;
/// Repetitions (`--repeat`) of a run or a round of layouts.
pub const MAX_REPEAT: u64 = 1000;
/// `c2c --samples` per pair.
pub const MAX_SAMPLES: u64 = 100_000;
/// `c2c --round-trips` per sample.
pub const MAX_ROUND_TRIPS: u64 = 1_000_000;
/// `rwcache --entries`: 4 Mi entries make a 384 MiB table (2 slots per entry, 48 B each).
pub const MAX_ENTRIES: u64 = 1 << 22;
/// `rwcache --lookups` per request.
pub const MAX_LOOKUPS: u64 = 1024;
/// `oltp --rows-per-txn`: rows one multi-row INSERT binds.
pub const MAX_ROWS_PER_TXN: u64 = 1000;
/// `compare --runs` and `--warmup`: rounds over every placement.
pub const MAX_RUNS: u64 = 100_000;
/// `yield --cores`: its `all` layout runs every sibling of each core.
pub const MAX_YIELD_CORES: u64 = MAX_THREADS / 4;
/// `top --interval`, shortest: `/proc/stat` counts in 10 ms ticks (`USER_HZ` = 100,
/// proc(5)).
pub const MIN_TOP_INTERVAL: Duration = Duration::from_millis(100);
/// `top --interval`, longest.
pub const MAX_TOP_INTERVAL: Duration = Duration::from_secs(3600);
/// `study --budget`, shortest.
pub const MIN_STUDY_BUDGET: Duration = Duration::from_secs(10);
/// `smtlab report`'s results.json: a study on a machine with a thousand CPUs writes a
/// few tens of MB (its c2c matrix has a row per pair).
pub const MAX_RESULTS_BYTES: u64 = 256 << 20;
/// `merge`: the results.json files one merge reads (directories are searched for them).
pub const MAX_MERGE_FILES: u64 = 100_000;
/// How many directory levels `merge` searches below each directory it is given.
pub const MAX_MERGE_DEPTH: u64 = 16;
/// The SMT and hugetlb journals: the SMT journal lists the online CPUs and their cores,
/// under 2 MB pretty-printed for 65536 CPUs.
pub const MAX_JOURNAL_BYTES: u64 = 4 << 20;
/// A password file (`--db-password-file`, `PGPASSFILE`, `~/.pgpass`).
pub const MAX_PASSWORD_FILE_BYTES: u64 = 64 << 10;
/// A `top --yield` file (a `smtlab yield --json` output holds every run).
pub const MAX_YIELD_FILE_BYTES: u64 = 16 << 20;
/// Share of `MemAvailable` that buffers a run allocates may take.
pub const MEMORY_SHARE: f64 = 0.5;

/// Why each limit is where it is, in the words of every refusal and of README's table.
pub const WHY_THREADS: &str =
    "more threads than that measure the scheduler, and each costs a stack";
pub const WHY_PROCESSES: &str = "each burner is a process";
pub const WHY_CONNECTIONS: &str = "one database connection each";
pub const WHY_OP_NS: &str = "1 s per operation; longer ones never finish a run";
pub const WHY_ROWS: &str = "minutes of inserts";
pub const WHY_MAX_PRIME: &str = "one event would take minutes; sysbench's default is 10000";
pub const WHY_REPEAT: &str = "each repetition runs every configuration again";
pub const WHY_SAMPLES: &str = "per pair; every pair of CPUs takes them all";
pub const WHY_ROUND_TRIPS: &str = "per sample; 1,000,000 already take about a second";

pub const WHY_ENTRIES: &str =
    "4 Mi entries make a 384 MiB table; the default, 10000, models a metadata cache";
pub const WHY_LOOKUPS: &str =
    "lookups per request, each its own read-side acquisition; the default is 4";
pub const WHY_ROWS_PER_TXN: &str = "one multi-row INSERT per commit binds every row";
pub const WHY_RUNS: &str = "rounds over every placement, each running the command once";
pub const WHY_YIELD_CORES: &str = "cores; `all` runs every sibling of each";
pub const WHY_TOP_INTERVAL: &str = "/proc/stat counts in 10 ms ticks";
pub const WHY_INPUT_FILE: &str =
    "read whole into memory; far above what smtlab writes or a user types";

/// What a [`Limit`] allows.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// At most this number, then words after it (` rows`, ` (1 s)`).
    AtMost(u64, &'static str),
    /// At most this many per usable CPU.
    PerCpu(u64),
    /// At least this long.
    AtLeast(Duration),
    /// From the first to the second.
    Between(Duration, Duration),
    /// Said in words (the memory share).
    Words(&'static str),
}

/// One limit: the options it bounds, the bound, why.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    pub options: &'static str,
    pub bound: Bound,
    pub why: &'static str,
}

impl Limit {
    /// The bound as README's table shows it.
    pub fn bound_text(&self) -> String {
        match self.bound {
            Bound::AtMost(n, after) => format!("{n}{after}"),
            Bound::PerCpu(n) => format!("{n} per usable CPU"),
            Bound::AtLeast(d) => format!("at least {}", crate::duration::format_duration(d)),
            Bound::Between(lo, hi) => {
                format!(
                    "{} to {}",
                    crate::duration::format_duration(lo),
                    crate::duration::format_duration(hi)
                )
            }
            Bound::Words(w) => w.to_string(),
        }
    }

    /// README's table row: `| options | bound | why |`.
    pub fn readme_row(&self) -> String {
        format!(
            "| {} | {} | {} |",
            self.options,
            self.bound_text(),
            self.why
        )
    }
}

/// Every limit, for README's table (`tests/limits.rs` checks README against it).
pub const TABLE: &[Limit] = &[
    Limit {
        options: "`burn --threads`, `neighbors --workers` + `--burners`, `rwcache --threads`, \
                  without `--force`",
        bound: Bound::PerCpu(MAX_THREADS_PER_CPU),
        why: "more only measures the scheduler and makes Ctrl-C slow",
    },
    Limit {
        options: "`plan`/`burn --threads`, `neighbors --workers`/`--burners`, \
                  `rwcache --threads`, `compare --cores`",
        bound: Bound::AtMost(MAX_THREADS, ""),
        why: WHY_THREADS,
    },
    Limit {
        options: "`yield --cores`",
        bound: Bound::AtMost(MAX_YIELD_CORES, ""),
        why: WHY_YIELD_CORES,
    },
    Limit {
        options: "`burn --mode process --threads`, `neighbors --burners` with \
                  `--burner-mode process`, `compare --burners` (the count)",
        bound: Bound::AtMost(MAX_PROCESSES, ""),
        why: WHY_PROCESSES,
    },
    Limit {
        options: "`oltp --threads`",
        bound: Bound::AtMost(MAX_CONNECTIONS, ""),
        why: WHY_CONNECTIONS,
    },
    Limit {
        options: "`lockscan --cs-ns`, `rwcache --work-ns`",
        bound: Bound::AtMost(MAX_OP_NS, " (1 s)"),
        why: WHY_OP_NS,
    },
    Limit {
        options: "`oltp --prefill`, `oltp --rows-per-thread`",
        bound: Bound::AtMost(MAX_PREFILL_ROWS, " rows"),
        why: WHY_ROWS,
    },
    Limit {
        options: "`oltp --rows-per-txn`",
        bound: Bound::AtMost(MAX_ROWS_PER_TXN, " rows"),
        why: WHY_ROWS_PER_TXN,
    },
    Limit {
        options: "`burn --max-prime`",
        bound: Bound::AtMost(MAX_MAX_PRIME, ""),
        why: WHY_MAX_PRIME,
    },
    Limit {
        options: "`--repeat` (lockscan, neighbors, oltp, rwcache, yield, mem pages)",
        bound: Bound::AtMost(MAX_REPEAT, ""),
        why: WHY_REPEAT,
    },
    Limit {
        options: "`compare --runs`, `compare --warmup`",
        bound: Bound::AtMost(MAX_RUNS, ""),
        why: WHY_RUNS,
    },
    Limit {
        options: "`rwcache --entries`",
        bound: Bound::AtMost(MAX_ENTRIES, ""),
        why: WHY_ENTRIES,
    },
    Limit {
        options: "`rwcache --lookups`",
        bound: Bound::AtMost(MAX_LOOKUPS, ""),
        why: WHY_LOOKUPS,
    },
    Limit {
        options: "`c2c --samples`",
        bound: Bound::AtMost(MAX_SAMPLES, ""),
        why: WHY_SAMPLES,
    },
    Limit {
        options: "`c2c --round-trips`",
        bound: Bound::AtMost(MAX_ROUND_TRIPS, ""),
        why: WHY_ROUND_TRIPS,
    },
    Limit {
        options: "`lockscan --scan-bytes` × scan threads; `burn --threads`, `neighbors --burners`, \
                  `compare --burners` with a `stream` or `chase` kind (a 64 MiB+ buffer each)",
        bound: Bound::Words("half of `MemAvailable` (all of it with `--force`, where offered)"),
        why: "the buffers are first-touched before the run; more than `MemAvailable` swaps or \
              meets the OOM killer",
    },
    Limit {
        options: "every `--duration`, `lockscan --interval`, `c2c --budget`",
        bound: Bound::AtLeast(crate::duration::MIN_MEASURED),
        why: "shorter windows measure timer rounding, not the workload",
    },
    Limit {
        options: "`top --interval`",
        bound: Bound::Between(MIN_TOP_INTERVAL, MAX_TOP_INTERVAL),
        why: WHY_TOP_INTERVAL,
    },
    Limit {
        options: "`study --budget`",
        bound: Bound::AtLeast(MIN_STUDY_BUDGET),
        why: "`--quick` is the shortest study",
    },
    Limit {
        options: "`report`'s results.json, each of `merge`'s",
        bound: Bound::AtMost(MAX_RESULTS_BYTES, " bytes (256 MiB)"),
        why: WHY_INPUT_FILE,
    },
    Limit {
        options: "`merge`'s input files",
        bound: Bound::AtMost(MAX_MERGE_FILES, " files"),
        why: "one merge holds every host's answers in memory; merge fewer at a time",
    },
    Limit {
        options: "`merge`'s directory search",
        bound: Bound::AtMost(MAX_MERGE_DEPTH, " levels below each directory given"),
        why: "a directory deeper than that is not searched and is named among the skipped \
              inputs (`too deep`), as is every entry named `results.json` that is not a regular \
              file (a FIFO, a device, a link to nothing) and every directory that cannot be \
              listed; links to directories are not followed",
    },
    Limit {
        options: "the SMT journal (`smt`), the hugetlb journal (`mem pages`)",
        bound: Bound::AtMost(MAX_JOURNAL_BYTES, " bytes (4 MiB)"),
        why: WHY_INPUT_FILE,
    },
    Limit {
        options: "`--db-password-file`, `PGPASSFILE`, `~/.pgpass`",
        bound: Bound::AtMost(MAX_PASSWORD_FILE_BYTES, " bytes (64 KiB)"),
        why: WHY_INPUT_FILE,
    },
    Limit {
        options: "`top --yield` file",
        bound: Bound::AtMost(MAX_YIELD_FILE_BYTES, " bytes (16 MiB)"),
        why: WHY_INPUT_FILE,
    },
];

/// Runnable threads per usable CPU above which a run needs `--force`. Past it a run only
/// measures the scheduler, and a stop request must wait for every spinning thread to be
/// scheduled once: with EEVDF's 1.5–3 ms base slice (`sysctl_sched_base_slice` in
/// `kernel/sched/fair.c`), 512 spinners per CPU take about a second per round, and
/// measured here 1024 burner threads on 2 CPUs took 15 s to stop after Ctrl-C while 128
/// took 0.6 s.
pub const MAX_THREADS_PER_CPU: u64 = 64;

/// `threads` runnable threads on `cpus` usable CPUs: at most [`MAX_THREADS_PER_CPU`] each
/// unless `force`.
pub fn per_cpu(option: &str, threads: u64, cpus: usize, force: bool) -> Result<(), BadInput> {
    let cpus = cpus.max(1) as u64;
    if !force && threads > MAX_THREADS_PER_CPU * cpus {
        return Err(BadInput(format!(
            "{option} {threads}: {threads} runnable threads on {cpus} usable CPU{}, more than \
             {MAX_THREADS_PER_CPU} per CPU ({}): such a run only measures the scheduler and \
             takes seconds to stop on Ctrl-C; add --force to run it anyway",
            if cpus == 1 { "" } else { "s" },
            MAX_THREADS_PER_CPU * cpus
        )));
    }
    Ok(())
}

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

/// `MemAvailable` of a `/proc/meminfo` text, bytes (the kernel's estimate of what can be
/// allocated without swapping, Documentation/filesystems/proc.rst).
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// Whether a command offers `--force` to go past [`MEMORY_SHARE`] of `MemAvailable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Force {
    /// The command has no `--force`: [`MEMORY_SHARE`] is the limit.
    NotOffered,
    /// The command has `--force`; whether it was given.
    Offered(bool),
}

/// The one check of memory a run would allocate: `total_bytes` for `what` (e.g. "4096
/// `stream` buffers of 64 MiB"), asked for through `option` (the option and its value, e.g.
/// `--threads 4096 with --kind stream`), against `available` bytes (this machine's
/// `MemAvailable`, [`mem_available_bytes`]; None when unknown, and then nothing is
/// refused). More than all of it is always refused: the run would swap or meet the OOM
/// killer, and the buffers are first-touched before the measurement. More than
/// [`MEMORY_SHARE`] of it is refused unless `--force`, where the command offers it: the
/// rest of the machine needs memory too.
pub fn memory(
    option: &str,
    total_bytes: u64,
    available: Option<u64>,
    what: &str,
    force: Force,
) -> Result<(), BadInput> {
    let Some(avail) = available else {
        return Ok(());
    };
    let human = crate::render::bytes;
    let share = (avail as f64 * MEMORY_SHARE) as u64;
    let forced = force == Force::Offered(true);
    if total_bytes <= share || (forced && total_bytes <= avail) {
        return Ok(());
    }
    let than = if total_bytes > avail {
        format!("more than the {}", human(avail))
    } else {
        format!("more than half of the {}", human(avail))
    };
    let allowed = match force {
        Force::NotOffered => format!("at most {} (half of it) may be used", human(share)),
        Force::Offered(_) => format!(
            "at most {} (half of it) may be used, or {} with --force",
            human(share),
            human(avail)
        ),
    };
    Err(BadInput(format!(
        "{option}: {what} would take {}, {than} this machine has available (MemAvailable in \
         /proc/meminfo); {allowed}",
        human(total_bytes)
    )))
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
        let e = memory(
            "--scan-bytes",
            64 << 30,
            Some(8 << 30),
            "2 scan buffers",
            Force::NotOffered,
        )
        .unwrap_err()
        .0;
        assert!(e.contains("--scan-bytes") && e.contains("64 GiB"), "{e}");
        assert!(
            memory(
                "--scan-bytes",
                1 << 20,
                Some(8 << 30),
                "x",
                Force::NotOffered
            )
            .is_ok()
        );
        assert!(memory("--scan-bytes", u64::MAX, None, "x", Force::NotOffered).is_ok());
        assert_eq!(
            parse_mem_available("MemTotal: 10 kB\nMemAvailable:    2048 kB\n"),
            Some(2 << 20)
        );
    }

    #[test]
    fn memory_past_half_needs_force_and_past_all_is_refused() {
        // A machine with 4 GiB available, as /proc/meminfo says it.
        let meminfo = "MemTotal:       16318856 kB\nMemFree:         1000000 kB\n\
                       MemAvailable:    4194304 kB\nBuffers:          123456 kB\n";
        let avail = parse_mem_available(meminfo);
        assert_eq!(avail, Some(4 << 30));
        let check = |total: u64, force| memory("--threads 64", total, avail, "64 buffers", force);
        assert!(check(2 << 30, Force::NotOffered).is_ok());
        let e = check(3 << 30, Force::Offered(false)).unwrap_err().0;
        assert_eq!(
            e,
            "--threads 64: 64 buffers would take 3 GiB, more than half of the 4 GiB this \
             machine has available (MemAvailable in /proc/meminfo); at most 2 GiB (half of \
             it) may be used, or 4 GiB with --force"
        );
        assert!(check(3 << 30, Force::Offered(true)).is_ok());
        let e = check(3 << 30, Force::NotOffered).unwrap_err().0;
        assert!(
            e.ends_with("; at most 2 GiB (half of it) may be used"),
            "{e}"
        );
        // Past all of it, --force does not help.
        let e = check(5 << 30, Force::Offered(true)).unwrap_err().0;
        assert!(
            e.contains("would take 5 GiB, more than the 4 GiB this machine has available"),
            "{e}"
        );
        // No MemAvailable line (kernels before 3.14): nothing to check against.
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert!(memory("x", u64::MAX, None, "y", Force::Offered(false)).is_ok());
    }
}
