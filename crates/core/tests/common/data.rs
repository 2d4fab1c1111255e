//! Test data for the compression suites: text that compresses and noise that does
//! not, both fixed by a seed (the generators: `uf2fs_testkit::data`).

#![allow(dead_code)]

/// Data that compresses: words about F2FS's metadata, in an order fixed by `seed`.
pub fn text(n: usize, seed: u32) -> Vec<u8> {
    uf2fs_testkit::data::text(&uf2fs_testkit::data::F2FS_WORDS, n, seed)
}

/// Data that does not compress (not every test binary uses it).
#[allow(unused_imports)]
pub use uf2fs_testkit::data::noise;
