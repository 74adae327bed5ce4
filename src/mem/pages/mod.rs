//! `mem pages`: what page size does to memory access on this CPU, measured.
//!
//! For each page size — 4 KiB (`MADV_NOHUGEPAGE`), THP (`MADV_HUGEPAGE`), hugetlb 2 MiB
//! and 1 GiB when pages are reserved — one buffer of `--max` bytes is mapped and faulted
//! in. Then, working set by working set (16 KiB up to `--max`, two per octave), the same
//! random cycle is written into every buffer and each page size is sampled in turn,
//! rotating which goes first (interleaved, so drift hits every curve alike): one
//! discarded warm-up, then `repeat` samples of dependent-load latency and of sequential
//! read bandwidth, summarised as median and MAD ([`crate::stats`]). First-touch cost is
//! measured on fresh mappings, interleaved the same way.
//!
//! The measuring thread is not pinned (only the engine pins); a migration between samples
//! refills caches the next warm-up fills again.
//!
//! Codemap: [`buffer`] maps and checks backing, [`measure`] holds the three loops,
//! [`reserve`] raises hugetlb pools for `--reserve` and puts them back, [`analysis`] finds
//! bends and the 4 KiB departure (pure), [`model`] is the serde model, [`view`] the text,
//! the study's tables and the export.

pub mod analysis;
pub mod buffer;
pub mod measure;
pub mod model;
pub mod reserve;
pub mod view;

use crate::error::BadInput;
use crate::render::bytes;
use crate::stats::Summary;
use anyhow::Result;
use buffer::{Mapping, PageKind};
use model::*;
use std::path::Path;
use std::time::Duration;

/// `--max` when not given: 1 GiB, as far as MemAvailable allows.
pub const DEFAULT_MAX: u64 = 1 << 30;
/// The largest `--max` considered at all: a user address space of 4-level paging, 128 TiB
/// (Documentation/arch/x86/x86_64/mm.rst); MemAvailable refuses far less in practice.
pub const MAX_MAPPABLE: u64 = 1 << 47;
/// The fresh mapping each first-touch sample faults in (rounded up to whole pages).
pub const FIRST_TOUCH_BYTES: u64 = 64 << 20;

/// A checked `mem pages` run.
#[derive(Debug, Clone)]
pub struct PagesConfig {
    pub max_bytes: u64,
    /// Samples per working set and page size.
    pub repeat: usize,
    /// Raise hugetlb pools for the run (root), putting them back afterwards.
    pub reserve: bool,
    pub seed: u64,
    pub chase_sample: Duration,
    pub bandwidth_sample: Duration,
    /// A note when `max_bytes` is smaller than asked (the default shrunk to fit).
    pub note: Option<String>,
    /// Why hugetlb pages are left alone even when the pools have them free (the study);
    /// None: measured when free or reserved.
    pub leave_hugetlb: Option<String>,
}

/// Bytes a run with this `--max` maps beside hugetlb pages: the 4 KiB and THP buffers,
/// the cycle's index (4 bytes per 64-byte line) and a first-touch mapping.
pub fn bytes_needed(max: u64) -> u64 {
    2 * PageKind::Small.round(max) + max / 16 + FIRST_TOUCH_BYTES.min(PageKind::Small.round(max))
}

/// The largest `--max` whose [`bytes_needed`] fits in `available`, in whole MiB.
pub fn largest_max(available: u64) -> u64 {
    let mut lo = 0u64;
    let mut hi = available;
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if bytes_needed(mid) <= available {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo / (1 << 20) * (1 << 20)
}

impl PagesConfig {
    /// Checks `--max` (`None`: the default) against MemAvailable (`available`; None when
    /// /proc/meminfo has no such line, then only the floor is checked).
    pub fn new(
        max: Option<u64>,
        repeat: usize,
        reserve: bool,
        available: Option<u64>,
    ) -> Result<Self, BadInput> {
        let floor = analysis::MIN_WORKING_SET;
        let mut note = None;
        let max_bytes = match max {
            Some(m) if m < floor => {
                return Err(BadInput(format!(
                    "--max {}: below the smallest working set measured, {}; give 16KiB or more \
                     (e.g. 512MiB)",
                    bytes(m),
                    bytes(floor)
                )));
            }
            // Before any arithmetic on it: `18446744073709551615` overflowed the rounding
            // and was described as "a buffer of 0 B".
            Some(m) if m > MAX_MAPPABLE => {
                return Err(BadInput(format!(
                    "--max {m}: {} is more than a process can map ({} of address space on \
                     x86-64 with 4-level page tables); give at most this machine's memory, \
                     e.g. 1GiB",
                    bytes(m),
                    bytes(MAX_MAPPABLE)
                )));
            }
            Some(m) => {
                if let Some(a) = available
                    && bytes_needed(m) > a
                {
                    return Err(BadInput(format!(
                        "--max {}: the run maps {} (a 4 KiB and a THP buffer of {} each, the \
                         cycle and a first-touch mapping), but MemAvailable is {}; the largest \
                         --max that fits here is {}",
                        bytes(m),
                        bytes(bytes_needed(m)),
                        bytes(PageKind::Small.round(m)),
                        bytes(a),
                        bytes(largest_max(a))
                    )));
                }
                m
            }
            None => match available {
                Some(a) if bytes_needed(DEFAULT_MAX) > a => {
                    let m = largest_max(a).max(floor);
                    note = Some(format!(
                        "--max {} instead of the default {}: MemAvailable is {}",
                        bytes(m),
                        bytes(DEFAULT_MAX),
                        bytes(a)
                    ));
                    m
                }
                _ => DEFAULT_MAX,
            },
        };
        Ok(PagesConfig {
            max_bytes,
            repeat: repeat.max(1),
            reserve,
            seed: 0x5eed_ba5e,
            chase_sample: Duration::from_millis(10),
            bandwidth_sample: Duration::from_millis(5),
            note,
            leave_hugetlb: None,
        })
    }
}

/// hugetlb pages of `kind` a run with `max` needs free.
fn hugetlb_pages(kind: PageKind, max: u64) -> u64 {
    kind.round(max) / kind.page_bytes()
}

fn read_num(path: &Path) -> Option<u64> {
    crate::fsutil::read_kernel_text(path)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The first bracketed word of a sysfs selector.
fn selected(path: &Path) -> Option<String> {
    let t = crate::fsutil::read_kernel_text(path).ok()?;
    t.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string)
}

/// Why a hugetlb size cannot be measured without reserving, with the command that would
/// reserve it; None when enough pages are free.
fn hugetlb_shortfall(kind: PageKind, max: u64) -> Option<String> {
    let pool = kind.hugetlb_dir()?;
    let dir = Path::new("/sys/kernel/mm/hugepages").join(pool);
    if !dir.is_dir() {
        return Some(match kind {
            PageKind::Huge1G => format!(
                "this kernel offers no 1 GiB hugetlb pages ({} missing; x86 needs the pdpe1gb CPU flag)",
                dir.display()
            ),
            _ => format!(
                "this kernel has no hugetlb pages ({} missing)",
                dir.display()
            ),
        });
    }
    let need = hugetlb_pages(kind, max);
    let nr = read_num(&dir.join("nr_hugepages")).unwrap_or(0);
    let free = read_num(&dir.join("free_hugepages")).unwrap_or(0);
    if free >= need {
        return None;
    }
    let want = nr + (need - free);
    let default_2m = read_num(Path::new("/proc/sys/vm/nr_hugepages")).is_some()
        && crate::fsutil::read_kernel_text("/proc/meminfo").is_ok_and(|m| {
            m.lines()
                .any(|l| l.starts_with("Hugepagesize:") && l.contains(" 2048 kB"))
        });
    let how = if kind == PageKind::Huge2M && default_2m {
        format!(
            "`sudo sysctl vm.nr_hugepages={want}` (or `echo {want} | sudo tee {}`)",
            dir.join("nr_hugepages").display()
        )
    } else {
        format!(
            "`echo {want} | sudo tee {}`",
            dir.join("nr_hugepages").display()
        )
    };
    let extra = if kind == PageKind::Huge1G {
        "; 1 GiB pages need 1 GiB of contiguous free memory each, which a long-running \
         machine may not have: boot with `hugepagesz=1G hugepages=N` to be sure"
    } else {
        ""
    };
    Some(format!(
        "needs {need} free {} page{}, the pool has {free} free (of {nr}): reserve them with {how}, \
         or run with --reserve as root (smtlab then puts the pool back){extra}",
        bytes(kind.page_bytes()),
        if need == 1 { "" } else { "s" }
    ))
}

/// Progress for people (stderr) through the crate's one progress trait: a change to the
/// machine (a pool raised or put back) is a `note`, always shown; where the run is, a
/// `step`. Tests pass [`Quiet`].
pub use crate::progress::{Progress, Quiet};

/// Runs the measurement on this machine.
pub fn run(cfg: &PagesConfig, progress: &dyn Progress) -> Result<PagesReport> {
    let stop = || crate::interrupt::requested();
    let mut notes: Vec<String> = cfg.note.iter().cloned().collect();
    let jdir = reserve::journal_dir();
    for said in reserve::recover(Path::new("/"), &jdir)? {
        progress.note(&said);
        notes.push(said);
    }
    let thp_enabled = selected(Path::new("/sys/kernel/mm/transparent_hugepage/enabled"));

    // Which page sizes run, and which pools to raise.
    let mut skipped: Vec<(PageKind, String)> = Vec::new();
    let mut wants: Vec<(&str, u64)> = Vec::new();
    for kind in PageKind::ALL {
        let why = match kind {
            PageKind::Small => None,
            PageKind::Thp => match thp_enabled.as_deref() {
                None => Some(
                    "this kernel has no transparent huge pages \
                     (/sys/kernel/mm/transparent_hugepage/enabled missing)"
                        .to_string(),
                ),
                Some("never") => Some(
                    "THP enabled = never: madvise(MADV_HUGEPAGE) is ignored; `echo madvise | sudo \
                     tee /sys/kernel/mm/transparent_hugepage/enabled` to measure it"
                        .to_string(),
                ),
                _ => None,
            },
            PageKind::Huge2M | PageKind::Huge1G if cfg.leave_hugetlb.is_some() => {
                cfg.leave_hugetlb.clone()
            }
            PageKind::Huge2M | PageKind::Huge1G => match hugetlb_shortfall(kind, cfg.max_bytes) {
                Some(_)
                    if cfg.reserve
                        && Path::new("/sys/kernel/mm/hugepages")
                            .join(kind.hugetlb_dir().unwrap_or_default())
                            .is_dir() =>
                {
                    wants.push((
                        kind.hugetlb_dir().unwrap_or_default(),
                        hugetlb_pages(kind, cfg.max_bytes),
                    ));
                    None
                }
                other => other,
            },
        };
        if let Some(w) = why {
            skipped.push((kind, w));
        }
    }
    // Declared before the buffers, so it is dropped (and restores) after them.
    let mut reservation = if wants.is_empty() {
        None
    } else {
        let r = reserve::Reservation::reserve(Path::new("/"), &jdir, &wants)?;
        for c in &r.changes {
            progress.note(&format!(
                "hugetlb: reserved {} → {} pages in {} for this run (asked {}); it goes back to {} when the run ends",
                c.before, c.granted, c.pool, c.asked, c.before
            ));
        }
        Some(r)
    };
    // A pool the kernel could not raise far enough.
    for kind in [PageKind::Huge2M, PageKind::Huge1G] {
        if cfg.reserve
            && !skipped.iter().any(|(k, _)| *k == kind)
            && hugetlb_shortfall(kind, cfg.max_bytes).is_some()
        {
            let pool = kind.hugetlb_dir().unwrap_or_default();
            let (asked, got) = reservation
                .as_ref()
                .and_then(|r| r.changes.iter().find(|c| c.pool == pool))
                .map_or((0, 0), |c| {
                    (c.asked - c.before, c.granted.saturating_sub(c.before))
                });
            let size = bytes(kind.page_bytes());
            let boot = if kind == PageKind::Huge1G {
                ": 1 GiB pages are rarely free at run time; boot with `hugepagesz=1G hugepages=N`"
            } else {
                ""
            };
            skipped.push((
                kind,
                format!(
                    "--reserve asked for {asked} more {size} page{} and the kernel granted {got} \
                     (each needs {size} of contiguous free memory){boot}",
                    if asked == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    let measured: Vec<PageKind> = PageKind::ALL
        .into_iter()
        .filter(|k| !skipped.iter().any(|(s, _)| s == k))
        .collect();

    let result = measure_all(cfg, &measured, &mut skipped, progress, &stop);
    let reserved = match reservation.as_mut() {
        Some(r) => {
            let res = r.restore();
            for c in &r.changes {
                progress.note(&format!(
                    "hugetlb: {} put back to {} pages (now {})",
                    c.pool,
                    c.before,
                    c.restored.map_or("unknown".into(), |v| v.to_string())
                ));
            }
            res?;
            r.changes.clone()
        }
        None => Vec::new(),
    };
    let (mut kinds, interrupted, more) = result?;
    notes.extend(more);
    for (kind, why) in skipped {
        kinds.push(KindResult {
            kind,
            skipped: Some(why),
            backing: None,
            points: Vec::new(),
            first_touch: None,
            bends: Vec::new(),
        });
    }
    kinds.sort_by_key(|k| k.kind);

    let tlb = crate::mem::tlb::read();
    let caches = cache_marks();
    for k in &mut kinds {
        let granted = k.backing.as_ref().is_some_and(|b| b.thp_bytes > 0);
        let m = analysis::marks(k.kind, granted, &tlb, &caches);
        k.bends = analysis::bends(&k.points, &m);
    }
    let departure = kinds
        .iter()
        .find(|k| k.kind == PageKind::Small && k.skipped.is_none())
        .zip(analysis::reference(&kinds))
        .and_then(|(s, r)| analysis::departure(s, r, &tlb));
    if cfg!(debug_assertions) {
        notes.push(Note::Caveat(crate::render::Caveat::DebugBuild).into());
    }
    if is_vm() {
        notes.push(Note::TwoLevelWalk.into());
    }
    Ok(PagesReport {
        max_bytes: cfg.max_bytes,
        repeat: cfg.repeat,
        chase_sample_ns: cfg.chase_sample.as_nanos() as u64,
        bandwidth_sample_ns: cfg.bandwidth_sample.as_nanos() as u64,
        seed: cfg.seed,
        thp_enabled,
        kinds,
        tlb,
        caches,
        departure,
        reserved,
        interrupted,
        notes,
    })
}

fn is_vm() -> bool {
    crate::fsutil::read_kernel_text("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"))
    })
}

/// L1d, L2 and L3 of the first CPU this process may use.
fn cache_marks() -> Vec<CacheMark> {
    let Ok(topo) = crate::topology::discover(Path::new("/")) else {
        return Vec::new();
    };
    let Some(cpu) = topo.allowed().first() else {
        return Vec::new();
    };
    (1..=3u8)
        .filter_map(|level| {
            let c = topo.cache_of(cpu, level)?;
            Some(CacheMark {
                name: c.name(),
                size_bytes: c.size_bytes?,
            })
        })
        .collect()
}

/// Rotates `kinds` by `r`: sample r starts with a different page size.
fn rotated(kinds: &[PageKind], r: usize) -> Vec<PageKind> {
    let mut v = kinds.to_vec();
    if !v.is_empty() {
        let n = v.len();
        v.rotate_left(r % n);
    }
    v
}

/// The measurement proper: first touch, buffers, then every working set. Returns the
/// measured kinds, whether a signal cut it short, and notes. Kinds whose buffer could not
/// be mapped join `skipped`.
fn measure_all(
    cfg: &PagesConfig,
    kinds: &[PageKind],
    skipped: &mut Vec<(PageKind, String)>,
    progress: &dyn Progress,
    stop: &dyn Fn() -> bool,
) -> Result<(Vec<KindResult>, bool, Vec<String>)> {
    // First touch: fresh mappings, one discarded warm-up round, interleaved.
    progress.step("first-touch cost");
    let mut touch: Vec<Vec<measure::Touch>> = vec![Vec::new(); kinds.len()];
    let mut touch_failed: Vec<Option<String>> = vec![None; kinds.len()];
    let mut interrupted = false;
    'rounds: for round in 0..=cfg.repeat {
        for kind in rotated(kinds, round) {
            let i = kinds.iter().position(|k| *k == kind).unwrap_or(0);
            if touch_failed[i].is_some() {
                continue;
            }
            let len = FIRST_TOUCH_BYTES.min(cfg.max_bytes);
            let m = match Mapping::new(kind, len) {
                Ok(m) => m,
                Err(e) => {
                    touch_failed[i] =
                        Some(format!("mapping {} failed: {e}", bytes(kind.round(len))));
                    continue;
                }
            };
            match measure::first_touch(&m, stop) {
                Some(t) if round > 0 => touch[i].push(t),
                Some(_) => {}
                None => {
                    interrupted = true;
                    break 'rounds;
                }
            }
        }
    }

    // The buffers, faulted in.
    let mut bufs: Vec<(PageKind, Mapping, Option<BackingSummary>)> = Vec::new();
    for &kind in kinds {
        if interrupted {
            break;
        }
        progress.step(&format!(
            "mapping {} with {} pages",
            bytes(cfg.max_bytes),
            kind
        ));
        let m = match Mapping::new(kind, cfg.max_bytes) {
            Ok(m) => m,
            Err(e) => {
                skipped.push((
                    kind,
                    format!("mapping {} failed: {e}", bytes(kind.round(cfg.max_bytes))),
                ));
                continue;
            }
        };
        if !m.touch(stop) {
            interrupted = true;
            break;
        }
        let backing = buffer::backing(m.addr()).map(|b| backing_summary(kind, m.len() as u64, b));
        bufs.push((kind, m, backing));
    }
    let order: Vec<PageKind> = bufs.iter().map(|b| b.0).collect();
    let mut points: Vec<Vec<Point>> = vec![Vec::new(); bufs.len()];
    let sets = analysis::working_sets(cfg.max_bytes);
    'sets: for (si, &ws) in sets.iter().enumerate() {
        if interrupted || bufs.is_empty() {
            break;
        }
        progress.step(&format!(
            "working set {} ({} of {})",
            bytes(ws),
            si + 1,
            sets.len()
        ));
        let lines = (ws as usize / measure::LINE).max(2);
        let Some(perm) = measure::cycle(lines, cfg.seed ^ ws, stop) else {
            interrupted = true;
            break;
        };
        for (_, m, _) in &bufs {
            if !measure::write_cycle(m, &perm, stop) {
                interrupted = true;
                break 'sets;
            }
        }
        drop(perm);
        let mut lat: Vec<Vec<f64>> = vec![Vec::new(); bufs.len()];
        let mut bw: Vec<Vec<f64>> = vec![Vec::new(); bufs.len()];
        let mut at: Vec<usize> = bufs.iter().map(|(_, m, _)| m.as_ptr() as usize).collect();
        // Round 0 is the warm-up: it loads the working set into caches and TLBs.
        for round in 0..=cfg.repeat {
            for kind in rotated(&order, round) {
                let i = order.iter().position(|k| *k == kind).unwrap_or(0);
                let m = &bufs[i].1;
                let l = measure::chase(&mut at[i], cfg.chase_sample, stop);
                let b = measure::read_bandwidth(m, ws as usize, cfg.bandwidth_sample, stop);
                match (l, b) {
                    (Some(l), Some(b)) => {
                        if round > 0 {
                            lat[i].push(l);
                            bw[i].push(b);
                        }
                    }
                    _ => {
                        interrupted = true;
                        break 'sets;
                    }
                }
            }
        }
        for i in 0..bufs.len() {
            if let (Some(l), Some(b)) = (Summary::of(&lat[i]), Summary::of(&bw[i])) {
                points[i].push(Point {
                    working_set_bytes: ws,
                    latency_ns: l,
                    bandwidth_bytes_per_sec: b,
                });
            }
        }
    }

    let mut out = Vec::new();
    for (i, (kind, m, backing)) in bufs.into_iter().enumerate() {
        drop(m);
        let ti = kinds.iter().position(|k| *k == kind).unwrap_or(0);
        out.push(KindResult {
            kind,
            skipped: None,
            backing,
            points: std::mem::take(&mut points[i]),
            first_touch: first_touch_summary(kind, cfg.max_bytes, &touch[ti]),
            bends: Vec::new(),
        });
    }
    let notes = touch_failed
        .into_iter()
        .zip(kinds)
        .filter_map(|(why, k)| Some(format!("{k}: first-touch cost not measured: {}", why?)))
        .collect();
    Ok((out, interrupted, notes))
}

fn first_touch_summary(kind: PageKind, max: u64, samples: &[measure::Touch]) -> Option<FirstTouch> {
    if samples.is_empty() {
        return None;
    }
    let len = kind.round(FIRST_TOUCH_BYTES.min(max));
    let mib = len as f64 / (1u64 << 20) as f64;
    let per_fault: Vec<f64> = samples
        .iter()
        .map(|t| t.ns / t.faults.max(1) as f64)
        .collect();
    let per_mib: Vec<f64> = samples.iter().map(|t| t.ns / mib).collect();
    let mut faults: Vec<u64> = samples.iter().map(|t| t.faults).collect();
    faults.sort_unstable();
    Some(FirstTouch {
        bytes: len,
        faults: faults[faults.len() / 2],
        ns_per_fault: Summary::of(&per_fault)?,
        ns_per_mib: Summary::of(&per_mib)?,
    })
}

fn backing_summary(kind: PageKind, len: u64, b: buffer::Backing) -> BackingSummary {
    let share = b.anon_huge_bytes as f64 / len.max(1) as f64;
    let sentence = match kind {
        PageKind::Small if b.anon_huge_bytes == 0 => {
            "4 KiB pages throughout (THP refused)".to_string()
        }
        PageKind::Small => format!(
            "{} of it got THP despite MADV_NOHUGEPAGE",
            bytes(b.anon_huge_bytes)
        ),
        PageKind::Thp if b.anon_huge_bytes == 0 => {
            "THP asked for, none granted: this curve is 4 KiB pages (no free 2 MiB blocks, \
             or defrag settings that do not compact on fault)"
                .to_string()
        }
        PageKind::Thp => format!(
            "THP granted for {} of {} ({})",
            bytes(b.anon_huge_bytes),
            bytes(len),
            crate::render::pct(share)
        ),
        PageKind::Huge2M | PageKind::Huge1G => {
            format!("hugetlb, kernel page size {}", bytes(b.kernel_page_bytes))
        }
    };
    BackingSummary {
        buffer_bytes: len,
        thp_bytes: b.anon_huge_bytes,
        kernel_page_bytes: b.kernel_page_bytes,
        sentence,
    }
}
