//! Checkpoint packs (`struct f2fs_checkpoint`) and orphan blocks.
//!
//! A pack starts with a checkpoint block, then `cp_payload` payload blocks, orphan blocks,
//! summary blocks, and ends with a second copy of the checkpoint block. A pack is trusted
//! only when both copies carry a valid checksum and the same version.

use crate::consts::*;
use crate::crc::{crc32_raw, f2fs_crc32};
use crate::le::{put_u16, put_u32, put_u64, u16_at, u32_at, u64_at};
use crate::superblock::Superblock;
use crate::{FormatError, Geometry, Result};

const S: &str = "checkpoint";
/// Offset of the variable-size version bitmaps (and the smallest checksum offset).
pub const CP_MIN_CHKSUM_OFFSET: usize = 192;
/// Default checksum offset of a 4 KiB checkpoint block: its last 4 bytes (see
/// [`Geometry::cp_checksum_offset`] for others).
pub const CP_CHKSUM_OFFSET: usize = BLOCK_SIZE - 4;

/// `ckpt_flags` bits, with short names for `uf2fs info`.
pub const CP_FLAGS: &[(u32, &str)] = &[
    (0x0001, "umount"),
    (0x0002, "orphan_present"),
    (0x0004, "compact_summary"),
    (0x0008, "error"),
    (0x0010, "fsck"),
    (0x0020, "fastboot"),
    (0x0040, "crc_recovery"),
    (0x0080, "nat_bits"),
    (0x0100, "trimmed"),
    (0x0200, "nocrc_recovery"),
    (0x0400, "large_nat_bitmap"),
    (0x0800, "quota_need_fsck"),
    (0x1000, "disabled"),
    (0x2000, "disabled_quick"),
    (0x4000, "resizefs"),
];
/// Clean unmount.
pub const CP_UMOUNT_FLAG: u32 = 0x0001;
/// Orphan blocks present in the pack.
pub const CP_ORPHAN_PRESENT_FLAG: u32 = 0x0002;
/// Data summaries stored compacted.
pub const CP_COMPACT_SUM_FLAG: u32 = 0x0004;
/// The file system hit an error.
pub const CP_ERROR_FLAG: u32 = 0x0008;
/// The file system asks for a full fsck.
pub const CP_FSCK_FLAG: u32 = 0x0010;
/// Node footers carry the checkpoint checksum too (roll-forward recovery).
pub const CP_CRC_RECOVERY_FLAG: u32 = 0x0040;
/// Roll-forward recovery ignores node footer checksums.
pub const CP_NOCRC_RECOVERY_FLAG: u32 = 0x0200;
/// Quota files need fsck.
pub const CP_QUOTA_NEED_FSCK_FLAG: u32 = 0x0800;
/// Checkpoints are disabled (`checkpoint=disable`): the image holds unaccounted writes.
pub const CP_DISABLED_FLAG: u32 = 0x1000;
/// As [`CP_DISABLED_FLAG`], quick variant.
pub const CP_DISABLED_QUICK_FLAG: u32 = 0x2000;
/// A resize was in progress.
pub const CP_RESIZEFS_FLAG: u32 = 0x4000;
/// Data summaries were trimmed (discarded) at format time.
pub const CP_TRIMMED_FLAG: u32 = 0x0100;
/// The pack ends with NAT bits (full/empty NAT block bitmaps).
pub const CP_NAT_BITS_FLAG: u32 = 0x0080;
/// NAT bitmap stored after the checksum at the minimal offset.
pub const CP_LARGE_NAT_BITMAP_FLAG: u32 = 0x0400;

/// A decoded checkpoint block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Version; the valid pack with the larger one is current.
    pub checkpoint_ver: u64,
    /// Blocks available to users.
    pub user_block_count: u64,
    /// Valid blocks in the main area.
    pub valid_block_count: u64,
    /// Segments reserved for GC.
    pub rsvd_segment_count: u32,
    /// Overprovisioned segments.
    pub overprov_segment_count: u32,
    /// Free segments in the main area.
    pub free_segment_count: u32,
    /// Active node log segments (hot, warm, cold, ...).
    pub cur_node_segno: [u32; MAX_ACTIVE_NODE_LOGS],
    /// Next block offset in each active node log.
    pub cur_node_blkoff: [u16; MAX_ACTIVE_NODE_LOGS],
    /// Active data log segments (hot, warm, cold, ...).
    pub cur_data_segno: [u32; MAX_ACTIVE_DATA_LOGS],
    /// Next block offset in each active data log.
    pub cur_data_blkoff: [u16; MAX_ACTIVE_DATA_LOGS],
    /// `CP_*_FLAG` bits.
    pub ckpt_flags: u32,
    /// Blocks in this pack, both checkpoint copies included.
    pub cp_pack_total_block_count: u32,
    /// Pack-relative block where data summaries start.
    pub cp_pack_start_sum: u32,
    /// Valid node blocks.
    pub valid_node_count: u32,
    /// Valid inodes.
    pub valid_inode_count: u32,
    /// Next node id to try when allocating.
    pub next_free_nid: u32,
    /// Bytes of the SIT version bitmap.
    pub sit_ver_bitmap_bytesize: u32,
    /// Bytes of the NAT version bitmap.
    pub nat_ver_bitmap_bytesize: u32,
    /// Offset of the checksum in the block.
    pub checksum_offset: u32,
    /// Seconds the file system has been mounted in all.
    pub elapsed_time: u64,
    /// Allocation type (LFS or SSR) of each active log.
    pub alloc_type: [u8; 16],
}

/// Computes a checkpoint block's checksum the way F2FS does: over the bytes before the
/// checksum, continued over the bytes after it when the checksum is not at the end.
/// `block` is the whole block.
pub fn checkpoint_crc(block: &[u8], checksum_offset: usize) -> u32 {
    let crc = f2fs_crc32(&block[..checksum_offset]);
    if checksum_offset + 4 < block.len() {
        crc32_raw(crc, &block[checksum_offset + 4..])
    } else {
        crc
    }
}

impl Checkpoint {
    /// Decodes a checkpoint block and checks its checksum.
    /// `b` is the whole block (4 or 16 KiB).
    pub fn decode(b: &[u8]) -> Result<Checkpoint> {
        let g = Geometry::of_block(S, b.len())?;
        let checksum_offset = u32_at(b, 164);
        let ofs = checksum_offset as usize;
        if !(CP_MIN_CHKSUM_OFFSET..=g.cp_checksum_offset()).contains(&ofs) {
            return Err(FormatError::invalid(S, format!("checksum offset {ofs} out of range")));
        }
        let stored = u32_at(b, ofs);
        let computed = checkpoint_crc(b, ofs);
        if stored != computed {
            return Err(FormatError::BadChecksum {
                structure: S,
                stored,
                computed,
            });
        }
        let mut cur_node_segno = [0; 8];
        let mut cur_node_blkoff = [0; 8];
        let mut cur_data_segno = [0; 8];
        let mut cur_data_blkoff = [0; 8];
        for i in 0..8 {
            cur_node_segno[i] = u32_at(b, 36 + 4 * i);
            cur_node_blkoff[i] = u16_at(b, 68 + 2 * i);
            cur_data_segno[i] = u32_at(b, 84 + 4 * i);
            cur_data_blkoff[i] = u16_at(b, 116 + 2 * i);
        }
        let mut alloc_type = [0u8; 16];
        alloc_type.copy_from_slice(&b[176..192]);
        Ok(Checkpoint {
            checkpoint_ver: u64_at(b, 0),
            user_block_count: u64_at(b, 8),
            valid_block_count: u64_at(b, 16),
            rsvd_segment_count: u32_at(b, 24),
            overprov_segment_count: u32_at(b, 28),
            free_segment_count: u32_at(b, 32),
            cur_node_segno,
            cur_node_blkoff,
            cur_data_segno,
            cur_data_blkoff,
            ckpt_flags: u32_at(b, 132),
            cp_pack_total_block_count: u32_at(b, 136),
            cp_pack_start_sum: u32_at(b, 140),
            valid_node_count: u32_at(b, 144),
            valid_inode_count: u32_at(b, 148),
            next_free_nid: u32_at(b, 152),
            sit_ver_bitmap_bytesize: u32_at(b, 156),
            nat_ver_bitmap_bytesize: u32_at(b, 160),
            checksum_offset,
            elapsed_time: u64_at(b, 168),
            alloc_type,
        })
    }

    /// Whether flag `f` is set.
    pub fn has_flag(&self, f: u32) -> bool {
        self.ckpt_flags & f != 0
    }

    /// Names of the flags set.
    pub fn flag_names(&self) -> Vec<&'static str> {
        CP_FLAGS
            .iter()
            .filter(|(bit, _)| self.ckpt_flags & bit != 0)
            .map(|&(_, n)| n)
            .collect()
    }

    /// Checks the fields that must agree with the superblock's geometry.
    pub fn validate(&self, sb: &Superblock) -> Result<()> {
        let bad = |d: String| Err(FormatError::invalid(S, d));
        let sit_bytes = ((sb.segment_count_sit / 2) << sb.log_blocks_per_seg) / 8;
        let nat_bytes = ((sb.segment_count_nat / 2) << sb.log_blocks_per_seg) / 8;
        if self.sit_ver_bitmap_bytesize != sit_bytes || self.nat_ver_bitmap_bytesize != nat_bytes {
            return bad(format!(
                "version bitmap sizes sit {} nat {} (expected {sit_bytes} and {nat_bytes})",
                self.sit_ver_bitmap_bytesize, self.nat_ver_bitmap_bytesize
            ));
        }
        let total = self.cp_pack_total_block_count;
        if total < 2 + sb.cp_payload || total > sb.blocks_per_seg() {
            return bad(format!("pack of {total} blocks"));
        }
        if self.cp_pack_start_sum < 1 + sb.cp_payload || self.cp_pack_start_sum >= total {
            return bad(format!(
                "summaries start at pack block {} of {total}",
                self.cp_pack_start_sum
            ));
        }
        for i in 0..NR_CURSEG_NODE_TYPE {
            if self.cur_node_segno[i] >= sb.segment_count_main || self.cur_node_blkoff[i] as u32 > sb.blocks_per_seg() {
                return bad(format!(
                    "node log {i} at segment {} offset {}",
                    self.cur_node_segno[i], self.cur_node_blkoff[i]
                ));
            }
            if self.cur_data_segno[i] >= sb.segment_count_main || self.cur_data_blkoff[i] as u32 > sb.blocks_per_seg() {
                return bad(format!(
                    "data log {i} at segment {} offset {}",
                    self.cur_data_segno[i], self.cur_data_blkoff[i]
                ));
            }
        }
        if self.user_block_count > sb.block_count || self.valid_block_count > self.user_block_count {
            return bad(format!(
                "user blocks {} valid blocks {}",
                self.user_block_count, self.valid_block_count
            ));
        }
        Ok(())
    }

    /// Extracts the (NAT, SIT) version bitmaps. `blocks` holds the checkpoint block
    /// followed by its `cp_payload` payload blocks, of `geo`'s size.
    pub fn version_bitmaps(&self, blocks: &[u8], cp_payload: u32, geo: Geometry) -> Result<(Vec<u8>, Vec<u8>)> {
        let block_size = geo.block_size();
        FormatError::need(S, blocks, block_size * (1 + cp_payload as usize))?;
        let nat_len = self.nat_ver_bitmap_bytesize as usize;
        let sit_len = self.sit_ver_bitmap_bytesize as usize;
        let base = CP_MIN_CHKSUM_OFFSET;
        let (nat_at, sit_at) = if self.has_flag(CP_LARGE_NAT_BITMAP_FLAG) {
            // Checksum first, then the NAT bitmap, then the SIT bitmap.
            (base + 4, base + 4 + nat_len)
        } else if cp_payload > 0 {
            // NAT bitmap in the checkpoint block; SIT bitmap in the payload blocks.
            (base, block_size)
        } else {
            (base + sit_len, base)
        };
        let crc_at = self.checksum_offset as usize;
        let take = |at: usize, len: usize, what: &str| -> Result<Vec<u8>> {
            let end = at + len;
            let overlaps_crc = at < crc_at + 4 && crc_at < end;
            if end > blocks.len() || overlaps_crc {
                return Err(FormatError::invalid(
                    S,
                    format!("{what} version bitmap of {len} bytes at offset {at} overruns the pack"),
                ));
            }
            Ok(blocks[at..end].to_vec())
        };
        Ok((take(nat_at, nat_len, "NAT")?, take(sit_at, sit_len, "SIT")?))
    }
}

/// A decoded orphan block: inodes unlinked while open, to reclaim at mount.
///
/// As the kernel writes them: `blk_addr` numbers the pack's orphan blocks from 1 and
/// `entry_count` counts the inodes of this block only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrphanBlock {
    /// Orphan inode numbers.
    pub inos: Vec<u32>,
    /// Index of this block among the pack's orphan blocks, from 1.
    pub blk_addr: u16,
    /// Number of orphan blocks in the pack.
    pub blk_count: u16,
    /// Orphans in this block.
    pub entry_count: u32,
}

impl OrphanBlock {
    /// Decodes an orphan block.
    pub fn decode(b: &[u8]) -> Result<OrphanBlock> {
        const O: &str = "orphan block";
        let g = Geometry::of_block(O, b.len())?;
        let footer = g.orphans_per_block() * 4;
        let blk_addr = u16_at(b, footer + 4);
        let blk_count = u16_at(b, footer + 6);
        let entry_count = u32_at(b, footer + 8);
        if entry_count as usize > g.orphans_per_block() {
            return Err(FormatError::invalid(O, format!("{entry_count} entries in one block")));
        }
        if blk_addr > blk_count {
            return Err(FormatError::invalid(O, format!("block {blk_addr} of {blk_count}")));
        }
        let inos = (0..entry_count as usize).map(|i| u32_at(b, 4 * i)).collect();
        Ok(OrphanBlock {
            inos,
            blk_addr,
            blk_count,
            entry_count,
        })
    }
}

impl OrphanBlock {
    /// Encodes into an orphan block of `geo`'s size: at most
    /// [`Geometry::orphans_per_block`] inode numbers, then the block's index, the pack's
    /// orphan block count and its orphan count in all.
    pub fn encode(&self, geo: Geometry) -> Result<Vec<u8>> {
        let max = geo.orphans_per_block();
        if self.inos.len() > max {
            return Err(FormatError::invalid(
                "orphan block",
                format!("{} inodes (at most {max})", self.inos.len()),
            ));
        }
        let mut b = vec![0u8; geo.block_size()];
        for (i, ino) in self.inos.iter().enumerate() {
            put_u32(&mut b, 4 * i, *ino);
        }
        let footer = max * 4;
        put_u16(&mut b, footer + 4, self.blk_addr);
        put_u16(&mut b, footer + 6, self.blk_count);
        put_u32(&mut b, footer + 8, self.entry_count);
        Ok(b)
    }
}

impl Checkpoint {
    /// Encodes into a checkpoint block of `geo`'s size with zeroed version bitmaps and
    /// the checksum at `checksum_offset` (which must lie in 192..=block size - 4).
    pub fn encode(&self, geo: Geometry) -> Result<Vec<u8>> {
        let mut b = vec![0u8; geo.block_size()];
        self.encode_fields(&mut b)?;
        self.seal(&mut b);
        Ok(b)
    }

    /// Encodes the checkpoint block followed by its `cp_payload` payload blocks, with
    /// the NAT and SIT version bitmaps placed as [`Checkpoint::version_bitmaps`] reads
    /// them. The bitmaps must be `nat_ver_bitmap_bytesize` and `sit_ver_bitmap_bytesize`
    /// bytes long; blocks are of `geo`'s size.
    pub fn encode_with_bitmaps(
        &self,
        nat_bitmap: &[u8],
        sit_bitmap: &[u8],
        cp_payload: u32,
        geo: Geometry,
    ) -> Result<Vec<u8>> {
        let bs = geo.block_size();
        let (nat_len, sit_len) = (
            self.nat_ver_bitmap_bytesize as usize,
            self.sit_ver_bitmap_bytesize as usize,
        );
        if nat_bitmap.len() != nat_len || sit_bitmap.len() != sit_len {
            return Err(FormatError::invalid(
                S,
                format!(
                    "bitmaps of {} and {} bytes (expected {nat_len} and {sit_len})",
                    nat_bitmap.len(),
                    sit_bitmap.len()
                ),
            ));
        }
        let mut b = vec![0u8; bs * (1 + cp_payload as usize)];
        self.encode_fields(&mut b[..bs])?;
        let base = CP_MIN_CHKSUM_OFFSET;
        let (nat_at, sit_at) = if self.has_flag(CP_LARGE_NAT_BITMAP_FLAG) {
            (base + 4, base + 4 + nat_len)
        } else if cp_payload > 0 {
            (base, bs)
        } else {
            (base + sit_len, base)
        };
        let crc_at = self.checksum_offset as usize;
        for (at, bits, what) in [(nat_at, nat_bitmap, "NAT"), (sit_at, sit_bitmap, "SIT")] {
            let end = at + bits.len();
            if end > b.len() || (at < crc_at + 4 && crc_at < end) {
                return Err(FormatError::invalid(
                    S,
                    format!("{what} version bitmap of {} bytes does not fit the pack", bits.len()),
                ));
            }
            b[at..end].copy_from_slice(bits);
        }
        self.seal(&mut b[..bs]);
        Ok(b)
    }

    /// Writes the fixed fields (everything before the version bitmaps).
    fn encode_fields(&self, b: &mut [u8]) -> Result<()> {
        let ofs = self.checksum_offset as usize;
        if !(CP_MIN_CHKSUM_OFFSET..=b.len() - 4).contains(&ofs) {
            return Err(FormatError::invalid(S, format!("checksum offset {ofs} out of range")));
        }
        put_u64(b, 0, self.checkpoint_ver);
        put_u64(b, 8, self.user_block_count);
        put_u64(b, 16, self.valid_block_count);
        put_u32(b, 24, self.rsvd_segment_count);
        put_u32(b, 28, self.overprov_segment_count);
        put_u32(b, 32, self.free_segment_count);
        for i in 0..MAX_ACTIVE_NODE_LOGS {
            put_u32(b, 36 + 4 * i, self.cur_node_segno[i]);
            put_u16(b, 68 + 2 * i, self.cur_node_blkoff[i]);
            put_u32(b, 84 + 4 * i, self.cur_data_segno[i]);
            put_u16(b, 116 + 2 * i, self.cur_data_blkoff[i]);
        }
        let words = [
            (132, self.ckpt_flags),
            (136, self.cp_pack_total_block_count),
            (140, self.cp_pack_start_sum),
            (144, self.valid_node_count),
            (148, self.valid_inode_count),
            (152, self.next_free_nid),
            (156, self.sit_ver_bitmap_bytesize),
            (160, self.nat_ver_bitmap_bytesize),
            (164, self.checksum_offset),
        ];
        for (off, v) in words {
            put_u32(b, off, v);
        }
        put_u64(b, 168, self.elapsed_time);
        b[176..192].copy_from_slice(&self.alloc_type);
        Ok(())
    }

    /// Stores the checksum of a fully written checkpoint block.
    fn seal(&self, block: &mut [u8]) {
        let ofs = self.checksum_offset as usize;
        put_u32(block, ofs, 0);
        let crc = checkpoint_crc(block, ofs);
        put_u32(block, ofs, crc);
    }
}

/// Blocks of NAT bits a pack ends with, for a NAT area of `segment_count_nat` segments
/// (both copies counted): an 8-byte header, then the full and the empty bitmaps, in
/// blocks of `geo`'s size.
pub fn nat_bits_blocks(segment_count_nat: u32, geo: Geometry) -> u32 {
    let bytes = nat_bits_bytes(segment_count_nat);
    (2 * bytes + 8).div_ceil(geo.block_size()) as u32
}

/// Bytes of each NAT-bits bitmap: one bit per NAT block.
pub fn nat_bits_bytes(segment_count_nat: u32) -> usize {
    ((segment_count_nat as usize / 2) << LOG_BLOCKS_PER_SEG) / 8
}

/// The NAT bits at the end of a checkpoint pack (`CP_NAT_BITS_FLAG`): which NAT blocks
/// are completely full and which completely empty, so a mount can skip scanning them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatBits {
    /// `checkpoint_ver | crc << 32` of the checkpoint the bits belong to.
    pub cp_ver_crc: u64,
    /// Bit `i` (little-endian order) set: NAT block `i` has every entry in use.
    pub full: Vec<u8>,
    /// Bit `i` (little-endian order) set: NAT block `i` has no entry in use.
    pub empty: Vec<u8>,
}

impl NatBits {
    /// The header value that ties NAT bits to the checkpoint they belong to.
    pub fn header(checkpoint_ver: u64, checkpoint_crc: u32) -> u64 {
        checkpoint_ver | ((checkpoint_crc as u64) << 32)
    }

    /// Decodes the NAT bits blocks (of `geo`'s size) of a NAT area of
    /// `segment_count_nat` segments.
    pub fn decode(b: &[u8], segment_count_nat: u32, geo: Geometry) -> Result<NatBits> {
        let bytes = nat_bits_bytes(segment_count_nat);
        FormatError::need(
            "NAT bits",
            b,
            nat_bits_blocks(segment_count_nat, geo) as usize * geo.block_size(),
        )?;
        Ok(NatBits {
            cp_ver_crc: u64_at(b, 0),
            full: b[8..8 + bytes].to_vec(),
            empty: b[8 + bytes..8 + 2 * bytes].to_vec(),
        })
    }

    /// Encodes into whole blocks of `geo`'s size; both bitmaps must be
    /// `nat_bits_bytes` long.
    pub fn encode(&self, segment_count_nat: u32, geo: Geometry) -> Result<Vec<u8>> {
        let bytes = nat_bits_bytes(segment_count_nat);
        if self.full.len() != bytes || self.empty.len() != bytes {
            return Err(FormatError::invalid(
                "NAT bits",
                format!(
                    "bitmaps of {} and {} bytes (expected {bytes})",
                    self.full.len(),
                    self.empty.len()
                ),
            ));
        }
        let mut b = vec![0u8; nat_bits_blocks(segment_count_nat, geo) as usize * geo.block_size()];
        put_u64(&mut b, 0, self.cp_ver_crc);
        b[8..8 + bytes].copy_from_slice(&self.full);
        b[8 + bytes..8 + 2 * bytes].copy_from_slice(&self.empty);
        Ok(b)
    }
}
