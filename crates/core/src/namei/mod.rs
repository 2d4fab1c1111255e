//! Namespace operations of a read-write file system: create, mkdir, mknod, symlink,
//! link, unlink, rmdir, rename, setattr (F2FS's namei.c), on top of the dentry code
//! ([`dentry`]), new inodes ([`newinode`]) and the node tree ([`crate::tree`]).
//!
//! Every operation runs as an [`Op`] ([`crate::ops`]): it holds `cp_lock` shared for its whole run and
//! the inodes it changes (see the lock order in lockrank.rs), checks everything that can
//! fail for a caller's reason (names, types, emptiness, room for its writes, node ids)
//! before it changes anything, then changes memory only: nothing reaches the device
//! before the next checkpoint. Should it fail after its first change (an I/O error,
//! say), the file system refuses every later operation and checkpoint, so the image
//! keeps its last checkpoint.

mod create;

pub use create::Creator;
pub(crate) mod dentry;
pub mod flags;
pub(crate) mod locks;
pub(crate) mod newinode;
mod remove;
mod rename;
mod setattr;
mod stamp;
pub use stamp::Stamp;
#[cfg(test)]
mod tests;

use crate::ops::{need, Op};

use crate::inode::InodeMut;
use crate::segment::SpaceNeed;
use crate::{Error, Ino, Result};
use uf2fs_format::consts::F2FS_NAME_LEN;

/// Node ids an operation that makes an inode takes before it changes anything: the
/// inode and a full path of new nodes in a growing directory.
const MAKE_NIDS: usize = 4;
/// Node ids an operation that adds a name takes ahead: a path of new nodes.
const INSERT_NIDS: usize = 3;

/// At most what adding a name to `dir` writes: two dentry blocks (an inline area
/// moved, then a block made), the directory's inode, and the nodes on the way to a
/// block past the inode's own addresses (indirect ones past the direct nodes).
fn insert_need(dir: &InodeMut) -> SpaceNeed {
    let g = dir.inode.geometry;
    let blocks = dir.inode.size.div_ceil(g.block_size() as u64) + 2;
    let in_inode = dir.inode.addrs_per_inode() as u64;
    let direct = in_inode + 2 * g.addrs_per_block() as u64;
    let dnodes = if blocks > in_inode { 3 } else { 0 };
    let indirect = if blocks > direct { 2 } else { 0 };
    need([2, 0, 0, 1 + dnodes, 0, indirect], 2 + dnodes + indirect)
}
/// Attempts at locking a directory and the inode one of its names points at, while
/// other operations keep changing that name.
const LOCK_ATTEMPTS_MAX: usize = 64;

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

impl<'a> Op<'a> {
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
                let _g = self.rw.lock_inodes(&[dir]);
                self.lookup_ino(dir, name)?
            };
            let g = self.rw.lock_inodes(&[dir, seen]);
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
        if crate::inode::now_pinned() {
            return 0;
        }
        self.rw.next_generation()
    }
}
