//! The command-line options of `uf2fs mkfs IMAGE SOURCE` (see docs/packer.md for how
//! each maps to sload.f2fs's and mkf2fsuserimg.sh's).

use clap::Args;
use std::path::PathBuf;

/// `uf2fs mkfs IMAGE SOURCE` options (named after sload.f2fs's and
/// mkf2fsuserimg.sh's; docs/packer.md maps each).
#[derive(Debug, Clone, Default, Args)]
pub struct PackArgs {
    /// fs_config text file: owners, modes and capabilities by path (sload -C).
    #[arg(long, value_name = "FILE", requires = "source")]
    pub fs_config: Option<PathBuf>,
    /// Paths missing from the fs_config file keep the tree's mode (and owner with
    /// --preserve-owner) instead of being an error.
    #[arg(long, requires = "fs_config")]
    pub fs_config_default: bool,
    /// SELinux file_contexts (text form) to label every entry (sload -s).
    #[arg(long, value_name = "FILE", requires = "source")]
    pub file_contexts: Option<PathBuf>,
    /// Where the volume is mounted, for fs_config and file_contexts lookups (sload -t).
    #[arg(long, value_name = "PATH", default_value = "/", requires = "source")]
    pub mount_point: String,
    /// As sload: the root directory is not looked up in fs_config (mode 0755, owner 0:0
    /// or the tree's); by default it gets its entry like every path.
    #[arg(long, requires = "source")]
    pub sload_root: bool,
    /// Every time of every inode, in seconds since the epoch (sload -T); default:
    /// $SOURCE_DATE_EPOCH, else each entry's mtime.
    #[arg(
        short = 'T',
        long,
        value_name = "SECS",
        allow_negative_numbers = true,
        requires = "source"
    )]
    pub timestamp: Option<i64>,
    /// Owners from the tree (sload -P); default 0:0 before fs_config.
    #[arg(long, requires = "source")]
    pub preserve_owner: bool,
    /// Copy the tree's extended attributes.
    #[arg(long, requires = "source")]
    pub xattrs: bool,
    /// Compress regular files: lz4, lz4hc or lz4hc:LEVEL, lzo, lzo-rle, zstd or zstd:LEVEL (sload
    /// -c -a). Sets the compression and extra_attr features.
    #[arg(long, value_name = "ALGO", requires = "source")]
    pub compress: Option<String>,
    /// log2 of the blocks per cluster, 2 to 8 (sload -L); default 2. Needs --compress
    /// (or --like of an image with compressed files).
    #[arg(long, value_name = "N")]
    pub compress_log_size: Option<u8>,
    /// Only compress files with this extension (repeatable; sload -i).
    #[arg(long, value_name = "EXT", conflicts_with = "nocompress_extension")]
    pub compress_extension: Vec<String>,
    /// Compress every file but those with this extension (repeatable; sload -x).
    #[arg(long, value_name = "EXT")]
    pub nocompress_extension: Vec<String>,
    /// Checksums in compressed clusters (compress_chksum).
    #[arg(long)]
    pub compress_chksum: bool,
    /// Compressed files keep no reserved blocks, for read-only images (sload -r).
    #[arg(long)]
    pub release_blocks: bool,
    /// Volume UUID (default: derived from the tree and options).
    #[arg(long, value_name = "UUID", requires = "source")]
    pub uuid: Option<String>,
    /// Write an Android sparse image (sload/mkf2fsuserimg.sh -S): free space as
    /// "don't care" chunks; simg2img gives the raw image back.
    #[arg(short = 'S', long, requires = "source")]
    pub sparse: bool,
    /// Make the volume like the F2FS image IMAGE (raw or sparse), the partition being
    /// repacked: its features, block size, layout (ro), label, size (an ro image
    /// shrunk to fit, as AOSP builds them), sparse output and compression (algorithm,
    /// cluster size, checksums, released blocks, which files). Options given beside
    /// it win. `uf2fs info IMAGE` shows the options it stands for.
    #[arg(long, value_name = "IMAGE")]
    pub like: Option<PathBuf>,
    /// Shrink the image to fit the tree even where --like would keep the original's
    /// size.
    #[arg(long, conflicts_with = "size", requires = "source")]
    pub shrink_to_fit: bool,
    /// Whether `--size` was filled in by `--like` (for the error when the tree does
    /// not fit).
    #[arg(skip)]
    pub size_from_like: bool,
    /// Percent added to the shrink-to-fit size.
    #[arg(long, value_name = "PCT", default_value_t = 0, requires = "source")]
    pub margin: u64,
}
