//! The background cleaner's rules (the kernel's `gc_thread_func`): when it wakes, how
//! long it sleeps, and what it does.
//!
//! - It sleeps between [`MIN_SLEEP`] and [`MAX_SLEEP`]; after a pass that found no
//!   victim, [`NO_GC_SLEEP`].
//! - It cleans only when the file system is idle: no operation for [`IDLE_INTERVAL`].
//!   Otherwise it sleeps longer (one [`MIN_SLEEP`] more, up to [`MAX_SLEEP`]).
//! - When idle, it runs one pass: background (one victim, by cost-benefit or the
//!   policy's background rule), or foreground with `background_gc=sync`. It sleeps less
//!   when there are many invalid blocks and little free space (more than 40% of the
//!   user blocks invalid while free blocks are under 40% of the invalid ones, the
//!   kernel's `has_enough_invalid_blocks`), more otherwise.
//!
//! [`Fs::background_gc_step`] does one wake-up; [`crate::background`] runs it, on a
//! thread for a mount or at the times of a simulated clock.

use super::GcKind;
use crate::{BackgroundGc, Fs, Result};
use std::time::Duration;

/// Shortest sleep (the kernel's `DEF_GC_THREAD_MIN_SLEEP_TIME`).
pub const MIN_SLEEP: Duration = Duration::from_secs(30);
/// Longest sleep while there is work (`DEF_GC_THREAD_MAX_SLEEP_TIME`).
pub const MAX_SLEEP: Duration = Duration::from_secs(60);
/// Sleep after a pass found nothing to clean (`DEF_GC_THREAD_NOGC_SLEEP_TIME`).
pub const NO_GC_SLEEP: Duration = Duration::from_secs(300);
/// Time without operations after which the file system counts as idle
/// (`DEF_IDLE_INTERVAL`).
pub const IDLE_INTERVAL: Duration = Duration::from_secs(5);

/// The sleep times of one background cleaner (the kernel's defaults unless set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BgTimes {
    /// Shortest sleep (`MIN_SLEEP` by default).
    pub min: Duration,
    /// Longest sleep while there is work (`MAX_SLEEP` by default).
    pub max: Duration,
    /// Sleep after a pass found nothing to clean (`NO_GC_SLEEP` by default).
    pub no_gc: Duration,
    /// Time without operations after which the file system is idle (`IDLE_INTERVAL`
    /// by default).
    pub idle: Duration,
}

impl Default for BgTimes {
    fn default() -> BgTimes {
        BgTimes {
            min: MIN_SLEEP,
            max: MAX_SLEEP,
            no_gc: NO_GC_SLEEP,
            idle: IDLE_INTERVAL,
        }
    }
}

/// What one wake-up did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BgOutcome {
    /// The file system was busy: nothing done.
    Busy,
    /// A pass ran and emptied this many sections.
    Cleaned(u64),
    /// A pass ran and found no victim.
    NothingToClean,
    /// `background_gc=off`: nothing done.
    Off,
}

/// A background cleaner's state: its next sleep.
#[derive(Debug, Clone, Copy)]
pub struct BgCleaner {
    times: BgTimes,
    wait: Duration,
}

impl BgCleaner {
    /// A cleaner with `times`, first sleeping `times.min`.
    pub fn new(times: BgTimes) -> BgCleaner {
        BgCleaner { times, wait: times.min }
    }

    /// How long to sleep before the next wake-up.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    fn increase(&mut self) {
        if self.wait == self.times.no_gc {
            return;
        }
        self.wait = (self.wait + self.times.min).min(self.times.max);
    }

    fn decrease(&mut self) {
        if self.wait == self.times.no_gc {
            self.wait = self.times.max;
        }
        if self.wait > self.times.min {
            self.wait = self.wait.saturating_sub(self.times.min).max(self.times.min);
        }
    }
}

impl Fs {
    /// One wake-up of the background cleaner (see the module notes); afterwards sleep
    /// `cleaner.wait()`. Errors are the GC's (the file system is then failed).
    pub fn background_gc_step(&self, cleaner: &mut BgCleaner) -> Result<BgOutcome> {
        let mode = self.settings().background_gc;
        if mode == BackgroundGc::Off {
            return Ok(BgOutcome::Off);
        }
        let rw = self.rw()?;
        let (last_op, now) = {
            let g = rw.gc();
            (g.last_op, g.clock.now())
        };
        if last_op.is_some_and(|t| now.saturating_sub(t) < cleaner.times.idle) {
            cleaner.increase();
            return Ok(BgOutcome::Busy);
        }
        if self.has_enough_invalid_blocks(rw) {
            cleaner.decrease();
        } else {
            cleaner.increase();
        }
        let kind = if mode == BackgroundGc::Sync {
            GcKind::Foreground
        } else {
            GcKind::Background
        };
        match self.gc(kind)? {
            0 => {
                cleaner.wait = cleaner.times.no_gc;
                Ok(BgOutcome::NothingToClean)
            }
            n => Ok(BgOutcome::Cleaned(n)),
        }
    }

    /// Many invalid blocks and little free space (the kernel's
    /// `has_enough_invalid_blocks`).
    fn has_enough_invalid_blocks(&self, rw: &crate::fs::ReadWrite) -> bool {
        let s = rw.segs();
        let user = self.checkpoint().user_block_count;
        let invalid = user.saturating_sub(s.valid_block_count());
        let free = s.free_user_blocks();
        invalid > user * 40 / 100 && free < invalid * 40 / 100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_grow_and_shrink_within_bounds() {
        let t = BgTimes {
            min: Duration::from_millis(10),
            max: Duration::from_millis(40),
            no_gc: Duration::from_millis(100),
            idle: Duration::ZERO,
        };
        let mut c = BgCleaner::new(t);
        assert_eq!(c.wait(), t.min);
        for _ in 0..10 {
            c.increase();
        }
        assert_eq!(c.wait(), t.max);
        c.decrease();
        assert_eq!(c.wait(), Duration::from_millis(30));
        c.wait = t.no_gc;
        c.increase();
        assert_eq!(c.wait(), t.no_gc, "no growth past the no-GC sleep");
        c.decrease();
        assert_eq!(c.wait(), Duration::from_millis(30));
    }
}
