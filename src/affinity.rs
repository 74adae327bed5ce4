//! CPU affinity syscalls, sized for machines with more than 1024 CPUs.
//!
//! `libc::cpu_set_t` and `nix::CpuSet` are fixed at 1024 bits, and `sched_getaffinity`
//! fails with `EINVAL` when the buffer is narrower than the kernel's `nr_cpu_ids`, so we
//! call the raw syscalls with a growing `Vec<u64>` (sched_setaffinity(2), NOTES). Reading is free for
//! anyone; setting is for the engine (threads it owns) and the oltp driver (server backends
//! it pins and restores).

use crate::cpuset::{CpuSet, MAX_CPUS};
use std::io;

/// Affinity of thread/process `tid` (0 = the calling thread).
pub fn get_affinity(tid: libc::pid_t) -> io::Result<CpuSet> {
    let mut words = 16usize; // 1024 CPUs to start, doubled on EINVAL
    loop {
        let mut buf = vec![0u64; words];
        // SAFETY: the buffer is valid for `words * 8` bytes, which is the size passed.
        let r = unsafe {
            libc::syscall(
                libc::SYS_sched_getaffinity,
                tid,
                words * 8,
                buf.as_mut_ptr(),
            )
        };
        if r >= 0 {
            // The kernel returns how many bytes it wrote; the rest stays zero.
            return Ok(CpuSet::from_words(buf));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINVAL) && words * 64 < MAX_CPUS as usize {
            words *= 2;
            continue;
        }
        return Err(e);
    }
}

/// Affinity of the whole process as the kernel reports it for the calling thread's
/// thread group leader.
pub fn process_affinity() -> io::Result<CpuSet> {
    // SAFETY: getpid has no preconditions.
    get_affinity(unsafe { libc::getpid() })
}

/// Pins thread/process `tid` (0 = calling thread) to `cpus`.
pub fn set_affinity(tid: libc::pid_t, cpus: &CpuSet) -> io::Result<()> {
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "empty CPU set: a thread must be allowed at least one CPU",
        ));
    }
    let words = cpus.as_words();
    // SAFETY: the pointer and length describe the set's own word slice.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid,
            words.len() * 8,
            words.as_ptr(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread is running on right now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// Kernel thread id of the calling thread.
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_affinity_is_non_empty_and_contains_current_cpu() {
        let a = process_affinity().unwrap();
        assert!(!a.is_empty());
        let me = get_affinity(0).unwrap();
        assert!(me.contains(current_cpu().unwrap()));
    }

    #[test]
    fn pin_and_restore() {
        let before = get_affinity(0).unwrap();
        let first = before.first().unwrap();
        let t = std::thread::spawn(move || {
            set_affinity(0, &CpuSet::from_cpus([first])).unwrap();
            (get_affinity(0).unwrap(), current_cpu())
        });
        let (a, cpu) = t.join().unwrap();
        assert_eq!(a.to_vec(), [first]);
        assert_eq!(cpu, Some(first));
        assert!(set_affinity(0, &CpuSet::new()).is_err());
    }
}
