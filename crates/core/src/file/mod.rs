//! File data operations of a read-write file system (F2FS's file.c): write, truncate,
//! fallocate (allocate, keep size, punch hole, zero range: [`fallocate`]), fsync
//! ([`fsync`]), copy_file_range ([`copy`]) and F2FS's move range ([`move_range`]), on top of the block-range code
//! ([`blocks`]), inline data ([`inline`]) and the page cache.
//!
//! Each runs as one or more namespace-style operations ([`crate::ops::Op`]): `cp_lock`
//! shared, the inode locked, the room for everything the operation may write checked
//! before its first change. Large requests go in chunks, one operation each, so the
//! dirty-page and dirty-node bounds hold between them and a checkpoint can run in
//! between:
//!
//! | request   | chunk                           | when space runs out                       |
//! |-----------|---------------------------------|-------------------------------------------|
//! | write     | [`WRITE_CHUNK_BLOCKS`] blocks   | make room (checkpoint prefree sections, else foreground GC) once and retry; then smaller chunks down to one block; then a short write (the bytes written are whole, `i_size` covers them), or `NoSpace` when nothing was written |
//! | fallocate | [`ALLOC_CHUNK_BLOCKS`] blocks   | make room once and retry; then `NoSpace`, the blocks reserved so far kept (and `i_size` covering them without `KEEP_SIZE`) |
//! | punch     | [`PUNCH_CHUNK_BLOCKS`] blocks   | may use the reserved sections (it frees space) |
//! | zero range | [`ALLOC_CHUNK_BLOCKS`] blocks  | as fallocate; the partial blocks at the ends first, `i_size` last |
//! | truncate  | one operation                   | may use the reserved sections             |
//!
//! Data blocks go to the warm data log, the cold one for files with the cold advise
//! bit (a cold extension), the hot one with the hot bit, as the kernel's
//! `__get_segment_type_6`; their direct nodes to warm node, indirect nodes to cold node.

pub mod atomic;
pub mod blocks;
mod copy;
mod fallocate;
mod fsync;
pub mod inline;
pub(crate) mod kernel_writeback;
mod move_range;
mod pin;
pub mod synced;

pub use fallocate::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE};

use crate::inode::{now, InodeMut};
use crate::namei::newinode::{FADVISE_COLD_BIT, FADVISE_HOT_BIT};
use crate::ops::{need, Op};
use crate::pagecache::{DIRTY_PAGES_BACKGROUND, DIRTY_PAGES_MAX, DIRTY_PAGES_PER_INODE_MAX, WRITEBACK_BALANCE_PAGES};
use crate::segment::{LogType, SpaceNeed};
use crate::{Error, FileKind, Fs, Ino, Result};
use blocks::RangePlan;
use uf2fs_format::consts::NULL_ADDR;
use uf2fs_format::node::{Inode, F2FS_COMPRESS_RELEASED};

/// Blocks one write operation dirties at most (1 MiB).
pub const WRITE_CHUNK_BLOCKS: u64 = 256;
/// Blocks one fallocate operation reserves at most (32 MiB; no pages are dirtied).
pub const ALLOC_CHUNK_BLOCKS: u64 = 8192;
/// Blocks one punch operation clears at most (64 direct nodes of 4 KiB blocks).
pub const PUNCH_CHUNK_BLOCKS: u64 = 64 * uf2fs_format::consts::ADDRS_PER_BLOCK as u64;

/// The data log class of a regular file's blocks: cold or hot by its advise bits (hot
/// only with six active logs, see [`crate::segment::ActiveLogs::file_data_class`]).
fn data_log(inode: &InodeMut, segs: &std::sync::Mutex<crate::segment::SegmentManager>) -> LogType {
    let logs = segs
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .active_logs();
    let advise = inode.inode.advise;
    logs.file_data_class(advise & FADVISE_COLD_BIT != 0, advise & FADVISE_HOT_BIT != 0)
}

/// Room for `data_blocks` blocks of `log` plus what `plan` says, `extra_new` more new
/// blocks, and the inode.
fn range_need(plan: &RangePlan, log: LogType, data_blocks: u64, extra_new: u64) -> SpaceNeed {
    let mut n = SpaceNeed::default();
    n.per_log[log as usize] += data_blocks;
    n.per_log[LogType::WarmNode as usize] += 1 + plan.dnodes + plan.new_direct;
    n.per_log[LogType::ColdNode as usize] += plan.indirect + plan.new_indirect;
    n.new_blocks = plan.holes + plan.new_direct + plan.new_indirect + extra_new;
    n
}

/// Sets mtime and ctime to now.
fn touch(inode: &mut InodeMut) {
    let t = now();
    inode.inode.mtime = t;
    inode.inode.ctime = t;
}

/// Whether `now` differs from the inode as it was `loaded` (fields, raw block) in its
/// mtime and ctime only: an overwrite inside the file, whose new blocks are chosen at
/// writeback.
fn only_times_changed(loaded: &(Inode, Vec<u8>), now: &InodeMut) -> bool {
    let (fields, raw) = loaded;
    let mut same = now.inode.clone();
    same.mtime = fields.mtime;
    same.ctime = fields.ctime;
    same == *fields && now.block == *raw
}

/// Forgets the largest extent (`i_ext`) when it overlaps blocks `first..end`, whose
/// addresses change (dropping it is always right: readers use the node tree).
fn drop_extent(inode: &mut InodeMut, first: u64, end: u64) {
    let (fofs, _, len) = inode.inode.ext;
    if len != 0 && first < fofs as u64 + len as u64 && end > fofs as u64 {
        inode.inode.ext = (0, 0, 0);
    }
}

impl Fs {
    /// Writes `data` at byte `offset` of regular file `ino` (appending, overwriting,
    /// or past the end, leaving a hole); `i_size` grows to cover it, mtime and ctime
    /// become now. The bytes wait in the page cache; they are durable after
    /// [`Fs::fsync`] or the next checkpoint. Returns the bytes written: all of them, or
    /// fewer when space ran out midway (see the module notes), or fewer when the write
    /// reaches past the largest F2FS file ([`Error::FileTooBig`] when it starts there).
    pub fn write(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        let bsz = self.block_bytes();
        let rw = self.rw()?;
        rw.check_failed()?;
        let max_bytes = self.live_inode(ino)?.inode.max_file_bytes();
        if offset >= max_bytes && !data.is_empty() {
            return Err(Error::FileTooBig(format!(
                "write at byte {offset} of inode {ino}; F2FS files end at {max_bytes}"
            )));
        }
        let data = &data[..data.len().min((max_bytes - offset.min(max_bytes)) as usize)];
        let mut done = 0usize;
        let mut chunk_blocks = WRITE_CHUNK_BLOCKS;
        let mut reclaims = 0;
        while done < data.len() {
            self.balance_dirty_pages(ino)?;
            let pos = offset + done as u64;
            let room = (bsz - pos % bsz) + (chunk_blocks - 1) * bsz;
            let len = (data.len() - done).min(room as usize);
            let mut op = self.begin_op()?;
            let r = op.write_chunk(ino, pos, &data[done..done + len]);
            match op.end(r) {
                Ok(()) => {
                    let blocks = (pos + len as u64).div_ceil(bsz) - pos / bsz;
                    rw.count_user_blocks(blocks);
                    done += len;
                    reclaims = 0;
                    self.background_writeback(blocks)?;
                }
                Err(Error::NoSpace(_)) if reclaims < crate::gc::RECLAIM_TRIES && self.reclaim_space()? => {
                    reclaims += 1;
                }
                // Out of blocks (or of room after the retries): a smaller chunk may
                // still fit, then the write is short.
                Err(e) if e.is_no_space() && chunk_blocks > 1 => chunk_blocks = (chunk_blocks / 4).max(1),
                Err(e) if e.is_no_space() && done > 0 => break,
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// Sets the size of regular file `ino` (`truncate(2)`): shrinking frees the blocks
    /// past the new end (and the nodes wholly past it) and zeroes the rest of the last
    /// partial block; growing leaves a hole. mtime and ctime become now.
    pub fn truncate(&self, ino: Ino, size: u64) -> Result<()> {
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.truncate(ino, size);
            op.end(r)
        })
    }

    /// Inode `ino` as it stands ([`Error::NotFound`] when it is not allocated).
    fn live_inode(&self, ino: Ino) -> Result<crate::inode::InodeRef> {
        self.check_allocated(ino)?;
        self.inode(ino)
    }

    /// Without flusher threads, once more than [`DIRTY_PAGES_BACKGROUND`] pages are
    /// dirty, writes every dirty inode's pages back (the one dirtied first first), as
    /// Linux's flusher does past `vm.dirty_background_bytes`. While GC runs, a look at
    /// the free sections ([`Fs::balance_fs`]) comes after every
    /// [`WRITEBACK_BALANCE_PAGES`] pages, as F2FS balances while it writes data back,
    /// so that foreground GC runs between the invalidations of one writeback and not
    /// only before the next operation. With flusher threads they do this
    /// ([`Op::write_back_if_over`] wakes them). Under the kernel's writer model
    /// ([`crate::WriterModel::Kernel`]), the paced share of [`kernel_writeback`]
    /// after the `dirtied` pages this write dirtied.
    fn background_writeback(&self, dirtied: u64) -> Result<()> {
        let rw = self.rw()?;
        if rw.flusher().running() {
            return Ok(());
        }
        if rw.gc().kernel_writers() {
            return self.kernel_background_writeback(rw, dirtied);
        }
        if rw.pages().len() <= DIRTY_PAGES_BACKGROUND {
            return Ok(());
        }
        let step = if rw.gc().enabled {
            WRITEBACK_BALANCE_PAGES
        } else {
            usize::MAX
        };
        let pages = rw.pages();
        for c in 0..pages.writeback().contexts() {
            for ino in pages.dirty_inodes(c) {
                // Pages other writers dirty meanwhile wait for the next round.
                for _ in 0..pages.inode_len(ino).div_ceil(step) {
                    if self.writeback_inode_upto(ino, step)? == 0 {
                        break;
                    }
                    match self.balance_fs() {
                        // The write itself is done: the next operation's room check
                        // reports a volume GC cannot make room on.
                        Err(e) if e.is_no_space() => return Ok(()),
                        r => r?,
                    }
                }
            }
        }
        Ok(())
    }

    /// Keeps the page cache within [`DIRTY_PAGES_MAX`] before a write to `ino`. With
    /// flusher threads, by [`crate::writeback::flusher::throttle`]'s rules: wake the
    /// contexts with work and go on, or wait while everything dirty is past the limit
    /// or `ino`'s own context is past its share. Without, past the limit the writer
    /// runs the writeback contexts itself.
    pub(crate) fn balance_dirty_pages(&self, ino: Ino) -> Result<()> {
        let rw = self.rw()?;
        let flush = &rw.flusher();
        if !flush.running() {
            if rw.pages().len() > DIRTY_PAGES_MAX {
                self.writeback()?;
            }
            return Ok(());
        }
        loop {
            let mine = rw.pages().context_of_inode(ino);
            let t = crate::writeback::flusher::throttle(
                rw.pages().len(),
                &rw.pages().context_loads(),
                mine,
                DIRTY_PAGES_MAX,
                DIRTY_PAGES_PER_INODE_MAX,
            );
            for &c in &t.wake {
                flush.kick(c);
            }
            if !t.wait {
                return Ok(());
            }
            rw.check_failed()?;
            if !flush.running() {
                self.writeback()?;
                return Ok(());
            }
            flush.wait_progress();
        }
    }
}

impl Op<'_> {
    /// Loads regular file `ino` for changing its data (write, truncate, fallocate). A
    /// compressed file whose reserved blocks were released
    /// (`F2FS_IOC_RELEASE_COMPRESS_BLOCKS`) is refused with [`Error::NotPermitted`]
    /// (EPERM), as Linux refuses it until `F2FS_IOC_RESERVE_COMPRESS_BLOCKS`.
    fn load_file(&self, ino: Ino) -> Result<InodeMut> {
        let i = self.load(ino)?;
        match i.kind()? {
            FileKind::File if i.inode.is_compressed() && i.inode.has_inline(F2FS_COMPRESS_RELEASED) => {
                Err(Error::NotPermitted(format!(
                    "inode {ino} is a compressed file whose reserved blocks were released"
                )))
            }
            FileKind::File => Ok(i),
            FileKind::Dir => Err(Error::IsDir(format!("inode {ino}"))),
            k => Err(Error::Invalid(format!("inode {ino} is a {k:?}, not a regular file"))),
        }
    }

    /// The data log of regular file `i`'s blocks: cold for a compressed file whose
    /// clusters writeback compresses (as the kernel's `__get_segment_type_6`), else
    /// by its advise bits ([`data_log`]).
    fn file_log(&self, i: &InodeMut) -> LogType {
        if i.inode.is_compressed() && self.t.compress.may_compress(i.ino) {
            LogType::ColdData
        } else {
            data_log(i, self.t.segs)
        }
    }

    /// One chunk of [`Fs::write`]: bytes `data` at `pos`, within one chunk of blocks.
    fn write_chunk(&mut self, ino: Ino, pos: u64, data: &[u8]) -> Result<()> {
        let bsz = self.fs.block_bytes();
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load_file(ino)?;
        let end = pos + data.len() as u64;
        if inline::is_inline(&i) && end <= inline::max_inline(&i) {
            self.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
            self.commit();
            inline::write(&mut i, pos, data);
            i.inode.size = i.inode.size.max(end);
            touch(&mut i);
            return self.t.store_inode(i);
        }
        let loaded = (i.inode.clone(), i.block.clone());
        let log = self.file_log(&i);
        let (first, last) = (pos / bsz, end.div_ceil(bsz));
        let view = inline::converted_view(&i);
        let plan = blocks::plan_range(&self.t, &view, first, last)?;
        let block0 = u64::from(inline::conversion_makes_block(&i) && first > 0);
        let extra = range_need(&plan, log, last - first + block0, block0);
        self.ensure_room(extra, (plan.new_direct + plan.new_indirect) as usize)?;
        self.commit();
        inline::convert(&mut self.t, &mut i, log)?;
        blocks::reserve_range(&mut self.t, &mut i, first, last)?;
        for index in first..last {
            let start = index * bsz;
            let (lo, hi) = (pos.max(start), end.min(start + bsz));
            let bytes = &data[(lo - pos) as usize..(hi - pos) as usize];
            let block = if hi - lo == bsz {
                bytes.to_vec()
            } else {
                let mut b = crate::compress::writeback::read_file_block(&self.t, &i, index)?
                    .unwrap_or_else(|| vec![0; bsz as usize]);
                b[(lo - start) as usize..(hi - start) as usize].copy_from_slice(bytes);
                b
            };
            self.t.pages.put(ino, index, block, log);
        }
        i.inode.size = i.inode.size.max(end);
        touch(&mut i);
        drop_extent(&mut i, first, last);
        let times_only = only_times_changed(&loaded, &i);
        self.t.store_inode_as(i, times_only)?;
        self.write_back_if_over(ino)
    }

    /// Starts writing `ino`'s dirty pages back once it holds more than
    /// [`DIRTY_PAGES_PER_INODE_MAX`]: with flusher threads, the inode's context writes
    /// them (the writer goes on); without, the writer does, here, except under the
    /// kernel's writer model, whose writer is held where Linux's dirty limit holds it
    /// instead ([`crate::writeback::pace::WRITER_HOLD_PAGES`], after the write).
    pub(super) fn write_back_if_over(&self, ino: Ino) -> Result<()> {
        if self.t.pages.inode_len(ino) > DIRTY_PAGES_PER_INODE_MAX {
            if self.rw.flusher().running() {
                self.rw.flusher().kick_all();
            } else if !self.rw.gc().kernel_writers() {
                crate::writeback::write_inode_pages(&self.t, ino)?;
            }
        }
        Ok(())
    }

    /// [`Fs::truncate`] under the inode's lock.
    fn truncate(&mut self, ino: Ino, size: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load_file(ino)?;
        if size > i.inode.max_file_bytes() {
            return Err(Error::FileTooBig(format!(
                "size {size} for inode {ino}; F2FS files end at {}",
                i.inode.max_file_bytes()
            )));
        }
        // Direct nodes a shrink frees are recorded (`NodeManager::note_freed_dnode`):
        // the next fsync writes empty ones over them, by roll-forward as Linux does.
        let old = i.inode.size;
        if inline::is_inline(&i) && size <= inline::max_inline(&i) {
            self.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
            self.commit();
            if size < old {
                inline::truncate(&mut i, size);
            }
        } else if inline::is_inline(&i) || size >= old {
            let log = data_log(&i, self.t.segs);
            let block0 = u64::from(inline::conversion_makes_block(&i));
            let mut extra = need([0, 0, 0, 0, 1, 0], block0);
            extra.per_log[log as usize] += block0;
            self.ensure_room(extra, 0)?;
            self.commit();
            inline::convert(&mut self.t, &mut i, log)?;
        } else {
            self.shrink(&mut i, size)?;
        }
        i.inode.size = size;
        touch(&mut i);
        self.t.store_inode(i)
    }

    /// Truncate down of a file with blocks: the partial last block's tail zeroed
    /// (rewritten) when it holds data, every block from the next one on freed.
    fn shrink(&mut self, i: &mut InodeMut, size: u64) -> Result<()> {
        let bsz = self.fs.block_bytes();
        let log = self.file_log(i);
        let from = size.div_ceil(bsz);
        // The last block rewritten, the nodes across the cut and the inode.
        let mut extra = need([0, 0, 0, 0, 4, 2], 0);
        extra.per_log[log as usize] += 1;
        self.ensure_room_as(extra, 0, true)?;
        self.commit();
        self.t.pages.remove_range(i.ino, from..u64::MAX);
        let cut = match i.inode.compress.filter(|_| i.inode.is_compressed()) {
            Some(c) => self.shrink_clusters(i, from, 1 << c.log_cluster_size, log)?,
            None => from,
        };
        blocks::truncate_blocks(&self.t, i, cut)?;
        drop_extent(i, size / bsz, u64::MAX);
        if size % bsz != 0 {
            self.zero_in_block(i, size / bsz, (size % bsz) as usize, bsz as usize, log)?;
        }
        Ok(())
    }

    /// The compressed half of a truncate of compressed file `i` to end before block
    /// `from`, as the kernel's `f2fs_truncate_blocks` and
    /// `f2fs_truncate_partial_cluster` do it: the clusters wholly past the cut that
    /// are stored compressed are dropped; a compressed cluster across the cut keeps
    /// its blocks until writeback, its pages dirty (decoded before the cut, zeros
    /// from it on), so that writeback stores it again, plain (it no longer fills a
    /// cluster). Returns
    /// the block from which the caller frees plain blocks and nodes.
    fn shrink_clusters(&mut self, i: &mut InodeMut, from: u64, n: u64, log: LogType) -> Result<u64> {
        let old_end = i.inode.size.div_ceil(self.fs.block_bytes()).div_ceil(n);
        crate::compress::place::drop_compressed_clusters(&self.t, i, from.div_ceil(n), old_end)?;
        if from % n == 0 {
            return Ok(from);
        }
        let first = from - from % n;
        let compressed = self
            .t
            .locate(i, first)?
            .is_some_and(|l| l.addr == uf2fs_format::consts::COMPRESS_ADDR);
        if !compressed {
            return Ok(from);
        }
        // Its blocks past the cut become zeros too, so that a file grown again before
        // writeback does not read the old bytes there out of the compressed cluster.
        for index in first..first + n {
            if index >= from {
                self.t
                    .pages
                    .put(i.ino, index, vec![0; self.fs.block_bytes() as usize], log);
            } else if self.t.pages.get(i.ino, index).is_none() {
                let b = crate::compress::writeback::read_file_block(&self.t, i, index)?
                    .unwrap_or_else(|| vec![0; self.fs.block_bytes() as usize]);
                self.t.pages.put(i.ino, index, b, log);
            }
        }
        Ok(first + n)
    }

    /// Zeroes bytes `from..to` of file block `index` when it holds data (a dirty page
    /// or a written block); holes and reserved blocks read as zeros already.
    fn zero_in_block(&mut self, i: &InodeMut, index: u64, from: usize, to: usize, log: LogType) -> Result<()> {
        let bsz = self.fs.block_bytes();
        let dirty = self.t.pages.get(i.ino, index);
        let written = match self.t.locate(i, index)? {
            // A compressed cluster's NEW_ADDR slots stand for data it holds.
            Some(l) => l.addr != NULL_ADDR && (l.addr != uf2fs_format::consts::NEW_ADDR || i.inode.is_compressed()),
            None => false,
        };
        if dirty.is_none() && !written {
            return Ok(());
        }
        let mut b =
            crate::compress::writeback::read_file_block(&self.t, i, index)?.unwrap_or_else(|| vec![0; bsz as usize]);
        b[from..to].fill(0);
        self.t.pages.put(i.ino, index, b, log);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
