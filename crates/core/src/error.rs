//! The one error type of the core.

use std::io;

/// Result with the core's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong reading or writing an F2FS image. Three kinds are never
/// mixed: the image is damaged ([`Error::Corrupt`], `EUCLEAN`, naming the structure
/// and, wherever one is known, its block address), the request is wrong
/// ([`Error::Invalid`] and the other request errors), or uf2fs broke one of its own
/// invariants ([`Error::Bug`], `EIO`: the volume stops writing, as after a device
/// error).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The device failed.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The image is inconsistent: names the structure and, when known, its block address.
    #[error("corrupt {structure}{}: {detail}", .blkaddr.map(|b| format!(" at block {b:#x}")).unwrap_or_default())]
    Corrupt {
        /// Which on-disk structure (e.g. "superblock", "checkpoint", "inode 1234").
        structure: String,
        /// Block address of the structure, when known.
        blkaddr: Option<u64>,
        /// What is wrong.
        detail: String,
    },
    /// uf2fs broke one of its own invariants (state it keeps in memory contradicts
    /// itself, whatever the image holds): a bug in uf2fs, not damage to the image nor a
    /// bad request. A read-write volume stops writing ([`Error::eio`] for every later
    /// change), as after a device error, so that nothing more is built on it.
    #[error("uf2fs bug: {0}; the volume stops writing (please report this)")]
    Bug(String),
    /// The image or file uses an F2FS feature uf2fs cannot decode yet.
    #[error("unsupported F2FS feature '{feature}': {detail}")]
    Unsupported {
        /// Feature name as mkfs.f2fs -O spells it (e.g. "compression", "encrypt").
        feature: &'static str,
        /// What could not be done.
        detail: String,
    },
    /// No such file or directory.
    #[error("no such file or directory: {0}")]
    NotFound(String),
    /// A path component is not a directory.
    #[error("not a directory: {0}")]
    NotDir(String),
    /// The operation needs a non-directory.
    #[error("is a directory: {0}")]
    IsDir(String),
    /// Not a symbolic link.
    #[error("not a symbolic link: {0}")]
    NotSymlink(String),
    /// Too many symbolic links while resolving a path.
    #[error("too many levels of symbolic links: {0}")]
    Loop(String),
    /// A name longer than 255 bytes.
    #[error("file name too long: {0}")]
    NameTooLong(String),
    /// A bad argument from the caller.
    #[error("{0}")]
    Invalid(String),
    /// A write to a file system or device opened read-only.
    #[error("read-only: {0}")]
    ReadOnly(String),
    /// No free section left for a write while blocks are: making room (a checkpoint
    /// of prefree sections, garbage collection) may help.
    #[error("no space left: {0}")]
    NoSpace(String),
    /// Every user block is valid or reserved: nothing but freeing data helps (garbage
    /// collection cannot), so nothing retries.
    #[error("no space left: {0}")]
    NoFreeBlocks(String),
    /// The name already exists.
    #[error("file exists: {0}")]
    Exists(String),
    /// A directory that must be empty is not.
    #[error("directory not empty: {0}")]
    NotEmpty(String),
    /// The operation is not permitted on this kind of file (e.g. a hard link to a
    /// directory).
    #[error("operation not permitted: {0}")]
    NotPermitted(String),
    /// The link count would overflow.
    #[error("too many links: {0}")]
    TooManyLinks(String),
    /// A file would grow past the largest size F2FS can address.
    #[error("file too large: {0}")]
    FileTooBig(String),
    /// No extended attribute of that name (`ENODATA`).
    #[error("no such attribute: {0}")]
    NoAttribute(String),
    /// An extended attribute's value does not fit (`E2BIG`).
    #[error("attribute too large: {0}")]
    AttributeTooBig(String),
    /// A size or length outside what is allowed, e.g. an attribute name over 255 bytes
    /// (`ERANGE`).
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// The operation is refused for this file (`EACCES`), e.g. a default ACL on a file.
    #[error("permission denied: {0}")]
    AccessDenied(String),
    /// The request cannot be done now; trying again may work (`EAGAIN`), e.g. pinning
    /// a file GC has failed to move too often.
    #[error("try again: {0}")]
    TryAgain(String),
}

/// Shows raw name bytes in an error message: lossy UTF-8 with control characters
/// escaped, so a hostile name cannot forge extra lines on a terminal.
pub fn show_name(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

impl Error {
    /// Shorthand for [`Error::Corrupt`].
    pub fn corrupt(structure: impl Into<String>, blkaddr: Option<u64>, detail: impl Into<String>) -> Error {
        Error::Corrupt {
            structure: structure.into(),
            blkaddr,
            detail: detail.into(),
        }
    }

    /// Shorthand for [`Error::Bug`].
    pub fn bug(what: impl Into<String>) -> Error {
        Error::Bug(what.into())
    }

    /// Whether this is uf2fs's own bug ([`Error::Bug`]).
    pub fn is_bug(&self) -> bool {
        matches!(self, Error::Bug(_))
    }

    /// An [`Error::Io`] with `EIO` saying `context`: what a file system that stopped
    /// after a device error answers every later change (Linux F2FS's `-EIO` once
    /// `f2fs_stop_checkpoint` has run).
    pub fn eio(context: impl Into<String>) -> Error {
        Error::Io {
            context: context.into(),
            source: io::Error::from_raw_os_error(5),
        }
    }

    /// Whether this is a lack of space ([`Error::NoSpace`] or
    /// [`Error::NoFreeBlocks`], both `ENOSPC`).
    pub fn is_no_space(&self) -> bool {
        matches!(self, Error::NoSpace(_) | Error::NoFreeBlocks(_))
    }

    /// The `errno` that best describes this error (used by the FUSE adapter).
    pub fn errno(&self) -> i32 {
        // Values are Linux errno numbers; kept here so every front end agrees.
        match self {
            Error::Io { source, .. } => source.raw_os_error().unwrap_or(5), // EIO
            Error::Corrupt { .. } => 117,                                   // EUCLEAN (EFSCORRUPTED)
            Error::Bug(_) => 5,                                             // EIO
            Error::Unsupported { .. } => 95,                                // EOPNOTSUPP
            Error::NotFound(_) => 2,                                        // ENOENT
            Error::NotDir(_) => 20,                                         // ENOTDIR
            Error::IsDir(_) => 21,                                          // EISDIR
            Error::NotSymlink(_) => 22,                                     // EINVAL
            Error::Loop(_) => 40,                                           // ELOOP
            Error::NameTooLong(_) => 36,                                    // ENAMETOOLONG
            Error::Invalid(_) => 22,                                        // EINVAL
            Error::ReadOnly(_) => 30,                                       // EROFS
            Error::NoSpace(_) | Error::NoFreeBlocks(_) => 28,               // ENOSPC
            Error::Exists(_) => 17,                                         // EEXIST
            Error::NotEmpty(_) => 39,                                       // ENOTEMPTY
            Error::NotPermitted(_) => 1,                                    // EPERM
            Error::TooManyLinks(_) => 31,                                   // EMLINK
            Error::FileTooBig(_) => 27,                                     // EFBIG
            Error::NoAttribute(_) => 61,                                    // ENODATA
            Error::AttributeTooBig(_) => 7,                                 // E2BIG
            Error::OutOfRange(_) => 34,                                     // ERANGE
            Error::AccessDenied(_) => 13,                                   // EACCES
            Error::TryAgain(_) => 11,                                       // EAGAIN
        }
    }
}
