#![no_main]
//! Fuzzes the summary parser; the checks live in `uf2fs_fuzz::parsers::summary`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::summary(data));
