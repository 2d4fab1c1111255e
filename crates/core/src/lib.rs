//! uf2fs-core: a userspace implementation of Linux F2FS.
//!
//! [`Fs`] is the entry point: open an image or block device, then look up paths, read
//! directories, files, symlinks and extended attributes. Every structure read from the
//! device is validated; a bad image gives an [`Error::Corrupt`] naming the structure and
//! its block address, never a panic.

mod api;
pub mod background;
mod casefold;
pub mod checkpoint;
pub mod clock;
pub mod compress;
mod data;
pub mod device;
mod dir;
mod error;
mod file;
mod fs;
pub mod gc;
mod info;
mod inode;
mod label;
mod lockrank;
pub mod mkfs;
mod mount;
mod namei;
mod node;
mod ops;
mod orphan;
mod pagecache;
pub mod quota;
mod recovery;
pub mod segment;
pub mod settings;
mod tree;
pub mod writeback;
mod xattr;

pub use api::{
    DirEntry, FileKind, Ino, SetAttr, Stat, StatFs, Timestamp, Xattr, RENAME_EXCHANGE, RENAME_NOREPLACE,
    RENAME_WHITEOUT,
};
pub use checkpoint::periodic::CheckpointDue;
pub use checkpoint::write::CheckpointReport;
pub use compress::{CompressMode, CompressOptions};
pub use data::Seek;
pub use error::{show_name, Error, Result};
pub use file::atomic::{AtomicWrite, ATOMIC_MAX_BLOCKS};
pub use file::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE};
pub use fs::Fs;
pub use gc::{
    Accounting, BgCleaner, BgOutcome, BgTimes, CompressionSaved, GcKind, GcPacing, GcPolicy, GcRangeReport,
    GcRangeStop, GcStats, KernelGcLoop, PacingSettings, PacingStats, PassCounts, Status, WriterModel, PASS_DIRTY_BINS,
    PASS_DIRTY_BIN_PAGES, PASS_FREE_BINS, PASS_WORK_BINS,
};
pub use info::FsInfo;
pub use inode::pin_now;
pub use label::FSLABEL_MAX;
pub use mkfs::{mkfs, MkfsOptions, MkfsReport};
pub use mount::OpenOptions;
pub use namei::{flags, Creator, Stamp};
pub use node::TreeShape;
pub use settings::{ActiveLogs, AllocMode, BackgroundGc, FsyncMode, Settings};
pub use writeback::pace::{WRITER_HOLD_MAX_PAGES, WRITER_HOLD_MIN_PAGES, WRITER_HOLD_PAGES};
pub use xattr::{XATTR_ACL_KILL_SGID, XATTR_CREATE, XATTR_REPLACE};
