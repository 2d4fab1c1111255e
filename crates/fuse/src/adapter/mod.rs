//! `fuser::Filesystem` on top of `uf2fs_core::Fs`: every request is one or two core calls
//! and a reply. Node ids go through [`InoMap`], errors through [`crate::errors`].
//!
//! This file holds [`F2fsFuse`] and the dispatch; what the requests share lives in its
//! submodules, which extend `F2fsFuse`: [`lookup`] (the kernel's lookup counts and
//! entry replies), [`readdir`] (directory streams), [`requests`] (the helpers of the
//! other requests), [`atime`] (access times) and [`protect`] (immutable and
//! append-only). Time conversions are [`crate::times`]'.

pub(crate) mod atime;
mod lookup;
mod protect;
mod readdir;
mod requests;
#[cfg(test)]
mod stalls;

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BsdFileFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, Filesystem, FopenFlags, Generation,
    INodeNo, IoctlFlags, KernelConfig, LockOwner, Notifier, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyLseek, ReplyOpen, ReplyStatfs,
    ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use uf2fs_core::{Creator, Fs, Ino, Seek, SetAttr, Stat};

use crate::atomic::AtomicFiles;
use crate::attr::{file_attr, placeholder_attr};
use crate::dir_handles::{DirHandles, OPEN_DIRS_MAX};
use crate::errors::OrErrno;
use crate::inode_map::InoMap;
use crate::lookups::Lookups;
use crate::open_files::OpenFiles;
use crate::times::{timestamp, timestamp_or_now};
use crate::{caller, kernel, xattr};
use protect::AttrChange;

/// Most bytes one COPY_FILE_RANGE copies (its reply counts in 32 bits).
const COPY_MAX: u64 = 1 << 30;

/// How long the kernel may cache attributes and names. Every change goes through the
/// kernel (which updates or drops what it cached), so this only bounds staleness if
/// someone rewrites the image behind the mount.
pub(crate) const TTL: Duration = Duration::from_secs(60);

/// Whether a read-only mount may open with `flags`: not for writing or truncating.
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
    /// The file system being served; [`crate::mount`] keeps a second reference to
    /// unmount it once the session ends.
    pub(crate) fs: Arc<Fs>,
    /// Whether the mount is read-write (modifying requests call the core).
    pub(crate) writable: bool,
    /// Whether to ask the kernel for its writeback cache at FUSE_INIT
    /// ([`crate::MountOptions::writeback_cache`]).
    pub(crate) writeback_cache: bool,
    /// Core inode numbers <-> FUSE node ids.
    pub(crate) inos: InoMap,
    /// Open directory streams.
    pub(crate) dirs: DirHandles,
    /// Handles taken in the core by opens, creates and opendirs of a read-write mount
    /// (see [`crate::open_files`]).
    pub(crate) files: OpenFiles,
    /// The kernel's lookup counts and the core handles they keep (see
    /// [`crate::lookups`]).
    pub(crate) lookups: Lookups,
    /// The session's channel for telling the kernel of changes it did not ask for (set
    /// once the session exists: [`F2fsFuse::notifier_slot`]).
    notifier: Arc<OnceLock<Notifier>>,
    /// When reads and listings update access times (changed by remounts).
    pub(crate) atime: Arc<atime::LivePolicy>,
    /// Files under an F2FS atomic write (see [`crate::atomic`]).
    pub(crate) atomic: AtomicFiles,
    /// The mount's device (`st_dev` of its files, as major and minor), set once the
    /// session exists ([`F2fsFuse::device_slot`]): `F2FS_IOC_MOVE_RANGE` checks that
    /// the caller's target descriptor is on this volume.
    pub(crate) device: Arc<OnceLock<(u32, u32)>>,
}

impl F2fsFuse {
    /// Serve `fs`, read-write when `writable`.
    pub(crate) fn new(fs: Arc<Fs>, writable: bool) -> F2fsFuse {
        let inos = InoMap::new(fs.root());
        F2fsFuse {
            fs,
            writable,
            writeback_cache: false,
            inos,
            dirs: DirHandles::new(OPEN_DIRS_MAX),
            files: OpenFiles::default(),
            lookups: Lookups::default(),
            notifier: Arc::default(),
            atime: Arc::default(),
            atomic: AtomicFiles::default(),
            device: Arc::default(),
        }
    }

    /// Where [`crate::mount`] puts the mount's device, once the session exists.
    pub(crate) fn device_slot(&self) -> Arc<OnceLock<(u32, u32)>> {
        Arc::clone(&self.device)
    }

    /// Where [`crate::mount`] puts the session's notifier, once the session exists.
    pub(crate) fn notifier_slot(&self) -> Arc<OnceLock<Notifier>> {
        Arc::clone(&self.notifier)
    }

    /// `Ok` on a read-write mount, `EROFS` on a read-only one.
    pub(crate) fn writable(&self) -> Result<(), Errno> {
        if self.writable {
            Ok(())
        } else {
            Err(Errno::EROFS)
        }
    }

    /// Entry reply contents for a core `stat` (an unlinked open file, an orphan in the
    /// core, shows no links).
    fn entry(&self, stat: &Stat) -> (FileAttr, Generation) {
        let attr = file_attr(self.inos.to_fuse(stat.ino), stat);
        (attr, Generation(u64::from(stat.generation)))
    }

    /// Takes a core handle on `ino` for a FUSE open, create or opendir (read-write
    /// mounts only: nothing can be unlinked under a read-only one).
    fn take_handle(&self, ino: Ino) -> Result<(), Errno> {
        if self.writable {
            self.fs.open_file(ino).or_errno()?;
            self.files.opened(ino);
        }
        Ok(())
    }

    /// Gives back a handle [`Self::take_handle`] took; the last one of an unlinked
    /// inode frees it in the core.
    fn give_back_handle(&self, ino: Ino) {
        if self.files.closed(ino) {
            // The last release of a file under an atomic write aborts it, as Linux's
            // `f2fs_release_file` does for its last writer.
            if !self.files.is_open(ino) && self.atomic.take(ino).is_some() {
                self.data_changed(self.inos.to_fuse(ino));
            }
            if let Err(err) = self.fs.release_file(ino) {
                eprintln!("uf2fs: releasing inode {ino}: {err}");
            }
        }
    }

    /// Has the kernel drop the attributes of `node` it cached, for a change it did not
    /// ask for. Attributes only (a negative offset): the kernel may hold the pages of a
    /// write in progress locked. A failure leaves the cache stale until its TTL.
    pub(crate) fn attrs_changed(&self, node: INodeNo) {
        if let Some(notifier) = self.notifier.get() {
            let _ = notifier.inval_inode(node, -1, 0);
        }
    }

    /// Has the kernel drop the pages and attributes of `node` it cached (the staged
    /// data of an aborted atomic write). A failure leaves the cache stale until its TTL.
    pub(crate) fn data_changed(&self, node: INodeNo) {
        if let Some(notifier) = self.notifier.get() {
            let _ = notifier.inval_inode(node, 0, 0);
        }
    }

    /// Attributes and generation of core inode `ino` (the staged size of a file under
    /// an atomic write).
    fn attr(&self, ino: Ino) -> Result<(FileAttr, Generation), Errno> {
        let mut stat = self.fs.stat(ino).or_errno()?;
        if let Some(size) = self.atomic.with(ino, |aw| aw.size()) {
            stat.size = size;
        }
        Ok(self.entry(&stat))
    }
}

/// Reply `result` to a request whose success answer is `ok`.
fn reply_empty(reply: ReplyEmpty, result: Result<(), Errno>) {
    match result {
        Ok(()) => reply.ok(),
        Err(errno) => reply.error(errno),
    }
}

/// Read operations call the core; modifying operations call it on a read-write mount and
/// reply `EROFS` on a read-only one (fuser's defaults would reply `ENOSYS`, which tells
/// callers the operation does not exist).
impl Filesystem for F2fsFuse {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        kernel::configure(config, self.writeback_cache);
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

    // BATCH_FORGET: fuser's default calls this for each node.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        if let Ok(ino) = self.inos.to_core(ino) {
            self.forget_lookups(ino, nlookup);
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

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let allowed = if self.writable {
            self.inos.to_core(ino).and_then(|ino| {
                self.may_open(ino, flags)?;
                self.take_handle(ino)?;
                Ok(self.keep_cache(ino))
            })
        } else {
            open_allowed(flags).map(|()| true)
        };
        match allowed {
            // The image changes only through this mount: keep cached pages across opens,
            // unless the next read must come here to update the access time.
            Ok(true) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            Ok(false) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(errno) => reply.error(errno),
        }
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Ok(ino) = self.inos.to_core(ino) {
            self.give_back_handle(ino);
        }
        reply.ok();
    }

    /// The session ends: handles the kernel did not release (it normally releases
    /// every one first) go back to the core, which frees the unlinked inodes they held.
    fn destroy(&mut self) {
        let counted = self.lookups.take_held().into_iter().map(|ino| (ino, 1));
        for (ino, handles) in self.files.take_all().into_iter().chain(counted) {
            for _ in 0..handles {
                if let Err(err) = self.fs.release_file(ino) {
                    eprintln!("uf2fs: releasing inode {ino} at the end of the session: {err}");
                }
            }
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.read_data(ino, offset, size, flags, reply);
    }

    /// close(2) does not make data durable on Linux F2FS either: nothing to do. Data
    /// reaches the image on fsync, on the core's own checkpoints and at unmount.
    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        reply_empty(reply, self.sync(ino, datasync));
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let keep = self.inos.to_core(ino).map_or(true, |ino| self.keep_cache(ino));
        match self.open_dir(ino) {
            // The listing may be cached across opens, unless the next listing must come
            // here to update the access time.
            Ok(fh) if keep => reply.opened(fh, FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR),
            Ok(fh) => reply.opened(fh, FopenFlags::FOPEN_CACHE_DIR),
            Err(errno) => reply.error(errno),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        match self.fill_dir(fh, offset, &mut reply) {
            Ok(()) => {
                self.listed(ino);
                reply.ok();
            }
            Err(errno) => reply.error(errno),
        }
    }

    fn readdirplus(&self, _req: &Request, ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        match self.fill_dir_plus(fh, offset, &mut reply) {
            Ok(()) => {
                self.listed(ino);
                reply.ok();
            }
            Err(errno) => reply.error(errno),
        }
    }

    fn releasedir(&self, _req: &Request, ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.dirs.remove(fh);
        if let Ok(ino) = self.inos.to_core(ino) {
            self.give_back_handle(ino);
        }
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, datasync: bool, reply: ReplyEmpty) {
        reply_empty(reply, self.sync(ino, datasync));
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
    // ---- Modifying operations: `EROFS` on a read-only mount, the core otherwise. ----

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // Under the writeback cache the kernel keeps the times itself and sends an
        // mtime as an explicit time in two cases that are no caller's explicit utimes:
        // writing the inode's cached times back (`fuse_flush_times`: mtime and ctime
        // with the handle of a file open for writing, nothing else), and a caller's
        // `touch` (UTIME_NOW), sent as the current time, the same as the ctime the VFS
        // set beside it. A caller's explicit time never carries a handle (the VFS sets
        // no `ATTR_FILE` for utimes) and is not the ctime of the same change, so `touch
        // -m -d DATE` on an append-only file is refused as on Linux, while appends and
        // `touch` work.
        let flush =
            fh.is_some() && atime.is_none() && mode.is_none() && uid.is_none() && gid.is_none() && size.is_none();
        let now_as_time = matches!((mtime, ctime), (Some(TimeOrNow::SpecificTime(m)), Some(c)) if m == c);
        let kernel_mtime = self.writeback_cache && (flush || now_as_time);
        let times_set = AttrChange::explicit(atime, if kernel_mtime { None } else { mtime });
        let attrs = SetAttr {
            mode,
            uid,
            gid,
            size: None,
            atime: atime.map(timestamp_or_now),
            mtime: mtime.map(timestamp_or_now),
            ctime: ctime.map(timestamp),
        };
        let change = AttrChange {
            attrs: &attrs,
            times_set,
            size: size.is_some(),
        };
        match self.set_attr(req, ino, size, &change) {
            Ok(attr) => reply.attr(&TTL, &attr),
            Err(errno) => reply.error(errno),
        }
    }

    fn mknod(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, rdev: u32, reply: ReplyEntry) {
        let made = self.make(parent, |fs, dir| {
            fs.mknod_as(dir, name.as_bytes(), mode, split_rdev(rdev), creator(req, umask))
        });
        reply_entry(reply, made);
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let made = self.make(parent, |fs, dir| {
            fs.mkdir_as(dir, name.as_bytes(), mode & 0o7777, creator(req, umask))
        });
        reply_entry(reply, made);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply_empty(reply, self.remove_file(parent, name));
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.writable().and_then(|()| {
            let dir = self.inos.to_core(parent)?;
            self.may_remove_name(dir, name.as_bytes())?;
            self.fs.rmdir(dir, name.as_bytes()).or_errno()
        });
        reply_empty(reply, result);
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let made = self.make(parent, |fs, dir| {
            fs.symlink(
                dir,
                link_name.as_bytes(),
                target.as_os_str().as_bytes(),
                req.uid(),
                req.gid(),
            )
        });
        reply_entry(reply, made);
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let result = self.writable().and_then(|()| {
            let flags = rename_flags(flags)?;
            let src = self.inos.to_core(parent)?;
            let dst = self.inos.to_core(newparent)?;
            self.may_rename(
                src,
                name.as_bytes(),
                dst,
                newname.as_bytes(),
                flags & uf2fs_core::RENAME_EXCHANGE != 0,
            )?;
            // A whiteout is made by the caller (the umask plays no part: its mode is 0).
            self.fs
                .rename_as(src, name.as_bytes(), dst, newname.as_bytes(), flags, creator(req, 0))
                .or_errno()
        });
        reply_empty(reply, result);
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let made = self.writable().and_then(|()| {
            let ino = self.inos.to_core(ino)?;
            let dir = self.inos.to_core(newparent)?;
            self.may_link(ino)?;
            self.may_add_name(dir)?;
            let stat = self.fs.link(ino, dir, newname.as_bytes()).or_errno()?;
            Ok(self.hand_out(&stat))
        });
        reply_entry(reply, made);
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let written = self.writable().and_then(|()| {
            let node = ino;
            let ino = self.inos.to_core(node)?;
            self.may_write(ino)?;
            // The kernel says whether the writer lacks CAP_FSETID; pages written back
            // from its cache (FUSE_WRITE_CACHE) had their privileges settled at write(2).
            if !write_flags.contains(WriteFlags::FUSE_WRITE_CACHE) {
                let kill = write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID);
                self.drop_privs(req, node, ino, kill)?;
            }
            match self
                .atomic
                .with(ino, |aw| self.fs.atomic_stage_write(ino, aw, offset, data))
            {
                Some(staged) => staged.or_errno(),
                None => self.fs.write(ino, offset, data).or_errno(),
            }
        });
        match written {
            // A WRITE carries at most max_write (< 4 GiB) bytes.
            Ok(len) => reply.written(u32::try_from(len).unwrap_or(u32::MAX)),
            Err(errno) => reply.error(errno),
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let made = self.make(parent, |fs, dir| {
            let stat = fs.create_as(dir, name.as_bytes(), mode, creator(req, umask))?;
            fs.open_file(stat.ino)?;
            self.files.opened(stat.ino);
            Ok(stat)
        });
        let _ = flags;
        match made {
            Ok((attr, generation)) => {
                reply.created(&TTL, &attr, generation, FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE)
            }
            Err(errno) => reply.error(errno),
        }
    }

    /// Permission checks (who may write `trusted.*`, `user.*` only on files and
    /// directories, who may set an ACL) were the VFS's; the core applies F2FS's names
    /// and limits. An access ACL set by a caller outside the file's group clears
    /// set-group-ID, as `posix_acl_update_mode` does (the kernel's flag for it needs
    /// FUSE_SETXATTR_EXT, which fuser does not parse, so the adapter decides).
    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        position: u32,
        reply: ReplyEmpty,
    ) {
        let result = self.writable().and_then(|()| {
            let ino = self.inos.to_core(ino)?;
            self.may_change_xattr(ino)?;
            let mut flags = xattr::set_flags(flags, position)?;
            if name.as_bytes() == xattr::ACL_ACCESS.as_bytes() {
                let gid = self.fs.stat(ino).or_errno()?.gid;
                if !caller::in_group_or_capable(req, gid) {
                    flags |= uf2fs_core::XATTR_ACL_KILL_SGID;
                }
            }
            self.fs.set_xattr(ino, name.as_bytes(), value, flags).or_errno()
        });
        reply_empty(reply, result);
    }

    fn removexattr(&self, _req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let result = self.writable().and_then(|()| {
            let ino = self.inos.to_core(ino)?;
            self.may_change_xattr(ino)?;
            self.fs.remove_xattr(ino, name.as_bytes()).or_errno()
        });
        reply_empty(reply, result);
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let result = self.writable().and_then(|()| {
            let node = ino;
            let ino = self.inos.to_core(node)?;
            let mode = u32::try_from(mode).map_err(|_| Errno::EINVAL)?;
            self.may_fallocate(ino, mode)?;
            // FALLOCATE carries no flag for it: the caller's capabilities decide.
            self.drop_privs(req, node, ino, !caller::capable(req, caller::CAP_FSETID))?;
            let done = self.fs.fallocate(ino, offset, length, mode).or_errno();
            if done.is_err() {
                // A fallocate that runs out of space keeps what it reserved and the
                // size covering it, as F2FS does; the kernel refreshes its cached size
                // only after a success.
                self.attrs_changed(node);
            }
            done
        });
        reply_empty(reply, result);
    }

    /// `SEEK_DATA` and `SEEK_HOLE` (the kernel answers the other kinds itself).
    fn lseek(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: i64, whence: i32, reply: ReplyLseek) {
        let found = (|| {
            let whence = match whence {
                libc::SEEK_DATA => Seek::Data,
                libc::SEEK_HOLE => Seek::Hole,
                _ => return Err(Errno::EINVAL),
            };
            let offset = u64::try_from(offset).map_err(|_| Errno::ENXIO)?;
            let ino = self.inos.to_core(ino)?;
            let found = self.fs.seek(ino, offset, whence).or_errno()?;
            let found = found.ok_or(Errno::ENXIO)?;
            i64::try_from(found).map_err(|_| Errno::ENXIO)
        })();
        match found {
            Ok(offset) => reply.offset(offset),
            Err(errno) => reply.error(errno),
        }
    }

    fn ioctl(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        cmd: u32,
        in_data: &[u8],
        out_size: u32,
        reply: ReplyIoctl,
    ) {
        let served = self
            .inos
            .to_core(ino)
            .and_then(|ino| self.serve_ioctl(req, ino, cmd, in_data, out_size));
        match served {
            Ok((result, out)) => reply.ioctl(result, &out),
            Err(errno) => reply.error(errno),
        }
    }

    /// Copies in the file system (the core's [`Fs::copy_file_range`], at most
    /// [`COPY_MAX`] bytes): the data of the source range, up to its end of file, written
    /// at the target offset. The VFS checked the flags (none), the ranges (no overlap
    /// within a file) and the target's `O_APPEND`.
    fn copy_file_range(
        &self,
        req: &Request,
        ino_in: INodeNo,
        _fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        _fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        let copied = self.writable().and_then(|()| {
            let src = self.inos.to_core(ino_in)?;
            let dst = self.inos.to_core(ino_out)?;
            self.may_write(dst)?;
            self.drop_privs(req, ino_out, dst, !caller::capable(req, caller::CAP_FSETID))?;
            let copied = self
                .fs
                .copy_file_range(src, offset_in, dst, offset_out, len.min(COPY_MAX))
                .or_errno()?;
            self.accessed(src, OpenFlags(0));
            Ok(copied)
        });
        match copied {
            // At most COPY_MAX (< 4 GiB) per request; the caller loops.
            Ok(len) => reply.written(u32::try_from(len).unwrap_or(u32::MAX)),
            Err(errno) => reply.error(errno),
        }
    }
}

/// The creator of a new inode: the caller's fsuid and fsgid, and its umask (the
/// kernel leaves the umask to the file system under FUSE_DONT_MASK: the core applies
/// it only where no default ACL does).
fn creator(req: &Request, umask: u32) -> Creator {
    Creator {
        uid: req.uid(),
        gid: req.gid(),
        umask,
    }
}

/// Reply to a request that made a name.
fn reply_entry(reply: ReplyEntry, made: Result<(FileAttr, Generation), Errno>) {
    match made {
        Ok((attr, generation)) => reply.entry(&TTL, &attr, generation),
        Err(errno) => reply.error(errno),
    }
}

/// Core rename flags for FUSE's: `RENAME_NOREPLACE`, `RENAME_EXCHANGE` and
/// `RENAME_WHITEOUT` (the kernel checked `CAP_MKNOD`); unknown bits are `EINVAL`, and
/// so are the combinations Linux refuses (the core's check).
fn rename_flags(flags: RenameFlags) -> Result<u32, Errno> {
    let bits = flags.bits();
    let known = uf2fs_core::RENAME_NOREPLACE | uf2fs_core::RENAME_EXCHANGE | uf2fs_core::RENAME_WHITEOUT;
    if bits & !known != 0 {
        return Err(Errno::EINVAL);
    }
    Ok(bits)
}

/// (major, minor) of a device number as FUSE sends it (the kernel's `new_encode_dev`).
fn split_rdev(rdev: u32) -> (u32, u32) {
    let major = (rdev & 0xf_ff00) >> 8;
    let minor = (rdev & 0xff) | ((rdev >> 12) & 0xf_ff00);
    (major, minor)
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
