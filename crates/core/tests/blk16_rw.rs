//! Read-write on a volume of 16 KiB blocks (`mkfs.f2fs -b 16384`): the committed
//! fixture (crates/cli/tests/fixtures/blk16, made by f2fs-tools 1.16) is opened for
//! writing and changed through the core API: files created, written across node
//! boundaries, overwritten, truncated, unlinked, directories filled past one dentry
//! block, checkpoints written, sections collected by GC, files fsync'd and the power
//! cut after the fsync. Every reopen (read-write after a clean unmount, recovery after
//! the cut, read-only at the end) must read back what was written, and the fixture's
//! own files must be untouched.
//!
//! Both SSA layouts: one 16 KiB summary block per segment, and Linux 6.19's
//! `packed_ssa` (4 KiB summaries, four segments to an SSA block, so every SSA write is a
//! read-modify-write of a block three other segments share): its own fixture
//! (crates/cli/tests/fixtures/blk16-packed-ssa) and a volume `uf2fs mkfs -b 16384 -O
//! packed_ssa` makes.
//!
//! Debian's fsck.f2fs 1.15 refuses 16 KiB blocks ("Invalid blocksize (16384), supports
//! only 4KB") and Linux reads them only on 16 KiB-page kernels; the development tree's
//! fsck.f2fs (docs/android-images.md) judges every step's image when it is found
//! (`oracle::dev_fsck`), and is skipped with a message otherwise.

#[path = "common/oracle.rs"]
mod oracle;

use uf2fs_core::device::{CrashDevice, MemDevice};
use uf2fs_core::gc::GcKind;
use uf2fs_core::{Fs, Ino, OpenOptions};

const BLOCK: usize = 16384;

/// `len` bytes that differ with `seed` and along the file.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 * 31 + seed as u32 * 7 + (i as u32 >> 12)) as u8)
        .collect()
}

fn read_all(fs: &Fs, ino: Ino) -> Vec<u8> {
    let size = fs.stat(ino).unwrap().size as usize;
    let mut buf = vec![0u8; size + 10];
    let n = fs.read(ino, 0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// The committed 16 KiB fixture `name` (`blk16`, or `blk16-packed-ssa`), unpacked.
fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../cli/tests/fixtures/{name}/{name}.img.zst",
        env!("CARGO_MANIFEST_DIR")
    );
    let packed = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    zstd::decode_all(&packed[..]).unwrap()
}

fn open_rw(image: Vec<u8>) -> (Fs, CrashDevice) {
    let dev = CrashDevice::new(image, 1 << 22);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "blk16", OpenOptions { read_write: true }).unwrap();
    (fs, dev)
}

fn lookup(fs: &Fs, path: &str) -> Ino {
    fs.resolve(path.as_bytes(), false)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every regular file's contents, by path, for comparing two opens.
fn snapshot(fs: &Fs, dir: &str, out: &mut Vec<(String, Vec<u8>)>) {
    for e in fs.read_dir(lookup(fs, dir)).unwrap() {
        if e.name == b"." || e.name == b".." {
            continue;
        }
        let path = format!("{}/{}", dir.trim_end_matches('/'), String::from_utf8_lossy(&e.name));
        if e.kind == uf2fs_core::FileKind::Dir {
            snapshot(fs, &path, out);
        } else if e.kind == uf2fs_core::FileKind::File {
            out.push((path, read_all(fs, e.ino)));
        }
    }
}

type Want = Vec<(String, Vec<u8>)>;

fn check(fs: &Fs, want: &Want, what: &str) {
    for (path, data) in want {
        let got = read_all(fs, lookup(fs, path));
        assert_eq!(got.len(), data.len(), "{what}: size of {path}");
        assert!(got == *data, "{what}: contents of {path}");
    }
}

#[test]
fn a_16k_volume_reads_back_what_was_written() {
    exercise(fixture("blk16"), 10, "fixture");
}

/// The same on the `packed_ssa` fixture (mkfs.f2fs and sload.f2fs of f2fs-tools'
/// development tree).
#[test]
fn a_packed_ssa_16k_volume_reads_back_what_was_written() {
    let image = fixture("blk16-packed-ssa");
    let fs = Fs::open_device(Box::new(MemDevice::new(image.clone())), "packed").unwrap();
    assert!(fs.superblock().geometry().is_packed_ssa());
    drop(fs);
    exercise(image, 10, "packed-fixture");
}

/// A volume `uf2fs mkfs -b 16384` makes in memory (`features`, `mib` MiB).
fn made_by_uf2fs(features: &str, mib: u64) -> Vec<u8> {
    let opts = uf2fs_core::MkfsOptions {
        block_size: BLOCK as u32,
        root_owner: Some((0, 0)),
        features: uf2fs_core::mkfs::parse_features(features).unwrap(),
        ..Default::default()
    };
    let bytes = mib << 20;
    let (report, writes) = uf2fs_core::mkfs::mkfs_blocks(&opts, bytes).unwrap();
    assert_eq!(report.superblock.block_size(), BLOCK);
    let mut image = vec![0u8; bytes as usize];
    for (addr, block) in writes {
        let at = addr as usize * BLOCK;
        image[at..at + block.len()].copy_from_slice(&block);
    }
    image
}

/// The same on a volume `uf2fs mkfs -b 16384` makes (in memory, 512 MiB).
#[test]
fn a_16k_volume_made_by_uf2fs_mkfs_reads_back_what_was_written() {
    exercise(made_by_uf2fs("", 512), 0, "mkfs");
}

/// The same on a volume `uf2fs mkfs -b 16384 -O packed_ssa` makes (in memory, 256 MiB:
/// fewer segments, so more of the writes and GC's moves land in SSA blocks shared with
/// other live segments).
#[test]
fn a_packed_ssa_volume_made_by_uf2fs_mkfs_reads_back_what_was_written() {
    exercise(made_by_uf2fs("packed_ssa", 256), 0, "packed-mkfs");
}

/// Saves `image` as `<dir>/<name>.img` when `UF2FS_BLK16_KEEP` names a directory, and
/// has the development fsck.f2fs judge it when there is one (`-f -y` on a copy:
/// clean, nothing fixed).
fn keep(image: &[u8], name: &str) {
    if let Some(dir) = std::env::var_os("UF2FS_BLK16_KEEP") {
        let path = std::path::Path::new(&dir).join(format!("{name}.img"));
        std::fs::write(&path, image).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    static FSCK: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    if let Some(fsck) = FSCK.get_or_init(oracle::dev_fsck) {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join(format!("{name}.img"));
        std::fs::write(&img, image).unwrap();
        oracle::dev_fsck_clean(fsck, &img, name);
    }
}

/// Writes, GC, a clean reopen, fsyncs and a power cut on `image`, whose own files (more
/// than `min_files` of them) must stay as they were; `tag` names the saved steps.
fn exercise(image: Vec<u8>, min_files: usize, tag: &str) {
    let (fs, dev) = open_rw(image);
    assert_eq!(fs.superblock().block_size(), BLOCK);
    let mut before = Vec::new();
    snapshot(&fs, "/", &mut before);
    assert!(before.len() >= min_files, "the image's own files");
    let root = fs.root();
    let mut want: Want = Vec::new();

    // Sizes around the inline limit, the block size and the inode's addresses
    // (3986 less inline xattrs on this image: 4 MiB of it reaches a direct node).
    for (i, len) in [1usize, 3000, 15_000, 16_383, 16_384, 16_385, 100_000, 5 << 20, 9 << 20]
        .into_iter()
        .enumerate()
    {
        let name = format!("w{i}");
        let ino = fs.create(root, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
        let data = pattern(i as u8 + 1, len);
        fs.write(ino, 0, &data).unwrap();
        want.push((format!("/{name}"), data));
    }
    // Overwrites inside blocks and across block boundaries, an append, a hole.
    let ino = lookup(&fs, "/w7");
    let mut data = want[7].1.clone();
    for (off, len) in [(10usize, 5usize), (BLOCK - 3, 7), (3 * BLOCK, BLOCK), (70_001, 40_000)] {
        let new = pattern(off as u8, len);
        fs.write(ino, off as u64, &new).unwrap();
        data[off..off + len].copy_from_slice(&new);
    }
    let end = data.len() as u64 + 3 * BLOCK as u64 + 5;
    fs.write(ino, end, b"past a hole").unwrap();
    data.resize(end as usize, 0);
    data.extend(b"past a hole");
    want[7].1 = data;
    // Truncates: inside a block, to a block boundary, grown with a hole.
    let ino = lookup(&fs, "/w8");
    fs.truncate(ino, 2 * BLOCK as u64 + 100).unwrap();
    fs.truncate(ino, 6 * BLOCK as u64).unwrap();
    let mut data = want[8].1[..2 * BLOCK + 100].to_vec();
    data.resize(6 * BLOCK, 0);
    want[8].1 = data;
    // A directory past one dentry block (856 slots), names of several slots.
    let dir = fs.mkdir(root, b"many", 0o755, 0, 0).unwrap().ino;
    for i in 0..1200 {
        let name = format!("entry-with-a-longer-name-{i:05}");
        let f = fs.create(dir, name.as_bytes(), 0o644, 0, 0).unwrap().ino;
        fs.write(f, 0, name.as_bytes()).unwrap();
        if i % 100 == 0 && i % 3 != 1 {
            want.push((format!("/many/{name}"), name.into_bytes()));
        }
    }
    for i in (1..1200).step_by(3) {
        let name = format!("entry-with-a-longer-name-{i:05}");
        fs.unlink(dir, name.as_bytes()).unwrap();
    }
    fs.symlink(root, b"link", &[b'x'; 3000], 0, 0).unwrap();
    fs.write_checkpoint().unwrap();

    // Churn, then GC: a file rewritten until sections are mostly invalid.
    let churn = fs.create(root, b"churn", 0o644, 0, 0).unwrap().ino;
    for round in 0..6u8 {
        fs.write(churn, 0, &pattern(100 + round, 3 << 20)).unwrap();
        fs.write_checkpoint().unwrap();
    }
    want.push(("/churn".into(), pattern(105, 3 << 20)));
    let moved = fs.gc(GcKind::Foreground).unwrap();
    assert!(
        moved > 0 || fs.gc_stats().unwrap().sections_freed > 0,
        "GC found nothing to do"
    );
    check(&fs, &want, "after GC");
    check(&fs, &before, "the fixture's files after GC");
    fs.unmount().unwrap();
    let image = dev.image_now();
    keep(&image, &format!("{tag}-written"));

    // Clean reopen, read-write: then fsync and a power cut.
    let (fs, dev) = open_rw(image);
    check(&fs, &want, "after a clean reopen");
    let version = fs.last_checkpoint().checkpoint_ver;
    let synced = fs.create(fs.root(), b"synced", 0o644, 0, 0).unwrap().ino;
    let sdata = pattern(77, 200_000);
    fs.write(synced, 0, &sdata).unwrap();
    fs.fsync(synced, false).unwrap();
    let ino = lookup(&fs, "/w6");
    fs.write(ino, 5, b"changed, fsync'd").unwrap();
    fs.fsync(ino, false).unwrap();
    want[6].1[5..21].copy_from_slice(b"changed, fsync'd");
    want.push(("/synced".into(), sdata));
    let image = dev.image_after_cut(dev.flush_count(), &|_| false);
    drop(fs);
    keep(&image, &format!("{tag}-cut"));

    let (fs, dev) = open_rw(image);
    assert!(
        fs.last_checkpoint().checkpoint_ver > version,
        "recovery wrote no checkpoint"
    );
    check(&fs, &want, "after recovery");
    check(&fs, &before, "the fixture's files after recovery");
    fs.unmount().unwrap();
    keep(&dev.image_now(), &format!("{tag}-recovered"));
    let ro = Fs::open_device(Box::new(MemDevice::new(dev.image_now())), "ro").unwrap();
    check(&ro, &want, "read-only at the end");
    check(&ro, &before, "the fixture's files at the end");
    let mut names = ro.read_dir(lookup(&ro, "/many")).unwrap();
    names.retain(|e| e.name != b"." && e.name != b"..");
    assert_eq!(names.len(), 1200 - 400, "entries left in /many");
}
