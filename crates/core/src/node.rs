//! Node access: NAT lookups (dirty entries first, then the journal, then the live NAT
//! block copy) and a bounded cache of node blocks, each checked against its footer
//! before use. For a read-write file system the NAT side also keeps dirty entries and
//! writes them out at checkpoints (see [`NodeManager::flush_nat`]), maintaining the NAT
//! bits when the opened checkpoint had valid ones.

use crate::device::BlockDevice;
use crate::{Error, Result};
use cache::ClockCache;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use uf2fs_format::consts::NEW_ADDR;
use uf2fs_format::nat::{nat_block_addr, nat_block_entry, NatEntry, NAT_ENTRY_SIZE};
use uf2fs_format::node::NodeFooter;
use uf2fs_format::superblock::Superblock;

mod cache;
mod free_nid;
mod order;
mod path;
mod write;
pub use path::{is_dnode, node_path, NodePath, TreeShape};
pub use write::DIRTY_NODES_MAX;

/// Clean node blocks kept in memory (at most 128 MiB): every node block of a 32 GiB
/// file (the seed's volume) and its directory, so GC's node moves and the random
/// writes of such a file rarely read a node from the device. The kernel keeps node
/// pages as long as memory allows; this bounds what a mount can take.
const NODE_CACHE_BLOCKS: usize = 32768;
/// NAT blocks kept in memory (4 MiB).
const NAT_CACHE_BLOCKS: usize = 1024;
/// Times a node read starts again because the node moved while it was being read
/// (see [`NodeManager::read`]); past them the last block read is returned uncached.
const READ_ATTEMPTS_MAX: u32 = 16;

/// A node block shared between readers.
pub type NodeBlock = Arc<Vec<u8>>;

/// The NAT bits of a checkpoint pack, kept in step with the NAT blocks written:
/// bit `i` (little-endian order) of `full` when NAT block `i` has every entry in use,
/// of `empty` when it has none (nid 0 counts as in use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatBitsMaps {
    /// Full NAT blocks.
    pub full: Vec<u8>,
    /// Empty NAT blocks.
    pub empty: Vec<u8>,
}

impl NatBitsMaps {
    /// Updates the bits of NAT block `index` from its contents.
    fn update(&mut self, index: u32, block: &[u8]) {
        let per = block.len() / NAT_ENTRY_SIZE;
        let used = (0..per)
            .filter(|&j| (index == 0 && j == 0) || block[j * NAT_ENTRY_SIZE + 5..j * NAT_ENTRY_SIZE + 9] != [0; 4])
            .count();
        uf2fs_format::le::set_bit_le(&mut self.full, index as usize, used == per);
        uf2fs_format::le::set_bit_le(&mut self.empty, index as usize, used == 0);
    }
}

/// The NAT state beyond the blocks: version bitmap, journal, dirty entries, NAT bits.
struct NatTable {
    /// NAT version bitmap as the next checkpoint records it.
    bitmap: Vec<u8>,
    /// Entries held in the checkpoint's NAT journal.
    journal: BTreeMap<u32, NatEntry>,
    /// Entries changed since the last checkpoint (at most one per node id).
    dirty: BTreeMap<u32, NatEntry>,
    /// NAT bits, when they were valid at open; kept in step with NAT block writes.
    bits: Option<NatBitsMaps>,
}

/// Node counts the checkpoint records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeCounts {
    /// Valid node blocks.
    pub valid_node_count: u32,
    /// Valid inodes.
    pub valid_inode_count: u32,
    /// Where the next free-nid scan starts.
    pub next_free_nid: u32,
}

/// What a NAT flush leaves for the checkpoint pack.
#[derive(Debug, Clone, Default)]
pub struct NatFlush {
    /// Entries for the NAT journal (hot data summaries).
    pub journal: Vec<(u32, NatEntry)>,
    /// NAT blocks written to their other copy.
    pub blocks_written: u32,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Looks nodes up by id, and (read-write) keeps dirty node blocks and free node ids.
/// Locks, outermost first: `dirty`, `free_nids`, `nat`, `nat_cache`, `node_cache`,
/// `counts`. No NodeManager lock is held while the SegmentManager is locked, except
/// `dirty` while a write-out takes its blocks (or GC moves nodes), and in `free_node`
/// (NodeManager -> SegmentManager, the order of `crate::lockrank`). Neither is held
/// while node blocks are written: see [`NodeManager::write_dirty_nodes`].
pub struct NodeManager {
    geometry: uf2fs_format::Geometry,
    nat_blkaddr: u32,
    nat: Mutex<NatTable>,
    counts: Mutex<NodeCounts>,
    max_nid: u64,
    main: (u64, u64),
    reserved: [u32; 2],
    nat_cache: Mutex<ClockCache<NodeBlock>>,
    node_cache: Mutex<ClockCache<NodeBlock>>,
    /// Node blocks changed since they were last written, and those being written
    /// (read-write only).
    dirty: Mutex<write::DirtyNodes>,
    /// The order node write-outs reach the device in ([`order`]).
    order: order::WriteOrder,
    /// Node ids ready to hand out (read-write only).
    free_nids: Mutex<free_nid::FreeNids>,
    /// Direct nodes freed since the last checkpoint that had been written (to the
    /// checkpoint's tree or to the warm node log after it), by inode: `(nid, offset)`.
    /// Roll-forward recovery would find them (see [`NodeManager::note_freed_dnode`]).
    freed_dnodes: Mutex<HashMap<u32, Vec<(u32, u32)>>>,
}

fn cache(n: usize) -> Mutex<ClockCache<NodeBlock>> {
    Mutex::new(ClockCache::new(n))
}

fn get_cached(c: &Mutex<ClockCache<NodeBlock>>, k: u32) -> Option<NodeBlock> {
    lock(c).get(k)
}

fn put_cached(c: &Mutex<ClockCache<NodeBlock>>, k: u32, v: NodeBlock) {
    lock(c).put(k, v);
}

impl NodeManager {
    /// Builds the manager from the superblock and the checkpoint's NAT state and counts.
    pub fn new(
        sb: &Superblock,
        cp: &uf2fs_format::checkpoint::Checkpoint,
        nat_bitmap: Vec<u8>,
        journal: &[(u32, NatEntry)],
    ) -> NodeManager {
        NodeManager {
            geometry: sb.geometry(),
            nat_blkaddr: sb.nat_blkaddr,
            nat: Mutex::new(NatTable {
                bitmap: nat_bitmap,
                journal: journal.iter().copied().collect(),
                dirty: BTreeMap::new(),
                bits: None,
            }),
            counts: Mutex::new(NodeCounts {
                valid_node_count: cp.valid_node_count,
                valid_inode_count: cp.valid_inode_count,
                next_free_nid: cp.next_free_nid,
            }),
            max_nid: sb.max_nid(),
            main: (sb.main_blkaddr as u64, sb.main_end_blkaddr()),
            reserved: [sb.node_ino, sb.meta_ino],
            nat_cache: cache(NAT_CACHE_BLOCKS),
            node_cache: cache(NODE_CACHE_BLOCKS),
            dirty: Mutex::new(write::DirtyNodes::default()),
            order: order::WriteOrder::default(),
            free_nids: Mutex::new(free_nid::FreeNids::new(cp.next_free_nid, sb.max_nid())),
            freed_dnodes: Mutex::new(HashMap::new()),
        }
    }

    /// NAT entries per NAT block.
    pub(crate) fn nat_per_block(&self) -> u32 {
        self.geometry.nat_entries_per_block() as u32
    }

    /// The volume's block geometry.
    pub fn geometry(&self) -> uf2fs_format::Geometry {
        self.geometry
    }

    /// Records that direct node `nid` of inode `ino`, whose block is `block`, is about
    /// to be freed (a truncate). When it was ever written, roll-forward recovery would
    /// still find it after a power cut: in the checkpoint's tree, or in the warm node
    /// log after the checkpoint, with the data addresses it had. The next fsync of
    /// `ino` then writes an empty node of that offset before the inode, which recovery
    /// (uf2fs's and Linux's alike) replays over it. Forgotten at the next checkpoint.
    pub(crate) fn note_freed_dnode(&self, dev: &dyn BlockDevice, ino: u32, nid: u32, block: &[u8]) -> Result<()> {
        let e = self.nat_entry(dev, nid)?;
        if e.block_addr == NEW_ADDR || e.block_addr == uf2fs_format::consts::NULL_ADDR {
            return Ok(());
        }
        let f = NodeFooter::decode(block).map_err(|x| Error::corrupt(format!("node {nid}"), None, x.to_string()))?;
        if f.offset() == 0 || !is_dnode(self.geometry, f.offset()) {
            return Ok(());
        }
        lock(&self.freed_dnodes).entry(ino).or_default().push((nid, f.offset()));
        Ok(())
    }

    /// Takes the record of `ino`'s direct nodes freed since the last checkpoint
    /// (`(nid, offset)`; see [`NodeManager::note_freed_dnode`]).
    pub(crate) fn take_freed_dnodes(&self, ino: u32) -> Vec<(u32, u32)> {
        lock(&self.freed_dnodes).remove(&ino).unwrap_or_default()
    }

    /// Gives back what [`NodeManager::take_freed_dnodes`] took, when it was not used.
    pub(crate) fn restore_freed_dnodes(&self, ino: u32, freed: Vec<(u32, u32)>) {
        if !freed.is_empty() {
            lock(&self.freed_dnodes).entry(ino).or_default().extend(freed);
        }
    }

    /// A checkpoint is durable: every freed node is recorded in its NAT.
    pub(crate) fn forget_freed_dnodes(&self) {
        lock(&self.freed_dnodes).clear();
    }

    /// The NAT entry of `nid`.
    pub fn nat_entry(&self, dev: &dyn BlockDevice, nid: u32) -> Result<NatEntry> {
        if nid == 0 || nid as u64 >= self.max_nid || self.reserved.contains(&nid) {
            return Err(Error::corrupt(
                "node id",
                None,
                format!("nid {nid} out of range (max {})", self.max_nid),
            ));
        }
        let nat = lock(&self.nat);
        if let Some(e) = nat.dirty.get(&nid).or_else(|| nat.journal.get(&nid)) {
            return Ok(*e);
        }
        let index = nid / self.nat_per_block();
        let (addr, block) = self.nat_block(dev, &nat, index)?;
        nat_block_entry(&block, (nid % self.nat_per_block()) as usize)
            .map_err(|e| Error::corrupt("NAT block", Some(addr), e.to_string()))
    }

    /// Every inode in use now: the nids whose NAT entry names themselves as their inode
    /// and holds a block (written, or `NEW_ADDR` for one not yet written), changes since
    /// the checkpoint included. One read of each NAT block.
    pub(crate) fn inode_nids(&self, dev: &dyn BlockDevice) -> Result<Vec<u32>> {
        let per_block = self.nat_per_block();
        let blocks = self.max_nid.div_ceil(per_block as u64) as u32;
        let nat = lock(&self.nat);
        let mut out = Vec::new();
        for index in 0..blocks {
            let (addr, block) = self.nat_block(dev, &nat, index)?;
            for k in 0..per_block {
                let nid = index * per_block + k;
                if nid == 0 || nid as u64 >= self.max_nid || self.reserved.contains(&nid) {
                    continue;
                }
                let e = match nat.dirty.get(&nid).or_else(|| nat.journal.get(&nid)) {
                    Some(e) => *e,
                    None => nat_block_entry(&block, k as usize)
                        .map_err(|e| Error::corrupt("NAT block", Some(addr), e.to_string()))?,
                };
                if e.ino == nid && e.block_addr != 0 {
                    out.push(nid);
                }
            }
        }
        Ok(out)
    }

    /// The NAT entry of `nid` as the last checkpoint recorded it (changes since left
    /// out): whether a node is checkpointed (the kernel's `IS_CHECKPOINTED`).
    pub fn checkpointed_entry(&self, dev: &dyn BlockDevice, nid: u32) -> Result<NatEntry> {
        if nid == 0 || nid as u64 >= self.max_nid || self.reserved.contains(&nid) {
            return Err(Error::corrupt("node id", None, format!("nid {nid} out of range")));
        }
        let nat = lock(&self.nat);
        if let Some(e) = nat.journal.get(&nid) {
            return Ok(*e);
        }
        let index = nid / self.nat_per_block();
        let (addr, block) = self.nat_block(dev, &nat, index)?;
        nat_block_entry(&block, (nid % self.nat_per_block()) as usize)
            .map_err(|e| Error::corrupt("NAT block", Some(addr), e.to_string()))
    }

    /// The block node `nid` was last written to, for naming it in an error: `None`
    /// when it has none (never written, freed, or out of range) or its NAT entry cannot
    /// be read.
    pub fn blkaddr_of(&self, dev: &dyn BlockDevice, nid: u32) -> Option<u64> {
        let addr = self.nat_entry(dev, nid).ok()?.block_addr as u64;
        (addr >= self.main.0 && addr < self.main.1).then_some(addr)
    }

    /// Where the NAT entry of `nid` comes from, for error messages: the checkpoint's
    /// journal (or memory, when dirty), or the live NAT block and its address.
    fn nat_entry_location(&self, nid: u32) -> (String, Option<u64>) {
        let nat = lock(&self.nat);
        if nat.dirty.contains_key(&nid) {
            return ("memory (not yet checkpointed)".to_string(), None);
        }
        if nat.journal.contains_key(&nid) {
            return ("the checkpoint's NAT journal".to_string(), None);
        }
        let index = nid / self.nat_per_block();
        (
            "NAT block".to_string(),
            Some(nat_block_addr(self.nat_blkaddr, &nat.bitmap, index)),
        )
    }

    /// The live copy of NAT block `index` and its address, through the cache. The caller
    /// holds the NAT table, so no checkpoint moves the block meanwhile.
    fn nat_block(&self, dev: &dyn BlockDevice, nat: &NatTable, index: u32) -> Result<(u64, NodeBlock)> {
        let addr = nat_block_addr(self.nat_blkaddr, &nat.bitmap, index);
        if let Some(b) = get_cached(&self.nat_cache, index) {
            return Ok((addr, b));
        }
        let b = dev.read_shared(addr)?;
        put_cached(&self.nat_cache, index, b.clone());
        Ok((addr, b))
    }

    /// Reads node `nid`, which must belong to inode `ino`: its dirty copy, else its
    /// cached clean copy, else the block its NAT entry names, which then joins the
    /// cache.
    ///
    /// Readers hold no operation lock, so between the NAT lookup and the device read a
    /// writer may change the node and a write-out move it (the block read is then an
    /// older version, or by then another block altogether). Such a block must never
    /// become the cached copy, or the next change would start from it and undo what
    /// happened meanwhile (a link count, a directory entry). So the block joins the
    /// cache only if, under the dirty map's lock (which every move of a node holds),
    /// the node is still clean and still at the address read; otherwise the read
    /// starts again from the dirty map.
    pub fn read(&self, dev: &dyn BlockDevice, nid: u32, ino: u32) -> Result<NodeBlock> {
        let mut attempt = 0;
        loop {
            if let Some(b) = self.dirty_block(nid) {
                return self.check_owner(b, nid, ino, || None);
            }
            if let Some(b) = get_cached(&self.node_cache, nid) {
                return self.check_owner(b, nid, ino, || self.blkaddr_of(dev, nid));
            }
            let e = self.nat_entry(dev, nid)?;
            let addr = self.checked_node_addr(nid, ino, e)?;
            let b = dev.read_shared(addr)?;
            attempt += 1;
            let dirty = crate::lockrank::lock_nodes(&self.dirty);
            let current = !dirty.contains(nid) && self.nat_entry(dev, nid)?.block_addr == e.block_addr;
            if !current && attempt < READ_ATTEMPTS_MAX {
                continue;
            }
            let f = NodeFooter::decode(&b).map_err(|x| Error::corrupt("node", Some(addr), x.to_string()))?;
            if f.nid != nid || f.ino != ino {
                return Err(Error::corrupt(
                    format!("node {nid}"),
                    Some(addr),
                    format!(
                        "footer says node {} of inode {}, expected node {nid} of inode {ino}",
                        f.nid, f.ino
                    ),
                ));
            }
            if current {
                put_cached(&self.node_cache, nid, b.clone());
            }
            return Ok(b);
        }
    }

    /// The block address NAT entry `e` gives node `nid` of inode `ino`, checked: inside
    /// the main area and owned by `ino`.
    fn checked_node_addr(&self, nid: u32, ino: u32, e: NatEntry) -> Result<u64> {
        let addr = e.block_addr as u64;
        if addr < self.main.0 || addr >= self.main.1 {
            let what = if e.block_addr == 0 {
                "not allocated".to_string()
            } else {
                "address outside the main area".to_string()
            };
            let (place, at) = self.nat_entry_location(nid);
            return Err(Error::corrupt(
                format!("NAT entry of node {nid} in {place}"),
                at,
                format!("{what} ({addr:#x})"),
            ));
        }
        if e.ino != ino {
            return Err(Error::corrupt(
                format!("NAT entry of node {nid}"),
                Some(addr),
                format!("belongs to inode {}, expected {ino}", e.ino),
            ));
        }
        Ok(addr)
    }

    /// Checks that node block `b` of `nid` belongs to inode `ino`; `addr` names the
    /// block in an error (asked only then).
    fn check_owner(&self, b: NodeBlock, nid: u32, ino: u32, addr: impl FnOnce() -> Option<u64>) -> Result<NodeBlock> {
        let f = match NodeFooter::decode(&b) {
            Ok(f) => f,
            Err(x) => return Err(Error::corrupt(format!("node {nid}"), addr(), x.to_string())),
        };
        if f.ino != ino {
            return Err(Error::corrupt(
                format!("node {nid}"),
                addr(),
                format!("belongs to inode {}, expected {ino}", f.ino),
            ));
        }
        Ok(b)
    }

    /// Records a new NAT entry for `nid`, to be written at the next checkpoint.
    pub fn set_nat_entry(&self, nid: u32, entry: NatEntry) -> Result<()> {
        if nid == 0 || nid as u64 >= self.max_nid {
            return Err(Error::Invalid(format!(
                "node id {nid} out of range (max {})",
                self.max_nid
            )));
        }
        lock(&self.nat).dirty.insert(nid, entry);
        lock(&self.node_cache).pop(nid);
        Ok(())
    }

    /// NAT entries changed since the last checkpoint.
    pub fn dirty_nat_count(&self) -> usize {
        lock(&self.nat).dirty.len()
    }

    /// The node counts the next checkpoint records.
    pub fn counts(&self) -> NodeCounts {
        *self.lock_counts()
    }

    /// The `counts` mutex (a `NodeManager` lock, rank 5 of [`crate::lockrank`]): never
    /// taken while the thread holds the `SegmentManager` (rank 6), checked in debug
    /// builds, so that the order holds for this lock too, not only for the dirty map.
    fn lock_counts(&self) -> MutexGuard<'_, NodeCounts> {
        crate::lockrank::assert_none_held(crate::lockrank::Rank::Segments, "taking NodeManager's counts");
        lock(&self.counts)
    }

    /// Takes the NAT bits of the opened checkpoint when they are there and belong to it
    /// (`NatBits` header = its version and checksum); later flushes keep them in step.
    /// `cp_block` is the raw checkpoint block, `bits_blocks` the pack's last blocks.
    pub(crate) fn adopt_nat_bits(
        &self,
        cp: &uf2fs_format::checkpoint::Checkpoint,
        cp_block: &[u8],
        bits_blocks: &[u8],
        segment_count_nat: u32,
        geo: uf2fs_format::Geometry,
    ) {
        use uf2fs_format::checkpoint::NatBits;
        let crc = uf2fs_format::le::u32_at(cp_block, cp.checksum_offset as usize);
        let bits = NatBits::decode(bits_blocks, segment_count_nat, geo)
            .ok()
            .filter(|b| b.cp_ver_crc == NatBits::header(cp.checkpoint_ver, crc));
        lock(&self.nat).bits = bits.map(|b| NatBitsMaps {
            full: b.full,
            empty: b.empty,
        });
    }

    /// Whether NAT bits are being kept (they end the pack on unmount).
    pub fn has_nat_bits(&self) -> bool {
        lock(&self.nat).bits.is_some()
    }

    /// The NAT bits as they stand, if kept.
    pub fn nat_bits(&self) -> Option<NatBitsMaps> {
        lock(&self.nat).bits.clone()
    }

    /// The NAT version bitmap as the next checkpoint records it.
    pub fn nat_bitmap(&self) -> Vec<u8> {
        lock(&self.nat).bitmap.clone()
    }

    /// Writes the dirty NAT entries out for a checkpoint: into the NAT journal while they
    /// fit there, else every journalled and dirty entry into its NAT block, written to
    /// the copy not in use with its version bit flipped (and its NAT bits updated).
    /// `empty_journal` forces the second way, as an unmount that ends the pack with NAT
    /// bits needs (the bits describe NAT blocks only).
    pub(crate) fn flush_nat(&self, dev: &dyn BlockDevice, empty_journal: bool) -> Result<NatFlush> {
        let mut nat = lock(&self.nat);
        let t = &mut *nat;
        if let Some(nid) = t.dirty.iter().find(|(_, e)| e.block_addr == NEW_ADDR).map(|(n, _)| *n) {
            return Err(Error::Invalid(format!(
                "node {nid} has no block yet: dirty nodes are written before the NAT"
            )));
        }
        let freed: Vec<u32> = t
            .dirty
            .iter()
            .filter(|(_, e)| e.block_addr == uf2fs_format::consts::NULL_ADDR)
            .map(|(n, _)| *n)
            .collect();
        let joining = t.dirty.keys().filter(|n| !t.journal.contains_key(n)).count();
        let mut blocks_written = 0;
        if !empty_journal && t.journal.len() + joining <= self.geometry.nat_journal_entries() {
            t.journal.append(&mut t.dirty);
        } else {
            let mut moving = std::mem::take(&mut t.journal);
            moving.append(&mut t.dirty);
            blocks_written = self.write_nat_blocks(dev, t, &moving)?;
        }
        let flush = NatFlush {
            journal: t.journal.iter().map(|(n, e)| (*n, *e)).collect(),
            blocks_written,
        };
        drop(nat);
        // Ids freed since the last checkpoint are free for good with this one.
        self.add_free_nids(&freed);
        Ok(flush)
    }

    /// Writes `entries` into their NAT blocks (other copy, bit flipped).
    fn write_nat_blocks(
        &self,
        dev: &dyn BlockDevice,
        t: &mut NatTable,
        entries: &BTreeMap<u32, NatEntry>,
    ) -> Result<u32> {
        let per = self.nat_per_block();
        let blocks: BTreeSet<u32> = entries.keys().map(|n| n / per).collect();
        for &index in &blocks {
            let (_, live) = self.nat_block(dev, t, index)?;
            let mut block = live.to_vec();
            for (nid, e) in entries.range(index * per..(index + 1) * per) {
                let at = (nid % per) as usize * NAT_ENTRY_SIZE;
                e.encode(&mut block[at..at + NAT_ENTRY_SIZE]);
            }
            let was = uf2fs_format::le::test_bit_msb(&t.bitmap, index as usize);
            uf2fs_format::le::set_bit_msb(&mut t.bitmap, index as usize, !was);
            let next = nat_block_addr(self.nat_blkaddr, &t.bitmap, index);
            debug_assert_eq!(block.len(), self.geometry.block_size());
            dev.write_blocks(next, &block)?;
            if let Some(bits) = &mut t.bits {
                bits.update(index, &block);
            }
            put_cached(&self.nat_cache, index, Arc::new(block));
        }
        Ok(blocks.len() as u32)
    }

    /// Block address range of the main area.
    pub fn main_area(&self) -> (u64, u64) {
        self.main
    }

    /// Largest node id plus one.
    pub fn max_nid(&self) -> u64 {
        self.max_nid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::BLOCK;
    use uf2fs_format::consts::NAT_ENTRY_PER_BLOCK;

    #[test]
    fn nat_bits_follow_block_contents() {
        let mut bits = NatBitsMaps {
            full: vec![0; 2],
            empty: vec![0xff; 2],
        };
        let mut block = vec![0u8; BLOCK];
        // Block 0 with nothing but nid 0, which always counts as used: neither.
        bits.update(0, &block);
        assert_eq!((bits.full[0] & 1, bits.empty[0] & 1), (0, 0));
        // Block 9 empty, then one entry, then every entry.
        bits.update(9, &block);
        assert_eq!((bits.full[1] >> 1 & 1, bits.empty[1] >> 1 & 1), (0, 1));
        block[5 * NAT_ENTRY_SIZE + 5] = 1;
        bits.update(9, &block);
        assert_eq!((bits.full[1] >> 1 & 1, bits.empty[1] >> 1 & 1), (0, 0));
        for j in 0..NAT_ENTRY_PER_BLOCK {
            block[j * NAT_ENTRY_SIZE + 5] = 1;
        }
        bits.update(9, &block);
        assert_eq!((bits.full[1] >> 1 & 1, bits.empty[1] >> 1 & 1), (1, 0));
        assert_eq!(bits.empty[0], 0xfe, "other blocks untouched");
    }
}
