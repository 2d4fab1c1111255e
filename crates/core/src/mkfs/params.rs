//! What every block of a new volume is made from: the parameters besides the layout
//! ([`Params`]), the block writes they become, and the few facts the superblock, the
//! root directory and the checkpoint packs share (shared by [`super::image`] and the
//! checkpoint packs' module, which import it and not each other).

use super::layout::Layout;
use crate::Result;
use uf2fs_format::consts::BLOCKS_PER_SEG;
use uf2fs_format::quota::QuotaType;
use uf2fs_format::superblock::{FEATURE_LOST_FOUND, FEATURE_PRJQUOTA, FEATURE_QUOTA_INO};

/// Inode number of the root directory.
pub const ROOT_INO: u32 = 3;
/// Everything besides the layout that goes into the blocks.
#[derive(Debug, Clone)]
pub struct Params<'a> {
    /// Geometry.
    pub layout: &'a Layout,
    /// Superblock feature bits (already checked).
    pub features: u32,
    /// Volume UUID.
    pub uuid: [u8; 16],
    /// Volume label.
    pub label: &'a str,
    /// Version string stored as `version` and `init_version`.
    pub version: &'a str,
    /// Seconds since the epoch for the inodes' times.
    pub time_secs: u64,
    /// Owner of the root directory (and lost+found).
    pub root_uid: u32,
    /// Group of the root directory (and lost+found).
    pub root_gid: u32,
    /// Version of the first checkpoint pack.
    pub cp_ver: u64,
    /// Whether the whole device was discarded first (sets `CP_TRIMMED_FLAG`).
    pub trimmed: bool,
    /// The casefold encoding's flags (`s_encoding_flags`), with the casefold feature.
    pub encoding_flags: u16,
}

/// A block to write, by block address.
pub type BlockWrite = (u64, Vec<u8>);

impl Params<'_> {
    pub(super) fn has(&self, bit: u32) -> bool {
        self.features & bit != 0
    }

    /// Data blocks each quota inode gets on this volume ([`crate::quota::quota_data_blocks`]).
    pub(super) fn quota_data_blocks(&self) -> u32 {
        crate::quota::quota_data_blocks(self.block_size())
    }

    /// Bytes of a block of the new volume.
    pub(super) fn block_size(&self) -> usize {
        self.layout.geometry.block_size()
    }

    /// The quota types made, in `qf_ino` order: user and group with `quota`, project
    /// too with `project_quota` (which implies `quota`, as in mkfs.f2fs).
    pub(super) fn quota_types(&self) -> Vec<QuotaType> {
        let mut t = Vec::new();
        if self.has(FEATURE_QUOTA_INO) || self.has(FEATURE_PRJQUOTA) {
            t.extend([QuotaType::User, QuotaType::Group]);
        }
        if self.has(FEATURE_PRJQUOTA) {
            t.push(QuotaType::Project);
        }
        t
    }

    /// Inode numbers of the quota files, by type index (0 where not made): the
    /// numbers after the root's, in type order.
    pub(super) fn quota_inos(&self) -> [u32; 3] {
        let mut q = [0; 3];
        for (i, t) in self.quota_types().into_iter().enumerate() {
            q[t.index()] = ROOT_INO + 1 + i as u32;
        }
        q
    }

    /// Inode number of lost+found, if made: after the quota inodes.
    pub(super) fn lost_found_ino(&self) -> Option<u32> {
        let after = ROOT_INO + 1 + self.quota_types().len() as u32;
        self.has(FEATURE_LOST_FOUND).then_some(after)
    }

    /// Inodes made: root, the quota files, and lost+found.
    pub(super) fn inodes(&self) -> u32 {
        1 + self.quota_types().len() as u32 + u32::from(self.lost_found_ino().is_some())
    }

    /// Data blocks made: root's dentry block, the quota files' blocks, lost+found's
    /// dentry block.
    pub(super) fn data_blocks(&self) -> u32 {
        1 + self.quota_data_blocks() * self.quota_types().len() as u32 + u32::from(self.lost_found_ino().is_some())
    }

    /// Block address of block `i` of the hot node log.
    pub(super) fn hot_node_blk(&self, i: u32) -> u32 {
        self.layout.main_blkaddr() + self.layout.cur_node_segno[0] * BLOCKS_PER_SEG + i
    }

    /// Block address of block `i` of the hot data log.
    pub(super) fn hot_data_blk(&self, i: u32) -> u32 {
        self.layout.main_blkaddr() + self.layout.cur_data_segno[0] * BLOCKS_PER_SEG + i
    }
}

/// An encoding error of the new volume's structures, as [`crate::Error::Invalid`].
pub(super) fn encode<T>(r: uf2fs_format::Result<T>) -> Result<T> {
    r.map_err(|e| crate::Error::Invalid(format!("cannot encode the new volume: {e}")))
}
