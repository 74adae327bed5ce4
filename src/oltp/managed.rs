//! A throwaway PostgreSQL cluster: found, `initdb`-ed into a temporary directory, started
//! listening on a Unix socket in that directory only (`listen_addresses = ''`, no TCP),
//! and stopped and removed on every exit path.
//!
//! **Cleanup.** [`ManagedCluster`] stops the postmaster (`pg_ctl stop -m immediate`, then
//! SIGKILL from `postmaster.pid` if that fails) and deletes the directory in
//! [`ManagedCluster::stop`] and again, idempotently, in `Drop`. Errors and panics unwind
//! through `Drop`; Ctrl-C only sets [`crate::interrupt`]'s flag, which the run loop and the
//! steps here poll, so an interrupted run also returns through `Drop`. The server and its
//! tools run in their own process group, so a terminal's Ctrl-C reaches smtlab alone and the
//! cluster goes down in order. Only SIGKILL of smtlab itself leaves a cluster behind
//! (in `$TMPDIR/smtlab-pg-*`).
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
    /// Directory holding `initdb`, `pg_ctl` and `postgres`.
    pub bindir: PathBuf,
    /// `postgres --version`, e.g. `postgres (PostgreSQL) 15.8 (Debian 15.8-0+deb12u1)`.
    pub version: String,
}

fn has_server(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres"]
        .iter()
        .all(|b| dir.join(b).is_file())
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
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found ({tried}): {INSTALL_HINT}"
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
        let run_as = run_as()?;
        let base = std::env::temp_dir();
        let dir = base.join(format!(
            "smtlab-pg-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .with_context(|| format!("creating the cluster directory `{}`", dir.display()))?;
        // From here on, Drop removes whatever exists.
        let c = ManagedCluster {
            bin,
            run_as,
            dir,
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
        let out = c
            .tool("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(c.dir.join("server.log"))
            .args(["-w", "-t", "60", "start"])
            .output()
            .context("running pg_ctl start")?;
        if !out.status.success() {
            let log = std::fs::read_to_string(c.dir.join("server.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(anyhow!(
                "pg_ctl start failed: {}\nserver log:\n{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                tail.join("\n")
            ));
        }
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
        if self.data_dir().join("postmaster.pid").exists() {
            let pid = self.postmaster_pid();
            let ok = self
                .tool("pg_ctl")
                .arg("-D")
                .arg(self.data_dir())
                .args(["-m", "immediate", "-w", "-t", "20", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok && let Some(pid) = pid {
                kill_and_wait(pid);
            }
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

/// SIGKILL the postmaster (its children exit when it dies) and wait up to 5 s for it.
fn kill_and_wait(pid: i32) {
    if pid <= 0 {
        return;
    }
    // SAFETY: kill has no memory-safety preconditions; pid is a positive process id.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    for _ in 0..100 {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
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
