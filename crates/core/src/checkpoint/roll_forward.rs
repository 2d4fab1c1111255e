//! Whether an image left without an unmount checkpoint holds anything roll-forward
//! recovery would replay (uf2fs does not implement the replay, so such images are not
//! opened for writing).
//!
//! After a checkpoint, the kernel's fsync writes a file's direct nodes alone to the
//! warm node log, each footer stamped with the version of the checkpoint in force and
//! the address of the next block the log will use, and marked with the fsync bit. At
//! mount, recovery (`find_fsync_dnodes` in fs/f2fs/recovery.c) follows that chain from
//! the checkpoint's next free block of the warm node log, as long as the blocks are in
//! the main area and carry the checkpoint's version (with its checksum in the high 32
//! bits under `CP_CRC_RECOVERY_FLAG`; low 32 bits only under
//! `CP_NOCRC_RECOVERY_FLAG`). Blocks with the fsync bit are what it replays; none means
//! the checkpoint alone is the file system. uf2fs's own fsync writes a checkpoint, and
//! no node it writes carries the fsync bit, so its images never need the replay.

use super::CheckpointState;
use crate::device::{read_block, BlockDevice};
use crate::{Error, Result};
use uf2fs_format::checkpoint::{CP_CRC_RECOVERY_FLAG, CP_NOCRC_RECOVERY_FLAG, CP_UMOUNT_FLAG};
use uf2fs_format::le::u32_at;
use uf2fs_format::node::NodeFooter;
use uf2fs_format::superblock::Superblock;

/// Index of the warm node log among the node logs (hot, warm, cold).
const WARM_NODE: usize = 1;

/// A node block roll-forward recovery would replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsyncNode {
    /// Where it is.
    pub blkaddr: u64,
    /// Its node id.
    pub nid: u32,
    /// Its inode.
    pub ino: u32,
}

/// The footer version a node written after checkpoint `cps` carries, and whether only
/// its low 32 bits count.
fn expected_version(dev: &dyn BlockDevice, cps: &CheckpointState) -> Result<(u64, bool)> {
    let cp = &cps.cp;
    if cp.has_flag(CP_NOCRC_RECOVERY_FLAG) {
        return Ok((cp.checkpoint_ver, true));
    }
    if cp.has_flag(CP_CRC_RECOVERY_FLAG) {
        let block = read_block(dev, cps.pack_blkaddr)?;
        let crc = u32_at(&block, cp.checksum_offset as usize) as u64;
        return Ok((cp.checkpoint_ver | (crc << 32), false));
    }
    Ok((cp.checkpoint_ver, false))
}

/// Walks the warm node log's chain after checkpoint `cps` (see the module notes) and
/// returns the first block recovery would replay, if any. A chain that loops is
/// [`Error::Corrupt`] (the kernel refuses to mount it too).
pub fn find_fsync_node(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<Option<FsyncNode>> {
    let cp = &cps.cp;
    let bps = sb.blocks_per_seg() as u64;
    let main = sb.main_blkaddr as u64..sb.main_end_blkaddr();
    let (version, low_only) = expected_version(dev, cps)?;
    let matches = |v: u64| {
        if low_only {
            v as u32 == version as u32
        } else {
            v == version
        }
    };
    // The kernel gives up after as many blocks as the main area has free.
    let free_blocks = (sb.segment_count_main as u64 * bps).saturating_sub(cp.valid_block_count);
    let mut blkaddr = main.start + cp.cur_node_segno[WARM_NODE] as u64 * bps + cp.cur_node_blkoff[WARM_NODE] as u64;
    let mut walked = 0u64;
    while main.contains(&blkaddr) {
        let block = read_block(dev, blkaddr)?;
        let footer =
            NodeFooter::decode(&block).map_err(|e| Error::corrupt("node block", Some(blkaddr), e.to_string()))?;
        if !matches(footer.cp_ver) {
            return Ok(None);
        }
        if footer.is_fsync() {
            return Ok(Some(FsyncNode {
                blkaddr,
                nid: footer.nid,
                ino: footer.ino,
            }));
        }
        walked += 1;
        let next = footer.next_blkaddr as u64;
        if walked >= free_blocks || next == blkaddr {
            return Err(Error::corrupt(
                "warm node log",
                Some(blkaddr),
                format!("the roll-forward chain loops (next block {next:#x}); run fsck.f2fs"),
            ));
        }
        blkaddr = next;
    }
    Ok(None)
}

/// Refuses to open for writing an image whose checkpoint was not written by a clean
/// unmount when roll-forward recovery would replay something after it.
pub fn check_nothing_to_roll_forward(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<()> {
    if cps.cp.has_flag(CP_UMOUNT_FLAG) {
        return Ok(());
    }
    match find_fsync_node(dev, sb, cps)? {
        None => Ok(()),
        Some(n) => Err(Error::Unsupported {
            feature: "roll-forward recovery",
            detail: format!(
                "the image holds data fsync'ed after its last checkpoint (node {} of inode {} at block {:#x}); \
                 roll-forward recovery is not implemented; mount read-only or let the kernel/fsck.f2fs recover it",
                n.nid, n.ino, n.blkaddr
            ),
        }),
    }
}
