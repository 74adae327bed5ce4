//! The command line. clap's types stay in this file: each subcommand is turned into a typed,
//! validated config from `crate::commands` and handed over.

use crate::commands;
use crate::placement::Request;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "smtlab",
    version,
    about = "Measure how CPU sharing (SMT siblings, locks, noisy neighbours, oversubscription) speeds up or wrecks workloads",
    after_help = "Exit codes: 0 ok, 1 run-time failure of something outside smtlab (or a failed study phase), 2 bad input, 3 not possible on this machine, 130 interrupted."
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
    /// Where the seed layouts (one-per-core, pairs, all, spread, same-core, same-l3) stay:
    /// one `package` (the default; and one core kind on hybrid CPUs), one `l3`, one NUMA
    /// `node`, or the whole `machine`. An SMT comparison that also crosses packages or core
    /// kinds measures those too.
    #[arg(long, value_name = "SCOPE", default_value = "package", value_parser = parse_scope)]
    within: crate::placement::Scope,
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
        #[arg(long, short = 'k')]
        kind: String,
        /// Number of burners.
        #[arg(long, short = 't', default_value_t = 1)]
        threads: usize,
        /// Where burners run: one-per-core, pairs, all, spread, same-core, same-l3,
        /// other-l3, other-package, siblings-of:LIST, cpus:LIST, os (not pinned; the
        /// default). See `smtlab plan`.
        #[arg(long, value_name = "REQUEST", conflicts_with = "cpus")]
        placement: Option<String>,
        #[command(flatten)]
        within: WithinArg,
        /// Pin burners to these CPUs in turn (same as `--placement cpus:LIST`).
        #[arg(long, value_name = "LIST")]
        cpus: Option<String>,
        /// Measurement length: 5, 5s, 500ms, 2m.
        #[arg(long, short = 'd', default_value = "5s")]
        duration: String,
        /// Warm-up before measuring (buffers are built during it); 0 to skip.
        #[arg(long, default_value = "1s")]
        warmup: String,
        /// thread (engine threads of this process) or process (one child process each).
        #[arg(long, default_value = "thread")]
        mode: String,
        /// Scheduling policy of each burner: normal, batch, idle.
        #[arg(long, default_value = "normal")]
        policy: String,
        /// Nice value of each burner (-20..19; negative needs CAP_SYS_NICE).
        #[arg(long, allow_negative_numbers = true)]
        nice: Option<i32>,
        /// Prime bound for `prime`, as sysbench's --cpu-max-prime.
        #[arg(long, default_value_t = crate::burn::DEFAULT_MAX_PRIME)]
        max_prime: u64,
        /// Machine-readable JSON.
        #[arg(long)]
        json: bool,
        /// Internal: run as a process-mode burner child pinned to LIST.
        #[arg(long, hide = true, value_name = "LIST")]
        child_cpus: Option<String>,
        /// Internal: a child runs until SIGTERM.
        #[arg(long, hide = true, requires = "child_cpus")]
        until_stopped: bool,
    },
    /// Singleton inserts from N pinned client threads into SQLite or PostgreSQL (seeds 001,
    /// 002): inserts/s, per-thread elapsed, commit latency, a row-count check.
    Oltp(OltpArgs),
    /// Cache-line ping-pong latency between every pair of CPUs (as core-to-core-latency),
    /// with the ceiling it puts on contended lock handoffs per second.
    C2c {
        /// CPUs to measure (default: every CPU this process may use).
        #[arg(long, value_name = "LIST")]
        cpus: Option<String>,
        /// Samples per pair (one more is taken and discarded).
        #[arg(long, default_value_t = 300)]
        samples: usize,
        /// Round trips timed per sample.
        #[arg(long, default_value_t = 1000)]
        round_trips: usize,
        /// Longest to spend (30s, 2m): fewer samples per pair first (down to 31), then
        /// fewer CPUs (two siblings of one core, then one CPU per core in spread order).
        /// Big machines have thousands of pairs.
        #[arg(long, value_name = "DURATION")]
        budget: Option<String>,
        /// Machine-readable JSON: `{cpus, pairs: [{a, b, proximity, latency_ns}], matrix_ns,
        /// classes, left_out}`.
        #[arg(long)]
        json: bool,
    },
    /// Seed 000: lock threads spin on one global lock while scan threads memset a buffer;
    /// does a lock thread sharing a core with a scanner acquire less?
    Lockscan(LockscanArgs),
    /// Seed 002: workers append to one hot page under a lock while CPU burners step up;
    /// per step ops/s, latency, scheduling evidence and the mechanism behind any loss.
    Neighbors(NeighborsArgs),
    /// Seed 003: a read-mostly metadata cache under spin, rwspin, rwlock, parking_lot-rw,
    /// brlock, seqlock and rcu; requests/s, % CPU in the lock, lock stats, spin → rwspin.
    Rwcache(RwcacheArgs),
    /// The main job: run every experiment this machine supports (topology, c2c, lockscan,
    /// neighbors, oltp, rwcache) within a time budget and write results.json, report.html
    /// and summary.md with a plain-words verdict.
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
        #[arg(long, short = 't')]
        threads: usize,
        #[command(flatten)]
        root: RootArg,
        #[command(flatten)]
        within: WithinArg,
        /// JSON: `{request, threads: [{thread, cpus}], scope, …}`.
        #[arg(long)]
        json: bool,
    },
}

/// Parses the process arguments and runs the command.
pub fn main() -> Result<()> {
    let cli = Cli::parse();
    crate::interrupt::install();
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
            child_cpus,
            until_stopped,
        } => {
            let bad = |e: String| crate::error::BadInput(e);
            let kind: crate::burn::BurnerKind = kind.parse().map_err(|e| bad(format!("{e}")))?;
            let placement = match (placement, cpus) {
                (Some(p), _) => Request::parse(&p)?,
                (None, Some(c)) => Request::parse(&format!("cpus:{c}"))?,
                (None, None) => Request::Os,
            };
            let duration = crate::duration::parse_measured(&duration, "--duration")?;
            let warmup = crate::burn::parse_duration_or_zero(&warmup)
                .map_err(|e| bad(format!("--warmup: {e}")))?;
            let child = match child_cpus {
                Some(c) => Some(commands::burn::Child {
                    cpus: crate::cpuset::CpuSet::parse_user(&c)?,
                    until_stopped,
                }),
                None => None,
            };
            commands::burn::run(
                &commands::burn::Config {
                    spec: crate::burn::BurnSpec {
                        kind,
                        policy: policy.parse().map_err(|e| bad(format!("--policy: {e}")))?,
                        nice,
                        max_prime,
                    },
                    threads,
                    placement,
                    within: within.within,
                    mode: mode.parse().map_err(|e| bad(format!("--mode: {e}")))?,
                    warmup,
                    duration,
                    json,
                    child,
                },
                &mut out,
            )
        }
        Command::Neighbors(args) => commands::neighbors::run(&neighbors_config(args)?, &mut out),
        Command::Lockscan(args) => commands::lockscan::run(&lockscan_config(args)?, &mut out),
        Command::Rwcache(args) => commands::rwcache::run(&rwcache_config(args)?, &mut out),
        Command::Study(args) => commands::study::run(&study_config(args)?, &mut out),
        Command::Report { results, out: dir } => {
            commands::report::run(&commands::report::Config { results, out: dir }, &mut out)
        }
        Command::Oltp(args) => commands::oltp::run(&oltp_config(args)?, &mut out),
        Command::C2c {
            cpus,
            samples,
            round_trips,
            budget,
            json,
        } => commands::c2c::run(
            &commands::c2c::Config {
                cpus: cpus
                    .map(|c| crate::cpuset::CpuSet::parse_user(&c))
                    .transpose()?,
                samples,
                round_trips,
                budget: budget
                    .map(|b| {
                        crate::burn::parse_duration(&b)
                            .map_err(|e| crate::error::BadInput(format!("--budget: {e}")))
                    })
                    .transpose()?,
                json,
            },
            &mut out,
        ),
        Command::Plan {
            request,
            list,
            threads,
            root,
            within,
            json,
        } => {
            let text = match list {
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
    #[arg(long, default_value = "seed-001")]
    schema: String,
    /// sequential (hot last page) or random keys.
    #[arg(long, default_value = "sequential")]
    key: String,
    /// Rows per transaction (one multi-row INSERT per commit).
    #[arg(long, default_value_t = 1, value_name = "N")]
    rows_per_txn: u32,
    /// full (commit waits for the log flush) or delayed (the seeds' Delayed Durability =
    /// FORCED: SQLite synchronous=OFF, PostgreSQL synchronous_commit=off).
    #[arg(long, default_value = "delayed")]
    durability: String,
    /// Random-key rows inserted before each run (seed 001's big table, scaled).
    #[arg(long, default_value_t = 0, value_name = "ROWS")]
    prefill: u64,
    /// Client threads (one connection each).
    #[arg(long, short = 't', default_value_t = 2)]
    threads: usize,
    /// Each thread inserts this many rows (seed 001 style; per-thread elapsed reported).
    #[arg(long, value_name = "R")]
    rows_per_thread: Option<u64>,
    /// Measurement length (10, 10s, 500ms, 2m); with --rows-per-thread, the time limit.
    /// Default 10 s, or 1 h with --rows-per-thread.
    #[arg(long, short = 'd')]
    duration: Option<String>,
    /// Warm-up before measuring. Default 1 s, or 0 with --rows-per-thread.
    #[arg(long)]
    warmup: Option<String>,
    /// Where client threads (and local backends) run: one-per-core, pairs, all, os,
    /// cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os", conflicts_with = "configs")]
    placement: String,
    /// Several layouts, run interleaved; impossible ones are skipped with the reason.
    /// Seed 001's comparison is `one-per-core,pairs,all`: N threads on N cores, N threads
    /// on N/2 cores' sibling pairs, and every sibling of those N cores (2N threads with SMT).
    #[arg(long, value_name = "LIST")]
    configs: Option<String>,
    /// Rounds over the layouts (A B C A B C …).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    #[command(flatten)]
    within: WithinArg,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    root: RootArg,
    /// Machine-readable JSON (`inserts_per_sec`, `rows_verified`, …).
    #[arg(long)]
    json: bool,
}

/// Turns the `oltp` options into a validated config.
fn oltp_config(a: OltpArgs) -> Result<crate::oltp::Config> {
    use crate::oltp::{
        Config, DbTarget, Durability, KeyMode, Schema, StopRule, TableSpec, parse_layouts,
    };
    let stop = match a.rows_per_thread {
        Some(r) => StopRule::RowsPerThread(r),
        None => StopRule::Duration,
    };
    let rows_mode = a.rows_per_thread.is_some();
    let duration = match &a.duration {
        Some(d) => crate::duration::parse_measured(d, "--duration")?,
        None if rows_mode => std::time::Duration::from_secs(3600),
        None => std::time::Duration::from_secs(10),
    };
    let warmup = match &a.warmup {
        Some(w) => crate::duration::parse_duration_or_zero(w)
            .map_err(|e| crate::error::BadInput(format!("--warmup: {e}")))?,
        None if rows_mode => std::time::Duration::ZERO,
        None => std::time::Duration::from_secs(1),
    };
    let layouts = parse_layouts(a.configs.as_deref().unwrap_or(&a.placement))?;
    let cfg = Config {
        db: DbTarget::parse(&a.db)?.with_password_file(a.db_password_file)?,
        table: TableSpec {
            schema: Schema::parse(&a.schema)?,
            key: KeyMode::parse(&a.key)?,
            rows_per_txn: a.rows_per_txn,
        },
        durability: Durability::parse(&a.durability)?,
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
    };
    cfg.validate()?;
    Ok(cfg)
}

#[derive(Args, Debug)]
struct NeighborsArgs {
    #[command(flatten)]
    root: RootArg,
    /// Worker threads (the seed ran 4 insert sessions).
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Worker side: `hot-page` (appends under a library lock) or `oltp` (real inserts).
    #[arg(long, default_value = "hot-page")]
    workload: String,
    /// Lock of the hot page: tas, ttas, backoff, ticket, mcs, mutex, parking_lot, adaptive.
    #[arg(long, default_value = "ticket")]
    lock: String,
    /// Worker placement (default `os`: unpinned, as in the seed); one-per-core, pairs,
    /// spread, cpus:LIST, … (see `smtlab plan`).
    #[arg(long, default_value = "os")]
    placement: String,
    #[command(flatten)]
    within: WithinArg,
    /// Burner counts to step through, e.g. 0,1,2,4 (default: 0 up to usable CPUs + 2).
    #[arg(long, value_name = "LIST")]
    burners: Option<String>,
    /// Burner kind (default `prime`, the seed's isPrimeN).
    #[arg(long, default_value = "prime")]
    burner_kind: String,
    /// os, same-cpus, siblings, other-cores.
    #[arg(long, default_value = "os")]
    burner_placement: String,
    /// thread (in-process) or process (re-executed `smtlab burn`).
    #[arg(long, default_value = "thread")]
    burner_mode: String,
    /// Burner scheduling policy: normal, batch, idle.
    #[arg(long, default_value = "normal")]
    burner_policy: String,
    /// Burner nice value.
    #[arg(long, allow_hyphen_values = true)]
    burner_nice: Option<i32>,
    /// Measured time per step.
    #[arg(long, short = 'd', default_value = "2s")]
    duration: String,
    /// Discarded warm-up per step.
    #[arg(long, default_value = "500ms")]
    warmup: String,
    /// `--workload oltp`: the database (sqlite, sqlite:PATH, postgres://…, postgres-managed).
    #[arg(long, default_value = "sqlite")]
    db: String,
    /// `--workload oltp`: a file whose first line is the PostgreSQL password.
    #[arg(long, value_name = "FILE")]
    db_password_file: Option<PathBuf>,
    /// `--workload oltp`: seed-001 or seed-002.
    #[arg(long, default_value = "seed-002")]
    schema: String,
    /// `--workload oltp`: full or delayed.
    #[arg(long, default_value = "delayed")]
    durability: String,
    /// Print the placements only.
    #[arg(long)]
    dry_run: bool,
    /// JSON: `{steps: [{burners, ops_per_sec, diagnosis, …}]}`.
    #[arg(long)]
    json: bool,
}

fn neighbors_config(a: NeighborsArgs) -> Result<commands::neighbors::Config> {
    use crate::error::BadInput;
    use crate::experiments::neighbors::{BurnerMode, Config};
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    if a.workers == 0 {
        return Err(bad("--workers must be at least 1 (got 0)".into()));
    }
    crate::limits::at_most(
        "--workers",
        a.workers as u64,
        crate::limits::MAX_THREADS,
        "worker threads; more only measure the scheduler",
    )?;
    let burner_steps = match &a.burners {
        Some(l) => {
            let mut v = Vec::new();
            for t in l.split(',') {
                let t = t.trim();
                v.push(t.parse::<usize>().map_err(|_| {
                    bad(format!(
                        "--burners: `{t}` is not a count; expected a list like 0,1,2,4"
                    ))
                })?);
            }
            let max = if a.burner_mode == "process" {
                crate::limits::MAX_PROCESSES
            } else {
                crate::limits::MAX_THREADS
            };
            for &b in &v {
                crate::limits::at_most("--burners", b as u64, max, "burners per step")?;
            }
            v
        }
        None => {
            let topo = commands::load_topology(&a.root.sysfs_root)?;
            (0..=topo.allowed().len() + 2).collect()
        }
    };
    let mut burner = crate::burn::BurnSpec::new(
        a.burner_kind
            .parse()
            .map_err(|e| bad(format!("--burner-kind: {e}")))?,
    );
    burner.policy = a
        .burner_policy
        .parse()
        .map_err(|e| bad(format!("--burner-policy: {e}")))?;
    burner.nice = a.burner_nice;
    burner.validate()?;
    let workload = match a.workload.as_str() {
        "hot-page" | "hotpage" => commands::neighbors::WorkloadChoice::HotPage(
            a.lock.parse().map_err(|e| bad(format!("--lock: {e}")))?,
        ),
        "oltp" => {
            use crate::oltp::{DbTarget, Durability, KeyMode, Schema, StopRule, TableSpec};
            let oc = crate::oltp::Config {
                db: DbTarget::parse(&a.db)?.with_password_file(a.db_password_file.clone())?,
                table: TableSpec {
                    schema: Schema::parse(&a.schema)?,
                    key: KeyMode::parse("sequential")?,
                    rows_per_txn: 1,
                },
                durability: Durability::parse(&a.durability)?,
                prefill: 0,
                threads: a.workers,
                stop: StopRule::Duration,
                duration: std::time::Duration::from_secs(1),
                warmup: std::time::Duration::ZERO,
                layouts: vec![Request::Os],
                within: a.within.within,
                repeat: 1,
                dry_run: a.dry_run,
                sysfs_root: a.root.sysfs_root.clone(),
                json: a.json,
            };
            oc.validate()?;
            commands::neighbors::WorkloadChoice::Oltp(Box::new(oc))
        }
        w => {
            return Err(bad(format!(
                "--workload: unknown `{w}`; valid: hot-page, oltp"
            )));
        }
    };
    let spec = crate::engine::RunSpec::new(
        crate::burn::parse_duration_or_zero(&a.warmup)
            .map_err(|e| bad(format!("--warmup: {e}")))?,
        crate::duration::parse_measured(&a.duration, "--duration")?,
    );
    spec.validate()?;
    let worker_placement = Request::parse(&a.placement)?;
    if worker_placement == Request::All {
        return Err(bad(
            "--placement all runs every sibling of --workers cores, which changes the worker \
             count; give the count with --workers and use one-per-core, pairs or spread"
                .into(),
        ));
    }
    Ok(commands::neighbors::Config {
        root: a.root.sysfs_root,
        exp: Config {
            workers: a.workers,
            worker_placement,
            within: a.within.within,
            burner_steps,
            burner,
            burner_placement: a
                .burner_placement
                .parse()
                .map_err(|e: String| bad(format!("--burner-placement: {e}")))?,
            burner_mode: match a.burner_mode.as_str() {
                "thread" => BurnerMode::Thread,
                "process" => BurnerMode::Process,
                m => {
                    return Err(bad(format!(
                        "--burner-mode: unknown `{m}`; valid: thread, process"
                    )));
                }
            },
            spec,
        },
        workload,
        json: a.json,
        dry_run: a.dry_run,
    })
}

/// `smtlab study` options.
#[derive(Args, Debug)]
struct StudyArgs {
    /// Finish within about a minute: short runs, fewer samples.
    #[arg(long, conflicts_with = "budget")]
    quick: bool,
    /// Time the measurements are sized to fill: 90s, 5m, 20m (default 5m).
    #[arg(long, value_name = "DURATION")]
    budget: Option<String>,
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
}

/// Turns the `study` options into a validated config.
fn study_config(a: StudyArgs) -> Result<commands::study::Config> {
    use crate::error::BadInput;
    let budget = match (&a.budget, a.quick) {
        (_, true) => crate::study::QUICK_BUDGET,
        (Some(b), false) => {
            let d =
                crate::burn::parse_duration(b).map_err(|e| BadInput(format!("--budget: {e}")))?;
            if d < std::time::Duration::from_secs(10) {
                return Err(BadInput(format!(
                    "--budget must be at least 10s (got {b}); use --quick for the shortest study"
                ))
                .into());
            }
            d
        }
        (None, false) => crate::study::DEFAULT_BUDGET,
    };
    let db = crate::oltp::DbTarget::parse(&a.db)?.with_password_file(a.db_password_file.clone())?;
    // The command as typed, minus any password in the database URL.
    let mut command = String::from("smtlab study");
    if a.quick {
        command.push_str(" --quick");
    }
    if let Some(b) = &a.budget {
        command.push_str(&format!(" --budget {b}"));
    }
    command.push_str(&format!(" --out {}", a.out.display()));
    if a.db != "sqlite" {
        command.push_str(&format!(" --db {db}"));
    }
    if a.within.within != crate::placement::Scope::default() {
        command.push_str(&format!(" --within {}", a.within.within));
    }
    Ok(commands::study::Config {
        study: crate::study::Config {
            quick: a.quick,
            budget,
            db,
            command,
            within: a.within.within,
        },
        out: a.out,
    })
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
    /// Lock kind: tas, ttas (the seed's), backoff, ticket, mcs, mutex, parking_lot,
    /// adaptive; or `all` to compare every lock in one table.
    #[arg(long, default_value = "ttas")]
    lock: String,
    /// Busy work inside the critical section, ns (0 = the seed's empty section).
    #[arg(long, default_value_t = 0)]
    cs_ns: u64,
    /// Bytes each scan thread memsets per pass: a size (1MiB, 2097152, 512K) or `auto`
    /// (2 × the core's L2).
    #[arg(long, default_value = "1MiB")]
    scan_bytes: String,
    /// CPUs of the lock threads (one thread per CPU).
    #[arg(long, value_name = "LIST")]
    lock_cpus: Option<String>,
    /// CPUs of the scan threads (one thread per CPU).
    #[arg(long, value_name = "LIST")]
    scan_cpus: Option<String>,
    /// The seed's lock-thread affinity mask: decimal (`-l7` = CPUs 0-2) or 0x hex.
    #[arg(short = 'l', value_name = "MASK", conflicts_with = "lock_cpus")]
    lock_mask: Option<String>,
    /// The seed's scan-thread affinity mask: decimal (`-s8` = CPU 3) or 0x hex.
    #[arg(short = 's', value_name = "MASK", conflicts_with = "scan_cpus")]
    scan_mask: Option<String>,
    /// One scenario per scanner position (each lock thread's sibling; without SMT, each core).
    #[arg(long, conflicts_with_all = ["lock_cpus", "scan_cpus", "lock_mask", "scan_mask"])]
    sweep: bool,
    #[command(flatten)]
    within: WithinArg,
    /// Measured time per run: 10s, 500ms, 2m.
    #[arg(long, short = 'd', default_value = "10s")]
    duration: String,
    /// Interval between live rows (the seed printed every 10 s).
    #[arg(long, default_value = "1s")]
    interval: String,
    /// Discarded warm-up before each run.
    #[arg(long, default_value = "500ms")]
    warmup: String,
    /// Repetitions of every scenario (interleaved), for medians and confidence intervals.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Skip the reference run without scan threads.
    #[arg(long)]
    no_baseline: bool,
    /// What the lock records: `counters` (spins, handoffs; the default) or `off` (the bare
    /// algorithm, to see the instrumentation's cost on this machine; no spins or handoffs).
    #[arg(long, default_value = "counters", value_name = "MODE")]
    lock_stats: String,
    /// Print the placements only (works with --sysfs-root).
    #[arg(long)]
    dry_run: bool,
    /// Machine-readable JSON: `{results: [{threads: [{cpu, locked, spins, …}]}], verdict}`.
    #[arg(long)]
    json: bool,
}

/// A byte size as `--scan-bytes` takes it: `1048576`, `512K`, `1MiB`, `2g` (public for the
/// fuzz tests).
pub fn parse_bytes(s: &str) -> std::result::Result<usize, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let (num, mult) = [
        ("gib", 1usize << 30),
        ("mib", 1 << 20),
        ("kib", 1 << 10),
        ("g", 1 << 30),
        ("m", 1 << 20),
        ("k", 1 << 10),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, m)| lower.strip_suffix(suf).map(|n| (n.trim().to_string(), *m)))
    .unwrap_or((lower.clone(), 1));
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| {
            format!("`{t}` is not a size; expected bytes like 1048576, 512K, 1MiB or `auto`")
        })
}

fn lockscan_config(a: LockscanArgs) -> Result<commands::lockscan::Config> {
    use crate::cpuset::CpuSet;
    use crate::error::BadInput;
    use crate::experiments::lockscan::{Config, Layout};
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    let locks: Vec<crate::locks::LockKind> = if a.lock == "all" {
        crate::locks::LockKind::ALL.to_vec()
    } else {
        a.lock
            .split(',')
            .map(|k| k.trim().parse().map_err(|e| bad(format!("--lock: {e}"))))
            .collect::<Result<_>>()?
    };
    let scan_bytes = if a.scan_bytes.trim() == "auto" {
        let topo = commands::load_topology(&a.root.sysfs_root)?;
        let l2 = topo
            .allowed()
            .first()
            .and_then(|c| topo.cache_of(c, 2))
            .and_then(|c| c.size_bytes)
            .ok_or_else(|| {
                bad("--scan-bytes auto: this machine reports no L2 size; give a size".into())
            })?;
        (2 * l2) as usize
    } else {
        parse_bytes(&a.scan_bytes).map_err(|e| bad(format!("--scan-bytes: {e}")))?
    };
    if scan_bytes == 0 {
        return Err(bad(
            "--scan-bytes must be at least 1 byte (the seed used 1MiB)".into(),
        ));
    }
    crate::limits::at_most(
        "--cs-ns",
        a.cs_ns,
        crate::limits::MAX_OP_NS,
        "busy work per critical section, 1 s",
    )?;
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
    let stats: crate::locks::StatsMode = a.lock_stats.parse().map_err(|_| {
        bad(format!(
            "--lock-stats: unknown mode `{}`; expected off or counters",
            a.lock_stats.trim()
        ))
    })?;
    if !matches!(
        stats,
        crate::locks::StatsMode::Off | crate::locks::StatsMode::Counters
    ) {
        return Err(bad(format!(
            "--lock-stats: `{stats}` times waits that lockscan does not report; expected off or counters"
        )));
    }
    let lock = list(&a.lock_cpus, &a.lock_mask, "lock")?;
    let scan = list(&a.scan_cpus, &a.scan_mask, "scan")?;
    let layout = if a.sweep {
        Layout::Sweep(a.within.within)
    } else if lock.is_none() && scan.is_none() {
        Layout::SeedDefault
    } else {
        let topo = commands::load_topology(&a.root.sysfs_root)?;
        let allowed = topo.allowed();
        // One side given: the other takes the remaining usable CPUs, as in the seed.
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
    let spec = crate::engine::RunSpec::new(
        crate::burn::parse_duration_or_zero(&a.warmup)
            .map_err(|e| bad(format!("--warmup: {e}")))?,
        crate::duration::parse_measured(&a.duration, "--duration")?,
    )
    .with_interval(
        crate::duration::parse_duration(&a.interval)
            .map_err(|e| bad(format!("--interval: {e}")))?,
    );
    spec.validate()?;
    if a.repeat == 0 {
        return Err(bad("--repeat must be at least 1".into()));
    }
    Ok(commands::lockscan::Config {
        root: a.root.sysfs_root,
        exp: Config {
            layout,
            locks,
            cs_ns: a.cs_ns,
            scan_bytes,
            spec,
            repeat: a.repeat,
            baseline: !a.no_baseline,
            stats,
        },
        json: a.json,
        dry_run: a.dry_run,
    })
}

#[derive(Args, Debug)]
struct RwcacheArgs {
    #[command(flatten)]
    root: RootArg,
    /// Schemes: spin, rwspin, rwlock, parking_lot-rw, brlock, seqlock, rcu (a list), or all.
    #[arg(long, default_value = "all")]
    scheme: String,
    /// Thread counts to run, e.g. 1,2,4 (default: 1 and every usable CPU).
    #[arg(long, short = 't', value_name = "LIST")]
    threads: Option<String>,
    /// Where threads run: spread (one per logical CPU, first siblings first), one-per-core,
    /// pairs, cpus:LIST, os, … (see `smtlab plan`).
    #[arg(long, default_value = "spread")]
    placement: String,
    #[command(flatten)]
    within: WithinArg,
    /// Metadata objects in the table.
    #[arg(long, default_value_t = 10_000)]
    entries: usize,
    /// Lookups per request (each under its own read-side acquisition).
    #[arg(long, default_value_t = 4)]
    lookups: usize,
    /// Fraction of requests that replace an entry (0..1).
    #[arg(long, default_value_t = 0.0001)]
    write_ratio: f64,
    /// Busy work per request outside the lock, ns (the rest of a statement).
    #[arg(long, default_value_t = 0)]
    work_ns: u64,
    /// Measured time per run: 2s, 500ms, 1m.
    #[arg(long, short = 'd', default_value = "2s")]
    duration: String,
    /// Discarded warm-up before each run.
    #[arg(long, default_value = "300ms")]
    warmup: String,
    /// Rounds over every (threads, scheme) pair, interleaved, for medians and CIs.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Seed of the key sequences.
    #[arg(long, default_value_t = 3)]
    seed: u64,
    /// Machine-readable JSON: `{results: [{scheme, threads, requests_per_sec, lock_cpu_share,
    /// reads, writes, …}], before_after, read_cost, best}`.
    #[arg(long)]
    json: bool,
}

fn rwcache_config(a: RwcacheArgs) -> Result<commands::rwcache::Config> {
    use crate::error::BadInput;
    use crate::experiments::rwcache::{Config, TableSpec};
    let bad = |m: String| anyhow::Error::new(BadInput(m));
    let schemes =
        crate::rwcache::parse_schemes(&a.scheme).map_err(|e| bad(format!("--scheme: {e}")))?;
    let placement = Request::parse(&a.placement)?;
    let threads = match &a.threads {
        Some(l) => l
            .split(',')
            .map(|t| {
                let t = t.trim();
                t.parse::<usize>().map_err(|_| {
                    bad(format!(
                        "--threads: `{t}` is not a thread count; expected a list like 1,2,4"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?,
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
    let spec = crate::engine::RunSpec::new(
        crate::burn::parse_duration_or_zero(&a.warmup)
            .map_err(|e| bad(format!("--warmup: {e}")))?,
        crate::duration::parse_measured(&a.duration, "--duration")?,
    );
    let exp = Config {
        schemes,
        threads,
        placement,
        within: a.within.within,
        table: TableSpec {
            entries: a.entries,
            lookups: a.lookups,
            write_ratio: a.write_ratio,
            work_ns: a.work_ns,
        },
        spec,
        repeat: a.repeat,
        seed: a.seed,
    };
    exp.validate()?;
    Ok(commands::rwcache::Config {
        root: a.root.sysfs_root,
        exp,
        json: a.json,
    })
}
