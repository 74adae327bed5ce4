//! `mutex` and `adaptive`: the 3-state futex lock (0 unlocked, 1 locked, 2 locked with
//! sleepers), differing only in how long a waiter spins before sleeping.
//!
//! `mutex` is Rust std's Linux `Mutex` algorithm, re-implemented so its waits are visible to
//! the stats (a wrapped `std::sync::Mutex` would show collisions and wait time but not spins or
//! sleeps): 100 iterations of relaxed load + PAUSE while the state is 1, then `FUTEX_WAIT`;
//! unlock wakes one sleeper only if the state was 2 (rust-lang/rust
//! `library/std/src/sys/sync/mutex/futex.rs`). `cargo bench --bench locks`
//! runs it next to `std::sync::Mutex`.
//!
//! `adaptive` spins for a *time* budget instead (default 10 µs ≈ a context switch, LiTL's
//! spin-then-park, `src/waiting_policy.h`), converted to PAUSE iterations with the calibrated PAUSE
//! cost, because 100 PAUSEs are 2.5 µs here but ~6 µs on Skylake (Intel Optimization Reference Manual, "Pause Latency in Skylake
//! Microarchitecture").
//!
//! Both barge (a running thread may take the lock before a woken sleeper), which is why they
//! survive oversubscription where ticket and MCS collapse.
//!
//! One addition to std's state machine: the bits above the two state bits carry the last
//! holder (index + 1, 0 = never held), written by the acquiring CAS and by the release swap
//! that exist anyway, so the instrumentation learns who handed over without storing to the
//! line the waiters spin on (that store cost these locks 30 % of their hammer throughput).
//! Waiters therefore mark the lock contended with a CAS that keeps those bits, where std
//! swaps in a bare 2: the word a sleeper passes to `FUTEX_WAIT` then stays valid until the
//! release, as std's does.

use super::clock::pauses_for_ns;
use super::probe::Probe;
use super::{LockKind, LockThread, RawLock};
use std::sync::atomic::{AtomicU32, Ordering};

const UNLOCKED: u32 = 0;
const LOCKED: u32 = 1;
const CONTENDED: u32 = 2;
const STATE: u32 = 0b11;

/// The state bits of a word.
#[inline(always)]
fn state(w: u32) -> u32 {
    w & STATE
}

/// Thread `index`'s owner bits.
#[inline(always)]
fn owner_bits(index: u32) -> u32 {
    (index + 1) << 2
}

/// The last holder recorded in a word, [`NO_OWNER`](super::NO_OWNER) if never held.
#[inline(always)]
fn last_owner(w: u32) -> u32 {
    (w >> 2).wrapping_sub(1)
}

/// std's spin count (`futex.rs`: `let mut spin = 100`).
const STD_SPINS: u64 = 100;

pub(crate) struct FutexLock {
    word: AtomicU32,
    kind: LockKind,
    /// Spin iterations before sleeping.
    spin_limit: u64,
}

impl FutexLock {
    pub(crate) fn mutex() -> Self {
        FutexLock {
            word: AtomicU32::new(UNLOCKED),
            kind: LockKind::Mutex,
            spin_limit: STD_SPINS,
        }
    }

    pub(crate) fn adaptive(spin_ns: u64) -> Self {
        FutexLock {
            word: AtomicU32::new(UNLOCKED),
            kind: LockKind::Adaptive,
            spin_limit: if spin_ns == 0 {
                0
            } else {
                pauses_for_ns(spin_ns)
            },
        }
    }

    /// Spins while the lock is held and nobody sleeps (spinning behind sleepers only delays
    /// our own sleep); returns the last word seen.
    #[inline]
    fn spin<P: Probe>(&self, p: &mut P) -> u32 {
        let mut left = self.spin_limit;
        loop {
            let w = self.word.load(Ordering::Relaxed);
            if state(w) != LOCKED || left == 0 {
                p.spins(self.spin_limit - left);
                return w;
            }
            std::hint::spin_loop();
            left -= 1;
        }
    }

    /// The contended path, out of line so the uncontended one inlines with the probe in
    /// registers. `w` is the word the fast path's CAS found.
    #[cold]
    #[inline(never)]
    fn acquire_slow<P: Probe>(&self, p: &mut P, mine: u32, w: u32) -> u32 {
        if state(w) == UNLOCKED {
            // Free after all, but not as last left by us: retry with what is there.
            if self
                .word
                .compare_exchange(w, mine | LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return last_owner(w);
            }
        }
        p.collision();
        let mut w = self.spin(p);
        if state(w) == UNLOCKED {
            match self
                .word
                .compare_exchange(w, mine | LOCKED, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return last_owner(w),
                Err(now) => w = now,
            }
        }
        loop {
            match state(w) {
                // Taking it as CONTENDED (not LOCKED) is conservative: we cannot know whether
                // other sleepers remain, so our unlock will issue a wake.
                UNLOCKED => match self.word.compare_exchange(
                    w,
                    mine | CONTENDED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return last_owner(w),
                    Err(now) => {
                        w = now;
                        continue;
                    }
                },
                LOCKED => {
                    let marked = (w & !STATE) | CONTENDED;
                    match self.word.compare_exchange(
                        w,
                        marked,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => w = marked,
                        Err(now) => {
                            w = now;
                            continue;
                        }
                    }
                }
                _ => {}
            }
            p.backoff_begin();
            futex_wait(&self.word, w);
            p.backoff_end();
            w = self.spin(p);
        }
    }
}

impl RawLock for FutexLock {
    fn kind(&self) -> LockKind {
        self.kind
    }

    const TRACKS_OWNER: bool = true;

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32 {
        let mine = owner_bits(t.index);
        // Guess the word our own release left: a single CAS when this thread reacquires.
        match self.word.compare_exchange(
            mine | UNLOCKED,
            mine | LOCKED,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => t.index,
            Err(w) => self.acquire_slow(p, mine, w),
        }
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        let old = self
            .word
            .swap(owner_bits(t.index) | UNLOCKED, Ordering::Release);
        if state(old) == CONTENDED {
            futex_wake_one(&self.word);
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
