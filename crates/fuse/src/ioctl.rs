//! FUSE_IOCTL: the inode flags (lsattr, chattr, `xfs_io lsattr`/`chattr`) and the
//! volume label (`xfs_io label`) as F2FS answers them.
//!
//! `FS_IOC_GETFLAGS`, `FS_IOC_SETFLAGS`, `FS_IOC_FSGETXATTR` and `FS_IOC_FSSETXATTR`
//! never reach a FUSE file system as the caller made them: the VFS takes them
//! (`vfs_fileattr_get`, `vfs_fileattr_set`: the owner check, `CAP_LINUX_IMMUTABLE`
//! for the immutable and append-only flags) and the kernel's FUSE side asks the daemon
//! with a GETFLAGS or SETFLAGS of a 4-byte int, or an FSGETXATTR or FSSETXATTR of a
//! `struct fsxattr`; a change of flags through `FS_IOC_FSSETXATTR` first reads the
//! old ones with an FSGETXATTR. Other commands come through as the caller made them,
//! restricted to the size their number encodes.

use fuser::{Errno, Request};
use uf2fs_core::flags::{
    COMMON_FLAGS, FS_APPEND_FL, FS_DAX_FL, FS_IMMUTABLE_FL, FS_NOATIME_FL, FS_NODUMP_FL, FS_PROJINHERIT_FL, FS_SYNC_FL,
    SETTABLE_FLAGS,
};
use uf2fs_core::Ino;

use crate::adapter::F2fsFuse;
use crate::caller;
use crate::errors::OrErrno;

/// `_IOR('f', 1, long)`.
pub(crate) const FS_IOC_GETFLAGS: u32 = 0x8008_6601;
/// `_IOW('f', 2, long)`.
pub(crate) const FS_IOC_SETFLAGS: u32 = 0x4008_6602;
/// `_IOR('X', 31, struct fsxattr)`.
pub(crate) const FS_IOC_FSGETXATTR: u32 = 0x801c_581f;
/// `_IOW('X', 32, struct fsxattr)`.
pub(crate) const FS_IOC_FSSETXATTR: u32 = 0x401c_5820;

/// `_IOR(0x94, 49, char[FSLABEL_MAX])`.
pub(crate) const FS_IOC_GETFSLABEL: u32 = 0x8100_9431;
/// `_IOW(0x94, 50, char[FSLABEL_MAX])`.
pub(crate) const FS_IOC_SETFSLABEL: u32 = 0x4100_9432;

/// Size of `struct fsxattr`: five `u32` and 8 bytes of padding.
const FSXATTR_SIZE: usize = 28;

/// `FS_XFLAG_*` twins of the common flags (`fileattr_fill_flags`).
const XFLAGS: [(u32, u32); 7] = [
    (0x0000_0008, FS_IMMUTABLE_FL),
    (0x0000_0010, FS_APPEND_FL),
    (0x0000_0020, FS_SYNC_FL),
    (0x0000_0040, FS_NOATIME_FL),
    (0x0000_0080, FS_NODUMP_FL),
    (0x0000_0200, FS_PROJINHERIT_FL),
    (0x0000_8000, FS_DAX_FL),
];

/// The `FS_XFLAG_*` bits of `flags`.
fn flags_to_xflags(flags: u32) -> u32 {
    XFLAGS
        .iter()
        .filter(|(_, f)| flags & f != 0)
        .fold(0, |x, (xf, _)| x | xf)
}

/// The `FS_*_FL` bits of `xflags` (the common ones; the rest have no twin).
fn xflags_to_flags(xflags: u32) -> u32 {
    XFLAGS
        .iter()
        .filter(|(xf, _)| xflags & xf != 0)
        .fold(0, |f, (_, fl)| f | fl)
}

/// A native-endian `u32` at `at` of `data`, `EINVAL` when it is short.
fn u32_at(data: &[u8], at: usize) -> Result<u32, Errno> {
    let bytes = data.get(at..at + 4).ok_or(Errno::EINVAL)?;
    Ok(u32::from_ne_bytes(bytes.try_into().map_err(|_| Errno::EINVAL)?))
}

impl F2fsFuse {
    /// Serves ioctl `cmd` on `ino` with the caller's `input`: the ioctl's result and
    /// the bytes to give back (at most `out_size`); F2FS's own commands in
    /// [`crate::f2fs_ioctl`].
    pub(crate) fn serve_ioctl(
        &self,
        req: &Request,
        ino: Ino,
        cmd: u32,
        input: &[u8],
        out_size: u32,
    ) -> Result<(i32, Vec<u8>), Errno> {
        let reply = match cmd {
            FS_IOC_GETFLAGS => self.fs.file_flags(ino).or_errno()?.to_ne_bytes().to_vec(),
            FS_IOC_SETFLAGS => {
                let flags = u32_at(input, 0)?;
                self.change_flags(req, ino, flags, SETTABLE_FLAGS)?;
                Vec::new()
            }
            FS_IOC_FSGETXATTR => {
                let flags = self.fs.file_flags(ino).or_errno()?;
                let mut out = vec![0u8; FSXATTR_SIZE];
                out[..4].copy_from_slice(&flags_to_xflags(flags).to_ne_bytes());
                out
            }
            FS_IOC_FSSETXATTR => {
                let xflags = u32_at(input, 0)?;
                let projid = u32_at(input, 12)?;
                // As `vfs_fileattr_set` hands them to F2FS: the common flags from the
                // xflags, the others as they were.
                let old = self.fs.file_flags(ino).or_errno()?;
                let flags = xflags_to_flags(xflags) | (old & !COMMON_FLAGS);
                self.change_flags(req, ino, flags, COMMON_FLAGS)?;
                // F2FS without project quotas keeps every inode in project 0
                // (`f2fs_ioc_setproject`), after changing the flags.
                if projid != 0 {
                    return Err(Errno::EOPNOTSUPP);
                }
                Vec::new()
            }
            // F2FS copies the label's bytes without a terminating NUL.
            FS_IOC_GETFSLABEL => self.fs.volume_label().or_errno()?,
            FS_IOC_SETFSLABEL => {
                // As `f2fs_ioc_setfslabel`: the capability, the string, then the mount.
                if !caller::capable(req, caller::CAP_SYS_ADMIN) {
                    return Err(Errno::EPERM);
                }
                if !input[..input.len().min(uf2fs_core::FSLABEL_MAX)].contains(&0) {
                    return Err(Errno::EINVAL);
                }
                if !self.writable {
                    return Err(Errno::EROFS);
                }
                self.fs.set_volume_label(input).or_errno()?;
                Vec::new()
            }
            _ => {
                let (result, out) = self.serve_f2fs_ioctl(req, ino, cmd, input).ok_or(Errno::ENOTTY)??;
                if out.len() > out_size as usize {
                    return Err(Errno::EINVAL);
                }
                return Ok((result, out));
            }
        };
        if reply.len() > out_size as usize {
            return Err(Errno::EINVAL);
        }
        Ok((0, reply))
    }

    /// Sets the flags of `ino` among `mask` to `flags` for the caller of `req`: the
    /// VFS checked the owner and `CAP_LINUX_IMMUTABLE`, checked again here in case the
    /// kernel leaves it to the file system; the kernel drops its cached attributes
    /// (the change time moved).
    fn change_flags(&self, req: &Request, ino: Ino, flags: u32, mask: u32) -> Result<(), Errno> {
        if !self.writable {
            return Err(Errno::EROFS);
        }
        let st = self.fs.stat(ino).or_errno()?;
        let sealing = (flags ^ st.flags) & mask & (FS_IMMUTABLE_FL | FS_APPEND_FL) != 0;
        if sealing && !caller::capable(req, caller::CAP_LINUX_IMMUTABLE) {
            return Err(Errno::EPERM);
        }
        self.fs.set_file_flags(ino, flags, mask).or_errno()?;
        self.attrs_changed(self.inos.to_fuse(ino));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `_IOC(dir, type, nr, size)` as Linux encodes it.
    const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
        (dir << 30) | ((size as u32) << 16) | ((ty as u32) << 8) | nr as u32
    }

    #[test]
    fn command_numbers_are_linuxs() {
        assert_eq!(FS_IOC_GETFLAGS, ioc(2, b'f', 1, 8));
        assert_eq!(FS_IOC_SETFLAGS, ioc(1, b'f', 2, 8));
        assert_eq!(FS_IOC_FSGETXATTR, ioc(2, b'X', 31, FSXATTR_SIZE));
        assert_eq!(FS_IOC_FSSETXATTR, ioc(1, b'X', 32, FSXATTR_SIZE));
        assert_eq!(FS_IOC_GETFSLABEL, ioc(2, 0x94, 49, uf2fs_core::FSLABEL_MAX));
        assert_eq!(FS_IOC_SETFSLABEL, ioc(1, 0x94, 50, uf2fs_core::FSLABEL_MAX));
    }

    #[test]
    fn xflags_map_both_ways() {
        let all = FS_IMMUTABLE_FL | FS_APPEND_FL | FS_SYNC_FL | FS_NOATIME_FL | FS_NODUMP_FL;
        assert_eq!(xflags_to_flags(flags_to_xflags(all)), all);
        assert_eq!(flags_to_xflags(FS_IMMUTABLE_FL | FS_APPEND_FL), 0x18);
        // Flags without a twin (compression, casefold) are not xflags.
        assert_eq!(flags_to_xflags(0x4000_0004), 0);
        // xflags without a twin (realtime, extent size hints) are not flags.
        assert_eq!(xflags_to_flags(0x0000_0801), 0);
        assert_eq!(u32_at(&[1, 0, 0], 0), Err(Errno::EINVAL));
    }
}
