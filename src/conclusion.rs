//! What a run concluded, in the terms every output shares: the answer table's rows
//! ([`Answer`]: a [`WorkloadClass`], its [`HtAnswer`] and the [`Evidence`] behind it), the
//! findings each experiment states ([`Finding`]) and the study's sections
//! ([`StudySection`], each filled by the phase a [`PhaseName`] names).
//!
//! A low module: experiments build their findings and answer rows from these types
//! without importing `report`, and `report` only lays them out. The serialised names are
//! `results.json`'s.

use crate::render::count;
use crate::stats::{Comparison, Effect, IntervalMethod, Thresholds};
use serde::{Deserialize, Serialize};

/// A study phase's name, as results.json writes it (`"lockscan"`) and the report's section
/// anchors use it. Each phase declares its own constant where its section's view lives
/// (`experiments::lockscan::PHASE`), and the study's list of phases gives their order, so
/// adding an experiment adds nothing here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PhaseName(&'static str);

impl PhaseName {
    /// A phase named `label`: lower-case words joined by `-`, as results.json writes it.
    pub const fn new(label: &'static str) -> Self {
        PhaseName(label)
    }

    pub fn label(self) -> &'static str {
        self.0
    }
}

impl Serialize for PhaseName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

/// A phase name read from a file. Any well-formed name is accepted, so a results.json from
/// a build with a phase this one lacks still reads (its record is shown, its section is
/// not); each distinct name is kept once for the life of the process.
impl<'de> Deserialize<'de> for PhaseName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let well_formed = !s.is_empty()
            && s.len() <= MAX_PHASE_NAME
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !well_formed {
            return Err(serde::de::Error::custom(format!(
                "phase name {s:?} is not a phase name: expected lower-case letters, digits \
                 and '-', at most {MAX_PHASE_NAME} characters (such as \"lockscan\")"
            )));
        }
        Ok(PhaseName(intern(s)))
    }
}

/// The longest phase name a file may hold.
const MAX_PHASE_NAME: usize = 32;

/// `s` as a `&'static str`, the same one for every equal string: a name is leaked once, the
/// first time it is read, so memory grows with the number of distinct names, not of reads.
fn intern(s: String) -> &'static str {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static SEEN: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&known) = seen.get(s.as_str()) {
        return known;
    }
    let leaked: &'static str = Box::leak(s.into_boxed_str());
    seen.insert(leaked);
    leaked
}

/// What a study section gives the report: its phase, what it shows, and its finding. Each
/// experiment's view implements it for its section, so report.html, summary.md and the
/// verdict loop over sections and know none of them by name.
pub trait StudySection {
    fn phase(&self) -> PhaseName;
    /// The section's content, in the order the report shows it.
    fn blocks(&self, ctx: &SectionCtx) -> Vec<crate::render::blocks::Block>;
    /// The section's finding for the verdict, when it has one.
    fn finding(&self, smt: bool) -> Option<Finding>;
}

/// What an experiment's answer rows may depend on beyond its section.
#[derive(Debug, Clone, Copy)]
pub struct AnswerCtx<'a> {
    /// The machine has SMT siblings.
    pub smt: bool,
    /// Why the phase gave no section, when it gave none.
    pub missing: &'a str,
    /// Why a machine without SMT siblings cannot answer.
    pub no_smt: &'a str,
}

/// An experiment's conclusions for the answer table: its rows, from its section or from
/// why there is none. Each experiment's `verdict.rs` implements it; the verdict loops.
pub trait Conclusions {
    fn answers(section: Option<&Self>, ctx: &AnswerCtx<'_>) -> Vec<Answer>
    where
        Self: Sized;
}

/// What a section's blocks may depend on beyond the section itself: facts about the
/// whole study.
#[derive(Debug, Clone, Default)]
pub struct SectionCtx {
    /// The machine has SMT siblings (more than one thread per core).
    pub smt: bool,
    /// Why no hardware counter was read in this study, when none was.
    pub counters_not_measured: Option<String>,
}

impl std::fmt::Display for PhaseName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A class of workload the answer table has a row for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadClass {
    /// CPU-bound loops that stress one execution resource each (the compute burn rulers).
    Compute,
    /// Loops bound by the memory hierarchy (the memory burn rulers: cache, DRAM bandwidth
    /// or latency). A row of its own: SMT yields of memory-bound and compute-bound loops
    /// differ in kind, so one median over both answers neither.
    Memory,
    /// Threads appending to one hot page under a lock.
    Locks,
    /// Lock-heavy threads whose SMT sibling streams memory.
    LocksBesideScans,
    /// Singleton inserts into a database.
    Inserts,
    /// A read-mostly table behind a reader/writer scheme.
    ReadMostlyCache,
    /// The user's own command.
    Command,
}

impl WorkloadClass {
    pub fn label(self) -> &'static str {
        match self {
            WorkloadClass::Compute => "compute (burn rulers)",
            WorkloadClass::Memory => "memory-bound (burn rulers)",
            WorkloadClass::Locks => "lock-heavy threads",
            WorkloadClass::LocksBesideScans => "locks beside memory scans",
            WorkloadClass::Inserts => "database inserts",
            WorkloadClass::ReadMostlyCache => "read-mostly cache",
            WorkloadClass::Command => "your command",
        }
    }
}

/// The answer for one workload class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HtAnswer {
    /// SMT on gave a gain beyond the noise band.
    KeepHtOn,
    /// SMT on (or sharing a core) cost a loss beyond the loss threshold.
    TurnHtOff,
    /// Sharing a core cost a measured slowdown smaller than a loss: the whole interval
    /// lies between the loss threshold and the noise band.
    SmallLoss,
    /// The whole interval lies inside the noise band: any change is smaller than the band.
    NoDifference,
    /// The class's workloads disagree (one gains, another loses or stays flat): no single
    /// answer holds for the class, and the reason names which is which.
    DependsOnWorkload,
    /// The interval straddles a threshold: more runs, or a quieter machine, are needed.
    Inconclusive,
    /// Nothing on this machine or in this run could answer it (the reason says why).
    NotMeasured,
    /// Only across hosts (`smtlab merge`): hosts of one machine type answer firmly and
    /// differently (one gains, another loses), so no one answer holds for the type; the
    /// reason names the groups.
    HostsDisagree,
}

impl HtAnswer {
    /// The answer a yield (SMT on ÷ SMT off on the same cores) gives: a gain keeps HT on,
    /// a loss turns it off, a smaller measured loss is a small loss, no effect is no
    /// difference.
    pub fn from_yield(e: crate::stats::Effect) -> Self {
        use crate::stats::Effect;
        match e {
            Effect::Gain => HtAnswer::KeepHtOn,
            Effect::NoEffect => HtAnswer::NoDifference,
            Effect::Loss => HtAnswer::TurnHtOff,
            Effect::SmallLoss => HtAnswer::SmallLoss,
            Effect::Inconclusive => HtAnswer::Inconclusive,
        }
    }

    /// The answer a slowdown from sharing a core (shared ÷ alone) gives: a loss argues for
    /// HT off, a measured smaller slowdown is a small loss, and no slowdown is no
    /// difference — not "keep HT on", since what the sibling's own work gained was not
    /// measured. A sharing thread that ran faster is not an answer either way.
    pub fn from_sharing(e: crate::stats::Effect) -> Self {
        use crate::stats::Effect;
        match e {
            Effect::Loss => HtAnswer::TurnHtOff,
            Effect::SmallLoss => HtAnswer::SmallLoss,
            Effect::NoEffect => HtAnswer::NoDifference,
            Effect::Gain | Effect::Inconclusive => HtAnswer::Inconclusive,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            HtAnswer::KeepHtOn => "keep HT on",
            HtAnswer::TurnHtOff => "turn HT off",
            HtAnswer::SmallLoss => "small loss",
            HtAnswer::NoDifference => "no difference",
            HtAnswer::DependsOnWorkload => "depends on the workload",
            HtAnswer::Inconclusive => "inconclusive",
            HtAnswer::NotMeasured => "not measured here",
            HtAnswer::HostsDisagree => "hosts disagree",
        }
    }
}

/// One row of the answer table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub class: WorkloadClass,
    pub answer: HtAnswer,
    /// The comparison the answer rests on; None when not measured.
    pub evidence: Option<Evidence>,
    /// Why this answer, or why the class could not be answered here.
    pub reason: String,
    /// The report section that holds the runs behind it.
    pub section: Option<PhaseName>,
    /// The check of the runs' own quality records this row passed through (busy CPUs
    /// before the runs, steal, threads off their CPUs, …): what was checked and each
    /// problem found. A row whose runs had a problem is never firmer than inconclusive.
    /// None for a row that was not measured, and in files written before rows stored it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

/// What a row's runs were checked for and what was found, as results.json keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Gate {
    /// The records read: `preflight` (other work on the CPUs just before the runs),
    /// `steal` (the hypervisor's share of the measured CPUs during them), `pinning`
    /// (every thread stayed on its CPUs), `rows` (every committed row was in the table),
    /// `disturbed-rounds` (rounds the engine saw disturbed while they ran), `on-cpu`
    /// (pinned threads on their CPUs for the whole run, CPU time against wall time).
    pub checked: Vec<String>,
    /// Each problem found, in words; empty when the runs were clean.
    pub problems: Vec<String>,
}

impl Gate {
    /// A gate over `checked` that found `problems`.
    pub fn new(checked: &[&str], problems: Vec<String>) -> Self {
        Gate {
            checked: checked.iter().map(|c| c.to_string()).collect(),
            problems,
        }
    }

    /// The runs had nothing wrong in the records read.
    pub fn clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// How a gate's problems are said where they hold a row back.
pub const HELD_BACK: &str = "held back as inconclusive, since the runs were disturbed";

impl Answer {
    /// This row passed through `gate`: stored with it, and a row whose runs had a problem
    /// held back as inconclusive with the problems in its reason (once: a row already held
    /// back for them keeps its words). A row not measured here has nothing to gate.
    pub fn gated(mut self, gate: Gate) -> Self {
        if self.answer == HtAnswer::NotMeasured {
            return self;
        }
        if !gate.clean() && !self.reason.contains(HELD_BACK) {
            if self.answer != HtAnswer::Inconclusive {
                self.answer = HtAnswer::Inconclusive;
            }
            self.reason
                .push_str(&format!("; {HELD_BACK}: {}", gate.problems.join("; ")));
        }
        self.gate = Some(gate);
        self
    }
}

/// A ratio a sentence cites, with its interval, its run count and which runs it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// What the ratio compares, e.g. "inserts/s, all ÷ one-per-core on the same cores".
    pub what: String,
    /// Which runs it rests on, e.g. "oltp rounds 1–5".
    pub runs: String,
    pub comparison: crate::stats::Comparison,
}

/// What one experiment showed and what it means for HT and pinning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// `locks`, `neighbors`, `oltp`, `rwcache`, `c2c`.
    pub topic: String,
    /// What was measured, with numbers and spread.
    pub observed: String,
    /// What it means for someone deciding on HT and pinning.
    pub meaning: String,
    /// The comparisons the two sentences cite.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
}

// ---------------------------------------------------------------------------------------
// Stating a comparison, and answer rows from several members.

/// Confidence asked of every interval the verdict computes itself.
pub const CONFIDENCE: f64 = 0.95;

/// A row this run could not answer, with the reason and the section that would have.
pub fn not_answered(class: WorkloadClass, reason: String, section: Option<PhaseName>) -> Answer {
    Answer {
        class,
        answer: HtAnswer::NotMeasured,
        evidence: None,
        reason,
        section,
        gate: None,
    }
}

/// An answer needs a confidence interval: fewer than [`crate::stats::MIN_RUNS_FOR_CI`]
/// paired runs (or, in files written before the Student-t interval, fewer than
/// [`crate::stats::BOOTSTRAP_MIN_RUNS`] bootstrap runs) give none, so such a row stays
/// inconclusive and its reason says why.
pub fn decide(c: &Comparison, map: fn(Effect) -> HtAnswer) -> HtAnswer {
    if c.indicative || c.n < crate::stats::MIN_RUNS_FOR_CI {
        HtAnswer::Inconclusive
    } else {
        map(c.effect)
    }
}

/// The reason's tail when [`decide`] held back an answer.
pub fn indicative_note(c: &Comparison) -> String {
    if !(c.indicative || c.n < crate::stats::MIN_RUNS_FOR_CI) {
        return String::new();
    }
    let (min, why) = match c.method {
        IntervalMethod::PercentileBootstrap => (
            crate::stats::BOOTSTRAP_MIN_RUNS,
            "this file's intervals are percentile bootstraps, which give no confidence interval",
        ),
        _ => (
            crate::stats::MIN_RUNS_FOR_CI,
            "fewer runs give no confidence interval",
        ),
    };
    format!(
        "; only {} — {why} below {min} runs, so no answer is drawn (a longer `--budget` runs more rounds)",
        count(c.n, "run")
    )
}

/// The direction an effect points for aggregation: losses of both sizes count as one.
pub fn direction(e: Effect) -> Option<u8> {
    match e {
        Effect::Loss | Effect::SmallLoss => Some(0),
        Effect::NoEffect => Some(1),
        Effect::Gain => Some(2),
        Effect::Inconclusive => None,
    }
}

/// Which way a member's interval leans even when it is not decided: its class's
/// direction when decided, else up when it lies wholly above 1 (the members' rates rose
/// with SMT, by less or more than the band), down when wholly below 1, None when it
/// reaches across 1. Such a member cannot be counted as "no difference", and members that
/// lean opposite ways are a class whose workloads disagree.
pub fn lean(c: &Comparison) -> Option<u8> {
    direction(c.effect).or(if c.low > 1.0 {
        Some(2)
    } else if c.high < 1.0 {
        Some(0)
    } else {
        None
    })
}

/// One workload (or scanner scenario) of an answer row: its own comparison and the
/// per-round ratios behind it, keyed by round so that members can be paired.
#[derive(Debug, Clone)]
pub struct Member {
    /// `` `int` `` or `` `ttas`, scanner on 1 (sibling of 0) ``.
    pub label: String,
    pub comparison: Comparison,
    pub ratios: Vec<(usize, f64)>,
}

/// A row's members taken together.
#[derive(Debug, Clone)]
pub struct Aggregate {
    /// The row's central value: the one member's comparison, or with several members
    /// the per-round median of their ratios (a true median: the mean of the middle two for
    /// an even count), paired by round.
    pub central: Comparison,
    /// Set when the central value is not the per-round median (a file without per-round
    /// ratios): which member stands in, said in the row.
    pub central_note: Option<String>,
    pub k: usize,
    /// Each member at confidence 1 − 0.05/k (Bonferroni: calling any one of k members out
    /// claims no more than the runs show), lowest first; false where there were no
    /// per-round ratios to widen from.
    pub members: Vec<(String, Comparison, bool)>,
    /// Several members whose adjusted intervals point different ways (a gain and a loss,
    /// a gain and no effect, …, or one wholly above 1 and another wholly below): the row
    /// depends on the workload.
    pub disagree: bool,
    /// Every member's adjusted interval lies inside the noise band: only then can the
    /// row say "no difference".
    pub all_inside: bool,
}

impl Aggregate {
    pub fn of(mut members: Vec<Member>, t: Thresholds) -> Option<Self> {
        members.retain(|m| m.comparison.n > 0);
        if members.is_empty() {
            return None;
        }
        members.sort_by(|a, b| a.comparison.estimate.total_cmp(&b.comparison.estimate));
        let k = members.len();
        if k == 1 {
            let m = members.remove(0);
            return Some(Self {
                central: m.comparison,
                central_note: None,
                k,
                all_inside: m.comparison.effect == Effect::NoEffect,
                members: vec![(m.label, m.comparison, false)],
                disagree: false,
            });
        }
        // Rounds every member has a ratio for.
        let mut rounds: Vec<usize> = members[0].ratios.iter().map(|(r, _)| *r).collect();
        rounds.retain(|r| members.iter().all(|m| m.ratios.iter().any(|(x, _)| x == r)));
        let medians: Vec<f64> = rounds
            .iter()
            .map(|r| {
                let xs: Vec<f64> = members
                    .iter()
                    .filter_map(|m| m.ratios.iter().find(|(x, _)| x == r).map(|(_, v)| *v))
                    .collect();
                crate::stats::median(&xs)
            })
            .collect();
        let (central, central_note) = match Comparison::of_paired_ratios(&medians, t, CONFIDENCE) {
            Some(c) => (c, None),
            None => {
                let m = &members[(k - 1) / 2];
                (
                    m.comparison,
                    Some(format!(
                        "these runs hold no per-round ratios to take a median of, so the row \
                         stands on the lower middle of {k}, {}",
                        m.label
                    )),
                )
            }
        };
        let level = 1.0 - (1.0 - CONFIDENCE) / k as f64;
        let adjusted: Vec<(String, Comparison, bool)> = members
            .iter()
            .map(|m| {
                let values: Vec<f64> = m.ratios.iter().map(|(_, v)| *v).collect();
                match Comparison::of_paired_ratios(&values, t, level) {
                    Some(c) => (m.label.clone(), c, true),
                    None => (m.label.clone(), m.comparison, false),
                }
            })
            .collect();
        let mut dirs: Vec<u8> = adjusted
            .iter()
            .filter(|(_, c, _)| !c.indicative)
            .filter_map(|(_, c, _)| direction(c.effect))
            .collect();
        if !central.indicative {
            dirs.extend(direction(central.effect));
        }
        dirs.sort_unstable();
        dirs.dedup();
        // Members leaning opposite ways count too, decided or not: a member wholly below 1
        // beside one wholly above is a class whose workloads disagree.
        let leans: Vec<u8> = adjusted
            .iter()
            .filter(|(_, c, _)| !c.indicative)
            .filter_map(|(_, c, _)| lean(c))
            .collect();
        let opposite = leans.contains(&0) && leans.contains(&2);
        let all_inside = adjusted
            .iter()
            .all(|(_, c, _)| c.effect == Effect::NoEffect);
        Some(Self {
            central,
            central_note,
            k,
            members: adjusted,
            disagree: dirs.len() > 1 || opposite,
            all_inside,
        })
    }

    /// The row's answer: [`HtAnswer::DependsOnWorkload`] when members disagree, else the
    /// central value's.
    pub fn answer(&self, map: fn(Effect) -> HtAnswer) -> HtAnswer {
        if self.disagree {
            return HtAnswer::DependsOnWorkload;
        }
        match decide(&self.central, map) {
            // No difference for the row needs every member inside the band.
            HtAnswer::NoDifference if !self.all_inside => HtAnswer::Inconclusive,
            a => a,
        }
    }

    /// Said in the row when its central value is inside the band but a member is not.
    pub fn outside_note(&self) -> Option<String> {
        if self.all_inside || self.disagree || self.central.effect != Effect::NoEffect {
            return None;
        }
        let out: Vec<&str> = self
            .members
            .iter()
            .filter(|(_, c, _)| c.effect != Effect::NoEffect)
            .map(|(l, _, _)| l.as_str())
            .collect();
        Some(format!(
            "the median is inside the band but {} not, so \"no difference\" is not shown for every member",
            match out.len() {
                1 => format!("{} is", out[0]),
                n if n <= LIST_ALL => format!("{} are", out.join(", ")),
                n => format!("{n} of the {} members are", self.k),
            }
        ))
    }

    /// `per-round median of 3 workloads: 1.20× … (95 % CI …: gain); each at 98.3 %
    /// (widened for being one of 3): `a` 0.90× (…), …`, or for one member `` `int` at
    /// 1.90× … ``; `of` says what the ratios are of. Beyond [`LIST_ALL`] members only the
    /// lowest, the highest and the count per class are listed.
    pub fn text(&self, of: &str, what: &str) -> String {
        if self.k == 1 {
            let (label, c, _) = &self.members[0];
            return format!("{label}: {}", c.ratio_of(of));
        }
        let level = crate::render::level_text(1.0 - (1.0 - CONFIDENCE) / self.k as f64);
        let one = |(label, c, widened): &(String, Comparison, bool)| {
            format!(
                "{label} {}{}",
                c.ratio_of(""),
                if *widened {
                    ""
                } else {
                    " (not widened: no per-round ratios)"
                }
            )
        };
        let mut s = match &self.central_note {
            None => format!(
                "per-round median of {} {what}: {}",
                self.k,
                self.central.ratio_of(of)
            ),
            Some(note) => format!("{}: {note}", self.central.ratio_of(of)),
        };
        if self.members.iter().all(|(_, _, widened)| !widened) {
            let each: Vec<String> = self.members.iter().map(one).collect();
            s.push_str(&format!("; each: {}", each.join(", ")));
        } else if self.k <= LIST_ALL {
            let each: Vec<String> = self.members.iter().map(one).collect();
            s.push_str(&format!(
                "; each at {level} % (widened for being one of {}): {}",
                self.k,
                each.join(", ")
            ));
        } else {
            let mut classes: Vec<(Effect, usize)> = Vec::new();
            for (_, c, _) in &self.members {
                match classes.iter_mut().find(|(e, _)| *e == c.effect) {
                    Some((_, n)) => *n += 1,
                    None => classes.push((c.effect, 1)),
                }
            }
            s.push_str(&format!(
                "; at {level} % each (widened for being one of {}): lowest {}, highest {}; {}",
                self.k,
                one(&self.members[0]),
                one(&self.members[self.k - 1]),
                classes
                    .iter()
                    .map(|(e, n)| format!("{n} {e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.disagree {
            // Decided members by their class; undecided ones by the side of 1 they lie on.
            let named = |want: u8, decided: bool| -> Vec<String> {
                self.members
                    .iter()
                    .filter(|(_, c, _)| {
                        !c.indicative
                            && lean(c) == Some(want)
                            && (direction(c.effect).is_some() == decided)
                    })
                    .map(|(l, _, _)| l.clone())
                    .collect()
            };
            let mut parts = Vec::new();
            for (want, decided, word) in [
                (2, true, "gain"),
                (2, false, "wholly above 1 (less than the band)"),
                (1, true, "no effect"),
                (0, false, "wholly below 1 (less than the band)"),
                (0, true, "loss"),
            ] {
                let n = named(want, decided);
                match n.len() {
                    0 => {}
                    1..=LIST_ALL => parts.push(format!("{word} for {}", n.join(", "))),
                    more => parts.push(format!("{word} for {more} of them")),
                }
            }
            if parts.len() < 2 {
                parts.push(format!("{} for the median", self.central.effect));
            }
            s.push_str(&format!(
                "; the {what} disagree ({}), so no single answer holds for the class",
                parts.join("; ")
            ));
        }
        s
    }
}

/// Members an answer row lists one by one; more are summarised.
pub const LIST_ALL: usize = 4;

#[cfg(test)]
mod aggregate_tests {
    use super::*;

    fn member(label: &str, rounds: &[f64]) -> Member {
        Member {
            label: label.into(),
            comparison: Comparison::of_paired_ratios(rounds, Thresholds::YIELD, CONFIDENCE)
                .unwrap(),
            ratios: rounds.iter().copied().enumerate().collect(),
        }
    }

    /// Three compute rulers over five rounds: `int` lies wholly below 1 and `prime` wholly
    /// above at the widened 98.3 %, though neither is beyond the band; the median of the
    /// rounds is 0.99× (0.97–1.01), inside it. That is not "no difference".
    #[test]
    fn a_row_counts_members_that_lean_opposite_ways_even_when_undecided() {
        let agg = Aggregate::of(
            vec![
                member("`prime`", &[1.062, 1.063, 1.122, 1.027, 1.095]),
                member("`int`", &[0.860, 0.951, 0.926, 0.958, 0.906]),
                member("`fma`", &[1.012, 0.991, 0.978, 1.004, 0.963]),
            ],
            Thresholds::YIELD,
        )
        .unwrap();
        let c = agg.central;
        assert!((c.estimate - 0.99).abs() < 0.006, "{c:?}");
        assert_eq!(c.effect, Effect::NoEffect, "{c:?}");
        let find = |l: &str| agg.members.iter().find(|m| m.0 == l).unwrap().1;
        assert!(find("`int`").high < 1.0 && find("`prime`").low > 1.0);
        assert_eq!(find("`int`").effect, Effect::Inconclusive);
        assert!(agg.disagree);
        assert_eq!(
            agg.answer(HtAnswer::from_yield),
            HtAnswer::DependsOnWorkload
        );
        let text = agg.text("one thread per core", "workloads");
        assert!(
            text.contains("wholly above 1 (less than the band) for `prime`")
                && text.contains("wholly below 1 (less than the band) for `int`"),
            "{text}"
        );
    }

    /// "No difference" needs every member inside the band: a median inside it with one
    /// member reaching out of it is inconclusive.
    #[test]
    fn no_difference_needs_every_member_inside_the_band() {
        let agg = Aggregate::of(
            vec![
                member("`a`", &[1.00, 1.01, 0.99, 1.00, 1.005]),
                member("`b`", &[1.00, 1.002, 0.998, 1.001, 0.999]),
                member("`c`", &[1.09, 0.96, 1.07, 0.99, 1.03]),
            ],
            Thresholds::YIELD,
        )
        .unwrap();
        assert_eq!(agg.central.effect, Effect::NoEffect, "{:?}", agg.central);
        assert!(!agg.all_inside && !agg.disagree);
        assert_eq!(agg.answer(HtAnswer::from_yield), HtAnswer::Inconclusive);
        assert!(agg.outside_note().unwrap().contains("`c` is not"));
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    fn row(answer: HtAnswer) -> Answer {
        Answer {
            class: WorkloadClass::Inserts,
            answer,
            evidence: None,
            reason: "SMT yield for inserts: 1.30×".into(),
            section: None,
            gate: None,
        }
    }

    #[test]
    fn a_row_whose_runs_had_a_problem_is_held_back_and_keeps_the_gate() {
        let g = Gate::new(
            &["preflight", "steal"],
            vec!["other work was running on CPU 1".into()],
        );
        let a = row(HtAnswer::KeepHtOn).gated(g.clone());
        assert_eq!(a.answer, HtAnswer::Inconclusive);
        assert!(
            a.reason
                .ends_with("; held back as inconclusive, since the runs were disturbed: other work was running on CPU 1"),
            "{}",
            a.reason
        );
        assert_eq!(a.gate.as_ref(), Some(&g));
        // Stored in the JSON and read back.
        let back: Answer = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        // Said once when the row was held back for it already.
        let again = a.clone().gated(g);
        assert_eq!(again.reason, a.reason);
        // Clean runs change nothing but record what was checked.
        let clean = row(HtAnswer::KeepHtOn).gated(Gate::new(&["preflight"], Vec::new()));
        assert_eq!(clean.answer, HtAnswer::KeepHtOn);
        assert_eq!(clean.gate.unwrap().checked, ["preflight"]);
        // A row not measured has nothing to gate.
        let nm = row(HtAnswer::NotMeasured).gated(Gate::new(&["steal"], vec!["x".into()]));
        assert_eq!((nm.answer, nm.gate), (HtAnswer::NotMeasured, None));
        // An older file's row without a gate reads.
        let old = r#"{"class":"inserts","answer":"keep-ht-on","evidence":null,"reason":"r","section":null}"#;
        assert_eq!(serde_json::from_str::<Answer>(old).unwrap().gate, None);
    }
}

#[cfg(test)]
mod tests {
    use super::PhaseName;

    #[test]
    fn a_phase_name_is_written_and_read_as_its_label() {
        const TOY: PhaseName = PhaseName::new("toy");
        assert_eq!(serde_json::to_string(&TOY).unwrap(), "\"toy\"");
        let back: PhaseName = serde_json::from_str("\"toy\"").unwrap();
        assert_eq!(back, TOY);
        // A name this build has no phase for still reads (a newer build's file).
        let other: PhaseName = serde_json::from_str("\"future-phase-2\"").unwrap();
        assert_eq!(other.label(), "future-phase-2");
        // Read twice, kept once.
        let again: PhaseName = serde_json::from_str("\"future-phase-2\"").unwrap();
        assert!(std::ptr::eq(other.label(), again.label()));
    }

    #[test]
    fn a_malformed_phase_name_is_refused_naming_it() {
        for bad in ["\"\"", "\"Lockscan\"", "\"lock scan\"", "\"<script>\"", "3"] {
            assert!(serde_json::from_str::<PhaseName>(bad).is_err(), "{bad}");
        }
        let long = format!("\"{}\"", "a".repeat(33));
        let e = serde_json::from_str::<PhaseName>(&long).unwrap_err();
        assert!(e.to_string().contains("at most 32 characters"), "{e}");
        let e = serde_json::from_str::<PhaseName>("\"Lockscan\"").unwrap_err();
        assert!(e.to_string().contains("\"Lockscan\""), "{e}");
    }
}
