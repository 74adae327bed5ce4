//! Reads [`MemReport`] from a [`Source`]: /proc/meminfo, the `vm.*` sysctls, THP and
//! hugetlb in sysfs, this process's memory cgroup and every process's OOM score. Each
//! value that is missing or unreadable is `None` with a [`NotAvailable`] record naming the
//! file; then [`super::findings`] turns the values into plain words.

use super::model::*;
use super::source::Source;
use std::collections::BTreeMap;

/// v1 reports "no limit" as the page counter's maximum (`PAGE_COUNTER_MAX` × page size,
/// 9223372036854771712 with 4 KiB pages); anything this large is no limit.
const V1_UNLIMITED: u64 = 1 << 62;

/// How many OOM candidates the report lists.
pub const OOM_TOP: usize = 10;

/// Reads everything `mem report` shows from `src`.
pub fn read(src: &dyn Source) -> MemReport {
    let mut r = Reader {
        src,
        na: Vec::new(),
        meminfo: None,
    };
    r.load_meminfo();
    let memory = r.memory();
    let swap = Swap {
        total_bytes: r.meminfo_bytes("SwapTotal"),
        free_bytes: r.meminfo_bytes("SwapFree"),
        swappiness: r.num("proc/sys/vm/swappiness"),
    };
    let hugetlb = r.hugetlb();
    let overcommit = r.overcommit(&memory, &swap);
    let mut rep = MemReport {
        root: src.label(),
        overcommit,
        memory,
        swap,
        thp: r.thp(),
        hugetlb,
        reclaim: r.reclaim(),
        cgroup: r.cgroup(),
        oom: r.oom(),
        findings: Vec::new(),
        not_available: Vec::new(),
    };
    rep.not_available = r.na;
    rep.findings = super::findings::build(&rep);
    rep
}

/// `MemAvailable` from /proc/meminfo, bytes.
pub fn mem_available(src: &dyn Source) -> Option<u64> {
    let t = src.read("proc/meminfo").ok()?;
    let line = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

struct Reader<'a> {
    src: &'a dyn Source,
    na: Vec<NotAvailable>,
    /// /proc/meminfo as key → value in kB (counts such as HugePages_Total as they are);
    /// None when the file gave nothing.
    meminfo: Option<BTreeMap<String, u64>>,
}

impl Reader<'_> {
    fn record(&mut self, source: String, reason: String) {
        if !self.na.iter().any(|n| n.source == source) {
            self.na.push(NotAvailable { source, reason });
        }
    }

    /// A file's text, or None with the reason recorded.
    fn text(&mut self, rel: &str) -> Option<String> {
        match self.src.read(rel) {
            Ok(t) => Some(t),
            Err(e) => {
                self.record(format!("/{rel}"), e.to_string());
                None
            }
        }
    }

    /// A file holding one whole number.
    fn num(&mut self, rel: &str) -> Option<u64> {
        let t = self.text(rel)?;
        match t.trim().parse::<u64>() {
            Ok(v) => Some(v),
            Err(_) => {
                self.record(format!("/{rel}"), format!("not a number: `{}`", short(&t)));
                None
            }
        }
    }

    /// A sysctl in kB, as bytes.
    fn kib(&mut self, rel: &str) -> Option<u64> {
        self.num(rel).map(|k| k.saturating_mul(1024))
    }

    /// The bracketed choice of a sysfs selector (`always [madvise] never` → `madvise`).
    fn choice(&mut self, rel: &str) -> Option<String> {
        let t = self.text(rel)?;
        let picked = t
            .split_whitespace()
            .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
            .map(str::to_string);
        if picked.is_none() {
            self.record(
                format!("/{rel}"),
                format!("no [selected] value in `{}`", short(&t)),
            );
        }
        picked
    }

    fn load_meminfo(&mut self) {
        let Some(t) = self.text("proc/meminfo") else {
            return;
        };
        let mut m = BTreeMap::new();
        for line in t.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            if let Some(n) = v.split_whitespace().next().and_then(|n| n.parse().ok()) {
                m.insert(k.trim().to_string(), n);
            }
        }
        self.meminfo = Some(m);
    }

    /// A /proc/meminfo line in kB, as bytes.
    fn meminfo_bytes(&mut self, key: &str) -> Option<u64> {
        let m = self.meminfo.as_ref()?; // the whole file's absence is recorded once
        match m.get(key) {
            Some(&kb) => Some(kb.saturating_mul(1024)),
            None => {
                self.record(format!("/proc/meminfo {key}"), "missing".into());
                None
            }
        }
    }

    fn memory(&mut self) -> Memory {
        Memory {
            total_bytes: self.meminfo_bytes("MemTotal"),
            available_bytes: self.meminfo_bytes("MemAvailable"),
            free_bytes: self.meminfo_bytes("MemFree"),
            cached_bytes: self.meminfo_bytes("Cached"),
            dirty_bytes: self.meminfo_bytes("Dirty"),
            writeback_bytes: self.meminfo_bytes("Writeback"),
            anon_huge_bytes: self.meminfo_bytes("AnonHugePages"),
            dirty_background_ratio_percent: self.num("proc/sys/vm/dirty_background_ratio"),
            dirty_ratio_percent: self.num("proc/sys/vm/dirty_ratio"),
        }
    }

    fn overcommit(&mut self, mem: &Memory, swap: &Swap) -> Overcommit {
        let raw = self.num("proc/sys/vm/overcommit_memory");
        let mode = raw.and_then(OvercommitMode::from_value);
        if let (Some(v), None) = (raw, mode) {
            self.record(
                "/proc/sys/vm/overcommit_memory".into(),
                format!("holds {v}, not 0, 1 or 2"),
            );
        }
        let ratio_percent = self.num("proc/sys/vm/overcommit_ratio");
        let kbytes_bytes = self.kib("proc/sys/vm/overcommit_kbytes");
        let commit_limit_bytes = self.meminfo_bytes("CommitLimit");
        let committed_as_bytes = self.meminfo_bytes("Committed_AS");
        let hugetlb = self.meminfo_bytes("Hugetlb");
        let headroom_bytes = match (commit_limit_bytes, committed_as_bytes) {
            (Some(l), Some(c)) => Some(l as i64 - c as i64),
            _ => None,
        };
        let limit_formula = limit_formula(
            mem.total_bytes,
            hugetlb,
            ratio_percent,
            kbytes_bytes,
            swap.total_bytes,
        );
        let admin_reserve_bytes = self.kib("proc/sys/vm/admin_reserve_kbytes");
        let user_reserve_bytes = self.kib("proc/sys/vm/user_reserve_kbytes");
        // mm/util.c `__vm_enough_memory`, strict mode: a process without CAP_SYS_ADMIN
        // may commit up to CommitLimit − admin_reserve − min(its total_vm / 32,
        // user_reserve); with both reserves taken whole this is the least it can count on.
        let unprivileged_headroom_bytes = match (mode, headroom_bytes) {
            (Some(OvercommitMode::Strict), Some(h)) => admin_reserve_bytes
                .zip(user_reserve_bytes)
                .map(|(a, u)| h - a as i64 - u as i64),
            _ => None,
        };
        Overcommit {
            mode,
            ratio_percent,
            kbytes_bytes,
            commit_limit_bytes,
            committed_as_bytes,
            headroom_bytes,
            unprivileged_headroom_bytes,
            limit_formula,
            meaning: mode_meaning(mode).into(),
            admin_reserve_bytes,
            user_reserve_bytes,
        }
    }

    fn thp(&mut self) -> Thp {
        const D: &str = "sys/kernel/mm/transparent_hugepage";
        Thp {
            enabled: self.choice(&format!("{D}/enabled")),
            defrag: self.choice(&format!("{D}/defrag")),
            khugepaged_defrag: self.num(&format!("{D}/khugepaged/defrag")).map(|v| v != 0),
            khugepaged_pages_to_scan: self.num(&format!("{D}/khugepaged/pages_to_scan")),
            khugepaged_scan_sleep_ms: self.num(&format!("{D}/khugepaged/scan_sleep_millisecs")),
            page_bytes: self.num(&format!("{D}/hpage_pmd_size")),
        }
    }

    fn hugetlb(&mut self) -> Hugetlb {
        const D: &str = "sys/kernel/mm/hugepages";
        let default_page_bytes = self.meminfo_bytes("Hugepagesize");
        let total_bytes = self.meminfo_bytes("Hugetlb");
        let mut sizes = Vec::new();
        match self.src.list(D) {
            None => self.record(format!("/{D}"), "missing".into()),
            Some(names) => {
                let nodes: Vec<u32> = self
                    .src
                    .list("sys/devices/system/node")
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|n| n.strip_prefix("node")?.parse().ok())
                    .collect();
                for name in names {
                    let Some(kb) = size_kb(&name) else {
                        continue;
                    };
                    let dir = format!("{D}/{name}");
                    let mut s = HugeSize {
                        page_bytes: kb * 1024,
                        total: self.num(&format!("{dir}/nr_hugepages")),
                        free: self.num(&format!("{dir}/free_hugepages")),
                        reserved: self.num(&format!("{dir}/resv_hugepages")),
                        surplus: self.num(&format!("{dir}/surplus_hugepages")),
                        overcommit: self.num(&format!("{dir}/nr_overcommit_hugepages")),
                        nodes: Vec::new(),
                    };
                    for &n in &nodes {
                        let nd = format!("sys/devices/system/node/node{n}/hugepages/{name}");
                        // Kernels without per-node pools have no such directory: not an
                        // absence worth a line of its own.
                        let get = |f: &str| {
                            self.src
                                .read(&format!("{nd}/{f}"))
                                .ok()
                                .and_then(|t| t.trim().parse().ok())
                        };
                        let node = HugeNode {
                            node: n,
                            total: get("nr_hugepages"),
                            free: get("free_hugepages"),
                            surplus: get("surplus_hugepages"),
                        };
                        if node.total.is_some() || node.free.is_some() {
                            s.nodes.push(node);
                        }
                    }
                    sizes.push(s);
                }
                sizes.sort_by_key(|s| s.page_bytes);
            }
        }
        Hugetlb {
            default_page_bytes,
            total_bytes,
            sizes,
        }
    }

    fn reclaim(&mut self) -> Reclaim {
        let memory_nodes = self
            .src
            .read("sys/devices/system/node/has_memory")
            .ok()
            .and_then(|t| crate::cpuset::CpuSet::parse_list(t.trim()).ok())
            .map(|s| s.len());
        Reclaim {
            min_free_bytes: self.kib("proc/sys/vm/min_free_kbytes"),
            zone_reclaim_mode: self.num("proc/sys/vm/zone_reclaim_mode"),
            numa_balancing: self.num("proc/sys/kernel/numa_balancing"),
            memory_nodes,
        }
    }

    /// This process's memory cgroup: the v2 directory when it has `memory.max`, else the
    /// v1 memory controller's (hybrid hosts mount both, and the limit lives in v1).
    fn cgroup(&mut self) -> Cgroup {
        let mut cg = Cgroup {
            version: None,
            path: None,
            limits: Vec::new(),
            usage_bytes: None,
            note: None,
        };
        let (Ok(own), Ok(mounts)) = (
            self.src.read("proc/self/cgroup"),
            self.src.read("proc/mounts"),
        ) else {
            cg.note = Some(
                "not available: /proc/self/cgroup or /proc/mounts missing (no cgroups here)".into(),
            );
            return cg;
        };
        let mut v2_path = None;
        let mut v1_path = None;
        for line in own.lines() {
            let mut it = line.splitn(3, ':');
            let (Some(id), Some(ctrls), Some(path)) = (it.next(), it.next(), it.next()) else {
                continue;
            };
            if id == "0" && ctrls.is_empty() {
                v2_path = Some(path.to_string());
            } else if ctrls.split(',').any(|c| c == "memory") {
                v1_path = Some(path.to_string());
            }
        }
        let mut v2_mnt = None;
        let mut v1_mnt = None;
        for line in mounts.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 4 {
                continue;
            }
            if f[2] == "cgroup2" && v2_mnt.is_none() {
                v2_mnt = Some(f[1].trim_end_matches('/').to_string());
            } else if f[2] == "cgroup" && f[3].split(',').any(|o| o == "memory") {
                v1_mnt = Some(f[1].trim_end_matches('/').to_string());
            }
        }
        let join = |mnt: &str, path: &str| format!("{mnt}{}", path.trim_end_matches('/'));
        if let (Some(m), Some(p)) = (&v2_mnt, &v2_path) {
            let dir = join(m, p);
            let rel = dir.trim_start_matches('/').to_string();
            if self.src.read(&format!("{rel}/memory.max")).is_ok() {
                cg.version = Some("v2".into());
                cg.path = Some(dir);
                for (file, meaning) in [
                    (
                        "memory.max",
                        "hard limit: past it the cgroup's own OOM killer kills one of its processes",
                    ),
                    (
                        "memory.high",
                        "throttle: past it the cgroup's processes are slowed and reclaimed hard, not killed",
                    ),
                    ("memory.swap.max", "swap the cgroup may use"),
                ] {
                    if let Ok(t) = self.src.read(&format!("{rel}/{file}")) {
                        let t = t.trim();
                        let limit_bytes = if t == "max" { None } else { t.parse().ok() };
                        if t == "max" || limit_bytes.is_some() {
                            cg.limits.push(CgroupLimit {
                                file: file.into(),
                                limit_bytes,
                                meaning: meaning.into(),
                            });
                        }
                    }
                }
                cg.usage_bytes = self
                    .src
                    .read(&format!("{rel}/memory.current"))
                    .ok()
                    .and_then(|t| t.trim().parse().ok());
                return cg;
            }
        }
        if let (Some(m), Some(p)) = (&v1_mnt, &v1_path) {
            let dir = join(m, p);
            let rel = dir.trim_start_matches('/').to_string();
            if self
                .src
                .read(&format!("{rel}/memory.limit_in_bytes"))
                .is_ok()
            {
                cg.version = Some("v1".into());
                cg.path = Some(dir);
                for (file, meaning) in [
                    (
                        "memory.limit_in_bytes",
                        "hard limit: past it the cgroup's own OOM killer kills one of its processes",
                    ),
                    (
                        "memory.soft_limit_in_bytes",
                        "reclaimed back to this under memory pressure elsewhere",
                    ),
                    ("memory.memsw.limit_in_bytes", "memory plus swap limit"),
                ] {
                    if let Some(v) = self
                        .src
                        .read(&format!("{rel}/{file}"))
                        .ok()
                        .and_then(|t| t.trim().parse::<u64>().ok())
                    {
                        cg.limits.push(CgroupLimit {
                            file: file.into(),
                            limit_bytes: (v < V1_UNLIMITED).then_some(v),
                            meaning: meaning.into(),
                        });
                    }
                }
                cg.usage_bytes = self
                    .src
                    .read(&format!("{rel}/memory.usage_in_bytes"))
                    .ok()
                    .and_then(|t| t.trim().parse().ok());
                return cg;
            }
        }
        cg.note = Some(
            "this process is in no memory cgroup with limits (the root cgroup, or the memory \
             controller is not mounted): only the machine's memory bounds it"
                .into(),
        );
        cg
    }

    fn oom(&mut self) -> Oom {
        let panic_on_oom = self.num("proc/sys/vm/panic_on_oom");
        let kill_allocating_task = self.num("proc/sys/vm/oom_kill_allocating_task");
        let mut all = Vec::new();
        let mut listed = 0usize;
        match self.src.list("proc") {
            None => self.record("/proc".into(), "missing".into()),
            Some(names) => {
                for name in names {
                    let Ok(pid) = name.parse::<u32>() else {
                        continue;
                    };
                    listed += 1;
                    if let Some(p) = self.process(pid) {
                        all.push(p);
                    }
                }
            }
        }
        if listed > 0 && all.is_empty() {
            self.record(
                "/proc/PID/oom_score".into(),
                "missing or unreadable for every process".into(),
            );
        }
        // Kernel threads live in the initial PID namespace only (pid_namespaces(7)), and
        // kthreadd is always its PID 2: a /proc without it belongs to a PID namespace of
        // its own (a container) or hides other users' processes (proc(5), hidepid).
        let kthreadd = self
            .src
            .read("proc/2/status")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("Name:").map(|n| n.trim().to_string()))
            })
            .is_some_and(|n| n == "kthreadd");
        let partial_view = (listed > 0 && !kthreadd).then(|| {
            "this /proc shows no kernel threads (no kthreadd as PID 2): it is a PID namespace \
             of its own (a container) or hides other users' processes (hidepid), so the \
             machine has processes not listed here"
                .to_string()
        });
        let processes = all.len();
        let opted_out: Vec<OomProcess> = all
            .iter()
            .filter(|p| p.oom_score_adj == -1000)
            .cloned()
            .collect();
        all.retain(|p| p.oom_score_adj != -1000);
        all.sort_by(|a, b| {
            b.oom_score
                .cmp(&a.oom_score)
                .then(b.rss_bytes.cmp(&a.rss_bytes))
                .then(a.pid.cmp(&b.pid))
        });
        all.truncate(OOM_TOP);
        Oom {
            panic_on_oom,
            kill_allocating_task,
            processes,
            opted_out,
            top: all,
            partial_view,
        }
    }

    /// One process, or None when it exited meanwhile or is a kernel thread (no VmRSS).
    /// Its absence is no finding: processes come and go while /proc is read.
    fn process(&self, pid: u32) -> Option<OomProcess> {
        let get = |f: &str| self.src.read(&format!("proc/{pid}/{f}")).ok();
        let oom_score = get("oom_score")?.trim().parse().ok()?;
        let oom_score_adj = get("oom_score_adj")?.trim().parse().ok()?;
        let status = get("status")?;
        let mut name = None;
        let mut rss = None;
        for line in status.lines() {
            if let Some(v) = line.strip_prefix("Name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("VmRSS:") {
                rss = v
                    .split_whitespace()
                    .next()
                    .and_then(|n| n.parse::<u64>().ok());
            }
        }
        Some(OomProcess {
            pid,
            name: name.unwrap_or_default(),
            oom_score,
            oom_score_adj,
            rss_bytes: rss?.saturating_mul(1024),
        })
    }
}

/// `hugepages-2048kB` → 2048.
fn size_kb(dir_name: &str) -> Option<u64> {
    dir_name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()
        .filter(|&k| k > 0)
}

/// The start of a file's text for a message.
fn short(t: &str) -> String {
    crate::quote::shorten(t.trim())
}

/// How the kernel computes CommitLimit (mm/util.c `vm_commit_limit`), with the numbers:
/// `overcommit_kbytes` when set, else `(MemTotal − hugetlb) × overcommit_ratio / 100`,
/// plus all swap. Shown in every mode, as the kernel reports it in every mode.
fn limit_formula(
    total: Option<u64>,
    hugetlb: Option<u64>,
    ratio: Option<u64>,
    kbytes: Option<u64>,
    swap: Option<u64>,
) -> Option<String> {
    use crate::render::bytes;
    let swap = swap?;
    if let Some(k) = kbytes.filter(|&k| k > 0) {
        return Some(format!(
            "overcommit_kbytes {} + swap {} = {}",
            bytes(k),
            bytes(swap),
            bytes(k + swap)
        ));
    }
    let (total, ratio) = (total?, ratio?);
    let huge = hugetlb.unwrap_or(0);
    let ram = total.saturating_sub(huge);
    let limit = (ram as u128 * ratio as u128 / 100) as u64 + swap;
    let ram_text = if huge > 0 {
        format!("(MemTotal {} − hugetlb {})", bytes(total), bytes(huge))
    } else {
        format!("MemTotal {}", bytes(total))
    };
    Some(format!(
        "{ram_text} × overcommit_ratio {ratio}% + swap {} = {}",
        bytes(swap),
        bytes(limit)
    ))
}

/// What CommitLimit − Committed_AS means in each mode
/// (Documentation/mm/overcommit-accounting.rst).
pub fn mode_meaning(mode: Option<OvercommitMode>) -> &'static str {
    match mode {
        // mm/util.c `__vm_enough_memory`, OVERCOMMIT_GUESS: fails when the request alone
        // is larger than totalram_pages() + total_swap_pages; neither what is committed
        // nor what is free counts.
        Some(OvercommitMode::Heuristic) => {
            "heuristic (0): CommitLimit is not enforced and the headroom is advisory; an \
             allocation fails only when it alone asks for more than total RAM + swap, \
             however much is committed already. Memory asked for is not reserved: if \
             processes touch more than exists, the OOM killer picks one to kill"
        }
        Some(OvercommitMode::Always) => {
            "always (1): no limit; every allocation succeeds, whatever its size. Running out \
             shows up later, as the OOM killer, when the pages are touched"
        }
        // mm/util.c `__vm_enough_memory`, OVERCOMMIT_NEVER: CommitLimit less
        // admin_reserve_kbytes (unless CAP_SYS_ADMIN) and min(total_vm / 32,
        // user_reserve_kbytes).
        Some(OvercommitMode::Strict) => {
            "strict (2): allocations fail (malloc returns NULL, mmap ENOMEM) once Committed_AS \
             would pass CommitLimit less the reserves: admin_reserve_kbytes is kept for root, \
             and up to user_reserve_kbytes is held back from each process, so an ordinary \
             process can allocate the headroom less both. Memory asked for is backed, so the \
             OOM killer should not be needed, but programs must handle failed allocations"
        }
        None => "unknown: vm.overcommit_memory was not read",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::fixture::{self, Machine};

    const GIB_KB: u64 = 1 << 20;

    fn report(m: &Machine) -> MemReport {
        read(&fixture::tree(m))
    }

    fn codes(r: &MemReport) -> Vec<&str> {
        r.findings.iter().map(|f| f.code.as_str()).collect()
    }

    fn finding<'a>(r: &'a MemReport, code: &str) -> &'a Observation {
        r.findings
            .iter()
            .find(|f| f.code == code)
            .unwrap_or_else(|| panic!("no {code} in {:?}", codes(r)))
    }

    #[test]
    fn heuristic_mode_says_the_headroom_is_advisory_and_no_swap_leaves_the_oom_killer() {
        let r = report(&Machine::default());
        let o = &r.overcommit;
        assert_eq!(o.mode, Some(OvercommitMode::Heuristic));
        assert_eq!(o.ratio_percent, Some(50));
        // 16 GiB × 50 % + 2 GiB swap.
        assert_eq!(o.commit_limit_bytes, Some(10 << 30));
        assert_eq!(o.committed_as_bytes, Some(6 << 30));
        assert_eq!(o.headroom_bytes, Some(4 << 30));
        assert!(o.meaning.contains("advisory"), "{}", o.meaning);
        assert_eq!(
            o.limit_formula.as_deref(),
            Some("MemTotal 16 GiB × overcommit_ratio 50% + swap 2 GiB = 10 GiB")
        );
        assert!(!codes(&r).contains(&"no-swap-heuristic-overcommit"));
        assert!(r.not_available.is_empty(), "{:?}", r.not_available);

        let r = report(&Machine {
            swap_total_kb: 0,
            ..Machine::default()
        });
        let f = finding(&r, "no-swap-heuristic-overcommit");
        assert_eq!(f.level, Level::Warning);
        assert!(
            f.observed.contains("Committed_AS 6 GiB of RAM 16 GiB"),
            "{}",
            f.observed
        );
        assert!(f.meaning.contains("OOM killer"));

        // Committed beyond RAM + swap.
        let r = report(&Machine {
            committed_as_kb: 20 * GIB_KB,
            ..Machine::default()
        });
        assert!(finding(&r, "overcommitted").observed.contains("1.11×"));
    }

    #[test]
    fn always_mode_has_no_limit() {
        let r = report(&Machine {
            overcommit_memory: 1,
            ..Machine::default()
        });
        assert_eq!(r.overcommit.mode, Some(OvercommitMode::Always));
        assert!(r.overcommit.meaning.contains("no limit"));
        assert!(
            finding(&r, "overcommit-always")
                .meaning
                .contains("OOM killer")
        );
        // The no-swap rule is about heuristic mode.
        assert!(!codes(&r).contains(&"no-swap-heuristic-overcommit"));
    }

    #[test]
    fn strict_mode_warns_of_little_headroom_and_a_limit_below_ram() {
        // Plenty of room: ratio 95 + swap.
        let roomy = report(&Machine {
            overcommit_memory: 2,
            overcommit_ratio: 95,
            ..Machine::default()
        });
        assert_eq!(roomy.overcommit.mode, Some(OvercommitMode::Strict));
        assert!(roomy.overcommit.meaning.contains("fail"));
        assert!(
            !codes(&roomy).iter().any(|c| c.starts_with("strict")),
            "{:?}",
            codes(&roomy)
        );

        // Ratio 50, no swap: CommitLimit 8 GiB, 7.5 GiB committed.
        let tight = report(&Machine {
            overcommit_memory: 2,
            swap_total_kb: 0,
            committed_as_kb: 7 * GIB_KB + GIB_KB / 2,
            ..Machine::default()
        });
        assert_eq!(tight.overcommit.headroom_bytes, Some(512 << 20));
        let f = finding(&tight, "strict-overcommit-low-headroom");
        assert!(
            f.observed
                .contains("512 MiB of the 8 GiB CommitLimit left (6.2%)"),
            "{}",
            f.observed
        );
        let g = finding(&tight, "strict-overcommit-limit-below-ram");
        assert!(g.observed.contains("50% of RAM 16 GiB"), "{}", g.observed);

        // More committed than the limit: negative headroom, still a finding.
        let over = report(&Machine {
            overcommit_memory: 2,
            swap_total_kb: 0,
            committed_as_kb: 9 * GIB_KB,
            ..Machine::default()
        });
        assert_eq!(over.overcommit.headroom_bytes, Some(-(1 << 30)));
        assert!(
            finding(&over, "strict-overcommit-low-headroom")
                .observed
                .contains("−1 GiB")
        );
    }

    #[test]
    fn hugetlb_pages_come_off_the_strict_limit() {
        let m = Machine {
            overcommit_memory: 2,
            huge_2m: (1024, 1024),
            ..Machine::default()
        };
        let r = report(&m);
        assert_eq!(
            r.overcommit.limit_formula.as_deref(),
            Some("(MemTotal 16 GiB − hugetlb 2 GiB) × overcommit_ratio 50% + swap 2 GiB = 9 GiB")
        );
        assert_eq!(r.overcommit.commit_limit_bytes, Some(9 << 30));
        let s = &r.hugetlb.sizes;
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].page_bytes, s[0].total, s[0].free),
            (2 << 20, Some(1024), Some(1024))
        );
        assert_eq!(s[1].page_bytes, 1 << 30);
        assert_eq!(s[0].nodes.len(), 1);
        assert!(
            finding(&r, "hugetlb-reserved-unused")
                .observed
                .contains("1024 hugetlb pages of 2 MiB reserved (2 GiB, 12% of RAM)")
        );
        let used = report(&Machine {
            huge_2m: (1024, 24),
            ..Machine::default()
        });
        assert!(
            finding(&used, "hugetlb-in-use")
                .observed
                .contains("1000 of 1024")
        );
    }

    #[test]
    fn each_thp_setting_is_read_and_judged() {
        for (setting, warn) in [("always", true), ("madvise", false), ("never", false)] {
            let r = report(&Machine {
                thp: setting,
                ..Machine::default()
            });
            assert_eq!(r.thp.enabled.as_deref(), Some(setting));
            assert_eq!(r.thp.defrag.as_deref(), Some("madvise"));
            assert_eq!(r.thp.page_bytes, Some(2 << 20));
            assert_eq!(codes(&r).contains(&"thp-always"), warn, "{setting}");
            assert_eq!(codes(&r).contains(&"thp-never"), setting == "never");
        }
        let r = report(&Machine {
            thp_defrag: "always",
            ..Machine::default()
        });
        assert!(codes(&r).contains(&"thp-defrag-always"));
        assert!(human(&r).contains("defrag                 always"));
    }

    fn human(r: &MemReport) -> String {
        crate::render::terminal::draw(&crate::mem::view::blocks(r))
    }

    #[test]
    fn missing_files_are_named_never_zero() {
        // An older kernel or a container: no THP, no hugetlb, no overcommit_kbytes, a
        // meminfo without MemAvailable or CommitLimit, no cgroup files.
        let mut f = fixture::tree(&Machine::default());
        f.remove("sys/kernel/mm/transparent_hugepage")
            .remove("sys/kernel/mm/hugepages")
            .remove("proc/sys/vm/overcommit_kbytes")
            .remove("proc/self/cgroup")
            .unreadable("proc/sys/vm/swappiness");
        let meminfo = f.read("proc/meminfo").unwrap();
        let trimmed: String = meminfo
            .lines()
            .filter(|l| !l.starts_with("MemAvailable") && !l.starts_with("CommitLimit"))
            .map(|l| format!("{l}\n"))
            .collect();
        f.set("proc/meminfo", trimmed);
        let r = read(&f);
        assert_eq!(r.thp.enabled, None);
        assert_eq!(r.memory.available_bytes, None);
        assert_eq!(r.overcommit.commit_limit_bytes, None);
        assert_eq!(r.overcommit.headroom_bytes, None);
        assert_eq!(r.overcommit.kbytes_bytes, None);
        assert_eq!(r.swap.swappiness, None);
        assert!(r.hugetlb.sizes.is_empty());
        let text = human(&r);
        for want in [
            "not available: /sys/kernel/mm/transparent_hugepage/enabled missing",
            "not available: /proc/meminfo MemAvailable missing",
            "not available: /proc/meminfo CommitLimit missing",
            "not available: /proc/sys/vm/overcommit_kbytes missing",
            "not available: /sys/kernel/mm/hugepages missing",
            "not available: /proc/sys/vm/swappiness unreadable (Permission denied)",
            "not available: /proc/self/cgroup or /proc/mounts missing",
        ] {
            assert!(text.contains(want), "no `{want}` in\n{text}");
        }
        // The formula still shows, from the values that were read.
        assert!(r.overcommit.limit_formula.is_some());

        // Nothing at all: still a report, every value unavailable.
        let r = read(&crate::mem::source::Files::default());
        assert_eq!(r.overcommit.mode, None);
        assert_eq!(r.memory.total_bytes, None);
        assert!(r.oom.top.is_empty());
        let text = human(&r);
        assert!(
            text.contains("not available: /proc/meminfo missing"),
            "{text}"
        );
        assert!(text.contains("not available: /proc/sys/vm/overcommit_memory missing"));
        assert!(text.contains("nothing stands out"));
        assert!(!text.contains(" 0 B"), "no made-up zero:\n{text}");
    }

    #[test]
    fn garbage_values_are_named() {
        let mut f = fixture::tree(&Machine::default());
        f.set("proc/sys/vm/overcommit_memory", "7\n")
            .set("proc/sys/vm/overcommit_ratio", "fifty\n")
            .set(
                "sys/kernel/mm/transparent_hugepage/enabled",
                "always madvise never\n",
            );
        let r = read(&f);
        assert_eq!(r.overcommit.mode, None);
        assert_eq!(
            r.why("/proc/sys/vm/overcommit_memory"),
            "not available: /proc/sys/vm/overcommit_memory holds 7, not 0, 1 or 2"
        );
        assert!(
            r.why("/proc/sys/vm/overcommit_ratio")
                .contains("not a number: `fifty`")
        );
        assert!(
            r.why("/sys/kernel/mm/transparent_hugepage/enabled")
                .contains("no [selected]")
        );
    }

    #[test]
    fn oom_candidates_are_ranked_and_opt_outs_listed() {
        let r = report(&Machine::default());
        let names: Vec<&str> = r.oom.top.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["java", "postgres", "systemd"],
            "kernel thread and sshd left out"
        );
        assert_eq!(r.oom.top[0].rss_bytes, 5 << 30);
        assert_eq!(r.oom.opted_out.len(), 1);
        assert_eq!(r.oom.processes, 4);
        let f = finding(&r, "oom-first-victim");
        assert!(
            f.observed.contains("java (pid 1204) first: oom_score 420"),
            "{}",
            f.observed
        );
        assert!(f.observed.contains("1 process opted out"), "{}", f.observed);
    }

    /// Every process at oom_score 666: the finding says they tie and which the kernel's
    /// unscaled badness picks, not "would pick java first" as if the score decided.
    #[test]
    fn tied_oom_scores_are_said_to_tie() {
        let mut f = fixture::tree(&Machine::default());
        for pid in [1, 812, 1204] {
            f.set(&format!("proc/{pid}/oom_score"), "666\n");
        }
        let r = read(&f);
        let g = finding(&r, "oom-first-victim");
        assert!(
            g.observed.contains(
                "3 processes share the highest oom_score, 666; the OOM killer would pick the one \
                 using the most memory, likeliest java (pid 1204), the largest by RSS"
            ),
            "{}",
            g.observed
        );
        assert!(!g.observed.contains("first:"), "{}", g.observed);
        assert!(
            g.meaning.contains("rounded to thousandths"),
            "{}",
            g.meaning
        );
    }

    #[test]
    fn cgroup_v2_and_v1_limits_are_found() {
        let mut f = fixture::tree(&Machine::default());
        let cg = "sys/fs/cgroup/system.slice/db.service";
        f.set(&format!("{cg}/memory.max"), "4294967296\n");
        let r = read(&f);
        assert_eq!(r.cgroup.version.as_deref(), Some("v2"));
        assert_eq!(
            r.cgroup.path.as_deref(),
            Some("/sys/fs/cgroup/system.slice/db.service")
        );
        assert_eq!(r.cgroup.limits[0].limit_bytes, Some(4 << 30));
        assert_eq!(r.cgroup.limits[1].limit_bytes, None, "max");
        let g = finding(&r, "cgroup-memory-limit");
        assert_eq!(g.level, Level::Info);
        assert!(
            g.observed
                .contains("4 GiB (memory.max, 25% of RAM); 1 GiB in use (25%)"),
            "{}",
            g.observed
        );

        // A hybrid host: v2 mounted but the root cgroup, memory on v1 (this project's CI).
        let mut f = fixture::tree(&Machine::default());
        f.set("proc/self/cgroup", "4:memory:/jobs/x\n0::/\n").set(
            "proc/mounts",
            "cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n\
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n",
        );
        f.set(
            "sys/fs/cgroup/memory/jobs/x/memory.limit_in_bytes",
            "9223372036854771712\n",
        )
        .set(
            "sys/fs/cgroup/memory/jobs/x/memory.usage_in_bytes",
            "6930432\n",
        );
        let r = read(&f);
        assert_eq!(r.cgroup.version.as_deref(), Some("v1"));
        assert_eq!(r.cgroup.limits[0].limit_bytes, None, "v1's no-limit value");
        assert_eq!(r.cgroup.usage_bytes, Some(6930432));
        assert!(!codes(&r).contains(&"cgroup-memory-limit"));
    }

    #[test]
    fn json_keeps_units_in_names_and_nulls_for_the_unknown() {
        let mut f = fixture::tree(&Machine::default());
        f.remove("proc/sys/vm/swappiness");
        let v = serde_json::to_value(read(&f)).unwrap();
        assert_eq!(v["overcommit"]["mode"], "heuristic");
        assert_eq!(v["overcommit"]["commit_limit_bytes"], 10u64 << 30);
        assert!(v["swap"]["swappiness"].is_null());
        assert_eq!(v["not_available"][0]["source"], "/proc/sys/vm/swappiness");
        assert_eq!(v["thp"]["enabled"], "madvise");
    }

    // Item by item, each rule against the kernel's documentation it cites.

    /// 256 GiB of RAM, 128 GiB of it in hugetlb pages, ratio 90, strict: CommitLimit is
    /// (256 − 128) × 90 % = 115.2 GiB, 45 % of MemTotal but 90 % of the RAM commit
    /// accounting covers (Documentation/mm/overcommit-accounting.rst, filesystems/proc.rst).
    /// Raising the ratio is not the remedy; nothing is wrong.
    #[test]
    fn commit_limit_below_ram_counts_hugetlb_out() {
        let m = Machine {
            overcommit_memory: 2,
            overcommit_ratio: 90,
            mem_total_kb: 256 * GIB_KB,
            swap_total_kb: 0,
            huge_2m: (65_536, 0),
            ..Machine::default()
        };
        let r = report(&m);
        assert_eq!(
            r.overcommit.commit_limit_bytes,
            Some(fixture::commit_limit_kb(&m) * 1024)
        );
        assert!(
            !codes(&r).contains(&"strict-overcommit-limit-below-ram"),
            "{:?}",
            r.findings
        );
        // Ratio 50 with the same pools: a limit below what the ratio should leave, and
        // the finding says of which RAM.
        let r = report(&Machine {
            overcommit_ratio: 50,
            ..m
        });
        let f = finding(&r, "strict-overcommit-limit-below-ram");
        assert!(
            f.observed
                .contains("50% of the 128 GiB of RAM outside hugetlb pools"),
            "{}",
            f.observed
        );
    }

    /// Documentation/admin-guide/sysctl/vm.rst, oom_kill_allocating_task: "If this is set to
    /// non-zero, the OOM killer simply kills the task that triggered the out-of-memory
    /// condition." The first-victim line must not name the top scorer as the victim then.
    #[test]
    fn oom_victim_line_follows_oom_kill_allocating_task() {
        let r = report(&Machine {
            oom_kill_allocating_task: 1,
            ..Machine::default()
        });
        let f = finding(&r, "oom-first-victim");
        assert!(!f.observed.contains("would pick java"), "{}", f.observed);
        assert!(
            f.observed.contains("vm.oom_kill_allocating_task = 1"),
            "{}",
            f.observed
        );
        assert!(
            f.meaning.contains("the task whose allocation"),
            "{}",
            f.meaning
        );
        // Default: the ranking decides, and the line says a cgroup at its limit picks among
        // its own processes.
        let r = report(&Machine::default());
        let f = finding(&r, "oom-first-victim");
        assert!(f.meaning.contains("cgroup"), "{}", f.meaning);
        assert!(r.oom.partial_view.is_none(), "{:?}", r.oom.partial_view);
        // A PID namespace of its own (a container): the list is not the machine's.
        let r = report(&Machine {
            own_pid_namespace: true,
            ..Machine::default()
        });
        let f = finding(&r, "oom-first-victim");
        assert!(r.oom.partial_view.is_some());
        assert!(f.meaning.contains("PID namespace"), "{}", f.meaning);
        assert!(
            f.observed
                .contains("among the 4 processes this /proc shows, the OOM killer would pick java"),
            "{}",
            f.observed
        );
    }

    /// mm/util.c `__vm_enough_memory`, OVERCOMMIT_GUESS: a request fails when it is larger
    /// than total RAM + swap; free memory and reclaimable cache are not looked at.
    #[test]
    fn heuristic_mode_compares_with_total_ram_and_swap() {
        let m = mode_meaning(Some(OvercommitMode::Heuristic));
        assert!(m.contains("total RAM + swap"), "{m}");
        assert!(!m.contains("reclaimable"), "{m}");
        assert!(!m.contains("free RAM"), "{m}");
    }

    /// Documentation/admin-guide/sysctl/vm.rst, swappiness: "At 100, the VM assumes equal IO
    /// cost and will thus apply memory pressure to the page cache and swap-backed pages
    /// equally"; 60 weighs swap at 60 against 140 for the page cache.
    #[test]
    fn swappiness_60_is_not_as_readily_as_dropping_cache() {
        let r = report(&Machine::default());
        let f = finding(&r, "swappiness");
        assert!(!f.meaning.contains("about as readily"), "{}", f.meaning);
        assert!(f.meaning.contains("60 : 140"), "{}", f.meaning);
    }

    /// A 1 GiB page covers 262,144 4 KiB pages, not 512.
    #[test]
    fn hugetlb_in_use_1gib_pool_does_not_say_512x() {
        let r = report(&Machine {
            huge_1g: (4, 1),
            ..Machine::default()
        });
        let f = r
            .findings
            .iter()
            .find(|f| f.code == "hugetlb-in-use" && f.observed.contains("of 1 GiB"))
            .unwrap_or_else(|| panic!("{:?}", r.findings));
        assert!(!f.meaning.contains("512×"), "{}", f.meaning);
        assert!(f.meaning.contains("262,144×"), "{}", f.meaning);
        let r = report(&Machine {
            huge_2m: (1024, 24),
            ..Machine::default()
        });
        assert!(finding(&r, "hugetlb-in-use").meaning.contains("512×"));
    }

    /// Documentation/admin-guide/mm/transhuge.rst, defrag: `madvise` "will enter direct
    /// reclaim like always but only for regions that are have used madvise(MADV_HUGEPAGE)";
    /// only `defer` and `defer+madvise` wake kcompactd.
    #[test]
    fn thp_defrag_advice_does_not_send_madvise_to_kcompactd() {
        let r = report(&Machine {
            thp_defrag: "always",
            ..Machine::default()
        });
        let m = &finding(&r, "thp-defrag-always").meaning;
        assert!(
            !m.contains("`defer+madvise` or `madvise` moves that work to kcompactd"),
            "{m}"
        );
        assert!(m.contains("`defer`"), "{m}");
        assert!(m.contains("`madvise`"), "{m}");
    }

    /// mm/util.c `__vm_enough_memory`, strict mode: a process without CAP_SYS_ADMIN fails
    /// once Committed_AS would pass CommitLimit − admin_reserve_kbytes − min(its size / 32,
    /// user_reserve_kbytes). 512 MiB of headroom with the fixture's 8 MiB and 128 MiB
    /// reserves leaves at least 376 MiB to an ordinary process.
    #[test]
    fn strict_headroom_counts_the_reserves() {
        let r = report(&Machine {
            overcommit_memory: 2,
            swap_total_kb: 0,
            committed_as_kb: 7 * GIB_KB + GIB_KB / 2,
            ..Machine::default()
        });
        assert_eq!(
            r.overcommit.unprivileged_headroom_bytes,
            Some((512 - 8 - 128) << 20)
        );
        let f = finding(&r, "strict-overcommit-low-headroom");
        assert!(f.observed.contains("376 MiB"), "{}", f.observed);
        let text = human(&r);
        assert!(text.contains("376 MiB"), "{text}");
        assert!(text.contains("admin_reserve"), "{text}");
    }
}
