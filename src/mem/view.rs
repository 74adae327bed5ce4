//! `mem report`'s text view and the study's memory table. The byte and share formats are
//! [`crate::render`]'s, re-exported here for the `mem` modules.

use super::model::*;
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::render::Table;
use crate::render::blocks::{Block, Term};
use std::fmt::Write;

/// The phase that fills this section; results.json names it `"memory"`.
pub const PHASE: PhaseName = PhaseName::new("memory");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Memory settings";

pub use crate::render::{bytes, pct, signed_bytes};

/// The text view.
pub fn text(r: &MemReport) -> String {
    let mut o = String::new();
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let n = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), |x| x.to_string());
    let s = |v: &Option<String>, source: &str| v.clone().unwrap_or_else(|| na(source));
    let line = |o: &mut String, k: &str, v: String| {
        let _ = writeln!(o, "  {k:<22} {v}");
    };
    if r.root != "/" {
        let _ = writeln!(o, "read under {}\n", r.root);
    }

    o.push_str("Overcommit\n");
    let oc = &r.overcommit;
    line(
        &mut o,
        "mode",
        oc.mode.map_or_else(
            || na("/proc/sys/vm/overcommit_memory"),
            |m| format!("{} (vm.overcommit_memory = {})", m.label(), m.value()),
        ),
    );
    line(
        &mut o,
        "ratio",
        oc.ratio_percent.map_or_else(
            || na("/proc/sys/vm/overcommit_ratio"),
            |p| format!("{p}% (vm.overcommit_ratio)"),
        ),
    );
    line(
        &mut o,
        "kbytes",
        oc.kbytes_bytes.map_or_else(
            || na("/proc/sys/vm/overcommit_kbytes"),
            |k| {
                if k == 0 {
                    "0 (unset: the ratio applies)".into()
                } else {
                    format!("{} (vm.overcommit_kbytes; replaces the ratio)", bytes(k))
                }
            },
        ),
    );
    line(
        &mut o,
        "CommitLimit",
        match (oc.commit_limit_bytes, &oc.limit_formula) {
            (Some(l), Some(f)) => format!("{} ({f})", bytes(l)),
            (Some(l), None) => bytes(l),
            (None, _) => na("/proc/meminfo CommitLimit"),
        },
    );
    line(
        &mut o,
        "Committed_AS",
        b(oc.committed_as_bytes, "/proc/meminfo Committed_AS"),
    );
    line(
        &mut o,
        "headroom",
        oc.headroom_bytes.map_or_else(
            || "not available: needs CommitLimit and Committed_AS".into(),
            |h| match oc.unprivileged_headroom_bytes {
                Some(u) => format!(
                    "{} (CommitLimit − Committed_AS); {} of it for a process that is not root \
                     (less admin_reserve_kbytes and user_reserve_kbytes)",
                    signed_bytes(h),
                    signed_bytes(u)
                ),
                None => format!("{} (CommitLimit − Committed_AS)", signed_bytes(h)),
            },
        ),
    );
    line(&mut o, "meaning", oc.meaning.clone());
    line(
        &mut o,
        "root reserve",
        b(oc.admin_reserve_bytes, "/proc/sys/vm/admin_reserve_kbytes"),
    );
    line(
        &mut o,
        "user reserve",
        b(oc.user_reserve_bytes, "/proc/sys/vm/user_reserve_kbytes"),
    );

    o.push_str("\nMemory and page cache\n");
    let m = &r.memory;
    line(
        &mut o,
        "MemTotal",
        b(m.total_bytes, "/proc/meminfo MemTotal"),
    );
    line(
        &mut o,
        "MemAvailable",
        b(m.available_bytes, "/proc/meminfo MemAvailable"),
    );
    line(&mut o, "MemFree", b(m.free_bytes, "/proc/meminfo MemFree"));
    line(&mut o, "Cached", b(m.cached_bytes, "/proc/meminfo Cached"));
    line(&mut o, "Dirty", b(m.dirty_bytes, "/proc/meminfo Dirty"));
    line(
        &mut o,
        "Writeback",
        b(m.writeback_bytes, "/proc/meminfo Writeback"),
    );
    line(
        &mut o,
        "dirty_background_ratio",
        m.dirty_background_ratio_percent.map_or_else(
            || na("/proc/sys/vm/dirty_background_ratio"),
            |p| format!("{p}% (flusher threads start writing back)"),
        ),
    );
    line(
        &mut o,
        "dirty_ratio",
        m.dirty_ratio_percent.map_or_else(
            || na("/proc/sys/vm/dirty_ratio"),
            |p| format!("{p}% (writing processes write back themselves)"),
        ),
    );

    o.push_str("\nSwap\n");
    line(
        &mut o,
        "SwapTotal",
        r.swap.total_bytes.map_or_else(
            || na("/proc/meminfo SwapTotal"),
            |t| {
                if t == 0 {
                    "0 (no swap)".into()
                } else {
                    bytes(t)
                }
            },
        ),
    );
    line(
        &mut o,
        "SwapFree",
        b(r.swap.free_bytes, "/proc/meminfo SwapFree"),
    );
    line(
        &mut o,
        "swappiness",
        n(r.swap.swappiness, "/proc/sys/vm/swappiness"),
    );

    o.push_str("\nTransparent huge pages\n");
    const THP: &str = "/sys/kernel/mm/transparent_hugepage";
    let t = &r.thp;
    line(&mut o, "enabled", s(&t.enabled, &format!("{THP}/enabled")));
    line(&mut o, "defrag", s(&t.defrag, &format!("{THP}/defrag")));
    line(
        &mut o,
        "khugepaged",
        match (
            t.khugepaged_defrag,
            t.khugepaged_pages_to_scan,
            t.khugepaged_scan_sleep_ms,
        ) {
            (Some(d), Some(p), Some(ms)) => format!(
                "defrag {}, scans {p} pages every {ms} ms",
                if d { "on" } else { "off" }
            ),
            _ => na(&format!("{THP}/khugepaged/defrag")),
        },
    );
    line(
        &mut o,
        "THP size",
        b(t.page_bytes, &format!("{THP}/hpage_pmd_size")),
    );
    line(
        &mut o,
        "AnonHugePages",
        b(m.anon_huge_bytes, "/proc/meminfo AnonHugePages"),
    );

    o.push_str("\nHugetlb pages\n");
    let h = &r.hugetlb;
    line(
        &mut o,
        "default size",
        b(h.default_page_bytes, "/proc/meminfo Hugepagesize"),
    );
    line(
        &mut o,
        "in hugetlb",
        b(h.total_bytes, "/proc/meminfo Hugetlb"),
    );
    if h.sizes.is_empty() {
        line(&mut o, "sizes", na("/sys/kernel/mm/hugepages"));
    } else {
        let dash = |v: Option<u64>| v.map_or("n/a".to_string(), |x| x.to_string());
        let mut table = Table::new(&[
            "size",
            "node",
            "total",
            "free",
            "reserved",
            "surplus",
            "overcommit",
        ]);
        for z in &h.sizes {
            table.push(vec![
                bytes(z.page_bytes),
                "all".into(),
                dash(z.total),
                dash(z.free),
                dash(z.reserved),
                dash(z.surplus),
                dash(z.overcommit),
            ]);
            for nd in &z.nodes {
                table.push(vec![
                    String::new(),
                    format!("node {}", nd.node),
                    dash(nd.total),
                    dash(nd.free),
                    "-".into(),
                    dash(nd.surplus),
                    "-".into(),
                ]);
            }
        }
        for l in table.text().lines() {
            let _ = writeln!(o, "  {l}");
        }
    }

    o.push_str("\nReclaim and NUMA\n");
    let rc = &r.reclaim;
    line(
        &mut o,
        "min_free_kbytes",
        b(rc.min_free_bytes, "/proc/sys/vm/min_free_kbytes"),
    );
    line(
        &mut o,
        "zone_reclaim_mode",
        rc.zone_reclaim_mode.map_or_else(
            || na("/proc/sys/vm/zone_reclaim_mode"),
            |z| {
                if z == 0 {
                    "0 (allocate from another node before reclaiming locally)".into()
                } else {
                    format!("{z} (reclaim locally first)")
                }
            },
        ),
    );
    line(
        &mut o,
        "numa_balancing",
        rc.numa_balancing.map_or_else(
            || na("/proc/sys/kernel/numa_balancing"),
            |v| match v {
                0 => "0 (off)".into(),
                1 => "1 (on: pages migrate toward the node using them)".into(),
                x => format!("{x} (memory tiering)"),
            },
        ),
    );
    if let Some(nodes) = rc.memory_nodes {
        line(&mut o, "memory nodes", nodes.to_string());
    }

    o.push_str("\nThis process's memory cgroup\n");
    let c = &r.cgroup;
    match (&c.version, &c.note) {
        (Some(v), _) => {
            line(
                &mut o,
                "cgroup",
                format!("{v} {}", c.path.as_deref().unwrap_or("?")),
            );
            for l in &c.limits {
                line(
                    &mut o,
                    &l.file,
                    format!(
                        "{} ({})",
                        l.limit_bytes.map_or("no limit".into(), bytes),
                        l.meaning
                    ),
                );
            }
            if let Some(u) = c.usage_bytes {
                line(&mut o, "usage", bytes(u));
            }
        }
        (None, Some(note)) => line(&mut o, "cgroup", note.clone()),
        (None, None) => line(&mut o, "cgroup", "none found".into()),
    }

    o.push_str("\nOOM killer\n");
    let k = &r.oom;
    line(
        &mut o,
        "panic_on_oom",
        k.panic_on_oom.map_or_else(
            || na("/proc/sys/vm/panic_on_oom"),
            |p| {
                if p == 0 {
                    "0 (kill a process)".into()
                } else {
                    format!("{p} (panic the kernel)")
                }
            },
        ),
    );
    line(
        &mut o,
        "kill_allocating_task",
        k.kill_allocating_task.map_or_else(
            || na("/proc/sys/vm/oom_kill_allocating_task"),
            |v| {
                if v == 0 {
                    "0 (kill the highest oom_score)".into()
                } else {
                    format!("{v} (a machine-wide OOM kills the task whose allocation failed)")
                }
            },
        ),
    );
    if let Some(why) = &k.partial_view {
        line(&mut o, "processes seen", why.clone());
    }
    line(
        &mut o,
        "opted out",
        if k.opted_out.is_empty() {
            "none (no process has oom_score_adj −1000)".into()
        } else {
            k.opted_out
                .iter()
                .map(|p| format!("{} ({})", p.name, p.pid))
                .collect::<Vec<_>>()
                .join(", ")
        },
    );
    if k.top.is_empty() {
        line(&mut o, "most at risk", na("/proc/PID/oom_score"));
    } else {
        let rule = if k.kill_allocating_task.is_some_and(|v| v != 0) {
            "highest oom_score is killed first in a cgroup OOM"
        } else {
            "highest oom_score is killed first"
        };
        let _ = writeln!(
            o,
            "  most at risk (of {} processes{}; {rule}):",
            k.processes,
            if k.partial_view.is_some() {
                " this /proc shows"
            } else {
                ""
            }
        );
        let mut table = Table::new(&["pid", "name", "oom_score", "oom_score_adj", "RSS"]);
        for p in &k.top {
            table.push(vec![
                p.pid.to_string(),
                p.name.clone(),
                p.oom_score.to_string(),
                p.oom_score_adj.to_string(),
                bytes(p.rss_bytes),
            ]);
        }
        for l in table.text().lines() {
            let _ = writeln!(o, "    {l}");
        }
    }

    o.push_str("\nFindings\n");
    if r.findings.is_empty() {
        o.push_str("  nothing stands out\n");
    }
    for f in &r.findings {
        let _ = writeln!(o, "  {}: {}", f.level.label(), f.observed);
        let _ = writeln!(o, "    {}", f.meaning);
    }
    if !r.not_available.is_empty() {
        o.push_str("\nNot available\n");
        for x in &r.not_available {
            let _ = writeln!(o, "  {} {}", x.source, x.reason);
        }
    }
    o
}

/// The memory section's facts as key/value rows (`mem report`'s headline values).
pub fn study_table(r: &MemReport) -> Table {
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let mut t = Table::new(&["", ""]);
    let mut kv = |k: &str, v: String| t.rows.push(vec![k.to_string(), v]);
    let o = &r.overcommit;
    kv(
        "Overcommit",
        o.mode.map_or_else(
            || na("/proc/sys/vm/overcommit_memory"),
            |mode| format!("{} (vm.overcommit_memory = {})", mode.label(), mode.value()),
        ),
    );
    kv(
        "CommitLimit",
        match (o.commit_limit_bytes, &o.limit_formula) {
            (Some(l), Some(f)) => format!("{} ({f})", bytes(l)),
            (Some(l), None) => bytes(l),
            (None, _) => na("/proc/meminfo CommitLimit"),
        },
    );
    kv(
        "Committed_AS, headroom",
        match (o.committed_as_bytes, o.headroom_bytes) {
            (Some(c), Some(h)) => format!("{}; headroom {}", bytes(c), signed_bytes(h)),
            (Some(c), None) => bytes(c),
            (None, _) => na("/proc/meminfo Committed_AS"),
        },
    );
    kv(
        "MemTotal, MemAvailable",
        format!(
            "{}, {}",
            b(r.memory.total_bytes, "/proc/meminfo MemTotal"),
            b(r.memory.available_bytes, "/proc/meminfo MemAvailable")
        ),
    );
    kv(
        "Swap, swappiness",
        format!(
            "{}, {}",
            b(r.swap.total_bytes, "/proc/meminfo SwapTotal"),
            r.swap
                .swappiness
                .map_or_else(|| na("/proc/sys/vm/swappiness"), |s| s.to_string())
        ),
    );
    kv(
        "THP enabled, defrag",
        format!(
            "{}, {}",
            r.thp
                .enabled
                .clone()
                .unwrap_or_else(|| na("/sys/kernel/mm/transparent_hugepage/enabled")),
            r.thp
                .defrag
                .clone()
                .unwrap_or_else(|| na("/sys/kernel/mm/transparent_hugepage/defrag"))
        ),
    );
    kv(
        "hugetlb pages",
        if r.hugetlb.sizes.is_empty() {
            na("/sys/kernel/mm/hugepages")
        } else {
            r.hugetlb
                .sizes
                .iter()
                .map(|s| {
                    format!(
                        "{}: {} total, {} free",
                        bytes(s.page_bytes),
                        s.total.map_or("?".into(), |v| v.to_string()),
                        s.free.map_or("?".into(), |v| v.to_string())
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        },
    );
    let hard = r
        .cgroup
        .limits
        .iter()
        .find(|l| l.file == "memory.max" || l.file == "memory.limit_in_bytes");
    kv(
        "cgroup memory limit",
        match (&r.cgroup.version, hard) {
            (Some(v), Some(l)) => format!(
                "{} ({v} {})",
                l.limit_bytes.map_or("none".into(), bytes),
                l.file
            ),
            _ => r.cgroup.note.clone().unwrap_or_else(|| "none found".into()),
        },
    );
    if let Some(p) = r.oom.top.first() {
        kv(
            "OOM killer's first pick",
            format!(
                "{} (pid {}): oom_score {}, RSS {}",
                p.name,
                p.pid,
                p.oom_score,
                bytes(p.rss_bytes)
            ),
        );
    }
    t
}

/// The study's memory section: the settings table and what they mean, then what page size
/// cost (`mem pages` as the study ran it): the curves, where 4 KiB falls behind, backing,
/// TLBs and the latencies folded.
impl StudySection for MemorySection {
    fn phase(&self) -> PhaseName {
        PHASE
    }

    fn blocks(&self, _: &SectionCtx) -> Vec<Block> {
        use super::pages::view as pages;
        let mut b = vec![Block::Table(study_table(&self.report))];
        if !self.report.findings.is_empty() {
            b.push(Block::Terms(
                self.report
                    .findings
                    .iter()
                    .map(|f| Term {
                        label: f.level.label().to_string(),
                        observed: f.observed.clone(),
                        meaning: f.meaning.clone(),
                    })
                    .collect(),
            ));
        }
        b.push(Block::Note("Read from procfs and sysfs; `smtlab mem report` shows every value, `smtlab mem pages` measures what page size costs.".into()));
        b.push(Block::Heading("Page size: latency vs working set".into()));
        let Some(p) = &self.pages else {
            let why = self
                .pages_skipped
                .as_deref()
                .unwrap_or("this results.json was written before the study measured page sizes");
            b.push(Block::Note(format!("Not measured: {why}.")));
            return b;
        };
        if p.interrupted {
            b.push(Block::Note(
                "Interrupted: the working sets below are the ones that finished.".into(),
            ));
        }
        b.push(Block::Chart(pages::chart(p)));
        b.push(Block::Key(pages::departure_sentence(p)));
        b.push(Block::Intro(pages::study_settings(p)));
        b.push(Block::Table(pages::backing_table(p)));
        b.push(Block::Subheading("TLBs (CPUID)".into()));
        b.extend(pages::tlb_table(p).map(Block::Table));
        b.extend(pages::tlb_notes(p).into_iter().map(Block::Note));
        b.push(Block::Folded {
            summary: "Latency per working set (ns per load, median ± MAD)".into(),
            blocks: vec![Block::Table(pages::latency_table(p))],
        });
        b.extend(p.notes.iter().map(|n| Block::Note(n.clone())));
        b
    }

    fn finding(&self, _smt: bool) -> Option<Finding> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_read_naturally() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(2 << 20), "2 MiB");
        assert_eq!(bytes(24684092 * 1024), "23.5 GiB");
        assert_eq!(bytes(1536 << 20), "1.50 GiB");
        assert_eq!(signed_bytes(-(1 << 30)), "−1 GiB");
        assert_eq!(pct(0.5), "50%");
        assert_eq!(pct(0.004), "0.4%");
    }
}
