//! fsync of a file (F2FS's `f2fs_sync_file`): the file's pages written back, then its
//! direct nodes with the fsync mark in the warm node log for roll-forward recovery, or
//! a checkpoint where recovery could not rebuild the file (see [`Fs::fsync`]); empty
//! direct nodes over the ones a truncate freed since the last checkpoint.

use crate::segment::LogType;
use crate::{FileKind, Fs, Ino, Result};
use uf2fs_format::consts::{NEW_ADDR, NULL_ADDR};

/// Empty direct nodes one fsync writes at most (for direct nodes a truncate freed since
/// the last checkpoint, see [`Fs::fsync`]); past them a checkpoint is cheaper, and the
/// fsync writes one.
const EMPTY_RECORDS_MAX: usize = 128;

impl Fs {
    /// Makes file `ino`'s data and metadata durable before returning. Its dirty pages
    /// are written back; then, as Linux F2FS does under `fsync_mode=posix`, a regular
    /// file's direct nodes go to the warm node log with the fsync mark (the inode block
    /// last, with the dentry mark when the file is new since the last checkpoint),
    /// between two device flushes (the first makes the data they point at durable): roll-forward recovery (at the next read-write open) replays them
    /// after a crash. A checkpoint is written instead for everything else, as the
    /// kernel's `need_do_checkpoint` decides: not a regular file, a compressed file, a
    /// link count other than one, a name or parent changed since the last checkpoint, a
    /// directory renamed since the last checkpoint, a parent directory not yet
    /// checkpointed, two active logs, little free space, or `fsync_mode=strict`; and,
    /// unlike the kernel, where fsck.f2fs 1.15 would refuse or not see the records: a
    /// node of the chain, or a data block the file's nodes there point at, in the last
    /// main segments (see [`crate::segment::fsck_roll_forward_limit`]). A file
    /// shrunk since the last checkpoint is fsync'd by roll-forward too: for each direct
    /// node the shrink freed, an empty direct node of that offset goes first, so that
    /// recovery frees the blocks it held (more than 128 of them: a
    /// checkpoint). `datasync` changes nothing: both write the same.
    pub fn fsync(&self, ino: Ino, datasync: bool) -> Result<()> {
        self.stop_on_damage(self.fsync_inner(ino, datasync))
    }

    /// [`Fs::fsync`], before damage it reports stops the volume.
    fn fsync_inner(&self, ino: Ino, datasync: bool) -> Result<()> {
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
    ///
    /// Locks: the first device flush (the data the nodes point at made durable) is done
    /// with no lock held: under the inode's lock and `cp_lock` shared it stalled every
    /// operation on the file, and a checkpoint queued behind it every new operation of
    /// the mount. The checks are made under the locks before it (so that a file that
    /// needs a checkpoint costs no extra flush) and again after it.
    fn fsync_roll_forward(&self, rw: &crate::fs::ReadWrite, ino: Ino) -> Result<bool> {
        let settings = self.settings();
        if settings.fsync_mode == crate::settings::FsyncMode::Strict
            || settings.active_logs.log_for(LogType::WarmNode) != LogType::WarmNode
        {
            return Ok(false);
        }
        {
            let _cp = rw.cp_shared();
            rw.check_failed()?;
            let _g = rw.lock_inodes(&[ino]);
            if !self.can_roll_forward(rw, ino)? {
                return Ok(false);
            }
        }
        let barrier = settings.fsync_mode != crate::settings::FsyncMode::NoBarrier;
        let dev = self.device();
        // The data the nodes point at is durable before any node is written: a power
        // cut during this fsync then leaves either the nodes of the last complete fsync
        // or these with their data, never a node pointing at a block still in flight
        // (the crash harness caught that: stale blocks in a file fsync'd before).
        let data_before = self.data_blocks_written();
        if barrier {
            dev.flush().inspect_err(|e| rw.fail(e))?;
        }
        let cp = rw.cp_shared();
        rw.check_failed()?;
        let _g = rw.lock_inodes(&[ino]);
        if !self.can_roll_forward(rw, ino)? {
            return Ok(false);
        }
        if barrier && self.data_blocks_written() != data_before {
            // Data blocks reached the device after the flush began (a flusher, the
            // collector moving blocks, another fsync): some may be this file's, and the
            // nodes written below must not reach the device before them. The on-disk
            // order requires this flush under the locks: released, more could come.
            dev.flush().inspect_err(|e| rw.fail(e))?;
        }
        let freed = self.nodes().take_freed_dnodes(ino);
        let empty = match self.empty_records(rw, ino, &freed) {
            Ok(e) if e.len() <= EMPTY_RECORDS_MAX => e,
            Ok(_) => {
                self.nodes().restore_freed_dnodes(ino, freed);
                return Ok(false);
            }
            Err(e) => {
                self.nodes().restore_freed_dnodes(ino, freed);
                return Err(e);
            }
        };
        let dent = !self.is_checkpointed_inode(ino) && !rw.fsync_track().dentry_marked(ino);
        let written = self.nodes().write_fsync_nodes(
            dev,
            self.superblock(),
            rw.seg_lock(),
            ino,
            cp.last().node_version(),
            dent,
            &empty,
        );
        match written {
            Err(e) => {
                rw.fail(&e);
                return Err(e);
            }
            Ok(None) => {
                // fsck.f2fs would not follow these records: a checkpoint instead.
                self.nodes().restore_freed_dnodes(ino, freed);
                return Ok(false);
            }
            Ok(Some(_)) => {}
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

    /// Whether an fsync of `ino` can be made durable by roll-forward records (the
    /// kernel's `need_do_checkpoint`, negated). The caller holds `cp_lock` shared and
    /// the inode's lock.
    fn can_roll_forward(&self, rw: &crate::fs::ReadWrite, ino: Ino) -> Result<bool> {
        if rw.fsync_track().must_checkpoint(ino) {
            return Ok(false);
        }
        let inode = self.tree(rw).load_inode(ino)?;
        if inode.kind()? != FileKind::File || inode.inode.is_compressed() || inode.inode.links != 1 {
            return Ok(false);
        }
        if inode.inode.pino == 0 || !self.is_checkpointed_inode(inode.inode.pino) {
            return Ok(false);
        }
        // Room for what recovery writes: the nodes written now again, and the chain.
        // And a chain fsck.f2fs 1.15 follows to the end (see
        // `crate::segment::fsck_roll_forward_limit`; checked again as the nodes take
        // their blocks).
        let segs = rw.segs();
        Ok(segs.fsync_chain_intact()
            && !segs.data_past_fsck_limit(ino)
            && segs.free_section_count() > segs.reserved_sections() + 2)
    }

    /// The empty direct nodes an fsync of `ino` writes before its own nodes (see
    /// [`crate::node::NodeManager::note_freed_dnode`]): one per offset of `freed` (its
    /// direct nodes freed since the last checkpoint) where the file has no direct node
    /// now. A direct node there now was made after the one freed, so recovery finds it
    /// later in the log (written before or by this fsync) and replays it whole.
    fn empty_records(&self, rw: &crate::fs::ReadWrite, ino: Ino, freed: &[(u32, u32)]) -> Result<Vec<(u32, u32)>> {
        if freed.is_empty() {
            return Ok(Vec::new());
        }
        let t = self.tree(rw);
        let inode = t.load_inode(ino)?;
        let geo = inode.inode.geometry;
        let (per_inode, per_block) = (
            inode.inode.addrs_per_inode() as u64,
            inode.inode.addrs_per_block() as u64,
        );
        let mut by_offset = std::collections::BTreeMap::new();
        for &(nid, offset) in freed {
            let Some(first) =
                crate::recovery::first_index_of(offset, per_inode, per_block, geo.nids_per_block() as u64)
            else {
                continue;
            };
            let live = t.locate(&inode, first)?.is_some_and(|l| !l.in_inode);
            if !live {
                by_offset.insert(offset, nid);
            }
        }
        Ok(by_offset.into_iter().map(|(offset, nid)| (nid, offset)).collect())
    }

    /// Whether inode `nid` is in the last checkpoint's NAT (written there, not new).
    fn is_checkpointed_inode(&self, nid: u32) -> bool {
        self.nodes()
            .checkpointed_entry(self.device(), nid)
            .is_ok_and(|e| e.ino == nid && e.block_addr != NULL_ADDR && e.block_addr != NEW_ADDR)
    }

    /// Data blocks written to the device since open (by the page cache, the collector,
    /// or without a kind in the main area): counted once each write has returned.
    fn data_blocks_written(&self) -> u64 {
        let c = self.writes.counts();
        c.user_data + c.gc_data + c.main_other
    }
}
