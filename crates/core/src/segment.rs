//! Segment state from the SIT: valid blocks per main-area segment.

use crate::checkpoint::CheckpointState;
use crate::device::{read_block, BlockDevice};
use crate::{Error, Result};
use uf2fs_format::consts::SIT_ENTRY_PER_BLOCK;
use uf2fs_format::sit::{sit_block_addr, sit_block_entry};
use uf2fs_format::superblock::Superblock;

/// Segments of the main area by how full they are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentUsage {
    /// Segments with no valid block.
    pub free: u64,
    /// Segments with every block valid.
    pub full: u64,
    /// Segments partly valid (GC candidates).
    pub partial: u64,
    /// Valid blocks in all.
    pub valid_blocks: u64,
}

/// Reads the whole SIT (live copy of each block, journal entries on top) and counts
/// segments by state. Cost: one block read per 55 segments.
pub fn segment_usage(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<SegmentUsage> {
    let segs = sb.segment_count_main as usize;
    let mut valid = vec![0u16; segs];
    let per = SIT_ENTRY_PER_BLOCK;
    for blk in 0..segs.div_ceil(per) {
        let addr = sit_block_addr(sb.sit_blkaddr, sb.segment_count_sit, &cps.sit_bitmap, blk as u32);
        let b = read_block(dev, addr)?;
        for (i, v) in valid.iter_mut().enumerate().skip(blk * per).take(per) {
            let e = sit_block_entry(&b, i - blk * per)
                .map_err(|e| Error::corrupt("SIT block", Some(addr), e.to_string()))?;
            *v = e.valid_blocks;
        }
    }
    for (segno, e) in &cps.sit_journal {
        let slot = valid.get_mut(*segno as usize).ok_or_else(|| {
            Error::corrupt(
                "SIT journal",
                Some(cps.pack_blkaddr),
                format!("segment {segno} beyond the main area"),
            )
        })?;
        *slot = e.valid_blocks;
    }
    let mut u = SegmentUsage::default();
    for v in valid {
        u.valid_blocks += v as u64;
        match v as u32 {
            0 => u.free += 1,
            n if n == sb.blocks_per_seg() => u.full += 1,
            _ => u.partial += 1,
        }
    }
    Ok(u)
}
