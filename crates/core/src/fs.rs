//! [`Fs`]: an opened F2FS image, and [`ReadWrite`], the state only a read-write one has.
//! Opening and closing are [`crate::mount`]'s (the kernel's super.c); the read API lives
//! beside its subsystems ([`crate::inode`], [`crate::dir`], [`crate::data`],
//! [`crate::xattr`], [`crate::info`]), the checkpoint driver in `checkpoint/driver.rs`.
//!
//! Lock order of a read-write file system: [`crate::lockrank`] (one list, checked in
//! debug builds and against docs/architecture.md).
//!
//! Readers (lookup, stat, read_dir) take no lock of this list but the managers' own:
//! they see each change whole or not at all, per block. File reads of a read-write
//! file system hold `cp_lock` shared and the file's inode lock, as a writer does (the
//! page cache moves blocks to the device under those).

use crate::checkpoint::write::CheckpointWriter;
use crate::checkpoint::{CheckpointState, SuperblockChoice};
use crate::data::Mapper;
use crate::device::{read_block, BlockDevice};
use crate::inode::InodeRef;
use crate::lockrank::{Rank, Ranked};
use crate::node::NodeManager;
use crate::segment::SegmentManager;
use crate::{Error, Ino, Result};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

/// An opened F2FS file system, read-only or read-write. `Send + Sync`. Its fields are
/// the crate's (`mount.rs` builds them; the subsystems' `impl Fs` blocks read
/// them); those of `ReadWrite` stay private to this file.
pub struct Fs {
    pub(crate) dev: Box<dyn BlockDevice>,
    /// Blocks written, by kind (the device above counts them).
    pub(crate) writes: crate::device::WriteCounter,
    pub(crate) sbc: SuperblockChoice,
    pub(crate) cps: CheckpointState,
    pub(crate) nodes: NodeManager,
    pub(crate) paths: Vec<PathBuf>,
    /// CRC seed for inode checksums, derived from the volume UUID.
    pub(crate) checksum_seed: u32,
    /// Present when opened read-write.
    pub(crate) rw: Option<ReadWrite>,
    /// Recently decoded clusters of compressed files.
    pub(crate) clusters: crate::compress::ClusterCache,
    /// Whether a read-only open replayed fsync'd data in memory ([`Fs::mount`]).
    pub(crate) replayed: bool,
}

/// The state only a read-write file system has. Its fields are private to this file:
/// the subsystems are handed each part by the method named for it (see `impl
/// ReadWrite`, in the lock order of [`crate::lockrank`]), as the node-tree writer is
/// handed its parts by [`Fs::tree`].
pub(crate) struct ReadWrite {
    /// F2FS's cp_rwsem; guards the checkpoint writer.
    cp_lock: RwLock<CheckpointWriter>,
    segs: Mutex<SegmentManager>,
    /// Dirty data blocks.
    pages: crate::pagecache::PageCache,
    /// Held by renames (see the lock order).
    rename_lock: Mutex<()>,
    /// Inodes held by running operations.
    locks: crate::namei::locks::InodeLocks,
    /// What the mount options chose ([`crate::settings`]).
    settings: Mutex<crate::settings::Settings>,
    /// When the newest checkpoint was written ([`crate::checkpoint::periodic`]).
    cp_timer: crate::checkpoint::timer::CheckpointTimer,
    /// Set when an operation failed halfway: memory may no longer be consistent, so
    /// nothing more is written and every later operation fails.
    failed: Mutex<Option<String>>,
    /// State of the generator of inode generations (xorshift, seeded at open).
    generation_rng: std::sync::atomic::AtomicU64,
    /// Open handles per inode and the orphan list.
    open: crate::orphan::table::OpenInodes,
    /// Garbage-collection settings, state and counters.
    gc: Mutex<crate::gc::state::GcState>,
    /// Volume blocks the users' writes covered (the WAF's denominator).
    user_blocks: std::sync::atomic::AtomicU64,
    /// The flusher threads' control block ([`crate::writeback::flusher`]).
    flush: crate::writeback::flusher::FlushControl,
    /// The writer's share of the flusher's work under the kernel's writer model
    /// ([`crate::writeback::pace`]); locked alone.
    flusher_pace: Mutex<crate::writeback::pace::FlusherPace>,
    /// What fsync must know since the last checkpoint ([`Fs::fsync`]).
    fsync: crate::file::synced::FsyncTrack,
    /// The compression mount options and the files compressed on request
    /// ([`crate::compress::policy`]).
    compress: crate::compress::policy::CompressState,
}

impl Fs {
    /// Bytes of one of the volume's blocks (4096, or 16384 on a volume made with
    /// `mkfs.f2fs -b 16384`): the unit of file data, nodes and summaries.
    pub(crate) fn block_bytes(&self) -> u64 {
        self.sbc.sb.block_size() as u64
    }

    /// The root directory's inode number.
    pub fn root(&self) -> Ino {
        self.sbc.sb.root_ino
    }

    /// The superblock in use.
    pub fn superblock(&self) -> &uf2fs_format::superblock::Superblock {
        &self.sbc.sb
    }

    /// The checkpoint the file system was opened from (see [`Fs::last_checkpoint`] for
    /// the newest one written since).
    pub fn checkpoint(&self) -> &uf2fs_format::checkpoint::Checkpoint {
        &self.cps.cp
    }

    /// The newest durable checkpoint: the opened one, or the last one written.
    pub fn last_checkpoint(&self) -> uf2fs_format::checkpoint::Checkpoint {
        match &self.rw {
            Some(rw) => read_lock(&rw.cp_lock).last().cp.clone(),
            None => self.cps.cp.clone(),
        }
    }

    /// The orphan list (inodes without links kept for their open handles, see
    /// `crate::orphan`): of the live file system when read-write, else of the
    /// checkpoint it was opened from.
    pub fn orphan_inodes(&self) -> Vec<Ino> {
        match &self.rw {
            Some(rw) => rw.open_inodes().orphans(),
            None => self.cps.orphans.clone(),
        }
    }

    /// Whether the file system was opened read-write.
    pub fn is_read_write(&self) -> bool {
        self.rw.is_some()
    }

    fn writable(&self) -> Result<&ReadWrite> {
        self.rw
            .as_ref()
            .ok_or_else(|| Error::ReadOnly(format!("{} was opened read-only", self.paths[0].display())))
    }

    /// Blocks written to the device since open, by kind and by device.
    pub fn write_counts(&self) -> crate::device::WriteCounts {
        self.writes.counts()
    }

    /// The checkpoint the file system was opened at.
    pub(crate) fn opened_state(&self) -> &CheckpointState {
        &self.cps
    }

    /// The segment manager of a read-write file system, locked ([`ReadWrite::segs`]).
    pub(crate) fn segments(&self) -> Result<Ranked<MutexGuard<'_, SegmentManager>>> {
        Ok(self.writable()?.segs())
    }

    /// The node manager (tests and later steps).
    #[allow(dead_code)]
    pub(crate) fn nodes(&self) -> &NodeManager {
        &self.nodes
    }

    /// The device (tests and later steps).
    #[allow(dead_code)]
    pub(crate) fn device(&self) -> &dyn BlockDevice {
        self.dev.as_ref()
    }

    /// The node-tree writer over this file system's parts (read-write only).
    pub(crate) fn tree<'a>(&'a self, rw: &'a ReadWrite) -> crate::tree::Tree<'a> {
        crate::tree::Tree {
            dev: self.dev.as_ref(),
            sb: &self.sbc.sb,
            nodes: &self.nodes,
            segs: rw.seg_lock(),
            pages: rw.pages(),
            compress: &rw.compress,
            clusters: &self.clusters,
            nid_pool: Vec::new(),
            block_pool: 0,
        }
    }

    /// The read-write state, or [`Error::ReadOnly`].
    pub(crate) fn rw(&self) -> Result<&ReadWrite> {
        self.writable()
    }

    /// Passes `r` on; when it reports damage ([`Error::Corrupt`]) on a read-write
    /// volume, the volume stops writing first (as Linux F2FS's `f2fs_stop_checkpoint`):
    /// every later change, fsync, GC pass and checkpoint fails with `EIO` and nothing
    /// more reaches the device, so that damage is not built on. What the last
    /// checkpoint holds stays readable; fsck.f2fs repairs the image.
    pub(crate) fn stop_on_damage<T>(&self, r: Result<T>) -> Result<T> {
        if let (Err(e @ Error::Corrupt { .. }), Some(rw)) = (&r, &self.rw) {
            rw.fail(e);
        }
        r
    }

    /// A reader of inode `i`'s data, directory entries and xattrs (dirty pages first).
    pub(crate) fn mapper<'a>(&'a self, i: &'a InodeRef) -> Mapper<'a> {
        Mapper {
            pages: self.rw.as_ref().map(|rw| rw.pages()),
            inode: i,
            nodes: &self.nodes,
            dev: self.dev.as_ref(),
            clusters: &self.clusters,
            sb: &self.sbc.sb,
        }
    }

    /// Block address of node `nid` (an inode number is its own node id), from the NAT.
    /// For inspection tools and tests.
    pub fn node_blkaddr(&self, nid: u32) -> Result<u64> {
        Ok(self.nodes.nat_entry(self.dev.as_ref(), nid)?.block_addr as u64)
    }

    /// Reads one raw block (for tools that inspect the image).
    pub fn read_raw_block(&self, blkaddr: u64) -> Result<Vec<u8>> {
        read_block(self.dev.as_ref(), blkaddr)
    }
}

fn read_lock<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

impl ReadWrite {
    /// The read-write state of a volume opened at checkpoint `cps`, over its loaded
    /// segment table `segs` ([`crate::mount`] loads it).
    pub(crate) fn new(
        sb: &uf2fs_format::superblock::Superblock,
        cps: &CheckpointState,
        segs: SegmentManager,
    ) -> ReadWrite {
        ReadWrite {
            cp_lock: RwLock::new(CheckpointWriter::new(cps)),
            segs: Mutex::new(segs),
            pages: Default::default(),
            rename_lock: Mutex::new(()),
            locks: Default::default(),
            settings: Default::default(),
            cp_timer: crate::checkpoint::timer::CheckpointTimer::new(cps.cp.checkpoint_ver, std::time::Duration::ZERO),
            failed: Mutex::new(None),
            generation_rng: std::sync::atomic::AtomicU64::new(crate::mkfs::host_random_u64() | 1),
            open: crate::orphan::table::OpenInodes::new(crate::orphan::table::max_orphans(sb)),
            gc: Mutex::new(Default::default()),
            user_blocks: Default::default(),
            flush: Default::default(),
            flusher_pace: Default::default(),
            fsync: Default::default(),
            compress: Default::default(),
        }
    }
}

impl ReadWrite {
    // The parts, handed out in the lock order of `lockrank.rs` (outermost first).
    // Poisoned locks are taken as they are: a panicking thread cannot leave these
    // half-changed in a way a later one trips on (every change that can fail halfway
    // fails the file system instead, see `fail`).

    /// An operation's share of `cp_lock` (F2FS's `f2fs_lock_op`): no checkpoint runs
    /// while it is held.
    pub(crate) fn cp_shared(&self) -> Ranked<std::sync::RwLockReadGuard<'_, CheckpointWriter>> {
        Ranked::take(Rank::Checkpoint, || {
            self.cp_lock.read().unwrap_or_else(PoisonError::into_inner)
        })
    }

    /// `cp_lock` exclusively: the checkpoint writer, with every operation stopped.
    pub(crate) fn cp_exclusive(&self) -> Ranked<std::sync::RwLockWriteGuard<'_, CheckpointWriter>> {
        Ranked::take(Rank::Checkpoint, || {
            self.cp_lock.write().unwrap_or_else(PoisonError::into_inner)
        })
    }

    /// The rename mutex (lock order 2).
    pub(crate) fn rename_guard(&self) -> Ranked<MutexGuard<'_, ()>> {
        Ranked::take(Rank::Rename, || {
            self.rename_lock.lock().unwrap_or_else(PoisonError::into_inner)
        })
    }

    /// Locks the inodes an operation changes, all at once (lock order 3, see
    /// [`crate::namei::locks`]).
    pub(crate) fn lock_inodes(&self, inos: &[crate::Ino]) -> crate::namei::locks::InodeGuard<'_> {
        self.locks.lock(inos)
    }

    /// The page cache of dirty data blocks (lock order 4).
    pub(crate) fn pages(&self) -> &crate::pagecache::PageCache {
        &self.pages
    }

    /// Open handles per inode and the orphan list (lock order 4).
    pub(crate) fn open_inodes(&self) -> &crate::orphan::table::OpenInodes {
        &self.open
    }

    /// The segment manager, locked (lock order 6).
    pub(crate) fn segs(&self) -> Ranked<MutexGuard<'_, SegmentManager>> {
        crate::lockrank::lock_segments(&self.segs)
    }

    /// The segment manager's mutex, for the writers that take it per batch (node
    /// write-out, the checkpoint writer, [`crate::tree::Tree`]).
    pub(crate) fn seg_lock(&self) -> &Mutex<SegmentManager> {
        &self.segs
    }

    /// The garbage collector's settings, state and counters, locked (taken alone, or
    /// inside the segment manager's order: never while holding `segs`).
    pub(crate) fn gc(&self) -> MutexGuard<'_, crate::gc::state::GcState> {
        self.gc.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The compression mount options and the files compressed on request.
    pub(crate) fn compress(&self) -> &crate::compress::policy::CompressState {
        &self.compress
    }

    /// What the mount options chose, locked.
    pub(crate) fn settings(&self) -> MutexGuard<'_, crate::settings::Settings> {
        self.settings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// When the newest checkpoint was written.
    pub(crate) fn cp_timer(&self) -> &crate::checkpoint::timer::CheckpointTimer {
        &self.cp_timer
    }

    /// The flusher threads' control block.
    pub(crate) fn flusher(&self) -> &crate::writeback::flusher::FlushControl {
        &self.flush
    }

    /// The flusher's pace under the kernel's writer model.
    pub(crate) fn flusher_pace(&self) -> MutexGuard<'_, crate::writeback::pace::FlusherPace> {
        self.flusher_pace.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What fsync must know since the last checkpoint.
    pub(crate) fn fsync_track(&self) -> &crate::file::synced::FsyncTrack {
        &self.fsync
    }

    /// Counts `blocks` volume blocks written by users (the WAF's denominator).
    pub(crate) fn count_user_blocks(&self, blocks: u64) {
        self.user_blocks.fetch_add(blocks, std::sync::atomic::Ordering::Relaxed);
    }

    /// Volume blocks written by users since open.
    pub(crate) fn user_blocks(&self) -> u64 {
        self.user_blocks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A fresh inode generation (xorshift over the state seeded at open).
    pub(crate) fn next_generation(&self) -> u32 {
        let step = |mut x: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let old = self
            .generation_rng
            .fetch_update(
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
                |x| Some(step(x)),
            )
            .unwrap_or(1);
        (step(old) >> 16) as u32
    }

    /// Fails with `EIO` ([`Error::eio`]) once an operation or checkpoint failed
    /// halfway, as Linux F2FS answers every change after `f2fs_stop_checkpoint`.
    pub(crate) fn check_failed(&self) -> Result<()> {
        match &*self.failed.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(why) => Err(Error::eio(format!(
                "the file system stopped after an error ({why}); nothing more is written: reopen the image"
            ))),
            None => Ok(()),
        }
    }

    /// Why the file system stopped writing, if it did (see `failed`).
    pub(crate) fn failure(&self) -> Option<String> {
        self.failed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Marks the file system failed (see `failed`).
    pub(crate) fn fail(&self, why: &Error) {
        let mut f = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if f.is_none() {
            *f = Some(why.to_string());
        }
    }

    /// [`ReadWrite::fail`] for a GC step's result, unless it only found no space (GC
    /// that cannot make room leaves the file system as it was).
    pub(crate) fn fail_unless_no_space<T>(&self, r: &Result<T>) {
        if let Err(e) = r {
            if !e.is_no_space() {
                self.fail(e);
            }
        }
    }
}
