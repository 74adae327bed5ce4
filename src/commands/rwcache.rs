//! `smtlab rwcache`: a read-mostly metadata cache under every scheme — one line per run on
//! stderr while it goes, then the scheme table, the lock stats, the before/after table
//! (`spin` → `rwspin`, as SQL Server 2016 RTM → CU2), the read-side cost and the best
//! scheme; `--json` for the model.

use crate::engine::RealEngine;
use crate::experiments::rwcache::{self, BeforeAfter, RwcacheConfig, RwcacheReport};
use crate::render::{self, Table, si, thousands};
use crate::rwcache::SchemeKind;
use anyhow::Result;
use std::io::Write;
use std::path::PathBuf;

/// A validated `rwcache` command.
#[derive(Debug, Clone)]
pub struct RwcacheCommand {
    pub root: PathBuf,
    pub exp: RwcacheConfig,
    pub json: bool,
    /// Allows more than [`crate::limits::MAX_THREADS_PER_CPU`] threads per usable CPU.
    pub force: bool,
}

pub fn run(cfg: &RwcacheCommand, out: &mut dyn Write) -> Result<()> {
    let topo = super::topology_for_run(&cfg.root, false, false)?;
    let most = cfg.exp.threads.iter().copied().max().unwrap_or(1);
    crate::limits::per_cpu("--threads", most as u64, topo.allowed().len(), cfg.force)?;
    let json = cfg.json;
    let mut progress = |n: usize, k: SchemeKind, rep: usize, r: &crate::engine::RunResult| {
        if json {
            return;
        }
        let _ = writeln!(
            std::io::stderr().lock(),
            "[{n} thread{} / {k} / run {}] {} requests/s",
            if n == 1 { "" } else { "s" },
            rep + 1,
            si(r.ops_per_sec())
        );
    };
    let busy = crate::hygiene::preflight(&topo.allowed());
    let mut report = rwcache::run(&RealEngine, &topo, &cfg.exp, &mut progress)?;
    report.notes.extend(busy);
    super::emit(out, cfg.json, &report, human, report.interrupted)
}

fn pct(x: f64) -> String {
    format!("{:.1}", x * 100.0)
}

fn ns(x: f64) -> String {
    if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// The end-of-run text.
pub fn human(r: &RwcacheReport) -> String {
    let mut o = header(r);
    o.push_str(&schemes_table(r));
    o.push_str(&lock_stats_table(r));
    for b in &r.before_after {
        o.push_str(&before_after_table(b));
    }
    o.push_str(&read_cost_table(r));
    o.push_str(&counters_table(r));
    o.push_str("\nVerdict:\n");
    for v in &r.verdict {
        o.push_str(&format!("  {v}\n"));
    }
    for n in &r.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    if r.results.iter().any(|s| !s.pinning_ok) {
        o.push_str("warning: a thread was seen outside its pinned CPU\n");
    }
    if let Some(st) = &r.counters {
        for l in crate::counters::text::status_lines(st) {
            o.push_str(&format!("{l}\n"));
        }
    }
    o
}

/// Each scheme's counters (all threads summed, median over runs); empty when no run
/// counted.
fn counters_table(r: &RwcacheReport) -> String {
    use crate::counters::text;
    let counts = || r.results.iter().map(|x| x.counters.as_ref());
    if counts().all(|c| c.is_none()) {
        return String::new();
    }
    let hw = text::any_hardware(counts());
    let mut table = Table::with_header(
        ["THREADS", "SCHEME"]
            .map(String::from)
            .into_iter()
            .chain(text::header(hw))
            .collect::<Vec<_>>(),
    );
    for x in &r.results {
        table.push(
            [x.threads.to_string(), x.scheme.to_string()]
                .into_iter()
                .chain(text::cells(x.counters.as_ref(), hw))
                .collect(),
        );
    }
    let mut o = String::from("\n== counters (all threads summed, median over runs) ==\n");
    o.push_str(&table.text());
    if let Some(n) = text::multiplexing_note(counts()) {
        o.push_str(&format!("note: {n}\n"));
    }
    o
}

/// What ran: the table, the runs, the placement.
fn header(r: &RwcacheReport) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "rwcache: {} entries ({} slots, {}-slot shards), {} lookup{} per request, write ratio {}, {} run{} of {:.1} s per scheme, placement {}\n",
        thousands(r.table.entries as u64),
        thousands(r.slots as u64),
        r.shard_slots,
        r.table.lookups,
        if r.table.lookups == 1 { "" } else { "s" },
        r.table.write_ratio,
        r.repeat,
        if r.repeat == 1 { "" } else { "s" },
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
fn schemes_table(r: &RwcacheReport) -> String {
    let mut o = String::from("\n== requests and CPU in the lock ==\n");
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
            ns(s.cpu_ns_per_request),
            render::or_dash(s.lock_cpu_ns_per_request, ns),
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
            render::or_dash(x.cpu_ns_per_request.map(|s| s.median), ns),
            "".into(),
            "".into(),
            "".into(),
        ]);
    }
    o.push_str(&table.text());
    o
}

/// Read and write lock stats per scheme and thread count.
fn lock_stats_table(r: &RwcacheReport) -> String {
    let mut o = String::from("\n== lock stats (totals over runs; R = reads, W = writes) ==\n");
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
    o.push_str(&table.text());
    o
}

/// `spin` → `rwspin` at one thread count.
fn before_after_table(b: &BeforeAfter) -> String {
    let mut o = format!(
        "\n== before/after at {} thread{} (as SQL Server 2016 RTM → CU2) ==\n",
        b.threads,
        if b.threads == 1 { "" } else { "s" }
    );
    let mut table = Table::new(&["", "% CPU", "% CPU IN LOCK", "REQUESTS/S", "CPU NS/REQ"]);
    table.rows = vec![
        vec![
            format!("{} (before)", b.before.scheme),
            format!("{:.1}", b.before.cpu_pct),
            render::or_dash(b.before.lock_cpu_pct, |x| format!("{x:.1}")),
            si(b.before.requests_per_sec),
            ns(b.before.cpu_ns_per_request),
        ],
        vec![
            format!("{} (after)", b.after.scheme),
            format!("{:.1}", b.after.cpu_pct),
            render::or_dash(b.after.lock_cpu_pct, |x| format!("{x:.1}")),
            si(b.after.requests_per_sec),
            ns(b.after.cpu_ns_per_request),
        ],
        vec![
            "change".into(),
            format!("{:+.1} pts", b.after.cpu_pct - b.before.cpu_pct),
            render::or_dash(b.lock_cpu_change_pts, |x| format!("{x:+.1} pts")),
            format!("{:+.1} %", b.requests_change_pct),
            format!("{:+.1} %", b.cpu_per_request_change_pct),
        ],
    ];
    o.push_str(&table.text());
    if let (Some(c), Some(v)) = (b.requests_ratio, b.verdict) {
        o.push_str(&format!(
            "requests/s ratio {:.3} (95% CI {:.3}–{:.3}): {v}\n",
            c.estimate, c.low, c.high
        ));
    }
    o
}

/// Lock CPU per lookup and requests/s per thread across thread counts, when more than one
/// thread count ran.
fn read_cost_table(r: &RwcacheReport) -> String {
    let mut o = String::new();
    if r.read_cost.iter().any(|c| c.by_threads.len() > 1) {
        o.push_str(
            "\n== read-side cost: lock CPU ns per lookup (by subtraction), requests/s per thread ==\n",
        );
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
                        row.push(render::or_dash(x.lock_cpu_ns_per_lookup, ns));
                        row.push(si(x.requests_per_sec_per_thread));
                    }
                    None => {
                        row.push("-".into());
                        row.push("-".into());
                    }
                }
            }
            row.push(
                c.scaling
                    .map(|x| format!("{x:.2}×"))
                    .unwrap_or_else(|| "-".into()),
            );
            table.push(row);
        }
        o.push_str(&table.text());
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FakeEngine, RunSpec};
    use crate::experiments::rwcache::TableSpec;
    use crate::placement::{Request, Scope};
    use std::time::Duration;

    #[test]
    fn requests_not_measured_print_as_a_hyphen_and_stay_null_in_json() {
        let cfg = RwcacheConfig::new(
            vec![SchemeKind::Spin],
            vec![1],
            Request::Spread,
            Scope::Package,
            TableSpec::default(),
            RunSpec::new(Duration::ZERO, Duration::from_millis(100)),
            1,
            1,
        )
        .unwrap();
        let topo = crate::topology::fixture::topology(2, 2, false);
        let mut r = rwcache::run(&FakeEngine::new(5), &topo, &cfg, &mut |_, _, _, _| {}).unwrap();
        r.results[0].requests_per_sec = None;
        let text = human(&r);
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
}
