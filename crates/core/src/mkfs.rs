//! `mkfs`: format an image file or block device as F2FS, the way mkfs.f2fs 1.15 does.
//!
//! Same options, same geometry (see [`layout`]), same blocks (see [`image`]): for the
//! same size, sections and features our images and mkfs.f2fs's differ only in what is
//! random or taken from the moment (UUID, checkpoint version, times). Everything is
//! checked before the first write: a bad option or a device too small leaves it alone.

mod cp;
mod host;
pub mod image;
pub mod layout;
mod params;
mod target;

use crate::{Error, Result};
use host::{kernel_version, now_secs, process_owner, random_u32, random_uuid};
use layout::{Layout, LayoutInput};
use std::os::unix::fs::FileExt;
use std::path::Path;
use target::{clear_stale_metadata, io_err, open_target, prepare, stale_metadata_blocks};
pub use uf2fs_format::casefold::SB_ENC_STRICT_MODE_FL;
use uf2fs_format::checkpoint::Checkpoint;
use uf2fs_format::superblock::*;
pub use uf2fs_format::Geometry;

/// Features `mkfs` can make, by superblock bit. `encrypt` and `verity` are flags only,
/// as mkfs.f2fs sets them: the volume may hold encrypted or verity files (made later by
/// Linux); nothing else on disk changes.
pub const SUPPORTED_FEATURES: u32 = FEATURE_BLKZONED
    | FEATURE_EXTRA_ATTR
    | FEATURE_INODE_CHKSUM
    | FEATURE_FLEXIBLE_INLINE_XATTR
    | FEATURE_INODE_CRTIME
    | FEATURE_SB_CHKSUM
    | FEATURE_LOST_FOUND
    | FEATURE_COMPRESSION
    | FEATURE_RO
    | FEATURE_ENCRYPT
    | FEATURE_VERITY
    | FEATURE_CASEFOLD
    | FEATURE_QUOTA_INO
    | FEATURE_PRJQUOTA
    | FEATURE_PACKED_SSA;
/// Features that need extra_attr (room in the inode for their fields).
const NEED_EXTRA_ATTR: u32 = FEATURE_INODE_CHKSUM
    | FEATURE_FLEXIBLE_INLINE_XATTR
    | FEATURE_INODE_CRTIME
    | FEATURE_COMPRESSION
    | FEATURE_PRJQUOTA;

/// How to format.
#[derive(Debug, Clone, PartialEq)]
pub struct MkfsOptions {
    /// Size of the volume. A missing file is created sparse with this size; an existing
    /// file is truncated to it; on a block device it must not exceed the device.
    /// `None`: the whole existing file or device.
    pub size_bytes: Option<u64>,
    /// Segments per section (mkfs.f2fs `-s`), at least 1.
    pub segs_per_sec: u32,
    /// Sections per zone (mkfs.f2fs `-z`), at least 1.
    pub secs_per_zone: u32,
    /// Overprovision ratio in percent (mkfs.f2fs `-o`); `None` picks the ratio that
    /// leaves the most user space.
    pub overprovision_pct: Option<f64>,
    /// Superblock feature bits (mkfs.f2fs `-O`); see [`SUPPORTED_FEATURES`].
    pub features: u32,
    /// Volume label (mkfs.f2fs `-l`), at most 512 UTF-16 units.
    pub label: String,
    /// Owner and group of the root directory (mkfs.f2fs `-R`); `None`: the caller's real
    /// user and group, as mkfs.f2fs does.
    pub root_owner: Option<(u32, u32)>,
    /// Volume UUID (mkfs.f2fs `-U`); `None`: random.
    pub uuid: Option<[u8; 16]>,
    /// Seconds since the epoch for the new inodes' times (mkfs.f2fs `-T`); `None`: now.
    pub timestamp_secs: Option<u64>,
    /// Version of the first checkpoint pack; `None`: random (as mkfs.f2fs). Reproducible
    /// images fix it.
    pub cp_ver: Option<u64>,
    /// The superblock's `version` and `init_version` strings; `None`: the first line of
    /// /proc/version (as mkfs.f2fs). Reproducible images fix it.
    pub version: Option<String>,
    /// Block size in bytes (mkfs.f2fs `-b`): 4096, or 16384 for Android's 16 KiB-page
    /// devices (the volume's SSA then has one 16 KiB summary block per segment, unless
    /// the `packed_ssa` feature is asked for: 4 KiB summaries, four to an SSA block,
    /// as Linux 6.19 reads them).
    pub block_size: u32,
    /// With the casefold feature: the encoding's flags (`s_encoding_flags`, mkfs.f2fs
    /// `-C utf8:strict`); the encoding is utf8-12.1, the only one F2FS knows.
    pub encoding_flags: u16,
}

impl Default for MkfsOptions {
    fn default() -> Self {
        MkfsOptions {
            size_bytes: None,
            segs_per_sec: 1,
            secs_per_zone: 1,
            overprovision_pct: None,
            features: 0,
            label: String::new(),
            root_owner: None,
            uuid: None,
            timestamp_secs: None,
            cp_ver: None,
            version: None,
            block_size: 4096,
            encoding_flags: 0,
        }
    }
}

/// What `mkfs` made.
#[derive(Debug, Clone)]
pub struct MkfsReport {
    /// Bytes of the volume.
    pub size_bytes: u64,
    /// The geometry.
    pub layout: Layout,
    /// The superblock written.
    pub superblock: Superblock,
    /// The checkpoint written (the valid pack).
    pub checkpoint: Checkpoint,
    /// Whether the old contents were discarded first (image files).
    pub trimmed: bool,
    /// Blocks written.
    pub blocks_written: u64,
}

impl MkfsReport {
    /// Names of the features set.
    pub fn feature_names(&self) -> Vec<String> {
        self.superblock.feature_names()
    }
}

/// Parses mkfs.f2fs-style feature names ("extra_attr,inode_checksum", repeatable,
/// separated by commas or spaces) into superblock bits. Unknown names are an error;
/// known but unsupported ones are caught by [`mkfs`].
pub fn parse_features(list: &str) -> Result<u32> {
    let mut bits = 0;
    for name in list.split([',', ' ']).filter(|n| !n.is_empty()) {
        let bit = FEATURES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(b, _)| *b)
            .ok_or_else(|| {
                let known: Vec<&str> = FEATURES.iter().map(|(_, n)| *n).collect();
                Error::Invalid(format!(
                    "unknown feature '{name}' (F2FS features: {})",
                    known.join(", ")
                ))
            })?;
        bits |= bit;
    }
    Ok(bits)
}

/// The feature bits mkfs writes for `features`: `project_quota` brings `quota` (its
/// quota file is one of the quota inodes), as in mkfs.f2fs.
pub fn effective_features(features: u32) -> u32 {
    if features & FEATURE_PRJQUOTA != 0 {
        features | FEATURE_QUOTA_INO
    } else {
        features
    }
}

/// Checks feature bits: unsupported ones are refused by name; checksums, flexible
/// inline xattrs, creation times and project quotas need extra_attr, as with mkfs.f2fs.
pub fn check_features(features: u32) -> Result<()> {
    for &(bit, name) in FEATURES {
        if features & bit != 0 && SUPPORTED_FEATURES & bit == 0 {
            return Err(Error::Unsupported {
                feature: name,
                detail: "uf2fs mkfs cannot make it yet".into(),
            });
        }
    }
    let unknown = features & !FEATURES.iter().fold(0, |a, (b, _)| a | b);
    if unknown != 0 {
        return Err(Error::Invalid(format!("unknown feature bits {unknown:#x}")));
    }
    if features & NEED_EXTRA_ATTR != 0 && features & FEATURE_EXTRA_ATTR == 0 {
        let names: Vec<&str> = FEATURES
            .iter()
            .filter(|(b, _)| features & NEED_EXTRA_ATTR & b != 0)
            .map(|(_, n)| *n)
            .collect();
        return Err(Error::Invalid(format!(
            "{} need(s) the extra_attr feature",
            names.join(", ")
        )));
    }
    Ok(())
}

/// Encoding flags are for casefolded volumes, and only those F2FS defines.
fn check_encoding(opts: &MkfsOptions) -> Result<()> {
    use uf2fs_format::casefold::{SB_ENC_NO_COMPAT_FALLBACK_FL, SB_ENC_STRICT_MODE_FL};
    if opts.encoding_flags != 0 && opts.features & FEATURE_CASEFOLD == 0 {
        return Err(Error::Invalid(
            "casefold encoding flags need the casefold feature".into(),
        ));
    }
    let unknown = opts.encoding_flags & !(SB_ENC_STRICT_MODE_FL | SB_ENC_NO_COMPAT_FALLBACK_FL);
    if unknown != 0 {
        return Err(Error::Invalid(format!("unknown casefold encoding flags {unknown:#x}")));
    }
    Ok(())
}

/// The geometry of `block_size`-byte blocks, or why there is none.
pub fn block_geometry(block_size: u32) -> Result<Geometry> {
    Geometry::of_block("volume", block_size as usize)
        .map_err(|_| Error::Invalid(format!("block size {block_size}: F2FS blocks are 4096 or 16384 bytes")))
}

/// The geometry of a new volume of `block_size`-byte blocks with `features`: the
/// block size's, with 4 KiB summaries packed four to an SSA block when `packed_ssa` is
/// asked for (never without: the older layout stays the default). `packed_ssa` with
/// 4 KiB blocks is refused (their summaries are 4 KiB already; mkfs.f2fs drops the flag).
pub fn volume_geometry(block_size: u32, features: u32) -> Result<Geometry> {
    let geo = block_geometry(block_size)?;
    let packed = features & FEATURE_PACKED_SSA != 0;
    if packed && geo.is_default() {
        return Err(Error::Invalid(format!(
            "the packed_ssa feature is for 16384-byte blocks (-b 16384), not {block_size}-byte ones"
        )));
    }
    Ok(geo.with_packed_ssa(packed))
}

/// The layout `opts` ask for: the `ro` feature's ([`layout::compute_ro`]) or the normal
/// one.
fn compute_layout(input: &LayoutInput, opts: &MkfsOptions) -> Result<Layout> {
    if opts.features & FEATURE_RO == 0 {
        return layout::compute(input);
    }
    if opts.features & FEATURE_BLKZONED != 0 {
        return Err(Error::Invalid(
            "the ro feature makes no zoned volumes: blkzoned and ro cannot be combined".into(),
        ));
    }
    if opts.overprovision_pct.is_some() {
        return Err(Error::Invalid(
            "the ro feature keeps no overprovision space: drop the overprovision ratio".into(),
        ));
    }
    layout::compute_ro(input)
}

/// Formats `path` (see [`MkfsOptions`]). Validates everything first; on error nothing
/// has been written.
pub fn mkfs(path: &Path, opts: &MkfsOptions) -> Result<MkfsReport> {
    mkfs_with_progress(path, opts, &mut |_, _| {})
}

/// [`mkfs`], telling `progress(blocks written, blocks to write)` as it goes: on a block
/// device (or any target that is not a fresh sparse file) most of the time goes into
/// zeroing the old metadata areas, a few blocks at a time of a large volume's SIT and NAT.
pub fn mkfs_with_progress(path: &Path, opts: &MkfsOptions, progress: &mut dyn FnMut(u64, u64)) -> Result<MkfsReport> {
    check_features(opts.features)?;
    check_encoding(opts)?;
    let geometry = volume_geometry(opts.block_size, opts.features)?;
    let mut input = LayoutInput {
        bytes: opts.size_bytes.unwrap_or(0),
        sector_size: 512,
        segs_per_sec: opts.segs_per_sec,
        secs_per_zone: opts.secs_per_zone,
        overprovision_pct: opts.overprovision_pct,
        geometry,
    };
    layout::check_options(&input)?;
    let target = open_target(path, opts.size_bytes)?;
    if let Some(t) = &target {
        input.bytes = t.bytes;
        input.sector_size = t.sector_size;
    }
    let layout = compute_layout(&input, opts)?;
    let (uid, gid) = opts.root_owner.unwrap_or_else(process_owner);
    let version = opts.version.clone().unwrap_or_else(kernel_version);
    let trimmed = target.as_ref().is_none_or(|t| t.regular);
    let params = image::Params {
        layout: &layout,
        features: effective_features(opts.features),
        uuid: opts.uuid.unwrap_or_else(random_uuid),
        label: &opts.label,
        version: &version,
        time_secs: opts.timestamp_secs.unwrap_or_else(now_secs),
        root_uid: uid,
        root_gid: gid,
        cp_ver: opts.cp_ver.unwrap_or_else(|| (random_u32() & 0x7fff_ffff | 1) as u64),
        trimmed,
        encoding_flags: opts.encoding_flags,
    };
    let plan = image::plan(&params)?;
    cp::validate(&plan.checkpoint, &plan.superblock)?;
    let file = prepare(path, target, input.bytes)?;
    let stale = if trimmed { 0 } else { stale_metadata_blocks(&layout) };
    let total = stale + plan.writes.len() as u64;
    let mut written = 0;
    if !trimmed {
        written += clear_stale_metadata(&file, &layout, path, &mut |done| progress(done, total))?;
    }
    for (addr, block) in &plan.writes {
        file.write_all_at(block, addr * geometry.block_size() as u64)
            .map_err(io_err(path, "cannot write to"))?;
        written += 1;
        progress(written, total);
    }
    file.sync_all().map_err(io_err(path, "cannot flush"))?;
    Ok(MkfsReport {
        size_bytes: input.bytes,
        layout,
        superblock: plan.superblock,
        checkpoint: plan.checkpoint,
        trimmed,
        blocks_written: written,
    })
}

/// The blocks of a new volume of `bytes` bytes laid out as [`mkfs`] lays it out (the
/// whole volume counts as discarded: every block not listed reads as zeros), for
/// volumes that live in memory (`uf2fs bench`). `opts.size_bytes` is ignored.
pub fn mkfs_blocks(opts: &MkfsOptions, bytes: u64) -> Result<(MkfsReport, Vec<image::BlockWrite>)> {
    check_features(opts.features)?;
    check_encoding(opts)?;
    let input = LayoutInput {
        bytes,
        sector_size: 512,
        segs_per_sec: opts.segs_per_sec,
        secs_per_zone: opts.secs_per_zone,
        overprovision_pct: opts.overprovision_pct,
        geometry: volume_geometry(opts.block_size, opts.features)?,
    };
    layout::check_options(&input)?;
    let layout = compute_layout(&input, opts)?;
    let (uid, gid) = opts.root_owner.unwrap_or_else(process_owner);
    let version = opts.version.clone().unwrap_or_else(kernel_version);
    let params = image::Params {
        layout: &layout,
        features: effective_features(opts.features),
        uuid: opts.uuid.unwrap_or_else(random_uuid),
        label: &opts.label,
        version: &version,
        time_secs: opts.timestamp_secs.unwrap_or_else(now_secs),
        root_uid: uid,
        root_gid: gid,
        cp_ver: opts.cp_ver.unwrap_or_else(|| (random_u32() & 0x7fff_ffff | 1) as u64),
        trimmed: true,
        encoding_flags: opts.encoding_flags,
    };
    let plan = image::plan(&params)?;
    cp::validate(&plan.checkpoint, &plan.superblock)?;
    let report = MkfsReport {
        size_bytes: bytes,
        layout,
        superblock: plan.superblock,
        checkpoint: plan.checkpoint,
        trimmed: true,
        blocks_written: plan.writes.len() as u64,
    };
    Ok((report, plan.writes))
}

/// 64 random bits from the host (seeds for the write path).
pub(crate) fn host_random_u64() -> u64 {
    ((random_u32() as u64) << 32) | random_u32() as u64
}

/// The bytes of a fresh image of `bytes` made by [`mkfs_blocks`] with `opts` (unit
/// tests).
#[cfg(test)]
pub(crate) fn mem_image(opts: &MkfsOptions, bytes: u64) -> Vec<u8> {
    let (_, writes) = mkfs_blocks(opts, bytes).unwrap();
    let mut image = vec![0u8; bytes as usize];
    for (addr, data) in writes {
        let at = addr as usize * opts.block_size as usize;
        image[at..at + data.len()].copy_from_slice(&data);
    }
    image
}

/// A fresh read-write file system of `bytes` made by [`mkfs_blocks`] with `opts`, on
/// an in-memory device (unit tests).
#[cfg(test)]
pub(crate) fn mem_fs(opts: &MkfsOptions, bytes: u64) -> crate::Fs {
    let dev = crate::device::MemDevice::new(mem_image(opts, bytes));
    crate::Fs::open_device_with(Box::new(dev), "mem", crate::OpenOptions { read_write: true }).unwrap()
}
