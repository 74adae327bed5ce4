//! The verdict: what the results mean for someone deciding on Hyper-Threading and pinning,
//! in plain words, with the numbers each sentence rests on and what could not be measured.
//! Pure: a [`Report`] in, a [`Verdict`] out; built once by the study and stored in the JSON,
//! so re-rendering never changes it.

use super::{Finding, PhaseStatus, Report, Status, Verdict};
use crate::experiments::diagnosis::Diagnosis;
use crate::experiments::lockscan::ScenarioResult;
use crate::placement::Request;
use crate::render::si;
use crate::rwcache::SchemeKind;
use crate::stats::Ci;
use crate::topology::Proximity;

fn ci(c: &Ci) -> String {
    format!("{:.2}× (95% CI {:.2}–{:.2})", c.estimate, c.low, c.high)
}

fn pm(median: f64, mad: f64) -> String {
    if mad.is_finite() && mad > 0.0 {
        format!("{} ± {}", si(median), si(mad))
    } else {
        si(median)
    }
}

/// Builds the verdict from everything else in the report.
pub fn build(r: &Report) -> Verdict {
    let smt = r.smt.threads_per_core > 1;
    let mut findings = Vec::new();
    let mut not_measured = Vec::new();

    if !smt {
        not_measured.push(format!(
            "SMT sibling effects: this machine shows no SMT siblings ({}), so a lock thread beside a scanning sibling, burners on the workers' siblings and oltp's `pairs` layout could not run. Run `smtlab study` on a machine with SMT, once with SMT on and once off (`echo off > /sys/devices/system/cpu/smt/control`), to answer the HT question for your hardware.",
            r.smt.sentence
        ));
    }
    if r.machine.hypervisor != "none" {
        not_measured.push(format!(
            "The host's topology: under a hypervisor ({}) these vCPUs may themselves be SMT siblings, or share cores with other guests, without the guest seeing it.",
            r.machine.hypervisor
        ));
    }
    if r.machine.hardware_counters.starts_with("unavailable") {
        not_measured.push("Hardware counters (fill buffers, machine clears, divider activity): the kernel exposes no CPU PMU here, so mechanisms are inferred from scheduling evidence (context switches, run-queue delay, long lock holds), not from the CPU.".into());
    }
    if r.machine.frequency_governor == "unavailable" {
        not_measured.push("CPU frequency: no cpufreq interface, so the clock could be neither read nor fixed; compared runs were interleaved so drift spreads evenly.".into());
    }
    for p in &r.phases {
        if matches!(
            p.status,
            PhaseStatus::Skipped | PhaseStatus::Failed | PhaseStatus::NotRun
        ) {
            not_measured.push(format!(
                "{} ({}): {}",
                p.phase,
                p.status.label(),
                p.reason.as_deref().unwrap_or("no reason recorded")
            ));
        }
    }

    if let Some(l) = &r.lockscan {
        findings.push(lock_finding(&l.result.results, smt));
    }
    if let Some(n) = &r.neighbors {
        findings.push(neighbors_finding(n, smt));
        for run in n.runs.iter().take(1) {
            for (b, why) in &run.skipped {
                not_measured.push(format!("neighbors with {b} burners: {why}"));
            }
        }
    }
    if let Some(o) = &r.oltp {
        findings.push(oltp_finding(o, smt));
        for s in &o.result.skipped {
            not_measured.push(format!("oltp layout `{}`: {}", s.placement, s.reason));
        }
    }
    if let Some(w) = &r.rwcache {
        findings.push(rwcache_finding(w));
    }
    if let Some(c) = &r.c2c {
        findings.push(c2c_finding(c, smt));
        if !c.cpus_left_out.is_empty() {
            not_measured.push(format!(
                "c2c on CPUs {}: left out to fit the time budget (the first core's siblings and one CPU per core were measured)",
                c.cpus_left_out
            ));
        }
    }

    let what = if r.machine.hypervisor != "none" {
        format!(
            "{} vCPUs under {}",
            r.machine.online_cpus, r.machine.hypervisor
        )
    } else {
        format!("{} CPUs", r.machine.online_cpus)
    };
    let mut headline = if smt {
        format!(
            "On this machine ({what}, {} threads per core on {} of {} cores): ",
            r.smt.threads_per_core, r.smt.cores_with_siblings, r.machine.cores
        )
    } else {
        format!(
            "On this machine ({what}, no SMT siblings): Hyper-Threading cannot be tested here — every logical CPU is its own core, so nothing in this report measures two threads sharing a core. What it does measure is how these workloads behave when threads share CPUs by time slicing, which is what turning HT off does to a thread count that used to fit. "
        )
    };
    headline.push_str(&key_sentence(r, smt));
    if r.status == Status::Partial {
        headline.push_str(
            " The study was stopped with Ctrl-C: this report holds the phases before it and the runs the interrupted phase finished; later phases did not run.",
        );
    }
    if r.synthetic {
        headline = format!("SYNTHETIC DATA from the fake engine, not measurements. {headline}");
    }
    Verdict {
        headline,
        findings,
        not_measured,
    }
}

/// The most important sentences: the neighbors loss (a collapse, or the worst
/// oversubscribed step and what the other lock kept there), the sibling lock result on SMT
/// machines, and a caution when other load disturbed the runs.
fn key_sentence(r: &Report, smt: bool) -> String {
    let mut parts = Vec::new();
    if let Some(n) = &r.neighbors {
        // The step with the lowest ratio over every lock, and the other locks at that count.
        let worst = n
            .series
            .iter()
            .flat_map(|s| s.steps.iter().map(move |st| (s.lock, st)))
            .filter(|(_, st)| st.burners > 0)
            .min_by(|a, b| a.1.ratio_to_first.total_cmp(&b.1.ratio_to_first));
        if let Some((lock, st)) = worst
            && st.ratio_to_first < NOTABLE
        {
            let others: Vec<String> = n
                .series
                .iter()
                .filter(|s| s.lock != lock)
                .filter_map(|s| {
                    s.steps
                        .iter()
                        .find(|o| o.burners == st.burners)
                        .map(|o| format!("`{}` kept {:.2}×", s.lock, o.ratio_to_first))
                })
                .collect();
            let cause = match st.diagnosis {
                Diagnosis::PreemptionCollapse => {
                    "a preemption collapse: lock holders or next-in-line waiters descheduled"
                }
                Diagnosis::Oversubscribed => "time slicing with more runnable threads than CPUs",
                Diagnosis::SmtSharing => "burners sharing the workers' cores as SMT siblings",
                Diagnosis::SharedResources => "shared caches or memory bandwidth",
                Diagnosis::ExternalLoad => "other processes competing for the CPUs",
                Diagnosis::None => "no named mechanism",
            };
            parts.push(format!(
                "The largest loss came from oversubscription, not sharing: with {} runnable threads on {} CPUs the `{lock}` lock ran at {:.2}× its unloaded throughput ({cause}){}. Keep runnable lock-heavy threads at or below the logical CPU count, or use locks that sleep.",
                st.runnable_threads,
                st.cpus,
                st.ratio_to_first,
                if others.is_empty() { String::new() } else { format!(", while {}", others.join(", ")) }
            ));
        }
    }
    if smt && let Some(l) = &r.lockscan {
        let worst = l
            .result
            .results
            .iter()
            .filter_map(|s| s.sharing_vs_others.map(|c| (s, c)))
            .min_by(|a, b| a.1.estimate.total_cmp(&b.1.estimate));
        if let Some((s, c)) = worst {
            if c.high < NOTABLE {
                parts.push(format!(
                    "A lock thread whose SMT sibling streams memory acquired `{}` at {} the rate of the others: keep memory-heavy work off the siblings of lock-heavy threads (pin them to different cores), or turn HT off for such a mix.",
                    s.lock,
                    ci(&c)
                ));
            } else {
                parts.push(format!(
                    "A memory-streaming SMT sibling did not measurably slow lock threads here (worst: `{}` at {}).",
                    s.lock,
                    ci(&c)
                ));
            }
        }
    }
    if parts.is_empty() {
        parts.push("No experiment showed a loss below 0.8× of its reference; see the findings for the numbers.".into());
    }
    let disturbed = r.neighbors.as_ref().is_some_and(|n| {
        n.series.iter().any(|s| {
            s.steps
                .first()
                .is_some_and(|st| st.diagnosis == Diagnosis::ExternalLoad)
        })
    });
    if disturbed {
        parts.push("Caution: other processes competed for these CPUs during the study (workers waited for a CPU even without burners), so the numbers are noisier than on a quiet machine.".into());
    }
    parts.join(" ")
}

/// A ratio below this is worth a headline.
const NOTABLE: f64 = 0.8;

fn lock_finding(results: &[ScenarioResult], smt: bool) -> Finding {
    let mut obs = Vec::new();
    let mut locks = Vec::new();
    for s in results {
        if !locks.contains(&s.lock) {
            locks.push(s.lock);
        }
    }
    for lock in locks {
        let mine: Vec<&ScenarioResult> = results.iter().filter(|s| s.lock == lock).collect();
        let base = mine.iter().find(|s| s.scenario.scan_cpus.is_empty());
        let mut line = format!("`{lock}`:");
        if let Some(b) = base
            && let Some(a) = b.acquisitions_per_sec
        {
            line.push_str(&format!(
                " {} acquisitions/s without a scanner (Jain {:.2})",
                pm(a.median, a.mad),
                b.jain_index
            ));
        }
        let shared: Vec<Ci> = mine.iter().filter_map(|s| s.sharing_vs_others).collect();
        if let Some(c) = shared
            .iter()
            .min_by(|a, b| a.estimate.total_cmp(&b.estimate))
        {
            line.push_str(&format!(
                "; the lock thread {} a scanner got {} the others' rate",
                if smt {
                    "whose sibling ran"
                } else {
                    "time-sharing its CPU with"
                },
                ci(c)
            ));
        }
        let cross: Vec<Ci> = mine
            .iter()
            .filter_map(|s| s.cross_core_vs_baseline)
            .collect();
        if let Some(c) = cross
            .iter()
            .min_by(|a, b| a.estimate.total_cmp(&b.estimate))
        {
            line.push_str(&format!(
                "; lock threads on other cores kept {} of their rate",
                ci(c)
            ));
        }
        obs.push(line);
    }
    let sibling_loss = results
        .iter()
        .filter_map(|s| s.sharing_vs_others)
        .any(|c| c.high < NOTABLE);
    let meaning = if smt && sibling_loss {
        "A memory-streaming sibling takes the shared fill buffers and store queue its lock-spinning sibling needs, so that thread loses the lock race (seed 000 saw ~10×). If lock-heavy and memory-heavy work must share a machine, pin them to different cores, or turn HT off for that workload; fair locks (ticket, MCS) hide the loss in throughput but not in latency."
    } else if smt {
        "On this machine a scanning sibling did not cost lock threads a clear share of acquisitions (every confidence interval reaches 0.8× or more), so for these locks HT does not need to be turned off on that account; seed 000's ~10× loss depends on how the core shares fill buffers and store queues, so rerun after hardware or microcode changes."
    } else {
        "Here the scanner can only share a CPU by time slicing: the lock thread that shares its CPU runs half the time and acquires accordingly — a scheduler effect, not the hardware one seed 000 showed on SMT siblings (~10× fewer acquisitions). Cross-core interference from a scanner is the cost that remains with HT off. To see the sibling effect, run the study on an SMT machine."
    };
    Finding {
        topic: "locks (lockscan)".into(),
        observed: obs.join(". ") + ".",
        meaning: meaning.into(),
    }
}

fn neighbors_finding(n: &super::NeighborsSection, smt: bool) -> Finding {
    let mut obs = Vec::new();
    for s in &n.series {
        let Some(first) = s.steps.first() else {
            continue;
        };
        let mut line = format!(
            "`{}` with {} workers: {} ops/s with {} burners",
            s.lock,
            n.workers,
            pm(first.ops_per_sec.median, first.ops_per_sec.mad),
            first.burners
        );
        if let Some(over) = s.steps.iter().find(|st| st.runnable_threads > st.cpus) {
            line.push_str(&format!(
                "; {} with {} burners ({} runnable on {} CPUs, {:.3}×, {})",
                si(over.ops_per_sec.median),
                over.burners,
                over.runnable_threads,
                over.cpus,
                over.ratio_to_first,
                over.diagnosis.label()
            ));
        }
        if let Some(worst) = s
            .steps
            .iter()
            .min_by(|a, b| a.ratio_to_first.total_cmp(&b.ratio_to_first))
            && worst.burners != first.burners
        {
            line.push_str(&format!(
                "; worst {:.3}× at {} burners ({})",
                worst.ratio_to_first,
                worst.burners,
                worst.diagnosis.label()
            ));
        }
        obs.push(line);
    }
    let mut meaning = String::from(
        "A fair spin lock hands the lock to the next waiter in line; once runnable threads exceed logical CPUs that waiter is often descheduled, and progress drops toward one handoff per scheduler time slice. A lock that spins briefly and then sleeps degrades gracefully. ",
    );
    if smt {
        meaning.push_str("HT on gives more logical CPUs, so this cliff comes later, but steps below it pay for sibling sharing (`smt-sharing`); HT off halves the logical CPUs and brings the cliff forward. Size thread pools to logical CPUs with HT on and to cores with HT off.");
    } else {
        meaning.push_str("Turning HT off on an SMT machine halves the logical CPUs, so a thread count that fit with HT on lands on this cliff; size thread pools to the CPUs you will have, and prefer sleeping locks when you cannot.");
    }
    Finding {
        topic: "noisy neighbours (neighbors)".into(),
        observed: obs.join(". ") + ".",
        meaning,
    }
}

fn oltp_finding(o: &super::OltpSection, smt: bool) -> Finding {
    let mut obs: Vec<String> = o
        .summary
        .iter()
        .map(|s| {
            format!(
                "`{}` {} inserts/s{}{}",
                s.placement,
                pm(s.inserts_per_sec.median, s.inserts_per_sec.mad),
                match s.commit_latency_p99_ns {
                    0 => String::new(),
                    ns => format!(" (commit p99 {})", crate::render::duration_ns(ns as f64)),
                },
                if s.rows_verified {
                    ""
                } else {
                    ", ROW CHECK FAILED"
                }
            )
        })
        .collect();
    let by = |layout: Request| o.summary.iter().find(|s| s.placement == layout);
    let same_cpus = |a: Request, b: Request| {
        let cpus = |layout: &Request| {
            o.result
                .runs
                .iter()
                .find(|r| r.placement == *layout)
                .map(|r| {
                    r.per_thread
                        .iter()
                        .map(|t| t.cpus.clone())
                        .collect::<Vec<_>>()
                })
        };
        cpus(&a).is_some() && cpus(&a) == cpus(&b)
    };
    let meaning;
    if let (Some(one), Some(pairs)) = (by(Request::OnePerCore), by(Request::Pairs)) {
        let ratio = pairs.inserts_per_sec.median / one.inserts_per_sec.median;
        obs.push(format!("pairs / one-per-core = {ratio:.2}×"));
        meaning = format!(
            "Same client count on half the cores: {ratio:.2}× the inserts. Near 1.0 means the siblings add real capacity for this insert path (HT worth keeping); near 0.5 means each sibling takes half a core (HT buys nothing here, and pinning one client per core is safer for latency)."
        );
    } else {
        if let (Some(_), Some(_)) = (by(Request::OnePerCore), by(Request::All))
            && same_cpus(Request::OnePerCore, Request::All)
        {
            obs.push("`one-per-core` and `all` placed the clients on the same CPUs here, so they differ only by noise".into());
        }
        meaning = if smt {
            "Compare the layouts above; the `pairs` layout (clients on siblings) did not run."
                .into()
        } else {
            "Without siblings the layouts that differ on SMT machines coincide here; the numbers are this machine's insert baseline. On an SMT machine, `pairs` vs `one-per-core` (the same clients on half the cores) tells what HT is worth for this insert path.".into()
        };
    }
    Finding {
        topic: format!("database inserts (oltp, {})", o.result.db_version),
        observed: obs.join("; ") + ".",
        meaning,
    }
}

fn rwcache_finding(w: &super::RwcacheSection) -> Finding {
    let top = w.rows.iter().map(|r| r.threads).max().unwrap_or(1);
    let at = |s: SchemeKind| w.rows.iter().find(|r| r.threads == top && r.scheme == s);
    let mut obs = Vec::new();
    if let Some(b) = w.result.best.as_ref().map(|b| b.overall)
        && let Some(row) = at(b)
    {
        obs.push(format!(
            "best at {top} threads: `{b}` {} requests/s",
            pm(row.requests_per_sec.median, row.requests_per_sec.mad)
        ));
    }
    if let (Some(s), Some(rw)) = (at(SchemeKind::Spin), at(SchemeKind::RwSpin)) {
        obs.push(format!(
            "`spin` {} → `rwspin` {} ({:+.0}%)",
            si(s.requests_per_sec.median),
            si(rw.requests_per_sec.median),
            (rw.requests_per_sec.median / s.requests_per_sec.median - 1.0) * 100.0
        ));
    }
    let shared = |want: bool| {
        w.result
            .results
            .iter()
            .filter(|x| x.threads == top && x.shared_reader_line == want)
            .filter_map(|x| x.requests_per_sec.map(|s| s.median))
            .fold(0.0, f64::max)
    };
    let (with, without) = (shared(true), shared(false));
    if with > 0.0 && without > 0.0 {
        obs.push(format!(
            "at {top} threads the best scheme whose readers write a shared line reached {:.2}× the best without one",
            with / without
        ));
    }
    Finding {
        topic: "read-mostly cache (rwcache)".into(),
        observed: obs.join("; ") + ".",
        meaning: "Read-mostly data under one lock makes every reader write the lock's cache line; a reader/writer spinlock still does. Schemes whose readers write nothing shared (per-CPU slots, seqlock, RCU-style snapshots) scale with threads — on SMT siblings as on cores — so fix the lock before deciding HT for such a workload.".into(),
    }
}

fn c2c_finding(c: &super::C2cSection, smt: bool) -> Finding {
    let classes: Vec<String> = c
        .result
        .classes
        .iter()
        .map(|k| {
            format!(
                "{} {:.0} ns (≤ {} handoffs/s)",
                k.proximity.label(),
                k.median_latency_ns,
                si(k.ceiling.k1_handoffs_per_sec)
            )
        })
        .collect();
    let sib = c.result.class(Proximity::SmtSibling);
    let meaning = match (smt, sib) {
        (true, Some(s)) => format!(
            "Handing a lock between SMT siblings costs {:.0} ns, far less than between cores: fair locks look fast when waiters share a core and unfair locks let the sibling pair keep the lock (starving other cores).",
            s.median_latency_ns
        ),
        (false, _) => "Every contended lock handoff moves at least one cache line at this latency; it bounds lock throughput and is the fixed cost HT cannot remove. SMT siblings (none here) would hand lines over through their shared L1/L2, several times faster.".into(),
        (true, None) => "Every contended lock handoff moves at least one cache line at this latency; it bounds lock throughput. No sibling pair was among the measured pairs.".into(),
    };
    Finding {
        topic: "cache-line handoff (c2c)".into(),
        observed: if classes.is_empty() {
            "no pair finished.".into()
        } else {
            classes.join("; ") + "."
        },
        meaning,
    }
}
