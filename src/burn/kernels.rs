//! The burner loops. Each one stresses one resource, counts its own progress in batches
//! short enough (≤ ~1 ms) that the stop flag is seen within a few milliseconds, and keeps
//! the compiler from deleting or folding its work (`black_box`, and an empty `asm!` that
//! makes a value opaque without costing an instruction).
//!
//! Per-thread state (buffers, the chase cycle) is built once by [`State::prepare`], in the
//! burner's own pinned thread so its pages are first touched on its NUMA node, and kept
//! across the engine's warm-up and measurement calls.

use super::kind::{BurnerKind, FmaWidth};
use crate::engine::ThreadCtx;
use std::hint::black_box;

/// Bytes per cache line assumed by the pointer chase (one chase node per line).
pub const LINE_BYTES: usize = 64;

/// How much of a buffer [`State::prepare`] builds between looks at the stop flag.
const PREPARE_CHUNK_BYTES: usize = 4 << 20;

/// Size of the `scan` burner's buffer: 1 MiB, larger than most L2s, smaller than an L3.
pub const SCAN_BYTES: usize = 1 << 20;

/// Chunk of `stream` work between two progress updates.
const STREAM_CHUNK: usize = 256 << 10;

/// Makes `x` opaque to the optimiser at zero cost: the empty asm may have changed it, so
/// chains of `x * k` cannot be re-associated into `x * k^n` and `x + a` chains not folded.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn opaque(mut x: u64) -> u64 {
    // SAFETY: an empty asm block that only names a register operand.
    unsafe {
        std::arch::asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
    }
    x
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn opaque(x: u64) -> u64 {
    black_box(x)
}

/// Counts primes in `3..max_prime` by trial division, exactly as `sysbench cpu` does one
/// event (`src/tests/cpu/sb_cpu.c`): for each `c`, try every `l` in `2..=⌊√c⌋` with a
/// 64-bit `%`, stop at the first divisor, count `c` when none divides it. Returns `None`
/// when `stop()` turned true mid-pass (a partial pass is not an event).
///
/// sysbench compares `l <= sqrt((double)c)` in floating point on every step; computing
/// `⌊√c⌋` once per `c` performs the same divisions (exact for `c < 2^52`).
#[inline]
pub fn prime_pass(max_prime: u64, mut stop: impl FnMut() -> bool) -> Option<u64> {
    let max_prime = black_box(max_prime);
    let mut n = 0u64;
    let mut c = 3u64;
    while c < max_prime {
        // `l = 2` by parity, as gcc compiles sysbench's loop (Debian's 1.0.20 binary tests
        // `c & 1` and starts odd `c` at `l = 3`): every even c ≥ 4 has ⌊√c⌋ ≥ 2 and is
        // composite, every odd c survives `l = 2`. The `div`s left are sysbench's.
        if c & 1 == 1 {
            let t = (c as f64).sqrt() as u64;
            let mut l = 3u64;
            while l <= t {
                if rem64(c, l) == 0 {
                    break;
                }
                l += 1;
            }
            if l > t {
                n += 1;
            }
        }
        c += 1;
        if c & 511 == 0 && stop() {
            return None;
        }
    }
    Some(black_box(n))
}

/// `c % l` as a genuine 64-bit `div`. LLVM's x86 tuning otherwise tests whether both
/// operands fit in 32 bits and divides with `div r32` (much cheaper on older cores), which
/// would make this a different ruler than sysbench's gcc-compiled `div r64`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rem64(c: u64, l: u64) -> u64 {
    let rem: u64;
    // SAFETY: `div` with rdx = 0 cannot overflow; l >= 2 so no division by zero.
    unsafe {
        std::arch::asm!(
            "div {l}",
            l = in(reg) l,
            inout("rax") c => _,
            inout("rdx") 0u64 => rem,
            options(pure, nomem, nostack),
        );
    }
    rem
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rem64(c: u64, l: u64) -> u64 {
    c % l
}

/// Which `fma` implementation ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FmaVariant {
    /// Scalar `vfmadd…sd` (FMA3).
    ScalarFma3,
    /// Scalar multiply then add, when the CPU lacks FMA3 (not fused).
    ScalarMulAdd,
    /// 256-bit AVX2/FMA3, 4 lanes.
    Avx2,
    /// 512-bit AVX-512F, 8 lanes.
    Avx512,
}

impl FmaVariant {
    /// The widest variant this CPU supports for `width`, or why not.
    pub fn detect(width: FmaWidth) -> Result<Self, String> {
        #[cfg(target_arch = "x86_64")]
        {
            let fma3 = std::is_x86_feature_detected!("fma");
            let avx2 = fma3 && std::is_x86_feature_detected!("avx2");
            let avx512 = std::is_x86_feature_detected!("avx512f");
            match width {
                FmaWidth::Auto if avx512 => Ok(FmaVariant::Avx512),
                FmaWidth::Auto if avx2 => Ok(FmaVariant::Avx2),
                FmaWidth::Auto | FmaWidth::Scalar if fma3 => Ok(FmaVariant::ScalarFma3),
                FmaWidth::Auto | FmaWidth::Scalar => Ok(FmaVariant::ScalarMulAdd),
                FmaWidth::Avx2 if avx2 => Ok(FmaVariant::Avx2),
                FmaWidth::Avx512 if avx512 => Ok(FmaVariant::Avx512),
                FmaWidth::Avx2 => Err("this CPU lacks AVX2+FMA3 (try fma-scalar)".into()),
                FmaWidth::Avx512 => Err("this CPU lacks AVX-512F (try fma or fma-avx2)".into()),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        match width {
            FmaWidth::Auto | FmaWidth::Scalar => Ok(FmaVariant::ScalarMulAdd),
            _ => Err("SIMD FMA burners exist for x86_64 only".into()),
        }
    }

    /// Short name for reports: `scalar`, `scalar-nofma`, `avx2`, `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            FmaVariant::ScalarFma3 => "scalar",
            FmaVariant::ScalarMulAdd => "scalar-nofma",
            FmaVariant::Avx2 => "avx2",
            FmaVariant::Avx512 => "avx512",
        }
    }

    /// SIMD lanes per instruction.
    pub fn lanes(self) -> u64 {
        match self {
            FmaVariant::ScalarFma3 | FmaVariant::ScalarMulAdd => 1,
            FmaVariant::Avx2 => 4,
            FmaVariant::Avx512 => 8,
        }
    }
}

/// What a kernel needs to know, resolved before the run.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    pub kind: BurnerKind,
    /// Prime bound for `prime` (sysbench's `--cpu-max-prime`).
    pub max_prime: u64,
    /// Buffer size for `stream`, `chase`, `l1`, `l2`, `scan`; 0 for the others.
    pub buffer_bytes: usize,
    /// Resolved FMA implementation for `fma`.
    pub fma: Option<FmaVariant>,
    /// Seed of the chase permutation.
    pub seed: u64,
}

/// Per-thread state kept between the warm-up and measurement calls.
pub enum State {
    /// Register-only kernels.
    Empty,
    /// Bytes for `stream` (two halves: memset one, copy it to the other), `scan`.
    Bytes(Vec<u8>),
    /// Words for `l1`/`l2` loads.
    Words(Vec<u64>),
    /// The chase: one node per line, `next[i * 8]` is the next line; and the position.
    Chase { lines: Vec<u64>, at: usize },
}

impl State {
    /// Allocates and first-touches the buffers `spec` needs; None when `stop` turned true
    /// first (checked every few MiB: hundreds of burners building 64 MiB buffers on a few
    /// CPUs take seconds, and Ctrl-C must not wait for them).
    pub fn prepare(spec: &KernelSpec, stop: &dyn Fn() -> bool) -> Option<State> {
        Some(match spec.kind {
            BurnerKind::Stream | BurnerKind::Scan => {
                // Zeroed allocations this big are mapped lazily: ask for huge pages first,
                // then write every page now so the first pass does not time page faults.
                let mut b = vec![0u8; spec.buffer_bytes.max(2 * 4096)];
                advise_huge_pages(&mut b);
                for chunk in b.chunks_mut(PREPARE_CHUNK_BYTES) {
                    if stop() {
                        return None;
                    }
                    chunk.fill(1);
                }
                State::Bytes(b)
            }
            BurnerKind::L1 | BurnerKind::L2 => {
                State::Words(vec![1u64; (spec.buffer_bytes / 8).max(64)])
            }
            BurnerKind::Chase => State::Chase {
                lines: chase_cycle_until(spec.buffer_bytes / LINE_BYTES, spec.seed, stop)?,
                at: 0,
            },
            _ => State::Empty,
        })
    }
}

/// Runs `spec.kind` until `ctx.should_stop()`, adding progress in batches.
pub fn run(spec: &KernelSpec, state: &mut State, ctx: &ThreadCtx<'_>) {
    match (spec.kind, state) {
        (BurnerKind::Prime, _) => run_prime(spec.max_prime, ctx),
        (BurnerKind::Int, _) => run_int(ctx),
        (BurnerKind::Mul, _) => run_mul(ctx),
        (BurnerKind::Fma(_), _) => run_fma(spec.fma.unwrap_or(FmaVariant::ScalarMulAdd), ctx),
        (BurnerKind::Pause, _) => run_pause(ctx),
        (BurnerKind::Stream, State::Bytes(b)) => run_stream(b, ctx),
        (BurnerKind::Scan, State::Bytes(b)) => run_scan(b, ctx),
        (BurnerKind::L1 | BurnerKind::L2, State::Words(w)) => run_loads(w, ctx),
        (BurnerKind::Chase, State::Chase { lines, at }) => run_chase(lines, at, ctx),
        (k, _) => unreachable!("state for {k} not prepared"),
    }
}

fn run_prime(max_prime: u64, ctx: &ThreadCtx<'_>) {
    while !ctx.should_stop() {
        if prime_pass(max_prime, || ctx.should_stop()).is_some() {
            ctx.add_progress(1);
        }
    }
}

/// Dependent add, xor, add, xor…: each op waits for the previous (1-cycle latency ALU).
fn run_int(ctx: &ThreadCtx<'_>) {
    const UNROLL: u64 = 32; // add+xor pairs per inner step
    const STEPS: u64 = 1024;
    let a = black_box(0x9E37_79B9_7F4A_7C15u64);
    let b = black_box(0xD1B5_4A32_D192_ED03u64);
    let mut x = black_box(1u64);
    while !ctx.should_stop() {
        for _ in 0..STEPS {
            for _ in 0..UNROLL {
                x = opaque(x.wrapping_add(a)) ^ b;
            }
        }
        ctx.add_progress(STEPS * UNROLL * 2);
    }
    black_box(x);
}

/// Dependent 64-bit multiplies (3–4 cycle latency each): the multiplier's latency chain.
fn run_mul(ctx: &ThreadCtx<'_>) {
    const UNROLL: u64 = 32;
    const STEPS: u64 = 512;
    let k = black_box(0x2545_F491_4F6C_DD1Du64); // odd: x stays odd, never 0
    let mut x = black_box(3u64);
    while !ctx.should_stop() {
        for _ in 0..STEPS {
            for _ in 0..UNROLL {
                x = opaque(x.wrapping_mul(k));
            }
        }
        ctx.add_progress(STEPS * UNROLL);
    }
    black_box(x);
}

/// Constants of `acc = acc * M + A`: the fixed point is A / (1 - M) = 1.0, so values stay
/// normal (denormals would slow some CPUs and change the ruler).
const FMA_M: f64 = 0.999_999;
const FMA_A: f64 = 0.000_001;
/// Independent accumulators: latency (4) × FMA units (2) hides the chain latency.
const FMA_CHAINS: usize = 8;
const FMA_STEPS: u64 = 4096;

fn run_fma(v: FmaVariant, ctx: &ThreadCtx<'_>) {
    let per_batch = FMA_STEPS * FMA_CHAINS as u64 * v.lanes();
    while !ctx.should_stop() {
        match v {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the variant was chosen by runtime feature detection.
            FmaVariant::ScalarFma3 => unsafe { fma_x86::scalar(FMA_STEPS) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            FmaVariant::Avx2 => unsafe { fma_x86::avx2(FMA_STEPS) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            FmaVariant::Avx512 => unsafe { fma_x86::avx512(FMA_STEPS) },
            _ => fma_muladd(FMA_STEPS),
        }
        ctx.add_progress(per_batch);
    }
}

/// Without FMA3: a multiply then an add (two roundings), the best a plain x86-64 can do.
fn fma_muladd(steps: u64) {
    let m = black_box(FMA_M);
    let a = black_box(FMA_A);
    let mut acc = [1.0f64; FMA_CHAINS];
    for _ in 0..steps {
        for x in acc.iter_mut() {
            *x = *x * m + a;
        }
    }
    black_box(acc);
}

#[cfg(target_arch = "x86_64")]
mod fma_x86 {
    use super::{FMA_A, FMA_CHAINS, FMA_M};
    use std::arch::x86_64::*;
    use std::hint::black_box;

    #[target_feature(enable = "fma")]
    pub unsafe fn scalar(steps: u64) {
        let m = black_box(FMA_M);
        let a = black_box(FMA_A);
        let mut acc = [1.0f64; FMA_CHAINS];
        for _ in 0..steps {
            for x in acc.iter_mut() {
                *x = x.mul_add(m, a);
            }
        }
        black_box(acc);
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn avx2(steps: u64) {
        let m = _mm256_set1_pd(black_box(FMA_M));
        let a = _mm256_set1_pd(black_box(FMA_A));
        let mut acc = [_mm256_set1_pd(1.0); FMA_CHAINS];
        for _ in 0..steps {
            for x in acc.iter_mut() {
                *x = _mm256_fmadd_pd(*x, m, a);
            }
        }
        black_box(acc);
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn avx512(steps: u64) {
        let m = _mm512_set1_pd(black_box(FMA_M));
        let a = _mm512_set1_pd(black_box(FMA_A));
        let mut acc = [_mm512_set1_pd(1.0); FMA_CHAINS];
        for _ in 0..steps {
            for x in acc.iter_mut() {
                *x = _mm512_fmadd_pd(*x, m, a);
            }
        }
        black_box(acc);
    }
}

fn run_pause(ctx: &ThreadCtx<'_>) {
    const BATCH: u64 = 256;
    while !ctx.should_stop() {
        for _ in 0..BATCH {
            std::hint::spin_loop();
        }
        ctx.add_progress(BATCH);
    }
}

/// Alternate passes over the buffer: memset the first half, then memcpy it to the second
/// half, each in chunks. Both halves exceed the LLC, so every chunk streams from/to DRAM.
fn run_stream(buf: &mut [u8], ctx: &ThreadCtx<'_>) {
    let half = buf.len() / 2;
    let (a, b) = buf.split_at_mut(half);
    let mut fill = 0u8;
    loop {
        fill = fill.wrapping_add(1);
        for chunk in a.chunks_mut(STREAM_CHUNK) {
            chunk.fill(black_box(fill));
            black_box(&mut *chunk);
            ctx.add_progress(chunk.len() as u64);
            if ctx.should_stop() {
                return;
            }
        }
        for (src, dst) in a.chunks(STREAM_CHUNK).zip(b.chunks_mut(STREAM_CHUNK)) {
            dst.copy_from_slice(black_box(src));
            black_box(&mut *dst);
            ctx.add_progress(dst.len() as u64);
            if ctx.should_stop() {
                return;
            }
        }
    }
}

/// The scan thread: memset of a 1 MiB block, over and over.
fn run_scan(buf: &mut [u8], ctx: &ThreadCtx<'_>) {
    let mut fill = 0u8;
    while !ctx.should_stop() {
        fill = fill.wrapping_add(1);
        buf.fill(black_box(fill));
        black_box(&mut *buf);
        ctx.add_progress(buf.len() as u64);
    }
}

/// Sequential loads over a cache-sized buffer, four independent sums (the loads, not the
/// adds, are the limit). Counted in bytes loaded.
fn run_loads(words: &[u64], ctx: &ThreadCtx<'_>) {
    let bytes = std::mem::size_of_val(words) as u64;
    // At least ~64 KiB of loads per progress update, so tiny L1 buffers do not spend their
    // time on the counter.
    let passes = (64u64 << 10).div_ceil(bytes).max(1);
    let mut total = 0u64;
    while !ctx.should_stop() {
        for _ in 0..passes {
            // black_box: the buffer "may have changed", so the sum cannot be hoisted.
            let w = black_box(words);
            let mut s = [0u64; 4];
            for c in w.chunks_exact(4) {
                s[0] = s[0].wrapping_add(c[0]);
                s[1] = s[1].wrapping_add(c[1]);
                s[2] = s[2].wrapping_add(c[2]);
                s[3] = s[3].wrapping_add(c[3]);
            }
            total = total.wrapping_add(s[0] ^ s[1] ^ s[2] ^ s[3]);
        }
        ctx.add_progress(passes * bytes);
    }
    black_box(total);
}

/// Follows the cycle: each load's address depends on the previous load.
fn run_chase(lines: &[u64], at: &mut usize, ctx: &ThreadCtx<'_>) {
    const HOPS: u64 = 1024; // ~100 µs from DRAM
    let mut i = *at;
    while !ctx.should_stop() {
        for _ in 0..HOPS {
            i = lines[i * (LINE_BYTES / 8)] as usize;
        }
        ctx.add_progress(HOPS);
    }
    *at = black_box(i);
}

/// Asks for transparent huge pages on a fresh (not yet touched) buffer, best effort. With
/// 4 KiB pages a random walk over 128 MiB misses the TLB on nearly every hop, so `chase`
/// would time page walks (two-dimensional, and dearer, under a hypervisor) more than DRAM;
/// with 2 MiB pages the whole buffer fits the L2 TLB on current cores. Without THP (or with
/// `enabled = never`) nothing changes.
fn advise_huge_pages<T>(buf: &mut [T]) {
    const HUGE: usize = 2 << 20;
    let start = buf.as_mut_ptr() as usize;
    let end = start + std::mem::size_of_val(buf);
    let a = start.next_multiple_of(HUGE);
    if a + HUGE > end {
        return;
    }
    let len = (end - a) / HUGE * HUGE;
    // SAFETY: [a, a + len) lies inside `buf`, which we own mutably; madvise only changes
    // how the kernel backs those pages, never their contents for MADV_HUGEPAGE.
    unsafe {
        libc::madvise(a as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

/// SplitMix64: a tiny seeded generator, good enough to shuffle.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; bias < n / 2^64).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// A random single cycle through `n` cache lines (Sattolo's algorithm), laid out as one
/// node per line: `out[i * 8]` holds the index of the line after line `i`. Following it
/// from any line visits every line once before returning, so the hardware prefetchers
/// cannot guess the next address.
pub fn chase_cycle(n: usize, seed: u64) -> Vec<u64> {
    chase_cycle_until(n, seed, &|| false).expect("never stopped")
}

/// [`chase_cycle`], giving up (None) once `stop` is true.
fn chase_cycle_until(n: usize, seed: u64, stop: &dyn Fn() -> bool) -> Option<Vec<u64>> {
    let n = n.clamp(2, u32::MAX as usize);
    // Shuffle a compact index array (4 bytes per line, mostly cache-resident) and write the
    // big array once, sequentially: far faster than swapping inside the big array.
    let mut perm: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        if i % (PREPARE_CHUNK_BYTES / 8) == 0 && stop() {
            return None;
        }
        let j = rng.below(i as u64) as usize; // j < i: Sattolo, not Fisher–Yates
        perm.swap(i, j);
    }
    let words = LINE_BYTES / 8;
    let mut out = vec![0u64; n * words];
    advise_huge_pages(&mut out);
    for (i, &p) in perm.iter().enumerate() {
        out[i * words] = p as u64; // touches every page: no faults while chasing
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prime_pass_counts_like_sysbench() {
        // Primes in 3..10000: 1229 below 10^4, minus 2.
        assert_eq!(prime_pass(10_000, || false), Some(1228));
        assert_eq!(prime_pass(3, || false), Some(0));
        assert_eq!(prime_pass(4, || false), Some(1)); // c = 3
        assert_eq!(prime_pass(100, || false), Some(24));
        // Perfect squares: ⌊√c⌋ is tried (sysbench's `l <= t`).
        assert_eq!(prime_pass(26, || false), Some(8)); // 3 5 7 11 13 17 19 23; 25 = 5·5
        assert_eq!(prime_pass(10_000, || true), None);
    }

    #[test]
    fn rem64_is_remainder() {
        for (c, l) in [(10u64, 3u64), (1 << 40, 7), (u64::MAX, 2), (5, 9)] {
            assert_eq!(rem64(c, l), c % l);
        }
    }

    #[test]
    fn sattolo_gives_one_cycle_over_all_lines() {
        for n in [2usize, 3, 17, 1000] {
            let c = chase_cycle(n, 42);
            let mut seen = vec![false; n];
            let mut i = 0usize;
            for _ in 0..n {
                assert!(!seen[i], "revisited {i} early (n = {n})");
                seen[i] = true;
                i = c[i * 8] as usize;
            }
            assert_eq!(i, 0, "cycle length is n");
            assert!(seen.iter().all(|&s| s));
        }
        assert_eq!(chase_cycle(100, 7), chase_cycle(100, 7), "seeded");
        assert_ne!(chase_cycle(100, 7), chase_cycle(100, 8));
    }

    #[test]
    fn rng_below_is_in_range() {
        let mut r = SplitMix64::new(1);
        for n in 1..200 {
            assert!(r.below(n) < n);
        }
    }

    #[test]
    fn fma_detection_is_consistent() {
        let auto = FmaVariant::detect(FmaWidth::Auto).unwrap();
        assert!(FmaVariant::detect(FmaWidth::Scalar).is_ok());
        if auto == FmaVariant::Avx512 {
            assert_eq!(
                FmaVariant::detect(FmaWidth::Avx512).unwrap(),
                FmaVariant::Avx512
            );
        }
    }
}
