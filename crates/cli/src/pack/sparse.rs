//! Android sparse output (`uf2fs mkfs IMAGE SOURCE --sparse`, sload/mkf2fsuserimg.sh's
//! `-S`): the raw image the packer built, rewritten in the format `simg2img` and
//! fastboot read (file header, then chunks: raw data, a fill pattern, or "don't care").
//!
//! Which block becomes which chunk, as f2fs-tools' sparse mode decides:
//! - blocks holding data are raw chunks, except whole runs of zeros, which are fill
//!   chunks of zero (the same bytes once unpacked, 16 bytes in the file);
//! - the metadata areas (superblocks, checkpoint, SIT, NAT, SSA: every block before the
//!   main area) are never "don't care": what the image left unwritten there is a fill
//!   of zeros, since a mount reads NAT and SIT blocks the image never wrote and must
//!   find them empty, not whatever the partition held before;
//! - so is the rest of the segment of each of the six logs (a mount after a crash looks
//!   for fsync'd node blocks after the warm node log's last block);
//! - every other block the image never wrote (the free space of the main area) is
//!   "don't care": flashing skips it.
//!
//! `simg2img` of the output gives the raw image back byte for byte (the raw image reads
//! zeros wherever it was not written). No CRC chunk and no image checksum are written
//! (both optional; AOSP's tools write neither by default).

use anyhow::{bail, Context};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

const SPARSE_MAGIC: u32 = 0xED26_FF3A;
const CHUNK_RAW: u16 = 0xCAC1;
const CHUNK_FILL: u16 = 0xCAC2;
const CHUNK_DONT_CARE: u16 = 0xCAC3;
const FILE_HEADER_BYTES: u16 = 28;
const CHUNK_HEADER_BYTES: u16 = 12;
/// Blocks of a raw chunk at most (bounds the read buffer; chunks of any length are
/// valid, splitting changes nothing once unpacked).
const MAX_RAW_RUN: u64 = 4096;

/// What a block range becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Raw,
    Zero,
    DontCare,
}

/// What the sparse image holds, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SparseReport {
    /// Chunks written.
    pub chunks: u64,
    /// Blocks stored as raw data.
    pub raw_blocks: u64,
    /// Blocks stored as fills of zero.
    pub zero_blocks: u64,
    /// Blocks left "don't care".
    pub dont_care_blocks: u64,
}

/// Writes `raw` (a raw image of `block_size`-byte blocks) to `out` as an Android
/// sparse image. Blocks below `keep_from` (the main area's start) and those in
/// `keep_zero` (block ranges, end excluded) are never "don't care".
pub fn write_sparse(
    raw: &Path,
    out: &Path,
    block_size: u32,
    keep_from: u64,
    keep_zero: &[(u64, u64)],
) -> anyhow::Result<SparseReport> {
    let bs = block_size as u64;
    let src = File::open(raw).with_context(|| format!("cannot open {}", raw.display()))?;
    let len = src.metadata()?.len();
    if len % bs != 0 {
        bail!(
            "{}: {len} bytes is not a whole number of {bs}-byte blocks",
            raw.display()
        );
    }
    let blocks = len / bs;
    let total_blks = u32::try_from(blocks).context("too many blocks for a sparse image")?;
    // Blocks holding data, rounded out to whole blocks.
    let mut data: Vec<(u64, u64)> = Vec::new();
    for (a, b) in super::data_ranges(&src, len) {
        let (a, b) = (a / bs, b.div_ceil(bs));
        match data.last_mut() {
            Some(last) if last.1 >= a => last.1 = last.1.max(b),
            _ => data.push((a, b)),
        }
    }
    let mut keep: Vec<(u64, u64)> = keep_zero.iter().map(|&(a, b)| (a.min(blocks), b.min(blocks))).collect();
    keep.push((0, keep_from.min(blocks)));
    keep.sort_unstable();
    let kept = |blk: u64| keep.iter().any(|&(a, b)| a <= blk && blk < b);

    // Runs of (kind, first block, blocks), in order.
    let mut runs: Vec<(Kind, u64, u64)> = Vec::new();
    let mut push = |kind: Kind, first: u64, n: u64| {
        if n == 0 {
            return;
        }
        match runs.last_mut() {
            Some((k, f, c)) if *k == kind && *f + *c == first && (kind != Kind::Raw || *c + n <= MAX_RAW_RUN) => {
                *c += n
            }
            _ => runs.push((kind, first, n)),
        }
    };
    let mut buf = vec![0u8; bs as usize];
    let mut blk = 0u64;
    let mut d = data.iter().peekable();
    while blk < blocks {
        let in_data = d.peek().is_some_and(|&&(a, b)| a <= blk && blk < b);
        let kind = if in_data {
            src.read_exact_at(&mut buf, blk * bs)
                .with_context(|| format!("cannot read {}", raw.display()))?;
            if buf.iter().all(|&b| b == 0) {
                Kind::Zero
            } else {
                Kind::Raw
            }
        } else if kept(blk) {
            Kind::Zero
        } else {
            Kind::DontCare
        };
        push(kind, blk, 1);
        blk += 1;
        while d.peek().is_some_and(|&&(_, b)| b <= blk) {
            d.next();
        }
    }

    let file = File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let mut report = SparseReport {
        chunks: runs.len() as u64,
        ..Default::default()
    };
    let header = |w: &mut BufWriter<File>| -> std::io::Result<()> {
        w.write_all(&SPARSE_MAGIC.to_le_bytes())?;
        w.write_all(&1u16.to_le_bytes())?; // major version
        w.write_all(&0u16.to_le_bytes())?; // minor version
        w.write_all(&FILE_HEADER_BYTES.to_le_bytes())?;
        w.write_all(&CHUNK_HEADER_BYTES.to_le_bytes())?;
        w.write_all(&block_size.to_le_bytes())?;
        w.write_all(&total_blks.to_le_bytes())?;
        w.write_all(&(runs.len() as u32).to_le_bytes())?;
        w.write_all(&0u32.to_le_bytes()) // no image checksum
    };
    let werr = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", out.display());
    header(&mut w).map_err(werr)?;
    let mut raw_buf = Vec::new();
    for &(kind, first, n) in &runs {
        let (ty, payload) = match kind {
            Kind::Raw => (CHUNK_RAW, n * bs),
            Kind::Zero => (CHUNK_FILL, 4),
            Kind::DontCare => (CHUNK_DONT_CARE, 0),
        };
        let total = u32::try_from(CHUNK_HEADER_BYTES as u64 + payload).context("chunk too large")?;
        w.write_all(&ty.to_le_bytes()).map_err(werr)?;
        w.write_all(&0u16.to_le_bytes()).map_err(werr)?;
        w.write_all(&(n as u32).to_le_bytes()).map_err(werr)?;
        w.write_all(&total.to_le_bytes()).map_err(werr)?;
        match kind {
            Kind::Raw => {
                raw_buf.resize((n * bs) as usize, 0);
                src.read_exact_at(&mut raw_buf, first * bs)
                    .with_context(|| format!("cannot read {}", raw.display()))?;
                w.write_all(&raw_buf).map_err(werr)?;
                report.raw_blocks += n;
            }
            Kind::Zero => {
                w.write_all(&0u32.to_le_bytes()).map_err(werr)?;
                report.zero_blocks += n;
            }
            Kind::DontCare => report.dont_care_blocks += n,
        }
    }
    let file = w.into_inner().map_err(|e| werr(e.into_error()))?;
    file.sync_all().map_err(werr)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a sparse image back (the reader uf2fs opens images with).
    fn unpack(path: &Path) -> Vec<u8> {
        use uf2fs_core::device::BlockDevice;
        let dev = uf2fs_core::device::SparseDevice::open(path).unwrap();
        let mut out = vec![0u8; dev.raw_size() as usize];
        dev.read_blocks(0, &mut out).unwrap();
        out
    }

    #[test]
    fn free_blocks_are_dont_care_and_kept_ones_zero_fills() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        let f = File::create(&raw).unwrap();
        f.set_len(64 * 4096).unwrap();
        f.write_all_at(&[7u8; 4096], 2 * 4096).unwrap();
        f.write_all_at(&[0u8; 4096], 40 * 4096).unwrap();
        f.write_all_at(&[9u8; 8192], 50 * 4096).unwrap();
        drop(f);
        let out = dir.path().join("simg");
        let r = write_sparse(&raw, &out, 4096, 8, &[(20, 24)]).unwrap();
        assert_eq!(r.raw_blocks, 3);
        assert!(r.dont_care_blocks > 0 && r.dont_care_blocks <= 64 - 3 - 8 - 4);
        assert!(r.zero_blocks >= 7 + 4);
        assert_eq!(r.raw_blocks + r.zero_blocks + r.dont_care_blocks, 64);
        assert_eq!(unpack(&out), std::fs::read(&raw).unwrap());
    }
}
