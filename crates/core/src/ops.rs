//! Operations of a read-write file system: what every change (namespace, file data,
//! extended attributes, orphans) runs as. An [`Op`]
//! - holds `cp_lock` shared for its whole run, so no checkpoint runs beside it (the
//!   kernel's `f2fs_lock_op`), after making room first (`Fs::balance_fs`);
//! - checks its room before its first change ([`Op::ensure_room`]): every pending write
//!   and its own fit, and the new blocks it counted are reserved at once
//!   ([`crate::tree::Tree::block_pool`]) so that no operation racing it takes them;
//! - carries the node tree writer ([`crate::tree::Tree`]) and the node ids taken ahead;
//! - fails the whole file system when it fails after its first change
//!   ([`Op::commit`], [`Op::end`]), or finds damage on the image, so that the image
//!   keeps its last checkpoint;
//! - writes the dirty nodes out at its end when they passed their bound.
//!
//! [`Fs::with_room`] is the retry every operation that can run out of space takes:
//! make room (a checkpoint of prefree sections, or foreground GC) and try again.
//! The namespace helpers of an operation (locking a directory entry, loading a
//! directory) are in [`crate::namei`]; file data in [`crate::file`].

use crate::checkpoint::write::CheckpointWriter;
use crate::fs::ReadWrite;
use crate::inode::InodeMut;
use crate::node::DIRTY_NODES_MAX;
use crate::pagecache::DIRTY_PAGES_MAX;
use crate::segment::SpaceNeed;
use crate::tree::Tree;
use crate::{Error, Fs, Ino, Result};
use uf2fs_format::consts::NULL_ADDR;

/// Blocks per log (hot, warm, cold data; hot, warm, cold node) and new blocks.
pub(crate) const fn need(per_log: [u64; 6], new_blocks: u64) -> SpaceNeed {
    SpaceNeed { per_log, new_blocks }
}

/// A running operation (namespace, file data, xattrs, orphans: see the module notes).
pub(crate) struct Op<'a> {
    pub(crate) fs: &'a Fs,
    pub(crate) rw: &'a ReadWrite,
    _cp: crate::lockrank::Ranked<std::sync::RwLockReadGuard<'a, CheckpointWriter>>,
    /// Footer version of node blocks written now (the last checkpoint's
    /// [`crate::checkpoint::CheckpointState::node_version`]).
    pub(crate) node_ver: u64,
    pub(crate) t: Tree<'a>,
    /// Set at the first change: a failure from then on fails the file system.
    changing: bool,
}

impl Fs {
    /// Starts an operation: the file system must be writable and not failed; too many
    /// dirty data blocks are first made durable by a checkpoint.
    pub(crate) fn begin_op(&self) -> Result<Op<'_>> {
        let rw = self.rw()?;
        rw.check_failed()?;
        if rw.pages().len() > DIRTY_PAGES_MAX {
            self.write_checkpoint()?;
        }
        self.balance_fs()?;
        let cp = rw.cp_shared();
        rw.check_failed()?;
        let node_ver = cp.last().node_version();
        Ok(Op {
            fs: self,
            rw,
            _cp: cp,
            node_ver,
            t: self.tree(rw),
            changing: false,
        })
    }
}

impl Drop for Op<'_> {
    /// Whatever way the operation ends, the node ids and blocks it took ahead and did
    /// not use go back.
    fn drop(&mut self) {
        self.t.release_pool();
    }
}

impl<'a> Op<'a> {
    /// From here on the operation changes memory.
    pub(crate) fn commit(&mut self) {
        self.changing = true;
    }

    /// Ends the operation with `r`: unused node ids go back; a failure after the first
    /// change fails the file system; too many dirty nodes are written out.
    pub(crate) fn end<T>(mut self, r: Result<T>) -> Result<T> {
        self.t.release_pool();
        if let Err(e) = &r {
            // uf2fs's own bug stops the volume even before the first change: its state
            // in memory cannot be trusted; so does damage found on the image
            // ([`Fs::stop_on_damage`]): nothing more is built on it.
            if self.changing || e.is_bug() || matches!(e, Error::Corrupt { .. }) {
                self.rw.fail(e);
            }
            return r;
        }
        if self.fs.nodes().dirty_node_count() > DIRTY_NODES_MAX {
            let fs = self.fs;
            let written = fs
                .nodes()
                .write_dirty_nodes(fs.device(), fs.superblock(), self.rw.seg_lock(), self.node_ver);
            if let Err(e) = written {
                self.rw.fail(&e);
                return Err(e);
            }
        }
        r
    }

    /// Fails with [`Error::NoSpace`] unless all pending writes and `extra` (at most
    /// what this operation writes) fit (see
    /// [`crate::segment::SegmentManager::check_room`]); then takes the `nids` node ids
    /// it may need.
    pub(crate) fn ensure_room(&mut self, extra: SpaceNeed, nids: usize) -> Result<()> {
        self.ensure_room_as(extra, nids, false)
    }

    /// [`Op::ensure_room`]; `freeing` lets an operation that frees space take the
    /// reserved sections, as every operation may under the kernel's writer model
    /// ([`crate::WriterModel::Kernel`]).
    pub(crate) fn ensure_room_as(&mut self, extra: SpaceNeed, nids: usize, freeing: bool) -> Result<()> {
        let need = crate::gc::pending_need(self.fs, self.rw);
        let into_reserve = freeing || self.rw.gc().kernel_writers();
        let mut segs = self.rw.segs();
        let need = need.plus(&extra);
        if into_reserve {
            segs.check_room_freeing(&need)?;
        } else {
            segs.check_room(&need)?;
        }
        // The new blocks are taken with the check, under the same lock: another
        // operation checking meanwhile sees them gone, and this one cannot run short
        // of them after its first change.
        segs.reserve_new_blocks(extra.new_blocks)?;
        drop(segs);
        self.t.hold_blocks(extra.new_blocks);
        self.t.take_nids(nids)
    }

    /// Loads inode `ino` for changing; [`Error::NotFound`] when it is not allocated.
    pub(crate) fn load(&self, ino: Ino) -> Result<InodeMut> {
        let e = self
            .fs
            .nodes()
            .nat_entry(self.fs.device(), ino)
            .map_err(|_| Error::NotFound(format!("inode {ino}")))?;
        if e.block_addr == NULL_ADDR || e.ino != ino {
            return Err(Error::NotFound(format!("inode {ino}")));
        }
        let i = self.t.load_inode(ino)?;
        check_writable_inode(&i)?;
        Ok(i)
    }
}

/// Refuses inodes uf2fs cannot change yet (encrypted, verity). Casefolded
/// directories are changed as Linux changes them ([`crate::casefold`]: names found and
/// added by folded name); one whose encoding uf2fs does not know is refused when a
/// name in it is looked up. Compressed files may be renamed, linked, removed and have
/// their attributes and xattrs changed; their data may not (see `Op::load_file`).
fn check_writable_inode(i: &InodeMut) -> Result<()> {
    let what = if i.inode.is_encrypted() {
        Some("encrypt")
    } else if i.inode.is_verity() {
        Some("verity")
    } else {
        None
    };
    match what {
        Some(feature) => Err(Error::Unsupported {
            feature,
            detail: format!("inode {} cannot be changed by uf2fs yet", i.ino),
        }),
        None => Ok(()),
    }
}

impl Fs {
    /// Runs `op` until it does not fail for lack of space, making room in between
    /// ([`Fs::reclaim_space`]) while that gains something, at most
    /// [`crate::gc::RECLAIM_TRIES`] times; then the last `NoSpace` stands.
    pub(crate) fn with_room<T>(&self, mut op: impl FnMut(&Fs) -> Result<T>) -> Result<T> {
        let mut tries = 0;
        loop {
            match op(self) {
                Err(Error::NoSpace(why)) if tries < crate::gc::RECLAIM_TRIES => {
                    tries += 1;
                    if !self.reclaim_space()? {
                        return Err(Error::NoSpace(why));
                    }
                }
                r => return r,
            }
        }
    }
}
