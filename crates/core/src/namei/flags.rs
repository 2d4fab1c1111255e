//! Inode flags (`FS_IOC_GETFLAGS`, `FS_IOC_SETFLAGS`: lsattr and chattr) as F2FS shows
//! and changes them (`f2fs_fileattr_get`, `f2fs_fileattr_set`, `f2fs_setflags_common`).
//! F2FS stores the `FS_*_FL` values unchanged in `i_flags`, so an image uf2fs changed
//! reads the same on Linux.
//!
//! What the flags forbid (an immutable inode's changes, an append-only file's
//! overwrites) is the VFS's to enforce on Linux; the FUSE adapter enforces it here.
//! Who may change them (the owner; `CAP_LINUX_IMMUTABLE` for immutable and
//! append-only) is the caller's to check.

use super::Op;
use crate::compress::ClusterCodec;
use crate::inode::{now, InodeMut};
use crate::{Error, FileKind, Fs, Ino, Result, Stat};
use uf2fs_format::node::{Compression, F2FS_INLINE_DATA, F2FS_INLINE_DENTRY, F2FS_PIN_FILE};
use uf2fs_format::superblock::{FEATURE_CASEFOLD, FEATURE_COMPRESSION};

/// `FS_COMPR_FL`: compress the file (F2FS compression, `chattr +c`).
pub const FS_COMPR_FL: u32 = 0x0000_0004;
/// `FS_SYNC_FL`: synchronous updates (`+S`).
pub const FS_SYNC_FL: u32 = 0x0000_0008;
/// `FS_IMMUTABLE_FL`: no change at all (`+i`).
pub const FS_IMMUTABLE_FL: u32 = 0x0000_0010;
/// `FS_APPEND_FL`: writes only at the end, no removal (`+a`).
pub const FS_APPEND_FL: u32 = 0x0000_0020;
/// `FS_NODUMP_FL`: not to be backed up by dump (`+d`).
pub const FS_NODUMP_FL: u32 = 0x0000_0040;
/// `FS_NOATIME_FL`: no access time updates (`+A`).
pub const FS_NOATIME_FL: u32 = 0x0000_0080;
/// `FS_NOCOMP_FL`: never compress (`+m`).
pub const FS_NOCOMP_FL: u32 = 0x0000_0400;
/// `FS_ENCRYPT_FL`: encrypted (shown only).
pub const FS_ENCRYPT_FL: u32 = 0x0000_0800;
/// `FS_INDEX_FL`: hash-indexed directory (shown only; F2FS sets it on directories).
pub const FS_INDEX_FL: u32 = 0x0000_1000;
/// `FS_DIRSYNC_FL`: synchronous directory updates (`+D`).
pub const FS_DIRSYNC_FL: u32 = 0x0001_0000;
/// `FS_NOCOW_FL`: shown for pinned files.
pub const FS_NOCOW_FL: u32 = 0x0080_0000;
/// `FS_DAX_FL`: direct access (never on F2FS).
pub const FS_DAX_FL: u32 = 0x0200_0000;
/// `FS_VERITY_FL`: fs-verity file (shown only).
pub const FS_VERITY_FL: u32 = 0x0010_0000;
/// `FS_INLINE_DATA_FL`: data or dentries inline in the inode (shown only).
pub const FS_INLINE_DATA_FL: u32 = 0x1000_0000;
/// `FS_PROJINHERIT_FL`: new inodes take the directory's project id (`+P`).
pub const FS_PROJINHERIT_FL: u32 = 0x2000_0000;
/// `FS_CASEFOLD_FL`: case-insensitive directory (`+F`).
pub const FS_CASEFOLD_FL: u32 = 0x4000_0000;

/// The flags F2FS keeps in `i_flags` and maps one to one (`f2fs_fsflags_map`).
const STORED: u32 = FS_COMPR_FL
    | FS_SYNC_FL
    | FS_IMMUTABLE_FL
    | FS_APPEND_FL
    | FS_NODUMP_FL
    | FS_NOATIME_FL
    | FS_NOCOMP_FL
    | FS_INDEX_FL
    | FS_DIRSYNC_FL
    | FS_PROJINHERIT_FL
    | FS_CASEFOLD_FL;
/// The flags F2FS shows (`F2FS_GETTABLE_FS_FL`).
pub const GETTABLE_FLAGS: u32 = STORED | FS_ENCRYPT_FL | FS_INLINE_DATA_FL | FS_NOCOW_FL | FS_VERITY_FL;
/// The flags `FS_IOC_SETFLAGS` may change on F2FS (`F2FS_SETTABLE_FS_FL`): every
/// stored flag but `FS_INDEX_FL`, which F2FS sets itself on hashed directories.
pub const SETTABLE_FLAGS: u32 = STORED & !FS_INDEX_FL;
/// The flags `FS_IOC_FSSETXATTR` may change (`FS_COMMON_FL`, those with an
/// `FS_XFLAG_*` twin).
pub const COMMON_FLAGS: u32 =
    FS_SYNC_FL | FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL | FS_DAX_FL | FS_PROJINHERIT_FL;

/// The flags an inode of `kind` may carry (`f2fs_mask_flags`).
fn kind_mask(kind: FileKind) -> u32 {
    match kind {
        FileKind::Dir => u32::MAX,
        FileKind::File => !(FS_DIRSYNC_FL | FS_PROJINHERIT_FL | FS_CASEFOLD_FL),
        _ => FS_NODUMP_FL | FS_NOATIME_FL,
    }
}

impl Fs {
    /// The flags of inode `ino` as `FS_IOC_GETFLAGS` shows them on F2FS: the stored
    /// ones, plus `FS_ENCRYPT_FL`, `FS_VERITY_FL`, `FS_INLINE_DATA_FL` (inline data or
    /// dentries) and `FS_NOCOW_FL` (a pinned file) from the inode's state.
    pub fn file_flags(&self, ino: Ino) -> Result<u32> {
        let i = self.inode(ino)?;
        let inode = &i.inode;
        let mut flags = inode.flags & STORED;
        if inode.is_encrypted() {
            flags |= FS_ENCRYPT_FL;
        }
        if inode.is_verity() {
            flags |= FS_VERITY_FL;
        }
        if inode.has_inline(F2FS_INLINE_DATA) || inode.has_inline(F2FS_INLINE_DENTRY) {
            flags |= FS_INLINE_DATA_FL;
        }
        if inode.has_inline(F2FS_PIN_FILE) {
            flags |= FS_NOCOW_FL;
        }
        Ok(flags & GETTABLE_FLAGS)
    }

    /// Sets the flags of inode `ino` among `mask` to `flags`, as F2FS's
    /// `f2fs_fileattr_set` does: `mask` is [`SETTABLE_FLAGS`] for `FS_IOC_SETFLAGS`
    /// and [`COMMON_FLAGS`] for `FS_IOC_FSSETXATTR`; the change time becomes now.
    ///
    /// Refused as on Linux: a flag F2FS does not show, or one the file type cannot
    /// carry ([`Error::Unsupported`], EOPNOTSUPP); casefolding without the casefold
    /// feature (EOPNOTSUPP) or of a directory with entries ([`Error::NotEmpty`]);
    /// compression flags without the compression feature (EOPNOTSUPP), both at once or
    /// turning compression on or off for a file with data ([`Error::Invalid`]).
    /// Compression turned on takes the mount's settings (`compress_algorithm=`,
    /// `compress_log_size=`, `compress_chksum`), as `set_compress_context` does.
    pub fn set_file_flags(&self, ino: Ino, flags: u32, mask: u32) -> Result<Stat> {
        if flags & !GETTABLE_FLAGS != 0 {
            return Err(Error::Unsupported {
                feature: "inode flags",
                detail: format!("flags {:#x} are not F2FS's", flags & !GETTABLE_FLAGS),
            });
        }
        let mut op = self.begin_op()?;
        let r = op.set_flags(ino, flags & SETTABLE_FLAGS, mask & SETTABLE_FLAGS);
        op.end(r)?;
        self.stat(ino)
    }
}

impl Op<'_> {
    /// `f2fs_fileattr_set` from the mask check on, then `f2fs_setflags_common`.
    fn set_flags(&mut self, ino: Ino, flags: u32, mask: u32) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load(ino)?;
        let kind = i.kind()?;
        if flags & kind_mask(kind) != flags {
            return Err(Error::Unsupported {
                feature: "inode flags",
                detail: format!("flags {:#x} on a {kind:?}", flags & !kind_mask(kind)),
            });
        }
        let flags = flags & mask;
        let old = i.inode.flags & mask;
        let changed = flags ^ old;
        let sb = self.fs.superblock();
        if changed & FS_CASEFOLD_FL != 0 {
            if !sb.has(FEATURE_CASEFOLD) {
                return Err(Error::Unsupported {
                    feature: "casefold",
                    detail: "the volume has no casefold feature".into(),
                });
            }
            if !super::dentry::is_empty(&self.t, &mut i)? {
                return Err(Error::NotEmpty(format!("directory inode {ino}")));
            }
        }
        if flags & (FS_COMPR_FL | FS_NOCOMP_FL) != 0 {
            if !sb.has(FEATURE_COMPRESSION) {
                return Err(Error::Unsupported {
                    feature: "compression",
                    detail: "the volume has no compression feature".into(),
                });
            }
            if flags & FS_COMPR_FL != 0 && flags & FS_NOCOMP_FL != 0 {
                return Err(Error::Invalid("compress and nocompress at once".into()));
            }
        }
        let compress = if changed & FS_COMPR_FL != 0 {
            let codec = self.rw.compress().options().codec;
            compression_change(&i, kind, flags & FS_COMPR_FL != 0, &codec)?
        } else {
            i.inode.compress
        };
        self.ensure_room(super::need([0, 0, 0, 1, 1, 0], 0), 0)?;
        self.commit();
        if kind == FileKind::File && compress.is_some() && i.inode.has_inline(F2FS_INLINE_DATA) {
            // An empty inline file turns into one with address slots (all NULL_ADDR),
            // as the kernel converts it before compression is set.
            i.inode.inline &= !(F2FS_INLINE_DATA | uf2fs_format::node::F2FS_DATA_EXIST);
            for s in 0..i.inode.addrs_per_inode() {
                i.set_slot(s, 0);
            }
        }
        i.inode.flags = flags | (i.inode.flags & !mask);
        i.inode.compress = compress;
        i.inode.ctime = now();
        self.t.store_inode(i)
    }
}

impl Op<'_> {
    /// Turns compression off for compressed regular file `ino` when it holds no block
    /// (written, reserved or dirty in the page cache), as Linux's `f2fs_disable_compressed_file` before an atomic
    /// write: the compression flag and settings go; a file with blocks is
    /// [`Error::Invalid`] (EINVAL). A file that is not compressed is left alone.
    pub(crate) fn disable_compression(&mut self, ino: Ino) -> Result<()> {
        let rw = self.rw;
        let _g = rw.lock_inodes(&[ino]);
        let mut i = self.load(ino)?;
        if !i.inode.is_compressed() {
            return Ok(());
        }
        if i.kind()? == FileKind::File && (i.inode.blocks > 1 || self.t.pages.has_inode(ino)) {
            return Err(Error::Invalid(format!(
                "inode {ino} is a compressed file with blocks: its compression cannot be turned off"
            )));
        }
        self.ensure_room(super::need([0, 0, 0, 0, 1, 0], 0), 0)?;
        self.commit();
        i.inode.flags &= !uf2fs_format::node::F2FS_COMPR_FL;
        i.inode.compress = None;
        i.inode.ctime = now();
        self.t.store_inode(i)
    }
}

/// The compression settings of `i` after compression is turned on (`on`, with the
/// mount's settings `codec`) or off, as `f2fs_setflags_common` allows it: not for a
/// regular file with data.
fn compression_change(i: &InodeMut, kind: FileKind, on: bool, codec: &ClusterCodec) -> Result<Option<Compression>> {
    let has_data = kind == FileKind::File && (i.inode.blocks > 1 || i.inode.size > 0);
    if has_data {
        return Err(Error::Invalid(format!(
            "inode {} has data: its compression cannot change",
            i.ino
        )));
    }
    if !on {
        return Ok(None);
    }
    if kind == FileKind::File && i.inode.is_pinned() {
        // `f2fs_may_compress`: a pinned file is never compressed.
        return Err(Error::Invalid(format!(
            "inode {} is pinned: it cannot be compressed",
            i.ino
        )));
    }
    if (i.inode.extra_isize as usize) < uf2fs_format::node::F2FS_TOTAL_EXTRA_ATTR_SIZE {
        return Err(Error::Unsupported {
            feature: "compression",
            detail: format!("inode {} has no room for compression settings", i.ino),
        });
    }
    Ok(Some(codec.compression()))
}
