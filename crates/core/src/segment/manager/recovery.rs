//! Roll-forward recovery's side of the segment manager: data blocks an fsync wrote
//! after the last checkpoint become valid where they are (the kernel's
//! `f2fs_replace_block` during recovery), and their summaries reach the SSA.
//!
//! A block in a log's segment past its next offset moves the log on behind it, so
//! that the log never writes over it (the LFS rule: everything from the next offset
//! on is free). A block elsewhere (a segment free at the checkpoint, which the
//! kernel's log had moved to, or one with valid blocks already) is marked valid, and
//! its summary entry is written to the segment's SSA block by
//! [`SegmentManager::finish_recovery`]: such a segment's SSA block was written, if at
//! all, by a kernel that may have lost it in the power cut.

use super::{kind_of, SegmentManager};
use crate::device::BlockDevice;
use crate::segment::curseg::ALLOC_LFS;
use crate::segment::sit::SegEntry;
use crate::segment::LogType;
use crate::{Error, Result};
use uf2fs_format::consts::ENTRIES_IN_SUM;
use uf2fs_format::summary::{Summary, SummaryBlock, SUM_TYPE_DATA};

/// Summary entries recovery set in a segment that no log holds.
#[derive(Debug, Default)]
pub(super) struct RecoveredSummaries {
    /// Whether the segment was free before recovery (its SSA block is stale: start
    /// from empty entries).
    fresh: bool,
    entries: Vec<(u32, Summary)>,
}

impl SegmentManager {
    /// Segment numbers of the chain's blocks (`chain`, block addresses), sorted.
    fn chain_segments(&self, chain: &[u64]) -> Result<Vec<u32>> {
        let mut segnos: Vec<u32> = Vec::with_capacity(chain.len());
        for &a in chain {
            segnos.push(self.locate(a)?.0);
        }
        segnos.sort_unstable();
        segnos.dedup();
        Ok(segnos)
    }

    /// Before recovery changes anything: the segments holding the chain's blocks
    /// (`chain`, block addresses) stay untouched until the checkpoint that ends
    /// recovery is durable, so that a power cut during recovery finds the chain whole
    /// again. Those free at the checkpoint become prefree (free after the next
    /// checkpoint). No block is allocated here: segments free at the checkpoint may
    /// hold fsync'd data not yet made valid.
    pub fn hold_for_recovery(&mut self, chain: &[u64]) -> Result<()> {
        for segno in self.chain_segments(chain)? {
            if self.free.is_free(segno) {
                self.free.set_used(segno, true);
                self.prefree.insert(segno);
            }
        }
        Ok(())
    }

    /// Makes `blkaddr`, a data block written after the last checkpoint, valid for the
    /// owner `sum` names. The block must not be valid now.
    pub fn recover_block(&mut self, blkaddr: u64, sum: Summary) -> Result<()> {
        let (segno, off) = self.locate(blkaddr)?;
        let bad = |d: &str| Error::corrupt("roll-forward recovery", Some(blkaddr), format!("{d}; run fsck.f2fs"));
        let e = &self.sit[segno as usize];
        if e.is_valid(off) {
            return Err(bad("a recovered data block is already in use"));
        }
        let was_free = self.free.is_free(segno);
        if !was_free && kind_of(e.seg_type) != 0 {
            return Err(bad("a recovered data block lies in a node segment"));
        }
        if let Some(li) = self.current_log(segno) {
            let c = self.cur_mut(li);
            c.sum[off as usize] = sum;
            if c.alloc_type == ALLOC_LFS && off as u16 >= c.next_blkoff {
                c.next_blkoff = off as u16 + 1;
            }
        } else {
            if was_free {
                self.free.set_used(segno, true);
                self.sit[segno as usize] = SegEntry {
                    valid_blocks: 0,
                    seg_type: LogType::WarmData.seg_type(),
                    valid_map: [0; 64],
                    mtime_secs: self.clock.now_secs(self.allocated),
                };
            }
            self.prefree.remove(&segno);
            let r = self.recovered.entry(segno).or_insert_with(|| RecoveredSummaries {
                fresh: was_free,
                entries: Vec::new(),
            });
            r.entries.push((off, sum));
        }
        let e = &mut self.sit[segno as usize];
        e.set_valid(off, true);
        let kind = kind_of(e.seg_type);
        self.dirty.insert(segno);
        self.valid_blocks += 1;
        self.valid_kind[kind] += 1;
        Ok(())
    }

    /// After the replay, before the checkpoint that ends recovery: the warm node log,
    /// which would write over the chain (`chain`, as given to
    /// [`SegmentManager::hold_for_recovery`]) from its next offset, moves to a free
    /// segment (every recovered block is valid by now, so none is taken), and the
    /// summary entries [`SegmentManager::recover_block`] set outside the logs go to
    /// their segments' SSA blocks.
    pub fn finish_recovery(&mut self, dev: &dyn BlockDevice, chain: &[u64]) -> Result<()> {
        let li = self.active_logs.log_for(LogType::WarmNode) as usize;
        if self.chain_segments(chain)?.contains(&self.logs[li].segno) {
            self.new_segment(dev, li)?;
        }
        for (segno, r) in std::mem::take(&mut self.recovered) {
            let mut block = SummaryBlock {
                entries: vec![Summary::default(); ENTRIES_IN_SUM],
                journal: Vec::new(),
                entry_type: SUM_TYPE_DATA,
            };
            if !r.fresh {
                let (_, b) = self.read_ssa(dev, segno)?;
                if let Ok(old) = SummaryBlock::decode(&b) {
                    block.entries = old.entries;
                    block.entries.resize(ENTRIES_IN_SUM, Summary::default());
                }
            }
            for (off, sum) in r.entries {
                block.entries[off as usize] = sum;
            }
            let bytes = block
                .encode(self.geo.blocks)
                .map_err(|e| Error::Invalid(format!("cannot encode a summary block: {e}")))?;
            self.write_ssa(dev, segno, &bytes)?;
        }
        Ok(())
    }

    /// The summary of valid block `blkaddr`: from its log's entries in memory, else
    /// from recovery's pending entries, else its segment's SSA block.
    pub fn summary_of(&self, dev: &dyn BlockDevice, blkaddr: u64) -> Result<Summary> {
        let (segno, off) = self.locate(blkaddr)?;
        if let Some(li) = self.current_log(segno) {
            return Ok(self.cur(li).sum[off as usize]);
        }
        if let Some(r) = self.recovered.get(&segno) {
            if let Some((_, s)) = r.entries.iter().rev().find(|(o, _)| *o == off) {
                return Ok(*s);
            }
        }
        let sums = self.read_summary_block(dev, segno)?;
        sums.entries
            .get(off as usize)
            .copied()
            .ok_or_else(|| Error::corrupt("SSA", Some(blkaddr), "summary block too short"))
    }
}
