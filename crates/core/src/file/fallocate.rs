//! `fallocate(2)` (F2FS's `f2fs_fallocate`): allocate, keep size, punch hole and zero
//! range, each in chunks of one operation (see the module notes of [`crate::file`]).

use super::{blocks, data_log, drop_extent, inline, range_need, touch, ALLOC_CHUNK_BLOCKS, PUNCH_CHUNK_BLOCKS};
use crate::ops::{need, Op};
use crate::segment::LogType;
use crate::{Error, Fs, Ino, Result};
use uf2fs_format::node::FADVISE_KEEP_SIZE_BIT;

/// `fallocate` mode bit: do not change the file size (Linux's `FALLOC_FL_KEEP_SIZE`).
pub const FALLOC_FL_KEEP_SIZE: u32 = 0x01;
/// `fallocate` mode bit: deallocate the range; needs `KEEP_SIZE` (`FALLOC_FL_PUNCH_HOLE`).
pub const FALLOC_FL_PUNCH_HOLE: u32 = 0x02;
/// `fallocate` mode bit: make the range read as zeros, its blocks reserved
/// (`FALLOC_FL_ZERO_RANGE`); `KEEP_SIZE` may go with it.
pub const FALLOC_FL_ZERO_RANGE: u32 = 0x10;

/// Names of the Linux `fallocate` mode bits, for refusals.
const FALLOC_NAMES: [(u32, &str); 7] = [
    (FALLOC_FL_KEEP_SIZE, "KEEP_SIZE"),
    (FALLOC_FL_PUNCH_HOLE, "PUNCH_HOLE"),
    (0x04, "NO_HIDE_STALE"),
    (0x08, "COLLAPSE_RANGE"),
    (FALLOC_FL_ZERO_RANGE, "ZERO_RANGE"),
    (0x20, "INSERT_RANGE"),
    (0x40, "UNSHARE_RANGE"),
];

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
        if mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE) != 0 && self.inode(ino)?.inode.is_compressed() {
            // As Linux: compressed files take no punch or zero range (EOPNOTSUPP).
            return Err(Error::Unsupported {
                feature: "compression",
                detail: format!(
                    "fallocate mode {mode:#x} ({}) on compressed file {ino}",
                    mode_names(mode)
                ),
            });
        }
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

    /// fallocate modes 0 and `KEEP_SIZE` over bytes `offset..end`, in chunks.
    fn allocate(&self, ino: Ino, offset: u64, end: u64, keep_size: bool) -> Result<()> {
        let bsz = self.block_bytes();
        let (first, last) = (offset / bsz, end.div_ceil(bsz));
        let mut index = first;
        while index < last {
            let stop = last.min(index + ALLOC_CHUNK_BLOCKS);
            let size_to = if keep_size { 0 } else { end.min(stop * bsz) };
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
        let pinned = i.inode.is_pinned();
        let log = data_log(&i, self.t.segs);
        let view = inline::converted_view(&i);
        let plan = blocks::plan_range(&self.t, &view, first, end)?;
        let block0 = u64::from(inline::conversion_makes_block(&i));
        // A pinned file's blocks are allocated now, in the cold data log (Linux's
        // `CURSEG_COLD_DATA_PINNED` outside zoned devices); the reservations pay for them.
        let room_log = if pinned { LogType::ColdData } else { log };
        let data = if pinned { end - first + block0 } else { block0 };
        let extra = range_need(&plan, room_log, data, block0);
        self.ensure_room(extra, (plan.new_direct + plan.new_indirect) as usize)?;
        self.commit();
        inline::convert(&mut self.t, &mut i, log)?;
        blocks::reserve_range(&mut self.t, &mut i, first, end)?;
        if pinned {
            blocks::allocate_range(&mut self.t, &mut i, first, end, LogType::ColdData)?;
        }
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
        let bsz = self.fs.block_bytes();
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
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
        let (first, last) = (offset.div_ceil(bsz), end / bsz);
        let (head, tail) = (offset / bsz, end / bsz);
        if head == tail {
            self.zero_in_block(&i, head, (offset % bsz) as usize, (end % bsz) as usize, log)?;
        } else {
            if offset % bsz != 0 {
                self.zero_in_block(&i, head, (offset % bsz) as usize, bsz as usize, log)?;
            }
            if end % bsz != 0 {
                self.zero_in_block(&i, tail, 0, (end % bsz) as usize, log)?;
            }
        }
        drop_extent(&mut i, head, end.div_ceil(bsz));
        touch(&mut i);
        self.t.store_inode(i)?;
        Ok((first < last).then_some((first, last)))
    }

    /// Starts a zero range of bytes `offset..end`: converts an inline file and writes
    /// zeros over the parts of the partial blocks at both ends the range covers (as
    /// F2FS's `fill_zero`, which allocates a hole's block); returns the whole blocks
    /// still to zero (possibly none).
    fn zero_start(&mut self, ino: Ino, offset: u64, end: u64) -> Result<(u64, u64)> {
        let bsz = self.fs.block_bytes();
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load_file(ino)?;
        if end > i.inode.max_file_bytes() {
            return Err(Error::FileTooBig(format!(
                "fallocate to byte {end} of inode {ino}; F2FS files end at {}",
                i.inode.max_file_bytes()
            )));
        }
        let (head, tail) = (offset / bsz, end / bsz);
        let (off_head, off_tail) = ((offset % bsz) as usize, (end % bsz) as usize);
        // The partial blocks: (index, from, to).
        let mut parts = Vec::new();
        if head == tail {
            parts.push((head, off_head, off_tail));
        } else {
            if off_head != 0 {
                parts.push((head, off_head, bsz as usize));
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
            let mut b = self.t.read_block(&i, index)?.unwrap_or_else(|| vec![0; bsz as usize]);
            b[from..to].fill(0);
            self.t.pages.put(ino, index, b, log);
        }
        drop_extent(&mut i, head, end.div_ceil(bsz));
        self.t.store_inode(i)?;
        let first = offset.div_ceil(bsz);
        Ok((first, tail.max(first)))
    }

    /// One chunk of a zero range, as F2FS's `f2fs_do_zero_range`: every block of
    /// `first..end` becomes a reservation (`NEW_ADDR`): written blocks are freed,
    /// holes reserved, dirty pages dropped.
    fn zero_chunk(&mut self, ino: Ino, first: u64, end: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
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
