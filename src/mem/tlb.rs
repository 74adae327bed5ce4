//! This CPU's TLBs from CPUID: entries per page size and level, and the reach they imply
//! (entries × page size: how much memory the TLB maps before a load needs a page walk).
//!
//! Decoding is pure (from raw register values, so it is tested with values from real
//! CPUs); [`read`] issues the CPUID instructions.
//!
//! - AMD: "AMD64 Architecture Programmer's Manual, Volume 3", appendix E (CPUID): leaf
//!   0x8000_0005 (L1 TLBs for 4 KiB and 2/4 MiB pages), 0x8000_0006 (L2 TLBs, with the
//!   associativity encoding of its table "L2/L3 Cache and TLB Associativity Field
//!   Encoding"), 0x8000_0019 (1 GiB-page TLBs).
//! - Intel: "Intel 64 and IA-32 Architectures Software Developer's Manual, Volume 2A",
//!   CPUID leaf 0x18 ("Deterministic Address Translation Parameters": one sub-leaf per
//!   TLB, with page sizes, ways × sets, type and level) and, on older CPUs, leaf 2's
//!   one-byte descriptors (table "Encoding of CPUID Leaf 2 Descriptors"). Leaf 2's
//!   descriptor 0xFE means "see leaf 0x18".
//!
//! Under a hypervisor CPUID is what the hypervisor chooses to show: some show nothing for
//! these leaves, others the host's values, others a model's. The report says which leaves
//! answered and shows the measured curves beside them.

use serde::{Deserialize, Serialize};

/// 4 KiB, 2 MiB, 4 MiB and 1 GiB, in bytes.
pub const K4: u64 = 4 << 10;
pub const M2: u64 = 2 << 20;
pub const M4: u64 = 4 << 20;
pub const G1: u64 = 1 << 30;

/// What a TLB caches translations for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TlbKind {
    Data,
    Instruction,
    /// Data and instructions (the second-level "STLB" on Intel).
    Unified,
    /// Loads only (Intel leaf 0x18 type 4).
    Load,
    /// Stores only (Intel leaf 0x18 type 5).
    Store,
}

impl TlbKind {
    pub fn label(self) -> &'static str {
        match self {
            TlbKind::Data => "data",
            TlbKind::Instruction => "instruction",
            TlbKind::Unified => "unified",
            TlbKind::Load => "load",
            TlbKind::Store => "store",
        }
    }

    /// Whether data loads use it.
    pub fn serves_loads(self) -> bool {
        matches!(self, TlbKind::Data | TlbKind::Unified | TlbKind::Load)
    }
}

/// One TLB's entries for one page size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbEntry {
    /// 1 for the first level, 2 for the second.
    pub level: u8,
    pub kind: TlbKind,
    pub page_bytes: u64,
    pub entries: u32,
    /// Ways of associativity; None when fully associative.
    pub ways: Option<u32>,
    /// entries × page size.
    pub reach_bytes: u64,
}

/// The TLB table and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlbInfo {
    /// `AuthenticAMD`, `GenuineIntel`, … (empty off x86).
    pub vendor: String,
    /// The CPUID leaves that gave the entries (`0x80000005`, …); empty when none did.
    pub leaves: Vec<String>,
    pub entries: Vec<TlbEntry>,
    /// What CPUID did not say, in plain words ([`Note`]).
    pub notes: Vec<String>,
}

/// What CPUID did not say; kept in [`TlbInfo::notes`] as its sentence.
#[derive(Debug, Clone)]
pub enum Note {
    /// Not an x86 CPU: no CPUID to read.
    NotX86,
    /// CPUID of this `vendor` gave no TLB entries at all.
    NoSizes { vendor: String },
    /// No TLB that serves loads for this page size (`4 KiB`, `2 MiB`, `1 GiB`).
    NoDataTlb { page: &'static str },
    /// Any other text.
    Other(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::NotX86 => {
                f.write_str("not an x86 CPU: TLB sizes are not read on this architecture")
            }
            Note::NoSizes { vendor } => write!(
                f,
                "CPUID ({vendor}) reports no TLB sizes (hypervisors often leave these leaves \
                 empty): only the measured curves below tell where translations start to miss"
            ),
            Note::NoDataTlb { page } => write!(f, "CPUID reports no data TLB for {page} pages"),
            Note::Other(s) => f.write_str(s),
        }
    }
}

crate::note::text_note!(Note);

impl TlbInfo {
    /// The largest reach of a TLB that serves loads for `page_bytes` pages at `level`.
    pub fn data_reach(&self, page_bytes: u64, level: u8) -> Option<u64> {
        self.entries
            .iter()
            .filter(|e| e.page_bytes == page_bytes && e.level == level && e.kind.serves_loads())
            .map(|e| e.reach_bytes)
            .max()
    }
}

fn entry(level: u8, kind: TlbKind, page_bytes: u64, entries: u32, ways: Option<u32>) -> TlbEntry {
    TlbEntry {
        level,
        kind,
        page_bytes,
        entries,
        ways,
        reach_bytes: page_bytes * entries as u64,
    }
}

/// Raw CPUID output: (eax, ebx, ecx, edx).
pub type Regs = (u32, u32, u32, u32);

/// AMD's L1 TLB byte pair (0x8000_0005): associativity in the high byte (0xFF = fully),
/// entries in the low byte.
fn amd_l1(level_field: u32, shift: u32) -> Option<(u32, Option<u32>)> {
    let v = (level_field >> shift) & 0xFFFF;
    let entries = v & 0xFF;
    let assoc = v >> 8;
    (entries > 0 && assoc > 0).then_some((entries, if assoc == 0xFF { None } else { Some(assoc) }))
}

/// AMD's L2 TLB field (0x8000_0006, 0x8000_0019): 4-bit encoded associativity, 12-bit
/// entries. Encoding from the manual's table (0 = disabled; 0xF = fully associative;
/// 9 = "see leaf 0x8000_001D", treated as unknown ways).
fn amd_l2(field16: u32) -> Option<(u32, Option<u32>)> {
    let entries = field16 & 0xFFF;
    let code = (field16 >> 12) & 0xF;
    let ways = match code {
        0 => return None,
        1 => Some(1),
        2 => Some(2),
        3 => Some(3),
        4 => Some(4),
        5 => Some(6),
        6 => Some(8),
        8 => Some(16),
        0xA => Some(32),
        0xB => Some(48),
        0xC => Some(64),
        0xD => Some(96),
        0xE => Some(128),
        0xF => None,
        _ => None,
    };
    (entries > 0).then_some((entries, ways))
}

/// The TLBs from AMD's leaves (None for a leaf the CPU does not have).
pub fn decode_amd(
    l5: Option<Regs>,
    l6: Option<Regs>,
    l19: Option<Regs>,
) -> (Vec<TlbEntry>, Vec<String>) {
    let mut v = Vec::new();
    let mut leaves = Vec::new();
    if let Some((eax, ebx, _, _)) = l5 {
        let before = v.len();
        // EBX: 4 KiB pages; EAX: 2 MiB pages (a 4 MiB page takes two entries). Bits 31:16
        // data, 15:0 instruction.
        for (reg, page) in [(ebx, K4), (eax, M2)] {
            if let Some((n, w)) = amd_l1(reg, 16) {
                v.push(entry(1, TlbKind::Data, page, n, w));
            }
            if let Some((n, w)) = amd_l1(reg, 0) {
                v.push(entry(1, TlbKind::Instruction, page, n, w));
            }
        }
        if v.len() > before {
            leaves.push("0x80000005".to_string());
        }
    }
    if let Some((eax, ebx, _, _)) = l6 {
        let before = v.len();
        for (reg, page) in [(ebx, K4), (eax, M2)] {
            if let Some((n, w)) = amd_l2(reg >> 16) {
                v.push(entry(2, TlbKind::Data, page, n, w));
            }
            if let Some((n, w)) = amd_l2(reg & 0xFFFF) {
                v.push(entry(2, TlbKind::Instruction, page, n, w));
            }
        }
        if v.len() > before {
            leaves.push("0x80000006".to_string());
        }
    }
    if let Some((eax, ebx, _, _)) = l19 {
        let before = v.len();
        for (reg, level) in [(eax, 1u8), (ebx, 2)] {
            if let Some((n, w)) = amd_l2(reg >> 16) {
                v.push(entry(level, TlbKind::Data, G1, n, w));
            }
            if let Some((n, w)) = amd_l2(reg & 0xFFFF) {
                v.push(entry(level, TlbKind::Instruction, G1, n, w));
            }
        }
        if v.len() > before {
            leaves.push("0x80000019".to_string());
        }
    }
    (v, leaves)
}

/// Intel leaf 0x18: one sub-leaf per TLB (sub-leaf 0's EAX is the last sub-leaf).
pub fn decode_intel_18(subleaves: &[Regs]) -> Vec<TlbEntry> {
    let mut v = Vec::new();
    for &(_, ebx, ecx, edx) in subleaves {
        let kind = match edx & 0x1F {
            1 => TlbKind::Data,
            2 => TlbKind::Instruction,
            3 => TlbKind::Unified,
            4 => TlbKind::Load,
            5 => TlbKind::Store,
            _ => continue, // 0: no TLB in this sub-leaf
        };
        let level = ((edx >> 5) & 0x7) as u8;
        let fully = edx & (1 << 8) != 0;
        let ways = ebx >> 16;
        let sets = ecx;
        let entries = ways.saturating_mul(sets);
        if entries == 0 {
            continue;
        }
        for (bit, page) in [(0, K4), (1, M2), (2, M4), (3, G1)] {
            if ebx & (1 << bit) != 0 {
                v.push(entry(level, kind, page, entries, (!fully).then_some(ways)));
            }
        }
    }
    v
}

/// Intel leaf 2's TLB descriptors (cache and prefetch descriptors are skipped). Returns
/// the entries and whether descriptor 0xFE sent us to leaf 0x18.
pub fn decode_intel_2(regs: Regs) -> (Vec<TlbEntry>, bool) {
    use TlbKind::*;
    let mut v = Vec::new();
    let mut see_18 = false;
    let (eax, ebx, ecx, edx) = regs;
    for (i, r) in [eax, ebx, ecx, edx].into_iter().enumerate() {
        if r & (1 << 31) != 0 {
            continue; // bit 31 set: the register holds no descriptors
        }
        for b in 0..4 {
            if i == 0 && b == 0 {
                continue; // AL: the iteration count, always 1
            }
            let d = ((r >> (8 * b)) & 0xFF) as u8;
            if d == 0xFE {
                see_18 = true;
            }
            // (level, kind, entries, ways (0 = fully), page sizes)
            let rows: &[(u8, TlbKind, u32, u32, &[u64])] = match d {
                0x01 => &[(1, Instruction, 32, 4, &[K4])],
                0x02 => &[(1, Instruction, 2, 0, &[M4])],
                0x03 => &[(1, Data, 64, 4, &[K4])],
                0x04 => &[(1, Data, 8, 4, &[M4])],
                0x05 => &[(1, Data, 32, 4, &[M4])],
                0x0B => &[(1, Instruction, 4, 4, &[M4])],
                0x4F => &[(1, Instruction, 32, 0, &[K4])],
                0x50 => &[(1, Instruction, 64, 0, &[K4, M2, M4])],
                0x51 => &[(1, Instruction, 128, 0, &[K4, M2, M4])],
                0x52 => &[(1, Instruction, 256, 0, &[K4, M2, M4])],
                0x55 => &[(1, Instruction, 7, 0, &[M2, M4])],
                0x56 => &[(1, Data, 16, 4, &[M4])],
                0x57 => &[(1, Data, 16, 4, &[K4])],
                0x59 => &[(1, Data, 16, 0, &[K4])],
                0x5A => &[(1, Data, 32, 4, &[M2, M4])],
                0x5B => &[(1, Data, 64, 0, &[K4, M4])],
                0x5C => &[(1, Data, 128, 0, &[K4, M4])],
                0x5D => &[(1, Data, 256, 0, &[K4, M4])],
                0x61 => &[(1, Instruction, 48, 0, &[K4])],
                0x63 => &[(1, Data, 32, 4, &[M2, M4]), (1, Data, 4, 4, &[G1])],
                0x64 => &[(1, Data, 512, 4, &[K4])],
                0x6A => &[(1, Data, 64, 8, &[K4])],
                0x6B => &[(1, Data, 256, 8, &[K4])],
                0x6C => &[(1, Data, 128, 8, &[M2, M4])],
                0x6D => &[(1, Data, 16, 0, &[G1])],
                0x76 => &[(1, Instruction, 8, 0, &[M2, M4])],
                0xA0 => &[(1, Data, 32, 0, &[K4])],
                0xB0 => &[(1, Instruction, 128, 4, &[K4])],
                0xB1 => &[(1, Instruction, 8, 4, &[M2])],
                0xB2 => &[(1, Instruction, 64, 4, &[K4])],
                0xB3 => &[(1, Data, 128, 4, &[K4])],
                0xB4 => &[(1, Data, 256, 4, &[K4])],
                0xB5 => &[(1, Instruction, 64, 8, &[K4])],
                0xB6 => &[(1, Instruction, 128, 8, &[K4])],
                0xBA => &[(1, Data, 64, 4, &[K4])],
                0xC0 => &[(1, Data, 8, 4, &[K4, M4])],
                0xC1 => &[(2, Unified, 1024, 8, &[K4, M2])],
                0xC2 => &[(1, Data, 16, 4, &[K4, M2])],
                0xC3 => &[(2, Unified, 1536, 6, &[K4, M2]), (2, Unified, 16, 4, &[G1])],
                0xC4 => &[(1, Data, 32, 4, &[M2, M4])],
                0xCA => &[(2, Unified, 512, 4, &[K4])],
                _ => &[],
            };
            for &(level, kind, n, ways, pages) in rows {
                for &p in pages {
                    v.push(entry(level, kind, p, n, (ways > 0).then_some(ways)));
                }
            }
        }
    }
    (v, see_18)
}

/// This CPU's TLBs.
pub fn read() -> TlbInfo {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        let l0 = __cpuid(0);
        let mut vendor = Vec::new();
        for r in [l0.ebx, l0.edx, l0.ecx] {
            vendor.extend_from_slice(&r.to_le_bytes());
        }
        let vendor = String::from_utf8_lossy(&vendor)
            .trim_end_matches('\0')
            .to_string();
        let max_basic = l0.eax;
        let max_ext = __cpuid(0x8000_0000).eax;
        let leaf = |l: u32| -> Option<Regs> {
            let ok = if l >= 0x8000_0000 {
                l <= max_ext
            } else {
                l <= max_basic
            };
            ok.then(|| {
                let r = __cpuid(l);
                (r.eax, r.ebx, r.ecx, r.edx)
            })
        };
        let (entries, leaves) = if vendor == "AuthenticAMD" || vendor == "HygonGenuine" {
            decode_amd(leaf(0x8000_0005), leaf(0x8000_0006), leaf(0x8000_0019))
        } else {
            let mut entries = Vec::new();
            let mut leaves = Vec::new();
            let mut want_18 = true;
            if max_basic >= 0x18 {
                let n = __cpuid_count(0x18, 0).eax;
                let subs: Vec<Regs> = (0..=n.min(63))
                    .map(|s| {
                        let r = __cpuid_count(0x18, s);
                        (r.eax, r.ebx, r.ecx, r.edx)
                    })
                    .collect();
                entries = decode_intel_18(&subs);
                if !entries.is_empty() {
                    leaves.push("0x18".to_string());
                    want_18 = false;
                }
            }
            if let Some(r) = leaf(2) {
                let (e2, _) = decode_intel_2(r);
                // Leaf 2 adds what 0x18 lacks (older CPUs list everything there).
                let before = entries.len();
                for e in e2 {
                    if !entries.iter().any(|x| {
                        x.level == e.level && x.kind == e.kind && x.page_bytes == e.page_bytes
                    }) {
                        entries.push(e);
                    }
                }
                if entries.len() > before || (want_18 && before == 0 && !entries.is_empty()) {
                    leaves.push("2".to_string());
                }
            }
            (entries, leaves)
        };
        finish(vendor, entries, leaves)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        finish(String::new(), Vec::new(), Vec::new())
    }
}

/// Sorts the table and adds the notes on what is missing.
pub fn finish(vendor: String, mut entries: Vec<TlbEntry>, leaves: Vec<String>) -> TlbInfo {
    entries.sort_by_key(|e| (e.level, e.kind, e.page_bytes));
    let mut notes: Vec<Note> = Vec::new();
    if vendor.is_empty() {
        notes.push(Note::NotX86);
    } else if entries.is_empty() {
        notes.push(Note::NoSizes {
            vendor: vendor.clone(),
        });
    } else {
        for (page, name) in [(K4, "4 KiB"), (M2, "2 MiB"), (G1, "1 GiB")] {
            if !entries
                .iter()
                .any(|e| e.page_bytes == page && e.kind.serves_loads())
            {
                notes.push(Note::NoDataTlb { page: name });
            }
        }
    }
    TlbInfo {
        vendor,
        leaves,
        entries,
        notes: notes.into_iter().map(String::from).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amd_leaves_decode_as_the_manual_says() {
        // This project's CI guest (AMD family 0x1A under KVM): L1 96 data entries fully
        // associative for 4 KiB and 2 MiB pages; L2 128 × 8-way (4 KiB) and 128 × 4-way
        // (2 MiB); leaf 0x80000019 empty.
        let (v, leaves) = decode_amd(
            Some((0xff60ff40, 0xff60ff40, 0, 0)),
            Some((0x40802040, 0x60804040, 0, 0)),
            Some((0, 0, 0, 0)),
        );
        assert_eq!(leaves, ["0x80000005", "0x80000006"]);
        let t = finish("AuthenticAMD".into(), v, leaves);
        assert_eq!(t.data_reach(K4, 1), Some(96 * K4));
        assert_eq!(t.data_reach(M2, 1), Some(96 * M2));
        let l2 = t
            .entries
            .iter()
            .find(|e| e.level == 2 && e.kind == TlbKind::Data && e.page_bytes == K4)
            .unwrap();
        assert_eq!((l2.entries, l2.ways), (128, Some(8)));
        assert_eq!(t.data_reach(M2, 2), Some(128 * M2));
        assert_eq!(t.notes, ["CPUID reports no data TLB for 1 GiB pages"]);

        // Zen 2 as AMD documents it: L2 DTLB 2048 × 16-way (4 KiB); 1 GiB: 64 L1, 2048 L2.
        let (v, _) = decode_amd(
            None,
            Some((0, 0x8800_0000, 0, 0)),
            Some((0xF040_0000, 0x8800_0000, 0, 0)),
        );
        let t = finish("AuthenticAMD".into(), v, vec![]);
        assert_eq!(t.data_reach(G1, 1), Some(64 * G1));
        assert_eq!(t.data_reach(G1, 2), Some(2048 * G1));
        assert_eq!(t.data_reach(K4, 2), Some(2048 * K4));
    }

    #[test]
    fn intel_leaf_18_gives_ways_times_sets_per_page_size() {
        // Skylake-like: L1 DTLB loads 4 KiB 64 × 4-way (16 sets); STLB 4 KiB + 2 MiB,
        // 12-way × 128 sets = 1536; a 1 GiB STLB 4-way × 4 sets.
        let subs = [
            (3, (4 << 16) | 0b0001, 16, (1 << 5) | 4),
            (0, (12 << 16) | 0b0011, 128, (2 << 5) | 3),
            (0, (4 << 16) | 0b1000, 4, (2 << 5) | 3),
            (0, 0, 0, 0),
        ];
        let t = finish(
            "GenuineIntel".into(),
            decode_intel_18(&subs),
            vec!["0x18".into()],
        );
        assert_eq!(t.data_reach(K4, 1), Some(64 * K4));
        assert_eq!(t.data_reach(K4, 2), Some(1536 * K4));
        assert_eq!(t.data_reach(M2, 2), Some(1536 * M2));
        assert_eq!(t.data_reach(G1, 2), Some(16 * G1));
        assert_eq!(
            t.data_reach(M2, 1),
            None,
            "the L1 sub-leaf lists 4 KiB pages only"
        );
    }

    #[test]
    fn intel_leaf_2_descriptors_give_haswell_s_table() {
        // A Haswell core's leaf 2 (EAX 0x76036301, EBX 0x00f0b5ff, EDX 0x00c10000):
        // 0x63 DTLB 32 × 2M/4M + 4 × 1 GiB, 0x03 DTLB 64 × 4K, 0x76 ITLB 8 × 2M, 0xB5 ITLB
        // 64 × 4K, 0xC1 STLB 1024 shared 4K/2M; 0xFF and 0xF0 are not TLBs. Reach: 4 MiB
        // of 4 KiB pages in the STLB, 2 GiB of 2 MiB pages.
        let (v, see_18) = decode_intel_2((0x76036301, 0x00f0b5ff, 0, 0x00c10000));
        assert!(!see_18);
        let t = finish("GenuineIntel".into(), v, vec!["2".into()]);
        assert_eq!(t.data_reach(K4, 1), Some(64 * K4));
        assert_eq!(t.data_reach(M2, 1), Some(32 * M2));
        assert_eq!(t.data_reach(G1, 1), Some(4 * G1));
        assert_eq!(t.data_reach(K4, 2), Some(4 << 20));
        assert_eq!(t.data_reach(M2, 2), Some(2 << 30));
        let (_, see_18) = decode_intel_2((0x00fe_ff01, 0, 0, 0));
        assert!(see_18);
        // Bit 31 set: no descriptors in that register.
        assert!(decode_intel_2((0x01, 0x8000_0003, 0, 0)).0.is_empty());
    }

    #[test]
    fn nothing_from_cpuid_is_said_plainly() {
        let (v, leaves) = decode_amd(Some((0, 0, 0, 0)), Some((0, 0, 0, 0)), None);
        let t = finish("AuthenticAMD".into(), v, leaves);
        assert!(t.entries.is_empty());
        assert!(t.notes[0].contains("reports no TLB sizes"), "{:?}", t.notes);
    }
}
