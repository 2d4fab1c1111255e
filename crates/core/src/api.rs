//! Public types of the read API: what `Fs` hands to the CLI and the FUSE adapter.

/// An inode number (F2FS's `ino`, which is also the inode's node id).
pub type Ino = u32;

/// A point in time as F2FS stores it: seconds since the epoch and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 UTC.
    pub secs: i64,
    /// Nanoseconds within the second (0..1e9).
    pub nsecs: u32,
}

/// The type of a file, as in `st_mode & S_IFMT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Regular file.
    File,
    /// Directory.
    Dir,
    /// Symbolic link.
    Symlink,
    /// Character device.
    CharDev,
    /// Block device.
    BlockDev,
    /// Named pipe.
    Fifo,
    /// Unix socket.
    Socket,
}

impl FileKind {
    /// The `S_IFMT` bits of this kind.
    pub fn mode_bits(self) -> u32 {
        match self {
            FileKind::File => 0o100000,
            FileKind::Dir => 0o040000,
            FileKind::Symlink => 0o120000,
            FileKind::CharDev => 0o020000,
            FileKind::BlockDev => 0o060000,
            FileKind::Fifo => 0o010000,
            FileKind::Socket => 0o140000,
        }
    }

    /// The kind named by the `S_IFMT` bits of `mode`, if any.
    pub fn from_mode(mode: u32) -> Option<FileKind> {
        Some(match mode & 0o170000 {
            0o100000 => FileKind::File,
            0o040000 => FileKind::Dir,
            0o120000 => FileKind::Symlink,
            0o020000 => FileKind::CharDev,
            0o060000 => FileKind::BlockDev,
            0o010000 => FileKind::Fifo,
            0o140000 => FileKind::Socket,
            _ => return None,
        })
    }
}

/// What `stat(2)` would report for an inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    /// Inode number.
    pub ino: Ino,
    /// File type.
    pub kind: FileKind,
    /// Full `st_mode` (type bits and permission bits, including setuid/setgid/sticky).
    pub mode: u32,
    /// Hard link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes (for a symlink: the target's length).
    pub size: u64,
    /// Space used, in 512-byte sectors as `st_blocks` counts it.
    pub blocks: u64,
    /// The file system's block size (`st_blksize`): 4096, or 16384 on a volume of
    /// 16 KiB blocks.
    pub blksize: u32,
    /// Last access.
    pub atime: Timestamp,
    /// Last data modification.
    pub mtime: Timestamp,
    /// Last status change.
    pub ctime: Timestamp,
    /// Creation time, when the image records it (feature inode_crtime).
    pub crtime: Option<Timestamp>,
    /// Device number for character and block devices: (major, minor).
    pub rdev: (u32, u32),
    /// Inode generation.
    pub generation: u32,
    /// F2FS inode flags (`i_flags`, FS_*_FL values).
    pub flags: u32,
}

/// One entry of a directory (never "." or "..").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The name, raw bytes (F2FS names are not required to be UTF-8).
    pub name: Vec<u8>,
    /// Inode the entry points to.
    pub ino: Ino,
    /// File type recorded in the dentry.
    pub kind: FileKind,
}

/// One extended attribute with its full name, e.g. `user.comment`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xattr {
    /// Full name including the namespace prefix.
    pub name: Vec<u8>,
    /// Value bytes (POSIX ACLs are converted to the Linux xattr ACL format).
    pub value: Vec<u8>,
}

/// What `statfs(2)` would report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFs {
    /// Block size in bytes.
    pub block_size: u32,
    /// Blocks available to users in all.
    pub blocks: u64,
    /// Free blocks.
    pub blocks_free: u64,
    /// Free blocks available to unprivileged users.
    pub blocks_avail: u64,
    /// Inodes (node ids) in all.
    pub files: u64,
    /// Free inodes.
    pub files_free: u64,
    /// Longest file name.
    pub name_max: u32,
}

/// [`crate::Fs::rename`] flag: fail with [`crate::Error::Exists`] when the target exists
/// (Linux's `RENAME_NOREPLACE`).
pub const RENAME_NOREPLACE: u32 = 1;
/// [`crate::Fs::rename`] flag: swap source and target atomically; both must exist
/// (Linux's `RENAME_EXCHANGE`).
pub const RENAME_EXCHANGE: u32 = 2;
/// [`crate::Fs::rename`] flag: leave a whiteout at the source (Linux's
/// `RENAME_WHITEOUT`; see [`crate::Fs::rename_as`]).
pub const RENAME_WHITEOUT: u32 = 4;

/// Attributes to change with [`crate::Fs::setattr`]; `None` leaves a field alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits (`0o7777`); the file type bits must be absent or unchanged.
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size in bytes: file data is step 3 of the write path, so any value is
    /// refused with [`crate::Error::Unsupported`] for now.
    pub size: Option<u64>,
    /// New access time.
    pub atime: Option<Timestamp>,
    /// New modification time.
    pub mtime: Option<Timestamp>,
    /// New change time; when `None` and anything changes, the change time becomes now
    /// (as the VFS sets it).
    pub ctime: Option<Timestamp>,
}
