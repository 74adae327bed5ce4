//! The locks' clock and the PAUSE calibration that turns time budgets into loop counts.
//!
//! Clock: on x86_64, when the kernel itself uses the TSC as its clocksource (so the TSC is
//! invariant and synchronised across CPUs), the TSC read by `rdtsc` and scaled to ns with a
//! factor calibrated once against `CLOCK_MONOTONIC`; otherwise `CLOCK_MONOTONIC` through the
//! vDSO (what `std::time::Instant` uses). `rdtsc` is not trapped by KVM and costs about a
//! third of the vDSO call here (`cargo bench --bench locks` prints both). Not serialised
//! (no `cpuid`, which is a VM exit under KVM; CK's `regressions/common.h` pays it): a few cycles of skew are far below what
//! the locks time. Locks read it only on slow paths (after a collision, around a sleep) and,
//! in `Full` stats mode, twice per acquisition, as raw ticks ([`ticks`], scaled to ns after
//! the lock is released), and build it at construction
//! ([`calibrate`]) so no acquisition pays for calibration.
//!
//! PAUSE: ~25 ns on this EPYC guest, ~140 cycles on Skylake, ~10 cycles before (Intel
//! Optimization Reference Manual, "Pause Latency in Skylake Microarchitecture"), so spin budgets are given in ns and converted with [`pause_ns`], measured once per
//! process (as MariaDB does at startup, MDEV-19845).

use std::sync::OnceLock;

/// `CLOCK_MONOTONIC` in ns.
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How [`now_ns`] reads time.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// TSC ticks scaled by `ns_per_tick`.
    Tsc {
        ns_per_tick: f64,
    },
    Monotonic,
}

static SOURCE: OnceLock<Source> = OnceLock::new();

fn source() -> Source {
    *SOURCE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let cs = std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .unwrap_or_default();
            if cs.trim() == "tsc" {
                // 20 ms against CLOCK_MONOTONIC: < 0.01 % scale error with µs-exact ends.
                let (m0, t0) = (monotonic_ns(), rdtsc());
                while monotonic_ns() - m0 < 20_000_000 {
                    std::hint::spin_loop();
                }
                let (m1, t1) = (monotonic_ns(), rdtsc());
                if t1 > t0 {
                    return Source::Tsc {
                        ns_per_tick: (m1 - m0) as f64 / (t1 - t0) as f64,
                    };
                }
            }
        }
        Source::Monotonic
    })
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc is available on every x86_64 CPU and has no memory effects.
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
}

/// Chooses and calibrates the clock and the PAUSE cost (once per process, ~25 ms). Lock
/// constructors call it so no acquisition pays for it.
pub fn calibrate() {
    source();
    pause_ns();
}

/// Name of the clock [`now_ns`] uses, for reports: `tsc` or `clock_monotonic`.
pub fn clock_name() -> &'static str {
    match source() {
        Source::Tsc { .. } => "tsc",
        Source::Monotonic => "clock_monotonic",
    }
}

/// Monotonic time in ns (arbitrary epoch; use differences).
#[inline]
pub fn now_ns() -> u64 {
    match SOURCE.get() {
        #[cfg(target_arch = "x86_64")]
        Some(Source::Tsc { ns_per_tick }) => (rdtsc() as f64 * ns_per_tick) as u64,
        Some(_) => monotonic_ns(),
        None => {
            source();
            now_ns()
        }
    }
}

/// A raw timestamp for differences: TSC ticks, or ns where the clock is `CLOCK_MONOTONIC`.
/// What the locks read inside a critical section: it skips [`now_ns`]'s scaling, which
/// [`ticks_to_ns`] applies to the difference later, outside the lock.
#[inline]
pub(crate) fn ticks() -> u64 {
    match SOURCE.get() {
        #[cfg(target_arch = "x86_64")]
        Some(Source::Tsc { .. }) => rdtsc(),
        Some(_) => monotonic_ns(),
        None => {
            source();
            ticks()
        }
    }
}

/// A difference of two [`ticks`] in ns.
#[inline]
pub(crate) fn ticks_to_ns(d: u64) -> u64 {
    match source() {
        Source::Tsc { ns_per_tick } => (d as f64 * ns_per_tick) as u64,
        Source::Monotonic => d,
    }
}

/// Cost of one `spin_loop()` hint (PAUSE on x86, YIELD/ISB on ARM), ns, measured on first use:
/// the fastest of 5 runs of 20,000 hints (the minimum rejects runs hit by preemption).
pub fn pause_ns() -> f64 {
    static PAUSE_NS: OnceLock<f64> = OnceLock::new();
    *PAUSE_NS.get_or_init(|| {
        const N: u64 = 20_000;
        (0..5)
            .map(|_| {
                let t0 = monotonic_ns();
                for _ in 0..N {
                    std::hint::spin_loop();
                }
                (monotonic_ns() - t0) as f64 / N as f64
            })
            .fold(f64::INFINITY, f64::min)
            .max(0.1)
    })
}

/// How many `spin_loop()` hints take about `ns` here (at least 1).
pub(crate) fn pauses_for_ns(ns: u64) -> u64 {
    ((ns as f64 / pause_ns()).round() as u64).max(1)
}

/// `n` spin-loop hints.
#[inline]
pub(crate) fn pause_n(n: u64) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}
