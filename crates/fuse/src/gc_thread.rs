//! The background cleaner of a read-write mount (F2FS's GC thread): sleeps as
//! [`uf2fs_core::BgCleaner`] says, and on each wake-up runs
//! [`uf2fs_core::Fs::background_gc_step`], which cleans one victim section when the
//! file system has been idle (see the core's `gc::background`). Not started with
//! `background_gc=off`.
//!
//! [`GcThread::stop`] (also on drop) wakes and joins the thread, so no background pass
//! runs beside the unmount checkpoint. A failed pass is reported once on stderr and ends
//! the thread; the core has marked the file system failed, so later changes fail too.

use crate::worker::Worker;
use std::io;
use std::sync::Arc;
use uf2fs_core::{BgCleaner, BgTimes, Fs};

/// The running thread.
pub(crate) struct GcThread(Worker);

impl GcThread {
    /// Starts the cleaner for `fs` (opened read-write) with `times`.
    pub(crate) fn start(fs: Arc<Fs>, times: BgTimes) -> io::Result<GcThread> {
        let mut cleaner = BgCleaner::new(times);
        let first = cleaner.wait();
        let worker = Worker::start("uf2fs-gc", first, move || match fs.background_gc_step(&mut cleaner) {
            Ok(_) => Some(cleaner.wait()),
            Err(err) => {
                eprintln!("uf2fs: background garbage collection failed: {err}; further changes will fail");
                None
            }
        })?;
        Ok(GcThread(worker))
    }

    /// Stops the thread and waits for it (for a pass it is running to end).
    pub(crate) fn stop(self) {
        self.0.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use uf2fs_core::device::MemDevice;
    use uf2fs_core::mkfs::{mkfs, MkfsOptions};
    use uf2fs_core::OpenOptions;

    #[test]
    fn cleans_an_idle_volume_and_stops_promptly() {
        let img = std::env::temp_dir().join(format!("uf2fs-gc-thread-{}.img", std::process::id()));
        let opts = MkfsOptions {
            size_bytes: Some(128 << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let dev = MemDevice::new(std::fs::read(&img).unwrap());
        std::fs::remove_file(&img).unwrap();
        let fs = Arc::new(Fs::open_device_with(Box::new(dev), "mem", OpenOptions { read_write: true }).unwrap());
        // Two segments' worth of blocks, every other one then rewritten: partly valid
        // segments for the cleaner.
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        for i in 0..1024u64 {
            fs.write(ino, i * 4096, &[1; 4096]).unwrap();
        }
        fs.write_checkpoint().unwrap();
        for i in (0..1024u64).step_by(2) {
            fs.write(ino, i * 4096, &[2; 4096]).unwrap();
        }
        fs.write_checkpoint().unwrap();
        let times = BgTimes {
            min: Duration::from_millis(20),
            max: Duration::from_millis(40),
            no_gc: Duration::from_millis(200),
            idle: Duration::from_millis(50),
        };
        let t = GcThread::start(Arc::clone(&fs), times).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while fs.gc_stats().unwrap().sections_freed == 0 {
            assert!(Instant::now() < deadline, "no background pass within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(fs.gc_stats().unwrap().bg_calls > 0);
        let started = Instant::now();
        t.stop();
        assert!(started.elapsed() < Duration::from_secs(1));
        let mut buf = vec![0u8; 4096];
        for i in 0..1024u64 {
            fs.read(ino, i * 4096, &mut buf).unwrap();
            assert_eq!(buf[0], if i % 2 == 0 { 2 } else { 1 }, "block {i}");
        }
    }
}
