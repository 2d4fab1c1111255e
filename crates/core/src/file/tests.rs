//! File data from inside the crate: which log each block lands in, and `i_blocks`
//! exactly as the kernel counts it (fsck checks it too; these name the figure).

use crate::mkfs::{mkfs, MkfsOptions};
use crate::segment::LogType;
use crate::{Fs, Ino, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
use uf2fs_format::consts::{BLOCKS_PER_SEG, NEW_ADDR};

const B: u64 = uf2fs_format::consts::BLOCK_SIZE as u64;
const D: u64 = uf2fs_format::consts::ADDRS_PER_BLOCK as u64;

fn fresh(dir: &std::path::Path) -> Fs {
    let img = dir.join("unit.img");
    let opts = MkfsOptions {
        size_bytes: Some(256 << 20),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    Fs::open_rw(&img, &[]).unwrap()
}

/// The segment of main-area block `addr`.
fn segno(fs: &Fs, addr: u64) -> u32 {
    ((addr - fs.superblock().main_blkaddr as u64) / BLOCKS_PER_SEG as u64) as u32
}

fn blocks(fs: &Fs, ino: Ino) -> u64 {
    fs.inode(ino).unwrap().inode.blocks
}

#[test]
fn blocks_and_nodes_go_to_their_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = fresh(tmp.path());
    let root = fs.root();
    let cold = fs.create(root, b"clip.mp4", 0o644, 0, 0).unwrap().ino;
    let warm = fs.create(root, b"notes", 0o644, 0, 0).unwrap().ino;
    let a = fs.inode(warm).unwrap().inode.addrs_per_inode() as u64;
    fs.write(cold, 0, &[1; 3 * B as usize]).unwrap();
    fs.write(warm, 0, &[2; 3 * B as usize]).unwrap();
    // A block under the first indirect node: indirect and direct node made.
    fs.write(warm, (a + 2 * D) * B, &[3; 10]).unwrap();
    fs.write_checkpoint().unwrap();
    // The log positions, read with the segment lock released again (taking an inode's
    // node under it would break the lock order: crate::lockrank).
    let log_segs: Vec<u32> = {
        let segs = fs.segments().unwrap();
        LogType::ALL.iter().map(|&t| segs.log(t).segno).collect()
    };
    let log_seg = |t: LogType| log_segs[t as usize];
    let c = fs.inode(cold).unwrap();
    let w = fs.inode(warm).unwrap();
    assert_eq!(segno(&fs, c.inode.addr(&c.block, 0) as u64), log_seg(LogType::ColdData));
    assert_eq!(segno(&fs, w.inode.addr(&w.block, 2) as u64), log_seg(LogType::WarmData));
    let node_seg = |nid: u32| segno(&fs, fs.node_blkaddr(nid).unwrap());
    assert_eq!(node_seg(w.inode.nids[2]), log_seg(LogType::ColdNode), "indirect node");
    assert_eq!(node_seg(warm), log_seg(LogType::WarmNode), "file inode");
    let ind = fs.nodes().read(fs.device(), w.inode.nids[2], warm).unwrap();
    let dnode = uf2fs_format::le::u32_at(&ind, 0);
    assert_eq!(node_seg(dnode), log_seg(LogType::WarmNode), "direct node of a file");
}

#[test]
fn i_blocks_count_the_inode_nodes_and_every_address() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = fresh(tmp.path());
    let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let a = fs.inode(ino).unwrap().inode.addrs_per_inode() as u64;
    fs.write(ino, 0, b"inline").unwrap();
    assert_eq!(blocks(&fs, ino), 1, "inline data lives in the inode");
    fs.write(ino, (a + 2 * D) * B, b"x").unwrap();
    // Inode, block 0 (converted), the data block, an indirect and a direct node.
    assert_eq!(blocks(&fs, ino), 5);
    fs.fallocate(ino, 10 * B, 10 * B, FALLOC_FL_KEEP_SIZE).unwrap();
    assert_eq!(blocks(&fs, ino), 15);
    let i = fs.inode(ino).unwrap();
    assert_eq!(i.inode.addr(&i.block, 12), NEW_ADDR, "reserved, not written");
    fs.fallocate(ino, 12 * B, 5 * B, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
        .unwrap();
    assert_eq!(blocks(&fs, ino), 10);
    fs.write_checkpoint().unwrap();
    assert_eq!(blocks(&fs, ino), 10, "reservations survive a checkpoint");
    fs.truncate(ino, a * B + 1).unwrap();
    // The indirect subtree goes (3 blocks); block a is a hole.
    assert_eq!(blocks(&fs, ino), 7);
    fs.truncate(ino, 0).unwrap();
    assert_eq!(blocks(&fs, ino), 1);
    assert_eq!(fs.stat(ino).unwrap().blocks, 0);
}

/// The bytes of `ino` from 0 to its size.
fn contents(fs: &Fs, ino: Ino) -> Vec<u8> {
    let size = fs.stat(ino).unwrap().size;
    let mut buf = vec![0u8; size as usize];
    let n = fs.read(ino, 0, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn move_range_moves_blocks_and_leaves_a_hole() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = fresh(tmp.path());
    let src = fs.create(fs.root(), b"src", 0o644, 0, 0).unwrap().ino;
    let dst = fs.create(fs.root(), b"dst", 0o644, 0, 0).unwrap().ino;
    let data: Vec<u8> = (0..600 * B as usize)
        .map(|i| (i / B as usize) as u8 ^ (i % 251) as u8)
        .collect();
    fs.write(src, 0, &data).unwrap();
    // Half of it durable (a checkpoint), half dirty: both kinds move.
    fs.write_checkpoint().unwrap();
    fs.write(src, 300 * B, &data[300 * B as usize..]).unwrap();
    fs.write(dst, 0, &[7u8; 3 * B as usize]).unwrap();
    // A hole in the source leaves the target's block as it was.
    fs.fallocate(src, 2 * B, B, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
        .unwrap();
    let moved = fs.move_range(src, B, dst, B, 400 * B).unwrap();
    assert_eq!(moved, 400 * B);
    let d = contents(&fs, dst);
    assert_eq!(d.len() as u64, 401 * B);
    assert_eq!(&d[..B as usize], &[7u8; B as usize][..], "before the range: kept");
    assert_eq!(&d[B as usize..2 * B as usize], &data[B as usize..2 * B as usize]);
    assert_eq!(
        &d[2 * B as usize..3 * B as usize],
        &[7u8; B as usize][..],
        "under the source's hole: kept"
    );
    assert_eq!(&d[3 * B as usize..], &data[3 * B as usize..401 * B as usize]);
    let s = contents(&fs, src);
    assert_eq!(s.len(), data.len(), "the source keeps its size");
    assert!(
        s[B as usize..401 * B as usize].iter().all(|&b| b == 0),
        "the source's range reads zeros"
    );
    assert_eq!(&s[401 * B as usize..], &data[401 * B as usize..]);
    let runs = fs.extents(src).unwrap();
    let mapped = (1..401u64)
        .filter(|&k| runs.iter().any(|&(f, _, n)| k >= f && k < f + n))
        .count();
    assert_eq!(mapped, 0, "the source's range holds no blocks");
    fs.write_checkpoint().unwrap();
    assert_eq!(contents(&fs, dst), d, "after a checkpoint");
}

#[test]
fn move_range_to_the_end_of_file_and_within_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = fresh(tmp.path());
    let src = fs.create(fs.root(), b"src", 0o644, 0, 0).unwrap().ino;
    let dst = fs.create(fs.root(), b"dst", 0o644, 0, 0).unwrap().ino;
    let data: Vec<u8> = (0..(5 * B + 100) as usize).map(|i| (i % 253) as u8).collect();
    fs.write(src, 0, &data).unwrap();
    // len 0: to the end of file; the last partial block moves whole, the target's
    // size is the bytes, not the blocks.
    assert_eq!(fs.move_range(src, 2 * B, dst, 4 * B, 0).unwrap(), 3 * B + 100);
    let d = contents(&fs, dst);
    assert_eq!(d.len() as u64, 7 * B + 100);
    assert!(d[..4 * B as usize].iter().all(|&b| b == 0));
    assert_eq!(&d[4 * B as usize..], &data[2 * B as usize..]);
    // Within one file, towards its start (the ranges may overlap that way).
    let f = fs.create(fs.root(), b"one", 0o644, 0, 0).unwrap().ino;
    fs.write(f, 0, &data[..4 * B as usize]).unwrap();
    fs.move_range(f, B, f, 0, 2 * B).unwrap();
    let c = contents(&fs, f);
    assert_eq!(&c[..2 * B as usize], &data[B as usize..3 * B as usize]);
    assert!(c[2 * B as usize..3 * B as usize].iter().all(|&b| b == 0));
    assert_eq!(&c[3 * B as usize..], &data[3 * B as usize..4 * B as usize]);
    // Refusals, as Linux's: overlapping forwards, unaligned, past the end of file.
    let errno = |r: crate::Result<u64>| r.unwrap_err().errno();
    assert_eq!(errno(fs.move_range(f, 0, f, B, 2 * B)), 22);
    assert_eq!(fs.move_range(f, B, f, B, 2 * B).unwrap(), 0, "same place: nothing");
    assert_eq!(errno(fs.move_range(f, 1, dst, 0, B)), 22);
    assert_eq!(errno(fs.move_range(f, 0, dst, 1, B)), 22);
    assert_eq!(errno(fs.move_range(f, 0, dst, 0, B + 1)), 22);
    assert_eq!(errno(fs.move_range(f, 0, dst, 0, 5 * B)), 22);
    let dir = fs.mkdir(fs.root(), b"d", 0o755, 0, 0).unwrap().ino;
    assert_eq!(errno(fs.move_range(f, 0, dir, 0, B)), 22, "a directory: EINVAL");
    fs.set_pin_file(dst, true).unwrap();
    assert_eq!(errno(fs.move_range(f, 0, dst, 0, B)), 95, "pinned: EOPNOTSUPP");
}

/// Linux's free-section rule does not count an inode dirty for its timestamps only
/// (F2FS mounts `lazytime`): an overwrite inside the file leaves the inode out of the
/// counted dirty nodes once it has been written, a write that grows the file counts
/// it, and both are written at the next checkpoint.
#[test]
fn an_inode_dirty_for_its_timestamps_only_is_not_counted_by_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = fresh(tmp.path());
    let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
    let counted = |fs: &Fs| fs.nodes().counted_dirty_nodes_by_log().iter().sum::<u64>();
    let all = |fs: &Fs| fs.nodes().dirty_nodes_by_log().iter().sum::<u64>();
    fs.write(f, 0, &[1; 8 * B as usize]).unwrap();
    fs.write_checkpoint().unwrap();
    assert_eq!((all(&fs), counted(&fs)), (0, 0));
    // An overwrite inside the file: the inode is dirty (mtime), not counted.
    fs.write(f, 2 * B, &[2; B as usize]).unwrap();
    assert_eq!((all(&fs), counted(&fs)), (1, 0));
    // Growing the file changes i_size: counted, and stays counted on an overwrite.
    fs.write(f, 8 * B, &[3; B as usize]).unwrap();
    assert_eq!(counted(&fs), all(&fs));
    assert!(counted(&fs) >= 1);
    fs.write(f, 0, &[4; B as usize]).unwrap();
    assert_eq!(counted(&fs), all(&fs));
    fs.write_checkpoint().unwrap();
    assert_eq!((all(&fs), counted(&fs)), (0, 0));
    let before = fs.inode(f).unwrap().inode.mtime;
    std::thread::sleep(std::time::Duration::from_millis(2));
    fs.write(f, B, &[5; B as usize]).unwrap();
    assert_eq!((all(&fs), counted(&fs)), (1, 0));
    // The time-only change is still written: the new mtime reaches the device.
    fs.write_checkpoint().unwrap();
    let img = tmp.path().join("unit.img");
    fs.unmount().unwrap();
    let again = Fs::open(&img, &[]).unwrap();
    assert_ne!(again.inode(f).unwrap().inode.mtime, before);
}
