//! The warm node log's chain after a checkpoint: what roll-forward recovery replays
//! (the replay itself is `crate::recovery`).
//!
//! After a checkpoint, an fsync writes the file's direct nodes (its inode, direct and
//! xattr nodes) to the warm node log without a checkpoint, each footer stamped with
//! the version of the checkpoint in force ([`CheckpointState::node_version`]) and the
//! address of the next block the log will use, and marked with the fsync bit (the
//! inode of a file never checkpointed also with the dentry bit). At mount, recovery
//! (the kernel's `find_fsync_dnodes` in fs/f2fs/recovery.c) follows that chain from
//! the checkpoint's next free block of the warm node log, as long as the blocks are in
//! the main area and carry the checkpoint's version. Blocks with the fsync bit are
//! what it replays; none means the checkpoint alone is the file system.

use super::CheckpointState;
use crate::device::{read_block, BlockDevice};
use crate::{Error, Result};
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

/// Walks the warm node log's chain after checkpoint `cps` (see the module notes):
/// `visit` sees each block of the chain in order, with its address and decoded
/// footer, and returns whether to go on. A chain that loops is [`Error::Corrupt`]
/// (the kernel refuses to mount it too). An unmount checkpoint may have one too: a
/// mount after it writes no checkpoint before its first fsync.
pub fn walk_chain(
    dev: &dyn BlockDevice,
    sb: &Superblock,
    cps: &CheckpointState,
    mut visit: impl FnMut(u64, &[u8], &NodeFooter) -> Result<bool>,
) -> Result<()> {
    let cp = &cps.cp;
    let bps = sb.blocks_per_seg() as u64;
    let main = sb.main_blkaddr as u64..sb.main_end_blkaddr();
    // The kernel gives up after as many blocks as the main area has free.
    let free_blocks = (sb.segment_count_main as u64 * bps).saturating_sub(cp.valid_block_count);
    let mut blkaddr = main.start + cp.cur_node_segno[WARM_NODE] as u64 * bps + cp.cur_node_blkoff[WARM_NODE] as u64;
    let mut walked = 0u64;
    while main.contains(&blkaddr) {
        let block = read_block(dev, blkaddr)?;
        // A block the log never wrote after this checkpoint ends the chain, whatever
        // it holds.
        let Ok(footer) = NodeFooter::decode(&block) else {
            return Ok(());
        };
        if !cps.is_node_version(footer.cp_ver) {
            return Ok(());
        }
        if !visit(blkaddr, &block, &footer)? {
            return Ok(());
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
    Ok(())
}

/// The first block of the chain after checkpoint `cps` that recovery would replay (a
/// block with the fsync bit), if any.
pub fn find_fsync_node(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<Option<FsyncNode>> {
    let mut found = None;
    walk_chain(dev, sb, cps, |blkaddr, _, footer| {
        if footer.is_fsync() {
            found = Some(FsyncNode {
                blkaddr,
                nid: footer.nid,
                ino: footer.ino,
            });
            return Ok(false);
        }
        Ok(true)
    })?;
    Ok(found)
}
