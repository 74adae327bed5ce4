//! Ctrl-C (SIGINT), SIGTERM and SIGHUP as a flag that long-running loops poll.
//!
//! The handler only stores to an atomic (async-signal-safe); the code that changed the
//! machine — pinned backends, a managed database cluster, burner processes — notices the
//! flag, undoes its change on the ordinary return path, and the command exits with 130.
//! A second Ctrl-C restores the default action so a stuck run can still be killed.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    if COUNT.fetch_add(1, Ordering::SeqCst) >= 1 {
        // SAFETY: signal() is async-signal-safe; restoring the default lets a second
        // Ctrl-C terminate immediately.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP. Idempotent.
pub fn install() {
    // SAFETY: the handler only touches atomics.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        // A closed terminal (ssh dropped) ends the run the same way, so the managed
        // cluster, pinned backends and burners are undone rather than left behind.
        libc::signal(libc::SIGHUP, on_signal as *const () as libc::sighandler_t);
    }
}

/// True once Ctrl-C or SIGTERM arrived.
pub fn requested() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Returns `Err(Interrupted)` once Ctrl-C arrived, for `?` in loops.
pub fn check() -> Result<(), crate::error::Interrupted> {
    if requested() {
        Err(crate::error::Interrupted)
    } else {
        Ok(())
    }
}

/// For tests: pretend Ctrl-C arrived (or clear it).
pub fn set_for_test(v: bool) {
    INTERRUPTED.store(v, Ordering::SeqCst);
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
