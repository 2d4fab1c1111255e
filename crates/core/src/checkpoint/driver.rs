//! The checkpoint driver (the kernel's `f2fs_write_checkpoint` around the writer):
//! [`Fs::write_checkpoint`], and [`Fs::checkpoint_locked`] for callers that hold
//! `cp_lock` exclusively: dirty data, then nodes, then the pack ([`super::write`]),
//! then the discards the new checkpoint allows.

use super::write::{CheckpointReport, CheckpointWriter};
use crate::fs::ReadWrite;
use crate::{Fs, Result};

impl Fs {
    /// Makes everything done so far durable as a new checkpoint in the other pack (the
    /// kernel's `f2fs_write_checkpoint`; named so because [`Fs::checkpoint`] reads the
    /// opened one). Fails on a read-only file system, and after any failed checkpoint.
    pub fn write_checkpoint(&self) -> Result<CheckpointReport> {
        self.checkpoint_as(false)
    }

    /// A checkpoint (an unmount one when `umount`) under `cp_lock` held exclusively.
    pub(crate) fn checkpoint_as(&self, umount: bool) -> Result<CheckpointReport> {
        let rw = self.rw()?;
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        self.checkpoint_locked(rw, &mut writer, umount)
    }

    /// Writes a checkpoint; the caller holds `cp_lock` exclusively (`writer`).
    pub(crate) fn checkpoint_locked(
        &self,
        rw: &ReadWrite,
        writer: &mut CheckpointWriter,
        umount: bool,
    ) -> Result<CheckpointReport> {
        crate::lockrank::assert_held(crate::lockrank::Rank::Checkpoint, "a checkpoint");
        rw.check_failed()?;
        // Dirty data first, then the nodes pointing at it, then the NAT (in the writer).
        let before_nat = |cp_ver: u64| -> Result<()> {
            crate::writeback::write_all_pages(&self.tree(rw))?;
            self.nodes
                .write_dirty_nodes(self.dev.as_ref(), &self.sbc.sb, rw.seg_lock(), cp_ver)?;
            Ok(())
        };
        // No operation runs under the exclusive cp_lock: the list matches the nodes.
        let orphans = rw.open_inodes().orphans();
        // A failed checkpoint leaves memory ahead of the disk: the file system stops
        // (every later change and checkpoint fails), whoever asked for it.
        let report = writer
            .write(
                self.dev.as_ref(),
                &self.sbc.sb,
                &self.nodes,
                rw.seg_lock(),
                umount,
                &orphans,
                &before_nat,
            )
            .inspect_err(|e| rw.fail(e))?;
        rw.fsync_track().checkpointed();
        self.nodes.forget_freed_dnodes();
        // Sections freed by this checkpoint are discarded (zones reset) only now that
        // no checkpoint points into them.
        // Under a pacer they stay queued for the cleaner, except at unmount.
        {
            let mut segs = rw.segs();
            let r = segs.discard_freed(self.dev.as_ref());
            let r = r.and_then(|()| {
                if umount {
                    segs.discard_some(self.dev.as_ref(), usize::MAX).map(drop)
                } else {
                    Ok(())
                }
            });
            r.inspect_err(|e| rw.fail(e))?;
        }
        Ok(report)
    }
}
