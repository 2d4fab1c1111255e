//! Idle time in the WAF lab: the front writer pauses now and then, and the mount's
//! background work (F2FS's background cleaner and the periodic checkpoint, the core's
//! [`uf2fs_core::background::Simulated`]) runs on a simulated clock, as it would on a
//! mount between bursts of writes (`bench waf --idle-every SIZE --idle-secs S`).
//!
//! The clock moves with the writes at the lab's rate
//! ([`crate::clock::CLOCK_BLOCKS_PER_SEC`]) and
//! through each pause from one wake-up to the next, so the background cleaner finds
//! the file system busy while the writer writes (and sleeps longer, as the kernel's
//! does) and idle in the pauses once [`uf2fs_core::gc::BgTimes::idle`] has passed.
//! Runs stay deterministic: nothing reads real time.

use crate::clock::blocks_time;
use crate::setup::Idle;
use std::sync::Arc;
use std::time::Duration;
use uf2fs_core::background::{BackgroundOptions, Simulated};
use uf2fs_core::clock::{Clock, ManualClock};
use uf2fs_core::gc::BgTimes;
use uf2fs_core::Fs;

/// F2FS's default checkpoint interval (`cp_interval`, 60 s), which a mount keeps.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

/// The pauses and the background work of one run.
pub struct Idler {
    idle: Idle,
    clock: Arc<ManualClock>,
    sim: Option<Simulated>,
    /// The clock when the overwrite phase started.
    start: Duration,
    /// Blocks written since then.
    written: u64,
    /// Blocks written since the last pause.
    since_pause: u64,
    /// Time paused so far.
    paused: Duration,
}

impl Idler {
    /// Puts `fs` on a simulated clock for `idle`'s pauses; the background work starts
    /// with [`Idler::start`].
    pub fn install(fs: &Fs, idle: Idle) -> uf2fs_core::Result<Idler> {
        let clock = Arc::new(ManualClock::new());
        fs.set_clock(clock.clone())?;
        Ok(Idler {
            idle,
            clock,
            sim: None,
            start: Duration::ZERO,
            written: 0,
            since_pause: 0,
            paused: Duration::ZERO,
        })
    }

    /// Starts the background work (at the start of the overwrite phase).
    pub fn start(&mut self) {
        let opts = BackgroundOptions {
            checkpoint_interval: Some(CHECKPOINT_INTERVAL),
            gc: Some(BgTimes::default()),
            ..BackgroundOptions::default()
        };
        self.start = self.clock.now();
        self.sim = Some(Simulated::new(opts, self.start));
    }

    /// The writer wrote `blocks` more: the clock moves on by their time, the
    /// background work due meanwhile runs, and a pause comes when one is due.
    pub fn wrote(&mut self, fs: &Fs, blocks: u64) -> uf2fs_core::Result<()> {
        let Some(sim) = self.sim.as_mut() else {
            return Ok(());
        };
        self.written += blocks;
        self.since_pause += blocks;
        let at = self.start + blocks_time(self.written) + self.paused;
        move_to(&self.clock, at);
        sim.run_due(fs)?;
        let every = self.idle.every_bytes.div_ceil(crate::setup::BLOCK_BYTES).max(1);
        while self.since_pause >= every {
            self.since_pause -= every;
            let pause = Duration::from_secs_f64(self.idle.pause_secs);
            let end = self.clock.now() + pause;
            while let Some(due) = sim.next_due().filter(|d| *d <= end) {
                move_to(&self.clock, due);
                sim.run_due(fs)?;
            }
            move_to(&self.clock, end);
            self.paused += pause;
        }
        Ok(())
    }
}

/// Moves `clock` on to `at` (never back).
fn move_to(clock: &ManualClock, at: Duration) {
    let now = clock.now();
    if at > now {
        clock.advance(at - now);
    }
}
