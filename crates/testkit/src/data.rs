//! File contents for tests: text that compresses and noise that does not, both fixed by
//! a seed, so that a test's data (and what a codec makes of it) is the same every run.

/// Words about Android partitions (the packer's tests).
pub const ANDROID_WORDS: [&[u8]; 6] = [b"vendor ", b"system ", b"product ", b"odm ", b"\n", b"apex "];

/// Words about F2FS's metadata (the compression suites).
pub const F2FS_WORDS: [&[u8]; 6] = [b"super ", b"block ", b"segment ", b"node ", b"\n", b"checkpoint "];

/// Words about compressed clusters (the codec's own tests).
pub const CLUSTER_WORDS: [&[u8]; 6] = [b"f2fs ", b"cluster ", b"compress ", b"block ", b"node ", b"\n"];

/// Data that compresses: `n` bytes of `words` in an order fixed by `seed` (xorshift32).
pub fn text(words: &[&[u8]; 6], n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n + 16);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.extend_from_slice(words[(x % 6) as usize]);
    }
    v.truncate(n);
    v
}

/// Data that does not compress: `n` xorshift64 bytes from `seed`.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_made_of_the_words_and_fixed_by_the_seed() {
        let a = text(&F2FS_WORDS, 1000, 7);
        assert_eq!(a.len(), 1000);
        assert_eq!(a, text(&F2FS_WORDS, 1000, 7));
        assert_ne!(a, text(&F2FS_WORDS, 1000, 8));
        let s = String::from_utf8(a).unwrap();
        assert!(s
            .split([' ', '\n'])
            .all(|w| w.is_empty() || F2FS_WORDS.iter().any(|x| x.starts_with(w.as_bytes()))));
    }

    #[test]
    fn noise_is_fixed_by_the_seed_and_has_every_byte() {
        let a = noise(4096, 3);
        assert_eq!(a, noise(4096, 3));
        assert_ne!(a, noise(4096, 4));
        let mut seen = [false; 256];
        a.iter().for_each(|&b| seen[b as usize] = true);
        assert!(seen.iter().all(|&s| s));
    }
}
