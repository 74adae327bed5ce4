//! Burners as child processes: `smtlab burn` re-executed once per burner, each pinned by
//! its own engine run, reporting progress back as JSON lines on a pipe.
//!
//! A child never outlives smtlab:
//! - `prctl(PR_SET_PDEATHSIG, SIGKILL)` in the child before `exec`, then a `getppid()`
//!   check closes the race where the parent died before the `prctl`. The death signal
//!   follows the *thread* that forked, so spawn from a thread that outlives the burners
//!   (the main thread, or the thread that also stops them).
//! - [`ProcessBurners`] kills (SIGKILL) and reaps every child it still owns when dropped:
//!   on errors, panics and early returns.
//! - [`ProcessBurners::wait`] polls the Ctrl-C flag and kills the children when it is set.
//!
//! Children start blocked: their stdin is a pipe whose write end only the parent holds,
//! and a child reads it to end-of-file before it builds or burns anything
//! ([`wait_for_siblings`]). The parent closes it once every child is started, so hundreds
//! of spinning children never slow the spawning of the rest, and Ctrl-C between two
//! spawns kills the few started so far at once. Crowded sets run their burners at a
//! raised nice value (see [`crate::engine::RunResult::nice_offset`]), passed as
//! `--nice`, so the parent and each child's coordinator keep time.
//!
//! Protocol (child → parent, one JSON object per line on stdout, see [`ChildLine`]): an
//! `interval` line per 100 ms of measurement with the ops done in it, and a `done` line
//! with the child's [`BurnerResult`] when its run ends (duration over, or SIGTERM).

use super::model::BurnerResult;
use super::workload::BurnSpec;
use crate::cpuset::CpuSet;
use crate::duration::format_duration;
use crate::error::Interrupted;
use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a child reports progress.
pub const CHILD_INTERVAL: Duration = Duration::from_millis(100);

/// How long [`ProcessBurners::stop`] waits for children to report after SIGTERM.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// One line a child writes on stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum ChildLine {
    /// A measurement interval ended: `ops` done in it, over `elapsed_ns`.
    Interval { ops: u64, elapsed_ns: u64 },
    /// The run ended.
    Done {
        result: BurnerResult,
        interrupted: bool,
    },
}

/// Live progress of one child burner, summed over the `interval` lines received so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Ops in the measurement so far.
    pub ops: u64,
    /// Measurement time those ops took, ns.
    pub measured_ns: u64,
}

#[derive(Default)]
struct Shared {
    ops: AtomicU64,
    measured_ns: AtomicU64,
    done: Mutex<Option<(BurnerResult, bool)>>,
    garbage: Mutex<Option<String>>,
}

struct ChildBurner {
    child: Option<Child>,
    pid: i32,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
}

/// Options of a child set beyond the [`BurnSpec`].
#[derive(Debug, Clone)]
pub struct ProcessOptions {
    /// The smtlab binary to re-execute; None = `std::env::current_exe()`. Tests of the
    /// library (whose current exe is the test harness) must point this at smtlab.
    pub exe: Option<PathBuf>,
    /// Warm-up each child runs before measuring.
    pub warmup: Duration,
    /// Measurement length; None = until [`ProcessBurners::stop`].
    pub duration: Option<Duration>,
}

/// A set of burner child processes, killed and reaped on drop.
pub struct ProcessBurners {
    children: Vec<ChildBurner>,
    nice_offset: i32,
}

impl ProcessBurners {
    /// Starts one child per entry of `cpus`, child `i` pinned to `cpus[i]` (a whole set is
    /// allowed, e.g. every allowed CPU for `os` placement). Returns once all are spawned;
    /// they build their buffers and warm up on their own. Ctrl-C while spawning kills the
    /// children started so far and returns `Interrupted`.
    pub fn spawn(spec: &BurnSpec, cpus: &[CpuSet], opts: &ProcessOptions) -> Result<Self> {
        // The children open counters of their own; holding the kernel's perf static keys
        // here keeps their openings from switching them (see `counters::prepare`).
        crate::counters::prepare(spec.counters());
        // Here, so that a refused nice value is this process's exit code, not a child's.
        super::workload::preflight(spec.policy(), spec.nice())?;
        let nice_offset = crate::engine::nice_offset_for(cpus, spec.nice());
        let mut spec = spec.clone();
        if nice_offset > 0 {
            let base = spec.nice().unwrap_or_else(crate::engine::current_nice);
            spec = spec.with_nice(Some((base + nice_offset).min(19)))?;
        }
        let spec = &spec;
        let exe = match &opts.exe {
            Some(p) => p.clone(),
            // /proc/self/exe still opens the running binary after it was replaced on disk
            // (a rebuild mid-run), where the path from current_exe() would not.
            None if Path::new("/proc/self/exe").exists() => PathBuf::from("/proc/self/exe"),
            None => std::env::current_exe().context("finding the smtlab binary to re-execute")?,
        };
        let mut set = ProcessBurners {
            children: Vec::with_capacity(cpus.len()),
            nice_offset,
        };
        let (gate_read, gate_write) = gate_pipe().context("creating the burners' start pipe")?;
        for (i, c) in cpus.iter().enumerate() {
            // On error or Ctrl-C `set` drops here and kills the children already started.
            crate::interrupt::check()?;
            let stdin = gate_read
                .try_clone()
                .context("duplicating the burners' start pipe")?;
            let child = spawn_child(&exe, spec, c, opts, stdin)
                .with_context(|| format!("starting burner process {i} ({})", exe.display()))?;
            set.children.push(child);
        }
        // Every child holds its own read end: closing ours and the only write end lets
        // them all go (end of file).
        drop(gate_read);
        drop(gate_write);
        Ok(set)
    }

    /// How much the children's nice value was raised because the set is crowded (0: not).
    pub fn nice_offset(&self) -> i32 {
        self.nice_offset
    }

    /// Process ids of the children, in burner order.
    pub fn pids(&self) -> Vec<i32> {
        self.children.iter().map(|c| c.pid).collect()
    }

    /// Number of children.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    /// Each child's measured progress so far (updated every [`CHILD_INTERVAL`]).
    pub fn progress(&self) -> Vec<Progress> {
        self.children
            .iter()
            .map(|c| Progress {
                ops: c.shared.ops.load(Ordering::Relaxed),
                measured_ns: c.shared.measured_ns.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Waits for children running a fixed duration to finish (at most `timeout`), polling
    /// the Ctrl-C flag. On Ctrl-C the children are killed and `Interrupted` is returned; on
    /// timeout they are killed and an error names the stragglers.
    pub fn wait(mut self, timeout: Duration) -> Result<Vec<BurnerResult>> {
        let deadline = Instant::now() + timeout;
        loop {
            if crate::interrupt::requested() {
                self.kill_all();
                return Err(Interrupted.into());
            }
            if self.try_reap_all()? {
                return self.collect();
            }
            if Instant::now() >= deadline {
                let left: Vec<String> = self
                    .children
                    .iter()
                    .filter(|c| c.child.is_some())
                    .map(|c| c.pid.to_string())
                    .collect();
                self.kill_all();
                return Err(anyhow!(
                    "burner processes {} did not finish within {}; killed",
                    left.join(", "),
                    format_duration(timeout)
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Asks every child to end (SIGTERM: its engine stops and it reports), waits up to
    /// [`STOP_GRACE`], then kills any straggler. Returns each child's final result. After
    /// a second Ctrl-C ([`crate::interrupt::hurry`]) it kills them without waiting.
    pub fn stop(mut self) -> Result<Vec<BurnerResult>> {
        for c in &self.children {
            if c.child.is_some() {
                // SAFETY: kill has no memory preconditions; the pid is our unreaped child.
                unsafe { libc::kill(c.pid, libc::SIGTERM) };
            }
        }
        let deadline = Instant::now() + STOP_GRACE;
        while !crate::interrupt::hurry() && !self.try_reap_all()? && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill_all();
        self.collect()
    }

    /// True once every child has exited (and was reaped).
    fn try_reap_all(&mut self) -> Result<bool> {
        let mut all = true;
        for c in &mut self.children {
            if let Some(ch) = c.child.as_mut() {
                match ch.try_wait() {
                    Ok(Some(status)) => {
                        c.child = None;
                        if !status.success() {
                            // Its own error went to our stderr; `collect` reports it.
                            c.shared
                                .garbage
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .get_or_insert_with(|| format!("exited with {status}"));
                        }
                    }
                    Ok(None) => all = false,
                    Err(e) => return Err(e).context("waiting for a burner process"),
                }
            }
        }
        Ok(all)
    }

    /// SIGKILLs every child still running, then reaps them all (signalling all first:
    /// waiting for each before killing the next takes a scheduler round per child when
    /// hundreds spin).
    fn kill_all(&mut self) {
        for c in &mut self.children {
            if let Some(ch) = c.child.as_mut() {
                let _ = ch.kill();
            }
        }
        for c in &mut self.children {
            if let Some(mut ch) = c.child.take() {
                let _ = ch.wait();
            }
        }
    }

    /// Joins the readers (children are gone, so their pipes hit EOF) and gathers results.
    fn collect(&mut self) -> Result<Vec<BurnerResult>> {
        let mut out = Vec::with_capacity(self.children.len());
        for (i, c) in self.children.iter_mut().enumerate() {
            if let Some(h) = c.reader.take() {
                let _ = h.join();
            }
            let done = c
                .shared
                .done
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            match done {
                Some((mut r, _)) => {
                    r.burner = i;
                    out.push(r);
                }
                None => {
                    let why = c
                        .shared
                        .garbage
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clone()
                        .unwrap_or_else(|| "no result line".into());
                    return Err(anyhow!(
                        "burner process {i} (pid {}) reported no result: {why}",
                        c.pid
                    ));
                }
            }
        }
        Ok(out)
    }
}

impl Drop for ProcessBurners {
    fn drop(&mut self) {
        self.kill_all();
        for c in &mut self.children {
            if let Some(h) = c.reader.take() {
                let _ = h.join();
            }
        }
    }
}

/// A pipe, both ends close-on-exec (the read end a child gets as stdin is duplicated
/// onto fd 0 without the flag; the write end never reaches a child's program).
fn gate_pipe() -> std::io::Result<(std::fs::File, std::fs::File)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid out-array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 returned two new descriptors that nothing else owns.
    Ok(unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    })
}

/// Child side of the start gate: when stdin is a pipe (a parent's start gate), blocks
/// until it reaches end of file, i.e. until the parent has started every sibling (or
/// died). Returns at once for any other stdin.
pub fn wait_for_siblings() {
    use std::io::Read;
    // SAFETY: all-zero is a valid `stat`; fstat writes into it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd 0 and a valid out-pointer.
    if unsafe { libc::fstat(0, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return;
    }
    let mut buf = [0u8; 64];
    let mut stdin = std::io::stdin().lock();
    loop {
        match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

fn spawn_child(
    exe: &Path,
    spec: &BurnSpec,
    cpus: &CpuSet,
    opts: &ProcessOptions,
    gate: std::fs::File,
) -> Result<ChildBurner> {
    let mut cmd = Command::new(exe);
    cmd.arg("burn")
        .args(["--kind", &spec.kind().to_string()])
        .args(["--threads", "1", "--mode", "thread"])
        .args(["--policy", &spec.policy().to_string()])
        .args(["--max-prime", &spec.max_prime().to_string()])
        .args(["--child-cpus", &cpus.to_string()])
        .args(["--counters", spec.counters().name()]);
    if let Some(b) = spec.max_buffer() {
        cmd.args(["--max-buffer", &b.to_string()]);
    }
    if opts.warmup.is_zero() {
        cmd.args(["--warmup", "0"]);
    } else {
        cmd.args(["--warmup", &format_duration(opts.warmup)]);
    }
    match opts.duration {
        Some(d) => cmd.args(["--duration", &format_duration(d)]),
        None => cmd.arg("--until-stopped"),
    };
    if let Some(n) = spec.nice() {
        cmd.arg(format!("--nice={n}"));
    }
    cmd.stdin(Stdio::from(gate))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    crate::interrupt::die_with_us(&mut cmd, libc::SIGKILL);
    let mut child = cmd.spawn()?;
    let pid = child.id() as i32;
    let stdout = child.stdout.take().expect("stdout is piped");
    let shared = Arc::new(Shared::default());
    let sh = Arc::clone(&shared);
    let reader = std::thread::Builder::new()
        .name(format!("smtlab-burn-rd{pid}"))
        .spawn(move || read_lines(stdout, &sh));
    let reader = match reader {
        Ok(h) => h,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e).context("starting the burner's reader thread");
        }
    };
    Ok(ChildBurner {
        child: Some(child),
        pid,
        shared,
        reader: Some(reader),
    })
}

fn read_lines(stdout: std::process::ChildStdout, sh: &Shared) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<ChildLine>(&line) {
            Ok(ChildLine::Interval { ops, elapsed_ns }) => {
                sh.ops.fetch_add(ops, Ordering::Relaxed);
                sh.measured_ns.fetch_add(elapsed_ns, Ordering::Relaxed);
            }
            Ok(ChildLine::Done {
                result,
                interrupted,
            }) => {
                *sh.done.lock().unwrap_or_else(|e| e.into_inner()) = Some((result, interrupted));
            }
            Err(_) => {
                sh.garbage
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(|| format!("unexpected output line: {line}"));
            }
        }
    }
}
