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
    /// When the last operation would have started had front I/O come on schedule
    /// ([`GcState::op_on_schedule`]).
    pub(crate) op_sched: Option<Duration>,
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
            op_sched: None,
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
        // A front operation at a steady rate that waited (for GC) starts late; the
        // one after it comes on time, one interval after the one before.
        self.op_sched = Some(match (self.last_op, self.pacer.op_interval_ns) {
            (Some(last), Some(interval)) => now.min(last + Duration::from_nanos(interval as u64)),
            _ => now,
        });
        self.last_op = Some(now);
    }

    /// When the last operation would have started had it come on schedule: at most
    /// one measured interval after the one before it. Front I/O at a steady rate that
    /// waited for GC starts late, and the next operation comes sooner after it than
    /// one interval. The paced cleaner predicts the next gap in front I/O from this
    /// time ([`super::pacer::fits_gap`]): from the last start alone, a zone reset
    /// begun just after a late write took part of the next write's gap, and the
    /// write after that was late in turn (the seed preset at 50% load: clat p99.9
    /// 5.9 ms, 5.1 ms from this time). A lower envelope over more operations drifted
    /// with the measured interval (the small preset's max: 0.55 ms to 3.3 ms).
    pub(crate) fn op_on_schedule(&self) -> Option<Duration> {
        self.op_sched.or(self.last_op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    /// A front operation that started late is taken to have been due one interval
    /// after the one before it; an early or idle-ended one is taken as it started.
    #[test]
    fn a_late_operation_is_placed_on_its_schedule() {
        let clock = Arc::new(ManualClock::new());
        let mut g = GcState {
            clock: clock.clone(),
            ..GcState::default()
        };
        let ms = Duration::from_millis;
        let on_time = |g: &GcState| g.op_on_schedule().map(|t| t.saturating_sub(ms(1000)));
        clock.advance(ms(1000));
        for _ in 0..20 {
            g.note_op();
            clock.advance(ms(3));
        }
        // Every 3 ms: the last one started on time.
        assert_eq!(on_time(&g), Some(ms(57)));
        // The next one waits 2 ms (for GC) and starts 5 ms after the last: due at 3.
        clock.advance(ms(2));
        g.note_op();
        assert_eq!(g.last_op, Some(ms(1000 + 62)));
        let due = on_time(&g).unwrap();
        assert!(due >= ms(60) && due < ms(61), "{due:?}");
        // The one after it comes on time, 1 ms after it.
        clock.advance(ms(1));
        g.note_op();
        let due = on_time(&g).unwrap();
        assert_eq!(due, ms(63));
        // Nothing measured yet: as it started.
        let mut fresh = GcState {
            clock: clock.clone(),
            ..GcState::default()
        };
        fresh.note_op();
        assert_eq!(fresh.op_on_schedule(), Some(clock.now()));
    }
}
