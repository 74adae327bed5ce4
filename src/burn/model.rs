//! What a burn run measured, per burner and in total, in either mode (its text form is
//! [`super::view`]).

use super::kind::{BurnerKind, Unit};
use super::sched::Policy;
use super::workload::{BurnSpec, Burners};
use crate::cpuset::CpuSet;
use crate::engine::RunResult;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where the burners run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Threads of this process, run by the engine.
    #[default]
    Thread,
    /// Child processes (`smtlab burn` re-executed), one burner each.
    Process,
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "thread" | "threads" => Ok(Mode::Thread),
            "process" | "processes" => Ok(Mode::Process),
            _ => Err(format!("unknown burner mode `{s}`; valid: thread, process")),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Thread => "thread",
            Mode::Process => "process",
        })
    }
}

/// One burner's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurnerResult {
    /// Burner index, from 0.
    pub burner: usize,
    /// Process id of the child (process mode) or of smtlab (thread mode).
    pub pid: i32,
    /// Kernel thread id of the burner loop.
    pub tid: i32,
    /// CPUs it was pinned to.
    pub cpus: CpuSet,
    /// CPUs it was seen on.
    pub observed_cpus: CpuSet,
    /// `fma` variant that ran, when the kind has variants.
    pub variant: Option<String>,
    /// Buffer size, bytes, for buffer kinds.
    pub buffer_bytes: Option<u64>,
    /// Policy and nice the kernel reported for the burner thread.
    pub policy: Option<Policy>,
    pub nice: Option<i32>,
    /// Progress during the measurement, in the kind's unit.
    pub ops: u64,
    /// Wall time of the measurement, ns.
    pub measured_ns: u64,
    /// `ops` per second of `measured_ns`.
    pub ops_per_sec: f64,
    /// CPU time the burner used during the measurement, ns.
    pub cpu_time_ns: u64,
    /// Preemptions during the measurement.
    pub involuntary_ctx_switches: u64,
    /// Run-queue wait during the measurement, ns (None without schedstat).
    pub runqueue_delay_ns: Option<u64>,
    /// From the stop request to the loop returning, ns.
    pub stop_latency_ns: u64,
    /// Event counters of the burner's thread over the measurement, and what they could
    /// not count; None with `--counters off`.
    #[serde(default)]
    /// Boxed: it is most of the struct's size, and the struct travels in an enum.
    pub counters: Option<Box<crate::counters::Measurement>>,
}

/// A whole burn run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurnReport {
    pub kind: BurnerKind,
    /// What `ops` counts: events, ops, fmas, bytes, loads.
    pub unit: Unit,
    pub mode: Mode,
    /// Placement request, as text.
    pub placement: String,
    pub policy: Policy,
    pub nice: Option<i32>,
    /// Prime bound (`prime` only; sysbench `--cpu-max-prime`).
    pub max_prime: Option<u64>,
    /// Warm-up and measurement asked for, ns.
    pub warmup_ns: u64,
    pub duration_ns: u64,
    pub burners: Vec<BurnerResult>,
    /// Sum of every burner's rate.
    pub total_ops_per_sec: f64,
    /// A signal (SIGINT, SIGTERM, SIGHUP) ended the run early.
    pub interrupted: bool,
    /// Which one, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_by: Option<crate::interrupt::Signal>,
    /// Facts worth knowing (guessed cache sizes, oversubscription; [`Note`]s).
    pub notes: Vec<String>,
    /// The counters' mode and every event not counted, with the reason; None with
    /// `--counters off`.
    #[serde(default)]
    pub counters: Option<crate::counters::Status>,
}

impl BurnerResult {
    /// Burner `i` of a thread-mode engine run of `burners`.
    pub fn from_thread_run(run: &RunResult, burners: &Burners, i: usize) -> Self {
        let t = &run.threads[i];
        let info = burners.info(i);
        BurnerResult {
            burner: i,
            pid: std::process::id() as i32,
            tid: t.tid,
            cpus: t.cpus.clone(),
            observed_cpus: t.observed_cpus.clone(),
            variant: info.variant,
            buffer_bytes: info.buffer_bytes,
            policy: info.policy,
            nice: info.nice,
            ops: t.ops,
            measured_ns: run.measured_ns,
            ops_per_sec: t.ops_per_sec(run.measured_ns),
            cpu_time_ns: t.cpu_time_ns,
            involuntary_ctx_switches: t.involuntary_ctx_switches,
            runqueue_delay_ns: t.runqueue_delay_ns,
            stop_latency_ns: run.stop_latency_ns,
            counters: t.counters.clone().map(Box::new),
        }
    }

    /// Share of the measurement the burner was on a CPU, 0..1.
    pub fn cpu_share(&self) -> f64 {
        if self.measured_ns == 0 {
            0.0
        } else {
            self.cpu_time_ns as f64 / self.measured_ns as f64
        }
    }
}

impl BurnReport {
    /// The report skeleton for `spec`; burners are added by the caller.
    pub fn new(
        spec: &BurnSpec,
        mode: Mode,
        placement: String,
        warmup_ns: u64,
        duration_ns: u64,
    ) -> Self {
        BurnReport {
            kind: spec.kind(),
            unit: spec.kind().unit(),
            mode,
            placement,
            policy: spec.policy(),
            nice: spec.nice(),
            max_prime: (spec.kind() == BurnerKind::Prime).then_some(spec.max_prime()),
            warmup_ns,
            duration_ns,
            burners: Vec::new(),
            total_ops_per_sec: 0.0,
            interrupted: false,
            interrupted_by: None,
            notes: Vec::new(),
            counters: None,
        }
    }

    /// Recomputes the total from the burners.
    pub fn finish(mut self) -> Self {
        self.total_ops_per_sec = self.burners.iter().map(|b| b.ops_per_sec).sum();
        self
    }
}

/// What a burn run tells the reader about how it ran; kept in [`BurnReport::notes`] as its
/// sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// Some CPUs carry more than one burner.
    Oversubscribed,
    /// Every burner's nice value was raised `by` this much
    /// ([`crate::engine::RunResult::nice_offset`]).
    Demoted { by: i32 },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Oversubscribed => {
                f.write_str("oversubscribed: some CPUs carry more than one burner")
            }
            Note::Demoted { by } => write!(
                f,
                "every burner's nice value was raised by {by} (lower priority) so that smtlab's \
                 own threads keep time with this many burners per CPU; their shares among \
                 themselves are unchanged"
            ),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::burn::FmaWidth;

    /// Two prime burners on CPUs 0 and 1.
    pub(crate) fn sample() -> BurnReport {
        let spec = BurnSpec::new(BurnerKind::Prime);
        let mut r = BurnReport::new(&spec, Mode::Thread, "one-per-core".into(), 0, 5_000_000_000);
        r.burners = vec![burner(0, 0, 4123.456), burner(1, 1, 4100.0)];
        r.finish()
    }

    fn burner(i: usize, cpu: u32, ops_per_sec: f64) -> BurnerResult {
        BurnerResult {
            burner: i,
            pid: 4242,
            tid: 4243 + i as i32,
            cpus: CpuSet::from_cpus([cpu]),
            observed_cpus: CpuSet::from_cpus([cpu]),
            variant: None,
            buffer_bytes: None,
            policy: Some(Policy::Idle),
            nice: Some(19),
            ops: (ops_per_sec * 5.0) as u64,
            measured_ns: 5_000_000_000,
            ops_per_sec,
            counters: None,
            cpu_time_ns: 4_990_000_000,
            involuntary_ctx_switches: 12,
            runqueue_delay_ns: Some(1_000_000),
            stop_latency_ns: 40_000,
        }
    }

    #[test]
    fn prime_table() {
        let spec = BurnSpec::new(BurnerKind::Prime)
            .with_policy(Policy::Idle)
            .with_nice(Some(19))
            .unwrap();
        let mut r = BurnReport::new(
            &spec,
            Mode::Thread,
            "one-per-core".into(),
            1_000_000_000,
            5_000_000_000,
        );
        r.burners = vec![burner(0, 0, 4123.456), burner(1, 1, 4100.0)];
        let r = r.finish();
        assert!((r.total_ops_per_sec - 8223.456).abs() < 1e-6);
        insta::assert_snapshot!(crate::render::terminal::draw(&super::super::view::blocks(
            &r
        )));
    }

    #[test]
    fn fma_and_buffer_columns() {
        let spec = BurnSpec::new(BurnerKind::Fma(FmaWidth::Auto));
        let mut r = BurnReport::new(&spec, Mode::Process, "os".into(), 0, 500_000_000);
        let mut b = burner(0, 1, 7.5e9);
        b.variant = Some("avx512".into());
        b.buffer_bytes = Some(16 << 10);
        r.burners = vec![b];
        r.interrupted = true;
        r.interrupted_by = Some(crate::interrupt::Signal::Term);
        r.notes = vec!["l1: L1d size unknown, using 16 KiB".into()];
        insta::assert_snapshot!(crate::render::terminal::draw(&super::super::view::blocks(
            &r.finish()
        )));
    }

    #[test]
    fn json_carries_units() {
        let spec = BurnSpec::new(BurnerKind::Stream);
        let mut r = BurnReport::new(&spec, Mode::Thread, "os".into(), 0, 1);
        r.burners = vec![burner(0, 0, 1e9)];
        let j = serde_json::to_value(r.finish()).unwrap();
        assert_eq!(j["unit"], "bytes");
        assert_eq!(j["kind"], "stream");
        assert_eq!(j["burners"][0]["policy"], "idle");
        assert!(j["burners"][0]["ops_per_sec"].is_number());
        assert!(j.get("max_prime").unwrap().is_null());
    }
}
