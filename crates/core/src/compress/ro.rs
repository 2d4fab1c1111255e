//! What Linux's read path assumes of a compressed file on a volume with the `ro`
//! feature, and the check that a file meets it (the packer runs it on every compressed
//! file it writes on an `ro` volume).
//!
//! Only on `ro` volumes does Linux keep read extents for compressed files. Each time it
//! looks a cluster's addresses up in the node tree (`f2fs_get_dnode_of_data`, which
//! every read of a compressed file's cluster goes through first), it caches one extent
//! for the whole cluster: from the cluster's first address (the first compressed block
//! for a compressed cluster), the cluster's length, with a count of the blocks known
//! to be contiguous (`f2fs_cluster_blocks_are_contiguous`: the valid addresses from the
//! first slot on, each one more than the one before, up to the first slot that holds
//! no block address; no extent at all when a valid address breaks the run). A read of
//! a plain block found in that extent then takes "first address + offset", whatever its
//! slot holds. The inode's largest extent (`i_ext`) is loaded as a plain extent too.
//!
//! So on an `ro` volume, every plain cluster of a compressed file must have all of its
//! blocks below the end of the file written, at consecutive device blocks:
//! - a hole after the cluster's first block is read as the device block that would
//!   follow (Linux 6.1 read such a hole as the next cluster's data);
//! - a cluster whose first two slots are holes, a cluster of holes among them, gets an
//!   extent from block 0: Linux logs `access invalid blkaddr` and the read fails;
//! - a plain cluster whose blocks are not consecutive gets no extent; kernels without
//!   upstream commit 4b99ecd30429 (2024, "fix to avoid caching unaligned extent") then
//!   cache one from the block being read, unaligned, which can run into the next
//!   cluster, so uf2fs counts it as a misread too.
//!
//! Compressed clusters are read right either way (from the cached extent when their
//! blocks are consecutive, else from the node). A hole is read as zeros only where no
//! node holds the cluster's addresses at all (a whole direct node of holes).

use crate::data::Chunk;
use crate::fs::Fs;
use crate::{Ino, Result};
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};

/// The read extent Linux caches for one cluster of a compressed file on an `ro`
/// volume ([`linux_ro_cluster_extent`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinuxClusterExtent {
    /// The device block the extent starts at (the cluster's first address; for a
    /// compressed cluster, its first compressed block). `NULL_ADDR` when the cluster
    /// starts with two holes.
    pub start: u32,
    /// Blocks known to be contiguous from `start` (the kernel's `c_len`).
    pub contiguous: u32,
    /// Whether the cluster is stored compressed.
    pub compressed: bool,
}

/// Whether `a` is a block address (not `NULL_ADDR`, `NEW_ADDR` or `COMPRESS_ADDR`).
fn is_block(a: u32) -> bool {
    a != NULL_ADDR && a != NEW_ADDR && a != COMPRESS_ADDR
}

/// The extent Linux caches when it looks up a cluster whose address slots are `slots`
/// (the whole cluster), on an `ro` volume; `None` when it caches none (a valid address
/// breaks the run of consecutive ones).
pub fn linux_ro_cluster_extent(slots: &[u32]) -> Option<LinuxClusterExtent> {
    let compressed = slots.first() == Some(&COMPRESS_ADDR);
    let skip = usize::from(compressed);
    let start = *slots.get(skip)?;
    let mut i = skip + 1;
    while i < slots.len() {
        let a = slots[i];
        if !is_block(a) {
            break;
        }
        if Some(a) != start.checked_add((i - skip) as u32) {
            return None;
        }
        i += 1;
    }
    let contiguous = (i - skip) as u32;
    (contiguous > 0).then_some(LinuxClusterExtent {
        start,
        contiguous,
        compressed,
    })
}

/// A block of a compressed file that Linux would read otherwise than as stored, on an
/// `ro` volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoMisread {
    /// The file block.
    pub block: u64,
    /// What Linux does instead.
    pub reason: String,
}

impl std::fmt::Display for RoMisread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "block {}: {}", self.block, self.reason)
    }
}

/// The first block of the cluster starting at file block `first`, with address slots
/// `slots`, that Linux would misread on an `ro` volume (see the module notes); only
/// blocks below `end` (the file's size in blocks) are read.
pub fn ro_cluster_misread(first: u64, slots: &[u32], end: u64) -> Option<RoMisread> {
    if slots.first() == Some(&COMPRESS_ADDR) {
        return None;
    }
    let below = |j: usize| first + (j as u64) < end;
    let Some(e) = linux_ro_cluster_extent(slots) else {
        let j = (1..slots.len())
            .find(|&j| below(j) && is_block(slots[j]) && Some(slots[j]) != slots[0].checked_add(j as u32))?;
        return Some(RoMisread {
            block: first + j as u64,
            reason: "a plain cluster whose blocks are not consecutive: kernels without the \
                     aligned-extent fix cache an extent from the middle of it"
                .into(),
        });
    };
    for (j, &a) in slots.iter().enumerate().take_while(|&(j, _)| below(j)) {
        let linux = e.start.wrapping_add(j as u32);
        if is_block(a) && a == linux {
            continue;
        }
        let stored = if is_block(a) {
            format!("stored at block {a}")
        } else {
            "a hole".to_string()
        };
        let reason = if e.start == NULL_ADDR {
            format!("{stored}, which Linux maps to device block {linux} (access invalid blkaddr, an I/O error)")
        } else {
            format!("{stored}, which Linux reads from device block {linux} (its cluster's extent)")
        };
        return Some(RoMisread {
            block: first + j as u64,
            reason,
        });
    }
    None
}

impl Fs {
    /// The first block of compressed file `ino` that Linux would read otherwise than
    /// as stored if the volume had the `ro` feature (see `compress::ro`): a plain
    /// cluster with holes or with blocks not consecutive, or an `i_ext` over anything
    /// but consecutive plain blocks. `None` for a file Linux reads right, and for any
    /// inode that is not a compressed file.
    pub fn linux_ro_misread(&self, ino: Ino) -> Result<Option<RoMisread>> {
        let i = self.inode(ino)?;
        let Some(cluster) = i.inode.cluster_blocks().map(|c| c as u64) else {
            return Ok(None);
        };
        i.check_decodable()?;
        let end = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
        let (ext_first, ext_start, ext_len) = i.inode.ext;
        let (ext_first, ext_len) = (ext_first as u64, ext_len as u64);
        let mut ext_seen = 0u64;
        let m = self.mapper(&i);
        let mut fb = 0;
        while fb < end {
            match m.chunk(fb)? {
                Chunk::Hole { end: e } => fb = e,
                Chunk::Mapped {
                    first,
                    node,
                    in_inode,
                    slot,
                    len,
                } => {
                    // Nodes hold whole clusters of a compressed file: `first` starts one.
                    let stop = first + len;
                    while fb < stop && fb < end {
                        let s = slot + (fb - first) as usize;
                        let slots = (0..cluster as usize)
                            .map(|k| m.raw_addr(&node, in_inode, s + k))
                            .collect::<Result<Vec<u32>>>()?;
                        if let Some(bad) = ro_cluster_misread(fb, &slots, end) {
                            return Ok(Some(bad));
                        }
                        for (k, &a) in slots.iter().enumerate() {
                            let b = fb + k as u64;
                            if ext_len == 0 || b < ext_first || b >= ext_first + ext_len {
                                continue;
                            }
                            ext_seen += 1;
                            let want = ext_start.wrapping_add((b - ext_first) as u32);
                            if slots[0] == COMPRESS_ADDR || a != want {
                                return Ok(Some(RoMisread {
                                    block: b,
                                    reason: format!(
                                        "the inode's largest extent maps it to device block {want}, \
                                         which is not its plain block"
                                    ),
                                }));
                            }
                        }
                        fb += cluster;
                    }
                    fb = fb.max(stop);
                }
            }
        }
        if ext_seen < ext_len {
            return Ok(Some(RoMisread {
                block: ext_first,
                reason: "the inode's largest extent covers blocks without a plain address".into(),
            }));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: u32 = COMPRESS_ADDR;
    const N: u32 = NEW_ADDR;

    #[test]
    fn the_extent_linux_caches_for_a_cluster() {
        let ext = |s: &[u32]| linux_ro_cluster_extent(s).map(|e| (e.start, e.contiguous, e.compressed));
        // Whole plain clusters, consecutive: the whole cluster.
        assert_eq!(ext(&[100, 101, 102, 103]), Some((100, 4, false)));
        // A break in the run: no extent.
        assert_eq!(ext(&[100, 101, 200, 201]), None);
        // The run ends at the first hole; the extent still spans the cluster.
        assert_eq!(ext(&[100, 0, 0, 0]), Some((100, 1, false)));
        assert_eq!(ext(&[100, 101, 0, 500]), Some((100, 2, false)));
        // Holes first: from block 0 when the second slot is a hole too.
        assert_eq!(ext(&[0, 0, 0, 0]), Some((0, 1, false)));
        assert_eq!(ext(&[0, 0, 7, 8]), Some((0, 1, false)));
        assert_eq!(ext(&[0, 100, 101, 102]), None);
        // Compressed: the compressed blocks, reserved or released slots after them.
        assert_eq!(ext(&[C, 300, 301, N]), Some((300, 2, true)));
        assert_eq!(ext(&[C, 300, 0, 0]), Some((300, 1, true)));
        assert_eq!(ext(&[C, 300, 302, N]), None);
    }

    #[test]
    fn plain_clusters_with_holes_or_gaps_are_misread_and_whole_ones_are_not() {
        let bad = |first: u64, s: &[u32], end: u64| ro_cluster_misread(first, s, end).map(|m| m.block);
        assert_eq!(bad(0, &[100, 101, 102, 103], 4), None);
        assert_eq!(bad(0, &[C, 300, 301, N], 4), None);
        assert_eq!(
            bad(0, &[C, 300, 309, 0], 4),
            None,
            "compressed clusters are read from the node"
        );
        // The case Linux 6.1 misread: block 12 written, 13..15 holes, the file going on.
        assert_eq!(bad(12, &[3542, 0, 0, 0], 33), Some(13));
        // The same cluster as the last one, cut after its first block: nothing to misread.
        assert_eq!(bad(12, &[3542, 0, 0, 0], 13), None);
        // A cluster of holes inside a node that exists: Linux maps it to block 0.
        let m = ro_cluster_misread(4, &[0, 0, 0, 0], 12).unwrap();
        assert_eq!(m.block, 4);
        assert!(m.reason.contains("invalid blkaddr"), "{m}");
        assert_eq!(bad(0, &[0, 0, 7, 8], 4), Some(0));
        // Holes first, then consecutive blocks: no extent, but the old kernels' unaligned
        // one from the middle.
        assert_eq!(bad(0, &[0, 100, 101, 102], 4), Some(1));
        // Consecutive up to a hole, then a block that happens to follow on.
        assert_eq!(bad(0, &[100, 101, 0, 103], 4), Some(2));
        assert_eq!(bad(0, &[100, 101, 0, 500], 4), Some(2));
        // Not consecutive.
        assert_eq!(bad(8, &[100, 101, 200, 201], 12), Some(10));
    }
}
