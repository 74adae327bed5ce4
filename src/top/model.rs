//! `top`'s one serde model per interval, and the pure function that builds it from two
//! `/proc/stat` snapshots, the cores, an optional trace and an optional process's threads.
//! Every renderer (text, NDJSON, Prometheus) reads this model only.

use super::cores::{self, Yield};
use super::sample::ThreadStat;
use super::trace::{self, Trace};
use crate::cpuset::CpuSet;
use crate::hygiene::CpuTimes;
use crate::render::{fixed_bounds, percent_bounds};
use serde::Serialize;
use std::collections::BTreeMap;

/// Bumped when the JSON layout changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

/// One interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopSample {
    pub schema_version: u32,
    /// End of the interval, ms since the Unix epoch.
    pub time_unix_ms: u64,
    /// Length of the interval as measured, ns.
    pub interval_ns: u64,
    /// `proc-stat`, or `proc-stat+tracefs` when the per-core split was traced.
    pub source: String,
    /// Some core has more than one thread online.
    pub smt: bool,
    pub threads_per_core: usize,
    /// Online CPUs, ascending.
    pub cpus: Vec<CpuRow>,
    /// Cores, by first CPU.
    pub cores: Vec<CoreRow>,
    pub machine: MachineRow,
    /// The SMT yield the capacity figures use.
    pub smt_yield: Yield,
    pub tracefs: TraceStatus,
    /// The threads of `--pid`.
    pub pid: Option<PidReport>,
    /// What the reader should know about the figures, as sentences ([`Note`]).
    pub notes: Vec<String>,
}

/// What an interval tells its reader besides its figures; kept in [`TopSample::notes`] as
/// its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// These CPUs' `/proc/stat` counters did not advance over the interval.
    Silent { cpus: CpuSet },
    /// No context switch was traced on these CPUs: each taken as busy (true) or idle
    /// throughout from its `/proc/stat` share.
    NoSwitchTraced { cpus: Vec<(u32, bool)> },
    /// One thread per core online.
    NoSmt,
    /// The assumed (two-thread) yield on cores with more threads.
    AssumedYieldForTwo {
        assumed: f64,
        threads_per_core: usize,
    },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Silent { cpus } => write!(
                f,
                "CPUs {cpus}: no time accounted in /proc/stat over the interval; counted as idle"
            ),
            Note::NoSwitchTraced { cpus } => {
                f.write_str("no context switch traced on CPU ")?;
                for (i, (cpu, busy)) in cpus.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    let what = if *busy { "busy" } else { "idle" };
                    write!(f, "{sep}{cpu} ({what})")?;
                }
                f.write_str(
                    " during the interval: taken as busy or idle throughout from /proc/stat",
                )
            }
            Note::NoSmt => {
                f.write_str("one thread per core online: per-core figures are the per-CPU ones")
            }
            Note::AssumedYieldForTwo {
                assumed,
                threads_per_core,
            } => write!(
                f,
                "the assumed yield of {assumed:.2} is a two-thread Hyper-Threading figure; a core \
                 of {threads_per_core} threads can give more: measure it with `smtlab yield` and \
                 pass --yield FILE"
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
mod note_tests {
    use super::Note;

    #[test]
    fn notes_say_the_sentences_top_printed() {
        let traced = Note::NoSwitchTraced {
            cpus: vec![(1, true), (3, false)],
        };
        assert_eq!(
            traced,
            "no context switch traced on CPU 1 (busy), 3 (idle) during the interval: taken as \
             busy or idle throughout from /proc/stat"
        );
        let assumed = Note::AssumedYieldForTwo {
            assumed: 1.25,
            threads_per_core: 4,
        };
        assert_eq!(
            assumed,
            "the assumed yield of 1.25 is a two-thread Hyper-Threading figure; a core of 4 \
             threads can give more: measure it with `smtlab yield` and pass --yield FILE"
        );
        let silent = Note::Silent {
            cpus: crate::cpuset::CpuSet::from_cpus([2, 3]),
        };
        assert_eq!(
            silent,
            "CPUs 2-3: no time accounted in /proc/stat over the interval; counted as idle"
        );
    }
}

/// One logical CPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuRow {
    pub cpu: u32,
    /// Index into `cores`.
    pub core: usize,
    /// Share of the interval running something (user, nice, system, irq, softirq), 0–1;
    /// None when the CPU's counters did not advance.
    pub busy_share: Option<f64>,
    /// Share taken by the hypervisor (steal), 0–1.
    pub steal_share: Option<f64>,
}

/// One core (its online siblings).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreRow {
    pub core: usize,
    pub cpus: CpuSet,
    /// At least one sibling busy: bounds from the siblings' busy shares, 0–1.
    pub busy_min_share: f64,
    pub busy_max_share: f64,
    /// Two or more siblings busy: bounds, 0–1.
    pub both_busy_min_share: f64,
    pub both_busy_max_share: f64,
    /// Every sibling busy: bounds, 0–1 (the both-busy ones with two siblings).
    pub all_busy_min_share: f64,
    pub all_busy_max_share: f64,
    /// More than one but not every sibling busy, at most (exact when traced; 0 with two
    /// siblings): time no yield gives the throughput of.
    pub between_busy_max_share: f64,
    /// The exact split from `sched_switch`, when traced.
    pub traced: Option<TracedShares>,
    /// Share of the core's capacity used at the yield (cores' worth, 0–1): bounds, equal
    /// when traced.
    pub used_min_share: f64,
    pub used_max_share: f64,
}

/// A core's traced time, shares of the interval summing to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TracedShares {
    pub idle_share: f64,
    pub one_busy_share: f64,
    /// Two or more siblings busy.
    pub both_busy_share: f64,
    /// Every sibling busy (part of `both_busy_share`).
    pub all_busy_share: f64,
}

/// The machine as a whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MachineRow {
    /// Online CPUs and cores.
    pub cpus: usize,
    pub cores: usize,
    /// Mean busy share over the CPUs: what `top` and `mpstat` call CPU utilisation.
    pub logical_busy_share: f64,
    /// Mean over cores of the busy bounds.
    pub core_busy_min_share: f64,
    pub core_busy_max_share: f64,
    pub both_busy_min_share: f64,
    pub both_busy_max_share: f64,
    /// Mean over cores of the traced busy and both-busy shares, when every core was traced.
    pub traced_core_busy_share: Option<f64>,
    pub traced_both_busy_share: Option<f64>,
    /// Capacity left, in cores' worth (a core with every sibling busy = 1): bounds. When
    /// `headroom_modelled` is false they hold only if a core's throughput rises with its
    /// busy threads, and are too wide to act on.
    pub headroom_cores_min: f64,
    pub headroom_cores_max: f64,
    /// False when cores with more than two threads had some but not all of them busy for
    /// long enough that the unknown throughput of that state decides the headroom.
    pub headroom_modelled: bool,
    /// Why the headroom is not modelled, with the numbers.
    pub headroom_not_modelled: Option<String>,
    /// The figures in one sentence.
    pub summary: String,
}

/// Whether the per-core split was traced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStatus {
    pub used: bool,
    /// Why not, or what was partial.
    pub reason: Option<String>,
    /// CPUs whose trace buffer lost events: their cores have no traced split.
    pub lost_cpus: CpuSet,
}

/// The threads of one process over the interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PidReport {
    pub pid: u32,
    pub comm: Option<String>,
    /// `tracefs` (exact run times) or `sampled` (`/proc/PID/task/*/stat` every few ms).
    pub method: String,
    /// Samples taken (sampled only).
    pub samples: u32,
    /// The process ended during the interval.
    pub gone: bool,
    pub threads: Vec<ThreadRow>,
}

/// One thread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadRow {
    pub tid: u32,
    pub comm: String,
    /// User + system time over the interval ÷ the interval (0–1 per thread).
    pub cpu_share: Option<f64>,
    /// The CPUs it ran on.
    pub cpus: Vec<ThreadCpu>,
    /// Other threads of the process that ran on a sibling of its core at the same time.
    pub shared_core_with: Vec<SharedCore>,
}

/// Where a thread ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadCpu {
    pub cpu: u32,
    pub core: Option<usize>,
    /// Time it ran there, ns (traced).
    pub ran_ns: Option<u64>,
    /// Samples that saw it running there (sampled).
    pub samples: Option<u32>,
}

/// Two threads on one core at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SharedCore {
    pub tid: u32,
    pub core: usize,
    /// Time both ran on the core's siblings at once, ns (traced).
    pub overlap_ns: Option<u64>,
    /// Samples that saw both running on the core (sampled).
    pub samples: Option<u32>,
}

/// What the trace gave for an interval.
#[derive(Debug, Clone)]
pub enum TraceInput {
    /// Not traced, and why.
    Off(String),
    Traced(Trace),
}

/// A process's threads as sampled over the interval.
#[derive(Debug, Clone)]
pub struct PidInput {
    pub pid: u32,
    pub comm: Option<String>,
    /// Snapshots taken during the interval, first at its start, last at its end.
    pub snapshots: Vec<Vec<ThreadStat>>,
    pub gone: bool,
    /// Clock ticks per second (`sysconf(_SC_CLK_TCK)`).
    pub ticks_per_sec: u64,
}

/// Everything one interval is built from.
pub struct Inputs<'a> {
    /// Cores of the online CPUs.
    pub cores: &'a [CpuSet],
    pub before: &'a [CpuTimes],
    pub after: &'a [CpuTimes],
    pub interval_ns: u64,
    pub time_unix_ms: u64,
    pub smt_yield: &'a Yield,
    pub trace: TraceInput,
    pub pid: Option<PidInput>,
}

/// Builds the interval's model (pure).
pub fn build(inp: Inputs) -> TopSample {
    let mut notes: Vec<Note> = Vec::new();
    let online: CpuSet = inp.cores.iter().flat_map(|c| c.iter()).collect();
    let loads = crate::hygiene::load_between(inp.before, inp.after, &online);
    let core_of: BTreeMap<u32, usize> = inp
        .cores
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.iter().map(move |cpu| (cpu, i)))
        .collect();
    let cpus: Vec<CpuRow> = online
        .iter()
        .map(|cpu| {
            let l = loads.iter().find(|l| l.cpu == cpu);
            CpuRow {
                cpu,
                core: core_of[&cpu],
                busy_share: l.map(|l| l.busy.clamp(0.0, 1.0)),
                steal_share: l.map(|l| l.steal.clamp(0.0, 1.0)),
            }
        })
        .collect();
    let silent: CpuSet = cpus
        .iter()
        .filter(|c| c.busy_share.is_none())
        .map(|c| c.cpu)
        .collect();
    if !silent.is_empty() {
        notes.push(Note::Silent { cpus: silent });
    }
    let busy_of = |cpu: u32| {
        cpus.iter()
            .find(|c| c.cpu == cpu)
            .and_then(|c| c.busy_share)
            .unwrap_or(0.0)
    };
    let threads_per_core = inp.cores.iter().map(CpuSet::len).max().unwrap_or(1);
    let smt = threads_per_core > 1;
    let y = inp.smt_yield.value;

    // The traced timelines, when there is a trace with both markers.
    let (timelines, trace_status) = match &inp.trace {
        TraceInput::Off(why) => (
            None,
            TraceStatus {
                used: false,
                reason: Some(why.clone()),
                lost_cpus: CpuSet::new(),
            },
        ),
        TraceInput::Traced(t) => match (t.begin_ns, t.end_ns) {
            (Some(t0), Some(t1)) if t1 > t0 => {
                let runs = trace::runs(t, t0, t1);
                let mut guessed = Vec::new();
                let busy: BTreeMap<u32, Vec<(u64, u64)>> = online
                    .iter()
                    .map(|cpu| {
                        let v = match runs.get(&cpu) {
                            Some(r) => trace::busy(r),
                            // No switch at all: one task ran throughout, or the CPU idled.
                            None => {
                                let b = busy_of(cpu);
                                guessed.push((cpu, b));
                                if b >= 0.5 { vec![(t0, t1)] } else { Vec::new() }
                            }
                        };
                        (cpu, v)
                    })
                    .collect();
                if !guessed.is_empty() {
                    notes.push(Note::NoSwitchTraced {
                        cpus: guessed.iter().map(|&(c, b)| (c, b >= 0.5)).collect(),
                    });
                }
                let lost = t.lost.intersection(&online);
                let reason = (!lost.is_empty()).then(|| {
                    format!(
                        "the trace buffer lost events on CPUs {lost}: their cores are not traced"
                    )
                });
                (
                    Some((busy, runs, t0, t1)),
                    TraceStatus {
                        used: true,
                        reason,
                        lost_cpus: lost,
                    },
                )
            }
            _ => (
                None,
                TraceStatus {
                    used: false,
                    reason: Some("the trace held no begin and end markers".into()),
                    lost_cpus: t.lost.clone(),
                },
            ),
        },
    };

    let cores: Vec<CoreRow> = inp
        .cores
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let b: Vec<f64> = c.iter().map(busy_of).collect();
            let bd = cores::bounds(&b);
            let traced = timelines.as_ref().and_then(|(busy, _, t0, t1)| {
                if c.intersects(&trace_status.lost_cpus) {
                    return None;
                }
                let sib: Vec<Vec<(u64, u64)>> = c.iter().map(|cpu| busy[&cpu].clone()).collect();
                let s = cores::split(&sib, *t0, *t1);
                Some((
                    TracedShares {
                        idle_share: s.idle,
                        one_busy_share: s.one,
                        both_busy_share: s.both,
                        all_busy_share: s.all,
                    },
                    cores::used_traced(&s, y),
                ))
            });
            let (traced, (used_min, used_max), between) = match traced {
                Some((t, used)) => (
                    Some(t),
                    used,
                    if c.len() > 2 {
                        (t.both_busy_share - t.all_busy_share).max(0.0)
                    } else {
                        0.0
                    },
                ),
                None => (None, cores::used_range(&b, y), bd.between_max()),
            };
            CoreRow {
                core: i,
                cpus: c.clone(),
                busy_min_share: bd.busy_min,
                busy_max_share: bd.busy_max,
                both_busy_min_share: bd.both_min,
                both_busy_max_share: bd.both_max,
                all_busy_min_share: bd.all_min,
                all_busy_max_share: bd.all_max,
                between_busy_max_share: between,
                traced,
                used_min_share: used_min,
                used_max_share: used_max,
            }
        })
        .collect();

    let n_cores = cores.len().max(1) as f64;
    let mean = |f: &dyn Fn(&CoreRow) -> f64| cores.iter().map(f).sum::<f64>() / n_cores;
    let all_traced = !cores.is_empty() && cores.iter().all(|c| c.traced.is_some());
    let traced_mean = |f: &dyn Fn(&TracedShares) -> f64| {
        all_traced.then(|| mean(&|c: &CoreRow| c.traced.as_ref().map_or(0.0, f)))
    };
    let machine = {
        let logical = cpus
            .iter()
            .map(|c| c.busy_share.unwrap_or(0.0))
            .sum::<f64>()
            / cpus.len().max(1) as f64;
        let mut m = MachineRow {
            cpus: cpus.len(),
            cores: cores.len(),
            logical_busy_share: logical,
            core_busy_min_share: mean(&|c| c.busy_min_share),
            core_busy_max_share: mean(&|c| c.busy_max_share),
            both_busy_min_share: mean(&|c| c.both_busy_min_share),
            both_busy_max_share: mean(&|c| c.both_busy_max_share),
            traced_core_busy_share: traced_mean(&|t| t.one_busy_share + t.both_busy_share),
            traced_both_busy_share: traced_mean(&|t| t.both_busy_share),
            headroom_cores_min: cores.iter().map(|c| 1.0 - c.used_max_share).sum(),
            headroom_cores_max: cores.iter().map(|c| 1.0 - c.used_min_share).sum(),
            headroom_modelled: true,
            headroom_not_modelled: None,
            summary: String::new(),
        };
        m.headroom_not_modelled = not_modelled(&cores, threads_per_core, y);
        m.headroom_modelled = m.headroom_not_modelled.is_none();
        m.summary = summary(&m, smt, threads_per_core, inp.smt_yield);
        m
    };
    if !smt {
        notes.push(Note::NoSmt);
    }
    if threads_per_core > 2 && inp.smt_yield.source == "assumed" {
        notes.push(Note::AssumedYieldForTwo {
            assumed: y,
            threads_per_core,
        });
    }
    let pid = inp.pid.map(|p| {
        pid_report(
            p,
            &core_of,
            inp.interval_ns,
            timelines.as_ref().map(|(_, runs, t0, t1)| (runs, *t0, *t1)),
        )
    });
    TopSample {
        schema_version: SCHEMA_VERSION,
        time_unix_ms: inp.time_unix_ms,
        interval_ns: inp.interval_ns,
        source: if trace_status.used {
            "proc-stat+tracefs".into()
        } else {
            "proc-stat".into()
        },
        smt,
        threads_per_core,
        cpus,
        cores,
        machine,
        smt_yield: inp.smt_yield.clone(),
        tracefs: trace_status,
        pid,
        notes: notes.into_iter().map(String::from).collect(),
    }
}

/// The time between one and all threads busy may shift a core's capacity by up to
/// (1 − 1/Y) of it: when that adds up to more than this share of the cores, the capacity
/// left is not modelled.
pub const UNMODELLED_LIMIT: f64 = 0.05;

/// Why the capacity left cannot be given, or None when it can: cores of more than two
/// threads spent time with some but not all of them busy, whose throughput no yield gives
/// (it compares every thread of a core busy with one alone).
fn not_modelled(cores: &[CoreRow], threads_per_core: usize, y: f64) -> Option<String> {
    if threads_per_core <= 2 {
        return None;
    }
    let y = y.max(1.0);
    let spread: f64 = cores
        .iter()
        .map(|c| c.between_busy_max_share * (1.0 - 1.0 / y))
        .sum();
    if spread <= UNMODELLED_LIMIT * cores.len().max(1) as f64 {
        return None;
    }
    let most = cores
        .iter()
        .map(|c| c.between_busy_max_share)
        .fold(0.0, f64::max);
    let k = threads_per_core;
    let between = if k == 3 {
        "2 of 3".to_string()
    } else {
        format!("2–{} of {k}", k - 1)
    };
    let traced = cores.iter().all(|c| c.traced.is_some());
    Some(format!(
        "cores had {between} threads busy for {} {} of the interval, and no yield gives a \
         core's throughput then (the yield compares all {k} threads busy with one alone); \
         if throughput rises with busy threads, {} of {} cores' capacity is left",
        if traced { "as much as" } else { "up to" },
        percent_bounds(most, most),
        fixed_bounds(
            cores
                .iter()
                .map(|c| 1.0 - c.used_max_share)
                .sum::<f64>()
                .max(0.0),
            cores
                .iter()
                .map(|c| 1.0 - c.used_min_share)
                .sum::<f64>()
                .max(0.0),
            1
        ),
        cores.len()
    ))
}

/// "What 50 % means" for this interval.
fn summary(m: &MachineRow, smt: bool, threads_per_core: usize, y: &Yield) -> String {
    let left = fixed_bounds(
        m.headroom_cores_min.max(0.0),
        m.headroom_cores_max.max(0.0),
        1,
    );
    if !smt {
        return format!(
            "logical {} busy (one thread per core: cores are CPUs); about {left} of {} cores left",
            percent_bounds(m.logical_busy_share, m.logical_busy_share),
            m.cores
        );
    }
    let yield_words = if y.source == "assumed" {
        format!("an assumed SMT yield of {:.2}", y.value)
    } else {
        format!("the measured SMT yield of {:.2}", y.value)
    };
    let two = if threads_per_core > 2 {
        "2+ threads"
    } else {
        "both threads"
    };
    let cores_part = match (m.traced_core_busy_share, m.traced_both_busy_share) {
        (Some(b), Some(both)) => format!(
            "cores {} busy, {two} {} (traced)",
            percent_bounds(b, b),
            percent_bounds(both, both)
        ),
        _ => format!(
            "cores {} busy, {two} {}",
            percent_bounds(m.core_busy_min_share, m.core_busy_max_share),
            percent_bounds(m.both_busy_min_share, m.both_busy_max_share)
        ),
    };
    let logical = percent_bounds(m.logical_busy_share, m.logical_busy_share);
    match &m.headroom_not_modelled {
        Some(why) => {
            format!("logical {logical} busy; {cores_part}; capacity left not modelled: {why}")
        }
        None => format!(
            "logical {logical} busy; {cores_part}; at {yield_words}, about {left} of {} cores' \
             capacity left",
            m.cores
        ),
    }
}

fn pid_report(
    p: PidInput,
    core_of: &BTreeMap<u32, usize>,
    interval_ns: u64,
    traced: Option<(&trace::Runs, u64, u64)>,
) -> PidReport {
    let first = p.snapshots.first().cloned().unwrap_or_default();
    let last = p.snapshots.last().cloned().unwrap_or_default();
    let mut tids: Vec<(u32, String)> = p
        .snapshots
        .iter()
        .flatten()
        .map(|t| (t.tid, t.comm.clone()))
        .collect();
    tids.sort();
    tids.dedup_by_key(|t| t.0);
    let secs = interval_ns as f64 / 1e9;
    let cpu_share = |tid: u32| {
        let a = first.iter().find(|t| t.tid == tid)?;
        let b = last.iter().find(|t| t.tid == tid)?;
        (secs > 0.0 && p.ticks_per_sec > 0).then(|| {
            (b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64 / p.ticks_per_sec as f64 / secs)
                .clamp(0.0, 1.0)
        })
    };
    let tid_set: Vec<u32> = tids.iter().map(|t| t.0).collect();
    let mut threads = Vec::new();
    match traced {
        Some((runs, t0, t1)) => {
            // Each thread's runs per CPU, from the trace.
            let mut mine: BTreeMap<u32, Vec<(u32, u64, u64)>> = BTreeMap::new();
            // A CPU without a single switch ran one task throughout, which the trace does
            // not name: the thread every snapshot saw running there, if any.
            let silent: Vec<u32> = core_of
                .keys()
                .copied()
                .filter(|c| !runs.contains_key(c))
                .collect();
            let mut runs = runs.clone();
            for cpu in silent {
                let always = |tid: u32| {
                    !p.snapshots.is_empty()
                        && p.snapshots.iter().all(|snap| {
                            snap.iter()
                                .any(|t| t.tid == tid && t.running && t.cpu == cpu)
                        })
                };
                if let Some(&tid) = tid_set.iter().find(|&&t| always(t)) {
                    runs.insert(cpu, vec![(t0, t1, tid)]);
                }
            }
            for (&cpu, v) in &runs {
                for &(a, b, pid) in v {
                    if tid_set.contains(&pid) {
                        mine.entry(pid).or_default().push((cpu, a, b));
                    }
                }
            }
            for (tid, comm) in &tids {
                let r = mine.get(tid).cloned().unwrap_or_default();
                let mut per_cpu: BTreeMap<u32, u64> = BTreeMap::new();
                for &(cpu, a, b) in &r {
                    *per_cpu.entry(cpu).or_default() += b - a;
                }
                let mut shared: BTreeMap<(u32, usize), u64> = BTreeMap::new();
                for (other, ro) in mine.iter().filter(|(o, _)| *o != tid) {
                    for &(c1, a1, b1) in &r {
                        for &(c2, a2, b2) in ro {
                            let (Some(&k1), Some(&k2)) = (core_of.get(&c1), core_of.get(&c2))
                            else {
                                continue;
                            };
                            if c1 == c2 || k1 != k2 {
                                continue;
                            }
                            let ov = b1.min(b2).saturating_sub(a1.max(a2));
                            if ov > 0 {
                                *shared.entry((*other, k1)).or_default() += ov;
                            }
                        }
                    }
                }
                threads.push(ThreadRow {
                    tid: *tid,
                    comm: comm.clone(),
                    cpu_share: cpu_share(*tid),
                    cpus: per_cpu
                        .into_iter()
                        .map(|(cpu, ns)| ThreadCpu {
                            cpu,
                            core: core_of.get(&cpu).copied(),
                            ran_ns: Some(ns),
                            samples: None,
                        })
                        .collect(),
                    shared_core_with: shared
                        .into_iter()
                        .map(|((tid, core), ns)| SharedCore {
                            tid,
                            core,
                            overlap_ns: Some(ns),
                            samples: None,
                        })
                        .collect(),
                });
            }
        }
        None => {
            for (tid, comm) in &tids {
                let mut per_cpu: BTreeMap<u32, u32> = BTreeMap::new();
                let mut shared: BTreeMap<(u32, usize), u32> = BTreeMap::new();
                for snap in &p.snapshots {
                    let Some(me) = snap.iter().find(|t| t.tid == *tid && t.running) else {
                        continue;
                    };
                    *per_cpu.entry(me.cpu).or_default() += 1;
                    let Some(&k) = core_of.get(&me.cpu) else {
                        continue;
                    };
                    for o in snap.iter().filter(|o| o.tid != *tid && o.running) {
                        if o.cpu != me.cpu && core_of.get(&o.cpu) == Some(&k) {
                            *shared.entry((o.tid, k)).or_default() += 1;
                        }
                    }
                }
                threads.push(ThreadRow {
                    tid: *tid,
                    comm: comm.clone(),
                    cpu_share: cpu_share(*tid),
                    cpus: per_cpu
                        .into_iter()
                        .map(|(cpu, n)| ThreadCpu {
                            cpu,
                            core: core_of.get(&cpu).copied(),
                            ran_ns: None,
                            samples: Some(n),
                        })
                        .collect(),
                    shared_core_with: shared
                        .into_iter()
                        .map(|((tid, core), n)| SharedCore {
                            tid,
                            core,
                            overlap_ns: None,
                            samples: Some(n),
                        })
                        .collect(),
                });
            }
        }
    }
    PidReport {
        pid: p.pid,
        comm: p.comm,
        method: if traced.is_some() {
            "tracefs"
        } else {
            "sampled"
        }
        .into(),
        samples: p.snapshots.len() as u32,
        gone: p.gone,
        threads,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn times(cpu: u32, busy: u64, idle: u64) -> CpuTimes {
        CpuTimes {
            cpu,
            busy,
            idle,
            steal: 0,
        }
    }

    fn set(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// 2 cores × 2 threads; CPU 1 busy all the interval, the rest idle.
    pub(crate) fn one_busy_sibling(trace: TraceInput) -> TopSample {
        let cores = [set("0-1"), set("2-3")];
        let before: Vec<CpuTimes> = (0..4).map(|c| times(c, 0, 0)).collect();
        let after = vec![
            times(0, 0, 100),
            times(1, 100, 0),
            times(2, 0, 100),
            times(3, 1, 99),
        ];
        build(Inputs {
            cores: &cores,
            before: &before,
            after: &after,
            interval_ns: 1_000_000_000,
            time_unix_ms: 0,
            smt_yield: &Yield::assumed(),
            trace,
            pid: None,
        })
    }

    #[test]
    fn a_busy_sibling_bounds_its_core_and_leaves_the_other_idle() {
        let s = one_busy_sibling(TraceInput::Off("not root".into()));
        assert!(s.smt);
        assert_eq!(s.cores[0].busy_min_share, 1.0);
        assert_eq!(s.cores[0].busy_max_share, 1.0);
        assert_eq!(s.cores[0].both_busy_max_share, 0.0);
        assert!(s.cores[1].busy_max_share <= 0.011);
        assert!((s.machine.logical_busy_share - 0.2525).abs() < 1e-9);
        // Core 0: one thread = 0.8 of a core used; core 1 nearly idle: ~1.2 cores left.
        assert!((s.cores[0].used_max_share - 0.8).abs() < 1e-9);
        assert!(s.machine.headroom_cores_min > 1.18 && s.machine.headroom_cores_max < 1.21);
        assert!(
            s.machine.summary.contains("logical 25 %"),
            "{}",
            s.machine.summary
        );
        assert!(s.machine.summary.contains("assumed SMT yield of 1.25"));
        assert_eq!(s.source, "proc-stat");
        assert_eq!(s.tracefs.reason.as_deref(), Some("not root"));
    }

    #[test]
    fn a_trace_gives_the_exact_split() {
        let t = Trace {
            switches: vec![
                trace::Switch {
                    cpu: 0,
                    ts_ns: 1_500_000_000,
                    prev_pid: 0,
                    next_pid: 9,
                    next_comm: "x".into(),
                },
                trace::Switch {
                    cpu: 1,
                    ts_ns: 1_000_000_100,
                    prev_pid: 5,
                    next_pid: 6,
                    next_comm: "y".into(),
                },
            ],
            begin_ns: Some(1_000_000_000),
            end_ns: Some(2_000_000_000),
            lost: CpuSet::new(),
        };
        let s = one_busy_sibling(TraceInput::Traced(t));
        let tr = s.cores[0].traced.unwrap();
        assert!((tr.both_busy_share - 0.5).abs() < 1e-6, "{tr:?}");
        assert!((tr.one_busy_share - 0.5).abs() < 1e-6, "{tr:?}");
        // CPUs 2 and 3 had no switch: taken as idle from /proc/stat, said in a note.
        assert_eq!(s.cores[1].traced.unwrap().idle_share, 1.0);
        assert!(s.notes.iter().any(|n| n.contains("no context switch")));
        assert_eq!(s.source, "proc-stat+tracefs");
        assert!(
            s.machine.summary.contains("(traced)"),
            "{}",
            s.machine.summary
        );
    }

    /// POWER7-shaped: 4 cores × 4 threads (siblings 4c..4c+3); `busy` CPUs busy all the
    /// interval, the rest idle.
    fn smt4(busy: &[u32], trace: TraceInput) -> TopSample {
        let cores = [set("0-3"), set("4-7"), set("8-11"), set("12-15")];
        let before: Vec<CpuTimes> = (0..16).map(|c| times(c, 0, 0)).collect();
        let after: Vec<CpuTimes> = (0..16)
            .map(|c| {
                if busy.contains(&c) {
                    times(c, 100, 0)
                } else {
                    times(c, 0, 100)
                }
            })
            .collect();
        build(Inputs {
            cores: &cores,
            before: &before,
            after: &after,
            interval_ns: 1_000_000_000,
            time_unix_ms: 0,
            smt_yield: &Yield::assumed(),
            trace,
            pid: None,
        })
    }

    #[test]
    fn top_smt4_two_of_four_busy_is_not_zero_capacity() {
        // 2 of 4 threads busy on every core: the yield (all 4 threads ÷ 1) says nothing of
        // a core with 2 busy, so the capacity left is not modelled, never "0.0".
        let s = smt4(
            &[0, 1, 4, 5, 8, 9, 12, 13],
            TraceInput::Off("not root".into()),
        );
        let m = &s.machine;
        assert!(!m.summary.contains("about 0.0 of 4"), "{}", m.summary);
        assert!(m.summary.contains("not modelled"), "{}", m.summary);
        assert!(!m.headroom_modelled);
        let why = m.headroom_not_modelled.as_deref().unwrap();
        assert!(why.contains("2–3 of 4"), "{why}");
        // What is known still holds: between 1/Y and all of each core used.
        for c in &s.cores {
            assert!((c.used_min_share - 0.8).abs() < 1e-9, "{c:?}");
            assert!((c.used_max_share - 1.0).abs() < 1e-9, "{c:?}");
        }
        assert!((m.headroom_cores_max - 0.8).abs() < 1e-9, "{m:?}");
        // The Prometheus view leaves the headroom gauge out and says why.
        let p = super::super::view::prometheus(&s);
        assert!(!p.contains("smtlab_headroom_cores{"), "{p}");
        assert!(p.contains("smtlab_headroom_modelled 0"), "{p}");
    }

    #[test]
    fn top_smt4_one_or_all_threads_busy_is_modelled() {
        // One thread per core: 1/Y of each core, exactly (0.2 × 4 = 0.8 left).
        let s = smt4(&[0, 4, 8, 12], TraceInput::Off("not root".into()));
        assert!(s.machine.headroom_modelled, "{:?}", s.machine);
        assert!(
            (s.machine.headroom_cores_min - 0.8).abs() < 1e-9,
            "{:?}",
            s.machine
        );
        assert!(
            (s.machine.headroom_cores_max - 0.8).abs() < 1e-9,
            "{:?}",
            s.machine
        );
        assert!(
            s.machine.summary.contains("about 0.8 of 4 cores"),
            "{}",
            s.machine.summary
        );
        // Every thread of cores 0 and 1 busy, cores 2 and 3 idle: 2 cores left.
        let s = smt4(
            &[0, 1, 2, 3, 4, 5, 6, 7],
            TraceInput::Off("not root".into()),
        );
        assert!(s.machine.headroom_modelled, "{:?}", s.machine);
        assert!(
            (s.machine.headroom_cores_min - 2.0).abs() < 1e-9,
            "{:?}",
            s.machine
        );
        assert!(
            (s.machine.headroom_cores_max - 2.0).abs() < 1e-9,
            "{:?}",
            s.machine
        );
    }

    #[test]
    fn without_smt_cores_are_cpus_and_said_once() {
        let cores = [set("0"), set("1")];
        let before = [times(0, 0, 0), times(1, 0, 0)];
        let after = [times(0, 50, 50), times(1, 0, 100)];
        let s = build(Inputs {
            cores: &cores,
            before: &before,
            after: &after,
            interval_ns: 1_000_000_000,
            time_unix_ms: 0,
            smt_yield: &Yield::assumed(),
            trace: TraceInput::Off("x".into()),
            pid: None,
        });
        assert!(!s.smt);
        assert_eq!(s.cores[0].busy_min_share, 0.5);
        assert_eq!(s.cores[0].busy_max_share, 0.5);
        assert!((s.machine.headroom_cores_max - 1.5).abs() < 1e-9);
        assert_eq!(
            s.notes
                .iter()
                .filter(|n| n.starts_with("one thread per core"))
                .count(),
            1
        );
        assert!(
            s.machine.summary.contains("one thread per core"),
            "{}",
            s.machine.summary
        );
    }

    #[test]
    fn sampled_threads_on_siblings_share_a_core() {
        let cores = [set("0-1"), set("2-3")];
        let th = |tid, cpu, running, ticks| ThreadStat {
            tid,
            comm: format!("t{tid}"),
            running,
            cpu,
            cpu_ticks: ticks,
        };
        let snaps = vec![
            vec![th(10, 0, true, 0), th(11, 1, true, 0), th(12, 2, false, 0)],
            vec![
                th(10, 0, true, 50),
                th(11, 1, false, 10),
                th(12, 2, true, 5),
            ],
            vec![
                th(10, 0, true, 100),
                th(11, 1, true, 20),
                th(12, 3, false, 5),
            ],
        ];
        let before: Vec<CpuTimes> = (0..4).map(|c| times(c, 0, 0)).collect();
        let after: Vec<CpuTimes> = (0..4).map(|c| times(c, 50, 50)).collect();
        let s = build(Inputs {
            cores: &cores,
            before: &before,
            after: &after,
            interval_ns: 1_000_000_000,
            time_unix_ms: 0,
            smt_yield: &Yield::assumed(),
            trace: TraceInput::Off("x".into()),
            pid: Some(PidInput {
                pid: 10,
                comm: Some("app".into()),
                snapshots: snaps,
                gone: false,
                ticks_per_sec: 100,
            }),
        });
        let p = s.pid.unwrap();
        assert_eq!(p.method, "sampled");
        let t10 = &p.threads[0];
        assert_eq!(t10.cpu_share, Some(1.0));
        assert_eq!(t10.cpus[0].samples, Some(3));
        assert_eq!(t10.shared_core_with.len(), 1);
        assert_eq!(t10.shared_core_with[0].tid, 11);
        assert_eq!(t10.shared_core_with[0].samples, Some(2));
        assert!(p.threads[2].shared_core_with.is_empty());
    }

    #[test]
    fn traced_threads_that_never_switched_come_from_the_snapshots() {
        let cores = [set("0-1"), set("2-3")];
        let th = |tid, cpu| ThreadStat {
            tid,
            comm: "burn".into(),
            running: true,
            cpu,
            cpu_ticks: 0,
        };
        // Two burner threads on siblings 0 and 1, never switched out; a switch on CPU 2.
        let t = Trace {
            switches: vec![trace::Switch {
                cpu: 2,
                ts_ns: 1_500_000_000,
                prev_pid: 0,
                next_pid: 99,
                next_comm: "other".into(),
            }],
            begin_ns: Some(1_000_000_000),
            end_ns: Some(2_000_000_000),
            lost: CpuSet::new(),
        };
        let before: Vec<CpuTimes> = (0..4).map(|c| times(c, 0, 0)).collect();
        let after = [
            times(0, 100, 0),
            times(1, 100, 0),
            times(2, 50, 50),
            times(3, 0, 100),
        ];
        let s = build(Inputs {
            cores: &cores,
            before: &before,
            after: &after,
            interval_ns: 1_000_000_000,
            time_unix_ms: 0,
            smt_yield: &Yield::assumed(),
            trace: TraceInput::Traced(t),
            pid: Some(PidInput {
                pid: 10,
                comm: None,
                snapshots: vec![vec![th(10, 0), th(11, 1)]; 3],
                gone: false,
                ticks_per_sec: 100,
            }),
        });
        assert_eq!(s.cores[0].traced.unwrap().both_busy_share, 1.0);
        let p = s.pid.unwrap();
        assert_eq!(p.method, "tracefs");
        let shared = &p.threads[0].shared_core_with;
        assert_eq!(shared.len(), 1, "{p:?}");
        assert_eq!(shared[0].tid, 11);
        assert_eq!(shared[0].overlap_ns, Some(1_000_000_000));
    }
}
