//! The six active logs ("current segments"): where each writes next and the summary
//! block it fills, loaded from the checkpoint.

use crate::checkpoint::{read_blocks, CheckpointState};
use crate::device::BlockDevice;
use crate::{Error, Result};
use uf2fs_format::checkpoint::{CP_COMPACT_SUM_FLAG, CP_UMOUNT_FLAG};
use uf2fs_format::consts::{BLOCKS_PER_SEG, ENTRIES_IN_SUM, NR_CURSEG_DATA_TYPE, NR_CURSEG_NODE_TYPE};
use uf2fs_format::summary::{
    compacted_blocks, compacted_data_summaries, Summary, SummaryBlock, SUM_TYPE_DATA, SUM_TYPE_NODE,
};
use uf2fs_format::superblock::{Superblock, FEATURE_RO};

/// Allocation type of a log: append to free segments (LFS).
pub const ALLOC_LFS: u8 = 0;
/// Allocation type of a log: fill holes of dirty segments (SSR; loaded, never chosen).
pub const ALLOC_SSR: u8 = 1;
/// Number of active logs.
pub const NR_LOGS: usize = NR_CURSEG_DATA_TYPE + NR_CURSEG_NODE_TYPE;

/// An active log, by the kernel's `CURSEG_*` number (also the SIT segment type).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogType {
    /// Directory data.
    HotData = 0,
    /// Regular file data.
    WarmData = 1,
    /// Cold file data and GC-moved data.
    ColdData = 2,
    /// Direct nodes of directories.
    HotNode = 3,
    /// Direct nodes of files.
    WarmNode = 4,
    /// Indirect nodes.
    ColdNode = 5,
}

impl LogType {
    /// All six, in `CURSEG_*` order.
    pub const ALL: [LogType; NR_LOGS] = [
        LogType::HotData,
        LogType::WarmData,
        LogType::ColdData,
        LogType::HotNode,
        LogType::WarmNode,
        LogType::ColdNode,
    ];

    /// Whether the log holds node blocks.
    pub fn is_node(self) -> bool {
        self as u8 >= NR_CURSEG_DATA_TYPE as u8
    }

    /// The SIT segment type of its segments.
    pub fn seg_type(self) -> u8 {
        self as u8
    }

    /// Summary footer type of its segments.
    pub fn sum_type(self) -> u8 {
        if self.is_node() {
            SUM_TYPE_NODE
        } else {
            SUM_TYPE_DATA
        }
    }
}

/// An active log (the kernel's `curseg_info`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurSeg {
    /// Segment being filled.
    pub segno: u32,
    /// Next block offset to allocate (LFS); 512 means full.
    pub next_blkoff: u16,
    /// [`ALLOC_LFS`] or [`ALLOC_SSR`].
    pub alloc_type: u8,
    /// The segment's summary block entries, 512 of them.
    pub(crate) sum: Vec<Summary>,
}

impl CurSeg {
    /// Summary entries that are in use: up to the next block offset, or all for SSR.
    pub fn sum_in_use(&self) -> usize {
        if self.alloc_type == ALLOC_SSR {
            ENTRIES_IN_SUM
        } else {
            self.next_blkoff as usize
        }
    }

    /// The summary block entries (512).
    pub fn summaries(&self) -> &[Summary] {
        &self.sum
    }
}

/// Position of each log as the checkpoint records it: (segno, next block offset,
/// allocation type), in `CURSEG_*` order.
fn positions(cps: &CheckpointState) -> [(u32, u16, u8); NR_LOGS] {
    let cp = &cps.cp;
    std::array::from_fn(|i| {
        if i < NR_CURSEG_DATA_TYPE {
            (cp.cur_data_segno[i], cp.cur_data_blkoff[i], cp.alloc_type[i])
        } else {
            let n = i - NR_CURSEG_DATA_TYPE;
            (cp.cur_node_segno[n], cp.cur_node_blkoff[n], cp.alloc_type[i])
        }
    })
}

/// Loads the six logs: positions from the checkpoint, data summaries from the pack
/// (compacted or one block per log), node summaries from the pack on a clean unmount or
/// else rebuilt from the footers of the node blocks written so far (the kernel's
/// `f2fs_restore_node_summary`).
pub fn load_logs(dev: &dyn BlockDevice, sb: &Superblock, cps: &CheckpointState) -> Result<[CurSeg; NR_LOGS]> {
    let pos = positions(cps);
    let bad = |d: String| Error::corrupt("checkpoint", Some(cps.pack_blkaddr), d);
    for (i, &(segno, blkoff, alloc)) in pos.iter().enumerate() {
        if segno >= sb.segment_count_main || blkoff as u32 > BLOCKS_PER_SEG || alloc > ALLOC_SSR {
            return Err(bad(format!("log {i} at segment {segno} offset {blkoff} type {alloc}")));
        }
        // With `ro` only hot data (0) and hot node (3) are written; mkfs records the
        // other four at segment 0, beside hot data.
        let written = |i: usize| !sb.has(FEATURE_RO) || i == 0 || i == NR_CURSEG_DATA_TYPE;
        if written(i) && pos[..i].iter().enumerate().any(|(j, p)| written(j) && p.0 == segno) {
            return Err(bad(format!("two active logs share segment {segno}")));
        }
    }
    let data = data_summaries(dev, cps, &pos, sb.geometry())?;
    let mut out: Vec<CurSeg> = Vec::with_capacity(NR_LOGS);
    for (i, sum) in data.into_iter().enumerate() {
        let (segno, next_blkoff, alloc_type) = pos[i];
        out.push(CurSeg {
            segno,
            next_blkoff,
            alloc_type,
            sum,
        });
    }
    for n in 0..NR_CURSEG_NODE_TYPE {
        let (segno, next_blkoff, alloc_type) = pos[NR_CURSEG_DATA_TYPE + n];
        let sum = node_summary(dev, sb, cps, n, pos[NR_CURSEG_DATA_TYPE + n])?;
        out.push(CurSeg {
            segno,
            next_blkoff,
            alloc_type,
            sum,
        });
    }
    out.try_into().map_err(|_| bad("wrong number of logs".into()))
}

/// Address of summary block `i` of a group of `base` counted back from the pack's end
/// (the layout both the kernel and fsck.f2fs read).
fn from_pack_end(cps: &CheckpointState, base: u64, i: u64) -> u64 {
    cps.pack_blkaddr + cps.cp.cp_pack_total_block_count as u64 - (base + 1) + i
}

fn data_summaries(
    dev: &dyn BlockDevice,
    cps: &CheckpointState,
    pos: &[(u32, u16, u8); NR_LOGS],
    geo: uf2fs_format::Geometry,
) -> Result<Vec<Vec<Summary>>> {
    let cp = &cps.cp;
    let start = cps.pack_blkaddr + cp.cp_pack_start_sum as u64;
    let last = cps.pack_blkaddr + cp.cp_pack_total_block_count as u64 - 1;
    if cp.has_flag(CP_COMPACT_SUM_FLAG) {
        let counts: [usize; 3] = std::array::from_fn(|i| {
            if pos[i].2 == ALLOC_SSR {
                ENTRIES_IN_SUM
            } else {
                pos[i].1 as usize
            }
        });
        let n = compacted_blocks(counts.iter().sum(), geo) as u64;
        if start + n > last {
            return Err(Error::corrupt(
                "checkpoint",
                Some(cps.pack_blkaddr),
                "compacted summaries run past the pack",
            ));
        }
        let blocks = read_blocks(dev, start, n)?;
        let logs = compacted_data_summaries(&blocks, counts, geo)
            .map_err(|e| Error::corrupt("compacted summaries", Some(start), e.to_string()))?;
        return Ok(logs
            .into_iter()
            .map(|mut v| {
                v.resize(ENTRIES_IN_SUM, Summary::default());
                v
            })
            .collect());
    }
    let base = if cp.has_flag(CP_UMOUNT_FLAG) {
        NR_LOGS
    } else {
        NR_CURSEG_DATA_TYPE
    } as u64;
    (0..NR_CURSEG_DATA_TYPE as u64)
        .map(|i| {
            let at = from_pack_end(cps, base, i);
            if at < start || at >= last {
                return Err(Error::corrupt(
                    "checkpoint",
                    Some(cps.pack_blkaddr),
                    "data summaries outside the pack",
                ));
            }
            summary_entries(dev, at, geo, Some(SUM_TYPE_DATA), "data summary")
        })
        .collect()
}

fn node_summary(
    dev: &dyn BlockDevice,
    sb: &Superblock,
    cps: &CheckpointState,
    n: usize,
    (segno, next_blkoff, alloc_type): (u32, u16, u8),
) -> Result<Vec<Summary>> {
    if cps.cp.has_flag(CP_UMOUNT_FLAG) {
        let at = from_pack_end(cps, NR_CURSEG_NODE_TYPE as u64, n as u64);
        if at < cps.pack_blkaddr + cps.cp.cp_pack_start_sum as u64 {
            return Err(Error::corrupt(
                "checkpoint",
                Some(cps.pack_blkaddr),
                "node summaries outside the pack",
            ));
        }
        return summary_entries(dev, at, sb.geometry(), Some(SUM_TYPE_NODE), "node summary");
    }
    // Without a clean unmount the pack has no node summaries and the segment's SSA
    // slot is only written when the log leaves it: rebuild them from the node footers
    // of the blocks written so far (all of an SSR log's), as the kernel's
    // `f2fs_restore_node_summary` does.
    let used = if alloc_type == ALLOC_SSR {
        BLOCKS_PER_SEG as u64
    } else {
        next_blkoff as u64
    };
    let start = sb.main_blkaddr as u64 + segno as u64 * BLOCKS_PER_SEG as u64;
    let blocks = read_blocks(dev, start, used)?;
    let mut sum = vec![Summary::default(); ENTRIES_IN_SUM];
    for (entry, block) in sum.iter_mut().zip(blocks.chunks(dev.block_size())) {
        let footer = uf2fs_format::node::NodeFooter::decode(block)
            .map_err(|e| Error::corrupt("node block", Some(start), e.to_string()))?;
        entry.nid = footer.nid;
    }
    Ok(sum)
}

/// The entries of the summary at the start of pack block `at` (the whole block, or its
/// first 4 KiB with `packed_ssa`).
fn summary_entries(
    dev: &dyn BlockDevice,
    at: u64,
    geo: uf2fs_format::Geometry,
    want_type: Option<u8>,
    what: &str,
) -> Result<Vec<Summary>> {
    let mut b = vec![0u8; dev.block_size()];
    dev.read_blocks(at, &mut b)?;
    let blk = SummaryBlock::decode_in(&b, geo).map_err(|e| Error::corrupt(what, Some(at), e.to_string()))?;
    if want_type.is_some_and(|t| t != blk.entry_type) {
        return Err(Error::corrupt(
            what,
            Some(at),
            format!("footer type {}", blk.entry_type),
        ));
    }
    Ok(blk.entries)
}
