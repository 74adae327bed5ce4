//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

pub mod skip;
pub use skip::{Need, skip};

/// Why a dump test skips: the whole folder missing (one reason for every such test, so the
/// binary's summary counts them together) or one tarball in it.
pub fn no_dump(dir: &Path, tarball: &Path) -> String {
    if dir.is_dir() {
        format!("no topology dump at {}", tarball.display())
    } else {
        no_dumps(dir)
    }
}

/// Why a dump test skips when `dir` holds no dumps at all.
pub fn no_dumps(dir: &Path) -> String {
    format!(
        "no topology dumps at {} (set SMTLAB_TOPOLOGY_DUMPS to a folder of hwloc's dumps)",
        dir.display()
    )
}

/// Unpacks hwloc's 16em64t-4s2c2t dump (4 packages × 2 cores × 2 threads, siblings i and
/// i+8) into `tmp` and returns its root. Without the fixtures it prints why and returns
/// None, unless `SMTLAB_REQUIRE_DUMPS=1` (CI), where a missing dump is a failure.
pub fn smt_dump(tmp: &Path) -> Option<PathBuf> {
    dump(tmp, "hwloc/16em64t-4s2c2t")
}

/// Unpacks hwloc's 64amd64-4s2n4ca2co dump (4 × AMD Opteron 6276, family 15h: 32
/// Bulldozer CMT modules of two integer cores, which the kernel lists as thread siblings
/// 0-1, 2-3, …) into `tmp` and returns its root, or None with the reason printed (as
/// [`smt_dump`]).
pub fn cmt_dump(tmp: &Path) -> Option<PathBuf> {
    dump(tmp, "hwloc/64amd64-4s2n4ca2co")
}

/// Unpacks `NAME.tar.bz2` (`name` relative to the dumps folder) into `tmp`; its root is
/// the tarball's one top folder.
fn dump(tmp: &Path, name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SMTLAB_TOPOLOGY_DUMPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/topology")
        });
    let tarball = dir.join(format!("{name}.tar.bz2"));
    if !tarball.is_file() {
        skip(Need::Dumps, &no_dump(&dir, &tarball));
        return None;
    }
    let ok = std::process::Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp)
        .status()
        .expect("tar runs")
        .success();
    assert!(ok, "unpacking {}", tarball.display());
    let top = Path::new(name).file_name().expect("a dump name");
    Some(tmp.join(top))
}

/// Runs `cmd`, asserts exit 0, and returns its stdout as text.
pub fn stdout_of(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).expect("stdout is UTF-8")
}

/// Serialises the tests that keep every CPU busy (real engine runs, lock tests with many
/// spinning threads), so that in the one test process they do not oversubscribe each other
/// and stretch each other's timings.
pub fn cpu_heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Set in the process [`own_process!`] starts; [`press_ctrl_c`] requires it.
pub const OWN_PROCESS: &str = "SMTLAB_TEST_OWN_PROCESS";

/// How long a test's own process may run before it counts as hung.
pub const OWN_PROCESS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Runs `$body` as the only test of a process of its own: the `#[test]` fn `$test` it is
/// called from starts this test binary again, filtered to exactly that test (rusty-fork,
/// <https://docs.rs/rusty-fork>), and fails when the child fails; the child's output is
/// shown with the test's. For tests that change process-wide state the library polls,
/// the Ctrl-C flag above all: in the shared test process, every test running at the same
/// time would see it and stop early.
macro_rules! own_process {
    ($test:ident, $body:block) => {{
        fn body() $body
        rusty_fork::fork(
            rusty_fork::rusty_fork_test_name!($test),
            rusty_fork::rusty_fork_id!(),
            |cmd: &mut std::process::Command| {
                cmd.env($crate::common::OWN_PROCESS, "1");
            },
            |child: &mut rusty_fork::ChildWrapper, _: &mut std::fs::File| {
                let timeout = $crate::common::OWN_PROCESS_TIMEOUT;
                match child.wait_timeout(timeout).expect("waiting for the test's process") {
                    Some(status) => assert!(status.success(), "the test's process: {status}"),
                    None => panic!("the test's process still runs after {timeout:?}"),
                }
            },
            body,
        )
        .expect("starting the test's own process");
    }};
}
pub(crate) use own_process;

/// Pretends Ctrl-C arrived. Only inside [`own_process!`]: the flag is process-wide.
pub fn press_ctrl_c() {
    assert!(
        std::env::var_os(OWN_PROCESS).is_some(),
        "press_ctrl_c outside own_process!: every test in this process would see the flag"
    );
    smtlab::interrupt::set_for_test(true);
}

/// The exit summary counts each test once under its reason, most-skipped reason first.
#[test]
fn the_skip_summary_lists_each_reason_with_its_tests() {
    let mut m = std::collections::BTreeMap::new();
    m.insert("one CPU".to_string(), vec!["engine::b".to_string()]);
    m.insert(
        "no guest kernel".to_string(),
        vec!["g2".to_string(), "g1".to_string(), "g1".to_string()],
    );
    assert_eq!(
        skip::summary(&m),
        "skipped 2 tests of this binary (counted as passed above): no guest kernel\n  g1, g2\n\
         skipped 1 test of this binary (counted as passed above): one CPU\n  engine::b\n"
    );
    assert_eq!(skip::summary(&Default::default()), "");
}
