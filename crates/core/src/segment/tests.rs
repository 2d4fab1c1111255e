//! SegmentManager against a simple model, on volumes made by our mkfs.

use super::*;
use crate::checkpoint::{load_checkpoint, load_superblock};
use crate::device::{BlockDevice, MemDevice};
use crate::mkfs::{mkfs, MkfsOptions};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use uf2fs_format::summary::Summary;

const MIB: u64 = 1 << 20;

/// A fresh volume of `size_mib` in memory, and its segment manager.
fn fresh(size_mib: u64, segs_per_sec: u32) -> (MemDevice, SegmentManager, Superblock) {
    let tmp = tempfile::tempdir().unwrap();
    let img = tmp.path().join("img");
    let opts = MkfsOptions {
        size_bytes: Some(size_mib * MIB),
        segs_per_sec,
        ..MkfsOptions::default()
    };
    mkfs(&img, &opts).unwrap();
    let dev = MemDevice::new(std::fs::read(&img).unwrap());
    let sb = load_superblock(&dev).unwrap().sb;
    let cps = load_checkpoint(&dev, &sb).unwrap();
    let m = SegmentManager::load(&dev, &sb, &cps).unwrap();
    (dev, m, sb)
}

fn sum(n: u32) -> Summary {
    Summary {
        nid: n,
        version: 0,
        ofs_in_node: (n % 1000) as u16,
    }
}

#[test]
fn loads_a_fresh_volume() {
    let (_, m, sb) = fresh(64, 1);
    assert_eq!(m.valid_block_count(), 2);
    assert_eq!(m.free_segment_count(), sb.segment_count_main - 6);
    assert_eq!(m.log(LogType::HotData).next_blkoff, 1);
    assert_eq!(m.log(LogType::HotNode).summaries()[0].nid, 3);
    assert_eq!(m.usage().valid_blocks, 2);
}

#[test]
fn a_full_segment_moves_the_log_and_writes_its_summary() {
    let (dev, mut m, sb) = fresh(64, 1);
    let first = m.log(LogType::WarmData).segno;
    let mut addrs = Vec::new();
    for i in 0..513 {
        addrs.push(m.alloc_block(&dev, LogType::WarmData, sum(i)).unwrap());
    }
    let main = sb.main_blkaddr as u64;
    assert_eq!(addrs[0], main + first as u64 * 512);
    assert!(addrs.windows(2).take(511).all(|w| w[1] == w[0] + 1));
    let second = m.log(LogType::WarmData).segno;
    assert_ne!(second, first);
    assert_eq!(addrs[512], main + second as u64 * 512);
    assert_eq!(m.segment(second).unwrap().seg_type, LogType::WarmData.seg_type());
    // The left segment's summary block is in its SSA slot.
    let ssa = crate::device::read_block(&dev, sb.ssa_blkaddr as u64 + first as u64).unwrap();
    let blk = uf2fs_format::summary::SummaryBlock::decode(&ssa).unwrap();
    assert_eq!(blk.entries[511], sum(511));
    assert_eq!(blk.entry_type, uf2fs_format::summary::SUM_TYPE_DATA);
    // Emptying the full segment makes it prefree, not free, until a checkpoint.
    let free_before = m.free_segment_count();
    for a in &addrs[..512] {
        m.invalidate(*a).unwrap();
    }
    assert_eq!(m.prefree_count(), 1);
    assert_eq!(m.free_segment_count(), free_before + 1);
    assert!(m.invalidate(addrs[0]).is_err(), "double invalidation");
    m.checkpoint_done();
    assert_eq!(m.prefree_count(), 0);
    assert_eq!(m.free_segment_count(), free_before + 1);
}

#[test]
fn set_summary_only_for_blocks_of_active_logs() {
    let (dev, mut m, sb) = fresh(64, 1);
    let a = m.alloc_block(&dev, LogType::ColdNode, sum(7)).unwrap();
    m.set_summary(a, sum(8)).unwrap();
    assert_eq!(m.log(LogType::ColdNode).summaries()[0], sum(8));
    assert!(m.set_summary(a + 1, sum(9)).is_err(), "not yet allocated");
    assert!(m.set_summary(sb.main_blkaddr as u64 + 20 * 512, sum(9)).is_err());
    assert!(m.set_summary(0, sum(9)).is_err());
}

#[test]
fn damage_and_own_bugs_are_told_apart() {
    let (dev, mut m, sb) = fresh(64, 1);
    // An address from the image outside the main area: damage, with its address.
    let e = m.invalidate(1).unwrap_err();
    assert!(matches!(e, crate::Error::Corrupt { blkaddr: Some(1), .. }), "{e}");
    assert_eq!(e.errno(), 117);
    let end = sb.main_blkaddr as u64 + sb.segment_count_main as u64 * 512;
    let e = m.invalidate(end).unwrap_err();
    assert!(
        matches!(e, crate::Error::Corrupt { blkaddr: Some(b), .. } if b == end),
        "{e}"
    );
    // The next block of an active log already valid: uf2fs's own bug, EIO.
    let a = m.alloc_block(&dev, LogType::HotData, sum(1)).unwrap();
    m.force_valid(a + 1);
    let e = m.alloc_block(&dev, LogType::HotData, sum(2)).unwrap_err();
    assert!(e.is_bug(), "{e}");
    assert_eq!(e.errno(), 5);
    assert!(e.to_string().contains(&format!("{:#x}", a + 1)), "{e}");
}

#[test]
fn sections_fill_before_the_log_moves_to_a_free_section() {
    let (dev, mut m, sb) = fresh(256, 4);
    let start = m.log(LogType::ColdData).segno;
    assert_eq!(start % 4, 0);
    let main = sb.main_blkaddr as u64;
    for i in 0..4 * 512 {
        let a = m.alloc_block(&dev, LogType::ColdData, sum(i)).unwrap();
        let seg = ((a - main) / 512) as u32;
        assert_eq!(seg / 4, start / 4, "block {i}: segment {seg}");
    }
    // The block that filled the section moved the log on at once.
    let seg = m.log(LogType::ColdData).segno;
    assert_eq!(m.log(LogType::ColdData).next_blkoff, 0);
    assert_ne!(seg / 4, start / 4);
    assert_eq!(seg % 4, 0, "a new section starts at its first segment");
}

/// What the model knows: valid blocks, each segment's valid count, segments emptied
/// since the last checkpoint.
#[derive(Default)]
struct Model {
    valid: BTreeSet<u64>,
    per_seg: BTreeMap<u32, u32>,
    emptied: BTreeSet<u32>,
}

#[derive(Debug, Clone)]
enum Op {
    Alloc(usize, u16),
    Invalidate(usize),
    Checkpoint,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..NR_LOGS, 1u16..700).prop_map(|(l, n)| Op::Alloc(l, n)),
        4 => any::<usize>().prop_map(Op::Invalidate),
        1 => Just(Op::Checkpoint),
    ]
}

fn check(m: &SegmentManager, model: &Model, main: u64, segs: u32) {
    assert_eq!(m.valid_block_count(), 2 + model.valid.len() as u64);
    let logs: BTreeSet<u32> = LogType::ALL.iter().map(|t| m.log(*t).segno).collect();
    assert_eq!(logs.len(), NR_LOGS, "two logs share a segment");
    let mut free = 0;
    for segno in 0..segs {
        let e = m.segment(segno).unwrap();
        let ours = model.per_seg.get(&segno).copied().unwrap_or(0);
        let base = main + segno as u64 * 512;
        let mkfs_blocks = (0..512)
            .filter(|o| m.is_valid(base + o).unwrap() && !model.valid.contains(&(base + o)))
            .count();
        assert_eq!(e.valid_blocks as u32, ours + mkfs_blocks as u32, "segment {segno}");
        if e.valid_blocks == 0 && !logs.contains(&segno) {
            free += 1;
        }
    }
    assert_eq!(m.free_segment_count(), free);
}

fn run(ops: Vec<Op>) {
    let (dev, mut m, sb) = fresh(64, 1);
    let main = sb.main_blkaddr as u64;
    let segs = sb.segment_count_main;
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Alloc(l, n) => {
                let log = LogType::ALL[l];
                for i in 0..n {
                    let before = m.log(log).clone();
                    let a = match m.alloc_block(&dev, log, sum(i as u32)) {
                        Ok(a) => a,
                        Err(e) if e.is_no_space() => break,
                        Err(e) => panic!("{e}"),
                    };
                    let segno = ((a - main) / 512) as u32;
                    assert!(!model.valid.contains(&a), "block {a:#x} handed out twice");
                    assert!(
                        !model.emptied.contains(&segno),
                        "prefree segment {segno} reused before a checkpoint"
                    );
                    if segno == before.segno {
                        assert_eq!(a, main + segno as u64 * 512 + before.next_blkoff as u64, "LFS order");
                    } else {
                        assert_eq!((a - main) % 512, 0, "a new segment starts at block 0");
                        assert_eq!(before.next_blkoff, 512, "the log left a segment that was not full");
                        if m.segment(before.segno).unwrap().valid_blocks == 0 {
                            model.emptied.insert(before.segno);
                        }
                    }
                    assert_eq!(m.segment(segno).unwrap().seg_type, log.seg_type());
                    model.valid.insert(a);
                    *model.per_seg.entry(segno).or_default() += 1;
                }
            }
            Op::Invalidate(k) if !model.valid.is_empty() => {
                let a = *model.valid.iter().nth(k % model.valid.len()).unwrap();
                m.invalidate(a).unwrap();
                model.valid.remove(&a);
                let segno = ((a - main) / 512) as u32;
                let left = model.per_seg.get_mut(&segno).unwrap();
                *left -= 1;
                let current = LogType::ALL.iter().any(|t| m.log(*t).segno == segno);
                if *left == 0 && m.segment(segno).unwrap().valid_blocks == 0 && !current {
                    model.emptied.insert(segno);
                }
            }
            Op::Invalidate(_) => {}
            Op::Checkpoint => {
                m.prepare_checkpoint(&dev).unwrap();
                m.flush_sit(&dev, true).unwrap();
                m.checkpoint_done();
                model.emptied.clear();
            }
        }
        check(&m, &model, main, segs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn allocator_follows_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops);
    }
}

#[test]
fn sit_flush_uses_the_journal_then_blocks() {
    let (dev, mut m, sb) = fresh(64, 1);
    // mkfs leaves the six logs in the journal, which is then full.
    let f = m.flush_sit(&dev, true).unwrap();
    assert_eq!((f.journal.len(), f.blocks_written), (6, 0));
    let a = m.alloc_block(&dev, LogType::HotData, sum(1)).unwrap();
    let f = m.flush_sit(&dev, true).unwrap();
    assert_eq!((f.journal.len(), f.blocks_written), (6, 0), "already journalled");
    // A seventh segment does not fit: everything goes to SIT blocks, copy 1.
    for i in 0..512 {
        m.alloc_block(&dev, LogType::WarmNode, sum(i)).unwrap();
    }
    m.alloc_block(&dev, LogType::WarmNode, sum(0)).unwrap();
    let f = m.flush_sit(&dev, true).unwrap();
    assert!(f.journal.is_empty());
    assert_eq!(f.blocks_written, 1);
    assert!(uf2fs_format::le::test_bit_msb(m.sit_bitmap(), 0));
    let area = SitArea::of(&sb);
    let back = sit::load_sit(&dev, &area, m.sit_bitmap(), &[]).unwrap();
    for (segno, e) in back.iter().enumerate() {
        assert_eq!(Some(e), m.segment(segno as u32), "segment {segno}");
    }
    assert!(m.is_valid(a).unwrap());
    let _ = dev.block_count();
}
