//! Why an event could not be counted, in words a user can act on: no PMU (the
//! hypervisor hides it), `perf_event_paranoid` too high for an unprivileged process (with
//! the value and the sysctl that would allow it), an event the PMU lacks, no perf events
//! in the kernel, no file descriptors left. Pure over [`Env`], which [`Env::probe`] reads
//! from a root directory so that tests can give it any machine.

use super::Event;
use std::path::Path;

/// What this machine offers perf events, as far as a reason needs it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Env {
    /// CPU PMUs under `/sys/bus/event_source/devices` (`cpu`; `cpu_core`, `cpu_atom` on
    /// hybrid Intel; `armv8_pmuv3*` on Arm). Empty: no hardware counters.
    pub pmus: Vec<String>,
    /// `/proc/sys/kernel/perf_event_paranoid`, when readable.
    pub paranoid: Option<i32>,
    /// `/proc/cpuinfo` has the `hypervisor` flag: a virtual machine.
    pub hypervisor: bool,
    /// CAP_PERFMON or CAP_SYS_ADMIN in the effective set (`perf_event_paranoid` does not
    /// apply).
    pub privileged: bool,
}

/// Capability bits (include/uapi/linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

/// True for the event-source names of a CPU's own PMU (not uncore, RAPL or software).
pub fn is_cpu_pmu(name: &str) -> bool {
    matches!(
        name,
        "cpu" | "cpu_core" | "cpu_atom" | "cpu_lowpower" | "cpum_cf"
    ) || name.starts_with("armv8_")
        || name.starts_with("armv7_")
        || name.starts_with("arm_cortex")
}

impl Env {
    /// Reads the environment under `root` (`/` for this machine).
    pub fn probe(root: &Path) -> Env {
        let mut pmus: Vec<String> = std::fs::read_dir(root.join("sys/bus/event_source/devices"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| is_cpu_pmu(n))
                    .collect()
            })
            .unwrap_or_default();
        pmus.sort();
        let paranoid = std::fs::read_to_string(root.join("proc/sys/kernel/perf_event_paranoid"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let hypervisor = std::fs::read_to_string(root.join("proc/cpuinfo"))
            .map(|s| cpuinfo_has_hypervisor(&s))
            .unwrap_or(false);
        let privileged = std::fs::read_to_string(root.join("proc/self/status"))
            .ok()
            .and_then(|s| cap_eff(&s))
            .is_some_and(|c| c & (1 << CAP_SYS_ADMIN) != 0 || c & (1 << CAP_PERFMON) != 0);
        Env {
            pmus,
            paranoid,
            hypervisor,
            privileged,
        }
    }

    /// This machine's environment, read once per process.
    pub fn current() -> &'static Env {
        static ENV: std::sync::OnceLock<Env> = std::sync::OnceLock::new();
        ENV.get_or_init(|| Env::probe(Path::new("/")))
    }

    /// The sentence for a machine without hardware counters.
    pub fn no_pmu(&self) -> String {
        let mut s = "no hardware PMU: /sys/bus/event_source/devices has no `cpu`".to_string();
        if self.hypervisor {
            s.push_str(" (a virtual machine whose hypervisor does not expose the PMU)");
        }
        s
    }
}

/// `CapEff` of a `/proc/PID/status` text.
fn cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

fn cpuinfo_has_hypervisor(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"))
}

/// Why opening `event` failed with `errno`.
pub fn open_failed(event: Event, errno: i32, env: &Env) -> String {
    let name = event.perf_name();
    if matches!(errno, libc::EMFILE | libc::ENFILE) {
        return "out of file descriptors (`ulimit -n`): each counted thread needs one per event"
            .into();
    }
    if errno == libc::ENOSYS {
        return "this kernel has no perf events (CONFIG_PERF_EVENTS), or a seccomp filter \
                (a container's) blocks perf_event_open"
            .into();
    }
    if event.is_hardware() && env.pmus.is_empty() {
        return env.no_pmu();
    }
    match errno {
        libc::EACCES | libc::EPERM => refused(env),
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if event.is_hardware() => {
            format!("the PMU ({}) has no `{name}` event", env.pmus.join(", "))
        }
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            format!("this kernel has no `{name}` software event")
        }
        libc::EBUSY => "the PMU is in exclusive use by another program".into(),
        e => format!(
            "perf_event_open refused `{name}`: {}",
            std::io::Error::from_raw_os_error(e)
        ),
    }
}

/// EACCES or EPERM: `perf_event_paranoid`, or a security module when it does not apply.
fn refused(env: &Env) -> String {
    match env.paranoid {
        _ if env.privileged => "refused although smtlab has CAP_PERFMON: a security module \
                               (SELinux, AppArmor) or a seccomp filter forbids perf_event_open"
            .into(),
        Some(p) if p >= 3 => format!(
            "perf_event_paranoid is {p}, which forbids perf events to unprivileged users: \
             `sudo sysctl kernel.perf_event_paranoid=2` allows counting your own processes \
             (user space; 1 also counts the kernel), or run with CAP_PERFMON"
        ),
        Some(p) => format!(
            "perf_event_paranoid is {p} and smtlab runs without CAP_PERFMON: \
             `sudo sysctl kernel.perf_event_paranoid={}` or CAP_PERFMON allows it",
            (p - 1).max(-1)
        ),
        None => "refused (no CAP_PERFMON; /proc/sys/kernel/perf_event_paranoid unreadable)".into(),
    }
}

/// Why a kernel event was not counted when only user space may be (an unprivileged
/// process at `perf_event_paranoid` 2): a context switch or migration happens in the
/// kernel, so a user-space-only count of it is always 0.
pub fn user_space_only(env: &Env) -> String {
    format!(
        "perf_event_paranoid is {} and smtlab runs without CAP_PERFMON, so only user space \
         is counted, where this event never happens: `sudo sysctl kernel.perf_event_paranoid=1` \
         or CAP_PERFMON counts it",
        env.paranoid
            .map_or("unknown".to_string(), |p| p.to_string())
    )
}

/// The event was opened but never counted during the window.
pub fn never_counted(enabled_ns: u64) -> String {
    if enabled_ns == 0 {
        "never enabled: the measured window was empty (the command did not start)".into()
    } else {
        "never on the PMU: more events than counters, and this one never got a turn \
         (multiplexing)"
            .into()
    }
}

/// Asked to leave it out.
pub fn not_asked(mode: super::Mode) -> String {
    format!("not counted (`--counters {mode}`)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            pmus: vec!["cpu".into()],
            paranoid: Some(2),
            hypervisor: false,
            privileged: false,
        }
    }

    #[test]
    fn no_pmu_is_named_with_the_hypervisor() {
        let e = Env {
            pmus: vec![],
            hypervisor: true,
            ..env()
        };
        for errno in [libc::ENOENT, libc::EOPNOTSUPP, libc::EINVAL, libc::EACCES] {
            let r = open_failed(Event::Cycles, errno, &e);
            assert!(r.contains("no hardware PMU"), "{r}");
            assert!(
                r.contains("/sys/bus/event_source/devices has no `cpu`"),
                "{r}"
            );
            assert!(r.contains("hypervisor"), "{r}");
        }
        let bare = Env {
            hypervisor: false,
            ..e.clone()
        };
        assert!(!open_failed(Event::Instructions, libc::ENOENT, &bare).contains("hypervisor"));
        // A software event is not blamed on the PMU.
        let r = open_failed(Event::TaskClock, libc::ENOENT, &e);
        assert!(r.contains("software event"), "{r}");
    }

    #[test]
    fn paranoid_prints_the_value_and_the_sysctl() {
        let r = open_failed(
            Event::Cycles,
            libc::EACCES,
            &Env {
                paranoid: Some(3),
                ..env()
            },
        );
        assert!(r.contains("perf_event_paranoid is 3"), "{r}");
        assert!(r.contains("kernel.perf_event_paranoid=2"), "{r}");
        let r = open_failed(Event::TaskClock, libc::EPERM, &env());
        assert!(r.contains("perf_event_paranoid is 2"), "{r}");
        assert!(r.contains("kernel.perf_event_paranoid=1"), "{r}");
        let r = user_space_only(&env());
        assert!(r.contains("is 2") && r.contains("=1"), "{r}");
        // Privileged but refused: not the sysctl's fault.
        let r = open_failed(
            Event::Cycles,
            libc::EACCES,
            &Env {
                privileged: true,
                ..env()
            },
        );
        assert!(r.contains("security module"), "{r}");
    }

    #[test]
    fn a_missing_event_names_the_pmu() {
        let r = open_failed(Event::StalledCyclesFrontend, libc::ENOENT, &env());
        assert_eq!(r, "the PMU (cpu) has no `stalled-cycles-frontend` event");
        let r = open_failed(Event::RefCycles, libc::EOPNOTSUPP, &env());
        assert!(r.contains("`ref-cycles`"), "{r}");
    }

    #[test]
    fn other_errors_say_what_to_do() {
        assert!(open_failed(Event::Cycles, libc::EMFILE, &env()).contains("ulimit -n"));
        assert!(
            open_failed(Event::TaskClock, libc::ENOSYS, &Env::default())
                .contains("CONFIG_PERF_EVENTS")
        );
        assert!(open_failed(Event::Cycles, libc::EBUSY, &env()).contains("exclusive"));
        let r = open_failed(Event::Cycles, libc::E2BIG, &env());
        assert!(r.starts_with("perf_event_open refused `cycles`"), "{r}");
        assert!(never_counted(0).contains("never enabled"));
        assert!(never_counted(5).contains("multiplexing"));
    }

    #[test]
    fn probe_reads_a_root() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        std::fs::create_dir_all(r.join("sys/bus/event_source/devices/software")).unwrap();
        std::fs::create_dir_all(r.join("sys/bus/event_source/devices/tracepoint")).unwrap();
        std::fs::create_dir_all(r.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(r.join("proc/self")).unwrap();
        std::fs::write(r.join("proc/sys/kernel/perf_event_paranoid"), "3\n").unwrap();
        std::fs::write(
            r.join("proc/cpuinfo"),
            "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n",
        )
        .unwrap();
        std::fs::write(
            r.join("proc/self/status"),
            "Name:\tx\nCapEff:\t0000000000000000\n",
        )
        .unwrap();
        let e = Env::probe(r);
        assert_eq!(
            e,
            Env {
                pmus: vec![],
                paranoid: Some(3),
                hypervisor: true,
                privileged: false
            }
        );
        std::fs::create_dir_all(r.join("sys/bus/event_source/devices/cpu_core")).unwrap();
        std::fs::create_dir_all(r.join("sys/bus/event_source/devices/cpu_atom")).unwrap();
        std::fs::create_dir_all(r.join("sys/bus/event_source/devices/uncore_imc_0")).unwrap();
        // CAP_PERFMON (bit 38) alone is enough.
        std::fs::write(r.join("proc/self/status"), "CapEff:\t0000004000000000\n").unwrap();
        let e = Env::probe(r);
        assert_eq!(e.pmus, ["cpu_atom", "cpu_core"]);
        assert!(e.privileged);
        // Nothing readable: no PMU, unknown paranoia, not privileged.
        assert_eq!(Env::probe(&r.join("missing")), Env::default());
    }
}
