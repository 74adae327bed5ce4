//! Event counters per measured thread and per process tree, over perf_event_open(2):
//! hardware events (cycles, instructions, ref-cycles, stalled cycles, LLC misses, branch
//! misses) where the CPU's PMU has them, and the kernel's software events (task-clock,
//! context switches, CPU migrations, page faults), which work in guests without a PMU.
//!
//! - **Per thread** ([`Counters::open_thread`]): `pid` 0, `cpu` −1 in the thread itself,
//!   so the counts follow it on whatever CPU it runs. The engine opens them in each worker
//!   before the start barrier and counts only the measured window ([`Counters::start`],
//!   [`Counters::stop`]).
//! - **Per process tree** ([`Counters::open_for_exec`]): opened on the thread that is
//!   about to fork a command, with `inherit` and `enable_on_exec`. The forked child
//!   inherits them disabled; its `execve` enables them, and every process and thread the
//!   command creates inherits them in turn. The opening thread's own copies never count
//!   (it never calls `execve`). Reading after the command was reaped gives the whole tree,
//!   as `perf stat -- CMD` does.
//!
//! Events are read in groups with `PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED |
//! TOTAL_TIME_RUNNING | ID`: the software events in one group, cycles, instructions and
//! ref-cycles in another (so IPC compares counts of the same time slices), the other
//! hardware events alone. When the PMU had more events than counters it took turns;
//! each value is scaled by enabled/running time and the smallest counted share is kept
//! ([`Counts::counted_share`]). A kernel that refuses a group read of inherited events
//! gets the events opened one by one instead.
//!
//! An event that cannot be counted is `None` (JSON `null`), never 0, and the reason is
//! kept per event ([`Unavailable`]): no PMU, `perf_event_paranoid`, an event the PMU
//! lacks (see [`reason`]). A written wrapper rather than a crate: the errno of each open
//! is what the reasons are made of, and the inherit-from-the-forking-thread scheme and
//! the group-read fallback need control over every attribute bit.

mod derive;
pub mod reason;
mod sys;
pub mod view;

pub use derive::{
    CoreCpi, Counts, Scaled, ThreadCpi, core_cpi, cpi, effective_ghz, ipc, per_core, scale,
};
pub use reason::Env;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::os::fd::OwnedFd;

/// Which events to count (`--counters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// None: no descriptors, no system calls in the measured window.
    Off,
    /// The kernel's software events only.
    Software,
    /// Every event this machine can count.
    #[default]
    All,
}

impl Mode {
    pub const ALL: [Mode; 3] = [Mode::Off, Mode::Software, Mode::All];

    pub fn name(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Software => "software",
            Mode::All => "all",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("unknown counters mode `{t}`; expected off, software or all"))
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One counted event, named as `perf stat -e` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Event {
    #[serde(rename = "task-clock")]
    TaskClock,
    #[serde(rename = "context-switches")]
    ContextSwitches,
    #[serde(rename = "cpu-migrations")]
    CpuMigrations,
    #[serde(rename = "page-faults")]
    PageFaults,
    #[serde(rename = "cycles")]
    Cycles,
    #[serde(rename = "instructions")]
    Instructions,
    #[serde(rename = "ref-cycles")]
    RefCycles,
    #[serde(rename = "stalled-cycles-frontend")]
    StalledCyclesFrontend,
    #[serde(rename = "stalled-cycles-backend")]
    StalledCyclesBackend,
    #[serde(rename = "LLC-load-misses")]
    LlcLoadMisses,
    #[serde(rename = "branch-misses")]
    BranchMisses,
}

impl Event {
    pub const ALL: [Event; 11] = [
        Event::TaskClock,
        Event::ContextSwitches,
        Event::CpuMigrations,
        Event::PageFaults,
        Event::Cycles,
        Event::Instructions,
        Event::RefCycles,
        Event::StalledCyclesFrontend,
        Event::StalledCyclesBackend,
        Event::LlcLoadMisses,
        Event::BranchMisses,
    ];

    pub fn perf_name(self) -> &'static str {
        match self {
            Event::TaskClock => "task-clock",
            Event::ContextSwitches => "context-switches",
            Event::CpuMigrations => "cpu-migrations",
            Event::PageFaults => "page-faults",
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::RefCycles => "ref-cycles",
            Event::StalledCyclesFrontend => "stalled-cycles-frontend",
            Event::StalledCyclesBackend => "stalled-cycles-backend",
            Event::LlcLoadMisses => "LLC-load-misses",
            Event::BranchMisses => "branch-misses",
        }
    }

    /// Counted by the CPU's PMU (absent without one), not by the kernel.
    pub fn is_hardware(self) -> bool {
        !matches!(
            self,
            Event::TaskClock | Event::ContextSwitches | Event::CpuMigrations | Event::PageFaults
        )
    }

    /// Happens only in the kernel: a user-space-only count is always 0.
    fn kernel_only(self) -> bool {
        matches!(self, Event::ContextSwitches | Event::CpuMigrations)
    }

    /// `perf_event_attr` type and config (include/uapi/linux/perf_event.h).
    fn type_config(self) -> (u32, u64) {
        match self {
            Event::TaskClock => (sys::TYPE_SOFTWARE, 1),
            Event::PageFaults => (sys::TYPE_SOFTWARE, 2),
            Event::ContextSwitches => (sys::TYPE_SOFTWARE, 3),
            Event::CpuMigrations => (sys::TYPE_SOFTWARE, 4),
            Event::Cycles => (sys::TYPE_HARDWARE, 0),
            Event::Instructions => (sys::TYPE_HARDWARE, 1),
            Event::BranchMisses => (sys::TYPE_HARDWARE, 5),
            Event::StalledCyclesFrontend => (sys::TYPE_HARDWARE, 7),
            Event::StalledCyclesBackend => (sys::TYPE_HARDWARE, 8),
            Event::RefCycles => (sys::TYPE_HARDWARE, 9),
            // PERF_COUNT_HW_CACHE_LL | PERF_COUNT_HW_CACHE_OP_READ << 8 |
            // PERF_COUNT_HW_CACHE_RESULT_MISS << 16
            Event::LlcLoadMisses => (sys::TYPE_HW_CACHE, 2 | (1 << 16)),
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.perf_name())
    }
}

/// The groups events are opened in: a group's members count over the same time slices.
const GROUPS: [&[Event]; 6] = [
    &[
        Event::TaskClock,
        Event::ContextSwitches,
        Event::CpuMigrations,
        Event::PageFaults,
    ],
    &[Event::Cycles, Event::Instructions, Event::RefCycles],
    &[Event::StalledCyclesFrontend],
    &[Event::StalledCyclesBackend],
    &[Event::LlcLoadMisses],
    &[Event::BranchMisses],
];

/// An event that was not counted, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    pub event: Event,
    pub reason: String,
}

/// What one thread's or one process tree's counters measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    #[serde(flatten)]
    pub counts: Counts,
    /// Events not counted, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<Unavailable>,
}

/// The counters of a run as its report states them: the mode, and every event that was
/// not counted with its reason (the same reason once, whichever thread met it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub mode: Mode,
    pub unavailable: Vec<Unavailable>,
}

impl Status {
    /// The status of `mode` over some measurements: their unavailable events, each
    /// (event, reason) once, in event order.
    pub fn of<'a>(mode: Mode, ms: impl IntoIterator<Item = &'a Measurement>) -> Status {
        let mut unavailable: Vec<Unavailable> = Vec::new();
        for m in ms {
            for u in &m.unavailable {
                if !unavailable.contains(u) {
                    unavailable.push(u.clone());
                }
            }
        }
        unavailable.sort_by_key(|u| u.event);
        Status { mode, unavailable }
    }

    /// This status with `other`'s reasons added (runs of one report).
    pub fn merge(self, other: &Status) -> Status {
        let ms = [
            Measurement {
                counts: Counts::default(),
                unavailable: self.unavailable,
            },
            Measurement {
                counts: Counts::default(),
                unavailable: other.unavailable.clone(),
            },
        ];
        Status::of(self.mode, &ms)
    }

    /// True when no hardware event was counted anywhere (IPC cannot be shown).
    pub fn hardware_missing(&self) -> bool {
        self.mode != Mode::All
            || Event::ALL
                .iter()
                .filter(|e| e.is_hardware())
                .all(|e| self.unavailable.iter().any(|u| u.event == *e))
    }

    /// Lines for a text report: events grouped by reason (`hardware counters not
    /// measured: no hardware PMU: …` when every hardware event shares one reason).
    pub fn lines(&self) -> Vec<String> {
        if self.mode == Mode::Off {
            return vec!["counters off (`--counters off`)".into()];
        }
        let mut by_reason: Vec<(&str, Vec<Event>)> = Vec::new();
        for u in &self.unavailable {
            match by_reason.iter_mut().find(|(r, _)| *r == u.reason) {
                Some((_, v)) => v.push(u.event),
                None => by_reason.push((&u.reason, vec![u.event])),
            }
        }
        let hardware: Vec<Event> = Event::ALL.into_iter().filter(|e| e.is_hardware()).collect();
        by_reason
            .into_iter()
            .map(|(r, v)| {
                if v == hardware {
                    format!("hardware counters not measured: {r}")
                } else {
                    let names: Vec<&str> = v.iter().map(|e| e.perf_name()).collect();
                    format!("{} not measured: {r}", names.join(", "))
                }
            })
            .collect()
    }
}

/// Whether this process may count kernel-side events: false for an unprivileged process
/// at `perf_event_paranoid` ≥ 2, which must set `exclude_kernel`. Tried once.
fn kernel_counting_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| {
        let (type_, config) = Event::TaskClock.type_config();
        let spec = sys::OpenSpec {
            type_,
            config,
            user_only: false,
            inherit: false,
            enable_on_exec: false,
            group_format: false,
        };
        !matches!(sys::open(&spec, None), Err(libc::EACCES | libc::EPERM))
    })
}

/// Raises the soft open-file limit to the hard one, once: counting 1,000 threads takes
/// 11,000 descriptors, far past the usual soft limit of 1,024 (Go's runtime does the same
/// at start-up since Go 1.19).
fn raise_fd_limit() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: valid out-pointer; setrlimit only lowers nothing and raises within the
        // hard limit, which needs no privilege.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
                r.rlim_cur = r.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &r);
            }
        }
    });
}

/// Opens, once per process, one disabled software event of each kind smtlab counts and
/// keeps it open until the process exits, so that the kernel switches its perf static
/// keys on once instead of at every run.
///
/// The first event of a software kind switches the static key
/// `perf_swevent_enabled[kind]` on and closing the last switches it off
/// (`perf_swevent_init` and `sw_perf_event_destroy` in Linux `kernel/events/core.c`);
/// the first per-task event also enables `perf_sched_events` (`account_event`, switched
/// off a second after the last one closes). Each switch rewrites kernel text
/// (`text_poke_bp`) and waits for an interrupt on every CPU. Opening and closing counters
/// at every run would make each run's start stop every CPU of the machine, the
/// neighbours' included; in QEMU's TCG guests it hung a worker's perf_event_open for 45 s
/// (soft lockup in `smp_call_function_many_cond`) while the other vCPUs spun.
fn hold_static_keys(user_only: bool) {
    static HELD: std::sync::OnceLock<Vec<OwnedFd>> = std::sync::OnceLock::new();
    HELD.get_or_init(|| {
        let target = Target {
            inherit: false,
            enable_on_exec: false,
        };
        [
            Event::PageFaults,
            Event::ContextSwitches,
            Event::CpuMigrations,
        ]
        .into_iter()
        .filter(|e| !(user_only && e.kernel_only()))
        .filter_map(|e| sys::open(&Counters::spec(e, target, user_only, false), None).ok())
        .collect()
    });
}

/// Gets the process ready to open counters in `mode`: raises the open-file limit and
/// switches the kernel's perf static keys on for good (`hold_static_keys`). Call it
/// before starting threads that spin; [`Counters`] also does it on its first opening.
pub fn prepare(mode: Mode) {
    if mode == Mode::Off {
        return;
    }
    raise_fd_limit();
    hold_static_keys(!kernel_counting_allowed());
}

/// One opened group (or a single event).
struct Group {
    leader: OwnedFd,
    /// Descriptors of the other members, kept open for the group's lifetime.
    _members: Vec<OwnedFd>,
    /// (event, kernel id) of every member, leader first.
    ids: Vec<(Event, u64)>,
    /// Read with `PERF_FORMAT_GROUP`.
    grouped: bool,
}

/// Counters opened on the calling thread: see the module docs.
pub struct Counters {
    groups: Vec<Group>,
    /// Events not opened, with the reason.
    unavailable: Vec<Unavailable>,
}

/// How events are attached.
#[derive(Debug, Clone, Copy)]
struct Target {
    inherit: bool,
    enable_on_exec: bool,
}

impl Counters {
    /// Counters of the calling thread, opened disabled; None with [`Mode::Off`].
    pub fn open_thread(mode: Mode) -> Option<Counters> {
        Self::open(
            mode,
            Target {
                inherit: false,
                enable_on_exec: false,
            },
            Env::current(),
        )
    }

    /// Counters for the command the calling thread forks next: they start at its
    /// `execve` and cover every task it creates. None with [`Mode::Off`]. Close (drop)
    /// them once that command is reaped, before the thread forks anything else.
    pub fn open_for_exec(mode: Mode) -> Option<Counters> {
        Self::open(
            mode,
            Target {
                inherit: true,
                enable_on_exec: true,
            },
            Env::current(),
        )
    }

    fn open(mode: Mode, target: Target, env: &Env) -> Option<Counters> {
        if mode == Mode::Off {
            return None;
        }
        prepare(mode);
        let user_only = !kernel_counting_allowed();
        let mut c = Counters {
            groups: Vec::new(),
            unavailable: Vec::new(),
        };
        for events in GROUPS {
            let mut wanted = Vec::new();
            for &e in events {
                if e.is_hardware() && mode == Mode::Software {
                    c.skip(e, reason::not_asked(mode));
                } else if user_only && e.kernel_only() {
                    c.skip(e, reason::user_space_only(env));
                } else {
                    wanted.push(e);
                }
            }
            c.open_group(&wanted, target, user_only, env);
        }
        Some(c)
    }

    fn skip(&mut self, event: Event, reason: String) {
        self.unavailable.push(Unavailable { event, reason });
    }

    fn spec(e: Event, target: Target, user_only: bool, group_format: bool) -> sys::OpenSpec {
        let (type_, config) = e.type_config();
        sys::OpenSpec {
            type_,
            config,
            user_only,
            inherit: target.inherit,
            enable_on_exec: target.enable_on_exec,
            group_format,
        }
    }

    /// Opens `events` as one group; what cannot join it is opened alone.
    fn open_group(&mut self, events: &[Event], target: Target, user_only: bool, env: &Env) {
        let Some((&first, rest)) = events.split_first() else {
            return;
        };
        if rest.is_empty() {
            return self.open_single(first, target, user_only, env);
        }
        let leader = match sys::open(&Self::spec(first, target, user_only, true), None) {
            Ok(fd) => fd,
            // The leader failing says nothing about the members: each tries alone and
            // gets its own reason. So does a kernel that refuses group reads of
            // inherited events (EINVAL, perf_event_open(2)).
            Err(_) => {
                for &e in events {
                    self.open_single(e, target, user_only, env);
                }
                return;
            }
        };
        let mut ids = Vec::new();
        match sys::id(&leader) {
            Ok(id) => ids.push((first, id)),
            Err(errno) => {
                self.skip(first, reason::open_failed(first, errno, env));
                for &e in rest {
                    self.open_single(e, target, user_only, env);
                }
                return;
            }
        }
        let mut members = Vec::new();
        for &e in rest {
            match sys::open(&Self::spec(e, target, user_only, true), Some(&leader)) {
                Ok(fd) => match sys::id(&fd) {
                    Ok(id) => {
                        ids.push((e, id));
                        members.push(fd);
                    }
                    Err(errno) => self.skip(e, reason::open_failed(e, errno, env)),
                },
                // The group cannot hold it on this PMU: alone, it takes turns.
                Err(libc::EINVAL | libc::ENOSPC) => self.open_single(e, target, user_only, env),
                Err(errno) => self.skip(e, reason::open_failed(e, errno, env)),
            }
        }
        self.groups.push(Group {
            leader,
            _members: members,
            ids,
            grouped: true,
        });
    }

    fn open_single(&mut self, e: Event, target: Target, user_only: bool, env: &Env) {
        let opened = sys::open(&Self::spec(e, target, user_only, false), None)
            .and_then(|fd| sys::id(&fd).map(|id| (fd, id)));
        match opened {
            Ok((leader, id)) => self.groups.push(Group {
                leader,
                _members: Vec::new(),
                ids: vec![(e, id)],
                grouped: false,
            }),
            Err(errno) => self.skip(e, reason::open_failed(e, errno, env)),
        }
    }

    /// Zeroes and starts every group (for per-thread counters; counters for an `execve`
    /// start by themselves).
    pub fn start(&self) {
        for g in &self.groups {
            sys::reset_and_enable(&g.leader);
        }
    }

    /// Stops every group.
    pub fn stop(&self) {
        for g in &self.groups {
            sys::disable(&g.leader);
        }
    }

    /// The counts so far, scaled, with every event not counted and why.
    pub fn read(&self) -> Measurement {
        let mut unavailable = self.unavailable.clone();
        let mut values = Vec::new();
        let mut buf = [0u64; 3 + 2 * 8];
        for g in &self.groups {
            let raws = match sys::read_words(&g.leader, &mut buf) {
                Ok(n) if g.grouped => sys::parse_group(&buf[..n]),
                Ok(n) => sys::parse_single(&buf[..n]).map(|r| vec![r]),
                Err(_) => None,
            };
            let Some(raws) = raws else {
                for (e, _) in &g.ids {
                    unavailable.push(Unavailable {
                        event: *e,
                        reason: "its counter could not be read".into(),
                    });
                }
                continue;
            };
            for (e, id) in &g.ids {
                let raw = raws.iter().find(|r| r.id == *id);
                match raw.and_then(|r| scale(r.value, r.enabled_ns, r.running_ns)) {
                    Some(s) => values.push((*e, s)),
                    None => unavailable.push(Unavailable {
                        event: *e,
                        reason: reason::never_counted(raw.map_or(0, |r| r.enabled_ns)),
                    }),
                }
            }
        }
        unavailable.sort_by_key(|u| u.event);
        Measurement {
            counts: Counts::from_scaled(&values),
            unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(n: u64) -> u64 {
        let mut x = 0u64;
        for i in 0..n {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        x
    }

    #[test]
    fn modes_parse_and_print() {
        for m in Mode::ALL {
            assert_eq!(m.to_string().parse::<Mode>(), Ok(m));
        }
        assert_eq!(" SOFTWARE ".parse::<Mode>(), Ok(Mode::Software));
        let e = "some".parse::<Mode>().unwrap_err();
        assert!(
            e.contains("`some`") && e.contains("off, software or all"),
            "{e}"
        );
        assert_eq!(serde_json::to_string(&Mode::All).unwrap(), "\"all\"");
        assert_eq!(
            serde_json::to_string(&Event::LlcLoadMisses).unwrap(),
            "\"LLC-load-misses\""
        );
    }

    #[test]
    fn off_opens_nothing() {
        assert!(Counters::open_thread(Mode::Off).is_none());
        assert!(Counters::open_for_exec(Mode::Off).is_none());
    }

    /// Software events are in every kernel with perf events (and in the guests without
    /// a PMU); hardware ones are checked only where a PMU exists.
    #[test]
    fn a_thread_counts_its_own_window() {
        let c = Counters::open_thread(Mode::All).unwrap();
        spin(1_000_000);
        let before = c.read();
        assert_eq!(before.counts.task_clock_ns, None, "disabled until start");
        c.start();
        spin(20_000_000);
        std::thread::yield_now();
        c.stop();
        let m = c.read();
        let t = m
            .counts
            .task_clock_ns
            .expect("task-clock works without a PMU");
        assert!(t > 1_000_000, "20 M additions take more than 1 ms: {t}");
        assert!(m.counts.context_switches.is_some() && m.counts.page_faults.is_some());
        let env = Env::current();
        if env.pmus.is_empty() {
            for e in Event::ALL.iter().filter(|e| e.is_hardware()) {
                assert_eq!(m.counts.get(*e), None);
                let u = m.unavailable.iter().find(|u| u.event == *e).unwrap();
                assert!(u.reason.contains("no hardware PMU"), "{u:?}");
            }
            eprintln!("hardware counter checks skipped: {}", env.no_pmu());
        } else if let (Some(cy), Some(ins)) = (m.counts.cycles, m.counts.instructions) {
            assert!(ins > 20_000_000 && cy > 0, "{m:?}");
            assert!(m.counts.ipc.is_some());
        }
        // Stopped: no more counting.
        spin(5_000_000);
        assert_eq!(c.read().counts.task_clock_ns, Some(t));
    }

    #[test]
    fn software_mode_leaves_hardware_out_with_the_reason() {
        let c = Counters::open_thread(Mode::Software).unwrap();
        c.start();
        spin(1_000_000);
        c.stop();
        let m = c.read();
        assert!(m.counts.task_clock_ns.is_some());
        assert!(!m.counts.has_hardware());
        let st = Status::of(Mode::Software, [&m]);
        assert!(st.hardware_missing());
        assert_eq!(
            st.lines(),
            ["hardware counters not measured: not counted (`--counters software`)"]
        );
    }

    #[test]
    fn a_command_tree_is_counted_from_its_exec() {
        let c = Counters::open_for_exec(Mode::Software).unwrap();
        // Kernels that refuse group reads of inherited events get single events instead.
        eprintln!(
            "inherited software events read as a group: {}",
            c.groups.iter().any(|g| g.grouped)
        );
        // A shell whose child burns CPU: both are in the count.
        let st = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done & wait",
            ])
            .status()
            .unwrap();
        assert!(st.success());
        // The opening thread's own copies never count: it never calls execve.
        let t0 = crate::engine::threadstats::thread_cpu_time_ns();
        spin(100_000_000);
        let own = crate::engine::threadstats::thread_cpu_time_ns() - t0;
        let m = c.read();
        drop(c);
        let t = m.counts.task_clock_ns.expect("inherited task-clock");
        assert!(
            t > 100_000,
            "5,000 shell iterations take more than 0.1 ms: {t}"
        );
        assert!(
            t < own,
            "the tree's {t} ns include this thread's {own} ns spin"
        );
        assert!(m.counts.cpu_migrations.is_some());
    }

    #[test]
    fn status_lines_group_events_by_reason() {
        let hw: Vec<Unavailable> = Event::ALL
            .into_iter()
            .filter(|e| e.is_hardware())
            .map(|event| Unavailable {
                event,
                reason: "no hardware PMU".into(),
            })
            .collect();
        let m = Measurement {
            counts: Counts::default(),
            unavailable: hw,
        };
        let st = Status::of(Mode::All, [&m, &m]);
        assert_eq!(st.unavailable.len(), 7, "deduplicated");
        assert!(st.hardware_missing());
        assert_eq!(
            st.lines(),
            ["hardware counters not measured: no hardware PMU"]
        );
        let partial = Status {
            mode: Mode::All,
            unavailable: vec![Unavailable {
                event: Event::StalledCyclesFrontend,
                reason: "the PMU (cpu) has no `stalled-cycles-frontend` event".into(),
            }],
        };
        assert!(!partial.hardware_missing());
        assert_eq!(
            partial.lines(),
            [
                "stalled-cycles-frontend not measured: the PMU (cpu) has no `stalled-cycles-frontend` event"
            ]
        );
        assert_eq!(
            Status {
                mode: Mode::Off,
                unavailable: vec![]
            }
            .lines(),
            ["counters off (`--counters off`)"]
        );
    }
}
