//! Building a checkpoint pack: the one place that lays one out, used by mkfs for a new
//! volume's first pack and by the checkpoint writer for every later one.
//!
//! A pack, by block offset inside its segment:
//!
//! | offset                      | what                                                 |
//! |-----------------------------|------------------------------------------------------|
//! | 0                           | checkpoint block (NAT and, without payload, SIT bitmap) |
//! | 1 ..= cp_payload            | payload: the SIT version bitmap when it is large     |
//! | then                        | orphan blocks (1020 inode numbers each)              |
//! | `cp_pack_start_sum`         | data summaries: compacted (1-2 blocks) or 3 normal   |
//! | then, on unmount only       | hot, warm, cold node summaries                       |
//! | `cp_pack_total_block_count - 1` | checkpoint block again (same version)            |
//! | last blocks of the segment  | NAT bits, when `CP_NAT_BITS_FLAG`                    |

use crate::{Error, Result};
use uf2fs_format::checkpoint::{
    nat_bits_blocks, Checkpoint, NatBits, OrphanBlock, CP_COMPACT_SUM_FLAG, CP_NAT_BITS_FLAG, CP_ORPHAN_PRESENT_FLAG,
    CP_UMOUNT_FLAG,
};
use uf2fs_format::consts::{BLOCKS_PER_SEG, NR_CURSEG_DATA_TYPE, NR_CURSEG_NODE_TYPE};
use uf2fs_format::le::u32_at;
use uf2fs_format::nat::NatEntry;
use uf2fs_format::sit::SitEntry;
use uf2fs_format::summary::{
    compacted_blocks, encode_compacted_summaries, encode_nat_journal, encode_sit_journal, Summary, SummaryBlock,
    SUM_TYPE_DATA, SUM_TYPE_NODE,
};
use uf2fs_format::Geometry;

/// Everything a pack holds, in memory.
pub struct PackSpec<'a> {
    /// The checkpoint block. The builder sets `cp_pack_start_sum`,
    /// `cp_pack_total_block_count` and the flags it decides (umount, compacted
    /// summaries, orphans, NAT bits); every other field is written as given.
    pub cp: Checkpoint,
    /// Payload blocks after the checkpoint block (`cp_payload` of the superblock).
    pub cp_payload: u32,
    /// NAT segments, both copies (sizes the NAT bits).
    pub segment_count_nat: u32,
    /// NAT version bitmap.
    pub nat_bitmap: &'a [u8],
    /// SIT version bitmap.
    pub sit_bitmap: &'a [u8],
    /// Orphan inodes.
    pub orphans: &'a [u32],
    /// NAT journal (kept with the hot data summaries).
    pub nat_journal: &'a [(u32, NatEntry)],
    /// SIT journal (kept with the cold data summaries).
    pub sit_journal: &'a [(u32, SitEntry)],
    /// Summaries of the hot, warm and cold data logs: for each, the whole in-memory
    /// summary block (512 entries, or fewer meaning zeros) and how many entries are in
    /// use (the next block offset, or 512 for a log in SSR mode).
    pub data_logs: [(&'a [Summary], usize); NR_CURSEG_DATA_TYPE],
    /// Summaries of the hot, warm and cold node logs, carried on unmount only.
    pub node_logs: Option<[&'a [Summary]; NR_CURSEG_NODE_TYPE]>,
    /// NAT bits to end the pack with, as (full, empty) bitmaps, when they are valid.
    pub nat_bits: Option<(&'a [u8], &'a [u8])>,
    /// The volume's geometry (every block of the pack is one of its blocks).
    pub geo: Geometry,
}

/// A pack ready to write, block offsets relative to the pack's first block.
pub struct Pack {
    /// The checkpoint block as written.
    pub cp: Checkpoint,
    /// Every block but the closing checkpoint block, in write order.
    pub body: Vec<(u32, Vec<u8>)>,
    /// The closing checkpoint block: written last, after a flush.
    pub last: (u32, Vec<u8>),
    /// Whether the data summaries were compacted.
    pub compacted: bool,
}

fn encode<T>(r: uf2fs_format::Result<T>) -> Result<T> {
    r.map_err(|e| Error::Invalid(format!("cannot encode the checkpoint pack: {e}")))
}

/// Lays out and encodes a pack.
pub fn build_pack(spec: &PackSpec) -> Result<Pack> {
    let geo = spec.geo;
    let orphan_blocks = spec.orphans.len().div_ceil(geo.orphans_per_block()) as u32;
    let in_use: usize = spec.data_logs.iter().map(|l| l.1).sum();
    let compact_blocks = compacted_blocks(in_use, geo) as u32;
    let compacted = compact_blocks < NR_CURSEG_DATA_TYPE as u32;
    let data_blocks = if compacted {
        compact_blocks
    } else {
        NR_CURSEG_DATA_TYPE as u32
    };
    let node_blocks = if spec.node_logs.is_some() {
        NR_CURSEG_NODE_TYPE as u32
    } else {
        0
    };
    let start_sum = 1 + spec.cp_payload + orphan_blocks;
    let total = start_sum + data_blocks + node_blocks + 1;
    let nat_bits_len = nat_bits_blocks(spec.segment_count_nat, geo);
    let with_nat_bits = spec.nat_bits.is_some() && total + nat_bits_len <= BLOCKS_PER_SEG;
    let mut cp = spec.cp.clone();
    let flags = [
        (CP_UMOUNT_FLAG, spec.node_logs.is_some()),
        (CP_COMPACT_SUM_FLAG, compacted),
        (CP_ORPHAN_PRESENT_FLAG, orphan_blocks > 0),
        (CP_NAT_BITS_FLAG, with_nat_bits),
    ];
    for (bit, on) in flags {
        cp.ckpt_flags = if on { cp.ckpt_flags | bit } else { cp.ckpt_flags & !bit };
    }
    cp.cp_pack_start_sum = start_sum;
    cp.cp_pack_total_block_count = total;
    if total > BLOCKS_PER_SEG {
        return Err(Error::Invalid(format!(
            "a checkpoint pack of {total} blocks does not fit its segment"
        )));
    }
    let head = encode(cp.encode_with_bitmaps(spec.nat_bitmap, spec.sit_bitmap, spec.cp_payload, geo))?;
    let cp_block = head[..geo.block_size()].to_vec();
    let mut body: Vec<(u32, Vec<u8>)> = head
        .chunks(geo.block_size())
        .enumerate()
        .map(|(i, b)| (i as u32, b.to_vec()))
        .collect();
    for (i, b) in orphan_blocks_of(spec.orphans, geo)?.into_iter().enumerate() {
        body.push((1 + spec.cp_payload + i as u32, b));
    }
    for (i, b) in data_summaries(spec, compacted)?.into_iter().enumerate() {
        body.push((start_sum + i as u32, b));
    }
    if let Some(logs) = spec.node_logs {
        for (i, entries) in logs.iter().enumerate() {
            let blk = summary_block(entries, Vec::new(), SUM_TYPE_NODE, geo)?;
            body.push((start_sum + data_blocks + i as u32, blk));
        }
    }
    if let (true, Some(bits)) = (with_nat_bits, spec.nat_bits) {
        body.extend(nat_bits(spec.segment_count_nat, bits, &cp, &cp_block, geo)?);
    }
    Ok(Pack {
        cp,
        body,
        last: (total - 1, cp_block),
        compacted,
    })
}

/// The NAT bits blocks at the end of the pack segment, tied to the encoded checkpoint
/// block by its version and checksum.
fn nat_bits(
    segment_count_nat: u32,
    (full, empty): (&[u8], &[u8]),
    cp: &Checkpoint,
    cp_block: &[u8],
    geo: Geometry,
) -> Result<Vec<(u32, Vec<u8>)>> {
    let crc = u32_at(cp_block, cp.checksum_offset as usize);
    let bits = NatBits {
        cp_ver_crc: NatBits::header(cp.checkpoint_ver, crc),
        full: full.to_vec(),
        empty: empty.to_vec(),
    };
    let first = BLOCKS_PER_SEG - nat_bits_blocks(segment_count_nat, geo);
    let blocks = encode(bits.encode(segment_count_nat, geo))?;
    Ok(blocks
        .chunks(geo.block_size())
        .enumerate()
        .map(|(i, b)| (first + i as u32, b.to_vec()))
        .collect())
}

/// A summary block of up to 512 entries with a journal area (with `packed_ssa`, a 4 KiB
/// summary at the start of the block).
fn summary_block(entries: &[Summary], journal: Vec<u8>, entry_type: u8, geo: Geometry) -> Result<Vec<u8>> {
    encode(
        SummaryBlock {
            entries: entries.to_vec(),
            journal,
            entry_type,
        }
        .encode_block(geo),
    )
}

/// Data summaries: one or two compacted blocks, or the three logs' blocks with the NAT
/// journal in the hot one and the SIT journal in the cold one.
fn data_summaries(spec: &PackSpec, compacted: bool) -> Result<Vec<Vec<u8>>> {
    let geo = spec.geo;
    let [hot, warm, cold] = spec.data_logs;
    let in_use = |(entries, n): (&[Summary], usize)| -> Result<Vec<Summary>> {
        if n > BLOCKS_PER_SEG as usize {
            return Err(Error::Invalid(format!("a data log with {n} summaries in use")));
        }
        let mut v: Vec<Summary> = entries.iter().take(n).copied().collect();
        v.resize(n, Summary::default());
        Ok(v)
    };
    if compacted {
        let (h, w, c) = (in_use(hot)?, in_use(warm)?, in_use(cold)?);
        let all = encode(encode_compacted_summaries(
            spec.nat_journal,
            spec.sit_journal,
            [&h, &w, &c],
            geo,
        ))?;
        return Ok(all.chunks(geo.block_size()).map(<[u8]>::to_vec).collect());
    }
    Ok(vec![
        summary_block(
            hot.0,
            encode(encode_nat_journal(spec.nat_journal, geo))?,
            SUM_TYPE_DATA,
            geo,
        )?,
        summary_block(warm.0, Vec::new(), SUM_TYPE_DATA, geo)?,
        summary_block(
            cold.0,
            encode(encode_sit_journal(spec.sit_journal, geo))?,
            SUM_TYPE_DATA,
            geo,
        )?,
    ])
}

/// Orphan blocks holding `orphans`, 1020 (4092 with 16 KiB blocks) to a block.
fn orphan_blocks_of(orphans: &[u32], geo: Geometry) -> Result<Vec<Vec<u8>>> {
    let per = geo.orphans_per_block();
    let count = orphans.len().div_ceil(per);
    orphans
        .chunks(per)
        .enumerate()
        .map(|(i, inos)| {
            encode(
                OrphanBlock {
                    inos: inos.to_vec(),
                    blk_addr: i as u16 + 1,
                    blk_count: count as u16,
                    entry_count: inos.len() as u32,
                }
                .encode(geo),
            )
        })
        .collect()
}
