#![no_main]
//! Fuzzes the xattr parser; the checks live in `uf2fs_fuzz::parsers::xattr`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::xattr(data));
