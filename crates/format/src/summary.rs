//! Segment summaries (SSA) and the NAT/SIT journals kept in checkpoint summaries.

use crate::consts::*;
use crate::le::{put_u16, put_u32, u16_at, u32_at};
use crate::nat::NatEntry;
use crate::sit::SitEntry;
use crate::{FormatError, Geometry, Result};

/// Summary block footer type: data segment.
pub const SUM_TYPE_DATA: u8 = 0;
/// Summary block footer type: node segment.
pub const SUM_TYPE_NODE: u8 = 1;
/// Byte offset of the journal in a 4 KiB summary block
/// ([`Geometry::sum_journal_offset`] for others).
pub const SUM_JOURNAL_OFFSET: usize = SUMMARY_SIZE * ENTRIES_IN_SUM;

/// Who owns one block of a segment (`struct f2fs_summary`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    /// For data: the direct node holding the address; for nodes: the node's own id.
    pub nid: u32,
    /// Node version (nodes only).
    pub version: u8,
    /// Index of the address within its node (data only).
    pub ofs_in_node: u16,
}

impl Summary {
    /// Decodes the 7 bytes of an entry.
    pub fn decode(b: &[u8]) -> Result<Summary> {
        FormatError::need("summary entry", b, SUMMARY_SIZE)?;
        Ok(Summary {
            nid: u32_at(b, 0),
            version: b[4],
            ofs_in_node: u16_at(b, 5),
        })
    }
}

/// A whole summary block: one entry per block of a segment plus a journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryBlock {
    /// 512 entries (2048 in a 16 KiB block, of which a segment's 512 blocks use the
    /// first 512).
    pub entries: Vec<Summary>,
    /// The raw journal area (NAT journal, SIT journal, or extra info).
    pub journal: Vec<u8>,
    /// `SUM_TYPE_DATA` or `SUM_TYPE_NODE`.
    pub entry_type: u8,
}

impl SummaryBlock {
    /// Decodes a summary (`b` is exactly one: a whole 4 or 16 KiB summary block; with
    /// `packed_ssa` the 4 KiB of one segment's summary, see [`SummaryBlock::decode_in`]).
    pub fn decode(b: &[u8]) -> Result<SummaryBlock> {
        let g = Geometry::of_block("summary block", b.len())?;
        let entries = (0..g.entries_in_sum())
            .map(|i| Summary {
                nid: u32_at(b, i * 7),
                version: b[i * 7 + 4],
                ofs_in_node: u16_at(b, i * 7 + 5),
            })
            .collect();
        let at = g.sum_journal_offset();
        let journal = b[at..at + g.sum_journal_size()].to_vec();
        Ok(SummaryBlock {
            entries,
            journal,
            entry_type: b[b.len() - SUM_FOOTER_SIZE],
        })
    }

    /// Decodes the summary at the start of `b`, laid out as `geo` says
    /// ([`Geometry::sum_block_size`] bytes: a whole block, or its first 4 KiB with
    /// `packed_ssa`, as in a checkpoint pack's summary blocks and at a packed SSA
    /// block's offset of a segment).
    pub fn decode_in(b: &[u8], geo: Geometry) -> Result<SummaryBlock> {
        let size = geo.sum_block_size();
        FormatError::need("summary block", b, size)?;
        SummaryBlock::decode(&b[..size])
    }
}

/// Decodes a NAT journal (`n_nats` then `nid, f2fs_nat_entry` records) of a summary
/// block of `geo`'s size.
pub fn nat_journal(journal: &[u8], geo: Geometry) -> Result<Vec<(u32, NatEntry)>> {
    const S: &str = "NAT journal";
    FormatError::need(S, journal, geo.sum_journal_size())?;
    let n = u16_at(journal, 0) as usize;
    let max = geo.nat_journal_entries();
    if n > max {
        return Err(FormatError::invalid(S, format!("{n} entries (at most {max})")));
    }
    (0..n)
        .map(|i| {
            let at = 2 + i * 13;
            Ok((u32_at(journal, at), NatEntry::decode(&journal[at + 4..at + 13])?))
        })
        .collect()
}

/// Decodes a SIT journal (`n_sits` then `segno, f2fs_sit_entry` records) of a summary
/// block of `geo`'s size.
pub fn sit_journal(journal: &[u8], geo: Geometry) -> Result<Vec<(u32, SitEntry)>> {
    const S: &str = "SIT journal";
    FormatError::need(S, journal, geo.sum_journal_size())?;
    let n = u16_at(journal, 0) as usize;
    let max = geo.sit_journal_entries();
    if n > max {
        return Err(FormatError::invalid(S, format!("{n} entries (at most {max})")));
    }
    (0..n)
        .map(|i| {
            let at = 2 + i * 78;
            Ok((u32_at(journal, at), SitEntry::decode(&journal[at + 4..at + 78])?))
        })
        .collect()
}

/// The journals of a checkpoint's data summaries, however they were stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointJournals {
    /// NAT entries newer than the NAT area.
    pub nat: Vec<(u32, NatEntry)>,
    /// SIT entries newer than the SIT area.
    pub sit: Vec<(u32, SitEntry)>,
}

/// Reads the journals from the first data summary blocks of a checkpoint pack.
///
/// Compacted summaries start with the NAT journal then the SIT journal; normal
/// summaries keep the NAT journal in the hot-data block (first) and the SIT journal in the
/// cold-data block (third).
pub fn checkpoint_journals(sum_blocks: &[u8], compact: bool, geo: Geometry) -> Result<CheckpointJournals> {
    const S: &str = "checkpoint summaries";
    let (bs, size) = (geo.block_size(), geo.sum_journal_size());
    if compact {
        FormatError::need(S, sum_blocks, bs)?;
        let nat = nat_journal(&sum_blocks[..size], geo)?;
        let sit = sit_journal(&sum_blocks[size..2 * size], geo)?;
        Ok(CheckpointJournals { nat, sit })
    } else {
        FormatError::need(S, sum_blocks, 3 * bs)?;
        let j = |blk: usize| {
            let at = blk * bs + geo.sum_journal_offset();
            &sum_blocks[at..at + size]
        };
        Ok(CheckpointJournals {
            nat: nat_journal(j(0), geo)?,
            sit: sit_journal(j(2), geo)?,
        })
    }
}

impl Summary {
    /// Encodes into 7 bytes.
    pub fn encode(&self, b: &mut [u8]) {
        b[0..4].copy_from_slice(&self.nid.to_le_bytes());
        b[4] = self.version;
        b[5..7].copy_from_slice(&self.ofs_in_node.to_le_bytes());
    }
}

/// Where entry `j` of the compacted area lives: (block, byte offset). Entries follow the
/// two journals and run on into following blocks, never into a block's footer.
fn compacted_slot(mut j: usize, geo: Geometry) -> (usize, usize) {
    let (bs, js) = (geo.block_size(), geo.sum_journal_size());
    let first = (bs - SUM_FOOTER_SIZE - 2 * js) / SUMMARY_SIZE;
    if j < first {
        return (0, 2 * js + j * SUMMARY_SIZE);
    }
    j -= first;
    let per = (bs - SUM_FOOTER_SIZE) / SUMMARY_SIZE;
    (1 + j / per, (j % per) * SUMMARY_SIZE)
}

/// Blocks of `geo`'s size needed for compacted summaries holding `entries` summary
/// entries in all.
pub fn compacted_blocks(entries: usize, geo: Geometry) -> usize {
    if entries == 0 {
        1
    } else {
        compacted_slot(entries - 1, geo).0 + 1
    }
}

/// Decodes the summary entries of the three active data logs from compacted summary
/// blocks; `counts[i]` entries belong to log i (its next block offset, or 512 for a log
/// in SSR mode), in blocks of `geo`'s size.
pub fn compacted_data_summaries(blocks: &[u8], counts: [usize; 3], geo: Geometry) -> Result<[Vec<Summary>; 3]> {
    const S: &str = "compacted summaries";
    let bs = geo.block_size();
    if counts.iter().any(|&c| c > BLOCKS_PER_SEG as usize) {
        return Err(FormatError::invalid(
            S,
            format!("entry counts {counts:?} exceed a segment"),
        ));
    }
    let total: usize = counts.iter().sum();
    FormatError::need(S, blocks, compacted_blocks(total, geo) * bs)?;
    let mut out: [Vec<Summary>; 3] = Default::default();
    let mut j = 0;
    for (log, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            let (blk, off) = compacted_slot(j, geo);
            out[log].push(Summary::decode(&blocks[blk * bs + off..])?);
            j += 1;
        }
    }
    Ok(out)
}

impl SummaryBlock {
    /// Encodes into one summary of `geo`'s summary size ([`Geometry::sum_block_size`]:
    /// the block size, or 4 KiB with `packed_ssa`): at most
    /// [`Geometry::entries_in_sum`] entries (missing ones are zero), a journal of at most
    /// [`Geometry::sum_journal_size`] bytes (zero-padded), the footer type. The footer
    /// checksum is left zero, as F2FS leaves it. [`SummaryBlock::encode_block`] pads it
    /// to a whole block.
    pub fn encode(&self, geo: Geometry) -> Result<Vec<u8>> {
        let (bs, at) = (geo.sum_block_size(), geo.sum_journal_offset());
        if self.entries.len() > geo.entries_in_sum() || self.journal.len() > geo.sum_journal_size() {
            return Err(FormatError::invalid(
                "summary block",
                format!(
                    "{} entries and a journal of {} bytes",
                    self.entries.len(),
                    self.journal.len()
                ),
            ));
        }
        let mut b = vec![0u8; bs];
        for (i, e) in self.entries.iter().enumerate() {
            e.encode(&mut b[i * SUMMARY_SIZE..]);
        }
        b[at..at + self.journal.len()].copy_from_slice(&self.journal);
        b[bs - SUM_FOOTER_SIZE] = self.entry_type;
        Ok(b)
    }

    /// [`SummaryBlock::encode`] at the start of a whole block of `geo`'s size, the rest
    /// zero (a checkpoint pack's summary block).
    pub fn encode_block(&self, geo: Geometry) -> Result<Vec<u8>> {
        let mut b = self.encode(geo)?;
        b.resize(geo.block_size(), 0);
        Ok(b)
    }
}

/// Encodes a NAT journal ([`Geometry::sum_journal_size`] bytes) holding `entries`.
pub fn encode_nat_journal(entries: &[(u32, NatEntry)], geo: Geometry) -> Result<Vec<u8>> {
    let max = geo.nat_journal_entries();
    if entries.len() > max {
        return Err(FormatError::invalid(
            "NAT journal",
            format!("{} entries (at most {max})", entries.len()),
        ));
    }
    let mut j = vec![0u8; geo.sum_journal_size()];
    put_u16(&mut j, 0, entries.len() as u16);
    for (i, (nid, e)) in entries.iter().enumerate() {
        let at = 2 + i * 13;
        put_u32(&mut j, at, *nid);
        e.encode(&mut j[at + 4..at + 13]);
    }
    Ok(j)
}

/// Encodes a SIT journal ([`Geometry::sum_journal_size`] bytes) holding `entries`.
pub fn encode_sit_journal(entries: &[(u32, SitEntry)], geo: Geometry) -> Result<Vec<u8>> {
    let max = geo.sit_journal_entries();
    if entries.len() > max {
        return Err(FormatError::invalid(
            "SIT journal",
            format!("{} entries (at most {max})", entries.len()),
        ));
    }
    let mut j = vec![0u8; geo.sum_journal_size()];
    put_u16(&mut j, 0, entries.len() as u16);
    for (i, (segno, e)) in entries.iter().enumerate() {
        let at = 2 + i * 78;
        put_u32(&mut j, at, *segno);
        e.encode(&mut j[at + 4..at + 78]);
    }
    Ok(j)
}

/// Encodes compacted data summaries (`CP_COMPACT_SUM_FLAG`): the NAT journal, the SIT
/// journal, then the entries of the hot, warm and cold data logs in a row, spilling into
/// further blocks as [`compacted_data_summaries`] reads them.
pub fn encode_compacted_summaries(
    nat: &[(u32, NatEntry)],
    sit: &[(u32, SitEntry)],
    logs: [&[Summary]; 3],
    geo: Geometry,
) -> Result<Vec<u8>> {
    let (bs, js) = (geo.block_size(), geo.sum_journal_size());
    if logs.iter().any(|l| l.len() > BLOCKS_PER_SEG as usize) {
        return Err(FormatError::invalid(
            "compacted summaries",
            "more entries than a segment has blocks",
        ));
    }
    let total: usize = logs.iter().map(|l| l.len()).sum();
    let mut b = vec![0u8; compacted_blocks(total, geo) * bs];
    b[..js].copy_from_slice(&encode_nat_journal(nat, geo)?);
    b[js..2 * js].copy_from_slice(&encode_sit_journal(sit, geo)?);
    for (j, e) in logs.iter().flat_map(|l| l.iter()).enumerate() {
        let (blk, off) = compacted_slot(j, geo);
        e.encode(&mut b[blk * bs + off..]);
    }
    Ok(b)
}
