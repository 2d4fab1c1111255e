//! `uf2fs info`: the core's summary of an image as `key: value` lines, or with `--json`
//! the superblock's and the active checkpoint's figures as one JSON object (its fields:
//! docs/json.md).

use crate::json;
use crate::pack::like::Like;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use uf2fs_core::Fs;

/// Prints the summary of `fs`; `paths` are the image and its further devices as given.
pub fn run(fs: &Fs, paths: &[PathBuf], as_json: bool) -> anyhow::Result<()> {
    // The repack settings need the whole tree walked on compressed volumes; a volume
    // whose tree cannot be read still gets the rest of its summary.
    let like = paths.first().map(|image| Like::of(fs, image));
    if as_json {
        let mut info = ImageInfo::of(fs, paths);
        info.repack = like.and_then(Result::ok).map(|l| Repack::of(&l));
        return json::print(&info);
    }
    let text = fs.info()?.to_string();
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    match like {
        Some(Ok(l)) => writeln!(out, "repack with:        {}", l.command_line())?,
        Some(Err(e)) => writeln!(out, "repack with:        (not known: {e:#})")?,
        None => {}
    }
    out.flush()?;
    Ok(())
}

/// `uf2fs info --json`.
#[derive(Debug, Serialize)]
struct ImageInfo {
    /// The image and any further devices, as given on the command line.
    devices_given: Vec<String>,
    volume_name: String,
    uuid: String,
    major_version: u16,
    minor_version: u16,
    /// The f2fs-tools (or uf2fs) version that made the volume.
    made_by: String,
    /// The last writer's version.
    last_written_by: String,
    features: Vec<String>,
    block_size: usize,
    sector_size: u32,
    block_count: u64,
    blocks_per_segment: u32,
    segments_per_section: u32,
    sections_per_zone: u32,
    segment_count: u32,
    section_count: u32,
    areas: Areas,
    /// The devices of a multi-device volume, as its superblock lists them (empty for a
    /// single device).
    devices: Vec<DeviceInfo>,
    root_ino: u32,
    checkpoint: CheckpointInfo,
    /// Whether fsync'd data written after the checkpoint was replayed (in memory: the
    /// image is unchanged).
    roll_forward_replayed: bool,
    /// The settings `uf2fs mkfs --like IMAGE` takes from it (`null` when the tree could
    /// not be read).
    repack: Option<Repack>,
}

/// `repack`: what a repack like this image uses (see `crate::pack::like`).
#[derive(Debug, Serialize)]
struct Repack {
    /// The `uf2fs mkfs` options after `IMAGE SOURCE`.
    args: Vec<String>,
    /// The whole command, shell-quoted.
    command: String,
    features: Vec<String>,
    block_size: u32,
    label: String,
    segments_per_section: u32,
    /// `original` (the image's size) or `shrink_to_fit` (an `ro` image).
    size_policy: &'static str,
    /// Bytes, or `null` when shrunk to fit.
    size: Option<u64>,
    sparse: bool,
    compression: Option<RepackCompression>,
}

#[derive(Debug, Serialize)]
struct RepackCompression {
    algorithm: String,
    log_cluster_size: u8,
    chksum: bool,
    release_blocks: bool,
    extensions: Vec<String>,
    nocompress_extensions: Vec<String>,
    compressed_files: u64,
    mismatched_files: u64,
    other_settings_files: u64,
}

impl Repack {
    fn of(l: &Like) -> Repack {
        Repack {
            args: l.args(),
            command: l.command_line(),
            features: l.features.clone(),
            block_size: l.block_size,
            label: l.label.clone(),
            segments_per_section: l.segs_per_sec,
            size_policy: if l.size.is_some() { "original" } else { "shrink_to_fit" },
            size: l.size,
            sparse: l.sparse,
            compression: l.compress.as_ref().map(|c| RepackCompression {
                algorithm: c.algorithm.clone(),
                log_cluster_size: c.log_cluster_size,
                chksum: c.chksum,
                release_blocks: c.release_blocks,
                extensions: c.extensions.clone(),
                nocompress_extensions: c.nocompress_extensions.clone(),
                compressed_files: c.compressed_files,
                mismatched_files: c.mismatched_files,
                other_settings_files: c.other_settings_files,
            }),
        }
    }
}

/// Where each area starts and its length in segments.
#[derive(Debug, Serialize)]
struct Areas {
    checkpoint: Area,
    sit: Area,
    nat: Area,
    ssa: Area,
    main: Area,
}

#[derive(Debug, Serialize)]
struct Area {
    /// First block address.
    blkaddr: u32,
    segments: u32,
}

#[derive(Debug, Serialize)]
struct DeviceInfo {
    path: String,
    segments: u32,
}

/// The checkpoint the image was opened from.
#[derive(Debug, Serialize)]
struct CheckpointInfo {
    version: u64,
    flags: Vec<&'static str>,
    user_block_count: u64,
    valid_block_count: u64,
    free_segment_count: u32,
    reserved_segment_count: u32,
    overprovision_segment_count: u32,
    valid_node_count: u32,
    valid_inode_count: u32,
    orphan_inode_count: usize,
}

impl ImageInfo {
    fn of(fs: &Fs, paths: &[PathBuf]) -> ImageInfo {
        let sb = fs.superblock();
        let cp = fs.checkpoint();
        let area = |blkaddr, segments| Area { blkaddr, segments };
        ImageInfo {
            devices_given: paths.iter().map(|p| p.display().to_string()).collect(),
            volume_name: sb.volume_name.clone(),
            uuid: uuid(&sb.uuid),
            major_version: sb.major_ver,
            minor_version: sb.minor_ver,
            made_by: sb.init_version.trim().to_owned(),
            last_written_by: sb.version.trim().to_owned(),
            features: sb.feature_names(),
            block_size: sb.block_size(),
            sector_size: 1u32 << sb.log_sectorsize,
            block_count: sb.block_count,
            blocks_per_segment: sb.blocks_per_seg(),
            segments_per_section: sb.segs_per_sec,
            sections_per_zone: sb.secs_per_zone,
            segment_count: sb.segment_count,
            section_count: sb.section_count,
            areas: Areas {
                checkpoint: area(sb.cp_blkaddr, sb.segment_count_ckpt),
                sit: area(sb.sit_blkaddr, sb.segment_count_sit),
                nat: area(sb.nat_blkaddr, sb.segment_count_nat),
                ssa: area(sb.ssa_blkaddr, sb.segment_count_ssa),
                main: area(sb.main_blkaddr, sb.segment_count_main),
            },
            devices: sb
                .devices
                .iter()
                .map(|d| DeviceInfo {
                    path: d.path.clone(),
                    segments: d.total_segments,
                })
                .collect(),
            root_ino: sb.root_ino,
            checkpoint: CheckpointInfo {
                version: cp.checkpoint_ver,
                flags: cp.flag_names(),
                user_block_count: cp.user_block_count,
                valid_block_count: cp.valid_block_count,
                free_segment_count: cp.free_segment_count,
                reserved_segment_count: cp.rsvd_segment_count,
                overprovision_segment_count: cp.overprov_segment_count,
                valid_node_count: cp.valid_node_count,
                valid_inode_count: cp.valid_inode_count,
                orphan_inode_count: fs.orphan_inodes().len(),
            },
            roll_forward_replayed: fs.replayed_in_memory(),
            repack: None,
        }
    }
}

/// The volume UUID in its usual 8-4-4-4-12 form, as `info` and blkid print it.
fn uuid(u: &[u8; 16]) -> String {
    let hex: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}
