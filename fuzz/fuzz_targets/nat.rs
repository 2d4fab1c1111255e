#![no_main]
//! Fuzzes the nat parser; the checks live in `uf2fs_fuzz::parsers::nat`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::nat(data));
