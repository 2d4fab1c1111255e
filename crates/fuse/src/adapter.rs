//! `fuser::Filesystem` on top of `uf2fs_core::Fs`: every request is one or two core calls
//! and a reply. Node ids go through [`InoMap`], errors through [`crate::errors`].

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BsdFileFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation,
    INodeNo, KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
    WriteFlags,
};
use uf2fs_core::{DirEntry, Fs, Ino};

use crate::attr::{access_allowed, file_attr, file_type, placeholder_attr};
use crate::dir_handles::{DirHandles, DirSnapshot, OPEN_DIRS_MAX};
use crate::errors::OrErrno;
use crate::inode_map::InoMap;
use crate::{kernel, read_buf, xattr};

/// How long the kernel may cache attributes and names. The image does not change under a
/// read-only mount, so this only bounds staleness if someone rewrites it anyway.
pub(crate) const TTL: Duration = Duration::from_secs(60);

/// Open flags that would modify the file.
fn open_allowed(flags: OpenFlags) -> Result<(), Errno> {
    let write = flags.0 & libc::O_ACCMODE != libc::O_RDONLY;
    if write || flags.0 & libc::O_TRUNC != 0 {
        Err(Errno::EROFS)
    } else {
        Ok(())
    }
}

/// The FUSE file system: the core `Fs` plus the adapter's own small state.
pub(crate) struct F2fsFuse {
    /// The file system being served.
    pub(crate) fs: Fs,
    /// Core inode numbers <-> FUSE node ids.
    pub(crate) inos: InoMap,
    /// Open directory streams.
    pub(crate) dirs: DirHandles,
}

impl F2fsFuse {
    /// Serve `fs`.
    pub(crate) fn new(fs: Fs) -> F2fsFuse {
        let inos = InoMap::new(fs.root());
        F2fsFuse {
            fs,
            inos,
            dirs: DirHandles::new(OPEN_DIRS_MAX),
        }
    }

    /// Attributes and generation of core inode `ino`.
    fn attr(&self, ino: Ino) -> Result<(FileAttr, Generation), Errno> {
        let stat = self.fs.stat(ino).or_errno()?;
        let attr = file_attr(self.inos.to_fuse(ino), &stat);
        Ok((attr, Generation(u64::from(stat.generation))))
    }

    /// Look `name` up in `parent`: `Ok(None)` when it does not exist.
    fn lookup_entry(&self, parent: INodeNo, name: &OsStr) -> Result<Option<(FileAttr, Generation)>, Errno> {
        let dir = self.inos.to_core(parent)?;
        match self.fs.lookup(dir, name.as_bytes()) {
            Ok(ino) => self.attr(ino).map(Some),
            Err(uf2fs_core::Error::NotFound(_)) => Ok(None),
            Err(err) => Err(crate::errors::errno(&err)),
        }
    }

    /// Snapshot directory `node` into a new directory handle.
    fn open_dir(&self, node: INodeNo) -> Result<FileHandle, Errno> {
        let dir = self.inos.to_core(node)?;
        let entries = self.fs.read_dir(dir).or_errno()?;
        let parent = self.fs.lookup(dir, b"..").or_errno()?;
        self.dirs.insert(DirSnapshot::new(dir, parent, entries))
    }

    /// Fill `reply` with the entries of handle `fh` from `offset` on.
    fn fill_dir(&self, fh: FileHandle, offset: u64, reply: &mut ReplyDirectory) -> Result<(), Errno> {
        let snapshot = self.dirs.get(fh)?;
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
    fn fill_dir_plus(&self, fh: FileHandle, offset: u64, reply: &mut ReplyDirectoryPlus) -> Result<(), Errno> {
        let snapshot = self.dirs.get(fh)?;
        for (next, entry) in snapshot.entries_from(offset) {
            let (attr, generation, ttl) = self.entry_attr(entry);
            let name = OsStr::from_bytes(&entry.name);
            if reply.add(attr.ino, next, name, &ttl, &attr, generation) {
                break;
            }
        }
        Ok(())
    }

    /// Attributes for a readdirplus entry, with the TTL they may be cached for.
    fn entry_attr(&self, entry: &DirEntry) -> (FileAttr, Generation, Duration) {
        match self.attr(entry.ino) {
            Ok((attr, generation)) => (attr, generation, TTL),
            Err(_) => {
                let attr = placeholder_attr(self.inos.to_fuse(entry.ino), entry.kind);
                (attr, Generation(0), Duration::ZERO)
            }
        }
    }

    /// Serve a READ of `size` bytes at `offset`.
    fn read_data(&self, node: INodeNo, offset: u64, size: u32, reply: ReplyData) {
        let ino = match self.inos.to_core(node) {
            Ok(ino) => ino,
            Err(errno) => return reply.error(errno),
        };
        read_buf::with_buffer(size as usize, |buf| match self.fs.read(ino, offset, buf).or_errno() {
            Ok(len) => reply.data(&buf[..len]),
            Err(errno) => reply.error(errno),
        });
    }

    /// `access(2)`: write is never allowed; read and execute by mode bits.
    fn check_access(&self, req: &Request, node: INodeNo, mask: AccessFlags) -> Result<(), Errno> {
        let ino = self.inos.to_core(node)?;
        let stat = self.fs.stat(ino).or_errno()?;
        if mask.contains(AccessFlags::W_OK) {
            return Err(Errno::EROFS);
        }
        if access_allowed(&stat, req.uid(), req.gid(), mask) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// Extended attribute `name` of `node`.
    fn xattr_value(&self, node: INodeNo, name: &OsStr) -> Result<Vec<u8>, Errno> {
        let ino = self.inos.to_core(node)?;
        self.fs
            .get_xattr(ino, name.as_bytes())
            .or_errno()?
            .ok_or(Errno::NO_XATTR)
    }

    /// NUL-separated names of the extended attributes of `node`.
    fn xattr_names(&self, node: INodeNo) -> Result<Vec<u8>, Errno> {
        let ino = self.inos.to_core(node)?;
        Ok(xattr::name_list(&self.fs.list_xattrs(ino).or_errno()?))
    }
}

/// Reply `result` to a request whose success answer is `ok`.
fn reply_empty(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(errno) => reply.error(errno),
    }
}

/// Read operations call the core; every modifying operation replies `EROFS` (fuser's
/// defaults would reply `ENOSYS`, which tells callers the operation does not exist).
impl Filesystem for F2fsFuse {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        kernel::configure(config);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lookup_entry(parent, name) {
            Ok(Some((attr, generation))) => reply.entry(&TTL, &attr, generation),
            // Node id 0 is a negative entry: the kernel caches the absence for TTL.
            Ok(None) => reply.entry(&TTL, &negative_attr(), Generation(0)),
            Err(errno) => reply.error(errno),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.inos.to_core(ino).and_then(|ino| self.attr(ino)) {
            Ok((attr, _)) => reply.attr(&TTL, &attr),
            Err(errno) => reply.error(errno),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let target = self.inos.to_core(ino).and_then(|ino| self.fs.read_link(ino).or_errno());
        match target {
            Ok(target) => reply.data(&target),
            Err(errno) => reply.error(errno),
        }
    }

    fn open(&self, _req: &Request, _ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match open_allowed(flags) {
            // The image cannot change under us: keep cached pages across opens.
            Ok(()) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            Err(errno) => reply.error(errno),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.read_data(ino, offset, size, reply);
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.open_dir(ino) {
            Ok(fh) => reply.opened(fh, FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR),
            Err(errno) => reply.error(errno),
        }
    }

    fn readdir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        match self.fill_dir(fh, offset, &mut reply) {
            Ok(()) => reply.ok(),
            Err(errno) => reply.error(errno),
        }
    }

    fn readdirplus(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        match self.fill_dir_plus(fh, offset, &mut reply) {
            Ok(()) => reply.ok(),
            Err(errno) => reply.error(errno),
        }
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.dirs.remove(fh);
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self.fs.statfs().or_errno() {
            Ok(s) => reply.statfs(
                s.blocks,
                s.blocks_free,
                s.blocks_avail,
                s.files,
                s.files_free,
                s.block_size,
                s.name_max,
                s.block_size,
            ),
            Err(errno) => reply.error(errno),
        }
    }

    fn getxattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        match self.xattr_value(ino, name) {
            Ok(value) => xattr::send(reply, &value, size),
            Err(errno) => reply.error(errno),
        }
    }

    fn listxattr(&self, _req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        match self.xattr_names(ino) {
            Ok(names) => xattr::send(reply, &names, size),
            Err(errno) => reply.error(errno),
        }
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        reply_empty(reply, self.check_access(req, ino, mask));
    }
    // ---- Modifying operations: the mount is read-only. ----

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mknod(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        reply.error(Errno::EROFS);
    }

    fn mkdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, _mode: u32, _umask: u32, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn unlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(&self, _req: &Request, _parent: INodeNo, _name: &OsStr, _target: &Path, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn rename(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _newparent: INodeNo,
        _newname: &OsStr,
        _flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(&self, _req: &Request, _ino: INodeNo, _newparent: INodeNo, _newname: &OsStr, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }

    fn create(
        &self,
        _req: &Request,
        _parent: INodeNo,
        _name: &OsStr,
        _mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn copy_file_range(
        &self,
        _req: &Request,
        _ino_in: INodeNo,
        _fh_in: FileHandle,
        _offset_in: u64,
        _ino_out: INodeNo,
        _fh_out: FileHandle,
        _offset_out: u64,
        _len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }
}

/// Attributes of a negative lookup reply (node id 0; only the TTL matters).
fn negative_attr() -> FileAttr {
    placeholder_attr(INodeNo(0), uf2fs_core::FileKind::File)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_read_opens_are_allowed() {
        assert_eq!(open_allowed(OpenFlags(libc::O_RDONLY)), Ok(()));
        assert_eq!(open_allowed(OpenFlags(libc::O_RDONLY | libc::O_NOATIME)), Ok(()));
        assert_eq!(open_allowed(OpenFlags(libc::O_WRONLY)), Err(Errno::EROFS));
        assert_eq!(open_allowed(OpenFlags(libc::O_RDWR)), Err(Errno::EROFS));
        assert_eq!(
            open_allowed(OpenFlags(libc::O_RDONLY | libc::O_TRUNC)),
            Err(Errno::EROFS)
        );
    }
}
