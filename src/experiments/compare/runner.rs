//! Running the user's command once: spawned in its own process group with its CPUs set in
//! the child before `exec`, timed from spawn to exit, its whole tree's resource usage read
//! from `wait4`, its output captured, and nothing of it left running afterwards.
//!
//! - **CPUs.** `sched_setaffinity(0, …)` between fork and exec: every thread and process
//!   the command starts inherits the set (sched_setaffinity(2)). With a cpuset cgroup the
//!   child first writes its pid to the cgroup's `cgroup.procs`, which also holds processes
//!   that reset their own affinity (cgroups(7); Linux `Documentation/admin-guide/
//!   cgroup-v2.rst`, "Cpuset").
//! - **Usage.** `wait4` returns the rusage of the child and of every descendant it waited
//!   for (getrusage(2), RUSAGE_CHILDREN). smtlab is a child subreaper
//!   (`PR_SET_CHILD_SUBREAPER`, prctl(2)), so descendants orphaned during the run come to
//!   it instead of init, and their usage is added when they are reaped.
//! - **Nothing left behind.** The command leads a new process group. When it exits, the
//!   rest of its group is killed and reaped, so a background process of one run does not
//!   run on into the next placement. A descendant that left the group (setsid(2),
//!   setpgid(2)) escapes a kill of the group, but when its parent exits the kernel gives
//!   it to the nearest subreaper, smtlab: every child smtlab did not have before the
//!   command started, and that carries this execution's [`proctree::MARK_VAR`] (or none,
//!   but left the group), is killed with its own descendants and reaped — after a normal
//!   exit, a time limit, a signal, an error. Its parent-death signal kills the command
//!   itself when smtlab dies; the [`super::guard`] process kills the group, and every
//!   process whose environment holds smtlab's mark (a descendant that left the group, now
//!   re-parented to init, which keeps no trace of whose it was).
//! - **Waiting.** A `pidfd` (pidfd_open(2), Linux 5.3) polled in 50 ms slices: the exit is
//!   seen at once, and Ctrl-C between slices (poll(2) is never restarted after a signal
//!   handler, signal(7)) sends the group SIGTERM, then SIGKILL after a grace period —
//!   at once for the command, `--setup` and `--prepare`; for `--cleanup`, which undoes
//!   what the command changed, only after it had [`OnSignal::FinishWithin`] to finish.

use super::guard::Guard;
use super::proctree::{self, Proc};
use crate::cpuset::CpuSet;
use crate::error::Interrupted;
use anyhow::{Context, Result, anyhow};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Output kept per stream: its first and its last half of this; the middle of a longer
/// output is read and dropped, and counted ([`Finished::dropped`]). The end is kept
/// because that is where pgbench and sysbench print their numbers.
pub const CAPTURE_LIMIT: usize = 16 << 20;
/// How long a terminated command gets between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// The same for a command left to finish ([`OnSignal::FinishWithin`]) that did not: it
/// already had its time, and the first signal ends smtlab within a second or two.
pub const FINISH_TERM_GRACE: Duration = Duration::from_millis(500);
/// How long leftovers of a group get to die and be reaped after SIGKILL.
const REAP_WAIT: Duration = Duration::from_secs(2);

/// One execution to start.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    /// Program and arguments; the program is looked up on PATH when it has no `/`.
    pub argv: &'a [String],
    /// Extra environment.
    pub env: &'a [(String, String)],
    /// CPUs to set before exec; None = inherited from smtlab.
    pub cpus: Option<&'a CpuSet>,
    /// An open `cgroup.procs` the child moves itself into before exec.
    pub cgroup_procs: Option<RawFd>,
    /// Copy the output to smtlab's stderr as it comes (`--show-output`).
    pub echo: bool,
    /// stdout goes to /dev/null instead of to smtlab (hyperfine's default): for a command
    /// timed by its wall time, whose output nothing reads. Reading it is CPU time smtlab
    /// takes, and where every CPU runs measured work it is taken from a measured command
    /// (a `sort` writing 68 MB was on its CPU 80 % of the run, and counted disturbed).
    pub discard_stdout: bool,
    /// What the first signal does to it.
    pub on_signal: OnSignal,
    /// Longest the command may run before it is terminated.
    pub limit: Option<Duration>,
    /// Event counters over the command's whole tree, from its `execve` to its exit
    /// ([`crate::counters::Counters::open_for_exec`]).
    pub counters: crate::counters::Mode,
}

/// What the first signal (SIGINT, SIGTERM, SIGHUP; [`crate::interrupt`]) does to a
/// running execution. Either way its process group then gets SIGTERM, and SIGKILL
/// [`TERM_GRACE`] later ([`FINISH_TERM_GRACE`] after a [`OnSignal::FinishWithin`]), and
/// the run returns [`Interrupted`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnSignal {
    /// Terminated at once: the command, `--setup`, `--prepare`.
    Stop,
    /// Left to finish for this long after the first signal (or after its start, when the
    /// signal came first), then terminated; a second signal ends the wait. For
    /// `--cleanup`: it undoes what the command changed, so it runs after Ctrl-C too, but
    /// the first signal still ends smtlab within seconds.
    FinishWithin(Duration),
}

/// Resource usage of a process tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub user_ns: u64,
    pub system_ns: u64,
    /// Largest resident set of one process, bytes.
    pub max_rss_bytes: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

impl Usage {
    fn from_rusage(r: &libc::rusage) -> Self {
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        Usage {
            user_ns: ns(r.ru_utime),
            system_ns: ns(r.ru_stime),
            // Linux reports kilobytes (getrusage(2)).
            max_rss_bytes: r.ru_maxrss.max(0) as u64 * 1024,
            voluntary_switches: r.ru_nvcsw.max(0) as u64,
            involuntary_switches: r.ru_nivcsw.max(0) as u64,
        }
    }

    fn add(&mut self, o: &Usage) {
        self.user_ns += o.user_ns;
        self.system_ns += o.system_ns;
        self.max_rss_bytes = self.max_rss_bytes.max(o.max_rss_bytes);
        self.voluntary_switches += o.voluntary_switches;
        self.involuntary_switches += o.involuntary_switches;
    }
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Code(i32),
    Signal(i32),
    /// Terminated by us after [`Launch::limit`].
    TimedOut,
}

impl Status {
    pub fn success(self) -> bool {
        self == Status::Code(0)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Code(c) => write!(f, "exit code {c}"),
            Status::Signal(s) => write!(f, "killed by signal {s} ({})", signal_name(*s)),
            Status::TimedOut => f.write_str("terminated after its time limit"),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// A finished execution.
#[derive(Debug, Clone)]
pub struct Finished {
    /// From just before spawn to the exit, ns.
    pub wall_ns: u64,
    /// The command's tree: itself, what it reaped, and leftovers reaped by us.
    pub usage: Usage,
    pub status: Status,
    /// stdout and stderr as kept: a stream longer than [`CAPTURE_LIMIT`] is its first and
    /// last halves of that, joined by a line break.
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes of stdout and of stderr dropped from the middle (0 when all was kept).
    pub dropped: [u64; 2],
    /// Processes of its group, or that left it, still running at its exit (killed).
    pub leftovers: usize,
    /// What the tree's event counters counted; None with counters off.
    pub counters: Option<crate::counters::Measurement>,
}

/// Set by [`become_subreaper`]: this process starts no child of its own while a command
/// runs, so an unmarked child that left the command's group is one the command left.
static SOLE_SPAWNER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process the reaper of its descendants' orphans (see the module docs), for a
/// comparison: while a command runs, smtlab starts nothing else.
pub fn become_subreaper() {
    set_subreaper();
    SOLE_SPAWNER.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn set_subreaper() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// The leaders of the commands this process runs now. `pairs` runs a command while its
/// partner runs again and again on another thread, and a run's clean-up must not take the
/// other's leader for a leftover: between fork and exec the child still has smtlab's
/// environment (no mark) and already its own process group, and once exited its
/// environment can no longer be read (proc(5), `/proc/PID/environ`) — killed, or reaped
/// by the wrong `wait4`, it would fail the other run. The lock is held from before the
/// fork until the pid is listed, and while [`reap_adopted`] picks its children.
static LIVE: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<i32>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Numbers the executions of this process, for their marks.
static EXECUTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Kills and reaps a process group, and what the command left outside it, on drop: errors
/// and panics between spawn and reap leave nothing running.
struct GroupGuard {
    pid: i32,
    reaped: bool,
    /// This process's children (pid, start time) before the command started.
    before: Vec<(i32, u64)>,
    /// The command's [`proctree::MARK_VAR`] value.
    mark: String,
    /// Everything was reaped ([`GroupGuard::clear`]): nothing to do on drop.
    disarmed: bool,
}

impl GroupGuard {
    /// Kills and reaps the rest of the group and what the command left outside it;
    /// returns how many processes and their usage. The command itself must be reaped.
    fn clear(&self) -> (usize, Usage) {
        let (mut n, mut usage) = reap_group(self.pid);
        let (m, u) = reap_adopted(&self.before, &self.mark, self.pid);
        n += m;
        usage.add(&u);
        (n, usage)
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.disarmed {
            kill_group(self.pid, libc::SIGKILL);
            if !self.reaped {
                let _ = wait4_blocking(self.pid);
            }
            self.clear();
        }
        // Reaped: no longer a child for another run's clean-up to see.
        live().retain(|&p| p != self.pid);
    }
}

/// This process's children now: (pid, start time).
fn children_now() -> Vec<(i32, u64)> {
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    proctree::children_of(&proctree::all(), me)
        .iter()
        .map(|p| (p.pid, p.start))
        .collect()
}

/// Whether child `c` (not one of `before`) is what the command with `mark`, leader of group
/// `pgid`, left behind: it carries the mark, or carries none of this smtlab's marks yet
/// left the process group or session smtlab started it in (only a process it did not
/// start itself can be such a child while a command runs).
fn left_by_the_command(c: &Proc, mark: &str, pgid: i32, me: &Proc) -> bool {
    match proctree::mark_of(c.pid) {
        Some(m) if m == mark => true,
        Some(m) if proctree::is_ours(&m, proctree::mark()) => false,
        _ => {
            SOLE_SPAWNER.load(std::sync::atomic::Ordering::Relaxed)
                && (c.group == pgid || c.group != me.group || c.session != me.session)
        }
    }
}

/// Kills and reaps what the command with `mark` (leader of group `pgid`) left outside its
/// group: the children this subreaper adopted since `before` (see the module docs) and
/// their descendants, until none is left or [`REAP_WAIT`] passed. A process that cleared
/// its environment stays marked by its ancestry: it is a child of smtlab's now.
fn reap_adopted(before: &[(i32, u64)], mark: &str, pgid: i32) -> (usize, Usage) {
    let mut n = 0;
    let mut usage = Usage::default();
    // SAFETY: getpid has no preconditions.
    let me_pid = unsafe { libc::getpid() };
    let Some(me) = proctree::stat(me_pid) else {
        return (0, usage);
    };
    let deadline = Instant::now() + REAP_WAIT;
    loop {
        let procs = proctree::all();
        let left: Vec<Proc> = {
            let running = live();
            proctree::children_of(&procs, me_pid)
                .into_iter()
                .filter(|c| !before.contains(&(c.pid, c.start)) && !running.contains(&c.pid))
                .filter(|c| left_by_the_command(c, mark, pgid, &me))
                .collect()
        };
        if left.is_empty() {
            return (n, usage);
        }
        for c in &left {
            // Its descendants first, read in the same pass: a SIGKILLed process cannot
            // fork again, and they come to smtlab as their parents die.
            for pid in proctree::tree_in(&procs, c.pid).into_iter().rev() {
                // SAFETY: kill has no memory preconditions; the pid is of the command's tree.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            let mut status = 0;
            // SAFETY: zeroed rusage is a valid out-parameter.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: pointers to live locals; `c` is this process's child.
            if unsafe { libc::wait4(c.pid, &mut status, libc::WNOHANG, &mut ru) } == c.pid {
                n += 1;
                usage.add(&Usage::from_rusage(&ru));
            }
        }
        if Instant::now() >= deadline {
            return (n, usage);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn kill_group(pgid: i32, sig: libc::c_int) -> bool {
    // SAFETY: kill has no memory preconditions; a negative pid names our child's group.
    unsafe { libc::kill(-pgid, sig) == 0 }
}

fn wait4_blocking(pid: i32) -> std::io::Result<(libc::c_int, Usage)> {
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pointers to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Ok((status, Usage::from_rusage(&ru)));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Kills what is left of group `pgid` and reaps it: (processes reaped, their usage).
fn reap_group(pgid: i32) -> (usize, Usage) {
    let mut n = 0;
    let mut usage = Usage::default();
    if !kill_group(pgid, 0) {
        return (0, usage);
    }
    kill_group(pgid, libc::SIGKILL);
    let deadline = Instant::now() + REAP_WAIT;
    loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is a valid out-parameter.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: pointers to live locals.
        let r = unsafe { libc::wait4(-pgid, &mut status, libc::WNOHANG, &mut ru) };
        if r > 0 {
            n += 1;
            usage.add(&Usage::from_rusage(&ru));
            continue;
        }
        // Nothing reapable now: done once the group is empty (zombies are members too).
        if !kill_group(pgid, 0) || Instant::now() >= deadline {
            return (n, usage);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// How waiting ended.
enum Ended {
    Exited(Instant, libc::c_int, Usage),
    Interrupted,
    TimedOut,
}

fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes integers; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// The command's stdout and stderr, read by the waiting thread itself between polls: no
/// reader threads to start and wake, which on a busy machine cost more than a short
/// command's run.
struct Pipes {
    /// stdout, stderr; None once at end of file.
    fds: [Option<OwnedFd>; 2],
    /// The first half of [`CAPTURE_LIMIT`] of each stream.
    bufs: [Vec<u8>; 2],
    /// What came after that, trimmed to its last half of [`CAPTURE_LIMIT`].
    tails: [Vec<u8>; 2],
    /// Bytes trimmed from the front of each tail.
    dropped: [u64; 2],
    echo: bool,
}

impl Pipes {
    fn new(out: Option<OwnedFd>, err: Option<OwnedFd>, echo: bool) -> Self {
        for fd in [&out, &err].into_iter().flatten() {
            // SAFETY: fcntl on a descriptor we own.
            unsafe {
                let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
            }
        }
        Pipes {
            fds: [out, err],
            bufs: [Vec::new(), Vec::new()],
            tails: [Vec::new(), Vec::new()],
            dropped: [0, 0],
            echo,
        }
    }

    fn open(&self) -> bool {
        self.fds.iter().any(Option::is_some)
    }

    /// A pollfd for each open pipe, with the pipe's index.
    fn pollfds(&self) -> Vec<(usize, libc::pollfd)> {
        self.fds
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                f.as_ref().map(|f| {
                    (
                        i,
                        libc::pollfd {
                            fd: f.as_raw_fd(),
                            events: libc::POLLIN,
                            revents: 0,
                        },
                    )
                })
            })
            .collect()
    }

    /// Reads what pipe `i` holds now; closes it at end of file.
    fn drain(&mut self, i: usize) {
        let Some(fd) = self.fds[i].as_ref().map(|f| f.as_raw_fd()) else {
            return;
        };
        let mut buf = [0u8; 16384];
        loop {
            // SAFETY: reading into a local buffer of the given length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                let n = n as usize;
                if self.echo {
                    use std::io::Write;
                    let _ = std::io::stderr().write_all(&buf[..n]);
                }
                self.keep(i, &buf[..n]);
                continue;
            }
            let e = std::io::Error::last_os_error();
            if n < 0 && e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if n == 0 || e.raw_os_error() != Some(libc::EAGAIN) {
                // End of file, or an error: nothing more will come.
                self.fds[i] = None;
            }
            return;
        }
    }

    /// Keeps `bytes` of stream `i`: into the head while it has room, then into the tail,
    /// which is cut back to its last half of [`CAPTURE_LIMIT`] whenever it reaches twice
    /// that (so each byte is moved at most once more).
    fn keep(&mut self, i: usize, bytes: &[u8]) {
        const HALF: usize = CAPTURE_LIMIT / 2;
        let room = HALF.saturating_sub(self.bufs[i].len());
        let (head, rest) = bytes.split_at(room.min(bytes.len()));
        self.bufs[i].extend_from_slice(head);
        let tail = &mut self.tails[i];
        tail.extend_from_slice(rest);
        if tail.len() >= 2 * HALF {
            let cut = tail.len() - HALF;
            tail.drain(..cut);
            self.dropped[i] += cut as u64;
        }
    }

    /// Stream `i` as kept: the head, then (when the middle was dropped, after a line
    /// break, so no line is made of two) the tail's last half of [`CAPTURE_LIMIT`].
    fn take(&mut self, i: usize) -> (Vec<u8>, u64) {
        const HALF: usize = CAPTURE_LIMIT / 2;
        let mut tail = std::mem::take(&mut self.tails[i]);
        if tail.len() > HALF {
            let cut = tail.len() - HALF;
            tail.drain(..cut);
            self.dropped[i] += cut as u64;
        }
        let mut out = std::mem::take(&mut self.bufs[i]);
        if self.dropped[i] > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(&tail);
        (out, self.dropped[i])
    }

    fn drain_all(&mut self) {
        for i in 0..2 {
            self.drain(i);
        }
    }

    /// Reads until both pipes end, or `deadline`: a descendant that left the group
    /// (setsid) can hold them open, so take what came.
    fn finish(&mut self, deadline: Instant) {
        while self.open() && Instant::now() < deadline {
            let p = self.pollfds();
            let mut raw: Vec<libc::pollfd> = p.iter().map(|x| x.1).collect();
            // SAFETY: a valid array of pollfds.
            unsafe { libc::poll(raw.as_mut_ptr(), raw.len() as libc::nfds_t, 20) };
            for (k, (i, _)) in p.iter().enumerate() {
                if raw[k].revents != 0 {
                    self.drain(*i);
                }
            }
        }
    }
}

/// Waits for `pid` to exit, up to `deadline`, reading its output meanwhile and polling
/// Ctrl-C as `on_signal` says (None: not at all).
fn wait_exit(
    pid: i32,
    pipes: &mut Pipes,
    deadline: Option<Instant>,
    on_signal: Option<OnSignal>,
) -> std::io::Result<Ended> {
    let pidfd = pidfd_open(pid);
    // When this wait first saw a signal.
    let mut signal_seen: Option<Instant> = None;
    loop {
        let p = pipes.pollfds();
        let mut raw: Vec<libc::pollfd> = Vec::with_capacity(3);
        if let Some(fd) = &pidfd {
            raw.push(libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        raw.extend(p.iter().map(|x| x.1));
        // Without a pidfd (kernels before 5.3), wait4 is polled every millisecond.
        let timeout = if pidfd.is_some() { 50 } else { 1 };
        // SAFETY: a valid array of pollfds.
        let r = unsafe { libc::poll(raw.as_mut_ptr(), raw.len() as libc::nfds_t, timeout) };
        let now = Instant::now();
        if pidfd.is_some() && r > 0 && raw[0].revents != 0 {
            pipes.drain_all();
            let (st, u) = wait4_blocking(pid)?;
            return Ok(Ended::Exited(now, st, u));
        }
        if r > 0 {
            let skip = usize::from(pidfd.is_some());
            for (k, (i, _)) in p.iter().enumerate() {
                if raw[skip + k].revents != 0 {
                    pipes.drain(*i);
                }
            }
        }
        if pidfd.is_none() {
            let mut status = 0;
            // SAFETY: zeroed rusage is a valid out-parameter.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: pointers to live locals.
            let w = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
            if w == pid {
                pipes.drain_all();
                return Ok(Ended::Exited(now, status, Usage::from_rusage(&ru)));
            }
            if w < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(e);
                }
            }
        }
        if on_signal.is_some() && crate::interrupt::requested() {
            let seen = *signal_seen.get_or_insert(now);
            match on_signal {
                Some(OnSignal::FinishWithin(grace))
                    if now.duration_since(seen) < grace && !crate::interrupt::hurry() => {}
                _ => return Ok(Ended::Interrupted),
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(Ended::TimedOut);
        }
    }
}

/// SIGTERM to the group, SIGKILL `grace` later, then the exit reaped.
fn terminate(
    pid: i32,
    pipes: &mut Pipes,
    grace: Duration,
) -> std::io::Result<(libc::c_int, Usage)> {
    kill_group(pid, libc::SIGTERM);
    if let Ok(Ended::Exited(_, st, u)) = wait_exit(pid, pipes, Some(Instant::now() + grace), None) {
        return Ok((st, u));
    }
    kill_group(pid, libc::SIGKILL);
    wait4_blocking(pid)
}

/// Async-signal-safe set-up between fork and exec: join the cgroup, then set the CPUs (a
/// cpuset cgroup move resets the affinity to the cgroup's CPUs on cgroup v1).
fn child_setup(procs: Option<RawFd>, words: Option<&[u64]>) -> std::io::Result<()> {
    if let Some(fd) = procs {
        let mut buf = [0u8; 24];
        // SAFETY: getpid has no preconditions.
        let n = format_decimal(unsafe { libc::getpid() } as u64, &mut buf);
        // SAFETY: fd is open for writing in the parent and inherited; buf holds n bytes.
        if unsafe { libc::write(fd, buf.as_ptr().cast(), n) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    if let Some(w) = words {
        // SAFETY: the pointer and length describe the word slice.
        let r = unsafe { libc::syscall(libc::SYS_sched_setaffinity, 0, w.len() * 8, w.as_ptr()) };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Writes `v` in decimal into `buf` without allocating; returns the length.
fn format_decimal(mut v: u64, buf: &mut [u8; 24]) -> usize {
    let mut tmp = [0u8; 24];
    let mut n = 0;
    loop {
        tmp[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        buf[i] = tmp[n - 1 - i];
    }
    n
}

/// Runs the command once. The first signal terminates its group (as [`Launch::on_signal`]
/// says) and returns [`Interrupted`]; every other end returns [`Finished`], the status
/// saying how it ended.
pub fn run(l: &Launch<'_>, guard: Option<&Guard>) -> Result<Finished> {
    let (prog, args) = l
        .argv
        .split_first()
        .ok_or_else(|| anyhow!("empty command"))?;
    let mark = proctree::run_mark(EXECUTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .envs(l.env.iter().map(|(k, v)| (k, v)))
        .env(proctree::MARK_VAR, &mark)
        .stdin(Stdio::null())
        .stdout(if l.discard_stdout {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stderr(Stdio::piped())
        .process_group(0);
    crate::interrupt::die_with_us(&mut cmd, libc::SIGKILL);
    let words = l.cpus.map(|c| c.as_words().to_vec());
    let procs = l.cgroup_procs;
    // SAFETY: child_setup only makes async-signal-safe system calls (getpid, write,
    // sched_setaffinity) on memory captured before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || child_setup(procs, words.as_deref()));
    }
    // Opened on this thread just before it forks: the child inherits them and its exec
    // starts them. Dropped on every return below, before this thread forks again.
    let counters = crate::counters::Counters::open_for_exec(l.counters);
    let mut running = live();
    let before = children_now();
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting `{}`", l.argv.join(" ")))?;
    let pid = child.id() as i32;
    running.push(pid);
    drop(running);
    let mut group = GroupGuard {
        pid,
        reaped: false,
        before,
        mark,
        disarmed: false,
    };
    if let Some(g) = guard {
        g.process_group(pid);
    }
    let mut pipes = Pipes::new(
        child.stdout.take().map(OwnedFd::from),
        child.stderr.take().map(OwnedFd::from),
        l.echo,
    );
    // std's Child neither kills nor waits on drop: the pid is ours to reap with wait4.
    drop(child);
    let deadline = l.limit.map(|d| t0 + d);
    let ended = wait_exit(pid, &mut pipes, deadline, Some(l.on_signal))
        .context("waiting for the command")?;
    let (end, raw, mut usage, timed_out) = match ended {
        Ended::Exited(at, st, u) => (at, st, u, false),
        Ended::TimedOut => {
            let (st, u) =
                terminate(pid, &mut pipes, TERM_GRACE).context("terminating the command")?;
            (Instant::now(), st, u, true)
        }
        Ended::Interrupted => {
            let grace = match l.on_signal {
                OnSignal::Stop => TERM_GRACE,
                OnSignal::FinishWithin(_) => FINISH_TERM_GRACE,
            };
            let _ = terminate(pid, &mut pipes, grace);
            group.reaped = true;
            drop(group);
            if let Some(g) = guard {
                g.process_group_done(pid);
            }
            return Err(match l.on_signal {
                OnSignal::Stop => Interrupted.into(),
                OnSignal::FinishWithin(grace) => anyhow::Error::new(Interrupted).context(format!(
                    "still running {} after {}: its process group was terminated",
                    crate::duration::format_duration(grace),
                    crate::interrupt::name(crate::interrupt::signal())
                )),
            });
        }
    };
    group.reaped = true;
    let (leftovers, rest) = group.clear();
    usage.add(&rest);
    pipes.finish(Instant::now() + REAP_WAIT);
    // Every task of the tree has exited: their counts are folded into ours.
    let counters = counters.map(|c| c.read());
    group.disarmed = true;
    drop(group);
    if let Some(g) = guard {
        g.process_group_done(pid);
    }
    let status = if timed_out {
        Status::TimedOut
    } else if libc::WIFSIGNALED(raw) {
        Status::Signal(libc::WTERMSIG(raw))
    } else {
        Status::Code(libc::WEXITSTATUS(raw))
    };
    let (stdout, out_dropped) = pipes.take(0);
    let (stderr, err_dropped) = pipes.take(1);
    Ok(Finished {
        wall_ns: end.duration_since(t0).as_nanos() as u64,
        usage,
        status,
        stdout,
        stderr,
        dropped: [out_dropped, err_dropped],
        leftovers,
        counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn launch(a: &[String]) -> Launch<'_> {
        Launch {
            argv: a,
            env: &[],
            cpus: None,
            cgroup_procs: None,
            echo: false,
            discard_stdout: false,
            on_signal: OnSignal::Stop,
            limit: Some(Duration::from_secs(20)),
            counters: crate::counters::Mode::Off,
        }
    }

    #[test]
    fn decimal_without_allocation() {
        let mut b = [0u8; 24];
        let n = format_decimal(4194304, &mut b);
        assert_eq!(&b[..n], b"4194304");
        let n = format_decimal(0, &mut b);
        assert_eq!(&b[..n], b"0");
        let n = format_decimal(u64::MAX, &mut b);
        assert_eq!(&b[..n], u64::MAX.to_string().as_bytes());
    }

    #[test]
    fn a_discarded_stdout_is_not_read_and_stderr_is_still_kept() {
        // 4 MB on stdout, to /dev/null: nothing to read, nothing kept, the command not
        // blocked; stderr (where a failing command says why) still comes back.
        let a = argv(&[
            "sh",
            "-c",
            "head -c 4000000 /dev/zero; echo err >&2; exit 2",
        ]);
        let f = run(
            &Launch {
                discard_stdout: true,
                ..launch(&a)
            },
            None,
        )
        .unwrap();
        assert_eq!(f.status, Status::Code(2));
        assert!(f.stdout.is_empty(), "{} bytes kept", f.stdout.len());
        assert_eq!(f.stderr, b"err\n");
    }

    #[test]
    fn captures_output_status_and_usage() {
        let a = argv(&["sh", "-c", "echo out; echo err >&2; exit 3"]);
        let f = run(&launch(&a), None).unwrap();
        assert_eq!(f.status, Status::Code(3));
        assert_eq!(f.stdout, b"out\n");
        assert_eq!(f.stderr, b"err\n");
        assert!(f.wall_ns > 0 && f.usage.max_rss_bytes > 0, "{f:?}");
        let env = [("SMTLAB_X".to_string(), "42".to_string())];
        let a = argv(&["sh", "-c", "echo $SMTLAB_X"]);
        let f = run(
            &Launch {
                env: &env,
                ..launch(&a)
            },
            None,
        )
        .unwrap();
        assert_eq!(f.stdout, b"42\n");
    }

    #[test]
    fn output_larger_than_a_pipe_is_read_while_the_command_runs() {
        // 1 MB on stdout, 16 pipe buffers: the command would block if nobody read.
        let a = argv(&[
            "sh",
            "-c",
            "head -c 1000000 /dev/zero | tr '\\0' a; echo done >&2",
        ]);
        let f = run(&launch(&a), None).unwrap();
        assert!(f.status.success());
        assert_eq!(f.stdout.len(), 1_000_000);
        assert!(f.stdout.iter().all(|&b| b == b'a'));
        assert_eq!(f.stderr, b"done\n");
    }

    #[test]
    fn a_long_output_keeps_its_start_and_its_end_and_counts_the_middle() {
        const HALF: usize = CAPTURE_LIMIT / 2;
        let mut p = Pipes::new(None, None, false);
        // 3 × CAPTURE_LIMIT of numbered 1 MiB blocks, in pieces of odd sizes.
        let blocks = 3 * CAPTURE_LIMIT / (1 << 20);
        let all: Vec<u8> = (0..blocks)
            .flat_map(|b| std::iter::repeat_n(b as u8, 1 << 20))
            .collect();
        for piece in all.chunks(16_381) {
            p.keep(0, piece);
        }
        p.keep(1, b"short\n");
        let (out, dropped) = p.take(0);
        assert_eq!(dropped as usize, all.len() - 2 * HALF);
        assert_eq!(out.len(), 2 * HALF + 1);
        assert_eq!(&out[..HALF], &all[..HALF]);
        assert_eq!(out[HALF], b'\n');
        assert_eq!(&out[HALF + 1..], &all[all.len() - HALF..]);
        assert_eq!(p.take(1), (b"short\n".to_vec(), 0));
    }

    #[test]
    fn the_cpus_are_set_before_exec() {
        let me = crate::affinity::get_affinity(0).unwrap();
        let one = CpuSet::from_cpus([me.first().unwrap()]);
        let a = argv(&["grep", "Cpus_allowed_list", "/proc/self/status"]);
        let f = run(
            &Launch {
                cpus: Some(&one),
                ..launch(&a)
            },
            None,
        )
        .unwrap();
        let text = String::from_utf8_lossy(&f.stdout);
        assert!(text.trim().ends_with(&one.to_string()), "{text}");
    }

    #[test]
    fn the_child_tree_is_counted_and_leftovers_killed() {
        // A busy grandchild reaped by the shell: its CPU time is in the tree's usage.
        let a = argv(&[
            "sh",
            "-c",
            "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done & wait",
        ]);
        let f = run(&launch(&a), None).unwrap();
        assert!(f.status.success());
        assert!(f.usage.user_ns + f.usage.system_ns > 0, "{f:?}");
        // A background sleeper outliving the shell is killed, not left running.
        set_subreaper();
        let a = argv(&["sh", "-c", "sleep 30 & echo $!"]);
        let t0 = Instant::now();
        let f = run(&launch(&a), None).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(10));
        let pid: i32 = String::from_utf8_lossy(&f.stdout).trim().parse().unwrap();
        assert_eq!(f.leftovers, 1, "{f:?}");
        assert!(
            !crate::tempstate::process_exists(pid),
            "sleep {pid} still runs"
        );
    }

    #[test]
    fn signals_and_time_limits_are_reported() {
        let a = argv(&["sh", "-c", "kill -9 $$"]);
        let f = run(&launch(&a), None).unwrap();
        assert_eq!(f.status, Status::Signal(libc::SIGKILL));
        assert!(f.status.to_string().contains("SIGKILL"));
        let a = argv(&["sleep", "30"]);
        let f = run(
            &Launch {
                limit: Some(Duration::from_millis(200)),
                ..launch(&a)
            },
            None,
        )
        .unwrap();
        assert_eq!(f.status, Status::TimedOut);
        assert!(f.wall_ns < 5_000_000_000);
    }

    #[test]
    fn a_missing_program_is_an_error_not_a_panic() {
        let a = argv(&["/nonexistent/smtlab-no-such-program"]);
        let e = run(&launch(&a), None).unwrap_err();
        assert!(format!("{e:#}").contains("smtlab-no-such-program"), "{e:#}");
    }
}
