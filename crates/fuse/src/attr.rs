//! Core [`Stat`] to FUSE [`FileAttr`]: kinds, times, device numbers, permission checks.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{AccessFlags, FileAttr, FileType, INodeNo};
use uf2fs_core::{FileKind, Stat, Timestamp};

/// `st_blksize` reported for an entry whose inode could not be read (a file's own
/// attributes carry the volume's block size, [`Stat::blksize`]).
pub(crate) const BLKSIZE: u32 = 4096;

/// The FUSE file type of a core file kind.
pub(crate) fn file_type(kind: FileKind) -> FileType {
    match kind {
        FileKind::File => FileType::RegularFile,
        FileKind::Dir => FileType::Directory,
        FileKind::Symlink => FileType::Symlink,
        FileKind::CharDev => FileType::CharDevice,
        FileKind::BlockDev => FileType::BlockDevice,
        FileKind::Fifo => FileType::NamedPipe,
        FileKind::Socket => FileType::Socket,
    }
}

/// A core timestamp as `SystemTime`; instants `SystemTime` cannot hold become the epoch.
pub(crate) fn system_time(ts: Timestamp) -> SystemTime {
    let nanos = Duration::from_nanos(u64::from(ts.nsecs.min(999_999_999)));
    let whole = if ts.secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(ts.secs.unsigned_abs()))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(ts.secs.unsigned_abs()))
    };
    whole.and_then(|t| t.checked_add(nanos)).unwrap_or(UNIX_EPOCH)
}

/// `rdev` as FUSE carries it: the kernel's 32-bit device encoding, which is the low half
/// of glibc's `makedev` (12 bits of major, 20 of minor: all the kernel can represent).
pub(crate) fn encode_rdev((major, minor): (u32, u32)) -> u32 {
    libc::makedev(major, minor) as u32
}

/// FUSE attributes of `stat`, reported under node id `ino`.
pub(crate) fn file_attr(ino: INodeNo, stat: &Stat) -> FileAttr {
    FileAttr {
        ino,
        size: stat.size,
        blocks: stat.blocks,
        atime: system_time(stat.atime),
        mtime: system_time(stat.mtime),
        ctime: system_time(stat.ctime),
        crtime: stat.crtime.map_or(UNIX_EPOCH, system_time),
        kind: file_type(stat.kind),
        perm: (stat.mode & 0o7777) as u16,
        nlink: stat.nlink,
        uid: stat.uid,
        gid: stat.gid,
        rdev: encode_rdev(stat.rdev),
        blksize: stat.blksize,
        flags: 0,
    }
}

/// Attributes for an entry whose inode could not be read: type from the dentry, no
/// permissions. Sent with a zero TTL so the kernel asks again (and gets the error).
pub(crate) fn placeholder_attr(ino: INodeNo, kind: FileKind) -> FileAttr {
    FileAttr {
        ino,
        size: 0,
        blocks: 0,
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: file_type(kind),
        perm: 0,
        nlink: 1,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: BLKSIZE,
        flags: 0,
    }
}

/// Whether a caller with `uid`/`gid` may `access(2)` `stat` for the read and execute bits
/// of `mask` (write is refused by the caller: the file system is read-only). Follows the
/// classic owner/group/other rule; root may read anything and execute anything that has
/// an execute bit or is a directory. Supplementary groups are not known here: mounts use
/// `default_permissions`, so the kernel's own check is the authoritative one.
pub(crate) fn access_allowed(stat: &Stat, uid: u32, gid: u32, mask: AccessFlags) -> bool {
    let want_exec = mask.contains(AccessFlags::X_OK);
    if uid == 0 {
        return !want_exec || stat.kind == FileKind::Dir || stat.mode & 0o111 != 0;
    }
    let shift = if uid == stat.uid {
        6
    } else if gid == stat.gid {
        3
    } else {
        0
    };
    let granted = (stat.mode >> shift) & 0o7;
    let mut needed = 0;
    if mask.contains(AccessFlags::R_OK) {
        needed |= 0o4;
    }
    if want_exec {
        needed |= 0o1;
    }
    granted & needed == needed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(kind: FileKind, mode: u32) -> Stat {
        Stat {
            ino: 5,
            kind,
            mode: kind.mode_bits() | mode,
            nlink: 2,
            uid: 1000,
            gid: 100,
            size: 12345,
            blocks: 32,
            blksize: 4096,
            atime: Timestamp {
                secs: 1_700_000_000,
                nsecs: 5,
            },
            mtime: Timestamp {
                secs: -1,
                nsecs: 500_000_000,
            },
            ctime: Timestamp { secs: 0, nsecs: 0 },
            crtime: None,
            rdev: (0, 0),
            generation: 9,
            flags: 0,
        }
    }

    #[test]
    fn attr_fields_follow_stat() {
        let mut s = stat(FileKind::CharDev, 0o4755);
        s.rdev = (4, 64);
        let a = file_attr(INodeNo(5), &s);
        assert_eq!(a.kind, FileType::CharDevice);
        assert_eq!(a.perm, 0o4755);
        assert_eq!((a.nlink, a.uid, a.gid, a.size, a.blocks), (2, 1000, 100, 12345, 32));
        assert_eq!(a.blksize, 4096);
        assert_eq!(a.rdev, (4 << 8) | 64);
        assert_eq!(a.atime, UNIX_EPOCH + Duration::new(1_700_000_000, 5));
        assert_eq!(a.mtime, UNIX_EPOCH - Duration::from_millis(500));
        assert_eq!(a.ctime, UNIX_EPOCH);
    }

    #[test]
    fn rdev_uses_kernel_encoding() {
        // The kernel decodes major = (dev >> 8) & 0xfff, minor = (dev & 0xff) | ((dev >> 12) & 0xfff00).
        for (major, minor) in [(0, 0), (8, 1), (259, 0x12345), (0xfff, 0xfffff)] {
            let dev = encode_rdev((major, minor));
            assert_eq!((dev >> 8) & 0xfff, major);
            assert_eq!((dev & 0xff) | ((dev >> 12) & 0xfff00), minor);
        }
    }

    #[test]
    fn extreme_times_do_not_panic() {
        let ts = Timestamp {
            secs: i64::MAX,
            nsecs: u32::MAX,
        };
        let _ = system_time(ts);
        let _ = system_time(Timestamp {
            secs: i64::MIN,
            nsecs: 0,
        });
    }

    #[test]
    fn access_by_mode_bits() {
        let s = stat(FileKind::File, 0o640);
        let r = AccessFlags::R_OK;
        let x = AccessFlags::X_OK;
        assert!(access_allowed(&s, 1000, 1, r));
        assert!(!access_allowed(&s, 1000, 1, x));
        assert!(access_allowed(&s, 2000, 100, r));
        assert!(!access_allowed(&s, 2000, 200, r));
        assert!(access_allowed(&s, 2000, 200, AccessFlags::F_OK));
        assert!(access_allowed(&s, 0, 0, r));
        assert!(!access_allowed(&s, 0, 0, x));
        assert!(access_allowed(&stat(FileKind::Dir, 0o700), 0, 0, x));
        assert!(access_allowed(&stat(FileKind::File, 0o001), 0, 0, x));
    }
}
