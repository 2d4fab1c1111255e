//! Dirty node blocks: kept in memory, written out of place to their node log before the
//! NAT is flushed (at a checkpoint, or earlier when there are too many of them).
//!
//! Writing a node block: take the next block of its log with the summary (nid, NAT
//! version), stamp the footer (checkpoint version being written, next block address),
//! seal the inode checksum, write it, invalidate the block it replaces, point its NAT
//! entry at the new block (version kept). A node is freed by pointing its NAT entry at
//! `NULL_ADDR` with the version bumped (kept when it was never written, as the kernel
//! does) and invalidating its block.

use super::{lock, put_cached, NodeBlock, NodeManager};
use crate::device::{BlockDevice, WriteKind, BLOCK};
use crate::segment::{LogType, SegmentManager, NR_LOGS};
use crate::{Error, Result};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR};
use uf2fs_format::nat::NatEntry;
use uf2fs_format::node::{seal_inode_checksum, NodeFooter};
use uf2fs_format::summary::Summary;
use uf2fs_format::superblock::Superblock;

/// Dirty node blocks past which an operation writes them all out (16 MiB). An
/// operation dirties a few nodes, so the map stays within a few per concurrent
/// operation of this bound.
pub const DIRTY_NODES_MAX: usize = 4096;

/// Node blocks gathered into one device write at most (1 MiB).
const GATHER_BLOCKS_MAX: usize = 256;

/// One dirty node block and the log it goes to.
#[derive(Clone)]
pub(super) struct DirtyNode {
    block: NodeBlock,
    log: LogType,
}

/// Dirty node blocks by node id, with a count per log.
#[derive(Default)]
pub(super) struct DirtyNodes {
    map: BTreeMap<u32, DirtyNode>,
    per_log: [u64; NR_LOGS],
}

impl DirtyNodes {
    fn insert(&mut self, nid: u32, node: DirtyNode) {
        self.per_log[node.log as usize] += 1;
        if let Some(old) = self.map.insert(nid, node) {
            self.per_log[old.log as usize] -= 1;
        }
    }

    fn remove(&mut self, nid: u32) {
        if let Some(old) = self.map.remove(&nid) {
            self.per_log[old.log as usize] -= 1;
        }
    }
}

/// Whether `addr` is a block address (not `NULL_ADDR` or `NEW_ADDR`).
fn is_real(addr: u32) -> bool {
    addr != NULL_ADDR && addr != NEW_ADDR
}

fn lock_segs(segs: &Mutex<SegmentManager>) -> std::sync::MutexGuard<'_, SegmentManager> {
    segs.lock().unwrap_or_else(PoisonError::into_inner)
}

impl NodeManager {
    /// The dirty copy of node `nid`, if any.
    pub(super) fn dirty_block(&self, nid: u32) -> Option<NodeBlock> {
        lock(&self.dirty).map.get(&nid).map(|n| n.block.clone())
    }

    /// Stores a changed node block (footer already set) to be written to `log`.
    pub(crate) fn store_dirty(&self, nid: u32, block: Vec<u8>, log: LogType) {
        debug_assert_eq!(block.len(), BLOCK);
        lock(&self.dirty).insert(
            nid,
            DirtyNode {
                block: Arc::new(block),
                log,
            },
        );
        lock(&self.node_cache).pop(nid);
    }

    /// Changes node `nid` in memory: `edit` runs on its dirty copy, which then waits for
    /// `log`. A node not dirty yet starts from `block`, the node as last read (copied
    /// only if someone else still holds it); a dirty one is edited where it is.
    pub(crate) fn update_dirty(&self, nid: u32, block: NodeBlock, log: LogType, edit: impl FnOnce(&mut [u8])) {
        debug_assert_eq!(block.len(), BLOCK);
        // Out of the clean cache first, so that `block` is likely the only holder.
        lock(&self.node_cache).pop(nid);
        let mut dirty = lock(&self.dirty);
        let node = match dirty.map.remove(&nid) {
            Some(node) => {
                dirty.per_log[node.log as usize] -= 1;
                drop(block);
                node.block
            }
            None => block,
        };
        let mut node = DirtyNode { block: node, log };
        edit(Arc::make_mut(&mut node.block).as_mut_slice());
        dirty.insert(nid, node);
    }

    /// Dirty node blocks in all.
    pub fn dirty_node_count(&self) -> usize {
        lock(&self.dirty).map.len()
    }

    /// Dirty node blocks by the log they go to.
    pub fn dirty_nodes_by_log(&self) -> [u64; NR_LOGS] {
        lock(&self.dirty).per_log
    }

    /// Makes `nid` (taken with [`NodeManager::alloc_nid`]) a new node of inode `ino`
    /// with contents `block`: a block is reserved for it (fails with
    /// [`Error::NoSpace`] when none is left), its NAT entry says `NEW_ADDR` until it is
    /// written, and the node (and inode) counts grow.
    pub(crate) fn new_node(
        &self,
        dev: &dyn BlockDevice,
        segs: &Mutex<SegmentManager>,
        nid: u32,
        ino: u32,
        block: Vec<u8>,
        log: LogType,
    ) -> Result<()> {
        // Held throughout, so that no write-out of dirty nodes runs halfway through.
        let mut dirty = lock(&self.dirty);
        let e = self.nat_entry(dev, nid)?;
        if e.block_addr != NULL_ADDR {
            return Err(Error::corrupt(
                format!("NAT entry of node {nid}"),
                None,
                format!("handed out as free but points at {:#x}", e.block_addr),
            ));
        }
        lock_segs(segs).reserve_new_blocks(1)?;
        let entry = NatEntry {
            version: e.version,
            ino,
            block_addr: NEW_ADDR,
        };
        lock(&self.free_nids).taken(nid);
        lock(&self.nat).dirty.insert(nid, entry);
        {
            let mut c = lock(&self.counts);
            c.valid_node_count += 1;
            if nid == ino {
                c.valid_inode_count += 1;
            }
        }
        dirty.insert(
            nid,
            DirtyNode {
                block: Arc::new(block),
                log,
            },
        );
        lock(&self.node_cache).pop(nid);
        Ok(())
    }

    /// Frees node `nid`: its block is invalidated (or its reservation given back when
    /// it was never written), its NAT entry points nowhere, the counts shrink. The id
    /// becomes free for others after the next checkpoint.
    pub(crate) fn free_node(&self, dev: &dyn BlockDevice, segs: &Mutex<SegmentManager>, nid: u32) -> Result<()> {
        // Held throughout, so that no write-out of dirty nodes moves the node between
        // reading its NAT entry and dropping it.
        let mut dirty = lock(&self.dirty);
        let e = self.nat_entry(dev, nid)?;
        let mut version = e.version;
        match e.block_addr {
            NULL_ADDR => {
                return Err(Error::corrupt(
                    format!("node {nid}"),
                    None,
                    "freeing a node that is not allocated",
                ))
            }
            NEW_ADDR => lock_segs(segs).release_new_blocks(1),
            addr => {
                lock_segs(segs).invalidate(addr as u64)?;
                version = version.wrapping_add(1);
            }
        }
        dirty.remove(nid);
        let entry = NatEntry {
            version,
            ino: e.ino,
            block_addr: NULL_ADDR,
        };
        lock(&self.nat).dirty.insert(nid, entry);
        lock(&self.node_cache).pop(nid);
        let mut c = lock(&self.counts);
        c.valid_node_count = c.valid_node_count.saturating_sub(1);
        if nid == e.ino {
            c.valid_inode_count = c.valid_inode_count.saturating_sub(1);
        }
        Ok(())
    }

    /// Writes every dirty node block out of place to its log (see the module notes);
    /// `cp_ver` is the version of the checkpoint that will make them durable. Returns
    /// the blocks written. An error leaves memory ahead of the device: the caller must
    /// refuse further checkpoints.
    pub(crate) fn write_dirty_nodes(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        cp_ver: u64,
    ) -> Result<usize> {
        let mut dirty = lock(&self.dirty);
        if dirty.map.is_empty() {
            return Ok(0);
        }
        let mut plan = Vec::with_capacity(dirty.map.len());
        for &nid in dirty.map.keys() {
            plan.push((nid, self.nat_entry(dev, nid)?));
        }
        let written = {
            let mut s = lock_segs(segs);
            write_planned(dev, sb, &mut s, &mut dirty, &plan, cp_ver, WriteKind::UserNode)?
        };
        {
            let mut nat = lock(&self.nat);
            for (nid, e, _) in &written {
                nat.dirty.insert(*nid, *e);
            }
        }
        for (nid, _, block) in &written {
            put_cached(&self.node_cache, *nid, block.clone());
        }
        *dirty = DirtyNodes::default();
        Ok(written.len())
    }
}

/// Takes blocks, stamps, writes (in runs of consecutive addresses) and invalidates the
/// replaced blocks of the dirty nodes in `plan` (each with its NAT entry); returns each
/// node's new NAT entry and block. The blocks are stamped where they are in `dirty`
/// (so that an error leaves every dirty node in memory); the caller removes them.
fn write_planned(
    dev: &dyn BlockDevice,
    sb: &Superblock,
    segs: &mut SegmentManager,
    dirty: &mut DirtyNodes,
    plan: &[(u32, NatEntry)],
    cp_ver: u64,
    kind: WriteKind,
) -> Result<Vec<(u32, NatEntry, NodeBlock)>> {
    let mut out: Vec<(u32, NatEntry, NodeBlock)> = Vec::with_capacity(plan.len());
    // The blocks of `out` from `run` on go to consecutive addresses from `run_start`.
    let mut run = 0;
    let mut run_start = 0u64;
    let flush = |out: &[(u32, NatEntry, NodeBlock)], start: u64| {
        let blocks: Vec<&[u8]> = out.iter().map(|(_, _, b)| b.as_slice()).collect();
        dev.write_blocks_from(start, &blocks, kind)
    };
    for (nid, e) in plan {
        let node = dirty
            .map
            .get_mut(nid)
            .ok_or_else(|| Error::Invalid(format!("node {nid} is not dirty any more")))?;
        let sum = Summary {
            nid: *nid,
            version: e.version,
            ofs_in_node: 0,
        };
        let addr = if e.block_addr == NEW_ADDR {
            segs.alloc_reserved_block(dev, node.log, sum)?
        } else {
            segs.alloc_block(dev, node.log, sum)?
        };
        stamp(Arc::make_mut(&mut node.block).as_mut_slice(), sb, addr, cp_ver)?;
        let len = out.len() - run;
        if len > 0 && (run_start + len as u64 != addr || len >= GATHER_BLOCKS_MAX) {
            flush(&out[run..], run_start)?;
            run = out.len();
        }
        if run == out.len() {
            run_start = addr;
        }
        if is_real(e.block_addr) {
            segs.invalidate(e.block_addr as u64)?;
        }
        let entry = NatEntry {
            version: e.version,
            ino: e.ino,
            block_addr: addr as u32,
        };
        out.push((*nid, entry, Arc::clone(&node.block)));
    }
    flush(&out[run..], run_start)?;
    Ok(out)
}

/// Makes `b` the node block as written at `addr`: footer's checkpoint version and next
/// block address set, inode checksum sealed.
fn stamp(b: &mut [u8], sb: &Superblock, addr: u64, cp_ver: u64) -> Result<()> {
    let bad = |e: uf2fs_format::FormatError| Error::Invalid(format!("cannot encode node block: {e}"));
    let mut f = NodeFooter::decode(b).map_err(bad)?;
    f.cp_ver = cp_ver;
    f.next_blkaddr = (addr + 1) as u32;
    f.encode(b).map_err(bad)?;
    if f.offset() == 0 {
        seal_inode_checksum(b, sb).map_err(bad)?;
    }
    Ok(())
}

impl NodeManager {
    /// Moves node blocks out of a victim section, as GC does: each `(nid, entry)` is a
    /// node whose NAT `entry` points into the victim. A node not dirty is taken from
    /// the clean cache (or the device), its footer checked against the entry and its
    /// log found by `log_of`; then every one is written at once to its log, as
    /// [`NodeManager::write_dirty_nodes`] writes them. Returns the blocks written.
    pub(crate) fn move_blocks(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        cp_ver: u64,
        nodes: &[(u32, NatEntry)],
        log_of: &dyn Fn(&[u8], u32) -> Result<LogType>,
    ) -> Result<usize> {
        let mut dirty = lock(&self.dirty);
        for &(nid, e) in nodes {
            if dirty.map.contains_key(&nid) {
                continue;
            }
            let cached = lock(&self.node_cache).pop(nid);
            let block = match cached {
                Some(b) => b,
                None => Arc::new(super::read_block(dev, e.block_addr as u64)?),
            };
            let f = NodeFooter::decode(&block)
                .map_err(|x| Error::corrupt("node", Some(e.block_addr as u64), x.to_string()))?;
            if f.nid != nid || f.ino != e.ino {
                return Err(Error::corrupt(
                    format!("node {nid}"),
                    Some(e.block_addr as u64),
                    format!(
                        "footer says node {} of inode {}, NAT says node {nid} of inode {}",
                        f.nid, f.ino, e.ino
                    ),
                ));
            }
            let log = log_of(&block, nid)?;
            dirty.insert(nid, DirtyNode { block, log });
        }
        let written = {
            let mut s = lock_segs(segs);
            write_planned(dev, sb, &mut s, &mut dirty, nodes, cp_ver, WriteKind::GcNode)?
        };
        {
            let mut nat = lock(&self.nat);
            for (nid, e, _) in &written {
                nat.dirty.insert(*nid, *e);
            }
        }
        let mut cache = lock(&self.node_cache);
        for (nid, _, block) in &written {
            dirty.remove(*nid);
            cache.put(*nid, block.clone());
        }
        Ok(written.len())
    }
}
