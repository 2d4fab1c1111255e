//! What the read-write state keeps for garbage collection: the policy and its
//! switches, the counters, the background cleaner's idle clock. The engine
//! ([`super`]) reads and updates it; the state imports nothing of the engine.

use super::pacer::PacerState;
use super::policies::PassLoop;
use super::policy::GcPolicy;
use crate::clock::{Clock, SystemClock};
use std::sync::Arc;
use std::time::Duration;

/// Garbage-collection counters since the file system was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Foreground passes (a writer waited).
    pub fg_calls: u64,
    /// Background passes.
    pub bg_calls: u64,
    /// Data sections chosen as victims.
    pub data_victims: u64,
    /// Node sections chosen as victims.
    pub node_victims: u64,
    /// Victims left without a valid block.
    pub sections_freed: u64,
    /// Data blocks moved.
    pub data_blocks_moved: u64,
    /// Node blocks moved.
    pub node_blocks_moved: u64,
    /// Checkpoints GC wrote to turn prefree sections free.
    pub checkpoints: u64,
}

/// GC settings and state of a read-write file system.
#[derive(Debug, Clone)]
pub(crate) struct GcState {
    pub(crate) policy: GcPolicy,
    /// The loop `policy`'s foreground passes run (asked of the policy once, when it is
    /// set: every operation reads it).
    pub(crate) pass_loop: PassLoop,
    /// Whether foreground GC may run (off: a full volume gives ENOSPC, as before GC).
    pub(crate) enabled: bool,
    /// The prefer-data policies' `need_node_clean`.
    pub(crate) node_clean: bool,
    pub(crate) stats: GcStats,
    /// When the last operation started, on `clock` (the background cleaner's idle
    /// rule).
    pub(crate) last_op: Option<Duration>,
    /// The clock background work reads ([`crate::clock`]).
    pub(crate) clock: Arc<dyn Clock>,
    /// Sections the default policy keeps free beyond the reserved ones for its
    /// checkpoint batches (`batching`), chosen again at every GC checkpoint.
    pub(crate) batch_extra: u32,
    /// The GC pacer: settings, the paced victim in progress, measurements and
    /// counters ([`super::pacer`]). Changed under exclusive `cp_lock` by GC only.
    pub(crate) pacer: PacerState,
}

impl Default for GcState {
    fn default() -> GcState {
        GcState {
            policy: GcPolicy::Greedy,
            pass_loop: PassLoop::Kernel,
            enabled: true,
            node_clean: false,
            stats: GcStats::default(),
            last_op: None,
            clock: Arc::new(SystemClock::new()),
            batch_extra: 0,
            pacer: PacerState::default(),
        }
    }
}

impl GcState {
    /// An operation starts now: the background cleaner's idle clock, and the front
    /// operation interval the paced cleaner fits its long steps between.
    pub(crate) fn note_op(&mut self) {
        let now = self.clock.now();
        if let Some(last) = self.last_op {
            self.pacer.op_started(now.saturating_sub(last));
        }
        self.last_op = Some(now);
    }
}
