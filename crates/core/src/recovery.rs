//! Roll-forward recovery: what fsync wrote after the last checkpoint becomes part of
//! the file system at a read-write open, as Linux F2FS replays it at mount
//! (fs/f2fs/recovery.c is the reference for the behaviour; the chain itself is read by
//! [`crate::checkpoint::roll_forward`]).
//!
//! Two passes over the warm node log's chain:
//! 1. every inode with a node carrying the fsync mark gets an entry: the last such
//!    block (nothing of the inode after it is replayed) and, for an inode whose block
//!    carries the dentry mark, the block whose name and parent recovery links it by.
//!    An inode that does not exist at the checkpoint is made from its dentry-marked
//!    block (its number taken before pass 2 hands out any); its blocks before that
//!    one, and every block of an inode that never gets one (deleted since), count
//!    for nothing here.
//! 2. every block of the chain of an inode with an entry, up to its last fsync'd
//!    block, is replayed in chain order onto the checkpoint's tree: an inode block
//!    gives the inode's attributes, inline xattrs and inline data; an xattr node its
//!    xattrs; every direct node (the inode's own slots too) its data addresses, slot by
//!    slot: a hole frees the block there, `NEW_ADDR` reserves one, an address makes
//!    that block valid where the fsync wrote it (the block it replaces is freed; a
//!    block some other node still claims is taken from it first, as the kernel's
//!    `check_index_in_prev_nodes` does). Missing direct and indirect nodes are made
//!    on the way. A dentry-marked inode block then links its name into its parent
//!    (an entry of that name for another file is unlinked first).
//!
//! Before pass 2 changes anything, the chain's segments are held
//! ([`crate::segment::SegmentManager::hold_for_recovery`]): no write of the recovery
//! (new nodes, dentry blocks, the checkpoint's own) lands on them, so a power cut
//! during recovery leaves the old checkpoint and its whole chain, and the next open
//! recovers again. After the replay, blocks past a recovered file's size are freed (a
//! truncation the fsync recorded only in `i_size`), and a checkpoint makes everything
//! durable: the chain's blocks are garbage from then on.

use crate::checkpoint::roll_forward::walk_chain;
use crate::inode::InodeMut;
use crate::namei::{dentry, newinode};
use crate::tree::{node_log, Loc, Tree};
use crate::{Error, FileKind, Fs, Ino, Result};
use std::collections::BTreeMap;
use uf2fs_format::consts::{COMPRESS_ADDR, DEF_NIDS_PER_INODE, I_ADDR_OFFSET, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::{
    Inode, NodeFooter, F2FS_DATA_EXIST, F2FS_INLINE_DATA, F2FS_INLINE_XATTR, F2FS_PIN_FILE, FADVISE_KEEP_SIZE_BIT,
    NODE_DENT_BIT,
};
use uf2fs_format::summary::Summary;
use uf2fs_format::xattr::XATTR_NODE_OFFSET;

/// What roll-forward recovery did at open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Blocks of the warm node log's chain read.
    pub chain_blocks: u64,
    /// Node blocks replayed.
    pub nodes_replayed: u64,
    /// Inodes whose fsync'd state was recovered.
    pub inodes: u64,
    /// Inodes that did not exist at the checkpoint, made from their fsync'd block.
    pub inodes_created: u64,
    /// Names linked back into their directories.
    pub dentries: u64,
    /// Data block addresses that changed.
    pub blocks_recovered: u64,
}

/// Pass 1's record of one inode.
struct Entry {
    /// Its last block with the fsync mark.
    last: u64,
    /// Its last dentry-marked inode block, if any.
    last_dentry: Option<u64>,
    /// Whether pass 2 went past `last`.
    done: bool,
}

fn corrupt(blkaddr: u64, d: impl Into<String>) -> Error {
    Error::corrupt("roll-forward recovery", Some(blkaddr), d.into())
}

/// Whether `a` is a block address (not a hole, `NEW_ADDR` or a compression marker).
fn is_real(a: u32) -> bool {
    a != NULL_ADDR && a != NEW_ADDR && a != COMPRESS_ADDR
}

/// The first file block whose address direct node `offset` (footer offset, not the
/// inode's 0) holds, for an inode holding `per_inode` addresses in itself and
/// `per_block` in each direct node, `n` node ids in each indirect node. Node offsets
/// count the tree depth first: 1 and 2 are the direct nodes, 3 the first indirect node
/// and its `n` direct nodes 4..=3+n, 4+n the second indirect node and 5+n..=4+2n, 5+2n
/// the double indirect node, then each of its `n` indirect nodes followed by its `n`
/// direct nodes. `None` for an
/// offset that is not a direct node's.
pub(crate) fn first_index_of(offset: u32, per_inode: u64, per_block: u64, n: u64) -> Option<u64> {
    let o = offset as u64;
    let ordinal = match o {
        1 | 2 => o - 1,
        _ if (4..=3 + n).contains(&o) => 2 + (o - 4),
        _ if (5 + n..=4 + 2 * n).contains(&o) => 2 + n + (o - 5 - n),
        _ if o >= 6 + 2 * n => {
            let rel = o - (6 + 2 * n);
            let (k, r) = (rel / (n + 1), rel % (n + 1));
            if r == 0 || k >= n {
                return None;
            }
            2 + 2 * n + k * n + (r - 1)
        }
        _ => return None,
    };
    Some(per_inode + ordinal * per_block)
}

impl Fs {
    /// Replays what fsync wrote after the opened checkpoint (see the module notes) and
    /// writes a checkpoint when anything was replayed. Runs once at every read-write
    /// open (also after an unmount checkpoint: a mount writes none before its first
    /// fsync), before anything else changes the volume.
    pub(crate) fn recover_fsync_data(&self) -> Result<RecoveryReport> {
        let rw = self.rw()?;
        let dev = self.device();
        let sb = self.superblock();
        let cps = self.opened_state();
        let mut report = RecoveryReport::default();
        let mut t = self.tree(rw);

        // Pass 1: which inodes, up to where; inodes made anew.
        let mut entries: BTreeMap<Ino, Entry> = BTreeMap::new();
        let mut chain: Vec<u64> = Vec::new();
        walk_chain(dev, sb, cps, |blkaddr, block, f| {
            report.chain_blocks += 1;
            chain.push(blkaddr);
            if !f.is_fsync() {
                return Ok(true);
            }
            let is_inode_block = f.nid == f.ino && f.offset() == 0;
            let dent = is_inode_block && f.flag & NODE_DENT_BIT != 0;
            let entry = match entries.entry(f.ino) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let e = self
                        .nodes()
                        .nat_entry(dev, f.ino)
                        .map_err(|e| corrupt(blkaddr, format!("node block of inode {}: {e}", f.ino)))?;
                    let exists = e.block_addr != NULL_ADDR && e.ino == f.ino;
                    if !exists {
                        if !dent {
                            // Not made yet (its dentry-marked block comes later in the
                            // chain), or deleted and checkpointed since: not this block.
                            return Ok(true);
                        }
                        self.make_recovered_inode(&mut t, blkaddr, block)?;
                        report.inodes_created += 1;
                    }
                    v.insert(Entry {
                        last: blkaddr,
                        last_dentry: None,
                        done: false,
                    })
                }
            };
            entry.last = blkaddr;
            if dent {
                entry.last_dentry = Some(blkaddr);
            }
            Ok(true)
        })?;
        if entries.is_empty() {
            t.release_pool();
            return Ok(report);
        }
        report.inodes = entries.len() as u64;
        // Nothing written from here on may land on the chain before the checkpoint.
        segs_of(&t).hold_for_recovery(&chain)?;

        // Pass 2: replay, in chain order.
        let mut touched: Vec<Ino> = Vec::new();
        walk_chain(dev, sb, cps, |blkaddr, block, f| {
            let Some(entry) = entries.get_mut(&f.ino) else {
                return Ok(true);
            };
            if entry.done {
                return Ok(true);
            }
            let (last, last_dentry) = (entry.last, entry.last_dentry);
            if blkaddr == last {
                entry.done = true;
            }
            let mut inode = t.load_inode(f.ino)?;
            if inode.kind()? != FileKind::File {
                // Linux checkpoints instead of fsync'ing anything else; nothing to do.
                return Ok(true);
            }
            report.blocks_recovered += self.replay_node(&mut t, &mut inode, blkaddr, block, f)?;
            report.nodes_replayed += 1;
            let name = (last_dentry == Some(blkaddr)).then(|| inode.inode.clone());
            t.store_inode(inode)?;
            if let Some(fsynced) = name {
                self.recover_dentry(&mut t, f.ino, &fsynced, blkaddr)?;
                report.dentries += 1;
            }
            if !touched.contains(&f.ino) {
                touched.push(f.ino);
            }
            Ok(true)
        })?;

        // Blocks past a recovered size are a truncation the fsync recorded.
        for ino in touched {
            let mut inode = t.load_inode(ino)?;
            if inode.is_inline() || inode.inode.advise & FADVISE_KEEP_SIZE_BIT != 0 {
                continue;
            }
            let end = inode.inode.size.div_ceil(inode.inode.geometry.block_size() as u64);
            if crate::file::blocks::truncate_blocks(&t, &mut inode, end)? > 0 {
                t.store_inode(inode)?;
            }
        }
        t.release_pool();
        segs_of(&t).finish_recovery(dev, &chain)?;
        self.write_checkpoint()?;
        rw.fsync_track().set_recovered(report.inodes, report.nodes_replayed);
        Ok(report)
    }

    /// Makes the inode of the dentry-marked block `block` (at `blkaddr`), which the
    /// checkpoint does not have: its attributes and name from the block, one link, no
    /// data yet (pass 2 replays the block's data onto it), as the kernel's
    /// `f2fs_recover_inode_page` does.
    fn make_recovered_inode(&self, t: &mut Tree, blkaddr: u64, block: &[u8]) -> Result<()> {
        let f = NodeFooter::decode(block).map_err(|e| corrupt(blkaddr, e.to_string()))?;
        let sb = self.superblock();
        let decoded = Inode::decode(block, sb).map_err(|e| corrupt(blkaddr, format!("inode {}: {e}", f.ino)))?;
        let mut inode = InodeMut {
            ino: f.ino,
            inode: decoded,
            block: block.to_vec(),
        };
        if FileKind::from_mode(inode.inode.mode as u32) != Some(FileKind::File) {
            return Err(corrupt(
                blkaddr,
                format!("fsync'd new inode {} is not a regular file", f.ino),
            ));
        }
        // No data, no nodes below it, no xattr node: pass 2 brings them. The address
        // (or inline data) area, with the inline xattr area at its end, and the node ids
        // are cleared; pass 2 copies what the fsync'd block holds.
        let start = I_ADDR_OFFSET + 4 * inode.inode.addr_start();
        let end = inode.inode.geometry.i_nid_offset() + 4 * DEF_NIDS_PER_INODE;
        inode.block[start..end].fill(0);
        inode.inode.nids = [0; DEF_NIDS_PER_INODE];
        inode.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
        inode.inode.xattr_nid = 0;
        inode.inode.size = 0;
        inode.inode.blocks = 1;
        inode.inode.links = 1;
        inode.inode.ext = (0, 0, 0);
        let mut b = inode.finish(sb)?;
        // Footer as a fresh node: no marks, not yet written.
        let mut nf = NodeFooter::new(f.ino, f.ino, 0, false);
        nf.flag = f.flag & !(uf2fs_format::node::NODE_FSYNC_BIT | NODE_DENT_BIT);
        nf.encode(&mut b).map_err(|e| corrupt(blkaddr, e.to_string()))?;
        t.new_node(f.ino, f.ino, b, node_log(sb.geometry(), 0, false))
    }

    /// Replays node block `block` (at `blkaddr`, footer `f`) of `inode` onto it (see
    /// the module notes). Returns the data addresses that changed.
    fn replay_node(
        &self,
        t: &mut Tree,
        inode: &mut InodeMut,
        blkaddr: u64,
        block: &[u8],
        f: &NodeFooter,
    ) -> Result<u64> {
        let sb = self.superblock();
        if f.offset() == XATTR_NODE_OFFSET {
            self.replay_xattr_node(t, inode, block)?;
            return Ok(0);
        }
        if f.offset() == 0 {
            let fsynced = Inode::decode(block, sb).map_err(|e| corrupt(blkaddr, format!("inode {}: {e}", f.ino)))?;
            let i = &mut inode.inode;
            i.mode = fsynced.mode;
            i.uid = fsynced.uid;
            i.gid = fsynced.gid;
            if fsynced.extra_isize == i.extra_isize {
                i.projid = fsynced.projid;
            }
            i.size = fsynced.size;
            i.atime = fsynced.atime;
            i.ctime = fsynced.ctime;
            i.mtime = fsynced.mtime;
            i.advise = fsynced.advise;
            i.flags = fsynced.flags;
            let kept = F2FS_PIN_FILE | F2FS_DATA_EXIST;
            i.inline = (i.inline & !kept) | (fsynced.inline & kept);
            // Inline xattrs, when both blocks have the same area.
            let xr = fsynced.inline_xattr_range();
            if fsynced.has_inline(F2FS_INLINE_XATTR) && xr == inode.inode.inline_xattr_range() && !xr.is_empty() {
                inode.block[xr.clone()].copy_from_slice(&block[xr]);
            }
            // Inline data: the fsync'd inode's, replacing blocks the file had.
            if fsynced.has_inline(F2FS_INLINE_DATA) {
                if !inode.inode.has_inline(F2FS_INLINE_DATA) {
                    crate::file::blocks::truncate_blocks(t, inode, 0)?;
                    inode.inline_area().fill(0);
                    inode.inode.inline |= F2FS_INLINE_DATA;
                }
                let r = fsynced.inline_data_range();
                if r == inode.inode.inline_data_range() {
                    inode.block[r.clone()].copy_from_slice(&block[r]);
                }
                return Ok(0);
            }
            if inode.inode.has_inline(F2FS_INLINE_DATA) {
                inode.inline_area().fill(0);
                inode.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
            }
            let n = fsynced.addrs_per_inode();
            let dests: Vec<u32> = (0..n).map(|s| fsynced.addr(block, s)).collect();
            return self.replay_slots(t, inode, 0, &dests, blkaddr);
        }
        if inode.is_inline() {
            // A direct node of a file inline at the checkpoint: the file grew out of its
            // inode since (F2FS never makes a file inline again), and this fsync's
            // inode block, later in the chain (fsync writes it last), is not inline.
            // Converted here, or this node's blocks would be lost: the inline data
            // goes, block 0 comes back from that inode block's slots.
            inode.inline_area().fill(0);
            inode.inode.inline &= !(F2FS_INLINE_DATA | F2FS_DATA_EXIST);
        }
        let per_inode = inode.inode.addrs_per_inode() as u64;
        let per_block = inode.inode.addrs_per_block() as u64;
        let n = inode.inode.geometry.nids_per_block() as u64;
        let first = first_index_of(f.offset(), per_inode, per_block, n).ok_or_else(|| {
            corrupt(
                blkaddr,
                format!(
                    "node {} of inode {} at offset {} is not a direct node",
                    f.nid,
                    f.ino,
                    f.offset()
                ),
            )
        })?;
        let dests = (0..per_block as usize)
            .map(|s| crate::tree::slot_of(block, s))
            .collect::<Result<Vec<u32>>>()?;
        self.replay_slots(t, inode, first, &dests, blkaddr)
    }

    /// Makes file blocks `first..` of `inode` hold the addresses `dests` (see the
    /// module notes). Returns how many changed.
    fn replay_slots(&self, t: &mut Tree, inode: &mut InodeMut, first: u64, dests: &[u32], at: u64) -> Result<u64> {
        let dev = self.device();
        let (lo, hi) = self.nodes().main_area();
        let keep_size = inode.inode.advise & FADVISE_KEEP_SIZE_BIT != 0;
        let mut changed = 0;
        for (i, &dest) in dests.iter().enumerate() {
            let index = first + i as u64;
            let src = t.locate(inode, index)?.map_or(NULL_ADDR, |l| l.addr);
            if src == dest {
                continue;
            }
            changed += 1;
            if dest == NULL_ADDR {
                t.free_block(inode, index)?;
                continue;
            }
            if dest == COMPRESS_ADDR {
                return Err(corrupt(
                    at,
                    format!("inode {}: a compressed cluster in an fsync'd node", inode.ino),
                ));
            }
            let bs = inode.inode.geometry.block_size() as u64;
            if !keep_size && inode.inode.size <= index * bs {
                inode.inode.size = (index + 1) * bs;
            }
            if dest == NEW_ADDR {
                t.free_block(inode, index)?;
                t.reserve(inode, index)?;
                continue;
            }
            if (dest as u64) < lo || (dest as u64) >= hi {
                return Err(corrupt(
                    at,
                    format!(
                        "inode {} block {index}: address {dest:#x} outside the main area",
                        inode.ino
                    ),
                ));
            }
            if segs_of(t).is_valid(dest as u64)? {
                self.take_from_owner(t, inode, dest, at)?;
            }
            // The slot, with the nodes on its way, and what it held given back.
            let loc: Loc = match t.locate(inode, index)? {
                Some(l) if l.addr != NULL_ADDR => {
                    if l.addr == NEW_ADDR {
                        segs_of(t).release_new_blocks(1);
                    } else if is_real(l.addr) {
                        segs_of(t).invalidate(l.addr as u64)?;
                    }
                    l
                }
                _ => {
                    let l = t.reserve(inode, index)?;
                    segs_of(t).release_new_blocks(1);
                    l
                }
            };
            let version = self.nodes().nat_entry(dev, loc.nid)?.version;
            segs_of(t).recover_block(
                dest as u64,
                Summary {
                    nid: loc.nid,
                    version,
                    ofs_in_node: loc.slot as u16,
                },
            )?;
            Tree::drop_extent_over(inode, index);
            t.set_addr(inode, &loc, dest)?;
        }
        Ok(changed)
    }

    /// Block `addr`, valid now, is claimed by an fsync'd node: the node its summary
    /// names lets go of it (its slot becomes a hole, its inode's block count drops),
    /// and it is invalidated, to be made valid again for its new owner.
    fn take_from_owner(&self, t: &mut Tree, inode: &mut InodeMut, addr: u32, at: u64) -> Result<()> {
        let dev = self.device();
        let sum = segs_of(t).summary_of(dev, addr as u64)?;
        let owner = self.nodes().nat_entry(dev, sum.nid)?;
        let slot = sum.ofs_in_node as usize;
        let released = if sum.nid == owner.ino {
            // An inode's own slot.
            let edit = |o: &mut InodeMut| -> bool {
                if slot < o.inode.addrs_per_inode() && !o.is_inline() && o.slot(slot) == addr {
                    o.set_slot(slot, NULL_ADDR);
                    o.inode.blocks = o.inode.blocks.saturating_sub(1);
                    true
                } else {
                    false
                }
            };
            if owner.ino == inode.ino {
                edit(inode)
            } else {
                let mut o = t.load_inode(owner.ino)?;
                let done = edit(&mut o);
                if done {
                    t.store_inode(o)?;
                }
                done
            }
        } else {
            let b = self.nodes().read(dev, sum.nid, owner.ino)?;
            let mut b = b.to_vec();
            if crate::tree::slot_of(&b, slot).is_ok_and(|a| a == addr) {
                crate::tree::set_slot(&mut b, slot, NULL_ADDR)?;
                let off = NodeFooter::decode(&b).map_err(|e| corrupt(at, e.to_string()))?.offset();
                self.nodes()
                    .store_dirty(sum.nid, b, node_log(self.superblock().geometry(), off, false));
                if owner.ino == inode.ino {
                    inode.inode.blocks = inode.inode.blocks.saturating_sub(1);
                } else {
                    let mut o = t.load_inode(owner.ino)?;
                    o.inode.blocks = o.inode.blocks.saturating_sub(1);
                    t.store_inode(o)?;
                }
                true
            } else {
                false
            }
        };
        if !released {
            return Err(corrupt(
                at,
                format!(
                    "block {addr:#x}, claimed by inode {}, is in use and its summary names no owner",
                    inode.ino
                ),
            ));
        }
        segs_of(t).invalidate(addr as u64)
    }

    /// Replays an fsync'd xattr node: its contents become the inode's xattr node (made
    /// when the inode has none).
    fn replay_xattr_node(&self, t: &mut Tree, inode: &mut InodeMut, block: &[u8]) -> Result<()> {
        let log = node_log(inode.inode.geometry, XATTR_NODE_OFFSET, false);
        let xnid = inode.inode.xattr_nid;
        let mut b = block.to_vec();
        if xnid != 0 {
            NodeFooter::new(xnid, inode.ino, XATTR_NODE_OFFSET, false)
                .encode(&mut b)
                .map_err(|e| Error::Invalid(e.to_string()))?;
            self.nodes().store_dirty(xnid, b, log);
            return Ok(());
        }
        let nid = t.take_nid()?;
        NodeFooter::new(nid, inode.ino, XATTR_NODE_OFFSET, false)
            .encode(&mut b)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if let Err(e) = t.new_node(nid, inode.ino, b, log) {
            self.nodes().release_nid(nid);
            return Err(e);
        }
        inode.inode.xattr_nid = nid;
        inode.inode.blocks += 1;
        Ok(())
    }

    /// Links inode `ino` under the name and parent its fsync'd block `fsynced` records
    /// (the kernel's `recover_dentry`): nothing when the parent already has that name
    /// for it; a name there for another file is unlinked first.
    fn recover_dentry(&self, t: &mut Tree, ino: Ino, fsynced: &Inode, at: u64) -> Result<()> {
        let parent = fsynced.pino;
        let name = fsynced.name.clone();
        let e = self.nodes().nat_entry(self.device(), parent).ok();
        if name.is_empty() || !e.is_some_and(|e| e.block_addr != NULL_ADDR && e.ino == parent) {
            return Err(corrupt(
                at,
                format!("fsync'd inode {ino} names parent {parent}, which does not exist; run fsck.f2fs"),
            ));
        }
        if name.contains(&b'/') || name.contains(&0) || name == b"." || name == b".." {
            return Err(corrupt(
                at,
                format!(
                    "fsync'd inode {ino}'s name {:?} is not a file name; run fsck.f2fs",
                    crate::error::show_name(&name)
                ),
            ));
        }
        let mut dir = t.load_inode(parent)?;
        if !dir.is_dir() {
            return Err(corrupt(
                at,
                format!("parent {parent} of fsync'd inode {ino} is not a directory"),
            ));
        }
        if let Some(found) = dentry::find(t, &mut dir, &name)? {
            if found.ino == ino {
                return Ok(());
            }
            let mut other = t.load_inode(found.ino)?;
            if other.is_dir() {
                return Err(corrupt(
                    at,
                    format!(
                        "fsync'd inode {ino}'s name in directory {parent} names directory {}",
                        found.ino
                    ),
                ));
            }
            dentry::remove(t, &mut dir, &found)?;
            other.inode.links = other.inode.links.saturating_sub(1);
            if other.inode.links == 0 {
                t.free_inode(&other)?;
            } else {
                t.store_inode(other)?;
            }
        }
        dentry::add(t, &mut dir, &name, ino, newinode::file_type(FileKind::File))?;
        dir.inode.mtime = fsynced.ctime;
        dir.inode.ctime = fsynced.ctime;
        t.store_inode(dir)
    }
}

fn segs_of<'a>(t: &'a Tree) -> crate::lockrank::Ranked<std::sync::MutexGuard<'a, crate::segment::SegmentManager>> {
    crate::lockrank::lock_segments(t.segs)
}

#[cfg(test)]
mod tests {
    use crate::node::node_path;

    /// The first block of each direct node agrees with the path to that block.
    #[test]
    fn first_index_matches_node_path() {
        for g in [uf2fs_format::Geometry::DEFAULT, uf2fs_format::Geometry::BLOCK_16K] {
            let per_inode = g.addrs_per_inode() as u64 - 50;
            let per_block = g.addrs_per_block() as u64;
            let n = g.nids_per_block() as u64;
            let mut seen = 0;
            for offset in 1..(6 + 2 * n + 3 * (n + 1)) as u32 {
                let Some(first) = super::first_index_of(offset, per_inode, per_block, n) else {
                    assert!(!crate::node::is_dnode(g, offset), "offset {offset}");
                    continue;
                };
                assert!(crate::node::is_dnode(g, offset), "offset {offset}");
                let p = node_path(crate::node::TreeShape::plain(g, per_inode), first).unwrap();
                assert_eq!(p.offsets[p.depth], offset, "offset {offset}");
                assert_eq!(p.slots[p.depth], 0, "offset {offset}");
                seen += 1;
            }
            assert!(seen > 3 * n, "{seen}");
        }
    }
}
