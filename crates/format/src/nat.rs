//! Node address table: node id -> (inode, block address).

use crate::consts::*;
use crate::le::u32_at;
use crate::{FormatError, Result};

/// Size of one NAT entry.
pub const NAT_ENTRY_SIZE: usize = 9;

/// One NAT entry (`struct f2fs_nat_entry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NatEntry {
    /// Version, bumped when the node is freed.
    pub version: u8,
    /// Inode the node belongs to.
    pub ino: u32,
    /// Block address of the node (NULL_ADDR when free).
    pub block_addr: u32,
}

impl NatEntry {
    /// Decodes the 9 bytes of an entry.
    pub fn decode(b: &[u8]) -> Result<NatEntry> {
        FormatError::need("NAT entry", b, NAT_ENTRY_SIZE)?;
        Ok(NatEntry {
            version: b[0],
            ino: u32_at(b, 1),
            block_addr: u32_at(b, 5),
        })
    }

    /// Encodes into 9 bytes.
    pub fn encode(&self, b: &mut [u8]) {
        b[0] = self.version;
        b[1..5].copy_from_slice(&self.ino.to_le_bytes());
        b[5..9].copy_from_slice(&self.block_addr.to_le_bytes());
    }
}

/// Entry `index` (0..455, or 0..1820 in a 16 KiB block) of NAT block `block` (the
/// whole block).
pub fn nat_block_entry(block: &[u8], index: usize) -> Result<NatEntry> {
    if index >= crate::Geometry::of_block("NAT block", block.len())?.nat_entries_per_block() {
        return Err(FormatError::invalid("NAT block", format!("entry {index} out of range")));
    }
    NatEntry::decode(block.get(index * NAT_ENTRY_SIZE..).unwrap_or(&[]))
}

/// Block address of NAT block `block_index` given the NAT area start and the NAT
/// version bitmap: each segment pair holds two copies, the bitmap picks the live one.
pub fn nat_block_addr(nat_blkaddr: u32, nat_bitmap: &[u8], block_index: u32) -> u64 {
    pair_block_addr(nat_blkaddr, nat_bitmap, block_index)
}

/// The NAT's layout: copy 0 of block `i` lives in the first segment of its pair, copy 1
/// in the second; bit `i` of the version bitmap (MSB-first) selects copy 1. (The SIT's
/// copies do not alternate: see [`crate::sit::sit_block_addr`].)
pub fn pair_block_addr(area_blkaddr: u32, bitmap: &[u8], i: u32) -> u64 {
    let seg_pair = (i >> LOG_BLOCKS_PER_SEG) as u64;
    let mut addr = area_blkaddr as u64 + (seg_pair << (LOG_BLOCKS_PER_SEG + 1)) + (i & (BLOCKS_PER_SEG - 1)) as u64;
    if crate::le::test_bit_msb(bitmap, i as usize) {
        addr += BLOCKS_PER_SEG as u64;
    }
    addr
}
