//! Placing one cluster of a compressed file in its node tree, as the kernel's
//! `f2fs_write_compressed_pages` and `f2fs_write_raw_pages` leave it: the one writer of
//! compressed clusters that the packer (`uf2fs mkfs` from a tree) and the mount's
//! writeback both use.
//!
//! A compressed cluster of `N` blocks stored in `n` blocks (`n < N`):
//! slot 0 holds `COMPRESS_ADDR`, slots 1..=n the blocks holding the header and the
//! compressed bytes, the rest `NEW_ADDR` (the blocks stay reserved, so that a rewrite
//! that compresses worse still fits) or, in a file whose blocks were released
//! (`F2FS_COMPRESS_RELEASED`, sload's `-r`, `F2FS_IOC_RELEASE_COMPRESS_BLOCKS`),
//! `NULL_ADDR`. A plain cluster holds its blocks' addresses, `NULL_ADDR` for holes.
//!
//! Counting, as the kernel counts and fsck checks it: `i_blocks` counts every slot
//! that is not `NULL_ADDR` (`COMPRESS_ADDR` included) unless the file is released,
//! where only the written blocks count; `i_compr_blocks` gains `N - n` per compressed
//! cluster of a file that is not released (its `COMPRESS_ADDR` and `NEW_ADDR` slots),
//! nothing in a released one. `COMPRESS_ADDR` and `NEW_ADDR` slots that count hold one
//! reserved block each in the segment manager, as `NEW_ADDR` does elsewhere.
//!
//! On a volume with the `ro` feature, a plain cluster's blocks are taken consecutive
//! (the log moves to a new segment first when they would not be; see `super::ro`
//! for why Linux needs them so).
//!
//! Whatever the cluster held before is dropped first (blocks invalidated, reservations
//! given back, both counts lowered), so a cluster may be rewritten in place. The data
//! blocks reach the device before the node that points at them is changed.

use super::encode::CompressedCluster;
use crate::device::WriteKind;
use crate::inode::InodeMut;
use crate::segment::LogType;
use crate::tree::{node_log, set_slot, slot_of, Loc, Tree};
use crate::{Error, Result};
use std::sync::PoisonError;
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::F2FS_COMPRESS_RELEASED;
use uf2fs_format::summary::Summary;
use uf2fs_format::superblock::FEATURE_RO;

/// What one cluster is to hold.
#[derive(Debug, Clone, Copy)]
pub enum ClusterData<'a> {
    /// Stored compressed ([`super::encode::encode_cluster`]'s output).
    Compressed(&'a CompressedCluster),
    /// Stored plain: block `i` of the cluster (a whole block each), `None` for a hole.
    /// Fewer entries than the cluster has blocks leave the rest holes.
    Plain(&'a [Option<&'a [u8]>]),
}

/// What placing a cluster did (`place_cluster`, `Fs::write_cluster_data`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placed {
    /// Blocks written.
    pub written: u64,
    /// Blocks the cluster saved (`N - n` for a compressed cluster, 0 for a plain one).
    pub saved: u64,
}

/// Whether `inode`'s compressed clusters keep their reservations (not released).
fn keeps_reservations(inode: &InodeMut) -> bool {
    !inode.inode.has_inline(F2FS_COMPRESS_RELEASED)
}

/// The cluster's slots: in the inode (`None`) or in a copy of its direct node.
struct Slots {
    loc: Loc,
    node: Option<Vec<u8>>,
}

impl Slots {
    fn get(&self, inode: &InodeMut, i: usize) -> Result<u32> {
        match &self.node {
            Some(b) => slot_of(b, self.loc.slot + i),
            None => Ok(inode.slot(self.loc.slot + i)),
        }
    }

    fn set(&mut self, inode: &mut InodeMut, i: usize, v: u32) -> Result<()> {
        match &mut self.node {
            Some(b) => set_slot(b, self.loc.slot + i, v),
            None => {
                inode.set_slot(self.loc.slot + i, v);
                Ok(())
            }
        }
    }
}

/// Drops what slots `0..n` of a cluster hold (see the module notes); returns how many
/// reservations that gave back. `i_blocks` and `i_compr_blocks` are lowered.
fn clear(t: &Tree, inode: &mut InodeMut, s: &mut Slots, n: usize) -> Result<()> {
    let counted = keeps_reservations(inode);
    let compressed = s.get(inode, 0)? == COMPRESS_ADDR;
    let mut segs = t.segs.lock().unwrap_or_else(PoisonError::into_inner);
    let mut saved = 0u64;
    for i in 0..n {
        let a = s.get(inode, i)?;
        let uncount = match a {
            NULL_ADDR => continue,
            COMPRESS_ADDR | NEW_ADDR if compressed && !counted => false,
            COMPRESS_ADDR | NEW_ADDR => {
                segs.release_new_blocks(1);
                saved += u64::from(compressed);
                true
            }
            a => {
                segs.invalidate(a as u64)?;
                true
            }
        };
        if uncount {
            inode.inode.blocks -= 1;
        }
        s.set(inode, i, NULL_ADDR)?;
    }
    if let Some(c) = inode.inode.compress.as_mut() {
        c.compr_blocks = c.compr_blocks.saturating_sub(saved);
    }
    Ok(())
}

/// Whether `data` fits a cluster of `n` blocks of `bs` bytes: a compressed cluster
/// encoded in blocks of `bs` bytes and fewer than `n` of them, or at most `n` plain
/// blocks of `bs` bytes each. [`Error::Invalid`] otherwise, before anything changes
/// (callers check this ahead of their operation; [`place_cluster`] again).
pub(crate) fn check_cluster_data(data: &ClusterData, n: usize, bs: usize) -> Result<()> {
    match data {
        ClusterData::Compressed(c) => {
            if c.block_size != bs || c.bytes.len() % bs != 0 {
                return Err(Error::Invalid(format!(
                    "a compressed cluster of {} bytes encoded in {}-byte blocks, for a volume of {bs}-byte blocks",
                    c.bytes.len(),
                    c.block_size
                )));
            }
            let m = c.blocks();
            if m == 0 || m >= n {
                return Err(Error::Invalid(format!(
                    "a compressed cluster of {m} blocks in clusters of {n}"
                )));
            }
        }
        ClusterData::Plain(list) => {
            if list.len() > n {
                return Err(Error::Invalid(format!("{} blocks in a cluster of {n}", list.len())));
            }
            if let Some(b) = list.iter().flatten().find(|b| b.len() != bs) {
                return Err(Error::Invalid(format!(
                    "a block of {} bytes for a volume of {bs}-byte blocks",
                    b.len()
                )));
            }
        }
    }
    Ok(())
}

/// Places cluster `cluster` of compressed file `inode` (see the module notes): what it
/// held is dropped, `data` written to new blocks of `log`, the slots and counts set.
/// The caller runs this inside an operation that checked room for a cluster's blocks
/// and up to three new nodes, and stores `inode` afterwards (its slots, `i_blocks`
/// and `i_compr_blocks` changed here). `i_size` is the caller's.
pub(crate) fn place_cluster(
    t: &mut Tree,
    inode: &mut InodeMut,
    cluster: u64,
    data: ClusterData,
    log: LogType,
) -> Result<Placed> {
    let codec = inode
        .inode
        .compress
        .filter(|_| inode.inode.is_compressed())
        .ok_or_else(|| Error::Invalid(format!("inode {} is not a compressed file", inode.ino)))?;
    let n = 1usize << codec.log_cluster_size;
    check_cluster_data(&data, n, inode.inode.geometry.block_size())?;
    let first = cluster << codec.log_cluster_size;
    // The nodes on the cluster's path: made by reserving its first block when missing
    // (that reservation is then dropped with the rest of the old contents).
    let loc = match t.locate(inode, first)? {
        Some(l) => l,
        None => t.reserve(inode, first)?,
    };
    let node = if loc.in_inode {
        None
    } else {
        Some(t.nodes.read(t.dev, loc.nid, inode.ino)?.to_vec())
    };
    let mut s = Slots { loc, node };
    clear(t, inode, &mut s, n)?;
    let counted = keeps_reservations(inode);
    // New slots: the addresses to allocate (by cluster slot) and the markers.
    let mut marks: Vec<u32> = vec![NULL_ADDR; n];
    let mut blocks: Vec<(usize, &[u8])> = Vec::new();
    let mut saved = 0u64;
    let plain = matches!(data, ClusterData::Plain(_));
    match data {
        ClusterData::Compressed(c) => {
            let m = c.blocks();
            marks[0] = COMPRESS_ADDR;
            for i in 0..m {
                blocks.push((i + 1, c.block(i)));
            }
            if counted {
                marks[m + 1..].fill(NEW_ADDR);
                saved = (n - m) as u64;
            }
        }
        ClusterData::Plain(list) => {
            for (i, b) in list.iter().enumerate() {
                if let Some(b) = b {
                    blocks.push((i, b));
                }
            }
        }
    }
    // COMPRESS_ADDR and NEW_ADDR slots count unless the file is released.
    let markers = if counted {
        marks.iter().filter(|&&a| a == COMPRESS_ADDR || a == NEW_ADDR).count() as u64
    } else {
        0
    };
    // Every counted slot holds a reserved block; the written ones consume theirs.
    t.reserve_blocks(markers + blocks.len() as u64)?;
    inode.inode.blocks += markers + blocks.len() as u64;
    let version = t.nodes.nat_entry(t.dev, s.loc.nid)?.version;
    let mut addrs = Vec::with_capacity(blocks.len());
    {
        let mut segs = t.segs.lock().unwrap_or_else(PoisonError::into_inner);
        if plain && t.sb.has(FEATURE_RO) {
            // Linux reads a plain cluster on an `ro` volume through one extent from its
            // first block (`super::ro`): its blocks must follow one another.
            segs.keep_consecutive(t.dev, log, blocks.len() as u64)?;
        }
        for (i, _) in &blocks {
            let sum = Summary {
                nid: s.loc.nid,
                version,
                ofs_in_node: (s.loc.slot + i) as u16,
            };
            addrs.push(segs.alloc_reserved_block_for(t.dev, log, 0, sum)?);
        }
    }
    // The data first, in runs of consecutive blocks.
    let mut i = 0;
    while i < blocks.len() {
        let mut j = i + 1;
        while j < blocks.len() && addrs[j] == addrs[j - 1] + 1 {
            j += 1;
        }
        let run: Vec<&[u8]> = blocks[i..j].iter().map(|(_, b)| *b).collect();
        t.dev.write_blocks_from(addrs[i], &run, WriteKind::UserData)?;
        i = j;
    }
    for ((k, _), a) in blocks.iter().zip(&addrs) {
        marks[*k] = *a as u32;
    }
    for (k, &a) in marks.iter().enumerate() {
        s.set(inode, k, a)?;
    }
    if let Some(c) = inode.inode.compress.as_mut() {
        c.compr_blocks += saved;
    }
    for k in 0..n as u64 {
        Tree::drop_extent_over(inode, first + k);
    }
    if let Some(b) = s.node {
        let offset = crate::tree::footer_of(&b, s.loc.nid)?.offset();
        t.nodes
            .store_dirty(s.loc.nid, b, node_log(inode.inode.geometry, offset, inode.is_dir()));
    }
    Ok(Placed {
        written: blocks.len() as u64,
        saved,
    })
}

/// Drops every cluster of compressed file `inode` from cluster `from` up to (not
/// including) cluster `end` that is stored compressed: its blocks invalidated, its
/// reservations given back, `i_blocks` and `i_compr_blocks` lowered, its slots
/// `NULL_ADDR` (the truncate of whole compressed clusters, before the plain blocks
/// and the nodes past the cut go as any file's). Returns the clusters dropped.
pub(crate) fn drop_compressed_clusters(t: &Tree, inode: &mut InodeMut, from: u64, end: u64) -> Result<u64> {
    let Some(c) = inode.inode.compress.filter(|_| inode.inode.is_compressed()) else {
        return Ok(0);
    };
    let n = 1usize << c.log_cluster_size;
    let mut dropped = 0;
    for cluster in from..end {
        let first = cluster << c.log_cluster_size;
        let Some(loc) = t.locate(inode, first)? else {
            continue;
        };
        if loc.addr != COMPRESS_ADDR {
            continue;
        }
        let node = if loc.in_inode {
            None
        } else {
            Some(t.nodes.read(t.dev, loc.nid, inode.ino)?.to_vec())
        };
        let mut s = Slots { loc, node };
        clear(t, inode, &mut s, n)?;
        for k in 0..n as u64 {
            Tree::drop_extent_over(inode, first + k);
        }
        if let Some(b) = s.node {
            let offset = crate::tree::footer_of(&b, s.loc.nid)?.offset();
            t.nodes
                .store_dirty(s.loc.nid, b, node_log(inode.inode.geometry, offset, inode.is_dir()));
        }
        dropped += 1;
    }
    if dropped > 0 {
        t.clusters.forget_inode(inode.ino);
    }
    Ok(dropped)
}
