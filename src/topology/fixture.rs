//! Made-up topologies for tests and the fake study: no sysfs needed, always the same.
//! They live beside the real discovery so that every layer's tests can use them without
//! importing a layer above.

use crate::cpuset::CpuSet;
use crate::topology::{Cache, CacheType, Cpu, Machine, NumaNode, ProcessCpus, Topology};

/// One package, one L3, `cores` cores of `threads_per_core` CPUs each, numbered as Linux
/// numbers x86 siblings: CPU `i` and `i + cores` share a core. `hypervisor` sets the CPU
/// flag, as in a VM.
pub fn topology(cores: u32, threads_per_core: u32, hypervisor: bool) -> Topology {
    let n = cores * threads_per_core;
    let all: CpuSet = (0..n).collect();
    let core_of = |c: u32| -> CpuSet {
        (0..threads_per_core)
            .map(|t| c % cores + t * cores)
            .collect()
    };
    let cpus = (0..n)
        .map(|c| Cpu {
            cpu: c,
            online: true,
            package: Some(0),
            die: Some(0),
            cluster: None,
            core_id: Some(c % cores),
            core_cpus: core_of(c),
            package_cpus: all.clone(),
            die_cpus: None,
            cluster_cpus: None,
            numa_node: Some(0),
            kind: None,
            capacity: None,
            base_freq_khz: None,
            max_freq_khz: None,
            isolated: false,
            nohz_full: false,
        })
        .collect();
    let cache = |level: u8, ty: CacheType, id: u32, size: u64, cpus: CpuSet| Cache {
        level,
        cache_type: ty,
        id: Some(id),
        size_bytes: Some(size),
        line_bytes: Some(64),
        ways: Some(8),
        cpus,
    };
    let mut caches = Vec::new();
    for c in 0..cores {
        caches.push(cache(1, CacheType::Data, c, 32 << 10, core_of(c)));
        caches.push(cache(1, CacheType::Instruction, c, 32 << 10, core_of(c)));
    }
    for c in 0..cores {
        caches.push(cache(2, CacheType::Unified, c, 512 << 10, core_of(c)));
    }
    caches.push(cache(3, CacheType::Unified, 0, 32 << 20, all.clone()));
    let smt = threads_per_core > 1;
    Topology {
        root: "(made up)".into(),
        live: false,
        machine: Machine {
            vendor: Some("AuthenticAMD".into()),
            model: Some(format!(
                "Made-up CPU ({cores} cores, {threads_per_core} threads each)"
            )),
            family: Some(0x19),
            hypervisor,
            smt_control: Some(if smt { "on" } else { "notsupported" }.into()),
            smt_active: Some(smt),
            possible_cpus: Some(all.clone()),
            present_cpus: Some(all.clone()),
            huge_page_sizes_bytes: vec![2 << 20],
            memory_bytes: Some(8 << 30),
        },
        cpus,
        caches,
        kinds: Vec::new(),
        numa_nodes: vec![NumaNode {
            node: 0,
            cpus: all.clone(),
            memory_bytes: Some(8 << 30),
        }],
        process: ProcessCpus::default(),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Proximity;

    #[test]
    fn siblings_are_i_and_i_plus_cores() {
        let t = topology(4, 2, false);
        assert_eq!(t.threads_per_core(), 2);
        assert_eq!(t.cores().len(), 4);
        assert_eq!(t.proximity(1, 5), Proximity::SmtSibling);
        assert_eq!(t.proximity(1, 2), Proximity::SameL3);
        let t = topology(2, 1, true);
        assert_eq!(t.threads_per_core(), 1);
        assert_eq!(t.allowed().to_string(), "0-1");
    }

    #[test]
    fn cmt_modules_are_cores_of_their_own_and_named() {
        // The same shape on AMD family 15h: the kernel's sibling pairs are CMT modules.
        let mut t = topology(4, 2, false);
        t.machine.family = Some(crate::topology::AMD_CMT_FAMILY);
        assert_eq!(t.threads_per_core(), 1);
        assert_eq!(t.cores().len(), 8);
        assert_eq!(t.core_of(1).to_string(), "1");
        assert_eq!(t.proximity(1, 5), Proximity::SameL3);
        assert_eq!(t.cmt_modules().len(), 4);
        assert_eq!(t.cmt_module_of(5).unwrap().to_string(), "1,5");
        let s = crate::topology::view::smt_summary(&t);
        assert_eq!((s.threads_per_core, s.cores, s.cmt_modules), (1, 8, 4));
        assert!(s.sentence.starts_with("no SMT"), "{}", s.sentence);
        assert!(s.sentence.contains("CMT modules"), "{}", s.sentence);
        // Another family's siblings stay SMT.
        let t = topology(4, 2, false);
        assert!(t.cmt_modules().is_empty());
        assert_eq!(t.threads_per_core(), 2);
        assert!(crate::topology::is_cmt_cpuinfo(
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 21\n"
        ));
        assert!(!crate::topology::is_cmt_cpuinfo(
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\n"
        ));
    }
}
