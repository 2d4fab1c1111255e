//! Checkpoints on a schedule and on request: [`Fs::checkpoint_if_due`] for a
//! background thread (the kernel's periodic checkpoint, sysfs `cp_interval`), and
//! [`Fs::sync_fs`] for sync requests (merged when `checkpoint_merge` is set).
//!
//! A checkpoint is due when something changed since the last one and either
//! - the interval passed since the last checkpoint (whoever wrote it), or
//! - more than 5% of the main segments (at most 4096) wait as prefree for a checkpoint
//!   to become free again (the kernel's `excess_prefree_segs`), or
//! - dirty NAT entries reach 10% of the node ids (the kernel's `excess_dirty_nats`).
//!
//! Dirty data pages and nodes have no rule of their own: the page cache and the node
//! manager already write them out past their bounds, and only a checkpoint makes them
//! durable, which the interval bounds. "Changed" is read from the state itself: dirty
//! pages, dirty nodes, dirty NAT or SIT entries, or prefree segments; a checkpoint
//! leaves none of them.
//!
//! The time of the last checkpoint is taken when this module writes one, and otherwise
//! when a new checkpoint version is first seen here (a checkpoint written by
//! [`Fs::write_checkpoint`] or by garbage collection is noticed at the next check).

use super::write::CheckpointReport;
use crate::fs::ReadWrite;
use crate::{Fs, Result};
use std::time::Duration;

/// Percent of the main segments that may wait as prefree before a checkpoint is due
/// (the kernel's `DEF_RECLAIM_PREFREE_SEGMENTS`).
pub const PREFREE_PERCENT: u64 = 5;
/// Cap of that count (the kernel's `DEF_MAX_RECLAIM_PREFREE_SEGMENTS`).
pub const PREFREE_MAX: u64 = 4096;
/// Percent of the node ids whose NAT entries may be dirty before a checkpoint is due
/// (the kernel's `DEF_DIRTY_NAT_RATIO_THRESHOLD`).
pub const DIRTY_NAT_PERCENT: u64 = 10;

/// Why a checkpoint is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointDue {
    /// The interval passed since the last checkpoint.
    Interval,
    /// Too many segments wait as prefree.
    PrefreeSegments,
    /// Too many NAT entries are dirty.
    DirtyNat,
}

impl Fs {
    /// Whether anything changed since the last checkpoint (false on a read-only file
    /// system).
    pub fn has_unsaved_changes(&self) -> bool {
        self.rw().is_ok_and(|rw| self.unsaved(rw))
    }

    /// Time since the newest checkpoint was written (`None` on a read-only file system).
    /// Waits for a checkpoint being written.
    pub fn since_last_checkpoint(&self) -> Option<Duration> {
        let rw = self.rw().ok()?;
        let version = rw.cp_shared().last().cp.checkpoint_ver;
        Some(rw.cp_timer().since(version, self.now()))
    }

    /// Why a checkpoint is due now with `interval` between checkpoints, if it is (see
    /// the module documentation). Never on a read-only file system.
    pub fn checkpoint_due(&self, interval: Duration) -> Option<CheckpointDue> {
        let rw = self.rw().ok()?;
        let version = rw.cp_shared().last().cp.checkpoint_ver;
        self.due(rw, version, interval)
    }

    /// Writes a checkpoint if one is due with `interval` between checkpoints
    /// ([`Fs::checkpoint_due`], judged again with `cp_lock` held, so a checkpoint just
    /// written by someone else is not repeated). Returns what was written, `None` when
    /// nothing was due. A failed checkpoint marks the file system failed: every later
    /// operation fails, as after any operation failing halfway.
    pub fn checkpoint_if_due(&self, interval: Duration) -> Result<Option<CheckpointReport>> {
        let rw = self.rw()?;
        if self.checkpoint_due(interval).is_none() {
            return Ok(None);
        }
        // The checkpoint's first flush writes out everything written since the last
        // one while no operation runs (on an image file, the host's dirty pages of it:
        // tens of milliseconds). Flushed here first, with operations going on, it
        // finds little left.
        self.device().flush().inspect_err(|e| rw.fail(e))?;
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        if self.due(rw, writer.last().cp.checkpoint_ver, interval).is_none() {
            return Ok(None);
        }
        match self.checkpoint_locked(rw, &mut writer, false) {
            Ok(report) => {
                rw.cp_timer().written(report.version, self.now());
                Ok(Some(report))
            }
            Err(e) => {
                rw.fail(&e);
                Err(e)
            }
        }
    }

    /// Makes everything done before the call durable (what `syncfs(2)` asks of a file
    /// system; `fsync` uses it after writing the file back). With `checkpoint_merge`
    /// (the default), a call that finds a checkpoint was started after it began returns
    /// once that one is durable instead of writing another; without it, every call
    /// writes a checkpoint.
    pub fn sync_fs(&self) -> Result<()> {
        let rw = self.rw()?;
        let merge = rw.settings().checkpoint_merge;
        // Read with cp_lock shared: no checkpoint is running, so any later version is
        // of a checkpoint that started after this point, and covers everything before
        // if it wrote the dirty pages too (GC's checkpoints leave files' pages).
        let seen = merge.then(|| rw.cp_shared().data_version());
        self.sync_fs_after(rw, seen)
    }

    /// [`Fs::sync_fs`] once it has read `seen` (with merging, the data version then):
    /// takes `cp_lock` exclusively and writes a checkpoint unless one that wrote the
    /// dirty pages came in between. Other checkpoints (GC's, which leave files' pages)
    /// may come in between too; they do not count.
    fn sync_fs_after(&self, rw: &ReadWrite, seen: Option<u64>) -> Result<()> {
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        if seen.is_some_and(|v| v != writer.data_version()) {
            return Ok(());
        }
        let report = self.checkpoint_locked(rw, &mut writer, false)?;
        rw.cp_timer().written(report.version, self.now());
        Ok(())
    }

    fn due(&self, rw: &ReadWrite, version: u64, interval: Duration) -> Option<CheckpointDue> {
        if !self.unsaved(rw) {
            return None;
        }
        if rw.cp_timer().since(version, self.now()) >= interval {
            return Some(CheckpointDue::Interval);
        }
        let (prefree, main) = {
            let segs = rw.segs();
            (segs.prefree_count() as u64, self.superblock().segment_count_main as u64)
        };
        if prefree > (main * PREFREE_PERCENT / 100).min(PREFREE_MAX) {
            return Some(CheckpointDue::PrefreeSegments);
        }
        let nodes = self.nodes();
        if nodes.dirty_nat_count() as u64 >= (nodes.max_nid() * DIRTY_NAT_PERCENT / 100).max(1) {
            return Some(CheckpointDue::DirtyNat);
        }
        None
    }

    /// Whether the state holds anything the last checkpoint does not have. Takes the
    /// page cache, node manager and segment manager locks one at a time.
    fn unsaved(&self, rw: &ReadWrite) -> bool {
        if !rw.pages().is_empty() || self.nodes().dirty_node_count() > 0 || self.nodes().dirty_nat_count() > 0 {
            return true;
        }
        let segs = rw.segs();
        segs.dirty_count() > 0 || segs.prefree_count() > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{BlockDevice, CrashDevice, MemDevice, BLOCK};
    use crate::mkfs::{mkfs, MkfsOptions};
    use crate::settings::Settings;
    use crate::{Error, OpenOptions};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    const RW: OpenOptions = OpenOptions { read_write: true };
    const HOUR: Duration = Duration::from_secs(3600);

    /// The periodic checkpoint flushes the device before it takes `cp_lock`: on an
    /// image file its first flush writes out the host's dirty pages of the image, and
    /// under the lock every operation would wait for that.
    #[test]
    fn the_periodic_checkpoint_flushes_before_operations_must_wait() {
        let probe = crate::device::probe::FlushProbe::fs(64 << 20);
        let fs = &probe.fs;
        let root = fs.root();
        let ino = fs.create(root, b"f", 0o644, 0, 0).unwrap().ino;
        fs.write(ino, 0, &vec![3u8; 1 << 20]).unwrap();
        probe.arm(true);
        let report = fs.checkpoint_if_due(Duration::ZERO).unwrap();
        probe.arm(false);
        assert!(report.is_some(), "no checkpoint was due");
        assert_eq!(
            probe.ran(),
            Some(true),
            "an operation waited for the checkpoint's first flush"
        );
        fs.lookup(root, crate::device::probe::FlushProbe::NAME).unwrap();
    }

    fn image(size_mib: u64) -> Vec<u8> {
        let tmp = tempfile::tempdir().unwrap();
        let img = tmp.path().join("img");
        let opts = MkfsOptions {
            size_bytes: Some(size_mib << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        std::fs::read(&img).unwrap()
    }

    fn version(fs: &Fs) -> u64 {
        fs.last_checkpoint().checkpoint_ver
    }

    #[test]
    fn nothing_changed_nothing_written() {
        let fs = Fs::open_device_with(Box::new(MemDevice::new(image(64))), "mem", RW).unwrap();
        let v = version(&fs);
        assert!(!fs.has_unsaved_changes());
        assert_eq!(fs.checkpoint_due(Duration::ZERO), None);
        assert_eq!(fs.checkpoint_if_due(Duration::ZERO).unwrap(), None);
        assert_eq!(version(&fs), v);
        // Reads change nothing either.
        fs.read_dir(fs.root()).unwrap();
        assert_eq!(fs.checkpoint_if_due(Duration::ZERO).unwrap(), None);
        // A read-only file system never has anything due, and refuses to checkpoint.
        let ro = Fs::open_device(Box::new(MemDevice::new(image(64))), "ro").unwrap();
        assert!(!ro.has_unsaved_changes());
        assert_eq!(ro.checkpoint_due(Duration::ZERO), None);
        assert_eq!(ro.since_last_checkpoint(), None);
        assert!(matches!(ro.checkpoint_if_due(Duration::ZERO), Err(Error::ReadOnly(_))));
    }

    #[test]
    fn a_change_is_written_once_when_the_interval_passed() {
        let fs = Fs::open_device_with(Box::new(MemDevice::new(image(64))), "mem", RW).unwrap();
        let v = version(&fs);
        let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        fs.write(f, 0, &[7; 10000]).unwrap();
        assert!(fs.has_unsaved_changes());
        // Changed, but neither the interval nor a threshold is reached.
        assert_eq!(fs.checkpoint_due(HOUR), None);
        assert_eq!(fs.checkpoint_if_due(HOUR).unwrap(), None);
        assert_eq!(version(&fs), v);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(
            fs.checkpoint_due(Duration::from_millis(50)),
            Some(CheckpointDue::Interval)
        );
        let report = fs
            .checkpoint_if_due(Duration::from_millis(50))
            .unwrap()
            .expect("a checkpoint");
        assert_eq!(report.version, v + 1);
        assert_eq!(version(&fs), v + 1);
        assert!(!fs.has_unsaved_changes(), "a checkpoint leaves nothing unsaved");
        assert!(fs.since_last_checkpoint().unwrap() < Duration::from_millis(50));
        assert_eq!(
            fs.checkpoint_if_due(Duration::ZERO).unwrap(),
            None,
            "nothing changed since"
        );
        // A checkpoint written elsewhere restarts the interval.
        fs.write(f, 0, b"again").unwrap();
        std::thread::sleep(Duration::from_millis(60));
        fs.write_checkpoint().unwrap();
        fs.write(f, 5, b"and again").unwrap();
        assert_eq!(fs.checkpoint_due(Duration::from_millis(50)), None);
        assert_eq!(fs.checkpoint_due(Duration::ZERO), Some(CheckpointDue::Interval));
    }

    #[test]
    fn prefree_segments_past_five_percent_make_a_checkpoint_due() {
        // 24 main segments: more than one prefree segment is too many.
        let fs = Fs::open_device_with(Box::new(MemDevice::new(image(64))), "mem", RW).unwrap();
        let f = fs.create(fs.root(), b"big", 0o644, 0, 0).unwrap().ino;
        fs.write(f, 0, &vec![1; 6 << 20]).unwrap();
        fs.write_checkpoint().unwrap();
        assert_eq!(fs.checkpoint_due(HOUR), None);
        fs.unlink(fs.root(), b"big").unwrap();
        assert!(fs.segments().unwrap().prefree_count() > 1);
        assert_eq!(fs.checkpoint_due(HOUR), Some(CheckpointDue::PrefreeSegments));
        fs.checkpoint_if_due(HOUR)
            .unwrap()
            .expect("a checkpoint for the prefree segments");
        assert_eq!(fs.segments().unwrap().prefree_count(), 0);
        assert_eq!(fs.checkpoint_due(HOUR), None);
    }

    /// A device whose writes fail once `fail` is set.
    struct Failing {
        inner: MemDevice,
        fail: Arc<AtomicBool>,
    }

    impl BlockDevice for Failing {
        fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> crate::Result<()> {
            self.inner.read_blocks(blkaddr, buf)
        }
        fn block_count(&self) -> u64 {
            self.inner.block_count()
        }
        fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> crate::Result<()> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(Error::Io {
                    context: format!("injected failure at block {blkaddr:#x}"),
                    source: std::io::Error::other("injected"),
                });
            }
            self.inner.write_blocks(blkaddr, buf)
        }
    }

    #[test]
    fn a_failed_background_checkpoint_fails_later_operations() {
        let fail = Arc::new(AtomicBool::new(false));
        let dev = Failing {
            inner: MemDevice::new(image(64)),
            fail: fail.clone(),
        };
        let fs = Fs::open_device_with(Box::new(dev), "failing", RW).unwrap();
        let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        fs.write(f, 0, &[3; 3 * BLOCK]).unwrap();
        fail.store(true, Ordering::SeqCst);
        assert!(fs.checkpoint_if_due(Duration::ZERO).is_err());
        fail.store(false, Ordering::SeqCst);
        let later = fs.create(fs.root(), b"g", 0o644, 0, 0).unwrap_err();
        assert!(later.to_string().contains("injected failure"), "{later}");
        assert!(fs.write(f, 0, b"x").is_err());
        assert!(fs.checkpoint_if_due(Duration::ZERO).is_err());
        assert!(fs.sync_fs().is_err());
    }

    #[test]
    fn sync_fs_writes_one_checkpoint_per_call_when_alone() {
        for merge in [true, false] {
            let fs = Fs::open_device_with(Box::new(MemDevice::new(image(64))), "mem", RW).unwrap();
            fs.set_settings(Settings {
                checkpoint_merge: merge,
                ..Settings::default()
            })
            .unwrap();
            let v = version(&fs);
            for i in 1..=3 {
                fs.create(fs.root(), format!("f{i}").as_bytes(), 0o644, 0, 0).unwrap();
                fs.sync_fs().unwrap();
                assert_eq!(version(&fs), v + i, "merge {merge}");
            }
            // Nothing changed: still a checkpoint (sync asks for one).
            fs.sync_fs().unwrap();
            assert_eq!(version(&fs), v + 4);
        }
    }

    /// Threads creating and fsyncing their own files at once under
    /// `fsync_mode=strict` (a checkpoint per fsync): with checkpoint merge some syncs
    /// share a checkpoint, and every synced file is on the medium as of the last flush
    /// whatever the interleaving.
    #[test]
    fn merged_syncs_keep_every_synced_file() {
        for merge in [true, false] {
            let dev = CrashDevice::new(image(128), 1 << 22);
            let fs = Arc::new(Fs::open_device_with(Box::new(dev.clone()), "crash", RW).unwrap());
            fs.set_settings(Settings {
                checkpoint_merge: merge,
                fsync_mode: crate::settings::FsyncMode::Strict,
                ..Settings::default()
            })
            .unwrap();
            let v = version(&fs);
            const THREADS: usize = 4;
            const FILES: usize = 12;
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    let fs = fs.clone();
                    s.spawn(move || {
                        for i in 0..FILES {
                            let name = format!("t{t}-f{i}");
                            let ino = fs.create(fs.root(), name.as_bytes(), 0o644, 0, 0).unwrap().ino;
                            fs.write(ino, 0, name.as_bytes()).unwrap();
                            fs.fsync(ino, false).unwrap();
                        }
                    });
                }
            });
            let written = version(&fs) - v;
            assert!(
                written <= (THREADS * FILES) as u64,
                "merge {merge}: {written} checkpoints"
            );
            if !merge {
                assert_eq!(written, (THREADS * FILES) as u64, "without merge every sync writes one");
            }
            let durable = dev.image_after_cut(dev.flush_count(), &|_| false);
            drop(fs);
            let back = Fs::open_device(Box::new(MemDevice::new(durable)), "after").unwrap();
            for t in 0..THREADS {
                for i in 0..FILES {
                    let name = format!("t{t}-f{i}");
                    let ino = back.lookup(back.root(), name.as_bytes()).unwrap();
                    let mut buf = vec![0; 64];
                    let n = back.read(ino, 0, &mut buf).unwrap();
                    assert_eq!(&buf[..n], name.as_bytes(), "merge {merge}");
                }
            }
        }
    }

    /// The interleavings of a merged `sync_fs` with a checkpoint another thread writes
    /// between its look at the data version and its exclusive `cp_lock`: a full
    /// checkpoint there makes the call's own unneeded (merged), GC's, which leaves
    /// files' dirty pages, does not, and the call writes them.
    #[test]
    fn a_merged_sync_fs_writes_the_data_a_gc_checkpoint_in_between_left() {
        let fs = Fs::open_device_with(Box::new(MemDevice::new(image(64))), "mem", RW).unwrap();
        let rw = fs.rw().unwrap();
        let f = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        fs.write(f, 0, &[1; 8192]).unwrap();
        // A full checkpoint in between: merged.
        let seen = rw.cp_shared().data_version();
        let v = fs.write_checkpoint().unwrap().version;
        fs.sync_fs_after(rw, Some(seen)).unwrap();
        assert_eq!(version(&fs), v, "merged with the full checkpoint in between");
        // GC's checkpoint in between: the call writes its own, with the file's pages.
        fs.write(f, 0, &[2; 8192]).unwrap();
        let seen = rw.cp_shared().data_version();
        let gc = {
            let mut writer = rw.cp_exclusive();
            fs.checkpoint_locked_without_file_data(rw, &mut writer).unwrap().version
        };
        assert_eq!(rw.pages().inode_len(f), 2, "GC's checkpoint wrote the file's pages");
        fs.sync_fs_after(rw, Some(seen)).unwrap();
        assert!(version(&fs) > gc, "sync_fs took GC's checkpoint for a full one");
        assert_eq!(rw.pages().inode_len(f), 0, "sync_fs left the file's pages dirty");
    }
}
