//! uf2fs-format: the F2FS on-disk format, pure and without IO.
//!
//! Every structure has a `decode(&[u8]) -> Result<T, FormatError>` that validates what it
//! can see on its own (sizes, magic numbers, checksums, ranges that do not need the rest of
//! the image). Cross-structure checks (a NAT entry pointing outside the main area, ...)
//! belong to the core, which knows the geometry. Nothing here panics on any input: the
//! fuzz targets in `fuzz/` hold us to that.
//!
//! All integers are little-endian on disk. Field names follow the kernel's
//! `include/linux/f2fs_fs.h` so the two read side by side.

pub mod casefold;
mod casefold_tables;
pub mod checkpoint;
pub mod cluster;
pub mod consts;
pub mod crc;
pub mod dentry;
mod error;
pub mod geometry;
pub mod hash;
pub mod le;
pub mod nat;
pub mod node;
pub mod quota;
pub mod sit;
pub mod summary;
pub mod superblock;
pub mod xattr;

pub use error::FormatError;
pub use geometry::Geometry;

/// Result with [`FormatError`].
pub type Result<T> = std::result::Result<T, FormatError>;
