//! A QEMU guest with a real Linux kernel and real SMT siblings, for tests.
//!
//! This machine (and CI) has no SMT siblings, but a QEMU guest under TCG with an Intel CPU
//! model shows them: `-cpu Skylake-Client -smp 8,sockets=2,cores=2,threads=2` gives
//! `thread_siblings_list` 0-1, 2-3, … and a working `smt/control`. AMD models and `qemu64`
//! show no siblings without `topoext`; nested KVM does not boot here, TCG does.
//!
//! A guest boots Debian's kernel (unpacked by `tests/guest/fetch-kernel.sh`) with an
//! initramfs made of two concatenated cpio archives (the kernel unpacks each in turn,
//! Documentation/driver-api/early-userspace/buffer-format.rst): a base one built once per
//! test process (static busybox, the smtlab binary and the libraries `ldd` lists), and a
//! small one per guest holding `/init` and the commands. `/init` runs each command with
//! `sh` in a session of its own (stopped with SIGTERM, then SIGKILL, after half the guest's
//! time limit), then prints its stdout, stderr and exit code base64-encoded between markers on
//! the serial console, prints the files asked for the same way, and powers off.
//!
//! **Timing.** Inside an ordinary guest timing is emulated and means nothing about SMT: the
//! host scheduler puts the vCPU threads wherever it likes, so two "siblings" may run on two
//! host CPUs or take turns on one. Tests of such guests assert behaviour (placements, state,
//! cleanup), never speed.
//!
//! Timing becomes meaningful exactly when the vCPU threads are pinned ([`run_pinned_guest`],
//! [`pin`]): each vCPU is one host thread (`CPU n/TCG`), and pinned with
//! `sched_setaffinity(2)` the guest's siblings are a known physical fact. Siblings on
//! separate host CPUs are perfect SMT (each thread of a core runs at full speed: yield ≈ 2);
//! siblings on one host CPU are SMT that adds nothing (they take turns: yield ≈ 1, a thread
//! on a shared core ≈ 0.5×). Such a guest is a machine whose answer is known, so the
//! tool's measurements and answer table can be checked against the truth. QEMU is started
//! paused (`-S`), pinned, then resumed through its monitor, so no guest code runs unpinned.
//! QEMU's other threads (main loop: timers and devices for the vCPUs) go to host CPUs no
//! vCPU uses when the host has any; on a host with no spare CPU they share the vCPUs' CPUs
//! and their cost is measured and printed beside each command ([`pin::Window`]).
//!
//! **One at a time.** Guests boot one at a time (the host has 2 CPUs and TCG uses a thread
//! per vCPU). A pinned guest also needs the host to itself: every test of this binary holds
//! [`shared`] while it runs, and a known-answer test holds [`exclusive`], so nothing else of
//! the binary runs beside it.
//!
//! **Soft lockups.** A guest whose kernel reports a soft lockup is stopped and booted once
//! more (see [`run_guest`]).

#![allow(dead_code)] // each test binary uses part of the harness

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

pub mod pin;

pub use pin::VcpuPins;

/// A guest's CPU topology, as QEMU is asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub sockets: u32,
    pub cores: u32,
    pub threads: u32,
    /// NUMA nodes (0 = none declared); CPUs and memory are split evenly and contiguously.
    pub numa_nodes: u32,
}

impl Shape {
    pub const fn new(sockets: u32, cores: u32, threads: u32, numa_nodes: u32) -> Self {
        Shape {
            sockets,
            cores,
            threads,
            numa_nodes,
        }
    }

    /// Logical CPUs.
    pub fn cpus(&self) -> u32 {
        self.sockets * self.cores * self.threads
    }

    /// Memory given to the guest, MiB.
    pub fn memory_mib(&self) -> u32 {
        1024
    }

    /// The `-smp`, `-m` and NUMA arguments.
    pub fn qemu_args(&self) -> Vec<String> {
        let mut a = vec![
            "-smp".to_string(),
            format!(
                "{},sockets={},cores={},threads={}",
                self.cpus(),
                self.sockets,
                self.cores,
                self.threads
            ),
            "-m".into(),
            format!("{}M", self.memory_mib()),
        ];
        if let (Some(per_cpu), Some(per_mem)) = (
            self.cpus().checked_div(self.numa_nodes),
            self.memory_mib().checked_div(self.numa_nodes),
        ) {
            for n in 0..self.numa_nodes {
                a.push("-object".into());
                a.push(format!("memory-backend-ram,id=m{n},size={per_mem}M"));
                a.push("-numa".into());
                a.push(format!(
                    "node,nodeid={n},cpus={}-{},memdev=m{n}",
                    n * per_cpu,
                    (n + 1) * per_cpu - 1
                ));
            }
        }
        a
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.sockets, self.cores, self.threads)?;
        if self.numa_nodes > 0 {
            write!(f, " ({} NUMA nodes)", self.numa_nodes)?;
        }
        Ok(())
    }
}

/// What a guest needs from the host.
#[derive(Debug, Clone)]
pub struct Prereqs {
    pub qemu: PathBuf,
    pub busybox: PathBuf,
    pub cpio: PathBuf,
    pub kernel: PathBuf,
}

/// Where the fetch script unpacks the kernel, under the target directory.
pub fn kernel_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/smt-guest/kernel/boot")
}

fn on_path(path_env: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path_env)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Finds QEMU, a static busybox, cpio and a kernel, or says what to install. `path_env` is
/// the `PATH` to search; `kernel` is `$SMTLAB_GUEST_KERNEL` if set; `kernel_dir` is where
/// `fetch-kernel.sh` unpacks one.
pub fn find_prereqs(
    path_env: &OsStr,
    kernel: Option<&OsStr>,
    kernel_dir: &Path,
) -> Result<Prereqs, String> {
    let mut missing = Vec::new();
    let qemu = on_path(path_env, "qemu-system-x86_64");
    if qemu.is_none() {
        missing.push("qemu-system-x86_64 (apt-get install qemu-system-x86)".to_string());
    }
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| on_path(path_env, "busybox"));
    if busybox.is_none() {
        missing.push("a static busybox (apt-get install busybox-static)".into());
    }
    let cpio = on_path(path_env, "cpio");
    if cpio.is_none() {
        missing.push("cpio (apt-get install cpio)".into());
    }
    let kernel = match kernel {
        Some(k) => {
            let p = PathBuf::from(k);
            if !p.is_file() {
                missing.push(format!(
                    "the kernel SMTLAB_GUEST_KERNEL names ({}) does not exist",
                    p.display()
                ));
            }
            Some(p)
        }
        None => std::fs::read_dir(kernel_dir)
            .ok()
            .and_then(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz"))
                    })
                    .max()
            })
            .or_else(|| {
                missing.push(format!(
                    "a kernel: run tests/guest/fetch-kernel.sh (it unpacks Debian's into {}), or set SMTLAB_GUEST_KERNEL",
                    kernel_dir.display()
                ));
                None
            }),
    };
    match (qemu, busybox, cpio, kernel) {
        (Some(qemu), Some(busybox), Some(cpio), Some(kernel)) if missing.is_empty() => {
            Ok(Prereqs {
                qemu,
                busybox,
                cpio,
                kernel,
            })
        }
        _ => Err(format!("SMT guest tests need {}", missing.join("; "))),
    }
}

/// The prerequisites of this machine, or None after printing why the test is skipped.
/// With `SMTLAB_REQUIRE_GUESTS=1` (CI) a missing prerequisite fails the test instead.
pub fn prereqs_or_skip() -> Option<Prereqs> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kernel = std::env::var_os("SMTLAB_GUEST_KERNEL");
    match find_prereqs(&path, kernel.as_deref(), &kernel_dir()) {
        Ok(p) => Some(p),
        Err(why) => skip(&why),
    }
}

/// Prints why the test is skipped and returns None; with `SMTLAB_REQUIRE_GUESTS=1` (CI)
/// fails the test with the reason instead.
pub fn skip<T>(why: &str) -> Option<T> {
    crate::skip::skip(crate::skip::Need::Guests, why);
    None
}

/// The host CPUs a known-answer guest of `n` host CPUs runs on: the first `n` this process
/// may use (`sched_getaffinity(2)`, online ones only), or None after saying why not (see
/// [`skip`]).
pub fn host_cpus_or_skip(n: usize) -> Option<Vec<usize>> {
    match pin::affinity(0) {
        Ok(cpus) if cpus.len() >= n => Some(cpus.into_iter().take(n).collect()),
        Ok(cpus) => skip(&format!(
            "a known-answer guest needs {n} host CPUs to pin its vCPU threads to; this process may use {} ({cpus:?})",
            cpus.len()
        )),
        Err(e) => skip(&format!("cannot read this process's CPUs: {e}")),
    }
}

/// Every test of a guest test binary holds this while it runs; see [`exclusive`].
static HOST: RwLock<()> = RwLock::new(());

/// Held by an ordinary test: others like it may run beside it, a known-answer one may not.
pub struct Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>);

/// Held by a known-answer test: no other test of the binary runs while it is held.
pub struct Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>);

/// Waits until no known-answer test runs, then lets the caller run beside other ordinary
/// tests. Take it first thing in every test of the binary.
pub fn shared() -> Shared {
    Shared(HOST.read().unwrap_or_else(|e| e.into_inner()))
}

/// Waits until no other test of the binary runs, and keeps them waiting until dropped: a
/// pinned guest's timing is only its own when nothing else shares the host CPUs.
pub fn exclusive() -> Exclusive {
    Exclusive(HOST.write().unwrap_or_else(|e| e.into_inner()))
}

/// One command to run in the guest with `sh -c`.
#[derive(Debug, Clone)]
pub struct GuestCommand {
    pub name: String,
    pub shell: String,
}

/// `GuestCommand` from a name and a shell line.
pub fn cmd(name: impl Into<String>, shell: impl Into<String>) -> GuestCommand {
    GuestCommand {
        name: name.into(),
        shell: shell.into(),
    }
}

/// What one command printed and how it ended.
#[derive(Debug, Clone, Default)]
pub struct CmdOutput {
    pub name: String,
    pub shell: String,
    pub stdout: String,
    pub stderr: String,
    /// None when the guest never reported an exit code (it died or timed out).
    pub code: Option<i32>,
}

impl CmdOutput {
    /// Asserts exit code `code`, showing everything on failure.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "`{}` in the guest exited {:?}, expected {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.shell,
            self.code,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Asserts exit 0.
    pub fn ok(&self) -> &Self {
        self.expect_code(0)
    }

    /// Its stdout as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "`{}`: stdout is not JSON ({e})\n--- stdout\n{}\n--- stderr\n{}",
                self.shell, self.stdout, self.stderr
            )
        })
    }
}

/// Everything one guest boot produced.
#[derive(Debug, Clone, Default)]
pub struct GuestRun {
    pub commands: Vec<CmdOutput>,
    /// Files asked for, by guest path; absent when the file did not exist.
    pub files: BTreeMap<String, Vec<u8>>,
    /// The whole serial console, for failure messages.
    pub serial: String,
    pub wall: Duration,
    /// A pinned guest: its pins and what the host did during each command.
    pub host: Option<pin::HostUse>,
}

impl GuestRun {
    /// The output of the command named `name`.
    pub fn cmd(&self, name: &str) -> &CmdOutput {
        self.commands
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "no output for `{name}` from the guest; serial console tail:\n{}",
                    tail(&self.serial, 60)
                )
            })
    }

    /// What the host did during each command of a pinned guest, one line each.
    pub fn host_report(&self) -> String {
        let Some(h) = &self.host else {
            return "not pinned: the host scheduler placed the vCPU threads".into();
        };
        let mut s = format!("{h}\n");
        for w in &h.windows {
            let name = self
                .commands
                .get(w.command)
                .map_or("?", |c| c.name.as_str());
            s.push_str(&format!("  {name}: {w}\n"));
        }
        for stray in &h.strays {
            s.push_str(&format!("  {stray}\n"));
        }
        s
    }

    /// A collected file as text.
    pub fn file(&self, path: &str) -> String {
        let b = self.files.get(path).unwrap_or_else(|| {
            panic!(
                "the guest wrote no {path}; serial tail:\n{}",
                tail(&self.serial, 40)
            )
        });
        String::from_utf8_lossy(b).into_owned()
    }
}

fn tail(s: &str, lines: usize) -> String {
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

/// Guests run one at a time: the host has 2 cores and TCG uses one thread per vCPU.
static ONE_GUEST: Mutex<()> = Mutex::new(());

/// The base initramfs (busybox, smtlab, its libraries), built once per test process.
static BASE: OnceLock<Result<PathBuf, String>> = OnceLock::new();

fn base_initramfs(p: &Prereqs) -> Result<PathBuf, String> {
    BASE.get_or_init(|| build_base(p)).clone()
}

fn build_base(p: &Prereqs) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("smtlab-guest-base-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("root");
    for d in ["bin", "proc", "sys", "dev", "tmp", "run"] {
        std::fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
    }
    std::fs::copy(&p.busybox, root.join("bin/busybox")).map_err(|e| e.to_string())?;
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_smtlab"));
    std::fs::copy(&bin, root.join("bin/smtlab")).map_err(|e| e.to_string())?;
    // The dynamic libraries the binary needs, at the same paths (`ldd` lists them).
    let ldd = Command::new("ldd")
        .arg(&bin)
        .output()
        .map_err(|e| format!("running ldd: {e}"))?;
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let path = match line.split_once("=>") {
            Some((_, r)) => r.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        let Some(path) = path.filter(|p| p.starts_with('/')) else {
            continue;
        };
        let src = Path::new(path);
        let dst = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(dst.parent().unwrap()).map_err(|e| e.to_string())?;
        // Copy the file itself, following symlinks, under the name the binary asks for.
        std::fs::copy(src, &dst).map_err(|e| format!("copying {path}: {e}"))?;
    }
    let out = dir.join("base.cpio");
    cpio(p, &root, &out)?;
    Ok(out)
}

/// Packs `root` into a `newc` cpio archive at `out`.
fn cpio(p: &Prereqs, root: &Path, out: &Path) -> Result<(), String> {
    let list = Command::new("find")
        .arg(".")
        .current_dir(root)
        .output()
        .map_err(|e| format!("find: {e}"))?;
    let mut child = Command::new(&p.cpio)
        .args(["-o", "-H", "newc", "--quiet"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(
            std::fs::File::create(out).map_err(|e| e.to_string())?,
        ))
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cpio: {e}"))?;
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&list.stdout)
        .map_err(|e| e.to_string())?;
    let st = child.wait_with_output().map_err(|e| e.to_string())?;
    if !st.status.success() {
        return Err(format!(
            "cpio failed: {}",
            String::from_utf8_lossy(&st.stderr)
        ));
    }
    Ok(())
}

/// The per-guest `/init`: mount, run every command, print outputs and files between
/// markers, power off. Each command runs in the foreground (signals at their defaults, as
/// a user's shell leaves them) in a session of its own; still running after `cmd_limit`
/// of guest time, its process group gets SIGTERM, then SIGKILL 15 s later, and its output
/// is read once the group is gone (up to 20 s). One hung command then ends with its own
/// stderr (an interrupted run says where it was; no answer to SIGTERM shows as exit code
/// 137) instead of taking the whole guest's time.
fn init_script(n_cmds: usize, files: &[&str], cmd_limit: Duration) -> String {
    let secs = cmd_limit.as_secs().max(1);
    let mut s = String::from(
        "#!/bin/busybox sh\n\
         /bin/busybox --install -s /bin\n\
         export PATH=/bin HOME=/tmp TMPDIR=/tmp\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         mount -t tmpfs tmpfs /tmp\n\
         mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null\n\
         dmesg -n 1\n\
         cd /tmp\n\
         echo @@SMTLAB-BOOTED\n",
    );
    for i in 0..n_cmds {
        // The start marker carries the guest's uptime, so a time-out can say which
        // command was running and how long each before it took.
        s.push_str(&format!(
            "echo \"@@SMTLAB-START {i} $(cut -d' ' -f1 /proc/uptime)\"\n\
             setsid sh -c \"sleep {secs}; p=\\$(cat /tmp/.pid); kill -TERM -\\$p; sleep 15; kill -KILL -\\$p\" 2>/dev/null & w=$!\n\
             setsid sh -c 'echo $$ >/tmp/.pid; exec sh /cmds/{i}' >/tmp/.o 2>/tmp/.e; c=$?\n\
             p=$(cat /tmp/.pid); n=0\n\
             while kill -0 -$p 2>/dev/null && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done\n\
             kill -KILL -$w 2>/dev/null\n\
             echo @@SMTLAB-OUT {i}; base64 /tmp/.o; echo @@SMTLAB-END\n\
             echo @@SMTLAB-ERR {i}; base64 /tmp/.e; echo @@SMTLAB-END\n\
             echo @@SMTLAB-CODE {i} $c\n"
        ));
    }
    for (i, f) in files.iter().enumerate() {
        s.push_str(&format!(
            "if [ -f '{f}' ]; then echo @@SMTLAB-FILE {i}; base64 '{f}'; echo @@SMTLAB-END; fi\n"
        ));
    }
    s.push_str("echo @@SMTLAB-DONE\npoweroff -f\n");
    s
}

/// Kills QEMU if the test ends early (a panic, a time-out).
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Boots a guest of `shape`, runs `cmds` in order, collects `files`, powers off. Panics
/// with the serial console's tail when the guest does not finish within `limit`. The
/// host scheduler places the vCPU threads: timing means nothing (see the module doc).
///
/// A guest whose kernel reports a soft lockup is booted once more, saying so: under QEMU's
/// TCG a CPU waiting for the others to acknowledge an IPI (kernel text patching when a
/// static key flips, e.g. when tracefs events are enabled) has been seen to wait for good
/// while busy vCPUs spin, which is the emulator stalling, not a result of the command.
/// A second lockup fails the test.
pub fn run_guest(
    _host: &Shared,
    p: &Prereqs,
    shape: Shape,
    cmds: &[GuestCommand],
    files: &[&str],
    limit: Duration,
) -> GuestRun {
    boot(p, shape, None, cmds, files, limit, None).unwrap_or_else(|f| match f {
        Failed::Unpinned(why) | Failed::Froze(why) => panic!("{why}"),
    })
}

/// As [`run_guest`], with each vCPU thread pinned to the host CPU `pins` gives it before
/// the guest runs its first instruction: a machine whose SMT behaviour is known. None
/// after saying why (see [`skip`]) when the pins cannot be applied (`sched_setaffinity`
/// refused, or QEMU's vCPU threads were not found).
pub fn run_pinned_guest(
    host: &Exclusive,
    p: &Prereqs,
    shape: Shape,
    pins: &VcpuPins,
    cmds: &[GuestCommand],
    files: &[&str],
    limit: Duration,
) -> Option<GuestRun> {
    try_run_pinned_guest(host, p, shape, pins, cmds, files, limit, None)
        .map(|r| r.unwrap_or_else(|why| panic!("{why}")))
}

/// As [`run_pinned_guest`], but a guest whose emulated machine froze or reported a soft
/// lockup on both tries, or was still running at `deadline` (QEMU is killed then, and a
/// freeze is not booted again when a second boot could not end by it), is `Err` with
/// what the console showed, for a caller that counts such a boot as not judged rather
/// than failed: the emulator stalled or the host was too slow, so no command's answer was
/// seen, right or wrong (a hung command is stopped at its own limit instead).
#[allow(clippy::too_many_arguments)]
pub fn try_run_pinned_guest(
    _host: &Exclusive,
    p: &Prereqs,
    shape: Shape,
    pins: &VcpuPins,
    cmds: &[GuestCommand],
    files: &[&str],
    limit: Duration,
    deadline: Option<Instant>,
) -> Option<Result<GuestRun, String>> {
    match boot(p, shape, Some(pins), cmds, files, limit, deadline) {
        Ok(run) => Some(Ok(run)),
        Err(Failed::Unpinned(why)) => skip(&why),
        Err(Failed::Froze(why)) => Some(Err(why)),
    }
}

/// Why a guest gave no run.
enum Failed {
    /// The vCPU threads could not be pinned.
    Unpinned(String),
    /// A soft lockup or a freeze, then another on the second boot; or a guest still running
    /// at the caller's deadline.
    Froze(String),
}

/// Why a boot stopped before the end.
enum Stop {
    /// The kernel reported a soft lockup: the console line, progress and tail.
    SoftLockup(String),
    /// The guest used its CPU time and still did not finish: the vCPUs ran but nothing
    /// moved, not even a command's time limit (which would have stopped a hung command and
    /// gone on), as when the kernel froze before /init (seen once: nothing after
    /// "Booting from ROM..." in 600 s). The progress, the reason and the tail.
    Frozen(String),
    /// The vCPU threads could not be pinned.
    Unpinned(String),
    /// The guest was still running at the caller's deadline: progress and tail.
    OutOfTime(String),
}

/// One guest, booted once more after a soft lockup or a freeze (the emulated machine's,
/// not the commands': a hung command is stopped at its own limit). Twice is
/// [`Failed::Froze`], as is a guest still running at `deadline`, or one that froze when a
/// second boot's `limit` would run past it.
fn boot(
    p: &Prereqs,
    shape: Shape,
    pins: Option<&VcpuPins>,
    cmds: &[GuestCommand],
    files: &[&str],
    limit: Duration,
    deadline: Option<Instant>,
) -> Result<GuestRun, Failed> {
    let _one = ONE_GUEST.lock().unwrap_or_else(|e| e.into_inner());
    match attempt(p, shape, pins, cmds, files, limit, deadline) {
        Ok(run) => Ok(run),
        Err(Stop::Unpinned(why)) => Err(Failed::Unpinned(why)),
        Err(Stop::OutOfTime(why)) => Err(Failed::Froze(why)),
        Err(Stop::SoftLockup(first) | Stop::Frozen(first)) => {
            if deadline.is_some_and(|d| Instant::now() + limit > d) {
                return Err(Failed::Froze(format!(
                    "the {shape} guest's kernel reported a soft lockup or froze, and another boot could not end within the time left\n{first}"
                )));
            }
            eprintln!(
                "the {shape} guest's kernel reported a soft lockup or froze; booting it once more\n{first}"
            );
            match attempt(p, shape, pins, cmds, files, limit, deadline) {
                Ok(run) => Ok(run),
                Err(Stop::Unpinned(why)) => Err(Failed::Unpinned(why)),
                Err(Stop::OutOfTime(why)) => Err(Failed::Froze(why)),
                Err(Stop::SoftLockup(second) | Stop::Frozen(second)) => {
                    Err(Failed::Froze(format!(
                        "the {shape} guest's kernel reported a soft lockup or froze twice\nfirst boot:\n{first}\nsecond boot:\n{second}"
                    )))
                }
            }
        }
    }
}

/// The console line of a soft lockup, when the kernel has reported one.
fn soft_lockup(serial: &str) -> Option<&str> {
    serial.lines().find(|l| l.contains("BUG: soft lockup"))
}

/// What the console reader tells the boot loop.
enum Event {
    /// `/init` is about to run command `i`.
    Start(usize),
    /// Command `i` has exited (its output follows).
    End(usize),
}

/// The marker events of one complete console line.
fn event(line: &[u8]) -> Option<Event> {
    let line = String::from_utf8_lossy(line);
    let idx = |tag: &str| -> Option<usize> {
        let at = line.find(tag)? + tag.len();
        line[at..].split_whitespace().next()?.parse().ok()
    };
    idx("@@SMTLAB-START ")
        .map(Event::Start)
        .or_else(|| idx("@@SMTLAB-OUT ").map(Event::End))
}

/// QEMU's monitor socket, after QEMU made it.
fn connect_monitor(
    path: &Path,
    qemu: &mut Child,
) -> Result<std::os::unix::net::UnixStream, String> {
    let t0 = Instant::now();
    loop {
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(s) => return Ok(s),
            Err(e) => {
                if let Ok(Some(st)) = qemu.try_wait() {
                    return Err(format!("QEMU exited ({st}) before its monitor opened"));
                }
                if t0.elapsed() > Duration::from_secs(30) {
                    return Err(format!("QEMU's monitor {}: {e}", path.display()));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// One boot: the run, or (Err) what stopped it. QEMU is killed at `deadline` whatever the
/// guest is doing.
fn attempt(
    p: &Prereqs,
    shape: Shape,
    pins: Option<&VcpuPins>,
    cmds: &[GuestCommand],
    files: &[&str],
    limit: Duration,
    deadline: Option<Instant>,
) -> Result<GuestRun, Stop> {
    let base = base_initramfs(p).unwrap_or_else(|e| panic!("building the initramfs: {e}"));
    let work = tempfile::tempdir().unwrap();
    let extra = work.path().join("extra");
    std::fs::create_dir_all(extra.join("cmds")).unwrap();
    for (i, c) in cmds.iter().enumerate() {
        std::fs::write(extra.join(format!("cmds/{i}")), format!("{}\n", c.shell)).unwrap();
    }
    let init = extra.join("init");
    // Half the guest's time per command, so one hung command leaves time for the rest;
    // SMTLAB_GUEST_CMD_LIMIT (seconds) sets it by hand.
    let cmd_limit = std::env::var("SMTLAB_GUEST_CMD_LIMIT")
        .ok()
        .map(|v| {
            Duration::from_secs(
                v.parse()
                    .expect("SMTLAB_GUEST_CMD_LIMIT: a whole number of seconds"),
            )
        })
        .unwrap_or(limit / 2);
    std::fs::write(&init, init_script(cmds.len(), files, cmd_limit)).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&init, std::fs::Permissions::from_mode(0o755)).unwrap();
    let extra_cpio = work.path().join("extra.cpio");
    cpio(p, &extra, &extra_cpio).unwrap();
    // Concatenated archives: the kernel unpacks the base, then /init and the commands.
    let img = work.path().join("initramfs.cpio");
    let mut bytes = std::fs::read(&base).unwrap();
    bytes.extend(std::fs::read(&extra_cpio).unwrap());
    std::fs::write(&img, bytes).unwrap();

    let monitor = work.path().join("monitor.sock");
    let mut qemu = Command::new(&p.qemu);
    qemu.args(["-accel", "tcg,thread=multi", "-cpu", "Skylake-Client"])
        .args(shape.qemu_args())
        // Names the vCPU threads `CPU n/TCG`, so they can be found and pinned.
        .arg("-name")
        .arg(format!(
            "guest=smtlab-{}x{}x{},debug-threads=on",
            shape.sockets, shape.cores, shape.threads
        ))
        .arg("-kernel")
        .arg(&p.kernel)
        .arg("-initrd")
        .arg(&img)
        .arg("-append")
        .arg(
            // SMTLAB_GUEST_KERNEL_ARGS adds to the kernel command line (by hand, e.g.
            // `loglevel=7` to see a soft lockup's stack).
            match std::env::var("SMTLAB_GUEST_KERNEL_ARGS") {
                Ok(more) => format!("console=ttyS0 quiet loglevel=0 panic=-1 {more}"),
                Err(_) => "console=ttyS0 quiet loglevel=0 panic=-1".into(),
            },
        )
        .args([
            "-nographic",
            "-no-reboot",
            "-nodefaults",
            "-serial",
            "stdio",
        ]);
    if pins.is_some() {
        // Paused until pinned: `cont` on the monitor starts the vCPUs.
        qemu.arg("-S")
            .arg("-monitor")
            .arg(format!("unix:{},server=on,wait=off", monitor.display()));
    }
    let t0 = Instant::now();
    let mut child = qemu
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", p.qemu.display()));
    let pid = child.id();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut kill = Kill(child);
    // A pinned guest: the pins applied, the monitor kept open until the end.
    let mut pinned = None;
    if let Some(pins) = pins {
        let applied = (|| {
            let allowed = pin::affinity(0)?;
            let mut mon = connect_monitor(&monitor, &mut kill.0)?;
            let done = pin::pin_qemu(pid, shape.cpus(), pins, &allowed, Duration::from_secs(30))?;
            use std::io::Write;
            mon.write_all(b"cont\n")
                .map_err(|e| format!("resuming QEMU through its monitor: {e}"))?;
            Ok::<_, String>((
                mon,
                done.vcpus,
                pin::HostUse {
                    pins: pins.clone(),
                    others_on: done.others_on,
                    others_kept_off: done.others_kept_off,
                    windows: Vec::new(),
                    strays: Vec::new(),
                },
            ))
        })();
        match applied {
            Ok(a) => pinned = Some(a),
            Err(why) => {
                drop(kill);
                return Err(Stop::Unpinned(format!(
                    "the {shape} guest's vCPU threads could not be pinned ({pins}): {why}"
                )));
            }
        }
    }
    // The console is collected as it arrives, so a guest that runs out of time still
    // shows how far it got.
    // `SMTLAB_GUEST_CONSOLE=FILE` copies it there as it comes, to watch a guest live.
    let console = std::sync::Arc::new(Mutex::new(Vec::new()));
    let mut copy =
        std::env::var_os("SMTLAB_GUEST_CONSOLE").and_then(|f| std::fs::File::create(f).ok());
    // Marker events as their lines arrive; the channel closes with the console.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let console = console.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            let mut line = Vec::new();
            loop {
                match stdout.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if let Some(f) = copy.as_mut() {
                            use std::io::Write;
                            let _ = f.write_all(&chunk[..n]);
                        }
                        for &b in &chunk[..n] {
                            if b == b'\n' {
                                if let Some(e) = event(&line) {
                                    let _ = tx.send(e);
                                }
                                line.clear();
                            } else if line.len() < 256 {
                                line.push(b);
                            }
                        }
                        console
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .extend_from_slice(&chunk[..n])
                    }
                }
            }
        });
    }
    let err_thread = std::thread::spawn(move || {
        let mut buf = String::new();
        let _ = stderr.read_to_string(&mut buf);
        buf
    });
    // Waits for the console to close, looking each second for a soft lockup (and, pinned,
    // for a vCPU thread off its host CPU); a pinned guest's host is read at each command's
    // start and end.
    let mut starts: BTreeMap<usize, pin::Snapshot> = BTreeMap::new();
    let mut looked = Instant::now();
    let finished = loop {
        match rx.recv_timeout(Duration::from_millis(250)) {
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break true,
            Ok(e) => {
                if let Some((_, vcpus, host)) = pinned.as_mut() {
                    let now = pin::snapshot(pid, vcpus);
                    match e {
                        Event::Start(i) => {
                            starts.insert(i, now);
                        }
                        Event::End(i) => {
                            if let Some(a) = starts.remove(&i) {
                                host.windows.push(pin::Window::between(i, &a, &now));
                            }
                        }
                    }
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        // `limit` is the time the guest needs on a quiet host. On a busy one (a parallel
        // build, `stress-ng`) QEMU gets less CPU and the same work takes longer, so the
        // guest is stopped only once QEMU has also had `limit` of CPU time, or at four
        // times the limit whatever it had (a guest hung with idle vCPUs uses little CPU).
        if deadline.is_some_and(|d| Instant::now() >= d) {
            drop(kill);
            let so_far = console.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let serial = clean(&String::from_utf8_lossy(&so_far));
            return Err(Stop::OutOfTime(format!(
                "the {shape} guest was still running after {:?} of wall time, at the caller's deadline: QEMU killed\n{}\nserial tail:\n{}",
                t0.elapsed(),
                progress(&serial, cmds, true),
                tail(&serial, 20)
            )));
        }
        if t0.elapsed() >= limit {
            let starved = pin::process_cpu_time(pid).is_some_and(|cpu| cpu < limit);
            if !starved || t0.elapsed() >= limit * 4 {
                break false;
            }
        }
        if looked.elapsed() < Duration::from_secs(1) {
            continue;
        }
        looked = Instant::now();
        if let Some((_, vcpus, host)) = pinned.as_mut() {
            for (v, (_, cpu)) in pin::snapshot(pid, vcpus).vcpus {
                let want = host.pins.get(v);
                if want != Some(cpu) && host.strays.len() < 20 {
                    host.strays.push(format!(
                        "vCPU {v} seen on host CPU {cpu}, pinned to {want:?}"
                    ));
                }
            }
        }
        let so_far = console.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let serial = clean(&String::from_utf8_lossy(&so_far));
        if let Some(line) = soft_lockup(&serial) {
            let line = line.trim().to_string();
            drop(kill);
            return Err(Stop::SoftLockup(format!(
                "{line}\n{}\nserial tail:\n{}",
                progress(&serial, cmds, true),
                tail(&serial, 20)
            )));
        }
    };
    if !finished {
        drop(kill); // closes the pipe, so the reader ends
        let so_far = console.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let serial = clean(&String::from_utf8_lossy(&so_far));
        return Err(Stop::Frozen(format!(
            "the {shape} guest did not finish within {limit:?} of wall and QEMU CPU time ({:?} of wall time): QEMU killed\n{}\nserial tail:\n{}",
            t0.elapsed(),
            progress(&serial, cmds, true),
            tail(&serial, 40)
        )));
    }
    let out = std::mem::take(&mut *console.lock().unwrap_or_else(|e| e.into_inner()));
    let _ = kill.0.wait();
    let qemu_err = err_thread.join().unwrap_or_default();
    let serial = clean(&String::from_utf8_lossy(&out));
    let mut run = parse(&serial, cmds, files);
    run.wall = t0.elapsed();
    run.host = pinned.map(|(_, _, host)| host);
    eprintln!("the {shape} guest: {}", progress(&serial, cmds, false));
    assert!(
        serial.contains("@@SMTLAB-DONE"),
        "the {shape} guest stopped before the end; QEMU said: {qemu_err}\nserial tail:\n{}",
        tail(&serial, 60)
    );
    Ok(run)
}

/// Which commands started, at what guest uptime, and how long each took: what a
/// time-out message needs to name the command that was still running.
fn progress(serial: &str, cmds: &[GuestCommand], killed: bool) -> String {
    let starts: Vec<(usize, f64)> = serial
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("@@SMTLAB-START ")?.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    let mut out = String::from("commands started (guest uptime, seconds taken):\n");
    for (k, &(i, at)) in starts.iter().enumerate() {
        let name = cmds.get(i).map_or("?", |c| c.name.as_str());
        let took = match starts.get(k + 1) {
            Some(&(_, next)) => format!("{:.1} s", next - at),
            None if killed => "still running when QEMU was killed".to_string(),
            None => "the last".to_string(),
        };
        out.push_str(&format!("  {i:>2} {name:<28} at {at:>7.1}: {took}\n"));
    }
    out
}

/// The console without carriage returns and terminal escape sequences.
fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {}
            '\x1b' => {
                // CSI: ESC [ params final-byte
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for d in chars.by_ref() {
                        if ('@'..='~').contains(&d) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Decodes the marked blocks of the console. Lines that are not base64 (a stray kernel
/// message) are skipped inside a block.
fn parse(serial: &str, cmds: &[GuestCommand], files: &[&str]) -> GuestRun {
    let mut run = GuestRun {
        serial: serial.to_string(),
        commands: cmds
            .iter()
            .map(|c| CmdOutput {
                name: c.name.clone(),
                shell: c.shell.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    enum Block {
        Out(usize),
        Err(usize),
        File(usize),
    }
    let mut block: Option<(Block, String)> = None;
    for line in serial.lines() {
        let line = line.trim();
        if let Some((b, text)) = block.as_mut() {
            if line == "@@SMTLAB-END" {
                let bytes = decode_base64(text);
                match b {
                    Block::Out(i) => {
                        run.commands[*i].stdout = String::from_utf8_lossy(&bytes).into()
                    }
                    Block::Err(i) => {
                        run.commands[*i].stderr = String::from_utf8_lossy(&bytes).into()
                    }
                    Block::File(i) => {
                        run.files.insert(files[*i].to_string(), bytes);
                    }
                }
                block = None;
            } else if !line.is_empty()
                && line
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
            {
                text.push_str(line);
            }
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(tag), Some(idx)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(i) = idx.parse::<usize>() else {
            continue;
        };
        match tag {
            "@@SMTLAB-OUT" if i < cmds.len() => block = Some((Block::Out(i), String::new())),
            "@@SMTLAB-ERR" if i < cmds.len() => block = Some((Block::Err(i), String::new())),
            "@@SMTLAB-FILE" if i < files.len() => block = Some((Block::File(i), String::new())),
            "@@SMTLAB-CODE" if i < cmds.len() => {
                run.commands[i].code = words.next().and_then(|c| c.parse().ok());
            }
            _ => {}
        }
    }
    run
}

/// Standard base64 (RFC 4648), as busybox `base64` writes it.
fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let Some(v) = val(c) else { continue };
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_soft_lockup_is_found_on_the_console() {
        let _host = super::shared();
        let serial = "@@SMTLAB-START 2 6.63\n[   56.468233] watchdog: BUG: soft lockup - CPU#3 stuck for 45s! [smtlab:131]\n";
        assert_eq!(
            soft_lockup(serial),
            Some("[   56.468233] watchdog: BUG: soft lockup - CPU#3 stuck for 45s! [smtlab:131]")
        );
        assert_eq!(
            soft_lockup("@@SMTLAB-START 0 2.5\n@@SMTLAB-CODE 0 0\n"),
            None
        );
    }

    #[test]
    fn base64_round_trip() {
        let _host = super::shared();
        assert_eq!(decode_base64("aGVsbG8K"), b"hello\n");
        assert_eq!(decode_base64("YQ=="), b"a");
        assert_eq!(decode_base64(""), b"");
    }
}
