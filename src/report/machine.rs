//! Facts about this machine and this build that change what results mean: kernel,
//! frequency governor, hypervisor, smtlab version, git revision, build profile. Reading
//! them is the only impure part of the report; tests build these structs by hand.

use super::{MachineInfo, Provenance, SmtFacts};
use crate::topology::Topology;
use std::path::Path;

/// The git revision baked in by `build.rs` (`unknown` outside a git checkout).
pub const GIT_REVISION: &str = env!("SMTLAB_GIT_REV");

/// `release` or `debug`.
pub fn build_profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Provenance of a run starting now; `wall_ns` is filled in at the end.
pub fn provenance(command: String) -> Provenance {
    Provenance {
        smtlab_version: env!("CARGO_PKG_VERSION").to_string(),
        git_revision: GIT_REVISION.to_string(),
        build_profile: build_profile().to_string(),
        command,
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        wall_ns: 0,
    }
}

/// Machine facts: topology summary plus kernel, governor and hypervisor read from `root`
/// (`/` for this machine).
pub fn machine_info(topo: &Topology, root: &Path) -> MachineInfo {
    let allowed = topo.allowed();
    let governor = allowed
        .first()
        .and_then(|c| {
            read_trim(&root.join(format!(
                "sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"
            )))
        })
        .unwrap_or_else(|| "unavailable".into());
    MachineInfo {
        cpu_model: topo
            .machine
            .model
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        kernel: if root == Path::new("/") {
            uname()
        } else {
            "unknown (read from a dump)".into()
        },
        frequency_governor: governor,
        hypervisor: hypervisor(topo, root),
        hardware_counters: pmu(root),
        hostname: (root == Path::new("/")).then(hostname).flatten(),
        microcode: std::fs::read_to_string(root.join("proc/cpuinfo"))
            .ok()
            .and_then(|t| microcode(&t)),
        ..summary(topo)
    }
}

/// The first `microcode` field of `/proc/cpuinfo` text (x86 kernels print it per CPU; a
/// mixed revision across CPUs is a firmware bug, so the first stands for all).
pub fn microcode(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "microcode")
            .then(|| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// The topology-derived part of [`MachineInfo`] (pure); kernel, governor and hypervisor
/// are `unknown`.
pub fn summary(topo: &Topology) -> MachineInfo {
    MachineInfo {
        cpu_model: topo
            .machine
            .model
            .clone()
            .unwrap_or_else(|| "unknown".into()),
        kernel: "unknown".into(),
        frequency_governor: "unknown".into(),
        hypervisor: if topo.machine.hypervisor {
            "yes (unknown)".into()
        } else {
            "none".into()
        },
        hardware_counters: "unknown".into(),
        online_cpus: topo.online().len(),
        usable_cpus: topo.allowed().to_string(),
        cores: topo.cores().len(),
        packages: topo.packages().len(),
        l3_groups: topo.llc_groups().len(),
        memory_bytes: topo.machine.memory_bytes,
        hostname: None,
        microcode: None,
    }
}

/// SMT facts from the topology (pure).
pub fn smt_facts(topo: &Topology) -> SmtFacts {
    let s = crate::topology::view::smt_summary(topo);
    SmtFacts {
        threads_per_core: s.threads_per_core,
        cores_with_siblings: s.cores_with_siblings,
        control: s.control,
        active: s.active,
        cmt_modules: s.cmt_modules,
        sentence: s.sentence,
    }
}

/// `available` when a CPU PMU is registered (`cpu`, or hybrid `cpu_core`/`cpu_atom`).
fn pmu(root: &Path) -> String {
    let dir = root.join("sys/bus/event_source/devices");
    let found = ["cpu", "cpu_core", "cpu_atom", "armv8_pmuv3_0"]
        .iter()
        .any(|d| dir.join(d).exists());
    if found {
        "available (not read by this study)".into()
    } else {
        "unavailable (no CPU PMU exposed by the kernel; typical in VMs)".into()
    }
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The node name (`uname -n`), None when uname fails or it is empty.
fn hostname() -> Option<String> {
    // SAFETY: utsname is plain old data; uname fills it with NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let bytes: Vec<u8> = u
        .nodename
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Some(String::from_utf8_lossy(&bytes).into_owned()).filter(|s| !s.is_empty())
}

/// `uname -srvm`.
fn uname() -> String {
    // SAFETY: utsname is plain old data; uname fills it with NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let field = |f: &[libc::c_char]| -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    format!(
        "{} {} {} {}",
        field(&u.sysname),
        field(&u.release),
        field(&u.version),
        field(&u.machine)
    )
}

/// The hypervisor's name: CPUID leaf 0x40000000 (x86, only when the CPU says it runs
/// virtualised), else `/sys/hypervisor/type`, else the DMI vendor.
fn hypervisor(topo: &Topology, root: &Path) -> String {
    if !topo.machine.hypervisor {
        return "none".into();
    }
    if root == Path::new("/")
        && let Some(name) = cpuid_hypervisor()
    {
        return name;
    }
    if let Some(t) = read_trim(&root.join("sys/hypervisor/type")) {
        return t;
    }
    if let Some(v) = read_trim(&root.join("sys/class/dmi/id/sys_vendor")) {
        return v;
    }
    "yes (unknown)".into()
}

#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    #[allow(unused_unsafe)]
    // SAFETY: CPUID exists on every x86_64 CPU; leaf 0x40000000 is reserved for
    // hypervisors and only read when the hypervisor bit is set.
    let r = unsafe { std::arch::x86_64::__cpuid(0x4000_0000) };
    let mut sig = Vec::with_capacity(12);
    for w in [r.ebx, r.ecx, r.edx] {
        sig.extend_from_slice(&w.to_le_bytes());
    }
    let sig = String::from_utf8_lossy(&sig)
        .trim_end_matches('\0')
        .to_string();
    let name = match sig.as_str() {
        "KVMKVMKVM" => "KVM",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "ACRNACRNACRN" => "ACRN",
        " lrpepyh  vr" => "Parallels",
        "bhyve bhyve " => "bhyve",
        "QNXQVMBSQG" => "QNX",
        "" => return None,
        other => return Some(format!("unknown ({})", other.escape_default())),
    };
    Some(name.to_string())
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_made_up_machine() {
        let t = crate::topology::fixture::topology(4, 2, true);
        let m = summary(&t);
        assert_eq!(
            (m.online_cpus, m.cores, m.packages, m.l3_groups),
            (8, 4, 1, 1)
        );
        assert_eq!(m.usable_cpus, "0-7");
        assert_eq!(smt_facts(&t).threads_per_core, 2);
        assert!(["debug", "release"].contains(&build_profile()));
        assert_eq!((m.hostname, m.microcode), (None, None));
    }

    #[test]
    fn this_machine_has_a_kernel_and_a_governor_answer() {
        let t = crate::topology::discover(Path::new("/")).unwrap();
        let m = machine_info(&t, Path::new("/"));
        assert!(m.kernel.starts_with("Linux "), "{}", m.kernel);
        assert!(!m.frequency_governor.is_empty());
        assert!(!m.hypervisor.is_empty());
    }

    #[test]
    fn microcode_is_the_first_cpus_revision() {
        let text = "processor\t: 0\nmodel name\t: X\nmicrocode\t: 0xf0\n\nprocessor\t: 1\nmicrocode\t: 0xf1\n";
        assert_eq!(microcode(text).as_deref(), Some("0xf0"));
        assert_eq!(microcode("processor\t: 0\nmicrocode\t:\n"), None);
        assert_eq!(microcode("processor : 0\n"), None);
    }
}
