//! Replacing a file whole ([`replace`]): the one way smtlab writes a file a reader or a
//! later run may open (the study's files, `compare`'s exports, the SMT and hugetlb
//! journals; `top --textfile` through [`replace_unsynced`]); and checking such a path
//! before any work ([`check_output`]). Reading a file a user names ([`read_input`]):
//! regular files only, never a blocking open, a size cap per kind, Ctrl-C heard.
//!
//! Only a regular file (or nothing) is ever replaced. rename(2) replaces the directory
//! entry, whatever it names: run as root, a path that names `/dev/full`, a FIFO or a
//! symbolic link would become a text file, and the device node or link would be gone.
//!
//! Kernel control files (sysfs, tracefs, cgroupfs) are not written through it: writing one
//! is a request to the kernel, not a file's content, and they cannot be created or renamed
//! over, so those sites open the existing file and write the value into it.

use std::io::Write;
use std::path::{Path, PathBuf};
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

/// What is at a path, as a refusal names it: `a FIFO`, `a character device`, … Never
/// follows a symbolic link (lstat(2)).
fn odd_kind(meta: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    Some(if t.is_file() {
        return None;
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    })
}

/// Why `path` is not something [`replace`] may replace: it exists and is not a regular
/// file (a link counts as not regular: replacing it would remove the link, not write its
/// target). None when it is a regular file or nothing.
pub fn not_replaceable(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = odd_kind(&meta)?;
    Some(if meta.file_type().is_symlink() {
        match std::fs::read_link(path) {
            Ok(to) => format!("it is {kind} (to {})", to.display()),
            Err(_) => format!("it is {kind}"),
        }
    } else {
        format!("it is {kind}")
    })
}

/// Checks, before any work, that [`replace`] can write `path`: refused (exit 2, naming
/// `what`, e.g. `--textfile`, and the path) when something other than a regular file is
/// there, when it names no file, or when its directory is missing or cannot be written
/// (a file is made and removed there to find out: access(2) says yes to root even on
/// `/proc`). Finding out after a run has measured for minutes would lose the results.
pub fn check_output(what: &str, path: &Path) -> Result<(), crate::error::BadInput> {
    output_problem(path).map_or(Ok(()), |why| {
        Err(crate::error::BadInput(format!(
            "{what} {}: {why}; give the path of a regular file (or of none yet) in a \
             directory smtlab can write",
            path.display()
        )))
    })
}

/// [`check_output`]'s finding without the option's name: why `path` cannot be written
/// whole, or None when it can.
pub fn output_problem(path: &Path) -> Option<String> {
    // Path drops a trailing `/` (`/tmp/x.prom/` has the file name `x.prom`), but the kernel
    // does not: such a path names a directory, and the rename at the end would fail
    // (ENOTDIR) after all the work (path_resolution(7)).
    {
        use std::os::unix::ffi::OsStrExt;
        let b = path.as_os_str().as_bytes();
        if b.ends_with(b"/") || b.ends_with(b"/.") || b == b"." {
            return Some("it ends with `/`, so it names a directory, not a file".into());
        }
    }
    if let Some(why) = not_replaceable(path) {
        return Some(format!(
            "{why}, not a regular file, and smtlab replaces the file at that path whole"
        ));
    }
    let Some(name) = path.file_name() else {
        return Some("it names no file".into());
    };
    let dir = parent_dir(path);
    if !dir.is_dir() {
        return Some(format!("directory {} does not exist", dir.display()));
    }
    let probe = dir.join(format!(
        ".{}.smtlab-probe-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    match std::fs::File::create_new(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            None
        }
        Err(e) => Some(format!("cannot write in {} ({e})", dir.display())),
    }
}

/// Why an input file was not read.
#[derive(Debug)]
pub enum InputError {
    /// Nothing at the path (callers decide whether that is an error).
    Missing,
    /// Not readable as input: the sentence says why (it names no path).
    Bad(String),
    /// A signal arrived while reading.
    Interrupted,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Missing => f.write_str("it does not exist"),
            InputError::Bad(why) => f.write_str(why),
            InputError::Interrupted => f.write_str("interrupted while reading it"),
        }
    }
}

impl InputError {
    /// As an error for a command's result: bad input (exit 2) naming `what` (an option and
    /// its path, e.g. `--yield /x.json`), or the interruption (exit 130).
    pub fn into_error(self, what: &str) -> anyhow::Error {
        match self {
            InputError::Interrupted => crate::error::Interrupted.into(),
            e => crate::error::BadInput(format!("{what}: {e}")).into(),
        }
    }
}

/// Reads the input file at `path` whole, at most `cap` bytes, or says why not:
/// - only a regular file (a link to one is fine): a FIFO, a device, a directory or a
///   socket is refused from stat(2), before any open — opening a FIFO blocks until a writer
///   comes, and that open(2) is restarted after a signal handler with `SA_RESTART`, so
///   nothing but SIGKILL ended it; `/dev/zero` never ends;
/// - opened with `O_NONBLOCK` all the same (if a FIFO took the file's place in between,
///   the open returns at once and the second check refuses it), `O_NOCTTY`;
/// - larger than `cap` (as stat(2) says, or as read, if it grows) is refused unread, the
///   message naming the cap (`limits` holds the caps per kind);
/// - read in 64 KiB steps, stopping with [`InputError::Interrupted`] once a signal
///   arrived ([`crate::interrupt`]).
pub fn read_input(path: &Path, cap: u64) -> Result<Vec<u8>, InputError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling link is missing too, but say which.
            return Err(match std::fs::symlink_metadata(path) {
                Ok(_) => InputError::Bad(
                    "it is a symbolic link to nothing (its target does not exist)".into(),
                ),
                Err(_) => InputError::Missing,
            });
        }
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(InputError::Bad(
                "it is a loop of symbolic links (ELOOP)".into(),
            ));
        }
        Err(e) => return Err(InputError::Bad(format!("cannot read it ({e})"))),
    };
    let check = |meta: &std::fs::Metadata| -> Result<(), InputError> {
        if let Some(kind) = odd_kind(meta) {
            return Err(InputError::Bad(format!(
                "it is {kind}, not a regular file; give a file"
            )));
        }
        if meta.len() > cap {
            return Err(InputError::Bad(too_big(meta.len(), cap)));
        }
        Ok(())
    };
    check(&meta)?;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| InputError::Bad(format!("cannot read it ({e})")))?;
    check(
        &f.metadata()
            .map_err(|e| InputError::Bad(format!("cannot read it ({e})")))?,
    )?;
    let mut out = Vec::with_capacity(meta.len() as usize);
    let mut chunk = vec![0u8; 64 << 10];
    let mut f = f;
    loop {
        if crate::interrupt::requested() {
            return Err(InputError::Interrupted);
        }
        let n = match f.read(&mut chunk) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(InputError::Bad(format!("cannot read it ({e})"))),
        };
        if (out.len() + n) as u64 > cap {
            return Err(InputError::Bad(too_big((out.len() + n) as u64, cap)));
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

/// The most bytes read from one kernel file (sysfs, procfs, tracefs, or a copied tree under
/// `--sysfs-root`): far above any such file (a tracefs `trace` of a few MB, `smaps` of a
/// large process), far below what a link to `/dev/zero` would make of memory.
pub const MAX_KERNEL_FILE_BYTES: usize = 64 << 20;

/// The bytes of a kernel file, or of a file in a copied tree that stands for one: opened
/// with `O_NONBLOCK` (a FIFO put in its place reads as empty at once instead of waiting
/// for a writer forever, fifo(7); no effect on sysfs, procfs and regular files) and
/// `O_NOCTTY`, read at most [`MAX_KERNEL_FILE_BYTES`] (a file that never ends, a link to
/// `/dev/zero`, is an error, not an endless read). `one_shot`: the file is a sysfs
/// attribute, produced whole by its first read (at most a page), so a short read is its
/// end. The one reader for such files: topology discovery, `smt`, `top` and `mem`.
pub fn read_kernel_file(path: &Path, one_shot: bool) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    loop {
        match f.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) if one_shot && n < chunk.len() => {
                buf.extend_from_slice(&chunk[..n]);
                break;
            }
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > MAX_KERNEL_FILE_BYTES {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "`{}` holds more than {} MiB or never ends (a link to /dev/zero?): not a kernel file",
                            path.display(),
                            MAX_KERNEL_FILE_BYTES >> 20
                        ),
                    ));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // EAGAIN: a FIFO with a writer that has written nothing yet; it is no kernel
            // file, and waiting is what this reader never does.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(buf)
}

/// [`read_kernel_file`] as UTF-8 text, read to its end: `std::fs::read_to_string` for
/// kernel files, without its blocking open or its endless read.
pub fn read_kernel_text(path: impl AsRef<Path>) -> std::io::Result<String> {
    let path = path.as_ref();
    String::from_utf8(read_kernel_file(path, false)?).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("`{}` is not UTF-8 text ({e})", path.display()),
        )
    })
}

/// [`read_input`] as UTF-8 text.
pub fn read_input_text(path: &Path, cap: u64) -> Result<String, InputError> {
    let bytes = read_input(path, cap)?;
    String::from_utf8(bytes).map_err(|e| {
        InputError::Bad(format!(
            "it is not UTF-8 text (an invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The refusal of a file of `len` bytes (or more, when it grew while read) past `cap`.
fn too_big(len: u64, cap: u64) -> String {
    let human = if cap.is_multiple_of(1 << 20) {
        format!("{} MiB", cap >> 20)
    } else if cap.is_multiple_of(1 << 10) {
        format!("{} KiB", cap >> 10)
    } else {
        format!("{cap} B")
    };
    format!(
        "it holds {len} bytes or more, and such a file may hold at most {cap} bytes ({human}); \
         is it the right file?"
    )
}

/// Renames `path` aside to `PATH.invalid-UNIXSECONDS` (with `-N` added if that is taken),
/// keeping whatever it is, and returns the new path. For a journal that failed its checks:
/// it may be the only record of a state to put back, so it is never deleted, and it must
/// not block the next run.
pub fn keep_aside(path: &Path) -> std::io::Result<PathBuf> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{}` names no file", path.display()),
        )
    })?;
    for n in 0..1000 {
        let suffix = if n == 0 {
            format!("invalid-{now}")
        } else {
            format!("invalid-{now}-{n}")
        };
        let to = path.with_file_name(format!("{}.{suffix}", name.to_string_lossy()));
        if std::fs::symlink_metadata(&to).is_ok() {
            continue;
        }
        std::fs::rename(path, &to)?;
        return Ok(to);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("1000 files named `{}.invalid-{now}*`", path.display()),
    ))
}

/// The directory a file path is in (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
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
    if let Some(why) = not_replaceable(path) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "`{}`: {why}, not a regular file: not replaced",
                path.display()
            ),
        ));
    }
    write_temp_and_rename(path, bytes, sync)
}

/// The temporary file, its bytes, the rename and the syncs (after the check that `path`
/// may be replaced).
fn write_temp_and_rename(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let tmp = write_temp(path, bytes, sync)?;
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    if sync {
        std::fs::File::open(parent_dir(path))?.sync_all()?;
    }
    Ok(())
}

/// The temporary file's name for `path`'s file name: `.NAME.smtlab-PID-N.tmp`.
fn temp_prefix(name: &std::ffi::OsStr) -> String {
    format!(".{}.smtlab-", name.to_string_lossy())
}

/// Writes `bytes` to a new temporary file beside `path` (synced when `sync`) and returns
/// its path; on failure nothing is left. The file is `flock`ed while it is written, so
/// [`reap_stale_temps`] of a later run can tell a writer that is gone (SIGKILLed, the
/// machine crashed) from one still writing: the kernel drops the lock with its holder
/// however it ends, across pid namespaces (flock(2)).
fn write_temp(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<PathBuf> {
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("`{}` names no file", path.display()),
        )
    })?;
    let dir = parent_dir(path);
    reap_once(dir, name);
    let tmp = dir.join(format!(
        "{}{}-{}.tmp",
        temp_prefix(name),
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        // create_new: never write through a file (or link) someone else put at that name.
        let mut f = std::fs::File::create_new(&tmp)?;
        lock_exclusive(&f);
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

/// Takes `f`'s exclusive `flock` without waiting; false when another process holds it.
fn lock_exclusive(f: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a valid open descriptor.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// How old an unlocked temporary file must be to be reaped: a writer takes the lock right
/// after creating the file, so only that instant is covered by the age.
const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(10);

/// [`reap_stale_temps`] once per directory and file name in this process.
fn reap_once(dir: &Path, name: &std::ffi::OsStr) {
    static DONE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let key = dir.join(name);
    {
        let mut done = DONE.lock().unwrap_or_else(|e| e.into_inner());
        if done.contains(&key) {
            return;
        }
        done.push(key);
    }
    for p in reap_stale_temps(dir, name) {
        crate::say!(
            "removed {} (a temporary file left by an smtlab that was killed while writing it)",
            p.display()
        );
    }
}

/// Removes the temporary files that [`replace`] left for `dir/name` when its writer was
/// killed before the rename (SIGKILL, a crash): regular files named
/// `.NAME.smtlab-PID-N.tmp`, owned by this user, whose `flock` nobody holds, older than a
/// few seconds. Returns the paths removed.
pub fn reap_stale_temps(dir: &Path, name: &std::ffi::OsStr) -> Vec<PathBuf> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = temp_prefix(name);
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut removed = Vec::new();
    for e in rd.filter_map(|e| e.ok()) {
        let file = e.file_name().to_string_lossy().into_owned();
        let ours = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(".tmp"))
            .is_some_and(|r| {
                r.split_once('-')
                    .is_some_and(|(pid, n)| pid.parse::<u32>().is_ok() && n.parse::<u64>().is_ok())
            });
        if !ours {
            continue;
        }
        let p = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMP_AGE);
        if !meta.file_type().is_file() || meta.uid() != me || !old {
            continue;
        }
        // O_NOFOLLOW | O_NONBLOCK: never through a link, never blocking on a FIFO put in
        // its place since the lstat.
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&p)
        else {
            continue;
        };
        if !lock_exclusive(&f) {
            continue; // its writer is still at it
        }
        if std::fs::remove_file(&p).is_ok() {
            removed.push(p);
        }
    }
    removed
}

/// Replaces every file of `files` or none: each one's temporary file is written and synced
/// first, and only when all are (and no signal arrived meanwhile) are they renamed into
/// place, one after the other, then each directory synced. A failure or a signal before the
/// renames removes every temporary file and leaves each path as it was; a signal
/// ([`crate::interrupt`]) is [`crate::error::Interrupted`] in the error's chain. For a set
/// of files that describe one result (fleet.json, fleet.html, fleet.md), so that an
/// interrupted run never leaves a new one beside an old one.
pub fn replace_all(files: &[(&Path, &[u8])]) -> anyhow::Result<()> {
    use anyhow::Context;
    let mut temps: Vec<PathBuf> = Vec::with_capacity(files.len());
    let cleanup = |temps: &[PathBuf]| {
        for t in temps {
            let _ = std::fs::remove_file(t);
        }
    };
    for (path, bytes) in files {
        if crate::interrupt::requested() {
            cleanup(&temps);
            return Err(crate::interrupt::Interrupted.into());
        }
        let written = match not_replaceable(path) {
            Some(why) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{why}, not a regular file: not replaced"),
            )),
            None => write_temp(path, bytes, true),
        };
        match written {
            Ok(t) => temps.push(t),
            Err(e) => {
                cleanup(&temps);
                return Err(e).with_context(|| format!("writing `{}`", path.display()));
            }
        }
    }
    if crate::interrupt::requested() {
        cleanup(&temps);
        return Err(crate::interrupt::Interrupted.into());
    }
    for (i, ((path, _), tmp)) in files.iter().zip(&temps).enumerate() {
        if let Err(e) = std::fs::rename(tmp, path) {
            cleanup(&temps[i..]);
            return Err(e).with_context(|| format!("writing `{}`", path.display()));
        }
    }
    let mut dirs: Vec<&Path> = files.iter().map(|(p, _)| parent_dir(p)).collect();
    dirs.dedup();
    for d in dirs {
        std::fs::File::open(d)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing directory `{}`", d.display()))?;
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
        // it (create, write, fsync) has succeeded by then. `replace` refuses a directory
        // before it starts, so this is the step after that check, as when another process
        // puts a directory there in between.
        let target = dir.path().join("out");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("kept"), "old").unwrap();
        let e = write_temp_and_rename(&target, b"new", true).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory, "{e}");
        assert_eq!(names(dir.path()), ["out"]);
        assert_eq!(names(&target), ["kept"]);
        assert_eq!(std::fs::read_to_string(target.join("kept")).unwrap(), "old");
    }

    #[test]
    fn only_regular_files_are_replaced_and_the_rest_refused_before_any_work() {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let target = dir.path().join("target");
        std::fs::write(&target, "target").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        for (p, says) in [
            (&fifo, "it is a FIFO"),
            (&link, "it is a symbolic link (to "),
            (&sub, "it is a directory"),
        ] {
            let e = replace(p, b"x").unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
            assert!(e.to_string().contains(says), "{e}");
            let e = check_output("--textfile", p).unwrap_err().0;
            assert!(
                e.starts_with(&format!("--textfile {}: {says}", p.display())),
                "{e}"
            );
        }
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "target");
        // A regular file, and a path with nothing yet: fine, and nothing is left behind.
        check_output("--textfile", &target).unwrap();
        check_output("--textfile", &dir.path().join("new")).unwrap();
        assert_eq!(names(dir.path()), ["fifo", "link", "sub", "target"]);
        let e = check_output("--export-csv", &dir.path().join("no/such/x.csv"))
            .unwrap_err()
            .0;
        assert!(e.contains("does not exist"), "{e}");
        for trailing in ["new.prom/", "target/", "new.prom/."] {
            let e = check_output("--prometheus", &dir.path().join(trailing))
                .unwrap_err()
                .0;
            assert!(e.contains("it ends with `/`"), "{e}");
        }
        assert_eq!(names(dir.path()), ["fifo", "link", "sub", "target"]);
        let e = check_output("--export-csv", Path::new("/proc/smtlab-x.csv"))
            .unwrap_err()
            .0;
        assert!(e.contains("cannot write in /proc"), "{e}");
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
    fn kernel_files_are_read_without_blocking_or_reading_forever() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("control");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let t0 = std::time::Instant::now();
        // No writer: the open returns at once and the read finds nothing.
        assert_eq!(read_kernel_text(&fifo).unwrap(), "");
        let zero = dir.path().join("mds");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_kernel_text(&zero).unwrap_err();
        assert!(e.to_string().contains("never ends"), "{e}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(10));
        let f = dir.path().join("online");
        std::fs::write(&f, "0-3\n").unwrap();
        assert_eq!(read_kernel_text(&f).unwrap(), "0-3\n");
        assert_eq!(read_kernel_file(&f, true).unwrap(), b"0-3\n");
        assert_eq!(
            read_kernel_text(dir.path().join("none"))
                .unwrap_err()
                .kind(),
            std::io::ErrorKind::NotFound
        );
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let e = replace(Path::new("/"), b"x").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    }
}
