//! The writes that switch SMT off or on, or put back a journal's state, decided from an
//! [`SmtState`] alone (pure, so every branch is tested without a kernel).
//!
//! Two ways to switch, as Documentation/ABI/testing/sysfs-devices-system-cpu describes:
//! `smt/control` (the kernel takes every sibling but the primary thread offline, or brings
//! them back), or `cpuN/online` one CPU at a time, which also works where the control says
//! `notsupported` or `notimplemented`. A CPU without an `online` file cannot be switched and
//! is never written.

use super::journal::Journal;
use super::state::SmtState;
use crate::cpuset::CpuSet;
use serde::Serialize;
use std::fmt;

/// How `off` and `on` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// `smt/control` when it switches here, else `cpuN/online`.
    #[default]
    Auto,
    /// `smt/control` only.
    Control,
    /// `cpuN/online` only (keeps `smt/control` as it is).
    CpuOnline,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "auto" => Ok(Method::Auto),
            "control" => Ok(Method::Control),
            "cpu-online" => Ok(Method::CpuOnline),
            other => Err(format!(
                "unknown method `{other}`; expected auto, control or cpu-online"
            )),
        }
    }
}

/// One sysfs file to write, relative to `sys/devices/system/cpu`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Target {
    /// `smt/control`.
    Control,
    /// `cpuN/online`.
    Online(u32),
}

impl Target {
    /// The path relative to `sys/devices/system/cpu`.
    pub fn rel_path(&self) -> String {
        match self {
            Target::Control => "smt/control".into(),
            Target::Online(c) => format!("cpu{c}/online"),
        }
    }
}

/// A value to write to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SysWrite {
    pub target: Target,
    pub value: String,
}

impl SysWrite {
    fn online(cpu: u32, on: bool) -> Self {
        SysWrite {
            target: Target::Online(cpu),
            value: if on { "1" } else { "0" }.into(),
        }
    }
    fn control(value: &str) -> Self {
        SysWrite {
            target: Target::Control,
            value: value.into(),
        }
    }
}

impl SysWrite {
    /// The write as a shell command on the file under `root` (`/sys/…` for this machine).
    pub fn shell(&self, root: &std::path::Path) -> String {
        format!(
            "echo {} > {}",
            self.value,
            super::state::cpu_dir(root)
                .join(self.target.rel_path())
                .display()
        )
    }
}

impl fmt::Display for SysWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shell(std::path::Path::new("/")))
    }
}

/// What a plan tells the user besides its writes.
#[derive(Debug, Clone)]
pub enum Note {
    /// `smt off`: a sibling without an online file stays, and its core keeps `threads`.
    CannotGoOffline {
        cpu: u32,
        core: CpuSet,
        threads: usize,
    },
    /// `smt on` on AMD family 15h: the CPUs coming back are integer cores of CMT modules.
    CmtCoresComingOnline,
    /// `smt on`: offline CPUs without an online file stay offline.
    StayOffline { cpus: CpuSet },
    /// `restore`: CPUs the journal recorded `was` (online/offline) that have no online file
    /// now.
    CannotRestore { cpus: CpuSet, was: &'static str },
    /// Any other text (never built here; read back from a file).
    Other(String),
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::CannotGoOffline { cpu, core, threads } => write!(
                f,
                "cpu{cpu} has no online file and cannot go offline: its core {core} keeps \
                 {threads} threads"
            ),
            Note::CmtCoresComingOnline => write!(
                f,
                "the CPUs coming online are integer cores, not SMT threads: the thread siblings \
                 here are {}",
                crate::topology::CMT_MODULES
            ),
            Note::StayOffline { cpus } => write!(
                f,
                "CPUs {cpus} are offline without an online file: they stay offline"
            ),
            Note::CannotRestore { cpus, was } => write!(
                f,
                "CPUs {cpus} were {was} when the journal was written but have no online file \
                 now: left as they are"
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

/// What a command will do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The writes, in order. Empty: nothing to switch (see `nothing`).
    pub writes: Vec<SysWrite>,
    /// Online CPUs expected afterwards.
    pub online_after: CpuSet,
    /// CPUs that go offline.
    pub going_offline: CpuSet,
    /// CPUs that come online.
    pub coming_online: CpuSet,
    /// Why there is nothing to do, when `writes` is empty.
    pub nothing: Option<String>,
    /// Things the user should know (siblings that cannot be offlined, …).
    pub notes: Vec<Note>,
}

impl Plan {
    fn nothing(state: &SmtState, why: String) -> Self {
        Plan {
            writes: Vec::new(),
            online_after: state.online.clone(),
            going_offline: CpuSet::new(),
            coming_online: CpuSet::new(),
            nothing: Some(why),
            notes: Vec::new(),
        }
    }
}

/// Why a switch cannot be planned on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Impossible(pub String);

/// The CPUs each core keeps when SMT goes off: the one without an `online` file if any
/// (it cannot go), else the lowest-numbered, as the kernel keeps its primary thread.
fn keeper(core: &CpuSet, switchable: &CpuSet) -> u32 {
    core.iter()
        .find(|c| !switchable.contains(*c))
        .or_else(|| core.first())
        .expect("cores are never empty")
}

/// `smt off`: one thread per core. Refused on AMD family 15h, whose thread siblings are CMT
/// modules of two integer cores: there is no SMT, and offlining a sibling removes a core.
pub fn plan_off(state: &SmtState, method: Method) -> Result<Plan, Impossible> {
    if state.cmt_modules {
        let modules = state.modules();
        let cores = if modules.is_empty() {
            String::new()
        } else {
            format!(
                "; offlining one CPU of each would take {} of the {} integer cores offline",
                modules.len(),
                state.online.len()
            )
        };
        return Err(Impossible(format!(
            "no SMT to switch off: the CPU pairs Linux lists as thread siblings here are \
             {}{cores}. To run on fewer cores, pin the work (taskset) or take CPUs offline by \
             hand (cpuN/online)",
            crate::topology::CMT_MODULES
        )));
    }
    let control = state.control.as_deref().unwrap_or("missing");
    if matches!(control, "off" | "forceoff") && method != Method::CpuOnline {
        return Ok(Plan::nothing(
            state,
            format!("SMT is already off (smt/control = {control})"),
        ));
    }
    let shared: Vec<&CpuSet> = state.cores.iter().filter(|c| c.len() > 1).collect();
    if shared.is_empty() {
        let why = match control {
            "notsupported" => "SMT is not supported here (smt/control = notsupported): every core \
                               runs one thread, so there is nothing to switch"
                .to_string(),
            _ => format!(
                "every core already runs one thread (smt/control = {control}); nothing to switch"
            ),
        };
        return Ok(Plan::nothing(state, why));
    }
    let use_control = match method {
        Method::Control if !state.control_switches() => {
            return Err(Impossible(format!(
                "--method control: smt/control is `{control}` here, so it cannot switch SMT; \
                 use --method cpu-online"
            )));
        }
        Method::Control => true,
        Method::Auto => state.control_switches(),
        Method::CpuOnline => false,
    };
    let mut going = CpuSet::new();
    let mut notes = Vec::new();
    for core in &shared {
        let keep = keeper(core, &state.switchable);
        for c in core.iter().filter(|&c| c != keep) {
            if use_control || state.switchable.contains(c) {
                going.insert(c);
            } else {
                notes.push(Note::CannotGoOffline {
                    cpu: c,
                    core: (*core).clone(),
                    threads: core.len() - going.intersection(core).len(),
                });
            }
        }
    }
    let writes = if use_control {
        vec![SysWrite::control("off")]
    } else {
        going.iter().map(|c| SysWrite::online(c, false)).collect()
    };
    if going.is_empty() {
        let mut p = Plan::nothing(
            state,
            "no sibling can go offline: none has an online file".into(),
        );
        p.notes = notes;
        return Ok(p);
    }
    Ok(Plan {
        writes,
        online_after: state.online.difference(&going),
        going_offline: going,
        coming_online: CpuSet::new(),
        nothing: None,
        notes,
    })
}

/// `smt on`: every present CPU online. Offline CPUs have no topology files, so which of them
/// are siblings is not known; `on` brings back every one it can (as the kernel's
/// `smt/control` = on does), and `restore` puts back an exact recorded state instead.
pub fn plan_on(state: &SmtState, method: Method) -> Result<Plan, Impossible> {
    let control = state.control.as_deref().unwrap_or("missing");
    if control == "forceoff" {
        return Err(Impossible(
            "SMT was disabled at boot with nosmt=force (smt/control = forceoff) and cannot be \
             turned on without a reboot"
                .into(),
        ));
    }
    if control == "off" {
        if method == Method::CpuOnline {
            return Err(Impossible(
                "smt/control is `off`, and the kernel refuses to bring siblings online one by \
                 one while it is; use --method auto or control"
                    .into(),
            ));
        }
        return Ok(Plan {
            writes: vec![SysWrite::control("on")],
            online_after: state.present.clone(),
            going_offline: CpuSet::new(),
            coming_online: state.offline(),
            nothing: None,
            notes: Vec::new(),
        });
    }
    if method == Method::Control && !state.control_switches() {
        return Err(Impossible(format!(
            "--method control: smt/control is `{control}` here; use --method cpu-online"
        )));
    }
    let offline = state.offline();
    let coming = offline.intersection(&state.switchable);
    let mut notes = Vec::new();
    if state.cmt_modules && !coming.is_empty() {
        notes.push(Note::CmtCoresComingOnline);
    }
    let stuck = offline.difference(&state.switchable);
    if !stuck.is_empty() {
        notes.push(Note::StayOffline { cpus: stuck });
    }
    if coming.is_empty() {
        let mut p = Plan::nothing(
            state,
            format!(
                "every present CPU is online already (online {})",
                state.online
            ),
        );
        p.notes = notes;
        return Ok(p);
    }
    Ok(Plan {
        writes: coming.iter().map(|c| SysWrite::online(c, true)).collect(),
        online_after: state.online.union(&coming),
        going_offline: CpuSet::new(),
        coming_online: coming,
        nothing: None,
        notes,
    })
}

/// The `smt/control` write that puts back the journal's control value, if it differs and
/// both values are ones the control switches between.
pub fn restore_control(state: &SmtState, journal: &Journal) -> Option<SysWrite> {
    let (Some(now), Some(then)) = (state.control.as_deref(), journal.control.as_deref()) else {
        return None;
    };
    let switchable = |v: &str| v == "on" || v == "off" || v.parse::<u32>().is_ok();
    (now != then && switchable(now) && switchable(then)).then(|| SysWrite::control(then))
}

/// The online state after writing `control` = `value`, as the kernel does it: `on` brings
/// every present CPU online; `off` leaves each of the journal's cores its first CPU.
pub fn predict_control(state: &SmtState, value: &str, journal: &Journal) -> CpuSet {
    match value {
        "on" => state.present.clone(),
        "off" => {
            let mut online = state.online.clone();
            for core in journal.cores.iter().filter(|c| c.len() > 1) {
                let keep = keeper(core, &state.switchable);
                for c in core.iter().filter(|&c| c != keep) {
                    online.remove(c);
                }
            }
            online
        }
        _ => state.online.clone(),
    }
}

/// The `cpuN/online` writes that turn `online_now` into the journal's online set: CPUs
/// come online first, so the machine never has fewer CPUs than at either end.
pub fn restore_cpus(
    online_now: &CpuSet,
    journal: &Journal,
    switchable: &CpuSet,
) -> (Vec<SysWrite>, Vec<Note>) {
    let want = &journal.online;
    let up = want.difference(online_now);
    let down = online_now.difference(want);
    let mut notes = Vec::new();
    for (set, what) in [(&up, "online"), (&down, "offline")] {
        let stuck = set.difference(switchable);
        if !stuck.is_empty() {
            notes.push(Note::CannotRestore {
                cpus: stuck,
                was: what,
            });
        }
    }
    let writes = up
        .intersection(switchable)
        .iter()
        .map(|c| SysWrite::online(c, true))
        .chain(
            down.intersection(switchable)
                .iter()
                .map(|c| SysWrite::online(c, false)),
        )
        .collect();
    (writes, notes)
}

/// `smt restore`: the control write (if any), then the per-CPU writes that reach the
/// journal's online set from the state the control write leaves. Applying re-reads the state
/// after the control write and recomputes the per-CPU part; this is what a dry run shows.
pub fn plan_restore(state: &SmtState, journal: &Journal) -> Plan {
    let control = restore_control(state, journal);
    let online_mid = match &control {
        Some(w) => predict_control(state, &w.value, journal),
        None => state.online.clone(),
    };
    let (cpu_writes, notes) = restore_cpus(&online_mid, journal, &state.switchable);
    let writes: Vec<SysWrite> = control.into_iter().chain(cpu_writes).collect();
    let online_after = {
        let reach = journal.online.intersection(&state.switchable);
        let fixed = online_mid.difference(&state.switchable);
        reach.union(&fixed)
    };
    let nothing = writes.is_empty().then(|| {
        format!(
            "already in the recorded state (online {}{})",
            journal.online,
            journal
                .control
                .as_deref()
                .map(|c| format!(", smt/control = {c}"))
                .unwrap_or_default()
        )
    });
    Plan {
        writes,
        going_offline: state.online.difference(&online_after),
        coming_online: online_after.difference(&state.online),
        online_after,
        nothing,
        notes,
    }
}

/// A task (thread) and the CPUs it may run on, from `/proc/PID/task/TID/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskAffinity {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub allowed: CpuSet,
}

/// A process some of whose threads lose their affinity when CPUs go offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Affected {
    pub pid: u32,
    pub comm: String,
    /// The CPUs its threads were pinned to (union).
    pub allowed: CpuSet,
    /// How many of its threads are pinned only to CPUs going offline.
    pub threads: usize,
}

/// Processes with threads allowed only on CPUs that will be offline: the kernel resets
/// such a thread's affinity to every allowed CPU and does not put it back when the CPU
/// returns (`select_fallback_rq` in kernel/sched/core.c logs "no longer affine to cpuN").
pub fn affected(tasks: &[TaskAffinity], online_after: &CpuSet, going: &CpuSet) -> Vec<Affected> {
    let mut out: Vec<Affected> = Vec::new();
    for t in tasks {
        if t.allowed.is_empty()
            || t.allowed.intersects(online_after)
            || !t.allowed.intersects(going)
        {
            continue;
        }
        match out.iter_mut().find(|a| a.pid == t.pid) {
            Some(a) => {
                a.allowed = a.allowed.union(&t.allowed);
                a.threads += 1;
            }
            None => out.push(Affected {
                pid: t.pid,
                comm: t.comm.clone(),
                allowed: t.allowed.clone(),
                threads: 1,
            }),
        }
    }
    out.sort_by_key(|a| a.pid);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// 2 cores × 2 threads, siblings (0,1) and (2,3); CPU 0 has no online file.
    fn state(control: &str, online: &str) -> SmtState {
        let online = set(online);
        let cores = [set("0-1"), set("2-3")]
            .iter()
            .map(|c| c.intersection(&online))
            .filter(|c| !c.is_empty())
            .collect();
        SmtState {
            control: Some(control.into()),
            active: None,
            present: set("0-3"),
            online,
            switchable: set("1-3"),
            cores,
            cmdline_nosmt: vec![],
            vulnerabilities: vec![],
            cmt_modules: false,
        }
    }

    fn journal(control: &str, online: &str) -> Journal {
        Journal {
            control: Some(control.into()),
            online: set(online),
            cores: vec![set("0-1"), set("2-3")],
            ..Journal::for_test()
        }
    }

    #[test]
    fn smt_off_on_cmt_modules_is_refused_and_on_says_what_returns() {
        // AMD family 15h with the kernel's control on: `off` would take one integer core of
        // each module offline.
        let mut st = state("on", "0-3");
        st.cmt_modules = true;
        for m in [Method::Auto, Method::Control, Method::CpuOnline] {
            let e = plan_off(&st, m).unwrap_err();
            assert!(e.0.contains("CMT modules"), "{e}");
            assert!(e.0.contains("2 of the 4 integer cores"), "{e}");
        }
        // Cores offlined before (by hand, or a kernel's smt/control): `on` brings them
        // back and says they are cores.
        let mut st = state("notsupported", "0,2");
        st.cmt_modules = true;
        let p = plan_on(&st, Method::Auto).unwrap();
        assert_eq!(p.coming_online, set("1,3"));
        assert!(p.notes.contains(&Note::CmtCoresComingOnline), "{p:?}");
    }

    #[test]
    fn off_uses_the_control_when_it_switches() {
        let p = plan_off(&state("on", "0-3"), Method::Auto).unwrap();
        assert_eq!(p.writes, [SysWrite::control("off")]);
        assert_eq!(p.going_offline, set("1,3"));
        assert_eq!(p.online_after, set("0,2"));
    }

    #[test]
    fn off_offlines_every_sibling_but_the_first_without_the_control() {
        for control in ["notsupported", "notimplemented"] {
            let p = plan_off(&state(control, "0-3"), Method::Auto).unwrap();
            assert_eq!(
                p.writes,
                [SysWrite::online(1, false), SysWrite::online(3, false)],
                "{control}"
            );
        }
        let p = plan_off(&state("on", "0-3"), Method::CpuOnline).unwrap();
        assert_eq!(p.writes.len(), 2);
        assert_eq!(
            p.writes[0].to_string(),
            "echo 0 > /sys/devices/system/cpu/cpu1/online"
        );
    }

    #[test]
    fn a_sibling_without_an_online_file_is_kept_instead_of_the_first() {
        let mut s = state("notsupported", "0-3");
        s.switchable = set("0-2"); // CPU 3 cannot go offline: keep it, offline CPU 2.
        let p = plan_off(&s, Method::Auto).unwrap();
        assert_eq!(p.going_offline, set("1,2"));
        // Neither sibling of a core can go: it keeps both threads, said in a note.
        s.switchable = set("2");
        let p = plan_off(&s, Method::Auto).unwrap();
        assert_eq!(p.going_offline, set("2"));
        assert!(
            p.notes[0].to_string().contains("cpu1 has no online file"),
            "{:?}",
            p.notes
        );
    }

    #[test]
    fn nothing_to_switch_says_why() {
        let mut s = state("notsupported", "0-3");
        s.cores = vec![set("0"), set("1"), set("2"), set("3")];
        let p = plan_off(&s, Method::Auto).unwrap();
        assert!(p.writes.is_empty());
        assert!(p.nothing.unwrap().contains("notsupported"));
        let p = plan_off(&state("off", "0,2"), Method::Auto).unwrap();
        assert!(p.nothing.unwrap().contains("already off"));
        let p = plan_off(&state("forceoff", "0,2"), Method::Auto).unwrap();
        assert!(p.nothing.unwrap().contains("forceoff"));
        assert!(plan_off(&state("notsupported", "0-3"), Method::Control).is_err());
    }

    #[test]
    fn on_brings_back_what_it_can() {
        let p = plan_on(&state("off", "0,2"), Method::Auto).unwrap();
        assert_eq!(p.writes, [SysWrite::control("on")]);
        assert_eq!(p.online_after, set("0-3"));
        let p = plan_on(&state("notsupported", "0,2"), Method::Auto).unwrap();
        assert_eq!(
            p.writes,
            [SysWrite::online(1, true), SysWrite::online(3, true)]
        );
        let p = plan_on(&state("on", "0-3"), Method::Auto).unwrap();
        assert!(p.nothing.is_some());
        assert!(plan_on(&state("forceoff", "0,2"), Method::Auto).is_err());
        assert!(plan_on(&state("off", "0,2"), Method::CpuOnline).is_err());
    }

    #[test]
    fn restore_puts_back_the_recorded_state() {
        // After `off` by the control.
        let p = plan_restore(&state("off", "0,2"), &journal("on", "0-3"));
        assert_eq!(p.writes, [SysWrite::control("on")]);
        assert_eq!(p.online_after, set("0-3"));
        // After a SIGKILL halfway through offlining by online files.
        let p = plan_restore(
            &state("notsupported", "0,2-3"),
            &journal("notsupported", "0-3"),
        );
        assert_eq!(p.writes, [SysWrite::online(1, true)]);
        // The recorded state had CPU 3 offline and `on` brought it back.
        let p = plan_restore(&state("on", "0-3"), &journal("on", "0-2"));
        assert_eq!(p.writes, [SysWrite::online(3, false)]);
        assert_eq!(p.going_offline, set("3"));
        // Control back to on, then CPU 3 that was offline before the `off`.
        let p = plan_restore(&state("off", "0,2"), &journal("on", "0-2"));
        assert_eq!(
            p.writes,
            [SysWrite::control("on"), SysWrite::online(3, false)]
        );
        let p = plan_restore(&state("on", "0-3"), &journal("on", "0-3"));
        assert!(p.writes.is_empty());
        assert!(p.nothing.unwrap().contains("already in the recorded state"));
    }

    #[test]
    fn ups_come_before_downs() {
        let (w, _) = restore_cpus(&set("0,2"), &journal("on", "0-1"), &set("1-3"));
        assert_eq!(w, [SysWrite::online(1, true), SysWrite::online(2, false)]);
    }

    #[test]
    fn only_threads_pinned_to_offlined_cpus_are_affected() {
        let t = |pid, tid, allowed: &str| TaskAffinity {
            pid,
            tid,
            comm: format!("p{pid}"),
            allowed: set(allowed),
        };
        let tasks = [
            t(10, 10, "1"),
            t(10, 11, "1,3"),
            t(10, 12, "0-3"),
            t(20, 20, "0-1"),
            t(30, 30, "2"),
        ];
        let a = affected(&tasks, &set("0,2"), &set("1,3"));
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].pid, 10);
        assert_eq!(a[0].threads, 2);
        assert_eq!(a[0].allowed, set("1,3"));
    }
}
