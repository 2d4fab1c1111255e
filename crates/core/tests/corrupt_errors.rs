//! Damage is reported as damage, naming the structure and its block address: an
//! inode block and a dentry block are damaged on a checkpointed image, and the errors
//! of both the read path and the write path say "corrupt ... at block 0x...".

use uf2fs_core::device::MemDevice;
use uf2fs_core::mkfs::{mkfs, MkfsOptions};
use uf2fs_core::{Error, Fs, OpenOptions};

const RW: OpenOptions = OpenOptions { read_write: true };
const RO: OpenOptions = OpenOptions { read_write: false };
/// `i_mode` in an inode block.
const I_MODE: usize = 0;
/// Where slot 0's name length lies in a 4 KiB dentry block: after the 27-byte bitmap,
/// 3 reserved bytes, and 8 bytes of the entry (hash, ino).
const SLOT0_NAME_LEN: usize = 27 + 3 + 8;
const BLOCK: usize = 4096;

/// A 64 MiB image holding `/d` (a directory of 300 entries: too many to stay inline)
/// with `/d/f0`..`/d/f299`, cleanly unmounted; with the inode numbers of `/d` and
/// `/d/f0`.
fn image() -> (Vec<u8>, u32, u32) {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("fresh.img");
    let opts = MkfsOptions {
        size_bytes: Some(64 << 20),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let d = fs.mkdir(fs.root(), b"d", 0o755, 0, 0).unwrap().ino;
    let mut f0 = 0;
    for k in 0..300 {
        let ino = fs.create(d, format!("f{k}").as_bytes(), 0o644, 0, 0).unwrap().ino;
        if k == 0 {
            f0 = ino;
        }
    }
    fs.unmount().unwrap();
    (std::fs::read(&img).unwrap(), d, f0)
}

fn open(image: &[u8], opts: OpenOptions) -> Fs {
    Fs::open_device_with(Box::new(MemDevice::new(image.to_vec())), "damaged", opts).unwrap()
}

fn expect_corrupt_at<T: std::fmt::Debug>(r: Result<T, Error>, blkaddr: u64, what: &str) {
    let err = r.expect_err(what);
    let msg = err.to_string();
    assert!(matches!(err, Error::Corrupt { .. }), "{what}: not Corrupt: {msg}");
    assert!(
        msg.contains(&format!("at block {blkaddr:#x}")),
        "{what}: the error does not name block {blkaddr:#x}: {msg}"
    );
}

/// An inode block whose mode has no file type: stat on a read-only and a read-write
/// open, and a write to the file, each name the inode's block.
#[test]
fn a_damaged_inode_is_named_with_its_block() {
    let (image, _, f0) = image();
    let at = open(&image, RO).node_blkaddr(f0).unwrap();
    let mut damaged = image.clone();
    let mode = &mut damaged[at as usize * BLOCK + I_MODE..][..2];
    mode.copy_from_slice(&0o644u16.to_le_bytes());
    for opts in [RO, RW] {
        let fs = open(&damaged, opts);
        expect_corrupt_at(fs.stat(f0), at, "stat of the damaged inode");
    }
    let fs = open(&damaged, RW);
    expect_corrupt_at(fs.write(f0, 0, b"x"), at, "write to the damaged inode");
}

/// A dentry block whose first entry has a zero name length: a lookup (read path) and
/// a create in the directory (write path) name the dentry block's address.
#[test]
fn a_damaged_dentry_block_is_named_with_its_block() {
    let (image, d, _) = image();
    let fs = open(&image, RO);
    let extents = fs.extents(d).unwrap();
    let (first, at, _) = extents[0];
    assert_eq!(first, 0, "the directory's block 0 is on the device");
    drop(fs);
    let mut damaged = image.clone();
    damaged[at as usize * BLOCK + SLOT0_NAME_LEN..][..2].copy_from_slice(&0u16.to_le_bytes());
    let fs = open(&damaged, RO);
    expect_corrupt_at(fs.lookup(d, b"f0"), at, "lookup in the damaged directory");
    let fs = open(&damaged, RW);
    expect_corrupt_at(fs.create(d, b"new", 0o644, 0, 0), at, "create in the damaged directory");
}

/// Damage found on a read-write volume stops it, as Linux's `f2fs_stop_checkpoint`:
/// the read that found it reports it, every later change, fsync, GC pass and checkpoint
/// is refused with `EIO` naming the damage, nothing more reaches the device (the
/// unmount included), the status says why, and undamaged files still read.
#[test]
fn damage_found_stops_the_volume() {
    let (image, d, f0) = image();
    let at = open(&image, RO).node_blkaddr(f0).unwrap();
    let mut damaged = image.clone();
    damaged[at as usize * BLOCK + I_MODE..][..2].copy_from_slice(&0o644u16.to_le_bytes());
    let sb = uf2fs_format::superblock::Superblock::decode(&damaged[1024..1024 + 3072]).unwrap();
    let (dev, counter) = uf2fs_core::device::counting(Box::new(MemDevice::new(damaged)), &sb);
    let fs = Fs::open_device_with(dev, "damaged", RW).unwrap();
    let f1 = fs.lookup(d, b"f1").unwrap();
    assert!(fs.status().unwrap().writes.unwrap().stopped.is_none());
    let before = counter.counts().total();
    expect_corrupt_at(fs.stat(f0), at, "stat of the damaged inode");
    let why = fs
        .status()
        .unwrap()
        .writes
        .unwrap()
        .stopped
        .expect("the status names the stop");
    assert!(why.contains(&format!("at block {at:#x}")), "{why}");
    assert!(fs.status_report().unwrap().contains("stopped:"));
    let refused = |what: &str, r: Result<(), Error>| {
        let e = r.expect_err(what);
        assert_eq!(e.errno(), 5, "{what}: {e}");
        assert!(e.to_string().contains(&why), "{what}: {e}");
    };
    refused("create", fs.create(d, b"new", 0o644, 0, 0).map(drop));
    refused("write", fs.write(f1, 0, b"x").map(drop));
    refused("unlink", fs.unlink(d, b"f2"));
    refused("fsync", fs.fsync(f1, false));
    refused("gc", fs.gc(uf2fs_core::GcKind::Foreground).map(drop));
    refused("checkpoint", fs.write_checkpoint().map(drop));
    assert_eq!(fs.stat(f1).unwrap().ino, f1, "undamaged inodes still read");
    assert!(fs.unmount().is_err(), "the unmount cannot write its checkpoint");
    assert_eq!(counter.counts().total(), before, "nothing was written after the damage");
}
