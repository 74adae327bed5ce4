//! SIGINT (Ctrl-C), SIGTERM and SIGHUP as flags that long-running loops poll.
//!
//! The handler only stores to atomics and writes to stderr (both async-signal-safe,
//! signal-safety(7)); the code that changed the machine — pinned backends, a managed
//! database cluster, burner processes, temporary files — notices the flag, undoes its
//! change on the ordinary return path, and the command exits with 130.
//!
//! - The first signal asks the run to stop ([`requested`]); which one it was is kept for
//!   the messages ([`signal`]).
//! - A second one asks the cleanup to hurry ([`hurry`]): skip what is only graceful (a
//!   grace period for burners to report, a database's shutdown wait) but still undo
//!   everything. It never skips the cleanup.
//! - A third one, once [`FORCE_AFTER`] has passed since the second (so a quick `^C^C^C`
//!   stays a hurry), is the last resort for a cleanup that hangs: it prints what may be
//!   left behind and exits with 130 at once. Burner and PostgreSQL processes die with
//!   smtlab (a parent-death signal), and the next smtlab run removes temporary
//!   directories whose owner is gone ([`crate::tempstate`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The exit code of an interrupted run (128 + SIGINT, as shells report it);
/// `error::EXIT_INTERRUPTED` is this value.
pub const EXIT_CODE: u8 = 130;

/// How long after the second signal a third one exits without cleanup.
pub const FORCE_AFTER: Duration = Duration::from_secs(2);

/// Signals received so far.
static COUNT: AtomicUsize = AtomicUsize::new(0);
/// The first signal's number (0 before any).
static FIRST: AtomicI32 = AtomicI32::new(0);
/// CLOCK_MONOTONIC time of the second signal, ns.
static SECOND_AT_NS: AtomicU64 = AtomicU64::new(0);
/// The last-resort message, formatted before the handler is installed (the handler
/// must not allocate).
static FORCE_MESSAGE: OnceLock<Vec<u8>> = OnceLock::new();

/// One of the signals that interrupt a run; models record it by its name (`SIGTERM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Signal {
    /// SIGINT: Ctrl-C in the terminal, or `kill -INT`.
    #[serde(rename = "SIGINT")]
    Int,
    /// SIGTERM: `kill`, `timeout`, a service manager.
    #[serde(rename = "SIGTERM")]
    Term,
    /// SIGHUP: the terminal closed (an ssh session dropped).
    #[serde(rename = "SIGHUP")]
    Hup,
}

impl Signal {
    fn from_raw(sig: i32) -> Option<Self> {
        match sig {
            libc::SIGINT => Some(Signal::Int),
            libc::SIGTERM => Some(Signal::Term),
            libc::SIGHUP => Some(Signal::Hup),
            _ => None,
        }
    }
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Hup => "SIGHUP",
        })
    }
}

/// `signal`'s name for a message, or `a signal` when it is not known (a file written
/// before the signal was recorded).
pub fn name(signal: Option<Signal>) -> String {
    signal.map_or_else(|| "a signal".to_string(), |s| s.to_string())
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; clock_gettime is async-signal-safe.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// write(2) to stderr, ignoring errors (stderr may be closed or full).
fn write_stderr(msg: &[u8]) {
    // SAFETY: write is async-signal-safe; `msg` is valid for its length.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

extern "C" fn on_signal(sig: libc::c_int) {
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    match n {
        1 => FIRST.store(sig, Ordering::SeqCst),
        2 => {
            SECOND_AT_NS.store(monotonic_ns(), Ordering::SeqCst);
            write_stderr(
                b"\nsmtlab: second signal: cleaning up without waiting for graceful shutdowns \
                  (a third signal, 2 s from now, exits without cleanup)\n",
            );
        }
        _ => {
            let since = monotonic_ns().saturating_sub(SECOND_AT_NS.load(Ordering::SeqCst));
            if since < FORCE_AFTER.as_nanos() as u64 {
                write_stderr(b"\nsmtlab: still cleaning up\n");
                return;
            }
            if let Some(m) = FORCE_MESSAGE.get() {
                write_stderr(m);
            }
            // SAFETY: _exit is async-signal-safe and runs no destructors or atexit
            // handlers, which may hold locks this thread interrupted.
            unsafe { libc::_exit(EXIT_CODE as libc::c_int) };
        }
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP. Idempotent.
pub fn install() {
    FORCE_MESSAGE.get_or_init(|| {
        format!(
            "\nsmtlab: third signal: exiting WITHOUT cleanup. Left behind may be: temporary \
             directories {}/smtlab-* (the next smtlab run removes those whose owner is gone); \
             burner processes and a managed PostgreSQL server get a parent-death signal and \
             end with smtlab.\n",
            std::env::temp_dir().display()
        )
        .into_bytes()
    });
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: all-zero is a valid sigaction; the handler only touches atomics, reads
        // an initialised OnceLock and calls async-signal-safe functions. SA_RESTART keeps
        // blocking calls (pipe reads, waits) from failing with EINTR; every loop that
        // must see the flag polls it with a timeout.
        // A closed terminal (SIGHUP, an ssh session dropped) ends the run the same way,
        // so the managed cluster, pinned backends and burners are undone rather than left.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// True once SIGINT, SIGTERM or SIGHUP arrived.
pub fn requested() -> bool {
    COUNT.load(Ordering::Relaxed) >= 1
}

/// True once a second signal arrived: cleanup should skip graceful waits (but still run).
pub fn hurry() -> bool {
    COUNT.load(Ordering::Relaxed) >= 2
}

/// The first signal that arrived, if any.
pub fn signal() -> Option<Signal> {
    Signal::from_raw(FIRST.load(Ordering::Relaxed))
}

/// SIGINT (Ctrl-C), SIGTERM or SIGHUP arrived; its message names the signal. Exit code
/// [`EXIT_CODE`] (`error::exit_code` finds it in an error's chain).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match signal() {
            Some(s) => write!(f, "interrupted by {s}"),
            None => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Interrupted {}

/// Returns `Err(Interrupted)` once a signal arrived, for `?` in loops.
pub fn check() -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted)
    } else {
        Ok(())
    }
}

/// For tests: pretend Ctrl-C arrived (or clear it). The flag is process-wide, so every run
/// in the process stops: a test that sets it runs in a process of its own (the
/// integration tests' `common::own_process!`), never beside other tests.
pub fn set_for_test(v: bool) {
    FIRST.store(if v { libc::SIGINT } else { 0 }, Ordering::SeqCst);
    COUNT.store(usize::from(v), Ordering::SeqCst);
}

/// Makes the child that `cmd` starts receive `signal` when the thread spawning it exits,
/// which covers smtlab being SIGKILLed, when no code of ours runs (Linux
/// `PR_SET_PDEATHSIG`). The signal follows the spawning *thread*: spawn from one that
/// outlives the child. std changes uid/gid before this hook runs, so the setting survives
/// a [`std::os::unix::process::CommandExt::uid`] switch.
pub(crate) fn die_with_us(cmd: &mut std::process::Command, signal: libc::c_int) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // system calls (prctl, getppid), allocating nothing on success.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the prctl: no signal will come, so do not start.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_for_messages() {
        assert_eq!(Signal::from_raw(libc::SIGTERM), Some(Signal::Term));
        assert_eq!(
            Signal::from_raw(libc::SIGHUP).unwrap().to_string(),
            "SIGHUP"
        );
        assert_eq!(
            Signal::from_raw(libc::SIGINT).unwrap().to_string(),
            "SIGINT"
        );
        assert_eq!(name(None), "a signal");
        assert_eq!(serde_json::to_string(&Signal::Term).unwrap(), "\"SIGTERM\"");
        assert_eq!(Signal::from_raw(libc::SIGUSR1), None);
    }
}
