//! The comparison on this machine: the guard, the cgroups, the managed server, setup,
//! the interleaved runs (each: prepare, place the server, start the burners, run the
//! command, stop the burners, put the server back), cleanup, teardown.
//!
//! Every change is held by a value whose `Drop` undoes it — [`TreePins`] per run,
//! [`ProcessBurners`] per run, [`Cpuset`] and [`ManagedCluster`] for the whole comparison —
//! and the [`Guard`] is made first so that it is dropped last, after everything it
//! watches has been undone. Ctrl-C is polled by every wait (the runner, the burners'
//! start, the cluster's start) and returns through those drops.

use super::cgroup::{self, Cpuset};
use super::config::{self, CheckedConfig, Config, Variant};
use super::guard::Guard;
use super::metric::last_lines;
use super::model::{Note, Run, ServerInfo};
use super::pins::TreePins;
use super::runner::{self, Launch, OnSignal};
use super::{Context, Failed, Kept, Measured};
use crate::burn::{BurnSpec, ProcessBurners, ProcessOptions};
use crate::cpuset::CpuSet;
use crate::error::{BadInput, Interrupted};
use crate::oltp::managed::{ManagedCluster, SUPERUSER};
use crate::progress::Progress;
use crate::topology::Topology;
use anyhow::{Context as _, Result, anyhow, bail};
use std::time::{Duration, Instant};

/// How long `--cleanup` may go on after the first signal (or after its start, when the
/// signal came first) before it is terminated: with [`runner::FINISH_TERM_GRACE`] between
/// SIGTERM and SIGKILL, a cleanup that does not finish is stopped within 2 s.
pub const CLEANUP_GRACE: Duration = Duration::from_secs(1);
/// Longest burners may take to report their first progress.
const BURNER_START_LIMIT: Duration = Duration::from_secs(10);
/// Lines of output quoted in error messages.
const QUOTED_LINES: usize = 8;

pub(super) fn run(topo: &Topology, cfg: &CheckedConfig, ui: &dyn Progress) -> Result<Kept> {
    // A command that runs for a fixed time is compared by its own metric when smtlab
    // knows one; the runs read it.
    let mut adjusted: Config = (**cfg).clone();
    let fixed_duration = super::duration::adjust(&mut adjusted);
    if let Some(f) = &fixed_duration {
        ui.note(&super::duration::sentence(f));
    }
    let cfg = &adjusted;
    // Before burners start spinning (see `counters::prepare`).
    crate::counters::prepare(cfg.counters);
    let resolved = config::resolve(topo, cfg)?;
    let pairs = super::smt_pairs(topo, &resolved.variants);
    let mut notes: Vec<String> = Vec::new();
    // Made first, dropped last.
    let guard = Guard::start(cfg.exe.as_deref())?;
    guard.mark(super::proctree::mark());
    runner::become_subreaper();

    let hierarchy = if cfg.cgroup {
        let h = cgroup::find()?;
        for d in cgroup::sweep_stale(&h) {
            ui.note(&format!(
                "removed cgroup {} (left by an smtlab that was killed)",
                d.display()
            ));
        }
        Some(h)
    } else {
        None
    };
    let mut cgroups: Vec<Option<Cpuset>> = Vec::new();
    for v in &resolved.variants {
        cgroups.push(match &hierarchy {
            Some(h) => {
                let c = Cpuset::create(h, &v.cpus)?;
                guard.cgroup(c.path());
                Some(c)
            }
            None => None,
        });
    }
    let enforcement = hierarchy
        .as_ref()
        .map_or("affinity", |h| h.version.name())
        .to_string();

    use crate::render::Caveat;
    // Only the burners are smtlab's own code; the command runs as built.
    if cfg.burners.is_some() && cfg!(debug_assertions) {
        notes.push(Note::Caveat(Caveat::DebugBuild).into());
    }
    if topo.machine.hypervisor {
        notes.push(Note::Caveat(Caveat::Hypervisor { kind: None }).into());
    }
    let used = resolved
        .variants
        .iter()
        .fold(CpuSet::new(), |a, v| a.union(&v.cpus));
    let preflight = crate::hygiene::preflight(&used);
    notes.extend(preflight.iter().cloned());

    let path = cfg.search_path()?;
    let mut env: Vec<(String, String)> = vec![("PATH".into(), path.to_string_lossy().into())];
    let mut cluster = None;
    let mut server_roots: Vec<i32> = cfg.pin_pids.clone();
    if cfg.with_postgres {
        ui.note("starting a throwaway PostgreSQL cluster");
        let c = ManagedCluster::start(crate::oltp::Durability::Full, 100)?;
        guard.cluster(c.dir());
        ui.note(&format!(
            "managed cluster in {} ({}; Unix socket only)",
            c.dir().display(),
            c.binaries().version
        ));
        if let Some(x) = c.constraint() {
            notes.push(x);
        }
        env.extend([
            ("PGHOST".to_string(), c.dir().display().to_string()),
            ("PGPORT".to_string(), "5432".to_string()),
            ("PGUSER".to_string(), SUPERUSER.to_string()),
            ("PGDATABASE".to_string(), "postgres".to_string()),
        ]);
        let pm = c
            .postmaster_pid()
            .ok_or_else(|| anyhow!("the managed cluster's postmaster.pid has no pid"))?;
        server_roots.push(pm);
        cluster = Some(c);
    }
    let server_cpus: Vec<Option<CpuSet>> = resolved
        .variants
        .iter()
        .map(|v| {
            (!server_roots.is_empty()).then(|| cfg.server_cpus.clone().unwrap_or(v.cpus.clone()))
        })
        .collect();
    let server = (!server_roots.is_empty()).then(|| ServerInfo {
        kind: if cfg.with_postgres {
            "postgres-managed"
        } else {
            "pids"
        }
        .into(),
        version: cluster.as_ref().map(|c| c.binaries().version.clone()),
        pids: server_roots.clone(),
        fixed_cpus: cfg.server_cpus.clone(),
    });

    let mut session = Session {
        cfg,
        variants: &resolved.variants,
        argv: cfg.command.argv(),
        env,
        guard: &guard,
        cgroups: &cgroups,
        server_roots,
        server_cpus: server_cpus.clone(),
        burn: cfg.burners.as_ref().map(|b| BurnSpec::new(b.kind)),
        metric_seen: false,
        metric_unit: None,
        leftovers: 0,
        counted: Vec::new(),
    };
    let mut setup_started = false;
    let outcome = (|| -> Result<Measured, Failed> {
        if let Some(s) = &cfg.setup {
            setup_started = true;
            ui.note(&format!("setup: {s}"));
            session
                .shell("--setup", s, OnSignal::Stop)
                .map_err(|error| Failed {
                    error,
                    measured: Measured::default(),
                })?;
        }
        let t0 = Instant::now();
        super::measure(
            resolved.variants.len(),
            cfg.warmup,
            cfg.runs,
            cfg.max_time,
            &mut || t0.elapsed(),
            &mut |p, round| session.exec(p, round),
            ui,
        )
    })();
    if let Some(c) = &cfg.cleanup
        && (setup_started || cfg.setup.is_none())
    {
        let interrupted = crate::interrupt::requested();
        ui.note(&format!("cleanup: {c}"));
        let r = session.shell("--cleanup", c, OnSignal::FinishWithin(CLEANUP_GRACE));
        if let Err(e) = r {
            if outcome.is_ok() && !interrupted {
                return Err(e);
            }
            crate::say!("warning: {e:#}");
        }
    }
    // A signal that came while `--cleanup` ran (and finished in its grace period) still
    // ends the command with exit 130, its whole runs shown.
    let outcome = outcome.map(|mut m| {
        m.interrupted |= crate::interrupt::requested();
        m
    });
    let leftovers = session.leftovers;
    let metric_unit = session.metric_unit;
    let counters = (!session.counted.is_empty())
        .then(|| crate::counters::Status::of(cfg.counters, &session.counted));
    drop(session);
    if let Some(mut c) = cluster.take() {
        let dir = c.dir().to_path_buf();
        let r = c.stop();
        guard.cluster_done(&dir);
        r?;
    }
    for c in cgroups.iter_mut().flatten() {
        let path = c.path().to_path_buf();
        let r = c.remove();
        guard.cgroup_done(&path);
        r?;
    }
    guard.finish();
    // A failing run after measured ones keeps them; before any, it is the error.
    let (measured, failure) = match outcome {
        Ok(m) => (m, None),
        Err(f) if f.measured.runs.iter().all(Vec::is_empty) => return Err(f.error),
        Err(f) => (f.measured, Some(f.error)),
    };
    if measured.interrupted && measured.runs.iter().all(Vec::is_empty) {
        return Err(Interrupted.into());
    }
    if leftovers > 0 {
        notes.push(Note::Leftovers { leftovers }.into());
    }
    let mut report = super::assemble(
        cfg,
        &resolved,
        measured,
        pairs,
        Context {
            enforcement,
            server,
            notes,
            server_cpus,
            metric_unit,
            counters,
            fixed_duration,
            sched: super::model::SchedFacts {
                autogroup: autogroup_enabled(),
                cpu_quota: topo.process.cpu_quota,
            },
        },
    );
    report.preflight = preflight;
    Ok(Kept { report, failure })
}

struct Session<'a> {
    cfg: &'a Config,
    variants: &'a [Variant],
    argv: Vec<String>,
    env: Vec<(String, String)>,
    guard: &'a Guard,
    cgroups: &'a [Option<Cpuset>],
    server_roots: Vec<i32>,
    server_cpus: Vec<Option<CpuSet>>,
    burn: Option<BurnSpec>,
    /// A run's output has matched the metric: a later miss is a failure, not bad input.
    metric_seen: bool,
    metric_unit: Option<&'static str>,
    leftovers: usize,
    /// Every run's counter measurement, for the report's list of what was not counted.
    counted: Vec<crate::counters::Measurement>,
}

impl Session<'_> {
    fn command_text(&self) -> String {
        self.cfg.command.words.join(" ")
    }

    /// Runs a `--setup`/`--prepare`/`--cleanup` shell command, unpinned, with the
    /// command's environment; a failure is an error quoting its output.
    fn shell(&self, what: &str, text: &str, on_signal: OnSignal) -> Result<()> {
        let argv = vec!["sh".to_string(), "-c".to_string(), text.to_string()];
        let f = runner::run(
            &Launch {
                argv: &argv,
                env: &self.env,
                cpus: None,
                cgroup_procs: None,
                echo: self.cfg.show_output,
                discard_stdout: false,
                on_signal,
                limit: None,
                counters: crate::counters::Mode::Off,
            },
            Some(self.guard),
        )
        .with_context(|| format!("{what} `{text}`"))?;
        if !f.status.success() {
            bail!(
                "{what} `{text}` failed ({}){}",
                f.status,
                quote(&f.stdout, &f.stderr)
            );
        }
        Ok(())
    }

    fn start_burners(&self, v: &Variant) -> Result<Option<ProcessBurners>> {
        let (Some(spec), false) = (&self.burn, v.burner_cpus.is_empty()) else {
            return Ok(None);
        };
        let b = ProcessBurners::spawn(
            spec,
            &v.burner_cpus,
            &ProcessOptions {
                exe: self.cfg.exe.clone(),
                warmup: Duration::ZERO,
                duration: None,
            },
        )?;
        // The command starts beside neighbours that already run: wait for each to report.
        let t0 = Instant::now();
        while b.progress().iter().any(|p| p.ops == 0) {
            crate::interrupt::check()?;
            if t0.elapsed() > BURNER_START_LIMIT {
                bail!(
                    "the burners did not start within {} s",
                    BURNER_START_LIMIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Some(b))
    }

    /// One execution of placement `i` (round None = warm-up).
    fn exec(&mut self, i: usize, round: Option<usize>) -> Result<Run> {
        let v = &self.variants[i];
        if let Some(p) = &self.cfg.prepare {
            self.shell("--prepare", p, OnSignal::Stop)?;
        }
        crate::interrupt::check()?;
        let mut pins = match &self.server_cpus[i] {
            Some(c) if !self.server_roots.is_empty() => {
                Some(TreePins::pin(&self.server_roots, c, Some(self.guard))?)
            }
            _ => None,
        };
        let burners = self.start_burners(v)?;
        let before = burners.as_ref().map(|b| b.progress());
        let cg = self.cgroups[i].as_ref();
        let f = runner::run(
            &Launch {
                argv: &self.argv,
                env: &self.env,
                cpus: Some(&v.cpus),
                cgroup_procs: cg.and_then(Cpuset::procs_fd),
                echo: self.cfg.show_output,
                discard_stdout: false,
                on_signal: OnSignal::Stop,
                limit: None,
                counters: self.cfg.counters,
            },
            Some(self.guard),
        )?;
        let burner_ops_per_sec = match (&burners, &before) {
            (Some(b), Some(before)) => {
                let rates: Vec<f64> = b
                    .progress()
                    .iter()
                    .zip(before)
                    .filter(|(a, b)| a.measured_ns > b.measured_ns)
                    .map(|(a, b)| {
                        (a.ops - b.ops) as f64 / ((a.measured_ns - b.measured_ns) as f64 / 1e9)
                    })
                    .collect();
                (!rates.is_empty()).then(|| rates.iter().sum())
            }
            _ => None,
        };
        drop(burners);
        let mut leftovers = f.leftovers;
        if let Some(c) = cg {
            leftovers += c.empty();
        }
        self.leftovers += leftovers;
        if let Some(p) = pins.as_mut() {
            p.restore()?;
        }
        drop(pins);
        let when = match round {
            Some(r) => format!("round {r}"),
            None => "warm-up".to_string(),
        };
        if !f.status.success() && !self.cfg.ignore_failure {
            bail!(
                "`{}` failed on {} ({when}): {}{}\nadd --ignore-failure to keep failing runs, \
                 or --show-output to see all of its output",
                self.command_text(),
                v.label,
                f.status,
                quote(&f.stdout, &f.stderr)
            );
        }
        let metric = match &self.cfg.metric {
            Some(spec) if f.status.success() => {
                let out = String::from_utf8_lossy(&f.stdout);
                let err = String::from_utf8_lossy(&f.stderr);
                match spec.read(&out, &err) {
                    Some((value, unit)) => {
                        self.metric_seen = true;
                        self.metric_unit = self.metric_unit.or(unit);
                        Some(value)
                    }
                    None => {
                        let place = format!(
                            "the output of `{}` on {} ({when})",
                            self.command_text(),
                            v.label
                        );
                        let what = spec.miss(&out, &err, &place, f.dropped[0] + f.dropped[1]);
                        let msg = format!("{what}{}", quote(&f.stdout, &f.stderr));
                        return Err(if self.metric_seen {
                            anyhow!(msg)
                        } else {
                            BadInput(msg).into()
                        });
                    }
                }
            }
            _ => None,
        };
        let counters = f.counters;
        if let Some(m) = &counters {
            self.counted.push(m.clone());
        }
        let (exit_code, signal) = match f.status {
            runner::Status::Code(c) => (Some(c), None),
            runner::Status::Signal(s) => (None, Some(s)),
            runner::Status::TimedOut => (None, Some(libc::SIGKILL)),
        };
        Ok(Run {
            round: round.unwrap_or(0),
            position: 0,
            wall_time_ns: f.wall_ns,
            user_time_ns: f.usage.user_ns,
            system_time_ns: f.usage.system_ns,
            max_rss_bytes: f.usage.max_rss_bytes,
            voluntary_switches: f.usage.voluntary_switches,
            involuntary_switches: f.usage.involuntary_switches,
            exit_code,
            signal,
            metric,
            burner_ops_per_sec,
            leftover_processes: leftovers,
            counters: counters.map(|m| m.counts),
        })
    }
}

/// `; its last lines:` and the end of its output (stderr, else stdout), or nothing.
fn quote(stdout: &[u8], stderr: &[u8]) -> String {
    let err = String::from_utf8_lossy(stderr);
    let out = String::from_utf8_lossy(stdout);
    let text = if err.trim().is_empty() { out } else { err };
    let tail = last_lines(&text, QUOTED_LINES);
    if tail.is_empty() {
        "; it printed nothing".to_string()
    } else {
        format!("; the last lines of its output:\n{tail}")
    }
}

/// Whether the scheduler's autogroup feature is on (`/proc/sys/kernel/sched_autogroup_enabled`,
/// sched(7)); None where the file is absent (a kernel without `CONFIG_SCHED_AUTOGROUP`) or
/// unreadable.
fn autogroup_enabled() -> Option<bool> {
    let t = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled").ok()?;
    match t.trim() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }
}
