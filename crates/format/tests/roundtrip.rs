//! Property tests: encoders and decoders agree, and no decoder panics on any bytes.

use proptest::prelude::*;
use uf2fs_format::checkpoint::{Checkpoint, OrphanBlock};
use uf2fs_format::consts::*;
use uf2fs_format::dentry::DentryArea;
use uf2fs_format::nat::NatEntry;
use uf2fs_format::node::NodeFooter;
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::{compacted_blocks, compacted_data_summaries, Summary, SummaryBlock};
use uf2fs_format::superblock::Superblock;
use uf2fs_format::xattr::{acl_to_xattr, parse_xattrs};
use uf2fs_format::Geometry;

proptest! {
    #[test]
    fn nat_entry_roundtrip(version: u8, ino: u32, block_addr: u32) {
        let e = NatEntry { version, ino, block_addr };
        let mut b = [0u8; 9];
        e.encode(&mut b);
        prop_assert_eq!(NatEntry::decode(&b).unwrap(), e);
    }

    #[test]
    fn sit_entry_roundtrip(map in proptest::collection::vec(any::<u8>(), 64), seg_type in 0u8..6, mtime: u64) {
        let mut valid_map = [0u8; 64];
        valid_map.copy_from_slice(&map);
        let valid_blocks = valid_map.iter().map(|b| b.count_ones() as u16).sum();
        let e = SitEntry { valid_blocks, seg_type, valid_map, mtime };
        let mut b = [0u8; 74];
        e.encode(&mut b);
        prop_assert_eq!(SitEntry::decode(&b).unwrap(), e);
    }

    #[test]
    fn compacted_summaries_roundtrip(counts in proptest::array::uniform3(0usize..=512), seed: u32) {
        let total: usize = counts.iter().sum();
        let nblocks = compacted_blocks(total, Geometry::DEFAULT);
        let mut blocks = vec![0u8; nblocks * BLOCK_SIZE];
        // Lay entries out by hand: after the two journals, 7 bytes each, skipping footers.
        let mut want: [Vec<Summary>; 3] = Default::default();
        let (mut blk, mut off) = (0usize, 2 * SUM_JOURNAL_SIZE);
        let mut k = seed;
        for (log, &c) in counts.iter().enumerate() {
            for _ in 0..c {
                k = k.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let s = Summary { nid: k, version: (k >> 8) as u8, ofs_in_node: (k >> 16) as u16 };
                s.encode(&mut blocks[blk * BLOCK_SIZE + off..]);
                want[log].push(s);
                off += SUMMARY_SIZE;
                if off + SUMMARY_SIZE > BLOCK_SIZE - SUM_FOOTER_SIZE {
                    blk += 1;
                    off = 0;
                }
            }
        }
        prop_assert_eq!(compacted_data_summaries(&blocks, counts, Geometry::DEFAULT).unwrap(), want);
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4200)) {
        let _ = Superblock::decode(&bytes);
        let _ = Checkpoint::decode(&bytes);
        let _ = OrphanBlock::decode(&bytes);
        let _ = SummaryBlock::decode(&bytes);
        let _ = NodeFooter::decode(&bytes);
        let _ = parse_xattrs(&bytes);
        let _ = acl_to_xattr(&bytes);
        if bytes.len() >= BLOCK_SIZE {
            let area = DentryArea::block(&bytes[..BLOCK_SIZE]).unwrap();
            let _ = area.entries();
            let inline = DentryArea::inline(&bytes[..3488]);
            let _ = inline.entries();
        }
    }
}
