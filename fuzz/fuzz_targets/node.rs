#![no_main]
//! Fuzzes the node parser; the checks live in `uf2fs_fuzz::parsers::node`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::node(data));
