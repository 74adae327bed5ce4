//! The rules that turn `mem report`'s values into findings (pure). Each finding quotes the
//! numbers it rests on; a rule whose inputs were not available stays silent.
//!
//! Sources for what the settings do: Documentation/mm/overcommit-accounting.rst,
//! Documentation/filesystems/proc.rst (CommitLimit), mm/util.c (`__vm_enough_memory`, what
//! each mode checks), Documentation/admin-guide/mm/transhuge.rst,
//! Documentation/admin-guide/mm/hugetlbpage.rst, Documentation/admin-guide/sysctl/vm.rst,
//! mm/oom_kill.c (`out_of_memory`), Documentation/admin-guide/cgroup-v2.rst, proc(5) for
//! `oom_score` and `oom_score_adj`, and pid_namespaces(7).

use super::model::*;
use crate::render::{bytes, pct, signed_bytes};

/// Strict mode with less than this share of CommitLimit left warns: a few more processes
/// or a burst of connections fail to allocate.
pub const LOW_HEADROOM_SHARE: f64 = 0.10;
/// Strict mode whose CommitLimit is below this share of the RAM outside hugetlb pools
/// leaves RAM only the page cache can use (the default ratio 50 without swap leaves half).
/// Hugetlb pages are outside commit accounting: CommitLimit = (MemTotal − hugetlb) ×
/// overcommit_ratio / 100 + swap (Documentation/filesystems/proc.rst, CommitLimit).
pub const LIMIT_BELOW_RAM_SHARE: f64 = 0.80;
/// MemAvailable below this share of MemTotal warns.
pub const LOW_AVAILABLE_SHARE: f64 = 0.10;
/// Dirty + Writeback above this share of MemTotal is a backlog worth a line.
pub const DIRTY_SHARE: f64 = 0.05;
/// A cgroup using more than this share of its hard limit warns.
pub const CGROUP_NEAR_SHARE: f64 = 0.90;

/// Every finding for `r` (its values; `r.findings` is ignored), warnings first.
pub fn build(r: &MemReport) -> Vec<Observation> {
    let mut f = Vec::new();
    overcommit(r, &mut f);
    memory(r, &mut f);
    thp(r, &mut f);
    hugetlb(r, &mut f);
    numa(r, &mut f);
    cgroup(r, &mut f);
    oom(r, &mut f);
    f.sort_by_key(|x| x.level); // stable: rule order within a level
    f
}

fn add(f: &mut Vec<Observation>, code: &str, level: Level, observed: String, meaning: String) {
    f.push(Observation {
        code: code.into(),
        level,
        observed,
        meaning,
    });
}

fn overcommit(r: &MemReport, f: &mut Vec<Observation>) {
    let o = &r.overcommit;
    let total = r.memory.total_bytes;
    let swap = r.swap.total_bytes;
    match o.mode {
        Some(OvercommitMode::Strict) => {
            // What an ordinary process can still commit: the headroom less the reserves
            // (mm/util.c `__vm_enough_memory`), when they were read.
            let usable = o.unprivileged_headroom_bytes.or(o.headroom_bytes);
            if let (Some(limit), Some(head), Some(usable), Some(c)) = (
                o.commit_limit_bytes,
                o.headroom_bytes,
                usable,
                o.committed_as_bytes,
            ) && (usable as f64) < limit as f64 * LOW_HEADROOM_SHARE
            {
                let reserves = match (
                    o.unprivileged_headroom_bytes,
                    o.admin_reserve_bytes,
                    o.user_reserve_bytes,
                ) {
                    (Some(u), Some(a), Some(r)) => format!(
                        "; less admin_reserve_kbytes ({}, kept for root) and user_reserve_kbytes \
                         (up to {}, held back from each process), {} is left to a process that \
                         is not root",
                        bytes(a),
                        bytes(r),
                        signed_bytes(u)
                    ),
                    _ => String::new(),
                };
                add(
                    f,
                    "strict-overcommit-low-headroom",
                    Level::Warning,
                    format!(
                        "strict overcommit (vm.overcommit_memory = 2) with {} of the {} CommitLimit \
                         left ({}){reserves}; Committed_AS is {}",
                        signed_bytes(head),
                        bytes(limit),
                        pct(head as f64 / limit as f64),
                        bytes(c)
                    ),
                    format!(
                        "new allocations (a database growing its caches, a fork, a new \
                         connection's backend) fail with ENOMEM once that is used, even though \
                         MemAvailable shows {}; raise vm.overcommit_ratio, add swap, or find \
                         what reserves memory it does not use",
                        r.memory.available_bytes.map_or("?".into(), bytes)
                    ),
                );
            }
            // Hugetlb pools are taken out of RAM before the ratio applies; their pages are
            // not committed address space (Documentation/filesystems/proc.rst).
            let huge = r.hugetlb.total_bytes.unwrap_or(0);
            if let (Some(limit), Some(total)) = (o.commit_limit_bytes, total)
                && total > huge
                && (limit as f64) < (total - huge) as f64 * LIMIT_BELOW_RAM_SHARE
            {
                let base = total - huge;
                let of_ram = if huge > 0 {
                    format!(
                        "{} of the {} of RAM outside hugetlb pools (MemTotal {} − hugetlb {})",
                        pct(limit as f64 / base as f64),
                        bytes(base),
                        bytes(total),
                        bytes(huge)
                    )
                } else {
                    format!(
                        "{} of RAM {}",
                        pct(limit as f64 / total as f64),
                        bytes(total)
                    )
                };
                let kbytes = o.kbytes_bytes.filter(|&k| k > 0);
                let set_by = match kbytes {
                    Some(k) => format!("overcommit_kbytes {}", bytes(k)),
                    None => format!(
                        "overcommit_ratio {}",
                        o.ratio_percent.map_or("?".into(), |p| format!("{p}%"))
                    ),
                };
                let remedy = if kbytes.is_some() {
                    "raises vm.overcommit_kbytes (which replaces the ratio)"
                } else {
                    "raises vm.overcommit_ratio (80–95)"
                };
                add(
                    f,
                    "strict-overcommit-limit-below-ram",
                    Level::Warning,
                    format!(
                        "CommitLimit {} is {of_ram} ({set_by}, swap {})",
                        bytes(limit),
                        swap.map_or("?".into(), bytes)
                    ),
                    format!(
                        "in strict mode processes together can allocate only CommitLimit; the \
                         rest of that RAM serves the page cache alone. A dedicated database \
                         host usually {remedy} so its buffers can use the RAM"
                    ),
                );
            }
        }
        Some(mode @ (OvercommitMode::Heuristic | OvercommitMode::Always)) => {
            if mode == OvercommitMode::Always {
                add(
                    f,
                    "overcommit-always",
                    Level::Warning,
                    format!(
                        "vm.overcommit_memory = 1 (always): Committed_AS {} against RAM {} + swap {}",
                        o.committed_as_bytes.map_or("?".into(), bytes),
                        total.map_or("?".into(), bytes),
                        swap.map_or("?".into(), bytes)
                    ),
                    "every allocation succeeds, however large; a process can ask for terabytes \
                     and the shortfall shows up later as the OOM killer, when pages are touched"
                        .into(),
                );
            }
            if let (Some(c), Some(t), Some(s)) = (o.committed_as_bytes, total, swap)
                && t + s > 0
                && c > t + s
            {
                add(
                    f,
                    "overcommitted",
                    Level::Warning,
                    format!(
                        "Committed_AS {} is {:.2}× RAM + swap ({})",
                        bytes(c),
                        c as f64 / (t + s) as f64,
                        bytes(t + s)
                    ),
                    "processes have asked for more memory than exists; if they touch it, the \
                     OOM killer runs"
                        .into(),
                );
            }
            if mode == OvercommitMode::Heuristic && swap == Some(0) {
                add(
                    f,
                    "no-swap-heuristic-overcommit",
                    Level::Warning,
                    format!(
                        "no swap with heuristic overcommit (vm.overcommit_memory = 0); \
                         Committed_AS {} of RAM {}",
                        o.committed_as_bytes.map_or("?".into(), bytes),
                        total.map_or("?".into(), bytes)
                    ),
                    "memory a process asked for is not reserved for it, and anonymous pages \
                     cannot be paged out: when RAM runs out the OOM killer is the only way \
                     out. Protect the database with oom_score_adj, add some swap, or use \
                     strict overcommit (vm.overcommit_memory = 2) so allocations fail instead"
                        .into(),
                );
            }
        }
        None => {}
    }
}

fn memory(r: &MemReport, f: &mut Vec<Observation>) {
    let m = &r.memory;
    if let (Some(a), Some(t)) = (m.available_bytes, m.total_bytes)
        && t > 0
        && (a as f64) < t as f64 * LOW_AVAILABLE_SHARE
    {
        add(
            f,
            "low-available-memory",
            Level::Warning,
            format!(
                "MemAvailable {} is {} of MemTotal {}",
                bytes(a),
                pct(a as f64 / t as f64),
                bytes(t)
            ),
            "little is left even after dropping the page cache: the next large allocation \
             reclaims hard, swaps, or wakes the OOM killer"
                .into(),
        );
    }
    if let (Some(d), Some(w), Some(t)) = (m.dirty_bytes, m.writeback_bytes, m.total_bytes)
        && t > 0
        && ((d + w) as f64) > t as f64 * DIRTY_SHARE
    {
        add(
            f,
            "dirty-page-backlog",
            Level::Info,
            format!(
                "Dirty {} + Writeback {} = {} of RAM; flushing starts at \
                 dirty_background_ratio {} and writers block at dirty_ratio {}",
                bytes(d),
                bytes(w),
                pct((d + w) as f64 / t as f64),
                m.dirty_background_ratio_percent
                    .map_or("?".into(), |p| format!("{p}%")),
                m.dirty_ratio_percent
                    .map_or("?".into(), |p| format!("{p}%"))
            ),
            "that much written data is only in the page cache: an fsync or a checkpoint has \
             it to write, and a crash of the machine loses what no fsync covered"
                .into(),
        );
    }
    // Documentation/admin-guide/sysctl/vm.rst, swappiness: the relative IO cost of
    // swapping against filesystem paging, 0–200; at 100 both are pressed equally. The
    // reclaim scan weighs anon : file as swappiness : 200 − swappiness (mm/vmscan.c
    // get_scan_count).
    if let (Some(s), Some(sw)) = (r.swap.total_bytes, r.swap.swappiness)
        && s > 0
        && sw >= 60
    {
        let sw = sw.min(200);
        let lean = match sw {
            100 => {
                "it swaps anonymous memory (a database's own buffer cache) as readily as it \
                    drops page cache"
            }
            101.. => {
                "it prefers swapping anonymous memory (a database's own buffer cache) to \
                      dropping page cache"
            }
            _ => {
                "it leans to dropping page cache but still swaps out some anonymous memory (a \
                  database's own buffer cache)"
            }
        };
        add(
            f,
            "swappiness",
            Level::Info,
            format!("swap {} with vm.swappiness {sw}", bytes(s)),
            format!(
                "under memory pressure the kernel weighs swapping against dropping page cache \
                 at {sw} : {} (equal only at 100), so {lean}; database hosts often set 1–10 so \
                 their buffers stay in RAM",
                200 - sw
            ),
        );
    }
}

fn thp(r: &MemReport, f: &mut Vec<Observation>) {
    let t = &r.thp;
    match t.enabled.as_deref() {
        Some("always") => add(
            f,
            "thp-always",
            Level::Warning,
            format!(
                "transparent huge pages: enabled = always, defrag = {}",
                t.defrag.as_deref().unwrap_or("?")
            ),
            "every large anonymous mapping may get 2 MiB pages, asked for or not: on a \
             database host this brings latency spikes (page faults that compact memory, \
             khugepaged collapsing pages) and memory bloat (a 4 KiB touch backs 2 MiB). \
             Oracle, MongoDB (before 8.0) and Redis advise `never` or `madvise`; programs that \
             want THP ask with madvise(MADV_HUGEPAGE)"
                .into(),
        ),
        Some("never") => add(
            f,
            "thp-never",
            Level::Info,
            "transparent huge pages: enabled = never".into(),
            "no process gets 2 MiB pages unless they are reserved as hugetlb pages \
             (vm.nr_hugepages); a random walk over a few GiB then misses the TLB on most loads \
             (`smtlab mem pages` measures how much that costs here)"
                .into(),
        ),
        _ => {}
    }
    if t.defrag.as_deref() == Some("always") {
        add(
            f,
            "thp-defrag-always",
            Level::Warning,
            "transparent huge pages: defrag = always".into(),
            // Documentation/admin-guide/mm/transhuge.rst, defrag.
            "a page fault in a THP region that finds no free 2 MiB block stalls while the \
             kernel reclaims and compacts memory (direct compaction): tail-latency spikes. \
             `defer` leaves that to kswapd and kcompactd in the background (khugepaged \
             collapses the huge page later); `defer+madvise` does the same except in regions \
             that asked with madvise(MADV_HUGEPAGE), which still stall; `madvise` stalls only \
             in such regions, and other faults take 4 KiB pages without waiting"
                .into(),
        );
    }
}

fn hugetlb(r: &MemReport, f: &mut Vec<Observation>) {
    let total_ram = r.memory.total_bytes.unwrap_or(0);
    for s in &r.hugetlb.sizes {
        let (Some(n), Some(free)) = (s.total, s.free) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let held = n.saturating_mul(s.page_bytes);
        let share = if total_ram > 0 {
            format!(", {} of RAM", pct(held as f64 / total_ram as f64))
        } else {
            String::new()
        };
        let resv = s.reserved.unwrap_or(0);
        if free == n && resv == 0 {
            add(
                f,
                "hugetlb-reserved-unused",
                Level::Warning,
                format!(
                    "{n} hugetlb pages of {} reserved ({}{share}) and none in use",
                    bytes(s.page_bytes),
                    bytes(held)
                ),
                "that memory is held out of the page cache and of every process that does not \
                 map hugetlb pages; the program they were reserved for (PostgreSQL with \
                 huge_pages = on or try, a JVM with -XX:+UseLargePages) is not running or did \
                 not fit its segment into them"
                    .into(),
            );
        } else {
            let used = n.saturating_sub(free);
            add(
                f,
                "hugetlb-in-use",
                Level::Info,
                format!(
                    "{used} of {n} hugetlb pages of {} mapped, {resv} more promised to mappings \
                     not yet touched ({}{share} reserved in all)",
                    bytes(s.page_bytes),
                    bytes(held)
                ),
                format!(
                    "hugetlb pages are never swapped and need no page-table walk below their \
                     size: a TLB entry covers {}× more memory with {} pages than with 4 KiB ones",
                    crate::render::thousands(s.page_bytes / 4096),
                    bytes(s.page_bytes)
                ),
            );
        }
    }
}

fn numa(r: &MemReport, f: &mut Vec<Observation>) {
    let n = &r.reclaim;
    let nodes = n.memory_nodes.unwrap_or(1);
    if let Some(z) = n.zone_reclaim_mode
        && z != 0
    {
        add(
            f,
            "zone-reclaim",
            Level::Warning,
            format!("vm.zone_reclaim_mode = {z} ({nodes} memory nodes)"),
            "the kernel reclaims page cache on the local node before allocating from another: \
             a database that relies on the page cache re-reads from disk while other nodes \
             have memory free. 0, the default, suits file and database servers"
                .into(),
        );
    }
    if n.numa_balancing == Some(1) && nodes > 1 {
        add(
            f,
            "numa-balancing",
            Level::Info,
            format!("automatic NUMA balancing is on, {nodes} memory nodes"),
            "the kernel unmaps pages now and then to see which node uses them and migrates \
             them: small periodic latency hiccups; databases pinned per node often turn it off \
             (kernel.numa_balancing = 0)"
                .into(),
        );
    }
}

fn cgroup(r: &MemReport, f: &mut Vec<Observation>) {
    let c = &r.cgroup;
    let hard = c.limits.iter().find(|l| {
        (l.file == "memory.max" || l.file == "memory.limit_in_bytes") && l.limit_bytes.is_some()
    });
    let Some(l) = hard else {
        return;
    };
    let lim = l.limit_bytes.unwrap_or(0);
    let near = c
        .usage_bytes
        .is_some_and(|u| lim > 0 && u as f64 > lim as f64 * CGROUP_NEAR_SHARE);
    let below_ram = r.memory.total_bytes.is_some_and(|t| lim < t);
    if !near && !below_ram {
        return;
    }
    add(
        f,
        "cgroup-memory-limit",
        if near { Level::Warning } else { Level::Info },
        format!(
            "this process's cgroup {} limits memory to {} ({}{}){}",
            c.path.as_deref().unwrap_or("?"),
            bytes(lim),
            l.file,
            r.memory
                .total_bytes
                .filter(|&t| t > 0)
                .map_or(String::new(), |t| format!(
                    ", {} of RAM",
                    pct(lim as f64 / t as f64)
                )),
            c.usage_bytes.map_or(String::new(), |u| format!(
                "; {} in use ({})",
                bytes(u),
                pct(u as f64 / lim.max(1) as f64)
            ))
        ),
        "the cgroup's own OOM killer acts at that limit, whatever the machine has free, and \
         the page cache of the cgroup's files counts against it; size the database's memory \
         (shared_buffers, work_mem × connections) to the limit, not to RAM"
            .into(),
    );
}

fn oom(r: &MemReport, f: &mut Vec<Observation>) {
    let o = &r.oom;
    if let Some(p) = o.panic_on_oom
        && p != 0
    {
        add(
            f,
            "panic-on-oom",
            Level::Info,
            format!("vm.panic_on_oom = {p}"),
            "running out of memory panics the kernel (and reboots it when kernel.panic is set) \
             instead of killing one process: every service on the machine goes down with it"
                .into(),
        );
    }
    if let Some(t) = o.top.first() {
        let opted = if o.opted_out.is_empty() {
            "no process has opted out (oom_score_adj −1000)".to_string()
        } else {
            format!(
                "{} process{} opted out (oom_score_adj −1000): {}",
                o.opted_out.len(),
                if o.opted_out.len() == 1 { "" } else { "es" },
                o.opted_out
                    .iter()
                    .take(5)
                    .map(|p| format!("{} ({})", p.name, p.pid))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let among = if o.partial_view.is_some() {
            format!("among the {} processes this /proc shows, ", o.processes)
        } else {
            String::new()
        };
        let (who, score) = (
            format!("{} (pid {})", t.name, t.pid),
            format!(
                "oom_score {}, oom_score_adj {}, RSS {}",
                t.oom_score,
                t.oom_score_adj,
                bytes(t.rss_bytes)
            ),
        );
        // vm.oom_kill_allocating_task (Documentation/admin-guide/sysctl/vm.rst; mm/oom_kill.c
        // out_of_memory): in a machine-wide OOM the task whose allocation failed is killed,
        // unless its oom_score_adj is −1000; a memory cgroup's OOM still ranks by score.
        let allocating = o.kill_allocating_task.is_some_and(|v| v != 0);
        // /proc/PID/oom_score is the badness scaled to 0–1000 of the machine's memory, so
        // processes of similar size share a score; the kernel compares the unscaled badness
        // (RSS + swap + page tables, mm/oom_kill.c oom_badness), so the largest goes first.
        let tied = o.top.iter().filter(|p| p.oom_score == t.oom_score).count();
        let observed = if allocating {
            format!(
                "vm.oom_kill_allocating_task = {}: a machine-wide OOM kills whichever task's \
                 allocation failed; {among}the highest oom_score is {who}'s: {score}; {opted}",
                o.kill_allocating_task.unwrap_or(1)
            )
        } else if tied > 1 {
            format!(
                "{among}{tied}{} processes share the highest oom_score, {}; the OOM killer would \
                 pick the one using the most memory, likeliest {who}, the largest by RSS: \
                 {score}; {opted}",
                if tied == o.top.len() && o.processes > o.top.len() + o.opted_out.len() {
                    " or more"
                } else {
                    ""
                },
                t.oom_score
            )
        } else {
            format!("{among}the OOM killer would pick {who} first: {score}; {opted}")
        };
        let mut meaning = if allocating {
            "in a machine-wide OOM the kernel kills the task whose allocation ran out of \
             memory (unless its oom_score_adj is −1000), which need not be the one using the \
             most; the oom_score ranking decides only cgroup OOMs and that fallback."
                .to_string()
        } else {
            "the highest oom_score dies first (mostly its share of RAM + swap, shifted by \
             oom_score_adj)."
                .to_string()
        };
        if tied > 1 {
            meaning.push_str(
                " oom_score is rounded to thousandths of the machine's memory: among processes \
                 that share it the kernel compares their exact memory use (RSS + swap + page \
                 tables), so the largest of them goes first.",
            );
        }
        // Documentation/admin-guide/cgroup-v2.rst, memory.max.
        meaning.push_str(
            " A memory cgroup that reaches its limit (memory.max, v1 memory.limit_in_bytes) \
             runs its own OOM killer, which picks among that cgroup's processes only.",
        );
        if let Some(why) = &o.partial_view {
            meaning.push_str(&format!(
                " This ranking may not be the machine's: {why} (a PID namespace of its own \
                 sees only its processes)."
            ));
        }
        meaning.push_str(
            " To protect a database: `echo -1000 > /proc/PID/oom_score_adj` (systemd: \
             OOMScoreAdjust=-1000); `oom_adj -17` is the deprecated form of the same",
        );
        add(f, "oom-first-victim", Level::Info, observed, meaning);
    }
}
