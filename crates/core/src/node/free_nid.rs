//! Free node ids: a bounded list filled by scanning NAT blocks (the checkpoint's NAT
//! journal on top), starting where the last scan stopped (the checkpoint's
//! `next_free_nid` at mount), as F2FS builds its free nid list.
//!
//! A node id is free when its NAT entry points nowhere and has not changed since the
//! last checkpoint: an id freed since then becomes free only once that is durable.
//! Ids handed out and not yet made nodes are *preallocated*: no scan hands them out
//! again, and a failed operation gives them back.

use super::{lock, NodeManager};
use crate::device::BlockDevice;
use crate::{Error, Result};
use std::collections::BTreeSet;
use uf2fs_format::consts::NULL_ADDR;
use uf2fs_format::nat::nat_block_entry;

/// Free ids kept ready at most.
const FREE_NIDS_MAX: usize = 1024;
/// NAT blocks a refill scans at least before it settles for what it found (the
/// kernel's `FREE_NID_PAGES`).
const SCAN_BLOCKS_MIN: u32 = 8;

/// The free-nid list and the scan position.
#[derive(Debug)]
pub(super) struct FreeNids {
    list: BTreeSet<u32>,
    prealloc: BTreeSet<u32>,
    /// First id the next scan looks at.
    next_scan: u32,
}

impl FreeNids {
    pub(super) fn new(next_free_nid: u32, max_nid: u64) -> FreeNids {
        FreeNids {
            list: BTreeSet::new(),
            prealloc: BTreeSet::new(),
            next_scan: if (next_free_nid as u64) < max_nid {
                next_free_nid
            } else {
                0
            },
        }
    }

    /// `nid` became a node: no longer preallocated (nor listed free, for an id
    /// recovery gives back to the inode an fsync wrote).
    pub(super) fn taken(&mut self, nid: u32) {
        self.prealloc.remove(&nid);
        self.list.remove(&nid);
    }
}

impl NodeManager {
    /// Hands out a free node id (preallocated until [`NodeManager::new_node`] or
    /// [`NodeManager::release_nid`]); [`Error::NoSpace`] when the NAT has none left.
    pub(crate) fn alloc_nid(&self, dev: &dyn BlockDevice) -> Result<u32> {
        let mut f = lock(&self.free_nids);
        if f.list.is_empty() {
            self.refill_free_nids(dev, &mut f)?;
        }
        let nid = f
            .list
            .pop_first()
            .ok_or_else(|| Error::NoSpace("no free node ids left in the NAT".into()))?;
        f.prealloc.insert(nid);
        Ok(nid)
    }

    /// Adds ids whose nodes were freed to the list (while it has room), as the
    /// checkpoint that records them free is written.
    pub(crate) fn add_free_nids(&self, nids: &[u32]) {
        let mut f = lock(&self.free_nids);
        for &nid in nids {
            if f.list.len() >= FREE_NIDS_MAX {
                break;
            }
            if !f.prealloc.contains(&nid) && nid as u64 >= 3 && !self.reserved.contains(&nid) {
                f.list.insert(nid);
            }
        }
    }

    /// Gives back an id from [`NodeManager::alloc_nid`] that did not become a node.
    pub(crate) fn release_nid(&self, nid: u32) {
        let mut f = lock(&self.free_nids);
        if f.prealloc.remove(&nid) && f.list.len() < FREE_NIDS_MAX {
            f.list.insert(nid);
        }
    }

    /// Scans NAT blocks from the scan position (wrapping around) until the list is
    /// full, or it has something and [`SCAN_BLOCKS_MIN`] blocks were read, or every
    /// block was read once.
    fn refill_free_nids(&self, dev: &dyn BlockDevice, f: &mut FreeNids) -> Result<()> {
        let per = self.nat_per_block();
        let blocks = self.max_nid.div_ceil(per as u64) as u32;
        let mut index = f.next_scan / per;
        let mut scanned = 0;
        while scanned < blocks && f.list.len() < FREE_NIDS_MAX {
            if scanned >= SCAN_BLOCKS_MIN && !f.list.is_empty() {
                break;
            }
            self.scan_nat_block(dev, index, f)?;
            index = (index + 1) % blocks.max(1);
            scanned += 1;
        }
        f.next_scan = index * per;
        self.lock_counts().next_free_nid = f.next_scan;
        Ok(())
    }

    /// Adds the free ids of NAT block `index` to the list.
    fn scan_nat_block(&self, dev: &dyn BlockDevice, index: u32, f: &mut FreeNids) -> Result<()> {
        let per = self.nat_per_block();
        let nat = lock(&self.nat);
        let (addr, block) = self.nat_block(dev, &nat, index)?;
        for j in 0..per {
            let nid = index * per + j;
            if nid == 0 || nid as u64 >= self.max_nid || self.reserved.contains(&nid) {
                continue;
            }
            if nat.dirty.contains_key(&nid) || f.prealloc.contains(&nid) {
                continue;
            }
            let block_addr = match nat.journal.get(&nid) {
                Some(e) => e.block_addr,
                None => {
                    nat_block_entry(&block, j as usize)
                        .map_err(|e| Error::corrupt("NAT block", Some(addr), e.to_string()))?
                        .block_addr
                }
            };
            if block_addr == NULL_ADDR {
                f.list.insert(nid);
                if f.list.len() >= FREE_NIDS_MAX {
                    break;
                }
            }
        }
        Ok(())
    }
}
