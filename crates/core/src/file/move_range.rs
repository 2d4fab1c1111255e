//! `F2FS_IOC_MOVE_RANGE` inside the file system ([`Fs::move_range`]), as Linux's
//! `f2fs_move_file_range` does it: the data blocks of a block-aligned range of one
//! regular file become the blocks of a range of another (or of the same file, the
//! ranges apart), the source's range left a hole.
//!
//! Linux moves a block's address where the block was written since the last
//! checkpoint and copies the block's page otherwise (`__clone_blkaddrs`); either way
//! the target reads the source's bytes and the source reads zeros. uf2fs copies every
//! block through the page cache: the target's slot gets a dirty page (written out of
//! place by writeback), the source's slot is cleared. Where the source has a hole, the
//! target's block is left as it is (Linux's `full == false`); a reserved block
//! (`NEW_ADDR`) moves as a block of zeros. The target grows to cover the moved bytes
//! (`pos_out + len`, with `len` as the caller gave it, not rounded up); the source
//! keeps its size.
//!
//! The range goes in chunks of [`MOVE_CHUNK_BLOCKS`], each one operation holding both
//! inodes' locks (one set, taken at once: lock order 3), so each chunk is whole to
//! every reader, writer and checkpoint; between chunks other operations and a
//! checkpoint may run, as between the chunks of a write.

use super::{blocks, drop_extent, inline, range_need, touch};
use crate::ops::{need, Op};
use crate::{Error, Fs, Ino, Result};

/// Blocks one operation of a move copies at most (1 MiB of 4 KiB blocks), as a write.
pub(crate) const MOVE_CHUNK_BLOCKS: u64 = super::WRITE_CHUNK_BLOCKS;

/// What [`Op::move_start`] settled: the blocks to move and the target's size after.
struct MovePlan {
    /// First source block.
    src_first: u64,
    /// First target block.
    dst_first: u64,
    /// Blocks to move.
    blocks: u64,
    /// The target's size once the move is done (never smaller than before).
    dst_size: u64,
}

impl Fs {
    /// `F2FS_IOC_MOVE_RANGE` from regular file `src` at byte `pos_in` to regular file
    /// `dst` at byte `pos_out`, `len` bytes (0: to the source's end of file), with
    /// Linux's checks and errors (`f2fs_move_file_range`):
    ///
    /// - not regular files: [`Error::Invalid`] (EINVAL); encrypted, compressed or
    ///   pinned files: [`Error::Unsupported`] (EOPNOTSUPP);
    /// - the same file: the same position is nothing to do; ranges that overlap with
    ///   the target after the source, [`Error::Invalid`];
    /// - `pos_in + len` past the source's end of file or overflowing, or `pos_in`,
    ///   `pos_out` or the range's end not on a block boundary (a range ending at the
    ///   source's end of file is rounded up to its block): [`Error::Invalid`].
    ///
    /// The caller checks what belongs to open files (both opened for writing, the
    /// source also for reading, atomic writes) and that both are on this volume.
    /// Returns the bytes the target covers from `pos_out` (0 when nothing moved).
    pub fn move_range(&self, src: Ino, pos_in: u64, dst: Ino, pos_out: u64, len: u64) -> Result<u64> {
        self.rw()?.check_failed()?;
        if src == dst {
            if pos_in == pos_out {
                return Ok(0);
            }
            if pos_out > pos_in && pos_out < pos_in.saturating_add(len) {
                return Err(Error::Invalid(format!(
                    "move of {len} bytes within inode {src} from {pos_in} to {pos_out}: the ranges overlap"
                )));
            }
        }
        let plan = self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.move_start(src, pos_in, dst, pos_out, len);
            op.end(r)
        })?;
        let Some(plan) = plan else {
            return Ok(0);
        };
        let mut done = 0;
        while done < plan.blocks {
            let n = (plan.blocks - done).min(MOVE_CHUNK_BLOCKS);
            self.balance_dirty_pages(dst)?;
            self.with_room(|fs| {
                let mut op = fs.begin_op()?;
                let r = op.move_chunk(src, plan.src_first + done, dst, plan.dst_first + done, n, plan.dst_size);
                op.end(r)
            })?;
            done += n;
        }
        // A range of holes moves no block, but the target still covers it.
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.move_finish(src, dst, plan.dst_size);
            op.end(r)
        })?;
        Ok(plan.dst_size.saturating_sub(pos_out))
    }
}

impl Op<'_> {
    /// Inode `ino` when it is a regular file, else [`Error::Invalid`] (EINVAL, as
    /// Linux's `S_ISREG` check; a directory too).
    fn load_regular(&self, ino: Ino) -> Result<crate::inode::InodeMut> {
        let i = self.load(ino)?;
        if i.kind()? != crate::FileKind::File {
            return Err(Error::Invalid(format!(
                "inode {ino} is not a regular file: no range of it moves"
            )));
        }
        Ok(i)
    }

    /// The checks of [`Fs::move_range`] under both inodes' locks, then both files out
    /// of inline data; `None` when there is nothing to move.
    fn move_start(&mut self, src: Ino, pos_in: u64, dst: Ino, pos_out: u64, len: u64) -> Result<Option<MovePlan>> {
        let bsz = self.fs.block_bytes();
        let rw = self.rw;
        let _g = rw.lock_inodes(&[src, dst]);
        let mut s = self.load_regular(src)?;
        let mut d = if src == dst {
            None
        } else {
            Some(self.load_regular(dst)?)
        };
        for i in std::iter::once(&s).chain(d.as_ref()) {
            if i.inode.is_compressed() || i.inode.is_pinned() {
                return Err(Error::Unsupported {
                    feature: "move range",
                    detail: format!(
                        "inode {} is {}: Linux moves no range of it",
                        i.ino,
                        if i.inode.is_pinned() { "pinned" } else { "compressed" }
                    ),
                });
            }
        }
        let src_size = s.inode.size;
        let end = pos_in.checked_add(len).filter(|&e| e <= src_size).ok_or_else(|| {
            Error::Invalid(format!(
                "move of {len} bytes from {pos_in} of inode {src}: past its end of file ({src_size})"
            ))
        })?;
        let olen = if len == 0 { src_size - pos_in } else { len };
        let mut mlen = olen;
        if end == src_size || len == 0 {
            mlen = src_size.div_ceil(bsz) * bsz - pos_in;
        }
        if mlen == 0 {
            return Ok(None);
        }
        if src == dst && pos_out > pos_in && pos_out < pos_in + mlen {
            // Reachable with len 0 only (the whole rest of the file); Linux would
            // move the overlapping blocks one by one into each other.
            return Err(Error::Invalid(format!(
                "move of the rest of inode {src} from {pos_in} to {pos_out}: the ranges overlap"
            )));
        }
        let dst_old = d.as_ref().map_or(src_size, |d| d.inode.size);
        let dst_size = dst_old.max(
            pos_out
                .checked_add(olen)
                .ok_or_else(|| Error::Invalid(format!("move to byte {pos_out} + {olen} of inode {dst} overflows")))?,
        );
        if pos_in % bsz != 0 || (pos_in + mlen) % bsz != 0 || pos_out % bsz != 0 {
            return Err(Error::Invalid(format!(
                "move of {mlen} bytes from {pos_in} of inode {src} to {pos_out} of inode {dst}: \
                 not on {bsz}-byte block boundaries"
            )));
        }
        let max = d.as_ref().unwrap_or(&s).inode.max_file_bytes();
        if pos_out + mlen > max {
            return Err(Error::FileTooBig(format!(
                "move to byte {} of inode {dst}; F2FS files end at {max}",
                pos_out + mlen
            )));
        }
        let mut extra = need([0, 0, 0, 0, 2, 0], 0);
        for i in std::iter::once(&s).chain(d.as_ref()) {
            let block0 = u64::from(inline::conversion_makes_block(i));
            extra.per_log[super::data_log(i, self.t.segs) as usize] += block0;
            extra.new_blocks += block0;
        }
        self.ensure_room(extra, 0)?;
        self.commit();
        for i in std::iter::once(&mut s).chain(d.as_mut()) {
            let log = super::data_log(i, self.t.segs);
            inline::convert(&mut self.t, i, log)?;
        }
        self.t.store_inode(s)?;
        if let Some(d) = d {
            self.t.store_inode(d)?;
        }
        Ok(Some(MovePlan {
            src_first: pos_in / bsz,
            dst_first: pos_out / bsz,
            blocks: mlen / bsz,
            dst_size,
        }))
    }

    /// Moves `n` blocks from block `src_first` of `src` to block `dst_first` of `dst`:
    /// the source's blocks with data are read (dirty pages first), its slots cleared,
    /// and the data put as dirty pages of the target; the target's size grows with the
    /// blocks placed, up to `dst_size`.
    fn move_chunk(&mut self, src: Ino, src_first: u64, dst: Ino, dst_first: u64, n: u64, dst_size: u64) -> Result<()> {
        let bsz = self.fs.block_bytes();
        let rw = self.rw;
        let _g = rw.lock_inodes(&[src, dst]);
        let mut s = self.load_file(src)?;
        let mut d = if src == dst { None } else { Some(self.load_file(dst)?) };
        let mut data = Vec::new();
        for k in 0..n {
            if let Some(b) = self.t.read_block(&s, src_first + k)? {
                data.push((k, b));
            }
        }
        let (dst_lo, dst_hi) = (dst_first, dst_first + n);
        let target = d.as_ref().unwrap_or(&s);
        let log = self.file_log(target);
        let plan = blocks::plan_range(&self.t, target, dst_lo, dst_hi)?;
        let dnodes = n.div_ceil(blocks::addrs_per_dnode(&s)) + 1;
        let mut extra = range_need(&plan, log, data.len() as u64, 0);
        extra = extra.plus(&need([0, 0, 0, 0, 1 + dnodes, 2], 0));
        self.ensure_room(extra, (plan.new_direct + plan.new_indirect) as usize)?;
        self.commit();
        // The source first: with one file, a target block may be a source block of
        // this chunk (a move towards the start of the file).
        self.t.pages.remove_range(src, src_first..src_first + n);
        let dropped = blocks::clear_range(&self.t, &mut s, src_first, src_first + n)?;
        s.inode.blocks = s.inode.blocks.saturating_sub(dropped);
        drop_extent(&mut s, src_first, src_first + n);
        touch(&mut s);
        let t = d.as_mut().unwrap_or(&mut s);
        for (k, b) in data {
            let index = dst_first + k;
            blocks::reserve_range(&mut self.t, t, index, index + 1)?;
            self.t.pages.put(t.ino, index, b, log);
            t.inode.size = t.inode.size.max(((index + 1) * bsz).min(dst_size));
        }
        drop_extent(t, dst_lo, dst_hi);
        touch(t);
        self.t.store_inode(s)?;
        if let Some(d) = d {
            self.t.store_inode(d)?;
        }
        self.write_back_if_over(dst)
    }

    /// The end of a move: the target's size `dst_size` (Linux sets it whether or not
    /// any block moved), both files' mtime and ctime now.
    fn move_finish(&mut self, src: Ino, dst: Ino, dst_size: u64) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[src, dst]);
        let mut s = self.load_file(src)?;
        let mut d = if src == dst { None } else { Some(self.load_file(dst)?) };
        self.ensure_room(need([0, 0, 0, 0, 2, 0], 0), 0)?;
        self.commit();
        touch(&mut s);
        let t = d.as_mut().unwrap_or(&mut s);
        t.inode.size = t.inode.size.max(dst_size);
        touch(t);
        self.t.store_inode(s)?;
        if let Some(d) = d {
            self.t.store_inode(d)?;
        }
        Ok(())
    }
}
