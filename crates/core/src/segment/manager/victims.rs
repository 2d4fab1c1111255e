//! What garbage collection asks of the segment manager: sections as victims see them
//! (valid blocks, type, age), the summary block of a segment, and whether enough free
//! sections remain for the writes pending (the kernel's `has_not_enough_free_secs`).

use super::{LogType, SegmentManager, SpaceNeed, NR_LOGS};
use crate::device::BlockDevice;
use crate::{Error, Result};
use uf2fs_format::consts::BLOCKS_PER_SEG;
use uf2fs_format::summary::SummaryBlock;

/// One section as victim selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionInfo {
    /// Section number.
    pub secno: u32,
    /// Valid blocks in all its segments.
    pub valid_blocks: u32,
    /// Blocks it holds (segments per section × 512).
    pub capacity: u32,
    /// Whether it holds node blocks (the type of its segments in use).
    pub is_node: bool,
    /// Mean age stamp of its segments in use (seconds of file system lifetime).
    pub mtime_secs: u64,
    /// Blocks written since its blocks were, on average (a logical age: what the
    /// workload did meanwhile, independent of how fast it ran).
    pub age_blocks: u64,
}

impl SegmentManager {
    /// Sections in the main area.
    pub fn section_count(&self) -> u32 {
        self.geo.segments.div_ceil(self.geo.segs_per_sec)
    }

    /// Segments per section.
    pub fn segs_per_sec(&self) -> u32 {
        self.geo.segs_per_sec
    }

    /// Segments in the main area.
    pub fn segment_count(&self) -> u32 {
        self.geo.segments
    }

    /// Whether an active log (a stream log included) writes in section `secno`.
    pub fn section_holds_open_log(&self, secno: u32) -> bool {
        let spsec = self.geo.segs_per_sec;
        self.open_segments().any(|l| l.segno / spsec == secno)
    }

    /// Section `secno` as victim selection sees it: its valid blocks, their type, and
    /// the mean ages of its segments in use.
    pub fn section_info(&self, secno: u32) -> SectionInfo {
        let spsec = self.geo.segs_per_sec;
        let capacity = spsec * BLOCKS_PER_SEG;
        let first = secno * spsec;
        let last = (first + spsec).min(self.geo.segments);
        let mut valid = 0u32;
        let mut mtime = 0u64;
        let mut written = 0u64;
        let mut used = 0u64;
        let mut is_node = false;
        for segno in first..last {
            let e = &self.sit[segno as usize];
            if e.valid_blocks > 0 {
                valid += e.valid_blocks as u32;
                mtime += e.mtime_secs;
                written += self.written_at[segno as usize];
                used += 1;
                is_node = e.seg_type >= LogType::HotNode as u8;
            }
        }
        SectionInfo {
            secno,
            valid_blocks: valid,
            capacity,
            is_node,
            mtime_secs: mtime / used.max(1),
            age_blocks: self.allocated.saturating_sub(written / used.max(1)),
        }
    }

    /// Sections that garbage collection may clean: in use, not wholly valid, holding
    /// no active log and no segment waiting for a checkpoint to become free only.
    /// Calls `visit` for each, in section order.
    pub fn visit_victim_candidates(&self, mut visit: impl FnMut(SectionInfo)) {
        let spsec = self.geo.segs_per_sec;
        let mut log_secs: Vec<u32> = self.open_segments().map(|l| l.segno / spsec).collect();
        log_secs.sort_unstable();
        for secno in 0..self.section_count() {
            if log_secs.binary_search(&secno).is_ok() {
                continue;
            }
            let info = self.section_info(secno);
            if info.valid_blocks == 0 || info.valid_blocks >= info.capacity {
                continue;
            }
            visit(info);
        }
    }

    /// The summary block of `segno`, a segment no active log is writing (its summary
    /// is in its SSA slot).
    pub fn read_summary_block(&self, dev: &dyn BlockDevice, segno: u32) -> Result<SummaryBlock> {
        if self.current_log(segno).is_some() {
            return Err(Error::Invalid(format!(
                "segment {segno} belongs to an active log; its summary is in memory"
            )));
        }
        if self.geo.ro {
            return Err(Error::Unsupported {
                feature: "ro",
                detail: "an ro volume has no SSA: its segments cannot be cleaned".into(),
            });
        }
        let (addr, b) = self.read_ssa(dev, segno)?;
        SummaryBlock::decode(&b)
            .map_err(|e| Error::corrupt(format!("SSA block of segment {segno}"), Some(addr), e.to_string()))
    }

    /// Block address of block `off` of segment `segno`.
    pub fn block_addr(&self, segno: u32, off: u32) -> u64 {
        self.geo.main_blkaddr + segno as u64 * BLOCKS_PER_SEG as u64 + off as u64
    }

    /// Wholly free sections (prefree ones not counted: they need a checkpoint first).
    pub fn free_section_count(&self) -> u32 {
        self.free.free_sections()
    }

    /// Sections that will be free after the next checkpoint, beyond the free ones.
    pub fn prefree_section_gain(&self) -> u32 {
        let spsec = self.geo.segs_per_sec;
        // Prefree segments come in order, so a section's segments are adjacent: each
        // section is looked at once, without gathering them (this runs before every
        // operation under the default policy).
        let mut last = None;
        let mut gain = 0;
        for sec in self.prefree.iter().map(|s| s / spsec) {
            if last == Some(sec) {
                continue;
            }
            last = Some(sec);
            let first = sec * spsec;
            let whole = (first..(first + spsec).min(self.geo.segments))
                .all(|s| self.prefree.contains(&s) || (self.free.is_free(s) && self.current_log(s).is_none()));
            gain += u32::from(whole);
        }
        gain
    }

    /// Whether the writes in `need` fit leaving the reserved sections and `extra_secs`
    /// more free (the kernel's `has_not_enough_free_secs`, inverted). Counts sections
    /// only; user-block limits are [`SegmentManager::check_room`]'s.
    /// `freed` sections (emptied, waiting for a checkpoint) count as free.
    pub fn has_enough_free_secs(&self, need: &SpaceNeed, freed: u32, extra_secs: u32) -> bool {
        let per_log = self.active_logs.fold(&need.per_log);
        let wanted: u32 = LogType::ALL
            .iter()
            .map(|&log| self.sections_for(log, per_log[log as usize]))
            .sum();
        self.free.free_sections() + freed >= wanted + self.space.reserved_secs + extra_secs
    }

    /// Whole free sections `log` takes to write `blocks` more blocks.
    pub fn sections_needed(&self, log: LogType, blocks: u64) -> u32 {
        self.sections_for(log, blocks)
    }

    /// Discards the sections that checkpoints made wholly free since the last call
    /// (a zoned device resets their zones, as F2FS resets a zone whose section is
    /// freed). With discards deferred ([`SegmentManager::set_defer_discards`]) it
    /// leaves them queued.
    pub fn discard_freed(&mut self, dev: &dyn BlockDevice) -> Result<()> {
        if self.defer_discards {
            return Ok(());
        }
        let spsec = self.geo.segs_per_sec;
        let mut secs: Vec<u32> = self.to_discard.drain(..).map(|s| s / spsec).collect();
        secs.sort_unstable();
        secs.dedup();
        let blocks = spsec as u64 * BLOCKS_PER_SEG as u64;
        for sec in secs {
            let first = sec * spsec;
            let whole = (first..(first + spsec).min(self.geo.segments)).all(|s| self.free.is_free(s));
            if whole {
                dev.discard(self.block_addr(first, 0), blocks)?;
            }
        }
        Ok(())
    }

    /// Whether checkpoints leave the discards (zone resets) of the sections they free
    /// queued, to be issued by [`SegmentManager::discard_some`] when the device is
    /// idle (the paced cleaner), or before a log enters the section, whichever comes
    /// first. Turning it off leaves the queue to the next checkpoint's
    /// [`SegmentManager::discard_freed`].
    ///
    /// After a crash the queue is lost: a freed section may then still hold its old
    /// blocks (a zone whose write pointer is not at its start). F2FS checks every
    /// zone's write pointer at mount and resets the zones of sections with no valid
    /// block; uf2fs's emulated zoned device reports such zones reset at open
    /// ([`SegmentManager::zone_write_pointers`]), which is that check's outcome.
    pub fn set_defer_discards(&mut self, defer: bool) {
        self.defer_discards = defer;
    }

    /// Whether any freed section's discard is queued (cheaper than
    /// [`SegmentManager::queued_discards`]: the paced cleaner asks at every wake-up).
    pub fn has_queued_discards(&self) -> bool {
        !self.to_discard.is_empty()
    }

    /// Freed sections whose discard is queued (counted once per section).
    pub fn queued_discards(&self) -> usize {
        let spsec = self.geo.segs_per_sec;
        let mut secs: Vec<u32> = self.to_discard.iter().map(|s| s / spsec).collect();
        secs.sort_unstable();
        secs.dedup();
        secs.len()
    }

    /// Discards at most `max` of the queued sections, oldest first (a section no
    /// longer wholly free is dropped from the queue: a log entered it after its
    /// discard, or it was not whole when queued). Returns the sections discarded.
    pub fn discard_some(&mut self, dev: &dyn BlockDevice, max: usize) -> Result<usize> {
        let spsec = self.geo.segs_per_sec;
        let mut done = 0;
        while done < max {
            let Some(&segno) = self.to_discard.first() else {
                break;
            };
            let sec = segno / spsec;
            if self.discard_section_if_queued(dev, sec)? {
                done += 1;
            }
        }
        Ok(done)
    }

    /// Before a log enters segment `segno`: discards its section if a discard is
    /// queued for it.
    pub(super) fn discard_queued(&mut self, dev: &dyn BlockDevice, segno: u32) -> Result<()> {
        if self.to_discard.is_empty() {
            return Ok(());
        }
        self.discard_section_if_queued(dev, segno / self.geo.segs_per_sec)?;
        Ok(())
    }

    /// Takes section `sec`'s segments off the discard queue and, if it had any and the
    /// section is wholly free, discards it. Returns whether it discarded.
    fn discard_section_if_queued(&mut self, dev: &dyn BlockDevice, sec: u32) -> Result<bool> {
        let spsec = self.geo.segs_per_sec;
        let before = self.to_discard.len();
        self.to_discard.retain(|s| s / spsec != sec);
        if self.to_discard.len() == before {
            return Ok(false);
        }
        let first = sec * spsec;
        let whole = (first..(first + spsec).min(self.geo.segments)).all(|s| self.free.is_free(s));
        if whole {
            dev.discard(self.block_addr(first, 0), spsec as u64 * BLOCKS_PER_SEG as u64)?;
        }
        Ok(whole)
    }

    /// Where each zone of `zone_blocks` blocks of the main area was written up to, as a
    /// zoned device would report it: an active log's zone up to the log's next block,
    /// a zone with no block in use at 0 (F2FS resets freed zones), every other zone
    /// full (LFS leaves a zone only once it is written to its end).
    pub fn zone_write_pointers(&self, zone_blocks: u64) -> Vec<u64> {
        let zone_segs = (zone_blocks / BLOCKS_PER_SEG as u64).max(1) as u32;
        let zones = self.geo.segments / zone_segs;
        (0..zones)
            .map(|z| {
                let first = z * zone_segs;
                let segs = first..first + zone_segs;
                if let Some(log) = self.open_segments().find(|l| segs.contains(&l.segno)) {
                    return (log.segno - first) as u64 * BLOCKS_PER_SEG as u64 + log.next_blkoff as u64;
                }
                if segs.clone().all(|s| self.sit[s as usize].valid_blocks == 0) {
                    0
                } else {
                    zone_blocks
                }
            })
            .collect()
    }

    /// Valid blocks in data segments and in node segments.
    pub fn valid_by_kind(&self) -> [u64; 2] {
        self.valid_kind
    }

    /// Blocks invalidated in data and in node segments since open (overwritten,
    /// deleted, or moved by GC).
    pub fn invalidated_by_kind(&self) -> [u64; 2] {
        self.invalidated
    }

    /// Sections reserved for cleaning (`rsvd_segment_count` in sections).
    pub fn reserved_sections(&self) -> u32 {
        self.space.reserved_secs
    }

    /// Room left in each of the six logs' current sections as the kernel's
    /// `has_curseg_enough_space` counts it: the section's blocks less its checkpoint
    /// count (`ckpt_valid_blocks`: blocks valid at the last checkpoint or written
    /// since, invalidated or not). A log that is not open has a whole section.
    pub fn log_sections_ckpt_room(&self) -> [u64; NR_LOGS] {
        let spsec = self.geo.segs_per_sec;
        let sec_blocks = spsec as u64 * BLOCKS_PER_SEG as u64;
        std::array::from_fn(|li| {
            let segno = self.logs[li].segno;
            if segno == super::CLOSED || segno >= self.geo.segments {
                return sec_blocks;
            }
            let start = segno / spsec * spsec;
            let end = (start + spsec).min(self.geo.segments);
            let ckpt: u64 = (start..end)
                .map(|s| {
                    self.sit[s as usize].valid_blocks as u64 + self.cp_invalidated.get(&s).copied().unwrap_or(0) as u64
                })
                .sum();
            sec_blocks.saturating_sub(ckpt)
        })
    }
}
