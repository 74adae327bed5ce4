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
}

/// A spec as read from JSON, before [`BurnSpec`]'s checks.
#[derive(Deserialize)]
struct Unchecked {
    kind: BurnerKind,
    policy: Policy,
    nice: Option<i32>,
    max_prime: u64,
}

impl TryFrom<Unchecked> for BurnSpec {
    type Error = BadInput;
    fn try_from(u: Unchecked) -> Result<Self, BadInput> {
        BurnSpec::new(u.kind)
            .with_policy(u.policy)
            .with_nice(u.nice)?
            .with_max_prime(u.max_prime)
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
        }
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
            ((llc.unwrap_or(0) * 4).max(MIN_DRAM_BYTES), note)
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
                let (bytes, note) = buffer_bytes(spec.kind, topo, set.first());
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
            notes,
        })
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
        if slot.is_none() {
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
