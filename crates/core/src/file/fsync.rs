//! fsync of a file (F2FS's `f2fs_sync_file`): the file's pages written back, then its
//! direct nodes with the fsync mark in the warm node log for roll-forward recovery, or
//! a checkpoint where recovery could not rebuild the file (see [`Fs::fsync`]).

use crate::segment::LogType;
use crate::{FileKind, Fs, Ino, Result};
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR};

impl Fs {
    /// Makes file `ino`'s data and metadata durable before returning. Its dirty pages
    /// are written back; then, as Linux F2FS does under `fsync_mode=posix`, a regular
    /// file's direct nodes go to the warm node log with the fsync mark (the inode block
    /// last, with the dentry mark when the file is new since the last checkpoint),
    /// between two device flushes (the first makes the data they point at durable): roll-forward recovery (at the next read-write open) replays them
    /// after a crash. A checkpoint is written instead for everything else, as the
    /// kernel's `need_do_checkpoint` decides: not a regular file, a compressed file, a
    /// link count other than one, a name or parent changed since the last checkpoint, a
    /// directory renamed since the last checkpoint, the file shrunk or holes punched or
    /// zeroed in it since the last checkpoint (direct nodes freed), a parent directory
    /// not yet checkpointed, two active logs, little free space, or `fsync_mode=strict`.
    /// `datasync` changes nothing: both write the same.
    pub fn fsync(&self, ino: Ino, datasync: bool) -> Result<()> {
        let _ = datasync;
        let rw = self.rw()?;
        self.live_inode(ino)?;
        self.writeback_inode(ino)?;
        if self.fsync_roll_forward(rw, ino)? {
            rw.fsync_track().count(true);
            return Ok(());
        }
        self.sync_fs()?;
        rw.fsync_track().count(false);
        Ok(())
    }

    /// The roll-forward half of [`Fs::fsync`]: false when a checkpoint must be written
    /// instead.
    fn fsync_roll_forward(&self, rw: &crate::fs::ReadWrite, ino: Ino) -> Result<bool> {
        let settings = self.settings();
        if settings.fsync_mode == crate::settings::FsyncMode::Strict
            || settings.active_logs.log_for(LogType::WarmNode) != LogType::WarmNode
        {
            return Ok(false);
        }
        let cp = rw.cp_shared();
        rw.check_failed()?;
        let _g = rw.lock_inodes(&[ino]);
        if rw.fsync_track().must_checkpoint(ino) {
            return Ok(false);
        }
        let inode = self.tree(rw).load_inode(ino)?;
        if inode.kind()? != FileKind::File || inode.inode.is_compressed() || inode.inode.links != 1 {
            return Ok(false);
        }
        let dev = self.device();
        let checkpointed = |nid: u32| {
            self.nodes()
                .checkpointed_entry(dev, nid)
                .is_ok_and(|e| e.ino == nid && e.block_addr != NULL_ADDR && e.block_addr != NEW_ADDR)
        };
        if inode.inode.pino == 0 || !checkpointed(inode.inode.pino) {
            return Ok(false);
        }
        // Room for what recovery writes: the nodes written now again, and the chain.
        {
            let segs = rw.segs();
            if segs.free_section_count() <= segs.reserved_sections() + 2 {
                return Ok(false);
            }
        }
        let dent = !checkpointed(ino) && !rw.fsync_track().dentry_marked(ino);
        let barrier = settings.fsync_mode != crate::settings::FsyncMode::NoBarrier;
        // The data the nodes point at is durable before any node is written: a power
        // cut during this fsync then leaves either the nodes of the last complete fsync
        // or these with their data, never a node pointing at a block still in flight
        // (the crash harness caught that: stale blocks in a file fsync'd before).
        if barrier {
            dev.flush().inspect_err(|e| rw.fail(e))?;
        }
        let written = self.nodes().write_fsync_nodes(
            dev,
            self.superblock(),
            rw.seg_lock(),
            ino,
            cp.last().node_version(),
            dent,
        );
        if let Err(e) = written {
            rw.fail(&e);
            return Err(e);
        }
        if dent {
            rw.fsync_track().mark_dentry(ino);
        }
        drop(_g);
        drop(cp);
        if barrier {
            // A failed flush leaves the nodes' durability unknown: the volume stops.
            dev.flush().inspect_err(|e| rw.fail(e))?;
        }
        Ok(true)
    }
}
