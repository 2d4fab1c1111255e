//! Garbage collection of chosen sections: `F2FS_IOC_GARBAGE_COLLECT_RANGE` (Linux's
//! `f2fs_ioc_gc_range`), as Linux 6.1 does it.
//!
//! The range is of block addresses. Linux checks it against the main area (`start`
//! not before it, `start + len` before `segment0_blkaddr` plus every segment's blocks,
//! no overflow), then, from `start` on and a section's blocks at a time for as long as
//! the position is not past `start + len` (so a range whose end is a section boundary
//! takes the section after it too), collects the section holding the position as the
//! victim of one pass; each pass can end the whole request:
//!
//! - the segment at the position has no valid block: `ENODATA` (the victim check of
//!   `get_victim_by_default`);
//! - the section holds an active log (`sec_usage_check`): `EBUSY`, which the ioctl
//!   answers as `EAGAIN`;
//! - with `sync` (a foreground pass, `err_gc_skipped` set), a victim left with valid
//!   blocks (blocks of pinned files stay): `EAGAIN`.
//!
//! Without `sync` Linux's background pass only marks the victim's data dirty for
//! writeback; uf2fs moves it at once, as its foreground pass does (the same blocks
//! end up moved). Emptied sections stay prefree until the next checkpoint, as after
//! Linux's pass (which writes none here).

use super::migrate;
use crate::{Error, Fs, Result};

/// Where [`Fs::gc_range`] stopped before the end of its range, as Linux's ioctl ends
/// there (each with Linux's errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcRangeStop {
    /// The segment at the position has no valid block (`ENODATA`).
    NoValidBlocks {
        /// The main-area segment.
        segno: u32,
    },
    /// The section holds an active log (`EAGAIN`).
    InUse {
        /// The section.
        secno: u32,
    },
    /// With `sync`, the section kept valid blocks: blocks of pinned files, which
    /// garbage collection leaves (`EAGAIN`).
    NotEmptied {
        /// The section.
        secno: u32,
    },
}

impl GcRangeStop {
    /// Linux's errno for the stop.
    pub fn errno(&self) -> i32 {
        match self {
            GcRangeStop::NoValidBlocks { .. } => 61,                          // ENODATA
            GcRangeStop::InUse { .. } | GcRangeStop::NotEmptied { .. } => 11, // EAGAIN
        }
    }
}

/// What [`Fs::gc_range`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcRangeReport {
    /// Sections collected (each a victim whose valid blocks were moved).
    pub sections: u64,
    /// Of those, sections left without a valid block.
    pub emptied: u64,
    /// Data blocks moved.
    pub data_blocks_moved: u64,
    /// Node blocks moved.
    pub node_blocks_moved: u64,
    /// Where the request stopped before the end of its range, if it did.
    pub stop: Option<GcRangeStop>,
}

impl Fs {
    /// Collects the sections holding block addresses `start ..= start + len` (stepping
    /// a section's blocks from `start`; see the module notes of `gc::range`), each as
    /// the victim of one pass: foreground with `sync`, else background. `Invalid` for a
    /// range outside the main area; `NoSpace` when the free sections cannot take a
    /// victim's blocks (after a checkpoint of the prefree ones). Read-write only.
    pub fn gc_range(&self, start: u64, len: u64, sync: bool) -> Result<GcRangeReport> {
        self.stop_on_damage(self.gc_range_inner(start, len, sync))
    }

    /// [`Fs::gc_range`], before damage it reports stops the volume.
    fn gc_range_inner(&self, start: u64, len: u64, sync: bool) -> Result<GcRangeReport> {
        let rw = self.rw()?;
        let sb = self.superblock();
        let per_seg = sb.blocks_per_seg() as u64;
        let end = start
            .checked_add(len)
            .ok_or_else(|| Error::Invalid(format!("range {start:#x}+{len:#x} overflows")))?;
        let max = sb.segment0_blkaddr as u64 + sb.segment_count as u64 * per_seg;
        let main = sb.main_blkaddr as u64;
        if start < main || end >= max {
            return Err(Error::Invalid(format!(
                "blocks {start:#x}..={end:#x} are not within the main area ({main:#x}..{max:#x})"
            )));
        }
        let (segments, spsec) = {
            let s = rw.segs();
            (s.segment_count(), s.segs_per_sec())
        };
        let per_sec = per_seg * spsec as u64;
        let mut report = GcRangeReport::default();
        let mut at = start;
        while at <= end {
            let segno = ((at - main) / per_seg) as u32;
            if segno >= segments {
                // Past the last whole segment (Linux's bound counts segments the
                // main area does not have): no block to collect there.
                report.stop = Some(GcRangeStop::NoValidBlocks { segno });
                break;
            }
            if let Some(stop) = self.gc_range_section(rw, segno, sync, &mut report)? {
                report.stop = Some(stop);
                break;
            }
            at += per_sec;
        }
        Ok(report)
    }

    /// One pass of [`Fs::gc_range`]: the section of segment `segno` as the victim.
    fn gc_range_section(
        &self,
        rw: &crate::fs::ReadWrite,
        segno: u32,
        sync: bool,
        report: &mut GcRangeReport,
    ) -> Result<Option<GcRangeStop>> {
        let mut writer = rw.cp_exclusive();
        rw.check_failed()?;
        // A paced victim in progress is finished first, as before any pass.
        let r = self.finish_paced_victim(rw, &writer, false);
        rw.fail_unless_no_space(&r);
        r?;
        let secno = segno / rw.segs().segs_per_sec();
        let victim = {
            let s = rw.segs();
            if s.segment(segno).is_none_or(|e| e.valid_blocks == 0) {
                return Ok(Some(GcRangeStop::NoValidBlocks { segno }));
            }
            if s.section_holds_open_log(secno) {
                return Ok(Some(GcRangeStop::InUse { secno }));
            }
            s.section_info(secno)
        };
        if !super::snapshot::SpaceView::take(self, rw).fits(&victim, false) {
            if rw.segs().prefree_count() > 0 {
                self.gc_checkpoint(rw, &mut writer)?;
            }
            if !super::snapshot::SpaceView::take(self, rw).fits(&victim, false) {
                return Err(Error::NoSpace(format!(
                    "no room to move the {} valid blocks of section {secno}",
                    victim.valid_blocks
                )));
            }
        }
        let cp_ver = writer.last().node_version();
        let r = migrate::migrate_section(&self.tree(rw), secno, cp_ver, sync);
        rw.fail_unless_no_space(&r);
        let moved = r?;
        {
            let mut g = rw.gc();
            let s = &mut g.stats;
            if sync {
                s.fg_calls += 1;
            } else {
                s.bg_calls += 1;
            }
            s.count_victim(victim.is_node);
            s.count_moved(&moved);
        }
        report.sections += 1;
        report.emptied += u64::from(moved.emptied);
        report.data_blocks_moved += moved.data;
        report.node_blocks_moved += moved.node;
        if sync && !moved.emptied {
            return Ok(Some(GcRangeStop::NotEmptied { secno }));
        }
        Ok(None)
    }
}
