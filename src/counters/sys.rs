//! The raw interface: `perf_event_attr`, the `perf_event_open` system call, the ioctls
//! that enable, disable and reset a group, and the layouts `read(2)` returns. Constants
//! and field offsets are those of `include/uapi/linux/perf_event.h` and
//! perf_event_open(2).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `PERF_TYPE_HARDWARE`, `PERF_TYPE_SOFTWARE`, `PERF_TYPE_HW_CACHE`.
pub const TYPE_HARDWARE: u32 = 0;
pub const TYPE_SOFTWARE: u32 = 1;
pub const TYPE_HW_CACHE: u32 = 3;

/// `read_format` bits.
pub const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub const FORMAT_ID: u64 = 1 << 2;
pub const FORMAT_GROUP: u64 = 1 << 3;

/// Bits of the flags word (the bit-field after `read_format`).
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;

/// `PERF_FLAG_FD_CLOEXEC`: the descriptors do not leak into commands smtlab starts.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `_IO('$', 0)`, `_IO('$', 1)`, `_IO('$', 3)`, `_IOR('$', 7, u64)`.
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;
const IOC_ID: libc::c_ulong = 0x8008_2407;
/// `PERF_IOC_FLAG_GROUP`: the ioctl applies to the whole group of the leader.
const IOC_FLAG_GROUP: libc::c_ulong = 1;

/// The first 64 bytes of `struct perf_event_attr` (`PERF_ATTR_SIZE_VER0`): every field
/// smtlab sets is in them, and every kernel with perf events accepts this size.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Attr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const _: () = assert!(std::mem::size_of::<Attr>() == 64);

/// How one event is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenSpec {
    pub type_: u32,
    pub config: u64,
    /// Count only user space (`exclude_kernel`, `exclude_hv`): what `perf_event_paranoid`
    /// 2 allows an unprivileged process.
    pub user_only: bool,
    /// Also count the tasks the target creates from now on.
    pub inherit: bool,
    /// Start counting when the target calls `execve` (the event is opened disabled).
    pub enable_on_exec: bool,
    /// Read the group with one `read(2)`: `PERF_FORMAT_GROUP`.
    pub group_format: bool,
}

impl OpenSpec {
    fn attr(&self) -> Attr {
        let mut flags = FLAG_DISABLED;
        if self.inherit {
            flags |= FLAG_INHERIT;
        }
        if self.user_only {
            flags |= FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV;
        }
        if self.enable_on_exec {
            flags |= FLAG_ENABLE_ON_EXEC;
        }
        let mut read_format = FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING | FORMAT_ID;
        if self.group_format {
            read_format |= FORMAT_GROUP;
        }
        Attr {
            type_: self.type_,
            size: std::mem::size_of::<Attr>() as u32,
            config: self.config,
            read_format,
            flags,
            ..Attr::default()
        }
    }
}

/// Opens one event on the calling thread (`pid` 0, any CPU), disabled, as a member of
/// `group` (or a new leader). The error is the raw errno.
pub fn open(spec: &OpenSpec, group: Option<&OwnedFd>) -> Result<OwnedFd, i32> {
    let attr = spec.attr();
    let group_fd = group.map_or(-1, |g| g.as_raw_fd());
    // SAFETY: `attr` is a valid perf_event_attr of the size it declares, alive for the
    // call; the other arguments are integers. A non-negative result is a new descriptor
    // that nothing else owns.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const Attr,
            0 as libc::pid_t,
            -1 as libc::c_int,
            group_fd,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    // SAFETY: see above.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The kernel's id of an event, as group reads report it.
pub fn id(fd: &OwnedFd) -> Result<u64, i32> {
    let mut id = 0u64;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer, which is valid.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_ID as _, &mut id as *mut u64) };
    if r < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(id)
}

fn group_ioctl(leader: &OwnedFd, req: libc::c_ulong) {
    // SAFETY: these ioctls take an integer argument; failure leaves the counters as they
    // were, which the time-enabled figures then show.
    unsafe { libc::ioctl(leader.as_raw_fd(), req as _, IOC_FLAG_GROUP) };
}

/// Zeroes and starts the leader's whole group.
pub fn reset_and_enable(leader: &OwnedFd) {
    group_ioctl(leader, IOC_RESET);
    group_ioctl(leader, IOC_ENABLE);
}

/// Stops the leader's whole group.
pub fn disable(leader: &OwnedFd) {
    group_ioctl(leader, IOC_DISABLE);
}

/// One event's raw value with the times of its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Raw {
    pub value: u64,
    /// Time the event was enabled, ns.
    pub enabled_ns: u64,
    /// Time it was actually on the PMU (less than enabled when multiplexed), ns.
    pub running_ns: u64,
    pub id: u64,
}

/// Reads `fd` into `buf` (u64 words); the number of words read.
pub fn read_words(fd: &OwnedFd, buf: &mut [u64]) -> Result<usize, i32> {
    loop {
        // SAFETY: the buffer is valid for its length in bytes.
        let n = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                std::mem::size_of_val(buf),
            )
        };
        if n >= 0 {
            return Ok(n as usize / 8);
        }
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// Parses a `PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID` read:
/// `nr, time_enabled, time_running, {value, id} × nr`. None when the words are short.
pub fn parse_group(words: &[u64]) -> Option<Vec<Raw>> {
    let (&nr, rest) = words.split_first()?;
    let (&enabled_ns, rest) = rest.split_first()?;
    let (&running_ns, rest) = rest.split_first()?;
    let nr = usize::try_from(nr).ok()?;
    if rest.len() < nr.checked_mul(2)? {
        return None;
    }
    Some(
        rest.chunks_exact(2)
            .take(nr)
            .map(|p| Raw {
                value: p[0],
                enabled_ns,
                running_ns,
                id: p[1],
            })
            .collect(),
    )
}

/// Parses a single event's read (`value, time_enabled, time_running, id`).
pub fn parse_single(words: &[u64]) -> Option<Raw> {
    match words {
        [value, enabled_ns, running_ns, id, ..] => Some(Raw {
            value: *value,
            enabled_ns: *enabled_ns,
            running_ns: *running_ns,
            id: *id,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_bits_follow_the_header() {
        let a = OpenSpec {
            type_: TYPE_HARDWARE,
            config: 1,
            user_only: true,
            inherit: true,
            enable_on_exec: true,
            group_format: true,
        }
        .attr();
        assert_eq!(a.size, 64);
        assert_eq!(a.read_format, 0b1111);
        // disabled, inherit, exclude_kernel, exclude_hv, enable_on_exec
        assert_eq!(a.flags, 1 | 2 | 32 | 64 | 4096);
        let b = OpenSpec {
            type_: TYPE_SOFTWARE,
            config: 1,
            user_only: false,
            inherit: false,
            enable_on_exec: false,
            group_format: false,
        }
        .attr();
        assert_eq!((b.read_format, b.flags), (0b111, 1));
    }

    #[test]
    fn group_and_single_reads_parse() {
        let g = parse_group(&[2, 100, 50, 7, 11, 9, 12]).unwrap();
        assert_eq!(
            g,
            vec![
                Raw {
                    value: 7,
                    enabled_ns: 100,
                    running_ns: 50,
                    id: 11
                },
                Raw {
                    value: 9,
                    enabled_ns: 100,
                    running_ns: 50,
                    id: 12
                }
            ]
        );
        assert_eq!(parse_group(&[3, 100, 50, 7, 11]), None, "short read");
        assert_eq!(parse_group(&[u64::MAX, 1, 1]), None);
        assert_eq!(parse_group(&[]), None);
        assert_eq!(
            parse_single(&[5, 10, 10, 3]),
            Some(Raw {
                value: 5,
                enabled_ns: 10,
                running_ns: 10,
                id: 3
            })
        );
        assert_eq!(parse_single(&[5, 10]), None);
    }
}
