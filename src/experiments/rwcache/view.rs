//! rwcache's view: everything that turns its model into tables and sentences — the
//! terminal text ([`text`]), the study section's settings and table ([`settings`],
//! [`rows`]), the verdict lines and notes the model keeps ([`lines`], [`notes`]), and the
//! export document ([`document`]). Pure.

use super::model::{
    BeforeAfter, Best, Caution, Note, ReadCost, RwcacheReport, RwcacheSection, SchemeResult,
};
use crate::conclusion::{
    Answer, Finding, PhaseName, SectionCtx, StudySection, WorkloadClass, not_answered,
};
use crate::render::blocks::Block;
use crate::render::export::{Document, Section};
use crate::render::{self, NONE, Table, count, ns_figure, si, thousands};
use crate::rwcache::SchemeKind;
use crate::stats::{Effect, Thresholds};

/// The phase that fills this section; results.json names it `"rwcache"`.
pub const PHASE: PhaseName = PhaseName::new("rwcache");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Read-mostly cache under reader/writer schemes (rwcache)";

// ---------------------------------------------------------------------------------------
// The terminal.

/// The end-of-run text.
pub fn text(r: &RwcacheReport) -> String {
    let mut o = header(r);
    let titled = |o: &mut String, (title, t): (String, Table)| {
        o.push_str(&format!("\n== {title} ==\n"));
        o.push_str(&t.text());
    };
    titled(&mut o, schemes(r));
    titled(&mut o, lock_stats(r));
    for b in &r.before_after {
        titled(&mut o, before_after(b));
        if let Some(l) = before_after_ratio(b) {
            o.push_str(&format!("{l}\n"));
        }
    }
    if let Some(t) = read_cost(r) {
        titled(&mut o, t);
    }
    o.push_str(&counters_text(r));
    o.push_str("\nVerdict:\n");
    for v in verdict(r) {
        o.push_str(&format!("  {v}\n"));
    }
    for n in &r.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    if r.results.iter().any(|s| !s.pinning_ok) {
        o.push_str("warning: a thread was seen outside its pinned CPU\n");
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::view::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    o
}

/// Each scheme's counters (all threads summed, median over runs); empty when no run
/// counted.
fn counters_text(r: &RwcacheReport) -> String {
    use crate::counters::view as counters;
    let counts = || r.results.iter().map(|x| x.counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = counters::any_hardware(counts());
    let mut table = Table::with_header(
        ["THREADS", "SCHEME"]
            .map(String::from)
            .into_iter()
            .chain(counters::header(hw))
            .collect::<Vec<_>>(),
    );
    for x in &r.results {
        table.push(
            [x.threads.to_string(), x.scheme.to_string()]
                .into_iter()
                .chain(counters::cells(x.counters.as_ref(), hw))
                .collect(),
        );
    }
    let mut o = String::from("\n== counters (all threads summed, median over runs) ==\n");
    o.push_str(&table.text());
    if let Some(n) = counters::multiplexing_note(counts()) {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

/// What ran: the table, the runs, the placement.
fn header(r: &RwcacheReport) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "rwcache: {} entries ({} slots, {}-slot shards), {} per request, write ratio {}, {} of {:.1} s per scheme, placement {}\n",
        thousands(r.table.entries as u64),
        thousands(r.slots as u64),
        r.shard_slots,
        count(r.table.lookups, "lookup"),
        r.table.write_ratio,
        count(r.repeat, "run"),
        r.duration_ns as f64 / 1e9,
        r.placement
    ));
    if let Some(u) = &r.scope {
        o.push_str(&format!("threads {}\n", u));
    }
    if r.table.work_ns > 0 {
        o.push_str(&format!(
            "busy work outside the lock: {} ns per request\n",
            r.table.work_ns
        ));
    }
    o
}

/// Requests, CPU and CPU in the lock per scheme and thread count, then the reference.
pub fn schemes(r: &RwcacheReport) -> (String, Table) {
    let pct = |x: f64| render::percent_figure(x, 1);
    let mut table = Table::new(&[
        "THREADS",
        "SCHEME",
        "CPUS",
        "REQ/S",
        "±MAD",
        "LOOKUPS/S",
        "CPU%",
        "CPU NS/REQ",
        "LOCK NS/REQ",
        "LOCK %CPU",
        "WAIT %CPU",
    ]);
    for s in &r.results {
        table.push(vec![
            s.threads.to_string(),
            s.scheme.to_string(),
            s.cpus.to_string(),
            render::or_dash(s.requests_per_sec.map(|x| x.median), si),
            render::or_dash(s.requests_per_sec.map(|x| x.mad), si),
            si(s.lookups_per_sec),
            pct(s.cpu_share),
            ns_figure(s.cpu_ns_per_request),
            render::or_dash(s.lock_cpu_ns_per_request, ns_figure),
            render::or_dash(s.lock_cpu_share.map(|x| x.median), pct),
            pct(s.wait_cpu_share),
        ]);
    }
    if let Some(x) = &r.reference {
        table.push(vec![
            x.threads.to_string(),
            format!("{} (no lock: reference)", x.scheme),
            x.cpus.to_string(),
            render::or_dash(x.requests_per_sec.map(|s| s.median), si),
            render::or_dash(x.requests_per_sec.map(|s| s.mad), si),
            "".into(),
            pct(x.cpu_share),
            render::or_dash(x.cpu_ns_per_request.map(|s| s.median), ns_figure),
            "".into(),
            "".into(),
            "".into(),
        ]);
    }
    ("requests and CPU in the lock".into(), table)
}

/// Read and write lock stats per scheme and thread count.
pub fn lock_stats(r: &RwcacheReport) -> (String, Table) {
    let mut table = Table::new(&[
        "THREADS",
        "SCHEME",
        "R ACQ",
        "R COLL",
        "R SPINS",
        "R SPINS/COLL",
        "R BACKOFFS",
        "W ACQ",
        "W COLL",
        "W SPINS",
        "W BACKOFFS",
        "SLEEP",
        "W WAIT P99",
        "W WAIT MAX",
        "RETRIES",
    ]);
    for s in &r.results {
        let v = s.spins_visible;
        let hide = |x: u64| if v { thousands(x) } else { "-".into() };
        table.push(vec![
            s.threads.to_string(),
            s.scheme.to_string(),
            thousands(s.reads.acquisitions),
            thousands(s.reads.collisions),
            hide(s.reads.spins),
            if v {
                format!("{:.0}", s.reads.spins_per_collision)
            } else {
                "-".into()
            },
            hide(s.reads.backoffs),
            thousands(s.writes.acquisitions),
            thousands(s.writes.collisions),
            hide(s.writes.spins),
            hide(s.writes.backoffs),
            if v {
                render::duration_ns((s.reads.sleep_ns + s.writes.sleep_ns) as f64)
            } else {
                "-".into()
            },
            render::duration_ns(s.writer_wait_p99_ns as f64),
            render::duration_ns(s.writer_wait_max_ns as f64),
            if s.scheme == SchemeKind::SeqLock {
                thousands(s.read_retries)
            } else {
                "-".into()
            },
        ]);
    }
    (
        "lock stats (totals over runs; R = reads, W = writes)".into(),
        table,
    )
}

/// `spin` → `rwspin` at one thread count.
pub fn before_after(b: &BeforeAfter) -> (String, Table) {
    let mut table = Table::new(&["", "% CPU", "% CPU IN LOCK", "REQUESTS/S", "CPU NS/REQ"]);
    let row = |x: &super::model::BeforeAfterRow, when: &str| {
        vec![
            format!("{} ({when})", x.scheme),
            format!("{:.1}", x.cpu_pct),
            render::or_dash(x.lock_cpu_pct, |x| format!("{x:.1}")),
            si(x.requests_per_sec),
            ns_figure(x.cpu_ns_per_request),
        ]
    };
    table.rows = vec![
        row(&b.before, "before"),
        row(&b.after, "after"),
        vec![
            "change".into(),
            format!("{:+.1} pts", b.after.cpu_pct - b.before.cpu_pct),
            render::or_dash(b.lock_cpu_change_pts, |x| format!("{x:+.1} pts")),
            format!("{:+.1} %", b.requests_change_pct),
            format!("{:+.1} %", b.cpu_per_request_change_pct),
        ],
    ];
    (
        format!(
            "before/after at {} (as SQL Server 2016 RTM → CU2)",
            count(b.threads, "thread")
        ),
        table,
    )
}

/// What rwcache has always printed for a ratio against its ±2 % band: `faster`, `slower`,
/// `no difference` (inside the band or straddling its edge; the stored word cannot tell).
fn lead_word(e: Effect) -> String {
    match e {
        Effect::Gain => "faster".into(),
        Effect::Loss | Effect::SmallLoss => "slower".into(),
        Effect::NoEffect => "no difference".into(),
        Effect::Inconclusive => format!(
            "inconclusive, the interval reaches into the {} band",
            render::band(super::analysis::NOISE)
        ),
    }
}

/// A ratio's effect against rwcache's ±2 % band, from its interval. The stored word
/// (`lead_words`) cannot tell a tie from an interval across the band's edge, so the
/// sentence is read from the interval, which is stored too: the same before and after a
/// re-render.
fn effect_of(c: &crate::stats::Ci) -> Effect {
    crate::stats::classify(c.low, c.high, Thresholds::band(super::analysis::NOISE))
}

/// `requests/s ratio 1.125 (95 % CI 1.100–1.150): faster`, when the runs gave an interval.
fn before_after_ratio(b: &BeforeAfter) -> Option<String> {
    let (c, _) = (b.requests_ratio?, b.verdict?);
    let v = effect_of(&c);
    Some(format!(
        "requests/s ratio {:.3} ({} {:.3}–{:.3}): {}",
        c.estimate,
        crate::render::ci_label(c.confidence),
        c.low,
        c.high,
        lead_word(v)
    ))
}

/// Lock CPU per lookup and requests/s per thread across thread counts; None unless more
/// than one thread count ran.
pub fn read_cost(r: &RwcacheReport) -> Option<(String, Table)> {
    if !r.read_cost.iter().any(|c| c.by_threads.len() > 1) {
        return None;
    }
    let mut threads: Vec<usize> = r
        .read_cost
        .iter()
        .flat_map(|c| c.by_threads.iter().map(|x| x.threads))
        .collect();
    threads.sort_unstable();
    threads.dedup();
    let mut head = vec!["SCHEME".to_string(), "SHARED LINE".into()];
    for t in &threads {
        head.push(format!("NS @{t}"));
        head.push(format!("REQ/S/THR @{t}"));
    }
    head.push("SCALING".into());
    let mut table = Table::with_header(head);
    for c in &r.read_cost {
        let mut row = vec![
            c.scheme.to_string(),
            if c.shared_reader_line { "yes" } else { "no" }.into(),
        ];
        for t in &threads {
            match c.by_threads.iter().find(|x| x.threads == *t) {
                Some(x) => {
                    row.push(render::or_dash(x.lock_cpu_ns_per_lookup, ns_figure));
                    row.push(si(x.requests_per_sec_per_thread));
                }
                None => {
                    row.push("-".into());
                    row.push("-".into());
                }
            }
        }
        row.push(render::or_dash(c.scaling, |x| format!("{x:.2}×")));
        table.push(row);
    }
    Some((
        "read-side cost: lock CPU ns per lookup (by subtraction), requests/s per thread".into(),
        table,
    ))
}

// ---------------------------------------------------------------------------------------
// The study's section.

/// The verdict lines, derived from the results as the model's `verdict` field stores them.
pub fn verdict(r: &RwcacheReport) -> Vec<String> {
    lines(
        &r.results,
        &r.before_after,
        &r.read_cost,
        r.best.as_ref(),
        r.caution.as_ref(),
    )
}

/// The settings in one sentence.
pub fn settings(r: &RwcacheReport) -> String {
    format!(
        "A hash table of {} entries; each request looks up {} keys, {} of requests replace an entry; threads placed `{}`; {} run(s) of {} per scheme and thread count after {} warm-up, interleaved. Lock time sampled with the {} clock.",
        thousands(r.table.entries as u64),
        r.table.lookups,
        r.table.write_ratio,
        r.placement,
        r.repeat,
        render::duration_ns(r.duration_ns as f64),
        render::duration_ns(r.warmup_ns as f64),
        r.clock
    )
}

/// One row per scheme × threads, as the study's chart shows them.
pub fn rows(w: &RwcacheSection) -> Table {
    let mut t = Table::new(&["SCHEME", "THREADS", "REQUESTS/S", "CPU IN LOCK"]);
    for r in &w.rows {
        t.rows.push(vec![
            r.scheme.to_string(),
            r.threads.to_string(),
            render::summary_cell(&r.requests_per_sec),
            r.lock_cpu_share
                .map(|x| render::percent(x, 1))
                .unwrap_or_else(|| NONE.into()),
        ]);
    }
    t
}

// ---------------------------------------------------------------------------------------
// Exports.

/// Raw numbers, one row per scheme × thread count (and the `none` reference): the CSV
/// export.
pub fn data(r: &RwcacheReport) -> Table {
    let mut t = Table::new(&[
        "scheme",
        "threads",
        "cpus",
        "runs",
        "requests_per_sec",
        "requests_per_sec_mad",
        "lookups_per_sec",
        "cpu_share",
        "cpu_ns_per_request",
        "lock_cpu_ns_per_request",
        "lock_cpu_share",
        "wait_cpu_share",
        "read_acquisitions",
        "read_collisions",
        "write_acquisitions",
        "write_collisions",
        "writer_wait_p99_ns",
        "writer_wait_max_ns",
        "read_retries",
        "shared_reader_line",
        "reference",
    ]);
    let raw = |x: Option<f64>| x.map_or_else(|| NONE.to_string(), |x| x.to_string());
    for s in &r.results {
        t.push(vec![
            s.scheme.to_string(),
            s.threads.to_string(),
            s.cpus.to_string(),
            s.runs.to_string(),
            raw(s.requests_per_sec.map(|x| x.median)),
            raw(s.requests_per_sec.map(|x| x.mad)),
            s.lookups_per_sec.to_string(),
            s.cpu_share.to_string(),
            s.cpu_ns_per_request.to_string(),
            raw(s.lock_cpu_ns_per_request),
            raw(s.lock_cpu_share.map(|x| x.median)),
            s.wait_cpu_share.to_string(),
            s.reads.acquisitions.to_string(),
            s.reads.collisions.to_string(),
            s.writes.acquisitions.to_string(),
            s.writes.collisions.to_string(),
            s.writer_wait_p99_ns.to_string(),
            s.writer_wait_max_ns.to_string(),
            s.read_retries.to_string(),
            s.shared_reader_line.to_string(),
            "false".into(),
        ]);
    }
    if let Some(x) = &r.reference {
        let none = || NONE.to_string();
        t.push(vec![
            x.scheme.to_string(),
            x.threads.to_string(),
            x.cpus.to_string(),
            x.runs.to_string(),
            raw(x.requests_per_sec.map(|s| s.median)),
            raw(x.requests_per_sec.map(|s| s.mad)),
            none(),
            x.cpu_share.to_string(),
            raw(x.cpu_ns_per_request.map(|s| s.median)),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            none(),
            "true".into(),
        ]);
    }
    t
}

/// The export document: the model, the raw rows, and the terminal's tables.
pub fn document(r: &RwcacheReport) -> Document {
    let section = |(heading, t): (String, Table), text: Vec<String>| Section {
        heading,
        text,
        table: Some(t),
    };
    let mut sections = vec![Section {
        heading: "Runs".into(),
        text: header(r).lines().map(String::from).collect(),
        table: None,
    }];
    sections.push(section(schemes(r), Vec::new()));
    sections.push(section(lock_stats(r), Vec::new()));
    for b in &r.before_after {
        sections.push(section(
            before_after(b),
            before_after_ratio(b).into_iter().collect(),
        ));
    }
    if let Some(t) = read_cost(r) {
        sections.push(section(t, Vec::new()));
    }
    sections.push(Section {
        heading: "Verdict".into(),
        text: verdict(r)
            .iter()
            .map(|v| v.trim().to_string())
            .chain(r.notes.iter().map(|n| format!("Note: {n}")))
            .collect(),
        table: None,
    });
    Document {
        title: "smtlab rwcache".into(),
        json: serde_json::to_value(r).unwrap_or(serde_json::Value::Null),
        data: data(r),
        sections,
    }
}

/// Notes on the results: the machine, how the schemes were measured, and runs that lost
/// their CPUs. `reference_cpu_ns_per_request` is the `none` reference's median, when it ran.
pub fn notes(
    hypervisor: bool,
    results: &[SchemeResult],
    schemes: &[SchemeKind],
    reference_cpu_ns_per_request: Option<f64>,
) -> Vec<String> {
    let mut notes: Vec<Note> = Vec::new();
    if hypervisor {
        notes.push(Note::Caveat(crate::render::Caveat::Hypervisor {
            kind: None,
        }));
    }
    if results.iter().any(|r| r.oversubscribed) {
        notes.push(Note::Oversubscribed);
    }
    if schemes.iter().any(|k| !k.spins_visible()) {
        notes.push(Note::SpinsHidden);
    }
    if let Some(reference_ns) = reference_cpu_ns_per_request {
        notes.push(Note::BySubtraction { reference_ns });
    }
    notes.into_iter().map(String::from).collect()
}

/// The verdict: the `spin` → `rwspin` change at each thread count, what a shared reader
/// line costs, scaling from 1 thread, and the best scheme.
pub fn lines(
    results: &[SchemeResult],
    ba: &[BeforeAfter],
    cost: &[ReadCost],
    best: Option<&Best>,
    caution: Option<&Caution>,
) -> Vec<String> {
    let mut out: Vec<String> = caution.map(Caution::to_string).into_iter().collect();
    out.extend(ba.iter().map(before_after_line));
    // The published case, once, and as what it is: another system's figures, not these runs.
    if !ba.is_empty() {
        out.push(
            "for comparison, not measured here: SQL Server 2016 CU2 made the same change \
             (spinlock → reader/writer spinlock) and gained 12.5 % batches/s; its spinlock had \
             taken 31.8 % of the CPU"
                .into(),
        );
    }
    let most = results.iter().map(|r| r.threads).max().unwrap_or(0);
    if most > 1 {
        out.extend(read_cost_lines(cost, most));
    }
    if let Some(b) = best {
        out.extend(best_lines(b));
    }
    out
}

fn before_after_line(b: &BeforeAfter) -> String {
    format!(
        "spin → rwspin at {}: requests/s {:+.1} %{}, {}, CPU per request {:+.1} %",
        count(b.threads, "thread"),
        b.requests_change_pct,
        b.requests_ratio
            .map(|c| format!(
                " ({} {:+.1}…{:+.1} %)",
                crate::render::ci_label(c.confidence),
                (c.low - 1.0) * 100.0,
                (c.high - 1.0) * 100.0
            ))
            .unwrap_or_default(),
        match (
            b.before.lock_cpu_pct,
            b.after.lock_cpu_pct,
            b.lock_cpu_change_pts
        ) {
            (Some(x), Some(y), Some(d)) =>
                format!("CPU in the lock {x:.1} % → {y:.1} % ({d:+.1} pts)"),
            _ => "CPU in the lock not measured".to_string(),
        },
        b.cpu_per_request_change_pct
    )
}

/// Lock CPU per lookup at the most threads, schemes whose readers write a shared line
/// against those whose readers do not; then requests/s at the most threads ÷ 1 thread.
fn read_cost_lines(cost: &[ReadCost], most: usize) -> Vec<String> {
    let mut out = Vec::new();
    let at = |shared: bool| -> Vec<String> {
        cost.iter()
            .filter(|c| c.shared_reader_line == shared && c.scheme != SchemeKind::Spin)
            .filter_map(|c| {
                let hi = c.by_threads.iter().find(|x| x.threads == most)?;
                let lo = c
                    .by_threads
                    .iter()
                    .find(|x| x.threads == 1)
                    .and_then(|l| l.lock_cpu_ns_per_lookup);
                Some(format!(
                    "{} {:.1} ns{}",
                    c.scheme,
                    hi.lock_cpu_ns_per_lookup?,
                    lo.map(|l| format!(" (1 thread: {l:.1})"))
                        .unwrap_or_default()
                ))
            })
            .collect()
    };
    let (s, p) = (at(true), at(false));
    if !s.is_empty() && !p.is_empty() {
        out.push(format!(
            "lock CPU per lookup (by subtraction) at {most} threads — a shared reader line: {}; private or no reader writes: {}",
            s.join(", "),
            p.join(", ")
        ));
    }
    let scal: Vec<String> = cost
        .iter()
        .filter_map(|c| c.scaling.map(|x| format!("{} {:.2}×", c.scheme, x)))
        .collect();
    if !scal.is_empty() {
        out.push(format!(
            "requests/s at {most} threads ÷ 1 thread: {}",
            scal.join(", ")
        ));
    }
    out
}

/// The best scheme overall, then per thread count with its lead over the runner-up: ahead
/// when the bootstrap CI clears the noise band, within noise (a tie) when it lies inside
/// it, inconclusive when it reaches across the band's edge.
fn best_lines(b: &Best) -> Vec<String> {
    let mut out = vec![format!(
        "best overall: {} (geometric mean {:.0} % of the best at each thread count)",
        b.overall,
        b.overall_score * 100.0
    )];
    for p in &b.per_threads {
        out.push(format!(
            "  at {}: {} {} requests/s{}",
            count(p.threads, "thread"),
            p.scheme,
            crate::render::si(p.requests_per_sec),
            match (p.runner_up, p.over_runner_up, p.verdict) {
                (Some(r), Some(c), Some(_)) => format!(
                    ", {:.2}× {r} ({} {:.2}–{:.2}: {})",
                    c.estimate,
                    crate::render::ci_label(c.confidence),
                    c.low,
                    c.high,
                    match effect_of(&c) {
                        Effect::Gain => "ahead".to_string(),
                        Effect::NoEffect => "within noise".to_string(),
                        // The interval reaches past the band's edge: neither a lead nor a tie.
                        _ => format!(
                            "inconclusive, the interval reaches into the {} band",
                            render::band(super::analysis::NOISE)
                        ),
                    }
                ),
                (Some(r), _, _) => format!(", ahead of {r} (one run: no CI)"),
                _ => String::new(),
            }
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------
// The study's finding and answer row.

/// The answer row for a read-mostly cache: rwcache does not compare one thread per core
/// with both siblings, so it never answers; the reason says why. `no_smt` and `phase` are
/// the study's reasons for a machine without siblings and for a phase that gave no section.
pub fn answer(w: Option<&RwcacheSection>, smt: bool, no_smt: &str, phase: &str) -> Answer {
    let class = WorkloadClass::ReadMostlyCache;
    let section = Some(PHASE);
    if !smt {
        return not_answered(class, no_smt.to_string(), section);
    }
    if w.is_none() {
        return not_answered(class, phase.to_string(), section);
    }
    not_answered(
        class,
        "rwcache compared schemes at 1 thread and at every usable CPU; it did not compare one \
         thread per core with both siblings on the same cores"
            .into(),
        section,
    )
}

/// What rwcache showed, for the study's findings: the best scheme at the most threads, the
/// `spin` → `rwspin` change, and what readers writing a shared line cost.
pub fn finding(w: &RwcacheSection) -> Finding {
    let top = w.rows.iter().map(|r| r.threads).max().unwrap_or(1);
    let at = |s: SchemeKind| w.rows.iter().find(|r| r.threads == top && r.scheme == s);
    let mut obs = Vec::new();
    if let Some(b) = w.result.best.as_ref().map(|b| b.overall)
        && let Some(row) = at(b)
    {
        obs.push(format!(
            "best at {}: `{b}` {} requests/s",
            count(top, "thread"),
            crate::render::pm_n(&row.requests_per_sec)
        ));
    }
    if let (Some(s), Some(rw)) = (at(SchemeKind::Spin), at(SchemeKind::RwSpin)) {
        obs.push(format!(
            "`spin` {} → `rwspin` {} ({:+.1} %, medians)",
            render::si_sig(s.requests_per_sec.median, 3),
            render::si_sig(rw.requests_per_sec.median, 3),
            (rw.requests_per_sec.median / s.requests_per_sec.median - 1.0) * 100.0
        ));
    }
    let best = |want: bool| {
        w.result
            .results
            .iter()
            .filter(|x| x.threads == top && x.shared_reader_line == want)
            .filter_map(|x| x.requests_per_sec.map(|s| s.median))
            .fold(0.0, f64::max)
    };
    let (with, without) = (best(true), best(false));
    let meaning = if with > 0.0 && without > 0.0 {
        let ratio = with / without;
        obs.push(format!(
            "at {} the best scheme whose readers write a shared line reached {}× the best without one (medians; no interval)",
            count(top, "thread"),
            render::sig(ratio, 3)
        ));
        if ratio < Thresholds::SLOWDOWN.loss_below {
            format!(
                "The best scheme whose readers write a shared line (the lock word) reached only {}× the best whose readers write nothing shared (per-CPU slots, seqlock, RCU-style snapshots) — medians without an interval, so indicative; fix the lock before judging HT for such a workload.",
                render::sig(ratio, 3)
            )
        } else {
            format!(
                "Whether readers that write a shared line cost throughput is not established at this thread count: the medians differ by {} %, and no interval was computed.",
                render::sig(((1.0 - ratio) * 100.0).abs(), 2)
            )
        }
    } else {
        "Too few schemes ran to compare readers that write a shared line with readers that do not."
            .into()
    };
    // A disturbed run says so where its meaning is read, not only in a note far below.
    let meaning = match &w.result.caution {
        Some(c) => format!(
            "{}. {meaning}",
            c.to_string().replacen("caution:", "Caution:", 1)
        ),
        None => meaning,
    };
    Finding {
        topic: "read-mostly cache (rwcache)".into(),
        observed: obs.join("; ") + ".",
        meaning,
        evidence: Vec::new(),
    }
}

/// The study's rwcache section: what was run, requests per second by scheme and thread
/// count, the row table, and the verdict lines and notes.
impl StudySection for RwcacheSection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        let mut b = vec![
            Block::Intro(settings(&self.result)),
            Block::Chart(schemes_chart(self)),
            Block::Table(rows(self)),
        ];
        b.extend(
            verdict(&self.result)
                .into_iter()
                .chain(self.result.notes.iter().cloned())
                .map(Block::Note),
        );
        b
    }

    fn finding(&self, _smt: bool) -> Option<Finding> {
        Some(finding(self))
    }
}

/// Requests per second, grouped by thread count, one bar per scheme.
fn schemes_chart(w: &RwcacheSection) -> String {
    use render::svg::{Bar, Group};
    let mut schemes: Vec<SchemeKind> = Vec::new();
    let mut threads: Vec<usize> = Vec::new();
    for row in &w.rows {
        if !schemes.contains(&row.scheme) {
            schemes.push(row.scheme);
        }
        if !threads.contains(&row.threads) {
            threads.push(row.threads);
        }
    }
    let groups: Vec<Group> = threads
        .iter()
        .map(|&t| Group {
            caption: format!("{t} thread{}", if t == 1 { "" } else { "s" }),
            bars: w
                .rows
                .iter()
                .filter(|x| x.threads == t)
                .map(|x| Bar {
                    label: String::new(),
                    value: x.requests_per_sec.median,
                    range: Some((x.requests_per_sec.min, x.requests_per_sec.max)),
                    series: schemes.iter().position(|s| *s == x.scheme).unwrap_or(0),
                    highlight: false,
                    tooltip: format!(
                        "{} at {t} threads: {} requests/s",
                        x.scheme,
                        render::summary_cell(&x.requests_per_sec)
                    ),
                })
                .collect(),
        })
        .collect();
    render::svg::bar_chart(
        "rwcache-schemes",
        "Requests per second by scheme and thread count",
        "requests/s",
        &groups,
        &schemes.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        None,
        false,
    )
}

#[cfg(test)]
mod tests {
    use super::super::analysis::{best, tests::result};
    use super::*;

    #[test]
    fn a_tie_reads_within_noise_and_a_lead_ahead() {
        let tie = [
            result(SchemeKind::Spin, 1, &[8_990_000, 8_950_000, 9_050_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000, 9_100_000, 8_950_000]),
        ];
        let l = lines(&tie, &[], &[], best(&tie).as_ref(), None);
        assert!(l[0].starts_with("best overall: rwspin"), "{l:?}");
        assert!(
            l[1].contains("1.00× spin") && l[1].ends_with(": within noise)"),
            "{l:?}"
        );
        let lead = [
            result(SchemeKind::Spin, 1, &[8_000_000; 3]),
            result(SchemeKind::RwSpin, 1, &[9_000_000; 3]),
        ];
        let l = lines(&lead, &[], &[], best(&lead).as_ref(), None);
        assert!(
            l[1].contains("1.12× spin") && l[1].ends_with(": ahead)"),
            "{l:?}"
        );
        let one = [
            result(SchemeKind::Spin, 1, &[8_000_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000]),
        ];
        let l = lines(&one, &[], &[], best(&one).as_ref(), None);
        assert!(l[1].ends_with("ahead of spin (one run: no CI)"), "{l:?}");
    }

    /// A lead whose interval reaches into the ±2 % band (1.47×, 95 % CI 1.01–2.55, as a
    /// loaded machine measured it) is inconclusive, not a tie: no evidence of a lead is
    /// not evidence of none.
    #[test]
    fn a_lead_whose_interval_reaches_the_band_is_inconclusive_not_a_tie() {
        // The word stored in the file, `no-difference`, reads back as inconclusive for a
        // tie too: the sentence comes from the stored interval, so a re-render says the same.
        let b = |estimate, low, high| Best {
            overall: SchemeKind::RwSpin,
            overall_score: 1.0,
            per_threads: vec![super::super::model::BestAt {
                threads: 2,
                scheme: SchemeKind::RwSpin,
                requests_per_sec: 365_240.0,
                runner_up: Some(SchemeKind::Spin),
                over_runner_up: Some(crate::stats::Ci {
                    estimate,
                    low,
                    high,
                    confidence: 0.95,
                }),
                verdict: Some(Effect::Inconclusive),
            }],
        };
        let l = best_lines(&b(1.47, 1.01, 2.55));
        assert!(
            l[1].ends_with(
                "1.47× spin (95 % CI 1.01–2.55: inconclusive, the interval reaches into the ±2 % band)"
            ),
            "{l:?}"
        );
        assert!(best_lines(&b(1.0, 0.99, 1.01))[1].ends_with(": within noise)"));
        assert!(best_lines(&b(1.1, 1.05, 1.15))[1].ends_with(": ahead)"));
    }

    /// The published SQL Server figures are said once, as not measured here, not as a
    /// parenthesis on every before/after row as if each row had measured them.
    #[test]
    fn the_sql_server_aside_is_said_once() {
        let rs = [
            result(SchemeKind::Spin, 1, &[8_000_000, 8_100_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000, 9_100_000]),
            result(SchemeKind::Spin, 2, &[15_000_000, 15_100_000]),
            result(SchemeKind::RwSpin, 2, &[17_000_000, 17_100_000]),
        ];
        let ba = super::super::analysis::before_after(&rs);
        assert_eq!(ba.len(), 2);
        let l = lines(&rs, &ba, &[], None, None);
        let asides: Vec<&String> = l.iter().filter(|x| x.contains("SQL Server")).collect();
        assert_eq!(asides.len(), 1, "{l:#?}");
        assert!(
            asides[0].starts_with("for comparison, not measured here:"),
            "{l:#?}"
        );
    }

    /// A run where pinned threads were on their CPUs only 42–85 % of the time and the
    /// hypervisor took up to 13 %: the verdict opens with the caution, with those figures,
    /// and the study's finding on rwcache says it where its meaning is read.
    #[test]
    fn a_disturbed_run_s_verdict_opens_with_the_caution_and_its_figures() {
        let mut rs = [
            result(SchemeKind::Spin, 1, &[8_000_000, 8_100_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000, 9_100_000]),
            result(SchemeKind::Spin, 2, &[15_000_000, 15_100_000]),
            result(SchemeKind::RwSpin, 2, &[17_000_000, 17_100_000]),
        ];
        rs[0].cpu_share = 0.42;
        rs[2].cpu_share = 0.85;
        rs[3].steal_share_max = Some(0.13);
        let c = super::super::analysis::caution(&rs).expect("a caution");
        assert_eq!((c.starved_results, c.results), (2, 4));
        assert_eq!(
            (c.on_cpu_low, c.on_cpu_high, c.steal_max),
            (Some(0.42), Some(0.85), Some(0.13))
        );
        let ba = super::super::analysis::before_after(&rs);
        let l = lines(&rs, &ba, &[], best(&rs).as_ref(), Some(&c));
        assert_eq!(
            l[0],
            "caution: other work shared these CPUs: pinned threads were on their CPUs only \
             42–85 % of the time in 2 of 4 results and the hypervisor took up to 13 % of their \
             time (steal), so the rates are low and noisy and the comparisons below may not \
             hold on a quiet machine; rerun there before acting on them"
        );
        assert!(l[1].starts_with("spin → rwspin at 1 thread"), "{l:#?}");
        // Stored with the result, and read by the study from there.
        let mut r = fake_run(false);
        r.caution = Some(c);
        assert!(verdict(&r)[0].starts_with("caution: "), "{:?}", verdict(&r));
        assert!(
            text(&r).contains("Verdict:\n  caution: other work shared these CPUs"),
            "{}",
            text(&r)
        );
        let w = RwcacheSection {
            rows: Vec::new(),
            result: r,
        };
        let f = finding(&w);
        assert!(
            f.meaning.starts_with("Caution: other work shared these CPUs: pinned threads were on their CPUs only 42–85 %"),
            "{}",
            f.meaning
        );
        let j = serde_json::to_value(&w.result).unwrap();
        assert_eq!(j["caution"]["on_cpu_low"], 0.42);
        assert_eq!(j["caution"]["steal_max"], 0.13);
        // Quiet runs: no caution, and none stored.
        let quiet = fake_run(false);
        assert_eq!(super::super::analysis::caution(&quiet.results), None);
        assert!(
            serde_json::to_value(&quiet)
                .unwrap()
                .get("caution")
                .is_none()
        );
    }

    #[test]
    fn notes_say_what_distorts_or_was_not_measured() {
        let mut starved = result(SchemeKind::Spin, 1, &[8_000_000]);
        starved.cpu_share = 0.5;
        // Starved threads are the verdict's caution, not a note.
        let n = notes(
            true,
            &[starved],
            &[SchemeKind::Spin, SchemeKind::RwLock],
            Some(99.94),
        );
        assert_eq!(n.len(), 3, "{n:?}");
        assert!(n[0].contains("hypervisor"));
        assert!(n[1].contains("rwlock and parking_lot-rw"));
        assert!(n[2].contains("− 99.9 ns of `none`"), "{}", n[2]);
        let quiet = notes(
            false,
            &[result(SchemeKind::Spin, 1, &[1])],
            &[SchemeKind::Spin],
            None,
        );
        assert!(quiet.is_empty(), "{quiet:?}");
    }

    fn fake_run(requests_missing: bool) -> RwcacheReport {
        use super::super::{RwcacheConfig, TableSpec};
        use crate::engine::{FakeEngine, RunSpec};
        use crate::placement::{Request, Scope};
        let cfg = RwcacheConfig::new(
            vec![SchemeKind::Spin, SchemeKind::RwSpin],
            vec![1, 2],
            Request::Spread,
            Scope::Package,
            TableSpec::default(),
            RunSpec::new(
                std::time::Duration::ZERO,
                std::time::Duration::from_millis(100),
            )
            .unwrap(),
            1,
            1,
        )
        .unwrap();
        let topo = crate::topology::fixture::topology(2, 2, false);
        let mut r =
            super::super::run(&FakeEngine::new(5), &topo, &cfg, &mut |_, _, _, _| {}).unwrap();
        if requests_missing {
            r.results[0].requests_per_sec = None;
        }
        r
    }

    #[test]
    fn requests_not_measured_print_as_a_hyphen_and_stay_null_in_json() {
        let r = fake_run(true);
        let text = text(&r);
        let row = text
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["1", "spin"]))
            .unwrap_or_else(|| panic!("a row for spin at 1 thread in\n{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        // THREADS SCHEME CPUS REQ/S ±MAD: the CPU list is one word.
        assert_eq!(&cells[3..5], ["-", "-"], "REQ/S and ±MAD in `{row}`");
        let j = serde_json::to_value(&r).unwrap();
        assert!(j["results"][0]["requests_per_sec"].is_null());
    }

    /// The CSV has one row per scheme × thread count (and the reference), with raw numbers
    /// a CSV reader parses back; the Markdown has the terminal's tables.
    #[test]
    fn exports_write_csv_and_markdown_that_parse_back() {
        use crate::render::export::Exports;
        let r = fake_run(true);
        let d = tempfile::tempdir().unwrap();
        let ex = Exports {
            json: None,
            csv: Some(d.path().join("r.csv")),
            markdown: Some(d.path().join("r.md")),
        };
        ex.check().unwrap();
        ex.write(|| document(&r)).unwrap();
        let mut rd = csv::Reader::from_path(d.path().join("r.csv")).unwrap();
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        assert_eq!(
            rows.len(),
            r.results.len() + usize::from(r.reference.is_some())
        );
        // Not measured: an empty field, not a dash or a zero.
        assert_eq!(&rows[0][col("requests_per_sec")], "");
        for (row, s) in rows.iter().zip(&r.results).skip(1) {
            let v: f64 = row[col("requests_per_sec")].parse().unwrap();
            assert_eq!(Some(v), s.requests_per_sec.map(|x| x.median));
            assert_eq!(row[col("threads")].parse::<usize>().unwrap(), s.threads);
        }
        let md = std::fs::read_to_string(d.path().join("r.md")).unwrap();
        assert!(md.starts_with("# smtlab rwcache\n"), "{md}");
        assert!(md.contains("## requests and CPU in the lock"), "{md}");
        assert!(md.contains("| THREADS | SCHEME | CPUS |"), "{md}");
    }
}
