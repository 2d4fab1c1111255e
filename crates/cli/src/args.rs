//! The command line, as clap parses it.

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Read F2FS images without the kernel: inspect, list, read, extract and mount them; make
/// new ones.
#[derive(Debug, Parser)]
#[command(name = "uf2fs", version, arg_required_else_help = false, subcommand_required = true)]
pub struct Cli {
    /// Extra devices given before the subcommand.
    #[command(flatten)]
    pub devices: DeviceArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// All `--device` paths in command-line order, before and after the subcommand name.
    ///
    /// (clap's `global` arguments keep only the subcommand's occurrences when both
    /// levels have some, so each level collects its own and they are joined here.)
    pub fn all_devices(&self) -> Vec<PathBuf> {
        let after: &[PathBuf] = match &self.command {
            Command::Info { devices, .. }
            | Command::Ls { devices, .. }
            | Command::Cat { devices, .. }
            | Command::Extract { devices, .. }
            | Command::Mount { devices, .. } => &devices.devices,
            Command::Mkfs { .. } | Command::Bench { .. } | Command::Status { .. } => &[],
        };
        self.devices.devices.iter().chain(after).cloned().collect()
    }
}

/// `--device PATH`, accepted before and after the subcommand name.
#[derive(Debug, Clone, Default, Args)]
pub struct DeviceArgs {
    /// Extra device of a multi-device F2FS, in superblock order (repeat for each).
    #[arg(long = "device", value_name = "PATH")]
    pub devices: Vec<PathBuf>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what a running uf2fs mount wrote and what its garbage collection did
    /// (user and device blocks by kind, WAF, GC calls, victims, blocks moved).
    Status {
        /// Print one JSON object instead of `key: value` lines (fields: docs/json.md).
        #[arg(long)]
        json: bool,
        /// Mountpoint of a uf2fs mount.
        mountpoint: PathBuf,
    },
    /// Print the superblock, checkpoint and geometry summary of an image.
    Info {
        /// Print one JSON object instead of `key: value` lines (fields: docs/json.md).
        #[arg(long)]
        json: bool,
        /// Image file or block device.
        image: PathBuf,
        /// Extra devices.
        #[command(flatten)]
        devices: DeviceArgs,
    },
    /// List a directory (or show one file), sorted by name.
    Ls {
        /// Long listing: mode, links, uid, gid, size, mtime (UTC), name.
        #[arg(short = 'l')]
        long: bool,
        /// List subdirectories recursively.
        #[arg(short = 'R')]
        recursive: bool,
        /// Also list "." and ".." (other names starting with "." are always listed).
        #[arg(short = 'a')]
        all: bool,
        /// Print one JSON object, every entry with its inode's attributes (as -l
        /// shows them, and more; fields: docs/json.md).
        #[arg(long)]
        json: bool,
        /// Image file or block device.
        image: PathBuf,
        /// Extra devices.
        #[command(flatten)]
        devices: DeviceArgs,
        /// Path inside the image (default: the root).
        path: Option<OsString>,
    },
    /// Write a file's contents to stdout (symlinks are followed).
    Cat {
        /// Image file or block device.
        image: PathBuf,
        /// Extra devices.
        #[command(flatten)]
        devices: DeviceArgs,
        /// Path of the file inside the image.
        path: OsString,
    },
    /// Copy a file or a directory tree out of the image.
    ///
    /// Keeps data (holes included), permission bits, access and modification times,
    /// symlinks, hard links and xattrs; owners and device nodes too when run as root.
    /// Existing files are never overwritten without --force.
    #[command(override_usage = "uf2fs extract [OPTIONS] <IMAGE> [PATH] <DEST>")]
    Extract {
        /// Replace existing non-directories at destination paths.
        #[arg(long)]
        force: bool,
        /// Also write the tree's owners, modes and capabilities (security.capability)
        /// as an Android fs_config file (`PATH UID GID MODE capabilities=0x...`), the
        /// way `sload.f2fs -C` and AOSP's image tools read it.
        #[arg(long, value_name = "FILE")]
        fs_config: Option<PathBuf>,
        /// Also write the tree's SELinux labels (security.selinux) as an Android
        /// file_contexts file (`/PATH-REGEX<TAB>LABEL`), as `sload.f2fs -s` reads it.
        #[arg(long, value_name = "FILE")]
        file_contexts: Option<PathBuf>,
        /// Where the extracted tree is mounted on the device (`sload.f2fs -t`): the
        /// prefix of every path in --fs-config (without its leading `/`) and
        /// --file-contexts. Default `/`.
        #[arg(long, value_name = "PATH")]
        mount_point: Option<OsString>,
        /// Image file or block device.
        image: PathBuf,
        /// Extra devices.
        #[command(flatten)]
        devices: DeviceArgs,
        /// What to copy (an in-image path, default: the root), then where to put it.
        /// A directory's contents go inside DEST, which is created if missing; a single
        /// file becomes DEST, or DEST/NAME when DEST is an existing directory.
        #[arg(required = true, num_args = 1..=2, value_name = "[PATH] DEST")]
        paths: Vec<OsString>,
    },
    /// Mount the image with FUSE, read-write unless -o ro.
    ///
    /// A read-write mount writes a checkpoint every cp_interval seconds while something
    /// changed, and the final one when unmounted (fusermount3 -u MOUNTPOINT). fsync makes
    /// a file durable, `sync MOUNTPOINT` (an fsync of the root directory) everything at
    /// once; `sync -f` and a bare `sync` do not reach FUSE file systems.
    Mount {
        /// Comma-separated mount options (repeatable); unknown ones are refused.
        ///
        /// Generic: ro, rw, allow_other, fsname=NAME, dev, nodev, suid, nosuid, exec,
        /// noexec; relatime (default) or atime, strictatime, noatime, nodiratime,
        /// diratime (when reads and listings update access times, as Linux);
        /// default_permissions, async and lazytime are accepted as what uf2fs always
        /// does (sync and dirsync are refused).
        ///
        /// F2FS (the kernel's names and values): active_logs=2|4|6 (logs written to,
        /// default 6), background_gc=on|off|sync (the background cleaner: on by
        /// default, it cleans one section at a time while the volume is idle; sync
        /// cleans in the foreground way), atgc (age-threshold victim selection),
        /// mode=adaptive|lfs (uf2fs allocates LFS-only in both),
        /// checkpoint_merge|nocheckpoint_merge (concurrent fsyncs share one checkpoint;
        /// default on), fsync_mode=posix|strict|nobarrier (posix, the default: fsync
        /// of a regular file writes its data and nodes for roll-forward recovery
        /// without a checkpoint; strict: a checkpoint per fsync; nobarrier: posix
        /// without the device flush), cp_interval=SECS (periodic checkpoints, default 60, 0 = off; the
        /// kernel's sysfs knob), compress_algorithm=lz4|lz4:LEVEL|lzo|lzo-rle|zstd|zstd:LEVEL
        /// (default lz4), compress_log_size=2..8 (blocks per cluster as a power of
        /// two, default 2), compress_chksum, compress_mode=fs|user,
        /// compress_extension=EXT and nocompress_extension=EXT (repeatable; `*` for
        /// every file) for compressed files (a volume made with -O compression).
        /// uf2fs's own: gc_policy=greedy|cost-benefit|atgc|
        /// prefer-data-v1|prefer-data-v2|weighted:D:N|default (how GC picks victims;
        /// default greedy, as Linux).
        #[arg(short = 'o', value_name = "OPTIONS")]
        options: Vec<String>,
        /// Stay in the foreground; Ctrl-C or SIGTERM unmounts.
        #[arg(short = 'f')]
        foreground: bool,
        /// Image file or block device.
        image: PathBuf,
        /// Extra devices.
        #[command(flatten)]
        devices: DeviceArgs,
        /// Directory to mount on.
        mountpoint: PathBuf,
    },
    /// Make an F2FS image (a sparse file with --size), or format an existing file or
    /// block device, with mkfs.f2fs's layout.
    ///
    /// Refuses to replace an existing file (with --size) or to overwrite a file system
    /// without --force.
    Mkfs {
        /// Size of the volume: bytes, or a number with K, M, G or T (powers of 1024).
        /// Creates IMAGE as a sparse file of that size; without it, the whole existing
        /// file or device is used.
        #[arg(long, value_name = "SIZE", value_parser = crate::mkfs::parse_size)]
        size: Option<u64>,
        /// Segments per section (the unit of garbage collection).
        #[arg(short = 's', long, value_name = "N")]
        segs_per_sec: Option<u32>,
        /// Overprovision ratio in percent (default: the one leaving the most space).
        #[arg(short = 'o', long, value_name = "PCT")]
        overprovision: Option<f64>,
        /// Lay the volume out for a host-managed zoned device with zones of SIZE (a
        /// multiple of 2 MiB): one section per zone, the `blkzoned` feature set. uf2fs
        /// then writes the main area as such a device takes it (each zone sequentially,
        /// reset when its section is freed), on any file or device.
        #[arg(long, value_name = "SIZE", value_parser = crate::mkfs::parse_size, conflicts_with = "segs_per_sec")]
        zoned: Option<u64>,
        /// Features, comma-separated (repeatable): extra_attr, inode_checksum,
        /// flexible_inline_xattr, inode_crtime, sb_checksum, lost_found, compression,
        /// casefold, quota, project_quota, ro, encrypt, verity.
        #[arg(short = 'O', value_name = "FEATURES")]
        features: Vec<String>,
        /// Casefolding with this encoding and flags, as mkfs.f2fs -C: `utf8` or
        /// `utf8:strict` (names that cannot be folded are refused). Sets the casefold
        /// feature.
        #[arg(short = 'C', long = "casefold", value_name = "ENCODING[:FLAGS]")]
        casefold: Option<String>,
        /// Volume label.
        #[arg(short = 'l', long, value_name = "LABEL")]
        label: Option<String>,
        /// Block size in bytes, as mkfs.f2fs -b: 4096, or 16384 for Android's 16 KiB-page
        /// devices (one summary block per segment, as mkfs.f2fs -b 16384 makes it; add
        /// -O packed_ssa for Linux 6.19's layout of four 4 KiB summaries to a block).
        #[arg(short = 'b', long, value_name = "BYTES")]
        block_size: Option<u32>,
        /// Replace an existing file, or overwrite an existing file system.
        #[arg(short = 'f', long)]
        force: bool,
        /// Print nothing on success.
        #[arg(short = 'q', long)]
        quiet: bool,
        /// Image file or block device.
        image: PathBuf,
        /// Build the volume from this directory tree (every entry, mode, owner, time
        /// and link; see docs/packer.md). Without --size the image is shrunk to fit.
        source: Option<PathBuf>,
        /// What to build from SOURCE (Android metadata, compression, reproducibility).
        #[command(flatten)]
        pack: crate::pack::PackArgs,
    },
    /// Benchmarks run in memory, without FUSE or root: write amplification of GC policies
    /// (`bench waf`), front-I/O latency under GC pacing (`bench latency`), parallel
    /// writeback (`bench writeback`), and `bench merge` of a sweep's shards.
    Bench {
        /// Which benchmark.
        #[command(subcommand)]
        what: crate::bench::BenchCommand,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn extract_takes_one_or_two_paths() {
        let cli = Cli::try_parse_from(["uf2fs", "extract", "img", "out"]).unwrap();
        assert!(matches!(cli.command, Command::Extract { ref paths, .. } if paths.len() == 1));
        let cli = Cli::try_parse_from(["uf2fs", "extract", "--force", "img", "/a", "out"]).unwrap();
        assert!(matches!(cli.command, Command::Extract { force: true, ref paths, .. } if paths.len() == 2));
        assert!(Cli::try_parse_from(["uf2fs", "extract", "img", "a", "b", "c"]).is_err());
        assert!(Cli::try_parse_from(["uf2fs", "extract", "img"]).is_err());
    }

    #[test]
    fn device_is_global_and_repeatable() {
        let cli = Cli::try_parse_from(["uf2fs", "--device", "d1", "ls", "-la", "img", "--device", "d2"]).unwrap();
        assert_eq!(cli.all_devices(), [PathBuf::from("d1"), PathBuf::from("d2")]);
        assert!(matches!(
            cli.command,
            Command::Ls {
                long: true,
                all: true,
                recursive: false,
                ..
            }
        ));
    }

    #[test]
    fn mount_options_repeat() {
        let cli = Cli::try_parse_from(["uf2fs", "mount", "-o", "ro", "-o", "allow_other", "-f", "i", "m"]).unwrap();
        assert!(matches!(cli.command, Command::Mount { ref options, foreground: true, .. } if options.len() == 2));
    }
}
