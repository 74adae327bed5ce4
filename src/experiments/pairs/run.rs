//! Orchestration: the partner CPU, then the profile (every workload alone and beside each
//! ruler, the rulers beside each other), then the check (real pairs), each in rounds whose
//! runs are in counterbalanced order (A B C, C B A, B C A, …: the engine's
//! [`counterbalanced`]), every ratio paired with the alone run of its own round.
//!
//! Rulers run as engine threads (the fake engine tests everything above them); a user's
//! command runs through compare's runner, pinned to its CPU, with a ruler beside it as a
//! burner process whose progress over the command's run is its speed, or another command
//! restarted beside it until it ends.

use super::analysis::{self, Run};
use super::config::{Config, HELD_OUT_PAIRS, MeasureChoice, PartnerChoice, UserCommand, Workload};
use super::model::{
    MachineKey, PROFILES_FORMAT, PROFILES_VERSION, PairEntry, PairsReport, Partner, PartnerKind,
    Profile, ProfilesFile, SCHEMA_VERSION,
};
use crate::burn::{BurnSpec, BurnerKind, Burners, ProcessBurners, ProcessOptions};
use crate::cpuset::CpuSet;
use crate::engine::{Engine, ThreadCtx, Workload as EngineWorkload, counterbalanced};
use crate::error::{BadInput, Interrupted, NotPossible};
use crate::experiments::compare::runner::{self, Launch, OnSignal};
use crate::placement::{Plan, Request, ThreadPlacement};
use crate::stats::Comparison;
use crate::topology::Topology;
use anyhow::{Context, Result, anyhow, bail};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The bound on a memory ruler's buffer in pairs: 256 MiB, four times a 64 MiB
/// last-level cache (STREAM's rule, McCalpin: each array at least four times the caches),
/// which covers most servers' L3 per socket or per CCX. Pairs makes hundreds of short runs
/// with two rulers at once; an unbounded 4× LLC (1.9 GiB for a 480 MiB L3, as some
/// hypervisors report) takes longer to build than a warm-up, leaves runs that did no
/// work, and holds gigabytes beside the user's workloads. Each buffer is built once and
/// reused by every run on its CPU. Where the bound is below 4× the LLC the report notes
/// that the ruler then presses the shared cache as well as memory.
pub const RULER_MAX_BUFFER: usize = 256 << 20;

/// The spec a ruler runs with in pairs: the kind at normal policy, its buffer bounded.
pub fn ruler_spec(k: BurnerKind) -> BurnSpec {
    BurnSpec::new(k)
        .with_max_buffer(Some(RULER_MAX_BUFFER))
        .expect("RULER_MAX_BUFFER is above the smallest bound")
}

/// Narration, one line per run.
pub type Say<'a> = dyn FnMut(&str) + 'a;

/// The smtlab version profiles files carry.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Picks the two CPUs: an SMT sibling pair where asked or (auto) where the machine has
/// SMT, else two cores sharing a last-level cache, through the placement planner.
pub fn partner(topo: &Topology, choice: &PartnerChoice) -> Result<Partner> {
    let asked = match choice {
        PartnerChoice::Auto => "auto".to_string(),
        PartnerChoice::Sibling => "sibling".to_string(),
        PartnerChoice::SameL3 => "same-l3".to_string(),
        PartnerChoice::Cpus(a, b) => format!("cpus:{a},{b}"),
    };
    let smt = topo.threads_per_core() > 1;
    let plan_two = |r: Request| -> Result<[u32; 2]> {
        let p = crate::placement::plan(topo, &r, 2)?;
        let a = p.threads[0].cpus.first().context("an empty placement")?;
        let b = p.threads[1].cpus.first().context("an empty placement")?;
        Ok([a, b])
    };
    let (kind, cpus) = match choice {
        PartnerChoice::Auto if smt => (PartnerKind::SmtSiblings, plan_two(Request::SameCore)?),
        PartnerChoice::Sibling => {
            if !smt {
                return Err(NotPossible(
                    "--partner sibling: this machine has no SMT siblings (one thread per \
                     core); use --partner same-l3 (or auto) to measure two cores sharing a cache"
                        .into(),
                )
                .into());
            }
            (PartnerKind::SmtSiblings, plan_two(Request::SameCore)?)
        }
        PartnerChoice::Auto | PartnerChoice::SameL3 => {
            (PartnerKind::SharedCache, plan_two(Request::SameL3)?)
        }
        PartnerChoice::Cpus(a, b) => {
            let allowed = topo.allowed();
            for c in [a, b] {
                if !allowed.contains(*c) {
                    return Err(BadInput(format!(
                        "--partner cpus:{a},{b}: CPU {c} is not one this process may use ({})",
                        allowed.to_list()
                    ))
                    .into());
                }
            }
            let kind = if topo.core_of(*a).contains(*b) {
                PartnerKind::SmtSiblings
            } else {
                PartnerKind::SharedCache
            };
            (kind, [*a, *b])
        }
    };
    Ok(Partner {
        kind,
        cpus,
        asked,
        label: kind.label().to_string(),
    })
}

/// The machine a profiles file belongs to.
pub fn machine_key(topo: &Topology) -> MachineKey {
    MachineKey {
        model: topo.machine.model.clone(),
        online_cpus: topo.online().len(),
        threads_per_core: topo.threads_per_core(),
        hypervisor: topo.machine.hypervisor,
    }
}

/// Reads `--profiles`, refusing (bad input, exit 2) a file of another format, version,
/// machine, partner or ruler set, each named with what this run has.
pub fn read_profiles(
    path: &std::path::Path,
    topo: &Topology,
    partner: &Partner,
    rulers: &[BurnerKind],
) -> Result<ProfilesFile> {
    let what = format!("--profiles {}", path.display());
    let text = crate::fsutil::read_input_text(path, crate::limits::MAX_YIELD_FILE_BYTES)
        .map_err(|e| e.into_error(&what))?;
    let f: ProfilesFile = serde_json::from_str(&text)
        .map_err(|e| BadInput(format!("{what}: not a pairs profiles file ({e})")))?;
    let refuse = |why: String| -> anyhow::Error {
        BadInput(format!(
            "{what}: {why}; profile again on this machine (--save-profiles FILE)"
        ))
        .into()
    };
    if f.format != PROFILES_FORMAT || f.profiles_version != PROFILES_VERSION {
        return Err(refuse(format!(
            "format {} version {}, this smtlab reads {PROFILES_FORMAT} version {PROFILES_VERSION}",
            f.format, f.profiles_version
        )));
    }
    if f.smtlab_version != VERSION {
        return Err(refuse(format!(
            "measured by smtlab {}, this is {VERSION} (its rulers may differ)",
            f.smtlab_version
        )));
    }
    let here = machine_key(topo);
    if f.machine != here {
        return Err(refuse(format!(
            "measured on another machine ({} CPUs, {} per core, {}), this one has {} CPUs, {} per core, {}",
            f.machine.online_cpus,
            f.machine.threads_per_core,
            f.machine.model.as_deref().unwrap_or("unknown model"),
            here.online_cpus,
            here.threads_per_core,
            here.model.as_deref().unwrap_or("unknown model")
        )));
    }
    if f.partner.kind != partner.kind {
        return Err(refuse(format!(
            "measured on {}, this run's partner is {}",
            f.partner.label, partner.label
        )));
    }
    let names: Vec<String> = rulers.iter().map(ToString::to_string).collect();
    if f.rulers != names {
        return Err(refuse(format!(
            "its rulers are {}, this run's are {} (--rulers)",
            f.rulers.join(","),
            names.join(",")
        )));
    }
    Ok(f)
}

/// What runs in one slot: a ruler, or the user's command (an index into the workloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Subject {
    Ruler(BurnerKind),
    Command(usize),
}

/// One run to make: `a` measured, `b` beside it (None: the partner CPU idle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    a: usize,
    b: Option<usize>,
}

/// A command's speed in one run, and why the run was disturbed where its records say so.
struct Measured {
    per_sec: f64,
    disturbed: Option<String>,
}

/// A ruler on a CPU slot of the pair (0: measured, 1: partner).
type RulerSlot = (BurnerKind, usize);

/// Everything a run needs to place and execute subjects.
struct Ctx<'a> {
    engine: &'a dyn Engine,
    topo: &'a Topology,
    cfg: &'a Config,
    partner: &'a Partner,
    subjects: Vec<Subject>,
    names: Vec<String>,
    /// Every ruler's burner per CPU slot, its buffers built once (outside any timed run)
    /// and reused by every run there.
    burners: std::sync::Mutex<Vec<(RulerSlot, Arc<Burners>)>>,
    /// The unit a command's metric was read in where its output names one (sysbench:
    /// events/s, MiB/s for `memory`, transactions/s for OLTP), by workload index.
    units_read: std::sync::Mutex<std::collections::BTreeMap<usize, &'static str>>,
}

/// Two burners, one per CPU of the plan (thread 0 measured, thread 1 its partner).
struct PairOfRulers {
    name: String,
    a: Arc<Burners>,
    b: Option<Arc<Burners>>,
}

impl EngineWorkload for PairOfRulers {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        match (ctx.thread, &self.b) {
            (0, _) => self.a.run_burner(0, ctx),
            (_, Some(b)) => b.run_burner(0, ctx),
            _ => {}
        }
    }
}

impl Ctx<'_> {
    fn cpu_set(&self, slot: usize) -> CpuSet {
        CpuSet::from_cpus([self.partner.cpus[slot]])
    }

    fn plan(&self, two: bool) -> Plan {
        let threads = (0..if two { 2 } else { 1 })
            .map(|i| ThreadPlacement {
                thread: i,
                cpus: self.cpu_set(i),
            })
            .collect();
        Plan {
            request: format!("cpus:{},{}", self.partner.cpus[0], self.partner.cpus[1]),
            threads,
            oversubscribed: false,
            notes: Vec::new(),
            scope: None,
        }
    }

    fn command(&self, i: usize) -> &UserCommand {
        match &self.cfg.workloads()[i] {
            Workload::Command(c) => c,
            Workload::Ruler(_) => unreachable!("a command subject indexes a command"),
        }
    }

    /// Runs one cell; the measured subject may come back in slot b (a ruler beside a
    /// command is measured with the command in front).
    fn exec(&self, cell: Cell, round: usize) -> Result<Run> {
        let sa = self.subjects[cell.a];
        let sb = cell.b.map(|b| self.subjects[b]);
        match (sa, sb) {
            (Subject::Ruler(ka), None) => self.rulers(cell, round, ka, None),
            (Subject::Ruler(ka), Some(Subject::Ruler(kb))) => {
                self.rulers(cell, round, ka, Some(kb))
            }
            (Subject::Command(c), None) => {
                let v = self.run_command(c, 0)?;
                Ok(Run {
                    round,
                    a: cell.a,
                    b: None,
                    a_per_sec: v.per_sec,
                    b_per_sec: None,
                    disturbed: v.disturbed,
                })
            }
            (Subject::Command(c), Some(Subject::Ruler(k))) => {
                let (v, r) = self.command_beside_ruler(c, k)?;
                Ok(Run {
                    round,
                    a: cell.a,
                    b: cell.b,
                    a_per_sec: v.per_sec,
                    b_per_sec: Some(r),
                    disturbed: v.disturbed,
                })
            }
            (Subject::Ruler(k), Some(Subject::Command(c))) => {
                let (v, r) = self.command_beside_ruler(c, k)?;
                Ok(Run {
                    round,
                    a: cell.b.expect("b"),
                    b: Some(cell.a),
                    a_per_sec: v.per_sec,
                    b_per_sec: Some(r),
                    disturbed: v.disturbed,
                })
            }
            (Subject::Command(c), Some(Subject::Command(d))) => {
                let v = self.command_beside_command(c, d)?;
                Ok(Run {
                    round,
                    a: cell.a,
                    b: cell.b,
                    a_per_sec: v.per_sec,
                    b_per_sec: None,
                    disturbed: v.disturbed,
                })
            }
        }
    }

    fn rulers(
        &self,
        cell: Cell,
        round: usize,
        ka: BurnerKind,
        kb: Option<BurnerKind>,
    ) -> Result<Run> {
        let w = PairOfRulers {
            name: match kb {
                Some(kb) => format!("pairs:{ka}+{kb}"),
                None => format!("pairs:{ka}"),
            },
            a: self.burner(ka, 0)?,
            b: kb.map(|k| self.burner(k, 1)).transpose()?,
        };
        let r = self
            .engine
            .run(&self.plan(kb.is_some()), self.cfg.spec(), &w)?;
        w.a.check()?;
        if let Some(b) = &w.b {
            b.check()?;
        }
        if r.interrupted {
            return Err(Interrupted.into());
        }
        if !r.pinning_ok() {
            bail!(
                "a ruler thread ran outside its CPU (pinning failed) in {}",
                w.name
            );
        }
        let speeds = worked_speeds(&r);
        Ok(Run {
            round,
            a: cell.a,
            b: cell.b,
            a_per_sec: speeds[0],
            b_per_sec: speeds.get(1).copied(),
            disturbed: crate::engine::disturbance::of_run(&r),
        })
    }

    /// Ruler `k`'s burner on CPU `slot`, built (buffers included) on first use.
    fn burner(&self, k: BurnerKind, slot: usize) -> Result<Arc<Burners>> {
        let mut cache = self.burners.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, b)) = cache.iter().find(|(key, _)| *key == (k, slot)) {
            return Ok(b.clone());
        }
        let b = Arc::new(Burners::new(
            &ruler_spec(k),
            self.topo,
            &[self.cpu_set(slot)],
        )?);
        // The fake engine runs nothing: no buffers to build for it.
        if !self.engine.synthetic() && !b.prepare(&crate::interrupt::requested)? {
            return Err(Interrupted.into());
        }
        cache.push(((k, slot), b.clone()));
        Ok(b)
    }

    /// What the rulers' buffer bounds left the user to know, once per ruler.
    fn burner_notes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, b) in self
            .burners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            for n in &b.notes {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
        out
    }

    /// The command once on CPU `slot`: its speed (1 ÷ wall seconds, or its metric).
    fn run_command(&self, c: usize, slot: usize) -> Result<Measured> {
        self.run_command_limited(c, slot, None)
            .map(|x| x.expect("no limit: it ran to its end"))
    }

    /// With a limit, a run cut by it gives None.
    fn run_command_limited(
        &self,
        c: usize,
        slot: usize,
        limit: Option<Duration>,
    ) -> Result<Option<Measured>> {
        if self.engine.synthetic() {
            bail!("a synthetic engine cannot run commands");
        }
        let cmd = self.command(c);
        let argv = cmd.command.argv();
        let cpus = self.cpu_set(slot);
        let f = runner::run(
            &Launch {
                argv: &argv,
                env: &[],
                cpus: Some(&cpus),
                cgroup_procs: None,
                echo: false,
                discard_stdout: cmd.metric.is_none(),
                on_signal: OnSignal::Stop,
                limit,
                counters: crate::counters::Mode::Off,
            },
            None,
        )
        .with_context(|| format!("--cmd {}: `{}`", cmd.name, cmd.text()))?;
        if limit.is_some() && f.status == runner::Status::TimedOut {
            return Ok(None);
        }
        let tail = |b: &[u8]| {
            crate::experiments::compare::metric::last_lines(&String::from_utf8_lossy(b), 5)
        };
        if !f.status.success() {
            bail!(
                "--cmd {}: `{}` failed on CPU {} ({}){}",
                cmd.name,
                cmd.text(),
                self.partner.cpus[slot],
                f.status,
                [tail(&f.stderr), tail(&f.stdout)]
                    .iter()
                    .filter(|t| !t.trim().is_empty())
                    .map(|t| format!("\n{t}"))
                    .collect::<String>()
            );
        }
        let disturbed = crate::engine::disturbance::of_process(
            f.usage.user_ns + f.usage.system_ns,
            f.wall_ns,
            f.usage.voluntary_switches,
            f.usage.involuntary_switches,
        );
        let measured = |per_sec: f64| Some(Measured { per_sec, disturbed });
        match &cmd.metric {
            None => Ok(measured(1e9 / f.wall_ns.max(1) as f64)),
            Some(m) => {
                let out = String::from_utf8_lossy(&f.stdout);
                let err = String::from_utf8_lossy(&f.stderr);
                match m.read(&out, &err) {
                    Some((v, unit)) if m.info().higher_is_better => {
                        if let Some(u) = unit {
                            self.units_read
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert(c, u);
                        }
                        Ok(measured(v))
                    }
                    Some((v, _)) if v > 0.0 => Ok(measured(1.0 / v)),
                    Some((v, _)) => bail!(
                        "--metric {}: read {v}, a lower-is-better value must be positive",
                        cmd.name
                    ),
                    None => {
                        let place = format!("the output of `{}` (--cmd {})", cmd.text(), cmd.name);
                        Err(
                            BadInput(m.miss(&out, &err, &place, f.dropped[0] + f.dropped[1]))
                                .into(),
                        )
                    }
                }
            }
        }
    }

    /// The command on CPU a with ruler `k` as a burner process on CPU b, warmed up first:
    /// (the command's speed, the ruler's ops/s over the command's run).
    fn command_beside_ruler(&self, c: usize, k: BurnerKind) -> Result<(Measured, f64)> {
        let burner = ProcessBurners::spawn(
            &ruler_spec(k),
            &[self.cpu_set(1)],
            &ProcessOptions {
                exe: None,
                warmup: self.cfg.spec().warmup(),
                duration: None,
            },
        )?;
        // Until the burner has done work in a report interval past its warm-up (a memory
        // ruler still building its buffer reports measured time and no work).
        let deadline = Instant::now() + self.cfg.spec().warmup() + crate::burn::PROCESS_SLACK;
        while burner.progress()[0].ops == 0 {
            crate::interrupt::check()?;
            if Instant::now() > deadline {
                bail!(
                    "the {k} burner on CPU {} reported nothing",
                    self.partner.cpus[1]
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let p0 = burner.progress()[0];
        let v = self.run_command(c, 0)?;
        let p1 = burner.progress()[0];
        drop(burner.stop());
        let dn = p1.measured_ns.saturating_sub(p0.measured_ns);
        if dn == 0 {
            bail!(
                "--cmd {}: the run was shorter than the burner's report interval ({} ms); give it more work",
                self.command(c).name,
                crate::burn::process::CHILD_INTERVAL.as_millis()
            );
        }
        Ok((v, (p1.ops - p0.ops) as f64 * 1e9 / dn as f64))
    }

    /// Command c on CPU a while command d runs again and again on CPU b.
    fn command_beside_command(&self, c: usize, d: usize) -> Result<Measured> {
        let done = Arc::new(AtomicBool::new(false));
        std::thread::scope(|s| {
            let flag = done.clone();
            let looper = s.spawn(move || -> Result<()> {
                while !flag.load(Ordering::Relaxed) && !crate::interrupt::requested() {
                    // A bounded run, so that the last one ends soon after c.
                    self.run_command_limited(d, 1, Some(Duration::from_secs(30)))?;
                }
                Ok(())
            });
            // Give the partner its start (exec, page cache) before timing.
            std::thread::sleep(self.cfg.spec().warmup().min(Duration::from_secs(2)));
            let v = self.run_command(c, 0);
            done.store(true, Ordering::Relaxed);
            let bg = looper
                .join()
                .map_err(|_| anyhow!("the partner command's thread panicked"))?;
            bg?;
            v
        })
    }
}

/// Each thread's ops/s over the run, or 0 for a thread that went a whole report interval
/// without work (a ruler still building, descheduled, stalled): a speed averaged over
/// part of its window is no measurement of sharing, and 0 keeps its round out of the
/// ratios ([`analysis::ratio`]).
fn worked_speeds(r: &crate::engine::RunResult) -> Vec<f64> {
    let speeds = r.thread_ops_per_sec();
    r.threads
        .iter()
        .zip(speeds)
        .map(|(t, v)| {
            if t.interval_ops.contains(&0) || !v.is_finite() {
                0.0
            } else {
                v
            }
        })
        .collect()
}

/// Refuses (exit 2) rulers whose buffers, built once on each CPU and kept for the whole
/// run, would take more than half of the memory `available` (None: not known, not checked).
fn check_memory(
    topo: &Topology,
    partner: &Partner,
    rulers: &[BurnerKind],
    available: Option<u64>,
) -> Result<()> {
    let mut total = 0u64;
    let mut kinds = Vec::new();
    for &k in rulers {
        let mut any = false;
        for cpu in partner.cpus {
            let (b, _) = crate::burn::workload::buffer_bytes_within(
                k,
                topo,
                Some(cpu),
                Some(RULER_MAX_BUFFER),
            );
            total = total.saturating_add(b as u64);
            any |= b > 0;
        }
        if any {
            kinds.push(k.to_string());
        }
    }
    crate::limits::memory(
        "--rulers",
        total,
        available,
        &format!(
            "the buffers of {} on both CPUs (each built once and kept for the run)",
            kinds.join(", ")
        ),
        crate::limits::Force::NotOffered,
    )?;
    Ok(())
}

/// True when the run's measured subject, and its partner when measured, did work.
fn did_work(r: &Run) -> bool {
    let ok = |v: f64| v.is_finite() && v > 0.0;
    ok(r.a_per_sec) && r.b_per_sec.is_none_or(ok)
}

/// The rounds to run again for the runs of `runs` disturbed while they ran, as yield does:
/// one new round (numbered from `repeat` on) per round with a disturbed run, at most
/// `repeat / 2` (rounded up), each holding the cells of `cells` whose ratios lost that
/// round: a disturbed pair run's cell and the alone runs of both its workloads; for a
/// disturbed alone run, every cell with that workload and the alone runs of its partners.
fn rounds_again(runs: &[Run], cells: &[Cell], repeat: usize) -> Vec<(usize, Vec<Cell>)> {
    let mut hit: Vec<usize> = runs
        .iter()
        .filter(|r| r.disturbed.is_some())
        .map(|r| r.round)
        .collect();
    hit.sort_unstable();
    hit.dedup();
    let same = |c: &Cell, x: usize, y: usize| {
        c.b.is_some_and(|b| (c.a, b) == (x, y) || (c.a, b) == (y, x))
    };
    hit.iter()
        .take(repeat.div_ceil(2))
        .enumerate()
        .map(|(j, &round)| {
            let mut want: Vec<Cell> = Vec::new();
            for d in runs
                .iter()
                .filter(|r| r.round == round && r.disturbed.is_some())
            {
                match d.b {
                    Some(b) => {
                        want.extend(cells.iter().filter(|c| same(c, d.a, b)));
                        want.extend([Cell { a: d.a, b: None }, Cell { a: b, b: None }]);
                    }
                    None => {
                        for c in cells.iter().filter(|c| c.a == d.a || c.b == Some(d.a)) {
                            want.push(*c);
                            want.extend([c.a, c.b.unwrap_or(c.a)].map(|a| Cell { a, b: None }));
                        }
                    }
                }
            }
            (
                repeat + j,
                cells.iter().filter(|c| want.contains(c)).copied().collect(),
            )
        })
        .collect()
}

/// The runs of `phase` left out because they were disturbed while they ran, each with its
/// round and reason, and how many rounds ran `again` for them, as one note; None when
/// there were none.
fn disturbed_note(runs: &[Run], names: &[String], phase: &str, again: usize) -> Option<String> {
    let d = analysis::disturbed_runs(runs);
    if d.is_empty() {
        return None;
    }
    let each: Vec<String> = d
        .iter()
        .map(|r| {
            let what = match r.b {
                Some(b) => format!("{} beside {}", names[r.a], names[b]),
                None => format!("{} alone", names[r.a]),
            };
            format!(
                "round {} {what}: {}",
                r.round + 1,
                r.disturbed.as_deref().unwrap_or("")
            )
        })
        .collect();
    Some(format!(
        "{} of {} {phase} runs were disturbed while they ran (another task took CPU time from \
         a measured thread) and their rounds are left out of the ratios{}: {}",
        d.len(),
        runs.len(),
        match again {
            0 => String::new(),
            1 => "; 1 round was run again for them".to_string(),
            n => format!("; {n} rounds were run again for them"),
        },
        each.join("; ")
    ))
}

/// "not measured, why" for every pair cell of `cells` that ran but has no ratio: too few
/// rounds in which every run did work.
fn refused_cells(runs: &[Run], cells: &[Cell], names: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for c in cells {
        let Some(b) = c.b else { continue };
        for (x, y) in [(c.a, b), (b, c.a)] {
            if x == y && (x, y) != (c.a, b) {
                continue;
            }
            if let Err(why) = analysis::ratio(runs, x, y) {
                if why.rounds == 0 {
                    continue;
                }
                let line = format!(
                    "{} beside {}: {} of {} rounds had work in every run and none disturbed, \
                     and a ratio needs {} (a run that did no work for a whole report interval, \
                     or that another task took CPU time from, is no measurement)",
                    names[x],
                    names[y],
                    why.with_work,
                    why.rounds,
                    analysis::MIN_ROUNDS
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
    }
    out
}

/// The cells of one phase, deduplicated.
fn push(cells: &mut Vec<Cell>, c: Cell) {
    if !cells.contains(&c) {
        cells.push(c);
    }
}

/// Runs every cell `rounds` times, counterbalanced per round, then the rounds that a
/// disturbed run cost again ([`rounds_again`]); stops at Ctrl-C. Returns the runs, whether
/// it was interrupted, and how many rounds ran again.
fn rounds(
    ctx: &Ctx<'_>,
    cells: &[Cell],
    rounds: usize,
    phase: &str,
    say: &mut Say<'_>,
) -> Result<(Vec<Run>, bool, usize)> {
    let mut runs = Vec::new();
    let mut tally = Tally {
        done: 0,
        total: cells.len() * rounds,
    };
    for round in 0..rounds {
        if one_round(ctx, cells, round, phase, say, &mut runs, &mut tally)? {
            return Ok((runs, true, 0));
        }
    }
    let again = rounds_again(&runs, cells, rounds);
    for (round, cs) in &again {
        tally.total += cs.len();
        say(&format!(
            "{phase}: round {} to make up for a disturbed round: {} runs",
            round + 1,
            cs.len()
        ));
        if one_round(ctx, cs, *round, phase, say, &mut runs, &mut tally)? {
            return Ok((runs, true, again.len()));
        }
    }
    Ok((runs, false, again.len()))
}

/// Runs made of runs to make, for the progress lines.
struct Tally {
    done: usize,
    total: usize,
}

/// One round of `cells` in counterbalanced order, appended to `runs`; true at Ctrl-C.
fn one_round(
    ctx: &Ctx<'_>,
    cells: &[Cell],
    round: usize,
    phase: &str,
    say: &mut Say<'_>,
    runs: &mut Vec<Run>,
    tally: &mut Tally,
) -> Result<bool> {
    for i in counterbalanced(cells.len(), round) {
        if crate::interrupt::requested() {
            return Ok(true);
        }
        let cell = cells[i];
        tally.done += 1;
        let what = match cell.b {
            Some(b) => format!("{} beside {}", ctx.names[cell.a], ctx.names[b]),
            None => format!("{} alone", ctx.names[cell.a]),
        };
        match ctx.exec(cell, round) {
            Ok(r) => {
                say(&format!(
                    "{phase} [{}/{}] round {}: {what}: {}/s{}",
                    tally.done,
                    tally.total,
                    round + 1,
                    crate::render::si(r.a_per_sec),
                    r.disturbed
                        .as_ref()
                        .map(|w| format!(" (disturbed: {w}; left out)"))
                        .unwrap_or_default()
                ));
                runs.push(r);
            }
            Err(e) if e.chain().any(|c| c.is::<Interrupted>()) => return Ok(true),
            Err(e) => return Err(e.context(format!("{phase}: {what} (round {})", round + 1))),
        }
    }
    Ok(false)
}

/// Refuses (bad input, exit 2) a `--cmd` whose program is not on PATH, before any run:
/// the shell would only say so with exit 127 minutes later. A first word the shell
/// itself reads (an assignment, a builtin, a quote or expansion) is left to the shell.
fn check_programs(cfg: &Config) -> Result<()> {
    const SHELL_WORDS: &[&str] = &[
        "cd", "exec", "env", "time", "nice", "if", "for", "while", "case", "{", "(", "!", ".",
        "source", "export", "eval", "command", "builtin", "true", "false", ":",
    ];
    let path = std::env::var_os("PATH").unwrap_or_default();
    for w in cfg.workloads() {
        let Workload::Command(c) = w else { continue };
        let text = c.text();
        let Some(first) = text.split_whitespace().next() else {
            continue;
        };
        let plain = first
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "-_./+".contains(ch));
        if !plain || SHELL_WORDS.contains(&first) {
            continue;
        }
        crate::experiments::compare::config::find_program(first, &path).map_err(|_| {
            BadInput(format!(
                "--cmd {}: `{first}` is not a program on PATH; give its path",
                c.name
            ))
        })?;
    }
    Ok(())
}

/// The whole run: partner, profiles (measured or read), model, predictions, the check,
/// the advice. Ctrl-C returns what was measured with `interrupted: true`.
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    say: &mut Say<'_>,
) -> Result<PairsReport> {
    check_programs(cfg)?;
    let partner = partner(topo, cfg.partner())?;
    say(&format!(
        "partner: CPUs {} and {} ({})",
        partner.cpus[0], partner.cpus[1], partner.label
    ));
    // More threads than CPUs cannot be placed: refused before minutes of runs.
    if let Some(req) = cfg.advice() {
        let cpus: usize = super::advice::units(topo, partner.kind)
            .iter()
            .map(Vec::len)
            .sum();
        if req.total_threads() > cpus {
            return Err(NotPossible(format!(
                "--advise asks for {} threads and this machine has {cpus} usable CPUs; give \
                 fewer threads (a placement puts at most one thread on each CPU)",
                req.total_threads()
            ))
            .into());
        }
    }
    if !engine.synthetic() {
        check_memory(
            topo,
            &partner,
            cfg.rulers(),
            crate::limits::mem_available_bytes(),
        )?;
    }
    if !engine.synthetic()
        && cfg
            .workloads()
            .iter()
            .any(|w| matches!(w, Workload::Command(_)))
    {
        // A command's descendants that leave its process group (setsid(2)) escape the
        // group's kill; as a child subreaper (PR_SET_CHILD_SUBREAPER, prctl(2)) smtlab
        // adopts them when their parent dies, and the runner kills and reaps them at once,
        // after a normal end and after Ctrl-C, instead of leaving them running (or their
        // zombies to an init that may be slow to reap them).
        runner::become_subreaper();
    }
    let mut notes: Vec<String> = engine.hygiene(&CpuSet::from_cpus(partner.cpus));
    let rulers = cfg.rulers().to_vec();
    let loaded = cfg
        .profiles()
        .map(|p| read_profiles(p, topo, &partner, &rulers))
        .transpose()?;
    let r = rulers.len();
    // Subjects: the rulers, then every workload that is not one of them.
    let mut subjects: Vec<Subject> = rulers.iter().map(|k| Subject::Ruler(*k)).collect();
    let mut names: Vec<String> = rulers.iter().map(ToString::to_string).collect();
    let mut index_of: Vec<usize> = Vec::new();
    for (i, w) in cfg.workloads().iter().enumerate() {
        match w {
            Workload::Ruler(k) if rulers.contains(k) => {
                index_of.push(rulers.iter().position(|x| x == k).expect("contained"))
            }
            Workload::Ruler(k) => {
                index_of.push(subjects.len());
                subjects.push(Subject::Ruler(*k));
                names.push(k.to_string());
            }
            Workload::Command(_) => {
                index_of.push(subjects.len());
                subjects.push(Subject::Command(i));
                names.push(w.name());
            }
        }
    }
    let ctx = Ctx {
        engine,
        topo,
        cfg,
        partner: &partner,
        subjects,
        names,
        burners: std::sync::Mutex::new(Vec::new()),
        units_read: std::sync::Mutex::new(Default::default()),
    };
    let from_file = |name: &str| {
        loaded
            .as_ref()
            .and_then(|f| f.profiles.iter().find(|p| p.workload == name).cloned())
    };
    // A command's first run fills the page cache and the binary's pages; not measured.
    for (i, w) in cfg.workloads().iter().enumerate() {
        if let Workload::Command(c) = w
            && from_file(&c.name).is_none()
        {
            crate::interrupt::check()?;
            say(&format!("warm-up: {} once, discarded", c.name));
            ctx.run_command(i, 0)?;
        }
    }
    // The profile: rulers alone and beside each other (unless read), each workload alone
    // and beside each ruler.
    let mut cells = Vec::new();
    let need_matrix = loaded.is_none();
    if need_matrix {
        for i in 0..r {
            push(&mut cells, Cell { a: i, b: None });
            for j in i..r {
                push(&mut cells, Cell { a: i, b: Some(j) });
            }
        }
    }
    for (i, w) in cfg.workloads().iter().enumerate() {
        let s = index_of[i];
        if s < r {
            continue;
        }
        if let Some(p) = from_file(&w.name()) {
            if p.describe != w.describe() {
                return Err(BadInput(format!(
                    "--profiles: workload `{}` there is {}, here {}; rename one of them",
                    w.name(),
                    p.describe,
                    w.describe()
                ))
                .into());
            }
            continue;
        }
        push(&mut cells, Cell { a: s, b: None });
        for j in 0..r {
            push(&mut cells, Cell { a: j, b: None });
            push(&mut cells, Cell { a: s, b: Some(j) });
        }
    }
    let t0 = engine.now_ns();
    let (runs, mut interrupted, again) = if cells.is_empty() {
        (Vec::new(), false, 0)
    } else {
        rounds(&ctx, &cells, cfg.repeat(), "profile", say)?
    };
    let profile_wall_ns = engine.now_ns().saturating_sub(t0);
    let profile_runs = runs.len();
    let (mut check_runs_n, mut check_wall_ns) = (0, 0);
    let mut not_measured = Vec::new();
    let idle = runs.iter().filter(|r| !did_work(r)).count();
    if idle > 0 {
        notes.push(format!(
            "{idle} of {} profile runs did no work for a whole report interval (a ruler \
             descheduled or stalled, a command whose metric could not be read) and are left \
             out of the ratios",
            runs.len()
        ));
    }
    not_measured.extend(refused_cells(&runs, &cells, &ctx.names));
    notes.extend(disturbed_note(&runs, &ctx.names, "profile", again));
    let matrix: Vec<Vec<Option<Comparison>>> = match &loaded {
        Some(f) => f.ruler_pairs.clone(),
        None => (0..r)
            .map(|i| (0..r).map(|j| analysis::speed_ratio(&runs, i, j)).collect())
            .collect(),
    };
    let profiles: Vec<Profile> = cfg
        .workloads()
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let s = index_of[i];
            if let Some(p) = from_file(&w.name()).filter(|_| s >= r) {
                return p;
            }
            let (sensitivity, contentiousness) = if s < r {
                (matrix[s].clone(), (0..r).map(|j| matrix[j][s]).collect())
            } else {
                (
                    (0..r).map(|j| analysis::speed_ratio(&runs, s, j)).collect(),
                    (0..r).map(|j| analysis::speed_ratio(&runs, j, s)).collect(),
                )
            };
            let alone = if s < r && loaded.is_some() {
                0.0
            } else {
                analysis::alone_per_sec(&runs, s)
            };
            Profile {
                workload: w.name(),
                kind: if w.ruler().is_some() {
                    "ruler"
                } else {
                    "command"
                }
                .into(),
                describe: w.describe(),
                unit: ctx
                    .units_read
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&i)
                    .map_or_else(|| w.unit(), |u| u.to_string()),
                alone_per_sec: alone,
                sensitivity,
                contentiousness,
                fixed_duration: match w {
                    Workload::Command(c) => c.fixed.clone(),
                    Workload::Ruler(_) => None,
                },
            }
        })
        .collect();
    let model = analysis::fit(&matrix, &[]);
    if model.is_none() {
        not_measured.push(format!(
            "the model: {} of {} ruler pairs measured, and fitting {} coefficients with a \
             residual needs {}; add rulers (--rulers) or let the rounds finish",
            matrix.iter().flatten().filter(|c| c.is_some()).count(),
            r * r,
            r + 1,
            r + 2
        ));
    }
    let mut pairs = analysis::predict_all(&matrix, &rulers, &profiles);
    for p in &pairs {
        if let Some(why) = &p.not_predicted
            && !not_measured.contains(why)
        {
            not_measured.push(why.clone());
        }
    }
    // A pair with a ruler of the profile was measured by the profile itself: two rulers
    // by their pair, a workload beside a ruler by its sensitivity, a ruler beside it by
    // its contentiousness.
    let dim = |n: &str| -> Option<usize> {
        profiles
            .iter()
            .find(|x| x.workload == n && x.kind == "ruler")
            .and_then(|_| rulers.iter().position(|k| k.to_string() == n))
    };
    for p in &mut pairs {
        let measured = match (dim(&p.a), dim(&p.b)) {
            (Some(i), Some(j)) => matrix[i][j],
            (None, Some(j)) => profiles
                .iter()
                .find(|x| x.workload == p.a)
                .and_then(|x| x.sensitivity[j]),
            (Some(i), None) => profiles
                .iter()
                .find(|x| x.workload == p.b)
                .and_then(|x| x.contentiousness[i]),
            (None, None) => None,
        };
        p.measured = measured.as_ref().map(super::model::Interval::of);
    }
    // The check: real pairs, measured beside their own alone runs.
    if !interrupted && cfg.measure() != MeasureChoice::None {
        let name_index = |n: &str| {
            cfg.workloads()
                .iter()
                .position(|w| w.name() == n)
                .map(|i| index_of[i])
        };
        let mut chosen: Vec<(usize, usize)> = Vec::new();
        match cfg.measure() {
            MeasureChoice::All => {
                for (x, pa) in profiles.iter().enumerate() {
                    for pb in &profiles[x..] {
                        if pairs.iter().any(|p| {
                            p.a == pa.workload && p.b == pb.workload && p.measured.is_some()
                        }) {
                            continue;
                        }
                        chosen.push((
                            name_index(&pa.workload).expect("a workload"),
                            name_index(&pb.workload).expect("a workload"),
                        ));
                    }
                }
            }
            MeasureChoice::HeldOut => {
                let mut open: Vec<&PairEntry> = pairs
                    .iter()
                    .filter(|p| p.measured.is_none() && p.predicted.is_some())
                    .collect();
                open.sort_by(|p, q| {
                    p.predicted
                        .map(|x| x.estimate)
                        .unwrap_or(1.0)
                        .total_cmp(&q.predicted.map(|x| x.estimate).unwrap_or(1.0))
                });
                for p in open {
                    let (a, b) = (
                        name_index(&p.a).expect("a workload"),
                        name_index(&p.b).expect("a workload"),
                    );
                    if chosen.contains(&(a, b)) || chosen.contains(&(b, a)) {
                        continue;
                    }
                    chosen.push((a, b));
                    if chosen.len() == HELD_OUT_PAIRS {
                        break;
                    }
                }
            }
            MeasureChoice::None => {}
        }
        let mut cells = Vec::new();
        for &(a, b) in &chosen {
            push(&mut cells, Cell { a, b: None });
            push(&mut cells, Cell { a: b, b: None });
            push(&mut cells, Cell { a, b: Some(b) });
            let both_commands = matches!(ctx.subjects[a], Subject::Command(_))
                && matches!(ctx.subjects[b], Subject::Command(_));
            if both_commands && a != b {
                push(&mut cells, Cell { a: b, b: Some(a) });
            }
        }
        if !cells.is_empty() {
            let t1 = engine.now_ns();
            let (check_runs, cut, check_again) = rounds(&ctx, &cells, cfg.repeat(), "check", say)?;
            check_wall_ns = engine.now_ns().saturating_sub(t1);
            check_runs_n = check_runs.len();
            interrupted |= cut;
            not_measured.extend(refused_cells(&check_runs, &cells, &ctx.names));
            notes.extend(disturbed_note(
                &check_runs,
                &ctx.names,
                "check",
                check_again,
            ));
            for p in &mut pairs {
                let (Some(a), Some(b)) = (name_index(&p.a), name_index(&p.b)) else {
                    continue;
                };
                if !chosen.contains(&(a, b)) && !chosen.contains(&(b, a)) {
                    continue;
                }
                if let Some(c) = analysis::speed_ratio(&check_runs, a, b) {
                    p.measured = Some(super::model::Interval::of(&c));
                }
            }
        }
    } else if cfg.measure() == MeasureChoice::None {
        not_measured.push(
            "pairs of two workloads that are not rulers: --measure none (only the pairs the profile measured check the model)".into(),
        );
    }
    for p in &mut pairs {
        if let (Some(m), Some(e)) = (p.measured, p.predicted) {
            p.error = Some(e.estimate - m.estimate);
        }
    }
    let check = analysis::check(&pairs);
    let clamped = pairs.iter().filter(|p| p.extrapolated).count();
    if clamped > 0 {
        notes.push(format!(
            "{clamped} predictions had a loss above 1 (a speed below 0) before being clamped \
             to 0: those pairs lie outside what the rulers' pairs showed, so their \
             predictions are extrapolations"
        ));
    }
    notes.extend(ctx.burner_notes());
    if partner.kind == PartnerKind::SharedCache {
        notes.push(format!(
            "CPUs {} and {} are separate cores sharing a cache and the memory bus: these pairs \
             measure cache and memory interference, not SMT",
            partner.cpus[0], partner.cpus[1]
        ));
    }
    let advice = match (cfg.advice(), model.is_some()) {
        (Some(req), true) if !interrupted => {
            let units = super::advice::units(topo, partner.kind);
            let input = super::advice::input_from(req, &pairs, units, partner.kind)?;
            Some(super::advice::advise(&input)?)
        }
        (Some(_), _) => {
            not_measured.push("the placement advice: no model (or the run was interrupted)".into());
            None
        }
        _ => None,
    };
    let report = PairsReport {
        schema_version: SCHEMA_VERSION,
        smtlab_version: VERSION.into(),
        partner: partner.clone(),
        rulers: rulers.iter().map(ToString::to_string).collect(),
        duration_ns: cfg.spec().duration().as_nanos() as u64,
        warmup_ns: cfg.spec().warmup().as_nanos() as u64,
        rounds: cfg.repeat(),
        profiles,
        ruler_pairs: matrix,
        model: model.as_ref().map(analysis::Fit::model),
        pairs,
        check,
        advice,
        profile_runs,
        profile_wall_ns,
        check_runs: check_runs_n,
        check_wall_ns,
        profiles_from: cfg.profiles().map(|p| p.display().to_string()),
        notes,
        not_measured,
        interrupted,
        synthetic: engine.synthetic(),
    };
    Ok(report)
}

/// The profiles file of a finished report.
pub fn profiles_file(report: &PairsReport, topo: &Topology) -> ProfilesFile {
    ProfilesFile {
        format: PROFILES_FORMAT.into(),
        profiles_version: PROFILES_VERSION,
        smtlab_version: VERSION.into(),
        machine: machine_key(topo),
        partner: report.partner.clone(),
        rulers: report.rulers.clone(),
        duration_ns: report.duration_ns,
        rounds: report.rounds,
        ruler_pairs: report.ruler_pairs.clone(),
        profiles: report.profiles.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::FakeEngine;
    use crate::experiments::pairs::config::{AdviceRequest, parse_rulers, workloads};
    use crate::experiments::pairs::model::Interval;
    use crate::topology::fixture;

    fn config(advice: Option<AdviceRequest>, measure: MeasureChoice) -> Config {
        Config::new(
            workloads("stream,int,chase", &[], &[], false).unwrap(),
            parse_rulers("--rulers", "int,l2,stream").unwrap(),
            PartnerChoice::Auto,
            RunSpec::new(Duration::from_millis(100), Duration::from_millis(300)).unwrap(),
            3,
            measure,
            None,
            None,
            advice,
        )
        .unwrap()
    }

    use crate::engine::RunSpec;

    #[test]
    fn a_fake_run_of_the_whole_command_is_deterministic_and_complete() {
        let topo = fixture::topology(2, 2, false);
        let cfg = config(
            Some(AdviceRequest::parse("int=2,chase=2", &[]).unwrap()),
            MeasureChoice::All,
        );
        let go = || {
            let e = FakeEngine::new(11).with_thread_factors(vec![1.0, 0.8]);
            run(&e, &topo, &cfg, &mut |_| {}).unwrap()
        };
        let r = go();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            serde_json::to_string(&go()).unwrap()
        );
        assert!(r.synthetic && !r.interrupted);
        assert_eq!(r.partner.kind, PartnerKind::SmtSiblings);
        assert_eq!(r.partner.label, "SMT siblings");
        assert!(topo.core_of(r.partner.cpus[0]).contains(r.partner.cpus[1]));
        assert_eq!(r.rulers, ["int", "l2", "stream"]);
        // 3 workloads: 9 ordered pairs, each predicted; `all` measures every one.
        assert_eq!(r.pairs.len(), 9);
        assert!(
            r.pairs
                .iter()
                .all(|p| p.predicted.is_some() && p.measured.is_some()),
            "{:?}",
            r.pairs
        );
        let chase = r.profiles.iter().find(|p| p.workload == "chase").unwrap();
        assert_eq!(chase.sensitivity.len(), 3);
        assert!(
            chase
                .sensitivity
                .iter()
                .all(|c| c.is_some_and(|c| c.n == 3))
        );
        let m = r.model.as_ref().unwrap();
        assert!(m.intercept >= 0.0 && m.coefficients.iter().all(|c| *c >= 0.0));
        assert!(r.check.is_some());
        let a = r.advice.as_ref().unwrap();
        assert_eq!(a.workloads.iter().map(|w| w.threads).sum::<usize>(), 4);
        // The JSON carries the field names.
        let v = serde_json::to_value(&r).unwrap();
        let p0 = &v["pairs"][0];
        for k in ["a", "b", "predicted", "measured"] {
            assert!(p0.get(k).is_some(), "{k}");
        }
        for k in ["estimate", "low", "high", "confidence"] {
            assert!(p0["predicted"].get(k).is_some(), "{k}");
        }
        let text = super::super::view::text(&r);
        assert!(
            text.contains("SMT siblings") && text.contains("Placement advice"),
            "{text}"
        );
    }

    #[test]
    fn the_check_says_which_pairs_it_judged_the_model_over() {
        let topo = fixture::topology(2, 2, false);
        let e = FakeEngine::new(11);
        let mut r = run(&e, &topo, &config(None, MeasureChoice::All), &mut |_| {}).unwrap();
        // 81 pairs scored, one below 0.90 where the worst single sensitivity is exact and
        // the model is off by 0.001: judged over all pairs, which the model wins.
        let i = |x: f64| Interval {
            estimate: x,
            low: x - 0.05,
            high: x + 0.05,
            confidence: 0.9,
            n: 3,
        };
        let pair = |m: f64, p: f64, w: f64| PairEntry {
            a: "a".into(),
            b: "b".into(),
            predicted: Some(i(p)),
            measured: Some(i(m)),
            error: None,
            worst_sensitivity: Some(w),
            drivers: Vec::new(),
            fitted_without: Vec::new(),
            held_out: true,
            extrapolated: false,
            not_predicted: None,
        };
        let mut pairs = vec![pair(0.897, 0.898, 0.897)];
        pairs.extend((0..80).map(|_| pair(0.98, 0.975, 0.9)));
        r.check = analysis::check(&pairs);
        let text = super::super::view::text(&r);
        assert!(
            text.contains("The model beats both baselines on this machine, judged over all 81 scored pairs (1 measured below 0.90"),
            "{text}"
        );
        // One spelling of a per cent sign in one sentence.
        assert!(
            text.contains(
                "100 % of the measured speeds fall inside their 90 % prediction interval"
            ),
            "{text}"
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["check"]["judged_over"], "all pairs");
        pairs[1..4].iter_mut().for_each(|p| {
            p.measured = Some(i(0.7));
            p.predicted = Some(i(0.9));
            p.worst_sensitivity = Some(0.72);
        });
        r.check = analysis::check(&pairs);
        let text = super::super::view::text(&r);
        assert!(
            text.contains("does NOT beat both baselines on this machine, judged over the 4 pairs measured below 0.90 (the loss pairs)"),
            "{text}"
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap()["check"]["judged_over"],
            "loss pairs"
        );
    }

    #[test]
    fn a_disturbed_round_is_run_again_with_the_cells_that_lost_it() {
        let alone = |a| Cell { a, b: None };
        let pair = |a, b| Cell { a, b: Some(b) };
        // Rulers 0 and 1, command 2 (a ruler beside a command comes back with the command
        // in front: run a = 2, b = 0 for cell 0 beside 2).
        let cells = vec![
            alone(0),
            alone(1),
            pair(0, 1),
            alone(2),
            pair(2, 0),
            pair(0, 2),
            pair(2, 1),
        ];
        let run = |round, a, b: Option<usize>, disturbed: bool| Run {
            round,
            a,
            b,
            a_per_sec: 1.0,
            b_per_sec: b.map(|_| 1.0),
            disturbed: disturbed.then(|| "steal".to_string()),
        };
        let mut runs = Vec::new();
        for round in 0..4 {
            runs.extend([
                run(round, 0, None, false),
                run(round, 1, None, false),
                run(round, 0, Some(1), false),
                run(round, 2, None, false),
                run(round, 2, Some(0), false),
                run(round, 2, Some(0), false),
                run(round, 2, Some(1), false),
            ]);
        }
        assert!(rounds_again(&runs, &cells, 4).is_empty());
        // Round 2 (index 1): the ruler 0 beside command 2 run (stored with the command in
        // front).
        runs[7 + 5].disturbed = Some("steal".into());
        assert_eq!(
            rounds_again(&runs, &cells, 4),
            [(4, vec![alone(0), alone(2), pair(2, 0), pair(0, 2)])]
        );
        // Round 3 (index 2) too, its alone run of ruler 1: every cell with 1 and its
        // partners alone.
        runs[14 + 1].disturbed = Some("steal".into());
        assert_eq!(
            rounds_again(&runs, &cells, 4),
            [
                (4, vec![alone(0), alone(2), pair(2, 0), pair(0, 2)]),
                (
                    5,
                    vec![alone(0), alone(1), pair(0, 1), alone(2), pair(2, 1)]
                ),
            ]
        );
        // At most half the rounds (rounded up) again: 2 of 4.
        runs[0].disturbed = Some("steal".into());
        assert_eq!(rounds_again(&runs, &cells, 4).len(), 2);
        assert_eq!(rounds_again(&runs, &cells, 4)[0].0, 4);
        assert_eq!(rounds_again(&runs, &cells, 4)[1].0, 5);
        // Round 1's alone run of ruler 0 first: every cell with ruler 0.
        assert_eq!(
            rounds_again(&runs, &cells, 4)[0].1,
            [
                alone(0),
                alone(1),
                pair(0, 1),
                alone(2),
                pair(2, 0),
                pair(0, 2)
            ]
        );
    }

    #[test]
    fn a_disturbed_run_is_listed_with_its_round_and_reason() {
        let names = vec!["int".to_string(), "l1".to_string()];
        let run = |round, a, b: Option<usize>, disturbed: Option<&str>| Run {
            round,
            a,
            b,
            a_per_sec: 100.0,
            b_per_sec: b.map(|_| 90.0),
            disturbed: disturbed.map(String::from),
        };
        let runs = vec![
            run(0, 0, None, None),
            run(0, 0, Some(1), None),
            run(1, 0, None, None),
            run(
                1,
                0,
                Some(1),
                Some(
                    "thread 0 on CPU 0 was kept off its CPU by other work (61 % of the run on a CPU, preempted 412 times)",
                ),
            ),
        ];
        let n = disturbed_note(&runs, &names, "profile", 1).unwrap();
        assert!(
            n.starts_with("1 of 4 profile runs were disturbed while they ran"),
            "{n}"
        );
        assert!(
            n.contains("left out of the ratios; 1 round was run again for them: round 2"),
            "{n}"
        );
        assert!(
            n.ends_with("round 2 int beside l1: thread 0 on CPU 0 was kept off its CPU by other work (61 % of the run on a CPU, preempted 412 times)"),
            "{n}"
        );
        assert_eq!(disturbed_note(&runs[..3], &names, "profile", 0), None);
    }

    #[test]
    fn the_terminal_report_of_a_fake_run() {
        let topo = fixture::topology(4, 2, false);
        let cfg = config(
            Some(AdviceRequest::parse("int=3,chase=2", &["int=0.5".into()]).unwrap()),
            MeasureChoice::HeldOut,
        );
        let e = FakeEngine::new(29).with_thread_factors(vec![1.0, 0.7]);
        let r = run(&e, &topo, &cfg, &mut |_| {}).unwrap();
        insta::assert_snapshot!("pairs_fake_text", super::super::view::text(&r));
    }

    #[test]
    fn without_smt_the_partner_is_a_core_sharing_the_cache_and_is_never_called_smt() {
        let topo = fixture::topology(2, 1, true);
        let e = FakeEngine::new(3);
        let r = run(
            &e,
            &topo,
            &config(None, MeasureChoice::HeldOut),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(r.partner.kind, PartnerKind::SharedCache);
        let text = super::super::view::text(&r);
        assert!(text.contains("shared cache, separate cores"), "{text}");
        assert!(!text.contains("SMT siblings"), "{text}");
        // Three rulers as workloads: the held-out check measures nothing new (every pair
        // of rulers is measured by the profile), so no check run happens.
        assert!(r.pairs.iter().all(|p| p.measured.is_some()));
        // Asking for siblings here is not possible (exit 3).
        let e = partner(&topo, &PartnerChoice::Sibling).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_NOT_POSSIBLE);
    }

    #[test]
    fn memory_rulers_that_would_not_fit_are_refused_naming_their_buffers() {
        // A 480 MiB L3: each memory ruler bounded at 256 MiB, on two CPUs.
        let mut topo = fixture::topology(2, 1, true);
        for c in topo.caches.iter_mut().filter(|c| c.level == 3) {
            c.size_bytes = Some(480 << 20);
        }
        let p = partner(&topo, &PartnerChoice::Auto).unwrap();
        let rulers = parse_rulers("--rulers", "int,stream,chase").unwrap();
        // Four 256 MiB buffers (stream and chase on both CPUs) against 1.5 GiB available:
        // more than half of it, refused naming them; with 4 GiB, fine.
        let e = check_memory(&topo, &p, &rulers, Some(1536 << 20)).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), crate::error::EXIT_BAD_INPUT);
        assert!(
            e.to_string().contains("stream, chase") && e.to_string().contains("1 GiB"),
            "{e}"
        );
        assert!(check_memory(&topo, &p, &rulers, Some(4 << 30)).is_ok());
        assert!(check_memory(&topo, &p, &rulers, None).is_ok());
    }

    #[test]
    fn more_advised_threads_than_cpus_are_refused_before_any_run() {
        let topo = fixture::topology(2, 1, true);
        let cfg = config(
            Some(AdviceRequest::parse("int=2,chase=1", &[]).unwrap()),
            MeasureChoice::None,
        );
        let e = FakeEngine::new(1);
        let err = run(&e, &topo, &cfg, &mut |_| {}).unwrap_err();
        assert_eq!(
            crate::error::exit_code(&err),
            crate::error::EXIT_NOT_POSSIBLE
        );
        assert!(
            err.to_string().contains("3 threads") && err.to_string().contains("2 usable CPUs"),
            "{err}"
        );
        assert_eq!(e.now_ns(), 0, "nothing ran");
    }

    #[test]
    fn profiles_files_from_another_machine_or_version_are_refused() {
        let topo = fixture::topology(2, 2, false);
        let e = FakeEngine::new(5);
        let r = run(&e, &topo, &config(None, MeasureChoice::None), &mut |_| {}).unwrap();
        let f = profiles_file(&r, &topo);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let write =
            |f: &ProfilesFile| std::fs::write(&path, serde_json::to_vec(f).unwrap()).unwrap();
        let rulers = parse_rulers("--rulers", "int,l2,stream").unwrap();
        write(&f);
        assert!(read_profiles(&path, &topo, &r.partner, &rulers).is_ok());
        let other = fixture::topology(4, 2, false);
        let err = read_profiles(&path, &other, &r.partner, &rulers).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_BAD_INPUT);
        assert!(err.to_string().contains("another machine"), "{err}");
        let mut old = f.clone();
        old.smtlab_version = "0.0.1".into();
        write(&old);
        let err = read_profiles(&path, &topo, &r.partner, &rulers).unwrap_err();
        assert!(err.to_string().contains("smtlab 0.0.1"), "{err}");
        write(&f);
        let err = read_profiles(&path, &topo, &r.partner, &rulers[..2]).unwrap_err();
        assert!(err.to_string().contains("rulers"), "{err}");
        std::fs::write(&path, b"{}").unwrap();
        let err = read_profiles(&path, &topo, &r.partner, &rulers).unwrap_err();
        assert_eq!(crate::error::exit_code(&err), crate::error::EXIT_BAD_INPUT);
    }
}
