//! A made-up compare report for the renderer tests: one-per-core, pairs and all on two
//! cores of two siblings, seven runs each, summarised and compared by compare's own
//! analysis.

use super::metric::MetricInfo;
use super::model::{CompareReport, PlacementResult, Run, Skipped};
use crate::cpuset::CpuSet;

fn run(round: usize, wall_ms: f64, metric: f64) -> Run {
    Run {
        round,
        position: 0,
        wall_time_ns: (wall_ms * 1e6) as u64,
        user_time_ns: (wall_ms * 1.9e6) as u64,
        system_time_ns: 4_000_000,
        max_rss_bytes: 8 << 20,
        voluntary_switches: 12,
        involuntary_switches: 340,
        exit_code: Some(0),
        signal: None,
        metric: Some(metric),
        burner_ops_per_sec: None,
        counters: None,
        leftover_processes: 0,
    }
}

/// Seven runs around `base`, each placement's jitter `shift` rounds along, so that
/// the per-round ratios spread.
fn placement(label: &str, cpus: &[u32], cores: usize, base: f64, shift: usize) -> PlacementResult {
    let runs: Vec<Run> = (1..=7)
        .map(|i| {
            let jitter = [0.0, 0.01, -0.01, 0.02, -0.005, 0.004, -0.02][(i - 1 + shift) % 7];
            let metric = (base * (1.0 - jitter) * 100.0).round() / 100.0;
            run(i, 2000.0 * (1.0 + jitter), metric)
        })
        .collect();
    let mut p = PlacementResult::unsummarized(
        label.into(),
        label.into(),
        CpuSet::from_cpus(cpus.iter().copied()),
        cores,
        runs,
    );
    super::analysis::summarize(&mut p);
    p
}

/// A made-up comparison of one-per-core, pairs and all on two cores of two siblings.
pub fn fixture() -> CompareReport {
    use super::analysis::{self, Basis};
    use crate::stats::Better;
    let placements = vec![
        placement("one-per-core", &[0, 1], 2, 1000.0, 0),
        placement("pairs", &[0, 2], 1, 610.0, 1),
        placement("all", &[0, 1, 2, 3], 2, 1240.0, 3),
    ];
    let basis = Basis::Metric(Better::Higher);
    let setting = analysis::Setting {
        placements: &placements,
        basis,
        noise: 0.02,
        fixed_by_arguments: None,
    };
    let comparisons = analysis::comparisons(&setting);
    let smt_yield = analysis::pair_speedup(&setting, (2, 0));
    let pairs_slowdown = analysis::pair_speedup(&setting, (1, 0));
    CompareReport {
        preflight: Vec::new(),
        command: vec![
            "sysbench".into(),
            "cpu".into(),
            "--threads=2".into(),
            "run".into(),
        ],
        metric: Some(MetricInfo {
            source: "sysbench".into(),
            pattern: None,
            unit: "events/s".into(),
            higher_is_better: true,
        }),
        warmup_rounds: 1,
        rounds: 7,
        enforcement: "affinity".into(),
        scope: None,
        noise_threshold: 0.02,
        confidence: 0.95,
        server: None,
        burners: None,
        comparisons,
        no_comparison: None,
        smt_yield,
        pairs_slowdown,
        fixed_duration: None,
        placements,
        skipped: vec![Skipped {
            label: "all + 1 prime".into(),
            reason: "CPUs 0-3 already use every sibling of their cores".into(),
        }],
        interrupted: false,
        interrupted_by: None,
        starved: Vec::new(),
        notes: vec!["made up for the renderer tests".into()],
        counters: None,
    }
}
