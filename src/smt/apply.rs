//! The side effects of `smt off | on | restore`: the privilege check, the journal written
//! before the first change, the sysfs writes in order, and the undo when a write fails or
//! Ctrl-C arrives midway. Everything decided here comes from `plan`; this file only writes.
//!
//! Order of events for a change: read the state, plan, list the processes that would lose
//! their pinning (refused without `--force`), check every file can be written (exit 4 when
//! not), take the change lock, write the journal, then write sysfs one file at a time,
//! checking for Ctrl-C between writes. A failed write or Ctrl-C puts back the journal's
//! state before returning, so the machine ends either fully switched or as it was; a
//! SIGKILL leaves the journal for `smt restore`.

use super::journal::{self, Journal};
use super::plan::{self, Method, Plan, SysWrite, TaskAffinity};
use super::state::{self, SmtState};
use crate::cpuset::CpuSet;
use crate::error::{BadInput, Interrupted, NeedsPrivilege, NotPossible};
use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::time::Duration;

/// Which change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Off,
    On,
    Restore,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Off => "off",
            Action::On => "on",
            Action::Restore => "restore",
        }
    }
}

/// How to change.
#[derive(Debug, Clone)]
pub struct Options {
    /// Print the writes, change nothing.
    pub dry_run: bool,
    /// Go ahead although pinned processes lose their affinity.
    pub force: bool,
    pub method: Method,
    /// A pause after the journal and after each write, so tests can kill the process at a
    /// known point; zero for users.
    pub step_delay: Duration,
}

/// Runs `action` under `root`, printing what it does to `out`. Output is best effort: a
/// closed terminal or pipe (the shell went away midway) must not stop a change from being
/// finished or undone.
pub fn run(root: &Path, action: Action, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let out = &mut Lossy(out);
    match action {
        Action::Restore => restore(root, opts, out),
        Action::Off | Action::On => change(root, action, opts, out),
    }
}

/// A writer that drops what it cannot write.
struct Lossy<'a>(&'a mut dyn Write);

impl Write for Lossy<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.write_all(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

fn change(root: &Path, action: Action, opts: &Options, out: &mut dyn Write) -> Result<()> {
    let st = state::read(root)?;
    let planned = match action {
        Action::Off => plan::plan_off(&st, opts.method),
        _ => plan::plan_on(&st, opts.method),
    };
    let p = planned.map_err(|e| NotPossible(e.0))?;
    for n in &p.notes {
        writeln!(out, "note: {n}")?;
    }
    if let Some(why) = &p.nothing {
        writeln!(out, "smt {}: {why}", action.name())?;
        return Ok(());
    }
    writeln!(out, "smt {}: {}", action.name(), summary(&st, &p))?;
    let affected = if p.going_offline.is_empty() {
        Vec::new()
    } else {
        plan::affected(&read_tasks(root), &p.online_after, &p.going_offline)
    };
    if !affected.is_empty() {
        writeln!(
            out,
            "{} with threads pinned only to CPUs going offline; the kernel moves such threads to every CPU \
             and does not pin them back when the CPUs return:",
            crate::render::count_of(affected.len(), "process", "processes")
        )?;
        for a in &affected {
            writeln!(
                out,
                "  pid {} ({}): {} on CPUs {}",
                a.pid,
                a.comm,
                crate::render::count(a.threads, "thread"),
                a.allowed
            )?;
        }
        if !opts.force && !opts.dry_run {
            return Err(BadInput(format!(
                "{} would lose their CPU pinning (listed above); add --force to switch anyway, \
                 and re-pin them afterwards (taskset -pc LIST PID)",
                crate::render::count_of(affected.len(), "process", "processes")
            ))
            .into());
        }
    }
    if opts.dry_run {
        writeln!(out, "dry run: would write")?;
        for w in &p.writes {
            writeln!(out, "  {}", w.shell(root))?;
        }
        writeln!(
            out,
            "after journaling the current state (online {}, smt/control {}) in {}",
            st.online,
            st.control.as_deref().unwrap_or("missing"),
            journal::dir_to_write(root).join(journal::FILE).display()
        )?;
        return Ok(());
    }
    check_writable(root, &p.writes, action)?;
    let dir = journal::dir_to_write(root);
    let _lock = journal::ChangeLock::take(&dir)?;
    let (path, journal) = journal_for_change(root, &st, action, &dir, out)?;
    writeln!(
        out,
        "journal: {} (before: online {}, smt/control {}); undo with `smtlab smt restore{}`",
        path.display(),
        journal.online,
        journal.control.as_deref().unwrap_or("missing"),
        root_flag(root)
    )?;
    out.flush()?;
    pause(opts.step_delay);
    let applied = write_all(root, &p.writes, opts.step_delay, true, out);
    if let Err(e) = applied {
        let interrupted = e.is::<Interrupted>();
        writeln!(
            out,
            "{}: putting back the journal's state",
            if interrupted {
                "interrupted".to_string()
            } else {
                format!("failed ({e:#})")
            }
        )?;
        let undo = restore_to(root, &path, &journal, out);
        return match undo {
            Ok(()) => Err(e),
            Err(u) => Err(e.context(format!(
                "and putting the state back failed too ({u:#}); the journal `{}` stays: run \
                 `smtlab smt restore`",
                path.display()
            ))),
        };
    }
    let after = state::read(root)?;
    report_after(&after, &p, out)?;
    if after.online == journal.online && after.control == journal.control {
        journal::remove(&path)?;
        writeln!(
            out,
            "the machine is back in the journal's state: journal removed"
        )?;
    }
    Ok(())
}

/// The journal to keep for this change: an existing one of this boot stays (it holds the
/// state before smtlab first changed anything); otherwise the current state is written.
fn journal_for_change(
    root: &Path,
    st: &SmtState,
    action: Action,
    dir: &Path,
    out: &mut dyn Write,
) -> Result<(std::path::PathBuf, Journal)> {
    if let Some(found) = journal::find(root, journal::OnInvalid::KeepAside)? {
        if found.journal.boot_id == state::boot_id(root) {
            writeln!(
                out,
                "keeping the journal smtlab (pid {}) wrote before its `smt {}`: restore goes back \
                 to the state before that",
                found.journal.pid, found.journal.command
            )?;
            return Ok((found.path, found.journal));
        }
        writeln!(
            out,
            "replacing the journal `{}` from an earlier boot",
            found.path.display()
        )?;
    }
    let j = Journal::new(root, st, action.name());
    let path = journal::write(dir, &j)?;
    Ok((path, j))
}

fn restore(root: &Path, opts: &Options, out: &mut dyn Write) -> Result<()> {
    // A dry run changes nothing: an invalid journal is reported, not renamed aside.
    let on_invalid = if opts.dry_run {
        journal::OnInvalid::Report
    } else {
        journal::OnInvalid::KeepAside
    };
    let Some(found) = journal::find(root, on_invalid)? else {
        let dirs: Vec<String> = journal::candidates(root)
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        writeln!(
            out,
            "smt restore: nothing to restore (no {} in {})",
            journal::FILE,
            dirs.join(" or ")
        )?;
        return Ok(());
    };
    let j = &found.journal;
    if j.boot_id != state::boot_id(root) {
        writeln!(
            out,
            "smt restore: the journal `{}` was written during an earlier boot; booting put every \
             CPU back already, so there is nothing to restore{}",
            found.path.display(),
            if opts.dry_run {
                ""
            } else {
                " (journal removed)"
            }
        )?;
        if !opts.dry_run {
            journal::remove(&found.path)?;
        }
        return Ok(());
    }
    let st = state::read(root)?;
    let p = plan::plan_restore(&st, j);
    for n in &p.notes {
        writeln!(out, "note: {n}")?;
    }
    writeln!(
        out,
        "smt restore: back to the state before smtlab's `smt {}` (pid {}): online {}, smt/control {}",
        j.command,
        j.pid,
        j.online,
        j.control.as_deref().unwrap_or("missing")
    )?;
    if let Some(why) = &p.nothing {
        writeln!(out, "{why}")?;
        if !opts.dry_run {
            journal::remove(&found.path)?;
            writeln!(out, "journal removed")?;
        }
        return Ok(());
    }
    if !p.going_offline.is_empty() {
        let affected = plan::affected(&read_tasks(root), &p.online_after, &p.going_offline);
        for a in &affected {
            writeln!(
                out,
                "warning: pid {} ({}) is pinned only to CPUs {} that go offline again",
                a.pid, a.comm, a.allowed
            )?;
        }
    }
    if opts.dry_run {
        writeln!(out, "dry run: would write")?;
        for w in &p.writes {
            writeln!(out, "  {}", w.shell(root))?;
        }
        return Ok(());
    }
    check_writable(root, &p.writes, Action::Restore)?;
    let _lock = journal::ChangeLock::take(found.path.parent().unwrap_or(Path::new("/")))?;
    restore_to(root, &found.path, j, out)?;
    let after = state::read(root)?;
    writeln!(
        out,
        "done: smt/control {}, {}",
        after.control.as_deref().unwrap_or("missing"),
        threads_phrase(&after)
    )?;
    Ok(())
}

/// Puts back `journal`'s state: the control first, then (from the state it left) each CPU.
/// Ctrl-C is not checked here: finishing is the consistent way out. Removes the journal
/// once the state matches it.
fn restore_to(root: &Path, path: &Path, journal: &Journal, out: &mut dyn Write) -> Result<()> {
    let st = state::read(root)?;
    if let Some(w) = plan::restore_control(&st, journal) {
        write_all(root, std::slice::from_ref(&w), Duration::ZERO, false, out)?;
    }
    let st = state::read(root)?;
    let (writes, notes) = plan::restore_cpus(&st.online, journal, &st.switchable);
    for n in notes {
        writeln!(out, "note: {n}")?;
    }
    write_all(root, &writes, Duration::ZERO, false, out)?;
    let after = state::read(root)?;
    let reachable = journal.online.intersection(&after.switchable);
    let want_fixed = after.online.difference(&after.switchable);
    if after.online != reachable.union(&want_fixed) {
        anyhow::bail!(
            "after restoring, online is {} but the journal recorded {}; the journal `{}` stays",
            after.online,
            journal.online,
            path.display()
        );
    }
    journal::remove(path)?;
    writeln!(out, "restored online {}; journal removed", after.online)?;
    Ok(())
}

/// Writes each value in order, printing it. `interruptible`: stop with `Interrupted` when
/// Ctrl-C arrived before a write (never within one, and not after the last).
fn write_all(
    root: &Path,
    writes: &[SysWrite],
    step_delay: Duration,
    interruptible: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let dir = state::cpu_dir(root);
    for (i, w) in writes.iter().enumerate() {
        if interruptible {
            crate::interrupt::check()?;
        }
        let path = dir.join(w.target.rel_path());
        // Into the sysfs file itself, not `crate::fsutil::replace`: the write is a request to
        // the kernel. No `create`: a CPU without an online file is never given one.
        let res = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            // Never blocking on a FIFO planted in a copied tree (ENXIO at once, fifo(7)).
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{}\n", w.value).as_bytes()));
        if let Err(e) = res {
            let msg = format!("writing `{}` to `{}`: {e}", w.value, path.display());
            return Err(match e.kind() {
                std::io::ErrorKind::PermissionDenied => NeedsPrivilege(msg).into(),
                _ => anyhow::anyhow!(msg),
            });
        }
        writeln!(out, "{}", w.shell(root))?;
        out.flush()?;
        // Ctrl-C after the last write leaves the finished change in place.
        if interruptible && i + 1 < writes.len() {
            pause(step_delay);
        }
    }
    Ok(())
}

/// Sleeps `d` in short steps, ending early on Ctrl-C.
fn pause(d: Duration) {
    let end = std::time::Instant::now() + d;
    while std::time::Instant::now() < end && !crate::interrupt::requested() {
        std::thread::sleep(Duration::from_millis(20).min(d));
    }
}

/// Refuses before anything changes when a file to write is not writable: exit 4 for
/// permissions, 3 for a read-only sysfs (a container).
fn check_writable(root: &Path, writes: &[SysWrite], action: Action) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let dir = state::cpu_dir(root);
    for w in writes {
        let path = dir.join(w.target.rel_path());
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .context("a path with a NUL byte")?;
        // SAFETY: access() on a valid NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
            continue;
        }
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EROFS) => NotPossible(format!(
                "`{}` is on a read-only file system (a container's sysfs?): SMT cannot be \
                 switched from here",
                path.display()
            ))
            .into(),
            Some(libc::EACCES | libc::EPERM) => NeedsPrivilege(format!(
                "switching SMT writes `{}`, which this user may not write: run `sudo smtlab smt \
                 {}`{} (or add --dry-run to see the writes)",
                path.display(),
                action.name(),
                root_flag(root)
            ))
            .into(),
            _ => anyhow::anyhow!("cannot write `{}`: {e}", path.display()),
        });
    }
    Ok(())
}

/// ` --sysfs-root DIR` when the root is not `/`, for commands printed to the user.
fn root_flag(root: &Path) -> String {
    if journal::is_live(root) {
        String::new()
    } else {
        format!(" --sysfs-root {}", root.display())
    }
}

fn summary(st: &SmtState, p: &Plan) -> String {
    let how = match p.writes.first().map(|w| &w.target) {
        Some(plan::Target::Control) => "through smt/control",
        _ => "through cpuN/online",
    };
    let mut parts = Vec::new();
    if !p.going_offline.is_empty() {
        parts.push(format!(
            "CPUs {} go offline, {} stay online",
            p.going_offline, p.online_after
        ));
    }
    if !p.coming_online.is_empty() {
        parts.push(format!("CPUs {} come online", p.coming_online));
    }
    format!(
        "{} {how} (smt/control {})",
        parts.join("; "),
        st.control.as_deref().unwrap_or("missing")
    )
}

fn threads_phrase(st: &SmtState) -> String {
    if st.cmt_modules {
        return "one thread per core (the sibling pairs are CMT modules of two cores)".into();
    }
    let least = st.cores.iter().map(CpuSet::len).min().unwrap_or(1);
    match st.threads_per_core() {
        1 => "one thread per core".into(),
        n if n == least => format!("{n} threads per core"),
        n => format!("{least} to {n} threads per core"),
    }
}

fn report_after(after: &SmtState, p: &Plan, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "done: online {}, smt/control {}, {}",
        after.online,
        after.control.as_deref().unwrap_or("missing"),
        threads_phrase(after)
    )?;
    if after.online != p.online_after {
        writeln!(
            out,
            "note: expected online {}; the kernel left {}",
            p.online_after, after.online
        )?;
    }
    Ok(())
}

/// Every user task's allowed CPUs, from `<root>/proc/*/task/*/status`. Kernel threads are
/// left out: the per-CPU ones are parked by the hotplug code, not re-pinned
/// (Documentation/core-api/cpu_hotplug.rst).
pub fn read_tasks(root: &Path) -> Vec<TaskAffinity> {
    let proc = root.join("proc");
    let me = std::process::id();
    let mut tasks = Vec::new();
    let Ok(rd) = std::fs::read_dir(&proc) else {
        return tasks;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me || is_kernel_thread(&e.path()) {
            continue;
        }
        let Ok(trd) = std::fs::read_dir(e.path().join("task")) else {
            continue;
        };
        for t in trd.flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(text) = crate::fsutil::read_kernel_text(t.path().join("status")) else {
                continue;
            };
            if let Some((comm, allowed)) = parse_status(&text) {
                tasks.push(TaskAffinity {
                    pid,
                    tid,
                    comm,
                    allowed,
                });
            }
        }
    }
    tasks
}

/// `Name` and `Cpus_allowed_list` from a `/proc/PID/status` text.
pub fn parse_status(text: &str) -> Option<(String, CpuSet)> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let allowed = CpuSet::parse_list(field("Cpus_allowed_list")?).ok()?;
    Some((field("Name").unwrap_or("?").to_string(), allowed))
}

/// True for a kernel thread: `PF_KTHREAD` (0x00200000, include/linux/sched.h) in the
/// flags field of `/proc/PID/stat` (proc(5)).
fn is_kernel_thread(pid_dir: &Path) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    let Ok(stat) = crate::fsutil::read_kernel_text(pid_dir.join("stat")) else {
        return false;
    };
    // Fields after the command name, which is in parentheses and may hold spaces.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return false;
    };
    rest.split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|flags| flags & PF_KTHREAD != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        let s = "Name:\tpostgres\nUmask:\t0077\nCpus_allowed:\t2\nCpus_allowed_list:\t1\n";
        let (name, allowed) = parse_status(s).unwrap();
        assert_eq!(name, "postgres");
        assert_eq!(allowed, CpuSet::from_cpus([1]));
        assert!(parse_status("Name:\tx\n").is_none());
    }

    #[test]
    fn kernel_threads_by_their_flag() {
        let t = tempfile::tempdir().unwrap();
        // kworker: flags 0x04208060 has PF_KTHREAD.
        std::fs::write(
            t.path().join("stat"),
            "7 (kworker/0:0 x) I 2 0 0 0 -1 69238880 0 0",
        )
        .unwrap();
        assert!(is_kernel_thread(t.path()));
        std::fs::write(t.path().join("stat"), "9 (bash) S 1 9 9 34816 9 4194560 0").unwrap();
        assert!(!is_kernel_thread(t.path()));
    }
}
