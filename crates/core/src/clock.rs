//! The time background work reads: when the last operation started (the background
//! cleaner's idle rule), when the last checkpoint was written (the periodic
//! checkpoint). A mount reads the system's monotonic clock ([`SystemClock`]); a
//! simulation sets a [`ManualClock`] with [`crate::Fs::set_clock`] and moves it itself,
//! so that background GC and checkpoints run at simulated times, deterministically
//! ([`crate::background::Simulated`]).

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A monotonic clock: the time since its own start.
pub trait Clock: Send + Sync + Debug {
    /// Time since the clock started; never goes back.
    fn now(&self) -> Duration;
}

/// The system's monotonic clock, counted from when this value was made.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    start: Instant,
}

impl SystemClock {
    /// A clock starting now.
    pub fn new() -> SystemClock {
        SystemClock { start: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> SystemClock {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

/// A clock that moves only when told to (simulations, tests).
#[derive(Debug, Default)]
pub struct ManualClock {
    nanos: AtomicU64,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let n = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(n, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

/// CPU time the calling thread has used, from Linux's `/proc/thread-self/schedstat`
/// (its first field, in nanoseconds); `None` where the system does not tell.
pub fn thread_cpu_time() -> Option<Duration> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok().map(Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    use crate::clock::{Clock, ManualClock, SystemClock};
    use std::time::Duration;

    #[test]
    fn clocks_move_forward() {
        let m = ManualClock::new();
        assert_eq!(m.now(), Duration::ZERO);
        m.advance(Duration::from_secs(3));
        m.advance(Duration::from_millis(5));
        assert_eq!(m.now(), Duration::from_millis(3005));
        let s = SystemClock::new();
        let a = s.now();
        assert!(s.now() >= a);
    }
}
