//! `mem report`'s document (its blocks, drawn by the terminal writer) and the study's
//! memory table. The byte and share formats are
//! [`crate::render`]'s, re-exported here for the `mem` modules.

use super::model::*;
use crate::conclusion::{Finding, PhaseName, SectionCtx, StudySection};
use crate::render::Table;
use crate::render::blocks::{Block, Term};

/// The phase that fills this section; results.json names it `"memory"`.
pub const PHASE: PhaseName = PhaseName::new("memory");
/// The section's heading in report.html and summary.md.
pub const TITLE: &str = "Memory settings";

pub use crate::render::{bytes, pct, signed_bytes};

/// `mem report` as one document: a heading per area, its settings as label–value rows,
/// then the findings and what could not be read. The terminal draws it through
/// [`crate::render::terminal`].
pub fn blocks(r: &MemReport) -> Vec<Block> {
    let mut d = Vec::new();
    if r.root != "/" {
        d.push(Block::Intro(format!("read under {}", r.root)));
    }
    for section in [
        overcommit, memory, swap, thp, hugetlb, reclaim, cgroup, oom, findings,
    ] {
        d.extend(section(r));
    }
    d
}

/// A section being laid out: its heading, then label–value rows gathered into one table
/// until a block of another kind comes.
struct Pairs {
    blocks: Vec<Block>,
    rows: Vec<Vec<String>>,
}

impl Pairs {
    fn under(heading: &str) -> Self {
        Self {
            blocks: vec![Block::Heading(heading.into())],
            rows: Vec::new(),
        }
    }

    fn line(&mut self, label: &str, value: String) {
        self.rows.push(vec![label.to_string(), value]);
    }

    fn block(&mut self, b: Block) {
        self.flush();
        self.blocks.push(b);
    }

    fn flush(&mut self) {
        if !self.rows.is_empty() {
            let mut t = Table::new(&["", ""]);
            t.rows = std::mem::take(&mut self.rows);
            self.blocks.push(Block::Table(t));
        }
    }

    fn done(mut self) -> Vec<Block> {
        self.flush();
        self.blocks
    }
}

/// The overcommit policy, the commit limit and what is left of it.
fn overcommit(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("Overcommit");
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let oc = &r.overcommit;
    o.line(
        "mode",
        oc.mode.map_or_else(
            || na("/proc/sys/vm/overcommit_memory"),
            |m| format!("{} (vm.overcommit_memory = {})", m.label(), m.value()),
        ),
    );
    o.line(
        "ratio",
        oc.ratio_percent.map_or_else(
            || na("/proc/sys/vm/overcommit_ratio"),
            |p| format!("{p}% (vm.overcommit_ratio)"),
        ),
    );
    o.line(
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
    o.line(
        "CommitLimit",
        match (oc.commit_limit_bytes, &oc.limit_formula) {
            (Some(l), Some(f)) => format!("{} ({f})", bytes(l)),
            (Some(l), None) => bytes(l),
            (None, _) => na("/proc/meminfo CommitLimit"),
        },
    );
    o.line(
        "Committed_AS",
        b(oc.committed_as_bytes, "/proc/meminfo Committed_AS"),
    );
    o.line(
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
    o.line("meaning", oc.meaning.clone());
    o.line(
        "root reserve",
        b(oc.admin_reserve_bytes, "/proc/sys/vm/admin_reserve_kbytes"),
    );
    o.line(
        "user reserve",
        b(oc.user_reserve_bytes, "/proc/sys/vm/user_reserve_kbytes"),
    );
    o.done()
}

/// Memory, the page cache and the dirty-page thresholds.
fn memory(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("Memory and page cache");
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let m = &r.memory;
    o.line("MemTotal", b(m.total_bytes, "/proc/meminfo MemTotal"));
    o.line(
        "MemAvailable",
        b(m.available_bytes, "/proc/meminfo MemAvailable"),
    );
    o.line("MemFree", b(m.free_bytes, "/proc/meminfo MemFree"));
    o.line("Cached", b(m.cached_bytes, "/proc/meminfo Cached"));
    o.line("Dirty", b(m.dirty_bytes, "/proc/meminfo Dirty"));
    o.line("Writeback", b(m.writeback_bytes, "/proc/meminfo Writeback"));
    o.line(
        "dirty_background_ratio",
        m.dirty_background_ratio_percent.map_or_else(
            || na("/proc/sys/vm/dirty_background_ratio"),
            |p| format!("{p}% (flusher threads start writing back)"),
        ),
    );
    o.line(
        "dirty_ratio",
        m.dirty_ratio_percent.map_or_else(
            || na("/proc/sys/vm/dirty_ratio"),
            |p| format!("{p}% (writing processes write back themselves)"),
        ),
    );
    o.done()
}

/// Swap and swappiness.
fn swap(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("Swap");
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let n = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), |x| x.to_string());
    o.line(
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
    o.line("SwapFree", b(r.swap.free_bytes, "/proc/meminfo SwapFree"));
    o.line(
        "swappiness",
        n(r.swap.swappiness, "/proc/sys/vm/swappiness"),
    );
    o.done()
}

/// Transparent huge pages and khugepaged.
fn thp(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("Transparent huge pages");
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let s = |v: &Option<String>, source: &str| v.clone().unwrap_or_else(|| na(source));
    let m = &r.memory;
    const THP: &str = "/sys/kernel/mm/transparent_hugepage";
    let t = &r.thp;
    o.line("enabled", s(&t.enabled, &format!("{THP}/enabled")));
    o.line("defrag", s(&t.defrag, &format!("{THP}/defrag")));
    o.line(
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
    o.line(
        "THP size",
        b(t.page_bytes, &format!("{THP}/hpage_pmd_size")),
    );
    o.line(
        "AnonHugePages",
        b(m.anon_huge_bytes, "/proc/meminfo AnonHugePages"),
    );
    o.done()
}

/// Hugetlb pages: the default size, then each size (and node) as a table.
fn hugetlb(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("Hugetlb pages");
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let h = &r.hugetlb;
    o.line(
        "default size",
        b(h.default_page_bytes, "/proc/meminfo Hugepagesize"),
    );
    o.line("in hugetlb", b(h.total_bytes, "/proc/meminfo Hugetlb"));
    if h.sizes.is_empty() {
        o.line("sizes", na("/sys/kernel/mm/hugepages"));
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
        o.block(Block::Table(table));
    }
    o.done()
}

/// Reclaim and NUMA balancing.
fn reclaim(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("Reclaim and NUMA");
    let na = |source: &str| r.why(source);
    let b = |v: Option<u64>, source: &str| v.map_or_else(|| na(source), bytes);
    let rc = &r.reclaim;
    o.line(
        "min_free_kbytes",
        b(rc.min_free_bytes, "/proc/sys/vm/min_free_kbytes"),
    );
    o.line(
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
    o.line(
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
        o.line("memory nodes", nodes.to_string());
    }
    o.done()
}

/// This process's memory cgroup and its limits.
fn cgroup(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("This process's memory cgroup");
    let c = &r.cgroup;
    match (&c.version, &c.note) {
        (Some(v), _) => {
            o.line(
                "cgroup",
                format!("{v} {}", c.path.as_deref().unwrap_or("?")),
            );
            for l in &c.limits {
                o.line(
                    &l.file,
                    format!(
                        "{} ({})",
                        l.limit_bytes.map_or("no limit".into(), bytes),
                        l.meaning
                    ),
                );
            }
            if let Some(u) = c.usage_bytes {
                o.line("usage", bytes(u));
            }
        }
        (None, Some(note)) => o.line("cgroup", note.clone()),
        (None, None) => o.line("cgroup", "none found".into()),
    }
    o.done()
}

/// The OOM killer's settings, who opted out, and who it would pick first (folded).
fn oom(r: &MemReport) -> Vec<Block> {
    let mut o = Pairs::under("OOM killer");
    let na = |source: &str| r.why(source);
    let k = &r.oom;
    o.line(
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
    o.line(
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
        o.line("processes seen", why.clone());
    }
    o.line(
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
        o.line("most at risk", na("/proc/PID/oom_score"));
    } else {
        let rule = if k.kill_allocating_task.is_some_and(|v| v != 0) {
            "highest oom_score is killed first in a cgroup OOM"
        } else {
            "highest oom_score is killed first"
        };
        let summary = format!(
            "most at risk (of {} processes{}; {rule})",
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
        o.block(Block::Folded {
            summary,
            blocks: vec![Block::Table(table)],
        });
    }
    o.done()
}

/// What stands out, each with what it means; then the sources that could not be read.
fn findings(r: &MemReport) -> Vec<Block> {
    let mut d = vec![Block::Heading("Findings".into())];
    if r.findings.is_empty() {
        d.push(Block::List(vec!["nothing stands out".into()]));
    } else {
        d.push(Block::Terms(
            r.findings
                .iter()
                .map(|f| Term {
                    label: f.level.label().to_string(),
                    observed: f.observed.clone(),
                    meaning: f.meaning.clone(),
                })
                .collect(),
        ));
    }
    if !r.not_available.is_empty() {
        d.push(Block::Heading("Not available".into()));
        d.push(Block::List(
            r.not_available
                .iter()
                .map(|x| format!("{} {}", x.source, x.reason))
                .collect(),
        ));
    }
    d
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

    /// `mem report` is one document: every area a heading, its settings one label–value
    /// table, the hugetlb sizes and the OOM killer's picks tables of their own, and the
    /// terminal lines every value up in one column.
    #[test]
    fn the_report_is_one_document_drawn_by_the_terminal_writer() {
        let r = crate::mem::read::read(&crate::mem::fixture::tree(
            &crate::mem::fixture::Machine::default(),
        ));
        let doc = blocks(&r);
        let headings: Vec<&str> = doc
            .iter()
            .filter_map(|b| match b {
                Block::Heading(h) => Some(h.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            headings[..9],
            [
                "Overcommit",
                "Memory and page cache",
                "Swap",
                "Transparent huge pages",
                "Hugetlb pages",
                "Reclaim and NUMA",
                "This process's memory cgroup",
                "OOM killer",
                "Findings",
            ]
        );
        assert!(
            doc.iter()
                .any(|b| matches!(b, Block::Table(t) if t.header[0] == "size"))
        );
        assert!(doc.iter().any(|b| matches!(b, Block::Folded { summary, .. }
            if summary.starts_with("most at risk"))));
        let text = crate::render::terminal::draw(&doc);
        let column = |label: &str| {
            let l = text
                .lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("no {label} in\n{text}"));
            l.len() - l[2 + label.len()..].trim_start().len()
        };
        assert_eq!(column("mode"), column("dirty_background_ratio"));
        assert_eq!(column("defrag"), column("panic_on_oom"));
        assert!(text.contains("Findings\n"), "{text}");
    }

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
