//! What the GC engine decides on, read at once: the free-space figures of one moment
//! ([`SpaceView`]) and, for a selection, the candidate sections with them
//! ([`VictimInputs`]), each under one hold of the segment lock (the kernel's
//! `victim_sel_policy` idea: gather the inputs, then decide without going back to
//! the SIT).
//!
//! The engine takes a new view after anything that changes the segments (a
//! checkpoint, a migrated victim) and decides everything in between from the same
//! one, so a decision never mixes two moments.

use super::{gc_need, pending_need, sections_of, GC_CHECKPOINT_SECS};
use crate::fs::ReadWrite;
use crate::segment::{SectionInfo, SegmentManager, SpaceNeed, PREFREE_ROOM_FLOOR_SECS};
use crate::Fs;
use std::sync::MutexGuard;

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
}

impl SpaceView {
    /// Reads the figures: the pending writes first (the node manager's and the page
    /// cache's counters), then the segment figures under one hold of its lock.
    pub(crate) fn take(fs: &Fs, rw: &ReadWrite) -> SpaceView {
        let needs = (gc_need(fs, rw), pending_need(fs, rw));
        SpaceView::of(needs, &lock(rw))
    }

    /// The figures for the pending writes `(gc, pending)` (see [`gc_need`] and
    /// [`pending_need`]), read before the segment lock `segs` was taken (the page
    /// cache and node manager are not locked under it).
    fn of((gc, pending): (SpaceNeed, SpaceNeed), segs: &SegmentManager) -> SpaceView {
        SpaceView {
            free: segs.free_section_count(),
            prefree: segs.prefree_count(),
            prefree_gain: segs.prefree_section_gain(),
            reserved: segs.reserved_sections(),
            gc_need_secs: sections_of(segs, &gc),
            pending_secs: sections_of(segs, &pending),
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

    /// Whether free sections, plus `freed` emptied ones waiting for a checkpoint,
    /// cover what GC keeps room for with the reserved sections and `extra` to spare
    /// (the kernel's `has_not_enough_free_secs`, inverted).
    pub(crate) fn enough(&self, freed: u32, extra: u32) -> bool {
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

    /// Whether free sections are down to the pending writes (`all`: every one) +
    /// [`GC_CHECKPOINT_SECS`], where GC checkpoints the prefree sections.
    pub(crate) fn low(&self, all: bool) -> bool {
        self.free <= self.pending(all) + GC_CHECKPOINT_SECS
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
        let needs = (gc_need(fs, rw), pending_need(fs, rw));
        let segs = lock(rw);
        let mut candidates = Vec::new();
        segs.visit_victim_candidates(|s| candidates.push(s));
        VictimInputs {
            candidates,
            now_secs: segs.elapsed_secs(),
            space: SpaceView::of(needs, &segs),
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
        }
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
