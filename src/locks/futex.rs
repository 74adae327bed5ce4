//! `mutex` and `adaptive`: the 3-state futex lock (0 unlocked, 1 locked, 2 locked with
//! sleepers), differing only in how long a waiter spins before sleeping.
//!
//! `mutex` is Rust std's Linux `Mutex` algorithm, re-implemented so its waits are visible to
//! the stats (a wrapped `std::sync::Mutex` would show collisions and wait time but not spins or
//! sleeps): 100 iterations of relaxed load + PAUSE while the state is 1, then `FUTEX_WAIT`;
//! unlock wakes one sleeper only if the state was 2 (rust-lang/rust
//! `library/std/src/sys/sync/mutex/futex.rs`, REFERENCE §2.1). `cargo bench --bench locks`
//! runs it next to `std::sync::Mutex`.
//!
//! `adaptive` spins for a *time* budget instead (default 10 µs ≈ a context switch, LiTL's
//! spin-then-park, REFERENCE §2.4), converted to PAUSE iterations with the calibrated PAUSE
//! cost, because 100 PAUSEs are 2.5 µs here but ~6 µs on Skylake (REFERENCE §2.5).
//!
//! Both barge (a running thread may take the lock before a woken sleeper), which is why they
//! survive oversubscription where ticket and MCS collapse.

use super::clock::pauses_for_ns;
use super::probe::Probe;
use super::{LockKind, LockThread, NO_OWNER, RawLock};
use std::sync::atomic::{AtomicU32, Ordering};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;

/// std's spin count (`futex.rs`: `let mut spin = 100`).
const STD_SPINS: u64 = 100;

pub(crate) struct FutexLock {
    state: AtomicU32,
    kind: LockKind,
    /// Spin iterations before sleeping.
    spin_limit: u64,
}

impl FutexLock {
    pub(crate) fn mutex() -> Self {
        FutexLock {
            state: AtomicU32::new(UNLOCKED),
            kind: LockKind::Mutex,
            spin_limit: STD_SPINS,
        }
    }

    pub(crate) fn adaptive(spin_ns: u64) -> Self {
        FutexLock {
            state: AtomicU32::new(UNLOCKED),
            kind: LockKind::Adaptive,
            spin_limit: if spin_ns == 0 {
                0
            } else {
                pauses_for_ns(spin_ns)
            },
        }
    }

    /// Spins while the lock is held and nobody sleeps (spinning behind sleepers only delays
    /// our own sleep); returns the last state seen.
    #[inline]
    fn spin<P: Probe>(&self, p: &mut P) -> u32 {
        let mut left = self.spin_limit;
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s != LOCKED || left == 0 {
                p.spins(self.spin_limit - left);
                return s;
            }
            std::hint::spin_loop();
            left -= 1;
        }
    }
}

impl RawLock for FutexLock {
    fn kind(&self) -> LockKind {
        self.kind
    }

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, _: &mut LockThread) -> u32 {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return NO_OWNER;
        }
        self.acquire_slow(p)
    }

    #[inline]
    unsafe fn release(&self, _: &mut LockThread) {
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            futex_wake_one(&self.state);
        }
    }
}

impl FutexLock {
    /// The contended path, out of line so the uncontended one inlines with the probe in
    /// registers.
    #[cold]
    #[inline(never)]
    fn acquire_slow<P: Probe>(&self, p: &mut P) -> u32 {
        p.collision();
        let mut state = self.spin(p);
        if state == UNLOCKED {
            match self.state.compare_exchange(
                UNLOCKED,
                LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return NO_OWNER,
                Err(s) => state = s,
            }
        }
        loop {
            // Taking it as CONTENDED (not LOCKED) is conservative: we cannot know whether other
            // sleepers remain, so our unlock will issue a wake.
            if state != CONTENDED && self.state.swap(CONTENDED, Ordering::Acquire) == UNLOCKED {
                return NO_OWNER;
            }
            p.backoff_begin();
            futex_wait(&self.state, CONTENDED);
            p.backoff_end();
            state = self.spin(p);
        }
    }
}

/// Sleeps while `*a == expected` (returns at once otherwise, or on a spurious wake-up).
fn futex_wait(a: &AtomicU32, expected: u32) {
    // SAFETY: `a` is a valid, aligned u32 for the duration of the call; no timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            a.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake_one(a: &AtomicU32) {
    // SAFETY: `a` is a valid, aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            a.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        );
    }
}
