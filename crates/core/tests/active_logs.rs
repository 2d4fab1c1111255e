//! `active_logs=2|4|6` judged from outside: after a workload that gives every block
//! class something to write (directory data and inodes, file data warm, cold and hot,
//! file inodes and direct nodes, indirect nodes), each block must sit in a segment
//! whose SIT type is the log the kernel's `__get_segment_type_{2,4,6}` picks for it, the
//! logs not in use must not have moved, and `fsck.f2fs -f` must find the image clean
//! (f2fs-tools 1.15 must be installed: these tests fail, not skip, without it).

#[path = "common/oracle.rs"]
mod oracle;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use uf2fs_core::checkpoint::{load_checkpoint, CheckpointState};
use uf2fs_core::device::FileDevice;
use uf2fs_core::mkfs::{mkfs, parse_features, MkfsOptions};
use uf2fs_core::segment::LogType;
use uf2fs_core::{ActiveLogs, Fs, Ino, Settings};
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR, SIT_ENTRY_PER_BLOCK};
use uf2fs_format::node::{node_slot, Inode, F2FS_INLINE_DATA, F2FS_INLINE_DENTRY};
use uf2fs_format::sit::{sit_block_addr, sit_block_entry};

const MIB: u64 = 1 << 20;
/// Addresses (or node ids) per direct (indirect) node.
const PER_NODE: usize = 1018;

fn image(dir: &Path, size: u64, features: &str) -> PathBuf {
    let img = dir.join(format!("logs-{}.img", features.replace(',', "-")));
    let _ = std::fs::remove_file(&img);
    let opts = MkfsOptions {
        size_bytes: Some(size),
        features: parse_features(features).unwrap(),
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    img
}

/// What a block is, as the six-log rules classify it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Block {
    DirData,
    FileData,
    ColdFileData,
    HotFileData,
    DirNode,
    FileNode,
    IndirectNode,
}

/// The SIT type (`CURSEG_*`) the kernel gives a block of `what` with `logs` active
/// logs, written out from `__get_segment_type_{2,4,6}`.
fn kernel_log(logs: ActiveLogs, what: Block) -> LogType {
    use Block::*;
    use LogType::*;
    match logs {
        ActiveLogs::Two => match what {
            DirData | FileData | ColdFileData | HotFileData => HotData,
            DirNode | FileNode | IndirectNode => HotNode,
        },
        ActiveLogs::Four => match what {
            DirData => HotData,
            FileData | ColdFileData | HotFileData => ColdData,
            FileNode => WarmNode,
            DirNode | IndirectNode => ColdNode,
        },
        ActiveLogs::Six => match what {
            DirData | HotFileData => HotData,
            FileData => WarmData,
            ColdFileData => ColdData,
            DirNode => HotNode,
            FileNode => WarmNode,
            IndirectNode => ColdNode,
        },
    }
}

/// An address that owns a block.
fn real(addr: u32) -> bool {
    addr != NULL_ADDR && addr != NEW_ADDR
}

/// Every block of inode `ino`: its node blocks and its data blocks, classified.
fn blocks_of(fs: &Fs, ino: Ino, dir: bool, data: Block, out: &mut Vec<(u64, Block)>) {
    let sb = fs.superblock();
    let inode_addr = fs.node_blkaddr(ino).unwrap();
    let raw = fs.read_raw_block(inode_addr).unwrap();
    let inode = Inode::decode(&raw, sb).unwrap();
    let dnode = if dir { Block::DirNode } else { Block::FileNode };
    out.push((inode_addr, dnode));
    if inode.has_inline(F2FS_INLINE_DATA) || inode.has_inline(F2FS_INLINE_DENTRY) {
        return; // inline data or dentries: no data block
    }
    for i in 0..inode.addrs_per_inode() {
        let a = inode.addr(&raw, i);
        if real(a) {
            out.push((a as u64, data));
        }
    }
    let direct = |nid: u32, out: &mut Vec<(u64, Block)>| {
        let addr = fs.node_blkaddr(nid).unwrap();
        out.push((addr, dnode));
        let b = fs.read_raw_block(addr).unwrap();
        for i in 0..PER_NODE {
            let a = node_slot(&b, i).unwrap();
            if real(a) {
                out.push((a as u64, data));
            }
        }
    };
    for &nid in inode.nids[..2].iter().filter(|&&n| n != 0) {
        direct(nid, out);
    }
    for &nid in inode.nids[2..4].iter().filter(|&&n| n != 0) {
        let addr = fs.node_blkaddr(nid).unwrap();
        out.push((addr, Block::IndirectNode));
        let b = fs.read_raw_block(addr).unwrap();
        for i in 0..PER_NODE {
            let child = node_slot(&b, i).unwrap();
            if child != 0 {
                direct(child, out);
            }
        }
    }
    assert_eq!(
        inode.nids[4], 0,
        "the workload has no file needing double indirect nodes"
    );
}

/// SIT type of the segment holding main-area block `addr` (journal first).
fn seg_type(img: &Path, fs: &Fs, cps: &CheckpointState, addr: u64) -> u8 {
    let sb = fs.superblock();
    let segno = ((addr - sb.main_blkaddr as u64) / 512) as u32;
    if let Some((_, e)) = cps.sit_journal.iter().find(|(s, _)| *s == segno) {
        return e.seg_type;
    }
    let per = SIT_ENTRY_PER_BLOCK as u32;
    let at = sit_block_addr(sb.sit_blkaddr, sb.segment_count_sit, &cps.sit_bitmap, segno / per);
    let block = fs
        .read_raw_block(at)
        .unwrap_or_else(|e| panic!("{}: SIT block {at}: {e}", img.display()));
    sit_block_entry(&block, (segno % per) as usize).unwrap().seg_type
}

/// Each log's (segno, next block offset) as a checkpoint records them.
fn positions(fs: &Fs) -> [(u32, u16); 6] {
    let cp = fs.last_checkpoint();
    std::array::from_fn(|i| {
        if i < 3 {
            (cp.cur_data_segno[i], cp.cur_data_blkoff[i])
        } else {
            (cp.cur_node_segno[i - 3], cp.cur_node_blkoff[i - 3])
        }
    })
}

fn write_all(fs: &Fs, ino: Ino, len: usize, seed: u8) {
    let chunk: Vec<u8> = (0..MIB as usize).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect();
    let mut off = 0;
    while off < len {
        let n = (len - off).min(chunk.len());
        assert_eq!(fs.write(ino, off as u64, &chunk[..n]).unwrap(), n);
        off += n;
    }
}

/// The workload: every block class gets blocks. Returns (ino, is_dir, data class).
fn workload(fs: &Fs) -> Vec<(Ino, bool, Block)> {
    let root = fs.root();
    let d = fs.mkdir(root, b"d", 0o755, 0, 0).unwrap().ino;
    for i in 0..200 {
        fs.create(d, format!("entry-with-a-long-name-{i:03}").as_bytes(), 0o644, 0, 0)
            .unwrap();
    }
    let warm = fs.create(d, b"warm.txt", 0o644, 0, 0).unwrap().ino;
    write_all(fs, warm, 64 * 1024, 1);
    // 12 MiB: past the inode's and both direct nodes' addresses, into the first
    // indirect node.
    let big = fs.create(root, b"big.bin", 0o644, 0, 0).unwrap().ino;
    write_all(fs, big, 12 * MIB as usize, 2);
    let cold = fs.create(root, b"clip.mp4", 0o644, 0, 0).unwrap().ino;
    write_all(fs, cold, 40 * 1024, 3);
    let hot = fs.create(root, b"cache.db", 0o644, 0, 0).unwrap().ino;
    write_all(fs, hot, 40 * 1024, 4);
    fs.fsync(big, false).unwrap();
    // Rewrites after a checkpoint go to new blocks of the same logs.
    write_all(fs, warm, 16 * 1024, 5);
    vec![
        (root, true, Block::DirData),
        (d, true, Block::DirData),
        (warm, false, Block::FileData),
        (big, false, Block::FileData),
        (cold, false, Block::ColdFileData),
        (hot, false, Block::HotFileData),
    ]
}

fn run(logs: ActiveLogs, features: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 128 * MIB, features);
    let fs = Fs::open_rw(&img, &[]).unwrap();
    fs.set_settings(Settings {
        active_logs: logs,
        ..Settings::default()
    })
    .unwrap();
    assert_eq!(fs.settings().active_logs, logs);
    let before = positions(&fs);
    let files = workload(&fs);
    fs.unmount().unwrap();
    let what = format!("{} logs on {features:?}", logs.count());
    oracle::fsck_clean(&img, &what);

    let fs = Fs::open(&img, &[]).unwrap();
    let cps = load_checkpoint(&FileDevice::open(&img).unwrap(), fs.superblock()).unwrap();
    let mut blocks = Vec::new();
    for &(ino, dir, data) in &files {
        blocks_of(&fs, ino, dir, data, &mut blocks);
    }
    let mut seen = BTreeSet::new();
    for &(addr, class) in &blocks {
        let want = kernel_log(logs, class);
        let got = seg_type(&img, &fs, &cps, addr);
        assert_eq!(
            got, want as u8,
            "{what}: {class:?} block {addr:#x} is in a segment of type {got}"
        );
        seen.insert(class);
    }
    assert_eq!(seen.len(), 7, "{what}: the workload covers every class: {seen:?}");

    // The logs no class folds onto did not move; the others did.
    let after = positions(&fs);
    let used: BTreeSet<LogType> = seen.iter().map(|&b| kernel_log(logs, b)).collect();
    assert_eq!(used.len() as u32, logs.count(), "{what}: {used:?}");
    for (i, log) in LogType::ALL.iter().enumerate() {
        if used.contains(log) {
            assert_ne!(before[i], after[i], "{what}: {log:?} in use but did not move");
        } else {
            assert_eq!(before[i], after[i], "{what}: {log:?} not in use but moved");
        }
    }
}

#[test]
fn two_logs_put_all_data_in_hot_data_and_all_nodes_in_hot_node() {
    run(ActiveLogs::Two, "");
    run(ActiveLogs::Two, "extra_attr,inode_checksum,flexible_inline_xattr");
}

#[test]
fn four_logs_split_directories_from_files() {
    run(ActiveLogs::Four, "");
    run(ActiveLogs::Four, "extra_attr,inode_checksum,flexible_inline_xattr");
}

#[test]
fn six_logs_are_the_default_classes() {
    run(ActiveLogs::Six, "");
}

/// Changing the logs between operations (as a remount would) keeps the image whole.
#[test]
fn switching_logs_midway_stays_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 128 * MIB, "");
    let fs = Fs::open_rw(&img, &[]).unwrap();
    let root = fs.root();
    for (round, logs) in [ActiveLogs::Six, ActiveLogs::Two, ActiveLogs::Four, ActiveLogs::Two]
        .into_iter()
        .enumerate()
    {
        fs.set_settings(Settings {
            active_logs: logs,
            ..Settings::default()
        })
        .unwrap();
        let dir = fs
            .mkdir(root, format!("round{round}").as_bytes(), 0o755, 0, 0)
            .unwrap()
            .ino;
        for i in 0..40 {
            let f = fs.create(dir, format!("f{i}").as_bytes(), 0o644, 0, 0).unwrap().ino;
            write_all(&fs, f, 5000 + 7919 * i, round as u8);
        }
        if round % 2 == 1 {
            fs.write_checkpoint().unwrap();
        }
    }
    fs.unmount().unwrap();
    oracle::fsck_clean(&img, "switching active logs");
}

/// With two logs every class's need falls on the same two logs: filling a small volume
/// ends in short writes and ENOSPC, never in an allocation failing halfway.
#[test]
fn two_logs_fill_a_volume_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let img = image(tmp.path(), 64 * MIB, "");
    let fs = Fs::open_rw(&img, &[]).unwrap();
    fs.set_settings(Settings {
        active_logs: ActiveLogs::Two,
        ..Settings::default()
    })
    .unwrap();
    let root = fs.root();
    let mut full = false;
    'files: for i in 0..64 {
        let f = match fs.create(root, format!("fill{i}").as_bytes(), 0o644, 0, 0) {
            Ok(st) => st.ino,
            Err(e) if e.is_no_space() => break,
            Err(e) => panic!("create: {e}"),
        };
        let chunk = vec![i as u8; MIB as usize];
        for m in 0..64u64 {
            match fs.write(f, m * MIB, &chunk) {
                Ok(n) if n == chunk.len() => {}
                Ok(_) => {
                    full = true;
                    break 'files;
                }
                Err(e) if e.is_no_space() => {
                    full = true;
                    break 'files;
                }
                Err(e) => panic!("write: {e}"),
            }
        }
    }
    assert!(full, "64 MiB volume never filled");
    fs.unmount().unwrap();
    oracle::fsck_clean(&img, "filling a volume with two logs");
}
