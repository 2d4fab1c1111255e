//! The two checkpoint packs of a fresh volume.
//!
//! Pack 0 is the valid one: its version is random and odd, it is marked cleanly
//! unmounted, its data summaries are compacted into one block that also carries the
//! NAT and SIT journals, and NAT bits end its segment when they fit. Pack 1 holds only
//! its two checkpoint blocks, with version 0, so that any mount picks pack 0.

use super::image::{encode, BlockWrite, Params};
use super::layout::NR_CURSEG_TYPE;
use crate::Result;
use uf2fs_format::checkpoint::{
    nat_bits_blocks, nat_bits_bytes, Checkpoint, NatBits, CP_CHKSUM_OFFSET, CP_COMPACT_SUM_FLAG, CP_NAT_BITS_FLAG,
    CP_TRIMMED_FLAG, CP_UMOUNT_FLAG,
};
use uf2fs_format::consts::{BLOCKS_PER_SEG, BLOCK_SIZE, MAX_ACTIVE_DATA_LOGS, MAX_ACTIVE_NODE_LOGS};
use uf2fs_format::le::u32_at;
use uf2fs_format::nat::NatEntry;
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::{encode_compacted_summaries, Summary, SummaryBlock, SUM_TYPE_NODE};
use uf2fs_format::superblock::Superblock;

/// Segment types in the high bits of a SIT entry's block count (`CURSEG_*`), in the
/// order of the checkpoint's logs: hot, warm, cold data, then hot, warm, cold node.
const DATA_SEG_TYPES: [u8; 3] = [0, 1, 2];
const NODE_SEG_TYPES: [u8; 3] = [3, 4, 5];
/// Unused log slots of the checkpoint.
const NO_SEGMENT: u32 = u32::MAX;

/// Blocks of a pack: two checkpoint blocks, payload, one compacted data summary block
/// and three node summary blocks.
fn pack_blocks(p: &Params) -> u32 {
    6 + p.layout.cp_payload
}

/// The checkpoint block of pack 0.
fn checkpoint(p: &Params) -> Checkpoint {
    let l = p.layout;
    let made = p.inodes();
    let mut cur_node_segno = [NO_SEGMENT; MAX_ACTIVE_NODE_LOGS];
    let mut cur_data_segno = [NO_SEGMENT; MAX_ACTIVE_DATA_LOGS];
    cur_node_segno[..3].copy_from_slice(&l.cur_node_segno);
    cur_data_segno[..3].copy_from_slice(&l.cur_data_segno);
    let mut cur_node_blkoff = [0; MAX_ACTIVE_NODE_LOGS];
    let mut cur_data_blkoff = [0; MAX_ACTIVE_DATA_LOGS];
    cur_node_blkoff[0] = made as u16;
    cur_data_blkoff[0] = made as u16;
    let mut flags = CP_UMOUNT_FLAG | CP_COMPACT_SUM_FLAG;
    if pack_blocks(p) <= BLOCKS_PER_SEG - nat_bits_blocks(l.segment_count_nat) {
        flags |= CP_NAT_BITS_FLAG;
    }
    if p.trimmed {
        flags |= CP_TRIMMED_FLAG;
    }
    Checkpoint {
        checkpoint_ver: p.cp_ver,
        user_block_count: l.user_block_count(),
        valid_block_count: 2 * made as u64,
        rsvd_segment_count: l.reserved_segments,
        overprov_segment_count: l.overprov_segments,
        free_segment_count: l.free_segment_count(),
        cur_node_segno,
        cur_node_blkoff,
        cur_data_segno,
        cur_data_blkoff,
        ckpt_flags: flags,
        cp_pack_total_block_count: pack_blocks(p),
        cp_pack_start_sum: 1 + l.cp_payload,
        valid_node_count: made,
        valid_inode_count: made,
        next_free_nid: super::image::ROOT_INO + made,
        sit_ver_bitmap_bytesize: (l.segment_count_sit / 2) * BLOCKS_PER_SEG / 8,
        nat_ver_bitmap_bytesize: (l.segment_count_nat / 2) * BLOCKS_PER_SEG / 8,
        checksum_offset: CP_CHKSUM_OFFSET as u32,
        elapsed_time: 0,
        alloc_type: [0; 16],
    }
}

/// A SIT entry with the first `valid` blocks in use.
fn sit_entry(seg_type: u8, valid: u32) -> SitEntry {
    let mut valid_map = [0u8; 64];
    for i in 0..valid as usize {
        valid_map[i / 8] |= 0x80 >> (i % 8);
    }
    SitEntry {
        valid_blocks: valid as u16,
        seg_type,
        valid_map,
        mtime: 0,
    }
}

/// The compacted data summary block: NAT journal (root, lost+found), SIT journal (the
/// six active logs), and the summaries of the hot data log's dentry blocks.
fn data_summaries(p: &Params) -> Result<Vec<u8>> {
    let l = p.layout;
    let inos: Vec<u32> = std::iter::once(super::image::ROOT_INO)
        .chain(p.lost_found_ino())
        .collect();
    let nat: Vec<(u32, NatEntry)> = inos
        .iter()
        .enumerate()
        .map(|(i, &ino)| {
            let e = NatEntry {
                version: 0,
                ino,
                block_addr: p.hot_node_blk(i as u32),
            };
            (ino, e)
        })
        .collect();
    let made = inos.len() as u32;
    let mut sit = Vec::with_capacity(NR_CURSEG_TYPE as usize);
    for (i, &seg_type) in NODE_SEG_TYPES.iter().enumerate() {
        sit.push((l.cur_node_segno[i], sit_entry(seg_type, if i == 0 { made } else { 0 })));
    }
    for (i, &seg_type) in DATA_SEG_TYPES.iter().enumerate() {
        sit.push((l.cur_data_segno[i], sit_entry(seg_type, if i == 0 { made } else { 0 })));
    }
    let hot: Vec<Summary> = inos
        .iter()
        .map(|&nid| Summary {
            nid,
            version: 0,
            ofs_in_node: 0,
        })
        .collect();
    let b = encode(encode_compacted_summaries(&nat, &sit, [&hot, &[], &[]]))?;
    debug_assert_eq!(b.len(), BLOCK_SIZE);
    Ok(b)
}

/// Summary blocks of the hot, warm and cold node logs.
fn node_summaries(p: &Params) -> Result<Vec<Vec<u8>>> {
    let hot: Vec<Summary> = std::iter::once(super::image::ROOT_INO)
        .chain(p.lost_found_ino())
        .map(|nid| Summary {
            nid,
            version: 0,
            ofs_in_node: 0,
        })
        .collect();
    [hot, Vec::new(), Vec::new()]
        .into_iter()
        .map(|entries| {
            let blk = SummaryBlock {
                entries,
                journal: Vec::new(),
                entry_type: SUM_TYPE_NODE,
            };
            encode(blk.encode())
        })
        .collect()
}

/// NAT bits for a NAT whose only used block is block 0: nothing full, all but block 0
/// empty; tied to the checkpoint block `cp_block`.
fn nat_bits(p: &Params, cp: &Checkpoint, cp_block: &[u8]) -> Result<Vec<u8>> {
    let segs = p.layout.segment_count_nat;
    let bytes = nat_bits_bytes(segs);
    let mut empty = vec![0xffu8; bytes];
    empty[0] &= !1;
    let crc = u32_at(cp_block, cp.checksum_offset as usize);
    let bits = NatBits {
        cp_ver_crc: NatBits::header(cp.checkpoint_ver, crc),
        full: vec![0; bytes],
        empty,
    };
    encode(bits.encode(segs))
}

/// Both packs' blocks, and the checkpoint of the valid pack.
pub fn checkpoint_packs(p: &Params) -> Result<(Checkpoint, Vec<BlockWrite>)> {
    let cp = checkpoint(p);
    let cp_block = encode(cp.encode())?;
    let start = p.layout.segment0_blkaddr as u64;
    let payload = p.layout.cp_payload as u64;
    let mut writes = vec![(start, cp_block.clone())];
    for i in 0..payload {
        writes.push((start + 1 + i, vec![0; BLOCK_SIZE]));
    }
    let sum_at = start + 1 + payload;
    writes.push((sum_at, data_summaries(p)?));
    for (i, b) in node_summaries(p)?.into_iter().enumerate() {
        writes.push((sum_at + 1 + i as u64, b));
    }
    writes.push((start + pack_blocks(p) as u64 - 1, cp_block.clone()));
    if cp.has_flag(CP_NAT_BITS_FLAG) {
        let bits = nat_bits(p, &cp, &cp_block)?;
        let first = start + BLOCKS_PER_SEG as u64 - (bits.len() / BLOCK_SIZE) as u64;
        for (i, b) in bits.chunks(BLOCK_SIZE).enumerate() {
            writes.push((first + i as u64, b.to_vec()));
        }
    }
    let old = Checkpoint {
        checkpoint_ver: 0,
        ..cp.clone()
    };
    let old_block = encode(old.encode())?;
    let start1 = start + BLOCKS_PER_SEG as u64;
    writes.push((start1, old_block.clone()));
    for i in 0..payload {
        writes.push((start1 + 1 + i, vec![0; BLOCK_SIZE]));
    }
    writes.push((start1 + pack_blocks(p) as u64 - 1, old_block));
    Ok((cp, writes))
}

/// Checks a finished plan's checkpoint against its superblock, as a mount would.
pub fn validate(cp: &Checkpoint, sb: &Superblock) -> Result<()> {
    cp.validate(sb)
        .map_err(|e| crate::Error::Invalid(format!("mkfs built an inconsistent checkpoint: {e}")))
}
