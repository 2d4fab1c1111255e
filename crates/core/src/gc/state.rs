//! What the read-write state keeps for garbage collection: the policy and its
//! switches, the counters, the background cleaner's idle clock. The engine
//! ([`super`]) reads and updates it; the state imports nothing of the engine.

use super::cursor::Moved;
use super::pacer::PacerState;
use super::policies::PassLoop;
use super::policy::GcPolicy;
use crate::clock::{Clock, SystemClock};
use std::collections::VecDeque;
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
    /// Data blocks moved whose dirty page was written in the move (so not written
    /// back again).
    pub data_pages_cleaned: u64,
    /// Nodes the moved data blocks dirtied (their owners' new addresses), each counted
    /// once per migration step.
    pub data_owner_nodes: u64,
    /// Checkpoints GC wrote to turn prefree sections free.
    pub checkpoints: u64,
    /// Foreground passes by what each did and the room each started with.
    pub passes: PassCounts,
}

/// Victims or checkpoints of one pass counted apart in [`PassCounts::by_work`]; a
/// pass with more counts in the last bin.
pub const PASS_WORK_BINS: usize = 9;

/// Free sections above the reserved ones counted apart in [`PassCounts::by_free`]; more
/// count in the last bin.
pub const PASS_FREE_BINS: usize = 17;

/// Bins of [`PassCounts::by_dirty`], each [`PASS_DIRTY_BIN_PAGES`] dirty pages wide; the
/// last counts that many bins' worth or more.
pub const PASS_DIRTY_BINS: usize = 17;

/// Dirty pages per bin of [`PassCounts::by_dirty`].
pub const PASS_DIRTY_BIN_PAGES: u64 = 64;

/// Foreground GC passes by what each did (victims taken, checkpoints written) and by
/// the free sections above the reserved ones when each began: what Linux's
/// `f2fs_gc_begin` and `f2fs_gc_end` trace events show of its passes
/// (`scripts/kernel/gc-passes.py` reads both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassCounts {
    /// Passes by victims (first index) and checkpoints (second), each capped at
    /// [`PASS_WORK_BINS`] - 1.
    pub by_work: [[u64; PASS_WORK_BINS]; PASS_WORK_BINS],
    /// Passes by free sections above the reserved ones at their start (none when free
    /// sections were down to the reserved ones or below), capped at
    /// [`PASS_FREE_BINS`] - 1.
    pub by_free: [u64; PASS_FREE_BINS],
    /// Passes by the dirty file data pages at their start, in bins of
    /// [`PASS_DIRTY_BIN_PAGES`] (the last: that many bins' worth or more).
    pub by_dirty: [u64; PASS_DIRTY_BINS],
    /// Passes begun with the warm data log's current section short of the dirty
    /// data's remainder (the free-section rule's room: blocks not valid at the last
    /// checkpoint and not written since).
    pub warm_short: u64,
    /// The same of the cold data log.
    pub cold_short: u64,
}

impl Default for PassCounts {
    fn default() -> Self {
        PassCounts {
            by_work: [[0; PASS_WORK_BINS]; PASS_WORK_BINS],
            by_free: [0; PASS_FREE_BINS],
            by_dirty: [0; PASS_DIRTY_BINS],
            warm_short: 0,
            cold_short: 0,
        }
    }
}

/// What a pass began with, as [`PassCounts::count`] bins it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PassStart {
    /// Free sections beyond the reserved ones.
    pub(crate) free_above_reserved: u32,
    /// Dirty file data pages.
    pub(crate) dirty_data: u64,
    /// Whether the warm data log's current section was short of the dirty data's
    /// remainder.
    pub(crate) warm_short: bool,
    /// The same of the cold data log.
    pub(crate) cold_short: bool,
}

impl PassCounts {
    /// Counts a pass that took `victims` and wrote `checkpoints`, begun as `start` says.
    pub(crate) fn count(&mut self, victims: u64, checkpoints: u64, start: PassStart) {
        let bin = |n: u64, bins: usize| (n as usize).min(bins - 1);
        self.by_work[bin(victims, PASS_WORK_BINS)][bin(checkpoints, PASS_WORK_BINS)] += 1;
        self.by_free[bin(start.free_above_reserved as u64, PASS_FREE_BINS)] += 1;
        self.by_dirty[bin(start.dirty_data / PASS_DIRTY_BIN_PAGES, PASS_DIRTY_BINS)] += 1;
        self.warm_short += start.warm_short as u64;
        self.cold_short += start.cold_short as u64;
    }

    /// The passes counted since `earlier` (a copy taken before).
    pub fn since(&self, earlier: &PassCounts) -> PassCounts {
        fn sub(now: &mut [u64], then: &[u64]) {
            for (n, o) in now.iter_mut().zip(then) {
                *n = n.saturating_sub(*o);
            }
        }
        let mut d = *self;
        for (row, old) in d.by_work.iter_mut().zip(&earlier.by_work) {
            sub(row, old);
        }
        sub(&mut d.by_free, &earlier.by_free);
        sub(&mut d.by_dirty, &earlier.by_dirty);
        d.warm_short = d.warm_short.saturating_sub(earlier.warm_short);
        d.cold_short = d.cold_short.saturating_sub(earlier.cold_short);
        d
    }

    /// Passes counted.
    pub fn total(&self) -> u64 {
        self.by_free.iter().sum()
    }
}

impl GcStats {
    /// Node writes each moved data block has cost so far: the owners it dirtied per
    /// block moved (0 before any data moved).
    pub fn node_writes_per_data_block(&self) -> f64 {
        if self.data_blocks_moved == 0 {
            0.0
        } else {
            self.data_owner_nodes as f64 / self.data_blocks_moved as f64
        }
    }

    /// Counts a section chosen as a victim, by its kind.
    pub(crate) fn count_victim(&mut self, is_node: bool) {
        if is_node {
            self.node_victims += 1;
        } else {
            self.data_victims += 1;
        }
    }

    /// Counts what emptying one victim moved, and whether it left it free.
    pub(crate) fn count_moved(&mut self, moved: &Moved) {
        self.data_blocks_moved += moved.data;
        self.node_blocks_moved += moved.node;
        self.data_pages_cleaned += moved.data_from_pages;
        self.data_owner_nodes += moved.data_owners;
        if moved.emptied {
            self.sections_freed += 1;
        }
    }
}

/// Front operations [`GcState::op_on_schedule`] looks back over. From the last start
/// alone, a zone reset begun just after a late write took part of the next write's
/// gap, and that write was late in turn (the seed preset at 50% load, `--io-size 8G`:
/// clat p99.9 5.90 ms); from the last two, 5.07 ms; from four, 3.45 ms. Over more the
/// measured interval's error adds up (eight: 5.44 ms; all of them moved the small
/// preset's max from 0.55 ms to 3.3 ms).
pub(crate) const SCHEDULE_OPS: usize = 4;

/// How writers of a file system without flusher threads meet F2FS's GC near full:
/// who writes their dirty pages back, when, in what order, and what admits their
/// blocks. Flusher threads (the mount's background work, `writeback_threads`) keep
/// their own rules under both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WriterModel {
    /// uf2fs's own (the default): past 512 dirty pages a write writes every dirty page
    /// back (a look at the free sections every 16), an inode past 1024 dirty pages is
    /// written whole, each inode from its first dirty page; a foreground GC pass that
    /// finds no victim writes every dirty page with a checkpoint and looks again; an
    /// operation's blocks must leave the reserved sections free.
    #[default]
    Eager,
    /// Linux's (the lab's): the writer and the kernel's background flusher share the
    /// work as on Linux with `vm.dirty_background_bytes` 2 MiB and `vm.dirty_bytes`
    /// 4 MiB (`scripts/kernel/waf-compare.sh`): past 512 dirty pages a writeback round
    /// takes every page dirty then, one page at a time with `f2fs_balance_fs` after
    /// each (as F2FS's data writeback does), each inode's pages from where its last
    /// round stopped (`writeback_index`, `range_cyclic`), paced at 25 device blocks
    /// per page the writer dirties (fitted to Linux), and the writer writes pages
    /// itself while more than [`crate::WRITER_HOLD_PAGES`] are dirty (or
    /// [`crate::Fs::set_writer_hold`]'s level: `balance_dirty_pages`); a pass
    /// `f2fs_balance_fs` starts ends when it finds no victim (`ENODATA`); operations
    /// are admitted into the reserved sections, since Linux admits blocks by count and
    /// its writers take any free section. Under a pacer (`seed`, `adaptive`) or with
    /// GC off, [`WriterModel::Eager`] applies.
    Kernel,
}

/// Which Linux release's `f2fs_gc` loop the kernel-loop policies (greedy,
/// cost-benefit, ATGC, the weights) run in the foreground. The two releases share the
/// free-section rule (`has_not_enough_free_secs`) and the checkpoint when free
/// sections run down to the need + 3 (`NR_GC_CHECKPOINT_SECS`), and part on the rest
/// (read in Debian's 6.1.192 and 6.12.117 sources, `fs/f2fs/gc.c`); the lab's figures
/// against each kernel differ by up to 88% (docs/waf-lab.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum KernelGcLoop {
    /// Linux 6.1: a pass `f2fs_balance_fs` starts is background GC until its first
    /// round finds too few free sections; that round checkpoints the prefree sections
    /// and ends if the checkpoint made room (no victim). Later rounds never checkpoint
    /// at the top, and the sections the pass emptied count as room (`sec_freed`) for
    /// the whole pass, also after a checkpoint has made them free.
    Linux61,
    /// Linux 6.12 (the default; the loop the seed patches change, of late 2023, has
    /// the same form): every round that finds too few free sections turns
    /// foreground, checkpoints the prefree sections and starts counting emptied
    /// sections again; a round takes a victim even when its checkpoint made room.
    #[default]
    Linux612,
}

impl KernelGcLoop {
    /// Every loop, for listings and errors.
    pub const ALL: [KernelGcLoop; 2] = [KernelGcLoop::Linux61, KernelGcLoop::Linux612];
}

impl std::fmt::Display for KernelGcLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KernelGcLoop::Linux61 => "6.1",
            KernelGcLoop::Linux612 => "6.12",
        })
    }
}

impl std::str::FromStr for KernelGcLoop {
    type Err = String;

    /// A release as `6.1` or `6.12` (`linux-` in front is allowed).
    fn from_str(s: &str) -> std::result::Result<KernelGcLoop, String> {
        let release = s.strip_prefix("linux-").unwrap_or(s);
        KernelGcLoop::ALL
            .into_iter()
            .find(|k| k.to_string() == release)
            .ok_or_else(|| format!("'{s}' is not a kernel GC loop (6.1 or 6.12)"))
    }
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
    /// How writers meet GC when no flusher threads run ([`WriterModel`]).
    pub(crate) writers: WriterModel,
    /// The Linux release whose `f2fs_gc` loop [`PassLoop::Kernel`] follows.
    pub(crate) kernel_loop: KernelGcLoop,
    /// The prefer-data policies' `need_node_clean`.
    pub(crate) node_clean: bool,
    pub(crate) stats: GcStats,
    /// When the last operation started, on `clock` (the background cleaner's idle
    /// rule).
    pub(crate) last_op: Option<Duration>,
    /// The starts of the last [`SCHEDULE_OPS`] operations, the latest first.
    recent_ops: VecDeque<Duration>,
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
            writers: WriterModel::Eager,
            kernel_loop: KernelGcLoop::default(),
            node_clean: false,
            stats: GcStats::default(),
            last_op: None,
            recent_ops: VecDeque::with_capacity(SCHEDULE_OPS),
            clock: Arc::new(SystemClock::new()),
            batch_extra: 0,
            pacer: PacerState::default(),
        }
    }
}

impl GcState {
    /// Which model of F2FS's GC governs writers and GC's checkpoints: the kernel's
    /// (false: no pacer) or the one uf2fs's pacers measure from (true). Under the
    /// kernel's, writers need room by `has_not_enough_free_secs` with dirty file data
    /// counted ([`super::snapshot::SpaceView::enough`]) and GC's checkpoints leave
    /// regular files' dirty pages, as `f2fs_gc`'s do. Under a pacer (`seed`,
    /// `adaptive`: no kernel counterpart) writers keep the floor of dirty nodes and
    /// directory blocks the pacer's margin is measured from
    /// ([`super::snapshot::SpaceView::enough_paced`]) and GC's checkpoints write file
    /// data too: with the kernel's model there, writers on the mount reclaimed room
    /// for the pages GC's checkpoints left and the paced cleaner took no step. The
    /// one switch both read, so that they cannot part.
    pub(crate) fn paced(&self) -> bool {
        self.pacer.settings.pacing != super::pacer::GcPacing::Off
    }

    /// Whether writers follow Linux's write path ([`WriterModel::Kernel`]): chosen, no
    /// pacer ([`GcState::paced`]: a pacer's margin counts on uf2fs's own model) and GC
    /// on.
    pub(crate) fn kernel_writers(&self) -> bool {
        self.writers == WriterModel::Kernel && self.enabled && !self.paced()
    }

    /// An operation starts now: the background cleaner's idle clock, and the front
    /// operation interval the paced cleaner fits its long steps between.
    pub(crate) fn note_op(&mut self) {
        let now = self.clock.now();
        if let Some(last) = self.last_op {
            self.pacer.op_started(now.saturating_sub(last));
        }
        self.recent_ops.push_front(now);
        self.recent_ops.truncate(SCHEDULE_OPS);
        self.last_op = Some(now);
    }

    /// Forgets when operations started (the clock was replaced).
    pub(crate) fn forget_ops(&mut self) {
        self.last_op = None;
        self.recent_ops.clear();
    }

    /// When the last operation would have started had it come on schedule: at most
    /// one measured interval after each of the [`SCHEDULE_OPS`] before it, per
    /// interval between them. Front I/O at a steady rate that waited for GC starts
    /// late, and the next operation comes sooner after it than one interval. The
    /// paced cleaner predicts the next gap in front I/O from this time
    /// ([`super::pacer::fits_gap`]).
    pub(crate) fn op_on_schedule(&self) -> Option<Duration> {
        let Some(interval) = self.pacer.op_interval_ns else {
            return self.last_op;
        };
        // Front operations at a steady rate that waited (for GC) start late, each by
        // its own delay: the last one was due no later than one interval after each
        // of the few before it.
        let i = Duration::from_nanos(interval as u64);
        (0u32..).zip(&self.recent_ops).map(|(j, &t)| t + i * j).min()
    }
}

#[cfg(test)]
mod tests {
    // Named from the crate root: `super` would read, to modcycles.py, as the GC
    // engine (`gc/mod.rs`), which this file must not import.
    use crate::clock::{Clock, ManualClock};
    use crate::gc::state::{GcState, KernelGcLoop, PassCounts, PassStart, PASS_DIRTY_BINS, PASS_WORK_BINS};
    use std::sync::Arc;
    use std::time::Duration;

    /// A pass is binned by its work and its start, counts past the last bin in the
    /// last, and `since` leaves the passes counted after a copy.
    #[test]
    fn passes_are_binned_by_work_and_start_and_subtracted() {
        let mut p = PassCounts::default();
        let start = |free, dirty, warm| PassStart {
            free_above_reserved: free,
            dirty_data: dirty,
            warm_short: warm,
            cold_short: false,
        };
        p.count(1, 1, start(2, 400, true));
        let before = p;
        p.count(20, 0, start(40, 5000, false));
        p.count(0, 1, start(1, 63, true));
        assert_eq!(p.total(), 3);
        let d = p.since(&before);
        assert_eq!(d.total(), 2);
        assert_eq!(d.by_work[PASS_WORK_BINS - 1][0], 1, "20 victims: the last bin");
        assert_eq!(d.by_work[0][1], 1);
        assert_eq!(d.by_work[1][1], 0, "counted before the copy");
        assert_eq!(d.by_dirty[0], 1, "63 pages: the first bin of 64");
        assert_eq!(d.by_dirty[PASS_DIRTY_BINS - 1], 1);
        assert_eq!(d.by_free[1], 1);
        assert_eq!((d.warm_short, d.cold_short), (1, 0));
        assert_eq!((p.warm_short, p.by_dirty[400 / 64]), (2, 1));
    }

    /// A front operation that started late is taken to have been due one interval
    /// after the ones before it, also when the one before it was late too; one on
    /// time is taken as it started.
    #[test]
    fn a_late_operation_is_placed_on_its_schedule() {
        let clock = Arc::new(ManualClock::new());
        let mut g = GcState {
            clock: clock.clone(),
            ..GcState::default()
        };
        let ms = Duration::from_millis;
        let us = Duration::from_micros;
        let on_time = |g: &GcState| g.op_on_schedule().unwrap().saturating_sub(ms(1000));
        clock.advance(ms(1000));
        for _ in 0..20 {
            g.note_op();
            clock.advance(ms(3));
        }
        // Every 3 ms: the last one started on time, at 57 ms.
        assert_eq!(on_time(&g), ms(57));
        // The next one, due at 60, waits 2 ms (for GC).
        clock.advance(ms(2));
        g.note_op();
        assert_eq!(g.last_op, Some(ms(1000 + 62)));
        let due = on_time(&g);
        assert!(due >= ms(60) && due < ms(61), "{due:?}");
        // The one after it, due at 63, waits 1 ms behind it: late too.
        clock.advance(ms(2));
        g.note_op();
        let due = on_time(&g);
        // (From the last two starts alone: 64 ms. The measured interval, stretched
        // by the late starts, leaves the estimate within a fraction of a ms.)
        assert!(due > ms(62) + us(500) && due < ms(63) + us(500), "{due:?}");
        // Then one on time, at 66.
        clock.advance(ms(2));
        g.note_op();
        let due = on_time(&g);
        assert!(due > ms(65) + us(500) && due <= ms(66), "{due:?}");
        // Nothing measured yet: as it started.
        let mut fresh = GcState {
            clock: clock.clone(),
            ..GcState::default()
        };
        fresh.note_op();
        assert_eq!(fresh.op_on_schedule(), Some(clock.now()));
    }

    #[test]
    fn kernel_gc_loops_parse_as_they_print() {
        for k in KernelGcLoop::ALL {
            assert_eq!(k.to_string().parse::<KernelGcLoop>(), Ok(k));
            assert_eq!(format!("linux-{k}").parse::<KernelGcLoop>(), Ok(k));
        }
        assert_eq!(KernelGcLoop::default(), KernelGcLoop::Linux612);
        assert!("6.6".parse::<KernelGcLoop>().unwrap_err().contains("6.1 or 6.12"));
    }
}
