//! Orchestration: every workload in every layout once per round, rounds repeated, each
//! workload's layouts in counterbalanced order (A B C, C B A, B C A, …: the engine's
//! [`counterbalanced`]) so that `one-per-core` does not always run first, each run on a
//! fresh workload (a new lock and page, fresh ruler buffers, a fresh set of database
//! sessions) through the [`Engine`] trait, so the fake engine tests everything above the
//! threads.

use super::analysis;
use super::config::{Config, InsertTarget, Subject};
use super::layouts::{self, Planned};
use super::model::{Layout, Note, RunRecord, SCHEMA_VERSION, WorkloadResult, YieldReport};
use crate::burn::{BurnSpec, Burners};
use crate::cpuset::CpuSet;
use crate::engine::{Engine, ThreadCtx, Workload, counterbalanced};
use crate::error::Interrupted;
use crate::experiments::neighbors::{HotPage, Worker};
use crate::oltp::{Db, InsertWorkload, StopRule};
use crate::placement::Plan;
use crate::stats::Thresholds;
use crate::topology::Topology;
use anyhow::{Context, Result};
use hdrhistogram::Histogram;

/// Narration, one line per run: stderr for the command, the progress line for the study.
pub type Say<'a> = dyn FnMut(&str) + 'a;

/// Plans and runs; see [`run_planned`].
pub fn run(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    say: &mut Say<'_>,
) -> Result<YieldReport> {
    let planned = layouts::plan(topo, cfg, crate::limits::mem_available_bytes())?;
    run_planned(engine, topo, cfg, &planned, say)
}

/// Runs a plan made by [`layouts::plan`]. Ctrl-C ends it after the current run and returns
/// the runs so far with `interrupted: true`; a database is closed (a managed cluster
/// stopped and removed) on every path.
pub fn run_planned(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    planned: &Planned,
    say: &mut Say<'_>,
) -> Result<YieldReport> {
    let mut notes = Vec::new();
    let cpus = planned
        .layouts
        .iter()
        .fold(CpuSet::new(), |a, (_, p)| a.union(&p.cpus()));
    let preflight = engine.hygiene(&cpus);
    for w in &preflight {
        say(&format!("warning: {w}"));
        notes.push(w.clone());
    }
    let db = match (planned.subjects.contains(&Subject::Insert), &cfg.db) {
        (true, Some(t)) => {
            let most = planned
                .layouts
                .iter()
                .map(|(_, p)| p.threads.len())
                .max()
                .unwrap_or(1);
            let db =
                Db::open(&t.db, t.durability, most).with_context(|| format!("opening {}", t.db))?;
            say(&db.describe());
            Some((db, t))
        }
        _ => None,
    };
    let db_ref = db.as_ref().map(|(d, t)| (d, *t));
    let mut counted = Vec::new();
    let outcome = run_rounds(engine, topo, cfg, planned, db_ref, say, &mut counted);
    if let Some((db, t)) = db {
        if let Err(e) = db.drop_table(&t.table) {
            say(&format!(
                "warning: dropping table {}: {e:#}",
                t.table.schema.table()
            ));
        }
        let closed = db.close();
        if outcome.is_ok() {
            closed?;
        }
    }
    let (records, interrupted) = outcome?;
    let synthetic = engine.synthetic();
    let workloads = planned
        .subjects
        .iter()
        .zip(records)
        .map(|(s, runs)| workload_result(planned, *s, runs))
        .collect();
    Ok(YieldReport {
        schema_version: SCHEMA_VERSION,
        plan: planned.plan.clone(),
        yield_thresholds: Thresholds::YIELD,
        shared_core_thresholds: Thresholds::SLOWDOWN,
        workloads,
        notes,
        preflight,
        hypervisor: topo.machine.hypervisor,
        interrupted,
        synthetic,
        counters: (!counted.is_empty())
            .then(|| crate::counters::Status::of(cfg.spec.counters(), &counted)),
    })
}

/// The rounds; per workload its runs, and whether Ctrl-C cut them short.
fn run_rounds(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    planned: &Planned,
    db: Option<(&Db, &InsertTarget)>,
    say: &mut Say<'_>,
    counted: &mut Vec<crate::counters::Measurement>,
) -> Result<(Vec<Vec<RunRecord>>, bool)> {
    let mut order = run_order(planned.subjects.len(), planned.layouts.len(), cfg.repeat);
    let planned_runs = order.len();
    let mut total = order.len();
    let mut records: Vec<Vec<RunRecord>> = planned.subjects.iter().map(|_| Vec::new()).collect();
    let mut k = 0;
    loop {
        if k == planned_runs {
            // Each workload's rounds disturbed while they ran, run again once at the end
            // (at most half as many again), so that dropping them leaves the rounds asked
            // for where the machine calms down.
            order.extend(repeats(&records, planned.layouts.len(), cfg.repeat));
            total = order.len();
        }
        if k >= order.len() {
            break;
        }
        let Slot {
            round,
            subject: si,
            layout: li,
            position,
        } = order[k];
        if crate::interrupt::requested() {
            return Ok((records, true));
        }
        let subject = planned.subjects[si];
        let (layout, plan) = &planned.layouts[li];
        let rec = match run_one(
            engine, topo, cfg, subject, *layout, plan, round, db, counted,
        ) {
            Ok(r) => r,
            Err(e) if e.chain().any(|c| c.is::<Interrupted>()) => return Ok((records, true)),
            Err(e) => {
                return Err(e.context(format!(
                    "{} in layout {layout} (round {round})",
                    subject.name()
                )));
            }
        };
        say(&format!(
            "[{}/{total}] round {} {} {}: {} {}/s",
            k + 1,
            round + 1,
            subject.name(),
            layout,
            crate::render::si(rec.ops_per_sec),
            subject.unit()
        ));
        let stop = rec.interrupted;
        if let Some(why) = &rec.disturbed {
            say(&format!(
                "  round {} of {} disturbed ({why}): left out{}",
                round + 1,
                subject.name(),
                if k < planned_runs {
                    ", to be run again at the end"
                } else {
                    ""
                }
            ));
        }
        records[si].push(RunRecord { position, ..rec });
        if stop {
            return Ok((records, true));
        }
        k += 1;
    }
    Ok((records, false))
}

/// The extra rounds for rounds a run of which was disturbed: per workload one new round
/// (numbered after the last) per disturbed round, at most `repeat / 2` (rounded up), its
/// layouts in the counterbalanced order of its number.
fn repeats(records: &[Vec<RunRecord>], layouts: usize, repeat: usize) -> Vec<Slot> {
    let mut out = Vec::new();
    for (subject, recs) in records.iter().enumerate() {
        let mut disturbed: Vec<usize> = recs
            .iter()
            .filter(|r| r.disturbed.is_some())
            .map(|r| r.round)
            .collect();
        disturbed.sort_unstable();
        disturbed.dedup();
        for j in 0..disturbed.len().min(repeat.div_ceil(2)) {
            let round = repeat + j;
            for (i, layout) in counterbalanced(layouts, round).into_iter().enumerate() {
                out.push(Slot {
                    round,
                    subject,
                    layout,
                    position: i + 1,
                });
            }
        }
    }
    out
}

/// One run in the order they are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    /// From 0.
    round: usize,
    subject: usize,
    layout: usize,
    /// Where the layout runs among its workload's runs of the round, from 1.
    position: usize,
}

/// Every run: per round, each workload in turn, its layouts in counterbalanced order.
/// Each workload's layouts of one round stay together, so a round's ratios compare runs
/// taken back to back.
fn run_order(subjects: usize, layouts: usize, repeat: usize) -> Vec<Slot> {
    let mut out = Vec::with_capacity(subjects * layouts * repeat);
    for round in 0..repeat {
        for subject in 0..subjects {
            for (i, layout) in counterbalanced(layouts, round).into_iter().enumerate() {
                out.push(Slot {
                    round,
                    subject,
                    layout,
                    position: i + 1,
                });
            }
        }
    }
    out
}

/// A run's workload, built for that run and finished after it.
trait RunWorkload: Workload {
    /// Ends the run: frees buffers, closes sessions, restores pinned backends; hands back
    /// the timed operations (None when the workload does not time each) and, for inserts,
    /// whether the table gained exactly the committed rows.
    fn finish(self: Box<Self>) -> Result<Finished>;
}

struct Finished {
    latency_ns: Option<Histogram<u64>>,
    rows_verified: Option<bool>,
}

struct Ruler(Burners);

impl Workload for Ruler {
    fn name(&self) -> String {
        self.0.name()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        self.0.run_thread(ctx)
    }
}

impl RunWorkload for Ruler {
    fn finish(self: Box<Self>) -> Result<Finished> {
        self.0.release();
        self.0.check()?;
        Ok(Finished {
            latency_ns: None,
            rows_verified: None,
        })
    }
}

struct Page(HotPage);

impl Workload for Page {
    fn name(&self) -> String {
        self.0.name()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        self.0.run_thread(ctx)
    }
}

impl RunWorkload for Page {
    fn finish(self: Box<Self>) -> Result<Finished> {
        let out = Worker::finish(Box::new(self.0))?;
        Ok(Finished {
            latency_ns: Some(out.latency_ns),
            rows_verified: None,
        })
    }
}

struct Inserts<'a> {
    w: InsertWorkload,
    db: &'a Db,
    target: &'a InsertTarget,
    before: u64,
}

impl Workload for Inserts<'_> {
    fn name(&self) -> String {
        self.w.name()
    }
    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        self.w.run_thread(ctx)
    }
}

impl RunWorkload for Inserts<'_> {
    fn finish(self: Box<Self>) -> Result<Finished> {
        let me = *self;
        // Restores backend affinity and closes the sessions before the count.
        let outcome = me.w.finish()?;
        let rows = me.db.count_rows(&me.target.table)?;
        Ok(Finished {
            rows_verified: Some(rows == me.before + outcome.rows_committed()),
            latency_ns: Some(outcome.latency_ns),
        })
    }
}

fn make<'a>(
    topo: &Topology,
    subject: Subject,
    plan: &Plan,
    db: Option<(&'a Db, &'a InsertTarget)>,
) -> Result<Box<dyn RunWorkload + 'a>> {
    Ok(match subject {
        Subject::Ruler(k) => {
            let cpus: Vec<CpuSet> = plan.threads.iter().map(|t| t.cpus.clone()).collect();
            Box::new(Ruler(Burners::new(&BurnSpec::new(k), topo, &cpus)?))
        }
        Subject::HotPage(k) => Box::new(Page(HotPage::new(k, plan.threads.len()))),
        Subject::Insert => {
            let (db, target) = db.context("the insert workload has no database")?;
            let before = db.create_table(&target.table, 0)?;
            crate::interrupt::check()?;
            let w = InsertWorkload::new(db, &target.table, plan, StopRule::Duration)?;
            Box::new(Inserts {
                w,
                db,
                target,
                before,
            })
        }
    })
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    engine: &dyn Engine,
    topo: &Topology,
    cfg: &Config,
    subject: Subject,
    layout: Layout,
    plan: &Plan,
    round: usize,
    db: Option<(&Db, &InsertTarget)>,
    counted: &mut Vec<crate::counters::Measurement>,
) -> Result<RunRecord> {
    let w = make(topo, subject, plan, db)?;
    let r = engine.run(plan, &cfg.spec, &*w);
    // Finish (free, close, restore) before looking at the result.
    let fin = w.finish();
    let r = r?;
    let fin = fin?;
    // What this run's counters could not count, for the report's reasons.
    if let Some(st) = r.counter_status() {
        counted.push(crate::counters::Measurement {
            counts: Default::default(),
            unavailable: st.unavailable,
        });
    }
    let threads = plan.threads.len();
    let ops = r.total_ops();
    let ops_per_sec = r.ops_per_sec();
    let hist = fin.latency_ns.filter(|h| !h.is_empty());
    Ok(RunRecord {
        round,
        position: 0,
        layout,
        threads,
        ops_per_sec,
        per_thread_ops_per_sec: ops_per_sec / threads.max(1) as f64,
        time_per_op_ns: (ops > 0).then(|| r.measured_ns as f64 * threads as f64 / ops as f64),
        latency_p50_ns: hist.as_ref().map(|h| h.value_at_quantile(0.5)),
        latency_p99_ns: hist.as_ref().map(|h| h.value_at_quantile(0.99)),
        latency_samples: hist.as_ref().map_or(0, |h| h.len()),
        cpus: plan.cpus(),
        observed_cpus: r
            .threads
            .iter()
            .fold(CpuSet::new(), |a, t| a.union(&t.observed_cpus)),
        pinning_ok: r.pinning_ok(),
        steal_share: r.steal_share,
        interrupted: r.interrupted,
        disturbed: crate::engine::disturbance::of_run(&r),
        rows_verified: fin.rows_verified,
        synthetic: r.synthetic,
        measured_ns: r.measured_ns,
        counters: r
            .threads
            .iter()
            .map(|t| t.counters.as_ref().map(|m| &m.counts))
            .collect::<Option<Vec<_>>>()
            .and_then(crate::counters::Counts::sum),
    })
}

/// One workload's runs, summarised and compared.
fn workload_result(planned: &Planned, subject: Subject, runs: Vec<RunRecord>) -> WorkloadResult {
    let threads: Vec<(Layout, usize)> = planned
        .layouts
        .iter()
        .map(|(l, p)| (*l, p.threads.len()))
        .collect();
    let has_pairs = threads.iter().any(|(l, _)| *l == Layout::Pairs);
    let mut notes: Vec<Note> = Vec::new();
    let strays = runs.iter().filter(|r| !r.pinning_ok).count();
    if strays > 0 {
        notes.push(Note::Strayed { runs: strays });
    }
    let idle = runs
        .iter()
        .filter(|r| !r.interrupted && r.ops_per_sec == 0.0)
        .count();
    if idle > 0 {
        notes.push(Note::NoOperation { runs: idle });
    }
    let disturbed: Vec<&String> = runs.iter().filter_map(|r| r.disturbed.as_ref()).collect();
    if let Some(first) = disturbed.first() {
        notes.push(Note::Disturbed {
            runs: disturbed.len(),
            first: first.to_string(),
        });
    }
    let cut = runs.iter().filter(|r| r.interrupted).count();
    if cut > 0 {
        notes.push(Note::CutShort {
            runs: cut,
            signal: crate::interrupt::signal(),
        });
    }
    notes.extend(
        crate::hygiene::steal_note("the runs", runs.iter().map(|r| r.steal_share)).map(Note::Steal),
    );
    WorkloadResult {
        workload: subject.name(),
        class: subject.class(),
        unit: subject.unit(),
        describe: subject.describe(),
        layouts: analysis::summarise(&runs, &threads),
        smt_yield: analysis::smt_yield(&runs),
        shared_core_speed: if has_pairs {
            analysis::shared_core_speed(&runs)
        } else {
            None
        },
        yield_split: analysis::yield_split(&runs),
        runs,
        notes: notes.into_iter().map(String::from).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disturbed_rounds_are_run_again_once_at_most_half_as_many_again() {
        let rec = |round: usize, disturbed: bool| super::super::model::RunRecord {
            disturbed: disturbed.then(|| "steal".to_string()),
            ..super::super::analysis::tests::record(round)
        };
        // Workload 0: rounds 1 and 3 of 4 disturbed (both layouts of round 1): two more
        // rounds, numbered 4 and 5; workload 1: none.
        let records = vec![
            vec![rec(0, false), rec(1, true), rec(1, true), rec(3, true)],
            vec![rec(0, false), rec(1, false)],
        ];
        let extra = repeats(&records, 2, 4);
        let rounds: Vec<(usize, usize)> = extra.iter().map(|s| (s.subject, s.round)).collect();
        assert_eq!(rounds, [(0, 4), (0, 4), (0, 5), (0, 5)]);
        // Never more than half the rounds again: 5 of 5 disturbed gives 3.
        let all: Vec<_> = (0..5).map(|r| rec(r, true)).collect();
        assert_eq!(repeats(&[all], 1, 5).len(), 3);
    }

    #[test]
    fn each_workloads_layouts_run_in_counterbalanced_order() {
        // Two workloads, three layouts, four rounds: round 1 runs one-per-core, all, pairs
        // (0 1 2) for each workload, round 2 the other way round, round 3 rotated.
        let o = run_order(2, 3, 4);
        assert_eq!(o.len(), 24);
        let layouts = |round: usize, subject: usize| -> Vec<usize> {
            o.iter()
                .filter(|s| s.round == round && s.subject == subject)
                .map(|s| s.layout)
                .collect()
        };
        assert_eq!(layouts(0, 0), [0, 1, 2]);
        assert_eq!(layouts(1, 0), [2, 1, 0]);
        assert_eq!(layouts(2, 1), [1, 2, 0]);
        assert_eq!(layouts(3, 1), [0, 2, 1]);
        // A workload's runs of a round are back to back, positions 1, 2, 3.
        for chunk in o.chunks(3) {
            assert!(
                chunk
                    .iter()
                    .all(|s| s.round == chunk[0].round && s.subject == chunk[0].subject)
            );
            assert_eq!(
                chunk.iter().map(|s| s.position).collect::<Vec<_>>(),
                [1, 2, 3]
            );
        }
        // One-per-core (0) does not always run before all (1): in rounds 2 and 3 it runs after.
        let before = (0..4)
            .filter(|&r| {
                let l = layouts(r, 0);
                l.iter().position(|&x| x == 0) < l.iter().position(|&x| x == 1)
            })
            .count();
        assert_eq!(before, 2);
    }
}
