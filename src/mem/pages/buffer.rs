//! Anonymous mappings backed by one page size each: 4 KiB pages (`MADV_NOHUGEPAGE`),
//! transparent huge pages (`MADV_HUGEPAGE`, then `/proc/self/smaps` says how much was
//! granted), and hugetlb pages (`MAP_HUGETLB | MAP_HUGE_2MB / MAP_HUGE_1GB`), per mmap(2),
//! madvise(2) and Documentation/admin-guide/mm/{transhuge,hugetlbpage}.rst.

use crate::mem::tlb::{G1, K4, M2};
use serde::{Deserialize, Serialize};

/// How a buffer's pages are backed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageKind {
    /// 4 KiB pages: THP refused with `MADV_NOHUGEPAGE`.
    #[serde(rename = "4k")]
    Small,
    /// Transparent huge pages asked for with `MADV_HUGEPAGE` (granted or not).
    Thp,
    /// hugetlb 2 MiB pages.
    #[serde(rename = "hugetlb-2m")]
    Huge2M,
    /// hugetlb 1 GiB pages.
    #[serde(rename = "hugetlb-1g")]
    Huge1G,
}

impl PageKind {
    pub const ALL: [PageKind; 4] = [
        PageKind::Small,
        PageKind::Thp,
        PageKind::Huge2M,
        PageKind::Huge1G,
    ];

    pub fn label(self) -> &'static str {
        match self {
            PageKind::Small => "4 KiB",
            PageKind::Thp => "THP",
            PageKind::Huge2M => "hugetlb 2 MiB",
            PageKind::Huge1G => "hugetlb 1 GiB",
        }
    }

    /// The page size the mapping is meant to get (THP: 2 MiB when granted).
    pub fn page_bytes(self) -> u64 {
        match self {
            PageKind::Small => K4,
            PageKind::Thp | PageKind::Huge2M => M2,
            PageKind::Huge1G => G1,
        }
    }

    /// hugetlb pool directory name, for the hugetlb kinds.
    pub fn hugetlb_dir(self) -> Option<&'static str> {
        match self {
            PageKind::Huge2M => Some("hugepages-2048kB"),
            PageKind::Huge1G => Some("hugepages-1048576kB"),
            _ => None,
        }
    }

    /// A mapping of `len` bytes is rounded up to this (hugetlb mappings must be whole pages;
    /// THP and 4 KiB buffers to 2 MiB so THP can back all of them).
    pub fn round(self, len: u64) -> u64 {
        let unit = match self {
            PageKind::Huge1G => G1,
            _ => M2,
        };
        len.div_ceil(unit) * unit
    }
}

impl std::fmt::Display for PageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One mapping, unmapped when dropped.
pub struct Mapping {
    /// What munmap gets back.
    raw: *mut libc::c_void,
    raw_len: usize,
    /// The usable, suitably aligned start.
    ptr: *mut u8,
    len: usize,
    pub kind: PageKind,
}

// SAFETY: the mapping is owned by one `Mapping` and only touched through it.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes (rounded by [`PageKind::round`]) backed as `kind` asks, not yet
    /// touched. For hugetlb kinds the pages are reserved from the pool now, so a pool too
    /// small fails here (ENOMEM) instead of with SIGBUS on first touch.
    pub fn new(kind: PageKind, len: u64) -> std::io::Result<Mapping> {
        let len = kind.round(len) as usize;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let base = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        match kind {
            PageKind::Small | PageKind::Thp => {
                // THP backs only 2 MiB-aligned ranges: over-map by 2 MiB and align.
                let raw_len = len + M2 as usize;
                // SAFETY: a fresh anonymous mapping; no existing memory is affected.
                let raw = unsafe { libc::mmap(std::ptr::null_mut(), raw_len, prot, base, -1, 0) };
                if raw == libc::MAP_FAILED {
                    return Err(std::io::Error::last_os_error());
                }
                let ptr = (raw as usize).next_multiple_of(M2 as usize) as *mut u8;
                let advice = if kind == PageKind::Thp {
                    libc::MADV_HUGEPAGE
                } else {
                    libc::MADV_NOHUGEPAGE
                };
                let m = Mapping {
                    raw,
                    raw_len,
                    ptr,
                    len,
                    kind,
                };
                // SAFETY: [ptr, ptr + len) lies inside the mapping just made.
                if unsafe { libc::madvise(ptr.cast(), len, advice) } != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(m)
            }
            PageKind::Huge2M | PageKind::Huge1G => {
                let size_flag = if kind == PageKind::Huge2M {
                    libc::MAP_HUGE_2MB
                } else {
                    libc::MAP_HUGE_1GB
                };
                // SAFETY: a fresh anonymous mapping.
                let raw = unsafe {
                    libc::mmap(
                        std::ptr::null_mut(),
                        len,
                        prot,
                        base | libc::MAP_HUGETLB | size_flag,
                        -1,
                        0,
                    )
                };
                if raw == libc::MAP_FAILED {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(Mapping {
                    raw,
                    raw_len: len,
                    ptr: raw.cast(),
                    len,
                    kind,
                })
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The start address, to find the mapping in /proc/self/smaps.
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Writes one byte per 4 KiB, faulting every page in, in 16 MiB steps between which
    /// `stop` is asked. Returns false when stopped.
    pub fn touch(&self, stop: &dyn Fn() -> bool) -> bool {
        const STEP: usize = 16 << 20;
        let mut off = 0;
        while off < self.len {
            if stop() {
                return false;
            }
            let end = (off + STEP).min(self.len);
            let mut p = off;
            while p < end {
                // SAFETY: p < len, inside the mapping; volatile so the store happens.
                unsafe { std::ptr::write_volatile(self.ptr.add(p), 1) };
                p += K4 as usize;
            }
            off = end;
        }
        true
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the region mmap returned.
        unsafe { libc::munmap(self.raw, self.raw_len) };
    }
}

/// What /proc/self/smaps says backs a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backing {
    /// `AnonHugePages`: bytes backed by transparent huge pages.
    pub anon_huge_bytes: u64,
    /// `KernelPageSize`: the mapping's page size (2 MiB or 1 GiB for hugetlb).
    pub kernel_page_bytes: u64,
    /// `Rss`.
    pub rss_bytes: u64,
}

/// The smaps entry for the mapping that contains `addr` (pure, on the file's text).
pub fn backing_in(smaps: &str, addr: usize) -> Option<Backing> {
    let mut inside = false;
    let mut b = Backing {
        anon_huge_bytes: 0,
        kernel_page_bytes: 0,
        rss_bytes: 0,
    };
    let mut found = false;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            if found {
                break;
            }
            inside = lo <= addr && addr < hi;
            found = inside;
            continue;
        }
        if !inside {
            continue;
        }
        let kb = |rest: &str| {
            rest.split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .map(|n| n * 1024)
        };
        if let Some(r) = line.strip_prefix("AnonHugePages:") {
            b.anon_huge_bytes = kb(r).unwrap_or(0);
        } else if let Some(r) = line.strip_prefix("KernelPageSize:") {
            b.kernel_page_bytes = kb(r).unwrap_or(0);
        } else if let Some(r) = line.strip_prefix("Rss:") {
            b.rss_bytes = kb(r).unwrap_or(0);
        }
    }
    found.then_some(b)
}

/// [`backing_in`] of this process.
pub fn backing(addr: usize) -> Option<Backing> {
    backing_in(
        &crate::fsutil::read_kernel_text("/proc/self/smaps").ok()?,
        addr,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smaps_entry_of_an_address() {
        let s = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n\
                 Size:               4096 kB\nKernelPageSize:        4 kB\nRss:                4096 kB\n\
                 AnonHugePages:      2048 kB\n\
                 7f0000400000-7f0080400000 rw-p 00000000 00:0f 1234  /anon_hugepage (deleted)\n\
                 Size:            2097152 kB\nKernelPageSize:  1048576 kB\nRss:       0 kB\nAnonHugePages:         0 kB\n";
        let a = backing_in(s, 0x7f00_0010_0000).unwrap();
        assert_eq!(a.anon_huge_bytes, 2 << 20);
        assert_eq!(a.kernel_page_bytes, 4096);
        let b = backing_in(s, 0x7f00_0040_0000).unwrap();
        assert_eq!(b.kernel_page_bytes, 1 << 30);
        assert_eq!(backing_in(s, 0x10), None);
    }

    #[test]
    fn a_4k_mapping_is_refused_thp_and_unmapped() {
        let m = Mapping::new(PageKind::Small, 4 << 20).unwrap();
        assert_eq!(m.len(), 4 << 20);
        assert_eq!(m.addr() % (2 << 20), 0);
        assert!(m.touch(&|| false));
        let b = backing(m.addr()).expect("in smaps");
        assert_eq!(b.anon_huge_bytes, 0, "MADV_NOHUGEPAGE");
        assert!(b.rss_bytes >= 4 << 20);
        let stopped = Mapping::new(PageKind::Small, 64 << 20).unwrap();
        assert!(!stopped.touch(&|| true));
    }

    #[test]
    fn rounding_keeps_whole_pages() {
        assert_eq!(PageKind::Small.round(16 << 10), 2 << 20);
        assert_eq!(PageKind::Huge2M.round(5 << 20), 6 << 20);
        assert_eq!(PageKind::Huge1G.round(512 << 20), 1 << 30);
    }
}
