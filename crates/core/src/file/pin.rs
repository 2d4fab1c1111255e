//! Pinned files (`F2FS_IOC_SET_PIN_FILE`, `F2FS_IOC_GET_PIN_FILE`), as Linux's
//! `f2fs_ioc_set_pin_file` keeps them: `F2FS_PIN_FILE` in the inode's `i_inline` and
//! the count of foreground GC passes that could not move the file's blocks in
//! `i_gc_failures`. A pinned file's blocks stay where they are: GC leaves them
//! (`gc/migrate.rs`), writeback updates them in place (`writeback/mod.rs`), and
//! fallocate gives them real blocks at once (`file/fallocate.rs`).

use super::{data_log, inline};
use crate::gc::GC_PIN_FILE_THRESHOLD;
use crate::ops::need;
use crate::{Error, FileKind, Fs, Ino, Result};
use uf2fs_format::node::{F2FS_COMPR_FL, F2FS_PIN_FILE};

impl Fs {
    /// `F2FS_IOC_GET_PIN_FILE`: the GC failures of pinned file `ino`
    /// (`i_gc_failures`), 0 for a file that is not pinned.
    pub fn pin_file(&self, ino: Ino) -> Result<u32> {
        let i = self.inode(ino)?;
        Ok(if i.inode.is_pinned() {
            u32::from(i.inode.gc_failures())
        } else {
            0
        })
    }

    /// `F2FS_IOC_SET_PIN_FILE`: pins regular file `ino` (`pin`) or unpins it, as Linux
    /// does. Unpinning clears the flag and the GC failures and answers 0. Pinning
    /// answers the file's GC failures; it is refused for a file GC failed to move more
    /// than [`GC_PIN_FILE_THRESHOLD`] times ([`Error::TryAgain`], EAGAIN, and the pin
    /// is dropped) and for a compressed file with blocks, written or dirty
    /// ([`Error::Unsupported`], EOPNOTSUPP); a compressed file without blocks stops
    /// being one (`f2fs_disable_compressed_file`), an inline file is converted to
    /// block addressing. Not a regular file: [`Error::Invalid`] (EINVAL).
    pub fn set_pin_file(&self, ino: Ino, pin: bool) -> Result<u32> {
        let rw = self.rw()?;
        let mut op = self.begin_op()?;
        let r = (|| {
            let _g = rw.lock_inodes(&[ino]);
            let mut i = op.load(ino)?;
            if i.kind()? != FileKind::File {
                return Err(Error::Invalid(format!(
                    "inode {ino} is not a regular file: it cannot be pinned"
                )));
            }
            if !pin {
                if !i.inode.is_pinned() && i.inode.gc_failures() == 0 {
                    return Ok(0);
                }
                op.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
                op.commit();
                i.inode.inline &= !F2FS_PIN_FILE;
                i.inode.set_gc_failures(0);
                op.t.store_inode(i)?;
                return Ok(0);
            }
            let failures = i.inode.gc_failures();
            if failures > GC_PIN_FILE_THRESHOLD {
                if i.inode.is_pinned() {
                    op.ensure_room(need([0, 0, 0, 0, 1, 0], 0), 0)?;
                    op.commit();
                    i.inode.inline &= !F2FS_PIN_FILE;
                    op.t.store_inode(i)?;
                }
                return Err(Error::TryAgain(format!(
                    "GC failed to move inode {ino}'s blocks {failures} times; it stays unpinned"
                )));
            }
            let compressed = i.inode.is_compressed();
            if compressed && (i.inode.blocks > 1 || op.t.pages.has_inode(ino)) {
                return Err(Error::Unsupported {
                    feature: "compression",
                    detail: format!("inode {ino} is a compressed file with blocks: it cannot be pinned"),
                });
            }
            let log = data_log(&i, op.t.segs);
            let block0 = u64::from(inline::conversion_makes_block(&i));
            op.ensure_room(need([block0, block0, block0, 0, 1, 0], block0), 0)?;
            op.commit();
            inline::convert(&mut op.t, &mut i, log)?;
            if compressed {
                i.inode.flags &= !F2FS_COMPR_FL;
                i.inode.compress = None;
            }
            i.inode.inline |= F2FS_PIN_FILE;
            op.t.store_inode(i)?;
            Ok(u32::from(failures))
        })();
        op.end(r)
    }
}
