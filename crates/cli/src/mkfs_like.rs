//! `uf2fs mkfs --like IMAGE`: the settings read from the original image
//! ([`crate::pack::like::Like`]) fill in every option the command line does not give.

use crate::errors::UsageError;
use crate::mkfs::MkfsRequest;
use crate::pack::like::Like;

/// The `mkfs` options that have a default, as given (`None`: not on the command line).
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// `-s`.
    pub segs_per_sec: Option<u32>,
    /// `-l`.
    pub label: Option<String>,
    /// `-b`.
    pub block_size: Option<u32>,
}

/// Applies `--like` (when given) to `req`, whose unset options hold their defaults;
/// then checks the compression options that need `--compress`.
pub fn apply(req: &mut MkfsRequest, given: &Given) -> anyhow::Result<()> {
    if let Some(path) = req.pack.like.clone() {
        let like = Like::of_image(&path)?;
        let size_before = req.size;
        apply_settings(req, given, &like);
        req.pack.size_from_like = size_before.is_none() && req.size.is_some();
        // A feature uf2fs cannot make yet is named now, before the tree is scanned.
        if req.features.iter().all(|f| like.features.join(",") == *f) {
            let bits = uf2fs_core::mkfs::parse_features(&like.features.join(","))?;
            if let Err(e) = uf2fs_core::mkfs::check_features(bits) {
                return Err(UsageError(format!(
                    "--like {}: {e} (the original's features: {}; pass -O to choose others)",
                    crate::names::escape_os(&path),
                    like.features.join(",")
                ))
                .into());
            }
        }
        if !req.quiet {
            warn_inexact(&path, &like);
        }
    }
    if req.pack.compress.as_deref() == Some("none") {
        req.pack.compress = None;
        req.pack.compress_log_size = None;
        req.pack.compress_extension.clear();
        req.pack.nocompress_extension.clear();
        req.pack.compress_chksum = false;
        req.pack.release_blocks = false;
    }
    let p = &req.pack;
    if p.compress.is_none() {
        let stray = [
            ("--compress-log-size", p.compress_log_size.is_some()),
            ("--compress-extension", !p.compress_extension.is_empty()),
            ("--nocompress-extension", !p.nocompress_extension.is_empty()),
            ("--compress-chksum", p.compress_chksum),
            ("--release-blocks", p.release_blocks),
        ];
        if let Some((name, _)) = stray.iter().find(|(_, set)| *set) {
            return Err(UsageError(format!(
                "{name} needs --compress ALGO (or --like an image with compressed files)"
            ))
            .into());
        }
    }
    Ok(())
}

/// Fills `req` from `like` where the command line left an option unset.
fn apply_settings(req: &mut MkfsRequest, given: &Given, like: &Like) {
    if req.features.is_empty() {
        req.features = vec![like.features.join(",")];
    }
    if given.block_size.is_none() {
        req.block_size = like.block_size;
    }
    if req.casefold.is_none() {
        req.casefold = like.encoding_flags.map(crate::mkfs::casefold_arg);
    }
    if given.label.is_none() {
        req.label = like.label.clone();
    }
    if given.segs_per_sec.is_none() && req.zoned.is_none() {
        req.segs_per_sec = like.segs_per_sec;
    }
    let pack = &mut req.pack;
    if req.source.is_some() {
        if req.size.is_none() && !pack.shrink_to_fit {
            req.size = like.size;
        }
        pack.sparse |= like.sparse;
    } else if req.size.is_none() && !req.image.exists() {
        // An empty volume of the original's size; an existing file or device keeps its own.
        req.size = Some(like.original_size);
    }
    if let Some(c) = &like.compress {
        if pack.compress.is_none() {
            pack.compress = Some(c.algorithm.clone());
        }
        if pack.compress.as_deref() != Some("none") {
            pack.compress_log_size.get_or_insert(c.log_cluster_size);
            if pack.compress_extension.is_empty() && pack.nocompress_extension.is_empty() {
                pack.compress_extension = c.extensions.clone();
                pack.nocompress_extension = c.nocompress_extensions.clone();
            }
            pack.compress_chksum |= c.chksum;
            pack.release_blocks |= c.release_blocks;
        }
    }
}

/// Says on stderr where the original cannot be matched exactly.
fn warn_inexact(path: &std::path::Path, like: &Like) {
    let Some(c) = &like.compress else { return };
    let shown = crate::names::escape_os(path);
    if c.mismatched_files > 0 {
        eprintln!(
            "uf2fs: warning: --like {shown}: no extension list says which files it compressed; the closest one \
             treats {} file(s) of a cluster or more differently",
            c.mismatched_files
        );
    }
    if c.other_settings_files > 0 {
        eprintln!(
            "uf2fs: warning: --like {shown}: {} of its {} compressed files have other settings than the ones used \
             ({}, clusters of 2^{} blocks)",
            c.other_settings_files, c.compressed_files, c.algorithm, c.log_cluster_size
        );
    }
}
