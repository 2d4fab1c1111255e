//! [`FsyncTrack`]: what roll-forward fsync must know about inodes since the last
//! checkpoint (the kernel keeps the same in NAT cache flags and inode flags).

use crate::Ino;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Per-inode facts that decide how an fsync makes a file durable, all forgotten at the
/// next checkpoint.
#[derive(Debug, Default)]
pub struct FsyncTrack {
    inner: Mutex<Tracked>,
    /// fsyncs made durable by roll-forward records, and by checkpoints, since open.
    by_roll_forward: AtomicU64,
    by_checkpoint: AtomicU64,
    /// What roll-forward recovery replayed at open: inodes and node blocks.
    recovered: (AtomicU64, AtomicU64),
}

#[derive(Debug, Default)]
struct Tracked {
    /// Inodes an fsync wrote with the dentry mark: a later fsync need not mark them
    /// again (the kernel's `HAS_FSYNCED_INODE`).
    dentry_marked: HashSet<Ino>,
    /// Inodes whose name or parent changed (rename, link, unlink of another name), or
    /// changed by an atomic commit that shrank or replaced them: recovery would link
    /// them under a name they no longer have (the kernel's `file_wrong_pino`), or
    /// replay part of the commit; their fsync writes a checkpoint. (Direct nodes a
    /// truncate frees are recorded by the node manager instead.)
    need_checkpoint: HashSet<Ino>,
    /// A directory was renamed (or replaced by a rename): paths below it changed, and
    /// recovery would link an fsync'd file under its parent's old path.
    dir_renamed: bool,
}

impl FsyncTrack {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tracked> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Inode `ino` changed in a way only a checkpoint records.
    pub fn needs_checkpoint(&self, ino: Ino) {
        self.lock().need_checkpoint.insert(ino);
    }

    /// A directory was renamed: every fsync writes a checkpoint until the next one.
    pub fn directory_renamed(&self) {
        self.lock().dir_renamed = true;
    }

    /// Whether an fsync of `ino` must write a checkpoint.
    pub fn must_checkpoint(&self, ino: Ino) -> bool {
        let t = self.lock();
        t.dir_renamed || t.need_checkpoint.contains(&ino)
    }

    /// Whether `ino`'s inode block already went out with the dentry mark.
    pub fn dentry_marked(&self, ino: Ino) -> bool {
        self.lock().dentry_marked.contains(&ino)
    }

    /// Records that `ino`'s inode block went out with the dentry mark.
    pub fn mark_dentry(&self, ino: Ino) {
        self.lock().dentry_marked.insert(ino);
    }

    /// Counts an fsync, made durable by a roll-forward record or by a checkpoint.
    pub fn count(&self, roll_forward: bool) {
        let c = if roll_forward {
            &self.by_roll_forward
        } else {
            &self.by_checkpoint
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// fsyncs since open: (by roll-forward records, by checkpoints).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.by_roll_forward.load(Ordering::Relaxed),
            self.by_checkpoint.load(Ordering::Relaxed),
        )
    }

    /// Records what recovery replayed at open.
    pub fn set_recovered(&self, inodes: u64, nodes: u64) {
        self.recovered.0.store(inodes, Ordering::Relaxed);
        self.recovered.1.store(nodes, Ordering::Relaxed);
    }

    /// What recovery replayed at open: (inodes, node blocks).
    pub fn recovered(&self) -> (u64, u64) {
        (
            self.recovered.0.load(Ordering::Relaxed),
            self.recovered.1.load(Ordering::Relaxed),
        )
    }

    /// A checkpoint is durable: everything is recorded there.
    pub fn checkpointed(&self) {
        let mut t = self.lock();
        t.dentry_marked.clear();
        t.need_checkpoint.clear();
        t.dir_renamed = false;
    }
}
