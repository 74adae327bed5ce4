//! lockscan's conclusions and notes in words, as the model carries them (`verdict`,
//! `notes`). Pure.

use super::config::LockscanConfig;
use super::model::ScenarioResult;
use crate::locks::StatsMode;
use crate::stats::{Ci, Comparison, Effect};

/// Critical-section length (ns) from which `counters` measured within 2 % of `off` for 7 of
/// 8 locks (`cargo bench --bench locks`, 100 ns inside, 200 ns outside); below it, lockscan
/// warns that absolute rates carry the instrumentation's cost.
const COUNTERS_CHEAP_CS_NS: u64 = 100;

/// A ratio with its interval, or with the reason it has none.
fn fmt_ci(c: &Ci, runs: usize) -> String {
    if runs < 3 {
        format!(
            "{:.2}× ({runs} run{}: too few for a confidence interval, use --repeat 3 or more)",
            c.estimate,
            if runs == 1 { "" } else { "s" }
        )
    } else {
        format!("{:.2}× (95% CI {:.2}–{:.2})", c.estimate, c.low, c.high)
    }
}

/// `0.99× OF (95 % CI 0.97–1.01, n = 5: no effect)`: the ratio, what it is a ratio of,
/// then its interval and three-way class.
fn compared(c: &Comparison, of: &str) -> String {
    let n = if c.indicative || c.n < 2 {
        String::new()
    } else {
        format!(", n = {}", c.n)
    };
    format!(
        "{}× {of} ({}{n}: {})",
        crate::stats::ratio_text(c.estimate),
        c.interval_text(),
        c.effect
    )
}

/// One line per comparison a scenario with a scanner allows: the sharing lock threads
/// against their own rate without a scanner (the answer; the other lock threads beside it,
/// for comparison), and the others against the baseline.
pub fn verdict_lines(results: &[ScenarioResult], smt: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        if r.scenario.scan_cpus.is_empty() {
            continue;
        }
        let what = if smt {
            "lock threads sharing a core with a scanner"
        } else {
            "the lock thread time-sharing its CPU with a scanner"
        };
        let others = r.sharing_vs_others.as_ref().map(|c| fmt_ci(c, r.runs));
        match (&r.sharing_vs_own_baseline, others) {
            (Some(c), others) => out.push(format!(
                "{} / {}: {what} acquired {}{}",
                r.lock,
                r.scenario.label,
                compared(
                    c,
                    if smt {
                        "their own rate in the same round without a scanner"
                    } else {
                        "its own rate in the same round without a scanner"
                    }
                ),
                others
                    .map(|o| format!(
                        "; against the other lock threads of the same runs {o}, a comparison an unfair lock biases by position"
                    ))
                    .unwrap_or_default()
            )),
            (None, Some(o)) => out.push(format!(
                "{} / {}: {what} acquired at {o} the rate of the other lock threads of the same runs — {}",
                r.lock,
                r.scenario.label,
                if r.threads.iter().any(|t| t.shares_core_with_scanner) {
                    "no baseline run to compare them with themselves (without --no-baseline there is one), and an unfair lock favours some positions even without a scanner"
                } else {
                    "an unfair lock favours some positions even without a scanner"
                }
            )),
            (None, None) => {
                if r.threads.iter().any(|t| t.shares_core_with_scanner) {
                    out.push(format!(
                        "{} / {}: every lock thread shares a core with a scanner and no baseline paired them with themselves; nothing to compare against",
                        r.lock, r.scenario.label
                    ));
                }
            }
        }
        if let Some(c) = &r.cross_core_vs_own_baseline {
            out.push(format!(
                "{} / {}: lock threads on other cores than the scanner ran at {} — {}",
                r.lock,
                r.scenario.label,
                compared(c, "their own rate in the same round without a scanner"),
                cross_core_effect(c.low, c.high)
            ));
        } else if let Some(c) = &r.cross_core_vs_baseline {
            let (lo, hi) = if r.runs >= 3 {
                (c.low, c.high)
            } else {
                (c.estimate, c.estimate)
            };
            out.push(format!(
                "{} / {}: lock threads on other cores than the scanner ran at {} of their rate without a scanner — {}",
                r.lock,
                r.scenario.label,
                fmt_ci(c, r.runs),
                cross_core_effect(lo, hi)
            ));
        }
        // The control for a sibling loss: did the sharing threads lose more than the
        // threads on other cores of the same runs?
        if let (Some(own), Some(ctrl)) = (&r.sharing_vs_own_baseline, &r.sharing_vs_cross_core)
            && matches!(own.effect, Effect::Loss | Effect::SmallLoss)
        {
            out.push(format!(
                "{} / {}: against the lock threads on other cores of the same runs, the sharing threads got {} — {}",
                r.lock,
                r.scenario.label,
                compared(ctrl, "of their rate"),
                match (matches!(ctrl.effect, Effect::Loss | Effect::SmallLoss), smt) {
                    (true, true) => "they lost more than threads elsewhere, so the loss comes with sharing the core",
                    (true, false) => "they lost more than threads elsewhere, so the loss comes with time-sharing the CPU",
                    (false, true) => "the loss is not shown to come from sharing the core: the scanner slowed the other cores about as much",
                    (false, false) => "the loss is not shown to come from time-sharing the CPU: the scanner slowed the other CPUs about as much",
                }
            ));
        }
    }
    out
}

/// What a cross-core interval means. A direction is called only when the whole interval
/// lies beyond a 5 % noise band (criterion's rule). Which shared resource slowed the other
/// cores is not measured, so none is named.
fn cross_core_effect(lo: f64, hi: f64) -> &'static str {
    if lo > 1.05 {
        "faster: the scanner took CPU time from a competing lock thread, so fewer acquisitions competed"
    } else if hi < 0.95 {
        "slower: the scanner slowed lock threads on other cores too, through something the cores share (which was not measured)"
    } else {
        "no clear cross-core effect (the interval includes no change)"
    }
}

/// What the runs could not show or may have distorted, and why. `steal` is each run's
/// steal share, where measured.
pub fn notes(
    cfg: &LockscanConfig,
    results: &[ScenarioResult],
    smt: bool,
    hypervisor: bool,
    steal: impl IntoIterator<Item = Option<f64>>,
    scan_l2_bytes: Option<u64>,
) -> Vec<String> {
    let mut notes = Vec::new();
    notes.extend(crate::hygiene::steal_note("the runs", steal));
    let scanners = results.iter().any(|r| !r.scenario.scan_cpus.is_empty());
    let size = crate::topology::render::human_bytes(cfg.scan_bytes as u64);
    match scan_l2_bytes {
        Some(l2) if scanners && cfg.scan_bytes as u64 <= l2 => notes.push(format!(
            "the {size} scan buffer fits in the scanner's {} L2: its passes stay inside its own core, so only what the siblings share inside the core is exercised, not the L3 or memory path; `--scan-bytes auto` streams past the L2",
            crate::topology::render::human_bytes(l2)
        )),
        None if scanners => notes.push(format!(
            "this machine reports no L2 size for the scanners' CPUs, so whether the {size} scan buffer streams past the scanner's L2 is not known"
        )),
        _ => {}
    }
    let over: Vec<String> = results
        .iter()
        .filter(|r| r.handoffs_share_of_ceiling.is_some_and(|x| x > 1.0))
        .map(|r| format!("{} / {}", r.lock, r.scenario.label))
        .collect();
    if !over.is_empty() {
        let why = if hypervisor {
            "the line moved faster during the run than just before it, as when a host moves vCPUs onto SMT siblings of one core"
        } else {
            "the ceiling comes from one pair of CPUs per proximity class, and other pairs of a class can be faster"
        };
        notes.push(format!(
            "handoffs above the c2c ceiling measured just before the run ({}): {why}",
            over.join(", ")
        ));
    }
    if !smt {
        // The case the experiment comes from: in SQL Server's "To Hyper or not to Hyper"
        // test (Slava Oks, 2005) the lock thread beside a scanner on one Hyper-Threading
        // core took about 700,000 acquisitions while the others took about 10 million.
        notes.push("no SMT siblings on this machine: the sibling case (a lock thread whose SMT sibling scans memory, about 10× fewer acquisitions in SQL Server's 2005 \"To Hyper or not to Hyper\" test) could not be run here; shown instead: a scanner time-sharing a lock thread's CPU, and lock threads on other cores (cross-core)".into());
    }
    if hypervisor {
        notes.push(crate::render::Caveat::Hypervisor { kind: None }.to_string());
    }
    if cfg.stats == StatsMode::Counters && cfg.cs_ns < COUNTERS_CHEAP_CS_NS {
        notes.push(format!("lock stats cost: counting spins and handoffs adds a few ns to every acquisition, which with a {} ns critical section can be tens of percent of the absolute rate; every thread pays it, so ratios compare like with like; `smtlab lockscan --lock-stats off` runs the bare lock (README: measured cost)", cfg.cs_ns));
    }
    if cfg.stats == StatsMode::Off {
        notes.push("lock stats off: the bare lock algorithms ran; acquisitions are the workload's own count, and spins and handoffs were not recorded".into());
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::RunSpec;
    use crate::experiments::lockscan::{Layout, Scenario};
    use crate::locks::LockKind;

    fn result(
        scan: &[u32],
        runs: usize,
        vs_others: Option<Ci>,
        vs_base: Option<Ci>,
    ) -> ScenarioResult {
        ScenarioResult {
            scenario: Scenario {
                label: "s".into(),
                lock_cpus: vec![0, 1],
                scan_cpus: scan.to_vec(),
            },
            lock: LockKind::Ttas,
            runs,
            threads: Vec::new(),
            acquisitions_per_sec: None,
            jain_index: 1.0,
            max_min_ratio: 1.0,
            handoffs_per_sec: None,
            sharing_vs_own_baseline: None,
            sharing_ratios: Vec::new(),
            sharing_vs_others: vs_others,
            cross_core_vs_baseline: vs_base,
            cross_core_ratios: Vec::new(),
            cross_core_vs_own_baseline: None,
            sharing_vs_cross_core_ratios: Vec::new(),
            sharing_vs_cross_core: None,
            c2c_latency_ns: None,
            c2c_latency_by_proximity: Vec::new(),
            handoffs_share_of_ceiling: None,
            pinning_ok: true,
            interrupted: false,
            core_cpi: Vec::new(),
        }
    }

    fn ci(estimate: f64, low: f64, high: f64) -> Ci {
        Ci {
            estimate,
            low,
            high,
            confidence: 0.95,
        }
    }

    #[test]
    fn the_own_baseline_answers_and_the_others_are_shown_as_biased() {
        let mut r = result(&[2], 5, Some(ci(0.1, 0.08, 0.12)), None);
        r.sharing_ratios = vec![0.97, 0.99, 1.0, 1.01, 0.98];
        r.sharing_vs_own_baseline = crate::stats::Comparison::of_paired_ratios(
            &r.sharing_ratios,
            crate::stats::Thresholds::SLOWDOWN,
            0.95,
        );
        let v = verdict_lines(&[r], true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].starts_with(
                "ttas / s: lock threads sharing a core with a scanner acquired 0.99× their own rate in the same round without a scanner (95 % CI"
            ),
            "{v:?}"
        );
        assert!(v[0].contains(", n = 5: no effect)"), "{v:?}");
        assert!(
            v[0].ends_with("against the other lock threads of the same runs 0.10× (95% CI 0.08–0.12), a comparison an unfair lock biases by position"),
            "{v:?}"
        );
    }

    #[test]
    fn a_sharing_ratio_carries_its_interval_or_says_why_not() {
        let r = result(&[2], 5, Some(ci(0.1, 0.08, 0.12)), None);
        assert_eq!(
            verdict_lines(&[r], true),
            [
                "ttas / s: lock threads sharing a core with a scanner acquired at 0.10× (95% CI 0.08–0.12) the rate of the other lock threads of the same runs — an unfair lock favours some positions even without a scanner"
            ]
        );
        let r = result(&[1], 1, Some(ci(0.5, 0.5, 0.5)), None);
        let v = verdict_lines(&[r], false);
        assert!(
            v[0].contains("the lock thread time-sharing its CPU"),
            "{v:?}"
        );
        assert!(
            v[0].contains("0.50× (1 run: too few for a confidence interval"),
            "{v:?}"
        );
    }

    #[test]
    fn a_baseline_scenario_has_no_verdict() {
        let r = result(&[], 5, None, None);
        assert!(verdict_lines(&[r], true).is_empty());
    }

    #[test]
    fn cross_core_direction_needs_the_whole_interval_beyond_five_percent() {
        assert!(cross_core_effect(1.06, 1.3).starts_with("faster"));
        assert!(cross_core_effect(0.7, 0.94).starts_with("slower"));
        // The interval reaches into the noise band: no direction.
        assert!(cross_core_effect(1.04, 1.3).starts_with("no clear"));
        assert!(cross_core_effect(0.7, 0.96).starts_with("no clear"));
        // An old file's two runs: the estimate alone decides.
        let v = verdict_lines(&[result(&[2], 2, None, Some(ci(1.2, 0.5, 2.0)))], true);
        assert!(v[0].contains("faster"), "{v:?}");
        let v = verdict_lines(&[result(&[2], 3, None, Some(ci(0.8, 0.7, 0.9)))], true);
        assert_eq!(
            v.len(),
            1,
            "no sharing ratio and no sharing thread: one line"
        );
        assert!(
            v[0].ends_with(
                "— slower: the scanner slowed lock threads on other cores too, through something the cores share (which was not measured)"
            ),
            "{v:?}"
        );
    }

    #[test]
    fn notes_say_what_is_missing_here() {
        let spec = RunSpec::new(std::time::Duration::ZERO, std::time::Duration::from_secs(1));
        let cfg = LockscanConfig::new(Layout::ScannerOnLowest, vec![LockKind::Ttas], spec).unwrap();
        let mut over = result(&[2], 3, None, None);
        over.handoffs_share_of_ceiling = Some(1.5);
        let n = notes(&cfg, &[over], false, true, [None], Some(512 << 10));
        assert!(
            n[0].starts_with("handoffs above the c2c ceiling") && n[0].contains("moves vCPUs"),
            "{n:?}"
        );
        assert!(
            n[1].starts_with("no SMT siblings") && !n[1].contains("seed"),
            "{n:?}"
        );
        assert!(n[2].starts_with("running under a hypervisor"), "{n:?}");
        assert!(n[3].contains("with a 0 ns critical section"), "{n:?}");
        let off = cfg
            .clone()
            .with_stats(StatsMode::Off)
            .unwrap()
            .with_cs_ns(500)
            .unwrap();
        let n = notes(&off, &[], true, false, [None], None);
        assert_eq!(n.len(), 1);
        assert!(n[0].starts_with("lock stats off"), "{n:?}");
    }

    #[test]
    fn a_scan_buffer_inside_the_l2_is_said_to_stay_in_the_core() {
        let spec = RunSpec::new(std::time::Duration::ZERO, std::time::Duration::from_secs(1));
        let cfg = LockscanConfig::new(Layout::ScannerOnLowest, vec![LockKind::Ttas], spec)
            .unwrap()
            .with_cs_ns(500)
            .unwrap();
        let scan = [result(&[2], 3, None, None)];
        // 1 MiB in a 2 MiB L2.
        let n = notes(&cfg, &scan, true, false, [None], Some(2 << 20));
        assert!(
            n[0].starts_with("the 1 MiB scan buffer fits in the scanner's 2 MiB L2"),
            "{n:?}"
        );
        // Past a 512 KiB L2: nothing to say.
        assert!(notes(&cfg, &scan, true, false, [None], Some(512 << 10)).is_empty());
        let n = notes(&cfg, &scan, true, false, [None], None);
        assert!(n[0].contains("reports no L2 size"), "{n:?}");
        // No scanner ran: no note about its buffer.
        assert!(
            notes(
                &cfg,
                &[result(&[], 3, None, None)],
                true,
                false,
                [None],
                None
            )
            .is_empty()
        );
    }

    /// A sibling loss at 0.70× beside other-core threads at 0.72× of the same runs: the
    /// loss is not put down to sharing the core.
    #[test]
    fn a_sibling_loss_matched_on_other_cores_is_not_put_down_to_the_core() {
        use crate::stats::Thresholds;
        let mut r = result(&[2], 5, None, None);
        r.sharing_ratios = vec![0.69, 0.70, 0.71, 0.70, 0.695];
        r.sharing_vs_own_baseline =
            Comparison::of_paired_ratios(&r.sharing_ratios, Thresholds::SLOWDOWN, 0.95);
        r.cross_core_ratios = vec![0.71, 0.72, 0.73, 0.72, 0.715];
        r.cross_core_vs_own_baseline =
            Comparison::of_paired_ratios(&r.cross_core_ratios, Thresholds::SLOWDOWN, 0.95);
        r.sharing_vs_cross_core_ratios = r
            .sharing_ratios
            .iter()
            .zip(&r.cross_core_ratios)
            .map(|(a, b)| a / b)
            .collect();
        r.sharing_vs_cross_core = Comparison::of_paired_ratios(
            &r.sharing_vs_cross_core_ratios,
            Thresholds::SLOWDOWN,
            0.95,
        );
        let v = verdict_lines(&[r], true);
        let control = v
            .iter()
            .find(|l| l.contains("against the lock threads on other cores"))
            .unwrap();
        assert!(
            control.contains("not shown to come from sharing the core"),
            "{v:?}"
        );
        let cross = v
            .iter()
            .find(|l| l.contains("on other cores than the scanner"))
            .unwrap();
        assert!(cross.contains("0.72×"), "{v:?}");
        assert!(
            !cross.contains("memory bandwidth"),
            "names no unmeasured cause: {v:?}"
        );
    }
}
