//! Sizes that follow from the block size: the node tree's fan-out, entries per NAT,
//! SIT, orphan and summary block, dentries per block, where an inode's node ids sit.
//!
//! F2FS's block is the page size of the machine that made it: 4 KiB nearly everywhere,
//! 16 KiB on Android's 16 KiB-page devices (`mkfs.f2fs -b 16384`). Everything sized in
//! bytes inside a block grows with it; the rest of the format (superblock, inode
//! fields before `i_addr`, footers, entries) does not. [`Geometry`] holds the derived
//! counts for one block size, made once from the superblock
//! ([`crate::superblock::Superblock::geometry`]); [`Geometry::DEFAULT`] is the 4 KiB
//! one, whose values are also the `consts` of the same names.
//!
//! Summaries are the one structure whose size can differ from the block's. Without
//! the `packed_ssa` feature a summary fills a block (2048 entries and a 2043-byte
//! journal in a 16 KiB block, of which a segment's 512 blocks use 512 entries); with
//! it (Linux 6.19, f2fs-tools `mkfs.f2fs -b 16384 -O packed_ssa`) a summary is 4 KiB
//! whatever the block size, as on 4 KiB volumes, and four segments share one 16 KiB
//! SSA block. [`Geometry::sum_block_size`] is that size, and every summary count and
//! offset here follows from it.

use crate::consts::{
    DEF_NIDS_PER_INODE, F2FS_SLOT_LEN, I_ADDR_OFFSET, NODE_FOOTER_SIZE, SIZE_OF_DIR_ENTRY, SUMMARY_SIZE,
    SUM_FOOTER_SIZE,
};
use crate::{FormatError, Result};

/// Bytes from the start of an inode block to the end of `i_ext`, where `i_addr` starts.
const OFFSET_OF_END_OF_I_EXT: usize = I_ADDR_OFFSET;
/// Bytes of a NAT entry.
const NAT_ENTRY_BYTES: usize = 9;
/// Bytes of a SIT entry.
const SIT_ENTRY_BYTES: usize = 74;
/// Bytes of a NAT journal entry (nid and entry).
const NAT_JOURNAL_ENTRY_BYTES: usize = 13;
/// Bytes of a SIT journal entry (segment number and entry).
const SIT_JOURNAL_ENTRY_BYTES: usize = 78;
/// Bytes of an orphan block's footer.
const ORPHAN_FOOTER_BYTES: usize = 16;
/// Smallest block size F2FS has (`F2FS_MIN_BLKSIZE`), log2.
pub const MIN_LOG_BLOCK_SIZE: u32 = 12;
/// Largest block size F2FS has (`F2FS_MAX_BLKSIZE`, 16 KiB), log2.
pub const MAX_LOG_BLOCK_SIZE: u32 = 14;

/// The block-size-dependent layout of one volume (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Geometry {
    log_block_size: u32,
    /// Whether summaries are 4 KiB in larger blocks (`packed_ssa`; never set for 4 KiB
    /// blocks, where it changes nothing).
    packed_ssa: bool,
}

impl Default for Geometry {
    fn default() -> Geometry {
        Geometry::DEFAULT
    }
}

impl Geometry {
    /// 4 KiB blocks: every image but Android's 16 KiB-page ones.
    pub const DEFAULT: Geometry = Geometry {
        log_block_size: 12,
        packed_ssa: false,
    };
    /// 16 KiB blocks (`mkfs.f2fs -b 16384`), one 16 KiB summary block per segment.
    pub const BLOCK_16K: Geometry = Geometry {
        log_block_size: 14,
        packed_ssa: false,
    };
    /// 16 KiB blocks with 4 KiB summaries packed four to an SSA block
    /// (`mkfs.f2fs -b 16384 -O packed_ssa`).
    pub const BLOCK_16K_PACKED_SSA: Geometry = Geometry {
        log_block_size: 14,
        packed_ssa: true,
    };

    /// The geometry of blocks of `2^log_block_size` bytes: 4 KiB or 16 KiB (what
    /// mkfs.f2fs makes and Linux mounts on 4 KiB- and 16 KiB-page machines).
    pub fn from_log_block_size(log_block_size: u32) -> Result<Geometry> {
        if log_block_size != MIN_LOG_BLOCK_SIZE && log_block_size != MAX_LOG_BLOCK_SIZE {
            return Err(FormatError::invalid(
                "superblock",
                format!("block size 2^{log_block_size} (F2FS blocks are 4096 or 16384 bytes)"),
            ));
        }
        Ok(Geometry {
            log_block_size,
            packed_ssa: false,
        })
    }

    /// This geometry with (`on`) or without the `packed_ssa` summary layout. With 4 KiB
    /// blocks summaries are 4 KiB either way, and the geometry stays [`Geometry::DEFAULT`].
    pub const fn with_packed_ssa(self, on: bool) -> Geometry {
        Geometry {
            log_block_size: self.log_block_size,
            packed_ssa: on && self.log_block_size > MIN_LOG_BLOCK_SIZE,
        }
    }

    /// Whether summaries are smaller than blocks (`packed_ssa` on a 16 KiB volume).
    pub const fn is_packed_ssa(&self) -> bool {
        self.packed_ssa
    }

    /// Bytes of one segment summary (`F2FS_SUM_BLKSIZE`): the block size, or 4096 with
    /// `packed_ssa`. Entries, journal and footer of a summary are laid out in this many
    /// bytes; a summary kept in a checkpoint pack's block sits at the block's start.
    pub const fn sum_block_size(&self) -> usize {
        if self.packed_ssa {
            1 << MIN_LOG_BLOCK_SIZE
        } else {
            self.block_size()
        }
    }

    /// Segment summaries one SSA block holds (`SUMS_PER_BLOCK`: 1, or 4 with
    /// `packed_ssa` on a 16 KiB volume).
    pub const fn sums_per_ssa_block(&self) -> usize {
        self.block_size() / self.sum_block_size()
    }

    /// Where segment `segno`'s summary is in the SSA: the block, counted from the SSA's
    /// first, and the byte offset in it (`segno / SUMS_PER_BLOCK` and
    /// `sum_block_size * (segno % SUMS_PER_BLOCK)`).
    pub const fn ssa_slot(&self, segno: u32) -> (u64, usize) {
        let per = self.sums_per_ssa_block() as u32;
        ((segno / per) as u64, (segno % per) as usize * self.sum_block_size())
    }

    /// SSA blocks that hold the summaries of `segments` main-area segments.
    pub const fn ssa_blocks_for(&self, segments: u32) -> u32 {
        segments.div_ceil(self.sums_per_ssa_block() as u32)
    }

    /// The geometry whose blocks are `len` bytes: how a structure that fills one block
    /// (a node, dentry, checkpoint or summary block) finds its own, from the slice it
    /// is given. `structure` names it in the error for any other length.
    pub fn of_block(structure: &'static str, len: usize) -> Result<Geometry> {
        match len {
            4096 => Ok(Geometry::DEFAULT),
            16384 => Ok(Geometry::BLOCK_16K),
            _ => Err(FormatError::invalid(
                structure,
                format!("{len} bytes is not a block (4096 or 16384 bytes)"),
            )),
        }
    }

    /// log2 of the block size.
    pub const fn log_block_size(&self) -> u32 {
        self.log_block_size
    }

    /// Bytes of a block (`F2FS_BLKSIZE`).
    pub const fn block_size(&self) -> usize {
        1 << self.log_block_size
    }

    /// Whether this is the 4 KiB geometry.
    pub const fn is_default(&self) -> bool {
        self.log_block_size == MIN_LOG_BLOCK_SIZE
    }

    /// Byte offset of the node footer in a node block.
    pub const fn node_footer_offset(&self) -> usize {
        self.block_size() - NODE_FOOTER_SIZE
    }

    /// `i_addr` slots of an inode (`DEF_ADDRS_PER_INODE`: 923 for 4 KiB, 3995 for 16
    /// KiB), before extra attributes and the inline xattr area take theirs.
    pub const fn addrs_per_inode(&self) -> usize {
        (self.block_size() - OFFSET_OF_END_OF_I_EXT - 4 * DEF_NIDS_PER_INODE - NODE_FOOTER_SIZE) / 4
    }

    /// Byte offset of `i_nid` in an inode block (right after `i_addr`).
    pub const fn i_nid_offset(&self) -> usize {
        I_ADDR_OFFSET + 4 * self.addrs_per_inode()
    }

    /// Data addresses in a direct node (`DEF_ADDRS_PER_BLOCK`: 1018 or 4090).
    pub const fn addrs_per_block(&self) -> usize {
        (self.block_size() - NODE_FOOTER_SIZE) / 4
    }

    /// Node ids in an indirect node (`NIDS_PER_BLOCK`: 1018 or 4090).
    pub const fn nids_per_block(&self) -> usize {
        (self.block_size() - NODE_FOOTER_SIZE) / 4
    }

    /// NAT entries per NAT block (455 or 1820).
    pub const fn nat_entries_per_block(&self) -> usize {
        self.block_size() / NAT_ENTRY_BYTES
    }

    /// SIT entries per SIT block (55 or 221).
    pub const fn sit_entries_per_block(&self) -> usize {
        self.block_size() / SIT_ENTRY_BYTES
    }

    /// Inode numbers per orphan block (1020 or 4092).
    pub const fn orphans_per_block(&self) -> usize {
        (self.block_size() - ORPHAN_FOOTER_BYTES) / 4
    }

    /// Summary entries a summary has room for (`ENTRIES_IN_SUM`: 512, or 2048 in a
    /// 16 KiB summary block of which only the first 512, one per block of a segment,
    /// are used).
    pub const fn entries_in_sum(&self) -> usize {
        self.sum_block_size() / 8
    }

    /// Byte offset of the journal in a summary block (after the entries).
    pub const fn sum_journal_offset(&self) -> usize {
        SUMMARY_SIZE * self.entries_in_sum()
    }

    /// Bytes of a summary's journal (`SUM_JOURNAL_SIZE`: 507, or 2043 in a 16 KiB
    /// summary block).
    pub const fn sum_journal_size(&self) -> usize {
        self.sum_block_size() - SUM_FOOTER_SIZE - SUMMARY_SIZE * self.entries_in_sum()
    }

    /// Byte offset of a summary's footer (its type byte) from the summary's start.
    pub const fn sum_footer_offset(&self) -> usize {
        self.sum_block_size() - SUM_FOOTER_SIZE
    }

    /// NAT entries a summary journal holds (38 or 157).
    pub const fn nat_journal_entries(&self) -> usize {
        (self.sum_journal_size() - 2) / NAT_JOURNAL_ENTRY_BYTES
    }

    /// SIT entries a summary journal holds (6 or 26).
    pub const fn sit_journal_entries(&self) -> usize {
        (self.sum_journal_size() - 2) / SIT_JOURNAL_ENTRY_BYTES
    }

    /// Dentry slots of a dentry block (`NR_DENTRY_IN_BLOCK`: 214 or 856).
    pub const fn dentries_per_block(&self) -> usize {
        self.block_size() * 8 / ((SIZE_OF_DIR_ENTRY + F2FS_SLOT_LEN) * 8 + 1)
    }

    /// Bytes of a dentry block's bitmap (27 or 107).
    pub const fn dentry_bitmap_size(&self) -> usize {
        self.dentries_per_block().div_ceil(8)
    }

    /// Reserved bytes between a dentry block's bitmap and its dentries (3 or 13).
    pub const fn dentry_reserved_size(&self) -> usize {
        self.block_size()
            - ((SIZE_OF_DIR_ENTRY + F2FS_SLOT_LEN) * self.dentries_per_block() + self.dentry_bitmap_size())
    }

    /// Default offset of a checkpoint block's checksum: its last 4 bytes.
    pub const fn cp_checksum_offset(&self) -> usize {
        self.block_size() - 4
    }

    /// Largest inline xattr area an inode may declare, in 4-byte slots
    /// (`MAX_INLINE_XATTR_ADDRS`).
    pub const fn max_inline_xattr_addrs(&self) -> usize {
        self.addrs_per_inode()
            - crate::consts::F2FS_TOTAL_EXTRA_ATTR_SIZE / 4
            - crate::consts::DEF_INLINE_RESERVED_SIZE
            - 10
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts::*;

    #[test]
    fn the_4k_geometry_is_the_consts() {
        let g = Geometry::DEFAULT;
        assert_eq!(g.block_size(), BLOCK_SIZE);
        assert_eq!(g.addrs_per_inode(), DEF_ADDRS_PER_INODE);
        assert_eq!(g.addrs_per_block(), ADDRS_PER_BLOCK);
        assert_eq!(g.nids_per_block(), NIDS_PER_BLOCK);
        assert_eq!(g.i_nid_offset(), I_NID_OFFSET);
        assert_eq!(g.node_footer_offset(), NODE_FOOTER_OFFSET);
        assert_eq!(g.nat_entries_per_block(), NAT_ENTRY_PER_BLOCK);
        assert_eq!(g.sit_entries_per_block(), SIT_ENTRY_PER_BLOCK);
        assert_eq!(g.entries_in_sum(), ENTRIES_IN_SUM);
        assert_eq!(g.sum_journal_size(), SUM_JOURNAL_SIZE);
        assert_eq!(g.nat_journal_entries(), NAT_JOURNAL_ENTRIES);
        assert_eq!(g.sit_journal_entries(), SIT_JOURNAL_ENTRIES);
        assert_eq!(g.orphans_per_block(), F2FS_ORPHANS_PER_BLOCK);
        assert_eq!(g.dentries_per_block(), NR_DENTRY_IN_BLOCK);
        assert_eq!(g.dentry_bitmap_size(), SIZE_OF_DENTRY_BITMAP);
        assert_eq!(g.dentry_reserved_size(), SIZE_OF_DENTRY_RESERVED);
        assert_eq!(g.max_inline_xattr_addrs(), crate::consts::MAX_INLINE_XATTR_ADDRS);
    }

    /// The 16 KiB values, worked out by hand from include/linux/f2fs_fs.h's
    /// definitions (and what mkfs.f2fs -b 16384 writes).
    #[test]
    fn the_16k_geometry() {
        let g = Geometry::BLOCK_16K;
        assert_eq!(g.block_size(), 16384);
        assert_eq!(g.addrs_per_inode(), 3995);
        assert_eq!(g.addrs_per_block(), 4090);
        assert_eq!(g.nids_per_block(), 4090);
        assert_eq!(g.i_nid_offset(), 360 + 4 * 3995);
        assert_eq!(g.i_nid_offset() + 20 + 24, 16384);
        assert_eq!(g.nat_entries_per_block(), 1820);
        assert_eq!(g.sit_entries_per_block(), 221);
        assert_eq!(g.entries_in_sum(), 2048);
        assert_eq!(g.sum_journal_size(), 2043);
        assert_eq!(g.nat_journal_entries(), 157);
        assert_eq!(g.sit_journal_entries(), 26);
        assert_eq!(g.orphans_per_block(), 4092);
        assert_eq!(g.dentries_per_block(), 856);
        assert_eq!(g.dentry_bitmap_size(), 107);
        assert_eq!(g.dentry_reserved_size(), 13);
        assert!(Geometry::from_log_block_size(13).is_err());
        assert!(Geometry::from_log_block_size(16).is_err());
        assert_eq!(g.sums_per_ssa_block(), 1);
        assert_eq!(g.ssa_slot(7), (7, 0));
    }

    /// `packed_ssa` (Linux 6.19's include/linux/f2fs_fs.h and segment.h): 4 KiB
    /// summaries in 16 KiB blocks, everything else as [`Geometry::BLOCK_16K`].
    #[test]
    fn the_16k_packed_ssa_geometry() {
        let g = Geometry::BLOCK_16K.with_packed_ssa(true);
        assert_eq!(g, Geometry::BLOCK_16K_PACKED_SSA);
        assert_eq!(g.block_size(), 16384);
        assert_eq!(g.sum_block_size(), 4096);
        assert_eq!(g.entries_in_sum(), ENTRIES_IN_SUM);
        assert_eq!(g.sum_journal_offset(), SUMMARY_SIZE * ENTRIES_IN_SUM);
        assert_eq!(g.sum_journal_size(), SUM_JOURNAL_SIZE);
        assert_eq!(g.nat_journal_entries(), 38);
        assert_eq!(g.sit_journal_entries(), 6);
        assert_eq!(g.sum_footer_offset(), 4091);
        assert_eq!(g.sums_per_ssa_block(), 4);
        assert_eq!(g.ssa_slot(0), (0, 0));
        assert_eq!(g.ssa_slot(6), (1, 8192));
        assert_eq!(g.ssa_slot(11), (2, 12288));
        assert_eq!(g.ssa_blocks_for(9), 3);
        assert_eq!(g.nat_entries_per_block(), 1820);
        assert_eq!(g.addrs_per_inode(), 3995);
        // 4 KiB blocks: the feature changes nothing.
        assert_eq!(Geometry::DEFAULT.with_packed_ssa(true), Geometry::DEFAULT);
        assert_eq!(
            Geometry::BLOCK_16K_PACKED_SSA.with_packed_ssa(false),
            Geometry::BLOCK_16K
        );
    }
}
