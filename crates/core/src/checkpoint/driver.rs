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
        self.checkpoint_locked_with(rw, writer, umount, true)
    }

    /// GC's checkpoint (the kernel's `f2fs_gc` calls `f2fs_write_checkpoint`, whose
    /// `block_operations` writes dirty directory pages and nodes but never regular
    /// file data): it frees the sections GC emptied and makes the nodes durable,
    /// while files' dirty pages stay in the page cache for writeback (or for GC to
    /// move with their contents). Nodes point at the blocks those pages will replace,
    /// or hold `NEW_ADDR` (counted as valid, as the kernel counts it), so the image is
    /// consistent; a merged [`Fs::sync_fs`] does not take it for a full one
    /// ([`CheckpointWriter::data_version`]).
    pub(crate) fn checkpoint_locked_without_file_data(
        &self,
        rw: &ReadWrite,
        writer: &mut CheckpointWriter,
    ) -> Result<CheckpointReport> {
        self.checkpoint_locked_with(rw, writer, false, false)
    }

    /// [`Fs::checkpoint_locked`]; with `file_data` false regular files' dirty pages
    /// are left in the page cache.
    fn checkpoint_locked_with(
        &self,
        rw: &ReadWrite,
        writer: &mut CheckpointWriter,
        umount: bool,
        file_data: bool,
    ) -> Result<CheckpointReport> {
        crate::lockrank::assert_held(crate::lockrank::Rank::Checkpoint, "a checkpoint");
        rw.check_failed()?;
        // Dirty data first, then the nodes pointing at it, then the NAT (in the writer).
        let before_nat = |cp_ver: u64| -> Result<()> {
            crate::writeback::write_all_pages(&self.tree(rw), file_data)?;
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
        if file_data {
            writer.note_data_written();
        }
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

#[cfg(test)]
mod tests {
    use crate::mkfs::{mkfs, MkfsOptions};
    use crate::{Fs, OpenOptions};

    const RW: OpenOptions = OpenOptions { read_write: true };

    fn read_block(fs: &Fs, ino: crate::Ino, index: u64) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let n = fs.read(ino, index * 4096, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    /// GC's checkpoint writes directories' pages and the nodes and leaves regular
    /// files' dirty pages in the page cache: a crash right after it finds the new
    /// directory entry and the file's old data, and a later `sync_fs`, which merges
    /// with checkpoints started after it began, does not take this one for a full one
    /// and writes the data.
    #[test]
    fn gc_checkpoint_leaves_file_data_and_sync_fs_still_writes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("img");
        let opts = MkfsOptions {
            size_bytes: Some(64 << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let fs = Fs::open_with(&img, &[], RW).unwrap();
        let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        for i in 0..8u64 {
            fs.write(f, i * 4096, &[0xa0; 4096]).unwrap();
        }
        fs.write_checkpoint().unwrap();
        for i in 0..8u64 {
            fs.write(f, i * 4096, &[0xb1; 4096]).unwrap();
        }
        fs.create(fs.root(), b"g", 0o644, 0, 0).unwrap();
        let rw = fs.rw().unwrap();
        let (version, data_version) = {
            let mut writer = rw.cp_exclusive();
            let before = writer.data_version();
            fs.checkpoint_locked_without_file_data(rw, &mut writer).unwrap();
            assert_eq!(writer.data_version(), before, "counted as a full checkpoint");
            (writer.last().cp.checkpoint_ver, before)
        };
        assert!(version > data_version);
        assert_eq!(rw.pages().inode_len(f), 8, "the file's pages were written");
        let cut = tmp.path().join("cut");
        std::fs::copy(&img, &cut).unwrap();
        {
            let crashed = Fs::open_with(&cut, &[], OpenOptions::default()).unwrap();
            assert_eq!(crashed.last_checkpoint().checkpoint_ver, version);
            crashed.lookup(crashed.root(), b"g").unwrap();
            assert_eq!(
                read_block(&crashed, f, 3),
                vec![0xa0; 4096],
                "a crash after GC's checkpoint"
            );
        }
        fs.sync_fs().unwrap();
        assert_eq!(rw.pages().inode_len(f), 0, "sync_fs left the file's pages dirty");
        std::fs::copy(&img, &cut).unwrap();
        let synced = Fs::open_with(&cut, &[], OpenOptions::default()).unwrap();
        assert!(synced.last_checkpoint().checkpoint_ver > version);
        assert_eq!(read_block(&synced, f, 3), vec![0xb1; 4096], "a crash after sync_fs");
        fs.unmount().unwrap();
    }
}
