//! "Like the original": the `uf2fs mkfs` settings that repack an existing F2FS image
//! the way it was made, so that the device kernel that mounted the original accepts the
//! repack (`uf2fs mkfs --like IMAGE`, and the `repack with:` line of `uf2fs info`).
//!
//! Read from the image (see docs/packer.md, "Like the original"):
//! - the feature set (`-O`), the block size (`-b`), the label (`-l`), the segments per
//!   section (`-s`, when not 1); the `ro` layout is the `ro` feature;
//! - the size policy: an `ro` original was shrunk to fit by AOSP (mkf2fsuserimg.sh
//!   `--readonly` builds a second time at the size sload reported using, plus 6 MiB),
//!   so its repack is shrunk to fit too; any other original keeps its size (the
//!   superblock's block count times the block size), which is its partition's;
//! - an Android sparse original gives a sparse repack (`-S`);
//! - compression, from the inodes of the compressed files: the algorithm and level,
//!   the cluster size, checksums and released blocks most of them have, and which
//!   files are compressed, as the rule among "all files", `--compress-extension` and
//!   `--nocompress-extension` that disagrees with the original about the fewest files.
//!   A file smaller than one cluster is no evidence (uf2fs stores those plainly).

use anyhow::Context;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Read;
use std::path::Path;
use uf2fs_core::compress::StoredCompression;
use uf2fs_core::{FileKind, Fs, Ino};

/// The magic number that opens an Android sparse image.
const SPARSE_MAGIC: u32 = 0xed26_ff3a;

/// How files are compressed in the original, and so in the repack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LikeCompression {
    /// `--compress` value: `lz4`, `lz4hc:LEVEL`, `lzo`, `lzo-rle`, `zstd` or
    /// `zstd:LEVEL`.
    pub algorithm: String,
    /// `--compress-log-size`.
    pub log_cluster_size: u8,
    /// `--compress-chksum`.
    pub chksum: bool,
    /// `--release-blocks`.
    pub release_blocks: bool,
    /// `--compress-extension` values (only these files).
    pub extensions: Vec<String>,
    /// `--nocompress-extension` values (every file but these).
    pub nocompress_extensions: Vec<String>,
    /// Compressed files in the original.
    pub compressed_files: u64,
    /// Regular files of at least one cluster the chosen rule treats differently from
    /// the original (compressed there and not by the rule, or the reverse).
    pub mismatched_files: u64,
    /// Compressed files whose settings (algorithm, level, cluster size, checksums,
    /// released blocks) differ from the ones chosen, which most files have.
    pub other_settings_files: u64,
}

/// The settings of a repack like the original.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Like {
    /// Feature names, as `-O` takes them.
    pub features: Vec<String>,
    /// Block size in bytes.
    pub block_size: u32,
    /// Volume label.
    pub label: String,
    /// Segments per section.
    pub segs_per_sec: u32,
    /// The volume's size in bytes, or `None` to shrink to fit (an `ro` original).
    pub size: Option<u64>,
    /// The original's own size in bytes.
    pub original_size: u64,
    /// Whether the original is an Android sparse image.
    pub sparse: bool,
    /// How files are compressed, when any is.
    pub compress: Option<LikeCompression>,
    /// With the casefold feature: the encoding's flags (`-C utf8[:strict]`).
    pub encoding_flags: Option<u16>,
}

/// Whether `path` starts with the Android sparse image magic.
pub fn is_sparse(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|_| u32::from_le_bytes(magic) == SPARSE_MAGIC)
}

/// The extension of a file name as the packer compares it: what follows the last `.`
/// that is not the name's first byte.
pub fn extension(name: &[u8]) -> Option<&[u8]> {
    name.iter()
        .rposition(|&b| b == b'.')
        .filter(|&i| i > 0)
        .map(|i| &name[i + 1..])
}

/// One regular file of the original, for the compression rule.
struct FileSeen {
    /// Extension of (one of) its names.
    ext: Option<Vec<u8>>,
    size: u64,
    stored: Option<StoredCompression>,
}

/// Every regular file of `fs` once (a hard-linked one under its first name, in
/// bytewise order).
fn regular_files(fs: &Fs) -> anyhow::Result<Vec<FileSeen>> {
    let mut out = Vec::new();
    let mut seen: HashSet<Ino> = HashSet::new();
    let mut dirs = vec![fs.root()];
    while let Some(dir) = dirs.pop() {
        let mut entries = fs
            .read_dir(dir)
            .with_context(|| format!("cannot list directory inode {dir}"))?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        for e in entries.into_iter().rev() {
            match e.kind {
                FileKind::Dir => dirs.push(e.ino),
                FileKind::File if seen.insert(e.ino) => {
                    let st = fs.stat(e.ino)?;
                    out.push(FileSeen {
                        ext: extension(&e.name).map(<[u8]>::to_vec),
                        size: st.size,
                        stored: fs.stored_compression(e.ino)?,
                    });
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Which files a rule compresses: all, only `include` extensions, or all but
/// `exclude` ones.
enum Rule {
    All,
    Only(BTreeSet<Vec<u8>>),
    AllBut(BTreeSet<Vec<u8>>),
}

impl Rule {
    fn compresses(&self, ext: Option<&[u8]>) -> bool {
        match self {
            Rule::All => true,
            Rule::Only(list) => ext.is_some_and(|e| list.contains(e)),
            Rule::AllBut(list) => !ext.is_some_and(|e| list.contains(e)),
        }
    }
}

/// Compression settings compared across files.
type SettingsKey = (u8, u8, u8, bool, bool);

/// The compression of the original, when some file is compressed.
fn infer_compression(files: &[FileSeen], block_size: u64) -> Option<LikeCompression> {
    let compressed: Vec<(&FileSeen, StoredCompression)> =
        files.iter().filter_map(|f| f.stored.map(|s| (f, s))).collect();
    // The settings most compressed files have (ties: the first in tree order).
    // (algorithm, level, log cluster size, checksums, released) -> (files, first).
    let mut counts: BTreeMap<SettingsKey, (u64, usize)> = BTreeMap::new();
    for (i, (_, s)) in compressed.iter().enumerate() {
        let key = (s.algorithm, s.level, s.log_cluster_size, s.checksum, s.released);
        counts.entry(key).or_insert((0, i)).0 += 1;
    }
    let (_, &(most, first)) = counts
        .iter()
        .max_by_key(|(_, &(n, first))| (n, std::cmp::Reverse(first)))?;
    let chosen = compressed[first].1;
    let cluster_bytes = block_size << chosen.log_cluster_size;
    // Files that tell something: every compressed file, and uncompressed files of at
    // least one cluster (smaller ones are stored plainly whatever the rule).
    let evidence: Vec<(Option<&[u8]>, bool)> = files
        .iter()
        .filter(|f| f.stored.is_some() || f.size >= cluster_bytes)
        .map(|f| (f.ext.as_deref(), f.stored.is_some()))
        .collect();
    let exts = |want: bool| -> BTreeSet<Vec<u8>> {
        evidence
            .iter()
            .filter(|(e, c)| *c == want && e.is_some())
            .filter_map(|(e, _)| e.map(<[u8]>::to_vec))
            .filter(|e| std::str::from_utf8(e).is_ok() && !e.is_empty())
            .collect()
    };
    let mismatches = |rule: &Rule| evidence.iter().filter(|(e, c)| rule.compresses(*e) != *c).count() as u64;
    let only = exts(true);
    // An empty `--compress-extension` list means every file: no "only" rule then.
    let rules = [
        Some(Rule::All),
        (!only.is_empty()).then_some(Rule::Only(only)),
        Some(Rule::AllBut(exts(false))),
    ];
    let (rule, mismatched) = rules
        .into_iter()
        .flatten()
        .map(|r| {
            let m = mismatches(&r);
            (r, m)
        })
        .min_by_key(|(_, m)| *m)?;
    let text =
        |set: BTreeSet<Vec<u8>>| -> Vec<String> { set.into_iter().filter_map(|e| String::from_utf8(e).ok()).collect() };
    let (extensions, nocompress_extensions) = match rule {
        Rule::All => (Vec::new(), Vec::new()),
        Rule::Only(l) => (text(l), Vec::new()),
        Rule::AllBut(l) => (Vec::new(), text(l)),
    };
    Some(LikeCompression {
        algorithm: chosen.spec(),
        log_cluster_size: chosen.log_cluster_size,
        chksum: chosen.checksum,
        release_blocks: chosen.released,
        extensions,
        nocompress_extensions,
        compressed_files: compressed.len() as u64,
        mismatched_files: mismatched,
        other_settings_files: compressed.len() as u64 - most,
    })
}

impl Like {
    /// The settings of a repack of `fs`, the image at `path` (read to tell a sparse
    /// image from a raw one). Walks the tree only when the volume has the compression
    /// feature.
    pub fn of(fs: &Fs, path: &Path) -> anyhow::Result<Like> {
        let sb = fs.superblock();
        let features = sb.feature_names();
        let encoding_flags = features.iter().any(|f| f == "casefold").then_some(sb.s_encoding_flags);
        let block_size = sb.block_size() as u32;
        let original_size = sb.block_count * block_size as u64;
        let ro = features.iter().any(|f| f == "ro");
        let compress = if features.iter().any(|f| f == "compression") {
            infer_compression(&regular_files(fs)?, block_size as u64)
        } else {
            None
        };
        Ok(Like {
            features,
            block_size,
            label: sb.volume_name.clone(),
            segs_per_sec: sb.segs_per_sec,
            size: (!ro).then_some(original_size),
            original_size,
            sparse: is_sparse(path),
            compress,
            encoding_flags,
        })
    }

    /// Opens the image at `path` (raw or sparse) and reads its settings.
    pub fn of_image(path: &Path) -> anyhow::Result<Like> {
        let fs = crate::open_fs(path, &[]).with_context(|| format!("--like {}", path.display()))?;
        Like::of(&fs, path)
    }

    /// The `uf2fs mkfs` options that make a repack with these settings (after
    /// `IMAGE SOURCE`).
    pub fn args(&self) -> Vec<String> {
        let mut a = Vec::new();
        if !self.features.is_empty() {
            a.extend(["-O".to_string(), self.features.join(",")]);
        }
        a.extend(["-b".to_string(), self.block_size.to_string()]);
        if !self.label.is_empty() {
            a.extend(["-l".to_string(), self.label.clone()]);
        }
        if self.segs_per_sec != 1 {
            a.extend(["-s".to_string(), self.segs_per_sec.to_string()]);
        }
        if let Some(flags) = self.encoding_flags {
            a.extend(["-C".to_string(), crate::mkfs::casefold_arg(flags)]);
        }
        if let Some(size) = self.size {
            a.extend(["--size".to_string(), size.to_string()]);
        }
        if self.sparse {
            a.push("--sparse".to_string());
        }
        if let Some(c) = &self.compress {
            a.extend(["--compress".to_string(), c.algorithm.clone()]);
            a.extend(["--compress-log-size".to_string(), c.log_cluster_size.to_string()]);
            for e in &c.extensions {
                a.extend(["--compress-extension".to_string(), e.clone()]);
            }
            for e in &c.nocompress_extensions {
                a.extend(["--nocompress-extension".to_string(), e.clone()]);
            }
            if c.chksum {
                a.push("--compress-chksum".to_string());
            }
            if c.release_blocks {
                a.push("--release-blocks".to_string());
            }
        }
        a
    }

    /// The whole command line, shell-quoted, with `IMAGE SOURCE` as placeholders.
    pub fn command_line(&self) -> String {
        let mut line = String::from("uf2fs mkfs IMAGE SOURCE");
        for a in self.args() {
            line.push(' ');
            line.push_str(&shell_quote(&a));
        }
        line
    }
}

/// `word` as a POSIX shell word (quoted only when it needs to be).
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.,:/=+@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(ext: Option<&str>, size: u64, compressed: bool) -> FileSeen {
        FileSeen {
            ext: ext.map(|e| e.as_bytes().to_vec()),
            size,
            stored: compressed.then_some(StoredCompression {
                algorithm: 1,
                level: 0,
                log_cluster_size: 2,
                checksum: false,
                released: true,
            }),
        }
    }

    #[test]
    fn the_rule_that_fits_best_is_chosen() {
        // Everything of a cluster or more compressed; small files are no evidence.
        let all = [
            file(Some("so"), 20_000, true),
            file(None, 30_000, true),
            file(Some("apk"), 100, false),
        ];
        let c = infer_compression(&all, 4096).unwrap();
        assert_eq!(
            (c.extensions.len(), c.nocompress_extensions.len(), c.mismatched_files),
            (0, 0, 0)
        );
        assert_eq!((c.algorithm.as_str(), c.release_blocks), ("lz4", true));
        // sload -i so.
        let only = [
            file(Some("so"), 20_000, true),
            file(Some("so"), 5_000, true),
            file(Some("apk"), 90_000, false),
            file(None, 90_000, false),
        ];
        let c = infer_compression(&only, 4096).unwrap();
        assert_eq!((c.extensions.clone(), c.mismatched_files), (vec!["so".to_string()], 0));
        // sload -x apk -x odex.
        let but = [
            file(Some("so"), 20_000, true),
            file(None, 20_000, true),
            file(Some("apk"), 90_000, false),
            file(Some("odex"), 90_000, false),
        ];
        let c = infer_compression(&but, 4096).unwrap();
        assert_eq!(c.nocompress_extensions, ["apk", "odex"]);
        assert_eq!(c.mismatched_files, 0);
        // No list says it: the closest one, and the count of files it gets wrong.
        let mixed = [
            file(Some("so"), 20_000, true),
            file(Some("so"), 20_000, false),
            file(Some("so"), 20_000, true),
        ];
        assert_eq!(infer_compression(&mixed, 4096).unwrap().mismatched_files, 1);
        assert!(infer_compression(&[file(Some("so"), 20_000, false)], 4096).is_none());
    }

    #[test]
    fn words_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("extra_attr,ro"), "extra_attr,ro");
        assert_eq!(shell_quote(""), "''");
    }
}
