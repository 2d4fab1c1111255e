//! uf2fs-fuse: mount an F2FS image through FUSE, on top of [`uf2fs_core::Fs`].
//!
//! The adapter is thin: each FUSE request is one or two core calls and a reply. Core
//! errors become errnos in one place ([`uf2fs_core::Error::errno`]); node ids and F2FS
//! inode numbers meet in one place (the root is swapped with FUSE's root id 1). On a
//! read-only mount every modifying request is answered `EROFS`; on a read-write mount
//! (an `Fs` opened with [`uf2fs_core::Fs::open_rw`]) they call the core, and the end of
//! the session writes the unmount checkpoint ([`uf2fs_core::Fs::unmount`]). Extended
//! attributes are written as Linux F2FS writes them ([`uf2fs_core::Fs::set_xattr`]).
//!
//! A read-write mount also runs a periodic checkpoint thread
//! ([`MountOptions::checkpoint_interval`], 60 s by default as the kernel's
//! `cp_interval`), stopped before the unmount checkpoint. FUSE has no request by which
//! `syncfs(2)` (`sync -f`, `sync` without arguments) reaches the file system: the
//! kernel sends `FUSE_SYNCFS` only to fuseblk and virtiofs mounts, and fuser 0.18 does
//! not know the opcode. `fsync` of a directory (`sync MOUNTPOINT`) writes a
//! checkpoint, which makes everything durable; `fsync` of a file (`sync FILE`) makes
//! that file durable (roll-forward records, or a checkpoint: see
//! [`uf2fs_core::Fs::fsync`]).
//!
//! Sequential reads are the common case, so the connection asks for the largest READs the
//! kernel allows, worker threads serve requests in parallel, and (when run as root) the
//! mount's readahead window is raised from the kernel's 128 KiB to 1 MiB.
//!
//! A remount sends the daemon nothing, so a thread follows the mount's flags in the
//! mount table and applies a remount's `noatime`, `relatime`, `strictatime`,
//! `nodiratime` and `ro` to access times (the `remount` module).
//!
//! ```no_run
//! let fs = uf2fs_core::Fs::open("disk.img".as_ref(), &[])?;
//! let opts = uf2fs_fuse::MountOptions { read_only: true, ..Default::default() };
//! uf2fs_fuse::mount(fs, "/mnt/f2fs".as_ref(), &opts)?; // returns after `fusermount3 -u`
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod adapter;
mod atomic;
mod attr;
mod caller;
mod caller_fd;
mod dir_handles;
mod errors;
mod f2fs_ioctl;
mod inode_map;
mod ioctl;
mod kernel;
mod lookups;
pub mod mountinfo;
mod open_files;
mod read_buf;
mod readahead;
mod remount;
mod times;
mod xattr;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fuser::{Config, MountOption, SessionACL};

pub use uf2fs_core;

/// Name of the extended attribute of a mount's root directory that holds the mount's
/// status report (`uf2fs status`; see [`uf2fs_core::Fs::status_report`]). It is in no
/// xattr namespace, so it cannot clash with a stored attribute, and it is not listed.
pub const STATUS_XATTR: &str = "uf2fs.status";

/// Name of the extended attribute of a mount's root directory that holds the mount's
/// status as JSON ([`uf2fs_core::gc::Status`] serialised: `uf2fs status --json`, field
/// names in docs/json.md); like [`STATUS_XATTR`], in no namespace and not listed.
pub const STATUS_JSON_XATTR: &str = "uf2fs.status.json";

/// The kernel's default periodic checkpoint interval (sysfs `cp_interval`).
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

/// When reads and directory listings update access times (the mount's atime option).
/// FUSE leaves access times to the file system (the kernel marks its inodes
/// `S_NOATIME`), so the adapter updates them, under Linux's rules, on the reads and
/// listings that reach it (see the `atime` module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AtimeMode {
    /// `relatime` (Linux's default): when the access time is not after the last
    /// modification or change, or is a day old.
    #[default]
    Relative,
    /// `strictatime`: at every access.
    Strict,
    /// `noatime`: never.
    Never,
}

/// How to mount.
#[derive(Debug, Clone)]
pub struct MountOptions {
    /// Mount read-only. When false, `fs` must have been opened with
    /// [`uf2fs_core::Fs::open_rw`].
    pub read_only: bool,
    /// Let users other than the one mounting access the file system (`allow_other`).
    pub allow_other: bool,
    /// The source shown in `mount` and `/proc/mounts`; empty means "uf2fs".
    pub fsname: String,
    /// The type's subtype (`fuse.SUBTYPE` in `/proc/mounts`); `None`: plain `fuse`
    /// (what fstests' `FSTYP=fuse` expects). Default `f2fs`.
    pub subtype: Option<String>,
    /// `dev` (true) or `nodev` (false) for the kernel; `None` leaves its default
    /// (fusermount3 forces `nodev` for users other than root).
    pub dev: Option<bool>,
    /// `suid` (true) or `nosuid` (false), likewise (forced `nosuid` for users).
    pub suid: Option<bool>,
    /// `exec` (true) or `noexec` (false), likewise.
    pub exec: Option<bool>,
    /// Time between periodic checkpoints of a read-write mount: one is written when
    /// something changed and this much time passed since the last checkpoint (see
    /// [`uf2fs_core::Fs::checkpoint_if_due`]). `None`: no periodic checkpoints (fsync's,
    /// the core's own and the unmount's are still written). Default
    /// [`DEFAULT_CHECKPOINT_INTERVAL`].
    pub checkpoint_interval: Option<Duration>,
    /// When access times change (`relatime`, `strictatime`, `noatime`). Default
    /// [`AtimeMode::Relative`], as Linux.
    pub atime: AtimeMode,
    /// Whether directory listings update directories' access times too (`nodiratime`
    /// turns it off). Default true.
    pub dir_atime: bool,
    /// FUSE's writeback cache (`FUSE_WRITEBACK_CACHE`, when the kernel offers it): the
    /// kernel keeps written pages in its page cache and sends them later in large
    /// writes, keeping sizes and times itself meanwhile (as for a local file system),
    /// instead of sending every write(2) through at once. Faster for small writes; a
    /// write error (ENOSPC, EIO) then reaches the writer at fsync or close, as on a
    /// local file system, not at write(2): a WRITE the daemon fails is kept on the
    /// file's mapping by the kernel and returned by the next fsync(2), or by close(2)
    /// (whose FLUSH writes the file's dirty pages back first), never dropped
    /// (tests/writeback_errors.rs checks both through a mount). But the kernel keeps
    /// the size a refused write gave the file while it caches the inode, and F2FS's
    /// atomic-write ioctls do not wait for the kernel's dirty pages (docs/writeback.md),
    /// so it is off by default; ignored on a read-only mount.
    pub writeback_cache: bool,
}

impl Default for MountOptions {
    fn default() -> MountOptions {
        MountOptions {
            read_only: false,
            allow_other: false,
            fsname: String::new(),
            subtype: Some("f2fs".to_owned()),
            dev: None,
            suid: None,
            exec: None,
            checkpoint_interval: Some(DEFAULT_CHECKPOINT_INTERVAL),
            atime: AtimeMode::default(),
            dir_atime: true,
            writeback_cache: false,
        }
    }
}

/// Mount `fs` at `mountpoint` and serve it until the file system is unmounted
/// (`fusermount3 -u MOUNTPOINT` or `umount`). Blocks the calling thread meanwhile.
///
/// A read-write mount runs the periodic checkpoint thread meanwhile
/// ([`MountOptions::checkpoint_interval`]). When the session ends (the kernel dropped
/// the mount), the thread is stopped and `fs` is unmounted with
/// [`uf2fs_core::Fs::unmount`]: a read-write image is left clean (`CP_UMOUNT_FLAG`).
///
/// # Errors
/// Whatever mounting or the FUSE session reports (no `/dev/fuse`, mountpoint missing,
/// permission denied), or the core's error writing the unmount checkpoint (also after
/// a failed background checkpoint, which marks the file system failed).
pub fn mount(fs: uf2fs_core::Fs, mountpoint: &Path, opts: &MountOptions) -> io::Result<()> {
    // Resolved before mounting: afterwards the path leads into the not yet served mount.
    let resolved = std::fs::canonicalize(mountpoint);
    let config = session_config(opts);
    let fs = Arc::new(fs);
    let mut adapter = adapter::F2fsFuse::new(Arc::clone(&fs), !opts.read_only);
    adapter.atime = Arc::new(adapter::atime::LivePolicy::new(adapter::atime::Policy {
        mode: opts.atime,
        dirs: opts.dir_atime,
        read_only: false,
    }));
    let atime_rule = Arc::clone(&adapter.atime);
    adapter.writeback_cache = opts.writeback_cache && !opts.read_only;
    let notifier = adapter.notifier_slot();
    let device = adapter.device_slot();
    let session = fuser::Session::new(adapter, mountpoint, &config)?;
    let _ = notifier.set(session.notifier());
    let mut remounts = None;
    if let Ok(resolved) = resolved {
        // The mount is the newest one on its point now: its device, from the mount
        // table (a stat would wait for the session to serve it).
        use std::os::unix::ffi::OsStrExt;
        if let Some(mine) = std::fs::read(mountinfo::MOUNTINFO_PATH)
            .ok()
            .and_then(|table| remount::find(&table, resolved.as_os_str().as_bytes()))
        {
            let _ = device.set(mine.dev);
        }
        readahead::raise(&resolved);
        remounts = remount::watch(&resolved, atime_rule);
    }
    // The core's background work: periodic checkpoints, the cleaner, the paced
    // cleaner (when a pacer was chosen with `set_gc_pacing`), the flushers.
    let background = if opts.read_only {
        None
    } else {
        let work = uf2fs_core::background::BackgroundOptions {
            checkpoint_interval: opts.checkpoint_interval,
            gc: Some(uf2fs_core::BgTimes::default()),
            writeback_threads: true,
            paced_gc: true,
        };
        Some(uf2fs_core::background::Background::start(&fs, work)?)
    };
    let served = session.run();
    if let Some(watcher) = remounts {
        watcher.stop();
    }
    // No background checkpoint or cleaning may run beside the unmount checkpoint, and
    // the threads' references must be gone for the unmount to take the Fs.
    if let Some(background) = background {
        background.stop();
    }
    // The session and its worker threads are gone, and the adapter with them (its
    // `destroy` ran): this is the last reference unless a worker thread panicked.
    let unmounted = match Arc::try_unwrap(fs) {
        Ok(fs) => fs.unmount().map_err(|err| io::Error::other(format!("unmount: {err}"))),
        Err(_) if opts.read_only => Ok(()),
        Err(fs) => fs
            .write_checkpoint()
            .map(drop)
            .map_err(|err| io::Error::other(format!("checkpoint at the end of the session: {err}"))),
    };
    served.and(unmounted)
}

/// Session settings for `opts`: mount options, who may access, worker threads.
fn session_config(opts: &MountOptions) -> Config {
    let mut config = Config::default();
    config.mount_options = mount_options(opts);
    config.acl = if opts.allow_other {
        SessionACL::All
    } else {
        SessionACL::Owner
    };
    config.n_threads = Some(worker_threads());
    config
}

/// Kernel mount options for `opts`.
fn mount_options(opts: &MountOptions) -> Vec<MountOption> {
    let fsname = if opts.fsname.is_empty() {
        "uf2fs"
    } else {
        opts.fsname.as_str()
    };
    let access = if opts.read_only {
        MountOption::RO
    } else {
        MountOption::RW
    };
    let mut options = vec![
        access,
        MountOption::FSName(fsname.to_owned()),
        MountOption::DefaultPermissions,
        // What /proc/mounts shows: the kernel updates no access time of a FUSE inode
        // itself. `Atime` leaves the kernel's default, relatime (fuser cannot pass
        // MS_STRICTATIME: a strictatime mount is remounted with it once mounted, see
        // the `remount` module).
        if opts.atime == AtimeMode::Never {
            MountOption::NoAtime
        } else {
            MountOption::Atime
        },
    ];
    if let Some(subtype) = &opts.subtype {
        // As a kernel option rather than `MountOption::Subtype`, which fuser only hands
        // to fusermount3: this way a direct mount (as root) shows the subtype too.
        options.push(MountOption::CUSTOM(format!("subtype={subtype}")));
    }
    let flags = [
        (opts.dev, MountOption::Dev, MountOption::NoDev),
        (opts.suid, MountOption::Suid, MountOption::NoSuid),
        (opts.exec, MountOption::Exec, MountOption::NoExec),
    ];
    for (wanted, on, off) in flags {
        if let Some(on_wanted) = wanted {
            options.push(if on_wanted { on } else { off });
        }
    }
    options
}

/// Most threads serving FUSE requests. Reads wait on the device, so a few more threads
/// than cores keep readahead requests flowing.
const WORKER_THREADS_MAX: usize = 16;

/// Threads serving FUSE requests: twice the cores, between 2 and [`WORKER_THREADS_MAX`].
fn worker_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cores * 2).clamp(2, WORKER_THREADS_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_options_are_read_only_with_names() {
        let opts = MountOptions {
            read_only: true,
            ..Default::default()
        };
        let mount = mount_options(&opts);
        assert!(mount.contains(&MountOption::RO));
        assert!(mount.contains(&MountOption::FSName("uf2fs".into())));
        assert!(mount.contains(&MountOption::CUSTOM("subtype=f2fs".into())));
        assert!(mount.contains(&MountOption::DefaultPermissions));
        assert!(mount.contains(&MountOption::Atime));
        let noatime = MountOptions {
            atime: AtimeMode::Never,
            ..opts.clone()
        };
        assert!(mount_options(&noatime).contains(&MountOption::NoAtime));
        let named = MountOptions {
            fsname: "/tmp/x.img".into(),
            ..opts.clone()
        };
        assert!(mount_options(&named).contains(&MountOption::FSName("/tmp/x.img".into())));
        let plain = MountOptions { subtype: None, ..opts };
        assert!(!mount_options(&plain)
            .iter()
            .any(|o| matches!(o, MountOption::CUSTOM(c) if c.starts_with("subtype="))));
        let rw = MountOptions::default();
        assert!(mount_options(&rw).contains(&MountOption::RW));
        assert!(!mount_options(&rw).contains(&MountOption::RO));
    }

    #[test]
    fn dev_suid_exec_are_passed_when_given() {
        let none = mount_options(&MountOptions::default());
        for flag in [
            MountOption::Dev,
            MountOption::NoDev,
            MountOption::Suid,
            MountOption::NoSuid,
            MountOption::Exec,
            MountOption::NoExec,
        ] {
            assert!(!none.contains(&flag), "{flag:?} without being asked for");
        }
        let off = MountOptions {
            dev: Some(false),
            suid: Some(false),
            exec: Some(false),
            ..Default::default()
        };
        let off = mount_options(&off);
        for flag in [MountOption::NoDev, MountOption::NoSuid, MountOption::NoExec] {
            assert!(off.contains(&flag), "{flag:?} missing");
        }
        let on = MountOptions {
            dev: Some(true),
            suid: Some(true),
            exec: Some(true),
            ..Default::default()
        };
        let on = mount_options(&on);
        for flag in [MountOption::Dev, MountOption::Suid, MountOption::Exec] {
            assert!(on.contains(&flag), "{flag:?} missing");
        }
        assert_eq!(
            MountOptions::default().checkpoint_interval,
            Some(DEFAULT_CHECKPOINT_INTERVAL)
        );
    }

    #[test]
    fn allow_other_opens_the_session_to_everyone() {
        let opts = MountOptions {
            read_only: true,
            allow_other: true,
            ..Default::default()
        };
        assert_eq!(session_config(&opts).acl, SessionACL::All);
        let opts = MountOptions {
            read_only: true,
            ..Default::default()
        };
        assert_eq!(session_config(&opts).acl, SessionACL::Owner);
    }

    #[test]
    fn worker_threads_are_bounded() {
        let n = worker_threads();
        assert!((2..=WORKER_THREADS_MAX).contains(&n));
    }
}
