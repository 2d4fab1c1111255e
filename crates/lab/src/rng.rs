//! A small, fixed pseudo-random generator (xoshiro256**, seeded through SplitMix64),
//! so that a `--seed` gives the same operations on every machine and in every version
//! of the lab: no dependency whose algorithm could change under us.

/// Deterministic 64-bit generator.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

/// One SplitMix64 step: advances `state` and returns a well-mixed value.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    mix64(*state)
}

/// SplitMix64's finaliser: a bijective mix of the bits of `z`.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for stream `stream` of seed `seed`: different streams of one seed
    /// are independent (each workload draws from its own).
    pub fn new(seed: u64, stream: &str) -> Rng {
        // FNV-1a of the stream name, folded into the seed.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in stream.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        let mut state = seed ^ mix64(h);
        let s = [
            splitmix64(&mut state),
            splitmix64(&mut state),
            splitmix64(&mut state),
            splitmix64(&mut state),
        ];
        Rng { s }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// A uniform value in `0..n` (`n` > 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        // Lemire's multiply-and-shift, rejecting the few values that would bias it.
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_same_values() {
        let a: Vec<u64> = (0..100)
            .scan(Rng::new(7, "uniform"), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..100)
            .scan(Rng::new(7, "uniform"), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..100).scan(Rng::new(7, "zipf"), |r, _| Some(r.next_u64())).collect();
        let d: Vec<u64> = (0..100)
            .scan(Rng::new(8, "uniform"), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }

    #[test]
    fn below_is_in_range_and_even() {
        let mut r = Rng::new(1, "t");
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            let v = r.below(10);
            counts[v as usize] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(r.below(1), 0);
        let big = u64::MAX - 3;
        assert!(r.below(big) < big);
    }

    #[test]
    fn unit_is_in_the_half_open_interval() {
        let mut r = Rng::new(3, "u");
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        assert!((sum / 100_000.0 - 0.5).abs() < 0.01);
    }
}
