//! Made-up procfs and sysfs trees for `mem report`'s tests and the study's synthetic
//! report: a 16 GiB machine with 2 GiB of swap unless told otherwise.

use super::source::Files;

/// The knobs a test turns.
#[derive(Debug, Clone)]
pub struct Machine {
    pub overcommit_memory: u64,
    pub overcommit_ratio: u64,
    pub mem_total_kb: u64,
    pub swap_total_kb: u64,
    pub committed_as_kb: u64,
    /// THP `enabled` choice: always, madvise or never.
    pub thp: &'static str,
    pub thp_defrag: &'static str,
    /// 2 MiB hugetlb pages in the pool, and how many are free.
    pub huge_2m: (u64, u64),
    /// 1 GiB hugetlb pages in the pool, and how many are free.
    pub huge_1g: (u64, u64),
    /// `vm.oom_kill_allocating_task`.
    pub oom_kill_allocating_task: u64,
    /// /proc as a container's PID namespace shows it: no kernel threads (no kthreadd as
    /// PID 2), its own init as PID 1.
    pub own_pid_namespace: bool,
}

impl Default for Machine {
    fn default() -> Self {
        Machine {
            overcommit_memory: 0,
            overcommit_ratio: 50,
            mem_total_kb: 16 << 20,
            swap_total_kb: 2 << 20,
            committed_as_kb: 6 << 20,
            thp: "madvise",
            thp_defrag: "madvise",
            huge_2m: (0, 0),
            huge_1g: (0, 0),
            oom_kill_allocating_task: 0,
            own_pid_namespace: false,
        }
    }
}

/// `always madvise never` with `pick` in brackets.
fn selector(choices: &[&str], pick: &str) -> String {
    choices
        .iter()
        .map(|c| {
            if *c == pick {
                format!("[{c}]")
            } else {
                c.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        + "\n"
}

/// Memory in hugetlb pools, kB (/proc/meminfo `Hugetlb`).
fn hugetlb_kb(m: &Machine) -> u64 {
    m.huge_2m.0 * 2048 + m.huge_1g.0 * 1_048_576
}

/// CommitLimit as the kernel computes it (mm/util.c `vm_commit_limit`), in kB.
pub fn commit_limit_kb(m: &Machine) -> u64 {
    (m.mem_total_kb - hugetlb_kb(m)) * m.overcommit_ratio / 100 + m.swap_total_kb
}

/// The tree for `m`: /proc/meminfo, the vm sysctls, THP, 2 MiB and 1 GiB hugetlb pools on
/// one node, a cgroup v2 without limits, and three processes.
pub fn tree(m: &Machine) -> Files {
    let mut f = Files::default();
    let huge_kb = hugetlb_kb(m);
    let avail = m.mem_total_kb * 6 / 10;
    f.set(
        "proc/meminfo",
        format!(
            "MemTotal:       {} kB\nMemFree:        {} kB\nMemAvailable:   {avail} kB\n\
             Buffers:           1024 kB\nCached:         {} kB\nSwapCached:            0 kB\n\
             SwapTotal:      {} kB\nSwapFree:       {} kB\nDirty:            20480 kB\n\
             Writeback:            0 kB\nAnonPages:      {} kB\nCommitLimit:    {} kB\n\
             Committed_AS:   {} kB\nAnonHugePages:    204800 kB\nHugePages_Total:   {}\n\
             HugePages_Free:    {}\nHugePages_Rsvd:        0\nHugePages_Surp:        0\n\
             Hugepagesize:       2048 kB\nHugetlb:        {huge_kb} kB\n",
            m.mem_total_kb,
            m.mem_total_kb / 4,
            m.mem_total_kb / 3,
            m.swap_total_kb,
            m.swap_total_kb,
            m.mem_total_kb / 5,
            commit_limit_kb(m),
            m.committed_as_kb,
            m.huge_2m.0,
            m.huge_2m.1,
        ),
    );
    let vm = |f: &mut Files, k: &str, v: u64| {
        f.set(&format!("proc/sys/vm/{k}"), format!("{v}\n"));
    };
    vm(&mut f, "overcommit_memory", m.overcommit_memory);
    vm(&mut f, "overcommit_ratio", m.overcommit_ratio);
    vm(&mut f, "overcommit_kbytes", 0);
    vm(&mut f, "admin_reserve_kbytes", 8192);
    vm(&mut f, "user_reserve_kbytes", 131072);
    vm(&mut f, "swappiness", 60);
    vm(&mut f, "dirty_background_ratio", 10);
    vm(&mut f, "dirty_ratio", 20);
    vm(&mut f, "min_free_kbytes", 67584);
    vm(&mut f, "zone_reclaim_mode", 0);
    vm(&mut f, "panic_on_oom", 0);
    vm(
        &mut f,
        "oom_kill_allocating_task",
        m.oom_kill_allocating_task,
    );
    vm(&mut f, "nr_hugepages", m.huge_2m.0);
    f.set("proc/sys/kernel/numa_balancing", "0\n");
    let thp = "sys/kernel/mm/transparent_hugepage";
    f.set(
        &format!("{thp}/enabled"),
        selector(&["always", "madvise", "never"], m.thp),
    );
    f.set(
        &format!("{thp}/defrag"),
        selector(
            &["always", "defer", "defer+madvise", "madvise", "never"],
            m.thp_defrag,
        ),
    );
    f.set(&format!("{thp}/khugepaged/defrag"), "1\n");
    f.set(&format!("{thp}/khugepaged/pages_to_scan"), "4096\n");
    f.set(&format!("{thp}/khugepaged/scan_sleep_millisecs"), "10000\n");
    f.set(&format!("{thp}/hpage_pmd_size"), "2097152\n");
    for (name, total, free) in [
        ("hugepages-2048kB", m.huge_2m.0, m.huge_2m.1),
        ("hugepages-1048576kB", m.huge_1g.0, m.huge_1g.1),
    ] {
        let d = format!("sys/kernel/mm/hugepages/{name}");
        f.set(&format!("{d}/nr_hugepages"), format!("{total}\n"));
        f.set(&format!("{d}/free_hugepages"), format!("{free}\n"));
        f.set(&format!("{d}/resv_hugepages"), "0\n");
        f.set(&format!("{d}/surplus_hugepages"), "0\n");
        f.set(&format!("{d}/nr_overcommit_hugepages"), "0\n");
        let n = format!("sys/devices/system/node/node0/hugepages/{name}");
        f.set(&format!("{n}/nr_hugepages"), format!("{total}\n"));
        f.set(&format!("{n}/free_hugepages"), format!("{free}\n"));
        f.set(&format!("{n}/surplus_hugepages"), "0\n");
    }
    f.set("sys/devices/system/node/has_memory", "0\n");
    f.set("proc/self/cgroup", "0::/system.slice/db.service\n");
    f.set(
        "proc/mounts",
        "proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n",
    );
    let cg = "sys/fs/cgroup/system.slice/db.service";
    f.set(&format!("{cg}/memory.max"), "max\n");
    f.set(&format!("{cg}/memory.high"), "max\n");
    f.set(&format!("{cg}/memory.swap.max"), "max\n");
    f.set(&format!("{cg}/memory.current"), "1073741824\n");
    let init = if m.own_pid_namespace {
        "tini"
    } else {
        "systemd"
    };
    for (pid, name, score, adj, rss_kb) in [
        (1u32, init, 0i64, 0i64, 12_288u64),
        (812, "postgres", 310, 0, 4 << 20),
        (977, "sshd", 0, -1000, 8_192),
        (1204, "java", 420, 0, 5 << 20),
    ] {
        f.set(&format!("proc/{pid}/oom_score"), format!("{score}\n"));
        f.set(&format!("proc/{pid}/oom_score_adj"), format!("{adj}\n"));
        f.set(
            &format!("proc/{pid}/status"),
            format!("Name:\t{name}\nState:\tS (sleeping)\nVmRSS:\t{rss_kb} kB\n"),
        );
    }
    // A kernel thread: no VmRSS, never an OOM victim; a PID namespace of its own shows
    // none.
    if !m.own_pid_namespace {
        f.set("proc/2/oom_score", "0\n");
        f.set("proc/2/oom_score_adj", "0\n");
        f.set("proc/2/status", "Name:\tkthreadd\nState:\tS (sleeping)\n");
    }
    f
}
