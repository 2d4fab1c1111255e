//! The periodic checkpoint thread of a read-write mount: wakes a few times per interval
//! and asks the core for a checkpoint ([`uf2fs_core::Fs::checkpoint_if_due`], which
//! writes one only when something changed and the interval passed, or prefree segments
//! or dirty NAT entries pile up).
//!
//! [`Checkpointer::stop`] (also on drop) wakes the thread and joins it, so no
//! background checkpoint runs once it returns: the mount stops it before the unmount
//! checkpoint. A failed background checkpoint is reported once on stderr and ends the
//! thread; the core has marked the file system failed, so every later change (and the
//! unmount) fails too, which is how the error reaches users.

use crate::worker::Worker;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use uf2fs_core::Fs;

/// Longest sleep between checks (the dirty-NAT and prefree rules are checked this often
/// even with a long interval).
const TICK_MAX: Duration = Duration::from_secs(1);
/// Shortest sleep between checks.
const TICK_MIN: Duration = Duration::from_millis(10);

/// The running thread.
pub(crate) struct Checkpointer(Worker);

impl Checkpointer {
    /// Starts the thread for `fs` (opened read-write) with `interval` between
    /// checkpoints.
    pub(crate) fn start(fs: Arc<Fs>, interval: Duration) -> io::Result<Checkpointer> {
        let tick = tick(interval);
        let worker = Worker::start("uf2fs-checkpoint", tick, move || match fs.checkpoint_if_due(interval) {
            Ok(_) => Some(tick),
            Err(err) => {
                eprintln!("uf2fs: background checkpoint failed: {err}; further changes will fail");
                None
            }
        })?;
        Ok(Checkpointer(worker))
    }

    /// Stops the thread and waits for it (for a checkpoint it is writing to end).
    pub(crate) fn stop(self) {
        self.0.stop();
    }
}

/// Time between checks for `interval`: a quarter of it, within [`TICK_MIN`] and
/// [`TICK_MAX`], so a checkpoint is at most a quarter interval (or a second) late.
fn tick(interval: Duration) -> Duration {
    (interval / 4).clamp(TICK_MIN, TICK_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use uf2fs_core::device::MemDevice;
    use uf2fs_core::mkfs::{mkfs, MkfsOptions};
    use uf2fs_core::OpenOptions;

    fn fs() -> Arc<Fs> {
        let img = std::env::temp_dir().join(format!("uf2fs-checkpointer-{}.img", std::process::id()));
        let opts = MkfsOptions {
            size_bytes: Some(64 << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let dev = MemDevice::new(std::fs::read(&img).unwrap());
        std::fs::remove_file(&img).unwrap();
        let rw = OpenOptions { read_write: true };
        Arc::new(Fs::open_device_with(Box::new(dev), "mem", rw).unwrap())
    }

    #[test]
    fn ticks_are_bounded() {
        assert_eq!(tick(Duration::from_secs(60)), TICK_MAX);
        assert_eq!(tick(Duration::from_secs(1)), Duration::from_millis(250));
        assert_eq!(tick(Duration::from_millis(1)), TICK_MIN);
    }

    #[test]
    fn writes_a_checkpoint_after_a_change_and_stops_promptly() {
        let fs = fs();
        let v = fs.last_checkpoint().checkpoint_ver;
        let cp = Checkpointer::start(Arc::clone(&fs), Duration::from_millis(100)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(fs.last_checkpoint().checkpoint_ver, v, "nothing changed: no checkpoint");
        fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while fs.has_unsaved_changes() {
            assert!(Instant::now() < deadline, "no periodic checkpoint within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(fs.last_checkpoint().checkpoint_ver, v + 1);
        let started = Instant::now();
        cp.stop();
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "stop took {:?}",
            started.elapsed()
        );
        // Stopped: the Fs is ours alone again, and a change stays unsaved.
        fs.create(fs.root(), b"g", 0o644, 0, 0).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(fs.has_unsaved_changes());
        assert_eq!(Arc::strong_count(&fs), 1);
    }
}
