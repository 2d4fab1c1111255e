//! Garbage collection: making free sections by moving the valid blocks out of victim
//! sections (F2FS's `f2fs_gc`).
//!
//! Foreground GC runs when a writer finds too few free sections for what is pending
//! (`Fs::balance_fs`, the kernel's `f2fs_balance_fs`): with `cp_lock` held
//! exclusively it picks victims by the file system's [`GcPolicy`] and empties them
//! (`migrate`) until enough sections are free or nothing is left to clean, writing a
//! checkpoint whenever sections emptied since the last one are needed (they become
//! free only then). The loop follows the kernel's:
//!
//! 1. too few free sections and some prefree → checkpoint;
//! 2. pick a victim (none → stop);
//! 3. empty it; when free + emptied sections suffice and one section was freed → stop;
//! 4. free sections at most the pending need + 3 and some prefree → checkpoint; again.
//!
//! The prefer-data policies keep the seeds' `need_node_clean` switch: set when free
//! sections drop to the pending need + 3 or when no data victim is left, cleared when a
//! foreground pass ends.
//!
//! The default policy batches checkpoints instead: emptied sections wait across passes
//! for one checkpoint, written when free sections drop to every pending write + 3;
//! meanwhile they count as room, and a pass ends once free and emptied sections cover
//! every pending write, the reserved sections and the sections `batching` keeps back
//! so that more victims share a checkpoint.

mod background;
mod batching;
mod cursor;
pub mod greedy_model;
mod migrate;
pub use migrate::GC_PIN_FILE_THRESHOLD;
mod paced;
pub mod pacer;
mod policies;
mod policy;
mod range;
mod snapshot;
pub(crate) mod state;
mod status;

pub use status::{
    ByKind, CompressionSaved, DeviceBlocks, Fsyncs, GcCalls, Paced, Recovered, Status, WriteStatus, Writeback,
};

pub use background::{BgCleaner, BgOutcome, BgTimes};
use migrate::Migration;
pub use migrate::Moved;
pub use paced::{PacedOutcome, PacedWake};
pub use pacer::{GcPacing, PacingSettings, PacingStats};
pub use policies::GcKind;
pub use policy::GcPolicy;
pub use range::{GcRangeReport, GcRangeStop};
pub(crate) use state::GcState;
pub use state::{
    GcStats, KernelGcLoop, PassCounts, WriterModel, PASS_DIRTY_BINS, PASS_DIRTY_BIN_PAGES, PASS_FREE_BINS,
    PASS_WORK_BINS,
};

use policies::{PassLoop, VictimPolicy};
use snapshot::{SpaceView, VictimInputs};

use crate::checkpoint::write::CheckpointWriter;
use crate::fs::ReadWrite;
use crate::segment::{LogType, SectionInfo, SegmentManager, SpaceNeed};
use crate::{Fs, Result};
use std::time::Duration;
use uf2fs_format::consts::BLOCKS_PER_SEG;

/// Sections beyond the pending need under which GC checkpoints to reclaim prefree
/// sections and the prefer-data policies start cleaning nodes (the kernel's
/// `NR_GC_CHECKPOINT_SECS`). The same floor the default policy's writes keep while
/// prefree sections stand in for reserved ones, so that its checkpoint comes before
/// writes run short.
pub const GC_CHECKPOINT_SECS: u32 = crate::segment::PREFREE_ROOM_FLOOR_SECS;

/// Times an operation that found no room makes room and tries again before giving up
/// with ENOSPC (each time a checkpoint of prefree sections, a foreground GC pass
/// that emptied a section, or with GC off a checkpoint of the pending writes).
pub const RECLAIM_TRIES: u32 = 32;

/// Writes since open and what they cost: the figures of `uf2fs status` and the lab.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounting {
    /// 4 KiB blocks covered by the users' writes.
    pub user_blocks: u64,
    /// Device blocks written, by kind and device.
    pub device: crate::device::WriteCounts,
    /// GC counters.
    pub gc: GcStats,
    /// Valid blocks in the main area now.
    pub valid_blocks: u64,
    /// Blocks of the main area.
    pub main_blocks: u64,
}

impl Accounting {
    /// Write amplification: every device block written per user block (the seed's
    /// definition); 0 before any user write.
    pub fn waf(&self) -> f64 {
        if self.user_blocks == 0 {
            return 0.0;
        }
        self.device.total() as f64 / self.user_blocks as f64
    }

    /// Live data over main-area capacity.
    pub fn utilization(&self) -> f64 {
        self.valid_blocks as f64 / self.main_blocks.max(1) as f64
    }
}

/// Blocks the dirty nodes and pages will take from each log when written, the node
/// writes data writes cause included.
pub(crate) fn pending_need(fs: &Fs, rw: &ReadWrite) -> SpaceNeed {
    let nodes = fs.nodes().dirty_nodes_by_log();
    let pages = rw.pages().count_by_log();
    let mut need = SpaceNeed::default();
    for i in 0..need.per_log.len() {
        need.per_log[i] = nodes[i] + pages[i];
    }
    // Writing a dirty data block may dirty the node that points at it.
    need.per_log[LogType::HotNode as usize] += pages[LogType::HotData as usize];
    need.per_log[LogType::WarmNode as usize] += pages[LogType::WarmData as usize] + pages[LogType::ColdData as usize];
    need
}

/// Whether the sections emptied since the last checkpoint stand in for reserved ones
/// outside the batching default policy: under `adaptive`, which checkpoints its
/// emptied victims together once free sections reach the foreground threshold
/// ([`Fs::set_prefree_is_room`]).
fn prefree_stands_in(g: &GcState) -> bool {
    g.pacer.settings.pacing == GcPacing::Adaptive
}

/// The blocks each log takes for the dirty nodes and dirty directory blocks: what a
/// victim's move must leave room for besides itself ([`SpaceView::fits`]) and what
/// `adaptive` keeps free while prefree sections stand in for reserved ones. The
/// kernel's free-section rule itself, which in `mode=lfs` counts dirty file data
/// too, is [`SpaceView::enough`].
pub(crate) fn gc_need(fs: &Fs, rw: &ReadWrite) -> SpaceNeed {
    let mut need = SpaceNeed::default();
    need.per_log.copy_from_slice(&fs.nodes().dirty_nodes_by_log());
    let pages = rw.pages().count_by_log();
    need.per_log[LogType::HotData as usize] += pages[LogType::HotData as usize];
    need.per_log[LogType::HotNode as usize] += pages[LogType::HotData as usize];
    need
}

impl Fs {
    /// Sets the victim policy (read-write only).
    pub fn set_gc_policy(&self, policy: GcPolicy) -> Result<()> {
        let pass_loop = policies::for_policy(policy).pass_loop();
        self.gc_state_mut(|g| {
            g.policy = policy;
            g.pass_loop = pass_loop;
        })?;
        let rw = self.rw()?;
        self.set_prefree_is_room(rw);
        self.size_batches(rw);
        Ok(())
    }

    /// Whether an operation's room check lets the sections emptied since the last
    /// checkpoint stand in for reserved ones
    /// ([`crate::segment::SegmentManager::set_prefree_is_room`]): under the batching
    /// default policy, and under `adaptive`, whose cleaner checkpoints its emptied
    /// victims once free sections reach the foreground threshold. There a write
    /// whose data log must open a section (which [`Fs::writer_room`] does not
    /// count) would otherwise find no room while the cleaner is writing the dirty
    /// nodes ahead of that checkpoint, and write the checkpoint itself.
    pub(crate) fn set_prefree_is_room(&self, rw: &ReadWrite) {
        let on = {
            let g = rw.gc();
            g.pass_loop == PassLoop::Batched || prefree_stands_in(&g)
        };
        rw.segs().set_prefree_is_room(on);
    }

    /// Chooses again how many sections the default policy keeps back for its
    /// checkpoint batches, from the volume as it stands ([`batching`]).
    fn size_batches(&self, rw: &ReadWrite) {
        let nodes = self.nodes().counts().valid_node_count as u64;
        let volume = {
            let segs = rw.segs();
            let reserved = segs.reserved_sections() as u64;
            batching::Volume {
                section_blocks: segs.segs_per_sec() as u64 * BLOCKS_PER_SEG as u64,
                valid_blocks: segs.valid_block_count(),
                usable_sections: (segs.section_count() as u64)
                    .saturating_sub(reserved + segs.active_logs().count() as u64),
                nodes,
                base_batch: reserved.saturating_sub(GC_CHECKPOINT_SECS as u64).max(1),
            }
        };
        let mut g = rw.gc();
        g.batch_extra = if g.pass_loop == PassLoop::Batched {
            batching::extra_sections(&volume)
        } else {
            0
        };
    }

    /// Makes the file system's clock (SIT mtimes, the checkpoint's elapsed time, the
    /// ages of cost-benefit and ATGC) advance one second per `blocks_per_sec` blocks
    /// allocated instead of with real time, so that runs writing the same blocks choose
    /// the same victims on any machine (the lab does this); `None` restores real time
    /// (read-write only).
    pub fn set_simulated_clock(&self, blocks_per_sec: Option<u64>) -> Result<()> {
        self.rw()?.segs().set_simulated_clock(blocks_per_sec);
        Ok(())
    }

    /// Turns foreground GC on or off (on by default; off, a volume without free
    /// sections answers writes with ENOSPC).
    pub fn set_gc_enabled(&self, enabled: bool) -> Result<()> {
        self.gc_state_mut(|g| g.enabled = enabled)
    }

    /// Chooses how writers without flusher threads meet GC ([`WriterModel`]; the
    /// default is [`WriterModel::Eager`], the lab's bench runs choose
    /// [`WriterModel::Kernel`]).
    pub fn set_writer_model(&self, model: WriterModel) -> Result<()> {
        self.gc_state_mut(|g| g.writers = model)
    }

    /// Under [`WriterModel::Kernel`], holds the writer at `pages` dirty pages (where it
    /// writes pages back itself, as Linux's `balance_dirty_pages` holds a writer)
    /// instead of [`crate::WRITER_HOLD_PAGES`]. Near a full volume the WAF follows the
    /// dirty level GC's victims find, and Linux's depends on how fast its guest's
    /// flusher and writer run against each other (docs/waf-lab.md, "Near full: the
    /// plateau follows the dirty level"). From [`crate::WRITER_HOLD_MIN_PAGES`] to
    /// [`crate::WRITER_HOLD_MAX_PAGES`]; else [`crate::Error::Invalid`].
    pub fn set_writer_hold(&self, pages: usize) -> Result<()> {
        use crate::writeback::pace::{WRITER_HOLD_MAX_PAGES, WRITER_HOLD_MIN_PAGES};
        if !(WRITER_HOLD_MIN_PAGES..=WRITER_HOLD_MAX_PAGES).contains(&pages) {
            return Err(crate::Error::Invalid(format!(
                "a writer hold of {pages} dirty pages: from {WRITER_HOLD_MIN_PAGES} (past where the \
                 flusher starts) to {WRITER_HOLD_MAX_PAGES} (4 MiB)"
            )));
        }
        self.rw()?.flusher_pace().set_hold(pages);
        Ok(())
    }

    /// Chooses the Linux release whose `f2fs_gc` loop the kernel-loop policies run
    /// ([`KernelGcLoop`]; the default is [`KernelGcLoop::Linux612`]).
    pub fn set_kernel_gc_loop(&self, kernel: KernelGcLoop) -> Result<()> {
        self.gc_state_mut(|g| g.kernel_loop = kernel)
    }

    /// What was written since open: user blocks, device blocks by kind, GC counters,
    /// and the write amplification (read-write only).
    pub fn accounting(&self) -> Result<Accounting> {
        let rw = self.rw()?;
        let gc = rw.gc().stats;
        let (valid, main) = {
            let s = rw.segs();
            let main = s.section_count() as u64 * s.segs_per_sec() as u64 * 512;
            (s.valid_block_count(), main)
        };
        Ok(Accounting {
            user_blocks: rw.user_blocks(),
            device: self.write_counts(),
            gc,
            valid_blocks: valid,
            main_blocks: main,
        })
    }

    /// The victim policy in force (read-write only).
    pub fn gc_policy(&self) -> Result<GcPolicy> {
        Ok(self.rw()?.gc().policy)
    }

    /// GC counters since open.
    pub fn gc_stats(&self) -> Result<GcStats> {
        let rw = self.rw()?;
        Ok(rw.gc().stats)
    }

    fn gc_state_mut(&self, f: impl FnOnce(&mut GcState)) -> Result<()> {
        let rw = self.rw()?;
        f(&mut rw.gc());
        Ok(())
    }

    /// Whether an operation may go on without foreground GC: free sections cover the
    /// pending writes with the reserved sections and one to spare. Under the default
    /// policy, which batches checkpoints, the sections emptied since the last
    /// checkpoint count too, and so do the sections [`batching`] keeps back, as long as
    /// no checkpoint is due: free sections above every pending write +
    /// [`GC_CHECKPOINT_SECS`], or nothing prefree to reclaim (the seed patches' rule).
    /// Called before every operation: the pending writes are counted once.
    fn room_without_gc(&self, rw: &ReadWrite, pass_loop: PassLoop) -> bool {
        let extra = match pass_loop {
            PassLoop::Batched => rw.gc().batch_extra,
            _ => 0,
        };
        room_in(&SpaceView::take(self, rw), pass_loop, extra)
    }

    /// F2FS's `f2fs_balance_fs`: before an operation, when free sections do not cover
    /// the pending node and directory writes with one section to spare, runs
    /// foreground GC. Cheap when
    /// there is room.
    pub(crate) fn balance_fs(&self) -> Result<()> {
        let rw = self.rw()?;
        let (enabled, pass_loop, paced) = {
            let mut g = rw.gc();
            g.note_op();
            (g.enabled, g.pass_loop, g.paced())
        };
        if !enabled || self.writer_room(rw, pass_loop, paced) {
            return Ok(());
        }
        self.timed(
            rw,
            |p| &mut p.writer_gc_time,
            || self.balance_fs_slow(rw, pass_loop, paced),
        )
    }

    /// Runs `work` and adds the time it took, on the file system's clock, to the
    /// pacer's counter `counter` picks.
    fn timed<T>(&self, rw: &ReadWrite, counter: fn(&mut PacingStats) -> &mut Duration, work: impl FnOnce() -> T) -> T {
        let t0 = self.now();
        let r = work();
        let took = self.now().saturating_sub(t0);
        *counter(&mut rw.gc().pacer.stats) += took;
        r
    }

    /// [`Fs::balance_fs`] once a quick look found no room.
    fn balance_fs_slow(&self, rw: &ReadWrite, pass_loop: PassLoop, paced: bool) -> Result<()> {
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        if self.writer_room(rw, pass_loop, paced) {
            return Ok(());
        }
        // The hard floor of paced GC: a writer with no room does the least that makes
        // room: a checkpoint of the sections already emptied (they are free only after
        // one), then the rest of the paced victim in progress and its checkpoint, and
        // only if that is not enough a pass. Under `off` there is no paced victim and
        // the pass (the kernel's loop, which checkpoints first) runs as always.
        if paced && self.writer_checkpoint(rw, &mut writer, pass_loop)? {
            return Ok(());
        }
        if paced {
            rw.gc().pacer.behind = true;
        }
        if self.finish_paced_victim_timed(rw, &writer)?
            && (self.writer_room(rw, pass_loop, paced)
                || (paced && self.writer_checkpoint(rw, &mut writer, pass_loop)?))
        {
            return Ok(());
        }
        let floor = paced && pass_loop != PassLoop::Batched;
        self.gc_locked_at(rw, &mut writer, GcKind::Foreground, Call { floor, balance: true })
            .map(|_| ())
    }

    /// A paced writer's checkpoint of prefree sections, if any; whether there is room
    /// after it. Under the batching default policy only once its checkpoint is due
    /// (free sections down to the pending writes + [`GC_CHECKPOINT_SECS`]), as its
    /// pass does: there prefree sections count as room, and a writer that found none
    /// for another reason would otherwise checkpoint a few victims at a time (three
    /// times `off`'s checkpoints at full speed on the small preset, WAF +14.6%).
    fn writer_checkpoint(&self, rw: &ReadWrite, writer: &mut CheckpointWriter, pass_loop: PassLoop) -> Result<bool> {
        if self.prefree_count(rw) == 0 {
            return Ok(false);
        }
        if pass_loop == PassLoop::Batched && !SpaceView::take(self, rw).low(true) {
            return Ok(false);
        }
        let r = self.gc_checkpoint(rw, writer);
        rw.fail_unless_no_space(&r);
        r?;
        Ok(self.writer_room(rw, pass_loop, true))
    }

    /// Whether a writer may go on without making room. Under `off` (and for the
    /// batching default policy) [`Fs::room_without_gc`]. Under a pacer, whose cleaner
    /// works ahead of writers from that threshold down, a writer stops only at F2FS's
    /// own floor (the kernel's `has_not_enough_free_secs`): free sections covering the
    /// pending node and directory writes and the reserved sections, without the
    /// section to spare, so that the paced cleaner has that section to finish its
    /// victim in. Only while the cleaner is delivering (a victim in progress or
    /// emptied sections waiting for a checkpoint) and keeping up: once a writer had
    /// to clean itself, writers keep off's spare section until the cleaner is ahead
    /// again (`PacerState::behind`), since at the floor itself each victim gives back
    /// about what its moves take and a writer there waits for many. Under `adaptive`,
    /// while it delivers, the sections its checkpoint will free stand in for reserved
    /// ones as in an operation's own room check ([`Fs::set_prefree_is_room`]), down
    /// to [`crate::segment::PREFREE_ROOM_FLOOR_SECS`] really free sections.
    fn writer_room(&self, rw: &ReadWrite, pass_loop: PassLoop, paced: bool) -> bool {
        if paced && pass_loop != PassLoop::Batched {
            let (in_progress, behind, stands_in) = {
                let g = rw.gc();
                (g.pacer.victim.is_some(), g.pacer.behind, prefree_stands_in(&g))
            };
            let view = SpaceView::take(self, rw);
            let delivering = !behind && (in_progress || view.prefree > 0);
            if delivering && stands_in && view.prefree_room() {
                return true;
            }
            return view.enough_paced(0, if delivering { 0 } else { 1 });
        }
        self.room_without_gc(rw, pass_loop)
    }

    /// Runs one garbage-collection pass of `kind` now (foreground: until enough
    /// sections are free or nothing is left to clean; background: one victim), and
    /// returns the sections it emptied. For tests, the lab and the background thread.
    pub fn gc(&self, kind: GcKind) -> Result<u64> {
        self.stop_on_damage(self.gc_inner(kind))
    }

    /// [`Fs::gc`], before damage it reports stops the volume.
    fn gc_inner(&self, kind: GcKind) -> Result<u64> {
        let rw = self.rw()?;
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        self.gc_locked(rw, &mut writer, kind)
    }

    /// Makes room after an operation found none: a foreground pass, forced to empty at
    /// least one section (or to checkpoint prefree ones; with GC off, to checkpoint the
    /// pending writes). Returns whether anything was gained; false means the volume is
    /// really full.
    pub(crate) fn reclaim_space(&self) -> Result<bool> {
        let rw = self.rw()?;
        self.timed(rw, |p| &mut p.writer_gc_time, || self.reclaim_space_locked(rw))
    }

    fn reclaim_space_locked(&self, rw: &ReadWrite) -> Result<bool> {
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        let prefree = rw.segs().prefree_count();
        if prefree > 0 {
            self.gc_checkpoint(rw, &mut writer)?;
            return Ok(true);
        }
        let (enabled, floor) = {
            let g = rw.gc();
            (g.enabled, g.paced() && g.pass_loop != PassLoop::Batched)
        };
        if !enabled {
            // No cleaner (an `ro` volume being built, or GC turned off): the one room
            // left to gain is what the room check holds back for the pending writes,
            // which it counts at their worst (a node block for every dirty data block,
            // each log's last section whole). A checkpoint writes them, so they take
            // what they really take; each was admitted with room for that worst case,
            // so writing them cannot run out.
            if rw.pages().is_empty() && self.nodes().dirty_node_count() == 0 {
                return Ok(false);
            }
            self.gc_checkpoint_all(rw, &mut writer)?;
            return Ok(true);
        }
        Ok(self.gc_locked_at(rw, &mut writer, GcKind::Foreground, Call { floor, balance: false })? > 0)
    }

    /// GC's checkpoint: frees the emptied sections and writes the dirty nodes, leaving
    /// regular files' dirty pages to writeback, as the kernel's `f2fs_gc` does
    /// ([`Fs::checkpoint_locked_without_file_data`]). Under a pacer it writes them too
    /// ([`GcState::paced`]: the pacer's margin and its writers' floor count on
    /// checkpoints that leave no dirty data for operations' room checks).
    fn gc_checkpoint(&self, rw: &ReadWrite, writer: &mut CheckpointWriter) -> Result<()> {
        let paced = rw.gc().paced();
        self.gc_checkpoint_with(rw, writer, paced)
    }

    /// A checkpoint GC writes with every dirty page first: when no victim is left
    /// (overwrites in the page cache have not invalidated their old blocks yet), or
    /// with no cleaner to make room but writing what is pending.
    fn gc_checkpoint_all(&self, rw: &ReadWrite, writer: &mut CheckpointWriter) -> Result<()> {
        self.gc_checkpoint_with(rw, writer, true)
    }

    fn gc_checkpoint_with(&self, rw: &ReadWrite, writer: &mut CheckpointWriter, file_data: bool) -> Result<()> {
        let t0 = self.now();
        if file_data {
            self.checkpoint_locked(rw, writer, false)?;
        } else {
            self.checkpoint_locked_without_file_data(rw, writer)?;
        }
        let took = self.now().saturating_sub(t0);
        {
            let mut g = rw.gc();
            g.stats.checkpoints += 1;
            g.pacer.stats.checkpoint_time += took;
        }
        self.size_batches(rw);
        Ok(())
    }

    /// [`Fs::gc_checkpoint`], and the free space after it.
    fn gc_checkpoint_view(&self, rw: &ReadWrite, writer: &mut CheckpointWriter) -> Result<SpaceView> {
        self.gc_checkpoint(rw, writer)?;
        Ok(SpaceView::take(self, rw))
    }

    /// [`Fs::finish_paced_victim`] for a writer, its time counted as GC time.
    fn finish_paced_victim_timed(&self, rw: &ReadWrite, writer: &CheckpointWriter) -> Result<bool> {
        let r = self.timed(rw, |p| &mut p.gc_time, || self.finish_paced_victim(rw, writer, true));
        rw.fail_unless_no_space(&r);
        r
    }

    fn gc_locked(&self, rw: &ReadWrite, writer: &mut CheckpointWriter, kind: GcKind) -> Result<u64> {
        self.gc_locked_at(rw, writer, kind, Call::default())
    }

    /// [`Fs::gc_locked`] as `call` says (see [`Call`]).
    fn gc_locked_at(&self, rw: &ReadWrite, writer: &mut CheckpointWriter, kind: GcKind, call: Call) -> Result<u64> {
        let r = self.timed(
            rw,
            |p| &mut p.gc_time,
            || {
                self.finish_paced_victim(rw, writer, false)
                    .and_then(|_| self.gc_pass(rw, writer, kind, call))
            },
        );
        if kind == GcKind::Foreground {
            rw.gc().node_clean = false;
        }
        rw.fail_unless_no_space(&r);
        r
    }

    /// Under the kernel's writer model, the pages of the flusher's round under way
    /// that go out while a writer's pass moves a victim: Linux's flusher writes on
    /// while the pass waits for the victim's I/O, and each of its pages' balance
    /// returns at once while the free-section rule finds room (under Linux 6.12's
    /// loop after the checkpoint at the top of the pass, which takes a victim
    /// anyway; 6.1's takes one only when there is no room). Without them the lab's
    /// round waited for the writer, and the writer for room in the data log the
    /// round writes to (docs/waf-lab.md, "Near full: the flusher beside the writer's
    /// pass, and lazytime").
    fn flusher_pages_beside_pass(&self, rw: &ReadWrite, writer: &CheckpointWriter) -> Result<()> {
        let node_ver = writer.last().node_version();
        while SpaceView::take(self, rw).enough(0, 1) && rw.flusher_pace().page_beside_pass() {
            if !self.write_back_one_page(Some(node_ver))? {
                rw.flusher_pace().end_round();
                break;
            }
        }
        Ok(())
    }

    fn gc_pass(&self, rw: &ReadWrite, writer: &mut CheckpointWriter, kind: GcKind, call: Call) -> Result<u64> {
        let view = SpaceView::take(self, rw);
        let (victims, checkpoints) = {
            let g = rw.gc();
            (g.stats.data_victims + g.stats.node_victims, g.stats.checkpoints)
        };
        let r = self.gc_rounds(rw, writer, kind, call, view);
        if kind == GcKind::Foreground {
            let mut g = rw.gc();
            let s = &mut g.stats;
            let took = s.data_victims + s.node_victims - victims;
            let wrote = s.checkpoints - checkpoints;
            s.passes.count(took, wrote, view.pass_start());
        }
        r
    }

    /// The rounds of one pass, from `view` of the free space at its start (see
    /// [`Fs::gc_pass`]).
    fn gc_rounds(
        &self,
        rw: &ReadWrite,
        writer: &mut CheckpointWriter,
        kind: GcKind,
        call: Call,
        mut view: SpaceView,
    ) -> Result<u64> {
        let Call { floor, balance } = call;
        let (policy, kernel_writers, kernel_loop) = {
            let mut g = rw.gc();
            match kind {
                GcKind::Foreground => g.stats.fg_calls += 1,
                GcKind::Background => g.stats.bg_calls += 1,
            }
            (g.policy, g.kernel_writers(), g.kernel_loop)
        };
        // Under the kernel's writer model, a pass `f2fs_balance_fs` started ends when
        // it finds no victim (`ENODATA`), dirty pages or not: the flusher's writes
        // invalidate the old blocks, and its balance after each page finds them. An
        // operation that finds no room ([`Fs::reclaim_space`]) still writes them.
        let flush_without_victim = !(balance && kernel_writers);
        // The seed patches moved the kernel's checkpoint step to the top of the loop
        // (a checkpoint only when free sections run down to the pending need + 3, so
        // that several victims share one) and made it set need_node_clean, but kept a
        // checkpoint at the start of every pass that finds too few free sections, so
        // a pass rarely shares its checkpoint with the next. uf2fs's default drops that
        // one: emptied sections wait for the next checkpoint across passes and count as
        // room meanwhile ([`Fs::room_without_gc`]), and a pass ends as soon as there is
        // room. The other policies run the kernel's loop, as the release `kernel_loop`
        // names has it ([`KernelGcLoop`]): Linux 6.12 checkpoints the prefree sections
        // at the top of every round that finds too little room, Linux 6.1 on the first
        // round only; both also checkpoint when free sections run down to the need + 3.
        let victims = policies::for_policy(policy);
        let node_rules = victims.pass_loop() == PassLoop::NodeClean;
        let batch = victims.pass_loop() == PassLoop::Batched;
        let seed_loop = node_rules || batch;
        let linux_6_12 = !seed_loop && kernel_loop == KernelGcLoop::Linux612;
        let mut freed_since_cp = 0u32;
        let mut freed_total = 0u64;
        let mut flushed = false;
        let mut first = true;
        let mut checkpointed = false;
        // A batching pass ends only when there is room; on a volume that cannot give
        // any, it gives up after as many victims as there are sections and lets the
        // operation find no space.
        let mut victims_left = rw.segs().section_count();
        // Each round decides from one view of the free space, taken again after
        // anything that changes the segments (a checkpoint, a migrated victim).
        let mut pinned_secs: Vec<u32> = Vec::new();
        loop {
            if seed_loop && view.low(batch) {
                if node_rules {
                    self.set_node_clean(rw, true);
                }
                if view.prefree > 0 {
                    view = self.gc_checkpoint_view(rw, writer)?;
                    freed_since_cp = 0;
                    checkpointed = true;
                }
            }
            // The kernel's "not enough free sections: foreground, and checkpoint the
            // prefree ones first": Linux 6.1 does it while the pass is still background
            // GC, on its first round (so does the patched loop), Linux 6.12 on every
            // round.
            if (linux_6_12 || (first && !batch)) && !view.enough(0, 1) && view.prefree > 0 {
                view = self.gc_checkpoint_view(rw, writer)?;
                freed_since_cp = 0;
                // Called from balance_fs, Linux 6.1's f2fs_gc starts as background GC
                // (`init_gc_type` BG_GC with `no_bg_gc`): it turns to foreground only if
                // that checkpoint left too few free sections, and else ends there.
                // Linux 6.12 turns to foreground before the checkpoint and takes a
                // victim whatever it left.
                if first && balance && !batch && !linux_6_12 && view.enough(0, 1) {
                    break;
                }
            }
            if batch && kind == GcKind::Foreground && (!first || checkpointed) {
                let extra = rw.gc().batch_extra;
                if room_in(&view, PassLoop::Batched, extra) {
                    break;
                }
            }
            first = false;
            // The selection's inputs, of one moment (the view above, with the
            // candidates): nothing changes the segments until the victim is chosen.
            let mut inputs = VictimInputs::take(self, rw);
            inputs.candidates.retain(|c| !pinned_secs.contains(&c.secno));
            let Some(victim) = self.select_from(rw, &inputs, victims.as_ref(), kind) else {
                // Overwrites still in the page cache have not invalidated their old
                // blocks yet: write everything (a checkpoint) and look again, once.
                let dirty = rw.pages().len() + self.nodes().dirty_node_count();
                if kind == GcKind::Foreground && flush_without_victim && !flushed && dirty > 0 {
                    self.gc_checkpoint_all(rw, writer)?;
                    view = SpaceView::take(self, rw);
                    flushed = true;
                    freed_since_cp = 0;
                    continue;
                }
                break;
            };
            // A victim must leave room for what moving it writes: its valid blocks, and
            // for data as many node blocks again at worst (each moved block may dirty
            // its own node), on top of what is pending. Policies that do not take the
            // cheapest section (cost-benefit, weights, ATGC) could otherwise spend the
            // last free sections on a full victim and run out; then a checkpoint comes
            // first when prefree sections can be had, else the cheapest section goes.
            let victim = if inputs.space.fits(&victim, batch) {
                victim
            } else if inputs.space.prefree > 0 {
                view = self.gc_checkpoint_view(rw, writer)?;
                freed_since_cp = 0;
                continue;
            } else {
                inputs.cheapest().unwrap_or(victim)
            };
            if balance && kernel_writers {
                self.flusher_pages_beside_pass(rw, writer)?;
            }
            let cp_ver = writer.last().node_version();
            let started = self.now();
            let moved = migrate::migrate_section(&self.tree(rw), victim.secno, cp_ver, kind == GcKind::Foreground)?;
            if moved.pinned > 0 {
                // Blocks of pinned files stay: the section is not picked again in this
                // pass (Linux's `pinned_secmap`).
                pinned_secs.push(victim.secno);
            }
            let ended = self.now();
            {
                let mut g = rw.gc();
                g.pacer.victim_started(started);
                g.pacer
                    .stats
                    .victim_timed(ended.saturating_sub(started), victim.is_node);
                g.stats.count_victim(victim.is_node);
                g.stats.count_moved(&moved);
            }
            if moved.emptied {
                freed_since_cp += 1;
                freed_total += 1;
            }
            if kind == GcKind::Background {
                break;
            }
            view = SpaceView::take(self, rw);
            if floor {
                // A paced writer waits for one victim at most, as a writer under `off`
                // does (its pass ends after one victim, counting it as room), and for
                // the victims' checkpoint only when free sections alone fall short of
                // the floor. The kernel's loop would go on until a section is to spare,
                // which at the floor can take tens of victims in one write: each data
                // victim's moves and the nodes they dirty fill about what it frees.
                // The operation's own room check still keeps the reserved sections; if
                // it fails, `reclaim_space` makes room one victim at a time.
                if !view.enough(0, 0) && view.prefree > 0 {
                    self.gc_checkpoint(rw, writer)?;
                }
                break;
            }
            if batch {
                // The loop's top checkpoints when due and ends the pass when there is room.
                victims_left = victims_left.saturating_sub(1);
                if victims_left == 0 {
                    break;
                }
                continue;
            }
            let node_clean = rw.gc().node_clean;
            // Linux 6.1 counts the sections the pass emptied (`sec_freed`) over the
            // whole pass, also after a checkpoint has made them free, so that a pass
            // ends right after the victim that follows its checkpoint; Linux 6.12 and
            // the seed loops count those emptied since the last checkpoint.
            let freed = if seed_loop || linux_6_12 {
                freed_since_cp
            } else {
                u32::try_from(freed_total).unwrap_or(u32::MAX)
            };
            if view.enough(freed, 1) && !(seed_loop && node_clean) {
                break;
            }
            if !seed_loop && view.low(false) && view.prefree > 0 {
                view = self.gc_checkpoint_view(rw, writer)?;
                freed_since_cp = 0;
            }
        }
        Ok(freed_total)
    }

    /// Whether free sections hold what moving `v` writes now (see [`SpaceView::fits`]).
    fn victim_fits(&self, rw: &ReadWrite, v: &SectionInfo, all_pending: bool) -> bool {
        SpaceView::take(self, rw).fits(v, all_pending)
    }

    /// The section with the fewest valid blocks now (greedy's choice, any type).
    fn cheapest_victim(&self, rw: &ReadWrite) -> Option<SectionInfo> {
        VictimInputs::take(self, rw).cheapest()
    }

    fn set_node_clean(&self, rw: &ReadWrite, on: bool) {
        rw.gc().node_clean = on;
    }

    /// The victim under `victims` (see [`policies`]), with the seed patches' rules around
    /// need_node_clean:
    /// - v1 (foreground only): node sections only while node cleaning is on; then a
    ///   data section still cheapest ends node cleaning when free sections (with the
    ///   prefree ones) suffice, and the pass stops;
    /// - v2: no data victim left turns node cleaning on and searches again; with node
    ///   cleaning on, a data section cheapest stops the pass when free sections (with
    ///   the prefree ones) suffice.
    ///
    /// The patches pass the prefree *segment* count where sections are meant; kept.
    fn select_victim(&self, rw: &ReadWrite, victims: &dyn VictimPolicy, kind: GcKind) -> Result<Option<SectionInfo>> {
        Ok(self.select_from(rw, &VictimInputs::take(self, rw), victims, kind))
    }

    /// [`Fs::select_victim`] on inputs already taken.
    fn select_from(
        &self,
        rw: &ReadWrite,
        inputs: &VictimInputs,
        victims: &dyn VictimPolicy,
        kind: GcKind,
    ) -> Option<SectionInfo> {
        loop {
            let (node_clean, node_writes_per_data_block) = {
                let g = rw.gc();
                (g.node_clean, g.stats.node_writes_per_data_block())
            };
            let sel = policies::Selection {
                kind,
                node_clean,
                now_secs: inputs.now_secs,
                node_writes_per_data_block,
            };
            let found = victims.pick(&inputs.candidates, &sel);
            let Some(rules) = victims.node_clean_rules(kind) else {
                return found;
            };
            match found {
                None if rules.on_when_no_data_victim && !node_clean => {
                    self.set_node_clean(rw, true);
                }
                Some(v) if node_clean && !v.is_node => {
                    let space = &inputs.space;
                    if space.enough(space.prefree, 1) {
                        if rules.off_when_data_suffices {
                            self.set_node_clean(rw, false);
                        }
                        return None;
                    }
                    return Some(v);
                }
                other => return other,
            }
        }
    }

    fn prefree_count(&self, rw: &ReadWrite) -> u32 {
        rw.segs().prefree_count()
    }

    fn free_sections(&self, rw: &ReadWrite) -> u32 {
        rw.segs().free_section_count()
    }

    /// Sections the pending writes take (the kernel's `upper_secs` without the
    /// reserved ones); with `all`, dirty file data too, which the checkpoint writes
    /// as well (what the batching default policy keeps room for, since it lets writes
    /// use the reserved sections that otherwise cover file data).
    fn pending_sections(&self, rw: &ReadWrite, all: bool) -> u32 {
        let need = if all { pending_need(self, rw) } else { gc_need(self, rw) };
        sections_of(&rw.segs(), &need)
    }
}

/// [`Fs::room_without_gc`] on a view: free sections cover the pending writes with the
/// reserved sections and one to spare; under [`PassLoop::Batched`], every pending
/// write, the prefree sections counting as free and `batch_extra` more kept, as long
/// as no checkpoint is due.
fn room_in(v: &SpaceView, pass_loop: PassLoop, batch_extra: u32) -> bool {
    if pass_loop != PassLoop::Batched {
        return v.enough(0, 1);
    }
    let checkpoint_due = v.prefree > 0 && v.low(true);
    v.enough_for_all(v.prefree_gain, 1 + batch_extra) && !checkpoint_due
}

/// How a pass was called: what ends it early.
#[derive(Debug, Clone, Copy, Default)]
struct Call {
    /// A paced writer's pass, or its reclaim: the pass ends after one victim,
    /// checkpointing it only if free sections fall short of F2FS's floor without it
    /// ([`Fs::writer_room`]).
    floor: bool,
    /// From [`Fs::balance_fs`] (the kernel's `f2fs_balance_fs`): a checkpoint of the
    /// prefree sections that leaves enough free ends the pass without a victim (the
    /// kernel loop and the seed patches' node rules; the batching default has its own
    /// end).
    balance: bool,
}

/// Whole free sections `need` takes from the logs.
fn sections_of(segs: &SegmentManager, need: &SpaceNeed) -> u32 {
    // Needs are per block class; with fewer active logs classes share a log.
    let per_log = segs.active_logs().fold(&need.per_log);
    LogType::ALL
        .iter()
        .map(|&l| segs.sections_needed(l, per_log[l as usize]))
        .sum()
}
