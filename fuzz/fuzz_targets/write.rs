#![no_main]
//! Opens a damaged image read-write and changes it; see `uf2fs_fuzz::write`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    uf2fs_fuzz::write::run(data);
});
