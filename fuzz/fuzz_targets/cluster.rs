#![no_main]
//! Fuzzes the compressed-cluster decoder (LZO, LZO-RLE, LZ4, Zstandard); the checks
//! live in `uf2fs_fuzz::cluster`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::cluster::run(data));
