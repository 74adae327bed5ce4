//! Burners as an engine [`Workload`]: one burner per plan thread, each applying its
//! scheduling policy and nice value to itself, building its buffers in its own pinned
//! thread, then running its kernel until told to stop.

use super::kernels::{self, FmaVariant, KernelSpec, SCAN_BYTES, State};
use super::kind::BurnerKind;
use super::sched::{self, NICE_RANGE, Policy};
use crate::cpuset::CpuSet;
use crate::engine::{ThreadCtx, Workload};
use crate::error::{BadInput, NotPossible};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// `sysbench cpu`'s default `--cpu-max-prime`.
pub const DEFAULT_MAX_PRIME: u64 = 10_000;

/// Smallest `stream`/`chase` buffer, whatever the LLC.
pub const MIN_DRAM_BYTES: usize = 64 << 20;

/// Smallest bound [`BurnSpec::with_max_buffer`] takes: a `stream`/`chase` buffer smaller
/// than this would fit the last-level cache of many current servers.
pub const MIN_BUFFER_CAP: usize = 16 << 20;

/// Base seed of the chase permutation; burner `i` uses `CHASE_SEED + i`.
pub const CHASE_SEED: u64 = 0x5EED_C0DE;

/// What to burn and how: the same for every burner of a set, in either mode. Built only by
/// [`BurnSpec::new`] and the `with_*` setters (or read back from JSON, checked the same
/// way), each refusing a bad value, so burners are never handed one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Unchecked")]
pub struct BurnSpec {
    /// The loop each burner runs.
    kind: BurnerKind,
    /// Scheduling class applied by each burner to itself.
    policy: Policy,
    /// Nice value applied by each burner to itself; None leaves it inherited.
    nice: Option<i32>,
    /// Prime bound for `prime` (sysbench `--cpu-max-prime`); primes are counted in
    /// `3..max_prime`.
    max_prime: u64,
    /// Event counters each burner opens on itself over its measurement (`smtlab burn
    /// --counters`); off for the neighbours other experiments start, which nobody reads.
    #[serde(skip)]
    counters: crate::counters::Mode,
    /// The largest `stream`/`chase` buffer, bytes, whatever the last-level cache (None:
    /// no bound). Experiments that run many short runs bound it (see
    /// [`BurnSpec::with_max_buffer`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_buffer: Option<usize>,
}

/// A spec as read from JSON, before [`BurnSpec`]'s checks.
#[derive(Deserialize)]
struct Unchecked {
    kind: BurnerKind,
    policy: Policy,
    nice: Option<i32>,
    max_prime: u64,
    #[serde(default)]
    max_buffer: Option<usize>,
}

impl TryFrom<Unchecked> for BurnSpec {
    type Error = BadInput;
    fn try_from(u: Unchecked) -> Result<Self, BadInput> {
        BurnSpec::new(u.kind)
            .with_policy(u.policy)
            .with_nice(u.nice)?
            .with_max_prime(u.max_prime)?
            .with_max_buffer(u.max_buffer)
    }
}

impl BurnSpec {
    /// `kind` at normal policy, inherited nice, sysbench's default prime bound, no
    /// counters.
    pub fn new(kind: BurnerKind) -> Self {
        Self {
            kind,
            policy: Policy::Normal,
            nice: None,
            max_prime: DEFAULT_MAX_PRIME,
            counters: crate::counters::Mode::Off,
            max_buffer: None,
        }
    }

    /// Same spec with the `stream`/`chase` buffers bounded at `bytes` (None: 4× the
    /// last-level cache, however large); refuses a bound below [`MIN_BUFFER_CAP`], under
    /// which a memory ruler would measure the caches, not memory.
    pub fn with_max_buffer(mut self, bytes: Option<usize>) -> Result<Self, BadInput> {
        if let Some(b) = bytes
            && b < MIN_BUFFER_CAP
        {
            return Err(BadInput(format!(
                "--max-buffer {b}: a memory ruler's buffer needs at least {} MiB to reach \
                 past the caches",
                MIN_BUFFER_CAP >> 20
            )));
        }
        self.max_buffer = bytes;
        Ok(self)
    }

    /// The bound on the `stream`/`chase` buffers, if any.
    pub fn max_buffer(&self) -> Option<usize> {
        self.max_buffer
    }

    /// Same spec with another scheduling class.
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Same spec with another nice value (None: inherited); refuses one outside -20..=19.
    pub fn with_nice(mut self, nice: Option<i32>) -> Result<Self, BadInput> {
        if let Some(n) = nice
            && !NICE_RANGE.contains(&n)
        {
            return Err(BadInput(format!(
                "--nice {n} is out of range: nice values run from -20 to 19"
            )));
        }
        self.nice = nice;
        Ok(self)
    }

    /// Same spec with another prime bound; refuses one below 3.
    pub fn with_max_prime(mut self, max_prime: u64) -> Result<Self, BadInput> {
        if max_prime < 3 {
            return Err(BadInput(format!(
                "--max-prime {max_prime} is too small: primes are counted in 3..MAX, so use at \
                 least 3 (sysbench's default is {DEFAULT_MAX_PRIME})"
            )));
        }
        self.max_prime = max_prime;
        Ok(self)
    }

    /// Same spec with burners counting `counters` events.
    pub fn with_counters(mut self, counters: crate::counters::Mode) -> Self {
        self.counters = counters;
        self
    }

    /// The loop each burner runs.
    pub fn kind(&self) -> BurnerKind {
        self.kind
    }

    /// Scheduling class applied by each burner to itself.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Nice value applied by each burner to itself; None leaves it inherited.
    pub fn nice(&self) -> Option<i32> {
        self.nice
    }

    /// Prime bound for `prime`: primes are counted in `3..max_prime`.
    pub fn max_prime(&self) -> u64 {
        self.max_prime
    }

    /// Event counters each burner opens on itself.
    pub fn counters(&self) -> crate::counters::Mode {
        self.counters
    }
}

/// How big a burner's buffer is for `cpu`, from the topology; plus a note when a cache
/// size was unknown and a default stood in.
pub fn buffer_bytes(
    kind: BurnerKind,
    topo: &Topology,
    cpu: Option<u32>,
) -> (usize, Option<String>) {
    buffer_bytes_within(kind, topo, cpu, None)
}

/// [`buffer_bytes`] with the `stream`/`chase` buffer bounded at `cap`; the note then
/// says when the bound keeps the buffer below STREAM's rule of four times the last-level
/// cache (McCalpin, STREAM benchmark FAQ: "each array must be at least 4 times the size
/// of the available cache memory"), so that part of it may stay cached and the ruler
/// presses the shared cache as well as memory.
pub fn buffer_bytes_within(
    kind: BurnerKind,
    topo: &Topology,
    cpu: Option<u32>,
    cap: Option<usize>,
) -> (usize, Option<String>) {
    let cache = |level: u8| -> Option<usize> {
        let c = match cpu {
            Some(cpu) => topo.cache_of(cpu, level),
            None => topo.caches_at(level).next(),
        };
        c.and_then(|c| c.size_bytes).map(|b| b as usize)
    };
    match kind {
        BurnerKind::Stream | BurnerKind::Chase => {
            let llc = topo.llc_level().and_then(cache);
            let note = llc.is_none().then(|| {
                format!(
                    "{kind}: last-level cache size unknown, using {} MiB",
                    MIN_DRAM_BYTES >> 20
                )
            });
            let want = llc.unwrap_or(0).saturating_mul(4).max(MIN_DRAM_BYTES);
            match (cap, llc) {
                (Some(c), Some(l)) if want > c => {
                    let note = format!(
                        "{kind}: the buffer is bounded at {}, less than 4× the {} last-level \
                         cache, so part of it may stay in that cache: this ruler presses the \
                         shared cache as well as memory",
                        crate::render::bytes(c as u64),
                        crate::render::bytes(l as u64)
                    );
                    (c, Some(note))
                }
                (Some(c), _) => (want.min(c), note),
                (None, _) => (want, note),
            }
        }
        BurnerKind::L1 => match cache(1) {
            Some(b) => (b / 2, None),
            None => (16 << 10, Some("l1: L1d size unknown, using 16 KiB".into())),
        },
        BurnerKind::L2 => match cache(2) {
            Some(b) => (b / 2, None),
            None => (256 << 10, Some("l2: L2 size unknown, using 256 KiB".into())),
        },
        BurnerKind::Scan => (SCAN_BYTES, None),
        _ => (0, None),
    }
}

/// The memory `kind`'s buffers take for burners on `cpus` (one set per burner, each
/// sized for its first CPU's caches), and those buffers in words (`4096 \`stream\`
/// buffers of 64 MiB`), for [`crate::limits::memory`].
pub fn buffers_total(kind: BurnerKind, topo: &Topology, cpus: &[CpuSet]) -> (u64, String) {
    let sizes: Vec<u64> = cpus
        .iter()
        .map(|c| buffer_bytes(kind, topo, c.first()).0 as u64)
        .collect();
    let total = sizes.iter().fold(0u64, |a, &b| a.saturating_add(b));
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let each = if sizes.iter().all(|&b| b == largest) {
        "of"
    } else {
        "of up to"
    };
    let words = format!(
        "{} `{kind}` buffer{} {each} {}",
        sizes.len(),
        if sizes.len() == 1 { "" } else { "s" },
        crate::render::bytes(largest)
    );
    (total, words)
}

/// What one burner thread reported about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BurnerInfo {
    /// `fma` implementation that ran (`scalar`, `avx2`, `avx512`).
    pub variant: Option<String>,
    /// Buffer size, bytes (stream, chase, l1, l2, scan).
    pub buffer_bytes: Option<u64>,
    /// Policy and nice as the kernel reported them after applying.
    pub policy: Option<Policy>,
    pub nice: Option<i32>,
    /// Why the policy or nice could not be applied; the burner did not run.
    pub error: Option<String>,
}

/// N burners as one engine workload (thread `i` of the plan is burner `i`).
///
/// To run burners beside other threads in one engine run (as `neighbors` does), wrap this
/// in your own workload and call [`Burners::run_burner`] with the burner's own index.
pub struct Burners {
    spec: BurnSpec,
    kernels: Vec<KernelSpec>,
    states: Vec<Mutex<Option<State>>>,
    infos: Vec<Mutex<BurnerInfo>>,
    /// The set each burner is pinned to (where [`Burners::prepare`] builds its buffers).
    cpus: Vec<CpuSet>,
    /// The thread each burner last applied its policy to: a burner reused across engine
    /// runs runs on a new thread each time, and a policy is a property of a thread
    /// (sched_setscheduler(2), setpriority(2) on a thread id).
    applied_on: Vec<Mutex<Option<libc::pid_t>>>,
    /// Notes for the user (cache sizes that were guessed).
    pub notes: Vec<String>,
}

impl Burners {
    /// One burner per entry of `cpus` (the set each will be pinned to; it decides the
    /// cache sizes). Checks up front that this CPU can run the kind and that the policy
    /// and nice can be applied here (negative nice needs privileges).
    pub fn new(spec: &BurnSpec, topo: &Topology, cpus: &[CpuSet]) -> anyhow::Result<Self> {
        let fma = match spec.kind {
            BurnerKind::Fma(w) => Some(
                FmaVariant::detect(w)
                    .map_err(|e| NotPossible(format!("burner kind `{}`: {e}", spec.kind)))?,
            ),
            _ => None,
        };
        preflight(spec.policy, spec.nice)?;
        let mut notes = Vec::new();
        let kernels = cpus
            .iter()
            .enumerate()
            .map(|(i, set)| {
                let (bytes, note) =
                    buffer_bytes_within(spec.kind, topo, set.first(), spec.max_buffer);
                if let Some(n) = note
                    && !notes.contains(&n)
                {
                    notes.push(n);
                }
                KernelSpec {
                    kind: spec.kind,
                    max_prime: spec.max_prime,
                    buffer_bytes: bytes,
                    fma,
                    seed: CHASE_SEED + i as u64,
                }
            })
            .collect();
        Ok(Self {
            spec: spec.clone(),
            kernels,
            states: cpus.iter().map(|_| Mutex::new(None)).collect(),
            infos: cpus
                .iter()
                .map(|_| Mutex::new(BurnerInfo::default()))
                .collect(),
            cpus: cpus.to_vec(),
            applied_on: cpus.iter().map(|_| Mutex::new(None)).collect(),
            notes,
        })
    }

    /// Builds every burner's buffers now, each on a thread pinned to its own CPUs (so the
    /// pages are first touched, and placed, where the burner will run: the kernel's
    /// first-touch NUMA policy, Documentation/admin-guide/mm/numa_memory_policy.rst), so
    /// that a later engine run measures from its first interval instead of building in
    /// its warm-up. False when `stop` turned true first (nothing half-built is kept).
    pub fn prepare(&self, stop: &(dyn Fn() -> bool + Sync)) -> anyhow::Result<bool> {
        let done = std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.len())
                .map(|i| {
                    s.spawn(move || -> anyhow::Result<bool> {
                        let mut slot = self.states[i].lock().unwrap_or_else(|e| e.into_inner());
                        if slot.is_some() {
                            return Ok(true);
                        }
                        crate::affinity::set_affinity(0, &self.cpus[i]).map_err(|e| {
                            NotPossible(format!(
                                "cannot pin the thread building burner {i}'s buffers to CPUs {}: {e}",
                                self.cpus[i].to_list()
                            ))
                        })?;
                        *slot = State::prepare(&self.kernels[i], stop);
                        Ok(slot.is_some())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(anyhow::anyhow!("a buffer-building thread panicked"))
                    })
                })
                .collect::<anyhow::Result<Vec<bool>>>()
        })?;
        Ok(done.iter().all(|d| *d))
    }

    /// The spec every burner runs.
    pub fn spec(&self) -> &BurnSpec {
        &self.spec
    }

    /// Number of burners.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// Runs burner `i` on the calling (already pinned) thread until `ctx.should_stop()`.
    /// Call it once per engine phase; the first call applies the policy and builds the
    /// buffers, later calls reuse them.
    pub fn run_burner(&self, i: usize, ctx: &ThreadCtx<'_>) {
        let k = &self.kernels[i];
        let mut slot = self.states[i].lock().unwrap_or_else(|e| e.into_inner());
        let tid = crate::affinity::gettid();
        let mut applied_on = self.applied_on[i].lock().unwrap_or_else(|e| e.into_inner());
        if *applied_on != Some(tid) {
            let mut info = BurnerInfo {
                variant: k.fma.map(|v| v.name().to_string()),
                buffer_bytes: (k.buffer_bytes > 0).then_some(k.buffer_bytes as u64),
                ..Default::default()
            };
            // The engine raised every thread's nice by `nice_offset` in an oversubscribed
            // run; a requested nice moves with them, so the order between threads holds.
            let nice = self.spec.nice.map(|n| (n + ctx.nice_offset).min(19));
            let applied = sched::apply_to_current_thread(self.spec.policy, nice)
                .and_then(|()| sched::current_thread());
            match applied {
                Ok((p, n)) => {
                    info.policy = p;
                    info.nice = Some(n);
                }
                Err(e) => info.error = Some(e.to_string()),
            }
            let failed = info.error.is_some();
            *self.infos[i].lock().unwrap_or_else(|e| e.into_inner()) = info;
            if failed {
                return;
            }
            *applied_on = Some(tid);
        }
        drop(applied_on);
        if slot.is_none() {
            // Stopped while building: the next phase's call builds it again.
            *slot = State::prepare(k, &|| ctx.should_stop());
        }
        if let Some(state) = slot.as_mut() {
            kernels::run(k, state, ctx);
        }
    }

    /// What burner `i` reported (after it ran).
    pub fn info(&self, i: usize) -> BurnerInfo {
        self.infos[i]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Frees the buffers (they are also freed on drop).
    pub fn release(&self) {
        for s in &self.states {
            *s.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// The first burner error (policy or nice not applicable), as `NotPossible`.
    pub fn check(&self) -> Result<(), NotPossible> {
        for i in 0..self.len() {
            if let Some(e) = self.info(i).error {
                return Err(NotPossible(format!("burner {i}: {e}")));
            }
        }
        Ok(())
    }
}

impl Workload for Burners {
    fn name(&self) -> String {
        format!("burn-{}", self.spec.kind)
    }

    fn run_thread(&self, ctx: &ThreadCtx<'_>) {
        self.run_burner(ctx.thread, ctx);
    }

    fn requested_nice(&self) -> Option<i32> {
        self.spec.nice
    }
}

/// Tries the policy and nice on a throwaway thread, so a refusal (negative nice without
/// `CAP_SYS_NICE`) fails before anything runs: `EPERM`/`EACCES` need privileges (exit 4),
/// anything else is this machine (exit 3).
pub(crate) fn preflight(policy: Policy, nice: Option<i32>) -> anyhow::Result<()> {
    if policy == Policy::Normal && nice.is_none_or(|n| n >= 0) {
        return Ok(());
    }
    let Err(e) = std::thread::spawn(move || sched::apply_to_current_thread(policy, nice))
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("preflight thread panicked")))
    else {
        return Ok(());
    };
    let msg = format!(
        "cannot give burners policy {policy}{}: {e} (raising priority needs CAP_SYS_NICE or \
         RLIMIT_NICE)",
        nice.map(|n| format!(" and nice {n}")).unwrap_or_default()
    );
    Err(if e.kind() == std::io::ErrorKind::PermissionDenied {
        crate::error::NeedsPrivilege(msg).into()
    } else {
        NotPossible(msg).into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fixture;

    /// The fixture with its last-level cache set to `bytes`.
    fn with_llc(bytes: u64) -> Topology {
        let mut t = fixture::topology(2, 1, true);
        for c in t.caches.iter_mut().filter(|c| c.level == 3) {
            c.size_bytes = Some(bytes);
        }
        t
    }

    #[test]
    fn memory_buffers_are_four_times_the_llc_unless_bounded() {
        // A VM reporting a 480 MiB L3: unbounded, 4× is 1.9 GiB (what pairs built before,
        // too slow to build within a warm-up); bounded at 256 MiB, with a note.
        let big = with_llc(480 << 20);
        let (b, note) = buffer_bytes(BurnerKind::Chase, &big, Some(0));
        assert_eq!(b, 1920 << 20);
        assert!(note.is_none());
        let (b, note) = buffer_bytes_within(BurnerKind::Stream, &big, Some(0), Some(256 << 20));
        assert_eq!(b, 256 << 20);
        let note = note.unwrap();
        assert!(
            note.contains("256 MiB") && note.contains("480 MiB") && note.contains("shared cache"),
            "{note}"
        );
        // A 32 MiB L3: 4× (128 MiB) is under the bound, which changes nothing.
        let small = with_llc(32 << 20);
        assert_eq!(
            buffer_bytes_within(BurnerKind::Chase, &small, Some(0), Some(256 << 20)),
            (128 << 20, None)
        );
        // The bound reaches the kernels.
        let spec = BurnSpec::new(BurnerKind::Chase)
            .with_max_buffer(Some(256 << 20))
            .unwrap();
        let burners = Burners::new(&spec, &big, &[CpuSet::from_cpus([0])]).unwrap();
        assert_eq!(burners.kernels[0].buffer_bytes, 256 << 20);
        assert_eq!(burners.notes.len(), 1);
        // A bound under which a memory ruler would measure the caches is refused.
        let e = BurnSpec::new(BurnerKind::Stream)
            .with_max_buffer(Some(1 << 20))
            .unwrap_err();
        assert!(e.to_string().contains("16 MiB"), "{e}");
    }

    #[test]
    fn prepared_buffers_are_reused_and_the_policy_reapplied_on_each_thread() {
        let t = with_llc(4 << 20);
        let spec = BurnSpec::new(BurnerKind::Stream)
            .with_max_buffer(Some(16 << 20))
            .unwrap();
        let b = Burners::new(&spec, &t, &[crate::affinity::process_affinity().unwrap()]).unwrap();
        assert!(b.prepare(&|| false).unwrap());
        assert!(b.states[0].lock().unwrap().is_some());
        // Stopped before building: reports so, builds nothing new.
        let c = Burners::new(&spec, &t, &[crate::affinity::process_affinity().unwrap()]).unwrap();
        assert!(!c.prepare(&|| true).unwrap());
        assert!(c.states[0].lock().unwrap().is_none());
    }
}
