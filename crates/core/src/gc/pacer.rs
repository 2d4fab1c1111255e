//! GC pacing: cleaning in small steps ahead of need, so that front I/O waits for a
//! step, not for a whole victim (the 2025 bcache patch "process fewer btree nodes in
//! incremental GC cycles", applied to F2FS sections). This file holds the pacers'
//! settings, their state and their arithmetic; the engine that takes the steps is
//! `gc/paced.rs`. It imports nothing of the engine.
//!
//! Pacers (`gc_pacing=`):
//! - `off`: no paced cleaning; foreground GC empties whole victims while a writer waits
//!   (uf2fs before pacing, and the baseline).
//! - `seed`: the patch as published, with a moved block for a btree node and one victim
//!   section for one GC run: steps of at least [`SEED_MIN_BLOCKS`] blocks, a
//!   [`SEED_SLEEP`] sleep after a step while front I/O is in flight, and the step
//!   rescaled from the average interval between victims so that a victim takes at most
//!   half of it ([`seed_step`]).
//! - `adaptive`: uf2fs's own. Steps sized from the measured cost of a moved block so
//!   that one step takes half the latency target ([`adaptive_step`]); sleeps sized from
//!   the measured front write rate so that cleaning frees sections as fast as writes
//!   take them, shortened as free sections near the floor ([`adaptive_sleep`]).
//!
//! Both paced pacers start a victim only when free sections are within the start
//! margin of the foreground threshold ([`PacingSettings::start_margin`], by default
//! [`auto_start_margin`] of the volume's spare sections). In its upper part, and while
//! writers clean for themselves, the cleaner picks ahead of need, by age; in its last
//! two sections as the policy's foreground GC (`gc/paced.rs`, `Fs::paced_ahead`). The
//! hard floor is the foreground rule itself: when an operation finds no room, the
//! writer finishes the victim in progress without sleeping, and only if that is not
//! enough runs a foreground pass.

use super::cursor::Migration;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The seed's `GC_MIN_NODES`: the smallest step, in blocks moved.
pub const SEED_MIN_BLOCKS: u32 = 10;
/// The seed's `GC_SLEEP_MS`: the sleep after a step while front I/O is in flight.
pub const SEED_SLEEP: Duration = Duration::from_millis(10);
/// `gc_latency_target_us`'s default.
pub const DEFAULT_LATENCY_TARGET: Duration = Duration::from_micros(1000);
/// Front I/O is in flight when an operation started at most this long ago.
pub const BUSY_WINDOW: Duration = Duration::from_millis(2);
/// The largest start margin chosen by itself ([`auto_start_margin`]): sections above
/// the foreground threshold at which paced cleaning starts a victim. The top
/// `margin - 2` of them are worked as background GC (the policy's background choice),
/// the last two as foreground GC; see docs/gc-pacing.md for the measurements behind 5.
pub const START_MARGIN_SECS: u32 = 5;
/// The smallest start margin chosen by itself.
pub const MIN_START_MARGIN_SECS: u32 = 2;
/// [`PacingSettings::start_margin`]'s value that asks for [`auto_start_margin`].
pub const AUTO_START_MARGIN: u32 = 0;

/// The start margin for a volume with `spare` sections beyond what its valid blocks
/// fill: a tenth of them, from [`MIN_START_MARGIN_SECS`] to [`START_MARGIN_SECS`].
/// Sections the cleaner keeps free ahead of need are spare space the victims do not
/// get: on a 256 MiB volume 90% full (a dozen spare sections) five of them cost 5% of
/// WAF on the mount, on the small preset (about 50) they are what lets the cleaner
/// choose old sections and cut WAF.
pub fn auto_start_margin(spare: u32) -> u32 {
    (spare / 10).clamp(MIN_START_MARGIN_SECS, START_MARGIN_SECS)
}
/// How often an idle paced cleaner looks again.
pub const IDLE_POLL: Duration = Duration::from_millis(1);
/// The longest sleep the adaptive pacer takes between steps.
pub const ADAPTIVE_MAX_SLEEP: Duration = Duration::from_millis(100);
/// How much faster than writes consume sections the adaptive pacer plans to free
/// them: the victims' moves are not all of GC's work (the nodes they dirty are written
/// ahead of the checkpoint, and the checkpoint itself takes device time).
pub const KEEP_AHEAD: f64 = 1.25;
/// The largest step, in blocks (one segment).
pub const MAX_STEP_BLOCKS: u32 = 512;

/// `gc_pacing=off|seed|adaptive`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum GcPacing {
    /// No paced cleaning (the baseline).
    #[default]
    Off,
    /// The bcache patch as published.
    Seed,
    /// uf2fs's latency-target pacer.
    Adaptive,
}

impl GcPacing {
    /// Every pacer, in the lab's order.
    pub const ALL: [GcPacing; 3] = [GcPacing::Off, GcPacing::Seed, GcPacing::Adaptive];

    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            GcPacing::Off => "off",
            GcPacing::Seed => "seed",
            GcPacing::Adaptive => "adaptive",
        }
    }
}

impl fmt::Display for GcPacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GcPacing {
    type Err = String;

    fn from_str(s: &str) -> Result<GcPacing, String> {
        GcPacing::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown GC pacer '{s}' (known: off, seed, adaptive)"))
    }
}

/// A pacer and its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacingSettings {
    /// The pacer.
    pub pacing: GcPacing,
    /// The adaptive pacer's aim for a front operation's wait (`gc_latency_target_us`).
    pub latency_target: Duration,
    /// Sections above the foreground threshold at which paced cleaning starts;
    /// [`AUTO_START_MARGIN`] (the default): chosen from the volume's spare sections
    /// ([`auto_start_margin`]).
    pub start_margin: u32,
    /// Front I/O is in flight when an operation started at most this long ago.
    pub busy_window: Duration,
    /// How often an idle paced cleaner looks again.
    pub idle_poll: Duration,
}

impl Default for PacingSettings {
    fn default() -> PacingSettings {
        PacingSettings {
            pacing: GcPacing::Off,
            latency_target: DEFAULT_LATENCY_TARGET,
            start_margin: AUTO_START_MARGIN,
            busy_window: BUSY_WINDOW,
            idle_poll: IDLE_POLL,
        }
    }
}

/// What the pacer did since open (`uf2fs status`, the latency lab).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacingStats {
    /// Paced steps that moved blocks.
    pub steps: u64,
    /// Blocks moved by paced steps.
    pub step_blocks: u64,
    /// Checkpoints paced cleaning wrote to turn prefree sections free.
    pub checkpoints: u64,
    /// Steps that wrote dirty nodes ahead of such a checkpoint, and the nodes written.
    pub flush_steps: u64,
    pub flushed_nodes: u64,
    /// Device flushes the cleaner took ahead of its checkpoints, without `cp_lock`.
    pub device_flushes: u64,
    /// Victims paced cleaning started.
    pub victims: u64,
    /// Victims paced cleaning emptied.
    pub sections_freed: u64,
    /// Sections freed by checkpoints that the cleaner discarded (zones reset) in
    /// idle time.
    pub discards: u64,
    /// Sleeps taken because front I/O was in flight.
    pub sleeps: u64,
    /// Time those sleeps asked for.
    pub slept: Duration,
    /// Times a writer with no room finished the paced victim itself.
    pub writer_finishes: u64,
    /// Time spent in GC on the file system's clock: paced steps and their
    /// checkpoints, and foreground or background passes (every pacer, `off` too).
    pub gc_time: Duration,
    /// Time GC's checkpoints took (those that turn prefree sections free), whoever
    /// wrote them: paced steps, passes, writers.
    pub checkpoint_time: Duration,
    /// Time writers spent making room before their operation (foreground GC in
    /// `balance_fs` and `reclaim_space`, finishing the paced victim, their checkpoints).
    pub writer_gc_time: Duration,
    /// Victims timed from their start to their end (every pacer).
    pub victims_timed: u64,
    /// Sum of those victims' durations, sleeps between steps included.
    pub victim_time: Duration,
    /// The same for data victims alone (a data block costs a read and a write, a node
    /// block often only the write: an average over both moves with the mix of kinds).
    pub data_victims_timed: u64,
    pub data_victim_time: Duration,
}

impl PacingStats {
    /// Average time from a victim's start to its end (zero before any).
    pub fn avg_victim_duration(&self) -> Duration {
        if self.victims_timed == 0 {
            return Duration::ZERO;
        }
        self.victim_time / self.victims_timed as u32
    }

    /// Notes a victim of `took` from its start to its end.
    pub(crate) fn victim_timed(&mut self, took: Duration, is_node: bool) {
        self.victims_timed += 1;
        self.victim_time += took;
        if !is_node {
            self.data_victims_timed += 1;
            self.data_victim_time += took;
        }
    }
}

/// The victim paced cleaning is emptying.
#[derive(Debug, Clone)]
pub(crate) struct PacedVictim {
    pub(crate) migration: Migration,
    /// Valid blocks when it was picked (the seed's `gc_stats.nodes`).
    pub(crate) work: u32,
    /// Blocks a step moves.
    pub(crate) step_blocks: u32,
    /// Whether it holds node blocks (moving one costs less than a data block: no
    /// node to read for it, often no read at all).
    pub(crate) is_node: bool,
    /// When it was picked, on the file system's clock.
    pub(crate) started: Duration,
}

/// The pacer's state: its settings, the victim in progress, what it measured.
#[derive(Debug, Clone, Default)]
pub(crate) struct PacerState {
    pub(crate) settings: PacingSettings,
    pub(crate) victim: Option<PacedVictim>,
    /// When the last victim (paced or not) was started, and the average interval
    /// between victims (the seed's average GC frequency), an EWMA of weight 1/8.
    pub(crate) last_victim_start: Option<Duration>,
    pub(crate) avg_victim_interval: Option<Duration>,
    /// Nanoseconds a moved block costs (EWMA of weight 1/8 over steps).
    pub(crate) block_cost_ns: Option<f64>,
    /// The same for data and for node victims apart.
    pub(crate) kind_cost_ns: [Option<f64>; 2],
    /// Nanoseconds a node written ahead of a checkpoint costs (EWMA of weight 1/8).
    pub(crate) node_write_ns: Option<f64>,
    /// The front write rate: the last (time, user blocks) sample and blocks per
    /// second (EWMA of weight 1/4 over samples at least [`RATE_SAMPLE`] apart).
    pub(crate) rate_sample: Option<(Duration, u64)>,
    pub(crate) user_blocks_per_sec: Option<f64>,
    /// A writer had to clean itself since the cleaner was last ahead (free sections
    /// at or above its start margin): writers keep off's spare section meanwhile.
    pub(crate) behind: bool,
    /// The interval between front operations' starts, nanoseconds (EWMA of weight
    /// 1/8; intervals over [`IDLE_GAP`] not counted): when the next one is due.
    pub(crate) op_interval_ns: Option<f64>,
    /// Nanoseconds a paced checkpoint and a discard (zone reset) of a section take
    /// (EWMAs of weight 1/4): what must fit a gap in front I/O.
    pub(crate) checkpoint_ns: Option<f64>,
    pub(crate) discard_ns: Option<f64>,
    /// Since when a discard or a checkpoint has waited for a gap in front I/O that
    /// holds it (none came yet).
    pub(crate) gap_waiting: Option<Duration>,
    /// The version of the last checkpoint when the cleaner last flushed the device
    /// ahead of the next one, without `cp_lock`: while it is still the last, the next
    /// checkpoint's own flush, which no operation can share, only has the blocks
    /// written since.
    pub(crate) flushed_ahead_of: Option<u64>,
    pub(crate) stats: PacingStats,
}

/// The wait before looking again for a gap in front I/O: until just after the next
/// front operation is due (it started at `last_op`, they come every `interval_ns`),
/// at most `poll`; a tenth of `poll` when it is overdue or nothing is measured.
pub fn until_next_op(now: Duration, last_op: Option<Duration>, interval_ns: Option<f64>, poll: Duration) -> Duration {
    let (Some(last), Some(interval)) = (last_op, interval_ns) else {
        return poll / 10;
    };
    let due = last + Duration::from_nanos(interval as u64);
    match due.checked_sub(now) {
        Some(d) if !d.is_zero() => d.min(poll),
        _ => poll / 10,
    }
}

/// Front operations further apart than this are idle periods, not the front rate.
pub const IDLE_GAP: Duration = Duration::from_secs(1);

/// An EWMA of weight `1 / w` of `sample` into `avg`.
fn ewma(avg: Option<f64>, sample: f64, w: f64) -> Option<f64> {
    Some(match avg {
        None => sample,
        Some(a) => (a * (w - 1.0) + sample) / w,
    })
}

/// How many front operation intervals a discard or checkpoint waits for a gap in front
/// I/O that holds it before it goes ahead anyway (the adaptive pacer).
pub const GAP_PATIENCE: f64 = 4.0;

/// How much longer than its measured average a step that must fit a gap in front I/O
/// is taken to last (checkpoints and discards vary: a checkpoint writes what the
/// victims' moves dirtied).
pub const GAP_MARGIN: f64 = 1.5;

/// Whether work of `cost_ns` may begin at `now`: it ends before the next front
/// operation is due (the last started at `last_op`, they come every `interval_ns`).
/// With no interval measured, yes. With no cost measured yet, or a cost no gap
/// between front operations holds (they come more often than it lasts), only at the
/// start of a gap (in its first tenth): the next operation then waits for the part
/// of the work past its arrival, not for all of it (an 8 MiB zone reset of 6.1 ms in
/// the lab's device model against writes every 2.8 ms: 3.3 ms instead of up to 6.1).
/// When the next operation is overdue, no, unless front I/O has been quiet for two
/// intervals (it stopped: the device is idle).
pub fn fits_gap(now: Duration, last_op: Option<Duration>, interval_ns: Option<f64>, cost_ns: Option<f64>) -> bool {
    let (Some(last), Some(interval)) = (last_op, interval_ns) else {
        return true;
    };
    let since = now.saturating_sub(last).as_nanos() as f64;
    if since >= 2.0 * interval {
        return true;
    }
    match cost_ns {
        Some(cost) if cost <= interval => interval - since >= cost,
        _ => since <= interval * GAP_START,
    }
}

/// The share of the interval between front operations that counts as the start of a
/// gap ([`fits_gap`]).
pub const GAP_START: f64 = 0.1;

/// The shortest span the front write rate is measured over.
pub const RATE_SAMPLE: Duration = Duration::from_millis(5);

impl PacerState {
    /// Notes that a victim starts at `now` (the seed's GC frequency).
    pub(crate) fn victim_started(&mut self, now: Duration) {
        if let Some(last) = self.last_victim_start {
            let d = now.saturating_sub(last);
            self.avg_victim_interval = Some(match self.avg_victim_interval {
                None => d,
                Some(avg) => (avg * 7 + d) / 8,
            });
        }
        self.last_victim_start = Some(now);
    }

    /// Nanoseconds a moved block of a node (`is_node`) or data victim is taken to cost:
    /// the larger of what was measured on victims of that kind and on any (the kind's
    /// own measure alone made steps of data victims too long, and of node victims,
    /// whose blocks are cheap on average but not always, too).
    pub(crate) fn cost_for(&self, is_node: bool) -> Option<f64> {
        match (self.kind_cost_ns[usize::from(is_node)], self.block_cost_ns) {
            (Some(k), Some(a)) => Some(k.max(a)),
            (k, a) => k.or(a),
        }
    }

    /// Notes a step of a node (`is_node`) or data victim that moved `blocks` in `took`.
    pub(crate) fn step_cost(&mut self, blocks: u32, took: Duration, is_node: bool) {
        if blocks == 0 {
            return;
        }
        let per = took.as_nanos() as f64 / blocks as f64;
        let k = usize::from(is_node);
        self.kind_cost_ns[k] = ewma(self.kind_cost_ns[k], per, 8.0);
        self.block_cost_ns = Some(match self.block_cost_ns {
            None => per,
            Some(avg) => (avg * 7.0 + per) / 8.0,
        });
    }

    /// Notes a node write-out step that wrote `blocks` in `took`.
    pub(crate) fn node_write_cost(&mut self, blocks: u32, took: Duration) {
        if blocks == 0 {
            return;
        }
        let per = took.as_nanos() as f64 / blocks as f64;
        self.node_write_ns = Some(match self.node_write_ns {
            None => per,
            Some(avg) => (avg * 7.0 + per) / 8.0,
        });
    }

    /// Notes a front operation starting `since_last` after the previous one.
    pub(crate) fn op_started(&mut self, since_last: Duration) {
        if since_last <= IDLE_GAP {
            self.op_interval_ns = ewma(self.op_interval_ns, since_last.as_nanos() as f64, 8.0);
        }
    }

    /// Whether the discard or checkpoint waiting for a gap in front I/O (from now on,
    /// if none was) has waited [`GAP_PATIENCE`] front operation intervals: then it
    /// goes ahead without one.
    pub(crate) fn gap_overdue(&mut self, now: Duration) -> bool {
        let since = *self.gap_waiting.get_or_insert(now);
        let patience = self.op_interval_ns.unwrap_or(0.0) * GAP_PATIENCE;
        now.saturating_sub(since).as_nanos() as f64 >= patience
    }

    /// Notes a paced checkpoint that took `took`.
    pub(crate) fn checkpoint_cost(&mut self, took: Duration) {
        self.checkpoint_ns = ewma(self.checkpoint_ns, took.as_nanos() as f64, 4.0);
    }

    /// Notes `sections` discarded in `took`.
    pub(crate) fn discard_cost(&mut self, sections: usize, took: Duration) {
        if sections > 0 {
            self.discard_ns = ewma(self.discard_ns, took.as_nanos() as f64 / sections as f64, 4.0);
        }
    }

    /// Notes `user_blocks` written since open at `now`.
    pub(crate) fn sample_rate(&mut self, now: Duration, user_blocks: u64) {
        match self.rate_sample {
            None => self.rate_sample = Some((now, user_blocks)),
            Some((t, b)) if now.saturating_sub(t) >= RATE_SAMPLE => {
                let secs = now.saturating_sub(t).as_secs_f64();
                let rate = user_blocks.saturating_sub(b) as f64 / secs;
                self.user_blocks_per_sec = Some(match self.user_blocks_per_sec {
                    None => rate,
                    Some(avg) => (avg * 3.0 + rate) / 4.0,
                });
                self.rate_sample = Some((now, user_blocks));
            }
            Some(_) => {}
        }
    }
}

/// The seed's step (its `btree_gc_min_nodes`): [`SEED_MIN_BLOCKS`], or more when a
/// victim of `work` valid blocks would otherwise take longer than half the average
/// interval between victims, counting one [`SEED_SLEEP`] per step. Milliseconds, as
/// the patch counts.
pub fn seed_step(work: u32, avg_victim_interval: Option<Duration>) -> u32 {
    let min = SEED_MIN_BLOCKS;
    let sleep_ms = SEED_SLEEP.as_millis() as u64;
    let Some(avg) = avg_victim_interval else {
        return min;
    };
    let gc_max_ms = avg.as_millis() as u64 / 2;
    let work = work as u64;
    if gc_max_ms >= sleep_ms && sleep_ms * (work / min as u64) > gc_max_ms {
        let steps = gc_max_ms / sleep_ms;
        return (work / steps).clamp(min as u64, MAX_STEP_BLOCKS as u64) as u32;
    }
    min
}

/// The adaptive pacer's step: the blocks one step moves in half of `target` at
/// `block_cost_ns` a block (one segment at most, one block at least); the seed's
/// minimum before a cost has been measured.
pub fn adaptive_step(block_cost_ns: Option<f64>, target: Duration) -> u32 {
    let Some(cost) = block_cost_ns.filter(|c| *c > 0.0) else {
        return SEED_MIN_BLOCKS;
    };
    let blocks = target.as_nanos() as f64 / 2.0 / cost;
    (blocks.floor() as u32).clamp(1, MAX_STEP_BLOCKS)
}

/// The adaptive pacer's node write-out step ahead of a checkpoint: the nodes written
/// in half of `target` at `node_cost_ns` a node (one segment at most, one at least);
/// the seed's minimum before a cost has been measured.
pub fn adaptive_flush(node_cost_ns: Option<f64>, target: Duration) -> u32 {
    adaptive_step(node_cost_ns, target)
}

/// What the adaptive pacer's sleep is computed from.
#[derive(Debug, Clone, Copy)]
pub struct SleepInputs {
    /// Blocks a step moves.
    pub step_blocks: u32,
    /// Nanoseconds a moved block costs.
    pub block_cost_ns: f64,
    /// Front writes, in blocks per second.
    pub user_blocks_per_sec: f64,
    /// The victim's valid blocks when picked, and its capacity.
    pub work: u32,
    pub capacity: u32,
    /// Free sections above the foreground threshold, and the margin paced cleaning
    /// starts at.
    pub slack_secs: u32,
    pub start_margin: u32,
}

/// The adaptive pacer's sleep after a step while front I/O is in flight: cleaning must
/// move `work / (capacity - work)` blocks for every block written to free sections as
/// fast as writes take them, so a step of `S` blocks is due every
/// `S (capacity - work) / (rate × work)`, here [`KEEP_AHEAD`] times more often; the
/// sleep is that less the step's own time,
/// scaled down by the slack left above the foreground threshold (none at one section
/// or less), at most [`ADAPTIVE_MAX_SLEEP`].
pub fn adaptive_sleep(i: &SleepInputs) -> Duration {
    if i.slack_secs <= 1 || i.user_blocks_per_sec <= 0.0 {
        return if i.slack_secs <= 1 {
            Duration::ZERO
        } else {
            ADAPTIVE_MAX_SLEEP
        };
    }
    let freed = i.capacity.saturating_sub(i.work).max(1) as f64;
    let work = i.work.max(1) as f64;
    let interval = i.step_blocks as f64 * freed / (i.user_blocks_per_sec * work * KEEP_AHEAD);
    let step = i.step_blocks as f64 * i.block_cost_ns * 1e-9;
    let urgency = ((i.slack_secs - 1) as f64 / i.start_margin.max(1) as f64).min(1.0);
    let secs = ((interval - step).max(0.0) * urgency).min(ADAPTIVE_MAX_SLEEP.as_secs_f64());
    Duration::from_secs_f64(secs)
}

#[cfg(test)]
mod tests {
    use crate::gc::pacer::*;

    #[test]
    fn names_round_trip() {
        for p in GcPacing::ALL {
            assert_eq!(p.name().parse::<GcPacing>().unwrap(), p);
        }
        assert!("fast".parse::<GcPacing>().is_err());
    }

    #[test]
    fn the_seed_step_is_ten_blocks_unless_a_victim_would_overrun_half_the_interval() {
        assert_eq!(seed_step(500, None), 10);
        // 500 blocks in steps of 10 with 10 ms sleeps: 500 ms; half of 2 s is more.
        assert_eq!(seed_step(500, Some(Duration::from_secs(2))), 10);
        // Half of 200 ms is 100 ms: ten steps, 50 blocks each.
        assert_eq!(seed_step(500, Some(Duration::from_millis(200))), 50);
        // Under 20 ms between victims the patch gives up rescaling.
        assert_eq!(seed_step(500, Some(Duration::from_millis(15))), 10);
    }

    #[test]
    fn the_adaptive_step_fills_half_the_target() {
        // 10 µs a block, 1 ms target: 50 blocks.
        assert_eq!(adaptive_step(Some(10_000.0), Duration::from_millis(1)), 50);
        assert_eq!(adaptive_step(Some(1e9), Duration::from_millis(1)), 1);
        assert_eq!(adaptive_step(Some(1.0), Duration::from_millis(1)), MAX_STEP_BLOCKS);
        assert_eq!(adaptive_step(None, Duration::from_millis(1)), SEED_MIN_BLOCKS);
    }

    #[test]
    fn the_adaptive_sleep_keeps_up_with_writes_and_vanishes_near_the_floor() {
        let base = SleepInputs {
            step_blocks: 50,
            block_cost_ns: 10_000.0,
            user_blocks_per_sec: 10_000.0,
            work: 256,
            capacity: 512,
            slack_secs: 3,
            start_margin: 2,
        };
        // Half-valid victims: a block moved per block written; 50 blocks per 5 ms, a
        // quarter faster (KEEP_AHEAD): every 4 ms; the step itself takes 0.5 ms.
        assert_eq!(adaptive_sleep(&base), Duration::from_micros(3500));
        // Halfway down the margin: half the sleep.
        let half = SleepInputs { slack_secs: 2, ..base };
        assert_eq!(adaptive_sleep(&half), Duration::from_micros(1750));
        let floor = SleepInputs { slack_secs: 1, ..base };
        assert_eq!(adaptive_sleep(&floor), Duration::ZERO);
        // Cleaning cannot keep up: no sleep.
        let full = SleepInputs { work: 511, ..base };
        assert_eq!(adaptive_sleep(&full), Duration::ZERO);
    }

    #[test]
    fn gaps_in_front_io_are_predicted_from_the_interval_between_operations() {
        let ms = Duration::from_millis;
        let last = Some(ms(100));
        let every_3ms = Some(3e6);
        // 0.5 ms after an operation, 2.5 ms are left before the next.
        assert!(fits_gap(
            ms(100) + Duration::from_micros(500),
            last,
            every_3ms,
            Some(2.4e6)
        ));
        assert!(!fits_gap(
            ms(100) + Duration::from_micros(500),
            last,
            every_3ms,
            Some(2.6e6)
        ));
        // Overdue: no, until front I/O has been quiet for two intervals.
        assert!(!fits_gap(ms(104), last, every_3ms, Some(1e5)));
        assert!(fits_gap(ms(106), last, every_3ms, Some(1e5)));
        // No gap can hold it: only at a gap's start, where the next operation waits
        // for the least of it.
        assert!(!fits_gap(ms(102), last, every_3ms, Some(3.5e6)));
        assert!(fits_gap(
            ms(100) + Duration::from_micros(200),
            last,
            every_3ms,
            Some(3.5e6)
        ));
        // Nothing measured: yes.
        assert!(fits_gap(ms(101), last, None, Some(1e9)));
        assert!(
            !fits_gap(ms(101), last, every_3ms, None),
            "no cost known: only at a gap's start"
        );
        assert!(fits_gap(ms(100) + Duration::from_micros(200), last, every_3ms, None));
        // The next look comes when the next operation is due, at most a poll away.
        assert_eq!(until_next_op(ms(101), last, every_3ms, ms(10)), ms(2));
        assert_eq!(until_next_op(ms(101), last, every_3ms, ms(1)), ms(1));
        assert_eq!(
            until_next_op(ms(104), last, every_3ms, ms(1)),
            Duration::from_micros(100)
        );
    }

    #[test]
    fn a_gap_is_waited_for_a_few_intervals_at_most() {
        let mut p = PacerState {
            op_interval_ns: Some(3e6),
            ..PacerState::default()
        };
        let ms = Duration::from_millis;
        assert!(!p.gap_overdue(ms(10)));
        assert!(!p.gap_overdue(ms(21)));
        assert!(p.gap_overdue(ms(22)), "four intervals of 3 ms");
        p.gap_waiting = None;
        assert!(!p.gap_overdue(ms(30)));
    }

    #[test]
    fn measurements_average() {
        let mut p = PacerState::default();
        p.victim_started(Duration::from_millis(0));
        p.victim_started(Duration::from_millis(80));
        assert_eq!(p.avg_victim_interval, Some(Duration::from_millis(80)));
        p.victim_started(Duration::from_millis(240));
        assert_eq!(p.avg_victim_interval, Some(Duration::from_millis(90)));
        p.step_cost(10, Duration::from_micros(100), false);
        assert_eq!(p.block_cost_ns, Some(10_000.0));
        p.sample_rate(Duration::ZERO, 0);
        p.sample_rate(Duration::from_millis(1), 100);
        assert_eq!(p.user_blocks_per_sec, None, "too short a span");
        p.sample_rate(Duration::from_millis(10), 1000);
        assert_eq!(p.user_blocks_per_sec, Some(100_000.0));
    }
}
