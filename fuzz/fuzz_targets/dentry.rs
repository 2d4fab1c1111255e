#![no_main]
//! Fuzzes the dentry parser; the checks live in `uf2fs_fuzz::parsers::dentry`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::dentry(data));
