//! The checkpoint writer: makes the in-memory NAT and SIT state durable as a new
//! checkpoint pack in the pack location not in use.
//!
//! Write order (the crash-safety argument, `docs/design/write-path.md`):
//! 1. dirty NAT entries: NAT journal, or NAT blocks written to their unused copies;
//! 2. full logs move on (their SSA blocks written); dirty SIT entries: SIT journal, or
//!    SIT blocks written to their unused copies;
//! 3. flush; the new pack's checkpoint block, payload, orphan blocks, summaries and NAT
//!    bits; flush; its closing checkpoint block; flush;
//! 4. prefree segments become free.
//!
//! Until the closing block is durable the old pack stays the newest valid one, and
//! everything it points to is untouched: NAT and SIT blocks went to the copies its
//! version bitmaps do not select, and the new pack to the other pack location.
//! A failed checkpoint leaves memory ahead of the disk (bitmaps flipped, journals
//! moved), so the writer then refuses further checkpoints until the image is reopened.

use super::pack::{build_pack, Pack, PackSpec};
use super::CheckpointState;
use crate::device::BlockDevice;
use crate::node::{NatBitsMaps, NatFlush, NodeCounts, NodeManager};
use crate::segment::{LogType, SegmentManager};
use crate::{Error, Result};
use std::sync::Mutex;
use uf2fs_format::checkpoint::{
    Checkpoint, CP_CRC_RECOVERY_FLAG, CP_DISABLED_FLAG, CP_DISABLED_QUICK_FLAG, CP_ERROR_FLAG, CP_FSCK_FLAG,
    CP_LARGE_NAT_BITMAP_FLAG, CP_NOCRC_RECOVERY_FLAG, CP_QUOTA_NEED_FSCK_FLAG, CP_RESIZEFS_FLAG,
};
use uf2fs_format::consts::NR_CURSEG_DATA_TYPE;
use uf2fs_format::superblock::{
    Superblock, FEATURES, FEATURE_BLKZONED, FEATURE_CASEFOLD, FEATURE_COMPRESSION, FEATURE_ENCRYPT, FEATURE_EXTRA_ATTR,
    FEATURE_FLEXIBLE_INLINE_XATTR, FEATURE_INODE_CHKSUM, FEATURE_INODE_CRTIME, FEATURE_LOST_FOUND, FEATURE_PACKED_SSA,
    FEATURE_PRJQUOTA, FEATURE_QUOTA_INO, FEATURE_RO, FEATURE_SB_CHKSUM, FEATURE_VERITY,
};

/// Features uf2fs can write images with (besides the default set, which has none).
pub const WRITABLE_FEATURES: u32 = FEATURE_BLKZONED
    | FEATURE_EXTRA_ATTR
    | FEATURE_INODE_CHKSUM
    | FEATURE_FLEXIBLE_INLINE_XATTR
    | FEATURE_INODE_CRTIME
    | FEATURE_SB_CHKSUM
    | FEATURE_LOST_FOUND
    | FEATURE_CASEFOLD
    | FEATURE_COMPRESSION
    | FEATURE_PACKED_SSA;

/// Checkpoint flags carried from one checkpoint to the next; the pack builder decides
/// umount, compacted summaries, orphans and NAT bits, and every other flag is dropped.
const KEPT_FLAGS: u32 = CP_LARGE_NAT_BITMAP_FLAG | CP_CRC_RECOVERY_FLAG | CP_NOCRC_RECOVERY_FLAG;

/// Refuses to open for writing what uf2fs cannot write yet: features beyond
/// [`WRITABLE_FEATURES`], checkpoints marked for fsck, and checkpoints written with
/// checkpoints disabled. Whatever fsync left after a checkpoint not written by a clean
/// unmount is replayed at open (`crate::recovery`).
pub fn check_writable(sb: &Superblock, cps: &CheckpointState) -> Result<()> {
    if sb.has(FEATURE_RO) {
        return Err(Error::Unsupported {
            feature: "ro",
            detail:
                "an ro volume is mounted read-only only, as Linux mounts it (uf2fs mkfs IMAGE SOURCE -O ro builds one)"
                    .into(),
        });
    }
    check_writable_features(sb, cps)
}

/// [`check_writable`] for a volume being built ([`crate::Fs::open_to_build`]): the `ro`
/// feature is accepted, and so are `encrypt` and `verity`, volume flags that a fresh
/// volume carries without any encrypted or verity inode (the builder makes none), and
/// `quota` and `project_quota`, whose files the builder writes once the tree is
/// complete ([`crate::Fs::write_quota_files`]).
pub fn check_buildable(sb: &Superblock, cps: &CheckpointState) -> Result<()> {
    let mut plain = sb.clone();
    plain.feature &= !(FEATURE_RO | FEATURE_ENCRYPT | FEATURE_VERITY | FEATURE_QUOTA_INO | FEATURE_PRJQUOTA);
    check_writable_features(&plain, cps)
}

fn check_writable_features(sb: &Superblock, cps: &CheckpointState) -> Result<()> {
    let cp = &cps.cp;
    for &(bit, name) in FEATURES {
        if sb.feature & bit != 0 && WRITABLE_FEATURES & bit == 0 {
            return Err(Error::Unsupported {
                feature: name,
                detail: "uf2fs cannot write images with this feature yet; open the image read-only".into(),
            });
        }
    }
    // Casefolded names are written by folding with the volume's encoding (crate::casefold).
    if sb.has(FEATURE_CASEFOLD) && sb.s_encoding != uf2fs_format::casefold::F2FS_ENC_UTF8_12_1 {
        return Err(Error::Unsupported {
            feature: "casefold",
            detail: format!(
                "name encoding {} (uf2fs knows utf8-12.1 only); open the image read-only",
                sb.s_encoding
            ),
        });
    }
    let unknown = sb.feature & !FEATURES.iter().fold(0, |a, (b, _)| a | b);
    if unknown != 0 {
        return Err(Error::Unsupported {
            feature: "unknown",
            detail: format!("feature bits {unknown:#x}; open the image read-only"),
        });
    }
    let marked = CP_ERROR_FLAG | CP_FSCK_FLAG | CP_QUOTA_NEED_FSCK_FLAG | CP_RESIZEFS_FLAG;
    if cp.ckpt_flags & marked != 0 {
        return Err(Error::corrupt(
            "checkpoint",
            Some(cps.pack_blkaddr),
            format!(
                "marked as needing repair (flags: {}); run fsck.f2fs, or open the image read-only",
                cp.flag_names().join(", ")
            ),
        ));
    }
    if cp.ckpt_flags & (CP_DISABLED_FLAG | CP_DISABLED_QUICK_FLAG) != 0 {
        return Err(Error::Unsupported {
            feature: "checkpoint=disable",
            detail:
                "the image was written with checkpoints disabled; mount it with Linux F2FS first, or open it read-only"
                    .into(),
        });
    }
    Ok(())
}

/// What one checkpoint wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Version of the new checkpoint.
    pub version: u64,
    /// Pack (0 or 1) it went to.
    pub pack: u32,
    /// First block of that pack.
    pub pack_blkaddr: u64,
    /// Blocks of the pack, both checkpoint blocks included (NAT bits not counted).
    pub pack_blocks: u32,
    /// Whether it was an unmount checkpoint (`CP_UMOUNT_FLAG`).
    pub umount: bool,
    /// Whether the data summaries were compacted.
    pub compacted: bool,
    /// Whether the pack ends with NAT bits.
    pub nat_bits: bool,
    /// Entries in the NAT journal.
    pub nat_journal: usize,
    /// NAT blocks written.
    pub nat_blocks: u32,
    /// Entries in the SIT journal.
    pub sit_journal: usize,
    /// SIT blocks written.
    pub sit_blocks: u32,
}

/// The NAT side of a checkpoint, taken before the SegmentManager is locked.
struct NatSide {
    bitmap: Vec<u8>,
    bits: Option<NatBitsMaps>,
    counts: NodeCounts,
    flush: NatFlush,
}

/// Writes a pack starting at block `start`: the body, a flush, the closing checkpoint
/// block, a flush. Everything written before (NAT, SIT, SSA blocks) is flushed first,
/// so a valid new pack never points at blocks still in flight.
fn write_pack(dev: &dyn BlockDevice, start: u64, pack: &Pack) -> Result<()> {
    dev.flush()?;
    for (offset, block) in &pack.body {
        dev.write_blocks(start + *offset as u64, block)?;
    }
    dev.flush()?;
    dev.write_blocks(start + pack.last.0 as u64, &pack.last.1)?;
    dev.flush()
}

/// The last durable checkpoint and whether writing may go on.
pub struct CheckpointWriter {
    last: CheckpointState,
    failed: Option<String>,
    /// Version of the last checkpoint that wrote every dirty page first (GC's
    /// checkpoints leave files' pages dirty), or of the opened one.
    data_version: u64,
}

impl CheckpointWriter {
    /// Starts from the checkpoint the file system was opened with.
    pub fn new(opened: &CheckpointState) -> CheckpointWriter {
        CheckpointWriter {
            last: opened.clone(),
            failed: None,
            data_version: opened.cp.checkpoint_ver,
        }
    }

    /// The last durable checkpoint (the opened one until a checkpoint is written).
    pub fn last(&self) -> &CheckpointState {
        &self.last
    }

    /// Version of the last checkpoint that made all data written before it durable
    /// (one that wrote every dirty page first; GC's checkpoints do not).
    pub fn data_version(&self) -> u64 {
        self.data_version
    }

    /// Records that the checkpoint just written wrote every dirty page first.
    pub(crate) fn note_data_written(&mut self) {
        self.data_version = self.last.cp.checkpoint_ver;
    }

    /// Writes a checkpoint (an unmount checkpoint with `umount`) recording `orphans` in
    /// its orphan blocks. After a failure every later call fails: memory is ahead of
    /// the disk.
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &mut self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        nodes: &NodeManager,
        segs: &Mutex<SegmentManager>,
        umount: bool,
        orphans: &[u32],
        before_nat: &dyn Fn(u64) -> Result<()>,
    ) -> Result<CheckpointReport> {
        if let Some(why) = &self.failed {
            return Err(Error::eio(format!(
                "an earlier checkpoint failed ({why}); reopen the image"
            )));
        }
        self.write_inner(dev, sb, nodes, segs, (umount, orphans), before_nat)
            .inspect_err(|e| {
                self.failed = Some(e.to_string());
            })
    }

    /// `before_nat` writes dirty data and node blocks (given the footer version of node
    /// blocks written now, the last checkpoint's) before the NAT is flushed.
    fn write_inner(
        &mut self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        nodes: &NodeManager,
        segs: &Mutex<SegmentManager>,
        (umount, orphans): (bool, &[u32]),
        before_nat: &dyn Fn(u64) -> Result<()>,
    ) -> Result<CheckpointReport> {
        before_nat(self.last.node_version())?;
        // The NodeManager first, then the SegmentManager (the lock order in lockrank.rs).
        let with_bits = umount && nodes.has_nat_bits();
        let nat = nodes.flush_nat(dev, with_bits)?;
        let nat_side = NatSide {
            bitmap: nodes.nat_bitmap(),
            bits: if with_bits { nodes.nat_bits() } else { None },
            counts: nodes.counts(),
            flush: nat,
        };
        let mut segs = crate::lockrank::lock_segments(segs);
        self.write_locked(dev, sb, nat_side, &mut segs, (umount, orphans))
    }

    fn write_locked(
        &mut self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        nat: NatSide,
        segs: &mut SegmentManager,
        (umount, orphans): (bool, &[u32]),
    ) -> Result<CheckpointReport> {
        segs.prepare_checkpoint(dev)?;
        let sit = segs.flush_sit(dev, true)?;
        let cp = self.next_checkpoint(segs, &nat.counts);
        let logs = LogType::ALL.map(|t| segs.log(t));
        let data_logs: [_; NR_CURSEG_DATA_TYPE] = std::array::from_fn(|i| (logs[i].summaries(), logs[i].sum_in_use()));
        let spec = PackSpec {
            cp,
            cp_payload: sb.cp_payload,
            segment_count_nat: sb.segment_count_nat,
            nat_bitmap: &nat.bitmap,
            sit_bitmap: segs.sit_bitmap(),
            orphans,
            nat_journal: &nat.flush.journal,
            sit_journal: &sit.journal,
            data_logs,
            node_logs: umount.then(|| std::array::from_fn(|i| logs[NR_CURSEG_DATA_TYPE + i].summaries())),
            nat_bits: nat.bits.as_ref().map(|b| (&b.full[..], &b.empty[..])),
            geo: sb.geometry(),
        };
        let pack = build_pack(&spec)?;
        let new_pack = 1 - self.last.pack;
        let start = sb.cp_blkaddr as u64 + ((new_pack as u64) << sb.log_blocks_per_seg);
        write_pack(dev, start, &pack)?;
        segs.checkpoint_done();
        let report = CheckpointReport {
            version: pack.cp.checkpoint_ver,
            pack: new_pack,
            pack_blkaddr: start,
            pack_blocks: pack.cp.cp_pack_total_block_count,
            umount,
            compacted: pack.compacted,
            nat_bits: pack.cp.has_flag(uf2fs_format::checkpoint::CP_NAT_BITS_FLAG),
            nat_journal: nat.flush.journal.len(),
            nat_blocks: nat.flush.blocks_written,
            sit_journal: sit.journal.len(),
            sit_blocks: sit.blocks_written,
        };
        let older = self.last.cp.checkpoint_ver;
        let crc = uf2fs_format::le::u32_at(&pack.last.1, pack.cp.checksum_offset as usize);
        self.last = CheckpointState {
            sit_bitmap: segs.sit_bitmap().to_vec(),
            cp: pack.cp,
            pack: new_pack,
            pack_blkaddr: start,
            other: format!("valid, older (version {older})"),
            nat_bitmap: nat.bitmap,
            nat_journal: nat.flush.journal,
            sit_journal: sit.journal,
            orphans: orphans.to_vec(),
            crc,
        };
        Ok(report)
    }

    /// The checkpoint block of the next pack: the last one's fields, with the version
    /// bumped and the logs, counts and age taken from now.
    fn next_checkpoint(&self, segs: &SegmentManager, counts: &NodeCounts) -> Checkpoint {
        let mut cp = self.last.cp.clone();
        cp.checkpoint_ver = cp.checkpoint_ver.wrapping_add(1);
        // Dirty data and nodes are written by now: what stays reserved are addresses
        // reserved by fallocate (`NEW_ADDR`), which the kernel counts as valid blocks.
        cp.valid_block_count = segs.valid_block_count() + segs.reserved_new_blocks();
        cp.free_segment_count = segs.free_segment_count();
        for (i, t) in LogType::ALL.into_iter().enumerate() {
            let log = segs.log(t);
            if i < NR_CURSEG_DATA_TYPE {
                cp.cur_data_segno[i] = log.segno;
                cp.cur_data_blkoff[i] = log.next_blkoff;
            } else {
                cp.cur_node_segno[i - NR_CURSEG_DATA_TYPE] = log.segno;
                cp.cur_node_blkoff[i - NR_CURSEG_DATA_TYPE] = log.next_blkoff;
            }
            cp.alloc_type[i] = log.alloc_type;
        }
        cp.ckpt_flags &= KEPT_FLAGS;
        cp.valid_node_count = counts.valid_node_count;
        cp.valid_inode_count = counts.valid_inode_count;
        cp.next_free_nid = counts.next_free_nid;
        cp.elapsed_time = segs.elapsed_secs();
        cp
    }
}
