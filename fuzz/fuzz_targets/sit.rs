#![no_main]
//! Fuzzes the sit parser; the checks live in `uf2fs_fuzz::parsers::sit`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::sit(data));
