//! Host-side metadata of extracted files: owner, xattrs, mode, times, and special files.
//!
//! Order matters: `chown` clears set-ID bits and file capabilities, so owner goes
//! first, then xattrs, then the mode, and the times last (everything else changes them).

use super::dest::clear_slot;
use crate::errors::print_warning;
use crate::names::{escape_bytes, escape_os};
use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::AT_FDCWD;
use nix::sys::stat::{makedev, mknod, utimensat, Mode, SFlag, UtimensatFlags};
use nix::sys::time::TimeSpec;
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, Permissions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use uf2fs_core::{FileKind, Fs, Ino, Stat, Timestamp};

/// Applies metadata and remembers what it had to skip, so each problem is reported once.
pub struct MetadataWriter {
    /// Running as root: owners are kept and device nodes created.
    is_root: bool,
    /// xattr namespaces (`user`, `trusted`, ...) already warned about.
    warned_namespaces: HashSet<Vec<u8>>,
    /// Device nodes not created, with the first one's path.
    skipped_nodes: u64,
    first_skipped: Option<String>,
    /// Warnings held back until the extraction succeeds (a failed run prints only its
    /// error line), with the xattr namespace each is about.
    warnings: Vec<(Vec<u8>, String)>,
}

impl MetadataWriter {
    /// A writer for the current process's privileges.
    pub fn new() -> MetadataWriter {
        MetadataWriter {
            is_root: nix::unistd::geteuid().is_root(),
            warned_namespaces: HashSet::new(),
            skipped_nodes: 0,
            first_skipped: None,
            warnings: Vec::new(),
        }
    }

    /// Gives `dest` the owner (as root), xattrs, permission bits and times of `stat`.
    pub fn apply(&mut self, fs: &Fs, ino: Ino, stat: &Stat, dest: &Path) -> anyhow::Result<()> {
        if self.is_root {
            std::os::unix::fs::lchown(dest, Some(stat.uid), Some(stat.gid))
                .with_context(|| format!("changing owner of {}", escape_os(dest)))?;
        }
        for xattr in fs.list_xattrs(ino)? {
            if let Err(err) = xattr::set(dest, OsStr::from_bytes(&xattr.name), &xattr.value) {
                self.xattr_failed(&xattr.name, dest, err)?;
            }
        }
        // Linux has no symlink permissions; chmod would follow the link.
        if stat.kind != FileKind::Symlink {
            fs::set_permissions(dest, Permissions::from_mode(stat.mode & 0o7777))
                .with_context(|| format!("setting mode of {}", escape_os(dest)))?;
        }
        set_times(dest, stat.atime, stat.mtime).with_context(|| format!("setting times of {}", escape_os(dest)))
    }

    /// [`MetadataWriter::apply`] for a regular file through its open descriptor
    /// (`fchown`, `fsetxattr`, `fchmod`, `futimens`): the same order and rules, without
    /// a path lookup per call.
    pub fn apply_file(&mut self, fs: &Fs, ino: Ino, stat: &Stat, file: &fs::File, dest: &Path) -> anyhow::Result<()> {
        use std::os::fd::AsFd;
        use xattr::FileExt;
        if self.is_root {
            std::os::unix::fs::fchown(file, Some(stat.uid), Some(stat.gid))
                .with_context(|| format!("changing owner of {}", escape_os(dest)))?;
        }
        for x in fs.list_xattrs(ino)? {
            if let Err(err) = file.set_xattr(OsStr::from_bytes(&x.name), &x.value) {
                self.xattr_failed(&x.name, dest, err)?;
            }
        }
        file.set_permissions(Permissions::from_mode(stat.mode & 0o7777))
            .with_context(|| format!("setting mode of {}", escape_os(dest)))?;
        nix::sys::stat::futimens(file.as_fd(), &timespec(stat.atime), &timespec(stat.mtime))
            .map_err(io::Error::from)
            .with_context(|| format!("setting times of {}", escape_os(dest)))
    }

    /// A failed xattr: refused by the host → one warning per namespace; else an error.
    fn xattr_failed(&mut self, name: &[u8], dest: &Path, err: io::Error) -> anyhow::Result<()> {
        let refused = matches!(err.raw_os_error(), Some(libc::EPERM | libc::ENOTSUP | libc::EACCES));
        if !refused {
            return Err(err).with_context(|| format!("setting xattr {} on {}", escape_bytes(name), escape_os(dest)));
        }
        let namespace = name.split(|&b| b == b'.').next().unwrap_or(name).to_vec();
        if self.warned_namespaces.insert(namespace.clone()) {
            let warning = format!(
                "cannot set {}.* xattrs here (first: {} on {}: {err}); continuing without them",
                escape_bytes(&namespace),
                escape_bytes(name),
                escape_os(dest)
            );
            self.warnings.push((namespace, warning));
        }
        Ok(())
    }

    /// Creates a device node, fifo or socket. Device nodes need root: without it they are
    /// counted, reported once at the end, and skipped. Returns whether `dest` was created.
    pub fn make_node(&mut self, stat: &Stat, dest: &Path, force: bool) -> anyhow::Result<bool> {
        let (kind, dev) = match stat.kind {
            FileKind::CharDev => (SFlag::S_IFCHR, device_number(stat)),
            FileKind::BlockDev => (SFlag::S_IFBLK, device_number(stat)),
            FileKind::Fifo => (SFlag::S_IFIFO, 0),
            FileKind::Socket => (SFlag::S_IFSOCK, 0),
            FileKind::File | FileKind::Dir | FileKind::Symlink => return Ok(false),
        };
        let is_device = matches!(stat.kind, FileKind::CharDev | FileKind::BlockDev);
        if is_device && !self.is_root {
            self.skip_node(dest);
            return Ok(false);
        }
        clear_slot(dest, force)?;
        match mknod(dest, kind, Mode::from_bits_truncate(0o600), dev) {
            Ok(()) => Ok(true),
            // Root without CAP_MKNOD (e.g. in a container).
            Err(Errno::EPERM) if is_device => {
                self.skip_node(dest);
                Ok(false)
            }
            Err(errno) => Err(io::Error::from(errno)).with_context(|| format!("creating {}", escape_os(dest))),
        }
    }

    /// Takes in what another writer (a worker thread's) gathered: its warnings for
    /// namespaces not warned about yet, and its skipped nodes.
    pub fn absorb(&mut self, other: MetadataWriter) {
        for (namespace, warning) in other.warnings {
            if self.warned_namespaces.insert(namespace.clone()) {
                self.warnings.push((namespace, warning));
            }
        }
        self.skipped_nodes += other.skipped_nodes;
        if self.first_skipped.is_none() {
            self.first_skipped = other.first_skipped;
        }
    }

    fn skip_node(&mut self, dest: &Path) {
        self.skipped_nodes += 1;
        if self.first_skipped.is_none() {
            self.first_skipped = Some(escape_os(dest));
        }
    }

    /// Prints the warnings gathered: one per refused xattr namespace, and one summing up
    /// the device nodes that were not created.
    pub fn print_warnings(&self) {
        for (_, warning) in &self.warnings {
            print_warning(warning);
        }
        if let Some(first) = &self.first_skipped {
            let count = self.skipped_nodes;
            let noun = if count == 1 { "device node" } else { "device nodes" };
            print_warning(&format!(
                "skipped {count} {noun} (creating them needs root), first: {first}"
            ));
        }
    }
}

/// The host `dev_t` for a device inode.
fn device_number(stat: &Stat) -> u64 {
    makedev(u64::from(stat.rdev.0), u64::from(stat.rdev.1))
}

/// Sets access and modification times with nanoseconds, on the symlink itself if `path`
/// is one.
fn set_times(path: &Path, atime: Timestamp, mtime: Timestamp) -> io::Result<()> {
    utimensat(
        AT_FDCWD,
        path,
        &timespec(atime),
        &timespec(mtime),
        UtimensatFlags::NoFollowSymlink,
    )
    .map_err(io::Error::from)
}

/// A `timespec` for a timestamp; an out-of-range nanosecond field from a corrupt image
/// is clamped rather than rejected.
fn timespec(t: Timestamp) -> TimeSpec {
    TimeSpec::new(t.secs, i64::from(t.nsecs.min(999_999_999)))
}
