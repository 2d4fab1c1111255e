//! Power-cut points of a recording device, shared by the crash tests.

#![allow(dead_code)]

use uf2fs_core::device::CrashDevice;

/// Which subsets of the writes in flight at each flush a cut tries, beyond none and
/// all of them.
#[derive(Debug, Clone, Copy)]
pub struct CutSet {
    /// The first half.
    pub half: bool,
    /// Each of the first `singles` writes alone.
    pub singles: usize,
    /// Subsets drawn from the seed.
    pub seeded: usize,
}

/// Cuts of the writes recorded on `dev`: after each flush, with none, all, the first
/// half and one subset (drawn from `seed`) of the writes in flight. Each is the flush
/// index and which in-flight writes landed.
pub fn cuts(dev: &CrashDevice, seed: u64) -> Vec<(usize, Vec<bool>)> {
    let set = CutSet {
        half: true,
        singles: 0,
        seeded: 1,
    };
    cuts_of(dev, seed, set)
}

/// Cuts of the writes recorded on `dev`: after each flush, with none, all, and the
/// subsets `set` names (in that order), drawn from `seed` where seeded.
pub fn cuts_of(dev: &CrashDevice, mut seed: u64, set: CutSet) -> Vec<(usize, Vec<bool>)> {
    let mut out = Vec::new();
    for k in 0..=dev.flush_count() {
        let n = dev.in_flight_after(k).len();
        out.push((k, vec![false; n]));
        if n == 0 {
            continue;
        }
        out.push((k, vec![true; n]));
        if set.half {
            out.push((k, (0..n).map(|j| j < n / 2).collect()));
        }
        for i in 0..n.min(set.singles) {
            out.push((k, (0..n).map(|j| j == i).collect()));
        }
        for _ in 0..set.seeded {
            out.push((k, seeded_keep(n, &mut seed)));
        }
    }
    out
}

/// Which of `n` writes in flight landed, drawn from `seed` (xorshift64; advanced).
pub fn seeded_keep(n: usize, seed: &mut u64) -> Vec<bool> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed & 1 == 1
        })
        .collect()
}
