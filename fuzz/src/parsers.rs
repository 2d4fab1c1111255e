//! What each parser fuzz target does with its input: decode it every way the reader
//! does, then check what a decoded value promises (ranges inside the block, counts within
//! their bounds) and that encoding it gives back bytes that decode to the same value.
//! A panic here is a bug in uf2fs-format.
//!
//! This file depends on `uf2fs_format` only: `crates/format/tests/regressions.rs`
//! includes it with `#[path]` to replay `fuzz/regressions/<target>/*` under `cargo test`.

use std::sync::OnceLock;
use uf2fs_format::checkpoint::{
    checkpoint_crc, Checkpoint, NatBits, OrphanBlock, CP_CHKSUM_OFFSET, CP_MIN_CHKSUM_OFFSET,
};
use uf2fs_format::consts::*;
use uf2fs_format::crc::f2fs_crc32;
use uf2fs_format::dentry::{bucket_blocks, dir_block_index, dir_buckets, nr_inline_dentry, DentryArea, DentryAreaMut};
use uf2fs_format::hash::dentry_hash;
use uf2fs_format::le::{put_u32, u32_at};
use uf2fs_format::nat::{nat_block_addr, nat_block_entry, pair_block_addr, NatEntry, NAT_ENTRY_SIZE};
use uf2fs_format::node::{checksum_seed, inode_checksum, node_slot, seal_inode_checksum, Inode, NodeFooter};
use uf2fs_format::sit::{sit_block_addr, sit_block_entry, SitEntry};
use uf2fs_format::summary::{
    checkpoint_journals, compacted_data_summaries, encode_compacted_summaries, encode_nat_journal, encode_sit_journal,
    nat_journal, sit_journal, Summary, SummaryBlock,
};
use uf2fs_format::superblock::{
    Superblock, FEATURE_EXTRA_ATTR, FEATURE_FLEXIBLE_INLINE_XATTR, FEATURE_INODE_CHKSUM, FEATURE_INODE_CRTIME,
    SB_CRC_OFFSET, SUPERBLOCK_SIZE,
};
use uf2fs_format::xattr::{acl_to_xattr, parse_xattrs, INDEX_POSIX_ACL_ACCESS, INDEX_POSIX_ACL_DEFAULT};
use uf2fs_format::Geometry;

/// What a parser target runs on one input (panics on a bug).
pub type Check = fn(&[u8]);

/// Every parser target by name, as `fuzz/regressions/<name>/` is laid out.
pub const TARGETS: &[(&str, Check)] = &[
    ("superblock", superblock),
    ("checkpoint", checkpoint),
    ("orphan", orphan),
    ("nat", nat),
    ("sit", sit),
    ("summary", summary),
    ("node", node),
    ("dentry", dentry),
    ("xattr", xattr),
];

/// The superblock of a real mkfs.f2fs image (default features), decoded once.
fn fixture_superblock() -> &'static Superblock {
    static SB: OnceLock<Superblock> = OnceLock::new();
    SB.get_or_init(|| {
        Superblock::decode(include_bytes!("../fixtures/superblock.bin")).expect("fuzz/fixtures/superblock.bin decodes")
    })
}

/// The fixture superblock without features, and with extra_attr, flexible_inline_xattr,
/// inode_checksum and inode_crtime: the two ways an inode is laid out.
fn inode_superblocks() -> &'static [Superblock; 2] {
    static SBS: OnceLock<[Superblock; 2]> = OnceLock::new();
    SBS.get_or_init(|| {
        let mut plain = fixture_superblock().clone();
        plain.feature = 0;
        let mut extra = plain.clone();
        extra.feature =
            FEATURE_EXTRA_ATTR | FEATURE_FLEXIBLE_INLINE_XATTR | FEATURE_INODE_CHKSUM | FEATURE_INODE_CRTIME;
        [plain, extra]
    })
}

/// Reads a little-endian u32 at `at`, 0 past the end (for deriving parameters).
/// The input's first 4 KiB block when it has one (decoders of whole blocks take
/// exactly a block), else the whole input (which they refuse as too short).
fn one_block(data: &[u8]) -> &[u8] {
    data.get(..BLOCK_SIZE).unwrap_or(data)
}

fn word(data: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    for (i, x) in b.iter_mut().enumerate() {
        *x = data.get(at + i).copied().unwrap_or(0);
    }
    u32::from_le_bytes(b)
}

/// Superblock: raw, then with the CRC made valid so the fuzzer gets past it.
pub fn superblock(data: &[u8]) {
    check_superblock(data);
    if data.len() >= SUPERBLOCK_SIZE {
        let mut fixed = data[..SUPERBLOCK_SIZE].to_vec();
        let crc = f2fs_crc32(&fixed[..SB_CRC_OFFSET]);
        put_u32(&mut fixed, SB_CRC_OFFSET, crc);
        check_superblock(&fixed);
    }
}

fn check_superblock(b: &[u8]) {
    match Superblock::decode(b) {
        Ok(sb) => {
            let _ = sb.feature_names();
            let _ = (
                sb.blocks_per_seg(),
                sb.blocks_per_sec(),
                sb.main_end_blkaddr(),
                sb.max_nid(),
            );
            assert!(sb.extensions.len() <= 64);
            assert!(sb.devices.len() <= MAX_DEVICES);
            assert!((sb.hot_ext_count as usize) <= sb.extensions.len());
            assert!(sb.segs_per_sec > 0 && sb.section_count > 0);
            if let Ok(bytes) = sb.encode() {
                let mut again = Superblock::decode(&bytes).expect("an encoded superblock decodes");
                // The stored CRC is recomputed under sb_checksum.
                again.crc = sb.crc;
                assert_eq!(again, sb, "superblock round trip");
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Checkpoint block (plus payload blocks when the input is longer): decode, validate
/// against the fixture superblock, extract the version bitmaps.
pub fn checkpoint(data: &[u8]) {
    check_checkpoint(data);
    nat_bits(data);
    if data.len() >= BLOCK_SIZE {
        let mut fixed = data.to_vec();
        let ofs = u32_at(&fixed, 164) as usize;
        if (CP_MIN_CHKSUM_OFFSET..=CP_CHKSUM_OFFSET).contains(&ofs) {
            let crc = checkpoint_crc(&fixed[..BLOCK_SIZE], ofs);
            put_u32(&mut fixed, ofs, crc);
            check_checkpoint(&fixed);
        }
    }
}

fn check_checkpoint(data: &[u8]) {
    let cp = match Checkpoint::decode(one_block(data)) {
        Ok(cp) => cp,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = cp.flag_names();
    let sb = fixture_superblock();
    let valid = cp.validate(sb);
    if let Err(e) = &valid {
        let _ = e.to_string();
    }
    let valid = valid.is_ok();
    let bytes = cp.encode(Geometry::DEFAULT).expect("a decoded checkpoint encodes");
    assert_eq!(Checkpoint::decode(&bytes).expect("an encoded checkpoint decodes"), cp);
    let payload_in_input = (data.len() / BLOCK_SIZE).saturating_sub(1) as u32;
    for payload in [0, payload_in_input, sb.cp_payload, u32::MAX / BLOCK_SIZE as u32] {
        match cp.version_bitmaps(data, payload, Geometry::DEFAULT) {
            Ok((nat, sit)) => {
                assert_eq!(nat.len(), cp.nat_ver_bitmap_bytesize as usize);
                assert_eq!(sit.len(), cp.sit_ver_bitmap_bytesize as usize);
                // Unvalidated bitmap sizes may make the two areas overlap; a valid
                // checkpoint's do not, and then writing them back must round-trip.
                if !valid {
                    continue;
                }
                let pack = cp
                    .encode_with_bitmaps(&nat, &sit, payload, Geometry::DEFAULT)
                    .expect("bitmaps that were read back can be written");
                assert_eq!(
                    Checkpoint::decode(&pack[..BLOCK_SIZE]).expect("encoded pack decodes"),
                    cp
                );
                let back = cp
                    .version_bitmaps(&pack, payload, Geometry::DEFAULT)
                    .expect("bitmaps read back");
                assert_eq!(back, (nat, sit), "version bitmaps round trip");
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

/// NAT bits (the blocks ending a checkpoint pack), for the fixture's NAT size and for
/// one taken from the input.
fn nat_bits(data: &[u8]) {
    for segs in [fixture_superblock().segment_count_nat, word(data, 0) % 4096] {
        if let Ok(bits) = NatBits::decode(data, segs, Geometry::DEFAULT) {
            let bytes = bits.encode(segs, Geometry::DEFAULT).expect("decoded NAT bits encode");
            assert_eq!(
                NatBits::decode(&bytes, segs, Geometry::DEFAULT).expect("encoded NAT bits decode"),
                bits
            );
        }
    }
}

/// Orphan block.
pub fn orphan(data: &[u8]) {
    match OrphanBlock::decode(one_block(data)) {
        Ok(o) => {
            assert!(o.inos.len() <= F2FS_ORPHANS_PER_BLOCK);
            let bytes = o.encode(Geometry::DEFAULT).expect("a decoded orphan block encodes");
            assert_eq!(OrphanBlock::decode(&bytes).expect("an encoded orphan block decodes"), o);
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// NAT entry and NAT block; the version-bitmap address arithmetic on arbitrary input.
pub fn nat(data: &[u8]) {
    if let Ok(e) = NatEntry::decode(data) {
        let mut out = [0u8; NAT_ENTRY_SIZE];
        e.encode(&mut out);
        assert_eq!(&out[..], &data[..NAT_ENTRY_SIZE], "NAT entry round trip");
    }
    for i in 0..=NAT_ENTRY_PER_BLOCK {
        let r = nat_block_entry(one_block(data), i);
        assert!(i < NAT_ENTRY_PER_BLOCK || r.is_err());
    }
    let area = word(data, 0);
    for index in [word(data, 4), word(data, 8), u32::MAX, 0] {
        let _ = nat_block_addr(area, data, index);
        let _ = pair_block_addr(area, data, index);
    }
}

/// SIT entry and SIT block.
pub fn sit(data: &[u8]) {
    if let Ok(e) = SitEntry::decode(data) {
        assert!(e.valid_blocks as u32 <= BLOCKS_PER_SEG);
        let mut out = [0u8; SIT_ENTRY_SIZE];
        e.encode(&mut out);
        assert_eq!(&out[..], &data[..SIT_ENTRY_SIZE], "SIT entry round trip");
    }
    for i in 0..=SIT_ENTRY_PER_BLOCK {
        let r = sit_block_entry(one_block(data), i);
        assert!(i < SIT_ENTRY_PER_BLOCK || r.is_err());
    }
    let (area, segs) = (word(data, 0), word(data, 4));
    for index in [word(data, 8), u32::MAX, 0] {
        let _ = sit_block_addr(area, segs, data, index);
    }
}

/// Summary block, its journal as NAT and SIT journals, and the checkpoint's summary
/// blocks (compacted or not).
pub fn summary(data: &[u8]) {
    let _ = Summary::decode(data);
    if let Ok(s) = SummaryBlock::decode(one_block(data)) {
        assert_eq!(s.entries.len(), ENTRIES_IN_SUM);
        assert_eq!(s.journal.len(), SUM_JOURNAL_SIZE);
        check_journals(&s.journal);
        let bytes = s.encode(Geometry::DEFAULT).expect("a decoded summary block encodes");
        assert_eq!(
            SummaryBlock::decode(&bytes).expect("an encoded summary block decodes"),
            s
        );
    }
    check_journals(data);
    for compact in [true, false] {
        match checkpoint_journals(data, compact, Geometry::DEFAULT) {
            Ok(j) => {
                assert!(j.nat.len() <= NAT_JOURNAL_ENTRIES);
                assert!(j.sit.len() <= SIT_JOURNAL_ENTRIES);
                if compact {
                    check_compacted(data, &j.nat, &j.sit);
                }
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

/// Compacted data summaries with entry counts taken from the input: whatever decodes
/// encodes back to blocks that decode the same.
fn check_compacted(data: &[u8], nat: &[(u32, NatEntry)], sit: &[(u32, SitEntry)]) {
    let w = word(data, SUM_JOURNAL_SIZE * 2);
    let counts = [
        (w & 0x3ff) as usize,
        (w >> 10 & 0x3ff) as usize,
        (w >> 20 & 0x3ff) as usize,
    ];
    let Ok(logs) = compacted_data_summaries(data, counts, Geometry::DEFAULT) else {
        return;
    };
    for (log, &count) in logs.iter().zip(&counts) {
        assert_eq!(log.len(), count);
    }
    let bytes = encode_compacted_summaries(nat, sit, [&logs[0], &logs[1], &logs[2]], Geometry::DEFAULT)
        .expect("decoded compacted summaries encode");
    assert_eq!(
        compacted_data_summaries(&bytes, counts, Geometry::DEFAULT).expect("encoded summaries decode"),
        logs
    );
    let j = checkpoint_journals(&bytes, true, Geometry::DEFAULT).expect("encoded journals decode");
    assert_eq!((&j.nat[..], &j.sit[..]), (nat, sit), "compacted journals round trip");
}

fn check_journals(j: &[u8]) {
    if let Ok(n) = nat_journal(j, Geometry::DEFAULT) {
        assert!(n.len() <= NAT_JOURNAL_ENTRIES);
        let bytes = encode_nat_journal(&n, Geometry::DEFAULT).expect("a decoded NAT journal encodes");
        assert_eq!(
            nat_journal(&bytes, Geometry::DEFAULT).expect("an encoded NAT journal decodes"),
            n
        );
    }
    if let Ok(s) = sit_journal(j, Geometry::DEFAULT) {
        assert!(s.len() <= SIT_JOURNAL_ENTRIES);
        let bytes = encode_sit_journal(&s, Geometry::DEFAULT).expect("a decoded SIT journal encodes");
        assert_eq!(
            sit_journal(&bytes, Geometry::DEFAULT).expect("an encoded SIT journal decodes"),
            s
        );
    }
}

/// Node block: footer, inode under both layouts (with every range it hands out used to
/// slice the block, as the core does), node slots.
pub fn node(data: &[u8]) {
    if let Ok(f) = NodeFooter::decode(one_block(data)) {
        let _ = f.offset();
        let mut b = data[..BLOCK_SIZE].to_vec();
        f.encode(&mut b).expect("a decoded footer encodes");
        assert_eq!(b, &data[..BLOCK_SIZE], "node footer round trip");
    }
    for sb in inode_superblocks() {
        match Inode::decode(data, sb) {
            Ok(inode) => {
                check_inode(data, &inode);
                check_inode_encode(data, &inode, sb);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    for i in 0..=ADDRS_PER_BLOCK {
        let r = node_slot(one_block(data), i);
        assert!(i < ADDRS_PER_BLOCK || r.is_err());
    }
}

/// Re-encoding a decoded inode's fields over its own block changes nothing a decode
/// sees; sealing the checksum makes it verify.
fn check_inode_encode(block: &[u8], inode: &Inode, sb: &Superblock) {
    let mut b = block[..BLOCK_SIZE].to_vec();
    inode.encode_fields(&mut b, sb).expect("a decoded inode encodes");
    assert_eq!(
        &Inode::decode(&b, sb).expect("an encoded inode decodes"),
        inode,
        "inode round trip"
    );
    seal_inode_checksum(&mut b, sb).expect("4 KiB block");
    let sealed = Inode::decode(&b, sb).expect("a sealed inode decodes");
    if sealed.has_checksum(sb) {
        let computed = inode_checksum(checksum_seed(&sb.uuid), &b).expect("4 KiB block");
        assert_eq!(sealed.inode_checksum, computed, "sealed inode checksum verifies");
    }
}

fn check_inode(block: &[u8], inode: &Inode) {
    assert!(inode.name.len() <= F2FS_NAME_LEN);
    assert!(inode.addr_start() + inode.addrs_per_inode() <= DEF_ADDRS_PER_INODE);
    for i in 0..inode.addrs_per_inode() {
        let _ = inode.addr(block, i);
    }
    let data = inode.inline_data_range();
    assert!(
        data.start <= data.end && data.end <= I_NID_OFFSET,
        "inline data {data:?}"
    );
    assert_eq!(data.len(), inode.max_inline_data());
    let xattrs = inode.inline_xattr_range();
    assert!(
        xattrs.start <= xattrs.end && xattrs.end <= I_NID_OFFSET,
        "inline xattrs {xattrs:?}"
    );
    assert!(
        data.end <= xattrs.start,
        "inline data {data:?} overlaps inline xattrs {xattrs:?}"
    );
    walk_dentries(&DentryArea::inline(&block[data]));
    if let Ok(xs) = parse_xattrs(&block[xattrs]) {
        check_xattrs(&xs);
    }
    let _ = (
        inode.is_encrypted(),
        inode.is_verity(),
        inode.is_compressed(),
        inode.is_casefold(),
    );
}

/// Dentry block (inputs of at least 4 KiB) and inline dentry area (the whole input up to
/// 4 KiB); the directory hash layout with parameters taken from the input.
pub fn dentry(data: &[u8]) {
    if let Ok(area) = DentryArea::block(one_block(data)) {
        assert_eq!(area.slots(), NR_DENTRY_IN_BLOCK);
        walk_dentries(&area);
    }
    let inline = &data[..data.len().min(BLOCK_SIZE)];
    let area = DentryArea::inline(inline);
    assert_eq!(area.slots(), nr_inline_dentry(inline.len()));
    walk_dentries(&area);
    insert_into(data);
    let level = data.first().copied().unwrap_or(0) as u32 % (MAX_DIR_HASH_DEPTH + 1);
    let dir_level = data.get(1).copied().unwrap_or(0) as u32;
    let buckets = dir_buckets(level, dir_level);
    assert!(buckets > 0);
    let bucket = dentry_hash(data) as u64 % buckets;
    let _ = dir_block_index(level, dir_level, bucket) + bucket_blocks(level);
}

/// The writer: names cut from the input go into an empty block and an empty inline area,
/// and must be listed and found exactly; then into a copy of the input's own area (which
/// may be corrupt: only no panic is asked there).
fn insert_into(data: &[u8]) {
    let names: Vec<&[u8]> = data
        .split(|&c| c == 0 || c == b'/')
        .filter(|n| !n.is_empty() && n.len() <= F2FS_NAME_LEN)
        .take(24)
        .collect();
    let inline_len = data.len().min(BLOCK_SIZE);
    for mut area in [vec![0u8; BLOCK_SIZE], vec![0u8; inline_len]] {
        let is_block = area.len() == BLOCK_SIZE;
        let mut w = if is_block {
            DentryAreaMut::block(&mut area).expect("4 KiB")
        } else {
            DentryAreaMut::inline(&mut area)
        };
        let mut inserted = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if inserted.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Ok(slot) = w.insert(name, i as u32 + 3, 1) {
                inserted.push((*name, slot));
            }
        }
        let view = w.view();
        let listed = view.entries().expect("entries the writer wrote decode");
        assert_eq!(listed.len(), inserted.len(), "every inserted name is listed");
        for (name, slot) in &inserted {
            let found = view
                .find(name, dentry_hash(name))
                .expect("find")
                .expect("inserted name is found");
            assert_eq!(found.slot, *slot);
        }
    }
    let mut own = data[..inline_len].to_vec();
    let mut w = DentryAreaMut::inline(&mut own);
    if let Some(name) = names.first() {
        let _ = w.insert(name, 3, 1);
        let _ = w.view().entries();
    }
}

fn walk_dentries(area: &DentryArea<'_>) {
    for slot in 0..=area.slots() {
        if let Ok(Some((e, next))) = area.entry_at(slot) {
            assert!(next > slot && next <= area.slots());
            assert!(!e.name.is_empty() && e.name.len() <= F2FS_NAME_LEN);
        }
    }
    match area.entries() {
        Ok(entries) => {
            assert!(entries.len() <= area.slots());
            for e in entries.iter().take(8) {
                let _ = dentry_hash(e.name);
                let found = area.find(e.name, e.hash).expect("find after entries succeeded");
                assert!(found.is_some(), "listed entry not found");
            }
            let _ = area.find(b"no-such-name", dentry_hash(b"no-such-name"));
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Xattr area (inline part followed by the xattr node's part) and POSIX ACL values.
pub fn xattr(data: &[u8]) {
    match parse_xattrs(data) {
        Ok(xs) => check_xattrs(&xs),
        Err(e) => {
            let _ = e.to_string();
        }
    }
    check_acl(data);
}

fn check_xattrs(xs: &[uf2fs_format::xattr::RawXattr]) {
    for x in xs {
        assert!(x.name.len() <= 255 && x.value.len() <= u16::MAX as usize);
        let _ = x.full_name();
        if x.index == INDEX_POSIX_ACL_ACCESS || x.index == INDEX_POSIX_ACL_DEFAULT {
            check_acl(&x.value);
        }
    }
}

fn check_acl(v: &[u8]) {
    match acl_to_xattr(v) {
        Ok(out) => {
            assert_eq!(out.len() % 8, 4, "xattr ACL is a 4-byte header and 8-byte entries");
            assert!(out.len() <= 4 + 2 * v.len(), "ACL grew more than twice");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}
