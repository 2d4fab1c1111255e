//! `uf2fs mkfs`: make an F2FS image file, or format an existing file or block device.
//!
//! Argument checks and output only; the format itself is `uf2fs_core::mkfs`.

use crate::errors::UsageError;
use crate::progress::{Files, Progress};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use uf2fs_core::mkfs::{layout::human_bytes, mkfs_with_progress, parse_features, MkfsOptions, MkfsReport};

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct MkfsRequest {
    /// `--size`: make (or remake) the image with this many bytes.
    pub size: Option<u64>,
    /// `--segs-per-sec`.
    pub segs_per_sec: u32,
    /// `--overprovision`, in percent.
    pub overprovision: Option<f64>,
    /// `--zoned`: zone size in bytes.
    pub zoned: Option<u64>,
    /// `-O` lists, each comma-separated.
    pub features: Vec<String>,
    /// `-C ENCODING[:FLAGS]`: casefolding (see [`parse_casefold`]).
    pub casefold: Option<String>,
    /// `--label`.
    pub label: String,
    /// `-b`: block size in bytes (4096 or 16384, checked by [`check_block_size`]).
    pub block_size: u32,
    /// `--force`: overwrite an existing image or file system.
    pub force: bool,
    /// `--quiet`: print nothing on success.
    pub quiet: bool,
    /// The image file or block device.
    pub image: PathBuf,
    /// The tree to build the volume from.
    pub source: Option<PathBuf>,
    /// How to build it.
    pub pack: crate::pack::PackArgs,
}

/// Parses a size: a number of bytes, optionally followed by K, M, G or T (powers of
/// 1024, either case, with an optional "iB" or "B"); the same rules as `bench`'s.
pub fn parse_size(text: &str) -> Result<u64, String> {
    uf2fs_lab::size::parse_size(text)
}

/// Parses mkfs.f2fs's `-C` value: the encoding `utf8` (F2FS's only one, utf8-12.1),
/// then optionally `:` and comma-separated flags (`strict`). Returns the encoding
/// flags.
pub fn parse_casefold(text: &str) -> Result<u16, UsageError> {
    use uf2fs_core::mkfs::SB_ENC_STRICT_MODE_FL;
    let (encoding, flags) = text.split_once(':').unwrap_or((text, ""));
    if encoding != "utf8" {
        return Err(UsageError(format!(
            "-C {text}: unknown encoding '{encoding}' (F2FS knows utf8)"
        )));
    }
    let mut bits = 0;
    for flag in flags.split(',').filter(|f| !f.is_empty()) {
        match flag {
            "strict" => bits |= SB_ENC_STRICT_MODE_FL,
            _ => {
                return Err(UsageError(format!(
                    "-C {text}: unknown encoding flag '{flag}' (known: strict)"
                )))
            }
        }
    }
    Ok(bits)
}

/// The `-C` value that stands for encoding flags `flags` (for `--like` and `info`).
pub fn casefold_arg(flags: u16) -> String {
    use uf2fs_core::mkfs::SB_ENC_STRICT_MODE_FL;
    if flags & SB_ENC_STRICT_MODE_FL != 0 {
        "utf8:strict".into()
    } else {
        "utf8".into()
    }
}

/// What an existing target already holds, by the signatures mkfs tools look for.
fn existing_filesystem(path: &Path) -> Option<&'static str> {
    let mut head = vec![0u8; 65_600 + 8];
    let mut f = File::open(path).ok()?;
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let at = |off: usize, magic: &[u8]| got >= off + magic.len() && &head[off..off + magic.len()] == magic;
    if at(1024, &0xF2F5_2010u32.to_le_bytes()) {
        Some("an F2FS file system")
    } else if at(1080, &0xEF53u16.to_le_bytes()) {
        Some("an ext2/3/4 file system")
    } else if at(0, b"XFSB") {
        Some("an XFS file system")
    } else if at(65_600, b"_BHRfS_M") {
        Some("a Btrfs file system")
    } else {
        None
    }
}

/// Refuses to overwrite without --force: an existing file when --size asks for a new
/// image, or a file or device that holds a file system.
fn check_overwrite(req: &MkfsRequest) -> anyhow::Result<()> {
    if req.force {
        return Ok(());
    }
    let Ok(meta) = std::fs::metadata(&req.image) else {
        return Ok(());
    };
    let shown = req.image.display();
    if req.size.is_some() && meta.is_file() {
        return Err(UsageError(format!(
            "{shown} exists; pass --force to replace it with a new {} image",
            human_bytes(req.size.unwrap_or(0))
        ))
        .into());
    }
    if let Some(what) = existing_filesystem(&req.image) {
        return Err(UsageError(format!("{shown} holds {what}; pass --force to overwrite it")).into());
    }
    Ok(())
}

/// Runs `uf2fs mkfs`.
pub fn run(req: &MkfsRequest) -> anyhow::Result<()> {
    let mut features = 0;
    for list in &req.features {
        features |= parse_features(list).map_err(|e| UsageError(e.to_string()))?;
    }
    let encoding_flags = match &req.casefold {
        Some(c) => {
            features |= parse_features("casefold")?;
            parse_casefold(c)?
        }
        None => 0,
    };
    if req.segs_per_sec == 0 {
        return Err(UsageError("--segs-per-sec must be at least 1".into()).into());
    }
    let mut segs_per_sec = req.segs_per_sec;
    if let Some(zone) = req.zoned {
        if req.block_size != 4096 {
            return Err(UsageError(format!(
                "--zoned with -b {}: uf2fs lays out zoned volumes of 4096-byte blocks only",
                req.block_size
            ))
            .into());
        }
        const SEGMENT: u64 = 2 << 20;
        if zone == 0 || zone % SEGMENT != 0 || zone / SEGMENT > 512 {
            return Err(UsageError(format!(
                "--zoned {zone}: the zone size must be a multiple of 2 MiB (one F2FS segment), at most 1 GiB"
            ))
            .into());
        }
        segs_per_sec = (zone / SEGMENT) as u32;
        features |= parse_features("blkzoned")?;
    }
    if let Some(p) = req.overprovision.filter(|p| !(*p > 0.0 && *p < 100.0)) {
        return Err(UsageError(format!(
            "--overprovision {p} out of range (more than 0 and less than 100)"
        ))
        .into());
    }
    if let Some(source) = &req.source {
        return run_pack(req, source, features, encoding_flags, segs_per_sec);
    }
    let missing = std::fs::metadata(&req.image).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    if req.size.is_none() && missing {
        return Err(UsageError(format!(
            "{} does not exist; pass --size to create it",
            req.image.display()
        ))
        .into());
    }
    check_overwrite(req)?;
    let opts = MkfsOptions {
        size_bytes: req.size,
        segs_per_sec,
        overprovision_pct: req.overprovision,
        features,
        label: req.label.clone(),
        block_size: req.block_size,
        encoding_flags,
        ..MkfsOptions::default()
    };
    let report = format(&req.image, &opts, req.quiet)?;
    if !req.quiet {
        print_summary(&req.image, &report)?;
    }
    Ok(())
}

/// Formats `image` with `opts`, with progress on a terminal (not with `quiet`): the
/// blocks written, most of them zeroing the old metadata of a device.
fn format(image: &Path, opts: &MkfsOptions, quiet: bool) -> anyhow::Result<MkfsReport> {
    let mut progress: Option<Progress> = None;
    let report = mkfs_with_progress(image, opts, &mut |done, total| {
        if quiet {
            return;
        }
        let block = opts.block_size as u64;
        progress
            .get_or_insert_with(|| Progress::bytes(Some(total * block), Files::Hidden, "formatting"))
            .set_bytes(done * block);
    });
    drop(progress);
    Ok(report?)
}

/// Parses a UUID written as 32 hex digits, dashes anywhere.
fn parse_uuid(text: &str) -> Result<[u8; 16], UsageError> {
    let hex: Vec<u8> = text.bytes().filter(|&b| b != b'-').collect();
    let bad = || UsageError(format!("--uuid {text}: expected 32 hex digits (dashes allowed)"));
    if hex.len() != 32 {
        return Err(bad());
    }
    let mut u = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).map_err(|_| bad())?;
        u[i] = u8::from_str_radix(s, 16).map_err(|_| bad())?;
    }
    Ok(u)
}

/// `uf2fs mkfs IMAGE SOURCE`: everything checked and scanned, then the volume made
/// and filled; on a failure after the image was created, the image is removed.
fn run_pack(
    req: &MkfsRequest,
    source: &Path,
    mut features: u32,
    encoding_flags: u16,
    segs_per_sec: u32,
) -> anyhow::Result<()> {
    use crate::pack::sparse::SparseReport;
    use crate::pack::{fill, prepare, source_date_epoch, PackOptions};
    use uf2fs_core::compress::ClusterCodec;
    let a = &req.pack;
    let compress = a
        .compress
        .as_deref()
        .map(|c| ClusterCodec::parse(c, a.compress_log_size.unwrap_or(2), a.compress_chksum))
        .transpose()
        .map_err(|e| UsageError(format!("--compress: {e}")))?;
    let mut mount_point = a.mount_point.as_bytes().to_vec();
    if !mount_point.starts_with(b"/") {
        mount_point.insert(0, b'/');
    }
    while mount_point.len() > 1 && mount_point.ends_with(b"/") {
        mount_point.pop();
    }
    let opts = PackOptions {
        source: source.to_path_buf(),
        fs_config: a.fs_config.clone(),
        fs_config_default: a.fs_config_default,
        file_contexts: a.file_contexts.clone(),
        mount_point,
        sload_root: a.sload_root,
        timestamp: match a.timestamp {
            Some(t) => Some(t),
            None => source_date_epoch().map_err(|e| UsageError(e.to_string()))?,
        },
        preserve_owner: a.preserve_owner,
        xattrs: a.xattrs,
        compress,
        compress_ext: a.compress_extension.clone(),
        nocompress_ext: a.nocompress_extension.clone(),
        release: a.release_blocks,
    };
    let uuid = a.uuid.as_deref().map(parse_uuid).transpose()?;
    if compress.is_some() {
        features |= parse_features("extra_attr,compression")?;
    }
    if req.zoned.is_some() {
        return Err(UsageError("mkfs with a source tree makes regular volumes; --zoned is not accepted".into()).into());
    }
    let inputs = prepare(&opts).map_err(|e| UsageError(format!("{e:#}")))?;
    let geometry = uf2fs_core::mkfs::volume_geometry(req.block_size, features)?;
    let ro = features & parse_features("ro")? != 0;
    let shrink = inputs.shrink_size(a.margin, ro, geometry)?;
    let size = match req.size {
        Some(s) if s < shrink && a.size_from_like => {
            return Err(UsageError(format!(
                "the tree needs about {} and the original given to --like is {}: pass --shrink-to-fit, or a \
                 larger --size",
                human_bytes(shrink),
                human_bytes(s)
            ))
            .into());
        }
        Some(s) if s < shrink => {
            return Err(UsageError(format!(
                "the tree needs about {} and --size gives {}: pass a larger --size, or none to shrink to fit",
                human_bytes(shrink),
                human_bytes(s)
            ))
            .into());
        }
        Some(s) => s,
        None => shrink,
    };
    let replacing = MkfsRequest {
        size: Some(size),
        ..req.clone()
    };
    check_overwrite(&replacing)?;
    let (derived_uuid, cp_ver) = inputs.ids(&opts);
    let time = opts.timestamp.unwrap_or_else(|| inputs.root_time());
    let mkfs_opts = MkfsOptions {
        size_bytes: Some(size),
        segs_per_sec,
        overprovision_pct: req.overprovision,
        features,
        label: req.label.clone(),
        root_owner: Some(inputs.root_owner()),
        uuid: Some(uuid.unwrap_or(derived_uuid)),
        timestamp_secs: Some(time.max(0) as u64),
        cp_ver: Some(cp_ver),
        version: Some(format!("uf2fs {}", env!("CARGO_PKG_VERSION"))),
        block_size: req.block_size,
        encoding_flags,
        ..MkfsOptions::default()
    };
    let existed = req.image.exists();
    // A sparse image is converted from a raw one built beside it.
    let build = if a.sparse {
        let mut name = std::ffi::OsString::from(".");
        name.push(req.image.file_name().unwrap_or_default());
        name.push(format!(".uf2fs-{}.raw", std::process::id()));
        req.image.with_file_name(name)
    } else {
        req.image.clone()
    };
    let made = (|| -> anyhow::Result<(MkfsReport, crate::pack::PackReport, Option<SparseReport>)> {
        let report = format(&build, &mkfs_opts, req.quiet)?;
        let fs = uf2fs_core::Fs::open_to_build(&build)?;
        // Progress on a terminal (not with --quiet): inodes made and data bytes
        // written, out of the scan's totals.
        let (inodes, bytes) = inputs.work();
        let progress = if req.quiet {
            Progress::hidden()
        } else {
            Progress::bytes(Some(bytes), Files::Counted(Some(inodes)), "packing")
        };
        let packed = fill(fs, &opts, &inputs, &progress)?;
        progress.finish();
        let sparse = if a.sparse {
            Some(to_sparse(&build, &req.image)?)
        } else {
            None
        };
        Ok((report, packed, sparse))
    })();
    if a.sparse {
        let _ = std::fs::remove_file(&build);
    }
    let (report, packed, sparse) = match made {
        Ok(r) => r,
        Err(e) => {
            let regular = std::fs::metadata(&req.image).is_ok_and(|m| m.is_file());
            if regular && (!existed || req.force) {
                let _ = std::fs::remove_file(&req.image);
            }
            return Err(e.context(format!("cannot build {}; no image was left", req.image.display())));
        }
    };
    if !req.quiet {
        print_summary(&req.image, &report)?;
        println!(
            "packed:        {} inodes from {} ({} compressed files, {} compressed clusters){}",
            packed.inodes,
            source.display(),
            packed.compressed_files,
            packed.compressed_clusters,
            if req.size.is_none() { ", size chosen to fit" } else { "" }
        );
        if let Some(s) = sparse {
            println!(
                "sparse:        {} chunks: {} blocks of data, {} zero fills, {} don't care",
                s.chunks, s.raw_blocks, s.zero_blocks, s.dont_care_blocks
            );
        }
    }
    Ok(())
}

/// Writes the raw image `raw` to `image` as an Android sparse image (see
/// [`crate::pack::sparse`]): the metadata areas and the rest of each log's segment
/// are kept as zeros, the rest of the free space is "don't care".
fn to_sparse(raw: &Path, image: &Path) -> anyhow::Result<crate::pack::sparse::SparseReport> {
    let fs = uf2fs_core::Fs::open(raw, &[])?;
    let sb = fs.superblock();
    let cp = fs.checkpoint();
    let main = sb.main_blkaddr as u64;
    let per_seg = sb.blocks_per_seg() as u64;
    let logs = cp.cur_node_segno[..3]
        .iter()
        .zip(&cp.cur_node_blkoff[..3])
        .chain(cp.cur_data_segno[..3].iter().zip(&cp.cur_data_blkoff[..3]));
    let keep: Vec<(u64, u64)> = logs
        .map(|(&seg, &off)| {
            let start = main + seg as u64 * per_seg;
            (start + off as u64, start + per_seg)
        })
        .collect();
    let block_size = 1u32 << sb.log_blocksize;
    crate::pack::sparse::write_sparse(raw, image, block_size, main, &keep)
}

fn print_summary(image: &Path, r: &MkfsReport) -> anyhow::Result<()> {
    use std::io::Write;
    let l = &r.layout;
    let features = r.feature_names();
    let mut out = std::io::stdout().lock();
    writeln!(out, "made F2FS on {}", image.display())?;
    writeln!(
        out,
        "size:          {} ({} blocks of {})",
        human_bytes(r.size_bytes),
        l.block_count,
        human_bytes(l.geometry.block_size() as u64)
    )?;
    writeln!(
        out,
        "segments:      {} (main area {}, in {} sections of {} segment(s))",
        l.segment_count, l.segment_count_main, l.section_count, l.segs_per_sec
    )?;
    writeln!(
        out,
        "overprovision: {:.2}% ({} segments, {} reserved for GC)",
        l.overprovision_pct, l.overprov_segments, l.reserved_segments
    )?;
    writeln!(
        out,
        "user space:    {}",
        human_bytes(l.user_block_count() * l.geometry.block_size() as u64)
    )?;
    let shown = if features.is_empty() {
        "(none)".to_string()
    } else {
        features.join(", ")
    };
    writeln!(out, "features:      {shown}")?;
    out.flush()?;
    Ok(())
}

/// `uf2fs mkfs -b BYTES`: 4096, or 16384 (Android's 16 KiB-page devices); anything
/// else is no F2FS block size.
pub fn check_block_size(bytes: u32) -> Result<(), crate::errors::UsageError> {
    match bytes {
        4096 | 16384 => Ok(()),
        other => Err(crate::errors::UsageError(format!(
            "mkfs -b {other}: F2FS blocks are 4096 or 16384 bytes"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("5G"), Ok(5 << 30));
        assert_eq!(parse_size("5GiB"), Ok(5 << 30));
        assert_eq!(parse_size("5GB"), Ok(5 << 30));
        assert_eq!(parse_size("7B"), Ok(7));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("-5M").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
