//! uf2fs's own page cache: dirty data blocks of a read-write file system, held in
//! memory until a writeback context writes them out of place (before the node blocks
//! that point at them), at the latest at the next checkpoint.
//!
//! Directory blocks (dentry blocks), long symlink targets and regular file data all
//! wait here. Every dirty block has a reserved address in its node (`NEW_ADDR` for a
//! block never written, or its current address for a rewrite), so a reader that finds
//! no dirty block reads the device. Readers look here first ([`PageCache::get`]).
//!
//! Pages are kept per inode; each inode with dirty pages belongs to one writeback
//! context, chosen by the [`Writeback`] policy when its first page gets dirty, and
//! contexts list their inodes oldest-dirtied first.
//!
//! Bounds (in the volume's blocks):
//! - [`DIRTY_PAGES_PER_INODE_MAX`]: a file write that leaves more dirty pages than this
//!   in its inode writes that inode's pages back before it returns (with flusher
//!   threads, wakes them instead);
//! - [`DIRTY_PAGES_BACKGROUND`]: without flusher threads, a file write that leaves more
//!   dirty pages than this in all writes every dirty inode's pages back after it, a
//!   few at a time with a look at the free sections between (Linux's flusher, which
//!   runs foreground GC as it writes);
//! - [`DIRTY_PAGES_MAX`]: an operation that finds more dirty pages than this in all
//!   first has the writeback contexts write them back (file data) or runs a checkpoint
//!   (namespace operations). No operation dirties more than
//!   [`crate::file::WRITE_CHUNK_BLOCKS`] pages, so the cache stays within one chunk per
//!   concurrent operation of the bound.

use crate::segment::{LogType, NR_LOGS};
use crate::writeback::context::Writeback;
use crate::Ino;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

/// Dirty blocks in all past which they are written back (16 MiB).
pub const DIRTY_PAGES_MAX: usize = 4096;
/// Dirty blocks of one inode past which a file write writes them back (4 MiB).
pub const DIRTY_PAGES_PER_INODE_MAX: usize = 1024;
/// Dirty blocks in all past which a file write, when no flusher threads run, writes
/// every dirty inode's pages back (2 MiB): Linux's flusher starts past
/// `vm.dirty_background_bytes`, which the kernel comparisons set to 2 MiB
/// (`scripts/kernel/waf-compare.sh --dirty-bytes 4M`, the background limit half).
pub const DIRTY_PAGES_BACKGROUND: usize = DIRTY_PAGES_PER_INODE_MAX / 2;
/// Pages the writer's background writeback writes between two looks at the free
/// sections ([`crate::Fs`]'s `balance_fs`): F2FS balances after every data page it
/// writes back (`f2fs_write_single_data_page`); a look every 16 pages gives the lab the
/// same figures within 1.2% at a third of the cost (docs/waf-lab.md).
pub const WRITEBACK_BALANCE_PAGES: usize = 16;

/// One dirty block: its contents and the log it goes to.
#[derive(Debug, Clone)]
pub struct DirtyPage {
    /// The 4096 bytes to write.
    pub data: Arc<Vec<u8>>,
    /// The data log that takes it (hot for directories, warm or cold for files).
    pub log: LogType,
}

/// The dirty pages of one inode.
#[derive(Debug, Default)]
struct InodePages {
    pages: BTreeMap<u64, DirtyPage>,
    /// Writeback context that writes them.
    context: usize,
    /// When its first page (since it was last clean) got dirty: a sequence number.
    dirtied_seq: u64,
}

#[derive(Debug)]
struct Inner {
    inodes: BTreeMap<Ino, InodePages>,
    total: usize,
    per_log: [u64; NR_LOGS],
    /// Dirty pages of each writeback context's inodes.
    per_context: Vec<u64>,
    /// The context each inode was given when it first got dirty, kept when it is
    /// clean again so that a file keeps its context (and its context's log) for its
    /// life; forgotten when the inode is freed, all at once past [`AFFINITY_MAX`].
    affinity: std::collections::HashMap<Ino, usize>,
    /// Where each inode's cyclic writeback stands ([`PageCache::cyclic_window`]).
    /// Forgotten as `affinity` is.
    cyclic: std::collections::HashMap<Ino, CyclicCursor>,
    next_seq: u64,
}

/// Inodes whose writeback context is remembered at most (about 32 MiB).
const AFFINITY_MAX: usize = 1 << 20;

/// Dirty pages one lookup of a cyclic writeback gathers before it writes any of them:
/// F2FS's `F2FS_ONSTACK_PAGES`, the batch `f2fs_write_cache_pages` takes from the page
/// cache's dirty tag (Linux 6.1 and 6.12). Pages dirtied behind the lookup wait for
/// the next lap; pages of the batch written meanwhile (by GC's moves) are skipped.
pub const WRITEBACK_LOOKUP_PAGES: usize = 16;

/// Where an inode's cyclic writeback stands: Linux's `mapping->writeback_index` and
/// the batch F2FS's writeback looked up from it and has not written yet.
#[derive(Debug, Default)]
struct CyclicCursor {
    /// Where the next lookup starts.
    next: u64,
    /// Indexes looked up and not given yet, in order.
    batch: std::collections::VecDeque<u64>,
}

impl Default for Inner {
    fn default() -> Inner {
        Inner {
            inodes: BTreeMap::new(),
            total: 0,
            per_log: [0; NR_LOGS],
            per_context: vec![0],
            affinity: Default::default(),
            cyclic: Default::default(),
            next_seq: 0,
        }
    }
}

impl Inner {
    fn removed(&mut self, page: &DirtyPage, context: usize) {
        self.total -= 1;
        self.per_log[page.log as usize] -= 1;
        self.per_context[context] -= 1;
    }

    /// Drops the entry of `ino` when it has no pages left.
    fn tidy(&mut self, ino: Ino) {
        if self.inodes.get(&ino).is_some_and(|p| p.pages.is_empty()) {
            self.inodes.remove(&ino);
        }
    }
}

/// Dirty data blocks by inode and file block index, with the writeback contexts.
#[derive(Default)]
pub struct PageCache {
    inner: Mutex<Inner>,
    writeback: RwLock<Arc<Writeback>>,
}

impl PageCache {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writeback contexts and the policy that assigns inodes to them.
    pub fn writeback(&self) -> Arc<Writeback> {
        self.writeback.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the writeback contexts and their policy; refused (false) while any
    /// page is dirty, since every dirty inode must keep its context.
    pub fn set_writeback(&self, wb: Writeback) -> bool {
        let mut inner = self.lock();
        if inner.total != 0 {
            return false;
        }
        inner.per_context = vec![0; wb.contexts()];
        *self.writeback.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(wb);
        true
    }

    /// Dirty pages of each writeback context's inodes.
    pub fn context_loads(&self) -> Vec<u64> {
        self.lock().per_context.clone()
    }

    /// The writeback context of inode `ino` while it has dirty pages.
    pub fn context_of_inode(&self, ino: Ino) -> Option<usize> {
        self.lock().inodes.get(&ino).map(|p| p.context)
    }

    /// The dirty block `index` of inode `ino`, if any.
    pub fn get(&self, ino: Ino, index: u64) -> Option<Arc<Vec<u8>>> {
        self.lock()
            .inodes
            .get(&ino)
            .and_then(|p| p.pages.get(&index))
            .map(|p| p.data.clone())
    }

    /// Whether inode `ino` has any dirty block.
    pub fn has_inode(&self, ino: Ino) -> bool {
        self.lock().inodes.contains_key(&ino)
    }

    /// Dirty blocks of inode `ino`.
    pub fn inode_len(&self, ino: Ino) -> usize {
        self.lock().inodes.get(&ino).map_or(0, |p| p.pages.len())
    }

    /// Stores block `index` of `ino` as dirty (replacing an older dirty copy).
    pub fn put(&self, ino: Ino, index: u64, data: Vec<u8>, log: LogType) {
        debug_assert!(data.len().is_power_of_two() && data.len() >= crate::device::BLOCK);
        let wb = self.writeback();
        let mut inner = self.lock();
        let seq = inner.next_seq;
        let context = match inner.inodes.get(&ino) {
            Some(p) => p.context,
            None => match inner.affinity.get(&ino) {
                Some(&c) if c < inner.per_context.len() => c,
                _ => {
                    let c = wb.context_of(ino, &inner.per_context);
                    if inner.affinity.len() >= AFFINITY_MAX {
                        inner.affinity.clear();
                    }
                    if inner.per_context.len() > 1 {
                        inner.affinity.insert(ino, c);
                    }
                    c
                }
            },
        };
        let entry = inner.inodes.entry(ino).or_insert_with(|| InodePages {
            pages: BTreeMap::new(),
            context,
            dirtied_seq: seq,
        });
        let page = DirtyPage {
            data: Arc::new(data),
            log,
        };
        let old = entry.pages.insert(index, page);
        inner.next_seq += 1;
        if let Some(old) = old {
            inner.removed(&old, context);
        }
        inner.total += 1;
        inner.per_log[log as usize] += 1;
        inner.per_context[context] += 1;
    }

    /// Drops the dirty block `index` of `ino`; true if there was one.
    pub fn remove(&self, ino: Ino, index: u64) -> bool {
        let mut inner = self.lock();
        let Some((old, context)) = inner
            .inodes
            .get_mut(&ino)
            .and_then(|p| Some((p.pages.remove(&index)?, p.context)))
        else {
            return false;
        };
        inner.removed(&old, context);
        inner.tidy(ino);
        true
    }

    /// Drops the dirty block `index` of `ino` if it still holds `data` (the copy a
    /// writer just wrote); a newer copy stays dirty. True if it was dropped.
    pub fn remove_written(&self, ino: Ino, index: u64, data: &Arc<Vec<u8>>) -> bool {
        let mut inner = self.lock();
        let same = inner
            .inodes
            .get(&ino)
            .and_then(|p| p.pages.get(&index))
            .is_some_and(|p| Arc::ptr_eq(&p.data, data));
        if !same {
            return false;
        }
        if let Some((old, context)) = inner
            .inodes
            .get_mut(&ino)
            .and_then(|p| Some((p.pages.remove(&index)?, p.context)))
        {
            inner.removed(&old, context);
        }
        inner.tidy(ino);
        true
    }

    /// Drops the dirty blocks of `ino` with indexes in `range`; returns their indexes.
    pub fn remove_range(&self, ino: Ino, range: Range<u64>) -> Vec<u64> {
        let mut inner = self.lock();
        let Some(p) = inner.inodes.get_mut(&ino) else {
            return Vec::new();
        };
        let keys: Vec<u64> = p.pages.range(range).map(|(k, _)| *k).collect();
        let context = p.context;
        let mut gone = Vec::with_capacity(keys.len());
        for k in &keys {
            if let Some(old) = p.pages.remove(k) {
                gone.push(old);
            }
        }
        for old in &gone {
            inner.removed(old, context);
        }
        inner.tidy(ino);
        keys
    }

    /// Drops every dirty block of `ino` and returns their indexes (the inode is
    /// being freed: its writeback context is forgotten too).
    pub fn remove_inode(&self, ino: Ino) -> Vec<u64> {
        let gone = self.remove_range(ino, 0..u64::MAX);
        let mut inner = self.lock();
        inner.affinity.remove(&ino);
        inner.cyclic.remove(&ino);
        gone
    }

    /// Dirty blocks in all.
    pub fn len(&self) -> usize {
        self.lock().total
    }

    /// Whether nothing is dirty.
    pub fn is_empty(&self) -> bool {
        self.lock().total == 0
    }

    /// Dirty blocks by the log they go to.
    pub fn count_by_log(&self) -> [u64; NR_LOGS] {
        self.lock().per_log
    }

    /// The dirty blocks of `ino` in index order, left in place (the writer removes
    /// each with [`PageCache::remove_written`] once it is on the device and its node
    /// points at it).
    pub fn inode_snapshot(&self, ino: Ino) -> Vec<(u64, DirtyPage)> {
        self.lock()
            .inodes
            .get(&ino)
            .map(|p| p.pages.iter().map(|(k, v)| (*k, v.clone())).collect())
            .unwrap_or_default()
    }

    /// At most `max` dirty blocks of `ino` for a cyclic writeback (Linux's
    /// `range_cyclic`), in index order from where the last one stopped, then from the
    /// start, one lap at most: looked up [`WRITEBACK_LOOKUP_PAGES`] at a time as F2FS's
    /// writeback does, so a page dirtied behind a lookup waits for the next lap, and a
    /// page looked up but no longer dirty when its turn comes is skipped. Left in
    /// place, as [`PageCache::inode_snapshot`]'s.
    pub fn cyclic_window(&self, ino: Ino, max: usize) -> Vec<(u64, DirtyPage)> {
        let mut inner = self.lock();
        let Inner { inodes, cyclic, .. } = &mut *inner;
        let Some(p) = inodes.get(&ino) else {
            return Vec::new();
        };
        if cyclic.len() >= AFFINITY_MAX && !cyclic.contains_key(&ino) {
            cyclic.clear();
        }
        let cur = cyclic.entry(ino).or_default();
        let mut window = Vec::new();
        let mut given = std::collections::BTreeSet::new();
        while window.len() < max {
            if cur.batch.is_empty() {
                let lookup = |r: &mut dyn Iterator<Item = (&u64, &DirtyPage)>| {
                    r.take(WRITEBACK_LOOKUP_PAGES)
                        .map(|(k, _)| *k)
                        .collect::<std::collections::VecDeque<u64>>()
                };
                let mut batch = lookup(&mut p.pages.range(cur.next..));
                if batch.is_empty() {
                    batch = lookup(&mut p.pages.range(..cur.next));
                }
                let Some(&last) = batch.back() else {
                    break;
                };
                cur.next = last.saturating_add(1);
                cur.batch = batch;
            }
            let Some(index) = cur.batch.pop_front() else {
                break;
            };
            if !given.insert(index) {
                // A lap is done: the page waits for the next call.
                cur.batch.push_front(index);
                break;
            }
            if let Some(page) = p.pages.get(&index) {
                window.push((index, page.clone()));
            }
        }
        window
    }

    /// Inodes with dirty pages that writeback context `context` writes, the one
    /// dirtied first first.
    pub fn dirty_inodes(&self, context: usize) -> Vec<Ino> {
        let inner = self.lock();
        let mut v: Vec<(u64, Ino)> = inner
            .inodes
            .iter()
            .filter(|(_, p)| p.context == context)
            .map(|(ino, p)| (p.dirtied_seq, *ino))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, ino)| ino).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn indexes(w: &[(u64, DirtyPage)]) -> Vec<u64> {
        w.iter().map(|(i, _)| *i).collect()
    }

    #[test]
    fn cyclic_windows_go_on_from_where_the_last_stopped_and_wrap() {
        let c = PageCache::default();
        for i in [2, 5, 9, 12] {
            c.put(4, i, vec![0; 4096], LogType::WarmData);
        }
        assert_eq!(indexes(&c.cyclic_window(4, 2)), vec![2, 5]);
        assert_eq!(
            indexes(&c.cyclic_window(4, 1)),
            vec![9],
            "left in place, the next starts after 5"
        );
        // Pages dirtied behind the cursor wait for the wrap.
        c.put(4, 0, vec![0; 4096], LogType::WarmData);
        assert_eq!(indexes(&c.cyclic_window(4, 3)), vec![12, 0, 2]);
        assert_eq!(
            indexes(&c.cyclic_window(4, 10)),
            vec![5, 9, 12, 0, 2],
            "one lap at most"
        );
        assert_eq!(c.inode_len(4), 5);
        // A freed inode starts again from its first page.
        c.remove_inode(4);
        c.put(4, 7, vec![0; 4096], LogType::WarmData);
        c.put(4, 1, vec![0; 4096], LogType::WarmData);
        assert_eq!(indexes(&c.cyclic_window(4, 1)), vec![1]);
        assert!(c.cyclic_window(8, 4).is_empty(), "an inode with nothing dirty");
    }

    #[test]
    fn cyclic_windows_write_what_a_lookup_found_and_skip_what_was_written_meanwhile() {
        let c = PageCache::default();
        let n = WRITEBACK_LOOKUP_PAGES as u64;
        for i in 0..2 * n {
            c.put(4, 10 * i, vec![0; 4096], LogType::WarmData);
        }
        // The first lookup takes pages 0, 10, ..., 10 * (n - 1).
        assert_eq!(indexes(&c.cyclic_window(4, 1)), vec![0]);
        // Dirtied behind the lookup's last page but after the first: not in it.
        c.put(4, 5, vec![0; 4096], LogType::WarmData);
        // Written meanwhile (GC moved it): skipped.
        c.remove_range(4, 10..11);
        assert_eq!(indexes(&c.cyclic_window(4, 2)), vec![20, 30]);
        let rest = c.cyclic_window(4, 2 * n as usize);
        // On to the end, then from the start: page 5 in its turn, and the lap ends
        // where this window began.
        let lap: Vec<u64> = (4..2 * n).map(|i| 10 * i).chain([0, 5, 20, 30]).collect();
        assert_eq!(indexes(&rest), lap);
        assert_eq!(indexes(&c.cyclic_window(4, 1)), vec![40], "the next window goes on");
    }

    #[test]
    fn keeps_blocks_by_inode_and_index() {
        let c = PageCache::default();
        c.put(5, 1, vec![1; 4096], LogType::HotData);
        c.put(5, 0, vec![2; 4096], LogType::HotData);
        c.put(6, 0, vec![3; 4096], LogType::WarmData);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(5, 1).unwrap()[0], 1);
        assert_eq!(c.count_by_log()[LogType::HotData as usize], 2);
        assert_eq!(c.inode_snapshot(5)[0].0, 0);
        assert_eq!(c.dirty_inodes(0), vec![5, 6]);
        assert_eq!(c.remove_inode(5), vec![0, 1]);
        assert!(!c.has_inode(5) && c.has_inode(6));
        assert!(c.remove(6, 0) && !c.remove(6, 0) && c.is_empty());
        assert_eq!(c.count_by_log(), [0; NR_LOGS]);
    }

    #[test]
    fn counts_follow_replacements_ranges_and_written_copies() {
        let c = PageCache::default();
        for i in 0..10 {
            c.put(7, i, vec![i as u8; 4096], LogType::WarmData);
        }
        c.put(3, 0, vec![0; 4096], LogType::ColdData);
        c.put(7, 4, vec![99; 4096], LogType::WarmData);
        assert_eq!((c.len(), c.inode_len(7)), (11, 10));
        assert_eq!(c.dirty_inodes(0), vec![7, 3], "oldest dirtied first");
        assert_eq!(c.remove_range(7, 2..5), vec![2, 3, 4]);
        assert_eq!(c.count_by_log()[LogType::WarmData as usize], 7);
        let snap = c.inode_snapshot(7);
        let (index, page) = &snap[0];
        c.put(7, 1, vec![5; 4096], LogType::WarmData);
        assert!(c.remove_written(7, *index, &page.data), "block 0 unchanged since");
        let (index, page) = &snap[1];
        assert!(!c.remove_written(7, *index, &page.data), "block 1 was rewritten");
        assert_eq!(c.get(7, 1).unwrap()[0], 5);
        assert_eq!(c.len(), 7);
    }
}
