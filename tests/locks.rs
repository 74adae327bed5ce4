//! Correctness of the lock library: mutual exclusion (also oversubscribed), FIFO order of
//! ticket and MCS, stats invariants, and that blocking locks give up the CPU.
//!
//! Tests that spin many threads take a global mutex (shared with the engine's real runs) so
//! they do not oversubscribe each other (cargo runs tests in parallel on this 2-CPU machine).

use smtlab::locks::{
    Lock, LockExt, LockKind, LockOptions, LockThread, Protected, StatsMode, ThreadStats, new_lock,
};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

fn serial() -> MutexGuard<'static, ()> {
    crate::common::cpu_heavy()
}

/// Runs `f` on its own thread; fails the test if it takes longer than `secs`.
fn within<T: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: timed out after {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: worker panicked"),
    }
}

/// A plain, non-atomic counter: only the lock makes it correct.
struct Racy(UnsafeCell<u64>);
// SAFETY: accessed only under the lock being tested (that is the point of the test).
unsafe impl Sync for Racy {}

impl Racy {
    /// Read, dawdle, write: widens the window a broken lock would lose updates in.
    fn bump(&self) {
        let p = self.0.get();
        // SAFETY: under the lock under test; volatile so the compiler keeps read and write apart.
        unsafe {
            let v = std::ptr::read_volatile(p);
            for _ in 0..4 {
                std::hint::spin_loop();
            }
            std::ptr::write_volatile(p, v + 1);
        }
    }
}

/// N threads × M increments under the lock; returns the counter and each thread's stats.
fn hammer(
    kind: LockKind,
    mode: StatsMode,
    threads: usize,
    per_thread: u64,
) -> (u64, Vec<ThreadStats>) {
    let lock: Arc<dyn Lock> = Arc::from(new_lock(kind, mode));
    let counter = Arc::new(Racy(UnsafeCell::new(0)));
    let what = format!("{kind} {mode:?} {threads}x{per_thread}");
    within(120, &what, move || {
        // All start together, so the lock is really contended (and oversubscribed).
        let start = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let lock = Arc::clone(&lock);
                let counter = Arc::clone(&counter);
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let mut t = LockThread::new(i, threads);
                    start.wait();
                    for _ in 0..per_thread {
                        lock.lock(&mut t);
                        counter.bump();
                        // SAFETY: locked just above on this thread.
                        unsafe { lock.unlock(&mut t) };
                    }
                    t.stats()
                })
            })
            .collect();
        let stats: Vec<ThreadStats> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // SAFETY: all workers joined.
        (unsafe { *counter.0.get() }, stats)
    })
}

fn check_invariants(kind: LockKind, mode: StatsMode, stats: &[ThreadStats], ops: u64) {
    let total = ThreadStats::total(stats);
    let c = total.counts;
    if mode == StatsMode::Off {
        assert_eq!(
            c,
            Default::default(),
            "{kind}: stats off must record nothing"
        );
        assert!(total.wait_ns_hist.is_empty() && total.hold_ns_hist.is_empty());
        assert_eq!(total.handoffs_from.iter().sum::<u64>(), 0);
        return;
    }
    assert_eq!(c.acquisitions, ops, "{kind}: acquisitions == ops");
    assert!(
        c.collisions <= c.acquisitions,
        "{kind}: collisions <= acquisitions"
    );
    assert!(
        c.handoffs <= c.acquisitions,
        "{kind}: handoffs <= acquisitions"
    );
    assert_eq!(
        total.handoffs_from.iter().sum::<u64>() + total.handoffs_unknown,
        c.handoffs,
        "{kind}: handoffs_from sums to handoffs"
    );
    let timed_waits = matches!(mode, StatsMode::Waits | StatsMode::Full);
    if timed_waits {
        assert_eq!(
            total.wait_ns_hist.len(),
            c.collisions,
            "{kind}: one wait per collision"
        );
        assert!(c.sleep_ns <= c.wait_ns, "{kind}: sleep is part of wait");
    } else {
        assert!(
            total.wait_ns_hist.is_empty(),
            "{kind}: counters time no wait"
        );
        assert_eq!(c.wait_ns, 0, "{kind}");
    }
    if c.collisions == 0 {
        assert_eq!((c.spins, c.backoffs, c.wait_ns), (0, 0, 0), "{kind}");
    }
    for (i, s) in stats.iter().enumerate() {
        assert_eq!(s.handoffs_from[i], 0, "{kind}: no handoff from oneself");
    }
    if mode == StatsMode::Full {
        assert_eq!(
            total.hold_ns_hist.len(),
            ops,
            "{kind}: one hold per acquisition"
        );
        assert!(c.hold_ns > 0);
    } else {
        assert!(total.hold_ns_hist.is_empty());
        assert_eq!((c.hold_ns, c.long_holds), (0, 0));
    }
    let s = total.summary();
    assert_eq!(s.reacquisitions + s.handoffs, s.acquisitions);
    if timed_waits || c.collisions == 0 {
        let w = |v: Option<u64>| v.expect("waits timed");
        assert!(w(s.wait_p50_ns) <= w(s.wait_p99_ns) && w(s.wait_p99_ns) <= w(s.wait_p999_ns));
        assert!(w(s.wait_p999_ns) <= w(s.wait_max_ns));
    } else {
        // Not timed: no made-up zeros.
        assert_eq!(
            (s.wait_p99_ns, s.wait_ns, s.spin_ns),
            (None, None, None),
            "{kind}"
        );
    }
}

/// Ops per thread: FIFO locks collapse by design when oversubscribed (one handoff per
/// scheduler slice), so they get few.
fn per_thread(kind: LockKind, threads: usize) -> u64 {
    match (kind.is_fifo(), threads > 2) {
        (false, false) => 50_000,
        (false, true) => 40_000,
        (true, false) => 20_000,
        (true, true) => 300,
    }
}

fn exclusion(threads: usize, modes: &[StatsMode]) {
    let _s = serial();
    for kind in LockKind::ALL {
        for &mode in modes {
            let m = per_thread(kind, threads);
            let started = Instant::now();
            let (count, stats) = hammer(kind, mode, threads, m);
            assert_eq!(count, threads as u64 * m, "{kind} {mode:?}: lost updates");
            check_invariants(kind, mode, &stats, threads as u64 * m);
            let c = ThreadStats::total(&stats).counts;
            eprintln!(
                "{kind:>12} {mode:?} {threads}x{m}: {:?}, collisions {}, handoffs {}",
                started.elapsed(),
                c.collisions,
                c.handoffs
            );
        }
    }
}

#[test]
fn mutual_exclusion_two_threads_all_modes() {
    exclusion(2, &StatsMode::ALL);
}

#[test]
fn mutual_exclusion_four_threads_on_two_cpus() {
    exclusion(4, &[StatsMode::Off, StatsMode::Full]);
}

#[test]
fn mutual_exclusion_eight_threads_on_two_cpus() {
    exclusion(8, &[StatsMode::Counters, StatsMode::Waits]);
}

/// The main thread holds the lock while waiters arrive one at a time (each observed in the
/// queue before the next starts); on release they must get the lock in arrival order.
fn arrival_order(kind: LockKind) {
    let _s = serial();
    const WAITERS: usize = 4;
    let lock: Arc<dyn Lock> = Arc::from(new_lock(kind, StatsMode::Counters));
    let order = Arc::new(Mutex::new(Vec::new()));
    let lock2 = Arc::clone(&lock);
    let order2 = Arc::clone(&order);
    within(60, &format!("{kind} arrival order"), move || {
        let (lock, order) = (lock2, order2);
        let mut me = LockThread::new(WAITERS, WAITERS + 1);
        lock.lock(&mut me);
        let mut handles = Vec::new();
        for i in 0..WAITERS {
            let before = lock.queue_tail().expect("FIFO locks expose their queue");
            let (l, o) = (Arc::clone(&lock), Arc::clone(&order));
            handles.push(std::thread::spawn(move || {
                let mut t = LockThread::new(i, WAITERS + 1);
                l.with(&mut t, || o.lock().unwrap().push(i));
            }));
            // Wait until waiter i has joined the queue before starting waiter i + 1.
            while lock.queue_tail() == Some(before) {
                std::thread::yield_now();
            }
        }
        // SAFETY: locked above on this thread.
        unsafe { lock.unlock(&mut me) };
        for h in handles {
            h.join().unwrap();
        }
    });
    assert_eq!(
        *order.lock().unwrap(),
        (0..WAITERS).collect::<Vec<_>>(),
        "{kind}"
    );
}

#[test]
fn ticket_hands_over_in_arrival_order() {
    arrival_order(LockKind::Ticket);
}

#[test]
fn mcs_hands_over_in_arrival_order() {
    arrival_order(LockKind::Mcs);
}

#[test]
fn handoffs_are_attributed_to_the_previous_owner() {
    for kind in LockKind::ALL {
        let lock = new_lock(kind, StatsMode::Counters);
        let mut a = LockThread::new(0, 3);
        let mut b = LockThread::new(1, 3);
        let mut far = LockThread::new(7, 3); // index outside the table
        lock.with(&mut a, || ()); // first ever: no previous owner, no handoff
        lock.with(&mut b, || ()); // a → b
        lock.with(&mut b, || ()); // b → b: re-acquisition
        lock.with(&mut far, || ()); // b → far
        lock.with(&mut a, || ()); // far → a: unknown index
        let (sa, sb) = (a.stats(), b.stats());
        assert_eq!(sa.counts.acquisitions, 2, "{kind}");
        assert_eq!(sa.counts.handoffs, 1, "{kind}");
        assert_eq!(sa.handoffs_unknown, 1, "{kind}");
        assert_eq!(sb.counts.handoffs, 1, "{kind}");
        assert_eq!(sb.handoffs_from, vec![1, 0, 0], "{kind}");
        assert_eq!(far.stats().handoffs_from, vec![0, 1, 0], "{kind}");
        assert_eq!(sb.summary().reacquisitions, 1, "{kind}");
        assert_eq!(sa.counts.collisions + sb.counts.collisions, 0, "{kind}");
    }
}

/// One thread holds the lock for 50 ms: blocking locks must give up the CPU (backoffs, sleep
/// time, timed even in `counters` mode), everyone records the wait, and the holder records a
/// long hold (`full`).
#[test]
fn long_hold_makes_waiters_back_off_and_is_flagged() {
    let _s = serial();
    for (kind, mode) in LockKind::ALL
        .into_iter()
        .flat_map(|k| [(k, StatsMode::Full), (k, StatsMode::Counters)])
    {
        let lock: Arc<dyn Lock> = Arc::from(new_lock(kind, mode));
        let (holder, waiter) = within(30, &format!("{kind} long hold"), move || {
            let mut h = LockThread::new(0, 2);
            lock.lock(&mut h);
            let go = Arc::new(AtomicBool::new(false));
            let (l, g) = (Arc::clone(&lock), Arc::clone(&go));
            let w = std::thread::spawn(move || {
                let mut t = LockThread::new(1, 2);
                g.store(true, Ordering::Release);
                l.with(&mut t, || ());
                t.stats()
            });
            while !go.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: locked above on this thread.
            unsafe { lock.unlock(&mut h) };
            (h.stats(), w.join().unwrap())
        });
        let s = holder.summary();
        if mode == StatsMode::Counters {
            assert_eq!((s.long_holds, s.hold_max_ns), (None, None), "{kind}");
        } else {
            assert_eq!(s.long_holds, Some(1), "{kind}");
            assert!(s.hold_max_ns.unwrap() >= 49_000_000, "{kind}: {s:?}");
        }
        let w = waiter.counts;
        assert_eq!(
            (w.acquisitions, w.collisions, w.handoffs),
            (1, 1, 1),
            "{kind}"
        );
        // Wide margins: the waiter may be scheduled late on a busy machine.
        if mode == StatsMode::Full {
            assert!(w.wait_ns >= 10_000_000, "{kind}: waited {} ns", w.wait_ns);
        } else {
            assert_eq!(w.wait_ns, 0, "{kind}: counters time no wait");
        }
        match kind {
            LockKind::Backoff | LockKind::Mutex | LockKind::Adaptive => {
                assert!(w.backoffs >= 1, "{kind}: {w:?}");
                assert!(w.sleep_ns >= 5_000_000, "{kind}: {w:?}");
                assert!(w.spins >= 1, "{kind}: {w:?}");
            }
            LockKind::ParkingLot => assert_eq!((w.spins, w.backoffs), (0, 0), "opaque"),
            _ => {
                assert!(w.spins >= 1000, "{kind}: {w:?}");
                assert_eq!(w.backoffs, 0, "{kind}: pure spinlocks never back off");
            }
        }
    }
}

#[test]
fn mcs_allows_nested_holds_released_out_of_order() {
    let a = new_lock(LockKind::Mcs, StatsMode::Off);
    let b = new_lock(LockKind::Mcs, StatsMode::Off);
    let mut t = LockThread::new(0, 1);
    for _ in 0..3 {
        a.lock(&mut t);
        b.lock(&mut t);
        // SAFETY: both held by this thread.
        unsafe {
            a.unlock(&mut t);
            b.unlock(&mut t);
        }
    }
}

#[test]
fn nested_holds_on_one_lock_thread_record_every_acquisition_and_hold() {
    // The stats of an acquisition are recorded after its release; nesting (in either unlock
    // order) must neither lose nor double-count one.
    for kind in LockKind::ALL {
        let a = new_lock(kind, StatsMode::Full);
        let b = new_lock(kind, StatsMode::Full);
        let mut t = LockThread::new(0, 1);
        for lifo in [true, false] {
            a.lock(&mut t);
            b.lock(&mut t);
            // SAFETY: both held by this thread.
            unsafe {
                if lifo {
                    b.unlock(&mut t);
                    a.unlock(&mut t);
                } else {
                    a.unlock(&mut t);
                    b.unlock(&mut t);
                }
            }
        }
        let s = t.stats();
        assert_eq!(s.counts.acquisitions, 4, "{kind}");
        assert_eq!(s.hold_ns_hist.len(), 4, "{kind}");
        // Held: the acquisition is counted, its hold only once released.
        a.lock(&mut t);
        assert_eq!(t.stats().counts.acquisitions, 5, "{kind}");
        assert_eq!(t.stats().hold_ns_hist.len(), 4, "{kind}");
        // SAFETY: held by this thread.
        unsafe { a.unlock(&mut t) };
        assert_eq!(t.stats().hold_ns_hist.len(), 5, "{kind}");
    }
}

#[test]
fn protected_value_and_live_counters() {
    let _s = serial();
    let p = Arc::new(Protected::new(
        LockKind::Adaptive,
        &LockOptions::with_stats(StatsMode::Counters),
        Vec::new(),
    ));
    let threads: Vec<_> = (0..3)
        .map(|i| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                let mut t = LockThread::new(i, 3);
                let live = t.counters();
                for n in 0..1000 {
                    p.with(&mut t, |v| v.push((i, n)));
                }
                assert_eq!(live.load().acquisitions, 1000);
                t.reset();
                assert_eq!(live.load(), Default::default());
            })
        })
        .collect();
    for h in threads {
        h.join().unwrap();
    }
    assert_eq!(p.lock().kind(), LockKind::Adaptive);
    let v = Arc::try_unwrap(p).ok().unwrap().into_inner();
    assert_eq!(v.len(), 3000);
}

#[test]
fn kinds_parse_and_print() {
    for k in LockKind::ALL {
        assert_eq!(k.to_string().parse::<LockKind>().unwrap(), k);
        assert_eq!(new_lock(k, StatsMode::Off).kind(), k);
        assert_eq!(serde_json::to_string(&k).unwrap(), format!("\"{k}\""));
    }
    assert_eq!(
        "Parking-Lot".parse::<LockKind>().unwrap(),
        LockKind::ParkingLot
    );
    let e = "spinny".parse::<LockKind>().unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown lock kind `spinny`; valid kinds: tas, ttas, backoff, ticket, mcs, mutex, \
         parking_lot, adaptive"
    );
}

#[test]
fn stats_mode_is_reported_and_summary_serialises_with_units() {
    let lock = new_lock(LockKind::Ttas, StatsMode::Full);
    assert_eq!(lock.stats_mode(), StatsMode::Full);
    let mut t = LockThread::new(0, 1);
    for _ in 0..10 {
        let _g = lock.guard(&mut t);
    }
    let json = serde_json::to_value(t.stats().summary()).unwrap();
    assert_eq!(json["acquisitions"], 10);
    for field in [
        "spins_per_collision",
        "sleep_ns",
        "spin_ns",
        "wait_p50_ns",
        "wait_p99_ns",
        "wait_p999_ns",
        "wait_max_ns",
        "hold_p50_ns",
        "hold_p99_ns",
        "handoffs_from",
        "long_holds",
    ] {
        assert!(json.get(field).is_some(), "missing {field}");
    }
    let off = new_lock(LockKind::Ttas, StatsMode::Counters);
    let mut t = LockThread::new(0, 1);
    off.with(&mut t, || ());
    let s = t.stats().summary();
    assert_eq!(
        (s.hold_p50_ns, s.long_holds),
        (None, None),
        "holds untimed in counters mode"
    );
}
