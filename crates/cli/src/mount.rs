//! `uf2fs mount`: serve the image through FUSE.
//!
//! Mounts are read-write unless `-o ro` is given; a read-write mount writes a checkpoint
//! every `cp_interval` seconds while something changed (60 by default, the kernel's),
//! and the unmount checkpoint when the session ends, so the image is left clean. The
//! F2FS options of `-o` ([`crate::mount_options`]) become the core's settings.
//!
//! With `-f` the process mounts and serves in the foreground until unmounted; SIGINT,
//! SIGTERM or SIGHUP unmount it cleanly (the kernel ends the session, then the
//! checkpoint is written before the process exits). Without `-f` the command re-executes itself
//! with `-f` in the background and returns once the mount is visible.

mod background;
mod signals;

use crate::errors::UsageError;
use crate::mount_options::{parse_mount_options, ParsedMountOptions};
use crate::names::escape_os;
use anyhow::{bail, Context};
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Everything `uf2fs mount` was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountRequest {
    /// The `-o` groups, unparsed (forwarded as they are to the background process).
    pub options: Vec<String>,
    /// `-f`: stay in the foreground.
    pub foreground: bool,
    /// Image file or block device.
    pub image: PathBuf,
    /// Where to mount.
    pub mountpoint: PathBuf,
    /// Extra devices of a multi-device F2FS.
    pub devices: Vec<PathBuf>,
}

/// Validates the options and the mountpoint, then mounts in the foreground or background.
pub fn run(request: &MountRequest) -> anyhow::Result<()> {
    let options = parse_mount_options(&request.options).map_err(UsageError)?;
    let meta = std::fs::metadata(&request.mountpoint)
        .with_context(|| format!("mountpoint {}", escape_os(&request.mountpoint)))?;
    if !meta.is_dir() {
        bail!("mountpoint {} is not a directory", escape_os(&request.mountpoint));
    }
    if request.foreground {
        serve(request, &options)
    } else {
        background::start(request)
    }
}

/// How long a mount waits for another uf2fs process to let go of the image: the one
/// just unmounted there writes its unmount checkpoint after `umount` returns. Below the
/// background parent's wait for the mount to appear.
const IMAGE_LOCK_WAIT: Duration = Duration::from_secs(8);

/// Takes the image's lock for this mount's whole life (exclusive for a read-write
/// mount, shared for a read-only one), waiting up to [`IMAGE_LOCK_WAIT`] for another
/// uf2fs mount to release it. Two processes writing one image would corrupt it, and a
/// remount right after `umount` would otherwise read the image before the previous
/// process wrote its last checkpoint (fstests' cycle mounts do exactly that).
fn lock_image(image: &Path, read_only: bool) -> anyhow::Result<Flock<std::fs::File>> {
    let shown = escape_os(image);
    let mut file = std::fs::File::open(image).with_context(|| format!("opening {shown}"))?;
    let how = if read_only {
        FlockArg::LockSharedNonblock
    } else {
        FlockArg::LockExclusiveNonblock
    };
    let deadline = Instant::now() + IMAGE_LOCK_WAIT;
    loop {
        match Flock::lock(file, how) {
            Ok(lock) => return Ok(lock),
            Err((f, Errno::EWOULDBLOCK)) if Instant::now() < deadline => {
                file = f;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err((_, Errno::EWOULDBLOCK)) => bail!(
                "{shown} is in use by another uf2fs process (mounted elsewhere, or still \
                 writing its last checkpoint after {} s)",
                IMAGE_LOCK_WAIT.as_secs()
            ),
            Err((_, errno)) => bail!("locking {shown}: {errno}"),
        }
    }
}

/// Opens the image, then mounts and serves until unmounted.
fn serve(request: &MountRequest, options: &ParsedMountOptions) -> anyhow::Result<()> {
    // Block the termination signals before any thread exists, so every thread inherits
    // the mask and only the signal thread ever sees them.
    let blocked = signals::block_termination_signals()?;
    // Held until this function returns, after the unmount checkpoint.
    let _lock = lock_image(&request.image, options.read_only)?;
    // Open first: a bad image fails here with the core's message, before any mount.
    let fs = if options.read_only {
        crate::open_fs(&request.image, &request.devices)?
    } else {
        let fs = open_rw(&request.image, &request.devices)?;
        fs.set_settings(options.settings)?;
        fs.set_compress_options(options.compress.clone())?;
        if let Some(policy) = options.gc_policy {
            fs.set_gc_policy(policy)?;
        }
        let policy = uf2fs_core::writeback::policy_by_name(&options.writeback_policy)
            .with_context(|| format!("writeback policy {}", options.writeback_policy))?;
        fs.set_writeback(options.writeback_contexts, policy)?;
        // Before the mount starts the background work: the paced cleaner's thread
        // runs only when this is not `off`.
        fs.set_gc_pacing(options.gc_pacing)?;
        fs
    };
    let mountpoint = std::fs::canonicalize(&request.mountpoint)
        .with_context(|| format!("mountpoint {}", escape_os(&request.mountpoint)))?;
    signals::unmount_on_signal(blocked, mountpoint.clone())?;
    let fuse_options = uf2fs_fuse::MountOptions {
        read_only: options.read_only,
        allow_other: options.allow_other,
        fsname: options.fsname.clone().unwrap_or_else(|| default_fsname(&request.image)),
        subtype: options.subtype.clone(),
        dev: options.dev,
        suid: options.suid,
        exec: options.exec,
        checkpoint_interval: options.cp_interval,
        atime: options.atime,
        dir_atime: options.dir_atime,
        writeback_cache: options.writeback_cache && !options.read_only,
    };
    uf2fs_fuse::mount(fs, &mountpoint, &fuse_options).with_context(|| format!("mounting on {}", escape_os(&mountpoint)))
}

/// Opens the image for writing: an image the core will not write fails with the core's
/// one-line reason and a hint to mount it read-only.
fn open_rw(image: &Path, devices: &[PathBuf]) -> anyhow::Result<uf2fs_core::Fs> {
    let more: Vec<&Path> = devices.iter().map(PathBuf::as_path).collect();
    let shown = escape_os(image);
    uf2fs_core::Fs::open_rw(image, &more).map_err(|err| {
        let reason = err.to_string();
        if reason.contains(&shown) {
            anyhow::anyhow!("{reason} (mount it read-only with -o ro)")
        } else {
            anyhow::anyhow!("{shown}: {reason} (mount it read-only with -o ro)")
        }
    })
}

/// The image's absolute path as the mount's source name, with the characters that FUSE
/// option strings cannot carry replaced.
fn default_fsname(image: &Path) -> String {
    let absolute = std::path::absolute(image).unwrap_or_else(|_| image.to_path_buf());
    String::from_utf8_lossy(absolute.as_os_str().as_bytes())
        .chars()
        .map(|c| {
            if c == ',' || c == '\\' || c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsname_is_made_safe() {
        assert_eq!(default_fsname(Path::new("/tmp/a,b c.img")), "/tmp/a_b_c.img");
        assert!(default_fsname(Path::new("rel.img")).starts_with('/'));
    }
}
