//! [`InodeMut`]: an inode being changed by a write operation, its decoded fields and its
//! raw block side by side until it is stored back as a dirty node block.

use crate::segment::LogType;
use crate::{Error, FileKind, Ino, Result};
use uf2fs_format::consts::I_ADDR_OFFSET;
use uf2fs_format::le::{put_u32, u32_at};
use uf2fs_format::node::{seal_inode_checksum, Inode, RawTime, F2FS_INLINE_DATA, F2FS_INLINE_DENTRY};
use uf2fs_format::superblock::Superblock;

thread_local! {
    /// The time [`now`] gives on this thread instead of the clock's ([`pin_now`]).
    static PINNED: std::cell::Cell<Option<RawTime>> = const { std::cell::Cell::new(None) };
}

/// Makes the inode clock (`now`) give `t` on the calling thread (`None`: the clock again), for a
/// builder whose output must not depend on when it ran: the times that creates,
/// writes and links put in inodes (and in any copy of an inode written before the
/// builder stamps the final times) are then fixed, and new inodes get generation 0.
pub fn pin_now(t: Option<RawTime>) {
    PINNED.with(|p| p.set(t));
}

/// Whether [`pin_now`] fixed the time on this thread.
pub fn now_pinned() -> bool {
    PINNED.with(|p| p.get().is_some())
}

/// Now, as F2FS stores times (or the time [`pin_now`] fixed on this thread).
pub fn now() -> RawTime {
    if let Some(t) = PINNED.with(|p| p.get()) {
        return t;
    }
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs(), d.subsec_nanos())
}

/// An inode being changed: the fields in `inode` are written back over `block` by
/// [`InodeMut::finish`]; data address slots and inline areas are changed in `block`
/// directly.
#[derive(Debug, Clone)]
pub struct InodeMut {
    /// Inode number.
    pub ino: Ino,
    /// Decoded fields (the source of truth for every field but addresses and inline
    /// areas).
    pub inode: Inode,
    /// The raw inode block.
    pub block: Vec<u8>,
}

impl InodeMut {
    /// The file type.
    pub fn kind(&self) -> Result<FileKind> {
        FileKind::from_mode(self.inode.mode as u32).ok_or_else(|| {
            Error::corrupt(
                format!("inode {}", self.ino),
                None,
                format!("mode {:#o} has no file type", self.inode.mode),
            )
        })
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        FileKind::from_mode(self.inode.mode as u32) == Some(FileKind::Dir)
    }

    /// The node log its direct nodes go to: hot for directories, warm for the rest.
    pub fn node_log(&self) -> LogType {
        if self.is_dir() {
            LogType::HotNode
        } else {
            LogType::WarmNode
        }
    }

    /// Whether the inode block holds inline data or inline dentries where addresses
    /// would be.
    pub fn is_inline(&self) -> bool {
        self.inode.has_inline(F2FS_INLINE_DATA | F2FS_INLINE_DENTRY)
    }

    /// Data address `i` held in the inode (0..addrs_per_inode).
    pub fn slot(&self, i: usize) -> u32 {
        u32_at(&self.block, I_ADDR_OFFSET + 4 * (self.inode.addr_start() + i))
    }

    /// Sets data address `i` held in the inode.
    pub fn set_slot(&mut self, i: usize, addr: u32) {
        let at = I_ADDR_OFFSET + 4 * (self.inode.addr_start() + i);
        put_u32(&mut self.block, at, addr);
    }

    /// The inline data (or inline dentry) area.
    pub fn inline_area(&mut self) -> &mut [u8] {
        let r = self.inode.inline_data_range();
        &mut self.block[r]
    }

    /// The finished block: fields encoded, checksum sealed.
    pub fn finish(mut self, sb: &Superblock) -> Result<Vec<u8>> {
        let bad = |e: uf2fs_format::FormatError| Error::Invalid(format!("cannot encode inode {}: {e}", self.ino));
        self.inode.encode_fields(&mut self.block, sb).map_err(bad)?;
        seal_inode_checksum(&mut self.block, sb).map_err(bad)?;
        Ok(self.block)
    }
}
