//! Dirty data blocks of a read-write file system, held in memory until a checkpoint
//! writes them out (before the node blocks that point at them).
//!
//! Step 2 of the write path keeps directory blocks (dentry blocks) and the data block of
//! a long symlink here; step 3 grows this into the page cache with writeback contexts.
//! Every dirty block has a reserved address in its node (`NEW_ADDR` for a block never
//! written, or its current address for a rewrite), so a reader that finds no dirty
//! block reads the device.
//!
//! Bound: [`DIRTY_PAGES_MAX`]. An operation that finds more dirty blocks than that
//! first runs a checkpoint, and no operation dirties more than a handful, so the map
//! stays within a few blocks per concurrent operation of the bound.

use crate::segment::{LogType, NR_LOGS};
use crate::Ino;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Dirty blocks that make the next operation run a checkpoint first (16 MiB).
pub const DIRTY_PAGES_MAX: usize = 4096;

/// One dirty block: its contents and the log it goes to.
#[derive(Debug, Clone)]
pub struct DirtyPage {
    /// The 4096 bytes to write.
    pub data: Arc<Vec<u8>>,
    /// The data log that takes it (hot for directories, warm or cold for files).
    pub log: LogType,
}

/// Dirty data blocks by (inode, file block index).
#[derive(Default)]
pub struct PageCache {
    pages: Mutex<BTreeMap<(Ino, u64), DirtyPage>>,
}

impl PageCache {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<(Ino, u64), DirtyPage>> {
        self.pages.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The dirty block `index` of inode `ino`, if any.
    pub fn get(&self, ino: Ino, index: u64) -> Option<Arc<Vec<u8>>> {
        self.lock().get(&(ino, index)).map(|p| p.data.clone())
    }

    /// Whether inode `ino` has any dirty block.
    pub fn has_inode(&self, ino: Ino) -> bool {
        self.lock().range((ino, 0)..=(ino, u64::MAX)).next().is_some()
    }

    /// Stores block `index` of `ino` as dirty (replacing an older dirty copy).
    pub fn put(&self, ino: Ino, index: u64, data: Vec<u8>, log: LogType) {
        debug_assert_eq!(data.len(), crate::device::BLOCK);
        self.lock().insert(
            (ino, index),
            DirtyPage {
                data: Arc::new(data),
                log,
            },
        );
    }

    /// Drops the dirty block `index` of `ino`; true if there was one.
    pub fn remove(&self, ino: Ino, index: u64) -> bool {
        self.lock().remove(&(ino, index)).is_some()
    }

    /// Drops every dirty block of `ino` and returns their indexes.
    pub fn remove_inode(&self, ino: Ino) -> Vec<u64> {
        let mut pages = self.lock();
        let keys: Vec<(Ino, u64)> = pages.range((ino, 0)..=(ino, u64::MAX)).map(|(k, _)| *k).collect();
        for k in &keys {
            pages.remove(k);
        }
        keys.into_iter().map(|(_, i)| i).collect()
    }

    /// Dirty blocks in all.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is dirty.
    #[allow(dead_code)]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Dirty blocks by the log they go to.
    pub fn count_by_log(&self) -> [u64; NR_LOGS] {
        let mut out = [0u64; NR_LOGS];
        for p in self.lock().values() {
            out[p.log as usize] += 1;
        }
        out
    }

    /// Every dirty block, in (inode, index) order, left in place (the writer removes
    /// each once it is on the device and its node points at it).
    pub fn snapshot(&self) -> Vec<((Ino, u64), DirtyPage)> {
        self.lock().iter().map(|(k, v)| (*k, v.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_blocks_by_inode_and_index() {
        let c = PageCache::default();
        c.put(5, 1, vec![1; 4096], LogType::HotData);
        c.put(5, 0, vec![2; 4096], LogType::HotData);
        c.put(6, 0, vec![3; 4096], LogType::WarmData);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(5, 1).unwrap()[0], 1);
        assert_eq!(c.count_by_log()[LogType::HotData as usize], 2);
        assert_eq!(c.snapshot()[0].0, (5, 0));
        assert_eq!(c.remove_inode(5), vec![0, 1]);
        assert!(!c.has_inode(5) && c.has_inode(6));
        assert!(c.remove(6, 0) && !c.remove(6, 0) && c.is_empty());
    }
}
