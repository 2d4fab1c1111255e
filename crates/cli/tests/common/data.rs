//! File contents for the packer's tests: text that compresses and noise that does not,
//! both fixed by a seed.

/// Data that compresses: words from a small vocabulary, in an order fixed by `seed`.
pub fn text(n: usize, seed: u32) -> Vec<u8> {
    let words = [&b"vendor "[..], b"system ", b"product ", b"odm ", b"\n", b"apex "];
    let mut x = seed | 1;
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.extend_from_slice(words[(x % 6) as usize]);
    }
    v.truncate(n);
    v
}

/// Data that does not compress: xorshift bytes from `seed`.
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
