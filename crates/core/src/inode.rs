//! Inodes: reading, validating, and turning them into [`Stat`].

use crate::node::NodeBlock;
use crate::{Error, FileKind, Fs, Ino, Result, Stat, Timestamp};
use uf2fs_format::node::Inode;

mod write;
pub use write::{now, now_pinned, pin_now, InodeMut};

/// An inode with the raw block its addresses live in.
#[derive(Clone)]
pub struct InodeRef {
    /// Inode number.
    pub ino: Ino,
    /// Decoded fields.
    pub inode: Inode,
    /// The inode's node block.
    pub block: NodeBlock,
    /// The block it was read from, for naming it in errors (`None` while only the
    /// in-memory copy exists).
    pub blkaddr: Option<u64>,
}

fn ts((secs, nsecs): (u64, u32)) -> Timestamp {
    Timestamp {
        secs: secs as i64,
        nsecs: nsecs.min(999_999_999),
    }
}

impl InodeRef {
    /// The file type, or a corruption error for a mode with no valid type.
    pub fn kind(&self) -> Result<FileKind> {
        FileKind::from_mode(self.inode.mode as u32).ok_or_else(|| {
            Error::corrupt(
                format!("inode {}", self.ino),
                self.blkaddr,
                format!("mode {:#o} has no file type", self.inode.mode),
            )
        })
    }

    /// Device number (major, minor) of a device inode, read from the first address slots
    /// (old 16-bit encoding in slot 0, new 32-bit encoding in slot 1).
    fn rdev(&self) -> (u32, u32) {
        let old = self.inode.addr(&self.block, 0);
        if old != 0 {
            return ((old >> 8) & 0xff, old & 0xff);
        }
        let new = self.inode.addr(&self.block, 1);
        ((new & 0xfff00) >> 8, (new & 0xff) | ((new >> 12) & 0xfff00))
    }

    /// `stat(2)` view of this inode.
    pub fn stat(&self) -> Result<Stat> {
        let i = &self.inode;
        let kind = self.kind()?;
        let rdev = if matches!(kind, FileKind::CharDev | FileKind::BlockDev) {
            self.rdev()
        } else {
            (0, 0)
        };
        Ok(Stat {
            ino: self.ino,
            kind,
            mode: i.mode as u32,
            nlink: i.links,
            uid: i.uid,
            gid: i.gid,
            size: i.size,
            // i_blocks counts the inode block too, in the volume's blocks.
            blocks: i
                .blocks
                .saturating_sub(1)
                .saturating_mul(i.geometry.block_size() as u64 / 512),
            blksize: i.geometry.block_size() as u32,
            atime: ts(i.atime),
            mtime: ts(i.mtime),
            ctime: ts(i.ctime),
            crtime: i.crtime.map(ts),
            rdev,
            generation: i.generation,
            flags: i.flags,
        })
    }

    /// Fails with [`Error::Unsupported`] when the contents need a feature uf2fs does not
    /// decode (encryption, an unknown compression algorithm), and with
    /// [`Error::Corrupt`] for compression settings F2FS never writes.
    pub fn check_decodable(&self) -> Result<()> {
        if self.inode.is_encrypted() {
            return Err(Error::Unsupported {
                feature: "encrypt",
                detail: format!("inode {} is encrypted; uf2fs cannot decrypt it", self.ino),
            });
        }
        if self.inode.is_compressed() {
            let Some(c) = self.inode.compress else {
                return Err(Error::corrupt(
                    format!("inode {}", self.ino),
                    self.blkaddr,
                    format!(
                        "compressed file whose extra attributes ({} bytes) do not hold its compression settings",
                        self.inode.extra_isize
                    ),
                ));
            };
            if self.inode.cluster_blocks().is_none() {
                return Err(Error::corrupt(
                    format!("inode {}", self.ino),
                    self.blkaddr,
                    format!("compressed file with clusters of 2^{} blocks", c.log_cluster_size),
                ));
            }
            if self.inode.has_inline(uf2fs_format::node::F2FS_INLINE_DATA) {
                return Err(Error::corrupt(
                    format!("inode {}", self.ino),
                    self.blkaddr,
                    "compressed file with inline data",
                ));
            }
            crate::compress::check_supported(self.ino, &c)?;
        }
        Ok(())
    }
}

impl Fs {
    /// The shape of inode `ino`'s node tree: data addresses in the inode and per direct
    /// node (whole clusters for a compressed file), node ids per indirect node.
    pub fn tree_shape(&self, ino: Ino) -> Result<uf2fs_format::node::TreeShape> {
        Ok(self.inode(ino)?.inode.tree_shape())
    }

    /// Reads and validates inode `ino`.
    ///
    /// On a read-write file system an inode number whose NAT entry is free names an
    /// inode that an unlink freed (a caller holding the number raced it): that is
    /// [`Error::NotFound`], not damage. A directory entry naming a free inode is
    /// damage; those who found the number through an entry tell the two apart.
    pub(crate) fn inode(&self, ino: Ino) -> Result<InodeRef> {
        let block = match self.nodes.read(self.dev.as_ref(), ino, ino) {
            Ok(b) => b,
            Err(e @ Error::Corrupt { .. }) if self.rw.is_some() => {
                let freed = self
                    .nodes
                    .nat_entry(self.dev.as_ref(), ino)
                    .is_ok_and(|n| n.block_addr == uf2fs_format::consts::NULL_ADDR);
                return Err(if freed {
                    Error::NotFound(format!("inode {ino} (removed)"))
                } else {
                    e
                });
            }
            Err(e) => return Err(e),
        };
        let blkaddr = self.nodes.blkaddr_of(self.dev.as_ref(), ino);
        let f = uf2fs_format::node::NodeFooter::decode(&block)
            .map_err(|e| Error::corrupt(format!("inode {ino}"), blkaddr, e.to_string()))?;
        if f.offset() != 0 {
            return Err(Error::corrupt(
                format!("inode {ino}"),
                blkaddr,
                format!("node offset {} (not an inode block)", f.offset()),
            ));
        }
        let sb = &self.sbc.sb;
        let err = |e: uf2fs_format::FormatError| Error::corrupt(format!("inode {ino}"), blkaddr, e.to_string());
        let inode = Inode::decode(&block, sb).map_err(err)?;
        if inode.size > inode.max_file_bytes() {
            return Err(Error::corrupt(
                format!("inode {ino}"),
                blkaddr,
                format!(
                    "size {} exceeds the largest F2FS file ({})",
                    inode.size,
                    inode.max_file_bytes()
                ),
            ));
        }
        if inode.has_checksum(sb) {
            let computed = uf2fs_format::node::inode_checksum(self.checksum_seed, &block).map_err(err)?;
            if computed != inode.inode_checksum {
                return Err(Error::corrupt(
                    format!("inode {ino}"),
                    blkaddr,
                    format!(
                        "checksum mismatch (stored {:#010x}, computed {computed:#010x})",
                        inode.inode_checksum
                    ),
                ));
            }
        }
        Ok(InodeRef {
            ino,
            inode,
            block,
            blkaddr,
        })
    }

    /// Attributes of an inode.
    pub fn stat(&self, ino: Ino) -> Result<Stat> {
        self.stop_on_damage(self.inode(ino).and_then(|i| i.stat()))
    }
}
