//! Replacing a file whole ([`replace`]): the one way smtlab writes a file a reader or a
//! later run may open (the study's files, `compare`'s exports, the SMT and hugetlb
//! journals; `top --textfile` through [`replace_unsynced`]).
//!
//! Kernel control files (sysfs, tracefs, cgroupfs) are not written through it: writing one
//! is a request to the kernel, not a file's content, and they cannot be created or renamed
//! over, so those sites open the existing file and write the value into it.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary names taken by this process, so two writes of one path never share one.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` so that a reader, or the machine after a crash, sees the old
/// file or the whole new one, never a part: a new temporary file in the same directory
/// (rename(2) is atomic only within one file system), the bytes, fsync(2), rename(2) over
/// `path`, then fsync of the directory so the rename itself is on disk. When a step before
/// the rename fails the temporary file is removed and `path` is untouched. The error is
/// the step's own; callers say which file it was for.
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_and_rename(path, bytes, true)
}

/// [`replace`] without the two fsyncs: a reader still sees the old file or the whole new
/// one, but after a crash the file may be either or empty. For a file rewritten every few
/// seconds that nothing needs after a crash (`top --textfile`, which node_exporter reads):
/// syncing it at each interval would put disk writes and their latency on the machine
/// being measured.
pub fn replace_unsynced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_and_rename(path, bytes, false)
}

fn write_and_rename(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{}` names no file", path.display()),
        )
    })?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.smtlab-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        // create_new: never write through a file (or link) someone else put at that name.
        let mut f = std::fs::File::create_new(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if sync {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        replace(&p, b"one").unwrap();
        replace(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        replace_unsynced(&p, b"three").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "three");
        assert_eq!(names(dir.path()), ["x.json"]);
    }

    #[test]
    fn a_failed_rename_leaves_the_target_untouched_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // rename(2) of a file over a non-empty directory fails (EISDIR); everything before
        // it (create, write, fsync) has succeeded by then.
        let target = dir.path().join("out");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("kept"), "old").unwrap();
        let e = replace(&target, b"new").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory, "{e}");
        assert_eq!(names(dir.path()), ["out"]);
        assert_eq!(names(&target), ["kept"]);
        assert_eq!(std::fs::read_to_string(target.join("kept")).unwrap(), "old");
    }

    #[test]
    fn a_directory_that_cannot_be_written_leaves_the_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("missing").join("x.json");
        assert!(replace(&p, b"new").is_err());
        assert!(!p.exists());
        assert_eq!(names(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let e = replace(Path::new("/"), b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
