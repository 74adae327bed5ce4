//! The command line. clap's types stay in this file: each subcommand is turned into a typed,
//! validated config from `crate::commands` and handed over.

use crate::commands;
use crate::limits;
use crate::placement::Request;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

mod values;
use values::{Counts, whole};

#[derive(Parser, Debug)]
#[command(
    name = "smtlab",
    version,
    about = "Measure how CPU sharing (SMT siblings, locks, noisy neighbours, oversubscription) speeds up or wrecks workloads",
    after_help = crate::error::exit_codes_help()
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug, Clone)]
struct RootArg {
    /// Read sysfs/procfs from this root instead of `/` (e.g. an unpacked topology dump).
    #[arg(long, value_name = "DIR", default_value = "/")]
    sysfs_root: PathBuf,
}

#[derive(Args, Debug, Clone)]
struct WithinArg {
    /// Where the comparison layouts (one-per-core, pairs, all, spread, same-core, same-l3) stay:
    /// one `package` (the default; and one core kind on hybrid CPUs), one `l3`, one NUMA
    /// `node`, or the whole `machine`. An SMT comparison that also crosses packages or core
    /// kinds measures those too.
    #[arg(long, value_name = "SCOPE", default_value = "package", value_parser = parse_scope)]
    within: crate::placement::Scope,
}

#[derive(Args, Debug, Clone)]
struct CountersArg {
    /// Event counters for each measured thread (`compare`: each run's whole process
    /// tree): `all` (every event this machine can count:
    /// task-clock, context switches, migrations, page faults, and cycles, instructions,
    /// IPC where a hardware PMU exists), `software` (the kernel's events only), or `off`.
    /// What cannot be counted is reported with the reason.
    #[arg(long, value_name = "MODE", default_value = "all",
          value_parser = values::member::<crate::counters::Mode>)]
    counters: crate::counters::Mode,
}

fn parse_scope(s: &str) -> std::result::Result<crate::placement::Scope, String> {
    s.parse()
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the CPU topology: packages, L3 groups, cores and their SMT siblings.
    Topo {
        #[command(flatten)]
        root: RootArg,
        /// One row per logical CPU.
        #[arg(long)]
        cpus: bool,
        /// Machine-readable JSON (model + oracle-shaped partitions).
        #[arg(long)]
        json: bool,
    },
    /// Run CPU burners, like `stress-ng --cpu`: each stresses one resource and reports its
    /// rate (events/s for `prime`, comparable with `sysbench cpu`).
    Burn {
        /// Burner kind: prime, int, mul, fma, fma-scalar, fma-avx2, fma-avx512, pause,
        /// stream, chase, l1, l2, scan.
        #[arg(long, short = 'k', value_parser = values::member::<crate::burn::BurnerKind>)]
        kind: crate::burn::BurnerKind,
        /// Number of burners.
        #[arg(long, short = 't', default_value_t = 1, value_name = "N", allow_hyphen_values = true,
              value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
        threads: usize,
        /// Where burners run: one-per-core, pairs, all, spread, same-core, same-l3,
        /// other-l3, other-package, siblings-of:LIST, cpus:LIST, os (not pinned; the
        /// default). See `smtlab plan`.
        #[arg(long, value_name = "REQUEST", conflicts_with = "cpus", value_parser = Request::parse)]
        placement: Option<Request>,
        #[command(flatten)]
        within: WithinArg,
        /// Pin burners to these CPUs in turn (same as `--placement cpus:LIST`).
        #[arg(long, value_name = "LIST", value_parser = values::cpus)]
        cpus: Option<crate::cpuset::CpuSet>,
        /// Measurement length: 5, 5s, 500ms, 2m.
        #[arg(long, short = 'd', default_value = "5s", allow_hyphen_values = true,
              value_parser = values::measured)]
        duration: Duration,
        /// Warm-up before measuring (buffers are built during it); 0 to skip.
        #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = values::warmup)]
        warmup: Duration,
        /// thread (engine threads of this process) or process (one child process each).
        #[arg(long, default_value = "thread", value_parser = values::member::<crate::burn::Mode>)]
        mode: crate::burn::Mode,
        /// Scheduling policy of each burner: normal, batch, idle.
        #[arg(long, default_value = "normal", value_parser = values::member::<crate::burn::Policy>)]
        policy: crate::burn::Policy,
        /// Nice value of each burner (-20..19; negative needs CAP_SYS_NICE).
        #[arg(long, allow_hyphen_values = true, value_parser = whole::<i32>(-20, 19, values::WHY_NICE))]
        nice: Option<i32>,
        #[command(flatten)]
        counters: CountersArg,
        /// Prime bound for `prime`, as sysbench's --cpu-max-prime.
        #[arg(long, default_value_t = crate::burn::DEFAULT_MAX_PRIME, allow_hyphen_values = true,
              value_parser = whole::<u64>(3, limits::MAX_MAX_PRIME.into(), limits::WHY_MAX_PRIME))]
        max_prime: u64,
        /// Run more than 64 threads per usable CPU (a run that only measures the scheduler
        /// and is slow to stop).
        #[arg(long)]
        force: bool,
        /// Machine-readable JSON.
        #[arg(long)]
        json: bool,
        /// Internal: run as a process-mode burner child pinned to LIST.
        #[arg(long, hide = true, value_name = "LIST", value_parser = values::cpus)]
        child_cpus: Option<crate::cpuset::CpuSet>,
        /// Internal: a child runs until SIGTERM.
        #[arg(long, hide = true, requires = "child_cpus")]
        until_stopped: bool,
    },
    /// Singleton inserts from N pinned client threads into SQLite or PostgreSQL:
    /// inserts/s, per-thread elapsed, commit latency, a row-count check.
    Oltp(OltpArgs),
    /// Cache-line ping-pong latency between every pair of CPUs (as core-to-core-latency),
    /// with the ceiling it puts on contended lock handoffs per second.
    C2c {
        /// CPUs to measure (default: every CPU this process may use).
        #[arg(long, value_name = "LIST", value_parser = values::cpus)]
        cpus: Option<crate::cpuset::CpuSet>,
        /// Samples per pair (one more is taken and discarded).
        #[arg(long, default_value_t = 300, value_name = "N", allow_hyphen_values = true,
              value_parser = whole::<usize>(1, limits::MAX_SAMPLES.into(), limits::WHY_SAMPLES))]
        samples: usize,
        /// Round trips timed per sample.
        #[arg(long, default_value_t = 1000, value_name = "N", allow_hyphen_values = true,
              value_parser = whole::<usize>(1, limits::MAX_ROUND_TRIPS.into(), limits::WHY_ROUND_TRIPS))]
        round_trips: usize,
        /// Longest to spend (30s, 2m): fewer samples per pair first (down to 31), then
        /// fewer CPUs (two siblings of one core, then one CPU per core in spread order).
        /// Big machines have thousands of pairs.
        #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = values::measured)]
        budget: Option<Duration>,
        /// Machine-readable JSON: `{cpus, pairs: [{a, b, proximity, latency_ns}], matrix_ns,
        /// classes, left_out}`.
        #[arg(long)]
        json: bool,
    },
    /// Lock threads spin on one global lock while scan threads memset a buffer;
    /// does a lock thread sharing a core with a scanner acquire less?
    Lockscan(LockscanArgs),
    /// Workers append to one hot page under a lock while CPU burners step up;
    /// per step ops/s, latency, scheduling evidence and the mechanism behind any loss.
    Neighbors(NeighborsArgs),
    /// A read-mostly metadata cache under spin, rwspin, rwlock, parking_lot-rw,
    /// brlock, seqlock and rcu; requests/s, % CPU in the lock, lock stats, spin → rwspin.
    Rwcache(RwcacheArgs),
    /// Your own command under SMT placements and noisy neighbours: one thread per core vs
    /// both siblings vs every sibling (or CPU lists), interleaved and paired by round,
    /// with medians, intervals and the SMT yield.
    /// `smtlab compare --cpus 0 --cpus 0-1 -- sysbench cpu run`.
    Compare(CompareArgs),
    /// The main job: run every experiment this machine supports (topology, c2c, lockscan,
    /// neighbors, oltp, rwcache, yield; and your own command given after `--`) within a
    /// time budget and write results.json, report.html and summary.md with a plain-words
    /// verdict.
    Study(StudyArgs),
    /// Re-render report.html and summary.md from a study's results.json (byte-identical to
    /// what the study wrote).
    Report {
        /// The results.json a study wrote.
        results: PathBuf,
        /// Output directory (default: the directory holding results.json).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Merge many hosts' studies (results.json files, or directories holding them) into one
    /// answer per machine type: fleet.json, fleet.html and fleet.md.
    Merge(MergeArgs),
    /// SMT's state, and switching it off and on through sysfs with a journal that `smt
    /// restore` undoes (even after the switching process was killed).
    #[command(
        subcommand,
        after_help = "Switching needs root: a normal user gets exit code 4 (and can add --dry-run to see the writes)."
    )]
    Smt(SmtAction),
    /// Per-CPU and per-core utilisation, like `mpstat -P ALL 1` but per core: what "50 %
    /// CPU" means when two threads share a core, and the capacity left in cores' worth.
    Top(TopArgs),
    /// Memory settings in plain words (overcommit and commit headroom, page cache, swap,
    /// huge pages, cgroup limits, OOM victims), and what page size costs on this CPU.
    #[command(subcommand)]
    Mem(MemAction),
    /// Plan thread placements (which CPUs each thread gets) without running anything.
    Plan {
        /// one-per-core (one thread per core: SMT off), pairs (N threads on both siblings
        /// of N/2 cores), all (every sibling of the N cores one-per-core uses: N × threads
        /// per core), spread (N threads one per logical CPU, first siblings first),
        /// same-core, same-l3, other-l3, other-package, siblings-of LIST (the other
        /// siblings of those CPUs' cores, never the CPUs themselves), cpus LIST, os.
        request: String,
        /// CPU list for `siblings-of` and `cpus` (or write `siblings-of:LIST`).
        list: Option<String>,
        /// Number of threads to place.
        #[arg(long, short = 't', value_name = "N", allow_hyphen_values = true,
              value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
        threads: usize,
        #[command(flatten)]
        root: RootArg,
        #[command(flatten)]
        within: WithinArg,
        /// JSON: `{request, threads: [{thread, cpus}], scope, …}`.
        #[arg(long)]
        json: bool,
    },
    /// SMT on vs off on the same N cores: each workload as one-per-core (N threads), all
    /// (every sibling of those cores) and pairs (N threads on N/2 cores), interleaved;
    /// throughput, latency, the SMT yield (all ÷ one-per-core) and a thread's speed on a
    /// shared core, each with its interval and class (gain, no effect, loss, inconclusive).
    Yield(YieldArgs),
}

/// Parses the process arguments and runs the command.
pub fn main() -> Result<()> {
    // Before parsing, so a signal that arrives in the first milliseconds (a supervisor's
    // quick SIGTERM) ends the run with exit 130 and cleanup, not by the default action.
    crate::interrupt::install();
    let cli = Cli::try_parse().map_err(from_clap)?;
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Topo { root, cpus, json } => {
            let view = if json {
                commands::topo::View::Json
            } else if cpus {
                commands::topo::View::Cpus
            } else {
                commands::topo::View::Tree
            };
            commands::topo::run(
                &commands::topo::Config {
                    root: root.sysfs_root,
                    view,
                },
                &mut out,
            )
        }
        Command::Burn {
            kind,
            threads,
            placement,
            within,
            cpus,
            duration,
            warmup,
            mode,
            policy,
            nice,
            max_prime,
            json,
            force,
            child_cpus,
            until_stopped,
            counters,
        } => {
            let placement = match (placement, cpus) {
                (Some(p), _) => p,
                (None, Some(c)) => Request::Cpus(c),
                (None, None) => Request::Os,
            };
            let child = child_cpus.map(|cpus| commands::burn::Child {
                cpus,
                until_stopped,
            });
            commands::burn::run(
                &commands::burn::Config {
                    spec: crate::burn::BurnSpec {
                        kind,
                        policy,
                        nice,
                        max_prime,
                        counters: counters.counters,
                    },
                    threads,
                    placement,
                    within: within.within,
                    mode,
                    warmup,
                    duration,
                    json,
                    force,
                    child,
                    exports: Default::default(),
                },
                &mut out,
            )
        }
        Command::Neighbors(args) => commands::neighbors::run(&neighbors_config(args)?, &mut out),
        Command::Lockscan(args) => commands::lockscan::run(&lockscan_config(args)?, &mut out),
        Command::Rwcache(args) => commands::rwcache::run(&rwcache_config(args)?, &mut out),
        Command::Study(args) => commands::study::run(&study_config(args)?, &mut out),
        Command::Compare(args) => compare_command(args, &mut out),
        Command::Report { results, out: dir } => {
            commands::report::run(&commands::report::Config { results, out: dir }, &mut out)
        }
        Command::Merge(args) => commands::merge::run(&merge_config(args), &mut out),
        Command::Oltp(args) => commands::oltp::run(
            &commands::oltp::Config {
                oltp: oltp_config(args)?,
                exports: Default::default(),
            },
            &mut out,
        ),
        Command::Yield(args) => commands::smt_yield::run(&yield_config(args)?, &mut out),
        Command::C2c {
            cpus,
            samples,
            round_trips,
            budget,
            json,
        } => commands::c2c::run(
            &commands::c2c::Config {
                cpus,
                samples,
                round_trips,
                budget,
                json,
            },
            &mut out,
        ),
        Command::Smt(action) => commands::smt::run(&smt_config(action)?, &mut out),
        Command::Top(args) => commands::top::run(&top_config(args)?, &mut out),
        Command::Mem(action) => commands::mem::run(&mem_config(action)?, &mut out),
        Command::Plan {
            request,
            list,
            threads,
            root,
            within,
            json,
        } => {
            let text = match list {
                // `plan cpus:0-1 extra` once became the list `0-1:extra`.
                Some(l) if request.contains(':') => {
                    return Err(crate::error::BadInput(format!(
                        "`{}` already has its CPU list, so `{}` is one word too many; write \
                         the list once, as `{}` or `{} {}`",
                        crate::quote::shorten(&request),
                        crate::quote::shorten(&l),
                        crate::quote::shorten(&request),
                        request.split(':').next().unwrap_or_default(),
                        crate::quote::shorten(request.split_once(':').map_or("", |x| x.1)),
                    ))
                    .into());
                }
                Some(l) => format!("{request}:{l}"),
                None => request,
            };
            let request = Request::parse(&text)?;
            commands::plan::run(
                &commands::plan::Config {
                    root: root.sysfs_root,
                    request,
                    threads,
                    within: within.within,
                    json,
                },
                &mut out,
            )
        }
    }
}

/// `smtlab oltp` options.
#[derive(Args, Debug)]
struct OltpArgs {
    /// sqlite (temporary file), sqlite:PATH, postgres-managed (a throwaway cluster smtlab
    /// creates and removes), or postgres://USER@HOST[:PORT]/DB (password from PGPASSWORD,
    /// ~/.pgpass / PGPASSFILE or --db-password-file, as libpq looks).
    #[arg(
        long,
        default_value = "sqlite",
        value_name = "DB",
        hide_default_value = false
    )]
    db: String,
    /// A file whose first line is the PostgreSQL password (keeps it out of `ps`).
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// Table: seed-001 (bigint key, 150-byte rows) or seed-002 (identity key, uuid).
    #[arg(long, default_value = "seed-001", value_parser = crate::oltp::Schema::parse)]
    schema: crate::oltp::Schema,
    /// sequential (hot last page) or random keys.
    #[arg(long, default_value = "sequential", value_parser = crate::oltp::KeyMode::parse)]
    key: crate::oltp::KeyMode,
    /// Rows per transaction (one multi-row INSERT per commit).
    #[arg(long, default_value_t = 1, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<u32>(1, limits::MAX_ROWS_PER_TXN.into(), limits::WHY_ROWS_PER_TXN))]
    rows_per_txn: u32,
    /// full (commit waits for the log flush) or delayed (SQL Server's Delayed Durability =
    /// FORCED: SQLite synchronous=OFF, PostgreSQL synchronous_commit=off).
    #[arg(long, default_value = "delayed", value_parser = crate::oltp::Durability::parse)]
    durability: crate::oltp::Durability,
    /// Random-key rows inserted before each run (a big table, scaled).
    #[arg(long, default_value_t = 0, value_name = "ROWS", allow_hyphen_values = true,
          value_parser = whole::<u64>(0, limits::MAX_PREFILL_ROWS.into(), limits::WHY_ROWS))]
    prefill: u64,
    /// Client threads (one connection each).
    #[arg(long, short = 't', default_value_t = 2, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_CONNECTIONS.into(), limits::WHY_CONNECTIONS))]
    threads: usize,
    /// Each thread inserts this many rows (per-thread elapsed reported).
    #[arg(long, value_name = "R", allow_hyphen_values = true,
          value_parser = whole::<u64>(1, limits::MAX_ROWS_PER_THREAD.into(), limits::WHY_ROWS))]
    rows_per_thread: Option<u64>,
    /// Measurement length (10, 10s, 500ms, 2m); with --rows-per-thread, the time limit.
    /// Default 10 s, or 1 h with --rows-per-thread.
    #[arg(long, short = 'd', allow_hyphen_values = true, value_parser = values::measured)]
    duration: Option<Duration>,
    /// Warm-up before measuring. Default 1 s, or 0 with --rows-per-thread.
    #[arg(long, allow_hyphen_values = true, value_parser = values::warmup)]
    warmup: Option<Duration>,
    /// Where client threads (and local backends) run: one-per-core, pairs, all, os,
    /// cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os", conflicts_with = "configs")]
    placement: String,
    /// Several layouts, run interleaved; impossible ones are skipped with the reason.
    /// The HT on/off comparison is `one-per-core,pairs,all`: N threads on N cores, N threads
    /// on N/2 cores' sibling pairs, and every sibling of those N cores (2N threads with SMT).
    #[arg(long, value_name = "LIST")]
    configs: Option<String>,
    /// Rounds over the layouts (A B C A B C …).
    #[arg(long, default_value_t = 1, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
    repeat: usize,
    #[command(flatten)]
    within: WithinArg,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    root: RootArg,
    #[command(flatten)]
    counters: CountersArg,
    /// Machine-readable JSON (`inserts_per_sec`, `rows_verified`, …).
    #[arg(long)]
    json: bool,
}

/// Turns the `oltp` options into a validated config.
fn oltp_config(a: OltpArgs) -> Result<crate::oltp::OltpConfig> {
    use crate::oltp::{DbTarget, OltpConfig, StopRule, TableSpec, parse_layouts};
    let stop = match a.rows_per_thread {
        Some(r) => StopRule::RowsPerThread(r),
        None => StopRule::Duration,
    };
    let rows_mode = a.rows_per_thread.is_some();
    let duration = match a.duration {
        Some(d) => d,
        None if rows_mode => Duration::from_secs(3600),
        None => Duration::from_secs(10),
    };
    let warmup = match a.warmup {
        Some(w) => w,
        None if rows_mode => Duration::ZERO,
        None => Duration::from_secs(1),
    };
    let layouts = match &a.configs {
        Some(c) => values::no_empty_items("--configs", c)
            .and_then(|()| parse_layouts(c))
            .map_err(|e| match e.0.starts_with("--configs") {
                true => e,
                false => crate::error::BadInput(format!("--configs: {e}")),
            }),
        None => parse_layouts(&a.placement)
            .map_err(|e| crate::error::BadInput(format!("--placement: {e}"))),
    }?;
    let cfg = OltpConfig {
        db: DbTarget::parse(&a.db)?.with_password_file(a.db_password_file)?,
        table: TableSpec {
            schema: a.schema,
            key: a.key,
            rows_per_txn: a.rows_per_txn,
        },
        durability: a.durability,
        prefill: a.prefill,
        threads: a.threads,
        stop,
        duration,
        warmup,
        layouts,
        within: a.within.within,
        repeat: a.repeat,
        dry_run: a.dry_run,
        sysfs_root: a.root.sysfs_root,
        json: a.json,
        counters: a.counters.counters,
    };
    cfg.validate()?;
    Ok(cfg)
}

#[derive(Args, Debug)]
struct NeighborsArgs {
    #[command(flatten)]
    root: RootArg,
    /// Worker threads (default 4 insert sessions).
    #[arg(long, default_value_t = 4, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    workers: usize,
    /// Worker side: `hot-page` (appends under a library lock) or `oltp` (real inserts).
    #[arg(long, default_value = "hot-page", value_enum)]
    workload: NeighborsWorkload,
    /// Lock of the hot page: tas, ttas, backoff, ticket, mcs, mutex, parking_lot, adaptive.
    #[arg(long, default_value = "ticket", value_parser = values::member::<crate::locks::LockKind>)]
    lock: crate::locks::LockKind,
    /// Worker placement (default `os`: unpinned); one-per-core, pairs,
    /// spread, cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os", value_parser = Request::parse)]
    placement: Request,
    #[command(flatten)]
    within: WithinArg,
    /// Burner counts to step through, e.g. 0,1,2,4 (default: 0 up to usable CPUs + 2).
    #[arg(long, value_name = "LIST", allow_hyphen_values = true,
          value_parser = values::counts(0, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    burners: Option<Counts>,
    /// Burner kind (default `prime`, a primality test per event).
    #[arg(long, default_value = "prime", value_parser = values::member::<crate::burn::BurnerKind>)]
    burner_kind: crate::burn::BurnerKind,
    /// os, same-cpus, siblings, other-cores.
    #[arg(long, default_value = "os",
          value_parser = values::member::<crate::experiments::neighbors::BurnerPlacement>)]
    burner_placement: crate::experiments::neighbors::BurnerPlacement,
    /// thread (in-process) or process (re-executed `smtlab burn`).
    #[arg(long, default_value = "thread", value_enum)]
    burner_mode: NeighborsBurnerMode,
    /// Burner scheduling policy: normal, batch, idle.
    #[arg(long, default_value = "normal", value_parser = values::member::<crate::burn::Policy>)]
    burner_policy: crate::burn::Policy,
    /// Burner nice value (-20..19; negative needs CAP_SYS_NICE).
    #[arg(long, allow_hyphen_values = true, value_parser = whole::<i32>(-20, 19, values::WHY_NICE))]
    burner_nice: Option<i32>,
    /// Measured time per step.
    #[arg(long, short = 'd', default_value = "2s", allow_hyphen_values = true,
          value_parser = values::measured)]
    duration: Duration,
    /// Discarded warm-up per step.
    #[arg(long, default_value = "500ms", allow_hyphen_values = true, value_parser = values::warmup)]
    warmup: Duration,
    /// Rounds over the steps, each from the first step again; with 2 or more every step
    /// gets a ratio paired with its round's first step and an interval (5+ for 95 % CIs).
    #[arg(long, default_value_t = 1, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
    repeat: usize,
    /// `--workload oltp`: the database (sqlite, sqlite:PATH, postgres://…, postgres-managed).
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// `--workload oltp`: a file whose first line is the PostgreSQL password.
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// `--workload oltp`: seed-001 or seed-002.
    #[arg(long, default_value = "seed-002", value_parser = crate::oltp::Schema::parse)]
    schema: crate::oltp::Schema,
    /// `--workload oltp`: full or delayed.
    #[arg(long, default_value = "delayed", value_parser = crate::oltp::Durability::parse)]
    durability: crate::oltp::Durability,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    counters: CountersArg,
    /// JSON: `{steps: [{burners, ops_per_sec, diagnosis, …}]}`.
    #[arg(long)]
    json: bool,
    /// Run more than 64 threads per usable CPU (a run that only measures the scheduler
    /// and is slow to stop).
    #[arg(long)]
    force: bool,
}

fn neighbors_config(a: NeighborsArgs) -> Result<commands::neighbors::Config> {
    use crate::error::BadInput;
    use crate::experiments::neighbors::{BurnerMode, NeighborsConfig};
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    let burner_mode = match a.burner_mode {
        NeighborsBurnerMode::Thread => BurnerMode::Thread,
        NeighborsBurnerMode::Process => BurnerMode::Process,
    };
    let burner_steps = match a.burners {
        Some(Counts(v)) => {
            if burner_mode == BurnerMode::Process {
                for &b in &v {
                    limits::at_most(
                        "--burners",
                        b as u64,
                        limits::MAX_PROCESSES,
                        limits::WHY_PROCESSES,
                    )?;
                }
            }
            v
        }
        None => {
            let topo = commands::load_topology(&a.root.sysfs_root)?;
            (0..=topo.allowed().len() + 2).collect()
        }
    };
    let mut burner = crate::burn::BurnSpec::new(a.burner_kind);
    burner.policy = a.burner_policy;
    burner.nice = a.burner_nice;
    burner.validate()?;
    let workload = match a.workload {
        NeighborsWorkload::HotPage => commands::neighbors::WorkloadChoice::HotPage(a.lock),
        NeighborsWorkload::Oltp => {
            use crate::oltp::{DbTarget, KeyMode, StopRule, TableSpec};
            let oc = crate::oltp::OltpConfig {
                db: DbTarget::parse(&a.db)?.with_password_file(a.db_password_file.clone())?,
                table: TableSpec {
                    schema: a.schema,
                    key: KeyMode::parse("sequential")?,
                    rows_per_txn: 1,
                },
                durability: a.durability,
                prefill: 0,
                threads: a.workers,
                stop: StopRule::Duration,
                duration: Duration::from_secs(1),
                warmup: Duration::ZERO,
                layouts: vec![Request::Os],
                within: a.within.within,
                repeat: 1,
                dry_run: a.dry_run,
                sysfs_root: a.root.sysfs_root.clone(),
                json: a.json,
                counters: crate::counters::Mode::Off,
            };
            oc.validate()?;
            commands::neighbors::WorkloadChoice::Oltp(Box::new(oc))
        }
    };
    let spec = crate::engine::RunSpec::new(a.warmup, a.duration).with_counters(a.counters.counters);
    spec.validate()?;
    let worker_placement = a.placement;
    if worker_placement == Request::All {
        return Err(bad(
            "--placement all runs every sibling of --workers cores, which changes the worker \
             count; give the count with --workers and use one-per-core, pairs or spread"
                .into(),
        ));
    }
    Ok(commands::neighbors::Config {
        force: a.force,
        root: a.root.sysfs_root,
        exp: NeighborsConfig::new(a.workers, worker_placement, a.within.within, spec)?
            .with_burners(burner_steps, burner, a.burner_placement, burner_mode)?
            .with_repeat(a.repeat)?,
        workload,
        json: a.json,
        dry_run: a.dry_run,
    })
}

/// `neighbors --workload`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum NeighborsWorkload {
    /// Appends under a library lock.
    #[value(alias = "hotpage")]
    HotPage,
    /// Real inserts (`--db`).
    Oltp,
}

/// `neighbors --burner-mode`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum NeighborsBurnerMode {
    /// In-process threads.
    Thread,
    /// Re-executed `smtlab burn` processes.
    Process,
}

/// How the user's command is placed and measured: `smtlab compare` and `smtlab study --
/// CMD` take the same options (hyperfine's names where they mean the same).
#[derive(Args, Debug)]
struct CommandArgs {
    /// Named placements, run in this order: one-per-core (one thread on each of K cores),
    /// pairs (both siblings of K/2 cores), all (every sibling of K cores). Default
    /// one-per-core,all on a machine with SMT; without siblings, `compare` measures the
    /// command on every CPU of the K cores, with nothing to compare.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    placements: Vec<String>,
    /// K, the cores of the named placements (default: every core of the --within unit).
    #[arg(long, value_name = "K", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    cores: Option<usize>,
    /// A CPU list as one more placement (repeatable; runs after --placements).
    #[arg(long, value_name = "LIST")]
    cpus: Vec<String>,
    /// Measured rounds (each runs every placement once). Default: as many as fit the time
    /// (compare: --max-time; study: the command's share of --budget) after the warm-up,
    /// at least 3.
    #[arg(long, short = 'r', value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_RUNS.into(), limits::WHY_RUNS))]
    runs: Option<usize>,
    /// Discarded rounds before measuring.
    #[arg(long, short = 'w', value_name = "N", default_value_t = 1, allow_hyphen_values = true,
          value_parser = whole::<usize>(0, limits::MAX_RUNS.into(), limits::WHY_RUNS))]
    warmup: usize,
    /// A number read from the command's output: `pgbench` (tps), `sysbench` (events or
    /// transactions per second), or a regex whose first capture group is the number.
    /// Without it, wall time is compared (sysbench, and pgbench -T, run for a fixed time:
    /// their own metric is read instead).
    #[arg(long, value_name = "pgbench|sysbench|REGEX")]
    metric: Option<String>,
    /// The regex metric is a latency or a time: lower is better.
    #[arg(long, requires = "metric")]
    lower_is_better: bool,
    /// Shell command run before each run (unpinned, not timed), e.g. 'pgbench -i -s 10'.
    #[arg(long, short = 'p', value_name = "CMD")]
    prepare: Option<String>,
    /// Shell command run once before all runs.
    #[arg(long, short = 's', value_name = "CMD")]
    setup: Option<String>,
    /// Shell command run once after all runs (also after a failure or Ctrl-C).
    #[arg(long, short = 'c', value_name = "CMD")]
    cleanup: Option<String>,
    /// Run the command through `sh -c` (pipes, builtins); by default it is exec'd directly.
    #[arg(long)]
    shell: bool,
    /// Keep runs that exit non-zero instead of stopping.
    #[arg(long, short = 'i')]
    ignore_failure: bool,
    /// Show the command's output (on stderr) instead of only capturing it.
    #[arg(long)]
    show_output: bool,
    /// Running processes (a server the command talks to) to place too: every thread of
    /// them and of their children, during each run, restored afterwards.
    #[arg(long, value_name = "PID", value_delimiter = ',', num_args = 1..)]
    pin_pids: Vec<i32>,
    /// Start a throwaway PostgreSQL cluster, export PGHOST/PGPORT/PGUSER/PGDATABASE to the
    /// command, place its processes like the command (or --server-cpus), remove it at the end.
    #[arg(long)]
    with_postgres: bool,
    /// CPUs for the server's processes in every placement.
    #[arg(long, value_name = "LIST")]
    server_cpus: Option<String>,
    /// Hold each placement in a temporary cpuset cgroup (root), so processes that reset
    /// their own affinity stay on its CPUs.
    #[arg(long)]
    cgroup: bool,
    /// Noisy neighbours: each placement runs once alone and once beside COUNT burners of
    /// KIND (prime, int, mul, fma, pause, stream, chase, l1, l2, scan), e.g. prime:2.
    #[arg(long, value_name = "KIND:COUNT")]
    burners: Option<String>,
    /// Where the burners go: siblings (of the placement's CPUs), same-cpus, other-cores, os.
    #[arg(long, value_name = "WHERE", default_value = "siblings")]
    burner_placement: String,
    /// Changes smaller than this many percent are "no difference" [default: 2; study: 5,
    /// the band of its other answer rows, used by the command's section and row alike].
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    noise: Option<f64>,
}

impl CommandArgs {
    /// The options given, as they would be typed (for a study's provenance, and to refuse
    /// them without a command).
    fn words(&self) -> Vec<String> {
        let mut w: Vec<String> = Vec::new();
        let mut opt = |name: &str, v: Option<String>| {
            w.push(format!("--{name}"));
            w.extend(v);
        };
        if !self.placements.is_empty() {
            opt("placements", Some(self.placements.join(",")));
        }
        if let Some(k) = self.cores {
            opt("cores", Some(k.to_string()));
        }
        for c in &self.cpus {
            opt("cpus", Some(c.clone()));
        }
        if let Some(n) = self.runs {
            opt("runs", Some(n.to_string()));
        }
        if self.warmup != 1 {
            opt("warmup", Some(self.warmup.to_string()));
        }
        if let Some(m) = &self.metric {
            opt("metric", Some(m.clone()));
        }
        if self.lower_is_better {
            opt("lower-is-better", None);
        }
        for (name, v) in [
            ("prepare", &self.prepare),
            ("setup", &self.setup),
            ("cleanup", &self.cleanup),
        ] {
            if let Some(v) = v {
                opt(name, Some(v.clone()));
            }
        }
        for (name, on) in [
            ("shell", self.shell),
            ("ignore-failure", self.ignore_failure),
            ("show-output", self.show_output),
            ("with-postgres", self.with_postgres),
            ("cgroup", self.cgroup),
        ] {
            if on {
                opt(name, None);
            }
        }
        if !self.pin_pids.is_empty() {
            let pids: Vec<String> = self.pin_pids.iter().map(i32::to_string).collect();
            opt("pin-pids", Some(pids.join(",")));
        }
        if let Some(c) = &self.server_cpus {
            opt("server-cpus", Some(c.clone()));
        }
        if let Some(b) = &self.burners {
            opt("burners", Some(b.clone()));
        }
        if self.burner_placement != "siblings" {
            opt("burner-placement", Some(self.burner_placement.clone()));
        }
        if let Some(n) = self.noise {
            opt("noise", Some(n.to_string()));
        }
        w
    }

    /// The comparison's configuration for `words` (not yet validated: the caller sets
    /// what is its own, then validates).
    fn config(
        self,
        words: Vec<String>,
        within: crate::placement::Scope,
        default_noise: f64,
    ) -> Result<crate::experiments::compare::Config> {
        use crate::experiments::compare::{self as cmp, PlacementChoice};
        let a = self;
        let bad = |m: String| anyhow::Error::new(crate::error::BadInput(m));
        let mut exp = cmp::Config::new(words);
        exp.command.shell = a.shell;
        if !a.placements.is_empty() {
            values::no_empty_items("--placements", &a.placements.join(","))?;
        }
        for p in &a.placements {
            exp.placements.push(PlacementChoice::parse_named(p)?);
        }
        for c in &a.cpus {
            let set =
                crate::cpuset::CpuSet::parse_user(c).map_err(|e| bad(format!("--cpus: {e}")))?;
            if set.is_empty() {
                return Err(bad("--cpus: the CPU list is empty".into()));
            }
            exp.placements.push(PlacementChoice::Cpus(set));
        }
        exp.cores = a.cores;
        exp.within = within;
        exp.runs = a.runs;
        exp.warmup = a.warmup;
        exp.metric = a
            .metric
            .as_deref()
            .map(|m| cmp::metric::MetricSpec::parse(m, a.lower_is_better))
            .transpose()
            .map_err(|e| bad(format!("--metric: {e}")))?;
        exp.prepare = a.prepare;
        exp.setup = a.setup;
        exp.cleanup = a.cleanup;
        exp.ignore_failure = a.ignore_failure;
        exp.show_output = a.show_output;
        exp.pin_pids = a.pin_pids;
        exp.with_postgres = a.with_postgres;
        exp.server_cpus = a
            .server_cpus
            .map(|c| {
                crate::cpuset::CpuSet::parse_user(&c)
                    .map_err(|e| bad(format!("--server-cpus: {e}")))
            })
            .transpose()?;
        exp.cgroup = a.cgroup;
        let burner_placement = a
            .burner_placement
            .parse()
            .map_err(|e: String| bad(format!("--burner-placement: {e}")))?;
        exp.burners = a
            .burners
            .map(|b| cmp::BurnerChoice::parse(&b, burner_placement))
            .transpose()?;
        exp.noise = match a.noise {
            Some(n) if !n.is_finite() => {
                return Err(bad(format!("--noise {n}: expected a percentage such as 2")));
            }
            Some(n) => n / 100.0,
            None => default_noise,
        };
        Ok(exp)
    }
}

/// `smtlab compare` options.
#[derive(Args, Debug)]
struct CompareArgs {
    #[command(flatten)]
    cmd: CommandArgs,
    #[command(flatten)]
    within: WithinArg,
    /// Time the automatic round count is sized to fill (warm-up included).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "60s",
        allow_hyphen_values = true
    )]
    max_time: String,
    /// Machine-readable JSON: `{placements: [{label, cpus, runs, wall_time_ns, metric, …}],
    /// comparisons, smt_yield, …}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    counters: CountersArg,
    /// Write one CSV row per placement to FILE.
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,
    /// Write a Markdown table to FILE.
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
    /// Internal: run as the cleanup guard of a comparison.
    #[arg(long, hide = true)]
    internal_guard: bool,
    /// The command and its arguments.
    #[arg(
        last = true,
        value_name = "CMD",
        required_unless_present = "internal_guard"
    )]
    command: Vec<String>,
}

/// Turns the `compare` options into a validated config and runs it.
fn compare_command(a: CompareArgs, out: &mut dyn std::io::Write) -> Result<()> {
    if a.internal_guard {
        return commands::compare::guard_main();
    }
    let mut exp = a.cmd.config(
        a.command,
        a.within.within,
        crate::experiments::compare::config::DEFAULT_NOISE,
    )?;
    exp.max_time = crate::duration::parse_measured(&a.max_time, "--max-time")?;
    exp.counters = a.counters.counters;
    exp.validate()?;
    commands::compare::run(
        &commands::compare::Config {
            exp,
            json: a.json,
            exports: crate::render::export::Exports {
                json: None,
                csv: a.export_csv,
                markdown: a.export_markdown,
            },
        },
        out,
    )
}

/// `smtlab study` options.
#[derive(Args, Debug)]
struct StudyArgs {
    /// Finish within about a minute: short runs, fewer samples.
    #[arg(long, conflicts_with = "budget")]
    quick: bool,
    /// Time the measurements are sized to fill: 90s, 5m, 20m (default 5m).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true, value_parser = values::budget)]
    budget: Option<Duration>,
    /// Directory for results.json, report.html and summary.md.
    #[arg(long, value_name = "DIR", default_value = "smtlab-study")]
    out: PathBuf,
    /// Database for the oltp phase: sqlite (a temporary file), sqlite:PATH,
    /// postgres-managed (a throwaway cluster) or postgres://USER@HOST[:PORT]/DB (password
    /// from PGPASSWORD, ~/.pgpass / PGPASSFILE or --db-password-file).
    #[arg(long, value_name = "DB", default_value = "sqlite")]
    db: String,
    /// A file whose first line is the PostgreSQL password (keeps it out of `ps`).
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    #[command(flatten)]
    within: WithinArg,
    #[command(
        flatten,
        next_help_heading = "Your command (smtlab study [OPTIONS] -- CMD [ARGS]...)"
    )]
    cmd: CommandArgs,
    /// Your own command and its arguments: the study's last phase runs it under SMT
    /// placements (one thread per core vs every sibling, or --cpus lists), as `smtlab
    /// compare` does, and answers for it in the verdict.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
    #[command(flatten)]
    counters: CountersArg,
    /// Also write the answer table as Prometheus gauges to FILE (node_exporter's textfile
    /// format, replaced whole): smtlab_answer{class,answer}, smtlab_smt_yield{class}.
    #[arg(long, value_name = "FILE")]
    prometheus: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct MergeArgs {
    /// results.json files written by `smtlab study`, and directories searched for files of
    /// that name (e.g. one directory per host).
    #[arg(value_name = "RESULTS", required = true)]
    inputs: Vec<PathBuf>,
    /// Directory for fleet.json, fleet.html and fleet.md.
    #[arg(long, value_name = "DIR", default_value = "smtlab-fleet")]
    out: PathBuf,
    /// Also write the answers as Prometheus gauges to FILE (node_exporter's textfile
    /// format, replaced whole): smtlab_fleet_answer{machine_type,class,answer}, …
    #[arg(long, value_name = "FILE")]
    prometheus: Option<PathBuf>,
    /// Print fleet.json instead of the summary.
    #[arg(long)]
    json: bool,
}

fn merge_config(a: MergeArgs) -> commands::merge::Config {
    let mut command = format!("smtlab merge --out {}", a.out.display());
    if let Some(p) = &a.prometheus {
        command.push_str(&format!(" --prometheus {}", p.display()));
    }
    for i in &a.inputs {
        command.push_str(&format!(" {}", i.display()));
    }
    if command.chars().count() > 400 {
        command = command.chars().take(399).collect::<String>() + "…";
    }
    commands::merge::Config {
        inputs: a.inputs,
        out: a.out,
        prometheus: a.prometheus,
        json: a.json,
        command,
    }
}

/// Turns the `study` options into a validated config.
fn study_config(a: StudyArgs) -> Result<commands::study::Config> {
    let budget = match (a.budget, a.quick) {
        (_, true) => crate::study::QUICK_BUDGET,
        (Some(b), false) => b,
        (None, false) => crate::study::DEFAULT_BUDGET,
    };
    let db = crate::oltp::DbTarget::parse(&a.db)?.with_password_file(a.db_password_file.clone())?;
    // The command as typed, minus any password in the database URL.
    let mut command = String::from("smtlab study");
    if a.quick {
        command.push_str(" --quick");
    }
    if let Some(b) = a.budget {
        command.push_str(&format!(
            " --budget {}",
            crate::duration::format_duration(b)
        ));
    }
    command.push_str(&format!(" --out {}", a.out.display()));
    if a.db != "sqlite" {
        command.push_str(&format!(" --db {db}"));
    }
    if a.within.within != crate::placement::Scope::default() {
        command.push_str(&format!(" --within {}", a.within.within));
    }
    if a.counters.counters != crate::counters::Mode::default() {
        command.push_str(&format!(" --counters {}", a.counters.counters));
    }
    let given = a.cmd.words();
    let compare = if a.command.is_empty() {
        if !given.is_empty() {
            let names: Vec<&String> = given.iter().filter(|w| w.starts_with("--")).collect();
            return Err(crate::error::BadInput(format!(
                "{} place and measure your own command, but none was given: add it after \
                 `--`, e.g. `smtlab study --metric pgbench -- pgbench -n -T 10`",
                names
                    .iter()
                    .map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .into());
        }
        None
    } else {
        let typed = crate::experiments::compare::render::shell_words(&given);
        if !typed.is_empty() {
            command.push(' ');
            command.push_str(&typed);
        }
        command.push_str(" -- ");
        command.push_str(&crate::experiments::compare::render::shell_words(
            &a.command,
        ));
        // One band for the command's section and its answer row: the other rows' ±5 %.
        let mut exp = a.cmd.config(
            a.command,
            a.within.within,
            crate::stats::Thresholds::YIELD.noise,
        )?;
        exp.counters = a.counters.counters;
        exp.validate()?;
        Some(exp)
    };
    Ok(commands::study::Config {
        study: crate::study::Config {
            quick: a.quick,
            budget,
            db,
            command,
            within: a.within.within,
            compare,
            counters: a.counters.counters,
        },
        out: a.out,
        prometheus: a.prometheus,
    })
}

/// A value one of the parsers in [`values`] refused becomes bad input in the one wording
/// of every refusal, `--option value: what is valid`, with a long value quoted shortened.
/// Everything else (help, version, unknown options, usage) is clap's to print and exit
/// on: help and version with 0, usage errors with 2.
fn from_clap(e: clap::Error) -> anyhow::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // Help and version go to stdout with exit 0, but only once written: clap's own `exit`
    // ignores a failed write, and `--help > /dev/full` exited 0 having written nothing.
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        use std::io::Write;
        let what = if e.kind() == ErrorKind::DisplayHelp {
            "the help"
        } else {
            "the version"
        };
        return match e.print().and_then(|()| std::io::stdout().flush()) {
            Ok(()) => std::process::exit(0),
            Err(io) => anyhow::Error::new(io).context(format!("writing {what} to stdout")),
        };
    }
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let (Some(arg), Some(value)) = (
        text(ContextKind::InvalidArg),
        text(ContextKind::InvalidValue),
    ) else {
        e.exit();
    };
    let why = match (e.kind(), e.get(ContextKind::ValidValue)) {
        (ErrorKind::ValueValidation, _) => {
            std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string())
        }
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(valid))) if !value.is_empty() => {
            format!("valid: {}", valid.join(", "))
        }
        _ => e.exit(),
    };
    // `--threads <N>` → `--threads`.
    let option = arg.split([' ', '=']).next().unwrap_or(&arg);
    let short = crate::quote::shorten(&value);
    let msg = if why.contains(&format!("`{value}`")) || why.contains(&format!("`{short}`")) {
        // The parser's own message quotes the value already: once is enough.
        format!("{option}: {}", why.replace(&value, &short))
    } else {
        format!("{option} {short}: {why}")
    };
    crate::error::BadInput(msg).into()
}

/// True when the error is a closed stdout (`smtlab topo | head`): exit quietly.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}

#[derive(Args, Debug)]
struct LockscanArgs {
    #[command(flatten)]
    root: RootArg,
    /// Lock kind: tas, ttas (the classic test's), backoff, ticket, mcs, mutex, parking_lot,
    /// adaptive; or `all` to compare every lock in one table.
    #[arg(long, default_value = "ttas", value_parser = values::locks)]
    lock: values::List<crate::locks::LockKind>,
    /// Busy work inside the critical section, ns (0 = an empty section).
    #[arg(long, default_value_t = 0, value_name = "NS", allow_hyphen_values = true,
          value_parser = whole::<u64>(0, limits::MAX_OP_NS.into(), limits::WHY_OP_NS))]
    cs_ns: u64,
    /// Bytes each scan thread memsets per pass: a size (1MiB, 2097152, 512K) or `auto`
    /// (4 × the largest L2, at most 64 MiB; 8 MiB when no L2 size is reported).
    #[arg(long, default_value = "1MiB", value_name = "SIZE", allow_hyphen_values = true,
          value_parser = values::bytes_or_auto)]
    scan_bytes: values::Bytes,
    /// CPUs of the lock threads (one thread per CPU).
    #[arg(long, value_name = "LIST")]
    lock_cpus: Option<String>,
    /// CPUs of the scan threads (one thread per CPU).
    #[arg(long, value_name = "LIST")]
    scan_cpus: Option<String>,
    /// Lock-thread affinity mask, as the classic Windows test took it: decimal (`-l7` = CPUs 0-2) or 0x hex.
    #[arg(short = 'l', value_name = "MASK", conflicts_with = "lock_cpus")]
    lock_mask: Option<String>,
    /// Scan-thread affinity mask, as the classic Windows test took it: decimal (`-s8` = CPU 3) or 0x hex.
    #[arg(short = 's', value_name = "MASK", conflicts_with = "scan_cpus")]
    scan_mask: Option<String>,
    /// One scenario per scanner position (each lock thread's sibling; without SMT, each core).
    #[arg(long, conflicts_with_all = ["lock_cpus", "scan_cpus", "lock_mask", "scan_mask"])]
    sweep: bool,
    #[command(flatten)]
    within: WithinArg,
    /// Measured time per run: 10s, 500ms, 2m.
    #[arg(long, short = 'd', default_value = "10s", allow_hyphen_values = true,
          value_parser = values::measured)]
    duration: Duration,
    /// Interval between live rows (the classic test printed every 10 s).
    #[arg(long, default_value = "1s", allow_hyphen_values = true, value_parser = values::measured)]
    interval: Duration,
    /// Discarded warm-up before each run.
    #[arg(long, default_value = "500ms", allow_hyphen_values = true, value_parser = values::warmup)]
    warmup: Duration,
    /// Repetitions of every scenario (interleaved), for medians and confidence intervals.
    #[arg(long, default_value_t = 3, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
    repeat: usize,
    /// Skip the reference run without scan threads.
    #[arg(long)]
    no_baseline: bool,
    /// What the lock records: `counters` (spins, handoffs; the default) or `off` (the bare
    /// algorithm, to see the instrumentation's cost on this machine; no spins or handoffs).
    #[arg(long, default_value = "counters", value_name = "MODE", value_parser = values::lock_stats)]
    lock_stats: crate::locks::StatsMode,
    #[command(flatten)]
    counters: CountersArg,
    /// Print the placements only (works with --sysfs-root).
    #[arg(long)]
    dry_run: bool,
    /// Machine-readable JSON: `{results: [{threads: [{cpu, locked, spins, …}]}], verdict}`.
    #[arg(long)]
    json: bool,
}

/// A byte size as `--scan-bytes` takes it (`1048576`, `512K`, `1MiB`, `2g`; not `auto`),
/// through the same parser as the option (public for the fuzz tests).
pub fn parse_bytes(s: &str) -> std::result::Result<usize, String> {
    match values::bytes_or_auto(s) {
        Ok(values::Bytes::Exactly(n)) => Ok(n),
        Ok(values::Bytes::Auto) => Err(format!("`{}`: not a size", s.trim())),
        Err(e) => Err(format!("`{}`: {e}", s.trim())),
    }
}

fn lockscan_config(a: LockscanArgs) -> Result<commands::lockscan::Config> {
    use crate::cpuset::CpuSet;
    use crate::error::BadInput;
    use crate::experiments::lockscan::{Layout, LockscanConfig};
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    let locks = a.lock.0;
    let scan_bytes = match a.scan_bytes {
        values::Bytes::Auto => {
            crate::experiments::lockscan::auto_scan_bytes(&commands::load_topology(
                &a.root.sysfs_root,
            )?)
            .bytes
        }
        values::Bytes::Exactly(n) => n,
    };
    let list = |s: &Option<String>, m: &Option<String>, what: &str| -> Result<Option<CpuSet>> {
        Ok(match (s, m) {
            (Some(l), _) => {
                Some(CpuSet::parse_user(l).map_err(|e| bad(format!("--{what}-cpus: {e}")))?)
            }
            (None, Some(m)) => {
                Some(CpuSet::parse_mask(m).map_err(|e| bad(format!("-{}: {e}", &what[..1])))?)
            }
            (None, None) => None,
        })
    };
    let stats = a.lock_stats;
    let lock = list(&a.lock_cpus, &a.lock_mask, "lock")?;
    let scan = list(&a.scan_cpus, &a.scan_mask, "scan")?;
    let layout = if a.sweep {
        Layout::Sweep(a.within.within)
    } else if lock.is_none() && scan.is_none() {
        Layout::ScannerOnLowest
    } else {
        let topo = commands::load_topology(&a.root.sysfs_root)?;
        let allowed = topo.allowed();
        // One side given: the other takes the remaining usable CPUs, as the classic test did.
        let (lock, scan) = match (lock, scan) {
            (Some(l), Some(s)) => (l, s),
            (Some(l), None) => {
                let rest = allowed.difference(&l);
                (
                    l,
                    rest.first()
                        .map(|c| CpuSet::from_cpus([c]))
                        .unwrap_or_default(),
                )
            }
            (None, Some(s)) => (allowed.difference(&s), s),
            (None, None) => unreachable!("handled above"),
        };
        Layout::Explicit { lock, scan }
    };
    let spec = crate::engine::RunSpec::new(a.warmup, a.duration)
        .with_interval(a.interval)
        .with_counters(a.counters.counters);
    spec.validate()?;
    Ok(commands::lockscan::Config {
        root: a.root.sysfs_root,
        exp: LockscanConfig::new(layout, locks, spec)?
            .with_cs_ns(a.cs_ns)?
            .with_scan_bytes(scan_bytes)?
            .with_stats(stats)?
            .with_repeat(a.repeat)?
            .with_baseline(!a.no_baseline),
        json: a.json,
        dry_run: a.dry_run,
    })
}

#[derive(Args, Debug)]
struct RwcacheArgs {
    #[command(flatten)]
    root: RootArg,
    /// Schemes: spin, rwspin, rwlock, parking_lot-rw, brlock, seqlock, rcu (a list), or all.
    #[arg(long, default_value = "all", value_parser = values::schemes)]
    scheme: values::List<crate::rwcache::SchemeKind>,
    /// Thread counts to run, e.g. 1,2,4 (default: 1 and every usable CPU).
    #[arg(long, short = 't', value_name = "LIST", allow_hyphen_values = true,
          value_parser = values::counts(1, limits::MAX_THREADS.into(), limits::WHY_THREADS))]
    threads: Option<Counts>,
    /// Where threads run: spread (one per logical CPU, first siblings first), one-per-core,
    /// pairs, cpus:LIST, os, … (see `smtlab plan`).
    #[arg(long, default_value = "spread", value_parser = Request::parse)]
    placement: Request,
    #[command(flatten)]
    within: WithinArg,
    /// Metadata objects in the table.
    #[arg(long, default_value_t = 10_000, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_ENTRIES.into(), limits::WHY_ENTRIES))]
    entries: usize,
    /// Lookups per request (each under its own read-side acquisition).
    #[arg(long, default_value_t = 4, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_LOOKUPS.into(), limits::WHY_LOOKUPS))]
    lookups: usize,
    /// Fraction of requests that replace an entry (0..1).
    #[arg(long, default_value_t = 0.0001, value_name = "FRACTION", allow_hyphen_values = true,
          value_parser = values::fraction)]
    write_ratio: f64,
    /// Busy work per request outside the lock, ns (the rest of a statement).
    #[arg(long, default_value_t = 0, value_name = "NS", allow_hyphen_values = true,
          value_parser = whole::<u64>(0, limits::MAX_OP_NS.into(), limits::WHY_OP_NS))]
    work_ns: u64,
    /// Measured time per run: 2s, 500ms, 1m.
    #[arg(long, short = 'd', default_value = "2s", allow_hyphen_values = true,
          value_parser = values::measured)]
    duration: Duration,
    /// Discarded warm-up before each run.
    #[arg(long, default_value = "300ms", allow_hyphen_values = true, value_parser = values::warmup)]
    warmup: Duration,
    /// Rounds over every (threads, scheme) pair, interleaved, for medians and CIs.
    #[arg(long, default_value_t = 3, value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
    repeat: usize,
    /// Seed of the key sequences.
    #[arg(long, default_value_t = 3, allow_hyphen_values = true,
          value_parser = whole::<u64>(0, u64::MAX.into(), ""))]
    seed: u64,
    #[command(flatten)]
    counters: CountersArg,
    /// Machine-readable JSON: `{results: [{scheme, threads, requests_per_sec, lock_cpu_share,
    /// reads, writes, …}], before_after, read_cost, best}`.
    #[arg(long)]
    json: bool,
    /// Run more than 64 threads per usable CPU (a run that only measures the scheduler
    /// and is slow to stop).
    #[arg(long)]
    force: bool,
}

fn rwcache_config(a: RwcacheArgs) -> Result<commands::rwcache::Config> {
    use crate::experiments::rwcache::{RwcacheConfig, TableSpec};
    let schemes = a.scheme.0;
    let placement = a.placement;
    let threads = match a.threads {
        Some(Counts(v)) => v,
        None => {
            // 1 thread and one per CPU the placement can use (its scope's unit when scoped).
            let topo = commands::load_topology(&a.root.sysfs_root)?;
            let n = if placement.is_scoped() {
                crate::placement::scoped_cores(&topo, a.within.within)
                    .0
                    .cpus
                    .len()
            } else {
                topo.allowed().len()
            }
            .max(1);
            if n == 1 { vec![1] } else { vec![1, n] }
        }
    };
    let spec = crate::engine::RunSpec::new(a.warmup, a.duration).with_counters(a.counters.counters);
    let exp = RwcacheConfig::new(
        schemes,
        threads,
        placement,
        a.within.within,
        TableSpec {
            entries: a.entries,
            lookups: a.lookups,
            write_ratio: a.write_ratio,
            work_ns: a.work_ns,
        },
        spec,
        a.repeat,
        a.seed,
    )?;
    Ok(commands::rwcache::Config {
        force: a.force,
        root: a.root.sysfs_root,
        exp,
        json: a.json,
    })
}

/// `smtlab yield` options.
#[derive(Args, Debug)]
struct YieldArgs {
    #[command(flatten)]
    root: RootArg,
    /// Workloads, in run order: rulers (prime, int, mul, fma, pause, stream, chase, l1, l2,
    /// scan), hot-page/LOCK (the neighbors worker under tas, ttas, backoff, ticket, mcs,
    /// mutex, parking_lot or adaptive), insert (with --db).
    #[arg(long, value_name = "LIST", default_value = crate::experiments::smt_yield::DEFAULT_WORKLOADS)]
    workloads: String,
    /// N: the cores every layout uses (default: every core of the unit --within picks).
    #[arg(long, value_name = "K", allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_YIELD_CORES.into(), limits::WHY_YIELD_CORES))]
    cores: Option<usize>,
    #[command(flatten)]
    within: WithinArg,
    /// Measured time per run: 1s, 500ms, 2m.
    #[arg(long, short = 'd', default_value = "1s", allow_hyphen_values = true,
          value_parser = values::measured)]
    duration: Duration,
    /// Discarded warm-up before each run (ruler buffers are built during it).
    #[arg(long, default_value = "250ms", allow_hyphen_values = true, value_parser = values::warmup)]
    warmup: Duration,
    /// Rounds over every workload and layout (A B C A B C …); 3 or more for confidence intervals.
    #[arg(long, default_value_t = crate::stats::DEFAULT_ROUNDS, value_name = "N",
          allow_hyphen_values = true,
          value_parser = whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
    repeat: usize,
    /// Adds inserts: postgres-managed (a throwaway cluster) or postgres://USER@HOST[:PORT]/DB.
    /// SQLite admits one writer at a time, so it is left out with that reason.
    #[arg(long, value_name = "DB")]
    db: Option<String>,
    /// A file whose first line is the PostgreSQL password (keeps it out of `ps`).
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// Insert durability: full (commit waits for the log flush) or delayed.
    #[arg(long, default_value = "delayed", value_parser = crate::oltp::Durability::parse)]
    durability: crate::oltp::Durability,
    /// Print the three layouts and the workloads only (works with --sysfs-root).
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    counters: CountersArg,
    /// Machine-readable JSON: `{plan, workloads: [{workload, layouts, smt_yield:
    /// {comparison: {estimate, low, high, n, effect}}, shared_core_speed, runs}]}`.
    #[arg(long)]
    json: bool,
}

fn yield_config(a: YieldArgs) -> Result<commands::smt_yield::Config> {
    use crate::experiments::smt_yield::{Config, InsertTarget, Subject};
    values::no_empty_items("--workloads", &a.workloads)?;
    let mut subjects = Subject::parse_list(&a.workloads)?;
    let db = match &a.db {
        Some(d) => {
            use crate::oltp::{DbTarget, KeyMode, Schema, TableSpec};
            if !subjects.contains(&Subject::Insert) {
                subjects.push(Subject::Insert);
            }
            Some(InsertTarget {
                db: DbTarget::parse(d)?.with_password_file(a.db_password_file.clone())?,
                durability: a.durability,
                table: TableSpec {
                    schema: Schema::parse("seed-001")?,
                    key: KeyMode::parse("sequential")?,
                    rows_per_txn: 1,
                },
            })
        }
        None => None,
    };
    let spec = crate::engine::RunSpec::new(a.warmup, a.duration).with_counters(a.counters.counters);
    spec.validate()?;
    let exp = Config {
        subjects,
        cores: a.cores,
        within: a.within.within,
        spec,
        repeat: a.repeat,
        db,
    };
    exp.validate()?;
    Ok(commands::smt_yield::Config {
        root: a.root.sysfs_root,
        exp,
        json: a.json,
        dry_run: a.dry_run,
        exports: Default::default(),
    })
}

/// `smtlab smt` subcommands.
#[derive(Subcommand, Debug)]
enum SmtAction {
    /// smt/control and smt/active, siblings online and offline per core, `nosmt` on the
    /// kernel command line, vulnerabilities whose mitigation mentions SMT, what this process
    /// may change, and any journal waiting for `restore`.
    Status {
        #[command(flatten)]
        root: RootArg,
        /// Machine-readable JSON: `{control, active, cores: [{core, online, offline}],
        /// cmdline_nosmt, vulnerabilities, privileges, journal}`.
        #[arg(long)]
        json: bool,
    },
    /// One thread per core: `off` to smt/control when it switches here, else every sibling
    /// but the first of each core offline through cpuN/online. Journals the state first.
    Off(SmtChangeArgs),
    /// Every sibling online again (smt/control `on`, or each offline CPU's cpuN/online).
    /// Journals the state first.
    On(SmtChangeArgs),
    /// Put back exactly the state the journal recorded before smtlab's first change; a
    /// no-op, said so, when there is no journal.
    Restore {
        /// Print the writes without changing anything.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        root: SmtRootArg,
    },
}

#[derive(Args, Debug)]
struct SmtRootArg {
    /// Read and write sysfs and procfs under this root instead of `/` (a copy of them, to
    /// try the commands); its journal goes to DIR/run/smtlab.
    #[arg(long, value_name = "DIR", default_value = "/")]
    sysfs_root: PathBuf,
}

#[derive(Args, Debug)]
struct SmtChangeArgs {
    /// Print the writes without changing anything.
    #[arg(long)]
    dry_run: bool,
    /// Switch although processes pinned only to CPUs going offline lose their pinning
    /// (the kernel moves them to every CPU and never pins them back).
    #[arg(long)]
    force: bool,
    /// auto (smt/control when it switches here, else cpuN/online), control, or
    /// cpu-online (one CPU at a time; smt/control stays as it is).
    #[arg(long, default_value = "auto", value_name = "METHOD")]
    method: String,
    #[command(flatten)]
    root: SmtRootArg,
    /// Internal, for tests: pause after the journal and after each write.
    #[arg(long, hide = true, default_value = "0s", value_name = "DURATION")]
    step_delay: String,
}

fn smt_config(a: SmtAction) -> Result<commands::smt::Config> {
    use crate::error::BadInput;
    use crate::smt::apply::{Action, Options};
    let change = |action: Action, c: SmtChangeArgs| -> Result<commands::smt::Config> {
        let method = c
            .method
            .parse()
            .map_err(|e: String| BadInput(format!("--method: {e}")))?;
        let step_delay = crate::duration::parse_duration_or_zero(&c.step_delay)
            .map_err(|e| BadInput(format!("--step-delay: {e}")))?;
        Ok(commands::smt::Config::Change {
            root: c.root.sysfs_root,
            action,
            options: Options {
                dry_run: c.dry_run,
                force: c.force,
                method,
                step_delay,
            },
        })
    };
    match a {
        SmtAction::Status { root, json } => Ok(commands::smt::Config::Status {
            root: root.sysfs_root,
            json,
        }),
        SmtAction::Off(c) => change(Action::Off, c),
        SmtAction::On(c) => change(Action::On, c),
        SmtAction::Restore { dry_run, root } => Ok(commands::smt::Config::Change {
            root: root.sysfs_root,
            action: Action::Restore,
            options: Options {
                dry_run,
                force: false,
                method: crate::smt::plan::Method::Auto,
                step_delay: std::time::Duration::ZERO,
            },
        }),
    }
}

/// `smtlab mem` subcommands.
#[derive(Subcommand, Debug)]
enum MemAction {
    /// Overcommit mode, CommitLimit and headroom with what each mode means; MemTotal,
    /// MemAvailable, page cache, dirty data; swap and swappiness; THP; hugetlb pages per
    /// size and node; reclaim and NUMA settings; this process's cgroup limits; the ten
    /// processes the OOM killer would pick first; findings in plain words.
    Report {
        #[command(flatten)]
        root: RootArg,
        /// Machine-readable JSON: `{overcommit: {mode, commit_limit_bytes,
        /// committed_as_bytes, headroom_bytes, …}, memory, swap, thp, hugetlb: {sizes:
        /// [{page_bytes, total, free, reserved, surplus, nodes}]}, reclaim, cgroup, oom:
        /// {top: [{pid, name, oom_score, oom_score_adj, rss_bytes}]}, findings,
        /// not_available}`.
        #[arg(long)]
        json: bool,
    },
    /// Measures what page size does here: dependent-load latency and sequential read
    /// bandwidth vs working set (16 KiB to --max) with 4 KiB pages, THP, and hugetlb 2 MiB /
    /// 1 GiB pages when reserved; first-touch cost per page size; the TLB table from CPUID
    /// and its reach beside where the curves bend.
    Pages {
        /// Largest working set (default 1GiB, less when MemAvailable is smaller); larger
        /// than memory allows is refused.
        #[arg(long, value_name = "SIZE", value_parser = values::bytes_or_auto)]
        max: Option<values::Bytes>,
        /// Samples per working set and page size (after one discarded warm-up).
        #[arg(long, default_value_t = crate::stats::DEFAULT_ROUNDS, value_name = "N",
              allow_hyphen_values = true,
              value_parser = whole::<usize>(1, limits::MAX_REPEAT.into(), limits::WHY_REPEAT))]
        repeat: usize,
        /// As root: add the hugetlb pages the run needs to the pools, and put the pools
        /// back when it ends (also on Ctrl-C; after a SIGKILL the next run does).
        #[arg(long)]
        reserve: bool,
        /// Machine-readable JSON: `{kinds: [{kind, skipped, backing, points:
        /// [{working_set_bytes, latency_ns, bandwidth_bytes_per_sec}], first_touch, bends}],
        /// tlb: {entries: [{level, kind, page_bytes, entries, reach_bytes}]}, departure, …}`.
        #[arg(long)]
        json: bool,
    },
}

fn mem_config(a: MemAction) -> Result<commands::mem::Config> {
    match a {
        MemAction::Report { root, json } => Ok(commands::mem::Config::Report {
            root: root.sysfs_root,
            json,
        }),
        MemAction::Pages {
            max,
            repeat,
            reserve,
            json,
        } => {
            let max = match max {
                None | Some(values::Bytes::Auto) => None,
                Some(values::Bytes::Exactly(n)) => Some(n as u64),
            };
            Ok(commands::mem::Config::Pages {
                max,
                repeat,
                reserve,
                json,
                exports: Default::default(),
            })
        }
    }
}

/// `smtlab top` options.
#[derive(Args, Debug)]
struct TopArgs {
    #[command(flatten)]
    root: RootArg,
    /// One interval, then exit (same as --count 1).
    #[arg(long, conflicts_with = "count")]
    once: bool,
    /// Interval length: 1s, 500ms, 5 (seconds); 100ms to 1h.
    #[arg(
        long,
        short = 'i',
        default_value = "1s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    interval: String,
    /// Intervals to print, then exit (default: until Ctrl-C).
    #[arg(long, short = 'n', value_name = "N", allow_hyphen_values = true,
          value_parser = whole::<u64>(1, u64::MAX.into(), ""))]
    count: Option<u64>,
    /// One JSON object per interval, one per line (NDJSON): `{cpus: [{cpu, core,
    /// busy_share}], cores: [{cpus, busy_min_share, busy_max_share, both_busy_min_share,
    /// traced, used_min_share, …}], machine: {logical_busy_share, headroom_cores_min, …}}`.
    #[arg(long, conflicts_with = "prometheus")]
    json: bool,
    /// The Prometheus text exposition format (gauges named smtlab_*).
    #[arg(long)]
    prometheus: bool,
    /// With --prometheus: replace FILE atomically each interval instead of printing, for
    /// node_exporter's textfile collector (name it *.prom).
    #[arg(long, value_name = "FILE", requires = "prometheus")]
    textfile: Option<PathBuf>,
    /// Also show this process's threads: which CPUs each ran on and which of them shared a
    /// core at the same time (exact with tracefs, else sampled every 25 ms).
    #[arg(long, value_name = "PID", allow_hyphen_values = true,
          value_parser = whole::<u32>(1, u32::MAX.into(), ""))]
    pid: Option<u32>,
    /// The SMT yield for the capacity figures, from a JSON file whose top-level number
    /// `smt_yield` is a core's throughput with all its threads busy over one alone
    /// (default: an assumed 1.25).
    #[arg(long = "yield", value_name = "FILE")]
    yield_file: Option<PathBuf>,
    /// Do not use tracefs, even as root (bounds from /proc/stat only).
    #[arg(long)]
    no_trace: bool,
}

fn top_config(a: TopArgs) -> Result<commands::top::Config> {
    use crate::error::BadInput;
    use std::io::IsTerminal;
    let interval = crate::duration::parse_duration(&a.interval)
        .map_err(|e| BadInput(format!("--interval: {e}")))?;
    if !(limits::MIN_TOP_INTERVAL..=limits::MAX_TOP_INTERVAL).contains(&interval) {
        return Err(BadInput(format!(
            "--interval {}: must be between {} and {} ({})",
            a.interval,
            limits::duration_words(limits::MIN_TOP_INTERVAL),
            limits::duration_words(limits::MAX_TOP_INTERVAL),
            limits::WHY_TOP_INTERVAL
        ))
        .into());
    }
    let count = if a.once { Some(1) } else { a.count };
    if count == Some(0) {
        return Err(BadInput("--count must be at least 1".into()).into());
    }
    let smt_yield = match &a.yield_file {
        None => crate::top::cores::Yield::assumed(),
        Some(p) => {
            let text = crate::fsutil::read_input_text(p, limits::MAX_YIELD_FILE_BYTES)
                .map_err(|e| e.into_error(&format!("--yield {}", p.display())))?;
            crate::top::cores::yield_from_json(p, &text).map_err(BadInput)?
        }
    };
    if let Some(f) = &a.textfile {
        crate::fsutil::check_output("--textfile", f)?;
    }
    let format = if a.json {
        commands::top::Format::Json
    } else if a.prometheus {
        commands::top::Format::Prometheus
    } else {
        commands::top::Format::Text {
            refresh: count != Some(1) && std::io::stdout().is_terminal(),
        }
    };
    Ok(commands::top::Config {
        root: a.root.sysfs_root,
        interval,
        count,
        format,
        textfile: a.textfile,
        pid: a.pid,
        smt_yield,
        trace: !a.no_trace,
        exports: Default::default(),
    })
}
