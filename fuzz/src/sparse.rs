//! The Android sparse image target: the fuzz input is a sparse image file, opened with
//! [`SparseDevice::from_bytes`]. A refusal is the expected outcome for most inputs; a
//! panic, a hang or a huge allocation is a bug. An image that opens must read back as a
//! naive expansion of its chunks (written here from the format, independently of the
//! device's index), over its first blocks, a sample of the rest, and its last block.

use uf2fs_core::device::{BlockDevice, SparseDevice, BLOCK};

/// Output bytes expanded naively, at most this many (larger images are only sampled).
const EXPAND_MAX: u64 = 1 << 20;
/// Blocks read from the start, and sampled from the rest, of an image that opens.
const READS: u64 = 64;

fn le16(d: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([d[o], d[o + 1]])
}

fn le32(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

/// The output of an image [`SparseDevice`] accepted, when at most [`EXPAND_MAX`] bytes.
fn expand(data: &[u8]) -> Option<Vec<u8>> {
    let file_hdr = le16(data, 8) as usize;
    let chunk_hdr = le16(data, 10) as usize;
    let blk_sz = le32(data, 12) as u64;
    if le32(data, 16) as u64 * blk_sz > EXPAND_MAX {
        return None;
    }
    let mut out = Vec::new();
    let mut pos = file_hdr;
    for _ in 0..le32(data, 20) {
        let (kind, blocks, total) = (
            le16(data, pos),
            le32(data, pos + 4) as u64,
            le32(data, pos + 8) as usize,
        );
        let payload = &data[pos + chunk_hdr..pos + total];
        let len = (blocks * blk_sz) as usize;
        match kind {
            0xCAC1 => out.extend_from_slice(payload),
            0xCAC2 => out.extend((0..len).map(|i| payload[i % 4])),
            0xCAC3 => out.resize(out.len() + len, 0),
            _ => {}
        }
        pos += total;
    }
    Some(out)
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Ok(dev) = SparseDevice::from_bytes(data.to_vec(), "fuzz") else {
        return;
    };
    let blocks = dev.block_count();
    assert_eq!(blocks, dev.raw_size() / BLOCK as u64);
    let expanded = expand(data);
    if let Some(e) = &expanded {
        assert_eq!(
            e.len() as u64,
            dev.raw_size(),
            "expansion and header disagree on the size"
        );
    }
    let mut buf = vec![0u8; BLOCK];
    let step = (blocks / READS).max(1);
    let picks = (0..blocks.min(READS))
        .chain((READS..blocks).step_by(step as usize).take(READS as usize))
        .chain(blocks.checked_sub(1));
    for b in picks {
        dev.read_blocks(b, &mut buf).expect("a block inside the image reads");
        if let Some(e) = &expanded {
            let at = b as usize * BLOCK;
            assert!(buf[..] == e[at..at + BLOCK], "block {b} differs from the expansion");
        }
    }
    // Several blocks at once, across chunk boundaries.
    if blocks >= 3 {
        let mut three = vec![0u8; 3 * BLOCK];
        dev.read_blocks(blocks - 3, &mut three)
            .expect("the last three blocks read");
        if let Some(e) = &expanded {
            assert!(three[..] == e[(blocks as usize - 3) * BLOCK..][..3 * BLOCK]);
        }
    }
    assert!(
        dev.read_blocks(blocks, &mut buf).is_err(),
        "a read past the end succeeded"
    );
    assert!(dev.write_blocks(0, &buf).is_err(), "a sparse device took a write");
}
