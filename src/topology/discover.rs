//! Reads a [`Topology`] from a sysfs/procfs root: `/` for this machine, or an unpacked dump
//! laid out as `hwloc-gather-topology` writes it (`<root>/sys/…`, `<root>/proc/…`).
//!
//! Every kernel era is handled the same way: prefer the `*_list` files, fall back to the
//! old hex word masks; offline CPUs have no `topology/`; `core_id` is only a label. The only
//! live-machine calls are `sched_getaffinity` and nothing else, so a dump reads identically
//! on any host.

use super::*;
use crate::cpuset::{CpuSet, CpuSetError};
use std::fs;
use std::path::{Path, PathBuf};

/// Why a root could not be read as a topology (defined with the other error classes,
/// which give it its exit code).
pub use crate::error::DiscoverError;

/// Reads the topology under `root`. When `root` is this running machine (`/`), the
/// process affinity is read with `sched_getaffinity` too.
pub fn discover(root: &Path) -> Result<Topology, DiscoverError> {
    if !root.is_dir() {
        return Err(DiscoverError::NoRoot(root.to_path_buf()));
    }
    let live = fs::canonicalize(root).is_ok_and(|p| p == Path::new("/"));
    read_all(root, &Files::Dir, live)
}

/// Reads a topology from files held in memory, keyed by their path under the root
/// (`sys/devices/system/cpu/online`); directories are the paths' prefixes. The same
/// reading as [`discover`] without the filesystem, so the fuzz tests can try millions of
/// trees (a tree on disk costs about 200 file creations).
pub fn discover_in_memory(files: &BTreeMap<String, Vec<u8>>) -> Result<Topology, DiscoverError> {
    read_all(Path::new("(memory)"), &Files::Memory(files), false)
}

/// Where the files are.
enum Files<'a> {
    /// Under the root directory.
    Dir,
    /// In memory (see [`discover_in_memory`]).
    Memory(&'a BTreeMap<String, Vec<u8>>),
}

fn read_all(root: &Path, files: &Files<'_>, live: bool) -> Result<Topology, DiscoverError> {
    let r = Reader::new(root, files);
    let cpu_dir = r.path("sys/devices/system/cpu");
    let Some(cpu_names) = r.list_dir("sys/devices/system/cpu") else {
        return Err(DiscoverError::NotSysfs(root.to_path_buf()));
    };
    let mut warnings = Vec::new();

    // Which CPUs exist: cpuN directories, plus the kernel's present/possible lists.
    let mut ids: Vec<u32> = cpu_names
        .iter()
        .filter_map(|n| n.strip_prefix("cpu")?.parse::<u32>().ok())
        .filter(|&n| n < crate::cpuset::MAX_CPUS)
        .collect();
    ids.sort_unstable();
    if ids.is_empty() {
        return Err(DiscoverError::NoCpus(cpu_dir));
    }
    let possible = r.list("sys/devices/system/cpu/possible")?;
    let present = r.list("sys/devices/system/cpu/present")?;
    let online_list = r.list("sys/devices/system/cpu/online")?;
    if online_list.as_ref().is_some_and(CpuSet::is_empty) {
        return Err(DiscoverError::Inconsistent {
            path: r.path("sys/devices/system/cpu/online"),
            problem: "the file is empty, but a running kernel always has a CPU online (the \
                      one that wrote it); the dump is cut short or was edited"
                .into(),
        });
    }
    let isolated = r
        .list("sys/devices/system/cpu/isolated")?
        .unwrap_or_default();
    let nohz_full = r
        .list("sys/devices/system/cpu/nohz_full")
        .ok()
        .flatten()
        .unwrap_or_default();

    // Every online CPU's own view of its caches; instances are built once all are read.
    let mut cache_reports: Vec<(u32, Vec<Cache>)> = Vec::new();
    let mut cpus = Vec::with_capacity(ids.len());
    // Large machines are read by a few threads: the work is thousands of small file reads,
    // almost all kernel time (path walks), and splits evenly by CPU.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(4)
        .min(ids.len().div_ceil(64))
        .max(1);
    let chunk = ids.len().div_ceil(threads);
    let scope = CpuScope {
        online_list: online_list.as_ref(),
        isolated: &isolated,
        nohz_full: &nohz_full,
    };
    let parts: Vec<Result<Vec<CpuRead>, DiscoverError>> = std::thread::scope(|sc| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                let scope = &scope;
                sc.spawn(move || {
                    let r = Reader::new(root, files);
                    part.iter().map(|&id| read_cpu(&r, id, scope)).collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("CPU reader thread panicked"))
            .collect()
    });
    // Files the kernel writes well but that a dump may hold garbage in: (what is wrong,
    // the CPUs whose files say it), reported once per kind of problem.
    let mut odd_files: BTreeMap<String, CpuSet> = BTreeMap::new();
    for part in parts {
        for (cpu, caches, odd) in part? {
            if let Some(c) = caches {
                cache_reports.push((cpu.cpu, c));
            }
            for o in odd {
                odd_files.entry(o).or_default().insert(cpu.cpu);
            }
            cpus.push(cpu);
        }
    }
    for (what, on) in odd_files {
        warnings.push(format!(
            "{} {on}: {what}",
            crate::render::plural("CPU", on.len())
        ));
    }
    // CPUs the kernel lists without a cpuN directory: hand-trimmed or cut dumps (a running
    // kernel registers a device for every present CPU).
    let known: CpuSet = ids.iter().copied().collect();
    for (file, list) in [("present", &present), ("online", &online_list)] {
        if let Some(l) = list {
            let missing = l.difference(&known);
            if !missing.is_empty() {
                warnings.push(format!(
                    "{} {missing} {} listed in `{}` but {} no `cpuN` directory: left out",
                    crate::render::plural("CPU", missing.len()),
                    if missing.len() > 1 { "are" } else { "is" },
                    r.path(&format!("sys/devices/system/cpu/{file}")).display(),
                    if missing.len() > 1 { "have" } else { "has" },
                ));
            }
        }
    }
    if !cpus.iter().any(|c| c.online) {
        return Err(DiscoverError::Inconsistent {
            path: cpu_dir,
            problem: format!(
                "no CPU is online: {}",
                match &online_list {
                    Some(l) =>
                        format!("`online` lists {l}, and none of them has a `cpuN` directory"),
                    None => "every `cpuN/online` says 0".into(),
                }
            ),
        });
    }
    // Online siblings only: offline siblings are still listed in some masks.
    let online: CpuSet = cpus.iter().filter(|c| c.online).map(|c| c.cpu).collect();
    let mut unknown_siblings = CpuSet::new();
    for c in cpus.iter_mut().filter(|c| c.online) {
        if !c.core_cpus.difference(&known).is_empty() {
            unknown_siblings.insert(c.cpu);
        }
        c.core_cpus = c.core_cpus.intersection(&online);
        c.package_cpus = c.package_cpus.intersection(&online);
    }
    if !unknown_siblings.is_empty() {
        let one = unknown_siblings.len() == 1;
        warnings.push(format!(
            "{} {unknown_siblings} {} SMT siblings (`topology/core_cpus` or \
             `thread_siblings`) that have no `cpuN` directory: those siblings are ignored",
            crate::render::plural("CPU", unknown_siblings.len()),
            if one { "lists" } else { "list" },
        ));
    }
    consistent_cores(&mut cpus, &mut warnings);
    let mut caches = cache_instances(cache_reports, &online, &mut warnings);
    caches.sort_by(|a, b| {
        (a.level, a.cache_type, a.cpus.first()).cmp(&(b.level, b.cache_type, b.cpus.first()))
    });

    let mut numa_nodes = read_numa(&r, &mut cpus, &mut warnings)?;
    let kinds = read_kinds(&r, &mut cpus)?;
    let machine = read_machine(&r, possible, present);
    if let [only] = numa_nodes.as_mut_slice()
        && only.memory_bytes.is_none()
    {
        only.memory_bytes = machine.memory_bytes;
    }
    let process = read_process(&r, live, &mut warnings);

    Ok(Topology {
        root: root.display().to_string(),
        live,
        machine,
        cpus,
        caches,
        kinds,
        numa_nodes,
        process,
        warnings,
    })
}

/// What every CPU's reading shares.
struct CpuScope<'a> {
    online_list: Option<&'a CpuSet>,
    isolated: &'a CpuSet,
    nohz_full: &'a CpuSet,
}

/// One CPU, (when online) the caches it reports, and what in its files was garbage and
/// left out (one line each, without the CPU number, so equal problems group).
type CpuRead = (Cpu, Option<Vec<Cache>>, Vec<String>);

/// One CPU's files, and (when online) the caches it reports.
fn read_cpu(r: &Reader, id: u32, scope: &CpuScope) -> Result<CpuRead, DiscoverError> {
    let (online_list, isolated, nohz_full) = (scope.online_list, scope.isolated, scope.nohz_full);
    let base = format!("sys/devices/system/cpu/cpu{id}");
    // One directory listing each instead of a failed open per absent file: old
    // kernels and other architectures lack most of them (256ia64: 15 of 19).
    r.prefetch(&base);
    if r.may_exist(&format!("{base}/cpufreq")) {
        r.prefetch(&format!("{base}/cpufreq"));
    }
    // Online: the top-level list when the kernel has it, else cpuN/online (absent on
    // CPUs that cannot be offlined, usually cpu0, which are therefore online).
    let online = match &online_list {
        Some(l) => l.contains(id),
        None => r
            .text(&format!("{base}/online"))
            .is_none_or(|t| t.trim() != "0"),
    };
    let topo = format!("{base}/topology");
    let has_topo = r.prefetch(&topo);
    let mut cpu = Cpu {
        cpu: id,
        online,
        package: None,
        die: None,
        cluster: None,
        core_id: None,
        core_cpus: CpuSet::from_cpus([id]),
        package_cpus: CpuSet::new(),
        die_cpus: None,
        cluster_cpus: None,
        numa_node: None,
        kind: None,
        capacity: r.number(&format!("{base}/cpu_capacity")).map(|v| v as u32),
        base_freq_khz: r.number(&format!("{base}/cpufreq/base_frequency")),
        max_freq_khz: r.number(&format!("{base}/cpufreq/cpuinfo_max_freq")),
        isolated: isolated.contains(id),
        nohz_full: nohz_full.contains(id),
    };
    if online && has_topo {
        cpu.package = r.id(&format!("{topo}/physical_package_id"));
        cpu.die = r.id(&format!("{topo}/die_id"));
        // Kernels without cluster information write -1 or 65535.
        cpu.cluster = r.id(&format!("{topo}/cluster_id")).filter(|&c| c != 65535);
        cpu.core_id = r.id(&format!("{topo}/core_id"));
        if let Some(s) = r.set_either(&topo, &["core_cpus", "thread_siblings"])? {
            cpu.core_cpus = s;
        }
        cpu.core_cpus.insert(id);
        // Left empty when the kernel gives no package mask (PS3, some ARM/RISC-V):
        // then only `physical_package_id`, if any, says which package a CPU is in.
        if let Some(s) = r.set_either(&topo, &["package_cpus", "core_siblings"])?
            && !s.is_empty()
        {
            cpu.package_cpus = s;
            cpu.package_cpus.insert(id);
        }
        cpu.die_cpus = r.set_either(&topo, &["die_cpus"])?;
        cpu.cluster_cpus = r.set_either(&topo, &["cluster_cpus"])?;
    }
    let mut odd = Vec::new();
    let caches = if online {
        Some(read_caches(r, &base, id, &cpu.core_cpus, &mut odd)?)
    } else {
        None
    };
    Ok((cpu, caches, odd))
}

/// Makes cores a partition of the online CPUs. The kernel builds sibling masks
/// symmetrically (every sibling lists every other), so a CPU listing a sibling that does
/// not list it back is a dump edited or cut by hand, or a mask grown too wide: a core is
/// then the CPUs that list each other, taken from its first CPU as hwloc takes cores, and
/// the CPUs whose masks said otherwise are named in a warning.
fn consistent_cores(cpus: &mut [Cpu], warnings: &mut Vec<String>) {
    let reported: BTreeMap<u32, CpuSet> = cpus
        .iter()
        .filter(|c| c.online)
        .map(|c| (c.cpu, c.core_cpus.clone()))
        .collect();
    let lists = |a: u32, b: u32| reported.get(&a).is_some_and(|s| s.contains(b));
    let mut placed = CpuSet::new();
    let mut core_of: BTreeMap<u32, CpuSet> = BTreeMap::new();
    for (&cpu, siblings) in &reported {
        if placed.contains(cpu) {
            continue;
        }
        let mut core = CpuSet::from_cpus([cpu]);
        for s in siblings.iter() {
            if !placed.contains(s) && lists(s, cpu) {
                core.insert(s);
            }
        }
        placed = placed.union(&core);
        for m in core.iter() {
            core_of.insert(m, core.clone());
        }
    }
    let mut disagree = CpuSet::new();
    for c in cpus.iter_mut().filter(|c| c.online) {
        let core = &core_of[&c.cpu];
        if *core != c.core_cpus {
            disagree.insert(c.cpu);
            c.core_cpus = core.clone();
        }
    }
    if !disagree.is_empty() {
        let one = disagree.len() == 1;
        warnings.push(format!(
            "{} {disagree} {} SMT siblings (`topology/core_cpus` or `thread_siblings`) that \
             do not list {} back, which no kernel writes: each core is taken as the CPUs \
             that list each other",
            crate::render::plural("CPU", disagree.len()),
            if one { "lists" } else { "list" },
            if one { "it" } else { "them" },
        ));
    }
}

/// Paths under the root, and lenient readers: a missing file is `None`, never an error;
/// a file that exists but holds garbage is an error naming it.
struct Reader<'a> {
    root: PathBuf,
    files: &'a Files<'a>,
    /// Names in directories listed by [`Reader::prefetch`] (None: the directory is absent).
    listed: std::cell::RefCell<std::collections::HashMap<String, Option<Vec<String>>>>,
}

impl<'a> Reader<'a> {
    fn new(root: &Path, files: &'a Files<'a>) -> Self {
        Reader {
            root: root.to_path_buf(),
            files,
            listed: Default::default(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// The names in directory `rel`, sorted (names that are not UTF-8 left out); None when
    /// it is not a directory.
    fn list_dir(&self, rel: &str) -> Option<Vec<String>> {
        let rel = rel.trim_start_matches('/');
        let mut v: Vec<String> = match self.files {
            Files::Dir => fs::read_dir(self.path(rel))
                .ok()?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect(),
            Files::Memory(m) => {
                // Keys under `rel/` sort together: from `rel/` up to `rel0` ('/' + 1).
                let (from, to) = (format!("{rel}/"), format!("{rel}0"));
                let mut names: Vec<String> = m
                    .range(from.clone()..to)
                    .filter_map(|(k, _)| {
                        let name = k[from.len()..].split('/').next()?;
                        (!name.is_empty()).then(|| name.to_string())
                    })
                    .collect();
                if names.is_empty() {
                    return None;
                }
                names.dedup();
                names
            }
        };
        v.sort_unstable();
        Some(v)
    }

    fn is_dir(&self, rel: &str) -> bool {
        match self.files {
            Files::Dir => self.path(rel).is_dir(),
            Files::Memory(_) => self.list_dir(rel).is_some(),
        }
    }

    /// Lists `dir` once, so reads of files absent from it cost no syscall. Returns whether
    /// the directory exists.
    fn prefetch(&self, dir: &str) -> bool {
        let names = self.list_dir(dir);
        let exists = names.is_some();
        self.listed.borrow_mut().insert(dir.to_string(), names);
        exists
    }

    /// False only when a listed directory on `rel`'s path lacks the next component.
    fn may_exist(&self, rel: &str) -> bool {
        let Some((dir, name)) = rel.rsplit_once('/') else {
            return true;
        };
        match self.listed.borrow().get(dir) {
            None => {}
            Some(None) => return false,
            Some(Some(names)) => return names.binary_search_by(|n| n.as_str().cmp(name)).is_ok(),
        }
        self.may_exist(dir)
    }

    /// The file's text, without the NUL padding some dump tools leave after the newline.
    /// Read with plain `read` calls: sysfs files are small, and `fs::read_to_string` would
    /// add a `statx` per file.
    fn text(&self, rel: &str) -> Option<String> {
        if !self.may_exist(rel) {
            return None;
        }
        let buf = match self.files {
            Files::Dir => self.read_file(rel)?,
            Files::Memory(m) => m.get(rel.trim_start_matches('/'))?.clone(),
        };
        let mut t = String::from_utf8(buf)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let end = t.trim_end_matches(['\0', '\n', ' ', '\t', '\r']).len();
        t.truncate(end);
        Some(t)
    }

    /// The bytes of file `rel` on disk; None when it cannot be read or never ends
    /// ([`crate::fsutil::read_kernel_file`]: a FIFO in a dump reads as empty, a link to
    /// /dev/zero is unreadable).
    fn read_file(&self, rel: &str) -> Option<Vec<u8>> {
        // A sysfs attribute is produced whole by its first read (at most a page), so a short
        // read is the end: saves the second `read` on thousands of files. procfs files
        // (seq_file) may come in pieces and are read to EOF.
        let one_shot = rel.trim_start_matches('/').starts_with("sys/");
        crate::fsutil::read_kernel_file(&self.path(rel), one_shot).ok()
    }

    /// A decimal number file; negative or unparsable values are `None` (the kernel writes
    /// `-1` for unknown package ids on some architectures).
    fn number(&self, rel: &str) -> Option<u64> {
        self.text(rel)?.trim().parse::<u64>().ok()
    }

    fn id(&self, rel: &str) -> Option<u32> {
        self.text(rel)?
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|v| u32::try_from(v).ok())
    }

    fn list(&self, rel: &str) -> Result<Option<CpuSet>, DiscoverError> {
        match self.text(rel) {
            None => Ok(None),
            Some(t) => CpuSet::parse_list(&t)
                .map(Some)
                .map_err(|e| bad_file(self.path(rel), &t, e)),
        }
    }

    fn mask(&self, rel: &str) -> Result<Option<CpuSet>, DiscoverError> {
        match self.text(rel) {
            None => Ok(None),
            Some(t) => CpuSet::parse_sysfs_mask(&t)
                .map(Some)
                .map_err(|e| bad_file(self.path(rel), &t, e)),
        }
    }

    /// The first of `NAME` (mask) / `NAME_list` that exists, for each name in turn.
    ///
    /// Masks first, as hwloc and lscpu read them: the kernel prints both files from one
    /// bitmap, so they only disagree in hand-edited dumps, and those were edited for the
    /// mask readers (hwloc:64fake-4n2s2ca2c2t has stale `0-7` lists beside correct masks).
    fn set_either(&self, dir: &str, names: &[&str]) -> Result<Option<CpuSet>, DiscoverError> {
        for n in names {
            if let Some(s) = self.mask_or_list(&format!("{dir}/{n}"), &format!("{dir}/{n}_list"))? {
                return Ok(Some(s));
            }
        }
        Ok(None)
    }

    /// The mask file if it exists, else the list file (see [`Reader::set_either`]).
    fn mask_or_list(&self, mask: &str, list: &str) -> Result<Option<CpuSet>, DiscoverError> {
        match self.mask(mask)? {
            Some(s) => Ok(Some(s)),
            None => self.list(list),
        }
    }
}

/// A file that exists but does not parse. The content is shown escaped and shortened so
/// the error stays one line.
fn bad_file(path: PathBuf, text: &str, mut e: CpuSetError) -> DiscoverError {
    let t = text.trim();
    let mut content = one_line(&t.chars().take(60).collect::<String>());
    if t.chars().count() > 60 {
        content.push('…');
    }
    e.input = content.clone();
    e.problem = one_line(&e.problem);
    DiscoverError::BadFile {
        path,
        content,
        source: Box::new(e),
    }
}

/// Control characters (newlines, NULs) escaped, so file contents fit in a one-line error.
fn one_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let esc: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            esc
        })
        .collect()
}

/// `32K`, `1024K`, `12M`, `1G`, or plain bytes.
fn parse_size(t: &str) -> Option<u64> {
    let t = t.trim();
    let (num, mult) = match t.chars().last()? {
        'K' | 'k' => (&t[..t.len() - 1], 1024),
        'M' | 'm' => (&t[..t.len() - 1], 1024 * 1024),
        'G' | 'g' => (&t[..t.len() - 1], 1024 * 1024 * 1024),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// The caches `cpu` reports under `cpuN/cache/index*`, each with the CPUs it says share it.
fn read_caches(
    r: &Reader,
    base: &str,
    cpu: u32,
    core: &CpuSet,
    odd: &mut Vec<String>,
) -> Result<Vec<Cache>, DiscoverError> {
    let mut out = Vec::new();
    if !r.may_exist(&format!("{base}/cache")) {
        return Ok(out);
    }
    let Some(names) = r.list_dir(&format!("{base}/cache")) else {
        return Ok(out);
    };
    let idx: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("index"))
        .collect();
    for i in idx {
        let d = format!("{base}/cache/{i}");
        // A missing file is a sparse dump (nothing to say); a file holding garbage is named.
        let garbage = |file: &str, t: &str, what: &str| {
            format!(
                "`cache/{i}/{file}` holds `{}`, not {what}: that cache is left out",
                crate::quote::shorten(t.trim())
            )
        };
        let level = match r.text(&format!("{d}/level")) {
            None => continue,
            Some(t) => match t.trim().parse::<u8>() {
                Ok(l) if l >= 1 => l,
                _ => {
                    odd.push(garbage("level", &t, "a cache level (1, 2, 3, 4)"));
                    continue;
                }
            },
        };
        let cache_type = match r.text(&format!("{d}/type")) {
            None => continue,
            Some(t) => match t.trim() {
                "Data" => CacheType::Data,
                "Instruction" => CacheType::Instruction,
                "Unified" => CacheType::Unified,
                _ => {
                    odd.push(garbage("type", &t, "Data, Instruction or Unified"));
                    continue;
                }
            },
        };
        let mut cpus = r
            .mask_or_list(
                &format!("{d}/shared_cpu_map"),
                &format!("{d}/shared_cpu_list"),
            )?
            .unwrap_or_default();
        if cpus.is_empty() {
            // ia64 writes empty maps for its L3 and L2i: those are per core (as hwloc reads it).
            cpus = core.clone();
        }
        cpus.insert(cpu);
        let size_bytes = match r.text(&format!("{d}/size")) {
            None => None,
            Some(t) => {
                let v = parse_size(&t);
                if v.is_none() {
                    odd.push(format!(
                        "`cache/{i}/size` holds `{}`, not a size like 32K: that cache's size \
                         is left unknown",
                        crate::quote::shorten(t.trim())
                    ));
                }
                v
            }
        };
        // A zero-sized cache is how some kernels say "no such cache" (hwloc skips them).
        if size_bytes == Some(0) {
            continue;
        }
        out.push(Cache {
            level,
            cache_type,
            id: r.id(&format!("{d}/id")),
            size_bytes,
            line_bytes: r
                .number(&format!("{d}/coherency_line_size"))
                .map(|v| v as u32),
            ways: r
                .number(&format!("{d}/ways_of_associativity"))
                .map(|v| v as u32),
            cpus,
        });
    }
    Ok(out)
}

/// Cache instances from the CPUs' reports. Each instance is taken from the first online CPU
/// it lists, as hwloc does: sharing sets that disagree (a buggy kernel, or
/// hwloc:40intel64-4n10c+pci-conflicts, edited to conflict) cannot then produce
/// overlapping instances, nor can a union of them swallow a whole level. Reports that
/// match no instance are named in a warning.
fn cache_instances(
    reports: Vec<(u32, Vec<Cache>)>,
    online: &CpuSet,
    warnings: &mut Vec<String>,
) -> Vec<Cache> {
    let mut out: Vec<Cache> = Vec::new();
    let mut seen: std::collections::HashSet<(u8, CacheType, CpuSet)> = Default::default();
    let mut rest = Vec::new();
    for (cpu, caches) in reports {
        for c in caches {
            let key = (c.level, c.cache_type, c.cpus.intersection(online));
            if key.2.first() == Some(cpu) {
                seen.insert(key);
                out.push(c);
            } else {
                rest.push((cpu, key));
            }
        }
    }
    let odd: CpuSet = rest
        .into_iter()
        .filter(|(_, key)| !seen.contains(key))
        .map(|(cpu, _)| cpu)
        .collect();
    if !odd.is_empty() {
        warnings.push(format!(
            "CPUs {odd} report cache sharing that disagrees with the CPUs they list: ignored"
        ));
    }
    out
}

/// NUMA nodes from `node/online` (else the `nodeN` directories) and each node's `cpumap`.
/// Without NUMA information (non-NUMA kernels, most embedded dumps) the machine is one
/// node holding every CPU, as hwloc and lscpu report it. A node claiming CPUs that an
/// earlier node already holds is firmware lying (hwloc:8em64t-2s2ca2c-buggynuma: 8 nodes
/// each claiming all CPUs); it is dropped with a warning, as hwloc does.
fn read_numa(
    r: &Reader,
    cpus: &mut [Cpu],
    warnings: &mut Vec<String>,
) -> Result<Vec<NumaNode>, DiscoverError> {
    let node_dir = "sys/devices/system/node";
    let mut ids: Vec<u32> = match r.list(&format!("{node_dir}/online"))? {
        Some(s) => s.iter().collect(),
        None => r
            .list_dir(node_dir)
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.strip_prefix("node")?.parse().ok())
            // Node numbers share the CPU numbers' bound (a CpuSet lists them).
            .filter(|&n| n < crate::cpuset::MAX_CPUS)
            .collect(),
    };
    ids.sort_unstable();
    let mut nodes: Vec<NumaNode> = Vec::new();
    let mut claimed = CpuSet::new();
    let mut dropped = Vec::new();
    for n in ids {
        let base = format!("{node_dir}/node{n}");
        // `node/online` may list nodes without a directory (hand-trimmed dumps).
        if !r.is_dir(&base) {
            continue;
        }
        let set = r
            .mask_or_list(&format!("{base}/cpumap"), &format!("{base}/cpulist"))?
            .unwrap_or_default();
        if set.intersects(&claimed) {
            dropped.push(n);
            continue;
        }
        claimed = claimed.union(&set);
        let memory_bytes = r.text(&format!("{base}/meminfo")).and_then(|t| {
            t.lines()
                .find(|l| l.contains("MemTotal:"))
                .and_then(|l| l.split_whitespace().rev().nth(1)?.parse::<u64>().ok())
                .and_then(|kb| kb.checked_mul(1024))
        });
        nodes.push(NumaNode {
            node: n,
            cpus: set,
            memory_bytes,
        });
    }
    if !dropped.is_empty() {
        let list: CpuSet = dropped.iter().copied().collect();
        warnings.push(format!(
            "NUMA node{} {list} claim{} CPUs of an earlier node (buggy firmware tables): ignored",
            if dropped.len() > 1 { "s" } else { "" },
            if dropped.len() > 1 { "" } else { "s" },
        ));
    }
    if nodes.is_empty() {
        nodes.push(NumaNode {
            node: 0,
            cpus: cpus.iter().map(|c| c.cpu).collect(),
            memory_bytes: None,
        });
    }
    for c in cpus.iter_mut() {
        c.numa_node = nodes
            .iter()
            .find(|n| n.cpus.contains(c.cpu))
            .map(|n| n.node);
    }
    Ok(nodes)
}

/// CPU kinds, in order of trust (frequency alone misleads: an i7-1370P reports 5000 and 5200 MHz P-cores): the hybrid PMU sets, else the
/// classes of equal (`cpu_capacity`, `base_frequency`). CPUs differing in either are
/// different kinds (hwloc refines its kinds the same way). Never the maximum frequency:
/// Raptor Lake P-cores report different turbo maxima (5.0 and 5.2 GHz) and would split
/// into two kinds.
fn read_kinds(r: &Reader, cpus: &mut [Cpu]) -> Result<Vec<CpuKind>, DiscoverError> {
    let mut kinds = Vec::new();
    // Energy-efficient first, as hwloc ranks them.
    for (dir, name) in [
        ("sys/devices/cpu_lowpower/cpus", "LP-E-core"),
        ("sys/devices/cpu_atom/cpus", "E-core"),
        ("sys/devices/cpu_core/cpus", "P-core"),
    ] {
        if let Some(s) = r.list(dir)?
            && !s.is_empty()
        {
            kinds.push(CpuKind {
                name: name.into(),
                source: "pmu".into(),
                cpus: s,
            });
        }
    }
    if kinds.is_empty() {
        kinds = group_kinds(cpus);
    }
    for c in cpus.iter_mut() {
        c.kind = kinds.iter().position(|k| k.cpus.contains(c.cpu));
    }
    Ok(kinds)
}

/// Kinds from per-CPU capacity and base frequency, ascending (lowest capacity, then lowest
/// base frequency = most efficient first). A property counts only when every online CPU
/// has it; at least two classes are needed to speak of kinds.
fn group_kinds(cpus: &[Cpu]) -> Vec<CpuKind> {
    let online = || cpus.iter().filter(|c| c.online);
    let use_cap = online().all(|c| c.capacity.is_some());
    let use_base = online().all(|c| c.base_freq_khz.is_some());
    let mut by: BTreeMap<(Option<u32>, Option<u64>), CpuSet> = BTreeMap::new();
    for c in online() {
        let key = (
            c.capacity.filter(|_| use_cap),
            c.base_freq_khz.filter(|_| use_base),
        );
        by.entry(key).or_default().insert(c.cpu);
    }
    if by.len() < 2 {
        return Vec::new();
    }
    let caps = by
        .keys()
        .map(|k| k.0)
        .collect::<std::collections::BTreeSet<_>>();
    let bases = by
        .keys()
        .map(|k| k.1)
        .collect::<std::collections::BTreeSet<_>>();
    by.into_iter()
        .map(|((cap, base), cpus)| {
            let mut parts = Vec::new();
            let mut sources = Vec::new();
            if let Some(v) = cap.filter(|_| caps.len() > 1) {
                parts.push(format!("capacity {v}"));
                sources.push("cpu_capacity");
            }
            if let Some(v) = base.filter(|_| bases.len() > 1) {
                parts.push(format!("base {} MHz", v / 1000));
                sources.push("base_frequency");
            }
            CpuKind {
                name: parts.join(", "),
                source: sources.join("+"),
                cpus,
            }
        })
        .collect()
}

fn read_machine(r: &Reader, possible: Option<CpuSet>, present: Option<CpuSet>) -> Machine {
    let mut m = Machine {
        possible_cpus: possible,
        present_cpus: present,
        ..Default::default()
    };
    m.smt_control = r
        .text("sys/devices/system/cpu/smt/control")
        .map(|t| t.trim().to_string());
    m.smt_active = r
        .number("sys/devices/system/cpu/smt/active")
        .map(|v| v == 1);
    if let Some(info) = r.text("proc/cpuinfo") {
        for line in info.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                "vendor_id" | "CPU implementer" | "vendor" if m.vendor.is_none() => {
                    m.vendor = Some(v.to_string())
                }
                "model name" | "cpu model" | "Processor" | "cpu" | "uarch"
                    if m.model.is_none() && !v.is_empty() =>
                {
                    m.model = Some(v.to_string())
                }
                "cpu family" if m.family.is_none() => m.family = v.parse().ok(),
                "flags" | "Features" if v.split_whitespace().any(|f| f == "hypervisor") => {
                    m.hypervisor = true
                }
                _ => {}
            }
        }
    }
    if let Some(names) = r.list_dir("sys/kernel/mm/hugepages") {
        let mut sizes: Vec<u64> = names
            .iter()
            .filter_map(|n| {
                let kb = n.strip_prefix("hugepages-")?.strip_suffix("kB")?;
                kb.parse::<u64>().ok()?.checked_mul(1024)
            })
            .collect();
        sizes.sort_unstable();
        m.huge_page_sizes_bytes = sizes;
    }
    m.memory_bytes = r.text("proc/meminfo").and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .and_then(|kb| kb.checked_mul(1024))
    });
    m
}

fn read_process(r: &Reader, live: bool, warnings: &mut Vec<String>) -> ProcessCpus {
    let mut p = ProcessCpus::default();
    if live {
        match crate::affinity::process_affinity() {
            Ok(s) => p.affinity = Some(s),
            Err(e) => warnings.push(format!("could not read this process's affinity: {e}")),
        }
    }
    let cg = read_cgroup(r);
    p.cgroup_source = cg.source;
    p.cgroup_cpus = cg.cpus;
    p.cgroup_mems = cg.mems;
    p.cpu_quota = cg.quota;
    p
}

/// What the process's cgroup says: the cpuset file read, its CPUs and memory nodes, and
/// the CPU quota.
#[derive(Default)]
struct CgroupInfo {
    source: Option<String>,
    cpus: Option<CpuSet>,
    mems: Option<CpuSet>,
    quota: Option<f64>,
}

/// Finds this process's cpuset cgroup as hwloc does: the path from `/proc/self/cgroup`
/// (v2 `0::path`, v1 `N:…cpuset…:path`) or `/proc/self/cpuset`, the mount point from
/// `/proc/mounts` (any place: Slurm mounts cgroup2 at `/cgroup/unified`), then
/// `cpuset.cpus.effective` (v2), `cpuset.effective_cpus` or `cpuset.cpus` (v1), or `cpus`
/// (legacy cpuset fs, or cgroup v1 mounted with `noprefix`). v1's `effective_cpus` comes
/// first because it is what the kernel enforces (hwloc reads the requested `cpuset.cpus`).
fn read_cgroup(r: &Reader) -> CgroupInfo {
    let mut info = CgroupInfo::default();
    let Some(mounts) = r.text("proc/mounts") else {
        return info;
    };
    let mut v2_path = None;
    let mut v1_path = None;
    let mut v1_cpu_path = None;
    if let Some(t) = r.text("proc/self/cgroup") {
        for line in t.lines() {
            let mut it = line.splitn(3, ':');
            let (Some(id), Some(ctrls), Some(path)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if id == "0" && ctrls.is_empty() {
                v2_path = Some(path.to_string());
            } else {
                if ctrls.split(',').any(|c| c == "cpuset") {
                    v1_path = Some(path.to_string());
                }
                if ctrls.split(',').any(|c| c == "cpu") {
                    v1_cpu_path = Some(path.to_string());
                }
            }
        }
    }
    let legacy_path = r.text("proc/self/cpuset").map(|t| t.trim().to_string());
    // (cpus file, mems file) pairs, best first.
    let mut candidates: Vec<(String, String)> = Vec::new();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (mnt, fstype, opts) = (f[1].trim_end_matches('/'), f[2], f[3]);
        let opts: Vec<&str> = opts.split(',').collect();
        if fstype == "cgroup2" {
            if let Some(p) = v2_path.as_ref().or(legacy_path.as_ref()) {
                let dir = format!("{mnt}{}", p.trim_end_matches('/'));
                candidates.push((
                    format!("{dir}/cpuset.cpus.effective"),
                    format!("{dir}/cpuset.mems.effective"),
                ));
                if info.quota.is_none() {
                    info.quota = r.text(&format!("{dir}/cpu.max")).and_then(|t| {
                        let mut it = t.split_whitespace();
                        let q = it.next()?.parse::<f64>().ok()?;
                        let per = it.next()?.parse::<f64>().ok()?;
                        (per > 0.0).then_some(q / per)
                    });
                }
            }
        } else if (fstype == "cgroup" && opts.contains(&"cpuset")) || fstype == "cpuset" {
            if let Some(p) = v1_path.as_ref().or(legacy_path.as_ref()) {
                let dir = format!("{mnt}{}", p.trim_end_matches('/'));
                if opts.contains(&"noprefix") || fstype == "cpuset" {
                    candidates.push((format!("{dir}/cpus"), format!("{dir}/mems")));
                } else {
                    candidates.push((
                        format!("{dir}/cpuset.effective_cpus"),
                        format!("{dir}/cpuset.effective_mems"),
                    ));
                    candidates.push((format!("{dir}/cpuset.cpus"), format!("{dir}/cpuset.mems")));
                }
            }
        } else if fstype == "cgroup"
            && opts.contains(&"cpu")
            && info.quota.is_none()
            && let Some(p) = v1_cpu_path.as_ref()
        {
            let dir = format!("{mnt}{}", p.trim_end_matches('/'));
            let q = r.text(&format!("{dir}/cpu.cfs_quota_us"));
            let per = r.text(&format!("{dir}/cpu.cfs_period_us"));
            if let (Some(q), Some(per)) = (q, per)
                && let (Ok(q), Ok(per)) = (q.trim().parse::<f64>(), per.trim().parse::<f64>())
                && q > 0.0
                && per > 0.0
            {
                info.quota = Some(q / per);
            }
        }
    }
    for (cpus, mems) in candidates {
        // An empty list means "inherit everything" on a fresh cgroup.
        if let Some(t) = r.text(&cpus)
            && let Ok(s) = CpuSet::parse_list(&t)
            && !s.is_empty()
        {
            info.mems = r
                .text(&mems)
                .and_then(|t| CpuSet::parse_list(&t).ok())
                .filter(|m| !m.is_empty());
            info.source = Some(cpus);
            info.cpus = Some(s);
            break;
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32K\n"), Some(32 * 1024));
        assert_eq!(parse_size("12M"), Some(12 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("x"), None);
    }
}
