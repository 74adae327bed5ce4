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
use crate::report::metrics::{CLASSES, answer_for, ratio_kind};
use crate::report::{Answer, HtAnswer, WorkloadClass};
use crate::stats::{IntervalMethod, Thresholds, classify, ratio_text};
use std::collections::BTreeMap;

/// Confidence of every pooled interval.
pub const CONFIDENCE: f64 = 0.95;
/// Fewest runs behind a host's interval for it to enter a pool: the fewest from which a
/// study draws a confidence interval ([`crate::stats::MIN_RUNS_FOR_CI`]); its standard
/// error is read back from that Student-t interval on log ratios.
pub const MIN_RUNS_TO_POOL: usize = crate::stats::MIN_RUNS_FOR_CI;

/// How the hosts are pooled, as the report states it.
pub const METHOD: &str = "Per machine type and workload class, each host's log ratio is weighted by its own interval (standard error read back from a Student-t interval on log ratios) and pooled by a random-effects model: between-host variance τ² by DerSimonian & Laird (1986), the mean's interval by Hartung & Knapp (2001) with t(k − 1) and its variance factor at least 1 (Röver, Knapp & Friede 2015); heterogeneity I² (Higgins & Thompson 2002); one more host expected within the prediction interval (Higgins, Thompson & Spiegelhalter 2009); a host is an outlier when its studentized deleted residual passes the Bonferroni bound for the hosts tested (Viechtbauer & Cheung 2010), and is left out of the pool only when its own results show why.";

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
    if versions.len() > 1 {
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
            let mine = h.row.microcode.clone();
            if mine.as_deref() != Some(common.as_str()) {
                h.row.caveats.push(Caveat {
                    kind: CaveatKind::Microcode,
                    text: format!(
                        "microcode {}, where {count} of the type's {n} hosts run {common}",
                        mine.as_deref().unwrap_or("unknown")
                    ),
                });
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
    let headline = headline(&id, &key, hosts.len(), &classes);
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
            class,
            answer: HtAnswer::NotMeasured,
            evidence: None,
            reason: "its answer table has no row for this class (written by an older smtlab)"
                .into(),
            section: None,
        })
}

/// Why a host's evidence cannot enter the pool; None when it can.
fn not_poolable(a: &Answer) -> Option<String> {
    let Some(e) = &a.evidence else {
        return Some("no evidence: not measured on this host".into());
    };
    let c = &e.comparison;
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

fn class_row(class: WorkloadClass, command: Option<String>, hosts: &[Host]) -> ClassRow {
    let kind = ratio_kind(class);
    let answers: Vec<Answer> = hosts.iter().map(|h| host_answer(h, class)).collect();
    let mut rows: Vec<HostAnswer> = hosts
        .iter()
        .zip(&answers)
        .map(|(h, a)| {
            let why = not_poolable(a);
            HostAnswer {
                host: h.row.host.clone(),
                answer: a.answer,
                comparison: a.evidence.as_ref().map(|e| e.comparison),
                reason: a.reason.clone(),
                pooled: why.is_none(),
                not_pooled: why,
                outlier: None,
            }
        })
        .collect();
    let eligible: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].pooled).collect();
    let est = |r: &HostAnswer| {
        let c = r.comparison.expect("eligible rows have evidence");
        let se = c.log_standard_error().expect("checked by not_poolable");
        Estimate {
            y: c.estimate.ln(),
            v: se * se,
        }
    };
    let ests: Vec<Estimate> = eligible.iter().map(|&i| est(&rows[i])).collect();
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
        // A caveat explains a host apart only when the other pooled hosts do not all share
        // its kind (every host synthetic, or every host a debug build, explains nothing).
        let explained_by: Vec<Caveat> = hosts[i]
            .row
            .caveats
            .iter()
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
    let in_pool: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].pooled).collect();
    // The band the hosts were judged against (the most common, should they differ).
    let bands: Vec<Thresholds> = in_pool
        .iter()
        .filter_map(|&i| rows[i].comparison.map(|c| c.thresholds))
        .collect();
    let thresholds = bands
        .iter()
        .max_by_key(|t| bands.iter().filter(|u| *u == *t).count())
        .copied();
    let mixed_bands = bands.iter().any(|t| Some(*t) != thresholds);
    let pooled = match in_pool.len() {
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
                effect: c.effect,
            })
        }
        _ => {
            let xs: Vec<Estimate> = in_pool.iter().map(|&i| est(&rows[i])).collect();
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
                    effect: classify(low, high, t),
                }
            })
        }
    };
    let mut tally: Vec<AnswerCount> = crate::report::metrics::ANSWERS
        .iter()
        .map(|&a| AnswerCount {
            answer: a,
            hosts: rows.iter().filter(|r| r.answer == a).count(),
        })
        .filter(|c| c.hosts > 0)
        .collect();
    tally.sort_by_key(|c| std::cmp::Reverse(c.hosts));
    let (answer, reason) = decide(
        &rows,
        pooled.as_ref(),
        thresholds.unwrap_or(Thresholds::YIELD),
        class,
        excluded,
        unexplained,
    );
    let mut reason = reason;
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
                    crate::stats::level_text(p.confidence),
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

/// The type's answer for one row, and why.
fn decide(
    rows: &[HostAnswer],
    pooled: Option<&PooledRatio>,
    band: Thresholds,
    class: WorkloadClass,
    excluded: usize,
    unexplained: usize,
) -> (HtAnswer, String) {
    let n = rows.len();
    let Some(p) = pooled else {
        let measured = rows.iter().any(|r| r.answer != HtAnswer::NotMeasured);
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
            return (
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
        return (
            HtAnswer::Inconclusive,
            format!(
                "No host's interval could be pooled (each host's reason is in its row); the hosts' own answers: {}.",
                tally_text(rows)
            ),
        );
    };
    let pooled_rows: Vec<&HostAnswer> = rows.iter().filter(|r| r.pooled).collect();
    if p.hosts == 1 {
        let r = pooled_rows[0];
        let mut s = format!(
            "One host's interval could be pooled, so the type's answer is {}'s own: {}.",
            r.host,
            r.comparison.map_or("–".into(), |c| c.to_string())
        );
        if n > 1 {
            s.push_str(&format!(" All hosts' own answers: {}.", tally_text(rows)));
        }
        return (r.answer, s);
    }
    let answer = answer_for(class, p.effect);
    let mut s = format!(
        "Pooled over {} of {}: {}× ({} % CI {}–{}): {}",
        p.hosts,
        crate::render::count(n, "host"),
        ratio_text(p.estimate),
        crate::stats::level_text(p.confidence),
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
    if let (Some(a), Some(b)) = (p.predict_low, p.predict_high) {
        s.push_str(&format!(
            " One more host of this type is expected between {}× and {}×.",
            ratio_text(a),
            ratio_text(b)
        ));
    }
    let same: Vec<HtAnswer> = pooled_rows.iter().map(|r| r.answer).collect();
    if same.iter().all(|a| *a == same[0]) {
        s.push_str(&format!(
            " All {} pooled hosts answer {} on their own.",
            p.hosts,
            same[0].label()
        ));
    } else {
        s.push_str(&format!(
            " The hosts' own answers differ: {}.",
            tally_text(rows)
        ));
    }
    if excluded > 0 {
        s.push_str(&format!(
            " {} left out of the pool as {}, each explained by its own results (see {}).",
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
            " {} far from the others with nothing in {} own results to explain it; kept in the pool.",
            if unexplained == 1 {
                "1 host stands".to_string()
            } else {
                format!("{unexplained} hosts stand")
            },
            if unexplained == 1 { "its" } else { "their" }
        ));
    }
    (answer, s)
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
            match &c.pooled {
                Some(p) => format!(
                    "{} for {what} ({} {}×, {} % CI {}–{}, {})",
                    c.answer.label(),
                    c.ratio.label(),
                    ratio_text(p.estimate),
                    crate::stats::level_text(p.confidence),
                    ratio_text(p.low),
                    ratio_text(p.high),
                    crate::render::count(p.hosts, "host")
                ),
                None => format!("{} for {what}", c.answer.label()),
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
        assert!(c.reason.contains("kept in the pool"), "{}", c.reason);
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
    fn two_hosts_pool_into_a_wide_interval_and_one_host_is_its_own_answer() {
        let f = build(agreeing(2, &[]), vec![], 2, prov());
        let c = compute(&f);
        let p = c.pooled.as_ref().unwrap();
        // t(1) = 12.7: two hosts say little about a third.
        assert!(p.high / p.low > 1.5, "{p:?}");
        assert_eq!(p.predict_low, None);
        assert_eq!(c.answer, HtAnswer::Inconclusive, "{}", c.reason);
        assert!(c.reason.contains("reaches across a threshold"));
        let f = build(agreeing(1, &[]), vec![], 1, prov());
        let c = compute(&f);
        assert_eq!(c.pooled.as_ref().unwrap().method, "one host");
        assert_eq!(c.answer, HtAnswer::KeepHtOn);
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
