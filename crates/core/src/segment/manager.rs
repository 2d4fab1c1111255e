//! [`SegmentManager`]: the in-memory SIT, free and prefree segments, and the six active
//! logs; hands out blocks by F2FS's LFS rules and tells the checkpoint what changed.

use super::active_logs::ActiveLogs;
use super::curseg::{load_logs, CurSeg, LogType, ALLOC_LFS, NR_LOGS};
use super::free::FreeMap;
use super::sit::{load_sit, write_sit_blocks, SegEntry, SitArea};
use super::SegmentUsage;
use crate::checkpoint::CheckpointState;
use crate::device::{read_block, BlockDevice};
use crate::{Error, Result};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Instant;
use uf2fs_format::consts::{BLOCKS_PER_SEG, ENTRIES_IN_SUM};
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::{Summary, SummaryBlock};
use uf2fs_format::superblock::Superblock;

mod recovery;
mod space;
mod victims;
pub use space::{SpaceNeed, PREFREE_ROOM_FLOOR_SECS};
pub use victims::SectionInfo;

/// `CurSeg::segno` of a closed stream log.
const CLOSED: u32 = u32::MAX;

/// 0 for a data segment type, 1 for a node one.
fn kind_of(seg_type: u8) -> usize {
    usize::from(seg_type >= LogType::HotNode as u8)
}

/// Main-area geometry the manager needs.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    main_blkaddr: u64,
    segments: u32,
    segs_per_sec: u32,
    secs_per_zone: u32,
    ssa_blkaddr: u64,
    /// The `ro` feature's layout: no SSA, and only the hot data and hot node logs are
    /// written (the other four stay where mkfs put them, at segment 0).
    ro: bool,
    sit: SitArea,
    /// The volume's block geometry (summary blocks are whole blocks).
    blocks: uf2fs_format::Geometry,
}

/// The file system's age clock: the checkpoint's `elapsed_time` at open plus the time
/// since (the kernel's `get_mtime`). SIT mtimes and the checkpoint use it.
/// With `blocks_per_sec`, the clock is simulated instead: one second per that many
/// blocks allocated since open, so that runs which write the same blocks see the same
/// ages however fast the machine is (the lab's runs).
#[derive(Debug, Clone, Copy)]
struct Clock {
    at_open_secs: u64,
    opened: Instant,
    blocks_per_sec: Option<u64>,
}

impl Clock {
    /// Seconds now; `allocated` is the blocks allocated since open.
    fn now_secs(&self, allocated: u64) -> u64 {
        match self.blocks_per_sec {
            Some(rate) => self.at_open_secs + allocated / rate.max(1),
            None => self.at_open_secs + self.opened.elapsed().as_secs(),
        }
    }
}

/// Block allocations between two readings of the clock for segment ages (ages are in
/// whole seconds; reading the clock for every block cost more than the rest of the
/// allocation).
const CLOCK_EVERY: u32 = 256;

/// What a SIT flush leaves for the checkpoint pack.
#[derive(Debug, Clone, Default)]
pub struct SitFlush {
    /// Entries for the SIT journal (cold data summaries).
    pub journal: Vec<(u32, SitEntry)>,
    /// SIT blocks written to their other copy.
    pub blocks_written: u32,
}

/// Segment state of a read-write file system. Owns the SIT (valid maps, counts, types,
/// mtimes), the dirty-SIT set, the free and prefree segments and the six active logs.
/// Memory: one entry per main-area segment, as the kernel keeps; the dirty and prefree
/// sets are bounded by the segment count.
pub struct SegmentManager {
    geo: Geometry,
    sit: Vec<SegEntry>,
    /// SIT version bitmap as the next checkpoint records it.
    sit_bitmap: Vec<u8>,
    /// Segments whose entries live in the checkpoint's SIT journal.
    sit_journal: BTreeSet<u32>,
    /// Segments whose entries changed since the last checkpoint.
    dirty: BTreeSet<u32>,
    free: FreeMap,
    /// Segments emptied since the last checkpoint: free after the next one.
    prefree: BTreeSet<u32>,
    /// Segments freed by the last checkpoints, not yet discarded on the device.
    to_discard: Vec<u32>,
    /// Whether checkpoints leave the discards (zone resets) of the sections they free
    /// queued in `to_discard`, for [`SegmentManager::discard_some`] in idle time; a
    /// queued section is discarded before a log enters it ([`SegmentManager::new_segment`]).
    defer_discards: bool,
    /// Valid blocks in data and in node segments.
    valid_kind: [u64; 2],
    /// Blocks allocated since open: the logical clock of segment ages.
    allocated: u64,
    /// Per segment, the mean of `allocated` over its blocks' writes (its logical age
    /// stamp; not on disk: segments opened with data count as written at open).
    written_at: Vec<u64>,
    /// Per segment, how many times a log entered it since open (it was free then): a
    /// paced victim whose segments were entered since it was picked was freed and
    /// reused under it ([`SegmentManager::section_opens`]).
    opens: Vec<u32>,
    /// The clock's last reading, and allocations since (see [`CLOCK_EVERY`]).
    clock_now: u64,
    clock_ticks: u32,
    /// Blocks invalidated in data and in node segments since open.
    invalidated: [u64; 2],
    /// Per segment, blocks invalidated since the last checkpoint: the kernel's
    /// `ckpt_valid_blocks` still counts them (its checkpoint bitmap keeps every block
    /// valid at the last checkpoint or allocated since), so a segment's checkpoint
    /// count is its valid blocks plus these (see
    /// [`SegmentManager::log_sections_ckpt_room`]).
    cp_invalidated: HashMap<u32, u32>,
    logs: [CurSeg; NR_LOGS],
    /// Warm data logs of writeback contexts 1, 2, ... (stream logs; context 0 writes
    /// the warm data log above). Not recorded by checkpoints: closed before each one
    /// ([`SegmentManager::prepare_checkpoint`]), their segments left as any written
    /// segment; `segno` is [`CLOSED`] while closed. Log index `NR_LOGS + k` is stream
    /// `k + 1`'s.
    streams: Vec<CurSeg>,
    /// The logs written to (`active_logs`): block classes fold onto them.
    active_logs: ActiveLogs,
    valid_blocks: u64,
    clock: Clock,
    /// Space rules of the write path (see [`space`]).
    space: space::SpaceRules,
    /// Summary entries roll-forward recovery set outside the logs, by segment, until
    /// [`SegmentManager::finish_recovery`] writes them (see [`recovery`]).
    recovered: std::collections::BTreeMap<u32, recovery::RecoveredSummaries>,
    /// The log roll-forward recovery walks (warm node) left a segment it had not
    /// filled since the last checkpoint: recovery, which starts at the checkpoint's
    /// position of that log and follows the node footers' `next_blkaddr`, cannot
    /// reach the blocks it writes now (see [`SegmentManager::fsync_chain_intact`]).
    chain_broken: bool,
    /// The first main-area segment fsck.f2fs 1.15 takes for past the end of the main
    /// area when it follows the roll-forward chain (see [`fsck_roll_forward_limit`]).
    fsck_limit: u32,
    /// The warm node log took a block in segment `fsck_limit` or later since the last
    /// checkpoint (or that checkpoint left it there): fsck.f2fs 1.15 stops following
    /// the roll-forward chain at that block, without a word, and never sees the
    /// fsync'd nodes after it (see [`SegmentManager::fsync_chain_intact`]).
    chain_past_fsck_limit: bool,
    /// Inodes with a node block written to the warm node log since the last
    /// checkpoint that points at a data block in segment `fsck_limit` or later:
    /// fsck.f2fs 1.15 refuses the image if an fsync of one of them is in the chain
    /// (see [`SegmentManager::note_data_past_fsck_limit`]).
    inodes_past_fsck_limit: HashSet<u32>,
}

/// The first main-area segment whose blocks fsck.f2fs 1.15 refuses in the roll-forward
/// chain. Its bound for recovered blocks (node blocks of the chain and the data blocks
/// they point at; `MAX_BLKADDR` in its `f2fs_is_valid_blkaddr` for `META_POR`) is
/// `segment0_blkaddr` plus the main area's segments, which stops as many segments
/// short of the main area's end as the metadata areas before it take. A node block
/// past it ends fsck's walk of the chain quietly; a data block past it fails the check
/// (`record_fsync_data failed`). f2fs-tools 1.16 counts every segment there, and Linux
/// accepts the whole main area; an fsync writes a checkpoint instead of records that
/// would reach these segments, so that the image passes both.
pub fn fsck_roll_forward_limit(sb: &Superblock) -> u32 {
    let meta_segs = (sb.main_blkaddr.saturating_sub(sb.segment0_blkaddr)) / sb.blocks_per_seg().max(1);
    sb.segment_count_main.saturating_sub(meta_segs)
}

impl SegmentManager {
    /// Loads the SIT and the active logs of the checkpoint in `cps`, and checks that
    /// they agree: counts against the checkpoint, every log's unwritten tail free.
    pub fn load(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<SegmentManager> {
        let area = SitArea::of(sb);
        let sit = load_sit(dev, &area, &cps.sit_bitmap, &cps.sit_journal)?;
        let logs = load_logs(dev, sb, cps)?;
        let geo = Geometry {
            main_blkaddr: sb.main_blkaddr as u64,
            segments: sb.segment_count_main,
            segs_per_sec: sb.segs_per_sec.max(1),
            secs_per_zone: sb.secs_per_zone.max(1),
            ssa_blkaddr: sb.ssa_blkaddr as u64,
            ro: sb.has(uf2fs_format::superblock::FEATURE_RO),
            sit: area,
            blocks: sb.geometry(),
        };
        let mut m = SegmentManager {
            geo,
            free: FreeMap::new(geo.segments, geo.segs_per_sec),
            valid_blocks: sit.iter().map(|e| e.valid_blocks as u64).sum(),
            sit,
            sit_bitmap: cps.sit_bitmap.clone(),
            sit_journal: cps.sit_journal.iter().map(|(s, _)| *s).collect(),
            dirty: BTreeSet::new(),
            prefree: BTreeSet::new(),
            to_discard: Vec::new(),
            defer_discards: false,
            valid_kind: [0; 2],
            allocated: 0,
            written_at: Vec::new(),
            opens: Vec::new(),
            clock_now: cps.cp.elapsed_time,
            clock_ticks: 0,
            invalidated: [0; 2],
            cp_invalidated: HashMap::new(),
            logs,
            streams: Vec::new(),
            active_logs: if geo.ro { ActiveLogs::Two } else { ActiveLogs::default() },
            clock: Clock {
                at_open_secs: cps.cp.elapsed_time,
                opened: Instant::now(),
                blocks_per_sec: None,
            },
            space: space::SpaceRules::new(&cps.cp, geo.segs_per_sec),
            recovered: Default::default(),
            chain_broken: false,
            fsck_limit: fsck_roll_forward_limit(sb),
            chain_past_fsck_limit: false,
            inodes_past_fsck_limit: HashSet::new(),
        };
        for segno in 0..geo.segments {
            let used = m.sit[segno as usize].valid_blocks > 0 || m.current_log(segno).is_some();
            m.free.set_used(segno, used);
        }
        for e in &m.sit {
            m.valid_kind[kind_of(e.seg_type)] += e.valid_blocks as u64;
        }
        m.written_at = vec![0; m.sit.len()];
        m.opens = vec![0; m.sit.len()];
        m.check_against(cps)?;
        m.chain_past_fsck_limit = m.warm_node_segno() >= m.fsck_limit;
        // Blocks the checkpoint counts beyond the SIT's are addresses reserved and not
        // written (`NEW_ADDR`): they stay reserved.
        m.reserve_new_blocks(cps.cp.valid_block_count - m.valid_blocks)?;
        Ok(m)
    }

    /// Refuses state the allocator could not continue from.
    fn check_against(&self, cps: &CheckpointState) -> Result<()> {
        let bad = |d: String| Error::corrupt("SIT", None, format!("{d}; run fsck.f2fs"));
        let cp = &cps.cp;
        // The checkpoint also counts reserved addresses (`NEW_ADDR`, from fallocate),
        // which own no block yet: never fewer than the SIT's valid blocks.
        if self.valid_blocks > cp.valid_block_count {
            return Err(bad(format!(
                "{} valid blocks, the checkpoint says {}",
                self.valid_blocks, cp.valid_block_count
            )));
        }
        let node_blocks: u64 = self
            .sit
            .iter()
            .filter(|e| e.seg_type >= LogType::HotNode as u8)
            .map(|e| e.valid_blocks as u64)
            .sum();
        if node_blocks != cp.valid_node_count as u64 {
            return Err(bad(format!(
                "{node_blocks} valid blocks in node segments, the checkpoint counts {} nodes",
                cp.valid_node_count
            )));
        }
        let written = self.active_logs.logs();
        for (li, log) in self.logs.iter().enumerate() {
            // ro's four unused logs share segment 0 with hot data and are never written.
            if self.geo.ro && !written.contains(&Self::log_type(li)) {
                continue;
            }
            let e = &self.sit[log.segno as usize];
            if log.alloc_type == ALLOC_LFS && (log.next_blkoff as u32..BLOCKS_PER_SEG).any(|o| e.is_valid(o)) {
                return Err(bad(format!(
                    "active segment {} has valid blocks past its next offset {}",
                    log.segno, log.next_blkoff
                )));
            }
        }
        Ok(())
    }

    /// The log whose segment is `segno`, if any (an index of [`SegmentManager::cur`]).
    fn current_log(&self, segno: u32) -> Option<usize> {
        self.logs
            .iter()
            .chain(&self.streams)
            .position(|l| l.segno == segno && l.segno != CLOSED)
    }

    /// Log `li`: one of the six for `li < NR_LOGS`, else stream log `li - NR_LOGS`.
    fn cur(&self, li: usize) -> &CurSeg {
        if li < NR_LOGS {
            &self.logs[li]
        } else {
            &self.streams[li - NR_LOGS]
        }
    }

    fn cur_mut(&mut self, li: usize) -> &mut CurSeg {
        if li < NR_LOGS {
            &mut self.logs[li]
        } else {
            &mut self.streams[li - NR_LOGS]
        }
    }

    /// The segment type and summary type of log `li` (stream logs hold warm data).
    fn log_type(li: usize) -> LogType {
        LogType::ALL.get(li).copied().unwrap_or(LogType::WarmData)
    }

    /// Open segments of every log, the six and the open stream logs.
    fn open_segments(&self) -> impl Iterator<Item = &CurSeg> {
        self.logs
            .iter()
            .chain(self.streams.iter().filter(|l| l.segno != CLOSED))
    }

    /// Number of stream logs (writeback contexts beyond the first): 0 by default.
    pub fn set_streams(&mut self, n: usize) {
        while self.streams.len() < n {
            self.streams.push(CurSeg {
                segno: CLOSED,
                next_blkoff: BLOCKS_PER_SEG as u16,
                alloc_type: ALLOC_LFS,
                sum: Vec::new(),
            });
        }
    }

    /// [`SegmentManager::alloc_block`] for writeback context `stream`: a warm data
    /// block of context 1 or more goes to that context's own log, so that files
    /// written by different contexts do not interleave in one segment; anything else
    /// (and every block of context 0) goes where `alloc_block` puts it.
    pub fn alloc_block_for(&mut self, dev: &dyn BlockDevice, log: LogType, stream: usize, sum: Summary) -> Result<u64> {
        let folded = self.active_logs.log_for(log);
        if stream == 0 || folded != LogType::WarmData || stream > self.streams.len() {
            return self.alloc_block(dev, log, sum);
        }
        self.alloc_in(dev, NR_LOGS + stream - 1, sum)
    }

    /// Segment number and block offset of a main-area block address.
    fn locate(&self, blkaddr: u64) -> Result<(u32, u32)> {
        let end = self.geo.main_blkaddr + self.geo.segments as u64 * BLOCKS_PER_SEG as u64;
        if blkaddr < self.geo.main_blkaddr || blkaddr >= end {
            // Addresses come from node blocks and the NAT: one outside the main area is
            // damage (EUCLEAN), not a bad request.
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!(
                    "outside the main area ({:#x}..{end:#x}); run fsck.f2fs",
                    self.geo.main_blkaddr
                ),
            ));
        }
        let rel = blkaddr - self.geo.main_blkaddr;
        Ok((
            (rel / BLOCKS_PER_SEG as u64) as u32,
            (rel % BLOCKS_PER_SEG as u64) as u32,
        ))
    }

    /// Takes the next block for a block of class `log` owned as `sum` says, from the log
    /// the class folds onto ([`ActiveLogs`]; the class's own log with six). LFS: the
    /// next free block of its segment; a full segment is first replaced by a free one,
    /// its summary block written to its SSA slot. Returns the block address.
    pub fn alloc_block(&mut self, dev: &dyn BlockDevice, log: LogType, sum: Summary) -> Result<u64> {
        let log = self.active_logs.log_for(log);
        self.alloc_in(dev, log as usize, sum)
    }

    /// Makes the next `n` blocks that [`SegmentManager::alloc_block`] takes for class
    /// `log` consecutive device blocks (`n` at most a segment): when the log's segment
    /// has fewer than `n` free blocks left and the segment it would move to is not the
    /// next one (another log took that), the log moves now, leaving the rest of its
    /// segment unwritten. Returns whether it moved. Changes nothing when the run fits,
    /// or runs on into the next segment.
    pub fn keep_consecutive(&mut self, dev: &dyn BlockDevice, log: LogType, n: u64) -> Result<bool> {
        let li = self.active_logs.log_for(log) as usize;
        let cur = self.cur(li);
        if n > BLOCKS_PER_SEG as u64 {
            return Err(Error::bug(format!("{n} consecutive blocks asked of one log")));
        }
        if cur.alloc_type != ALLOC_LFS || cur.next_blkoff as u32 >= BLOCKS_PER_SEG {
            // The first block taken opens a new segment: the run fits in it.
            return Ok(false);
        }
        if cur.next_blkoff as u64 + n <= BLOCKS_PER_SEG as u64 {
            return Ok(false);
        }
        let segno = cur.segno;
        if self.pick_segment(li)? == segno + 1 {
            return Ok(false);
        }
        if li == self.active_logs.log_for(LogType::WarmNode) as usize {
            self.chain_broken = true;
        }
        self.new_segment(dev, li)?;
        Ok(true)
    }

    /// [`SegmentManager::alloc_block`] from log `li` (see [`SegmentManager::cur`]).
    fn alloc_in(&mut self, dev: &dyn BlockDevice, li: usize, sum: Summary) -> Result<u64> {
        if self.cur(li).alloc_type != ALLOC_LFS || self.cur(li).next_blkoff as u32 >= BLOCKS_PER_SEG {
            // A log resting on a full segment or loaded in SSR mode (images of
            // sload.f2fs and other tools) leaves it unfilled: no node footer links the
            // checkpoint's position to the new segment.
            if li == self.active_logs.log_for(LogType::WarmNode) as usize {
                self.chain_broken = true;
            }
            self.new_segment(dev, li)?;
        }
        // The block about to be taken fills the segment: the log moves on right after it
        // (as the kernel's logs do), so make sure it can before changing anything. A log
        // then never rests on a full segment and a checkpoint never needs a new one.
        let fills = self.cur(li).next_blkoff as u32 + 1 == BLOCKS_PER_SEG;
        if fills {
            self.pick_segment(li)?;
        }
        if self.clock_ticks == 0 {
            self.clock_now = self.clock.now_secs(self.allocated);
        }
        self.clock_ticks = (self.clock_ticks + 1) % CLOCK_EVERY;
        let now = self.clock_now;
        let (segno, off) = (self.cur(li).segno, self.cur(li).next_blkoff as u32);
        let e = &mut self.sit[segno as usize];
        let before = e.valid_blocks as u64;
        if !e.set_valid(off, true) {
            // The log's next block is free by construction (uf2fs took every block
            // before it, and the segment was free when the log took it): a valid one
            // there is uf2fs's own inconsistency, not the image's.
            return Err(Error::bug(format!(
                "block {:#x} (segment {segno}, block {off}), the next of an active log, is already valid",
                self.geo.main_blkaddr + segno as u64 * BLOCKS_PER_SEG as u64 + off as u64
            )));
        }
        // Segment age: the mean of its blocks' write times.
        e.mtime_secs = (e.mtime_secs * before + now) / (before + 1);
        self.allocated += 1;
        let w = &mut self.written_at[segno as usize];
        *w = (*w * before + self.allocated) / (before + 1);
        let kind = kind_of(e.seg_type);
        if segno >= self.fsck_limit && li == self.active_logs.log_for(LogType::WarmNode) as usize {
            self.chain_past_fsck_limit = true;
        }
        let cur = self.cur_mut(li);
        cur.sum[off as usize] = sum;
        cur.next_blkoff += 1;
        self.dirty.insert(segno);
        self.valid_blocks += 1;
        self.valid_kind[kind] += 1;
        if fills {
            self.new_segment(dev, li)?;
        }
        Ok(self.geo.main_blkaddr + segno as u64 * BLOCKS_PER_SEG as u64 + off as u64)
    }

    /// The address the log taking blocks of class `log` writes next (a node footer's
    /// `next_blkaddr`: after a log fills its segment, the first block of the next).
    pub fn next_blkaddr(&self, log: LogType) -> u64 {
        let c = &self.logs[self.active_logs.log_for(log) as usize];
        self.geo.main_blkaddr + c.segno as u64 * BLOCKS_PER_SEG as u64 + c.next_blkoff as u64
    }

    /// Whether roll-forward recovery, starting at the last checkpoint's position of
    /// the warm node log and following the node footers' `next_blkaddr` (the kernel's
    /// `find_fsync_dnodes`, fsck.f2fs's `find_fsync_inode`), reaches the block that log
    /// writes next. False once the log left a segment it had not filled since that
    /// checkpoint, or took a block fsck.f2fs 1.15 stops at (see
    /// [`fsck_roll_forward_limit`]), or writes next there: an fsync must write a
    /// checkpoint then.
    pub fn fsync_chain_intact(&self) -> bool {
        let log = self.cur(self.active_logs.log_for(LogType::WarmNode) as usize);
        // A log that must move before its next block leaves its segment unfilled too.
        !self.chain_broken
            && !self.chain_past_fsck_limit
            && log.segno < self.fsck_limit
            && log.alloc_type == ALLOC_LFS
            && (log.next_blkoff as u32) < BLOCKS_PER_SEG
    }

    /// The segment of the log warm nodes go to.
    fn warm_node_segno(&self) -> u32 {
        self.cur(self.active_logs.log_for(LogType::WarmNode) as usize).segno
    }

    /// Whether a block of class `log` goes to the warm node log (the log of the
    /// roll-forward chain).
    pub fn is_warm_node_log(&self, log: LogType) -> bool {
        self.active_logs.log_for(log) == self.active_logs.log_for(LogType::WarmNode)
    }

    /// Whether the next `blocks` blocks the warm node log takes all lie before the
    /// segments fsck.f2fs 1.15 stops at (see [`fsck_roll_forward_limit`]): in the
    /// log's segment, or in the one it moves to when it fills (found as the move will
    /// find it). More than a segment after the current one: false.
    pub fn warm_node_blocks_before_fsck_limit(&self, blocks: u64) -> bool {
        let li = self.active_logs.log_for(LogType::WarmNode) as usize;
        let c = self.cur(li);
        if c.segno == CLOSED || c.segno >= self.fsck_limit || c.alloc_type != ALLOC_LFS {
            return false;
        }
        let room = BLOCKS_PER_SEG.saturating_sub(c.next_blkoff as u32) as u64;
        if blocks <= room {
            return true;
        }
        if blocks > room + BLOCKS_PER_SEG as u64 {
            return false;
        }
        self.pick_segment(li).is_ok_and(|s| s < self.fsck_limit)
    }

    /// The first block address of the segments fsck.f2fs 1.15 refuses in the
    /// roll-forward chain (see [`fsck_roll_forward_limit`]).
    pub fn fsck_limit_blkaddr(&self) -> u64 {
        self.geo.main_blkaddr + self.fsck_limit as u64 * BLOCKS_PER_SEG as u64
    }

    /// Records that a node block of inode `ino` written to the warm node log points at
    /// a data block at or past [`SegmentManager::fsck_limit_blkaddr`]: until the next
    /// checkpoint, an fsync of `ino` must write a checkpoint (fsck.f2fs 1.15 checks
    /// every node of an fsync'd inode in the chain, up to its last fsync mark).
    pub fn note_data_past_fsck_limit(&mut self, ino: u32) {
        self.inodes_past_fsck_limit.insert(ino);
    }

    /// Whether a node block of `ino` in the roll-forward chain points at a data block
    /// fsck.f2fs 1.15 refuses (see [`SegmentManager::note_data_past_fsck_limit`]).
    pub fn data_past_fsck_limit(&self, ino: u32) -> bool {
        self.inodes_past_fsck_limit.contains(&ino)
    }

    /// Replaces the summary entry of `blkaddr`, a block already taken from an active log.
    pub fn set_summary(&mut self, blkaddr: u64, sum: Summary) -> Result<()> {
        let (segno, off) = self.locate(blkaddr)?;
        let li = self
            .current_log(segno)
            .ok_or_else(|| Error::bug(format!("summary of block {blkaddr:#x}: not in an active log's segment")))?;
        let log = self.cur_mut(li);
        if off as usize >= log.sum_in_use() {
            return Err(Error::bug(format!(
                "summary of block {blkaddr:#x}: not allocated from its log yet"
            )));
        }
        log.sum[off as usize] = sum;
        Ok(())
    }

    /// Marks `blkaddr` valid behind the allocator's back (tests of what a broken
    /// invariant reports).
    #[cfg(test)]
    pub(crate) fn force_valid(&mut self, blkaddr: u64) {
        let (segno, off) = self.locate(blkaddr).unwrap();
        self.sit[segno as usize].set_valid(off, true);
    }

    /// Marks `blkaddr` invalid (its owner moved or dropped it). A segment left with no
    /// valid block and no log becomes prefree: free only after the next checkpoint, since
    /// the last one may still point into it.
    pub fn invalidate(&mut self, blkaddr: u64) -> Result<()> {
        let (segno, off) = self.locate(blkaddr)?;
        let e = &mut self.sit[segno as usize];
        if !e.set_valid(off, false) {
            return Err(Error::corrupt(
                format!("SIT entry of segment {segno}"),
                Some(blkaddr),
                "invalidating a block that is not valid",
            ));
        }
        let empty = e.valid_blocks == 0;
        let k = kind_of(e.seg_type);
        self.dirty.insert(segno);
        self.valid_blocks -= 1;
        self.valid_kind[k] -= 1;
        self.invalidated[k] += 1;
        *self.cp_invalidated.entry(segno).or_default() += 1;
        if empty && self.current_log(segno).is_none() {
            self.prefree.insert(segno);
        }
        Ok(())
    }

    /// Moves `log` to a free segment: the next one of its section if free, else the
    /// first segment of a wholly free section (searching on from the current one).
    fn new_segment(&mut self, dev: &dyn BlockDevice, li: usize) -> Result<()> {
        let log = Self::log_type(li);
        let old = self.cur(li).segno;
        let next = self.pick_segment(li)?;
        // A freed section whose discard (zone reset) is still queued is discarded
        // before it is written again (never under `gc_pacing=off`: its checkpoints
        // discard what they free at once, so nothing is queued here).
        self.discard_queued(dev, next)?;
        if old != CLOSED {
            self.write_summary(dev, li)?;
            if self.sit[old as usize].valid_blocks == 0 {
                self.prefree.insert(old);
            }
        }
        debug_assert!(self.free.is_free(next));
        self.free.set_used(next, true);
        self.opens[next as usize] = self.opens[next as usize].wrapping_add(1);
        let e = &mut self.sit[next as usize];
        debug_assert_eq!(e.valid_blocks, 0);
        *e = SegEntry {
            valid_blocks: 0,
            seg_type: log.seg_type(),
            valid_map: [0; 64],
            mtime_secs: self.clock.now_secs(self.allocated),
        };
        self.dirty.insert(next);
        *self.cur_mut(li) = CurSeg {
            segno: next,
            next_blkoff: 0,
            alloc_type: ALLOC_LFS,
            sum: vec![Summary::default(); ENTRIES_IN_SUM],
        };
        Ok(())
    }

    fn pick_segment(&self, li: usize) -> Result<u32> {
        let g = self.geo;
        let sections = g.segments.div_ceil(g.segs_per_sec);
        let start = match self.cur(li).segno {
            // A stream log opening starts its search in a region of its own: stream k
            // of n at k/(n+1) of the main area past the warm data log, so that logs
            // filling at once take sections apart from one another and each file
            // stays contiguous across its segments (allocation groups, as XFS's).
            // The regions are spread over the sections before the last main segments
            // fsck.f2fs 1.15 refuses in the roll-forward chain (see
            // [`fsck_roll_forward_limit`]): a stream log opened there made every fsync
            // of its files write a checkpoint.
            CLOSED => {
                let k = (li - NR_LOGS + 1) as u64;
                let n = self.streams.len() as u64 + 1;
                let below = (self.fsck_limit / g.segs_per_sec).clamp(1, sections.max(1)) as u64;
                let warm = (self.logs[LogType::WarmData as usize].segno / g.segs_per_sec) as u64;
                ((warm + k * below / n) % below) as u32
            }
            old => {
                if let Some(s) = self.free.next_free_in_section(old) {
                    return Ok(s);
                }
                (old / g.segs_per_sec + 1) % sections.max(1)
            }
        };
        // Keep logs in zones of their own when zones hold several sections.
        let zone_of = |sec: u32| sec / g.secs_per_zone;
        let others: Vec<u32> = (0..NR_LOGS + self.streams.len())
            .filter(|&i| i != li && self.cur(i).segno != CLOSED)
            .map(|i| zone_of(self.cur(i).segno / g.segs_per_sec))
            .collect();
        let own_zone = |sec: u32| g.secs_per_zone == 1 || !others.contains(&zone_of(sec));
        // A free section whose discard (zone reset) is still queued is taken last:
        // entering it resets the zone inside the write that opens it (6.1 ms for an
        // 8 MiB zone in the lab's device model), where the paced cleaner resets it
        // in a gap between front writes.
        let mut queued: Vec<u32> = self.to_discard.iter().map(|s| s / g.segs_per_sec).collect();
        queued.sort_unstable();
        queued.dedup();
        let reset = |sec: u32| queued.binary_search(&sec).is_err();
        let sec = (!queued.is_empty())
            .then(|| self.free.find_free_section(start, &|sec| own_zone(sec) && reset(sec)))
            .flatten()
            .or_else(|| self.free.find_free_section(start, &own_zone))
            .or_else(|| self.free.find_free_section(start, &|_| true))
            .ok_or_else(|| Error::NoSpace(format!("no free section for the {:?} log", Self::log_type(li))))?;
        Ok(sec * g.segs_per_sec)
    }

    /// Writes log `li`'s summary block to its segment's SSA slot.
    /// (None with `ro`: it has no SSA.)
    fn write_summary(&self, dev: &dyn BlockDevice, li: usize) -> Result<()> {
        if self.geo.ro {
            return Ok(());
        }
        let log = self.cur(li);
        let block = SummaryBlock {
            entries: log.sum.clone(),
            journal: Vec::new(),
            entry_type: Self::log_type(li).sum_type(),
        }
        .encode(self.geo.blocks)
        .map_err(|e| Error::Invalid(format!("cannot encode a summary block: {e}")))?;
        self.write_ssa(dev, log.segno, &block)
    }

    /// The SSA block holding segment `segno`'s summary, and the summary's byte offset
    /// in it (0, or with `packed_ssa` 4 KiB times `segno % 4`).
    fn ssa_slot(&self, segno: u32) -> (u64, usize) {
        let (blk, off) = self.geo.blocks.ssa_slot(segno);
        (self.geo.ssa_blkaddr + blk, off)
    }

    /// The bytes of segment `segno`'s summary in the SSA
    /// ([`uf2fs_format::Geometry::sum_block_size`] of them), and the SSA block they
    /// are read from.
    fn read_ssa(&self, dev: &dyn BlockDevice, segno: u32) -> Result<(u64, Vec<u8>)> {
        let (addr, off) = self.ssa_slot(segno);
        let b = read_block(dev, addr)?;
        Ok((addr, b[off..off + self.geo.blocks.sum_block_size()].to_vec()))
    }

    /// Writes `summary` (one encoded summary) to segment `segno`'s SSA slot: the whole
    /// block, or with `packed_ssa` a read-modify-write of the block the segment shares
    /// with three neighbours, whose summaries are written back as they were (as Linux
    /// updates its SSA page in place).
    fn write_ssa(&self, dev: &dyn BlockDevice, segno: u32, summary: &[u8]) -> Result<()> {
        let (addr, off) = self.ssa_slot(segno);
        if !self.geo.blocks.is_packed_ssa() {
            return dev.write_blocks(addr, summary);
        }
        let mut b = read_block(dev, addr)?;
        b[off..off + summary.len()].copy_from_slice(summary);
        dev.write_blocks(addr, &b)
    }

    /// The logs written to.
    pub fn active_logs(&self) -> ActiveLogs {
        self.active_logs
    }

    /// Changes the logs written to, from the next block on (the logs left keep their
    /// segments, recorded by every checkpoint as before).
    /// An `ro` volume keeps its two logs.
    pub fn set_active_logs(&mut self, logs: ActiveLogs) {
        if !self.geo.ro {
            self.active_logs = logs;
        }
    }

    /// The active log `log`.
    pub fn log(&self, log: LogType) -> &CurSeg {
        &self.logs[log as usize]
    }

    /// The SIT entry of main-area segment `segno`.
    pub fn segment(&self, segno: u32) -> Option<&SegEntry> {
        self.sit.get(segno as usize)
    }

    /// Whether `blkaddr` is a valid block according to the SIT.
    pub fn is_valid(&self, blkaddr: u64) -> Result<bool> {
        let (segno, off) = self.locate(blkaddr)?;
        Ok(self.sit[segno as usize].is_valid(off))
    }

    /// Valid blocks in the main area (the checkpoint's `valid_block_count`).
    pub fn valid_block_count(&self) -> u64 {
        self.valid_blocks
    }

    /// Free segments as the checkpoint counts them: no valid block and no active log
    /// (prefree ones included: the checkpoint being written no longer uses them).
    pub fn free_segment_count(&self) -> u32 {
        self.free.free_segments() + self.prefree.len() as u32
    }

    /// Segments waiting for a checkpoint to become free.
    pub fn prefree_count(&self) -> u32 {
        self.prefree.len() as u32
    }

    /// Sections beyond those the valid blocks would fill if packed: the room GC
    /// works in.
    pub fn spare_sections(&self) -> u32 {
        let capacity = (self.geo.segs_per_sec * BLOCKS_PER_SEG) as u64;
        let valid = self.valid_kind[0] + self.valid_kind[1];
        (self.section_count() as u64).saturating_sub(valid.div_ceil(capacity)) as u32
    }

    /// How many times logs entered the segments of section `secno` since open (it
    /// changes only when the section was wholly free: a log enters a section that is
    /// not its own only then).
    pub fn section_opens(&self, secno: u32) -> u64 {
        let spsec = self.geo.segs_per_sec as usize;
        let first = secno as usize * spsec;
        self.opens.iter().skip(first).take(spsec).map(|&n| n as u64).sum()
    }

    /// Segments whose SIT entries changed since the last checkpoint.
    pub fn dirty_count(&self) -> usize {
        self.dirty.len()
    }

    /// Seconds of file system lifetime now (the checkpoint's `elapsed_time`).
    pub fn elapsed_secs(&self) -> u64 {
        self.clock.now_secs(self.allocated)
    }

    /// Makes the clock simulated from now on: one second per `blocks_per_sec` blocks
    /// allocated since open (see `Clock`); `None` goes back to real time.
    pub fn set_simulated_clock(&mut self, blocks_per_sec: Option<u64>) {
        // Continue from the time it is now, never back.
        let now = self.clock.now_secs(self.allocated);
        self.clock.blocks_per_sec = blocks_per_sec;
        self.clock.opened = Instant::now();
        self.clock.at_open_secs = match blocks_per_sec {
            Some(rate) => now.saturating_sub(self.allocated / rate.max(1)),
            None => now,
        };
        self.clock_ticks = 0;
    }

    /// Segments by state, as `info` reports them.
    pub fn usage(&self) -> SegmentUsage {
        let mut u = SegmentUsage::default();
        for e in &self.sit {
            u.valid_blocks += e.valid_blocks as u64;
            match e.valid_blocks as u32 {
                0 => u.free += 1,
                BLOCKS_PER_SEG => u.full += 1,
                _ => u.partial += 1,
            }
        }
        u
    }

    /// Before a checkpoint: a log whose segment is full moves on, so that no log is
    /// recorded at offset 512.
    /// Stream logs close: their summaries go to their SSA slots and their segments
    /// stay as written (a checkpoint records only the six logs).
    pub(crate) fn prepare_checkpoint(&mut self, dev: &dyn BlockDevice) -> Result<()> {
        for log in LogType::ALL {
            if self.logs[log as usize].alloc_type == ALLOC_LFS
                && self.logs[log as usize].next_blkoff as u32 >= BLOCKS_PER_SEG
            {
                self.new_segment(dev, log as usize)?;
            }
        }
        for k in 0..self.streams.len() {
            let segno = self.streams[k].segno;
            if segno == CLOSED {
                continue;
            }
            self.write_summary(dev, NR_LOGS + k)?;
            self.streams[k].segno = CLOSED;
            self.streams[k].next_blkoff = BLOCKS_PER_SEG as u16;
            if self.sit[segno as usize].valid_blocks == 0 {
                self.prefree.insert(segno);
            }
        }
        Ok(())
    }

    /// Writes the dirty SIT entries out: into the SIT journal while they fit there
    /// (with `journal_allowed`), else every journalled and dirty entry into its SIT block,
    /// written to the copy not in use with its version bit flipped.
    pub(crate) fn flush_sit(&mut self, dev: &dyn BlockDevice, journal_allowed: bool) -> Result<SitFlush> {
        let joining = self.dirty.iter().filter(|s| !self.sit_journal.contains(s)).count();
        let mut blocks_written = 0;
        if journal_allowed && self.sit_journal.len() + joining <= self.geo.blocks.sit_journal_entries() {
            self.sit_journal.extend(self.dirty.iter().copied());
        } else {
            self.dirty.append(&mut self.sit_journal);
            let blocks: BTreeSet<u32> = self
                .dirty
                .iter()
                .map(|s| s / self.geo.blocks.sit_entries_per_block() as u32)
                .collect();
            blocks_written = write_sit_blocks(dev, &self.geo.sit, &mut self.sit_bitmap, &self.sit, &blocks)?;
        }
        self.dirty.clear();
        let journal = self
            .sit_journal
            .iter()
            .map(|&s| (s, self.sit[s as usize].to_raw()))
            .collect();
        Ok(SitFlush {
            journal,
            blocks_written,
        })
    }

    /// The SIT version bitmap as the next checkpoint records it.
    pub(crate) fn sit_bitmap(&self) -> &[u8] {
        &self.sit_bitmap
    }

    /// After a checkpoint is durable: prefree segments become free.
    pub(crate) fn checkpoint_done(&mut self) {
        self.chain_broken = false;
        self.chain_past_fsck_limit = self.warm_node_segno() >= self.fsck_limit;
        self.inodes_past_fsck_limit.clear();
        self.cp_invalidated.clear();
        for segno in std::mem::take(&mut self.prefree) {
            if self.sit[segno as usize].valid_blocks == 0 && self.current_log(segno).is_none() {
                self.free.set_used(segno, false);
                self.to_discard.push(segno);
            }
        }
    }
}
