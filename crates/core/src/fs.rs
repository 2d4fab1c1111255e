//! [`Fs`]: an opened F2FS image, its read API, and (opened read-write) checkpoints.
//!
//! Lock order of a read-write file system, outermost first (no lock is held across a
//! call back up this list):
//!
//! 1. `cp_lock` (F2FS's cp_rwsem): modifying operations hold it shared, a checkpoint
//!    exclusive; it guards the checkpoint writer's state;
//! 2. `rename_lock` (the VFS's rename mutex): renames hold it, so that directories do
//!    not move while one checks that a directory is not moved into itself;
//! 3. per-inode locks: an operation takes the set of inodes it changes at once
//!    ([`crate::namei::locks`]), so operations never wait for each other in a cycle;
//! 4. the [`crate::pagecache::PageCache`] mutex and the open-inode table
//!    ([`crate::orphan`]), each taken alone;
//! 5. the [`NodeManager`]'s own locks (dirty nodes, free nids, NAT table, caches);
//! 6. the [`SegmentManager`] mutex;
//! 7. the device.
//!
//! Readers (lookup, stat, read_dir) take no lock of this list but the managers' own:
//! they see each change whole or not at all, per block. File reads of a read-write
//! file system hold `cp_lock` shared and the file's inode lock, as a writer does (the
//! page cache moves blocks to the device under those).

use crate::checkpoint::write::{check_writable, CheckpointReport, CheckpointWriter};
use crate::checkpoint::{load_checkpoint, load_superblock, read_blocks, CheckpointState, SuperblockChoice};
use crate::data::{Mapper, Seek};
use crate::device::{read_block, sparse, BlockDevice, ConcatDevice, FileDevice, SparseDevice};
use crate::inode::InodeRef;
use crate::node::NodeManager;
use crate::segment::SegmentManager;
use crate::{DirEntry, Error, FileKind, Ino, Result, Stat, StatFs, Xattr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};
use uf2fs_format::checkpoint::{nat_bits_blocks, CP_NAT_BITS_FLAG};
use uf2fs_format::node::Inode;

/// Symlinks followed while resolving one path, as Linux's MAXSYMLINKS.
const MAX_SYMLINKS: usize = 40;

/// An opened F2FS file system, read-only or read-write. `Send + Sync`.
pub struct Fs {
    dev: Box<dyn BlockDevice>,
    /// Blocks written, by kind (the device above counts them).
    writes: crate::device::WriteCounter,
    sbc: SuperblockChoice,
    cps: CheckpointState,
    nodes: NodeManager,
    paths: Vec<PathBuf>,
    /// CRC seed for inode checksums, derived from the volume UUID.
    checksum_seed: u32,
    /// Present when opened read-write.
    rw: Option<ReadWrite>,
    /// Recently decoded clusters of compressed files.
    clusters: crate::compress::ClusterCache,
    /// Whether a read-only open replayed fsync'd data in memory ([`Fs::mount`]).
    replayed: bool,
}

/// The state only a read-write file system has. Its fields are private to this file:
/// the subsystems are handed each part by the method named for it (see `impl
/// ReadWrite`, in the lock order of the module notes), as the node-tree writer is
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
    /// 4 KiB blocks the users' writes covered (the WAF's denominator).
    user_blocks: std::sync::atomic::AtomicU64,
    /// The flusher threads' control block ([`crate::writeback::flusher`]).
    flush: crate::writeback::flusher::FlushControl,
    /// What fsync must know since the last checkpoint ([`Fs::fsync`]).
    fsync: crate::file::synced::FsyncTrack,
}

/// How to open a file system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for writing: the image must use only features uf2fs can write, and when it
    /// was not cleanly unmounted, roll-forward recovery must have nothing to replay.
    /// Orphans its checkpoint lists are freed at the open (durably at the next
    /// checkpoint).
    pub read_write: bool,
}

/// Summary of an image for `uf2fs info`: its `Display` is the human-readable report.
#[derive(Debug, Clone)]
pub struct FsInfo {
    /// The report, one `key: value` per line.
    pub text: String,
}

impl std::fmt::Display for FsInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Opens one image file or block device: an Android sparse image (see
/// [`crate::device::sparse`]) is read in place, and refused for writing.
fn open_file(path: &Path, writable: bool) -> Result<Box<dyn BlockDevice>> {
    if sparse::is_sparse(path)? {
        if writable {
            return Err(sparse::refuse_writing(path));
        }
        return Ok(Box::new(SparseDevice::open(path)?));
    }
    Ok(Box::new(if writable {
        FileDevice::open_rw(path)?
    } else {
        FileDevice::open(path)?
    }))
}

/// `dev` seen in the volume's blocks: itself for 4 KiB blocks, a
/// [`WideDevice`](crate::device::WideDevice) over it for larger ones.
fn in_volume_blocks(
    dev: Box<dyn BlockDevice>,
    sb: &uf2fs_format::superblock::Superblock,
) -> Result<Box<dyn BlockDevice>> {
    if sb.block_size() == dev.block_size() {
        return Ok(dev);
    }
    Ok(Box::new(crate::device::WideDevice::new(dev, sb.block_size())?))
}

fn open_devices(image: &Path, more: &[&Path], writable: bool) -> Result<(Box<dyn BlockDevice>, SuperblockChoice)> {
    let first = open_file(image, writable)?;
    let sbc = load_superblock(first.as_ref())?;
    let devs = &sbc.sb.devices;
    if devs.len() <= 1 {
        if !more.is_empty() {
            return Err(Error::Invalid(format!(
                "{} is a single-device F2FS; extra devices given",
                image.display()
            )));
        }
        return Ok((in_volume_blocks(first, &sbc.sb)?, sbc));
    }
    if !sbc.sb.geometry().is_default() {
        return Err(Error::Unsupported {
            feature: "block size",
            detail: format!(
                "{} is a multi-device F2FS with {}-byte blocks; uf2fs reads multi-device volumes of 4096-byte blocks only",
                image.display(),
                sbc.sb.block_size()
            ),
        });
    }
    if more.len() + 1 != devs.len() {
        let names: Vec<&str> = devs.iter().map(|d| d.path.as_str()).collect();
        return Err(Error::Invalid(format!(
            "{} is the first of {} devices ({}); pass the others with --device, in this order",
            image.display(),
            devs.len(),
            names.join(", ")
        )));
    }
    let bps = sbc.sb.blocks_per_seg() as u64;
    // The first device also holds everything before segment 0.
    let sizes: Vec<u64> = devs
        .iter()
        .enumerate()
        .map(|(i, d)| d.total_segments as u64 * bps + if i == 0 { sbc.sb.segment0_blkaddr as u64 } else { 0 })
        .collect();
    let mut all: Vec<Box<dyn BlockDevice>> = vec![first];
    for p in more {
        all.push(open_file(p, writable)?);
    }
    Ok((Box::new(ConcatDevice::new(all, &sizes)?), sbc))
}

impl Fs {
    /// Open an image file or block device read-only. Extra devices of a multi-device
    /// F2FS follow in `more_devices`, in superblock order. Any of them may be an Android
    /// sparse image ([`crate::device::sparse`]), read in place.
    pub fn open(image: &Path, more_devices: &[&Path]) -> Result<Fs> {
        Fs::open_with(image, more_devices, OpenOptions::default())
    }

    /// Open an image file or block device for reading and writing (see
    /// [`OpenOptions::read_write`]); an Android sparse image is refused
    /// ([`Error::ReadOnly`], naming `simg2img`). Nothing is written until [`Fs::write_checkpoint`]
    /// or [`Fs::unmount`] (or an operation that needs room makes a checkpoint).
    pub fn open_rw(image: &Path, more_devices: &[&Path]) -> Result<Fs> {
        Fs::open_with(image, more_devices, OpenOptions { read_write: true })
    }

    /// Open an image file or block device as `options` say.
    pub fn open_with(image: &Path, more_devices: &[&Path], options: OpenOptions) -> Result<Fs> {
        let (dev, sbc) = open_devices(image, more_devices, options.read_write)?;
        let mut paths = vec![image.to_path_buf()];
        paths.extend(more_devices.iter().map(|p| p.to_path_buf()));
        Fs::mount(dev, sbc, paths, options)
    }

    /// Open a single-device F2FS from any [`BlockDevice`], e.g. a
    /// [`MemDevice`](crate::device::MemDevice) holding an image in memory (tests and
    /// fuzzing). `name` stands for the image path in [`Fs::info`].
    pub fn open_device(dev: Box<dyn BlockDevice>, name: &str) -> Result<Fs> {
        Fs::open_device_with(dev, name, OpenOptions::default())
    }

    /// As [`Fs::open_device`], as `options` say (read-write needs a device that writes).
    pub fn open_device_with(dev: Box<dyn BlockDevice>, name: &str, options: OpenOptions) -> Result<Fs> {
        let sbc = load_superblock(dev.as_ref())?;
        if sbc.sb.devices.len() > 1 {
            return Err(Error::Invalid(format!(
                "{name} is the first of {} devices; open multi-device images with Fs::open",
                sbc.sb.devices.len()
            )));
        }
        let dev = in_volume_blocks(dev, &sbc.sb)?;
        Fs::mount(dev, sbc, vec![PathBuf::from(name)], options)
    }

    /// What [`Fs::open`] and [`Fs::open_device`] share once the superblock is chosen:
    /// size check, checkpoint, root inode; for writing, the segment manager and
    /// roll-forward recovery. A read-only open of an image whose warm node log holds
    /// fsync'd data after its checkpoint shows that data as Linux would after its
    /// recovery: the recovery runs on an [`crate::device::OverlayDevice`] that keeps
    /// its writes in memory, and the image is not changed. When the recovery cannot
    /// run (features uf2fs cannot write, a damaged chain), the open shows the
    /// checkpoint alone.
    fn mount(
        dev: Box<dyn BlockDevice>,
        sbc: SuperblockChoice,
        paths: Vec<PathBuf>,
        options: OpenOptions,
    ) -> Result<Fs> {
        if !options.read_write && fsync_data_after_checkpoint(dev.as_ref(), &sbc.sb) {
            let base: std::sync::Arc<dyn BlockDevice> = std::sync::Arc::from(dev);
            let overlay = crate::device::OverlayDevice::new(base.clone());
            let rw = OpenOptions { read_write: true };
            let replayed = Fs::mount_as_is(Box::new(overlay.clone()), sbc.clone(), paths.clone(), rw);
            if let Ok(fs) = replayed {
                // Dropped without an unmount: the recovery's checkpoint stays in memory.
                drop(fs);
                let mut fs = Fs::mount_as_is(Box::new(overlay), sbc, paths, options)?;
                fs.replayed = true;
                return Ok(fs);
            }
            let dev = Box::new(crate::device::SharedDevice(base));
            return Fs::mount_as_is(dev, sbc, paths, options);
        }
        Fs::mount_as_is(dev, sbc, paths, options)
    }

    /// Whether this read-only file system shows fsync'd data replayed in memory (see
    /// [`Fs::open`]); false for read-write ones, which replay it on the image.
    pub fn replayed_in_memory(&self) -> bool {
        self.replayed
    }

    /// [`Fs::mount`] without the in-memory replay.
    fn mount_as_is(
        dev: Box<dyn BlockDevice>,
        sbc: SuperblockChoice,
        paths: Vec<PathBuf>,
        options: OpenOptions,
    ) -> Result<Fs> {
        if sbc.sb.has(uf2fs_format::superblock::FEATURE_PACKED_SSA) {
            return Err(Error::Unsupported {
                feature: "packed_ssa",
                detail: "summary blocks packed 4 KiB at a time into larger blocks are not read yet".to_string(),
            });
        }
        if options.read_write && !sbc.sb.geometry().is_default() {
            return Err(Error::Unsupported {
                feature: "block size",
                detail: format!(
                    "the image has {}-byte blocks, which uf2fs reads but does not write yet",
                    sbc.sb.block_size()
                ),
            });
        }
        // A zoned volume (`blkzoned`) is written as a host-managed zoned device takes
        // it: the main area's zones only sequentially (see crate::device::ZonedDevice).
        let (dev, zones) = zoned(dev, &sbc.sb, options.read_write)?;
        let (dev, writes) = crate::device::counting(dev, &sbc.sb);
        let sb = &sbc.sb;
        let need = sb.main_end_blkaddr();
        if dev.block_count() < need {
            return Err(Error::corrupt(
                "image",
                None,
                format!("truncated: the superblock describes {need} blocks up to the end of the main area, the device has {}", dev.block_count()),
            ));
        }
        let cps = load_checkpoint(dev.as_ref(), sb)?;
        if options.read_write {
            check_writable(sb, &cps.cp)?;
        }
        let nodes = NodeManager::new(sb, &cps.cp, cps.nat_bitmap.clone(), &cps.nat_journal);
        let rw = if options.read_write {
            Some(open_for_writing(dev.as_ref(), sb, &cps, &nodes)?)
        } else {
            None
        };
        if let (Some(zones), Some(rw)) = (&zones, &rw) {
            let segs = rw.segs();
            zones.set_write_pointers(segs.zone_write_pointers(zones.geometry().1))?;
        }
        let checksum_seed = uf2fs_format::node::checksum_seed(&sbc.sb.uuid);
        let fs = Fs {
            checksum_seed,
            dev,
            writes,
            sbc,
            cps,
            nodes,
            paths,
            rw,
            clusters: Default::default(),
            replayed: false,
        };
        let root = fs.inode(fs.root())?;
        if root.kind()? != FileKind::Dir {
            return Err(Error::corrupt("root inode", None, "is not a directory"));
        }
        if fs.rw.is_some() && !fs.cps.orphans.is_empty() {
            fs.reclaim_orphans(&fs.cps.orphans.clone())?;
        }
        // What fsync wrote after the checkpoint (also after an unmount checkpoint: a
        // mount writes none before its first fsync).
        if fs.rw.is_some() {
            fs.recover_fsync_data()?;
        }
        Ok(fs)
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

    /// Makes everything done so far durable as a new checkpoint in the other pack (the
    /// kernel's `f2fs_write_checkpoint`; named so because [`Fs::checkpoint`] reads the
    /// opened one). Fails on a read-only file system, and after any failed checkpoint.
    pub fn write_checkpoint(&self) -> Result<CheckpointReport> {
        self.checkpoint_as(false)
    }

    /// Gives back every open handle (freeing the orphans they kept), writes an unmount
    /// checkpoint (`CP_UMOUNT_FLAG`, node summaries in the pack, no orphans) and closes
    /// the file system. A read-only file system just closes. Dropping a read-write `Fs`
    /// without unmounting writes nothing: the image stays at its last checkpoint, as
    /// after a power cut (its orphans are freed at the next read-write open).
    pub fn unmount(self) -> Result<()> {
        if self.rw.is_some() {
            self.release_all()?;
            self.checkpoint_as(true)?;
        }
        Ok(())
    }

    fn checkpoint_as(&self, umount: bool) -> Result<CheckpointReport> {
        let rw = self.writable()?;
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

    /// Blocks written to the device since open, by kind and by device.
    pub fn write_counts(&self) -> crate::device::WriteCounts {
        self.writes.counts()
    }

    /// The checkpoint the file system was opened at.
    pub(crate) fn opened_state(&self) -> &CheckpointState {
        &self.cps
    }

    /// The segment manager of a read-write file system, locked ([`ReadWrite::segs`]).
    pub(crate) fn segments(&self) -> Result<MutexGuard<'_, SegmentManager>> {
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
        let f = uf2fs_format::node::NodeFooter::decode(&block)
            .map_err(|e| Error::corrupt(format!("inode {ino}"), None, e.to_string()))?;
        if f.offset() != 0 {
            return Err(Error::corrupt(
                format!("inode {ino}"),
                None,
                format!("node offset {} (not an inode block)", f.offset()),
            ));
        }
        let sb = &self.sbc.sb;
        let err = |e: uf2fs_format::FormatError| Error::corrupt(format!("inode {ino}"), None, e.to_string());
        let inode = Inode::decode(&block, sb).map_err(err)?;
        if inode.size > inode.max_file_bytes() {
            return Err(Error::corrupt(
                format!("inode {ino}"),
                self.node_blkaddr(ino).ok(),
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
                    self.node_blkaddr(ino).ok(),
                    format!(
                        "checksum mismatch (stored {:#010x}, computed {computed:#010x})",
                        inode.inode_checksum
                    ),
                ));
            }
        }
        Ok(InodeRef { ino, inode, block })
    }

    /// The node-tree writer over this file system's parts (read-write only).
    pub(crate) fn tree<'a>(&'a self, rw: &'a ReadWrite) -> crate::tree::Tree<'a> {
        crate::tree::Tree {
            dev: self.dev.as_ref(),
            sb: &self.sbc.sb,
            nodes: &self.nodes,
            segs: rw.seg_lock(),
            pages: rw.pages(),
            nid_pool: Vec::new(),
            block_pool: 0,
        }
    }

    /// The read-write state, or [`Error::ReadOnly`].
    pub(crate) fn rw(&self) -> Result<&ReadWrite> {
        self.writable()
    }

    fn mapper<'a>(&'a self, i: &'a InodeRef) -> Mapper<'a> {
        Mapper {
            pages: self.rw.as_ref().map(|rw| rw.pages()),
            inode: i,
            nodes: &self.nodes,
            dev: self.dev.as_ref(),
            clusters: &self.clusters,
            sb: &self.sbc.sb,
        }
    }

    fn dir_inode(&self, ino: Ino) -> Result<InodeRef> {
        let i = self.inode(ino)?;
        if i.kind()? != FileKind::Dir {
            return Err(Error::NotDir(format!("inode {ino}")));
        }
        Ok(i)
    }

    /// Geometry, features, active checkpoint and counts.
    pub fn info(&self) -> Result<FsInfo> {
        if let Some(rw) = &self.rw {
            let writer = read_lock(&rw.cp_lock);
            let usage = rw.segs().usage();
            return Ok(FsInfo {
                text: crate::info::report(&self.paths, &self.sbc, writer.last(), &usage),
            });
        }
        let usage = crate::segment::segment_usage(self.dev.as_ref(), &self.sbc.sb, &self.cps)?;
        let mut text = crate::info::report(&self.paths, &self.sbc, &self.cps, &usage);
        if self.replayed {
            text.push_str(
                "roll-forward:       fsync'd data after the last checkpoint, replayed in memory (the image is \
                 unchanged; a read-write mount replays it on the image)\n",
            );
        }
        Ok(FsInfo { text })
    }

    /// Attributes of an inode.
    pub fn stat(&self, ino: Ino) -> Result<Stat> {
        self.inode(ino)?.stat()
    }

    /// Look `name` up in directory `dir` ("." and ".." work too). `Error::NotFound` if absent.
    pub fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Ino> {
        let d = self.dir_inode(dir)?;
        if name == b"." {
            return Ok(dir);
        }
        match self.mapper(&d).lookup(name)? {
            Some(ino) => Ok(ino),
            None if name == b".." && dir == self.root() => Ok(dir),
            None => Err(Error::NotFound(crate::error::show_name(name))),
        }
    }

    /// Resolve an absolute path inside the image ("/" is the root). Intermediate symlinks
    /// are followed (relative to the image's root); the last component is followed only
    /// when `follow_last` is true.
    pub fn resolve(&self, path: &[u8], follow_last: bool) -> Result<Ino> {
        let shown = || crate::error::show_name(path);
        // Components still to walk, last first; symlink targets are spliced in.
        let mut todo: Vec<Vec<u8>> = path
            .split(|&c| c == b'/')
            .filter(|c| !c.is_empty())
            .rev()
            .map(<[u8]>::to_vec)
            .collect();
        let mut stack: Vec<Ino> = vec![self.root()];
        let mut links = 0;
        while let Some(comp) = todo.pop() {
            let cur = *stack.last().unwrap_or(&self.root());
            if comp == b"." {
                continue;
            }
            if comp == b".." {
                if stack.len() > 1 {
                    stack.pop();
                }
                continue;
            }
            let ino = match self.lookup(cur, &comp) {
                Err(Error::NotDir(_)) => return Err(Error::NotDir(shown())),
                Err(Error::NotFound(_)) => return Err(Error::NotFound(shown())),
                r => r?,
            };
            let is_last = todo.is_empty();
            let st = self.stat(ino)?;
            if st.kind == FileKind::Symlink && (!is_last || follow_last) {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Error::Loop(shown()));
                }
                let target = self.read_link(ino)?;
                if target.first() == Some(&b'/') {
                    stack.truncate(1);
                }
                todo.extend(
                    target
                        .split(|&c| c == b'/')
                        .filter(|c| !c.is_empty())
                        .rev()
                        .map(<[u8]>::to_vec),
                );
                continue;
            }
            stack.push(ino);
        }
        Ok(*stack.last().unwrap_or(&self.root()))
    }

    /// All entries of a directory except "." and "..", in on-disk order.
    pub fn read_dir(&self, dir: Ino) -> Result<Vec<DirEntry>> {
        let d = self.dir_inode(dir)?;
        self.mapper(&d).read_dir()
    }

    /// Read file data at `offset` into `buf`; returns bytes read, short only at end of file.
    /// Read-write, a read holds `cp_lock` shared and the inode's lock (writes wait for
    /// it): no writeback moves a block from the page cache to the device under it.
    pub fn read(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let _held = self
            .rw
            .as_ref()
            .map(|rw| (read_lock(&rw.cp_lock), rw.lock_inodes(&[ino])));
        let i = self.inode(ino)?;
        match i.kind()? {
            FileKind::Dir => return Err(Error::IsDir(format!("inode {ino}"))),
            FileKind::File | FileKind::Symlink => {}
            _ => return Ok(0),
        }
        i.check_decodable()?;
        self.mapper(&i).read(offset, buf)
    }

    /// `lseek(2)` with `SEEK_DATA` or `SEEK_HOLE` (`whence`) from `offset` in regular
    /// file `ino`, as Linux F2FS's `f2fs_seek_block` answers it: a block with an address
    /// is data, and so is a reserved one (`NEW_ADDR`) with a dirty page; only a block
    /// without an address is a hole, so a preallocated block never written is neither.
    /// Inline files are all data, and so (for now) are compressed ones. Returns the
    /// offset found (at least `offset`), or `None` for `ENXIO` (at or past the end of the
    /// file, or no data after `offset`). Other kinds of inode are [`Error::Invalid`].
    pub fn seek(&self, ino: Ino, offset: u64, whence: Seek) -> Result<Option<u64>> {
        let _held = self
            .rw
            .as_ref()
            .map(|rw| (read_lock(&rw.cp_lock), rw.lock_inodes(&[ino])));
        let i = self.inode(ino)?;
        if i.kind()? != FileKind::File {
            return Err(Error::Invalid(format!(
                "SEEK_DATA/SEEK_HOLE on inode {ino}: not a regular file"
            )));
        }
        i.check_decodable()?;
        self.mapper(&i).seek(offset, whence)
    }

    /// How a compressed file is stored (its algorithm, cluster size, and how many of
    /// its clusters are compressed); `None` for any other inode.
    pub fn compression(&self, ino: Ino) -> Result<Option<crate::compress::FileCompression>> {
        let i = self.inode(ino)?;
        if !i.inode.is_compressed() {
            return Ok(None);
        }
        i.check_decodable()?;
        let end = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
        self.mapper(&i).cluster_census(end)
    }

    /// Where a file's blocks lie: runs of consecutive file blocks at consecutive
    /// device blocks, as `(first file block, first device block, blocks)`, in file
    /// order (FIEMAP's view; holes and `NEW_ADDR` reservations are not listed). For a
    /// compressed file, plain clusters only. Blocks still in the page cache are listed
    /// where the device holds them (if anywhere).
    pub fn extents(&self, ino: Ino) -> Result<Vec<(u64, u64, u64)>> {
        let i = self.inode(ino)?;
        if i.inode.has_inline(uf2fs_format::node::F2FS_INLINE_DATA) || i.inode.is_compressed() {
            return Ok(Vec::new());
        }
        let end = i.inode.size.div_ceil(i.inode.geometry.block_size() as u64);
        let mut out: Vec<(u64, u64, u64)> = Vec::new();
        self.mapper(&i).for_each_block(end, |fb, addr| {
            match out.last_mut() {
                Some((f, a, n)) if *f + *n == fb && *a + *n == addr => *n += 1,
                _ => out.push((fb, addr, 1)),
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Target of a symbolic link.
    pub fn read_link(&self, ino: Ino) -> Result<Vec<u8>> {
        let i = self.inode(ino)?;
        if i.kind()? != FileKind::Symlink {
            return Err(Error::NotSymlink(format!("inode {ino}")));
        }
        i.check_decodable()?;
        let size = i.inode.size;
        if size == 0 || size >= i.inode.geometry.block_size() as u64 {
            return Err(Error::corrupt(
                format!("symlink inode {ino}"),
                None,
                format!("target length {size}"),
            ));
        }
        let mut buf = vec![0u8; size as usize];
        let n = self.mapper(&i).read(0, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// All extended attributes of an inode. Read-write, the read holds `cp_lock` shared
    /// and the inode's lock, so that it never sees an inode and an xattr node from
    /// different changes.
    pub fn list_xattrs(&self, ino: Ino) -> Result<Vec<Xattr>> {
        let _held = self
            .rw
            .as_ref()
            .map(|rw| (read_lock(&rw.cp_lock), rw.lock_inodes(&[ino])));
        let i = self.inode(ino)?;
        self.mapper(&i).xattrs()
    }

    /// One extended attribute by full name, `None` when absent.
    pub fn get_xattr(&self, ino: Ino, name: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .list_xattrs(ino)?
            .into_iter()
            .find(|x| x.name == name)
            .map(|x| x.value))
    }

    /// File system statistics: of the opened checkpoint when read-only, of the live
    /// state (blocks reserved for pending writes counted as used) when read-write.
    pub fn statfs(&self) -> Result<StatFs> {
        let cp = &self.cps.cp;
        let blocks = cp.user_block_count;
        let (free, nodes) = match &self.rw {
            Some(rw) => {
                let segs = rw.segs();
                (segs.free_user_blocks(), self.nodes.counts().valid_node_count)
            }
            None => (blocks.saturating_sub(cp.valid_block_count), cp.valid_node_count),
        };
        let files = self.nodes.max_nid().saturating_sub(3);
        Ok(StatFs {
            block_size: self.sbc.sb.block_size() as u32,
            blocks,
            blocks_free: free,
            blocks_avail: free,
            files,
            files_free: files.saturating_sub(nodes as u64),
            name_max: uf2fs_format::consts::F2FS_NAME_LEN as u32,
        })
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

/// The read-write state: segment manager, NAT bits when valid, checkpoint writer.
/// Wraps the device of a `blkzoned` volume opened for writing in a zone emulator (the
/// main area cut into zones of `segs_per_sec * secs_per_zone` segments); returns the
/// zones, whose write pointers are set once the segment table is loaded.
fn zoned(
    dev: Box<dyn BlockDevice>,
    sb: &uf2fs_format::superblock::Superblock,
    writing: bool,
) -> Result<(Box<dyn BlockDevice>, Option<crate::device::Zones>)> {
    if !writing || sb.feature & uf2fs_format::superblock::FEATURE_BLKZONED == 0 {
        return Ok((dev, None));
    }
    let zone_segs = sb.segs_per_sec.max(1) as u64 * sb.secs_per_zone.max(1) as u64;
    let zone_blocks = zone_segs * sb.blocks_per_seg() as u64;
    let zones = sb.segment_count_main as u64 / zone_segs;
    let z = crate::device::ZonedDevice::new(dev, sb.main_blkaddr as u64, zone_blocks, zones)?;
    let handle = z.zones();
    Ok((Box::new(z), Some(handle)))
}

/// Whether the image's warm node log holds fsync'd data after its newest checkpoint
/// (false when that cannot be read: the open then reports what is wrong).
fn fsync_data_after_checkpoint(dev: &dyn BlockDevice, sb: &uf2fs_format::superblock::Superblock) -> bool {
    if dev.block_count() < sb.main_end_blkaddr() {
        return false;
    }
    load_checkpoint(dev, sb)
        .and_then(|cps| crate::checkpoint::roll_forward::find_fsync_node(dev, sb, &cps))
        .is_ok_and(|n| n.is_some())
}

fn open_for_writing(
    dev: &dyn BlockDevice,
    sb: &uf2fs_format::superblock::Superblock,
    cps: &CheckpointState,
    nodes: &NodeManager,
) -> Result<ReadWrite> {
    let segs = SegmentManager::load(dev, sb, cps)?;
    if cps.cp.has_flag(CP_NAT_BITS_FLAG) {
        let n = nat_bits_blocks(sb.segment_count_nat) as u64;
        let cp_block = read_block(dev, cps.pack_blkaddr)?;
        let bits = read_blocks(dev, cps.pack_blkaddr + sb.blocks_per_seg() as u64 - n, n)?;
        nodes.adopt_nat_bits(&cps.cp, &cp_block, &bits, sb.segment_count_nat);
    }
    Ok(ReadWrite {
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
        fsync: Default::default(),
    })
}

impl ReadWrite {
    // The parts, handed out in the lock order of the module notes (outermost first).
    // Poisoned locks are taken as they are: a panicking thread cannot leave these
    // half-changed in a way a later one trips on (every change that can fail halfway
    // fails the file system instead, see `fail`).

    /// An operation's share of `cp_lock` (F2FS's `f2fs_lock_op`): no checkpoint runs
    /// while it is held.
    pub(crate) fn cp_shared(&self) -> std::sync::RwLockReadGuard<'_, CheckpointWriter> {
        self.cp_lock.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// `cp_lock` exclusively: the checkpoint writer, with every operation stopped.
    pub(crate) fn cp_exclusive(&self) -> std::sync::RwLockWriteGuard<'_, CheckpointWriter> {
        self.cp_lock.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The rename mutex (lock order 2).
    pub(crate) fn rename_guard(&self) -> MutexGuard<'_, ()> {
        self.rename_lock.lock().unwrap_or_else(PoisonError::into_inner)
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
    pub(crate) fn segs(&self) -> MutexGuard<'_, SegmentManager> {
        self.segs.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// What fsync must know since the last checkpoint.
    pub(crate) fn fsync_track(&self) -> &crate::file::synced::FsyncTrack {
        &self.fsync
    }

    /// Counts `blocks` 4 KiB blocks written by users (the WAF's denominator).
    pub(crate) fn count_user_blocks(&self, blocks: u64) {
        self.user_blocks.fetch_add(blocks, std::sync::atomic::Ordering::Relaxed);
    }

    /// 4 KiB blocks written by users since open.
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
