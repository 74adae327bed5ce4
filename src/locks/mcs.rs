//! `mcs`: the Mellor-Crummey–Scott queue lock. FIFO like ticket, but each waiter spins on its
//! own node (its own cache line), so a handoff touches one waiter's line, not all of them
//! (CK `ck_spinlock_mcs`; Linux qspinlock's core, `kernel/locking/qspinlock.c`). Still FIFO, so still
//! collapses when the next waiter is descheduled.
//!
//! Queue nodes come from the [`LockThread`]'s pool; a node leaves the pool while it is in a
//! queue or held, so one thread may hold several MCS locks at once.
//!
//! The lock carries its last holder for the instrumentation, in stores it makes anyway: a
//! release hands over by writing its index + 1 into the successor's `grant` word (where
//! textbook MCS writes `false`), and a release that leaves the lock free records it in
//! `last_owner` before the CAS that frees it.

use super::probe::Probe;
use super::{LockKind, LockThread, NO_OWNER, RawLock};
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// `grant` of a node still waiting.
const WAITING: u32 = 0;

/// A waiter's queue node, alone on its 128-byte block so its spinning is local.
#[repr(align(128))]
pub(crate) struct Node {
    next: AtomicPtr<Node>,
    /// [`WAITING`], then the index + 1 of the holder that handed over.
    grant: AtomicU32,
}

/// A thread's spare nodes.
#[derive(Default)]
pub(crate) struct NodePool {
    // Boxed on purpose: a node's address must not move while a queue points at it.
    #[allow(clippy::vec_box)]
    free: Vec<Box<Node>>,
}

impl NodePool {
    /// A node owned by the caller until [`NodePool::give`] (leaked if never given back, which
    /// keeps it valid for a queue that still points at it).
    #[inline]
    fn take(&mut self) -> *mut Node {
        let b = self.free.pop().unwrap_or_else(|| {
            Box::new(Node {
                next: AtomicPtr::new(ptr::null_mut()),
                grant: AtomicU32::new(WAITING),
            })
        });
        Box::into_raw(b)
    }

    /// # Safety
    /// `n` came from `take` (of any pool) and no queue refers to it any more.
    #[inline]
    unsafe fn give(&mut self, n: *mut Node) {
        // SAFETY: per the contract, `n` is an unaliased Box pointer.
        self.free.push(unsafe { Box::from_raw(n) });
    }
}

/// The lock: the queue's tail, and the holder's node (read back at unlock).
pub(crate) struct Mcs {
    tail: AtomicPtr<Node>,
    holder: AtomicPtr<Node>,
    /// Index of the holder whose release left the lock free ([`NO_OWNER`] at first).
    last_owner: AtomicU32,
}

impl Default for Mcs {
    fn default() -> Self {
        Mcs {
            tail: AtomicPtr::new(ptr::null_mut()),
            holder: AtomicPtr::new(ptr::null_mut()),
            last_owner: AtomicU32::new(NO_OWNER),
        }
    }
}

impl RawLock for Mcs {
    fn kind(&self) -> LockKind {
        LockKind::Mcs
    }

    const TRACKS_OWNER: bool = true;

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32 {
        let node = t.nodes.take();
        // SAFETY: `node` is ours (just taken) until a predecessor links to it below.
        unsafe {
            (*node).next.store(ptr::null_mut(), Ordering::Relaxed);
            (*node).grant.store(WAITING, Ordering::Relaxed);
        }
        // AcqRel: Release publishes the node's initialisation to the successor that will read
        // it from `tail`; Acquire makes the predecessor's node valid for our link below.
        let prev = self.tail.swap(node, Ordering::AcqRel);
        let last = if prev.is_null() {
            // Free: its last holder wrote `last_owner` before the CAS our swap follows.
            self.last_owner.load(Ordering::Relaxed)
        } else {
            // SAFETY: `prev` was the tail we replaced, `node` is ours.
            unsafe { wait_behind(p, prev, node) }
        };
        // Holder-only field; the lock's acquire/release edges order it between holders.
        self.holder.store(node, Ordering::Relaxed);
        last
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        let node = self.holder.load(Ordering::Relaxed);
        // SAFETY (whole block): the caller holds the lock, so `node` is the holder's node,
        // out of every pool; successors are valid until we write their `grant`.
        unsafe {
            let mut next = (*node).next.load(Ordering::Acquire);
            if next.is_null() {
                // Before the CAS: an acquirer that finds the lock free reads it after its
                // swap, which follows (and synchronises with) the CAS.
                self.last_owner.store(t.index, Ordering::Relaxed);
                if self
                    .tail
                    .compare_exchange(node, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    t.nodes.give(node);
                    return;
                }
                // A successor swapped itself in but has not linked yet: wait for the link.
                let mut spins = 0;
                loop {
                    std::hint::spin_loop();
                    spins += 1;
                    super::yield_if_stopping(spins);
                    next = (*node).next.load(Ordering::Acquire);
                    if !next.is_null() {
                        break;
                    }
                }
            }
            (*next).grant.store(t.index + 1, Ordering::Release);
            t.nodes.give(node);
        }
    }

    fn queue_tail(&self) -> Option<usize> {
        Some(self.tail.load(Ordering::Relaxed) as usize)
    }
}

/// Links `node` behind `prev` and spins on `node` until handed the lock; returns the index of
/// the holder that handed over. Out of line so the uncontended path inlines with the probe in
/// registers.
///
/// # Safety
/// `prev` is the tail this thread's swap replaced; `node` is this thread's enqueued node.
#[cold]
#[inline(never)]
unsafe fn wait_behind<P: Probe>(p: &mut P, prev: *mut Node, node: *mut Node) -> u32 {
    p.collision();
    // SAFETY: `prev` stays out of its pool until its owner hands over to us, which happens
    // only after it sees this link.
    unsafe { (*prev).next.store(node, Ordering::Release) };
    let mut spins = 0;
    loop {
        // SAFETY: our own node.
        let g = unsafe { (*node).grant.load(Ordering::Acquire) };
        if g != WAITING {
            p.spins(spins);
            return g - 1;
        }
        std::hint::spin_loop();
        spins += 1;
        super::yield_if_stopping(spins);
    }
}
