//! A seeded pseudorandom generator for resampling, shuffles and fake data: SplitMix64
//! (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators", OOPSLA;
//! the seeder of `rand`'s xoshiro). Not for cryptography.

/// SplitMix64: tiny, fast and seedable, good enough for bootstrap resampling.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (Lemire's multiply-shift; bias < n / 2^64). 0 when n = 0.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_reproducible_and_uniform_enough() {
        let mut a = SplitMix64::new(5);
        let mut b = SplitMix64::new(5);
        let xs: Vec<u64> = (0..100).map(|_| a.next_u64()).collect();
        assert!(xs.iter().all(|&x| x == b.next_u64()));
        let mut counts = [0usize; 10];
        for _ in 0..100_000 {
            counts[a.below(10) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
        assert_eq!(a.below(0), 0);
        let f = a.next_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
