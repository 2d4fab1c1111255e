#![no_main]
//! Fuzzes the orphan parser; the checks live in `uf2fs_fuzz::parsers::orphan`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::orphan(data));
