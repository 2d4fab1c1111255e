//! Compressed files and the space they save, fallocate and atomic writes on them, as
//! Linux 6.1 answers them: `Fs::status`'s volume-wide figures checked against each
//! file's `F2FS_IOC_GET_COMPRESS_BLOCKS`, the cluster census and `statfs` (before and
//! after `RELEASE_COMPRESS_BLOCKS`); fallocate modes 0 and `KEEP_SIZE` reserving blocks
//! in a compressed file that writeback then compresses, punch, zero, collapse and insert
//! refused (EOPNOTSUPP), a released file refused (EPERM); an atomic write on a
//! compressed file without blocks turning compression off first, one with blocks
//! refused (EINVAL). `fsck.f2fs -f -y` clean after each test.

#[path = "common/data.rs"]
mod data;
#[path = "common/oracle.rs"]
mod oracle;

use std::path::Path;
use uf2fs_core::flags::{FS_COMPR_FL, SETTABLE_FLAGS};
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::{CompressOptions, Fs, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE};

const MIB: u64 = 1 << 20;
const FALLOC_FL_COLLAPSE_RANGE: u32 = 0x08;
const FALLOC_FL_INSERT_RANGE: u32 = 0x20;

fn volume(path: &Path, mib: u64) {
    let opts = MkfsOptions {
        size_bytes: Some(mib * MIB),
        features: parse_features("extra_attr,compression").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(path, &opts).unwrap();
}

fn open(img: &Path, log: &str) -> Fs {
    let fs = Fs::open_rw(img, &[]).unwrap();
    let mut o = CompressOptions::default();
    assert!(o.set_option("compress_algorithm", Some("zstd")).unwrap());
    assert!(o.set_option("compress_log_size", Some(log)).unwrap());
    fs.set_compress_options(o).unwrap();
    fs
}

fn compressed(fs: &Fs, name: &str) -> u32 {
    let ino = fs.create(fs.root(), name.as_bytes(), 0o100644, 0, 0).unwrap().ino;
    fs.set_file_flags(ino, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    ino
}

fn read_all(fs: &Fs, ino: u32, len: usize) -> Vec<u8> {
    let mut back = vec![0u8; len + 4096];
    let n = fs.read(ino, 0, &mut back).unwrap();
    back.truncate(n);
    back
}

fn saved(fs: &Fs) -> uf2fs_core::CompressionSaved {
    fs.status().unwrap().writes.unwrap().compression.unwrap()
}

#[test]
fn status_shows_what_compression_saved_and_release_gives_it_to_df() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("saved.img");
    volume(&img, 128);
    let fs = open(&img, "2");
    assert_eq!(saved(&fs), uf2fs_core::CompressionSaved::default());
    let cb = 4 * 4096;
    let a = compressed(&fs, "a.txt");
    let b = compressed(&fs, "b.txt");
    let plain = fs.create(fs.root(), b"plain.txt", 0o100644, 0, 0).unwrap().ino;
    for (ino, n, seed) in [(a, 40 * cb + 77, 1), (b, 25 * cb, 2), (plain, 30 * cb, 3)] {
        let d = data::text(n, seed);
        assert_eq!(fs.write(ino, 0, &d).unwrap(), d.len());
    }
    // A cluster of noise stays plain: it saves nothing.
    fs.write(b, 3 * cb as u64, &data::noise(cb, 4)).unwrap();
    fs.writeback().unwrap();
    let s = saved(&fs);
    let (ca, cbb) = (fs.compression(a).unwrap().unwrap(), fs.compression(b).unwrap().unwrap());
    assert_eq!(s.files, 2, "{s:?}");
    assert_eq!(
        s.compressed_clusters,
        ca.compressed_clusters + cbb.compressed_clusters,
        "{s:?}"
    );
    assert_eq!(s.compressed_clusters, 40 + 24, "{s:?}");
    assert_eq!(s.logical_blocks, 4 * s.compressed_clusters);
    assert_eq!(s.stored_blocks, ca.compressed_blocks + cbb.compressed_blocks);
    assert_eq!(s.saved_blocks, s.logical_blocks - s.stored_blocks);
    assert!(
        s.saved_blocks >= s.compressed_clusters,
        "text saves a block a cluster at least: {s:?}"
    );
    // Every saved block is still reserved: `GET_COMPRESS_BLOCKS` adds up to them.
    assert_eq!(
        s.reserved_blocks,
        fs.compress_blocks(a).unwrap() + fs.compress_blocks(b).unwrap(),
        "{s:?}"
    );
    assert_eq!(s.reserved_blocks, s.saved_blocks, "{s:?}");
    assert_eq!((s.released_blocks, s.released_files), (0, 0));
    let report = fs.status_report().unwrap();
    assert!(
        report.contains(&format!(
            "compression saved:   {} of {} blocks",
            s.saved_blocks, s.logical_blocks
        )),
        "{report}"
    );
    // Releasing a's blocks gives its saved blocks to df.
    let free = fs.statfs().unwrap().blocks_free;
    let given = fs.release_compress_blocks(a).unwrap();
    assert_eq!(fs.statfs().unwrap().blocks_free, free + given);
    let r = saved(&fs);
    assert_eq!((r.saved_blocks, r.released_files), (s.saved_blocks, 1), "{r:?}");
    assert_eq!(r.released_blocks, given, "{r:?}");
    assert_eq!(r.reserved_blocks, fs.compress_blocks(b).unwrap(), "{r:?}");
    // Unlink frees the rest; the figures follow.
    fs.unlink(fs.root(), b"b.txt").unwrap();
    let u = saved(&fs);
    assert_eq!((u.files, u.reserved_blocks, u.released_blocks), (1, 0, given), "{u:?}");
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "release and unlink of compressed files");
    // The figures are the image's, not the mount's memory: a new mount finds them.
    let fs = open(&img, "2");
    assert_eq!(saved(&fs), u);
    fs.unmount().unwrap();
}

#[test]
fn fallocate_on_compressed_files_as_linux() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("falloc.img");
    volume(&img, 128);
    let fs = open(&img, "2");
    let cb = 4 * 4096u64;
    // Modes 0 and KEEP_SIZE reserve blocks in a compressed file, as Linux's
    // `f2fs_expand_inode_data` does; writeback then compresses what is written over them.
    let a = compressed(&fs, "a");
    fs.fallocate(a, 0, 8 * cb, 0).unwrap();
    assert_eq!(fs.stat(a).unwrap().size, 8 * cb);
    fs.fallocate(a, 8 * cb, 4 * cb, FALLOC_FL_KEEP_SIZE).unwrap();
    assert_eq!(fs.stat(a).unwrap().size, 8 * cb);
    let text = data::text(10 * cb as usize, 9);
    assert_eq!(fs.write(a, 0, &text).unwrap(), text.len());
    fs.writeback().unwrap();
    assert_eq!(read_all(&fs, a, text.len()), text);
    let c = fs.compression(a).unwrap().unwrap();
    assert_eq!(c.compressed_clusters, 10, "{c:?}");
    // Reserving over compressed clusters changes nothing of them.
    fs.fallocate(a, 0, 12 * cb, 0).unwrap();
    fs.writeback().unwrap();
    assert_eq!(fs.compression(a).unwrap().unwrap().compressed_clusters, 10);
    assert_eq!(fs.stat(a).unwrap().size, 12 * cb);
    // Past the end, then written in part: the reservations stay, the file reads zeros.
    fs.fallocate(a, 14 * cb, 2 * cb + 100, 0).unwrap();
    fs.write(a, 15 * cb + 5, b"in a reserved cluster").unwrap();
    fs.writeback().unwrap();
    let mut want = text.clone();
    want.resize((16 * cb + 100) as usize, 0);
    want[(15 * cb + 5) as usize..(15 * cb + 26) as usize].copy_from_slice(b"in a reserved cluster");
    assert_eq!(read_all(&fs, a, want.len()), want);
    // Punch, zero, collapse and insert: EOPNOTSUPP, as Linux 6.1's `f2fs_fallocate`.
    for mode in [
        FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        FALLOC_FL_ZERO_RANGE,
        FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
        FALLOC_FL_COLLAPSE_RANGE,
        FALLOC_FL_INSERT_RANGE,
    ] {
        let e = fs.fallocate(a, cb, cb, mode).unwrap_err();
        assert_eq!(e.errno(), 95, "mode {mode:#x}: {e}");
    }
    assert_eq!(read_all(&fs, a, want.len()), want, "refused modes changed nothing");
    // A released file is EPERM, as its writes are, until RESERVE_COMPRESS_BLOCKS.
    fs.release_compress_blocks(a).unwrap();
    let e = fs.fallocate(a, 20 * cb, cb, 0).unwrap_err();
    assert_eq!(e.errno(), 1, "{e}");
    fs.reserve_compress_blocks(a).unwrap();
    fs.fallocate(a, 20 * cb, cb, 0).unwrap();
    fs.write_checkpoint().unwrap();
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "fallocate on a compressed file");
    let fs = Fs::open(&img, &[]).unwrap();
    want.resize((21 * cb) as usize, 0);
    assert_eq!(read_all(&fs, a, want.len()), want, "after a remount");
}

#[test]
fn atomic_writes_on_compressed_files_as_linux() {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("atomic.img");
    volume(&img, 128);
    let fs = open(&img, "2");
    // With blocks (written back, or only in the page cache): EINVAL, compression kept.
    let full = compressed(&fs, "full");
    fs.write(full, 0, &data::text(65536, 1)).unwrap();
    let e = fs.atomic_start(full, false).unwrap_err();
    assert_eq!(e.errno(), 22, "{e}");
    fs.writeback().unwrap();
    let e = fs.atomic_start(full, true).unwrap_err();
    assert_eq!(e.errno(), 22, "{e}");
    assert!(fs.compression(full).unwrap().is_some());
    // Without blocks: compression goes (`f2fs_disable_compressed_file`), then the
    // atomic write works as on any file.
    let empty = compressed(&fs, "empty");
    let mut aw = fs.atomic_start(empty, false).unwrap();
    assert!(fs.compression(empty).unwrap().is_none());
    assert_eq!(fs.stat(empty).unwrap().flags & FS_COMPR_FL, 0);
    let d = data::text(50000, 2);
    fs.atomic_stage_write(empty, &mut aw, 0, &d).unwrap();
    assert!(read_all(&fs, empty, 0).is_empty(), "nothing before the commit");
    fs.atomic_commit(empty, &aw).unwrap();
    assert_eq!(read_all(&fs, empty, d.len()), d);
    fs.unmount().unwrap();
    oracle::fsck_clean_fixing(&img, "atomic writes on compressed files");
}

#[test]
fn compressed_files_on_a_16k_block_volume() {
    const BS: u64 = 16384;
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("blk16.img");
    let opts = MkfsOptions {
        size_bytes: Some(512 * MIB),
        block_size: BS as u32,
        features: parse_features("extra_attr,compression").unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let mut files = Vec::new();
    for (k, (algo, log)) in [
        ("lz4", "2"),
        ("zstd:3", "3"),
        ("lzo", "2"),
        ("lzo-rle", "2"),
        ("lz4:9", "4"),
    ]
    .iter()
    .enumerate()
    {
        let fs = Fs::open_rw(&img, &[]).unwrap();
        let mut o = CompressOptions::default();
        assert!(o.set_option("compress_algorithm", Some(algo)).unwrap());
        assert!(o.set_option("compress_log_size", Some(log)).unwrap());
        assert!(o.set_option("compress_chksum", None).unwrap());
        fs.set_compress_options(o).unwrap();
        let cb = BS << log.parse::<u32>().unwrap();
        let name = format!("f{k}");
        let ino = compressed(&fs, &name);
        let mut want = data::text((12 * cb + 5000) as usize, k as u32 + 1);
        for (i, piece) in want.chunks(30000).enumerate() {
            fs.write(ino, i as u64 * 30000, piece).unwrap();
        }
        fs.writeback().unwrap();
        let c = fs.compression(ino).unwrap().unwrap();
        assert_eq!(
            (c.cluster_blocks as u64, c.compressed_clusters),
            (cb / BS, 12),
            "{algo}: {c:?}"
        );
        assert!(fs.compress_blocks(ino).unwrap() >= 12, "{algo}");
        // Overwrite inside a compressed cluster, a cluster of noise, truncate into a
        // compressed cluster, append past a hole.
        let at = (2 * cb + 777) as usize;
        fs.write(ino, at as u64, b"overwritten in a 16 KiB-block cluster")
            .unwrap();
        want[at..at + 37].copy_from_slice(b"overwritten in a 16 KiB-block cluster");
        let noise = data::noise(cb as usize, k as u64);
        fs.write(ino, 5 * cb, &noise).unwrap();
        want[(5 * cb) as usize..(6 * cb) as usize].copy_from_slice(&noise);
        fs.writeback().unwrap();
        fs.truncate(ino, 9 * cb + 3000).unwrap();
        want.truncate((9 * cb + 3000) as usize);
        let tail = data::text(2 * cb as usize, 99);
        fs.write(ino, 11 * cb, &tail).unwrap();
        want.resize((11 * cb) as usize, 0);
        want.extend_from_slice(&tail);
        fs.writeback().unwrap();
        assert_eq!(read_all(&fs, ino, want.len()), want, "{algo}");
        let c = fs.compression(ino).unwrap().unwrap();
        assert!(c.compressed_clusters >= 9, "{algo}: {c:?}");
        let s = saved(&fs);
        assert!(s.saved_blocks > 0 && s.files == k as u64 + 1, "{s:?}");
        fs.gc(uf2fs_core::gc::GcKind::Foreground).ok();
        fs.write_checkpoint().unwrap();
        fs.unmount().unwrap();
        files.push((ino, want));
    }
    // A file made in a `+c` directory inherits compression on 16 KiB blocks too.
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let d = fs.mkdir(fs.root(), b"c", 0o755, 0, 0).unwrap().ino;
    fs.set_file_flags(d, FS_COMPR_FL, SETTABLE_FLAGS).unwrap();
    let ino = fs.create(d, b"inherits", 0o100644, 0, 0).unwrap().ino;
    let want = data::text(20 * BS as usize, 42);
    fs.write(ino, 0, &want).unwrap();
    fs.writeback().unwrap();
    assert_eq!(fs.compression(ino).unwrap().unwrap().compressed_clusters, 5);
    fs.unmount().unwrap();
    files.push((ino, want));
    let fs = Fs::open(&img, &[]).unwrap();
    for (ino, want) in &files {
        assert_eq!(&read_all(&fs, *ino, want.len()), want, "inode {ino} after a remount");
    }
    drop(fs);
    if let Some(fsck) = oracle::dev_fsck() {
        oracle::dev_fsck_clean(&fsck, &img, "compressed writes on a 16 KiB-block volume");
    }
}
