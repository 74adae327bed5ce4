//! Hosts in, [`Fleet`] out: one results.json per host (the latest when a host has
//! several), hosts grouped by machine type, and per type and workload class every host's
//! own answer beside the ratio pooled across them. Pure.
//!
//! The type's answer is decided as one host's is: the pooled interval is classified
//! against the hosts' thresholds ([`crate::stats::classify`]) and mapped to an answer by
//! [`crate::report::metrics::answer_for`]; an interval that straddles a threshold is
//! inconclusive. A host's own answer is never recomputed: it is shown as its study gave it.

use super::host::{Host, kernel_release};
use super::model::*;
use super::pool::{self, Estimate};
use crate::render::ratio_text;
use crate::report::metrics::{CLASSES, answer_for, ratio_kind};
use crate::report::{Answer, HtAnswer, WorkloadClass};
use crate::stats::{IntervalMethod, Thresholds, classify};
use std::collections::BTreeMap;

/// Confidence of every pooled interval.
pub const CONFIDENCE: f64 = 0.95;
/// Fewest runs behind a host's interval for it to enter a pool: the fewest from which a
/// study draws a confidence interval ([`crate::stats::MIN_RUNS_FOR_CI`]); its standard
/// error is read back from that Student-t interval on log ratios.
pub const MIN_RUNS_TO_POOL: usize = crate::stats::MIN_RUNS_FOR_CI;

/// How the hosts are pooled, as the report states it.
pub const METHOD: &str = "Per machine type and workload class, each host's log ratio is weighted by its own interval (standard error read back from a Student-t interval on log ratios; since a variance from 3–5 runs is itself uncertain, no host weighs more than the type's pooled run-to-run noise allows for its run count) and pooled by a random-effects model: between-host variance τ² by DerSimonian and Laird (1986), the mean's interval by Hartung and Knapp (2001) with t(k − 1) and its variance factor at least 1 (Röver, Knapp and Friede 2015); heterogeneity I² (Higgins and Thompson 2002); one more host's true ratio expected within the prediction interval (Higgins, Thompson and Spiegelhalter 2009), and what it will measure with its own noise added; a host is an outlier when its studentized deleted residual passes the Bonferroni bound for the hosts tested (Viechtbauer and Cheung 2010), and is left out of the pool only when its own results show a measured difference that explains it (a missing reading does not). A host whose own study withheld an answer its evidence alone would give (depends on the workload, held back, not called) is counted by its answer and reason, never pooled. A type answers firmly only when at least 3 hosts pool, the pooled interval is decided, no host's own firm answer points another way, and one more host's true ratio is expected on the same side; hosts that answer firmly and differently give \"hosts disagree\", naming the groups.";

/// Builds the fleet from the hosts read and the inputs skipped so far.
pub fn build(
    hosts: Vec<Host>,
    mut skipped: Vec<Skipped>,
    files_read: usize,
    provenance: FleetProvenance,
) -> Fleet {
    let hosts = dedupe(hosts, &mut skipped);
    let synthetic_hosts = hosts.iter().filter(|h| h.row.synthetic).count();
    let slurm_hosts = hosts.iter().filter(|h| h.row.slurm.is_some()).count();
    let n_hosts = hosts.len();
    let mut groups: BTreeMap<TypeKey, Vec<Host>> = BTreeMap::new();
    for h in hosts {
        groups.entry(h.key.clone()).or_default().push(h);
    }
    let mut groups: Vec<(TypeKey, Vec<Host>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    let types: Vec<MachineType> = groups
        .into_iter()
        .enumerate()
        .map(|(i, (key, hosts))| machine_type(format!("type {}", i + 1), key, hosts))
        .collect();
    let mut notes: Vec<Note> = Vec::new();
    let mut versions: Vec<&str> = types
        .iter()
        .flat_map(|t| &t.hosts)
        .map(|h| h.smtlab_version.as_str())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    let mut builds: BTreeMap<String, usize> = BTreeMap::new();
    for h in types.iter().flat_map(|t| &t.hosts) {
        *builds.entry(build_label(h)).or_default() += 1;
    }
    if builds.len() > 1 {
        notes.push(Note::MixedBuilds {
            builds: builds.into_iter().collect(),
        });
    } else if versions.len() > 1 {
        notes.push(Note::MixedVersions {
            versions: versions.iter().map(|v| v.to_string()).collect(),
        });
    }
    for t in &types {
        for u in &types {
            let (a, b) = (&t.key, &u.key);
            if a.smt == "on"
                && b.smt != "on"
                && (
                    &a.cpu_model,
                    a.packages,
                    a.cores_per_package,
                    &a.kernel_major,
                    &a.platform,
                ) == (
                    &b.cpu_model,
                    b.packages,
                    b.cores_per_package,
                    &b.kernel_major,
                    &b.platform,
                )
            {
                notes.push(Note::SmtOffTwin {
                    off_type: u.id.clone(),
                    hosts: u.hosts.len(),
                    on_type: t.id.clone(),
                    smt: b.smt.clone(),
                });
            }
        }
    }
    if synthetic_hosts > 0 {
        notes.push(Note::Synthetic {
            synthetic_hosts,
            hosts: n_hosts,
        });
    }
    Fleet {
        kind: FLEET_KIND.into(),
        schema_version: FLEET_SCHEMA_VERSION,
        provenance,
        confidence: CONFIDENCE,
        method: METHOD.into(),
        files_read,
        hosts: n_hosts,
        synthetic_hosts,
        slurm_hosts,
        skipped,
        types,
        notes: notes.into_iter().map(String::from).collect(),
    }
}

/// One results.json per host name: the latest study (then the first given); the others
/// are skipped, naming the file kept.
fn dedupe(hosts: Vec<Host>, skipped: &mut Vec<Skipped>) -> Vec<Host> {
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (i, h) in hosts.iter().enumerate() {
        let e = best.entry(h.row.host.clone()).or_insert(i);
        if h.row.started_unix_s > hosts[*e].row.started_unix_s {
            *e = i;
        }
    }
    let keep: std::collections::HashSet<usize> = best.values().copied().collect();
    let mut out = Vec::new();
    let mut dups = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        if keep.contains(&i) {
            continue;
        }
        let k = &hosts[best[&h.row.host]];
        dups.push(Skipped {
            path: h.row.file.clone(),
            problem: Problem::Duplicate,
            reason: format!(
                "a second results.json of host `{}` (study started {}); the one in `{}` (started {}) is merged, as the {}",
                h.row.host,
                crate::render::cells::utc(h.row.started_unix_s),
                k.row.file,
                crate::render::cells::utc(k.row.started_unix_s),
                if k.row.started_unix_s > h.row.started_unix_s {
                    "later study"
                } else {
                    "first file given of two studies started at the same second"
                }
            ),
        });
    }
    for (i, h) in hosts.into_iter().enumerate() {
        if keep.contains(&i) {
            out.push(h);
        }
    }
    skipped.extend(dups);
    out
}

/// The most common value and how many have it (ties: the smallest value).
fn mode<'a>(xs: impl Iterator<Item = &'a str>) -> Option<(String, usize)> {
    let mut m: BTreeMap<&str, usize> = BTreeMap::new();
    for x in xs {
        *m.entry(x).or_default() += 1;
    }
    let max = *m.values().max()?;
    m.into_iter()
        .find(|(_, n)| *n == max)
        .map(|(v, n)| (v.to_string(), n))
}

fn machine_type(id: String, key: TypeKey, mut hosts: Vec<Host>) -> MachineType {
    hosts.sort_by(|a, b| a.row.host.cmp(&b.row.host));
    // Kernel release and microcode unlike the type's most common one: a difference the
    // type key (kernel major version only) does not separate.
    let n = hosts.len();
    let releases: Vec<String> = hosts
        .iter()
        .map(|h| kernel_release(&h.row.kernel))
        .collect();
    if let Some((common, count)) = mode(releases.iter().map(String::as_str))
        && count >= 2
    {
        for (h, rel) in hosts.iter_mut().zip(&releases) {
            if *rel != common {
                h.row.caveats.push(Caveat {
                    kind: CaveatKind::Kernel,
                    text: format!(
                        "kernel {rel}, where {count} of the type's {n} hosts run {common}"
                    ),
                });
            }
        }
    }
    if let Some((common, count)) = mode(hosts.iter().filter_map(|h| h.row.microcode.as_deref()))
        && count >= 2
    {
        for h in hosts.iter_mut() {
            match h.row.microcode.clone() {
                Some(mine) if mine != common => h.row.caveats.push(Caveat {
                    kind: CaveatKind::Microcode,
                    text: format!(
                        "microcode {mine}, where {count} of the type's {n} hosts run {common}"
                    ),
                }),
                Some(_) => {}
                None => h.row.caveats.push(Caveat {
                    kind: CaveatKind::MicrocodeUnknown,
                    text: format!(
                        "no microcode reading (where {count} of the type's {n} hosts run {common}): not a measured difference"
                    ),
                }),
            }
        }
    }
    let mut classes = Vec::new();
    for class in CLASSES {
        if class != WorkloadClass::Command {
            classes.push(class_row(class, None, &hosts));
            continue;
        }
        let mut commands: Vec<String> = hosts.iter().filter_map(|h| h.command.clone()).collect();
        commands.sort();
        commands.dedup();
        if commands.is_empty() {
            classes.push(class_row(class, None, &hosts));
        }
        for c in commands {
            let ran: Vec<Host> = hosts
                .iter()
                .filter(|h| h.command.as_deref() == Some(c.as_str()))
                .cloned()
                .collect();
            classes.push(class_row(class, Some(c), &ran));
        }
    }
    let slurm_advice = classes.iter().filter_map(|c| c.slurm.clone()).collect();
    let mut headline = headline(&id, &key, hosts.len(), &classes);
    let mut builds: Vec<String> = hosts.iter().map(|h| build_label(&h.row)).collect();
    builds.sort();
    builds.dedup();
    if builds.len() > 1 {
        headline.push_str(&format!(
            " Its hosts ran {} different smtlab builds ({}): their answers follow different builds' rules.",
            builds.len(),
            builds.join(", ")
        ));
    }
    MachineType {
        id,
        label: key.label(),
        key,
        headline,
        hosts: hosts.into_iter().map(|h| h.row).collect(),
        classes,
        slurm_advice,
    }
}

/// The answer a host's study gave for `class`, or a not-measured row when its table has
/// none (a file from before the class existed).
fn host_answer(h: &Host, class: WorkloadClass) -> Answer {
    h.answers
        .iter()
        .find(|a| a.class == class)
        .cloned()
        .unwrap_or_else(|| Answer {
            gate: None,
            class,
            answer: HtAnswer::NotMeasured,
            evidence: None,
            reason: "its answer table has no row for this class (written by an older smtlab)"
                .into(),
            section: None,
        })
}

/// Why a host's evidence cannot enter the pool; None when it can.
fn not_poolable(class: WorkloadClass, a: &Answer) -> Option<String> {
    let Some(e) = &a.evidence else {
        return Some("no evidence: not measured on this host".into());
    };
    let c = &e.comparison;
    if crate::report::metrics::evidence_kind(a) != Some(ratio_kind(class)) {
        return Some(
            "its evidence is the lock thread's rate alone (its results.json predates the scanner's progress), not the shared core's yield the type pools; run its study again to pool it"
                .into(),
        );
    }
    match c.method {
        IntervalMethod::StudentTLog => {}
        IntervalMethod::PercentileBootstrap => {
            return Some(
                "its interval is a percentile bootstrap of the median (a results.json written before smtlab's Student-t intervals), from which no standard error can be read back; run its study again to pool it"
                    .into(),
            );
        }
        IntervalMethod::OrderStatistic => {
            return Some(
                "a ratio of 0 among its runs (an order-statistic interval): no log ratio to pool"
                    .into(),
            );
        }
    }
    if c.n < MIN_RUNS_TO_POOL || c.indicative {
        return Some(format!(
            "{} behind its interval; pooling needs at least {MIN_RUNS_TO_POOL}",
            crate::render::count(c.n, "run")
        ));
    }
    if let Some(why) = withheld(class, a) {
        return Some(why);
    }
    if !(c.estimate > 0.0 && c.estimate.is_finite()) {
        return Some("no finite ratio".into());
    }
    if !c
        .log_standard_error()
        .is_some_and(|se| se > 0.0 && se.is_finite())
    {
        return Some("its interval has no width to weigh it by".into());
    }
    None
}

/// Why a host's own study gave another answer than its evidence alone would (its members
/// disagree, a control or a disturbance held the answer back, the metric could not call
/// it); None when its answer is its evidence's. Such a host counts by its answer and
/// reason: pooling its ratio would re-decide what its own rules declined to.
fn withheld(class: WorkloadClass, a: &Answer) -> Option<String> {
    let e = a.evidence.as_ref()?;
    // A study that held an answer back whose evidence was itself undecided says so in
    // its reason: compare's "not called" (wall time that measures no work) and the yield
    // rows' "held back" (disturbed runs).
    // A row's stored gate says it structurally (a disturbance found in its runs' own
    // records); files written before rows stored their gate are read by the phrases.
    let gated = a.gate.as_ref().is_some_and(|g| !g.clean());
    let said = gated || HELD_BACK.iter().any(|m| a.reason.contains(m));
    (said || a.answer != answer_for(class, e.comparison.effect)).then(|| {
        format!(
            "its own study answered {} although its evidence alone reads {} ({}): {}",
            a.answer.label(),
            e.comparison.effect,
            e.comparison,
            a.reason
        )
    })
}

/// How a study's reason says it held its answer back.
const HELD_BACK: [&str; 2] = ["; not called: ", "; held back as inconclusive"];

/// Fewest hosts whose intervals pool before a machine type gets an answer of its own: the
/// fewest for which a prediction interval exists (t with k − 2 degrees of freedom). With
/// fewer the type is inconclusive and its row gives the hosts' own answers.
pub const MIN_HOSTS_TO_POOL: usize = 3;

/// Which way a firm answer points: 0 loss (either size), 1 no difference, 2 gain.
fn answer_direction(a: HtAnswer) -> Option<u8> {
    match a {
        HtAnswer::TurnHtOff | HtAnswer::SmallLoss => Some(0),
        HtAnswer::NoDifference => Some(1),
        HtAnswer::KeepHtOn => Some(2),
        _ => None,
    }
}

/// The pooled ratio of the rows marked pooled; None when none is.
fn pool_rows(rows: &[HostAnswer], thresholds: Option<Thresholds>) -> Option<PooledRatio> {
    let in_pool: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].pooled).collect();
    match in_pool.len() {
        0 => None,
        1 => {
            let c = rows[in_pool[0]]
                .comparison
                .expect("pooled rows have evidence");
            Some(PooledRatio {
                hosts: 1,
                estimate: c.estimate,
                low: c.low,
                high: c.high,
                confidence: c.confidence,
                method: "one host".into(),
                tau: None,
                i2: None,
                q: None,
                predict_low: None,
                predict_high: None,
                predict_measured_low: None,
                predict_measured_high: None,
                effect: c.effect,
            })
        }
        _ => {
            let xs: Vec<Estimate> = in_pool.iter().map(|&i| estimate(&rows[i])).collect();
            pool::random_effects(&xs, CONFIDENCE).map(|p| {
                let t = thresholds.unwrap_or(Thresholds::YIELD);
                let (low, high) = (p.low.exp(), p.high.exp());
                PooledRatio {
                    hosts: p.k,
                    estimate: p.mu.exp(),
                    low,
                    high,
                    confidence: CONFIDENCE,
                    method: "random effects".into(),
                    tau: Some(p.tau2.sqrt()),
                    i2: p.i2,
                    q: Some(p.q),
                    predict_low: p.predict.map(|x| x.0.exp()),
                    predict_high: p.predict.map(|x| x.1.exp()),
                    predict_measured_low: p.predict_measured.map(|x| x.0.exp()),
                    predict_measured_high: p.predict_measured.map(|x| x.1.exp()),
                    effect: classify(low, high, t),
                }
            })
        }
    }
}

/// A pooled row's log ratio, its variance read back from its Student-t interval, and the
/// degrees of freedom that variance has.
fn estimate(r: &HostAnswer) -> Estimate {
    let c = r.comparison.expect("eligible rows have evidence");
    let se = c.log_standard_error().expect("checked by not_poolable");
    Estimate {
        y: c.estimate.ln(),
        v: se * se,
        df: (c.n - 1) as f64,
    }
}

fn class_row(class: WorkloadClass, command: Option<String>, hosts: &[Host]) -> ClassRow {
    let kind = ratio_kind(class);
    let answers: Vec<Answer> = hosts.iter().map(|h| host_answer(h, class)).collect();
    let mut rows: Vec<HostAnswer> = hosts
        .iter()
        .zip(&answers)
        .map(|(h, a)| {
            let why = not_poolable(class, a);
            HostAnswer {
                host: h.row.host.clone(),
                answer: a.answer,
                comparison: a.evidence.as_ref().map(|e| e.comparison),
                reason: a.reason.clone(),
                pooled: why.is_none(),
                withheld: withheld(class, a).is_some(),
                not_pooled: why,
                outlier: None,
            }
        })
        .collect();
    let eligible: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].pooled).collect();
    let ests: Vec<Estimate> = eligible.iter().map(|&i| estimate(&rows[i])).collect();
    // Outliers: each host against the pool of the others.
    let residuals = pool::deleted_residuals(&ests);
    let bound = pool::outlier_bound(ests.len());
    let mut excluded = 0;
    let mut unexplained = 0;
    for (j, r) in residuals.iter().enumerate() {
        if r.abs() <= bound {
            continue;
        }
        let i = eligible[j];
        // A caveat explains a host apart only when it is a measured difference (a missing
        // reading is none) and the other pooled hosts do not all share its kind (every
        // host synthetic, or every host a debug build, explains nothing).
        let explained_by: Vec<Caveat> = hosts[i]
            .row
            .caveats
            .iter()
            .filter(|c| c.kind.measured())
            .filter(|c| {
                !eligible
                    .iter()
                    .filter(|&&o| o != i)
                    .all(|&o| hosts[o].row.caveats.iter().any(|x| x.kind == c.kind))
            })
            .cloned()
            .collect();
        let out = !explained_by.is_empty();
        if out {
            excluded += 1;
            rows[i].pooled = false;
            rows[i].not_pooled = Some(format!(
                "an outlier (deleted residual {:.1}, beyond ±{:.1}) explained by its own results",
                r, bound
            ));
        } else {
            unexplained += 1;
        }
        rows[i].outlier = Some(Outlier {
            residual: *r,
            bound,
            explained_by,
            excluded: out,
        });
    }
    // The band the hosts were judged against (the most common, should they differ).
    let bands: Vec<Thresholds> = eligible
        .iter()
        .filter_map(|&i| rows[i].comparison.map(|c| c.thresholds))
        .collect();
    let thresholds = bands
        .iter()
        .max_by_key(|t| bands.iter().filter(|u| *u == *t).count())
        .copied();
    let mixed_bands = bands.iter().any(|t| Some(*t) != thresholds);
    let pooled = pool_rows(&rows, thresholds);
    let mut tally: Vec<AnswerCount> = crate::report::metrics::ANSWERS
        .iter()
        .map(|&a| AnswerCount {
            answer: a,
            hosts: rows.iter().filter(|r| r.answer == a).count(),
        })
        .filter(|c| c.hosts > 0)
        .collect();
    tally.sort_by_key(|c| std::cmp::Reverse(c.hosts));
    let band = thresholds.unwrap_or(Thresholds::YIELD);
    let d = decide(
        &rows,
        hosts,
        pooled.as_ref(),
        band,
        class,
        excluded,
        unexplained,
    );
    let (answer, mut reason) = (d.answer, d.reason);
    if excluded > 0 {
        // The same hosts with the explained outliers kept in: did leaving them out decide?
        let mut all = rows.clone();
        for r in all.iter_mut() {
            if let Some(o) = r.outlier.as_mut().filter(|o| o.excluded) {
                o.excluded = false;
                r.pooled = true;
            }
        }
        let with = decide(
            &all,
            hosts,
            pool_rows(&all, thresholds).as_ref(),
            band,
            class,
            0,
            excluded + unexplained,
        );
        let names: Vec<&str> = rows
            .iter()
            .filter(|r| r.outlier.as_ref().is_some_and(|o| o.excluded))
            .map(|r| r.host.as_str())
            .collect();
        if with.answer != answer {
            reason.push_str(&format!(
                " Leaving out {} changed the type's answer: with {} in the pool it would be {}.",
                names.join(", "),
                if names.len() == 1 { "it" } else { "them" },
                with.answer.label()
            ));
        } else {
            reason.push_str(&format!(
                " Leaving out {} did not change the type's answer.",
                names.join(", ")
            ));
        }
    }
    if mixed_bands && let Some(t) = thresholds {
        reason.push_str(&format!(
            " The hosts judged against different bands; the pooled interval is judged against the most common, {}.",
            band_text(t)
        ));
    }
    let slurm = matches!(answer, HtAnswer::TurnHtOff | HtAnswer::SmallLoss).then(|| {
        let who = match &command {
            Some(c) => format!("jobs running `{c}`"),
            None => format!("jobs of the class \"{}\"", class.label()),
        };
        format!(
            "{who}{}: `sbatch --hint=nomultithread` (or `--threads-per-core=1`) gives each task one thread per core{}",
            if answer == HtAnswer::SmallLoss {
                " (a small loss: the pooled interval lies between the loss line and the noise band)"
            } else {
                ""
            },
            pooled
                .as_ref()
                .map_or(String::new(), |p| format!(
                    "; pooled {} {}× ({} % CI {}–{})",
                    kind.label(),
                    ratio_text(p.estimate),
                    crate::render::level_text(p.confidence),
                    ratio_text(p.low),
                    ratio_text(p.high)
                ))
        )
    });
    ClassRow {
        class,
        command,
        ratio: kind,
        answer,
        reason,
        thresholds: pooled.as_ref().and(thresholds),
        pooled,
        tally,
        groups: d.groups,
        split_follows: d.split_follows,
        hosts: rows,
        slurm,
    }
}

/// `±5 % band, loss below 0.95×`.
fn band_text(t: Thresholds) -> String {
    format!(
        "{} band, loss below {}×",
        crate::render::band(t.noise),
        ratio_text(t.effective_loss_below())
    )
}

/// `118 keep HT on, 2 inconclusive`.
pub fn tally_text(rows: &[HostAnswer]) -> String {
    let mut counts: Vec<(HtAnswer, usize)> = crate::report::metrics::ANSWERS
        .iter()
        .map(|&a| (a, rows.iter().filter(|r| r.answer == a).count()))
        .filter(|(_, n)| *n > 0)
        .collect();
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts
        .iter()
        .map(|(a, n)| format!("{n} {}", a.label()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The withheld hosts' reasons, most common first: `depends on the workload (3 hosts:
/// …); inconclusive (1 host: …)`.
fn withheld_text(rows: &[HostAnswer]) -> Option<String> {
    let mut why: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.withheld) {
        *why.entry((r.answer.label(), r.reason.as_str()))
            .or_default() += 1;
    }
    if why.is_empty() {
        return None;
    }
    let mut why: Vec<((&str, &str), usize)> = why.into_iter().collect();
    why.sort_by_key(|w| std::cmp::Reverse(w.1));
    let listed: Vec<String> = why
        .iter()
        .take(3)
        .map(|((a, w), k)| format!("{a} ({}: {w})", crate::render::count(*k, "host")))
        .collect();
    let n = rows.iter().filter(|r| r.withheld).count();
    Some(format!(
        "{} withheld a firm answer that {} evidence alone would give, and count by {} reason, not {} ratio: {}{}.",
        if n == 1 {
            "1 host's own study".to_string()
        } else {
            format!("{n} hosts' own studies")
        },
        if n == 1 { "its" } else { "their" },
        if n == 1 { "its" } else { "their" },
        if n == 1 { "its" } else { "their" },
        listed.join("; "),
        if why.len() > 3 {
            format!("; and {} other reasons", why.len() - 3)
        } else {
            String::new()
        }
    ))
}

/// The type's answer for one row, with why, and the groups when the hosts disagree.
struct Decision {
    answer: HtAnswer,
    reason: String,
    groups: Vec<AnswerGroup>,
    split_follows: Option<String>,
}

impl Decision {
    fn plain(answer: HtAnswer, reason: String) -> Self {
        Decision {
            answer,
            reason,
            groups: Vec::new(),
            split_follows: None,
        }
    }
}

/// The hosts that count for agreement — those in the pool: not explained outliers, not
/// hosts whose evidence cannot be pooled (an older build's intervals, too few runs), not
/// hosts that withheld — grouped by their own firm answer, largest group first.
fn firm_groups(rows: &[HostAnswer]) -> Vec<(HtAnswer, Vec<usize>)> {
    let mut groups: Vec<(HtAnswer, Vec<usize>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if !r.pooled || answer_direction(r.answer).is_none() {
            continue;
        }
        match groups.iter_mut().find(|(a, _)| *a == r.answer) {
            Some((_, v)) => v.push(i),
            None => groups.push((r.answer, vec![i])),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.1.len()));
    groups
}

/// When every group's hosts share one recorded value and the groups' values differ: the
/// split follows it. Checked: microcode, kernel release, smtlab build, SMT partly off.
fn split_follows(hosts: &[Host], groups: &[(HtAnswer, Vec<usize>)]) -> Option<String> {
    type Attr = (&'static str, fn(&Host) -> Option<String>);
    let attrs: [Attr; 4] = [
        ("microcode", |h| h.row.microcode.clone()),
        ("kernel", |h| Some(kernel_release(&h.row.kernel))),
        ("smtlab build", |h| Some(build_label(&h.row))),
        ("SMT partly off", |h| {
            Some(
                if h.row
                    .caveats
                    .iter()
                    .any(|c| c.kind == CaveatKind::SmtPartlyOff)
                {
                    "some cores without a sibling online"
                } else {
                    "every core with its sibling online"
                }
                .to_string(),
            )
        }),
    ];
    for (name, get) in attrs {
        let mut per_group: Vec<(HtAnswer, String)> = Vec::new();
        let mut ok = true;
        for (a, members) in groups {
            let vals: Vec<Option<String>> = members.iter().map(|&i| get(&hosts[i])).collect();
            match &vals[0] {
                Some(v) if vals.iter().all(|x| x.as_ref() == Some(v)) => {
                    per_group.push((*a, v.clone()))
                }
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        let mut distinct: Vec<&String> = per_group.iter().map(|(_, v)| v).collect();
        distinct.sort();
        distinct.dedup();
        if ok && distinct.len() == per_group.len() {
            return Some(format!(
                "The split follows the hosts' {name}: {}.",
                per_group
                    .iter()
                    .map(|(a, v)| format!("{} on {v}", a.label()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    None
}

/// `0.1.0 (a1b2c3d)`, or the version alone when the file names no revision.
fn build_label(h: &HostRow) -> String {
    match &h.git_revision {
        Some(r) => format!("{} ({r})", h.smtlab_version),
        None => h.smtlab_version.clone(),
    }
}

/// The type's answer for one row, and why. Firm only when the pooled interval is decided,
/// enough hosts pooled, no host's own firm answer points another way, no host found the
/// class's workloads disagree, and one more host's true ratio is expected on the same side.
fn decide(
    rows: &[HostAnswer],
    hosts: &[Host],
    pooled: Option<&PooledRatio>,
    band: Thresholds,
    class: WorkloadClass,
    excluded: usize,
    unexplained: usize,
) -> Decision {
    let n = rows.len();
    let measured = rows.iter().any(|r| r.answer != HtAnswer::NotMeasured);
    // The "your command" row of studies run without a command: nothing was asked, so
    // nothing could fail to be measured; say that, not each host's skip.
    if !measured
        && class == WorkloadClass::Command
        && rows
            .iter()
            .all(|r| r.reason.contains("no command was given"))
    {
        return Decision::plain(
            HtAnswer::NotMeasured,
            "No host's study was given a command of its own (`smtlab study [OPTIONS] -- CMD` \
             compares one)."
                .into(),
        );
    }
    if !measured {
        // The hosts' own reasons, most common first.
        let mut why: BTreeMap<&str, usize> = BTreeMap::new();
        for r in rows {
            *why.entry(r.reason.as_str()).or_default() += 1;
        }
        let mut why: Vec<(&str, usize)> = why.into_iter().collect();
        why.sort_by_key(|w| std::cmp::Reverse(w.1));
        let listed: Vec<String> = why
            .iter()
            .take(3)
            .map(|(w, k)| format!("{w} ({})", crate::render::count(*k, "host")))
            .collect();
        return Decision::plain(
            HtAnswer::NotMeasured,
            format!(
                "No host of this type could measure it: {}{}.",
                listed.join("; "),
                if why.len() > 3 {
                    format!("; and {} other reasons", why.len() - 3)
                } else {
                    String::new()
                }
            ),
        );
    }
    let withheld = withheld_text(rows);
    let with_withheld = |mut s: String| {
        if let Some(w) = &withheld {
            s.push(' ');
            s.push_str(w);
        }
        s
    };
    // Hosts whose own firm answers point different ways: no one answer holds.
    let groups = firm_groups(rows);
    let mut dirs: Vec<u8> = groups
        .iter()
        .filter_map(|(a, _)| answer_direction(*a))
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    if dirs.len() > 1 {
        let out: Vec<AnswerGroup> = groups
            .iter()
            .map(|(a, members)| {
                let xs: Vec<f64> = members
                    .iter()
                    .filter_map(|&i| rows[i].comparison.map(|c| c.estimate))
                    .collect();
                AnswerGroup {
                    answer: *a,
                    hosts: members.iter().map(|&i| rows[i].host.clone()).collect(),
                    low: xs.iter().copied().fold(f64::INFINITY, f64::min),
                    high: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                }
            })
            .collect();
        let parts: Vec<String> = out
            .iter()
            .map(|g| {
                let names = if g.hosts.len() <= crate::conclusion::LIST_ALL {
                    g.hosts.join(", ")
                } else {
                    format!(
                        "{}, … ({} more)",
                        g.hosts[..crate::conclusion::LIST_ALL].join(", "),
                        g.hosts.len() - crate::conclusion::LIST_ALL
                    )
                };
                let range = if g.low.is_finite() {
                    if (g.high - g.low).abs() < 5e-3 {
                        format!(" at {}×", ratio_text(g.low))
                    } else {
                        format!(" at {}–{}×", ratio_text(g.low), ratio_text(g.high))
                    }
                } else {
                    String::new()
                };
                format!(
                    "{} {}{range} ({names})",
                    crate::render::count(g.hosts.len(), "host"),
                    g.answer.label()
                )
            })
            .collect();
        let follows = split_follows(hosts, &groups);
        let mut s = format!(
            "The hosts of this type answer firmly and differently on their own: {}; no one answer holds for the type, so the hosts' own answers stand, each in its row.",
            parts.join("; ")
        );
        match &follows {
            Some(f) => s.push_str(&format!(" {f}")),
            None => s.push_str(
                " Nothing recorded about them (microcode, kernel, smtlab build, SMT state) separates the groups.",
            ),
        }
        if let Some(p) = pooled.filter(|p| p.hosts > 1) {
            s.push_str(&format!(
                " Their pooled ratio, {}× ({} % CI {}–{}, I² {}), is an average that describes neither group.",
                ratio_text(p.estimate),
                crate::render::level_text(p.confidence),
                ratio_text(p.low),
                ratio_text(p.high),
                p.i2.map_or("–".to_string(), |x| format!("{:.0} %", x * 100.0))
            ));
        }
        return Decision {
            answer: HtAnswer::HostsDisagree,
            reason: with_withheld(s),
            groups: out,
            split_follows: follows,
        };
    }
    let depends = rows
        .iter()
        .filter(|r| r.answer == HtAnswer::DependsOnWorkload)
        .count();
    let k = pooled.map_or(0, |p| p.hosts);
    if k < MIN_HOSTS_TO_POOL {
        let measured_n = rows
            .iter()
            .filter(|r| r.answer != HtAnswer::NotMeasured)
            .count();
        if depends > 0 && depends == measured_n {
            return Decision::plain(
                HtAnswer::DependsOnWorkload,
                with_withheld(format!(
                    "Every host that measured it ({}) found the class's workloads disagree on its own (one gains, another loses or stays flat), so no single answer holds for the type.",
                    crate::render::count(depends, "host")
                )),
            );
        }
        let pooled_note = match pooled {
            Some(p) if p.hosts == 1 => {
                let r = rows.iter().find(|r| r.pooled).expect("one pooled row");
                format!(
                    " The one host that could be, {}, measured {}; one host is not a type.",
                    r.host,
                    r.comparison.map_or("–".into(), |c| c.to_string())
                )
            }
            Some(p) => format!(
                " Pooled, they give {}× ({} % CI {}–{}).",
                ratio_text(p.estimate),
                crate::render::level_text(p.confidence),
                ratio_text(p.low),
                ratio_text(p.high)
            ),
            None => String::new(),
        };
        return Decision::plain(
            HtAnswer::Inconclusive,
            with_withheld(format!(
                "{k} of {} could be pooled; a type's answer needs at least {MIN_HOSTS_TO_POOL} (each other host's reason is in its row).{pooled_note} The hosts' own answers: {}.",
                crate::render::count(n, "host"),
                tally_text(rows)
            )),
        );
    }
    let p = pooled.expect("k ≥ MIN_HOSTS_TO_POOL");
    let pooled_answer = answer_for(class, p.effect);
    let mut s = format!(
        "Pooled over {} of {}: {}× ({} % CI {}–{}): {}",
        p.hosts,
        crate::render::count(n, "host"),
        ratio_text(p.estimate),
        crate::render::level_text(p.confidence),
        ratio_text(p.low),
        ratio_text(p.high),
        p.effect
    );
    if p.effect == crate::stats::Effect::Inconclusive {
        s.push_str(" (the interval reaches across a threshold)");
    }
    s.push_str(&format!(", against the {}.", band_text(band)));
    if let (Some(tau), Some(i2)) = (p.tau, p.i2) {
        let spread = if i2 < 0.25 {
            "the hosts' ratios agree within their own noise"
        } else if i2 < 0.75 {
            "the hosts' ratios differ moderately beyond their own noise"
        } else {
            "the hosts' ratios differ well beyond their own noise"
        };
        s.push_str(&format!(
            " Between hosts: {spread} (I² {:.0} %, τ {:.3} on the log scale).",
            i2 * 100.0,
            tau
        ));
    } else if let Some(tau) = p.tau {
        s.push_str(&format!(" Between hosts: τ {tau:.3} on the log scale."));
    }
    if let (Some(a), Some(b)) = (p.predict_measured_low, p.predict_measured_high) {
        s.push_str(&format!(
            " One more host of this type is expected to measure between {}× and {}× (its own runs' noise included",
            ratio_text(a),
            ratio_text(b)
        ));
        if let (Some(c), Some(d)) = (p.predict_low, p.predict_high) {
            s.push_str(&format!(
                "; its true ratio between {}× and {}×",
                ratio_text(c),
                ratio_text(d)
            ));
        }
        s.push_str(").");
    }
    let pooled_rows: Vec<&HostAnswer> = rows.iter().filter(|r| r.pooled).collect();
    let same: Vec<HtAnswer> = pooled_rows.iter().map(|r| r.answer).collect();
    if same.iter().all(|a| *a == same[0]) {
        s.push_str(&format!(
            " All {} pooled hosts answer {} on their own.",
            p.hosts,
            same[0].label()
        ));
    } else {
        s.push_str(&format!(" The hosts' own answers: {}.", tally_text(rows)));
    }
    if excluded > 0 {
        s.push_str(&format!(
            " {} left out of the pool as {}, each explained by a measured difference in its own results (see {}).",
            crate::render::count(excluded, "host"),
            if excluded == 1 {
                "an outlier"
            } else {
                "outliers"
            },
            if excluded == 1 {
                "its row"
            } else {
                "their rows"
            }
        ));
    }
    if unexplained > 0 {
        s.push_str(&format!(
            " {} far from the others with no measured difference in {} own results to explain it; kept in the pool.",
            if unexplained == 1 {
                "1 host stands".to_string()
            } else {
                format!("{unexplained} hosts stand")
            },
            if unexplained == 1 { "its" } else { "their" }
        ));
    }
    let s = with_withheld(s);
    if pooled_answer == HtAnswer::Inconclusive {
        return Decision::plain(HtAnswer::Inconclusive, s);
    }
    // The hosts' own firm answers (one direction at most by now) must point the pool's way.
    if let Some((a, members)) = groups.first()
        && answer_direction(*a) != answer_direction(pooled_answer)
    {
        return Decision::plain(
            HtAnswer::Inconclusive,
            format!(
                "{s} The pooled interval reads {} but {} of the hosts answer {} on their own, so the type's answer is held back.",
                pooled_answer.label(),
                members.len(),
                a.label()
            ),
        );
    }
    if depends > 0 {
        return Decision::plain(
            HtAnswer::DependsOnWorkload,
            format!(
                "{s} {} of {} found the class's workloads disagree on its own, so the pooled {} is not one answer for the type.",
                depends,
                crate::render::count(n, "host"),
                pooled_answer.label()
            ),
        );
    }
    // One more host's true ratio must be expected on the same side.
    if let (Some(a), Some(b)) = (p.predict_low, p.predict_high) {
        let next = classify(a, b, band);
        if crate::conclusion::direction(next) != crate::conclusion::direction(p.effect) {
            return Decision::plain(
                HtAnswer::Inconclusive,
                format!(
                    "{s} One more host's true ratio may lie between {}× and {}× ({}), on another side of a threshold than the pooled mean, so the type's answer is held back: its hosts may differ.",
                    ratio_text(a),
                    ratio_text(b),
                    next
                ),
            );
        }
    }
    Decision::plain(pooled_answer, s)
}

fn headline(id: &str, key: &TypeKey, n: usize, classes: &[ClassRow]) -> String {
    let answered: Vec<String> = classes
        .iter()
        .filter(|c| c.answer != HtAnswer::NotMeasured)
        .map(|c| {
            let what = match &c.command {
                Some(cmd) => format!("`{cmd}`"),
                None => c.class.label().to_string(),
            };
            let firm = answer_direction(c.answer).is_some();
            match &c.pooled {
                _ if c.answer == HtAnswer::HostsDisagree => format!(
                    "{} for {what} ({})",
                    c.answer.label(),
                    c.groups
                        .iter()
                        .map(|g| format!("{} {}", g.hosts.len(), g.answer.label()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(p) if firm => format!(
                    "{} for {what} ({} {}×, {} % CI {}–{}, {})",
                    c.answer.label(),
                    c.ratio.label(),
                    ratio_text(p.estimate),
                    crate::render::level_text(p.confidence),
                    ratio_text(p.low),
                    ratio_text(p.high),
                    crate::render::count(p.hosts, "host")
                ),
                _ => format!(
                    "{} for {what} ({} pooled; hosts' own answers: {})",
                    c.answer.label(),
                    c.pooled.as_ref().map_or(0, |p| p.hosts),
                    tally_text(&c.hosts)
                ),
            }
        })
        .collect();
    let who = format!(
        "{id} ({}; {})",
        crate::render::count(n, "host"),
        key.label()
    );
    if answered.is_empty() {
        let smt = key.threads_per_core > 1;
        format!(
            "{who}: no workload class could be answered{}.",
            if smt {
                " (each row says why)"
            } else {
                " — no SMT siblings on these hosts, so HT cannot be tested on them"
            }
        )
    } else {
        format!("{who}: {}.", answered.join("; "))
    }
}

#[cfg(test)]
mod tests {
    /// A row held back by its runs' gate is withheld by that stored field, whatever its
    /// reason's words: an undecided interval (inconclusive either way) from disturbed runs.
    #[test]
    fn a_row_held_back_by_its_gate_is_withheld_by_the_field_not_its_words() {
        use crate::stats::{Comparison, Thresholds};
        let c = Comparison::of_paired_ratios(&[1.2, 0.9, 1.3, 0.95, 1.1], Thresholds::YIELD, 0.95)
            .unwrap();
        let mut a = Answer {
            class: WorkloadClass::Compute,
            answer: HtAnswer::Inconclusive,
            evidence: Some(crate::conclusion::Evidence {
                what: "yield".into(),
                runs: "yield, 5 rounds".into(),
                comparison: c,
            }),
            reason: "the interval reaches across the band".into(),
            section: None,
            gate: Some(crate::conclusion::Gate::new(&["steal"], Vec::new())),
        };
        assert_eq!(withheld(WorkloadClass::Compute, &a), None);
        a.gate = Some(crate::conclusion::Gate::new(
            &["steal"],
            vec!["steal 12 %".into()],
        ));
        assert!(withheld(WorkloadClass::Compute, &a).is_some());
    }

    use super::*;
    use crate::fleet::fixture;
    use crate::report::{Evidence, Status};

    fn key() -> TypeKey {
        TypeKey {
            cpu_model: "X".into(),
            packages: 1,
            cores_per_package: 4,
            threads_per_core: 2,
            smt: "on".into(),
            kernel_major: "6".into(),
            platform: "bare metal".into(),
        }
    }

    /// A host answering for compute at ratio `x` over `n` runs (None: not measured).
    fn host(name: &str, x: Option<f64>, n: usize, caveats: &[CaveatKind]) -> Host {
        let answers = x
            .map(|x| {
                let mut c = fixture::comparison(x, Thresholds::YIELD);
                c.n = n;
                c.indicative = n < crate::stats::MIN_RUNS_FOR_CI;
                vec![Answer {
                    gate: None,
                    class: WorkloadClass::Compute,
                    answer: answer_for(WorkloadClass::Compute, c.effect),
                    evidence: Some(Evidence {
                        what: "yield".into(),
                        runs: "yield".into(),
                        comparison: c,
                    }),
                    reason: "made up".into(),
                    section: Some(crate::experiments::smt_yield::PHASE),
                }]
            })
            .unwrap_or_default();
        Host {
            row: HostRow {
                host: name.into(),
                host_from: "uname -n".into(),
                file: format!("{name}/results.json"),
                kernel: "Linux 6.1.0-18-amd64 #1 SMP x86_64".into(),
                microcode: Some("0x10".into()),
                smtlab_version: "0.1.0".into(),
                git_revision: None,
                started_unix_s: 1_700_000_000,
                status: Status::Complete,
                synthetic: false,
                slurm: None,
                caveats: caveats
                    .iter()
                    .map(|&kind| Caveat {
                        kind,
                        text: format!("{} (made up)", kind.label()),
                    })
                    .collect(),
            },
            key: key(),
            answers,
            command: None,
        }
    }

    fn prov() -> FleetProvenance {
        FleetProvenance {
            smtlab_version: "0.1.0".into(),
            git_revision: "0".into(),
            command: "smtlab merge".into(),
            merged_unix_s: 0,
        }
    }

    fn compute(f: &Fleet) -> &ClassRow {
        f.types[0]
            .classes
            .iter()
            .find(|c| c.class == WorkloadClass::Compute)
            .unwrap()
    }

    fn agreeing(n: usize, caveats: &[CaveatKind]) -> Vec<Host> {
        (0..n)
            .map(|i| {
                host(
                    &format!("h{i:02}"),
                    Some(1.25 * fixture::jitter(i)),
                    10,
                    caveats,
                )
            })
            .collect()
    }

    #[test]
    fn an_outlier_with_nothing_in_its_results_to_explain_it_is_named_and_kept() {
        let mut hosts = agreeing(12, &[]);
        hosts.push(host("odd", Some(0.8), 10, &[]));
        let f = build(hosts, vec![], 13, prov());
        let c = compute(&f);
        let odd = c.hosts.iter().find(|h| h.host == "odd").unwrap();
        let o = odd.outlier.as_ref().unwrap();
        assert!(o.residual < -o.bound && o.explained_by.is_empty() && !o.excluded);
        assert!(odd.pooled);
        assert_eq!(c.pooled.as_ref().unwrap().hosts, 13);
        // Kept in the pool, its own firm answer against the others' is a split.
        assert_eq!(c.answer, HtAnswer::HostsDisagree, "{}", c.reason);
        assert!(
            c.reason.contains("1 host turn HT off at 0.80× (odd)"),
            "{}",
            c.reason
        );
        assert_eq!(c.hosts.iter().filter(|h| h.outlier.is_some()).count(), 1);
    }

    #[test]
    fn a_caveat_every_host_shares_explains_no_outlier() {
        let mut hosts = agreeing(12, &[CaveatKind::Synthetic]);
        hosts.push(host("odd", Some(0.8), 10, &[CaveatKind::Synthetic]));
        let f = build(hosts, vec![], 13, prov());
        let odd = compute(&f).hosts.iter().find(|h| h.host == "odd").unwrap();
        assert!(odd.outlier.as_ref().unwrap().explained_by.is_empty());
        assert!(odd.pooled);
        // Steal on that host alone does explain it, and it leaves the pool.
        let mut hosts = agreeing(12, &[CaveatKind::Synthetic]);
        hosts.push(host(
            "odd",
            Some(0.8),
            10,
            &[CaveatKind::Synthetic, CaveatKind::Steal],
        ));
        let f = build(hosts, vec![], 13, prov());
        let c = compute(&f);
        let odd = c.hosts.iter().find(|h| h.host == "odd").unwrap();
        let kinds: Vec<CaveatKind> = odd
            .outlier
            .as_ref()
            .unwrap()
            .explained_by
            .iter()
            .map(|c| c.kind)
            .collect();
        assert_eq!(kinds, [CaveatKind::Steal]);
        assert!(!odd.pooled && c.pooled.as_ref().unwrap().hosts == 12);
        assert_eq!(c.answer, HtAnswer::KeepHtOn);
    }

    #[test]
    fn another_kernel_release_or_microcode_in_a_type_is_a_caveat() {
        let mut hosts = agreeing(4, &[]);
        hosts[1].row.kernel = "Linux 6.1.0-17-amd64 #1 SMP x86_64".into();
        hosts[2].row.microcode = Some("0x0f".into());
        let f = build(hosts, vec![], 4, prov());
        let kinds = |h: &HostRow| h.caveats.iter().map(|c| c.kind).collect::<Vec<_>>();
        let rows = &f.types[0].hosts;
        assert_eq!(kinds(&rows[0]), []);
        assert_eq!(kinds(&rows[1]), [CaveatKind::Kernel]);
        assert!(
            rows[1].caveats[0].text.contains("6.1.0-17-amd64"),
            "{:?}",
            rows[1]
        );
        assert!(
            rows[1].caveats[0]
                .text
                .contains("3 of the type's 4 hosts run 6.1.0-18-amd64")
        );
        assert_eq!(kinds(&rows[2]), [CaveatKind::Microcode]);
    }

    #[test]
    fn hosts_without_an_interval_are_listed_but_not_pooled() {
        let mut hosts = agreeing(3, &[]);
        hosts.push(host("short", Some(1.25), 2, &[]));
        hosts.push(host("none", None, 0, &[]));
        let mut old = host("old", Some(1.25), 10, &[]);
        for a in &mut old.answers {
            if let Some(e) = &mut a.evidence {
                e.comparison.method = IntervalMethod::PercentileBootstrap;
            }
        }
        hosts.push(old);
        let f = build(hosts, vec![], 6, prov());
        let c = compute(&f);
        assert_eq!(c.pooled.as_ref().unwrap().hosts, 3);
        let why = |n: &str| {
            c.hosts
                .iter()
                .find(|h| h.host == n)
                .unwrap()
                .not_pooled
                .clone()
                .unwrap()
        };
        assert!(why("short").contains("2 runs"), "{}", why("short"));
        assert!(
            why("old").contains("percentile bootstrap"),
            "{}",
            why("old")
        );
        assert!(why("none").starts_with("no evidence"), "{}", why("none"));
        let none = c.hosts.iter().find(|h| h.host == "none").unwrap();
        assert!(none.reason.contains("older smtlab"), "{}", none.reason);
    }

    #[test]
    fn two_hosts_pool_into_a_wide_interval_and_one_host_is_not_a_types_answer() {
        let f = build(agreeing(2, &[]), vec![], 2, prov());
        let c = compute(&f);
        let p = c.pooled.as_ref().unwrap();
        // t(1) = 12.7: two hosts say little about a third.
        assert!(p.high / p.low > 1.5, "{p:?}");
        assert_eq!(p.predict_low, None);
        assert_eq!(c.answer, HtAnswer::Inconclusive, "{}", c.reason);
        assert!(c.reason.contains("at least 3"), "{}", c.reason);
        // One host is not a type: its own answer is shown, not made the type's.
        let f = build(agreeing(1, &[]), vec![], 1, prov());
        let c = compute(&f);
        assert_eq!(c.pooled.as_ref().unwrap().method, "one host");
        assert_eq!(c.answer, HtAnswer::Inconclusive, "{}", c.reason);
        assert!(c.reason.contains("one host is not a type"), "{}", c.reason);
    }

    #[test]
    fn hosts_that_ran_different_commands_get_a_row_each() {
        let mut hosts = agreeing(3, &[]);
        hosts[0].command = Some("pgbench -T 10".into());
        hosts[1].command = Some("pgbench -T 10".into());
        hosts[2].command = Some("make -j".into());
        let f = build(hosts, vec![], 3, prov());
        let rows: Vec<(Option<&str>, usize)> = f.types[0]
            .classes
            .iter()
            .filter(|c| c.class == WorkloadClass::Command)
            .map(|c| (c.command.as_deref(), c.hosts.len()))
            .collect();
        assert_eq!(rows, [(Some("make -j"), 1), (Some("pgbench -T 10"), 2)]);
    }

    #[test]
    fn a_type_that_loses_gets_the_slurm_form_of_the_advice() {
        let hosts: Vec<Host> = (0..6)
            .map(|i| host(&format!("n{i}"), Some(0.8 * fixture::jitter(i)), 10, &[]))
            .collect();
        let f = build(hosts, vec![], 6, prov());
        let c = compute(&f);
        assert_eq!(c.answer, HtAnswer::TurnHtOff);
        assert!(c.slurm.as_deref().unwrap().contains("--hint=nomultithread"));
        assert_eq!(f.types[0].slurm_advice.len(), 1);
        assert!(
            f.types[0].headline.contains("turn HT off for compute"),
            "{}",
            f.types[0].headline
        );
    }
}

/// Fleets crafted so that each host's answer rows are as this build's study writes them,
/// with the numbers that made `merge` firmer than its hosts.
#[cfg(test)]
mod firmness_tests {
    use super::*;
    use crate::fleet::fixture;
    use crate::report::{Evidence, Status};
    use crate::stats::Comparison;

    fn key() -> TypeKey {
        TypeKey {
            cpu_model: "X".into(),
            packages: 1,
            cores_per_package: 4,
            threads_per_core: 2,
            smt: "on".into(),
            kernel_major: "6".into(),
            platform: "bare metal".into(),
        }
    }

    fn prov() -> FleetProvenance {
        FleetProvenance {
            smtlab_version: "0.1.0".into(),
            git_revision: "0".into(),
            command: "smtlab merge".into(),
            merged_unix_s: 0,
        }
    }

    /// A Student-t comparison over 10 runs with this estimate and interval.
    fn cmp(x: f64, low: f64, high: f64, t: Thresholds) -> Comparison {
        Comparison {
            estimate: x,
            low,
            high,
            confidence: 0.95,
            n: 10,
            indicative: false,
            effect: classify(low, high, t),
            thresholds: t,
            method: IntervalMethod::StudentTLog,
        }
    }

    /// A host whose one row for `class` is `answer` on the evidence `c`.
    fn host(name: &str, class: WorkloadClass, answer: HtAnswer, c: Comparison, why: &str) -> Host {
        Host {
            row: HostRow {
                host: name.into(),
                host_from: "uname -n".into(),
                file: format!("{name}/results.json"),
                kernel: "Linux 6.1.0-18-amd64 #1 SMP x86_64".into(),
                microcode: Some("0xf0".into()),
                smtlab_version: "0.1.0".into(),
                git_revision: Some("a1b2c3d".into()),
                started_unix_s: 1_700_000_000,
                status: Status::Complete,
                synthetic: false,
                slurm: None,
                caveats: Vec::new(),
            },
            key: key(),
            answers: vec![Answer {
                gate: None,
                class,
                answer,
                evidence: Some(Evidence {
                    what: "made up".into(),
                    runs: "10 paired rounds".into(),
                    comparison: c,
                }),
                reason: why.into(),
                section: None,
            }],
            command: None,
        }
    }

    /// A host answering as its evidence alone says.
    fn plain(name: &str, class: WorkloadClass, x: f64) -> Host {
        let c = fixture::comparison(x, Thresholds::YIELD);
        host(name, class, answer_for(class, c.effect), c, "made up")
    }

    fn row(f: &Fleet, class: WorkloadClass) -> &ClassRow {
        f.types[0]
            .classes
            .iter()
            .find(|c| c.class == class)
            .unwrap()
    }

    fn gauge_line<'a>(prom: &'a str, class: &str, answer: &str) -> &'a str {
        prom.lines()
            .find(|l| {
                l.starts_with("smtlab_fleet_answer{")
                    && l.contains(&format!("class=\"{class}\""))
                    && l.contains(&format!("answer=\"{answer}\""))
            })
            .unwrap_or_else(|| panic!("no gauge for {class} {answer}:\n{prom}"))
    }

    #[test]
    fn hosts_whose_lock_row_depends_on_the_workload_never_make_no_difference() {
        let c = cmp(0.99, 0.98, 1.00, Thresholds::YIELD);
        assert_eq!(c.effect, crate::stats::Effect::NoEffect);
        let hosts: Vec<Host> = (0..10)
            .map(|i| {
                host(
                    &format!("h{i}"),
                    WorkloadClass::Locks,
                    HtAnswer::DependsOnWorkload,
                    c,
                    "per-round median of 2 lock workloads: 0.99× (95 % CI 0.98–1.00); the lock workloads disagree (gain for `ttas`; loss for `mutex`), so no single answer holds for the class",
                )
            })
            .collect();
        let f = build(hosts, vec![], 10, prov());
        let r = row(&f, WorkloadClass::Locks);
        assert_eq!(r.answer, HtAnswer::DependsOnWorkload, "{}", r.reason);
        assert!(r.pooled.is_none(), "{:?}", r.pooled);
        assert!(r.hosts.iter().all(|h| h.withheld && !h.pooled));
        assert!(r.reason.contains("withheld"), "{}", r.reason);
        let prom = crate::fleet::view::prometheus(&f);
        assert!(
            gauge_line(&prom, "locks", "no-difference").ends_with(" 0"),
            "{prom}"
        );
        assert!(gauge_line(&prom, "locks", "depends-on-workload").ends_with(" 1"));
        assert!(!f.types[0].headline.contains("no difference"));
    }

    #[test]
    fn answers_held_back_by_the_hosts_are_not_made_firm_by_pooling() {
        // Compute held back as inconclusive on disturbed runs, evidence 1.25×.
        let c = fixture::comparison(1.25, Thresholds::YIELD);
        let hosts: Vec<Host> = (0..6)
            .map(|i| {
                host(
                    &format!("h{i}"),
                    WorkloadClass::Compute,
                    HtAnswer::Inconclusive,
                    c,
                    "held back: 3 of 10 rounds were disturbed (steal above 5 %)",
                )
            })
            .collect();
        let f = build(hosts, vec![], 6, prov());
        let r = row(&f, WorkloadClass::Compute);
        assert_eq!(r.answer, HtAnswer::Inconclusive, "{}", r.reason);
        assert!(r.reason.contains("disturbed"), "{}", r.reason);
        assert!(!f.types[0].headline.contains("keep HT on"));
        // A lockscan loss held back by its cross-core control.
        let c = fixture::comparison(0.6, Thresholds::YIELD);
        let hosts: Vec<Host> = (0..6)
            .map(|i| {
                host(
                    &format!("h{i}"),
                    WorkloadClass::LocksBesideScans,
                    HtAnswer::Inconclusive,
                    c,
                    "lock threads on other cores lost as much: held back by the cross-core control",
                )
            })
            .collect();
        let f = build(hosts, vec![], 6, prov());
        let r = row(&f, WorkloadClass::LocksBesideScans);
        assert_eq!(r.answer, HtAnswer::Inconclusive, "{}", r.reason);
        assert!(r.slurm.is_none() && f.types[0].slurm_advice.is_empty());
        // A fixed-duration command that wall time did not call.
        let c = fixture::comparison(1.0, Thresholds::YIELD);
        let mut hosts: Vec<Host> = (0..6)
            .map(|i| {
                host(
                    &format!("h{i}"),
                    WorkloadClass::Command,
                    HtAnswer::Inconclusive,
                    c,
                    "SMT yield for `sleep 5`: …; not called: wall time was the same while CPU time was not",
                )
            })
            .collect();
        for h in &mut hosts {
            h.command = Some("sleep 5".into());
        }
        let f = build(hosts, vec![], 6, prov());
        let r = row(&f, WorkloadClass::Command);
        assert_eq!(r.answer, HtAnswer::Inconclusive, "{}", r.reason);
        assert!(r.reason.contains("not called"), "{}", r.reason);
    }

    #[test]
    fn hosts_split_in_two_give_hosts_disagree_naming_the_groups() {
        let mut hosts: Vec<Host> = (0..20)
            .map(|i| plain(&format!("a{i:02}"), WorkloadClass::Compute, 1.15))
            .collect();
        hosts.extend((0..20).map(|i| plain(&format!("b{i:02}"), WorkloadClass::Compute, 0.87)));
        let f = build(hosts.clone(), vec![], 40, prov());
        let r = row(&f, WorkloadClass::Compute);
        assert!(
            r.pooled.as_ref().unwrap().i2.unwrap() > 0.95,
            "{:?}",
            r.pooled
        );
        assert_eq!(r.answer, HtAnswer::HostsDisagree, "{}", r.reason);
        let groups: Vec<(HtAnswer, usize)> =
            r.groups.iter().map(|g| (g.answer, g.hosts.len())).collect();
        assert!(
            groups.contains(&(HtAnswer::KeepHtOn, 20))
                && groups.contains(&(HtAnswer::TurnHtOff, 20)),
            "{groups:?}"
        );
        assert!(
            r.reason.contains("20 hosts keep HT on at 1.15×"),
            "{}",
            r.reason
        );
        assert!(r.reason.contains("Nothing recorded"), "{}", r.reason);
        assert!(r.slurm.is_none());
        let prom = crate::fleet::view::prometheus(&f);
        assert!(gauge_line(&prom, "compute", "hosts-disagree").ends_with(" 1"));
        assert!(gauge_line(&prom, "compute", "no-difference").ends_with(" 0"));
        // The same split along microcode says so.
        for h in hosts.iter_mut().skip(20) {
            h.row.microcode = Some("0xf1".into());
        }
        let f = build(hosts, vec![], 40, prov());
        let r = row(&f, WorkloadClass::Compute);
        assert_eq!(r.answer, HtAnswer::HostsDisagree);
        let follows = r.split_follows.as_deref().unwrap();
        assert!(
            follows.contains("microcode") && follows.contains("turn HT off on 0xf1"),
            "{follows}"
        );
    }

    #[test]
    fn too_few_poolable_hosts_leave_the_type_inconclusive_not_one_hosts_answer() {
        let mut hosts: Vec<Host> = (0..5)
            .map(|i| {
                let x = 1.90 + 0.02 * i as f64;
                let mut h = plain(&format!("old{i}"), WorkloadClass::Compute, x);
                h.row.git_revision = Some("0ld0ld0".into());
                for a in &mut h.answers {
                    if let Some(e) = &mut a.evidence {
                        e.comparison.method = IntervalMethod::PercentileBootstrap;
                        e.comparison.low = x * 0.97;
                        e.comparison.high = x * 1.03;
                    }
                }
                h
            })
            .collect();
        hosts.push(host(
            "new",
            WorkloadClass::Compute,
            HtAnswer::NoDifference,
            cmp(1.00, 0.98, 1.02, Thresholds::YIELD),
            "made up",
        ));
        let f = build(hosts, vec![], 6, prov());
        let r = row(&f, WorkloadClass::Compute);
        assert_eq!(r.answer, HtAnswer::Inconclusive, "{}", r.reason);
        assert!(
            r.reason.contains("1 of 6 hosts could be pooled")
                && r.reason.contains("at least 3")
                && r.reason.contains("5 keep HT on, 1 no difference"),
            "{}",
            r.reason
        );
        // The builds are told apart by git revision although both say 0.1.0.
        assert!(
            f.notes
                .iter()
                .any(|n| n.contains("2 different smtlab builds")
                    && n.contains("0.1.0 (0ld0ld0) on 5 hosts")),
            "{:?}",
            f.notes
        );
        assert!(f.types[0].headline.contains("different smtlab builds"));
    }

    #[test]
    fn an_outlier_leaves_the_pool_only_for_a_measured_difference_and_the_row_says_it_mattered() {
        let six = |odd_microcode: Option<&str>| {
            let mut hosts: Vec<Host> = [1.09, 1.10, 1.11, 1.12, 1.13]
                .iter()
                .enumerate()
                .map(|(i, &x)| plain(&format!("h{i}"), WorkloadClass::Compute, x))
                .collect();
            let mut odd = plain("odd", WorkloadClass::Compute, 0.80);
            odd.row.microcode = odd_microcode.map(str::to_string);
            hosts.push(odd);
            build(hosts, vec![], 6, prov())
        };
        // No microcode reading: not a measured difference, so the host stays in.
        let f = six(None);
        let r = row(&f, WorkloadClass::Compute);
        let odd = r.hosts.iter().find(|h| h.host == "odd").unwrap();
        let o = odd.outlier.as_ref().unwrap();
        assert!(!o.excluded && o.explained_by.is_empty(), "{o:?}");
        assert_ne!(r.answer, HtAnswer::KeepHtOn, "{}", r.reason);
        assert_eq!(r.answer, HtAnswer::HostsDisagree, "{}", r.reason);
        let kinds: Vec<CaveatKind> = f.types[0]
            .hosts
            .iter()
            .find(|h| h.host == "odd")
            .unwrap()
            .caveats
            .iter()
            .map(|c| c.kind)
            .collect();
        assert_eq!(kinds, [CaveatKind::MicrocodeUnknown]);
        // Another microcode is measured: it leaves the pool, and the row says that this
        // decided the answer.
        let f = six(Some("0xf1"));
        let r = row(&f, WorkloadClass::Compute);
        assert_eq!(r.answer, HtAnswer::KeepHtOn, "{}", r.reason);
        assert!(
            r.reason
                .contains("Leaving out odd changed the type's answer: with it in the pool it would be hosts disagree"),
            "{}",
            r.reason
        );
    }

    /// fleet.md goes through the Markdown escaper, which writes `&` as `&amp;`: the method
    /// names its sources without one.
    #[test]
    fn the_method_has_no_character_markdown_would_print_as_an_entity() {
        let f = build(Vec::new(), vec![], 0, prov());
        assert!(!f.method.contains('&'), "{}", f.method);
        assert!(f.method.contains("DerSimonian and Laird"));
    }

    #[test]
    fn hosts_that_agree_still_answer_firmly_with_the_measured_prediction() {
        let hosts: Vec<Host> = (0..12)
            .map(|i| {
                plain(
                    &format!("h{i:02}"),
                    WorkloadClass::Compute,
                    1.25 * fixture::jitter(i),
                )
            })
            .collect();
        let f = build(hosts, vec![], 12, prov());
        let r = row(&f, WorkloadClass::Compute);
        assert_eq!(r.answer, HtAnswer::KeepHtOn, "{}", r.reason);
        let p = r.pooled.as_ref().unwrap();
        let (a, b) = (
            p.predict_measured_low.unwrap(),
            p.predict_measured_high.unwrap(),
        );
        assert!(
            a < p.predict_low.unwrap() && b > p.predict_high.unwrap(),
            "{p:?}"
        );
        assert!(
            r.reason.contains("expected to measure between"),
            "{}",
            r.reason
        );
    }
}
