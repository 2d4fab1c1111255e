//! The blocks of a fresh volume: superblock, root directory (and lost+found), NAT,
//! and the two checkpoint packs, laid out as mkfs.f2fs 1.15 lays them out.
//!
//! What a new volume holds (with lost+found; without it, drop the second of each):
//!
//! | where                          | what                                          |
//! |--------------------------------|-----------------------------------------------|
//! | blocks 0 and 1, byte 1024      | superblock copies                             |
//! | CP pack 0 (segment 0)          | CP block, payload, compact data summaries,    |
//! |                                | hot/warm/cold node summaries, CP block again; |
//! |                                | NAT bits in the last blocks of the segment    |
//! | CP pack 1 (segment 1)          | CP block with version 0, payload, CP block    |
//! | NAT block 0 (first copy)       | node ino 1, meta ino 2, root ino 3, quota     |
//! | hot node log, from block 0     | root inode, quota inodes, lost+found inode    |
//! | hot data log, from block 0     | root dentry block, each quota file's 6 KiB    |
//! |                                | (2 blocks of 4 KiB, 1 of 16 KiB), lost+found's |
//! |                                | dentry block                                  |
//!
//! The SIT area stays zero: the six active logs' SIT entries live in the checkpoint's
//! SIT journal, and the NAT entries of root, the quota files and lost+found in its NAT
//! journal. The quota files (features `quota` and `project_quota`: user and group, and
//! project) are inodes 4, 5 (and 6), before lost+found, as mkfs.f2fs numbers them; each
//! holds the root directory's (and lost+found's) usage, counted from their inodes and
//! laid out by [`QuotaFile`] (crate::quota, which also writes a built tree's quota files).

pub use super::params::{BlockWrite, Params};

use super::params::{encode, ROOT_INO};
use crate::quota::{QuotaFile, QuotaUsage};
use crate::Result;
use uf2fs_format::checkpoint::Checkpoint;
use uf2fs_format::consts::{F2FS_SUPER_OFFSET, NAT_ENTRY_PER_BLOCK};
use uf2fs_format::dentry::{ft, DentryAreaMut};
use uf2fs_format::nat::{NatEntry, NAT_ENTRY_SIZE};
use uf2fs_format::node::{Inode, NodeFooter, F2FS_EXTRA_ATTR};
use uf2fs_format::superblock::*;

/// Node id of the node inode (internal).
const NODE_INO: u32 = 1;
/// Node id of the meta inode (internal).
const META_INO: u32 = 2;
/// Name of the lost+found directory.
const LOST_FOUND: &[u8] = b"lost+found";

/// Extensions of files written to cold data logs: mkfs.f2fs 1.15's default list.
const COLD_EXTENSIONS: &[&str] = &[
    "mp", "wm", "og", "jp", "avi", "m4v", "m4p", "mkv", "mov", "webm", "wav", "m4a", "3gp", "opus", "flac", "gif",
    "png", "svg", "webp", "jar", "deb", "iso", "gz", "xz", "zst", "pdf", "pyc", "ttc", "ttf", "exe", "apk", "cnt",
    "exo", "odex", "vdex", "so",
];
/// Extensions of files written to hot data logs.
const HOT_EXTENSIONS: &[&str] = &["db", "vmdk", "vdi", "qcow2"];

/// The blocks of a new volume, superblocks last, plus what they describe.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Block writes in order; the superblock copies come last.
    pub writes: Vec<BlockWrite>,
    /// The superblock written.
    pub superblock: Superblock,
    /// The checkpoint of the valid pack.
    pub checkpoint: Checkpoint,
}

/// Builds every block of the new volume.
pub fn plan(p: &Params) -> Result<Plan> {
    let sb = superblock(p);
    let mut writes = root_directory(p, &sb)?;
    writes.push((p.layout.nat_blkaddr() as u64, nat_block(p)));
    let (checkpoint, packs) = super::cp::checkpoint_packs(p)?;
    writes.extend(packs);
    let mut block = vec![0u8; p.block_size()];
    block[F2FS_SUPER_OFFSET..F2FS_SUPER_OFFSET + SUPERBLOCK_SIZE].copy_from_slice(&encode(sb.encode())?);
    writes.push((0, block.clone()));
    writes.push((1, block));
    Ok(Plan {
        writes,
        superblock: sb,
        checkpoint,
    })
}

/// The superblock of the new volume.
pub fn superblock(p: &Params) -> Superblock {
    let l = p.layout;
    let mut extensions: Vec<String> = COLD_EXTENSIONS.iter().map(|e| e.to_string()).collect();
    extensions.extend(HOT_EXTENSIONS.iter().map(|e| e.to_string()));
    Superblock {
        major_ver: 1,
        minor_ver: 15,
        log_sectorsize: l.log_sectorsize,
        log_sectors_per_block: l.geometry.log_block_size() - l.log_sectorsize,
        log_blocksize: l.geometry.log_block_size(),
        log_blocks_per_seg: 9,
        segs_per_sec: l.segs_per_sec,
        secs_per_zone: l.secs_per_zone,
        block_count: l.block_count,
        section_count: l.section_count,
        segment_count: l.segment_count,
        segment_count_ckpt: l.segment_count_ckpt(),
        segment_count_sit: l.segment_count_sit,
        segment_count_nat: l.segment_count_nat,
        segment_count_ssa: l.segment_count_ssa,
        segment_count_main: l.segment_count_main,
        segment0_blkaddr: l.segment0_blkaddr,
        cp_blkaddr: l.segment0_blkaddr,
        sit_blkaddr: l.sit_blkaddr(),
        nat_blkaddr: l.nat_blkaddr(),
        ssa_blkaddr: l.ssa_blkaddr(),
        main_blkaddr: l.main_blkaddr(),
        root_ino: ROOT_INO,
        node_ino: NODE_INO,
        meta_ino: META_INO,
        uuid: p.uuid,
        volume_name: p.label.to_string(),
        extensions,
        cp_payload: l.cp_payload,
        version: p.version.to_string(),
        init_version: p.version.to_string(),
        feature: p.features,
        devices: Vec::new(),
        qf_ino: p.quota_inos(),
        hot_ext_count: HOT_EXTENSIONS.len() as u8,
        s_encoding: if p.has(FEATURE_CASEFOLD) {
            uf2fs_format::casefold::F2FS_ENC_UTF8_12_1
        } else {
            0
        },
        s_encoding_flags: if p.has(FEATURE_CASEFOLD) { p.encoding_flags } else { 0 },
        crc: 0,
    }
}

/// Bytes of extra inode attributes the features call for (`i_extra_isize`).
fn extra_isize(features: u32) -> u16 {
    if features & FEATURE_INODE_CRTIME != 0 {
        24
    } else if features & FEATURE_INODE_CHKSUM != 0 {
        12
    } else if features & FEATURE_PRJQUOTA != 0 {
        8
    } else {
        4
    }
}

/// A directory inode with one dentry block, as mkfs makes root and lost+found.
fn dir_inode(p: &Params, sb: &Superblock, ino: u32, parent: u32, mode: u16, links: u32) -> Inode {
    let time = (p.time_secs, 0);
    let extra = p.has(FEATURE_EXTRA_ATTR);
    Inode {
        mode,
        advise: 0,
        inline: if extra { F2FS_EXTRA_ATTR } else { 0 },
        uid: p.root_uid,
        gid: p.root_gid,
        links,
        size: p.block_size() as u64,
        blocks: 2,
        atime: time,
        ctime: time,
        mtime: time,
        generation: 0,
        current_depth: 1,
        xattr_nid: 0,
        flags: 0,
        pino: parent,
        name: if ino == ROOT_INO {
            Vec::new()
        } else {
            LOST_FOUND.to_vec()
        },
        dir_level: 0,
        ext: (0, 0, 0),
        extra_isize: if extra { extra_isize(sb.feature) } else { 0 },
        inline_xattr_addrs: 0,
        projid: 0,
        inode_checksum: 0,
        crtime: p.has(FEATURE_INODE_CRTIME).then_some(time),
        compress: None,
        nids: [0; 5],
        geometry: sb.geometry(),
    }
}

/// A dentry block with "." and "..", and `more` entries after them.
fn dentry_block(p: &Params, ino: u32, parent: u32, more: &[(&[u8], u32)]) -> Result<Vec<u8>> {
    let mut b = vec![0u8; p.block_size()];
    let mut area = encode(DentryAreaMut::block(&mut b))?;
    encode(area.insert_at(0, 0, b".", ino, ft::DIR))?;
    encode(area.insert_at(1, 0, b"..", parent, ft::DIR))?;
    for (name, child) in more {
        encode(area.insert(name, *child, ft::DIR))?;
    }
    Ok(b)
}

/// Root, the quota files and lost+found: inodes in the hot node log (in that order),
/// dentry blocks and quota data in the hot data log (root's dentry block, two blocks
/// per quota file, lost+found's dentry block), as mkfs.f2fs places them.
fn root_directory(p: &Params, sb: &Superblock) -> Result<Vec<BlockWrite>> {
    let lpf = p.lost_found_ino();
    let mut writes = Vec::new();
    // The quota files hold the usage of the directories made here.
    let mut usage = QuotaUsage::default();
    let quotas = p.quota_types();
    let quota_inos = p.quota_inos();
    let mut dirs = vec![(ROOT_INO, 0, 0o040755, 2 + u32::from(lpf.is_some()), 0u32, 0u32)];
    if let Some(ino) = lpf {
        let slot = 1 + quotas.len() as u32;
        dirs.push((
            ino,
            ROOT_INO,
            0o040700,
            2,
            slot,
            1 + p.quota_data_blocks() * quotas.len() as u32,
        ));
    }
    for &(ino, parent, mode, links, node_slot, data_slot) in &dirs {
        let node_blk = p.hot_node_blk(node_slot);
        let data_blk = p.hot_data_blk(data_slot);
        let inode = dir_inode(p, sb, ino, parent, mode, links);
        usage.count(&inode, p.block_size() as u64);
        let footer = NodeFooter {
            nid: ino,
            ino,
            flag: 0,
            cp_ver: 1,
            next_blkaddr: node_blk + 1,
        };
        writes.push((node_blk as u64, encode(inode.encode(sb, &[data_blk], &footer))?));
        let (dot_dot, more): (u32, Vec<(&[u8], u32)>) = match (ino, lpf) {
            (ROOT_INO, Some(l)) => (ROOT_INO, vec![(LOST_FOUND, l)]),
            _ => (if ino == ROOT_INO { ROOT_INO } else { parent }, Vec::new()),
        };
        writes.push((data_blk as u64, dentry_block(p, ino, dot_dot, &more)?));
    }
    for (i, &qtype) in quotas.iter().enumerate() {
        let ino = quota_inos[qtype.index()];
        let node_blk = p.hot_node_blk(1 + i as u32);
        let first = 1 + p.quota_data_blocks() * i as u32;
        let data: Vec<u32> = (0..p.quota_data_blocks()).map(|k| p.hot_data_blk(first + k)).collect();
        let file = QuotaFile::new(qtype, &usage);
        let inode = file.inode(sb, (p.root_uid, p.root_gid), p.time_secs, extra_isize(sb.feature));
        let footer = NodeFooter {
            nid: ino,
            ino,
            flag: 0,
            cp_ver: 1,
            // mkfs.f2fs links each by its type's number, not its place.
            next_blkaddr: p.hot_node_blk(2 + qtype.index() as u32),
        };
        writes.push((node_blk as u64, encode(inode.encode(sb, &data, &footer))?));
        for (&blk, block) in data.iter().zip(file.data_blocks(p.block_size())) {
            writes.push((blk as u64, block));
        }
    }
    Ok(writes)
}

/// NAT block 0 (first copy): the two internal inodes (at block address 1, by
/// convention), the root and the quota files. lost+found is only in the checkpoint's
/// NAT journal.
fn nat_block(p: &Params) -> Vec<u8> {
    let mut b = vec![0u8; p.block_size()];
    const _: () = assert!((ROOT_INO as usize) < NAT_ENTRY_PER_BLOCK);
    let mut entries = vec![(NODE_INO, 1), (META_INO, 1), (ROOT_INO, p.hot_node_blk(0))];
    let quota_inos = p.quota_inos();
    for (i, qtype) in p.quota_types().into_iter().enumerate() {
        entries.push((quota_inos[qtype.index()], p.hot_node_blk(1 + i as u32)));
    }
    for (nid, block_addr) in entries {
        let e = NatEntry {
            version: 0,
            ino: nid,
            block_addr,
        };
        e.encode(&mut b[nid as usize * NAT_ENTRY_SIZE..]);
    }
    b
}
