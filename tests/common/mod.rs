//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};

/// Unpacks hwloc's 16em64t-4s2c2t dump (4 packages × 2 cores × 2 threads, siblings i and
/// i+8) into `tmp` and returns its root. Without the fixtures it prints why and returns
/// None, unless `SMTLAB_REQUIRE_DUMPS=1` (CI), where a missing dump is a failure.
pub fn smt_dump(tmp: &Path) -> Option<PathBuf> {
    let dir = std::env::var_os("SMTLAB_TOPOLOGY_DUMPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/topology")
        });
    let tarball = dir.join("hwloc/16em64t-4s2c2t.tar.bz2");
    if !tarball.is_file() {
        assert!(
            std::env::var("SMTLAB_REQUIRE_DUMPS").as_deref() != Ok("1"),
            "topology dump {} missing",
            tarball.display()
        );
        eprintln!("skipped: no topology dump at {}", tarball.display());
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
    Some(tmp.join("16em64t-4s2c2t"))
}

/// Runs `cmd`, asserts exit 0, and returns its stdout as text.
pub fn stdout_of(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).expect("stdout is UTF-8")
}
