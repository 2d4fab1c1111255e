//! [`CrashDevice`]: records writes and flushes so tests can rebuild what a power cut
//! could leave on the medium.
//!
//! Model: a write that returned is durable only once a later flush returned. A power
//! cut between flush `k` and flush `k + 1` leaves every write issued before flush `k`
//! and any subset of the writes issued after it (the device may reorder those).

use super::{check_range, BlockDevice, BLOCK};
use crate::{Error, Result};
use std::sync::{Arc, Mutex, PoisonError};

/// One recorded device operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrashOp {
    /// One block written at a block address.
    Write {
        /// Block address.
        blkaddr: u64,
        /// The 4096 bytes written.
        block: Vec<u8>,
    },
    /// A flush returned.
    Flush,
}

struct Recording {
    /// The image when recording started.
    base: Vec<u8>,
    /// The image with every write applied (what reads see).
    now: Vec<u8>,
    ops: Vec<CrashOp>,
    writes_max: usize,
}

/// An in-memory device that records every block write and flush since the last
/// [`CrashDevice::settle`]. Clones share the recording, so a test keeps one handle while
/// a file system owns the other.
#[derive(Clone)]
pub struct CrashDevice {
    rec: Arc<Mutex<Recording>>,
    blocks: u64,
}

impl CrashDevice {
    /// Starts recording on top of `image`; at most `writes_max` block writes are kept
    /// (more fail with an error, so a runaway test stays bounded).
    pub fn new(image: Vec<u8>, writes_max: usize) -> CrashDevice {
        let blocks = (image.len() / BLOCK) as u64;
        CrashDevice {
            rec: Arc::new(Mutex::new(Recording {
                base: image.clone(),
                now: image,
                ops: Vec::new(),
                writes_max,
            })),
            blocks,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recording> {
        self.rec.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the current image as the new base and forgets the recorded operations.
    pub fn settle(&self) {
        let mut r = self.lock();
        r.base = r.now.clone();
        r.ops.clear();
    }

    /// The operations recorded since the last settle.
    pub fn ops(&self) -> Vec<CrashOp> {
        self.lock().ops.clone()
    }

    /// Flushes recorded since the last settle.
    pub fn flush_count(&self) -> usize {
        self.lock().ops.iter().filter(|o| **o == CrashOp::Flush).count()
    }

    /// The image with every write applied.
    pub fn image_now(&self) -> Vec<u8> {
        self.lock().now.clone()
    }

    /// The writes issued after flush `k` (0: from the start) and before flush `k + 1`:
    /// the ones a power cut in that window may or may not have kept.
    pub fn in_flight_after(&self, k: usize) -> Vec<(u64, Vec<u8>)> {
        let r = self.lock();
        window(&r.ops, k)
            .map(|(_, addr, block)| (addr, block.to_vec()))
            .collect()
    }

    /// What the medium holds after a power cut between flush `k` and flush `k + 1`
    /// (`k = 0`: before the first flush) when, of the writes in flight in that window,
    /// exactly those whose index `i` passes `keep(i)` landed.
    pub fn image_after_cut(&self, k: usize, keep: &dyn Fn(usize) -> bool) -> Vec<u8> {
        let r = self.lock();
        let mut img = r.base.clone();
        // Writes issued before flush `k` are durable.
        let mut flushes = 0;
        for op in &r.ops {
            if flushes == k {
                break;
            }
            match op {
                CrashOp::Flush => flushes += 1,
                CrashOp::Write { blkaddr, block } => put(&mut img, *blkaddr, block),
            }
        }
        for (i, addr, block) in window(&r.ops, k) {
            if keep(i) {
                put(&mut img, addr, block);
            }
        }
        img
    }
}

/// Writes after flush `k` and before flush `k + 1`, numbered from 0.
fn window(ops: &[CrashOp], k: usize) -> impl Iterator<Item = (usize, u64, &[u8])> {
    let mut flushes = 0;
    ops.iter()
        .filter_map(move |op| match op {
            CrashOp::Flush => {
                flushes += 1;
                None
            }
            CrashOp::Write { blkaddr, block } => (flushes == k).then_some((*blkaddr, &block[..])),
        })
        .enumerate()
        .map(|(i, (a, b))| (i, a, b))
}

fn put(img: &mut [u8], blkaddr: u64, block: &[u8]) {
    let at = blkaddr as usize * BLOCK;
    img[at..at + BLOCK].copy_from_slice(block);
}

impl BlockDevice for CrashDevice {
    fn read_blocks(&self, blkaddr: u64, buf: &mut [u8]) -> Result<()> {
        let n = buf.len().div_ceil(BLOCK) as u64;
        if blkaddr.checked_add(n).is_none_or(|end| end > self.blocks) {
            return Err(Error::corrupt(
                "block address",
                Some(blkaddr),
                format!("beyond the end of the recorded image ({} blocks)", self.blocks),
            ));
        }
        let r = self.lock();
        let at = blkaddr as usize * BLOCK;
        buf.copy_from_slice(&r.now[at..at + buf.len()]);
        Ok(())
    }

    fn block_count(&self) -> u64 {
        self.blocks
    }

    fn write_blocks(&self, blkaddr: u64, buf: &[u8]) -> Result<()> {
        check_range(blkaddr, buf.len(), self.blocks, &|| "the recorded image".to_string())?;
        let mut r = self.lock();
        let writes = r.ops.iter().filter(|o| **o != CrashOp::Flush).count();
        if writes + buf.len() / BLOCK > r.writes_max {
            return Err(Error::Invalid(format!(
                "crash device: more than {} block writes recorded",
                r.writes_max
            )));
        }
        for (i, block) in buf.chunks(BLOCK).enumerate() {
            let addr = blkaddr + i as u64;
            put(&mut r.now, addr, block);
            r.ops.push(CrashOp::Write {
                blkaddr: addr,
                block: block.to_vec(),
            });
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        self.lock().ops.push(CrashOp::Flush);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_keep_flushed_writes_and_chosen_in_flight_ones() {
        let dev = CrashDevice::new(vec![0; 4 * BLOCK], 16);
        dev.write_blocks(0, &[1u8; BLOCK]).unwrap();
        dev.flush().unwrap();
        dev.write_blocks(1, &[2u8; 2 * BLOCK]).unwrap();
        dev.flush().unwrap();
        assert_eq!(dev.flush_count(), 2);
        let first = |img: &[u8], blk: usize| img[blk * BLOCK];
        let cut0 = dev.image_after_cut(0, &|_| false);
        assert_eq!((first(&cut0, 0), first(&cut0, 1)), (0, 0));
        let cut1 = dev.image_after_cut(1, &|i| i == 1);
        assert_eq!((first(&cut1, 0), first(&cut1, 1), first(&cut1, 2)), (1, 0, 2));
        assert_eq!(dev.in_flight_after(1).len(), 2);
        assert_eq!(dev.image_after_cut(2, &|_| true), dev.image_now());
        dev.settle();
        assert!(dev.ops().is_empty());
        let small = CrashDevice::new(vec![0; 4 * BLOCK], 1);
        small.write_blocks(3, &[9u8; BLOCK]).unwrap();
        assert!(small.write_blocks(2, &[9u8; BLOCK]).is_err());
    }
}
