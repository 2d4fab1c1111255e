//! File data operations of a read-write file system (F2FS's file.c): write, truncate,
//! fallocate (allocate, keep size, punch hole, zero range) and fsync, on top of the block-range
//! code ([`blocks`]), inline data ([`inline`]) and the page cache.
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

pub mod blocks;
pub mod inline;
pub mod synced;

use crate::inode::{now, InodeMut};
use crate::namei::newinode::{FADVISE_COLD_BIT, FADVISE_HOT_BIT};
use crate::ops::{need, Op};
use crate::pagecache::{DIRTY_PAGES_MAX, DIRTY_PAGES_PER_INODE_MAX};
use crate::segment::{LogType, SpaceNeed};
use crate::{Error, FileKind, Fs, Ino, Result};
use blocks::RangePlan;
use uf2fs_format::consts::{BLOCK_SIZE, NEW_ADDR, NULL_ADDR};
use uf2fs_format::node::FADVISE_KEEP_SIZE_BIT;

/// Blocks one write operation dirties at most (1 MiB).
pub const WRITE_CHUNK_BLOCKS: u64 = 256;
/// Blocks one fallocate operation reserves at most (32 MiB; no pages are dirtied).
pub const ALLOC_CHUNK_BLOCKS: u64 = 8192;
/// Blocks one punch operation clears at most (64 direct nodes of 4 KiB blocks).
pub const PUNCH_CHUNK_BLOCKS: u64 = 64 * uf2fs_format::consts::ADDRS_PER_BLOCK as u64;

/// `fallocate` mode bit: do not change the file size (Linux's `FALLOC_FL_KEEP_SIZE`).
pub const FALLOC_FL_KEEP_SIZE: u32 = 0x01;
/// `fallocate` mode bit: deallocate the range; needs `KEEP_SIZE` (`FALLOC_FL_PUNCH_HOLE`).
pub const FALLOC_FL_PUNCH_HOLE: u32 = 0x02;
/// `fallocate` mode bit: make the range read as zeros, its blocks reserved
/// (`FALLOC_FL_ZERO_RANGE`); `KEEP_SIZE` may go with it.
pub const FALLOC_FL_ZERO_RANGE: u32 = 0x10;

/// Names of the Linux `fallocate` mode bits, for refusals.
const FALLOC_NAMES: [(u32, &str); 7] = [
    (0x01, "KEEP_SIZE"),
    (0x02, "PUNCH_HOLE"),
    (0x04, "NO_HIDE_STALE"),
    (0x08, "COLLAPSE_RANGE"),
    (0x10, "ZERO_RANGE"),
    (0x20, "INSERT_RANGE"),
    (0x40, "UNSHARE_RANGE"),
];

/// Bytes of a block where the write side runs: 4 KiB volumes only (`Fs::open`
/// refuses others read-write; reads take the volume's `Geometry`).
const B: u64 = BLOCK_SIZE as u64;

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

/// Forgets the largest extent (`i_ext`) when it overlaps blocks `first..end`, whose
/// addresses change (dropping it is always right: readers use the node tree).
fn drop_extent(inode: &mut InodeMut, first: u64, end: u64) {
    let (fofs, _, len) = inode.inode.ext;
    if len != 0 && first < fofs as u64 + len as u64 && end > fofs as u64 {
        inode.inode.ext = (0, 0, 0);
    }
}

fn mode_names(mode: u32) -> String {
    let names: Vec<&str> = FALLOC_NAMES
        .iter()
        .filter(|(bit, _)| mode & bit != 0)
        .map(|(_, n)| *n)
        .collect();
    if names.is_empty() {
        "unknown bits".to_string()
    } else {
        names.join("|")
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
            let room = (B - pos % B) + (chunk_blocks - 1) * B;
            let len = (data.len() - done).min(room as usize);
            let mut op = self.begin_op()?;
            let r = op.write_chunk(ino, pos, &data[done..done + len]);
            match op.end(r) {
                Ok(()) => {
                    let blocks = (pos + len as u64).div_ceil(B) - pos / B;
                    rw.count_user_blocks(blocks);
                    done += len;
                    reclaims = 0;
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

    /// `fallocate(2)` on regular file `ino`, for `len` bytes at `offset`. Modes:
    /// 0 reserves blocks for every hole of the range (`NEW_ADDR`, reading as zeros,
    /// counted as used, as F2FS does) and grows `i_size` to cover it;
    /// [`FALLOC_FL_KEEP_SIZE`] does the same without changing the size;
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE` frees the range's blocks and zeroes
    /// the partial blocks at its ends (nothing when `offset` is at or past the end of
    /// file); [`FALLOC_FL_ZERO_RANGE`] (with or without `KEEP_SIZE`) does what F2FS's
    /// `f2fs_zero_range` does: the partial blocks at the ends are written with zeros
    /// where the range covers them (allocated if they were holes), every whole block of
    /// the range becomes a reservation (`NEW_ADDR`: its written block freed, a hole
    /// reserved), and `i_size` grows to the range's end unless `KEEP_SIZE` says not to.
    /// Other modes are [`Error::Unsupported`]. mtime and ctime become now.
    pub fn fallocate(&self, ino: Ino, offset: u64, len: u64, mode: u32) -> Result<()> {
        if len == 0 {
            return Err(Error::Invalid(format!("fallocate of 0 bytes on inode {ino}")));
        }
        let end = offset
            .checked_add(len)
            .ok_or_else(|| Error::FileTooBig(format!("fallocate range {offset}+{len} overflows")))?;
        match mode {
            0 | FALLOC_FL_KEEP_SIZE => self.allocate(ino, offset, end, mode == FALLOC_FL_KEEP_SIZE),
            m if m == FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE => self.punch(ino, offset, end),
            m if m & !FALLOC_FL_KEEP_SIZE == FALLOC_FL_ZERO_RANGE => {
                self.zero_range(ino, offset, end, m & FALLOC_FL_KEEP_SIZE != 0)
            }
            m => Err(Error::Unsupported {
                feature: "fallocate mode",
                detail: format!(
                    "mode {m:#x} ({}) on inode {ino}: uf2fs allocates (0, KEEP_SIZE), punches holes \
                     (PUNCH_HOLE|KEEP_SIZE) and zeroes ranges (ZERO_RANGE, KEEP_SIZE) only",
                    mode_names(m)
                ),
            }),
        }
    }

    /// Makes file `ino`'s data and metadata durable before returning. Its dirty pages
    /// are written back; then, as Linux F2FS does under `fsync_mode=posix`, a regular
    /// file's direct nodes go to the warm node log with the fsync mark (the inode block
    /// last, with the dentry mark when the file is new since the last checkpoint),
    /// between two device flushes (the first makes the data they point at durable): roll-forward recovery (at the next read-write open) replays them
    /// after a crash. A checkpoint is written instead for everything else, as the
    /// kernel's `need_do_checkpoint` decides: not a regular file, a compressed file, a
    /// link count other than one, a name or parent changed since the last checkpoint, a
    /// directory renamed since the last checkpoint, the file shrunk or holes punched or
    /// zeroed in it since the last checkpoint (direct nodes freed), a parent directory
    /// not yet checkpointed, two active logs, little free space, or `fsync_mode=strict`.
    /// `datasync` changes nothing: both write the same.
    pub fn fsync(&self, ino: Ino, datasync: bool) -> Result<()> {
        let _ = datasync;
        let rw = self.rw()?;
        self.live_inode(ino)?;
        self.writeback_inode(ino)?;
        if self.fsync_roll_forward(rw, ino)? {
            rw.fsync_track().count(true);
            return Ok(());
        }
        self.sync_fs()?;
        rw.fsync_track().count(false);
        Ok(())
    }

    /// The roll-forward half of [`Fs::fsync`]: false when a checkpoint must be written
    /// instead.
    fn fsync_roll_forward(&self, rw: &crate::fs::ReadWrite, ino: Ino) -> Result<bool> {
        let settings = self.settings();
        if settings.fsync_mode == crate::settings::FsyncMode::Strict
            || settings.active_logs.log_for(LogType::WarmNode) != LogType::WarmNode
        {
            return Ok(false);
        }
        let cp = rw.cp_shared();
        rw.check_failed()?;
        let _g = rw.lock_inodes(&[ino]);
        if rw.fsync_track().must_checkpoint(ino) {
            return Ok(false);
        }
        let inode = self.tree(rw).load_inode(ino)?;
        if inode.kind()? != FileKind::File || inode.inode.is_compressed() || inode.inode.links != 1 {
            return Ok(false);
        }
        let dev = self.device();
        let checkpointed = |nid: u32| {
            self.nodes()
                .checkpointed_entry(dev, nid)
                .is_ok_and(|e| e.ino == nid && e.block_addr != NULL_ADDR && e.block_addr != NEW_ADDR)
        };
        if inode.inode.pino == 0 || !checkpointed(inode.inode.pino) {
            return Ok(false);
        }
        // Room for what recovery writes: the nodes written now again, and the chain.
        {
            let segs = rw.segs();
            if segs.free_section_count() <= segs.reserved_sections() + 2 {
                return Ok(false);
            }
        }
        let dent = !checkpointed(ino) && !rw.fsync_track().dentry_marked(ino);
        let barrier = settings.fsync_mode != crate::settings::FsyncMode::NoBarrier;
        // The data the nodes point at is durable before any node is written: a power
        // cut during this fsync then leaves either the nodes of the last complete fsync
        // or these with their data, never a node pointing at a block still in flight
        // (the crash harness caught that: stale blocks in a file fsync'd before).
        if barrier {
            dev.flush().inspect_err(|e| rw.fail(e))?;
        }
        let written = self.nodes().write_fsync_nodes(
            dev,
            self.superblock(),
            rw.seg_lock(),
            ino,
            cp.last().node_version(),
            dent,
        );
        if let Err(e) = written {
            rw.fail(&e);
            return Err(e);
        }
        if dent {
            rw.fsync_track().mark_dentry(ino);
        }
        drop(_g);
        drop(cp);
        if barrier {
            // A failed flush leaves the nodes' durability unknown: the volume stops.
            dev.flush().inspect_err(|e| rw.fail(e))?;
        }
        Ok(true)
    }

    /// Inode `ino` as it stands ([`Error::NotFound`] when it is not allocated).
    fn live_inode(&self, ino: Ino) -> Result<crate::inode::InodeRef> {
        self.check_allocated(ino)?;
        self.inode(ino)
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

    /// fallocate modes 0 and `KEEP_SIZE` over bytes `offset..end`, in chunks.
    fn allocate(&self, ino: Ino, offset: u64, end: u64, keep_size: bool) -> Result<()> {
        let (first, last) = (offset / B, end.div_ceil(B));
        let mut index = first;
        while index < last {
            let stop = last.min(index + ALLOC_CHUNK_BLOCKS);
            let size_to = if keep_size { 0 } else { end.min(stop * B) };
            self.with_room(|fs| {
                let mut op = fs.begin_op()?;
                let r = op.allocate_chunk(ino, index, stop, size_to, end);
                op.end(r)
            })?;
            index = stop;
        }
        Ok(())
    }

    /// Zeroes bytes `offset..end` (fallocate `ZERO_RANGE`): the partial blocks at the
    /// ends in a first operation, the whole blocks in chunks, then `i_size`.
    fn zero_range(&self, ino: Ino, offset: u64, end: u64, keep_size: bool) -> Result<()> {
        let (first, last) = self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.zero_start(ino, offset, end);
            op.end(r)
        })?;
        let mut index = first;
        while index < last {
            let stop = last.min(index + ALLOC_CHUNK_BLOCKS);
            self.with_room(|fs| {
                let mut op = fs.begin_op()?;
                let r = op.zero_chunk(ino, index, stop);
                op.end(r)
            })?;
            index = stop;
        }
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.zero_finish(ino, end, keep_size);
            op.end(r)
        })
    }

    /// Punches bytes `offset..end`, in chunks; the first also zeroes partial blocks.
    fn punch(&self, ino: Ino, offset: u64, end: u64) -> Result<()> {
        let mut op = self.begin_op()?;
        let r = op.punch_start(ino, offset, end);
        let Some((first, last)) = op.end(r)? else {
            return Ok(());
        };
        let mut index = first;
        while index < last {
            let stop = last.min(index + PUNCH_CHUNK_BLOCKS);
            let mut op = self.begin_op()?;
            let r = op.punch_chunk(ino, index, stop);
            op.end(r)?;
            index = stop;
        }
        Ok(())
    }
}

impl Op<'_> {
    /// Loads regular file `ino` for changing its data (write, truncate, fallocate). A
    /// compressed file is refused, untouched: uf2fs reads its clusters but does not
    /// write them yet (Linux's rewrite of a cluster recompresses it).
    fn load_file(&self, ino: Ino) -> Result<InodeMut> {
        let i = self.load(ino)?;
        match i.kind()? {
            FileKind::File if i.inode.is_compressed() => Err(Error::Unsupported {
                feature: "compression",
                detail: format!(
                    "inode {ino} is a compressed file: uf2fs reads it, and may rename, link, remove \
                     and chmod it, but does not change its data yet"
                ),
            }),
            FileKind::File => Ok(i),
            FileKind::Dir => Err(Error::IsDir(format!("inode {ino}"))),
            k => Err(Error::Invalid(format!("inode {ino} is a {k:?}, not a regular file"))),
        }
    }

    /// One chunk of [`Fs::write`]: bytes `data` at `pos`, within one chunk of blocks.
    fn write_chunk(&mut self, ino: Ino, pos: u64, data: &[u8]) -> Result<()> {
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
        let log = data_log(&i, self.t.segs);
        let (first, last) = (pos / B, end.div_ceil(B));
        let view = inline::converted_view(&i);
        let plan = blocks::plan_range(&self.t, &view, first, last)?;
        let block0 = u64::from(inline::conversion_makes_block(&i) && first > 0);
        let extra = range_need(&plan, log, last - first + block0, block0);
        self.ensure_room(extra, (plan.new_direct + plan.new_indirect) as usize)?;
        self.commit();
        inline::convert(&mut self.t, &mut i, log)?;
        blocks::reserve_range(&mut self.t, &mut i, first, last)?;
        for index in first..last {
            let start = index * B;
            let (lo, hi) = (pos.max(start), end.min(start + B));
            let bytes = &data[(lo - pos) as usize..(hi - pos) as usize];
            let block = if hi - lo == B {
                bytes.to_vec()
            } else {
                let mut b = self.t.read_block(&i, index)?.unwrap_or_else(|| vec![0; BLOCK_SIZE]);
                b[(lo - start) as usize..(hi - start) as usize].copy_from_slice(bytes);
                b
            };
            self.t.pages.put(ino, index, block, log);
        }
        i.inode.size = i.inode.size.max(end);
        touch(&mut i);
        drop_extent(&mut i, first, last);
        self.t.store_inode(i)?;
        if self.t.pages.inode_len(ino) > DIRTY_PAGES_PER_INODE_MAX {
            // With flusher threads, the inode's context writes it (the writer goes
            // on); without, the writer does, here.
            if self.rw.flusher().running() {
                self.rw.flusher().kick_all();
            } else {
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
        let old = i.inode.size;
        if size < old {
            // Direct nodes may be freed: recovery would find the checkpoint's still
            // there (and their blocks past a hole made later), so this inode's fsync
            // checkpoints.
            rw.fsync_track().needs_checkpoint(ino);
        }
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
        let log = data_log(i, self.t.segs);
        let from = size.div_ceil(B);
        // The last block rewritten, the nodes across the cut and the inode.
        let mut extra = need([0, 0, 0, 0, 4, 2], 0);
        extra.per_log[log as usize] += 1;
        self.ensure_room_as(extra, 0, true)?;
        self.commit();
        self.t.pages.remove_range(i.ino, from..u64::MAX);
        blocks::truncate_blocks(&self.t, i, from)?;
        drop_extent(i, size / B, u64::MAX);
        if size % B != 0 {
            self.zero_in_block(i, size / B, (size % B) as usize, BLOCK_SIZE, log)?;
        }
        Ok(())
    }

    /// Zeroes bytes `from..to` of file block `index` when it holds data (a dirty page
    /// or a written block); holes and reserved blocks read as zeros already.
    fn zero_in_block(&mut self, i: &InodeMut, index: u64, from: usize, to: usize, log: LogType) -> Result<()> {
        let dirty = self.t.pages.get(i.ino, index);
        let written = match self.t.locate(i, index)? {
            Some(l) => l.addr != NULL_ADDR && l.addr != uf2fs_format::consts::NEW_ADDR,
            None => false,
        };
        if dirty.is_none() && !written {
            return Ok(());
        }
        let mut b = self.t.read_block(i, index)?.unwrap_or_else(|| vec![0; BLOCK_SIZE]);
        b[from..to].fill(0);
        self.t.pages.put(i.ino, index, b, log);
        Ok(())
    }

    /// One chunk of fallocate: reserves the holes of blocks `first..end`; grows
    /// `i_size` to `size_to` (0: keep it), or marks a keep-size reservation past the
    /// end of file (`req_end`: the request's end byte).
    fn allocate_chunk(&mut self, ino: Ino, first: u64, end: u64, size_to: u64, req_end: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load_file(ino)?;
        if req_end > i.inode.max_file_bytes() {
            return Err(Error::FileTooBig(format!(
                "fallocate to byte {req_end} of inode {ino}; F2FS files end at {}",
                i.inode.max_file_bytes()
            )));
        }
        let log = data_log(&i, self.t.segs);
        let view = inline::converted_view(&i);
        let plan = blocks::plan_range(&self.t, &view, first, end)?;
        let block0 = u64::from(inline::conversion_makes_block(&i));
        let extra = range_need(&plan, log, block0, block0);
        self.ensure_room(extra, (plan.new_direct + plan.new_indirect) as usize)?;
        self.commit();
        inline::convert(&mut self.t, &mut i, log)?;
        blocks::reserve_range(&mut self.t, &mut i, first, end)?;
        if size_to > i.inode.size {
            i.inode.size = size_to;
        } else if size_to == 0 && req_end > i.inode.size {
            i.inode.advise |= FADVISE_KEEP_SIZE_BIT;
        }
        touch(&mut i);
        self.t.store_inode(i)
    }

    /// Starts a punch of bytes `offset..end`: converts an inline file, zeroes the
    /// partial blocks at both ends, and returns the whole blocks still to clear
    /// (`None`: the range starts at or past the end of file, nothing to do).
    fn punch_start(&mut self, ino: Ino, offset: u64, end: u64) -> Result<Option<(u64, u64)>> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        // Direct nodes may be freed: recovery would find the checkpoint's still there
        // (and their blocks past a hole made later), so this inode's fsync checkpoints.
        rw.fsync_track().needs_checkpoint(ino);
        let mut i = self.load_file(ino)?;
        if offset >= i.inode.size {
            return Ok(None);
        }
        let end = end.min(i.inode.max_file_bytes());
        let log = data_log(&i, self.t.segs);
        let block0 = u64::from(inline::conversion_makes_block(&i));
        let mut extra = need([0, 0, 0, 0, 3, 2], block0);
        extra.per_log[log as usize] += 2 + block0;
        self.ensure_room_as(extra, 0, true)?;
        self.commit();
        inline::convert(&mut self.t, &mut i, log)?;
        let (first, last) = (offset.div_ceil(B), end / B);
        let (head, tail) = (offset / B, end / B);
        if head == tail {
            self.zero_in_block(&i, head, (offset % B) as usize, (end % B) as usize, log)?;
        } else {
            if offset % B != 0 {
                self.zero_in_block(&i, head, (offset % B) as usize, BLOCK_SIZE, log)?;
            }
            if end % B != 0 {
                self.zero_in_block(&i, tail, 0, (end % B) as usize, log)?;
            }
        }
        drop_extent(&mut i, head, end.div_ceil(B));
        touch(&mut i);
        self.t.store_inode(i)?;
        Ok((first < last).then_some((first, last)))
    }

    /// Starts a zero range of bytes `offset..end`: converts an inline file and writes
    /// zeros over the parts of the partial blocks at both ends the range covers (as
    /// F2FS's `fill_zero`, which allocates a hole's block); returns the whole blocks
    /// still to zero (possibly none).
    fn zero_start(&mut self, ino: Ino, offset: u64, end: u64) -> Result<(u64, u64)> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        // Direct nodes may be freed: recovery would find the checkpoint's still there
        // (and their blocks past a hole made later), so this inode's fsync checkpoints.
        rw.fsync_track().needs_checkpoint(ino);
        let mut i = self.load_file(ino)?;
        if end > i.inode.max_file_bytes() {
            return Err(Error::FileTooBig(format!(
                "fallocate to byte {end} of inode {ino}; F2FS files end at {}",
                i.inode.max_file_bytes()
            )));
        }
        let (head, tail) = (offset / B, end / B);
        let (off_head, off_tail) = ((offset % B) as usize, (end % B) as usize);
        // The partial blocks: (index, from, to).
        let mut parts = Vec::new();
        if head == tail {
            parts.push((head, off_head, off_tail));
        } else {
            if off_head != 0 {
                parts.push((head, off_head, BLOCK_SIZE));
            }
            if off_tail != 0 {
                parts.push((tail, 0, off_tail));
            }
        }
        let log = data_log(&i, self.t.segs);
        let view = inline::converted_view(&i);
        let block0 = u64::from(inline::conversion_makes_block(&i));
        let mut extra = need([0, 0, 0, 0, 1, 0], block0);
        extra.per_log[log as usize] += block0;
        let mut nids = 0;
        for &(index, _, _) in &parts {
            let plan = blocks::plan_range(&self.t, &view, index, index + 1)?;
            extra = extra.plus(&range_need(&plan, log, 1, 0));
            nids += (plan.new_direct + plan.new_indirect) as usize;
        }
        self.ensure_room(extra, nids)?;
        self.commit();
        inline::convert(&mut self.t, &mut i, log)?;
        for (index, from, to) in parts {
            blocks::reserve_range(&mut self.t, &mut i, index, index + 1)?;
            let mut b = self.t.read_block(&i, index)?.unwrap_or_else(|| vec![0; BLOCK_SIZE]);
            b[from..to].fill(0);
            self.t.pages.put(ino, index, b, log);
        }
        drop_extent(&mut i, head, end.div_ceil(B));
        self.t.store_inode(i)?;
        let first = offset.div_ceil(B);
        Ok((first, tail.max(first)))
    }

    /// One chunk of a zero range, as F2FS's `f2fs_do_zero_range`: every block of
    /// `first..end` becomes a reservation (`NEW_ADDR`): written blocks are freed,
    /// holes reserved, dirty pages dropped.
    fn zero_chunk(&mut self, ino: Ino, first: u64, end: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        // Direct nodes may be freed: recovery would find the checkpoint's still there
        // (and their blocks past a hole made later), so this inode's fsync checkpoints.
        rw.fsync_track().needs_checkpoint(ino);
        let mut i = self.load_file(ino)?;
        let log = data_log(&i, self.t.segs);
        let plan = blocks::plan_range(&self.t, &i, first, end)?;
        // Every block ends up reserved: the written ones too (their old blocks are
        // free only after the next checkpoint).
        let extra = range_need(&plan, log, 0, (end - first) - plan.holes);
        self.ensure_room(extra, (plan.new_direct + plan.new_indirect) as usize)?;
        self.commit();
        self.t.pages.remove_range(ino, first..end);
        let dropped = blocks::clear_range(&self.t, &mut i, first, end)?;
        i.inode.blocks = i.inode.blocks.saturating_sub(dropped);
        blocks::reserve_range(&mut self.t, &mut i, first, end)?;
        drop_extent(&mut i, first, end);
        self.t.store_inode(i)
    }

    /// Ends a zero range of bytes up to `end`: `i_size` grows to `end`, or with
    /// `keep_size` the inode is marked as holding reservations past its end; mtime and
    /// ctime become now.
    fn zero_finish(&mut self, ino: Ino, end: u64, keep_size: bool) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load_file(ino)?;
        self.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
        self.commit();
        if end > i.inode.size {
            if keep_size {
                i.inode.advise |= FADVISE_KEEP_SIZE_BIT;
            } else {
                i.inode.size = end;
            }
        }
        touch(&mut i);
        self.t.store_inode(i)
    }

    /// One chunk of a punch: the addresses of blocks `first..end` dropped (their
    /// nodes stay), dirty pages there gone.
    fn punch_chunk(&mut self, ino: Ino, first: u64, end: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        // Direct nodes may be freed: recovery would find the checkpoint's still there
        // (and their blocks past a hole made later), so this inode's fsync checkpoints.
        rw.fsync_track().needs_checkpoint(ino);
        let mut i = self.load_file(ino)?;
        let dnodes = (end - first).div_ceil(blocks::addrs_per_dnode(&i)) + 1;
        self.ensure_room_as(need([0, 0, 0, 0, 1 + dnodes, 2], 0), 0, true)?;
        self.commit();
        self.t.pages.remove_range(ino, first..end);
        let dropped = blocks::clear_range(&self.t, &mut i, first, end)?;
        i.inode.blocks = i.inode.blocks.saturating_sub(dropped);
        self.t.store_inode(i)
    }
}

#[cfg(test)]
mod tests;
