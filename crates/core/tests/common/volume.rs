//! Fresh in-memory volumes on a recording device, and their files, shared by the crash
//! and recovery tests (orphans.rs, roll_forward.rs).

#![allow(dead_code)]

use std::path::Path;
use uf2fs_core::device::CrashDevice;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{Fs, Ino, OpenOptions};

/// Opens read-write.
pub const RW: OpenOptions = OpenOptions { read_write: true };

/// A fresh uf2fs volume of `size` bytes with `features`, as bytes (made in `dir`).
pub fn fresh_image(dir: &Path, features: &str, size: u64) -> Vec<u8> {
    let img = dir.join("fresh.img");
    let _ = std::fs::remove_file(&img);
    let opts = MkfsOptions {
        size_bytes: Some(size),
        features: parse_features(features).unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let bytes = std::fs::read(&img).unwrap();
    let _ = std::fs::remove_file(&img);
    bytes
}

/// Opens `image` read-write on a recording device (at most 4 Mi block writes kept).
pub fn open_rw(image: Vec<u8>) -> (Fs, CrashDevice) {
    let dev = CrashDevice::new(image, 1 << 22);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "crash", RW).unwrap();
    (fs, dev)
}

/// `len` bytes that differ with `seed` and along the file.
pub fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 * 31 + seed as u32 * 7 + (i as u32 >> 12)) as u8)
        .collect()
}

/// The whole contents of file `ino`.
pub fn read_all(fs: &Fs, ino: Ino) -> Vec<u8> {
    let size = fs.stat(ino).unwrap().size as usize;
    let mut buf = vec![0u8; size + 10];
    let n = fs.read(ino, 0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// `fsck.f2fs -f` on `image` written to `dir` as a scratch file: exit 0, and no
/// "[Fail]", "[FIX" or "ASSERT" (see `oracle.rs`). Returns its output.
pub fn fsck_clean(dir: &Path, image: &[u8], what: &str) -> String {
    let img = dir.join("fsck.img");
    std::fs::write(&img, image).unwrap();
    let text = super::oracle::fsck_clean_in_place(&img, what);
    let _ = std::fs::remove_file(&img);
    text
}
