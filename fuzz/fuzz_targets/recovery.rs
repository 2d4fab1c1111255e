#![no_main]
//! Damages an image Linux left after fsyncs and a power cut, opens it read-only and
//! read-write (roll-forward recovery) and walks it; see `uf2fs_fuzz::recovery`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::recovery::run(data));
