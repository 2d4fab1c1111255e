//! Roll-forward recovery on damaged chains (found by the `recovery` fuzz target,
//! fuzz/regressions/recovery/): a read-write open refuses with `Error::Corrupt` naming
//! the block, writing nothing; a read-only open shows the checkpoint alone.

use uf2fs_core::device::{CrashDevice, MemDevice};
use uf2fs_core::mkfs::{mkfs, MkfsOptions};
use uf2fs_core::{Error, Fs, OpenOptions};

const RW: OpenOptions = OpenOptions { read_write: true };
/// `i_name` in an inode block.
const I_NAME: usize = 92;
/// `i_namelen` in an inode block.
const I_NAMELEN: usize = 88;

/// A 64 MiB image with file `name` created, written and fsync'd after the last
/// checkpoint (a power cut right after the fsync), and the address of its fsync'd
/// inode block.
fn fsynced_new_file(name: &[u8]) -> (Vec<u8>, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("fresh.img");
    let opts = MkfsOptions {
        size_bytes: Some(64 << 20),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let dev = CrashDevice::new(std::fs::read(&img).unwrap(), 1 << 22);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "crash", RW).unwrap();
    let ino = fs.create(fs.root(), name, 0o644, 0, 0).unwrap().ino;
    fs.write(ino, 0, b"fsync'd").unwrap();
    fs.fsync(ino, false).unwrap();
    let image = dev.image_now();
    drop(fs);
    let mem = MemDevice::new(image.clone());
    let sbc = uf2fs_core::checkpoint::load_superblock(&mem).unwrap();
    let cps = uf2fs_core::checkpoint::load_checkpoint(&mem, &sbc.sb).unwrap();
    let node = uf2fs_core::checkpoint::roll_forward::find_fsync_node(&mem, &sbc.sb, &cps)
        .unwrap()
        .expect("an fsync'd node after the checkpoint");
    assert_eq!(node.ino as u64, ino as u64);
    (image, node.blkaddr)
}

fn open_rw(image: Vec<u8>) -> Result<Fs, Error> {
    Fs::open_device_with(Box::new(MemDevice::new(image)), "damaged", RW)
}

/// fuzz/regressions/recovery/name-with-slash: the fsync'd inode block of a new file
/// names it "/" + the rest; recovery linked that name into the directory, which then
/// failed to list ("entry name contains '/' or NUL"), durably after the checkpoint.
#[test]
fn an_fsyncd_name_that_is_not_a_file_name_is_corrupt() {
    let (image, blkaddr) = fsynced_new_file(b"abc");
    assert!(open_rw(image.clone()).is_ok(), "the undamaged chain recovers");
    for bad in [&b"a/c"[..], b"a\0c", b".", b".."] {
        let mut damaged = image.clone();
        let at = blkaddr as usize * 4096;
        damaged[at + I_NAME..][..bad.len()].copy_from_slice(bad);
        damaged[at + I_NAMELEN..][..4].copy_from_slice(&(bad.len() as u32).to_le_bytes());
        let err = open_rw(damaged.clone()).err().expect("recovery refuses the name");
        let msg = err.to_string();
        assert!(matches!(err, Error::Corrupt { .. }), "{msg}");
        assert!(
            msg.contains("not a file name") && msg.contains(&format!("{blkaddr:#x}")),
            "{msg}"
        );
        // Read-only: the checkpoint alone, which lists.
        let fs = Fs::open_device(Box::new(MemDevice::new(damaged)), "damaged").unwrap();
        assert!(!fs.replayed_in_memory());
        assert!(fs.read_dir(fs.root()).is_ok());
    }
}
