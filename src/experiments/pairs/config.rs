//! What a pairs run measures: the workloads (rulers by name, the user's commands), the
//! rulers that make the profile's dimensions, the partner CPU, the run lengths, which real
//! pairs are measured to check the model, and the placement to advise on; checked before
//! anything runs.

use crate::burn::BurnerKind;
use crate::engine::RunSpec;
use crate::error::BadInput;
use crate::experiments::compare::CommandLine;
use crate::experiments::compare::metric::MetricSpec;
use std::path::PathBuf;

/// The rulers each workload is profiled against when none are named: one per resource a
/// core or a cache shares — the integer ALUs (`int`), the FMA units (`fma`), the private
/// L2 (`l2`), DRAM bandwidth (`stream`) and DRAM latency (`chase`). SMiTe splits SMT
/// interference into the same kinds of dimension (Zhang et al., MICRO 2014).
pub const DEFAULT_RULERS: &str = "int,fma,l2,stream,chase";

/// The workloads when none are named: the rulers themselves.
pub const DEFAULT_WORKLOADS: &str = "int,fma,l2,stream,chase";

/// Most workloads one run may profile (each costs one run per ruler per round, and
/// `--measure all` measures every pair of them).
pub const MAX_WORKLOADS: usize = 32;

/// Most rulers (dimensions): the model fits one coefficient per ruler from the rulers'
/// own pairs, R² of them.
pub const MAX_RULERS: usize = 12;

/// The names a ruler may have.
pub const RULER_NAMES: &str = crate::burn::KIND_NAMES;

/// The level of every prediction interval.
pub const CONFIDENCE: f64 = 0.90;

/// Pairs `--measure held-out` measures: the ones the model predicts worst, so the check
/// looks where the answer matters.
pub const HELD_OUT_PAIRS: usize = 3;

/// Fewer rounds than this with work in every run of the round, and a cell is not a
/// measurement: one ratio has no spread to put an interval on.
pub const MIN_ROUNDS: usize = 2;

/// One of the user's commands.
#[derive(Debug, Clone)]
pub struct UserCommand {
    /// How tables and `--floor`/`--advise` name it.
    pub name: String,
    pub command: CommandLine,
    /// The number its speed is read from; None = 1 ÷ wall time (a fixed amount of work).
    pub metric: Option<MetricSpec>,
    /// How the command's time limit was seen and which metric it chose, when it runs for a
    /// fixed time (its wall time then measures no work).
    pub fixed: Option<String>,
}

impl UserCommand {
    /// `NAME='CMD …'` (run through `sh -c`), with its `--metric`; a command with a known
    /// tool's time limit and no metric gets the tool's own metric (sysbench, pgbench), or
    /// is refused: its wall time would say nothing.
    pub fn parse(spec: &str, metric: Option<MetricSpec>) -> Result<Self, BadInput> {
        let (name, cmd) = spec.split_once('=').ok_or_else(|| {
            BadInput(format!(
                "--cmd `{spec}`: expected NAME='COMMAND …', e.g. --cmd xz='xz -9 -T1 -c big.tar'"
            ))
        })?;
        let name = check_name("--cmd", name.trim())?;
        let words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            return Err(BadInput(format!("--cmd {name}: the command is empty")));
        }
        let command = CommandLine {
            words: vec![cmd.trim().to_string()],
            shell: true,
        };
        let direct = CommandLine {
            words,
            shell: false,
        };
        let mut metric = metric;
        let mut fixed = None;
        if metric.is_none()
            && let Some(t) = crate::experiments::compare::duration::time_limit(&direct)
        {
            match t.preset.clone() {
                Some(m) => {
                    fixed = Some(format!(
                        "{}: its speed is read from its own output ({})",
                        t.seen(),
                        m.info().unit
                    ));
                    metric = Some(m);
                }
                None => {
                    return Err(BadInput(format!(
                        "--cmd {name}: {}, so its wall time measures no work; add \
                         --metric {name}='REGEX' reading its throughput from its output",
                        t.seen()
                    )));
                }
            }
        }
        Ok(Self {
            name,
            command,
            metric,
            fixed,
        })
    }

    /// The command as typed.
    pub fn text(&self) -> String {
        self.command.words.join(" ")
    }
}

/// A name in `--cmd`, `--floor` and `--advise`: letters, digits, `-`, `_`, `.`.
fn check_name(flag: &str, name: &str) -> Result<String, BadInput> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !ok {
        return Err(BadInput(format!(
            "{flag}: name `{name}` must be 1–40 letters, digits, `-`, `_` or `.`"
        )));
    }
    Ok(name.to_string())
}

/// A workload of the pairs run.
#[derive(Debug, Clone)]
pub enum Workload {
    /// A burner of one kind, one thread, as an engine workload.
    Ruler(BurnerKind),
    /// The user's command, pinned to one CPU.
    Command(UserCommand),
}

impl Workload {
    /// The name in tables.
    pub fn name(&self) -> String {
        match self {
            Workload::Ruler(k) => k.to_string(),
            Workload::Command(c) => c.name.clone(),
        }
    }

    pub fn ruler(&self) -> Option<BurnerKind> {
        match self {
            Workload::Ruler(k) => Some(*k),
            Workload::Command(_) => None,
        }
    }

    /// What one unit of its speed is.
    pub fn unit(&self) -> String {
        match self {
            Workload::Ruler(k) => format!("{}/s", k.unit().label()),
            Workload::Command(c) => match &c.metric {
                Some(m) if m.info().higher_is_better => m.info().unit,
                Some(_) => "1/value".into(),
                None => "runs/s".into(),
            },
        }
    }

    /// What it is, in words.
    pub fn describe(&self) -> String {
        match self {
            Workload::Ruler(k) => k.describe().to_string(),
            Workload::Command(c) => format!("`{}`", c.text()),
        }
    }
}

/// Which CPU the partner runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartnerChoice {
    /// An SMT sibling where the machine has SMT, else another core sharing the L3.
    Auto,
    /// The two SMT siblings of one core.
    Sibling,
    /// Two cores sharing a last-level cache.
    SameL3,
    /// These two CPUs.
    Cpus(u32, u32),
}

/// The values `--partner` takes.
pub const PARTNER_NAMES: &str = "auto, sibling, same-l3, cpus:A,B";

impl PartnerChoice {
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "auto" => return Ok(Self::Auto),
            "sibling" | "siblings" | "smt" => return Ok(Self::Sibling),
            "same-l3" | "l3" => return Ok(Self::SameL3),
            _ => {}
        }
        let bad = || BadInput(format!("--partner `{s}`: valid: {PARTNER_NAMES}"));
        let rest = t.strip_prefix("cpus:").ok_or_else(bad)?;
        let (a, b) = rest.split_once(',').ok_or_else(bad)?;
        let a: u32 = a.trim().parse().map_err(|_| bad())?;
        let b: u32 = b.trim().parse().map_err(|_| bad())?;
        if a == b {
            return Err(BadInput(format!(
                "--partner `{s}`: the two CPUs must differ (one CPU would time-share, not share a core or a cache)"
            )));
        }
        Ok(Self::Cpus(a, b))
    }
}

/// Which real pairs are measured to check the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasureChoice {
    /// The [`HELD_OUT_PAIRS`] pairs predicted worst (none of them used to fit the model).
    HeldOut,
    /// Every pair of workloads (two copies of one workload included).
    All,
    /// None: predictions only.
    None,
}

pub const MEASURE_NAMES: &str = "held-out, all, none";

impl MeasureChoice {
    pub fn parse(s: &str) -> Result<Self, BadInput> {
        match s.trim() {
            "held-out" => Ok(Self::HeldOut),
            "all" => Ok(Self::All),
            "none" => Ok(Self::None),
            _ => Err(BadInput(format!("--measure `{s}`: valid: {MEASURE_NAMES}"))),
        }
    }
}

/// What `--advise` and `--floor` ask: threads per workload, and the share of its solo
/// speed each thread must keep.
#[derive(Debug, Clone, PartialEq)]
pub struct AdviceRequest {
    /// (workload, threads), in the order given.
    pub threads: Vec<(String, usize)>,
    /// (workload, floor in 0..=1).
    pub floors: Vec<(String, f64)>,
}

impl AdviceRequest {
    /// `db=4,scan=1,batch=2` and `db=0.9` floors.
    pub fn parse(advise: &str, floors: &[String]) -> Result<Self, BadInput> {
        let mut threads: Vec<(String, usize)> = Vec::new();
        for part in advise.split(',').filter(|p| !p.trim().is_empty()) {
            let (n, k) = part.split_once('=').ok_or_else(|| {
                BadInput(format!(
                    "--advise `{part}`: expected NAME=THREADS, e.g. --advise 'db=4,scan=1,batch=2'"
                ))
            })?;
            let name = check_name("--advise", n.trim())?;
            let k: usize = k.trim().parse().ok().filter(|k| *k >= 1).ok_or_else(|| {
                BadInput(format!(
                    "--advise {name}={}: the thread count must be a whole number ≥ 1",
                    k.trim()
                ))
            })?;
            if threads.iter().any(|(x, _)| *x == name) {
                return Err(BadInput(format!("--advise: `{name}` is listed twice")));
            }
            threads.push((name, k));
        }
        if threads.is_empty() {
            return Err(BadInput(
                "--advise needs at least one NAME=THREADS, e.g. 'db=4,scan=1'".into(),
            ));
        }
        let mut out = Vec::new();
        for f in floors {
            let (n, v) = f.split_once('=').ok_or_else(|| {
                BadInput(format!(
                    "--floor `{f}`: expected NAME=SHARE, e.g. --floor db=0.9"
                ))
            })?;
            let name = n.trim().to_string();
            let v: f64 = v
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| (0.0..=1.0).contains(v))
                .ok_or_else(|| {
                    BadInput(format!(
                        "--floor {name}={}: the floor is a share of the solo speed, 0 to 1 (0.9 = keeps 90 %)",
                        v.trim()
                    ))
                })?;
            if !threads.iter().any(|(x, _)| *x == name) {
                return Err(BadInput(format!(
                    "--floor {name}: `{name}` is not in --advise ({})",
                    threads
                        .iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            out.push((name, v));
        }
        Ok(Self {
            threads,
            floors: out,
        })
    }

    pub fn floor_of(&self, name: &str) -> f64 {
        self.floors
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |f| f.1)
    }

    pub fn total_threads(&self) -> usize {
        self.threads.iter().map(|t| t.1).sum()
    }
}

/// Parses a ruler list (`int,fma,stream`), refusing unknown names and duplicates.
pub fn parse_rulers(flag: &str, s: &str) -> Result<Vec<BurnerKind>, BadInput> {
    let mut v: Vec<BurnerKind> = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let k: BurnerKind = part.parse().map_err(|_| {
            BadInput(format!(
                "{flag}: unknown ruler `{part}`; valid: {RULER_NAMES}"
            ))
        })?;
        if v.contains(&k) {
            return Err(BadInput(format!("{flag}: `{part}` is listed twice")));
        }
        v.push(k);
    }
    Ok(v)
}

/// A checked pairs configuration: [`Config::new`] is the only way to build one.
#[derive(Debug, Clone)]
pub struct Config {
    workloads: Vec<Workload>,
    rulers: Vec<BurnerKind>,
    partner: PartnerChoice,
    spec: RunSpec,
    repeat: usize,
    measure: MeasureChoice,
    profiles: Option<PathBuf>,
    save_profiles: Option<PathBuf>,
    advice: Option<AdviceRequest>,
}

impl Config {
    /// Every argument checked: at least one workload (unique names), at least one ruler,
    /// 2..=[`crate::limits::MAX_REPEAT`] rounds, every `--advise` name a workload, a
    /// profiles file that exists.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        workloads: Vec<Workload>,
        rulers: Vec<BurnerKind>,
        partner: PartnerChoice,
        spec: RunSpec,
        repeat: usize,
        measure: MeasureChoice,
        profiles: Option<PathBuf>,
        save_profiles: Option<PathBuf>,
        advice: Option<AdviceRequest>,
    ) -> Result<Self, BadInput> {
        if workloads.is_empty() {
            return Err(BadInput(
                "pairs needs at least one workload: --workloads LIST or --cmd NAME='CMD'".into(),
            ));
        }
        if workloads.len() > MAX_WORKLOADS {
            return Err(BadInput(format!(
                "{} workloads: at most {MAX_WORKLOADS} (each costs one run per ruler per round)",
                workloads.len()
            )));
        }
        for (i, w) in workloads.iter().enumerate() {
            if workloads[..i].iter().any(|x| x.name() == w.name()) {
                return Err(BadInput(format!(
                    "workload `{}` is named twice (a --cmd may not take a ruler's name)",
                    w.name()
                )));
            }
        }
        if rulers.is_empty() {
            return Err(BadInput(format!(
                "--rulers needs at least one ruler; valid: {RULER_NAMES}"
            )));
        }
        if rulers.len() > MAX_RULERS {
            return Err(BadInput(format!(
                "--rulers: {} rulers, at most {MAX_RULERS}",
                rulers.len()
            )));
        }
        if repeat < MIN_ROUNDS {
            return Err(BadInput(format!(
                "--repeat {repeat}: pairs needs at least {} rounds (a speed ratio from one \
                 round has no spread to put an interval on)",
                MIN_ROUNDS
            )));
        }
        crate::limits::at_most(
            "--repeat",
            repeat as u64,
            crate::limits::MAX_REPEAT,
            crate::limits::WHY_REPEAT,
        )?;
        if let Some(a) = &advice {
            for (n, _) in &a.threads {
                if !workloads.iter().any(|w| w.name() == *n) {
                    return Err(BadInput(format!(
                        "--advise: `{n}` is not a workload of this run; workloads: {}",
                        workloads
                            .iter()
                            .map(Workload::name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
        }
        if let Some(p) = &profiles
            && !p.is_file()
        {
            return Err(BadInput(format!(
                "--profiles {}: no such file",
                p.display()
            )));
        }
        if let Some(p) = &save_profiles {
            crate::fsutil::check_output("--save-profiles", p)?;
        }
        Ok(Self {
            workloads,
            rulers,
            partner,
            spec,
            repeat,
            measure,
            profiles,
            save_profiles,
            advice,
        })
    }

    pub fn workloads(&self) -> &[Workload] {
        &self.workloads
    }
    pub fn rulers(&self) -> &[BurnerKind] {
        &self.rulers
    }
    pub fn partner(&self) -> &PartnerChoice {
        &self.partner
    }
    pub fn spec(&self) -> &RunSpec {
        &self.spec
    }
    pub fn repeat(&self) -> usize {
        self.repeat
    }
    pub fn measure(&self) -> MeasureChoice {
        self.measure
    }
    pub fn profiles(&self) -> Option<&PathBuf> {
        self.profiles.as_ref()
    }
    pub fn save_profiles(&self) -> Option<&PathBuf> {
        self.save_profiles.as_ref()
    }
    pub fn advice(&self) -> Option<&AdviceRequest> {
        self.advice.as_ref()
    }
}

/// Parses `--workloads` (ruler names) and joins the `--cmd`s, each with its `--metric
/// NAME=…` if given; a metric naming no command is refused.
pub fn workloads(
    rulers_as_workloads: &str,
    cmds: &[String],
    metrics: &[String],
    lower_is_better: bool,
) -> Result<Vec<Workload>, BadInput> {
    let mut out: Vec<Workload> = parse_rulers("--workloads", rulers_as_workloads)
        .map_err(|e| {
            BadInput(
                e.0.replace("unknown ruler", "unknown workload")
                    + "; your own commands go in --cmd NAME='CMD'",
            )
        })?
        .into_iter()
        .map(Workload::Ruler)
        .collect();
    let mut named: Vec<(String, String)> = Vec::new();
    for m in metrics {
        let (n, v) = m.split_once('=').ok_or_else(|| {
            BadInput(format!(
                "--metric `{m}`: expected NAME=SPEC (sysbench, pgbench or a regex), e.g. \
                 --metric mem=sysbench"
            ))
        })?;
        named.push((n.trim().to_string(), v.to_string()));
    }
    for c in cmds {
        let name = c.split_once('=').map(|x| x.0.trim()).unwrap_or_default();
        let metric = match named.iter().find(|(n, _)| n == name) {
            Some((_, v)) => Some(
                MetricSpec::parse(v, lower_is_better)
                    .map_err(|e| BadInput(format!("--metric {name}: {e}")))?,
            ),
            None => None,
        };
        out.push(Workload::Command(UserCommand::parse(c, metric)?));
    }
    for (n, _) in &named {
        if !out
            .iter()
            .any(|w| matches!(w, Workload::Command(c) if c.name == *n))
        {
            return Err(BadInput(format!("--metric {n}: no --cmd is named `{n}`")));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_partners_measures_and_commands() {
        assert_eq!(PartnerChoice::parse("auto").unwrap(), PartnerChoice::Auto);
        assert_eq!(
            PartnerChoice::parse("cpus:0,1").unwrap(),
            PartnerChoice::Cpus(0, 1)
        );
        assert!(PartnerChoice::parse("cpus:1,1").is_err());
        let e = PartnerChoice::parse("core").unwrap_err().0;
        assert!(e.contains("same-l3"), "{e}");
        assert_eq!(MeasureChoice::parse("all").unwrap(), MeasureChoice::All);
        assert!(MeasureChoice::parse("some").is_err());
        let w = workloads("stream,chase", &["xz=xz -9 -c f".into()], &[], false).unwrap();
        assert_eq!(w.len(), 3);
        assert_eq!(w[2].name(), "xz");
        assert_eq!(w[2].unit(), "runs/s");
        let e = workloads("stream,divide", &[], &[], false).unwrap_err().0;
        assert!(e.contains("`divide`") && e.contains("--cmd"), "{e}");
        let e = workloads("", &["bad name=true".into()], &[], false)
            .unwrap_err()
            .0;
        assert!(e.contains("name"), "{e}");
        let e = workloads("", &["x=true".into()], &["y=sysbench".into()], false)
            .unwrap_err()
            .0;
        assert!(e.contains("no --cmd"), "{e}");
    }

    #[test]
    fn a_fixed_time_command_reads_its_own_metric_or_is_refused() {
        let c = UserCommand::parse("mem=sysbench memory --time=2 run", None).unwrap();
        assert!(c.metric.is_some() && c.fixed.is_some());
        let e = UserCommand::parse("s=stress-ng --cpu 1 -t 5", None)
            .unwrap_err()
            .0;
        assert!(e.contains("--metric s="), "{e}");
    }

    #[test]
    fn advice_requests_are_checked() {
        let a = AdviceRequest::parse("db=4,scan=1", &["db=0.9".into()]).unwrap();
        assert_eq!(a.total_threads(), 5);
        assert_eq!(a.floor_of("db"), 0.9);
        assert_eq!(a.floor_of("scan"), 0.0);
        assert!(AdviceRequest::parse("db=0", &[]).is_err());
        assert!(AdviceRequest::parse("db=2", &["db=1.5".into()]).is_err());
        let e = AdviceRequest::parse("db=2", &["x=0.5".into()])
            .unwrap_err()
            .0;
        assert!(e.contains("not in --advise"), "{e}");
    }
}
