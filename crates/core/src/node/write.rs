//! Dirty node blocks: kept in memory, written out of place to their node log before the
//! NAT is flushed (at a checkpoint, or earlier when there are too many of them).
//!
//! Writing a node block: take the next block of its log with the summary (nid, NAT
//! version), stamp the footer (checkpoint version being written, next block address),
//! seal the inode checksum, write it, invalidate the block it replaces, point its NAT
//! entry at the new block (version kept). A node is freed by pointing its NAT entry at
//! `NULL_ADDR` with the version bumped (kept when it was never written, as the kernel
//! does) and invalidating its block.
//!
//! A write-out runs in two phases, so that no lock other operations need is held
//! across its device writes (up to [`DIRTY_NODES_MAX`] blocks):
//!
//! 1. under the dirty-node map's lock and the segment manager's mutex: the nodes leave
//!    the dirty map, take their blocks, get their footers stamped, the blocks they
//!    replace are invalidated, and the write-out takes its ticket in the node write
//!    sequence ([`super::order`]); then, the segment manager released, the nodes are
//!    published: new NAT entries, the clean cache, and `DirtyNodes::writing`, where
//!    the blocks stay pinned until written (a reader that misses the dirty map finds
//!    them there, never an address whose block is not yet written: the clean cache
//!    alone could drop them);
//! 2. with no lock held: the write-out waits for its turn (every write-out that took
//!    its blocks before it has written them), writes its blocks in runs of consecutive
//!    addresses, and unpins them. A failed write leaves them pinned (memory stays
//!    right for readers), fails every later turn, and the caller fails the volume, as
//!    for any I/O error during a write-out.

use super::order::Ticket;
use super::{lock, NodeBlock, NodeManager};
use crate::device::{BlockDevice, WriteKind};
use crate::lockrank::{lock_nodes, Ranked};
use crate::segment::{LogType, SegmentManager, NR_LOGS};
use crate::{Error, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use uf2fs_format::consts::{COMPRESS_ADDR, NEW_ADDR, NULL_ADDR};
use uf2fs_format::nat::NatEntry;
use uf2fs_format::node::{
    node_slot, seal_inode_checksum, Inode, NodeFooter, F2FS_INLINE_DATA, F2FS_INLINE_DENTRY, NODE_DENT_BIT,
    NODE_FSYNC_BIT,
};
use uf2fs_format::summary::Summary;
use uf2fs_format::superblock::Superblock;
use uf2fs_format::xattr::XATTR_NODE_OFFSET;

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
    /// An inode whose only change since it was last written is its timestamps: Linux
    /// does not count it as dirty metadata (F2FS mounts `lazytime` by default, and a
    /// timestamp alone does not reach `f2fs_dirty_inode`), so neither does the
    /// free-section rule ([`NodeManager::counted_dirty_nodes_by_log`]). It is written
    /// as every dirty node is.
    times_only: bool,
}

impl DirtyNode {
    /// A node changed in more than its timestamps.
    fn changed(block: NodeBlock, log: LogType) -> DirtyNode {
        DirtyNode {
            block,
            log,
            times_only: false,
        }
    }
}

/// Dirty node blocks by node id, with a count per log and the ids by inode (so that
/// fsync finds one inode's nodes without looking at the others), and the blocks being
/// written.
#[derive(Default)]
pub(super) struct DirtyNodes {
    map: BTreeMap<u32, DirtyNode>,
    per_log: [u64; NR_LOGS],
    /// Of `per_log`, the nodes dirty for their timestamps only.
    times_only_per_log: [u64; NR_LOGS],
    by_ino: HashMap<u32, BTreeSet<u32>>,
    /// Nodes a write-out published (NAT entry, clean cache) whose blocks may not be on
    /// the device yet, by node id: the address being written and the block (see the
    /// module notes). Not dirty: a change makes a dirty copy.
    writing: HashMap<u32, (u64, NodeBlock)>,
}

/// The dirty-node map's guard.
type DirtyGuard<'a> = Ranked<MutexGuard<'a, DirtyNodes>>;

/// The inode a node block belongs to, from its footer (0 for a block that is not a
/// node block's size, which no dirty node is).
fn ino_of(block: &[u8]) -> u32 {
    NodeFooter::decode(block).map_or(0, |f| f.ino)
}

impl DirtyNodes {
    fn insert(&mut self, nid: u32, mut node: DirtyNode) {
        // A node already dirty for more than its timestamps stays so.
        node.times_only &= self.map.get(&nid).is_none_or(|old| old.times_only);
        self.per_log[node.log as usize] += 1;
        self.times_only_per_log[node.log as usize] += u64::from(node.times_only);
        let ino = ino_of(&node.block);
        if let Some(old) = self.map.insert(nid, node) {
            self.forget_counts(&old);
            self.unindex(ino_of(&old.block), nid);
        }
        self.by_ino.entry(ino).or_default().insert(nid);
    }

    /// Takes `node`, out of the map, off the counts.
    fn forget_counts(&mut self, node: &DirtyNode) {
        self.per_log[node.log as usize] -= 1;
        self.times_only_per_log[node.log as usize] -= u64::from(node.times_only);
    }

    fn unindex(&mut self, ino: u32, nid: u32) {
        if let Some(set) = self.by_ino.get_mut(&ino) {
            set.remove(&nid);
            if set.is_empty() {
                self.by_ino.remove(&ino);
            }
        }
    }

    /// The dirty nodes of inode `ino`.
    fn of_inode(&self, ino: u32) -> Vec<u32> {
        self.by_ino
            .get(&ino)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Whether node `nid` is dirty or being written (its block on the device, if any,
    /// may be older).
    pub(super) fn contains(&self, nid: u32) -> bool {
        self.map.contains_key(&nid) || self.writing.contains_key(&nid)
    }

    /// The block of node `nid` if dirty or being written.
    fn block(&self, nid: u32) -> Option<NodeBlock> {
        match self.map.get(&nid) {
            Some(n) => Some(Arc::clone(&n.block)),
            None => self.writing.get(&nid).map(|(_, b)| Arc::clone(b)),
        }
    }

    /// Forgets node `nid` (freed): dirty copy and pin.
    fn remove(&mut self, nid: u32) {
        self.take(nid);
        self.writing.remove(&nid);
    }

    /// Takes node `nid` out, if dirty.
    fn take(&mut self, nid: u32) -> Option<DirtyNode> {
        let old = self.map.remove(&nid)?;
        self.forget_counts(&old);
        self.unindex(ino_of(&old.block), nid);
        Some(old)
    }

    /// Makes the nodes of `nodes` dirty again (after a write-out that failed).
    fn put_back(&mut self, nodes: Vec<Pending>) {
        for p in nodes {
            self.insert(p.nid, p.node);
        }
    }
}

/// A node being written out: its id, its NAT entry (before its block is taken, then
/// after) and its block.
struct Pending {
    nid: u32,
    entry: NatEntry,
    node: DirtyNode,
    /// Footer marks to write it with ([`NODE_FSYNC_BIT`], [`NODE_DENT_BIT`]); none
    /// but for fsync.
    marks: u32,
}

/// Whether `addr` is a block address (not `NULL_ADDR` or `NEW_ADDR`).
fn is_real(addr: u32) -> bool {
    addr != NULL_ADDR && addr != NEW_ADDR
}

/// Whether fsck.f2fs 1.15 follows the fsync records `pending` of inode `ino` if they
/// are written now (see [`NodeManager::write_out_checked`]).
fn fsck_follows(sb: &Superblock, segs: &SegmentManager, ino: u32, pending: &[Pending]) -> bool {
    let limit = segs.fsck_limit_blkaddr();
    let geo = sb.geometry();
    let warm = pending.iter().filter(|p| segs.is_warm_node_log(p.node.log)).count() as u64;
    segs.fsync_chain_intact()
        && !segs.data_past_fsck_limit(ino)
        && segs.warm_node_blocks_before_fsck_limit(warm)
        && !pending.iter().any(|p| points_at_or_past(sb, geo, &p.node.block, limit))
}

/// Whether node block `b` holds a data address at or past block `limit`: the data
/// addresses fsck.f2fs checks for a node of the roll-forward chain (an inode's, unless
/// its data is inline, and a direct node's; not an indirect or xattr node's). Holes,
/// `NEW_ADDR` and `COMPRESS_ADDR` are no blocks. A block that does not decode counts as
/// holding one (the caller then takes the safe way, a checkpoint).
fn points_at_or_past(sb: &Superblock, geo: uf2fs_format::Geometry, b: &[u8], limit: u64) -> bool {
    let past = |a: u32| is_real(a) && a != COMPRESS_ADDR && a as u64 >= limit;
    let Ok(f) = NodeFooter::decode(b) else {
        return true;
    };
    if f.offset() == 0 {
        let Ok(inode) = Inode::decode(b, sb) else {
            return true;
        };
        if inode.has_inline(F2FS_INLINE_DATA) || inode.has_inline(F2FS_INLINE_DENTRY) {
            return false;
        }
        return (0..inode.addrs_per_inode()).any(|i| past(inode.addr(b, i)));
    }
    if f.offset() == XATTR_NODE_OFFSET || !super::is_dnode(geo, f.offset()) {
        return false;
    }
    (0..geo.addrs_per_block()).any(|i| node_slot(b, i).map_or(true, past))
}

fn lock_segs(segs: &Mutex<SegmentManager>) -> Ranked<MutexGuard<'_, SegmentManager>> {
    crate::lockrank::lock_segments(segs)
}

/// Blocks to write at consecutive addresses from the first.
type Run = (u64, Vec<NodeBlock>);

impl NodeManager {
    fn lock_dirty(&self) -> DirtyGuard<'_> {
        lock_nodes(&self.dirty)
    }

    /// The dirty copy of node `nid`, or its block being written, if any.
    pub(super) fn dirty_block(&self, nid: u32) -> Option<NodeBlock> {
        self.lock_dirty().block(nid)
    }

    /// Stores a changed node block (footer already set) to be written to `log`.
    pub(crate) fn store_dirty(&self, nid: u32, block: Vec<u8>, log: LogType) {
        self.store_dirty_as(nid, block, log, false);
    }

    /// [`NodeManager::store_dirty`] for an inode whose only change is its timestamps
    /// (`times_only`, kept by the dirty node until it is written).
    pub(crate) fn store_dirty_as(&self, nid: u32, block: Vec<u8>, log: LogType, times_only: bool) {
        debug_assert_eq!(block.len(), self.geometry.block_size());
        self.lock_dirty().insert(
            nid,
            DirtyNode {
                block: Arc::new(block),
                log,
                times_only,
            },
        );
        lock(&self.node_cache).pop(nid);
    }

    /// Changes node `nid` in memory: `edit` runs on its dirty copy, which then waits for
    /// `log`. A node not dirty yet starts from `block`, the node as last read (copied
    /// only if someone else still holds it); a dirty one is edited where it is.
    ///
    /// A node turning dirty will not be read from `dev` again before it is written
    /// elsewhere (reads find it dirty, GC moves the dirty copy): a device that drops
    /// such blocks ([`BlockDevice::forget`], the lab's) is told, so that it stops
    /// sharing `block` and the edit needs no copy.
    pub(crate) fn update_dirty(
        &self,
        dev: &dyn BlockDevice,
        nid: u32,
        block: NodeBlock,
        log: LogType,
        edit: impl FnOnce(&mut [u8]),
    ) {
        debug_assert_eq!(block.len(), self.geometry.block_size());
        // Out of the clean cache first, so that `block` is likely the only holder.
        lock(&self.node_cache).pop(nid);
        // The dirty map, then the NAT: the order `write_dirty_nodes` takes them in.
        let mut dirty = self.lock_dirty();
        let node = match dirty.take(nid) {
            Some(node) => {
                drop(block);
                node.block
            }
            None => {
                // A block still being written stays on the device: not forgotten.
                if Arc::strong_count(&block) > 1 && !dirty.writing.contains_key(&nid) {
                    if let Ok(e) = self.nat_entry(dev, nid) {
                        if is_real(e.block_addr) {
                            dev.forget(e.block_addr as u64);
                        }
                    }
                }
                block
            }
        };
        let mut node = DirtyNode::changed(node, log);
        edit(Arc::make_mut(&mut node.block).as_mut_slice());
        dirty.insert(nid, node);
    }

    /// Dirty node blocks in all.
    pub fn dirty_node_count(&self) -> usize {
        self.lock_dirty().map.len()
    }

    /// Dirty node blocks by the log they go to.
    pub fn dirty_nodes_by_log(&self) -> [u64; NR_LOGS] {
        self.lock_dirty().per_log
    }

    /// Dirty node blocks by log as Linux's free-section rule counts them
    /// (`F2FS_DIRTY_NODES` + `F2FS_DIRTY_IMETA`): without the inodes dirty for their
    /// timestamps only (a dirty node's `times_only`).
    pub fn counted_dirty_nodes_by_log(&self) -> [u64; NR_LOGS] {
        let d = self.lock_dirty();
        std::array::from_fn(|li| d.per_log[li] - d.times_only_per_log[li])
    }

    /// Makes `nid` (taken with [`NodeManager::alloc_nid`]) a new node of inode `ino`
    /// with contents `block`, for which the caller reserved a block (see
    /// [`crate::tree::Tree::reserve_blocks`]): its NAT entry says `NEW_ADDR` until it is
    /// written, and the node (and inode) counts grow.
    pub(crate) fn new_node(
        &self,
        dev: &dyn BlockDevice,
        nid: u32,
        ino: u32,
        block: Vec<u8>,
        log: LogType,
    ) -> Result<()> {
        // Held throughout, so that no write-out of dirty nodes runs halfway through.
        let mut dirty = self.lock_dirty();
        let e = self.nat_entry(dev, nid)?;
        if e.block_addr != NULL_ADDR {
            let (place, at) = self.nat_entry_location(nid);
            return Err(Error::corrupt(
                format!("NAT entry of node {nid} in {place}"),
                at,
                format!("handed out as free but points at {:#x}", e.block_addr),
            ));
        }
        let entry = NatEntry {
            version: e.version,
            ino,
            block_addr: NEW_ADDR,
        };
        lock(&self.free_nids).taken(nid);
        lock(&self.nat).dirty.insert(nid, entry);
        {
            let mut c = self.lock_counts();
            c.valid_node_count += 1;
            if nid == ino {
                c.valid_inode_count += 1;
            }
        }
        dirty.insert(nid, DirtyNode::changed(Arc::new(block), log));
        lock(&self.node_cache).pop(nid);
        Ok(())
    }

    /// Frees node `nid`: its block is invalidated (or its reservation given back when
    /// it was never written), its NAT entry points nowhere, the counts shrink. The id
    /// becomes free for others after the next checkpoint.
    pub(crate) fn free_node(&self, dev: &dyn BlockDevice, segs: &Mutex<SegmentManager>, nid: u32) -> Result<()> {
        // Held throughout, so that no write-out of dirty nodes moves the node between
        // reading its NAT entry and dropping it.
        let mut dirty = self.lock_dirty();
        let e = self.nat_entry(dev, nid)?;
        let mut version = e.version;
        match e.block_addr {
            NULL_ADDR => {
                let (place, at) = self.nat_entry_location(nid);
                return Err(Error::corrupt(
                    format!("NAT entry of node {nid} in {place}"),
                    at,
                    "a node being freed is not allocated",
                ));
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
        let mut c = self.lock_counts();
        c.valid_node_count = c.valid_node_count.saturating_sub(1);
        if nid == e.ino {
            c.valid_inode_count = c.valid_inode_count.saturating_sub(1);
        }
        Ok(())
    }

    /// Writes every dirty node block out of place to its log, in the two phases of the
    /// module notes (neither the dirty map nor the segment manager locked while the
    /// blocks are written); `node_ver` is the footer version of nodes written now (the
    /// last checkpoint's [`crate::checkpoint::CheckpointState::node_version`]). Returns
    /// the blocks written, once they are on the device, and with them every block an
    /// earlier write-out took (also when nothing is dirty: a checkpoint's NAT then points
    /// at written blocks only). An error leaves memory ahead of the device: the caller
    /// must fail the volume.
    pub(crate) fn write_dirty_nodes(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        node_ver: u64,
    ) -> Result<usize> {
        let mut dirty = self.lock_dirty();
        if dirty.map.is_empty() {
            drop(dirty);
            return self.order.drain().map(|()| 0);
        }
        let mut entries = Vec::with_capacity(dirty.map.len());
        for &nid in dirty.map.keys() {
            entries.push(self.nat_entry(dev, nid)?);
        }
        // Out of the map while they are written; back in it if they cannot be.
        let d = &mut *dirty;
        let map = std::mem::take(&mut d.map);
        d.per_log = [0; NR_LOGS];
        d.times_only_per_log = [0; NR_LOGS];
        d.by_ino.clear();
        let pending: Vec<Pending> = (map.into_iter().zip(entries))
            .map(|((nid, node), entry)| Pending {
                nid,
                entry,
                node,
                marks: 0,
            })
            .collect();
        self.write_out(dev, sb, segs, dirty, pending, 0, node_ver, WriteKind::UserNode)
    }

    /// Writes at most `max` dirty nodes (the lowest node ids first) as
    /// [`NodeManager::write_dirty_nodes`] writes them all: a paced collector spreads a
    /// checkpoint's node write-out over steps this way, as the kernel's node writeback
    /// writes nodes between checkpoints. Returns the blocks written.
    pub(crate) fn write_some_dirty_nodes(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        node_ver: u64,
        max: usize,
    ) -> Result<usize> {
        let mut dirty = self.lock_dirty();
        let nids: Vec<u32> = dirty.map.keys().take(max).copied().collect();
        if nids.is_empty() {
            return Ok(0);
        }
        let mut entries = Vec::with_capacity(nids.len());
        for &nid in &nids {
            entries.push(self.nat_entry(dev, nid)?);
        }
        let mut pending = Vec::with_capacity(nids.len());
        for (nid, entry) in nids.into_iter().zip(entries) {
            let node = dirty.take(nid).expect("listed under the same lock");
            pending.push(Pending {
                nid,
                entry,
                node,
                marks: 0,
            });
        }
        self.write_out(dev, sb, segs, dirty, pending, 0, node_ver, WriteKind::UserNode)
    }

    /// Writes inode `ino`'s dirty direct nodes (inode, direct and xattr nodes: what
    /// roll-forward recovery replays) to their log, the inode last, also when only its
    /// other nodes were dirty or none was, and only the inode block with the fsync
    /// mark: recovery replays everything of the inode before its last fsync-marked
    /// block (as the kernel's does), and since it follows the log's chain only as far
    /// as every block landed, a power cut in the middle of these writes leaves either
    /// all of them reachable or none of this fsync's mark (the kernel marks every
    /// direct node, so a torn fsync can replay some of its nodes without the inode's
    /// size). With `dent`, the inode block also gets the dentry mark (recovery then
    /// adds its name to its parent). Indirect nodes stay dirty: recovery rebuilds them. `node_ver` as for
    /// [`NodeManager::write_dirty_nodes`]. Returns the blocks written, once on the
    /// device (with every block an earlier write-out took: see [`super::order`]).
    ///
    /// `empty` (`(nid, offset)`: direct nodes freed since the last checkpoint, where the
    /// file has no direct node now) go first, each as a direct node of that offset with
    /// every address a hole: recovery replays them over the node it would otherwise
    /// find there (the checkpoint's, or one written after it), so that the blocks a
    /// truncate freed do not come back. They are records only: no NAT entry points at
    /// them and their blocks are invalid as soon as written.
    ///
    /// `None`: nothing written, the nodes still dirty, because fsck.f2fs 1.15 would not
    /// follow these records (see [`crate::segment::fsck_roll_forward_limit`]); the
    /// fsync must write a checkpoint.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn write_fsync_nodes(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        ino: u32,
        node_ver: u64,
        dent: bool,
        empty: &[(u32, u32)],
    ) -> Result<Option<usize>> {
        // Read before the dirty map is locked (reads look at it); the caller holds the
        // inode, so if it is not dirty below, this is its block.
        crate::lockrank::assert_held(crate::lockrank::Rank::Inodes, "an fsync's node write-out");
        let clean_inode = self.read(dev, ino, ino)?;
        let mut dirty = self.lock_dirty();
        let mine: Vec<u32> = dirty
            .of_inode(ino)
            .into_iter()
            .filter(|&nid| {
                nid != ino
                    && dirty.map.get(&nid).is_some_and(|n| {
                        NodeFooter::decode(&n.block).is_ok_and(|f| {
                            super::is_dnode(self.geometry, f.offset()) || f.offset() == XATTR_NODE_OFFSET
                        })
                    })
            })
            .collect();
        let mut entries = Vec::with_capacity(mine.len() + 1);
        for &nid in mine.iter().chain([&ino]) {
            entries.push(self.nat_entry(dev, nid)?);
        }
        let mut pending = Vec::with_capacity(empty.len() + mine.len() + 1);
        for &(nid, offset) in empty {
            let entry = self.nat_entry(dev, nid)?;
            let block = crate::tree::new_node_block(self.geometry, nid, ino, offset, false);
            pending.push(Pending {
                nid,
                entry: NatEntry {
                    block_addr: NULL_ADDR,
                    ..entry
                },
                node: DirtyNode::changed(Arc::new(block), LogType::WarmNode),
                marks: 0,
            });
        }
        let records = pending.len();
        for (&nid, entry) in mine.iter().chain([&ino]).zip(entries) {
            let (node, marks) = if nid == ino {
                let node = dirty
                    .take(ino)
                    .unwrap_or(DirtyNode::changed(clean_inode.clone(), LogType::WarmNode));
                (node, NODE_FSYNC_BIT | if dent { NODE_DENT_BIT } else { 0 })
            } else {
                (dirty.take(nid).expect("listed as dirty above"), 0)
            };
            pending.push(Pending {
                nid,
                entry,
                node,
                marks,
            });
        }
        self.write_out_checked(
            dev,
            sb,
            segs,
            dirty,
            pending,
            records,
            node_ver,
            WriteKind::UserNode,
            Some(ino),
        )
    }

    /// Writes `pending` (taken out of the dirty map, whose guard is `dirty`) to their
    /// logs in the two phases of the module notes. The first `records` are records
    /// only (see [`NodeManager::write_fsync_nodes`]): not published, and their blocks
    /// invalidated once written. If no block can be taken the nodes go back into the
    /// dirty map. Returns the blocks written, once on the device.
    #[allow(clippy::too_many_arguments)]
    fn write_out(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        dirty: DirtyGuard<'_>,
        pending: Vec<Pending>,
        records: usize,
        node_ver: u64,
        kind: WriteKind,
    ) -> Result<usize> {
        // Refused (`None`) only with an inode whose fsync this is: never here.
        let written = self.write_out_checked(dev, sb, segs, dirty, pending, records, node_ver, kind, None)?;
        Ok(written.unwrap_or(0))
    }

    /// [`NodeManager::write_out`]; with `fsync_of`, the write-out of that inode's fsync
    /// records, refused (`None`, the nodes back in the dirty map, nothing written)
    /// where fsck.f2fs 1.15 would not follow them in the roll-forward chain (see
    /// [`crate::segment::fsck_roll_forward_limit`]): a block of the chain before them,
    /// one of them, or a data block one of them or an earlier node of the inode in the
    /// chain points at, in the segments it refuses. Decided under the segment
    /// manager's mutex, with the blocks taken: no other write-out comes between.
    #[allow(clippy::too_many_arguments)]
    fn write_out_checked(
        &self,
        dev: &dyn BlockDevice,
        sb: &Superblock,
        segs: &Mutex<SegmentManager>,
        mut dirty: DirtyGuard<'_>,
        mut pending: Vec<Pending>,
        records: usize,
        node_ver: u64,
        kind: WriteKind,
        fsync_of: Option<u32>,
    ) -> Result<Option<usize>> {
        // A checkpoint (cp_lock exclusive) never runs beside a write-out: it finds
        // every node either dirty or written.
        crate::lockrank::assert_held(crate::lockrank::Rank::Checkpoint, "a node write-out");
        // Phase 1: blocks, footers and a place in the write sequence under the segment
        // manager's mutex (tickets follow allocation order); then published.
        let (runs, ticket) = {
            let mut s = lock_segs(segs);
            if let Some(ino) = fsync_of {
                if !fsck_follows(sb, &s, ino, &pending) {
                    dirty.put_back(pending.split_off(records));
                    return Ok(None);
                }
            }
            match take_blocks(dev, sb, &mut s, &mut pending, node_ver) {
                Ok(runs) => (runs, self.order.ticket()),
                Err(e) => {
                    dirty.put_back(pending.split_off(records));
                    return Err(e);
                }
            }
        };
        self.publish(&mut dirty, &pending[records..]);
        drop(dirty);
        // Phase 2: no lock held but the caller's (cp_lock, inode locks).
        self.issue(dev, ticket, &runs, kind)?;
        if records > 0 {
            let mut s = lock_segs(segs);
            for p in &pending[..records] {
                s.invalidate(p.entry.block_addr as u64)?;
            }
        }
        let mut dirty = self.lock_dirty();
        for p in &pending[records..] {
            let addr = p.entry.block_addr as u64;
            if dirty.writing.get(&p.nid).is_some_and(|(a, _)| *a == addr) {
                dirty.writing.remove(&p.nid);
            }
        }
        Ok(Some(pending.len()))
    }

    /// Publishes the nodes of `taken`, which have their blocks (not yet written): their
    /// new NAT entries, their blocks in the clean cache and pinned in `dirty.writing`
    /// until written. The caller holds the dirty map (`dirty`), so that a reader finds
    /// each node either dirty or at its new address with its block pinned.
    fn publish(&self, dirty: &mut DirtyNodes, taken: &[Pending]) {
        {
            let mut nat = lock(&self.nat);
            for p in taken {
                nat.dirty.insert(p.nid, p.entry);
            }
        }
        {
            let mut cache = lock(&self.node_cache);
            for p in taken {
                cache.put(p.nid, Arc::clone(&p.node.block));
            }
        }
        for p in taken {
            dirty
                .writing
                .insert(p.nid, (p.entry.block_addr as u64, Arc::clone(&p.node.block)));
        }
    }

    /// Writes `runs` when `ticket`'s turn comes (every write-out that took blocks
    /// before has then written them). A failure ends the sequence (every later
    /// write-out fails) and is returned.
    fn issue(&self, dev: &dyn BlockDevice, ticket: Ticket<'_>, runs: &[Run], kind: WriteKind) -> Result<()> {
        let turn = ticket.turn()?;
        for (start, blocks) in runs {
            // Shared with the device, which keeps them without a copy when it can.
            if let Err(e) = dev.write_shared(*start, blocks, kind) {
                turn.failed(format!("writing {} node blocks at {start:#x}: {e}", blocks.len()));
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Takes blocks for the nodes of `nodes`, in order, stamps them, and invalidates the
/// blocks they replace; each node's entry becomes its new NAT entry. Returns the blocks
/// to write, in runs of consecutive addresses (nothing is written here). On an error
/// the nodes are left as they are (some stamped), for the caller to keep dirty.
fn take_blocks(
    dev: &dyn BlockDevice,
    sb: &Superblock,
    segs: &mut SegmentManager,
    nodes: &mut [Pending],
    node_ver: u64,
) -> Result<Vec<Run>> {
    let mut runs: Vec<Run> = Vec::new();
    let limit = segs.fsck_limit_blkaddr();
    let geo = sb.geometry();
    for p in nodes.iter_mut() {
        // A node of the roll-forward chain pointing where fsck.f2fs 1.15 refuses data
        // (see `crate::segment::fsck_roll_forward_limit`): its inode's fsyncs write a
        // checkpoint until the next one.
        if segs.is_warm_node_log(p.node.log) {
            let ino = ino_of(&p.node.block);
            if !segs.data_past_fsck_limit(ino) && points_at_or_past(sb, geo, &p.node.block, limit) {
                segs.note_data_past_fsck_limit(ino);
            }
        }
        let sum = Summary {
            nid: p.nid,
            version: p.entry.version,
            ofs_in_node: 0,
        };
        let addr = if p.entry.block_addr == NEW_ADDR {
            segs.alloc_reserved_block(dev, p.node.log, sum)?
        } else {
            segs.alloc_block(dev, p.node.log, sum)?
        };
        let old = p.entry.block_addr;
        if is_real(old) {
            // Before the stamp: a device that drops moved blocks then leaves this one
            // unshared, and the stamp needs no copy.
            dev.forget(old as u64);
        }
        let next = segs.next_blkaddr(p.node.log);
        stamp(
            Arc::make_mut(&mut p.node.block).as_mut_slice(),
            sb,
            next,
            node_ver,
            p.marks,
        )?;
        // The footer names the node written (what a read checks after: `read`).
        debug_assert!(
            NodeFooter::decode(&p.node.block).is_ok_and(|f| f.nid == p.nid && f.cp_ver == node_ver),
            "node {} about to be written with another node's footer",
            p.nid
        );
        match runs.last_mut() {
            Some((start, blocks)) if *start + blocks.len() as u64 == addr && blocks.len() < GATHER_BLOCKS_MAX => {
                blocks.push(Arc::clone(&p.node.block))
            }
            _ => runs.push((addr, vec![Arc::clone(&p.node.block)])),
        }
        if is_real(old) {
            segs.invalidate(old as u64)?;
        }
        p.entry.block_addr = addr as u32;
    }
    Ok(runs)
}

/// Makes `b` the node block as written: footer's checkpoint version (`node_ver`) and
/// the address its log takes next (`next`, which chains the warm node log for
/// roll-forward recovery) set, inode checksum sealed.
fn stamp(b: &mut [u8], sb: &Superblock, next: u64, node_ver: u64, marks: u32) -> Result<()> {
    let bad = |e: uf2fs_format::FormatError| Error::Invalid(format!("cannot encode node block: {e}"));
    let mut f = NodeFooter::decode(b).map_err(bad)?;
    f.flag = (f.flag & !(NODE_FSYNC_BIT | NODE_DENT_BIT)) | marks;
    f.cp_ver = node_ver;
    f.next_blkaddr = next as u32;
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
        node_ver: u64,
        nodes: &[(u32, NatEntry)],
        log_of: &dyn Fn(&NodeFooter) -> LogType,
    ) -> Result<usize> {
        let mut dirty = self.lock_dirty();
        // Out of the dirty map while they are written; in it if anything fails.
        let mut pending = Vec::with_capacity(nodes.len());
        let mut loaded = Ok(());
        for &(nid, entry) in nodes {
            let node = match dirty.take(nid) {
                Some(node) => node,
                None => match self.load_to_move(dev, nid, entry, dirty.block(nid), log_of) {
                    Ok(node) => node,
                    Err(e) => {
                        loaded = Err(e);
                        break;
                    }
                },
            };
            pending.push(Pending {
                nid,
                entry,
                node,
                marks: 0,
            });
        }
        if let Err(e) = loaded {
            dirty.put_back(pending);
            return Err(e);
        }
        self.write_out(dev, sb, segs, dirty, pending, 0, node_ver, WriteKind::GcNode)
    }

    /// A clean node to move: `writing` (its block while a write-out writes it), else
    /// from the clean cache (or the device), its footer checked against its NAT `entry`
    /// and its log found by `log_of`.
    fn load_to_move(
        &self,
        dev: &dyn BlockDevice,
        nid: u32,
        entry: NatEntry,
        writing: Option<NodeBlock>,
        log_of: &dyn Fn(&NodeFooter) -> LogType,
    ) -> Result<DirtyNode> {
        let cached = lock(&self.node_cache).pop(nid);
        let block = match writing.or(cached) {
            Some(b) => b,
            None => dev.read_shared(entry.block_addr as u64)?,
        };
        let f = NodeFooter::decode(&block)
            .map_err(|x| Error::corrupt("node", Some(entry.block_addr as u64), x.to_string()))?;
        if f.nid != nid || f.ino != entry.ino {
            return Err(Error::corrupt(
                format!("node {nid}"),
                Some(entry.block_addr as u64),
                format!(
                    "footer says node {} of inode {}, NAT says node {nid} of inode {}",
                    f.nid, f.ino, entry.ino
                ),
            ));
        }
        Ok(DirtyNode::changed(block, log_of(&f)))
    }
}
