//! The two checkpoint packs of a fresh volume.
//!
//! Pack 0 is the valid one: its version is random and odd, it is marked cleanly
//! unmounted, its data summaries are compacted into one block that also carries the
//! NAT and SIT journals, and NAT bits end its segment when they fit. Pack 1 holds only
//! its two checkpoint blocks, with version 0, so that any mount picks pack 0.

use super::layout::NR_CURSEG_TYPE;
use super::params::{encode, BlockWrite, Params, ROOT_INO};
use crate::checkpoint::pack::{build_pack, PackSpec};
use crate::Result;
use uf2fs_format::checkpoint::{nat_bits_bytes, Checkpoint, CP_TRIMMED_FLAG};
use uf2fs_format::consts::{BLOCKS_PER_SEG, MAX_ACTIVE_DATA_LOGS, MAX_ACTIVE_NODE_LOGS};
use uf2fs_format::nat::NatEntry;
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::Summary;
use uf2fs_format::superblock::Superblock;

/// Segment types in the high bits of a SIT entry's block count (`CURSEG_*`), in the
/// order of the checkpoint's logs: hot, warm, cold data, then hot, warm, cold node.
const DATA_SEG_TYPES: [u8; 3] = [0, 1, 2];
const NODE_SEG_TYPES: [u8; 3] = [3, 4, 5];
/// Unused log slots of the checkpoint.
const NO_SEGMENT: u32 = u32::MAX;

/// The checkpoint block of pack 0 (the pack builder adds the layout fields and the
/// umount, compacted-summary and NAT-bits flags).
fn checkpoint(p: &Params) -> Checkpoint {
    let l = p.layout;
    let made = p.inodes();
    let data = p.data_blocks();
    let mut cur_node_segno = [NO_SEGMENT; MAX_ACTIVE_NODE_LOGS];
    let mut cur_data_segno = [NO_SEGMENT; MAX_ACTIVE_DATA_LOGS];
    cur_node_segno[..3].copy_from_slice(&l.cur_node_segno);
    cur_data_segno[..3].copy_from_slice(&l.cur_data_segno);
    let mut cur_node_blkoff = [0; MAX_ACTIVE_NODE_LOGS];
    let mut cur_data_blkoff = [0; MAX_ACTIVE_DATA_LOGS];
    cur_node_blkoff[0] = made as u16;
    cur_data_blkoff[0] = data as u16;
    let flags = if p.trimmed { CP_TRIMMED_FLAG } else { 0 };
    Checkpoint {
        checkpoint_ver: p.cp_ver,
        user_block_count: l.user_block_count(),
        valid_block_count: (made + data) as u64,
        rsvd_segment_count: l.reserved_segments,
        overprov_segment_count: l.overprov_segments,
        free_segment_count: l.free_segment_count(),
        cur_node_segno,
        cur_node_blkoff,
        cur_data_segno,
        cur_data_blkoff,
        ckpt_flags: flags,
        cp_pack_total_block_count: 0,
        cp_pack_start_sum: 0,
        valid_node_count: made,
        valid_inode_count: made,
        next_free_nid: ROOT_INO + made,
        sit_ver_bitmap_bytesize: (l.segment_count_sit / 2) * BLOCKS_PER_SEG / 8,
        nat_ver_bitmap_bytesize: (l.segment_count_nat / 2) * BLOCKS_PER_SEG / 8,
        checksum_offset: l.geometry.cp_checksum_offset() as u32,
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

/// NAT journal, SIT journal, hot data summaries.
type JournalsAndHotData = (Vec<(u32, NatEntry)>, Vec<(u32, SitEntry)>, Vec<Summary>);

/// The inodes mkfs makes, in the hot node log's order: root, the quota files,
/// lost+found.
fn inodes_made(p: &Params) -> Vec<u32> {
    let quota_inos = p.quota_inos();
    std::iter::once(ROOT_INO)
        .chain(p.quota_types().into_iter().map(|t| quota_inos[t.index()]))
        .chain(p.lost_found_ino())
        .collect()
}

/// The NAT journal (root, quota files, lost+found), the SIT journal (the six active
/// logs) and the summaries of the hot data log's blocks (dentry blocks, quota data),
/// which the compacted data summary block carries.
fn journals_and_hot_data(p: &Params) -> JournalsAndHotData {
    let l = p.layout;
    let inos = inodes_made(p);
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
    let data = p.data_blocks();
    // The logs written: all six, or with `ro` hot node and hot data (the other four
    // share segment 0 with hot data and have no entry of their own).
    let logs = if l.ro { 1 } else { 3 };
    let mut sit = Vec::with_capacity(NR_CURSEG_TYPE as usize);
    for (i, &seg_type) in NODE_SEG_TYPES.iter().enumerate().take(logs) {
        sit.push((l.cur_node_segno[i], sit_entry(seg_type, if i == 0 { made } else { 0 })));
    }
    for (i, &seg_type) in DATA_SEG_TYPES.iter().enumerate().take(logs) {
        sit.push((l.cur_data_segno[i], sit_entry(seg_type, if i == 0 { data } else { 0 })));
    }
    let quota_inos = p.quota_inos();
    let per_quota = p.quota_data_blocks();
    let quota_blocks = p
        .quota_types()
        .into_iter()
        .flat_map(|t| (0..per_quota).map(move |k| (quota_inos[t.index()], k as u16)));
    let hot: Vec<Summary> = std::iter::once((ROOT_INO, 0))
        .chain(quota_blocks)
        .chain(p.lost_found_ino().map(|l| (l, 0)))
        .map(|(nid, ofs_in_node)| Summary {
            nid,
            version: 0,
            ofs_in_node,
        })
        .collect();
    (nat, sit, hot)
}

/// Summaries of the hot node log: root, quota and lost+found inodes.
fn hot_node_summaries(p: &Params) -> Vec<Summary> {
    inodes_made(p)
        .into_iter()
        .map(|nid| Summary {
            nid,
            version: 0,
            ofs_in_node: 0,
        })
        .collect()
}

/// NAT bits for a NAT whose only used block is block 0: nothing full, all but block 0
/// empty.
fn nat_bits(p: &Params) -> (Vec<u8>, Vec<u8>) {
    let bytes = nat_bits_bytes(p.layout.segment_count_nat);
    let mut empty = vec![0xffu8; bytes];
    empty[0] &= !1;
    (vec![0; bytes], empty)
}

/// Both packs' blocks, and the checkpoint of the valid pack. Pack 0 is laid out by the
/// same builder as every later checkpoint; pack 1 is two version-0 checkpoint blocks.
pub fn checkpoint_packs(p: &Params) -> Result<(Checkpoint, Vec<BlockWrite>)> {
    let (nat, sit, hot_data) = journals_and_hot_data(p);
    let hot_node = hot_node_summaries(p);
    let (full, empty) = nat_bits(p);
    let cp_in = checkpoint(p);
    let bitmaps = (
        vec![0u8; cp_in.nat_ver_bitmap_bytesize as usize],
        vec![0u8; cp_in.sit_ver_bitmap_bytesize as usize],
    );
    let spec = PackSpec {
        cp: cp_in,
        cp_payload: p.layout.cp_payload,
        segment_count_nat: p.layout.segment_count_nat,
        nat_bitmap: &bitmaps.0,
        sit_bitmap: &bitmaps.1,
        orphans: &[],
        nat_journal: &nat,
        sit_journal: &sit,
        data_logs: [(&hot_data, hot_data.len()), (&[], 0), (&[], 0)],
        node_logs: Some([&hot_node, &[], &[]]),
        nat_bits: Some((&full, &empty)),
        geo: p.layout.geometry,
    };
    let pack = build_pack(&spec)?;
    let cp = pack.cp;
    let start = p.layout.segment0_blkaddr as u64;
    let mut writes: Vec<BlockWrite> = pack.body.into_iter().map(|(o, b)| (start + o as u64, b)).collect();
    writes.push((start + pack.last.0 as u64, pack.last.1));
    let old = Checkpoint {
        checkpoint_ver: 0,
        ..cp.clone()
    };
    let old_block = encode(old.encode(p.layout.geometry))?;
    let start1 = start + BLOCKS_PER_SEG as u64;
    writes.push((start1, old_block.clone()));
    for i in 0..p.layout.cp_payload as u64 {
        writes.push((start1 + 1 + i, vec![0; p.block_size()]));
    }
    writes.push((start1 + cp.cp_pack_total_block_count as u64 - 1, old_block));
    Ok((cp, writes))
}

/// Checks a finished plan's checkpoint against its superblock, as a mount would.
pub fn validate(cp: &Checkpoint, sb: &Superblock) -> Result<()> {
    cp.validate(sb)
        .map_err(|e| crate::Error::Invalid(format!("mkfs built an inconsistent checkpoint: {e}")))
}
