//! The engine-agnostic database layer: open a [`Db`] (SQLite file, PostgreSQL by URL, or a
//! managed cluster), create the insert test's table, open one [`Session`] per client thread, count
//! rows. Every message that names a PostgreSQL connection string goes through
//! [`super::target::redact`], and driver errors are scrubbed of the password.

use super::managed::ManagedCluster;
use super::schema::{Durability, Schema, SplitMix64, TableSpec, key};
use super::target::{DbTarget, redact};
use super::wire::{ParamType, WireConn};
use anyhow::{Context, Result, anyhow, bail};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// A PostgreSQL connection attempt (socket connect, TLS-less startup, authentication)
/// gives up after this long, so a bad address fails well inside 5 s, unless the URL's
/// `connect_timeout` (or `PGCONNECT_TIMEOUT`) says otherwise, as libpq reads them.
pub const PG_CONNECT_TIMEOUT: Duration = Duration::from_millis(4500);

/// The limit of one connection attempt with `config`: its `connect_timeout`, or none
/// (`connect_timeout=0`: as long as it takes), as a duration far beyond any run.
fn connect_limit(config: &postgres::Config) -> Duration {
    config
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(i32::MAX as u64))
}

/// How long an SQLite writer waits for the write lock before `SQLITE_BUSY`. SQLite has
/// one writer at a time; the others sleep in its busy handler (1, 2, 5, 10 … ms), which
/// is how real multi-connection SQLite applications behave.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// Rows per prefill statement: the prefill commits in pieces this big and looks at the
/// signal flag between them.
pub const PREFILL_BATCH_ROWS: u64 = 250_000;

/// Runs `work` while a watcher thread calls `cancel` once a signal arrives (SIGINT,
/// SIGTERM, SIGHUP), so a long statement inside `work` ends early.
fn on_signal<T>(cancel: impl Fn() + Send, work: impl FnOnce() -> T) -> T {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let done = &done;
        s.spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if crate::interrupt::requested() {
                    cancel();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let out = work();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    })
}

/// `Interrupted` when a signal arrived (the error is the cancelled statement's),
/// else `e`.
fn interrupted_or(e: anyhow::Error) -> anyhow::Error {
    if crate::interrupt::requested() {
        crate::error::Interrupted.into()
    } else {
        e
    }
}

/// Whether the server's backend processes are on this host, so their CPUs can be set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BackendPinning {
    /// SQLite runs inside the client threads: pinning them pins the engine.
    Embedded,
    /// Each connection's backend is pinned to its client thread's CPUs.
    Local,
    /// Only the client threads are pinned; the reason why says where the server is.
    ClientsOnly(String),
}

impl std::fmt::Display for BackendPinning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendPinning::Embedded => {
                f.write_str("embedded: the engine runs in the client threads")
            }
            BackendPinning::Local => {
                f.write_str("each backend pinned to its client thread's CPUs, restored afterwards")
            }
            BackendPinning::ClientsOnly(why) => write!(f, "only client threads pinned: {why}"),
        }
    }
}

/// A database ready for runs. Dropping it removes what smtlab created: the temporary
/// SQLite directory or the managed cluster (see [`ManagedCluster`]).
pub struct Db {
    target: DbTarget,
    durability: Durability,
    kind: Kind,
    version: String,
}

enum Kind {
    Sqlite {
        path: PathBuf,
        _tmp: Option<crate::tempstate::OwnedDir>,
    },
    Postgres {
        config: Box<postgres::Config>,
        password: Option<String>,
        pinning: BackendPinning,
    },
    Managed {
        config: Box<postgres::Config>,
        cluster: ManagedCluster,
    },
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Db({})", self.describe())
    }
}

impl Db {
    /// Opens (or, for `postgres-managed`, creates and starts) the database and checks that
    /// a connection works. `clients` sizes the managed cluster's `max_connections`.
    pub fn open(target: &DbTarget, durability: Durability, clients: usize) -> Result<Db> {
        match target {
            DbTarget::Sqlite(path) => {
                let (path, tmp) = match path {
                    Some(p) => (p.clone(), None),
                    None => {
                        let t = crate::tempstate::OwnedDir::create(
                            crate::tempstate::SQLITE,
                            &mut |d| super::managed::stop_stale_postmaster(d),
                        )?;
                        (t.path().join("oltp.db"), Some(t))
                    }
                };
                let conn = sqlite_open(&path, durability)?;
                let mode: String = conn
                    .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                    .with_context(|| format!("setting WAL mode on `{}`", path.display()))?;
                if !mode.eq_ignore_ascii_case("wal") {
                    bail!(
                        "`{}` refused WAL mode (journal_mode={mode})",
                        path.display()
                    );
                }
                Ok(Db {
                    target: target.clone(),
                    durability,
                    kind: Kind::Sqlite { path, _tmp: tmp },
                    version: format!("SQLite {}", rusqlite::version()),
                })
            }
            DbTarget::Postgres { url, password_file } => {
                let mut config = postgres::Config::from_str(url).map_err(|e| {
                    anyhow!(
                        "invalid PostgreSQL connection string `{}`: {}",
                        redact(url),
                        scrub(&e.to_string(), None)
                    )
                })?;
                let password = match config.get_password() {
                    Some(p) => {
                        crate::say!("{}", super::secret::url_password_warning());
                        Some(String::from_utf8_lossy(p).to_string())
                    }
                    None => {
                        let found = super::secret::resolve(
                            &super::secret::endpoint(&config),
                            password_file.as_deref(),
                            &super::secret::Env::from_process(),
                            &mut |w| crate::say!("{w}"),
                        )?;
                        found.map(|(pw, _)| {
                            config.password(pw.as_bytes());
                            pw
                        })
                    }
                };
                let mut config = Box::new(config);
                match target.connect_timeout()? {
                    Some(super::target::ConnectTimeout::After(d)) => {
                        config.connect_timeout(d);
                    }
                    // The driver waits as long as it takes without a timeout.
                    Some(super::target::ConnectTimeout::Never) => {}
                    None => {
                        config.connect_timeout(PG_CONNECT_TIMEOUT);
                    }
                }
                let label = redact(url);
                let mut client = pg_connect(&config, &label, password.as_deref())?;
                let version = pg_version(&mut client)?;
                let pinning = remote_pinning(&config, &mut client);
                Ok(Db {
                    target: target.clone(),
                    durability,
                    kind: Kind::Postgres {
                        config,
                        password,
                        pinning,
                    },
                    version,
                })
            }
            DbTarget::PostgresManaged => {
                let cluster = ManagedCluster::start(durability, clients)?;
                let mut config = Box::new(
                    postgres::Config::from_str(&cluster.conninfo())
                        .context("the managed cluster's connection string")?,
                );
                config.connect_timeout(PG_CONNECT_TIMEOUT);
                let mut client = pg_connect(&config, "the managed cluster", None)?;
                let version = pg_version(&mut client)?;
                Ok(Db {
                    target: target.clone(),
                    durability,
                    kind: Kind::Managed { config, cluster },
                    version,
                })
            }
        }
    }

    /// The target as given (passwords redacted when printed).
    pub fn target(&self) -> &DbTarget {
        &self.target
    }

    /// `SQLite 3.x` or the server's `version()` first words, e.g. `PostgreSQL 15.8`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The durability every session uses.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// One line for humans: what, where, how durable. Never holds a password.
    pub fn describe(&self) -> String {
        let d = match (&self.kind, self.durability) {
            (Kind::Sqlite { .. }, Durability::Full) => "WAL, synchronous=FULL",
            (Kind::Sqlite { .. }, Durability::Delayed) => "WAL, synchronous=OFF",
            (_, Durability::Full) => "synchronous_commit=on",
            (_, Durability::Delayed) => "synchronous_commit=off",
        };
        match &self.kind {
            Kind::Sqlite { path, _tmp } => format!(
                "{} at {}{} ({d})",
                self.version,
                path.display(),
                if _tmp.is_some() { " (temporary)" } else { "" }
            ),
            Kind::Postgres { .. } => format!("{} at {} ({d})", self.version, self.target),
            Kind::Managed { cluster, .. } => format!(
                "{} managed cluster in {} (Unix socket only, {d}{})",
                self.version,
                cluster.dir().display(),
                cluster
                    .constraint()
                    .map(|c| format!(", {c}"))
                    .unwrap_or_default()
            ),
        }
    }

    /// The managed cluster, if this is one.
    pub fn managed(&self) -> Option<&ManagedCluster> {
        match &self.kind {
            Kind::Managed { cluster, .. } => Some(cluster),
            _ => None,
        }
    }

    /// Whether server backends can be pinned from here.
    pub fn backend_pinning(&self) -> BackendPinning {
        match &self.kind {
            Kind::Sqlite { .. } => BackendPinning::Embedded,
            Kind::Managed { .. } => BackendPinning::Local,
            Kind::Postgres { pinning, .. } => pinning.clone(),
        }
    }

    /// A fresh administrative connection (SQLite: a new connection to the file).
    fn admin(&self) -> Result<Admin> {
        match &self.kind {
            Kind::Sqlite { path, .. } => Ok(Admin::Sqlite(sqlite_open(path, self.durability)?)),
            Kind::Postgres {
                config, password, ..
            } => Ok(Admin::Pg(pg_connect(
                config,
                &self.target.to_string(),
                password.as_deref(),
            )?)),
            Kind::Managed { config, .. } => {
                Ok(Admin::Pg(pg_connect(config, "the managed cluster", None)?))
            }
        }
    }

    fn password(&self) -> Option<&str> {
        match &self.kind {
            Kind::Postgres { password, .. } => password.as_deref(),
            _ => None,
        }
    }

    /// Drops and creates the table, then inserts `prefill` random-key rows. Returns the
    /// rows in the table afterwards (random prefill keys may collide and be skipped).
    ///
    /// The prefill runs in batches of [`PREFILL_BATCH_ROWS`], and a signal cancels the
    /// statement running (SQLite's interrupt, PostgreSQL's cancel request): it ends with
    /// `Interrupted` within a fraction of a second, however many rows were asked for.
    pub fn create_table(&self, table: &TableSpec, prefill: u64) -> Result<u64> {
        table.validate()?;
        crate::limits::at_most(
            "--prefill",
            prefill,
            crate::limits::MAX_PREFILL_ROWS,
            "rows inserted before each run",
        )?;
        let pw = self.password();
        let batches = || {
            (0..prefill.div_ceil(PREFILL_BATCH_ROWS))
                .map(move |b| (prefill - b * PREFILL_BATCH_ROWS).min(PREFILL_BATCH_ROWS))
        };
        match self.admin()? {
            Admin::Sqlite(c) => {
                c.execute_batch(&table.sqlite_create())
                    .with_context(|| format!("creating table {}", table.schema.table()))?;
                if prefill > 0 {
                    let handle = c.get_interrupt_handle();
                    on_signal(
                        || handle.interrupt(),
                        || -> Result<()> {
                            for rows in batches() {
                                crate::interrupt::check()?;
                                c.execute_batch(&table.sqlite_prefill(rows))
                                    .map_err(|e| interrupted_or(e.into()))
                                    .context("prefilling the table")?;
                            }
                            Ok(())
                        },
                    )?;
                }
            }
            Admin::Pg(mut c) => {
                c.batch_execute(&table.pg_create())
                    .map_err(|e| pg_err(e, pw))
                    .with_context(|| format!("creating table {}", table.schema.table()))?;
                if prefill > 0 {
                    let token = c.cancel_token();
                    on_signal(
                        || {
                            let _ = token.cancel_query(postgres::NoTls);
                        },
                        || -> Result<()> {
                            for rows in batches() {
                                crate::interrupt::check()?;
                                c.batch_execute(&table.pg_prefill(rows))
                                    .map_err(|e| interrupted_or(pg_err(e, pw)))
                                    .context("prefilling the table")?;
                            }
                            // So the run does not inherit the prefill's dirty pages.
                            c.batch_execute("CHECKPOINT")
                                .map_err(|e| interrupted_or(pg_err(e, pw)))
                                .context("checkpointing after the prefill")?;
                            Ok(())
                        },
                    )?;
                }
            }
        }
        self.count_rows(table)
    }

    /// Rows in the table now.
    pub fn count_rows(&self, table: &TableSpec) -> Result<u64> {
        let sql = table.count_sql();
        let n: i64 = match self.admin()? {
            Admin::Sqlite(c) => c
                .query_row(&sql, [], |r| r.get(0))
                .context("counting rows")?,
            Admin::Pg(mut c) => c
                .query_one(sql.as_str(), &[])
                .map_err(|e| pg_err(e, self.password()))
                .context("counting rows")?
                .get(0),
        };
        Ok(n.max(0) as u64)
    }

    /// Drops the table (used on servers smtlab does not own).
    pub fn drop_table(&self, table: &TableSpec) -> Result<()> {
        let sql = format!("DROP TABLE IF EXISTS {}", table.schema.table());
        match self.admin()? {
            Admin::Sqlite(c) => c.execute_batch(&sql)?,
            Admin::Pg(mut c) => c
                .batch_execute(&sql)
                .map_err(|e| pg_err(e, self.password()))?,
        }
        Ok(())
    }

    /// Opens client thread `thread`'s session: a connection with the durability set and
    /// the INSERT prepared.
    pub fn connect(&self, table: &TableSpec, thread: usize) -> Result<Session> {
        let conn = match &self.kind {
            Kind::Sqlite { path, .. } => {
                let c = sqlite_open(path, self.durability)?;
                let sql = table.sqlite_insert();
                c.set_prepared_statement_cache_capacity(4);
                c.prepare_cached(&sql).context("preparing the INSERT")?;
                SessionConn::Sqlite { conn: c, sql }
            }
            Kind::Postgres { config, .. } | Kind::Managed { config, .. } => {
                let pw = self.password();
                let mut c = WireConn::connect(config, connect_limit(config))
                    .map_err(|e| anyhow!(scrub(&format!("{e:#}"), pw)))
                    .with_context(|| format!("connecting to {}", self.target))?;
                let sc = match self.durability {
                    Durability::Full => "on",
                    Durability::Delayed => "off",
                };
                c.simple(&format!("SET synchronous_commit = {sc}"))?;
                let types = match table.schema {
                    Schema::Seed001 => vec![ParamType::Int8; table.rows_per_txn as usize],
                    Schema::Seed002 => vec![ParamType::Int4],
                };
                c.prepare(&table.pg_insert(), &types)
                    .context("preparing the INSERT")?;
                if table.schema == Schema::Seed002 {
                    // spid = the backend's pid, as SQL Server's @@SPID (the session id) in the
                    // original insert test; fixed per session.
                    let pid = c.backend_pid();
                    c.set_param(0, i64::from(pid));
                }
                SessionConn::Pg(Box::new(c))
            }
        };
        Ok(Session {
            conn,
            table: *table,
            thread,
            next: 0,
            rng: SplitMix64(0x5eed_0000 ^ (thread as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            rows: 0,
        })
    }

    /// Stops and removes what smtlab created (also done on drop; this reports errors).
    pub fn close(mut self) -> Result<()> {
        if let Kind::Managed { cluster, .. } = &mut self.kind {
            cluster.stop()?;
        }
        Ok(())
    }
}

enum Admin {
    Sqlite(rusqlite::Connection),
    Pg(postgres::Client),
}

/// One client thread's connection, with its INSERT prepared and its key sequence.
pub struct Session {
    conn: SessionConn,
    table: TableSpec,
    thread: usize,
    next: u64,
    rng: SplitMix64,
    rows: u64,
}

enum SessionConn {
    Sqlite {
        conn: rusqlite::Connection,
        sql: String,
    },
    Pg(Box<WireConn>),
}

impl Session {
    /// The server process serving this session (PostgreSQL), for pinning.
    pub fn backend_pid(&self) -> Option<i32> {
        match &self.conn {
            SessionConn::Pg(c) => Some(c.backend_pid()),
            SessionConn::Sqlite { .. } => None,
        }
    }

    /// Rows this session has committed.
    pub fn rows_committed(&self) -> u64 {
        self.rows
    }

    /// Inserts and commits one transaction of `rows_per_txn` rows; returns the rows
    /// committed. The hot path: a prepared statement, parameters bound from a reused
    /// buffer, no allocation of ours.
    #[inline]
    pub fn insert_txn(&mut self) -> Result<u64> {
        let k = self.table.rows_per_txn as usize;
        let thread = self.thread;
        match &mut self.conn {
            SessionConn::Sqlite { conn, sql } => {
                let mut st = conn.prepare_cached(sql)?;
                match self.table.schema {
                    Schema::Seed001 => {
                        for j in 0..k {
                            st.raw_bind_parameter(j + 1, key(self.table.key, thread, self.next))?;
                            self.next += 1;
                        }
                    }
                    Schema::Seed002 => {
                        st.raw_bind_parameter(1, thread as i64)?;
                        for j in 0..k {
                            let g = self.rng.uuid_v4();
                            st.raw_bind_parameter(j + 2, &g[..])?;
                            self.next += 1;
                        }
                    }
                }
                let n = st
                    .raw_execute()
                    .with_context(|| format!("thread {thread}: INSERT"))?;
                self.rows += n as u64;
                Ok(n as u64)
            }
            SessionConn::Pg(c) => {
                if self.table.schema == Schema::Seed001 {
                    for j in 0..k {
                        c.set_param(j, key(self.table.key, thread, self.next));
                        self.next += 1;
                    }
                } else {
                    self.next += k as u64;
                }
                let n = c
                    .execute()
                    .with_context(|| format!("thread {thread}: INSERT"))?;
                self.rows += n;
                Ok(n)
            }
        }
    }
}

/// Opens an SQLite connection with the session settings.
fn sqlite_open(path: &Path, durability: Durability) -> Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)
        .with_context(|| format!("opening SQLite database `{}`", path.display()))?;
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Delayed => "OFF",
    };
    conn.execute_batch(&format!("PRAGMA synchronous = {sync};"))?;
    Ok(conn)
}

/// Connects with an overall deadline of the config's connect timeout (covering servers
/// that accept the socket and then say nothing; the driver's own timeout covers only the
/// socket connect), or none; Ctrl-C ends the wait either way. `label` names the server in
/// errors (already redacted); `password` is scrubbed from driver messages.
fn pg_connect(
    config: &postgres::Config,
    label: &str,
    password: Option<&str>,
) -> Result<postgres::Client> {
    let (tx, rx) = std::sync::mpsc::channel();
    let cfg = config.clone();
    std::thread::Builder::new()
        .name("smtlab-pg-connect".into())
        .spawn(move || {
            let _ = tx.send(cfg.connect(postgres::NoTls));
        })
        .context("spawning the connect thread")?;
    let limit = config.get_connect_timeout().copied();
    let deadline = limit.map(|l| std::time::Instant::now() + l + Duration::from_millis(300));
    loop {
        let slice = Duration::from_millis(100);
        match rx.recv_timeout(slice) {
            Ok(Ok(c)) => return Ok(c),
            Ok(Err(e)) => {
                return Err(anyhow!(
                    "cannot connect to PostgreSQL at {label}: {}",
                    scrub(&pg_error_text(&e), password)
                ));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(anyhow!("cannot connect to PostgreSQL at {label}"));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        crate::interrupt::check()?;
        if let (Some(d), Some(l)) = (deadline, limit)
            && std::time::Instant::now() >= d
        {
            return Err(anyhow!(
                "cannot connect to PostgreSQL at {label}: no answer within {:.1} s{}",
                l.as_secs_f64(),
                if l == PG_CONNECT_TIMEOUT {
                    " (a longer wait: `?connect_timeout=SECONDS` in the URL)"
                } else {
                    ""
                }
            ));
        }
    }
}

/// The driver's message plus its cause (tokio-postgres puts the useful part, such as
/// "Connection refused" or the server's FATAL message, in the source).
fn pg_error_text(e: &postgres::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

/// A driver error as an `anyhow::Error`, without the password.
fn pg_err(e: postgres::Error, password: Option<&str>) -> anyhow::Error {
    anyhow!(scrub(&pg_error_text(&e), password))
}

/// Removes any occurrence of the password from a message.
fn scrub(msg: &str, password: Option<&str>) -> String {
    match password {
        Some(p) if p.len() >= 2 => msg.replace(p, "***"),
        _ => msg.to_string(),
    }
}

fn pg_version(client: &mut postgres::Client) -> Result<String> {
    let v: String = client
        .query_one("SELECT version()", &[])
        .map_err(|e| pg_err(e, None))?
        .get(0);
    // "PostgreSQL 15.8 (Debian …) on x86_64-pc-linux-gnu, compiled by …" → "PostgreSQL 15.8"
    Ok(v.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
}

/// Decides whether a server reached by URL runs here: a Unix-socket or loopback host whose
/// `pg_backend_pid()` is a local `postgres` process.
fn remote_pinning(config: &postgres::Config, client: &mut postgres::Client) -> BackendPinning {
    let local_host = config.get_hosts().iter().all(|h| match h {
        postgres::config::Host::Unix(_) => true,
        postgres::config::Host::Tcp(name) => {
            name == "localhost" || name.starts_with("127.") || name == "::1"
        }
    });
    if !local_host {
        return BackendPinning::ClientsOnly(
            "the server is on another host (its CPUs are not ours to pin)".into(),
        );
    }
    let pid: Option<i32> = client
        .query_one("SELECT pg_backend_pid()", &[])
        .ok()
        .map(|r| r.get(0));
    match pid {
        Some(pid) if is_local_postgres(pid) => BackendPinning::Local,
        _ => BackendPinning::ClientsOnly(
            "the server's backends are not visible as local processes (another container or \
             PID namespace)"
                .into(),
        ),
    }
}

/// True when `pid` is a PostgreSQL process on this host.
pub fn is_local_postgres(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().starts_with("postgres"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_password() {
        assert_eq!(
            scrub("auth failed for secret", Some("secret")),
            "auth failed for ***"
        );
        assert_eq!(scrub("x", None), "x");
    }
}
