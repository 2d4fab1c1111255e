//! `mkfs`: format an image file or block device as F2FS, the way mkfs.f2fs 1.15 does.
//!
//! Same options, same geometry (see [`layout`]), same blocks (see [`image`]): for the
//! same size, sections and features our images and mkfs.f2fs's differ only in what is
//! random or taken from the moment (UUID, checkpoint version, times). Everything is
//! checked before the first write: a bad option or a device too small leaves it alone.

mod cp;
pub mod image;
pub mod layout;

use crate::{Error, Result};
use layout::{Layout, LayoutInput};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;
use uf2fs_format::checkpoint::Checkpoint;
use uf2fs_format::consts::{BLOCKS_PER_SEG, BLOCK_SIZE};
use uf2fs_format::superblock::*;

/// Features `mkfs` can make, by superblock bit.
pub const SUPPORTED_FEATURES: u32 = FEATURE_EXTRA_ATTR
    | FEATURE_INODE_CHKSUM
    | FEATURE_FLEXIBLE_INLINE_XATTR
    | FEATURE_INODE_CRTIME
    | FEATURE_SB_CHKSUM
    | FEATURE_LOST_FOUND;
/// Features that need extra_attr (room in the inode for their fields).
const NEED_EXTRA_ATTR: u32 = FEATURE_INODE_CHKSUM | FEATURE_FLEXIBLE_INLINE_XATTR | FEATURE_INODE_CRTIME;

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

/// Checks feature bits: unsupported ones are refused by name; checksums, flexible
/// inline xattrs and creation times need extra_attr, as with mkfs.f2fs.
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

/// The target, opened and sized, before anything is written.
struct Target {
    file: File,
    /// Bytes the volume covers.
    bytes: u64,
    /// Logical sector size.
    sector_size: u32,
    /// A regular file (emptied and resized before writing) or a block device.
    regular: bool,
}

fn io_err(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> Error {
    let context = format!("{what} {}", path.display());
    move |source| Error::Io { context, source }
}

/// Opens (or, for a missing path with a size, prepares to create) the target.
fn open_target(path: &Path, size: Option<u64>) -> Result<Option<Target>> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && size.is_some() => return Ok(None),
        Err(e) => return Err(io_err(path, "cannot open")(e)),
    };
    let ft = meta.file_type();
    if !ft.is_file() && !ft.is_block_device() {
        return Err(Error::Invalid(format!(
            "{} is neither a regular file nor a block device",
            path.display()
        )));
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io_err(path, "cannot open"))?;
    let regular = ft.is_file();
    let device_bytes = if regular {
        meta.len()
    } else {
        file.seek(SeekFrom::End(0)).map_err(io_err(path, "cannot size"))?
    };
    let bytes = match size {
        Some(s) if !regular && s > device_bytes => {
            return Err(Error::Invalid(format!(
                "{} holds {} bytes, fewer than the {s} asked for",
                path.display(),
                device_bytes
            )));
        }
        Some(s) => s,
        None => device_bytes,
    };
    let sector_size = if regular { 512 } else { block_device_sector_size(path) };
    Ok(Some(Target {
        file,
        bytes,
        sector_size,
        regular,
    }))
}

/// Logical sector size of a block device, from sysfs (512 when unknown).
fn block_device_sector_size(path: &Path) -> u32 {
    let read = || -> Option<u32> {
        let canon = std::fs::canonicalize(path).ok()?;
        let name = canon.file_name()?.to_str()?.to_string();
        let text = std::fs::read_to_string(format!("/sys/class/block/{name}/queue/logical_block_size"))
            .or_else(|_| std::fs::read_to_string(format!("/sys/class/block/{name}/../queue/logical_block_size")))
            .ok()?;
        text.trim().parse().ok()
    };
    read().unwrap_or(512)
}

/// Formats `path` (see [`MkfsOptions`]). Validates everything first; on error nothing
/// has been written.
pub fn mkfs(path: &Path, opts: &MkfsOptions) -> Result<MkfsReport> {
    check_features(opts.features)?;
    let mut input = LayoutInput {
        bytes: opts.size_bytes.unwrap_or(0),
        sector_size: 512,
        segs_per_sec: opts.segs_per_sec,
        secs_per_zone: opts.secs_per_zone,
        overprovision_pct: opts.overprovision_pct,
    };
    layout::check_options(&input)?;
    let target = open_target(path, opts.size_bytes)?;
    if let Some(t) = &target {
        input.bytes = t.bytes;
        input.sector_size = t.sector_size;
    }
    let layout = layout::compute(&input)?;
    let (uid, gid) = opts.root_owner.unwrap_or_else(process_owner);
    let version = kernel_version();
    let trimmed = target.as_ref().is_none_or(|t| t.regular);
    let params = image::Params {
        layout: &layout,
        features: opts.features,
        uuid: opts.uuid.unwrap_or_else(random_uuid),
        label: &opts.label,
        version: &version,
        time_secs: opts.timestamp_secs.unwrap_or_else(now_secs),
        root_uid: uid,
        root_gid: gid,
        cp_ver: (random_u32() & 0x7fff_ffff | 1) as u64,
        trimmed,
    };
    let plan = image::plan(&params)?;
    cp::validate(&plan.checkpoint, &plan.superblock)?;
    let file = prepare(path, target, input.bytes)?;
    let mut written = 0;
    if !trimmed {
        written += clear_stale_metadata(&file, &layout, path)?;
    }
    for (addr, block) in &plan.writes {
        file.write_all_at(block, addr * BLOCK_SIZE as u64)
            .map_err(io_err(path, "cannot write to"))?;
        written += 1;
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

/// Makes the target ready for writing: a regular file is emptied and given its size
/// (sparse: all old contents discarded, as mkfs.f2fs discards them); a missing file is
/// created.
fn prepare(path: &Path, target: Option<Target>, bytes: u64) -> Result<File> {
    let file = match target {
        Some(Target {
            file, regular: false, ..
        }) => return Ok(file),
        Some(t) => t.file,
        None => OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io_err(path, "cannot create"))?,
    };
    file.set_len(0).map_err(io_err(path, "cannot truncate"))?;
    file.set_len(bytes).map_err(io_err(path, "cannot resize"))?;
    Ok(file)
}

/// On a device whose old contents stay, zeroes what a mount would otherwise trust:
/// the blocks before the checkpoint area, the live copy of every SIT and NAT block, and
/// the first block of the warm node log (where roll-forward recovery would start).
/// Returns the blocks written.
fn clear_stale_metadata(file: &File, layout: &Layout, path: &Path) -> Result<u64> {
    let seg = BLOCKS_PER_SEG as u64;
    let mut ranges = vec![(2u64, layout.segment0_blkaddr as u64 - 2)];
    ranges.push((layout.sit_blkaddr() as u64, layout.segment_count_sit as u64 / 2 * seg));
    for pair in 0..layout.segment_count_nat as u64 / 2 {
        ranges.push((layout.nat_blkaddr() as u64 + 2 * pair * seg, seg));
    }
    let warm_node = layout.main_blkaddr() as u64 + layout.cur_node_segno[1] as u64 * seg;
    ranges.push((warm_node, 1));
    let zeros = vec![0u8; BLOCK_SIZE * seg as usize];
    let mut written = 0;
    for (start, count) in ranges {
        let mut done = 0;
        while done < count {
            let n = (count - done).min(seg);
            let at = (start + done) * BLOCK_SIZE as u64;
            file.write_all_at(&zeros[..n as usize * BLOCK_SIZE], at)
                .map_err(io_err(path, "cannot write to"))?;
            done += n;
        }
        written += count;
    }
    Ok(written)
}

/// The first line of /proc/version, which mkfs.f2fs stores as the format's version.
fn kernel_version() -> String {
    let text = std::fs::read_to_string("/proc/version").unwrap_or_default();
    let line = text.lines().next().unwrap_or("").trim_end();
    let mut end = line.len().min(VERSION_LEN - 4);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 {
        return format!("uf2fs {}", env!("CARGO_PKG_VERSION"));
    }
    line[..end].to_string()
}

/// The real user and group of this process (from /proc; root when unknown).
fn process_owner() -> (u32, u32) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |key: &str| -> u32 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("Uid:"), field("Gid:"))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    let ok = File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !ok {
        // No /dev/urandom: mix the clock and the process id (uniqueness, not secrecy).
        let seed =
            now_secs() ^ ((std::process::id() as u64) << 32) ^ std::time::Instant::now().elapsed().as_nanos() as u64;
        let mut x = seed | 1;
        for byte in &mut b {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *byte = x as u8;
        }
    }
    b
}

fn random_u32() -> u32 {
    u32::from_le_bytes(random_bytes())
}

/// A random (version 4) UUID.
fn random_uuid() -> [u8; 16] {
    let mut u: [u8; 16] = random_bytes();
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    u
}
