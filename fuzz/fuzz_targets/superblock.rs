#![no_main]
//! Fuzzes the superblock parser; the checks live in `uf2fs_fuzz::parsers::superblock`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::parsers::superblock(data));
