//! File data (write path step 3) judged from outside: scripted sequences around every
//! boundary of F2FS's inline data and node tree, sparse files at multi-GiB offsets,
//! files sload.f2fs wrote, the dirty-page bounds, a full volume, random sequences
//! against an in-memory model and power cuts around fsync. After each sequence: unmount,
//! `fsck.f2fs -f` on a copy (f2fs-tools 1.15 must be installed: these tests fail, not
//! skip, without it) and a read-only reopen compared byte for byte with the model.

#[path = "common/cuts.rs"]
mod cuts;
#[path = "filedata/support.rs"]
mod support;

use std::path::Path;
use support::*;
use uf2fs_core::device::{CrashDevice, MemDevice};
use uf2fs_core::{Error, Fs, Ino, OpenOptions, Seek, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::Inode;

/// Addresses per direct node.
const D: u64 = 1018;
/// Node ids per indirect node.
const N: u64 = 1018;

/// Data addresses in the inode of a file uf2fs creates: 923 slots less the inline
/// xattr area (50) and, under extra_attr, the extra attributes (36 bytes, 9 slots).
fn addrs_per_inode(v: Variant) -> u64 {
    let features = match v {
        Variant::Uf2fs(f) | Variant::Sload(f) => f,
    };
    if features.contains("extra_attr") {
        923 - 50 - 9
    } else {
        923 - 50
    }
}

/// Bytes of inline data such a file holds (one slot is reserved).
fn max_inline(v: Variant) -> u64 {
    4 * (addrs_per_inode(v) - 1)
}

fn inline_sequence(v: Variant, tmp: &Path) {
    let img = image(tmp, "inline.img", v, 128 * MIB);
    let m = max_inline(v);
    let mut w = World::open(&img);
    for name in [
        "under", "exact", "over", "grow", "trunc", "punch", "falloc", "falloc0", "sparse",
    ] {
        w.create(name);
    }
    w.write("under", 0, m as usize - 1);
    w.write("exact", 0, m as usize);
    w.write("over", 0, m as usize + 1);
    w.write("grow", 0, m as usize);
    w.write("grow", m, 1);
    w.write("trunc", 0, 1000);
    w.apply("trunc", FileOp::Truncate(10));
    w.write("punch", 0, 2000);
    w.apply("punch", FileOp::Punch(100, 200));
    w.write("falloc", 0, 100);
    w.apply("falloc", FileOp::Allocate(0, 8192, true));
    w.apply("falloc0", FileOp::Allocate(0, 100, false));
    w.write("sparse", m - 10, 10);
    w.check("inline writes");
    w.fs.write_checkpoint().unwrap();
    w.apply("trunc", FileOp::Truncate(0));
    w.write("trunc", 100, 5);
    w.apply("trunc", FileOp::Truncate(m));
    w.apply("trunc", FileOp::Truncate(m + 1));
    w.write("trunc", m + 1, 3);
    w.apply("under", FileOp::Truncate(3 * B));
    w.apply("exact", FileOp::Truncate(m - 1));
    let mut w = w.cycle(&format!("{v:?}: inline data, first part"));
    w.write("exact", m - 1, 2);
    w.write("under", 2, 7000);
    w.write("falloc0", 0, 50);
    w.write("sparse", 0, 1);
    w.apply("over", FileOp::Truncate(5));
    w.finish(&format!("{v:?}: inline data"));
}

#[test]
fn inline_data_boundaries() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        inline_sequence(v, tmp.path());
    }
}

fn tree_sequence(v: Variant, tmp: &Path) {
    let img = image(tmp, "tree.img", v, 256 * MIB);
    let a = addrs_per_inode(v);
    let mut w = World::open(&img);
    for name in ["edges", "seq", "holes", "falloc"] {
        w.create(name);
    }
    // Writes across the inode/first direct node, direct/direct and direct/indirect
    // boundaries, each one block either side plus a little.
    for edge in [a, a + D, a + 2 * D, a + 2 * D + D] {
        w.write("edges", (edge - 1) * B + 100, 2 * B as usize);
    }
    w.write("edges", (a + 2 * D + 1) * B, 1);
    // A sequential file past the first indirect node, in 1 MiB writes.
    let len = (a + 2 * D + 50) * B;
    let mut at = 0;
    while at < len {
        let n = (len - at).min(MIB);
        w.write("seq", at, n as usize);
        at += n;
    }
    // Overwrite in place across the boundaries, then again after a checkpoint.
    w.write("seq", (a - 3) * B + 7, (2 * D as usize + 6) * B as usize);
    w.fs.write_checkpoint().unwrap();
    w.write("seq", (a + D - 1) * B, 3 * B as usize);
    w.check("sequential and overwritten");
    // Holes punched across boundaries, one a whole direct node's span.
    w.write("holes", 0, ((a + 2 * D + 10) * B) as usize);
    w.apply("holes", FileOp::Punch((a - 2) * B + 100, 5 * B));
    w.apply("holes", FileOp::Punch(a * B + B, D * B));
    w.apply("holes", FileOp::Punch((a + 2 * D - 1) * B, 2 * B + 1));
    w.apply("holes", FileOp::Punch(10, 20));
    // Reservations across every boundary, partly written, partly past the end.
    w.apply("falloc", FileOp::Allocate((a - 5) * B, (2 * D + 10) * B, false));
    w.write("falloc", (a + D) * B - 3, 6);
    w.apply("falloc", FileOp::Allocate((a + 2 * D + 5) * B, 30 * B, true));
    let mut w = w.cycle(&format!("{v:?}: node tree, first part"));
    // Truncate down step by step across the boundaries, then up again.
    for size in [
        (a + 2 * D + 1) * B - 7,
        (a + 2 * D) * B,
        (a + D) * B + 3,
        (a + D) * B,
        a * B + 1,
        a * B - 1,
        5000,
        0,
    ] {
        w.apply("seq", FileOp::Truncate(size));
    }
    w.apply("seq", FileOp::Truncate((a + 2 * D + 3) * B));
    w.write("seq", (a + 2 * D + 3) * B - 10, 20);
    w.apply("falloc", FileOp::Truncate((a + 10) * B + 1));
    w.apply("holes", FileOp::Truncate((a + D + 500) * B));
    w.apply("edges", FileOp::Truncate(a * B));
    w.finish(&format!("{v:?}: node tree"));
}

#[test]
fn node_tree_boundaries() {
    let tmp = tempfile::tempdir().unwrap();
    for v in VARIANTS {
        tree_sequence(v, tmp.path());
    }
}

#[test]
fn sparse_writes_at_multi_gib_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let v = Variant::Uf2fs(EXTRA);
    let img = image(tmp.path(), "far.img", v, GIB);
    let a = addrs_per_inode(v);
    let second_indirect = a + 2 * D + D * N;
    let double_indirect = second_indirect + D * N;
    assert!(second_indirect * B < 41 * GIB / 10 && double_indirect * B > 79 * GIB / 10);
    let mut w = World::open(&img);
    w.create("far");
    w.create("last");
    // ~4.1 GiB, across a direct node boundary inside the second indirect node.
    let at = (second_indirect + 27 * D - 1) * B + 5;
    w.write("far", at, 2 * B as usize);
    w.write("far", 10, 10);
    // ~8.1 GiB: the double-indirect node, two of its indirect nodes.
    let dind = (double_indirect + 3 * D + 1) * B;
    w.write("far", dind + 100 * MIB, 3 * B as usize);
    w.write("far", dind, 5);
    w.check("far writes");
    w.fs.write_checkpoint().unwrap();
    w.apply("far", FileOp::Punch(dind, 4096));
    w.write("far", dind + 100 * MIB + B, 1);
    // The very last block an F2FS file has, and one byte past it.
    let ino = w.ino("last");
    let max = (double_indirect + D * N * N) * B;
    assert_eq!(w.fs.write(ino, max - 3, b"end!").unwrap(), 3);
    let mut buf = [0u8; 8];
    assert_eq!(w.fs.read(ino, max - 3, &mut buf).unwrap(), 3);
    assert_eq!(&buf[..3], b"end");
    assert!(matches!(w.fs.write(ino, max, b"x"), Err(Error::FileTooBig(_))));
    assert!(matches!(w.fs.truncate(ino, max + 1), Err(Error::FileTooBig(_))));
    w.fs.truncate(ino, 100).unwrap();
    w.files.get_mut("last").unwrap().1.size = 100;
    let mut w = w.cycle("multi-GiB offsets");
    w.apply("far", FileOp::Truncate(dind + 2 * B));
    w.apply("far", FileOp::Truncate(at + 3 * B));
    w.apply("far", FileOp::Truncate(at + 7));
    w.apply(
        "far",
        FileOp::Allocate(double_indirect * B + 5 * D * N * B, 3 * B, true),
    );
    w.write("far", 100 * 1024, 10);
    w.apply("far", FileOp::Truncate(100 * 1024 + 3));
    w.finish("multi-GiB offsets truncated back");
}

fn sload_sequence(v: Variant, tmp: &Path) {
    let img = image(tmp, "sload.img", v, 128 * MIB);
    let mut w = World::open(&img);
    w.adopt("medium", &medium_contents());
    w.adopt("small", b"hello\n");
    w.adopt("empty", b"");
    w.write("medium", 100_000, 5000);
    w.write("medium", 299_990, 20_000);
    w.apply("medium", FileOp::Punch(4096 * 3 + 5, 4096 * 4));
    w.write("small", 3, 10);
    w.write("empty", 20_000, 10);
    w.check("sload files changed");
    let mut w = w.cycle(&format!("{v:?}: sload files, first part"));
    w.apply("medium", FileOp::Truncate(150_001));
    w.apply("small", FileOp::Truncate(1));
    w.apply("empty", FileOp::Truncate(0));
    w.finish(&format!("{v:?}: sload files"));
}

/// `SEEK_DATA` and `SEEK_HOLE` as Linux F2FS answers them (`f2fs_seek_block`): blocks
/// with addresses are data, and reserved ones (`NEW_ADDR`) only while a dirty page waits
/// for them; only blocks without an address are holes, so preallocated blocks are
/// neither; missing nodes are skipped whole; inline files are all data; `None`
/// (`ENXIO`) at or past the end. The same answers after a checkpoint and on a read-only
/// reopen (written pages then have addresses).
#[test]
fn seek_data_and_hole_as_f2fs_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let v = Variant::Uf2fs(EXTRA);
    let img = image(tmp.path(), "seek.img", v, GIB);
    let far = addrs_per_inode(v) + 2 * D + 5 * D;
    let mut w = World::open(&img);
    w.create("inline");
    w.write("inline", 0, 100);
    w.create("sparse");
    // Data at block 5, a preallocated range 40..50 (one block of it written), data in
    // a direct node under the first indirect node, and a hole to the end.
    w.write("sparse", 5 * B, B as usize);
    w.apply("sparse", FileOp::Allocate(40 * B, 10 * B, false));
    w.write("sparse", 45 * B + 10, 20);
    w.write("sparse", far * B, 2 * B as usize);
    w.apply("sparse", FileOp::Truncate((far + 10) * B));
    let size = (far + 10) * B;
    let check = |fs: &Fs, what: &str| {
        let seek = |name: &str, off: u64, whence| {
            let ino = fs.lookup(fs.root(), name.as_bytes()).unwrap();
            fs.seek(ino, off, whence).unwrap()
        };
        let data = |name, off| seek(name, off, Seek::Data);
        let hole = |name, off| seek(name, off, Seek::Hole);
        assert_eq!(data("inline", 0), Some(0), "{what}");
        assert_eq!(data("inline", 99), Some(99), "{what}");
        assert_eq!(hole("inline", 7), Some(100), "{what}");
        assert_eq!(data("inline", 100), None, "{what}");
        assert_eq!(hole("inline", 100), None, "{what}");
        assert_eq!(data("sparse", 0), Some(5 * B), "{what}");
        assert_eq!(data("sparse", 5 * B + 7), Some(5 * B + 7), "{what}");
        assert_eq!(hole("sparse", 0), Some(0), "{what}");
        assert_eq!(hole("sparse", 5 * B + 3), Some(6 * B), "{what}");
        // Preallocated blocks are not data (only the written one is) and not holes.
        assert_eq!(data("sparse", 6 * B), Some(45 * B), "{what}");
        assert_eq!(hole("sparse", 40 * B), Some(50 * B), "{what}");
        assert_eq!(data("sparse", 46 * B), Some(far * B), "{what}");
        assert_eq!(hole("sparse", far * B + 1), Some((far + 2) * B), "{what}");
        assert_eq!(data("sparse", (far + 2) * B), None, "{what}");
        assert_eq!(hole("sparse", size - 1), Some(size - 1), "{what}");
        assert_eq!(hole("sparse", size), None, "{what}");
        assert_eq!(data("sparse", u64::MAX), None, "{what}");
        let root = fs.root();
        assert_eq!(fs.seek(root, 0, Seek::Data).unwrap_err().errno(), 22, "{what}");
    };
    check(&w.fs, "dirty pages");
    w.fs.write_checkpoint().unwrap();
    check(&w.fs, "after a checkpoint");
    w.finish("seek");
    check(&Fs::open(&img, &[]).unwrap(), "read-only reopen");
}

/// The inode block of `ino` as written (after a checkpoint) and its address slots.
fn raw_slots(fs: &Fs, ino: Ino, n: usize) -> (Inode, Vec<u32>) {
    let block = fs.read_raw_block(fs.node_blkaddr(ino).unwrap()).unwrap();
    let inode = Inode::decode(&block, fs.superblock()).unwrap();
    let slots = (0..n).map(|s| inode.addr(&block, s)).collect();
    (inode, slots)
}

/// fallocate ZERO_RANGE as F2FS's `f2fs_zero_range` leaves a file: the partial blocks
/// at the ends written with zeros (a hole's block allocated), every whole block of the
/// range a reservation (`NEW_ADDR`, the written block given back, `i_blocks` as
/// before), the size grown to the range's end unless KEEP_SIZE (which marks the inode
/// instead), an inline file converted; reads give zeros there, SEEK_DATA skips the
/// reservations; fsck clean.
#[test]
fn zero_range_as_f2fs_leaves_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let v = Variant::Uf2fs(EXTRA);
    let img = image(tmp.path(), "zero.img", v, 256 * MIB);
    let mut w = World::open(&img);
    w.create("f");
    w.write("f", 0, 8 * B as usize);
    w.fs.write_checkpoint().unwrap();
    let ino = w.ino("f");
    let (before, _) = raw_slots(&w.fs, ino, 12);
    // From the middle of block 1 to the middle of block 5, and past the end into a hole
    // (block 10 half covered) with KEEP_SIZE.
    w.apply("f", FileOp::Zero(B + 100, 4 * B, false));
    w.apply("f", FileOp::Zero(7 * B, 3 * B + 10, true));
    w.fs.write_checkpoint().unwrap();
    let (after, slots) = raw_slots(&w.fs, ino, 12);
    let written = |a: u32| a != NULL_ADDR && a != NEW_ADDR;
    assert!(written(slots[0]) && written(slots[1]) && written(slots[5]), "{slots:?}");
    assert_eq!(&slots[2..5], &[NEW_ADDR; 3], "{slots:?}");
    assert!(written(slots[6]), "{slots:?}");
    assert_eq!(&slots[7..10], &[NEW_ADDR; 3], "{slots:?}");
    assert!(
        written(slots[10]),
        "the partial block past the end is written: {slots:?}"
    );
    assert_eq!(slots[11], NULL_ADDR);
    assert_eq!(after.size, 8 * B, "KEEP_SIZE kept the size");
    assert_ne!(after.advise & 0x10, 0, "FADVISE_KEEP_SIZE_BIT");
    // 8 data blocks before; now 9 (blocks 0..=10 less none: 8 kept or reserved,
    // blocks 8, 9 reserved, 10 written).
    assert_eq!(after.blocks, before.blocks + 3);
    assert_eq!(w.fs.seek(ino, B, Seek::Data).unwrap(), Some(B));
    assert_eq!(w.fs.seek(ino, 2 * B, Seek::Data).unwrap(), Some(5 * B));
    assert_eq!(w.fs.seek(ino, 2 * B, Seek::Hole).unwrap(), Some(8 * B));
    // Without KEEP_SIZE the size grows to the range's end.
    w.apply("f", FileOp::Zero(20 * B, 10, false));
    assert_eq!(w.fs.stat(ino).unwrap().size, 20 * B + 10);
    // An inline file is converted, even for a range inside it.
    w.create("small");
    w.write("small", 0, 300);
    w.apply("small", FileOp::Zero(10, 20, true));
    w.fs.write_checkpoint().unwrap();
    let (small, slots) = raw_slots(&w.fs, w.ino("small"), 1);
    assert_eq!(small.inline & uf2fs_format::node::F2FS_INLINE_DATA, 0);
    assert!(written(slots[0]), "{slots:?}");
    assert_eq!(small.size, 300);
    // Through the node tree: a range across a direct node boundary, twice (the second
    // time over reservations), then written over.
    let a = addrs_per_inode(v);
    w.create("big");
    w.write("big", (a - 3) * B, 10 * B as usize);
    w.apply("big", FileOp::Zero((a - 2) * B, 6 * B, false));
    w.apply("big", FileOp::Zero((a - 4) * B, 9 * B, false));
    w.write("big", a * B + 7, 100);
    w.apply("big", FileOp::Zero(3 * MIB, 2 * MIB + 5, false));
    w.finish("zero range");
}

/// statfs and fallocate agree as on Linux F2FS (fstests generic/103 with FSTYP=f2fs):
/// the free space statfs reports less 512 KiB and F2FS's node tree (one direct node per
/// 1018 blocks: fstests leaves a thousandth of the space for it) can be fallocated in
/// one file; the free space less only 512 KiB cannot (the nodes count as used blocks,
/// as in F2FS), and what that failure reserved stays, with the size covering it.
#[test]
fn statfs_and_fallocate_agree_as_f2fs() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "full.img", Variant::Uf2fs(EXTRA), GIB);
    let mut w = World::open(&img);
    let st = w.fs.statfs().unwrap();
    let avail = st.blocks_avail * u64::from(st.block_size);
    let kib = avail / 1024 - 512 - avail / 1_024_000;
    w.create("fits");
    w.apply("fits", FileOp::Allocate(0, kib * 1024, false));
    let left = w.fs.statfs().unwrap().blocks_avail;
    assert!(left * B < 2 * MIB, "{left} blocks left");
    w.apply("fits", FileOp::Truncate(0));
    w.fs.write_checkpoint().unwrap();
    let avail = w.fs.statfs().unwrap().blocks_avail * B;
    let ino = w.create("too_big");
    let r = w.fs.fallocate(ino, 0, avail - 512 * 1024, 0);
    assert_eq!(r.map_err(|e| e.errno()), Err(28), "ENOSPC");
    let size = w.fs.stat(ino).unwrap().size;
    assert!(size > avail / 2 && size % B == 0, "size {size} of {avail}");
    w.files.get_mut("too_big").unwrap().1.size = size;
    w.finish("statfs and fallocate");
}

#[test]
fn files_sload_wrote_are_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    for v in [Variant::Sload(""), Variant::Sload(EXTRA)] {
        sload_sequence(v, tmp.path());
    }
}

#[test]
fn large_writes_pass_the_dirty_page_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "bounds.img", Variant::Uf2fs(""), 256 * MIB);
    let mut w = World::open(&img);
    w.create("big");
    for i in 0..6 {
        w.create(&format!("f{i}"));
    }
    // 48 MiB in 1 MiB writes, with six files written in between: every bound is
    // crossed many times.
    for round in 0..3u64 {
        for k in 0..48u64 {
            w.write("big", k * MIB, MIB as usize);
            let f = format!("f{}", k % 6);
            w.write(&f, (round * 48 + k) * 64 * 1024, 64 * 1024);
        }
        // Three rounds of 48 MiB overwrite more than the volume holds: segments the
        // old copies leave become free only through checkpoints.
        w.check(&format!("round {round}"));
    }
    let stats = w.fs.writeback_stats();
    assert_eq!(stats.len(), 1);
    assert!(stats[0].pages > 10_000, "{stats:?}");
    w.finish("48 MiB written three times");
}

#[test]
fn a_full_volume_gives_short_writes_and_stays_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "full.img", Variant::Uf2fs(""), 64 * MIB);
    let mut w = World::open(&img);
    let ino = w.create("fill");
    w.create("other");
    let piece = pattern(7, 0, MIB as usize);
    let mut at = 0u64;
    loop {
        match w.fs.write(ino, at, &piece) {
            Ok(n) => {
                w.files.get_mut("fill").unwrap().1.write(at, &piece[..n]);
                at += n as u64;
                if n < piece.len() {
                    break;
                }
            }
            Err(e) if e.is_no_space() => break,
            Err(e) => panic!("{e}"),
        }
        assert!(at < GIB, "never ran out of space");
    }
    // 64 MiB volumes keep 13 of their 24 main segments in reserve and have 16 MiB of
    // user blocks: about 10 MiB fit.
    assert!(at > 8 * MIB, "only {at} bytes fit");
    assert!(matches!(w.fs.write(ino, at, &piece), Err(ref e) if e.is_no_space()));
    let other = w.ino("other");
    assert!(matches!(w.fs.fallocate(other, 0, 64 * MIB, 0), Err(ref e) if e.is_no_space()));
    // The blocks reserved before space ran out stay, with the size covering them.
    let size = w.fs.stat(other).unwrap().size;
    w.files.get_mut("other").unwrap().1.size = size;
    w.check("full");
    w.fs.write_checkpoint().unwrap();
    w.apply("fill", FileOp::Truncate(at / 2));
    w.apply("other", FileOp::Truncate(0));
    w.fs.write_checkpoint().unwrap();
    w.write("other", 0, (at / 4) as usize);
    w.finish(&format!("a volume filled with {at} bytes"));
}

#[test]
fn refusals_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "refuse.img", Variant::Uf2fs(""), 64 * MIB);
    let mut w = World::open(&img);
    let ino = w.create("f");
    w.write("f", 0, 10_000);
    let fs = &w.fs;
    let dir = fs.mkdir(fs.root(), b"d", 0o755, 0, 0).unwrap().ino;
    let fifo = fs
        .mknod(
            fs.root(),
            b"p",
            uf2fs_core::FileKind::Fifo.mode_bits() | 0o644,
            (0, 0),
            0,
            0,
        )
        .unwrap()
        .ino;
    let errno = |r: uf2fs_core::Result<()>| r.map_err(|e| e.errno()).err();
    assert_eq!(errno(fs.write(dir, 0, b"x").map(|_| ())), Some(21));
    assert_eq!(errno(fs.write(fifo, 0, b"x").map(|_| ())), Some(22));
    assert_eq!(errno(fs.truncate(dir, 0)), Some(21));
    assert_eq!(errno(fs.fallocate(ino, 0, 0, 0)), Some(22));
    assert_eq!(errno(fs.write(99_999, 0, b"x").map(|_| ())), Some(2));
    for mode in [
        FALLOC_FL_PUNCH_HOLE,
        0x10 | FALLOC_FL_PUNCH_HOLE,
        0x08 | FALLOC_FL_KEEP_SIZE,
        0x20,
        0x80,
    ] {
        match fs.fallocate(ino, 0, 4096, mode) {
            Err(e @ Error::Unsupported { .. }) => {
                assert_eq!(e.errno(), 95);
                assert!(e.to_string().contains(&format!("{mode:#x}")), "{e}");
            }
            r => panic!("mode {mode:#x}: {r:?}"),
        }
    }
    assert_eq!(fs.write(ino, 5, b"").unwrap(), 0);
    w.finish("refusals");
    let fs = Fs::open(&img, &[]).unwrap();
    assert_eq!(errno(fs.write(ino, 0, b"x").map(|_| ())), Some(30));
    assert_eq!(errno(fs.truncate(ino, 0)), Some(30));
    assert_eq!(errno(fs.fsync(ino, false)), Some(30));
}

#[test]
fn threads_write_and_read_their_own_files() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "threads.img", Variant::Uf2fs(EXTRA), 256 * MIB);
    let mut w = World::open(&img);
    let names: Vec<String> = (0..4).map(|t| format!("t{t}")).collect();
    let inos: Vec<u32> = names.iter().map(|n| w.create(n)).collect();
    std::thread::scope(|s| {
        for (t, &ino) in inos.iter().enumerate() {
            let fs = &w.fs;
            let neighbour = inos[(t + 1) % inos.len()];
            s.spawn(move || {
                let mut back = vec![0u8; 150_000];
                for k in 0..40u64 {
                    let off = (k * 7919 % 40) * 100_000 + t as u64;
                    let data = pattern(t as u64, off, 150_000);
                    assert_eq!(fs.write(ino, off, &data).unwrap(), data.len());
                    // Read back while others write, write back and checkpoint.
                    assert_eq!(fs.read(ino, off, &mut back).unwrap(), back.len());
                    assert!(back == data, "thread {t} step {k}: read back differs");
                    fs.read(neighbour, off, &mut back).unwrap();
                    if k % 13 == 0 {
                        fs.fsync(ino, false).unwrap();
                    }
                    if k % 17 == 0 {
                        fs.truncate(ino, off + 1000).unwrap();
                    }
                }
            });
        }
    });
    // Replay each thread's operations on its model (threads only touch their file).
    for (t, name) in names.iter().enumerate() {
        let m = &mut w.files.get_mut(name).unwrap().1;
        for k in 0..40u64 {
            let off = (k * 7919 % 40) * 100_000 + t as u64;
            m.write(off, &pattern(t as u64, off, 150_000));
            if k % 17 == 0 {
                m.truncate(off + 1000);
            }
        }
    }
    w.finish("four threads");
}

/// Random operations on one file against the model.
mod random {
    use super::*;
    use proptest::prelude::*;

    /// Offsets cluster around the boundaries of both layouts (with and without extra
    /// attributes): inline area, the inode's addresses, the two direct nodes, the
    /// first indirect node.
    fn offset() -> impl Strategy<Value = u64> {
        let mut edges = vec![0];
        for v in [Variant::Uf2fs(""), Variant::Uf2fs(EXTRA)] {
            let a = addrs_per_inode(v);
            edges.extend([max_inline(v), a * B, (a + D) * B, (a + 2 * D) * B]);
        }
        let top = (addrs_per_inode(Variant::Uf2fs("")) + 2 * D + 40) * B;
        prop_oneof![
            (0..edges.len(), -9000i64..9000).prop_map(move |(e, d)| (edges[e] as i64 + d).max(0) as u64),
            0..top,
        ]
    }

    fn len() -> impl Strategy<Value = u64> {
        prop_oneof![1..64u64, 1..20_000u64, 1..3 * MIB]
    }

    #[derive(Debug, Clone)]
    enum Step {
        Op(FileOp),
        Read(u64, u64),
        Checkpoint,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            5 => (offset(), len(), any::<u8>()).prop_map(|(o, l, s)| Step::Op(FileOp::Write(o, pattern(s as u64, o, l as usize)))),
            2 => offset().prop_map(|s| Step::Op(FileOp::Truncate(s))),
            2 => (offset(), len()).prop_map(|(o, l)| Step::Op(FileOp::Punch(o, l))),
            1 => (offset(), len(), any::<bool>()).prop_map(|(o, l, k)| Step::Op(FileOp::Allocate(o, l, k))),
            2 => (offset(), len(), any::<bool>()).prop_map(|(o, l, k)| Step::Op(FileOp::Zero(o, l, k))),
            2 => (offset(), len()).prop_map(|(o, l)| Step::Read(o, l)),
            1 => Just(Step::Checkpoint),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

        #[test]
        fn random_file_operations_match_the_model(steps in proptest::collection::vec(step(), 1..40), extra in any::<bool>(), case in 0u32..1000) {
            let tmp = tempfile::tempdir().unwrap();
            let v = Variant::Uf2fs(if extra { EXTRA } else { "" });
            let img = image(tmp.path(), "random.img", v, 128 * MIB);
            let mut w = World::open(&img);
            let ino = w.create("f");
            for s in &steps {
                match s {
                    Step::Op(op) => w.apply("f", op.clone()),
                    Step::Read(o, l) => {
                        let mut buf = vec![0u8; *l as usize];
                        let n = w.fs.read(ino, *o, &mut buf).unwrap();
                        prop_assert_eq!(&buf[..n], &w.files["f"].1.read(*o, *l)[..]);
                    }
                    Step::Checkpoint => {
                        w.fs.write_checkpoint().unwrap();
                    }
                }
            }
            w.check("random steps");
            // fsck (slow) on about one case in four.
            if case % 4 == 0 {
                w.finish(&format!("random steps {steps:?}"));
            } else {
                let files = w.files.clone();
                w.fs.unmount().unwrap();
                check_on(&Fs::open(&img, &[]).unwrap(), &files, "random steps, reopened");
            }
        }
    }
}

/// Batches of file operations each ended by an fsync of `b`, on a device that records
/// every write; after a power cut at any point the image opens read-write (roll-forward
/// recovery replays what fsync wrote), every file reads back, `b` holds its contents as
/// of the fsync once the fsync's flush is durable, and after an unmount the image is
/// fsck-clean.
#[test]
fn power_cuts_keep_every_fsynced_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let base = image(tmp.path(), "pc.img", Variant::Uf2fs(""), 64 * MIB);
    let dev = CrashDevice::new(std::fs::read(&base).unwrap(), 1 << 16);
    let fs = Fs::open_device_with(Box::new(dev.clone()), "crash", OpenOptions { read_write: true }).unwrap();
    let mut w = World {
        fs,
        img: base.clone(),
        files: Default::default(),
    };
    w.create("a");
    w.create("b");
    w.fs.fsync(w.ino("a"), false).unwrap();
    let batches: Vec<Vec<(&str, FileOp)>> = vec![
        vec![
            ("a", FileOp::Write(0, pattern(1, 0, 3000))),
            ("b", FileOp::Write(0, pattern(2, 0, 6 * MIB as usize))),
        ],
        vec![
            ("a", FileOp::Write(2000, pattern(3, 2000, 9000))),
            ("b", FileOp::Write(MIB, pattern(4, MIB, 2 * MIB as usize))),
            ("b", FileOp::Punch(100_000, 300_000)),
        ],
        vec![
            ("a", FileOp::Truncate(5)),
            ("b", FileOp::Truncate(5 * MIB + 3)),
            ("b", FileOp::Allocate(8 * MIB, MIB, false)),
            ("a", FileOp::Write(4 * MIB, pattern(5, 4 * MIB, 100))),
        ],
    ];
    let mut tried = 0;
    for (k, batch) in batches.into_iter().enumerate() {
        dev.settle();
        for (name, op) in batch {
            w.apply(name, op);
        }
        w.fs.fsync(w.ino("b"), k % 2 == 0).unwrap();
        let done = dev.flush_count();
        let after = w.files.clone();
        for (cut, keep) in cuts::cuts(&dev, 0x9e37_79b9_7f4a_7c15) {
            let img = tmp.path().join("cut.img");
            std::fs::write(&img, dev.image_after_cut(cut, &|i| keep[i])).unwrap();
            let what = format!("batch {k}, cut after flush {cut} of {done}, kept {keep:?}");
            let fs = Fs::open_rw(&img, &[]).unwrap_or_else(|e| panic!("{what}: {e}"));
            // Whatever is there reads (a file never made durable may be missing).
            for name in after.keys() {
                let Ok(ino) = fs.lookup(fs.root(), name.as_bytes()) else {
                    continue;
                };
                let size = fs.stat(ino).unwrap_or_else(|e| panic!("{what}: {name}: {e}")).size;
                let mut buf = vec![0u8; size.min(16 * MIB) as usize];
                fs.read(ino, 0, &mut buf)
                    .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
            }
            if cut >= done {
                let (ino, model) = &after["b"];
                check_file(&fs, *ino, model, &format!("{what}: b"));
            }
            fs.unmount().unwrap();
            fsck_clean_in_place(&img, &what);
            tried += 1;
        }
    }
    let fs = Fs::open_device_with(
        Box::new(MemDevice::new(dev.image_now())),
        "after",
        OpenOptions { read_write: true },
    )
    .unwrap();
    let (ino, model) = &w.files["b"];
    check_file(&fs, *ino, model, "after the last fsync: b");
    println!("{tried} cuts checked");
}

/// SHA-256 of `bytes` in hex (through `sha256sum`, to keep the tests free of hashing
/// crates).
fn sha256(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cannot run sha256sum");
    child.stdin.take().unwrap().write_all(bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)[..64].to_string()
}

/// Not a check by itself: with `$UF2FS_FD_IMAGE` set, writes an image of files uf2fs
/// wrote (inline, converted, across every node boundary, fallocated, punched, sparse at
/// 4.1 and 8.1 GiB) and, next to it, a `kernel-check.sh verify` manifest with each
/// file's size and hash (chunk hashes for the sparse giants), so that Linux F2FS can
/// read it back: `scripts/kernel-check.sh verify IMG IMG.manifest`.
/// `$UF2FS_FD_FEATURES` picks mkfs features.
#[test]
#[ignore]
fn kernel_fixture() {
    let Ok(out) = std::env::var("UF2FS_FD_IMAGE") else {
        return;
    };
    let features = std::env::var("UF2FS_FD_FEATURES").unwrap_or_default();
    let v = Variant::Uf2fs(Box::leak(features.into_boxed_str()));
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), "fixture.img", v, 512 * MIB);
    let a = addrs_per_inode(v);
    let mut w = World::open(&img);
    for name in [
        "inline",
        "exact",
        "converted",
        "edges",
        "falloc",
        "holes",
        "clip.mp4",
        "far",
    ] {
        w.create(name);
    }
    w.write("inline", 0, 1000);
    w.write("exact", 0, max_inline(v) as usize);
    w.write("converted", 0, 100);
    w.write("converted", 100, 5000);
    for edge in [a, a + D, a + 2 * D] {
        w.write("edges", (edge - 1) * B + 100, 2 * B as usize);
    }
    w.apply("falloc", FileOp::Allocate(0, (a + 2 * D + 9) * B, false));
    w.write("falloc", (a + 7) * B + 3, 20_000);
    w.apply("falloc", FileOp::Allocate((a + 2 * D + 9) * B, 64 * B, true));
    w.write("holes", 0, 3 * MIB as usize);
    w.apply("holes", FileOp::Punch(5000, 600_000));
    w.apply("holes", FileOp::Truncate(2 * MIB + 77));
    w.write("clip.mp4", 0, 2 * MIB as usize);
    let far = [
        (a + 2 * D + D * N + 5 * D - 1) * B,
        (a + 2 * D + 2 * D * N + 50_000) * B,
    ];
    for at in far {
        w.write("far", at, 3 * B as usize);
    }
    let mut manifest = String::new();
    for (name, (_, m)) in &w.files {
        let (sha, chunks) = if m.size <= 64 * MIB {
            (sha256(&m.read(0, m.size)), "-".to_string())
        } else {
            let c: Vec<String> = far
                .iter()
                .map(|&at| {
                    let (off, len) = (at / B * B - B, 5 * B);
                    format!("{off}:{len}:{}", sha256(&m.read(off, len)))
                })
                .collect();
            ("-".to_string(), c.join(","))
        };
        manifest.push_str(&format!(
            "/{name}\tf\t0644\t1\t0\t0\t{}\t-\t{sha}\t-\t-\t{chunks}\n",
            m.size
        ));
    }
    w.finish("kernel fixture");
    std::fs::copy(&img, &out).unwrap();
    std::fs::write(format!("{out}.manifest"), manifest).unwrap();
}

/// Not a check by itself: with `$UF2FS_FD_KERNEL_IMAGE` naming an image Linux F2FS
/// wrote (say, the fixture after `kernel-check.sh mount --rw`), changes every regular
/// file of its root up to 64 MiB with uf2fs (overwrite, append, punch, truncate, a
/// reservation), then unmounts and judges the result with fsck and the model.
#[test]
#[ignore]
fn kernel_image_round_trip() {
    let Ok(src) = std::env::var("UF2FS_FD_KERNEL_IMAGE") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("roundtrip.img");
    std::fs::copy(&src, &img).unwrap();
    let mut w = World::open(&img);
    let entries = w.fs.read_dir(w.fs.root()).unwrap();
    let mut names = Vec::new();
    for e in entries.iter().filter(|e| e.kind == uf2fs_core::FileKind::File) {
        let size = w.fs.stat(e.ino).unwrap().size;
        if size > 64 * MIB {
            continue;
        }
        let mut bytes = vec![0u8; size as usize];
        assert_eq!(w.fs.read(e.ino, 0, &mut bytes).unwrap(), bytes.len());
        let name = String::from_utf8_lossy(&e.name).into_owned();
        w.adopt(&name, &bytes);
        names.push((name, size));
    }
    for (k, (name, size)) in names.iter().enumerate() {
        w.write(name, size / 2, 10_000);
        w.write(name, size + 10_000, 5000);
        w.apply(name, FileOp::Punch(size / 3, 9000));
        w.apply(name, FileOp::Allocate(size + 100_000, 3 * B, k % 2 == 0));
        w.apply(name, FileOp::Truncate(size * 3 / 4 + k as u64));
    }
    w.finish(&format!("{} kernel-written files changed", names.len()));
}
