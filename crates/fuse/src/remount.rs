//! Remounts. The kernel sends a FUSE file system nothing when its mount is remounted
//! (`fuse_reconfigure` only syncs and refuses `MS_MANDLOCK`), but a remount changes
//! the mount's flags in the mount table, and the kernel wakes a poll of
//! `/proc/self/mountinfo` at every change of the table. The adapter keeps access times
//! itself (see the `atime` module), so a thread watches the table and applies what a
//! remount changed in this mount's `noatime`, `relatime`, `nodiratime` and `ro` to the
//! access-time rule, as Linux applies a remount's flags to the mount: a part of the
//! rule changes only when its flags did (a remount naming no atime option keeps the
//! mode, as the kernel keeps the mount's atime flags then).
//!
//! fuser cannot pass `MS_STRICTATIME`, so a mount made with `strictatime` would show
//! `relatime` in the table, and a later `remount,relatime` would change nothing there.
//! Such a mount is remounted at once with `MS_STRICTATIME` (the flags it has kept),
//! when the daemon may (`CAP_SYS_ADMIN`; a user's fusermount3 mount may not, and
//! keeps showing `relatime`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::adapter::atime::{LivePolicy, Policy};
use crate::mountinfo::{entries, Entry, MOUNTINFO_PATH};
use crate::AtimeMode;

/// How long the watcher waits for a change of the table before it looks whether the
/// session ended, in milliseconds.
const POLL_MS: u16 = 500;

/// The flags of a mount that decide access times, as the mount table shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MountFlags {
    /// `ro`.
    pub(crate) read_only: bool,
    /// `noatime`, `relatime`, or neither (`strictatime`).
    pub(crate) atime: AtimeMode,
    /// `nodiratime`.
    pub(crate) nodiratime: bool,
}

impl MountFlags {
    /// The flags of table entry `e`.
    pub(crate) fn of(e: &Entry) -> MountFlags {
        let atime = if e.has_option(b"noatime") {
            AtimeMode::Never
        } else if e.has_option(b"relatime") {
            AtimeMode::Relative
        } else {
            AtimeMode::Strict
        };
        MountFlags {
            read_only: e.has_option(b"ro"),
            atime,
            nodiratime: e.has_option(b"nodiratime"),
        }
    }
}

/// Whether `e` is a FUSE mount (`fuse`, `fuse.SUBTYPE`, `fuseblk`).
fn is_fuse(e: &Entry) -> bool {
    e.fs_type == b"fuse" || e.fs_type.starts_with(b"fuse.") || e.fs_type == b"fuseblk"
}

/// The FUSE mount on top at `mountpoint` in `table`: the last one listed there.
pub(crate) fn find(table: &[u8], mountpoint: &[u8]) -> Option<Entry> {
    entries(table)
        .into_iter()
        .rev()
        .find(|e| e.mountpoint == mountpoint && is_fuse(e))
}

/// The rule after the mount's flags went from `was` to `now`: each part follows its
/// flags when they changed and stays otherwise.
pub(crate) fn apply(rule: Policy, was: MountFlags, now: MountFlags) -> Policy {
    Policy {
        mode: if now.atime != was.atime { now.atime } else { rule.mode },
        dirs: if now.nodiratime != was.nodiratime {
            !now.nodiratime
        } else {
            rule.dirs
        },
        read_only: if now.read_only != was.read_only {
            now.read_only
        } else {
            rule.read_only
        },
    }
}

/// The running watcher; [`Watcher::stop`] ends it.
pub(crate) struct Watcher {
    stop: Arc<AtomicBool>,
}

impl Watcher {
    /// Asks the thread to end (at its next look, within [`POLL_MS`]); does not wait.
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Starts watching the FUSE mount at `mountpoint` (absolute, canonical) for remounts
/// that change `live`'s rule. `None` when the mount is not in this process's table
/// (another mount namespace) or no thread could start: remounts then change nothing.
pub(crate) fn watch(mountpoint: &Path, live: Arc<LivePolicy>) -> Option<Watcher> {
    use std::os::unix::ffi::OsStrExt;
    let point = mountpoint.as_os_str().as_bytes().to_vec();
    // Opened before the table is read: a change after the read wakes the first poll.
    let watched = std::fs::File::open(MOUNTINFO_PATH).ok()?;
    let table = std::fs::read(MOUNTINFO_PATH).ok()?;
    let mut mine = find(&table, &point)?;
    if live.get().mode == AtimeMode::Strict
        && MountFlags::of(&mine).atime != AtimeMode::Strict
        && set_strictatime(mountpoint, &mine).is_ok()
    {
        let table = std::fs::read(MOUNTINFO_PATH).ok()?;
        mine = find(&table, &point)?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("uf2fs-remount".into())
        .spawn(move || follow(&watched, mine.id, MountFlags::of(&mine), &live, &stopped))
        .ok()?;
    Some(Watcher { stop })
}

/// Remounts `mine` with `MS_STRICTATIME` and the flags it has.
fn set_strictatime(mountpoint: &Path, mine: &Entry) -> nix::Result<()> {
    use nix::mount::{mount, MsFlags};
    let mut flags = MsFlags::MS_REMOUNT | MsFlags::MS_STRICTATIME;
    for (option, flag) in [
        (&b"ro"[..], MsFlags::MS_RDONLY),
        (b"nosuid", MsFlags::MS_NOSUID),
        (b"nodev", MsFlags::MS_NODEV),
        (b"noexec", MsFlags::MS_NOEXEC),
        (b"nodiratime", MsFlags::MS_NODIRATIME),
    ] {
        if mine.has_option(option) {
            flags |= flag;
        }
    }
    mount(None::<&str>, mountpoint, None::<&str>, flags, None::<&str>)
}

/// The watcher's loop: waits for changes of the table (polling `watched`, an open
/// mountinfo) and applies those of mount `id` (last seen with `flags`) to `live`,
/// until `stop` or the mount is gone.
fn follow(watched: &std::fs::File, id: u64, mut flags: MountFlags, live: &LivePolicy, stop: &AtomicBool) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(watched.as_fd(), PollFlags::POLLPRI)];
        match poll(&mut fds, PollTimeout::from(POLL_MS)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(_) => return,
        }
        let changed = fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLPRI | PollFlags::POLLERR));
        if !changed {
            continue;
        }
        let Ok(table) = std::fs::read(MOUNTINFO_PATH) else {
            return;
        };
        let Some(now) = entries(&table).into_iter().find(|e| e.id == id) else {
            return; // unmounted
        };
        let now = MountFlags::of(&now);
        if now != flags {
            live.set(apply(live.get(), flags, now));
            flags = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[u8] = b"22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/root rw\n\
        40 22 0:50 / /mnt rw,nosuid,nodev,relatime - fuse /img rw,user_id=0\n\
        41 22 0:51 / /mnt/sub rw - ext4 /dev/x rw\n\
        42 40 0:52 / /mnt ro,noatime,nodiratime - fuse.f2fs /img2 ro\n";

    #[test]
    fn the_mount_on_top_is_found_with_its_flags() {
        let top = find(TABLE, b"/mnt").unwrap();
        assert_eq!(top.id, 42);
        assert_eq!(
            MountFlags::of(&top),
            MountFlags {
                read_only: true,
                atime: AtimeMode::Never,
                nodiratime: true
            }
        );
        let below = &entries(TABLE)[1];
        assert_eq!(
            MountFlags::of(below),
            MountFlags {
                read_only: false,
                atime: AtimeMode::Relative,
                nodiratime: false
            }
        );
        assert!(find(TABLE, b"/mnt/sub").is_none(), "not FUSE");
        assert!(find(TABLE, b"/").is_none());
    }

    #[test]
    fn a_remount_changes_only_what_its_flags_changed() {
        let flags = |atime, nodiratime, read_only| MountFlags {
            read_only,
            atime,
            nodiratime,
        };
        let strict = Policy {
            mode: AtimeMode::Strict,
            dirs: true,
            read_only: false,
        };
        let rel = flags(AtimeMode::Relative, false, false);
        // `remount,noatime`.
        let p = apply(strict, rel, flags(AtimeMode::Never, false, false));
        assert_eq!(p.mode, AtimeMode::Never);
        // `remount,nodiratime` of a strictatime mount the table shows as relatime:
        // the mode stays.
        let p = apply(strict, rel, flags(AtimeMode::Relative, true, false));
        assert_eq!((p.mode, p.dirs, p.read_only), (AtimeMode::Strict, false, false));
        // `remount,ro`, then `remount,rw,strictatime`.
        let p = apply(strict, rel, flags(AtimeMode::Relative, false, true));
        assert!(p.read_only);
        let p = apply(
            p,
            flags(AtimeMode::Relative, false, true),
            flags(AtimeMode::Strict, false, false),
        );
        assert_eq!((p.mode, p.read_only), (AtimeMode::Strict, false));
    }
}
