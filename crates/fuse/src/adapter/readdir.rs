//! Directory streams: a snapshot per open directory ([`crate::dir_handles`]), READDIR
//! and READDIRPLUS from it, and the listing's access time.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use fuser::{Errno, FileAttr, FileHandle, Generation, INodeNo, OpenFlags, ReplyDirectory, ReplyDirectoryPlus};
use uf2fs_core::{DirEntry, Ino};

use super::{F2fsFuse, TTL};
use crate::attr::{file_type, placeholder_attr};
use crate::dir_handles::DirSnapshot;
use crate::errors::OrErrno;

impl F2fsFuse {
    /// Snapshot directory `node` into a new directory handle, with a core handle on
    /// the directory (a directory removed while open stays until closed, as in Linux).
    pub(super) fn open_dir(&self, node: INodeNo) -> Result<FileHandle, Errno> {
        let dir = self.inos.to_core(node)?;
        self.take_handle(dir)?;
        let snapshot = || self.dirs.insert(self.snapshot(dir)?);
        snapshot().inspect_err(|_| self.give_back_handle(dir))
    }

    /// The listing of directory `dir` now.
    pub(super) fn snapshot(&self, dir: Ino) -> Result<DirSnapshot, Errno> {
        let entries = self.fs.read_dir(dir).or_errno()?;
        let parent = self.fs.lookup(dir, b"..").or_errno()?;
        Ok(DirSnapshot::new(dir, parent, entries))
    }

    /// The snapshot of handle `fh` to read from `offset`: taken again when the stream
    /// starts over (offset 0: the first read, or a `rewinddir`), so that names made
    /// since `opendir` are listed, as POSIX requires after a rewind.
    pub(super) fn listing(&self, fh: FileHandle, offset: u64) -> Result<std::sync::Arc<DirSnapshot>, Errno> {
        let snapshot = self.dirs.get(fh)?;
        if offset != 0 {
            return Ok(snapshot);
        }
        let fresh = self.snapshot(snapshot.dir())?;
        self.dirs.replace(fh, fresh)
    }

    /// Fill `reply` with the entries of handle `fh` from `offset` on.
    pub(super) fn fill_dir(&self, fh: FileHandle, offset: u64, reply: &mut ReplyDirectory) -> Result<(), Errno> {
        let snapshot = self.listing(fh, offset)?;
        for (next, entry) in snapshot.entries_from(offset) {
            let node = self.inos.to_fuse(entry.ino);
            let name = OsStr::from_bytes(&entry.name);
            if reply.add(node, next, file_type(entry.kind), name) {
                break;
            }
        }
        Ok(())
    }

    /// Fill `reply` with the entries of handle `fh` from `offset` on, with attributes.
    /// An entry whose inode cannot be read is still listed, with placeholder attributes
    /// the kernel must not cache, so that one bad inode does not hide its siblings.
    pub(super) fn fill_dir_plus(
        &self,
        fh: FileHandle,
        offset: u64,
        reply: &mut ReplyDirectoryPlus,
    ) -> Result<(), Errno> {
        let snapshot = self.listing(fh, offset)?;
        for (next, entry) in snapshot.entries_from(offset) {
            // The kernel counts a lookup for every entry but "." and "..".
            let counted = entry.name != b"." && entry.name != b"..";
            // The kernel makes a dentry of each entry: one renamed or removed since
            // the snapshot must not be handed out under its old name (the kernel
            // would move a directory's only dentry back there).
            if counted && self.fs.lookup(snapshot.dir(), &entry.name).ok() != Some(entry.ino) {
                continue;
            }
            let (attr, generation, ttl) = match self.entry_attr(entry, counted) {
                Some(a) => a,
                None => continue,
            };
            let name = OsStr::from_bytes(&entry.name);
            if reply.add(attr.ino, next, name, &ttl, &attr, generation) {
                if counted {
                    self.forget_lookups(entry.ino, 1);
                }
                break;
            }
        }
        Ok(())
    }

    /// Directory `node` was listed: its access time changes when the rule says so
    /// (before the reply, as for a read).
    pub(super) fn listed(&self, node: INodeNo) {
        if let Ok(dir) = self.inos.to_core(node) {
            self.accessed(dir, OpenFlags(0));
        }
    }

    /// Attributes for a readdirplus entry, with the TTL they may be cached for;
    /// `counted` when the reply counts as a lookup (held in the core, see
    /// [`crate::lookups`]). `None` for an inode removed since the directory was
    /// opened (Linux lists only what is there); an inode that cannot be read is still
    /// listed, with placeholder attributes the kernel must not cache, so that one bad
    /// inode does not hide its siblings.
    pub(super) fn entry_attr(&self, entry: &DirEntry, counted: bool) -> Option<(FileAttr, Generation, Duration)> {
        let attr = if counted {
            self.held_attr(entry.ino)
        } else {
            self.attr(entry.ino)
        };
        match attr {
            Ok((attr, generation)) => Some((attr, generation, TTL)),
            Err(Errno::ENOENT) => None,
            Err(_) => {
                if counted {
                    self.remember(entry.ino);
                }
                let attr = placeholder_attr(self.inos.to_fuse(entry.ino), entry.kind);
                Some((attr, Generation(0), Duration::ZERO))
            }
        }
    }
}
