#![no_main]
//! Fuzzes the checkpoint parser; the checks live in `uf2fs_fuzz::parsers::checkpoint`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::checkpoint(data));
