//! [`Settings`]: what F2FS mount options choose in the core, by the kernel's names.
//!
//! A read-write file system starts with the kernel's defaults; [`Fs::set_settings`]
//! changes them at any time, as a remount would. What each one does in uf2fs:
//!
//! - `active_logs` ([`ActiveLogs`]): the logs blocks are written to, as the kernel
//!   chooses them for 2, 4 or 6 logs (see [`crate::segment::ActiveLogs`]).
//! - `background_gc` ([`BackgroundGc`]): whether the mount runs the background cleaner
//!   ([`Fs::background_gc_step`]), and whether it cleans the background way (`on`) or
//!   the foreground way (`sync`).
//! - `mode` ([`AllocMode`]): kept and reported. uf2fs allocates LFS-only (every block
//!   appended to a free segment) in both modes; `adaptive` is the kernel's default, which
//!   also appends while free segments last and only then fills holes of dirty segments
//!   (SSR), which uf2fs does not do.
//! - `checkpoint_merge`: concurrent sync requests ([`Fs::sync_fs`], which `fsync` uses)
//!   share one checkpoint: a request finding that a checkpoint started after it was
//!   made returns without writing another (the kernel's checkpoint merge daemon queues
//!   requests for the same effect). On by default, as in the kernel.
//! - `fsync_mode` ([`FsyncMode`]): `posix` (the default) makes a regular file durable
//!   as the kernel does, by writing its data and direct nodes with the fsync mark for
//!   roll-forward recovery, without a checkpoint (see [`Fs::fsync`] for the cases that
//!   still take one); `strict` writes a checkpoint for every fsync (stricter than the
//!   kernel's `strict`, which only adds checkpoints for new files in changed
//!   directories); `nobarrier` is `posix` without the device flush.

use crate::{Fs, Result};

pub use crate::segment::ActiveLogs;

/// `background_gc=on|off|sync`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum BackgroundGc {
    /// `on` (the kernel's default).
    #[default]
    On,
    /// `off`.
    Off,
    /// `sync`: background cleaning in synchronous mode.
    Sync,
}

impl BackgroundGc {
    /// From the option's value; `None` for values the kernel refuses.
    pub fn from_name(name: &str) -> Option<BackgroundGc> {
        match name {
            "on" => Some(BackgroundGc::On),
            "off" => Some(BackgroundGc::Off),
            "sync" => Some(BackgroundGc::Sync),
            _ => None,
        }
    }

    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            BackgroundGc::On => "on",
            BackgroundGc::Off => "off",
            BackgroundGc::Sync => "sync",
        }
    }
}

/// `mode=adaptive|lfs`: the block allocation mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum AllocMode {
    /// `adaptive` (the kernel's default on devices that are not zoned).
    #[default]
    Adaptive,
    /// `lfs`: never write into holes of dirty segments.
    Lfs,
}

impl AllocMode {
    /// From the option's value; `None` for anything but `adaptive` and `lfs`.
    pub fn from_name(name: &str) -> Option<AllocMode> {
        match name {
            "adaptive" => Some(AllocMode::Adaptive),
            "lfs" => Some(AllocMode::Lfs),
            _ => None,
        }
    }

    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            AllocMode::Adaptive => "adaptive",
            AllocMode::Lfs => "lfs",
        }
    }
}

/// `fsync_mode=posix|strict|nobarrier` (see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum FsyncMode {
    /// `posix` (the kernel's default): roll-forward fsync.
    #[default]
    Posix,
    /// `strict`: a checkpoint per fsync.
    Strict,
    /// `nobarrier`: roll-forward fsync without flushing the device.
    NoBarrier,
}

impl FsyncMode {
    /// From the option's value; `None` for values the kernel refuses.
    pub fn from_name(name: &str) -> Option<FsyncMode> {
        match name {
            "posix" => Some(FsyncMode::Posix),
            "strict" => Some(FsyncMode::Strict),
            "nobarrier" => Some(FsyncMode::NoBarrier),
            _ => None,
        }
    }

    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            FsyncMode::Posix => "posix",
            FsyncMode::Strict => "strict",
            FsyncMode::NoBarrier => "nobarrier",
        }
    }
}

/// The settings of a read-write file system (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Settings {
    /// `active_logs=2|4|6`.
    pub active_logs: ActiveLogs,
    /// `background_gc=on|off|sync`.
    pub background_gc: BackgroundGc,
    /// `mode=adaptive|lfs` (uf2fs allocates LFS-only in both).
    pub mode: AllocMode,
    /// `checkpoint_merge` (true) or `nocheckpoint_merge` (false).
    pub checkpoint_merge: bool,
    /// `fsync_mode=posix|strict|nobarrier`.
    pub fsync_mode: FsyncMode,
}

impl Default for Settings {
    /// The kernel's defaults: six logs, background GC on, adaptive, checkpoint merge.
    fn default() -> Settings {
        Settings {
            active_logs: ActiveLogs::default(),
            background_gc: BackgroundGc::default(),
            mode: AllocMode::default(),
            checkpoint_merge: true,
            fsync_mode: FsyncMode::default(),
        }
    }
}

impl Fs {
    /// Applies `settings` from now on (read-write only, else [`crate::Error::ReadOnly`]).
    pub fn set_settings(&self, settings: Settings) -> Result<()> {
        let rw = self.rw()?;
        let mut current = rw.settings();
        rw.segs().set_active_logs(settings.active_logs);
        *current = settings;
        Ok(())
    }

    /// The settings in force: the defaults until [`Fs::set_settings`], and always the
    /// defaults on a read-only file system.
    pub fn settings(&self) -> Settings {
        match self.rw() {
            Ok(rw) => *rw.settings(),
            Err(_) => Settings::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        for gc in [BackgroundGc::On, BackgroundGc::Off, BackgroundGc::Sync] {
            assert_eq!(BackgroundGc::from_name(gc.name()), Some(gc));
        }
        for mode in [AllocMode::Adaptive, AllocMode::Lfs] {
            assert_eq!(AllocMode::from_name(mode.name()), Some(mode));
        }
        for mode in [FsyncMode::Posix, FsyncMode::Strict, FsyncMode::NoBarrier] {
            assert_eq!(FsyncMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(FsyncMode::from_name("Posix"), None);
        for bad in ["", "ON", "yes", "1", "on "] {
            assert_eq!(BackgroundGc::from_name(bad), None, "{bad:?}");
        }
        for bad in ["", "LFS", "fragment:segment", "fragment:block", "ssr"] {
            assert_eq!(AllocMode::from_name(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn defaults_are_the_kernels() {
        let d = Settings::default();
        assert_eq!(d.active_logs.count(), 6);
        assert_eq!(d.background_gc, BackgroundGc::On);
        assert_eq!(d.mode, AllocMode::Adaptive);
        assert!(d.checkpoint_merge);
        assert_eq!(d.fsync_mode, FsyncMode::Posix);
    }
}
