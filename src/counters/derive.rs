//! Pure arithmetic over counts: multiplexing scaling, and the figures derived from
//! cycles and instructions — IPC and CPI per thread, a core's CPI over its SMT siblings,
//! effective frequency.
//!
//! Core CPI as the blog post "Measuring Intel Hyper-Thread Overhead" (July 2016) works it
//! out: two siblings that share a core for 1 M cycles and retire 750 k and 500 k
//! instructions have thread CPIs of 1.33 and 2.0, and the core retired 1.25 M
//! instructions in 1 M cycles: core CPI 0.80. On
//! Intel, `cycles` (CPU_CLK_UNHALTED.THREAD) counts one logical CPU's unhalted cycles, so
//! the core's cycles are not the sum of its threads': [`core_cpi`] takes the largest,
//! which is exact when one sibling is busy whenever another is (measured threads that
//! run for the whole window) and a lower bound otherwise.

use super::Event;
use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// An event's count over a window, scaled for multiplexing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scaled {
    pub value: u64,
    /// Share of the enabled time the event was actually counted (1 = all of it).
    pub counted_share: f64,
}

/// Scales `raw`, counted for `running_ns` of the `enabled_ns` it was enabled, to the
/// whole window: `raw × enabled / running`, as `perf stat` does when the PMU had more
/// events than counters and took turns (perf_event_open(2), "time_enabled",
/// "time_running"). None when the event never counted: never enabled (an empty window,
/// a command that never started) or never scheduled on the PMU.
pub fn scale(raw: u64, enabled_ns: u64, running_ns: u64) -> Option<Scaled> {
    if enabled_ns == 0 || running_ns == 0 {
        return None;
    }
    if running_ns >= enabled_ns {
        return Some(Scaled {
            value: raw,
            counted_share: 1.0,
        });
    }
    let v = raw as u128 * enabled_ns as u128 / running_ns as u128;
    Some(Scaled {
        value: u64::try_from(v).unwrap_or(u64::MAX),
        counted_share: running_ns as f64 / enabled_ns as f64,
    })
}

/// Instructions per cycle; None without cycles.
pub fn ipc(instructions: u64, cycles: u64) -> Option<f64> {
    (cycles > 0).then(|| instructions as f64 / cycles as f64)
}

/// Cycles per instruction; None without instructions.
pub fn cpi(cycles: u64, instructions: u64) -> Option<f64> {
    (instructions > 0).then(|| cycles as f64 / instructions as f64)
}

/// Cycles per nanosecond on a CPU (GHz): cycles over task-clock time. Below the nominal
/// clock when the CPU ran slower (power management, a busy sibling does not change it).
pub fn effective_ghz(cycles: u64, task_clock_ns: u64) -> Option<f64> {
    (task_clock_ns > 0).then(|| cycles as f64 / task_clock_ns as f64)
}

/// A core's CPI from its siblings' (cycles, instructions) over the same window: the
/// core's cycles (the largest sibling's, see the module docs) over all instructions its
/// siblings retired. None without instructions.
pub fn core_cpi(siblings: &[(u64, u64)]) -> Option<f64> {
    let cycles = siblings.iter().map(|s| s.0).max()?;
    let instructions: u64 = siblings.iter().map(|s| s.1).sum();
    cpi(cycles, instructions)
}

/// What the counters of one thread (or one process tree) counted over a measured window,
/// scaled for multiplexing. A field is None (JSON `null`) when its event was not counted:
/// never 0 in its place. Why an event is missing is in the run's
/// [`Unavailable`](super::Unavailable) list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// CPU time on the task clock, ns (`task-clock`).
    pub task_clock_ns: Option<u64>,
    pub context_switches: Option<u64>,
    pub cpu_migrations: Option<u64>,
    pub page_faults: Option<u64>,
    /// Unhalted core cycles of the logical CPU (`cycles`).
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    /// Cycles at the nominal (reference) frequency (`ref-cycles`).
    pub ref_cycles: Option<u64>,
    pub stalled_cycles_frontend: Option<u64>,
    pub stalled_cycles_backend: Option<u64>,
    /// Last-level cache read misses (`LLC-load-misses`).
    pub llc_load_misses: Option<u64>,
    pub branch_misses: Option<u64>,
    /// Instructions per cycle.
    pub ipc: Option<f64>,
    /// Cycles per instruction.
    pub cpi: Option<f64>,
    /// Cycles per task-clock nanosecond.
    pub effective_ghz: Option<f64>,
    /// The smallest share of its enabled time any counted event was on the PMU (1 = no
    /// multiplexing; the values are scaled up by its inverse). None when nothing counted.
    pub counted_share: Option<f64>,
}

impl Counts {
    /// The value of `e`.
    pub fn get(&self, e: Event) -> Option<u64> {
        match e {
            Event::TaskClock => self.task_clock_ns,
            Event::ContextSwitches => self.context_switches,
            Event::CpuMigrations => self.cpu_migrations,
            Event::PageFaults => self.page_faults,
            Event::Cycles => self.cycles,
            Event::Instructions => self.instructions,
            Event::RefCycles => self.ref_cycles,
            Event::StalledCyclesFrontend => self.stalled_cycles_frontend,
            Event::StalledCyclesBackend => self.stalled_cycles_backend,
            Event::LlcLoadMisses => self.llc_load_misses,
            Event::BranchMisses => self.branch_misses,
        }
    }

    fn slot(&mut self, e: Event) -> &mut Option<u64> {
        match e {
            Event::TaskClock => &mut self.task_clock_ns,
            Event::ContextSwitches => &mut self.context_switches,
            Event::CpuMigrations => &mut self.cpu_migrations,
            Event::PageFaults => &mut self.page_faults,
            Event::Cycles => &mut self.cycles,
            Event::Instructions => &mut self.instructions,
            Event::RefCycles => &mut self.ref_cycles,
            Event::StalledCyclesFrontend => &mut self.stalled_cycles_frontend,
            Event::StalledCyclesBackend => &mut self.stalled_cycles_backend,
            Event::LlcLoadMisses => &mut self.llc_load_misses,
            Event::BranchMisses => &mut self.branch_misses,
        }
    }

    /// Counts from scaled values (events not listed stay None), with the derived figures.
    pub fn from_scaled(values: &[(Event, Scaled)]) -> Counts {
        let mut c = Counts::default();
        for (e, s) in values {
            *c.slot(*e) = Some(s.value);
            c.counted_share = Some(
                c.counted_share
                    .map_or(s.counted_share, |m: f64| m.min(s.counted_share)),
            );
        }
        c.derive();
        c
    }

    /// Recomputes IPC, CPI and effective GHz from the counts.
    fn derive(&mut self) {
        let both = self.instructions.zip(self.cycles);
        self.ipc = both.and_then(|(i, c)| ipc(i, c));
        self.cpi = both.and_then(|(i, c)| cpi(c, i));
        self.effective_ghz = self
            .cycles
            .zip(self.task_clock_ns)
            .and_then(|(c, t)| effective_ghz(c, t));
    }

    /// The sum of several windows' counts (threads of one run, runs of one placement): an
    /// event is summed only when every part counted it (a partial sum would pass for the
    /// whole). None for no parts.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Counts>) -> Option<Counts> {
        let mut it = parts.into_iter();
        let mut acc = it.next()?.clone();
        for p in it {
            for e in Event::ALL {
                let v = acc.get(e).zip(p.get(e)).map(|(a, b)| a.saturating_add(b));
                *acc.slot(e) = v;
            }
            acc.counted_share = match (acc.counted_share, p.counted_share) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            };
        }
        acc.derive();
        Some(acc)
    }

    /// Per event, the median over several windows (runs of one placement); an event
    /// only when every window counted it. IPC, CPI and GHz are the medians of each
    /// window's own figure, not figures of the medians. None for no windows.
    pub fn median<'a>(parts: impl IntoIterator<Item = &'a Counts>) -> Option<Counts> {
        let parts: Vec<&Counts> = parts.into_iter().collect();
        if parts.is_empty() {
            return None;
        }
        let med = |f: &dyn Fn(&Counts) -> Option<f64>| -> Option<f64> {
            let v: Option<Vec<f64>> = parts.iter().map(|c| f(c)).collect();
            v.map(|v| crate::stats::median(&v))
        };
        let mut m = Counts::default();
        for e in Event::ALL {
            *m.slot(e) = med(&|c| c.get(e).map(|x| x as f64)).map(|x| x.round() as u64);
        }
        m.ipc = med(&|c| c.ipc);
        m.cpi = med(&|c| c.cpi);
        m.effective_ghz = med(&|c| c.effective_ghz);
        m.counted_share = parts
            .iter()
            .map(|c| c.counted_share)
            .collect::<Option<Vec<f64>>>()
            .map(|v| v.into_iter().fold(1.0, f64::min));
        Some(m)
    }

    /// True when a hardware event was counted (IPC and friends can be shown).
    pub fn has_hardware(&self) -> bool {
        Event::ALL
            .iter()
            .any(|e| e.is_hardware() && self.get(*e).is_some())
    }
}

/// One thread's share of a core's CPI table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpi {
    /// The thread's index in its run.
    pub thread: usize,
    /// The CPU it was pinned to.
    pub cpu: u32,
    pub cycles: u64,
    pub instructions: u64,
    /// Its own cycles per instruction.
    pub cpi: Option<f64>,
}

/// A core's CPI beside its threads' ([`core_cpi`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoreCpi {
    /// The core's CPUs (its SMT siblings).
    pub core: CpuSet,
    /// The measured threads on it.
    pub threads: Vec<ThreadCpi>,
    /// The core's cycles over all its threads' instructions.
    pub core_cpi: Option<f64>,
}

/// The per-core CPI table of one run: `threads` are (thread index, CPU, that CPU's core,
/// counts) over the same window. Threads without cycles and instructions are left out,
/// so a run without hardware counters gives an empty table. Cores in order of first
/// appearance.
pub fn per_core<'a>(
    threads: impl IntoIterator<Item = (usize, u32, CpuSet, &'a Counts)>,
) -> Vec<CoreCpi> {
    let mut cores: Vec<CoreCpi> = Vec::new();
    for (thread, cpu, core, c) in threads {
        let (Some(cycles), Some(instructions)) = (c.cycles, c.instructions) else {
            continue;
        };
        let t = ThreadCpi {
            thread,
            cpu,
            cycles,
            instructions,
            cpi: cpi(cycles, instructions),
        };
        match cores.iter_mut().find(|k| k.core == core) {
            Some(k) => k.threads.push(t),
            None => cores.push(CoreCpi {
                core,
                threads: vec![t],
                core_cpi: None,
            }),
        }
    }
    for k in &mut cores {
        let pairs: Vec<(u64, u64)> = k
            .threads
            .iter()
            .map(|t| (t.cycles, t.instructions))
            .collect();
        k.core_cpi = core_cpi(&pairs);
    }
    cores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_per_core_table_groups_siblings() {
        let hw = |cy, ins| {
            Counts::from_scaled(&[(Event::Cycles, full(cy)), (Event::Instructions, full(ins))])
        };
        let sw = Counts::from_scaled(&[(Event::TaskClock, full(5))]);
        let (a, b, c) = (hw(1_000_000, 750_000), hw(1_000_000, 500_000), hw(10, 20));
        let core0: CpuSet = "0,2".parse().unwrap();
        let core1: CpuSet = "1,3".parse().unwrap();
        let t = per_core([
            (0, 0, core0.clone(), &a),
            (1, 1, core1.clone(), &c),
            (2, 2, core0.clone(), &b),
            (3, 3, core1.clone(), &sw),
        ]);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].core, core0);
        assert_eq!(
            t[0].threads.iter().map(|x| x.thread).collect::<Vec<_>>(),
            [0, 2]
        );
        assert!(close(t[0].core_cpi.unwrap(), 0.80));
        assert!(close(t[0].threads[0].cpi.unwrap(), 1.33));
        assert_eq!(
            t[1].threads.len(),
            1,
            "the software-only thread is left out"
        );
        assert_eq!(t[1].core_cpi, Some(0.5));
        assert!(per_core([(0, 0, core0, &sw)]).is_empty());
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.005
    }

    #[test]
    fn the_worked_example_thread_and_core_cpi() {
        // Two siblings share 1 M core cycles; 750 k and 500 k instructions.
        let t1 = cpi(1_000_000, 750_000).unwrap();
        let t2 = cpi(1_000_000, 500_000).unwrap();
        assert!(close(t1, 1.33), "{t1}");
        assert!(close(t2, 2.0), "{t2}");
        let core = core_cpi(&[(1_000_000, 750_000), (1_000_000, 500_000)]).unwrap();
        assert!(close(core, 0.80), "{core}");
        // The same through Counts.
        let c = Counts::from_scaled(&[
            (Event::Cycles, full(1_000_000)),
            (Event::Instructions, full(750_000)),
            (Event::TaskClock, full(500_000)),
        ]);
        assert!(close(c.cpi.unwrap(), 1.33) && close(c.ipc.unwrap(), 0.75));
        assert!(close(c.effective_ghz.unwrap(), 2.0), "1 M cycles in 0.5 ms");
    }

    #[test]
    fn core_cpi_edges() {
        assert_eq!(core_cpi(&[]), None);
        assert_eq!(core_cpi(&[(1000, 0)]), None, "no instructions");
        // One thread alone: its own CPI.
        assert_eq!(core_cpi(&[(1000, 500)]), Some(2.0));
        // Siblings busy for different times: the busier one's cycles are the core's.
        assert_eq!(core_cpi(&[(1000, 500), (400, 500)]), Some(1.0));
        assert_eq!(ipc(5, 0), None);
        assert_eq!(effective_ghz(5, 0), None);
    }

    fn full(v: u64) -> Scaled {
        Scaled {
            value: v,
            counted_share: 1.0,
        }
    }

    #[test]
    fn multiplexed_counts_are_scaled_up_and_their_share_kept() {
        // Counted half the time: doubled.
        let s = scale(1_000, 200, 100).unwrap();
        assert_eq!(s.value, 2_000);
        assert_eq!(s.counted_share, 0.5);
        // A third: ×3, no float rounding on large counts.
        let s = scale(1_000_000_000_001, 3_000, 1_000).unwrap();
        assert_eq!(s.value, 3_000_000_000_003);
        // Counted all the time: unchanged (running may exceed enabled by rounding).
        assert_eq!(scale(7, 100, 100).unwrap().value, 7);
        assert_eq!(scale(7, 100, 101).unwrap().counted_share, 1.0);
        // Never counted, never enabled: no value, not 0.
        assert_eq!(scale(0, 100, 0), None);
        assert_eq!(scale(0, 0, 0), None);
        // Overflow saturates instead of wrapping.
        assert_eq!(scale(u64::MAX, 1_000, 1).unwrap().value, u64::MAX);
        // The smallest share wins in Counts.
        let c = Counts::from_scaled(&[
            (Event::Cycles, scale(10, 100, 25).unwrap()),
            (Event::TaskClock, full(10)),
        ]);
        assert_eq!(c.counted_share, Some(0.25));
        assert_eq!(c.cycles, Some(40));
    }

    #[test]
    fn sums_keep_only_events_every_part_counted() {
        let a = Counts::from_scaled(&[
            (Event::TaskClock, full(100)),
            (Event::Cycles, full(300)),
            (Event::Instructions, full(150)),
        ]);
        let b = Counts::from_scaled(&[(Event::TaskClock, full(50))]);
        let s = Counts::sum([&a, &b]).unwrap();
        assert_eq!(s.task_clock_ns, Some(150));
        assert_eq!((s.cycles, s.ipc), (None, None), "b did not count cycles");
        let s = Counts::sum([&a, &a]).unwrap();
        assert_eq!((s.cycles, s.instructions), (Some(600), Some(300)));
        assert_eq!(s.ipc, Some(0.5));
        assert!(s.has_hardware() && !b.has_hardware());
        assert_eq!(Counts::sum([]), None);
    }

    #[test]
    fn medians_per_event_and_of_each_runs_figures() {
        let run = |t, cy, ins| {
            Counts::from_scaled(&[
                (Event::TaskClock, full(t)),
                (Event::Cycles, full(cy)),
                (Event::Instructions, full(ins)),
            ])
        };
        let (a, b, c) = (run(10, 100, 50), run(30, 100, 100), run(20, 400, 100));
        let m = Counts::median([&a, &b, &c]).unwrap();
        assert_eq!(m.task_clock_ns, Some(20));
        assert_eq!((m.cycles, m.instructions), (Some(100), Some(100)));
        // IPCs 0.5, 1.0, 0.25: the median run's 0.5, not 100/100.
        assert_eq!(m.ipc, Some(0.5));
        let sw = Counts::from_scaled(&[(Event::TaskClock, full(40))]);
        let m = Counts::median([&a, &sw]).unwrap();
        assert_eq!((m.task_clock_ns, m.cycles, m.ipc), (Some(25), None, None));
        assert_eq!(Counts::median([]), None);
    }

    #[test]
    fn absent_serialises_as_null() {
        let c = Counts::from_scaled(&[(Event::TaskClock, full(5))]);
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["task_clock_ns"], 5);
        assert!(j["cycles"].is_null() && j["ipc"].is_null());
        let back: Counts = serde_json::from_value(j).unwrap();
        assert_eq!(back, c);
    }
}
