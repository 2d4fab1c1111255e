//! When the newest checkpoint was written: the clock the periodic checkpoint
//! ([`super::periodic`]) reads, kept by the read-write state.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The newest checkpoint version seen and when it was written (or first seen).
#[derive(Debug)]
pub(crate) struct CheckpointTimer {
    last: Mutex<(u64, Instant)>,
}

impl CheckpointTimer {
    /// Starts at the opened checkpoint, counted from now.
    pub(crate) fn new(version: u64) -> CheckpointTimer {
        CheckpointTimer {
            last: Mutex::new((version, Instant::now())),
        }
    }

    /// Time since checkpoint `version`, the newest durable one, was written; a version
    /// not seen before counts from now.
    pub(crate) fn since(&self, version: u64) -> Duration {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if last.0 != version {
            *last = (version, Instant::now());
        }
        last.1.elapsed()
    }

    /// Checkpoint `version` was just written.
    pub(crate) fn written(&self, version: u64) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = (version, Instant::now());
    }
}
