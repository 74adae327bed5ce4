//! Skipped checks, said where `cargo test` shows them.
//!
//! libtest has no run-time "skipped" result: a test that finds its prerequisite missing
//! returns and is counted as passed, and what it printed is shown only with `--nocapture`
//! (libtest captures the `print!` family of each test; The Rust Reference, "Testing",
//! and `cargo test -- --help`). So a skip is recorded here, and when the test binary
//! exits (`atexit(3)`, after libtest's own `test result:` line) one summary per reason is
//! written straight to file descriptor 2, which libtest does not capture:
//!
//! ```text
//! skipped 8 tests of this binary (counted as passed above): SMT guest tests need a kernel: run tests/guest/fetch-kernel.sh …
//!   smt_kvm_1x2x2, …
//! ```
//!
//! A check that CI must run names its `SMTLAB_REQUIRE_*` variable ([`Need`]); where it is
//! `1` (`.ci/run` sets them) the skip is a failure instead.

use std::collections::BTreeMap;
use std::sync::{Mutex, Once};

/// What a skipped check lacked, for the CI variable that forbids the skip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)] // each test binary uses some of them
pub enum Need {
    /// The QEMU guests' kernel, qemu, busybox, cpio, or host CPUs to pin to.
    Guests,
    /// The topology dumps beside the repository.
    Dumps,
    /// Debian's `chromium`, for the pages.
    Chromium,
    /// Slurm and munge, for the Slurm recipe.
    Slurm,
    /// ansible-core, for the Ansible recipe.
    Ansible,
    /// prometheus-node-exporter, for the textfile scrape.
    NodeExporter,
    /// A quiet host, for the known-answer guests: every boot found the host busy (other
    /// work or the hypervisor's steal over the limit) or the emulated machine frozen, so
    /// no answer could be judged. Not the code's fault and not CI's to forbid by default;
    /// `SMTLAB_REQUIRE_QUIET_HOST=1` makes it a failure on a host known to be quiet.
    QuietHost,
    /// Something no `SMTLAB_REQUIRE_*` variable covers: what a CI machine may lack too
    /// (root, 2 CPUs, SMT siblings, a hugetlb pool, a PMU), or a tool `CI=true` already
    /// requires where it is tested (PostgreSQL, sysbench, man).
    Machine,
}

impl Need {
    /// The environment variable that makes this skip a failure.
    pub fn require_var(self) -> Option<&'static str> {
        match self {
            Need::Guests => Some("SMTLAB_REQUIRE_GUESTS"),
            Need::Dumps => Some("SMTLAB_REQUIRE_DUMPS"),
            Need::Chromium => Some("SMTLAB_REQUIRE_CHROMIUM"),
            Need::Slurm => Some("SMTLAB_REQUIRE_SLURM"),
            Need::Ansible => Some("SMTLAB_REQUIRE_ANSIBLE"),
            Need::NodeExporter => Some("SMTLAB_REQUIRE_NODE_EXPORTER"),
            Need::QuietHost => Some("SMTLAB_REQUIRE_QUIET_HOST"),
            Need::Machine => None,
        }
    }
}

/// Skips: reason → the tests that skipped for it.
static SKIPPED: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());
static AT_EXIT: Once = Once::new();

/// Records that the running test skips for `why` (it should return right after), prints
/// `skipped: WHY` for `--nocapture` readers, and has the binary list it at exit. Panics
/// instead where `need`'s `SMTLAB_REQUIRE_*` variable is `1`.
pub fn skip(need: Need, why: &str) {
    if let Some(var) = need.require_var() {
        assert!(
            std::env::var(var).as_deref() != Ok("1"),
            "{why} ({var}=1: this check must run here, not skip)"
        );
    }
    eprintln!("skipped: {why}");
    let test = std::thread::current()
        .name()
        .unwrap_or("(unnamed test)")
        .to_string();
    SKIPPED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(why.to_string())
        .or_default()
        .push(test);
    AT_EXIT.call_once(|| {
        // SAFETY: `report` takes no arguments, does not unwind (it catches its own
        // panics), and only locks a Mutex and writes to fd 2.
        unsafe { libc::atexit(report) };
    });
}

/// The summary, one paragraph per reason, most-skipped reason first.
pub fn summary(skipped: &BTreeMap<String, Vec<String>>) -> String {
    let mut rows: Vec<(&String, &Vec<String>)> = skipped.iter().collect();
    rows.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let mut out = String::new();
    for (why, tests) in rows {
        let mut tests = tests.clone();
        tests.sort();
        tests.dedup();
        let n = tests.len();
        let noun = if n == 1 { "test" } else { "tests" };
        out.push_str(&format!(
            "skipped {n} {noun} of this binary (counted as passed above): {why}\n  {}\n",
            tests.join(", ")
        ));
    }
    out
}

extern "C" fn report() {
    let _ = std::panic::catch_unwind(|| {
        let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
        let text = summary(&skipped);
        if text.is_empty() {
            return;
        }
        let text = format!("\n{text}");
        // Straight to fd 2: libtest's capture covers only the print! family.
        // SAFETY: a valid buffer and its length.
        unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
    });
}
