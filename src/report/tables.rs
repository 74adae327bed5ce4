//! The report's tables as plain rows of text, shared by the HTML and Markdown renderers so
//! both say the same thing. Pure.

use super::Report;
use crate::render::si;
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
        kv("Memory", crate::render::bytes(b));
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

/// A noise band as `±5 %` (`±2.5 %`).
pub(crate) use crate::render::band;

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
