//! When the newest checkpoint was written: the clock the periodic checkpoint
//! ([`super::periodic`]) reads, kept by the read-write state.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// The newest checkpoint version seen and when it was written (or first seen).
#[derive(Debug)]
pub(crate) struct CheckpointTimer {
    last: Mutex<(u64, Duration)>,
}

impl CheckpointTimer {
    /// Starts at the opened checkpoint, written at `now` (the file system's clock).
    pub(crate) fn new(version: u64, now: Duration) -> CheckpointTimer {
        CheckpointTimer {
            last: Mutex::new((version, now)),
        }
    }

    /// Time from when checkpoint `version`, the newest durable one, was written to
    /// `now`; a version not seen before counts from `now`.
    pub(crate) fn since(&self, version: u64, now: Duration) -> Duration {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.0 != version {
            *last = (version, now);
        }
        now.saturating_sub(last.1)
    }

    /// Checkpoint `version` was written at `now`.
    pub(crate) fn written(&self, version: u64, now: Duration) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = (version, now);
    }
}
