//! Namespace operations of a read-write file system: create, mkdir, mknod, symlink,
//! link, unlink, rmdir, rename, setattr (F2FS's namei.c), on top of the dentry code
//! ([`dentry`]), new inodes ([`newinode`]) and the node tree ([`crate::tree`]).
//!
//! Every operation runs as an [`Op`]: it holds `cp_lock` shared for its whole run and
//! the inodes it changes (see the lock order in fs.rs), checks everything that can
//! fail for a caller's reason (names, types, emptiness, room for its writes, node ids)
//! before it changes anything, then changes memory only: nothing reaches the device
//! before the next checkpoint. Should it fail after its first change (an I/O error,
//! say), the file system refuses every later operation and checkpoint, so the image
//! keeps its last checkpoint.

mod create;
pub(crate) mod dentry;
pub(crate) mod locks;
pub(crate) mod newinode;
mod remove;
mod rename;
mod setattr;
#[cfg(test)]
mod tests;

use crate::checkpoint::write::CheckpointWriter;
use crate::fs::ReadWrite;
use crate::inode::InodeMut;
use crate::node::DIRTY_NODES_MAX;
use crate::pagecache::DIRTY_PAGES_MAX;
use crate::segment::SpaceNeed;
use crate::tree::Tree;
use crate::{Error, Fs, Ino, Result};
use std::sync::atomic::Ordering;
use std::sync::{PoisonError, RwLockReadGuard};
use uf2fs_format::consts::{F2FS_NAME_LEN, NULL_ADDR};

/// Node ids an operation that makes an inode takes before it changes anything: the
/// inode and a full path of new nodes in a growing directory.
const MAKE_NIDS: usize = 4;
/// Node ids an operation that adds a name takes ahead: a path of new nodes.
const INSERT_NIDS: usize = 3;

/// Blocks per log (hot, warm, cold data; hot, warm, cold node) and new blocks.
pub(crate) const fn need(per_log: [u64; 6], new_blocks: u64) -> SpaceNeed {
    SpaceNeed { per_log, new_blocks }
}

/// At most what adding a name to `dir` writes: two dentry blocks (an inline area
/// moved, then a block made), the directory's inode, and the nodes on the way to a
/// block past the inode's own addresses (indirect ones past the direct nodes).
fn insert_need(dir: &InodeMut) -> SpaceNeed {
    let blocks = dir.inode.size.div_ceil(uf2fs_format::consts::BLOCK_SIZE as u64) + 2;
    let in_inode = dir.inode.addrs_per_inode() as u64;
    let direct = in_inode + 2 * uf2fs_format::consts::ADDRS_PER_BLOCK as u64;
    let dnodes = if blocks > in_inode { 3 } else { 0 };
    let indirect = if blocks > direct { 2 } else { 0 };
    need([2, 0, 0, 1 + dnodes, 0, indirect], 2 + dnodes + indirect)
}
/// Attempts at locking a directory and the inode one of its names points at, while
/// other operations keep changing that name.
const LOCK_ATTEMPTS_MAX: usize = 64;

/// A running namespace operation.
pub(crate) struct Op<'a> {
    pub(crate) fs: &'a Fs,
    pub(crate) rw: &'a ReadWrite,
    _cp: RwLockReadGuard<'a, CheckpointWriter>,
    /// Version of the checkpoint that will make this operation durable.
    pub(crate) cp_ver_next: u64,
    pub(crate) t: Tree<'a>,
    /// Set at the first change: a failure from then on fails the file system.
    changing: bool,
}

/// Checks a name for a new entry: not empty, no '/' or NUL, at most 255 bytes, and not
/// "." or ".." (which always exist).
fn check_name(name: &[u8]) -> Result<()> {
    let shown = || crate::error::show_name(name);
    if name.is_empty() {
        return Err(Error::NotFound("empty name".into()));
    }
    if name.len() > F2FS_NAME_LEN {
        return Err(Error::NameTooLong(shown()));
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Err(Error::Invalid(format!("name {:?} contains '/' or NUL", shown())));
    }
    Ok(())
}

fn is_dots(name: &[u8]) -> bool {
    name == b"." || name == b".."
}

impl Fs {
    /// Starts an operation: the file system must be writable and not failed; too many
    /// dirty data blocks are first made durable by a checkpoint.
    pub(crate) fn begin_op(&self) -> Result<Op<'_>> {
        let rw = self.rw()?;
        rw.check_failed()?;
        if rw.pages.len() > DIRTY_PAGES_MAX {
            self.write_checkpoint()?;
        }
        self.balance_fs()?;
        let cp = rw.cp_lock.read().unwrap_or_else(PoisonError::into_inner);
        rw.check_failed()?;
        let cp_ver_next = cp.last().cp.checkpoint_ver.wrapping_add(1);
        Ok(Op {
            fs: self,
            rw,
            _cp: cp,
            cp_ver_next,
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
            if self.changing {
                self.rw.fail(e);
            }
            return r;
        }
        if self.fs.nodes().dirty_node_count() > DIRTY_NODES_MAX {
            let fs = self.fs;
            let written = fs
                .nodes()
                .write_dirty_nodes(fs.device(), fs.superblock(), &self.rw.segs, self.cp_ver_next);
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
    /// reserved sections.
    pub(crate) fn ensure_room_as(&mut self, extra: SpaceNeed, nids: usize, freeing: bool) -> Result<()> {
        let need = crate::gc::pending_need(self.fs, self.rw);
        let mut segs = self.rw.segs.lock().unwrap_or_else(PoisonError::into_inner);
        let need = need.plus(&extra);
        if freeing {
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

    /// Loads directory `ino` for changing ([`Error::NotDir`] if it is not one).
    fn load_dir(&self, ino: Ino) -> Result<InodeMut> {
        let d = self.load(ino)?;
        if !d.is_dir() {
            return Err(Error::NotDir(format!("inode {ino}")));
        }
        if d.inode.links == 0 {
            return Err(Error::NotFound(format!("directory inode {ino} was removed")));
        }
        Ok(d)
    }

    /// Locks `dir` and the inode its entry `name` names, looking the name up again
    /// under the locks until it is stable. Returns the guard and that inode.
    fn lock_entry(&self, dir: Ino, name: &[u8]) -> Result<(locks::InodeGuard<'a>, Ino)> {
        for _ in 0..LOCK_ATTEMPTS_MAX {
            let seen = {
                let _g = self.rw.locks.lock(&[dir]);
                self.lookup_ino(dir, name)?
            };
            let g = self.rw.locks.lock(&[dir, seen]);
            if self.lookup_ino(dir, name)? == seen {
                return Ok((g, seen));
            }
        }
        Err(Error::Invalid(format!(
            "{:?} kept changing while being locked",
            crate::error::show_name(name)
        )))
    }

    /// The inode entry `name` of `dir` names ([`Error::NotFound`] if none).
    fn lookup_ino(&self, dir: Ino, name: &[u8]) -> Result<Ino> {
        let mut d = self.load_dir(dir)?;
        dentry::find(&self.t, &mut d, name)?
            .map(|e| e.ino)
            .ok_or_else(|| Error::NotFound(crate::error::show_name(name)))
    }

    /// A fresh inode generation.
    fn next_generation(&self) -> u32 {
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let old = self
            .rw
            .generation_rng
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |x| Some(step(x)))
            .unwrap_or(1);
        (step(old) >> 16) as u32
    }
}

/// Refuses inodes uf2fs cannot change yet (encrypted, compressed, casefolded, verity).
fn check_writable_inode(i: &InodeMut) -> Result<()> {
    let what = if i.inode.is_encrypted() {
        Some("encrypt")
    } else if i.inode.is_compressed() {
        Some("compression")
    } else if i.inode.is_casefold() {
        Some("casefold")
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
