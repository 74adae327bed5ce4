//! Embeds the git revision (`SMTLAB_GIT_REV`) for the study report's provenance: `git
//! rev-parse --short=12 HEAD`, or `unknown` outside a git checkout or without git.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let rev = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SMTLAB_GIT_REV={rev}");
    // Rebuild when HEAD moves: a checkout changes HEAD, a commit changes the branch ref
    // (a loose file under refs/heads, or a line of packed-refs once `git pack-refs` ran).
    // Only paths that exist are named: Cargo treats a missing rerun-if-changed path as
    // changed on every build (the Cargo book, build scripts, "rerun-if-changed"), so naming
    // packed-refs in a repository that never packed its refs would rebuild the crate on
    // every cargo call. Packing refs deletes the loose ref file, which changes refs/heads.
    for p in ["HEAD", "refs/heads", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", p])
            && Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
