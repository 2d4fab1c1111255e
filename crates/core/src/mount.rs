//! Mounting, as the kernel's super.c: the devices assembled into one volume
//! (multi-device, Android sparse, larger blocks, zoned), the superblock and checkpoint
//! loaded, the read-write state built, orphans reclaimed and fsync'd data replayed
//! ([`Fs::open_with`] and its kin); and [`Fs::unmount`].

use crate::checkpoint::write::{check_buildable, check_writable};
use crate::checkpoint::{load_checkpoint, load_superblock, read_blocks, CheckpointState, SuperblockChoice};
use crate::device::{read_block, sparse, BlockDevice, ConcatDevice, FileDevice, SparseDevice};
use crate::fs::ReadWrite;
use crate::node::NodeManager;
use crate::segment::SegmentManager;
use crate::{Error, FileKind, Fs, Result};
use std::path::{Path, PathBuf};
use uf2fs_format::checkpoint::{nat_bits_blocks, CP_NAT_BITS_FLAG};

/// How to open a file system.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for writing: the image must use only features uf2fs can write, and when it
    /// was not cleanly unmounted, roll-forward recovery must have nothing to replay.
    /// Orphans its checkpoint lists are freed at the open (durably at the next
    /// checkpoint).
    pub read_write: bool,
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

    /// Opens a freshly made image for filling by a builder (`uf2fs mkfs IMAGE SOURCE`):
    /// as [`Fs::open_rw`], and a volume with the `ro` feature is accepted too (it is
    /// refused for writing otherwise, as Linux mounts it read-only only), as are the
    /// `encrypt` and `verity` flags (a fresh volume has no encrypted or verity inode;
    /// the mount refuses volumes with them for writing), and the quota features (the
    /// builder writes the quota files last, [`Fs::write_quota_files`]; the mount
    /// refuses quota volumes for writing, as it keeps no quota). On an `ro` volume only the hot
    /// data and hot node logs are written, no summary goes to the SSA (it has none) and
    /// nothing is ever cleaned: a tree too large is `ENOSPC`.
    pub fn open_to_build(image: &Path) -> Result<Fs> {
        use uf2fs_format::superblock::{FEATURE_ENCRYPT, FEATURE_QUOTA_INO, FEATURE_RO, FEATURE_VERITY};
        let options = OpenOptions { read_write: true };
        let (dev, sbc) = open_devices(image, &[], true)?;
        let ro = sbc.sb.has(FEATURE_RO);
        let flags_only = [FEATURE_ENCRYPT, FEATURE_VERITY, FEATURE_QUOTA_INO];
        if !ro && !flags_only.iter().any(|&f| sbc.sb.has(f)) {
            return Fs::mount(dev, sbc, vec![image.to_path_buf()], options);
        }
        let fs = Fs::mount_checked(dev, sbc, vec![image.to_path_buf()], options, check_buildable)?;
        if ro {
            fs.set_gc_enabled(false)?;
        }
        Ok(fs)
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
        Fs::mount_checked(dev, sbc, paths, options, check_writable)
    }

    /// [`Fs::mount_as_is`], with `writable` saying whether a read-write open may write
    /// the volume.
    fn mount_checked(
        dev: Box<dyn BlockDevice>,
        sbc: SuperblockChoice,
        paths: Vec<PathBuf>,
        options: OpenOptions,
        writable: fn(&uf2fs_format::superblock::Superblock, &crate::checkpoint::CheckpointState) -> Result<()>,
    ) -> Result<Fs> {
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
            writable(sb, &cps)?;
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
            return Err(Error::corrupt("root inode", root.blkaddr, "is not a directory"));
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
}

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

/// The read-write state: segment manager, NAT bits when valid, checkpoint writer.
fn open_for_writing(
    dev: &dyn BlockDevice,
    sb: &uf2fs_format::superblock::Superblock,
    cps: &CheckpointState,
    nodes: &NodeManager,
) -> Result<ReadWrite> {
    let segs = SegmentManager::load(dev, sb, cps)?;
    if cps.cp.has_flag(CP_NAT_BITS_FLAG) {
        let n = nat_bits_blocks(sb.segment_count_nat, sb.geometry()) as u64;
        let cp_block = read_block(dev, cps.pack_blkaddr)?;
        let bits = read_blocks(dev, cps.pack_blkaddr + sb.blocks_per_seg() as u64 - n, n)?;
        nodes.adopt_nat_bits(&cps.cp, &cp_block, &bits, sb.segment_count_nat, sb.geometry());
    }
    Ok(ReadWrite::new(sb, cps, segs))
}
