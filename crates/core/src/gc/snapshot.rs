//! What the GC engine decides on, read at once: the free-space figures of one moment
//! ([`SpaceView`]) and, for a selection, the candidate sections with them
//! ([`VictimInputs`]), each under one hold of the segment lock (the kernel's
//! `victim_sel_policy` idea: gather the inputs, then decide without going back to
//! the SIT).
//!
//! The engine takes a new view after anything that changes the segments (a
//! checkpoint, a migrated victim) and decides everything in between from the same
//! one, so a decision never mixes two moments.

use super::state::PassStart;
use super::{gc_need, pending_need, sections_of, GC_CHECKPOINT_SECS};
use crate::fs::ReadWrite;
use crate::segment::{LogType, SectionInfo, SegmentManager, SpaceNeed, NR_LOGS, PREFREE_ROOM_FLOOR_SECS};
use crate::Fs;
use std::sync::MutexGuard;
use uf2fs_format::consts::BLOCKS_PER_SEG;

/// The free-space figures GC's loop rules read, at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpaceView {
    /// Free sections.
    pub(crate) free: u32,
    /// Prefree segments (emptied, free after the next checkpoint).
    pub(crate) prefree: u32,
    /// Sections the prefree segments make free at the next checkpoint.
    pub(crate) prefree_gain: u32,
    /// Sections kept back for GC (F2FS's reserved sections).
    reserved: u32,
    /// Sections the writes GC keeps room for take ([`gc_need`]: dirty nodes and
    /// directory blocks).
    gc_need_secs: u32,
    /// Sections every pending write takes ([`pending_need`]: file data too).
    pending_secs: u32,
    /// The kernel's count of what is pending ([`Secs`]).
    secs: Secs,
}

/// What the kernel's free-section rule (`has_not_enough_free_secs` with
/// `__get_secs_required` and `has_curseg_enough_space`, Linux 6.1 fs/f2fs/segment.h)
/// reads: the dirty pages by kind in whole sections and remainders, and the room the
/// logs' current sections have. uf2fs allocates as the kernel's `mode=lfs` does (the
/// mode zoned devices force), where dirty file data counts as well as dirty nodes and
/// directory blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Secs {
    /// Whole sections of dirty nodes, directory blocks and file data.
    whole: u32,
    /// Sections for the remainders: one for each kind with some left over.
    partial: u32,
    /// Remainders of dirty nodes (with directory blocks), directory blocks and file
    /// data, in blocks.
    node_rem: u64,
    dent_rem: u64,
    data_rem: u64,
    /// Dirty file data pages in all.
    data: u64,
    /// Room in each log's current section (see
    /// [`SegmentManager::log_sections_ckpt_room`]).
    room: [u64; NR_LOGS],
}

impl Secs {
    /// From the dirty nodes by log and the dirty pages by log (directory blocks go to
    /// the hot data log, file data to warm and cold).
    fn of(nodes: &[u64; NR_LOGS], pages: &[u64; NR_LOGS], segs: &SegmentManager) -> Secs {
        let cap = (segs.segs_per_sec() as u64 * BLOCKS_PER_SEG as u64).max(1);
        let dents = pages[LogType::HotData as usize];
        let node_total = nodes.iter().sum::<u64>() + dents;
        let data = pages[LogType::WarmData as usize] + pages[LogType::ColdData as usize];
        let (node_rem, dent_rem, data_rem) = (node_total % cap, dents % cap, data % cap);
        Secs {
            whole: ((node_total / cap) + (dents / cap) + (data / cap)) as u32,
            partial: [node_rem, dent_rem, data_rem].iter().filter(|&&r| r > 0).count() as u32,
            node_rem,
            dent_rem,
            data_rem,
            data,
            room: segs.log_sections_ckpt_room(),
        }
    }

    /// Whether every log's current section holds the remainder of its kind (the
    /// kernel's `has_curseg_enough_space`: data logs the file data's, node logs the
    /// nodes', the hot data log the directory blocks' too).
    fn curseg_room(&self) -> bool {
        LogType::ALL.iter().all(|&log| {
            let rem = if log.is_node() { self.node_rem } else { self.data_rem };
            rem <= self.room[log as usize]
        }) && self.dent_rem <= self.room[LogType::HotData as usize]
    }
}

impl SpaceView {
    /// Reads the figures: the pending writes first (the node manager's and the page
    /// cache's counters), then the segment figures under one hold of its lock.
    pub(crate) fn take(fs: &Fs, rw: &ReadWrite) -> SpaceView {
        let needs = Needs::take(fs, rw);
        SpaceView::of(&needs, &lock(rw))
    }

    /// The figures for the pending writes `needs`, read before the segment lock
    /// `segs` was taken (the page cache and node manager are not locked under it).
    fn of(needs: &Needs, segs: &SegmentManager) -> SpaceView {
        SpaceView {
            free: segs.free_section_count(),
            prefree: segs.prefree_count(),
            prefree_gain: segs.prefree_section_gain(),
            reserved: segs.reserved_sections(),
            gc_need_secs: sections_of(segs, &needs.gc),
            pending_secs: sections_of(segs, &needs.pending),
            secs: Secs::of(&needs.nodes, &needs.pages, segs),
        }
    }

    /// What a pass beginning with this view began with, as the pass counts bin it:
    /// free sections beyond the reserved ones (0 at or below them), the dirty file
    /// data, and whether the warm and the cold data log's current sections are short
    /// of its remainder (the room of the free-section rule's `has_curseg_enough_space`).
    pub(crate) fn pass_start(&self) -> PassStart {
        let short = |log: LogType| self.secs.data_rem > self.secs.room[log as usize];
        PassStart {
            free_above_reserved: self.free.saturating_sub(self.reserved),
            dirty_data: self.secs.data,
            warm_short: short(LogType::WarmData),
            cold_short: short(LogType::ColdData),
        }
    }

    /// Sections the pending writes take: with `all`, every pending write (the
    /// batching default policy, which lets writes use the reserved sections), else
    /// what GC keeps room for.
    pub(crate) fn pending(&self, all: bool) -> u32 {
        if all {
            self.pending_secs
        } else {
            self.gc_need_secs
        }
    }

    /// Whether free sections, plus `freed` emptied ones waiting for a checkpoint, are
    /// enough by the kernel's rule (`has_not_enough_free_secs(freed, extra - 1)`,
    /// inverted): above the reserved sections, `extra - 1` more and the sections the
    /// dirty nodes, directory blocks and file data take with one for each remainder;
    /// at or below the same without the remainders' sections, not enough; in between,
    /// enough if every log's current section holds the remainder of its kind
    /// ([`Secs`]). `extra` 1 is the kernel's threshold, 0 one section below it.
    pub(crate) fn enough(&self, freed: u32, extra: u32) -> bool {
        let free = (self.free + freed) as i64;
        let lower = (self.secs.whole + self.reserved) as i64 + extra as i64 - 1;
        let upper = lower + self.secs.partial as i64;
        if free > upper {
            return true;
        }
        if free <= lower {
            return false;
        }
        self.secs.curseg_room()
    }

    /// The floor of writers under a pacer: free sections (plus `freed`) covering the
    /// reserved ones, the dirty nodes' and directory blocks' sections and `extra`. The
    /// kernel's rule ([`SpaceView::enough`]) is for writers without one, as in the
    /// kernel; uf2fs's pacers measure their margin, steps and checkpoints from this
    /// floor ([`crate::gc`]'s paced module), and with the kernel's, whose dirty data
    /// term moves by sections as flusher threads write, writers on the mount reached
    /// their own threshold first and the cleaner took no step.
    pub(crate) fn enough_paced(&self, freed: u32, extra: u32) -> bool {
        self.free + freed >= self.gc_need_secs + self.reserved + extra
    }

    /// Whether the sections emptied since the last checkpoint cover the reserved
    /// sections for GC's writes while [`PREFREE_ROOM_FLOOR_SECS`] really free sections
    /// stay beyond them: the rule of an operation's own room check when prefree
    /// sections stand in for reserved ones
    /// ([`crate::segment::SegmentManager::set_prefree_is_room`]).
    pub(crate) fn prefree_room(&self) -> bool {
        self.free >= self.gc_need_secs + PREFREE_ROOM_FLOOR_SECS
            && self.free + self.prefree_gain >= self.gc_need_secs + self.reserved
    }

    /// [`SpaceView::enough`] for every pending write, file data included.
    pub(crate) fn enough_for_all(&self, freed: u32, extra: u32) -> bool {
        self.free + freed >= self.pending_secs + self.reserved + extra
    }

    /// Whether free sections are down to the pending writes + [`GC_CHECKPOINT_SECS`],
    /// where GC checkpoints the prefree sections: with `all`, every pending write
    /// (the batching default policy); else as the kernel counts them (the sections of
    /// its free-section rule, remainders included, without the reserved ones).
    pub(crate) fn low(&self, all: bool) -> bool {
        let pending = if all {
            self.pending_secs
        } else {
            self.secs.whole + self.secs.partial
        };
        self.free <= pending + GC_CHECKPOINT_SECS
    }

    /// Whether free sections hold what moving `v` writes (its valid blocks, and for
    /// data as many node blocks again at worst), with the pending writes (`all`: every
    /// one).
    pub(crate) fn fits(&self, v: &SectionInfo, all: bool) -> bool {
        let moved_secs = (v.valid_blocks as u64).div_ceil(v.capacity.max(1) as u64) as u32;
        let need = if v.is_node { moved_secs } else { 2 * moved_secs };
        self.free >= need + self.pending(all)
    }
}

/// A selection's inputs: the candidate sections, the SIT's age clock and the free
/// space, all of one moment.
#[derive(Debug, Clone)]
pub(crate) struct VictimInputs {
    /// Every section that may be cleaned (not an open log's), in section order.
    pub(crate) candidates: Vec<SectionInfo>,
    /// Now, on the SIT's age clock (seconds).
    pub(crate) now_secs: u64,
    /// The free space at the same moment.
    pub(crate) space: SpaceView,
}

impl VictimInputs {
    /// Reads the inputs under one hold of the segment lock.
    pub(crate) fn take(fs: &Fs, rw: &ReadWrite) -> VictimInputs {
        let needs = Needs::take(fs, rw);
        let segs = lock(rw);
        let mut candidates = Vec::new();
        segs.visit_victim_candidates(|s| candidates.push(s));
        VictimInputs {
            candidates,
            now_secs: segs.elapsed_secs(),
            space: SpaceView::of(&needs, &segs),
        }
    }

    /// The candidate with the fewest valid blocks (greedy's choice, any type; the
    /// first of equals).
    pub(crate) fn cheapest(&self) -> Option<SectionInfo> {
        let mut best: Option<SectionInfo> = None;
        for s in &self.candidates {
            if best.is_none_or(|b| s.valid_blocks < b.valid_blocks) {
                best = Some(*s);
            }
        }
        best
    }
}

/// The pending writes, read before the segment lock is taken (the page cache and
/// node manager are not locked under it).
struct Needs {
    gc: SpaceNeed,
    pending: SpaceNeed,
    /// Dirty nodes by log as Linux's rule counts them (inodes dirty for their
    /// timestamps only left out).
    nodes: [u64; NR_LOGS],
    pages: [u64; NR_LOGS],
}

impl Needs {
    fn take(fs: &Fs, rw: &ReadWrite) -> Needs {
        Needs {
            gc: gc_need(fs, rw),
            pending: pending_need(fs, rw),
            nodes: fs.nodes().counted_dirty_nodes_by_log(),
            pages: rw.pages().count_by_log(),
        }
    }
}

/// The segment lock, held for one snapshot.
fn lock(rw: &ReadWrite) -> crate::lockrank::Ranked<MutexGuard<'_, SegmentManager>> {
    rw.segs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(free: u32, prefree_gain: u32) -> SpaceView {
        SpaceView {
            free,
            prefree: prefree_gain,
            prefree_gain,
            reserved: 8,
            gc_need_secs: 1,
            pending_secs: 2,
            secs: Secs::default(),
        }
    }

    fn lfs_view(free: u32, secs: Secs) -> SpaceView {
        SpaceView {
            free,
            prefree: 0,
            prefree_gain: 0,
            reserved: 8,
            gc_need_secs: 0,
            pending_secs: 0,
            secs,
        }
    }

    /// The kernel's rule in `mode=lfs`: dirty file data counts (here 500 pages and 100
    /// dirty nodes: enough above 8 + 2 free sections, not enough at 8), and in between
    /// every log's current section must hold the remainder of its kind.
    #[test]
    fn dirty_file_data_and_the_logs_room_decide_as_in_the_kernel() {
        let s = Secs {
            whole: 0,
            partial: 2,
            node_rem: 100,
            dent_rem: 0,
            data_rem: 500,
            data: 500,
            room: [2048; NR_LOGS],
        };
        assert!(lfs_view(11, s).enough(0, 1));
        assert!(!lfs_view(8, s).enough(0, 1));
        assert!(lfs_view(9, s).enough(0, 1), "every log's section has room");
        assert!(lfs_view(8, s).enough(1, 1), "an emptied section counts");
        let mut short = s;
        short.room[LogType::ColdData as usize] = 499;
        assert!(
            !lfs_view(10, short).enough(0, 1),
            "the cold data log's section is short"
        );
        let start = |v: SpaceView| {
            let p = v.pass_start();
            (p.warm_short, p.cold_short)
        };
        assert_eq!(start(lfs_view(10, short)), (false, true));
        assert_eq!(start(lfs_view(10, s)), (false, false));
        assert_eq!(lfs_view(10, s).pass_start().dirty_data, 500);
        assert_eq!(lfs_view(10, s).pass_start().free_above_reserved, 2);
        assert_eq!(lfs_view(7, s).pass_start().free_above_reserved, 0);
        assert!(lfs_view(11, short).enough(0, 1));
        assert!(
            lfs_view(8, s).enough(0, 0) && !lfs_view(7, s).enough(0, 0),
            "extra 0: a section lower"
        );
        // The mid-pass checkpoint comes at the same sections + 3, reserved ones aside.
        assert!(lfs_view(5, s).low(false) && !lfs_view(6, s).low(false));
    }

    /// The pacer's floor counts the reserved sections and what GC keeps room for
    /// (dirty nodes and directory blocks), never dirty file data nor the logs' room:
    /// with a whole section of dirty file data the kernel's rule wants more than it.
    #[test]
    fn the_pacers_floor_leaves_dirty_file_data_out() {
        let s = Secs {
            whole: 1,
            partial: 1,
            node_rem: 0,
            dent_rem: 0,
            data_rem: 100,
            data: 2048 + 100,
            room: [0; NR_LOGS],
        };
        let v = |free| SpaceView {
            gc_need_secs: 1,
            ..lfs_view(free, s)
        };
        assert!(v(9).enough_paced(0, 0) && !v(8).enough_paced(0, 0));
        assert!(v(10).enough_paced(0, 1) && !v(9).enough_paced(0, 1));
        assert!(v(8).enough_paced(1, 0), "an emptied section counts");
        assert!(
            v(10).enough_paced(0, 1) && !v(10).enough(0, 1),
            "the kernel's rule wants more"
        );
    }

    /// Emptied sections stand in for reserved ones while enough really free
    /// sections stay beyond GC's own writes.
    #[test]
    fn prefree_sections_stand_in_for_reserved_ones_down_to_the_floor() {
        assert!(!view(8, 0).prefree_room(), "no emptied section");
        assert!(view(9, 0).prefree_room(), "room without them");
        assert!(view(5, 4).prefree_room());
        assert!(!view(5, 3).prefree_room(), "they do not cover the reserved");
        let floor = 1 + PREFREE_ROOM_FLOOR_SECS;
        assert!(view(floor, 8).prefree_room());
        assert!(!view(floor - 1, 9).prefree_room(), "below the floor");
    }
}
