//! Removing names: unlink and rmdir. The last link of an inode gone, its blocks and
//! nodes are freed at once, unless it is open: then it becomes an orphan, freed at its
//! last release ([`crate::orphan`]).

use super::{check_name, dentry, Op};
use crate::inode::now;
use crate::{Error, Fs, Ino, Result};

impl Fs {
    /// Removes name `name` (not a directory) from `dir`; the inode goes when its last
    /// link does and no handle holds it ([`Error::NoSpace`] when it is held and the
    /// orphan list is full).
    pub fn unlink(&self, dir: Ino, name: &[u8]) -> Result<()> {
        check_name(name)?;
        if name == b"." || name == b".." {
            return Err(Error::IsDir(crate::error::show_name(name)));
        }
        let mut op = self.begin_op()?;
        let r = op.remove(dir, name, false);
        op.end(r)
    }

    /// Removes the empty directory `name` from `dir` ([`Error::NotEmpty`] otherwise); a
    /// directory still open becomes an orphan, as a file does.
    pub fn rmdir(&self, dir: Ino, name: &[u8]) -> Result<()> {
        check_name(name)?;
        match name {
            b"." => return Err(Error::Invalid("rmdir of \".\"".into())),
            b".." => return Err(Error::NotEmpty("\"..\"".into())),
            _ => {}
        }
        let mut op = self.begin_op()?;
        let r = op.remove(dir, name, true);
        op.end(r)
    }
}

impl Op<'_> {
    /// Unlink (`want_dir` false) or rmdir (true): the entry goes, then the link counts
    /// drop as F2FS's `f2fs_drop_nlink` drops them, then a last link frees the inode or,
    /// when it is open, makes it an orphan (its slot taken before any change, as
    /// F2FS's `f2fs_acquire_orphan_inode`).
    fn remove(&mut self, dir: Ino, name: &[u8], want_dir: bool) -> Result<()> {
        let (_g, child) = self.lock_entry(dir, name)?;
        let mut d = self.load_dir(dir)?;
        let e = dentry::find(&self.t, &mut d, name)?.ok_or_else(|| Error::NotFound(crate::error::show_name(name)))?;
        let mut c = self.load(child)?;
        let is_dir = c.is_dir();
        match (want_dir, is_dir) {
            (false, true) => return Err(Error::IsDir(crate::error::show_name(name))),
            (true, false) => return Err(Error::NotDir(crate::error::show_name(name))),
            _ => {}
        }
        if is_dir && !dentry::is_empty(&self.t, &mut c)? {
            return Err(Error::NotEmpty(crate::error::show_name(name)));
        }
        // The dentry block, the directory's inode and direct node, the child's inode.
        self.ensure_room_as(super::need([1, 0, 0, 3, 1, 0], 0), 0, true)?;
        let drop = if is_dir { 2 } else { 1 };
        let orphan = self.orphan_slot(child, c.inode.links.saturating_sub(drop))?;
        self.commit();
        // Its name and maybe its parent change: an fsync of it takes a checkpoint.
        self.rw.fsync_track().needs_checkpoint(child);
        dentry::remove(&mut self.t, &mut d, &e)?;
        let t = now();
        d.inode.mtime = t;
        d.inode.ctime = t;
        if is_dir {
            d.inode.links = d.inode.links.saturating_sub(1);
        }
        self.t.store_inode(d)?;
        c.inode.ctime = t;
        c.inode.links = c.inode.links.saturating_sub(1);
        if is_dir {
            c.inode.links = c.inode.links.saturating_sub(1);
            c.inode.size = 0;
        }
        if c.inode.links == 0 {
            self.drop_last_link(c, orphan)
        } else {
            self.t.store_inode(c)
        }
    }
}
