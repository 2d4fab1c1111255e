//! F2FS's own ioctls (`F2FS_IOCTL_MAGIC`, 0xf5) as a FUSE mount can serve them.
//!
//! A FUSE file system gets an ioctl in its restricted form: the kernel copies in
//! and out only as many bytes as the command number's size field says, in the
//! directions its direction bits say (no retries for pointers inside the argument).
//! Every F2FS command encodes its whole argument in its number, so each arrives
//! whole: `_IO` commands with no bytes, `_IOW` ones with their input, `_IOR` ones
//! with room for their output, `_IOWR` ones both. What each one does here, and the
//! errno of those that cannot work over FUSE, is listed in docs/ioctls.md.
//!
//! Permission checks follow Linux: `CAP_SYS_ADMIN` (from the caller's effective
//! capabilities) for the volume-wide commands, the inode's owner (or
//! `CAP_FOWNER`) for the atomic-write and pin commands; a read-only mount answers
//! `EROFS` where Linux's `mnt_want_write_file` does.

use fuser::{Errno, Request};
use uf2fs_core::flags::FS_NOCOW_FL;
use uf2fs_core::{FileKind, GcKind, Ino};

use crate::adapter::F2fsFuse;
use crate::caller;
use crate::caller_fd;
use crate::errors::OrErrno;

/// `_IO(0xf5, 1)`.
pub(crate) const F2FS_IOC_START_ATOMIC_WRITE: u32 = 0x0000_f501;
/// `_IO(0xf5, 2)`.
pub(crate) const F2FS_IOC_COMMIT_ATOMIC_WRITE: u32 = 0x0000_f502;
/// `_IO(0xf5, 3)`: volatile writes, gone from Linux 5.19 on.
pub(crate) const F2FS_IOC_START_VOLATILE_WRITE: u32 = 0x0000_f503;
/// `_IO(0xf5, 4)`: volatile writes, gone from Linux 5.19 on.
pub(crate) const F2FS_IOC_RELEASE_VOLATILE_WRITE: u32 = 0x0000_f504;
/// `_IO(0xf5, 5)` (once `ABORT_VOLATILE_WRITE`).
pub(crate) const F2FS_IOC_ABORT_ATOMIC_WRITE: u32 = 0x0000_f505;
/// `_IOW(0xf5, 6, __u32)`.
pub(crate) const F2FS_IOC_GARBAGE_COLLECT: u32 = 0x4004_f506;
/// `_IO(0xf5, 7)`.
pub(crate) const F2FS_IOC_WRITE_CHECKPOINT: u32 = 0x0000_f507;
/// `_IOWR(0xf5, 8, struct f2fs_defragment)`: `u64 start, len` (bytes).
pub(crate) const F2FS_IOC_DEFRAGMENT: u32 = 0xc010_f508;
/// `_IOWR(0xf5, 9, struct f2fs_move_range)`: `u32 dst_fd; u64 pos_in, pos_out, len`.
pub(crate) const F2FS_IOC_MOVE_RANGE: u32 = 0xc020_f509;
/// `_IOW(0xf5, 10, struct f2fs_flush_device)`: `u32 dev_num, segments`.
pub(crate) const F2FS_IOC_FLUSH_DEVICE: u32 = 0x4008_f50a;
/// `_IOW(0xf5, 11, struct f2fs_gc_range)`: `u32 sync; u64 start, len` (blocks).
pub(crate) const F2FS_IOC_GARBAGE_COLLECT_RANGE: u32 = 0x4018_f50b;
/// `_IOR(0xf5, 12, __u32)`.
pub(crate) const F2FS_IOC_GET_FEATURES: u32 = 0x8004_f50c;
/// `_IOW(0xf5, 13, __u32)`.
pub(crate) const F2FS_IOC_SET_PIN_FILE: u32 = 0x4004_f50d;
/// `_IOR(0xf5, 14, __u32)`.
pub(crate) const F2FS_IOC_GET_PIN_FILE: u32 = 0x8004_f50e;
/// `_IOW(0xf5, 16, __u64)`.
pub(crate) const F2FS_IOC_RESIZE_FS: u32 = 0x4008_f510;
/// `_IOR(0xf5, 17, __u64)`.
pub(crate) const F2FS_IOC_GET_COMPRESS_BLOCKS: u32 = 0x8008_f511;
/// `_IOR(0xf5, 18, __u64)`.
pub(crate) const F2FS_IOC_RELEASE_COMPRESS_BLOCKS: u32 = 0x8008_f512;
/// `_IOR(0xf5, 19, __u64)`.
pub(crate) const F2FS_IOC_RESERVE_COMPRESS_BLOCKS: u32 = 0x8008_f513;
/// `_IOR(0xf5, 21, struct f2fs_comp_option)`: `u8 algorithm, log_cluster_size`.
pub(crate) const F2FS_IOC_GET_COMPRESS_OPTION: u32 = 0x8002_f515;
/// `_IOW(0xf5, 22, struct f2fs_comp_option)`.
pub(crate) const F2FS_IOC_SET_COMPRESS_OPTION: u32 = 0x4002_f516;
/// `_IO(0xf5, 23)`.
pub(crate) const F2FS_IOC_DECOMPRESS_FILE: u32 = 0x0000_f517;
/// `_IO(0xf5, 24)`.
pub(crate) const F2FS_IOC_COMPRESS_FILE: u32 = 0x0000_f518;
/// `_IO(0xf5, 25)`.
pub(crate) const F2FS_IOC_START_ATOMIC_REPLACE: u32 = 0x0000_f519;

/// `F2FS_FEATURE_ATOMIC_WRITE`: Linux adds it to the superblock's features in its
/// answer to `GET_FEATURES` (SQLite on Android asks for it).
const F2FS_FEATURE_ATOMIC_WRITE: u32 = 0x0004;
/// `CAP_FOWNER`: acts as any file's owner.
const CAP_FOWNER: u32 = 3;

/// The `u64` at `at` of `data` (native endian), `EINVAL` when short.
fn u64_at(data: &[u8], at: usize) -> Result<u64, Errno> {
    let bytes = data.get(at..at + 8).ok_or(Errno::EINVAL)?;
    Ok(u64::from_ne_bytes(bytes.try_into().map_err(|_| Errno::EINVAL)?))
}

/// The `u32` at `at` of `data` (native endian), `EINVAL` when short.
fn u32_at(data: &[u8], at: usize) -> Result<u32, Errno> {
    let bytes = data.get(at..at + 4).ok_or(Errno::EINVAL)?;
    Ok(u32::from_ne_bytes(bytes.try_into().map_err(|_| Errno::EINVAL)?))
}

/// The answer to one F2FS ioctl: the ioctl's return value and the bytes to copy out.
pub(crate) type Answer = (i32, Vec<u8>);

impl F2fsFuse {
    /// Serves F2FS ioctl `cmd` on `ino`; `None` for a command that is not F2FS's.
    pub(crate) fn serve_f2fs_ioctl(
        &self,
        req: &Request,
        ino: Ino,
        cmd: u32,
        input: &[u8],
    ) -> Option<Result<Answer, Errno>> {
        let done = |r: Result<(), Errno>| r.map(|()| (0, Vec::new()));
        Some(match cmd {
            F2FS_IOC_GET_FEATURES => {
                let features = self.fs.superblock().feature | F2FS_FEATURE_ATOMIC_WRITE;
                Ok((0, features.to_ne_bytes().to_vec()))
            }
            F2FS_IOC_WRITE_CHECKPOINT => done(self.admin(req).and_then(|()| self.fs.sync_fs().or_errno())),
            F2FS_IOC_GARBAGE_COLLECT => done(self.admin(req).and_then(|()| {
                let sync = u32_at(input, 0)?;
                let kind = if sync != 0 {
                    GcKind::Foreground
                } else {
                    GcKind::Background
                };
                self.fs.gc(kind).or_errno().map(|_| ())
            })),
            F2FS_IOC_GARBAGE_COLLECT_RANGE => done(self.gc_range(req, input)),
            F2FS_IOC_FLUSH_DEVICE => done(self.admin(req).and_then(|()| {
                // As `f2fs_ioc_flush_device` on a volume of one device.
                let _dev_num = u32_at(input, 0)?;
                Err(Errno::EINVAL)
            })),
            F2FS_IOC_RESIZE_FS => done(self.resize(req, input)),
            F2FS_IOC_MOVE_RANGE => self.move_range(req, ino, input),
            F2FS_IOC_DEFRAGMENT => self.defragment(req, ino, input),
            // A pinned file's count of GC failures, 0 for any other.
            F2FS_IOC_GET_PIN_FILE => self.fs.pin_file(ino).or_errno().map(|n| (0, n.to_ne_bytes().to_vec())),
            F2FS_IOC_SET_PIN_FILE => self.set_pin(req, ino, input),
            F2FS_IOC_START_ATOMIC_WRITE => done(self.atomic_start(req, ino, false)),
            F2FS_IOC_START_ATOMIC_REPLACE => done(self.atomic_start(req, ino, true)),
            F2FS_IOC_COMMIT_ATOMIC_WRITE => done(self.atomic_commit(req, ino)),
            F2FS_IOC_ABORT_ATOMIC_WRITE => done(self.atomic_abort(req, ino)),
            F2FS_IOC_START_VOLATILE_WRITE | F2FS_IOC_RELEASE_VOLATILE_WRITE => Err(Errno::ENOTTY),
            F2FS_IOC_GET_COMPRESS_BLOCKS => self
                .fs
                .compress_blocks(ino)
                .or_errno()
                .map(|n| (0, n.to_ne_bytes().to_vec())),
            F2FS_IOC_RELEASE_COMPRESS_BLOCKS => self
                .writable()
                .and_then(|()| self.fs.release_compress_blocks(ino).or_errno())
                .map(|n| (0, n.to_ne_bytes().to_vec())),
            F2FS_IOC_RESERVE_COMPRESS_BLOCKS => self
                .writable()
                .and_then(|()| self.fs.reserve_compress_blocks(ino).or_errno())
                .map(|n| (0, n.to_ne_bytes().to_vec())),
            F2FS_IOC_GET_COMPRESS_OPTION => self.fs.compress_option(ino).or_errno().map(|(a, l)| (0, vec![a, l])),
            F2FS_IOC_SET_COMPRESS_OPTION => done(self.writable().and_then(|()| {
                let (a, l) = (
                    *input.first().ok_or(Errno::EINVAL)?,
                    *input.get(1).ok_or(Errno::EINVAL)?,
                );
                self.fs.set_compress_option(ino, a, l).or_errno()
            })),
            F2FS_IOC_COMPRESS_FILE | F2FS_IOC_DECOMPRESS_FILE => done(
                self.writable()
                    .and_then(|()| self.fs.recompress_file(ino, cmd == F2FS_IOC_COMPRESS_FILE).or_errno()),
            ),
            _ => return None,
        })
    }

    /// `CAP_SYS_ADMIN`, then a writable mount, as Linux checks them.
    fn admin(&self, req: &Request) -> Result<(), Errno> {
        if !caller::capable(req, caller::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        if !self.writable {
            return Err(Errno::EROFS);
        }
        Ok(())
    }

    /// Whether `ino` is pinned (`FS_NOCOW_FL` shows `F2FS_PIN_FILE`).
    fn pinned(&self, ino: Ino) -> Result<bool, Errno> {
        Ok(self.fs.file_flags(ino).or_errno()? & FS_NOCOW_FL != 0)
    }

    /// `inode_owner_or_capable`: the caller owns `ino` or holds `CAP_FOWNER`.
    fn owner(&self, req: &Request, ino: Ino) -> Result<(), Errno> {
        let st = self.fs.stat(ino).or_errno()?;
        if st.uid == req.uid() || caller::capable(req, CAP_FOWNER) {
            Ok(())
        } else {
            Err(Errno::EACCES)
        }
    }

    /// `GARBAGE_COLLECT_RANGE` (`f2fs_ioc_gc_range`): `CAP_SYS_ADMIN`, a writable
    /// mount, Linux's range check (`EINVAL`), then the sections of the range collected
    /// one after another ([`uf2fs_core::Fs::gc_range`]), ending with Linux's errno
    /// where its loop ends (`ENODATA`, `EAGAIN`).
    fn gc_range(&self, req: &Request, input: &[u8]) -> Result<(), Errno> {
        self.admin(req)?;
        let (sync, start, len) = (u32_at(input, 0)?, u64_at(input, 8)?, u64_at(input, 16)?);
        let report = self.fs.gc_range(start, len, sync != 0).or_errno()?;
        match report.stop {
            Some(stop) => Err(Errno::from_i32(stop.errno())),
            None => Ok(()),
        }
    }

    /// `RESIZE_FS` as `f2fs_resize_fs` checks it: growing is refused (Linux grows
    /// offline, with resize.f2fs), the size must be whole sections, the same size is
    /// nothing to do; a shrink answers `EOPNOTSUPP`: no order of its superblock and
    /// checkpoint writes leaves an image fsck.f2fs passes at every power cut
    /// (docs/ioctls.md, "Resizing").
    fn resize(&self, req: &Request, input: &[u8]) -> Result<(), Errno> {
        self.admin(req)?;
        let blocks = u64_at(input, 0)?;
        let sb = self.fs.superblock();
        let old = sb.block_count;
        if blocks > old {
            return Err(Errno::EINVAL);
        }
        let per_sec = 512u64 * u64::from(sb.segs_per_sec.max(1));
        if blocks % per_sec != 0 {
            return Err(Errno::EINVAL);
        }
        if blocks == old {
            return Ok(());
        }
        Err(Errno::EOPNOTSUPP)
    }

    /// `MOVE_RANGE` (`f2fs_ioc_move_range`): the range's blocks of `src` moved to the
    /// caller's descriptor `dst_fd` ([`uf2fs_core::Fs::move_range`]). The descriptor
    /// is read from `/proc` ([`crate::caller_fd`]): `EBADF` when it is not open, or
    /// not for writing; `EXDEV` when it is not a file of this mount. The caller must
    /// hold the source open for reading and writing (`EBADF`): FUSE does not say
    /// which descriptor the ioctl came through, so one of the caller's descriptors of
    /// the file must be. Answers the argument as it came, as Linux does.
    fn move_range(&self, req: &Request, src: Ino, input: &[u8]) -> Result<Answer, Errno> {
        let dst_fd = u32_at(input, 0)?;
        let (pos_in, pos_out, len) = (u64_at(input, 8)?, u64_at(input, 16)?, u64_at(input, 24)?);
        let Some(&dev) = self.device.get() else {
            // The mount's device is unknown (no mount table): no descriptor can be
            // told to be on it.
            return Err(Errno::EXDEV);
        };
        let src_node = self.inos.to_fuse(src).0;
        if !caller_fd::fds_on(req.pid(), dev, src_node)
            .iter()
            .any(caller_fd::FdInfo::reads_and_writes)
        {
            return Err(Errno::EBADF);
        }
        let target = caller_fd::fd_info(req.pid(), dst_fd)?;
        if !target.writes() {
            return Err(Errno::EBADF);
        }
        self.writable()?;
        if target.dev != dev {
            return Err(Errno::EXDEV);
        }
        let dst = self.inos.to_core(fuser::INodeNo(target.ino))?;
        // `loff_t` positions: negative ones are EINVAL.
        if pos_in > i64::MAX as u64 || pos_out > i64::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        if self.atomic.contains(src) || self.atomic.contains(dst) {
            return Err(Errno::EINVAL);
        }
        self.fs.move_range(src, pos_in, dst, pos_out, len).or_errno()?;
        // Both files' cached pages and attributes are stale.
        self.data_changed(self.inos.to_fuse(src));
        if dst != src {
            self.data_changed(self.inos.to_fuse(dst));
        }
        Ok((0, input.get(..32).ok_or(Errno::EINVAL)?.to_vec()))
    }

    /// `DEFRAGMENT` (`f2fs_ioc_defragment`): the data blocks of the byte range are
    /// written again when they are not one run on the device, so that writeback lays
    /// them out one after another; answers the range with its length set to the
    /// bytes rewritten.
    fn defragment(&self, req: &Request, ino: Ino, input: &[u8]) -> Result<Answer, Errno> {
        if !caller::capable(req, caller::CAP_SYS_ADMIN) {
            return Err(Errno::EPERM);
        }
        let st = self.fs.stat(ino).or_errno()?;
        if st.kind != FileKind::File {
            return Err(Errno::EINVAL);
        }
        if !self.writable {
            return Err(Errno::EROFS);
        }
        // A pinned file is updated in place (`f2fs_should_update_inplace`): Linux does
        // not defragment it.
        if self.atomic.contains(ino) || self.pinned(ino)? {
            return Err(Errno::EINVAL);
        }
        let (start, len) = (u64_at(input, 0)?, u64_at(input, 8)?);
        let end = start.checked_add(len).ok_or(Errno::EINVAL)?;
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        // The volume's block (16 KiB on 16 KiB volumes, as the kernel's page there).
        let bs = u64::from(st.blksize);
        let (first, last) = (start / bs, end.div_ceil(bs).min(st.size.div_ceil(bs)));
        let pieces: Vec<(u64, u64, u64)> = self
            .fs
            .extents(ino)
            .or_errno()?
            .into_iter()
            .filter(|&(f, _, n)| f < last && f + n > first)
            .collect();
        let mut rewritten = 0u64;
        if pieces.len() > 1 {
            let mut buf = vec![0u8; (256 * bs) as usize];
            for (f, _, n) in pieces {
                let (lo, hi) = (f.max(first), (f + n).min(last));
                let mut at = lo;
                while at < hi {
                    let k = (hi - at).min(256);
                    let want = (k * bs) as usize;
                    let got = self.fs.read(ino, at * bs, &mut buf[..want]).or_errno()?;
                    self.fs.write(ino, at * bs, &buf[..got]).or_errno()?;
                    rewritten += k;
                    at += k;
                }
            }
            self.fs.sync_fs().or_errno()?;
        }
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&start.to_ne_bytes());
        out.extend_from_slice(&(rewritten * bs).to_ne_bytes());
        Ok((0, out))
    }

    /// `SET_PIN_FILE` (`f2fs_ioc_set_pin_file`): the owner's, on a regular file not
    /// under an atomic write; answers (as the ioctl's return value) the file's GC
    /// failures when pinning, 0 when unpinning.
    fn set_pin(&self, req: &Request, ino: Ino, input: &[u8]) -> Result<Answer, Errno> {
        let pin = u32_at(input, 0)?;
        self.owner(req, ino)?;
        if self.fs.stat(ino).or_errno()?.kind != FileKind::File {
            return Err(Errno::EINVAL);
        }
        if !self.writable {
            return Err(Errno::EROFS);
        }
        if self.atomic.contains(ino) {
            return Err(Errno::EINVAL);
        }
        let failures = self.fs.set_pin_file(ino, pin != 0).or_errno()?;
        Ok((i32::try_from(failures).unwrap_or(i32::MAX), Vec::new()))
    }

    /// `START_ATOMIC_WRITE` / `START_ATOMIC_REPLACE` (`f2fs_ioc_start_atomic_write`).
    fn atomic_start(&self, req: &Request, ino: Ino, replace: bool) -> Result<(), Errno> {
        self.owner(req, ino)?;
        if self.fs.stat(ino).or_errno()?.kind != FileKind::File {
            return Err(Errno::EINVAL);
        }
        if !self.writable {
            return Err(Errno::EROFS);
        }
        if self.writeback_cache {
            // Under FUSE's writeback cache the kernel sends the pages written during
            // the atomic write after the commit or abort reaches the daemon, as plain
            // writes: an abort would be stored and a commit would miss them. Refused,
            // so that callers (SQLite) fall back to their journal (docs/writeback.md).
            return Err(Errno::EOPNOTSUPP);
        }
        if self.atomic.contains(ino) {
            // Linux: already atomic, nothing to do.
            return Ok(());
        }
        let aw = self.fs.atomic_start(ino, replace).or_errno()?;
        self.atomic.start(ino, aw);
        if replace {
            // Readers see the file empty from here on.
            self.data_changed(self.inos.to_fuse(ino));
        }
        Ok(())
    }

    /// `COMMIT_ATOMIC_WRITE` (`f2fs_ioc_commit_atomic_write`): the staged writes
    /// durable all together; a file not under an atomic write is fsync'd.
    fn atomic_commit(&self, req: &Request, ino: Ino) -> Result<(), Errno> {
        self.owner(req, ino)?;
        if !self.writable {
            return Err(Errno::EROFS);
        }
        let Some(aw) = self.atomic.take(ino) else {
            return self.fs.fsync(ino, false).or_errno();
        };
        match self.fs.atomic_commit(ino, &aw) {
            Ok(()) => {
                self.attrs_changed(self.inos.to_fuse(ino));
                Ok(())
            }
            Err(e) => {
                self.atomic.put_back(ino, aw);
                Err(crate::errors::errno(&e))
            }
        }
    }

    /// `ABORT_ATOMIC_WRITE` (`f2fs_ioc_abort_atomic_write`): the staged writes are
    /// dropped, and with them the kernel's cached pages of them.
    fn atomic_abort(&self, req: &Request, ino: Ino) -> Result<(), Errno> {
        self.owner(req, ino)?;
        if !self.writable {
            return Err(Errno::EROFS);
        }
        if self.atomic.take(ino).is_some() {
            self.data_changed(self.inos.to_fuse(ino));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_IOC(dir, type, nr, size)` as Linux encodes it.
    const fn ioc(dir: u32, nr: u8, size: usize) -> u32 {
        (dir << 30) | ((size as u32) << 16) | (0xf5 << 8) | nr as u32
    }

    #[test]
    fn command_numbers_are_linuxs() {
        assert_eq!(F2FS_IOC_START_ATOMIC_WRITE, ioc(0, 1, 0));
        assert_eq!(F2FS_IOC_COMMIT_ATOMIC_WRITE, ioc(0, 2, 0));
        assert_eq!(F2FS_IOC_ABORT_ATOMIC_WRITE, ioc(0, 5, 0));
        assert_eq!(F2FS_IOC_GARBAGE_COLLECT, ioc(1, 6, 4));
        assert_eq!(F2FS_IOC_WRITE_CHECKPOINT, ioc(0, 7, 0));
        assert_eq!(F2FS_IOC_DEFRAGMENT, ioc(3, 8, 16));
        assert_eq!(F2FS_IOC_MOVE_RANGE, ioc(3, 9, 32));
        assert_eq!(F2FS_IOC_FLUSH_DEVICE, ioc(1, 10, 8));
        assert_eq!(F2FS_IOC_GARBAGE_COLLECT_RANGE, ioc(1, 11, 24));
        assert_eq!(F2FS_IOC_GET_FEATURES, ioc(2, 12, 4));
        assert_eq!(F2FS_IOC_SET_PIN_FILE, ioc(1, 13, 4));
        assert_eq!(F2FS_IOC_GET_PIN_FILE, ioc(2, 14, 4));
        assert_eq!(F2FS_IOC_RESIZE_FS, ioc(1, 16, 8));
        assert_eq!(F2FS_IOC_GET_COMPRESS_BLOCKS, ioc(2, 17, 8));
        assert_eq!(F2FS_IOC_RELEASE_COMPRESS_BLOCKS, ioc(2, 18, 8));
        assert_eq!(F2FS_IOC_RESERVE_COMPRESS_BLOCKS, ioc(2, 19, 8));
        assert_eq!(F2FS_IOC_GET_COMPRESS_OPTION, ioc(2, 21, 2));
        assert_eq!(F2FS_IOC_SET_COMPRESS_OPTION, ioc(1, 22, 2));
        assert_eq!(F2FS_IOC_DECOMPRESS_FILE, ioc(0, 23, 0));
        assert_eq!(F2FS_IOC_COMPRESS_FILE, ioc(0, 24, 0));
        assert_eq!(F2FS_IOC_START_ATOMIC_REPLACE, ioc(0, 25, 0));
    }
}
