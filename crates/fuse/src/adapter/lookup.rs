//! Lookups and the entry replies that hand the kernel a node id, each counted as one
//! more lookup the kernel holds ([`crate::lookups`]), and LOOKUP of "." for file
//! handles.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use fuser::{Errno, FileAttr, Generation, INodeNo};
use uf2fs_core::{Ino, Stat};

use super::F2fsFuse;

impl F2fsFuse {
    /// Entry reply contents for `stat`, counted as one more lookup the kernel holds
    /// (see [`crate::lookups`]); only for replies that give the kernel a node id.
    pub(super) fn hand_out(&self, stat: &Stat) -> (FileAttr, Generation) {
        self.remember(stat.ino);
        self.entry(stat)
    }

    /// [`Self::attr`] of an inode about to be handed to the kernel, counted as a
    /// lookup (and held in the core) before it is read; an error takes the count back.
    pub(super) fn held_attr(&self, ino: Ino) -> Result<(FileAttr, Generation), Errno> {
        self.remember(ino);
        let attr = self.attr(ino);
        if attr.is_err() {
            self.forget_lookups(ino, 1);
        }
        attr
    }

    /// The kernel forgot `n` lookups of `ino`.
    pub(super) fn forget_lookups(&self, ino: Ino, n: u64) {
        if ino != self.fs.root() {
            self.lookups.forget(&self.fs, ino, n);
        }
    }

    /// One more lookup of `ino` handed to the kernel (the root is never counted).
    pub(super) fn remember(&self, ino: Ino) {
        if ino != self.fs.root() {
            self.lookups.remember(&self.fs, ino);
        }
    }

    /// Look `name` up in `parent`: `Ok(None)` when it does not exist.
    pub(super) fn lookup_entry(&self, parent: INodeNo, name: &OsStr) -> Result<Option<(FileAttr, Generation)>, Errno> {
        let dir = self.inos.to_core(parent)?;
        if name.as_bytes() == b"." {
            return self.lookup_self(dir).map(Some);
        }
        match self.fs.lookup(dir, name.as_bytes()) {
            Ok(ino) => match self.held_attr(ino) {
                // Freed between the lookup and the stat: gone, unless the name still
                // names it, which is an entry naming a free inode (damage).
                Err(Errno::ENOENT) if self.fs.lookup(dir, name.as_bytes()).ok() == Some(ino) => {
                    eprintln!(
                        "uf2fs: directory inode {dir}: entry {:?} names inode {ino}, which is not allocated",
                        uf2fs_core::show_name(name.as_bytes())
                    );
                    Err(Errno::from_i32(libc::EUCLEAN))
                }
                Err(Errno::ENOENT) => Ok(None),
                r => r.map(Some),
            },
            Err(uf2fs_core::Error::NotFound(_)) => Ok(None),
            Err(err) => Err(crate::errors::errno(&err)),
        }
    }

    /// LOOKUP of "." in node `ino`, whatever its type: how the kernel finds an inode
    /// by a file handle (`open_by_handle_at`, NFS export) once it has forgotten it
    /// (`fuse_get_dentry`). Node ids are inode numbers, so a handle stays good as long
    /// as its inode lives, across unmounts too; the kernel compares the generation. An
    /// id that names no inode (freed, or a node of another kind) is stale.
    pub(super) fn lookup_self(&self, ino: Ino) -> Result<(FileAttr, Generation), Errno> {
        match self.fs.stat(ino) {
            Ok(_) => self.held_attr(ino),
            Err(uf2fs_core::Error::NotFound(_) | uf2fs_core::Error::Corrupt { .. }) => Err(Errno::ESTALE),
            Err(err) => Err(crate::errors::errno(&err)),
        }
    }
}
