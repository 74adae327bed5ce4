//! Daemons a test starts: children of the test process, stopped (SIGTERM, then SIGKILL)
//! and reaped when dropped, so every exit path — a failed assertion included — stops them.
//! Each runs in a process group of its own, so a Ctrl-C at the terminal reaches the test
//! (which stops them in order) rather than the daemons, and gets SIGTERM from the kernel
//! should the test process die without cleaning up (prctl(2) `PR_SET_PDEATHSIG`).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A daemon run in the foreground as this process's child.
pub struct Daemon {
    pub name: String,
    child: Option<Child>,
}

impl Daemon {
    /// Starts `cmd` with its output in `log`.
    pub fn start(name: &str, mut cmd: Command, log: &Path) -> Result<Daemon, String> {
        let f = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let f2 = f.try_clone().map_err(|e| e.to_string())?;
        cmd.process_group(0);
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(f)
            .stderr(f2)
            .spawn()
            .map_err(|e| format!("starting {name}: {e}"))?;
        Ok(Daemon {
            name: name.into(),
            child: Some(child),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Still running?
    pub fn alive(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// SIGTERM, up to `grace` to exit, then SIGKILL; reaped either way. Returns how it
    /// ended (`exited`, `killed`).
    pub fn stop(&mut self, grace: Duration) -> Option<&'static str> {
        let mut c = self.child.take()?;
        if matches!(c.try_wait(), Ok(Some(_))) {
            return Some("had exited");
        }
        // SAFETY: kill(2) on this process's own child, not yet reaped.
        unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < grace {
            if matches!(c.try_wait(), Ok(Some(_))) {
                return Some("stopped");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
        Some("killed after the grace period")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(10));
    }
}

/// Whether process `pid` exists (signal 0).
pub fn exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// Processes whose environment holds `needle` (e.g. `SLURM_CONF=/tmp/x/slurm.conf`): what
/// a daemon this test started left behind, found by the one variable only its processes
/// carry.
pub fn with_environment(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push((pid, comm.trim().to_string()));
        }
    }
    out
}

/// Processes whose command line mentions `path` (a test's unique temporary directory):
/// what a tool the test ran (ansible's detached async wrapper and the study under it) may
/// leave running.
pub fn mentioning(path: &Path) -> Vec<u32> {
    let me = std::process::id();
    let needle = path.as_os_str().as_encoded_bytes();
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && cmd.windows(needle.len()).any(|w| w == needle)
        {
            out.push(pid);
        }
    }
    out
}

/// Ends (SIGTERM, then SIGKILL after `grace`) every process [`mentioning`] `path`, and
/// returns their pids.
pub fn end_mentioning(path: &Path, grace: Duration) -> Vec<u32> {
    let pids = mentioning(path);
    for &p in &pids {
        // SAFETY: kill(2) on a process started for this test (its argv names the test's
        // own temporary directory).
        unsafe { libc::kill(p as i32, libc::SIGTERM) };
    }
    let t = Instant::now();
    while t.elapsed() < grace && pids.iter().any(|&p| exists(p)) {
        std::thread::sleep(Duration::from_millis(100));
    }
    for &p in &pids {
        if exists(p) {
            // SAFETY: as above.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
    }
    pids
}

/// Seconds since boot (`/proc/uptime`), the clock `/proc/PID/stat`'s start times count in.
pub fn uptime_s() -> f64 {
    std::fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Processes named `comm` that started after `since_s` seconds since boot, with their state
/// (`Z` for an exited one its parent has not reaped yet): the job steps of a cluster this
/// test started. Only looked at, never signalled.
pub fn named_since(comm: &str, since_s: f64) -> Vec<(u32, char)> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces, so split at the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if &stat[open + 1..close] != comm {
            continue;
        }
        // Field 3 is the state; field 22, starttime, the 20th after the parenthesis.
        let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let state = rest.first().and_then(|s| s.chars().next()).unwrap_or('?');
        let start = rest.get(19).and_then(|v| v.parse::<f64>().ok());
        if start.is_some_and(|t| t / hz >= since_s) {
            out.push((pid, state));
        }
    }
    out
}
