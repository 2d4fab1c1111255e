//! TEMPORARY API SKELETON: signatures are final, bodies are being written.
use crate::{DirEntry, Error, Ino, Result, Stat, StatFs, Xattr};
use std::path::Path;

/// A mounted (opened) F2FS file system. `Send + Sync`.
pub struct Fs {}

/// Summary of an image for `uf2fs info`: its `Display` is the human-readable report.
#[derive(Debug, Clone)]
pub struct FsInfo {
    /// The report, one `key: value` per line.
    pub text: String,
}

impl std::fmt::Display for FsInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn todo<T>() -> Result<T> {
    Err(Error::Invalid("not implemented yet".into()))
}

impl Fs {
    /// Open an image file or block device read-only. Extra devices of a multi-device
    /// F2FS follow in `more_devices`, in superblock order.
    pub fn open(_image: &Path, _more_devices: &[&Path]) -> Result<Fs> {
        todo()
    }
    /// The root directory's inode number.
    pub fn root(&self) -> Ino {
        3
    }
    /// Geometry, features, active checkpoint and counts.
    pub fn info(&self) -> Result<FsInfo> {
        todo()
    }
    /// Attributes of an inode.
    pub fn stat(&self, _ino: Ino) -> Result<Stat> {
        todo()
    }
    /// Look `name` up in directory `dir` ("." and ".." work too). `Error::NotFound` if absent.
    pub fn lookup(&self, _dir: Ino, _name: &[u8]) -> Result<Ino> {
        todo()
    }
    /// Resolve an absolute path inside the image ("/" is the root). Intermediate symlinks
    /// are followed (relative to the image's root); the last component is followed only
    /// when `follow_last` is true.
    pub fn resolve(&self, _path: &[u8], _follow_last: bool) -> Result<Ino> {
        todo()
    }
    /// All entries of a directory except "." and "..", in on-disk order.
    pub fn read_dir(&self, _dir: Ino) -> Result<Vec<DirEntry>> {
        todo()
    }
    /// Read file data at `offset` into `buf`; returns bytes read, short only at end of file.
    pub fn read(&self, _ino: Ino, _offset: u64, _buf: &mut [u8]) -> Result<usize> {
        todo()
    }
    /// Target of a symbolic link.
    pub fn read_link(&self, _ino: Ino) -> Result<Vec<u8>> {
        todo()
    }
    /// All extended attributes of an inode.
    pub fn list_xattrs(&self, _ino: Ino) -> Result<Vec<Xattr>> {
        todo()
    }
    /// One extended attribute by full name, `None` when absent.
    pub fn get_xattr(&self, _ino: Ino, _name: &[u8]) -> Result<Option<Vec<u8>>> {
        todo()
    }
    /// File system statistics.
    pub fn statfs(&self) -> Result<StatFs> {
        todo()
    }
}
