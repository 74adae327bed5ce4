//! Pinning a guest's vCPU threads to host CPUs, and what the host did meanwhile.
//!
//! Under TCG every vCPU is one host thread; with `-name guest=NAME,debug-threads=on` QEMU
//! names it `CPU n/TCG` (QEMU's `-name` documentation), which `/proc/PID/task/TID/comm`
//! shows. `sched_setaffinity(2)` on those threads decides which vCPUs time-share a host CPU,
//! so the guest's SMT siblings become a physical fact: siblings on separate host CPUs run
//! like perfect SMT (two threads of a core, each at full speed), siblings on one host CPU
//! like SMT that adds nothing (the core's time is split between them).
//!
//! While the guest runs, the harness reads `/proc/stat` and QEMU's `/proc/PID/stat` and
//! `/proc/PID/task/TID/stat` (proc(5)) at the start and end of each command, so every
//! result comes with what the host did: each vCPU thread's CPU time, QEMU's other threads
//! (main loop, RCU: timers and device emulation for the vCPUs), the rest of the host, and
//! the time the hypervisor under this host took (steal).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Which host CPU each vCPU thread runs on, written `VCPU:HOSTCPU …` (e.g. `0:0 1:1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VcpuPins(BTreeMap<u32, usize>);

impl VcpuPins {
    pub fn new(pairs: impl IntoIterator<Item = (u32, usize)>) -> Self {
        VcpuPins(pairs.into_iter().collect())
    }

    /// `0:0 1:1`: whitespace-separated `VCPU:HOSTCPU` pairs, each vCPU once.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut m = BTreeMap::new();
        for pair in s.split_whitespace() {
            let (v, h) = pair
                .split_once(':')
                .ok_or_else(|| format!("`{pair}` is not VCPU:HOSTCPU (e.g. `0:0 1:1`)"))?;
            let v: u32 = v
                .parse()
                .map_err(|_| format!("`{pair}`: vCPU `{v}` is not a number"))?;
            let h: usize = h
                .parse()
                .map_err(|_| format!("`{pair}`: host CPU `{h}` is not a number"))?;
            if m.insert(v, h).is_some() {
                return Err(format!("vCPU {v} is pinned twice in `{s}`"));
            }
        }
        if m.is_empty() {
            return Err("no VCPU:HOSTCPU pair (e.g. `0:0 1:1`)".into());
        }
        Ok(VcpuPins(m))
    }

    /// The host CPU of vCPU `v`.
    pub fn get(&self, v: u32) -> Option<usize> {
        self.0.get(&v).copied()
    }

    /// The host CPUs the vCPUs run on.
    pub fn host_cpus(&self) -> BTreeSet<usize> {
        self.0.values().copied().collect()
    }

    /// Every vCPU of a guest of `vcpus` has exactly one pin, and no other vCPU has one.
    pub fn check(&self, vcpus: u32) -> Result<(), String> {
        let want: BTreeSet<u32> = (0..vcpus).collect();
        let have: BTreeSet<u32> = self.0.keys().copied().collect();
        if want == have {
            Ok(())
        } else {
            Err(format!(
                "the pins `{self}` do not name each of the guest's vCPUs 0-{} once",
                vcpus - 1
            ))
        }
    }
}

impl std::fmt::Display for VcpuPins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pairs: Vec<String> = self.0.iter().map(|(v, h)| format!("{v}:{h}")).collect();
        f.write_str(&pairs.join(" "))
    }
}

fn set_of(cpus: &BTreeSet<usize>) -> Result<libc::cpu_set_t, String> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(format!(
                "CPU {c} is past CPU_SETSIZE ({})",
                libc::CPU_SETSIZE
            ));
        }
        // SAFETY: c is inside the set, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// The CPUs thread `tid` may run on (0: the calling thread), per `sched_getaffinity(2)`:
/// online CPUs only.
pub fn affinity(tid: i32) -> Result<BTreeSet<usize>, String> {
    // SAFETY: as in set_of.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size passed is the size of `set`, which the kernel writes.
    let rc = unsafe { libc::sched_getaffinity(tid, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(format!(
            "sched_getaffinity({tid}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Pins thread `tid` to `cpus`, and reads it back: the kernel silently narrows a mask to
/// the caller's cpuset, so the read-back is what the thread really got.
pub fn set_affinity(tid: i32, cpus: &BTreeSet<usize>) -> Result<(), String> {
    let set = set_of(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(format!(
            "sched_setaffinity(thread {tid}, CPUs {cpus:?}): {}",
            std::io::Error::last_os_error()
        ));
    }
    let got = affinity(tid)?;
    if &got != cpus {
        return Err(format!(
            "thread {tid} asked for CPUs {cpus:?} and got {got:?}"
        ));
    }
    Ok(())
}

/// The vCPU index of a thread named `CPU n/TCG` (QEMU with `debug-threads=on`).
pub fn vcpu_of(comm: &str) -> Option<u32> {
    comm.trim()
        .strip_prefix("CPU ")?
        .strip_suffix("/TCG")?
        .parse()
        .ok()
}

/// QEMU's threads: each tid with its vCPU index when it is a vCPU thread.
pub fn threads(pid: u32) -> Vec<(i32, Option<u32>)> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let tid: i32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            Some((tid, vcpu_of(&comm)))
        })
        .collect()
}

/// From a `/proc/…/stat` line: user + system time (clock ticks) and the CPU it last ran on
/// (fields 14, 15 and 39 of proc(5)). The command name, field 2, is in parentheses and may
/// hold spaces (`(CPU 0/TCG)`), so fields are counted after its closing parenthesis.
pub fn parse_stat(line: &str) -> Option<(u64, usize)> {
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name, field 3 (state) is f[0]: field k is f[k - 3].
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let cpu: usize = f.get(36)?.parse().ok()?;
    Some((utime + stime, cpu))
}

/// One host CPU's time from `/proc/stat` (clock ticks): busy (user, nice, system, irq,
/// softirq) and stolen by the hypervisor under this host (steal).
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuTicks {
    pub busy: u64,
    pub steal: u64,
}

/// The `cpuN` lines of `/proc/stat`. Guest time is already inside user and nice (proc(5)).
pub fn parse_proc_stat(text: &str) -> BTreeMap<usize, CpuTicks> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let cpu: usize = w.next()?.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = w.map(|x| x.parse().unwrap_or(0)).collect();
            let at = |i: usize| v.get(i).copied().unwrap_or(0);
            // user nice system idle iowait irq softirq steal guest guest_nice
            Some((
                cpu,
                CpuTicks {
                    busy: at(0) + at(1) + at(2) + at(5) + at(6),
                    steal: at(7),
                },
            ))
        })
        .collect()
}

/// One look at the host and at QEMU.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    pub host: BTreeMap<usize, CpuTicks>,
    /// QEMU's whole process, exited threads included.
    pub qemu_ticks: u64,
    /// Per vCPU: its thread's ticks and the host CPU it last ran on.
    pub vcpus: BTreeMap<u32, (u64, usize)>,
}

/// Reads `/proc/stat` and QEMU's stat files; `vcpus` maps each vCPU to its thread.
pub fn snapshot(pid: u32, vcpus: &BTreeMap<u32, i32>) -> Snapshot {
    let read = |p: String| std::fs::read_to_string(p).unwrap_or_default();
    Snapshot {
        at: Instant::now(),
        host: parse_proc_stat(&read("/proc/stat".into())),
        qemu_ticks: parse_stat(&read(format!("/proc/{pid}/stat"))).map_or(0, |s| s.0),
        vcpus: vcpus
            .iter()
            .filter_map(|(&v, &tid)| {
                Some((
                    v,
                    parse_stat(&read(format!("/proc/{pid}/task/{tid}/stat")))?,
                ))
            })
            .collect(),
    }
}

/// The CPU time a whole process has had (user + system, every thread), or None when its
/// stat file cannot be read.
pub fn process_cpu_time(pid: u32) -> Option<std::time::Duration> {
    let line = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (ticks, _) = parse_stat(&line)?;
    Some(std::time::Duration::from_secs_f64(
        ticks as f64 / ticks_per_sec(),
    ))
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), the unit of the stat files.
fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// What the host did while one command ran in the guest. CPU figures are averages over the
/// window, in host CPUs (1.0 = one CPU busy the whole time).
#[derive(Debug, Clone)]
pub struct Window {
    /// The command's index in the guest's list.
    pub command: usize,
    pub wall: Duration,
    /// Each vCPU thread's share of a host CPU.
    pub vcpu: BTreeMap<u32, f64>,
    /// QEMU's threads other than the vCPUs.
    pub qemu_other: f64,
    /// Everything on the host that is not QEMU (this test process included).
    pub rest_of_host: f64,
    /// Time the hypervisor under this host took from its CPUs.
    pub steal: f64,
}

impl Window {
    pub fn between(command: usize, a: &Snapshot, b: &Snapshot) -> Window {
        let wall = b.at.saturating_duration_since(a.at);
        let per = ticks_per_sec() * wall.as_secs_f64().max(1e-9);
        let cpus = |t: u64| t as f64 / per;
        let vcpu: BTreeMap<u32, f64> = b
            .vcpus
            .iter()
            .filter_map(|(v, (t, _))| Some((*v, cpus(t.saturating_sub(a.vcpus.get(v)?.0)))))
            .collect();
        let qemu = cpus(b.qemu_ticks.saturating_sub(a.qemu_ticks));
        let sum = |f: fn(&CpuTicks) -> u64| -> u64 {
            b.host
                .iter()
                .map(|(c, t)| f(t).saturating_sub(a.host.get(c).map_or(0, f)))
                .sum()
        };
        let host_busy = cpus(sum(|t| t.busy));
        Window {
            command,
            wall,
            qemu_other: (qemu - vcpu.values().sum::<f64>()).max(0.0),
            rest_of_host: (host_busy - qemu).max(0.0),
            steal: cpus(sum(|t| t.steal)),
            vcpu,
        }
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v: Vec<String> = self
            .vcpu
            .iter()
            .map(|(v, s)| format!("{v}: {s:.2}"))
            .collect();
        write!(
            f,
            "{:.1} s; host CPUs used by vCPU threads {}; QEMU's other threads {:.2}; rest of the host {:.2}; steal {:.2}",
            self.wall.as_secs_f64(),
            v.join(", "),
            self.qemu_other,
            self.rest_of_host,
            self.steal
        )
    }
}

/// What a pinned guest's host did: the pins, where QEMU's other threads ran, and each
/// command's window.
#[derive(Debug, Clone)]
pub struct HostUse {
    pub pins: VcpuPins,
    /// The host CPUs QEMU's non-vCPU threads were allowed on.
    pub others_on: BTreeSet<usize>,
    /// Whether those CPUs are free of vCPUs (a host with spare CPUs), or shared with them.
    pub others_kept_off: bool,
    pub windows: Vec<Window>,
    /// vCPU threads seen on a host CPU other than their pin (should never happen).
    pub strays: Vec<String>,
}

impl HostUse {
    /// The window of command `i`.
    pub fn window(&self, i: usize) -> Option<&Window> {
        self.windows.iter().find(|w| w.command == i)
    }
}

impl std::fmt::Display for HostUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "vCPU → host CPU {}; QEMU's other threads on host CPUs {:?} ({})",
            self.pins,
            self.others_on,
            if self.others_kept_off {
                "kept off the vCPUs' CPUs"
            } else {
                "no spare host CPU: they share the vCPUs' CPUs, cost measured below"
            }
        )
    }
}

/// What [`pin_qemu`] did.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// Each vCPU's thread id.
    pub vcpus: BTreeMap<u32, i32>,
    /// The host CPUs QEMU's other threads may run on.
    pub others_on: BTreeSet<usize>,
    /// Whether those are CPUs no vCPU uses.
    pub others_kept_off: bool,
}

/// Pins QEMU `pid`'s vCPU threads as `pins` says (waiting up to `wait` for QEMU to create
/// them; run it with `-S` so no guest code runs before), and its other threads to the
/// CPUs of `allowed` that no vCPU uses, when there are any.
pub fn pin_qemu(
    pid: u32,
    vcpus: u32,
    pins: &VcpuPins,
    allowed: &BTreeSet<usize>,
    wait: Duration,
) -> Result<Pinned, String> {
    pins.check(vcpus)?;
    let t0 = Instant::now();
    let found = loop {
        let ts = threads(pid);
        let v: BTreeMap<u32, i32> = ts.iter().filter_map(|&(t, v)| Some((v?, t))).collect();
        if v.len() as u32 == vcpus {
            break (v, ts);
        }
        if t0.elapsed() > wait {
            return Err(format!(
                "QEMU (pid {pid}) showed {} of its {vcpus} `CPU n/TCG` threads within {wait:?} \
                 (is it running with -name …,debug-threads=on?)",
                v.len()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (vcpu_tids, all) = found;
    for (&v, &tid) in &vcpu_tids {
        let cpu = pins.get(v).expect("checked");
        set_affinity(tid, &BTreeSet::from([cpu]))
            .map_err(|e| format!("pinning vCPU {v} (thread {tid}) to host CPU {cpu}: {e}"))?;
    }
    let spare: BTreeSet<usize> = allowed.difference(&pins.host_cpus()).copied().collect();
    let (others_on, kept_off) = if spare.is_empty() {
        (allowed.clone(), false)
    } else {
        for &(tid, v) in &all {
            if v.is_none() {
                set_affinity(tid, &spare)
                    .map_err(|e| format!("keeping QEMU's thread {tid} on {spare:?}: {e}"))?;
            }
        }
        (spare, true)
    };
    Ok(Pinned {
        vcpus: vcpu_tids,
        others_on,
        others_kept_off: kept_off,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_and_print() {
        let _host = super::super::shared();
        let p = VcpuPins::parse("0:0 1:0  2:1\t3:1").unwrap();
        assert_eq!(p.to_string(), "0:0 1:0 2:1 3:1");
        assert_eq!(p.host_cpus(), BTreeSet::from([0, 1]));
        assert_eq!(p.get(2), Some(1));
        assert!(p.check(4).is_ok());
        let e = p.check(2).unwrap_err();
        assert!(e.contains("vCPUs 0-1"), "{e}");
        for (bad, says) in [
            ("0:0 0:1", "pinned twice"),
            ("0-0", "not VCPU:HOSTCPU"),
            ("x:0", "vCPU `x`"),
            ("0:y", "host CPU `y`"),
            ("", "no VCPU:HOSTCPU"),
        ] {
            let e = VcpuPins::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn vcpu_threads_are_known_by_name() {
        let _host = super::super::shared();
        assert_eq!(vcpu_of("CPU 0/TCG\n"), Some(0));
        assert_eq!(vcpu_of("CPU 12/TCG"), Some(12));
        assert_eq!(vcpu_of("CPU 1/KVM"), None);
        assert_eq!(vcpu_of("qemu-system-x86"), None);
    }

    #[test]
    fn stat_fields_count_after_the_name() {
        let _host = super::super::shared();
        let line = "4242 (CPU 0/TCG) R 1 2 3 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 4 0 \
                    99 1000 200 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 -1 1 0 0 0 0 0";
        assert_eq!(parse_stat(line), Some((1290, 1)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn proc_stat_busy_and_steal() {
        let _host = super::super::shared();
        let text = "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 10 1 5 100 3 2 1 7 4 0\ncpu1 0 0 0 50 0 0 0 0 0 0\nintr 1\n";
        let m = parse_proc_stat(text);
        assert_eq!(m.len(), 2);
        assert_eq!((m[&0].busy, m[&0].steal), (19, 7));
        assert_eq!(m[&1].busy, 0);
    }

    #[test]
    fn a_cpu_that_cannot_be_had_is_named() {
        let _host = super::super::shared();
        let e = set_affinity(0, &BTreeSet::from([libc::CPU_SETSIZE as usize])).unwrap_err();
        assert!(e.contains("past CPU_SETSIZE"), "{e}");
        // An offline or non-existent CPU below CPU_SETSIZE: the kernel refuses (EINVAL).
        let mine = affinity(0).unwrap();
        let absent = (0..libc::CPU_SETSIZE as usize)
            .rev()
            .find(|c| !mine.contains(c))
            .unwrap();
        let e = set_affinity(0, &BTreeSet::from([absent])).unwrap_err();
        assert!(e.contains(&format!("{absent}")), "{e}");
        assert_eq!(affinity(0).unwrap(), mine, "a failed call changes nothing");
    }
}
