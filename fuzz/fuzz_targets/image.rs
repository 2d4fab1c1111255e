#![no_main]
//! Opens a damaged copy of a real image and walks all of it; see `uf2fs_fuzz::image`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| uf2fs_fuzz::image::run(data));
