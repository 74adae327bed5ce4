//! The report's tables as plain rows of text, shared by the HTML and Markdown renderers so
//! both say the same thing. Pure.

use super::Report;
use crate::render::{duration_ns, si, thousands};
use crate::stats::{Ci, Summary};

pub use crate::render::{NONE, Table};

/// `5.2 M ± 0.1 M` (median ± MAD), or `–`.
pub fn summary(s: &Summary) -> String {
    if !s.median.is_finite() {
        return "–".into();
    }
    if s.mad.is_finite() && s.mad > 0.0 {
        format!("{} ± {}", si(s.median), si(s.mad))
    } else {
        si(s.median)
    }
}

/// `0.52× (0.48–0.55)` or `–`.
pub fn ci(c: Option<&Ci>) -> String {
    match c {
        Some(c) if c.estimate.is_finite() => {
            format!("{:.2}× ({:.2}–{:.2})", c.estimate, c.low, c.high)
        }
        _ => "–".into(),
    }
}

/// `0.98× (95 % CI 0.95–1.01): no effect`, or `–`.
pub fn comparison(c: Option<&crate::stats::Comparison>) -> String {
    match c {
        Some(c) if c.estimate.is_finite() => format!(
            "{}× ({}): {}",
            crate::stats::ratio_text(c.estimate),
            c.interval_text(),
            c.effect
        ),
        _ => "–".into(),
    }
}

/// A ratio or index with two decimals, `–` when not finite.
pub fn num2(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "–".into()
    }
}

/// Seconds with one decimal.
pub fn secs(ns: u64) -> String {
    format!("{:.1} s", ns as f64 / 1e9)
}

/// `YYYY-MM-DD HH:MM:SS UTC` from Unix seconds (proleptic Gregorian, no time zone data).
pub fn utc(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Machine facts as key/value rows.
pub fn machine(r: &Report) -> Table {
    let m = &r.machine;
    let mut t = Table::new(&["", ""]);
    let mut kv = |k: &str, v: String| t.rows.push(vec![k.to_string(), v]);
    if let Some(h) = &m.hostname {
        kv("Host", h.clone());
    }
    kv("CPU", m.cpu_model.clone());
    if let Some(u) = &m.microcode {
        kv("Microcode", u.clone());
    }
    kv(
        "CPUs",
        format!(
            "{} online, usable {}; {} cores, {} package(s), {} L3 group(s)",
            m.online_cpus, m.usable_cpus, m.cores, m.packages, m.l3_groups
        ),
    );
    kv("SMT", r.smt.sentence.clone());
    kv("Hypervisor", m.hypervisor.clone());
    kv("Kernel", m.kernel.clone());
    kv("Frequency governor", m.frequency_governor.clone());
    kv("Hardware counters", m.hardware_counters.clone());
    if let Some(b) = m.memory_bytes {
        kv("Memory", crate::topology::render::human_bytes(b));
    }
    let p = &r.provenance;
    kv(
        "smtlab",
        format!(
            "{} (git {}), {} build",
            p.smtlab_version, p.git_revision, p.build_profile
        ),
    );
    kv("Command", p.command.clone());
    if let Some(j) = &r.slurm {
        kv("Slurm", j.sentence());
    }
    kv(
        "Started",
        format!("{}, took {}", utc(p.started_unix_s), secs(p.wall_ns)),
    );
    kv(
        "Budget",
        format!(
            "{}{} (estimated {}); database {}",
            secs(r.study.budget_ns),
            if r.study.quick { " (--quick)" } else { "" },
            secs(r.study.estimate_ns),
            r.study.db
        ),
    );
    t
}

/// The `SLURM_*` variables the study ran with, one row each; None outside Slurm.
pub fn slurm_variables(r: &Report) -> Option<Table> {
    let j = r.slurm.as_ref()?;
    let mut t = Table::new(&["VARIABLE", "VALUE"]);
    for (k, v) in &j.variables {
        t.rows.push(vec![k.clone(), v.clone()]);
    }
    Some(t)
}

/// One row per phase.
pub fn phases(r: &Report) -> Table {
    let mut t = Table::new(&["PHASE", "STATUS", "TOOK", "ESTIMATE", "NOTE"]);
    for p in &r.phases {
        t.rows.push(vec![
            p.phase.to_string(),
            p.status.label().into(),
            secs(p.wall_ns),
            secs(p.estimate_ns),
            p.reason.clone().unwrap_or_default(),
        ]);
    }
    t
}

/// oltp: one row per layout.
pub fn oltp(o: &super::OltpSection) -> Table {
    let mut t = Table::new(&[
        "LAYOUT",
        "ROUNDS",
        "INSERTS/S",
        "MIN–MAX",
        "COMMIT P99",
        "ROWS",
    ]);
    for s in &o.summary {
        t.rows.push(vec![
            s.placement.to_string(),
            s.inserts_per_sec.n.to_string(),
            summary(&s.inserts_per_sec),
            format!(
                "{}–{}",
                si(s.inserts_per_sec.min),
                si(s.inserts_per_sec.max)
            ),
            crate::render::latency_ns(s.commit_latency_p99_ns),
            if s.rows_verified {
                "verified".into()
            } else {
                "MISMATCH".into()
            },
        ]);
    }
    for s in &o.result.skipped {
        t.rows.push(vec![
            s.placement.to_string(),
            "0".into(),
            "skipped".into(),
            "–".into(),
            "–".into(),
            s.reason.clone(),
        ]);
    }
    t
}

/// oltp: every run.
pub fn oltp_runs(o: &super::OltpSection) -> Table {
    let mut t = Table::new(&[
        "LAYOUT",
        "ROUND",
        "INSERTS/S",
        "ROWS",
        "CPUS",
        "INVOL. SWITCHES",
    ]);
    for r in &o.result.runs {
        t.rows.push(vec![
            r.placement.to_string(),
            r.round.to_string(),
            thousands(r.inserts_per_sec.round().max(0.0) as u64),
            thousands(r.rows_committed),
            r.per_thread
                .iter()
                .map(|t| t.cpus.clone())
                .collect::<Vec<_>>()
                .join(" "),
            thousands(r.involuntary_ctx_switches),
        ]);
    }
    t
}

/// yield's settings and thresholds in one paragraph.
pub fn smt_yield_settings(y: &super::YieldSection) -> String {
    let r = &y.result;
    let p = &r.plan;
    let layouts: Vec<String> = p
        .layouts
        .iter()
        .map(|l| {
            format!(
                "`{}` ({} threads on {} cores)",
                l.layout,
                l.threads,
                l.cores.len()
            )
        })
        .collect();
    format!(
        "Each workload ran as {} on the same {} cores{}; {} round(s) of {} after {} warm-up, interleaved with the layout order counterbalanced from round to round. SMT yield = throughput of `all` ÷ `one-per-core`: a gain above {:.2}×, a loss below {:.2}×, no effect when the whole interval is within ±{:.0} %. Shared-core speed = a thread's rate in `pairs` ÷ in `one-per-core`: a loss below {:.2}×. Intervals are Student-t intervals of the per-round log ratios (the ratio shown is their geometric mean); with fewer than {} rounds there is no interval and nothing is called.",
        layouts.join(", "),
        p.cores,
        p.scope
            .as_ref()
            .map(|u| format!(" within {} (CPUs {})", u.label, u.cpus))
            .unwrap_or_default(),
        p.repeat,
        duration_ns(p.duration_ns as f64),
        duration_ns(p.warmup_ns as f64),
        1.0 + r.yield_thresholds.noise,
        r.yield_thresholds.effective_loss_below(),
        r.yield_thresholds.noise * 100.0,
        r.shared_core_thresholds.effective_loss_below(),
        crate::stats::MIN_RUNS_FOR_CI
    )
}

/// yield: one row per workload.
pub fn smt_yield(y: &super::YieldSection) -> Table {
    use crate::experiments::smt_yield::Layout;
    let mut t = Table::new(&[
        "WORKLOAD",
        "ONE-PER-CORE /S",
        "ALL /S",
        "SMT YIELD",
        "INTERVAL",
        "CLASS",
        "SHARED-CORE SPEED",
        "INTERVAL",
        "CLASS",
        "P99 ONE-PER-CORE → ALL",
    ]);
    // IPC columns only when some workload counted cycles and instructions.
    let ipc = y.result.workloads.iter().any(|w| w.yield_split.is_some());
    if ipc {
        t.header.push("IPC ONE-PER-CORE → ALL".into());
        t.header.push("YIELD = IPC × CYCLES/S ÷ INSTR/OP".into());
    }
    let ratio = |r: &Option<crate::experiments::smt_yield::LayoutRatio>| -> [String; 3] {
        match r {
            Some(r) if r.comparison.estimate.is_finite() => [
                format!("{}×", crate::stats::ratio_text(r.comparison.estimate)),
                r.comparison.interval_text(),
                r.comparison.effect.to_string(),
            ],
            _ => ["–".into(), "–".into(), "not measured".into()],
        }
    };
    for w in &y.result.workloads {
        let rate = |l: Layout| {
            w.layout(l)
                .and_then(|s| s.ops_per_sec.as_ref())
                .map(|s| format!("{} {}", summary(s), w.unit))
                .unwrap_or_else(|| "–".into())
        };
        let p99 = |l: Layout| w.layout(l).and_then(|s| s.latency_p99_ns);
        let mut row = vec![
            w.workload.clone(),
            rate(Layout::OnePerCore),
            rate(Layout::All),
        ];
        row.extend(ratio(&w.smt_yield));
        row.extend(ratio(&w.shared_core_speed));
        row.push(match (p99(Layout::OnePerCore), p99(Layout::All)) {
            (Some(a), Some(b)) => format!("{} → {}", duration_ns(a), duration_ns(b)),
            _ => "not timed".into(),
        });
        if ipc {
            match &w.yield_split {
                Some(x) => {
                    row.push(format!(
                        "{} → {}",
                        num2(x.ipc_one_per_core),
                        num2(x.ipc_all)
                    ));
                    row.push(format!(
                        "{} × {} ÷ {}",
                        num2(x.ipc_ratio),
                        num2(x.cycles_per_sec_ratio),
                        num2(x.instructions_per_op_ratio)
                    ));
                }
                None => row.extend(["–".to_string(), "–".to_string()]),
            }
        }
        t.rows.push(row);
    }
    t
}

/// A value of the command in its unit, to `digits` significant figures: a duration for
/// `ns`, else the number and unit.
fn command_value(x: f64, unit: &str, digits: u32) -> String {
    if unit == "ns" {
        duration_ns(x)
    } else {
        format!("{} {unit}", crate::render::si_sig(x, digits))
    }
}

/// compare's settings in one paragraph: the command, how runs were compared, how the
/// rounds were sized.
pub fn compare_settings(c: &super::CompareSection) -> String {
    use crate::experiments::compare::render;
    let r = &c.result;
    let sized = match c.sized_to_ns {
        Some(ns) => format!(
            "the rounds were sized to fill {} of the study's budget",
            duration_ns(ns as f64)
        ),
        None => "`--runs` fixed the rounds".to_string(),
    };
    format!(
        "`{}`{}: {}; {sized}. Each placement's median has a {:.0} % percentile bootstrap interval (indicative with fewer than {} runs); each placement is compared with the first round by round (the geometric mean of the per-round speed ratios, with its interval), called faster or slower only when the whole interval lies beyond {}, no difference when it lies inside; the answer row for your command is the same computation.",
        render::shell_words(&r.command),
        r.scope
            .as_ref()
            .map(|u| format!(" (placements within {}, CPUs {})", u.label, u.cpus))
            .unwrap_or_default(),
        render::how(r),
        r.confidence * 100.0,
        crate::stats::BOOTSTRAP_MIN_RUNS,
        band(r.noise_threshold)
    )
}

/// A noise band as `±5 %` (`±2.5 %`).
pub(crate) fn band(noise: f64) -> String {
    let p = noise * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("±{p:.0} %")
    } else {
        format!("±{p:.1} %")
    }
}

/// compare: one row per placement.
pub fn compare(c: &super::CompareSection) -> Table {
    let r = &c.result;
    let mut t = Table::new(&[
        "PLACEMENT",
        "CPUS",
        "CORES",
        "RUNS",
        "MEDIAN",
        "INTERVAL OF THE MEDIAN",
        "± MAD",
        "SPEED VS FIRST",
        "CALL",
    ]);
    for (i, p) in r.placements.iter().enumerate() {
        let m = c.medians.iter().find(|m| m.label == p.label);
        let unit = m.map_or("ns", |m| m.unit.as_str());
        let summary = if m.is_some_and(|m| m.basis == "metric") {
            p.metric
        } else {
            p.wall_time_ns
        };
        let (speed, call) = match (i, r.comparisons.iter().find(|x| x.placement == p.label)) {
            (0, _) => ("1×".to_string(), "baseline".to_string()),
            (_, Some(x)) => (
                format!(
                    "{}× ({})",
                    crate::stats::ratio_text(x.speedup.estimate),
                    x.speedup.interval_text(),
                ),
                x.call.to_string(),
            ),
            _ => ("–".into(), "–".into()),
        };
        t.rows.push(vec![
            p.label.clone(),
            p.cpus.to_string(),
            p.cores.to_string(),
            p.runs.len().to_string(),
            m.and_then(|m| m.median)
                .map_or("–".into(), |ci| command_value(ci.estimate, unit, 3)),
            m.and_then(|m| m.median).map_or("–".into(), |ci| {
                format!(
                    "{} – {}",
                    command_value(ci.low, unit, 3),
                    command_value(ci.high, unit, 3)
                )
            }),
            summary.map_or("–".into(), |s| command_value(s.mad, unit, 2)),
            speed,
            call,
        ]);
    }
    t
}

/// Why the report has no IPC column or per-core CPI table, in one sentence; None when
/// cycles and instructions were counted somewhere (then the tables show them) or when
/// neither lockscan nor yield ran.
pub fn counters_not_measured(r: &super::Report) -> Option<String> {
    let lockscan = r.lockscan.as_ref().map(|l| &l.result);
    let yld = r.smt_yield.as_ref().map(|y| &y.result);
    if lockscan.is_none() && yld.is_none() {
        return None;
    }
    let measured = lockscan.is_some_and(|l| l.results.iter().any(|s| !s.core_cpi.is_empty()))
        || yld.is_some_and(|y| y.workloads.iter().any(|w| w.yield_split.is_some()));
    if measured {
        return None;
    }
    let status = lockscan
        .and_then(|l| l.counters.as_ref())
        .or_else(|| yld.and_then(|y| y.counters.as_ref()));
    let why = match status {
        _ if r.synthetic => "a synthetic report counts nothing".to_string(),
        None => "no counters were read (`--counters off`, or a report from before smtlab counted)"
            .to_string(),
        Some(st) => st
            .lines()
            .into_iter()
            .find(|l| l.contains("hardware") || l.contains("cycles") || l.contains("instructions"))
            .unwrap_or_else(|| "no run counted both cycles and instructions".into()),
    };
    Some(format!("IPC and per-core CPI: not measured ({why})."))
}

/// The memory section's facts as key/value rows (`mem report`'s headline values).
pub fn memory(m: &super::MemorySection) -> Table {
    use crate::mem::render::{bytes, signed_bytes};
    let r = &m.report;
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let mut t = Table::new(&["", ""]);
    let mut kv = |k: &str, v: String| t.rows.push(vec![k.to_string(), v]);
    let o = &r.overcommit;
    kv(
        "Overcommit",
        o.mode.map_or_else(
            || na("/proc/sys/vm/overcommit_memory"),
            |mode| format!("{} (vm.overcommit_memory = {})", mode.label(), mode.value()),
        ),
    );
    kv(
        "CommitLimit",
        match (o.commit_limit_bytes, &o.limit_formula) {
            (Some(l), Some(f)) => format!("{} ({f})", bytes(l)),
            (Some(l), None) => bytes(l),
            (None, _) => na("/proc/meminfo CommitLimit"),
        },
    );
    kv(
        "Committed_AS, headroom",
        match (o.committed_as_bytes, o.headroom_bytes) {
            (Some(c), Some(h)) => format!("{}; headroom {}", bytes(c), signed_bytes(h)),
            (Some(c), None) => bytes(c),
            (None, _) => na("/proc/meminfo Committed_AS"),
        },
    );
    kv(
        "MemTotal, MemAvailable",
        format!(
            "{}, {}",
            b(r.memory.total_bytes, "/proc/meminfo MemTotal"),
            b(r.memory.available_bytes, "/proc/meminfo MemAvailable")
        ),
    );
    kv(
        "Swap, swappiness",
        format!(
            "{}, {}",
            b(r.swap.total_bytes, "/proc/meminfo SwapTotal"),
            r.swap
                .swappiness
                .map_or_else(|| na("/proc/sys/vm/swappiness"), |s| s.to_string())
        ),
    );
    kv(
        "THP enabled, defrag",
        format!(
            "{}, {}",
            r.thp
                .enabled
                .clone()
                .unwrap_or_else(|| na("/sys/kernel/mm/transparent_hugepage/enabled")),
            r.thp
                .defrag
                .clone()
                .unwrap_or_else(|| na("/sys/kernel/mm/transparent_hugepage/defrag"))
        ),
    );
    kv(
        "hugetlb pages",
        if r.hugetlb.sizes.is_empty() {
            na("/sys/kernel/mm/hugepages")
        } else {
            r.hugetlb
                .sizes
                .iter()
                .map(|s| {
                    format!(
                        "{}: {} total, {} free",
                        bytes(s.page_bytes),
                        s.total.map_or("?".into(), |v| v.to_string()),
                        s.free.map_or("?".into(), |v| v.to_string())
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        },
    );
    let hard = r
        .cgroup
        .limits
        .iter()
        .find(|l| l.file == "memory.max" || l.file == "memory.limit_in_bytes");
    kv(
        "cgroup memory limit",
        match (&r.cgroup.version, hard) {
            (Some(v), Some(l)) => format!(
                "{} ({v} {})",
                l.limit_bytes.map_or("none".into(), bytes),
                l.file
            ),
            _ => r.cgroup.note.clone().unwrap_or_else(|| "none found".into()),
        },
    );
    if let Some(p) = r.oom.top.first() {
        kv(
            "OOM killer's first pick",
            format!(
                "{} (pid {}): oom_score {}, RSS {}",
                p.name,
                p.pid,
                p.oom_score,
                bytes(p.rss_bytes)
            ),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn numbers_never_print_nan() {
        assert_eq!(num2(f64::NAN), "–");
        assert_eq!(num2(f64::INFINITY), "–");
        assert_eq!(ci(None), "–");
    }
}
