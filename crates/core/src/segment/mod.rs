//! Segments: the SIT read for `info` ([`segment_usage`]) and, for a read-write file
//! system, the [`SegmentManager`] (SIT in memory, free/prefree maps, active logs).

mod active_logs;
mod curseg;
mod free;
mod manager;
mod sit;
#[cfg(test)]
mod tests;

pub use active_logs::ActiveLogs;
pub use curseg::{CurSeg, LogType, ALLOC_LFS, ALLOC_SSR, NR_LOGS};
pub use manager::{fsck_roll_forward_limit, SectionInfo, SegmentManager, SitFlush, SpaceNeed, PREFREE_ROOM_FLOOR_SECS};
pub use sit::{SegEntry, SitArea};

use crate::checkpoint::CheckpointState;
use crate::device::BlockDevice;
use crate::Result;
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
/// segments by state. Cost: one block read per 55 segments, in runs.
pub fn segment_usage(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<SegmentUsage> {
    let area = SitArea::of(sb);
    for (segno, _) in &cps.sit_journal {
        if *segno >= sb.segment_count_main {
            return Err(crate::Error::corrupt(
                "SIT journal",
                Some(cps.pack_blkaddr),
                format!("segment {segno} beyond the main area"),
            ));
        }
    }
    let mut u = SegmentUsage::default();
    sit::visit_sit(dev, &area, &cps.sit_bitmap, &cps.sit_journal, |_, e| {
        u.valid_blocks += e.valid_blocks as u64;
        match e.valid_blocks as u32 {
            0 => u.free += 1,
            n if n == sb.blocks_per_seg() => u.full += 1,
            _ => u.partial += 1,
        }
        Ok(())
    })?;
    Ok(u)
}
