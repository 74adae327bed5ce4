//! What a run asks for ([`RunSpec`]) and what it hands back ([`RunResult`]). Plain data,
//! serde-serialisable; units live in the JSON field names.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long to warm up and measure, and how finely to sample progress. Built only by
/// [`RunSpec::new`] and the `with_*` setters (or read back from JSON, checked the same way),
/// each refusing a zero duration or interval, so a run is never handed one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Unchecked")]
pub struct RunSpec {
    /// Warm-up before measuring; its operations are discarded. Zero skips it.
    #[serde(rename = "warmup_ns", with = "as_ns")]
    warmup: Duration,
    /// Length of the measurement phase; positive.
    #[serde(rename = "duration_ns", with = "as_ns")]
    duration: Duration,
    /// Progress is sampled at every interval boundary; the last interval may be shorter.
    /// Positive.
    #[serde(rename = "interval_ns", with = "as_ns")]
    interval: Duration,
    /// Which event counters each thread opens (all available by default). Not written:
    /// each thread's [`ThreadResult::counters`] says what was counted.
    #[serde(skip)]
    counters: crate::counters::Mode,
}

/// A spec as read from JSON, before [`RunSpec`]'s checks.
#[derive(Deserialize)]
struct Unchecked {
    #[serde(rename = "warmup_ns", with = "as_ns")]
    warmup: Duration,
    #[serde(rename = "duration_ns", with = "as_ns")]
    duration: Duration,
    #[serde(rename = "interval_ns", with = "as_ns")]
    interval: Duration,
}

impl TryFrom<Unchecked> for RunSpec {
    type Error = crate::error::BadInput;
    fn try_from(u: Unchecked) -> Result<Self, Self::Error> {
        RunSpec::new(u.warmup, u.duration)?.with_interval(u.interval)
    }
}

impl Default for RunSpec {
    /// 1 s warm-up, 5 s measurement, 1 s intervals.
    fn default() -> Self {
        Self {
            warmup: Duration::from_secs(1),
            duration: Duration::from_secs(5),
            interval: Duration::from_secs(1),
            counters: crate::counters::Mode::default(),
        }
    }
}

impl RunSpec {
    /// A spec with `warmup`, `duration` and the default 1 s interval (capped at the
    /// duration); refuses a zero duration.
    pub fn new(warmup: Duration, duration: Duration) -> Result<Self, crate::error::BadInput> {
        if duration.is_zero() {
            return Err(crate::error::BadInput(
                "the measurement duration must be positive (e.g. `--duration 5`)".into(),
            ));
        }
        Ok(Self {
            warmup,
            duration,
            interval: Duration::from_secs(1).min(duration.max(Duration::from_millis(1))),
            counters: crate::counters::Mode::default(),
        })
    }

    /// Same spec with another interval; refuses a zero one.
    pub fn with_interval(mut self, interval: Duration) -> Result<Self, crate::error::BadInput> {
        if interval.is_zero() {
            return Err(crate::error::BadInput(
                "the sampling interval must be positive (e.g. `--interval 1`)".into(),
            ));
        }
        self.interval = interval;
        Ok(self)
    }

    /// Same spec counting `counters` events.
    pub fn with_counters(mut self, counters: crate::counters::Mode) -> Self {
        self.counters = counters;
        self
    }

    /// Warm-up before measuring (zero: none).
    pub fn warmup(&self) -> Duration {
        self.warmup
    }

    /// Length of the measurement phase (positive).
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Time between progress samples (positive).
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Which event counters each thread opens.
    pub fn counters(&self) -> crate::counters::Mode {
        self.counters
    }

    /// Number of intervals a full (uninterrupted) run has.
    pub fn intervals(&self) -> usize {
        let d = self.duration.as_nanos();
        let i = self.interval.as_nanos().max(1);
        d.div_ceil(i).max(1) as usize
    }
}

/// One interval boundary, as the coordinator saw it (handed to live observers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Interval index, from 0.
    pub index: usize,
    /// Wall time of this interval, ns.
    pub elapsed_ns: u64,
    /// Operations each thread completed in this interval (index = plan thread).
    pub ops: Vec<u64>,
}

/// A thread that ran on a CPU outside the set it was pinned to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinningViolation {
    /// Plan thread index.
    pub thread: usize,
    /// The CPU it was seen on.
    pub cpu: u32,
    /// Its planned CPUs.
    pub allowed: CpuSet,
}

/// Everything measured about one thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadResult {
    /// Plan thread index.
    pub thread: usize,
    /// Kernel thread id (0 for fake results).
    pub tid: i32,
    /// CPUs it was pinned to.
    pub cpus: CpuSet,
    /// CPUs it was seen running on: `sched_getcpu` after pinning and at the end (by the
    /// thread), and `/proc/self/task/TID/stat` at each interval boundary (by the
    /// coordinator).
    pub observed_cpus: CpuSet,
    /// Operations completed during the warm-up (discarded from every rate).
    pub warmup_ops: u64,
    /// Operations completed during the measurement (sum of `interval_ops`).
    pub ops: u64,
    /// Operations completed in each measurement interval.
    pub interval_ops: Vec<u64>,
    /// CPU time this thread used during the measurement (CLOCK_THREAD_CPUTIME_ID), ns.
    pub cpu_time_ns: u64,
    /// Voluntary context switches (blocked or yielded) during the measurement.
    pub voluntary_ctx_switches: u64,
    /// Involuntary context switches (preempted) during the measurement.
    pub involuntary_ctx_switches: u64,
    /// Time spent runnable but waiting for a CPU during the measurement
    /// (`/proc/self/task/TID/schedstat` field 2), ns; None when the kernel lacks schedstat.
    pub runqueue_delay_ns: Option<u64>,
    /// Event counters of the measurement (opened in the thread before the start barrier);
    /// None with counters off and in synthetic results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<crate::counters::Measurement>,
    /// Wall time the counters above cover, ns: the thread reads them itself, when it
    /// first runs in the measurement and when it returns after the stop, so this can
    /// exceed `measured_ns` by the thread's start and stop delays (seconds with hundreds
    /// of threads per CPU). Only the thread can read them at a moment it is not waiting:
    /// the kernel adds a run-queue wait to `schedstat` when the wait ends
    /// (`sched_info_arrive`, kernel/sched/stats.h), so a reading taken by another thread
    /// at the window's edge would miss the waits in progress. 0 when unknown (files
    /// written before this field existed).
    #[serde(default)]
    pub counters_span_ns: u64,
}

impl ThreadResult {
    /// [`Self::counters_span_ns`], or `measured_ns` when it is unknown.
    pub fn counters_span_or(&self, measured_ns: u64) -> u64 {
        if self.counters_span_ns > 0 {
            self.counters_span_ns
        } else {
            measured_ns
        }
    }

    /// Measured operations per second of wall time.
    pub fn ops_per_sec(&self, measured_ns: u64) -> f64 {
        per_sec(self.ops, measured_ns)
    }

    /// Share of the measurement this thread was on a CPU (0..1, can slightly exceed 1 from
    /// clock granularity).
    pub fn cpu_share(&self, measured_ns: u64) -> f64 {
        if measured_ns == 0 {
            0.0
        } else {
            self.cpu_time_ns as f64 / measured_ns as f64
        }
    }
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Workload name.
    pub workload: String,
    /// Placement request, as text.
    pub placement: String,
    /// What was asked for.
    pub spec: RunSpec,
    /// Wall time of the warm-up actually run, ns.
    pub warmup_ns: u64,
    /// Wall time of the measurement actually run, ns (shorter than asked when interrupted).
    pub measured_ns: u64,
    /// Wall time of each measurement interval, ns; the last may be partial.
    pub interval_ns: Vec<u64>,
    /// From the stop flag to every thread having returned, ns.
    pub stop_latency_ns: u64,
    /// Per-thread measurements, in plan order.
    pub threads: Vec<ThreadResult>,
    /// Threads seen outside their CPU set. Empty when pinning held.
    pub pinning_violations: Vec<PinningViolation>,
    /// Ctrl-C stopped the run early; the intervals so far are kept.
    pub interrupted: bool,
    /// Made up by [`super::FakeEngine`], not measured.
    pub synthetic: bool,
    /// Share of the plan's CPUs' time the hypervisor took (steal) during the measurement,
    /// 0–1. A stolen vCPU looks busy to the threads on it, so only this shows it. None
    /// where not read (the fake engine, no `/proc/stat`).
    #[serde(default)]
    pub steal_share: Option<f64>,
    /// How much every engine thread's nice value was raised because the run was
    /// oversubscribed, so the coordinator could keep time (0: not at all). The threads'
    /// priorities relative to each other were unchanged.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nice_offset: i32,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

impl RunResult {
    /// All threads' measured operations.
    pub fn total_ops(&self) -> u64 {
        self.threads.iter().map(|t| t.ops).sum()
    }

    /// All threads' operations per second of measurement wall time.
    pub fn ops_per_sec(&self) -> f64 {
        per_sec(self.total_ops(), self.measured_ns)
    }

    /// Each thread's operations per second, in plan order.
    pub fn thread_ops_per_sec(&self) -> Vec<f64> {
        self.threads
            .iter()
            .map(|t| t.ops_per_sec(self.measured_ns))
            .collect()
    }

    /// All threads' operations per second in each interval.
    pub fn interval_ops_per_sec(&self) -> Vec<f64> {
        self.interval_ns
            .iter()
            .enumerate()
            .map(|(i, &ns)| {
                let ops: u64 = self
                    .threads
                    .iter()
                    .map(|t| t.interval_ops.get(i).copied().unwrap_or(0))
                    .sum();
                per_sec(ops, ns)
            })
            .collect()
    }

    /// True when every thread stayed inside its CPU set.
    pub fn pinning_ok(&self) -> bool {
        self.pinning_violations.is_empty()
    }

    /// Total CPU time of all threads, ns.
    pub fn cpu_time_ns(&self) -> u64 {
        self.threads.iter().map(|t| t.cpu_time_ns).sum()
    }

    /// What the threads' counters could not count, and why (each reason once); None when
    /// no thread opened counters.
    pub fn counter_status(&self) -> Option<crate::counters::Status> {
        let ms: Vec<&crate::counters::Measurement> = self
            .threads
            .iter()
            .filter_map(|t| t.counters.as_ref())
            .collect();
        (!ms.is_empty()).then(|| crate::counters::Status::of(self.spec.counters, ms))
    }
}

fn per_sec(ops: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        ops as f64 * 1e9 / ns as f64
    }
}

/// Serialises a `Duration` as whole nanoseconds.
mod as_ns {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_nanos(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_intervals_round_up() {
        let s = RunSpec::new(Duration::ZERO, Duration::from_millis(2500)).unwrap();
        assert_eq!(s.interval(), Duration::from_secs(1));
        assert_eq!(s.intervals(), 3);
        let s = RunSpec::new(Duration::ZERO, Duration::from_millis(300)).unwrap();
        assert_eq!(s.interval(), Duration::from_millis(300));
        assert_eq!(s.intervals(), 1);
    }

    #[test]
    fn spec_json_has_units() {
        let j = serde_json::to_value(RunSpec::default()).unwrap();
        assert_eq!(j["duration_ns"], 5_000_000_000u64);
        let back: RunSpec = serde_json::from_value(j).unwrap();
        assert_eq!(back, RunSpec::default());
    }

    #[test]
    fn zero_duration_or_interval_is_refused() {
        let e = RunSpec::new(Duration::ZERO, Duration::ZERO).unwrap_err();
        assert!(e.0.contains("duration must be positive"), "{e}");
        let e = RunSpec::default()
            .with_interval(Duration::ZERO)
            .unwrap_err();
        assert!(e.0.contains("interval must be positive"), "{e}");
        let j = serde_json::json!({"warmup_ns": 0, "duration_ns": 0, "interval_ns": 1});
        assert!(serde_json::from_value::<RunSpec>(j).is_err());
    }
}
