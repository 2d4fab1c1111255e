//! Immutable and append-only inodes (`chattr +i`, `chattr +a`), refused as Linux
//! refuses them on F2FS. There the VFS checks `S_IMMUTABLE` and `S_APPEND`, which F2FS
//! sets from `i_flags`; FUSE's attributes carry no such flags, so the kernel side of a
//! FUSE mount lets everything through and the adapter answers `EPERM` where the VFS (or
//! F2FS itself) would:
//!
//! | operation | immutable | append-only |
//! |---|---|---|
//! | open for writing (`may_open`) | refused | refused without `O_APPEND` |
//! | write, fallocate (`f2fs_write_checks`, `vfs_fallocate`) | refused | fallocate other than `KEEP_SIZE` refused |
//! | setattr (`may_setattr`, `f2fs_setattr`) | refused | mode, owner, explicit times and size refused |
//! | xattrs and ACLs (`xattr_permission`) | refused | refused |
//! | new name in the directory (`may_create`) | refused | allowed |
//! | name removed or renamed away (`may_delete`), of the inode or in the directory | refused | refused |
//! | hard link to the inode (`vfs_link`) | refused | refused |
//!
//! The flags themselves stay changeable (that is how they are cleared), by the owner
//! with `CAP_LINUX_IMMUTABLE`.

use fuser::{Errno, OpenFlags, TimeOrNow};
use uf2fs_core::flags::{FS_APPEND_FL, FS_IMMUTABLE_FL};
use uf2fs_core::{Ino, SetAttr};

use super::F2fsFuse;
use crate::errors::OrErrno;

/// Whether `flags` holds `FS_IMMUTABLE_FL`.
fn immutable(flags: u32) -> bool {
    flags & FS_IMMUTABLE_FL != 0
}

/// Whether `flags` holds `FS_IMMUTABLE_FL` or `FS_APPEND_FL`.
fn sealed(flags: u32) -> bool {
    flags & (FS_IMMUTABLE_FL | FS_APPEND_FL) != 0
}

/// `Err(EPERM)` when `refused`.
fn refuse_if(refused: bool) -> Result<(), Errno> {
    if refused {
        Err(Errno::EPERM)
    } else {
        Ok(())
    }
}

/// What a SETATTR asks for, as far as the flags care.
pub(crate) struct AttrChange<'a> {
    /// The attributes other than the size.
    pub(crate) attrs: &'a SetAttr,
    /// Explicit times (not `UTIME_NOW`), which only the owner may set.
    pub(crate) times_set: bool,
    /// A new size.
    pub(crate) size: bool,
}

impl AttrChange<'_> {
    /// Whether `atime` or `mtime` is an explicit time.
    pub(crate) fn explicit(atime: Option<TimeOrNow>, mtime: Option<TimeOrNow>) -> bool {
        [atime, mtime]
            .iter()
            .any(|t| matches!(t, Some(TimeOrNow::SpecificTime(_))))
    }
}

impl F2fsFuse {
    /// The `i_flags` of `ino`.
    fn inode_flags(&self, ino: Ino) -> Result<u32, Errno> {
        Ok(self.fs.stat(ino).or_errno()?.flags)
    }

    /// A name may be added to directory `dir` (create, mkdir, mknod, symlink, link,
    /// the target of a rename): not when it is immutable.
    pub(crate) fn may_add_name(&self, dir: Ino) -> Result<(), Errno> {
        refuse_if(immutable(self.inode_flags(dir)?))
    }

    /// Name `name` may leave directory `dir` (unlink, rmdir, either side of a rename
    /// that replaces or moves it): not when the directory or the inode it names is
    /// immutable or append-only. A name that is not there is left to the core's answer.
    pub(crate) fn may_remove_name(&self, dir: Ino, name: &[u8]) -> Result<(), Errno> {
        refuse_if(sealed(self.inode_flags(dir)?))?;
        match self.fs.lookup(dir, name) {
            Ok(ino) => refuse_if(sealed(self.inode_flags(ino)?)),
            Err(_) => Ok(()),
        }
    }

    /// Directory entry `name` of `dir` may move from `dir` to `new_dir`: a directory
    /// moving to another parent has its ".." rewritten, which its immutable flag
    /// forbids (`inode_permission(source, MAY_WRITE)` in `vfs_rename`).
    pub(crate) fn may_move(&self, dir: Ino, name: &[u8], new_dir: Ino) -> Result<(), Errno> {
        if dir == new_dir {
            return Ok(());
        }
        match self.fs.lookup(dir, name).and_then(|ino| self.fs.stat(ino)) {
            Ok(st) if st.kind == uf2fs_core::FileKind::Dir => refuse_if(immutable(st.flags)),
            _ => Ok(()),
        }
    }

    /// A rename of `name` in `dir` to `new_name` in `new_dir` (swapping both when
    /// `exchange`): the source
    /// leaves its directory; the target is replaced (or, for an exchange, leaves too),
    /// or added when there is none; directories moving to another parent change.
    pub(crate) fn may_rename(
        &self,
        dir: Ino,
        name: &[u8],
        new_dir: Ino,
        new_name: &[u8],
        exchange: bool,
    ) -> Result<(), Errno> {
        self.may_remove_name(dir, name)?;
        self.may_move(dir, name, new_dir)?;
        if self.fs.lookup(new_dir, new_name).is_ok() {
            self.may_remove_name(new_dir, new_name)?;
        } else {
            self.may_add_name(new_dir)?;
        }
        if exchange {
            self.may_move(new_dir, new_name, dir)?;
        }
        Ok(())
    }

    /// Inode `ino` may get another name: not when immutable or append-only.
    pub(crate) fn may_link(&self, ino: Ino) -> Result<(), Errno> {
        refuse_if(sealed(self.inode_flags(ino)?))
    }

    /// The data of `ino` may change by a write: not when immutable.
    pub(crate) fn may_write(&self, ino: Ino) -> Result<(), Errno> {
        refuse_if(immutable(self.inode_flags(ino)?))
    }

    /// `fallocate` of `mode` on `ino`: not when immutable; on an append-only file only
    /// plain allocation (`KEEP_SIZE` or nothing).
    pub(crate) fn may_fallocate(&self, ino: Ino, mode: u32) -> Result<(), Errno> {
        let flags = self.inode_flags(ino)?;
        let other_than_keep_size = mode & !uf2fs_core::FALLOC_FL_KEEP_SIZE != 0;
        refuse_if(immutable(flags) || (flags & FS_APPEND_FL != 0 && other_than_keep_size))
    }

    /// Extended attributes and ACLs of `ino` may change: not when immutable or
    /// append-only.
    pub(crate) fn may_change_xattr(&self, ino: Ino) -> Result<(), Errno> {
        refuse_if(sealed(self.inode_flags(ino)?))
    }

    /// A SETATTR of `ino`: nothing on an immutable inode; on an append-only one no
    /// mode, owner, explicit time or size (`touch` with the current time is allowed).
    pub(crate) fn may_setattr(&self, ino: Ino, change: &AttrChange) -> Result<(), Errno> {
        let flags = self.inode_flags(ino)?;
        if immutable(flags) {
            return Err(Errno::EPERM);
        }
        let a = change.attrs;
        let guarded = a.mode.is_some() || a.uid.is_some() || a.gid.is_some() || change.times_set || change.size;
        refuse_if(flags & FS_APPEND_FL != 0 && guarded)
    }

    /// An open of `ino` with `flags`: for writing (or truncating) not when immutable;
    /// when append-only, only with `O_APPEND` and without `O_TRUNC`.
    pub(crate) fn may_open(&self, ino: Ino, flags: OpenFlags) -> Result<(), Errno> {
        let writing = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
        let trunc = flags.0 & libc::O_TRUNC != 0;
        if !writing && !trunc {
            return Ok(());
        }
        let iflags = self.inode_flags(ino)?;
        let append = flags.0 & libc::O_APPEND != 0;
        refuse_if(immutable(iflags) || (iflags & FS_APPEND_FL != 0 && (trunc || !append)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_told_apart() {
        assert!(immutable(FS_IMMUTABLE_FL));
        assert!(!immutable(FS_APPEND_FL));
        assert!(sealed(FS_APPEND_FL) && sealed(FS_IMMUTABLE_FL));
        assert!(!sealed(0x80));
        assert_eq!(refuse_if(true), Err(Errno::EPERM));
        assert_eq!(refuse_if(false), Ok(()));
        let t = Some(TimeOrNow::SpecificTime(std::time::SystemTime::UNIX_EPOCH));
        assert!(AttrChange::explicit(t, None));
        assert!(!AttrChange::explicit(Some(TimeOrNow::Now), Some(TimeOrNow::Now)));
    }
}
