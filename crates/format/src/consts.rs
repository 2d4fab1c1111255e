//! Constants of the on-disk format (4 KiB blocks only).

/// Superblock magic.
pub const F2FS_SUPER_MAGIC: u32 = 0xF2F5_2010;
/// Byte offset of the superblock inside blocks 0 and 1.
pub const F2FS_SUPER_OFFSET: usize = 1024;
/// The only block size uf2fs supports (and the kernel on 4 KiB-page machines).
pub const BLOCK_SIZE: usize = 4096;
/// log2 of [`BLOCK_SIZE`].
pub const LOG_BLOCK_SIZE: u32 = 12;
/// Blocks per segment (fixed by the SIT valid map size).
pub const BLOCKS_PER_SEG: u32 = 512;
/// log2 of [`BLOCKS_PER_SEG`].
pub const LOG_BLOCKS_PER_SEG: u32 = 9;

/// Block address meaning "no block" (a hole).
pub const NULL_ADDR: u32 = 0;
/// Block address meaning "reserved, not yet written" (reads as zeros).
pub const NEW_ADDR: u32 = 0xFFFF_FFFF;
/// Block address marking a compressed cluster.
pub const COMPRESS_ADDR: u32 = 0xFFFF_FFFE;

/// Longest file name in bytes.
pub const F2FS_NAME_LEN: usize = 255;
/// Size of one checkpoint pack's first block area (two packs alternate).
pub const F2FS_CP_PACKS: u32 = 2;
/// Block address slots in an inode without extra attributes or inline xattrs.
pub const DEF_ADDRS_PER_INODE: usize = 923;
/// Node ids in an inode: direct(2), indirect(2), double indirect(1).
pub const DEF_NIDS_PER_INODE: usize = 5;
/// Block addresses in a direct node.
pub const ADDRS_PER_BLOCK: usize = 1018;
/// Node ids in an indirect node.
pub const NIDS_PER_BLOCK: usize = 1018;
/// Default inline xattr area in 4-byte slots (200 bytes).
pub const DEFAULT_INLINE_XATTR_ADDRS: usize = 50;
/// Slots reserved at the start of inline data.
pub const DEF_INLINE_RESERVED_SIZE: usize = 1;

/// Largest `i_extra_isize` this format version knows (bytes).
pub const F2FS_TOTAL_EXTRA_ATTR_SIZE: usize = 36;
/// Largest inline xattr area in slots (leaves room for a minimal inline dentry).
pub const MAX_INLINE_XATTR_ADDRS: usize =
    DEF_ADDRS_PER_INODE - F2FS_TOTAL_EXTRA_ATTR_SIZE / 4 - DEF_INLINE_RESERVED_SIZE - 10;
/// Byte offset of `i_addr` inside an inode block.
pub const I_ADDR_OFFSET: usize = 360;
/// Byte offset of `i_nid` inside an inode block.
pub const I_NID_OFFSET: usize = I_ADDR_OFFSET + DEF_ADDRS_PER_INODE * 4;
/// Size of the node footer at the end of every node block.
pub const NODE_FOOTER_SIZE: usize = 24;
/// Byte offset of the node footer.
pub const NODE_FOOTER_OFFSET: usize = BLOCK_SIZE - NODE_FOOTER_SIZE;

/// NAT entries per NAT block (9 bytes each).
pub const NAT_ENTRY_PER_BLOCK: usize = BLOCK_SIZE / 9;
/// SIT entries per SIT block (74 bytes each).
pub const SIT_ENTRY_PER_BLOCK: usize = BLOCK_SIZE / 74;
/// Size of a SIT entry.
pub const SIT_ENTRY_SIZE: usize = 74;
/// Bytes of a SIT entry's valid-block bitmap.
pub const SIT_VBLOCK_MAP_SIZE: usize = 64;

/// Summary entries per summary block (one per block of a segment).
pub const ENTRIES_IN_SUM: usize = 512;
/// Size of one summary entry.
pub const SUMMARY_SIZE: usize = 7;
/// Size of the summary footer.
pub const SUM_FOOTER_SIZE: usize = 5;
/// Size of the journal area of a summary block.
pub const SUM_JOURNAL_SIZE: usize = BLOCK_SIZE - SUM_FOOTER_SIZE - SUMMARY_SIZE * ENTRIES_IN_SUM;
/// NAT journal entries in a summary journal (13 bytes each).
pub const NAT_JOURNAL_ENTRIES: usize = (SUM_JOURNAL_SIZE - 2) / 13;
/// SIT journal entries in a summary journal (78 bytes each).
pub const SIT_JOURNAL_ENTRIES: usize = (SUM_JOURNAL_SIZE - 2) / 78;

/// Orphan inode numbers per orphan block.
pub const F2FS_ORPHANS_PER_BLOCK: usize = 1020;

/// Directory entries per dentry block.
pub const NR_DENTRY_IN_BLOCK: usize = 214;
/// Size of one directory entry record.
pub const SIZE_OF_DIR_ENTRY: usize = 11;
/// Bytes of name per dentry slot.
pub const F2FS_SLOT_LEN: usize = 8;
/// Bytes of the dentry bitmap in a dentry block.
pub const SIZE_OF_DENTRY_BITMAP: usize = NR_DENTRY_IN_BLOCK.div_ceil(8);
/// Reserved bytes after the bitmap in a dentry block.
pub const SIZE_OF_DENTRY_RESERVED: usize =
    BLOCK_SIZE - ((SIZE_OF_DIR_ENTRY + F2FS_SLOT_LEN) * NR_DENTRY_IN_BLOCK + SIZE_OF_DENTRY_BITMAP);
/// Deepest directory hash level.
pub const MAX_DIR_HASH_DEPTH: u32 = 63;

/// Number of active logs (segments being filled) described by a checkpoint.
pub const NR_CURSEG_DATA_TYPE: usize = 3;
/// Number of active node logs.
pub const NR_CURSEG_NODE_TYPE: usize = 3;
/// Maximum active node logs the checkpoint has room for.
pub const MAX_ACTIVE_NODE_LOGS: usize = 8;
/// Maximum active data logs the checkpoint has room for.
pub const MAX_ACTIVE_DATA_LOGS: usize = 8;
/// Maximum devices of a multi-device F2FS.
pub const MAX_DEVICES: usize = 8;

// Compile-time checks of the on-disk layout (4 KiB blocks): each size is the sum of its
// fields as Linux F2FS's include/linux/f2fs_fs.h lays them out, and each block's parts
// fill it exactly. A wrong constant stops the build instead of corrupting images.
const _: () = {
    // f2fs_sit_entry: vblocks (u16), valid map, mtime (u64); one map bit per block.
    assert!(SIT_ENTRY_SIZE == 2 + SIT_VBLOCK_MAP_SIZE + 8);
    assert!(SIT_VBLOCK_MAP_SIZE * 8 == BLOCKS_PER_SEG as usize);
    assert!(SIT_ENTRY_PER_BLOCK == BLOCK_SIZE / SIT_ENTRY_SIZE);
    // node_footer: nid, ino, flag (u32 each), cp_ver (u64), next_blkaddr (u32).
    assert!(NODE_FOOTER_SIZE == 4 + 4 + 4 + 8 + 4);
    assert!(NODE_FOOTER_OFFSET + NODE_FOOTER_SIZE == BLOCK_SIZE);
    // direct and indirect node blocks, and the inode's addresses and node ids.
    assert!(ADDRS_PER_BLOCK * 4 + NODE_FOOTER_SIZE == BLOCK_SIZE);
    assert!(NIDS_PER_BLOCK * 4 + NODE_FOOTER_SIZE == BLOCK_SIZE);
    assert!(I_NID_OFFSET + DEF_NIDS_PER_INODE * 4 + NODE_FOOTER_SIZE == BLOCK_SIZE);
    // f2fs_nat_entry: version (u8), ino, block_addr (u32 each).
    assert!(NAT_ENTRY_PER_BLOCK == BLOCK_SIZE / (1 + 4 + 4));
    // f2fs_summary: nid (u32), version (u8), ofs_in_node (u16); one per block of a
    // segment, then the journal and the footer.
    assert!(SUMMARY_SIZE == 4 + 1 + 2);
    assert!(ENTRIES_IN_SUM == BLOCKS_PER_SEG as usize);
    assert!(SUMMARY_SIZE * ENTRIES_IN_SUM + SUM_JOURNAL_SIZE + SUM_FOOTER_SIZE == BLOCK_SIZE);
    // Journal entries: a nid and a NAT entry; a segment number and a SIT entry (after
    // the journal's u16 count).
    assert!(NAT_JOURNAL_ENTRIES == (SUM_JOURNAL_SIZE - 2) / (4 + 9));
    assert!(SIT_JOURNAL_ENTRIES == (SUM_JOURNAL_SIZE - 2) / (4 + SIT_ENTRY_SIZE));
    // f2fs_orphan_block: inode numbers, then reserved, blk_addr (u16), blk_count (u16),
    // entry_count and check_sum (u32 each).
    assert!(F2FS_ORPHANS_PER_BLOCK * 4 + 4 + 2 + 2 + 4 + 4 == BLOCK_SIZE);
    // f2fs_dentry_block: bitmap, 3 reserved bytes, the entries, their name slots.
    assert!(SIZE_OF_DENTRY_BITMAP + 3 + NR_DENTRY_IN_BLOCK * (SIZE_OF_DIR_ENTRY + F2FS_SLOT_LEN) == BLOCK_SIZE);
    assert!(1 << LOG_BLOCK_SIZE == BLOCK_SIZE && 1 << LOG_BLOCKS_PER_SEG == BLOCKS_PER_SEG);
};
