//! Property tests for the encoders mkfs uses: every encoder's output decodes back to the
//! value it was given (checksums included), with the matching decoder.

use proptest::collection::vec;
use proptest::prelude::*;
use uf2fs_format::checkpoint::{
    nat_bits_blocks, nat_bits_bytes, Checkpoint, NatBits, OrphanBlock, CP_CHKSUM_OFFSET, CP_LARGE_NAT_BITMAP_FLAG,
    CP_MIN_CHKSUM_OFFSET,
};
use uf2fs_format::consts::*;
use uf2fs_format::dentry::{DentryArea, DentryAreaMut};
use uf2fs_format::hash::dentry_hash;
use uf2fs_format::nat::NatEntry;
use uf2fs_format::node::{
    checksum_seed, inode_checksum, Compression, Inode, NodeFooter, F2FS_COMPR_FL, F2FS_EXTRA_ATTR, F2FS_INLINE_DENTRY,
    F2FS_INLINE_XATTR,
};
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::{
    checkpoint_journals, compacted_data_summaries, encode_compacted_summaries, encode_nat_journal, encode_sit_journal,
    nat_journal, sit_journal, Summary, SummaryBlock, SUM_TYPE_NODE,
};
use uf2fs_format::superblock::*;
use uf2fs_format::Geometry;

/// A geometry that passes `Superblock::validate`, from a few free choices.
fn superblock() -> impl Strategy<Value = Superblock> {
    let geometry = (1u32..=8, 1u32..=4, 1u32..=8, 1u32..=16, 1u32..=4, 1u32..=64, 0u32..=2);
    let names = (
        "[^\u{0}]{0,40}",
        vec("[a-z0-9]{1,7}", 0..=F2FS_MAX_EXTENSION),
        any::<u8>(),
        "[ -~]{0,255}",
        "[ -~]{0,255}",
        vec(("[a-z/]{1,63}", any::<u32>()), 0..=MAX_DEVICES),
    );
    let rest = (
        any::<[u8; 16]>(),
        any::<u32>(),
        any::<[u32; 3]>(),
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
    );
    (geometry, names, rest).prop_map(|(g, n, r)| {
        let (segs_per_sec, sit_half, nat_half, ssa, secs_per_zone, sections, log_sector_extra) = g;
        let (volume_name, extensions, hot, version, init_version, devices) = n;
        let (uuid, feature, qf_ino, s_encoding, s_encoding_flags, crc) = r;
        let segment0 = 512 * secs_per_zone * segs_per_sec;
        let (ckpt, sit, nat) = (2, 2 * sit_half, 2 * nat_half);
        let main = sections * segs_per_sec;
        let segment_count = ckpt + sit + nat + ssa + main;
        let hot_ext_count = if extensions.is_empty() {
            0
        } else {
            hot % (extensions.len() as u8 + 1).max(1)
        };
        let log_sectorsize = 9 + log_sector_extra;
        Superblock {
            major_ver: 1,
            minor_ver: 15,
            log_sectorsize,
            log_sectors_per_block: 12 - log_sectorsize,
            log_blocksize: 12,
            log_blocks_per_seg: 9,
            segs_per_sec,
            secs_per_zone,
            block_count: segment0 as u64 + (segment_count as u64) * 512,
            section_count: sections,
            segment_count,
            segment_count_ckpt: ckpt,
            segment_count_sit: sit,
            segment_count_nat: nat,
            segment_count_ssa: ssa,
            segment_count_main: main,
            segment0_blkaddr: segment0,
            cp_blkaddr: segment0,
            sit_blkaddr: segment0 + ckpt * 512,
            nat_blkaddr: segment0 + (ckpt + sit) * 512,
            ssa_blkaddr: segment0 + (ckpt + sit + nat) * 512,
            main_blkaddr: segment0 + (ckpt + sit + nat + ssa) * 512,
            root_ino: 3,
            node_ino: 1,
            meta_ino: 2,
            uuid,
            volume_name,
            extensions,
            cp_payload: 0,
            version,
            init_version,
            feature,
            devices: devices
                .into_iter()
                .map(|(path, total_segments)| Device { path, total_segments })
                .collect(),
            qf_ino,
            hot_ext_count,
            s_encoding,
            s_encoding_flags,
            crc,
        }
    })
}

fn checkpoint() -> impl Strategy<Value = (Checkpoint, u32)> {
    let counts = (
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<[u32; 3]>(),
        any::<[u32; 4]>(),
    );
    let logs = (
        any::<[u32; 8]>(),
        any::<[u16; 8]>(),
        any::<[u32; 8]>(),
        any::<[u16; 8]>(),
    );
    let layout = (0u32..3, 0u32..=3, 1u32..=1800, 1u32..=1800);
    (counts, logs, layout, any::<[u8; 16]>()).prop_map(|(c, l, lay, alloc_type)| {
        let (kind, payload, nat_len, sit_len) = lay;
        // kind 0: bitmaps in the block; 1: SIT bitmap in payload blocks; 2: large NAT bitmap.
        let (flags, payload, crc_at) = match kind {
            0 => (c.4[0] & !CP_LARGE_NAT_BITMAP_FLAG, 0, CP_CHKSUM_OFFSET as u32),
            1 => (
                c.4[0] & !CP_LARGE_NAT_BITMAP_FLAG,
                payload.max(1),
                CP_CHKSUM_OFFSET as u32,
            ),
            _ => (c.4[0] | CP_LARGE_NAT_BITMAP_FLAG, 0, CP_MIN_CHKSUM_OFFSET as u32),
        };
        let cp = Checkpoint {
            checkpoint_ver: c.0,
            user_block_count: c.1,
            valid_block_count: c.2,
            rsvd_segment_count: c.3[0],
            overprov_segment_count: c.3[1],
            free_segment_count: c.3[2],
            cur_node_segno: l.0,
            cur_node_blkoff: l.1,
            cur_data_segno: l.2,
            cur_data_blkoff: l.3,
            ckpt_flags: flags,
            cp_pack_total_block_count: c.4[1],
            cp_pack_start_sum: c.4[2],
            valid_node_count: c.4[3],
            valid_inode_count: c.3[0] ^ c.3[1],
            next_free_nid: c.3[2] ^ c.4[3],
            sit_ver_bitmap_bytesize: sit_len,
            nat_ver_bitmap_bytesize: nat_len,
            checksum_offset: crc_at,
            elapsed_time: c.0 ^ c.1,
            alloc_type,
        };
        (cp, payload)
    })
}

/// Whether the bitmaps of `cp` fit its layout (what `encode_with_bitmaps` requires).
fn bitmaps_fit(cp: &Checkpoint, payload: u32) -> bool {
    let (nat, sit) = (cp.nat_ver_bitmap_bytesize as usize, cp.sit_ver_bitmap_bytesize as usize);
    if cp.ckpt_flags & CP_LARGE_NAT_BITMAP_FLAG != 0 {
        CP_MIN_CHKSUM_OFFSET + 4 + nat + sit <= BLOCK_SIZE
    } else if payload > 0 {
        CP_MIN_CHKSUM_OFFSET + nat <= CP_CHKSUM_OFFSET && sit <= payload as usize * BLOCK_SIZE
    } else {
        CP_MIN_CHKSUM_OFFSET + nat + sit <= CP_CHKSUM_OFFSET
    }
}

/// An inode consistent with the features of `sb` (so that decode resolves the same
/// values encode was given).
fn inode_for(sb_feature: u32) -> impl Strategy<Value = Inode> {
    let basic = (
        any::<u16>(),
        any::<u8>(),
        any::<u8>(),
        any::<[u32; 4]>(),
        any::<[u64; 2]>(),
        any::<[u64; 3]>(),
    );
    let more = (
        any::<[u32; 3]>(),
        any::<[u32; 5]>(),
        vec(any::<u8>(), 0..=F2FS_NAME_LEN),
        any::<u8>(),
    );
    let extra = (
        0usize..=9,
        0u16..=MAX_INLINE_XATTR_ADDRS_PROBE,
        any::<u32>(),
        any::<(u64, u32)>(),
        any::<(u64, u8, u8, u16)>(),
    );
    (basic, more, extra, any::<[u32; 3]>(), any::<[u32; 5]>()).prop_map(move |(b, m, e, ext, nids)| {
        let has_extra = sb_feature & FEATURE_EXTRA_ATTR != 0 && b.1 & 1 == 0;
        let mut inline = b.2 & !F2FS_EXTRA_ATTR;
        if has_extra {
            inline |= F2FS_EXTRA_ATTR;
        }
        let extra_isize = if has_extra { (e.0.max(1) * 4) as u16 } else { 0 };
        let fits = |end: u16| has_extra && end <= extra_isize;
        let flexible = has_extra && sb_feature & FEATURE_FLEXIBLE_INLINE_XATTR != 0;
        let inline_xattr_addrs = if flexible {
            e.1
        } else if inline & (F2FS_INLINE_XATTR | F2FS_INLINE_DENTRY) != 0 {
            DEFAULT_INLINE_XATTR_ADDRS as u16
        } else {
            0
        };
        let flags = m.1[0];
        Inode {
            mode: b.0,
            advise: b.1,
            inline,
            uid: b.3[0],
            gid: b.3[1],
            links: b.3[2],
            size: b.4[0],
            blocks: b.4[1],
            atime: (b.5[0], m.0[0]),
            ctime: (b.5[1], m.0[1]),
            mtime: (b.5[2], m.0[2]),
            generation: m.1[1],
            current_depth: m.1[2],
            xattr_nid: m.1[3],
            flags,
            pino: m.1[4],
            name: m.2,
            dir_level: m.3,
            ext: (ext[0], ext[1], ext[2]),
            extra_isize,
            inline_xattr_addrs,
            projid: if fits(8) { e.2 } else { 0 },
            inode_checksum: if fits(12) { b.3[3] } else { 0 },
            crtime: fits(24).then_some(e.3),
            compress: (flags & F2FS_COMPR_FL != 0 && fits(36)).then_some(Compression {
                compr_blocks: e.4 .0,
                algorithm: e.4 .1,
                log_cluster_size: e.4 .2,
                flag: e.4 .3,
            }),
            nids,
            geometry: Default::default(),
        }
    })
}

/// Largest inline xattr size the generator tries.
const MAX_INLINE_XATTR_ADDRS_PROBE: u16 = 200;

proptest! {
    #[test]
    fn superblock_roundtrip(sb in superblock()) {
        let b = sb.encode().unwrap();
        prop_assert_eq!(b.len(), SUPERBLOCK_SIZE);
        let back = Superblock::decode(&b).unwrap();
        if sb.has(FEATURE_SB_CHKSUM) {
            prop_assert_eq!(&back, &Superblock { crc: back.crc, ..sb.clone() });
            prop_assert_eq!(back.crc, uf2fs_format::crc::f2fs_crc32(&b[..SB_CRC_OFFSET]));
        } else {
            prop_assert_eq!(&back, &sb);
        }
        prop_assert_eq!(back.encode().unwrap(), b);
    }

    #[test]
    fn checkpoint_roundtrip((cp, payload) in checkpoint()) {
        let b = cp.encode(Geometry::DEFAULT).unwrap();
        prop_assert_eq!(Checkpoint::decode(&b).unwrap(), cp.clone());
        if bitmaps_fit(&cp, payload) {
            let nat: Vec<u8> = (0..cp.nat_ver_bitmap_bytesize).map(|i| (i * 7) as u8).collect();
            let sit: Vec<u8> = (0..cp.sit_ver_bitmap_bytesize).map(|i| (i * 13 + 1) as u8).collect();
            let pack = cp.encode_with_bitmaps(&nat, &sit, payload, Geometry::DEFAULT).unwrap();
            let back = Checkpoint::decode(&pack[..BLOCK_SIZE]).unwrap();
            prop_assert_eq!(&back, &cp);
            prop_assert_eq!(back.version_bitmaps(&pack, payload, Default::default()).unwrap(), (nat, sit));
        }
    }

    #[test]
    fn nat_bits_roundtrip(nat_pairs in 1u32..40, cp_ver: u64, crc: u32, seed: u8, big: bool) {
        let geo = if big { Geometry::BLOCK_16K } else { Geometry::DEFAULT };
        let segs = 2 * nat_pairs;
        let bytes = nat_bits_bytes(segs);
        let bits = NatBits {
            cp_ver_crc: NatBits::header(cp_ver, crc),
            full: (0..bytes).map(|i| (i as u8).wrapping_mul(seed)).collect(),
            empty: (0..bytes).map(|i| !(i as u8).wrapping_add(seed)).collect(),
        };
        let b = bits.encode(segs, geo).unwrap();
        prop_assert_eq!(b.len(), nat_bits_blocks(segs, geo) as usize * geo.block_size());
        prop_assert_eq!(NatBits::decode(&b, segs, geo).unwrap(), bits);
    }

    #[test]
    fn orphan_block_roundtrip(inos in vec(any::<u32>(), 0..=4092), blk_count in 1u16..8, index in 0u16..8, big: bool) {
        let geo = if big { Geometry::BLOCK_16K } else { Geometry::DEFAULT };
        let inos = if inos.len() > geo.orphans_per_block() { inos[..geo.orphans_per_block()].to_vec() } else { inos };
        let blk_addr = 1 + index % blk_count;
        let entry_count = inos.len() as u32;
        let ob = OrphanBlock { inos, blk_addr, blk_count, entry_count };
        let b = ob.encode(geo).unwrap();
        prop_assert_eq!(b.len(), geo.block_size());
        prop_assert_eq!(OrphanBlock::decode(&b).unwrap(), ob);
    }

    #[test]
    fn node_footer_roundtrip(nid: u32, ino: u32, flag: u32, cp_ver: u64, next_blkaddr: u32) {
        let f = NodeFooter { nid, ino, flag, cp_ver, next_blkaddr };
        let mut b = vec![0u8; BLOCK_SIZE];
        f.encode(&mut b).unwrap();
        prop_assert_eq!(NodeFooter::decode(&b).unwrap(), f);
    }

    #[test]
    fn inode_roundtrip(
        (sb, inode) in superblock().prop_flat_map(|sb| { let f = sb.feature; (Just(sb), inode_for(f)) }),
        addrs in vec(any::<u32>(), 0..=DEF_ADDRS_PER_INODE),
        footer_bits: (u32, u64, u32),
    ) {
        let addrs = &addrs[..addrs.len().min(inode.addrs_per_inode())];
        let footer = NodeFooter { nid: footer_bits.0, ino: footer_bits.0, flag: 0, cp_ver: footer_bits.1, next_blkaddr: footer_bits.2 };
        let b = inode.encode(&sb, addrs, &footer).unwrap();
        let back = Inode::decode(&b, &sb).unwrap();
        if inode.has_checksum(&sb) {
            let crc = inode_checksum(checksum_seed(&sb.uuid), &b).unwrap();
            prop_assert_eq!(back.inode_checksum, crc);
            prop_assert_eq!(&back, &Inode { inode_checksum: crc, ..inode.clone() });
        } else {
            prop_assert_eq!(&back, &inode);
        }
        for (i, a) in addrs.iter().enumerate() {
            prop_assert_eq!(back.addr(&b, i), *a);
        }
        prop_assert_eq!(NodeFooter::decode(&b).unwrap(), footer);
    }

    #[test]
    fn dentries_roundtrip(
        names in vec(vec(1u8..=255, 1..=40), 0..40),
        inline_len in 40usize..3600,
        as_block: bool,
    ) {
        let mut b = vec![0u8; if as_block { BLOCK_SIZE } else { inline_len }];
        let mut area = if as_block { DentryAreaMut::block(&mut b).unwrap() } else { DentryAreaMut::inline(&mut b) };
        let mut want = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if want.iter().any(|(n, _, _)| n == name) {
                continue;
            }
            match area.insert(name, 100 + i as u32, (i % 8) as u8) {
                Ok(slot) => want.push((name.clone(), 100 + i as u32, slot)),
                Err(_) => prop_assert!(area.find_free(name.len().div_ceil(F2FS_SLOT_LEN)).is_none()),
            }
        }
        let view = if as_block { DentryArea::block(&b).unwrap() } else { DentryArea::inline(&b) };
        let got = view.entries().unwrap();
        let mut want_sorted = want.clone();
        want_sorted.sort_by_key(|w| w.2);
        prop_assert_eq!(got.len(), want_sorted.len());
        for (e, (name, ino, slot)) in got.iter().zip(&want_sorted) {
            prop_assert_eq!(e.name, &name[..]);
            prop_assert_eq!(e.ino, *ino);
            prop_assert_eq!(e.slot, *slot);
            prop_assert_eq!(e.hash, dentry_hash(name));
            prop_assert_eq!(e.file_type, ((ino - 100) % 8) as u8);
        }
        for (name, ino, _) in &want {
            prop_assert_eq!(view.find(name, dentry_hash(name)).unwrap().map(|e| e.ino), Some(*ino));
        }
    }

    #[test]
    fn summary_block_roundtrip(
        entries in vec((any::<u32>(), any::<u8>(), any::<u16>()), 0..=ENTRIES_IN_SUM),
        journal in vec(any::<u8>(), 0..=SUM_JOURNAL_SIZE),
        node: bool,
        big: bool,
    ) {
        let geo = if big { Geometry::BLOCK_16K } else { Geometry::DEFAULT };
        let entries: Vec<Summary> = entries.into_iter().map(|(nid, version, ofs_in_node)| Summary { nid, version, ofs_in_node }).collect();
        let blk = SummaryBlock { entries: entries.clone(), journal: journal.clone(), entry_type: if node { SUM_TYPE_NODE } else { 0 } };
        let back = SummaryBlock::decode(&blk.encode(geo).unwrap()).unwrap();
        let mut full = entries;
        full.resize(geo.entries_in_sum(), Summary::default());
        let mut j = journal;
        j.resize(geo.sum_journal_size(), 0);
        prop_assert_eq!(back, SummaryBlock { entries: full, journal: j, entry_type: blk.entry_type });
    }

    #[test]
    fn journals_and_compacted_summaries_roundtrip(
        nats in vec((any::<u32>(), any::<u8>(), any::<u32>(), any::<u32>()), 0..=NAT_JOURNAL_ENTRIES),
        sits in vec((any::<u32>(), any::<[u8; 64]>(), 0u8..6, any::<u64>()), 0..=SIT_JOURNAL_ENTRIES),
        counts in proptest::array::uniform3(0usize..=ENTRIES_IN_SUM),
        seed: u32,
        big: bool,
    ) {
        let geo = if big { Geometry::BLOCK_16K } else { Geometry::DEFAULT };
        let nat: Vec<(u32, NatEntry)> = nats.into_iter().map(|(nid, version, ino, block_addr)| (nid, NatEntry { version, ino, block_addr })).collect();
        let sit: Vec<(u32, SitEntry)> = sits.into_iter().map(|(segno, valid_map, seg_type, mtime)| {
            let valid_blocks = valid_map.iter().map(|b| b.count_ones() as u16).sum();
            (segno, SitEntry { valid_blocks, seg_type, valid_map, mtime })
        }).collect();
        prop_assert_eq!(nat_journal(&encode_nat_journal(&nat, geo).unwrap(), geo).unwrap(), nat.clone());
        prop_assert_eq!(sit_journal(&encode_sit_journal(&sit, geo).unwrap(), geo).unwrap(), sit.clone());
        let mut k = seed;
        let logs: Vec<Vec<Summary>> = counts.iter().map(|&c| (0..c).map(|_| {
            k = k.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            Summary { nid: k, version: (k >> 8) as u8, ofs_in_node: (k >> 16) as u16 }
        }).collect()).collect();
        let b = encode_compacted_summaries(&nat, &sit, [&logs[0], &logs[1], &logs[2]], geo).unwrap();
        let j = checkpoint_journals(&b, true, geo).unwrap();
        prop_assert_eq!(j.nat, nat);
        prop_assert_eq!(j.sit, sit);
        let back = compacted_data_summaries(&b, counts, geo).unwrap();
        prop_assert_eq!(&back[..], &logs[..]);
    }
}
