//! `CpuSet`: the one type for a set of OS CPU numbers, and every text form it takes.
//!
//! Forms understood (each parses and prints, and printing then parsing gives the same set):
//! - **list**, as sysfs `*_list` files and `taskset -c` write it: `0-3,8-11`; also the stride
//!   form newer `lscpu` prints, `0-62:2`. Empty text is the empty set (sysfs `isolated`).
//! - **hex mask**, as `taskset` takes it: `0xff`, any length; hwloc's comma-separated 32-bit
//!   words with a `0x` prefix (`0xff0,,0x13`) are accepted too.
//! - **sysfs word mask**, as old kernels expose `thread_siblings`: comma-separated 32-bit hex
//!   words, most significant first, no prefix (`0000,55555555,55555555`).
//! - **decimal mask**, as Windows `SetThreadAffinityMask` callers write it: `8` = CPU 3.
//!
//! A bare `8` is ambiguous (CPU 8 as a list, CPU 3 as a decimal mask), so callers choose the
//! form: [`CpuSet::parse_list`] and [`CpuSet::parse_user`] treat it as a list; only
//! [`CpuSet::parse_mask`] (for lockscan's `-l/-s`, the masks of SQL Server's "To Hyper or not
//! to Hyper" test program, Slava Oks, 2005) reads it as a decimal mask.

use std::fmt;
use std::str::FromStr;

/// Highest CPU number we accept plus one. Linux's NR_CPUS tops out at 8192 today; the
/// margin covers future kernels while keeping a typo like `0-99999999` from allocating
/// gigabytes.
pub const MAX_CPUS: u32 = 1 << 16;

/// A set of OS CPU numbers, stored as a bitmap. Always normalised (no trailing zero words),
/// so derived equality is set equality.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet {
    words: Vec<u64>,
}

/// Why a CPU-set text did not parse. Names the whole input, the offending token and what
/// would have been valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU {form} `{}`: {}; expected {expected}", crate::quote::shorten(.input), crate::quote::spans(.problem, .input))]
pub struct CpuSetError {
    /// Which form was being parsed ("list", "mask", …).
    pub form: &'static str,
    /// The full input text.
    pub input: String,
    /// What is wrong, naming the bad token.
    pub problem: String,
    /// An example of valid input.
    pub expected: &'static str,
}

const LIST_EXPECTED: &str = "a list like `0-3,8-11` or a hex mask like `0xff`";
const MASK_EXPECTED: &str = "a decimal mask like `12` (CPUs 2,3) or a hex mask like `0xc`";
const WORDS_EXPECTED: &str = "comma-separated 32-bit hex words like `00000000,0000ff0f`";

impl CpuSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of the given CPUs. Panics only on CPUs ≥ [`MAX_CPUS`], which callers get from
    /// parsing (already checked) or from the kernel.
    pub fn from_cpus<I: IntoIterator<Item = u32>>(cpus: I) -> Self {
        let mut s = Self::new();
        for c in cpus {
            s.insert(c);
        }
        s
    }

    /// Adds a CPU. Returns whether it was new.
    pub fn insert(&mut self, cpu: u32) -> bool {
        assert!(cpu < MAX_CPUS, "CPU {cpu} beyond MAX_CPUS");
        let (w, b) = ((cpu / 64) as usize, cpu % 64);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        let was = self.words[w] >> b & 1 == 1;
        self.words[w] |= 1 << b;
        !was
    }

    /// Adds every `step`-th CPU from `lo` to `hi` (inclusive), a 64-bit word at a time: a
    /// list of many full ranges (`0-65535,0-65535,…`, 128 KiB as a command-line argument)
    /// then costs words, not CPUs.
    fn insert_range(&mut self, lo: u32, hi: u32, step: u32) {
        assert!(
            lo <= hi && hi < MAX_CPUS && step > 0,
            "bad range {lo}-{hi}:{step}"
        );
        if step >= 64 {
            for c in (lo..=hi).step_by(step as usize) {
                self.insert(c);
            }
            return;
        }
        let (lw, hw) = ((lo / 64) as usize, (hi / 64) as usize);
        if self.words.len() <= hw {
            self.words.resize(hw + 1, 0);
        }
        // Bits 0, step, 2·step, … of one word, shifted to the range's first CPU in each word.
        let comb = (0..64).step_by(step as usize).fold(0u64, |m, b| m | 1 << b);
        for w in lw..=hw {
            let base = w as u32 * 64;
            let first = if base <= lo {
                lo
            } else {
                lo + (base - lo).div_ceil(step) * step
            };
            if first > hi || first >= base + 64 {
                continue;
            }
            let mut m = comb << (first - base);
            if w == hw {
                m &= u64::MAX >> (63 - hi % 64);
            }
            self.words[w] |= m;
        }
        self.normalise();
    }

    /// Removes a CPU. Returns whether it was present.
    pub fn remove(&mut self, cpu: u32) -> bool {
        let was = self.contains(cpu);
        if was {
            self.words[(cpu / 64) as usize] &= !(1u64 << (cpu % 64));
            self.normalise();
        }
        was
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.words
            .get((cpu / 64) as usize)
            .is_some_and(|w| w >> (cpu % 64) & 1 == 1)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// CPUs in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64u32)
                .filter(move |b| w >> b & 1 == 1)
                .map(move |b| i as u32 * 64 + b)
        })
    }

    /// CPUs in ascending order, collected.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    pub fn last(&self) -> Option<u32> {
        self.iter().next_back()
    }

    pub fn union(&self, other: &Self) -> Self {
        let n = self.words.len().max(other.words.len());
        let words = (0..n)
            .map(|i| self.word(i) | other.word(i))
            .collect::<Vec<_>>();
        Self::from_words(words)
    }

    pub fn intersection(&self, other: &Self) -> Self {
        let n = self.words.len().min(other.words.len());
        Self::from_words((0..n).map(|i| self.word(i) & other.word(i)).collect())
    }

    pub fn difference(&self, other: &Self) -> Self {
        Self::from_words(
            (0..self.words.len())
                .map(|i| self.word(i) & !other.word(i))
                .collect(),
        )
    }

    pub fn is_subset(&self, other: &Self) -> bool {
        self.difference(other).is_empty()
    }

    pub fn intersects(&self, other: &Self) -> bool {
        !self.intersection(other).is_empty()
    }

    /// The bitmap as 64-bit words, least significant first (the layout `sched_setaffinity`
    /// takes on 64-bit Linux).
    pub fn as_words(&self) -> &[u64] {
        &self.words
    }

    /// Builds a set from 64-bit words, least significant first.
    pub fn from_words(mut words: Vec<u64>) -> Self {
        words.truncate(MAX_CPUS as usize / 64);
        let mut s = Self { words };
        s.normalise();
        s
    }

    fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    fn normalise(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    // ---------------------------------------------------------------- parsing

    /// Parses user input: a hex mask when it starts with `0x`, a sysfs word mask when every
    /// comma-separated item is exactly 8 hex digits (`00000000,00000001`, as `cpumap` and
    /// `thread_siblings` print it: CPU 0), otherwise a list. No list reads that way: an
    /// 8-digit CPU number is far past [`MAX_CPUS`], and neither the kernel nor taskset
    /// writes one with leading zeros.
    pub fn parse_user(s: &str) -> Result<Self, CpuSetError> {
        let t = s.trim();
        if t.starts_with("0x") || t.starts_with("0X") {
            parse_hex(t, s, "mask", LIST_EXPECTED)
        } else if is_word_mask(t) {
            parse_words(t, s, "sysfs mask", WORDS_EXPECTED, false)
        } else {
            parse_list(t, s)
        }
    }

    /// Parses a CPU list (`0-3,8-11`, `0-62:2`). Surrounding whitespace, as in sysfs files
    /// with their trailing newline, is ignored.
    pub fn parse_list(s: &str) -> Result<Self, CpuSetError> {
        parse_list(s.trim(), s)
    }

    /// Parses an affinity mask as Windows `SetThreadAffinityMask` callers write it: decimal (`8` = CPU 3) or hex
    /// with `0x`.
    pub fn parse_mask(s: &str) -> Result<Self, CpuSetError> {
        let t = s.trim();
        if t.starts_with("0x") || t.starts_with("0X") {
            return parse_hex(t, s, "mask", MASK_EXPECTED);
        }
        let err = |problem: String| CpuSetError {
            form: "mask",
            input: s.to_string(),
            problem,
            expected: MASK_EXPECTED,
        };
        if t.is_empty() {
            return Err(err("it is empty".into()));
        }
        if let Some(bad) = t.chars().find(|c| !c.is_ascii_digit()) {
            return Err(err(format!("`{bad}` is not a decimal digit")));
        }
        // Decimal masks are for small machines (a Windows affinity mask is one DWORD_PTR,
        // 64 bits); u128 covers 128 CPUs.
        let v: u128 = t
            .parse()
            .map_err(|_| err(format!("`{t}` is larger than a 128-CPU mask")))?;
        if v == 0 {
            return Err(err("mask `0` selects no CPU".into()));
        }
        Ok(Self::from_words(vec![v as u64, (v >> 64) as u64]))
    }

    /// Parses a sysfs word mask (`0000,55555555,55555555`): comma-separated 32-bit hex words,
    /// most significant first, as old kernels write `thread_siblings` and `cpumap`.
    pub fn parse_sysfs_mask(s: &str) -> Result<Self, CpuSetError> {
        let t = s.trim();
        parse_words(t, s, "sysfs mask", WORDS_EXPECTED, false)
    }

    // ---------------------------------------------------------------- printing

    /// The list form, `0-3,8-11` (empty string for the empty set).
    pub fn to_list(&self) -> String {
        self.to_string()
    }

    /// The `taskset` hex form, `0xff` (`0x0` for the empty set).
    pub fn to_hex_mask(&self) -> String {
        let mut out = String::from("0x");
        let mut started = false;
        for w in self.words.iter().rev() {
            if started {
                out.push_str(&format!("{w:016x}"));
            } else if *w != 0 {
                out.push_str(&format!("{w:x}"));
                started = true;
            }
        }
        if !started {
            out.push('0');
        }
        out
    }

    /// The sysfs word form with at least `min_words` 32-bit words, as the kernel pads to
    /// `nr_cpu_ids`.
    pub fn to_sysfs_mask(&self, min_words: usize) -> String {
        let n32 = (self.words.len() * 2).max(min_words).max(1);
        let word32 = |i: usize| (self.word(i / 2) >> (32 * (i % 2))) as u32;
        (0..n32)
            .rev()
            .map(|i| format!("{:08x}", word32(i)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Contiguous runs `(first, last)`, ascending.
    pub fn ranges(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for c in self.iter() {
            match out.last_mut() {
                Some((_, hi)) if *hi + 1 == c => *hi = c,
                _ => out.push((c, c)),
            }
        }
        out
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts = self
            .ranges()
            .into_iter()
            .map(|(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo}-{hi}")
                }
            })
            .collect::<Vec<_>>();
        f.write_str(&parts.join(","))
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromStr for CpuSet {
    type Err = CpuSetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_user(s)
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        Self::from_cpus(iter)
    }
}

impl serde::Serialize for CpuSet {
    /// Serialised as a JSON array of CPU numbers, the shape of hwloc-derived oracles.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<u32>::deserialize(d)?;
        if let Some(bad) = v.iter().find(|&&c| c >= MAX_CPUS) {
            return Err(serde::de::Error::custom(format!(
                "CPU {bad} is beyond the supported maximum {}",
                MAX_CPUS - 1
            )));
        }
        Ok(Self::from_cpus(v))
    }
}

/// Every comma-separated item of `t` is 8 hex digits: the sysfs word-mask form.
fn is_word_mask(t: &str) -> bool {
    !t.is_empty()
        && t.split(',').all(|w| {
            let w = w.trim();
            w.len() == 8 && w.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

fn parse_cpu_number(tok: &str, input: &str) -> Result<u32, CpuSetError> {
    let err = |problem: String| CpuSetError {
        form: "list",
        input: input.to_string(),
        problem,
        expected: LIST_EXPECTED,
    };
    if tok.is_empty() {
        return Err(err("a CPU number is missing".into()));
    }
    if !tok.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err(format!("`{tok}` is not a CPU number")));
    }
    match tok.parse::<u32>() {
        Ok(n) if n < MAX_CPUS => Ok(n),
        _ => Err(err(format!(
            "CPU `{tok}` is beyond the supported maximum {}",
            MAX_CPUS - 1
        ))),
    }
}

fn parse_list(t: &str, input: &str) -> Result<CpuSet, CpuSetError> {
    let err = |problem: String| CpuSetError {
        form: "list",
        input: input.to_string(),
        problem,
        expected: LIST_EXPECTED,
    };
    let mut set = CpuSet::new();
    if t.is_empty() {
        return Ok(set);
    }
    for tok in t.split(',') {
        let tok = tok.trim();
        if tok.is_empty() {
            return Err(err(
                "it has an empty element (`,,` or a trailing comma)".into()
            ));
        }
        let (range, stride_text) = match tok.split_once(':') {
            Some((r, st)) => (r, Some(st)),
            None => (tok, None),
        };
        // The range first: a CPU number out of range is named as such, not blamed on the
        // stride after it.
        let (lo, hi) = match range.split_once('-') {
            None => {
                if stride_text.is_some() {
                    return Err(err(format!("`{tok}` has a stride but no range")));
                }
                let c = parse_cpu_number(range, input)?;
                (c, c)
            }
            Some((lo, hi)) => {
                if hi.is_empty() {
                    return Err(err(format!("range `{tok}` has no end")));
                }
                if lo.is_empty() {
                    return Err(err(format!("range `{tok}` has no start")));
                }
                let (lo, hi) = (parse_cpu_number(lo, input)?, parse_cpu_number(hi, input)?);
                if lo > hi {
                    return Err(err(format!("range `{tok}` runs backwards ({lo} > {hi})")));
                }
                (lo, hi)
            }
        };
        let stride = match stride_text {
            None => 1,
            Some(st) if st.is_empty() || !st.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(err(format!("stride in `{tok}` is not a positive number")));
            }
            Some(st) => match st.parse::<u32>() {
                Ok(0) => return Err(err(format!("stride in `{tok}` is zero"))),
                Ok(n) if n < MAX_CPUS => n,
                _ => {
                    return Err(err(format!(
                        "stride in `{tok}` is larger than the supported maximum {}",
                        MAX_CPUS - 1
                    )));
                }
            },
        };
        set.insert_range(lo, hi, stride);
    }
    Ok(set)
}

/// `0x…` masks: either one hex number of any length (`0xff`, taskset) or hwloc's
/// comma-separated 32-bit words each with its own optional `0x` (`0xff0,,0x13`).
fn parse_hex(
    t: &str,
    input: &str,
    form: &'static str,
    expected: &'static str,
) -> Result<CpuSet, CpuSetError> {
    if t.contains(',') {
        return parse_words(t, input, form, expected, true);
    }
    let digits = &t[2..];
    let err = |problem: String| CpuSetError {
        form,
        input: input.to_string(),
        problem,
        expected,
    };
    if digits.is_empty() {
        return Err(err("`0x` has no hex digits after it".into()));
    }
    if let Some(bad) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(err(format!("`{bad}` is not a hex digit")));
    }
    let digits = digits.trim_start_matches('0');
    if digits.len() > (MAX_CPUS / 4) as usize {
        return Err(err(format!(
            "the mask is wider than the supported {MAX_CPUS} CPUs"
        )));
    }
    let mut words = Vec::with_capacity(digits.len() / 16 + 1);
    let bytes = digits.as_bytes();
    let mut end = bytes.len();
    while end > 0 {
        let start = end.saturating_sub(16);
        let chunk = std::str::from_utf8(&bytes[start..end]).expect("ascii hex");
        words.push(u64::from_str_radix(chunk, 16).expect("checked hex digits"));
        end = start;
    }
    Ok(CpuSet::from_words(words))
}

fn parse_words(
    t: &str,
    input: &str,
    form: &'static str,
    expected: &'static str,
    allow_prefix: bool,
) -> Result<CpuSet, CpuSetError> {
    let err = |problem: String| CpuSetError {
        form,
        input: input.to_string(),
        problem,
        expected,
    };
    if t.is_empty() {
        return Err(err("it is empty".into()));
    }
    let parts: Vec<&str> = t.split(',').collect();
    if parts.len() > (MAX_CPUS / 32) as usize {
        return Err(err(format!(
            "the mask is wider than the supported {MAX_CPUS} CPUs"
        )));
    }
    let mut words = vec![0u64; parts.len().div_ceil(2)];
    for (i, part) in parts.iter().rev().enumerate() {
        let p = part.trim();
        let p = if allow_prefix {
            p.strip_prefix("0x")
                .or_else(|| p.strip_prefix("0X"))
                .unwrap_or(p)
        } else {
            p
        };
        // hwloc writes an all-zero word as an empty block.
        if p.is_empty() && allow_prefix {
            continue;
        }
        if p.is_empty() || p.len() > 8 || !p.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(err(format!("`{part}` is not a 32-bit hex word")));
        }
        let v = u64::from(u32::from_str_radix(p, 16).expect("checked hex"));
        words[i / 2] |= v << (32 * (i % 2));
    }
    Ok(CpuSet::from_words(words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn set(v: &[u32]) -> CpuSet {
        CpuSet::from_cpus(v.iter().copied())
    }

    #[test]
    fn lists() {
        assert_eq!(
            CpuSet::parse_list("0-3,8-11\n").unwrap().to_vec(),
            [0, 1, 2, 3, 8, 9, 10, 11]
        );
        assert_eq!(CpuSet::parse_list("").unwrap(), CpuSet::new());
        assert_eq!(CpuSet::parse_list("0-6:2").unwrap().to_vec(), [0, 2, 4, 6]);
        assert_eq!(set(&[0, 1, 2, 5, 7, 8]).to_string(), "0-2,5,7-8");
    }

    #[test]
    fn list_errors_name_the_token() {
        let e = CpuSet::parse_list("0-").unwrap_err().to_string();
        assert!(e.contains("`0-`") && e.contains("no end"), "{e}");
        let e = CpuSet::parse_list("3-1").unwrap_err().to_string();
        assert!(e.contains("backwards"), "{e}");
        let e = CpuSet::parse_list("1,x").unwrap_err().to_string();
        assert!(e.contains("`x`"), "{e}");
        let e = CpuSet::parse_list("1,,2").unwrap_err().to_string();
        assert!(e.contains("empty element"), "{e}");
        assert!(CpuSet::parse_list("99999999").is_err());
        // The CPU out of range is named, not the stride after it.
        let e = CpuSet::parse_list("0-99999999:99999999")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("CPU `99999999` is beyond the supported maximum") && !e.contains("stride"),
            "{e}"
        );
        let e = CpuSet::parse_list("0-9:99999999").unwrap_err().to_string();
        assert!(e.contains("stride in `0-9:99999999` is larger"), "{e}");
        let e = CpuSet::parse_list("0-9:x").unwrap_err().to_string();
        assert!(
            e.contains("stride in `0-9:x` is not a positive number"),
            "{e}"
        );
        let e = CpuSet::parse_list("3:2").unwrap_err().to_string();
        assert!(e.contains("has a stride but no range"), "{e}");
    }

    #[test]
    fn hex_masks() {
        assert_eq!(
            CpuSet::parse_user("0xff").unwrap().to_vec(),
            (0..8).collect::<Vec<_>>()
        );
        assert_eq!(set(&[0, 1, 2, 3, 64]).to_hex_mask(), "0x1000000000000000f");
        assert_eq!(
            CpuSet::parse_user("0x1000000000000000f").unwrap(),
            set(&[0, 1, 2, 3, 64])
        );
        assert_eq!(CpuSet::parse_user("0xff0,,0x13").unwrap(), {
            let mut s = set(&[0, 1, 4]);
            for c in 68..76 {
                s.insert(c);
            }
            s
        });
        let e = CpuSet::parse_user("0xZZ").unwrap_err().to_string();
        assert!(e.contains("`Z` is not a hex digit"), "{e}");
        assert_eq!(CpuSet::new().to_hex_mask(), "0x0");
    }

    #[test]
    fn sysfs_masks() {
        let s = CpuSet::parse_sysfs_mask("0000,55555555,55555555\n").unwrap();
        assert_eq!(s.len(), 32);
        assert!(s.contains(0) && s.contains(62) && !s.contains(1));
        assert_eq!(s.to_sysfs_mask(3), "00000000,55555555,55555555");
        assert_eq!(
            CpuSet::parse_sysfs_mask("00000101").unwrap().to_vec(),
            [0, 8]
        );
        assert!(CpuSet::parse_sysfs_mask("0x12").is_err());
        // As user input too: the form README lists, CPU 0 (once read as the list 0,1).
        assert_eq!(
            CpuSet::parse_user("00000000,00000001").unwrap().to_vec(),
            [0]
        );
        assert_eq!(
            CpuSet::parse_user("0000ff0f").unwrap().to_vec(),
            [0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15]
        );
        assert_eq!(CpuSet::parse_user("1,2").unwrap().to_vec(), [1, 2]);
        assert_eq!(CpuSet::parse_user(&s.to_sysfs_mask(3)).unwrap(), s);
    }

    #[test]
    fn decimal_masks_as_windows_affinity_masks() {
        assert_eq!(CpuSet::parse_mask("8").unwrap().to_vec(), [3]);
        assert_eq!(CpuSet::parse_mask("7").unwrap().to_vec(), [0, 1, 2]);
        assert_eq!(CpuSet::parse_mask("0x8").unwrap().to_vec(), [3]);
        assert!(CpuSet::parse_mask("0").is_err());
        assert!(CpuSet::parse_mask("-1").is_err());
    }

    #[test]
    fn set_algebra() {
        let a = set(&[0, 1, 2, 100]);
        let b = set(&[2, 100, 200]);
        assert_eq!(a.intersection(&b), set(&[2, 100]));
        assert_eq!(a.union(&b), set(&[0, 1, 2, 100, 200]));
        assert_eq!(a.difference(&b), set(&[0, 1]));
        assert!(set(&[2]).is_subset(&a));
        let mut c = set(&[200]);
        c.remove(200);
        assert_eq!(c, CpuSet::new());
    }

    fn arb_set() -> impl Strategy<Value = CpuSet> {
        prop::collection::vec(0u32..2048, 0..64).prop_map(CpuSet::from_cpus)
    }

    proptest! {
        #[test]
        fn list_round_trips(s in arb_set()) {
            prop_assert_eq!(CpuSet::parse_list(&s.to_list()).unwrap(), s);
        }

        #[test]
        fn hex_round_trips(s in arb_set()) {
            prop_assert_eq!(CpuSet::parse_user(&s.to_hex_mask()).unwrap(), s);
        }

        #[test]
        fn sysfs_round_trips(s in arb_set(), pad in 0usize..80) {
            prop_assert_eq!(CpuSet::parse_sysfs_mask(&s.to_sysfs_mask(pad)).unwrap(), s);
        }

        #[test]
        fn garbage_never_panics(t in "\\PC{0,24}") {
            let _ = CpuSet::parse_user(&t);
            let _ = CpuSet::parse_mask(&t);
            let _ = CpuSet::parse_sysfs_mask(&t);
        }
    }
}
