//! What the dispatch's requests share beyond one core call: names made and removed,
//! SETATTR with a size, set-ID bits dropped before a data change, fsync, READ with its
//! access time, `access(2)` and the xattr replies.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use fuser::{AccessFlags, Errno, FileAttr, Generation, INodeNo, OpenFlags, ReplyData, Request};
use uf2fs_core::{FileKind, Fs, Ino, SetAttr, Stat};

use super::protect::AttrChange;
use super::F2fsFuse;
use crate::attr::access_allowed;
use crate::errors::OrErrno;
use crate::{caller, read_buf, xattr};

/// The extended attribute holding a file's capabilities.
const CAPABILITY_XATTR: &[u8] = b"security.capability";

impl F2fsFuse {
    /// unlink: the core keeps an open inode losing its last name as an orphan until
    /// its last handle goes.
    pub(super) fn remove_file(&self, parent: INodeNo, name: &OsStr) -> Result<(), Errno> {
        self.writable()?;
        let dir = self.inos.to_core(parent)?;
        self.may_remove_name(dir, name.as_bytes())?;
        self.fs.unlink(dir, name.as_bytes()).or_errno()
    }

    /// Make a name in directory `parent` with `op` (create, mkdir, mknod, symlink).
    pub(super) fn make(
        &self,
        parent: INodeNo,
        op: impl FnOnce(&Fs, Ino) -> uf2fs_core::Result<Stat>,
    ) -> Result<(FileAttr, Generation), Errno> {
        self.writable()?;
        let dir = self.inos.to_core(parent)?;
        self.may_add_name(dir)?;
        let stat = op(&self.fs, dir).or_errno()?;
        Ok(self.hand_out(&stat))
    }

    /// setattr: the size through the core's truncate, then the other attributes.
    pub(super) fn set_attr(
        &self,
        req: &Request,
        node: INodeNo,
        size: Option<u64>,
        change: &AttrChange,
    ) -> Result<FileAttr, Errno> {
        self.writable()?;
        let ino = self.inos.to_core(node)?;
        self.may_setattr(ino, change)?;
        let attrs = change.attrs;
        let mut attrs = attrs.clone();
        let chown = attrs.uid.is_some() || attrs.gid.is_some();
        let mut drop_capability = false;
        if size.is_some() || chown {
            // Under FUSE_HANDLE_KILLPRIV_V2 the file system drops the privileges a
            // truncate or a change of owner takes away (the kernel sends no mode).
            let stat = self.fs.stat(ino).or_errno()?;
            let mode = attrs.mode.unwrap_or(stat.mode) & 0o7777;
            if size.is_some() && stat.kind == FileKind::File {
                let privileged = caller::capable(req, caller::CAP_FSETID);
                if let Some(kept) = caller::mode_after_modify(req, mode, stat.gid, privileged) {
                    attrs.mode = Some(kept);
                }
                drop_capability = true;
            }
            if chown && stat.kind != FileKind::Dir {
                let mode = attrs.mode.unwrap_or(mode);
                if let Some(kept) = caller::mode_after_chown(req, mode, stat.gid) {
                    attrs.mode = Some(kept);
                }
                drop_capability = true;
            }
        }
        if drop_capability {
            self.drop_capability(ino)?;
        }
        if let Some(size) = size {
            match self.atomic.with(ino, |aw| self.fs.atomic_stage_truncate(ino, aw, size)) {
                Some(staged) => staged.or_errno()?,
                None => self.fs.truncate(ino, size).or_errno()?,
            }
        }
        let attrs = &attrs;
        let mut stat = if *attrs == SetAttr::default() {
            self.fs.stat(ino).or_errno()?
        } else {
            self.fs.setattr(ino, attrs).or_errno()?
        };
        if let Some(size) = self.atomic.with(ino, |aw| aw.size()) {
            stat.size = size;
        }
        Ok(self.entry(&stat).0)
    }

    /// Drops the privileges Linux drops before the caller of `req` changes the data of
    /// regular file `ino` (a write, fallocate, hole punch or copy into it: the VFS's
    /// `file_remove_privs`): with `kill_suidgid` (the caller lacks `CAP_FSETID`) the
    /// set-ID bits by [`caller::mode_after_modify`], and for any caller the file's
    /// capabilities (`security.capability`). The mount negotiates
    /// FUSE_HANDLE_KILLPRIV_V2, so this is the file system's to do, and the kernel does
    /// not ask for the capabilities before every write. The kernel drops the attributes
    /// of `node` it cached when anything changed (it refreshes only the size and times
    /// after such a request).
    pub(super) fn drop_privs(&self, req: &Request, node: INodeNo, ino: Ino, kill_suidgid: bool) -> Result<(), Errno> {
        let mut changed = false;
        if kill_suidgid {
            let stat = self.fs.stat(ino).or_errno()?;
            if stat.kind != FileKind::File {
                return Ok(());
            }
            if let Some(kept) = caller::mode_after_modify(req, stat.mode & 0o7777, stat.gid, false) {
                let attrs = SetAttr {
                    mode: Some(kept),
                    ..SetAttr::default()
                };
                self.fs.setattr(ino, &attrs).or_errno()?;
                changed = true;
            }
        }
        changed |= self.drop_capability(ino)?;
        if changed {
            self.attrs_changed(node);
        }
        Ok(())
    }

    /// Removes the capabilities (`security.capability`) of `ino`, as Linux's
    /// `security_inode_killpriv` does when a file's data or owner changes, whoever the
    /// caller is; whether there were any.
    fn drop_capability(&self, ino: Ino) -> Result<bool, Errno> {
        if self.fs.get_xattr(ino, CAPABILITY_XATTR).or_errno()?.is_none() {
            return Ok(false);
        }
        match self.fs.remove_xattr(ino, CAPABILITY_XATTR) {
            Ok(()) => Ok(true),
            Err(uf2fs_core::Error::NoAttribute(_)) => Ok(false),
            Err(err) => Err(err).or_errno(),
        }
    }

    /// fsync and fsyncdir: the core's fsync (the inode's pages, then its nodes
    /// with the fsync mark for roll-forward recovery, or a checkpoint where recovery
    /// could not rebuild the file: see `Fs::fsync`).
    pub(super) fn sync(&self, node: INodeNo, datasync: bool) -> Result<(), Errno> {
        if !self.writable {
            return Ok(());
        }
        let ino = self.inos.to_core(node)?;
        self.fs.fsync(ino, datasync).or_errno()
    }

    /// Serve a READ of `size` bytes at `offset` through a descriptor opened with
    /// `flags`. The access time changes (when due) before the reply: once the reply is
    /// in, the kernel drops the access time it cached and may ask for it at once.
    pub(super) fn read_data(&self, node: INodeNo, offset: u64, size: u32, flags: OpenFlags, reply: ReplyData) {
        let ino = match self.inos.to_core(node) {
            Ok(ino) => ino,
            Err(errno) => return reply.error(errno),
        };
        read_buf::with_buffer(size as usize, |buf| match self.read_staged(ino, offset, buf) {
            Ok(len) => {
                self.accessed(ino, flags);
                reply.data(&buf[..len]);
            }
            Err(errno) => reply.error(errno),
        });
    }

    /// Reads `ino` at `offset` into `buf`: the core's bytes, under the staged ones of
    /// an atomic write in progress.
    fn read_staged(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let base = self.fs.read(ino, offset, buf).or_errno()?;
        Ok(self.atomic.with(ino, |aw| aw.read(offset, buf, base)).unwrap_or(base))
    }

    /// `access(2)`: by mode bits; write never on a read-only mount.
    pub(super) fn check_access(&self, req: &Request, node: INodeNo, mask: AccessFlags) -> Result<(), Errno> {
        let ino = self.inos.to_core(node)?;
        let stat = self.fs.stat(ino).or_errno()?;
        if mask.contains(AccessFlags::W_OK) {
            self.writable()?;
        }
        if access_allowed(&stat, req.uid(), req.gid(), mask) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// Extended attribute `name` of `node`.
    pub(super) fn xattr_value(&self, node: INodeNo, name: &OsStr) -> Result<Vec<u8>, Errno> {
        // The mount's status, asked for by `uf2fs status` on the mount's root (a name
        // in no xattr namespace, so no stored attribute can have it; never listed).
        if node == INodeNo::ROOT && name.as_bytes() == crate::STATUS_XATTR.as_bytes() {
            return self.fs.status_report().map(String::into_bytes).or_errno();
        }
        if node == INodeNo::ROOT && name.as_bytes() == crate::STATUS_JSON_XATTR.as_bytes() {
            let status = self.fs.status().or_errno()?;
            return serde_json::to_vec(&status).map_err(|_| Errno::EIO);
        }
        let ino = self.inos.to_core(node)?;
        self.fs
            .get_xattr(ino, name.as_bytes())
            .or_errno()?
            .ok_or(Errno::NO_XATTR)
    }

    /// NUL-separated names of the extended attributes of `node`.
    pub(super) fn xattr_names(&self, node: INodeNo) -> Result<Vec<u8>, Errno> {
        let ino = self.inos.to_core(node)?;
        Ok(xattr::name_list(&self.fs.list_xattrs(ino).or_errno()?))
    }
}
