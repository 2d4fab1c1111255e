//! Access times. The kernel marks FUSE inodes `S_NOATIME` and leaves access times to
//! the file system (after a READ or READDIR it only drops the atime it cached), so the
//! adapter updates them as Linux's `touch_atime` does on F2FS: under the mount's rule
//! (`relatime`: when the access time is not after the last modification or change,
//! or is a day old; `strictatime`: always; `noatime`: never), not for directories
//! under `nodiratime`, not for inodes with `FS_NOATIME_FL` (`chattr +A`) nor reads
//! through an `O_NOATIME` descriptor, never on a read-only mount. Only the access
//! time changes (`Fs::touch_atime`), in memory until the next checkpoint.
//!
//! Reads the kernel serves from its page cache do not reach the adapter. So that the
//! read that is due to update the time does, an open keeps the cached pages only when
//! no update is due (always, under `strictatime`: each open's first read reaches the
//! adapter, later reads of cached pages in the same open do not).
//!
//! A remount changes the rule of a running mount ([`LivePolicy`], set by the
//! `remount` module's watcher), as it changes a Linux mount's.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::SystemTime;

use fuser::OpenFlags;
use uf2fs_core::flags::FS_NOATIME_FL;
use uf2fs_core::{Ino, Stat, Timestamp};

use super::F2fsFuse;
use crate::AtimeMode;

/// Seconds after which `relatime` updates an access time anyway (a day).
const RELATIME_MAX_AGE_SECS: i64 = 24 * 60 * 60;

/// The mount's atime options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// `relatime`, `strictatime` or `noatime`.
    pub(crate) mode: AtimeMode,
    /// Whether directories' access times change too (`nodiratime`: false).
    pub(crate) dirs: bool,
    /// Whether the mount was remounted read-only (no access time changes then).
    pub(crate) read_only: bool,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            mode: AtimeMode::Relative,
            dirs: true,
            read_only: false,
        }
    }
}

/// The rule of a running mount, which a remount may change while requests are served.
#[derive(Debug)]
pub(crate) struct LivePolicy(AtomicU8);

impl Default for LivePolicy {
    fn default() -> LivePolicy {
        LivePolicy::new(Policy::default())
    }
}

/// [`LivePolicy`]'s bits: the mode in the low two, then `dirs` and `read_only`.
const MODE_MASK: u8 = 0b11;
const DIRS_BIT: u8 = 0b100;
const READ_ONLY_BIT: u8 = 0b1000;

impl LivePolicy {
    /// A rule starting as `policy`.
    pub(crate) fn new(policy: Policy) -> LivePolicy {
        let live = LivePolicy(AtomicU8::new(0));
        live.set(policy);
        live
    }

    /// The rule now.
    pub(crate) fn get(&self) -> Policy {
        let bits = self.0.load(Ordering::Relaxed);
        let mode = match bits & MODE_MASK {
            1 => AtimeMode::Strict,
            2 => AtimeMode::Never,
            _ => AtimeMode::Relative,
        };
        Policy {
            mode,
            dirs: bits & DIRS_BIT != 0,
            read_only: bits & READ_ONLY_BIT != 0,
        }
    }

    /// Makes `policy` the rule.
    pub(crate) fn set(&self, policy: Policy) {
        let mode = match policy.mode {
            AtimeMode::Relative => 0,
            AtimeMode::Strict => 1,
            AtimeMode::Never => 2,
        };
        let dirs = if policy.dirs { DIRS_BIT } else { 0 };
        let read_only = if policy.read_only { READ_ONLY_BIT } else { 0 };
        self.0.store(mode | dirs | read_only, Ordering::Relaxed);
    }
}

/// `t` as a comparable pair.
fn key(t: Timestamp) -> (i64, u32) {
    (t.secs, t.nsecs)
}

/// The current time.
fn now() -> Timestamp {
    let since = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp {
        secs: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nsecs: since.subsec_nanos(),
    }
}

/// The kernel's timestamp tick: its clock for file times (`current_time`, the coarse
/// real-time clock) moves once a jiffy, at most 10 ms (HZ=100).
const KERNEL_TICK_NS: i64 = 10_000_000;

/// `t` one [`KERNEL_TICK_NS`] later.
fn tick_later(t: Timestamp) -> (i64, u32) {
    let nanos = i64::from(t.nsecs) + KERNEL_TICK_NS;
    (
        t.secs.saturating_add(nanos / 1_000_000_000),
        (nanos % 1_000_000_000) as u32,
    )
}

/// Whether an access at `now` changes the access time of `st` under `mode` (Linux's
/// `atime_needs_update` and `relatime_need_update`).
///
/// Under FUSE's writeback cache the kernel stamps a write's mtime and ctime from its
/// coarse clock, up to a tick behind the adapter's: a file created by the adapter and
/// written at once then shows an access time just after its modification time. So
/// `relatime` counts an access time less than a tick after the last modification or
/// change as not after it (at worst one update more than Linux makes).
fn due(mode: AtimeMode, st: &Stat, now: Timestamp) -> bool {
    if key(st.atime) == key(now) {
        return false;
    }
    match mode {
        AtimeMode::Never => false,
        AtimeMode::Strict => true,
        AtimeMode::Relative => {
            tick_later(st.mtime) >= key(st.atime)
                || tick_later(st.ctime) >= key(st.atime)
                || now.secs.saturating_sub(st.atime.secs) >= RELATIME_MAX_AGE_SECS
        }
    }
}

impl F2fsFuse {
    /// Whether accesses to `st` may change its access time at all under `rule`.
    fn atime_applies(&self, rule: Policy, st: &Stat) -> bool {
        let dir = st.kind == uf2fs_core::FileKind::Dir;
        self.writable
            && !rule.read_only
            && rule.mode != AtimeMode::Never
            && (rule.dirs || !dir)
            && st.flags & FS_NOATIME_FL == 0
    }

    /// Whether an open of `ino` may keep the pages the kernel cached: not when its next
    /// read is due to change the access time (it must reach the adapter).
    pub(crate) fn keep_cache(&self, ino: Ino) -> bool {
        let rule = self.atime.get();
        match self.fs.stat(ino) {
            Ok(st) => !(self.atime_applies(rule, &st) && due(rule.mode, &st, now())),
            Err(_) => true,
        }
    }

    /// `ino` was read or listed through a descriptor opened with `flags`: its access
    /// time changes when the rule says so. A failure (no room, say) leaves it, as
    /// Linux ignores a failed access time update.
    pub(crate) fn accessed(&self, ino: Ino, flags: OpenFlags) {
        if flags.0 & libc::O_NOATIME != 0 {
            return;
        }
        let Ok(st) = self.fs.stat(ino) else {
            return;
        };
        let t = now();
        let rule = self.atime.get();
        if self.atime_applies(rule, &st) && due(rule.mode, &st, t) {
            let _ = self.fs.touch_atime(ino, t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp { secs, nsecs: 0 }
    }

    fn stat(atime: i64, mtime: i64, ctime: i64) -> Stat {
        Stat {
            ino: 4,
            kind: uf2fs_core::FileKind::File,
            mode: 0o100644,
            nlink: 1,
            uid: 0,
            gid: 0,
            size: 0,
            blocks: 0,
            atime: at(atime),
            mtime: at(mtime),
            ctime: at(ctime),
            crtime: None,
            rdev: (0, 0),
            generation: 0,
            flags: 0,
            blksize: 4096,
        }
    }

    #[test]
    fn relatime_updates_as_linux_does() {
        let rel = AtimeMode::Relative;
        // Written since the last access (or at the same second): due.
        assert!(due(rel, &stat(100, 100, 100), at(200)));
        assert!(due(rel, &stat(100, 150, 100), at(200)));
        assert!(due(rel, &stat(100, 90, 150), at(200)));
        // Accessed less than a kernel tick after the change (the kernel's coarse clock
        // stamped the write): due.
        let mut st = stat(100, 100, 100);
        st.atime.nsecs = 9_000_000;
        assert!(due(rel, &st, at(200)));
        st.atime.nsecs = 11_000_000;
        assert!(!due(rel, &st, at(200)));
        // Read since the last change, less than a day ago: not due.
        assert!(!due(rel, &stat(150, 100, 100), at(200)));
        // A day old: due.
        assert!(due(rel, &stat(150, 100, 100), at(150 + 86_400)));
        // Never twice at the same instant.
        assert!(!due(AtimeMode::Strict, &stat(200, 100, 100), at(200)));
        assert!(due(AtimeMode::Strict, &stat(150, 100, 100), at(200)));
        assert!(!due(AtimeMode::Never, &stat(100, 150, 150), at(200)));
    }

    #[test]
    fn a_live_policy_gives_back_what_was_set() {
        let live = LivePolicy::new(Policy::default());
        assert_eq!(live.get(), Policy::default());
        for mode in [AtimeMode::Relative, AtimeMode::Strict, AtimeMode::Never] {
            for (dirs, read_only) in [(true, false), (false, true), (false, false), (true, true)] {
                let p = Policy { mode, dirs, read_only };
                live.set(p);
                assert_eq!(live.get(), p);
            }
        }
    }
}
