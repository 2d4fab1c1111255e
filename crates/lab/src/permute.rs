//! A keyed bijection of `0..n` onto itself, to scatter the hot ranks of a skewed
//! workload over the whole file: a four-round Feistel network on the smallest
//! even-width bit domain holding `n`, with cycle walking to stay below `n` (the
//! domain is under `4n`, so a value takes fewer than four rounds of walking on
//! average). Evaluated on demand: no table, whatever `n`.

use crate::rng::{mix64, splitmix64};

/// A permutation of `0..n`.
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    /// Bits of each Feistel half.
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// The permutation of `0..n` chosen by `key`.
    pub fn new(n: u64, key: u64) -> Permutation {
        let mut half_bits = 0;
        while half_bits < 32 && (1u128 << (2 * half_bits)) < n as u128 {
            half_bits += 1;
        }
        let mut state = key;
        let keys = [
            splitmix64(&mut state),
            splitmix64(&mut state),
            splitmix64(&mut state),
            splitmix64(&mut state),
        ];
        Permutation { n, half_bits, keys }
    }

    /// Size of the domain.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether the domain is empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// One pass of the Feistel network over `0..4^half_bits`.
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(right ^ k) & mask;
            (left, right) = (right, left ^ f);
        }
        (left << self.half_bits) | right
    }

    /// The image of `x` (`x` < n).
    pub fn apply(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        if self.half_bits == 0 {
            return x;
        }
        let mut y = self.feistel(x);
        while y >= self.n {
            y = self.feistel(y);
        }
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_is_a_bijection_for_every_size() {
        for n in [1u64, 2, 3, 4, 5, 17, 255, 256, 257, 1000, 4096, 10_007] {
            let p = Permutation::new(n, 99);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n, "n {n}: {x} -> {y}");
                assert!(!seen[y as usize], "n {n}: {y} reached twice");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn it_scatters_neighbours_and_depends_on_the_key() {
        let n = 1 << 20;
        let p = Permutation::new(n, 1);
        let q = Permutation::new(n, 2);
        // The first 1000 ranks land all over: each sixteenth of the range gets some.
        let mut parts = [0u32; 16];
        for x in 0..1000 {
            parts[(p.apply(x) * 16 / n) as usize] += 1;
        }
        assert!(parts.iter().all(|&c| (30..100).contains(&c)), "{parts:?}");
        let same = (0..1000).filter(|&x| p.apply(x) == q.apply(x)).count();
        assert!(same < 5, "{same}");
    }
}
