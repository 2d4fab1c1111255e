//! Segment information table: per-segment valid block counts and bitmaps.

use crate::consts::*;
use crate::le::{u16_at, u64_at};
use crate::{FormatError, Result};

/// One SIT entry (`struct f2fs_sit_entry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitEntry {
    /// Valid blocks in the segment (low 10 bits of `vblocks`).
    pub valid_blocks: u16,
    /// Segment type (active log kind) from the high 6 bits of `vblocks`.
    pub seg_type: u8,
    /// Valid-block bitmap, MSB-first, one bit per block.
    pub valid_map: [u8; SIT_VBLOCK_MAP_SIZE],
    /// Segment age for cost-benefit GC.
    pub mtime: u64,
}

impl SitEntry {
    /// Decodes the 74 bytes of an entry and checks the count against the bitmap.
    pub fn decode(b: &[u8]) -> Result<SitEntry> {
        const S: &str = "SIT entry";
        FormatError::need(S, b, SIT_ENTRY_SIZE)?;
        let vblocks = u16_at(b, 0);
        let mut valid_map = [0u8; SIT_VBLOCK_MAP_SIZE];
        valid_map.copy_from_slice(&b[2..66]);
        let e = SitEntry {
            valid_blocks: vblocks & 0x3ff,
            seg_type: (vblocks >> 10) as u8,
            valid_map,
            mtime: u64_at(b, 66),
        };
        let bits: u32 = e.valid_map.iter().map(|x| x.count_ones()).sum();
        if bits != e.valid_blocks as u32 || e.valid_blocks as u32 > BLOCKS_PER_SEG {
            return Err(FormatError::invalid(
                S,
                format!("{} valid blocks but {bits} bits set", e.valid_blocks),
            ));
        }
        Ok(e)
    }

    /// Encodes into 74 bytes.
    pub fn encode(&self, b: &mut [u8]) {
        let v = (self.valid_blocks & 0x3ff) | ((self.seg_type as u16) << 10);
        b[0..2].copy_from_slice(&v.to_le_bytes());
        b[2..66].copy_from_slice(&self.valid_map);
        b[66..74].copy_from_slice(&self.mtime.to_le_bytes());
    }
}

/// Entry `index` (0..55, or 0..221 in a 16 KiB block) of SIT block `block` (the whole
/// block).
pub fn sit_block_entry(block: &[u8], index: usize) -> Result<SitEntry> {
    if index >= crate::Geometry::of_block("SIT block", block.len())?.sit_entries_per_block() {
        return Err(FormatError::invalid("SIT block", format!("entry {index} out of range")));
    }
    SitEntry::decode(block.get(index * SIT_ENTRY_SIZE..).unwrap_or(&[]))
}

/// Block address of SIT block `block_index` (the block holding the entries of segments
/// `block_index * 55..`): the SIT area holds all of copy 0 and then all of copy 1
/// (unlike the NAT, whose copies alternate segment by segment); bit `block_index` of the
/// SIT version bitmap (MSB-first) selects copy 1. `segment_count_sit` counts both copies.
pub fn sit_block_addr(sit_blkaddr: u32, segment_count_sit: u32, sit_bitmap: &[u8], block_index: u32) -> u64 {
    let copy_blocks = (segment_count_sit as u64 / 2) << LOG_BLOCKS_PER_SEG;
    let addr = sit_blkaddr as u64 + block_index as u64;
    if crate::le::test_bit_msb(sit_bitmap, block_index as usize) {
        addr + copy_blocks
    } else {
        addr
    }
}

#[cfg(test)]
mod tests {
    use super::sit_block_addr;

    #[test]
    fn sit_copies_follow_each_other() {
        // Two segments per copy: copy 0 is blocks 0..1024 of the area, copy 1 1024..2048.
        let mut bitmap = [0u8; 128];
        assert_eq!(sit_block_addr(1000, 4, &bitmap, 0), 1000);
        assert_eq!(sit_block_addr(1000, 4, &bitmap, 600), 1600);
        crate::le::set_bit_msb(&mut bitmap, 600, true);
        assert_eq!(sit_block_addr(1000, 4, &bitmap, 600), 2624);
    }
}
