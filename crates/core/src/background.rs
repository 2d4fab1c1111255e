//! Background work of a read-write file system, in the core so that a mount and a
//! simulation run the same rules: the periodic checkpoint
//! ([`Fs::checkpoint_if_due`]), the background cleaner ([`Fs::background_gc_step`],
//! F2FS's GC thread) and the paced cleaner ([`Fs::paced_gc_step`], `gc_pacing=`). They
//! read the file system's clock ([`crate::clock`]).
//!
//! - [`Background::start`] runs them on threads that sleep real time (a mount: the FUSE
//!   crate only starts and stops them). [`Background::stop`] (also on drop) wakes and
//!   joins the threads, so no step runs once it returns: stop before the unmount
//!   checkpoint. A failed step is reported once on stderr and ends its thread; the core
//!   has marked the file system failed, so every later change (and the unmount) fails
//!   too, which is how the error reaches users.
//! - [`Simulated`] runs them at the times a [`crate::clock::ManualClock`] reaches, on
//!   the caller's thread, deterministically (the lab, tests).

use crate::gc::{BgCleaner, BgTimes, GcPacing};
use crate::{BackgroundGc, Fs, Result};
use std::io;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest time between checks for a due checkpoint (the dirty-NAT and prefree rules
/// are checked this often even with a long interval).
pub const CHECKPOINT_TICK_MAX: Duration = Duration::from_secs(1);
/// Shortest time between checks for a due checkpoint.
pub const CHECKPOINT_TICK_MIN: Duration = Duration::from_millis(10);

/// How long the paced cleaner waits after a step found no room to move blocks to.
pub const PACED_NO_SPACE_WAIT: Duration = Duration::from_millis(100);

/// Time between checks for a due checkpoint with `interval`: a quarter of it, within
/// [`CHECKPOINT_TICK_MIN`] and [`CHECKPOINT_TICK_MAX`], so a checkpoint is at most a
/// quarter interval (or a second) late.
pub fn checkpoint_tick(interval: Duration) -> Duration {
    (interval / 4).clamp(CHECKPOINT_TICK_MIN, CHECKPOINT_TICK_MAX)
}

/// What runs in the background.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackgroundOptions {
    /// Periodic checkpoints every so often (`None` or zero: none).
    pub checkpoint_interval: Option<Duration>,
    /// The background cleaner's sleeps (`None`: no cleaner; it also stays idle under
    /// `background_gc=off`).
    pub gc: Option<BgTimes>,
    /// One flusher thread per writeback context ([`crate::writeback::flusher`]):
    /// writers return once their pages are cached, and contexts write in parallel.
    pub writeback_threads: bool,
    /// The paced cleaner's thread ([`Fs::paced_gc_step`], sleeping what each step
    /// returns), started only when the pacer chosen with [`Fs::set_gc_pacing`] before
    /// [`Background::start`] is not `off`: under `off` nothing more runs.
    pub paced_gc: bool,
}

impl Fs {
    /// Makes `clock` the time background work reads from now on (before any other
    /// use: a simulation's [`crate::clock::ManualClock`]); the last checkpoint counts
    /// as written at its current time. Read-write only.
    pub fn set_clock(&self, clock: Arc<dyn crate::clock::Clock>) -> Result<()> {
        let rw = self.rw()?;
        let now = clock.now();
        {
            let mut g = rw.gc();
            g.clock = clock;
            g.forget_ops();
        }
        rw.cp_timer().written(self.last_checkpoint().checkpoint_ver, now);
        Ok(())
    }

    /// The time on the file system's clock (zero on a read-only one).
    pub fn now(&self) -> Duration {
        match self.rw() {
            Ok(rw) => rw.gc().clock.now(),
            Err(_) => Duration::ZERO,
        }
    }
}

/// A thread that wakes after a wait, does one step, and stops promptly when asked.
struct Worker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts thread `name`: it sleeps `first_wait`, then runs `step`, which returns
    /// the next wait, or `None` to end the thread.
    fn start(
        name: &str,
        first_wait: Duration,
        mut step: impl FnMut() -> Option<Duration> + Send + 'static,
    ) -> io::Result<Worker> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
            let (stopped, wake) = &*flag;
            let mut wait = first_wait;
            loop {
                let guard = stopped.lock().unwrap_or_else(PoisonError::into_inner);
                let (guard, _) = wake
                    .wait_timeout_while(guard, wait, |stopped| !*stopped)
                    .unwrap_or_else(PoisonError::into_inner);
                if *guard {
                    return;
                }
                drop(guard);
                match step() {
                    Some(next) => wait = next,
                    None => return,
                }
            }
        })?;
        Ok(Worker {
            stop,
            thread: Some(thread),
        })
    }

    fn stop_and_join(&mut self) {
        let (flag, wake) = &*self.stop;
        *flag.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panic in the thread has already been printed; go on to unmount.
            let _ = thread.join();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The background threads of a mount.
pub struct Background {
    workers: Vec<Worker>,
    flushers: Option<crate::writeback::flusher::Flushers>,
}

impl Background {
    /// Starts what `opts` asks for on `fs` (opened read-write): the checkpoint thread,
    /// the background cleaner (not under `background_gc=off`), the paced cleaner (not
    /// under `gc_pacing=off`) and the flushers.
    pub fn start(fs: &Arc<Fs>, opts: BackgroundOptions) -> io::Result<Background> {
        let mut workers = Vec::new();
        if let Some(interval) = opts.checkpoint_interval.filter(|i| !i.is_zero()) {
            let tick = checkpoint_tick(interval);
            let fs = Arc::clone(fs);
            workers.push(Worker::start("uf2fs-checkpoint", tick, move || {
                match fs.checkpoint_if_due(interval) {
                    Ok(_) => Some(tick),
                    Err(err) => {
                        eprintln!("uf2fs: background checkpoint failed: {err}; further changes will fail");
                        None
                    }
                }
            })?);
        }
        if let Some(times) = opts.gc.filter(|_| fs.settings().background_gc != BackgroundGc::Off) {
            let mut cleaner = BgCleaner::new(times);
            let first = cleaner.wait();
            let fs = Arc::clone(fs);
            workers.push(Worker::start("uf2fs-gc", first, move || {
                match fs.background_gc_step(&mut cleaner) {
                    Ok(_) => Some(cleaner.wait()),
                    Err(err) => {
                        eprintln!("uf2fs: background garbage collection failed: {err}; further changes will fail");
                        None
                    }
                }
            })?);
        }
        let pacing = if opts.paced_gc {
            fs.gc_pacing().map_err(io::Error::other)?.pacing
        } else {
            GcPacing::Off
        };
        if pacing != GcPacing::Off {
            let fs = Arc::clone(fs);
            workers.push(Worker::start("uf2fs-paced-gc", Duration::ZERO, move || {
                match fs.paced_gc_step() {
                    Ok(wake) => Some(wake.wait),
                    // No room for a step's moved blocks: the file system is not failed
                    // (writers get ENOSPC themselves); look again once deletes may have
                    // made room.
                    Err(err) if err.is_no_space() => Some(PACED_NO_SPACE_WAIT),
                    Err(err) => {
                        eprintln!("uf2fs: paced garbage collection failed: {err}; further changes will fail");
                        None
                    }
                }
            })?);
        }
        let flushers = if opts.writeback_threads {
            Some(crate::writeback::flusher::Flushers::start(fs)?)
        } else {
            None
        };
        Ok(Background { workers, flushers })
    }

    /// Stops the threads and waits for them (for a step one is running to end).
    pub fn stop(mut self) {
        if let Some(f) = self.flushers.take() {
            f.stop();
        }
        for w in &mut self.workers {
            w.stop_and_join();
        }
    }
}

/// Background work at the times of a simulated clock, run by the caller
/// ([`Simulated::run_due`] after moving the clock).
#[derive(Debug, Clone)]
pub struct Simulated {
    checkpoint: Option<(Duration, Duration, Duration)>,
    gc: Option<(BgCleaner, Duration)>,
}

impl Simulated {
    /// The work `opts` asks for, first due one tick (a cleaner's first sleep) after
    /// `now`.
    pub fn new(opts: BackgroundOptions, now: Duration) -> Simulated {
        let checkpoint = opts.checkpoint_interval.filter(|i| !i.is_zero()).map(|interval| {
            let tick = checkpoint_tick(interval);
            (interval, tick, now + tick)
        });
        let gc = opts.gc.map(|times| {
            let cleaner = BgCleaner::new(times);
            let next = now + cleaner.wait();
            (cleaner, next)
        });
        Simulated { checkpoint, gc }
    }

    /// When the next wake-up is due (`None`: nothing runs), so that a simulation can
    /// move its clock from one to the next.
    pub fn next_due(&self) -> Option<Duration> {
        let cp = self.checkpoint.map(|(_, _, at)| at);
        let gc = self.gc.as_ref().map(|(_, at)| *at);
        match (cp, gc) {
            (Some(c), Some(g)) => Some(c.min(g)),
            (c, g) => c.or(g),
        }
    }

    /// Runs every wake-up due by the file system's clock now, in time order (a
    /// checkpoint check before a cleaner wake-up due at the same time). Returns the
    /// wake-ups run.
    pub fn run_due(&mut self, fs: &Fs) -> Result<u64> {
        let now = fs.now();
        let mut ran = 0;
        loop {
            let cp_at = self.checkpoint.map(|(_, _, at)| at).filter(|at| *at <= now);
            let gc_at = self.gc.as_ref().map(|(_, at)| *at).filter(|at| *at <= now);
            match (cp_at, gc_at) {
                (Some(c), g) if g.is_none_or(|g| c <= g) => {
                    if let Some((interval, tick, at)) = &mut self.checkpoint {
                        fs.checkpoint_if_due(*interval)?;
                        *at += *tick;
                    }
                }
                (_, Some(_)) => {
                    if let Some((cleaner, at)) = &mut self.gc {
                        fs.background_gc_step(cleaner)?;
                        *at += cleaner.wait();
                    }
                }
                _ => return Ok(ran),
            }
            ran += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::background::{checkpoint_tick, Background, BackgroundOptions, Simulated};
    use crate::clock::ManualClock;
    use crate::device::MemDevice;
    use crate::gc::{BgTimes, GcPacing, PacingSettings};
    use crate::mkfs::{mkfs, MkfsOptions};
    use crate::{Fs, OpenOptions};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn fs(name: &str, mib: u64) -> Arc<Fs> {
        let img = std::env::temp_dir().join(format!("uf2fs-bg-{name}-{}.img", std::process::id()));
        let opts = MkfsOptions {
            size_bytes: Some(mib << 20),
            ..MkfsOptions::default()
        };
        mkfs(&img, &opts).unwrap();
        let dev = MemDevice::new(std::fs::read(&img).unwrap());
        std::fs::remove_file(&img).unwrap();
        let rw = OpenOptions { read_write: true };
        Arc::new(Fs::open_device_with(Box::new(dev), "mem", rw).unwrap())
    }

    /// Two segments' worth of blocks, every other one then rewritten: partly valid
    /// segments for the cleaner. Returns the file's inode.
    fn half_valid_file(fs: &Fs) -> u32 {
        let ino = fs.create(fs.root(), b"f", 0o644, 0, 0).unwrap().ino;
        for i in 0..1024u64 {
            fs.write(ino, i * 4096, &[1; 4096]).unwrap();
        }
        fs.write_checkpoint().unwrap();
        for i in (0..1024u64).step_by(2) {
            fs.write(ino, i * 4096, &[2; 4096]).unwrap();
        }
        fs.write_checkpoint().unwrap();
        ino
    }

    fn check_file(fs: &Fs, ino: u32) {
        let mut buf = vec![0u8; 4096];
        for i in 0..1024u64 {
            fs.read(ino, i * 4096, &mut buf).unwrap();
            assert_eq!(buf[0], if i % 2 == 0 { 2 } else { 1 }, "block {i}");
        }
    }

    #[test]
    fn ticks_are_bounded() {
        assert_eq!(checkpoint_tick(Duration::from_secs(60)), Duration::from_secs(1));
        assert_eq!(checkpoint_tick(Duration::from_secs(1)), Duration::from_millis(250));
        assert_eq!(checkpoint_tick(Duration::from_millis(1)), Duration::from_millis(10));
    }

    #[test]
    fn threads_checkpoint_after_a_change_and_stop_promptly() {
        let fs = fs("cp", 64);
        let v = fs.last_checkpoint().checkpoint_ver;
        let opts = BackgroundOptions {
            checkpoint_interval: Some(Duration::from_millis(100)),
            gc: None,
            writeback_threads: false,
            paced_gc: false,
        };
        let bg = Background::start(&fs, opts).unwrap();
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
        bg.stop();
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

    #[test]
    fn the_cleaner_thread_cleans_an_idle_volume_and_stops_promptly() {
        let fs = fs("gc", 128);
        let ino = half_valid_file(&fs);
        let times = BgTimes {
            min: Duration::from_millis(20),
            max: Duration::from_millis(40),
            no_gc: Duration::from_millis(200),
            idle: Duration::from_millis(50),
        };
        let opts = BackgroundOptions {
            checkpoint_interval: None,
            gc: Some(times),
            writeback_threads: false,
            paced_gc: false,
        };
        let bg = Background::start(&fs, opts).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while fs.gc_stats().unwrap().sections_freed == 0 {
            assert!(Instant::now() < deadline, "no background pass within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(fs.gc_stats().unwrap().bg_calls > 0);
        let started = Instant::now();
        bg.stop();
        assert!(started.elapsed() < Duration::from_secs(1));
        check_file(&fs, ino);
    }

    /// The paced cleaner's thread runs only when a pacer is chosen, takes steps and
    /// empties victims on its own (a start margin wider than the volume: it starts at
    /// once), and leaves the data intact.
    #[test]
    fn the_paced_thread_steps_only_under_a_pacer_and_stops_promptly() {
        let opts = BackgroundOptions {
            checkpoint_interval: None,
            gc: None,
            writeback_threads: false,
            paced_gc: true,
        };
        let wide = |pacing| PacingSettings {
            pacing,
            start_margin: 1000,
            ..PacingSettings::default()
        };
        // Off: no thread (nothing to stop, and no step ever taken).
        let off = fs("paced-off", 128);
        let ino = half_valid_file(&off);
        off.set_gc_pacing(wide(GcPacing::Off)).unwrap();
        let bg = Background::start(&off, opts).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        bg.stop();
        assert_eq!(off.pacing_stats().unwrap().steps, 0);
        assert_eq!(off.gc_stats().unwrap().sections_freed, 0);
        check_file(&off, ino);
        for pacing in [GcPacing::Seed, GcPacing::Adaptive] {
            let fs = fs(pacing.name(), 128);
            let ino = half_valid_file(&fs);
            fs.set_gc_pacing(wide(pacing)).unwrap();
            let bg = Background::start(&fs, opts).unwrap();
            let deadline = Instant::now() + Duration::from_secs(20);
            while fs.pacing_stats().unwrap().sections_freed == 0 {
                assert!(
                    Instant::now() < deadline,
                    "{pacing}: no paced victim emptied within 20 s"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            bg.stop();
            let p = fs.pacing_stats().unwrap();
            assert!(p.steps > 0 && p.victims > 0, "{pacing}: {p:?}");
            check_file(&fs, ino);
            fs.write_checkpoint().unwrap();
            check_file(&fs, ino);
        }
    }

    /// The kernel's sleeps (30 s to 5 min, 5 s of idleness) on a simulated clock: no
    /// waiting, the same decisions at the same simulated times every run.
    #[test]
    fn simulated_time_runs_the_cleaner_and_the_checkpoints_deterministically() {
        let run = || {
            let fs = fs("sim", 128);
            let clock = Arc::new(ManualClock::new());
            fs.set_clock(clock.clone()).unwrap();
            let ino = half_valid_file(&fs);
            let opts = BackgroundOptions {
                checkpoint_interval: Some(Duration::from_secs(60)),
                gc: Some(BgTimes::default()),
                writeback_threads: false,
                paced_gc: false,
            };
            let mut sim = Simulated::new(opts, fs.now());
            let mut log = Vec::new();
            for second in 1..=600u64 {
                clock.advance(Duration::from_secs(1));
                // Busy for the first two minutes: an operation every 2 s.
                if second <= 120 && second % 2 == 0 {
                    fs.write(ino, 4096 * 1024 + second * 4096, &[3; 4096]).unwrap();
                }
                sim.run_due(&fs).unwrap();
                let s = fs.gc_stats().unwrap();
                log.push((s.bg_calls, s.sections_freed, fs.last_checkpoint().checkpoint_ver));
            }
            check_file(&fs, ino);
            log
        };
        let log = run();
        let at = |sec: usize| log[sec - 1];
        // Busy (an operation every 2 s, under the 5 s idle rule): no pass in the first
        // two minutes; the writes are checkpointed by the periodic rule meanwhile.
        assert_eq!(at(120).0, 0, "a pass ran while busy");
        assert!(at(120).2 > at(1).2, "no periodic checkpoint of the writes");
        // Idle afterwards: the cleaner runs and empties a section.
        assert!(at(600).0 > 0 && at(600).1 > 0, "{:?}", at(600));
        // Simulated time: the same run gives the same history.
        let again = run();
        let strip = |l: &[(u64, u64, u64)]| l.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>();
        assert_eq!(strip(&log), strip(&again));
    }
}
