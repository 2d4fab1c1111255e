//! Mount-time metadata: the valid superblock copy and the newest valid checkpoint pack,
//! with its version bitmaps, summary journals and orphan list; and, for a read-write
//! file system, the check that nothing awaits roll-forward recovery
//! ([`roll_forward`]), the checkpoint writer ([`mod@write`]) and the pack layout it shares
//! with mkfs ([`pack`]).

mod driver;
pub mod pack;
pub mod periodic;
pub mod roll_forward;
#[cfg(test)]
mod tests;
pub(crate) mod timer;
pub mod write;

use crate::device::{read_block, BlockDevice};
use crate::{Error, Result};
use uf2fs_format::checkpoint::{
    Checkpoint, OrphanBlock, CP_COMPACT_SUM_FLAG, CP_CRC_RECOVERY_FLAG, CP_NOCRC_RECOVERY_FLAG, CP_ORPHAN_PRESENT_FLAG,
};
use uf2fs_format::consts::F2FS_SUPER_OFFSET;
use uf2fs_format::nat::NatEntry;
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::checkpoint_journals;
use uf2fs_format::superblock::{Superblock, SUPERBLOCK_SIZE};

/// The superblock in use and which copy it came from.
#[derive(Clone)]
pub struct SuperblockChoice {
    /// The decoded superblock.
    pub sb: Superblock,
    /// Block (0 or 1) it was read from.
    pub copy: u32,
    /// Why the other copy was not used, if it was bad.
    pub other_problem: Option<String>,
}

/// Reads both superblock copies and returns the first valid one.
pub fn load_superblock(dev: &dyn BlockDevice) -> Result<SuperblockChoice> {
    if dev.block_count() < 2 {
        return Err(Error::corrupt(
            "superblock",
            Some(0),
            format!("image too small ({} blocks)", dev.block_count()),
        ));
    }
    // The first copy sits at byte 1024 of the device, the second at byte 1024 of the
    // volume's second block: 4 KiB further, or 16 KiB on a volume of 16 KiB blocks
    // (`mkfs.f2fs -b 16384`), which the first copy says, or, when it is bad, the
    // second copy itself (its own `log_blocksize` must put it where it was found).
    let unit = dev.block_size() as u64;
    // A block size F2FS does not have (not 4 or 16 KiB): a clear refusal rather than
    // "corrupt".
    let b0 = read_block(dev, 0)?;
    let raw = &b0[F2FS_SUPER_OFFSET..F2FS_SUPER_OFFSET + SUPERBLOCK_SIZE];
    let log_blocksize = uf2fs_format::le::u32_at(raw, 16);
    if uf2fs_format::le::u32_at(raw, 0) == uf2fs_format::consts::F2FS_SUPER_MAGIC
        && uf2fs_format::Geometry::from_log_block_size(log_blocksize).is_err()
    {
        let size = 1u64.checked_shl(log_blocksize).unwrap_or(0);
        return Err(Error::Unsupported {
            feature: "block size",
            detail: format!(
                "the image has blocks of {size} bytes (2^{log_blocksize}); \
                 uf2fs reads F2FS with 4096- and 16384-byte blocks"
            ),
        });
    }
    let try_at = |byte: u64| -> Result<Superblock> {
        let blk = byte / unit;
        let b = read_block(dev, blk)?;
        let at = (byte % unit) as usize;
        Superblock::decode(&b[at..at + SUPERBLOCK_SIZE])
            .map_err(|e| Error::corrupt("superblock", Some(u64::from(byte >= 4096)), e.to_string()))
    };
    let off = F2FS_SUPER_OFFSET as u64;
    let first = try_at(off);
    let second = match &first {
        Ok(sb) => {
            let at = sb.block_size() as u64;
            if dev.block_count() * unit < 2 * at {
                Err(Error::corrupt(
                    "superblock",
                    Some(1),
                    "image too small for a second copy",
                ))
            } else {
                try_at(at + off)
            }
        }
        Err(_) => [uf2fs_format::Geometry::DEFAULT, uf2fs_format::Geometry::BLOCK_16K]
            .map(|g| g.block_size() as u64)
            .into_iter()
            .filter(|&at| dev.block_count() * unit >= 2 * at)
            .map(|at| try_at(at + off).and_then(|sb| found_where_it_says(sb, at)))
            .find(|r| r.is_ok())
            .unwrap_or_else(|| try_at(uf2fs_format::Geometry::DEFAULT.block_size() as u64 + off)),
    };
    match (first, second) {
        (Ok(sb), other) => Ok(SuperblockChoice {
            sb,
            copy: 0,
            other_problem: other.err().map(|e| e.to_string()),
        }),
        (Err(e0), Ok(sb)) => Ok(SuperblockChoice {
            sb,
            copy: 1,
            other_problem: Some(e0.to_string()),
        }),
        (Err(e0), Err(e1)) => Err(Error::corrupt(
            "superblock",
            Some(0),
            format!("both copies are bad: {e0}; {e1}"),
        )),
    }
}

/// A second superblock copy found `at` bytes (plus 1024) into the device, checked to
/// belong there: at its own block size.
fn found_where_it_says(sb: Superblock, at: u64) -> Result<Superblock> {
    if sb.block_size() as u64 != at {
        return Err(Error::corrupt(
            "superblock",
            Some(1),
            format!(
                "copy at byte {} says its blocks are {} bytes",
                at + F2FS_SUPER_OFFSET as u64,
                sb.block_size()
            ),
        ));
    }
    Ok(sb)
}

/// The current checkpoint and what it carries.
#[derive(Debug, Clone)]
pub struct CheckpointState {
    /// The checkpoint block.
    pub cp: Checkpoint,
    /// Pack (0 or 1) in use.
    pub pack: u32,
    /// First block of the pack.
    pub pack_blkaddr: u64,
    /// Why the other pack was not used (invalid, or simply older).
    pub other: String,
    /// NAT version bitmap.
    pub nat_bitmap: Vec<u8>,
    /// SIT version bitmap.
    pub sit_bitmap: Vec<u8>,
    /// NAT entries journalled in the checkpoint.
    pub nat_journal: Vec<(u32, NatEntry)>,
    /// SIT entries journalled in the checkpoint.
    pub sit_journal: Vec<(u32, SitEntry)>,
    /// Orphan inodes recorded in the pack.
    pub orphans: Vec<u32>,
    /// The checkpoint block's stored checksum (node footers written after this
    /// checkpoint carry it under `CP_CRC_RECOVERY_FLAG`).
    pub crc: u32,
}

impl CheckpointState {
    /// The version node blocks written after this checkpoint carry in their footers,
    /// and which roll-forward recovery looks for: the checkpoint's version, with its
    /// checksum in the high 32 bits when the checkpoint has `CP_CRC_RECOVERY_FLAG` (the
    /// kernel's `cur_cp_version` and `cur_cp_crc`).
    pub fn node_version(&self) -> u64 {
        let v = self.cp.checkpoint_ver;
        if self.cp.has_flag(CP_CRC_RECOVERY_FLAG) && !self.cp.has_flag(CP_NOCRC_RECOVERY_FLAG) {
            v | (self.crc as u64) << 32
        } else {
            v
        }
    }

    /// Whether a node footer's version `v` is [`CheckpointState::node_version`]: only
    /// the low 32 bits count under `CP_NOCRC_RECOVERY_FLAG` (set by fsck.f2fs).
    pub fn is_node_version(&self, v: u64) -> bool {
        if self.cp.has_flag(CP_NOCRC_RECOVERY_FLAG) {
            v as u32 == self.cp.checkpoint_ver as u32
        } else {
            v == self.node_version()
        }
    }
}

/// The checkpoint of the pack at `start` and its block's stored checksum.
fn load_pack(dev: &dyn BlockDevice, sb: &Superblock, start: u64) -> Result<(Checkpoint, u32)> {
    let block = read_block(dev, start)?;
    let cp1 = Checkpoint::decode(&block).map_err(|e| Error::corrupt("checkpoint", Some(start), e.to_string()))?;
    let crc = uf2fs_format::le::u32_at(&block, cp1.checksum_offset as usize);
    cp1.validate(sb)
        .map_err(|e| Error::corrupt("checkpoint", Some(start), e.to_string()))?;
    let last = start + cp1.cp_pack_total_block_count as u64 - 1;
    let cp2 = Checkpoint::decode(&read_block(dev, last)?)
        .map_err(|e| Error::corrupt("checkpoint (second copy)", Some(last), e.to_string()))?;
    if cp2.checkpoint_ver != cp1.checkpoint_ver {
        return Err(Error::corrupt(
            "checkpoint",
            Some(start),
            format!(
                "pack torn: first copy version {}, last copy version {}",
                cp1.checkpoint_ver, cp2.checkpoint_ver
            ),
        ));
    }
    Ok((cp1, crc))
}

/// Picks the newest valid checkpoint pack and loads its bitmaps, journals and orphans.
pub fn load_checkpoint(dev: &dyn BlockDevice, sb: &Superblock) -> Result<CheckpointState> {
    let starts = [sb.cp_blkaddr as u64, sb.cp_blkaddr as u64 + sb.blocks_per_seg() as u64];
    // A pack the device could not read is not an invalid pack: choosing the other one
    // could mount an older checkpoint, and the next checkpoint would then overwrite
    // the newer one. The open fails with the device's error instead.
    let packs = [
        unreadable_fails(load_pack(dev, sb, starts[0]))?,
        unreadable_fails(load_pack(dev, sb, starts[1]))?,
    ];
    let pick = match (&packs[0], &packs[1]) {
        (Ok(a), Ok(b)) => usize::from(b.0.checkpoint_ver.wrapping_sub(a.0.checkpoint_ver) as i64 > 0),
        (Ok(_), Err(_)) => 0,
        (Err(_), Ok(_)) => 1,
        (Err(a), Err(b)) => {
            return Err(Error::corrupt(
                "checkpoint",
                Some(starts[0]),
                format!("no valid checkpoint pack: {a}; {b}"),
            ));
        }
    };
    let [p0, p1] = packs;
    let ((cp, crc), other) = if pick == 0 { (p0?, p1) } else { (p1?, p0) };
    let other = match other.map(|o| o.0) {
        Ok(o) if o.checkpoint_ver == cp.checkpoint_ver => "valid, same version (a mirror copy)".to_string(),
        Ok(o) => format!("valid, older (version {})", o.checkpoint_ver),
        Err(e) => format!("not usable: {e}"),
    };
    let start = starts[pick];
    let with_payload = read_blocks(dev, start, 1 + sb.cp_payload as u64)?;
    let (nat_bitmap, sit_bitmap) = cp
        .version_bitmaps(&with_payload, sb.cp_payload, sb.geometry())
        .map_err(|e| Error::corrupt("checkpoint", Some(start), e.to_string()))?;
    let compact = cp.has_flag(CP_COMPACT_SUM_FLAG);
    let sum_at = start + cp.cp_pack_start_sum as u64;
    let sum_blocks = if compact { 1 } else { 3 };
    if cp.cp_pack_start_sum as u64 + sum_blocks >= cp.cp_pack_total_block_count as u64 {
        return Err(Error::corrupt(
            "checkpoint",
            Some(start),
            "summary blocks run past the pack",
        ));
    }
    let sums = read_blocks(dev, sum_at, sum_blocks)?;
    let journals = checkpoint_journals(&sums, compact, sb.geometry())
        .map_err(|e| Error::corrupt("checkpoint summary", Some(sum_at), e.to_string()))?;
    let orphans = load_orphans(dev, sb, &cp, start)?;
    Ok(CheckpointState {
        cp,
        pack: pick as u32,
        pack_blkaddr: start,
        other,
        nat_bitmap,
        sit_bitmap,
        nat_journal: journals.nat,
        sit_journal: journals.sit,
        orphans,
        crc,
    })
}

/// A pack's load result, or the device's error when it could not be read.
fn unreadable_fails<T>(pack: Result<T>) -> Result<Result<T>> {
    match pack {
        Err(e @ Error::Io { .. }) => Err(e),
        other => Ok(other),
    }
}

fn load_orphans(dev: &dyn BlockDevice, sb: &Superblock, cp: &Checkpoint, start: u64) -> Result<Vec<u32>> {
    if !cp.has_flag(CP_ORPHAN_PRESENT_FLAG) {
        return Ok(Vec::new());
    }
    let first = 1 + sb.cp_payload as u64;
    let count = (cp.cp_pack_start_sum as u64).saturating_sub(first);
    let mut inos = Vec::new();
    for i in 0..count {
        let at = start + first + i;
        let ob = OrphanBlock::decode(&read_block(dev, at)?)
            .map_err(|e| Error::corrupt("orphan block", Some(at), e.to_string()))?;
        inos.extend(ob.inos);
    }
    Ok(inos)
}

/// Reads `n` consecutive blocks.
pub fn read_blocks(dev: &dyn BlockDevice, start: u64, n: u64) -> Result<Vec<u8>> {
    let mut b = vec![0u8; n as usize * dev.block_size()];
    dev.read_blocks(start, &mut b)?;
    Ok(b)
}
