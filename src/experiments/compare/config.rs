//! What `smtlab compare` was asked to do, checked before anything runs, and the
//! placements it resolves to on this machine (pure, given the topology).

use super::metric::MetricSpec;
use crate::burn::BurnerKind;
use crate::cpuset::CpuSet;
use crate::error::{BadInput, NotPossible};
use crate::experiments::neighbors::BurnerPlacement;
use crate::placement::{self, PlanError, Request, Scope, ScopeUnit};
use crate::topology::Topology;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The named placements `--placements` accepts.
pub const PLACEMENT_NAMES: &str = "one-per-core, pairs, all";
/// Default time a comparison is sized to when `--runs` is not given.
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(60);
/// Fewest measured rounds an automatic run count gives.
pub const MIN_AUTO_RUNS: usize = 3;
/// Most measured rounds an automatic run count gives (fast commands).
pub const MAX_AUTO_RUNS: usize = 1000;
/// Most rounds `--runs` and `--warmup` accept.
pub const MAX_RUNS: usize = crate::limits::MAX_RUNS as usize;
/// Default noise band: criterion's `noise_threshold` default.
pub const DEFAULT_NOISE: f64 = 0.02;

/// The user's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    /// As typed after `--`.
    pub words: Vec<String>,
    /// `--shell`: run `sh -c "WORDS…"` instead of exec'ing the words.
    pub shell: bool,
}

impl CommandLine {
    /// The argv to exec.
    pub fn argv(&self) -> Vec<String> {
        if self.shell {
            vec!["sh".into(), "-c".into(), self.words.join(" ")]
        } else {
            self.words.clone()
        }
    }
}

/// A placement to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacementChoice {
    /// `one-per-core`, `pairs` or `all` over `--cores` cores.
    Named(Request),
    /// `--cpus LIST`.
    Cpus(CpuSet),
}

impl PlacementChoice {
    /// Parses one `--placements` entry.
    pub fn parse_named(s: &str) -> Result<Self, BadInput> {
        let t = s.trim();
        match t {
            "one-per-core" => Ok(Self::Named(Request::OnePerCore)),
            "pairs" => Ok(Self::Named(Request::Pairs)),
            "all" => Ok(Self::Named(Request::All)),
            _ => Err(BadInput(format!(
                "--placements: unknown placement `{t}`; valid: {PLACEMENT_NAMES} (or --cpus LIST, repeatable)"
            ))),
        }
    }
}

/// Neighbours beside the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BurnerChoice {
    pub kind: BurnerKind,
    pub count: usize,
    pub placement: BurnerPlacement,
}

impl BurnerChoice {
    /// Parses `--burners KIND:COUNT`.
    pub fn parse(s: &str, placement: BurnerPlacement) -> Result<Self, BadInput> {
        let bad = |why: String| BadInput(format!("--burners `{s}`: {why}"));
        let (kind, count) = s
            .split_once(':')
            .ok_or_else(|| bad("expected KIND:COUNT, e.g. prime:2".into()))?;
        let kind: BurnerKind = kind.trim().parse().map_err(|e| bad(format!("{e}")))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| bad(format!("`{count}` is not a count")))?;
        if count == 0 {
            return Err(bad("the count must be at least 1".into()));
        }
        crate::limits::at_most(
            "--burners",
            count as u64,
            crate::limits::MAX_PROCESSES,
            "burners per run, each a process",
        )?;
        Ok(Self {
            kind,
            count,
            placement,
        })
    }
}

/// A `compare` configuration as given; [`Config::check`] turns it into the
/// [`CheckedConfig`] a run takes.
#[derive(Debug, Clone)]
pub struct Config {
    pub command: CommandLine,
    /// In order: `--placements` entries, then `--cpus` lists. Empty = the default.
    pub placements: Vec<PlacementChoice>,
    /// `--cores K` for named placements; None = every core of the scope unit.
    pub cores: Option<usize>,
    pub within: Scope,
    /// Measured rounds; None = sized to `max_time`.
    pub runs: Option<usize>,
    /// Discarded rounds first.
    pub warmup: usize,
    pub max_time: Duration,
    pub metric: Option<MetricSpec>,
    /// Shell commands: before each run, once before all, once after all.
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub ignore_failure: bool,
    pub show_output: bool,
    /// Processes whose threads (and children's threads) are placed during each run.
    pub pin_pids: Vec<i32>,
    pub with_postgres: bool,
    /// CPUs for the server's processes instead of each placement's.
    pub server_cpus: Option<CpuSet>,
    /// Place the command with a cpuset cgroup instead of affinity alone.
    pub cgroup: bool,
    pub burners: Option<BurnerChoice>,
    /// Noise band half-width (0.02 = ±2 %).
    pub noise: f64,
    /// The smtlab binary burners re-execute (None = this one); tests set it.
    pub exe: Option<PathBuf>,
    /// Event counters over each run's process tree.
    pub counters: crate::counters::Mode,
    /// How the fake executor makes runs up (synthetic engines only); tests set it.
    pub fake: FakeBehaviour,
}

/// How the fake executor ([`super::fake`]) makes its runs up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FakeBehaviour {
    /// Speed a second (third, …) sibling adds to its core, in cores.
    pub sibling_gain: f64,
    /// Width of each run's uniform speed jitter (0.04 = ±2 %).
    pub jitter: f64,
    /// The execution (1-based, in order, warm-up included) that fails as a command
    /// exiting 1 would; None = none fails.
    pub fail_on_run: Option<usize>,
    /// The CPUs' worth of time every run gets at most, as on a machine whose other load
    /// (or autogroup, or a CPU quota) leaves it that much; None = every CPU it is allowed.
    pub cpu_cap: Option<f64>,
}

impl Default for FakeBehaviour {
    fn default() -> Self {
        FakeBehaviour {
            sibling_gain: 0.25,
            jitter: 0.04,
            fail_on_run: None,
            cpu_cap: None,
        }
    }
}

impl Config {
    /// A configuration running `words` with defaults for everything else.
    pub fn new(words: Vec<String>) -> Self {
        Config {
            command: CommandLine {
                words,
                shell: false,
            },
            placements: Vec::new(),
            cores: None,
            within: Scope::default(),
            runs: None,
            warmup: 1,
            max_time: DEFAULT_MAX_TIME,
            metric: None,
            prepare: None,
            setup: None,
            cleanup: None,
            ignore_failure: false,
            show_output: false,
            pin_pids: Vec::new(),
            with_postgres: false,
            server_cpus: None,
            cgroup: false,
            burners: None,
            noise: DEFAULT_NOISE,
            exe: None,
            counters: crate::counters::Mode::default(),
            fake: FakeBehaviour::default(),
        }
    }

    /// The configuration once checked, or the first bad value named with what would be
    /// valid.
    pub fn check(self) -> Result<CheckedConfig> {
        self.validate()?;
        Ok(CheckedConfig(self))
    }

    /// Checks what can be checked without the machine's topology: counts, the command
    /// exists, the pids exist and may be pinned.
    fn validate(&self) -> Result<()> {
        let bad = |m: String| anyhow::Error::new(BadInput(m));
        if self.command.words.is_empty() || self.command.words.iter().all(|w| w.is_empty()) {
            return Err(bad(
                "no command: give it after `--`, e.g. `smtlab compare --cpus 0 --cpus 0-1 -- sysbench cpu run`"
                    .into(),
            ));
        }
        if self.runs == Some(0) {
            return Err(bad("--runs must be at least 1".into()));
        }
        for (opt, v) in [
            ("--runs", self.runs.unwrap_or(0)),
            ("--warmup", self.warmup),
        ] {
            crate::limits::at_most(opt, v as u64, MAX_RUNS as u64, crate::limits::WHY_RUNS)?;
        }
        if self.max_time.is_zero() {
            return Err(bad("--max-time must be more than 0".into()));
        }
        if !(0.0..0.5).contains(&self.noise) {
            return Err(bad(format!(
                "--noise {}%: expected a percentage from 0 up to 50, e.g. 2",
                self.noise * 100.0
            )));
        }
        if self.cores == Some(0) {
            return Err(bad("--cores must be at least 1".into()));
        }
        if self.server_cpus.is_some() && !self.with_postgres && self.pin_pids.is_empty() {
            return Err(bad(
                "--server-cpus places a server: add --with-postgres or --pin-pids PID".into(),
            ));
        }
        let program = if self.command.shell {
            "sh"
        } else {
            &self.command.words[0]
        };
        find_program(program, &self.search_path()?)?;
        for &pid in &self.pin_pids {
            super::pins::check_pid(pid)?;
        }
        Ok(())
    }
}

/// A [`Config`] that passed [`Config::check`]: what [`super::run`] takes, so it need not
/// check again. It reads as its `Config` and cannot be changed.
#[derive(Debug, Clone)]
pub struct CheckedConfig(Config);

impl std::ops::Deref for CheckedConfig {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.0
    }
}

impl Config {
    /// The PATH the command runs with: with `--with-postgres`, the server's bin directory
    /// first, so `pgbench` and `psql` match the server's version even where they are not
    /// on PATH (Debian puts them in `/usr/lib/postgresql/N/bin`).
    pub fn search_path(&self) -> Result<std::ffi::OsString> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        if !self.with_postgres {
            return Ok(path);
        }
        let bin = crate::oltp::managed::find_binaries()?;
        let dirs = std::iter::once(bin.bindir).chain(std::env::split_paths(&path));
        std::env::join_paths(dirs).context("building PATH with the PostgreSQL bin directory")
    }
}

/// The program's path: as given when it has a `/`, else the first executable on `path`.
/// Not found is bad input (exit 2), before any run.
pub fn find_program(name: &str, path: &std::ffi::OsStr) -> Result<PathBuf, BadInput> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(BadInput(format!(
                "command `{name}` is not an executable file"
            )))
        } else {
            Err(BadInput(format!("command `{name}` not found")))
        };
    }
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| executable(p))
        .ok_or_else(|| {
            BadInput(format!(
                "command `{name}` not found on PATH; give its path, or add --shell to run \
                 the words through `sh -c` (for pipes, builtins and aliases)"
            ))
        })
}

/// One thing to run and time: a placement, alone or with burners.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Label in tables: `one-per-core`, `cpus:0-1`, `one-per-core + 2 prime on siblings`.
    pub label: String,
    /// The placement request as text.
    pub request: String,
    /// CPUs of the command's tree.
    pub cpus: CpuSet,
    /// Cores of those CPUs.
    pub cores: usize,
    /// CPUs of each burner; empty without burners.
    pub burner_cpus: Vec<CpuSet>,
    /// Planner notes.
    pub notes: Vec<String>,
}

/// The placements on this machine, the ones that cannot run here (with burners only:
/// a placement itself that cannot run is an error), and the unit named ones stayed in.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub variants: Vec<Variant>,
    pub skipped: Vec<(String, String)>,
    pub scope: Option<ScopeUnit>,
    /// Why nothing is compared: the default on a machine without SMT siblings runs one
    /// placement only. None when placements are compared.
    pub no_comparison: Option<String>,
}

/// Why the default comparison (one-per-core vs all) cannot run on `topo`: no placements
/// were given and every core has one usable thread, so both would be the same CPUs.
/// None when placements were given or the machine has siblings.
pub fn no_smt_default(topo: &Topology, cfg: &Config) -> Option<String> {
    (cfg.placements.is_empty() && topo.threads_per_core() <= 1).then(|| {
        "no SMT siblings on this machine (1 thread per core), so the default one-per-core \
         vs all comparison would run the same CPUs twice"
            .to_string()
    })
}

/// Resolves the placements (and burner variants) on `topo`.
///
/// Errors: a placement needing SMT on a machine without it (exit 3, naming it), too few
/// cores (exit 3), CPUs that are not usable here (exit 2).
pub fn resolve(topo: &Topology, cfg: &Config) -> Result<Resolved> {
    // Before any server is started or pinned: sched_setaffinity(2) would refuse CPUs
    // outside the allowed set only then, with a bare EINVAL.
    if let Some(sc) = &cfg.server_cpus {
        let allowed = topo.allowed();
        let bad = sc.difference(&allowed);
        if !bad.is_empty() {
            return Err(BadInput(format!(
                "--server-cpus {sc}: CPU {bad} is not one this process may use (online, \
                 in its cgroup and affinity); valid CPUs here: {allowed}"
            ))
            .into());
        }
    }
    let (unit, unit_cores) = placement::scoped_cores(topo, cfg.within);
    let k = cfg.cores.unwrap_or(unit_cores.len().max(1));
    if let Some(why) = no_smt_default(topo, cfg) {
        return single_without_smt(topo, cfg, k, why);
    }
    let choices = if cfg.placements.is_empty() {
        vec![
            PlacementChoice::Named(Request::OnePerCore),
            PlacementChoice::Named(Request::All),
        ]
    } else {
        cfg.placements.clone()
    };
    let mut scope = None;
    let mut bases = Vec::new();
    for c in &choices {
        let (request, plan) = match c {
            PlacementChoice::Named(r) => {
                let plan = placement::plan_within(topo, r, k, cfg.within)?;
                if *r == Request::All && plan.cpus().len() == k {
                    return Err(NotPossible(format!(
                        "`all` needs SMT siblings: it runs every sibling of the {k} cores \
                         one-per-core uses, but {} shows 1 thread per core, so it would be \
                         one-per-core again",
                        unit.label
                    ))
                    .into());
                }
                scope = scope.or(plan.scope.clone());
                (r.to_string(), plan)
            }
            PlacementChoice::Cpus(set) => {
                let r = Request::Cpus(set.clone());
                let plan = placement::plan(topo, &r, set.len())?;
                (r.to_string(), plan)
            }
        };
        let cpus = plan.cpus();
        let cores = cores_of(topo, &cpus).len();
        // The same placement twice (an A/A check) gets a second label: tables and exports
        // find rows by label.
        let repeats = bases
            .iter()
            .filter(|b: &&Variant| b.request == request)
            .count();
        let label = match repeats {
            0 => request.clone(),
            n => format!("{request} ({})", n + 1),
        };
        bases.push(Variant {
            label,
            request,
            cpus,
            cores,
            burner_cpus: Vec::new(),
            notes: plan.notes,
        });
    }
    let mut variants = Vec::new();
    let mut skipped = Vec::new();
    for base in bases {
        let with = match &cfg.burners {
            Some(b) => match burner_cpus(topo, &base.cpus, b) {
                Ok(cpus) => Some(Variant {
                    label: format!(
                        "{} + {} {} on {}",
                        base.label,
                        b.count,
                        b.kind,
                        burner_place_name(b.placement)
                    ),
                    burner_cpus: cpus,
                    ..base.clone()
                }),
                Err(why) => {
                    skipped.push((format!("{} + {} {}", base.label, b.count, b.kind), why));
                    None
                }
            },
            None => None,
        };
        variants.push(base);
        variants.extend(with);
    }
    if let Some(b) = &cfg.burners
        && variants.iter().all(|v| v.burner_cpus.is_empty())
    {
        let why = skipped.first().map(|(_, w)| w.clone()).unwrap_or_default();
        return Err(NotPossible(format!(
            "--burners {}:{} --burner-placement {}: no placement has room for them here ({why})",
            b.kind,
            b.count,
            burner_place_name(b.placement)
        ))
        .into());
    }
    Ok(Resolved {
        variants,
        skipped,
        scope,
        no_comparison: None,
    })
}

/// The default without SMT siblings: the command still runs and is measured, on every
/// usable CPU of the `--cores` cores (one per core is all there is), labelled by its CPU
/// list; there is nothing to compare it with. Burners need a placement to stand beside,
/// so they are refused as they would be for the comparison.
fn single_without_smt(topo: &Topology, cfg: &Config, k: usize, why: String) -> Result<Resolved> {
    if let Some(b) = &cfg.burners {
        return Err(NotPossible(format!(
            "--burners {}:{} without --placements or --cpus: {why}; give the CPU sets to \
             compare, e.g. --cpus 0 --cpus 0-1",
            b.kind, b.count
        ))
        .into());
    }
    let plan = placement::plan_within(topo, &Request::OnePerCore, k, cfg.within)?;
    let cpus = plan.cpus();
    let request = Request::Cpus(cpus.clone()).to_string();
    let example = match cpus.first() {
        Some(first) if cpus.len() > 1 => format!("--cpus {first} --cpus {cpus}"),
        _ => "--cpus 0 --cpus 0-1".to_string(),
    };
    Ok(Resolved {
        variants: vec![Variant {
            label: request.clone(),
            request,
            cores: cores_of(topo, &cpus).len(),
            cpus,
            burner_cpus: Vec::new(),
            notes: plan.notes,
        }],
        skipped: Vec::new(),
        scope: plan.scope,
        no_comparison: Some(format!(
            "no SMT comparison was possible: {why}; the command ran on every usable CPU \
             instead. To compare placements give two CPU sets ({example}), or run on a \
             machine with SMT siblings"
        )),
    })
}

/// The `--burner-placement` name.
pub fn burner_place_name(p: BurnerPlacement) -> &'static str {
    match p {
        BurnerPlacement::Os => "os",
        BurnerPlacement::SameCpus => "same-cpus",
        BurnerPlacement::Siblings => "siblings",
        BurnerPlacement::OtherCores => "other-cores",
    }
}

/// The cores (usable siblings) of `cpus`, in order.
pub fn cores_of(topo: &Topology, cpus: &CpuSet) -> Vec<CpuSet> {
    let allowed = topo.allowed();
    let mut v: Vec<CpuSet> = cpus
        .iter()
        .map(|c| topo.core_of(c).intersection(&allowed))
        .collect();
    v.sort_by_key(CpuSet::first);
    v.dedup();
    v
}

/// Where burners go beside a placement's CPUs; Err = why they cannot go there.
pub fn burner_cpus(
    topo: &Topology,
    cpus: &CpuSet,
    b: &BurnerChoice,
) -> Result<Vec<CpuSet>, String> {
    let allowed = topo.allowed();
    let round_robin = |pool: Vec<u32>| -> Vec<CpuSet> {
        (0..b.count)
            .map(|i| CpuSet::from_cpus([pool[i % pool.len()]]))
            .collect()
    };
    match b.placement {
        BurnerPlacement::Os => Ok(vec![allowed; b.count]),
        BurnerPlacement::SameCpus => Ok(round_robin(cpus.to_vec())),
        BurnerPlacement::Siblings => {
            match placement::plan(topo, &Request::SiblingsOf(cpus.clone()), b.count) {
                Ok(p) => Ok(p.threads.into_iter().map(|t| t.cpus).collect()),
                Err(PlanError::NoSmt { .. }) => {
                    Err("this machine shows no SMT siblings".to_string())
                }
                Err(PlanError::NoFreeSibling { .. }) => Err(format!(
                    "CPUs {cpus} already use every sibling of their cores"
                )),
                Err(e) => Err(e.to_string()),
            }
        }
        BurnerPlacement::OtherCores => {
            let used = cores_of(topo, cpus)
                .iter()
                .fold(CpuSet::new(), |a, c| a.union(c));
            let rest = allowed.difference(&used).to_vec();
            if rest.is_empty() {
                Err(format!(
                    "the cores of CPUs {cpus} ({used}) are every usable CPU"
                ))
            } else {
                Ok(round_robin(rest))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_placements_and_burners_parse_with_clear_errors() {
        assert_eq!(
            PlacementChoice::parse_named("pairs").unwrap(),
            PlacementChoice::Named(Request::Pairs)
        );
        let e = PlacementChoice::parse_named("spread").unwrap_err().0;
        assert!(e.contains("`spread`") && e.contains(PLACEMENT_NAMES), "{e}");
        let b = BurnerChoice::parse("prime:2", BurnerPlacement::Siblings).unwrap();
        assert_eq!((b.kind, b.count), (BurnerKind::Prime, 2));
        for bad in ["prime", "prime:x", "prime:0", "nope:1", "prime:100000"] {
            let e = BurnerChoice::parse(bad, BurnerPlacement::Siblings)
                .unwrap_err()
                .0;
            assert!(e.contains("--burners"), "{bad}: {e}");
        }
    }

    #[test]
    fn commands_are_found_before_any_run() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        assert!(find_program("sh", &path).is_ok());
        let e = find_program("smtlab-no-such-command", &path).unwrap_err().0;
        assert!(
            e.contains("not found on PATH") && e.contains("--shell"),
            "{e}"
        );
        assert!(
            find_program("/nonexistent/x", &path)
                .unwrap_err()
                .0
                .contains("not found")
        );
        let e = find_program("/proc/self/status", &path).unwrap_err().0;
        assert!(e.contains("not an executable"), "{e}");
        let mut c = Config::new(vec!["smtlab-no-such-command".into()]);
        assert!(c.clone().check().is_err());
        c.command.shell = true;
        c.check().unwrap();
        let e = Config::new(vec![]).check().unwrap_err().to_string();
        assert!(e.contains("no command"), "{e}");
    }

    #[test]
    fn shell_joins_the_words() {
        let c = CommandLine {
            words: vec!["echo a".into(), "| wc -c".into()],
            shell: true,
        };
        assert_eq!(c.argv(), ["sh", "-c", "echo a | wc -c"]);
    }

    fn cfg(placements: &[&str], cores: usize) -> Config {
        let mut c = Config::new(vec!["true".into()]);
        c.placements = placements
            .iter()
            .map(|p| PlacementChoice::parse_named(p).unwrap())
            .collect();
        c.cores = Some(cores);
        c
    }

    fn cpus(v: &Variant) -> Vec<u32> {
        v.cpus.to_vec()
    }

    #[test]
    fn comparison_layouts_on_two_cores_of_two_siblings() {
        // Cores {0,2} and {1,3}, as Linux numbers x86 siblings.
        let topo = crate::topology::fixture::topology(2, 2, false);
        let r = resolve(&topo, &cfg(&["one-per-core", "pairs", "all"], 2)).unwrap();
        let got: Vec<(String, Vec<u32>, usize)> = r
            .variants
            .iter()
            .map(|v| (v.label.clone(), cpus(v), v.cores))
            .collect();
        assert_eq!(
            got,
            [
                ("one-per-core".to_string(), vec![0, 1], 2),
                ("pairs".to_string(), vec![0, 2], 1),
                ("all".to_string(), vec![0, 1, 2, 3], 2),
            ]
        );
        assert!(r.scope.is_some());
        // The default on an SMT machine: one-per-core vs all over every core.
        let mut d = cfg(&[], 2);
        d.cores = None;
        let r = resolve(&topo, &d).unwrap();
        let labels: Vec<&str> = r.variants.iter().map(|v| v.label.as_str()).collect();
        assert_eq!(labels, ["one-per-core", "all"]);
    }

    #[test]
    fn sibling_placements_without_smt_exit_3_naming_them() {
        let topo = crate::topology::fixture::topology(4, 1, false);
        for (p, needle) in [("pairs", "`pairs`"), ("all", "`all`")] {
            let e = resolve(&topo, &cfg(&["one-per-core", p], 2)).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 3, "{e:#}");
            assert!(format!("{e:#}").contains(needle), "{e:#}");
        }
        // No placements: the command still runs, once per round on every usable CPU of
        // the cores, and the report says why nothing is compared and how to compare.
        let mut d = cfg(&[], 2);
        d.cores = None;
        let r = resolve(&topo, &d).unwrap();
        let got: Vec<(&str, Vec<u32>, usize)> = r
            .variants
            .iter()
            .map(|v| (v.label.as_str(), cpus(v), v.cores))
            .collect();
        assert_eq!(got, [("cpus:0-3", vec![0, 1, 2, 3], 4)]);
        let why = r.no_comparison.unwrap();
        assert!(
            why.contains("no SMT comparison was possible")
                && why.contains("--cpus 0 --cpus 0-3")
                && why.contains("machine with SMT"),
            "{why}"
        );
        assert_eq!(
            resolve(&topo, &cfg(&[], 2)).unwrap().variants[0].label,
            "cpus:0-1"
        );
        // With burners there is no placement to stand beside: exit 3, as before.
        let mut b = cfg(&[], 2);
        b.burners = Some(BurnerChoice::parse("prime:1", BurnerPlacement::OtherCores).unwrap());
        let e = resolve(&topo, &b).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 3, "{e:#}");
        assert!(format!("{e:#}").contains("--cpus 0 --cpus 0-1"), "{e:#}");
        // On a machine with siblings the default compares: no such sentence.
        let smt = crate::topology::fixture::topology(2, 2, false);
        assert_eq!(resolve(&smt, &cfg(&[], 2)).unwrap().no_comparison, None);
        // Explicit CPU lists run anywhere they are usable; unusable ones are bad input.
        let mut c = cfg(&[], 2);
        c.placements = vec![
            PlacementChoice::Cpus(CpuSet::from_cpus([0])),
            PlacementChoice::Cpus(CpuSet::from_cpus([0, 1])),
        ];
        let r = resolve(&topo, &c).unwrap();
        assert_eq!(r.variants[1].label, "cpus:0-1");
        assert_eq!(r.scope, None);
        c.placements
            .push(PlacementChoice::Cpus(CpuSet::from_cpus([9])));
        let e = resolve(&topo, &c).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        // Too many cores for the machine: not possible here.
        let e = resolve(&topo, &cfg(&["one-per-core"], 8)).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 3, "{e:#}");
    }

    #[test]
    fn burner_variants_follow_each_placement_or_say_why_not() {
        let topo = crate::topology::fixture::topology(2, 2, false);
        let mut c = cfg(&["one-per-core", "all"], 1);
        c.burners = Some(BurnerChoice::parse("prime:1", BurnerPlacement::Siblings).unwrap());
        let r = resolve(&topo, &c).unwrap();
        let got: Vec<(String, Vec<Vec<u32>>)> = r
            .variants
            .iter()
            .map(|v| {
                (
                    v.label.clone(),
                    v.burner_cpus.iter().map(CpuSet::to_vec).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("one-per-core".to_string(), vec![]),
                (
                    "one-per-core + 1 prime on siblings".to_string(),
                    vec![vec![2]]
                ),
                ("all".to_string(), vec![]),
            ]
        );
        assert_eq!(r.skipped.len(), 1);
        assert!(r.skipped[0].1.contains("every sibling"), "{:?}", r.skipped);
        // Other cores and the same CPUs.
        let other = BurnerChoice::parse("int:2", BurnerPlacement::OtherCores).unwrap();
        let b = burner_cpus(&topo, &CpuSet::from_cpus([0]), &other).unwrap();
        assert_eq!(b, [CpuSet::from_cpus([1]), CpuSet::from_cpus([3])]);
        let all: CpuSet = (0..4).collect();
        assert!(burner_cpus(&topo, &all, &other).is_err());
        let same = BurnerChoice::parse("int:3", BurnerPlacement::SameCpus).unwrap();
        let b = burner_cpus(&topo, &CpuSet::from_cpus([0, 2]), &same).unwrap();
        assert_eq!(
            b.iter().map(CpuSet::to_vec).collect::<Vec<_>>(),
            [[0], [2], [0]]
        );
        // Siblings on a machine without SMT: nowhere to go at all is exit 3.
        let flat = crate::topology::fixture::topology(2, 1, false);
        let mut c = Config::new(vec!["true".into()]);
        c.placements = vec![PlacementChoice::Cpus(CpuSet::from_cpus([0]))];
        c.burners = Some(BurnerChoice::parse("prime:1", BurnerPlacement::Siblings).unwrap());
        let e = resolve(&flat, &c).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 3, "{e:#}");
        assert!(format!("{e:#}").contains("no SMT siblings"), "{e:#}");
    }
}
