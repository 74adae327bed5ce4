//! The words stored in the model: plain-language verdict lines and the notes on what a
//! run could not measure or what distorts it (pure).

use super::model::{BeforeAfter, Best, ReadCost, SchemeResult};
use crate::rwcache::SchemeKind;
use crate::stats::Verdict;

/// Notes on the results: the machine, how the schemes were measured, and runs that lost
/// their CPUs. `reference_cpu_ns_per_request` is the `none` reference's median, when it ran.
pub fn notes(
    hypervisor: bool,
    results: &[SchemeResult],
    schemes: &[SchemeKind],
    reference_cpu_ns_per_request: Option<f64>,
) -> Vec<String> {
    let mut notes = Vec::new();
    if hypervisor {
        notes.push(crate::render::Caveat::Hypervisor { kind: None }.to_string());
    }
    if results.iter().any(|r| r.oversubscribed) {
        notes.push("some thread counts exceed the CPUs given: threads time-share CPUs, and a preempted lock holder stalls the spinning schemes".into());
    }
    if schemes.iter().any(|k| !k.spins_visible()) {
        notes.push("rwlock and parking_lot-rw wait inside std / parking_lot: their collisions (failed try_read/try_write) and wait times are measured, their spins and backoffs are not (shown as -)".into());
    }
    if let Some(x) = reference_cpu_ns_per_request {
        notes.push(format!(
            "CPU in the lock is found by subtraction: LOCK NS/REQ = the scheme's CPU ns per request − {} ns of `none` (the same requests with no lock, 1 thread, run in every round), floored at 0; LOCK %CPU = that ÷ the scheme's CPU ns per request (at more threads it also holds cache-line transfers and a sibling's competition for the core); WAIT %CPU = timed waits after a collision ÷ CPU time",
            fmt_ns(x)
        ));
    }
    let starved: Vec<String> = results
        .iter()
        .filter(|r| !r.oversubscribed && r.cpu_share < 0.9)
        .map(|r| format!("{}@{} {:.0} %", r.scheme, r.threads, r.cpu_share * 100.0))
        .collect();
    if !starved.is_empty() {
        notes.push(format!(
            "pinned threads were on their CPUs for less than 90 % of the run ({}): another process competed for these CPUs, so rates are low and noisy; rerun on a quiet machine",
            starved.join(", ")
        ));
    }
    notes
}

fn fmt_ns(x: f64) -> String {
    if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// The verdict: the `spin` → `rwspin` change at each thread count, what a shared reader
/// line costs, scaling from 1 thread, and the best scheme.
pub fn lines(
    results: &[SchemeResult],
    ba: &[BeforeAfter],
    cost: &[ReadCost],
    best: Option<&Best>,
) -> Vec<String> {
    let mut out: Vec<String> = ba.iter().map(before_after_line).collect();
    let most = results.iter().map(|r| r.threads).max().unwrap_or(0);
    if most > 1 {
        out.extend(read_cost_lines(cost, most));
    }
    if let Some(b) = best {
        out.extend(best_lines(b));
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn before_after_line(b: &BeforeAfter) -> String {
    format!(
        "spin → rwspin at {} thread{}: requests/s {:+.1} %{}, {}, CPU per request {:+.1} % (SQL Server 2016 CU2 made this change: +12.5 % batches/s; its spinlock had taken 31.8 % of the CPU)",
        b.threads,
        plural(b.threads),
        b.requests_change_pct,
        b.requests_ratio
            .map(|c| format!(
                " (95% CI {:+.1}…{:+.1} %)",
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
/// when the bootstrap CI clears the noise threshold, within noise (a tie) when it does not.
fn best_lines(b: &Best) -> Vec<String> {
    let mut out = vec![format!(
        "best overall: {} (geometric mean {:.0} % of the best at each thread count)",
        b.overall,
        b.overall_score * 100.0
    )];
    for p in &b.per_threads {
        out.push(format!(
            "  at {} thread{}: {} {} requests/s{}",
            p.threads,
            plural(p.threads),
            p.scheme,
            crate::render::si(p.requests_per_sec),
            match (p.runner_up, p.over_runner_up, p.verdict) {
                (Some(r), Some(c), Some(v)) => format!(
                    ", {:.2}× {r} (95% CI {:.2}–{:.2}: {})",
                    c.estimate,
                    c.low,
                    c.high,
                    if v == Verdict::Faster {
                        "ahead"
                    } else {
                        "within noise"
                    }
                ),
                (Some(r), _, _) => format!(", ahead of {r} (one run: no CI)"),
                _ => String::new(),
            }
        ));
    }
    out
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
        let l = lines(&tie, &[], &[], best(&tie).as_ref());
        assert!(l[0].starts_with("best overall: rwspin"), "{l:?}");
        assert!(
            l[1].contains("1.00× spin") && l[1].ends_with(": within noise)"),
            "{l:?}"
        );
        let lead = [
            result(SchemeKind::Spin, 1, &[8_000_000; 3]),
            result(SchemeKind::RwSpin, 1, &[9_000_000; 3]),
        ];
        let l = lines(&lead, &[], &[], best(&lead).as_ref());
        assert!(
            l[1].contains("1.12× spin") && l[1].ends_with(": ahead)"),
            "{l:?}"
        );
        let one = [
            result(SchemeKind::Spin, 1, &[8_000_000]),
            result(SchemeKind::RwSpin, 1, &[9_000_000]),
        ];
        let l = lines(&one, &[], &[], best(&one).as_ref());
        assert!(l[1].ends_with("ahead of spin (one run: no CI)"), "{l:?}");
    }

    #[test]
    fn notes_say_what_distorts_or_was_not_measured() {
        let mut starved = result(SchemeKind::Spin, 1, &[8_000_000]);
        starved.cpu_share = 0.5;
        let n = notes(
            true,
            &[starved],
            &[SchemeKind::Spin, SchemeKind::RwLock],
            Some(99.94),
        );
        assert_eq!(n.len(), 4, "{n:?}");
        assert!(n[0].contains("hypervisor"));
        assert!(n[1].contains("rwlock and parking_lot-rw"));
        assert!(n[2].contains("− 99.9 ns of `none`"), "{}", n[2]);
        assert!(n[3].contains("(spin@1 50 %)"), "{}", n[3]);
        let quiet = notes(
            false,
            &[result(SchemeKind::Spin, 1, &[1])],
            &[SchemeKind::Spin],
            None,
        );
        assert!(quiet.is_empty(), "{quiet:?}");
    }
}
