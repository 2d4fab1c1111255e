//! Core behaviour on real images made by mkfs.f2fs and sload.f2fs (f2fs-tools must be
//! installed: these tests fail, not skip, without them).

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use uf2fs_core::{Error, Fs};

fn run(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (is f2fs-tools installed?)"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A small tree: an inline file, a multi-block file, a symlink, a subdirectory.
fn make_tree(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("small"), b"hello\n").unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.join("big"), &big).unwrap();
    std::fs::write(dir.join("sub/other"), b"other\n").unwrap();
    std::os::unix::fs::symlink("sub/other", dir.join("link")).unwrap();
}

fn make_image(tmp: &Path, mkfs_args: &[&str], extra_devices: &[PathBuf]) -> PathBuf {
    let tree = tmp.join("tree");
    make_tree(&tree);
    let img = tmp.join("img");
    std::fs::File::create(&img).unwrap().set_len(128 << 20).unwrap();
    let mut mkfs = Command::new("mkfs.f2fs");
    mkfs.arg("-q").arg("-f").args(mkfs_args);
    for d in extra_devices {
        std::fs::File::create(d).unwrap().set_len(128 << 20).unwrap();
        mkfs.arg("-c").arg(d);
    }
    run(mkfs.arg(&img));
    // sload.f2fs 1.15 leaves i_inline_xattr_size at 0 on flexible_inline_xattr images,
    // repairs that with its built-in fsck and then exits 1; so judge the image by a
    // separate fsck.f2fs -f rather than by sload's exit status.
    let sload = Command::new("sload.f2fs")
        .arg("-f")
        .arg(&tree)
        .arg("-t")
        .arg("/")
        .arg(&img)
        .output();
    assert!(sload.is_ok(), "cannot run sload.f2fs (is f2fs-tools installed?)");
    run(Command::new("fsck.f2fs").arg("-f").arg(&img));
    img
}

fn read_all(fs: &Fs, path: &str) -> Result<Vec<u8>, Error> {
    let ino = fs.resolve(path.as_bytes(), true)?;
    let mut out = vec![0u8; fs.stat(ino)?.size as usize];
    let n = fs.read(ino, 0, &mut out)?;
    out.truncate(n);
    Ok(out)
}

fn patch(img: &Path, offset: u64, f: impl FnOnce(&mut [u8])) {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(img).unwrap();
    let mut b = vec![0u8; 4096];
    let base = offset & !4095;
    file.read_exact_at(&mut b, base).unwrap();
    f(&mut b[(offset - base) as usize..]);
    file.write_all_at(&b, base).unwrap();
}

#[test]
fn reads_files_symlinks_and_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(tmp.path(), &[], &[]);
    let fs = Fs::open(&img, &[]).unwrap();
    assert_eq!(read_all(&fs, "/small").unwrap(), b"hello\n");
    assert_eq!(read_all(&fs, "/link").unwrap(), b"other\n");
    let big = read_all(&fs, "/big").unwrap();
    assert_eq!(big, std::fs::read(tmp.path().join("tree/big")).unwrap());
    // Unaligned reads across block and run boundaries agree with the whole.
    for (off, len) in [(1u64, 10usize), (4095, 2), (4096 * 3 + 17, 9000), (299_990, 100)] {
        let mut b = vec![0u8; len];
        let n = fs.read(fs.resolve(b"/big", true).unwrap(), off, &mut b).unwrap();
        let want = &big[off as usize..(off as usize + len).min(big.len())];
        assert_eq!(&b[..n], want, "read at {off}+{len}");
    }
    let mut names: Vec<Vec<u8>> = fs.read_dir(fs.root()).unwrap().into_iter().map(|e| e.name).collect();
    names.sort();
    assert_eq!(names, [&b"big"[..], b"link", b"small", b"sub"]);
    assert!(matches!(fs.resolve(b"/nope", true), Err(Error::NotFound(_))));
    assert!(matches!(fs.resolve(b"/small/x", true), Err(Error::NotDir(_))));
    assert!(fs.info().unwrap().to_string().contains("checkpoint:"));
}

#[test]
fn multi_device_image_needs_every_device() {
    let tmp = tempfile::tempdir().unwrap();
    let second = tmp.path().join("second");
    let img = make_image(tmp.path(), &[], std::slice::from_ref(&second));
    let err = Fs::open(&img, &[]).err().expect("opening one device of two must fail");
    assert!(err.to_string().contains("--device"), "{err}");
    let fs = Fs::open(&img, &[&second]).unwrap();
    assert_eq!(read_all(&fs, "/sub/other").unwrap(), b"other\n");
    assert!(fs.info().unwrap().to_string().contains("device 1:"));
}

/// Sets bits in the inode of `path` and returns the patched image's Fs.
fn with_inode_patched(path: &str, f: impl FnOnce(&mut [u8])) -> (tempfile::TempDir, PathBuf, u32) {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(tmp.path(), &[], &[]);
    let (addr, ino) = {
        let fs = Fs::open(&img, &[]).unwrap();
        let ino = fs.resolve(path.as_bytes(), false).unwrap();
        (fs.node_blkaddr(ino).unwrap(), ino)
    };
    patch(&img, addr * 4096, f);
    (tmp, img, ino)
}

#[test]
fn a_compressed_flag_without_compression_settings_is_corrupt_and_the_rest_stays_readable() {
    // i_flags is at byte 80 of the inode; F2FS_COMPR_FL = 0x4. This image has no extra
    // attributes, so no algorithm or cluster size: no F2FS writer makes that.
    let (_tmp, img, ino) = with_inode_patched("/big", |b| b[80] |= 0x04);
    let fs = Fs::open(&img, &[]).unwrap();
    let err = read_all(&fs, "/big").unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("inode {ino}")) && msg.contains("compression settings"),
        "{msg}"
    );
    assert_eq!(read_all(&fs, "/small").unwrap(), b"hello\n");
}

#[test]
fn encrypted_file_gives_a_clear_error() {
    // i_advise is byte 2 of the inode; FADVISE_ENCRYPT_BIT = 0x04.
    let (_tmp, img, _) = with_inode_patched("/small", |b| b[2] |= 0x04);
    let fs = Fs::open(&img, &[]).unwrap();
    let err = read_all(&fs, "/small").unwrap_err();
    assert!(err.to_string().contains("'encrypt'"), "{err}");
    assert_eq!(read_all(&fs, "/sub/other").unwrap(), b"other\n");
}

#[test]
fn damaged_metadata_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(tmp.path(), &[], &[]);
    // Primary superblock gone: the backup copy is used and the report says so.
    patch(&img, 1024, |b| b[..4].fill(0));
    let fs = Fs::open(&img, &[]).unwrap();
    assert!(fs.info().unwrap().to_string().contains("superblock copy:    1"));
    drop(fs);
    // Both copies gone.
    patch(&img, 4096 + 1024, |b| b[..4].fill(0));
    let err = Fs::open(&img, &[]).err().unwrap().to_string();
    assert!(
        err.contains("superblock") && err.contains("block 0x0") && err.contains("bad magic"),
        "{err}"
    );
}

#[test]
fn truncated_image_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(tmp.path(), &[], &[]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let err = Fs::open(&img, &[]).err().unwrap().to_string();
    assert!(err.contains("truncated"), "{err}");
}

#[test]
fn both_checkpoint_packs_damaged_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(tmp.path(), &[], &[]);
    let cp = {
        let fs = Fs::open(&img, &[]).unwrap();
        fs.superblock().cp_blkaddr as u64
    };
    for pack in [cp, cp + 512] {
        patch(&img, pack * 4096 + 8, |b| b[0] ^= 0xff);
    }
    let err = Fs::open(&img, &[]).err().unwrap().to_string();
    assert!(err.contains("checkpoint") && err.contains("checksum"), "{err}");
}

#[test]
fn inode_checksum_catches_a_flipped_bit() {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(
        tmp.path(),
        &["-O", "extra_attr,inode_checksum,flexible_inline_xattr"],
        &[],
    );
    let addr = {
        let fs = Fs::open(&img, &[]).unwrap();
        assert_eq!(read_all(&fs, "/small").unwrap(), b"hello\n"); // checksums verify
        fs.node_blkaddr(fs.resolve(b"/small", false).unwrap()).unwrap()
    };
    // Byte 100 is inside i_name, which nothing else checks.
    patch(&img, addr * 4096 + 100, |b| b[0] ^= 0x10);
    let fs = Fs::open(&img, &[]).unwrap();
    let err = read_all(&fs, "/small").unwrap_err().to_string();
    assert!(
        err.contains("checksum mismatch") && err.contains(&format!("{addr:#x}")),
        "{err}"
    );
}

#[test]
fn absurd_file_size_is_refused_not_looped_on() {
    // i_size (byte 16 of the inode) beyond what the node tree can address, as a damaged
    // image may hold: found by the image fuzz target (a read far past 4 TiB overflowed).
    let (_tmp, img, ino) = with_inode_patched("/big", |b| b[16..24].copy_from_slice(&u64::MAX.to_le_bytes()));
    let fs = Fs::open(&img, &[]).unwrap();
    let mut buf = vec![0u8; 8192];
    let err = fs.read(ino, u64::MAX - 4095, &mut buf).unwrap_err().to_string();
    assert!(err.contains("exceeds the largest F2FS file"), "{err}");
    assert_eq!(read_all(&fs, "/small").unwrap(), b"hello\n");
}

#[test]
fn an_image_with_64k_blocks_is_refused_as_unsupported_not_corrupt() {
    let tmp = tempfile::tempdir().unwrap();
    let img = make_image(tmp.path(), &[], &[]);
    // log_blocksize (offset 16 of the superblock at byte 1024) = 16: 64 KiB blocks, as
    // a 64 KiB-page machine would want them (mkfs.f2fs makes 4 and 16 KiB only).
    patch(&img, 1024 + 16, |b| b[..4].copy_from_slice(&16u32.to_le_bytes()));
    let err = Fs::open(&img, &[]).err().expect("a 64 KiB-block image must be refused");
    assert!(
        matches!(
            err,
            Error::Unsupported {
                feature: "block size",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("blocks of 65536 bytes"), "{err}");
}
