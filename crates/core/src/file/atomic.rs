//! Atomic writes (F2FS's `F2FS_IOC_START_ATOMIC_WRITE`, `START_ATOMIC_REPLACE`,
//! `COMMIT_ATOMIC_WRITE`, `ABORT_ATOMIC_WRITE`): a file's writes between the start and
//! the commit become durable all together or not at all, across a crash.
//!
//! Linux 6.x stages the writes of an atomic file in a COW inode (an orphan the
//! original's page cache writes back to); the commit moves the COW inode's block
//! addresses into the original and fsyncs it with only the last node carrying the
//! fsync mark, so recovery replays all of the commit or none of it. uf2fs stages the
//! writes in memory, whole blocks in an [`AtomicWrite`] (the caller, the FUSE adapter,
//! keeps one per file and reads through it); [`Fs::atomic_commit`] then applies every
//! staged block, the size and (for a replace) the holes in **one** operation: `cp_lock`
//! is held shared from its first change to its last, so no checkpoint sees a part of
//! the commit. Then the commit is an ordinary [`Fs::fsync`]: uf2fs's fsync already puts
//! the fsync mark on the inode block alone, written last, so a power cut during it
//! leaves none of the commit's nodes replayable; and where fsync checkpoints instead,
//! the checkpoint holds the whole commit (it writes every dirty page and node under
//! `cp_lock` exclusively). An abort drops the staged blocks: nothing of them reached
//! the file.

use super::{data_log, drop_extent, range_need, touch};
use crate::ops::need;
use crate::{Error, Fs, Ino, Result};
use std::collections::BTreeMap;

/// 4 KiB blocks an atomic write may stage (64 MiB; 4096 blocks of a 16 KiB-block
/// volume): the staged data is held in memory until the commit, and the commit is one
/// operation.
pub const ATOMIC_MAX_BLOCKS: usize = 16384;

/// Bytes an atomic write may stage.
const ATOMIC_MAX_BYTES: u64 = ATOMIC_MAX_BLOCKS as u64 * 4096;

/// The staged state of a file under an atomic write: the blocks written since the
/// start (whole blocks, read-modify-written from the file, or from zeros for a
/// replace) and the file's size as the writes left it.
#[derive(Debug, Clone)]
pub struct AtomicWrite {
    blocks: BTreeMap<u64, Vec<u8>>,
    size: u64,
    replace: bool,
    /// The staging unit: the volume's block size.
    block: u64,
}

impl AtomicWrite {
    /// The file's size as its writes left it.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether this is an atomic replace (the file's old data is not kept).
    pub fn is_replace(&self) -> bool {
        self.replace
    }

    /// Blocks staged.
    pub fn staged_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Reads bytes at `offset` into `buf` as a reader of the file sees them: the staged
    /// blocks over `base` (the committed file's bytes at `offset`, `base_len` of them
    /// read; zeros for a replace). Returns the bytes read, short at the staged size.
    pub fn read(&self, offset: u64, buf: &mut [u8], base_len: usize) -> usize {
        let end = (offset + buf.len() as u64).min(self.size);
        if offset >= end {
            return 0;
        }
        let n = (end - offset) as usize;
        let b = self.block;
        if self.replace {
            buf[..n].fill(0);
        } else if base_len < n {
            buf[base_len..n].fill(0);
        }
        for (&index, block) in self.blocks.range(offset / b..end.div_ceil(b)) {
            let start = index * b;
            let (lo, hi) = (offset.max(start), end.min(start + b));
            buf[(lo - offset) as usize..(hi - offset) as usize]
                .copy_from_slice(&block[(lo - start) as usize..(hi - start) as usize]);
        }
        n
    }
}

impl Fs {
    /// Starts an atomic write on regular file `ino` (`replace`: the commit replaces
    /// the whole file, as `F2FS_IOC_START_ATOMIC_REPLACE`, which starts from an empty
    /// file). Nothing changes on the volume until [`Fs::atomic_commit`].
    pub fn atomic_start(&self, ino: Ino, replace: bool) -> Result<AtomicWrite> {
        self.rw()?.check_failed()?;
        let st = self.stat(ino)?;
        if st.kind != crate::FileKind::File {
            return Err(Error::Invalid(format!("inode {ino} is not a regular file")));
        }
        let i = self.inode(ino)?;
        if i.inode.is_compressed() {
            // As Linux's `f2fs_disable_compressed_file`: a compressed file without
            // blocks loses its compression and takes the atomic write; one with blocks
            // is EINVAL.
            drop(i);
            let mut op = self.begin_op()?;
            let r = op.disable_compression(ino);
            op.end(r)?;
            return self.atomic_start(ino, replace);
        }
        if i.inode.is_pinned() {
            // A pinned file is updated in place: a commit could not be all or nothing.
            return Err(Error::Invalid(format!("atomic write to pinned file {ino}")));
        }
        drop(i);
        Ok(AtomicWrite {
            blocks: BTreeMap::new(),
            size: if replace { 0 } else { st.size },
            replace,
            block: self.block_bytes(),
        })
    }

    /// Stages `data` at byte `offset` of `ino` in `aw` (nothing reaches the file);
    /// partial blocks are completed from the file's committed bytes. Returns the bytes
    /// staged; [`Error::NoSpace`] past 64 MiB staged ([`ATOMIC_MAX_BLOCKS`] 4 KiB
    /// blocks), [`Error::FileTooBig`] past the largest F2FS file.
    pub fn atomic_stage_write(&self, ino: Ino, aw: &mut AtomicWrite, offset: u64, data: &[u8]) -> Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or_else(|| Error::FileTooBig(format!("write at byte {offset}")))?;
        let max = self.inode(ino)?.inode.max_file_bytes();
        if end > max {
            return Err(Error::FileTooBig(format!(
                "atomic write to byte {end} of inode {ino}; F2FS files end at {max}"
            )));
        }
        let b = aw.block;
        let (first, last) = (offset / b, end.div_ceil(b));
        let new = (first..last).filter(|i| !aw.blocks.contains_key(i)).count();
        let max = (ATOMIC_MAX_BYTES / b) as usize;
        if aw.blocks.len() + new > max {
            return Err(Error::NoSpace(format!(
                "an atomic write stages at most {max} blocks ({} MiB) in memory",
                ATOMIC_MAX_BYTES >> 20
            )));
        }
        for index in first..last {
            let start = index * b;
            let (lo, hi) = (offset.max(start), end.min(start + b));
            if !aw.blocks.contains_key(&index) {
                let mut block = vec![0u8; b as usize];
                if !aw.replace && hi - lo < b && start < aw.size {
                    let got = self.read(ino, start, &mut block)?;
                    block[got..].fill(0);
                    // Bytes past the staged size read as zeros (a shrink staged).
                    let keep = (aw.size - start).min(b) as usize;
                    block[keep..].fill(0);
                }
                aw.blocks.insert(index, block);
            }
            let block = aw.blocks.get_mut(&index).expect("inserted above");
            block[(lo - start) as usize..(hi - start) as usize]
                .copy_from_slice(&data[(lo - offset) as usize..(hi - offset) as usize]);
        }
        aw.size = aw.size.max(end);
        Ok(data.len())
    }

    /// Stages a new size of `ino` in `aw` (`truncate(2)` of a file under an atomic
    /// write): staged blocks past it go, the rest of the last partial block reads as
    /// zeros.
    pub fn atomic_stage_truncate(&self, ino: Ino, aw: &mut AtomicWrite, size: u64) -> Result<()> {
        let b = aw.block;
        if size < aw.size {
            let _ = aw.blocks.split_off(&size.div_ceil(b));
            if size % b != 0 {
                let index = size / b;
                if !aw.blocks.contains_key(&index) {
                    // Stage the partial block so that its tail reads as zeros.
                    let mut block = vec![0u8; b as usize];
                    if !aw.replace {
                        let got = self.read(ino, index * b, &mut block)?;
                        block[got..].fill(0);
                    }
                    aw.blocks.insert(index, block);
                }
                let block = aw.blocks.get_mut(&index).expect("present");
                block[(size % b) as usize..].fill(0);
            }
        }
        aw.size = size;
        Ok(())
    }

    /// Commits atomic write `aw` to `ino` (see the module notes): the staged blocks,
    /// size and holes applied in one operation, then [`Fs::fsync`]. On success they
    /// are durable together; a power cut before that leaves the file as it was.
    pub fn atomic_commit(&self, ino: Ino, aw: &AtomicWrite) -> Result<()> {
        self.with_room(|fs| {
            let mut op = fs.begin_op()?;
            let r = op.atomic_apply(ino, aw);
            op.end(r)
        })?;
        let rw = self.rw()?;
        rw.count_user_blocks(aw.blocks.len() as u64);
        self.fsync(ino, false)
    }
}

/// Runs of consecutive indices of `blocks`: `(first, end)`.
fn runs(blocks: &BTreeMap<u64, Vec<u8>>) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &i in blocks.keys() {
        match out.last_mut() {
            Some((_, end)) if *end == i => *end += 1,
            _ => out.push((i, i + 1)),
        }
    }
    out
}

/// The gaps of `runs` below `end`: `(first, end)`.
fn gaps(runs: &[(u64, u64)], end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for &(a, b) in runs {
        if a >= end {
            break;
        }
        if a > at {
            out.push((at, a));
        }
        at = b;
    }
    if at < end {
        out.push((at, end));
    }
    out
}

impl crate::ops::Op<'_> {
    /// [`Fs::atomic_commit`]'s operation: all of `aw` applied to `ino` after one room
    /// check.
    fn atomic_apply(&mut self, ino: Ino, aw: &AtomicWrite) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load_file(ino)?;
        let log = data_log(&i, self.t.segs);
        let old = i.inode.size;
        if aw.block != self.fs.block_bytes() {
            return Err(Error::Invalid(format!(
                "an atomic write staged in {}-byte blocks for a volume of {}-byte blocks",
                aw.block,
                self.fs.block_bytes()
            )));
        }
        let size_blocks = aw.size.div_ceil(aw.block);
        let view = super::inline::converted_view(&i);
        let runs = runs(&aw.blocks);
        let mut extra = need([0, 0, 0, 0, 1, 0], 0);
        let mut nids = 0usize;
        for &(first, end) in &runs {
            let plan = super::blocks::plan_range(&self.t, &view, first, end)?;
            let n = range_need(&plan, log, end - first, 0);
            extra = extra.plus(&n);
            nids += (plan.new_direct + plan.new_indirect) as usize;
        }
        let block0 = u64::from(super::inline::conversion_makes_block(&i));
        extra.per_log[log as usize] += block0;
        extra.new_blocks += block0;
        // A replace clears what is not staged; a shrink frees past the end: nodes
        // rewritten (or freed) across those ranges.
        let holes = if aw.replace {
            gaps(&runs, size_blocks)
        } else {
            Vec::new()
        };
        let per = super::blocks::addrs_per_dnode(&view);
        for &(first, end) in &holes {
            extra.per_log[crate::segment::LogType::WarmNode as usize] += 1 + (end - first).div_ceil(per);
        }
        extra.per_log[crate::segment::LogType::ColdNode as usize] += 2;
        self.ensure_room(extra, nids)?;
        self.commit();
        super::inline::convert(&mut self.t, &mut i, log)?;
        let mut freed = 0;
        if aw.size < old || aw.replace {
            // Nodes may be freed: recovery would find the checkpoint's still there, so
            // this inode's fsync checkpoints (all of the commit, atomically).
            rw.fsync_track().needs_checkpoint(ino);
            let from = size_blocks;
            self.t.pages.remove_range(ino, from..u64::MAX);
            // (`truncate_blocks` takes its blocks off `i_blocks` itself.)
            super::blocks::truncate_blocks(&self.t, &mut i, from)?;
            drop_extent(&mut i, from, u64::MAX);
        }
        for &(first, end) in &holes {
            self.t.pages.remove_range(ino, first..end);
            freed += super::blocks::clear_range(&self.t, &mut i, first, end)?;
            drop_extent(&mut i, first, end);
        }
        i.inode.blocks = i.inode.blocks.saturating_sub(freed);
        for &(first, end) in &runs {
            super::blocks::reserve_range(&mut self.t, &mut i, first, end)?;
            for index in first..end {
                self.t.pages.put(ino, index, aw.blocks[&index].clone(), log);
            }
            drop_extent(&mut i, first, end);
        }
        i.inode.size = aw.size;
        touch(&mut i);
        self.t.store_inode(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_gaps() {
        let mut m = BTreeMap::new();
        for i in [1u64, 2, 3, 7, 9, 10] {
            m.insert(i, Vec::new());
        }
        let r = runs(&m);
        assert_eq!(r, vec![(1, 4), (7, 8), (9, 11)]);
        assert_eq!(gaps(&r, 12), vec![(0, 1), (4, 7), (8, 9), (11, 12)]);
        assert_eq!(gaps(&r, 5), vec![(0, 1), (4, 5)]);
        assert_eq!(gaps(&[], 3), vec![(0, 3)]);
    }

    const BLOCK_SIZE: usize = 4096;
    const B: u64 = BLOCK_SIZE as u64;

    #[test]
    fn staged_reads_overlay_the_base() {
        let mut blocks = BTreeMap::new();
        blocks.insert(1u64, vec![7u8; BLOCK_SIZE]);
        let aw = AtomicWrite {
            blocks,
            size: 2 * B + 10,
            replace: false,
            block: B,
        };
        let mut buf = vec![1u8; 3 * BLOCK_SIZE];
        // The base had only 100 bytes there: the rest reads as zeros.
        let n = aw.read(0, &mut buf, 100);
        assert_eq!(n, 2 * BLOCK_SIZE + 10);
        assert!(buf[..100].iter().all(|&b| b == 1));
        assert!(buf[100..BLOCK_SIZE].iter().all(|&b| b == 0));
        assert!(buf[BLOCK_SIZE..2 * BLOCK_SIZE].iter().all(|&b| b == 7));
        assert_eq!(aw.read(3 * B, &mut buf, 0), 0);
    }
}

#[cfg(test)]
mod fs_tests {
    use crate::mkfs::{mkfs, MkfsOptions};
    use crate::Fs;

    /// A file made inline and checkpointed, then written only past its inode's block
    /// addresses (a direct node) and fsync'd, by a commit (`atomic`) or plain writes;
    /// then a crash: recovery brings the bytes back (it once skipped the direct node of
    /// a file inline at the checkpoint, the inode block coming after it).
    fn grows_out_of_its_inode(atomic: bool) {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("unit.img");
        let opts = MkfsOptions {
            size_bytes: Some(64 << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let fs = Fs::open_rw(&img, &[]).unwrap();
        let root = fs.root();
        let ino = fs.create(root, b"db", 0o644, 0, 0).unwrap().ino;
        fs.sync_fs().unwrap();
        let tail = 4_960_809u64 - 28_000;
        if atomic {
            let mut aw = fs.atomic_start(ino, false).unwrap();
            fs.atomic_stage_write(ino, &mut aw, tail, &[7; 28_000]).unwrap();
            fs.atomic_commit(ino, &aw).unwrap();
        } else {
            fs.write(ino, tail, &[7; 28_000]).unwrap();
            fs.fsync(ino, false).unwrap();
        }
        let check = |fs: &Fs, when: &str| {
            let mut buf = vec![0u8; 28_000];
            assert_eq!(fs.read(ino, tail, &mut buf).unwrap(), 28_000);
            assert_eq!(buf.iter().position(|&b| b != 7), None, "{when}");
            assert_eq!(fs.stat(ino).unwrap().size, tail + 28_000);
        };
        check(&fs, "before the crash");
        drop(fs);
        let fs = Fs::open_rw(&img, &[]).unwrap();
        check(&fs, "recovered");
    }

    #[test]
    fn a_commit_growing_out_of_the_inode_is_recovered() {
        grows_out_of_its_inode(true);
    }

    #[test]
    fn an_fsync_growing_out_of_the_inode_is_recovered() {
        grows_out_of_its_inode(false);
    }

    /// On a 16 KiB-block volume: writes staged across block boundaries and a staged
    /// shrink read through the staging, a commit recovered after a crash, and a second
    /// atomic write left uncommitted at the crash leaving nothing behind.
    #[test]
    fn atomic_writes_on_a_16k_volume() {
        const B: usize = 16384;
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("blk16.img");
        let opts = MkfsOptions {
            size_bytes: Some(256 << 20),
            block_size: B as u32,
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let fs = Fs::open_rw(&img, &[]).unwrap();
        let ino = fs.create(fs.root(), b"db", 0o644, 0, 0).unwrap().ino;
        let mut want: Vec<u8> = (0..5 * B + 300).map(|i| (i % 253) as u8).collect();
        fs.write(ino, 0, &want).unwrap();
        fs.sync_fs().unwrap();
        let mut aw = fs.atomic_start(ino, false).unwrap();
        for (off, len, v) in [(B - 5, 10, 1u8), (3 * B + 100, 2 * B, 2), (9 * B + 7, 20, 3)] {
            fs.atomic_stage_write(ino, &mut aw, off as u64, &vec![v; len]).unwrap();
            if want.len() < off + len {
                want.resize(off + len, 0);
            }
            want[off..off + len].fill(v);
        }
        fs.atomic_stage_truncate(ino, &mut aw, (9 * B + 17) as u64).unwrap();
        want.truncate(9 * B + 17);
        let mut staged = vec![0u8; want.len() + B];
        let base = fs.read(ino, 0, &mut staged).unwrap();
        let n = aw.read(0, &mut staged, base);
        assert!(n == want.len() && staged[..n] == want[..], "read through the staging");
        let mut file = vec![0u8; 5 * B + 300];
        assert_eq!(
            fs.read(ino, 0, &mut file).unwrap(),
            5 * B + 300,
            "nothing reached the file"
        );
        fs.atomic_commit(ino, &aw).unwrap();
        let mut uncommitted = fs.atomic_start(ino, true).unwrap();
        fs.atomic_stage_write(ino, &mut uncommitted, 0, &[9; 100]).unwrap();
        drop(fs);
        let fs = Fs::open_rw(&img, &[]).unwrap();
        let mut back = vec![0u8; want.len() + B];
        let n = fs.read(ino, 0, &mut back).unwrap();
        assert!(n == want.len() && back[..n] == want[..], "the commit after recovery");
    }
}
