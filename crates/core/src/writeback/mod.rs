//! Writeback: contexts that write dirty pages of the page cache out of place, and
//! the policy that chooses the context of each inode.
//!
//! One context or several ([`Fs::set_writeback`]): each run by a flusher thread of its
//! own when the mount starts them ([`flusher`]), else synchronously by the operation
//! that finds too many dirty pages; `fsync` and the checkpoint write in the caller's
//! thread. Every inode with dirty pages belongs to exactly one context
//! ([`WritebackPolicy::context_of`], fixed while it stays dirty), a context writes an
//! inode only while holding that inode's lock and `cp_lock` shared, and each context
//! keeps its own counters. Two contexts therefore never write the same inode, and a
//! checkpoint (holding `cp_lock` exclusively) never runs beside one.
//!
//! Writing one inode (`write_inode_pages`): its dirty pages in index order, grouped
//! by the node that holds their addresses; per group, each page takes the next block
//! of its log (summary: that node's id, the slot, its NAT version), the blocks go to
//! the device in runs of consecutive addresses, then the node records the new
//! addresses (the replaced blocks invalidated, `NEW_ADDR` reservations consumed) and
//! the pages leave the cache. A reader therefore never finds an address whose block is
//! not yet written.

pub(crate) mod context;
pub mod flusher;
pub(crate) mod pace;

pub use context::{
    policy_by_name, InoHash, LeastLoaded, SingleContext, Writeback, WritebackContext, WritebackPolicy, WritebackStats,
    POLICY_NAMES,
};

use crate::device::WriteKind;
use crate::inode::InodeMut;
use crate::node::DIRTY_NODES_MAX;
use crate::pagecache::{DirtyPage, PageCache};
use crate::tree::{node_log, Loc, Tree};
use crate::{Error, Fs, Ino, Result};
use std::sync::PoisonError;
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR};
use uf2fs_format::summary::Summary;

/// Most writeback contexts a file system takes (`-o writeback_contexts=`).
pub const MAX_WRITEBACK_CONTEXTS: usize = 64;

/// Blocks gathered into one device write at most (1 MiB).
const RUN_BLOCKS_MAX: usize = 256;

/// Device writes of consecutive blocks gathered into one (see
/// [`crate::device::BlockDevice::write_blocks_from`]); the pages are borrowed until the
/// run is written.
struct Run<'a> {
    start: u64,
    pages: Vec<&'a [u8]>,
}

impl<'a> Run<'a> {
    fn new() -> Run<'a> {
        Run {
            start: 0,
            pages: Vec::new(),
        }
    }

    fn push(&mut self, t: &Tree, addr: u64, block: &'a [u8]) -> Result<()> {
        let blocks = self.pages.len();
        if blocks > 0 && (self.start + blocks as u64 != addr || blocks >= RUN_BLOCKS_MAX) {
            self.flush(t)?;
        }
        if self.pages.is_empty() {
            self.start = addr;
        }
        self.pages.push(block);
        Ok(())
    }

    fn flush(&mut self, t: &Tree) -> Result<()> {
        t.dev.write_blocks_from(self.start, &self.pages, WriteKind::UserData)?;
        self.pages.clear();
        Ok(())
    }
}

/// Writes every dirty page of inode `ino` (see the module notes). The caller holds
/// the inode's lock and `cp_lock`; an error leaves memory ahead of the device, so the
/// caller must fail the file system. Returns the pages written.
pub(crate) fn write_inode_pages(t: &Tree, ino: Ino) -> Result<usize> {
    write_inode_pages_in(t, ino, usize::MAX, PageOrder::FromStart)
}

/// Which of an inode's dirty pages a writeback of some of them takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageOrder {
    /// The lowest block indexes.
    FromStart,
    /// From where the inode's last cyclic writeback stopped, wrapping to the start
    /// ([`crate::pagecache::PageCache::cyclic_window`]).
    Cyclic,
}

/// [`write_inode_pages`] for `max` dirty pages of `ino` in `order`.
pub(crate) fn write_inode_pages_in(t: &Tree, ino: Ino, max: usize, order: PageOrder) -> Result<usize> {
    crate::lockrank::assert_held(crate::lockrank::Rank::Checkpoint, "writing an inode's pages");
    let pages = match order {
        PageOrder::FromStart => {
            let mut pages = t.pages.inode_snapshot(ino);
            pages.truncate(max);
            pages
        }
        PageOrder::Cyclic => t.pages.cyclic_window(ino, max),
    };
    if pages.is_empty() {
        return Ok(0);
    }
    let context = t.pages.context_of_inode(ino).unwrap_or(0);
    let mut inode = t.load_inode(ino)?;
    let mut inode_changed = false;
    let count = pages.len();
    // Compressed files: clusters to store compressed (or to decompress) are written
    // whole by the cluster writer; the rest are plain pages.
    let pages = if inode.inode.is_compressed() {
        inode_changed = true;
        match crate::compress::writeback::write_clusters(t, &mut inode, pages) {
            Ok(rest) => rest,
            Err(e) => {
                t.store_inode(inode)?;
                return Err(e);
            }
        }
    } else {
        pages
    };
    let written = write_groups(t, &mut inode, &pages, context, &mut inode_changed);
    // Groups written before a failure left the cache and point at their new blocks
    // from the inode: it is stored either way, or memory would read their old blocks.
    if inode_changed {
        t.store_inode(inode)?;
    }
    written?;
    let wb = t.pages.writeback();
    if let Some(c) = wb.contexts.get(context) {
        c.add(1, count as u64);
    }
    Ok(count)
}

/// The groups of [`write_inode_pages`]: `pages` (all of `inode`'s dirty pages) by the
/// node holding their addresses, each written, then its pages out of the cache.
/// `inode_changed` is set when `inode` took new addresses (or lost its extent hint).
fn write_groups(
    t: &Tree,
    inode: &mut InodeMut,
    pages: &[(u64, DirtyPage)],
    context: usize,
    inode_changed: &mut bool,
) -> Result<()> {
    let ino = inode.ino;
    let in_inode = inode.inode.addrs_per_inode() as u64;
    let mut run = Run::new();
    let mut i = 0;
    while i < pages.len() {
        let first = pages[i].0;
        let loc = t
            .locate(inode, first)?
            .ok_or_else(|| Error::bug(format!("dirty block {first} of inode {ino} has no node")))?;
        let capacity = if loc.in_inode {
            in_inode
        } else {
            inode.inode.geometry.addrs_per_block() as u64
        };
        let group_end = first - loc.slot as u64 + capacity;
        let n = pages[i..].iter().take_while(|(index, _)| *index < group_end).count();
        let group = &pages[i..i + n];
        *inode_changed |= write_group(t, inode, &loc, group, &mut run, context)?;
        let (fofs, _, len) = inode.inode.ext;
        if len != 0 && first < fofs as u64 + len as u64 && group[n - 1].0 >= fofs as u64 {
            inode.inode.ext = (0, 0, 0);
            *inode_changed = true;
        }
        for (index, page) in group {
            t.pages.remove_written(ino, *index, &page.data);
        }
        i += n;
    }
    Ok(())
}

/// Writes `group`, pages whose addresses share the node at `loc` (the first page's
/// slot), and records their new addresses: in that node (stored dirty) or in `inode`
/// (true is returned: the caller stores it).
fn write_group<'a>(
    t: &Tree,
    inode: &mut InodeMut,
    loc: &Loc,
    group: &'a [(u64, DirtyPage)],
    run: &mut Run<'a>,
    context: usize,
) -> Result<bool> {
    let ino = inode.ino;
    let version = t.nodes.nat_entry(t.dev, loc.nid)?.version;
    let node = if loc.in_inode {
        None
    } else {
        Some(t.nodes.read(t.dev, loc.nid, ino)?)
    };
    // New addresses by slot, for the node or inode (edited once, after the data is
    // written).
    let mut slots: Vec<(usize, u32)> = Vec::new();
    let first = group[0].0;
    // The whole group takes its blocks under one hold of the segment manager's lock:
    // consecutive blocks of its log, so that a file written back beside other files
    // (other writers, other writeback contexts) stays in runs as long as its groups,
    // and writeback takes the lock once per node's worth of pages, not once per page.
    let mut addrs: Vec<u64> = Vec::with_capacity(group.len());
    let pinned = inode.inode.is_pinned();
    {
        let mut s = crate::lockrank::lock_segments(t.segs);
        for (index, page) in group {
            let slot = loc.slot + (index - first) as usize;
            let old = match &node {
                Some(b) => crate::tree::slot_of(b, slot)?,
                None => inode.slot(slot),
            };
            let sum = Summary {
                nid: loc.nid,
                version,
                ofs_in_node: slot as u16,
            };
            let addr = match old {
                NULL_ADDR => {
                    return Err(Error::bug(format!(
                        "dirty block {index} of inode {ino} has no address (reserved at write)"
                    )))
                }
                NEW_ADDR => s.alloc_reserved_block_for(t.dev, page.log, context, sum)?,
                // A pinned file is updated in place (`f2fs_should_update_inplace`):
                // its blocks never move.
                old if pinned => old as u64,
                old => {
                    let a = s.alloc_block_for(t.dev, page.log, context, sum)?;
                    s.invalidate(old as u64)?;
                    a
                }
            };
            addrs.push(addr);
        }
    }
    for ((index, page), &addr) in group.iter().zip(&addrs) {
        let slot = loc.slot + (index - first) as usize;
        run.push(t, addr, &page.data)?;
        slots.push((slot, addr as u32));
    }
    // The blocks are on the device before any node (or the inode) points at them.
    run.flush(t)?;
    let Some(b) = node else {
        for (slot, addr) in slots {
            inode.set_slot(slot, addr);
        }
        return Ok(true);
    };
    let offset = crate::tree::footer_of(&b, loc.nid)?.offset();
    t.nodes.update_dirty(
        t.dev,
        loc.nid,
        b,
        node_log(inode.inode.geometry, offset, inode.is_dir()),
        |b| {
            for (slot, addr) in slots {
                // The slots come from the node's own path: always in range.
                let _ = uf2fs_format::node::set_node_slot(b, slot, addr);
            }
        },
    );
    Ok(false)
}

/// Writes every dirty page of every inode, or with `file_data` false those of
/// directories (and symlinks) only, leaving regular files' pages dirty (a checkpoint's
/// first step; `cp_lock` held exclusively, so no inode lock is needed). Returns the
/// pages written.
pub(crate) fn write_all_pages(t: &Tree, file_data: bool) -> Result<usize> {
    let mut written = 0;
    for c in 0..t.pages.writeback().contexts() {
        for ino in t.pages.dirty_inodes(c) {
            if !file_data && t.load_inode(ino)?.kind()? == crate::FileKind::File {
                continue;
            }
            written += write_inode_pages(t, ino)?;
        }
    }
    Ok(written)
}

impl Fs {
    /// Writes the dirty pages of inode `ino` out (not durable until the next
    /// checkpoint). Holds `cp_lock` shared and the inode's lock; a failure fails the
    /// file system. Returns the pages written.
    pub(crate) fn writeback_inode(&self, ino: Ino) -> Result<usize> {
        self.writeback_inode_upto(ino, usize::MAX)
    }

    /// [`Fs::writeback_inode`] for the first `max` dirty pages of `ino`.
    pub(crate) fn writeback_inode_upto(&self, ino: Ino, max: usize) -> Result<usize> {
        self.writeback_inode_in(ino, max, PageOrder::FromStart)
    }

    /// [`Fs::writeback_inode`] for `max` dirty pages of `ino` in `order`.
    pub(crate) fn writeback_inode_in(&self, ino: Ino, max: usize, order: PageOrder) -> Result<usize> {
        let rw = self.rw()?;
        let cp = rw.cp_shared();
        rw.check_failed()?;
        self.writeback_inode_held(cp.last().node_version(), ino, max, order)
    }

    /// [`Fs::writeback_inode_in`] by a caller that holds `cp_lock` (shared or
    /// exclusive) and read `node_ver` from the last checkpoint under it.
    pub(crate) fn writeback_inode_held(&self, node_ver: u64, ino: Ino, max: usize, order: PageOrder) -> Result<usize> {
        let rw = self.rw()?;
        let _g = rw.lock_inodes(&[ino]);
        let t = self.tree(rw);
        let r = write_inode_pages_in(&t, ino, max, order).and_then(|n| {
            if self.nodes().dirty_node_count() > DIRTY_NODES_MAX {
                self.nodes()
                    .write_dirty_nodes(self.device(), self.superblock(), rw.seg_lock(), node_ver)?;
            }
            Ok(n)
        });
        if let Err(e) = &r {
            rw.fail(e);
        }
        r
    }

    /// Writes one dirty page back: of the first context's inode dirtied first, from
    /// where its last cyclic writeback stopped (Linux's flusher, one page at a time
    /// under the kernel's writer model). `held`: the node version of the last
    /// checkpoint when the caller holds `cp_lock` (a GC pass), else `None` and it is
    /// taken shared. Whether there was a page to write.
    pub(crate) fn write_back_one_page(&self, held: Option<u64>) -> Result<bool> {
        let pages = self.rw()?.pages();
        for c in 0..pages.writeback().contexts() {
            for ino in pages.dirty_inodes(c) {
                let n = match held {
                    Some(node_ver) => self.writeback_inode_held(node_ver, ino, 1, PageOrder::Cyclic)?,
                    None => self.writeback_inode_in(ino, 1, PageOrder::Cyclic)?,
                };
                if n > 0 {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Runs every writeback context once: each writes the dirty pages of its inodes,
    /// the one dirtied first first. The data is not durable until the next checkpoint
    /// ([`Fs::fsync`], [`Fs::write_checkpoint`]). Returns the pages written.
    pub fn writeback(&self) -> Result<u64> {
        let pages: &PageCache = self.rw()?.pages();
        let wb = pages.writeback();
        let mut written = 0u64;
        for (c, ctx) in wb.contexts.iter().enumerate() {
            ctx.stats.lock().unwrap_or_else(PoisonError::into_inner).runs += 1;
            for ino in pages.dirty_inodes(c) {
                written += self.writeback_inode(ino)? as u64;
            }
        }
        Ok(written)
    }

    /// Gives the file system `contexts` writeback contexts (1 to
    /// [`MAX_WRITEBACK_CONTEXTS`]) under `policy`, before anything is written (right
    /// after the open, before [`crate::background::Background::start`] starts their
    /// threads). Refused while pages are dirty.
    pub fn set_writeback(&self, contexts: usize, policy: Box<dyn WritebackPolicy>) -> Result<()> {
        if !(1..=MAX_WRITEBACK_CONTEXTS).contains(&contexts) {
            return Err(Error::Invalid(format!(
                "{contexts} writeback contexts: 1 to {MAX_WRITEBACK_CONTEXTS}"
            )));
        }
        let rw = self.rw()?;
        if rw.flusher().running() || !rw.pages().set_writeback(Writeback::new(policy, contexts)) {
            return Err(Error::Invalid(
                "writeback contexts can change only before anything is written".into(),
            ));
        }
        // Contexts 1.. write warm data to logs of their own.
        rw.segs().set_streams(contexts - 1);
        Ok(())
    }

    /// The writeback policy's name and the number of contexts (read-write only).
    pub fn writeback_setup(&self) -> Option<(&'static str, usize)> {
        let wb = self.rw().ok()?.pages().writeback();
        Some((wb.policy_name(), wb.contexts()))
    }

    /// Counters of the writeback contexts (read-write only; empty otherwise).
    pub fn writeback_stats(&self) -> Vec<WritebackStats> {
        self.rw().map(|rw| rw.pages().writeback().stats()).unwrap_or_default()
    }
}
