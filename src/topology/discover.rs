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

/// Why a root could not be read as a topology.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("sysfs root `{0}` does not exist or is not a directory")]
    NoRoot(PathBuf),
    #[error(
        "`{0}` has no `sys/devices/system/cpu` directory: not a sysfs root (expected `/` or an unpacked topology dump)"
    )]
    NotSysfs(PathBuf),
    #[error("`{path}` holds `{content}`, which is not valid: {source}")]
    BadFile {
        path: PathBuf,
        content: String,
        #[source]
        source: Box<CpuSetError>,
    },
    #[error("no CPU found under `{0}`")]
    NoCpus(PathBuf),
}

/// Reads the topology under `root`. `live` says whether `root` is this running machine, in
/// which case the process affinity is read with `sched_getaffinity`.
pub fn discover(root: &Path) -> Result<Topology, DiscoverError> {
    if !root.is_dir() {
        return Err(DiscoverError::NoRoot(root.to_path_buf()));
    }
    let live = fs::canonicalize(root).is_ok_and(|p| p == Path::new("/"));
    let r = Reader {
        root: root.to_path_buf(),
    };
    let cpu_dir = r.path("sys/devices/system/cpu");
    if !cpu_dir.is_dir() {
        return Err(DiscoverError::NotSysfs(root.to_path_buf()));
    }
    let mut warnings = Vec::new();

    // Which CPUs exist: cpuN directories, plus the kernel's present/possible lists.
    let mut ids: Vec<u32> = fs::read_dir(&cpu_dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name();
                    let n = n.to_str()?;
                    n.strip_prefix("cpu")?.parse::<u32>().ok()
                })
                .filter(|&n| n < crate::cpuset::MAX_CPUS)
                .collect()
        })
        .unwrap_or_default();
    ids.sort_unstable();
    if ids.is_empty() {
        return Err(DiscoverError::NoCpus(cpu_dir));
    }
    let possible = r.list("sys/devices/system/cpu/possible")?;
    let present = r.list("sys/devices/system/cpu/present")?;
    let online_list = r.list("sys/devices/system/cpu/online")?;
    let isolated = r
        .list("sys/devices/system/cpu/isolated")?
        .unwrap_or_default();
    let nohz_full = r
        .list("sys/devices/system/cpu/nohz_full")
        .ok()
        .flatten()
        .unwrap_or_default();

    let mut cpus = Vec::with_capacity(ids.len());
    let mut caches: Vec<Cache> = Vec::new();
    for &id in &ids {
        let base = format!("sys/devices/system/cpu/cpu{id}");
        // Online: the top-level list when the kernel has it, else cpuN/online (absent on
        // CPUs that cannot be offlined, usually cpu0, which are therefore online).
        let online = match &online_list {
            Some(l) => l.contains(id),
            None => r
                .text(&format!("{base}/online"))
                .is_none_or(|t| t.trim() != "0"),
        };
        let topo = format!("{base}/topology");
        let has_topo = r.path(&topo).is_dir();
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
            if let Some(s) = r.set_either(&topo, &["package_cpus", "core_siblings"])? {
                cpu.package_cpus = s;
            }
            cpu.package_cpus.insert(id);
            cpu.die_cpus = r.set_either(&topo, &["die_cpus"])?;
            cpu.cluster_cpus = r.set_either(&topo, &["cluster_cpus"])?;
        }
        if online {
            read_caches(&r, &base, id, &mut caches)?;
        }
        cpus.push(cpu);
    }
    if let Some(p) = &present {
        // CPUs the kernel lists as present but without a cpuN directory (rare, old dumps).
        for id in p.iter().filter(|c| !ids.contains(c)) {
            warnings.push(format!("cpu{id} is present but has no sysfs directory"));
        }
    }
    if !cpus.iter().any(|c| c.online) {
        warnings.push("no CPU is online in this root".into());
    }
    // Online siblings only: offline siblings are still listed in some masks.
    let online: CpuSet = cpus.iter().filter(|c| c.online).map(|c| c.cpu).collect();
    for c in cpus.iter_mut().filter(|c| c.online) {
        c.core_cpus = c.core_cpus.intersection(&online);
        c.package_cpus = c.package_cpus.intersection(&online);
    }
    caches.sort_by(|a, b| {
        (a.level, a.cache_type, a.cpus.first()).cmp(&(b.level, b.cache_type, b.cpus.first()))
    });

    let numa_nodes = read_numa(&r, &mut cpus)?;
    let kinds = read_kinds(&r, &mut cpus)?;
    let machine = read_machine(&r, possible, present);
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

/// Paths under the root, and lenient readers: a missing file is `None`, never an error;
/// a file that exists but holds garbage is an error naming it.
struct Reader {
    root: PathBuf,
}

impl Reader {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    fn text(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.path(rel)).ok()
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
                .map_err(|e| DiscoverError::BadFile {
                    path: self.path(rel),
                    content: t.trim().to_string(),
                    source: Box::new(e),
                }),
        }
    }

    fn mask(&self, rel: &str) -> Result<Option<CpuSet>, DiscoverError> {
        match self.text(rel) {
            None => Ok(None),
            Some(t) => CpuSet::parse_sysfs_mask(&t)
                .map(Some)
                .map_err(|e| DiscoverError::BadFile {
                    path: self.path(rel),
                    content: t.trim().to_string(),
                    source: Box::new(e),
                }),
        }
    }

    /// The first of `NAME_list` / `NAME` (mask) that exists, for each name in turn.
    fn set_either(&self, dir: &str, names: &[&str]) -> Result<Option<CpuSet>, DiscoverError> {
        for n in names {
            if let Some(s) = self.list(&format!("{dir}/{n}_list"))? {
                return Ok(Some(s));
            }
            if let Some(s) = self.mask(&format!("{dir}/{n}"))? {
                return Ok(Some(s));
            }
        }
        Ok(None)
    }
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
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

fn read_caches(
    r: &Reader,
    base: &str,
    cpu: u32,
    out: &mut Vec<Cache>,
) -> Result<(), DiscoverError> {
    let dir = r.path(&format!("{base}/cache"));
    let Ok(rd) = fs::read_dir(&dir) else {
        return Ok(());
    };
    let mut idx: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|n| n.starts_with("index"))
        .collect();
    idx.sort();
    for i in idx {
        let d = format!("{base}/cache/{i}");
        let Some(level) = r.number(&format!("{d}/level")) else {
            continue;
        };
        let cache_type = match r.text(&format!("{d}/type")).as_deref().map(str::trim) {
            Some("Data") => CacheType::Data,
            Some("Instruction") => CacheType::Instruction,
            Some("Unified") => CacheType::Unified,
            _ => continue,
        };
        let mut cpus = match r.list(&format!("{d}/shared_cpu_list"))? {
            Some(s) => s,
            None => r.mask(&format!("{d}/shared_cpu_map"))?.unwrap_or_default(),
        };
        cpus.insert(cpu);
        let size_bytes = r.text(&format!("{d}/size")).and_then(|t| parse_size(&t));
        // A zero-sized cache is how some kernels say "no such cache" (hwloc skips them).
        if size_bytes == Some(0) {
            continue;
        }
        let level = level.min(255) as u8;
        if let Some(existing) = out
            .iter_mut()
            .find(|c| c.level == level && c.cache_type == cache_type && c.cpus.intersects(&cpus))
        {
            // Same instance seen from another CPU; sharing lists can disagree on buggy
            // kernels, so keep the union.
            existing.cpus = existing.cpus.union(&cpus);
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
    Ok(())
}

fn read_numa(r: &Reader, cpus: &mut [Cpu]) -> Result<Vec<NumaNode>, DiscoverError> {
    let dir = r.path("sys/devices/system/node");
    let mut nodes = Vec::new();
    let Ok(rd) = fs::read_dir(&dir) else {
        return Ok(nodes);
    };
    let mut ids: Vec<u32> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
        .collect();
    ids.sort_unstable();
    for n in ids {
        let base = format!("sys/devices/system/node/node{n}");
        let set = match r.list(&format!("{base}/cpulist"))? {
            Some(s) => s,
            None => r.mask(&format!("{base}/cpumap"))?.unwrap_or_default(),
        };
        let memory_bytes = r.text(&format!("{base}/meminfo")).and_then(|t| {
            t.lines()
                .find(|l| l.contains("MemTotal:"))
                .and_then(|l| l.split_whitespace().rev().nth(1)?.parse::<u64>().ok())
                .map(|kb| kb * 1024)
        });
        nodes.push(NumaNode {
            node: n,
            cpus: set,
            memory_bytes,
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

/// CPU kinds, in the order of trust REFERENCE §1.3.5 gives: the hybrid PMU sets, then
/// `cpu_capacity`, then `base_frequency`. Never the maximum frequency alone: Raptor Lake
/// P-cores report different turbo maxima (5.0 and 5.2 GHz) and would split into two kinds.
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
        kinds = group_kinds(
            cpus,
            |c| c.capacity.map(u64::from),
            "cpu_capacity",
            |v| format!("capacity {v}"),
        );
    }
    if kinds.is_empty() {
        kinds = group_kinds(
            cpus,
            |c| c.base_freq_khz,
            "base_frequency",
            |v| format!("base {} MHz", v / 1000),
        );
    }
    for c in cpus.iter_mut() {
        c.kind = kinds.iter().position(|k| k.cpus.contains(c.cpu));
    }
    Ok(kinds)
}

/// Kinds from a per-CPU value, ascending (lowest capacity = most efficient first). Only
/// when every online CPU has the value and it takes at least two values.
fn group_kinds(
    cpus: &[Cpu],
    value: impl Fn(&Cpu) -> Option<u64>,
    source: &str,
    name: impl Fn(u64) -> String,
) -> Vec<CpuKind> {
    let mut by: BTreeMap<u64, CpuSet> = BTreeMap::new();
    for c in cpus.iter().filter(|c| c.online) {
        match value(c) {
            Some(v) => {
                by.entry(v).or_default().insert(c.cpu);
            }
            None => return Vec::new(),
        }
    }
    if by.len() < 2 {
        return Vec::new();
    }
    by.into_iter()
        .map(|(v, cpus)| CpuKind {
            name: name(v),
            source: source.into(),
            cpus,
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
    if let Ok(rd) = fs::read_dir(r.path("sys/kernel/mm/hugepages")) {
        let mut sizes: Vec<u64> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let n = e.file_name();
                let kb = n.to_str()?.strip_prefix("hugepages-")?.strip_suffix("kB")?;
                kb.parse::<u64>().ok().map(|k| k * 1024)
            })
            .collect();
        sizes.sort_unstable();
        m.huge_page_sizes_bytes = sizes;
    }
    m.memory_bytes = r.text("proc/meminfo").and_then(|t| {
        t.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
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
    if let Some((src, set, quota)) = read_cgroup(r) {
        p.cgroup_source = src;
        p.cgroup_cpus = set;
        p.cpu_quota = quota;
    }
    p
}

/// Finds this process's cpuset cgroup as hwloc does: the path from `/proc/self/cgroup`
/// (v2 `0::path`, v1 `N:…cpuset…:path`) or `/proc/self/cpuset`, the mount point from
/// `/proc/mounts`, then `cpuset.cpus.effective` (v2), `cpuset.effective_cpus` or
/// `cpuset.cpus` (v1), or `cpus` (legacy `noprefix` cpuset fs).
type CgroupInfo = (Option<String>, Option<CpuSet>, Option<f64>);
fn read_cgroup(r: &Reader) -> Option<CgroupInfo> {
    let mounts = r.text("proc/mounts")?;
    let mut v2_path = None;
    let mut v1_path = None;
    let mut v1_cpu_path = None;
    if let Some(t) = r.text("proc/self/cgroup") {
        for line in t.lines() {
            let mut it = line.splitn(3, ':');
            let (id, ctrls, path) = (it.next()?, it.next()?, it.next()?);
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
    let mut candidates: Vec<String> = Vec::new();
    let mut quota = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (mnt, fstype, opts) = (f[1], f[2], f[3]);
        let opts: Vec<&str> = opts.split(',').collect();
        if fstype == "cgroup2" {
            if let Some(p) = v2_path.as_ref().or(legacy_path.as_ref()) {
                let dir = format!("{mnt}{}", p.trim_end_matches('/'));
                candidates.push(format!("{dir}/cpuset.cpus.effective"));
                if quota.is_none() {
                    quota = r.text(&format!("{dir}/cpu.max")).and_then(|t| {
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
                    candidates.push(format!("{dir}/cpus"));
                } else {
                    candidates.push(format!("{dir}/cpuset.effective_cpus"));
                    candidates.push(format!("{dir}/cpuset.cpus"));
                }
            }
        } else if fstype == "cgroup"
            && opts.contains(&"cpu")
            && quota.is_none()
            && let Some(p) = v1_cpu_path.as_ref()
        {
            {
                let dir = format!("{mnt}{}", p.trim_end_matches('/'));
                let q = r.text(&format!("{dir}/cpu.cfs_quota_us"));
                let per = r.text(&format!("{dir}/cpu.cfs_period_us"));
                if let (Some(q), Some(per)) = (q, per)
                    && let (Ok(q), Ok(per)) = (q.trim().parse::<f64>(), per.trim().parse::<f64>())
                    && q > 0.0
                    && per > 0.0
                {
                    quota = Some(q / per);
                }
            }
        }
    }
    for c in candidates {
        if let Some(t) = r.text(&c) {
            // An empty effective list means "inherit everything" on a fresh cgroup.
            if let Ok(s) = CpuSet::parse_list(&t)
                && !s.is_empty()
            {
                return Some((Some(c), Some(s), quota));
            }
        }
    }
    Some((None, None, quota))
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
