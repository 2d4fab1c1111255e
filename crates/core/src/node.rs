//! Node access: NAT lookups (journal first, then the live NAT block copy) and a bounded
//! cache of node blocks, each checked against its footer before use.

use crate::device::{read_block, BlockDevice};
use crate::{Error, Result};
use lru::LruCache;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use uf2fs_format::consts::NAT_ENTRY_PER_BLOCK;
use uf2fs_format::nat::{nat_block_addr, nat_block_entry, NatEntry};
use uf2fs_format::node::NodeFooter;
use uf2fs_format::superblock::Superblock;

/// Node blocks kept in memory (16 MiB).
const NODE_CACHE_BLOCKS: usize = 4096;
/// NAT blocks kept in memory (4 MiB).
const NAT_CACHE_BLOCKS: usize = 1024;

/// A node block shared between readers.
pub type NodeBlock = Arc<Vec<u8>>;

/// Looks nodes up by id.
pub struct NodeManager {
    nat_blkaddr: u32,
    nat_bitmap: Vec<u8>,
    nat_journal: HashMap<u32, NatEntry>,
    max_nid: u64,
    main: (u64, u64),
    reserved: [u32; 2],
    nat_cache: Mutex<LruCache<u32, NodeBlock>>,
    node_cache: Mutex<LruCache<u32, NodeBlock>>,
}

fn cache(n: usize) -> Mutex<LruCache<u32, NodeBlock>> {
    Mutex::new(LruCache::new(NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN)))
}

fn get_cached(c: &Mutex<LruCache<u32, NodeBlock>>, k: u32) -> Option<NodeBlock> {
    c.lock().unwrap_or_else(|p| p.into_inner()).get(&k).cloned()
}

fn put_cached(c: &Mutex<LruCache<u32, NodeBlock>>, k: u32, v: NodeBlock) {
    c.lock().unwrap_or_else(|p| p.into_inner()).put(k, v);
}

impl NodeManager {
    /// Builds the manager from the superblock and the checkpoint's NAT state.
    pub fn new(sb: &Superblock, nat_bitmap: Vec<u8>, journal: &[(u32, NatEntry)]) -> NodeManager {
        NodeManager {
            nat_blkaddr: sb.nat_blkaddr,
            nat_bitmap,
            nat_journal: journal.iter().copied().collect(),
            max_nid: sb.max_nid(),
            main: (sb.main_blkaddr as u64, sb.main_end_blkaddr()),
            reserved: [sb.node_ino, sb.meta_ino],
            nat_cache: cache(NAT_CACHE_BLOCKS),
            node_cache: cache(NODE_CACHE_BLOCKS),
        }
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
        if let Some(e) = self.nat_journal.get(&nid) {
            return Ok(*e);
        }
        let index = nid / NAT_ENTRY_PER_BLOCK as u32;
        let addr = nat_block_addr(self.nat_blkaddr, &self.nat_bitmap, index);
        let block = match get_cached(&self.nat_cache, index) {
            Some(b) => b,
            None => {
                let b = Arc::new(read_block(dev, addr)?);
                put_cached(&self.nat_cache, index, b.clone());
                b
            }
        };
        nat_block_entry(&block, nid as usize % NAT_ENTRY_PER_BLOCK)
            .map_err(|e| Error::corrupt("NAT block", Some(addr), e.to_string()))
    }

    /// Reads node `nid`, which must belong to inode `ino`.
    pub fn read(&self, dev: &dyn BlockDevice, nid: u32, ino: u32) -> Result<NodeBlock> {
        if let Some(b) = get_cached(&self.node_cache, nid) {
            return self.check_owner(b, nid, ino, None);
        }
        let e = self.nat_entry(dev, nid)?;
        let addr = e.block_addr as u64;
        if addr < self.main.0 || addr >= self.main.1 {
            let what = if e.block_addr == 0 {
                "not allocated".to_string()
            } else {
                "address outside the main area".to_string()
            };
            return Err(Error::corrupt(format!("NAT entry of node {nid}"), Some(addr), what));
        }
        if e.ino != ino {
            return Err(Error::corrupt(
                format!("NAT entry of node {nid}"),
                Some(addr),
                format!("belongs to inode {}, expected {ino}", e.ino),
            ));
        }
        let b = Arc::new(read_block(dev, addr)?);
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
        put_cached(&self.node_cache, nid, b.clone());
        Ok(b)
    }

    fn check_owner(&self, b: NodeBlock, nid: u32, ino: u32, addr: Option<u64>) -> Result<NodeBlock> {
        let f = NodeFooter::decode(&b).map_err(|x| Error::corrupt("node", addr, x.to_string()))?;
        if f.ino != ino {
            return Err(Error::corrupt(
                format!("node {nid}"),
                addr,
                format!("belongs to inode {}, expected {ino}", f.ino),
            ));
        }
        Ok(b)
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
