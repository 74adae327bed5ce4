//! `mcs`: the Mellor-Crummey–Scott queue lock. FIFO like ticket, but each waiter spins on its
//! own node (its own cache line), so a handoff touches one waiter's line, not all of them
//! (CK `ck_spinlock_mcs`; Linux qspinlock's core, REFERENCE §2.1). Still FIFO, so still
//! collapses when the next waiter is descheduled.
//!
//! Queue nodes come from the [`LockThread`]'s pool; a node leaves the pool while it is in a
//! queue or held, so one thread may hold several MCS locks at once.

use super::probe::Probe;
use super::{LockKind, LockThread, NO_OWNER, RawLock};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// A waiter's queue node, alone on its 128-byte block so its spinning is local.
#[repr(align(128))]
pub(crate) struct Node {
    next: AtomicPtr<Node>,
    waiting: AtomicBool,
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
                waiting: AtomicBool::new(false),
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
}

impl Default for Mcs {
    fn default() -> Self {
        Mcs {
            tail: AtomicPtr::new(ptr::null_mut()),
            holder: AtomicPtr::new(ptr::null_mut()),
        }
    }
}

impl RawLock for Mcs {
    fn kind(&self) -> LockKind {
        LockKind::Mcs
    }

    #[inline]
    fn acquire<P: Probe>(&self, p: &mut P, t: &mut LockThread) -> u32 {
        let node = t.nodes.take();
        // SAFETY: `node` is ours (just taken) until a predecessor links to it below.
        unsafe {
            (*node).next.store(ptr::null_mut(), Ordering::Relaxed);
            (*node).waiting.store(true, Ordering::Relaxed);
        }
        // AcqRel: Release publishes the node's initialisation to the successor that will read
        // it from `tail`; Acquire makes the predecessor's node valid for our link below.
        let prev = self.tail.swap(node, Ordering::AcqRel);
        if !prev.is_null() {
            // SAFETY: `prev` was the tail we replaced, `node` is ours.
            unsafe { wait_behind(p, prev, node) };
        }
        // Holder-only field; the lock's acquire/release edges order it between holders.
        self.holder.store(node, Ordering::Relaxed);
        // Waiters spin on their own nodes, not the lock line: the wrapper's owner field
        // costs nothing here.
        NO_OWNER
    }

    #[inline]
    unsafe fn release(&self, t: &mut LockThread) {
        let node = self.holder.load(Ordering::Relaxed);
        // SAFETY (whole block): the caller holds the lock, so `node` is the holder's node,
        // out of every pool; successors are valid until we clear their `waiting`.
        unsafe {
            let mut next = (*node).next.load(Ordering::Acquire);
            if next.is_null() {
                if self
                    .tail
                    .compare_exchange(node, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    t.nodes.give(node);
                    return;
                }
                // A successor swapped itself in but has not linked yet: wait for the link.
                loop {
                    std::hint::spin_loop();
                    next = (*node).next.load(Ordering::Acquire);
                    if !next.is_null() {
                        break;
                    }
                }
            }
            (*next).waiting.store(false, Ordering::Release);
            t.nodes.give(node);
        }
    }

    fn queue_tail(&self) -> Option<usize> {
        Some(self.tail.load(Ordering::Relaxed) as usize)
    }
}

/// Links `node` behind `prev` and spins on `node` until handed the lock. Out of line so the
/// uncontended path inlines with the probe in registers.
///
/// # Safety
/// `prev` is the tail this thread's swap replaced; `node` is this thread's enqueued node.
#[cold]
#[inline(never)]
unsafe fn wait_behind<P: Probe>(p: &mut P, prev: *mut Node, node: *mut Node) {
    p.collision();
    // SAFETY: `prev` stays out of its pool until its owner hands over to us, which happens
    // only after it sees this link.
    unsafe { (*prev).next.store(node, Ordering::Release) };
    let mut spins = 0;
    // SAFETY: our own node.
    while unsafe { (*node).waiting.load(Ordering::Acquire) } {
        std::hint::spin_loop();
        spins += 1;
    }
    p.spins(spins);
}
