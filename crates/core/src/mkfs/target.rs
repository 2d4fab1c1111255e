//! The device mkfs writes: an image file (created, or emptied and resized) or a block
//! device (whose stale metadata is zeroed, as nothing discards it).

use super::layout::Layout;
use crate::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::Path;
use uf2fs_format::consts::BLOCKS_PER_SEG;

/// The target, opened and sized, before anything is written.
pub struct Target {
    pub file: File,
    /// Bytes the volume covers.
    pub bytes: u64,
    /// Logical sector size.
    pub sector_size: u32,
    /// A regular file (emptied and resized before writing) or a block device.
    pub regular: bool,
}

pub fn io_err(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> Error {
    let context = format!("{what} {}", path.display());
    move |source| Error::Io { context, source }
}

/// Opens (or, for a missing path with a size, prepares to create) the target.
pub fn open_target(path: &Path, size: Option<u64>) -> Result<Option<Target>> {
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

/// Makes the target ready for writing: a regular file is emptied and given its size
/// (sparse: all old contents discarded, as mkfs.f2fs discards them); a missing file is
/// created.
pub fn prepare(path: &Path, target: Option<Target>, bytes: u64) -> Result<File> {
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

/// The ranges [`clear_stale_metadata`] zeroes, as (first block, blocks): the blocks
/// before the checkpoint area, the live copy of every SIT and NAT block, and the first
/// block of the warm node log (where roll-forward recovery would start).
fn stale_metadata_ranges(layout: &Layout) -> Vec<(u64, u64)> {
    let seg = BLOCKS_PER_SEG as u64;
    let mut ranges = vec![(2u64, layout.segment0_blkaddr as u64 - 2)];
    ranges.push((layout.sit_blkaddr() as u64, layout.segment_count_sit as u64 / 2 * seg));
    for pair in 0..layout.segment_count_nat as u64 / 2 {
        ranges.push((layout.nat_blkaddr() as u64 + 2 * pair * seg, seg));
    }
    let warm_node = layout.main_blkaddr() as u64 + layout.cur_node_segno[1] as u64 * seg;
    ranges.push((warm_node, 1));
    ranges
}

/// How many blocks [`clear_stale_metadata`] writes.
pub fn stale_metadata_blocks(layout: &Layout) -> u64 {
    stale_metadata_ranges(layout).iter().map(|(_, count)| count).sum()
}

/// On a device whose old contents stay, zeroes what a mount would otherwise trust (see
/// [`stale_metadata_ranges`]), telling `progress` the blocks written so far after each
/// write. Returns the blocks written.
pub fn clear_stale_metadata(file: &File, layout: &Layout, path: &Path, progress: &mut dyn FnMut(u64)) -> Result<u64> {
    let seg = BLOCKS_PER_SEG as u64;
    let block_size = layout.geometry.block_size();
    let zeros = vec![0u8; block_size * seg as usize];
    let mut written = 0;
    for (start, count) in stale_metadata_ranges(layout) {
        let mut done = 0;
        while done < count {
            let n = (count - done).min(seg);
            let at = (start + done) * block_size as u64;
            file.write_all_at(&zeros[..n as usize * block_size], at)
                .map_err(io_err(path, "cannot write to"))?;
            done += n;
            progress(written + done);
        }
        written += count;
    }
    Ok(written)
}
