//! A throwaway PostgreSQL cluster: found, `initdb`-ed into a temporary directory, started
//! listening on a Unix socket in that directory only (`listen_addresses = ''`, no TCP),
//! and stopped and removed on every exit path.
//!
//! **Cleanup.** [`ManagedCluster`] stops the postmaster (SIGQUIT, PostgreSQL's immediate
//! shutdown, then SIGKILL if it has not exited within 20 s) and deletes the directory in
//! [`ManagedCluster::stop`] and again, idempotently, in `Drop`. Errors and panics unwind
//! through `Drop`; Ctrl-C only sets [`crate::interrupt`]'s flag, which the run loop and the
//! steps here poll, so an interrupted run also returns through `Drop`. The server and its
//! tools run in their own process group, so a terminal's Ctrl-C reaches smtlab alone and the
//! cluster goes down in order.
//!
//! SIGKILL of smtlab runs no code of ours, so two more guards cover it:
//! - The postmaster is smtlab's own child (not daemonized by `pg_ctl`) with a parent-death
//!   signal of SIGQUIT, so the kernel shuts it down when smtlab dies. The signal follows the
//!   *thread* that started it: start and drop a cluster on a thread that outlives it.
//! - The directory stays behind; the next run that makes a temporary directory (a managed
//!   cluster or a SQLite database) removes every `$TMPDIR/smtlab-pg-PID-N` whose smtlab is
//!   gone ([`reap_stale_temp_dirs`]).
//!
//! **Shared memory.** A postmaster that is killed (SIGKILL after the grace period, or with
//! smtlab) removes none of its shared memory. So the cluster keeps its dynamic shared
//! memory in files of its data directory (`dynamic_shared_memory_type = mmap`; the default,
//! `posix`, puts `PostgreSQL.*` segments in /dev/shm, which outlive it), removed with the
//! directory; its main shared memory is anonymous (`shared_memory_type = mmap`, the
//! default) and dies with the processes. The one System V segment the postmaster still
//! makes (56 bytes, to detect a second postmaster on the same data directory) is removed by
//! [`ManagedCluster::stop`] and the reaper when no process is attached and it is provably
//! this cluster's: its id is the one `postmaster.pid` records and its creator is the
//! postmaster that file names (PostgreSQL docs, "19.4.1 Shared Memory and Semaphores" and
//! "20.4 Resource Consumption").
//!
//! `initdb` is the exception: its bootstrap and single-user backends take the default
//! `dynamic_shared_memory_type` whatever the server is later told, so they make
//! `PostgreSQL.*` segments in /dev/shm (shm_overview(7)), which a backend killed by a
//! signal never removes. While initdb runs, the segments its process group maps (read from
//! `/proc/PID/maps`, proc(5)) are written, name and inode, to [`SHM_JOURNAL`] in the
//! cluster directory; when initdb ends, however it ends, and when a stale cluster directory
//! is reaped, each segment still there with that name and inode is removed — those are
//! provably this cluster's, and a segment of anyone else is never touched. (A stale one is
//! removed only when no process maps it.)
//!
//! **Root.** `initdb` and `postgres` refuse to run as root. When smtlab runs as root, the
//! cluster runs as the `postgres` system user (as the distribution packages create it, or
//! `SMTLAB_PG_USER`): the temporary directory is given to that user, and every PostgreSQL
//! tool is started with its uid/gid (std drops the supplementary groups). That user must
//! be able to reach `$TMPDIR` (the default `/tmp` is world-searchable).
//!
//! **Binaries.** `SMTLAB_PG_BINDIR` if set, else `pg_config --bindir`, else the newest
//! `/usr/lib/postgresql/*/bin`, else `/usr/pgsql-*/bin`.

use super::schema::Durability;
use crate::error::NotPossible;
use crate::tempstate::{OWNER_LOCK, process_exists, try_lock};
use anyhow::{Context, Result, anyhow, bail};
use std::ffi::CString;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The superuser `initdb` creates; clients connect as it over the socket (trust auth).
pub const SUPERUSER: &str = "smtlab";

/// Hint printed when no server binaries exist.
pub const INSTALL_HINT: &str = "install the PostgreSQL server (Debian/Ubuntu: `apt-get install postgresql`; \
     Fedora/RHEL: `dnf install postgresql-server`; macOS: `brew install postgresql`), \
     or point SMTLAB_PG_BINDIR at its bin directory, or pass `--db postgres://…` for a server you run";

/// Where the server binaries are, and their version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    /// Directory holding `initdb` and `postgres`.
    pub bindir: PathBuf,
    /// `postgres --version`, e.g. `postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)`.
    pub version: String,
}

fn has_server(dir: &Path) -> bool {
    ["initdb", "postgres"].iter().all(|b| dir.join(b).is_file())
}

/// Finds the PostgreSQL server binaries; a [`NotPossible`] error with the install hint
/// when there are none.
pub fn find_binaries() -> Result<PgBinaries> {
    let mut tried: Vec<String> = Vec::new();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(d) = std::env::var_os("SMTLAB_PG_BINDIR") {
        candidates.push(PathBuf::from(d));
    } else {
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
            && out.status.success()
        {
            let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !s.is_empty() {
                candidates.push(PathBuf::from(s));
            }
        }
        for pattern_root in ["/usr/lib/postgresql", "/usr/local/lib/postgresql"] {
            candidates.extend(versioned_dirs(Path::new(pattern_root), "", "bin"));
        }
        candidates.extend(versioned_dirs(Path::new("/usr"), "pgsql-", "bin"));
    }
    for dir in candidates {
        if has_server(&dir) {
            let version = Command::new(dir.join("postgres"))
                .arg("--version")
                .output()
                .ok()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            return Ok(PgBinaries {
                bindir: dir,
                version,
            });
        }
        tried.push(dir.display().to_string());
    }
    let tried = if tried.is_empty() {
        String::from("no pg_config on PATH, no /usr/lib/postgresql/*/bin")
    } else {
        format!("looked in {}", tried.join(", "))
    };
    Err(NotPossible(format!(
        "no PostgreSQL server binaries (initdb, postgres) found ({tried}): {INSTALL_HINT}"
    ))
    .into())
}

/// `root/<prefix>N/<sub>` directories, newest version (by number) first.
fn versioned_dirs(root: &Path, prefix: &str, sub: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut v: Vec<(Vec<u64>, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let ver = name.strip_prefix(prefix)?;
            let nums: Vec<u64> = ver
                .split('.')
                .map(|p| p.parse().ok())
                .collect::<Option<_>>()?;
            Some((nums, e.path().join(sub)))
        })
        .collect();
    v.sort_by(|a, b| b.0.cmp(&a.0));
    v.into_iter().map(|(_, p)| p).collect()
}

/// The user the cluster runs as: `None` = this process's user.
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

fn run_as() -> Result<Option<RunAs>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::env::var("SMTLAB_PG_USER").unwrap_or_else(|_| "postgres".into());
    let c = CString::new(name.clone()).context("SMTLAB_PG_USER holds a NUL byte")?;
    // SAFETY: getpwnam returns a pointer into static storage or NULL; we copy the two ids
    // out at once and call it from this thread only.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return Err(NotPossible(format!(
            "running as root, and PostgreSQL refuses to run as root, but there is no `{name}` \
             user to run the managed cluster as: create one (`useradd --system {name}`), set \
             SMTLAB_PG_USER to an unprivileged user, or run smtlab as a regular user"
        ))
        .into());
    }
    // SAFETY: pw is non-null and points to a valid passwd record.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    if uid == 0 {
        bail!("SMTLAB_PG_USER `{name}` is root; PostgreSQL refuses to run as root");
    }
    Ok(Some(RunAs { uid, gid }))
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A running throwaway cluster. Dropping it stops the server and removes its directory.
#[derive(Debug)]
pub struct ManagedCluster {
    bin: PgBinaries,
    run_as: Option<RunAs>,
    /// The temporary directory: `data/`, the socket, `server.log`.
    dir: PathBuf,
    /// The postmaster, our child (None until started, or when it failed to start).
    server: Option<std::process::Child>,
    /// [`OWNER_LOCK`], locked while this cluster exists (None only while being created).
    owner: Option<std::fs::File>,
    /// `max_wal_size`, MiB ([`wal_budget_mb`]).
    max_wal_mb: u64,
    stopped: bool,
}

/// Server settings, passed as `-c name=value` on the postmaster's command line (so no file
/// in the postgres-owned data directory is written by a possibly-root smtlab). The cluster
/// is tuned for a short benchmark without changing what is measured: `fsync` and
/// `full_page_writes` stay on (only `synchronous_commit` follows `--durability`),
/// checkpoints are pushed past the run, and autovacuum is off because every run starts
/// from a fresh table. `max_wal_size_mb` comes from [`wal_budget_mb`].
fn settings(
    dir: &Path,
    durability: Durability,
    max_connections: usize,
    max_wal_size_mb: u64,
) -> Vec<String> {
    [
        ("listen_addresses", String::new()),
        ("unix_socket_directories", dir.display().to_string()),
        ("port", "5432".into()),
        ("max_connections", max_connections.to_string()),
        ("shared_buffers", "256MB".into()),
        ("max_wal_size", format!("{max_wal_size_mb}MB")),
        (
            "min_wal_size",
            format!("{}MB", (max_wal_size_mb / 8).max(32)),
        ),
        ("checkpoint_timeout", "30min".into()),
        ("wal_buffers", "16MB".into()),
        (
            "synchronous_commit",
            match durability {
                Durability::Full => "on",
                Durability::Delayed => "off",
            }
            .into(),
        ),
        ("fsync", "on".into()),
        ("autovacuum", "off".into()),
        ("huge_pages", "off".into()),
        // In the data directory, not /dev/shm: removed with it however the server ends.
        ("dynamic_shared_memory_type", "mmap".into()),
        ("logging_collector", "off".into()),
        ("log_min_messages", "warning".into()),
    ]
    .into_iter()
    .map(|(k, v)| format!("{k}={v}"))
    .collect()
}

/// WAL the cluster may keep before a checkpoint, MiB: 8 GiB keeps checkpoints out of a
/// long run, but `$TMPDIR` is often a tmpfs (RAM), so never more than a quarter of its
/// free space (down to 256 MiB, where checkpoints come every few seconds of inserts).
fn wal_budget_mb(free_bytes: Option<u64>) -> u64 {
    const MAX: u64 = 8 << 10;
    free_bytes.map_or(MAX, |f| ((f / 4) >> 20).clamp(WAL_FLOOR_MB, MAX))
}

/// The least `max_wal_size` [`wal_budget_mb`] gives, MiB.
const WAL_FLOOR_MB: u64 = 256;

/// Free bytes for an unprivileged writer on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we pass; c is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0)
        .then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// Opens `path` for appending without following a symlink: the directory belongs to the
/// postgres user, who must not be able to point a root smtlab at another file.
fn open_nofollow(path: &Path, create: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(create)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The last `n` lines of a server log (empty when unreadable).
fn log_tail(path: &Path, n: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = open_nofollow(path, false) {
        let _ = std::io::Read::read_to_string(&mut f, &mut text);
    }
    let tail: Vec<&str> = text.lines().rev().take(n).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

impl ManagedCluster {
    /// Creates and starts a cluster for up to `clients` connections. Polls the Ctrl-C flag
    /// between steps; on any error the partial cluster is removed before returning.
    pub fn start(durability: Durability, clients: usize) -> Result<Self> {
        Self::start_with(durability, clients, &[])
    }

    /// [`ManagedCluster::start`] with `extra` `name=value` settings after smtlab's own, which
    /// they override (the postmaster takes the last `-c` of a name): e.g.
    /// `listen_addresses=127.0.0.1` and `port=N` for a server reached over TCP, as the
    /// password tests need. The socket then carries that port too.
    pub fn start_with(durability: Durability, clients: usize, extra: &[&str]) -> Result<Self> {
        let bin = find_binaries()?;
        if let Some(v) = major_version(&bin.version).filter(|&v| v < 10) {
            return Err(NotPossible(format!(
                "managed clusters need PostgreSQL 10 or newer (found {v}: {}); pass \
                 `--db postgres://…` for a server you run",
                bin.version
            ))
            .into());
        }
        let run_as = run_as()?;
        let base = std::env::temp_dir();
        for d in reap_stale_temp_dirs(&base) {
            crate::say!(
                "removed `{}`: left by an smtlab that is gone (killed before it could clean up)",
                d.display()
            );
        }
        // A killed smtlab's directory can carry our pid (pids repeat, in containers
        // especially): take the next number.
        let dir = loop {
            let d = base.join(format!(
                "{}-{}-{}",
                crate::tempstate::PG,
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            match std::fs::create_dir(&d) {
                Ok(()) => break d,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!("creating the cluster directory `{}`", d.display())
                    });
                }
            }
        };
        // From here on, Drop removes whatever exists.
        let mut c = ManagedCluster {
            bin,
            run_as,
            dir,
            server: None,
            owner: None,
            max_wal_mb: 0,
            stopped: false,
        };
        let owner = std::fs::File::create(c.dir.join(OWNER_LOCK))
            .with_context(|| format!("creating `{OWNER_LOCK}` in `{}`", c.dir.display()))?;
        if !try_lock(&owner) {
            bail!("`{}` is locked by another process", c.dir.display());
        }
        c.owner = Some(owner);
        std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("restricting `{}` to its owner", c.dir.display()))?;
        // The log exists before the directory changes hands, so it is not the postgres
        // user's to replace.
        drop(open_nofollow(&c.log_path(), true).context("creating server.log")?);
        if let Some(u) = c.run_as {
            for p in [c.log_path(), c.dir.clone()] {
                std::os::unix::fs::chown(&p, Some(u.uid), Some(u.gid))
                    .with_context(|| format!("giving `{}` to the postgres user", p.display()))?;
            }
        }
        crate::interrupt::check()?;
        let data = c.data_dir();
        let mut initdb = c.tool("initdb");
        initdb
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "--auth=trust", "--encoding=UTF8"])
            .args(["--locale=C", "--no-sync"]);
        crate::interrupt::die_with_us(&mut initdb, libc::SIGKILL);
        let journal = c.dir.join(SHM_JOURNAL);
        let out = output_unless_interrupted(&mut initdb, Some(&journal));
        remove_posix_segments(&journal, false);
        let out = out.map_err(|e| match e {
            ToolError::Spawn(e) => c.spawn_error("initdb", e),
            ToolError::Interrupted => crate::error::Interrupted.into(),
        })?;
        check_tool("initdb", &out, &c.dir, c.run_as.is_some())?;
        crate::interrupt::check()?;
        c.max_wal_mb = wal_budget_mb(free_bytes(&c.dir));
        let mut settings = settings(
            &c.dir,
            durability,
            (clients * 2 + 10).max(100),
            c.max_wal_mb,
        );
        settings.extend(extra.iter().map(|s| s.to_string()));
        c.start_server(&data, &settings)?;
        crate::interrupt::check()?;
        Ok(c)
    }

    /// The temporary directory holding the data directory and the socket.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The binaries in use.
    pub fn binaries(&self) -> &PgBinaries {
        &self.bin
    }

    /// What differs from the benchmark settings because of this machine: `max_wal_size`
    /// below 8 GiB on a small `$TMPDIR` (checkpoints then fall inside a long run).
    pub fn constraint(&self) -> Option<String> {
        (self.max_wal_mb < wal_budget_mb(None)).then(|| {
            let why = if self.max_wal_mb <= WAL_FLOOR_MB {
                "the least it is given; $TMPDIR has little free space"
            } else {
                "a quarter of the free space in $TMPDIR"
            };
            format!(
                "max_wal_size {} MiB ({why}): checkpoints may fall inside long runs",
                self.max_wal_mb
            )
        })
    }

    /// A libpq-style connection string for the socket (no password: trust auth).
    pub fn conninfo(&self) -> String {
        format!(
            "host={} port=5432 user={SUPERUSER} dbname=postgres",
            self.dir.display()
        )
    }

    /// The postmaster's pid, from `postmaster.pid`.
    pub fn postmaster_pid(&self) -> Option<i32> {
        let s = std::fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        s.lines().next()?.trim().parse().ok()
    }

    /// Starts the postmaster as our child and waits until it accepts connections (what
    /// `pg_ctl -w start` waits for: `ready` in `postmaster.pid`), up to 60 s.
    fn start_server(&mut self, data: &Path, settings: &[String]) -> Result<()> {
        let log_path = self.log_path();
        let log = open_nofollow(&log_path, false).context("opening server.log")?;
        let mut cmd = self.tool("postgres");
        cmd.arg("-D").arg(data);
        for s in settings {
            cmd.arg("-c").arg(s);
        }
        cmd.stdout(log.try_clone().context("server.log")?)
            .stderr(log);
        // SIGKILL of smtlab then still takes the server down (immediate shutdown).
        crate::interrupt::die_with_us(&mut cmd, libc::SIGQUIT);
        self.server = Some(cmd.spawn().map_err(|e| self.spawn_error("postgres", e))?);
        let t0 = std::time::Instant::now();
        let pid_file = data.join("postmaster.pid");
        loop {
            if let Some(status) = self
                .server
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.server = None;
                bail!(
                    "postgres exited while starting ({status}); server log:\n{}",
                    log_tail(&log_path, 8)
                );
            }
            if server_ready(&pid_file) {
                return Ok(());
            }
            crate::interrupt::check()?;
            if t0.elapsed() > Duration::from_secs(60) {
                // The directory goes with this error, so the log's end goes into it.
                bail!(
                    "postgres did not accept connections within 60 s; server log:\n{}",
                    log_tail(&log_path, 8)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// A failure to start a PostgreSQL tool at all; as another user, most often because
    /// that user cannot reach the directory or the binaries.
    fn spawn_error(&self, name: &str, e: std::io::Error) -> anyhow::Error {
        let mut msg = format!("starting {name}: {e}");
        if self.run_as.is_some() {
            msg.push_str(&format!(
                "\nhint: the cluster runs as the postgres user, which must be able to reach `{}` \
                 and `{}`; set TMPDIR to a directory every user can traverse (e.g. /tmp)",
                self.dir.display(),
                self.bin.bindir.display()
            ));
        }
        anyhow!(msg)
    }

    /// A PostgreSQL tool, run as the cluster's user, in its own process group, with the
    /// temporary directory as working directory.
    fn tool(&self, name: &str) -> Command {
        let mut cmd = Command::new(self.bin.bindir.join(name));
        cmd.current_dir(&self.dir)
            .stdin(Stdio::null())
            .env("LC_ALL", "C")
            .env_remove("PGDATA")
            .process_group(0);
        if let Some(u) = self.run_as {
            cmd.uid(u.uid).gid(u.gid);
        }
        cmd
    }

    /// Stops the server and removes the directory. Idempotent; errors only when the
    /// directory cannot be removed.
    pub fn stop(&mut self) -> Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.stopped = true;
        remove_posix_segments(&self.dir.join(SHM_JOURNAL), false);
        let segment = sysv_segment(&self.data_dir());
        if let Some(mut child) = self.server.take() {
            stop_child(&mut child);
        }
        if let Some(seg) = segment {
            remove_sysv_segment(seg);
        }
        std::fs::remove_dir_all(&self.dir)
            .or_else(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            })
            .with_context(|| format!("removing the cluster directory `{}`", self.dir.display()))
    }
}

impl Drop for ManagedCluster {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            crate::say!("warning: {e:#}");
        }
    }
}

/// Whether the postmaster says it accepts connections: line 8 of `postmaster.pid` is
/// `ready` (PostgreSQL 10+; [`ManagedCluster::start`] refuses older servers). The socket
/// appears before that line, while connections are still refused ("the database system
/// is starting up"), so it is no sign.
fn server_ready(pid_file: &Path) -> bool {
    std::fs::read_to_string(pid_file)
        .is_ok_and(|t| t.lines().nth(7).is_some_and(|s| s.trim() == "ready"))
}

/// The major version in `postgres --version` output (`postgres (PostgreSQL) 15.8 (…)`).
fn major_version(version: &str) -> Option<u32> {
    let v = version.split(')').nth(1)?.split_whitespace().next()?;
    v.split(['.', 'b', 'r']).next()?.parse().ok()
}

/// How long the postmaster gets to finish its immediate shutdown before it and its
/// process group are killed; after a second signal ([`crate::interrupt::hurry`]) the
/// shorter one.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);
const SHUTDOWN_GRACE_HURRY: Duration = Duration::from_secs(1);

/// Immediate shutdown of our postmaster: SIGQUIT (it takes its backends down); SIGKILL to
/// its whole process group (the postmaster leads its own, see `tool`, so backends go
/// too) once [`SHUTDOWN_GRACE`] passed, or [`SHUTDOWN_GRACE_HURRY`] after a second
/// signal; then reap it.
fn stop_child(child: &mut std::process::Child) {
    let pid = child.id() as i32;
    // SAFETY: kill has no memory-safety preconditions; pid is our unreaped child's, so it
    // cannot have been reused.
    unsafe { libc::kill(pid, libc::SIGQUIT) };
    let t0 = std::time::Instant::now();
    loop {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        let grace = if crate::interrupt::hurry() {
            SHUTDOWN_GRACE_HURRY
        } else {
            SHUTDOWN_GRACE
        };
        if t0.elapsed() >= grace {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above; the group is the unreaped postmaster's own.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = child.kill();
    let _ = child.wait();
}

/// Why [`output_unless_interrupted`] gave no output.
enum ToolError {
    Spawn(std::io::Error),
    Interrupted,
}

/// `cmd.output()`, except that a signal kills the tool (and its process group: `tool`
/// makes it a group leader) and returns `Interrupted` within a fraction of a second,
/// instead of waiting seconds for initdb to finish. With `shm_journal`, the POSIX shared
/// memory segments the tool's process group maps are recorded there as they appear.
fn output_unless_interrupted(
    cmd: &mut Command,
    shm_journal: Option<&Path>,
) -> Result<Output, ToolError> {
    use std::io::Read;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(ToolError::Spawn)?;
    let pid = child.id() as i32;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut seen = std::collections::BTreeSet::new();
    let status = loop {
        if let Some(j) = shm_journal {
            record_posix_segments(pid, j, &mut seen);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if crate::interrupt::requested() => {
                if let Some(j) = shm_journal {
                    // Stopped first, so a backend between shm_open and mmap, or one that
                    // started since the last look, is seen with its segment (open or
                    // mapped) before SIGKILL ends it without removing that.
                    // SAFETY: as below.
                    unsafe { libc::kill(-pid, libc::SIGSTOP) };
                    std::thread::sleep(Duration::from_millis(30));
                    record_posix_segments(pid, j, &mut seen);
                }
                // SAFETY: kill has no memory preconditions; the child is not reaped yet,
                // so its pid and process group are still ours.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = child.wait();
                break Err(ToolError::Interrupted);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(ToolError::Spawn(e)),
        }
    };
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    Ok(Output {
        status: status?,
        stdout,
        stderr,
    })
}

/// The file in a cluster directory naming the POSIX shared memory segments its `initdb`
/// made: one `NAME INODE` line each.
pub const SHM_JOURNAL: &str = "posix-shm";

/// The prefix of PostgreSQL's POSIX segments in /dev/shm (`dsm_impl.c`,
/// `PG_DYNSHMEM_PREFIX` … `"PostgreSQL."`).
const PG_SHM_PREFIX: &str = "/dev/shm/PostgreSQL.";

/// The PostgreSQL segments in `/dev/shm` that `maps` (a `/proc/PID/maps`) shows mapped:
/// (name, inode). A line is `address perms offset dev inode path`, and the path of an
/// unlinked file ends in ` (deleted)`.
fn mapped_segments(maps: &str) -> Vec<(String, u64)> {
    maps.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = *f.get(5)?;
            let name = path.strip_prefix("/dev/shm/")?;
            if !path.starts_with(PG_SHM_PREFIX) || f.len() > 6 || name.contains('/') {
                return None;
            }
            Some((name.to_string(), f.get(4)?.parse().ok()?))
        })
        .collect()
}

/// The PostgreSQL segments in /dev/shm process `pid` holds open (`/proc/PID/fd`, proc(5)):
/// one made by shm_open and not mapped yet.
fn open_segments(pid: i32) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let target = std::fs::read_link(e.path()).ok()?;
            let t = target.to_str()?;
            let name = t.strip_prefix("/dev/shm/")?;
            if !t.starts_with(PG_SHM_PREFIX) || name.contains('/') || name.contains(' ') {
                return None;
            }
            Some((name.to_string(), std::fs::metadata(e.path()).ok()?.ino()))
        })
        .collect()
}

/// The processes of process group `pgid` (from `/proc/PID/stat`, field 5).
fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(2)?.parse::<i32>().ok())
                    == Some(pgid)
            })
        })
        .collect()
}

/// Appends to `journal` every PostgreSQL segment a process of group `pgid` maps that is not
/// in `seen` yet.
fn record_posix_segments(
    pgid: i32,
    journal: &Path,
    seen: &mut std::collections::BTreeSet<(String, u64)>,
) {
    use std::io::Write;
    let mut new = String::new();
    for pid in group_members(pgid) {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        for seg in mapped_segments(&maps).into_iter().chain(open_segments(pid)) {
            if !seen.contains(&seg) {
                new.push_str(&format!("{} {}\n", seg.0, seg.1));
                seen.insert(seg);
            }
        }
    }
    if !new.is_empty()
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(journal)
    {
        let _ = f.write_all(new.as_bytes());
    }
}

/// Whether any process maps the file with inode `ino` at `path`.
fn mapped_by_anyone(name: &str, ino: u64) -> bool {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return true;
    };
    rd.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<i32>().is_ok())
        })
        .any(|e| {
            std::fs::read_to_string(e.path().join("maps")).is_ok_and(|m| {
                mapped_segments(&m)
                    .iter()
                    .any(|(n, i)| n == name && *i == ino)
            })
        })
}

/// Removes each segment `journal` names that is still in /dev/shm with the inode recorded
/// (so a later segment given the same name is not taken for it) and the owner of the
/// cluster directory holding the journal (the user initdb ran as); `stale`: only when no
/// process maps it. Returns how many were removed.
pub fn remove_posix_segments(journal: &Path, stale: bool) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Some(owner) = journal
        .parent()
        .and_then(|d| std::fs::symlink_metadata(d).ok())
        .map(|m| m.uid())
    else {
        return 0;
    };
    // Read after a signal too (`read_input` stops at one): this is the cleanup.
    let Ok(text) = crate::fsutil::read_kernel_text(journal) else {
        return 0;
    };
    let mut n = 0;
    for line in text.lines() {
        let Some((name, ino)) = line.split_once(' ') else {
            continue;
        };
        let Ok(ino) = ino.trim().parse::<u64>() else {
            continue;
        };
        if !name.starts_with("PostgreSQL.") || name.contains('/') {
            continue;
        }
        let path = Path::new("/dev/shm").join(name);
        let same = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.is_file() && m.ino() == ino && m.uid() == owner);
        if same && !(stale && mapped_by_anyone(name, ino)) && std::fs::remove_file(&path).is_ok() {
            n += 1;
        }
    }
    n
}

/// Removes every `base/smtlab-pg-PID-N` left by an smtlab that is gone (SIGKILLed, so
/// its `Drop` never ran), first stopping a postmaster still running from it (one started
/// by an older smtlab through `pg_ctl`, which outlived it). Returns the directories
/// removed. Which directories are stale is [`crate::tempstate::reap_stale`]'s rule: the
/// owner lock decides, then the pid.
pub fn remove_stale_clusters(base: &Path) -> Vec<PathBuf> {
    crate::tempstate::reap_stale(base, crate::tempstate::PG, &mut |d| {
        stop_stale_postmaster(d)
    })
}

/// Removes the stale temporary directories of every kind smtlab makes (SQLite databases
/// and managed clusters, [`crate::tempstate::KINDS`]), stopping a postmaster still
/// serving one first. Every run that makes a temporary directory calls it, so a SQLite run
/// removes what a killed PostgreSQL run left, and the other way round.
pub fn reap_stale_temp_dirs(base: &Path) -> Vec<PathBuf> {
    crate::tempstate::reap_every_kind(base, &mut |d| stop_stale_postmaster(d))
}

/// The System V segment a postmaster recorded in `data/postmaster.pid`: line 1 its pid,
/// line 7 the segment's key and id (PostgreSQL's `miscadmin.h`, `LOCK_FILE_LINE_SHMEM_KEY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SysvSegment {
    postmaster: libc::pid_t,
    shmid: libc::c_int,
}

fn sysv_segment(data: &Path) -> Option<SysvSegment> {
    let text = std::fs::read_to_string(data.join("postmaster.pid")).ok()?;
    parse_sysv_segment(&text)
}

fn parse_sysv_segment(pid_file: &str) -> Option<SysvSegment> {
    let mut lines = pid_file.lines();
    let postmaster = lines.next()?.trim().parse().ok().filter(|&p| p > 0)?;
    let shmid = lines
        .nth(5)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
        .filter(|&id| id >= 0)?;
    Some(SysvSegment { postmaster, shmid })
}

/// Removes the segment when it is still the one the postmaster made (its creator pid is
/// that postmaster's); anything else is left alone. Called once the postmaster was
/// stopped, when a backend killed with it may still be exiting and attached: IPC_RMID
/// then marks the segment, and the kernel destroys it when the last process detaches
/// (shmctl(2)), so waiting for that is not needed and removing only unattached segments
/// left one behind.
fn remove_sysv_segment(seg: SysvSegment) {
    // SAFETY: IPC_STAT writes into the zeroed struct we pass.
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the id is only an integer to the kernel.
    if unsafe { libc::shmctl(seg.shmid, libc::IPC_STAT, &mut ds) } != 0 {
        return; // gone already (a clean shutdown removes it)
    }
    if ds.shm_cpid == seg.postmaster {
        // SAFETY: IPC_RMID takes no buffer.
        unsafe { libc::shmctl(seg.shmid, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}

/// SIGQUIT (then SIGKILL) a postmaster still serving `dir`'s data directory, if its pid
/// file names a process whose command line mentions `dir` (so a reused pid is left alone),
/// then removes the System V segment it recorded (gone when its last process detaches).
pub(crate) fn stop_stale_postmaster(dir: &Path) {
    let segment = sysv_segment(&dir.join("data"));
    stop_stale_postmaster_process(dir);
    if let Some(seg) = segment {
        remove_sysv_segment(seg);
    }
    remove_posix_segments(&dir.join(SHM_JOURNAL), true);
}

fn stop_stale_postmaster_process(dir: &Path) {
    let Some(pid) = std::fs::read_to_string(dir.join("data/postmaster.pid"))
        .ok()
        .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok())
        .filter(|&p| p > 0)
    else {
        return;
    };
    // `-D DIR/data` as a whole argument (NUL-separated), so `smtlab-pg-1-1` does not match
    // `smtlab-pg-1-10`.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut needle = dir.join("data").into_os_string().into_encoded_bytes();
    needle.push(0);
    if !cmdline
        .split_inclusive(|&b| b == 0)
        .any(|arg| arg == needle)
    {
        return;
    }
    for sig in [libc::SIGQUIT, libc::SIGKILL] {
        // SAFETY: kill has no memory-safety preconditions; pid is checked above.
        if unsafe { libc::kill(pid, sig) } != 0 {
            return; // gone, or not ours to signal: waiting would not help
        }
        for _ in 0..100 {
            if !process_exists(pid) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn check_tool(name: &str, out: &Output, dir: &Path, as_other_user: bool) -> Result<()> {
    if out.status.success() {
        return Ok(());
    }
    let mut msg = format!(
        "{name} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    if as_other_user {
        msg.push_str(&format!(
            "\nhint: the cluster runs as the postgres user, which must be able to reach `{}`; \
             set TMPDIR to a directory every user can traverse (e.g. /tmp)",
            dir.display()
        ));
    }
    Err(anyhow!(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid that existed and is gone: a child we started and reaped.
    fn dead_pid() -> u32 {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid
    }

    #[test]
    fn stale_clusters_of_dead_smtlabs_are_removed_and_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        let (dead, live) = (dead_pid(), std::process::id());
        let mk = |name: &str| {
            let d = base.path().join(name);
            std::fs::create_dir_all(d.join("data")).unwrap();
            // A pid file naming a process that is not this cluster's postmaster (our own
            // pid, whose command line does not mention the directory): left running.
            std::fs::write(d.join("data/postmaster.pid"), format!("{live}\n")).unwrap();
            d
        };
        let stale = mk(&format!("smtlab-pg-{dead}-0"));
        let ours = mk(&format!("smtlab-pg-{live}-3"));
        let odd = mk("smtlab-pg-notapid-1");
        let other = mk(&format!("pg-{dead}-0"));
        let removed = remove_stale_clusters(base.path());
        assert_eq!(removed, vec![stale.clone()]);
        assert!(!stale.exists());
        for kept in [ours, odd, other] {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert!(process_exists(live as i32), "our own pid was not signalled");
        assert!(remove_stale_clusters(&base.path().join("missing")).is_empty());
    }

    #[test]
    fn the_owner_lock_decides_across_pid_namespaces_and_pid_reuse() {
        let base = tempfile::tempdir().unwrap();
        let (dead, live) = (dead_pid(), std::process::id());
        let mk = |name: &str| {
            let d = base.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            let f = std::fs::File::create(d.join(OWNER_LOCK)).unwrap();
            (d, f)
        };
        // Held, though its pid is not visible here (another pid namespace): in use.
        let (held, f) = mk(&format!("smtlab-pg-{dead}-0"));
        assert!(try_lock(&f));
        // Not held, pid ours (reused), an hour old: stale.
        let (reused, _) = mk(&format!("smtlab-pg-{live}-1"));
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(&reused)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        // Not held, pid alive, just made: a live smtlab between mkdir and flock.
        let (fresh, _) = mk(&format!("smtlab-pg-{live}-2"));
        let removed = remove_stale_clusters(base.path());
        assert_eq!(removed, vec![reused.clone()]);
        assert!(held.exists() && fresh.exists() && !reused.exists());
        drop(f);
        // Released (its owner died): now stale.
        assert_eq!(remove_stale_clusters(base.path()), vec![held]);
    }

    #[test]
    fn posix_segments_are_read_from_maps_lines() {
        let maps = "\
7fd1d404a000-7fd1d414a000 rw-s 00000000 00:1b 494128                     /dev/shm/PostgreSQL.966265910
7fd1d414a000-7fd1d4151000 rw-s 00000000 00:1b 494127                     /dev/shm/PostgreSQL.2475677760 (deleted)
7fd1d414a000-7fd1d4151000 rw-s 00000000 00:1b 494126                     /dev/shm/other
7fd1d414a000-7fd1d4151000 r--p 00000000 08:01 12                         /usr/lib/x.so
7fd1d414a000-7fd1d4151000 rw-p 00000000 00:00 0
";
        assert_eq!(
            mapped_segments(maps),
            [("PostgreSQL.966265910".to_string(), 494128)]
        );
    }

    #[test]
    fn only_the_journals_segments_with_their_inodes_are_removed() {
        use std::os::unix::fs::MetadataExt;
        let Ok(shm) = std::fs::metadata("/dev/shm") else {
            return;
        };
        assert!(shm.is_dir());
        let dir = tempfile::tempdir().unwrap();
        let ours =
            Path::new("/dev/shm").join(format!("PostgreSQL.smtlab-test-{}", std::process::id()));
        let other =
            Path::new("/dev/shm").join(format!("PostgreSQL.smtlab-test-{}-b", std::process::id()));
        std::fs::write(&ours, b"x").unwrap();
        std::fs::write(&other, b"x").unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let name = |p: &Path| p.file_name().unwrap().to_string_lossy().into_owned();
        // `other` is named with a wrong inode: a later segment of the same name.
        let journal = dir.path().join(SHM_JOURNAL);
        std::fs::write(
            &journal,
            format!(
                "{} {}\n{} {}\n../etc/passwd 1\n",
                name(&ours),
                ino(&ours),
                name(&other),
                ino(&other) + 1
            ),
        )
        .unwrap();
        assert_eq!(remove_posix_segments(&journal, true), 1);
        assert!(!ours.exists() && other.exists());
        std::fs::remove_file(&other).unwrap();
    }

    #[test]
    fn settings_go_on_the_command_line_as_name_value_pairs() {
        let s = settings(Path::new("/tmp/x"), Durability::Delayed, 100, 8192);
        assert!(s.contains(&"listen_addresses=".to_string()), "{s:?}");
        assert!(s.contains(&"unix_socket_directories=/tmp/x".to_string()));
        assert!(s.contains(&"synchronous_commit=off".to_string()));
        assert!(s.contains(&"dynamic_shared_memory_type=mmap".to_string()));
        assert!(s.iter().all(|kv| kv.split_once('=').is_some()));
        assert!(s.contains(&"max_wal_size=8192MB".to_string()));
        assert!(s.contains(&"min_wal_size=1024MB".to_string()));
    }

    #[test]
    fn wal_stays_within_a_quarter_of_the_free_space() {
        assert_eq!(wal_budget_mb(None), 8192, "unknown: the benchmark setting");
        assert_eq!(wal_budget_mb(Some(100 << 30)), 8192, "plenty of room");
        assert_eq!(wal_budget_mb(Some(4 << 30)), 1024, "a 4 GiB tmpfs");
        assert_eq!(wal_budget_mb(Some(100 << 20)), 256, "floor");
        assert!(free_bytes(Path::new("/")).is_some_and(|b| b > 0));
    }

    #[test]
    fn readiness_is_read_from_the_pid_files_status_line() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("postmaster.pid");
        assert!(!server_ready(&f), "no file yet");
        let head = "123\n/data\n1700000000\n5432\n/tmp/x\n\n  1234 5678\n";
        // Socket listed, status line not written yet: still refusing connections.
        std::fs::write(&f, head).unwrap();
        assert!(!server_ready(&f));
        std::fs::write(&f, format!("{head}starting\n")).unwrap();
        assert!(!server_ready(&f));
        std::fs::write(&f, format!("{head}ready   \n")).unwrap();
        assert!(server_ready(&f));
    }

    #[test]
    fn the_sysv_segment_is_read_from_the_pid_file() {
        let head = "4321\n/data\n1700000000\n5432\n/tmp/x\n\n  5432001     65572\nready\n";
        assert_eq!(
            parse_sysv_segment(head),
            Some(SysvSegment {
                postmaster: 4321,
                shmid: 65572
            })
        );
        assert_eq!(parse_sysv_segment("4321\n/data\n"), None);
        assert_eq!(parse_sysv_segment("x\n\n\n\n\n\n 1 2\n"), None);
        // A segment that is not the postmaster's (creator pid differs) is left alone:
        // here one this process makes.
        // SAFETY: shmget with IPC_PRIVATE makes a new segment; nothing is attached.
        let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 64, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0);
        remove_sysv_segment(SysvSegment {
            postmaster: 1,
            shmid: id,
        });
        let exists = |id| {
            // SAFETY: IPC_STAT into a zeroed struct.
            let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
            unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) == 0 }
        };
        assert!(exists(id));
        remove_sysv_segment(SysvSegment {
            postmaster: std::process::id() as i32,
            shmid: id,
        });
        assert!(!exists(id));
    }

    /// After a SIGKILL of the postmaster's group, a backend may still be exiting (still
    /// attached) when the cluster is stopped; the segment must go all the same. CI once
    /// found it left: nothing was removed while anything was attached.
    #[test]
    fn a_segment_still_attached_by_an_exiting_backend_is_removed() {
        // SAFETY: shmget with IPC_PRIVATE makes a new segment.
        let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 64, libc::IPC_CREAT | 0o600) };
        assert!(id >= 0);
        // SAFETY: attaching a segment we made, at an address the kernel picks.
        let at = unsafe { libc::shmat(id, std::ptr::null(), 0) };
        assert_ne!(at as isize, -1);
        let at = at as usize;
        // The "backend": detaches 200 ms from now.
        let backend = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            // SAFETY: detaching what this test attached above, once.
            unsafe { libc::shmdt(at as *const libc::c_void) };
        });
        remove_sysv_segment(SysvSegment {
            postmaster: std::process::id() as i32,
            shmid: id,
        });
        backend.join().unwrap();
        // SAFETY: IPC_STAT into a zeroed struct.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        let exists = unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) == 0 };
        if exists {
            // SAFETY: clean up what the test made.
            unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
        }
        assert!(!exists, "segment {id} left after its last backend detached");
    }

    #[test]
    fn major_versions_parse_from_postgres_version_output() {
        for (text, v) in [
            (
                "postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)",
                Some(15),
            ),
            ("postgres (PostgreSQL) 9.6.24", Some(9)),
            ("postgres (PostgreSQL) 17beta1", Some(17)),
            ("postgres (PostgreSQL) 16rc1", Some(16)),
            ("", None),
        ] {
            assert_eq!(major_version(text), v, "{text}");
        }
    }
}
