//! `top`'s renderers over [`TopSample`]: the terminal table (one line per core, busiest
//! first), one NDJSON line, and the Prometheus text exposition format
//! (prometheus.io/docs/instrumenting/exposition_formats: `# HELP`, `# TYPE`, then
//! `name{label="value"} number` lines) for node_exporter's textfile collector.

use super::model::TopSample;
use crate::render::blocks::Block;
use crate::render::export::Document;
use crate::render::{
    Align, Table, fixed, percent_bounds_figure, percent_figure, raw, utc_time_of_day,
};
use std::fmt::Write;

/// One interval as a document: the lines said once per run (with `header`), when and
/// from what it was read, the machine in one line, one row per core, the notes, and with
/// `--pid` that process's threads under their own heading. `smtlab top` draws it each
/// interval; `--export-markdown` writes every interval's.
pub fn blocks(s: &TopSample, header: bool) -> Vec<Block> {
    let mut b = Vec::new();
    if header {
        if !s.smt {
            b.push(Block::Intro(
                "one thread per core online (no SMT, or switched off): per-core = per-CPU".into(),
            ));
        }
        if s.smt
            && !s.tracefs.used
            && let Some(r) = &s.tracefs.reason
        {
            b.push(Block::Intro(format!(
                "per-core bounds from /proc/stat only: {r}"
            )));
        }
        if s.smt {
            b.push(Block::Intro(format!("SMT yield: {}", s.smt_yield.note)));
        }
    }
    b.push(Block::Intro(format!("{}  {}", when(s), s.source)));
    b.push(Block::Intro(s.machine.summary.clone()));
    b.push(Block::Table(cores_table(s)));
    b.extend(
        s.notes
            .iter()
            .filter(|n| !n.starts_with("one thread per core"))
            .map(|n| Block::Note(format!("note: {n}"))),
    );
    if let Some(p) = &s.pid {
        b.push(Block::Heading(pid_heading(p)));
        b.push(Block::Table(pid_table(p)));
    }
    b
}

/// `14:03:07.250  1.00 s`: when the interval ended and how long it was.
fn when(s: &TopSample) -> String {
    format!(
        "{}  {} s",
        utc_time_of_day(s.time_unix_ms),
        fixed(s.interval_ns as f64 / 1e9, 2)
    )
}

/// One row per core, busiest first: per-CPU busy, the core's busy and both-busy bounds
/// (exact when traced), and the share of the core used. Numbers and ranges (`62–81`,
/// `3 100`) right, the header too; the CPU lists left.
pub fn cores_table(s: &TopSample) -> Table {
    let mut order: Vec<usize> = (0..s.cores.len()).collect();
    let busy = |i: usize| {
        let c = &s.cores[i];
        c.traced
            .map(|t| t.one_busy_share + t.both_busy_share)
            .unwrap_or(c.busy_max_share)
            + c.busy_min_share * 1e-3
    };
    order.sort_by(|&a, &b| busy(b).total_cmp(&busy(a)).then(a.cmp(&b)));
    let cpu_busy = |cpu: u32| {
        s.cpus
            .iter()
            .find(|c| c.cpu == cpu)
            .and_then(|c| c.busy_share)
            .map_or("-".to_string(), |x| percent_figure(x, 0))
    };
    let mut table;
    if s.smt {
        let traced = s.cores.iter().any(|c| c.traced.is_some());
        let two = if s.threads_per_core > 2 {
            "2+ busy %"
        } else {
            "both busy %"
        };
        let mut head: Vec<String> = ["core", "cpus", "cpu busy %", "core busy %", two]
            .iter()
            .map(|h| h.to_string())
            .collect();
        if traced {
            head.push(if s.threads_per_core > 2 {
                "idle/one/2+/all % (traced)".into()
            } else {
                "idle/one/both % (traced)".into()
            });
        }
        head.push("core used %".into());
        table = Table::with_header(head);
        for i in order {
            let c = &s.cores[i];
            let per: Vec<String> = c.cpus.iter().map(cpu_busy).collect();
            let mut r = vec![
                c.core.to_string(),
                c.cpus.to_string(),
                per.join(" "),
                percent_bounds_figure(c.busy_min_share, c.busy_max_share),
                percent_bounds_figure(c.both_busy_min_share, c.both_busy_max_share),
            ];
            if traced {
                r.push(match c.traced {
                    Some(t) if s.threads_per_core > 2 => format!(
                        "{}/{}/{}/{}",
                        percent_figure(t.idle_share, 0),
                        percent_figure(t.one_busy_share, 0),
                        percent_figure(t.both_busy_share, 0),
                        percent_figure(t.all_busy_share, 0)
                    ),
                    Some(t) => format!(
                        "{}/{}/{}",
                        percent_figure(t.idle_share, 0),
                        percent_figure(t.one_busy_share, 0),
                        percent_figure(t.both_busy_share, 0)
                    ),
                    None => "-".into(),
                });
            }
            r.push(percent_bounds_figure(c.used_min_share, c.used_max_share));
            table.push(r);
        }
    } else {
        table = Table::new(&["core", "cpu", "busy %"]);
        for i in order {
            let c = &s.cores[i];
            table.push(vec![
                c.core.to_string(),
                c.cpus.to_string(),
                percent_bounds_figure(c.busy_min_share, c.busy_max_share),
            ]);
        }
    }
    for col in 0..table.header.len() {
        let side = if col == 1 { Align::Left } else { Align::Right };
        table = table.align(col, side);
    }
    table
}

/// Raw shares (0–1), one row per CPU and one per core of each interval, told apart by
/// `level`: the CSV export.
pub fn data(samples: &[TopSample]) -> Table {
    let mut data = Table::new(&[
        "interval",
        "time_unix_ms",
        "interval_ns",
        "level",
        "cpu",
        "core",
        "cpus",
        "busy_share",
        "steal_share",
        "busy_min_share",
        "busy_max_share",
        "both_busy_min_share",
        "both_busy_max_share",
        "traced_idle_share",
        "traced_one_busy_share",
        "traced_both_busy_share",
        "traced_all_busy_share",
        "used_min_share",
        "used_max_share",
    ]);
    for (i, s) in samples.iter().enumerate() {
        let when = [
            (i + 1).to_string(),
            s.time_unix_ms.to_string(),
            s.interval_ns.to_string(),
        ];
        for c in &s.cpus {
            let mut row = when.to_vec();
            row.extend([
                "cpu".into(),
                c.cpu.to_string(),
                c.core.to_string(),
                c.cpu.to_string(),
                raw(c.busy_share),
                raw(c.steal_share),
            ]);
            data.push(row);
        }
        for c in &s.cores {
            let mut row = when.to_vec();
            row.extend([
                "core".into(),
                raw(None),
                c.core.to_string(),
                c.cpus.to_string(),
                raw(None),
                raw(None),
                raw(Some(c.busy_min_share)),
                raw(Some(c.busy_max_share)),
                raw(Some(c.both_busy_min_share)),
                raw(Some(c.both_busy_max_share)),
                raw(c.traced.map(|t| t.idle_share)),
                raw(c.traced.map(|t| t.one_busy_share)),
                raw(c.traced.map(|t| t.both_busy_share)),
                raw(c.traced.map(|t| t.all_busy_share)),
                raw(Some(c.used_min_share)),
                raw(Some(c.used_max_share)),
            ]);
            data.push(row);
        }
    }
    data
}

/// The export of a bounded run (`--once` or `--count N`), every interval in it: the JSON
/// list of the intervals' models (each what `--json` prints as one line); CSV rows of raw
/// shares (0–1), one per CPU and one per core of each interval, told apart by `level`
/// ([`data`]); and per interval a Markdown section of its [`blocks`].
pub fn export(samples: &[TopSample]) -> Document {
    let mut blocks_all = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        blocks_all.push(Block::Heading(format!("Interval {}: {}", i + 1, when(s))));
        blocks_all.extend(blocks(s, i == 0));
    }
    let title = match (samples.first(), samples.len()) {
        (None, _) => "smtlab top: no interval finished".to_string(),
        (Some(s), 1) => format!(
            "smtlab top: {} ({})",
            utc_time_of_day(s.time_unix_ms),
            s.source
        ),
        (Some(s), n) => format!(
            "smtlab top: {n} intervals from {} ({})",
            utc_time_of_day(s.time_unix_ms),
            s.source
        ),
    };
    Document::of(&title, &samples, data(samples), &blocks_all)
}

/// `pid 4242 (postgres): 3 threads, run times from sched_switch`.
fn pid_heading(p: &super::model::PidReport) -> String {
    let how = if p.method == "tracefs" {
        "run times from sched_switch".to_string()
    } else {
        format!(
            "sampled {} times from /proc (a thread's CPU is seen only while it runs)",
            p.samples
        )
    };
    format!(
        "pid {}{}: {}, {how}{}",
        p.pid,
        p.comm
            .as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        crate::render::count(p.threads.len(), "thread"),
        if p.gone {
            "; it exited during the interval"
        } else {
            ""
        }
    )
}

/// One row per thread of `--pid`: its CPU share, the CPUs it ran on and the threads that
/// shared a core with it.
fn pid_table(p: &super::model::PidReport) -> Table {
    let mut table = Table::new(&["tid", "name", "cpu %", "ran on", "shared a core with"]);
    for t in &p.threads {
        let cpus: Vec<String> = t
            .cpus
            .iter()
            .map(|c| match (c.ran_ns, c.samples) {
                (Some(ns), _) => format!("{} ({})", c.cpu, crate::render::duration_ns(ns as f64)),
                (_, Some(n)) => format!("{} ({n}×)", c.cpu),
                _ => c.cpu.to_string(),
            })
            .collect();
        let shared: Vec<String> = t
            .shared_core_with
            .iter()
            .map(|o| match (o.overlap_ns, o.samples) {
                (Some(ns), _) => format!(
                    "{} on core {} ({})",
                    o.tid,
                    o.core,
                    crate::render::duration_ns(ns as f64)
                ),
                (_, Some(n)) => format!("{} on core {} ({n}×)", o.tid, o.core),
                _ => o.tid.to_string(),
            })
            .collect();
        table.push(vec![
            t.tid.to_string(),
            t.comm.clone(),
            t.cpu_share.map_or("-".into(), |x| percent_figure(x, 0)),
            if cpus.is_empty() {
                "-".into()
            } else {
                cpus.join(", ")
            },
            if shared.is_empty() {
                "-".into()
            } else {
                shared.join(", ")
            },
        ]);
    }
    table
}

/// One NDJSON line.
pub fn json_line(s: &TopSample) -> String {
    serde_json::to_string(s).expect("the model serialises") + "\n"
}

/// The Prometheus text exposition of one interval.
pub fn prometheus(s: &TopSample) -> String {
    let mut out = String::new();
    let mut family = |name: &str, help: &str, samples: Vec<(String, f64)>| {
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (labels, v) in samples {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    let cpu_label = |cpu: u32, core: usize| format!("{{cpu=\"{cpu}\",core=\"{core}\"}}");
    let core_label =
        |c: &super::model::CoreRow| format!("{{core=\"{}\",cpus=\"{}\"}}", c.core, c.cpus);
    family(
        "smtlab_cpu_busy_ratio",
        "Share of the interval the logical CPU was busy, from /proc/stat.",
        s.cpus
            .iter()
            .filter_map(|c| Some((cpu_label(c.cpu, c.core), c.busy_share?)))
            .collect(),
    );
    family(
        "smtlab_cpu_steal_ratio",
        "Share of the interval the hypervisor ran something else on this vCPU.",
        s.cpus
            .iter()
            .filter_map(|c| Some((cpu_label(c.cpu, c.core), c.steal_share?)))
            .collect(),
    );
    let per_core = |f: &dyn Fn(&super::model::CoreRow) -> f64| -> Vec<(String, f64)> {
        s.cores.iter().map(|c| (core_label(c), f(c))).collect()
    };
    family(
        "smtlab_core_busy_min_ratio",
        "Lower bound on the share of the interval at least one sibling of the core was busy: the busiest sibling's share.",
        per_core(&|c| c.busy_min_share),
    );
    family(
        "smtlab_core_busy_max_ratio",
        "Upper bound on the share of the interval at least one sibling was busy: min(1, sum of the siblings' shares).",
        per_core(&|c| c.busy_max_share),
    );
    family(
        "smtlab_core_both_busy_min_ratio",
        "Lower bound on the share of the interval two or more siblings were busy at once.",
        per_core(&|c| c.both_busy_min_share),
    );
    family(
        "smtlab_core_both_busy_max_ratio",
        "Upper bound on the share of the interval two or more siblings were busy at once.",
        per_core(&|c| c.both_busy_max_share),
    );
    let mut traced = Vec::new();
    for c in &s.cores {
        if let Some(t) = c.traced {
            for (state, v) in [
                ("idle", t.idle_share),
                ("one", t.one_busy_share),
                ("both", t.both_busy_share),
            ] {
                traced.push((
                    format!(
                        "{{core=\"{}\",cpus=\"{}\",state=\"{state}\"}}",
                        c.core, c.cpus
                    ),
                    v,
                ));
            }
        }
    }
    family(
        "smtlab_core_traced_ratio",
        "Share of the interval the core had no, one, or two or more siblings busy, from sched_switch events.",
        traced,
    );
    family(
        "smtlab_core_traced_all_busy_ratio",
        "Share of the interval every sibling of a core of more than two threads was busy (part of state=\"both\" above), from sched_switch events.",
        s.cores
            .iter()
            .filter(|c| c.cpus.len() > 2)
            .filter_map(|c| Some((core_label(c), c.traced?.all_busy_share)))
            .collect(),
    );
    family(
        "smtlab_core_used_min_ratio",
        "Lower bound on the share of the core's capacity used at the SMT yield.",
        per_core(&|c| c.used_min_share),
    );
    family(
        "smtlab_core_used_max_ratio",
        "Upper bound on the share of the core's capacity used at the SMT yield.",
        per_core(&|c| c.used_max_share),
    );
    let m = &s.machine;
    family(
        "smtlab_logical_busy_ratio",
        "Mean busy share of the online logical CPUs: what top and mpstat report.",
        vec![(String::new(), m.logical_busy_share)],
    );
    family(
        "smtlab_headroom_modelled",
        "1 when the capacity left is modelled; 0 when cores of more than two threads had some but not all busy for long enough that no yield gives their throughput (smtlab_headroom_cores is then left out).",
        vec![(String::new(), if m.headroom_modelled { 1.0 } else { 0.0 })],
    );
    family(
        "smtlab_headroom_cores",
        "Capacity left in cores' worth (a core with every sibling busy is 1), lower and upper bound.",
        if m.headroom_modelled {
            vec![
                ("{bound=\"min\"}".into(), m.headroom_cores_min),
                ("{bound=\"max\"}".into(), m.headroom_cores_max),
            ]
        } else {
            Vec::new()
        },
    );
    family(
        "smtlab_smt_yield",
        crate::render::prometheus::SMT_YIELD_HELP,
        vec![(
            format!(
                "{{source=\"{}\"}}",
                if s.smt_yield.source == "assumed" {
                    "assumed"
                } else {
                    "file"
                }
            ),
            s.smt_yield.value,
        )],
    );
    family(
        "smtlab_interval_seconds",
        "Length of the sampled interval.",
        vec![(String::new(), s.interval_ns as f64 / 1e9)],
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top::model::TraceInput;
    use crate::top::model::tests::one_busy_sibling;

    #[test]
    fn exports_parse_back() {
        let s = one_busy_sibling(TraceInput::Off("not root".into()));
        let dir = tempfile::tempdir().unwrap();
        let e = crate::render::export::Exports {
            json: None,
            csv: Some(dir.path().join("t.csv")),
            markdown: Some(dir.path().join("t.md")),
        };
        e.write(|| export(std::slice::from_ref(&s))).unwrap();
        let mut rd = ::csv::Reader::from_path(dir.path().join("t.csv")).unwrap();
        let head = rd.headers().unwrap().clone();
        let col = |name: &str| head.iter().position(|h| h == name).unwrap();
        let rows: Vec<::csv::StringRecord> = rd.records().map(Result::unwrap).collect();
        let level = |l: &str| rows.iter().filter(|r| &r[col("level")] == l).count();
        assert_eq!(level("cpu"), s.cpus.len());
        assert_eq!(level("core"), s.cores.len());
        let core = rows.iter().find(|r| &r[col("level")] == "core").unwrap();
        let busy: f64 = core[col("busy_max_share")].parse().unwrap();
        assert_eq!(busy, s.cores[0].busy_max_share);
        assert_eq!(&core[col("interval")], "1");
        assert_eq!(
            &core[col("busy_share")],
            "",
            "a core row has no per-CPU share"
        );
        let md = std::fs::read_to_string(dir.path().join("t.md")).unwrap();
        assert!(md.starts_with("# smtlab top"), "{md}");
        assert!(md.contains("| core | cpus |"), "{md}");
    }
}
