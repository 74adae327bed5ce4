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
//! - The directory stays behind; the next [`ManagedCluster::start`] removes every
//!   `$TMPDIR/smtlab-pg-PID-N` whose smtlab (PID) is gone ([`remove_stale_clusters`]).
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
    stopped: bool,
}

/// Settings appended to `postgresql.conf`. The cluster is tuned for a short benchmark
/// without changing what is measured: `fsync` and `full_page_writes` stay on (only
/// `synchronous_commit` follows `--durability`), checkpoints are pushed past the run, and
/// autovacuum is off because every run starts from a fresh table.
fn settings(dir: &Path, durability: Durability, max_connections: usize) -> String {
    format!(
        "\n# smtlab managed cluster\n\
         listen_addresses = ''\n\
         unix_socket_directories = '{}'\n\
         port = 5432\n\
         max_connections = {max_connections}\n\
         shared_buffers = 256MB\n\
         max_wal_size = 8GB\n\
         min_wal_size = 1GB\n\
         checkpoint_timeout = 30min\n\
         wal_buffers = 16MB\n\
         synchronous_commit = {}\n\
         fsync = on\n\
         autovacuum = off\n\
         huge_pages = off\n\
         logging_collector = off\n\
         log_min_messages = warning\n",
        dir.display(),
        match durability {
            Durability::Full => "on",
            Durability::Delayed => "off",
        }
    )
}

impl ManagedCluster {
    /// Creates and starts a cluster for up to `clients` connections. Polls the Ctrl-C flag
    /// between steps; on any error the partial cluster is removed before returning.
    pub fn start(durability: Durability, clients: usize) -> Result<Self> {
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
        for d in remove_stale_clusters(&base) {
            eprintln!(
                "removed `{}`: a managed cluster left by an smtlab that was killed before it could clean up",
                d.display()
            );
        }
        let dir = base.join(format!(
            "smtlab-pg-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating the cluster directory `{}`", dir.display()))?;
        // From here on, Drop removes whatever exists.
        let mut c = ManagedCluster {
            bin,
            run_as,
            dir,
            server: None,
            stopped: false,
        };
        std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o700))?;
        if let Some(u) = c.run_as {
            std::os::unix::fs::chown(&c.dir, Some(u.uid), Some(u.gid))
                .with_context(|| format!("giving `{}` to the postgres user", c.dir.display()))?;
        }
        crate::interrupt::check()?;
        let data = c.data_dir();
        let out = c
            .tool("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "--auth=trust", "--encoding=UTF8"])
            .args(["--locale=C", "--no-sync"])
            .output()
            .context("running initdb")?;
        check_tool("initdb", &out, &c.dir, c.run_as.is_some())?;
        crate::interrupt::check()?;
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).context("reading postgresql.conf")?;
        text.push_str(&settings(&c.dir, durability, (clients * 2 + 10).max(100)));
        std::fs::write(&conf, text).context("writing postgresql.conf")?;
        c.start_server(&data)?;
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
    fn start_server(&mut self, data: &Path) -> Result<()> {
        let log_path = self.dir.join("server.log");
        let log = std::fs::File::create(&log_path).context("creating server.log")?;
        if let Some(u) = self.run_as {
            std::os::unix::fs::chown(&log_path, Some(u.uid), Some(u.gid))
                .context("giving server.log to the postgres user")?;
        }
        let mut cmd = self.tool("postgres");
        cmd.arg("-D")
            .arg(data)
            .stdout(log.try_clone().context("server.log")?)
            .stderr(log);
        // SIGKILL of smtlab then still takes the server down (immediate shutdown).
        crate::interrupt::die_with_us(&mut cmd, libc::SIGQUIT);
        self.server = Some(cmd.spawn().context("starting postgres")?);
        let t0 = std::time::Instant::now();
        let pid_file = data.join("postmaster.pid");
        loop {
            if let Some(status) = self
                .server
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.server = None;
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(8).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                bail!(
                    "postgres exited while starting ({status}); server log:\n{}",
                    tail.join("\n")
                );
            }
            if server_ready(&pid_file) {
                return Ok(());
            }
            crate::interrupt::check()?;
            if t0.elapsed() > Duration::from_secs(60) {
                bail!(
                    "postgres did not accept connections within 60 s; see `{}`",
                    log_path.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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
        if let Some(mut child) = self.server.take() {
            stop_child(&mut child);
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
            eprintln!("warning: {e:#}");
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

/// Immediate shutdown of our postmaster: SIGQUIT (it takes its backends down), SIGKILL
/// after 20 s, then reap it.
fn stop_child(child: &mut std::process::Child) {
    let pid = child.id() as i32;
    // SAFETY: kill has no memory-safety preconditions; pid is our unreaped child's, so it
    // cannot have been reused.
    unsafe { libc::kill(pid, libc::SIGQUIT) };
    for _ in 0..400 {
        if child.try_wait().ok().flatten().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether process `pid` exists (a process we may not signal exists too).
fn process_exists(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// Removes every `base/smtlab-pg-PID-N` whose smtlab process PID no longer exists (killed
/// with SIGKILL, so its `Drop` never ran), first stopping a postmaster still running from
/// it (one started by an older smtlab through `pg_ctl`, which outlives us). Returns the
/// directories removed. A directory whose PID exists is left alone even if the number was
/// reused: a live smtlab's cluster is never touched.
pub fn remove_stale_clusters(base: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in rd.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = name
            .strip_prefix("smtlab-pg-")
            .and_then(|r| r.split_once('-'))
            .filter(|(_, n)| n.parse::<u64>().is_ok())
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if process_exists(owner) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = e.path();
        stop_stale_postmaster(&dir);
        if std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

/// SIGQUIT (then SIGKILL) a postmaster still serving `dir`'s data directory, if its pid
/// file names a process whose command line mentions `dir` (so a reused pid is left alone).
fn stop_stale_postmaster(dir: &Path) {
    let Some(pid) = std::fs::read_to_string(dir.join("data/postmaster.pid"))
        .ok()
        .and_then(|s| s.lines().next()?.trim().parse::<i32>().ok())
        .filter(|&p| p > 0)
    else {
        return;
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let needle = dir.as_os_str().as_encoded_bytes();
    if !cmdline.windows(needle.len()).any(|w| w == needle) {
        return;
    }
    for sig in [libc::SIGQUIT, libc::SIGKILL] {
        // SAFETY: kill has no memory-safety preconditions; pid is checked above.
        unsafe { libc::kill(pid, sig) };
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

    #[test]
    fn stale_clusters_of_dead_smtlabs_are_removed_and_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        // A pid that existed and is gone: a child we started and reaped.
        let mut c = Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        let live = std::process::id();
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
