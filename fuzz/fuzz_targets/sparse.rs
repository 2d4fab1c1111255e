#![no_main]
//! Fuzzes the Android sparse image reader; the checks live in `uf2fs_fuzz::sparse`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::sparse::run(data));
