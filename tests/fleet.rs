//! The fleet recipes, run for real: `contrib/slurm` on a one-node Slurm cluster this test
//! starts on localhost (munged, slurmctld, slurmd, stopped on every exit path and checked
//! gone), and `contrib/ansible` with `ansible-playbook -i localhost, -c local`. Each runs
//! a real `smtlab study --quick` and `smtlab merge`.
//!
//! A test binary of its own (`cargo test --test fleet`), as `smt_guests` is: each test keeps
//! both CPUs busy for a minute with a real study, which must not run beside the integration
//! tests' timing-sensitive ones; and the two run one after the other (`one_at_a_time`).
//!
//! Without Slurm, munge or ansible-core installed they skip, saying why (listed when the
//! binary exits, `tests/common/skip.rs`); with `CI=true`, `SMTLAB_REQUIRE_SLURM=1` or
//! `SMTLAB_REQUIRE_ANSIBLE=1` (`.ci/run`, which installs them) they fail instead.

#[path = "fleet/ansible.rs"]
mod ansible;
#[path = "fleet/procs.rs"]
mod procs;
#[path = "common/skip.rs"]
mod skip;
#[path = "fleet/slurm.rs"]
mod slurm;

/// One recipe at a time: each runs a study that wants every CPU. Also catches SIGINT,
/// SIGTERM and SIGHUP for the rest of this test process, so that Ctrl-C ends a test
/// through its cleanup (the waits poll [`interrupted`] and fail; the guards' `Drop` stops
/// what the test started) instead of killing the process with its daemons still running.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    static HANDLERS: std::sync::Once = std::sync::Once::new();
    HANDLERS.call_once(|| {
        extern "C" fn on_signal(_: libc::c_int) {
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
            unsafe { libc::signal(sig, on_signal as *const () as libc::sighandler_t) };
        }
    });
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether SIGINT, SIGTERM or SIGHUP arrived since [`one_at_a_time`] first ran.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// True under `.ci/run`, where a missing tool is a failure, not a skip.
pub fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// True when `program --version` (or the given probe) runs; otherwise says why the test
/// skips (or fails where `need`'s `SMTLAB_REQUIRE_*` is set, or under CI).
pub fn have(need: skip::Need, program: &str, probe: &[&str], install: &str) -> bool {
    match std::process::Command::new(program).args(probe).output() {
        Ok(_) => true,
        Err(e) => {
            assert!(!ci(), "CI must have {program} ({install}): {e}");
            skip::skip(
                need,
                &format!("{program} not found ({e}); install {install}"),
            );
            false
        }
    }
}

/// The smtlab binary under test.
pub fn smtlab_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_smtlab"))
}

/// The repository's root (for contrib/).
pub fn repo() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `uname -n`.
pub fn hostname() -> String {
    let out = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .expect("uname runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
