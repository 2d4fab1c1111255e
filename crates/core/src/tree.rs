//! The node tree of an inode, for writing: finding the slot of a file block, reserving
//! a block (making the direct and indirect nodes on its path, as F2FS's
//! `f2fs_reserve_block` does), freeing blocks and whole inodes. Dirty data blocks are
//! written out by [`crate::writeback`].
//!
//! Counting follows the kernel: `i_blocks` grows by one for every data block reserved
//! and every node made below the inode; a reserved block holds `NEW_ADDR` until its
//! contents are written back, and is counted as reserved space meanwhile.

use crate::device::BlockDevice;
use crate::inode::InodeMut;
use crate::node::{is_dnode, NodeManager, NodePath};
use crate::pagecache::PageCache;
use crate::segment::{LogType, SegmentManager};
use crate::{Error, Ino, Result};
use std::sync::{Mutex, MutexGuard};
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::{Inode, NodeFooter};
use uf2fs_format::superblock::Superblock;
use uf2fs_format::Geometry;

/// Where the address of a file block lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// The node holding it (the inode number when `in_inode`).
    pub nid: u32,
    /// Whether that node is the inode.
    pub in_inode: bool,
    /// Slot within the node (for the inode: counted from its first data address).
    pub slot: usize,
    /// The address there now.
    pub addr: u32,
}

/// The node log of a node at footer offset `offset` of an inode that is (or is not) a
/// directory: indirect nodes cold, direct nodes hot for directories and warm otherwise.
/// `geo` is the volume's geometry (which offsets are indirect nodes).
pub fn node_log(geo: Geometry, offset: u32, dir: bool) -> LogType {
    if !is_dnode(geo, offset) {
        LogType::ColdNode
    } else if dir {
        LogType::HotNode
    } else {
        LogType::WarmNode
    }
}

/// Slot `i` of direct or indirect node block `b` (an address or a node id). The
/// index is uf2fs's own arithmetic over a block checked when read: one outside the
/// block is uf2fs's bug, not damage.
pub(crate) fn slot_of(b: &[u8], i: usize) -> Result<u32> {
    uf2fs_format::node::node_slot(b, i).map_err(|e| Error::bug(format!("node block slot {i}: {e}")))
}

/// Sets slot `i` of direct or indirect node block `b` (an index outside it is a bug,
/// as for [`slot_of`]).
pub(crate) fn set_slot(b: &mut [u8], i: usize, v: u32) -> Result<()> {
    uf2fs_format::node::set_node_slot(b, i, v).map_err(|e| Error::bug(format!("node block slot {i}: {e}")))
}

/// The footer of node block `b` of node `nid`, which the node manager checked when it
/// read or made the block: one that no longer decodes is uf2fs's bug.
pub(crate) fn footer_of(b: &[u8], nid: u32) -> Result<NodeFooter> {
    NodeFooter::decode(b).map_err(|e| Error::bug(format!("footer of node {nid} in memory: {e}")))
}

/// An empty node block of `geo`'s size: footer naming node `nid` of inode `ino` at
/// `offset`.
pub fn new_node_block(geo: Geometry, nid: u32, ino: Ino, offset: u32, dir: bool) -> Vec<u8> {
    let mut b = vec![0u8; geo.block_size()];
    // A footer always fits a whole block.
    let _ = NodeFooter::new(nid, ino, offset, dir).encode(&mut b);
    b
}

/// Everything changing a node tree needs, for one operation (or one checkpoint).
pub struct Tree<'a> {
    /// The device.
    pub dev: &'a dyn BlockDevice,
    /// The superblock.
    pub sb: &'a Superblock,
    /// Node blocks and node ids.
    pub nodes: &'a NodeManager,
    /// Blocks and reservations.
    pub segs: &'a Mutex<SegmentManager>,
    /// Dirty data blocks.
    pub pages: &'a PageCache,
    /// Which compressed files writeback compresses ([`crate::compress::policy`]).
    pub compress: &'a crate::compress::policy::CompressState,
    /// Recently decoded clusters (forgotten as clusters are rewritten).
    pub clusters: &'a crate::compress::ClusterCache,
    /// Node ids taken ahead for this operation (so that it cannot run out midway).
    pub nid_pool: Vec<u32>,
    /// Blocks reserved ahead for this operation's new nodes and data blocks, when it
    /// checked its room ([`Tree::hold_blocks`]): counted as reserved in the segment
    /// manager already, so that concurrent operations cannot take them between the
    /// check and the change. What is left goes back with [`Tree::release_pool`].
    pub block_pool: u64,
}

impl Tree<'_> {
    fn segs(&self) -> crate::lockrank::Ranked<MutexGuard<'_, SegmentManager>> {
        crate::lockrank::lock_segments(self.segs)
    }

    /// Reads inode `ino` for changing (dirty copy first; no checksum check: the read
    /// path has its own). A mode with no file type is refused here, naming the block,
    /// so that [`InodeMut::kind`] holds for every inode loaded.
    pub fn load_inode(&self, ino: Ino) -> Result<InodeMut> {
        let block = self.nodes.read(self.dev, ino, ino)?;
        let corrupt =
            |detail: String| Error::corrupt(format!("inode {ino}"), self.nodes.blkaddr_of(self.dev, ino), detail);
        let inode = Inode::decode(&block, self.sb).map_err(|e| corrupt(e.to_string()))?;
        if crate::FileKind::from_mode(inode.mode as u32).is_none() {
            return Err(corrupt(format!("mode {:#o} has no file type", inode.mode)));
        }
        Ok(InodeMut {
            ino,
            inode,
            block: block.to_vec(),
        })
    }

    /// Stores a changed inode as a dirty node block.
    pub fn store_inode(&self, inode: InodeMut) -> Result<()> {
        self.store_inode_as(inode, false)
    }

    /// [`Tree::store_inode`], saying whether the inode's only change since it was
    /// loaded is its timestamps (`times_only`: Linux's free-section rule does not
    /// count such an inode as dirty metadata).
    pub fn store_inode_as(&self, inode: InodeMut, times_only: bool) -> Result<()> {
        let (ino, log) = (inode.ino, inode.node_log());
        let block = inode.finish(self.sb)?;
        self.nodes.store_dirty_as(ino, block, log, times_only);
        Ok(())
    }

    /// Takes `n` node ids ahead: afterwards this operation cannot run out of them.
    pub fn take_nids(&mut self, n: usize) -> Result<()> {
        while self.nid_pool.len() < n {
            let nid = self.nodes.alloc_nid(self.dev)?;
            self.nid_pool.push(nid);
        }
        Ok(())
    }

    /// A node id: from the pool, else freshly allocated.
    pub fn take_nid(&mut self) -> Result<u32> {
        if self.nid_pool.is_empty() {
            return self.nodes.alloc_nid(self.dev);
        }
        Ok(self.nid_pool.remove(0))
    }

    /// Gives back the node ids and the blocks the operation took ahead and did not
    /// use.
    pub fn release_pool(&mut self) {
        for nid in self.nid_pool.drain(..) {
            self.nodes.release_nid(nid);
        }
        let held = std::mem::take(&mut self.block_pool);
        if held > 0 {
            self.segs().release_new_blocks(held);
        }
    }

    /// Adds `n` blocks, just reserved in the segment manager by the caller, to the
    /// blocks this operation holds ahead.
    pub fn hold_blocks(&mut self, n: u64) {
        self.block_pool += n;
    }

    /// Reserves `n` blocks for new nodes or data blocks: from those held ahead first,
    /// the rest from the segment manager ([`Error::NoSpace`], nothing taken, when they
    /// are not there).
    pub fn reserve_blocks(&mut self, n: u64) -> Result<()> {
        let from_pool = n.min(self.block_pool);
        if n > from_pool {
            self.segs().reserve_new_blocks(n - from_pool)?;
        }
        self.block_pool -= from_pool;
        Ok(())
    }

    /// Registers `nid` as a new node of inode `ino` holding `block` (to be written to
    /// `log`), with a block reserved for it ([`Tree::reserve_blocks`]).
    pub fn new_node(&mut self, nid: u32, ino: Ino, block: Vec<u8>, log: LogType) -> Result<()> {
        self.reserve_blocks(1)?;
        if let Err(e) = self.nodes.new_node(self.dev, nid, ino, block, log) {
            self.block_pool += 1;
            return Err(e);
        }
        Ok(())
    }

    fn path(&self, inode: &InodeMut, index: u64) -> Result<NodePath> {
        if inode.is_inline() {
            return Err(Error::Invalid(format!(
                "inode {} keeps its data inline; it has no block {index}",
                inode.ino
            )));
        }
        crate::node::node_path(inode.inode.tree_shape(), index)
    }

    /// Where the address of file block `index` lives, or `None` when a node on the way
    /// is missing.
    pub fn locate(&self, inode: &InodeMut, index: u64) -> Result<Option<Loc>> {
        let path = self.path(inode, index)?;
        if path.depth == 0 {
            let slot = path.slots[0];
            return Ok(Some(Loc {
                nid: inode.ino,
                in_inode: true,
                slot,
                addr: inode.slot(slot),
            }));
        }
        let mut nid = inode.inode.nids[path.slots[0]];
        for level in 1..=path.depth {
            if nid == 0 {
                return Ok(None);
            }
            let b = self.nodes.read(self.dev, nid, inode.ino)?;
            let value = slot_of(&b, path.slots[level])?;
            if level == path.depth {
                return Ok(Some(Loc {
                    nid,
                    in_inode: false,
                    slot: path.slots[level],
                    addr: value,
                }));
            }
            nid = value;
        }
        Ok(None)
    }

    /// A new node at `offset` of `inode` (counted in its `i_blocks`).
    pub fn make_node(&mut self, inode: &mut InodeMut, offset: u32) -> Result<u32> {
        let nid = self.take_nid()?;
        let dir = inode.is_dir();
        let geo = inode.inode.geometry;
        let block = new_node_block(geo, nid, inode.ino, offset, dir);
        if let Err(e) = self.new_node(nid, inode.ino, block, node_log(geo, offset, dir)) {
            self.nodes.release_nid(nid);
            return Err(e);
        }
        inode.inode.blocks += 1;
        Ok(nid)
    }

    /// Reserves file block `index` (which must have no address): the nodes on its
    /// path are made as needed, its slot says `NEW_ADDR`, a block is reserved.
    pub fn reserve(&mut self, inode: &mut InodeMut, index: u64) -> Result<Loc> {
        let path = self.path(inode, index)?;
        if path.depth == 0 {
            let slot = path.slots[0];
            if inode.slot(slot) != NULL_ADDR {
                return Err(Error::Invalid(format!("block {index} of inode {} exists", inode.ino)));
            }
            self.reserve_blocks(1)?;
            inode.set_slot(slot, NEW_ADDR);
            inode.inode.blocks += 1;
            return Ok(Loc {
                nid: inode.ino,
                in_inode: true,
                slot,
                addr: NEW_ADDR,
            });
        }
        let mut nid = inode.inode.nids[path.slots[0]];
        if nid == 0 {
            nid = self.make_node(inode, path.offsets[1])?;
            inode.inode.nids[path.slots[0]] = nid;
        }
        let dir = inode.is_dir();
        for level in 1..path.depth {
            let mut b = self.nodes.read(self.dev, nid, inode.ino)?.to_vec();
            let mut child = slot_of(&b, path.slots[level])?;
            if child == 0 {
                child = self.make_node(inode, path.offsets[level + 1])?;
                set_slot(&mut b, path.slots[level], child)?;
                self.nodes
                    .store_dirty(nid, b, node_log(inode.inode.geometry, path.offsets[level], dir));
            }
            nid = child;
        }
        let slot = path.slots[path.depth];
        let mut b = self.nodes.read(self.dev, nid, inode.ino)?.to_vec();
        if slot_of(&b, slot)? != NULL_ADDR {
            return Err(Error::Invalid(format!("block {index} of inode {} exists", inode.ino)));
        }
        self.reserve_blocks(1)?;
        set_slot(&mut b, slot, NEW_ADDR)?;
        self.nodes
            .store_dirty(nid, b, node_log(inode.inode.geometry, path.offsets[path.depth], dir));
        inode.inode.blocks += 1;
        Ok(Loc {
            nid,
            in_inode: false,
            slot,
            addr: NEW_ADDR,
        })
    }

    /// Forgets the inode's largest extent (`i_ext`) when it covers file block `index`,
    /// whose address is changing: the kernel splits its extent there; dropping it is
    /// always right (readers fall back to the node tree).
    pub fn drop_extent_over(inode: &mut InodeMut, index: u64) {
        let (fofs, _, len) = inode.inode.ext;
        if len != 0 && index >= fofs as u64 && index < fofs as u64 + len as u64 {
            inode.inode.ext = (0, 0, 0);
        }
    }

    /// Points the slot at `loc` at `addr` (the inode's own slots change in `inode`,
    /// which the caller stores).
    pub fn set_addr(&self, inode: &mut InodeMut, loc: &Loc, addr: u32) -> Result<()> {
        if loc.in_inode {
            inode.set_slot(loc.slot, addr);
            return Ok(());
        }
        let mut b = self.nodes.read(self.dev, loc.nid, inode.ino)?.to_vec();
        set_slot(&mut b, loc.slot, addr)?;
        let offset = footer_of(&b, loc.nid)?.offset();
        self.nodes
            .store_dirty(loc.nid, b, node_log(inode.inode.geometry, offset, inode.is_dir()));
        Ok(())
    }

    /// Gives up a data block address: a reservation back, or a block invalidated.
    fn drop_addr(&self, addr: u32) -> Result<()> {
        match addr {
            // A compressed cluster's marker slot holds no block (see `free_inode` for
            // what it counts as).
            NULL_ADDR | COMPRESS_ADDR => Ok(()),
            NEW_ADDR => {
                self.segs().release_new_blocks(1);
                Ok(())
            }
            a => self.segs().invalidate(a as u64),
        }
    }

    /// Frees file block `index` (its dirty copy too); false if it had no block.
    pub fn free_block(&self, inode: &mut InodeMut, index: u64) -> Result<bool> {
        let Some(loc) = self.locate(inode, index)? else {
            return Ok(false);
        };
        if loc.addr == NULL_ADDR {
            return Ok(false);
        }
        self.pages.remove(inode.ino, index);
        self.drop_addr(loc.addr)?;
        Tree::drop_extent_over(inode, index);
        self.set_addr(inode, &loc, NULL_ADDR)?;
        inode.inode.blocks = inode.inode.blocks.saturating_sub(1);
        Ok(true)
    }

    /// File block `index` as it reads now: the dirty copy, else the device; `None` for
    /// a hole.
    pub fn read_block(&self, inode: &InodeMut, index: u64) -> Result<Option<Vec<u8>>> {
        if let Some(p) = self.pages.get(inode.ino, index) {
            return Ok(Some(p.to_vec()));
        }
        let Some(loc) = self.locate(inode, index)? else {
            return Ok(None);
        };
        match loc.addr {
            NULL_ADDR => Ok(None),
            NEW_ADDR => Ok(Some(vec![0u8; inode.inode.geometry.block_size()])),
            a => {
                let (lo, hi) = self.nodes.main_area();
                if (a as u64) < lo || (a as u64) >= hi {
                    return Err(Error::corrupt(
                        format!("inode {}", inode.ino),
                        Some(a as u64),
                        "data block address outside the main area",
                    ));
                }
                Ok(Some(crate::device::read_block(self.dev, a as u64)?))
            }
        }
    }

    /// Makes `data` the contents of file block `index`, reserving the block first when
    /// it has none; it is written to `log` at the next checkpoint.
    pub fn put_block(&mut self, inode: &mut InodeMut, index: u64, data: Vec<u8>, log: LogType) -> Result<()> {
        let has = self.locate(inode, index)?.is_some_and(|l| l.addr != NULL_ADDR);
        if !has {
            self.reserve(inode, index)?;
        }
        self.pages.put(inode.ino, index, data, log);
        Ok(())
    }
}

/// A node still to visit while freeing a tree, by kind.
#[derive(Clone, Copy)]
enum Pending {
    Direct(u32),
    Indirect(u32),
    DoubleIndirect(u32),
}

impl Tree<'_> {
    /// Frees everything of an inode whose last link is gone: data blocks (dirty copies
    /// dropped), direct, indirect and xattr nodes, and the inode itself. Iterative.
    pub fn free_inode(&self, inode: &InodeMut) -> Result<()> {
        let ino = inode.ino;
        self.pages.remove_inode(ino);
        // Device inodes keep their device number where addresses would be.
        let has_data = matches!(
            inode.kind()?,
            crate::FileKind::File | crate::FileKind::Dir | crate::FileKind::Symlink
        );
        // The kernel counts a compressed cluster's COMPRESS_ADDR slot as a used block,
        // as it counts its NEW_ADDR slots, until the file's reserved blocks are
        // released (`f2fs_release_compress_blocks` uncounts both).
        let counted_marker =
            inode.inode.is_compressed() && !inode.inode.has_inline(uf2fs_format::node::F2FS_COMPRESS_RELEASED);
        let drop = |a: u32| match a {
            COMPRESS_ADDR if counted_marker => self.drop_addr(NEW_ADDR),
            a => self.drop_addr(a),
        };
        if has_data && !inode.is_inline() {
            for i in 0..inode.inode.addrs_per_inode() {
                drop(inode.slot(i))?;
            }
        }
        let n = &inode.inode.nids;
        let mut todo: Vec<Pending> = Vec::new();
        todo.extend([n[0], n[1]].iter().filter(|&&x| x != 0).map(|&x| Pending::Direct(x)));
        todo.extend([n[2], n[3]].iter().filter(|&&x| x != 0).map(|&x| Pending::Indirect(x)));
        if n[4] != 0 {
            todo.push(Pending::DoubleIndirect(n[4]));
        }
        while let Some(p) = todo.pop() {
            let nid = match p {
                Pending::Direct(x) | Pending::Indirect(x) | Pending::DoubleIndirect(x) => x,
            };
            let b = self.nodes.read(self.dev, nid, ino)?;
            for i in 0..inode.inode.geometry.addrs_per_block() {
                let v = slot_of(&b, i)?;
                match p {
                    Pending::Direct(_) => drop(v)?,
                    Pending::Indirect(_) if v != 0 => todo.push(Pending::Direct(v)),
                    Pending::DoubleIndirect(_) if v != 0 => todo.push(Pending::Indirect(v)),
                    _ => {}
                }
            }
            self.nodes.free_node(self.dev, self.segs, nid)?;
        }
        if inode.inode.xattr_nid != 0 {
            self.nodes.free_node(self.dev, self.segs, inode.inode.xattr_nid)?;
        }
        self.nodes.free_node(self.dev, self.segs, ino)
    }
}
