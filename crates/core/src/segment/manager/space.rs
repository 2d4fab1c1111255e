//! Space rules of the write path: blocks reserved for new node and data blocks (the
//! kernel counts them in `valid_block_count` as soon as an address is reserved), and
//! whether the writes still pending fit without taking the reserved sections.
//!
//! Two limits, both checked before an operation changes anything:
//! - blocks: valid + reserved + new ≤ `user_block_count` (overprovisioned space is not
//!   for users);
//! - sections: each log takes the rest of its segment (and the free segments after it
//!   in its section), then whole free sections; after all pending writes at least
//!   `rsvd_segment_count` worth of sections must stay free (the kernel keeps them for
//!   garbage collection); under the default GC policy, sections emptied since the last
//!   checkpoint may stand in for them (see [`SegmentManager::set_prefree_is_room`]).

use super::{LogType, SegmentManager, NR_LOGS};
use crate::device::BlockDevice;
use crate::{Error, Result};
use uf2fs_format::checkpoint::Checkpoint;
use uf2fs_format::consts::BLOCKS_PER_SEG;
use uf2fs_format::summary::Summary;

/// The fixed limits and the reservation count.
#[derive(Debug, Clone)]
pub(super) struct SpaceRules {
    user_blocks: u64,
    reserved_new: u64,
    pub(super) reserved_secs: u32,
    /// Whether sections emptied since the last checkpoint count as free here (see
    /// [`SegmentManager::set_prefree_is_room`]).
    prefree_is_room: bool,
}

impl SpaceRules {
    pub(super) fn new(cp: &Checkpoint, segs_per_sec: u32) -> SpaceRules {
        SpaceRules {
            user_blocks: cp.user_block_count,
            reserved_new: 0,
            reserved_secs: cp.rsvd_segment_count.div_ceil(segs_per_sec.max(1)),
            prefree_is_room: false,
        }
    }
}

/// Blocks that pending and coming writes need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceNeed {
    /// Blocks each log will take (rewrites and new blocks alike).
    pub per_log: [u64; NR_LOGS],
    /// Blocks not yet reserved that will become valid (new nodes, new data blocks).
    pub new_blocks: u64,
}

impl SpaceNeed {
    /// Both needs added up.
    pub fn plus(&self, other: &SpaceNeed) -> SpaceNeed {
        SpaceNeed {
            per_log: std::array::from_fn(|i| self.per_log[i] + other.per_log[i]),
            new_blocks: self.new_blocks + other.new_blocks,
        }
    }
}

/// Free sections the default GC policy keeps beyond the pending writes while sections
/// emptied since the last checkpoint stand in for reserved ones: the room its
/// checkpoint and one victim's move need (the kernel's `NR_GC_CHECKPOINT_SECS`).
pub const PREFREE_ROOM_FLOOR_SECS: u32 = 3;

impl SegmentManager {
    /// Lets sections emptied since the last checkpoint (prefree, free once it is
    /// written) count towards the reserved sections an operation must leave, as long as
    /// [`PREFREE_ROOM_FLOOR_SECS`] really free sections stay beyond the pending writes.
    /// An operation past that fails with [`Error::NoSpace`] and the caller's reclaim
    /// writes the checkpoint, which gives the reserved sections back. The default GC
    /// policy works this way so that many emptied sections share one checkpoint; off,
    /// the reserved sections are never taken (the kernel's rule).
    pub fn set_prefree_is_room(&mut self, on: bool) {
        self.space.prefree_is_room = on;
    }

    /// Reserves `n` blocks for new nodes or data blocks not written yet; fails with
    /// [`Error::NoSpace`] (nothing reserved) past the user blocks.
    pub fn reserve_new_blocks(&mut self, n: u64) -> Result<()> {
        let s = &mut self.space;
        if self.valid_blocks + s.reserved_new + n > s.user_blocks {
            return Err(Error::NoFreeBlocks(format!(
                "{} valid and {} reserved blocks of {} user blocks",
                self.valid_blocks, s.reserved_new, s.user_blocks
            )));
        }
        s.reserved_new += n;
        Ok(())
    }

    /// Gives back `n` reserved blocks (their owner was dropped before being written).
    pub fn release_new_blocks(&mut self, n: u64) {
        debug_assert!(self.space.reserved_new >= n);
        self.space.reserved_new = self.space.reserved_new.saturating_sub(n);
    }

    /// Blocks reserved and not written yet.
    pub fn reserved_new_blocks(&self) -> u64 {
        self.space.reserved_new
    }

    /// Blocks left for users: user blocks less valid and reserved ones.
    pub fn free_user_blocks(&self) -> u64 {
        self.space
            .user_blocks
            .saturating_sub(self.valid_blocks + self.space.reserved_new)
    }

    /// Writes a reserved block: [`SegmentManager::alloc_block`], with the reservation
    /// consumed once the block is taken.
    pub fn alloc_reserved_block(&mut self, dev: &dyn BlockDevice, log: LogType, sum: Summary) -> Result<u64> {
        self.alloc_reserved_block_for(dev, log, 0, sum)
    }

    /// [`SegmentManager::alloc_reserved_block`] for writeback context `stream` (see
    /// [`SegmentManager::alloc_block_for`]).
    pub fn alloc_reserved_block_for(
        &mut self,
        dev: &dyn BlockDevice,
        log: LogType,
        stream: usize,
        sum: Summary,
    ) -> Result<u64> {
        let addr = self.alloc_block_for(dev, log, stream, sum)?;
        self.release_new_blocks(1);
        Ok(addr)
    }

    /// Fails with [`Error::NoSpace`] unless `need` fits: new blocks within the user
    /// blocks, and every log's blocks within its segment, its section and whole free
    /// sections, leaving the reserved sections free.
    pub fn check_room(&self, need: &SpaceNeed) -> Result<()> {
        self.check_room_leaving(need, self.space.reserved_secs)
    }

    /// [`SegmentManager::check_room`] for an operation that frees space (unlink,
    /// rmdir): it may take the reserved sections too, so that a full volume can still
    /// be emptied (uf2fs has no cleaner that would make room otherwise).
    pub fn check_room_freeing(&self, need: &SpaceNeed) -> Result<()> {
        self.check_room_leaving(need, 0)
    }

    fn check_room_leaving(&self, need: &SpaceNeed, keep_secs: u32) -> Result<()> {
        if self.valid_blocks + self.space.reserved_new + need.new_blocks > self.space.user_blocks {
            return Err(Error::NoFreeBlocks(format!(
                "{} new blocks wanted, {} of {} user blocks free",
                need.new_blocks,
                self.free_user_blocks(),
                self.space.user_blocks
            )));
        }
        let per_log = self.active_logs.fold(&need.per_log);
        // Each stream log (a writeback context's own warm data log) may open a
        // section of its own for the warm data pending.
        let streams = if per_log[LogType::WarmData as usize] > 0 {
            self.streams.len() as u32
        } else {
            0
        };
        let wanted: u32 = LogType::ALL
            .iter()
            .map(|&log| self.sections_for(log, per_log[log as usize]))
            .sum::<u32>()
            + streams;
        let free = self.free.free_sections();
        let standing_in = if self.space.prefree_is_room && keep_secs > 0 && free >= wanted + PREFREE_ROOM_FLOOR_SECS {
            self.prefree_section_gain()
        } else {
            0
        };
        if free + standing_in < wanted + keep_secs {
            return Err(Error::NoSpace(format!(
                "pending writes need {wanted} new sections; {free} free, {keep_secs} reserved for cleaning"
            )));
        }
        Ok(())
    }

    /// Whole free sections `log` takes to write `blocks` more blocks (a log that fills
    /// its segment moves on at once, so filling the last one takes another).
    pub(super) fn sections_for(&self, log: LogType, blocks: u64) -> u32 {
        if blocks == 0 {
            return 0;
        }
        let cur = &self.logs[log as usize];
        let spsec = self.geo.segs_per_sec;
        let mut room = 0u64;
        if cur.alloc_type == super::ALLOC_LFS {
            room += BLOCKS_PER_SEG.saturating_sub(cur.next_blkoff as u32) as u64;
            let end = (cur.segno / spsec + 1) * spsec;
            let later = (cur.segno + 1..end.min(self.geo.segments))
                .filter(|&s| self.free.is_free(s))
                .count() as u64;
            room += later * BLOCKS_PER_SEG as u64;
        }
        if blocks < room {
            return 0;
        }
        let per_section = spsec as u64 * BLOCKS_PER_SEG as u64;
        (1 + (blocks - room) / per_section) as u32
    }
}
