//! Text and JSON views of a [`Topology`] for `smtlab topo`. Pure: topology in, text out.

use super::*;
use crate::render::Table;
use serde::Serialize;

/// The `topo --json` document: the model, the oracle-shaped partitions and an SMT summary.
#[derive(Serialize)]
pub struct TopoJson<'a> {
    /// Version of this JSON layout.
    pub schema_version: u32,
    /// SMT facts in one place.
    pub smt: SmtSummary,
    /// What keeps this process off online CPUs (`cgroup`, `affinity`); empty when every
    /// online CPU is usable.
    pub usable_restricted_by: Vec<Restriction>,
    #[serde(flatten)]
    pub partitions: Partitions,
    #[serde(flatten)]
    pub topology: &'a Topology,
}

/// What the machine says about SMT.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct SmtSummary {
    /// Most online threads seen on one core (1 = no SMT siblings visible).
    pub threads_per_core: usize,
    /// Cores with more than one online thread.
    pub cores_with_siblings: usize,
    /// All cores.
    pub cores: usize,
    /// `smt/control`, when the kernel has it.
    pub control: Option<String>,
    /// `smt/active`, when the kernel has it.
    pub active: Option<bool>,
    /// AMD family 15h CMT modules (pairs of integer cores the kernel lists as thread
    /// siblings; each CPU counts as a core); 0 on every other machine.
    pub cmt_modules: usize,
    /// The one plain sentence `topo` prints.
    pub sentence: String,
}

pub fn smt_summary(t: &Topology) -> SmtSummary {
    let cores = t.cores();
    let tpc = cores.iter().map(CpuSet::len).max().unwrap_or(1);
    let with = cores.iter().filter(|c| c.len() > 1).count();
    let control = t.machine.smt_control.clone();
    let ctl = control
        .as_deref()
        .map(|c| format!("control={c}"))
        .unwrap_or_else(|| "no smt/control file".into());
    let modules = t.cmt_modules();
    let sentence = if !modules.is_empty() {
        let control_note = match control.as_deref() {
            Some(c @ ("on" | "off")) => format!(
                "; the kernel's smt/control ({c}) counts the modules as SMT, and switching it \
                 off would take cores offline"
            ),
            _ => format!(" ({ctl})"),
        };
        format!(
            "no SMT: the {} pairs of CPUs Linux lists as thread siblings ({}) are {}; each CPU \
             is a core of its own, with no SMT (Hyper-Threading) to turn off{control_note}",
            modules.len(),
            sibling_examples(&modules),
            super::CMT_MODULES
        )
    } else if tpc > 1 {
        if with < cores.len() {
            format!(
                "SMT: up to {tpc} threads per core ({with} of {} cores have siblings), {ctl}",
                cores.len()
            )
        } else {
            format!("SMT: {tpc} threads per core, {ctl}")
        }
    } else {
        let mut s = "no SMT siblings visible: 1 thread per core".to_string();
        match control.as_deref() {
            Some("off") | Some("forceoff") => s.push_str(&format!(
                " (SMT is switched off: {ctl}; siblings are offline)"
            )),
            Some("on") if t.machine.smt_active == Some(false) => {
                s.push_str(" (control=on but smt/active=0: siblings are offline)")
            }
            Some(_) => s.push_str(&format!(" ({ctl})")),
            None => {}
        }
        s
    };
    SmtSummary {
        threads_per_core: tpc,
        cores_with_siblings: with,
        cores: cores.len(),
        control,
        active: t.machine.smt_active,
        cmt_modules: modules.len(),
        sentence,
    }
}

/// `0-1; 2-3; …`: the first sets, enough to show the pattern (`;` between sets, as a set
/// can be `0,4`).
fn sibling_examples(sets: &[CpuSet]) -> String {
    let mut v: Vec<String> = sets.iter().take(2).map(CpuSet::to_string).collect();
    if sets.len() > 2 {
        v.push("…".into());
    }
    v.join("; ")
}

pub fn to_json(t: &Topology) -> String {
    let doc = TopoJson {
        schema_version: SCHEMA_VERSION,
        smt: smt_summary(t),
        usable_restricted_by: t.restricted_by(),
        partitions: t.partitions(),
        topology: t,
    };
    serde_json::to_string_pretty(&doc).expect("topology serialises")
}

/// Sizes in binary units: the one byte format, [`crate::render::bytes`].
pub use crate::render::bytes as human_bytes;

fn kind_label(t: &Topology, cpu: u32) -> Option<String> {
    let k = t.cpu(cpu)?.kind?;
    Some(t.kinds[k].name.clone())
}

/// The compact tree: packages → LLC groups → cores with their sibling CPUs.
pub fn tree(t: &Topology) -> String {
    let mut out = String::new();
    let online = t.online();
    let allowed = t.allowed();
    let cores = t.cores();
    let packages = t.packages();
    let m = &t.machine;
    let model = m.model.clone().unwrap_or_else(|| "unknown CPU".into());
    out.push_str(&format!(
        "Machine: {model}{}\n",
        m.vendor
            .as_ref()
            .map(|v| format!(" ({v})"))
            .unwrap_or_default()
    ));
    out.push_str(&format!(
        "  {} CPUs online, {} cores, {} package{}, {} NUMA node{}{}\n",
        online.len(),
        cores.len(),
        packages.len(),
        if packages.len() == 1 { "" } else { "s" },
        t.numa_nodes.len().max(1),
        if t.numa_nodes.len() > 1 { "s" } else { "" },
        if t.live { "" } else { " (read from a dump)" },
    ));
    out.push_str(&format!("{}\n", smt_summary(t).sentence));
    if m.hypervisor {
        let kind = None;
        // Two sentences: the topology's caveat, then the one every measuring command gives.
        let caveat = crate::render::Caveat::Hypervisor { kind }.to_string();
        let mut c = caveat.chars();
        let caveat = c
            .next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default();
        out.push_str(&format!(
            "virtual machine: the reported topology may not match the host's. {caveat}.\n"
        ));
    }
    if !t.kinds.is_empty() {
        let ks: Vec<String> = t
            .kinds
            .iter()
            .map(|k| format!("{} {} ({})", k.name, k.cpus, k.source))
            .collect();
        out.push_str(&format!("CPU kinds: {}\n", ks.join(", ")));
    }
    let offline: CpuSet = t.cpus.iter().filter(|c| !c.online).map(|c| c.cpu).collect();
    if !offline.is_empty() {
        out.push_str(&format!("Offline CPUs: {offline}\n"));
    }
    let by = t.restricted_by();
    if allowed != online || !by.is_empty() {
        let src: Vec<String> = by
            .iter()
            .map(|r| match r {
                Restriction::Cgroup => format!(
                    "the cgroup cpuset, {}",
                    t.process.cgroup_source.as_deref().unwrap_or("cgroup")
                ),
                Restriction::Affinity => {
                    "the affinity mask (taskset, numactl, sched_setaffinity)".to_string()
                }
            })
            .collect();
        out.push_str(&format!(
            "Usable by this process: {allowed} (restricted by {}); other CPUs marked !\n",
            src.join(" and ")
        ));
    } else {
        out.push_str(&format!(
            "Usable by this process: {allowed} (all online CPUs)\n"
        ));
    }
    if let Some(q) = t.process.cpu_quota {
        out.push_str(&format!(
            "CPU quota: {q:.2} CPUs of time (cgroup cpu.max)\n"
        ));
    }
    let isolated: CpuSet = t
        .cpus
        .iter()
        .filter(|c| c.isolated)
        .map(|c| c.cpu)
        .collect();
    if !isolated.is_empty() {
        out.push_str(&format!("Isolated (isolcpus): {isolated}\n"));
    }
    let nohz: CpuSet = t
        .cpus
        .iter()
        .filter(|c| c.nohz_full)
        .map(|c| c.cpu)
        .collect();
    if !nohz.is_empty() {
        out.push_str(&format!("nohz_full: {nohz}\n"));
    }
    out.push('\n');

    let llcs = t.llc_groups();
    let llc_level = t.llc_level().filter(|&l| l >= 2);
    let mark = |c: u32| -> String {
        let mut s = c.to_string();
        if !allowed.contains(c) {
            s.push('!');
        }
        if t.cpu(c).is_some_and(|x| x.isolated) {
            s.push('i');
        }
        s
    };
    for (pi, p) in packages.iter().enumerate() {
        let pid = p
            .first()
            .and_then(|c| t.cpu(c))
            .and_then(|c| c.package)
            .map(|x| x.to_string())
            .unwrap_or_else(|| pi.to_string());
        let nodes: Vec<String> = t
            .numa_nodes
            .iter()
            .filter(|n| n.cpus.intersects(p))
            .map(|n| n.node.to_string())
            .collect();
        out.push_str(&format!(
            "Package {pid}: CPUs {p}{}\n",
            if nodes.is_empty() {
                String::new()
            } else {
                format!(", NUMA node {}", nodes.join(","))
            }
        ));
        for g in llcs.iter().filter(|g| g.is_subset(p) || g.intersects(p)) {
            let g = g.intersection(p);
            let cache = llc_level.and_then(|l| g.first().and_then(|c| t.cache_of(c, l)));
            match cache {
                Some(c) => out.push_str(&format!(
                    "  {} {}: CPUs {g}\n",
                    c.name(),
                    c.size_bytes.map(human_bytes).unwrap_or_else(|| "?".into())
                )),
                None => out.push_str(&format!("  (no shared cache known): CPUs {g}\n")),
            }
            for core in cores.iter().filter(|c| c.is_subset(&g)) {
                let first = core.first().expect("non-empty core");
                let cpus: Vec<String> = core.iter().map(mark).collect();
                let mut line = format!(
                    "    core {:>4}: CPU{} {}",
                    t.cpu(first)
                        .and_then(|c| c.core_id)
                        .map(|x| x.to_string())
                        .unwrap_or_else(|| "?".into()),
                    if core.len() > 1 { "s" } else { " " },
                    cpus.join(",")
                );
                if let Some(k) = kind_label(t, first) {
                    line.push_str(&format!("  [{k}]"));
                }
                if let Some(m) = t.cmt_module_of(first) {
                    line.push_str(&format!("  (CMT module {m})"));
                } else if let Some(l2) = t.cache_of(first, 2)
                    && llc_level != Some(2)
                    && l2.cpus.len() > core.len()
                {
                    line.push_str(&format!("  (L2 shared with {})", l2.cpus));
                }
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out.push_str("\nCore numbers are the kernel's core_id (per package, may have gaps); CPU numbers are OS numbers.\n");
    if !t.warnings.is_empty() {
        out.push('\n');
        for w in &t.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    out
}

/// One row per logical CPU.
pub fn cpu_table(t: &Topology) -> String {
    let allowed = t.allowed();
    let inst = |cpu: u32, level: u8, ty: CacheType| -> String {
        t.caches
            .iter()
            .filter(|c| c.level == level && c.cache_type == ty)
            .position(|c| c.cpus.contains(cpu))
            .map(|i| i.to_string())
            .unwrap_or_else(|| "-".into())
    };
    let opt = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
    let mut table = Table::new(&[
        "CPU", "ONLINE", "ALLOWED", "PKG", "DIE", "CLUSTER", "CORE", "SIBLINGS", "NODE", "L1d",
        "L1i", "L2", "L3", "KIND", "FLAGS",
    ]);
    for c in &t.cpus {
        let mut flags = Vec::new();
        if c.isolated {
            flags.push("isolated");
        }
        if c.nohz_full {
            flags.push("nohz_full");
        }
        let l2ty = if t
            .caches
            .iter()
            .any(|x| x.level == 2 && x.cache_type == CacheType::Unified)
        {
            CacheType::Unified
        } else {
            CacheType::Data
        };
        table.push(vec![
            c.cpu.to_string(),
            if c.online { "yes" } else { "no" }.into(),
            if allowed.contains(c.cpu) { "yes" } else { "no" }.into(),
            opt(c.package),
            opt(c.die),
            opt(c.cluster),
            opt(c.core_id),
            match t.cmt_module_of(c.cpu) {
                Some(m) => format!("- (CMT module {m})"),
                None if c.online => c.core_cpus.to_string(),
                None => "-".into(),
            },
            opt(c.numa_node),
            inst(c.cpu, 1, CacheType::Data),
            inst(c.cpu, 1, CacheType::Instruction),
            inst(c.cpu, 2, l2ty),
            inst(c.cpu, 3, CacheType::Unified),
            c.kind
                .map(|k| t.kinds[k].name.clone())
                .unwrap_or_else(|| "-".into()),
            if flags.is_empty() {
                "-".into()
            } else {
                flags.join(",")
            },
        ]);
    }
    let mut out = table.text();
    for w in &t.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}
